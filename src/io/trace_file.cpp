#include <fmt/format.h>
#include <zlib.h>

#include <simdjson.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>

#include "ridgeline/core/error.hpp"
#include "ridgeline/core/files.hpp"
#include "ridgeline/profile/shapes.hpp"
#include "ridgeline/io/profile_file.hpp"

namespace ridgeline::io {

namespace {

constexpr std::uint64_t kMaxInflated = std::uint64_t{2} << 30;  // 2 GiB (docs/profiles.md): a guard against decompression bombs
constexpr std::size_t kMaxEvent = std::size_t{256} << 20;        // one event's JSON text

// A source of bytes, read in chunks.
class Source {
 public:
  virtual ~Source() = default;
  /// Up to n bytes into dst; 0 at the end.
  virtual std::size_t read(char* dst, std::size_t n) = 0;
};

class MemorySource : public Source {
 public:
  explicit MemorySource(std::string_view s) : s_(s) {}
  std::size_t read(char* dst, std::size_t n) override {
    n = std::min(n, s_.size() - pos_);
    if (n > 0) std::memcpy(dst, s_.data() + pos_, n);
    pos_ += n;
    return n;
  }

 private:
  std::string_view s_;
  std::size_t pos_ = 0;
};

class FileSource : public Source {
 public:
  explicit FileSource(const std::string& path) : f_(std::fopen(path.c_str(), "rb")) {
    if (!f_) throw InputError(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
    note_input(path);
  }
  ~FileSource() override { std::fclose(f_); }
  FileSource(const FileSource&) = delete;
  FileSource& operator=(const FileSource&) = delete;
  std::size_t read(char* dst, std::size_t n) override { return std::fread(dst, 1, n, f_); }

 private:
  std::FILE* f_;
};

// gzip inflated on the fly from another source.
class GzipSource : public Source {
 public:
  GzipSource(Source& in, std::string_view source) : in_(in), source_(source) {
    if (inflateInit2(&z_, 16 + MAX_WBITS) != Z_OK) throw InputError(fmt::format("{}: cannot start gzip decompression", source));
  }
  ~GzipSource() override { inflateEnd(&z_); }
  GzipSource(const GzipSource&) = delete;
  GzipSource& operator=(const GzipSource&) = delete;
  std::size_t read(char* dst, std::size_t n) override {
    if (done_ || n == 0) return 0;
    z_.next_out = reinterpret_cast<Bytef*>(dst);
    z_.avail_out = static_cast<uInt>(std::min<std::size_t>(n, UINT32_MAX));
    while (z_.avail_out > 0 && !done_) {
      if (z_.avail_in == 0) {
        const std::size_t got = in_.read(inbuf_, sizeof(inbuf_));
        if (got == 0) throw InputError(fmt::format("{}: truncated gzip data", source_));
        z_.next_in = reinterpret_cast<Bytef*>(inbuf_);
        z_.avail_in = static_cast<uInt>(got);
      }
      const int rc = inflate(&z_, Z_NO_FLUSH);
      if (rc == Z_STREAM_END) done_ = true;
      else if (rc != Z_OK) throw InputError(fmt::format("{}: corrupt or truncated gzip data", source_));
    }
    const std::size_t out = n - z_.avail_out;
    total_ += out;
    if (total_ > kMaxInflated) throw InputError(fmt::format("{}: decompresses to more than 2 GiB, the limit for a gzipped trace (docs/profiles.md)", source_));
    return out;
  }

 private:
  Source& in_;
  std::string source_;
  z_stream z_{};
  char inbuf_[1 << 16];
  bool done_ = false;
  std::uint64_t total_ = 0;
};

// The elements of a Chrome trace's event array (the top-level array, or the value of the
// top-level object's "traceEvents"), one at a time, through a sliding buffer: the file is
// never held whole. Only the structure is scanned here (strings, nesting); each event is
// then parsed on its own by simdjson. Members after "traceEvents" are not read.
class EventReader {
 public:
  EventReader(Source& src, std::string_view source)
      : src_(src), source_(source), buf_((std::size_t{1} << 20) + simdjson::SIMDJSON_PADDING, ' ') {
    cap_ = buf_.size() - simdjson::SIMDJSON_PADDING;
  }

