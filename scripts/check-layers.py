#!/usr/bin/env python3
"""The layer check: every #include "..." in src/, include/ and tools/ points down the layers.

The layers, what each sits on and which files belong to each are one table in docs/design.md
(between the markers <!-- layers:begin --> and <!-- layers:end -->); this script reads it.
A file belongs to the layer of the longest path in the table that names it or a folder above
it. An include from layer A to layer B is allowed when B is A, or B is below A: reachable from
A through the "sits on" column. Anything else points up (or sideways) and fails, unless the
allow-list (scripts/layers-allow.txt) names that exact include with a reason.

Fails (exit 1) on: a violation not in the allow-list; an allow-list entry that no longer
matches a violation (remove it: the list only shrinks); a file or an include that no layer
claims; an include that resolves to no file. Python 3 standard library only.

  scripts/check-layers.py           # check
  scripts/check-layers.py --list    # also print every file with its layer
"""
import os
import re
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
TABLE = "docs/design.md"
ALLOW = "scripts/layers-allow.txt"
SCANNED = ("src", "include", "tools")
SUFFIXES = (".h", ".hpp", ".cpp", ".cc", ".cu", ".cuh")
# Headers generated at configure time (cmake/): they live in the build folder.
GENERATED = {"trainscope/build_info.h": "include/trainscope/build_info.h",
             "trainscope/git_commit.h": "include/trainscope/git_commit.h"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def fail(msg):
    print(f"check-layers: {msg}", file=sys.stderr)
    sys.exit(1)


def read_table():
    """{layer: set of layers it sits on}, [(path, layer)] from the table in docs/design.md."""
    text = open(os.path.join(ROOT, TABLE), encoding="utf-8").read()
    m = re.search(r"<!-- layers:begin -->(.*?)<!-- layers:end -->", text, re.S)
    if not m:
        fail(f"{TABLE} has no <!-- layers:begin --> ... <!-- layers:end --> table")
    below, paths = {}, []
    for line in m.group(1).splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 3 or not cells[0].startswith("`"):
            continue  # header, separator or prose
        layer = cells[0].strip("`")
        below[layer] = set(re.findall(r"`([^`]+)`", cells[1]))
        for p in re.findall(r"`([^`]+)`", cells[2]):
            paths.append((p, layer))
    for layer, under in below.items():
        for u in under:
            if u not in below:
                fail(f"{TABLE}: layer '{layer}' sits on '{u}', which is not a layer of the table")
    return below, paths


def closure(below):
    """{layer: every layer below it}; fails on a cycle."""
    done = {}

    def visit(layer, stack):
        if layer in stack:
            fail(f"{TABLE}: the layers form a cycle: {' -> '.join(stack + [layer])}")
        if layer not in done:
            reach = set()
            for u in below[layer]:
                reach |= {u} | visit(u, stack + [layer])
            done[layer] = reach
        return done[layer]

    for layer in below:
        visit(layer, [])
    return done


def layer_of(path, paths):
    best = None
    for p, layer in paths:
        hit = path == p or (p.endswith("/") and path.startswith(p))
        if hit and (best is None or len(p) > len(best[0])):
            best = (p, layer)
    return best[1] if best else None


def resolve(src, inc):
    """The repository path an #include "inc" in file src refers to, or None."""
    here = os.path.dirname(src)
    for base in (here, "src", "include", "tools/trainscope"):
        cand = os.path.normpath(os.path.join(base, inc))
        if os.path.isfile(os.path.join(ROOT, cand)):
            return cand
    return GENERATED.get(inc)


def read_allow():
    """{(file, include): line number} from the allow-list."""
    allow = {}
    path = os.path.join(ROOT, ALLOW)
    if not os.path.exists(path):
        return allow
    for n, line in enumerate(open(path, encoding="utf-8"), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.split()
        if len(parts) != 2:
            fail(f"{ALLOW}:{n}: expected 'FILE INCLUDE  # reason', got '{line}'")
        allow[(parts[0], parts[1])] = n
    return allow


def source_files():
    for top in SCANNED:
        for dirpath, _, files in os.walk(os.path.join(ROOT, top)):
            for f in sorted(files):
                if f.endswith(SUFFIXES):
                    yield os.path.relpath(os.path.join(dirpath, f), ROOT)


def main():
    below, paths = read_table()
    reach = closure(below)
    allow = read_allow()
    errors, used, listing = [], set(), []
    for src in sorted(source_files()):
        a = layer_of(src, paths)
        if a is None:
            errors.append(f"{src}: no layer of the table in {TABLE} claims this file (add it to a row)")
            continue
        listing.append(f"{a:10} {src}")
        for n, line in enumerate(open(os.path.join(ROOT, src), encoding="utf-8", errors="replace"), 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            inc = m.group(1)
            target = resolve(src, inc)
            if target is None:
                errors.append(f"{src}:{n}: #include \"{inc}\" is no file of the repository")
                continue
            b = layer_of(target, paths)
            if b is None:
                errors.append(f"{src}:{n}: #include \"{inc}\": no layer claims {target}")
            elif b != a and b not in reach[a]:
                if (src, inc) in allow:
                    used.add((src, inc))
                else:
                    errors.append(f"{src}:{n}: #include \"{inc}\" points up: layer '{a}' may not include "
                                  f"layer '{b}' ({TABLE}#layers). Move the declaration down, or depend on "
                                  f"an interface of a lower layer")
    for key, n in sorted(allow.items(), key=lambda kv: kv[1]):
        if key not in used:
            errors.append(f"{ALLOW}:{n}: '{key[0]} {key[1]}' is no violation any more: delete the line")
    if "--list" in sys.argv[1:]:
        print("\n".join(listing))
    if errors:
        print("\n".join(errors), file=sys.stderr)
        print(f"check-layers: {len(errors)} problem(s)", file=sys.stderr)
        return 1
    print(f"check-layers: {len(listing)} files, every include points down "
          f"({len(used)} allow-listed in {ALLOW})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
