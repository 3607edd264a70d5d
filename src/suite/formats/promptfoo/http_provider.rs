//! promptfoo's `http` provider (0.123.1) as a command agent: `http_request.py` makes the
//! request as promptfoo makes it (the config's `url`, `method`, `headers`, `body`, and a
//! `transformResponse` that is a path into the answer), run through evalgate's process
//! plumbing (its own process group, the task's timeout, output capped). One agent serves
//! every test, so its templates may name only `{{prompt}}` and `{{env.NAME}}`; a variable
//! named is passed to the agent through its `env` as `{env.NAME}`, so preflight requires it
//! and the redactor hides its value, and it is never written into the converted suite.

use std::sync::LazyLock;

use regex::Regex;
use serde_json::{Map, Value, json};

use super::super::Problems;
use super::super::native_text::literal;

/// The request maker, given the request as written and the prompt.
const HTTP_REQUEST: &str = include_str!("http_request.py");

/// Seconds a request may take (promptfoo's default `REQUEST_TIMEOUT_MS` is 300 s); the
/// task's own timeout still ends the agent first when it is shorter.
const REQUEST_TIMEOUT_SECS: u64 = 300;

/// The `config` keys the provider carries.
const KEYS: [&str; 5] = ["url", "method", "headers", "body", "transformResponse"];

/// `{{ … }}` and `{% … %}` in a template, and what it names.
static TAG: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\{\{-?\s*(.*?)\s*-?\}\}|\{%").expect("valid"));
/// The names a template may use: `prompt` and `env.NAME`.
static NAME: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^(?:prompt|env\.([A-Za-z_][A-Za-z0-9_]*))$").expect("valid"));
/// A `transformResponse` evalgate reads: `json` or `text`, then members and indexes.
static PATH: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"^(json|text)((?:\??\.[A-Za-z_$][A-Za-z0-9_$]*|\[\d+\]|\["[^"\\]*"\]|\['[^'\\]*'\])*)$"#)
        .expect("valid")
});
static STEP: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"\.([A-Za-z_$][A-Za-z0-9_$]*)|\[(\d+)\]|\["([^"]*)"\]|\['([^']*)'\]"#).expect("valid")
});

/// An `http` provider's id: `http`, `https`, or the URL itself.
pub(super) fn is_http(id: &str) -> bool {
    matches!(id, "http" | "https") || id.starts_with("http://") || id.starts_with("https://")
}

/// The agent of an `http` provider, or `None` with each problem at its key.
pub(super) fn agent(id: &str, config: &Map<String, Value>, at: &str, problems: &mut Problems) -> Option<Value> {
    let before = problems.len();
    for key in config.keys().filter(|k| !KEYS.contains(&k.as_str())) {
        problems.push((format!("{at}/config/{key}"), format!("the http provider's `{key}` is not supported")));
    }
    let url = match config.get("url") {
        Some(Value::String(url)) => url.clone(),
        Some(_) => {
            problems.push((format!("{at}/config/url"), "`url` is a string".into()));
            String::new()
        }
        None if id.contains("://") => id.to_owned(),
        None => {
            problems.push((format!("{at}/config"), format!("provider `{id}` names no `url`")));
            String::new()
        }
    };
    let method = match config.get("method") {
        // promptfoo 0.123.1 sends a GET when `method` is not written (and then no body).
        None => "GET".to_owned(),
        Some(Value::String(m)) if matches!(m.as_str(), "GET" | "POST") => m.clone(),
        Some(_) => {
            problems.push((format!("{at}/config/method"), "`method` is `GET` or `POST`, as promptfoo reads it".into()));
            String::new()
        }
    };
    let body = config.get("body").cloned();
    if body.is_none() && method == "POST" {
        problems
            .push((format!("{at}/config"), format!("provider `{id}` has no `body` (promptfoo needs one for a POST)")));
    }
    let headers = config.get("headers").cloned().unwrap_or_else(|| json!({}));
    if !headers.as_object().is_some_and(|h| h.values().all(Value::is_string)) {
        problems.push((format!("{at}/config/headers"), "`headers` maps names to text".into()));
    }
    let mut env = Vec::new();
    templates(&json!(url), &format!("{at}/config/url"), &mut env, problems);
    templates(&headers, &format!("{at}/config/headers"), &mut env, problems);
    templates(body.as_ref().unwrap_or(&Value::Null), &format!("{at}/config/body"), &mut env, problems);
    let transform =
        config.get("transformResponse").and_then(|t| transform(t, &format!("{at}/config/transformResponse"), problems));
    if problems.len() > before {
        return None;
    }
    let spec = json!({
        "url": url, "method": method, "headers": headers, "body": body, "timeout": REQUEST_TIMEOUT_SECS,
        "transform": transform, "transform_text": config.get("transformResponse"),
    });
    let argv = [
        json!("python3"),
        json!("-c"),
        json!(literal(HTTP_REQUEST)),
        json!(literal(&spec.to_string())),
        json!("{prompt}"),
    ];
    let env: Map<String, Value> =
        env.into_iter().map(|name| (name.clone(), json!(format!("{{env.{name}}}")))).collect();
    Some(if env.is_empty() { json!({"command": argv}) } else { json!({"command": argv, "env": env}) })
}

