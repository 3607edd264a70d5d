#!/usr/bin/env bash
# Benchmarks, at default settings (no -j, no max_concurrency), in one run on one machine:
#   1. command agents: 1,000 and 10,000 tasks vs the same commands run bare with
#      `xargs -P <cores>` (ratio, best of 3 each), peak RSS; 100,000 tasks (ten suites of 10,000, the most
#      one suite may hold, in one run) peak RSS;
#   2. LLM-bound: 400 tasks against a local OpenAI-compatible stand-in (200 ms latency, at
#      most 32 requests at once on the server) vs the ideal (calls × latency ÷ 32); again
#      with 20% of the calls answered 429 + `Retry-After: 1`, counting errored tasks; then
#      recorded into a cassette and replayed with no server, vs 400 command agents that
#      print fixed text;
#   3. MCP-bound: 1,000 execution-level `tools/call` of server-everything's `echo` vs a
#      minimal Python client (the `mcp` SDK) making the same calls, 64 at once (evalgate's
#      default for MCP-bound tasks), both including the server's start;
#   4. `check` of 10,000 tasks and a one-task suite's run, process start to exit (best of 5).
# Goals: command ≤ 1.1× bare at 10k; LLM-bound ≤ 1.3× ideal, the 429 run with zero
# errored tasks, replayed ≤ 1.2× the fixed-text agents at $0; MCP-bound ≤ 1.2× the minimal client; 100k tasks ≤ 400 MB; check of 10k
# < 100 ms; one-task suite < 20 ms. Figures vary with the machine: this script prints
# them, it does not fail on them.
#
# Needs: cargo, python3, node/npm, bc, GNU time (/usr/bin/time: apt `time`). Installs
# server-everything under tests/fixtures/mcp (npm ci) and a venv .venv-bench with the
# pinned `mcp` SDK for the Python client.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
for tool in cargo python3 npm bc /usr/bin/time; do
  command -v "$tool" >/dev/null || { echo "scripts/bench.sh: $tool is required" >&2; exit 1; }
done
cargo build --release --quiet --manifest-path "$root/Cargo.toml"
bin="$root/target/release/evalgate"
[ -d "$root/tests/fixtures/mcp/node_modules" ] ||
  (cd "$root/tests/fixtures/mcp" && npm ci --no-audit --no-fund --loglevel=error)
if [ ! -x "$root/.venv-bench/bin/python" ]; then
  python3 -m venv "$root/.venv-bench"
fi
"$root/.venv-bench/bin/pip" install --quiet --disable-pip-version-check 'mcp==2.3.0'
everything="$root/tests/fixtures/mcp/node_modules/@modelcontextprotocol/server-everything/dist/index.js"

