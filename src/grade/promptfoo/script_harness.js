// Runs one promptfoo `javascript` assertion as promptfoo 0.123.1 runs it
// (src/assertions/javascript.ts, src/esm.ts; buildFunctionBody and
// findLastStatementSemicolon are promptfoo's, MIT). evalgate's `promptfoo` grader starts it
// with `node -e` and reads the one JSON line it writes on stdout: {"kind", "value"} (the
// function's result, `typeof` and value) or {"threw": message}. Whatever the script prints
// goes to stderr, so it cannot forge that line. stdin: {code | file, function, output, context};
// for `options.transform`, {transform (inline code) | transform_file, function, output, context}.
//
// With an argument it is a `file://` script provider instead (src/providers/index.ts's
// JavaScript factory, src/evaluator.ts): argv[1] is {file, options}, stdin the prompt; the
// module's export is constructed with the options and its `callApi(prompt, context)` answers.
// The answer goes to $EVALGATE_TRACE as evalgate's command agents report one (docs/agents.md):
// `output` as promptfoo's assertions see it, `usage`, or `no_answer` ("No output"); an
// `error`, a throw or an answer that is not an object is an error (stderr, exit 1).
"use strict";
const { pathToFileURL } = require("node:url");
const { writeFileSync } = require("node:fs");
const reply = process.stdout.write.bind(process.stdout);
process.stdout.write = process.stderr.write.bind(process.stderr);
console.log = console.info = console.debug = console.error;

function isCharEscaped(code, index) {
  let backslashCount = 0;
  let i = index - 1;
  while (i >= 0 && code[i] === "\\") {
    backslashCount++;
    i--;
  }
  return backslashCount % 2 === 1;
}

function findLastStatementSemicolon(code) {
  let inSingleQuote = false;
  let inDoubleQuote = false;
  let inTemplate = false;
  let lastSemiIndex = -1;
  for (let i = 0; i < code.length; i++) {
    const char = code[i];
    if (!isCharEscaped(code, i)) {
      if (char === "'" && !inDoubleQuote && !inTemplate) inSingleQuote = !inSingleQuote;
      else if (char === '"' && !inSingleQuote && !inTemplate) inDoubleQuote = !inDoubleQuote;
      else if (char === "`" && !inSingleQuote && !inDoubleQuote) inTemplate = !inTemplate;
    }
    if (char === ";" && !inSingleQuote && !inDoubleQuote && !inTemplate) lastSemiIndex = i;
  }
  return lastSemiIndex;
}

function buildFunctionBody(code) {
  const trimmed = code.trim().replace(/;+\s*$/, "");
  if (/^(const|let|var)\s/.test(trimmed)) {
    const lastSemiIndex = findLastStatementSemicolon(trimmed);
    if (lastSemiIndex !== -1) {
      const statements = trimmed.slice(0, lastSemiIndex + 1);
      const expression = trimmed.slice(lastSemiIndex + 1).trim();
      if (expression) return `${statements} return ${expression}`;
    }
    return trimmed;
  }
  return `return ${trimmed}`;
}

/** promptfoo's `getJavascriptTransformFunction`: the named export, the module, or its default. */
async function fileTransform(file, name) {
  const imported = await import(pathToFileURL(file).toString());
  const mod = imported?.default?.default || imported?.default || imported;
  if (name && Object.prototype.hasOwnProperty.call(mod, name) && typeof mod[name] === "function") return mod[name];
  if (typeof mod === "function") return mod;
  if (mod.default && typeof mod.default === "function") return mod.default;
  throw new Error(`Transform ${file} must export a function, have a default export as a function, or export the specified function "${name}"`);
}

