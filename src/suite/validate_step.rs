//! Raw steps → validated steps; also the `http` and `file` checks graders share.

use std::collections::BTreeSet;

use regex::Regex;
use serde_json::Value;

use super::model::{RunExpect, TextCheck};
use super::raw_step::{
    OutputStream, RawBodyExpect, RawFileExpect, RawForeachItems, RawHttp, RawJsonChecks, RawJsonExpect, RawMcpCall,
    RawOutput, RawStep, RawTextExpect,
};
use super::step::{
    Action, ContentCheck, DEFAULT_HTTP_TIMEOUT, FileAction, FileExpect, FileOp, ForeachAction, ForeachItems,
    GroupAction, HttpBody, HttpExpect, HttpRequest, JsonExpect, JsonTemplate, McpAction, OutputSpec, RunAction, Step,
    WaitAction,
};
use crate::json::JsonPath;
use crate::json::PathExpect;
use crate::source::ValidateCx;
use crate::template::CommandLine;
use crate::template::Scope;

const ACTIONS: &str = "`run`, `argv`, `http`, `file`, `wait`, `foreach`, `any_of` or `group`";

/// Validates a list of steps in order; each step's id and outputs come into reach of the
/// steps after it (and, through `cx.step_outputs`, of whatever the caller validates next).
pub fn steps(cx: &mut ValidateCx, raw: &[RawStep], path: &str, scope: Scope) -> Option<Vec<Step>> {
    let steps: Vec<Option<Step>> =
        raw.iter().enumerate().map(|(i, s)| step(cx, s, &format!("{path}[{i}]"), scope)).collect();
    steps.into_iter().collect()
}

pub fn step(cx: &mut ValidateCx, raw: &RawStep, path: &str, scope: Scope) -> Option<Step> {
    let present: Vec<&str> = [
        ("run", raw.run.is_some()),
        ("argv", raw.argv.is_some()),
        ("http", raw.http.is_some()),
        ("mcp", raw.mcp.is_some()),
        ("file", raw.file.is_some()),
        ("wait", raw.wait.is_some()),
        ("foreach", raw.foreach.is_some()),
        ("any_of", raw.any_of.is_some()),
        ("group", raw.group.is_some()),
    ]
    .into_iter()
    .filter_map(|(k, set)| set.then_some(k))
    .collect();
    if present.len() != 1 {
        let message = if present.is_empty() {
            format!("the step has nothing to do: add one of {ACTIONS}")
        } else {
            format!("a step does one thing, but this one has {}", present.join(" and "))
        };
        cx.error(path, message);
        return None;
    }
    let is_run = raw.run.is_some() || raw.argv.is_some();
    for (key, set) in
        [("env", !raw.env.is_empty()), ("workdir", raw.workdir.is_some()), ("expect", raw.expect.is_some())]
    {
        if set && !is_run {
            let hint = if key == "expect" { format!("; put it inside `{}`", present[0]) } else { String::new() };
            cx.error(&format!("{path}.{key}"), format!("`{key}` belongs to `run` steps{hint}"));
        }
    }
    if let Some(id) = &raw.id
        && cx.step_outputs.contains_key(id)
    {
        cx.error(&format!("{path}.id"), format!("duplicate step id `{id}`"));
    }
    let action = match () {
        () if is_run => run_action(cx, raw, path, scope).map(Action::Run),
        () if raw.http.is_some() => {
            http_request(cx, raw.http.as_ref().expect("checked"), &format!("{path}.http"), scope).map(Action::Http)
        }
        () if raw.mcp.is_some() => {
            mcp_action(cx, raw.mcp.as_ref().expect("checked"), &format!("{path}.mcp"), scope).map(Action::Mcp)
        }
        () if raw.file.is_some() => file_action(cx, raw, &format!("{path}.file"), scope).map(Action::File),
        () if raw.wait.is_some() => {
            let w = raw.wait.as_ref().expect("checked");
            let inner = step(cx, &w.step, &format!("{path}.wait.step"), scope);
            let interval = w.interval.map_or(std::time::Duration::from_secs(1), |d| d.0);
            inner.map(|step| {
                Action::Wait(Box::new(WaitAction {
                    step,
                    interval,
                    timeout: w.timeout.0,
                    stable_for: w.stable_for.map(|d| d.0),
                }))
            })
        }
        () if raw.foreach.is_some() => foreach(cx, raw, path, scope),
        () if raw.any_of.is_some() => {
            let branches = raw.any_of.as_ref().expect("checked");
            if branches.is_empty() {
                cx.error(&format!("{path}.any_of"), "`any_of` needs at least one step");
                None
            } else {
                steps(cx, branches, &format!("{path}.any_of"), scope).map(Action::AnyOf)
            }
        }
        () => {
            let g = raw.group.as_ref().expect("checked");
            let setup = steps(cx, &g.setup, &format!("{path}.group.setup"), scope);
            let main = steps(cx, &g.steps, &format!("{path}.group.steps"), scope);
            let cleanup = steps(cx, &g.cleanup, &format!("{path}.group.cleanup"), scope);
            Some(Action::Group(Box::new(GroupAction { setup: setup?, steps: main?, cleanup: cleanup? })))
        }
    };
    let outputs = outputs(cx, raw, path, present[0]);
    if let Some(id) = &raw.id {
        let names: BTreeSet<String> = outputs.iter().flatten().map(|(n, _)| n.clone()).collect();
        cx.step_outputs.insert(id.clone(), names);
    }
    Some(Step {
        id: raw.id.clone(),
        continue_on_error: raw.continue_on_error,
        preflight: raw.preflight,
        timeout: raw.timeout.map(|d| d.0),
        outputs: outputs?,
        action: action?,
    })
}

