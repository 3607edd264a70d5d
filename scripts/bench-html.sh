#!/usr/bin/env bash
# Benchmark: the HTML report of 1,000 tasks with traces — its size, the time to render it
# (`evalgate report`), to load it in headless Chromium, and one filter pass over the table.
#
# Each task's agent answers ~400 characters and reports four tool calls with arguments and
# results; one task in ten fails. Targets (issue 21): under 5 MB; a filter pass under 100 ms.
# Figures vary with the machine; this script reports them, it does not fail on them.
# Needs what scripts/test.sh installs: Debian's chromium and tests/browser/node_modules.
# EVALGATE=path/to/evalgate skips the release build.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
if [ -z "${EVALGATE:-}" ]; then
  cargo build --release --quiet --manifest-path "$root/Cargo.toml"
  EVALGATE="$root/target/release/evalgate"
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
[ -n "${KEEP_RESULTS:-}" ] && trap 'cp "$work/out/results.json" "$KEEP_RESULTS"; rm -rf "$work"' EXIT

cat > "$work/agent.sh" <<'AGENT'
#!/bin/sh
n=${1#question }
printf 'Answer to question %s: ' "$n"
i=0; while [ $i -lt 8 ]; do printf 'the order ships from the Berlin warehouse within two days. '; i=$((i+1)); done
echo
cat > "$EVALGATE_TRACE" <<TRACE
{"model": "fake-1", "usage": {"input_tokens": 800, "output_tokens": 120, "cost_usd": 0.0012},
 "tool_calls": [
  {"name": "find_order", "server": "shop", "arguments": {"order_id": "A-$n"}, "result": {"content": [{"type": "text", "text": "order A-$n: packed, carrier ups, 2 items, warehouse Berlin"}]}, "duration_ms": 120},
  {"name": "customer", "server": "crm", "arguments": {"order_id": "A-$n", "fields": ["name", "tier"]}, "result": {"content": [{"type": "text", "text": "tier: gold, since 2019"}]}, "duration_ms": 45},
  {"name": "eta_lookup", "server": "shop", "arguments": {"carrier": "ups", "from": "Berlin", "to": "Hamburg"}, "result": {"content": [{"type": "text", "text": "eta: 2 business days"}]}, "duration_ms": 80},
  {"name": "policy_search", "server": "kb", "arguments": {"query": "late delivery compensation", "top_k": 3}, "result": {"content": [{"type": "text", "text": "Late deliveries over 5 days get a 10% voucher. Orders are insured in transit."}]}, "duration_ms": 210}
 ]}
TRACE
AGENT
chmod +x "$work/agent.sh"
{
  printf 'evalgate: 1\nsuite: bench.evals.html\nagents:\n  bot: {command: [./agent.sh, "{prompt}"]}\nthresholds: {pass_score: 0.5}\ntasks:\n'
  for i in $(seq 1 1000); do
    tag=$(( i % 5 ))
    want="Answer to question $i"
    if [ $(( i % 10 )) -eq 0 ]; then want="a refund of 10%"; fi
    printf '  - id: task-%s\n    tags: [area-%s]\n    prompt: "question %s"\n    grade:\n      - {type: contains, value: "%s"}\n      - {type: tool_called, tool: find_order}\n' "$i" "$tag" "$i" "$want"
  done
} > "$work/evalgate.yaml"

(cd "$work" && "$EVALGATE" run -q -j 4 --out out >/dev/null 2>&1) || true
start=$(date +%s%N)
"$EVALGATE" report "$work/out/results.json" --out "$work/re" >/dev/null
render_ms=$(( ($(date +%s%N) - start) / 1000000 ))
bytes=$(wc -c < "$work/re/report.html")
node "$root/tests/browser/check.mjs" "$work/re/report.html" --search task-99 > "$work/seen.json"
node -e '
const s = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
const [bytes, render] = [Number(process.argv[2]), process.argv[3]];
console.log(`tasks:             ${s.taskIds.length} (${s.statusFailed.visible.length} failing), 4 tool calls each`);
console.log(`report.html:       ${(bytes / 1e6).toFixed(2)} MB (${bytes} bytes)`);
console.log(`render (report):   ${render} ms`);
console.log(`load in Chromium:  ${s.navigationMs} ms (navigation start to load event)`);
console.log(`filter pass:       ${s.filterMs.toFixed(1)} ms (slowest of 4: input event to layout)`);
console.log(`console errors:    ${s.consoleErrors.length}, requests: ${s.requests.length}`);
' "$work/seen.json" "$bytes" "$render_ms"
