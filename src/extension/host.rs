//! One running extension: its process (in a group of its own, tracked by the reaper like
//! every process evalgate starts), the one conversation with it (a request at a time, so a
//! `log` belongs to the operation it came during), and the tail of its stderr.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout};

use super::messages::{Context, Log, Manifest, Outcome, PROTOCOL_VERSION};
use crate::excerpt::excerpt;
use crate::process::piped::{Piped, StderrTail, kill_group, read_line};
use crate::process::reaper;

/// The longest line read from an extension's stdout: a longer one is garbage, not a message.
pub const MAX_LINE: usize = 4 << 20;
/// How long `shutdown` is waited for before the group is killed.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(3);

/// How to start one extension.
#[derive(Debug, Clone)]
pub struct Launch {
    /// The name the suite gives it (`kubernetes`, or its `as`).
    pub alias: String,
    pub program: PathBuf,
    pub env: BTreeMap<String, String>,
    pub cwd: PathBuf,
    /// `initialize`'s `config`.
    pub config: Value,
}

/// What an operation answered, with the `log`s it sent while it ran.
#[derive(Debug, Clone)]
pub struct Executed {
    pub outcome: Outcome,
    pub logs: Vec<Log>,
}

/// Why a conversation with an extension failed: never a pass, always named.
#[derive(Debug, Clone, PartialEq)]
pub struct HostError(pub String);

impl std::fmt::Display for HostError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

struct Conn {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

/// A started, initialized extension.
pub struct Extension {
    pub alias: String,
    pub manifest: Manifest,
    conn: tokio::sync::Mutex<Option<Conn>>,
    /// Why it was stopped before the run's end (an operation timed out, it wrote garbage).
    stopped: Mutex<Option<String>>,
    stderr: StderrTail,
    pgid: Option<i32>,
}

impl std::fmt::Debug for Extension {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Extension").field("alias", &self.alias).field("manifest", &self.manifest).finish()
    }
}

impl Extension {
    /// Starts the extension and asks its manifest, within `timeout`; on any failure the
    /// process group is killed and the error names the extension.
    pub async fn start(launch: &Launch, timeout: Duration) -> Result<Extension, HostError> {
        let alias = &launch.alias;
        let mut cmd = tokio::process::Command::new(&launch.program);
        cmd.envs(&launch.env).current_dir(&launch.cwd);
        let Piped { child, stdin, stdout, stderr, pgid } = Piped::spawn(&mut cmd, &reaper::new_run_owner())
            .map_err(|e| HostError(format!("extension `{alias}`: cannot start `{}`: {e}", launch.program.display())))?;
        let conn = Conn { child, stdin, stdout, next_id: 1 };
        let mut extension = Extension {
            alias: alias.clone(),
            manifest: Manifest::default(),
            conn: tokio::sync::Mutex::new(Some(conn)),
            stopped: Mutex::new(None),
            stderr,
            pgid,
        };
        let params = json!({"protocolVersion": PROTOCOL_VERSION, "config": launch.config});
        let answer = extension.request("initialize", params, timeout, "initialize", &mut Vec::new()).await;
        let manifest = answer.and_then(|value| {
            serde_json::from_value::<Manifest>(value)
                .map_err(|e| HostError(format!("extension `{alias}`: its manifest is not one ({e})")))
        });
        match manifest {
            Ok(manifest) => {
                extension.manifest = manifest;
                Ok(extension)
            }
            Err(e) => {
                extension.kill().await;
                Err(extension.with_stderr(e))
            }
        }
    }

    /// Runs one operation. A timeout, a crash or a line that is not JSON-RPC stops the
    /// extension (its state is unknown) and is an error, and so is any later call to it; a
    /// JSON-RPC error or an answer that is not an outcome is an error of this call only.
    pub async fn execute(
        &self,
        operation: &str,
        args: Value,
        context: Context,
        timeout: Duration,
    ) -> Result<Executed, HostError> {
        let mut logs = Vec::new();
        let what = format!("{}.{operation}", self.alias);
        let params = json!({"operation": operation, "args": args, "context": context});
        let answer = self.request("execute", params, timeout, &what, &mut logs).await?;
        let outcome = serde_json::from_value::<Outcome>(answer.clone()).map_err(|e| {
            HostError(format!("{what}: the answer is not an outcome ({e}): {}", excerpt(&answer.to_string(), 200)))
        })?;
        Ok(Executed { outcome, logs })
    }

    /// Asks the extension to shut down, then kills its group whatever it answered.
    pub async fn shutdown(&self) {
        if self.stopped.lock().unwrap_or_else(|e| e.into_inner()).is_none() {
            let _ = self.request("shutdown", json!({}), SHUTDOWN_GRACE, "shutdown", &mut Vec::new()).await;
            if let Some(conn) = self.conn.lock().await.as_mut() {
                let _ = tokio::time::timeout(SHUTDOWN_GRACE, conn.child.wait()).await;
            }
        }
        self.kill().await;
    }

