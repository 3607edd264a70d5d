#!/usr/bin/env bash
# Benchmark: one promptfoo config of 500 tests (an `openai:chat` provider, a `contains` and
# an `icontains-any` assertion each) run by `evalgate run promptfooconfig.yaml` and by
# promptfoo 0.123.1 (`promptfoo eval --no-cache`, at its default concurrency of 4 and at
# -j 32), against the same local OpenAI-compatible stand-in (scripts/bench/llm_standin.py:
# 200 ms per call, at most 32 at once). Wall time from process start to exit, best of 3,
# and peak RSS. Figures vary with the machine: this script prints them, it does not fail
# on them.
#
# Needs: cargo, python3, node, GNU time (/usr/bin/time), and promptfoo installed from its
# lockfile: npm ci --prefix tests/fixtures/promptfoo. EVALGATE=path/to/evalgate skips the
# release build.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
promptfoo="$root/tests/fixtures/promptfoo/node_modules/promptfoo/dist/src/main.js"
[ -f "$promptfoo" ] || { echo "scripts/bench-promptfoo.sh: npm ci --prefix tests/fixtures/promptfoo first" >&2; exit 1; }
if [ -z "${EVALGATE:-}" ]; then
  cargo build --release --quiet --manifest-path "$root/Cargo.toml"
  EVALGATE="${CARGO_TARGET_DIR:-$root/target}/release/evalgate"
fi
work=$(mktemp -d)
standin_pid=
cleanup() {
  [ -n "$standin_pid" ] && kill "$standin_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
cd "$work"

python3 "$root/scripts/bench/llm_standin.py" 0.2 32 0 1 > port 2> standin.err &
standin_pid=$!
for _ in $(seq 100); do [ -s port ] && break; sleep 0.1; done
url="http://127.0.0.1:$(head -n 1 port)/v1"

python3 - "$url" > promptfooconfig.yaml <<'PY'
import json, sys
tests = [{"description": f"question {i}", "vars": {"n": str(i)},
          "assert": [{"type": "contains", "value": "ok"}, {"type": "icontains-any", "value": ["OK", "fine"]}]}
         for i in range(500)]
print(json.dumps({
    "description": "bench",
    "prompts": ["Question {{ n }}: answer ok."],
    "providers": [{"id": "openai:chat:bench-model", "config": {"apiBaseUrl": sys.argv[1], "apiKeyEnvar": "BENCH_KEY"}}],
    "tests": tests,
}, indent=1))
PY
export BENCH_KEY=local PROMPTFOO_DISABLE_TELEMETRY=1 PROMPTFOO_DISABLE_UPDATE=1 PROMPTFOO_CONFIG_DIR="$work/.promptfoo" \
  PROMPTFOO_CACHE_ENABLED=false PROMPTFOO_DISABLE_SHARING=1

now() { echo "${EPOCHREALTIME/,/.}"; }
# best NAME CMD... : best wall time of 3 runs and the peak RSS of that run, as a table row
best() {
  local name=$1 start end wall rss best_wall= best_rss=
  shift
  for _ in 1 2 3; do
    rm -rf evalgate-out out.json
    start=$(now)
    /usr/bin/time -f '%M' -o rss "$@" > last.out 2>&1 || true
    end=$(now)
    wall=$(echo "$end - $start" | bc -l)
    rss=$(tail -n 1 rss)
    if [ -z "$best_wall" ] || (( $(echo "$wall < $best_wall" | bc -l) )); then best_wall=$wall; best_rss=$rss; fi
  done
  printf '| %s | %.2f s | %.1f MB |\n' "$name" "$best_wall" "$(echo "$best_rss / 1024" | bc -l)"
}

echo "| 500-test promptfoo config, stand-in 200 ms, cap 32 | wall (best of 3) | peak RSS |"
echo "|---|---|---|"
best "evalgate run (defaults)" "$EVALGATE" run promptfooconfig.yaml
grep -q "500/500 passed" last.out || { echo "evalgate did not pass all 500:" >&2; tail -5 last.out >&2; }
best "promptfoo eval (default -j 4)" node "$promptfoo" eval -c promptfooconfig.yaml --no-cache --no-table --no-progress-bar -o out.json
best "promptfoo eval -j 32" node "$promptfoo" eval -c promptfooconfig.yaml --no-cache --no-table --no-progress-bar -j 32 -o out.json
python3 -c 'import json; r = json.load(open("out.json"))["results"]["stats"]; print("promptfoo: %s passed, %s failed, %s errors" % (r["successes"], r["failures"], r["errors"]))'
