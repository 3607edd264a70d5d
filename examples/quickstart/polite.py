#!/usr/bin/env python3
"""A code grader: reads the run's context as JSON on stdin, prints a verdict as JSON."""
import json
import sys

context = json.load(sys.stdin)
output = context["output"]
assertions = [
    {"text": "answer is not empty", "passed": bool(output.strip())},
    {"text": "answer does not shout", "passed": not output.isupper()},
    {"text": "answer is short (under 200 characters)", "passed": len(output) < 200},
]
print(json.dumps({"assertions": assertions}))
