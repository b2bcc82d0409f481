#include <fmt/format.h>
#include <zlib.h>

#include <simdjson.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <unordered_map>

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

// What a trace keeps is flat in its number of kernel events: one record per kernel name,
// a state per CPU op (its kernels may come before or after it), the spans of one window.
// (TraceLimits bounds them.)
constexpr std::size_t kMaxDevices = 4096;  // devices on the timeline
constexpr std::uint32_t kNoIndex = ~std::uint32_t{0};
constexpr std::uint64_t kNoEvent = ~std::uint64_t{0};

struct NameHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};
using NameIndex = std::unordered_map<std::string, std::uint32_t, NameHash, std::equal_to<>>;

// Per External id: the CPU op (its name, the FLOPs with_flops recorded on it, or the
// estimate from its shapes, made as it is read so that the shapes are not kept) and the
// longest kernel it launched so far. Made by whichever event comes first.
struct OpState {
  std::uint32_t name = kNoIndex;     // into Collected::op_names; kNoIndex: no CPU op event (yet)
  std::uint32_t longest = kNoIndex;  // the longest kernel's record
  double flops = -1;
  profile::AtenEstimate estimate;
  double longest_dur = 0;
  std::uint64_t longest_event = 0;  // its event number: a record names the op of its first such launch
  bool longest_has_flops = false, longest_has_bytes = false;
  double kernel_s = 0, kernels = 0;  // every kernel it launched: time and launches
};

// Idle time per device from the kernels' spans, gathered in windows, each sorted by device
// and start and swept in order. A span starting before the last start of an earlier window
// on its device (more than a window out of order) can only extend the device's line: it is
// counted, and reported, as overlapping what came before.
// m[key], refusing a key m does not hold once it holds `cap`: `refusal` gives the message.
template <class Map, class Refusal>
typename Map::mapped_type& bounded_entry(Map& m, const typename Map::key_type& key, std::size_t cap, Refusal refusal) {
  if (auto it = m.find(key); it != m.end()) return it->second;
  if (m.size() >= cap) throw InputError(refusal());
  return m[key];
}

class Timeline {
 public:
  explicit Timeline(std::size_t window) : window_size_(std::max<std::size_t>(window, 1)) {}

  void add(double device, double ts, double dur, std::string_view source) {
    bounded_entry(devices_, device, kMaxDevices, [&] { return fmt::format("{}: kernels on more than {} devices", source, kMaxDevices); });
    window_.push_back({device, ts, dur});
    if (window_.size() >= window_size_) sweep();
  }

  void finish(profile::Profile& p) {
    sweep();
    for (const auto& [dev, d] : devices_) {
      if (d.seen) p.span_s += (d.end - d.start) * 1e-6;
    }
    p.idle_s = idle_s_;
    p.idle_gaps = gaps_;
    if (late_ > 0) {
      p.warnings.push_back(fmt::format("{} kernel spans start more than {} events out of order: they are counted as overlapping earlier kernels, "
                                       "so the idle time may be overstated",
                                       late_, window_size_));
    }
  }

 private:
  struct Span {
    double device, ts, dur;
  };
  struct Device {
    double start = 0, end = 0, last_ts = 0, swept_ts = 0;
    bool seen = false;
  };

  void sweep() {
    std::sort(window_.begin(), window_.end(), [](const Span& x, const Span& y) { return x.device != y.device ? x.device < y.device : x.ts < y.ts; });
    Device* d = nullptr;
    for (std::size_t i = 0; i < window_.size(); ++i) {
      const Span& s = window_[i];
      if (i == 0 || s.device != window_[i - 1].device) d = &devices_[s.device];
      if (!d->seen) {
        *d = {s.ts, s.ts + s.dur, s.ts, -1e300, true};
        continue;
      }
      if (s.ts < d->swept_ts) {
        ++late_;
        d->start = std::min(d->start, s.ts);
      } else {
        const double gap = s.ts - d->end;
        if (gap > 0) {
          idle_s_ += gap * 1e-6;
          if (gap > 1) gaps_ += 1;
        }
        d->last_ts = s.ts;
      }
      d->end = std::max(d->end, s.ts + s.dur);
    }
    for (auto& [dev, dv] : devices_) dv.swept_ts = dv.last_ts;
    window_.clear();
  }

