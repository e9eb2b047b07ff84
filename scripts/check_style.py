#!/usr/bin/python3
"""The line-length rule of CONTRIBUTING.md ("Style"): no line of C++ longer than 120 columns.

Reads every C++ file (.cpp, .hpp, .h, .cc) under src/, include/, tests/, examples/ and bench/ --
the files git tracks when REPO is a git checkout, else every such file in those folders -- and
counts each line's characters (UTF-8 decoded, the newline not counted). Prints `path:line: length`
for every line over 120 and exits 1; with none, prints a one-line summary and exits 0. It also
checks the names of the tests' TEST_CASEs, which catch_discover_tests makes CTest names: a ';'
(CTest splits the name there into tests that match nothing) or a leading '-' (Catch2 3 reads the
name as an option) fails it too.
.clang-format (ColumnLimit 120) lays code out within the rule; this script is what checks it, and
CTest runs it as the test `style_line_length`.

Run: /usr/bin/python3 scripts/check_style.py [REPO]
"""
import io
import os
import re
import subprocess
import sys

LIMIT = 120
FOLDERS = ("src", "include", "tests", "examples", "bench")
EXTENSIONS = (".cpp", ".hpp", ".h", ".cc")
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, ".."))


def tracked_files():
    """Paths relative to ROOT that git tracks in FOLDERS, or None when ROOT is not a git checkout."""
    if not os.path.exists(os.path.join(ROOT, ".git")):
        return None
    try:
        out = subprocess.run(["git", "-C", ROOT, "ls-files", "-z", "--", *FOLDERS],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    return [p for p in out.decode("utf-8").split("\0") if p]


def walked_files():
    for top in FOLDERS:
        for folder, dirs, names in os.walk(os.path.join(ROOT, top)):
            dirs[:] = sorted(d for d in dirs if d != "node_modules" and not d.startswith("."))
            for n in sorted(names):
                yield os.path.relpath(os.path.join(folder, n), ROOT)


# A TEST_CASE's name: one string literal or several in a row.
TEST_NAME = re.compile(r'TEST_CASE\(\s*((?:"(?:[^"\\]|\\.)*"\s*)+)')


def bad_test_names(rel, text):
    """`path:line: why` for each TEST_CASE name CTest cannot run by name."""
    out = []
    for m in TEST_NAME.finditer(text):
        name = "".join(re.findall(r'"((?:[^"\\]|\\.)*)"', m.group(1)))
        line = text.count("\n", 0, m.start()) + 1
        if ";" in name:
            out.append(f"{rel}:{line}: a TEST_CASE name with ';' (CTest splits it there): {name}")
        if name.startswith("-"):
            out.append(f"{rel}:{line}: a TEST_CASE name starting with '-' (Catch2 3 reads it as an option): {name}")
    return out


def main():
    paths = tracked_files()
    if paths is None:
        paths = walked_files()
    checked = 0
    long_lines = 0
    bad_names = 0
    for rel in sorted(p for p in paths if p.endswith(EXTENSIONS)):
        path = os.path.join(ROOT, rel)
        if not os.path.isfile(path):  # tracked but deleted in the work tree
            continue
        checked += 1
        with open(path, encoding="utf-8", errors="replace", newline="") as f:
            text = f.read()
        for number, line in enumerate(io.StringIO(text, newline=""), 1):
            length = len(line.rstrip("\r\n"))
            if length > LIMIT:
                print(f"{rel}:{number}: {length}")
                long_lines += 1
        if rel.startswith("tests/"):
            for problem in bad_test_names(rel, text):
                print(problem)
                bad_names += 1
    if long_lines or bad_names:
        print(f"{long_lines} line(s) longer than {LIMIT} columns, {bad_names} test name(s) CTest cannot run, in "
              f"{checked} C++ files (CONTRIBUTING.md, Style)", file=sys.stderr)
        return 1
    print(f"{checked} C++ files under {', '.join(FOLDERS)}: no line longer than {LIMIT} columns")
    return 0


if __name__ == "__main__":
    sys.exit(main())
