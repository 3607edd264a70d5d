//! mcpchecker (formerly gevals): `kind: Task` files (`v1alpha1`, `v1alpha2` and the portable
//! `mcp-eval/v1` proposal) and `kind: Eval` files with their task sets and assertions, as a
//! native suite. Where mcpchecker and evalgate differ, the choice is in docs/formats.md.
//!
//! - Steps: scripts → `run` steps (a file through its shebang, in its own directory), `http`
//!   → `http`, `<server>.<tool>` → `mcp`, portable `command` / `file` / `foreach` / `anyOf` /
//!   `group` → their native twins; in `verify` each becomes a grader (`steps`, or `llm` for
//!   `llmJudge`, or `command` for a portable `protocol: json` script).
//! - Templates: `{random.*}`, `{env.X}`, `${X}`, `{agent.output}`, `{agent.prompt}` and step
//!   outputs map onto native variables; text mcpchecker does not template is made literal.
//! - Assertions of an eval's task set → tool graders on the task.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use regex::Regex;
use serde_json::{Map, Value, json};

use super::{ConvertCx, Converted, Origin, Problems, literal, task_id};

/// mcpchecker's default time limit of a script step.
const SCRIPT_TIMEOUT: &str = "5m";

/// The native suite of a task file or an eval file.
pub fn convert(doc: &Value, cx: &ConvertCx) -> Result<Converted, Problems> {
    if doc["kind"] == "Eval" {
        return eval(doc, cx);
    }
    let agent = cx.agent.unwrap_or("agent");
    let (mut task, needs) = task(doc, cx.file, &cx.rel_dir)?;
    task["agent"] = json!(agent);
    if cx.agent.is_none() || cx.model_agent {
        // A model agent works with the MCP tools, as mcpchecker's agents do.
        task["level"] = json!("scenario");
    }
    let mut suite = json!({"evalgate": 1, "suite": "mcpchecker"});
    if cx.agent.is_none() {
        // On its own (`evalgate convert`): placeholders to point at the real servers and model.
        let servers: Map<String, Value> =
            needs.servers.iter().map(|s| (s.clone(), json!({"command": [format!("./{s}-server.sh")]}))).collect();
        suite["mcp_servers"] = Value::Object(servers);
        suite["agents"] = json!({"agent": {"provider": "openai", "model": "gpt-4o-mini", "mcp": needs.servers}});
        if needs.judge {
            suite["judge"] = json!({"provider": "openai", "model": "gpt-4o-mini"});
        }
    }
    if !needs.commands.is_empty() {
        suite["env"] = json!({"required_commands": needs.commands});
    }
    suite["tasks"] = json!([task]);
    Ok(Converted { suite, origins: vec![Origin { file: cx.file.to_owned(), at: "metadata.name".into() }] })
}

