#!/usr/bin/env python3
"""The steps inside the DeepSeek-R1 runs of docs/serving.md#against-published-measurements,
read from the gaps between tokens (docs/serving.md, "The same node's other runs say where the
DeepSeek steps go"). A check only: nothing is fitted to it.

Each benchmark_serving.py result holds the run's gap statistics (median and p99 of the gaps
between tokens, every request's gaps pooled), and the DGX H200's files every request's gaps.
At 10 requests/s the prompts of a run arrive while earlier requests decode, so a request's gaps
are of two kinds: a decode step's (tens of ms), and the steps that carry a prompt or a chunk of
one (hundreds of ms), which every request decoding then sees. The median gap is a decode step,
the p99 gap (with long prompts) a step that carries one. In the fixed-length runs, whose
requests all decode as long, the gaps over 100 ms that the first request saw count and time
the prompt-carrying steps. Beside them, `ridgeline serve` on the same run (the arguments of
serving_validation.py): its gaps' p50 and p99, its prompt-carrying (mixed or prefill) steps, and
of those the ones the first request would see as gaps over 100 ms (`serve --steps-out` and
`--requests-out`: started while it decodes, lasting longer), their count and median. A second
table puts these steps by the prompts they held: the model's prompt-carrying steps while the
first request decodes (all of them, those under 100 ms too), by their prompt chunks, beside the
gaps over 100 ms it saw, sorted into runs of near values (prompts arrive at random, so a step may
carry one, two or more; where a prompt fits in one step, as the 1000-token ones do, the runs
tell how many).

Usage:
  step_gaps.py RIDGELINE VLLM_BENCHMARK_GIT_DIR [REV]

VLLM_BENCHMARK_GIT_DIR: a clone (or bare mirror) of simon-mo/vLLM-Benchmark, read at REV
(default d538cdc) with `git show`.
"""
import collections
import csv
import json
import os
import statistics
import subprocess
import sys
import tempfile

if len(sys.argv) < 3:
    sys.exit(__doc__)
BIN, REPO = sys.argv[1], sys.argv[2]
REV = sys.argv[3] if len(sys.argv) > 3 else "d538cdc"
LONG = 0.1  # s: a gap this long carried a prompt (a decode step of these runs takes 14-85 ms)

sys.dont_write_bytecode = True  # (no __pycache__ beside the scripts)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import serving_validation as sv  # noqa: E402  (its sets: the same rows, the same serve arguments)

sv.BIN = BIN
DGX = "saved-results/v0.8.4/deepseek-r1/h200/2025-04-18/deepseek-r1-h200-04182025"
NEBIUS = "saved-results/v0.8.4/deepseek-r1/nebius-h200/2025-04-18/deepseek-r1-nebius-h200-04182025"


def file_of(key, cells):
    """The result file of a row of the sets read here (None for the others): vLLM at TP 8 and with
    expert parallelism, TensorRT-LLM (whose TTFTs the validation leaves out; its gaps are not), and
    the Nebius node's vLLM runs (cells: layout, lengths)."""
    lengths = str(cells[-1]).replace("/", "-")
    return {"vllm-0.8-deepseek-r1": f"{DGX}/vllm-{lengths}-.json", "vllm-0.8-deepseek-r1-ep": f"{DGX}/vllm-{lengths}-ep.json",
            "trtllm-deepseek-r1": f"{DGX}/trt-{lengths}.json",
            "vllm-0.8-deepseek-r1-nebius": f"{NEBIUS}/vllm-{lengths}-{'ep' if cells[0] == 'EP 8' else ''}.json"}.get(key)


def measured(path, fixed):
    text = subprocess.run(["git", "-C", REPO, "show", f"{REV}:{path}"], capture_output=True, text=True)
    if text.returncode != 0:
        sys.exit(f"step_gaps: {REV}:{path}: {text.stderr.strip()}")
    d = json.loads(text.stdout)
    m = dict(p50=d["median_itl_ms"] / 1e3, p99=d["p99_itl_ms"] / 1e3, long=None)
    if fixed and d.get("itls"):  # every request decodes as long: the first sees the prompts that arrive
        m["long"] = sorted(g for g in d["itls"][0] if g > LONG)
    return m