fn run_action(cx: &mut ValidateCx, raw: &RawStep, path: &str, scope: Scope) -> Option<RunAction> {
    let command = match (&raw.run, &raw.argv) {
        (Some(run), _) => cx.template(run, scope, &format!("{path}.run")).map(CommandLine::Shell),
        (None, Some(argv)) if argv.is_empty() => {
            cx.error(&format!("{path}.argv"), "argv is empty");
            None
        }
        (None, Some(argv)) => cx.templates(argv, scope, &format!("{path}.argv")).map(CommandLine::Argv),
        (None, None) => unreachable!("run steps have run or argv"),
    };
    let env = cx.env_templates(&raw.env, scope, &format!("{path}.env"));
    let expect = match &raw.expect {
        None => Some(RunExpect { exit_code: 0, stdout: Vec::new(), stderr: Vec::new() }),
        Some(e) => {
            let stdout = text_checks(cx, e.stdout.as_ref(), &format!("{path}.expect.stdout"));
            let stderr = text_checks(cx, e.stderr.as_ref(), &format!("{path}.expect.stderr"));
            Some(RunExpect { exit_code: e.exit_code.unwrap_or(0), stdout: stdout?, stderr: stderr? })
        }
    };
    Some(RunAction {
        command: command?,
        env,
        workdir: raw.workdir.as_ref().map_or_else(|| cx.dir.clone(), |w| cx.resolve_path(w)),
        expect: expect?,
    })
}

fn text_checks(cx: &mut ValidateCx, raw: Option<&RawTextExpect>, path: &str) -> Option<Vec<TextCheck>> {
    let Some(raw) = raw else { return Some(Vec::new()) };
    let mut checks = Vec::new();
    if let Some(v) = &raw.equals {
        checks.push(TextCheck::Equals(v.clone()));
    }
    if let Some(v) = &raw.contains {
        checks.push(TextCheck::Contains(v.clone()));
    }
    if let Some(p) = &raw.matches {
        checks.push(TextCheck::Matches(regex(cx, p, &format!("{path}.matches"))?));
    }
    Some(checks)
}

