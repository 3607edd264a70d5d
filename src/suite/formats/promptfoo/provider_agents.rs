//! promptfoo providers as evalgate agents: `openai:chat:*`, `openai:responses:*` and
//! `anthropic:messages:*` become model agents (their `apiBaseUrl`, `apiKeyEnvar`,
//! `temperature`, `max_tokens`, `seed`; OpenAI's `tools` and `tool_choice` as declared
//! tools, whose calls are the answer, as promptfoo returns them), `echo` a command agent that prints its prompt, `exec:` a command agent run as
//! promptfoo runs the command, `http` a native `http` agent making promptfoo's
//! request (`http_provider`), `file://` and `python:` scripts command agents calling them as
//! promptfoo does (`script_provider`); any other is refused by name.

use serde_json::{Map, Value, json};

use super::super::Problems;
use super::{http_provider, script_provider};

/// One provider as an agent: its name (also the arm's) and the native agent.
pub(super) struct ProviderAgent {
    pub name: String,
    pub agent: Value,
    /// A model agent (which takes a JSON chat prompt as `messages`).
    pub model: bool,
}

/// The `config` keys of a model provider evalgate carries over, and where.
const MODEL_CONFIG: [(&str, &str); 7] = [
    ("apiBaseUrl", "base_url"),
    ("apiHost", "base_url"),
    ("apiKeyEnvar", "api_key_env"),
    ("temperature", "temperature"),
    ("max_tokens", "max_tokens"),
    ("seed", "seed"),
    ("system", "system"),
];

/// promptfoo's simulated user, refused wherever it is named: promptfoo plays the user
/// through its remote generation service, which evalgate does not call.
const SIMULATED_USER: &str = "promptfoo:simulated-user";

/// Why a test's own `provider` (`tests[i].provider`, `defaultTest.provider`: promptfoo runs
/// the test on it instead of the config's providers) is refused.
pub(super) fn test_provider_refusal(provider: &Value) -> String {
    let id = provider.as_str().or_else(|| provider.get("id")?.as_str()).unwrap_or_default();
    if id == SIMULATED_USER {
        return refusal(id);
    }
    "a test's own `provider` (run instead of the config's providers) is not supported: give the provider in `providers`"
        .into()
}

/// Why a provider evalgate does not run is refused, by its id.
fn refusal(id: &str) -> String {
    if id == SIMULATED_USER {
        return format!(
            "provider `{id}` is not supported: promptfoo plays the user through its remote generation service, which evalgate does not call (a run must be offline and replayable); write the conversation as a native task with `simulated_user` (a model of the suite plays the user, recorded in cassettes: docs/conversations.md)"
        );
    }
    format!(
        "provider `{id}` is not supported (openai:chat:MODEL, openai:responses:MODEL, openai:MODEL, anthropic:messages:MODEL, exec:COMMAND, http, file:// and python: scripts, and echo are)"
    )
}

/// One provider as written: its id, label, `config` and the pointer to it.
type Entry = (String, Option<String>, Map<String, Value>, String);

/// The provider list as written: a string, a list of strings and objects, or
/// `{ID: {config}}` entries.
fn entries(providers: &Value, problems: &mut Problems) -> Vec<Entry> {
    let list = match providers {
        Value::Array(list) => list.iter().enumerate().map(|(i, p)| (p, format!("/providers/{i}"))).collect(),
        Value::Null => Vec::new(),
        one => vec![(one, "/providers".to_owned())],
    };
    let mut out = Vec::new();
    for (p, at) in list {
        match p {
            Value::String(id) => out.push((id.clone(), None, Map::new(), at)),
            Value::Object(o) if o.contains_key("id") => {
                let id = o["id"].as_str().unwrap_or_default().to_owned();
                let label = o.get("label").and_then(Value::as_str).map(str::to_owned);
                for key in o.keys().filter(|k| !matches!(k.as_str(), "id" | "label" | "config")) {
                    problems.push((format!("{at}/{key}"), format!("the provider key `{key}` is not supported")));
                }
                let config = o.get("config").and_then(Value::as_object).cloned().unwrap_or_default();
                out.push((id, label, config, at));
            }
            Value::Object(o) if o.len() == 1 => {
                let (id, inner) = o.iter().next().expect("one entry");
                let label = inner.get("label").and_then(Value::as_str).map(str::to_owned);
                let config = inner.get("config").and_then(Value::as_object).cloned().unwrap_or_default();
                out.push((id.clone(), label, config, format!("{at}/{}", id.replace('~', "~0").replace('/', "~1"))));
            }
            _ => problems.push((at, "a provider is an id (`openai:chat:gpt-4o-mini`) or an object with `id`".into())),
        }
    }
    out
}

