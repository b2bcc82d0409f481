#include "ridgeline/measure/likwid.hpp"

#include <fmt/format.h>
#include <sys/wait.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>

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

}  // namespace

std::optional<double> likwid_value(const std::string& report, const std::string& key) {
  const auto p = report.find(key);
  if (p == std::string::npos) return std::nullopt;
  const char* start = report.c_str() + p + key.size();
  char* end = nullptr;
  const double v = std::strtod(start, &end);
  if (end == start || !std::isfinite(v) || v < 0) return std::nullopt;
  // likwid reports MByte/s and MFlops/s: 1e6 bytes and FLOPs.
  return v * 1e6;
}

bool likwid_available() { return run("command -v likwid-bench").second == 0; }

LikwidComparison compare_likwid(const MeasureResult& r, int threads, double seconds) {
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
  auto bench = [&](const std::string& test, const std::string& wg, const char* key) -> double {
    const std::string cmd = fmt::format("likwid-bench -t {} -w {} -s {:.2f}", test, wg, seconds);
    auto [out, status] = run(cmd);
    if (status != 0) throw InputError(fmt::format("--compare likwid: `{}` failed: {}", cmd, out.substr(0, out.find('\n'))));
    const auto v = likwid_value(out, key);
    if (!v) c.notes.push_back(fmt::format("`{}` printed no {}", cmd, key));
    return v.value_or(0);
  };
  auto add = [&](std::string ceiling, std::string kernel, double ours, double theirs, bool bw) {
    c.rows.push_back({std::move(ceiling), std::move(kernel), ours, theirs, theirs > 0 ? ours / theirs : 0, bw});
  };
  // FMA peaks in L1: a quarter of each thread's L1 (likwid's peakflops kernels load one stream).
  const std::string peak_wg = workgroup(l1 / 4 * threads, threads);
  for (const auto& p : r.peaks) {
    std::string test;
    if (p.dtype == DType::fp64) test = "peakflops_" + fma;
    else if (p.dtype == DType::fp32) test = "peakflops_sp_" + fma;
    else continue;  // likwid has no bf16 or int8 peak kernels
    add(fmt::format("{} peak, {} threads", name(p.dtype), threads), test + " -w " + peak_wg, p.all_cores.value,
        bench(test, peak_wg, "MFlops/s:"), false);
  }
  // Bandwidth at the all-core working sets: read <-> load, triad <-> stream (a = b + s·c: two
  // loads and a store per element, bytes counted alike, no write-allocate).
  for (const auto& b : r.sweep_all) {
    const std::string where = b.cache >= 0 ? fmt::format("L{}", h.caches[static_cast<std::size_t>(b.cache)].level) : "DRAM";
    const std::string wg = workgroup(b.working_set_bytes * threads, threads);
    add(fmt::format("{} read, {} threads", where, threads), "load_" + vec + " -w " + wg, b.read.value,
        bench("load_" + vec, wg, "MByte/s:"), true);
    add(fmt::format("{} triad, {} threads", where, threads), "stream_" + vec + " -w " + wg, b.triad.value,
        bench("stream_" + vec, wg, "MByte/s:"), true);
  }
  return c;
}

}  // namespace ridgeline::measure