pub fn http_request(cx: &mut ValidateCx, raw: &RawHttp, path: &str, scope: Scope) -> Option<HttpRequest> {
    let url = cx.template(&raw.url, scope, &format!("{path}.url"));
    let method = raw.method.clone().unwrap_or_else(|| "GET".into()).to_ascii_uppercase();
    if !["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"].contains(&method.as_str()) {
        cx.error(&format!("{path}.method"), format!("unknown HTTP method `{method}`"));
    }
    let headers = cx.env_templates(&raw.headers, scope, &format!("{path}.headers"));
    let body = match (&raw.body, &raw.json) {
        (Some(_), Some(_)) => {
            cx.error(path, "set either `body` or `json`, not both");
            None
        }
        (Some(text), None) => Some(cx.template(text, scope, &format!("{path}.body")).map(HttpBody::Text)),
        (None, Some(json)) => Some(json_template(cx, json, scope, &format!("{path}.json")).map(HttpBody::Json)),
        (None, None) => None,
    };
    let expect = match &raw.expect {
        None => Some(HttpExpect::default()),
        Some(e) => {
            if let Some(status) = e.status
                && !(100..=599).contains(&status)
            {
                cx.error(&format!("{path}.expect.status"), format!("{status} is not an HTTP status"));
            }
            content_checks(cx, e.body.as_ref(), &format!("{path}.expect.body"), scope)
                .map(|body| HttpExpect { status: e.status, body })
        }
    };
    let body = match body {
        Some(b) => Some(b?),
        None => None,
    };
    Some(HttpRequest {
        url: url?,
        method,
        headers,
        body,
        timeout: raw.timeout.map_or(DEFAULT_HTTP_TIMEOUT, |d| d.0),
        expect: expect?,
    })
}

fn json_template(cx: &mut ValidateCx, value: &Value, scope: Scope, path: &str) -> Option<JsonTemplate> {
    match value {
        Value::String(s) => cx.template(s, scope, path).map(JsonTemplate::String),
        Value::Array(items) => {
            let items: Vec<Option<JsonTemplate>> =
                items.iter().enumerate().map(|(i, v)| json_template(cx, v, scope, &format!("{path}[{i}]"))).collect();
            items.into_iter().collect::<Option<Vec<_>>>().map(JsonTemplate::Array)
        }
        Value::Object(map) => {
            let fields: Vec<Option<(String, JsonTemplate)>> = map
                .iter()
                .map(|(k, v)| json_template(cx, v, scope, &format!("{path}.{k}")).map(|t| (k.clone(), t)))
                .collect();
            fields.into_iter().collect::<Option<Vec<_>>>().map(JsonTemplate::Object)
        }
        other => Some(JsonTemplate::Literal(other.clone())),
    }
}

fn content_checks(
    cx: &mut ValidateCx,
    raw: Option<&RawBodyExpect>,
    path: &str,
    scope: Scope,
) -> Option<Vec<ContentCheck>> {
    let Some(raw) = raw else { return Some(Vec::new()) };
    content(
        cx,
        raw.contains.as_ref(),
        raw.matches.as_ref(),
        raw.json.as_ref().map(RawJsonChecks::as_slice),
        path,
        scope,
    )
}

fn content(
    cx: &mut ValidateCx,
    contains: Option<&String>,
    matches: Option<&String>,
    json: Option<&[RawJsonExpect]>,
    path: &str,
    scope: Scope,
) -> Option<Vec<ContentCheck>> {
    let mut checks = Vec::new();
    let mut ok = true;
    if let Some(c) = contains {
        match cx.template(c, scope, &format!("{path}.contains")) {
            Some(t) => checks.push(ContentCheck::Contains(t)),
            None => ok = false,
        }
    }
    if let Some(m) = matches {
        match regex(cx, m, &format!("{path}.matches")) {
            Some(re) => checks.push(ContentCheck::Matches(re)),
            None => ok = false,
        }
    }
    let json = json.unwrap_or_default();
    for (i, j) in json.iter().enumerate() {
        let at = if json.len() == 1 { format!("{path}.json") } else { format!("{path}.json[{i}]") };
        match json_expect(cx, j, &at) {
            Some(e) => checks.push(ContentCheck::Json(e)),
            None => ok = false,
        }
    }
    ok.then_some(checks)
}