/// A name for an agent and an arm: `[a-z0-9][a-z0-9.-]*`.
fn arm_name(text: &str) -> String {
    let mut name: String = text
        .to_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '.' || c == '-' { c } else { '-' })
        .collect();
    name = name.trim_matches(|c: char| c == '-' || c == '.').to_owned();
    if name.is_empty() { "provider".into() } else { name }
}

/// The agents of `providers`, in order; `dir` is the config's directory (scripts are beside it).
pub(super) fn agents(providers: &Value, dir: &std::path::Path, problems: &mut Problems) -> Vec<ProviderAgent> {
    let mut out: Vec<ProviderAgent> = Vec::new();
    for (id, label, config, at) in entries(providers, problems) {
        let agent = match id.split(':').collect::<Vec<_>>().as_slice() {
            ["echo"] => Some((json!({"command": ["cat"], "stdin": true}), false)),
            _ if id.starts_with("exec:") => exec(&id["exec:".len()..], &id, &config, &at, problems).map(|a| (a, false)),
            _ if http_provider::is_http(&id) => http_provider::agent(&id, &config, &at, problems).map(|a| (a, false)),
            _ if script_provider::is_script(&id) => {
                script_provider::agent(&id, &config, dir, &at, problems).map(|a| (a, false))
            }
            _ => match model_provider(&id) {
                Some((provider, model)) => Some((model_agent(provider, model, &config, &at, problems), true)),
                None => {
                    problems.push((at.clone(), refusal(&id)));
                    None
                }
            },
        };
        let Some((agent, model)) = agent else { continue };
        let configured = id.starts_with("exec:") || http_provider::is_http(&id) || script_provider::is_script(&id);
        if !model && !config.is_empty() && !configured {
            problems.push((format!("{at}/config"), format!("provider `{id}` takes no `config`")));
        }
        let mut name = arm_name(label.as_deref().unwrap_or(&id));
        let base = name.clone();
        let mut n = 2;
        while out.iter().any(|a| a.name == name) {
            name = format!("{base}-{n}");
            n += 1;
        }
        out.push(ProviderAgent { name, agent, model });
    }
    out
}

/// promptfoo's `ScriptCompletionProvider` around a command: its output is stdout trimmed,
/// terminal escapes removed; a failing exit, or stderr with nothing on stdout, is an error.
const EXEC_WRAPPER: &str = r#"import re, subprocess, sys
ansi = re.compile(r"\x1b(?:[@-Z\\-_]|\[[0-?]*[ -/]*[@-~])")
done = subprocess.run(sys.argv[1:], capture_output=True)
out = ansi.sub("", done.stdout.decode("utf-8", "replace").strip())
err = ansi.sub("", done.stderr.decode("utf-8", "replace").strip())
if done.returncode != 0 or (err and not out):
    sys.stderr.write(err + "\n")
    sys.exit(done.returncode or 1)
sys.stdout.write(out)
"#;

