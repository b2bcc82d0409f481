"""The Python module: each command a function of the same name returning what --json prints."""

import inspect
import json
import os
import subprocess

import pytest

import ridgeline

BIN = os.environ.get("RIDGELINE_BIN", "ridgeline")


def cli_json(*args):
    return json.loads(subprocess.run([BIN, *args, "--json"], check=True, capture_output=True, text=True).stdout)


def test_version_is_the_command_lines():
    # pyproject.toml and CMakeLists.txt both say 0.1.0; the module reports the binary's.
    assert ridgeline.__version__ == "0.1.0"


def test_matmul_counts_by_hand():
    r = ridgeline.op("matmul", m=256, k=4096, n=4096, dtype="bf16", hw="h200")
    # 2·m·k·n FLOPs; bytes: A 256·4096 + B 4096·4096 + C 256·4096 bf16 elements, 2 bytes each:
    # 2·(1048576 + 16777216 + 1048576) = 37748736.
    assert r["flops"] == 2 * 256 * 4096 * 4096
    assert r["bytes"] == 37748736
    assert r["bound"] == "compute"


def test_same_document_as_the_command_line():
    kw = dict(model="llama-3.1-8b", hw="h100-sxm", batch=1, prompt=128, gen=16)
    assert ridgeline.infer(**kw) == cli_json("infer", "--model", "llama-3.1-8b", "--hw", "h100-sxm", "--batch", "1",
                                             "--prompt", "128", "--gen", "16")


def test_underscores_become_dashes_and_true_is_a_flag():
    r = ridgeline.train(model="llama-3.1-8b", hw="h100-sxm", gpus=8, tp=2, global_batch=16, sequence_parallel=True,
                        micro_batch=2)
    assert r["global_batch"] == 16
    assert r["sequence_parallel"] is True
    assert r["dp"] == 4  # 8 GPUs / tp 2
    assert r["micro_batches"] == 2  # 16 sequences / (dp 4 x micro-batch 2)


def test_lists_join_with_commas_or_repeat():
    r = ridgeline.search("infer", model="llama-3.1-8b", hw="h100-sxm", chips_max=1, batch_max=2, prompt=64, gen=8,
                         weight_dtypes=["bf16"], kv_dtypes=["bf16", "fp8"], top=10)
    # 1 chip, 1 weight dtype, 2 KV dtypes, batches 1 and 2: 4 plans.
    assert r["evaluated"] == 4
    assert {p["kv_dtype"] for p in r["best"]} == {"bf16", "fp8_e4m3"}
    # --peak is repeated, one flag per item: both overrides land.
    chip = ridgeline.hw("show", "h200", peak=["bf16=1e15", "fp8=2e15"])
    assert chip["peak_flops_per_s"]["bf16"] == 1e15
    assert chip["peak_flops_per_s"]["fp8_e4m3"] == 2e15


def test_bad_input_is_a_value_error_with_the_cli_message():
    with pytest.raises(ValueError, match="--m: 0 is not positive"):
        ridgeline.op("matmul", m=0, k=1, n=1)
    with pytest.raises(ValueError, match="unknown hardware 'h300'"):
        ridgeline.infer(model="llama-3.1-8b", hw="h300")
    with pytest.raises(ValueError, match="--gpus"):
        ridgeline.search("train", model="llama-3.1-8b", gpus=0, global_batch=8)


def test_hardware_catalog_and_models():
    assert "h100-sxm" in [c["name"] for c in ridgeline.hw("list")]
    assert ridgeline.hw("show", "h200")["name"] == "h200"
    assert "llama-3.1-70b" in [m["name"] for m in ridgeline.models()]


def test_typed_package():
    pkg = os.path.dirname(ridgeline.__file__)
    assert os.path.exists(os.path.join(pkg, "py.typed"))
    assert os.path.exists(os.path.join(pkg, "_ridgeline.pyi"))
    # The package's stubs: the functions with their flags, typed by kind.
    stubs = open(os.path.join(pkg, "__init__.pyi")).read()
    assert stubs == ridgeline._stubs()
    assert "def infer(*, " in stubs and "batch: Optional[int] = ..." in stubs and "cuda_graphs: Optional[bool] = ..." in stubs
    assert "def profile(file: str, *, " in stubs and "def op(kind: str, **kwargs: Any) -> Document: ..." in stubs
    # Return types name what comes back: one document, or a list of them (several chips, the catalog).
    assert "Document = Dict[str, Any]" in stubs and ") -> Documents: ..." in stubs and "def models() -> List[Dict[str, Any]]: ..." in stubs
    assert "-> Any: ..." not in stubs.replace("def run(*args: str) -> Any: ...", "")


