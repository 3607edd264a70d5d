//! The model endpoint a command agent is handed when its suite has a cassette: an
//! OpenAI-compatible and Anthropic-compatible HTTP endpoint on 127.0.0.1 that answers from
//! the cassette, or asks the real endpoint and records (`--record`); OpenAI's Responses API
//! is served below OpenAI's path, as its SDK reaches it. The agent reaches it
//! through the variables its SDK reads (`OPENAI_BASE_URL`, `ANTHROPIC_BASE_URL`), so any CLI
//! that calls a model itself is recorded and replayed like evalgate's own model agents. What
//! it knows of each provider (its path here, its SDK's variables, its headers) is the
//! provider's (`Provider`'s methods): every provider is served, none is named here.
//!
//! One endpoint serves one agent run. Only that run may call it: every path starts with a
//! secret of its own (in the base URLs handed to the agent), the `Host` must be the
//! listener's and a request with an `Origin` is refused (`proxy::not_local`), and a body over
//! `MAX_BODY` is refused unread. The agent never holds the real key: it gets a placeholder,
//! and the endpoint adds the real one (evalgate's `OPENAI_API_KEY` / `ANTHROPIC_API_KEY`)
//! to what it forwards when recording, only ever to that upstream: every forwarded URL is
//! made by `upstream_url`, which keeps the upstream's scheme, host, port and path and checks
//! them on the URL as parsed (a path the agent chose, `@host/` or `//host/`, never names
//! the host). A request the cassette does not hold in replay gets a 500 and fails the task
//! with the miss, whatever the agent makes of it.

use std::sync::{Arc, Mutex};

use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Body, Bytes, Incoming};
use hyper::{Request, Response, StatusCode};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::net::TcpListener;

use crate::cassette::{Cassette, Door, Miss, Passed, Traffic, Volatile};
use crate::llm::provider::Provider;
use crate::mcp::proxy::{not_local, random_token, serve_local, status_only};
use crate::redact::Secret;

/// The largest request body read, and the largest answer recorded.
const MAX_BODY: usize = 16 << 20;
/// The key the agent is given: a real key never reaches it.
pub const PLACEHOLDER_KEY: &str = "evalgate-model-endpoint";

/// What the endpoint did in one agent run.
#[derive(Debug, Default)]
struct Seen {
    requests: u32,
    replayed: u32,
    misses: Vec<String>,
}

pub struct ModelEndpoint {
    port: u16,
    token: String,
    task: tokio::task::JoinHandle<()>,
    seen: Arc<Mutex<Seen>>,
    /// Told of the first request the cassette did not hold.
    missed: Arc<tokio::sync::Notify>,
}

/// How the agent run went through the endpoint.
pub struct Ended {
    /// Every request it made through the endpoint was answered from the cassette (and it
    /// made one); what it sent another way is not seen.
    pub replayed: bool,
    /// The requests the cassette did not hold, each with why.
    pub misses: Vec<String>,
}

impl ModelEndpoint {
    /// evalgate's own variable naming the endpoint (below it, each provider's path).
    const OWN: &str = "EVALGATE_MODEL_ENDPOINT";

    /// Whether [`ModelEndpoint::env`] sets `name`: the agent's own `env` does not override it.
    pub fn sets(name: &str) -> bool {
        name == Self::OWN || Provider::endpoints().any(|p| name == p.base_url_env() || name == p.default_api_key_env())
    }

