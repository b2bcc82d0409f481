#pragma once
/// Importers of captured profiles: Nsight Compute CSV (details and raw pages) and a
/// generic CSV (name, duration, flops, bytes[, count]).
#include <string>
#include <string_view>

#include "ridgeline/profile/kernel.hpp"

namespace ridgeline::io {

/// The checks every importer applies to a kernel launch (Nsight Compute, PyTorch trace,
/// CSV): a duration finite, above zero and at most 10^6 s; FLOPs and bytes finite and not
/// negative; a launch count a whole number >= 1. Throws InputError starting with `where`
/// (file and row, event or kernel).
void check_launch_duration(double seconds, std::string_view where);
/// The rule check_launch_duration applies, for a caller that builds `where` only on failure.
bool launch_duration_ok(double seconds) noexcept;
void check_launch_amount(double v, std::string_view what, std::string_view where);
double check_launch_count(double v, std::string_view where);
/// The most records a profile may hold: Nsight Compute and CSV rows are kept one per launch
/// (about 0.6 KB with its name, docs/profiles.md); a trace keeps one per kernel name (and
/// interns its CPU ops' names), so this also bounds a trace's distinct names. An import stays
/// near 1.2 GB whatever the file.
inline constexpr std::size_t kMaxLaunches = 2'000'000;
/// Throws InputError naming `source` when `held` records reach `cap`.
void check_launch_capacity(std::size_t held, std::string_view source, std::size_t cap = kMaxLaunches);

/// Nsight Compute `--csv --page details` or `--page raw` output. Throws InputError when the
/// text is not such a CSV; kernels missing metrics are kept and listed in `warnings`.
profile::Profile parse_ncu_csv(std::string_view text, std::string_view source);

/// A CSV with a header naming `name`, `duration` (seconds, or with a unit suffix in the
/// header such as `duration_us`), `flops`, `bytes` and optionally `count`.
profile::Profile parse_generic_csv(std::string_view text, std::string_view source, std::size_t max_launches = kMaxLaunches);

/// A PyTorch profiler / Kineto Chrome trace (JSON, optionally gzipped): kernel events, with
/// FLOPs from CUPTI counters, Inductor's kernel_flop / kernel_num_gb, or the CPU op's
/// `flops` (with_flops); the timeline's idle gaps. Throws InputError for malformed input.
/// The events are read one at a time (simdjson per event) into one record per kernel name
/// (`count` launches, per-launch means) and a state per CPU op: memory does not grow with
/// the number of kernel events, and never holds the text.
/// What a trace import keeps at most (tests shrink them).
struct TraceLimits {
  std::size_t max_names = kMaxLaunches;            ///< distinct kernel names, and CPU op names
  std::size_t max_cpu_ops = 8'000'000;             ///< CPU ops with an External id (about 130 bytes each)
  std::size_t span_window = std::size_t{1} << 20;  ///< kernel spans sorted per sweep (24 bytes each)
};
profile::Profile parse_torch_trace(std::string_view bytes, std::string_view source, const TraceLimits& limits = {});

/// The same, streamed from a file (gzip inflated on the fly): the file is never held whole.
profile::Profile read_torch_trace(const std::string& path);

/// "torch", "ncu", "csv" or "ert" (an ERT roofline.json: ceilings, not kernels), judged from
/// the first 64 KiB of the file.
std::string detect_profile_format(const std::string& path);

/// Reads `path` and picks the importer: `format` "ncu", "csv" or "torch", or "" to detect it.
/// An ERT file is an InputError pointing at `profile --format ert`.
profile::Profile load_profile(const std::string& path, std::string_view format);

}  // namespace ridgeline::io
