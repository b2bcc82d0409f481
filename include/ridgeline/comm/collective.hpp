#pragma once
/// Collectives over P chips: bytes each chip puts on the wire, latency steps, the memory
/// traffic and reduction FLOPs on each chip (docs/collectives.md).
#include <optional>
#include <string_view>

#include "ridgeline/core/dtype.hpp"
#include "ridgeline/ops/cost.hpp"

namespace ridgeline::comm {

enum class Collective : std::uint8_t { all_reduce, all_gather, reduce_scatter, all_to_all, send_recv };
enum class Algo : std::uint8_t { ring, tree, direct };

std::string_view name(Collective c) noexcept;
std::string_view name(Algo a) noexcept;
std::optional<Algo> parse_algo(std::string_view s) noexcept;

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

/// The Cost on one chip; zero for a single chip.
ops::Cost collective_cost(const CollectiveShape& s) noexcept;

}  // namespace ridgeline::comm