    /// Starts the endpoint of one agent run; its requests are keyed with `volatile`'s text
    /// replaced.
    pub async fn start(cassette: Arc<Cassette>, volatile: Volatile) -> std::io::Result<ModelEndpoint> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let port = listener.local_addr()?.port();
        let token = random_token()?;
        crate::redact::learn(Secret { value: token.clone(), placeholder: "[model endpoint]".into() });
        let seen = Arc::new(Mutex::new(Seen::default()));
        let (prefix, seen_by_task) = (format!("/{token}/"), seen.clone());
        let prefix_for_task = prefix.clone();
        let (volatile, missed) = (Arc::new(volatile), Arc::new(tokio::sync::Notify::new()));
        let missed_by_task = missed.clone();
        let task = serve_local(
            listener,
            move |request| match request.uri().path().starts_with(&prefix) {
                true => not_local(request, port),
                false => Some(404),
            },
            move |request| {
                let (cassette, seen, prefix) = (cassette.clone(), seen_by_task.clone(), prefix_for_task.clone());
                let (volatile, missed) = (volatile.clone(), missed_by_task.clone());
                async move {
                    let rest = request.uri().path().strip_prefix(&prefix).unwrap_or_default().to_owned();
                    answer(request, &rest, &cassette, (&seen, &missed), &volatile).await
                }
            },
        );
        Ok(ModelEndpoint { port, token, task, seen, missed })
    }

    /// The port it listens on, on the host's loopback.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The variables the agent gets: its SDKs' base URLs and keys, and evalgate's own name
    /// for the endpoint.
    pub fn env(&self) -> Vec<(String, String)> {
        let base = format!("http://127.0.0.1:{}/{}", self.port, self.token);
        let urls =
            Provider::endpoints().map(|p| (p.base_url_env().to_owned(), format!("{base}/{}", p.endpoint_path())));
        let keys = Provider::endpoints().map(|p| (p.default_api_key_env().to_owned(), PLACEHOLDER_KEY.to_owned()));
        let mut env: Vec<(String, String)> = urls.chain(keys).collect();
        env.push((Self::OWN.to_owned(), base));
        env
    }

    /// Done when a request the cassette does not hold comes: the run has failed, and an
    /// agent that retries the 500 need not be waited for.
    pub async fn missed(&self) {
        self.missed.notified().await;
    }

    pub fn stop(self) -> Ended {
        self.task.abort();
        let seen = std::mem::take(&mut *self.seen.lock().unwrap_or_else(|e| e.into_inner()));
        Ended { replayed: seen.requests > 0 && seen.replayed == seen.requests, misses: seen.misses }
    }
}

impl Drop for ModelEndpoint {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// One request: a provider's `endpoint_path` (`openai/v1/...`, `anthropic/...`) below the
/// secret prefix.
async fn answer(
    request: Request<Incoming>,
    rest: &str,
    cassette: &Cassette,
    (seen, missed): (&Mutex<Seen>, &tokio::sync::Notify),
    volatile: &Volatile,
) -> Response<Full<Bytes>> {
    let Some((provider, path)) = route(rest) else { return status_only(404) };
    let method = request.method().to_string();
    let forwarded: Vec<(String, String)> = request
        .headers()
        .iter()
        .filter(|(name, _)| {
            let name = name.as_str();
            name == "content-type" || Provider::endpoints().any(|p| name.starts_with(p.header_prefix()))
        })
        .filter_map(|(name, value)| Some((name.to_string(), value.to_str().ok()?.to_owned())))
        .collect();
    if request.body().size_hint().lower() > MAX_BODY as u64 {
        return status_only(413);
    }
    let Ok(body) = Limited::new(request.into_body(), MAX_BODY).collect().await else { return status_only(413) };
    let body = body.to_bytes();
    let text = String::from_utf8_lossy(&body);
    // A JSON body is keyed as JSON (the order of its keys does not matter), anything else as text.
    let keyed = serde_json::from_str::<Value>(&text).unwrap_or_else(|_| Value::String(text.to_string()));
    let key_request = json!({"method": method, "path": path, "body": volatile.normalize(keyed)});
    seen.lock().unwrap_or_else(|e| e.into_inner()).requests += 1;
    let live = || async { forward(provider, &method, path, &forwarded, body).await.map_err(Refused::Upstream) };
    match crate::cassette::pass(cassette, &EndpointDoor(provider), &key_request, live).await {
        Ok(Passed { answer, replayed }) => {
            seen.lock().unwrap_or_else(|e| e.into_inner()).replayed += u32::from(replayed);
            respond(answer.status, &answer.content_type, answer.body)
        }
        Err(Refused::Miss(message)) => {
            seen.lock().unwrap_or_else(|e| e.into_inner()).misses.push(message.clone());
            missed.notify_one();
            respond(
                500,
                "application/json",
                json!({"error": {"type": "cassette_miss", "message": message}}).to_string(),
            )
        }
        Err(Refused::Upstream(e)) => respond(502, "application/json", json!({"error": {"message": e}}).to_string()),
    }
}

/// The door of a command agent's own model calls, by the provider its path named.
struct EndpointDoor(Provider);

impl Door for EndpointDoor {
    fn traffic(&self) -> Traffic {
        Traffic::Endpoint(self.0.label())
    }

