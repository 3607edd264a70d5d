#!/usr/bin/env python3
"""A toy prompt-injection guard: prints a JSON verdict {detected, action} for its input.
It catches obvious user jailbreaks but not instructions hidden in tool results — which is
exactly what a per-category scorecard exposes."""
import json
import re
import sys

text = sys.argv[1]
if re.search(r"(?i)ignore (all )?previous instructions", text) and not text.startswith("TOOL RESULT:"):
    verdict = {"detected": True, "action": "block"}
elif re.search(r"(?i)api[_ ]key|password", text):
    verdict = {"detected": True, "action": "redact"}
else:
    verdict = {"detected": False, "action": "allow"}
print(json.dumps(verdict))
