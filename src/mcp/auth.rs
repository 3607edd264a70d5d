//! OAuth for MCP servers in CI, never interactive: an access token from the
//! client-credentials grant (RFC 6749 §4.4) on every request of a connection, renewed
//! before it expires, and a clear error when a server answers 401 with a
//! `WWW-Authenticate` challenge (RFC 9728).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine;
use futures_core::stream::BoxStream;
use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::service::ClientInitializeError;
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse, StreamableHttpResponseLimits,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use sse_stream::Sse;

use super::session::{Endpoint, McpError};
use crate::redact::Secret;

/// How evalgate authenticates to the token endpoint (RFC 6749 §2.3.1).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ClientAuth {
    /// HTTP Basic with the client id and secret (the default; every server must accept it).
    #[default]
    ClientSecretBasic,
    /// `client_id` and `client_secret` in the form body, for token endpoints that want them there.
    ClientSecretPost,
}

/// A client-credentials grant, rendered: what a connection needs to get its token.
#[derive(Debug, Clone)]
pub struct ClientCredentials {
    pub token_url: String,
    pub client_id_env: String,
    pub client_secret_env: String,
    pub scope: Option<String>,
    pub audience: Option<String>,
    /// RFC 8707 `resource`; `None` sends the server's URL.
    pub resource: Option<String>,
    pub client_auth: ClientAuth,
}

/// How long the token endpoint and the resource metadata may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(20);

/// How long before a token expires a new one is fetched.
const REFRESH_MARGIN: Duration = Duration::from_secs(60);

fn client() -> Result<reqwest::Client, McpError> {
    reqwest::Client::builder()
        .user_agent(concat!("evalgate/", env!("CARGO_PKG_VERSION")))
        // A redirect would resend the credentials elsewhere.
        .redirect(reqwest::redirect::Policy::none())
        .timeout(REQUEST_TIMEOUT)
        .build()
        .map_err(|e| McpError(format!("cannot build an HTTP client: {e}")))
}

/// The HTTP client of a server's transport: reqwest, as rmcp's own (no idle connections
/// kept, only same-origin 307/308 redirects followed), plus the bearer token of `auth`, when
/// set, on every request: fetched when the client is made (so a refusal stops the connection
/// at preflight, and a restart gets a new token) and again shortly before it expires.
#[derive(Clone)]
pub struct AuthorizedClient {
    http: reqwest::Client,
    grant: Option<Arc<Grant>>,
}

struct Grant {
    auth: ClientCredentials,
    server_url: String,
    token: tokio::sync::Mutex<Token>,
}

impl AuthorizedClient {
    pub async fn new(auth: Option<&ClientCredentials>, server_url: &str) -> Result<AuthorizedClient, McpError> {
        let http = reqwest::Client::builder()
            .pool_max_idle_per_host(0)
            .redirect(same_origin_redirects())
            .build()
            .map_err(|e| McpError(format!("cannot build an HTTP client: {e}")))?;
        let grant = match auth {
            Some(auth) => {
                let token = fetch_token(auth, server_url).await?;
                let grant = Grant { auth: auth.clone(), server_url: server_url.to_owned(), token: token.into() };
                Some(Arc::new(grant))
            }
            None => None,
        };
        Ok(AuthorizedClient { http, grant })
    }

    /// The token to send: the one the transport was given, else the grant's, renewed when due.
    async fn token(&self, given: Option<String>) -> Result<Option<String>, StreamableHttpError<reqwest::Error>> {
        let Some(grant) = &self.grant else { return Ok(given) };
        let mut token = grant.token.lock().await;
        if !token.is_fresh() {
            *token = fetch_token(&grant.auth, &grant.server_url)
                .await
                .map_err(|e| StreamableHttpError::UnexpectedServerResponse(e.0.into()))?;
        }
        Ok(Some(token.value.clone()))
    }
}

/// What rmcp's default client follows: a same-origin 307 or 308 (which keep the method and
/// body), at most 10 in a row; anything else is returned as the response.
fn same_origin_redirects() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        let same_origin = attempt.previous().first().is_some_and(|first| first.origin() == attempt.url().origin());
        let keeps_method = matches!(attempt.status().as_u16(), 307 | 308);
        if same_origin && keeps_method && attempt.previous().len() <= 10 { attempt.follow() } else { attempt.stop() }
    })
}

type Headers = HashMap<HeaderName, HeaderValue>;
type HttpError = StreamableHttpError<reqwest::Error>;

