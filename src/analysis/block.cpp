#include "ridgeline/analysis/block.hpp"

#include <fmt/format.h>

#include "ridgeline/comm/collective.hpp"
#include "ridgeline/core/error.hpp"
#include "ridgeline/ops/attention.hpp"
#include "ridgeline/ops/matmul.hpp"
#include "ridgeline/ops/pointwise.hpp"

namespace ridgeline::analysis {

namespace {

void add(BlockResult& r, const char* name, BlockPart part, const ops::Cost& c, const hw::ChipSpec& chip) {
  ops::Estimate e = ops::estimate(c, chip);
  BlockOp& op = r.ops[r.count++];
  op.name = name;
  op.part = part;
  op.t_s = e.t_lower_s;
  op.bound = e.bound;
}

}  // namespace

BlockResult block(const BlockConfig& cfg, const hw::System& sys) {
  auto check = [](std::int64_t v, const char* flag) {
    if (v < 1 || v > (std::int64_t{1} << 24)) throw InputError(fmt::format("{}: {} is out of range: expected 1 to 16777216", flag, v));
  };
  check(cfg.seq, "--seq");
  check(cfg.hidden, "--hidden");
  check(cfg.heads, "--heads");
  check(cfg.kv_heads, "--kv-heads");
  check(cfg.cp, "--cp");
  if (cfg.hidden % cfg.heads != 0) throw InputError(fmt::format("--heads: {} does not divide --hidden {}", cfg.heads, cfg.hidden));
  if (cfg.heads % cfg.kv_heads != 0) throw InputError(fmt::format("--kv-heads: {} does not divide --heads {}", cfg.kv_heads, cfg.heads));
  if (cfg.cp > 1 && sys.chip.links.empty()) throw InputError(fmt::format("--cp: {} has no link: pass --link-bw", sys.chip.name));
  if (!cfg.seed_shapes && cfg.heads % cfg.cp != 0) {
    throw InputError(fmt::format("--cp: {} does not divide --heads {} (all-to-all context parallelism splits the heads)", cfg.cp, cfg.heads));
  }
  if (sys.chip.peak(hw::Unit::matrix, cfg.dtype) <= 0) {
    throw InputError(fmt::format("--dtype: {} has no {} matrix rate", sys.chip.name, name(cfg.dtype)));
  }
  if (sys.chip.peak(hw::Unit::vector, DType::fp32) <= 0) {
    throw InputError(fmt::format("--hw: {} has no fp32 vector rate for the softmax and the memory-bound ops", sys.chip.name));
  }

  const hw::ChipSpec& chip = sys.chip;
  // The chip's launch overhead is left out: the seed compares kernels' own times.
  hw::ChipSpec c = chip;
  c.launch_overhead_s = 0;
  const double s = static_cast<double>(cfg.seq), h = static_cast<double>(cfg.hidden);
  const double I = cfg.intermediate > 0 ? cfg.intermediate : 8.0 / 3.0 * h;
  const double hd = h / static_cast<double>(cfg.heads);
  const double kvw = static_cast<double>(cfg.kv_heads) * hd;
  const DType t = cfg.dtype;
  auto mm = [&](double k, double n) {
    ops::MatmulShape m;
    m.m = s;
    m.k = k;
    m.n = n;
    m.a = m.b = m.out = m.compute = t;
    return ops::matmul_cost(m);
  };
  BlockResult r;
  r.gemm_unit_s = ops::estimate(mm(h, h), c).t_lower_s;

  add(r, "q_proj", BlockPart::gemm, mm(h, h), c);
  add(r, "k_proj", BlockPart::gemm, mm(h, cfg.seed_shapes ? h : kvw), c);
  add(r, "v_proj", BlockPart::gemm, mm(h, cfg.seed_shapes ? h : kvw), c);
  add(r, "o_proj", BlockPart::gemm, mm(h, h), c);
  add(r, "gate_proj", BlockPart::gemm, mm(h, I), c);
  add(r, "up_proj", BlockPart::gemm, mm(h, I), c);
  add(r, "down_proj", BlockPart::gemm, mm(I, h), c);

  // All-to-all context parallelism (Ulysses): each chip holds s tokens; after the exchange it
  // attends over all s·cp of them with heads/cp heads (and the KV heads they read): cp times
  // the attention FLOPs of its own s tokens. The seed's 2s/h leaves cp out (--shapes seed).
  const double cp = cfg.seed_shapes ? 1 : static_cast<double>(cfg.cp);
  ops::AttentionShape a;
  a.batch = 1;
  a.q_len = a.kv_len = s * cp;
  a.heads = static_cast<double>(cfg.heads) / cp;
  a.kv_heads = cfg.seed_shapes ? a.heads : std::max(1.0, static_cast<double>(cfg.kv_heads) / cp);
  a.head_dim = hd;
  a.causal = cfg.seed_shapes ? false : cfg.causal;
  a.dtype = a.kv_dtype = a.compute = t;
  add(r, "flash_attention", BlockPart::attention, ops::attention_cost(a), c);

  const ops::RowsShape sh{s, h, t, DType::fp32};
  const ops::RowsShape si{s, cfg.seed_shapes ? h : I, t, DType::fp32};
  if (cfg.seed_shapes) {
    // Every memory-bound op reads and writes (s,h) tensors: 4sh bytes, 6sh for two inputs.
    add(r, "rmsnorm_attn", BlockPart::memory, ops::elementwise_cost(sh, 1, 1, 0), c);
    add(r, "rmsnorm_mlp", BlockPart::memory, ops::elementwise_cost(sh, 1, 1, 0), c);
    add(r, "rope_q", BlockPart::memory, ops::elementwise_cost(sh, 1, 1, 0), c);
    add(r, "rope_k", BlockPart::memory, ops::elementwise_cost(sh, 1, 1, 0), c);
  } else {
    add(r, "rmsnorm_attn", BlockPart::memory, ops::rmsnorm_cost(sh), c);
    add(r, "rmsnorm_mlp", BlockPart::memory, ops::rmsnorm_cost(sh), c);
    add(r, "rope_q", BlockPart::memory, ops::rope_cost(sh, hd), c);
    add(r, "rope_k", BlockPart::memory, ops::rope_cost({s, kvw, t, DType::fp32}, hd), c);
  }
  // SiLU (unfused from the multiply, as the seed counts them), on the MLP width.
  add(r, "silu", BlockPart::memory, ops::elementwise_cost(si, 1, 1, cfg.seed_shapes ? 0 : 4), c);
  add(r, "mul", BlockPart::memory, ops::elementwise_cost(si, 2, 1, cfg.seed_shapes ? 0 : 1), c);
  add(r, "add_attn", BlockPart::memory, ops::elementwise_cost(sh, 2, 1, cfg.seed_shapes ? 0 : 1), c);
  add(r, "add_mlp", BlockPart::memory, ops::elementwise_cost(sh, 2, 1, cfg.seed_shapes ? 0 : 1), c);

  // Four all-to-alls of the (s,h) activation for context parallelism (Ulysses).
  const double act = s * h * bytes(t);
  const int link = std::max(0, sys.comm_link(static_cast<int>(cfg.cp)));
  static constexpr const char* kA2A[4] = {"all2all_qkv_1", "all2all_qkv_2", "all2all_qkv_3", "all2all_out"};
  for (const char* n : kA2A) {
    ops::Cost comm;
    if (cfg.seed_shapes) {
      // The seed's 2sh·(cp-1)/cp with (cp-1)/cp dropped, and no latency.
      if (!chip.links.empty()) comm.link_bytes[link] = act;
    } else {
      const comm::Wiring w = comm::wiring(sys);
      comm = comm::price(w, comm::place(w, static_cast<double>(cfg.cp)), comm::Collective::all_to_all, act, t,
                         comm::Algo::direct).cost;
    }
    add(r, n, BlockPart::comm, comm, c);
  }
  if (cfg.seed_shapes) {
    for (int i = r.count - 4; i < r.count; ++i) {
      const auto& l = chip.links[link];
      r.ops[i].t_s = act / l.chip_bandwidth_Bps();
      r.ops[i].bound = ops::Bound::comm;
    }
  }
  for (int i = 0; i < r.count; ++i) {
    r.ops[i].units = r.ops[i].t_s / r.gemm_unit_s;
    r.units_by_part[static_cast<int>(r.ops[i].part)] += r.ops[i].units;
    r.total_units += r.ops[i].units;
  }
  return r;
}

}  // namespace ridgeline::analysis
