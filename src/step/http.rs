//! `http` steps (and the `http` grader): one request, its response checked against `expect`.

use std::collections::BTreeMap;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;

use super::text_expect::{ContentCheck, RawBodyExpect, content_failures, content_templates};
use crate::template::JsonTemplate;
use super::leaf::Response;
use super::{Captures, CompileStep, Leaf, RunStep, StepEnv};
use crate::excerpt::excerpt;
use crate::llm::describe_reqwest;
use crate::process::OUTPUT_CAP;
use crate::results::StepResult;
use crate::source::{KeyPath, ValidateCx};
use crate::template::{Bindings, Scope, Template};
use crate::uses::Uses;
use crate::values::RawDuration;

/// Default time limit of an HTTP request.
const DEFAULT_HTTP_TIMEOUT: Duration = Duration::from_secs(10);

/// An HTTP method, written in any case (`post`, `POST`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "UPPERCASE")]
pub enum HttpMethod {
    #[default]
    Get,
    Post,
    Put,
    Patch,
    Delete,
    Head,
    Options,
}

impl HttpMethod {
    const ALL: [HttpMethod; 7] = [
        HttpMethod::Get,
        HttpMethod::Post,
        HttpMethod::Put,
        HttpMethod::Patch,
        HttpMethod::Delete,
        HttpMethod::Head,
        HttpMethod::Options,
    ];
    const NAMES: &[&str] = &["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"];

    pub fn as_str(self) -> &'static str {
        Self::NAMES[self as usize]
    }
}

impl<'de> Deserialize<'de> for HttpMethod {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        let upper = text.to_ascii_uppercase();
        match HttpMethod::NAMES.iter().position(|n| *n == upper) {
            Some(i) => Ok(HttpMethod::ALL[i]),
            None => Err(serde::de::Error::unknown_variant(&text, HttpMethod::NAMES)),
        }
    }
}

/// Send one HTTP request and check the response.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawHttp {
    /// The URL (a template).
    pub url: String,
    /// Default GET; any case.
    pub method: Option<HttpMethod>,
    /// Request headers (values are templates).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// A text body.
    pub body: Option<String>,
    /// A JSON body (sets `content-type: application/json`).
    pub json: Option<serde_json::Value>,
    /// Default 10s.
    pub timeout: Option<RawDuration>,
    /// What the response must be; default any 2xx status.
    pub expect: Option<RawHttpExpect>,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawHttpExpect {
    /// Default: any 2xx.
    pub status: Option<u16>,
    /// Checks on the response body.
    pub body: Option<RawBodyExpect>,
}

#[derive(Debug)]
pub struct HttpRequest {
    pub url: Template,
    pub method: HttpMethod,
    pub headers: Vec<(String, Template)>,
    pub body: Option<HttpBody>,
    pub timeout: Duration,
    pub expect: HttpExpect,
}

#[derive(Debug)]
pub enum HttpBody {
    Text(Template),
    Json(JsonTemplate),
}

impl HttpBody {
    /// A request's `body` (text) or `json` as written, for a step and an `http` agent:
    /// `None` without either, else the compiled body (`None` inside when it did not
    /// compile). Both written is an error, and then there is no body.
    pub fn compile(
        cx: &mut ValidateCx,
        text: Option<&String>,
        json: Option<&serde_json::Value>,
        scope: Scope,
        path: &KeyPath,
    ) -> Option<Option<HttpBody>> {
        match (text, json) {
            (Some(_), Some(_)) => {
                cx.error(path, "set either `body` or `json`, not both");
                None
            }
            (Some(text), None) => Some(cx.template(text, scope, &path.key("body")).map(HttpBody::Text)),
            (None, Some(json)) => Some(JsonTemplate::compile(cx, json, scope, &path.key("json")).map(HttpBody::Json)),
            (None, None) => None,
        }
    }
}

#[derive(Debug, Default)]
pub struct HttpExpect {
    /// `None`: any 2xx.
    pub status: Option<u16>,
    pub body: Vec<ContentCheck>,
}

impl CompileStep for RawHttp {
    type Action = HttpRequest;

    const CAPTURES: Option<Captures> = Some(Captures::Response);

