//! The recording proxy: a minimal streamable-HTTP MCP endpoint on 127.0.0.1 that forwards
//! `tools/list` and `tools/call` to a real server and records every call, so evalgate can
//! grade the tool use of agents it does not control (any CLI that reads an MCP config).
//!
//! It answers each POST with a plain JSON response (allowed by the transport), needs no
//! SSE stream, and serves one agent run.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

use super::servers::Server;
use crate::trace::ToolCall;

/// Time a forwarded tool call may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(300);

pub struct Proxy {
    pub port: u16,
    task: tokio::task::JoinHandle<()>,
    calls: Arc<Mutex<Vec<(Instant, ToolCall)>>>,
}

impl Proxy {
    pub async fn start(server: Arc<Server>) -> std::io::Result<Proxy> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let port = listener.local_addr()?.port();
        let calls = Arc::new(Mutex::new(Vec::new()));
        let recorded = calls.clone();
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let (server, recorded) = (server.clone(), recorded.clone());
                tokio::spawn(async move {
                    let _ = serve(stream, &server, &recorded).await;
                });
            }
        });
        Ok(Proxy { port, task, calls })
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }

    /// Stops the proxy; the calls it recorded, with when each started.
    pub fn stop(self) -> Vec<(Instant, ToolCall)> {
        self.task.abort();
        std::mem::take(&mut *self.calls.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

async fn serve(stream: TcpStream, server: &Server, recorded: &Mutex<Vec<(Instant, ToolCall)>>) -> std::io::Result<()> {
    let (read, mut write) = stream.into_split();
    let mut reader = BufReader::new(read);
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).await? == 0 {
            return Ok(());
        }
        let method = line.split_whitespace().next().unwrap_or("").to_owned();
        let mut length = 0usize;
        loop {
            let mut header = String::new();
            if reader.read_line(&mut header).await? == 0 || header.trim().is_empty() {
                break;
            }
            if let Some((k, v)) = header.split_once(':')
                && k.trim().eq_ignore_ascii_case("content-length")
            {
                length = v.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body).await?;
        let (status, reply) = match method.as_str() {
            "POST" => respond(&body, server, recorded).await,
            "DELETE" => (200, None),
            // No server-initiated stream.
            _ => (405, None),
        };
        let reply = reply.map(|v| v.to_string()).unwrap_or_default();
        let head = format!(
            "HTTP/1.1 {status} {}\r\ncontent-type: application/json\r\nmcp-session-id: evalgate-proxy\r\ncontent-length: {}\r\n\r\n",
            if status == 200 {
                "OK"
            } else if status == 202 {
                "Accepted"
            } else {
                "Method Not Allowed"
            },
            reply.len()
        );
        write.write_all(head.as_bytes()).await?;
        write.write_all(reply.as_bytes()).await?;
    }
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
        "tools/list" => Ok(json!({"tools": server.callable_tools().map(|t| json!({
            "name": t.name, "description": t.description, "inputSchema": t.input_schema,
        })).collect::<Vec<_>>()})),
        "tools/call" => {
            let name = params.get("name").and_then(Value::as_str).unwrap_or_default().to_owned();
            let arguments = params.get("arguments").cloned().unwrap_or(json!({}));
            let started = Instant::now();
            let outcome = server.call_for_agent(&name, arguments.clone(), CALL_TIMEOUT).await;
            let result = match &outcome {
                Ok(r) => r.clone(),
                Err(e) => json!({"error": e.0}),
            };
            let duration_ms = Some(started.elapsed().as_millis() as u64);
            let call =
                ToolCall { name, server: Some(server.name.clone()), arguments, result: Some(result), duration_ms };
            recorded.lock().unwrap_or_else(|e| e.into_inner()).push((started, call));
            outcome.map_err(|e| e.0)
        }
        other => Err(format!("method {other} is not supported by the evalgate proxy")),
    };
    let reply = match result {
        Ok(r) => json!({"jsonrpc": "2.0", "id": id, "result": r}),
        Err(m) => json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32603, "message": m}}),
    };
    (200, Some(reply))
}