/// What a converted task needs from its suite.
#[derive(Default)]
struct Needs {
    servers: Vec<String>,
    commands: Vec<String>,
    judge: bool,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Version {
    V1Alpha1,
    V1Alpha2,
    /// The portable task format proposal, `mcp-eval/v1`.
    Portable,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Phase {
    Setup,
    Verify,
    Cleanup,
}

enum Alias {
    Server(String),
    Extension(String),
}

/// One task file being converted.
struct TaskCx<'a> {
    file: &'a Path,
    /// The task's directory relative to the suite's.
    rel_dir: &'a Path,
    version: Version,
    name: String,
    aliases: HashMap<String, Alias>,
    /// v1alpha2 outputs are found by step type: the native id of the last MCP setup step of each.
    outputs_by_type: HashMap<String, String>,
    /// Portable `spec.env`, as native templates.
    env: Vec<(String, String)>,
    /// Foreach variables in reach.
    locals: Vec<String>,
    judge: bool,
    problems: Problems,
}

/// The native task of one mcpchecker task file (without `agent`).
fn task(doc: &Value, file: &Path, rel_dir: &Path) -> Result<(Value, Needs), Problems> {
    let version = match doc.get("apiVersion").and_then(Value::as_str) {
        None | Some("" | "mcpchecker/v1alpha1") => Version::V1Alpha1,
        Some("mcpchecker/v1alpha2") => Version::V1Alpha2,
        Some("mcp-eval/v1") => Version::Portable,
        Some(other) => {
            let hint = if other.starts_with("gevals/") { " (gevals was renamed: use mcpchecker/…)" } else { "" };
            return Err(vec![(
                "/apiVersion".into(),
                format!(
                    "unknown apiVersion `{other}`{hint}; expected mcpchecker/v1alpha1, mcpchecker/v1alpha2 or mcp-eval/v1"
                ),
            )]);
        }
    };
    if doc["kind"] != "Task" {
        return Err(vec![("/kind".into(), "expected `Task`".into())]);
    }
    let Some(name) = doc.pointer("/metadata/name").and_then(Value::as_str) else {
        return Err(vec![("/metadata/name".into(), "a task needs `metadata.name`".into())]);
    };
    let mut cx = TaskCx {
        file,
        rel_dir,
        version,
        name: name.to_owned(),
        aliases: HashMap::new(),
        outputs_by_type: HashMap::new(),
        env: Vec::new(),
        locals: Vec::new(),
        judge: false,
        problems: Vec::new(),
    };
    // v1alpha1 is v1alpha2 with one script (or judge) per phase, as mcpchecker translates it.
    let spec = match version {
        Version::V1Alpha1 => match doc.get("steps") {
            Some(steps) => v1alpha1_spec(steps),
            None => return Err(vec![("/steps".into(), "a v1alpha1 task needs `steps`".into())]),
        },
        _ => match doc.get("spec") {
            Some(spec) => spec.clone(),
            None => return Err(vec![("/spec".into(), "a task needs `spec`".into())]),
        },
    };
    let base = if version == Version::V1Alpha1 { "/steps" } else { "/spec" };
    let mut needs = Needs::default();
    for (i, r) in spec.get("requires").and_then(Value::as_array).into_iter().flatten().enumerate() {
        let at = format!("{base}/requires/{i}");
        let alias = |name: &str| r.get("as").and_then(Value::as_str).unwrap_or(name).to_owned();
        if let Some(server) = r.get("mcpServer").and_then(Value::as_str) {
            cx.aliases.insert(alias(server), Alias::Server(server.to_owned()));
            needs.servers.push(server.to_owned());
        } else if let Some(ext) = r.get("extension").and_then(Value::as_str) {
            cx.aliases.insert(alias(ext), Alias::Extension(ext.to_owned()));
        } else if let Some(command) = r.get("command").and_then(Value::as_str) {
            needs.commands.push(command.to_owned());
        } else {
            cx.problems.push((at, "expected `mcpServer`, `extension` or `command`".into()));
        }
    }
    for (i, import) in spec.get("imports").and_then(Value::as_array).into_iter().flatten().enumerate() {
        let package = import.get("package").and_then(Value::as_str).unwrap_or_default();
        match import.get("as").and_then(Value::as_str) {
            Some(alias) => cx.aliases.insert(alias.to_owned(), Alias::Extension(package.to_owned())),
            None => {
                cx.problems.push((format!("{base}/imports/{i}"), "an import needs `as`".into()));
                None
            }
        };
    }
    for (key, value) in spec.get("env").and_then(Value::as_object).into_iter().flatten() {
        let at = format!("{base}/env/{key}");
        let text = scalar(value);
        if let Some(t) = cx.template(&text, &at) {
            cx.env.push((key.clone(), t));
        }
    }

    let mut task = json!({"id": task_id(name)});
    let meta = &doc["metadata"];
    if let Some(d) = meta.get("description").and_then(Value::as_str) {
        task["description"] = json!(d);
    }
    let mut tags: Vec<String> = meta.get("tags").and_then(Value::as_array).into_iter().flatten().map(scalar).collect();
    if let Some(d) = meta.get("difficulty").and_then(Value::as_str) {
        tags.push(format!("difficulty={d}"));
    }
    for (k, v) in meta.get("labels").and_then(Value::as_object).into_iter().flatten() {
        tags.push(format!("{k}={}", scalar(v)));
    }
    if !tags.is_empty() {
        task["tags"] = json!(tags);
    }
    if let Some(runs) = meta.get("runs").and_then(Value::as_u64).filter(|&r| r > 1) {
        task["repeat"] = json!(runs);
    }
    let timeout = spec.pointer("/limits/timeout").or_else(|| meta.get("timeout"));
    if let Some(t) = timeout.and_then(Value::as_str) {
        task["timeout"] = json!(t);
    }

    // Setup first: its outputs are in reach of the prompt, verify and cleanup.
    let setup = cx.phase(&spec, base, "setup", Phase::Setup);
    if !setup.is_empty() {
        task["setup"] = json!(setup);
    }
    task["prompt"] = json!(cx.prompt(&spec, base));
    let mut grade = cx.phase(&spec, base, "verify", Phase::Verify);
    if grade.is_empty() {
        // Without verify steps mcpchecker passes a task whose agent ran.
        grade.push(json!({"type": "regex", "pattern": "(?s).*", "name": "the agent ran (no verify steps)"}));
    }
    task["grade"] = json!(grade);
    let mut cleanup = cx.phase(&spec, base, "cleanup", Phase::Cleanup);
    if version != Version::Portable {
        // mcpchecker runs cleanup in order; evalgate runs it last-first, so reverse it here.
        cleanup.reverse();
    }
    if !cleanup.is_empty() {
        task["cleanup"] = json!(cleanup);
    }
    needs.judge = cx.judge;
    if cx.problems.is_empty() { Ok((task, needs)) } else { Err(cx.problems) }
}

/// A v1alpha1 `steps` block in v1alpha2 shape.
fn v1alpha1_spec(steps: &Value) -> Value {
    let mut spec = json!({});
    for phase in ["setup", "verify", "cleanup"] {
        let Some(step) = steps.get(phase) else { continue };
        let judged = step.get("file").is_none() && step.get("inline").is_none();
        spec[phase] = if judged { json!([{"llmJudge": step}]) } else { json!([{"script": step}]) };
    }
    if let Some(prompt) = steps.get("prompt") {
        spec["prompt"] = prompt.clone();
    }
    spec
}

impl TaskCx<'_> {
    fn problem(&mut self, at: &str, message: impl Into<String>) {
        self.problems.push((at.to_owned(), message.into()));
    }

    fn phase(&mut self, spec: &Value, base: &str, key: &str, phase: Phase) -> Vec<Value> {
        let mut out = Vec::new();
        for (i, raw) in spec.get(key).and_then(Value::as_array).into_iter().flatten().enumerate() {
            let at = format!("{base}/{key}/{i}");
            if let Some(mut converted) = self.step(raw, &at, phase) {
                if phase == Phase::Verify && converted.get("type").is_none() {
                    converted = json!({"type": "steps", "steps": [converted]});
                }
                if phase == Phase::Verify && converted.get("name").is_none() {
                    converted["name"] = json!(format!("{key}[{i}] {}", step_type(raw).unwrap_or_default()));
                }
                out.push(converted);
            }
        }
        out
    }

    fn prompt(&mut self, spec: &Value, base: &str) -> String {
        let at = format!("{base}/prompt");
        let text = match spec.get("prompt") {
            Some(Value::String(s)) if self.version == Version::Portable => s.clone(),
            Some(p) if p.get("inline").is_some() => scalar(&p["inline"]),
            Some(p) if p.get("file").is_some() => {
                let path = self.file.parent().unwrap_or(Path::new("")).join(scalar(&p["file"]));
                match std::fs::read_to_string(&path) {
                    Ok(text) => text,
                    Err(e) => {
                        self.problem(&format!("{at}/file"), format!("cannot read {}: {e}", path.display()));
                        return String::new();
                    }
                }
            }
            _ => {
                self.problem(&at, "a task needs a prompt (`inline` or `file`)");
                return String::new();
            }
        };
        if self.version == Version::V1Alpha1 { literal(&text) } else { self.template(&text, &at).unwrap_or_default() }
    }

