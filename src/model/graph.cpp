#include "ridgeline/model/graph.hpp"

#include "ridgeline/ops/estimate.hpp"

namespace ridgeline::model {

std::string_view name(OpClass c) noexcept {
  switch (c) {
    case OpClass::gemm: return "gemm";
    case OpClass::attention: return "attention";
    case OpClass::norm: return "norm";
    case OpClass::elementwise: return "elementwise";
    case OpClass::embedding: return "embedding";
    case OpClass::comm: return "comm";
  }
  return "gemm";
}

std::string_view name(Block b) noexcept {
  switch (b) {
    case Block::embedding: return "embedding";
    case Block::attention: return "attention";
    case Block::mlp: return "mlp";
    case Block::moe: return "moe";
    case Block::head: return "head";
  }
  return "attention";
}

double Graph::kernels() const noexcept {
  double n = 0;
  for (int i = 0; i < op_count; ++i) n += repeat(i) * ops::TimeParts::kernels_of(ops[i].cost.launches);
  return n;
}

int Graph::begin_group(const char* group_name, double rep) noexcept {
  if (group_count >= kMaxGroups) {
    overflow = true;
    return group_count - 1;
  }
  groups[group_count] = {group_name, rep};
  return group_count++;
}

}  // namespace ridgeline::model