    fn compile(&self, cx: &mut ValidateCx, path: &KeyPath, scope: Scope) -> Option<HttpRequest> {
        let url = cx.template(&self.url, scope, &path.key("url"));
        let method = self.method.unwrap_or_default();
        let headers = cx.env_templates(&self.headers, scope, &path.key("headers"));
        let body = HttpBody::compile(cx, self.body.as_ref(), self.json.as_ref(), scope, path);
        let expect = match &self.expect {
            None => Some(HttpExpect::default()),
            Some(e) => {
                if let Some(status) = e.status
                    && !(100..=599).contains(&status)
                {
                    cx.error(&path.key("expect").key("status"), format!("{status} is not an HTTP status"));
                }
                let body = match &e.body {
                    Some(b) => b.compile(cx, &path.key("expect").key("body"), scope),
                    None => Some(Vec::new()),
                };
                body.map(|body| HttpExpect { status: e.status, body })
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
            timeout: self.timeout.map_or(DEFAULT_HTTP_TIMEOUT, |d| d.0),
            expect: expect?,
        })
    }
}

impl RunStep for HttpRequest {
    const OWN_TIMEOUT: bool = true;

    async fn execute(
        &self,
        timeout: Option<Duration>,
        _: StepEnv<'_>,
        bindings: &mut Bindings,
        _: &mut StepResult,
    ) -> Option<Leaf> {
        Some(send(self, timeout, bindings).await)
    }

    fn uses(&self) -> Uses<'_> {
        let mut templates = vec![&self.url];
        match &self.body {
            Some(HttpBody::Text(t)) => templates.push(t),
            Some(HttpBody::Json(j)) => templates.extend(j.templates()),
            None => {}
        }
        templates.extend(content_templates(&self.expect.body));
        Uses::templates(templates).and(Uses::headers(&self.headers))
    }
}

/// Sends `req`; `timeout` overrides the request's own when the step sets one.
pub async fn send(req: &HttpRequest, timeout: Option<Duration>, bindings: &Bindings) -> Leaf {
    let rendered = bindings.render_with(|lookup| {
        let url = req.url.render(lookup);
        let method = reqwest::Method::from_bytes(req.method.as_str().as_bytes()).unwrap_or(reqwest::Method::GET);
        let mut builder = crate::http_body::suite_client().request(method, &url).timeout(timeout.unwrap_or(req.timeout));
        for (name, value) in &req.headers {
            builder = builder.header(name, value.render(lookup));
        }
        builder = match &req.body {
            Some(HttpBody::Text(t)) => builder.body(t.render(lookup)),
            Some(HttpBody::Json(j)) => builder.json(&j.render(lookup)),
            None => builder,
        };
        (url, builder)
    });
    let url = &rendered.as_ref().unwrap_or_else(|m| &m.partial).0;
    let mut leaf = Leaf { action: format!("{} {url}", req.method.as_str()), ..Leaf::default() };
    let builder = match rendered {
        Ok((_, builder)) => builder,
        Err(missing) => {
            leaf.failure = Some(missing.to_string());
            leaf.error = true;
            return leaf;
        }
    };
    let mut response = match builder.send().await {
        Ok(r) => r,
        Err(e) => {
            leaf.failure = Some(format!("request failed: {}", describe_reqwest(&e)));
            leaf.error = true;
            return leaf;
        }
    };
    let status = response.status().as_u16();
    let headers = response
        .headers()
        .iter()
        .map(|(k, v)| (k.as_str().to_ascii_lowercase(), String::from_utf8_lossy(v.as_bytes()).into_owned()))
        .collect();
    let mut body = Vec::new();
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                let room = OUTPUT_CAP.saturating_sub(body.len());
                body.extend_from_slice(&chunk[..chunk.len().min(room)]);
            }
            Ok(None) => break,
            Err(e) => {
                leaf.failure = Some(format!("reading the response failed: {}", describe_reqwest(&e)));
                leaf.error = true;
                return leaf;
            }
        }
    }
    let body = String::from_utf8_lossy(&body).into_owned();
    let mut failures = Vec::new();
    let status_ok = match req.expect.status {
        Some(want) => status == want,
        None => (200..300).contains(&status),
    };
    if !status_ok {
        let want = req.expect.status.map_or_else(|| "2xx".to_owned(), |s| s.to_string());
        failures.push(format!("status {status}, expected {want}: {:?}", excerpt(&body, 80)));
    } else {
        match content_failures(&req.expect.body, &body, "the body", bindings) {
            Ok(unmet) => {
                leaf.unobserved = unmet.unobserved;
                failures.extend(unmet.failures);
            }
            Err(missing) => {
                failures.push(missing.to_string());
                leaf.error = true;
            }
        }
    }
    if !failures.is_empty() {
        leaf.failure = Some(failures.join("; "));
    }
    leaf.stdout = body.clone();
    leaf.response = Some(Response { status, headers, body });
    leaf
}
