#pragma once
/// `measure --compare likwid`: likwid-bench's kernels run beside ridgeline's on the same
/// machine, each ceiling set against its likwid counterpart (docs/measurement.md#against-likwid-bench).
#include <optional>
#include <string>
#include <vector>

#include "ridgeline/measure/host.hpp"

namespace ridgeline::measure {

/// One ridgeline run and the likwid-bench run right after it.
struct ComparisonRound {
  double ridgeline = 0;
  double likwid = 0;
};

/// One ceiling measured both ways, in rounds: each round times ridgeline's kernel (the code
/// the sweep ran, at the same working set and threads) and then likwid-bench's, back to back,
/// so that a machine whose rates drift between the sweep and the comparison compares like
/// with like.
struct CeilingComparison {
  std::string ceiling;         ///< e.g. "fp64 peak, 2 threads", "DRAM read, 2 threads"
  std::string likwid_kernel;   ///< the likwid-bench test and workgroup, e.g. "load_avx512 -w N:64MB:2"
  double ridgeline = 0;        ///< FLOP/s or bytes/s: the median over the rounds
  double likwid = 0;           ///< the same unit and median; 0 when likwid-bench gave nothing
  double ratio = 0;            ///< the median over the rounds of ridgeline / likwid (0 if likwid gave nothing)
  bool bandwidth = false;      ///< bytes/s (else FLOP/s)
  std::vector<ComparisonRound> rounds;
};

struct LikwidComparison {
  std::string version;  ///< likwid-bench's banner
  std::vector<CeilingComparison> rows;
  std::vector<std::string> notes;
};

/// Whether likwid-bench is on the PATH.
bool likwid_available();

/// For every ceiling `r` measured (FMA peaks in fp64 and fp32; read, copy and triad
/// bandwidth at each all-core working set), `rounds` rounds of ridgeline's kernel and then
/// likwid-bench's matching one, with the ISA `r.host` has and as many threads as `threads`,
/// each likwid run lasting at least about `seconds` (iterations set with -i) and each
/// ridgeline peak as long. Throws InputError when likwid-bench is missing or fails.
LikwidComparison compare_likwid(const MeasureResult& r, int threads, double seconds, int rounds);

/// The number after `key` at the start of a line of a likwid-bench report, as printed
/// ("Time:" in seconds, "Iterations per thread:"); nullopt when the report lacks it.
std::optional<double> likwid_field(const std::string& report, const std::string& key);

/// The value of a likwid-bench report line ("MByte/s:", "MFlops/s:"), in base units
/// (bytes/s, FLOP/s); nullopt when the report lacks it.
std::optional<double> likwid_value(const std::string& report, const std::string& key);

}  // namespace ridgeline::measure
