//! One trial of an ACP agent: start it, `initialize` (version negotiated), `session/new` in
//! the trial's working directory with its MCP servers (through recording proxies), the mode
//! and model asked for, then the prompt; every request it makes meanwhile is answered
//! (permissions by the policy, files inside the working directory) and recorded. Past the
//! timeout the turn is cancelled (`session/cancel`) and the trial is an error; whatever
//! happened, the agent's whole process group is killed at the end.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::client_files;
use super::connection::{Connection, Incoming};
use super::protocol::{self, Stop};
use super::updates::TraceBuilder;
use crate::cassette::Cassette;
use crate::mcp::servers::Servers;
use crate::process::piped::Piped;
use crate::process::reaper;
use crate::suite::model::{AcpAgent, ToolKind};
use crate::sut::agent_run_setup as setup;
use crate::sut::model_endpoint::ModelEndpoint;
use crate::sut::{AgentError, AgentRun, SystemUnderTest};
use crate::template::Bindings;
use crate::trace::{ClientCall, PermissionAsked, ToolCall, Trace};

/// How long a cancelled turn is waited for before the agent is killed.
const CANCEL_GRACE: Duration = Duration::from_secs(3);

/// An ACP agent as a system under test.
pub struct AcpSut<'a> {
    pub agent: &'a AcpAgent,
    /// The run's MCP servers, handed to the session through recording proxies.
    pub servers: &'a Servers,
    /// The suite's cassette: the agent's own model calls go through a [`ModelEndpoint`].
    pub cassette: Option<&'a Arc<Cassette>>,
    /// The trial's workspace: the session's working directory.
    pub workspace: Option<&'a crate::workspace::TrialWorkspace>,
}

#[async_trait::async_trait]
impl SystemUnderTest for AcpSut<'_> {
    async fn run(&self, bindings: &Bindings, timeout: Duration) -> Result<AgentRun, AgentError> {
        let mut session = self.open(bindings, timeout).await?;
        let outcome = session.exchange(&bindings.prompt, timeout).await;
        session.finish(outcome).await
    }
}

impl<'a> AcpSut<'a> {
    /// Starts the agent for a trial, its MCP proxies and model endpoint; the protocol
    /// starts with the first [`AcpSession::exchange`]. `timeout` bounds the sandbox's own
    /// start when the workspace confines it.
    pub async fn open(&self, bindings: &Bindings, timeout: Duration) -> Result<AcpSession<'a>, AgentError> {
        let agent = self.agent;
        let setup::Rendered { argv, env } = setup::render_command(bindings, &agent.command, &agent.env)?;
        // In a workspace, its own script is still found beside the suite (and readable in
        // its sandbox).
        let (argv, program_files) = match self.workspace {
            Some(_) => setup::own_files(argv, &agent.workdir),
            None => (argv, Vec::new()),
        };
        let cwd = crate::workspace::agent_cwd(&agent.workdir, self.workspace).to_owned();
        let cwd = std::path::absolute(&cwd).unwrap_or(cwd);
        let proxies = setup::start_proxies(self.servers, &agent.mcp).await?;
        let mcp_servers: Vec<Value> = proxies
            .iter()
            .map(|(name, proxy)| json!({"type": "http", "name": name, "url": proxy.url(), "headers": []}))
            .collect();
        let endpoint = setup::start_endpoint(self.cassette, &cwd, &env).await?;
        let mut spec = crate::process::ProcessSpec::argv(argv, cwd.clone(), timeout);
        spec.env = setup::env_under_endpoint(endpoint.as_ref(), env);
        spec.env.push(("EVALGATE_TASK_ID".into(), bindings.task_id.clone()));
        // Confined as a command agent is, its endpoints relayed under `network: none`.
        let mut relay = None;
        if let Some(workspace) = self.workspace {
            let ports: Vec<u16> =
                endpoint.iter().map(ModelEndpoint::port).chain(proxies.iter().map(|(_, p)| p.port)).collect();
            (spec, relay) = workspace.confine(spec, program_files, &ports, true).map_err(|reason| AgentError {
                reason,
                run: None,
                agent_fault: false,
            })?;
        }
        let argv: Vec<&String> = std::iter::once(&spec.program).chain(&spec.args).collect();
        let mut cmd = tokio::process::Command::new(argv[0]);
        cmd.args(&argv[1..]).envs(spec.env.iter().map(|(k, v)| (k, v))).current_dir(&cwd);
        let started = Instant::now();
        let piped = Piped::spawn(&mut cmd, &reaper::new_owner());
        let piped = piped.map_err(|e| AgentError {
            reason: format!("cannot start `{}`: {e}", argv[0]),
            run: None,
            agent_fault: false,
        })?;
        let conversation = Conversation {
            conn: Connection::new(piped),
            trace: TraceBuilder::new(agent.mcp.clone()),
            agent,
            cwd,
            session_id: None,
            prompt_id: None,
            cancelling: false,
            model: None,
        };
        let workspace = self.workspace;
        Ok(AcpSession {
            conversation,
            mcp_servers: Some(mcp_servers),
            proxies,
            endpoint,
            relay,
            workspace,
            started,
            agent,
        })
    }
}

