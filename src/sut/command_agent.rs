//! Command agents: any CLI that takes a prompt (argv, file or stdin) and prints its answer.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::agent_run_setup as setup;
use super::model_endpoint::ModelEndpoint;
use super::{AgentError, AgentRun, SystemUnderTest, Trace};
use crate::cassette::Cassette;
use crate::mcp::servers::Servers;
use crate::process::{ProcessSpec, run_process};
use crate::suite::model::CommandAgent;
use crate::template::Bindings;
use crate::template::Var;
use crate::workspace::{TrialWorkspace, agent_cwd};

/// The prompt, trace and MCP config files of one agent run, in the run's scratch directory
/// (one directory per task would cost two syscalls a task for nothing). The prompt and the
/// MCP config are removed on drop, each only if it was written (failed unlinks add up over
/// 10,000 tasks); the trace is taken, read and removed, on the process's thread.
struct ScratchFiles {
    prompt: PathBuf,
    trace: PathBuf,
    mcp_config: PathBuf,
    conversation: PathBuf,
    wrote_prompt: bool,
    wrote_mcp_config: bool,
    wrote_conversation: bool,
}

impl ScratchFiles {
    fn new(dir: &Path) -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        ScratchFiles {
            prompt: dir.join(format!("prompt-{n}.txt")),
            trace: dir.join(format!("trace-{n}.json")),
            mcp_config: dir.join(format!("mcp-{n}.json")),
            conversation: dir.join(format!("conversation-{n}.json")),
            wrote_prompt: false,
            wrote_mcp_config: false,
            wrote_conversation: false,
        }
    }
}

impl Drop for ScratchFiles {
    fn drop(&mut self) {
        let files = [
            (&self.prompt, self.wrote_prompt),
            (&self.mcp_config, self.wrote_mcp_config),
            (&self.conversation, self.wrote_conversation),
        ];
        for (path, written) in files {
            if written {
                let _ = std::fs::remove_file(path);
            }
        }
    }
}

pub struct CommandSut<'a> {
    pub agent: &'a CommandAgent,
    /// A directory for prompt and trace files, alive for the whole run.
    pub scratch_dir: &'a Path,
    /// The run's MCP servers, reached through recording proxies for `mcp: [...]`.
    pub servers: &'a Servers,
    /// The suite's cassette: the agent's own model calls go through a [`ModelEndpoint`].
    pub cassette: Option<&'a Arc<Cassette>>,
    /// The trial's workspace: the agent's working directory, and its sandbox.
    pub workspace: Option<&'a TrialWorkspace>,
    /// In a conversation, the earlier turns as JSON (`[{role, content}]`): written to a file
    /// named by `$EVALGATE_CONVERSATION` (docs/conversations.md).
    pub conversation: Option<&'a str>,
}

