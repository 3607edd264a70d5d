//! MCP servers behind OAuth: a token endpoint (the HTTP stub) and a server written with the
//! Python SDK's resource-server helpers (tests/fixtures/mcp/oauth_server.py), which accepts
//! one bearer token and answers anything else with 401 and a `WWW-Authenticate` challenge.

use std::process::{Child, Command, Stdio};

use base64::Engine;

use crate::common::server::{Reply, Request, Server, closed_port};
use crate::common::{Test, unindent};
use crate::github::{TOKEN, action_run_with, bodies, github};
use crate::mcp::python;

const CLIENT_ID: &str = "ci-client-4821";
const CLIENT_SECRET: &str = "client-secret-never-shown-77";
const ACCESS_TOKEN: &str = "at-issued-by-the-stub-0b5e9d";

/// The Python server, killed when dropped.
struct OauthServer {
    child: Child,
    port: u16,
}

impl Drop for OauthServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts the fixture server (accepting `ACCESS_TOKEN`, naming `issuer` in its metadata) and
/// waits until it listens.
fn oauth_server(issuer: &str) -> OauthServer {
    let port = closed_port();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/mcp/oauth_server.py");
    let child = Command::new(python())
        .args([script, &port.to_string(), issuer])
        .env("EXPECTED_TOKEN", ACCESS_TOKEN)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let server = OauthServer { child, port };
    crate::common::server::wait_listening(port, "oauth_server.py");
    server
}

/// A token endpoint at `/token` that issues `ACCESS_TOKEN` to `CLIENT_ID`/`CLIENT_SECRET`,
/// sent either way RFC 6749 §2.3.1 allows, and answers anything else as an OAuth error.
fn token_endpoint() -> Server {
    token_endpoint_issuing(|_| (ACCESS_TOKEN.to_owned(), 3600))
}

/// A token endpoint whose `n`th token (from 1) and its `expires_in` are `issue(n)`.
fn token_endpoint_issuing(issue: impl Fn(usize) -> (String, u64) + Send + Sync + 'static) -> Server {
    let issued = std::sync::atomic::AtomicUsize::new(0);
    Server::start_with(move |r: &Request| {
        let basic = format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(format!("{CLIENT_ID}:{CLIENT_SECRET}"))
        );
        let posted = form(&r.body).contains(&("client_secret".into(), CLIENT_SECRET.into()));
        if r.path == "/token" && (r.header("authorization") == Some(basic.as_str()) || posted) {
            let (token, expires_in) = issue(issued.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1);
            let body = format!(r#"{{"access_token": "{token}", "token_type": "Bearer", "expires_in": {expires_in}}}"#);
            Reply::json(200, body)
        } else {
            Reply::json(401, r#"{"error": "invalid_client", "error_description": "Client authentication failed"}"#)
        }
    })
}

/// The fields of a form-encoded body, decoded.
fn form(body: &str) -> Vec<(String, String)> {
    fn decode(text: &str) -> String {
        let bytes = text.replace('+', " ").into_bytes();
        let mut out = Vec::new();
        let mut i = 0;
        while i < bytes.len() {
            if bytes[i] == b'%' && i + 2 < bytes.len() {
                out.push(u8::from_str_radix(std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap(), 16).unwrap());
                i += 3;
            } else {
                out.push(bytes[i]);
                i += 1;
            }
        }
        String::from_utf8(out).unwrap()
    }
    body.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (decode(k), decode(v))
        })
        .collect()
}

fn suite(server_url: &str, auth: &str) -> String {
    unindent(
        "
        evalgate: 1
        suite: oauth.demo
        mcp_servers:
          secured:
            url: '<server_url>'
        <auth>tasks:
          - id: add
            level: execution
            call: {server: secured, tool: add, arguments: {a: 2, b: 3}}
            grade: [{type: json, path: structuredContent.result, equals: 5}]
          - id: whoami
            level: execution
            call: {server: secured, tool: whoami}
            grade: [{type: json, path: structuredContent.result, matches: '^token '}]
        ",
    )
    .replace("<server_url>", server_url)
    .replace("<auth>", auth)
}

fn client_credentials(token_url: &str, extra: &str) -> String {
    format!(
        "    auth:\n      client_credentials:\n        token_url: '{token_url}'\n        client_id_env: EG_CLIENT_ID\n        client_secret_env: EG_CLIENT_SECRET\n        scope: 'tools:call'\n{extra}"
    )
}

