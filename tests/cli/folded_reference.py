#!/usr/bin/env python3
"""An independent reference for kiln's stack transforms and diffs, written
from the command-line semantics (not from kiln's code), over folded text.

  folded_reference.py transform IN.folded SPEC...   transformed folded text
  folded_reference.py diff BASE.folded TARGET.folded  difffolded.pl-style lines
  folded_reference.py diffjson BASE.folded TARGET.folded  per-stack shares and z as JSON

SPEC is one of: invert, collapse-recursion, focus=FN, callers-of=FN,
hide=REGEX, merge=FN, drop-kernel. Frames keep their "_[k]"/"_[j]"
annotations in the output; names are matched without them.
"""
import json
import math
import re
import sys
from collections import defaultdict


def read_folded(path):
    stacks = defaultdict(int)
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\r\n")
            if not line or line.startswith("#"):
                continue
            stack, _, count = line.rpartition(" ")
            stacks[tuple(stack.split(";"))] += int(count)
    return stacks


def name(frame):
    for suffix in ("_[k]", "_[j]", "_[i]"):
        if frame.endswith(suffix):
            return frame[: -len(suffix)]
    return frame


def transform(frames, spec):
    kind, _, arg = spec.partition("=")
    if kind == "invert":
        return list(reversed(frames))
    if kind == "collapse-recursion":
        out = []
        for f in frames:
            if not out or out[-1] != f:
                out.append(f)
        return out
    if kind == "focus":
        for i, f in enumerate(frames):
            if name(f) == arg:
                return frames[i:]
        return None
    if kind == "callers-of":
        for i in range(len(frames) - 1, -1, -1):
            if name(frames[i]) == arg:
                return list(reversed(frames[: i + 1]))
        return None
    if kind == "hide":
        pattern = re.compile(arg)
        return [f for f in frames if not pattern.search(name(f))]
    if kind == "merge":
        return [f for f in frames if name(f) != arg]
    if kind == "drop-kernel":
        return [f for f in frames if not f.endswith("_[k]")]
    raise SystemExit("unknown transform " + spec)


def transformed(stacks, specs):
    out = defaultdict(int)
    for frames, count in stacks.items():
        result = list(frames)
        for spec in specs:
            result = transform(result, spec)
            if result is None:
                break
        if result:  # a stack left with no frames has no line to be written on
            out[";".join(result)] += count
    return out


def main():
    command = sys.argv[1]
    if command == "transform":
        result = transformed(read_folded(sys.argv[2]), sys.argv[3:])
        for stack in sorted(result):
            print(f"{stack} {result[stack]}")
    elif command in ("diff", "diffjson"):
        base = transformed(read_folded(sys.argv[2]), sys.argv[4:])
        target = transformed(read_folded(sys.argv[3]), sys.argv[4:])
        if command == "diff":
            for stack in sorted(set(base) | set(target)):
                print(f"{stack} {base.get(stack, 0)} {target.get(stack, 0)}")
            return
        # Totals per path prefix (a node of the tree), shares and the
        # two-proportion z-test on sample counts.
        def totals(stacks):
            t = defaultdict(int)
            for stack, count in stacks.items():
                frames = stack.split(";")
                for i in range(1, len(frames) + 1):
                    t[";".join(frames[:i])] += count
            return t
        bt, tt = totals(base), totals(target)
        n, m = sum(base.values()), sum(target.values())
        nodes = {}
        for path in set(bt) | set(tt):
            a, b = bt.get(path, 0), tt.get(path, 0)
            p1, p2 = a / n if n else 0, b / m if m else 0
            pooled = (a + b) / (n + m) if n + m else 0
            var = pooled * (1 - pooled) * (1 / n + 1 / m) if n and m else 0
            z = (p2 - p1) / math.sqrt(var) if var > 0 else 0.0
            nodes[path] = {"base_total": a, "target_total": b, "base_share": p1, "target_share": p2,
                           "change": p2 - p1, "z": z, "significant": abs(z) >= 3.29}
        json.dump({"base_total": n, "target_total": m, "nodes": nodes}, sys.stdout)
    else:
        raise SystemExit("usage: folded_reference.py transform|diff|diffjson ...")


if __name__ == "__main__":
    main()
