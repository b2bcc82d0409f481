#!/usr/bin/env python3
"""Checks the sample outputs in README.md and docs/*.md against the binary (`make docs`, and
the DocsSamples test): every fenced block whose first line is `$ ridgeline ARGS` is run
from the repository root and its output compared with the block's other lines. A line `...`
stands for any number of lines, so a block may show an excerpt: the pieces between `...`
must appear in the output in order, each as consecutive whole lines; a block that does not
start with the output's first line shows lines picked out of it, each of which must be a
line of the output, in order; otherwise the block is the whole output. Commands that write
files (`--out`, `--plot`, `--requests-out`) run with those files in a scratch
directory; commands with a shell pipe or redirection, or that measure this machine
(`measure`, `validate` without a chip file), are not run.

Every block of README.md is covered: besides samples, a block of `ridgeline ...` commands
(the tour) has each command run in a scratch directory (the repository's tests/ and data/
linked in) and must exit 0; a block of `make TARGET` lines names targets of the Makefile; a
`python` block runs with the module beside the binary (build/dev/python), a line needing a
package that is not installed skipped; a block of this machine's measurements is shown, not
compared. Any other README block is reported as one the check cannot run.

Figures quoted in prose (a step time in a sentence, a percentage in a paragraph) are checked
too, where docs/figures.json registers them: each entry names the doc, the sentence around the
figure with `{}` where the figure stands, the `ridgeline` command (its JSON output), the value's
key path in it and the figure's format; the sentence, with the value the binary gives now, must
be in the doc (whitespace and line breaks aside).

Usage: check_docs.py RIDGELINE_BINARY REPOSITORY_ROOT. Exit 1 listing each drifted block."""
import glob
import json
import re
import os
import shlex
import subprocess
import sys
import tempfile

# Flags whose value is a file or directory the command writes: redirected to a scratch directory.
WRITES = ("--out", "--plot", "--requests-out", "--steps-out")


def scratch_args(args, scratch):
    """`args` with each written path moved into `scratch` (same base name)."""
    out = list(args)
    for i, a in enumerate(out[:-1]):
        if a in WRITES:
            out[i + 1] = os.path.join(scratch, os.path.basename(out[i + 1].rstrip("/")) or "out")
    return out


def fenced(path):
    """(first line number, info string, lines) of every fenced block."""
    lines = open(path, encoding="utf-8").read().split("\n")
    i = 0
    while i < len(lines):
        if lines[i].startswith("```"):
            j = i + 1
            while j < len(lines) and not lines[j].startswith("```"):
                j += 1
            yield i + 1, lines[i][3:].strip(), lines[i + 1:j]
            i = j + 1
        else:
            i += 1


def machine_block(body):
    return any(l.startswith("$ ridgeline measure") or l.startswith("$ ridgeline validate") for l in body)