#[async_trait::async_trait]
impl SystemUnderTest for CommandSut<'_> {
    async fn run(&self, bindings: &Bindings, timeout: Duration) -> Result<AgentRun, AgentError> {
        let agent = self.agent;
        let mut scratch = ScratchFiles::new(self.scratch_dir);
        let mut bindings = bindings.clone();
        if agent.command.iter().any(|t| t.uses(&Var::PromptFile)) {
            scratch.wrote_prompt = true;
            tokio::fs::write(&scratch.prompt, &bindings.prompt).await.map_err(|e| AgentError {
                reason: format!("cannot write the prompt file: {e}"),
                run: None,
                agent_fault: false,
            })?;
            bindings.prompt_file = Some(scratch.prompt.clone());
        }
        if let Some(history) = self.conversation {
            scratch.wrote_conversation = true;
            tokio::fs::write(&scratch.conversation, history).await.map_err(|e| AgentError {
                reason: format!("cannot write the conversation file: {e}"),
                run: None,
                agent_fault: false,
            })?;
        }
        let trace_path = scratch.trace.clone();
        // Agents with `mcp: [...]` get a client config pointing at recording proxies.
        let proxies = setup::start_proxies(self.servers, &agent.mcp).await?;
        if !agent.mcp.is_empty() {
            let config: serde_json::Map<_, _> = proxies
                .iter()
                .map(|(name, proxy)| (name.clone(), serde_json::json!({"type": "http", "url": proxy.url()})))
                .collect();
            let text = serde_json::json!({"mcpServers": config}).to_string();
            scratch.wrote_mcp_config = true;
            tokio::fs::write(&scratch.mcp_config, text).await.map_err(|e| AgentError {
                reason: format!("cannot write the MCP config: {e}"),
                run: None,
                agent_fault: false,
            })?;
            bindings.mcp_config = Some(scratch.mcp_config.clone());
        }
        let setup::Rendered { argv, env } = setup::render_command(&bindings, &agent.command, &agent.env)?;
        let cwd = agent_cwd(&agent.workdir, self.workspace).to_owned();
        let endpoint = setup::start_endpoint(self.cassette, &cwd, &env).await?;
        let (argv, program_files) = match self.workspace {
            Some(_) => setup::own_files(argv, &agent.workdir),
            None => (argv, Vec::new()),
        };
        let mut spec = ProcessSpec::argv(argv, cwd, timeout);
        spec.env = setup::env_under_endpoint(endpoint.as_ref(), env);
        spec.env.push(("EVALGATE_TRACE".into(), trace_path.display().to_string()));
        spec.env.push(("EVALGATE_TASK_ID".into(), bindings.task_id.clone()));
        if let Some(config) = &bindings.mcp_config {
            spec.env.push(("EVALGATE_MCP_CONFIG".into(), config.display().to_string()));
        }
        if self.conversation.is_some() {
            spec.env.push(("EVALGATE_CONVERSATION".into(), scratch.conversation.display().to_string()));
        }
        if agent.stdin {
            spec.stdin = Some(bindings.prompt.clone().into_bytes());
        }
        spec.then_take = Some(trace_path);
        // Under `network: none` the endpoint and the proxies are relayed into the sandbox,
        // nothing else; the relay lives as long as the agent.
        let mut relay = None;
        if let Some(workspace) = self.workspace {
            let ports: Vec<u16> =
                endpoint.iter().map(ModelEndpoint::port).chain(proxies.iter().map(|(_, p)| p.port)).collect();
            (spec, relay) = workspace.confine(spec, program_files, &ports, false).map_err(|reason| AgentError {
                reason,
                run: None,
                agent_fault: false,
            })?;
        }

        let out =
            run_process(spec).await.map_err(|e| AgentError { reason: e.to_string(), run: None, agent_fault: false });
        drop(relay);
        let proxied = setup::proxied_calls(proxies);
        let ended = endpoint.map(ModelEndpoint::stop);
        let mut out = out?;
        if let Some(workspace) = self.workspace {
            workspace.take_report(&mut out.stderr.text);
        }
        let mut run = AgentRun {
            output: out.stdout.text.clone(),
            output_truncated: out.stdout.is_truncated(),
            stderr: out.stderr.text.clone(),
            exit_code: out.exit_code,
            latency: out.duration,
            trace: Trace::default(),
            tool_result: None,
            tool_error: None,
            failure: None,
            cached: false,
            replayed: ended.as_ref().is_some_and(|e| e.replayed),
        };
        // A request the cassette did not hold fails the task, whatever the agent made of it.
        if let Some(reason) = setup::missed(ended.as_ref(), &agent.name) {
            return Err(AgentError { reason, run: Some(run), agent_fault: false });
        }
        let trace = match out.taken.take().expect("the trace is taken") {
            Ok(bytes) => serde_json::from_slice::<Trace>(&bytes)
                .map(Some)
                .map_err(|e| format!("agent `{}` wrote an invalid trace to $EVALGATE_TRACE: {e}", agent.name)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(format!("cannot read the agent's trace: {e}")),
        };
        // Calls the proxy saw come after those the agent reported itself; with a proxy, the
        // calls are known even when the agent reports none.
        if out.timed_out || out.exit_code != Some(0) {
            let mut reason = format!("agent `{}` {}", agent.name, out.describe_end(timeout));
            if let Some(line) = out.stderr.text.lines().rev().find(|l| !l.trim().is_empty()) {
                reason.push_str(": ");
                reason.push_str(line.trim());
            }
            // What it did before it failed, for the leak check of an attempt that errored.
            run.trace = trace.ok().flatten().unwrap_or_default();
            if !agent.mcp.is_empty() {
                run.trace.tool_calls.get_or_insert_default().extend(proxied);
            }
            // Its own exit code is the agent's answer failing; a timeout or a signal (an
            // interruption) is not.
            let agent_fault = !out.timed_out && out.exit_code.is_some();
            return Err(AgentError { reason, run: Some(run), agent_fault });
        }
        match trace {
            Ok(Some(trace)) => {
                if let Some(output) = &trace.output {
                    // The trace's answer is read whole: stdout's cap no longer matters.
                    run.output = output.clone();
                    run.output_truncated = false;
                }
                run.failure = trace
                    .no_answer
                    .as_deref()
                    .map(|why| format!("agent `{}` gave no answer: {}", agent.name, crate::excerpt::first(why, 200)));
                run.trace = trace;
            }
            Ok(None) => {}
            // A trace it wrote wrong is its answer failing.
            Err(reason) => return Err(AgentError { reason, run: Some(run), agent_fault: true }),
        }
        if !agent.mcp.is_empty() {
            run.trace.tool_calls.get_or_insert_default().extend(proxied);
        }
        Ok(run)
    }
}
