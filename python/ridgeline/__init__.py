"""ridgeline from Python: where does the time go, and what bounds it?

One rule makes the API predictable: each command of the ``ridgeline`` command line is a
function of the same name, its flags are keyword arguments (dashes become underscores),
and it returns what ``--json`` prints, as dicts and lists::

    import ridgeline
    ridgeline.infer(model="llama-3.1-8b", hw="h100-sxm", batch=1, prompt=128, gen=16)["ttft_s"]
    ridgeline.op("matmul", m=256, k=4096, n=4096, dtype="bf16", hw="h200")["bound"]
    ridgeline.search("train", model="llama-3.1-70b", hw="h100-sxm", gpus=64, global_batch=64)["best"][0]

Commands with a subcommand or a file take it first (``op("matmul", ...)``,
``hw("show", "h200")``, ``profile("run.csv", hw="t4")``, ``search("infer", ...)``).
``True`` passes a flag, ``False`` and ``None`` leave it out, a list becomes a
comma-separated value (``weight_dtypes=["bf16", "fp8"]``) or, for ``peak`` and
``capacity``, one flag per item. Bad input raises ``ValueError`` with the command line's
one-line message.
"""

from __future__ import annotations

import difflib
import functools
import inspect
import json
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple, Union

from . import _ridgeline

__all__ = [
    "RidgelineError", "advise", "block", "calibrate", "fuse", "hw", "infer", "main", "measure", "models", "op", "plot",
    "profile", "recompute", "report", "run", "search", "serve", "threshold", "train", "validate",
]

_REPEATED = {"peak", "capacity", "price"}

# The version of the command line the module runs (`ridgeline --version`).
__version__: str = _ridgeline.run(["--version"])[1].split()[-1]


class RidgelineError(RuntimeError):
    """An internal error of ridgeline (exit status 1): a bug, never bad input."""


def _flags(kwargs: Dict[str, Any]) -> List[str]:
    out: List[str] = []
    for key, value in kwargs.items():
        flag = "--" + key.replace("_", "-")
        if value is None or value is False:
            continue
        if value is True:
            out.append(flag)
        elif isinstance(value, dict):
            if key in _REPEATED:  # price={"h100-sxm": "2.5/h"}: one flag per entry
                for k, v in value.items():
                    out += [flag, f"{k}={v}"]
            else:  # slo={"ttft_p99": "1s", "tpot_p99": "50ms"}: one flag, KEY=VALUE,KEY=VALUE
                out += [flag, ",".join(f"{k}={v}" for k, v in value.items())]
        elif isinstance(value, (list, tuple)):
            if key in _REPEATED:
                for v in value:
                    out += [flag, str(v)]
            else:
                out += [flag, ",".join(str(v) for v in value)]
        else:
            out += [flag, str(value)]
    return out


# What the commands return: the JSON document `--json` prints. An object for one analysis; a
# list for the catalog, the bundled models, advice, and any command given several chips
# (`hw="h100-sxm,h200"`: one document per chip).
Document = Dict[str, Any]
Documents = Union[Dict[str, Any], List[Dict[str, Any]]]


def run(*args: str) -> Any:
    """Runs ``ridgeline ARGS... --json`` and returns the parsed document."""
    status, out, err = _ridgeline.run([str(a) for a in args] + ["--json"])
    message = err.strip().splitlines()[0] if err.strip() else ""
    for prefix in ("ridgeline: error: ", "ridgeline: internal error: "):
        if message.startswith(prefix):
            message = message[len(prefix):]
    if status == 2:
        raise ValueError(message)
    if status not in (0, 130):
        raise RidgelineError(message or f"ridgeline exited with status {status}")
    if "--help" in args or "-h" in args:
        return out  # help is text, not a document
    return json.loads(out)