    /// A native step, or a grader when it can only be one (`llmJudge`, `protocol: json`).
    fn step(&mut self, raw: &Value, at: &str, phase: Phase) -> Option<Value> {
        let Some(kind) = step_type(raw) else {
            self.problem(at, "each step must have exactly one type");
            return None;
        };
        let body = &raw[kind.as_str()];
        let at = format!("{at}/{}", kind.replace('/', "~1"));
        // v1alpha2 keeps `id` beside the type; the portable format inside the body.
        let id = raw.get("id").or_else(|| body.get("id")).and_then(Value::as_str).map(task_id);
        let mut step = match kind.as_str() {
            "script" => self.script(body, &at, phase)?,
            "llmJudge" | "llm" => {
                if phase != Phase::Verify {
                    self.problem(&at, "an LLM judge can only verify");
                    return None;
                }
                self.judge = true;
                let mut grader = json!({"type": "llm"});
                for key in ["contains", "exact"] {
                    if let Some(text) = body.get(key) {
                        grader[key] = json!(self.template(&scalar(text), &format!("{at}/{key}"))?);
                    }
                }
                if (grader.get("contains").is_some()) == (grader.get("exact").is_some()) {
                    self.problem(&at, "set exactly one of `contains` and `exact`");
                    return None;
                }
                return Some(grader);
            }
            "http" => self.http(body, &at, phase)?,
            "command" if self.version == Version::Portable => self.command(body, &at)?,
            "file" if self.version == Version::Portable => self.file_step(body, &at)?,
            "foreach" if self.version == Version::Portable => {
                let var = body.get("var").and_then(Value::as_str).unwrap_or_default().to_owned();
                let items = match body.get("in") {
                    Some(Value::String(t)) => json!(self.template(t, &format!("{at}/in"))?),
                    Some(Value::Array(items)) => {
                        json!(items.iter().map(scalar).map(|s| literal(&s)).collect::<Vec<_>>())
                    }
                    _ => {
                        self.problem(&format!("{at}/in"), "expected a list or a template");
                        return None;
                    }
                };
                self.locals.push(var.clone());
                let steps = self.steps(body.get("steps"), &format!("{at}/steps"), phase);
                self.locals.pop();
                json!({"foreach": {"var": var, "in": items, "steps": steps?}})
            }
            "anyOf" if self.version == Version::Portable => {
                json!({"any_of": self.steps(Some(body), &at, phase)?})
            }
            "group" if self.version == Version::Portable => {
                let setup = self.steps(body.get("setup"), &format!("{at}/setup"), Phase::Setup);
                let steps = self.steps(body.get("steps"), &format!("{at}/steps"), phase);
                let cleanup = self.steps(body.get("cleanup"), &format!("{at}/cleanup"), Phase::Cleanup);
                json!({"group": {"setup": setup?, "steps": steps?, "cleanup": cleanup?}})
            }
            "extension" => {
                let package = body.get("package").and_then(Value::as_str).unwrap_or("?");
                self.problem(&at, format!("extensions are not supported: step `extension` runs `{package}`"));
                return None;
            }
            dotted if dotted.contains('.') => {
                let (alias, op) = dotted.split_once('.').expect("contains a dot");
                match self.aliases.get(alias) {
                    Some(Alias::Server(server)) => {
                        let server = server.clone();
                        self.mcp(body, &at, &server, op, dotted, phase)?
                    }
                    Some(Alias::Extension(ext)) => {
                        let message = format!("extensions are not supported: step `{dotted}` calls extension `{ext}`");
                        self.problem(&at, message);
                        return None;
                    }
                    None => {
                        let message =
                            format!("step `{dotted}`: `{alias}` is not in `requires` (an mcpServer or extension)");
                        self.problem(&at, message);
                        return None;
                    }
                }
            }
            other => {
                self.problem(&at, format!("unknown step type `{other}`"));
                return None;
            }
        };
        if step.get("type").is_some() {
            return Some(step);
        }
        if let Some(id) = id.filter(|_| step.get("id").is_none()) {
            step["id"] = json!(id);
        }
        if body.get("continueOnError").and_then(Value::as_bool) == Some(true) {
            step["continue_on_error"] = json!(true);
        }
        Some(step)
    }

    fn steps(&mut self, list: Option<&Value>, at: &str, phase: Phase) -> Option<Vec<Value>> {
        let before = self.problems.len();
        let mut out = Vec::new();
        for (i, raw) in list.and_then(Value::as_array).into_iter().flatten().enumerate() {
            let at = format!("{at}/{i}");
            match self.step(raw, &at, phase) {
                Some(s) if s.get("type").is_some() => {
                    self.problem(&at, "an LLM judge or `protocol: json` script cannot be nested in other steps")
                }
                Some(s) => out.push(s),
                None => {}
            }
        }
        (self.problems.len() == before).then_some(out)
    }