/// An ACP agent's session across the turns of a trial: one process, one `session/new`,
/// a `session/prompt` a turn.
pub struct AcpSession<'a> {
    conversation: Conversation<'a>,
    /// Handed to `session/new` at the first exchange.
    mcp_servers: Option<Vec<Value>>,
    proxies: Vec<(String, crate::mcp::proxy::Proxy)>,
    endpoint: Option<ModelEndpoint>,
    /// The endpoints relayed into the sandbox under `network: none`, for the session's life.
    relay: Option<crate::workspace::relay::HostRelay>,
    /// The trial's workspace when it confines the agent.
    workspace: Option<&'a crate::workspace::TrialWorkspace>,
    started: Instant,
    agent: &'a AcpAgent,
}

impl AcpSession<'_> {
    /// One turn within `timeout` (the first opens the session): its stop reason, or why
    /// there is none. A model request the cassette does not hold ends it.
    pub async fn exchange(&mut self, prompt: &str, timeout: Duration) -> Result<String, String> {
        let missed = async {
            match &self.endpoint {
                Some(endpoint) => endpoint.missed().await,
                None => std::future::pending().await,
            }
        };
        let opening = self.mcp_servers.take();
        // A miss fails the trial: an agent that retries the 500 is not waited for.
        tokio::select! {
            outcome = self.conversation.converse(opening, prompt, timeout) => outcome,
            () = missed => Err("asked its model what the cassette does not hold".to_owned()),
        }
    }

    /// What the last turn answered (its text) and the tool calls it reported since the
    /// turn before, for a conversation's turn, with why the turn is an error if it is one;
    /// the whole trace stays for [`Self::finish`].
    pub fn turn(&mut self, outcome: &Result<String, String>) -> (AgentRun, Option<String>) {
        let (output, calls) = self.conversation.trace.take_turn();
        let mut run = AgentRun {
            output,
            output_truncated: self.conversation.trace.cut,
            trace: Trace { tool_calls: Some(calls), model: self.conversation.model.clone(), ..Trace::default() },
            ..AgentRun::default()
        };
        let error = match outcome.clone().map(|reason| Stop::of(&reason)) {
            Ok(Stop::Finished) => None,
            Ok(Stop::Failed(why)) => {
                run.failure = Some(why);
                None
            }
            Ok(Stop::Error(why)) | Err(why) => Some(format!("agent `{}` {why}", self.agent.name)),
        };
        (run, error)
    }

    /// Ends the session: the agent killed, its whole trace (every turn's), the calls the
    /// proxies saw reconciled with those it reported, the endpoint stopped; `outcome` is
    /// the last turn's.
    pub async fn finish(self, outcome: Result<String, String>) -> Result<AgentRun, AgentError> {
        let AcpSession { conversation, proxies, endpoint, relay, workspace, started, agent, .. } = self;
        let Conversation { conn, trace, model, .. } = conversation;
        let output_truncated = trace.cut;
        if let Some(workspace) = workspace {
            workspace.end_session(conn.pid());
        }
        let stderr = conn.close().await;
        drop(relay);
        let latency = started.elapsed();
        let mut trace = trace.finish(outcome.as_ref().ok().cloned());
        trace.model = model;
        for note in reconcile(&mut trace, setup::proxied_calls(proxies)) {
            reaper::note(note);
        }
        let ended = endpoint.map(ModelEndpoint::stop);
        let mut run = AgentRun {
            output: trace.output.clone().unwrap_or_default(),
            output_truncated,
            stderr: stderr.clone(),
            latency,
            trace,
            replayed: ended.as_ref().is_some_and(|e| e.replayed),
            ..AgentRun::default()
        };
        if let Some(reason) = setup::missed(ended.as_ref(), &agent.name) {
            return Err(AgentError { reason, run: Some(run), agent_fault: false });
        }
        let error = |why: String| {
            let mut reason = format!("agent `{}` {why}", agent.name);
            if let Some(line) = stderr.lines().rev().find(|l| !l.trim().is_empty()) {
                reason.push_str("; its stderr ends: ");
                reason.push_str(line.trim());
            }
            reason
        };
        match outcome.map(|reason| Stop::of(&reason)) {
            Ok(Stop::Finished) => Ok(run),
            Ok(Stop::Failed(why)) => {
                run.failure = Some(why);
                Ok(run)
            }
            Ok(Stop::Error(why)) | Err(why) => {
                Err(AgentError { reason: error(why), run: Some(run), agent_fault: false })
            }
        }
    }
}

