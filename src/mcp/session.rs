//! One connection to an MCP server behind our own small trait, so nothing else sees rmcp.
//! Results travel as the protocol's JSON (`content`, `structuredContent`, `isError`).

use std::collections::HashMap;
use std::process::Stdio;
use std::time::Duration;

use rmcp::RoleClient;
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, ClientRequest, CustomRequest, ServerResult};
use rmcp::service::RunningService;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use serde::Serialize;
use serde_json::Value;

use super::auth::ClientCredentials;
use crate::process::reaper;

/// A tool as `tools/list` describes it.
#[derive(Debug, Clone, Serialize)]
pub struct ToolInfo {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
    /// `outputSchema`: every result's `structuredContent` must match it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// `annotations`, as listed (hints: untrusted).
    #[serde(skip_serializing_if = "Value::is_null")]
    pub annotations: Value,
    /// `annotations.destructiveHint`.
    pub destructive: bool,
}

/// What the server said about itself in the handshake.
#[derive(Debug, Clone, Default, Serialize, serde::Deserialize, PartialEq, schemars::JsonSchema)]
pub struct ServerInfo {
    pub protocol_version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct McpError(pub String);

#[async_trait::async_trait]
pub trait McpSession: Send + Sync {
    fn info(&self) -> ServerInfo;
    async fn list_tools(&self) -> Result<Vec<ToolInfo>, McpError>;
    /// The tool's result (`{content, structuredContent?, isError?}`); `Err` for transport
    /// and JSON-RPC errors.
    async fn call_tool(&self, name: &str, arguments: Value) -> Result<Value, McpError>;
    /// A request outside rmcp's typed API (e.g. `evals/list`); the result as JSON.
    async fn request(&self, method: &str, params: Value) -> Result<Value, McpError>;
    async fn close(&self);
}

/// How to reach a server (`auth`: the client-credentials grant whose token every HTTP
/// request carries).
#[derive(Debug, Clone)]
pub enum Endpoint {
    Stdio { command: Vec<String>, env: Vec<(String, String)>, cwd: std::path::PathBuf },
    Http { url: String, headers: Vec<(String, String)>, auth: Option<ClientCredentials> },
}

pub struct RmcpSession {
    service: tokio::sync::Mutex<Option<RunningService<RoleClient, ()>>>,
    peer: rmcp::service::Peer<RoleClient>,
    info: ServerInfo,
    /// The stdio server's process group, killed on close so nothing is orphaned.
    pgid: Option<i32>,
}

pub async fn connect(endpoint: &Endpoint, timeout: Duration) -> Result<RmcpSession, McpError> {
    let connecting = async {
        match endpoint {
            Endpoint::Stdio { command, env, cwd } => {
                let mut cmd = tokio::process::Command::new(&command[0]);
                crate::process::strip_credentials(cmd.as_std_mut());
                let owner = reaper::new_run_owner();
                cmd.args(&command[1..])
                    .envs(env.iter().map(|(k, v)| (k, v)))
                    .env(reaper::OWNER_VAR, &owner)
                    .current_dir(cwd)
                    .process_group(0);
                let (transport, _stderr) =
                    reaper::spawn(|| TokioChildProcess::builder(cmd).stderr(Stdio::null()).spawn(), |(t, _)| t.id())
                        .map_err(|e| McpError(format!("cannot start `{}`: {e}", command[0])))?;
                let pgid = transport.id().and_then(|id| i32::try_from(id).ok());
                if let Some(pgid) = pgid {
                    reaper::track_group(pgid, &owner);
                }
                let service = ().serve(transport).await.map_err(|e| McpError(format!("handshake failed: {e}")))?;
                Ok::<_, McpError>((service, pgid))
            }
            Endpoint::Http { url, headers, auth } => {
                let mut map = HashMap::new();
                for (k, v) in headers {
                    let name = k.parse().map_err(|_| McpError(format!("invalid header name `{k}`")))?;
                    let value = v.parse().map_err(|_| McpError(format!("invalid value for header `{k}`")))?;
                    map.insert(name, value);
                }
                let config = StreamableHttpClientTransportConfig::with_uri(url.as_str()).custom_headers(map);
                let client = super::auth::AuthorizedClient::new(auth.as_ref(), url).await?;
                let transport = StreamableHttpClientTransport::with_client(client, config);
                let service = match ().serve(transport).await {
                    Ok(service) => service,
                    Err(e) => return Err(super::auth::handshake_failed(endpoint, e).await),
                };
                Ok((service, None))
            }
        }
    };
    let (service, pgid) = tokio::time::timeout(timeout, connecting)
        .await
        .map_err(|_| McpError(format!("no handshake within {}", humantime::format_duration(timeout))))??;
    let info = service
        .peer_info()
        .map(|p| {
            let v = serde_json::to_value(&*p).unwrap_or(Value::Null);
            ServerInfo {
                protocol_version: v["protocolVersion"].as_str().unwrap_or_default().to_owned(),
                name: v.pointer("/serverInfo/name").and_then(Value::as_str).map(str::to_owned),
                version: v.pointer("/serverInfo/version").and_then(Value::as_str).map(str::to_owned),
            }
        })
        .unwrap_or_default();
    let peer = service.peer().clone();
    Ok(RmcpSession { service: tokio::sync::Mutex::new(Some(service)), peer, info, pgid })
}

#[async_trait::async_trait]
impl McpSession for RmcpSession {
    fn info(&self) -> ServerInfo {
        self.info.clone()
    }

