//! The run's MCP servers: started once, shared by tasks, restarted once if one dies. Every
//! `tools/call` of the run goes through [`Server::call`], which holds the side-effect guard.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::Mutex;

use super::protocol::Protocol;
use super::replayed::{RecordingSession, ReplayedSession};
use super::session::{Endpoint, McpError, McpSession, ServerInfo, ToolInfo, connect, is_error};
use crate::cassette::Cassette;

/// Time for a server to start and answer the handshake.
pub const START_TIMEOUT: Duration = Duration::from_secs(30);

pub struct Server {
    pub name: String,
    endpoint: Endpoint,
    /// The protocol version it was started at (`None`: `auto`).
    pub era: Option<String>,
    /// Why it is not running, for an era of a protocol list it did not start at: its calls
    /// fail with this, and so do the tasks of that era.
    pub down: Option<String>,
    /// Whether every page of its `tools/list` carried `ttlMs` and `cacheScope`.
    pub cache_hints: bool,
    session: Mutex<Option<Arc<dyn McpSession>>>,
    restarted: std::sync::atomic::AtomicBool,
    cassette: Option<Arc<Cassette>>,
    /// Its name in the cassette: `NAME`, `NAME@ARM`, `NAME@ERA`.
    recorded_as: String,
    pub tools: Vec<ToolInfo>,
    pub info: ServerInfo,
    /// `mcp_servers.NAME.allow_side_effects`: whether its destructive tools may be called.
    allow_side_effects: bool,
    /// Each tool's compiled `outputSchema` (or why it does not compile), by tool name.
    contracts: BTreeMap<String, Result<jsonschema::Validator, String>>,
}

/// A call that was made: its result, and whether the result broke the tool's declared
/// `outputSchema` (then the call failed, whatever its content).
#[derive(Debug, Clone)]
pub struct Called {
    pub result: Value,
    pub violation: Option<String>,
}

/// Why a call was not made, or did not complete.
#[derive(Debug, Clone, thiserror::Error)]
pub enum CallError {
    /// The side-effect guard refused it: the server never saw the call.
    #[error("{0}")]
    Refused(String),
    /// The server answered with a JSON-RPC error: it is up, the call failed.
    #[error(transparent)]
    Rejected(McpError),
    /// A transport error or a time-out.
    #[error(transparent)]
    Failed(#[from] McpError),
}

/// What starting a server takes.
pub struct ServerSpec {
    pub name: String,
    pub endpoint: Endpoint,
    /// Whether its destructive tools may be called.
    pub allow_side_effects: bool,
    /// The protocol versions to start it at.
    pub protocol: Protocol,
    /// Its traffic through the suite's cassette (`cassette: true`): replayed without
    /// starting it, or recorded.
    pub cassette: Option<Arc<Cassette>>,
    /// `variants`: the arm whose tasks see it in place of the server of the same name.
    pub arm: Option<String>,
}

/// The run's servers, as a task sees them: by name, each at one protocol era.
pub struct Servers {
    /// Each server: at `auto`, at its one version, or at the first era of its protocol list
    /// that started (what hooks, preflight and the drift check use).
    pub by_name: BTreeMap<String, Arc<Server>>,
    /// For each era of a protocol list: the servers as a task of that era sees them (that
    /// era's instance of the servers that list it, the others as in `by_name`).
    views: BTreeMap<String, Arc<Servers>>,
    /// For each arm of `variants` that replaces a server: the servers as its tasks see them.
    arms: BTreeMap<String, Arc<Servers>>,
    /// Every instance started, by the name results record it under (`name`, or `name@era`
    /// for a server with a protocol list).
    pub instances: BTreeMap<String, Arc<Server>>,
}

impl Servers {
    pub fn empty() -> Servers {
        Servers { by_name: BTreeMap::new(), views: BTreeMap::new(), arms: BTreeMap::new(), instances: BTreeMap::new() }
    }

