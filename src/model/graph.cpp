#include "ridgeline/model/graph.hpp"

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

int Graph::begin_group(const char* group_name, double rep) noexcept {
  if (group_count >= kMaxGroups) {
    overflow = true;
    return group_count - 1;
  }
  groups[group_count] = {group_name, rep};
  return group_count++;
}

GraphOp& Graph::add(const char* op_name, OpClass cls, Block block, const ops::Cost& cost) noexcept {
  static thread_local GraphOp scratch;
  if (op_count >= kMaxOps || group_count == 0) {
    overflow = true;
    return scratch;
  }
  GraphOp& op = ops[op_count++];
  op.name = op_name;
  op.cls = cls;
  op.block = block;
  op.group = group_count - 1;
  op.cost = cost;
  op.params = 0;
  op.active_params = 0;
  op.weight_bytes = 0;
  op.attention = -1;
  op.gemm_m = op.gemm_k = op.gemm_n = 0;
  return op;
}

ops::Cost Graph::total() const noexcept {
  ops::Cost t;
  for (int i = 0; i < op_count; ++i) t += ops[i].cost * repeat(i);
  return t;
}

}  // namespace ridgeline::model
