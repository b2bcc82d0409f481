#!/usr/bin/env python3
"""Checks a chip's cuBLAS GEMM class against Vidur's kernel profile of the same chip
(docs/cost-model.md#kernel-curves): the four projections of six models at TP 1, 2, 4 and 8,
each op's kernels timed by the torch profiler inside a layer's forward (fp16), beside
`ridgeline op matmul` on the same shapes (priced as bf16, whose measured matmul rate the catalog
holds; fp16 runs at the same tensor-core rate). Prints the median error by rows, by projection
and by waves of 128 x 128 tiles, and by model and projection. A check only: nothing is fitted to it.

Usage:
  gemm_check_vidur.py RIDGELINE [h100|a100|all]                  the tables (default all)
  gemm_check_vidur.py RIDGELINE all --write FILE.json            and the errors by chip, model and
                                                                 projection into FILE (at 96 rows and
                                                                 the powers of two)
  gemm_check_vidur.py RIDGELINE [h100|a100|all] --check FILE.json
                                                                 exit 1 when a group's median |error|
                                                                 grew by more than 5 points over FILE's,
                                                                 or a group of the chips run is in one
                                                                 and not the other (bad arguments: 2)
  gemm_check_vidur.py --extract VIDUR_GIT_DIR [REV]              rewrite the excerpt from a clone (or bare
                                                                 mirror) of microsoft/vidur at REV
                                                                 (default e26eb8f, May 2024)

The profile is read from its excerpt, data/validation/vidur-linears.csv (MIT, LICENSE-vidur):
Vidur's data/profiling/compute/<chip>/<model>/mlp.csv, the median kernel time of each projection
at the rows below, the first row where the file repeats a size.
"""
import csv
import io
import json
import math
import os
import statistics
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

from bands import band, grown, vanished, write_json

EXCERPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "validation", "vidur-linears.csv")
CATALOG = {"h100": "h100-sxm", "a100": "a100-80gb"}
SMS = {"h100": 132, "a100": 108}
MODELS = ["meta-llama/Llama-2-70b-hf", "meta-llama/Llama-2-7b-hf", "Qwen/Qwen-72B", "internlm/internlm-20b",
          "codellama/CodeLlama-34b-Instruct-hf", "microsoft/phi-2"]
ROWS = set([1, 8, 16, 32, 64, 96] + list(range(128, 4097, 128)))
# Vidur's op names: the QKV projection, the output projection, gate and up (one GEMM), down.
OPS = {"attn_pre_proj": "qkv", "attn_post_proj": "o", "mlp_up_proj": "up", "mlp_down_proj": "down"}
SHAPE_COLUMNS = ["n_embd", "n_head", "n_kv_head", "n_expanded_embd", "use_gated_mlp"]
TOLERANCE = 0.05  # --check: a group's median |error| may grow by 5 points
# The groups --write records and --check compares: the rows of the powers of two and 96, a third of
# the GEMMs (and of the time: ctest runs the check).
CHECKED_ROWS = {1, 8, 16, 32, 64, 96, 128, 256, 512, 1024, 2048, 4096}


def extract(vidur, rev):
    """The excerpt from Vidur's files: one line per chip, model, TP and size."""
    with open(EXCERPT, "w") as f:
        f.write(f"# Excerpt of microsoft/vidur at {rev}, data/profiling/compute/<chip>/<model>/mlp.csv (MIT License, Copyright (c)\n"
                "# Microsoft Corporation: LICENSE-vidur): the model's shape columns and time_stats.<op>.median (ms, the torch\n"
                "# profiler's kernel time of the op inside a layer's forward, fp16) at the rows gemm_check_vidur.py reads, the\n"
                "# first row where the file repeats a size. Written by scripts/gemm_check_vidur.py --extract.\n")
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["chip", "model", *SHAPE_COLUMNS, "num_tensor_parallel_workers", "num_tokens", *(f"{op}_ms" for op in OPS)])
        for chip in CATALOG:
            for model in MODELS:
                text = subprocess.run(["git", "-C", vidur, "show", f"{rev}:data/profiling/compute/{chip}/{model}/mlp.csv"],
                                      capture_output=True, text=True, check=True).stdout
                seen = set()
                for r in csv.DictReader(io.StringIO(text)):
                    m, tp = int(r["num_tokens"]), int(r["num_tensor_parallel_workers"])
                    if m not in ROWS or (m, tp) in seen:
                        continue
                    seen.add((m, tp))
                    w.writerow([chip, model, *(r[c] for c in SHAPE_COLUMNS), tp, m, *(r[f"time_stats.{op}.median"] for op in OPS)])


