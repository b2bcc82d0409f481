#include "ridgeline/comm/collective.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "ridgeline/core/error.hpp"

namespace ridgeline::comm {

std::string_view name(Collective c) noexcept {
  switch (c) {
    case Collective::all_reduce: return "allreduce";
    case Collective::all_gather: return "allgather";
    case Collective::reduce_scatter: return "reducescatter";
    case Collective::all_to_all: return "alltoall";
    case Collective::send_recv: return "sendrecv";
  }
  return "allreduce";
}

std::string_view name(Algo a) noexcept {
  switch (a) {
    case Algo::ring: return "ring";
    case Algo::tree: return "tree";
    case Algo::direct: return "direct";
    case Algo::nvls: return "nvls";
    case Algo::automatic: return "auto";
  }
  return "ring";
}

std::string_view name(Proto p) noexcept {
  switch (p) {
    case Proto::simple: return "simple";
    case Proto::ll128: return "ll128";
    case Proto::ll: return "ll";
  }
  return "simple";
}

std::optional<Algo> parse_algo(std::string_view s) noexcept {
  if (s == "ring") return Algo::ring;
  if (s == "tree") return Algo::tree;
  if (s == "direct") return Algo::direct;
  if (s == "nvls") return Algo::nvls;
  if (s == "auto") return Algo::automatic;
  return std::nullopt;
}

Algo algo_flag(std::string_view text) {
  if (text.empty()) return Algo::automatic;
  if (auto a = parse_algo(text)) return *a;
  throw InputError(fmt::format("--algo: '{}' is not an algorithm: expected auto, ring, tree, direct or nvls", text));
}

void check_algo(const hw::ChipSpec& chip, Algo algo) {
  if (algo != Algo::nvls) return;
  const hw::TopologySpec& t = chip.topology;
  if (t.fabric != hw::Fabric::switched || !t.in_switch_reduction) {
    throw InputError(fmt::format("--algo: nvls needs switches that reduce, and {}'s topology has none (in_switch_reduction)", chip.name));
  }
}

double wire_bytes(const CollectiveShape& s) noexcept {
  const double p = s.chips;
  if (p <= 1) return 0;
  const double share = (p - 1) / p * s.bytes;
  switch (s.kind) {
    case Collective::all_reduce: return 2 * share;  // reduce-scatter then all-gather
    case Collective::all_gather:
    case Collective::reduce_scatter: return share;
    case Collective::all_to_all:
      // A ring forwards each chunk d hops for d = 1..P-1: N/P · P(P-1)/2.
      return s.algo == Algo::ring ? s.bytes * (p - 1) / 2 : share;
    case Collective::send_recv: return s.bytes;
  }
  return 0;
}

double latency_steps(const CollectiveShape& s) noexcept {
  const double p = s.chips;
  if (p <= 1) return 0;
  switch (s.kind) {
    case Collective::all_reduce:
      return s.algo == Algo::ring ? 2 * (p - 1) : s.algo == Algo::tree ? 2 * std::ceil(std::log2(p)) : 2;
    case Collective::all_gather:
    case Collective::reduce_scatter:
      return s.algo == Algo::ring ? p - 1 : s.algo == Algo::tree ? std::ceil(std::log2(p)) : 1;
    case Collective::all_to_all: return s.algo == Algo::ring ? p - 1 : 1;
    case Collective::send_recv: return 1;
  }
  return 0;
}

double bus_factor(const CollectiveShape& s) noexcept { return s.bytes > 0 ? wire_bytes(s) / s.bytes : 0; }

namespace {

// What a collective does to the chip's memory and vector unit: everything sent is read
// from memory and everything received is stored to a buffer; where the chip reduces
// (all-reduce, reduce-scatter; not when the switch does), each received chunk is added to
// the local one, (P-1)/P·N elements whose local operand is read too, in fp32.
void add_chip_work(ops::Cost& c, Collective kind, double sent, double p, double n_bytes, DType dtype,
                   bool chip_reduces) noexcept {
  double mem = sent;
  if (chip_reduces && (kind == Collective::all_reduce || kind == Collective::reduce_scatter)) {
    const double reduced = (p - 1) / p * n_bytes;
    mem += reduced;
    c.add_flops(hw::Unit::vector, DType::fp32, reduced / bytes(dtype));
  }
  c.add_main_bytes(mem);
  c.add_main_stores(sent);
  c.launches = 1;
}

}  // namespace

ops::Cost collective_cost(const CollectiveShape& s) noexcept {
  ops::Cost c;
  if (s.chips <= 1 || s.bytes <= 0) return c;
  const double wire = wire_bytes(s);
  c.link_bytes[s.link] = wire;
  c.link_steps[s.link] = latency_steps(s);
  add_chip_work(c, s.kind, wire, s.chips, s.bytes, s.dtype, true);
  return c;
}

namespace {

CollectiveLink collective_link(const hw::ChipSpec& chip, hw::LinkScope scope) noexcept {
  CollectiveLink r;
  r.index = chip.link_index(scope);
  if (r.index < 0) return r;
  const hw::LinkSpec& l = chip.links[static_cast<std::size_t>(r.index)];
  r.bw = l.chip_bandwidth_Bps();
  r.lat = l.latency_s;
  r.count = l.count > 0 ? l.count : 1;
  const double cls = chip.efficiency.kernel[static_cast<int>(hw::KernelClass::collective)].link;
  r.eff = l.efficiency > 0 ? l.efficiency : cls > 0 ? cls : chip.efficiency.link > 0 ? chip.efficiency.link : 1;
  r.s_per_byte = r.bw > 0 ? 1 / (r.bw * r.eff) : 0;
  return r;
}

// One algorithm's traffic per chip per direction: over the scale-up links (of which
// `lanes` are busy) and over the network, and its sequential message steps on each.
struct Traffic {
  Algo algo = Algo::ring;
  double up = 0, lanes = 1, net = 0;
  double up_steps = 0, net_steps = 0;
  bool in_switch = false;
  double members = 1;  ///< NVLS: the group's size (its pipelines per channel)
};

// An algorithm's traffic in time, at the links' achievable rates: the scale-up bytes as
// charged to the whole link bundle (spread over the busy lanes only), each link's time, and
// the latency of the steps on both.
struct LinkTimes {
  double up_eq = 0, t_up = 0, t_net = 0, latency = 0;
  double wait = 0;  ///< NVLS: its chunks' waits on their flags
  double total() const noexcept { return std::max(t_up, t_net) + latency + wait; }
};

// A protocol's costs: per call, per step on the scale-up links and on the network, and the
// share of the line that is data.
struct Protocol {
  double base_s = 0, step_up_s = 0, step_net_s = 0, share = 1;
  bool ll = false;
};
constexpr Protocol kPlain{};

// NCCL's tuner (src/graph/tuning.cc, NCCL 2.2x; latencies in µs): baseLat per algorithm and
// protocol; hwLat per step on NVLink and on the network; bandwidth: ring LL at half the
// bus bandwidth (8-byte words carrying 4 bytes), LL128 at 0.92 (120 of 128 bytes, as the
// tuner rounds it), tree at 0.92 of the ring's, LL128 on a tree x 120/128, LL on a tree
// / 3.8. The tuner's per-channel caps and its tree correction factors for medium sizes are
// left out. NVLS (Simple only) is priced as its chunk pipeline below, not by the tuner's
// 25 µs, which leaves medium buffers up to 30% too fast.
constexpr double kUs = 1e-6;
constexpr Protocol kNcclRing[3] = {
    {8.4 * kUs, 3.4 * kUs, 14.0 * kUs, 1.0, false},   // simple
    {14.0 * kUs, 1.9 * kUs, 4.0 * kUs, 0.92, false},  // ll128
    {6.6 * kUs, 0.6 * kUs, 2.7 * kUs, 0.5, true},     // ll
};
constexpr Protocol kNcclTree[3] = {
    {8.4 * kUs, 4.0 * kUs, 14.0 * kUs, 0.92, false},
    {14.0 * kUs, 1.25 * kUs, 8.5 * kUs, 0.92 * 120.0 / 128.0, false},
    {6.8 * kUs, 0.6 * kUs, 5.0 * kUs, 0.92 / 3.8, true},
};
constexpr Protocol kNcclNvls{9.0 * kUs, 0, 0, 1.0, false};

// NVLS's chunk pipeline (docs/collectives.md#nvls-chunks). NCCL runs 16 channels
// (NVLS_NCHANNELS on Hopper, NCCL's init log), each with one pipeline per member (its heads):
// 16·P pipelines share the chip's link, each moving its share of the buffer in chunks
// (kNvlsChunks; on the wire c(P+1)/P) at 1/(16·P) of the link's reduction rate, every chunk
// then waiting kNvlsChunkWait on its flags, the pipeline filling in kNvlsFill chunks:
//   t = 9 µs + fill·(w·16P/R + wait) + (W/R)·(1 + wait·R/(16P·w)),  w = c(P+1)/P, W = N(P+1)/P.
// wait, fill, the 9 µs and the H100/H200 reduction efficiency (0.765) are one fit to
// nccl-tests all-reduce on 8 x H200, 2 MiB to 16 GiB (NCCL 2.30.7; stas00/ml-engineering
// network/benchmarks/README.md), within 3.3% over the sweep. NCCL picks the chunk by size;
// the fastest of the four is priced (where the two differ, within 8%: 2198 us in NCCL's
// 64 KiB chunks against 2047 in 128 KiB at 512 MiB).
constexpr double kNvlsChannels = 16;
constexpr double kNvlsChunkWait = 6.0 * kUs;
constexpr double kNvlsFill = 1.5;

const Protocol& nccl_protocol(Algo algo, Proto p) noexcept {
  const int k = static_cast<int>(p);
  if (algo == Algo::nvls) return kNcclNvls;
  return algo == Algo::tree ? kNcclTree[k] : kNcclRing[k];
}

double log2_ceil(double x) noexcept { return x <= 1 ? 0 : std::ceil(std::log2(x)); }

// The bus factor of the ring (nccl-tests): wire bytes per buffer byte.
double ring_factor(Collective kind, double p) noexcept {
  return wire_bytes({kind, Algo::ring, 1.0, p, DType::bf16, 0});
}

// Scale-up links a group keeps busy: every link reaches the switch; on a full mesh one
// link (bundle) per peer, a ring using the edge-disjoint Hamiltonian cycles of the
// complete graph in both directions (2⌊(g−1)/2⌋ of g−1 peers); on a torus the links
// along the axes the group spans, both directions where the axis wraps around.
double lanes(const Wiring& wr, const Placement& p, double g, Algo algo, Collective kind, int count) noexcept {
  const hw::TopologySpec& t = wr.topology;
  double n = count;  // switched: every link reaches the switch
  switch (t.fabric) {
    case hw::Fabric::switched: break;
    case hw::Fabric::mesh: {
      const int dom = wr.domain;
      const double per_peer = t.links_per_peer > 0 ? t.links_per_peer : std::max(1.0, std::floor(count / std::max(1.0, dom - 1.0)));
      if (kind == Collective::send_recv || g <= 2) {
        n = per_peer;
      } else if (algo == Algo::direct) {
        n = (g - 1) * per_peer;
      } else {
        n = 2 * std::floor((g - 1) / 2) * per_peer;
      }
      break;
    }
    case hw::Fabric::torus: {
      const int dims = t.torus_dims == 2 ? 2 : 3;
      const double per_dir = std::max(1.0, std::floor(count / (2.0 * dims)));
      n = 0;
      for (int a = 0; a < 3; ++a) {
        if (p.extent[a] > 1) n += (p.wrap[a] ? 2 : 1) * per_dir;
      }
      if (kind == Collective::send_recv) n = per_dir;
      if (n <= 0) n = per_dir;
      break;
    }
  }
  return std::clamp(n, 1.0, static_cast<double>(count));
}

// Mean hops from a chip to every member along one torus axis of e members: on a ring
// Σ_d min(d, e − d) / e = ⌊e²/4⌋ / e; on a line the mean |i − j| over all pairs, (e² − 1)/(3e).
double mean_hops(int e, bool wrap) noexcept {
  if (e <= 1) return 0;
  const double ee = static_cast<double>(e) * e;
  return wrap ? std::floor(ee / 4) / e : (ee - 1) / (3.0 * e);
}

Traffic traffic(const Wiring& wr, const Placement& p, Collective kind, double n_bytes, Algo algo, bool across) noexcept {
  const hw::TopologySpec& topo = wr.topology;
  const int up_count = wr.up.count;
  const double P = p.size;
  const double g = across ? std::max(1.0, p.per_domain) : P;
  const double m = across ? P / g : 1;
  Traffic t;
  t.algo = algo;
  const bool torus = topo.fabric == hw::Fabric::torus;
  // A torus ring's steps: the axes one after another.
  const int axis_steps = torus ? p.extent[0] + p.extent[1] + p.extent[2] - 3 : 0;
  if (!across) {
    if (algo == Algo::nvls) {
      // Each chip sends its buffer into the switch once (multimem reduce) and receives the
      // reduced result once (multicast store), plus its 1/P share each way.
      t.up = n_bytes * (P + 1) / P;
      t.up_steps = 2;
      t.in_switch = true;
      t.lanes = up_count;
      t.members = P;
      return t;
    }
    const CollectiveShape s{kind, algo, n_bytes, P, DType::bf16, 0};
    t.up = wire_bytes(s);
    t.up_steps = latency_steps(s);
    if (torus && algo == Algo::ring && kind != Collective::all_to_all && kind != Collective::send_recv) {
      t.up_steps = (kind == Collective::all_reduce ? 2 : 1) * std::max(1, axis_steps);
    } else if (torus && kind == Collective::all_to_all && algo == Algo::direct) {
      // Every byte travels its hops: N/P to each member, mean hops summed over the axes.
      double hops = 0;
      for (int a = 0; a < 3; ++a) hops += mean_hops(p.extent[a], p.wrap[a]);
      t.up = n_bytes * std::max(hops, (P - 1) / P);
      t.up_steps = std::max(1, axis_steps);
    }
    t.lanes = lanes(wr, p, P, algo, kind, up_count);
    return t;
  }
  // Across domains: the network carries what leaves each domain, shared by the g members'
  // network links (one NIC per chip, rail-optimised); the scale-up links carry the rest.
  switch (kind) {
    case Collective::send_recv:
      t.net = n_bytes;
      t.net_steps = 1;
      t.algo = Algo::direct;
      break;
    case Collective::all_to_all:
      if (algo == Algo::ring) {
        const double w = n_bytes * (P - 1) / 2;
        t.net = w / g, t.up = w * (g - 1) / g;
        t.net_steps = m - 1, t.up_steps = (P - 1) - (m - 1);
      } else {
        t.algo = Algo::direct;
        t.net = n_bytes * (P - g) / P, t.up = n_bytes * (g - 1) / P;
        t.net_steps = 1;
      }
      break;
    default: {
      const double phases = kind == Collective::all_reduce ? 2 : 1;
      if (algo == Algo::tree && kind == Collective::all_reduce) {
        // NCCL's tree: a chain through the domain, a double binary tree across domains. A
        // node sends each byte up one tree and down the other (NCCL's tuner: algorithm
        // bandwidth = bus bandwidth x 0.5), shared by the g members' network links.
        t.net = 2 * n_bytes / g;
        t.up = 2 * n_bytes * (g - 1) / g;
        t.up_steps = 2 * (g - 1), t.net_steps = 2 * log2_ceil(m);
      } else if (algo == Algo::direct) {
        t.net = phases * n_bytes * (P - g) / P, t.up = phases * n_bytes * (g - 1) / P;
        t.net_steps = phases;
      } else {
        t.algo = Algo::ring;
        const double w = ring_factor(kind, P) * n_bytes;
        t.net = w / g, t.up = w * (g - 1) / g;
        const double steps = phases * (P - 1), inter = phases * (m - 1);
        t.net_steps = inter, t.up_steps = steps - inter;
      }
    }
  }
  t.lanes = lanes(wr, p, g, t.algo, kind, up_count);
  return t;
}

}  // namespace

bool library_prices(const hw::TopologySpec& t, Algo algo) noexcept {
  return t.library == hw::CollectiveLibrary::nccl && algo != Algo::direct;
}

Wiring wiring(const hw::System& sys) noexcept {
  Wiring f;
  const hw::ChipSpec& chip = sys.chip;
  f.up = collective_link(chip, hw::LinkScope::node);
  f.net = collective_link(chip, hw::LinkScope::network);
  if (f.up.index < 0) f.up = f.net;  // a chip with only a network link uses it for everything
  f.topology = chip.topology;
  f.reduction_efficiency = chip.topology.reduction_efficiency > 0 ? chip.topology.reduction_efficiency : f.up.eff;
  f.reduction_s_per_byte = f.up.bw > 0 ? 1 / (f.up.bw * f.reduction_efficiency) : 0;
  f.domain = sys.domain();
  f.slice = chip.topology.fabric == hw::Fabric::torus ? sys.torus_slice() : std::array<int, 3>{1, 1, 1};
  return f;
}

Placement place(const Wiring& wr, double size, double stride) noexcept {
  Placement p;
  p.size = std::max(1.0, size);
  stride = std::max(1.0, stride);
  const hw::TopologySpec& t = wr.topology;
  if (t.fabric == hw::Fabric::torus) {
    const std::array<int, 3>& d = wr.slice;
    double s = stride, n = p.size, inside = 1;
    for (int a = 0; a < 3; ++a) {
      const int len = d[a];
      if (len <= 1 || n <= 1) continue;
      if (s >= len) {
        s /= len;
        continue;
      }
      const int e = static_cast<int>(std::min(n, std::max(1.0, std::floor(len / s))));
      p.extent[a] = e;
      p.wrap[a] = s == 1 && e == len && t.wrap_multiple > 0 && len % t.wrap_multiple == 0;
      n /= e;
      inside *= e;
      s = 1;
    }
    p.per_domain = inside;
    return p;
  }
  const double dom = std::max(1, wr.domain);
  p.per_domain = stride >= dom ? 1 : std::min(p.size, std::max(1.0, std::floor(dom / stride)));
  return p;
}

namespace {

bool crosses(const Wiring& wr, const Placement& p) noexcept {
  return p.per_domain < p.size && wr.net.index >= 0 && wr.up.index != wr.net.index;
}

// The protocols the library runs `algo` in: its three for ring and tree, Simple otherwise
// (NVLS: Simple in each of its chunk sizes).
int protocols(const Wiring& wr, Algo resolved) noexcept {
  if (!library_prices(wr.topology, resolved)) return 1;
  return resolved == Algo::nvls ? static_cast<int>(kNvlsChunks.size()) : 3;
}

// The q-th of `protocols` for an algorithm: a protocol, or NVLS's q-th chunk size in Simple.
Option nth_option(Algo algo, int q) noexcept {
  if (algo == Algo::nvls) return {algo, Proto::simple, static_cast<std::uint8_t>(q)};
  return {algo, static_cast<Proto>(q), 0};
}

// The times of traffic `t` in a protocol (Simple where the library does not run the
// algorithm or there is no library), the protocol priced, its share of the line.
struct LinkTimesOf {
  LinkTimes lt;
  Proto proto = Proto::simple;
  double share = 1;
  double chunk = 0;  ///< NVLS: the chunk size priced
};

LinkTimesOf link_times_of(const Wiring& wr, const Traffic& t, Proto proto, bool across, int chunk = 0) noexcept {
  const CollectiveLink& up = wr.up;
  const CollectiveLink& net = wr.net;
  LinkTimesOf e;
  const bool nccl = library_prices(wr.topology, t.algo);
  e.proto = nccl ? proto : Proto::simple;
  const Protocol& pr = nccl ? nccl_protocol(t.algo, e.proto) : kPlain;
  e.share = pr.share;
  // The bytes on each link are the data over the protocol's share of the line; scale-up
  // bytes spread over the busy lanes only, charged to the whole bundle as bytes x links / lanes.
  LinkTimes& lt = e.lt;
  lt.up_eq = (t.lanes == up.count ? t.up : t.up * up.count / t.lanes) / pr.share;
  lt.t_up = lt.up_eq * (t.in_switch ? wr.reduction_s_per_byte : up.s_per_byte);
  lt.t_net = t.net / pr.share * net.s_per_byte;
  lt.latency = nccl ? pr.base_s + t.up_steps * pr.step_up_s * (pr.ll && across ? 1.8 : 1) + t.net_steps * pr.step_net_s
                    : t.up_steps * up.lat + t.net_steps * net.lat;
  if (nccl && t.algo == Algo::nvls) {
    // The chunk pipeline: fill chunks of w bytes at a pipeline's rate, the waits of every chunk.
    const double pipes = kNvlsChannels * t.members;
    e.chunk = kNvlsChunks[static_cast<std::size_t>(chunk)];
    const double w = e.chunk * (t.members + 1) / t.members;
    lt.latency += kNvlsFill * (w * pipes * wr.reduction_s_per_byte + kNvlsChunkWait);
    lt.wait = kNvlsChunkWait * t.up / (pipes * w);
  }
  return e;
}

Priced finish(const Wiring& wr, const Placement& p, Collective kind, double bytes_, DType dtype, const Traffic& t,
              const LinkTimesOf& e, bool across) noexcept {
  const CollectiveLink& up = wr.up;
  const CollectiveLink& net = wr.net;
  const LinkTimes& lt = e.lt;
  Priced out;
  out.algo = t.algo;
  out.proto = e.proto;
  out.up_bytes = t.up / e.share;
  out.net_bytes = t.net / e.share;
  out.lanes = t.lanes;
  out.latency_s = lt.latency;
  out.chunk_bytes = e.chunk;
  out.chunk_wait_s = lt.wait;
  out.time_s = lt.total();
  // The bounding link carries the collective in its Cost; the other link's traffic overlaps.
  const bool on_net = across && lt.t_net > lt.t_up;
  const CollectiveLink& b = on_net ? net : up;
  out.link = b.index;
  ops::Cost& c = out.cost;
  if (b.index >= 0 && b.index < hw::kMaxLinks) {
    c.link_bytes[b.index] = on_net ? t.net / e.share : lt.up_eq;
    // The fixed costs in steps of this link's latency (its own steps exactly without a
    // library and without the other link's).
    c.link_steps[b.index] = b.lat > 0 ? (lt.latency + lt.wait) / b.lat : on_net ? t.net_steps : t.up_steps;
  }
  c.in_switch = t.in_switch && !on_net;
  add_chip_work(c, kind, t.up + t.net, p.size, bytes_, dtype, !t.in_switch);
  return out;
}

// Nothing to move (a single chip, no bytes): no cost, the algorithm as asked (ring for auto).
Priced nothing(Algo algo) noexcept {
  Priced out;
  out.algo = algo == Algo::automatic ? Algo::ring : algo;
  return out;
}

// Algorithms: the one asked for, or what NCCL's tuner weighs for this collective.
int candidates(const Wiring& wr, Collective kind, Algo algo, bool across, Algo* cand) noexcept {
  const bool nvls_ok = wr.topology.fabric == hw::Fabric::switched && wr.topology.in_switch_reduction &&
                       kind == Collective::all_reduce && !across;
  int n = 0;
  if (algo != Algo::automatic) {
    cand[n++] = algo == Algo::nvls && !nvls_ok ? Algo::ring : algo;
  } else if (kind == Collective::all_to_all || kind == Collective::send_recv) {
    cand[n++] = Algo::direct;
  } else {
    cand[n++] = Algo::ring;
    if (kind == Collective::all_reduce && across) cand[n++] = Algo::tree;
    if (nvls_ok) cand[n++] = Algo::nvls;
  }
  return n;
}

}  // namespace

int options(const Wiring& wr, const Placement& p, Collective kind, Algo algo, Option* out) noexcept {
  const bool across = crosses(wr, p);
  Algo cand[3];
  const int n = candidates(wr, kind, algo, across, cand);
  int k = 0;
  for (int i = 0; i < n; ++i) {
    const Algo resolved = traffic(wr, p, kind, 1, cand[i], across).algo;
    const int protos = protocols(wr, resolved);
    for (int q = 0; q < protos; ++q) {
      out[k] = nth_option(resolved, q);
      out[k++].algo = cand[i];
    }
  }
  return k;
}

Priced price(const Wiring& wr, const Placement& p, Collective kind, double bytes_, DType dtype, Option o) noexcept {
  if (p.size <= 1 || bytes_ <= 0) return nothing(o.algo);
  const bool across = crosses(wr, p);
  const Traffic t = traffic(wr, p, kind, bytes_, o.algo, across);
  return finish(wr, p, kind, bytes_, dtype, t, link_times_of(wr, t, o.proto, across, o.chunk), across);
}

Priced price(const Wiring& wr, const Placement& p, Collective kind, double bytes_, DType dtype, Algo algo) noexcept {
  if (p.size <= 1 || bytes_ <= 0) return nothing(algo);
  const bool across = crosses(wr, p);
  Algo cand[3];
  const int n = candidates(wr, kind, algo, across, cand);
  // In the order options() lists them: each algorithm in each of its protocols; the
  // traffic copied only when an algorithm wins.
  Traffic best_t;
  LinkTimesOf best;
  bool first = true;
  for (int i = 0; i < n; ++i) {
    const Traffic t = traffic(wr, p, kind, bytes_, cand[i], across);
    const int protos = protocols(wr, t.algo);
    for (int q = 0; q < protos; ++q) {
      const Option o = nth_option(t.algo, q);
      const LinkTimesOf e = link_times_of(wr, t, o.proto, across, o.chunk);
      if (first || e.lt.total() < best.lt.total()) best_t = t, best = e;
      first = false;
    }
  }
  return finish(wr, p, kind, bytes_, dtype, best_t, best, across);
}

}  // namespace ridgeline::comm
