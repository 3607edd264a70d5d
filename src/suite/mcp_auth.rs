//! `mcp_servers.NAME.auth`: how evalgate gets an OAuth access token for an HTTP server in
//! CI (the client-credentials grant), its compile step and what it uses. The token request
//! itself is `mcp::auth`'s.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Deserialize;

use crate::mcp::auth::{ClientAuth, ClientCredentials};
use crate::source::{KeyPath, ValidateCx};
use crate::template::{Scope, Template, Var};
use crate::uses::Uses;

/// OAuth for an HTTP server, without a browser: evalgate fetches an access token at server
/// start (and again at a restart) and sends it as `Authorization: Bearer …` on every request.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawAuth {
    /// The OAuth 2.0 client-credentials grant (RFC 6749 §4.4), for CI: a client id and secret
    /// from the environment buy a token at `token_url`.
    pub client_credentials: RawClientCredentials,
}

/// The client-credentials grant: `grant_type=client_credentials`, with `resource` (RFC 8707)
/// the server's `url` unless set.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawClientCredentials {
    /// The authorization server's token endpoint, e.g. https://auth.example.com/oauth/token;
    /// may use `{env.NAME}`.
    pub token_url: String,
    /// The environment variable holding the client id (checked at preflight).
    pub client_id_env: String,
    /// The environment variable holding the client secret (checked at preflight; its value is
    /// redacted everywhere, as is the token).
    pub client_secret_env: String,
    /// The scopes to ask for, space-separated.
    pub scope: Option<String>,
    /// An `audience` parameter, for authorization servers that want one (Auth0 and others).
    pub audience: Option<String>,
    /// The RFC 8707 resource indicator (default: the server's `url`, as MCP's authorization
    /// spec requires).
    pub resource: Option<String>,
    /// How evalgate authenticates to the token endpoint: `client_secret_basic` (default, HTTP
    /// Basic) or `client_secret_post` (id and secret in the form body).
    #[serde(default)]
    pub client_auth: ClientAuth,
}

/// The grant, compiled: its templates render from the environment when the server starts.
#[derive(Debug, Clone)]
pub struct ClientCredentialsSpec {
    token_url: Template,
    client_id_env: String,
    client_secret_env: String,
    scope: Option<Template>,
    audience: Option<Template>,
    resource: Option<Template>,
    client_auth: ClientAuth,
}

/// Compiles `auth` of server `path`, which is an HTTP server (`url`) when `http`, with these
/// `headers`. Every problem is recorded with its key path.
pub fn compile(
    cx: &mut ValidateCx,
    raw: &RawAuth,
    path: &KeyPath,
    http: bool,
    headers: &BTreeMap<String, String>,
) -> Option<ClientCredentialsSpec> {
    let at = path.key("auth");
    if !http {
        cx.error(&at, "`auth` belongs to HTTP servers (`url`): a stdio server gets its credentials from `env`");
        return None;
    }
    if let Some(name) = headers.keys().find(|k| k.eq_ignore_ascii_case("authorization")) {
        cx.error(
            &path.key("headers").key(name),
            "an `Authorization` header and `auth` both set the credentials: keep one (`auth` sends the token it fetches)",
        );
        return None;
    }
    let raw = &raw.client_credentials;
    let at = at.key("client_credentials");
    let mut ok = true;
    for (key, name) in [("client_id_env", &raw.client_id_env), ("client_secret_env", &raw.client_secret_env)] {
        if !is_env_name(name) {
            cx.error(
                &at.key(key),
                format!("`{name}` is not an environment variable name: write the variable's name (letters, digits and `_`), not its value"),
            );
            ok = false;
        }
    }
    if raw.token_url.trim().is_empty() {
        cx.error(&at.key("token_url"), "is empty: the authorization server's token endpoint");
        ok = false;
    } else if !raw.token_url.starts_with('{')
        && !raw.token_url.starts_with("https://")
        && !raw.token_url.starts_with("http://")
    {
        cx.error(&at.key("token_url"), format!("`{}` is not an http(s) URL", raw.token_url));
        ok = false;
    }
    let optional = |key: &str, text: &Option<String>, cx: &mut ValidateCx| match text {
        Some(t) => cx.template(t, Scope::Hook, &at.key(key)).map(Some),
        None => Some(None),
    };
    let scope = optional("scope", &raw.scope, cx);
    let audience = optional("audience", &raw.audience, cx);
    let resource = optional("resource", &raw.resource, cx);
    let token_url = cx.template(&raw.token_url, Scope::Hook, &at.key("token_url"));
    Some(ClientCredentialsSpec {
        token_url: token_url.filter(|_| ok)?,
        client_id_env: raw.client_id_env.clone(),
        client_secret_env: raw.client_secret_env.clone(),
        scope: scope?,
        audience: audience?,
        resource: resource?,
        client_auth: raw.client_auth,
    })
}

fn is_env_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

impl ClientCredentialsSpec {
    /// The token URL and parameters it renders, and the two variables it reads by name
    /// (which preflight checks and the redactor hides).
    pub fn uses(&self) -> Uses<'_> {
        let templates = std::iter::once(&self.token_url).chain(&self.scope).chain(&self.audience).chain(&self.resource);
        Uses { named_env: vec![&self.client_id_env, &self.client_secret_env], ..Uses::templates(templates) }
    }

    /// The grant as a connection needs it, rendered with `env`.
    pub fn render(&self, env: &dyn Fn(&Var) -> String) -> ClientCredentials {
        ClientCredentials {
            token_url: self.token_url.render(env),
            client_id_env: self.client_id_env.clone(),
            client_secret_env: self.client_secret_env.clone(),
            scope: self.scope.as_ref().map(|t| t.render(env)),
            audience: self.audience.as_ref().map(|t| t.render(env)),
            resource: self.resource.as_ref().map(|t| t.render(env)),
            client_auth: self.client_auth,
        }
    }
}
