//! A server that asks for a token it did not get: its `WWW-Authenticate` challenge (RFC 6750,
//! RFC 9728) read into an error that says where its metadata is and how to configure auth.

use rmcp::service::ClientInitializeError;
use serde_json::Value;

use super::grant::client;
use crate::mcp::session::{Endpoint, McpError};

/// When the handshake with an HTTP server failed on a 401 (or 403) with a `WWW-Authenticate`
/// challenge: the error naming the resource metadata URL, the authorization server it names
/// (fetched, when it answers) and how to give evalgate a token.
pub async fn refused(endpoint: &Endpoint, error: &ClientInitializeError) -> Option<McpError> {
    let Endpoint::Http { url, headers, auth } = endpoint else { return None };
    let challenge = error.auth_challenge()?;
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
    Some(McpError(message))
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
    let body = crate::http_body::read_capped(response, super::grant::MAX_ANSWER).await.ok()?;
    let json: Value = serde_json::from_slice(&body).ok()?;
    let servers: Vec<&str> = json.get("authorization_servers")?.as_array()?.iter().filter_map(Value::as_str).collect();
    (!servers.is_empty()).then(|| servers.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