/// Checks each string in `value` names only `prompt` and `env.NAME` (noting each NAME).
fn templates(value: &Value, at: &str, env: &mut Vec<String>, problems: &mut Problems) {
    match value {
        Value::String(text) => {
            for tag in TAG.captures_iter(text) {
                let name = tag.get(1).map_or("", |m| m.as_str());
                match NAME.captures(name) {
                    Some(found) => {
                        if let Some(var) = found.get(1).map(|m| m.as_str().to_owned()).filter(|v| !env.contains(v)) {
                            env.push(var);
                        }
                    }
                    None => problems.push((
                        at.to_owned(),
                        format!(
                            "the http provider's template `{}` is not supported: one agent serves every test, so its templates name only `{{{{prompt}}}}` and `{{{{env.NAME}}}}`",
                            &tag[0]
                        ),
                    )),
                }
            }
        }
        Value::Array(list) => {
            list.iter().enumerate().for_each(|(i, v)| templates(v, &format!("{at}/{i}"), env, problems))
        }
        Value::Object(map) => map.iter().for_each(|(k, v)| {
            templates(v, &format!("{at}/{}", k.replace('~', "~0").replace('/', "~1")), env, problems)
        }),
        _ => {}
    }
}

/// A `transformResponse` path as `[root, [keys]]`, or the refusal of any other transform.
fn transform(value: &Value, at: &str, problems: &mut Problems) -> Option<Value> {
    let text = value.as_str().map(str::trim).unwrap_or_default();
    let Some(path) = PATH.captures(text) else {
        let why = if text.starts_with("file://") { "a transform from a file" } else { "a JavaScript transform" };
        problems.push((
            at.to_owned(),
            format!(
                "{why} is not run: write `transformResponse` as a path into the answer (`json.output`, `json.choices[0].message.content`, `text`)"
            ),
        ));
        return None;
    };
    let keys: Vec<&str> = STEP
        .captures_iter(&path[2])
        .map(|s| s.get(1).or(s.get(2)).or(s.get(3)).or(s.get(4)).map_or("", |m| m.as_str()))
        .collect();
    Some(json!([&path[1], keys]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_transform_and_prompt_and_env_templates_are_carried_and_code_is_refused() {
        let mut problems = Problems::new();
        let config = json!({"url": "http://h/x", "headers": {"Authorization": "Bearer {{ env.KEY }}"},
            "body": {"q": "{{prompt}}"}, "transformResponse": "json.choices[0]['message'].content"});
        let made = agent("http", config.as_object().unwrap(), "/providers/0", &mut problems).unwrap();
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(made["env"], json!({"KEY": "{env.KEY}"}));
        let spec = made["command"][3].as_str().unwrap();
        assert!(spec.contains(r#"["json",["choices","0","message","content"]]"#), "{spec}");
        let config = json!({"body": "{{ question }} {% if x %}", "transformResponse": "(json) => json.a", "method": "PUT", "tls": {}});
        assert!(agent("http", config.as_object().unwrap(), "/providers/0", &mut problems).is_none());
        let at: Vec<&str> = problems.iter().map(|p| p.0.as_str()).collect();
        assert_eq!(
            at,
            [
                "/providers/0/config/tls",
                "/providers/0/config",
                "/providers/0/config/method",
                "/providers/0/config/body",
                "/providers/0/config/body",
                "/providers/0/config/transformResponse"
            ]
        );
        assert!(problems[5].1.contains("JavaScript transform"), "{problems:?}");
    }
}
