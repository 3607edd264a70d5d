#!/usr/bin/env bash
# Benchmark: evalgate's overhead over running the same agent commands bare.
#
# Generates suites of 1,000 and 10,000 tasks (a trivial command agent, one `contains`
# grader each) and prints wall time, tasks/second and peak RSS of `run -j 4`, the same
# 1,000 agent commands run bare with `xargs -P 4` and the ratio, and the time of `check`
# on 10,000 tasks.
#
# Targets: 1,000-task run ≤ 1.25× the xargs wall time; peak RSS < 25 MB (1,000 tasks) and
# < 100 MB (10,000 tasks); `check` of 10,000 tasks < 200 ms. Figures vary with the machine;
# this script reports them, it does not fail on them.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cargo build --release --quiet --manifest-path "$root/Cargo.toml"
bin="$root/target/release/evalgate"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cat > "$work/agent.sh" <<'AGENT'
#!/bin/sh
echo "answer to $1"
AGENT
chmod +x "$work/agent.sh"

gen() { # gen N FILE
  {
    printf 'evalgate: 1\nsuite: bench.evals.n%s\nagents:\n  bot: {command: [./agent.sh, "{prompt}"]}\ntasks:\n' "$1"
    for i in $(seq 1 "$1"); do
      printf '  - id: task-%s\n    prompt: "question %s"\n    grade: [{type: contains, value: "answer to question %s"}]\n' "$i" "$i" "$i"
    done
  } > "$2"
}
gen 1000 "$work/s1000.yaml"
gen 10000 "$work/s10000.yaml"

now() { echo "${EPOCHREALTIME/,/.}"; }
# measure LABEL CMD... : prints wall seconds and peak RSS (KiB) of CMD
measure() {
  local label=$1; shift
  local start end
  start=$(now)
  /usr/bin/time -f '%M' -o "$work/rss" "$@" > /dev/null 2>&1 || true
  end=$(now)
  wall=$(echo "$end - $start" | bc -l)
  rss=$(tail -n 1 "$work/rss")
  printf '%-34s %8.3f s  %8.1f MB peak RSS\n' "$label" "$wall" "$(echo "$rss / 1024" | bc -l)"
}

cd "$work"
echo "evalgate benchmark on $(nproc) CPU(s), $(uname -sr)"
echo

measure "xargs -P 4, 1,000 agent runs" sh -c 'seq 1 1000 | xargs -P 4 -I{} ./agent.sh "question {}"'
bare=$wall

measure "evalgate run -j 4, 1,000 tasks" "$bin" run -j 4 -q --out out1000 s1000.yaml
run1000=$wall
rss1000=$rss
grep -q '"passed": 1000' out1000/results.json || { echo "the 1,000-task run did not pass every task" >&2; exit 1; }

measure "evalgate run -j 4, 10,000 tasks" "$bin" run -j 4 -q --out out10000 s10000.yaml
run10000=$wall
rss10000=$rss

# `check` is short: report the best of five runs, as timing tools do.
check10000=
for _ in 1 2 3 4 5; do
  measure "evalgate check, 10,000 tasks" "$bin" check -q s10000.yaml
  if [ -z "$check10000" ] || [ "$(echo "$wall < $check10000" | bc -l)" = 1 ]; then check10000=$wall; fi
done

echo
printf '1,000 tasks:  %.0f tasks/s, %.2f× the bare xargs time (target ≤ 1.25×), %.1f MB (target < 25 MB)\n' \
  "$(echo "1000 / $run1000" | bc -l)" "$(echo "$run1000 / $bare" | bc -l)" "$(echo "$rss1000 / 1024" | bc -l)"
printf '10,000 tasks: %.0f tasks/s, %.1f MB (target < 100 MB)\n' \
  "$(echo "10000 / $run10000" | bc -l)" "$(echo "$rss10000 / 1024" | bc -l)"
printf 'check of 10,000 tasks: %.0f ms (target < 200 ms)\n' "$(echo "$check10000 * 1000" | bc -l)"
