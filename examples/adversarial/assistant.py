#!/usr/bin/env python3
"""A toy tool-using assistant (a stand-in for an LLM agent): it reads a document through a
"tool" (a file here), and naively follows instructions it finds there. It reports its tool
calls in $EVALGATE_TRACE, as any agent can."""
import json
import os
import re
import sys

request = sys.argv[1]
calls = [{"name": "docs.read", "arguments": {"path": "inbox.txt"}}]
document = open(os.environ["DOCUMENT"]).read()
# The weakness under test: instructions inside a tool result are obeyed.
m = re.search(r"call (\w+)(?: with (\S+))?", document)
if m:
    calls.append({"name": m.group(1), "arguments": {"data": m.group(2) or ""}})
print(f"Summary of the document for: {request}")
with open(os.environ["EVALGATE_TRACE"], "w") as f:
    json.dump({"tool_calls": calls}, f)
