#!/usr/bin/env bash
# tests/report/report_chromium.sh: renders `kloop report` of a real mock-LLM store and reads it in headless Chromium.
# Builds the store (make_store.sh: two runs, two models, two prompt versions, mixed
# verdicts), writes the report, and checks: no external URL in the HTML; the DOM
# Chromium builds, with JavaScript on and off, is the same and holds every section with
# the numbers SQL gives for the store (check_dom.py against expect.lua); the page makes
# no network request (a proxy and a host map send everything to a local listener; the
# report may add no host to what Chromium contacts for itself); a screenshot (in $REPORT_OUT, default the work folder) to look at.
# usage: report_chromium.sh KLOOP   exit 0 pass, 1 fail, 77 skipped (no chromium, python3 or cc)
set -euo pipefail
KLOOP=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
HERE=$(cd "$(dirname "$0")" && pwd)
CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$CHROMIUM" ]; then echo "skipped: no chromium (apt-get install chromium)"; exit 77; fi
for t in python3 cc; do command -v $t >/dev/null || { echo "skipped: no $t"; exit 77; }; done
W=$(mktemp -d)
OUT=${REPORT_OUT:-$W}
LISTENER=
cleanup() { [ -n "$LISTENER" ] && kill "$LISTENER" 2>/dev/null; rm -rf "$W"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }

bash "$HERE/make_store.sh" "$KLOOP" "$W/store"
DB=$W/store/kloop.db
RUNS=$(sqlite3 "$DB" "SELECT group_concat(id, ' ') FROM runs")
[ "$(sqlite3 "$DB" "SELECT count(DISTINCT model) FROM candidates WHERE proposer = 'llm'")" -ge 2 ] || fail "the store has fewer than two models"
[ "$(sqlite3 "$DB" "SELECT count(DISTINCT prompt_hash) FROM candidates WHERE prompt_id = 'optimize'")" -ge 2 ] || fail "fewer than two prompt versions"
[ "$(sqlite3 "$DB" "SELECT count(DISTINCT verdict) FROM evaluations")" -ge 3 ] || fail "verdicts are not mixed"

# shellcheck disable=SC2086
"$KLOOP" report $RUNS --db "$DB" -o "$W/report.html" | grep -q '^wrote ' || fail "kloop report"
# nothing for a browser to fetch: no src/href/url()/@import, no URL in any attribute
if grep -aEo '(src|href|action|poster|xlink:href)=|url\(|@import' "$W/report.html" | head -3 | grep -aq .; then fail "a resource reference in the HTML"; fi
if grep -aEo '<[^>]*(https?:)?//[^>]*>' "$W/report.html" | grep -v '^<!--' | head -3 | grep -aq .; then fail "a URL inside a tag"; fi
grep -q '<script' "$W/report.html" && fail "a script in the HTML"

# Chromium's own services (component updates, account checks) call out from any page,
# about:blank too; a control load of about:blank names them, and the check has teeth: a
# probe page with one <img src> must reach the listener, the report must add no host
python3 "$HERE/listener.py" "$W/port" "$W/hosts" 300 2> "$W/listener.log" &
LISTENER=$!
for _ in $(seq 100); do [ -s "$W/port" ] && break; sleep 0.1; done
PORT=$(cat "$W/port")
CHROME_ARGS=(--headless --no-sandbox --disable-gpu --no-first-run --user-data-dir="$W/profile"
  --disable-background-networking --disable-component-update --disable-sync --disable-default-apps
  --disable-extensions --disable-features=NetworkTimeServiceQuerying,OptimizationHints,MediaRouter,Translate
  --disable-client-side-phishing-detection --disable-domain-reliability --no-pings
  --proxy-server="127.0.0.1:$PORT" --proxy-bypass-list="<-loopback>" --host-resolver-rules="MAP * 127.0.0.1")