pub fn mcp_action(cx: &mut ValidateCx, raw: &RawMcpCall, path: &str, scope: Scope) -> Option<McpAction> {
    if !cx.mcp_servers.contains(&raw.server) {
        let names: Vec<&str> = cx.mcp_servers.iter().map(String::as_str).collect();
        let help = match crate::suite::did_you_mean(&raw.server, names.iter().copied()) {
            Some(s) => format!("did you mean `{s}`?"),
            None if names.is_empty() => "the suite defines no `mcp_servers`".into(),
            None => format!("servers: {}", names.join(", ")),
        };
        cx.error(&format!("{path}.server"), format!("unknown MCP server `{}`", raw.server)).help = Some(help);
    }
    let arguments = json_template(cx, &Value::Object(raw.arguments.clone()), scope, &format!("{path}.arguments"));
    let output = match raw.expect.as_ref().and_then(|e| e.output.as_ref()) {
        Some(o) => content(
            cx,
            o.contains.as_ref(),
            o.matches.as_ref(),
            o.json.as_ref().map(RawJsonChecks::as_slice),
            &format!("{path}.expect.output"),
            scope,
        ),
        None => Some(Vec::new()),
    };
    Some(McpAction {
        server: raw.server.clone(),
        tool: raw.tool.clone(),
        arguments: arguments?,
        is_error: raw.expect.as_ref().and_then(|e| e.is_error).unwrap_or(false),
        output: output?,
    })
}

pub fn json_expect(cx: &mut ValidateCx, raw: &RawJsonExpect, path: &str) -> Option<JsonExpect> {
    let json_path = match &raw.path {
        None => None,
        Some(p) => match JsonPath::parse(p) {
            Ok(p) => Some(p),
            Err(e) => {
                cx.error(&format!("{path}.path"), e);
                return None;
            }
        },
    };
    let expect = match (&raw.equals, &raw.matches, raw.exists, raw.kind) {
        (Some(v), None, None, None) => PathExpect::Equals(v.clone()),
        (None, Some(m), None, None) => PathExpect::Matches(regex(cx, m, &format!("{path}.matches"))?),
        (None, None, Some(e), None) => PathExpect::Exists(e),
        (None, None, None, Some(k)) => PathExpect::Kind(k),
        (None, None, None, None) => PathExpect::Exists(true),
        _ => {
            cx.error(path, "use one of `equals`, `matches`, `exists` or `type`");
            return None;
        }
    };
    Some(JsonExpect { path: json_path, expect })
}

fn file_action(cx: &mut ValidateCx, raw: &RawStep, path: &str, scope: Scope) -> Option<FileAction> {
    let f = raw.file.as_ref().expect("checked");
    let file_path = cx.template(&f.path, scope, &format!("{path}.path"));
    let op = match (&f.content, f.absent, &f.expect) {
        (Some(content), false, None) => {
            let mode = match &f.mode {
                None => Some(None),
                Some(m) => match u32::from_str_radix(m.trim_start_matches("0o"), 8) {
                    Ok(bits) if bits <= 0o7777 => Some(Some(bits)),
                    _ => {
                        cx.error(&format!("{path}.mode"), format!("invalid mode `{m}`: use octal such as \"0644\""));
                        None
                    }
                },
            };
            let content = cx.template(content, scope, &format!("{path}.content"));
            Some(FileOp::Create { content: content?, mode: mode? })
        }
        (None, true, None) => Some(FileOp::Remove),
        (None, false, Some(e)) => file_expect(cx, e, &format!("{path}.expect"), scope).map(FileOp::Check),
        _ => {
            cx.error(path, "a `file` step does one of: `content` (create), `absent: true` (remove), `expect` (check)");
            None
        }
    };
    if f.mode.is_some() && f.content.is_none() {
        cx.error(&format!("{path}.mode"), "`mode` applies to a file created with `content`");
    }
    Some(FileAction { path: file_path?, op: op? })
}

pub fn file_expect(cx: &mut ValidateCx, raw: &RawFileExpect, path: &str, scope: Scope) -> Option<FileExpect> {
    let exists = raw.exists.unwrap_or(true);
    let content = content(
        cx,
        raw.contains.as_ref(),
        raw.matches.as_ref(),
        raw.json.as_ref().map(RawJsonChecks::as_slice),
        path,
        scope,
    )?;
    if !exists && !content.is_empty() {
        cx.error(path, "a file expected not to exist has no content to check");
        return None;
    }
    Some(FileExpect { exists, content })
}