work=$(mktemp -d)
standin_pid=
cleanup() {
  [ -n "$standin_pid" ] && kill "$standin_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
cd "$work"
cores=$(nproc)

now() { echo "${EPOCHREALTIME/,/.}"; }
# measure CMD... : sets $wall (seconds), $rss (KiB peak) and $status of CMD
measure() {
  local start end
  start=$(now)
  status=0
  /usr/bin/time -f '%M' -o "$work/rss" "$@" > "$work/last.out" 2>&1 || status=$?
  end=$(now)
  wall=$(echo "$end - $start" | bc -l)
  rss=$(tail -n 1 "$work/rss")
}
# lower A B : the smaller of two wall times (A may be empty)
lower() { if [ -z "$1" ] || [ "$(echo "$2 < $1" | bc -l)" = 1 ]; then echo "$2"; else echo "$1"; fi; }
# best N CMD... : the shortest wall time of N runs, in $best
best() {
  local n=$1 i
  shift
  best=
  for ((i = 0; i < n; i++)); do
    measure "$@"
    best=$(lower "$best" "$wall")
  done
}
mb() { printf '%.1f MB' "$(echo "$1 / 1024" | bc -l)"; }
ratio() { printf '%.2f×' "$(echo "$1 / $2" | bc -l)"; }
secs() { printf '%.2f s' "$1"; }
ms() { printf '%.0f ms' "$(echo "$1 * 1000" | bc -l)"; }
rows=()
row() { rows+=("$(printf '| %s | %s | %s | %s | %s |' "$@")"); }
# totals FILE... : "passed errors" summed over results files
totals() {
  python3 -c 'import json,sys
t=[json.load(open(f))["totals"] for f in sys.argv[1:]]
print(sum(x["passed"] for x in t), sum(x["errors"] for x in t))' "$@"
}

# 1. Command agents.
cat > agent.sh <<'AGENT'
#!/bin/sh
echo "answer to $1"
AGENT
chmod +x agent.sh
gen_command() { # gen_command N FILE [SUITE_SUFFIX]
  {
    printf 'evalgate: 1\nsuite: bench.cmd.n%s%s\nagents:\n  bot: {command: [./agent.sh, "{prompt}"]}\ntasks:\n' "$1" "${3:-}"
    for i in $(seq 1 "$1"); do
      printf '  - id: task-%s\n    prompt: "question %s"\n    grade: [{type: contains, value: "answer to question %s"}]\n' "$i" "$i" "$i"
    done
  } > "$2"
}
gen_command 1000 s1000.yaml
gen_command 10000 s10000.yaml
if [ "${BENCH_100K:-1}" = 1 ]; then
  for k in $(seq 1 10); do gen_command 10000 "s100k-$k.yaml" "-$k"; done
fi
printf 'evalgate: 1\nsuite: bench.one\nagents:\n  bot: {command: [./agent.sh, "{prompt}"]}\ntasks:\n  - {id: one, prompt: q, grade: [{type: contains, value: answer}]}\n' > one.yaml

# Best of 3 each, alternating: run to run, the same command varies by ±15% on a small VM.
for n in 1000 10000; do
  bare= ours= peak=
  for _ in 1 2 3; do
    measure sh -c "seq 1 $n | xargs -P $cores -I{} ./agent.sh 'question {}'"
    bare=$(lower "$bare" "$wall")
    measure "$bin" run -q --out "out$n" "s$n.yaml"
    if [ "$(lower "$ours" "$wall")" = "$wall" ]; then ours=$wall peak=$rss; fi
  done
  read -r passed errors < <(totals "out$n/results.json")
  row "command agents, $(echo "$n" | sed -E ':a;s/([0-9])([0-9]{3})($|,)/\1,\2\3/;ta') tasks (best of 3)" "$(secs "$ours"), $(mb "$peak")" "xargs -P $cores: $(secs "$bare")" \
    "$(ratio "$ours" "$bare")" "≤ 1.1× at 10k ($passed passed)"
done
if [ "${BENCH_100K:-1}" = 1 ]; then # BENCH_100K=0 skips the longest part
  measure "$bin" run -q --out out100k s100k-*.yaml
  read -r passed errors < <(totals out100k/*/results.json)
  row "command agents, 100,000 tasks (10 suites)" "$(secs "$wall"), $(mb "$rss")" "" "" "≤ 400 MB ($passed passed)"
fi

# 2. LLM-bound.
gen_llm() { # gen_llm PORT FILE
  {
    printf 'evalgate: 1\nsuite: bench.llm\nagents:\n  bot: {provider: openai, model: bench-model, base_url: "http://127.0.0.1:%s/v1", api_key_env: BENCH_KEY}\ntasks:\n' "$1"
    for i in $(seq 1 400); do
      printf '  - {id: task-%s, prompt: "question %s", grade: [{type: contains, value: ok}]}\n' "$i" "$i"
    done
  } > "$2"
}
llm_run() { # llm_run SHARE_429 LABEL
  coproc STANDIN { exec python3 "$root/scripts/bench/llm_standin.py" 0.2 32 "$1" 1 2> "$work/standin.log"; }
  standin_pid=$STANDIN_PID
  read -r port <&"${STANDIN[0]}"
  gen_llm "$port" llm.yaml
  measure env BENCH_KEY=bench "$bin" run -q --no-cache --out "out-llm-$1" llm.yaml
  kill "$standin_pid"
  wait "$standin_pid" 2>/dev/null || true
  standin_pid=
  read -r passed errors < <(totals "out-llm-$1/results.json")
  local served
  served=$(tail -n 1 "$work/standin.log")
  row "$2" "$(secs "$wall")" "ideal 400 × 0.2 s ÷ 32 = 2.50 s" "$(ratio "$wall" 2.5)" \
    "$3 ($passed passed, $errors errored; server: $served)"
}
llm_run 0 "LLM-bound, 400 tasks, 200 ms, server cap 32" "≤ 1.3×"
llm_run 0.2 "same, 20% answered 429 + Retry-After: 1" "0 errored"

# 2b. The same suite recorded once into a cassette, then replayed with no server and no key,
# against 400 command agents that print fixed text (best of 3 each, alternating).
coproc STANDIN { exec python3 "$root/scripts/bench/llm_standin.py" 0.2 32 0 1 2> "$work/standin.log"; }
standin_pid=$STANDIN_PID
read -r port <&"${STANDIN[0]}"
gen_llm "$port" llm.yaml
env BENCH_KEY=bench "$bin" run -q --record --out out-llm-record llm.yaml > /dev/null
kill "$standin_pid"
wait "$standin_pid" 2>/dev/null || true
standin_pid=
gen_command 400 s400.yaml
replay= fixed=
for _ in 1 2 3; do
  measure "$bin" run -q --replay --out out-llm-replay llm.yaml
  replay=$(lower "$replay" "$wall")
  measure "$bin" run -q --out out400 s400.yaml
  fixed=$(lower "$fixed" "$wall")
done
read -r passed errors < <(totals out-llm-replay/results.json)
replayed=$(python3 -c 'import json,sys; c=json.load(open(sys.argv[1]))["cassette"]; print(c["replayed"], "replayed,", c["missed"], "missed")' out-llm-replay/results.json)
row "LLM-bound, 400 tasks replayed from a cassette (best of 3)" "$(secs "$replay")" \
  "400 command agents printing fixed text: $(secs "$fixed")" "$(ratio "$replay" "$fixed")" \
  "≤ 1.2×, \$0 spent ($passed passed; $replayed; no server, no key)"

# 3. MCP-bound.
{
  printf 'evalgate: 1\nsuite: bench.mcp\nmcp_servers:\n  everything: {command: [node, "%s", stdio]}\ntasks:\n' "$everything"
  for i in $(seq 0 999); do
    printf '  - {id: echo-%s, level: execution, call: {server: everything, tool: echo, arguments: {message: m%s}}, grade: [{type: equals, value: "Echo: m%s"}]}\n' "$i" "$i" "$i"
  done
} > mcp.yaml
measure "$root/.venv-bench/bin/python" "$root/scripts/bench/mcp_client.py" 1000 64 node "$everything" stdio
client=$wall
[ "$status" = 0 ] || { echo "the Python MCP client failed:" >&2; cat "$work/last.out" >&2; }
measure "$bin" run -q --out out-mcp mcp.yaml
read -r passed errors < <(totals out-mcp/results.json)
row "MCP-bound, 1,000 tools/call (echo)" "$(secs "$wall")" "Python mcp SDK, 64 at once: $(secs "$client")" \
  "$(ratio "$wall" "$client")" "≤ 1.2× ($passed passed)"

# 4. Scale of the fixed costs.
best 5 "$bin" check -q s10000.yaml
row "check, 10,000 tasks (best of 5)" "$(ms "$best")" "" "" "< 100 ms"
best 5 "$bin" run -q --out out-one one.yaml
row "one-task suite, start to exit (best of 5)" "$(ms "$best")" "" "" "< 20 ms"

echo "evalgate benchmark, $(date -u '+%Y-%m-%d %H:%M UTC'), $cores CPU(s), $(uname -sr), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo
echo '| benchmark | evalgate (wall, peak RSS) | reference | ratio | goal |'
echo '|---|---|---|---|---|'
printf '%s\n' "${rows[@]}"
