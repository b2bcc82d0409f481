#include "ridgeline/measure/likwid.hpp"

#include <fmt/format.h>
#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>

#include "ridgeline/core/error.hpp"

namespace ridgeline::measure {

namespace {

// Runs a shell command and returns what it printed (stdout and stderr) and its status.
std::pair<std::string, int> run(const std::string& cmd) {
  std::string out;
  std::FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (p == nullptr) return {"", -1};
  std::array<char, 4096> buf{};
  std::size_t n = 0;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  const int status = pclose(p);
  return {out, WIFEXITED(status) ? WEXITSTATUS(status) : -1};
}

// A workgroup of `threads` threads over `bytes` in total, in likwid's units (kB = 1000 B).
std::string workgroup(double bytes, int threads) {
  return fmt::format("N:{}kB:{}", std::max<long long>(1, std::llround(bytes / 1000)), threads);
}

// likwid-bench's peakflops kernels count 30 FLOPs per element of their stream per iteration
// (its report: 60e9 FLOPs for 2e6 iterations over 1000 doubles).
constexpr double kPeakFlopsPerElement = 30;

}  // namespace

std::optional<double> likwid_field(const std::string& report, const std::string& key) {
  // The key must start a line ("Time:" must not match "Runtime:").
  std::size_t p = 0;
  while ((p = report.find(key, p)) != std::string::npos && p > 0 && report[p - 1] != '\n') ++p;
  if (p == std::string::npos) return std::nullopt;
  const char* start = report.c_str() + p + key.size();
  char* end = nullptr;
  const double v = std::strtod(start, &end);
  if (end == start || !std::isfinite(v) || v < 0) return std::nullopt;
  return v;
}

std::optional<double> likwid_value(const std::string& report, const std::string& key) {
  // likwid reports MByte/s and MFlops/s: 1e6 bytes and FLOPs.
  const auto v = likwid_field(report, key);
  if (!v) return std::nullopt;
  return *v * 1e6;
}

bool likwid_available() { return run("command -v likwid-bench").second == 0; }

LikwidComparison compare_likwid(const MeasureResult& r, int threads, double seconds, int rounds) {
  rounds = std::max(1, rounds);
  if (!likwid_available()) {
    throw InputError("--compare likwid: likwid-bench is not installed (Debian package `likwid`)");
  }
  LikwidComparison c;
  c.version = run("likwid-bench -h").first;
  c.version = c.version.substr(0, c.version.find('\n'));
  const HostInfo& h = r.host;
  // The widest kernels the CPU has, as ridgeline's own.
  const std::string fma = h.avx512f ? "avx512_fma" : h.avx2 && h.fma ? "avx_fma" : "sse";
  const std::string vec = h.avx512f ? "avx512" : h.avx2 ? "avx" : "sse";
  const double l1 = h.caches.empty() ? 32e3 : h.caches.front().size_bytes;
  // likwid-bench's own calibration (-s) does not lengthen short runs on every machine (on
  // this project's VMs it settles on 10 iterations, a microsecond, and reports noise), so
  // the iteration count is set with -i: start small, read the reported time, scale until a
  // run lasts at least `seconds`.
  // The first count is guessed from ridgeline's own rate for the ceiling, `per_iteration`
  // being the bytes (or FLOPs) one thread moves (or computes) in one likwid iteration, so that
  // one run usually suffices (likwid-bench spends about a second starting up).
  auto bench = [&](const std::string& test, const std::string& wg, const char* key, double ours_per_thread,
                   double per_iteration) -> double {
    long long iters = std::max<long long>(10, std::llround(seconds * ours_per_thread / std::max(per_iteration, 1.0)));
    for (int attempt = 0; attempt < 6; ++attempt) {
      const std::string cmd = fmt::format("likwid-bench -t {} -w {} -i {}", test, wg, iters);
      auto [out, status] = run(cmd);
      if (status != 0) throw InputError(fmt::format("--compare likwid: `{}` failed: {}", cmd, out.substr(0, out.find('\n'))));
      const auto t = likwid_field(out, "Time:");
      const auto v = likwid_value(out, key);
      if (!t || !v) {
        c.notes.push_back(fmt::format("`{}` printed no {}", cmd, t ? key : "Time:"));
        return 0;
      }
      if (*t >= 0.5 * seconds || attempt == 5) return *v;
      // Aim 20% past the target so the next run is long enough even if this one was noisy.
      const double scale = std::clamp(1.2 * seconds / std::max(*t, 1e-7), 2.0, 1e5);
      iters = static_cast<long long>(std::ceil(static_cast<double>(iters) * scale));
    }
    return 0;
  };
  // `ours()` times ridgeline's kernel now; `theirs(ours)` runs likwid-bench, its first
  // iteration count guessed from that rate.
  auto add = [&](std::string ceiling, std::string kernel, bool bw, const std::function<double()>& ours,
                 const std::function<double(double)>& theirs) {
    CeilingComparison row{std::move(ceiling), std::move(kernel), 0, 0, 0, bw, {}};
    std::vector<double> o, t, q;
    for (int i = 0; i < rounds; ++i) {
      ComparisonRound round;
      round.ridgeline = ours();
      round.likwid = theirs(round.ridgeline);
      row.rounds.push_back(round);
      o.push_back(round.ridgeline);
      t.push_back(round.likwid);
      if (round.likwid > 0) q.push_back(round.ridgeline / round.likwid);
    }
    row.ridgeline = summarize(o).value;
    row.likwid = summarize(t).value;
    row.ratio = summarize(q).value;
    c.rows.push_back(std::move(row));
  };
  const std::string who = fmt::format("{} thread{}", threads, threads == 1 ? "" : "s");
  // One device for every round: its threads' arrays are allocated and faulted in once, not
  // again before each of ridgeline's timings.
  CpuDevice device(h);
  // FMA peaks in L1: a quarter of each thread's L1 (likwid's peakflops kernels load one stream).
  const std::string peak_wg = workgroup(l1 / 4 * threads, threads);
  for (const auto& p : r.peaks) {
    std::string test;
    if (p.dtype == DType::fp64) test = "peakflops_" + fma;
    else if (p.dtype == DType::fp32) test = "peakflops_sp_" + fma;
    else continue;  // likwid has no bf16 or int8 peak kernels
    const DType dtype = p.dtype;
    add(fmt::format("{} peak, {}", name(dtype), who), test + " -w " + peak_wg, false, [&] { return device.peak_rate(dtype, threads, seconds); },
        [&](double ours) { return bench(test, peak_wg, "MFlops/s:", ours / threads, kPeakFlopsPerElement * (l1 / 4) / bytes(dtype)); });
  }
  // Bandwidth at the all-core working sets, kernel for kernel: read <-> load (one load
  // stream), copy <-> copy (a = b), triad <-> stream (a = b + s·c: two loads and a store per
  // element). Both count the bytes the kernel loads and stores, without write-allocate.
  for (const auto& b : r.sweep_all) {
    // The level the per-thread working set fits in (its share of a shared cache).
    std::string where = "DRAM";
    for (const auto& cache : h.caches) {
      if (b.working_set_bytes <= cache.size_bytes / std::max(1, cache.shared_cpus)) {
        where = fmt::format("L{}", cache.level);
        break;
      }
    }
    const std::string wg = workgroup(b.working_set_bytes * threads, threads);
    struct Pair {
      const char* ours;
      Stream kernel;
      const char* theirs;
    };
    for (const Pair& k : {Pair{"read", Stream::read, "load_"}, Pair{"copy", Stream::copy, "copy_"}, Pair{"triad", Stream::triad, "stream_"}}) {
      const std::string test = k.theirs + vec;
      add(fmt::format("{} {}, {}", where, k.ours, who), test + " -w " + wg, true,
          [&] { return device.stream_rate(k.kernel, b.working_set_bytes, threads, 5).value; },
          [&](double ours) { return bench(test, wg, "MByte/s:", ours / threads, b.working_set_bytes); });
    }
  }
  return c;
}

}  // namespace ridgeline::measure
