#!/bin/sh
# Records AgentV 4.42.4's own verdicts on the differential fixtures
# (tests/fixtures/agentv-diff/*.eval.yaml) into tests/fixtures/agentv-diff/VERDICTS.tsv,
# which tests/integration/agentv_diff.rs compares evalgate's verdicts with. CI reads the
# recorded file and never needs AgentV.
#
#   npm install --prefix /tmp/agentv-ref agentv@4.42.4   # once, outside the repository
#   AGENTV=/tmp/agentv-ref/node_modules/agentv/dist/cli.js scripts/agentv-diff-record.sh
#
# Each file runs offline against the `scripted` cli target (.agentv/targets.yaml: agent.py
# answers from answers.json), in a copy of the fixtures outside the repository (AgentV
# writes run artifacts), with judge.py as the grader target's OpenAI-compatible endpoint
# (port 18931, .agentv/targets.yaml). A test passes when AgentV reports `execution_status: ok` (its
# score reached the threshold and no required assertion failed).
#
# `mode: conversation` files: AgentV 4.42.4 gives a `cli` target each turn's input alone, and
# writes its prompt file at $TMPDIR/agentv-TEST/turn-N-….prompt.txt (the turn's id holds a
# slash), which fails every turn with ENOENT unless that directory exists: the script runs
# AgentV with a private TMPDIR holding a directory `agentv-ID` for every test id.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
fixtures="$here/tests/fixtures/agentv-diff"
agentv=${AGENTV:?set AGENTV to agentv 4.42.4 dist/cli.js}
node "$agentv" --version | grep -qx '4.42.4' || { echo "AgentV 4.42.4 is needed, not $(node "$agentv" --version)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -R "$fixtures/." "$work/"
mkdir "$work/tmp"
for id in $(grep -ohE '\bid: [A-Za-z0-9_-]+' "$work"/*.eval.yaml | cut -d' ' -f2); do
    mkdir -p "$work/tmp/agentv-$id"
done
out="$fixtures/VERDICTS.tsv"
python3 "$work/judge.py" 18931 &
judge=$!
trap 'kill $judge; rm -rf "$work"' EXIT
# The agent by its absolute path: a workspace probe runs it in the test's workspace.
export JUDGE_API_KEY=local JUDGE_MODEL=judge AGENTV_DIFF_DIR="$work"
python3 -c 'import socket, time
for _ in range(300):
    try:
        socket.create_connection(("127.0.0.1", 18931), 1).close(); break
    except OSError:
        time.sleep(0.1)'

{
    echo "# AgentV 4.42.4's verdicts on these fixtures, recorded by scripts/agentv-diff-record.sh."
    printf '# file\ttest\tverdict\tscore\n'
    for eval in "$work"/*.eval.yaml; do
        name=$(basename "$eval")
        (cd "$work" && TMPDIR="$work/tmp" node "$agentv" eval run "$name" --target scripted --workers 1 -o "$work/out-${name%%.*}" >/dev/null 2>&1) || true
        python3 - "$work/out-${name%%.*}/index.jsonl" "$name" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
for r in sorted(rows, key=lambda r: r["test_id"]):
    verdict = {"ok": "passed", "quality_failure": "failed"}.get(r["execution_status"], "error")
    print(f"{sys.argv[2]}\t{r['test_id']}\t{verdict}\t{r['score']:.4f}")
PY
    done
} > "$out.new"
mv "$out.new" "$out"
echo "wrote $out"