def test_every_command_is_a_function():
    # The subcommands `ridgeline --help` lists, each a function of the module.
    text = subprocess.run([BIN, "--help"], check=True, capture_output=True, text=True).stdout
    listed = text.split("Subcommands:", 1)[1].splitlines()
    commands = [line.split()[0] for line in listed if line.startswith("  ") and line.split()]
    assert "validate" in commands and "infer" in commands
    missing = [c for c in commands if not callable(getattr(ridgeline, c, None))]
    assert missing == []
    assert set(commands) <= set(ridgeline.__all__)


def test_validate_predicts_what_the_command_line_does():
    # Only the streams on one thread against the round-number chip of the CLI tests: the
    # timings differ between runs, the predictions (from the chip file) do not. Triad in
    # DRAM: 67108860 model bytes + 22369620 write-allocate bytes at 10 GB/s = 8.947848 ms
    # (derived in tests/cli/validate_cli_test.cpp).
    hw = os.path.join(os.path.dirname(__file__), "..", "data", "validate-host.yaml")
    r = ridgeline.validate(hw=hw, only=["stream"], threads=1, quick=True)
    c = cli_json("validate", "--hw", hw, "--only", "stream", "--threads", "1", "--quick")
    assert [k["name"] for k in r["ops"]] == [k["name"] for k in c["ops"]]
    assert [k["predicted_s"] for k in r["ops"]] == [k["predicted_s"] for k in c["ops"]]
    triad = next(k for k in r["ops"] if k["name"] == "triad (DRAM)")
    assert triad["predicted_s"] == pytest.approx(8.947848e-3, rel=1e-12)
    assert all(k["checked"] for k in r["ops"])


def test_serve_returns_the_summary_and_per_request_columns():
    # The summary the command line prints, and one column entry per request (pandas-ready:
    # every column the same length).
    kw = dict(model="llama-3.1-8b", hw="h100-sxm", qps=5, requests=40, prompt="uniform:100,300", gen=32, seed=3)
    # The columns only when asked: a run keeps no row per request by default (issue 42).
    assert "requests" not in ridgeline.serve(**kw)
    r = ridgeline.serve(per_request=True, **kw)
    c = cli_json("serve", "--model", "llama-3.1-8b", "--hw", "h100-sxm", "--qps", "5", "--requests", "40",
                 "--prompt", "uniform:100,300", "--gen", "32", "--seed", "3")
    assert r["ttft_s"] == c["ttft_s"] and r["e2e_s"] == c["e2e_s"]
    cols = r["requests"]
    assert {len(v) for v in cols.values()} == {40}
    assert sorted(cols["id"]) == list(range(40))
    assert all(o == 32 for o in cols["output_tokens"])
    assert all(100 <= i <= 300 for i in cols["input_tokens"])
    assert all(q <= t <= e for q, t, e in zip(cols["queue_s"], cols["ttft_s"], cols["e2e_s"]))
    # A sweep is one summary per rate, without columns.
    s = ridgeline.serve(model="llama-3.1-8b", hw="h100-sxm", qps=[1, 4], requests=20)
    assert len(s["sweep"]) == 2 and "requests" not in s["sweep"][0]


def test_serve_replicas_auto_without_slo_names_the_missing_targets():
    # Issue 42: it complained about --requests-out/--per-request, which the function had
    # added on its own; the real problem is the missing --slo.
    with pytest.raises(ValueError, match=r"--replicas auto: give the targets to meet with --slo"):
        ridgeline.serve(model="llama-3.1-8b", hw="h100-sxm", qps=4, replicas="auto", requests=5)


def test_search_serve_with_prices_as_a_dict():
    # `search serve` from Python: prices as a dict (one --price per chip), lists as commas; the
    # best fleet costs its GPUs at its chip's price.
    prices = {"h100-sxm": "4.76/h", "a100-80gb": "2.45/h"}
    r = ridgeline.search("serve", model="llama-3.1-8b", hw="h100-sxm,a100-80gb", tp=[1, 2], qps=20, requests=300,
                         slo="ttft_p99=1s,tpot_p99=50ms", price=prices)
    assert r["ranked_by"] == "usd_per_hour"
    best = r["best"]
    assert abs(best["usd_per_hour"] - float(prices[best["hw"]][:-2]) * best["gpus"]) < 1e-9
    with pytest.raises(ValueError, match="--price"):
        ridgeline.search("serve", model="llama-3.1-8b", hw="h100-sxm", qps=20, price={"h100-sxm": "2.5"})


def test_nul_in_an_argument_is_refused():
    # A NUL would cut the argument where C reads it: m="25\x006" would run as 25.
    with pytest.raises(ValueError, match="NUL"):
        ridgeline.op("matmul", m="25\x006", k=4, n=4)
    with pytest.raises(ValueError, match="NUL"):
        ridgeline.hw("show", "h200\x00/etc/passwd")


