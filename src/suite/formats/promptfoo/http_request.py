# promptfoo 0.123.1's `http` provider, run by evalgate as a command agent: argv[1] the
# request as the config wrote it (url, method, headers, body, transform), argv[2] the
# prompt. Only `{{prompt}}` and `{{env.NAME}}` are in its templates (the converter
# refuses any other). An answer without output is reported as `no_answer` in the trace
# (the test fails, as promptfoo fails it). The answer is capped and the request timed out; what is printed on
# an error never holds a header or the body sent (credentials stay out of the output).
import json, os, re, sys, urllib.error, urllib.request

CAP = 16 * 1024 * 1024
spec, prompt = json.loads(sys.argv[1]), sys.argv[2]
TAG = re.compile(r"\{\{\s*(prompt|env\.([A-Za-z_][A-Za-z0-9_]*))\s*\}\}")


def fail(message):
    sys.stderr.write(message + "\n")
    sys.exit(1)


def render(text):
    return TAG.sub(lambda m: prompt if m.group(1) == "prompt" else os.environ.get(m.group(2), ""), text)


def nested(value):
    # processJsonBody: strings rendered; one that then reads as a JSON object or list is it.
    if isinstance(value, str):
        text = render(value)
        if text.strip().startswith(("{", "[")):
            try:
                parsed = json.loads(text)
                if isinstance(parsed, (dict, list)):
                    return parsed
            except ValueError:
                pass
        return text
    if isinstance(value, list):
        return [nested(v) for v in value]
    if isinstance(value, dict):
        return {k: nested(v) for k, v in value.items()}
    return value


method, body = spec["method"], spec.get("body")
headers = {}
if method != "GET":
    if isinstance(body, (dict, list)):
        headers["content-type"] = "application/json"
    elif isinstance(body, str):
        headers["content-type"] = "application/x-www-form-urlencoded"
headers.update({k.lower(): v for k, v in spec.get("headers", {}).items()})
headers = {k: render(v) for k, v in headers.items()}
is_json = any(k.startswith("content-type") and "application/json" in v for k, v in headers.items())
if is_json:
    if isinstance(body, str):
        try:
            body = json.loads(body)
        except ValueError:
            pass
    if isinstance(body, (dict, list)):
        body = nested(body)
    elif isinstance(body, str):
        text = render(body)
        try:
            body = json.loads(text)
        except ValueError:
            body = text
elif body is not None:
    if not isinstance(body, str):
        fail("the http provider's body is an object, but its Content-Type is not application/json")
    body = render(body)
data = None
if method != "GET" and body is not None:
    data = body if isinstance(body, str) else json.dumps(body, ensure_ascii=False, separators=(",", ":"))
    data = data.encode("utf-8")
request = urllib.request.Request(render(spec["url"]), data=data, method=method, headers=headers)
try:
    with urllib.request.urlopen(request, timeout=spec["timeout"]) as response:
        raw = response.read(CAP + 1)
except urllib.error.HTTPError as error:
    # promptfoo reads the answer of any status, but stops the eval at one of these.
    if error.code in (401, 403, 404, 501):
        fail(f"the http provider's endpoint answered HTTP {error.code} (promptfoo stops the eval at it)")
    raw = error.read(CAP + 1)
except Exception as error:  # the URL only: a header or the body may hold a credential
    fail(f"the http provider's request failed: {type(error).__name__}")
if len(raw) > CAP:
    fail(f"the http provider's answer is over {CAP} bytes")
text = raw.decode("utf-8", "replace")
try:
    parsed = json.loads(text)
except ValueError:
    parsed = None

UNDEFINED = object()


def step(value, key):
    if value is None or value is UNDEFINED:
        fail(f"the transformResponse `{spec['transform_text']}` reads a member of nothing")
    if isinstance(value, dict):
        return value.get(key, UNDEFINED)
    if isinstance(value, (list, str)):
        if key == "length":
            return len(value)
        if key.isdigit() and int(key) < len(value):
            return value[int(key)]
    return UNDEFINED


def js_text(value):
    # The output as promptfoo's assertions read it: a string as it is, else as JavaScript prints it.
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, (int, float)):
        return repr(value)
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


if spec.get("transform") is None:
    # `data || text`: the JSON unless it is falsy.
    output = parsed if parsed not in (None, False, 0, "") else text
else:
    root, keys = spec["transform"]
    output = parsed if root == "json" else text
    for key in keys:
        output = step(output, key)
if output is UNDEFINED or output is None:
    # promptfoo fails such a test ("No output") whatever its assertions: a graded failure.
    with open(os.environ["EVALGATE_TRACE"], "w") as trace:
        json.dump({"no_answer": f"the transformResponse `{spec['transform_text']}` found nothing in the answer (promptfoo: No output)"}, trace)
    sys.exit(0)
sys.stdout.write(js_text(output))
