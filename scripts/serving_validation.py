#!/usr/bin/env python3
"""The validation table of docs/serving.md#against-published-measurements: ridgeline's `serve`
beside published end-to-end serving measurements, the error of each prediction, and the errors
by class (engine, dtype, dense/MoE) that every answer's error band quotes.

The measurements are for checking only: nothing in ridgeline is fitted or tuned to them. Two
public data sets are kept out entirely, for independent validation: the measured samples of
ai-dynamo/aiconfigurator and the inference-sim project's vLLM measurements.

Usage:
  serving_validation.py [RIDGELINE]                    the markdown tables (docs/serving.md)
  serving_validation.py RIDGELINE --write FILE.json    and the error bands by class into FILE
  serving_validation.py RIDGELINE --check FILE.json    exit 1 when a class's median |error| of a
                                                       metric grew by more than 5 points over FILE's,
                                                       or FILE's pool order is not this script's
RIDGELINE defaults to build/dev/apps/ridgeline/ridgeline.
"""

import atexit
import concurrent.futures
import json
import math
import os
import random
import statistics
import subprocess
import sys
import tempfile

from bands import band, grown, vanished, write_json

MODE = next((a for a in sys.argv[1:] if a in ("--write", "--check")), None)
if MODE and sys.argv.index(MODE) + 1 >= len(sys.argv):
    sys.exit(f"serving_validation.py: {MODE} needs a FILE.json")
BAND_FILE = sys.argv[sys.argv.index(MODE) + 1] if MODE else None
ARGS = [a for a in sys.argv[1:] if not a.startswith("--") and a != BAND_FILE]
BIN = ARGS[0] if ARGS else "build/dev/apps/ridgeline/ridgeline"
TOLERANCE = 0.05  # --check: a class's median |error| may grow by 5 points

# Each set: where the numbers come from, the engine release measured and the preset run (the
# nearest one where that release is not modelled), and rows of (serve arguments, {metric:
# measured value in seconds or tokens/s}, label cells). Metrics: ttft, tpot, itl, e2e (the
# statistic named by `stat`: mean or p50) and output_tps (output tokens/s).
SETS = []


def add_set(key, title, source, release, engine, stat, rows, columns, dtype, moe=False, modelled=None):
    """`modelled`: None when a preset follows the release measured; else a short name of the release,
    whose rows get a class of their own ("vllm V0 (not modelled)") that no answer quotes."""
    SETS.append(dict(key=key, title=title, source=source, release=release, engine=engine, stat=stat, rows=rows,
                     columns=columns, dtype=dtype, moe=moe, unmodelled=modelled))


# 1. TensorRT-LLM v0.5 first-token latency at batch 1 (NVIDIA/TensorRT-LLM docs/source/performance.md,
#    release 0.5 tables; commit 138f96d): one prefill, no queue. FP8 rows: fp8 weights, activations and KV.
FP8 = ["--weight-dtype", "fp8", "--compute-dtype", "fp8", "--kv-dtype", "fp8"]
FP16 = ["--weight-dtype", "fp16", "--act-dtype", "fp16"]
add_set("trtllm-0.5-prefill", "Prefill of one request (TensorRT-LLM v0.5, batch 1)",
        "NVIDIA/TensorRT-LLM docs/source/performance.md (v0.5 low-latency tables, commit 138f96d): first-token latency",
        "TensorRT-LLM 0.5 (gptSessionBenchmark, static batch)", "static", "mean",
        [(["--model", m, "--hw", hw, "--tp", str(tp), *(FP8 if dt == "fp8" else FP16), "--concurrency", "1", "--requests", "1",
           "--prompt", str(isl), "--gen", "1"], {"ttft": ms / 1e3}, [m, hw, tp, dt, isl], "fp8" if dt == "fp8" else "16-bit")
         for m, hw, tp, dt, isl, ms in [
             ("llama-2-7b", "h100-sxm", 1, "fp8", 128, 7), ("llama-2-7b", "h100-sxm", 1, "fp8", 2048, 36),
             ("llama-2-70b", "h100-sxm", 4, "fp8", 128, 26), ("llama-2-70b", "h100-sxm", 4, "fp8", 2048, 109),
             ("llama-2-7b", "a100-80gb", 1, "fp16", 128, 16), ("llama-2-7b", "a100-80gb", 1, "fp16", 2048, 133),
             ("llama-2-70b", "a100-80gb", 4, "fp16", 128, 47), ("llama-2-70b", "a100-80gb", 4, "fp16", 2048, 377)]],
        ["model", "GPU", "TP", "dtype", "prompt"], None)

# 2. vLLM's nightly CI latency test: batch 8, 32 prompt tokens, 128 output tokens, mean E2E
#    (benchmark_latency.py; Buildkite performance-benchmark builds 9555, 9515, 9523, autumn 2024).
#    The V0 engine (vllm@0.6). benchmark_latency.py times the offline LLM class's generate(): no
#    server, so no front end (--front-end 0). Its test file (.buildkite/nightly-benchmarks/tests/
#    latency-tests.json, the copy read at commit d5ce924) gives the model, TP, dummy weights and 5 + 15
#    iterations and no num_scheduler_steps: the default, 1. Which copy of that file the autumn-2024
#    builds ran, and the exact vLLM release of each build, are not verified. Its SamplingParams sample at
#    temperature 1.0 with top_p 1.0: nothing cut (--sampling random, docs/serving.md#sampling).
add_set("vllm-ci-latency", "Batch of 8 requests, 32 in / 128 out (vLLM nightly CI, autumn 2024)",
        "vLLM performance-benchmark CI, Buildkite builds 9555 (H100), 9515 (H200), 9523 (A100): benchmark_latency.py, mean of 15 iterations",
        "vLLM V0 of autumn 2024 (the vllm@0.6 preset; offline LLM class, one step per scheduler call)", "vllm@0.6", "mean",
        [(["--model", m, "--hw", hw, "--tp", str(tp), "--concurrency", "8", "--requests", "8", "--prompt", "32", "--gen", "128",
           "--front-end", "0 s", "--sampling", "random"],
          {"e2e": ms / 1e3}, [m, hw, tp], "16-bit")
         for m, hw, tp, ms in [("llama-3.1-8b", "h100-sxm", 1, 997.542), ("llama-3.1-70b", "h100-sxm", 4, 2444.47),
                               ("llama-3.1-8b", "h200", 1, 833.421), ("llama-3.1-70b", "h200", 4, 2077.53),
                               ("llama-3.1-8b", "a100-80gb", 1, 1579.27), ("llama-3.1-70b", "a100-80gb", 4, 3990.59)]],
        ["model", "GPU", "TP"], None)

# 3. NVIDIA NIM 1.8.0 (TensorRT-LLM inside), Llama-3.3-70B-Instruct FP8 on 2 x H100 at TP 2, 5000 in /
#    500 out, closed loop (docs.nvidia.com/nim/benchmarking/llm/1.0.0/performance): mean TTFT, mean ITL, tok/s.
#    Measured by genai-perf, whose perf_analyzer keeps the load on and measures it in time windows
#    (--measurement-interval in NVIDIA's NIM benchmarking commands, no request count) until they agree:
#    a load already running, as the continuous warm-up (--warmup-drain off) leaves it.
#    NIM runs TensorRT-LLM engines under the C++ executor, its TensorRT-LLM's release not stated: the
#    nearest preset is the TensorRT engine flow's (trtllm@0.15), and its rows keep a class of their own.
add_set("nim-1.8-70b-fp8", "Closed loop, 5000 in / 500 out, 70B FP8 on 2 x H100 TP 2 (NVIDIA NIM 1.8.0, TensorRT-LLM)",
        "docs.nvidia.com/nim/benchmarking/llm/1.0.0/performance: Llama-3.3-70B-Instruct FP8, 2 x H100 80GB, TP 2",
        "NIM 1.8.0 (TensorRT-LLM engines, its release not stated: the TensorRT engine flow's preset)", "trtllm@0.15", "mean",
        [(["--model", "llama-3.1-70b", "--hw", "h100-sxm", "--tp", "2", *FP8, "--concurrency", str(c),
           "--requests", str(max(60, 6 * c)), "--warmup-requests", str(c), "--prompt", "5000", "--gen", "500"],
          {"ttft": ttft / 1e3, "itl": itl / 1e3, "output_tps": tps}, [c], "fp8")
         for c, ttft, itl, tps in [(1, 406.77, 18.58, 51.67), (5, 546.7, 21.83, 218.48), (25, 688.69, 38.75, 623.4),
                                   (50, 834.51, 59.73, 814.37), (100, 7996.25, 92.91, 917.26), (150, 34794.22, 92.86, 920.9),
                                   (200, 61680.22, 93.06, 920.54), (250, 88605.32, 93.2, 920.12)]],
        ["clients"], None, modelled="NIM 1.8")

