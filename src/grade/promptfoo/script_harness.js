// Runs one promptfoo `javascript` assertion as promptfoo 0.123.1 runs it
// (src/assertions/javascript.ts, src/esm.ts; buildFunctionBody and
// findLastStatementSemicolon are promptfoo's, MIT). evalgate's `promptfoo` grader starts it
// with `node -e` and reads the one JSON line it writes on stdout: {"kind", "value"} (the
// function's result, `typeof` and value) or {"threw": message}. Whatever the script prints
// goes to stderr, so it cannot forge that line. stdin: {code | file, function, output, context}.
"use strict";
const { pathToFileURL } = require("node:url");
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

async function run(req) {
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

let input = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (d) => (input += d));
process.stdin.on("end", async () => {
  let out;
  try {
    const req = JSON.parse(input);
    const result = await run(req);
    out = typeof req.transform === "string" || typeof req.transformResponse === "string" ? result : { kind: result === null ? "null" : typeof result, value: typeof result === "number" ? String(result) : result };
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
