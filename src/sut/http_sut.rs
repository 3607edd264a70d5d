//! An `http` agent's trial: its one request, rendered by [`request`] (the one render: the
//! cassette's key is made with every `{env.NAME}` left as written, so a secret is never in
//! it and a replay reads no variable), sent through the suite's cassette ([`HttpDoor`]),
//! the answer read up to a cap within the task's timeout, then its output
//! (`http_output.rs`).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{AgentError, AgentRun, SystemUnderTest, Trace};
use crate::cassette::{Cassette, Door, Miss, Passed, Traffic};
use crate::http_body::{BodyError, read_capped};
use crate::step::{HttpBody, HttpMethod};
use crate::suite::model::HttpAgent;
use crate::template::{Bindings, Var};

/// The most of an answer read (as much as evalgate reads of a model's).
pub(super) const BODY_CAP: usize = 16 << 20;

pub struct HttpSut<'a> {
    pub agent: &'a HttpAgent,
    /// The suite's cassette: every request goes through it when there is one.
    pub cassette: Option<&'a Arc<Cassette>>,
}

/// A request as sent, and as the cassette keys it.
#[derive(Debug, Serialize)]
pub(super) struct Request {
    method: &'static str,
    url: String,
    headers: BTreeMap<String, String>,
    body: Option<String>,
}

/// An answer as recorded and replayed: its status and body text.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct Answer {
    pub status: u16,
    pub body: String,
}

/// Why a request has no answer.
enum Failed {
    Miss(String),
    Other(String),
}

impl From<Miss> for Failed {
    fn from(miss: Miss) -> Self {
        Failed::Miss(miss.message)
    }
}

/// An `http` agent's requests through the cassette, by the agent's name.
struct HttpDoor<'a>(&'a str);

impl Door for HttpDoor<'_> {
    fn traffic(&self) -> Traffic {
        Traffic::HttpAgent(self.0.to_owned())
    }

    /// A 429 or a server's error recorded would be replayed for ever: they pass unrecorded.
    fn keeps(&self, recorded: &Value) -> bool {
        recorded["status"].as_u64().is_some_and(|status| status != 429 && status < 500)
    }
}

#[async_trait::async_trait]
impl SystemUnderTest for HttpSut<'_> {
    async fn run(&self, bindings: &Bindings, timeout: Duration) -> Result<AgentRun, AgentError> {
        let agent = self.agent;
        let error = |reason: String| AgentError { reason, run: None, agent_fault: false };
        // The key: `{env.NAME}` as written. The request sent reads the variables, only when sent.
        let keyed = bindings.render_with(|lookup| {
            request(agent, &|v: &Var| match v {
                Var::Env(name) => format!("{{env.{name}}}"),
                other => lookup(other),
            })
        })?;
        let started = Instant::now();
        let live = || async {
            let sent =
                bindings.render_with(|lookup| request(agent, lookup)).map_err(|m| Failed::Other(m.to_string()))?;
            send(sent).await.map_err(Failed::Other)
        };
        let key = serde_json::to_value(&keyed).expect("a request serializes");
        let asked = async {
            match self.cassette {
                Some(cassette) => crate::cassette::pass(cassette, &HttpDoor(&agent.name), &key, live).await,
                None => live().await.map(|answer| Passed { answer, replayed: false }),
            }
        };
        let passed = match tokio::time::timeout(timeout, asked).await {
            Err(_) => {
                return Err(error(format!(
                    "the http agent's request timed out after {}",
                    humantime::format_duration(timeout)
                )));
            }
            Ok(Err(Failed::Miss(message))) => return Err(error(message)),
            Ok(Err(Failed::Other(message))) => {
                return Err(error(format!("the http agent's request failed: {message}")));
            }
            Ok(Ok(passed)) => passed,
        };
        let left = timeout.saturating_sub(started.elapsed());
        let output = super::http_output::output(agent, &passed.answer, left).await.map_err(error)?;
        let (output, failure) = match output {
            Some(text) => (text, None),
            None => (String::new(), Some("the http agent's answer has no output (promptfoo: No output)".to_owned())),
        };
        Ok(AgentRun {
            output,
            latency: started.elapsed(),
            trace: Trace::default(),
            failure,
            replayed: passed.replayed,
            ..AgentRun::default()
        })
    }
}

