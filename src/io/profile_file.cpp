#include "ridgeline/io/profile_file.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include "ridgeline/core/error.hpp"
#include "ridgeline/core/files.hpp"
#include "ridgeline/core/number_chars.hpp"
#include "ridgeline/io/csv.hpp"
#include "ridgeline/io/embedded.hpp"

namespace ridgeline::io {

namespace {

constexpr size_t kMaxProfileBytes = size_t{1} << 30;

// "4,963,609,951.19" -> 4963609951.19; nullopt for text that is not a number ("n/a", "").
std::optional<double> number(std::string_view s) {
  std::string clean;
  clean.reserve(s.size());
  for (char c : s) {
    if (c != ',' && c != ' ') clean += c;
  }
  if (clean.empty()) return std::nullopt;
  double v = 0;
  auto [p, ec] = parse_double_chars(clean.data(), clean.data() + clean.size(), v);
  if (ec != std::errc() || p != clean.data() + clean.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

// Factor from an Nsight Compute unit to SI base units, or nullopt when unknown.
std::optional<double> ncu_unit(std::string_view u) {
  struct U {
    std::string_view name;
    double f;
  };
  static constexpr U k[] = {{"", 1},          {"nsecond", 1e-9}, {"ns", 1e-9},       {"usecond", 1e-6},
                            {"us", 1e-6},      {"msecond", 1e-3}, {"ms", 1e-3},       {"second", 1},
                            {"s", 1},          {"byte", 1},       {"Kbyte", 1e3},     {"Mbyte", 1e6},
                            {"Gbyte", 1e9},    {"Tbyte", 1e12},   {"byte/second", 1}, {"byte/s", 1},
                            {"Kbyte/second", 1e3}, {"Mbyte/second", 1e6}, {"Gbyte/second", 1e9},
                            {"Tbyte/second", 1e12}, {"inst", 1}, {"%", 1}, {"cycle", 1}, {"hz", 1},
                            {"Khz", 1e3}, {"Mhz", 1e6}, {"Ghz", 1e9}};
  for (const auto& e : k) {
    if (e.name == u) return e.f;
  }
  return std::nullopt;
}

bool is_rate(std::string_view u) { return u.find("/second") != std::string_view::npos || u == "byte/s"; }

// Lines Nsight Compute prints around the CSV ("==PROF== ...", "==WARNING== ...").
std::string without_tool_lines(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    size_t end = nl == std::string_view::npos ? text.size() : nl + 1;
    std::string_view line = text.substr(pos, end - pos);
    if (line.rfind("==", 0) != 0) out.append(line);
    pos = end;
  }
  return out;
}

int column(const std::vector<std::string>& header, std::string_view name) {
  for (size_t i = 0; i < header.size(); ++i) {
    if (header[i] == name) return static_cast<int>(i);
  }
  return -1;
}

struct Metric {
  std::string unit;
  double value = 0;
};

// The metrics a kernel's place on the roofline rests on: when present, they must be valid.
constexpr std::string_view kKeyMetrics[] = {"gpu__time_duration.sum", "Duration", "dram__bytes.sum", "dram__bytes_read.sum",
                                            "dram__bytes_write.sum", "dram__bytes.sum.per_second", "Memory Throughput"};
bool key_metric(std::string_view m) { return std::find(std::begin(kKeyMetrics), std::end(kKeyMetrics), m) != std::end(kKeyMetrics); }

// Fills a launch from its metrics (names as ncu prints them: metric ids or display names).
void fill(profile::KernelLaunch& k, const std::map<std::string, Metric>& ms, std::vector<std::string>& warnings, std::string_view source) {
  const std::string where = fmt::format("{}: kernel '{}'", source, k.name);
  for (const auto& [m, v] : ms) {
    if (!key_metric(m)) continue;
    if (!ncu_unit(v.unit)) throw InputError(fmt::format("{}: {}: unit '{}' is not an Nsight Compute unit", where, m, v.unit));
    if (!(v.value >= 0)) throw InputError(fmt::format("{}: {} {}: expected a value not below 0", where, m, v.value));
  }
  auto get = [&](std::string_view id) -> std::optional<double> {
    auto it = ms.find(std::string(id));
    if (it == ms.end()) return std::nullopt;
    auto f = ncu_unit(it->second.unit);
    // Durations, byte counts and instruction counts are never negative: a negative value
    // is a damaged file, and the metric counts as missing.
    if (!f || !(it->second.value >= 0)) return std::nullopt;
    return it->second.value * *f;
  };
  k.duration_s = get("gpu__time_duration.sum").value_or(get("Duration").value_or(0));
  if (ms.count("gpu__time_duration.sum") > 0 || ms.count("Duration") > 0) check_launch_duration(k.duration_s, where);
  // Bytes: the DRAM counter, its read/write halves, or the DRAM throughput x duration.
  if (auto b = get("dram__bytes.sum")) {
    k.dram_bytes = *b;
    k.has_bytes = true;
  } else if (auto r = get("dram__bytes_read.sum")) {
    k.dram_bytes = *r + get("dram__bytes_write.sum").value_or(0);
    k.has_bytes = true;
  } else {
    for (const char* id : {"dram__bytes.sum.per_second", "Memory Throughput"}) {
      auto it = ms.find(id);
      if (it != ms.end() && is_rate(it->second.unit) && it->second.value >= 0) {
        k.dram_bytes = it->second.value * ncu_unit(it->second.unit).value_or(0) * k.duration_s;
        k.has_bytes = true;
        break;
      }
    }
  }
  k.l2_bytes = get("lts__t_bytes.sum").value_or(0);
  k.l1_bytes = get("l1tex__t_bytes.sum").value_or(0);
  // FLOPs from the SASS counters: add and mul count one, fma two.
  auto ops = [&](char p, double& out) {
    for (auto [op, w] : {std::pair<const char*, double>{"add", 1}, {"mul", 1}, {"fma", 2}}) {
      if (auto v = get(fmt::format("sm__sass_thread_inst_executed_op_{}{}_pred_on.sum", p, op))) {
        out += w * *v;
        k.has_flops = true;
      }
    }
  };
  ops('d', k.flops_fp64);
  ops('f', k.flops_fp32);
  ops('h', k.flops_fp16);
  if (auto t = get("sm__ops_path_tensor_src_fp16_dst_fp32.sum")) {
    k.flops_tensor += 2 * *t;
    k.has_flops = true;
  }
  if (k.duration_s <= 0) warnings.push_back(fmt::format("{}: no duration (gpu__time_duration.sum)", k.name));
  if (!k.has_bytes) warnings.push_back(fmt::format("{}: no DRAM byte count (dram__bytes.sum)", k.name));
  if (!k.has_flops) warnings.push_back(fmt::format("{}: no FLOP counters (sm__sass_thread_inst_executed_op_*): FLOPs taken as 0", k.name));
}

}  // namespace

bool launch_duration_ok(double s) noexcept { return std::isfinite(s) && s > 0 && s <= 1e6; }

void check_launch_duration(double s, std::string_view where) {
  if (!launch_duration_ok(s)) {
    throw InputError(fmt::format("{}: duration {} s: expected a finite time above 0 and at most 10^6 s", where, s));
  }
}

void check_launch_amount(double v, std::string_view what, std::string_view where) {
  if (!std::isfinite(v) || v < 0 || v > 1e24) throw InputError(fmt::format("{}: {} {}: expected a finite number, 0 to 10^24", where, what, v));
}

double check_launch_count(double v, std::string_view where) {
  if (!(v >= 1) || v != std::floor(v) || v > 1e12) throw InputError(fmt::format("{}: count {}: expected a whole number of launches, at least 1", where, v));
  return v;
}

void check_launch_capacity(std::size_t held, std::string_view source, std::size_t cap) {
  if (held >= cap) {
    throw InputError(fmt::format("{}: more than {} kernel launches: ridgeline keeps each one (about 0.6 KB); profile a shorter "
                                 "window or fewer iterations",
                                 source, cap));
  }
}

profile::Profile parse_ncu_csv(std::string_view raw, std::string_view source) {
  if (raw.size() > kMaxProfileBytes) throw InputError(fmt::format("{}: larger than 1 GiB", source));
  const std::string text = without_tool_lines(raw);
  auto rows = parse_csv(text, source);
  size_t h = 0;
  while (h < rows.size() && column(rows[h], "Kernel Name") < 0) ++h;
  if (h == rows.size()) {
    throw InputError(fmt::format("{}: not an Nsight Compute CSV: no header with a \"Kernel Name\" column", source));
  }
  const auto& header = rows[h];
  const int kname = column(header, "Kernel Name");
  const int id = column(header, "ID");
  profile::Profile p;
  p.source = std::string(source);
  const int mname = column(header, "Metric Name"), munit = column(header, "Metric Unit"), mval = column(header, "Metric Value");
  if (mname >= 0 && mval >= 0) {
    // --page details: one row per metric per launch.
    p.format = "ncu-details";
    std::vector<std::string> order;
    std::map<std::string, std::pair<std::string, std::map<std::string, Metric>>> launches;
    for (size_t r = h + 1; r < rows.size(); ++r) {
      const auto& row = rows[r];
      if (static_cast<int>(row.size()) <= std::max({kname, mname, mval})) continue;
      const std::string key = id >= 0 && id < static_cast<int>(row.size()) ? row[id] : row[kname];
      auto [it, fresh] = launches.try_emplace(key);
      if (fresh) {
        order.push_back(key);
        it->second.first = row[kname];
      }
      if (row[mname].empty()) continue;
      auto v = number(row[mval]);
      if (!v && key_metric(row[mname])) {
        throw InputError(fmt::format("{}: kernel '{}': {} '{}' is not a number", source, row[kname], row[mname], row[mval]));
      }
      if (!v) continue;  // text-valued metrics (cache configuration, ...)
      it->second.second[row[mname]] = {munit >= 0 && munit < static_cast<int>(row.size()) ? row[munit] : "", *v};
    }
    for (const auto& key : order) {
      profile::KernelLaunch k;
      k.name = launches[key].first;
      fill(k, launches[key].second, p.warnings, source);
      check_launch_capacity(p.launches.size(), source);
      p.launches.push_back(std::move(k));
    }
  } else {
    // --page raw: one row per launch, metric ids as columns, units in the next row.
    p.format = "ncu-raw";
    if (h + 1 >= rows.size()) throw InputError(fmt::format("{}: the raw page has no units row", source));
    const auto& units = rows[h + 1];
    for (size_t r = h + 2; r < rows.size(); ++r) {
      const auto& row = rows[r];
      if (static_cast<int>(row.size()) <= kname) continue;
      std::map<std::string, Metric> ms;
      for (size_t c = 0; c < row.size() && c < header.size(); ++c) {
        if (auto v = number(row[c])) {
          ms[header[c]] = {c < units.size() ? units[c] : "", *v};
        } else if (key_metric(header[c]) && !row[c].empty()) {
          throw InputError(fmt::format("{}: kernel '{}': {} '{}' is not a number", source, row[kname], header[c], row[c]));
        }
      }
      profile::KernelLaunch k;
      k.name = row[kname];
      fill(k, ms, p.warnings, source);
      check_launch_capacity(p.launches.size(), source);
      p.launches.push_back(std::move(k));
    }
  }
  if (p.launches.empty()) throw InputError(fmt::format("{}: the CSV has a header but no kernel launches", source));
  return p;
}

profile::Profile parse_generic_csv(std::string_view text, std::string_view source, std::size_t max_launches) {
  if (text.size() > kMaxProfileBytes) throw InputError(fmt::format("{}: larger than 1 GiB", source));
  auto rows = parse_csv(text, source);
  if (rows.empty()) throw InputError(fmt::format("{}: empty: expected a header name,duration,flops,bytes[,count]", source));
  const auto& header = rows[0];
  const int name = column(header, "name"), flops = column(header, "flops"), bytes_ = column(header, "bytes"),
            count = column(header, "count");
  int dur = -1;
  double dur_factor = 1;
  for (auto [col, f] : {std::pair<const char*, double>{"duration", 1}, {"duration_s", 1}, {"duration_ms", 1e-3},
                        {"duration_us", 1e-6}, {"duration_ns", 1e-9}}) {
    if (int c = column(header, col); c >= 0) {
      dur = c;
      dur_factor = f;
    }
  }
  if (name < 0 || dur < 0 || flops < 0 || bytes_ < 0) {
    throw InputError(fmt::format("{}: header '{}...' lacks name, duration, flops or bytes", source, header.empty() ? "" : header[0]));
  }
  profile::Profile p;
  p.source = std::string(source);
  p.format = "csv";
  for (size_t r = 1; r < rows.size(); ++r) {
    const auto& row = rows[r];
    auto cell = [&](int c, const char* what) {
      if (c >= static_cast<int>(row.size())) throw InputError(fmt::format("{}: line {}: no {} column", source, r + 1, what));
      auto v = number(row[c]);
      if (!v || *v < 0) throw InputError(fmt::format("{}: line {}: {} '{}' is not a non-negative number", source, r + 1, what, row[c]));
      return *v;
    };
    profile::KernelLaunch k;
    if (name >= static_cast<int>(row.size())) throw InputError(fmt::format("{}: line {}: no name column", source, r + 1));
    k.name = row[name];
    const std::string where = fmt::format("{}: line {}", source, r + 1);
    k.duration_s = cell(dur, "duration") * dur_factor;
    check_launch_duration(k.duration_s, where);
    k.flops_tensor = cell(flops, "flops");  // the roof is the matrix unit at --dtype
    k.dram_bytes = cell(bytes_, "bytes");
    check_launch_amount(k.flops_tensor, "flops", where);
    check_launch_amount(k.dram_bytes, "bytes", where);
    k.has_flops = k.has_bytes = true;
    if (count >= 0) k.count = check_launch_count(cell(count, "count"), where);
    check_launch_capacity(p.launches.size(), source, max_launches);
    p.launches.push_back(std::move(k));
  }
  if (p.launches.empty()) throw InputError(fmt::format("{}: a header and no rows", source));
  return p;
}

std::string detect_profile_format(const std::string& path) {
  // From the first 64 KiB: a trace can be hundreds of MB, and is streamed.
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  note_input(path);
  std::string head(1 << 16, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<std::size_t>(in.gcount()));
  const bool gz = head.size() >= 2 && static_cast<unsigned char>(head[0]) == 0x1f && static_cast<unsigned char>(head[1]) == 0x8b;
  const size_t first = head.find_first_not_of(" \t\r\n");
  const bool json = first != std::string::npos && (head[first] == '{' || head[first] == '[');
  // An ERT roofline.json: ceilings, not kernels.
  if (json && head.find("\"empirical\"") != std::string::npos && head.find("\"gbytes\"") != std::string::npos) return "ert";
  return gz || json ? "torch" : head.find("Kernel Name") != std::string::npos ? "ncu" : "csv";
}

profile::Profile load_profile(const std::string& path, std::string_view format) {
  const std::string detected = format.empty() ? detect_profile_format(path) : std::string();
  const std::string_view f = format.empty() ? std::string_view(detected) : format;
  if (f == "ert") {
    throw InputError(fmt::format("{}: an ERT roofline.json holds a machine's ceilings, not kernels: make it a chip file with "
                                 "`ridgeline profile {} --format ert --capacity LEVEL=SIZE ... --out chip.yaml` and pass --hw chip.yaml",
                                 path, path));
  }
  if (f == "torch") return read_torch_trace(path);
  if (f == "ncu" || f == "csv") {
    const std::string text = read_text_file(path, "a profile (Nsight Compute CSV, PyTorch trace or CSV)");
    return f == "ncu" ? parse_ncu_csv(text, path) : parse_generic_csv(text, path);
  }
  throw InputError(fmt::format("--format: '{}' is not a format this build reads: expected ncu, csv, torch or ert", format));
}

}  // namespace ridgeline::io