    /// Starts every server (once per era of a protocol list) and lists its tools. A server
    /// that does not start is an error by name; so is one with a protocol list that starts
    /// at none of its eras. An era it does not start at is kept as a server that is down:
    /// that era's tasks fail with why.
    pub async fn start(specs: impl IntoIterator<Item = ServerSpec>) -> Result<Servers, (String, McpError)> {
        let mut servers = Servers::empty();
        let mut by_era: BTreeMap<String, Vec<Arc<Server>>> = BTreeMap::new();
        let mut by_arm: BTreeMap<String, Vec<Arc<Server>>> = BTreeMap::new();
        for spec in specs {
            // An arm's replacement runs at one protocol: `auto` or its one version (the
            // validator refuses variants that replace a server beside protocol lists).
            if let Some(arm) = &spec.arm {
                let era = spec.protocol.starts().first().copied().flatten();
                let server = match Server::start(&spec, era).await {
                    Ok(server) => Arc::new(server),
                    Err(e) => {
                        servers.close().await;
                        return Err((format!("{}@{arm}", spec.name), e));
                    }
                };
                servers.instances.insert(format!("{}@{arm}", spec.name), server.clone());
                by_arm.entry(arm.clone()).or_default().push(server);
                continue;
            }
            let listed = spec.protocol.eras();
            let mut failures = Vec::new();
            for era in spec.protocol.starts() {
                let server = match Server::start(&spec, era).await {
                    Ok(server) => Arc::new(server),
                    Err(e) if !listed.is_empty() => {
                        failures.push(format!("{}: {e}", era.unwrap_or("auto")));
                        Arc::new(Server::down(&spec, era, e))
                    }
                    Err(e) => {
                        servers.close().await;
                        return Err((spec.name, e));
                    }
                };
                if server.down.is_none() {
                    servers.by_name.entry(spec.name.clone()).or_insert_with(|| server.clone());
                }
                match era.filter(|_| !listed.is_empty()) {
                    Some(era) => {
                        by_era.entry(era.to_owned()).or_default().push(server.clone());
                        servers.instances.insert(format!("{}@{era}", spec.name), server);
                    }
                    None => {
                        servers.instances.insert(spec.name.clone(), server);
                    }
                }
            }
            if !servers.by_name.contains_key(&spec.name) {
                servers.close().await;
                return Err((
                    spec.name,
                    McpError(format!("it started at none of its protocol versions: {}", failures.join("; "))),
                ));
            }
        }
        for (era, instances) in by_era {
            let mut by_name = servers.by_name.clone();
            by_name.extend(instances.into_iter().map(|s| (s.name.clone(), s)));
            let view = Servers { by_name, ..Servers::empty() };
            servers.views.insert(era, Arc::new(view));
        }
        for (arm, instances) in by_arm {
            let mut by_name = servers.by_name.clone();
            by_name.extend(instances.into_iter().map(|s| (s.name.clone(), s)));
            servers.arms.insert(arm, Arc::new(Servers { by_name, ..Servers::empty() }));
        }
        Ok(servers)
    }

    /// The servers as a task of `era` sees them (`None`: a task that runs once), on `arm`
    /// (an arm that replaces a server sees its own; eras of a replaced server are not kept).
    pub fn at(self: &Arc<Self>, era: Option<&super::protocol::TaskEra>, arm: Option<&str>) -> Arc<Servers> {
        let on_arm = arm.and_then(|a| self.arms.get(a));
        on_arm.or_else(|| era.and_then(|e| self.views.get(&e.version))).cloned().unwrap_or_else(|| self.clone())
    }

    /// What each instance said about itself, by the name results record it under.
    pub fn infos(&self) -> BTreeMap<String, ServerInfo> {
        self.instances.iter().map(|(name, s)| (name.clone(), s.info.clone())).collect()
    }