def groups(times):
    """Sorted times (s) as runs of near values, each within 8% of the one before: "count x lo-hi ms"
    ("none" for no times). Prompts arrive at random, so some steps carry several: where a prompt fits
    in one step the runs tell how many a step held, though a chained run may join neighbouring counts."""
    out, run = [], []
    for t in sorted(times):
        if run and t > run[-1] * 1.08:
            out.append(run)
            run = []
        run.append(t)
    if run:
        out.append(run)
    if not out:
        return "none"

    def span(r):
        lo, hi = f"{r[0] * 1e3:.0f}", f"{r[-1] * 1e3:.0f}"
        return lo if lo == hi else f"{lo}-{hi}"
    return ", ".join(f"{len(r)} x {span(r)}" for r in out)


def main():
    by_prompts = []  # the second table's rows
    print("| run | in/out | gap p50 (ms) | measured | error | gap p99 (ms) | measured | error "
          "| prompt steps | of them > 100 ms while the first request decodes: count, median (ms) "
          "| measured (gaps > 100 ms the first request saw) | their median (ms) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for s in sv.SETS:
        for args, _, cells, _ in s["rows"]:
            path = file_of(s["key"], cells)
            if path is None:
                continue
            m = measured(path, cells[-1] != "sharegpt")
            with tempfile.TemporaryDirectory() as tmp:
                steps_csv, requests_csv = os.path.join(tmp, "steps.csv"), os.path.join(tmp, "requests.csv")
                j = sv.serve([*args, "--steps-out", steps_csv, "--requests-out", requests_csv], s["engine"])
                with open(requests_csv) as f:
                    first = next(r for r in csv.DictReader(f) if r["id"] == "0")
                with open(steps_csv) as f:
                    rows = list(csv.DictReader(f))
            # The model's steps read as the measured ones are: those that carry prompt tokens while
            # the first request decodes (its first token to its last), over LONG.
            t0 = float(first["arrival_s"]) + float(first["ttft_s"])
            t1 = float(first["arrival_s"]) + float(first["e2e_s"])
            during = [r for r in rows if float(r["prompt_tokens"]) > 0 and t0 <= float(r["start_s"]) < t1]
            carried = [float(r["period_s"]) for r in during if float(r["period_s"]) > LONG]
            label = f"{s['key']}{' ' + cells[0] if len(cells) > 1 else ''}"
            if m["long"] is not None:
                by_chunks = collections.defaultdict(list)
                for r in during:
                    by_chunks[int(float(r["prompt_chunks"]))].append(float(r["period_s"]))
                model_by = "; ".join(f"{c}: {groups(by_chunks[c])}" for c in sorted(by_chunks))
                by_prompts.append(f"| {label} | {cells[-1]} | {model_by} | {groups(m['long'])} |")
            p50, p99 = j["itl_s"]["p50"], j["itl_s"]["p99"]
            steps = j["steps"]["mixed"] + j["steps"]["prefill"]
            assert steps == sum(1 for r in rows if float(r["prompt_tokens"]) > 0)
            long = m["long"]
            n = "n/a" if long is None else len(long)
            med = "n/a" if not long else f"{statistics.median(long) * 1e3:.0f}"
            model = f"{len(carried)}, {statistics.median(carried) * 1e3:.0f}" if carried else "0"
            print(f"| {label} | {cells[-1]} | {p50 * 1e3:.1f} | {m['p50'] * 1e3:.1f} "
                  f"| {p50 / m['p50'] - 1:+.0%} | {p99 * 1e3:.0f} | {m['p99'] * 1e3:.0f} | {p99 / m['p99'] - 1:+.0%} | {steps} "
                  f"| {model} | {n} | {med} |")
    # The same steps by the prompts they held: the model's prompt-carrying steps while the first
    # request decodes, by their prompt chunks, beside the gaps over 100 ms it saw, in runs of near values.
    print()
    print("| run | in/out | model: prompt-carrying steps while the first request decodes, by chunks: count x ms "
          "| measured: gaps > 100 ms the first request saw, in runs of near values: count x ms |")
    print("|---|---|---|---|")
    print("\n".join(by_prompts))


if __name__ == "__main__":
    main()
