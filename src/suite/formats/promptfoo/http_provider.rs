//! promptfoo's `http` provider (0.123.1) as a native `http` agent with `promptfoo: true`
//! (`sut::http_sut`: the request through the cassette, `{env.NAME}` read only when it is
//! sent). Its `url`, `method`, `headers`, `queryParams`, `auth` (bearer, basic, an API key
//! in a header or the query), `body` and `transformResponse` (a JavaScript expression or
//! function, run by node) are carried; promptfoo's default `Content-Type` is written into
//! the headers. One agent serves every test, so its templates may name only `{{prompt}}`
//! and `{{env.NAME}}`.

use std::sync::LazyLock;

use regex::Regex;
use serde_json::{Map, Value, json};

use super::super::Problems;
use super::super::native_text::literal;

/// The `config` keys the provider carries.
const KEYS: [&str; 8] =
    ["url", "method", "headers", "body", "transformResponse", "responseParser", "queryParams", "auth"];

/// The methods a native `http` agent sends, as promptfoo compares them (in capitals).
const METHODS: [&str; 7] = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"];

/// `{{ … }}` and `{% … %}` in a template, and what it names.
static TAG: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\{\{-?\s*(.*?)\s*-?\}\}|\{%").expect("valid"));
/// The names a template may use: `prompt` and `env.NAME`.
static NAME: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^(?:prompt|env\.([A-Za-z_][A-Za-z0-9_]*))$").expect("valid"));

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
    let text = |key: &str, problems: &mut Problems| match config.get(key) {
        Some(Value::String(s)) => Some(s.clone()),
        None => None,
        Some(_) => {
            problems.push((format!("{at}/config/{key}"), format!("`{key}` is a string")));
            None
        }
    };
    let url = text("url", problems).or_else(|| id.contains("://").then(|| id.to_owned()));
    if url.is_none() && !config.contains_key("url") {
        problems.push((format!("{at}/config"), format!("provider `{id}` names no `url`")));
    }
    // promptfoo 0.123.1 sends a GET when `method` is not written (and then no body).
    let method = text("method", problems).unwrap_or_else(|| "GET".into());
    if !METHODS.contains(&method.as_str()) {
        problems
            .push((format!("{at}/config/method"), format!("`method` is one of {}, in capitals", METHODS.join(", "))));
    }
    let body = config.get("body").filter(|b| !b.is_null());
    if body.is_none() && config.get("method").and_then(Value::as_str) != Some("GET") {
        problems.push((
            format!("{at}/config"),
            format!("provider `{id}` has no `body` (promptfoo needs one unless `method: GET` is written)"),
        ));
    }
    // promptfoo's `getDefaultHeaders`, then the config's headers (their names lowercased).
    let mut headers = Map::new();
    match body {
        Some(Value::Object(_) | Value::Array(_)) if method != "GET" => {
            drop(headers.insert("content-type".into(), json!("application/json")))
        }
        Some(Value::String(_)) if method != "GET" => {
            drop(headers.insert("content-type".into(), json!("application/x-www-form-urlencoded")))
        }
        _ => {}
    }
    match config.get("headers") {
        None => {}
        Some(Value::Object(written)) if written.values().all(Value::is_string) => {
            headers.extend(written.iter().map(|(k, v)| (k.to_lowercase(), v.clone())));
        }
        Some(_) => problems.push((format!("{at}/config/headers"), "`headers` maps names to text".into())),
    }
    let mut query = match config.get("queryParams") {
        None => Map::new(),
        Some(Value::Object(q)) if q.values().all(Value::is_string) => q.clone(),
        Some(_) => {
            problems.push((format!("{at}/config/queryParams"), "`queryParams` maps names to text".into()));
            Map::new()
        }
    };
    let auth =
        config.get("auth").and_then(|a| auth(a, &format!("{at}/config/auth"), &mut headers, &mut query, problems));
    // Its token, user name and password are templates too.
    let auth = auth.map(|a| templates(&a, &format!("{at}/config/auth"), problems));
    let json_type = headers
        .iter()
        .any(|(k, v)| k.starts_with("content-type") && v.as_str().is_some_and(|v| v.contains("application/json")));
    let mut http = Map::new();
    // promptfoo's `determineRequestBody`: JSON text with a JSON `Content-Type` is read as JSON first.
    match body.map(|b| match b {
        Value::String(s) if json_type => serde_json::from_str(s).unwrap_or_else(|_| b.clone()),
        _ => b.clone(),
    }) {
        Some(Value::String(text)) => {
            drop(http.insert("body".into(), json!(templated(&text, &format!("{at}/config/body"), problems))))
        }
        Some(value) if json_type => {
            drop(http.insert("json".into(), templates(&value, &format!("{at}/config/body"), problems)))
        }
        Some(_) => problems.push((
            format!("{at}/config/body"),
            "the body is an object, but the `Content-Type` is not application/json (promptfoo refuses such a request)"
                .into(),
        )),
        None => {}
    }
    let url = url.map(|u| templated(&u, &format!("{at}/config/url"), problems));
    let headers = templates(&Value::Object(headers), &format!("{at}/config/headers"), problems);
    let query = templates(&Value::Object(query), &format!("{at}/config/queryParams"), problems);
    let transform = ["transformResponse", "responseParser"].into_iter().find_map(|key| {
        let value = config.get(key)?;
        let code = value.as_str().filter(|c| !c.trim().is_empty() && !c.starts_with("file://"));
        if code.is_none() {
            let why = if value.as_str().is_some_and(|c| c.starts_with("file://")) {
                "a transform from a file is not run"
            } else {
                "is JavaScript, as text"
            };
            problems.push((format!("{at}/config/{key}"), format!("`{key}`: {why}")));
        }
        code.map(str::to_owned)
    });
    if problems.len() > before {
        return None;
    }
    http.insert("url".into(), json!(url));
    http.insert("method".into(), json!(method));
    http.insert("promptfoo".into(), json!(true));
    for (key, value) in [("headers", headers), ("query", query)] {
        if value.as_object().is_some_and(|m| !m.is_empty()) {
            http.insert(key.into(), value);
        }
    }
    if let Some(auth) = auth {
        http.insert("auth".into(), auth);
    }
    if let Some(transform) = transform {
        http.insert("transform".into(), json!(transform));
    }
    Some(json!({"http": http}))
}