def check_readme_blocks(binary, root, scratch):
    """README blocks other than samples: (checked, drifted)."""
    checked = drift = 0
    path = os.path.join(root, "README.md")
    makefile = open(os.path.join(root, "Makefile"), encoding="utf-8").read()
    targets = set(re.findall(r"^([\w-]+):", makefile, re.M))
    bindir = os.path.join(scratch, "bin")
    os.makedirs(bindir, exist_ok=True)
    link = os.path.join(bindir, "ridgeline")
    if not os.path.exists(link):
        os.symlink(binary, link)
    sandbox = os.path.join(scratch, "tour")
    os.makedirs(sandbox, exist_ok=True)
    for d in ("tests", "data", "docs"):
        if not os.path.exists(os.path.join(sandbox, d)):
            os.symlink(os.path.join(root, d), os.path.join(sandbox, d))
    env = dict(os.environ, PATH=bindir + os.pathsep + os.environ.get("PATH", ""))
    python_dir = os.path.normpath(os.path.join(os.path.dirname(binary), "..", "..", "python"))
    for line, info, body in fenced(path):
        text = [l for l in body if l.strip()]
        if not text or any(l.startswith("$ ridgeline ") for l in body):
            if machine_block(body):
                print(f"README.md:{line}: this machine's measurements: shown, not compared")
            continue  # samples: checked by main()
        checked += 1
        if all(l.startswith("make ") for l in text):
            missing = [l.split()[1] for l in text if l.split()[1] not in targets]
            if missing:
                drift += 1
                print(f"README.md:{line}: make {', '.join(missing)}: not a target of the Makefile")
            continue
        if info == "python":
            if not os.path.isdir(python_dir):
                print(f"README.md:{line}: the Python module is not built beside the binary: not run")
                continue
            program = "import importlib.util, sys\n"
            for l in body:
                if not l.strip():
                    continue
                mods = re.findall(r"^\s*import (\w+)", l) + re.findall(r";\s*import (\w+)", l)
                guard = " and ".join(f"importlib.util.find_spec({m!r})" for m in mods if m != "ridgeline")
                program += (f"if {guard}:\n    " if guard else "") + l + "\n"
            r = subprocess.run([sys.executable, "-c", program], cwd=root, capture_output=True, text=True, timeout=600,
                               env=dict(os.environ, PYTHONPATH=python_dir))
            if r.returncode != 0:
                drift += 1
                print(f"README.md:{line}: the Python block fails: {(r.stderr.strip().splitlines() or ['?'])[-1]}")
            continue
        commands = []
        for l in body:
            l = re.sub(r"\s+#.*$", "", l.rstrip())
            if not l:
                continue
            if commands and commands[-1].endswith("\\"):
                commands[-1] = commands[-1][:-1] + " " + l.strip()
            else:
                commands.append(l)
        if not all(c.startswith("ridgeline ") for c in commands):
            drift += 1
            print(f"README.md:{line}: a block the docs check cannot run: make it a `$ ridgeline` sample or a list of commands")
            continue
        for c in commands:
            if re.search(r"\bridgeline (measure|validate)\b", c) or "import-ert" in c:
                continue  # this machine, or a file the reader brings
            r = subprocess.run(["sh", "-c", c], cwd=sandbox, capture_output=True, text=True, timeout=600, env=env)
            if r.returncode != 0:
                drift += 1
                print(f"README.md:{line}: `{c}` exits {r.returncode}: {(r.stderr.strip().splitlines() or ['?'])[0]}")
    return checked, drift


def blocks(path):
    """(line, command, expected lines) for each `$ ridgeline` command of each fenced block."""
    for fence, _, body in fenced(path):
        k = 0
        while k < len(body):
            if not body[k].startswith("$ ridgeline "):
                k += 1
                continue
            start, command = k, body[k][2:]
            k += 1
            while command.endswith("\\") and k < len(body):  # continued on the next line
                command = command[:-1] + " " + body[k].strip()
                k += 1
            out = []
            while k < len(body) and not body[k].startswith("$ "):
                out.append(body[k])
                k += 1
            if out:
                yield fence + 1 + start, command, out


# Wall-clock figures (how long the run took here) vary from run to run: compared without them.
VOLATILE = [
    (re.compile(r"(simulated \d+ requests) in .*"), r"\1 in <wall time>"),
    (re.compile(r"\) in [\d.]+ ?[mun]?s: [\d.]+ ?[kMG]? ?plans/s"), r") in <wall time>"),
    (re.compile(r"(\d+ (deployments|configurations)[^,]*) in [\d.]+ ?[mun]?s"), r"\1 in <wall time>"),
    (re.compile(r"requests simulated \([\d.e+]+ requests/s\)"), r"requests simulated (<rate>)"),
]


def steady(line):
    line = line.rstrip()
    for pattern, replacement in VOLATILE:
        line = pattern.sub(replacement, line)
    return line


def matches(expected, actual):
    """Whole output, or an excerpt of it (see the module's doc)."""
    expected = [steady(l) for l in expected]
    actual = [steady(l) for l in actual]
    for v in (expected, actual):
        while v and not v[-1]:
            v.pop()
    if any(l.strip() == "..." for l in expected):
        # Pieces between `...` lines: consecutive lines, in order.
        pieces, piece = [], []
        for line in expected:
            if line.strip() == "...":
                pieces.append(piece)
                piece = []
            else:
                piece.append(line)
        pieces.append(piece)
        at = 0
        for k, p in enumerate(pieces):
            while p and not p[-1]:
                p.pop()
            if not p:
                continue
            found = next((s for s in range(at, len(actual) - len(p) + 1) if actual[s:s + len(p)] == p), -1)
            if found < 0 or (k == 0 and found != 0):
                return False
            at = found + len(p)
        return True
    if expected and actual and expected[0] == actual[0]:
        return expected == actual  # from the top: the whole output
    # Lines picked out of the output (an excerpt without `...`): each of them, in order.
    at = 0
    for line in expected:
        if not line:
            continue
        while at < len(actual) and actual[at] != line:
            at += 1
        if at == len(actual):
            return False
        at += 1
    return True


