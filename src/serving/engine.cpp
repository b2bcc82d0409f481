// Engine presets: each default with the engine code or document it comes from
// (docs/serving.md#engines has the table).
#include "ridgeline/serving/engine.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <iterator>

#include <fmt/format.h>

#include "ridgeline/core/error.hpp"

namespace ridgeline::serving {

namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024;
constexpr double kMiB = 1024.0 * 1024;
// A graph batch no step reaches: --cuda-graphs on a preset that captures none captures any decode batch.
constexpr std::int64_t kAnyBatch = INT64_MAX / 4;
// vLLM's custom all-reduce takes messages under 8 MiB (CustomAllreduce max_size=8192 * 1024,
// should_custom_ar: inp_size < max_size, on two GPUs or fully connected ones), NCCL the rest:
// at every tensor-parallel size (EngineConfig::custom_allreduce_max_bytes).
constexpr std::array<double, 3> kCustomAllreduceMax{8 * kMiB, 8 * kMiB, 8 * kMiB};

// Host time per step of a Python engine loop, measured on vLLM V1: schedule() ~0.2 ms,
// _update_states ~0.18 ms and _prepare_inputs ~0.05 ms (vllm-project/vllm PR #42131, B200),
// and update_from_output 0.142 ms at 128 running requests, 0.287 ms at 256 (PR #46112): about
// 1.1 us per request.
constexpr double kPythonStepS = 0.4e-3;
constexpr double kPythonPerRequestS = 1.1e-6;

// The front end per request: vLLM's OpenAI server against its offline LLM class on the same
// engine, batch 32 of 128-token prompts, averaged TTFT 231 -> 235 ms, "+4 ms ... from HTTP server
// + ZMQ latency" (tenstorrent/tt-inference-server issue #190, 2025-05-08: the server runs on the
// host CPU, whatever the accelerator). No such A/B is published for SGLang or TensorRT-LLM's
// servers; theirs are Python HTTP servers handing requests to the scheduler's process too, and
// are taken to cost the same.
constexpr double kFrontEndS = 4e-3;

constexpr const char* kPythonHostSource = "vLLM V1's loop: vllm-project/vllm PRs #42131 and #46112";
constexpr const char* kFrontEndSource = "vLLM's server against its LLM class: tenstorrent/tt-inference-server #190";
// MXFP4 experts as FlashInfer's trtllm-gen MoE takes them on Blackwell (a chip that multiplies
// fp4): vLLM's and SGLang's Mxfp4MoEMethod.create_weights round the hidden width and each chip's
// intermediate share up to 256 for it (EngineConfig::mxfp4_expert_align); 0 elsewhere.
int trtllm_gen_mxfp4_align(const hw::ChipSpec& chip) noexcept { return chip.peak(hw::Unit::matrix, DType::fp4) > 0 ? 256 : 0; }

// SGLang's own loop before its overlap scheduler: the scheduling time of an iteration (all of it
// but the model's forward: the last batch's results processed, the next batch chosen and
// prepared), SGLang 0.2.13 (commit 3694f8f, the line 0.3.0 followed a month later) on A100s,
// 300 requests sent at once, prefill chunks of 512, no prefix caching: Llama 1.3B 3.13 / 4.29 /
// 3.55 ms (1024:64, 1024:1024, ShareGPT), Llama-3 8B 1.91 / 2.70 / 2.16 / 1.87 ms (the same and
// LooGLE), Llama-3 70B 5.30 / 2.30 / 4.20 ms (WukLab, "Can Scheduling Overhead Dominate LLM
// Inference Performance?", mlsys.wuklab.io, 2024-09-10, figures 10-12; Nsight Systems and timers:
// the bars' heights in the figures' matplotlib SVGs, WukLab/wuklab_sysml
// static/images/scheduling_overhead/SGLang_A100.svg_{0,1,2}.svg). A step costs their median,
// 2.915 ms, whatever its batch: the study does not state its batches, so no part is split out per
// request.
constexpr double kSglang02StepS = 2.915e-3;
constexpr const char* kSglang02HostSource =
    "SGLang 0.2.13's loop on A100s: 2.915 ms a step, the median of ten runs (WukLab, mlsys.wuklab.io, 2024-09-10, figures 10-12)";

// Host time per kernel an engine's Python model code launches outside a graph (EngineConfig::
// eager_host_s; docs/serving.md#eager-host). SGLang on an H100-class GPU (7.35 ms a step for
// Llama-3-8B's 16 GB: 2.2 TB/s, past an A100's), Llama-3-8B at batch 1: 8.23 ms a decode step
// without CUDA graphs, 7.35 ms with them (FlashInfer backend; sgl-project/sglang PR #1401,
// 2024-09). The eager step is the host's launches of its kernels (325 in ridgeline's graph: 10
// a layer and 5 more) or the device's time, whichever is longer, so a kernel costs the host at
// most 8.23 ms / 325 = 25.3 us: 25 us. Heavier layers cost their host more a kernel: DeepSeek-V3's
// eager prefill forward of one new token took 82.6 ms against 23.1 ms as a graph in SGLang (PR
// #12160, 2025-10, GPU not stated), 1468 kernels here, 56.3 us each; vLLM V0's DeepSeek-V3 (AWQ,
// 8 A100s, batch 1) 10.0 tokens/s eager against 25.3 with graphs (PR #12222, 2025-01: 100 and
// 39.5 ms a token, 1823 kernels as counted then, 55 us, inflated by a memory allocation in each MoE alignment call
// the PR removed). TensorRT-LLM's PyTorch path launched a diffusion transformer's small kernels
// ~35 us apart (LTX-2, NVIDIA/TensorRT-LLM PR #12653): no DeepSeek figure. 25 us is the
// figure none of them contradicts; an engine whose own time of an MLA model's forward is measured
// takes it for such a model (SGLang 0.4+: kSglangMlaEagerHostS, engine_preset with the model), and
// vLLM's MLA attention op has its own CPU time (EngineConfig::mla_op_host_s, below). Elsewhere
// MLA and MoE layers' host time is priced short.
constexpr double kEagerHostS = 25e-6;

// Host time per kernel of a model torch.compile made, run without graphs (vLLM V1 past its largest
// graph): Inductor's generated call() launching each kernel through CachingAutotuner.run, 6.8 us
// with no argument and 9.1 us with 19 on a GB200's Grace host (meta-pytorch/tritonbench PR #1017,
// 2026-04-14: nop_inductor_per_kernel, the per-kernel part of a compiled graph's call path;
// cuLaunchKernel alone 3.0-3.3 us). A GEMM, norm or activation of a layer takes a dozen or more
// pointers and sizes: 9.1 us.
constexpr double kCompiledHostS = 9.1e-6;

// vLLM's MLA attention op's CPU time (EngineConfig::mla_op_host_s and mla_op_call_host_s): a
// line through PR #17668's two measured calls, 216 us over 22 ops that launch kernels and 149 us
// over 7 (the derivation at `vllm` below).
constexpr double kMlaOpKernelHostS = (216e-6 - 149e-6) / (22 - 7);
constexpr double kMlaOpCallHostS = 149e-6 - 7 * kMlaOpKernelHostS;

// The Python engines' host time per kernel they launch outside a graph, with its source.
void python_launches(EngineConfig& e) {
  e.eager_host_s = kEagerHostS;
  e.eager_host_source = "SGLang's Llama-3-8B eager step: sgl-project/sglang PR #1401";
}

bool is_a100(const hw::ChipSpec& chip) {
  return chip.name.find("a100") != std::string::npos || chip.display_name.find("A100") != std::string::npos;
}

// vLLM V1, by the release whose defaults differ:
// - `version` 10, 0.9-0.10: decode steps replayed as piecewise graphs, each layer's attention
//   run eagerly between the pieces (cudagraph_mode PIECEWISE, the default until v0.11.0 made it
//   FULL_AND_PIECEWISE: release notes of v0.11.0, PR #25444); block-fp8 GEMMs priced by vLLM's
//   Triton kernel's curve (see below); async scheduling off;
// - 8, 0.8: the same, and MLA's attention op holds more than it does later: MLACommonImpl.forward
//   (vllm/v1/attention/backends/mla/common.py) runs q_proj (q_b_proj), RoPE,
//   concat_and_cache_mla, the absorbed up-projections (torch.bmm), the attention kernel, o_proj
//   and o_proj's all-reduce (a RowParallelLinear), all eagerly between the pieces, until PR
//   #17484 ("MLA move o_proj q_proj into cuda-graph region", opened 2025-04-30, after 0.8.4) put
//   q_proj and o_proj in the graphs and PR #17668 (2025-05-05) RoPE; the cache write, the
//   absorptions and attention stay in the op in every release;
// - 13, 0.11-0.13: decode steps as one graph (FULL_AND_PIECEWISE); block-fp8 GEMMs by DeepGEMM
//   (VLLM_USE_DEEP_GEMM on by default, PR #24462, September 2025: v0.11); async scheduling off;
// - 0, 0.14 and later: async scheduling on (release notes of v0.14.0: "Async scheduling is now
//   enabled by default", PR #27614).
EngineConfig vllm(const hw::ChipSpec& chip, int version) {
  EngineConfig e;
  e.kind = EngineKind::vllm;
  e.version = version;
  e.custom_allreduce_max_bytes = kCustomAllreduceMax;
  e.releases = version == 8 ? "0.8" : version == 10 ? "0.9-0.10" : version == 13 ? "0.11-0.13" : "0.14+";
  const bool piecewise_only = version == 8 || version == 10;  // cudagraph_mode PIECEWISE
  // MLA's attention op (MLACommonImpl.forward) and its CPU time per call, vLLM's torch profile
  // of a DeepSeek-V2-Lite step in PR #17668 (2025-05-05, main after PR #17484 had moved q_proj
  // and o_proj into the graphs): "CPU time for unified_attention is 216us" with RoPE inside,
  // 149 us once the PR moved RoPE out. The op's decode path then (main at afcb3f8, PR #17484's
  // merge, read in the tensorflowt/vllm-0.8.5 mirror) ran 22 torch ops that launch kernels: the
  // query's absorption (torch.bmm), RoPE's 13 (DeepseekScalingRotaryEmbedding.forward:
  // ops::rope_torch_cost) and its two write-backs, the cache write, FlashMLA's query concatenation
  // and its kernel, the output's absorption and reshape, the output's copy into the step's
  // tensor; 7 once RoPE left. One line through both: 67 us / 15 = 4.47 us an op and 149 - 7 x
  // 4.47 = 117.7 us a call (the custom op's dispatch, the forward context, the metadata's slices
  // and views). 0.8.4's op holds one copy more (the query's RoPE part made contiguous) and q_proj,
  // o_proj and its all-reduce, vLLM linear layers launched as any other layer's: at the engines'
  // 25 us. The 0.9-0.10 preset takes the op after PR #17668; 0.9.0 may predate it (RoPE still inside).
  e.mla_op = version == 8 ? model::ForwardConfig::MlaOp::projections : model::ForwardConfig::MlaOp::absorbed;
  e.mla_op_host_s = kMlaOpKernelHostS;
  e.mla_op_call_host_s = kMlaOpCallHostS;
  e.mla_op_host_source = "vLLM's MLA attention op, 216 us a call over 22 kernel-launching ops and 149 us over 7: vllm-project/vllm PR #17668";
  // MLA's prefill attention: vLLM to 0.8.4 padded V from 128 to 192 columns for FlashAttention
  // and sliced the output back (vllm/v1/attention/backends/mla/common.py at v0.8.4, commit
  // dc1b4a6: _forward_prefill and _compute_prefill_context); PR #13111 (2025-04-17, after 0.8.4)
  // passes V as it is to FA3 on Hopper. The 0.8 preset follows 0.8.4.
  e.mla_pad_v = version == 8;
  // gpt-oss's MXFP4 experts on Blackwell (SM100): FlashInfer's trtllm-gen MoE (vLLM's default
  // there, get_mxfp4_backend: SM100_FI_MXFP4_BF16), whose weights Mxfp4MoEMethod.create_weights
  // allocates with each chip's intermediate share and the hidden width rounded up to 256
  // (round_up(intermediate_size_per_partition, 256), round_up(hidden_size, 256): gpt-oss-120b's
  // 2880 to 3072). gpt-oss came with 0.10.1; the 0.9-0.10 preset takes it so. Hopper's Triton
  // kernels pad the intermediate share to 64 (2880 is a multiple of it at TP 1): not priced.
  e.mxfp4_expert_align = version != 8 ? trtllm_gen_mxfp4_align(chip) : 0;
  e.policy = StepPolicy::running_first;
  e.admission = Admission::step_blocks;
  e.preemption = Preemption::recompute;
  e.memory_rule = MemoryRule::profiled;
  const double mem = chip.main_capacity_bytes();
  // vllm/engine/arg_utils.py (_set_default_args), `vllm serve`: GPUs of 70 GiB or more other
  // than the A100 get 8192 tokens and 1024 sequences, others 2048 and 256; TPUs 1024 (v6e),
  // 512 (v5e), 256 (v5p) tokens per chip.
  const bool big = chip.kind == "gpu" && mem >= 70 * kGiB && !is_a100(chip);
  e.max_batched_tokens = big ? 8192 : 2048;
  e.max_num_seqs = big ? 1024 : 256;
  if (chip.kind == "tpu") {
    e.max_batched_tokens = chip.name.find("v6e") != std::string::npos   ? 1024
                           : chip.name.find("v5e") != std::string::npos ? 512
                                                                        : 256;
    e.max_num_seqs = std::min<std::int64_t>(256, e.max_batched_tokens);
  }
  e.chunked_prefill = true;  // always on in V1 for generative models
  e.kv_block = 16;           // CacheConfig.DEFAULT_BLOCK_SIZE
  e.kv_memory_fraction = 0.9;  // gpu_memory_utilization (0.92 from v0.21, with CUDA graphs profiled)
  e.reserved_bytes = 0;      // the CUDA context and graph pool live in the 1 - f left over
  e.prefix_caching = true;   // automatic prefix caching, on by default in V1
  // Hybrid KV cache manager (vllm/v1/core/kv_cache_coordinator.py, single_type_kv_cache_manager.py
  // SlidingWindowManager): sliding-window layers free the blocks that left their window. On
  // from v0.10.0; the 0.8 and 0.9-0.10 presets follow 0.10 here.
  e.free_window_blocks = true;
  e.fused_attention = true;  // FlashAttention backend: one varlen kernel for the whole batch
  // FULL_AND_PIECEWISE: full graphs for decode-only steps (0.11+); 0.8-0.10: PIECEWISE only.
  e.decode_graphs = piecewise_only ? GraphMode::piecewise : GraphMode::graph;
  e.mixed_graphs = GraphMode::piecewise;    // piecewise graphs around eager attention otherwise
  // Graphs of 1, 2, 4, 8, 16, ... 512 tokens (vllm/config.py, V1: [1, 2, 4] + range(8, 513, 8);
  // from 0.10 min(2 x max_num_seqs, 512) by default, later min(2 x max_num_seqs x (1 + k), 512):
  // 512 at the presets' limits, docs/serving.md#step-model), a step padded to the next; a step of more tokens,
  // a long prompt's chunk with or without decodes, runs the compiled model without graphs
  // (GPUModelRunner.execute_model: "Eager mode." past cudagraph_batch_sizes[-1]).
  e.graph_max_batch = kVllmLargestGraph;
  e.graph_max_tokens = kVllmLargestGraph;
  // 0.10 first sized it from max_num_seqs (PR #20628); the 0.8 and 0.9-0.10 presets keep 0.8's
  // 512. CUDA graphs on GPUs only (a CPU backend captures none).
  e.capture_follows_seqs = !piecewise_only && chip.kind == "gpu";
  e.compiled_host_s = kCompiledHostS;  // past the largest graph, the compiled model's kernels
  e.compiled_host_source = "Inductor's launch of a compiled kernel, CachingAutotuner.run: meta-pytorch/tritonbench PR #1017";
  if (chip.kind == "tpu") {
    // XLA programs compiled per padded shape: no CUDA graph to fall out of, no kernel launched
    // one by one from Python.
    e.graph_max_tokens = 0;
    e.capture_follows_seqs = false;
    e.compiled_host_s = 0;
    e.compiled_host_source.clear();
    e.mla_op = model::ForwardConfig::MlaOp::attention;
    e.mla_op_host_s = e.mla_op_call_host_s = 0;
    e.mla_op_host_source.clear();
    e.mla_pad_v = false;
  }
  e.step_overhead_s = kPythonStepS;
  e.per_request_overhead_s = kPythonPerRequestS;
  e.front_end_s = kFrontEndS;
  e.host_source = kPythonHostSource;
  python_launches(e);
  e.front_end_source = kFrontEndSource;
  e.overlap_scheduling = version == 0;  // async scheduling: on by default from v0.14
  // Block-fp8 linear layers until DeepGEMM became the default (VLLM_USE_DEEP_GEMM=1, PR #24462,
  // September 2025: v0.11): on Hopper, apply_w8a8_block_fp8_linear ran vLLM's own CUTLASS sm90
  // blockwise kernel (ops.cutlass_scaled_mm, from PR #11868) wherever the weight's N and K divide
  // by 128, and Triton's w8a8_block_fp8_matmul only elsewhere (DeepSeek's kv_a_proj_with_mqa, 576
  // rows, or once fused with q_a_proj the 2112 of both: PR #23280's shapes) until PR #23280 (August 2025) put upstream CUTLASS in its place. No timing of that
  // CUTLASS kernel on a named GPU is published, so both are priced by the Triton kernel's curve
  // (gemm_scaled). The tables that exist (sgl-project/sglang PRs #5207 and #5820, April 2025, the
  // installed vLLM's cutlass_scaled_mm beside SGLang's Triton kernel, GPU not named) put the
  // CUTLASS kernel at 0.66-1.06 of Triton's time at DeepSeek's shapes except one (N 24576, K 7168,
  // 64 rows: 1.30), and 0.74 from 1024 rows on: the dense layers of these presets are likely
  // priced slow, where ridgeline's DeepSeek errors are fast (docs/serving.md#block-scaled-fp8).
  // DeepGEMM on Hopper and datacenter Blackwell only (is_deep_gemm_supported, hw::runs_deepgemm):
  // elsewhere apply_w8a8_block_fp8_linear's own choice, on ROCm AITER's CK block-scale GEMM
  // under VLLM_ROCM_USE_AITER (and _LINEAR; fp8 fnuz, gfx94x), Triton's kernel without it or on
  // an older CUDA GPU (gemm_scaled either way: the chip's figures say which kernel they measured).
  e.scaled_gemm = piecewise_only || !hw::runs_deepgemm(chip) ? model::ForwardConfig::ScaledGemm::triton
                                                             : model::ForwardConfig::ScaledGemm::deepgemm;
  // (vLLM 0.11-0.12 asked for compute capability 10.0 itself, 0.13 the 10.x family: the presets
  // take the family.) AITER's block-fp8 path came with 0.9 (rocm_aiter_gemm_w8a8_blockscale in
  // fp8_utils.py; v0.8's has none): the 0.9-0.10 preset and later.
  e.rocm_aiter = version != 8 && hw::runs_aiter(chip);
  // Its fused MoE too, but not at a MoE tensor-parallel size of 8 or more: there DeepGEMM's MoE
  // is off unless VLLM_MOE_USE_DEEP_GEMM is set, and the Triton fused MoE runs (PR #29346,
  // November 2025: v0.12; the 0.11-0.13 preset follows 0.12 and 0.13).
  e.triton_moe_from_tp = piecewise_only ? 0 : 8;
  // DeepGEMM's MoE takes a step of at least 128 tokens (_valid_deep_gemm_shape: align <= M);
  // Triton's fused MoE runs below, its rows priced as routed (docs/cost-model.md#row-tiles).
  e.expert_tiles.from_tokens = 128;
  e.sources =
      std::string(version == 8 ? "vLLM V1 (0.8: decode steps as piecewise graphs, cudagraph_mode PIECEWISE until v0.11.0, PR "
                                 "#25444; MLA's q_proj, RoPE, o_proj and its all-reduce inside the eager attention op, "
                                 "MLACommonImpl.forward, until PRs #17484 and #17668; block-fp8 GEMMs at the Triton "
                                 "kernel's curve; async scheduling off): "
                  : version == 10 ? "vLLM V1 (0.9-0.10: decode steps as piecewise graphs, cudagraph_mode PIECEWISE until v0.11.0, PR "
                                  "#25444; block-fp8 GEMMs at the Triton kernel's curve; async scheduling off): "
                  : version == 13 ? "vLLM V1 (0.11-0.13: FULL_AND_PIECEWISE graphs, v0.11.0 release notes, PR #25444; block-fp8 "
                                    "GEMMs by DeepGEMM on Hopper and Blackwell: VLLM_USE_DEEP_GEMM on by default, PR #24462; async scheduling off): "
                                  : "vLLM V1 (0.14+, async scheduling on by default: v0.14.0 release notes, PR #27614; block-fp8 "
                                    "GEMMs by DeepGEMM on Hopper and Blackwell: VLLM_USE_DEEP_GEMM on by default, PR #24462): ") +
      "vllm/engine/arg_utils.py _set_default_args (token budget, max_num_seqs), "
      "vllm/config/cache.py (block 16, gpu_memory_utilization 0.9), vllm/v1/core/sched/scheduler.py "
      "(running first, FCFS, recompute preemption of the last admitted), vllm/v1/core/kv_cache_manager.py "
      "(prefix hits in whole blocks, the last token recomputed), csrc/custom_all_reduce.cuh (one- and two-shot all-reduce "
      "over NVLink); MLA's absorbed projections on bf16 weights (kv_b_proj dequantised at load, torch.bmm); host time "
      "per step from PR #42131 and #46112; front end per request 4 ms (tenstorrent/tt-inference-server issue #190: vLLM "
      "online against offline)";
  return e;
}

// vLLM V0 (0.6.x, the engine before V1; LLMEngine / AsyncLLMEngine behind the OpenAI server).
// Host components of its loop, each from a measurement of V0 itself:
// - the scheduler: "the original scheduler logic takes about 2ms" per iteration (vllm-project/vllm
//   PR #4280, A10, 0.4.1; batch not stated): paid on the critical path, once per scheduler call;
// - output processing (_process_model_outputs: detokenise, stop checks, RequestOutputs): 0.2 ms at
//   batch 1 and 3.4 ms at batch 32 (issue #6913, Llama-3-70B FP8 on 4 x H100, 0.5.x), i.e. 0.2 ms
//   + 0.1 ms per request; run while the device runs the next step (asynchronous output
//   processing, PR #7049, on by default in 0.6.0: disable_async_output_proc=False; with
//   multi-step, PR #7921 and #8050).
// No V0 figure for input preparation per request is published apart from shares of a whole
// (vLLM v0.6.0 blog: API server 33 %, scheduling and input preparation 29 %, GPU 38 %, Llama 3 8B on
// one H100): none is added per request.
constexpr double kV0SchedulerS = 2e-3;
constexpr double kV0OutputS = 0.2e-3;
constexpr double kV0OutputPerRequestS = (3.4e-3 - 0.2e-3) / 31;

EngineConfig vllm_v0(const hw::ChipSpec& chip) {
  EngineConfig e;
  e.kind = EngineKind::vllm;
  e.custom_allreduce_max_bytes = kCustomAllreduceMax;
  e.version = kVllmV0Version;
  e.releases = "0.6 (V0)";
  e.policy = StepPolicy::running_first;
  e.prefills_apart = true;   // vllm/core/scheduler.py _schedule_default: prefills first, decodes only when none is scheduled
  e.admission = Admission::step_blocks;  // BlockSpaceManager.can_allocate: the prompt's blocks
  e.preemption = Preemption::recompute;  // PreemptionMode.RECOMPUTE for single-sequence groups
  e.memory_rule = MemoryRule::profiled;
  // SchedulerConfig without chunked prefill: max_num_batched_tokens = max(max_model_len, 2048);
  // 2048 for a max_model_len of 2048 or less (--max-batched-tokens for a longer one). Chunked
  // prefill is off (auto-enabled only above a max_model_len of 32K), and 0.6.0 refuses it with
  // multi-step: "Chunked prefill is not supported with multi-step (--num-scheduler-steps > 1)"
  // (vllm-project/vllm issue #8274, on 0.6.0).
  e.max_batched_tokens = 2048;
  e.max_num_seqs = 256;      // arg_utils.py: max_num_seqs 256
  e.chunked_prefill = false;
  e.kv_block = 16;           // block_size 16
  e.kv_memory_fraction = 0.9;  // gpu_memory_utilization 0.9
  e.prefix_caching = false;  // enable_prefix_caching off by default in V0
  e.fused_attention = false; // prefill and decode steps apart: never one kernel for both
  // CUDA graphs for decode-only batches of 1, 2, 4, 8, 16, ... up to max_num_seqs padded, 256 by
  // default (_BATCH_SIZES_TO_CAPTURE, _get_max_graph_batch_size: capture_from_seqs), a batch padded
  // to the next captured size; prefill steps eager (model_runner.py).
  e.decode_graphs = GraphMode::graph;
  e.mixed_graphs = GraphMode::eager;
  e.graph_max_batch = 256;
  e.capture_follows_seqs = chip.kind == "gpu";  // from max_num_seqs (capture_from_seqs)
  e.step_overhead_s = kV0SchedulerS;
  e.per_request_overhead_s = 0;
  e.async_step_s = kV0OutputS;
  e.async_per_request_s = kV0OutputPerRequestS;
  e.front_end_s = kFrontEndS;  // the API server in its own process, requests to the engine over ZMQ (PR #6883, 0.6.0)
  python_launches(e);
  e.host_source = "vLLM V0's loop: scheduler 2 ms (vllm-project/vllm PR #4280), output processing 0.2 ms + 0.1 ms/request, async (issue #6913, PR #7049)";
  e.front_end_source = std::string(kFrontEndSource) + " (V1-era; V0 0.6.0 has the same ZMQ front end, PR #6883)";
  e.overlap_scheduling = false;
  e.scheduler_steps = 1;  // --num-scheduler-steps 1 by default (multi-step opt-in)
  e.sampler = model::ForwardConfig::Sampler::probs;  // Sampler.forward: softmax and log_softmax every step
  e.sources =
      "vLLM 0.6 (V0): vllm/engine/arg_utils.py (max_num_seqs 256, block 16, gpu_memory_utilization 0.9, num_scheduler_steps 1, "
      "async output processing on), vllm/config.py SchedulerConfig (max_num_batched_tokens max(max_model_len, 2048) without "
      "chunked prefill), vllm/core/scheduler.py _schedule_default (prefills first in steps of their own, recompute preemption), "
      "vllm/engine/llm_engine.py step (multi-step: the scheduler skipped while a window has steps left; not with chunked "
      "prefill, issue #8274; a window's outputs streamed at its end, per-step streaming only from PR #8335, after 0.6.0), "
      "vllm/worker/model_runner.py (decode graphs 1, 2, 4, 8, ... to max_num_seqs padded, 256 by default; padded; prefill eager), vllm/model_executor/layers/sampler.py (Sampler.forward: the logits in fp32 divided by the temperature, "
      "their softmax and log_softmax, the argmax of the gathered log-probabilities); host: scheduler 2 ms per call (PR #4280), "
      "output processing 0.2 ms + 0.1 ms per request, overlapped (issue #6913, PR #7049); front end per request 4 ms "
      "(tenstorrent/tt-inference-server #190)";
  return e;
}

// SGLang's cuda_graph_max_bs and chunked_prefill_size by GPU memory and TP
// (python/sglang/srt/server_args.py, _handle_gpu_memory_settings: the memory in MiB against
// 20, 35, 60 and 160 x 1024).
struct SglangMemory {
  std::int64_t chunk, graph_bs;
};
SglangMemory sglang_memory(double mem_bytes, std::int64_t tp) {
  const double mib = mem_bytes / kMiB;
  if (mib < 20 * 1024) return {2048, 8};
  if (mib < 35 * 1024) return {2048, tp < 4 ? 24 : 80};
  if (mib < 60 * 1024) return {4096, tp < 4 ? 32 : 160};
  if (mib < 160 * 1024) return {8192, tp < 4 ? 256 : 512};
  return {16384, 512};
}

// SGLang 0.3's own (the 0.3 line's python/sglang/srt/server_args.py and
// model_executor/cuda_graph_runner.py): chunked_prefill_size 8192 and max_prefill_tokens 16384
// whatever the memory; decode graphs captured for batches 1, 2, 4 and 8, 16, ..., 160
// (`capture_bs = [1, 2, 4] + [i * 8 for i in range(1, 21)]`), a batch padded to the next; larger
// batches eager. No cuda_graph_max_bs flag yet.
SglangMemory sglang03_memory() { return {8192, 160}; }

// 0.3's mem_fraction_static by TP (ServerArgs.__post_init__): 0.79 from TP 16, 0.83 from 8,
// 0.85 from 4, 0.87 from 2, else 0.88; no reserve by memory.
double sglang03_fraction(std::int64_t tp) {
  return tp >= 16 ? 0.79 : tp >= 8 ? 0.83 : tp >= 4 ? 0.85 : tp >= 2 ? 0.87 : 0.88;
}

// SGLang. `version` 3: 0.3.x, whose overlap scheduler was opt-in (--enable-overlap-schedule,
// PR #1738) until PR #2067 made it the default (November 2024); 0: 0.4 and later.
EngineConfig sglang(const hw::ChipSpec& chip, std::int64_t tp, int version) {
  EngineConfig e;
  e.kind = EngineKind::sglang;
  // Its custom all-reduce (vLLM's in 0.3, its own since: _MAX_CAR_SIZE 8 MiB on CUDA), and NCCL
  // without NVLS: NCCL_NVLS_ENABLE=0 unless --enable-nccl-nvls (PR #631, July 2024; PR #3502).
  e.custom_allreduce_max_bytes = kCustomAllreduceMax;
  e.nccl_nvls = false;
  e.version = version;
  const bool v03 = is_sglang_03(e.ref());
  e.releases = v03 ? "0.3" : "0.4+";
  // Programmatic dependent launch (docs/cost-model.md#pdl): its own sgl-kernel norms take
  // enable_pdl=is_arch_support_pdl() on SM90+ (PR #5981, May 2025), and from the 0.5 line its
  // launcher sets TRTLLM_ENABLE_PDL=1 ("flashinfer uses this environment variable for various
  // kernels from MoE to quant kernels", python/sglang/srt/entrypoints/engine.py,
  // _set_envs_and_config: unconditionally in a copy of about 0.5.1, unless given 0 in later
  // ones); the 0.3 line had neither.
  e.pdl = !v03;
  if (e.pdl) {
    e.pdl_source = "SGLang's sgl-kernel norms on SM90+ (PR #5981), its launcher's TRTLLM_ENABLE_PDL=1 for FlashInfer's kernels (engine.py, 0.5+)";
  }
  e.policy = StepPolicy::prefill_first;
  e.admission = Admission::ratio_reserve;
  e.preemption = Preemption::recompute;  // retraction: the request's cache is freed and it is queued again
  e.memory_rule = MemoryRule::static_fraction;
  const double mem = chip.main_capacity_bytes();
  const SglangMemory s = v03 ? sglang03_memory() : sglang_memory(mem, tp);
  e.max_batched_tokens = s.chunk;  // chunked_prefill_size
  e.max_prefill_tokens = 16384;    // max_prefill_tokens
  e.max_num_seqs = 0;              // max_running_requests: from the cache size (resolved by the simulator)
  e.chunked_prefill = true;
  e.mixed_chunk = false;           // --enable-mixed-chunk is off by default
  e.kv_block = 1;                  // page_size 1: the radix cache works token by token
  if (v03) {
    e.kv_memory_fraction = sglang03_fraction(tp);
  } else {
    // mem_fraction_static = (mem - reserved) / mem, reserved in MB: 512 + 1.5 x chunk + 2 x
    // cuda_graph_max_bs + tp / 8 x 1024, at least 10 GiB on GPUs of more than 60 GiB.
    const double mem_mb = mem / kMiB;
    double reserved_mb = 512 + 1.5 * static_cast<double>(std::max<std::int64_t>(s.chunk, 2048)) +
                         2.0 * static_cast<double>(s.graph_bs) + static_cast<double>(tp) / 8 * 1024;
    if (mem_mb > 60 * 1024) reserved_mb = std::max(reserved_mb, 10.0 * 1024);
    // round((gpu_mem - reserved_mem) / gpu_mem, 3) (PR #7054, June 2025).
    e.kv_memory_fraction = mem_mb > reserved_mb ? std::round((mem_mb - reserved_mb) / mem_mb * 1000) / 1000 : 0.88;
  }
  e.prefix_caching = true;  // RadixAttention, on unless --disable-radix-cache
  e.fused_attention = false;
  e.decode_graphs = GraphMode::graph;
  e.mixed_graphs = GraphMode::eager;
  e.graph_max_batch = s.graph_bs;
  // 0.3: SGLang's own loop as measured before the overlap scheduler, between device steps.
  // 0.4+: no figure of the rewritten loop is published; it is taken to cost what vLLM V1's
  // does, hidden behind the device by the overlap ("zero-overhead") scheduler, on by default.
  if (v03) {
    e.step_overhead_s = kSglang02StepS;
    e.per_request_overhead_s = 0;
    e.host_source = kSglang02HostSource;
  } else {
    e.step_overhead_s = kPythonStepS;
    e.per_request_overhead_s = kPythonPerRequestS;
    e.host_source = std::string(kPythonHostSource) + " (none published for SGLang 0.4+)";
  }
  e.front_end_s = kFrontEndS;
  e.front_end_source = std::string(kFrontEndSource) + " (none published for SGLang)";
  python_launches(e);
  e.overlap_scheduling = !v03;
  // Block-fp8 linear layers by DeepGEMM (on by default on SM90 from PR #5628, April 2025:
  // 0.4.6; deep_gemm_wrapper's ENABLE_JIT_DEEPGEMM asks for CUDA of SM90 or later, DeepGEMM's
  // own kernels for 9.x or 10.x: hw::runs_deepgemm); the 0.4+ preset follows the newest
  // releases. Elsewhere Triton's w8a8_block_fp8_matmul, or on ROCm under SGLANG_USE_AITER
  // (0.4.6.post1 on, PR #5816) AITER's Triton block-scale GEMM on gfx942
  // (aiter_w8a8_block_fp8_linear: use_triton but on gfx950's preshuffled path, PR #13617):
  // gemm_scaled, whose MI300X curve is AITER's CK kernel (vLLM's): an approximation there.
  e.scaled_gemm = v03 || !hw::runs_deepgemm(chip) ? model::ForwardConfig::ScaledGemm::triton
                                                  : model::ForwardConfig::ScaledGemm::deepgemm;
  e.rocm_aiter = !v03 && hw::runs_aiter(chip);
  // Its experts: DeepGEMM's grouped kernels only under expert parallelism (the deep_gemm MoE
  // runner, with DeepEP), Triton's fused MoE for experts split by width (the triton runner, which
  // its tuned configs are for: fused_moe_triton/configs/E=256,N=256,device_name=NVIDIA_H200,
  // dtype=fp8_w8a8,block_shape=[128, 128].json, tuned for DeepSeek-V3 at --tp-size 8).
  e.triton_moe_from_tp = v03 ? 0 : 1;
  // gpt-oss's MXFP4 experts on Blackwell: FlashInfer's trtllm-gen MoE (the flashinfer_mxfp4
  // runner), whose weights Mxfp4MoEMethod.create_weights rounds up to 256 in the hidden width
  // and each chip's intermediate share (python/sglang/srt/layers/quantization/mxfp4.py, as vLLM).
  e.mxfp4_expert_align = !v03 ? trtllm_gen_mxfp4_align(chip) : 0;
  e.new_token_ratio_init = 0.7;  // SGLANG_INIT_NEW_TOKEN_RATIO x schedule_conservativeness 1.0
  // SGLANG_MIN_NEW_TOKEN_RATIO_FACTOR 0.14; 0.3: global_config.py base_min_new_token_ratio 0.1,
  // new_token_ratio_decay 0.001 a step (600 steps from 0.7).
  e.new_token_ratio_min = v03 ? 0.1 : 0.7 * 0.14;
  e.new_token_ratio_decay_steps = 600;  // SGLANG_NEW_TOKEN_RATIO_DECAY_STEPS
  e.reserve_clip_tokens = 4096;  // SGLANG_CLIP_MAX_NEW_TOKENS_ESTIMATION
  e.retract_steps = 20;          // SGLANG_RETRACT_DECODE_STEPS
  e.sources =
      "SGLang (2025-2026 main): python/sglang/srt/server_args.py _handle_gpu_memory_settings (chunked_prefill_size, "
      "cuda_graph_max_bs, mem_fraction_static), managers/scheduler.py get_next_batch_to_run (prefill first), "
      "schedule_policy.py PrefillAdder (admission with new_token_ratio), schedule_batch.py retract_decode, "
      "environ.py (ratio 0.7 -> 0.098 over 600 steps, retract 20 steps); page_size 1; host time as vLLM's, overlapped "
      "(the overlap scheduler, on by default since PR #2067, Nov 2024, which delays a new batch by one step; sglang@0.3: off); "
      "block-fp8 GEMMs by DeepGEMM on Hopper and Blackwell (on by default since PR #5628, Apr 2025; elsewhere and sglang@0.3: the Triton kernel); "
      "front end per request as vLLM's (4 ms; none published for SGLang)" +
      std::string(v03 ? "; sglang@0.3: the 0.3 line's server_args.py (chunked_prefill_size 8192, mem_fraction_static "
                                 "0.88 / 0.87 / 0.85 / 0.83 / 0.79 from TP 1 / 2 / 4 / 8 / 16), cuda_graph_runner.py (decode "
                                 "graphs of 1, 2, 4, 8, 16, ..., 160, padded), global_config.py (ratio 0.7 -> 0.1 by 0.001 a step); "
                                 "host 2.915 ms a step between device steps, SGLang 0.2.13's scheduling time per iteration on "
                                 "A100s (WukLab, mlsys.wuklab.io, 2024-09-10)"
                               : "");
  return e;
}

EngineConfig trtllm(const hw::ChipSpec& chip, int version = 0) {
  EngineConfig e;
  e.kind = EngineKind::trtllm;
  e.version = version;
  // AllReduceStrategy AUTO (cpp/tensorrt_llm/thop/allreduceOp.cpp, getRuntimeStrategy, 2025):
  // its own kernels within the workspace (getMaxRequiredWorkspaceSize: 16 MB at TP 2, else
  // 8 MB) at TP 2, under 1 MB at TP 3-4 and under 500 kB past 4; NCCL otherwise. At TP 2 up
  // to the workspace's 16e6 bytes inclusive (`messageSizeBytes <= maxWorkspaceSize`): NCCL from
  // the byte past it.
  e.custom_allreduce_max_bytes = {16e6 + 1, 1e6, 500e3};
  e.releases = version == kTrtllmOptInPdlVersion ? "PyTorch backend, 0.19-1.1" : "PyTorch backend, 1.2+";
  e.policy = StepPolicy::generation_first;
  e.admission = Admission::completion;  // GUARANTEED_NO_EVICT
  e.preemption = Preemption::recompute;  // never needed: nothing is admitted without its blocks to completion
  e.memory_rule = MemoryRule::of_free;
  e.max_batched_tokens = 8192;  // max_num_tokens
  e.max_num_seqs = 2048;        // max_batch_size
  e.chunked_prefill = false;    // enable_chunked_prefill
  e.kv_block = 32;              // tokens_per_block
  e.kv_memory_fraction = 0.9;   // free_gpu_memory_fraction, of the memory left after a profiling run
  e.prefix_caching = true;      // enable_block_reuse
  e.partial_reuse = true;       // enable_partial_reuse
  e.fused_attention = false;    // context FMHA and generation (XQA) kernels apart
  // cuda_graph_config's defaults: decode batches of 1-32, 64 and 128 captured, padding off
  // (llm_args.py _generate_cuda_graph_batch_sizes): other batches run eagerly.
  e.decode_graphs = GraphMode::graph;
  e.mixed_graphs = GraphMode::eager;
  e.graph_max_batch = 128;
  e.graph_exact_sizes = true;
  // The overlap scheduler (on by default since PR #4174): step n+1 is launched before step n's
  // outputs are processed, at the cost of one extra step for a new request; still ~580 us of
  // host work per iteration shows as device idle (issue #13957, Llama-3.1-8B FP8 on B200,
  // concurrency 64). The host work it hides has no published figure: the Python loop is taken
  // to cost vLLM's.
  e.step_overhead_s = kPythonStepS;
  e.per_request_overhead_s = kPythonPerRequestS;
  e.front_end_s = kFrontEndS;
  e.host_source = std::string(kPythonHostSource) + "; exposed: NVIDIA/TensorRT-LLM #13957";
  python_launches(e);
  e.front_end_source = std::string(kFrontEndSource) + " (none published for trtllm-serve)";
  e.overlap_scheduling = true;
  e.exposed_step_s = 0.58e-3;
  // Block-fp8 linear layers by DeepGEMM (TRTLLM_DG_ENABLED on unless set to 0, PR #3341, April
  // 2025), on the GPUs it runs on (hw::runs_deepgemm); elsewhere priced as gemm_scaled.
  e.scaled_gemm = hw::runs_deepgemm(chip) ? model::ForwardConfig::ScaledGemm::deepgemm : model::ForwardConfig::ScaledGemm::triton;
  // Its port of DeepGEMM's grouped GEMM (fp8_blockscale_gemm.cu, grouped_gemm_dispatch) swaps
  // its operands while its expected_m, the MoE call's rows (num_rows: getWorkspaceSize sets it
  // at every call), is under m_per_expert_threshold: 64 on the H20 (78 SMs), 32 elsewhere ("32
  // for H100/H200"); its get_best_gemm_config takes 64-row tiles for expected_m <= 64 (the
  // grouped problem is not flagged contiguous there), 128 above.
  e.expert_tiles.swap_below = chip.sms == 78 ? 64 : 32;
  e.expert_tiles.small_upto = 64;
  // Programmatic dependent launch of its own kernels: getEnvEnablePDL() (cpp/tensorrt_llm/common/
  // envUtils.cpp) reads TRTLLM_ENABLE_PDL. An early PyTorch-backend copy read it as opt-in
  // (`enablePDL = getBoolEnv("TRTLLM_ENABLE_PDL")`, beside the UCX KV-cache switches of 2025),
  // and its DeepSeek guide exports TRTLLM_ENABLE_PDL=1 by hand; 1.2.0 runs with it on unless set
  // to 0 ("TRTLLM_ENABLE_PDL defaults to 1", NVIDIA/TensorRT-LLM issue #16330, against 1.2.0;
  // envUtils.cpp at 02734d9: `enablePDL = true`). Which release turned it on was not found:
  // trtllm@1.1 (0.19-1.1) takes it off, the preset (1.2+) on.
  e.pdl = version != kTrtllmOptInPdlVersion;
  e.pdl_source = e.pdl ? "TensorRT-LLM's getEnvEnablePDL, TRTLLM_ENABLE_PDL unset: on in 1.2.0 (issue #16330)"
                       : "TensorRT-LLM's getEnvEnablePDL, TRTLLM_ENABLE_PDL unset: opt-in before 1.2 (trtllm@1.1)";
  e.sources =
      "TensorRT-LLM (PyTorch backend, trtllm-serve 1.x): tensorrt_llm/llmapi/llm_args.py and builder.py BuildConfig "
      "(max_num_tokens 8192, max_batch_size 2048, chunked prefill off, cuda_graph_config: batches 1-32, 64, 128, no padding), "
      "KvCacheConfig (tokens_per_block 32, free_gpu_memory_fraction 0.9, block and partial reuse), "
      "batch_manager/capacityScheduler.cpp (GUARANTEED_NO_EVICT), microBatchScheduler.cpp (generation first); overlap scheduler "
      "on (PR #4174; docs features/overlap-scheduler: one extra decoding step); exposed host time from issue #13957; block-fp8 "
      "GEMMs by DeepGEMM on Hopper and Blackwell (on by default, PR #3341); front end per "
      "request as vLLM's (4 ms; none published for trtllm-serve)";
  return e;
}

// TensorRT-LLM's TensorRT engine flow, 0.9-0.15 (`trtllm@0.15`): engines built by trtllm-build
// and run by the C++ executor (the Executor API from 0.9; Triton's tensorrtllm_backend and NIM
// serve them). Its batch manager is the one the PyTorch backend later reused, so the scheduler,
// admission and cache sizing are the `trtllm` preset's (microBatchScheduler, GUARANTEED_NO_EVICT,
// free_gpu_memory_fraction 0.9; BuildConfig's max_num_tokens 8192 and max_batch_size 2048,
// tensorrt_llm/builder.py at 1730a58, October 2024). What differs, each as these releases ran:
// - no overlap: the executor's loop syncs step n, returns its tokens, fetches new requests and
//   only then launches step n+1 (a request waits for the step in flight, no more); the overlap
//   of two micro-batches (enable_trt_overlap) was deprecated and ignored by 0.13-0.17's
//   tensorrtllm_backend, and an overlap of the next step's preparation came to the C++ runtime
//   only in 0.20 (PR #3625), off by default;
// - no CUDA graphs: ExtendedRuntimePerfKnobConfig's cudaGraphMode = false (executor.h), Triton's
//   cuda_graph_mode "(default=false)" (0.15-0.17; 0.14 never sets it): every kernel launched by
//   the C++ runtime's enqueue of the engine, with no Python per kernel (eager_host_s 0);
//   --cuda-graphs captures every decode batch (cuda_graph_cache_size);
// - KV blocks of 64 tokens (plugin.py tokens_per_block default=64 at f14d1d4 and 548b5b7; 32 from
//   early 2025) and no block reuse (KvCacheConfig enableBlockReuse = false; on with paged context
//   FMHA only from 0.17); chunked context off (enableChunkedContext = false);
// - the all-reduce plugin's AUTO (allreducePlugin.cpp at b7868dd, November 2024): its one-shot
//   kernel within the 16 MB workspace at TP 2, under 1 MB at TP 3-4, under 500 kB past 4, NCCL
//   otherwise: the `trtllm` preset's limits;
// - no DeepGEMM (TensorRT-LLM's port came in PR #3341, April 2025).
// The C++ loop's own time per iteration is not published: none is priced (--step-overhead).
EngineConfig trtllm_engines(const hw::ChipSpec& chip) {
  EngineConfig e = trtllm(chip);
  e.version = kTrtllmEnginesVersion;
  e.releases = "TensorRT engine flow, C++ executor, 0.9-0.15";
  // Its plugins' getEnvEnablePDL read TRTLLM_ENABLE_PDL as opt-in then (docs/cost-model.md#pdl).
  e.pdl = false;
  e.pdl_source.clear();
  e.kv_block = 64;
  e.prefix_caching = false;
  e.partial_reuse = false;
  e.decode_graphs = GraphMode::eager;
  e.mixed_graphs = GraphMode::eager;
  e.graph_max_batch = kAnyBatch;  // (whatever --max-num-seqs)
  e.graph_exact_sizes = false;
  e.eager_host_s = 0;
  e.eager_host_source.clear();
  e.overlap_scheduling = false;
  e.exposed_step_s = 0;
  e.step_overhead_s = 0;
  e.per_request_overhead_s = 0;
  e.host_source = "the C++ executor's loop: none published";
  e.scaled_gemm = model::ForwardConfig::ScaledGemm::triton;
  e.expert_tiles = {};  // (no DeepGEMM)
  e.sources =
      "TensorRT-LLM's TensorRT engine flow (trtllm-build engines under the C++ executor, 0.9-0.15): builder.py BuildConfig "
      "(max_num_tokens 8192, max_batch_size 2048), executor.h (chunked context off, cudaGraphMode false, KvCacheConfig block "
      "reuse off, free_gpu_memory_fraction 0.9, GUARANTEED_NO_EVICT), plugin.py (tokens_per_block 64), tensorrtllm_backend "
      "docs/model_config.md (enable_trt_overlap deprecated and ignored), allreducePlugin.cpp AUTO (one-shot within 16 MB at "
      "TP 2, under 1 MB at TP 3-4, 500 kB past 4); no host time per iteration published; front end per request as "
      "vLLM's (4 ms; none published for Triton's tensorrtllm_backend)";
  e.front_end_source = std::string(kFrontEndSource) + " (none published for Triton's tensorrtllm_backend)";
  return e;
}

EngineConfig static_batch(const hw::ChipSpec&) {
  EngineConfig e;
  e.kind = EngineKind::static_batch;
  e.releases = "as infer";
  e.policy = StepPolicy::static_batch;
  e.admission = Admission::completion;
  e.memory_rule = MemoryRule::profiled;
  e.max_batched_tokens = 8192;  // the activations the memory keeps room for; the batch ignores the budget
  e.max_num_seqs = 256;
  e.chunked_prefill = false;
  e.kv_block = 16;
  e.kv_memory_fraction = 0.9;  // as infer: 0.9 of the memory, vLLM's gpu_memory_utilization
  e.prefix_caching = false;
  e.decode_graphs = GraphMode::eager;  // --cuda-graphs, as for infer
  e.mixed_graphs = GraphMode::eager;
  e.graph_max_batch = kAnyBatch;
  e.collective_algo = comm::Algo::automatic;  // as `infer`
  e.merged_kernels = false;
  e.sources = "static batching as `ridgeline infer` models it: no host time, prompts prefilled together";
  return e;
}

}  // namespace