  /// The top-level "deviceProperties" (Kineto's GPUs) as JSON text, when it came before the events.
  const std::string& device_properties() const noexcept { return device_properties_; }

  /// The next object of the array as JSON text (valid until the next call; readable for
  /// SIMDJSON_PADDING bytes past its end), or false after the last.
  bool next(std::string_view& event) {
    if (!started_) start();
    for (;;) {
      skip_ws();
      int c = peek();
      if (c == ']') {
        ++pos_;
        finish_document();
        return false;
      }
      if (count_ > 0) {
        if (c != ',') fail("expected ',' or ']' between events");
        ++pos_;
        skip_ws();
        c = peek();
      }
      ++count_;
      if (c != '{') {  // not an event object: skipped
        skip_value();
        continue;
      }
      mark_ = pos_;
      skip_composite();
      event = std::string_view(buf_.data() + mark_, pos_ - mark_);
      mark_ = kNone;
      return true;
    }
  }

 private:
  static constexpr std::size_t kNone = static_cast<std::size_t>(-1);

  [[noreturn]] void fail(std::string_view why) const {
    throw InputError(fmt::format("{}: not a Chrome trace: {} (at byte {})", source_, why, consumed_ + pos_));
  }

  // Reads more input after end_; false at the end of the input. The bytes from mark_ (an
  // event or name being scanned), or else from pos_, are kept and moved to the front.
  bool more() {
    const std::size_t keep = mark_ != kNone ? mark_ : pos_;
    if (keep > 0) {
      std::memmove(buf_.data(), buf_.data() + keep, end_ - keep);
      end_ -= keep;
      pos_ -= keep;
      consumed_ += keep;
      if (mark_ != kNone) mark_ = 0;
    }
    if (end_ == cap_) {
      if (cap_ >= kMaxEvent) fail("an event longer than 256 MiB");
      cap_ *= 2;
      buf_.resize(cap_ + simdjson::SIMDJSON_PADDING, ' ');
    }
    const std::size_t got = src_.read(buf_.data() + end_, cap_ - end_);
    end_ += got;
    return got > 0;
  }
  int peek() {
    if (pos_ == end_ && !more()) return -1;
    return static_cast<unsigned char>(buf_[pos_]);
  }
  void skip_ws() {
    for (;;) {
      while (pos_ < end_) {
        const char c = buf_[pos_];
        if (c != ' ' && c != '\n' && c != '\r' && c != '\t') return;
        ++pos_;
      }
      if (!more()) return;
    }
  }
  // pos_ at an opening quote: moves past the closing one. memchr finds each quote; it closes
  // the string when an even number of backslashes precedes it. A run of backslashes at the
  // end of the data is read again after the refill, so that its length is known whole.
  void skip_string() {
    ++pos_;
    for (;;) {
      const char* base = buf_.data();
      const void* hit = pos_ < end_ ? std::memchr(base + pos_, '"', end_ - pos_) : nullptr;
      if (hit == nullptr) {
        std::size_t k = end_;
        while (k > pos_ && base[k - 1] == '\\') --k;
        pos_ = k;
        if (!more()) fail("truncated inside a string");
        continue;
      }
      const std::size_t q = static_cast<std::size_t>(static_cast<const char*>(hit) - base);
      std::size_t k = q;
      while (k > 0 && base[k - 1] == '\\') --k;
      pos_ = q + 1;
      if ((q - k) % 2 == 0) return;
    }
  }
  // pos_ at '{' or '[': moves past the matching close.
  void skip_composite() {
    int depth = 0;
    for (;;) {
      while (pos_ < end_) {
        const char c = buf_[pos_];
        if (c == '"') {
          skip_string();
          continue;
        }
        ++pos_;
        if (c == '{' || c == '[') {
          ++depth;
        } else if (c == '}' || c == ']') {
          if (--depth == 0) return;
        }
      }
      if (!more()) fail("truncated inside a value");
    }
  }
  void skip_value() {
    const int c = peek();
    if (c == '"') return skip_string();
    if (c == '{' || c == '[') return skip_composite();
    if (c < 0) fail("truncated");
    for (;;) {  // a number, true, false or null
      while (pos_ < end_) {
        const char d = buf_[pos_];
        if (d == ',' || d == '}' || d == ']' || d == ' ' || d == '\n' || d == '\r' || d == '\t') return;
        ++pos_;
      }
      if (!more()) return;
    }
  }
  // After the event array: the rest of the top-level object (skipped, but checked whole:
  // a truncated file is an error wherever it ends), then only whitespace.
  void finish_document() {
    if (in_object_) {
      for (;;) {
        skip_ws();
        int d = peek();
        if (d == '}') {
          ++pos_;
          break;
        }
        if (d != ',') fail("malformed JSON: expected ',' or '}' after the events");
        ++pos_;
        skip_ws();
        if (peek() != '"') fail("malformed JSON: expected a member name");
        skip_string();
        skip_ws();
        if (peek() != ':') fail("malformed JSON: expected ':' after a member name");
        ++pos_;
        skip_ws();
        skip_value();
      }
    }
    skip_ws();
    if (peek() >= 0) fail("malformed JSON: more after the end of the document");
  }

