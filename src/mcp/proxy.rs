//! The recording proxy: a streamable-HTTP MCP endpoint on 127.0.0.1 that forwards
//! `tools/list` and `tools/call` to a real server and records every call, so evalgate can
//! grade the tool use of agents it does not control (any CLI that reads an MCP config).
//!
//! It answers each POST with a plain JSON response (allowed by the transport), needs no
//! SSE stream, and serves one agent run. Only that run may call it: its path holds a
//! secret of the proxy's own (`/mcp/TOKEN`, in the URL handed to the agent), the `Host` must
//! be the proxy's (no DNS rebinding), a request with an `Origin` (a browser's) is refused,
//! and a POST must say `application/json` (which a browser's simple request cannot); any
//! other local process or web page gets 404, 403 or 415 and reaches no tool. The agent is
//! not trusted either: hyper parses the
//! requests, headers are bounded (`MAX_HEAD`, 100 of them) and a body over `MAX_BODY` is refused
//! unread (413), whatever its `Content-Length` says. Dropping the proxy (its agent run
//! ended or was cancelled) closes the listener and every connection.

use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Body, Bytes, Incoming};
use hyper::{Method, Request, Response, StatusCode};
use serde_json::{Value, json};
use tokio::net::TcpListener;

use super::servers::Server;
use crate::trace::ToolCall;

/// Time a forwarded tool call may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(300);
/// The largest request body read (a JSON-RPC message).
const MAX_BODY: usize = 16 * 1024 * 1024;
/// The largest request line and headers (431 beyond).
const MAX_HEAD: usize = 64 * 1024;

type Calls = Arc<Mutex<Vec<(Instant, ToolCall)>>>;

pub struct Proxy {
    pub port: u16,
    /// The secret in the proxy's path.
    token: String,
    task: tokio::task::JoinHandle<()>,
    calls: Calls,
}

impl Proxy {
    pub async fn start(server: Arc<Server>) -> std::io::Result<Proxy> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let port = listener.local_addr()?.port();
        let token = random_token()?;
        let gate = Arc::new(Gate { path: format!("/mcp/{token}"), port });
        let calls = Calls::default();
        let recorded = calls.clone();
        let task = serve_local(
            listener,
            move |request| gate.refuses(request),
            move |request| {
                let (server, recorded) = (server.clone(), recorded.clone());
                async move { handle(request, &server, &recorded).await }
            },
        );
        Ok(Proxy { port, token, task, calls })
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp/{}", self.port, self.token)
    }

    /// Stops the proxy; the calls it recorded, with when each started.
    pub fn stop(self) -> Vec<(Instant, ToolCall)> {
        self.task.abort();
        std::mem::take(&mut *self.calls.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Serves one agent run's local endpoint on `listener` until the returned task is aborted
/// (its connections die with it). hyper parses the requests, a request's head is bounded
/// (`MAX_HEAD`, 100 headers); a request `refuses` gives a status is answered with it, after its
/// body is read up to `MAX_BODY` (closing on an unread body resets the connection, and the
/// client may lose the answer); every other goes to `handle`.
pub fn serve_local<R, H, F>(listener: TcpListener, refuses: R, handle: H) -> tokio::task::JoinHandle<()>
where
    R: Fn(&Request<Incoming>) -> Option<u16> + Send + Sync + 'static,
    H: Fn(Request<Incoming>) -> F + Send + Sync + 'static,
    F: std::future::Future<Output = Response<Full<Bytes>>> + Send + 'static,
{
    let (refuses, handle) = (Arc::new(refuses), Arc::new(handle));
    tokio::spawn(async move {
        // The connections die with the accept loop (the set aborts them when dropped).
        let mut connections = tokio::task::JoinSet::new();
        while let Ok((stream, _)) = listener.accept().await {
            let (refuses, handle) = (refuses.clone(), handle.clone());
            let service = hyper::service::service_fn(move |request: Request<Incoming>| {
                let (refuses, handle) = (refuses.clone(), handle.clone());
                async move {
                    let response = match refuses(&request) {
                        Some(status) => {
                            let _ = Limited::new(request.into_body(), MAX_BODY).collect().await;
                            status_only(status)
                        }
                        None => handle(request).await,
                    };
                    Ok::<_, Infallible>(response)
                }
            });
            connections.spawn(async move {
                let _ = hyper::server::conn::http1::Builder::new()
                    .max_header_size(MAX_HEAD)
                    .max_headers(100)
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                    .await;
            });
            while connections.try_join_next().is_some() {}
        }
    })
}

/// 128 bits from the system's random source (ring's, which the TLS stack uses), in hex.
pub fn random_token() -> std::io::Result<String> {
    let mut bytes = [0u8; 16];
    rustls::crypto::ring::default_provider()
        .secure_random
        .fill(&mut bytes)
        .map_err(|_| std::io::Error::other("the system's random source failed"))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Who may call the proxy: the agent it was started for, which knows its path.
struct Gate {
    path: String,
    port: u16,
}

impl Gate {
    /// The status a request is refused with, if it is.
    fn refuses(&self, request: &Request<Incoming>) -> Option<u16> {
        let header = |name| request.headers().get(name).and_then(|v| v.to_str().ok());
        if request.uri().path() != self.path {
            return Some(404);
        }
        if let Some(status) = not_local(request, self.port) {
            return Some(status);
        }
        let json = header(hyper::header::CONTENT_TYPE)
            .is_some_and(|t| t.split(';').next().is_some_and(|m| m.trim().eq_ignore_ascii_case("application/json")));
        (request.method() == Method::POST && !json).then_some(415)
    }
}

/// 403 for a request that is not a local process's: a `Host` other than the listener's
/// own (DNS rebinding), or an `Origin` (a web page's).
pub fn not_local<B>(request: &Request<B>, port: u16) -> Option<u16> {
    let host = request.headers().get(hyper::header::HOST).and_then(|v| v.to_str().ok());
    let ours = [format!("127.0.0.1:{port}"), format!("localhost:{port}")];
    let foreign = !host.is_some_and(|host| ours.iter().any(|o| o.eq_ignore_ascii_case(host)));
    (foreign || request.headers().contains_key(hyper::header::ORIGIN)).then_some(403)
}

pub fn status_only(status: u16) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::new()));
    *response.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::FORBIDDEN);
    response
}