  std::size_t window_size_;
  std::vector<Span> window_;
  std::map<double, Device> devices_;
  double idle_s_ = 0, gaps_ = 0;
  std::uint64_t late_ = 0;
};

// What the events of a trace leave: per kernel name a record of the sums over its launches
// (made per-launch figures by finish), the CPU ops by External id, and the timeline.
struct Collected {
  explicit Collected(const TraceLimits& l) : limits(l), timeline(l.span_window) {}
  TraceLimits limits;
  profile::Profile p;
  NameIndex kernels;                      // name -> record in p.launches
  std::vector<std::uint64_t> op_event;    // per record: the event of the launch its op was taken from
  NameIndex op_index;
  std::vector<std::string> op_names;
  std::unordered_map<double, OpState> ops;
  Timeline timeline;
  std::map<double, profile::TimeShare> streams;  // kernel and copy time by the args' "stream"
  profile::TimeShare no_op{"(no CPU op)", 0, 0};  // kernels without an External id
  std::uint64_t launches = 0, without_flops = 0, without_bytes = 0;
  std::size_t without_dur = 0;  // kernel events with no "dur": instants, or a damaged trace
  // Kernel events of "dur" 0: shorter than the trace's resolution (a trace in whole
  // microseconds, as deepseek-ai/profile-data's are, gives 0 to what ran under one), with no
  // rate to place: counted, not placed.
  std::size_t zero_dur = 0;
};

void add_to_stream(Collected& out, const object& args, double dur_us, std::string_view source) {
  const double stream = num(args, "stream");
  if (stream < 0) return;
  profile::TimeShare& s =
      bounded_entry(out.streams, stream, kMaxDevices, [&] { return fmt::format("{}: kernels on more than {} streams", source, kMaxDevices); });
  s.time_s += dur_us * 1e-6;
  s.count += 1;
}

// A copy or fill (cat gpu_memcpy, gpu_memset): time, not a kernel to place on a roofline.
void copy(const object& e, std::string_view cat, Collected& out, std::string_view source, std::size_t n) {
  double dur = -1;
  if (e["dur"].get_double().get(dur) != simdjson::SUCCESS) return;
  // (0: under the trace's resolution, a copy's time of nothing as far as it can tell)
  if (dur != 0 && !launch_duration_ok(dur * 1e-6)) check_launch_duration(dur * 1e-6, fmt::format("{}: event {} ({})", source, n, cat));
  profile::TimeShare& s = cat == "gpu_memcpy" ? out.p.memcpy : out.p.memset;
  s.time_s += dur * 1e-6;
  s.count += 1;
  object a;
  if (e["args"].get_object().get(a) == simdjson::SUCCESS) add_to_stream(out, a, dur, source);
}

OpState& op_state(Collected& out, double id, std::string_view source) {
  return bounded_entry(out.ops, id, out.limits.max_cpu_ops, [&] {
    return fmt::format("{}: more than {} CPU ops with an External id: profile a shorter window or fewer iterations", source,
                       out.limits.max_cpu_ops);
  });
}

std::uint32_t intern(NameIndex& index, std::size_t cap, std::string_view name, std::string_view source, std::string_view what) {
  if (auto it = index.find(name); it != index.end()) return it->second;
  if (index.size() >= cap) {
    throw InputError(fmt::format("{}: more than {} distinct {} names: ridgeline keeps one record per name; profile a shorter window", source,
                                 cap, what));
  }
  const auto i = static_cast<std::uint32_t>(index.size());
  index.emplace(std::string(name), i);
  return i;
}

void cpu_op(const object& e, Collected& out, std::string_view source) {
  object a;
  if (e["args"].get_object().get(a) != simdjson::SUCCESS) return;
  const double id = num(a, "External id");
  if (id < 0) return;
  OpState& op = op_state(out, id, source);
  const std::string_view name = str(e, "name");
  op.name = intern(out.op_index, out.limits.max_names, name, source, "CPU op");
  if (op.name == out.op_names.size()) out.op_names.emplace_back(name);
  op.flops = num(a, "flops");
  op.estimate = {};
  if (op.flops >= 0) return;
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
  op.estimate = profile::estimate_aten(out.op_names[op.name], op_dims, op_types);
}

