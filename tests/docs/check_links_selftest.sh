#!/usr/bin/env bash
# Self-test of scripts/check-links.sh: on a small tree (no git) with a broken link, a missing
# anchor, a missing generated page and a comment citing a document outside the repository, it must
# exit 1 and name each; on the same tree repaired it must exit 0.
#   tests/docs/check_links_selftest.sh scripts/check-links.sh
set -u
checker=$1
tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT
mkdir -p "$tree/docs" "$tree/src"
printf '# Top\n\n## Exit status\n\n[a](docs/a.md#usage) [b](docs/missing.md) [c](docs/configuration.md)\n' > "$tree/README.md"
printf '# A\n\n## Other\n' > "$tree/docs/a.md"
printf '// see STYLE.md and README.md#exit-status\n' > "$tree/src/x.cpp"
fail=0
out=$(CHECK_LINKS_ROOT=$tree bash "$checker" 2>&1); rc=$?
for want in "no heading with anchor #usage" "docs/missing.md: no such file" \
            "docs/configuration.md: no such file (docs/configuration.md); it is generated" \
            "cites a document that is not in the repository"; do
  case $out in *"$want"*) ;; *) echo "missing in the output: $want"; fail=1 ;; esac
done
[ "$rc" -eq 1 ] || { echo "broken tree: exit $rc, expected 1"; fail=1; }
printf '# A\n\n## Usage\n' > "$tree/docs/a.md"
printf '# Configuration\n' > "$tree/docs/configuration.md"
printf '# Missing\n' > "$tree/docs/missing.md"
printf '// see README.md#exit-status\n' > "$tree/src/x.cpp"
out2=$(CHECK_LINKS_ROOT=$tree bash "$checker" 2>&1); rc2=$?
[ "$rc2" -eq 0 ] || { echo "repaired tree: exit $rc2, expected 0: $out2"; fail=1; }
[ "$fail" -eq 0 ] || { echo "--- output on the broken tree:"; echo "$out"; }
exit "$fail"