    /// A script: a file through its shebang, in its own directory; inline text through its
    /// shebang's interpreter (`-c`), else bash, in the task's directory.
    fn script(&mut self, body: &Value, at: &str, phase: Phase) -> Option<Value> {
        let task_dir = self.file.parent().unwrap_or(Path::new(""));
        let (argv, workdir) =
            match (body.get("file").and_then(Value::as_str), body.get("inline").and_then(Value::as_str)) {
                (Some(file), None) => {
                    let path = task_dir.join(file);
                    let text = match std::fs::read_to_string(&path) {
                        Ok(t) => t,
                        Err(e) => {
                            self.problem(&format!("{at}/file"), format!("cannot read {}: {e}", path.display()));
                            return None;
                        }
                    };
                    let name = Path::new(file).file_name().unwrap_or_default().to_string_lossy().into_owned();
                    let dir = Path::new(file).parent().unwrap_or(Path::new(""));
                    let mut argv = interpreter(&text).unwrap_or_else(|| vec!["sh".into()]);
                    argv.push(format!("./{name}"));
                    (argv, self.rel(dir))
                }
                (None, Some(inline)) => {
                    let mut argv = interpreter(inline).unwrap_or_else(|| vec!["bash".into()]);
                    argv.extend(["-c".to_owned(), inline.to_owned()]);
                    (argv, self.rel(Path::new("")))
                }
                _ => {
                    self.problem(at, "a script needs exactly one of `file` and `inline`");
                    return None;
                }
            };
        let argv: Vec<String> = argv.iter().map(|a| literal(a)).collect();
        if body.get("protocol").and_then(Value::as_str) == Some("json") {
            if phase != Phase::Verify {
                self.problem(&format!("{at}/protocol"), "a `protocol: json` script can only verify");
                return None;
            }
            // The code-grader protocol, in the script's directory as a step would be.
            let timeout = body.get("timeout").and_then(Value::as_str).unwrap_or(SCRIPT_TIMEOUT);
            let mut grader = json!({"type": "command", "run": argv, "workdir": workdir, "timeout": timeout});
            if let Some(env) = self.step_env(body, at) {
                grader["env"] = env;
            }
            return Some(grader);
        }
        let mut step = json!({"argv": argv, "workdir": workdir, "timeout": body.get("timeout").and_then(Value::as_str).unwrap_or(SCRIPT_TIMEOUT)});
        if let Some(env) = self.step_env(body, at) {
            step["env"] = env;
        }
        if body.get("outputs").is_some() {
            self.problem(&format!("{at}/outputs"), "script outputs are not supported; use a `command` step's outputs");
        }
        Some(step)
    }

    /// A portable `command` step.
    fn command(&mut self, body: &Value, at: &str) -> Option<Value> {
        let run = self.shell_template(&scalar(body.get("run")?), &format!("{at}/run"))?;
        let mut step = match body.get("shell").and_then(Value::as_str) {
            Some(shell) => json!({"argv": [literal(shell), "-c", run]}),
            None => json!({"run": run}),
        };
        let workdir = body.get("workdir").and_then(Value::as_str).unwrap_or("");
        step["workdir"] = json!(self.rel(Path::new(workdir)));
        if let Some(t) = body.get("timeout") {
            step["timeout"] = t.clone();
        }
        if let Some(env) = self.step_env(body, at) {
            step["env"] = env;
        }
        if let Some(expect) = body.get("expect") {
            let mut native = json!({});
            if let Some(code) = expect.get("exitCode") {
                native["exit_code"] = code.clone();
            }
            for stream in ["stdout", "stderr"] {
                if let Some(check) = expect.get(stream) {
                    native[stream] = self.text_checks(check, &format!("{at}/expect/{stream}"))?;
                }
            }
            step["expect"] = native;
        }
        self.outputs(body, at, &mut step, &[("{exitCode}", "{exit_code}")]);
        Some(step)
    }

    /// `{equals|contains|matches}`: equals and contains templated, the regex not.
    fn text_checks(&mut self, check: &Value, at: &str) -> Option<Value> {
        let mut out = json!({});
        for key in ["equals", "contains"] {
            if let Some(v) = check.get(key) {
                out[key] = json!(self.template(&scalar(v), &format!("{at}/{key}"))?);
            }
        }
        if let Some(m) = check.get("matches") {
            out["matches"] = m.clone();
        }
        Some(out)
    }

    fn file_step(&mut self, body: &Value, at: &str) -> Option<Value> {
        let path = self.template(&scalar(body.get("path")?), &format!("{at}/path"))?;
        let path =
            if path.starts_with(['/', '{']) { path } else { self.rel(Path::new(&path)).to_string_lossy().into_owned() };
        let mut file = json!({"path": path});
        if let Some(c) = body.get("content") {
            file["content"] = json!(self.template(&scalar(c), &format!("{at}/content"))?);
        }
        for key in ["mode", "absent"] {
            if let Some(v) = body.get(key) {
                file[key] = v.clone();
            }
        }
        if let Some(expect) = body.get("expect") {
            if expect.get("mode").is_some() {
                self.problem(&format!("{at}/expect/mode"), "checking a file's mode is not supported");
                return None;
            }
            let mut native = self.text_checks(expect, &format!("{at}/expect"))?;
            if let Some(e) = expect.get("exists") {
                native["exists"] = e.clone();
            }
            file["expect"] = native;
        }
        Some(json!({"file": file}))
    }

    fn http(&mut self, body: &Value, at: &str, phase: Phase) -> Option<Value> {
        let url = self.template(&scalar(body.get("url")?), &format!("{at}/url"))?;
        let mut http = json!({"url": url});
        if let Some(m) = body.get("method").and_then(Value::as_str).filter(|m| !m.is_empty()) {
            http["method"] = json!(self.template(m, &format!("{at}/method"))?);
        }
        if let Some(headers) = body.get("headers").and_then(Value::as_object) {
            let mut out = Map::new();
            for (k, v) in headers {
                out.insert(k.clone(), json!(self.template(&scalar(v), &format!("{at}/headers/{k}"))?));
            }
            http["headers"] = Value::Object(out);
        }
        match body.get("body") {
            None => {}
            Some(Value::String(text)) => http["body"] = json!(literal(text)),
            Some(b) if b.get("json").is_some() => http["json"] = literal_json(&b["json"]),
            Some(b) if b.get("raw").is_some() => http["body"] = json!(literal(&scalar(&b["raw"]))),
            Some(_) => {
                self.problem(&format!("{at}/body"), "expected `json` or `raw`");
                return None;
            }
        }
        if let Some(t) = body.get("timeout") {
            http["timeout"] = t.clone();
        }
        let mut step = json!({"http": http});
        if let Some(expect) = body.get("expect") {
            let mut native = json!({});
            if let Some(status) = expect.get("status").filter(|s| s.as_u64() != Some(0)) {
                native["status"] = status.clone();
            }
            if let Some(b) = expect.get("body") {
                native["body"] = self.content_checks(b, &format!("{at}/expect/body"))?;
            }
            step["http"]["expect"] = native;
            if phase == Phase::Setup && self.version == Version::V1Alpha2 {
                // mcpchecker records a failed expectation in setup without stopping the task.
                step["continue_on_error"] = json!(true);
            }
        }
        self.outputs(body, at, &mut step, &[]);
        Some(step)
    }