    async fn list_tools(&self) -> Result<Vec<ToolInfo>, McpError> {
        let tools = self.peer.list_all_tools().await.map_err(|e| McpError(format!("tools/list failed: {e}")))?;
        Ok(tools
            .into_iter()
            .map(|t| {
                let v = serde_json::to_value(&t).unwrap_or(Value::Null);
                ToolInfo {
                    name: t.name.to_string(),
                    description: t.description.map(|d| d.to_string()).unwrap_or_default(),
                    input_schema: v.get("inputSchema").cloned().unwrap_or(Value::Null),
                    output_schema: v.get("outputSchema").filter(|s| !s.is_null()).cloned(),
                    annotations: v.get("annotations").cloned().unwrap_or(Value::Null),
                    destructive: v.pointer("/annotations/destructiveHint").and_then(Value::as_bool).unwrap_or(false),
                }
            })
            .collect())
    }

    async fn call_tool(&self, name: &str, arguments: Value) -> Result<Value, McpError> {
        let mut params = CallToolRequestParams::new(name.to_owned());
        if let Value::Object(map) = arguments {
            params = params.with_arguments(map);
        }
        let result =
            self.peer.call_tool(params).await.map_err(|e| McpError(format!("tools/call {name} failed: {e}")))?;
        serde_json::to_value(&result).map_err(|e| McpError(e.to_string()))
    }

    async fn request(&self, method: &str, params: Value) -> Result<Value, McpError> {
        let request = ClientRequest::CustomRequest(CustomRequest::new(method, Some(params)));
        match self.peer.send_request(request).await {
            Ok(ServerResult::CustomResult(r)) => Ok(r.0),
            Ok(other) => serde_json::to_value(&other).map_err(|e| McpError(e.to_string())),
            Err(e) => Err(McpError(format!("{method} failed: {e}"))),
        }
    }

    async fn close(&self) {
        if let Some(service) = self.service.lock().await.take() {
            let _ = tokio::time::timeout(Duration::from_secs(3), service.cancel()).await;
        }
        if let Some(pgid) = self.pgid {
            let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pgid), nix::sys::signal::Signal::SIGKILL);
            reaper::untrack_group(pgid);
        }
    }
}

/// The text graders see of a tool result: `structuredContent` when present, else the
/// text blocks joined by newlines.
pub fn result_output(result: &Value) -> String {
    if let Some(structured) = result.get("structuredContent").filter(|v| !v.is_null()) {
        return structured.to_string();
    }
    result
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|b| b.get("text").and_then(Value::as_str))
        .collect::<Vec<_>>()
        .join("\n")
}

pub fn is_error(result: &Value) -> bool {
    result.get("isError").and_then(Value::as_bool).unwrap_or(false)
}