    /// Why it was stopped before the run's end, if it was.
    pub fn stopped(&self) -> Option<String> {
        self.stopped.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The last of what the extension wrote to stderr, redacted.
    pub fn stderr_tail(&self) -> String {
        self.stderr.text()
    }

    fn with_stderr(&self, e: HostError) -> HostError {
        match self.stderr_tail() {
            tail if tail.is_empty() => e,
            tail => HostError(format!("{}; its stderr ends: {}", e.0, crate::excerpt::last(&tail, 400))),
        }
    }

    async fn kill(&self) {
        kill_group(self.pgid);
        if let Some(mut conn) = self.conn.lock().await.take() {
            let _ = conn.child.wait().await;
        }
        self.stderr.finish().await;
    }

    async fn stop(&self, why: String) -> HostError {
        *self.stopped.lock().unwrap_or_else(|e| e.into_inner()) = Some(why.clone());
        self.kill().await;
        self.with_stderr(HostError(why))
    }

    /// One request and its answer; `log`s that come meanwhile go to `logs`.
    async fn request(
        &self,
        method: &str,
        params: Value,
        timeout: Duration,
        what: &str,
        logs: &mut Vec<Log>,
    ) -> Result<Value, HostError> {
        if let Some(why) = self.stopped.lock().unwrap_or_else(|e| e.into_inner()).clone() {
            return Err(HostError(format!("{what}: extension `{}` was stopped earlier ({why})", self.alias)));
        }
        let mut guard = self.conn.lock().await;
        let Some(conn) = guard.as_mut() else {
            return Err(HostError(format!("{what}: extension `{}` is not running", self.alias)));
        };
        let id = conn.next_id;
        conn.next_id += 1;
        let exchange = async {
            let answer: Result<Result<Value, String>, String> = async {
                let mut line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string();
                line.push('\n');
                conn.stdin.write_all(line.as_bytes()).await.map_err(|e| format!("cannot write to it: {e}"))?;
                conn.stdin.flush().await.map_err(|e| format!("cannot write to it: {e}"))?;
                let mut partial = Vec::new();
                loop {
                    // The extension's exit ends the wait even when a child it left holds stdout.
                    let line = tokio::select! {
                        line = read_line(&mut conn.stdout, &mut partial, MAX_LINE) => line?,
                        status = conn.child.wait() => {
                            let status = status.map_or_else(|e| e.to_string(), |s| s.to_string());
                            return Err(format!("exited ({status})"));
                        }
                    };
                    match answer_to(&line, id)? {
                        Message::Log(log) => logs.push(log),
                        Message::Other => {}
                        Message::Answer(answer) => return Ok(answer),
                    }
                }
            }
            .await;
            answer
        };
        let result = tokio::time::timeout(timeout, exchange).await;
        drop(guard);
        let alias = &self.alias;
        match result {
            Ok(Ok(Ok(value))) => Ok(value),
            // A JSON-RPC error: the request was refused, the conversation is still in step.
            Ok(Ok(Err(why))) => Err(HostError(format!("{what}: extension `{alias}` {why}"))),
            Ok(Err(why)) => Err(self.stop(format!("{what}: extension `{alias}` {why}")).await),
            Err(_) => {
                let within = humantime::format_duration(timeout);
                Err(self
                    .stop(format!("{what}: extension `{alias}` did not answer within {within}; it was stopped"))
                    .await)
            }
        }
    }
}

#[derive(Debug)]
enum Message {
    Answer(Result<Value, String>),
    Log(Log),
    Other,
}

/// Reads one message line: the answer to `id` (a result, or a JSON-RPC error as `Err`), a
/// `log`, or another notification; anything else is garbage and ends the conversation.
fn answer_to(line: &str, id: u64) -> Result<Message, String> {
    let message: Value = serde_json::from_str(line)
        .map_err(|_| format!("wrote a line that is not JSON-RPC: {:?}", excerpt(line, 200)))?;
    if let Some(method) = message.get("method").and_then(Value::as_str) {
        if message.get("id").is_some() {
            return Err(format!("sent a request (`{method}`), which the protocol does not have"));
        }
        return Ok(match method {
            "log" => match serde_json::from_value(message["params"].clone()) {
                Ok(log) => Message::Log(log),
                Err(_) => Message::Other,
            },
            _ => Message::Other,
        });
    }
    if message.get("id").and_then(Value::as_u64) != Some(id) {
        return Err(format!("answered a request it was not asked: {}", excerpt(line, 200)));
    }
    if let Some(error) = message.get("error") {
        let text = error.get("message").and_then(Value::as_str).unwrap_or("(no message)");
        let code = error.get("code").and_then(Value::as_i64).map_or(String::new(), |c| format!(" {c}"));
        return Ok(Message::Answer(Err(format!("answered with error{code}: {}", excerpt(text, 400)))));
    }
    match message.get("result") {
        Some(result) => Ok(Message::Answer(Ok(result.clone()))),
        None => Err(format!("answered with neither `result` nor `error`: {}", excerpt(line, 200))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_is_an_answer_a_log_or_garbage() {
        let answer = answer_to(r#"{"jsonrpc":"2.0","id":3,"result":{"success":true}}"#, 3).unwrap();
        assert!(matches!(answer, Message::Answer(Ok(v)) if v["success"] == true));
        let log = answer_to(r#"{"jsonrpc":"2.0","method":"log","params":{"level":"info","message":"hi"}}"#, 3);
        assert!(matches!(log.unwrap(), Message::Log(l) if l.message == "hi"));
        let error = answer_to(r#"{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"file is required"}}"#, 3);
        assert!(
            matches!(error.unwrap(), Message::Answer(Err(e)) if e == "answered with error -32602: file is required")
        );
        assert!(answer_to("Applying manifest...", 3).unwrap_err().starts_with("wrote a line that is not JSON-RPC"));
        assert!(answer_to(r#"{"jsonrpc":"2.0","id":2,"result":{}}"#, 3).unwrap_err().starts_with("answered a request"));
        assert!(answer_to(r#"{"jsonrpc":"2.0","id":9,"method":"fs/read"}"#, 3).is_err());
    }

    fn launch(dir: &std::path::Path, config: Value) -> Launch {
        let program = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/extension/files-ext");
        let env = BTreeMap::from([("FILES_EXT_SHUTDOWN".to_owned(), dir.join("shutdown").display().to_string())]);
        Launch { alias: "fx".into(), program, env, cwd: dir.to_owned(), config }
    }

    fn context(dir: &std::path::Path) -> Context {
        Context { workdir: dir.display().to_string(), phase: "setup", timeout: None, agent: None }
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn an_extension_answers_logs_and_shuts_down() {
        let dir = tempfile::tempdir().unwrap();
        let ext = Extension::start(&launch(dir.path(), json!({})), Duration::from_secs(20)).await.unwrap();
        assert_eq!((ext.manifest.name.as_str(), ext.manifest.operations.len()), ("files", 5));
        let wrote =
            ext.execute("write", json!({"path": "a", "content": "hi"}), context(dir.path()), Duration::from_secs(20));
        let wrote = wrote.await.unwrap();
        assert!(wrote.outcome.success && wrote.outcome.outputs["bytes"] == "2", "{wrote:?}");
        assert_eq!(wrote.logs[0].message, "writing a");
        let missing = ext.execute("exists", json!({"path": "b"}), context(dir.path()), Duration::from_secs(20)).await;
        assert_eq!(missing.unwrap().outcome.error.as_deref(), Some("b does not exist"));
        let rejected = ext.execute("misbehave", json!({"how": "error"}), context(dir.path()), Duration::from_secs(20));
        assert_eq!(
            rejected.await.unwrap_err().0,
            "fx.misbehave: extension `fx` answered with error -32602: invalid params: how"
        );
        ext.shutdown().await;
        assert_eq!(
            crate::files::read::text(&dir.path().join("shutdown"), crate::files::read::TEXT).unwrap(),
            "shutdown\n"
        );
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn a_hang_garbage_or_a_crash_stops_the_extension_and_is_never_an_answer() {
        let dir = tempfile::tempdir().unwrap();
        let ext = Extension::start(&launch(dir.path(), json!({})), Duration::from_secs(20)).await.unwrap();
        let slept = ext.execute("sleep", json!({"seconds": 30}), context(dir.path()), Duration::from_millis(300)).await;
        let why = slept.unwrap_err().0;
        assert!(why.starts_with("fx.sleep: extension `fx` did not answer within 300ms; it was stopped"), "{why}");
        let after =
            ext.execute("write", json!({"path": "a", "content": ""}), context(dir.path()), Duration::from_secs(5));
        assert!(after.await.unwrap_err().0.contains("was stopped earlier"));

        let ext = Extension::start(&launch(dir.path(), json!({})), Duration::from_secs(20)).await.unwrap();
        let garbage = ext.execute("misbehave", json!({"how": "garbage"}), context(dir.path()), Duration::from_secs(20));
        let why = garbage.await.unwrap_err().0;
        assert!(why.contains("wrote a line that is not JSON-RPC: \"Applying manifest...\""), "{why}");

        let ext = Extension::start(&launch(dir.path(), json!({})), Duration::from_secs(20)).await.unwrap();
        let crashed = ext.execute("misbehave", json!({"how": "crash"}), context(dir.path()), Duration::from_secs(20));
        let why = crashed.await.unwrap_err().0;
        assert!(
            why.starts_with("fx.misbehave: extension `fx` exited") && why.contains("panic: the cluster is gone"),
            "{why}"
        );

        let broken = Extension::start(&launch(dir.path(), json!({"no_manifest": true})), Duration::from_secs(20)).await;
        assert!(broken.unwrap_err().0.starts_with("extension `fx`: its manifest is not one"));
    }
}