    /// `{match, fields: [{path, match|equals|type|exists}]}` (mcpchecker) or
    /// `{contains, matches, json: {path, equals}}` (portable) as native body checks.
    fn content_checks(&mut self, checks: &Value, at: &str) -> Option<Value> {
        let mut out = json!({});
        if let Some(c) = checks.get("contains") {
            out["contains"] = json!(self.template(&scalar(c), &format!("{at}/contains"))?);
        }
        if let Some(m) = checks.get("match").or_else(|| checks.get("matches")) {
            out["matches"] = m.clone();
        }
        let fields: Vec<&Value> = match (checks.get("fields"), checks.get("json")) {
            (Some(Value::Array(f)), _) => f.iter().collect(),
            (_, Some(j)) => vec![j],
            _ => Vec::new(),
        };
        let mut json_checks = Vec::new();
        for field in fields {
            let mut check = json!({});
            if let Some(p) = field.get("path") {
                check["path"] = p.clone();
            }
            if let Some(m) = field.get("match").or_else(|| field.get("matches")) {
                check["matches"] = m.clone();
            }
            for key in ["equals", "exists"] {
                if let Some(v) = field.get(key) {
                    check[key] = v.clone();
                }
            }
            if let Some(t) = field.get("type").and_then(Value::as_str) {
                check["type"] = json!(if t == "bool" { "boolean" } else { t });
            }
            json_checks.push(check);
        }
        if !json_checks.is_empty() {
            out["json"] = Value::Array(json_checks);
        }
        Some(out)
    }

    /// `<server>.<tool>`: `{args, expect: {isError, content}}`; in setup its result is the
    /// output `content`, found by step type as mcpchecker does.
    fn mcp(&mut self, body: &Value, at: &str, server: &str, tool: &str, kind: &str, phase: Phase) -> Option<Value> {
        let mut call =
            json!({"server": server, "tool": tool, "arguments": literal_json(body.get("args").unwrap_or(&json!({})))});
        if let Some(expect) = body.get("expect") {
            let mut native = json!({});
            if let Some(e) = expect.get("isError") {
                native["is_error"] = e.clone();
            }
            if let Some(c) = expect.get("content") {
                native["output"] = self.content_checks(c, &format!("{at}/expect/content"))?;
            }
            call["expect"] = native;
        }
        let mut step = json!({"mcp": call});
        if phase == Phase::Setup {
            let id = format!("{}-{}", task_id(server), self.outputs_by_type.len() + 1);
            self.outputs_by_type.insert(kind.to_owned(), id.clone());
            step["id"] = json!(id);
            step["outputs"] = json!({"content": "{response.body}"});
        }
        Some(step)
    }

    /// Portable `outputs: {NAME: "{stdout}"}`, with its spellings mapped to native ones.
    fn outputs(&mut self, body: &Value, at: &str, step: &mut Value, renames: &[(&str, &str)]) {
        let Some(outputs) = body.get("outputs").and_then(Value::as_object) else { return };
        if self.version != Version::Portable {
            return;
        }
        let mut out = Map::new();
        for (name, spec) in outputs {
            let spec = scalar(spec);
            let spec = renames.iter().find(|(from, _)| *from == spec).map_or(spec.clone(), |(_, to)| (*to).to_owned());
            out.insert(name.clone(), json!(spec));
        }
        if step.get("id").is_none() && body.get("id").is_none() {
            self.problem(&format!("{at}/outputs"), "a step with `outputs` needs an `id`");
        }
        step["outputs"] = Value::Object(out);
    }

    /// The step's `env` (templated) plus the portable `spec.env`.
    fn step_env(&mut self, body: &Value, at: &str) -> Option<Value> {
        let mut env: Map<String, Value> = self.env.iter().map(|(k, v)| (k.clone(), json!(v))).collect();
        for (k, v) in body.get("env").and_then(Value::as_object).into_iter().flatten() {
            if let Some(t) = self.template(&scalar(v), &format!("{at}/env/{k}")) {
                env.insert(k.clone(), json!(t));
            }
        }
        (!env.is_empty()).then_some(Value::Object(env))
    }

    /// `path` (relative to the task file) relative to the suite.
    fn rel(&self, path: &Path) -> PathBuf {
        let joined = if path.as_os_str().is_empty() { self.rel_dir.to_owned() } else { self.rel_dir.join(path) };
        if joined.as_os_str().is_empty() { PathBuf::from(".") } else { joined }
    }

    /// An mcpchecker template as a native one; `None` (with a problem) for a reference
    /// evalgate has no equivalent of.
    fn template(&mut self, text: &str, at: &str) -> Option<String> {
        self.render(text, at, false)
    }

    /// A shell command: as `template`, but `${X}` is left for the shell.
    fn shell_template(&mut self, text: &str, at: &str) -> Option<String> {
        self.render(text, at, true)
    }