# 4. SGLang v0.3.0 and vLLM v0.6.0 on ShareGPT, Poisson arrivals (sgl-project/sglang
#    benchmark/benchmark_vllm_060/README.md, commit 120affb): medians of `--num-prompts 1200 --request-rate 4`
#    and `--num-prompts 2400 --request-rate 8`, every request measured from an idle server. ShareGPT's lengths are modelled
#    as lognormal with sigma 1 (assumed), drawn as the client keeps ShareGPT's conversations: prompt and
#    output of at least 4 tokens, prompt at most 1024 and the two at most 2048 (sglang.bench_serving's
#    sample_sharegpt_requests, as vLLM's benchmark_serving). The means of the kept pairs are those of the
#    client's own sample: sglang.bench_serving shuffles the dataset with its fixed seed (--seed 1,
#    random.seed(args.seed), unchanged from v0.3.0 to v0.3.2) and keeps pairs in order, so 5000 prompts
#    are the same 5000 whatever the server. sgl-project/sglang issue #1505 (2024-09-24, v0.3.1.post3's
#    client, --num-prompts 5000, a Llama-3.1-8B tokenizer) prints them: "Total input tokens: 1130466",
#    "Total generated tokens: 971613" (the completions' lengths: ignore_eos is the client's default),
#    226.09 and 194.32 a request. The README's offline rows agree on the output: output tokens/s over
#    requests/s, 4281.51 / 22.03 = 194.35 and 4132.37 / 21.27 = 194.28 (8B), 3856.01 / 19.84 = 194.36
#    and 3700.64 / 19.04 = 194.36 (70B). (Earlier this took the vLLM v0.6.0 blog's 202 for the input:
#    another client's 500 prompts at another seed.) The pairs go to serve as a trace whose arrivals
#    --qps replaces.
def sharegpt_trace(n, prompt_mean=1130466 / 5000, gen_mean=971613 / 5000, sigma=1.0, seed=20240905):
    """A CSV trace of n (prompt, output) pairs: lognormal(sigma) lengths rounded as serve rounds them,
    kept as the client keeps ShareGPT's, the two lognormals' means set so that the kept pairs' means are
    prompt_mean and gen_mean (a fixed point over 100000 kept pairs). Returns its path."""
    def draw(rng, mean):
        return max(1, round(math.exp(math.log(mean) - sigma * sigma / 2 + sigma * rng.gauss(0, 1))))

    def kept(a_p, a_g, count, rng):
        out = []
        while len(out) < count:
            p, g = draw(rng, a_p), draw(rng, a_g)
            if 4 <= p <= 1024 and g >= 4 and p + g <= 2048:
                out.append((p, g))
        return out

    a_p, a_g = float(prompt_mean), float(gen_mean)
    for _ in range(5):
        pairs = kept(a_p, a_g, 100000, random.Random(seed))
        a_p *= prompt_mean / statistics.fmean(p for p, _ in pairs)
        a_g *= gen_mean / statistics.fmean(g for _, g in pairs)
    fd, path = tempfile.mkstemp(prefix="sharegpt-", suffix=".csv")
    atexit.register(os.remove, path)
    with os.fdopen(fd, "w") as f:
        f.write("timestamp_s,input_tokens,output_tokens\n")
        for i, (p, g) in enumerate(kept(a_p, a_g, n, random.Random(seed + 1))):
            f.write(f"{i},{p},{g}\n")
    return path


SHAREGPT = ["--trace", sharegpt_trace(5000)]
# vLLM's launch flags in that README: --num-scheduler-steps 10 --max_model_len 4096, so (no chunked prefill)
# max_num_batched_tokens = max(4096, 2048) = 4096.
V060 = ["--num-scheduler-steps", "10", "--max-batched-tokens", "4096"]
# SGLang's launch flags there: --disable-radix-cache (both models; no prefix of these prompts is shared anyway).
SG030 = ["--prefix-caching", "off"]
# The median ITL of SGLang's rows (its table's last column) is the gap between two tokens of a stream: one
# decode step, where TPOT also spreads the prefill steps between them. vLLM's with 10 steps a scheduler call
# is a window of ten (its tokens reach the client together), which the simulator's per-step ITL is not: left
# out. SGLang's 8B runs were launched with --enable-torch-compile (its decode steps of up to 32 sequences
# compiled: fewer, fused small kernels), which no preset models: it makes the measured steps faster.
for eng, release, preset, runs in [
        ("sglang", "SGLang 0.3.0 (overlap scheduler opt-in)", "sglang@0.3",
         [("llama-3.1-8b", "a100-80gb", 1, 4, 1564, 32, 13.2, 11.93), ("llama-3.1-8b", "a100-80gb", 1, 8, 2175, 36, 17.9, 14.41),
          ("llama-3.1-70b", "h100-sxm", 4, 4, 3005, 54, 25.0, 21.67), ("llama-3.1-70b", "h100-sxm", 4, 8, 4065, 58, 33.1, 24.45)]),
        ("vllm", "vLLM 0.6.0 (V0, multi-step scheduling of 10, max_model_len 4096)", "vllm@0.6",
         [("llama-3.1-8b", "a100-80gb", 1, 4, 1692, 100, 14.1, None), ("llama-3.1-70b", "h100-sxm", 4, 4, 2916, 179, 23.6, None),
          ("llama-3.1-8b", "a100-80gb", 1, 8, 2137.16, 120.39, 17.09, None),
          ("llama-3.1-70b", "h100-sxm", 4, 8, 3752.38, 207.12, 29.15, None)])]:
    add_set(f"sharegpt-{eng}", f"ShareGPT at 4 and 8 requests/s ({release.split(' (')[0]}; medians)",
            "sgl-project/sglang benchmark/benchmark_vllm_060/README.md (commit 120affb): medians of sglang.bench_serving on ShareGPT, Poisson",
            release, preset, "p50",
            [(["--model", m, "--hw", hw, "--tp", str(tp), "--qps", str(q), "--requests", str(300 * q), *SHAREGPT,
               *(V060 if eng == "vllm" else SG030)],
              {"e2e": e2e / 1e3, "ttft": ttft / 1e3, "tpot": tpot / 1e3, **({"itl": itl / 1e3} if itl else {})},
              [m, hw, tp, q], "16-bit")
             for m, hw, tp, q, e2e, ttft, tpot, itl in runs],
            ["model", "GPU", "TP", "req/s"], None)

# 4b. The same README's offline runs: 5000 ShareGPT prompts sent at once (request rate inf), output tokens/s.
#     SGLang's memory fraction was 0.88 at both TP 1 (its default there) and TP 4 (set by hand: --mem-frac 0.88);
#     vLLM kept its default 0.9.
for eng, release, preset, flags, runs in [
        ("sglang", "SGLang 0.3.0 (overlap scheduler opt-in)", "sglang@0.3", ["--kv-memory-fraction", "0.88", *SG030],
         [("llama-3.1-8b", "a100-80gb", 1, 4281.51), ("llama-3.1-70b", "h100-sxm", 4, 3856.01)]),
        ("vllm", "vLLM 0.6.0 (V0, multi-step scheduling of 10, max_model_len 4096)", "vllm@0.6", V060,
         [("llama-3.1-8b", "a100-80gb", 1, 4132.37), ("llama-3.1-70b", "h100-sxm", 4, 3700.64)])]:
    add_set(f"sharegpt-offline-{eng}", f"Every ShareGPT prompt at once, 5000 requests ({release.split(' (')[0]}; output tokens/s)",
            "sgl-project/sglang benchmark/benchmark_vllm_060/README.md (commit 120affb), offline benchmark results: "
            "sglang.bench_serving on ShareGPT, 5000 prompts, request rate inf", release, preset, "mean",
            [(["--model", m, "--hw", hw, "--tp", str(tp), "--qps", "1e6", "--arrival", "constant", "--requests", "5000",
               *SHAREGPT, *flags], {"output_tps": tps}, [m, hw, tp], "16-bit") for m, hw, tp, tps in runs],
            ["model", "GPU", "TP"], None)

# 5. TensorRT-LLM 0.14.0 behind Triton's tensorrtllm_backend, BF16, 500 requests at each rate (NVIDIA/TensorRT-LLM
#    docs/source/performance/perf-overview.md "Online Serving Measurements", commit 258c754): mean TTFT and ITL.
#    Lengths 467 in / 256 and 16 out taken as fixed (the vLLM nightly sonnet datasets' means; fixed or not is not
#    stated), Poisson arrivals at the rate (not stated). The saturated rates (32, INF) are left out: the engine's
#    build limits (max_batch_size, max_num_tokens) are not published.
T14 = []
for m, hw, tp, gen, rows in [
        ("llama-3.1-70b", "h100-sxm", 4, 256, [(2, 62, 21), (4, 68, 24), (8, 92, 32), (16, 175, 66)]),
        ("llama-3.1-70b", "h100-sxm", 4, 16, [(2, 53, 18), (4, 58, 20), (8, 71, 24), (16, 109, 38)]),
        ("llama-3.1-8b", "h100-sxm", 1, 256, [(2, 23, 8), (4, 24, 9), (8, 26, 9), (16, 30, 11)]),
        ("llama-3.1-8b", "h100-sxm", 1, 16, [(2, 19, 7), (4, 20, 7), (8, 22, 7), (16, 24, 8)]),
        ("llama-3.1-70b", "h200", 4, 256, [(2, 58, 18), (4, 63, 20), (8, 84, 27), (16, 165, 60)]),
        ("llama-3.1-70b", "h200", 4, 16, [(2, 50, 15), (4, 55, 16), (8, 67, 20), (16, 103, 33)]),
        ("llama-3.1-8b", "h200", 1, 256, [(2, 21, 6), (4, 23, 7), (8, 24, 7), (16, 27, 9)]),
        ("llama-3.1-8b", "h200", 1, 16, [(2, 18, 5), (4, 19, 6), (8, 20, 6), (16, 22, 7)])]:
    for q, ttft, itl in rows:
        T14.append((["--model", m, "--hw", hw, "--tp", str(tp), "--qps", str(q), "--requests", "500", "--prompt", "467",
                     "--gen", str(gen)], {"ttft": ttft / 1e3, "itl": itl / 1e3}, [m, hw, tp, gen, q], "16-bit"))
