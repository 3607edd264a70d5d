//! `http` agents: an HTTP endpoint as the system under test, one request a trial (the
//! prompt and `{env.NAME}` rendered into its url, query, headers and body), its answer the
//! output (or what `transform` reads from it). As written, compiled and checked; the
//! request is made by `sut::http_sut`, through the cassette.

use std::collections::BTreeMap;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;

use crate::source::{KeyPath, ValidateCx};
use crate::step::{HttpBody, HttpMethod};
use crate::template::{Scope, Template};

/// An HTTP endpoint as the agent: one request a trial.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawHttpAgent {
    /// The URL (a template: `{prompt}`, `{env.NAME}`, `{vars.NAME}`).
    pub url: String,
    /// Default GET; any case.
    pub method: Option<HttpMethod>,
    /// Query parameters added to the URL, encoded (values are templates).
    #[serde(default)]
    pub query: BTreeMap<String, String>,
    /// Request headers (values are templates; the `{env.NAME}` they read are secrets).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// `Authorization` made from `{bearer: TOKEN}` or `{basic: {username, password}}`
    /// (templates, secrets).
    pub auth: Option<RawHttpAuth>,
    /// A text body (a template).
    pub body: Option<String>,
    /// A JSON body (its strings are templates; sets `content-type: application/json` unless
    /// `headers` set one).
    pub json: Option<serde_json::Value>,
    /// A JavaScript expression or function of `json` (the answer parsed, or null), `text`
    /// and `context` (`{response: {status, data}}`) whose value is the output, run by node
    /// (a path such as `json.choices[0].message.content` is read without node). Default:
    /// the answer's text.
    pub transform: Option<String>,
    /// Read the request and the answer as promptfoo 0.123.1's `http` provider does (set by
    /// the promptfoo converter): a JSON body's strings that render to JSON are that JSON, a
    /// text body is trimmed, the output is the JSON answer unless it is falsy, any status's
    /// answer is read but 401, 403, 404 and 501, and a transform's `{output, error}` is the
    /// provider's answer.
    #[serde(default)]
    pub promptfoo: bool,
}

/// How the request is authorized: one of `bearer` and `basic`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawHttpAuth {
    /// `Authorization: Bearer TOKEN` (a template).
    pub bearer: Option<String>,
    /// `Authorization: Basic base64(USERNAME:PASSWORD)`.
    pub basic: Option<RawBasicAuth>,
}

/// HTTP basic authentication.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawBasicAuth {
    /// The user name (a template).
    pub username: String,
    /// The password (a template).
    pub password: String,
}

/// An `http` agent, compiled.
#[derive(Debug)]
pub struct HttpAgent {
    pub name: String,
    pub url: Template,
    pub method: HttpMethod,
    pub query: Vec<(String, Template)>,
    /// Names lowercased, as HTTP reads them; the auth header last.
    pub headers: Vec<(String, Template)>,
    /// `Basic` auth's username and password, joined and encoded at request time.
    pub basic: Option<(Template, Template)>,
    pub body: Option<HttpBody>,
    pub transform: Option<String>,
    pub promptfoo: bool,
    pub timeout: Option<Duration>,
    /// The suite's directory: where a transform runs.
    pub dir: std::path::PathBuf,
}

impl HttpAgent {
    /// Every template it renders but the headers', the url first.
    pub fn templates(&self) -> impl Iterator<Item = &Template> {
        let body: Vec<&Template> = match &self.body {
            Some(HttpBody::Text(t)) => vec![t],
            Some(HttpBody::Json(j)) => j.templates(),
            None => Vec::new(),
        };
        let basic = self.basic.iter().flat_map(|(u, p)| [u, p]);
        std::iter::once(&self.url).chain(self.query.iter().map(|(_, t)| t)).chain(basic).chain(body)
    }
}

/// `http` at `path` compiled (the agent's `timeout` beside it).
pub(super) fn compile_http(
    cx: &mut ValidateCx,
    name: &str,
    raw: &RawHttpAgent,
    path: &KeyPath,
    timeout: Option<Duration>,
) -> Option<HttpAgent> {
    let scope = Scope::Agent;
    let url = cx.template(&raw.url, scope, &path.key("url"));
    let query = cx.env_templates(&raw.query, scope, &path.key("query"));
    let lowered: BTreeMap<String, String> =
        raw.headers.iter().map(|(k, v)| (k.to_ascii_lowercase(), v.clone())).collect();
    if lowered.len() < raw.headers.len() {
        cx.error(&path.key("headers"), "a header is written twice (names are read in any case)");
    }
    let mut headers = cx.env_templates(&lowered, scope, &path.key("headers"));
    let mut basic = None;
    match &raw.auth {
        Some(RawHttpAuth { bearer: Some(_), basic: Some(_) } | RawHttpAuth { bearer: None, basic: None }) => {
            cx.error(&path.key("auth"), "`auth` is one of `bearer` and `basic`");
        }
        Some(RawHttpAuth { bearer: Some(token), .. }) => {
            let at = path.key("auth").key("bearer");
            if let Some(token) = cx.template(&format!("Bearer {token}"), scope, &at) {
                headers.retain(|(k, _)| k != "authorization");
                headers.push(("authorization".into(), token));
            }
        }
        Some(RawHttpAuth { basic: Some(RawBasicAuth { username, password }), .. }) => {
            let at = path.key("auth").key("basic");
            let user = cx.template(username, scope, &at.key("username"));
            let pass = cx.template(password, scope, &at.key("password"));
            headers.retain(|(k, _)| k != "authorization");
            basic = user.zip(pass);
        }
        None => {}
    }
    let body = HttpBody::compile(cx, raw.body.as_ref(), raw.json.as_ref(), scope, path);
    if matches!(body, Some(Some(HttpBody::Json(_)))) && !headers.iter().any(|(k, _)| k == "content-type") {
        headers.push(("content-type".into(), Template::literal("application/json")));
    }
    if let Some(transform) = raw.transform.as_deref().filter(|t| t.trim().is_empty() || t.starts_with("file://")) {
        let why = if transform.trim().is_empty() { "is empty" } else { "is JavaScript written here, not a file" };
        cx.error(&path.key("transform"), format!("`transform` {why}"));
    }
    let body = match body {
        Some(b) => Some(b?),
        None => None,
    };
    Some(HttpAgent {
        name: name.to_owned(),
        url: url?,
        method: raw.method.unwrap_or_default(),
        query,
        headers,
        basic,
        body,
        transform: raw.transform.clone(),
        promptfoo: raw.promptfoo,
        timeout,
        dir: cx.dir.clone(),
    })
}