void settle_output_processing(EngineConfig& e, bool speculative) {
  if (!engine_outputs_next_step(e)) return;  // (none, or already off)
  if (e.decode_graphs != GraphMode::eager && !speculative) return;
  e.outputs_in_step = true;
  e.host_source += "; its output processor off without graphs or with a draft (vllm/config.py verify_async_output_proc)";
}

std::string_view name(EngineKind k) noexcept {
  switch (k) {
    case EngineKind::vllm: return "vllm";
    case EngineKind::sglang: return "sglang";
    case EngineKind::trtllm: return "trtllm";
    case EngineKind::static_batch: return "static";
  }
  return "?";
}

std::string name(EngineRef e) {
  std::string s(name(e.kind));
  if (e.version > 0) s += fmt::format("@{}.{}", e.version / 1000, e.version % 1000);
  return s;
}

namespace {

// The releases each family's presets cover (parse_engine maps any release inside to its preset).
constexpr std::string_view kVllmReleases = "0.6 (V0), 0.8, 0.9-0.10, 0.11-0.13 and 0.14+";
constexpr std::string_view kSglangReleases = "0.3 and 0.4+";
constexpr std::string_view kTrtllmReleases =
    "the TensorRT engine flow of 0.9-0.15 (trtllm@0.15) and the PyTorch backend (0.19-1.1, trtllm@1.1; 1.2+)";

}  // namespace

