#!/usr/bin/env bash
# Benchmark: the per-trial overhead of an ACP agent against the same program as a command
# agent. 200 tasks run the scripted fake agent (tests/fixtures/acp/fake_agent.py): once over
# ACP (initialize, session/new, one session/prompt answered `end_turn` with one message chunk,
# the process group killed), once as a command agent (`fake_agent.py --print PROMPT`, which
# prints the same answer and exits). Best of 3 each; prints both wall times and the
# difference a trial. Figures vary with the machine: this script prints them, it does not
# fail on them. Needs: cargo, python3, bc. EVALGATE_BIN=PATH skips the release build.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
if [ -z "${EVALGATE_BIN:-}" ]; then
  cargo build --release --quiet --manifest-path "$root/Cargo.toml"
  EVALGATE_BIN="$root/target/release/evalgate"
fi
tasks=200
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$root/tests/fixtures/acp/fake_agent.py" "$work/"
suite() { # suite AGENT-BLOCK
  {
    printf 'evalgate: 1\nsuite: bench.acp\nagents:\n%s\ntasks:\n' "$1"
    for i in $(seq 1 "$tasks"); do
      printf '  - {id: t%d, agent: a, prompt: go, grade: [{type: contains, value: I stop here}]}\n' "$i"
    done
  } > "$work/evalgate.yaml"
}
now() { echo "${EPOCHREALTIME/,/.}"; }
best() { # best: the least wall time of 3 runs of the suite in $work
  local least= start end wall
  for _ in 1 2 3; do
    start=$(now)
    (cd "$work" && "$EVALGATE_BIN" run > /dev/null 2>&1)
    end=$(now)
    wall=$(echo "$end - $start" | bc -l)
    if [ -z "$least" ] || [ "$(echo "$wall < $least" | bc -l)" = 1 ]; then least=$wall; fi
  done
  echo "$least"
}
suite '  a: {acp: {command: [python3, fake_agent.py], env: {FAKE_ACP: "stop:end_turn"}}}'
acp=$(best)
suite '  a: {command: [python3, fake_agent.py, --print]}'
command=$(best)
per_trial=$(echo "($acp - $command) * 1000 / $tasks" | bc -l)
printf '%d trials: ACP %.2f s, command %.2f s; ACP overhead %.1f ms a trial\n' "$tasks" "$acp" "$command" "$per_trial"