impl StreamableHttpClient for AuthorizedClient {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth: Option<String>,
        headers: Headers,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        let auth = self.token(auth).await?;
        self.http.post_message(uri, message, session_id, auth, headers).await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth: Option<String>,
        headers: Headers,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        let auth = self.token(auth).await?;
        self.http
            .post_message_with_max_sse_event_size(uri, message, session_id, auth, headers, max_sse_event_size)
            .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth: Option<String>,
        headers: Headers,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        let auth = self.token(auth).await?;
        self.http.post_message_with_response_limits(uri, message, session_id, auth, headers, limits).await
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth: Option<String>,
        headers: Headers,
    ) -> Result<(), HttpError> {
        let auth = self.token(auth).await?;
        self.http.delete_session(uri, session_id, auth, headers).await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth: Option<String>,
        headers: Headers,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, HttpError> {
        let auth = self.token(auth).await?;
        self.http.get_stream(uri, session_id, last_event_id, auth, headers).await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth: Option<String>,
        headers: Headers,
        max_sse_event_size: usize,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, HttpError> {
        let auth = self.token(auth).await?;
        self.http
            .get_stream_with_max_sse_event_size(uri, session_id, last_event_id, auth, headers, max_sse_event_size)
            .await
    }
}

fn env_value(name: &str) -> Result<String, McpError> {
    match std::env::var(name) {
        Ok(v) if !v.is_empty() => Ok(v),
        _ => Err(McpError(format!("the environment variable `{name}` is not set (auth.client_credentials)"))),
    }
}

/// The form body of the grant; the client's credentials only with `client_secret_post`.
fn grant_form(auth: &ClientCredentials, server_url: &str, id: &str, secret: &str) -> String {
    let resource = auth.resource.as_deref().unwrap_or(server_url);
    let mut fields = vec![("grant_type", "client_credentials"), ("resource", resource)];
    fields.extend(auth.scope.as_deref().filter(|s| !s.is_empty()).map(|s| ("scope", s)));
    fields.extend(auth.audience.as_deref().filter(|s| !s.is_empty()).map(|s| ("audience", s)));
    if auth.client_auth == ClientAuth::ClientSecretPost {
        fields.extend([("client_id", id), ("client_secret", secret)]);
    }
    fields.iter().map(|(k, v)| format!("{k}={}", form_encode(v))).collect::<Vec<_>>().join("&")
}

/// `application/x-www-form-urlencoded` (RFC 6749 appendix B): unreserved bytes as they are,
/// space as `+`, the rest percent-encoded.
fn form_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'*' => out.push(char::from(b)),
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// RFC 6749 §2.3.1: the id and secret are form-encoded before they are joined and encoded.
fn basic_credentials(id: &str, secret: &str) -> String {
    let pair = format!("{}:{}", form_encode(id), form_encode(secret));
    format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(pair))
}

/// An access token, and when to fetch the next one.
#[derive(Clone)]
struct Token {
    value: String,
    /// Shortly before `expires_in` runs out (a minute, or half the lifetime if shorter);
    /// `None`: the server did not say it expires.
    refresh_at: Option<Instant>,
}

impl Token {
    fn is_fresh(&self) -> bool {
        self.refresh_at.is_none_or(|at| Instant::now() < at)
    }
}