    fn render(&mut self, text: &str, at: &str, shell: bool) -> Option<String> {
        static REF: LazyLock<Regex> = LazyLock::new(|| {
            Regex::new(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(:-[^}]*)?\}|\{([^{}]*)\}|[{}]").expect("valid regex")
        });
        let mut out = String::new();
        let mut last = 0;
        for caps in REF.captures_iter(text) {
            let whole = caps.get(0).expect("a match");
            out.push_str(&text[last..whole.start()]);
            last = whole.end();
            if let Some(var) = caps.get(1) {
                if shell {
                    out.push_str(&literal(whole.as_str()));
                    continue;
                }
                if caps.get(2).is_some() {
                    self.problem(at, format!("`{}`: defaults in `${{…}}` are not supported", whole.as_str()));
                    return None;
                }
                out.push_str(&format!("{{env.{}}}", var.as_str()));
                continue;
            }
            let Some(inner) = caps.get(3).map(|m| m.as_str()) else {
                self.problem(
                    at,
                    format!("a lone `{}` (mcpchecker templates have no escape for braces)", whole.as_str()),
                );
                return None;
            };
            let native = match inner.split_once('.') {
                Some(("random", "id" | "port")) | Some(("agent", "output")) => format!("{{{inner}}}"),
                Some(("agent", "prompt")) => "{prompt}".to_owned(),
                Some(("env", name)) => match self.env.iter().find(|(k, _)| k == name) {
                    Some((_, value)) => value.clone(),
                    None => format!("{{env.{name}}}"),
                },
                Some(("task", "name")) if self.version == Version::Portable => literal(&self.name),
                Some(("steps", rest)) if self.version == Version::Portable => format!("{{steps.{rest}}}"),
                Some(("steps", rest)) => {
                    let found = rest.rsplit_once('.').and_then(|(kind, key)| {
                        self.outputs_by_type.get(kind).map(|id| format!("{{steps.{id}.outputs.{key}}}"))
                    });
                    match found {
                        Some(reference) => reference,
                        None => {
                            let message = format!(
                                "`{{{inner}}}` refers to no earlier MCP tool step in setup (only those have outputs here)"
                            );
                            self.problem(at, message);
                            return None;
                        }
                    }
                }
                None if self.locals.iter().any(|l| l == inner) => format!("{{{inner}}}"),
                _ => {
                    self.problem(at, format!("unknown reference `{{{inner}}}`"));
                    return None;
                }
            };
            out.push_str(&native);
        }
        out.push_str(&text[last..]);
        Some(out)
    }
}

/// The one type key of a step map (besides `id`).
fn step_type(raw: &Value) -> Option<String> {
    let keys: Vec<&String> = raw.as_object()?.keys().filter(|k| *k != "id").collect();
    match keys.as_slice() {
        [one] => Some((*one).clone()),
        _ => None,
    }
}

/// The interpreter a shebang line names, as argv.
fn interpreter(script: &str) -> Option<Vec<String>> {
    let line = script.strip_prefix("#!")?.lines().next()?;
    let argv: Vec<String> = line.split_whitespace().map(str::to_owned).collect();
    (!argv.is_empty()).then_some(argv)
}

/// A JSON value whose strings are literal text in a native template.
fn literal_json(value: &Value) -> Value {
    match value {
        Value::String(s) => json!(literal(s)),
        Value::Array(items) => Value::Array(items.iter().map(literal_json).collect()),
        Value::Object(map) => Value::Object(map.iter().map(|(k, v)| (k.clone(), literal_json(v))).collect()),
        other => other.clone(),
    }
}