std::string engine_releases() {
  return fmt::format("@MAJOR.MINOR follows a release's defaults: vllm {}; sglang {}; trtllm {}", kVllmReleases, kSglangReleases,
                     kTrtllmReleases);
}

std::optional<EngineRef> parse_engine(std::string_view s) {
  const std::size_t at = s.find('@');
  const std::string_view family = s.substr(0, at);
  EngineRef e;
  if (family == "vllm") e.kind = EngineKind::vllm;
  else if (family == "sglang") e.kind = EngineKind::sglang;
  else if (family == "trtllm" || family == "tensorrt-llm") e.kind = EngineKind::trtllm;
  else if (family == "static") e.kind = EngineKind::static_batch;
  else return std::nullopt;
  if (at == std::string_view::npos) return e;
  // MAJOR.MINOR[.PATCH...]: the release whose defaults to follow.
  const std::string_view v = s.substr(at + 1);
  int major = 0, minor = 0;
  std::size_t i = 0, dots = 0;
  bool digits = false;
  for (; i < v.size() && (std::isdigit(static_cast<unsigned char>(v[i])) || v[i] == '.'); ++i) {
    if (v[i] == '.') {
      if (++dots > 1) break;
      digits = false;
      continue;
    }
    digits = true;
    int& part = dots == 0 ? major : minor;
    if (part > 99999) return std::nullopt;
    part = part * 10 + (v[i] - '0');
  }
  if (dots == 0 || !digits || (i < v.size() && v[i] != '.') || e.kind == EngineKind::static_batch) return std::nullopt;
  const int release = major * 1000 + minor;
  const std::string given(s);
  switch (e.kind) {
    case EngineKind::vllm:
      // V1 became the default engine in 0.8.0; 0.6 is the V0 engine (vllm_v0), 0.7 is not modelled;
      // V1's presets: 0.8, 0.9-0.10, 0.11-0.13, 0.14+.
      if (release == 6) {
        e.version = kVllmV0Version;
        break;
      }
      if (release < 8) {
        throw InputError(fmt::format("--engine {}: vLLM {}.{} is not modelled: presets cover {}", given, major, minor, kVllmReleases));
      }
      e.version = release < 9 ? 8 : release < 11 ? 10 : release < 14 ? 13 : 0;
      break;
    case EngineKind::sglang:
      if (release < 3) throw InputError(fmt::format("--engine {}: SGLang before 0.3 is not modelled: presets cover {}", given, kSglangReleases));
      e.version = release < 4 ? 3 : 0;
      break;
    case EngineKind::trtllm:
      // The PyTorch backend, which 0.19 and 0.20 ran with --backend pytorch and 1.0 made the default;
      // before it the TensorRT engine flow under the C++ executor (0.9-0.15: trtllm_engines).
      if (release < 9) {
        throw InputError(fmt::format("--engine {}: TensorRT-LLM before 0.9 (GptManager, before the Executor API) is not modelled: presets "
                                     "cover {}",
                                     given, kTrtllmReleases));
      }
      if (release >= 16 && release < 19) {
        throw InputError(fmt::format("--engine {}: TensorRT-LLM 0.16-0.18 is not modelled: the TensorRT engine flow's defaults "
                                     "changed over them (paged context FMHA and with it chunked context, KV block reuse from 0.17, "
                                     "blocks of 32 tokens by February 2025); expected trtllm@0.15 with --chunked-prefill, "
                                     "--prefix-caching and --kv-block as the release sets them, or trtllm@1.1 and trtllm (the PyTorch backend, 0.19-1.1 and 1.2+)",
                                     given));
      }
      if (release < 16) e.version = kTrtllmEnginesVersion;
      else if (release < 1002) e.version = kTrtllmOptInPdlVersion;
      break;
    case EngineKind::static_batch: break;
  }
  return e;
}