async fn handle(
    request: Request<Incoming>,
    server: &Server,
    recorded: &Mutex<Vec<(Instant, ToolCall)>>,
) -> Response<Full<Bytes>> {
    let (status, reply) = match *request.method() {
        Method::POST => {
            // A `Content-Length` over the limit is refused before a byte of the body is read.
            let announced = request.body().size_hint().lower();
            let body = if announced > MAX_BODY as u64 {
                None
            } else {
                Limited::new(request.into_body(), MAX_BODY).collect().await.ok()
            };
            match body {
                Some(body) => respond(&body.to_bytes(), server, recorded).await,
                None => {
                    let message = format!("request body over {} MiB", MAX_BODY >> 20);
                    (413, Some(json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32600, "message": message}})))
                }
            }
        }
        Method::DELETE => (200, None),
        // No server-initiated stream.
        _ => (405, None),
    };
    let mut response = Response::new(Full::new(Bytes::from(reply.map(|v| v.to_string()).unwrap_or_default())));
    *response.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let headers = response.headers_mut();
    headers.insert(hyper::header::CONTENT_TYPE, hyper::header::HeaderValue::from_static("application/json"));
    headers.insert("mcp-session-id", hyper::header::HeaderValue::from_static("evalgate-proxy"));
    response
}

/// One JSON-RPC message: a notification gets 202, a request its result or error.
async fn respond(body: &[u8], server: &Server, recorded: &Mutex<Vec<(Instant, ToolCall)>>) -> (u16, Option<Value>) {
    let Ok(message) = serde_json::from_slice::<Value>(body) else {
        return (200, Some(json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "parse error"}})));
    };
    let Some(id) = message.get("id").cloned() else { return (202, None) };
    let params = message.get("params").cloned().unwrap_or(Value::Null);
    let result = match message.get("method").and_then(Value::as_str).unwrap_or_default() {
        "initialize" => Ok(json!({
            "protocolVersion": params.get("protocolVersion").and_then(Value::as_str).unwrap_or(&server.info.protocol_version),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": format!("evalgate-proxy/{}", server.name), "version": env!("CARGO_PKG_VERSION")},
        })),
        "ping" => Ok(json!({})),
        // The tools the server would refuse are not listed; a call to one gets a tool error.
        "tools/list" => Ok(json!({"tools": server.callable_tools().map(|t| {
            let mut tool = json!({"name": t.name, "description": t.description, "inputSchema": t.input_schema});
            if let Some(schema) = &t.output_schema {
                tool["outputSchema"] = schema.clone();
            }
            tool
        }).collect::<Vec<_>>()})),
        "tools/call" => {
            let name = params.get("name").and_then(Value::as_str).unwrap_or_default().to_owned();
            let arguments = params.get("arguments").cloned().unwrap_or(json!({}));
            let started = Instant::now();
            let outcome = server.call_for_agent(&name, arguments.clone(), CALL_TIMEOUT).await;
            let (result, violation) = match &outcome {
                Ok(called) => (called.result.clone(), called.violation.clone()),
                Err(e) => (json!({"error": e.0}), None),
            };
            let duration_ms = Some(started.elapsed().as_millis() as u64);
            let server = Some(server.name.clone());
            let call = ToolCall { name, server, arguments, result: Some(result), duration_ms, violation, status: None };
            recorded.lock().unwrap_or_else(|e| e.into_inner()).push((started, call));
            outcome.map(|called| called.result).map_err(|e| e.0)
        }
        other => Err(format!("method {other} is not supported by the evalgate proxy")),
    };
    let reply = match result {
        Ok(r) => json!({"jsonrpc": "2.0", "id": id, "result": r}),
        Err(m) => json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32603, "message": m}}),
    };
    (200, Some(reply))
}