/// A trial's conversation with its agent.
struct Conversation<'a> {
    conn: Connection,
    trace: TraceBuilder,
    agent: &'a AcpAgent,
    cwd: PathBuf,
    session_id: Option<String>,
    /// The id of `session/prompt` while the turn runs.
    prompt_id: Option<u64>,
    /// `session/cancel` was sent: permissions are answered `cancelled`.
    cancelling: bool,
    model: Option<String>,
}

impl Conversation<'_> {
    /// A turn within `timeout`, after opening the session when given its MCP servers (the
    /// first turn): the turn's stop reason, or why there is none.
    async fn converse(
        &mut self,
        opening: Option<Vec<Value>>,
        prompt: &str,
        timeout: Duration,
    ) -> Result<String, String> {
        let work = async {
            if let Some(mcp_servers) = opening {
                self.open(mcp_servers).await?;
            }
            let id = self.session_id.clone().unwrap_or_default();
            let params = json!({"sessionId": id, "prompt": [{"type": "text", "text": prompt}]});
            let answer = self.call("session/prompt", params).await?;
            if let Some(usage) = answer.get("usage") {
                self.trace.prompt_usage(usage);
            }
            match answer.get("stopReason").and_then(Value::as_str) {
                Some(reason) => Ok(reason.to_owned()),
                None => Err("answered `session/prompt` without a `stopReason`".into()),
            }
        };
        match tokio::time::timeout(timeout, work).await {
            Ok(outcome) => outcome,
            Err(_) => {
                let within = humantime::format_duration(timeout);
                Err(format!("timed out after {within}{}", self.cancel().await))
            }
        }
    }

    /// `initialize` (the version checked), `session/new` with the MCP servers, then the
    /// mode and model asked for.
    async fn open(&mut self, mcp_servers: Vec<Value>) -> Result<(), String> {
        {
            let init = self.call("initialize", protocol::initialize()).await?;
            let version = init.get("protocolVersion").and_then(Value::as_u64);
            if version != Some(protocol::PROTOCOL_VERSION) {
                let said = init.get("protocolVersion").map_or("none".into(), Value::to_string);
                return Err(format!(
                    "speaks ACP protocol version {said}; evalgate speaks {}",
                    protocol::PROTOCOL_VERSION
                ));
            }
            let http = init.pointer("/agentCapabilities/mcpCapabilities/http").and_then(Value::as_bool);
            if !mcp_servers.is_empty() && http != Some(true) {
                return Err("takes no MCP servers over HTTP (`mcpCapabilities.http`), and evalgate hands them \
                            over through its recording proxy"
                    .into());
            }
            let cwd = self.cwd.display().to_string();
            let new = self.call("session/new", json!({"cwd": cwd, "mcpServers": mcp_servers})).await?;
            let id =
                new.get("sessionId").and_then(Value::as_str).ok_or("answered `session/new` without a `sessionId`")?;
            self.session_id = Some(id.to_owned());
            self.model = new.pointer("/models/currentModelId").and_then(Value::as_str).map(str::to_owned);
            if let Some(mode) = &self.agent.mode {
                let offered = listed(&new, "/modes/availableModes", "id");
                self.choose("mode", mode, &offered, "session/set_mode", json!({"sessionId": id, "modeId": mode}))
                    .await?;
            }
            if let Some(model) = &self.agent.model {
                let offered = listed(&new, "/models/availableModels", "modelId");
                let params = json!({"sessionId": id, "modelId": model});
                self.choose("model", model, &offered, "session/set_model", params).await?;
                self.model = Some(model.clone());
            }
            Ok(())
        }
    }

    /// Sets the session's mode or model to `wanted`, one of those the agent `offered`.
    async fn choose(
        &mut self,
        what: &str,
        wanted: &str,
        offered: &[String],
        method: &str,
        params: Value,
    ) -> Result<(), String> {
        if !offered.iter().any(|o| o == wanted) {
            let offered = if offered.is_empty() { "none".to_owned() } else { offered.join(", ") };
            return Err(format!("offers no {what} `{wanted}` (it offers: {offered})"));
        }
        self.call(method, params).await.map(drop)
    }

    /// Cancels the turn running, and waits a little for its answer; says how it went.
    async fn cancel(&mut self) -> String {
        let (Some(session), Some(prompt)) = (self.session_id.clone(), self.prompt_id) else {
            return String::new();
        };
        self.cancelling = true;
        if self.conn.notify("session/cancel", json!({"sessionId": session})).await.is_err() {
            return "; it could not be sent `session/cancel`".into();
        }
        let answered = tokio::time::timeout(CANCEL_GRACE, self.wait_for(prompt, "session/prompt")).await;
        match answered {
            Ok(Ok(answer)) => {
                let reason = answer.get("stopReason").and_then(Value::as_str).unwrap_or("none");
                format!("; after `session/cancel` it stopped (stop reason `{reason}`)")
            }
            Ok(Err(why)) => format!("; after `session/cancel` it {why}"),
            Err(_) => {
                format!("; it did not answer `session/cancel` within {}", humantime::format_duration(CANCEL_GRACE))
            }
        }
    }

    /// Sends a request and waits for its answer, serving the agent meanwhile.
    async fn call(&mut self, method: &str, params: Value) -> Result<Value, String> {
        let id = self.conn.request(method, params).await?;
        if method == "session/prompt" {
            self.prompt_id = Some(id);
        }
        self.wait_for(id, method).await
    }

    async fn wait_for(&mut self, id: u64, method: &str) -> Result<Value, String> {
        loop {
            match self.conn.next().await? {
                Incoming::Answer { id: answered, result } if answered == id => {
                    return result.map_err(|e| format!("answered `{method}` with {e}"));
                }
                Incoming::Answer { id, .. } => return Err(format!("answered a request it was not asked (id {id})")),
                Incoming::Request { id, method, params } => {
                    let answer = self.serve(&method, &params);
                    self.conn.answer(id, answer).await?;
                }
                Incoming::Notification { method, params } => {
                    let ours = params.get("sessionId").and_then(Value::as_str) == self.session_id.as_deref();
                    if method == "session/update" && ours {
                        self.trace.apply(params.get("update").unwrap_or(&Value::Null));
                    }
                }
            }
        }
    }

    /// Answers one of the agent's requests, and records it.
    fn serve(&mut self, method: &str, params: &Value) -> Result<Value, (i64, String)> {
        if method == "session/request_permission" {
            return Ok(self.permission(params));
        }
        let answer = match method {
            "fs/read_text_file" | "fs/write_text_file" => client_files::serve(method, params, &self.cwd),
            m if m.starts_with("terminal/") => Err((-32601, "evalgate offers no terminal (`terminal: false`)".into())),
            other => Err((-32601, format!("method `{other}` is not offered"))),
        };
        let path = params.get("path").and_then(Value::as_str).map(str::to_owned);
        let refused = answer.as_ref().err().map(|(_, why)| why.clone());
        self.trace.session_mut().client_calls.push(ClientCall { method: method.to_owned(), path, refused });
        answer
    }

    /// The policy's answer to a permission request, recorded; `cancelled` once the turn is.
    fn permission(&mut self, params: &Value) -> Value {
        let call = params.get("toolCall").unwrap_or(&Value::Null);
        let tool = self.trace.tool_name(call);
        let kind = call.get("kind").and_then(Value::as_str);
        let paths: Vec<String> = call
            .get("locations")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|l| l.get("path").and_then(Value::as_str).map(str::to_owned))
            .collect();
        let (allowed, rule) = if self.cancelling {
            (false, "cancelled".to_owned())
        } else {
            let as_paths: Vec<PathBuf> = paths.iter().map(PathBuf::from).collect();
            let ruling = self.agent.permissions.decide(&tool, kind.and_then(ToolKind::parse), &as_paths, &self.cwd);
            (ruling.allowed, ruling.rule)
        };
        let option = (!self.cancelling).then(|| protocol::option_for(&params["options"], allowed)).flatten();
        let answer = protocol::permission_answer(option.as_ref().map(|(id, _)| id.as_str()));
        self.trace.session_mut().permissions.push(PermissionAsked {
            tool,
            kind: kind.map(str::to_owned),
            title: call.get("title").and_then(Value::as_str).unwrap_or_default().to_owned(),
            input: call.get("rawInput").cloned().unwrap_or(Value::Null),
            paths,
            allowed: allowed && option.is_some(),
            rule,
            option: option.map(|(_, kind)| kind),
        });
        answer
    }
}

