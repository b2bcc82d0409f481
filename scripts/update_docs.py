#!/usr/bin/env python3
"""Reruns every drifted sample of README.md and docs/*.md (as check_docs.py finds them) and
writes the binary's output into the block: a whole-output block is replaced; an excerpt (a
block with `...` lines) keeps its lines, each replaced by the next output line of the same
shape (the same text with its numbers set aside), else of the same name (the text before its
first number). Lines it cannot place are listed and left as they were, for a person to
fix; so is any prose around a block that quotes its numbers (read the diff).

Usage: update_docs.py RIDGELINE_BINARY REPOSITORY_ROOT."""
import glob
import os
import re
import shlex
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_docs import blocks, matches, scratch_args, steady  # noqa: E402

NUMBER = re.compile(r"[-+]?\d[\d.,]*(e[-+]?\d+)?")


def shape(line):
    """The line with its numbers and the spaces around them set aside."""
    return re.sub(r"\s+", " ", NUMBER.sub("#", steady(line))).strip()


def label(line):
    """The text before the line's first number (a table row's name, a line's key)."""
    m = re.search(r"\d", steady(line))
    return re.sub(r"\s+", " ", steady(line)[:m.start()] if m else steady(line)).strip()


def updated(expected, actual):
    """The new block lines, and the expected lines that found no place."""
    while actual and not actual[-1].strip():
        actual.pop()
    excerpt = any(l.strip() == "..." for l in expected)
    if not excerpt and expected and actual and steady(expected[0]) == steady(actual[0]):
        return actual, []
    if excerpt:
        # An excerpt keeps its lines: each is replaced by the next output line of its shape or
        # name, so a piece between `...` lines stays as long as it was.
        out, lost, at = [], [], 0
        for line in expected:
            if line.strip() == "..." or not line.strip():
                out.append(line)
                continue
            found = next((i for i in range(at, len(actual)) if shape(actual[i]) == shape(line)), -1)
            if found < 0 and label(line):
                found = next((i for i in range(at, len(actual)) if label(actual[i]) == label(line)), -1)
            if found < 0:
                out.append(line)
                lost.append(line)
                continue
            out.append(actual[found])
            at = found + 1
        return out, lost
    out, lost, at = [], [], 0
    for line in expected:
        if not line.strip():
            out.append(line)
            continue
        want = shape(line)
        found = next((k for k in range(at, len(actual)) if shape(actual[k]) == want), -1)
        if found < 0 and label(line):  # the numbers changed their units or count: the line of the same name
            found = next((k for k in range(at, len(actual)) if label(actual[k]) == label(line)), -1)
        if found < 0:
            out.append(line)
            lost.append(line)
            continue
        out.append(actual[found])
        at = found + 1
    return out, lost


def main():
    with tempfile.TemporaryDirectory(prefix="ridgeline-docs-") as scratch:  # the files samples write (--out, --plot)
        update(os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2]), scratch)


def update(binary, root, scratch):
    files = [os.path.join(root, "README.md")] + sorted(glob.glob(os.path.join(root, "docs", "*.md")))
    for f in files:
        text = open(f, encoding="utf-8").read().split("\n")
        edits = []
        for line, command, expected in blocks(f):
            command = re.sub(r"\s{2,}\([^)]*\)$", "", command)
            args = shlex.split(command)[1:]
            if "|" in command or ">" in command:
                continue
            if args and (args[0] == "measure" or (args[0] == "validate" and "--hw" not in args)):
                continue
            actual = subprocess.run([binary] + scratch_args(args, scratch), cwd=root, capture_output=True, text=True,
                                    timeout=600).stdout.split("\n")
            if matches(expected, actual):
                continue
            new, lost = updated(expected, actual)
            # The block's output starts after the command's (possibly continued) lines.
            start = line  # 1-based line of the `$ ridgeline` line
            while text[start - 1].rstrip().endswith("\\"):
                start += 1
            edits.append((start, len(expected), new))
            rel = os.path.relpath(f, root)
            print(f"{rel}:{line}: updated" + (f"; {len(lost)} line(s) not placed:" if lost else ""))
            for l in lost:
                print(f"    {l}")
        for start, n, new in reversed(edits):
            text[start:start + n] = new
        if edits:
            open(f, "w", encoding="utf-8").write("\n".join(text))


if __name__ == "__main__":
    main()
