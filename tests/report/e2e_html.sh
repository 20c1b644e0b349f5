#!/bin/sh
# End-to-end check of report.html in headless Chromium (ctest ReportHtmlChromium).
#   e2e_html.sh REPORT_TOOL RUN_DIR ARTIFACT_DIR
# Writes the report of RUN_DIR, loads it offline, and fails when the page logs a console error,
# a section has no drawn chart (canvas data-rendered="1", set by the page after Chart.js drew
# pixels), anything was fetched from the network, the summary table and its chart do not fit the
# first screen (1280x800; the page records where the summary ends in body data-summary-bottom),
# the page is wider than the 1280 px window (a horizontal scroll bar), or the advice lists a rule
# twice. Keeps report.html, dom.html, console.log, report.png (the
# whole page) and first-screen.png (1280x800) in ARTIFACT_DIR. Exit 77 (skip) only when no
# chromium is installed (apt-get install -y chromium; scripts/install-deps.sh --test).
set -eu
tool="$1"; run_dir="$2"; art="$3"
chromium=""
for c in chromium chromium-browser google-chrome; do
  if command -v "$c" >/dev/null 2>&1; then chromium="$(command -v "$c")"; break; fi
done
if [ -z "$chromium" ]; then
  echo "SKIP: chromium is not installed (apt-get install -y chromium); report.html was not opened"
  exit 77
fi
rm -rf "$art"; mkdir -p "$art"
"$tool" "$run_dir" "$art" >/dev/null
profile="$(mktemp -d)"
trap 'rm -rf "$profile"' EXIT
flags="--headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking \
--disable-component-update --disable-sync --disable-extensions --user-data-dir=$profile \
--virtual-time-budget=5000 --window-size=1280,5200"
url="file://$art/report.html"
# shellcheck disable=SC2086
timeout 90 "$chromium" $flags --enable-logging=stderr --v=0 --dump-dom "$url" >"$art/dom.html" 2>"$art/console.log" || {
  echo "FAIL: chromium --dump-dom failed"; tail -n 20 "$art/console.log"; exit 1; }
# shellcheck disable=SC2086
timeout 90 "$chromium" $flags --hide-scrollbars --screenshot="$art/report.png" "$url" >/dev/null 2>&1 || true
# shellcheck disable=SC2086
timeout 90 "$chromium" $(echo "$flags" | sed 's/--window-size=1280,5200/--window-size=1280,800/') --hide-scrollbars \
  --screenshot="$art/first-screen.png" "$url" >/dev/null 2>&1 || true
python3 - "$art" <<'PY'
import re, sys, os
art = sys.argv[1]
dom = open(os.path.join(art, "dom.html"), encoding="utf-8", errors="replace").read()
log = open(os.path.join(art, "console.log"), encoding="utf-8", errors="replace").read()
fail = []
console = [l for l in log.splitlines() if "CONSOLE" in l or "Uncaught" in l]
if console:
    fail.append("console messages:\n  " + "\n  ".join(console[:20]))
if 'data-errors=' in dom:
    fail.append("the page recorded JavaScript errors (body data-errors)")
if 'data-charts-done="1"' not in dom:
    fail.append("the page script did not finish (no data-charts-done)")
sections = re.findall(r'<section id="([a-z]+)"(.*?)</section>', dom, re.S)
if len(sections) < 8:
    fail.append("expected 8 chart sections (summary, batches and 6 more), found %d" % len(sections))
total = 0
for sid, body in sections:
    canvases = re.findall(r'<canvas[^>]*>', body)
    drawn = [c for c in canvases if 'data-rendered="1"' in c]
    total += len(drawn)
    if not canvases:
        fail.append("section %s has no chart" % sid)
    elif len(drawn) != len(canvases):
        fail.append("section %s: %d of %d charts drawn" % (sid, len(drawn), len(canvases)))
    print("section %-10s charts %d drawn %d" % (sid, len(canvases), len(drawn)))
m = re.search(r'data-summary-bottom="(\d+)"', dom)
if not m:
    fail.append("the page did not record where the summary ends (no data-summary-bottom)")
elif int(m.group(1)) > 800:
    fail.append("the summary table and its chart end at %s px: below the first screen (800 px)" % m.group(1))
else:
    print("summary ends at %s px (first screen: 800 px)" % m.group(1))
w = re.search(r'data-page-width="(\d+)"', dom)
v = re.search(r'data-viewport-width="(\d+)"', dom)
if not w or not v:
    fail.append("the page did not record its width (no data-page-width / data-viewport-width)")
elif int(w.group(1)) > int(v.group(1)):
    fail.append("the page is %s px wide in a %s px viewport: it scrolls sideways" % (w.group(1), v.group(1)))
else:
    print("page width %s px within the %s px viewport" % (w.group(1), v.group(1)))
if re.search(r'<section id="summary">.*?data-rendered="1"', dom, re.S) is None:
    fail.append("the summary has no drawn chart")
rules = re.findall(r'<li class="advice" data-rule="([a-z0-9_]+)"', dom)
if len(rules) != len(set(rules)):
    fail.append("the advice lists a rule more than once: %s" % rules)
print("advice: %d items, one per rule: %s" % (len(rules), ", ".join(rules)))
shot = os.path.join(art, "first-screen.png")
if not os.path.exists(shot) or os.path.getsize(shot) < 5000:
    fail.append("no first-screen screenshot at %s" % shot)
png = os.path.join(art, "report.png")
if not os.path.exists(png) or os.path.getsize(png) < 10000:
    fail.append("no screenshot at %s" % png)
if fail:
    print("FAIL:\n" + "\n".join(fail)); sys.exit(1)
print("OK: %d charts drawn, no console errors; screenshot %s" % (total, png))
PY