    /// Errors pass through unrecorded: a 429 recorded would be replayed for ever.
    fn keeps(&self, recorded: &Value) -> bool {
        recorded["status"].as_u64().is_some_and(|status| status < 400)
    }
}

/// An answer as the endpoint records and replays it: the upstream's status, content type
/// and body text.
#[derive(Serialize, Deserialize)]
struct Answer {
    #[serde(default = "ok")]
    status: u16,
    #[serde(default = "json_type")]
    content_type: String,
    #[serde(default)]
    body: String,
}

fn ok() -> u16 {
    200
}

fn json_type() -> String {
    "application/json".into()
}

/// Why a request got no answer: the cassette did not hold it (a 500, and the task fails),
/// or the upstream could not be asked (a 502).
enum Refused {
    Miss(String),
    Upstream(String),
}

impl From<Miss> for Refused {
    fn from(miss: Miss) -> Self {
        Refused::Miss(miss.message)
    }
}

/// The provider whose `endpoint_path` starts `rest`, and the path below it.
fn route(rest: &str) -> Option<(Provider, &str)> {
    Provider::endpoints().find_map(|p| rest.strip_prefix(p.endpoint_path()).map(|path| (p, path)))
}

/// The request asked of the real endpoint (evalgate's own `base_url_env`, else the official
/// one), with evalgate's key.
async fn forward(
    provider: Provider,
    method: &str,
    path: &str,
    headers: &[(String, String)],
    body: Bytes,
) -> Result<Answer, String> {
    let client = crate::llm::client();
    let base = std::env::var(provider.base_url_env())
        .ok()
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| provider.default_base_url().to_owned());
    let method = reqwest::Method::from_bytes(method.as_bytes()).map_err(|e| e.to_string())?;
    let mut request = client.request(method, upstream_url(&base, path)?).body(body);
    for (name, value) in headers {
        request = request.header(name, value);
    }
    if let Ok(key) = std::env::var(provider.default_api_key_env())
        && !key.is_empty()
    {
        crate::redact::learn(Secret::env(provider.default_api_key_env(), key.clone()));
        let (name, value) = provider.auth_header(&key);
        request = request.header(name, value);
    }
    let response = request.send().await.map_err(|e| crate::llm::describe_reqwest(&e))?;
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/json")
        .to_owned();
    let bytes = crate::http_body::read_capped(response, MAX_BODY).await.map_err(|e| match e {
        crate::http_body::BodyError::Read(e) => crate::llm::describe_reqwest(&e),
        crate::http_body::BodyError::TooLarge { cap, .. } => crate::http_body::BodyError::too_large(cap),
    })?;
    Ok(Answer { status, content_type, body: String::from_utf8_lossy(&bytes).into_owned() })
}