add_set("trtllm-0.14-online", "Request rates 2-16/s, 467 in (TensorRT-LLM 0.14 behind Triton, BF16; means)",
        "NVIDIA/TensorRT-LLM docs/source/performance/perf-overview.md, 'Online Serving Measurements' (commit 258c754): version 0.14.0, 500 requests, BF16",
        "TensorRT-LLM 0.14 (the TensorRT engine flow under the C++ executor: the trtllm@0.15 preset, 0.9-0.15)", "trtllm@0.14", "mean", T14,
        ["model", "GPU", "TP", "gen", "req/s"], None)

# 6. vLLM v0.19.1 on one H100 with FlashAttention-3 (vllm-project/vllm-project.github.io _posts/2026-04-22-fp8-kvcache.md,
#    commit 5ffe2dd): 150 requests at concurrency 8 of ~20k in / ~2k out (±15%), medians; and one request at a time, 128
#    out, whose ITL the post fits as a line in the input length (Llama-3.1-8B: 4.37e-5 ms a token + 6.44 ms in bf16 KV,
#    2.37e-5 + 6.58 in fp8): the line's values at 1000, 10000 and 50000 tokens.
V19 = []
for kv, ttft, itl in [("bf16", 763.6, 15.18), ("fp8", 742.8, 12.93)]:
    V19.append((["--model", "llama-3.1-8b", "--hw", "h100-sxm", "--kv-dtype", kv, "--concurrency", "8", "--requests", "150",
                 "--prompt", "uniform:17000,23000", "--gen", "uniform:1700,2300"], {"ttft": ttft / 1e3, "itl": itl / 1e3},
                [f"8 clients, ~20k/~2k, KV {kv}"], "16-bit"))
for kv, slope, icpt in [("bf16", 4.37e-5, 6.44), ("fp8", 2.37e-5, 6.58)]:
    for isl in (1000, 10000, 50000):
        V19.append((["--model", "llama-3.1-8b", "--hw", "h100-sxm", "--kv-dtype", kv, "--concurrency", "1", "--requests", "3",
                     "--prompt", str(isl), "--gen", "128"], {"itl": (slope * isl + icpt) / 1e3},
                    [f"1 client, {isl} in, KV {kv}"], "16-bit"))
add_set("vllm-0.19-h100", "One H100, Llama-3.1-8B (vLLM v0.19.1, FlashAttention-3; medians, and the post's fitted ITL line)",
        "vllm-project/vllm-project.github.io _posts/2026-04-22-fp8-kvcache.md (commit 5ffe2dd), tables 3-5 and the fitted lines",
        "vLLM 0.19.1", "vllm", "p50", V19, ["run"], None)


# 8. TensorRT-LLM 0.20 with its PyTorch backend, every request at once, fixed lengths, output tokens/s (NVIDIA/TensorRT-LLM
#    docs/source/performance/perf-overview.md, v0.20: trtllm-bench throughput --backend pytorch, CUDA graphs padded to sizes
#    up to 8192, kv_cache_free_gpu_mem_fraction 0.95 "in the majority of cases"; ModelOpt fp8 (W8A8, fp8 KV) and nvfp4
#    checkpoints). max_batch_size and max_num_tokens: trtllm-bench's own heuristic (trtllm_bench_sizes, below).
#    "The data collected for the v0.20 benchmarks was run with the following file": llm_options.yml, use_cuda_graph true,
#    cuda_graph_padding_enabled true and these cuda_graph_batch_sizes, each decode batch rounded up to the next.
V20_GRAPHS = "1,2,4,8,16,32,64,128,256,384,512,1024,2048,4096,8192"


def trtllm_bench_sizes(model, hw, tp, dtype, isl, osl, kv_fraction=0.95):
    """trtllm-bench's max_batch_size and max_num_tokens for a throughput run (tensorrt_llm/bench/build/tuning.py,
    calc_engine_setting and finetune_setting): the KV cache's requests of isl + osl tokens in what the checkpoint's
    bytes leave of the GPUs' memory (GiB, as torch reports it: the catalog's nvidia-smi figures), rounded up. The
    checkpoint's parameter count is its safetensors elements (get_param_count): an fp8 checkpoint's are the model's
    parameters; NVFP4 packs two weights in a uint8 element beside an fp8 scale a 16, the embedding and LM head bf16."""
    # (linear-layer weights, the rest), Llama-3.1's configs: 32 x 4096 x 53248 and 80 x 8192 x 104448; the
    # embedding and LM head 2 x 128256 x hidden, the norms (2 x layers + 1) x hidden.
    linear, rest, layers = {"llama-3.1-8b": (6979321856, 1050673152 + 266240, 32),
                            "llama-3.1-70b": (68451041280, 2101346304 + 1318912, 80)}[model]
    params = linear + rest if dtype == "fp8" else linear / 2 + linear / 16 + rest
    byte_per_elem = {"fp8": 1.0, "fp4": 0.5}[dtype]
    gib = 1024 ** 3
    device_gib = {"h100-sxm": 81559, "h200": 143771, "b200": 183359}[hw] / 1024  # MiB
    byte_per_token = 2 * layers * max(tp, 8) * 128 * 1.0 / gib  # fp8 KV
    cache = (device_gib * tp - params * byte_per_elem / gib) * kv_fraction
    requests = cache / (byte_per_token * (isl + osl))
    raw_bs = min(requests, 4096)
    raw_token = min(raw_bs * (1 + isl / osl), 32768)

    def round_up(x, bands, least):
        # x up to a multiple of the step of the first band it is under, at least `least`.
        step = next(step for limit, step in bands if x < limit)
        return max(least, step * math.ceil(x / step))

    return (round_up(raw_bs, [(256, 32), (1024, 128), (math.inf, 256)], 64),
            round_up(raw_token, [(4096, 256), (8192, 512), (math.inf, 1024)], 2048))


# TensorRT-LLM's early PyTorch-backend releases launched its kernels with programmatic dependent launch only when
# asked (TRTLLM_ENABLE_PDL=1: an early getEnvEnablePDL read it as opt-in, and the DeepSeek guide,
# examples/models/core/deepseek_v3/README.md, exports it by hand); 1.2.0 runs with it on (NVIDIA/TensorRT-LLM issue
# #16330). These releases' rows (0.20, 0.21, April 2025's main) run the trtllm@1.1 preset (0.19-1.1), PDL off; the
# trtllm preset follows 1.2+ (docs/cost-model.md#pdl). No run here set the variable.
T20 = []
for m, hw, tp, dt, isl, osl, n, tps in [
        ("llama-3.1-8b", "h100-sxm", 1, "fp8", 128, 2048, 3000, 21841.15), ("llama-3.1-8b", "h200", 1, "fp8", 128, 2048, 3000, 23326.38),
        ("llama-3.1-8b", "h100-sxm", 1, "fp8", 1000, 1000, 3000, 15270.62), ("llama-3.1-8b", "h200", 1, "fp8", 1000, 1000, 3000, 17366.89),
        ("llama-3.1-8b", "h100-sxm", 1, "fp8", 2048, 128, 3000, 3414.67), ("llama-3.1-8b", "h200", 1, "fp8", 2048, 128, 3000, 3488.03),
        ("llama-3.1-8b", "h100-sxm", 1, "fp8", 5000, 500, 1500, 3394.54), ("llama-3.1-8b", "h200", 1, "fp8", 5000, 500, 1500, 3813.69),
        ("llama-3.1-70b", "h100-sxm", 2, "fp8", 128, 2048, 3000, 5782.57), ("llama-3.1-70b", "h100-sxm", 4, "fp8", 128, 2048, 3000, 11464.94),
        ("llama-3.1-70b", "h200", 2, "fp8", 128, 2048, 3000, 8464.03), ("llama-3.1-70b", "h200", 4, "fp8", 128, 2048, 3000, 13508.59),
        ("llama-3.1-70b", "b200", 1, "fp4", 128, 2048, 3000, 9580.46), ("llama-3.1-70b", "b200", 2, "fp4", 128, 2048, 3000, 15432.35),
        ("llama-3.1-70b", "b200", 1, "fp4", 1000, 1000, 3000, 6752.53), ("llama-3.1-70b", "b200", 2, "fp4", 1000, 1000, 3000, 10815.88)]:
    # Without chunked prefill (the 0.20 default) trtllm-bench raises the budget to hold the longest prompt and
    # a token for every sequence: max(heuristic, max_isl + max_batch_size) (tensorrt_llm/bench/benchmark/utils/
    # general.py, get_settings).
    # 0.20's LlamaDecoderLayer ran each all-reduce apart from the norm after it: TensorRT-LLM fused them for Llama 3
    # from PR #6205 (2025-07-20), after 0.20 (docs/serving.md#allreduce-norm).
    bs, tokens = trtllm_bench_sizes(m, hw, tp, dt, isl, osl)
    tokens = max(tokens, isl + bs)
    T20.append((["--model", m, "--hw", hw, "--tp", str(tp), "--weight-dtype", dt, "--kv-dtype", "fp8", "--kv-memory-fraction", "0.95",
                 "--max-num-seqs", str(bs), "--max-batched-tokens", str(tokens), "--graph-sizes", V20_GRAPHS, "--qps", "1e6", "--arrival", "constant", "--requests", str(n),
                 "--prompt", str(isl), "--gen", str(osl), "--allreduce-fusion", "off"], {"output_tps": tps}, [m, hw, tp, dt, f"{isl}/{osl}"], dt))
