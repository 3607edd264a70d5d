//! One connection to an MCP server behind our own small trait, so nothing else sees rmcp.
//! Results travel as the protocol's JSON (`content`, `structuredContent`, `isError`).

use std::collections::HashMap;
use std::process::Stdio;
use std::time::Duration;

use rmcp::RoleClient;
use rmcp::model::{CallToolRequestParams, ClientConfig, ClientRequest, CustomRequest, Implementation, ServerResult};
use rmcp::service::{ClientServiceExt, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use serde::Serialize;
use serde_json::Value;

use super::auth::ClientCredentials;
use crate::process::reaper;

/// What evalgate's client offers in the handshake (`mcp::extensions`).
/// A tool as `tools/list` describes it.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct ToolInfo {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
    /// `outputSchema`: every result's `structuredContent` must match it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// `annotations`, as listed (hints: untrusted).
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub annotations: Value,
    /// `annotations.destructiveHint`.
    pub destructive: bool,
}

/// A `tools/list` answer, every page: the tools, and whether every page carried the
/// 2026-07-28 cache hints (`ttlMs`, `cacheScope`).
#[derive(Debug, Clone, Default, Serialize, serde::Deserialize)]
pub struct ToolList {
    pub tools: Vec<ToolInfo>,
    pub cache_hints: bool,
}

/// What the server said about itself in the handshake.
#[derive(Debug, Clone, Default, Serialize, serde::Deserialize, PartialEq, schemars::JsonSchema)]
pub struct ServerInfo {
    /// The negotiated protocol version.
    pub protocol_version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// For an era of a protocol list the server did not start at: why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The extensions it advertised (`capabilities.extensions`, protocol 2026-07-28 on).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<String>,
}

#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct McpError(pub String);

#[async_trait::async_trait]
pub trait McpSession: Send + Sync {
    fn info(&self) -> ServerInfo;
    async fn list_tools(&self) -> Result<ToolList, McpError>;
    /// The tool's result (`{content, structuredContent?, isError?}`); `Err` for transport
    /// and JSON-RPC errors (`Rejected`: the server answered with one).
    async fn call_tool(&self, name: &str, arguments: Value) -> Result<Value, super::servers::CallError>;
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
    service: tokio::sync::Mutex<Option<RunningService<RoleClient, ClientConfig>>>,
    peer: rmcp::service::Peer<RoleClient>,
    info: ServerInfo,
    /// The stdio server's process group, killed on close so nothing is orphaned.
    pgid: Option<i32>,
}

/// Connects at `era` (`None`: `auto`, the best the server speaks). A server that answers an
/// era with another version does not speak it: that is an error, never a quiet downgrade.
///
/// `auto` probes `server/discover` and falls back to `initialize` where the server says it
/// does not know the method; a server that answers the probe in any other broken way (an
/// empty result, say) gets a second chance on a new connection with `initialize` alone.
pub async fn connect(endpoint: &Endpoint, era: Option<&str>, timeout: Duration) -> Result<RmcpSession, McpError> {
    let (lifecycle, offered) = super::protocol::lifecycle(era);
    match connect_with(endpoint, lifecycle, offered, era, timeout).await {
        Ok(session) => Ok(session),
        Err(Failed::Handshake(first)) if era.is_none() => {
            let (lifecycle, offered) = super::protocol::legacy();
            connect_with(endpoint, lifecycle, offered, None, timeout)
                .await
                .map_err(|e| McpError(format!("{first}; then, with initialize alone, {}", e.into_inner().0)))
        }
        Err(e) => Err(e.into_inner()),
    }
}

/// Why a connection failed: the server did not start or could not be reached, or it did
/// not complete the handshake.
enum Failed {
    Start(McpError),
    Handshake(McpError),
}

impl Failed {
    fn into_inner(self) -> McpError {
        match self {
            Failed::Start(e) | Failed::Handshake(e) => e,
        }
    }
}

