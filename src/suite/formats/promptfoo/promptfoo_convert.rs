//! A promptfoo config turned into a native suite: its prompts, providers and tests, each
//! test × prompt a task rendered with the test's vars, each provider an agent (several are
//! the arms of `variants`), each assertion a `promptfoo` grader.

use std::path::Path;

use serde_json::{Map, Value, json};

use super::super::native_text::{glob_files, literal, placeholder_model, task_id};
use super::super::{ConvertCx, Converted, ForeignFormat, Problems};
use super::nunjucks::{prepare_vars, render};
use super::promptfoo_graders::{Scripts, asks_judge, embeds, graders};
use super::provider_agents::{DEFAULT_EMBEDDING_MODEL, ProviderAgent, agents, judge};
use super::test_rows::{Row, rows};

pub struct Promptfoo;

impl ForeignFormat for Promptfoo {
    fn name(&self) -> &'static str {
        "promptfoo config"
    }

    fn import_name(&self) -> &'static str {
        "promptfoo"
    }

    /// `prompts` or `providers` (or `targets`) at the top, and no test with AgentV's `id`,
    /// `input` or `criteria` (an AgentV 5.x file has promptfoo's top-level keys).
    fn detect(&self, doc: &Value) -> bool {
        let agentv = |t: &Value| ["id", "input", "criteria", "expected_output"].iter().any(|k| t.get(k).is_some());
        ["prompts", "providers", "targets"].iter().any(|k| doc.get(k).is_some())
            && !doc.get("tests").and_then(Value::as_array).is_some_and(|tests| tests.iter().any(agentv))
    }

    fn convert(&self, doc: &Value, cx: &ConvertCx) -> Result<Converted, Problems> {
        convert(doc, cx)
    }
}

/// Top-level keys read (`description` names the suite); the rest are refused, or ignored
/// when they only change how promptfoo shows or stores results.
const READ: [&str; 8] =
    ["description", "prompts", "providers", "targets", "tests", "defaultTest", "scenarios", "evaluateOptions"];
const IGNORED: [&str; 6] = ["outputPath", "sharing", "commandLineOptions", "tags", "metadata", "writeLatestResults"];

/// Test keys read; the rest are refused.
const TEST_KEYS: [&str; 7] = ["description", "vars", "assert", "threshold", "options", "metadata", "__inherited"];
/// `options` keys read.
const OPTIONS: [&str; 7] =
    ["prefix", "suffix", "disableVarExpansion", "disableDefaultAsserts", "rubricPrompt", "transform", "provider"];

/// One prompt as written: its text (before vars) and its id part.
struct Prompt {
    raw: String,
    id: String,
}

