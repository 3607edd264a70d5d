#!/usr/bin/env python3
"""Convert every task/eval file an upstream repository ships and classify the result.

Run at test-writing time (it needs the upstream sources, which CI does not have):

    scripts/formats-corpus.py PROJECT SOURCE_DIR COMMIT [EVALGATE] >> tests/fixtures/corpus/MANIFEST.tsv

SOURCE_DIR is a checkout (or `git archive`) of the project at COMMIT. Each candidate file
(mcpchecker / gevals: YAML with `kind: Task`, `kind: Eval` or `apiVersion: mcp-eval/v1`;
AgentV: YAML with `tests:`, `eval_cases:` or `evalcases:` at the top) is converted with
`evalgate convert`; a conversion that succeeds is saved beside the original and loaded
again with `evalgate list`. Classes:

- `converts`  convert exit 0 and the saved suite lists its tasks (exit 0)
- `refused`   convert exit 2 with a located reason (the first reason is recorded)
- `WRONG`     anything else: a crash, another exit code, an unlocated refusal, or a
              converted suite that does not load. There must be none.

Prints the manifest rows (tab-separated: project, path, commit, class, reason) and a
summary per class on stderr.
"""

import collections
import os
import pathlib
import re
import subprocess
import sys

CANDIDATE = {
    "agentv": re.compile(r"^(tests|eval_cases|evalcases):", re.M),
    "default": re.compile(r"^kind: (Task|Eval)\b|^apiVersion: mcp-eval/", re.M),
}
# A refusal names FILE:LINE:COLUMN (or FILE:LINE) before its message.
LOCATED = re.compile(r"[^\s:]+:\d+(:\d+)?: ")


def candidates(project, root):
    pattern = CANDIDATE.get(project, CANDIDATE["default"])
    for path in sorted(root.rglob("*")):
        if path.suffix not in (".yaml", ".yml") or not path.is_file():
            continue
        if "node_modules" in path.parts or ".git" in path.parts:
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        if pattern.search(text):
            yield path


def first_reason(stderr):
    for line in stderr.splitlines():
        line = line.strip()
        m = re.search(r"(\S+:\d+:\d+: /\S*: .*)", line)
        if m:
            return m.group(1)
    for line in stderr.splitlines():
        if line.strip().startswith("error:"):
            return line.strip()[len("error: "):]
    return stderr.strip().splitlines()[0] if stderr.strip() else ""


def classify(evalgate, path):
    run = subprocess.run([evalgate, "convert", path.name], cwd=path.parent, capture_output=True, text=True,
                         timeout=60)
    if run.returncode == 2:
        reason = first_reason(run.stderr)
        return ("refused" if LOCATED.search(run.stderr) else "WRONG"), reason
    if run.returncode != 0:
        return "WRONG", f"convert exit {run.returncode}: {first_reason(run.stderr)}"
    saved = path.parent / f".corpus-{path.stem}.evalgate.yaml"
    saved.write_text(run.stdout, encoding="utf-8")
    try:
        listed = subprocess.run([evalgate, "list", saved.name], cwd=path.parent, capture_output=True, text=True,
                                timeout=60)
    finally:
        saved.unlink()
    if listed.returncode != 0:
        return "WRONG", f"converted suite does not load: {first_reason(listed.stderr)}"
    return "converts", f"{len(listed.stdout.splitlines())} tasks"


def main():
    project, source, commit = sys.argv[1], pathlib.Path(sys.argv[2]), sys.argv[3]
    evalgate = sys.argv[4] if len(sys.argv) > 4 else str(pathlib.Path(__file__).parent.parent / "target/debug/evalgate")
    counts = collections.Counter()
    for path in candidates(project, source):
        cls, reason = classify(os.path.abspath(evalgate), path)
        counts[cls] += 1
        rel = path.relative_to(source)
        print(f"{project}\t{rel}\t{commit[:12]}\t{cls}\t{reason.replace(chr(9), ' ')[:200]}")
    print(f"{project}: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())), file=sys.stderr)


if __name__ == "__main__":
    main()