/// The request `agent` makes with `lookup`'s values: the one render of its url, query,
/// headers, auth and body.
pub(super) fn request(agent: &HttpAgent, lookup: &dyn Fn(&Var) -> String) -> Request {
    let mut url = agent.url.render(lookup);
    if !agent.query.is_empty() {
        let pairs: Vec<(String, String)> = agent.query.iter().map(|(k, v)| (k.clone(), v.render(lookup))).collect();
        url = with_query(&url, &pairs);
    }
    let mut headers: BTreeMap<String, String> =
        agent.headers.iter().map(|(name, value)| (name.clone(), value.render(lookup))).collect();
    if let Some((user, pass)) = &agent.basic {
        let pair = format!("{}:{}", user.render(lookup), pass.render(lookup));
        let encoded = base64::engine::general_purpose::STANDARD.encode(pair);
        headers.insert("authorization".into(), format!("Basic {encoded}"));
    }
    let json = headers.iter().any(|(k, v)| k.starts_with("content-type") && v.contains("application/json"));
    let body = match &agent.body {
        _ if agent.promptfoo && agent.method == HttpMethod::Get => None,
        None => None,
        Some(HttpBody::Json(template)) => {
            let rendered = template.render(lookup);
            let body = if agent.promptfoo { json_strings(rendered) } else { rendered };
            Some(serde_json::to_string(&body).expect("JSON serializes"))
        }
        Some(HttpBody::Text(template)) => {
            let text = template.render(lookup);
            Some(match serde_json::from_str::<Value>(&text) {
                // promptfoo's `processJsonBody`: text that reads as JSON is sent as that JSON.
                Ok(Value::String(s)) if agent.promptfoo && json => s,
                Ok(value) if agent.promptfoo && json => value.to_string(),
                _ if agent.promptfoo && !json => text.trim().to_owned(),
                _ => text,
            })
        }
    };
    Request { method: agent.method.as_str(), url, headers, body }
}

/// promptfoo's `processJsonBody` after rendering: a string that reads as a JSON object or
/// list (it starts with `{` or `[`) is that object or list.
fn json_strings(value: Value) -> Value {
    match value {
        Value::String(text) if text.trim_start().starts_with(['{', '[']) => match serde_json::from_str(&text) {
            Ok(parsed @ (Value::Object(_) | Value::Array(_))) => parsed,
            _ => Value::String(text),
        },
        Value::Array(items) => Value::Array(items.into_iter().map(json_strings).collect()),
        Value::Object(map) => Value::Object(map.into_iter().map(|(k, v)| (k, json_strings(v))).collect()),
        other => other,
    }
}

/// `url` with `pairs` appended to its query, encoded as a form (`URLSearchParams`).
fn with_query(url: &str, pairs: &[(String, String)]) -> String {
    match reqwest::Url::parse(url) {
        Ok(mut parsed) => {
            parsed.query_pairs_mut().extend_pairs(pairs);
            parsed.to_string()
        }
        Err(_) => {
            let mut form = reqwest::Url::parse("http://localhost/").expect("a URL");
            form.query_pairs_mut().extend_pairs(pairs);
            format!("{url}{}{}", if url.contains('?') { '&' } else { '?' }, form.query().unwrap_or_default())
        }
    }
}

/// `request` sent, its answer read up to [`BODY_CAP`]. An error names no header, body or
/// URL: they may hold a credential.
async fn send(request: Request) -> Result<Answer, String> {
    let method = reqwest::Method::from_bytes(request.method.as_bytes()).unwrap_or(reqwest::Method::GET);
    let mut builder = crate::http_body::suite_client().request(method, &request.url);
    for (name, value) in &request.headers {
        builder = builder.header(name, value);
    }
    if let Some(body) = request.body {
        builder = builder.body(body);
    }
    let describe = |e: reqwest::Error| crate::llm::describe_reqwest(&e.without_url());
    let response = builder.send().await.map_err(describe)?;
    let status = response.status().as_u16();
    let body = read_capped(response, BODY_CAP).await.map_err(|e| match e {
        BodyError::Read(e) => format!("reading the answer failed: {}", describe(e)),
        BodyError::TooLarge { cap, .. } => format!("the answer is {}", BodyError::too_large(cap)),
    })?;
    Ok(Answer { status, body: String::from_utf8_lossy(&body).into_owned() })
}

/// The context a transform is given: promptfoo's `{response: {data, status}}`.
pub(super) fn context(answer: &Answer) -> Value {
    json!({"response": {"data": answer.body, "status": answer.status}})
}
