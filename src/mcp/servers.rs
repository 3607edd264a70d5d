//! The run's MCP servers: started once, shared by tasks, restarted once if one dies.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Mutex;

use super::session::{Endpoint, McpError, McpSession, ServerInfo, ToolInfo, connect};

/// Time for a server to start and answer the handshake.
pub const START_TIMEOUT: Duration = Duration::from_secs(30);

pub struct Server {
    pub name: String,
    endpoint: Endpoint,
    session: Mutex<Option<Arc<dyn McpSession>>>,
    restarted: std::sync::atomic::AtomicBool,
    pub tools: Vec<ToolInfo>,
    pub info: ServerInfo,
}

pub struct Servers {
    pub by_name: BTreeMap<String, Arc<Server>>,
}

impl Servers {
    pub fn empty() -> Servers {
        Servers { by_name: BTreeMap::new() }
    }

    /// Starts every server and lists its tools; the first failure is returned by name.
    pub async fn start(endpoints: Vec<(String, Endpoint)>) -> Result<Servers, (String, McpError)> {
        let mut by_name = BTreeMap::new();
        for (name, endpoint) in endpoints {
            let session = connect(&endpoint, START_TIMEOUT).await.map_err(|e| (name.clone(), e))?;
            let tools = tokio::time::timeout(START_TIMEOUT, session.list_tools())
                .await
                .map_err(|_| (name.clone(), McpError("tools/list did not answer".into())))?
                .map_err(|e| (name.clone(), e))?;
            let info = session.info();
            let session: Arc<dyn McpSession> = Arc::new(session);
            by_name.insert(
                name.clone(),
                Arc::new(Server {
                    name,
                    endpoint,
                    session: Mutex::new(Some(session)),
                    restarted: std::sync::atomic::AtomicBool::new(false),
                    tools,
                    info,
                }),
            );
        }
        Ok(Servers { by_name })
    }

    pub async fn close(&self) {
        for server in self.by_name.values() {
            if let Some(s) = server.session.lock().await.take() {
                s.close().await;
            }
        }
    }
}

impl Server {
    /// Calls a tool. A transport failure restarts the server once (for later tasks) and is
    /// returned as an error: the task that saw it cannot pass.
    pub async fn call(
        &self,
        tool: &str,
        arguments: serde_json::Value,
        timeout: Duration,
    ) -> Result<serde_json::Value, McpError> {
        let session = self
            .session
            .lock()
            .await
            .clone()
            .ok_or_else(|| McpError(format!("server `{}` is not running", self.name)))?;
        match tokio::time::timeout(timeout, session.call_tool(tool, arguments)).await {
            Ok(Ok(result)) => Ok(result),
            Ok(Err(e)) => {
                self.restart_once().await;
                Err(e)
            }
            Err(_) => {
                Err(McpError(format!("tools/call {tool} timed out after {}", humantime::format_duration(timeout))))
            }
        }
    }

    async fn restart_once(&self) {
        if self.restarted.swap(true, std::sync::atomic::Ordering::SeqCst) {
            return;
        }
        let mut slot = self.session.lock().await;
        if let Some(old) = slot.take() {
            old.close().await;
        }
        if let Ok(session) = connect(&self.endpoint, START_TIMEOUT).await {
            *slot = Some(Arc::new(session));
        }
    }
}
