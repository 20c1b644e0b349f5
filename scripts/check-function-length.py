#!/usr/bin/env python3
"""The function-length check: no function in src/ or tools/ is longer than 100 lines
(CONTRIBUTING.md, "Small functions").

Lengths come from pmccabe (column 5 of its output: the lines from the function's first line to
its closing brace). pmccabe cannot parse C++17's `namespace a::b {`, so each file is copied to a
temporary folder with every such line rewritten to `namespace a { namespace b {` and the extra
closing braces appended at the end: line numbers stay those of the real file.

A function may stay longer only when scripts/function-length-allow.txt names it (FILE FUNCTION
# reason). Fails (exit 1) on a function over the limit that is not listed, on a listed function
that is no longer over it (delete the line), and when pmccabe is missing or reads no function of
a file (scripts/install-deps.sh --test installs it).

  scripts/check-function-length.py          # check
  scripts/check-function-length.py --top 10 # also print the 10 longest functions
  scripts/check-function-length.py --skip-without-pmccabe  # exit 77 (ctest: skipped) without pmccabe
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
LIMIT = 100
ALLOW = "scripts/function-length-allow.txt"
SCANNED = ("src", "tools")
SUFFIXES = (".cpp", ".cc", ".h", ".hpp", ".cu")
NESTED = re.compile(r"^(\s*)namespace\s+([A-Za-z_]\w*(?:::[A-Za-z_]\w*)+)\s*\{(.*)$")


def flatten(text):
    """`namespace a::b {` -> `namespace a { namespace b {`, closing braces added at the end."""
    out, extra = [], 0
    for line in text.splitlines():
        m = NESTED.match(line)
        if m:
            parts = m.group(2).split("::")
            line = m.group(1) + " ".join(f"namespace {p} {{" for p in parts) + m.group(3)
            extra += len(parts) - 1
        out.append(line)
    return "\n".join(out) + "\n" + "}" * extra + "\n"


def source_files():
    for top in SCANNED:
        for dirpath, _, files in os.walk(os.path.join(ROOT, top)):
            for f in sorted(files):
                if f.endswith(SUFFIXES):
                    yield os.path.relpath(os.path.join(dirpath, f), ROOT)


def read_allow():
    allow = {}
    path = os.path.join(ROOT, ALLOW)
    if os.path.exists(path):
        for n, line in enumerate(open(path, encoding="utf-8"), 1):
            line = line.split("#", 1)[0].strip()
            if line:
                f, _, fn = line.partition(" ")
                allow[(f, fn.strip())] = n
    return allow


def measure(files, tmp):
    """[(length, first line, file, function)] of every function pmccabe finds."""
    copies = {}
    for f in files:
        dst = os.path.join(tmp, f)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        with open(os.path.join(ROOT, f), encoding="utf-8", errors="replace") as src:
            text = src.read()
        with open(dst, "w", encoding="utf-8") as out:
            out.write(flatten(text))
        copies[f] = dst
    res = subprocess.run(["pmccabe"] + [copies[f] for f in files], capture_output=True, text=True, cwd=tmp)
    found = []
    row = re.compile(r"^\d+\s+\d+\s+\d+\s+(\d+)\s+(\d+)\s+(.+)\((\d+)\):\s+(.*)$")
    for line in res.stdout.splitlines():
        m = row.match(line)
        if m:
            found.append((int(m.group(2)), int(m.group(1)), os.path.relpath(m.group(3), tmp), m.group(5)))
    return found, res.stderr


def main():
    if shutil.which("pmccabe") is None:
        if "--skip-without-pmccabe" in sys.argv[1:]:
            print("check-function-length: pmccabe is not installed: skipped (scripts/install-deps.sh --test)")
            return 77
        print("check-function-length: pmccabe is not installed (scripts/install-deps.sh --test)", file=sys.stderr)
        return 1
    files = sorted(source_files())
    allow = read_allow()
    with tempfile.TemporaryDirectory() as tmp:
        found, warn = measure(files, tmp)
    seen_files = {f for _, _, f, _ in found}
    errors, used = [], set()
    for length, first, f, fn in sorted(found, reverse=True):
        if length <= LIMIT:
            continue
        if (f, fn) in allow:
            used.add((f, fn))
        else:
            errors.append(f"{f}:{first}: {fn} is {length} lines, over the limit of {LIMIT} (CONTRIBUTING.md): "
                          "split it into functions that each do one thing")
    for (f, fn), n in sorted(allow.items(), key=lambda kv: kv[1]):
        if (f, fn) not in used:
            errors.append(f"{ALLOW}:{n}: {f} {fn} is not over {LIMIT} lines (or is gone): delete the line")
    body = re.compile(r"\)\s*(const\s*)?(noexcept\s*)?(override\s*)?\{")
    for f in files:  # a .cpp with a function body but no function read: pmccabe could not parse it
        if f.endswith((".cpp", ".cc", ".cu")) and f not in seen_files and body.search(open(os.path.join(ROOT, f)).read()):
            errors.append(f"{f}: pmccabe read no function of this file: the check does not cover it")
    args = sys.argv[1:]
    top = int(args[args.index("--top") + 1]) if "--top" in args else 0
    for length, first, f, fn in sorted(found, reverse=True)[:top]:
        print(f"{length:5} {f}:{first} {fn}", flush=True)
    if errors:
        print("\n".join(errors), file=sys.stderr)
        print(f"check-function-length: {len(errors)} problem(s)", file=sys.stderr)
        return 1
    print(f"check-function-length: {len(found)} functions in {len(seen_files)} files, none over {LIMIT} lines "
          f"({len(used)} allow-listed in {ALLOW})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