    /// Closes every instance (each server of `by_name` and of the views is one of them).
    pub async fn close(&self) {
        for server in self.instances.values() {
            if let Some(s) = server.session.lock().await.take() {
                s.close().await;
            }
        }
    }
}

impl Server {
    /// Connects at `era` and lists the tools.
    async fn start(spec: &ServerSpec, era: Option<&str>) -> Result<Server, McpError> {
        // Each arm's replacement and each protocol era answers differently: each is its own
        // in the cassette.
        let mut recorded_as = spec.name.clone();
        for part in spec.arm.as_deref().into_iter().chain(era) {
            recorded_as = format!("{recorded_as}@{part}");
        }
        let session = open(&recorded_as, &spec.endpoint, era, spec.cassette.as_ref()).await?;
        let listed = tokio::time::timeout(START_TIMEOUT, session.list_tools())
            .await
            .map_err(|_| McpError("tools/list did not answer".into()));
        let list = match listed {
            Ok(Ok(list)) => list,
            Ok(Err(e)) | Err(e) => {
                session.close().await;
                return Err(e);
            }
        };
        let info = session.info();
        let mut server = Server::new(
            spec.name.clone(),
            spec.endpoint.clone(),
            Some(session),
            list.tools,
            info,
            spec.allow_side_effects,
        );
        server.era = era.map(str::to_owned);
        server.cache_hints = list.cache_hints;
        server.cassette.clone_from(&spec.cassette);
        server.recorded_as = recorded_as;
        Ok(server)
    }

    /// An era of a protocol list the server did not start at.
    fn down(spec: &ServerSpec, era: Option<&str>, why: McpError) -> Server {
        let info = ServerInfo { protocol_version: era.unwrap_or_default().to_owned(), ..ServerInfo::default() };
        let mut server = Server::new(spec.name.clone(), spec.endpoint.clone(), None, Vec::new(), info, false);
        server.era = era.map(str::to_owned);
        server.down = Some(why.0);
        server.info.error = server.down.clone();
        server
    }

    fn new(
        name: String,
        endpoint: Endpoint,
        session: Option<Arc<dyn McpSession>>,
        tools: Vec<ToolInfo>,
        info: ServerInfo,
        allow_side_effects: bool,
    ) -> Server {
        let contracts = tools
            .iter()
            .filter_map(|t| {
                let schema = t.output_schema.as_ref()?;
                Some((t.name.clone(), jsonschema::validator_for(schema).map_err(|e| e.to_string())))
            })
            .collect();
        Server {
            name,
            endpoint,
            era: None,
            down: None,
            cache_hints: false,
            session: Mutex::new(session),
            restarted: std::sync::atomic::AtomicBool::new(false),
            cassette: None,
            recorded_as: String::new(),
            tools,
            info,
            allow_side_effects,
            contracts,
        }
    }

    /// How `result` breaks the `outputSchema` `tool` declared, if it does: a result that is
    /// not an error must carry `structuredContent` matching it (the spec's MUST).
    pub fn violation(&self, tool: &str, result: &Value) -> Option<String> {
        let contract = self.contracts.get(tool)?;
        if is_error(result) {
            return None;
        }
        let name = format!("`{}.{tool}`", self.name);
        let validator = match contract {
            Ok(v) => v,
            Err(e) => return Some(format!("{name} declares an outputSchema that is not a valid JSON Schema: {e}")),
        };
        let Some(structured) = result.get("structuredContent").filter(|v| !v.is_null()) else {
            return Some(format!("{name} declares an outputSchema but its result has no structuredContent"));
        };
        let errors: Vec<String> = validator
            .iter_errors(structured)
            .take(3)
            .map(|e| {
                let at = crate::json::dotted(&format!("/structuredContent{}", e.instance_path()));
                format!("{at}: {e}")
            })
            .collect();
        (!errors.is_empty()).then(|| format!("{name} broke its outputSchema: {}", errors.join("; ")))
    }

    /// Why `tool` may not be called, if it may not: it is annotated `destructiveHint: true`,
    /// or the server did not list it (so nothing says it is harmless), and the server does
    /// not allow side effects. Preflight reports it; [`Server::call`] enforces it.
    pub fn refusal(&self, tool: &str) -> Option<String> {
        if self.allow_side_effects {
            return None;
        }
        let unless = format!("calling it is refused unless `mcp_servers.{}.allow_side_effects: true`", self.name);
        match self.tools.iter().find(|t| t.name == tool) {
            Some(t) if t.destructive => Some(format!("is annotated destructiveHint: {unless}")),
            Some(_) => None,
            None => Some(format!("is not in the server's tools/list, so it may be destructive: {unless}")),
        }
    }

