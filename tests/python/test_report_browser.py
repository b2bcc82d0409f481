"""`ridgeline report` in a real browser: headless Chromium (Debian's, installed by
scripts/install-deps.sh) loads the page with #selftest; the page reports its console
errors, the size and points of each chart, and a column sort it clicked; a screenshot is
saved under the build's artifacts/ directory."""

import json
import os
import re
import shutil
import subprocess
import tempfile

import pytest

BIN = os.environ.get("RIDGELINE_BIN", "ridgeline")
ARTIFACTS = os.environ.get("RIDGELINE_ARTIFACTS", tempfile.gettempdir())
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

if CHROMIUM is None and os.environ.get("RIDGELINE_SKIP_BROWSER") == "1":
    pytest.skip("RIDGELINE_SKIP_BROWSER=1 and no chromium", allow_module_level=True)


def ridgeline(*args):
    r = subprocess.run([BIN, *args], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return r.stdout


def chromium(*args, profile):
    assert CHROMIUM, "chromium is missing: scripts/install-deps.sh installs it (RIDGELINE_SKIP_BROWSER=1 skips)"
    cmd = [CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
           f"--user-data-dir={profile}", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def check_in_browser(html_path, expected_points, expected_rows, name, tmp_path,
                     charts_expected=("chart-roofline", "chart-breakdown", "chart-memory")):
    page = "file://" + os.path.abspath(html_path)
    # At 1400 px, as a person reads it (docs/charts.md#html-report).
    r = chromium("--window-size=1400,2000", "--virtual-time-budget=5000", "--dump-dom", page + "#selftest", profile=tmp_path / "profile")
    m = re.search(r'<pre id="selftest"[^>]*>(.*?)</pre>', r.stdout, re.S)
    assert m and m.group(1), "the self-test did not run: " + r.stdout[-500:] + r.stderr[-2000:]
    verdict = json.loads(m.group(1).replace("&quot;", '"').replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">"))
    assert verdict["errors"] == []
    charts = {c["id"]: c for c in verdict["charts"]}
    assert set(charts) == set(charts_expected)
    for c in verdict["charts"]:
        assert c["width"] > 100 and c["height"] > 100, c
        assert c["elements"] > 10, c
        # No text under 9 px as drawn (the by-kind panels side by side were scaled to ~6 px), none
        # leaving its chart.
        assert c["smallest_text_px"] >= 9, c
        assert c["text_outside"] == 0, c
    # The page fits the window, and no table cell breaks over lines ("215.3\n ms").
    layout = verdict["layout"]
    assert layout["page_width"] <= layout["window_width"], layout
    assert layout["wrapped_cells"] == 0, layout
    if "chart-roofline" in charts:
        assert charts["chart-roofline"]["points"] == expected_points
    s = verdict["sort"]
    assert s["rows"] == expected_rows
    assert s["ascending"] and s["descending"] and s["distinct"], s
    os.makedirs(ARTIFACTS, exist_ok=True)
    shot = os.path.join(ARTIFACTS, f"report-{name}.png")
    chromium("--hide-scrollbars", "--window-size=1400,3000", f"--screenshot={shot}", page, profile=tmp_path / "profile2")
    assert os.path.getsize(shot) > 10000


def roofline_points(doc):
    # The ops the roofline can place: FLOPs, bytes and a time.
    return sum(1 for op in doc["ops"] if op["flops"] > 0 and op["bytes"] > 0 and op["attained_flops_per_s"] > 0)


def self_contained(html):
    # Nothing fetched at view time: no external scripts, styles, images or fonts.
    assert not re.search(r'(src|href)\s*=\s*"(https?:)?//', html)
    assert "<link" not in html and "@import" not in html


def test_serving_report(tmp_path):
    flags = ["--model", "llama-3.1-8b", "--hw", "h100-sxm", "--batch", "8", "--prompt", "1024", "--gen", "128"]
    out = tmp_path / "serve.html"
    ridgeline("report", *flags, "--out", str(out))
    doc = json.loads(ridgeline("infer", *flags, "--json"))
    html = out.read_text()
    self_contained(html)
    assert roofline_points(doc) > 10
    # Shares as the command line shows them: 5.6%, not 0.0558 (the raw fraction stays in data-v for sorting).
    share = max(op["share"] for op in doc["ops"])
    assert re.search(r'<td data-v="[0-9.e-]+">%.1f%%</td>' % (100 * share), html)
    # The TTFT and TPOT cards name where the prefill's and the last decode step's time goes,
    # the JSON's largest kernel class first.
    largest = max(doc["prefill"]["time_by_kernel_class_s"].items(), key=lambda kv: kv[1])[0]
    assert "-bound; by kernel class: " + largest + " " in html
    assert "its last step; by kernel class: " in html
    check_in_browser(out, roofline_points(doc), len(doc["ops"]), "serve", tmp_path)


def test_training_report(tmp_path):
    flags = ["--model", "llama-3.1-70b", "--hw", "h100-sxm", "--gpus", "64", "--tp", "8", "--pp", "4", "--global-batch", "64",
             "--sequence-parallel", "--recompute", "selective"]
    out = tmp_path / "train.html"
    ridgeline("report", "--train", *flags, "--out", str(out))
    doc = json.loads(ridgeline("train", *flags, "--json"))
    html = out.read_text()
    self_contained(html)
    # The step time card names where the compute goes, the JSON's largest kernel class first.
    largest = max(doc["time_by_kernel_class_s"].items(), key=lambda kv: kv[1])[0]
    assert "; by kernel class: " + largest + " " in html
    check_in_browser(out, roofline_points(doc), len(doc["ops"]), "train", tmp_path)


def test_serve_report(tmp_path):
    # A serving simulation's page: its latency CDFs, requests and KV over time, the percentile
    # table (five metrics) sorted by a click.
    flags = ["--model", "llama-3.1-8b", "--hw", "h100-sxm", "--qps", "8", "--requests", "500", "--prompt", "lognormal:800,0.7",
             "--gen", "lognormal:200,0.7", "--slo", "ttft_p99=500ms,tpot_p99=20ms"]
    out = tmp_path / "sim.html"
    ridgeline("report", "--serve", *flags, "--out", str(out))
    html = out.read_text()
    self_contained(html)
    assert "goodput" in html
    # The step cards say where a step's device time goes: its largest kernel classes first.
    assert "; by kernel class: gemm " in html
    # Counts in full: the ITL row's samples (one per gap between tokens, ~10^5 here) as a whole
    # number, not 9.948e+04.
    assert not re.search(r">[0-9.]+e\+[0-9]+</td>", html), re.search(r">[0-9.]+e\+[0-9]+</td>", html)
    check_in_browser(out, 0, 5, "simulate", tmp_path, ("chart-latency", "chart-timeline", "chart-kv"))


def test_fleet_report(tmp_path):
    # A capacity search's page: the chosen deployment, the Pareto chart, its CDFs and load over
    # time, and every feasible deployment in the cost table, sorted by a click.
    flags = ["--model", "llama-3.1-8b", "--hw", "h100-sxm,a100-80gb", "--tp", "1,2", "--max-num-seqs", "64,256", "--qps", "20",
             "--requests", "300", "--slo", "ttft_p99=1s,tpot_p99=40ms", "--price", "h100-sxm=4.76/h", "--price", "a100-80gb=2.45/h",
             "--disagg", "both", "--max-rate", "off"]
    out = tmp_path / "fleet.html"
    ridgeline("report", "--fleet", *flags, "--out", str(out))
    doc = json.loads(ridgeline("search", "serve", *flags, "--top", "10000", "--json"))
    html = out.read_text()
    self_contained(html)
    assert doc["best"]["command"] in html.replace("&#39;", "'")
    # The cost table: cheapest first, deployments that differ only in their sequence limit and
    # ran the same on one row, at most 20 rows, the rest counted; costs with their currency.
    def run_key(d):
        return tuple(json.dumps(d.get(k), sort_keys=True) for k in (
            "hw", "tp", "ep", "experts", "engine", "max_batched_tokens", "chunked_prefill", "graph_padding", "spec_tokens", "draft",
            "weight_dtype", "kv_dtype", "replicas", "disagg", "gpus", "max_qps")) + (d["ttft_s"]["p99"], d["tpot_s"]["p99"], d["output_tokens_per_s"])
    rows = 0
    for i, d in enumerate(doc["feasible"]):
        rows += 1 if i == 0 or run_key(d) != run_key(doc["feasible"][i - 1]) else 0
    assert rows > 20  # the case has more near-identical deployments than a page should list
    assert "more rows (" in html
    assert re.search(r'<div class="value">\$[0-9.]+/h</div><div class="note">\$[0-9.]+ per million output tokens', html)
    check_in_browser(out, 0, min(rows, 20), "fleet", tmp_path, ("chart-pareto", "chart-latency", "chart-timeline"))


def test_report_bad_input():
    r = subprocess.run([BIN, "report", "--model", "llama-3.1-8b", "--batch", "0", "--out", "x.html"], capture_output=True, text=True)
    assert r.returncode == 2 and "--batch" in r.stderr
    r = subprocess.run([BIN, "report", "--train", "--model", "llama-3.1-8b", "--gpus", "3", "--tp", "2", "--out", "x.html"],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "--gpus" in r.stderr
    r = subprocess.run([BIN, "report", "--serve", "--model", "llama-3.1-8b", "--qps", "0", "--out", "x.html"], capture_output=True, text=True)
    assert r.returncode == 2 and "--qps" in r.stderr
    r = subprocess.run([BIN, "report", "--serve", "--train", "--out", "x.html"], capture_output=True, text=True)
    assert r.returncode == 2 and "--serve" in r.stderr
    r = subprocess.run([BIN, "report", "--fleet", "--serve", "--out", "x.html"], capture_output=True, text=True)
    assert r.returncode == 2 and "--fleet" in r.stderr
    r = subprocess.run([BIN, "report", "--fleet", "--model", "llama-3.1-8b", "--qps", "1", "--disagg", "maybe", "--out", "x.html"],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "--disagg" in r.stderr