# The keyword arguments each command takes come from the command line's own option table
# (`_ridgeline.flags`), so the functions cannot drift from the flags.
_KIND_TYPES = {"INT": "int", "INT|auto": "Union[int, str]", "FRACTION": "float", "FACTOR": "float", "NUMBER": "float", "DAYS": "float",
               "0-3": "int"}


@functools.lru_cache(maxsize=None)
def _options(path: Tuple[str, ...]) -> Tuple[Dict[str, Any], ...]:
    return tuple(f for f in _ridgeline.flags(list(path)) if not f["positional"] and f["name"] != "--json")


def _keyword(flag: Dict[str, Any]) -> str:
    return flag["name"][2:].replace("-", "_")


def _check(function: str, path: Tuple[str, ...], kwargs: Dict[str, Any], extra: Iterable[str] = ()) -> None:
    """TypeError for a keyword the command does not take, naming the closest it does."""
    options = _options(path)
    if not options:
        return  # an unknown command or kind: the command line says so
    valid = {_keyword(f) for f in options} | set(extra)
    for key in kwargs:
        if key not in valid:
            close = difflib.get_close_matches(key, sorted(valid), n=1)
            hint = f"; did you mean '{close[0]}'?" if close else f"; it takes {', '.join(sorted(valid))}"
            raise TypeError(f"{function}() got an unexpected keyword argument '{key}'{hint}")


def _python_type(flag: Dict[str, Any]) -> str:
    if not flag["kind"]:
        return "bool"
    kind = flag["kind"]
    if flag["repeatable"] or "[," in kind:
        return "Union[str, Sequence[Any]]"
    if "=" in kind or kind.startswith("TARGET"):  # KEY=VALUE lists (--slo): a string or a dict
        return "Union[str, Dict[str, Any]]"
    typed = _KIND_TYPES.get(kind, "str")
    if typed == "str" and isinstance(_default(flag), (int, float)):
        return "Union[int, float, str]"  # a number or a distribution (--prompt 1024, --prompt lognormal:1000,0.6)
    return typed


def _default(flag: Dict[str, Any]) -> Any:
    if not flag["kind"]:
        return False
    text = flag["default"]
    if text == "":
        return None
    for convert in (int, float):
        try:
            return convert(text)
        except ValueError:
            pass
    return text


def _document(fn: Callable[..., Any], path: Tuple[str, ...], positional: Sequence[str] = ()) -> None:
    """Gives `fn` the command's keyword arguments as its signature and in its docstring."""
    params = [inspect.Parameter(p, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation="str") for p in positional]
    own = inspect.signature(fn)
    lines = []
    for f in _options(path):
        name = _keyword(f)
        if name in positional:
            continue
        if name in own.parameters and own.parameters[name].kind != inspect.Parameter.VAR_KEYWORD:
            # The function's own default wins (serve's per_request=False: the signature's).
            p = own.parameters[name]
            params.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=p.default, annotation=p.annotation))
            lines.append(f"    {name}: {f['kind'] or 'flag'} (default {p.default}): {f['description']}")
            continue
        params.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=_default(f), annotation=_python_type(f)))
        shown = f" (default {f['default']})" if f["default"] else ""
        lines.append(f"    {name}: {f['kind'] or 'flag'}{shown}: {f['description']}")
    fn.__signature__ = inspect.Signature(params, return_annotation=own.return_annotation)  # type: ignore[attr-defined]
    fn.__doc__ = (fn.__doc__ or "") + "\n\n    Keyword arguments (the flags of ``ridgeline " + " ".join(path) + "``):\n\n" + "\n".join(lines) + "\n"


def _command(words: Iterable[str], kwargs: Dict[str, Any], function: str = "", path: Optional[Tuple[str, ...]] = None,
             extra: Iterable[str] = ()) -> Any:
    words = list(words)
    _check(function or words[0], tuple(path if path is not None else words), kwargs, extra)
    return run(*words, *_flags(kwargs))