/// The `key`s of the list at `pointer` in `session/new`'s answer (its modes, its models).
fn listed(new: &Value, pointer: &str, key: &str) -> Vec<String> {
    let list = new.pointer(pointer).and_then(Value::as_array).into_iter().flatten();
    list.filter_map(|m| m.get(key).and_then(Value::as_str).map(str::to_owned)).collect()
}

/// What the agent reported of its MCP calls against what the servers received (through
/// the proxies): each disagreement described. A call a server received and the agent did not
/// report joins the trace (the graders judge what happened); a call it reported completed
/// and no server received stays, and is described.
fn reconcile(trace: &mut Trace, proxied: Vec<ToolCall>) -> Vec<String> {
    let reported = trace.tool_calls.get_or_insert_default();
    let mut unmatched: Vec<usize> = (0..reported.len())
        .filter(|&i| reported[i].server.is_some() && reported[i].status.as_deref().is_none_or(|s| s == "completed"))
        .collect();
    let mut notes = Vec::new();
    for call in proxied {
        let same = |i: &usize| {
            let r = &reported[*i];
            r.server == call.server && r.name == call.name && r.arguments == call.arguments
        };
        match unmatched.iter().position(same) {
            Some(at) => {
                unmatched.remove(at);
            }
            None => {
                notes.push(format!(
                    "the MCP server received `{}.{}` {}, which the agent did not report",
                    call.server.as_deref().unwrap_or_default(),
                    call.name,
                    crate::excerpt::excerpt(&call.arguments.to_string(), 200)
                ));
                reported.push(call);
            }
        }
    }
    for i in unmatched {
        let r = &reported[i];
        notes.push(format!(
            "the agent reported `{}.{}` {}, which no MCP server received",
            r.server.as_deref().unwrap_or_default(),
            r.name,
            crate::excerpt::excerpt(&r.arguments.to_string(), 200)
        ));
    }
    notes
}