    /// The tools an agent is shown: those [`Server::call`] does not refuse.
    pub fn callable_tools(&self) -> impl Iterator<Item = &ToolInfo> {
        self.tools.iter().filter(|t| self.refusal(&t.name).is_none())
    }

    /// Calls a tool, unless [`Server::refusal`] forbids it. A transport failure restarts the
    /// server once (for later tasks) and is returned as an error: the task that saw it
    /// cannot pass.
    pub async fn call(&self, tool: &str, arguments: Value, timeout: Duration) -> Result<Called, CallError> {
        if let (Some(why), Some(era)) = (&self.down, &self.era) {
            return Err(McpError(format!("server `{}` is not running at protocol {era}: {why}", self.name)).into());
        }
        if let Some(why) = self.refusal(tool) {
            return Err(CallError::Refused(format!("`{}.{tool}` {why}", self.name)));
        }
        let session = self
            .session
            .lock()
            .await
            .clone()
            .ok_or_else(|| McpError(format!("server `{}` is not running", self.name)))?;
        match tokio::time::timeout(timeout, session.call_tool(tool, arguments)).await {
            Ok(Ok(result)) => Ok(Called { violation: self.violation(tool, &result), result }),
            Ok(Err(CallError::Rejected(e))) => Err(CallError::Rejected(e)),
            Ok(Err(e)) => {
                self.restart_once().await;
                Err(e)
            }
            Err(_) => {
                Err(McpError(format!("tools/call {tool} timed out after {}", humantime::format_duration(timeout)))
                    .into())
            }
        }
    }

    /// A call an agent makes (the model agent, or any agent through the recording proxy): a
    /// refusal comes back as a tool error the agent reads, as it would a tool's own error,
    /// so the run goes on and the refusal is recorded with the call.
    pub async fn call_for_agent(&self, tool: &str, arguments: Value, timeout: Duration) -> Result<Called, McpError> {
        match self.call(tool, arguments, timeout).await {
            Err(CallError::Refused(why)) => Ok(Called {
                result: json!({"content": [{"type": "text", "text": format!("not executed: {why}")}], "isError": true}),
                violation: None,
            }),
            Err(CallError::Failed(e) | CallError::Rejected(e)) => Err(e),
            Ok(called) => Ok(called),
        }
    }

