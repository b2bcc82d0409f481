#!/usr/bin/env python3
"""Checks a chip's cuBLAS GEMM class against Vidur's kernel profile of the same chip
(docs/cost-model.md#kernel-curves): the four projections of six models at TP 1, 2, 4 and 8,
each op's kernels timed by the torch profiler inside a layer's forward (fp16), beside
`ridgeline op matmul` on the same shapes. Prints the median error by rows and by waves of
128 x 128 tiles. A check only: nothing is fitted to it.

Usage:
  gemm_check_vidur.py RIDGELINE VIDUR_GIT_DIR [h100|a100] [DTYPE] [REV]

VIDUR_GIT_DIR: a clone (or bare mirror) of microsoft/vidur; its files are read at REV (default
e26eb8f, the commit that last changed them, May 2024) with `git show`
(data/profiling/compute/<chip>/<model>/mlp.csv). DTYPE: the dtype priced (default bf16, whose
measured matmul rate the catalog holds; fp16 runs at the same tensor-core rate).
"""
import csv
import io
import json
import math
import statistics
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

if len(sys.argv) < 3:
    sys.exit(__doc__)
BIN, VIDUR = sys.argv[1], sys.argv[2]
CHIP = sys.argv[3] if len(sys.argv) > 3 else "h100"
DTYPE = sys.argv[4] if len(sys.argv) > 4 else "bf16"
REV = sys.argv[5] if len(sys.argv) > 5 else "e26eb8f"
CATALOG = {"h100": "h100-sxm", "a100": "a100-80gb"}[CHIP]
SMS = {"h100": 132, "a100": 108}[CHIP]
MODELS = ["meta-llama/Llama-2-70b-hf", "meta-llama/Llama-2-7b-hf", "Qwen/Qwen-72B", "internlm/internlm-20b",
          "codellama/CodeLlama-34b-Instruct-hf", "microsoft/phi-2"]
ROWS = set([1, 8, 16, 32, 64, 96] + list(range(128, 4097, 128)))
# Vidur's op names: the QKV projection, the output projection, gate and up (one GEMM), down.
OPS = {"attn_pre_proj": "qkv", "attn_post_proj": "o", "mlp_up_proj": "up", "mlp_down_proj": "down"}


def shapes(r):
    """(op, n, k) of each projection at this row's TP."""
    tp = int(r["num_tensor_parallel_workers"])
    h, heads, kv, f = int(r["n_embd"]), int(r["n_head"]), int(r["n_kv_head"]), int(r["n_expanded_embd"])
    d = h // heads
    gated = r["use_gated_mlp"] == "True"
    return {"attn_pre_proj": ((heads + 2 * kv) * d // tp, h), "attn_post_proj": (h, heads * d // tp),
            "mlp_up_proj": ((2 if gated else 1) * f // tp, h), "mlp_down_proj": (h, f // tp)}


jobs = []
for model in MODELS:
    text = subprocess.run(["git", "-C", VIDUR, "show", f"{REV}:data/profiling/compute/{CHIP}/{model}/mlp.csv"],
                          capture_output=True, text=True, check=True).stdout
    seen = set()
    for r in csv.DictReader(io.StringIO(text)):
        m, tp = int(r["num_tokens"]), int(r["num_tensor_parallel_workers"])
        if m not in ROWS or (m, tp) in seen:
            continue
        seen.add((m, tp))  # the files repeat some sizes: the first row of each
        for name, (n, k) in shapes(r).items():
            jobs.append((model.split("/")[1], tp, OPS[name], m, n, k, float(r[f"time_stats.{name}.median"]) * 1e-3))


def price(job):
    m, n, k = job[3], job[4], job[5]
    out = subprocess.run([BIN, "op", "matmul", "--m", str(m), "--n", str(n), "--k", str(k), "--dtype", DTYPE, "--hw", CATALOG,
                          "--json"], capture_output=True, text=True, check=True).stdout
    return json.loads(out)["t_realistic_s"]


with ThreadPoolExecutor(4) as pool:
    priced = list(pool.map(price, jobs))

by_rows, by_waves, by_op = {}, {}, {}
for (model, tp, op, m, n, k, measured), t in zip(jobs, priced):
    e = t / measured - 1
    bucket = next(b for b in [1, 8, 16, 32, 64, 96, 128, 256, 512, 1024, 2048, 4096] if m <= b)
    by_rows.setdefault(bucket, []).append(e)
    by_op.setdefault((op, bucket), []).append(e)
    if m >= 256:
        w = math.ceil(m / 128) * math.ceil(n / 128) / SMS
        by_waves.setdefault(min(12, round(w * 4) / 4 if w < 3 else round(w)), []).append(e)

print(f"{len(jobs)} GEMMs of Vidur's {CHIP} profile against `op matmul --dtype {DTYPE} --hw {CATALOG}` (error: priced / measured - 1)")
print("\nrows (up to) | GEMMs | median error | p10 | p90")
for b in sorted(by_rows):
    v = sorted(by_rows[b])
    print(f"{b:>12} | {len(v):>5} | {100 * statistics.median(v):+11.1f}% | {100 * v[len(v) // 10]:+.0f}% | {100 * v[9 * len(v) // 10]:+.0f}%")
print("\nby projection, median error at each size:")
for op in ["qkv", "o", "up", "down"]:
    cells = " ".join(f"{b}:{100 * statistics.median(by_op[(op, b)]):+.0f}%" for b in sorted(by_rows) if (op, b) in by_op)
    print(f"  {op:<5} {cells}")
print("\n256 rows and more, by waves of 128 x 128 tiles over the SMs | GEMMs | median error")
for w in sorted(by_waves):
    v = by_waves[w]
    print(f"{w:>6} | {len(v):>4} | {100 * statistics.median(v):+.1f}%")