std::string band_name(EngineRef e) {
  if (is_vllm_v0(e) || is_trtllm_engines(e)) return name(e);
  return std::string(name(e.kind));
}

namespace {

EngineConfig preset(EngineRef engine, const hw::ChipSpec& chip, std::int64_t tp) {
  switch (engine.kind) {
    case EngineKind::vllm: return is_vllm_v0(engine) ? vllm_v0(chip) : vllm(chip, engine.version);
    case EngineKind::sglang: return sglang(chip, tp, engine.version);
    case EngineKind::trtllm: return is_trtllm_engines(engine) ? trtllm_engines(chip) : trtllm(chip, engine.version);
    case EngineKind::static_batch: return static_batch(chip);
  }
  return vllm(chip, engine.version);
}

// How each engine draws a batch's tokens at a temperature with nothing cut (docs/serving.md#sampling):
// - vLLM V1: TopKTopPSampler.forward_cuda hands a batch with no top-k or top-p to forward_native,
//   softmax then random_sample (exponential noise, the probabilities divided by it, argmax;
//   vllm/v1/sample/ops/topk_topp_sampler.py); V0 the same draw (_multinomial in
//   vllm/model_executor/layers/sampler.py);
// - SGLang 0.3 and 0.4+: softmax written back over the logits, then FlashInfer's
//   top_k_top_p_sampling_from_probs for any batch not all greedy (python/sglang/srt/layers/
//   sampler.py, sampling_backend flashinfer);
// - TensorRT-LLM's PyTorch backend: TorchSampler's softmax and torch.multinomial from PR #7294
//   (August 2025) until PR #9454 (November 2025), FlashInfer's sampling_from_logits after it
//   (one kernel over the logits), which the preset (to 1.0) does not follow; before PR #7294
//   TorchSampler's fast path took the argmax unless enable_mixed_sampler was set;
// - the static engine: as vLLM's.
void set_draw(EngineConfig& e) {
  using Draw = model::ForwardConfig::Draw;
  switch (e.kind) {
    case EngineKind::sglang:
      e.draw = Draw::flashinfer;
      e.draw_source = "the softmax written back over the logits, then FlashInfer's top_k_top_p_sampling_from_probs "
                      "(python/sglang/srt/layers/sampler.py)";
      break;
    case EngineKind::trtllm:
      if (is_trtllm_engines(e.ref())) {
        // The C++ runtime's sampling layers (DynamicDecodeLayer), whose kernels at a temperature
        // with nothing cut are not modelled: priced as vLLM's draw.
        e.draw = Draw::exponential;
        e.draw_source = "the C++ runtime's sampling layers, not modelled: priced as vLLM's random_sample (exponential noise, the "
                        "probabilities divided by it, their argmax)";
        break;
      }
      e.draw = Draw::multinomial;
      e.draw_source = "TorchSampler's torch.multinomial: the probabilities' max, min and sums checked, exponential noise, divide, "
                      "argmax (NVIDIA/TensorRT-LLM PR #7294, until FlashInfer's from PR #9454)";
      break;
    case EngineKind::static_batch:
      e.draw = Draw::exponential;
      e.draw_source = "as vLLM's random_sample: exponential noise, the probabilities divided by it, their argmax";
      break;
    default:
      e.draw = Draw::exponential;
      e.draw_source = is_vllm_v0(e.ref()) ? "vLLM V0's Sampler: the log-softmax and a gathered copy too, then _multinomial's exponential "
                                       "noise, divide and argmax (vllm/model_executor/layers/sampler.py)"
                                     : "vLLM's random_sample: exponential noise, the probabilities divided by it, their argmax "
                                       "(vllm/v1/sample/ops/topk_topp_sampler.py)";
  }
}

}  // namespace

