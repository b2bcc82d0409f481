#!/usr/bin/env python3
"""The H100's GEMM curve against kernel times nobody here measured: Llama-2-70B's four linear layers
at tensor-parallel degrees 1, 2, 4 and 8 and 1 to 4096 tokens, as Vidur profiled them (cuBLAS bf16
through torch.nn.functional.linear; data/validation/vidur-h100-llama-2-70b-linears.csv). Each shape is
priced by `ridgeline op matmul` (its realistic time: the gemm class's efficiencies and fixed time,
data/hardware/nvidia/h100-sxm.yaml) and compared, error = predicted / measured - 1. None of these
points is among the curves the chip file fits: a check, not a calibration (docs/cost-model.md#kernel-check).

Usage:
  kernel_validation.py [RIDGELINE]                    the markdown table (docs/cost-model.md)
  kernel_validation.py RIDGELINE --write FILE.json    and the errors by layer and TP into FILE
  kernel_validation.py RIDGELINE --check FILE.json    exit 1 when a group's median |error| grew by
                                                      more than 5 points over FILE's, or a group is missing
RIDGELINE defaults to build/dev/apps/ridgeline/ridgeline.
"""

import concurrent.futures
import csv
import json
import os
import statistics
import subprocess
import sys

MODE = next((a for a in sys.argv[1:] if a in ("--write", "--check")), None)
if MODE and sys.argv.index(MODE) + 1 >= len(sys.argv):
    sys.exit(f"kernel_validation.py: {MODE} needs a FILE.json")
BAND_FILE = sys.argv[sys.argv.index(MODE) + 1] if MODE else None
ARGS = [a for a in sys.argv[1:] if not a.startswith("--") and a != BAND_FILE]
BIN = ARGS[0] if ARGS else "build/dev/apps/ridgeline/ridgeline"
TOLERANCE = 0.05  # --check: a group's median |error| may grow by 5 points
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
DATA = os.path.join(ROOT, "data", "validation", "vidur-h100-llama-2-70b-linears.csv")
SOURCE = ("microsoft/vidur (commit 7d47513), data/profiling/compute/h100/meta-llama/Llama-2-70b-hf/mlp.csv: "
          "median kernel times of the linear layers, torch profiler, bf16")

# Llama-2-70B: hidden 8192, 64 query heads and 8 KV heads of 128, MLP 28672 gated (gate and up in one GEMM).
# Each layer's (n, k) at tensor-parallel degree tp: column-parallel layers split n, row-parallel ones k.
LAYERS = {
    "qkv": lambda tp: ((64 + 2 * 8) * 128 // tp, 8192),
    "o": lambda tp: (8192, 8192 // tp),
    "gate_up": lambda tp: (2 * 28672 // tp, 8192),
    "down": lambda tp: (8192, 28672 // tp),
}


def read_rows():
    with open(DATA) as f:
        lines = [line for line in f if not line.startswith("#")]
    out = []
    for r in csv.DictReader(lines):
        tp, tokens = int(r["tp"]), int(r["tokens"])
        for layer, shape in LAYERS.items():
            n, k = shape(tp)
            out.append(dict(layer=layer, tp=tp, m=tokens, n=n, k=k, measured_s=float(r[f"{layer}_ms"]) / 1e3))
    return out


def price(row):
    cmd = [BIN, "op", "matmul", "--hw", "h100-sxm", "--dtype", "bf16", "--m", str(row["m"]), "--n", str(row["n"]),
           "--k", str(row["k"]), "--json"]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    return json.loads(out)["t_realistic_s"]


def groups(rows):
    out = {}
    for r in rows:
        out.setdefault(f"{r['layer']}, tp {r['tp']}", []).append(r["error"])
    out["all"] = [r["error"] for r in rows]
    return {g: dict(n=len(e), median=statistics.median(e), median_abs=statistics.median(abs(x) for x in e),
                    low=min(e), high=max(e)) for g, e in out.items()}


def print_table(rows, g):
    print("| layer | TP | m x n x k at 1 token | 1 | 16 | 64 | 256 | 1024 | 4096 | median error | median \\|error\\| | range |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    by = {(r["layer"], r["tp"], r["m"]): r for r in rows}
    for layer in LAYERS:
        for tp in (1, 2, 4, 8):
            key = f"{layer}, tp {tp}"
            if key not in g:
                continue
            v = g[key]
            n, k = LAYERS[layer](tp)
            cells = [f"{100 * by[(layer, tp, m)]['error']:+.0f}%" if (layer, tp, m) in by else "" for m in (1, 16, 64, 256, 1024, 4096)]
            print(f"| {layer} | {tp} | 1 x {n} x {k} | {' | '.join(cells)} | {100 * v['median']:+.0f}% | {100 * v['median_abs']:.0f}% | "
                  f"{100 * v['low']:+.0f}% to {100 * v['high']:+.0f}% |")
    a = g["all"]
    print(f"\nAll {a['n']} shapes (13 token counts from 1 to 4096): median error {100 * a['median']:+.0f}%, median |error| "
          f"{100 * a['median_abs']:.0f}%, from {100 * a['low']:+.0f}% to {100 * a['high']:+.0f}%.")


def main():
    rows = read_rows()
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        for r, t in zip(rows, pool.map(price, rows)):
            r["predicted_s"] = t
            r["error"] = t / r["measured_s"] - 1
    g = groups(rows)
    if MODE == "--check":
        stored = json.load(open(BAND_FILE))["groups"]
        bad = []
        for key, v in g.items():
            old = stored.get(key)
            if old is None:
                bad.append(f"{key}: not in {BAND_FILE} (rerun with --write)")
            elif v["median_abs"] > old["median_abs"] + TOLERANCE:
                bad.append(f"{key}: median |error| {100 * v['median_abs']:.1f}% against {100 * old['median_abs']:.1f}% recorded")
        for line in bad:
            print(f"kernel_validation: {line}")
        print(f"kernel_validation: {len(g)} groups checked, {len(bad)} failed (a median |error| grown by more than "
              f"{100 * TOLERANCE:.0f} points, or not recorded)")
        return 1 if bad else 0
    print_table(rows, g)
    if MODE == "--write":
        doc = {"about": "Errors of ridgeline op matmul (h100-sxm, bf16, realistic time) against Vidur's H100 kernel times of "
                        "Llama-2-70B's linear layers, by layer and tensor-parallel degree: median signed error, median |error|, "
                        "range; made by scripts/kernel_validation.py (docs/cost-model.md#kernel-check). Errors are "
                        "predicted / measured - 1.",
               "source": SOURCE, "groups": g}
        with open(BAND_FILE, "w") as f:
            json.dump(doc, f, indent=1, sort_keys=True)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
