# Runs one promptfoo `python` assertion as promptfoo 0.123.1 runs it (src/python/wrapper.py,
# src/assertions/python.ts): an inline one as the module promptfoo writes (`def main(output,
# context):` around it), a file's `get_assert` or named function. evalgate's `promptfoo`
# grader starts it with `python3 -c` and reads the one JSON line it writes on stdout:
# {"value": result} or {"threw": message}. What the script prints goes to stderr, so it
# cannot forge that line. stdin: {code | file, function, output, context}; for a `file://x.py`
# `options.transform`, {transform_file, function, output, context}, answered {"transformed": text}.
#
# With an argument it is a `file://x.py` / `python:` script provider instead
# (src/providers/pythonCompletion.ts, src/python/persistent_wrapper.py): argv[1] is
# {file, function, options}, stdin the prompt; `call_api(prompt, options, context)` (or the
# named function, `Class.method` too) answers with a dict holding `output` or `error`. The
# answer goes to $EVALGATE_TRACE as evalgate's command agents report one: `output` as
# promptfoo's assertions see it (its JSON.stringify of what is not a string), `usage`, or
# `no_answer` ("No output"); an `error`, a raise or another answer is an error (stderr, exit 1).
import asyncio
import importlib.util
import inspect
import json
import os
import sys
import types

reply = sys.stdout
sys.stdout = sys.stderr


def load(path):
    """The user's module, as promptfoo's wrapper loads it (its directory on sys.path)."""
    script_dir = os.path.dirname(os.path.abspath(path))
    if script_dir not in sys.path:
        sys.path.insert(0, script_dir)
    spec = importlib.util.spec_from_file_location(os.path.basename(path).rsplit(".", 1)[0], path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def named(module, name):
    """`NAME` or `Class.method` in the module."""
    if "." in name:
        class_name, method_name = name.split(".", 1)
        return getattr(getattr(module, class_name), method_name)
    return getattr(module, name)


def call(method, args):
    if inspect.iscoroutinefunction(method):
        return asyncio.run(method(*args))
    return method(*args)


def js_value(value):
    """A JSON value as node holds it once parsed: an integral float is a whole number."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    if isinstance(value, list):
        return [js_value(v) for v in value]
    if isinstance(value, dict):
        return {k: js_value(v) for k, v in value.items()}
    return value


def provider_trace(req, prompt):
    """The provider's answer as a command agent's trace (see the top of this file)."""
    method = named(load(req["file"]), req.get("function") or "call_api")
    # promptfoo's worker sends the answer to node as JSON: what is not JSON is an error.
    # promptfoo adds the config's directory (the agent's working directory) as `basePath`.
    options = dict(req["options"], config=dict(req["options"]["config"], basePath=os.getcwd()))
    result = js_value(json.loads(json.dumps(call(method, [prompt, options, {}]))))
    if not isinstance(result, dict) or ("output" not in result and "error" not in result):
        raise TypeError(f"The Python script `{req.get('function') or 'call_api'}` function must return a dict with an own `output` string/object or `error` string, instead got: {json.dumps(result)}")
    if result.get("error"):
        error = result["error"]
        raise RuntimeError(error if isinstance(error, str) else json.dumps(error))
    output = result.get("output")
    if output is None:
        return {"no_answer": "No output"}
    if not isinstance(output, str):
        output = json.dumps(output, ensure_ascii=False, separators=(",", ":"))
    usage = result.get("tokenUsage") if isinstance(result.get("tokenUsage"), dict) else {}
    count = lambda n: n if isinstance(n, int) and not isinstance(n, bool) and 0 <= n < 2**53 else None
    cost = result.get("cost")
    cost = cost if isinstance(cost, (int, float)) and not isinstance(cost, bool) and 0 <= cost < float("inf") else None
    trace_usage = {"input_tokens": count(usage.get("prompt")), "output_tokens": count(usage.get("completion")), "cost_usd": cost}
    return {"output": output, "usage": {k: v for k, v in trace_usage.items() if v is not None}}


def run(req):
    args = [req["output"], req["context"]]
    if "code" in req:
        module = types.ModuleType("script")
        module.__file__ = "script.py"
        exec(compile(req["code"], "script.py", "exec"), module.__dict__)
        method = getattr(module, "main")
    else:
        method = named(load(req["file"]), req.get("function") or "get_assert")
    return call(method, args)


if len(sys.argv) > 1:
    try:
        trace = provider_trace(json.loads(sys.argv[1]), sys.stdin.buffer.read().decode("utf-8", "replace"))
        with open(os.environ["EVALGATE_TRACE"], "w", encoding="utf-8") as f:
            json.dump(trace, f, ensure_ascii=False)
    except BaseException as err:  # noqa: BLE001 - every failure is the provider's error
        sys.stderr.write(f"{type(err).__name__}: {err}\n")
        sys.stderr.flush()
        os._exit(1)
    sys.stderr.flush()
    os._exit(0)

def transform(req):
    """A `file://x.py` `options.transform` (promptfoo's `get_transform`): its result as text,
    as node's `JSON.stringify` writes what is not a string; nothing returned is an error."""
    method = named(load(req["transform_file"]), req.get("function") or "get_transform")
    result = js_value(json.loads(json.dumps(call(method, [req["output"], req["context"]]))))
    if result is None:
        raise ValueError("Transform function did not return a value")
    if isinstance(result, str):
        return result
    return json.dumps(result, ensure_ascii=False, separators=(",", ":"))


try:
    req = json.load(sys.stdin)
    if "transform_file" in req:
        text = json.dumps({"transformed": transform(req)}, ensure_ascii=False)
    else:
        text = json.dumps({"value": run(req)}, ensure_ascii=False, allow_nan=False)
except BaseException as err:  # noqa: BLE001 - every failure is promptfoo's "execution failed"
    text = json.dumps({"threw": f"{type(err).__name__}: {err}"})
reply.write(text + "\n")
reply.flush()
