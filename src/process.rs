//! Child processes: each in its own process group, output captured up to a cap, a timeout
//! (or dropping the future, on cancellation) kills the whole group.

pub mod reaper;

use std::os::fd::AsFd;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;
use tokio_util::sync::CancellationToken;

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
    /// What it left behind or lost: escaped processes killed, a leak, output over the cap
    /// (also noted on the current trial).
    pub notes: Vec<String>,
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
/// explicitly afterwards still reach the child. evalgate never changes its own environment,
/// so their names are looked up once, not at every spawn.
pub fn strip_credentials(command: &mut std::process::Command) {
    static OWN: std::sync::LazyLock<Vec<std::ffi::OsString>> = std::sync::LazyLock::new(|| {
        std::env::vars_os().map(|(name, _)| name).filter(|name| name.to_str().is_some_and(is_own_credential)).collect()
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

/// Kills the process group when dropped, unless disarmed or already killed: cancellation
/// and panics leave no process behind.
struct GroupGuard {
    pgid: Option<Pid>,
    killed: bool,
}

impl GroupGuard {
    fn kill(&mut self, signal: Signal) {
        if let Some(pgid) = self.pgid {
            let _ = killpg(pgid, signal);
            self.killed |= signal == Signal::SIGKILL;
        }
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if !self.killed {
            self.kill(Signal::SIGKILL);
        }
        if let Some(pgid) = self.pgid {
            reaper::untrack_group(pgid.as_raw());
        }
    }
}

pub async fn run_process(spec: &ProcessSpec) -> Result<ProcessOutput, SpawnError> {
    if stopping() {
        let source = std::io::Error::new(std::io::ErrorKind::Interrupted, "evalgate is stopping (second signal)");
        return Err(SpawnError { program: spec.program.clone(), source });
    }
    let started = Instant::now();
    let owner = reaper::new_owner();
    let mut command = Command::new(&spec.program);
    strip_credentials(command.as_std_mut());
    command
        .args(&spec.args)
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .env(reaper::OWNER_VAR, &owner)
        .current_dir(&spec.cwd)
        .stdin(if spec.stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    // On the blocking pool: posix_spawn returns only once the child has exec'd, and the
    // runtime's one thread has every other task to serve meanwhile. The group is tracked
    // and guarded as soon as it exists, so a run cancelled during the spawn kills it too.
    let tracked = owner.clone();
    let spawned = tokio::task::spawn_blocking(move || {
        let child = reaper::spawn(|| command.spawn(), tokio::process::Child::id)?;
        let pid = child.id().and_then(|id| i32::try_from(id).ok());
        if let Some(pgid) = pid {
            reaper::track_group(pgid, &tracked);
        }
        Ok((child, GroupGuard { pgid: pid.map(Pid::from_raw), killed: false }))
    })
    .await
    .unwrap_or_else(|e| Err(std::io::Error::other(e)));
    let (mut child, mut guard) = spawned.map_err(|source| SpawnError { program: spec.program.clone(), source })?;
    let pid = guard.pgid.map(Pid::as_raw);

    if let (Some(bytes), Some(mut stdin)) = (spec.stdin.clone(), child.stdin.take()) {
        tokio::spawn(async move {
            // A child that exits without reading its stdin is not an error.
            let _ = stdin.write_all(&bytes).await;
        });
    }
    let finish = CancellationToken::new();
    let stdout = child.stdout.take().map(|r| tokio::spawn(capture(r, finish.clone())));
    let stderr = child.stderr.take().map(|r| tokio::spawn(capture(r, finish.clone())));

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
    if let (Some(pid), Ok(_)) = (pid, &status) {
        reaper::reaped(pid);
    }
    let mut notes = Vec::new();
    if spec.reap_group || timed_out {
        guard.kill(Signal::SIGKILL);
        for what in reaper::sweep(pid, |o| o == Some(owner.as_str())) {
            notes.push(format!("`{}` left a background process: killed ({what})", spec.program));
        }
    } else {
        // The group may hold a daemon the suite's cleanup stops: it is killed when the
        // trial ends (or the run), not here.
        guard.pgid = None;
    }
    let duration = started.elapsed();
    // All the process wrote is in the pipes now: read them to their end. Waiting for the
    // end is bounded only because something it started may hold them open for ever.
    let both = async { (collect(stdout).await, collect(stderr).await) };
    tokio::pin!(both);
    let ((stdout, out_end), (stderr, err_end)) = match tokio::time::timeout(DRAIN_GRACE, &mut both).await {
        Ok(both) => both,
        Err(_) => {
            finish.cancel();
            both.await
        }
    };
    if !(out_end && err_end) {
        notes.push(format!(
            "LEAK: a process `{}` started kept its output open after it exited; output read up to then",
            spec.program
        ));
    }
    for (name, b) in [("stdout", &stdout), ("stderr", &stderr)] {
        if b.dropped > 0 {
            notes.push(format!(
                "`{}` printed {} bytes on {name}, over the {} MiB kept; the rest was dropped",
                spec.program,
                b.bytes.len() as u64 + b.dropped,
                OUTPUT_CAP >> 20
            ));
        }
    }
    for note in &notes {
        reaper::note(note.clone());
    }
    let (exit_code, signal) = match status {
        Ok(s) => (s.code(), std::os::unix::process::ExitStatusExt::signal(&s)),
        Err(_) => (None, None),
    };
    Ok(ProcessOutput {
        exit_code,
        signal,
        stdout: stdout.into_captured(),
        stderr: stderr.into_captured(),
        duration,
        timed_out,
        notes,
    })
}

#[derive(Default)]
struct Buffer {
    bytes: Vec<u8>,
    dropped: u64,
}

impl Buffer {
    fn push(&mut self, chunk: &[u8]) {
        let keep = chunk.len().min(OUTPUT_CAP.saturating_sub(self.bytes.len()));
        self.bytes.extend_from_slice(&chunk[..keep]);
        self.dropped += (chunk.len() - keep) as u64;
    }

    fn into_captured(self) -> Captured {
        Captured { text: String::from_utf8_lossy(&self.bytes).into_owned(), dropped: self.dropped }
    }
}

/// What a pipe's reader got, and whether it reached the end.
async fn collect(reader: Option<tokio::task::JoinHandle<(Buffer, bool)>>) -> (Buffer, bool) {
    match reader {
        Some(reader) => reader.await.unwrap_or_else(|_| (Buffer::default(), true)),
        None => (Buffer::default(), true),
    }
}

/// Reads `pipe` to its end, or until `finish`; then takes what the pipe holds at that
/// moment without waiting for more (at most `DRAIN_MAX`, against a writer that never stops).
/// Whether it reached the end.
async fn capture<R: AsyncRead + AsFd + Unpin>(mut pipe: R, finish: CancellationToken) -> (Buffer, bool) {
    let mut into = Buffer::default();
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        tokio::select! {
            read = pipe.read(&mut buf) => match read {
                Ok(0) | Err(_) => return (into, true),
                Ok(n) => into.push(&buf[..n]),
            },
            () = finish.cancelled() => break,
        }
    }
    // Straight from the (non-blocking) descriptor: the runtime may not have seen yet that
    // it is readable, when evalgate is starved of CPU.
    let mut drained = 0;
    while drained < DRAIN_MAX {
        match nix::unistd::read(pipe.as_fd(), &mut buf) {
            Ok(0) => return (into, true),
            Ok(n) => {
                into.push(&buf[..n]);
                drained += n;
            }
            Err(nix::errno::Errno::EINTR) => {}
            Err(_) => break,
        }
    }
    (into, false)
}