/// promptfoo's `auth`: bearer and basic as the agent's own `auth`, an API key written
/// into the headers (its name lowercased) or the query.
fn auth(
    auth: &Value,
    at: &str,
    headers: &mut Map<String, Value>,
    query: &mut Map<String, Value>,
    problems: &mut Problems,
) -> Option<Value> {
    let field = |key: &str, problems: &mut Problems| match auth.get(key) {
        Some(Value::String(s)) => Some(s.clone()),
        _ => {
            problems.push((format!("{at}/{key}"), format!("`auth.{key}` is a string")));
            None
        }
    };
    match auth.get("type").and_then(Value::as_str) {
        Some("bearer") => field("token", problems).map(|t| json!({"bearer": t})),
        Some("basic") => {
            let (user, pass) = (field("username", problems), field("password", problems));
            Some(json!({"basic": {"username": user?, "password": pass?}}))
        }
        Some("api_key") => {
            let (name, value) = (field("keyName", problems)?, field("value", problems)?);
            if TAG.is_match(&name) {
                problems.push((format!("{at}/keyName"), "`auth.keyName` is a name, not a template".into()));
            }
            match auth.get("placement").and_then(Value::as_str) {
                Some("header") => drop(headers.insert(name.to_lowercase(), json!(value))),
                Some("query") => drop(query.insert(name, json!(value))),
                _ => problems.push((format!("{at}/placement"), "`auth.placement` is `header` or `query`".into())),
            }
            None
        }
        other => {
            let named = other.map_or_else(|| "without a `type`".to_owned(), |t| format!("`{t}`"));
            problems.push((
                format!("{at}/type"),
                format!("the http provider's auth {named} is not supported (bearer, basic and api_key are)"),
            ));
            None
        }
    }
}