add_set("trtllm-0.20-throughput", "Every request at once, fixed lengths (TensorRT-LLM 0.20, PyTorch backend; output tokens/s)",
        "NVIDIA/TensorRT-LLM docs/source/performance/perf-overview.md (v0.20 version): trtllm-bench throughput, total output tokens/s",
        "TensorRT-LLM 0.20 (PyTorch backend: the trtllm@1.1 preset)", "trtllm@1.1", "mean", T20, ["model", "GPU", "TP", "dtype", "in/out"], None)

# 7. DeepSeek-R1 (fp8 block-scaled MoE with MLA) on 8 x H200, vLLM 0.8.4 at TP 8 without prefix caching, 50 requests
#    of fixed lengths at 10 requests/s Poisson (simon-mo/vLLM-Benchmark @d538cdc, saved-results/v0.8.4/deepseek-r1/h200/
#    2025-04-18, the DGX H200 runs; benchmark_serving.py): mean TTFT and TPOT. DeepSeek-V3's config is R1's architecture.
#    The ShareGPT scenario: 500 requests at 10 requests/s of the lengths the files record (input_lens and
#    output_lens, the same in every run: benchmark_serving.py --dataset-name sharegpt --ignore-eos, seed 0),
#    kept in data/validation/vllm-benchmark-sharegpt-500.csv and replayed as a trace whose arrivals --qps sets.
SHAREGPT_R1 = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "data", "validation",
                           "vllm-benchmark-sharegpt-500.csv")


def dgx_h200_deepseek(flags, isl, osl, measured, cells=()):
    """A row of that DGX H200's DeepSeek-R1 runs (or another node's, the same benchmark): 50 requests of isl/osl
    tokens (or, isl "sharegpt", the 500 ShareGPT requests) at 10 requests/s, TP 8 and the engine's own `flags`;
    its label cells are `cells` and the lengths."""
    load = ["--trace", SHAREGPT_R1] if isl == "sharegpt" else ["--requests", "50", "--prompt", str(isl), "--gen", str(osl)]
    return (["--model", "deepseek-v3", "--hw", "h200", "--tp", "8", *flags, "--qps", "10", *load], measured,
            [*cells, "sharegpt" if isl == "sharegpt" else f"{isl}/{osl}"], "fp8")


def means(ttft_ms, tpot_ms, tps):
    """A row's measured means: TTFT and TPOT (ms), output tokens/s (the files' output_throughput: the output
    tokens over the run's duration, first request sent to last token received, as the README tables give it)."""
    return {"ttft": ttft_ms / 1e3, "tpot": tpot_ms / 1e3, "output_tps": tps}


DSR = [dgx_h200_deepseek(["--prefix-caching", "off"], isl, osl, means(*m))
       for isl, osl, *m in [(1000, 2000, 309.02, 42.14, 1145.36), (5000, 1000, 5828.09, 50.14, 853.46),
                            (10000, 500, 14937.28, 75.74, 446.90), ("sharegpt", None, 125.43, 61.23, 1380.59)]]
add_set("vllm-0.8-deepseek-r1", "DeepSeek-R1 on 8 x H200 at 10 requests/s (vLLM 0.8.4, TP 8; means)",
        "simon-mo/vLLM-Benchmark (commit d538cdc), saved-results/v0.8.4/deepseek-r1/h200/2025-04-18 (DGX H200): "
        "benchmark_serving.py, 50 requests of fixed lengths, 500 of ShareGPT",
        "vLLM 0.8.4 (V1)", "vllm@0.8", "mean", DSR, ["in/out"], None, moe=True)

# 8. The same runs with --enable-expert-parallel (the repository's README: 'vLLM_EP'): attention stays
#    tensor-parallel over the 8 GPUs, each holds 32 whole experts (--experts ep), files vllm-*-ep.json.
DSR_EP = [dgx_h200_deepseek(["--experts", "ep", "--prefix-caching", "off"], isl, osl, means(*m))
          for isl, osl, *m in [(1000, 2000, 670.63, 44.47, 1086.94), (5000, 1000, 7486.11, 52.89, 793.69),
                               (10000, 500, 18228.38, 83.56, 395.92), ("sharegpt", None, 133.89, 62.20, 1375.64)]]
add_set("vllm-0.8-deepseek-r1-ep", "DeepSeek-R1 on 8 x H200 at 10 requests/s, experts over the GPUs (vLLM 0.8.4, TP 8, EP 8; means)",
        "simon-mo/vLLM-Benchmark (commit d538cdc), saved-results/v0.8.4/deepseek-r1/h200/2025-04-18 (DGX H200), the -ep files: "
        "vllm serve --enable-expert-parallel, benchmark_serving.py, 50 requests of fixed lengths, 500 of ShareGPT",
        "vLLM 0.8.4 (V1)", "vllm@0.8", "mean", DSR_EP, ["in/out"], None, moe=True)

# 8b. The same software and benchmark on a second node the same day: Nebius's 8 x H200 (saved-results/v0.8.4/
#     deepseek-r1/nebius-h200/2025-04-18, both layouts; the README's table 'Nebius H200 (CPU Xeon 8468)' gives
#     the same output tokens/s). Its host CPU (Xeon 8468) clocks higher than the DGX's (Xeon 8480C); the
#     repository's LOG.md (04/18/2025) traced SGLang's numbers not reproducing between the two nodes to that
#     CPU. These files keep the summary statistics, not every request's gaps.
DSR_NEBIUS = [dgx_h200_deepseek([*(["--experts", "ep"] if ep else []), "--prefix-caching", "off"], isl, osl, means(*m),
                                ["EP 8" if ep else "TP 8"])
              for ep, isl, osl, *m in [
                  (False, 1000, 2000, 1524.56, 31.44, 1500.11), (False, 5000, 1000, 5653.73, 39.40, 1049.73),
                  (False, 10000, 500, 14617.88, 65.15, 497.91), (False, "sharegpt", None, 136.70, 49.11, 1512.76),
                  (True, 1000, 2000, 722.96, 34.90, 1372.98), (True, 5000, 1000, 10479.91, 47.15, 830.49),
                  (True, 10000, 500, 24110.99, 86.06, 356.38), (True, "sharegpt", None, 135.15, 54.04, 1487.22)]]
add_set("vllm-0.8-deepseek-r1-nebius", "DeepSeek-R1 on Nebius's 8 x H200 at 10 requests/s (vLLM 0.8.4, TP 8 and EP 8; means)",
        "simon-mo/vLLM-Benchmark (commit d538cdc), saved-results/v0.8.4/deepseek-r1/nebius-h200/2025-04-18: benchmark_serving.py, "
        "50 requests of fixed lengths, 500 of ShareGPT; the same benchmark as the DGX H200's",
        "vLLM 0.8.4 (V1)", "vllm@0.8", "mean", DSR_NEBIUS, ["experts", "in/out"], None, moe=True)

# 9. TensorRT-LLM on the same DGX H200 that day: its main branch built from source on 2025-04-18
#    (the PyTorch backend; the repository's trt-guide.md): trtllm-serve --backend pytorch --tp_size 8
#    --ep_size 8 --max_num_tokens 11000 --kv_cache_free_gpu_memory_fraction 0.80, the overlap scheduler
#    and CUDA graphs of up to 256 sequences, padded (cuda_graph_padding_enabled); block reuse could not be
#    turned off (random prompts share no block). TPOT only: each scenario ran on a freshly started server
#    (to clear the cache), and its first steps are slower than any later one (1000/2000: a step of 2.4 s
#    where the prompts' steps later take 0.15-0.6 s), which the TTFTs of the first requests and the queue
#    behind them hold.
#    Its ShareGPT run is left out too (mean TPOT 131.7 ms, against 28.7-66.6 ms in the fixed-length runs; not
#    read further).
DSR_TRT = [dgx_h200_deepseek(["--experts", "ep", "--max-batched-tokens", "11000", "--kv-memory-fraction", "0.8", "--graph-max-batch",
                              "256", "--graph-padding", "on"], isl, osl, {"tpot": tpot / 1e3})
           for isl, osl, tpot in [(1000, 2000, 28.70), (5000, 1000, 38.59), (10000, 500, 66.64)]]
add_set("trtllm-deepseek-r1", "DeepSeek-R1 on 8 x H200 at 10 requests/s (TensorRT-LLM, April 2025, PyTorch backend, TP 8, EP 8; means)",
        "simon-mo/vLLM-Benchmark (commit d538cdc), saved-results/v0.8.4/deepseek-r1/h200/2025-04-18 (DGX H200), the trt- files: "
        "trtllm-serve (trt-guide.md), benchmark_serving.py, 50 requests",
        "TensorRT-LLM main of 2025-04-18 (the PyTorch backend: the trtllm@1.1 preset)", "trtllm@1.1", "mean", DSR_TRT, ["in/out"], None,
        moe=True)

