#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

#include "ridgeline/core/error.hpp"
#include "ridgeline/profile/shapes.hpp"
#include "ridgeline/io/profile_file.hpp"

namespace ridgeline::io {

namespace {

using nlohmann::json;
constexpr size_t kMaxInflated = size_t{2} << 30;  // 2 GiB: a guard against decompression bombs

std::string gunzip(std::string_view in, std::string_view source) {
  z_stream z{};
  if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) throw InputError(fmt::format("{}: cannot start gzip decompression", source));
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(std::min<size_t>(in.size(), UINT32_MAX));
  std::string out;
  char buf[1 << 16];
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    z.next_out = reinterpret_cast<Bytef*>(buf);
    z.avail_out = sizeof(buf);
    rc = inflate(&z, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END) {
      inflateEnd(&z);
      throw InputError(fmt::format("{}: corrupt or truncated gzip data", source));
    }
    out.append(buf, sizeof(buf) - z.avail_out);
    if (out.size() > kMaxInflated) {
      inflateEnd(&z);
      throw InputError(fmt::format("{}: decompresses to more than 2 GiB", source));
    }
    if (rc == Z_OK && z.avail_in == 0 && z.avail_out != 0) {
      inflateEnd(&z);
      throw InputError(fmt::format("{}: truncated gzip data", source));
    }
  }
  inflateEnd(&z);
  return out;
}

double num(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return -1;
  return it->get<double>();
}

}  // namespace