fn scalar(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// An eval file: its agent, MCP servers and judge, and the tasks its task sets select, each
/// with the set's assertions as graders.
fn eval(doc: &Value, cx: &ConvertCx) -> Result<Converted, Problems> {
    let dir = cx.file.parent().unwrap_or(Path::new("")).to_owned();
    let config = &doc["config"];
    let mut problems = Problems::new();
    let name = doc.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("mcpchecker");
    let mut suite = json!({"evalgate": 1, "suite": task_id(name)});

    let servers = match config.get("mcpConfigFile").and_then(Value::as_str) {
        Some(file) => mcp_servers(&dir.join(file), &mut problems),
        None => Map::new(),
    };
    let server_names: Vec<String> = servers.keys().cloned().collect();
    if !servers.is_empty() {
        suite["mcp_servers"] = Value::Object(servers);
    }
    let mut model_agent = cx.model_agent;
    let agent = match cx.agent {
        Some(a) => a.to_owned(),
        None => {
            match config.get("agent") {
                Some(r) => {
                    if let Some(mut a) = agent_ref(r, &dir, "/config/agent", &mut problems) {
                        // Command agents reach the servers through recording proxies too.
                        a["mcp"] = json!(server_names);
                        model_agent = a.get("provider").is_some();
                        suite["agents"] = json!({"agent": a});
                    }
                }
                None => problems.push(("/config/agent".into(), "an eval needs `config.agent`".into())),
            }
            "agent".to_owned()
        }
    };
    if let Some(judge) = config.get("llmJudge") {
        match judge.get("ref") {
            Some(r) => {
                if let Some(j) = agent_ref(r, &dir, "/config/llmJudge/ref", &mut problems) {
                    if j.get("provider").is_none() {
                        problems.push(("/config/llmJudge/ref".into(), "the judge must be a `builtin.llm-agent`".into()));
                    }
                    suite["judge"] = j;
                }
            }
            None => problems.push((
                "/config/llmJudge".into(),
                "the judge's `env` form is deprecated and not supported; use `ref: {type: builtin.llm-agent, model: provider:model}`".into(),
            )),
        }
    }
    if let Some(t) = config.pointer("/defaultTaskLimits/timeout") {
        suite["defaults"] = json!({"timeout": t});
    }

    let mut tasks: Vec<Value> = Vec::new();
    let mut origins = Vec::new();
    let mut index: HashMap<PathBuf, usize> = HashMap::new();
    let mut commands: Vec<String> = Vec::new();
    for (i, set) in config.get("taskSets").and_then(Value::as_array).into_iter().flatten().enumerate() {
        let at = format!("/config/taskSets/{i}");
        if set.get("source").is_some() {
            problems.push((
                format!("{at}/source"),
                "remote task sources are not supported; check the tasks out and use `glob`".into(),
            ));
            continue;
        }
        let Some(pattern) = set.get("glob").or_else(|| set.get("path")).and_then(Value::as_str) else {
            problems.push((at, "a task set needs `glob` or `path`".into()));
            continue;
        };
        let files = match super::glob_files(&dir, pattern) {
            Ok(files) if !files.is_empty() => files,
            Ok(_) => {
                problems.push((at, format!("no file matches `{pattern}`")));
                continue;
            }
            Err(e) => {
                problems.push((at, e));
                continue;
            }
        };
        let graders = match set.get("assertions") {
            Some(a) => assertions(a, &format!("{at}/assertions"), &mut problems),
            None => Vec::new(),
        };
        for file in files {
            let shown = file.strip_prefix(&dir).unwrap_or(&file).display().to_string();
            let doc = match std::fs::read_to_string(&file)
                .map_err(|e| e.to_string())
                .and_then(|t| serde_yaml::from_str::<Value>(&t).map_err(|e| e.to_string()))
            {
                Ok(doc) => doc,
                Err(e) => {
                    problems.push((at.clone(), format!("{shown}: {e}")));
                    continue;
                }
            };
            // mcpchecker skips files of another kind quietly.
            if doc["kind"] != "Task" || !selected(&doc, set.get("labelSelector")) {
                continue;
            }
            let key = std::fs::canonicalize(&file).unwrap_or(file.clone());
            let n = match index.get(&key) {
                Some(&n) => n,
                None => {
                    let task_dir = file.parent().and_then(|d| d.strip_prefix(&dir).ok()).unwrap_or(Path::new(""));
                    match task(&doc, &file, &cx.rel_dir.join(task_dir)) {
                        Ok((mut t, needs)) => {
                            t["agent"] = json!(agent);
                            if model_agent {
                                t["level"] = json!("scenario");
                            }
                            commands.extend(needs.commands);
                            index.insert(key, tasks.len());
                            tasks.push(t);
                            origins.push(Origin { file: file.clone(), at: "metadata.name".into() });
                            tasks.len() - 1
                        }
                        Err(task_problems) => {
                            problems.extend(task_problems.into_iter().map(|(p, m)| (p, format!("{shown}: {m}"))));
                            continue;
                        }
                    }
                }
            };
            if let Some(grade) = tasks[n]["grade"].as_array_mut() {
                grade.extend(graders.iter().cloned());
            }
        }
    }
    if tasks.is_empty() && problems.is_empty() {
        problems.push(("/config/taskSets".into(), "the task sets select no task".into()));
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    commands.sort();
    commands.dedup();
    if !commands.is_empty() {
        suite["env"] = json!({"required_commands": commands});
    }
    suite["tasks"] = Value::Array(tasks);
    Ok(Converted { suite, origins })
}

/// Whether a task's `metadata.labels` has every `key: value` of the selector.
fn selected(task: &Value, selector: Option<&Value>) -> bool {
    selector
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .all(|(k, v)| task.pointer(&format!("/metadata/labels/{k}")) == Some(v))
}

/// An `AgentRef` `{type, model, path}` as a native agent (or judge).
fn agent_ref(r: &Value, dir: &Path, at: &str, problems: &mut Problems) -> Option<Value> {
    match r.get("type").and_then(Value::as_str) {
        Some("builtin.llm-agent") => llm(r.get("model"), &format!("{at}/model"), problems),
        Some("builtin.claude-code") => {
            problems.push((
                at.into(),
                "`builtin.claude-code` (an ACP agent) is not supported; use an agent file with `commands`".into(),
            ));
            None
        }
        Some("file") => {
            let path = dir.join(r.get("path").and_then(Value::as_str).unwrap_or_default());
            let file = match std::fs::read_to_string(&path)
                .map_err(|e| e.to_string())
                .and_then(|t| serde_yaml::from_str::<Value>(&t).map_err(|e| e.to_string()))
            {
                Ok(f) => f,
                Err(e) => {
                    problems
                        .push((format!("{at}/path"), format!("cannot read the agent file {}: {e}", path.display())));
                    return None;
                }
            };
            agent_file(&file, &format!("{}", path.display()), problems)
        }
        other => {
            problems.push((format!("{at}/type"), format!("unknown agent type `{}`", other.unwrap_or_default())));
            None
        }
    }
}

/// `provider:model` as a native model agent.
fn llm(model: Option<&Value>, at: &str, problems: &mut Problems) -> Option<Value> {
    match model.and_then(Value::as_str).and_then(|m| m.split_once(':')) {
        Some((provider @ ("openai" | "anthropic"), model)) => Some(json!({"provider": provider, "model": model})),
        Some((provider, _)) => {
            problems.push((at.into(), format!("provider `{provider}` is not supported (openai, anthropic)")));
            None
        }
        None => {
            problems.push((at.into(), "expected `provider:model`, e.g. `openai:gpt-4o`".into()));
            None
        }
    }
}

/// A `kind: Agent` file: a built-in LLM agent, or `commands.runPrompt` as a command agent.
fn agent_file(file: &Value, shown: &str, problems: &mut Problems) -> Option<Value> {
    if file.get("acp").is_some() {
        problems.push(("/acp".into(), format!("{shown}: ACP agents are not supported; use `commands`")));
        return None;
    }
    if let Some(b) = file.get("builtin") {
        return match b.get("type").and_then(Value::as_str) {
            Some("llm-agent" | "openai-agent") => llm(b.get("model"), "/builtin/model", problems),
            other => {
                problems.push((
                    "/builtin/type".into(),
                    format!("{shown}: built-in agent `{}` is not supported", other.unwrap_or_default()),
                ));
                None
            }
        };
    }
    let commands = &file["commands"];
    let Some(run) = commands.get("runPrompt").and_then(Value::as_str) else {
        problems.push(("/commands/runPrompt".into(), format!("{shown}: the agent needs `commands.runPrompt`")));
        return None;
    };
    // The prompt and the MCP config file reach the script as "$1" and "$2", quoted.
    static ACTION: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\{\{-?\s*(.*?)\s*-?\}\}").expect("valid regex"));
    let server_arg = commands.get("argTemplateMcpServer").and_then(Value::as_str).unwrap_or("{{ .File }}");
    let mut bad = Vec::new();
    let render = |text: &str, bad: &mut Vec<String>| {
        ACTION
            .replace_all(text, |c: &regex::Captures| match &c[1] {
                ".Prompt" | r#"printf "%q" .Prompt"# => "\"$1\"".to_owned(),
                ".File" => "\"$2\"".to_owned(),
                other => {
                    bad.push(other.to_owned());
                    String::new()
                }
            })
            .into_owned()
    };
    let servers = render(server_arg, &mut bad);
    let script = run.replace("{{ .McpServerFileArgs }}", &servers);
    let script = render(&script, &mut bad);
    if !bad.is_empty() {
        let message = format!(
            "{shown}: `commands.runPrompt` uses {}; evalgate supplies `.Prompt` and `.McpServerFileArgs` (one MCP config file for all servers)",
            bad.iter().map(|b| format!("`{{{{ {b} }}}}`")).collect::<Vec<_>>().join(", ")
        );
        problems.push(("/commands/runPrompt".into(), message));
        return None;
    }
    Some(json!({"command": ["bash", "-c", literal(&script), "agent", "{prompt}", "{mcp_config}"], "timeout": "10m"}))
}

/// The `mcpServers` of an MCP config file (JSON or YAML) as native `mcp_servers`.
fn mcp_servers(path: &Path, problems: &mut Problems) -> Map<String, Value> {
    let at = "/config/mcpConfigFile".to_owned();
    let doc = match std::fs::read_to_string(path)
        .map_err(|e| e.to_string())
        .and_then(|t| serde_yaml::from_str::<Value>(&t).map_err(|e| e.to_string()))
    {
        Ok(d) => d,
        Err(e) => {
            problems.push((at, format!("cannot read {}: {e}", path.display())));
            return Map::new();
        }
    };
    let env_ref = |text: &str| -> Result<String, String> {
        static VAR: LazyLock<Regex> =
            LazyLock::new(|| Regex::new(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(:-[^}]*)?\}").expect("valid regex"));
        if VAR.captures_iter(text).any(|c| c.get(2).is_some()) {
            return Err(format!("`{text}`: defaults in `${{…}}` are not supported"));
        }
        Ok(VAR.replace_all(&literal(text), "{env.$1}").into_owned())
    };
    let mut out = Map::new();
    for (name, s) in doc.get("mcpServers").and_then(Value::as_object).into_iter().flatten() {
        if s.get("disabled").and_then(Value::as_bool) == Some(true) {
            continue;
        }
        let at = format!("{at} {}: mcpServers.{name}", path.display());
        let mut server = json!({});
        if let Some(url) = s.get("url").and_then(Value::as_str) {
            match env_ref(url) {
                Ok(u) => server["url"] = json!(u),
                Err(e) => problems.push((at.clone(), e)),
            }
            let mut headers = Map::new();
            for (k, v) in s.get("headers").and_then(Value::as_object).into_iter().flatten() {
                match env_ref(&scalar(v)) {
                    Ok(h) => {
                        headers.insert(k.clone(), json!(h));
                    }
                    Err(e) => problems.push((at.clone(), e)),
                }
            }
            if !headers.is_empty() {
                server["headers"] = Value::Object(headers);
            }
        } else if let Some(command) = s.get("command").and_then(Value::as_str) {
            let mut argv = vec![json!(literal(command))];
            argv.extend(
                s.get("args").and_then(Value::as_array).into_iter().flatten().map(|a| json!(literal(&scalar(a)))),
            );
            server["command"] = Value::Array(argv);
            let env: Map<String, Value> = s
                .get("env")
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
                .map(|(k, v)| (k.clone(), json!(literal(&scalar(v)))))
                .collect();
            if !env.is_empty() {
                server["env"] = Value::Object(env);
            }
        } else {
            problems.push((at, "a server needs `command` (stdio) or `url` (http)".into()));
            continue;
        }
        out.insert(name.clone(), server);
    }
    out
}

/// A task set's assertions as tool graders.
fn assertions(a: &Value, at: &str, problems: &mut Problems) -> Vec<Value> {
    let selector = |s: &Value| {
        let mut out = json!({});
        selector_into(s, &mut out);
        out
    };
    fn selector_into(s: &Value, out: &mut Value) {
        for (from, to) in [("server", "server"), ("tool", "tool"), ("toolPattern", "pattern")] {
            if let Some(v) = s.get(from) {
                out[to] = v.clone();
            }
        }
    }
    let list = |key: &str| a.get(key).and_then(Value::as_array).cloned().unwrap_or_default();
    let mut graders = Vec::new();
    for s in list("toolsUsed") {
        let mut g = json!({"type": "tool_called", "name": "toolsUsed"});
        selector_into(&s, &mut g);
        graders.push(g);
    }
    if a.get("requireAny").is_some() {
        let tools: Vec<Value> = list("requireAny").iter().map(selector).collect();
        graders.push(json!({"type": "tool_calls", "name": "requireAny", "tools": tools, "min": 1}));
    }
    for s in list("toolsNotUsed") {
        let mut g = json!({"type": "tool_not_called", "name": "toolsNotUsed"});
        selector_into(&s, &mut g);
        graders.push(g);
    }
    for (key, bound) in [("minToolCalls", "min"), ("maxToolCalls", "max")] {
        if let Some(n) = a.get(key) {
            graders.push(json!({"type": "tool_calls", "name": key, bound: n}));
        }
    }
    if a.get("callOrder").is_some() {
        let mut tools = Vec::new();
        for (i, c) in list("callOrder").iter().enumerate() {
            if c.get("type").and_then(Value::as_str).unwrap_or("tool") != "tool" {
                problems.push((
                    format!("{at}/callOrder/{i}/type"),
                    "only tool calls are recorded; resource and prompt order cannot be checked".into(),
                ));
                continue;
            }
            tools.push(json!({"server": c["server"], "tool": c["name"]}));
        }
        graders.push(json!({"type": "tool_sequence", "name": "callOrder", "tools": tools}));
    }
    if a.get("noDuplicateCalls").and_then(Value::as_bool) == Some(true) {
        graders.push(json!({"type": "tool_calls", "name": "noDuplicateCalls", "unique": true}));
    }
    for key in ["resourcesRead", "resourcesNotRead", "promptsUsed", "promptsNotUsed", "skillsLoaded", "skillsNotLoaded"]
    {
        if a.get(key).is_some() {
            problems
                .push((format!("{at}/{key}"), format!("`{key}` is not supported: evalgate records tool calls only")));
        }
    }
    graders
}
