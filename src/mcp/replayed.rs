//! MCP traffic through a cassette (`mcp_servers.NAME.cassette: true`): a server's handshake,
//! `tools/list` and each `tools/call` result recorded by (tool, canonical arguments), and
//! replayed without starting the server at all, for servers that are slow, costly or not
//! there in CI. Every use of the server (model agents' tools, the recording proxy, steps,
//! graders, a task's `call`) goes through its session, so every use is recorded and replayed.

use std::sync::Arc;

use serde_json::{Value, json};

use super::servers::CallError;
use super::session::{McpError, McpSession, ServerInfo, ToolList};
use crate::cassette::{Cassette, Door, Miss, Traffic, pass};

/// The door of a server's traffic: `mcp:NAME` in the cassette.
struct ServerDoor<'a>(&'a str);

impl Door for ServerDoor<'_> {
    fn traffic(&self) -> Traffic {
        Traffic::Mcp(self.0.to_owned())
    }
}

impl From<Miss> for McpError {
    fn from(miss: Miss) -> Self {
        McpError(miss.message)
    }
}

impl From<Miss> for CallError {
    fn from(miss: Miss) -> Self {
        CallError::Failed(miss.into())
    }
}

/// The handshake's request: the server's info at `era`.
fn handshake(era: Option<&str>) -> Value {
    json!({"method": "initialize", "era": era})
}

/// A server answered from the cassette: nothing is started, nothing is asked live.
pub struct ReplayedSession {
    server: String,
    cassette: Arc<Cassette>,
    info: ServerInfo,
}

impl ReplayedSession {
    /// The handshake as recorded at `era`: a miss means the server was never recorded.
    pub async fn open(server: &str, era: Option<&str>, cassette: Arc<Cassette>) -> Result<ReplayedSession, McpError> {
        let info = replay(&cassette, server, &handshake(era)).await?;
        Ok(ReplayedSession { server: server.to_owned(), cassette, info })
    }
}

/// `request` answered from the cassette, never asked live.
async fn replay<T>(cassette: &Cassette, server: &str, request: &Value) -> Result<T, McpError>
where
    T: serde::Serialize + serde::de::DeserializeOwned,
{
    // Only a replaying cassette opens a replayed session.
    let live = || async { Err(McpError(format!("server `{server}` is replayed, yet its cassette records"))) };
    Ok(pass(cassette, &ServerDoor(server), request, live).await?.answer)
}

#[async_trait::async_trait]
impl McpSession for ReplayedSession {
    fn info(&self) -> ServerInfo {
        self.info.clone()
    }

    async fn list_tools(&self) -> Result<ToolList, McpError> {
        replay(&self.cassette, &self.server, &json!({"method": "tools/list"})).await
    }

    async fn call_tool(&self, name: &str, arguments: Value) -> Result<Value, CallError> {
        let request = json!({"method": "tools/call", "name": name, "arguments": arguments});
        Ok(replay(&self.cassette, &self.server, &request).await?)
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
    pub async fn new(
        server: &str,
        era: Option<&str>,
        cassette: Arc<Cassette>,
        inner: Arc<dyn McpSession>,
    ) -> Result<Self, McpError> {
        let live = || async { Ok::<_, McpError>(inner.info()) };
        pass(&cassette, &ServerDoor(server), &handshake(era), live).await?;
        Ok(RecordingSession { server: server.to_owned(), cassette, inner })
    }
}

#[async_trait::async_trait]
impl McpSession for RecordingSession {
    fn info(&self) -> ServerInfo {
        self.inner.info()
    }

    async fn list_tools(&self) -> Result<ToolList, McpError> {
        let live = || self.inner.list_tools();
        Ok(pass(&self.cassette, &ServerDoor(&self.server), &json!({"method": "tools/list"}), live).await?.answer)
    }

    async fn call_tool(&self, name: &str, arguments: Value) -> Result<Value, CallError> {
        let request = json!({"method": "tools/call", "name": name, "arguments": arguments.clone()});
        let live = || self.inner.call_tool(name, arguments);
        Ok(pass(&self.cassette, &ServerDoor(&self.server), &request, live).await?.answer)
    }

    async fn request(&self, method: &str, params: Value) -> Result<Value, McpError> {
        self.inner.request(method, params).await
    }

    async fn close(&self) {
        self.inner.close().await;
    }
}
