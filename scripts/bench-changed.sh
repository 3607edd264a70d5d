#!/usr/bin/env bash
# Benchmark of `--changed-since` (docs/changed.md, "Measured"): a suite of 200 model-bound
# tasks against a local OpenAI-compatible stand-in (50 ms a call, at most 32 at once), run
# whole, then with one task's prompt changed and `--changed-since` the whole run (audit at
# its default 10%). Prints the live calls the stand-in answered and the wall time of each.
# Figures vary with the machine: this script prints them, it does not fail on them.
#
# Needs: cargo, python3, bc. EVALGATE_BIN: a binary to measure instead of a release build.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
for tool in python3 bc; do
  command -v "$tool" >/dev/null || { echo "scripts/bench-changed.sh: $tool is required" >&2; exit 1; }
done
bin=${EVALGATE_BIN:-}
if [ -z "$bin" ]; then
  cargo build --release --quiet --manifest-path "$root/Cargo.toml"
  bin="$root/target/release/evalgate"
fi

work=$(mktemp -d)
standin_pid=
cleanup() {
  [ -n "$standin_pid" ] && kill "$standin_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
cd "$work"
now() { echo "${EPOCHREALTIME/,/.}"; }

# The endpoint is read from the environment: each run's stand-in listens on a port of its
# own, and the port is not part of what the tasks measure.
suite() { # suite CHANGED_PROMPT
  {
    printf 'evalgate: 1\nsuite: bench.changed\nagents:\n  bot: {provider: openai, model: bench-model, base_url: "{env.BENCH_URL}/v1", api_key_env: BENCH_KEY}\ntasks:\n'
    for i in $(seq 1 200); do
      prompt="question $i"
      [ "$i" = 100 ] && prompt="$1"
      printf '  - {id: task-%s, prompt: "%s", grade: [{type: contains, value: ok}]}\n' "$i" "$prompt"
    done
  } > evalgate.yaml
}

# timed LABEL CHANGED_PROMPT ARGS... : one run against a fresh stand-in; a table row
rows=()
timed() {
  local label=$1 prompt=$2 start end served
  shift 2
  coproc STANDIN { exec python3 "$root/scripts/bench/llm_standin.py" 0.05 32 0 1 2> "$work/standin.log"; }
  standin_pid=$STANDIN_PID
  read -r port <&"${STANDIN[0]}"
  suite "$prompt"
  start=$(now)
  env BENCH_KEY=bench BENCH_URL="http://127.0.0.1:$port" "$bin" run -q --no-cache "$@" > /dev/null 2>&1 || true
  end=$(now)
  kill "$standin_pid"
  wait "$standin_pid" 2>/dev/null || true
  standin_pid=
  served=$(sed -n 's/^requests=\([0-9]*\).*/\1/p' "$work/standin.log")
  rows+=("$(printf '| %s | %s | %.2f s |' "$label" "$served" "$(echo "$end - $start" | bc -l)")")
}

timed "full run, 200 tasks" "question 100" --out full
timed "--changed-since, 1 of 200 changed (audit 10%)" "question 100, reworded" --out changed --changed-since full
timed "--changed-since, 1 of 200 changed (no audit)" "question 100, reworded" --out changed0 --changed-since full --audit-rate 0

echo "| run | live model calls | wall time |"
echo "|---|---|---|"
printf '%s\n' "${rows[@]}"