fn convert(doc: &Value, cx: &ConvertCx) -> Result<Converted, Problems> {
    let mut problems = Problems::new();
    for key in doc.as_object().into_iter().flatten().map(|(k, _)| k) {
        if !READ.contains(&key.as_str()) && !IGNORED.contains(&key.as_str()) {
            let why = match key.as_str() {
                "env" => "`env` is not supported: set the variables in the environment evalgate runs in",
                _ => "it is not supported",
            };
            problems.push((format!("/{key}"), format!("the top-level key `{key}`: {why}")));
        }
    }
    let dir = cx.file.parent().unwrap_or(Path::new(""));
    let prompts = prompts(doc.get("prompts").unwrap_or(&Value::Null), dir, &mut problems);
    let providers = doc.get("providers").or_else(|| doc.get("targets")).unwrap_or(&Value::Null);
    let agents = if cx.agent.is_none() { agents(providers, dir, &mut problems) } else { Vec::new() };
    if cx.agent.is_none() && agents.is_empty() && !problems.iter().any(|(p, _)| p.starts_with("/providers")) {
        problems.push(("/providers".into(), "a promptfoo config needs `providers` to run on its own".into()));
    }
    let model = if cx.agent.is_some() { cx.model_agent } else { agents.iter().any(|a| a.model) };
    if cx.agent.is_none() && agents.iter().any(|a| a.model) && agents.iter().any(|a| !a.model) {
        problems.push((
            "/providers".into(),
            "a provider that is not a model (`echo`, `exec:`, `http`, a script) beside a model provider is not supported: a task is a chat for a model and text for the others".into(),
        ));
    }
    let rows = rows(doc, cx.file, &mut problems);
    let repeat = repeat(doc, &mut problems);
    let mut tasks = Vec::new();
    let mut origins = Vec::new();
    let mut ids = std::collections::HashSet::new();
    for row in &rows {
        for prompt in &prompts {
            let Some(mut task) = task(row, prompt, prompts.len(), model, (&cx.rel_dir, dir), &mut problems) else {
                continue;
            };
            let mut id = task["id"].as_str().unwrap_or_default().to_owned();
            let base = id.clone();
            let mut n = 2;
            while !ids.insert(id.clone()) {
                id = format!("{base}-{n}");
                n += 1;
            }
            task["id"] = json!(id);
            if let Some(n) = repeat {
                // Every repeat is a run promptfoo counts: the task passes when all its trials do.
                task["repeat"] = json!(n);
            }
            if let Some(agent) = cx.agent.or(agents.first().map(|a| a.name.as_str())) {
                task["agent"] = json!(agent);
            }
            tasks.push(task);
            origins.push(super::super::Origin {
                file: row.origin.file.clone(),
                at: row.origin.at.clone(),
                line: row.origin.line,
            });
        }
    }
    if !problems.is_empty() {
        let mut seen = std::collections::HashSet::new();
        problems.retain(|p| seen.insert(p.clone()));
        return Err(problems);
    }
    let mut suite = suite(doc, cx, &agents);
    let judged =
        tasks.iter().flat_map(|t| t["grade"].as_array().into_iter().flatten()).any(|g| asks_judge(&g["assertion"]));
    if judged && cx.agent.is_none() {
        // promptfoo's grading provider is the judge; without one, a placeholder to point at yours.
        suite["judge"] = match doc.pointer("/defaultTest/options/provider") {
            Some(p) => match judge(p, "/defaultTest/options/provider", &mut problems) {
                Some(j) => j,
                None => return Err(problems),
            },
            None => placeholder_model(),
        };
        let embeds =
            tasks.iter().flat_map(|t| t["grade"].as_array().into_iter().flatten()).any(|g| embeds(&g["assertion"]));
        if embeds && doc.pointer("/defaultTest/options/provider").is_none() {
            // promptfoo's default embedding provider: OpenAI's, as the placeholder judge is.
            suite["judge"]["embedding"] = json!({"provider": "openai", "model": DEFAULT_EMBEDDING_MODEL});
        }
    }
    suite["tasks"] = Value::Array(tasks);
    Ok(Converted { suite, origins })
}

/// `evaluateOptions.repeat` (each test run that many times), when above 1; the other
/// `evaluateOptions` only pace or show promptfoo's run and are ignored.
fn repeat(doc: &Value, problems: &mut Problems) -> Option<u64> {
    match doc.pointer("/evaluateOptions/repeat") {
        None | Some(Value::Null) => None,
        Some(n) => match n.as_u64().filter(|n| (1..=1000).contains(n)) {
            Some(n) => (n > 1).then_some(n),
            None => {
                problems.push(("/evaluateOptions/repeat".into(), "`repeat` is a whole number from 1 to 1000".into()));
                None
            }
        },
    }
}

/// The suite around the tasks: its name, and without an importing agent the providers'
/// agents, the first the default, several compared as arms with the first as control.
fn suite(doc: &Value, cx: &ConvertCx, agents: &[ProviderAgent]) -> Value {
    let mut stem =
        cx.file.file_name().and_then(|n| n.to_str()).unwrap_or("promptfoo").split('.').next().unwrap_or("promptfoo");
    // promptfoo's default file name says nothing: its directory names the eval.
    if stem == "promptfooconfig" {
        stem = cx.file.parent().and_then(|d| d.file_name()).and_then(|n| n.to_str()).unwrap_or(stem);
    }
    let name = doc.get("description").and_then(Value::as_str).map(|d| d.chars().take(60).collect::<String>());
    // A suite id starts with a letter or a digit (a temporary directory's `.tmp…` does not).
    let suite_name = task_id(name.as_deref().unwrap_or(stem)).replace('_', "-");
    let suite_name = suite_name.trim_start_matches(|c: char| !c.is_ascii_alphanumeric()).trim_end_matches('-');
    let mut suite = json!({"evalgate": 1, "suite": if suite_name.is_empty() { "promptfoo" } else { suite_name }});
    if let Some(d) = doc.get("description").and_then(Value::as_str) {
        suite["description"] = json!(literal(d));
    }
    if cx.agent.is_none() && !agents.is_empty() {
        let map: Map<String, Value> = agents.iter().map(|a| (a.name.clone(), a.agent.clone())).collect();
        suite["agents"] = Value::Object(map);
        if agents.len() > 1 {
            let arms: Map<String, Value> = agents.iter().map(|a| (a.name.clone(), json!({"agent": a.name}))).collect();
            suite["variants"] = json!({"control": agents[0].name, "arms": arms});
        }
    }
    suite
}