async fn fetch_token(auth: &ClientCredentials, server_url: &str) -> Result<Token, McpError> {
    let id = env_value(&auth.client_id_env)?;
    let secret = env_value(&auth.client_secret_env)?;
    // Known to the redactor before the request: an error that quotes it shows a placeholder.
    crate::redact::learn(Secret::env(&auth.client_secret_env, secret.clone()));
    let url = &auth.token_url;
    let issued = Instant::now();
    let mut request = client()?
        .post(url)
        .header(reqwest::header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .header(reqwest::header::ACCEPT, "application/json")
        .body(grant_form(auth, server_url, &id, &secret));
    if auth.client_auth == ClientAuth::ClientSecretBasic {
        request = request.header(reqwest::header::AUTHORIZATION, basic_credentials(&id, &secret));
    }
    let failed = |why: String| McpError(format!("the token endpoint {url} {why}"));
    let response = request.send().await.map_err(|e| failed(format!("did not answer: {}", without_url(&e))))?;
    let status = response.status();
    let body = response
        .text()
        .await
        .map_err(|e| failed(format!("answered {status} but its body was unreadable: {}", without_url(&e))))?;
    let json: Option<Value> = serde_json::from_str(&body).ok();
    if !status.is_success() {
        return Err(failed(format!(
            "refused the client-credentials grant: HTTP {status}{}",
            oauth_error(json.as_ref(), &body)
        )));
    }
    let json = json.ok_or_else(|| failed(format!("answered {status} without a JSON body: {}", excerpt(&body))))?;
    let Some(token) = json.get("access_token").and_then(Value::as_str).filter(|t| !t.is_empty()) else {
        return Err(failed(format!("answered {status} without an `access_token`{}", oauth_error(Some(&json), &body))));
    };
    crate::redact::learn(Secret { value: token.to_owned(), placeholder: "[secret:MCP access token]".into() });
    match json.get("token_type").and_then(Value::as_str) {
        // RFC 6749 makes `token_type` required, and case-insensitive; some servers leave it out.
        None => {}
        Some(t) if t.eq_ignore_ascii_case("bearer") => {}
        Some(other) => {
            return Err(failed(format!(
                "issued a token of type `{other}`; evalgate sends Bearer tokens (RFC 6750) only"
            )));
        }
    }
    let lifetime = json.get("expires_in").and_then(Value::as_f64).filter(|s| s.is_finite() && *s >= 0.0);
    let refresh_at = lifetime.map(|seconds| {
        let lifetime = Duration::from_secs_f64(seconds.min(1e9));
        issued + lifetime.saturating_sub(REFRESH_MARGIN.min(lifetime / 2))
    });
    Ok(Token { value: token.to_owned(), refresh_at })
}

/// reqwest's error and its causes (`connection refused`), without the URL the message
/// already names.
fn without_url(e: &reqwest::Error) -> String {
    let mut text = e.to_string();
    if let Some(url) = e.url() {
        text = text.replace(&format!(" for url ({url})"), "");
    }
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        text.push_str(&format!(": {c}"));
        cause = c.source();
    }
    text
}

/// `: invalid_client: Client authentication failed` from an RFC 6749 §5.2 error body, else
/// a short excerpt of the body.
fn oauth_error(json: Option<&Value>, body: &str) -> String {
    let field = |k: &str| json.and_then(|j| j.get(k)).and_then(Value::as_str).filter(|s| !s.is_empty());
    match (field("error"), field("error_description")) {
        (Some(e), Some(d)) => format!(": {e}: {d}"),
        (Some(e), None) => format!(": {e}"),
        (None, _) if body.trim().is_empty() => String::new(),
        (None, _) => format!(": {}", excerpt(body)),
    }
}

fn excerpt(body: &str) -> String {
    let line = body.split_whitespace().collect::<Vec<_>>().join(" ");
    match line.char_indices().nth(200) {
        Some((i, _)) => format!("{}…", &line[..i]),
        None => line,
    }
}

/// Why the handshake with an HTTP server failed. A 401 (or 403) with a `WWW-Authenticate`
/// challenge names the resource metadata URL, the authorization server it names (fetched,
/// when it answers) and how to give evalgate a token.
pub async fn handshake_failed(endpoint: &Endpoint, error: ClientInitializeError) -> McpError {
    let Endpoint::Http { url, headers, auth } = endpoint else {
        return McpError(format!("handshake failed: {error}"));
    };
    let Some(challenge) = error.auth_challenge() else {
        return McpError(format!("handshake with {url} failed: {error}"));
    };
    let params = challenge_params(challenge);
    let param = |k: &str| params.iter().find(|(n, _)| n.eq_ignore_ascii_case(k)).map(|(_, v)| v.as_str());
    // rmcp reports a 401 and a 403 alike; RFC 6750 §3.1 gives a missing scope 403.
    let status = if param("error") == Some("insufficient_scope") { 403 } else { 401 };
    let mut message = format!("{url} answered HTTP {status}: WWW-Authenticate: {challenge}");
    if let Some(metadata) = param("resource_metadata") {
        message.push_str(&format!("\n    protected resource metadata: {metadata}"));
        if let Some(servers) = authorization_servers(metadata).await {
            message.push_str(&format!("\n    authorization server: {servers}"));
        }
    }
    let sent_credentials = auth.is_some() || headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("authorization"));
    let help = match (status, sent_credentials) {
        (403, _) => format!(
            "the token lacks a scope the server requires{}: set `scope` in `auth.client_credentials`, or issue a token with it",
            param("scope").map(|s| format!(" (`{s}`)")).unwrap_or_default()
        ),
        (_, true) => "the server refused the credentials evalgate sent: check the token (or the client, its scope and its `resource`/`audience`)".to_owned(),
        (_, false) => "the server requires OAuth: give it a pre-issued token with `headers: {Authorization: \"Bearer {env.MCP_TOKEN}\"}`, or let evalgate fetch one with `auth: {client_credentials: {token_url, client_id_env, client_secret_env}}` (docs/mcp.md, \"Servers behind OAuth\")".to_owned(),
    };
    message.push_str(&format!("\n    {help}"));
    McpError(message)
}

