#!/usr/bin/env python3
"""Prints promptfoo's verdicts in an eval's output file (`promptfoo eval -o OUT.json`) as
rows `FILE<TAB>TASK<TAB>VERDICT<TAB>SCORE`, each run named by the task id evalgate gives
it (src/suite/formats/promptfoo/: the test's description or `test-N`, `.vK` for the K-th
combination of expanded vars, `.PROMPT` with several prompts or a labelled one, `@ARM` with
several providers). Used by scripts/promptfoo-diff-record.sh."""
import json
import re
import sys


def task_id(name):
    return re.sub(r"[^a-z0-9\-._]", "-", name.lower())


def arm_name(text):
    name = re.sub(r"[^a-z0-9.\-]", "-", text.lower()).strip("-.")
    return name or "provider"


def main(out_file, shown):
    out = json.load(open(out_file))
    config = out["config"]
    results = out["results"]["results"]
    prompts = config.get("prompts") or []
    prompts = prompts if isinstance(prompts, list) else [prompts]
    providers = config.get("providers") or []
    providers = providers if isinstance(providers, list) else [providers]
    # promptfoo's columns are each provider's prompts in turn.
    count = len(out["results"]["prompts"]) // max(1, len(providers))
    combos = {}
    for r in results:
        combos.setdefault(r["testCase"].get("description"), set()).add(r["testIdx"])
    rows = []
    for r in results:
        desc = r["testCase"].get("description")
        part = task_id(desc[:60]).strip("-") if desc else ""
        if not part:
            part = f"test-{r['testIdx'] + 1}"
        idxs = sorted(combos[desc])
        if len(idxs) > 1:
            part += f".v{idxs.index(r['testIdx']) + 1}"
        index = r["promptIdx"] % count
        label = None
        if len(prompts) == count and isinstance(prompts[index], dict):
            label = prompts[index].get("label")
        if label and task_id(label).strip("-"):
            part += "." + task_id(label).strip("-")
        elif count > 1:
            part += f".prompt-{index + 1}"
        if len(providers) > 1:
            p = r["provider"]
            part += "@" + arm_name(p.get("label") or p["id"])
        verdict = "passed" if r["success"] else ("error" if r.get("failureReason") == 2 else "failed")
        rows.append((part, verdict, r.get("score") or 0))
    for part, verdict, score in sorted(rows):
        print(f"{shown}\t{part}\t{verdict}\t{score:.4f}")


if __name__ == "__main__":
    main(*sys.argv[1:])