bool runs_on(EngineRef engine, const hw::ChipSpec& chip) noexcept {
  return engine.kind != EngineKind::trtllm || hw::may_be_nvidia_gpu(chip);
}

void check_runs_on(EngineRef engine, const hw::ChipSpec& chip) {
  if (runs_on(engine, chip)) return;
  throw InputError(fmt::format("--engine {}: TensorRT-LLM runs on NVIDIA GPUs, and {} is {}; expected --engine vllm or sglang "
                               "there, or an NVIDIA GPU",
                               name(engine), chip.name, hw::vendor_and_kind(chip)));
}

EngineConfig engine_preset(EngineRef engine, const hw::ChipSpec& chip, std::int64_t tp) {
  check_runs_on(engine, chip);
  EngineConfig e = preset(engine, chip, tp);
  set_draw(e);
  // Programmatic dependent launch is CUDA's from compute capability 9.0: elsewhere no engine runs
  // it (a chip whose file names no arch is taken as the engine's default).
  if (e.pdl && !hw::supports_pdl(chip)) {
    e.pdl = false;
    e.pdl_source.clear();
  }
  e.pdl_default = e.pdl;
  // Expert parallelism between attention data-parallel ranks without an all-to-all backend: the
  // ranks' tokens gathered to every GPU and the outputs reduce-scattered (docs/serving.md#deepep):
  // vLLM's --all2all-backend allgather_reducescatter (the default from PR #23964, September 2025,
  // v0.11; before it "naive", whose broadcasts gather as much), SGLang's MoE layers without
  // --moe-a2a-backend (LayerScatterModes: ScatterMode.FULL, dp_gather then dp_reduce_scatter),
  // TensorRT-LLM's MoE under enable_attention_dp (allgather, then reducescatter). The static
  // engine, no serving engine's, moves the pairs.
  if (e.kind != EngineKind::static_batch) e.moe_a2a = model::ForwardConfig::MoeA2A::gather;
  // AITER's default one-stage fused MoE on gfx942 (EngineConfig::aiter_moe_tile, engine_forward).
  const hw::Arch arch = hw::arch_of(chip);
  e.aiter_moe_tile = e.rocm_aiter && arch.isa == hw::Arch::Isa::hip && arch.major == 9 && arch.minor == 4 ? 32 : 0;
  // SGLang 0.4+ under --enable-dp-attention runs a MoE model's dense MLPs tensor-parallel over
  // every GPU on the ranks' gathered rows (LayerScatterModes._compute_mlp_mode: ScatterMode.FULL
  // unless --moe-dense-tp-size 1, which came in PR #4836, April 2025), and its MoE blocks without
  // an all-to-all backend on the gathered rows too: the router there, the shared experts
  // (DeepseekV2MLP) over the whole TP group (tp_size 1 only under such a backend:
  // _shared_expert_use_tp1), their sum reduce-scattered (python/sglang/srt/layers/communicator.py,
  // models/deepseek_v2.py); and its LM head over every GPU on the ranks' last tokens unless
  // --enable-dp-lm-head (layers/logits_processor.py). vLLM's data-parallel ranks are engines of
  // their own, and TensorRT-LLM runs the MLPs at mlp_tp_size 1 under attention DP
  // (_compute_mlp_tp_size), each on its rows.
  e.gathered_dense = e.kind == EngineKind::sglang && !is_sglang_03(e.ref());
  // MLA's q_a_proj and kv_a_proj_with_mqa as one GEMM of 1536 + 576 = 2112 columns for
  // DeepSeek-V3, the checkpoint's two weights concatenated at load, the input (fp8 block-scaled:
  // its per-token-group quantisation) made once: SGLang's fused_qkv_a_proj_with_mqa
  // (python/sglang/srt/models/deepseek_v2.py, PR #5619, April 2025, v0.4.6; whenever q_lora_rank
  // is set), vLLM's fused_qkv_a_proj (vllm/model_executor/models/deepseek_v2.py, PR #21116, July
  // 2025, v0.10.0; v0.8.4 to v0.9.2 ran two ReplicatedLinear layers), TensorRT-LLM's PyTorch
  // backend's fused_a, later kv_a_proj_with_mqa of the summed width (tensorrt_llm/_torch/
  // modules/attention.py, from its DeepSeek-V3 support, PR #2783, February 2025). The 0.9-0.10
  // preset takes 0.10's. Not vLLM V0 nor 0.8, SGLang 0.3, the TensorRT engine flow or the
  // static engine.
  e.fused_qkv_a = (e.kind == EngineKind::sglang && !is_sglang_03(e.ref())) ||
                  (e.kind == EngineKind::vllm && !is_vllm_v0(e.ref()) && e.version != 8) ||
                  (e.kind == EngineKind::trtllm && !is_trtllm_engines(e.ref()));
  return e;
}

// SGLang's host time per kernel of an MLA model's forward launched outside a graph (DeepSeek's
// architecture: MLA attention, MoE layers), where its Llama-3-8B step gives 25 us: DeepSeek-V3's
// forward of one new token took 82.6 ms eagerly against 23.1 ms as a CUDA graph (sgl-project/sglang
// PR #12160, 2025-10, its log's "forward cost"; GPU and layout not stated), so the eager forward
// is its host's launches: 1468 kernels in ridgeline's prompt step of DeepSeek-V3 at TP 8 as SGLang
// runs it by default there (the keys' assembly of MLA's prefill among them, the shared expert
// inside the routed experts' kernel: EngineConfig::fuse_shared_experts; q_a_proj and kv_a_proj
// as one GEMM: EngineConfig::fused_qkv_a), 82.6 ms / 1468 = 56.3 us each. SGLang's releases of
// January 2025 spent more (a 128-token prefill in 169 ms, PR #3236, GPU not named: 87 us over the
// 1938 kernels of its layout then, before both fusions); the 0.4+ preset takes October's, the
// newer.
constexpr double kSglangMlaEagerHostS = 56.3e-6;

