#!/usr/bin/env python3
"""Which code is hot, in first-level instruction-cache lines: reads a callgrind profile taken with
instruction-level positions and prints how many 64-byte lines of one object were executed at least
N times, their misses, and the functions they belong to (docs/serving.md#speed).

Usage:
  valgrind --tool=callgrind --dump-instr=yes --cache-sim=yes --callgrind-out-file=OUT \\
      build/release/bench/ridgeline_bench --benchmark_filter='BM_Serve70B/10000/' --benchmark_min_time=0.01
  hot_lines.py OUT [N] [OBJECT]

N: the least executions of a line counted hot (default 3000: for BM_Serve70B/10000, its ~3·10^4
steps and 10^4 requests, every line run once a request or more). OBJECT: a substring of the object's
path (default ridgeline_bench). A line's count is its most executed instruction's; its misses are
callgrind's I1mr of its instructions (with --cache-sim=yes).
"""
import collections
import re
import sys

LINE = 64  # bytes in a first-level instruction-cache line


def read(path, wanted):
    """Executions and first-level misses by instruction address, and each address's function, of the
    object whose path holds `wanted`."""
    names, ir, misses, fn_of = {}, collections.Counter(), collections.Counter(), {}
    obj = fn = None
    addr, skip, i1mr, with_line, events = 0, False, None, False, None

    def name(kind, text):
        m = re.match(r"\((\d+)\)(?: (.*))?", text)
        if not m:
            return text
        if m.group(2):
            names[(kind, m.group(1))] = m.group(2)
        return names.get((kind, m.group(1)), text)

    def position(token, base):
        if token == "*":
            return base
        if token[0] in "+-":
            step = int(token[1:], 16) if token[1:].startswith("0x") else int(token[1:])
            return base + step if token[0] == "+" else base - step
        return int(token, 16) if token.startswith("0x") else int(token)

    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                continue
            if line.startswith("events:"):
                events = line.split()[1:]
                i1mr = events.index("I1mr") if "I1mr" in events else None
            elif line.startswith("positions:"):
                if line.split()[1:2] != ["instr"]:
                    raise ValueError("no instruction positions: take it with --dump-instr=yes")
                with_line = "line" in line.split()[2:]  # (a line number after the address)
            elif line.startswith("ob="):
                obj = name("ob", line[3:])
            elif line.startswith("fn="):
                fn = name("fn", line[3:])
            elif line.startswith(("cob=", "cfn=")):
                name(line[1:3], line[4:])  # a callee's object or function may be named here first
            elif line.startswith("calls="):
                skip = True  # the next cost line is the call's inclusive cost
            elif line[0] in "0123456789+-*":
                parts = line.split()
                addr = position(parts[0], addr)
                if skip:
                    skip = False
                    continue
                if wanted not in (obj or ""):
                    continue
                costs = parts[2:] if with_line else parts[1:]
                ir[addr] += int(costs[0]) if costs else 0
                if i1mr is not None and len(costs) > i1mr:
                    misses[addr] += int(costs[i1mr])
                fn_of[addr] = fn
    if events is None:
        raise ValueError("no 'events:' line")
    return ir, misses, fn_of


def main():
    if len(sys.argv) >= 2 and sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        return 0
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    path = sys.argv[1]
    if len(sys.argv) > 2 and not re.fullmatch(r"[0-9]+", sys.argv[2]):
        print(f"hot_lines.py: N '{sys.argv[2]}' is not a count of executions: expected a whole number, as in 3000", file=sys.stderr)
        return 2
    least = int(sys.argv[2]) if len(sys.argv) > 2 else 3000
    wanted = sys.argv[3] if len(sys.argv) > 3 else "ridgeline_bench"
    try:
        ir, misses, fn_of = read(path, wanted)
    except (OSError, UnicodeDecodeError, ValueError, IndexError) as e:
        print(f"hot_lines.py: {path}: not a callgrind profile it can read ({e})", file=sys.stderr)
        return 2
    count, line_misses, line_fn = collections.Counter(), collections.Counter(), {}
    for a, n in ir.items():
        count[a // LINE] = max(count[a // LINE], n)
        line_misses[a // LINE] += misses[a]
        line_fn.setdefault(a // LINE, fn_of[a])
    hot = [c for c, n in count.items() if n >= least]
    print(f"{len(hot)} lines of {LINE} bytes executed at least {least} times ({len(hot) * LINE / 1024:.1f} KB), "
          f"{sum(line_misses[c] for c in hot)} of the object's {sum(line_misses.values())} first-level misses")
    by_fn, fn_misses = collections.Counter(), collections.Counter()
    for c in hot:
        by_fn[line_fn[c]] += 1
        fn_misses[line_fn[c]] += line_misses[c]
    for fn, n in by_fn.most_common(40):
        print(f"{n:5d} lines {n * LINE / 1024:5.1f} KB {fn_misses[fn]:9d} misses  {fn[:110]}")


if __name__ == "__main__":
    sys.exit(main())