# 10. TensorRT-LLM v0.21.0rc2 (built from source), DeepSeek-R1 FP8 on 8 x H200, trtllm-serve at TP 8 with the
#     experts split over the 8 (EP None) or whole on each (EP 8), LLMPerf at 1 and 8 concurrent requests
#     (NVIDIA/TensorRT-LLM issue #5929, 2025-07-10): ITL and TTFT p50. The issue's EP 4 column (experts
#     over 4 x 2 GPUs) is left out: no ridgeline layout splits them so. The B200 rows are left out too:
#     nvidia/DeepSeek-R1-FP4 keeps some GEMMs out of fp4, which --weight-dtype fp4 does not.
DSR_TRT21 = [(["--model", "deepseek-v3", "--hw", "h200", "--tp", "8", *(["--experts", "ep"] if ep == 8 else []),
               "--concurrency", str(c), "--requests", str(4 * c), "--prompt", str(isl), "--gen", str(osl)],
              {"ttft": ttft, "itl": itl}, [c, f"{isl}/{osl}", "8" if ep == 8 else "None"], "fp8")
             for c, isl, osl, ep, itl, ttft in [(1, 1600, 600, 1, 0.01378, 0.16463), (1, 1600, 600, 8, 0.011, 0.12411),
                                                (1, 8192, 600, 1, 0.01453, 0.51583), (1, 8192, 600, 8, 0.01178, 0.35281),
                                                (8, 1600, 600, 1, 0.01818, 0.69481), (8, 1600, 600, 8, 0.01642, 0.47733)]]
add_set("trtllm-0.21-deepseek-r1", "DeepSeek-R1 FP8 on 8 x H200, 1 and 8 clients (TensorRT-LLM 0.21.0rc2, TP 8; p50)",
        "NVIDIA/TensorRT-LLM issue #5929 (2025-07-10): LLMPerf against trtllm-serve, v0.21.0rc2 built from source, ITL and TTFT p50",
        "TensorRT-LLM 0.21 (PyTorch backend: the trtllm@1.1 preset)", "trtllm@1.1", "p50", DSR_TRT21, ["clients", "in/out", "EP"], None,
        moe=True)


# 11. vLLM's main branch of 2025-11-17 (commit 5a84b76: between 0.11.1 and 0.12, the vllm@0.13 preset's 0.11-0.13),
#     DeepSeek-R1 on 8 x H200 at TP 8 with its Triton MoE (the experts split over the 8), 1600 in / 600 out at 8, 16 and
#     32 concurrent requests (vllm-project/vllm issue #28887, 2025-11-17, "TP8-TRITON"): mean TTFT. The issue's text
#     table gives the TTFTs; its other columns (expert parallelism with Triton's or FlashInfer's MoE) are left out:
#     TEP8-TRITON's dense GEMMs are not stated, and FlashInfer's CUTLASS MoE is no ridgeline kernel class. The number
#     of requests is not stated either: ten per client here (5 or 20 per client move the 32-client TTFT by +10/-5%).
DSR_VLLM11 = [(["--model", "deepseek-v3", "--hw", "h200", "--tp", "8", "--concurrency", str(c), "--requests", str(10 * c),
                "--prompt", "1600", "--gen", "600"], {"ttft": ttft_ms / 1e3}, [c, "1600/600"], "fp8")
              for c, ttft_ms in [(8, 545.59), (16, 683.84), (32, 816.39)]]
add_set("vllm-0.11-deepseek-r1", "DeepSeek-R1 on 8 x H200, 8-32 clients (vLLM main of November 2025, TP 8, Triton MoE; means)",
        "vllm-project/vllm issue #28887 (2025-11-17, commit 5a84b76): 8 x H200, 1600/600, mean TTFT of the TP8-TRITON column",
        "vLLM main of 2025-11-17 (V1; the vllm@0.13 preset: 0.11-0.13)", "vllm@0.13", "mean", DSR_VLLM11, ["clients", "in/out"], None,
        moe=True)

# 12. SGLang's bench_one_batch (python -m sglang.bench_one_batch: its model runner alone, one batch, no server,
#     no scheduler), DeepSeek-V3 fp8 on 8 x H200 at --tp 8: "Prefill. latency" (one forward over the batch's
#     prompts, launched eagerly) as TTFT and "Decode.  median latency" (the median step of the batch, CUDA
#     graphs) as TPOT; no front end. Every such run found with the GPU named and the full checkpoint:
#     sgl-project/sglang PR #5432 (2025-04-15), its main before the change (SGL_ENABLE_JIT_DEEPGEMM=1
#     SGL_ENABLE_JIT_DEEPGEMM_BMM=0; the PR's own change, DeepGEMM for MLA's absorbed bmm, left out): batch 1,
#     1000 in / 100 out; PR #14764 (2025-12-10, DeepSeek-V3.1: the same architecture) with
#     --enable-flashinfer-allreduce-fusion, which the PR made the default: batch 16, 512 in / 512 out (without
#     it: prefill 288.27 ms). Runs whose GPU is not named (PR #3236), with torch.compile (DataCrunch's guide)
#     or whose command is not shown (PR #5662) are left out. April's main ran each all-reduce apart from the norm
#     after it on Hopper (--allreduce-fusion off: PR #14764 brought the fusion there).
SGL_ONE_BATCH = [(["--model", "deepseek-v3", "--hw", "h200", "--tp", "8", "--concurrency", str(b), "--requests", str(b),
                   "--prompt", str(isl), "--gen", str(osl), "--front-end", "0 s", "--allreduce-fusion", fusion],
                  {"ttft": pre_ms / 1e3, "tpot": dec_ms / 1e3}, [run, b, f"{isl}/{osl}"], "fp8")
                 for run, b, isl, osl, pre_ms, dec_ms, fusion in [("PR #5432, April 2025", 1, 1000, 100, 179.55, 17.20, "off"),
                                                                 ("PR #14764, December 2025", 16, 512, 512, 288.94, 16.20, "on")]]
add_set("sglang-one-batch-deepseek", "One batch, DeepSeek-V3 on 8 x H200 (SGLang bench_one_batch, TP 8; the prefill, the median decode step)",
        "sgl-project/sglang PRs #5432 (2025-04-15, DeepSeek-V3) and #14764 (2025-12-10, DeepSeek-V3.1: the same architecture): "
        "python -m sglang.bench_one_batch --tp 8, "
        "'Prefill. latency' and 'Decode.  median latency'",
        "SGLang main of April and December 2025 (the model runner alone: the sglang preset, no front end)", "sglang", "p50",
        SGL_ONE_BATCH, ["run", "batch", "in/out"], None, moe=True)


# 13. DeepSeek-R1-0528 on 8 x H200, every request at once (gpustack/gpustack docs/performance-lab/deepseek-r1/
#     h200.md at commit a5c9faf: `vllm bench serve --backend openai-chat --endpoint /v1/chat/completions
#     --dataset-name random --random-input-len L --random-output-len O --num-prompts N --seed 42`, all N sent at
#     once): mean TTFT and TPOT, output tokens/s (its "Output token throughput": output tokens over the run's
#     duration). vLLM v0.11.0 at `vllm serve -tp 8` (the baseline; its experts' kernel at TP 8 is not stated,
#     the vllm@0.13 preset's Triton MoE) and SGLang v0.5.3 at `--tp 8 --enable-dp-attention` (the "optimized"
#     runs: without --dp-size, whose default 1 turns data-parallel attention off, server_args.py
#     _handle_data_parallelism, so TP 8). The prompts' lengths are the runs' "Total input tokens" over the
#     requests (31999: vllm bench takes the tokenizer's special token off the length asked; 3995, 1997 and
#     127 tokens, the random prompts re-tokenised; the chat template adds a few more on the server, not
#     counted), the outputs as asked (each run's "Total generated tokens" is N x O, but SGLang's
#     32000-token run's 9952 of 10000). Left out: vLLM's 1000 prompts of 128 tokens (mean TTFT 19.4 s,
#     median 19.0 s, p99 21.4 s in a run of 22.1 s: nearly every first token at the run's end, which
#     neither the prefill of 127k tokens nor a queue taking requests in turn explains, and SGLang's same
#     run took 3.6 s; what held them is not recorded), their ShareGPT runs (which requests vllm bench
#     sampled is not recorded) and TensorRT-LLM 1.0's (ShareGPT only). SGLang 0.5.3 ran each all-reduce apart from
#     the norm after it (--allreduce-fusion off): its auto rule wants no DP attention, which --enable-dp-attention asks
#     for, and Hopper had none before PR #14764 (December 2025).
GPUSTACK_R1 = [(32000, 31999, 100, 100), (4000, 3995, 200, 500), (2000, 1997, 100, 500), (128, 127, 4, 1000)]
GPUSTACK_SOURCE = ("gpustack/gpustack docs/performance-lab/deepseek-r1/h200.md (commit a5c9faf): vllm bench serve, random "
                   "prompts of fixed lengths, every request at once")


def gpustack_r1(measured, flags=()):
    """The rows of one engine's runs: `measured` maps the nominal input length to (TTFT ms, TPOT ms, output tok/s),
    the lengths it leaves out having none; `flags`, the engine's run's."""
    return [(["--model", "deepseek-v3", "--hw", "h200", "--tp", "8", "--qps", "1e6", "--arrival", "constant", "--requests", str(n),
              "--prompt", str(isl), "--gen", str(osl), *flags], means(*measured[nominal]), [f"{nominal}/{osl}", n], "fp8")
            for nominal, isl, osl, n in GPUSTACK_R1 if nominal in measured]


add_set("gpustack-vllm-deepseek-r1", "DeepSeek-R1 on 8 x H200, every request at once (vLLM 0.11.0, TP 8; means)", GPUSTACK_SOURCE,
        "vLLM 0.11.0 (V1; the vllm@0.13 preset: 0.11-0.13)", "vllm@0.13", "mean",
        gpustack_r1({32000: (101351.99, 365.79, 48.33), 4000: (63058.71, 164.23, 753.67), 2000: (28911.90, 237.02, 843.71)}),
        ["in/out", "requests"], None, moe=True)