def hw(action: str = "list", name: Optional[str] = None, **kwargs: Any) -> Documents:
    """``ridgeline hw list``, ``hw show NAME``, ``hw import-ert FILE``."""
    words = [action.replace("_", "-")] + ([name] if name is not None else [])
    return _command(["hw", *words], kwargs, "hw", ("hw", words[0]))


def op(kind: str, **kwargs: Any) -> Document:
    """``ridgeline op KIND``: FLOPs, bytes, intensity, lower/upper/realistic times, bound."""
    return _command(["op", kind], kwargs, "op")


def threshold(kind: str, **kwargs: Any) -> Document:
    """``ridgeline threshold KIND --solve V``: where the op turns compute-bound."""
    return _command(["threshold", kind], kwargs, "threshold")


def models(**kwargs: Any) -> List[Dict[str, Any]]:
    """``ridgeline models``: the bundled models and their parameter counts."""
    return _command(["models"], kwargs)


def infer(**kwargs: Any) -> Documents:
    """``ridgeline infer``: TTFT, TPOT, throughput, memory and per-op bounds of serving."""
    return _command(["infer"], kwargs)


def serve(per_request: bool = False, **kwargs: Any) -> Documents:
    """``ridgeline serve``: a request-level simulation of a continuous-batching engine.

    Returns the summary (``ttft_s``, ``tpot_s``, ``e2e_s`` ... as ``--json`` prints it) and,
    with ``per_request=True``, every request's times as columns under ``"requests"``:
    ``pandas.DataFrame(result["requests"])`` is one row per request (``id``, ``arrival_s``,
    ``queue_s``, ``ttft_s``, ``tpot_s``, ``e2e_s``, tokens). They are kept in memory until the
    run ends (~0.5 kB a request): for millions, ``requests_out="rows.csv"`` streams them to a file.
    """
    _check("serve", ("serve",), kwargs)
    return _command(["serve"], {**kwargs, "per_request": per_request})


def block(**kwargs: Any) -> Document:
    """``ridgeline block``: one transformer block in units of one (s,h)x(h,h) GEMM."""
    return _command(["block"], kwargs)


def train(**kwargs: Any) -> Documents:
    """``ridgeline train``: one training step (step time, MFU/HFU, communication, memory)."""
    return _command(["train"], kwargs)


def recompute(**kwargs: Any) -> Document:
    """``ridgeline recompute``: keep, recompute or offload per activation under a budget."""
    return _command(["recompute"], kwargs)


def fuse(**kwargs: Any) -> Document:
    """``ridgeline fuse``: what fusion, GEMM epilogues and CUDA graphs save."""
    return _command(["fuse"], kwargs)


def profile(file: str, **kwargs: Any) -> Document:
    """``ridgeline profile FILE``: captured kernels on the roofline."""
    return _command(["profile", str(file)], kwargs, "profile", ("profile",))


def advise(kind: str, file: Optional[str] = None, **kwargs: Any) -> Documents:
    """``ridgeline advise profile FILE | infer | train``: ranked advice with gains."""
    return _command(["advise", kind] + ([str(file)] if file is not None else []), kwargs, "advise", ("advise", kind))


def plot(kind: str, file: Optional[str] = None, **kwargs: Any) -> Document:
    """``ridgeline plot roofline|sweep|breakdown|memory``: writes the chart to ``out``."""
    return _command(["plot", kind] + ([str(file)] if file is not None else []), kwargs, "plot", ("plot", kind))


def measure(**kwargs: Any) -> Document:
    """``ridgeline measure``: this machine's ceilings and bandwidths (``quick=True`` in seconds)."""
    return _command(["measure"], kwargs)


def validate(**kwargs: Any) -> Document:
    """``ridgeline validate``: real kernels timed here beside their predictions (``only=["gemm"]``, ``hw="host.yaml"``)."""
    return _command(["validate"], kwargs)