chrome() { "$CHROMIUM" "${CHROME_ARGS[@]}" "$@" 2>> "$W/chromium.log"; }
hosts() { sort -u "$W/hosts"; }
chrome --dump-dom about:blank > /dev/null
hosts > "$W/hosts.control"
echo '<!DOCTYPE html><p>probe</p><img src="http://kloop-probe.invalid/x.png">' > "$W/probe.html"
chrome --dump-dom "file://$W/probe.html" > /dev/null
grep -qx 'kloop-probe.invalid' "$W/hosts" || fail "the listener did not see the probe page's request: the network check has no teeth"
: > "$W/hosts"
chrome --dump-dom "file://$W/report.html" > "$W/dom_dump.html"
# --dump-dom serializes the page with a script, which a page with scripts off never
# runs; cdp_dump.py reads the DOM over the DevTools protocol either way
python3 "$HERE/cdp_dump.py" "$W/dom_js.html" "file://$W/report.html" "$CHROMIUM" "${CHROME_ARGS[@]}"
python3 "$HERE/cdp_dump.py" "$W/dom_nojs.html" "file://$W/report.html" "$CHROMIUM" "${CHROME_ARGS[@]}" \
  --blink-settings=scriptEnabled=false
# the switch works: a page whose script writes a word has it with scripts on only
echo '<!DOCTYPE html><body><p>x</p><script>document.body.append("JS" + "RAN")</script></body>' > "$W/js.html"
python3 "$HERE/cdp_dump.py" "$W/js_on.html" "file://$W/js.html" "$CHROMIUM" "${CHROME_ARGS[@]}"
python3 "$HERE/cdp_dump.py" "$W/js_off.html" "file://$W/js.html" "$CHROMIUM" "${CHROME_ARGS[@]}" --blink-settings=scriptEnabled=false
grep -q JSRAN "$W/js_on.html" && ! grep -q JSRAN "$W/js_off.html" || fail "scriptEnabled=false did not turn scripts off"
chrome --screenshot="$OUT/report.png" --window-size=1400,3000 "file://$W/report.html" > /dev/null
kill -TERM "$LISTENER"; wait "$LISTENER" || true; LISTENER=
# a host the report reached that is neither in the control load nor one of Chromium's own services
EXTRA=$(hosts | grep -vxF -f "$W/hosts.control" | grep -vE '(^|\.)(google\.com|googleapis\.com|gstatic\.com|gvt1\.com)$' || true)
[ -z "$EXTRA" ] || fail "the page made network requests to: $EXTRA"

[ -s "$W/dom_js.html" ] && [ -s "$W/dom_dump.html" ] || fail "no DOM from chromium"
cmp -s "$W/dom_js.html" "$W/dom_nojs.html" || { diff "$W/dom_js.html" "$W/dom_nojs.html" | head; fail "the page reads differently with JavaScript off"; }
# shellcheck disable=SC2086
"$KLOOP" "$HERE/expect.lua" "$DB" $RUNS > "$W/expect.json"
for dom in dom_dump dom_js dom_nojs; do
  python3 "$HERE/check_dom.py" "$W/$dom.html" "$W/expect.json" || fail "the DOM ($dom) does not hold the store's numbers"
done
[ -s "$OUT/report.png" ] || fail "no screenshot"

# the audit prints the same tables: plain without a terminal or with NO_COLOR, one JSON document with --json
# shellcheck disable=SC2086
NO_COLOR=1 "$KLOOP" audit $RUNS --db "$DB" > "$W/audit.txt"
grep -q $'\e' "$W/audit.txt" && fail "colour with NO_COLOR"
for h in "models and prompt versions" "failure taxonomy" "lineage of the best candidate" "top candidates" "provenance" "drift across runs"; do
  grep -q "$h" "$W/audit.txt" || fail "audit lacks '$h'"
done
# shellcheck disable=SC2086
"$KLOOP" audit $RUNS --db "$DB" --json | python3 -c "import json,sys; d=json.load(sys.stdin); assert len(d['runs']) == $(echo $RUNS | wc -w)" \
  || fail "audit --json"
echo "ok: report of runs $RUNS checked in Chromium (JavaScript on and off, no network); screenshot $OUT/report.png"