/// The prompts as written: a string, a list of strings or `{raw | id, label}` objects;
/// `file://` paths (globs too) read, a `.txt` file split at lines of `---`.
fn prompts(written: &Value, dir: &Path, problems: &mut Problems) -> Vec<Prompt> {
    let list: Vec<(Value, String)> = match written {
        Value::Array(l) => l.iter().enumerate().map(|(i, p)| (p.clone(), format!("/prompts/{i}"))).collect(),
        Value::Null => {
            problems.push(("/prompts".into(), "a promptfoo config needs `prompts`".into()));
            return Vec::new();
        }
        one => vec![(one.clone(), "/prompts".into())],
    };
    let mut out = Vec::new();
    for (p, at) in list {
        let (text, label) = match &p {
            Value::String(s) => (s.clone(), None),
            Value::Object(o) => {
                let text = o.get("raw").or_else(|| o.get("id")).and_then(Value::as_str).unwrap_or_default().to_owned();
                for key in o.keys().filter(|k| !matches!(k.as_str(), "raw" | "id" | "label")) {
                    problems.push((format!("{at}/{key}"), format!("the prompt key `{key}` is not supported")));
                }
                (text, o.get("label").and_then(Value::as_str).map(str::to_owned))
            }
            _ => {
                problems.push((at, "a prompt is text, a `file://` path or an object with `raw` or `id`".into()));
                continue;
            }
        };
        let Some(path) = text.strip_prefix("file://") else {
            out.push((text, label));
            continue;
        };
        let (path, function) = path.split_once(':').map_or((path, None), |(p, f)| (p, Some(f)));
        let ext = Path::new(path).extension().and_then(|e| e.to_str()).unwrap_or_default().to_lowercase();
        if function.is_some() || matches!(ext.as_str(), "js" | "cjs" | "mjs" | "ts" | "py" | "rb") {
            problems
                .push((at, format!("the prompt `{text}`: prompt functions (JavaScript, Python) are not supported")));
            continue;
        }
        let files = match glob_files(dir, path) {
            Ok(f) if !f.is_empty() => f,
            Ok(_) => {
                problems.push((at, format!("no file matches `{path}`")));
                continue;
            }
            Err(e) => {
                problems.push((at, e));
                continue;
            }
        };
        for file in files {
            let content = match crate::yaml::read(&file) {
                Ok(t) => t,
                Err(e) => {
                    problems.push((at.clone(), format!("cannot read `{}`: {e}", file.display())));
                    continue;
                }
            };
            let ext = file.extension().and_then(|e| e.to_str()).unwrap_or_default().to_lowercase();
            match ext.as_str() {
                "json" => out.push((content, label.clone())),
                "yaml" | "yml" => match crate::yaml::Document::parse(&content)
                    .ok()
                    .and_then(|d| serde::Deserialize::deserialize(d.de(d.root())).ok())
                {
                    Some(v @ Value::Array(_)) | Some(v @ Value::Object(_)) => {
                        out.push((serde_json::to_string(&v).unwrap_or_default(), label.clone()))
                    }
                    _ => problems.push((at.clone(), format!("`{}` is not a YAML chat prompt", file.display()))),
                },
                "txt" | "md" | "j2" | "njk" | "" => {
                    for piece in content.split("\n---\n") {
                        out.push((piece.to_owned(), label.clone()));
                    }
                }
                other => problems.push((at.clone(), format!("a `.{other}` prompt file is not supported"))),
            }
        }
    }
    let several = out.len() > 1;
    out.into_iter()
        .enumerate()
        .map(|(i, (raw, label))| {
            let id = match label {
                Some(l) if !task_id(&l).trim_matches('-').is_empty() => task_id(&l).trim_matches('-').to_owned(),
                _ if several => format!("prompt-{}", i + 1),
                _ => String::new(),
            };
            Prompt { raw, id }
        })
        .collect()
}