def json_value(doc, path):
    """The value at a dot-separated key path of a JSON document: a number indexes a list, and
    `list[key=value,...]` picks the one element of a list whose fields have those values (an
    op by its name and phase, a rule by its id), which a row added before it does not move."""
    v = doc
    for key in re.split(r"\.(?![^\[]*\])", path):  # (a dot inside brackets is a value's)
        select = re.fullmatch(r"(\w+)\[(.+)\]", key)
        if select:
            want = dict(pair.split("=", 1) for pair in select.group(2).split(","))
            rows = [row for row in v[select.group(1)]
                    if isinstance(row, dict) and all(k in row and str(row[k]) == x for k, x in want.items())]
            if len(rows) != 1:
                raise KeyError(f"{len(rows)} rows of {select.group(1)} with {select.group(2)}")
            v = rows[0]
        else:
            v = v[int(key)] if isinstance(v, list) else v[key]
    return v


def collapse(text):
    """Whitespace and line breaks as single spaces, and the typographic minus (U+2212) as '-'
    (a format writes '-3%' where the prose writes '−3%')."""
    return re.sub(r"\s+", " ", text).replace("\u2212", "-")


def run_json(binary, root, args):
    """A command's JSON output, or (None, why not)."""
    try:
        r = subprocess.run([binary] + shlex.split(args), cwd=root, capture_output=True, text=True, timeout=600)
    except subprocess.TimeoutExpired:
        return None, "did not finish in 600 s"
    if r.returncode != 0:
        return None, f"exits {r.returncode}: {(r.stderr.strip().splitlines() or ['?'])[0]}"
    try:
        return json.loads(r.stdout), ""
    except ValueError:
        return None, "prints no JSON"


def check_figure(binary, root, e, outputs, docs):
    """One registry entry: None when the doc says what the binary gives, else what is wrong."""
    if not isinstance(e, dict):
        return f"not an object: {e!r}"
    missing = [k for k in ("doc", "says", "run", "value", "format") if k not in e]
    if missing or not isinstance(e["says"], str) or e["says"].count("{}") != 1:
        return f"needs doc, says (one '{{}}'), run, value and format; has {sorted(e)}"
    if e["run"] not in outputs:
        outputs[e["run"]] = run_json(binary, root, e["run"])
    doc_json, why = outputs[e["run"]]
    if doc_json is None:
        return f"`ridgeline {e['run']}` {why}"
    try:
        value = json_value(doc_json, e["value"])
    except (KeyError, IndexError, ValueError, TypeError):
        return f"`ridgeline {e['run']}` has no {e['value']}"
    if "over" in e:
        # A share: the value over another of the same output, or over the sum of an object's or
        # a list's numbers (a class's share of a split).
        try:
            whole = json_value(doc_json, e["over"])
            whole = sum(whole.values() if isinstance(whole, dict) else whole) if isinstance(whole, (dict, list)) else whole
            value = value / whole
        except (KeyError, IndexError, ValueError, TypeError, ZeroDivisionError):
            return f"`ridgeline {e['run']}` has no number at {e['over']} to take {e['value']} over"
    try:
        # A figure quoted against a published measurement: its error, value / measured - 1; then
        # the scale (100 for a percentage, 1000 for ms).
        if "relative_to" in e:
            value = value / e["relative_to"] - 1
        figure = collapse(e["format"].format(value * e["scale"] if "scale" in e else value))
    except (ValueError, TypeError, KeyError, IndexError, ZeroDivisionError) as err:
        return f"format {e['format']!r} of {e['value']} = {value!r}: {err}"
    if e["doc"] not in docs:
        try:
            docs[e["doc"]] = collapse(open(os.path.join(root, e["doc"]), encoding="utf-8").read())
        except OSError as err:
            docs[e["doc"]] = None
            return f"cannot read {e['doc']}: {err.strerror}"
    text = docs[e["doc"]]
    if text is None:
        return f"cannot read {e['doc']}"
    says = collapse(e["says"])
    before, after = says.split("{}")
    if before + figure + after in text:
        return None
    # The figure the doc quotes instead: the binary's figure's shape (its numbers any numbers, its
    # units kept), else any few characters between the sentence's two parts.
    shape = "".join(r"[-+]?[\d.,]+" if re.fullmatch(r"[-+]?[\d.,]+", t) else re.escape(t)
                    for t in re.split(r"([-+]?[\d.,]+)", figure) if t)
    m = (re.search(re.escape(before) + "(" + shape + ")" + re.escape(after), text)
         or re.search(re.escape(before) + r"(.{1,40}?)" + re.escape(after), text))
    # (Named as the doc writes them, its minus signs kept, that a search of the doc finds them.)
    raw_before, raw_after = re.sub(r"\s+", " ", e["says"]).split("{}")
    if m:
        return (f"says '{raw_before + m.group(1) + raw_after}'; `ridgeline {e['run']}` gives {figure} ({e['value']}); "
                f"rerun and mend the prose")
    return f"no longer says '{raw_before + '{}' + raw_after}' (the binary gives {figure}): mend the prose or the entry in docs/figures.json"


