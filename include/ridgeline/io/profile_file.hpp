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
void check_launch_amount(double v, std::string_view what, std::string_view where);
double check_launch_count(double v, std::string_view where);
/// The most kernel launches (or CPU ops) a profile may hold: each is kept (about 0.6 KB
/// with its name, docs/profiles.md), so this bounds an import to ~1.2 GB each whatever the file.
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
/// The events are read one at a time (simdjson per event): memory holds what is kept of
/// the kernels and CPU ops, never the text.
profile::Profile parse_torch_trace(std::string_view bytes, std::string_view source);

/// The same, streamed from a file (gzip inflated on the fly): the file is never held whole.
profile::Profile read_torch_trace(const std::string& path);

/// "torch", "ncu", "csv" or "ert" (an ERT roofline.json: ceilings, not kernels), judged from
/// the first 64 KiB of the file.
std::string detect_profile_format(const std::string& path);

/// Reads `path` and picks the importer: `format` "ncu", "csv" or "torch", or "" to detect it.
/// An ERT file is an InputError pointing at `profile --format ert`.
profile::Profile load_profile(const std::string& path, std::string_view format);

}  // namespace ridgeline::io
