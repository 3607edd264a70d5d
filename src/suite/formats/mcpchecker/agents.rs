//! An eval's `AgentRef`s (`builtin.llm-agent`, agent files) as native agents and judges.

use std::path::Path;
use std::sync::LazyLock;

use regex::Regex;
use serde_json::{Value, json};

use crate::llm::provider::Provider;
use crate::suite::formats::Problems;
use crate::suite::formats::native_text::literal;
use crate::template::ShellReader;

/// An `AgentRef` `{type, model, path}` as a native agent (or judge).
pub(super) fn agent_ref(r: &Value, dir: &Path, at: &str, problems: &mut Problems) -> Option<Value> {
    match r.get("type").and_then(Value::as_str) {
        Some("builtin.llm-agent") => llm(r.get("model"), &format!("{at}/model"), problems),
        Some("builtin.claude-code") => Some(claude_code()),
        Some("file") => {
            let rel = r.get("path").and_then(Value::as_str).unwrap_or_default();
            let path = dir.join(rel);
            let file = match crate::yaml::read(&path)
                .map_err(|e| e.to_string())
                .and_then(|t| crate::yaml::from_str::<Value>(&t).map_err(|e| e.to_string()))
            {
                Ok(f) => f,
                Err(e) => {
                    problems
                        .push((format!("{at}/path"), format!("cannot read the agent file {}: {e}", path.display())));
                    return None;
                }
            };
            agent_file(&file, rel, problems)
        }
        other => {
            problems.push((format!("{at}/type"), format!("unknown agent type `{}`", other.unwrap_or_default())));
            None
        }
    }
}

/// Claude Code as mcpchecker runs it: `claude-agent-acp` (on `PATH`) over ACP.
fn claude_code() -> Value {
    acp_agent(["claude-agent-acp"].into_iter())
}

/// An ACP agent running `argv`. mcpchecker's agents run unattended, so every permission
/// they ask is allowed (a converted suite can narrow `permissions`).
fn acp_agent<'a>(argv: impl Iterator<Item = &'a str>) -> Value {
    let command: Vec<String> = argv.map(literal).collect();
    json!({"acp": {"command": command, "permissions": [{"decision": "allow"}]}})
}

/// `provider:model` as a native model agent.
fn llm(model: Option<&Value>, at: &str, problems: &mut Problems) -> Option<Value> {
    match model.and_then(Value::as_str).and_then(|m| m.split_once(':')) {
        Some((label, model)) => match Provider::from_label(label) {
            Some(provider) => Some(json!({"provider": provider, "model": model})),
            None => {
                let message = format!("provider `{label}` is not supported ({})", Provider::labels());
                problems.push((at.into(), message));
                None
            }
        },
        None => {
            problems.push((at.into(), "expected `provider:model`, e.g. `openai:gpt-4o`".into()));
            None
        }
    }
}

/// A `kind: Agent` file (`rel`, as the eval names it): a built-in LLM agent, or
/// `commands.runPrompt` as a command agent. Problems point into the file itself.
fn agent_file(file: &Value, rel: &str, problems: &mut Problems) -> Option<Value> {
    if let Some(acp) = file.get("acp") {
        let Some(cmd) = acp.get("cmd").and_then(Value::as_str) else {
            problems.push((format!("{rel}#/acp/cmd"), "an ACP agent needs `cmd`".into()));
            return None;
        };
        let args = acp.get("args").and_then(Value::as_array).into_iter().flatten();
        let args: Option<Vec<&str>> = args.map(Value::as_str).collect();
        let Some(args) = args else {
            problems.push((format!("{rel}#/acp/args"), "`args` must be a list of strings".into()));
            return None;
        };
        return Some(acp_agent(std::iter::once(cmd).chain(args)));
    }
    if let Some(b) = file.get("builtin") {
        return match b.get("type").and_then(Value::as_str) {
            Some("llm-agent" | "openai-agent") => llm(b.get("model"), &format!("{rel}#/builtin/model"), problems),
            Some("claude-code") => Some(claude_code()),
            other => {
                problems.push((
                    format!("{rel}#/builtin/type"),
                    format!("built-in agent `{}` is not supported", other.unwrap_or_default()),
                ));
                None
            }
        };
    }
    let commands = &file["commands"];
    let Some(run) = commands.get("runPrompt").and_then(Value::as_str) else {
        problems.push((format!("{rel}#/commands/runPrompt"), "the agent needs `commands.runPrompt`".into()));
        return None;
    };
    // The prompt and the MCP config file reach the script as "$1" and "$2", placed by the
    // reader every shell string goes through (`template::ShellReader`): quoted for where
    // each stands, refused where that is not certain or where the word is code. The server
    // arguments are spliced in as written first, so they are read where they stand.
    static ACTION: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\{\{-?\s*(.*?)\s*-?\}\}").expect("valid regex"));
    let server_arg = commands.get("argTemplateMcpServer").and_then(Value::as_str).unwrap_or("{{ .File }}");
    let text = run.replace("{{ .McpServerFileArgs }}", server_arg);
    let (mut bad, mut refused_at) = (Vec::new(), Vec::new());
    let mut script = String::new();
    let mut last = 0;
    let mut reader = ShellReader::default();
    for c in ACTION.captures_iter(&text) {
        let whole = c.get(0).expect("a match");
        reader.read(&text[last..whole.start()]);
        script.push_str(&text[last..whole.start()]);
        last = whole.end();
        let position = match &c[1] {
            ".Prompt" | r#"printf "%q" .Prompt"# => "1",
            ".File" => "2",
            other => {
                bad.push(other.to_owned());
                continue;
            }
        };
        match reader.reference(position) {
            Ok(reference) => script.push_str(&reference),
            Err(refused) => refused_at.push(format!("`{}` {}: {}", whole.as_str(), refused.why, refused.help)),
        }
    }
    script.push_str(&text[last..]);
    reader.read(&text[last..]);
    if let Err(refused) = reader.finish() {
        refused_at.push(format!("the prompt {}: {}", refused.why, refused.help));
    }
    if !bad.is_empty() {
        let message = format!(
            "`commands.runPrompt` uses {}; evalgate supplies `.Prompt` and `.McpServerFileArgs` (one MCP config file for all servers)",
            bad.iter().map(|b| format!("`{{{{ {b} }}}}`")).collect::<Vec<_>>().join(", ")
        );
        problems.push((format!("{rel}#/commands/runPrompt"), message));
        return None;
    }
    if !refused_at.is_empty() {
        problems.push((format!("{rel}#/commands/runPrompt"), refused_at.join("; ")));
        return None;
    }
    Some(json!({"command": ["bash", "-c", literal(&script), "agent", "{prompt}", "{mcp_config}"]}))
}
