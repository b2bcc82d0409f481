#pragma once
/// Collectives over P chips: bytes each chip puts on the wire, latency steps, the memory
/// traffic and reduction FLOPs on each chip (docs/collectives.md).
#include <array>
#include <optional>
#include <string_view>

#include "ridgeline/core/dtype.hpp"
#include "ridgeline/hw/chip.hpp"
#include "ridgeline/ops/cost.hpp"

namespace ridgeline::comm {

enum class Collective : std::uint8_t { all_reduce, all_gather, reduce_scatter, all_to_all, send_recv };
/// ring, tree and direct as docs/collectives.md tabulates them; nvls: the switches reduce
/// (all-reduce only); automatic: the fastest the machine offers for the size, as NCCL's tuner
/// picks (`--algo auto`).
enum class Algo : std::uint8_t { ring, tree, direct, nvls, automatic };

/// A collective library's protocols (docs/collectives.md#protocols): simple — large chunks
/// behind memory fences, the full bandwidth; ll128 — 128-byte lines with a flag in each
/// (120 of 128 bytes are data); ll — 8-byte words of 4 data bytes and a 4-byte flag, the
/// lowest latency at half the bandwidth. Without a library every collective is `simple`.
enum class Proto : std::uint8_t { simple, ll128, ll };

std::string_view name(Collective c) noexcept;
std::string_view name(Algo a) noexcept;
std::string_view name(Proto p) noexcept;
std::optional<Algo> parse_algo(std::string_view s) noexcept;
/// `--algo TEXT` (empty: auto); throws InputError naming the choices.
Algo algo_flag(std::string_view text);
/// Throws InputError when `chip` cannot run `algo` at all (nvls: switches that reduce). Where
/// it can, `price` runs a forced nvls on the all-reduces inside one domain and rings
/// elsewhere (gathers, groups across domains).
void check_algo(const hw::ChipSpec& chip, Algo algo);

/// `bytes` follows nccl-tests: the per-chip buffer for all-reduce and all-to-all, the
/// gathered output for all-gather, the per-chip input for reduce-scatter, the message
/// for send/recv.
struct CollectiveShape {
  Collective kind = Collective::all_reduce;
  Algo algo = Algo::ring;
  double bytes = 0;
  double chips = 2;
  DType dtype = DType::bf16;  ///< element type, for reduction FLOPs
  int link = 0;               ///< index of the link crossed (ChipSpec::links)
};

/// Bytes each chip sends per direction.
double wire_bytes(const CollectiveShape& s) noexcept;
/// Sequential message steps (each pays the link latency).
double latency_steps(const CollectiveShape& s) noexcept;
/// The bus-bandwidth factor of nccl-tests: wire bytes / buffer bytes (2(P-1)/P for all-reduce).
double bus_factor(const CollectiveShape& s) noexcept;

/// The Cost on one chip over one flat link (the formulas of the table in
/// docs/collectives.md, no topology); zero for a single chip. Needs a concrete algorithm.
ops::Cost collective_cost(const CollectiveShape& s) noexcept;

/// Where a group's members sit in the machine (docs/collectives.md#placement).
struct Placement {
  double size = 1;        ///< members P
  double per_domain = 1;  ///< members in each scale-up domain g (P/g domains)
  /// On a torus: members along each axis of the slice, and whether the group closes the
  /// axis's wraparound ring.
  std::array<int, 3> extent{1, 1, 1};
  std::array<bool, 3> wrap{};
};

/// One link kind as collectives see it: its index in ChipSpec::links (-1: none), the peak
/// bandwidth of all its links per direction, the latency per hop, the fraction collectives
/// reach (the link's efficiency, else the chip's collective or link efficiency).
struct CollectiveLink {
  int index = -1;
  double bw = 0, lat = 0, eff = 1;
  int count = 1;
  double s_per_byte = 0;  ///< 1 / (bw x eff): seconds per byte at the achievable rate (0 without the link)
};

/// What pricing a collective reads of a system, gathered once (wiring()) so that graph
/// builds and plan searches price their collectives without looking the chip up again.
struct Wiring {
  CollectiveLink up;   ///< the scale-up (`node`) link; the network link on a chip without one
  CollectiveLink net;  ///< the network link
  hw::TopologySpec topology;
  double reduction_efficiency = 1;  ///< of in-switch reductions (the up link's when not given)
  double reduction_s_per_byte = 0;  ///< 1 / (up bw x reduction_efficiency)
  int domain = 1;                   ///< System::domain()
  std::array<int, 3> slice{1, 1, 1};  ///< a torus's slice (System::torus_slice())
};
Wiring wiring(const hw::System& sys) noexcept;

/// The placement of a group of `size` chips whose members are `stride` ranks apart, ranks
/// numbered as plans order them (tensor parallel innermost, then context, expert, data,
/// pipeline parallel): members fill a scale-up domain (a torus's axes, x first) before
/// the next.
Placement place(const Wiring& wr, double size, double stride = 1) noexcept;

/// A collective priced on the machine as wired (docs/collectives.md#topology).
struct Priced {
  ops::Cost cost;        ///< on the link that bounds it (the other link's traffic overlaps)
  Algo algo = Algo::ring;  ///< the algorithm priced (automatic resolved)
  Proto proto = Proto::simple;  ///< the protocol priced (the library's fastest for the size)
  int link = -1;         ///< the bounding link (index in ChipSpec::links), -1 for none
  double up_bytes = 0;   ///< per chip per direction over the scale-up links (protocol flags included)
  double net_bytes = 0;  ///< per chip per direction over the network (protocol flags included)
  double lanes = 0;      ///< of the chip's scale-up links, how many the algorithm keeps busy
  double latency_s = 0;  ///< fixed costs: the protocol's per call, the message steps' on both links, seconds
  /// NVLS's chunk pipeline (docs/collectives.md#nvls-chunks): the chunk size NCCL cuts each
  /// channel's share into, and the time its chunks wait on their flags (grows with the bytes).
  double chunk_bytes = 0;
  double chunk_wait_s = 0;
  double time_s = 0;     ///< at the links' achievable rates: what `automatic` compares
};

/// Whether the chip's collective library prices `algo` in its protocols (its ring, tree and
/// NVLS); direct exchanges and chips without a library take one step per link at its latency.
bool library_prices(const hw::TopologySpec& t, Algo algo) noexcept;

/// One algorithm in one protocol (for NVLS: in one of its chunk sizes, kNvlsChunks): what
/// `price` weighs (automatic never appears here).
struct Option {
  Algo algo = Algo::ring;
  Proto proto = Proto::simple;
  std::uint8_t chunk = 0;  ///< NVLS: index into kNvlsChunks
};
/// NVLS's chunk sizes (NCCL src/enqueue.cc: NCCL_NVLS_CHUNKSIZE 128 KiB, halved to 64, 32
/// and 16 KiB for smaller buffers).
inline constexpr std::array<double, 4> kNvlsChunks{16384, 32768, 65536, 131072};
inline constexpr int kMaxOptions = 10;  ///< ring and tree in three protocols, NVLS in four chunk sizes

/// The options `price` weighs for this collective (`algo`: the one asked for, or automatic),
/// in the order it weighs them (the first of equal times wins); writes at most kMaxOptions.
/// For each, the time `price` compares (Priced::time_s) is affine in the bytes, and so is
/// its Cost: a collective is a line per option, the option with the smallest time chosen.
int options(const Wiring& wr, const Placement& p, Collective kind, Algo algo, Option* out) noexcept;

/// The collective priced in one option (one of options()).
Priced price(const Wiring& wr, const Placement& p, Collective kind, double bytes, DType dtype, Option o) noexcept;

/// The collective of `kind` on `bytes` (the nccl-tests convention above) over a group placed
/// at `p` on `wr`. Never allocates, never throws; a single chip or no bytes costs nothing.
Priced price(const Wiring& wr, const Placement& p, Collective kind, double bytes, DType dtype, Algo algo) noexcept;

}  // namespace ridgeline::comm