// Whether the engine's model code runs each layer's all-reduce with the residual add and RMSNorm
// after it in one kernel (EngineConfig::allreduce_norm; docs/serving.md#allreduce-norm):
// - TensorRT-LLM's PyTorch backend (tensorrt_llm/_torch/models): DeepseekV3DecoderLayer's
//   enable_fusion, on unless TRTLLM_DEEPSEEK_EAGER_FUSION_DISABLED, off under attention data
//   parallelism (PRE_MOE_FUSION and POST_MOE_FUSION, PRE_MLP_FUSION and POST_MLP_FUSION with a
//   tensor-parallel group); LlamaDecoderLayer's, unless TRTLLM_LLAMA_EAGER_FUSION_DISABLED and
//   only for hidden_size > 4096 ("Disable fusion for small models due to accuracy issues"),
//   each AllReduce called with AllReduceFusionOp.RESIDUAL_RMS_NORM (its next layer's input norm,
//   the last layer's the model's final norm); wherever its AUTO strategy runs its own kernels;
//   not the TensorRT engine flow (trtllm@0.15);
// - SGLang 0.4+ as its main line since December 2025 (server_args.py: enable_flashinfer_allreduce
//   _fusion turned on for DeepseekV3ForCausalLM, GptOssForCausalLM, Glm4MoeForCausalLM,
//   Qwen3MoeForCausalLM and others on is_sm90_supported() or is_sm100_supported(), one node, no
//   DP attention, no all-to-all backend, not an H20 (no catalog chip): PR #14764, dropped on SM90 by PR #23402
//   and restored by PR #28789, June 2026; on SM100 for DeepSeek-V3 from PR #7775's path), up to
//   FUSE_ALLREDUCE_MAX_BATCH_SIZE = 2048 tokens (layers/communicator.py,
//   apply_flashinfer_allreduce_fusion: FlashInfer's trtllm_allreduce_fusion);
// - vLLM: its fusion pass is on at -O2 from PR #34299 (February 2026, 0.17), which the presets
//   (0.14+ among them, 0.14-0.16 without it) do not follow.
void allreduce_norm_rule(EngineConfig& e, const hw::ChipSpec& chip, std::int64_t tp, const model::ModelConfig& m) {
  e.allreduce_norm = false;
  e.allreduce_norm_max_tokens = 0;
  if (tp <= 1) return;
  if (e.kind == EngineKind::trtllm && !is_trtllm_engines(e.ref())) {
    e.allreduce_norm = m.model_type == "deepseek_v3" || (m.model_type == "llama" && m.hidden > 4096);
    if (e.allreduce_norm) {
      e.allreduce_norm_source = m.model_type == "deepseek_v3"
                                    ? "TensorRT-LLM's DeepseekV3DecoderLayer.enable_fusion, TRTLLM_DEEPSEEK_EAGER_FUSION_DISABLED unset"
                                    : "TensorRT-LLM's LlamaDecoderLayer.enable_fusion, hidden_size > 4096 (PR #6205)";
    }
    return;
  }
  if (e.kind != EngineKind::sglang || is_sglang_03(e.ref())) return;
  static constexpr std::string_view kFused[] = {"deepseek_v3", "gpt_oss", "glm4_moe", "qwen3_moe"};
  const hw::Arch arch = hw::arch_of(chip);
  const bool sm90_or_100 = arch.isa == hw::Arch::Isa::cuda && ((arch.major == 9 && arch.minor == 0) || arch.major == 10);
  const bool one_node = tp <= std::max(1, chip.chips_per_node);
  if (sm90_or_100 && one_node && std::find(std::begin(kFused), std::end(kFused), m.model_type) != std::end(kFused)) {
    e.allreduce_norm = true;
    e.allreduce_norm_max_tokens = kSglangFusedAllreduceMaxTokens;
    e.allreduce_norm_source = "SGLang's server_args.py enable_flashinfer_allreduce_fusion for the model on SM90/SM100, "
                              "FUSE_ALLREDUCE_MAX_BATCH_SIZE in layers/communicator.py";
  }
}

std::string_view moe_backend(const EngineConfig& e, const model::ModelConfig& m, const model::ForwardConfig& f) noexcept {
  if (e.moe_backend.empty()) return {};
  if (f.precision.weight && *f.precision.weight != m.checkpoint_dtype()) return {};
  return f.ep_size() > 8 ? "WIDEEP" : e.moe_backend;
}

EngineConfig engine_preset(EngineRef engine, const hw::ChipSpec& chip, std::int64_t tp, const model::ModelConfig& m) {
  EngineConfig e = engine_preset(engine, chip, tp);
  if (m.is_mla() && e.kind == EngineKind::sglang && !is_sglang_03(e.ref())) {
    e.eager_host_s = kSglangMlaEagerHostS;
    e.eager_host_source = "SGLang's DeepSeek-V3 eager forward, MLA and MoE: sgl-project/sglang PR #12160";
  }
  // SGLang's models that pass num_token_non_padded to their top-k on the all-to-all path
  // (forward_deepep: deepseek_v2.py, which runs V2 and V3, qwen2_moe.py, qwen3_moe.py,
  // glm4_moe.py; PR #6175, May 2025, 0.4.6.post5+); Mixtral's and gpt-oss's do not.
  static constexpr std::string_view kMasking[] = {"deepseek_v2", "deepseek_v3", "qwen2_moe", "qwen3_moe", "glm4_moe"};
  e.mask_moe_padding = e.kind == EngineKind::sglang && !is_sglang_03(e.ref()) && m.is_moe() &&
                       std::find(std::begin(kMasking), std::end(kMasking), m.model_type) != std::end(kMasking);
  // SGLang runs DeepSeek-V3's shared expert as expert 256 of its fused MoE (E = 257, top 9: its
  // weights loaded as mlp.experts.256, TopK appending it to every token's k with their weights'
  // sum over routed_scaling_factor), unless --disable-shared-experts-fusion: for the architecture
  // DeepseekV3ForCausalLM (and its NextN layer) with 256 routed experts and 1 shared, on CUDA of
  // compute capability 8.0 and up, neither expert parallelism nor DeepEP, TBO nor W4AFP8
  // (DeepseekV2ForCausalLM.determine_num_fused_shared_experts, python/sglang/srt/models/
  // deepseek_v2.py: PR #4918, April 2025; on unless disabled by June 2025, PR #7180; the E=257
  // tuned configs of fused_moe_triton, PR #6885). The layout's conditions are the graph's
  // (ForwardConfig::fuse_shared_experts); the chip's here: CUDA of compute capability 8.0 and up,
  // or HIP of 9.4 and up (the MI300s' gfx942). Not on datacenter Blackwell (is_sm100_supported:
  // compute capability 10.x): there server_args.py turns the MoE runner `auto` into FlashInfer's
  // TRTLLM MoE for DeepseekV3ForCausalLM's fp8 and fp4 checkpoints without an all-to-all
  // backend, and that runner sets disable_shared_experts_fusion. A chip file without `arch`:
  // an nvidia GPU with bf16 matrix units (8.0's first) that does not multiply fp4 (Blackwell's).
  const hw::Arch arch = hw::arch_of(chip);
  const bool fusing_chip =
      !hw::is_sm100_family(chip) && (arch.isa == hw::Arch::Isa::cuda  ? arch.at_least(8, 0)
                                     : arch.isa == hw::Arch::Isa::hip ? arch.at_least(9, 4)
                                                                      : chip.kind == "gpu" && hw::vendor_is(chip, "nvidia") &&
                                                                            chip.peak(hw::Unit::matrix, DType::bf16) > 0);
  e.fuse_shared_experts = e.kind == EngineKind::sglang && !is_sglang_03(e.ref()) && fusing_chip && m.model_type == "deepseek_v3" &&
                          m.moe.experts == 256 && m.moe.shared_experts == 1;
  // TensorRT-LLM's MoE backend: its default, CUTLASS (AUTO from the 1.2 line, which picks
  // CUTLASS for every model but gpt-oss: _torch/model_config.py resolve_moe_backend), runs fp8
  // block-scaled grouped GEMMs on SM90 alone; for DeepSeek's fp8 checkpoints its DeepSeek-R1
  // deployment guide's "MoE Backend Support Matrix" gives DEEPGEMM on B200/GB200 at EP <= 8 and
  // WIDEEP (without EPLB) on the GB200 NVL72 past it, and "The default moe backend is CUTLASS, so
  // for the combination which is not supported by CUTLASS, one must set the moe_config.backend
  // explicitly to run the model" (docs/source/deployment-guide/quick-start-recipe-for-deepseek-
  // r1-on-trtllm.md). FlashInfer's port of the same CUTLASS MoE refuses fp8 blocks on any arch
  // but 9.0: "FP8 block scaling not yet implemented for Blackwell" (flashinfer/fused_moe/core.py,
  // cutlass_fused_moe). The limit is the kernel's, so any checkpoint's fp8 blocks take it. The
  // TensorRT engine flow (trtllm@0.15) has no such backends.
  // (DeepGEMM's grouped GEMMs take 128 x 128 weight blocks: a checkpoint of other blocks is
  // left to the engine.)
  e.moe_backend = e.kind == EngineKind::trtllm && !is_trtllm_engines(e.ref()) && hw::is_sm100_family(chip) && m.is_moe() && m.quantized &&
                          is_fp8(m.quant.dtype) && m.quant.scale_bits_per_weight == 32.0 / (128 * 128)
                      ? "DEEPGEMM"
                      : "";
  allreduce_norm_rule(e, chip, tp, m);
  e.allreduce_norm_default = e.allreduce_norm;
  return e;
}

void validate_ranks(const EngineConfig& e, std::int64_t ranks) {
  if (ranks <= 1) return;
  if (is_trtllm_engines(e.ref())) {
    throw InputError(fmt::format("--ep {}: trtllm@0.15 (TensorRT-LLM's TensorRT engine flow) has no attention data parallelism, the "
                                 "PyTorch backend's (enable_attention_dp); expected --ep 1 (--experts ep for its MoE expert "
                                 "parallelism) or --engine trtllm",
                                 ranks));
  }
  if (e.kind != EngineKind::sglang) return;
  const auto refuse = [&](const char* flag, std::int64_t v, const char* what) {
    throw InputError(fmt::format("{}: {} under SGLang at --ep {}: SGLang divides the server's {} over its attention data-parallel "
                                 "ranks ({} // {} = 0 per rank); expected at least {}",
                                 flag, v, ranks, what, v, ranks, ranks));
  };
  if (e.max_num_seqs > 0 && e.max_num_seqs < ranks) {
    refuse(e.seqs_by_draft ? "--draft (SGLang's request limit under speculative decoding, unless --max-num-seqs)" : "--max-num-seqs",
           e.max_num_seqs, "request limit");
  }
  if (e.chunked_prefill && e.max_batched_tokens < ranks) refuse("--max-batched-tokens", e.max_batched_tokens, "chunk budget");
}

void validate(const EngineConfig& e) {
  auto range = [](std::int64_t v, std::int64_t lo, std::int64_t hi, const char* flag) {
    if (v < lo || v > hi) throw InputError(fmt::format("{}: {} is out of range: expected {} to {}", flag, v, lo, hi));
  };
  range(e.max_batched_tokens, 1, std::int64_t{1} << 24, "--max-batched-tokens");
  if (e.collective_algo == comm::Algo::nvls && !e.nccl_nvls) {
    throw InputError(fmt::format("--algo: nvls: {} runs NCCL with NVLS off (NCCL_NVLS_ENABLE=0 unless --enable-nccl-nvls; "
                                 "docs/serving.md#all-reduce)", name(e.kind)));
  }
  if (e.max_num_seqs != 0) range(e.max_num_seqs, 1, std::int64_t{1} << 20, "--max-num-seqs");
  range(e.kv_block, 1, 4096, "--kv-block");
  if (e.kv_blocks_override != 0) range(e.kv_blocks_override, 1, std::int64_t{1} << 40, "--kv-blocks");
  if (!(e.kv_memory_fraction > 0 && e.kv_memory_fraction <= 1)) {
    throw InputError(fmt::format("--kv-memory-fraction: {} is out of range: expected more than 0 and at most 1", e.kv_memory_fraction));
  }
  // Every running sequence computes a token each step, within the budget.
  if (e.policy != StepPolicy::static_batch && e.policy != StepPolicy::prefill_first && e.max_num_seqs > e.max_batched_tokens) {
    throw InputError(fmt::format("--max-num-seqs: {} sequences cannot each compute a token within --max-batched-tokens {}",
                                 e.max_num_seqs, e.max_batched_tokens));
  }
  if (!(e.step_overhead_s >= 0 && e.step_overhead_s < 10)) {
    throw InputError(fmt::format("--step-overhead: {} s is out of range: expected at least 0 s and less than 10 s", e.step_overhead_s));
  }
  range(e.scheduler_steps, 1, 1024, "--num-scheduler-steps");
  if (e.scheduler_steps > 1 && !e.prefills_apart) {
    throw InputError(fmt::format("--num-scheduler-steps: {}: multi-step scheduling is vLLM V0's (--engine vllm@0.6)", e.scheduler_steps));
  }
  if (e.scheduler_steps > 1 && e.chunked_prefill) {
    throw InputError(fmt::format("--num-scheduler-steps: {} steps per scheduler call with chunked prefill on: vLLM 0.6 runs multi-step "
                                 "scheduling without chunked prefill (give --chunked-prefill off)", e.scheduler_steps));
  }
  range(e.recv_interval, 1, 1000, "--scheduler-recv-interval");
  if (e.recv_interval > 1 && (e.kind != EngineKind::sglang || is_sglang_03(e.ref()))) {
    throw InputError(fmt::format("--scheduler-recv-interval: {}: SGLang's knob since 2025 (its scheduler reads new requests every n decode "
                                 "steps); {} reads them every step: drop it or use --engine sglang",
                                 e.recv_interval, e.kind == EngineKind::sglang ? "SGLang 0.3" : fmt::format("the {} engine", name(e.kind))));
  }
  if (!(e.front_end_s >= 0 && e.front_end_s < 10)) {
    throw InputError(fmt::format("--front-end: {} s is out of range: expected 0 to 10 s", e.front_end_s));
  }
}

// (engine.hpp: vLLM 0.8 forced enforce_eager under data parallelism.)
bool ranks_run_eagerly(const EngineConfig& e, std::int64_t ep) noexcept { return e.kind == EngineKind::vllm && e.version == 8 && ep > 1; }

bool graphs_need_equal_ranks(const EngineConfig& e) noexcept {
  return e.kind == EngineKind::trtllm && !is_trtllm_engines(e.ref()) && e.graph_exact_sizes;
}