def shapes(r):
    """(op, n, k) of each projection at this row's TP."""
    tp = int(r["num_tensor_parallel_workers"])
    h, heads, kv, f = int(r["n_embd"]), int(r["n_head"]), int(r["n_kv_head"]), int(r["n_expanded_embd"])
    d = h // heads
    gated = r["use_gated_mlp"] == "True"
    return {"attn_pre_proj": ((heads + 2 * kv) * d // tp, h), "attn_post_proj": (h, heads * d // tp),
            "mlp_up_proj": ((2 if gated else 1) * f // tp, h), "mlp_down_proj": (h, f // tp)}


def read_jobs(chips):
    with open(EXCERPT) as f:
        lines = [line for line in f if not line.startswith("#")]
    jobs = []
    for r in csv.DictReader(lines):
        if r["chip"] not in chips:
            continue
        m, tp = int(r["num_tokens"]), int(r["num_tensor_parallel_workers"])
        for name, (n, k) in shapes(r).items():
            jobs.append(dict(chip=r["chip"], model=r["model"].split("/")[1], tp=tp, op=OPS[name], m=m, n=n, k=k,
                             measured=float(r[f"{name}_ms"]) * 1e-3))
    return jobs


def price(job, bin_):
    out = subprocess.run([bin_, "op", "matmul", "--m", str(job["m"]), "--n", str(job["n"]), "--k", str(job["k"]), "--dtype", "bf16",
                          "--hw", CATALOG[job["chip"]], "--json"], capture_output=True, text=True, check=True).stdout
    return json.loads(out)["t_realistic_s"]


def print_chip(chip, jobs):
    by_rows, by_waves, by_op = {}, {}, {}
    for j in jobs:
        e, m = j["error"], j["m"]
        bucket = next(b for b in [1, 8, 16, 32, 64, 96, 128, 256, 512, 1024, 2048, 4096] if m <= b)
        by_rows.setdefault(bucket, []).append(e)
        by_op.setdefault((j["op"], bucket), []).append(e)
        if m >= 256:
            w = math.ceil(m / 128) * math.ceil(j["n"] / 128) / SMS[chip]
            by_waves.setdefault(min(12, round(w * 4) / 4 if w < 3 else round(w)), []).append(e)
    print(f"{len(jobs)} GEMMs of Vidur's {chip} profile against `op matmul --dtype bf16 --hw {CATALOG[chip]}` (error: priced / measured - 1)")
    print("\nrows (up to) | GEMMs | median error | p10 | p90")
    for b in sorted(by_rows):
        v = sorted(by_rows[b])
        print(f"{b:>12} | {len(v):>5} | {100 * statistics.median(v):+11.1f}% | {100 * v[len(v) // 10]:+.0f}% | {100 * v[9 * len(v) // 10]:+.0f}%")
    print("\nby projection, median error at each size:")
    for op in OPS.values():
        cells = " ".join(f"{b}:{100 * statistics.median(by_op[(op, b)]):+.0f}%" for b in sorted(by_rows) if (op, b) in by_op)
        print(f"  {op:<5} {cells}")
    print("\n256 rows and more, by waves of 128 x 128 tiles over the SMs | GEMMs | median error")
    for w in sorted(by_waves):
        v = by_waves[w]
        print(f"{w:>6} | {len(v):>4} | {100 * statistics.median(v):+.1f}%")
    print()


def groups(jobs):
    """Errors by chip, model and projection (over TP and the checked rows), and by chip."""
    out = {}
    for j in jobs:
        if j["m"] not in CHECKED_ROWS:
            continue
        out.setdefault(f"{j['chip']}, {j['model']}, {j['op']}", []).append(j["error"])
        out.setdefault(f"{j['chip']}, all", []).append(j["error"])
    return {g: band(e) for g, e in out.items()}


def check(g, path, chips):
    # The recorded groups of the chips this run prices (a run of one chip checks that chip's).
    stored = {key: v for key, v in json.load(open(path))["groups"].items() if key.split(",")[0] in chips}
    bad = vanished(g, stored, path)
    bad += [line for key, v in g.items() if (line := grown(key, v, stored.get(key), path, TOLERANCE))]
    for line in bad:
        print(f"gemm_check_vidur: {line}")
    print(f"gemm_check_vidur: {len(g)} groups checked, {len(bad)} failed (a median |error| grown by more than "
          f"{100 * TOLERANCE:.0f} points, or a group not in both)")
    return 1 if bad else 0


def usage_error(message):
    """Bad arguments: one line on stderr, exit 2."""
    print(message, file=sys.stderr)
    sys.exit(2)


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "--extract":
        extract(sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else "e26eb8f")
        return 0
    mode = next((a for a in sys.argv[1:] if a in ("--write", "--check")), None)
    if mode and sys.argv.index(mode) + 1 >= len(sys.argv):
        usage_error(f"gemm_check_vidur.py: {mode} needs a FILE.json")
    path = sys.argv[sys.argv.index(mode) + 1] if mode else None
    args = [a for a in sys.argv[1:] if not a.startswith("--") and a != path]
    if not args:
        usage_error(__doc__)
    bin_, which = args[0], args[1] if len(args) > 1 else "all"
    if which not in ("h100", "a100", "all"):
        usage_error(f"gemm_check_vidur.py: '{which}' is not a chip of the profile: expected h100, a100 or all")
    if mode == "--write" and which != "all":
        usage_error(f"gemm_check_vidur.py: --write records both chips' groups: run it with all, not {which}")
    chips = list(CATALOG) if which == "all" else [which]
    jobs = read_jobs(chips)
    if mode == "--check":
        jobs = [j for j in jobs if j["m"] in CHECKED_ROWS]
    with ThreadPoolExecutor(os.cpu_count() or 2) as pool:
        for j, t in zip(jobs, pool.map(lambda j: price(j, bin_), jobs)):
            j["error"] = t / j["measured"] - 1
    g = groups(jobs)
    if mode == "--check":
        return check(g, path, chips)
    for chip in chips:
        print_chip(chip, [j for j in jobs if j["chip"] == chip])
    print("by chip, model and projection (over TP 1-8 and the rows --check reads) | GEMMs | median error | median |error| | p90 |error| | range")
    for key, v in g.items():
        print(f"  {key} | {v['n']} | {100 * v['median']:+.1f}% | {100 * v['median_abs']:.1f}% | {100 * v['p90_abs']:.1f}% | "
              f"{100 * v['low']:+.0f}% to {100 * v['high']:+.0f}%")
    if mode == "--write":
        doc = {"about": "Errors of ridgeline op matmul (bf16, realistic time) against Vidur's H100 and A100 kernel profiles "
                        "(fp16) of six models' four projections at TP 1-8, 96 rows and the powers of two from 1 to 4096, by chip, model and projection: "
                        "median signed error, median and p90 |error|, range; made by scripts/gemm_check_vidur.py "
                        "(docs/cost-model.md#kernel-curves). Errors are priced / measured - 1.",
               "source": "microsoft/vidur e26eb8f, data/profiling/compute/{h100,a100}/<model>/mlp.csv (excerpt: "
                         "data/validation/vidur-linears.csv)",
               "groups": g}
        write_json(path, doc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
