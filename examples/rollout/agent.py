#!/usr/bin/env python3
"""The agent under test: reads an instruction such as "Deploy nginx:1.27 with 3 replicas
named web in namespace ns-1 at http://127.0.0.1:PORT" and calls the API.
With --sloppy it gets the image wrong (a regression the eval must catch)."""
import json
import re
import sys
import urllib.request

sloppy = "--sloppy" in sys.argv
prompt = sys.argv[-1]
m = re.search(r"Deploy (\S+) with (\d+) replicas named (\S+) in namespace (\S+) at (\S+)", prompt)
if not m:
    print("I did not understand the request.")
    sys.exit(0)
image, replicas, name, namespace, base = m.groups()
if sloppy:
    image = image.split(":")[0] + ":latest"
body = json.dumps({"name": name, "image": image, "replicas": int(replicas)}).encode()
request = urllib.request.Request(f"{base}/namespaces/{namespace}/deployments", data=body, method="POST",
                                 headers={"content-type": "application/json"})
with urllib.request.urlopen(request) as response:
    created = json.load(response)["created"]
print(f"deployment {created} created in {namespace} with {replicas} replicas of {image}")
