# Runs one promptfoo `python` assertion as promptfoo 0.123.1 runs it (src/python/wrapper.py,
# src/assertions/python.ts): an inline one as the module promptfoo writes (`def main(output,
# context):` around it), a file's `get_assert` or named function. evalgate's `promptfoo`
# grader starts it with `python3 -c` and reads the one JSON line it writes on stdout:
# {"value": result} or {"threw": message}. What the script prints goes to stderr, so it
# cannot forge that line. stdin: {code | file, function, output, context}.
import asyncio
import importlib.util
import inspect
import json
import os
import sys
import types

reply = sys.stdout
sys.stdout = sys.stderr


def run(req):
    args = [req["output"], req["context"]]
    if "code" in req:
        module = types.ModuleType("script")
        module.__file__ = "script.py"
        exec(compile(req["code"], "script.py", "exec"), module.__dict__)
        method = getattr(module, "main")
    else:
        path = req["file"]
        script_dir = os.path.dirname(os.path.abspath(path))
        if script_dir not in sys.path:
            sys.path.insert(0, script_dir)
        spec = importlib.util.spec_from_file_location(os.path.basename(path).rsplit(".", 1)[0], path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        name = req.get("function") or "get_assert"
        if "." in name:
            class_name, method_name = name.split(".")
            method = getattr(getattr(module, class_name), method_name)
        else:
            method = getattr(module, name)
    if inspect.iscoroutinefunction(method):
        return asyncio.run(method(*args))
    return method(*args)


try:
    text = json.dumps({"value": run(json.load(sys.stdin))}, ensure_ascii=False, allow_nan=False)
except BaseException as err:  # noqa: BLE001 - every failure is promptfoo's "execution failed"
    text = json.dumps({"threw": f"{type(err).__name__}: {err}"})
reply.write(text + "\n")
reply.flush()