void kernel(const object& e, std::string_view cat, Collected& out, std::string_view source, std::size_t n) {
  std::string_view name;
  if (e["name"].get_string().get(name) != simdjson::SUCCESS) name = "(unnamed)";
  // Which event, for an error message only: not built for every event.
  auto where = [&] { return fmt::format("{}: event {} (kernel '{}')", source, n, name); };
  element d;
  if (e["dur"].get(d) != simdjson::SUCCESS) {  // no duration: an instant, not a kernel to place
    ++out.without_dur;
    return;
  }
  double dur = -1;
  if (d.get_double().get(dur) != simdjson::SUCCESS) throw InputError(fmt::format("{}: dur is not a number", where()));
  if (dur == 0) {  // under the trace's resolution: no rate to place
    ++out.zero_dur;
    return;
  }
  if (!launch_duration_ok(dur * 1e-6)) check_launch_duration(dur * 1e-6, where());  // Chrome traces count microseconds
  profile::KernelLaunch k;                     // this launch's figures (its name is the record's)
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
    if (!(ts < 1e18)) throw InputError(fmt::format("{}: ts {}: expected microseconds below 10^18", where(), ts));
    if (ts >= 0 && cat != "cuda_profiler_range") out.timeline.add(dev, ts, dur, source);
    add_to_stream(out, a, dur, source);
  }
  const std::uint32_t r = intern(out.kernels, out.limits.max_names, name, source, "kernel");
  if (r == out.p.launches.size()) {
    profile::KernelLaunch& fresh = out.p.launches.emplace_back();
    fresh.name = std::string(name);
    fresh.count = 0;
    out.op_event.push_back(kNoEvent);
  }
  add_launches(out.p.launches[r], k);
  ++out.launches;
  if (!k.has_flops) ++out.without_flops;
  if (!k.has_bytes) ++out.without_bytes;
  if (id < 0) {
    out.no_op.time_s += k.duration_s;
    out.no_op.count += 1;
  } else {
    OpState& op = op_state(out, id, source);
    op.kernel_s += k.duration_s;
    op.kernels += 1;
    if (op.longest == kNoIndex || k.duration_s > op.longest_dur) {
      op.longest = r;
      op.longest_dur = k.duration_s;
      op.longest_event = n;
      op.longest_has_flops = k.has_flops;
      op.longest_has_bytes = k.has_bytes;
    }
  }
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
    } else if ((cat == "gpu_memcpy" || cat == "gpu_memset") && str(e, "ph") == "X") {
      copy(e, cat, out, source, n);
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
  std::uint64_t estimated = 0;
  // Kernel time by the launching op's name (kernels whose op never appeared have none).
  std::vector<profile::TimeShare> by_op(c.op_names.size());
  for (std::size_t i = 0; i < by_op.size(); ++i) by_op[i].name = c.op_names[i];
  for (const auto& [id, op] : c.ops) {
    profile::TimeShare& to = op.name == kNoIndex ? c.no_op : by_op[op.name];
    to.time_s += op.kernel_s;
    to.count += op.kernels;
    // An op's FLOPs (recorded with with_flops, or estimated from its shapes) go to the longest
    // kernel it launched (one launch of its record), so that an op of several kernels (addmm:
    // bias copy + GEMM) counts them once.
    if (op.name == kNoIndex || op.longest == kNoIndex) continue;
    profile::KernelLaunch& rec = p.launches[op.longest];
    if (op.longest_event < c.op_event[op.longest]) {
      c.op_event[op.longest] = op.longest_event;
      rec.op = c.op_names[op.name];
    }
    if (op.longest_has_flops) continue;
    if (op.flops >= 0) {
      rec.flops_tensor += op.flops;
      rec.has_flops = true;
      --c.without_flops;
      continue;
    }
    const profile::AtenEstimate& est = op.estimate;
    if (!est.ok) continue;
    if (est.matrix) rec.flops_tensor += est.flops;
    else if (est.dtype == DType::fp64) rec.flops_fp64 += est.flops;
    else rec.flops_fp32 += est.flops;
    rec.has_flops = true;
    rec.flops_estimated = true;
    --c.without_flops;
    if (!op.longest_has_bytes) {
      rec.dram_bytes += est.bytes;
      rec.has_bytes = true;
      --c.without_bytes;
    }
    ++estimated;
  }
  std::erase_if(by_op, [](const profile::TimeShare& s) { return s.count == 0; });
  if (c.no_op.count > 0 && !by_op.empty()) by_op.push_back(c.no_op);  // (no kernel's op in the trace: no breakdown)
  auto largest_first = [](const profile::TimeShare& x, const profile::TimeShare& y) { return x.time_s > y.time_s; };
  std::stable_sort(by_op.begin(), by_op.end(), largest_first);
  p.by_cpu_op = std::move(by_op);
  for (auto& [stream, s] : c.streams) {
    s.name = fmt::format("stream {:g}", stream);
    p.by_stream.push_back(s);
  }
  std::stable_sort(p.by_stream.begin(), p.by_stream.end(), largest_first);
  // A record holds per-launch figures (its totals over `count`), as the importers' records do.
  for (profile::KernelLaunch& rec : p.launches) {
    for (double* v : {&rec.duration_s, &rec.flops_fp64, &rec.flops_fp32, &rec.flops_fp16, &rec.flops_tensor, &rec.dram_bytes}) *v /= rec.count;
  }
  if (estimated) {
    p.warnings.push_back(fmt::format("{} of {} kernels have FLOPs and bytes estimated from their aten op's shapes (record_shapes)",
                                     estimated, c.launches));
  }
  if (c.zero_dur > 0) {
    p.warnings.push_back(fmt::format("kernel events of 0 us (shorter than the trace's resolution): {}, counted, not placed",
                                     c.zero_dur));
  }
  if (p.launches.empty() && c.zero_dur > 0) {
    throw InputError(fmt::format("{}: no GPU kernel event to place: {} last 0 us, {} have no \"dur\"", source, c.zero_dur,
                                 c.without_dur));
  }
  if (p.launches.empty() && c.without_dur > 0) {
    throw InputError(fmt::format("{}: its {} GPU kernel events have no \"dur\" (a duration in microseconds): nothing to place", source,
                                 c.without_dur));
  }
  if (p.launches.empty()) throw InputError(fmt::format("{}: the trace has no GPU kernel events (\"cat\": \"kernel\")", source));
  if (c.without_flops) p.warnings.push_back(fmt::format("{} of {} kernels have no FLOP count (profile with with_flops, CUPTI counters or Inductor)", c.without_flops, c.launches));
  if (c.without_bytes) p.warnings.push_back(fmt::format("{} of {} kernels have no byte count (Inductor's kernel_num_gb)", c.without_bytes, c.launches));
  c.timeline.finish(p);
  return std::move(p);
}

profile::Profile read_trace(Source& raw, bool gz, std::string_view source, const TraceLimits& limits) {
  Collected c(limits);
  if (gz) {
    GzipSource inflated(raw, source);
    collect(inflated, source, c);
  } else {
    collect(raw, source, c);
  }
  return finish(c, source);
}

}  // namespace

profile::Profile parse_torch_trace(std::string_view bytes, std::string_view source, const TraceLimits& limits) {
  const bool gz = bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f && static_cast<unsigned char>(bytes[1]) == 0x8b;
  MemorySource src(bytes);
  return read_trace(src, gz, source, limits);
}

profile::Profile read_torch_trace(const std::string& path) {
  bool gz = false;
  {
    FileSource head(path);
    unsigned char magic[2] = {0, 0};
    gz = head.read(reinterpret_cast<char*>(magic), 2) == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
  }
  FileSource src(path);
  return read_trace(src, gz, path, TraceLimits{});
}

}  // namespace ridgeline::io

