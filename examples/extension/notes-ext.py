#!/usr/bin/env python3
"""A minimal evalgate / mcpchecker extension (protocol 0.0.1): notes kept in files of the
task's directory. Read it with docs/extensions.md; the protocol is all there is to it."""
import json
import os
import sys

OPERATIONS = {
    "add": {
        "description": "Write a note",
        "params": {"type": "object", "properties": {"name": {"type": "string"}, "text": {"type": "string"}},
                   "required": ["name", "text"], "additionalProperties": False},
    },
    "has": {
        "description": "Pass when the note exists and holds `text`",
        "params": {"type": "object", "properties": {"name": {"type": "string"}, "text": {"type": "string"}},
                   "required": ["name"], "additionalProperties": False},
    },
}


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")  # one message a line, on stdout only
    sys.stdout.flush()


def execute(operation, args, context):
    path = os.path.join(context["workdir"], args["name"] + ".note")
    if operation == "add":
        with open(path, "w") as f:
            f.write(args["text"])
        send({"jsonrpc": "2.0", "method": "log", "params": {"level": "info", "message": "wrote " + path}})
        return {"success": True, "message": "added " + args["name"], "outputs": {"path": path}}
    if not os.path.exists(path):
        return {"success": False, "error": "no note " + args["name"]}
    text = open(path).read()
    if args.get("text", "") not in text:
        return {"success": False, "error": "note %s holds %r" % (args["name"], text)}
    return {"success": True, "message": "note " + args["name"] + " is there", "outputs": {"text": text}}


for line in sys.stdin:
    request = json.loads(line)
    method, params = request["method"], request.get("params") or {}
    if method == "initialize":
        result = {"name": "notes", "version": "1.0.0", "protocolVersion": "0.0.1", "operations": OPERATIONS}
    elif method == "execute":
        result = execute(params["operation"], params.get("args") or {}, params["context"])
    elif method == "shutdown":
        send({"jsonrpc": "2.0", "id": request["id"], "result": {}})
        break
    else:
        send({"jsonrpc": "2.0", "id": request["id"], "error": {"code": -32601, "message": "unknown method " + method}})
        continue
    send({"jsonrpc": "2.0", "id": request["id"], "result": result})