// How attention data-parallel ranks pad their forwards (docs/serving.md#rank-padding):
// - vLLM 0.9.1-0.16 (the vllm@0.10 and vllm@0.13 presets): every step, each rank's tokens padded
//   to its graph size, then to the largest over the ranks (GPUModelRunner.get_dp_padding, PR
//   #18724, May 2025: max_tokens_across_dp_cpu - num_tokens), eager steps too while graphs are
//   configured (allow_dp_padding = cudagraph_mode != NONE, PR #26375; with --enforce-eager none);
// - vLLM 0.17+ (the vllm preset follows it): only steps launched as graphs ("Only use DP padding
//   when cudagraphs are actually used", PR #34102, February 2026: should_dp_pad =
//   synced_cudagraph_mode != 0), to the graph size of the busiest rank's tokens;
// - SGLang: decode graphs (under --enable-dp-attention, cuda_graph_runner.py since PR #8280, July
//   2025: bisect_left(capture_bs, max(global_num_tokens_cpu))), and, graphs or none, an eager
//   step gathered as DpPaddingMode.MAX_LEN (ForwardBatch.prepare_mlp_sync_batch pads each rank's
//   inputs to max(global_num_tokens), _pad_inputs_to_size): no rank extending (prompts, mixed,
//   draft verification: SUM_LEN since PR #10414, September 2025) and sum_len * 2 >= max_len *
//   dp_size (`>=` from PR #20406, March 2026; `>` before);
// - TensorRT-LLM's PyTorch backend with padding on (_get_padded_batch: the largest batch over the
//   ranks, then its capture sizes): graph steps;
// - vLLM 0.8 ran no graphs under data parallelism (resolved_engine) and padded nothing; V0, SGLang
//   0.3 and the TensorRT engine flow have no attention data parallelism.
model::ForwardConfig::RankPad rank_padding(const EngineConfig& e) noexcept {
  using RankPad = model::ForwardConfig::RankPad;
  if (e.kind == EngineKind::sglang) return is_sglang_03(e.ref()) ? RankPad::none : RankPad::max_len;
  if (e.decode_graphs == GraphMode::eager && e.mixed_graphs == GraphMode::eager) return RankPad::none;
  switch (e.kind) {
    case EngineKind::vllm:
      if (is_vllm_v0(e.ref()) || e.version == 8) return RankPad::none;
      return e.version == 10 || e.version == 13 ? RankPad::always : RankPad::graphs;
    // (Padding off, its default: nothing pads, and unequal ranks run eagerly, step_graphs.)
    case EngineKind::trtllm: return is_trtllm_engines(e.ref()) || e.graph_exact_sizes ? RankPad::none : RankPad::graphs;
    default: return RankPad::none;
  }
}

model::ForwardConfig draft_forward(model::ForwardConfig f, bool mtp) noexcept {
  f.sampling = model::ForwardConfig::Sampling::greedy;
  // A draft model's layers run their all-reduces apart from their norms: TensorRT-LLM's rule
  // wants DeepSeek-V3 or a Llama wider than 4096, SGLang's list holds no draft (EAGLE heads,
  // small Llamas); the target's own MTP layers are its decoder layers, fused as it is.
  if (!mtp) f.allreduce_norm = false;
  return f;
}

model::ForwardConfig engine_forward(model::ForwardConfig f, const EngineConfig& e) noexcept {
  f.algo = e.collective_algo;
  f.custom_allreduce_max_bytes = e.custom_allreduce_max_bytes[f.tp <= 2 ? 0 : f.tp <= 4 ? 1 : 2];
  f.nccl_nvls = e.nccl_nvls;
  f.merged_kernels = e.merged_kernels;
  f.scaled_gemm = e.scaled_gemm;
  f.triton_moe_from_tp = e.triton_moe_from_tp;
  f.moe_a2a = e.moe_a2a;
  f.gathered_dense = e.gathered_dense;
  f.fused_qkv_a = e.fused_qkv_a;
  f.fuse_shared_experts = e.fuse_shared_experts;
  // (SGLang's auto rule wants no all-to-all backend: moe_a2a_backend == "none".)
  f.allreduce_norm = e.allreduce_norm && !(e.kind == EngineKind::sglang && e.moe_a2a == model::ForwardConfig::MoeA2A::deepep);
  f.allreduce_norm_max_tokens = static_cast<double>(e.allreduce_norm_max_tokens);
  f.pdl = e.pdl;
  f.sampler = e.sampler;
  f.draw = e.draw;
  f.eager_host_s = e.eager_host_s;
  f.compiled_host_s = e.compiled_host_s;
  f.graph_pad_sizes = e.graph_sizes.empty() ? nullptr : &e.graph_sizes;
  f.graph_pad_tokens = graphs_count_tokens(e);
  // TensorRT-LLM pads with its one dummy request repeated (_get_padded_batch:
  // generation_requests.extend([self.cuda_graph_dummy_request] * padding_size),
  // tensorrt_llm/_torch/pyexecutor/model_engine.py): the same token at the same position. vLLM
  // V0 pads a decode batch's tokens and positions with zeros (ModelInputForGPUBuilder.build:
  // input_tokens.extend(itertools.repeat(0, cuda_graph_pad_size))). V1 and SGLang leave their
  // buffers' other rows as they were: earlier tokens, routed like real ones.
  f.graph_pad_repeats = e.kind == EngineKind::trtllm || is_vllm_v0(e.ref());
  // SGLang's DeepEP path masks its padding rows after the router: forward_deepep passes
  // num_token_non_padded to its top-k, whose _mask_topk_ids_padded_region sets their ids to -1
  // (python/sglang/srt/layers/moe/topk.py; sgl-project/sglang PR #6175, May 2025, "Speed up when
  // having padding tokens in DeepEP"), so they are dispatched to no expert and computed by none;
  // its other MoE paths (forward_normal: the gathered rows of every rank, or TP attention's) pass
  // no count and route the padding. vLLM's and TensorRT-LLM's padding rows route as tokens.
  f.graph_pad_masked = e.mask_moe_padding && f.moe_a2a == model::ForwardConfig::MoeA2A::deepep && f.ep_size() > 1;
  f.rank_pad = rank_padding(e);
  // vLLM (V0 and V1) dequantises kv_b_proj at load for MLA's absorbed decode path
  // (MLACommonImpl.process_weights_after_loading: get_and_maybe_dequant_weights, W_UK_T and
  // W_UV in the activation dtype, torch.bmm); so does SGLang 0.4+ for 128x128 fp8 blocks on
  // CUDA (DeepseekV2ForCausalLM.post_load_weights, python/sglang/srt/models/deepseek_v2.py at
  // 00114ae: block_quant_dequant to the model's bf16, then torch.bmm; DeepGEMM's masked bmm of
  // PR #5432 only with SGL_USE_DEEPGEMM_BMM, off by default). sglang@0.3 and TensorRT-LLM
  // keep them fp8 (bmm_fp8 on a per-tensor requantisation; fp8_block_scaling_bmm).
  f.absorb_dequantised = e.kind == EngineKind::vllm || (e.kind == EngineKind::sglang && !is_sglang_03(e.ref()));
  // TensorRT-LLM's CUTLASS MoE expands the rows before its grouped GEMMs (runMoe:
  // expandInputRowsKernelLauncher, then BlockScaleFC1 on the permuted bf16 rows); its DEEPGEMM
  // backend, which runs fp8 blocks on Blackwell (EngineConfig::moe_backend), permutes the rows
  // before DeepGEMM's grouped GEMMs too (fused_moe_deepgemm.py), taken as the same copy.
  f.moe_expand_rows = e.kind == EngineKind::trtllm;
  // AITER's fused MoE on ROCm (its CK two-stage kernels: the activation in stage 1's epilogue,
  // the routed weights and the sum over k in stage 2's).
  f.moe_fused_epilogues = e.rocm_aiter;
  // Block-fp8 experts split by width there run, on gfx942, its one-stage kernel at its default
  // instance of 32-row tiles (ForwardConfig::expert_reread_tile, EngineConfig::aiter_moe_tile;
  // under attention data parallelism with the tokens gathered too, which the graph leaves to
  // gemm_expert_scaled): AITER's tuned tables hold no row of
  // DeepSeek-V3's experts split over a TP group on gfx942 (aiter/configs at e4048607a5: its fmoe
  // rows of 304 CUs and hidden 7168 are the EP-8 shape's, 33 of 7168 x 2048, PR #3951), and
  // fused_moe's default for fp8 in 1x128 groups past 32 tokens is the one-stage asm kernel of
  // BLOCK_SIZE_M 32 (get_2stage_cfgs; asm_fmoe.cu's heuristic: ..._1tg_ps_32x256). Below 33
  // tokens it runs CK's two-stage kernels of 16-row tiles, which no table times at 256 columns:
  // priced as this one, an assumption (docs/cost-model.md#one-stage-moe).
  f.expert_reread_tile = e.aiter_moe_tile;
  // And its MLA decode (aiter.mla.mla_decode_fwd: SGLang's aiter backend, vLLM's ROCM_AITER_MLA),
  // the persistent kernel and its reduce where the release runs them: the sglang preset (0.4+) as
  // SGLang's releases from 0.5.10 (ForwardConfig::mla_persistent), the vllm preset (0.14+) as
  // vLLM's from 0.19 (PR #36574; 0.14-0.18 ran the non-persistent kernel, which the preset does
  // not follow); not vllm@0.10 or vllm@0.13.
  f.aiter_mla = e.rocm_aiter;
  using Persistent = model::ForwardConfig::MlaPersistent;
  f.mla_persistent = !e.rocm_aiter                                     ? Persistent::off
                     : e.kind == EngineKind::sglang                    ? Persistent::fp8_cache_or_other_heads
                     : e.kind == EngineKind::vllm && e.version == 0    ? Persistent::from_16_heads
                                                                       : Persistent::off;
  // DeepSeek-V3's group-limited router after its GEMM (docs/serving.md#routing-kernels):
  // - vLLM 0.6-0.10 (to 0.10.1): torch's ops under torch.compile (vLLM's grouped_topk in
  //   fused_moe.py, its tests' vllm_compiled_grouped_topk), one op of routing_compiled; so
  //   sglang@0.3, whose torch route (biased_grouped_topk) SGLang ran until PR #5371 (DeepSeek-V3
  //   itself came after 0.3, with 0.4.1);
  // - vllm@0.13 (0.11-0.13) as 0.12-0.13: PR #23274's CUDA kernels (v0.10.2), topk_with_k2 and
  //   group_idx_and_topk_idx, with the sigmoid and bias inside since PR #28124 (November 2025;
  //   0.11.0 ran them as a Triton kernel and a cast besides, issue #28084's H200 trace);
  // - vllm (0.14+) as its newest releases: one fused kernel (PR #32058, v0.15.0; PR #34206,
  //   v0.17.0), where 0.14 still ran the pair;
  // - sglang (0.4+) as SGLang from PR #5371 (April 2025) on: moe_fused_gate (sgl-kernel, PR
  //   #4530), one kernel; the 0.4 releases before it ran the compiled ops;
  // - trtllm as TensorRT-LLM to 1.0: DeepseekV3Gate's sigmoid and bias add (priced as one
  //   kernel), then noaux_tc_op's two kernels (cpp/tensorrt_llm/kernels/noAuxTcKernels.cu, whose
  //   topk_with_k2 and group_idx_and_topk_idx vLLM ported); later releases fold all of it into
  //   one kernel (PR #7761, September 2025), which the preset does not follow;
  // - the static engine: one top-k kernel, as `infer` prices any router.
  using Routing = model::ForwardConfig::Routing;
  switch (e.kind) {
    case EngineKind::vllm: f.routing = e.version == 0 ? Routing::fused : e.version == 13 ? Routing::pair : Routing::compiled; break;
    case EngineKind::sglang: f.routing = is_sglang_03(e.ref()) ? Routing::compiled : Routing::fused; break;
    // (trtllm@0.15, the TensorRT engine flow: its MoE plugin's one top-k kernel, as any router.)
    case EngineKind::trtllm: f.routing = is_trtllm_engines(e.ref()) ? Routing::generic : Routing::scored_pair; break;
    default: f.routing = Routing::generic; break;
  }
  f.mla_op = e.mla_op;
  f.mla_op_host_s = e.mla_op_host_s;
  f.mla_op_call_host_s = e.mla_op_call_host_s;
  f.mla_pad_v = e.mla_pad_v;
  f.mxfp4_expert_align = e.mxfp4_expert_align;
  f.expert_tiles = e.expert_tiles;
  return f;
}

