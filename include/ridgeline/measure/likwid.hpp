#pragma once
/// `measure --compare likwid`: likwid-bench's kernels run beside ridgeline's on the same
/// machine, each ceiling set against its likwid counterpart (docs/measurement.md#against-likwid-bench).
#include <optional>
#include <string>
#include <vector>

#include "ridgeline/measure/host.hpp"

namespace ridgeline::measure {

/// One ceiling measured both ways.
struct CeilingComparison {
  std::string ceiling;         ///< e.g. "fp64 peak, 2 threads", "DRAM read, 2 threads"
  std::string likwid_kernel;   ///< the likwid-bench test and workgroup, e.g. "load_avx512 -w N:64MB:2"
  double ridgeline = 0;        ///< FLOP/s or bytes/s
  double likwid = 0;           ///< the same unit; 0 when likwid-bench gave nothing
  double ratio = 0;            ///< ridgeline / likwid
  bool bandwidth = false;      ///< bytes/s (else FLOP/s)
};

struct LikwidComparison {
  std::string version;  ///< likwid-bench's banner
  std::vector<CeilingComparison> rows;
  std::vector<std::string> notes;
};

/// Whether likwid-bench is on the PATH.
bool likwid_available();

/// Runs likwid-bench for every ceiling `r` measured (FMA peaks in fp64 and fp32; read and
/// triad bandwidth at each all-core working set), with the ISA `r.host` has and as many
/// threads as `threads`, each run lasting at least about `seconds` (iterations set with
/// -i). Throws InputError when likwid-bench is missing or fails.
LikwidComparison compare_likwid(const MeasureResult& r, int threads, double seconds);

/// The number after `key` at the start of a line of a likwid-bench report, as printed
/// ("Time:" in seconds, "Iterations per thread:"); nullopt when the report lacks it.
std::optional<double> likwid_field(const std::string& report, const std::string& key);

/// The value of a likwid-bench report line ("MByte/s:", "MFlops/s:"), in base units
/// (bytes/s, FLOP/s); nullopt when the report lacks it.
std::optional<double> likwid_value(const std::string& report, const std::string& key);

}  // namespace ridgeline::measure
