#include "ridgeline/comm/collective.hpp"

#include <cmath>

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
  }
  return "ring";
}

std::optional<Algo> parse_algo(std::string_view s) noexcept {
  if (s == "ring") return Algo::ring;
  if (s == "tree") return Algo::tree;
  if (s == "direct") return Algo::direct;
  return std::nullopt;
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

ops::Cost collective_cost(const CollectiveShape& s) noexcept {
  ops::Cost c;
  if (s.chips <= 1 || s.bytes <= 0) return c;
  const double wire = wire_bytes(s);
  c.link_bytes[s.link] = wire;
  c.link_steps[s.link] = latency_steps(s);
  // Everything sent is read from memory and everything received is stored to a buffer.
  double mem = wire;
  if (s.kind == Collective::all_reduce || s.kind == Collective::reduce_scatter) {
    // Each received chunk is added to the local one: (P-1)/P·N elements, local operand read.
    const double reduced = (s.chips - 1) / s.chips * s.bytes;
    mem += reduced;
    c.add_flops(hw::Unit::vector, DType::fp32, reduced / bytes(s.dtype));
  }
  c.add_main_bytes(mem);
  c.add_main_stores(wire);
  c.launches = 1;
  return c;
}

}  // namespace ridgeline::comm