  // To the first event: into a top-level array, or into the object member "traceEvents".
  void start() {
    started_ = true;
    skip_ws();
    const int c = peek();
    if (c == '[') {
      ++pos_;
      return;
    }
    if (c != '{') fail("malformed JSON: expected an object or an array");
    ++pos_;
    in_object_ = true;
    for (bool first = true;; first = false) {
      skip_ws();
      int d = peek();
      if (d == '}' || d < 0) fail("no \"traceEvents\" array");
      if (!first) {
        if (d != ',') fail("malformed JSON: expected ',' between members");
        ++pos_;
        skip_ws();
        d = peek();
      }
      if (d != '"') fail("malformed JSON: expected a member name");
      mark_ = pos_;
      skip_string();
      const std::string_view member(buf_.data() + mark_, pos_ - mark_);
      const bool events = member == "\"traceEvents\"", devices = member == "\"deviceProperties\"";
      mark_ = kNone;
      skip_ws();
      if (peek() != ':') fail("malformed JSON: expected ':' after a member name");
      ++pos_;
      skip_ws();
      if (events) {
        if (peek() != '[') fail("no \"traceEvents\" array");
        ++pos_;
        return;
      }
      if (devices) {
        // Kept (Kineto writes it before the events): which GPUs the trace ran on.
        mark_ = pos_;
        skip_value();
        if (pos_ - mark_ <= (std::size_t{1} << 20)) device_properties_.assign(buf_.data() + mark_, pos_ - mark_);
        mark_ = kNone;
        continue;
      }
      skip_value();
    }
  }