#[test]
fn a_server_behind_oauth_is_reached_with_a_client_credentials_token_no_output_shows() {
    let tokens = token_endpoint();
    let server = oauth_server(&tokens.url());
    let server_url = format!("http://127.0.0.1:{}/mcp", server.port);
    let yaml = suite(&server_url, &client_credentials(&format!("{}/token", tokens.url()), ""));
    let api = github(5, Vec::new());
    let run = action_run_with(
        &api,
        &[("evalgate.yaml", &yaml)],
        &[],
        &[("EG_CLIENT_ID", CLIENT_ID), ("EG_CLIENT_SECRET", CLIENT_SECRET)],
    );
    run.run.expect_messages("evalgate: commented on pull request #5\n");
    run.run.expect_code(0);

    // One grant, at server start: client_secret_basic, the scope, and the server as resource.
    let grants = tokens.received();
    assert_eq!(grants.len(), 1, "one token request");
    let grant = &grants[0];
    assert_eq!((grant.method.as_str(), grant.path.as_str()), ("POST", "/token"));
    assert_eq!(grant.header("content-type"), Some("application/x-www-form-urlencoded"));
    let basic = base64::engine::general_purpose::STANDARD.encode(format!("{CLIENT_ID}:{CLIENT_SECRET}"));
    assert_eq!(grant.header("authorization"), Some(format!("Basic {basic}").as_str()));
    let owned = |pairs: &[(&str, &str)]| pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<Vec<_>>();
    assert_eq!(
        form(&grant.body),
        owned(&[("grant_type", "client_credentials"), ("resource", &server_url), ("scope", "tools:call")])
    );

    // The token reached the server (whoami quotes it), and no output shows it or the secret.
    let mut sinks = crate::secrets::files(&run.run.dir.join("evalgate-out"));
    let stdout: String =
        run.run.stdout.lines().filter(|l| !l.starts_with("::add-mask::")).collect::<Vec<_>>().join("\n");
    sinks.push(("stdout".into(), stdout));
    sinks.push(("stderr".into(), run.run.stderr.clone()));
    sinks.push(("step summary".into(), run.summary.clone()));
    sinks.push(("step outputs".into(), run.run.read("runner/output.txt")));
    sinks.push(("PR comment".into(), [bodies(&api, "POST"), bodies(&api, "PATCH")].concat().join("\n")));
    let mut hits = Vec::new();
    for (sink, text) in &sinks {
        for secret in [ACCESS_TOKEN, CLIENT_SECRET, CLIENT_ID, TOKEN] {
            if text.contains(secret) {
                hits.push(format!("{secret} in {sink}"));
            }
        }
    }
    assert!(hits.is_empty(), "secrets in sinks: {hits:#?}");
    let whoami = run.run.task("whoami");
    assert_eq!(whoami["status"], "passed", "{whoami}");
    assert!(run.run.read("evalgate-out/results.json").contains("token [secret:MCP access token]"));
    // The runner is told to mask the token as soon as evalgate has it.
    for secret in [ACCESS_TOKEN, CLIENT_SECRET] {
        assert!(run.run.stdout.contains(&format!("::add-mask::{secret}")), "no mask for {secret}");
    }
}

#[test]
fn a_token_about_to_expire_is_renewed_and_every_token_is_hidden() {
    let tokens = token_endpoint_issuing(|n| (format!("{ACCESS_TOKEN}-renewed-{n}"), 2));
    let server = oauth_server(&tokens.url());
    let server_url = format!("http://127.0.0.1:{}/mcp", server.port);
    // The token lives 2 s and is renewed after 1 s: `later` calls after it was.
    let later = "  - id: later\n    level: execution\n    setup: [{run: sleep 2.5}]\n    call: {server: secured, tool: whoami}\n    grade: [{type: json, path: structuredContent.result, matches: '^token '}]\n";
    let yaml = suite(&server_url, &client_credentials(&format!("{}/token", tokens.url()), "")) + later;
    let run = Test::new()
        .write("evalgate.yaml", &yaml)
        .env("EG_CLIENT_ID", CLIENT_ID)
        .env("EG_CLIENT_SECRET", CLIENT_SECRET)
        .args(&["run"])
        .run();
    run.expect_code(0);
    let issued = tokens.requests();
    assert!(issued >= 2, "the token was not renewed ({issued} issued)");
    let results = run.read("evalgate-out/results.json");
    assert!(results.contains("token [secret:MCP access token]"), "{results}");
    let mut sinks = crate::secrets::files(&run.dir.join("evalgate-out"));
    sinks.push(("stdout".into(), run.stdout.clone()));
    sinks.push(("stderr".into(), run.stderr.clone()));
    for (sink, text) in &sinks {
        assert!(!text.contains(&format!("{ACCESS_TOKEN}-renewed-")), "a token in {sink}:\n{text}");
    }
}

