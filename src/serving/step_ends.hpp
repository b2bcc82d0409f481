#pragma once
// The simulator's event queue of replicas' step ends (private to the simulator).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "replica.hpp"

namespace ridgeline::serving::detail {

inline constexpr Ps kNever = INT64_MAX;

// Each replica's step end (kNever: none in flight), the earliest first: a tournament tree
// over the replicas whose nodes hold the earliest (end, replica) of their subtree, ties to the
// lower index (the order a heap of (end, replica) pops them in). A replica's end changes in
// log2(replicas) steps up the tree, each the least of the new node and its sibling: the
// siblings' loads do not wait on each other and nothing branches, so an update costs a chain
// of compares, not of loads. A replica has one step in flight at most.
class StepEnds {
 public:
  explicit StepEnds(std::size_t n) {
    while (size_ < n) size_ *= 2;
    node_.resize(2 * size_);
    for (std::size_t i = 0; i < size_; ++i) node_[size_ + i] = {kNever, static_cast<std::int32_t>(i)};
    for (std::size_t i = size_ - 1; i >= 1; --i) node_[i] = least(node_[2 * i], node_[2 * i + 1]);
  }
  Ps first_end() const { return node_[1].end; }
  std::int32_t first() const { return node_[1].r; }
  Ps end(std::int32_t r) const { return node_[size_ + static_cast<std::size_t>(r)].end; }
  /// The earliest end of the others than r: the least of the subtrees beside r's path.
  Ps first_end_besides(std::int32_t r) const {
    Ps m = kNever;
    for (std::size_t i = size_ + static_cast<std::size_t>(r); i > 1; i /= 2) m = std::min(m, node_[i ^ 1].end);
    return m;
  }
  void set(std::int32_t r, Ps end) {
    Node v{end, r};
    std::size_t i = size_ + static_cast<std::size_t>(r);
    node_[i] = v;
    for (; i > 1; i /= 2) {
      v = least(v, node_[i ^ 1]);
      node_[i / 2] = v;
    }
  }

 private:
  struct Node {
    Ps end;
    std::int32_t r;
  };
  // b when it ends first, or as early with a lower index; else a. Blended by a mask, without
  // branches (which would mispredict at every level).
  static Node least(Node a, Node b) noexcept {
    const bool b_first = (b.end < a.end) | ((b.end == a.end) & (b.r < a.r));
    const std::int64_t mask = -static_cast<std::int64_t>(b_first);
    return {a.end ^ ((a.end ^ b.end) & mask), a.r ^ ((a.r ^ b.r) & static_cast<std::int32_t>(mask))};
  }
  std::size_t size_ = 1;
  std::vector<Node> node_;  // 1: the root; size_ + r: replica r
};

}  // namespace ridgeline::serving::detail