add_set("gpustack-sglang-deepseek-r1", "DeepSeek-R1 on 8 x H200, every request at once (SGLang 0.5.3, TP 8; means)", GPUSTACK_SOURCE,
        "SGLang 0.5.3 (the sglang preset)", "sglang", "mean",
        gpustack_r1({32000: (98133.46, 198.62, 49.89), 4000: (62808.37, 107.91, 767.42), 2000: (27248.86, 154.49, 907.31),
                     128: (3626.25, 802.48, 624.94)}, ["--allreduce-fusion", "off"]), ["in/out", "requests"], None, moe=True)


# 14. DeepSeek-R1-0528 on 8 x H200 under SGLang v0.5.12 (lmsysorg/sglang:v0.5.12-cu130), SemiAnalysis's InferenceX
#     curve published 2026-05-17 (GitHub Actions run 25980019087, attempt 2; SemiAnalysisAI/InferenceX PR #1423),
#     as SemiAnalysisAI/InferenceX PRs #3173 (2026-09-16) and #3288 (2026-09-19) quote it, "Mean latency": mean TTFT
#     and TPOT, output tokens/s per GPU (x 8 here). The run (benchmarks/single_node/dsr1_fp8_h200.sh and
#     benchmarks/benchmark_lib.sh at PR #1423's commits): `sglang.launch_server --tensor-parallel-size 8
#     --data-parallel-size 1 --disable-radix-cache --chunked-prefill-size 32768 --max-prefill-tokens 32768
#     --mem-fraction-static 0.82 --attention-backend flashinfer --stream-interval 10`, --max-running-requests and
#     --cuda-graph-max-bs 512 at 1k/1k, 256 at 8k/1k; the client (utils/bench_serving/benchmark_serving.py,
#     --backend vllm: the completions endpoint, no chat template) at --max-concurrency C, 10·C random prompts after
#     2·C warm-up requests (a phase of their own: benchmark() awaits them all, asyncio.gather, before the
#     measured ones start, all C at once: --warmup-drain on), request rate inf, --ignore-eos, every input and output length uniform in [0.8·L, L]
#     (RANDOM_RANGE_RATIO 0.8 in .github/workflows/benchmark-tmpl.yml: 819-1024 and 6553-8192). FlashInfer's MLA
#     backend is not modelled apart (the preset's attention figures); its ITL is per streamed chunk of 10 tokens
#     (--stream-interval 10), left out.
INFX_SOURCE = ("SemiAnalysisAI/InferenceX PRs #3173 and #3288 (the curve published 2026-05-17 by run 25980019087): "
               "benchmark_serving.py at a fixed concurrency, random lengths in [0.8 L, L], 10 x C requests")


def inferencex_client(hw, tp, c, isl):
    """InferenceX's client as `serve` runs it (DeepSeek-R1, the 1k outputs of its runs): C clients, 10·C measured
    requests after 2·C warm-up ones awaited on their own, lengths uniform in [0.8 L, L]."""
    return ["--model", "deepseek-r1", "--hw", hw, "--tp", str(tp), "--concurrency", str(c), "--requests", str(12 * c),
            "--warmup-requests", str(2 * c), "--warmup-drain", "on", "--prompt", f"uniform:{isl * 8 // 10},{isl}",
            "--gen", "uniform:819,1024"]


def inferencex_r1(isl, max_running, rows):
    return [(inferencex_client("h200", 8, c, isl) + ["--max-batched-tokens", "32768", "--kv-memory-fraction", "0.82", "--max-num-seqs",
                                                     str(max_running), "--graph-max-batch", str(max_running), "--prefix-caching", "off"],
             means(ttft, tpot, out_per_gpu * 8), [f"{isl // 1024}k/1k", c], "fp8")
            for c, ttft, tpot, out_per_gpu in rows]


add_set("inferencex-sglang-deepseek-r1", "DeepSeek-R1 on 8 x H200 at 4-64 clients (SGLang 0.5.12, TP 8; means)", INFX_SOURCE,
        "SGLang 0.5.12 (the sglang preset)", "sglang", "mean",
        inferencex_r1(1024, 512, [(4, 157.77, 9.7, 49.17), (8, 165.36, 11.73, 82.37), (16, 197.84, 15.28, 126.62),
                                       (32, 307.02, 21.8, 177.14), (64, 359.75, 29.77, 259.8)]) +
        inferencex_r1(8192, 256, [(4, 373.26, 10.94, 43.12), (8, 490.53, 13.88, 68.33), (16, 688.2, 20.02, 93.89),
                                        (32, 979.34, 31.37, 121.01), (64, 2245.58, 49.33, 150.98)]),
        ["in/out", "clients"], None, moe=True)

# 14b. DeepSeek-R1-0528 on 8 x B200 under SGLang v0.5.12 (lmsysorg/sglang:v0.5.12-cu130), SemiAnalysis's InferenceX
#     curve published 2026-05-22, as SemiAnalysisAI/InferenceX PR #3363 (2026-09-22) quotes it, "Mean latency": mean TTFT
#     and TPOT, output tokens/s per GPU (x TP here). Its rows with figures: 1k/1k at TP 8 and 1-64 clients, 8k/1k at
#     TP 8 and one client, 8k/1k at TP 4 and 1-2 clients (the rest of its table was cut from the quote or N/A). The run
#     (benchmarks/single_node/dsr1_fp8_b200.sh, unchanged from ed5867f, 2026-05-12, to 1b23499, 2026-06-02):
#     SGL_ENABLE_JIT_DEEPGEMM=false, SGLANG_ENABLE_FLASHINFER_GEMM=true, `sglang.launch_server --tensor-parallel-size TP
#     --kv-cache-dtype fp8_e4m3 --enable-flashinfer-allreduce-fusion --scheduler-recv-interval R --disable-radix-cache
#     --attention-backend trtllm_mla --stream-interval 30 --moe-runner-backend flashinfer_trtllm --quantization fp8`; at
#     TP 8 --cuda-graph-max-bs and --max-running-requests 128, --mem-fraction-static 0.82, --chunked-prefill-size and
#     --max-prefill-tokens 32768, R 10 below 16 clients and 30 from 16; at TP 4 32, 0.95, 8192 and R 10. The client as
#     in 14. Not modelled apart: FlashInfer's TensorRT-LLM kernels (the MLA attention, the fp8 block-scaled MoE, the
#     block-scaled GEMMs in place of DeepGEMM's) and the all-reduce fused with the residual add and norm: the preset's
#     Blackwell figures price them.
INFX_B200_SOURCE = ("SemiAnalysisAI/InferenceX PR #3363 (its baseline: the curve published 2026-05-22): "
                    "benchmark_serving.py at a fixed concurrency, random lengths in [0.8 L, L], 10 x C requests")


def inferencex_r1_b200(isl, tp, rows):
    flags = (["--max-batched-tokens", "32768", "--kv-memory-fraction", "0.82", "--max-num-seqs", "128", "--graph-max-batch", "128"]
             if tp == 8 else
             ["--max-batched-tokens", "8192", "--kv-memory-fraction", "0.95", "--max-num-seqs", "32", "--graph-max-batch", "32"])
    return [(inferencex_client("b200", tp, c, isl) + ["--kv-dtype", "fp8_e4m3", "--prefix-caching", "off",
              "--scheduler-recv-interval", str(30 if tp == 8 and c >= 16 else 10)] + flags,
             means(ttft, tpot, out_per_gpu * tp), [f"{isl // 1024}k/1k", tp, c], "fp8")
            for c, ttft, tpot, out_per_gpu in rows]


add_set("inferencex-sglang-deepseek-r1-b200", "DeepSeek-R1 on 8 x B200 at 1-64 clients (SGLang 0.5.12, TP 8 and 4; means)",
        INFX_B200_SOURCE, "SGLang 0.5.12 (the sglang preset)", "sglang", "mean",
        inferencex_r1_b200(1024, 8, [(1, 160.36, 7.18, 17.01), (2, 177.91, 7.93, 30.74), (4, 203.87, 8.82, 53.72),
                                     (8, 248.74, 10.96, 87.31), (16, 368.49, 13.09, 145.25), (32, 470.96, 16.21, 234.01),
                                     (64, 1170.32, 21.73, 338.97)]) +
        inferencex_r1_b200(8192, 8, [(1, 314.28, 7.39, 16.18)]) +
        inferencex_r1_b200(8192, 4, [(1, 410.18, 7.96, 29.78), (2, 483.64, 9.13, 51.72)]),
        ["in/out", "TP", "clients"], None, moe=True)