  Source& src_;
  std::string source_;
  std::string buf_;
  std::string device_properties_;  // the top-level "deviceProperties" value before the events, as JSON
  std::size_t cap_ = 0, pos_ = 0, end_ = 0, mark_ = kNone;
  std::uint64_t consumed_ = 0;
  std::size_t count_ = 0;
  bool started_ = false;
  bool in_object_ = false;
};

using simdjson::dom::element;
using simdjson::dom::object;

double num(const object& o, std::string_view key) {
  double v = -1;
  if (o[key].get_double().get(v) != simdjson::SUCCESS) return -1;
  return v;
}

std::string_view str(const object& o, std::string_view key) {
  std::string_view v;
  if (o[key].get_string().get(v) != simdjson::SUCCESS) return {};
  return v;
}

// A CPU op, as much of it as its kernels need: its shapes are turned into an estimate as
// soon as it is read (kept per op, the shapes would be most of the memory).
struct CpuOp {
  std::string name;
  double flops = -1;
  profile::AtenEstimate estimate;
};

struct Span {
  double device, ts, dur;
};

// What the events of a trace leave: kernels with their launching op's External id, CPU ops
// by External id (the FLOPs `with_flops` records on them and the shapes `record_shapes`
// records), and the kernels' spans on the timeline.
struct Collected {
  profile::Profile p;
  std::map<double, CpuOp> cpu_ops;
  std::vector<double> launch_ids;  // each launch's External id (-1: none)
  std::vector<Span> spans;
  std::size_t without_dur = 0;  // kernel events with no "dur": instants, or a damaged trace
};

void cpu_op(const object& e, Collected& out, std::string_view source) {
  check_launch_capacity(out.cpu_ops.size(), source);
  object a;
  if (e["args"].get_object().get(a) != simdjson::SUCCESS) return;
  const double id = num(a, "External id");
  if (id < 0) return;
  CpuOp op;
  op.name = std::string(str(e, "name"));
  op.flops = num(a, "flops");
  thread_local std::vector<std::vector<double>> op_dims;
  thread_local std::vector<std::string> op_types;
  op_dims.clear();
  op_types.clear();
  simdjson::dom::array dims, types;
  if (a["Input Dims"].get_array().get(dims) == simdjson::SUCCESS && a["Input type"].get_array().get(types) == simdjson::SUCCESS) {
    bool ok = true;
    for (element d : dims) {
      std::vector<double> v;
      simdjson::dom::array xs;
      if (d.get_array().get(xs) == simdjson::SUCCESS) {
        for (element x : xs) {
          double n = 0;
          if (x.get_double().get(n) == simdjson::SUCCESS) v.push_back(n);
          else ok = false;  // nested lists (TensorList): no single shape
        }
      }
      op_dims.push_back(std::move(v));
    }
    for (element t : types) {
      std::string_view sv;
      op_types.emplace_back(t.get_string().get(sv) == simdjson::SUCCESS ? std::string(sv) : std::string());
    }
    if (!ok) op_dims.clear();
  }
  if (op.flops < 0) op.estimate = profile::estimate_aten(op.name, op_dims, op_types);
  out.cpu_ops[id] = std::move(op);
}

void kernel(const object& e, std::string_view cat, Collected& out, std::string_view source, std::size_t n) {
  profile::KernelLaunch k;
  std::string_view name;
  k.name = e["name"].get_string().get(name) == simdjson::SUCCESS ? std::string(name) : std::string("(unnamed)");
  const std::string where = fmt::format("{}: event {} (kernel '{}')", source, n, k.name);
  element d;
  if (e["dur"].get(d) != simdjson::SUCCESS) {  // no duration: an instant, not a kernel to place
    ++out.without_dur;
    return;
  }
  double dur = -1;
  if (d.get_double().get(dur) != simdjson::SUCCESS) throw InputError(fmt::format("{}: dur is not a number", where));
  check_launch_duration(dur * 1e-6, where);  // Chrome traces count microseconds
  k.duration_s = dur * 1e-6;
  double id = -1;  // the launching CPU op's External id
  object a;
  if (e["args"].get_object().get(a) == simdjson::SUCCESS) {
    // CUPTI range-profiler counters (sm__ or smsp__ prefixes): add and mul one, fma two.
    for (auto field : a) {
      const std::string_view key = field.key;
      const auto pos = key.find("sass_thread_inst_executed_op_");
      if (pos == std::string_view::npos || key.size() < pos + 33) continue;
      double val = 0;
      if (field.value.get_double().get(val) != simdjson::SUCCESS || !(val >= 0)) continue;
      const std::string_view op = key.substr(pos + 29, 4);  // e.g. "ffma", "dadd", "hmul"
      const std::string_view kind = op.substr(1, 3);
      const double w = kind == "fma" ? 2 : (kind == "add" || kind == "mul") ? 1 : 0;
      if (w == 0) continue;
      const double v = w * val;
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
    // A timestamp past 10^18 us (30,000 years) is a damaged file, not a time.
    if (!(ts < 1e18)) throw InputError(fmt::format("{}: ts {}: expected microseconds below 10^18", where, ts));
    if (ts >= 0 && cat != "cuda_profiler_range") out.spans.push_back({dev, ts, dur});
  }
  check_launch_capacity(out.p.launches.size(), source);
  out.p.launches.push_back(std::move(k));
  out.launch_ids.push_back(id);
}

// Reads every event of the trace in `src`.
void collect(Source& src, std::string_view source, Collected& out) {
  EventReader events(src, source);
  simdjson::dom::parser parser;
  std::string_view text;
  std::size_t n = 0;
  while (events.next(text)) {
    ++n;
    element doc;
    if (parser.parse(text.data(), text.size(), false).get(doc) != simdjson::SUCCESS) {
      throw InputError(fmt::format("{}: not a Chrome trace: event {} is malformed JSON", source, n));
    }
    object e;
    if (doc.get_object().get(e) != simdjson::SUCCESS) continue;
    const std::string_view cat = str(e, "cat");
    if (cat == "cpu_op") {
      cpu_op(e, out, source);
    } else if ((cat == "kernel" || cat == "Kernel" || cat == "cuda_profiler_range") && str(e, "ph") == "X") {
      kernel(e, cat, out, source, n);
    }
  }
  // The first GPU's name and memory: which chip the trace ran on.
  if (!events.device_properties().empty()) {
    element devs;
    const std::string& d = events.device_properties();
    simdjson::padded_string padded(d);
    simdjson::dom::array arr;
    if (parser.parse(padded).get(devs) == simdjson::SUCCESS && devs.get_array().get(arr) == simdjson::SUCCESS) {
      for (element dev : arr) {
        object o;
        if (dev.get_object().get(o) != simdjson::SUCCESS) continue;
        out.p.device_name = std::string(str(o, "name"));
        out.p.device_memory_bytes = std::max(0.0, num(o, "totalGlobalMem"));
        break;
      }
    }
  }
}

// The kernels, their FLOPs from the ops that launched them, and the timeline.
profile::Profile finish(Collected& c, std::string_view source) {
  profile::Profile& p = c.p;
  p.source = std::string(source);
  p.format = "torch";
  auto& cpu_ops = c.cpu_ops;
  const auto& launch_ids = c.launch_ids;
  auto& spans = c.spans;
  size_t without_flops = 0, without_bytes = 0;
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
    const profile::AtenEstimate& est = op.estimate;
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
  if (p.launches.empty() && c.without_dur > 0) {
    throw InputError(fmt::format("{}: its {} GPU kernel events have no \"dur\" (a duration in microseconds): nothing to place", source,
                                 c.without_dur));
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
  return std::move(p);
}

profile::Profile read_trace(Source& raw, bool gz, std::string_view source) {
  Collected c;
  if (gz) {
    GzipSource inflated(raw, source);
    collect(inflated, source, c);
  } else {
    collect(raw, source, c);
  }
  return finish(c, source);
}

}  // namespace

profile::Profile parse_torch_trace(std::string_view bytes, std::string_view source) {
  const bool gz = bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f && static_cast<unsigned char>(bytes[1]) == 0x8b;
  MemorySource src(bytes);
  return read_trace(src, gz, source);
}

profile::Profile read_torch_trace(const std::string& path) {
  bool gz = false;
  {
    FileSource head(path);
    unsigned char magic[2] = {0, 0};
    gz = head.read(reinterpret_cast<char*>(magic), 2) == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
  }
  FileSource src(path);
  return read_trace(src, gz, path);
}

}  // namespace ridgeline::io

