// The best published MFU per class of training run (docs/training.md#published-mfu).
#include "ridgeline/analysis/published_mfu.hpp"

#include <array>

namespace ridgeline::analysis {

namespace {

// ridgeline's MFU at the published step time: its model FLOPs of the step (3 x the forward's
// matrix FLOPs, causal pairs) over step x GPUs x the dense peak of the GEMM dtype; the runs'
// own counts (all s^2 attention pairs) are higher (docs/training.md#published-mfu). Rows of
// scripts/training_validation.py.
constexpr const char* kNemo = "NVIDIA/dgxc-benchmarking llama3.1/README_{8b,70b,405b}.md (NeMo 24.09)";
constexpr const char* kKorthikanti = "Korthikanti et al. 2022 (arXiv 2205.05198), Table 5";
constexpr std::array<PublishedMfu, 10> kTable{{
    {"h100-sxm", false, 1e9, 20e9, "dense 1-20B", 0.528, "Llama 3.1 8B, 8 H100, CP 2, 12.91 s a step", kNemo},
    {"h100-sxm", false, 20e9, 150e9, "dense 20-150B", 0.505, "Llama 3.1 70B, 64 H100, TP 4 PP 4 CP 2 VP 5, 14.72 s a step", kNemo},
    {"h100-sxm", false, 150e9, 2e12, "dense 150B-2T", 0.532, "Llama 3.1 405B, 576 H100, TP 8 PP 9 CP 2 VP 7, 17.20 s a step", kNemo},
    {"h100-sxm", true, 1e9, 20e9, "dense 1-20B", 0.353, "Llama 3.1 8B fp8, 8 H100, CP 2, 9.67 s a step", kNemo},
    {"h100-sxm", true, 20e9, 150e9, "dense 20-150B", 0.338, "Llama 3.1 70B fp8, 64 H100, TP 4 PP 4 CP 2 VP 5, 11.01 s a step", kNemo},
    {"h100-sxm", true, 150e9, 2e12, "dense 150B-2T", 0.407, "Llama 3.1 405B fp8, 576 H100, TP 8 PP 9 CP 2 VP 7, 11.24 s a step", kNemo},
    {"a100-80gb", false, 20e9, 150e9, "dense 20-150B", 0.417, "GPT 22B, 8 A100, TP 8, SP + selective recomputation, 1.10 s a step", kKorthikanti},
    {"a100-80gb", false, 150e9, 2e12, "dense 150B-2T", 0.563, "GPT 1T, 512 A100, TP 8 PP 64, SP + selective recomputation, 71.49 s a step", kKorthikanti},
    {"a100-40gb", false, 20e9, 150e9, "dense 20-150B", 0.417, "GPT 22B, 8 A100 80GB (the same SXM4 chip), TP 8, 1.10 s a step", kKorthikanti},
    {"a100-40gb", false, 150e9, 2e12, "dense 150B-2T", 0.563, "GPT 1T, 512 A100 80GB (the same SXM4 chip), TP 8 PP 64, 71.49 s a step", kKorthikanti},
}};

}  // namespace

const PublishedMfu* published_mfu(double params, bool moe, std::string_view chip, DType dtype) noexcept {
  if (moe) return nullptr;
  const bool fp8 = is_fp8(dtype);
  if (!fp8 && dtype != DType::bf16 && dtype != DType::fp16) return nullptr;
  for (const PublishedMfu& e : kTable) {
    if (chip == e.chip && fp8 == e.fp8 && params >= e.min_params && params < e.max_params) return &e;
  }
  return nullptr;
}

}  // namespace ridgeline::analysis