/// A var's value as promptfoo loads it: `file://` text (trimmed) or YAML (as JSON text).
fn load_var(value: &Value, dir: &Path) -> Result<Value, String> {
    let Some(path) = value.as_str().and_then(|v| v.strip_prefix("file://")) else { return Ok(value.clone()) };
    let file = dir.join(path);
    let ext = file.extension().and_then(|e| e.to_str()).unwrap_or_default().to_lowercase();
    if matches!(
        ext.as_str(),
        "js" | "cjs"
            | "mjs"
            | "ts"
            | "py"
            | "rb"
            | "pdf"
            | "png"
            | "jpg"
            | "jpeg"
            | "gif"
            | "webp"
            | "mp3"
            | "wav"
            | "mp4"
    ) {
        return Err(format!("a var from `{path}` (a script or a binary file) is not supported"));
    }
    let text = crate::yaml::read(&file).map_err(|e| format!("cannot read the var file `{path}`: {e}"))?;
    if matches!(ext.as_str(), "yaml" | "yml") {
        let doc = crate::yaml::Document::parse(&text).map_err(|e| e.message)?;
        let v: Value = serde::Deserialize::deserialize(doc.de(doc.root())).map_err(|e| e.to_string())?;
        return Ok(json!(serde_json::to_string(&v).unwrap_or_default()));
    }
    Ok(json!(text.trim()))
}

/// A JSON prompt with every string in it rendered (promptfoo's `renderVarsInObject`).
fn render_json(v: &Value, vars: &Map<String, Value>) -> Result<Value, String> {
    Ok(match v {
        Value::String(s) => Value::String(render(s, vars)?),
        Value::Array(l) => Value::Array(l.iter().map(|x| render_json(x, vars)).collect::<Result<_, _>>()?),
        Value::Object(o) => {
            Value::Object(o.iter().map(|(k, x)| Ok((k.clone(), render_json(x, vars)?))).collect::<Result<_, String>>()?)
        }
        other => other.clone(),
    })
}