#[test]
fn token_endpoint_errors_and_unset_credentials_stop_the_run_at_preflight() {
    let tokens = token_endpoint();
    let token_url = format!("{}/token", tokens.url());
    let server_url = format!("http://127.0.0.1:{}/mcp", closed_port());
    // A wrong secret, sent in the body (client_secret_post): the OAuth error, never the secret.
    let wrong = "wrong-secret-3c2b1a";
    let yaml = suite(&server_url, &client_credentials(&token_url, "        client_auth: client_secret_post\n"));
    let run = Test::new()
        .write("evalgate.yaml", &yaml)
        .env("EG_CLIENT_ID", CLIENT_ID)
        .env("EG_CLIENT_SECRET", wrong)
        .args(&["run"])
        .run();
    run.expect_code(3);
    assert!(
        run.stderr_has(&format!(
            "MCP server `secured`: did not start: the token endpoint {token_url} refused the client-credentials grant: HTTP 401 Unauthorized: invalid_client: Client authentication failed"
        )),
        "{}",
        run.stderr
    );
    assert!(run.stderr_lacks(wrong) && !run.stdout.contains(wrong), "{}", run.stderr);
    let grant = &tokens.received()[0];
    assert_eq!(grant.header("authorization"), None, "client_secret_post sends no Basic credentials");
    let fields = form(&grant.body);
    assert!(fields.contains(&("client_id".into(), CLIENT_ID.into())), "{fields:?}");
    assert!(fields.contains(&("client_secret".into(), wrong.into())), "{fields:?}");

    // An unset variable is named by preflight before anything starts.
    let run = Test::new().write("evalgate.yaml", &yaml).env("EG_CLIENT_ID", CLIENT_ID).args(&["run"]).run();
    run.expect_code(3);
    assert!(
        run.stderr_has("environment variable `EG_CLIENT_SECRET`: is not set (used by MCP server `secured`)"),
        "{}",
        run.stderr
    );
    assert_eq!(tokens.requests(), 1, "no token request without the secret");
}

#[test]
fn a_server_that_answers_401_names_its_resource_metadata_and_how_to_authenticate() {
    let issuer = "https://auth.example.test";
    let server = oauth_server(issuer);
    let server_url = format!("http://127.0.0.1:{}/mcp", server.port);
    let metadata = format!("http://127.0.0.1:{}/.well-known/oauth-protected-resource/mcp", server.port);

    let run = Test::new().write("evalgate.yaml", &suite(&server_url, "")).args(&["run"]).run();
    run.expect_code(3);
    for expected in [
        format!("MCP server `secured`: did not start: {server_url} answered HTTP 401: WWW-Authenticate: Bearer"),
        format!("protected resource metadata: {metadata}"),
        format!("authorization server: {issuer}"),
        "give it a pre-issued token with `headers: {Authorization: \"Bearer {env.MCP_TOKEN}\"}`".to_owned(),
        "`auth: {client_credentials: {token_url, client_id_env, client_secret_env}}`".to_owned(),
    ] {
        assert!(run.stderr_has(&expected), "{expected}\nnot in:\n{}", run.stderr);
    }

    // A pre-issued token the server refuses: the same challenge, and what to check.
    let headers = "    headers: {Authorization: 'Bearer {env.EG_TOKEN}'}\n";
    let run = Test::new()
        .write("evalgate.yaml", &suite(&server_url, headers))
        .env("EG_TOKEN", "expired-token-6a7b8c")
        .args(&["run"])
        .run();
    run.expect_code(3);
    assert!(run.stderr_has(&format!("protected resource metadata: {metadata}")), "{}", run.stderr);
    assert!(run.stderr_has("the server refused the credentials evalgate sent"), "{}", run.stderr);
    assert!(run.stderr_lacks("expired-token-6a7b8c"), "{}", run.stderr);

    // With the right pre-issued token the same server works.
    let run = Test::new()
        .write("evalgate.yaml", &suite(&server_url, headers))
        .env("EG_TOKEN", ACCESS_TOKEN)
        .args(&["run"])
        .run();
    run.expect_code(0);
}

#[test]
fn auth_belongs_to_http_servers_without_an_authorization_header() {
    let yaml = "
        evalgate: 1
        suite: t
        mcp_servers:
          local:
            command: [./server]
            auth: {client_credentials: {token_url: 'https://a.test/token', client_id_env: ID, client_secret_env: SECRET}}
          both:
            url: 'https://mcp.test/mcp'
            headers: {Authorization: 'Bearer {env.T}'}
            auth: {client_credentials: {token_url: 'https://a.test/token', client_id_env: ID, client_secret_env: SECRET}}
          values:
            url: 'https://mcp.test/mcp'
            auth: {client_credentials: {token_url: 'a.test/token', client_id_env: 'sk-live-123', client_secret_env: SECRET}}
        tasks:
          - id: t
            level: execution
            call: {server: local, tool: x}
            grade: [{type: contains, value: x}]
        ";
    let run = Test::new().file("evalgate.yaml", yaml).args(&["check"]).run();
    run.expect_code(2);
    for expected in [
        "evalgate.yaml:6:11: mcp_servers.local.auth: `auth` belongs to HTTP servers (`url`): a stdio server gets its credentials from `env`",
        "evalgate.yaml:9:30: mcp_servers.both.headers.Authorization: an `Authorization` header and `auth` both set the credentials: keep one (`auth` sends the token it fetches)",
        "evalgate.yaml:13:44: mcp_servers.values.auth.client_credentials.token_url: `a.test/token` is not an http(s) URL",
        "evalgate.yaml:13:75: mcp_servers.values.auth.client_credentials.client_id_env: `sk-live-123` is not an environment variable name: write the variable's name (letters, digits and `_`), not its value",
    ] {
        assert!(run.stderr_has(expected), "{expected}\nnot in:\n{}", run.stderr);
    }
}
