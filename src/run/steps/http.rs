//! `http` steps and graders: one request, its response checked against `expect`.

use std::sync::OnceLock;
use std::time::Duration;

use super::outcome::{Leaf, Response, content_failures};
use crate::excerpt::excerpt;
use crate::llm::describe_reqwest;
use crate::process::OUTPUT_CAP;
use crate::suite::model::{HttpBody, HttpRequest};
use crate::template::Bindings;

fn client() -> &'static reqwest::Client {
    static CLIENT: OnceLock<reqwest::Client> = OnceLock::new();
    CLIENT.get_or_init(|| {
        reqwest::Client::builder()
            .user_agent(concat!("evalgate/", env!("CARGO_PKG_VERSION")))
            .build()
            .unwrap_or_else(|_| reqwest::Client::new())
    })
}

/// Sends `req`; `timeout` overrides the request's own when the step sets one.
pub async fn send(req: &HttpRequest, timeout: Option<Duration>, bindings: &Bindings) -> Leaf {
    let url = bindings.render(&req.url);
    let mut leaf = Leaf { action: format!("{} {url}", req.method), ..Leaf::default() };
    let method = reqwest::Method::from_bytes(req.method.as_bytes()).unwrap_or(reqwest::Method::GET);
    let mut builder = client().request(method, &url).timeout(timeout.unwrap_or(req.timeout));
    for (name, value) in &req.headers {
        builder = builder.header(name, bindings.render(value));
    }
    builder = match &req.body {
        Some(HttpBody::Text(t)) => builder.body(bindings.render(t)),
        Some(HttpBody::Json(j)) => builder.json(&j.render(&|v| bindings.lookup(v))),
        None => builder,
    };
    if let Some(missing) = bindings.take_missing() {
        leaf.failure = Some(missing);
        leaf.error = true;
        return leaf;
    }
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
        failures.extend(content_failures(&req.expect.body, &body, "the body", bindings));
    }
    if !failures.is_empty() {
        leaf.failure = Some(failures.join("; "));
    }
    leaf.stdout = body.clone();
    leaf.response = Some(Response { status, headers, body });
    leaf
}
