//! The client-credentials grant (RFC 6749 §4.4): the token request, its client
//! authentication and how its errors read.

use std::time::{Duration, Instant};

use base64::Engine;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::http_body::{BodyError, read_capped};
use crate::mcp::session::McpError;
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
/// The most read of an authorization server's answer (a token is a few kilobytes).
pub(super) const MAX_ANSWER: usize = 1 << 20;

/// How long before a token expires a new one is fetched.
const REFRESH_MARGIN: Duration = Duration::from_secs(60);

pub(super) fn client() -> Result<reqwest::Client, McpError> {
    crate::http_body::client_builder()
        .user_agent(concat!("evalgate/", env!("CARGO_PKG_VERSION")))
        // A redirect would resend the credentials elsewhere.
        .redirect(reqwest::redirect::Policy::none())
        .timeout(REQUEST_TIMEOUT)
        .build()
        .map_err(|e| McpError(format!("cannot build an HTTP client: {e}")))
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
pub(super) struct Token {
    pub(super) value: String,
    /// Shortly before `expires_in` runs out (a minute, or half the lifetime if shorter);
    /// `None`: the server did not say it expires.
    refresh_at: Option<Instant>,
}

impl Token {
    pub(super) fn is_fresh(&self) -> bool {
        self.refresh_at.is_none_or(|at| Instant::now() < at)
    }
}

pub(super) async fn fetch_token(auth: &ClientCredentials, server_url: &str) -> Result<Token, McpError> {
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
    let body = read_capped(response, MAX_ANSWER).await.map_err(|e| match e {
        BodyError::Read(e) => failed(format!("answered {status} but its body was unreadable: {}", without_url(&e))),
        BodyError::TooLarge { cap, .. } => {
            failed(format!("answered {status} with a body {}", BodyError::too_large(cap)))
        }
    })?;
    let body = String::from_utf8_lossy(&body);
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
    fn token_endpoint_errors_show_the_oauth_error_or_an_excerpt() {
        let json = serde_json::json!({"error": "invalid_client", "error_description": "bad secret"});
        assert_eq!(oauth_error(Some(&json), ""), ": invalid_client: bad secret");
        assert_eq!(oauth_error(None, "<html>\n  oops </html>"), ": <html> oops </html>");
        assert_eq!(oauth_error(None, "  "), "");
    }
}