async fn connect_with(
    endpoint: &Endpoint,
    lifecycle: rmcp::service::ClientLifecycleMode,
    offered: rmcp::model::ProtocolVersion,
    era: Option<&str>,
    timeout: Duration,
) -> Result<RmcpSession, Failed> {
    // The evals extension is advertised where the protocol has `extensions`: at 2026-07-28,
    // and by `auto` (whose probe is at 2026-07-28).
    let mut client = super::extensions::client_config(match era {
        Some(_) => offered.clone(),
        None => rmcp::model::ProtocolVersion::LATEST,
    })
    .with_protocol_version(offered);
    client.client_info = Implementation::new("evalgate", env!("CARGO_PKG_VERSION"));
    let at = era.map_or(String::new(), |e| format!(" at protocol {e}"));
    // The stdio server's process group, killed if the handshake fails or times out.
    let started = std::sync::Mutex::new(None::<i32>);
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
                let (transport, _stderr) = reaper::spawn(
                    || TokioChildProcess::builder(cmd).stderr(Stdio::null()).spawn(),
                    |(t, _)| t.id(),
                    &owner,
                )
                .map_err(|e| Failed::Start(McpError(format!("cannot start `{}`: {e}", command[0]))))?;
                let pgid = transport.id().and_then(|id| i32::try_from(id).ok());
                if let Some(pgid) = pgid {
                    *started.lock().unwrap_or_else(|e| e.into_inner()) = Some(pgid);
                }
                let service = client.serve_with_lifecycle(transport, lifecycle).await.map_err(|e| {
                    Failed::Handshake(McpError(format!("handshake{at} failed: {}", handshake_error(&e))))
                })?;
                Ok::<_, Failed>((service, pgid))
            }
            Endpoint::Http { url, headers, auth } => {
                let mut map = HashMap::new();
                for (k, v) in headers {
                    let name = k.parse().map_err(|_| Failed::Start(McpError(format!("invalid header name `{k}`"))))?;
                    let value =
                        v.parse().map_err(|_| Failed::Start(McpError(format!("invalid value for header `{k}`"))))?;
                    map.insert(name, value);
                }
                let config = StreamableHttpClientTransportConfig::with_uri(url.as_str()).custom_headers(map);
                let http = super::auth::AuthorizedClient::new(auth.as_ref(), url).await.map_err(Failed::Start)?;
                let transport = StreamableHttpClientTransport::with_client(http, config);
                let service = match client.serve_with_lifecycle(transport, lifecycle).await {
                    Ok(service) => service,
                    Err(e) => {
                        // A server that wants a token: another era would be refused the same.
                        if let Some(refused) = super::auth::refused(endpoint, &e).await {
                            return Err(Failed::Start(refused));
                        }
                        let why = handshake_error(&e);
                        return Err(Failed::Handshake(McpError(format!("handshake with {url}{at} failed: {why}"))));
                    }
                };
                Ok((service, None))
            }
        }
    };
    let connected = tokio::time::timeout(timeout, connecting).await.unwrap_or_else(|_| {
        Err(Failed::Start(McpError(format!("no handshake within {}", humantime::format_duration(timeout)))))
    });
    let (service, pgid) = match connected {
        Ok(connected) => connected,
        Err(e) => {
            if let Some(pgid) = started.lock().unwrap_or_else(|e| e.into_inner()).take() {
                kill_group(pgid);
            }
            return Err(e);
        }
    };
    let info = service
        .peer_info()
        .map(|p| {
            let v = serde_json::to_value(&*p).unwrap_or(Value::Null);
            ServerInfo {
                protocol_version: v["protocolVersion"].as_str().unwrap_or_default().to_owned(),
                name: v.pointer("/serverInfo/name").and_then(Value::as_str).map(str::to_owned),
                version: v.pointer("/serverInfo/version").and_then(Value::as_str).map(str::to_owned),
                error: None,
                extensions: super::extensions::advertised(&v),
            }
        })
        .unwrap_or_default();
    let peer = service.peer().clone();
    let session = RmcpSession { service: tokio::sync::Mutex::new(Some(service)), peer, info, pgid };
    if let Some(era) = era.filter(|e| *e != session.info.protocol_version) {
        let answered = session.info.protocol_version.clone();
        session.close().await;
        return Err(Failed::Handshake(McpError(format!(
            "the server does not speak protocol {era}: it answered {answered}"
        ))));
    }
    Ok(session)
}

/// rmcp's handshake error, with the causes it wraps (the discover and the fallback failures).
/// A JSON-RPC "method not found" can only answer `server/discover`: `initialize` is every
/// older era's first request.
fn handshake_error(e: &rmcp::service::ClientInitializeError) -> String {
    use rmcp::service::ClientInitializeError as E;
    match e {
        E::LegacyFallbackFailed { discover, fallback } => format!(
            "server/discover failed ({}), then initialize failed ({})",
            handshake_error(discover),
            handshake_error(fallback)
        ),
        E::JsonRpcError(data) if data.code.0 == -32601 => {
            format!(
                "the server does not know `server/discover` ({}, {}), so it does not speak 2026-07-28",
                data.message, data.code.0
            )
        }
        E::JsonRpcError(data) => format!("{} ({})", data.message, data.code.0),
        other => other.to_string(),
    }
}

#[async_trait::async_trait]
impl McpSession for RmcpSession {
    fn info(&self) -> ServerInfo {
        self.info.clone()
    }

    async fn list_tools(&self) -> Result<ToolList, McpError> {
        let mut tools = Vec::new();
        let mut cache_hints = true;
        let mut cursor = None;
        let mut pages = super::pages::Pages::new("tools/list");
        loop {
            let params = cursor.map(|c| rmcp::model::PaginatedRequestParams::default().with_cursor(Some(c)));
            let page = self.peer.list_tools(params).await.map_err(|e| McpError(format!("tools/list failed: {e}")))?;
            cache_hints &= page.ttl_ms.is_some() && page.cache_scope.is_some();
            let bytes = serde_json::to_vec(&page.tools).map_or(0, |b| b.len());
            tools.extend(page.tools);
            cursor = pages.next(bytes, page.next_cursor).map_err(McpError)?;
            if cursor.is_none() {
                break;
            }
        }
        let tools = tools
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
            .collect();
        Ok(ToolList { tools, cache_hints })
    }

    async fn call_tool(&self, name: &str, arguments: Value) -> Result<Value, super::servers::CallError> {
        use super::servers::CallError;
        let mut params = CallToolRequestParams::new(name.to_owned());
        if let Value::Object(map) = arguments {
            params = params.with_arguments(map);
        }
        let result = self.peer.call_tool(params).await.map_err(|e| {
            let error = McpError(format!("tools/call {name} failed: {e}"));
            match e {
                rmcp::ServiceError::McpError(_) => CallError::Rejected(error),
                _ => CallError::Failed(error),
            }
        })?;
        serde_json::to_value(&result).map_err(|e| CallError::Failed(McpError(e.to_string())))
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
            kill_group(pgid);
        }
    }
}

fn kill_group(pgid: i32) {
    let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pgid), nix::sys::signal::Signal::SIGKILL);
    reaper::untrack_group(pgid);
}

/// The text graders see of a tool result: `structuredContent` when present, else the
/// text blocks joined by newlines.
pub fn result_output(result: &Value) -> String {
    if let Some(structured) = result.get("structuredContent").filter(|v| !v.is_null()) {
        return structured.to_string();
    }
    result_text(result)
}

/// A tool result's text blocks, joined by newlines.
pub fn result_text(result: &Value) -> String {
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
