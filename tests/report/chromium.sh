#!/usr/bin/env bash
# The benchmark report, rendered from the recorded results files in
# crates/sluice-cli/tests/fixtures/bench, opened in headless Chromium:
# every chart must draw (the page checks each one itself and writes the
# count into data-rendered on its body) and the console must stay empty
# (no error, no warning, no message).
#
# Usage: tests/report/chromium.sh [SLUICE_BINARY]   (default target/debug/sluice)
# Without Chromium it is skipped with the reason, except under CI=true,
# where that fails.
set -euo pipefail
cd "$(dirname "$0")/../.."
sluice="${1:-target/debug/sluice}"

browser=""
for b in chromium chromium-browser google-chrome; do
    if command -v "$b" >/dev/null 2>&1; then browser=$(command -v "$b"); break; fi
done
if [ -z "$browser" ]; then
    if [ "${CI:-}" = true ]; then
        echo "report in Chromium: no Chromium, and CI=true requires it (apt-get install chromium)"
        echo "chromium: 0 passed, 1 failed"
        exit 1
    fi
    echo "report in Chromium: skipped: no Chromium (apt-get install chromium)"
    exit 0
fi

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$sluice" bench report --input crates/sluice-cli/tests/fixtures/bench --output "$out/report"
charts=$(grep -c '<figure class="chart"' "$out/report/index.html" || true)

# Root needs --no-sandbox; the log (stderr) carries the page's console.
timeout 120 "$browser" --headless --no-sandbox --disable-gpu --no-first-run \
    --enable-logging=stderr --v=0 --dump-dom "file://$out/report/index.html" \
    >"$out/dom.html" 2>"$out/chromium.log" || {
    echo "Chromium failed:"; cat "$out/chromium.log"; exit 1; }

passed=0
failed=0
# A negative control: a page that logs must show in the log, or the
# console check below would pass without looking.
printf '<!DOCTYPE html><html><body><script>console.log("control")</script></body></html>' >"$out/control.html"
timeout 120 "$browser" --headless --no-sandbox --disable-gpu --no-first-run \
    --enable-logging=stderr --v=0 --dump-dom "file://$out/control.html" \
    >/dev/null 2>"$out/control.log" || true
if grep -q ':CONSOLE.*control' "$out/control.log"; then
    echo "ok: this Chromium logs the console of a page"
    passed=$((passed + 1))
else
    echo "FAILED: this Chromium does not log a page's console at --v=0; the console check cannot work"
    failed=$((failed + 1))
fi
rendered=$(grep -o 'data-rendered="[^"]*"' "$out/dom.html" | head -1 || true)
if [ "$rendered" = "data-rendered=\"$charts/$charts\"" ] && [ "$charts" -ge 9 ]; then
    echo "ok: every chart drew ($rendered)"
    passed=$((passed + 1))
else
    echo "FAILED: $charts charts on the page, Chromium drew: ${rendered:-none, the check on the page did not run}"
    failed=$((failed + 1))
fi
if grep -q ':CONSOLE' "$out/chromium.log"; then
    echo "FAILED: the console was not empty:"
    grep ':CONSOLE' "$out/chromium.log"
    failed=$((failed + 1))
else
    echo "ok: the console stayed empty"
    passed=$((passed + 1))
fi
echo "chromium: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
