//! Child processes: each in its own process group, output captured up to a cap, a timeout
//! (or dropping the future, on cancellation) kills the whole group.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;

/// Bytes kept of each of stdout and stderr; the rest is counted and dropped.
pub const OUTPUT_CAP: usize = 1024 * 1024;
/// How long a timed-out group gets between SIGTERM and SIGKILL.
const KILL_GRACE: Duration = Duration::from_millis(500);
/// How long to wait for output pipes to close after the main process exited
/// (a background child started by a setup step may hold them open for ever).
const DRAIN_GRACE: Duration = Duration::from_millis(250);

#[derive(Debug, Clone)]
pub struct ProcessSpec {
    pub program: String,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub cwd: PathBuf,
    pub stdin: Option<Vec<u8>>,
    pub timeout: Duration,
    /// Kill whatever is left in the process group once the main process exits
    /// (agents and graders: nothing of theirs may outlive them; setup steps may start daemons).
    pub reap_group: bool,
}

impl ProcessSpec {
    /// `sh -c SCRIPT`.
    pub fn shell(script: &str, cwd: PathBuf, timeout: Duration) -> Self {
        ProcessSpec::argv(vec!["sh".into(), "-c".into(), script.into()], cwd, timeout)
    }

    pub fn argv(mut argv: Vec<String>, cwd: PathBuf, timeout: Duration) -> Self {
        let program = if argv.is_empty() { String::new() } else { argv.remove(0) };
        ProcessSpec { program, args: argv, env: Vec::new(), cwd, stdin: None, timeout, reap_group: true }
    }
}

#[derive(Debug, Clone, Default)]
pub struct Captured {
    pub text: String,
    /// Bytes dropped beyond `OUTPUT_CAP`.
    pub dropped: u64,
}

impl Captured {
    pub fn is_truncated(&self) -> bool {
        self.dropped > 0
    }
}

#[derive(Debug, Clone)]
pub struct ProcessOutput {
    /// The exit code; `None` when a signal ended the process.
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub stdout: Captured,
    pub stderr: Captured,
    pub duration: Duration,
    pub timed_out: bool,
}

impl ProcessOutput {
    /// "exit 3", "killed by signal 9" or "timed out after 2s".
    pub fn describe_end(&self, timeout: Duration) -> String {
        if self.timed_out {
            format!("timed out after {}", humantime::format_duration(timeout))
        } else if let Some(code) = self.exit_code {
            format!("exit {code}")
        } else {
            format!("killed by signal {}", self.signal.unwrap_or(0))
        }
    }
}

#[derive(Debug, thiserror::Error)]
#[error("cannot start `{program}`: {source}")]
pub struct SpawnError {
    pub program: String,
    #[source]
    pub source: std::io::Error,
}

/// Whether `name` is one of evalgate's own credentials on a runner, which the system under
/// test never inherits: the PR-write token, the action's inputs, the runner's tokens. A
/// suite that needs one passes it explicitly (`env: {GH_TOKEN: "{env.GITHUB_TOKEN}"}`).
pub fn is_own_credential(name: &str) -> bool {
    name == "GITHUB_TOKEN"
        || name == "ACTIONS_RUNTIME_TOKEN"
        || name.starts_with("ACTIONS_ID_TOKEN_REQUEST_")
        || name.starts_with("INPUT_")
}

/// Removes evalgate's own credentials from what `command` inherits; variables set on it
/// explicitly afterwards still reach the child.
pub fn strip_credentials(command: &mut std::process::Command) {
    for (name, _) in std::env::vars_os() {
        if name.to_str().is_some_and(is_own_credential) {
            command.env_remove(name);
        }
    }
}

/// Every process group evalgate started and has not seen end, so a second signal can kill
/// them all at once (`stop_everything`), daemons of setup steps included.
static GROUPS: Mutex<BTreeSet<i32>> = Mutex::new(BTreeSet::new());
/// Set by `stop_everything`: no new process starts after it.
static STOPPING: AtomicBool = AtomicBool::new(false);

/// Records a process group started outside `run_process` (an MCP server).
pub fn track_group(pgid: i32) {
    GROUPS.lock().unwrap_or_else(|e| e.into_inner()).insert(pgid);
}

pub fn untrack_group(pgid: i32) {
    GROUPS.lock().unwrap_or_else(|e| e.into_inner()).remove(&pgid);
}