# 14c. DeepSeek-R1-0528 on 8 x B200 under TensorRT-LLM 1.3.0rc14 (nvcr.io/nvidia/tensorrt-llm/release:1.3.0rc14),
#     SemiAnalysis's InferenceX curve published 2026-05-18, as SemiAnalysisAI/InferenceX PR #3317 (2026-09-20) quotes
#     it, "Mean latency": mean TTFT and TPOT, output tokens/s per GPU (x TP here). Its rows below 64 clients with
#     figures (1k/1k at TP 8 and 4 clients, TP 4 and 8, TP 8 and 8, TP 4 and 16; 8k/1k at TP 8 and 4; all EP 1): from
#     64 clients the run turns on piecewise CUDA graphs and (1k/1k) delayed batching, not modelled. The run
#     (benchmarks/single_node/dsr1_fp8_b200_trt.sh, unchanged from ed5867f, 2026-05-12, to 1b23499, 2026-06-02):
#     `trtllm-serve --backend pytorch --max_num_tokens max(8192, ceil((C + ISL + 64)/64)*64) --tp_size TP --ep_size 1`,
#     its options file: cuda_graph_config {enable_padding, max_batch_size C}, kv_cache_config {dtype fp8,
#     free_gpu_memory_fraction 0.8, enable_block_reuse false}, stream_interval 10, moe_config.backend TRTLLM
#     (trtllm-gen's fused MoE); the client as in 14 (--backend openai: the completions endpoint). Not modelled apart:
#     trtllm-gen's fp8 block-scaled MoE and MLA kernels and the all-reduce fused with the residual add and RMSNorm (on by
#     default for DeepSeek in the PyTorch backend): the trtllm preset's kernels at the B200's figures stand for them.
INFX_B200_TRT_SOURCE = ("SemiAnalysisAI/InferenceX PR #3317 (its baseline: the curve published 2026-05-18): "
                        "benchmark_serving.py at a fixed concurrency, random lengths in [0.8 L, L], 10 x C requests")


def inferencex_r1_b200_trt(rows):
    out = []
    for isl, tp, c, ttft, tpot, out_per_gpu in rows:
        tokens = max(8192, (c + isl + 64 + 63) // 64 * 64)
        out.append((inferencex_client("b200", tp, c, isl) + ["--kv-dtype", "fp8_e4m3", "--prefix-caching", "off", "--max-batched-tokens",
                     str(tokens), "--graph-max-batch", str(c), "--graph-padding", "on", "--kv-memory-fraction", "0.8"],
                    means(ttft, tpot, out_per_gpu * tp), [f"{isl // 1024}k/1k", tp, c], "fp8"))
    return out


add_set("inferencex-trtllm-deepseek-r1-b200", "DeepSeek-R1 on 8 x B200 at 4-16 clients (TensorRT-LLM 1.3.0rc14, TP 8 and 4; means)",
        INFX_B200_TRT_SOURCE, "TensorRT-LLM 1.3.0rc14 (PyTorch backend: the trtllm preset)", "trtllm", "mean",
        inferencex_r1_b200_trt([(1024, 8, 4, 189.91, 8.69, 54.45), (1024, 4, 8, 194.49, 13.06, 147.77), (1024, 8, 8, 180.97, 10.86, 88.59),
                                (1024, 4, 16, 218.01, 16.92, 228.8), (8192, 8, 4, 322.69, 9.29, 50.65)]),
        ["in/out", "TP", "clients"], None, moe=True)

# 15. DeepSeek-R1-0528 on 8 x MI325X under SGLang v0.5.19 (lmsysorg/sglang:v0.5.19-rocm700-mi30x), SemiAnalysis's
#     InferenceX curve published 2026-09-10 (after PR #2949's image bump: "launch flags ... unchanged"), as
#     SemiAnalysisAI/InferenceX PR #3318 (2026-09-20) quotes it, "Mean latency": mean TTFT and TPOT, output
#     tokens/s per GPU (x 8 here). The run (benchmarks/single_node/fixed_seq_len/dsr1_fp8_mi325x.sh, read at
#     843c625): SGLANG_USE_AITER=1, SGLANG_AITER_MLA_PERSIST=1, `sglang.launch_server --tensor-parallel-size 8
#     --mem-fraction-static 0.8 --cuda-graph-max-bs 128 --chunked-prefill-size 131072 --max-prefill-tokens 131072
#     --num-continuous-decode-steps 4 --kv-cache-dtype fp8_e4m3 --attention-backend aiter --disable-radix-cache`;
#     the client as in 14 (10·C random prompts after 2·C warm-up ones, lengths uniform in [0.8 L, L]).
#     --num-continuous-decode-steps 4 changes nothing in this release: its loop of decode steps between the
#     scheduler's reads left the event loop with the overlap scheduler (sgl-project/sglang PR #2095, November 2024),
#     the argument kept but read nowhere else (its declaration in server_args.py the one use in python/).
INFX_MI325X_SOURCE = ("SemiAnalysisAI/InferenceX PR #3318 (its baseline: the curve published 2026-09-10): "
                      "benchmark_serving.py at a fixed concurrency, random lengths in [0.8 L, L], 10 x C requests")
add_set("inferencex-sglang-deepseek-r1-mi325x", "DeepSeek-R1 on 8 x MI325X at 4-64 clients (SGLang 0.5.19 on ROCm 7.0, TP 8; means)",
        INFX_MI325X_SOURCE, "SGLang 0.5.19 (the sglang preset, AITER's kernels)", "sglang", "mean",
        [(inferencex_client("mi325x", 8, c, 8192) + ["--kv-dtype", "fp8_e4m3", "--max-batched-tokens", "131072", "--kv-memory-fraction", "0.8",
                                                     "--graph-max-batch", "128", "--prefix-caching", "off"],
          means(ttft, tpot, out_per_gpu * 8), ["8k/1k", c], "fp8")
         for c, ttft, tpot, out_per_gpu in [(4, 1025.49, 18.53, 24.91), (8, 1026.66, 21.56, 43.38), (16, 1163.49, 26.75, 69.39),
                                            (32, 1363.26, 39.45, 95.57), (64, 1917.85, 66.55, 114.89)]],
        ["in/out", "clients"], None, moe=True)

# 16. AMD's vLLM latency table on 8 x MI300X (ROCm/vllm docs/dev-docker/README.md at 68af055, 2025-06-11, the
#     20250605_aiter image: ROCm 6.4.1, vLLM 0.9.0.1, hipBLASLt 0.15; the same numbers on amd.com's performance
#     results page): benchmark_latency.py, the mean end-to-end time of one batch over 5 iterations after 3
#     warm-ups, amd/Llama-3.1-{70B,405B}-Instruct-FP8-KV (Quark: fp8 weights and activations with per-tensor
#     scales, an fp8 KV cache): its command's --quantization fp8 --kv-cache-dtype fp8 --dtype float16
#     --gpu-memory-utilization 0.9 --tensor-parallel-size 8 --distributed-executor-backend mp
#     --trust-remote-code, VLLM_USE_TRITON_FLASH_ATTN=0, no engine argument else (its tables were run with
#     v0.6.5's benchmark scripts, the README says: the same sampling). benchmark_latency.py runs the offline
#     LLM class (no server: --front-end 0) and samples at temperature 1.0, top_p 1.0, ignore_eos (--sampling
#     random). The fork's source the image is built from (71faa18, its Docker manifest's commit) runs the V1
#     engine (VLLM_USE_V1 defaults to 1, and its V1 oracle admits an fp8 KV cache on ROCm), with V1's offline
#     defaults for a device of 70 GB or more, 16384 tokens a step and 1024 sequences; the image's own default is
#     not verified (its next release notes say "V1 on by default"), nor are its kernels modelled (ROCm's
#     attention and fp8 GEMM paths): the nearest preset, vllm@0.8, and a class of its own.
add_set("amd-vllm-mi300x-latency", "One batch, 128 or 2048 in / 2048 out, Llama-3.1 FP8 on 8 x MI300X (AMD's vLLM 0.9.0.1 image, TP 8; mean E2E)",
        "ROCm/vllm docs/dev-docker/README.md (commit 68af055, 2025-06-11), 'MI300X Latency (sec)': benchmark_latency.py, "
        "mean of 5 iterations, amd/Llama-3.1-70B- and 405B-Instruct-FP8-KV",
        "vLLM 0.9.0.1 on ROCm 6.4.1 (AMD's 20250605_aiter image; V1 by its source, not modelled: the nearest preset)",
        "vllm@0.8", "mean",
        [(["--model", m, "--hw", "mi300x", "--tp", "8", *FP8, "--act-dtype", "fp16", "--concurrency", str(bs), "--requests", str(bs),
           "--prompt", str(isl), "--gen", "2048", "--front-end", "0 s", "--sampling", "random",
           "--max-batched-tokens", "16384", "--max-num-seqs", "1024"],
          {"e2e": sec}, [m, bs, f"{isl}/2048"], "fp8")
         for m, isl, secs in [("llama-3.1-70b", 128, [15.566, 16.858, 17.518, 18.898, 21.023, 23.896, 30.753, 43.767]),
                              ("llama-3.1-70b", 2048, [15.496, 17.380, 17.983, 19.771, 22.702, 27.392, 36.879, 57.003]),
                              ("llama-3.1-405b", 128, [45.828, 46.757, 48.322, 51.479, 54.861, 63.119, 82.362, 109.698]),
                              ("llama-3.1-405b", 2048, [46.514, 47.271, 49.679, 54.366, 60.390, 74.209, 104.728, 154.041])]
         for bs, sec in zip([1, 2, 4, 8, 16, 32, 64, 128], secs)],
        ["model", "batch", "in/out"], None, modelled="vLLM 0.9 on ROCm")

# ------------------------------------------------------------------------------------------------
def serve(args, engine):
    r = subprocess.run([BIN, "serve", "--engine", engine, *args, "--json"], capture_output=True, text=True)
    if r.returncode != 0:  # the binary's own one-line message (a missing trace file, a bad flag)
        sys.exit(f"serving_validation: `serve --engine {engine} {' '.join(args)}` failed: {r.stderr.strip()}")
    return json.loads(r.stdout)


def predicted(j, metric, stat):
    if metric == "output_tps":
        return j["output_tokens_per_s"]
    return j[f"{metric}_s"][stat]


def run_all():
    jobs = [(s, r) for s in SETS for r in s["rows"]]
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, os.cpu_count() or 1)) as pool:
        results = list(pool.map(lambda sr: serve(sr[1][0], sr[0]["engine"]), jobs))
    out = []
    for (s, r), j in zip(jobs, results):
        args, measured, cells, dtype = r
        errors = {m: predicted(j, m, s["stat"]) / v - 1 for m, v in measured.items()}
        out.append(dict(set=s, cells=cells, measured=measured, predicted={m: predicted(j, m, s["stat"]) for m in measured},
                        errors=errors, dtype=dtype, band=j["error_band"]["class"].split(", ")[0]))
    return out


