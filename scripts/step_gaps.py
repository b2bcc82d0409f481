#!/usr/bin/env python3
"""The steps inside the DeepSeek-R1 runs of docs/serving.md#against-published-measurements,
read from the gaps between tokens (docs/serving.md, "The same node's other runs say where the
DeepSeek steps go"). A check only: nothing is fitted to it.

Each benchmark_serving.py result keeps every request's inter-token gaps. At 10 requests/s the
prompts of a run arrive while earlier requests decode, so a request's gaps are of two kinds:
a decode step's (tens of ms), and the steps that carry a prompt or a chunk of one (hundreds of
ms), which every request decoding then sees. The median gap is a decode step; the gaps over
100 ms are the prompt-carrying steps, their count how many such steps ran while the longest
request decoded (in the fixed-length runs the first, which decodes while most prompts arrive). Beside them, `ridgeline serve` on the same run (the arguments of
serving_validation.py): its gaps' p50 and p99 against the measured ones, and its
prompt-carrying steps (mixed or prefill) against the count and median of the long gaps.

Usage:
  step_gaps.py RIDGELINE VLLM_BENCHMARK_GIT_DIR [REV]

VLLM_BENCHMARK_GIT_DIR: a clone (or bare mirror) of simon-mo/vLLM-Benchmark, read at REV
(default d538cdc) with `git show`.
"""
import json
import os
import statistics
import subprocess
import sys

if len(sys.argv) < 3:
    sys.exit(__doc__)
BIN, REPO = sys.argv[1], sys.argv[2]
REV = sys.argv[3] if len(sys.argv) > 3 else "d538cdc"
DIR = "saved-results/v0.8.4/deepseek-r1/h200/2025-04-18/deepseek-r1-h200-04182025"
LONG = 0.1  # s: a gap this long carried a prompt (a decode step of these runs takes 14-85 ms)

sys.argv = [sys.argv[0], BIN]  # serving_validation reads its own arguments at import
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import serving_validation as sv  # noqa: E402  (its sets: the same rows, the same serve arguments)

# The sets and the file of each row (by its in/out label): vLLM at TP 8, with expert parallelism,
# and TensorRT-LLM (whose TTFTs are left out of the validation; its gaps are not).
FILES = {"vllm-0.8-deepseek-r1": "vllm-{}-.json", "vllm-0.8-deepseek-r1-ep": "vllm-{}-ep.json",
         "trtllm-deepseek-r1": "trt-{}.json"}


def measured(name):
    d = json.loads(subprocess.run(["git", "-C", REPO, "show", f"{REV}:{DIR}/{name}"], capture_output=True, text=True,
                                  check=True).stdout)
    gaps = [g for itl in d["itls"] for g in itl]
    longest = max(d["itls"], key=len)  # the first of the longest (fixed lengths: the first request)
    long_first = [g for g in longest if g > LONG]
    return dict(p50=statistics.median(gaps), p99=d["p99_itl_ms"] / 1e3, long_n=len(long_first),
                long_median=statistics.median(long_first) if long_first else float("nan"))


def main():
    rows = []
    for s in sv.SETS:
        if s["key"] not in FILES:
            continue
        for args, _, cells, _ in s["rows"]:
            label = cells[0].replace("/", "-")
            m = measured(FILES[s["key"]].format(label))
            j = sv.serve(args, s["engine"])
            rows.append((s["key"], cells[0], m, j))
    print("| run | in/out | gap p50 (ms) | measured | error | gap p99 (ms) | measured | error "
          "| prompt steps | measured, while the longest request decodes | its long gaps' median (ms) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for key, io, m, j in rows:
        p50, p99 = j["itl_s"]["p50"], j["itl_s"]["p99"]
        steps = j["steps"]["mixed"] + j["steps"]["prefill"]
        print(f"| {key} | {io} | {p50 * 1e3:.1f} | {m['p50'] * 1e3:.1f} | {p50 / m['p50'] - 1:+.0%} | {p99 * 1e3:.0f} "
              f"| {m['p99'] * 1e3:.0f} | {p99 / m['p99'] - 1:+.0%} | {steps} | {m['long_n']} | {m['long_median'] * 1e3:.0f} |")


if __name__ == "__main__":
    main()