/// The task of one test row and prompt; `None` with its problems recorded.
fn task(
    row: &Row,
    prompt: &Prompt,
    prompt_count: usize,
    model: bool,
    (rel_dir, config_dir): (&Path, &Path),
    problems: &mut Problems,
) -> Option<Value> {
    let t = &row.test;
    let at = &row.at;
    let before = problems.len();
    for key in t.as_object().into_iter().flatten().map(|(k, _)| k) {
        if key == "provider" {
            problems.push((format!("{at}/{key}"), super::provider_agents::test_provider_refusal(&t[key])));
        } else if !TEST_KEYS.contains(&key.as_str()) {
            problems.push((format!("{at}/{key}"), format!("the test key `{key}` is not supported")));
        }
    }
    let options = t.get("options").and_then(Value::as_object).cloned().unwrap_or_default();
    for key in options.keys().filter(|k| !OPTIONS.contains(&k.as_str())) {
        let why = match key.as_str() {
            "postprocess" => "`postprocess` is not supported: write it as `transform`",
            _ => "it is not supported",
        };
        problems.push((format!("{at}/options/{key}"), format!("the option `{key}`: {why}")));
    }
    let dir = row.origin.file.parent().unwrap_or(Path::new(""));
    let mut vars = Map::new();
    for (k, v) in &row.vars {
        match load_var(v, dir) {
            Ok(v) => {
                vars.insert(k.clone(), v);
            }
            Err(e) => problems.push((format!("{at}/vars/{k}"), e)),
        }
    }
    let loaded = vars.clone();
    let vars = match prepare_vars(&vars) {
        Ok(v) => v,
        Err(e) => {
            problems.push((format!("{at}/vars"), e));
            return None;
        }
    };
    let text = |k: &str| options.get(k).and_then(Value::as_str).unwrap_or_default().to_owned();
    let raw = format!("{}{}{}", text("prefix"), prompt.raw, text("suffix"));
    let mut task = json!({});
    // The prompt as promptfoo gives it to a script assertion (`context.prompt`).
    let rendered_prompt: String;
    match serde_json::from_str::<Value>(&raw) {
        Ok(json_prompt) => {
            let rendered = match render_json(&json_prompt, &vars) {
                Ok(r) => r,
                Err(e) => {
                    problems.push((format!("{at}/vars"), e));
                    return None;
                }
            };
            rendered_prompt = serde_json::to_string(&rendered).unwrap_or_default();
            match (model, chat(&rendered)) {
                (true, Some(messages)) => task["messages"] = Value::Array(messages),
                (true, None) => {
                    problems.push((
                        at.clone(),
                        "a JSON prompt for a model is a list of `{role, content}` messages with text content".into(),
                    ));
                    return None;
                }
                (false, _) => {
                    task["prompt"] = json!(literal(&serde_json::to_string_pretty(&rendered).unwrap_or_default()))
                }
            }
        }
        Err(_) => match render(&raw, &vars) {
            Ok(text) => {
                task["prompt"] = json!(literal(&text));
                rendered_prompt = text;
            }
            Err(e) => {
                problems.push((at.clone(), format!("the prompt: {e}")));
                return None;
            }
        },
    }
    let test_part =
        match t.get("description").and_then(Value::as_str).map(|d| task_id(&d.chars().take(60).collect::<String>())) {
            Some(d) if !d.trim_matches('-').is_empty() => d.trim_matches('-').to_owned(),
            _ => format!("test-{}", row.index),
        };
    let mut id = match row.combination {
        Some(k) => format!("{test_part}.v{k}"),
        None => test_part,
    };
    if prompt_count > 1 || !prompt.id.is_empty() {
        id = format!("{id}.{}", prompt.id);
    }
    task["id"] = json!(id);
    if let Some(d) = t.get("description").and_then(Value::as_str) {
        task["description"] = json!(literal(d));
    }
    let test = json!({"description": t.get("description"), "vars": loaded, "assert": t.get("assert"),
        "threshold": t.get("threshold"), "metadata": t.get("metadata")});
    let context = json!({"prompt": rendered_prompt, "vars": loaded, "test": test});
    let mut rubric_prompt = options.get("rubricPrompt").cloned();
    if let Some(p) = rubric_prompt.as_ref().and_then(Value::as_str).filter(|p| p.starts_with("file://")) {
        match super::file_values::rubric_prompt(p, config_dir) {
            Ok(text) => rubric_prompt = Some(text),
            Err(why) => problems.push((format!("{at}/options/rubricPrompt"), why)),
        }
    }
    let transform = match options.get("transform") {
        None | Some(Value::Null) => None,
        Some(Value::String(code)) => match super::file_values::transform(code, rel_dir, config_dir) {
            Ok(code) => Some(code),
            Err(why) => {
                problems.push((format!("{at}/options/transform"), why));
                None
            }
        },
        Some(_) => {
            problems.push((
                format!("{at}/options/transform"),
                "a transform is JavaScript, or `file://PATH[:FUNCTION]` (a `.js`, `.cjs`, `.mjs` or `.py` file)".into(),
            ));
            None
        }
    };
    let judge = options
        .get("provider")
        .and_then(|p| super::provider_agents::judge(p, &format!("{at}/options/provider"), problems));
    let graders =
        graders(t, at, &vars, &Scripts { context, rel_dir, config_dir, rubric_prompt, transform, judge }, problems);
    if graders.is_empty() {
        // promptfoo passes a test without assertions, whatever its threshold.
        task["grade"] =
            json!([{"type": "promptfoo", "name": "no assertions", "assertion": {"type": "assert-set", "assert": []}}]);
    } else {
        task["grade"] = Value::Array(graders);
        match t.get("threshold") {
            None | Some(Value::Null) => {}
            Some(th) => match th.as_f64().filter(|x| (0.0..=1.0).contains(x)) {
                Some(x) => task["threshold"] = json!(x),
                None => problems.push((
                    format!("{at}/threshold"),
                    "a test `threshold` evalgate reads is a number from 0 to 1".into(),
                )),
            },
        }
    }
    (problems.len() == before).then_some(task)
}

/// A rendered JSON prompt as chat messages, when it is one.
fn chat(v: &Value) -> Option<Vec<Value>> {
    v.as_array()?
        .iter()
        .map(|m| {
            let role = m.get("role")?.as_str()?;
            let content = m.get("content")?.as_str()?;
            matches!(role, "system" | "user" | "assistant").then(|| json!({"role": role, "content": literal(content)}))
        })
        .collect()
}

/// An assertion's `value` rendered with the vars as promptfoo renders it: a string, or each
/// string of a list.
pub(super) fn rendered(value: &Value, vars: &Map<String, Value>) -> Result<Value, String> {
    Ok(match value {
        Value::String(s) if !s.starts_with("file://") => Value::String(render(s, vars)?),
        Value::Array(l) => Value::Array(
            l.iter()
                .map(|x| match x {
                    Value::String(s) if !s.starts_with("file://") => render(s, vars).map(Value::String),
                    other => Ok(other.clone()),
                })
                .collect::<Result<_, _>>()?,
        ),
        other => other.clone(),
    })
}