def fmt_value(metric, v):
    return f"{v:.0f}" if metric == "output_tps" else (f"{v * 1e3:.1f}" if v < 0.1 else f"{v * 1e3:.0f}")


def engine_family(engine):
    return engine.split("@")[0]


def class_of(row):
    # The engine's name in the classes is the binary's own (its answers' `error_band.class`): the
    # family, but a class of its own for a preset that is another engine (vLLM's V0 engine,
    # vllm@0.6; TensorRT-LLM's TensorRT engine flow, trtllm@0.15).
    s = row["set"]
    engine = row["band"] if s["unmodelled"] is None else f"{s['unmodelled']} (not modelled)"
    return f"{engine}, {row['dtype']}, {'MoE' if s['moe'] else 'dense'}"


UNITS = {"ttft": "TTFT (ms)", "tpot": "TPOT (ms)", "itl": "ITL (ms)", "e2e": "E2E (ms)", "output_tps": "output tok/s"}


def print_tables(rows):
    for s in SETS:
        mine = [r for r in rows if r["set"] is s]
        metrics = []
        for r in mine:
            metrics += [m for m in r["measured"] if m not in metrics]
        print(f"### {s['title']}\n")
        print(f"Measured: {s['source']}. Engine: {s['release']}; ridgeline runs `--engine {s['engine']}`.\n")
        header = list(s["columns"])
        for m in metrics:
            header += [f"{UNITS[m]}", "measured", "error"]
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * len(header))
        for r in mine:
            cells = [str(c) for c in r["cells"]]
            for m in metrics:
                if m not in r["measured"]:
                    cells += ["-", "-", "-"]
                    continue
                cells += [fmt_value(m, r["predicted"][m]), fmt_value(m, r["measured"][m]), f"{100 * r['errors'][m]:+.0f}%"]
            print("| " + " | ".join(cells) + " |")
        print()


def summarise(errors_by_class):
    result = {}
    for cls, metrics in sorted(errors_by_class.items()):
        result[cls] = {}
        for m, es in sorted(metrics.items()):
            result[cls][m] = band(es)
    return result


def row_errors(rows):
    """Each row's errors by the metric their class keeps them under: a stream's inter-token gap (ITL) and
    its TPOT are one class of error."""
    for r in rows:
        for m, e in r["errors"].items():
            yield r, ("tpot" if m == "itl" else m), e


def bands(rows):
    out = {}
    for r, metric, e in row_errors(rows):
        out.setdefault(class_of(r), {}).setdefault(metric, []).append(e)
    return summarise(out)


# What an answer of a class with fewer than three rows of a metric borrows (io::quoted_band, docs/serving.md#borrowed-bands):
# the errors of every modelled serving engine pooled, first with the same dtype and kind (dense or MoE), then
# with the same kind over every dtype, then every serving row; the static engine's (one batch, no scheduler:
# infer) have a pool of their own, by kind. The classes of releases no preset follows ("(not modelled)") are in
# no pool.
# The order is written into the bands file ('pool_order': each family's pools, first to last, {dtype} and
# {kind} standing for the class's own), and io::quoted_band follows it: one order, kept here.
# An engine on ROCm (the binary's class "sglang on ROCm, ...", hw::is_rocm_gpu) has families of their own: its
# platform's pools of its kind first, which its rows alone fill, then the others' (the rows on every other chip);
# a kind the platform has no row of takes the other chips' rows of that kind before any other kind's.
ROCM = " on ROCm"
POOL_ORDER = {"static": ["static, any dtype, {kind}"],
              "serving": ["any engine, {dtype}, {kind}", "any engine, any dtype, {kind}", "any engine, any dtype, any kind"],
              "static" + ROCM: ["static" + ROCM + ", any dtype, {kind}", "static, any dtype, {kind}"],
              "serving" + ROCM: ["any engine" + ROCM + ", {dtype}, {kind}", "any engine" + ROCM + ", any dtype, {kind}",
                                 "any engine, {dtype}, {kind}", "any engine, any dtype, {kind}", "any engine, any dtype, any kind"]}


def pool_names(row):
    """The pools a row's errors join: its family's of its own platform (a row on ROCm fills the ROCm pools alone)."""
    kind = "MoE" if row["set"]["moe"] else "dense"
    rocm = row["band"].endswith(ROCM)
    family = ("static" if engine_family(row["set"]["engine"]) == "static" else "serving") + (ROCM if rocm else "")
    return [p.format(dtype=row["dtype"], kind=kind) for p in POOL_ORDER[family] if (ROCM in p) == rocm]


def pooled_bands(rows):
    out = {}
    for r, metric, e in row_errors(rows):
        if r["set"]["unmodelled"] is not None:
            continue
        for cls in pool_names(r):
            out.setdefault(cls, {}).setdefault(metric, []).append(e)
    return summarise(out)


def print_bands(b, pooled):
    print("### Errors by class\n")
    print("Every answer of `infer`, `serve` and `search serve` quotes its class's line (JSON `error_band`), or for a metric "
          "its class has fewer than three rows of, its pool's (#borrowed-bands).\n")
    header = "| class | metric | rows | median error | median \\|error\\| | p90 \\|error\\| | range |\n|---|---|---|---|---|---|---|"
    line = lambda cls, m, v: (f"| {cls} | {m} | {v['n']} | {100 * v['median']:+.0f}% | {100 * v['median_abs']:.0f}% | "
                              f"{100 * v['p90_abs']:.0f}% | {100 * v['low']:+.0f}% to {100 * v['high']:+.0f}% |")
    print(header)
    for cls, metrics in b.items():
        for m, v in metrics.items():
            print(line(cls, m, v))
    print()
    print("Pooled: what a class with fewer than three rows of a metric quotes instead (#borrowed-bands): the modelled serving engines' rows "
          "by dtype and kind, by kind, then all of them; the static engine's by kind. A class on ROCm takes its platform's pools "
          "of its kind first (\"any engine on ROCm\"), then the others'.\n")
    print(header)
    for cls, metrics in pooled.items():
        for m, v in metrics.items():
            print(line(cls, m, v))
    print()


def main():
    rows = run_all()
    b, pooled = bands(rows), pooled_bands(rows)
    # The metrics an answer quotes (io::kBandMetrics): a row of another would be dropped unseen.
    unknown = {m for table in (b, pooled) for metrics in table.values() for m in metrics} - {"ttft", "tpot", "e2e", "output_tps"}
    if unknown:
        sys.exit(f"serving_validation: metrics {sorted(unknown)} are not among those answers quote (io::kBandMetrics)")
    if MODE == "--check":
        stored_doc = json.load(open(BAND_FILE))
        flat = lambda table: {f"{cls} {m}": v for cls, metrics in table.items() for m, v in metrics.items()}
        stored = flat({**stored_doc["classes"], **stored_doc.get("pooled", {})})
        now = flat({**b, **pooled})
        bad = []
        if stored_doc.get("pool_order") != POOL_ORDER:
            bad.append(f"pool_order: {stored_doc.get('pool_order')} in {BAND_FILE}, {POOL_ORDER} here (rerun with --write)")
        bad += vanished(now, stored, BAND_FILE)
        bad += [line for key, v in now.items() if (line := grown(key, v, stored.get(key), BAND_FILE, TOLERANCE))]
        for line in bad:
            print(f"serving_validation: {line}")
        # Every class metric computed now or recorded (a vanished one is checked, and fails, too).
        print(f"serving_validation: {len(now.keys() | stored.keys())} class metrics and the pool order "
              f"checked, {len(bad)} failed (a median |error| grown by more than {100 * TOLERANCE:.0f} points, a metric or pool order not "
              f"as recorded, a recorded metric gone)")
        return 1 if bad else 0
    print_tables(rows)
    print_bands(b, pooled)
    if MODE == "--write":
        doc = {"about": "Errors of ridgeline serve against published measurements, by class (engine, dtype, dense or MoE): "
                        "median signed error, median and p90 |error|, range; made by scripts/serving_validation.py "
                        "(docs/serving.md#against-published-measurements). Errors are predicted / measured - 1. 'pooled': "
                        "the modelled serving engines' errors by dtype and kind, by kind, then all; the static engine's by "
                        "kind: what a class with fewer than three rows of a metric quotes (docs/serving.md#borrowed-bands), in the order of "
                        "'pool_order' ({dtype} and {kind} the class's own). An engine on ROCm ('sglang on ROCm') is a class of its "
                        "own, its rows in the ROCm pools alone ('any engine on ROCm, ...'), which such a class borrows first, then "
                        "the other chips' pools of its kind and last all of theirs.",
               "sources": [s["source"] for s in SETS], "classes": b,
               "pooled": pooled, "pool_order": POOL_ORDER}
        write_json(BAND_FILE, doc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
