#!/bin/sh
# Re-fetches the vendored Chart.js (the charting library embedded into report.html) from npm.
# CI builds from the copy in third_party/chartjs/ and never needs the network; run this by hand
# to update it, then commit third_party/chartjs/.
#   tools/vendor-chartjs.sh [VERSION]   (default: the newest 4.x)
set -eu
version="${1:-4}"
repo="$(cd "$(dirname "$0")/.." && pwd)"
dest="$repo/third_party/chartjs"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
npm pack --silent "chart.js@$version" > pack.txt
tar xzf "$(tail -n 1 pack.txt)"
mkdir -p "$dest"
# The minified UMD build defines window.Chart; drop its source-map comment (the map is not vendored).
sed '/^\/\/# sourceMappingURL=/d' package/dist/chart.umd.min.js > "$dest/chart.umd.min.js"
cp package/LICENSE.md "$dest/LICENSE.md"
v="$(node -p "require('./package/package.json').version" 2>/dev/null || sed -n 's/.*"version": *"\([^"]*\)".*/\1/p' package/package.json | head -n 1)"
printf 'Chart.js %s\nfrom npm: chart.js@%s (package/dist/chart.umd.min.js, package/LICENSE.md)\nfetched by tools/vendor-chartjs.sh on %s\n' \
  "$v" "$v" "$(date -u +%Y-%m-%d)" > "$dest/VERSION"
if grep -qi '</script' "$dest/chart.umd.min.js"; then
  echo "vendor-chartjs: warning: the library contains '</script'; report.html escapes it when embedding" >&2
fi
echo "vendored Chart.js $v into $dest"