profile::Profile parse_torch_trace(std::string_view bytes, std::string_view source) {
  std::string inflated;
  std::string_view text = bytes;
  if (bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f && static_cast<unsigned char>(bytes[1]) == 0x8b) {
    inflated = gunzip(bytes, source);
    text = inflated;
  }
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::exception& e) {
    throw InputError(fmt::format("{}: not a Chrome trace: malformed JSON ({})", source, e.what()));
  }
  const json* events = nullptr;
  if (doc.is_array()) events = &doc;
  else if (doc.is_object() && doc.contains("traceEvents") && doc["traceEvents"].is_array()) events = &doc["traceEvents"];
  if (!events) throw InputError(fmt::format("{}: not a Chrome trace: no \"traceEvents\" array", source));

  profile::Profile p;
  p.source = std::string(source);
  p.format = "torch";
  // CPU ops by External id: the FLOPs `with_flops` records on them, and the shapes
  // `record_shapes` records, for the kernels they launch.
  struct CpuOp {
    std::string name;
    double flops = -1;
    std::vector<std::vector<double>> dims;
    std::vector<std::string> types;
  };
  std::map<double, CpuOp> cpu_ops;
  for (const auto& e : *events) {
    if (!e.is_object() || e.value("cat", json()).is_null()) continue;
    if (e["cat"] != "cpu_op") continue;
    const json& a = e.value("args", json::object());
    if (!a.is_object()) continue;
    const double id = num(a, "External id");
    if (id < 0) continue;
    CpuOp op;
    const json name = e.value("name", json());
    if (name.is_string()) op.name = name.get<std::string>();
    op.flops = num(a, "flops");
    const json dims = a.value("Input Dims", json());
    const json types = a.value("Input type", json());
    if (dims.is_array() && types.is_array()) {
      bool ok = true;
      for (const auto& d : dims) {
        std::vector<double> v;
        if (d.is_array()) {
          for (const auto& x : d) {
            if (x.is_number()) v.push_back(x.get<double>());
            else ok = false;  // nested lists (TensorList): no single shape
          }
        }
        op.dims.push_back(std::move(v));
      }
      for (const auto& t : types) op.types.push_back(t.is_string() ? t.get<std::string>() : std::string());
      if (!ok) op.dims.clear();
    }
    cpu_ops[id] = std::move(op);
  }
  std::vector<double> launch_ids;  // each launch's External id (-1: none)
  struct Span {
    double device, ts, dur;
  };
  std::vector<Span> spans;
  size_t without_flops = 0, without_bytes = 0;
  for (const auto& e : *events) {
    if (!e.is_object()) continue;
    const json cat = e.value("cat", json());
    if (!cat.is_string() || e.value("ph", json()) != "X") continue;
    const std::string c = cat.get<std::string>();
    if (c != "kernel" && c != "Kernel" && c != "cuda_profiler_range") continue;
    const double dur = num(e, "dur");
    if (dur < 0) continue;
    profile::KernelLaunch k;
    const json name = e.value("name", json());
    k.name = name.is_string() ? name.get<std::string>() : std::string("(unnamed)");
    k.duration_s = dur * 1e-6;  // Chrome traces count microseconds
    const json a = e.value("args", json::object());
    double id = -1;  // the launching CPU op's External id
    if (a.is_object()) {
      // CUPTI range-profiler counters (sm__ or smsp__ prefixes): add and mul one, fma two.
      for (const auto& [key, val] : a.items()) {
        if (!val.is_number() || !(val.get<double>() >= 0)) continue;
        const auto pos = key.find("sass_thread_inst_executed_op_");
        if (pos == std::string::npos || key.size() < pos + 33) continue;
        const std::string op = key.substr(pos + 29, 4);  // e.g. "ffma", "dadd", "hmul"
        const double w = op.substr(1, 3) == "fma" ? 2 : (op.substr(1, 3) == "add" || op.substr(1, 3) == "mul") ? 1 : 0;
        if (w == 0) continue;
        const double v = w * val.get<double>();
        if (op[0] == 'd') k.flops_fp64 += v;
        else if (op[0] == 'f') k.flops_fp32 += v;
        else if (op[0] == 'h') k.flops_fp16 += v;
        k.has_flops = true;
      }
      if (const double f = num(a, "kernel_flop"); f >= 0) {  // Inductor
        k.flops_tensor += f;
        k.has_flops = true;
      }
      if (const double gb = num(a, "kernel_num_gb"); gb >= 0) {
        k.dram_bytes = gb * 1e9;
        k.has_bytes = true;
      }
      id = num(a, "External id");
      const double dev = num(a, "device");
      const double ts = num(e, "ts");
      if (ts >= 0 && c != "cuda_profiler_range") spans.push_back({dev, ts, dur});
    }
    p.launches.push_back(std::move(k));
    launch_ids.push_back(id);
  }
  // An op's FLOPs (recorded with with_flops, or estimated from its shapes) go to the longest
  // kernel it launched, so that an op of several kernels (addmm: bias copy + GEMM) counts
  // them once.
  std::map<double, size_t> longest;
  for (size_t i = 0; i < p.launches.size(); ++i) {
    const double id = launch_ids[i];
    if (id < 0 || !cpu_ops.count(id)) continue;
    auto [it, fresh] = longest.emplace(id, i);
    if (!fresh && p.launches[i].duration_s > p.launches[it->second].duration_s) it->second = i;
  }
  size_t estimated = 0;
  for (const auto& [id, i] : longest) {
    profile::KernelLaunch& k = p.launches[i];
    const CpuOp& op = cpu_ops[id];
    k.op = op.name;
    if (k.has_flops) continue;
    if (op.flops >= 0) {
      k.flops_tensor = op.flops;
      k.has_flops = true;
      continue;
    }
    const profile::AtenEstimate est = profile::estimate_aten(op.name, op.dims, op.types);
    if (!est.ok) continue;
    if (est.matrix) k.flops_tensor = est.flops;
    else if (est.dtype == DType::fp64) k.flops_fp64 = est.flops;
    else k.flops_fp32 = est.flops;
    k.has_flops = true;
    k.flops_estimated = true;
    if (!k.has_bytes) {
      k.dram_bytes = est.bytes;
      k.has_bytes = true;
    }
    ++estimated;
  }
  for (const auto& k : p.launches) {
    without_flops += k.has_flops ? 0 : 1;
    without_bytes += k.has_bytes ? 0 : 1;
  }
  if (estimated) {
    p.warnings.push_back(fmt::format("{} of {} kernels have FLOPs and bytes estimated from their aten op's shapes (record_shapes)",
                                     estimated, p.launches.size()));
  }
  if (p.launches.empty()) throw InputError(fmt::format("{}: the trace has no GPU kernel events (\"cat\": \"kernel\")", source));
  if (without_flops) p.warnings.push_back(fmt::format("{} of {} kernels have no FLOP count (profile with with_flops, CUPTI counters or Inductor)", without_flops, p.launches.size()));
  if (without_bytes) p.warnings.push_back(fmt::format("{} of {} kernels have no byte count (Inductor's kernel_num_gb)", without_bytes, p.launches.size()));
  // Idle gaps between consecutive kernels of each device.
  std::sort(spans.begin(), spans.end(), [](const Span& x, const Span& y) { return x.device != y.device ? x.device < y.device : x.ts < y.ts; });
  double start = 0, end = 0;
  for (size_t i = 0; i < spans.size(); ++i) {
    const bool first = i == 0 || spans[i].device != spans[i - 1].device;
    const bool last = i + 1 == spans.size() || spans[i + 1].device != spans[i].device;
    if (first) {
      start = spans[i].ts;
      end = spans[i].ts + spans[i].dur;
    } else {
      const double gap = spans[i].ts - end;
      if (gap > 0) {
        p.idle_s += gap * 1e-6;
        if (gap > 1) p.idle_gaps += 1;
      }
      end = std::max(end, spans[i].ts + spans[i].dur);
    }
    if (last) p.span_s += (end - start) * 1e-6;
  }
  return p;
}

}  // namespace ridgeline::io
