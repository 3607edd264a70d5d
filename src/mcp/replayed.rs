//! MCP traffic through a cassette (`mcp_servers.NAME.cassette: true`): a server's handshake,
//! `tools/list` and each `tools/call` result recorded by (tool, canonical arguments), and
//! replayed without starting the server at all, for servers that are slow, costly or not
//! there in CI. Every use of the server (model agents' tools, the recording proxy, steps,
//! graders, a task's `call`) goes through its session, so every use is recorded and replayed.

use std::sync::Arc;

use serde_json::{Value, json};

use super::servers::CallError;
use super::session::{McpError, McpSession, ServerInfo, ToolList};
use crate::cassette::{Cassette, Lookup};

/// The kind of a server's entries in the cassette: `mcp:NAME`.
fn kind(server: &str) -> String {
    format!("mcp:{server}")
}

/// A server answered from the cassette: nothing is started, nothing is asked live.
pub struct ReplayedSession {
    server: String,
    cassette: Arc<Cassette>,
    info: ServerInfo,
}

impl ReplayedSession {
    /// The handshake as recorded at `era`: a miss means the server was never recorded.
    pub fn open(server: &str, era: Option<&str>, cassette: Arc<Cassette>) -> Result<ReplayedSession, McpError> {
        let info = replay(&cassette, server, &json!({"method": "initialize", "era": era}))?;
        let info =
            serde_json::from_value(info).map_err(|e| McpError(format!("a recorded handshake is not one: {e}")))?;
        Ok(ReplayedSession { server: server.to_owned(), cassette, info })
    }
}

fn replay(cassette: &Cassette, server: &str, request: &Value) -> Result<Value, McpError> {
    match cassette.lookup(&kind(server), request) {
        Lookup::Replay(answer) => Ok(answer),
        Lookup::Miss(miss) => Err(McpError(miss.message)),
        // Only a replaying cassette opens a replayed session.
        Lookup::Live(_) => Err(McpError(format!("server `{server}` is replayed, yet its cassette records"))),
    }
}

#[async_trait::async_trait]
impl McpSession for ReplayedSession {
    fn info(&self) -> ServerInfo {
        self.info.clone()
    }

    async fn list_tools(&self) -> Result<ToolList, McpError> {
        let list = replay(&self.cassette, &self.server, &json!({"method": "tools/list"}))?;
        serde_json::from_value(list).map_err(|e| McpError(format!("a recorded tools/list is not one: {e}")))
    }

    async fn call_tool(&self, name: &str, arguments: Value) -> Result<Value, CallError> {
        let request = json!({"method": "tools/call", "name": name, "arguments": arguments});
        Ok(replay(&self.cassette, &self.server, &request)?)
    }

    async fn request(&self, method: &str, _params: Value) -> Result<Value, McpError> {
        Err(McpError(format!("server `{}` is replayed from its cassette, which records no {method}", self.server)))
    }

    async fn close(&self) {}
}

/// A live server whose answers are recorded (`--record`, `--record-missing`): what the
/// cassette holds already is replayed in `record_missing`, the rest asked and recorded.
pub struct RecordingSession {
    server: String,
    cassette: Arc<Cassette>,
    inner: Arc<dyn McpSession>,
}

impl RecordingSession {
    /// Wraps `inner`, recording its handshake at `era` now.
    pub fn new(server: &str, era: Option<&str>, cassette: Arc<Cassette>, inner: Arc<dyn McpSession>) -> Self {
        if let Lookup::Live(slot) = cassette.lookup(&kind(server), &json!({"method": "initialize", "era": era})) {
            cassette.record(slot, &serde_json::to_value(inner.info()).expect("server info serializes"));
        }
        RecordingSession { server: server.to_owned(), cassette, inner }
    }

    async fn through<T, E>(
        &self,
        request: Value,
        live: impl std::future::Future<Output = Result<T, E>>,
        read: impl Fn(Value) -> Result<T, E>,
    ) -> Result<T, E>
    where
        T: serde::Serialize,
    {
        match self.cassette.lookup(&kind(&self.server), &request) {
            Lookup::Replay(answer) => read(answer),
            Lookup::Live(slot) => {
                let answer = live.await?;
                self.cassette.record(slot, &serde_json::to_value(&answer).expect("an answer serializes"));
                Ok(answer)
            }
            // A recording cassette never misses.
            Lookup::Miss(_) => live.await,
        }
    }
}

#[async_trait::async_trait]
impl McpSession for RecordingSession {
    fn info(&self) -> ServerInfo {
        self.inner.info()
    }

    async fn list_tools(&self) -> Result<ToolList, McpError> {
        let read =
            |v| serde_json::from_value(v).map_err(|e| McpError(format!("a recorded tools/list is not one: {e}")));
        self.through(json!({"method": "tools/list"}), self.inner.list_tools(), read).await
    }

    async fn call_tool(&self, name: &str, arguments: Value) -> Result<Value, CallError> {
        let request = json!({"method": "tools/call", "name": name, "arguments": arguments.clone()});
        self.through(request, self.inner.call_tool(name, arguments), Ok).await
    }

    async fn request(&self, method: &str, params: Value) -> Result<Value, McpError> {
        self.inner.request(method, params).await
    }

    async fn close(&self) {
        self.inner.close().await;
    }
}