/// The URL a request for `path` (what follows the provider's `endpoint_path` below the secret
/// prefix: the agent chose it) is forwarded to: the upstream `base` with `path` below its
/// own, never a query. The one place a forwarded URL is made. Checked on the URL as parsed,
/// as the HTTP client reads it: its scheme, host, port and user are the upstream's and its
/// path is below the upstream's, or it is refused (`@host:port/`, `//host/`, `%2F%2Fhost`,
/// `\\host` and `/../` are a path's text here, and refused when they would leave it).
fn upstream_url(base: &str, path: &str) -> Result<reqwest::Url, String> {
    // The agent reads these errors: they never quote the upstream (it may hold a credential).
    let upstream = reqwest::Url::parse(base).map_err(|e| format!("evalgate's model base URL is not a URL: {e}"))?;
    if upstream.cannot_be_a_base() || upstream.host().is_none() {
        return Err("evalgate's model base URL is not an http(s) URL".into());
    }
    let root = upstream.path().trim_end_matches('/').to_owned();
    let mut url = upstream.clone();
    url.set_path(&format!("{root}/{}", path.strip_prefix('/').unwrap_or(path)));
    url.set_query(None);
    url.set_fragment(None);
    let url = reqwest::Url::parse(url.as_str()).map_err(|e| format!("the forwarded path {path:?}: {e}"))?;
    let same_origin = url.scheme() == upstream.scheme()
        && url.host() == upstream.host()
        && url.port_or_known_default() == upstream.port_or_known_default()
        && url.username() == upstream.username()
        && url.password() == upstream.password();
    if !same_origin || !url.path().starts_with(&format!("{root}/")) || path.contains('\\') {
        return Err(format!("the path {path:?} leaves the model endpoint: refused"));
    }
    if !path.is_empty() && !path.starts_with('/') {
        return Err(format!("the path {path:?} is not below the model endpoint: refused"));
    }
    Ok(url)
}

fn respond(status: u16, content_type: &str, body: String) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    if let Ok(value) = hyper::header::HeaderValue::from_str(content_type) {
        response.headers_mut().insert(hyper::header::CONTENT_TYPE, value);
    }
    response
}

#[cfg(test)]
mod tests {
    use super::{ModelEndpoint, Provider, route, upstream_url};

    /// A provider the endpoint does not serve compiles, passes its own tests and 404s
    /// through the endpoint: every provider is routed below its own path, and its SDK's
    /// variables are the endpoint's, which the agent's `env` does not override.
    #[test]
    fn every_provider_is_served_below_its_own_path_with_its_sdks_variables() {
        for p in Provider::ALL {
            let owner = p.endpoint_owner();
            assert_eq!(route(&format!("{}/chat", p.endpoint_path())), Some((owner, "/chat")), "{p:?}");
            assert!(ModelEndpoint::sets(p.base_url_env()) && ModelEndpoint::sets(p.default_api_key_env()), "{p:?}");
        }
        assert!(route("mistral/v1/chat").is_none() && !ModelEndpoint::sets("HOME"));
    }

    #[test]
    fn a_forwarded_url_keeps_the_upstreams_origin_and_path_or_is_refused() {
        for (base, path, url) in [
            ("https://api.openai.com/v1", "/chat/completions", "https://api.openai.com/v1/chat/completions"),
            ("http://127.0.0.1:9/", "/v1/messages", "http://127.0.0.1:9/v1/messages"),
            ("http://127.0.0.1:9", "//127.0.0.1:7/x", "http://127.0.0.1:9//127.0.0.1:7/x"),
            ("http://127.0.0.1:9/v1", "/%2F%2F127.0.0.1:7/x", "http://127.0.0.1:9/v1/%2F%2F127.0.0.1:7/x"),
        ] {
            assert_eq!(upstream_url(base, path).unwrap().as_str(), url, "{base} {path}");
        }
        for (base, path) in [
            ("http://127.0.0.1:9", "@127.0.0.1:7/v1/messages"),
            ("http://127.0.0.1:9/v1", "@127.0.0.1:7/chat"),
            ("http://127.0.0.1:9/v1", "/../admin"),
            ("http://127.0.0.1:9/v1", "/%2e%2e/admin"),
            ("http://127.0.0.1:9", "/\\\\127.0.0.1:7/x"),
        ] {
            assert!(upstream_url(base, path).is_err(), "{base} {path}");
        }
    }
}
