#!/usr/bin/env bash
# Renders the page of `bwos-bench report` in headless Chromium and fails if
# it does not render cleanly: a message on the page's console (a script
# error, or the page's own note of an image that did not load), an image
# that did not load, or no screenshot. Writes the screenshot next to the
# page (index.png) for a look.
#
# Usage: scripts/check-report.sh [REPORT_DIR]   (default: target/report)
set -euo pipefail

dir=${1:-target/report}
page="$dir/index.html"
if [ ! -f "$page" ]; then
    echo "check-report: no $page (run bwos-bench report first)" >&2
    exit 1
fi
browser=""
for candidate in chromium chromium-browser google-chrome; do
    if command -v "$candidate" >/dev/null 2>&1; then
        browser=$candidate
        break
    fi
done
if [ -z "$browser" ]; then
    echo "check-report: no Chromium (Debian: apt-get install chromium)" >&2
    exit 1
fi

url="file://$(realpath "$page")"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# --no-sandbox: CI runs as root. The virtual time budget lets the page's
# load handler (which checks every image) run before the DOM is dumped.
flags=(--headless --no-sandbox --disable-gpu --hide-scrollbars)

"$browser" "${flags[@]}" --enable-logging=stderr --v=0 --virtual-time-budget=10000 \
    --dump-dom "$url" >"$work/dom.html" 2>"$work/log.txt"
"$browser" "${flags[@]}" --window-size=1280,6000 --virtual-time-budget=10000 \
    --screenshot="$dir/index.png" "$url" >/dev/null 2>&1

failed=0
# The page writes nothing to its console when all is well; Chromium's own
# log lines (D-Bus, GPU) are not the page's and are not counted.
if grep -F ':CONSOLE' "$work/log.txt"; then
    echo "check-report: the page logged the messages above" >&2
    failed=1
fi
if ! grep -q 'data-images="loaded"' "$work/dom.html"; then
    echo "check-report: not every image of $page loaded" >&2
    failed=1
fi
if [ ! -s "$dir/index.png" ]; then
    echo "check-report: no screenshot was taken" >&2
    failed=1
fi
if [ "$failed" = 0 ]; then
    images=$(grep -o '<img ' "$work/dom.html" | wc -l)
    echo "check-report: $page renders without errors ($images images loaded; screenshot $dir/index.png)"
fi
exit "$failed"
