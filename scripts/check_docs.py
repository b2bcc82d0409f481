#!/usr/bin/env python3
"""Checks the sample outputs in README.md and docs/*.md against the binary (`make docs`, and
the DocsSamples test): every fenced block whose first line is `$ ridgeline ARGS` is run
from the repository root and its output compared with the block's other lines. A line `...`
stands for any number of lines, so a block may show an excerpt: the pieces between `...`
must appear in the output in order, each as consecutive whole lines; a block that does not
start with the output's first line shows lines picked out of it, each of which must be a
line of the output, in order; otherwise the block is the whole output. Commands that write
files (`--out`, `--plot`, `--requests-out`), use a shell pipe, or measure this machine
(`measure`, `validate` without a chip file) are not run.

Usage: check_docs.py RIDGELINE_BINARY REPOSITORY_ROOT. Exit 1 listing each drifted block."""
import glob
import json
import re
import os
import shlex
import subprocess
import sys


def blocks(path):
    """(line, command, expected lines) for each `$ ridgeline` command of each fenced block."""
    lines = open(path, encoding="utf-8").read().split("\n")
    i = 0
    while i < len(lines):
        if lines[i].startswith("```"):
            j = i + 1
            while j < len(lines) and not lines[j].startswith("```"):
                j += 1
            k = i + 1
            while k < j:
                if not lines[k].startswith("$ ridgeline "):
                    k += 1
                    continue
                start, command = k, lines[k][2:]
                k += 1
                while command.endswith("\\") and k < j:  # continued on the next line
                    command = command[:-1] + " " + lines[k].strip()
                    k += 1
                out = []
                while k < j and not lines[k].startswith("$ "):
                    out.append(lines[k])
                    k += 1
                if out:
                    yield start + 1, command, out
            i = j + 1
        else:
            i += 1


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


def main():
    binary, root = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    files = [os.path.join(root, "README.md")] + sorted(glob.glob(os.path.join(root, "docs", "*.md")))
    drift = checked = 0
    for f in files:
        for line, command, expected in blocks(f):
            command = re.sub(r"\s{2,}\([^)]*\)$", "", command)  # "    (totals)": a note on what the block shows
            args = shlex.split(command)[1:]
            if any(a in ("--out", "--plot", "--requests-out") for a in args) or "|" in command or ">" in command:
                continue
            if args and (args[0] == "measure" or (args[0] == "validate" and "--hw" not in args)):
                continue  # this machine's numbers
            r = subprocess.run([binary] + args, cwd=root, capture_output=True, text=True, timeout=300)
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
    print(f"{checked} samples checked, {drift} drifted")
    return 1 if drift else 0


if __name__ == "__main__":
    sys.exit(main())