/// An `exec:COMMAND ARGS` provider: the command (split as promptfoo splits it, quotes
/// grouping) given the prompt, the provider's options and a context as promptfoo gives
/// them, through `EXEC_WRAPPER`. The context is `{}`: a command agent is one for every
/// task, so a script reading the test's vars from it is a documented difference.
fn exec(command: &str, id: &str, config: &Map<String, Value>, at: &str, problems: &mut Problems) -> Option<Value> {
    static PARTS: std::sync::LazyLock<regex::Regex> =
        std::sync::LazyLock::new(|| regex::Regex::new(r#"[^\s"']+|"([^"]*)"|'([^']*)'"#).expect("valid"));
    let parts: Vec<String> = PARTS
        .captures_iter(command)
        .map(|c| {
            c.get(1)
                .or(c.get(2))
                .filter(|m| !m.as_str().is_empty())
                .unwrap_or(c.get(0).expect("a match"))
                .as_str()
                .to_owned()
        })
        .collect();
    if parts.is_empty() {
        problems.push((at.to_owned(), format!("provider `{id}` names no command")));
        return None;
    }
    let literal = super::super::native_text::literal;
    let options = json!({"id": id, "config": config}).to_string();
    let mut argv = vec![json!("python3"), json!("-c"), json!(literal(EXEC_WRAPPER))];
    argv.extend(parts.iter().map(|p| json!(literal(p))));
    argv.extend([json!("{prompt}"), json!(literal(&options)), json!(literal("{}"))]);
    Some(json!({"command": argv}))
}

/// The suite's judge: promptfoo's grading provider (`defaultTest.options.provider`), a
/// model provider, or one by output type (`{text: …, embedding: …}`: the judge, and its
/// `embedding` model); `None` (with the problem) for any other.
pub(super) fn judge(provider: &Value, at: &str, problems: &mut Problems) -> Option<Value> {
    if let Some(typed) = provider.as_object().filter(|o| o.contains_key("text") || o.contains_key("embedding")) {
        let embedding = match typed.get("embedding") {
            Some(e) => Some(embedding_model(e, &format!("{at}/embedding"), problems)?),
            None => None,
        };
        // Without `text`, the judge is the embedding model's endpoint: it needs no other key,
        // and a text-graded assertion asking it gets that endpoint's error (promptfoo errors).
        let mut judge = match (typed.get("text"), &embedding) {
            (Some(text), _) => judge(text, &format!("{at}/text"), problems)?,
            (None, Some(e)) => e.clone(),
            (None, None) => super::super::native_text::placeholder_model(),
        };
        if let Some(e) = embedding {
            judge["embedding"] = e;
        }
        for key in typed.keys().filter(|k| !matches!(k.as_str(), "text" | "embedding")) {
            problems.push((
                format!("{at}/{key}"),
                format!("a grading provider for `{key}` is not supported (`text` and `embedding` are)"),
            ));
        }
        return Some(judge);
    }
    let mut found = Vec::new();
    let list = json!([provider]);
    for (id, _, config, _) in entries(&list, problems) {
        match model_provider(&id) {
            Some((provider, model)) => found.push(model_agent(provider, model, &config, at, problems)),
            None => problems.push((at.to_owned(), format!("the grading {}", refusal(&id)))),
        }
    }
    found.pop()
}

/// The evalgate provider and model of a model provider's id, as promptfoo 0.123.1 loads it:
/// `openai:MODEL` is the Responses API for `gpt-X.Y` from 5.6 on (`shouldDefaultToOpenAiResponses`)
/// and chat completions otherwise.
fn model_provider(id: &str) -> Option<(&'static str, &str)> {
    match id.split(':').collect::<Vec<_>>().as_slice() {
        ["openai", "chat", model] if !model.is_empty() => Some(("openai", model)),
        ["openai", "responses", model] if !model.is_empty() => Some(("openai-responses", model)),
        ["openai", model] if !model.is_empty() && !matches!(*model, "chat" | "responses") => {
            Some((if responses_by_default(model) { "openai-responses" } else { "openai" }, model))
        }
        ["anthropic", "messages", model] if !model.is_empty() => Some(("anthropic", model)),
        _ => None,
    }
}

/// promptfoo's `shouldDefaultToOpenAiResponses`: `gpt-MAJOR[.MINOR]` from 5.6 on (not `gpt-35`).
fn responses_by_default(model: &str) -> bool {
    static VERSION: std::sync::LazyLock<regex::Regex> =
        std::sync::LazyLock::new(|| regex::Regex::new(r"^gpt-(\d+)(?:\.(\d+))?(?:-|$)").expect("valid"));
    if model == "gpt-35" || model.starts_with("gpt-35-") {
        return false;
    }
    let Some(found) = VERSION.captures(model) else { return false };
    let number = |i| found.get(i).map_or(Some(0.0), |m| m.as_str().parse::<f64>().ok());
    match (number(1), number(2)) {
        (Some(major), Some(minor)) => major > 5.0 || (major == 5.0 && minor >= 6.0),
        _ => false,
    }
}

/// promptfoo's default embedding model (`DefaultEmbeddingProvider`), that of an
/// `openai:embedding` provider without a model too.
pub(super) const DEFAULT_EMBEDDING_MODEL: &str = "text-embedding-3-large";

/// An embedding provider (`openai:embedding:MODEL`, `openai:embeddings:MODEL`; its
/// `apiBaseUrl`, `apiKeyEnvar`) as the judge's `embedding` model.
fn embedding_model(provider: &Value, at: &str, problems: &mut Problems) -> Option<Value> {
    let list = json!([provider]);
    let (id, _, config, _) = entries(&list, problems).pop()?;
    let model = match id.split(':').collect::<Vec<_>>().as_slice() {
        ["openai", "embedding" | "embeddings"] => DEFAULT_EMBEDDING_MODEL,
        ["openai", "embedding" | "embeddings", model] if !model.is_empty() => *model,
        _ => {
            problems.push((at.to_owned(), format!("the embedding provider `{id}` is not supported (`openai:embedding:MODEL` is, at any OpenAI-compatible `apiBaseUrl`)")));
            return None;
        }
    };
    let mut embedding = json!({"provider": "openai", "model": model});
    for (key, value) in &config {
        match key.as_str() {
            "apiBaseUrl" | "apiHost" => embedding["base_url"] = value.clone(),
            "apiKeyEnvar" => embedding["api_key_env"] = value.clone(),
            "apiKey" => problems.push((
                format!("{at}/config/apiKey"),
                "a key written in the file is not read: name its environment variable with `apiKeyEnvar`".into(),
            )),
            _ => problems.push((
                format!("{at}/config/{key}"),
                format!("the embedding provider config key `{key}` is not supported"),
            )),
        }
    }
    Some(embedding)
}

/// A model agent from a provider's model and `config`.
fn model_agent(provider: &str, model: &str, config: &Map<String, Value>, at: &str, problems: &mut Problems) -> Value {
    let mut agent = json!({"provider": provider, "model": model});
    let responses = provider == "openai-responses";
    for (key, value) in config {
        let own = match key.as_str() {
            "instructions" if responses => Some("system"),
            "max_output_tokens" if responses => Some("max_tokens"),
            _ => None,
        };
        match MODEL_CONFIG.iter().find(|(k, _)| k == key).map(|(_, to)| *to).or(own) {
            Some(to) => agent[to] = value.clone(),
            None if key == "tools" && provider != "anthropic" => {
                if let Some(tools) =
                    super::declared_tools::tools(value, responses, &format!("{at}/config/tools"), problems)
                {
                    agent["declared_tools"] = tools;
                }
            }
            None if key == "tool_choice" && provider != "anthropic" => {
                if let Some(choice) =
                    super::declared_tools::choice(value, &format!("{at}/config/tool_choice"), problems)
                {
                    agent["tool_choice"] = choice;
                }
            }
            None if key == "apiKey" => problems.push((
                format!("{at}/config/apiKey"),
                "a key written in the file is not read: name its environment variable with `apiKeyEnvar`".into(),
            )),
            None => problems
                .push((format!("{at}/config/{key}"), format!("the provider config key `{key}` is not supported"))),
        }
    }
    agent
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn providers_become_agents_or_named_refusals() {
        let mut problems = Problems::new();
        let list = json!([
            "echo",
            {"id": "openai:chat:gpt-4o-mini", "config": {"apiBaseUrl": "http://x/v1", "temperature": 0}},
            {"anthropic:messages:claude-3-5-haiku": {"label": "Haiku"}},
            "vertex:gemini",
            {"id": "openai:responses:gpt-4.1", "config": {"instructions": "brief", "max_output_tokens": 9}},
            "openai:gpt-5.6-mini",
            "openai:gpt-5.5"
        ]);
        let agents = agents(&list, std::path::Path::new("."), &mut problems);
        let names: Vec<&str> = agents.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "echo",
                "openai-chat-gpt-4o-mini",
                "haiku",
                "openai-responses-gpt-4.1",
                "openai-gpt-5.6-mini",
                "openai-gpt-5.5"
            ]
        );
        assert_eq!(
            agents[1].agent,
            json!({"provider": "openai", "model": "gpt-4o-mini", "base_url": "http://x/v1", "temperature": 0})
        );
        assert_eq!(
            agents[3].agent,
            json!({"provider": "openai-responses", "model": "gpt-4.1", "system": "brief", "max_tokens": 9})
        );
        assert_eq!(agents[4].agent["provider"], "openai-responses");
        assert_eq!(agents[5].agent["provider"], "openai");
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(problems[0].0, "/providers/3");
        for (model, responses) in
            [("gpt-6", true), ("gpt-5.10-x", true), ("gpt-5", false), ("gpt-35-turbo", false), ("o3", false)]
        {
            assert_eq!(responses_by_default(model), responses, "{model}");
        }
    }

    #[test]
    fn a_grading_provider_by_output_type_is_the_judge_and_its_embedding_model() {
        let mut problems = Problems::new();
        let typed = json!({
            "text": {"id": "openai:chat:judge", "config": {"apiBaseUrl": "http://x/v1"}},
            "embedding": {"id": "openai:embedding:e", "config": {"apiBaseUrl": "http://e/v1", "apiKeyEnvar": "E_KEY"}}
        });
        let both = judge(&typed, "/p", &mut problems).unwrap();
        assert_eq!(
            both,
            json!({"provider": "openai", "model": "judge", "base_url": "http://x/v1",
                "embedding": {"provider": "openai", "model": "e", "base_url": "http://e/v1", "api_key_env": "E_KEY"}})
        );
        // Without `text`, the embedding model's endpoint is the judge (no other key needed).
        let alone = judge(&json!({"embedding": "openai:embeddings"}), "/p", &mut problems).unwrap();
        assert_eq!(alone["model"], "text-embedding-3-large");
        assert_eq!(alone["embedding"]["model"], "text-embedding-3-large");
        assert!(problems.is_empty(), "{problems:?}");
        judge(&json!({"embedding": "vertex:embedding:x", "moderation": "openai:moderation"}), "/p", &mut problems);
        judge(&json!({"embedding": {"id": "openai:embedding:e", "config": {"apiKey": "sk-1"}}}), "/q", &mut problems);
        let at: Vec<&str> = problems.iter().map(|(at, _)| at.as_str()).collect();
        assert_eq!(at, ["/p/embedding", "/q/embedding/config/apiKey"], "{problems:?}");
    }

    #[test]
    fn the_simulated_user_is_refused_with_its_reason() {
        let mut problems = Problems::new();
        agents(&json!(["promptfoo:simulated-user"]), std::path::Path::new("."), &mut problems);
        assert!(problems[0].1.contains("remote generation service"), "{problems:?}");
        for written in
            [json!("promptfoo:simulated-user"), json!({"id": "promptfoo:simulated-user", "config": {"maxTurns": 3}})]
        {
            let why = test_provider_refusal(&written);
            assert!(why.contains("its remote generation service") && why.contains("`simulated_user`"), "{why}");
        }
        assert!(test_provider_refusal(&json!("openai:gpt-4o")).starts_with("a test's own `provider`"));
    }
}