def test_help_is_text_and_a_flag_without_value_says_so():
    assert "Usage" in ridgeline.run("infer", "--help") or "usage" in ridgeline.run("infer", "--help").lower()
    # m=True passes a bare --m, which takes the next flag as its value: said so.
    with pytest.raises(ValueError, match="--m: took '--k' as its value"):
        ridgeline.op("matmul", m=True, k=4, n=4)


def _help_flags(*command):
    # The flags `ridgeline COMMAND --help` lists, as keyword names.
    text = subprocess.run([BIN, *command, "--help"], check=True, capture_output=True, text=True).stdout
    names = set()
    for line in text.splitlines():
        words = line.split()
        if words and words[0].startswith("--") and words[0] not in ("--json",):
            names.add(words[0].split("=")[0][2:].replace("-", "_"))
    return names


def test_signatures_are_the_flags_of_the_command_line():
    # Each function's keyword arguments are its command's flags, with their defaults and
    # kinds in the docstring: the same table builds both.
    for fn, command in ((ridgeline.infer, ("infer",)), (ridgeline.train, ("train",)), (ridgeline.serve, ("serve",)),
                        (ridgeline.profile, ("profile",))):
        params = inspect.signature(fn).parameters
        keywords = {n for n, p in params.items() if p.kind == inspect.Parameter.KEYWORD_ONLY}
        assert keywords == _help_flags(*command), command
    params = inspect.signature(ridgeline.infer).parameters
    assert params["batch"].default == 1 and params["hw"].default == "h100-sxm" and params["cuda_graphs"].default is False
    assert params["batch"].annotation == "int"
    assert "batch: INT (default 1): sequences" in ridgeline.infer.__doc__
    assert list(inspect.signature(ridgeline.profile).parameters)[0] == "file"


def test_a_misspelt_keyword_is_a_type_error_naming_the_closest():
    with pytest.raises(TypeError, match="infer\\(\\) got an unexpected keyword argument 'bach'; did you mean 'batch'\\?"):
        ridgeline.infer(bach=4)
    with pytest.raises(TypeError, match="did you mean 'k'"):
        ridgeline.op("matmul", m=4, kk=4, n=4)
    with pytest.raises(TypeError, match="did you mean 'gpus'"):
        ridgeline.search("train", model="llama-3.1-8b", gpu=8, global_batch=8)
    with pytest.raises(TypeError, match="did you mean 'tokens'"):
        ridgeline.train(model="llama-3.1-8b", gpus=8, token="1T")
    # Keywords of another kind of the same command are not this kind's: op attention has no --m.
    with pytest.raises(TypeError, match="'m'"):
        ridgeline.op("attention", m=4)


def test_serve_replicas_auto_slo_dict_and_hints():
    # replicas="auto" searches counts: no per-request columns by default (the command refuses
    # them), and the signature's default is the one the call uses (False).
    r = ridgeline.serve(model="llama-3.1-8b", hw="h100-sxm", qps=4, requests=60, replicas="auto",
                        slo={"ttft_p99": "1s", "tpot_p99": "50ms"})
    assert r["replicas_search"]["replicas"] >= 1 and "requests" not in r
    c = cli_json("serve", "--model", "llama-3.1-8b", "--hw", "h100-sxm", "--qps", "4", "--requests", "60", "--replicas", "auto",
                 "--slo", "ttft_p99=1s,tpot_p99=50ms")
    assert r["ttft_s"] == c["ttft_s"] and r["replicas_search"] == c["replicas_search"]
    params = inspect.signature(ridgeline.serve).parameters
    assert params["per_request"].default is False and params["per_request"].annotation == "bool"
    # --prompt takes a number or a distribution: its hint says so (it said `str = 1024`).
    assert params["prompt"].default == 1024 and params["prompt"].annotation == "Union[int, float, str]"
    assert params["slo"].annotation == "Union[str, Dict[str, Any]]"
    assert inspect.signature(ridgeline.serve).return_annotation == "Documents"
    # A dict of a repeatable flag is one flag per entry; of any other, one KEY=VALUE,... flag.
    assert ridgeline._flags({"slo": {"ttft_p99": "1s", "tpot_p99": "50ms"}}) == ["--slo", "ttft_p99=1s,tpot_p99=50ms"]
    assert ridgeline._flags({"price": {"a": "1/h", "b": "2/h"}}) == ["--price", "a=1/h", "--price", "b=2/h"]


def test_report_fleet_from_python(tmp_path):
    out = str(tmp_path / "fleet.html")
    r = ridgeline.report(fleet=True, model="llama-3.1-8b", hw="h100-sxm", tp=1, qps=2, requests=40, out=out)
    assert r["out"] == out and os.path.getsize(out) == r["bytes"]


# Issue 40: the options `serve` and `search serve` gained, from Python under the CLI's names.
SMALL = dict(model="llama-3.1-8b", hw="h100-sxm", prompt=512, gen=64)