fn foreach(cx: &mut ValidateCx, raw: &RawStep, path: &str, scope: Scope) -> Option<Action> {
    let f = raw.foreach.as_ref().expect("checked");
    let path = format!("{path}.foreach");
    let valid_name = f.var.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && f.var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !valid_name
        || ["vars", "env", "task", "random", "steps", "prompt", "prompt_file", "agent"].contains(&f.var.as_str())
    {
        cx.error(&format!("{path}.var"), format!("`{}` cannot name a loop variable", f.var));
        return None;
    }
    let items = match &f.items {
        RawForeachItems::List(items) => {
            let texts: Vec<String> = items.iter().map(|s| s.0.clone()).collect();
            cx.templates(&texts, scope, &format!("{path}.in")).map(ForeachItems::List)
        }
        RawForeachItems::Template(t) => cx.template(t, scope, &format!("{path}.in")).map(ForeachItems::Json),
    };
    cx.locals.push(f.var.clone());
    let body = steps(cx, &f.steps, &format!("{path}.steps"), scope);
    cx.locals.pop();
    if f.steps.is_empty() {
        cx.error(&format!("{path}.steps"), "`foreach` needs at least one step");
    }
    Some(Action::Foreach(Box::new(ForeachAction { var: f.var.clone(), items: items?, steps: body? })))
}

fn outputs(cx: &mut ValidateCx, raw: &RawStep, path: &str, kind: &str) -> Option<Vec<(String, OutputSpec)>> {
    let mut out = Vec::new();
    let mut ok = true;
    for (name, spec) in &raw.outputs {
        let key = format!("{path}.outputs.{name}");
        let parsed = match spec {
            RawOutput::Field { from, json_path } => {
                let jp = match json_path.as_deref().map(JsonPath::parse).transpose() {
                    Ok(jp) => jp,
                    Err(e) => {
                        cx.error(&format!("{key}.json_path"), e);
                        ok = false;
                        continue;
                    }
                };
                Some(match from {
                    OutputStream::Stdout => OutputSpec::Stdout(jp),
                    OutputStream::Stderr => OutputSpec::Stderr(jp),
                })
            }
            RawOutput::Template(t) => match t.as_str() {
                "{stdout}" => Some(OutputSpec::Stdout(None)),
                "{stderr}" => Some(OutputSpec::Stderr(None)),
                "{exit_code}" => Some(OutputSpec::ExitCode),
                "{response.status}" => Some(OutputSpec::Status),
                "{response.body}" => Some(OutputSpec::Body),
                t => {
                    let inner = t.strip_prefix('{').and_then(|t| t.strip_suffix('}'));
                    match inner {
                        Some(h) if h.starts_with("response.headers.") => {
                            Some(OutputSpec::Header(h["response.headers.".len()..].to_ascii_lowercase()))
                        }
                        Some(j) if j.starts_with("response.json.") => {
                            match JsonPath::parse(&j["response.json.".len()..]) {
                                Ok(p) => Some(OutputSpec::Json(p)),
                                Err(e) => {
                                    cx.error(&key, e);
                                    None
                                }
                            }
                        }
                        _ => {
                            cx.error(&key, format!("unknown output `{t}`")).help = Some(
                                "use {stdout}, {stderr}, {exit_code}, {response.status}, {response.body}, \
                                 {response.headers.NAME} or {response.json.PATH}"
                                    .into(),
                            );
                            None
                        }
                    }
                }
            },
        };
        let Some(parsed) = parsed else {
            ok = false;
            continue;
        };
        let fits = match parsed {
            OutputSpec::Stdout(_) | OutputSpec::Stderr(_) | OutputSpec::ExitCode => kind == "run" || kind == "argv",
            _ => kind == "http" || kind == "mcp",
        };
        if !fits {
            cx.error(&key, format!("a `{kind}` step cannot capture this output"));
            ok = false;
            continue;
        }
        out.push((name.clone(), parsed));
    }
    if !raw.outputs.is_empty() && raw.id.is_none() {
        cx.error(path, "a step with `outputs` needs an `id` to refer to them by");
        ok = false;
    }
    ok.then_some(out)
}

fn regex(cx: &mut ValidateCx, pattern: &str, path: &str) -> Option<Regex> {
    match Regex::new(pattern) {
        Ok(re) => Some(re),
        Err(e) => {
            cx.error(path, format!("invalid regular expression: {e}"));
            None
        }
    }
}