def calibrate(file: str, **kwargs: Any) -> Document:
    """``ridgeline calibrate FILE``: each kernel class's achievable fraction from a profile or ``validate`` output."""
    return _command(["calibrate", str(file)], kwargs, "calibrate", ("calibrate",))


def report(**kwargs: Any) -> Document:
    """``ridgeline report``: one self-contained HTML page (``out="report.html"``): an inference analysis, or
    ``train=True`` a training step, ``serve=True`` a serving run, ``fleet=True`` a capacity search
    (``search serve``'s flags); returns what ``--json`` prints."""
    page = ("report-train" if kwargs.get("train") else "report-serve" if kwargs.get("serve")
            else "report-fleet" if kwargs.get("fleet") else "report")
    return _command(["report"], kwargs, "report", (page,), extra=("train", "serve", "fleet"))


def search(kind: str, **kwargs: Any) -> Documents:
    """``ridgeline search train|infer|serve``: the best plans and the Pareto front (serve: the cheapest fleet)."""
    return _command(["search", kind], kwargs, "search")


for _fn, _path, _positional in ((models, ("models",), ()), (infer, ("infer",), ()), (serve, ("serve",), ()), (block, ("block",), ()),
                                 (train, ("train",), ()), (recompute, ("recompute",), ()), (fuse, ("fuse",), ()),
                                 (profile, ("profile",), ("file",)), (measure, ("measure",), ()), (validate, ("validate",), ()),
                                 (calibrate, ("calibrate",), ("file",))):
    _document(_fn, _path, _positional)
# `search` takes its kind first, each kind its own flags: listed by kind in its docstring.
search.__doc__ = (search.__doc__ or "") + "\n\n    Keyword arguments by kind (the flags of ``ridgeline search KIND``):\n" + "".join(
    f"\n    {_kind}: " + ", ".join(_keyword(f) for f in _options(("search", _kind))) + "\n" for _kind in ("train", "infer", "serve"))


def _stubs() -> str:
    """The package's type stubs (``__init__.pyi``), written next to it at build time from the
    same signatures: the flags of each command, typed by their kinds."""
    out = ["# Generated from ridgeline's option table at build time (ridgeline._stubs): do not edit.",
           "from typing import Any, Dict, List, Optional, Sequence, Union", "", "__version__: str", "",
           "Document = Dict[str, Any]", "Documents = Union[Dict[str, Any], List[Dict[str, Any]]]", "",
           "class RidgelineError(RuntimeError): ...", ""]
    for name in sorted(__all__):
        obj = globals()[name]
        if isinstance(obj, type):
            continue
        sig = inspect.signature(obj)
        params = []
        star = False
        for p in sig.parameters.values():
            if p.kind == inspect.Parameter.KEYWORD_ONLY and not star:
                params.append("*")
                star = True
            if p.kind == inspect.Parameter.VAR_POSITIONAL:
                params.append(f"*{p.name}: {p.annotation if p.annotation is not inspect.Parameter.empty else 'Any'}")
                star = True
            elif p.kind == inspect.Parameter.VAR_KEYWORD:
                params.append(f"**{p.name}: Any")
            else:
                annotation = p.annotation if p.annotation is not inspect.Parameter.empty else "Any"
                if p.default is inspect.Parameter.empty:
                    params.append(f"{p.name}: {annotation}")
                else:
                    optional = annotation if str(annotation).startswith("Optional[") else f"Optional[{annotation}]"
                    params.append(f"{p.name}: {optional} = ...")
        returns = sig.return_annotation if sig.return_annotation is not inspect.Signature.empty else "Any"
        out.append(f"def {name}({', '.join(params)}) -> {returns}: ...")
    return "\n".join(out) + "\n"


def main() -> None:
    """The ``ridgeline`` console script of a pip install: the command line itself."""
    import sys

    status, out, err = _ridgeline.run(sys.argv[1:])
    sys.stdout.write(out)
    sys.stderr.write(err)
    raise SystemExit(status)