    async fn restart_once(&self) {
        // A replayed server is never started: a miss is not a reason to go live.
        let replayed = self.cassette.as_ref().is_some_and(|c| !c.mode.live());
        if replayed || self.restarted.swap(true, std::sync::atomic::Ordering::SeqCst) {
            return;
        }
        let mut slot = self.session.lock().await;
        if let Some(old) = slot.take() {
            old.close().await;
        }
        if let Ok(session) = open(&self.recorded_as, &self.endpoint, self.era.as_deref(), self.cassette.as_ref()).await
        {
            *slot = Some(session);
        }
    }
}

/// A session with the server: connected, connected and recorded, or replayed from the
/// cassette without starting it.
async fn open(
    name: &str,
    endpoint: &Endpoint,
    era: Option<&str>,
    cassette: Option<&Arc<Cassette>>,
) -> Result<Arc<dyn McpSession>, McpError> {
    if let Some(cassette) = cassette.filter(|c| !c.mode.live()) {
        return Ok(Arc::new(ReplayedSession::open(name, era, cassette.clone()).await?));
    }
    let live: Arc<dyn McpSession> = Arc::new(connect(endpoint, era, START_TIMEOUT).await?);
    Ok(match cassette {
        Some(cassette) => Arc::new(RecordingSession::new(name, era, cassette.clone(), live).await?),
        None => live,
    })
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    /// A session that counts the calls that reach it.
    struct Counting(Arc<AtomicUsize>);

    #[async_trait::async_trait]
    impl McpSession for Counting {
        fn info(&self) -> ServerInfo {
            ServerInfo::default()
        }
        async fn list_tools(&self) -> Result<super::super::session::ToolList, McpError> {
            Ok(Default::default())
        }
        async fn call_tool(&self, _: &str, _: Value) -> Result<Value, CallError> {
            self.0.fetch_add(1, Ordering::SeqCst);
            Ok(json!({"content": [{"type": "text", "text": "done"}]}))
        }
        async fn request(&self, _: &str, _: Value) -> Result<Value, McpError> {
            Ok(Value::Null)
        }
        async fn close(&self) {}
    }

    fn server(allow_side_effects: bool) -> (Server, Arc<AtomicUsize>) {
        let calls = Arc::new(AtomicUsize::new(0));
        let tool = |name: &str, destructive| ToolInfo {
            name: name.into(),
            description: String::new(),
            input_schema: Value::Null,
            output_schema: None,
            annotations: Value::Null,
            destructive,
        };
        let server = Server::new(
            "fs".into(),
            Endpoint::Http { url: String::new(), headers: Vec::new(), auth: None },
            Some(Arc::new(Counting(calls.clone()))),
            vec![tool("read", false), tool("wipe", true)],
            ServerInfo::default(),
            allow_side_effects,
        );
        (server, calls)
    }

    const SECOND: Duration = Duration::from_secs(1);

    #[tokio::test]
    async fn a_refused_call_never_reaches_the_server() {
        let (server, calls) = server(false);
        for (tool, why) in [
            (
                "wipe",
                "`fs.wipe` is annotated destructiveHint: calling it is refused unless `mcp_servers.fs.allow_side_effects: true`",
            ),
            (
                "unlisted",
                "`fs.unlisted` is not in the server's tools/list, so it may be destructive: calling it is refused unless `mcp_servers.fs.allow_side_effects: true`",
            ),
        ] {
            let Err(CallError::Refused(reason)) = server.call(tool, json!({}), SECOND).await else {
                panic!("{tool} was not refused")
            };
            assert_eq!(reason, why);
            // An agent reads the refusal as the tool's error.
            let result = server.call_for_agent(tool, json!({}), SECOND).await.unwrap().result;
            assert_eq!(result["isError"], true);
            assert_eq!(result["content"][0]["text"], format!("not executed: {why}"));
        }
        assert_eq!(calls.load(Ordering::SeqCst), 0);
        assert_eq!(server.callable_tools().map(|t| t.name.as_str()).collect::<Vec<_>>(), ["read"]);
        server.call("read", json!({}), SECOND).await.unwrap();
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn allow_side_effects_lets_every_call_through() {
        let (server, calls) = server(true);
        assert_eq!(server.callable_tools().count(), 2);
        for tool in ["read", "wipe", "unlisted"] {
            assert_eq!(server.refusal(tool), None);
            server.call(tool, json!({}), SECOND).await.unwrap();
        }
        assert_eq!(calls.load(Ordering::SeqCst), 3);
    }

    #[test]
    fn a_result_is_held_to_the_output_schema_its_tool_declares() {
        let schema = json!({"type": "object", "required": ["items"], "properties": {"items": {"type": "array",
            "items": {"type": "object", "properties": {"price": {"type": "number"}}}}}});
        let tool = ToolInfo {
            name: "quote".into(),
            description: String::new(),
            input_schema: Value::Null,
            output_schema: Some(schema),
            annotations: Value::Null,
            destructive: false,
        };
        let calls = Arc::new(AtomicUsize::new(0));
        let endpoint = Endpoint::Http { url: String::new(), headers: Vec::new(), auth: None };
        let server = Server::new(
            "shop".into(),
            endpoint,
            Some(Arc::new(Counting(calls))),
            vec![tool],
            ServerInfo::default(),
            true,
        );
        let good = json!({"content": [], "structuredContent": {"items": [{"price": 2.5}]}});
        assert_eq!(server.violation("quote", &good), None);
        let bad = json!({"content": [], "structuredContent": {"items": [{"price": "2.50"}]}});
        assert_eq!(
            server.violation("quote", &bad).unwrap(),
            r#"`shop.quote` broke its outputSchema: structuredContent.items[0].price: "2.50" is not of type "number""#
        );
        let bare = json!({"content": [{"type": "text", "text": "{}"}]});
        assert!(server.violation("quote", &bare).unwrap().ends_with("its result has no structuredContent"));
        // A tool error carries no structured result; a tool without a schema has no contract.
        assert_eq!(server.violation("quote", &json!({"content": [], "isError": true})), None);
        assert_eq!(server.violation("other", &bad), None);
    }
}