/// The second signal: refuse every new process and SIGKILL every group still known.
pub fn stop_everything() {
    STOPPING.store(true, Ordering::SeqCst);
    let groups = std::mem::take(&mut *GROUPS.lock().unwrap_or_else(|e| e.into_inner()));
    for pgid in groups {
        let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
    }
}

pub fn stopping() -> bool {
    STOPPING.load(Ordering::SeqCst)
}

/// Kills the process group when dropped, unless disarmed: cancellation and panics
/// leave no process behind.
struct GroupGuard(Option<Pid>);

impl GroupGuard {
    fn kill(&self, signal: Signal) {
        if let Some(pgid) = self.0 {
            let _ = killpg(pgid, signal);
        }
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        self.kill(Signal::SIGKILL);
        if let Some(pgid) = self.0 {
            untrack_group(pgid.as_raw());
        }
    }
}

pub async fn run_process(spec: &ProcessSpec) -> Result<ProcessOutput, SpawnError> {
    if stopping() {
        let source = std::io::Error::new(std::io::ErrorKind::Interrupted, "evalgate is stopping (second signal)");
        return Err(SpawnError { program: spec.program.clone(), source });
    }
    let started = Instant::now();
    let mut command = Command::new(&spec.program);
    strip_credentials(command.as_std_mut());
    command
        .args(&spec.args)
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .current_dir(&spec.cwd)
        .stdin(if spec.stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let mut child = command.spawn().map_err(|source| SpawnError { program: spec.program.clone(), source })?;
    let mut guard = GroupGuard(child.id().and_then(|id| i32::try_from(id).ok()).map(Pid::from_raw));
    if let Some(pgid) = guard.0 {
        track_group(pgid.as_raw());
    }

    if let (Some(bytes), Some(mut stdin)) = (spec.stdin.clone(), child.stdin.take()) {
        tokio::spawn(async move {
            // A child that exits without reading its stdin is not an error.
            let _ = stdin.write_all(&bytes).await;
        });
    }
    let stdout = Arc::new(Mutex::new(Buffer::default()));
    let stderr = Arc::new(Mutex::new(Buffer::default()));
    let readers = [
        child.stdout.take().map(|r| tokio::spawn(capture(r, stdout.clone()))),
        child.stderr.take().map(|r| tokio::spawn(capture(r, stderr.clone()))),
    ];

    let mut timed_out = false;
    let status = match tokio::time::timeout(spec.timeout, child.wait()).await {
        Ok(status) => status,
        Err(_) => {
            timed_out = true;
            guard.kill(Signal::SIGTERM);
            match tokio::time::timeout(KILL_GRACE, child.wait()).await {
                Ok(status) => status,
                Err(_) => {
                    guard.kill(Signal::SIGKILL);
                    child.wait().await
                }
            }
        }
    };
    if spec.reap_group || timed_out {
        guard.kill(Signal::SIGKILL);
    } else {
        // The group may hold a daemon the suite's cleanup stops: it stays known to
        // `stop_everything`, but is not killed here.
        guard.0 = None;
    }
    let duration = started.elapsed();
    for reader in readers.into_iter().flatten() {
        if tokio::time::timeout(DRAIN_GRACE, reader).await.is_err() {
            // The pipe is held open by a leftover background process; keep what arrived.
        }
    }
    let (exit_code, signal) = match status {
        Ok(s) => (s.code(), std::os::unix::process::ExitStatusExt::signal(&s)),
        Err(_) => (None, None),
    };
    let take = |b: &Arc<Mutex<Buffer>>| {
        let b = b.lock().unwrap_or_else(|e| e.into_inner());
        Captured { text: String::from_utf8_lossy(&b.bytes).into_owned(), dropped: b.dropped }
    };
    Ok(ProcessOutput { exit_code, signal, stdout: take(&stdout), stderr: take(&stderr), duration, timed_out })
}

#[derive(Default)]
struct Buffer {
    bytes: Vec<u8>,
    dropped: u64,
}

async fn capture(mut reader: impl AsyncRead + Unpin, into: Arc<Mutex<Buffer>>) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = match reader.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let mut b = into.lock().unwrap_or_else(|e| e.into_inner());
        let keep = n.min(OUTPUT_CAP.saturating_sub(b.bytes.len()));
        b.bytes.extend_from_slice(&buf[..keep]);
        b.dropped += (n - keep) as u64;
    }
}