/// The `name=value` parameters of a challenge (`Bearer realm="x", resource_metadata="…"`),
/// quotes removed.
fn challenge_params(challenge: &str) -> Vec<(String, String)> {
    let rest = challenge.trim_start();
    let rest = rest.split_once(char::is_whitespace).map_or("", |(_, r)| r);
    let mut params = Vec::new();
    let mut chars = rest.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace() || *c == ',') {
            chars.next();
        }
        let name: String = chars.by_ref().take_while(|c| *c != '=').collect::<String>().trim().to_owned();
        if name.is_empty() {
            return params;
        }
        let mut value = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            while let Some(c) = chars.next() {
                match c {
                    '\\' => value.extend(chars.next()),
                    '"' => break,
                    c => value.push(c),
                }
            }
        } else {
            value = chars.by_ref().take_while(|c| *c != ',').collect::<String>().trim().to_owned();
        }
        params.push((name, value));
    }
}

/// `authorization_servers` of the protected resource metadata (RFC 9728 §2), when it answers.
async fn authorization_servers(metadata_url: &str) -> Option<String> {
    if !(metadata_url.starts_with("https://") || metadata_url.starts_with("http://")) {
        return None;
    }
    let response = client().ok()?.get(metadata_url).send().await.ok()?;
    if !response.status().is_success() {
        return None;
    }
    let json: Value = response.json().await.ok()?;
    let servers: Vec<&str> = json.get("authorization_servers")?.as_array()?.iter().filter_map(Value::as_str).collect();
    (!servers.is_empty()).then(|| servers.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn credentials(client_auth: ClientAuth) -> ClientCredentials {
        ClientCredentials {
            token_url: "http://127.0.0.1:1/token".into(),
            client_id_env: "ID".into(),
            client_secret_env: "SECRET".into(),
            scope: Some("tools:read tools:call".into()),
            audience: None,
            resource: None,
            client_auth,
        }
    }

    #[test]
    fn the_grant_carries_the_resource_and_scope_and_the_secret_only_when_posted() {
        let url = "http://127.0.0.1:8/mcp";
        assert_eq!(
            grant_form(&credentials(ClientAuth::ClientSecretBasic), url, "id", "s&cret"),
            "grant_type=client_credentials&resource=http%3A%2F%2F127.0.0.1%3A8%2Fmcp&scope=tools%3Aread+tools%3Acall"
        );
        let post = grant_form(&credentials(ClientAuth::ClientSecretPost), url, "id", "s&cret");
        assert!(post.ends_with("&client_id=id&client_secret=s%26cret"), "{post}");
    }

    #[test]
    fn basic_credentials_are_form_encoded_first() {
        // RFC 6749 §2.3.1: "a:b" is "a%3Ab" before the base64.
        let header = basic_credentials("my client", "a:b");
        let decoded = base64::engine::general_purpose::STANDARD.decode(header.strip_prefix("Basic ").unwrap()).unwrap();
        assert_eq!(String::from_utf8(decoded).unwrap(), "my+client:a%3Ab");
    }

    #[test]
    fn challenge_parameters_are_read_quoted_or_not() {
        let params = challenge_params(
            r#"Bearer error="invalid_token", resource_metadata="http://h/.well-known/oauth-protected-resource/mcp",scope=read, realm="a \"b\"""#,
        );
        assert_eq!(
            params,
            [
                ("error".to_owned(), "invalid_token".to_owned()),
                ("resource_metadata".to_owned(), "http://h/.well-known/oauth-protected-resource/mcp".to_owned()),
                ("scope".to_owned(), "read".to_owned()),
                ("realm".to_owned(), "a \"b\"".to_owned()),
            ]
        );
        assert!(challenge_params("Bearer").is_empty());
    }

    #[test]
    fn token_endpoint_errors_show_the_oauth_error_or_an_excerpt() {
        let json = serde_json::json!({"error": "invalid_client", "error_description": "bad secret"});
        assert_eq!(oauth_error(Some(&json), ""), ": invalid_client: bad secret");
        assert_eq!(oauth_error(None, "<html>\n  oops </html>"), ": <html> oops </html>");
        assert_eq!(oauth_error(None, "  "), "");
    }
}
