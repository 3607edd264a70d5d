#!/usr/bin/env bash
# Benchmark: the per-trial overhead of a workspace (docs/workspaces.md). 200 trials of an
# agent that prints `ok` (`sh -c`), -j 2, in five runs: bare (no workspace); a small
# template (3 files) and a 10,000-file template (100 directories of 100 small files), each
# with `isolation: none` (copy, scans, checks) and `isolation: bwrap` (the sandbox too).
# Prints the wall time of each run and the overhead a trial over bare. Figures vary with
# the machine: this script prints them, it does not fail on them.
# Needs bubblewrap and util-linux (scripts/test.sh installs them). EVALGATE=path/to/evalgate
# skips the release build.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
if [ -z "${EVALGATE:-}" ]; then
  cargo build --release --quiet --manifest-path "$root/Cargo.toml"
  EVALGATE="$root/target/release/evalgate"
fi
trials=${TRIALS:-200}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

mkdir -p "$work/small" "$work/large"
printf 'readme\n' > "$work/small/README.md"; printf 'x = 1\n' > "$work/small/main.py"; printf 'ok\n' > "$work/small/test.sh"
for d in $(seq 1 100); do
  mkdir -p "$work/large/d$d"
  for f in $(seq 1 100); do printf 'file %s %s\n' "$d" "$f" > "$work/large/d$d/f$f.txt"; done
done

# suite NAME WORKSPACE-LINE: a suite of one task with $trials trials.
suite() {
  mkdir -p "$work/$1"
  printf 'evalgate: 1\nsuite: bench.workspace\nagents:\n  bot: {command: [sh, -c, "echo ok"]}\ndefaults: {agent: bot}\n%s\ntasks:\n  - {id: t, prompt: hi, repeat: %s, grade: [{type: contains, value: ok}]}\n' "$2" "$trials" > "$work/$1/evalgate.yaml"
}
suite bare ""
suite small-none "workspace: {template: ../small, isolation: none, keep: never}"
suite small-bwrap "workspace: {template: ../small, keep: never}"
suite large-none "workspace: {template: ../large, isolation: none, keep: never}"
suite large-bwrap "workspace: {template: ../large, keep: never}"

declare -A ms
for name in bare small-none small-bwrap large-none large-bwrap; do
  start=$(date +%s%N)
  (cd "$work/$name" && "$EVALGATE" run -q -j 2 --out out >/dev/null 2>&1) || { echo "$name: the run failed" >&2; exit 1; }
  ms[$name]=$(( ($(date +%s%N) - start) / 1000000 ))
done
printf '%-12s %10s %22s\n' run "wall (ms)" "overhead a trial (ms)"
for name in bare small-none small-bwrap large-none large-bwrap; do
  over=$(awk -v a="${ms[$name]}" -v b="${ms[bare]}" -v n="$trials" 'BEGIN { printf "%.1f", (a - b) * 2 / n }')
  printf '%-12s %10s %22s\n' "$name" "${ms[$name]}" "$over"
done