namespace {

// Most sizes a generated list holds: a largest graph that would need more (past some 30000
// sequences in steps of 8) stops short of it, its largest graph the list's last.
constexpr std::size_t kMaxCaptureSizes = 4096;

// Sizes from `from` in steps of `step` while below `until` and within `max`.
void capture_steps(std::vector<std::int64_t>& s, std::int64_t from, std::int64_t until, std::int64_t step, std::int64_t max) {
  for (std::int64_t i = from; i < until && i <= max && s.size() < kMaxCaptureSizes; i += step) s.push_back(i);
}

// The decode batch sizes an engine captures and pads to when no list is given, up to its
// largest graph (graph_max_batch), under speculative decoding of `spec_tokens` drafts; empty
// where it pads none (docs/serving.md#graph-padding).
std::vector<std::int64_t> default_capture_list(const EngineConfig& e, int spec_tokens) {
  std::vector<std::int64_t> s;
  const std::int64_t max = e.graph_max_batch;
  // Graphs a decode batch pads to: whole ones, or vLLM's piecewise ones (0.8-0.10).
  const bool captured = e.decode_graphs == GraphMode::graph || (e.kind == EngineKind::vllm && e.decode_graphs == GraphMode::piecewise);
  if (e.graph_exact_sizes || !captured || max <= 0) return s;
  switch (e.kind) {
    case EngineKind::trtllm: {
      // TensorRT-LLM's PyTorch backend with padding on: [1, 2, 4] and the multiples of 8 to 128,
      // the powers of two from 256 below the largest power of two within its largest batch, and
      // that batch (tensorrt_llm/llmapi/llm_args.py, _generate_cuda_graph_batch_sizes, as
      // TorchLlmArgs computes it from cuda_graph_max_batch_size with cuda_graph_padding_enabled,
      // 2025), a batch rounded up to the next ("If true, batches are rounded up to the nearest
      // cuda_graph_batch_size"). The TensorRT engine flow (0.15) pads none.
      if (is_trtllm_engines(e.ref())) return s;
      s = {1, 2, 4};
      capture_steps(s, 8, 129, 8, max);
      int floor_log2 = 0;
      while (floor_log2 < 62 && (std::int64_t{2} << floor_log2) <= max) ++floor_log2;
      for (int i = 8; i < floor_log2; ++i) s.push_back(std::int64_t{1} << i);
      while (!s.empty() && s.back() > max) s.pop_back();
      if (s.empty() || s.back() != max) s.push_back(max);
      return s;
    }
    case EngineKind::vllm:
      // V1 on a TPU (no graph_max_tokens) pads to XLA's own token buckets, not modelled: no list.
      if (!is_vllm_v0(e.ref()) && e.graph_max_tokens == 0) return s;
      s = {1, 2, 4};
      if (is_vllm_v0(e.ref()) || e.version == 8 || e.version == 10) {
        // V0 0.6 (worker/model_runner.py at v0.6.0: _BATCH_SIZES_TO_CAPTURE = [1, 2, 4] + [8 * i
        // for i in range(1, 1025)], captured up to the sequence limit padded, 256 by default;
        // _get_graph_batch_size pads a decode-only batch to the next) and V1 before 0.11.1
        // ([1, 2, 4] + range(8, 513, 8), vllm/config.py; any step's tokens padded, its graphs
        // piecewise): steps of 8.
        capture_steps(s, 8, max + 1, 8, max);
      } else {
        // V1 0.11.1+: [1, 2, 4] + range(8, 256, 8) + range(256, max + 1, 16) (vllm/config/vllm.py,
        // _set_cudagraph_sizes after PR #26016), a step's tokens padded to the next
        // (pad_for_cudagraph); 0.11.0's steps of 8 past 256 not followed.
        capture_steps(s, 8, 256, 8, max);
        capture_steps(s, 256, max + 1, 16, max);
      }
      break;
    case EngineKind::sglang:
      if (is_sglang_03(e.ref())) {
        // 0.3: [1, 2, 4] + [i * 8 for i in range(1, 21)] (ModelRunner.init_cuda_graphs,
        // model_runner.py at v0.3.0), a batch padded to the next (CudaGraphRunner.replay's bisect_left).
        s = {1, 2, 4};
        capture_steps(s, 8, max + 1, 8, max);
        break;
      }
      if (spec_tokens > 0) {
        // 2025-26 under speculative decoding ("less padding for smaller batch sizes", PR #15015): every
        // size to 8, steps of 2 from 10 to 32, of 4 from 40 to 64, of 8 from 72 to 256, of 16 from 272
        // (server_args.py, _generate_cuda_graph_batch_sizes' speculative branch: PRs #10372 and
        // #12002; its first form, to 160, PR #4908), up to
        // cuda_graph_max_bs; a graph holds a sequence's drafts (its tokens, bs x draft tokens).
        capture_steps(s, 1, 9, 1, max);
        capture_steps(s, 10, 33, 2, max);
        capture_steps(s, 40, 65, 4, max);
        capture_steps(s, 72, 257, 8, max);
        capture_steps(s, 272, max + 1, 16, max);
      } else {
        // 2025-26: [1, 2, 4, 8, 12], steps of 8 from 16 to 256, of 16 to 512, of 32 past it
        // (server_args.py, _generate_cuda_graph_batch_sizes), up to cuda_graph_max_bs.
        s = {1, 2, 4, 8, 12};
        capture_steps(s, 16, 257, 8, max);
        capture_steps(s, 272, 512, 16, max);
        capture_steps(s, 512, max + 1, 32, max);
      }
      // Either list, and cuda_graph_max_bs itself (PR #21005, 2026: "ensure generated cuda graph
      // batch sizes always include the configured cuda_graph_max_bs"), past the sizes above it.
      while (!s.empty() && s.back() > max) s.pop_back();
      if ((s.empty() || s.back() != max) && s.size() < kMaxCaptureSizes) s.push_back(max);
      break;
    default: return s;
  }
  while (!s.empty() && s.back() > max) s.pop_back();
  return s;
}

}  // namespace

// With no list given, the engine's own (default_capture_list). A list keeps only the sizes an
// engine captures within its limits: TensorRT-LLM none past its sequence limit or token budget
// (`_cuda_graph_batch_sizes`: bs <= max_num_tokens and bs <= batch_size,
// tensorrt_llm/_torch/pyexecutor/model_engine.py), vLLM none past its token budget (its graphs
// count tokens, up to twice the sequence limit), SGLang 0.4+ none past its request pool, whose
// size it captures instead (get_batch_sizes_to_capture); SGLang 0.3 its list whatever its
// limits. A batch past the largest left runs without a graph. vLLM's largest graph bounds its
// mixed steps' graphs too (graph_max_tokens).
void pad_graphs(EngineConfig& e, int spec_tokens) {
  if (e.graph_sizes.empty()) e.graph_sizes = default_capture_list(e, spec_tokens);
  const bool sglang_pool = e.kind == EngineKind::sglang && !is_sglang_03(e.ref());
  const bool seq_limit = e.kind == EngineKind::trtllm || sglang_pool;
  // vLLM V0 sizes its list from the sequence limit alone (a decode batch never passes the budget).
  const bool token_limit = e.kind == EngineKind::trtllm || (e.kind == EngineKind::vllm && !is_vllm_v0(e.ref()));
  const auto captured = [&](std::int64_t n) {
    return (!seq_limit || e.max_num_seqs <= 0 || n <= e.max_num_seqs) && (!token_limit || e.max_batched_tokens <= 0 || n <= e.max_batched_tokens);
  };
  bool cut = false;
  while (!e.graph_sizes.empty() && !captured(e.graph_sizes.back())) e.graph_sizes.pop_back(), cut = true;
  if (cut && sglang_pool && e.max_num_seqs > 0 && captured(e.max_num_seqs) &&
      (e.graph_sizes.empty() || e.graph_sizes.back() < e.max_num_seqs)) {
    e.graph_sizes.push_back(e.max_num_seqs);
  }
  // vLLM 0.11+ under speculative decoding, its decode steps whole graphs (FULL): each size rounded
  // up to a multiple of the uniform decode query, 1 + k tokens, those past the largest dropped, or
  // the query itself if none is left (CompilationConfig.adjust_cudagraph_sizes_for_spec_decode,
  // vllm/config/compilation.py, PR #28315, November 2025; not in PIECEWISE mode, 0.8-0.10). With
  // none, vLLM refuses to start ("No valid cudagraph sizes after rounding").
  const std::int64_t q = 1 + std::max(0, spec_tokens);
  if (e.kind == EngineKind::vllm && !is_vllm_v0(e.ref()) && e.decode_graphs == GraphMode::graph && q > 1 && !e.graph_sizes.empty()) {
    const std::int64_t largest = e.graph_sizes.back();
    std::vector<std::int64_t> rounded;
    for (const std::int64_t n : e.graph_sizes) {
      const std::int64_t up = (n + q - 1) / q * q;
      if (up <= largest && (rounded.empty() || rounded.back() != up)) rounded.push_back(up);
    }
    if (rounded.empty() && q <= largest) rounded.push_back(q);  // "if one valid but would be round_down use that"
    if (rounded.empty()) {
      throw InputError(fmt::format("--spec-tokens {}: vLLM rounds its CUDA-graph sizes to multiples of {} (1 + the draft tokens) and "
                                   "none is within its largest graph of {} tokens: raise --graph-max-batch or lower --spec-tokens",
                                   spec_tokens, q, largest));
    }
    e.graph_sizes = std::move(rounded);
    if (e.graph_capture_max == 0) e.graph_capture_max = largest;  // (a list rounded again keeps the first)
  }
  if (!e.graph_sizes.empty()) {
    e.graph_max_batch = e.graph_sizes.back();
    if (e.graph_max_tokens > 0) e.graph_max_tokens = e.graph_max_batch;
  }
}

// vLLM V1 pads a step's tokens (pad_for_cudagraph). V0 0.6.0 scores drafts by batch expansion
// (BatchExpansionTop1Scorer: a sequence with k drafts is k + 1 single-token rows of one decode
// batch, whose size _use_captured_graph compares with its largest graph; the MQA scorer of PR
// #8839 came after 0.6.0 and is off under CUDA graphs): its rows are the step's tokens too.
bool graphs_count_tokens(const EngineConfig& e) noexcept { return e.kind == EngineKind::vllm; }

GraphMode decode_step_graphs(const EngineConfig& e, double seqs, double tokens) noexcept {
  const double rows = graphs_count_tokens(e) ? tokens : seqs;
  if (rows > static_cast<double>(e.graph_max_batch)) return mixed_step_graphs(e, tokens);
  // Exact sizes only: 1-32, 64, 128 (TensorRT-LLM's default capture list).
  if (e.graph_exact_sizes && rows > 32 && rows != 64 && rows != 128) return e.mixed_graphs;
  return e.decode_graphs;
}

GraphMode mixed_step_graphs(const EngineConfig& e, double tokens) noexcept {
  if (e.graph_max_tokens > 0 && tokens > static_cast<double>(e.graph_max_tokens)) return GraphMode::eager;
  return e.mixed_graphs;
}

// vLLM V1 with no capture size given: SchedulerConfig's cuda_graph_sizes default of
// [min(max_num_seqs x 2, 512)] (PR #20628, July 2025: from 0.10), later
// max_cudagraph_capture_size = min(max_num_seqs x (1 + num_speculative_tokens) x 2, 512) in
// vllm/config/vllm.py (PR #30330, December 2025, in 0.13: the 0.11-0.13 preset follows 0.13
// here; quoted in issue #32324). Graphs are captured at the sizes of a list, [1, 2, 4] then
// steps of 8, and of 16 from 256 (PR #26016, October 2025: from 0.11.1; 0.11.0 kept steps of 8),
// and none past the token budget: the largest is the list's last entry within both (a size off the
// list is truncated to the one below, vLLM PR #37865: "300 -> 288").
//
// vLLM V0 0.6.0 (worker/model_runner.py at v0.6.0, _get_max_graph_batch_size): the sequence
// limit padded as a decode batch pads (_get_graph_batch_size: 1, 2, 4, then up to a multiple
// of 8), at most the list's last size, 8192: 256 at its default max_num_seqs.
void capture_from_seqs(EngineConfig& e, int spec_tokens) noexcept {
  if (!e.capture_follows_seqs || e.max_num_seqs <= 0) return;
  if (is_vllm_v0(e.ref())) {
    const std::int64_t n = e.max_num_seqs;
    e.graph_max_batch = n <= 2 ? n : n <= 4 ? 4 : std::min<std::int64_t>(kVllmV0LargestGraph, (n + 7) / 8 * 8);
    return;
  }
  const std::int64_t query = 1 + std::max(0, spec_tokens);
  std::int64_t n = std::min(kVllmLargestGraph, 2 * query * std::min(e.max_num_seqs, kVllmLargestGraph));
  if (e.max_batched_tokens > 0) n = std::min(n, e.max_batched_tokens);
  const std::int64_t size = n < 8                       ? (n >= 4 ? 4 : n >= 2 ? 2 : 1)
                            : n < 256 ? n / 8 * 8
                                      : 256 + (n - 256) / 16 * 16;
  e.graph_max_batch = size;
  if (e.graph_max_tokens > 0) e.graph_max_tokens = size;
}

void settle_draft_limits(EngineConfig& e, int spec_tokens) {
  if (!sglang_draft_rules(e.ref(), spec_tokens)) return;
  if (e.mixed_chunk) {
    e.mixed_chunk = false;
    e.sources += "; --enable-mixed-chunk off under speculative decoding (arg_groups/speculative_hook.py, every algorithm's handler)";
  }
  if (e.max_num_seqs > 0) return;  // (given, or already settled)
  e.max_num_seqs = draft_request_limit(e.ref(), e.max_num_seqs, spec_tokens);
  e.seqs_by_draft = true;
  e.sources += "; under speculative decoding max_running_requests 48 unless given (arg_groups/speculative_hook.py, every algorithm's "
               "handler; server_args.py from PR #4908)";
}

void settle_graphs(EngineConfig& e, int spec_tokens) {
  settle_draft_limits(e, spec_tokens);
  capture_from_seqs(e, spec_tokens);
  pad_graphs(e, spec_tokens);
}

}  // namespace ridgeline::serving
