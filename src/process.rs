//! Child processes: each in its own process group, output captured up to a cap, a timeout
//! (or dropping the future, on cancellation) kills the whole group.

mod life;
pub mod piped;
pub mod reaper;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Bytes kept of each of stdout and stderr; the rest is counted and dropped.
pub const OUTPUT_CAP: usize = 1024 * 1024;
/// How long a timed-out group gets between SIGTERM and SIGKILL.
const KILL_GRACE: Duration = Duration::from_millis(500);
/// How long to wait for output pipes to close after the main process exited, before
/// taking what they hold and stopping (a background process may hold them open for ever).
const DRAIN_GRACE: Duration = Duration::from_millis(250);
/// The most read from a pipe after `DRAIN_GRACE` (the largest pipe buffer Linux allows by
/// default): all the exited process wrote, not what a leaked one keeps writing.
const DRAIN_MAX: usize = 1024 * 1024;

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
    /// A file the process may write (an agent's trace), read and removed once it has
    /// ended, on the same thread: [`ProcessOutput::taken`].
    pub then_take: Option<PathBuf>,
}

impl ProcessSpec {
    /// `sh -c SCRIPT`.
    pub fn shell(script: &str, cwd: PathBuf, timeout: Duration) -> Self {
        ProcessSpec::argv(vec!["sh".into(), "-c".into(), script.into()], cwd, timeout)
    }

    pub fn argv(mut argv: Vec<String>, cwd: PathBuf, timeout: Duration) -> Self {
        let program = if argv.is_empty() { String::new() } else { argv.remove(0) };
        ProcessSpec {
            program,
            args: argv,
            env: Vec::new(),
            cwd,
            stdin: None,
            timeout,
            reap_group: true,
            then_take: None,
        }
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

#[derive(Debug)]
pub struct ProcessOutput {
    /// The exit code; `None` when a signal ended the process.
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub stdout: Captured,
    pub stderr: Captured,
    pub duration: Duration,
    pub timed_out: bool,
    /// What it left behind or lost: escaped processes killed, a leak, output over the cap
    /// (also noted on the current trial).
    pub notes: Vec<String>,
    /// The file of [`ProcessSpec::then_take`], or why it could not be read (`NotFound`:
    /// the process wrote none).
    pub taken: Option<std::io::Result<Vec<u8>>>,
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

/// Keeps evalgate's memory and environment (which hold the PR-write token) from the
/// processes it runs as the same user: `/proc/EVALGATE/environ` is then readable by root
/// alone. What it starts is dumpable again (exec resets it), so nothing else changes.
pub fn keep_private() {
    #[cfg(target_os = "linux")]
    {
        let _ = nix::sys::prctl::set_dumpable(false);
    }
}

/// The runner's files evalgate writes (the step summary, step outputs, the job's
/// environment and path, state): what they say is evalgate's to say, so nothing it runs
/// inherits them (an agent wrote a green summary, or filled it so evalgate's was dropped).
const RUNNER_FILES: [&str; 5] = ["GITHUB_STEP_SUMMARY", "GITHUB_OUTPUT", "GITHUB_ENV", "GITHUB_PATH", "GITHUB_STATE"];

/// Removes what is evalgate's own from what `command` inherits: its credentials and the
/// runner's files; variables set on it explicitly afterwards still reach the child.
/// evalgate never changes its own environment, so their names are looked up once, not at
/// every spawn.
pub fn strip_credentials(command: &mut std::process::Command) {
    static OWN: std::sync::LazyLock<Vec<std::ffi::OsString>> = std::sync::LazyLock::new(|| {
        let own = |name: &str| crate::redact::is_own_credential(name) || RUNNER_FILES.contains(&name);
        std::env::vars_os().map(|(name, _)| name).filter(|name| name.to_str().is_some_and(own)).collect()
    });
    for name in OWN.iter() {
        command.env_remove(name);
    }
}

/// Descriptors one running task may hold in evalgate: its process's three pipes (six
/// while it starts) and pidfd, prompt and trace files, an MCP proxy's listener and
/// connections, a model's HTTP connection.
const FDS_PER_TASK: u64 = 12;
/// Descriptors kept for the rest: reports, the event log, MCP servers, HTTP pools.
const FDS_RESERVED: u64 = 48;

/// Raises the soft limit on open files to the hard limit, and returns how many tasks can
/// run at once within it, so that a low limit slows the run instead of failing its tasks.
pub fn tasks_within_open_file_limit() -> (u64, usize) {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE) else { return (0, usize::MAX) };
    let limit = if soft < hard && setrlimit(Resource::RLIMIT_NOFILE, hard, hard).is_ok() { hard } else { soft };
    let open = std::fs::read_dir("/proc/self/fd").or_else(|_| std::fs::read_dir("/dev/fd")).map_or(0, |d| d.count());
    let tasks = limit.saturating_sub(open as u64 + FDS_RESERVED) / FDS_PER_TASK;
    (limit, usize::try_from(tasks).unwrap_or(usize::MAX).max(1))
}

/// Set by `stop_everything`: no new process starts after it.
static STOPPING: AtomicBool = AtomicBool::new(false);

/// The second signal: refuse every new process and SIGKILL every group still known and
/// every escaped descendant.
pub fn stop_everything() {
    STOPPING.store(true, Ordering::SeqCst);
    reaper::kill_everything();
}

pub fn stopping() -> bool {
    STOPPING.load(Ordering::SeqCst)
}

/// Runs `spec` to its end: one trip to the blocking pool, where [`life::live`] spawns the
/// process and waits for it. Dropping the future kills its group (and keeps it from
/// starting, if it has not yet, as does a second signal); the notes are recorded on the
/// current trial.
pub async fn run_process(spec: ProcessSpec) -> Result<ProcessOutput, SpawnError> {
    struct CancelOnDrop(Arc<life::Cancel>);
    impl Drop for CancelOnDrop {
        fn drop(&mut self) {
            self.0.cancel();
        }
    }
    let program = spec.program.clone();
    let owner = reaper::new_owner();
    let cancel = CancelOnDrop(Arc::default());
    let shared = cancel.0.clone();
    let out = tokio::task::spawn_blocking(move || life::live(spec, &owner, &shared))
        .await
        .unwrap_or_else(|e| Err(std::io::Error::other(e)))
        .map_err(|source| SpawnError { program, source })?;
    for note in &out.notes {
        reaper::note(note.clone());
    }
    Ok(out)
}