def check_figures(binary, root, path=None):
    """docs/figures.json's prose figures (or another registry's at `path`): (checked, drifted).
    Each drifted or broken entry is printed on a line of its own."""
    path = path or os.path.join(root, "docs", "figures.json")
    if not os.path.exists(path):
        return 0, 0
    try:
        entries = json.load(open(path, encoding="utf-8"))["figures"]
    except (ValueError, KeyError, TypeError) as err:
        print(f"{os.path.relpath(path, root)}: not a registry of figures: {err}")
        return 0, 1
    outputs, docs = {}, {}
    drift = 0
    for n, e in enumerate(entries):
        wrong = check_figure(binary, root, e, outputs, docs)
        if wrong is not None:
            drift += 1
            print(f"{os.path.relpath(path, root)} entry {n + 1} ({e.get('doc', '?') if isinstance(e, dict) else '?'}): {wrong}")
    return len(entries), drift


def main():
    with tempfile.TemporaryDirectory(prefix="ridgeline-docs-") as scratch:  # the files samples write, removed after
        return check(os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2]), scratch)


def check(binary, root, scratch):
    files = [os.path.join(root, "README.md")] + sorted(glob.glob(os.path.join(root, "docs", "*.md")))
    drift = checked = 0
    for f in files:
        for line, command, expected in blocks(f):
            command = re.sub(r"\s{2,}\([^)]*\)$", "", command)  # "    (totals)": a note on what the block shows
            args = shlex.split(command)[1:]
            if "|" in command or ">" in command:
                continue
            if args and (args[0] == "measure" or (args[0] == "validate" and "--hw" not in args)):
                continue  # this machine's numbers
            r = subprocess.run([binary] + scratch_args(args, scratch), cwd=root, capture_output=True, text=True, timeout=600)
            checked += 1
            if not matches(expected, r.stdout.split("\n")):
                drift += 1
                print(f"{os.path.relpath(f, root)}:{line}: `{command}` prints something else now; rerun it and paste its output"
                      f" (a line '...' stands for lines left out)")
    # Counts the README states in its tour: the catalog's chips and the bundled models.
    readme = open(os.path.join(root, "README.md"), encoding="utf-8").read()
    for pattern, command in ((r"the catalog: (\d+) chips", ["hw", "list", "--json"]), (r"(\d+) bundled Hugging Face configs", ["models", "--json"])):
        m = re.search(pattern, readme)
        if m is None:
            continue
        checked += 1
        actual = len(json.loads(subprocess.run([binary] + command, cwd=root, capture_output=True, text=True, timeout=60).stdout))
        if actual != int(m.group(1)):
            drift += 1
            print(f"README.md: says '{m.group(0)}', `ridgeline {' '.join(command[:-1])}` lists {actual}")
    c, d = check_readme_blocks(binary, root, scratch)
    checked += c
    drift += d
    fc, fd = check_figures(binary, root)
    drift += fd
    print(f"{checked} samples and README blocks and {fc} prose figures checked, {drift} drifted")
    return 1 if drift else 0


if __name__ == "__main__":
    sys.exit(main())