def test_serve_users_and_think_time():
    # One user thinking 2 s after each answer (vLLM 0.13: host between steps; no front end):
    # request i is sent at i (D + 2 s), D a lone request's E2E, so the 3 requests take
    # 3 D + 2 x 2 s from the first arrival to the last end.
    r = ridgeline.serve(users=1, think_time="2s", requests=3, front_end="0s", engine="vllm@0.13", per_request=True, **SMALL)
    d = r["e2e_s"]["max"]
    assert r["e2e_s"]["min"] == pytest.approx(d, rel=1e-9)
    assert r["requests"]["arrival_s"] == pytest.approx([0, d + 2, 2 * (d + 2)], rel=1e-9)
    assert r["requests_per_s"] == pytest.approx(3 / (3 * d + 4), rel=1e-9)


def test_serve_without_requests_chooses_its_window():
    # No `requests`: the run picks its measurement window, 10 / (1 - 0.99) = 1000 measured
    # requests for the p99 it reports; `requests` given: exactly those, as the window.
    r = ridgeline.serve(qps=5, **SMALL)
    assert r["steady_state"]["window"] == "chosen by the run"
    assert r["steady_state"]["measured_requests"] == 1000
    assert r["steady_state"]["reached"] is True
    r = ridgeline.serve(qps=5, requests=40, warmup_requests=10, **SMALL)
    assert r["steady_state"]["window"] == "the requests given"
    assert r["steady_state"]["warmup_requests"] == 10 and r["steady_state"]["measured_requests"] == 30


def test_serve_seeds_spread_is_the_runs_of_each_seed():
    # seeds=3 from seed 1: the runs of seeds 1, 2 and 3, each as `serve(seed=S)` alone; the
    # spread of TTFT p99 is their least, middle and largest, and (no SLO) the run shown is the
    # worst E2E p99.
    kw = dict(qps=5, requests=50, **SMALL)
    one = [ridgeline.serve(seed=s, **kw) for s in (1, 2, 3)]
    r = ridgeline.serve(seeds=3, **kw)
    ttft = sorted(x["ttft_s"]["p99"] for x in one)
    assert r["seeds"]["spread"]["ttft_s"]["p99"] == pytest.approx({"min": ttft[0], "median": ttft[1], "max": ttft[2]}, rel=1e-12)
    worst = max((1, 2, 3), key=lambda s: one[s - 1]["e2e_s"]["p99"])
    assert r["seeds"]["chosen_seed"] == worst


def test_serve_seed_quantile_picks_that_rank():
    # 5 seeds ordered by E2E p99 (no SLO): quantile 0.5 is rank ceil(0.5 x 5) = 3, the median run.
    kw = dict(qps=5, requests=50, **SMALL)
    p99 = {s: ridgeline.serve(seed=s, **kw)["e2e_s"]["p99"] for s in range(1, 6)}
    r = ridgeline.serve(seeds=5, seed_quantile=0.5, **kw)
    assert r["seeds"]["chosen_seed"] == sorted(p99, key=p99.get)[2]


def test_serve_itl_target_and_a_bad_key():
    # One client: every gap between tokens is a decode step of one sequence (ms), within 1 s.
    r = ridgeline.serve(concurrency=1, requests=5, slo={"itl_p99": "1s"}, **SMALL)
    assert r["slo_met"] is True and r["itl_s"]["p99"] < 1
    with pytest.raises(ValueError, match=r"--slo: 'itl_p42' is not a key: expected ttft, tpot, itl or e2e"):
        ridgeline.serve(concurrency=1, requests=5, slo={"itl_p42": "1s"}, **SMALL)


def test_search_serve_seeds_and_pareto_at_saturation():
    # The fleet sized on the worst of 2 seeds, and the front at each fleet's saturation: a rate
    # at or above the offered 20 req/s its fleet met the SLO at.
    r = ridgeline.search("serve", model="llama-3.1-8b", hw="h100-sxm", tp=1, qps=20, requests=300, slo="ttft_p99=1s,tpot_p99=50ms",
                         seeds=2, pareto="saturation")
    assert r["seeds"] == {"count": 2, "quantile": 1}
    assert r["pareto_at"] == "saturation"
    assert all(p["saturation"]["qps"] >= 20 for p in r["pareto"])
    # Its keywords are listed by kind in search's docstring.
    serve_line = next(line for line in ridgeline.search.__doc__.splitlines() if line.strip().startswith("serve:"))
    assert all(k in serve_line.split(": ")[1].split(", ") for k in ("pareto", "seeds", "seed_quantile", "users", "think_time", "margin"))
    with pytest.raises(TypeError, match="did you mean 'pareto'"):
        ridgeline.search("serve", model="llama-3.1-8b", hw="h100-sxm", qps=20, paretto="saturation")