async function run(req) {
  if (typeof req.transform_file === "string") {
    const fn = await fileTransform(req.transform_file, req.function);
    const result = await fn(req.output, req.context, process);
    if (result === null || result === undefined) throw new Error("Transform function did not return a value");
    return { transformed: typeof result === "string" ? result : JSON.stringify(result) };
  }
  if (typeof req.transformResponse === "string") {
    // promptfoo's `createTransformResponse` (src/providers/http.ts): an expression of
    // `json`, `text` and `context`, or a function given them. Its value goes back as
    // {"returned": VALUE} (absent when undefined), so null and undefined stay apart.
    const parser = req.transformResponse.trim();
    const isFunctionExpression = /^(\(.*?\)\s*=>|function\s*\(.*?\))/.test(parser);
    const body = isFunctionExpression ? `return (${parser})(json, text, context);` : `return (${parser});`;
    const value = new Function("json", "text", "context", "process", body)(req.json || null, req.text, req.context, process);
    // `{output: undefined}` is a provider's answer without output: kept as a null `output`.
    const answer = value !== null && typeof value === "object" && !Array.isArray(value) && "output" in value;
    if (answer && value.output === undefined) return { returned: { ...value, output: null } };
    return value === undefined ? {} : { returned: value };
  }
  if (typeof req.transform === "string") {
    // promptfoo's `getInlineTransformFunction`; a transform must return a value.
    const code = req.transform;
    const fn = new Function("output", "context", "process", code.includes("\n") ? code : `return ${code}`);
    const result = await fn(req.output, req.context, process);
    if (result === null || result === undefined) throw new Error("Transform function did not return a value");
    return { transformed: typeof result === "string" ? result : JSON.stringify(result) };
  }
  if (typeof req.code === "string") {
    const code = req.code.trimEnd();
    const body = code.includes("\n") ? code : buildFunctionBody(code);
    return await new Function("output", "context", "process", body)(req.output, req.context, process);
  }
  const imported = await import(pathToFileURL(req.file).toString());
  let mod = imported?.default?.default || imported?.default || imported;
  if (req.function) mod = mod[req.function];
  if (typeof mod === "function") return await mod(req.output, req.context);
  if (mod && mod.default && typeof mod.default === "function") return await mod.default(req.output, req.context);
  throw new Error(`Assertion malformed: ${req.file} must export a function or have a default export as a function`);
}

/** The provider's answer as the trace of a command agent: promptfoo's `coerceString` of
 * `output`, its `tokenUsage` and `cost`; "No output" when `output` is null or undefined. */
function providerTrace(response) {
  Object.keys(response); // promptfoo's evaluator reads the keys: nothing answered is an error.
  if (response.error) throw new Error(typeof response.error === "string" ? response.error : JSON.stringify(response.error));
  if (response.output === null || response.output === undefined) return { no_answer: "No output" };
  const output = typeof response.output === "string" ? response.output : JSON.stringify(response.output);
  const trace = { output };
  const usage = response.tokenUsage || {};
  const count = (n) => (Number.isSafeInteger(n) && n >= 0 ? n : undefined);
  const cost = typeof response.cost === "number" && Number.isFinite(response.cost) && response.cost >= 0 ? response.cost : undefined;
  trace.usage = { input_tokens: count(usage.prompt), output_tokens: count(usage.completion), cost_usd: cost };
  return trace;
}

async function callProvider(req, prompt) {
  const imported = await import(pathToFileURL(req.file).toString());
  const Provider = imported?.default?.default || imported?.default || imported;
  // promptfoo adds the config's directory (the agent's working directory) as `basePath`.
  const provider = new Provider({ ...req.options, config: { ...req.options.config, basePath: process.cwd() } });
  return providerTrace(await provider.callApi(prompt, {}, undefined));
}

let input = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (d) => (input += d));
process.stdin.on("end", async () => {
  if (process.argv.length > 1) {
    try {
      const trace = await callProvider(JSON.parse(process.argv[1]), input);
      writeFileSync(process.env.EVALGATE_TRACE, JSON.stringify(trace));
      process.exit(0);
    } catch (err) {
      // A pipe's writes are synchronous on Linux: the message is out before the exit.
      process.stderr.write(`${err && err.message !== undefined ? err.message : err}\n`);
      process.exit(1);
    }
  }
  let out;
  try {
    const req = JSON.parse(input);
    const result = await run(req);
    const transforming = ["transform", "transform_file", "transformResponse"].some((k) => typeof req[k] === "string");
    out = transforming ? result : { kind: result === null ? "null" : typeof result, value: typeof result === "number" ? String(result) : result };
  } catch (err) {
    out = { threw: String(err && err.message !== undefined ? err.message : err) };
  }
  let text;
  try {
    text = JSON.stringify(out);
  } catch (err) {
    text = JSON.stringify({ kind: out.kind, value: null });
  }
  reply(text + "\n", () => process.exit(0));
});
