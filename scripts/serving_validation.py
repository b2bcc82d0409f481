#!/usr/bin/env python3
"""Prints the tables of docs/serving.md#against-published-measurements: ridgeline's `serve`
beside published end-to-end serving measurements, with the error of each prediction.

The measurements are for checking only: nothing in ridgeline is fitted or tuned to them.
Usage: scripts/serving_validation.py [path/to/ridgeline]   (default build/dev/apps/ridgeline/ridgeline)
"""

import json
import subprocess
import sys

BIN = sys.argv[1] if len(sys.argv) > 1 else "build/dev/apps/ridgeline/ridgeline"


def serve(*args):
    out = subprocess.run([BIN, "serve", *args, "--json"], check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def err(pred, meas):
    return f"{100 * (pred / meas - 1):+.0f}%"


def table(header, rows):
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for r in rows:
        print("| " + " | ".join(str(c) for c in r) + " |")
    print()


# 1. TensorRT-LLM v0.5 first-token latency at batch 1 (docs/source/performance.md of
#    NVIDIA/TensorRT-LLM, release 0.5): one prefill, no queue.
print("### Prefill of one request (TensorRT-LLM v0.5, batch 1)\n")
rows = []
for model, hw, tp, dtype, isl, meas in [
        ("llama-2-7b", "h100-sxm", 1, "fp8", 128, 7), ("llama-2-7b", "h100-sxm", 1, "fp8", 2048, 36),
        ("llama-2-70b", "h100-sxm", 4, "fp8", 128, 26), ("llama-2-70b", "h100-sxm", 4, "fp8", 2048, 109),
        ("llama-2-7b", "a100-80gb", 1, "fp16", 128, 16), ("llama-2-7b", "a100-80gb", 1, "fp16", 2048, 133),
        ("llama-2-70b", "a100-80gb", 4, "fp16", 128, 47), ("llama-2-70b", "a100-80gb", 4, "fp16", 2048, 377)]:
    dt = (["--weight-dtype", "fp8", "--compute-dtype", "fp8", "--kv-dtype", "fp8"] if dtype == "fp8"
          else ["--weight-dtype", "fp16", "--act-dtype", "fp16"])
    j = serve("--engine", "static", "--model", model, "--hw", hw, "--tp", str(tp), *dt, "--concurrency", "1",
              "--requests", "1", "--prompt", str(isl), "--gen", "1")
    t = j["ttft_s"]["mean"] * 1e3
    rows.append((model, hw, tp, dtype, isl, f"{t:.1f}", meas, err(t, meas)))
table(["model", "GPU", "TP", "dtype", "prompt", "ridgeline TTFT (ms)", "measured (ms)", "error"], rows)

# 2. vLLM nightly CI latency test: batch 8, 32 prompt tokens, 128 output tokens
#    (benchmark_latency.py; Buildkite performance-benchmark builds 9555, 9515, 9523, autumn 2024).
print("### Batch of 8 requests, 32 in / 128 out (vLLM nightly CI, autumn 2024)\n")
rows = []
for model, hw, tp, meas in [("llama-3.1-8b", "h100-sxm", 1, 997.542), ("llama-3.1-70b", "h100-sxm", 4, 2444.47),
                            ("llama-3.1-8b", "h200", 1, 833.421), ("llama-3.1-70b", "h200", 4, 2077.53),
                            ("llama-3.1-8b", "a100-80gb", 1, 1579.27), ("llama-3.1-70b", "a100-80gb", 4, 3990.59)]:
    j = serve("--model", model, "--hw", hw, "--tp", str(tp), "--concurrency", "8", "--requests", "8", "--prompt", "32",
              "--gen", "128")
    t = j["e2e_s"]["mean"] * 1e3
    rows.append((model, hw, tp, f"{t:.0f}", f"{meas:.0f}", err(t, meas), f"{j['tpot_s']['mean'] * 1e3:.2f}"))
table(["model", "GPU", "TP", "ridgeline E2E (ms)", "measured (ms)", "error", "ridgeline TPOT (ms)"], rows)

# 3. NVIDIA NIM 1.8.0 (TensorRT-LLM), Llama-3.3-70B-Instruct FP8 on 2 x H100 at TP 2, 5000 in /
#    500 out, closed loop (docs.nvidia.com/nim/benchmarking/llm/1.0.0/performance).
print("### Closed loop, 5000 in / 500 out, 70B FP8 on 2 x H100 TP 2 (NVIDIA NIM 1.8.0, TensorRT-LLM)\n")
rows = []
for c, ttft, itl, tput in [(1, 406.77, 18.58, 51.67), (5, 546.7, 21.83, 218.48), (25, 688.69, 38.75, 623.4),
                           (50, 834.51, 59.73, 814.37), (100, 7996.25, 92.91, 917.26), (250, 88605.32, 93.2, 920.12)]:
    j = serve("--engine", "trtllm", "--model", "llama-3.1-70b", "--hw", "h100-sxm", "--tp", "2", "--weight-dtype", "fp8",
              "--kv-dtype", "fp8", "--compute-dtype", "fp8", "--concurrency", str(c), "--requests", str(max(60, 6 * c)),
              "--warmup-requests", str(c), "--prompt", "5000", "--gen", "500")
    t, i, o = j["ttft_s"]["mean"] * 1e3, j["itl_s"]["mean"] * 1e3, j["output_tokens_per_s"]
    rows.append((c, f"{t:.0f}", f"{ttft:.0f}", err(t, ttft), f"{i:.1f}", f"{itl:.1f}", err(i, itl), f"{o:.0f}", f"{tput:.0f}",
                 err(o, tput)))
table(["clients", "TTFT", "measured", "error", "ITL (ms)", "measured", "error", "output tok/s", "measured", "error"], rows)

# 4. SGLang v0.3.0 and vLLM v0.6.0 on ShareGPT, Poisson arrivals (sgl-project/sglang
#    benchmark/benchmark_vllm_060/README.md). ShareGPT's lengths are modelled as lognormal with the
#    means of the vLLM v0.6.0 blog's ShareGPT sample (202 in, 179 out) and sigma 1 (assumed).
print("### ShareGPT at 4 and 8 requests/s (SGLang v0.3.0 and vLLM v0.6.0; medians)\n")
rows = []
for engine, model, hw, tp, rps, e2e, ttft, tpot in [
        ("sglang", "llama-3.1-8b", "a100-80gb", 1, 4, 1564.17, 31.98, 13.17),
        ("sglang", "llama-3.1-8b", "a100-80gb", 1, 8, 2175.02, 35.68, 17.85),
        ("sglang", "llama-3.1-70b", "h100-sxm", 4, 4, 3005.24, 53.94, 25.03),
        ("sglang", "llama-3.1-70b", "h100-sxm", 4, 8, 4064.98, 58.11, 33.07),
        ("vllm", "llama-3.1-8b", "a100-80gb", 1, 4, 1691.97, 100.48, 14.14),
        ("vllm", "llama-3.1-70b", "h100-sxm", 4, 4, 2915.60, 179.15, 23.58)]:
    j = serve("--engine", engine, "--model", model, "--hw", hw, "--tp", str(tp), "--qps", str(rps), "--requests",
              str(300 * rps), "--prompt", "lognormal:202,1", "--gen", "lognormal:179,1", "--prefix-caching", "off")
    p = lambda k: j[k]["p50"] * 1e3
    rows.append((engine, model, hw, tp, rps, f"{p('e2e_s'):.0f}", f"{e2e:.0f}", err(p('e2e_s'), e2e), f"{p('ttft_s'):.0f}",
                 f"{ttft:.0f}", err(p('ttft_s'), ttft), f"{p('tpot_s'):.1f}", f"{tpot:.1f}", err(p('tpot_s'), tpot)))
table(["engine", "model", "GPU", "TP", "req/s", "E2E p50 (ms)", "measured", "error", "TTFT p50", "measured", "error",
       "TPOT p50", "measured", "error"], rows)
