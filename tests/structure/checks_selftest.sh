#!/usr/bin/env bash
# The structure checks fail when they should: on a copy of the tree, an include that points up
# the layers, a stale allow-list line and a function over 100 lines each make their check fail,
# and the unchanged copy passes. Usage: checks_selftest.sh <repository root>
set -euo pipefail
root=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fresh() {
  rm -rf "$tmp/r" && mkdir -p "$tmp/r/docs"
  cp -r "$root/src" "$root/include" "$root/tools" "$root/scripts" "$tmp/r/"
  cp "$root/docs/design.md" "$tmp/r/docs/"
}
expect_fail() {  # name, command...
  local name=$1; shift
  if "$@" >"$tmp/out" 2>&1; then echo "FAIL: $name passed"; cat "$tmp/out"; exit 1; fi
  echo "ok: $name fails: $(tail -n 2 "$tmp/out" | head -n 1)"
}
fresh
python3 "$tmp/r/scripts/check-layers.py" >/dev/null
echo "ok: the unchanged tree passes the layer check"
echo '#include "trainscope/runner.h"' >>"$tmp/r/src/common/stats.cpp"
expect_fail "an include from common up to the matrix" python3 "$tmp/r/scripts/check-layers.py"
fresh
echo 'src/common/stats.cpp trainscope/report.h  # stale' >>"$tmp/r/scripts/layers-allow.txt"
expect_fail "an allow-list line that is no violation" python3 "$tmp/r/scripts/check-layers.py"
fresh
touch "$tmp/r/src/common/unclaimed.h" && mkdir "$tmp/r/src/nowhere" && touch "$tmp/r/src/nowhere/x.cpp"
expect_fail "a file no layer claims" python3 "$tmp/r/scripts/check-layers.py"
if command -v pmccabe >/dev/null; then
  fresh
  python3 "$tmp/r/scripts/check-function-length.py" >/dev/null
  echo "ok: the unchanged tree passes the function-length check"
  { echo 'namespace trainscope::selftest {'; echo 'int long_one() {'
    for i in $(seq 120); do echo "  int v$i = $i;"; done
    echo '  return 0;'; echo '}'; echo '}  // namespace trainscope::selftest'; } >"$tmp/r/src/common/long_one.cpp"
  expect_fail "a 123-line function in a file opening namespace a::b {" python3 "$tmp/r/scripts/check-function-length.py"
else
  echo "pmccabe is not installed (scripts/install-deps.sh --test): function-length half skipped"
  exit 77
fi