/// `value` with each string a native template ([`templated`]).
fn templates(value: &Value, at: &str, problems: &mut Problems) -> Value {
    match value {
        Value::String(text) => json!(templated(text, at, problems)),
        Value::Array(list) => {
            list.iter().enumerate().map(|(i, v)| templates(v, &format!("{at}/{i}"), problems)).collect()
        }
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    (k.clone(), templates(v, &format!("{at}/{}", k.replace('~', "~0").replace('/', "~1")), problems))
                })
                .collect(),
        ),
        other => other.clone(),
    }
}

/// A Nunjucks text as a native template: `{{prompt}}` as `{prompt}`, `{{env.NAME}}` as
/// `{env.NAME}` (read when the request is sent), the rest literal; any other tag refused.
fn templated(text: &str, at: &str, problems: &mut Problems) -> String {
    // Each tag is a private-use mark while the text is escaped, so its braces stay its own.
    let mut tags = Vec::new();
    let marked = TAG.replace_all(text, |tag: &regex::Captures| {
        let name = tag.get(1).map_or("", |m| m.as_str());
        match NAME.captures(name) {
            Some(found) => tags.push(found.get(1).map_or_else(|| "{prompt}".to_owned(), |env| format!("{{env.{}}}", env.as_str()))),
            None => {
                problems.push((
                    at.to_owned(),
                    format!(
                        "the http provider's template `{}` is not supported: one agent serves every test, so its templates name only `{{{{prompt}}}}` and `{{{{env.NAME}}}}`",
                        &tag[0]
                    ),
                ));
                tags.push(String::new());
            }
        }
        format!("\u{E000}{}\u{E001}", tags.len() - 1)
    });
    let mut out = literal(&marked);
    for (i, tag) in tags.iter().enumerate() {
        out = out.replace(&format!("\u{E000}{i}\u{E001}"), tag);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_provider_becomes_a_native_http_agent_and_what_it_cannot_carry_is_refused() {
        let mut problems = Problems::new();
        let config = json!({"url": "http://h/x", "method": "POST", "headers": {"X-Key": "{{ env.KEY }}"},
            "body": {"q": "{\"a\": \"{{prompt}}\"}"}, "queryParams": {"k": "v"},
            "auth": {"type": "api_key", "keyName": "X-Api", "value": "{{env.API}}", "placement": "header"},
            "transformResponse": "(json) => json.choices[0].message.content"});
        let made = agent("http", config.as_object().unwrap(), "/providers/0", &mut problems).unwrap();
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(
            made,
            json!({"http": {"json": {"q": "{{\"a\": \"{prompt}\"}}"}, "url": "http://h/x", "method": "POST", "promptfoo": true,
                "headers": {"content-type": "application/json", "x-key": "{env.KEY}", "x-api": "{env.API}"},
                "query": {"k": "v"}, "transform": "(json) => json.choices[0].message.content"}})
        );
        let config = json!({"body": "{{ question }} {% if x %}", "transformResponse": "file://t.js", "method": "TRACE", "tls": {},
            "auth": {"type": "oauth"}});
        assert!(agent("http", config.as_object().unwrap(), "/providers/0", &mut problems).is_none());
        let at: Vec<&str> = problems.iter().map(|p| p.0.as_str()).collect();
        assert_eq!(
            at,
            [
                "/providers/0/config/tls",
                "/providers/0/config",
                "/providers/0/config/method",
                "/providers/0/config/auth/type",
                "/providers/0/config/body",
                "/providers/0/config/body",
                "/providers/0/config/transformResponse"
            ]
        );
    }

    #[test]
    fn a_template_reads_back_as_the_text_with_the_prompt_in_it() {
        let mut problems = Problems::new();
        for text in ["{\"q\": \"{{prompt}}\"}", "a {{ prompt }} } { {{env.K}}{x}", "}{{prompt}}{"] {
            let native = templated(text, "/", &mut problems);
            let template = crate::template::Template::parse(&native, crate::template::Scope::Agent, Default::default())
                .unwrap_or_else(|e| panic!("{native}: {e:?}"));
            let rendered = template.render(&|v| match v {
                crate::template::Var::Prompt => "P".into(),
                other => format!("<{other}>"),
            });
            let want = text.replace("{{prompt}}", "P").replace("{{ prompt }}", "P").replace("{{env.K}}", "<env.K>");
            assert_eq!(rendered, want, "{native}");
        }
        assert!(problems.is_empty());
    }
}
