#!/usr/bin/env python3
"""A local stand-in for a Kubernetes-style API: namespaces, deployments that become ready
after a few polls, and pods with a restart count. Usage: standin.py PORT"""
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

STATE = {"namespaces": {}, "next": 1}


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def reply(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def body(self):
        length = int(self.headers.get("content-length") or 0)
        return json.loads(self.rfile.read(length) or b"{}")

    def do_GET(self):
        parts = self.path.strip("/").split("/")
        if parts == ["healthz"]:
            return self.reply(200, {"ok": True})
        if len(parts) == 4 and parts[0] == "namespaces" and parts[2] == "deployments":
            dep = STATE["namespaces"].get(parts[1], {}).get(parts[3])
            if dep is None:
                return self.reply(404, {"error": "no such deployment"})
            dep["polls"] += 1
            # Newer API shape: readiness as a condition, no readyReplicas field.
            available = "True" if dep["polls"] >= 3 else "False"
            return self.reply(200, {"spec": {"image": dep["image"], "replicas": dep["replicas"]},
                                    "status": {"conditions": [{"type": "Available", "status": available}]}})
        if len(parts) == 4 and parts[0] == "namespaces" and parts[2] == "pods":
            name = parts[3].rsplit("-", 1)[0]
            if STATE["namespaces"].get(parts[1], {}).get(name) is None:
                return self.reply(404, {"error": "no such pod"})
            return self.reply(200, {"name": parts[3], "restartCount": 0})
        self.reply(404, {"error": "not found"})

    def do_POST(self):
        parts = self.path.strip("/").split("/")
        if parts == ["namespaces"]:
            name = f"ns-{STATE['next']}"
            STATE["next"] += 1
            STATE["namespaces"][name] = {}
            return self.reply(201, {"name": name})
        if len(parts) == 3 and parts[0] == "namespaces" and parts[2] == "deployments":
            if parts[1] not in STATE["namespaces"]:
                return self.reply(404, {"error": "no such namespace"})
            spec = self.body()
            STATE["namespaces"][parts[1]][spec["name"]] = {
                "image": spec["image"], "replicas": spec["replicas"], "polls": 0}
            return self.reply(201, {"created": spec["name"]})
        self.reply(404, {"error": "not found"})

    def do_DELETE(self):
        parts = self.path.strip("/").split("/")
        if len(parts) == 2 and parts[0] == "namespaces" and STATE["namespaces"].pop(parts[1], None) is not None:
            return self.reply(200, {"deleted": parts[1]})
        self.reply(404, {"error": "not found"})


ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
