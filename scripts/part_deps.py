#!/usr/bin/python3
"""The parts of yolotrain (src/<part>/) and which parts each one includes; fails on a cycle.

A part P uses part Q when a file of P (src/P/..., include/yolotrain/P/..., include/yolotrain/P.hpp)
includes "yolotrain/Q/...", "yolotrain/Q.hpp" or "../Q/...". docs/architecture.md states the order
these edges must keep: each part uses only parts before it. Prints the edges and an order (a
topological sort), or the cycle and exit status 1.

Run: /usr/bin/python3 scripts/part_deps.py [REPO]
"""
import os
import re
import sys

ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
INCLUDE = re.compile(r'^\s*#\s*include\s+"(?:yolotrain/([a-z_]+)(?:/|\.hpp)|\.\./([a-z_]+)/)', re.M)


def parts():
    src = os.path.join(ROOT, "src")
    return sorted(d for d in os.listdir(src) if os.path.isfile(os.path.join(src, d, "CMakeLists.txt")))


def files_of(part):
    for top in (os.path.join(ROOT, "src", part), os.path.join(ROOT, "include", "yolotrain", part)):
        for folder, _, names in os.walk(top):
            yield from (os.path.join(folder, n) for n in names if n.endswith((".cpp", ".hpp", ".h")))
    umbrella = os.path.join(ROOT, "include", "yolotrain", part + ".hpp")
    if os.path.isfile(umbrella):
        yield umbrella


def edges(names):
    uses = {p: {} for p in names}
    for p in names:
        for path in files_of(p):
            with open(path, encoding="utf-8") as f:
                for m in INCLUDE.finditer(f.read()):
                    q = m.group(1) or m.group(2)
                    if q in uses and q != p:
                        uses[p].setdefault(q, os.path.relpath(path, ROOT))
    return uses


def find_cycle(uses):
    state, stack = {}, []

    def visit(p):
        state[p] = "open"
        stack.append(p)
        for q in sorted(uses[p]):
            if state.get(q) == "open":
                return stack[stack.index(q):] + [q]
            if q not in state:
                found = visit(q)
                if found:
                    return found
        state[p] = "done"
        stack.pop()
        return None

    for p in sorted(uses):
        if p not in state:
            found = visit(p)
            if found:
                return found
    return None


def order(uses):
    done, out = set(), []
    while len(out) < len(uses):
        ready = sorted(p for p in uses if p not in done and set(uses[p]) <= done)
        out += ready
        done |= set(ready)
    return out


def main():
    uses = edges(parts())
    for p in sorted(uses):
        print(f"{p:10s} uses {', '.join(sorted(uses[p])) or '-'}")
    cycle = find_cycle(uses)
    if cycle:
        print("cycle: " + " -> ".join(cycle))
        for a, b in zip(cycle, cycle[1:]):
            print(f"  {a} -> {b}: {uses[a][b]}")
        return 1
    print("order: " + " < ".join(order(uses)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
