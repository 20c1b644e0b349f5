#!/usr/bin/env bash
# Checks that every relative link in the repository's Markdown files, and every document a code
# comment cites (docs/*.md, bench/*.md, README.md, CONTRIBUTING.md, with an optional #anchor),
# names a file that exists and a heading that exists in it (GitHub's anchor rules). Also refuses
# citations of documents that are not in the repository. A comment that cites a document's section
# by its title in quotes (README "Exit status") is checked too, as a warning. Exit 0 when all
# resolve, 1 otherwise. Run by ctest as DocsLinksResolve (tests/docs.cmake).
#   scripts/check-links.sh
#   CHECK_LINKS_ROOT=DIR scripts/check-links.sh    # check another tree (the self-test does)
set -euo pipefail
cd "${CHECK_LINKS_ROOT:-$(dirname "$0")/..}"
exec python3 - <<'PY'
import os, re, subprocess, sys

# Files written by a generator (committed, so they must exist): the message says how to remake one.
GENERATED = {"docs/configuration.md": "scripts/gen-docs.sh"}
NOT_IN_REPO = re.compile(r"\b(STYLE\.md|DESIGN\.md|BENCHMARKS\.md)\b|\.\./shared")
CODE_DIRS = ("src/", "include/", "tools/", "tests/", "bench/", "scripts/", "cmake/", ".ci/")
# This checker and its self-test name broken links on purpose.
SELF = {"scripts/check-links.sh", "tests/docs/check_links_selftest.sh"}

def list_files():
    """Tracked and untracked-but-not-ignored files; without git (a source tarball), a walk that
    skips build folders and hidden ones."""
    try:
        return subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"],
                              capture_output=True, text=True, check=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        out = []
        for root, dirs, names in os.walk("."):
            dirs[:] = [d for d in dirs if not d.startswith((".", "build"))]
            out += [os.path.relpath(os.path.join(root, n)) for n in names]
        return out

files = list_files()
files = [f for f in files if os.path.isfile(f) and not f.startswith("third_party/")]
errors, warnings, anchors_cache = [], [], {}

def slug(heading):
    s = heading.strip().lower()
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")

def anchors(path):
    if path not in anchors_cache:
        seen, out, fence = {}, set(), False
        for line in open(path, encoding="utf-8"):
            if line.startswith("```"):
                fence = not fence
            m = None if fence else re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
            if m:
                base = slug(m.group(1))
                n = seen.get(base, 0)
                seen[base] = n + 1
                out.add(base if n == 0 else f"{base}-{n}")
        anchors_cache[path] = out
    return anchors_cache[path]

def check(where, target, origin_dir):
    path, _, anchor = target.partition("#")
    full = os.path.normpath(os.path.join(origin_dir, path)) if path else where.split(":")[0]
    if not os.path.exists(full):
        hint = f"; it is generated: run {GENERATED[full]}" if full in GENERATED else ""
        errors.append(f"{where}: {target}: no such file ({full}){hint}")
        return
    if anchor and full.endswith(".md") and anchor not in anchors(full):
        errors.append(f"{where}: {target}: no heading with anchor #{anchor} in {full}")

link = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
for f in (f for f in files if f.endswith(".md")):
    fence = False
    for n, line in enumerate(open(f, encoding="utf-8"), 1):
        if line.startswith("```"):
            fence = not fence
            continue
        if fence:
            continue
        for target in link.findall(re.sub(r"`[^`]*`", "", line)):
            if not re.match(r"^[a-z]+:", target):
                check(f"{f}:{n}", target, os.path.dirname(f))

cite = re.compile(r"\b((?:docs|bench)/[\w.-]+\.md|README\.md|CONTRIBUTING\.md)(#[\w-]+)?")
# A section cited by its title: README "Exit status", docs/report.md "Advice rules".
cite_title = re.compile(r"\b((?:docs|bench)/[\w.-]+\.md|README(?:\.md)?|CONTRIBUTING(?:\.md)?)'?s? \"([^\"]+)\"")
for f in files:
    code = f.startswith(CODE_DIRS) or f == "CMakeLists.txt"
    if f in SELF or (not code and not f.endswith(".md")):
        continue
    try:
        text = open(f, encoding="utf-8").read()
    except UnicodeDecodeError:
        continue
    for n, line in enumerate(text.split("\n"), 1):
        if NOT_IN_REPO.search(line):
            errors.append(f"{f}:{n}: cites a document that is not in the repository: {line.strip()}")
        if code and not f.endswith(".md"):
            for path, anchor in cite.findall(line):
                check(f"{f}:{n}", path + anchor, ".")
            for path, title in cite_title.findall(line):
                doc = path if path.endswith(".md") else path + ".md"
                # a title may be cited by its start: "Peer figures" for "Peer figures (H200, ...)"
                if os.path.exists(doc) and not any(a.startswith(slug(title)) for a in anchors(doc)):
                    warnings.append(f"{f}:{n}: cites {path} \"{title}\", a section {doc} does not have")

for w in warnings:
    print("warning:", w)
for e in errors:
    print("error:", e)
print(f"check-links: {len(errors)} broken, {len(warnings)} warnings")
sys.exit(1 if errors else 0)
PY
