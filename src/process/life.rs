//! One process's whole life on one thread of the blocking pool: spawn it, feed its stdin,
//! read its stdout and stderr, wait for it within its timeout, kill what it left, drain its
//! pipes and take the file it was to write. Plain blocking calls (`poll`, `read`,
//! `waitpid`) on a thread that has nothing else to do: the runtime's one thread only hands
//! the process over and takes its output back, one trip a process (it took a trip for the
//! spawn, one for the trace file, and served three futures and a pidfd in between).

use std::io::{self, ErrorKind};
use std::os::fd::{AsFd, OwnedFd};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::fcntl::{FcntlArg, OFlag, fcntl};
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

use super::{
    Captured, DRAIN_GRACE, DRAIN_MAX, KILL_GRACE, OUTPUT_CAP, ProcessOutput, ProcessSpec, reaper, strip_credentials,
};

/// Shared by the process's thread and the future that waits for it: dropping the future
/// (a cancelled task, a cancelled run) kills the group at once, or keeps the process from
/// starting at all.
#[derive(Default)]
pub(super) struct Cancel(Mutex<CancelState>);

#[derive(Default)]
struct CancelState {
    cancelled: bool,
    /// What to kill, from its spawn until the process's thread is done with it.
    target: Option<Target>,
}

impl Cancel {
    pub(super) fn cancel(&self) {
        let mut state = self.lock();
        state.cancelled = true;
        if let Some(target) = state.target.take() {
            target.kill(Signal::SIGKILL);
        }
    }

    fn lock(&self) -> MutexGuard<'_, CancelState> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// What a kill reaches: the process's group, and the process itself through its pidfd, for
/// a process that left its group (`setpgid`, `setsid`). A pidfd never names another
/// process, even once this one is reaped and its pid reused.
#[derive(Clone)]
struct Target {
    group: Pid,
    pidfd: Option<Arc<OwnedFd>>,
}

impl Target {
    fn kill(&self, signal: Signal) {
        let _ = killpg(self.group, signal);
        if let Some(pidfd) = &self.pidfd {
            pidfd_send_signal(pidfd, signal);
        }
    }
}

/// Kills the process and its group when dropped, unless disarmed or already killed: a
/// panic on the process's thread leaves no process behind.
struct GroupGuard {
    target: Option<Target>,
    killed: bool,
}

impl GroupGuard {
    fn kill(&mut self, signal: Signal) {
        if let Some(target) = &self.target {
            target.kill(signal);
            self.killed |= signal == Signal::SIGKILL;
        }
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if !self.killed {
            self.kill(Signal::SIGKILL);
        }
        if let Some(target) = &self.target {
            reaper::untrack_group(target.group.as_raw());
        }
    }
}

/// Runs `spec` to its end on the calling thread, which it blocks. `owner` is the process's
/// owner token (`reaper::new_owner`, taken in its trial).
pub(super) fn live(spec: ProcessSpec, owner: &str, cancel: &Cancel) -> io::Result<ProcessOutput> {
    let started = Instant::now();
    let mut command = Command::new(&spec.program);
    strip_credentials(&mut command);
    command
        .args(&spec.args)
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .env(reaper::OWNER_VAR, owner)
        .current_dir(&spec.cwd)
        .stdin(if spec.stdin.is_some() { Stdio::piped() } else { dev_null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    let (mut child, target) = {
        let mut state = cancel.lock();
        if state.cancelled {
            return Err(io::Error::new(ErrorKind::Interrupted, "the task was cancelled"));
        }
        // Looked at here, at the spawn, not when the process was handed over: a second
        // signal meanwhile has swept already, and nothing may start after it.
        if super::stopping() {
            return Err(io::Error::new(ErrorKind::Interrupted, "evalgate is stopping (second signal)"));
        }
        let child = reaper::spawn(|| command.spawn(), |c| Some(c.id()), owner)?;
        // Opened before anything can reap it (only this thread waits for it).
        let pidfd = pidfd_open(child.id() as i32).map(Arc::new);
        let target = Target { group: Pid::from_raw(child.id() as i32), pidfd };
        state.target = Some(target.clone());
        (child, target)
    };
    let pid = child.id() as i32;
    let exited = target.pidfd.clone();
    let mut guard = GroupGuard { target: Some(target), killed: false };
    // stdout and stderr.
    let mut pipes =
        [Pipe::new(child.stdout.take().map(OwnedFd::from))?, Pipe::new(child.stderr.take().map(OwnedFd::from))?];
    let mut stdin = Feed::new(child.stdin.take().map(OwnedFd::from), spec.stdin.unwrap_or_default())?;

    // Until it exits; past its timeout, SIGTERM, then after the grace SIGKILL. For its first
    // moments only its exit is waited for: a short process's output is read in one go when
    // it ends, not at each write (a wake-up and a context switch each, more than such a
    // process costs itself); one that fills a pipe meanwhile waits that long at most.
    let mut timed_out = false;
    let mut until = Some(started + spec.timeout);
    let quiet_until = started + QUIET_START;
    let status: io::Result<ExitStatus> = loop {
        let now = Instant::now();
        if until.is_some_and(|u| now >= u) {
            if timed_out {
                guard.kill(Signal::SIGKILL);
                until = None;
            } else {
                timed_out = true;
                guard.kill(Signal::SIGTERM);
                until = Some(now + KILL_GRACE);
            }
        }
        // Without a pidfd (an old kernel) nothing wakes the poll at the exit: look often.
        let mut wait = until.map(|u| u.saturating_duration_since(now));
        if exited.is_none() {
            wait = Some(wait.map_or(NO_PIDFD_TICK, |w| w.min(NO_PIDFD_TICK)));
        }
        let quiet = now < quiet_until && exited.is_some();
        if quiet {
            wait = Some(wait.map_or(quiet_until - now, |w| w.min(quiet_until - now)));
        }
        let [out, err, feed, exit] = ready((!quiet).then_some(&pipes), &stdin, exited.as_deref(), wait)?;
        read_ready(&mut pipes, [out, err]);
        if feed {
            stdin.write();
        }
        if exit || exited.is_none() {
            match child.try_wait() {
                Ok(Some(status)) => break Ok(status),
                Ok(None) => {}
                Err(e) => break Err(e),
            }
        }
    };
    drop(stdin);
    if status.is_ok() {
        reaper::reaped(pid);
    }
    let mut notes = Vec::new();
    if spec.reap_group || timed_out {
        guard.kill(Signal::SIGKILL);
        for what in reaper::sweep(Some(pid), |o| o == Some(owner)) {
            notes.push(format!("`{}` left a background process: killed ({what})", spec.program));
        }
    } else {
        // The group may hold a daemon the suite's cleanup stops: it is killed when the
        // trial ends (or the run), not here.
        guard.target = None;
    }
    cancel.lock().target = None;
    let duration = started.elapsed();

    // All the process wrote is in the pipes now: read them to their end. Waiting for the
    // end is bounded only because something it started may hold them open for ever; then
    // what the pipes hold is taken without waiting for more.
    let drained = Instant::now() + DRAIN_GRACE;
    while pipes.iter().any(Pipe::is_open) {
        let now = Instant::now();
        if now >= drained {
            break;
        }
        let [out, err, ..] = ready(Some(&pipes), &Feed::done(), None, Some(drained - now))?;
        read_ready(&mut pipes, [out, err]);
    }
    // Both drained, whether or not the first reaches its end.
    let ended = pipes.each_mut().map(|pipe| !pipe.is_open() || pipe.read(DRAIN_MAX));
    if ended.contains(&false) {
        notes.push(format!(
            "LEAK: a process `{}` started kept its output open after it exited; output read up to then",
            spec.program
        ));
    }
    for (name, pipe) in ["stdout", "stderr"].into_iter().zip(&pipes) {
        if pipe.dropped > 0 {
            notes.push(format!(
                "`{}` printed {} bytes on {name}, over the {} MiB kept; the rest was dropped",
                spec.program,
                pipe.bytes.len() as u64 + pipe.dropped,
                OUTPUT_CAP >> 20
            ));
        }
    }
    let (exit_code, signal) = match status {
        Ok(s) => (s.code(), std::os::unix::process::ExitStatusExt::signal(&s)),
        Err(_) => (None, None),
    };
    let taken = spec.then_take.map(|path| take(&path));
    let [stdout, stderr] = pipes.map(Pipe::into_captured);
    Ok(ProcessOutput { exit_code, signal, stdout, stderr, duration, timed_out, notes, taken })
}

/// The file at `path`, read and removed (`NotFound`: the process wrote none).
fn take(path: &std::path::Path) -> io::Result<Vec<u8>> {
    let bytes = crate::files::read::bytes(path, crate::files::read::AGENT);
    let _ = std::fs::remove_file(path);
    bytes
}

/// Reads each of stdout and stderr that is `ready`.
fn read_ready(pipes: &mut [Pipe; 2], ready: [bool; 2]) {
    for (pipe, ready) in pipes.iter_mut().zip(ready) {
        if ready {
            pipe.read(READ_TURN);
        }
    }
}

/// `/dev/null` for a stdin, from one descriptor kept open: a dup costs less than an open
/// (`Stdio::null` opens it at every spawn).
fn dev_null() -> Stdio {
    static NULL: std::sync::LazyLock<Option<std::fs::File>> =
        std::sync::LazyLock::new(|| crate::files::read::dev_null().ok());
    NULL.as_ref().and_then(|null| null.try_clone().ok()).map_or_else(Stdio::null, Stdio::from)
}

/// How long after its start a process's pipes are left to fill before they are read as
/// they fill (its exit is waited for from the start).
const QUIET_START: Duration = Duration::from_millis(5);
/// How often a process is looked at without a pidfd to wake the wait at its exit.
const NO_PIDFD_TICK: Duration = Duration::from_millis(10);
/// The most read from one pipe before the others (and the timeout) are looked at again.
const READ_TURN: usize = 1024 * 1024;

/// Waits until stdout or stderr (when given) can be read, stdin written or the process has
/// exited (in that order), or `wait` passes (`None`: no limit).
fn ready(
    pipes: Option<&[Pipe; 2]>,
    stdin: &Feed,
    exited: Option<&OwnedFd>,
    wait: Option<Duration>,
) -> io::Result<[bool; 4]> {
    let watched = [
        (pipes.and_then(|[out, _]| out.fd.as_ref()), PollFlags::POLLIN),
        (pipes.and_then(|[_, err]| err.fd.as_ref()), PollFlags::POLLIN),
        (stdin.fd.as_ref(), PollFlags::POLLOUT),
        (exited, PollFlags::POLLIN),
    ];
    let mut fds = Vec::with_capacity(watched.len());
    let mut which = Vec::with_capacity(watched.len());
    for (i, (fd, events)) in watched.into_iter().enumerate() {
        if let Some(fd) = fd {
            fds.push(PollFd::new(fd.as_fd(), events));
            which.push(i);
        }
    }
    // Rounded up: a wait rounded down to 0 ms would spin until the deadline.
    let timeout = wait
        .map_or(PollTimeout::NONE, |w| PollTimeout::try_from(w.as_micros().div_ceil(1000)).unwrap_or(PollTimeout::MAX));
    match poll(&mut fds, timeout) {
        Ok(_) | Err(Errno::EINTR) => {}
        Err(e) => return Err(e.into()),
    }
    let mut ready = [false; 4];
    for (fd, i) in fds.iter().zip(which) {
        ready[i] = fd.revents().is_some_and(|r| !r.is_empty());
    }
    Ok(ready)
}

/// A descriptor that signals the process's exit (`pidfd_open`, Linux 5.3); `None` elsewhere.
fn pidfd_open(pid: i32) -> Option<OwnedFd> {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::FromRawFd;
        // SAFETY: pidfd_open takes a pid and flags, and returns a new descriptor or -1.
        let fd = unsafe { nix::libc::syscall(nix::libc::SYS_pidfd_open, pid, 0) };
        // SAFETY: a descriptor pidfd_open just returned is ours alone.
        (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd as i32) })
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = pid;
        None
    }
}

/// Sends `signal` to the process behind `pidfd` (one that has exited ignores it).
fn pidfd_send_signal(pidfd: &OwnedFd, signal: Signal) {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        // SAFETY: pidfd_send_signal takes a pidfd, a signal, no siginfo and no flags.
        let _ = unsafe {
            nix::libc::syscall(
                nix::libc::SYS_pidfd_send_signal,
                pidfd.as_raw_fd(),
                signal as i32,
                std::ptr::null::<nix::libc::siginfo_t>(),
                0,
            )
        };
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (pidfd, signal);
}

fn nonblocking(fd: &OwnedFd) -> io::Result<()> {
    let flags = OFlag::from_bits_retain(fcntl(fd, FcntlArg::F_GETFL)?);
    fcntl(fd, FcntlArg::F_SETFL(flags | OFlag::O_NONBLOCK))?;
    Ok(())
}

/// stdout or stderr: what was read, up to `OUTPUT_CAP`, and the descriptor until its end.
struct Pipe {
    fd: Option<OwnedFd>,
    bytes: Vec<u8>,
    /// Bytes dropped beyond `OUTPUT_CAP`.
    dropped: u64,
}

impl Pipe {
    fn new(fd: Option<OwnedFd>) -> io::Result<Self> {
        if let Some(fd) = &fd {
            nonblocking(fd)?;
        }
        Ok(Pipe { fd, bytes: Vec::new(), dropped: 0 })
    }

    fn is_open(&self) -> bool {
        self.fd.is_some()
    }

    /// Reads what the pipe holds, at most `limit` bytes; whether it reached the end (then
    /// the descriptor is closed).
    fn read(&mut self, limit: usize) -> bool {
        thread_local! {
            /// One buffer a thread: zeroing 64 KiB at every read cost more than the read.
            static BUF: std::cell::RefCell<Vec<u8>> = std::cell::RefCell::new(vec![0; 64 * 1024]);
        }
        BUF.with_borrow_mut(|buf| self.read_with(buf, limit))
    }

    fn read_with(&mut self, buf: &mut [u8], limit: usize) -> bool {
        let Some(fd) = &self.fd else { return true };
        let mut read = 0;
        let end = loop {
            if read >= limit {
                break false;
            }
            match nix::unistd::read(fd, buf) {
                Ok(0) => break true,
                Ok(n) => {
                    let keep = n.min(OUTPUT_CAP.saturating_sub(self.bytes.len()));
                    self.bytes.extend_from_slice(&buf[..keep]);
                    self.dropped += (n - keep) as u64;
                    read += n;
                }
                Err(Errno::EINTR) => {}
                Err(Errno::EAGAIN) => break false,
                Err(_) => break true,
            }
        };
        if end {
            self.fd = None;
        }
        end
    }

    fn into_captured(self) -> Captured {
        let mut text =
            String::from_utf8(self.bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
        // Cut by the cap, or still open after the drain: a secret at the end may be half read,
        // where no redaction could tell it is one.
        if self.dropped > 0 || self.fd.is_some() {
            text = crate::redact::cut_end(&text).into_owned();
        }
        Captured { text, dropped: self.dropped }
    }
}

/// stdin: the bytes still to write, until all are written or the process stops reading.
struct Feed {
    fd: Option<OwnedFd>,
    bytes: Vec<u8>,
    written: usize,
}

impl Feed {
    fn new(fd: Option<OwnedFd>, bytes: Vec<u8>) -> io::Result<Self> {
        let mut feed = Feed { fd, bytes, written: 0 };
        if let Some(fd) = &feed.fd {
            nonblocking(fd)?;
            feed.write();
        }
        Ok(feed)
    }

    fn done() -> Self {
        Feed { fd: None, bytes: Vec::new(), written: 0 }
    }

    /// Writes what the pipe takes; closes it when all is written, or when the process no
    /// longer reads (a child that exits without reading its stdin is not an error).
    fn write(&mut self) {
        let Some(fd) = &self.fd else { return };
        while self.written < self.bytes.len() {
            match nix::unistd::write(fd, &self.bytes[self.written..]) {
                Ok(n) => self.written += n,
                Err(Errno::EINTR) => {}
                Err(Errno::EAGAIN) => return,
                Err(_) => break,
            }
        }
        self.fd = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::process::run_process;

    /// Whether `pid` runs (a zombie does not), given the kernel a moment to deliver a kill.
    fn is_running(pid: i32) -> bool {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let state = std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|stat| stat.rsplit_once(") ").and_then(|(_, rest)| rest.chars().next()));
            if matches!(state, None | Some('Z' | 'X')) {
                return false;
            }
            if Instant::now() > deadline {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// `sh -c SCRIPT` in `dir`, with a timeout far beyond any test.
    fn shell(script: &str, dir: &std::path::Path) -> ProcessSpec {
        ProcessSpec::shell(script, dir.to_owned(), Duration::from_secs(120))
    }

    fn pid_in(file: &std::path::Path) -> i32 {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(pid) = std::fs::read_to_string(file).ok().and_then(|t| t.trim().parse().ok()) {
                return pid;
            }
            assert!(Instant::now() < deadline, "{} was never written", file.display());
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    #[test]
    fn a_process_cancelled_before_its_spawn_never_starts() {
        let dir = tempfile::tempdir().unwrap();
        let cancel = Cancel::default();
        cancel.cancel();
        let err = live(shell("touch started", dir.path()), "test", &cancel).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Interrupted);
        assert!(!dir.path().join("started").exists(), "a cancelled process was started");
    }

    #[test]
    fn stdin_is_empty_without_input_and_is_written_whole_with_it() {
        let dir = tempfile::tempdir().unwrap();
        // Without input, stdin is /dev/null, read at once to its end (that it is not
        // evalgate's own: gate::an_agent_without_stdin_input_never_reads_evalgates_own_stdin).
        let out =
            live(shell("readlink /proc/$$/fd/0; cat; echo done", dir.path()), "test", &Cancel::default()).unwrap();
        assert_eq!((out.stdout.text.as_str(), out.exit_code), ("/dev/null\ndone\n", Some(0)));
        // More than a pipe holds, read back while it is written.
        let big: String = (0..100_000).map(|i| format!("{i}\n")).collect();
        let mut spec = shell("cat", dir.path());
        spec.stdin = Some(big.clone().into_bytes());
        let out = live(spec, "test", &Cancel::default()).unwrap();
        assert_eq!(out.stdout.text.len(), big.len());
        assert!(out.stdout.text == big, "stdin came back changed");
    }

    #[test]
    fn cancelling_a_running_process_kills_its_group_and_ends_its_thread() {
        let dir = tempfile::tempdir().unwrap();
        let cancel = std::sync::Arc::new(Cancel::default());
        let spec = shell("sleep 100 & echo $! > child.pid; echo $$ > main.pid; wait", dir.path());
        let shared = cancel.clone();
        let life = std::thread::spawn(move || live(spec, "test", &shared));
        let (main, child) = (pid_in(&dir.path().join("main.pid")), pid_in(&dir.path().join("child.pid")));
        cancel.cancel();
        let out = life.join().unwrap().unwrap();
        assert_eq!(out.signal, Some(9), "{out:?}");
        assert!(!out.timed_out);
        assert!(!is_running(main) && !is_running(child), "a process of the cancelled group is still running");
    }

    #[test]
    fn a_timeout_kills_a_process_that_left_its_group_and_ignores_sigterm() {
        let dir = tempfile::tempdir().unwrap();
        // Into the test's own group (the same session), away from the one evalgate kills.
        let escape = "import os, signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); \
                      os.setpgid(0, os.getpgid(os.getppid())); open('main.pid', 'w').write(str(os.getpid())); \
                      time.sleep(300)";
        let spec = ProcessSpec::argv(
            vec!["python3".into(), "-c".into(), escape.into()],
            dir.path().into(),
            Duration::from_secs(2),
        );
        let (done, finished) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = done.send(live(spec, "test", &Cancel::default()));
        });
        let pid = pid_in(&dir.path().join("main.pid"));
        // Far beyond the timeout and its grace, far short of the process's own end.
        let out = finished.recv_timeout(Duration::from_secs(60));
        if out.is_err() {
            let _ = nix::sys::signal::kill(Pid::from_raw(pid), Signal::SIGKILL);
        }
        let out = out.expect("the timeout did not end the process").unwrap();
        assert!(out.timed_out && out.signal == Some(9), "{out:?}");
        assert!(!is_running(pid));
    }

    #[test]
    fn dropping_the_future_of_a_running_process_kills_it() {
        let dir = tempfile::tempdir().unwrap();
        let runtime = crate::error::runtime().unwrap();
        let spec = shell("echo $$ > main.pid; exec sleep 100", dir.path());
        let pid_file = dir.path().join("main.pid");
        let dropped = runtime.block_on(async {
            let run = run_process(spec);
            tokio::pin!(run);
            // Polls the run until its process has written its pid, then drops it.
            loop {
                tokio::select! {
                    _ = &mut run => return false,
                    () = tokio::time::sleep(Duration::from_millis(10)) => {
                        if pid_file.exists() { return true; }
                    }
                }
            }
        });
        assert!(dropped, "the process ended before it was cancelled");
        let pid = pid_in(&pid_file);
        assert!(!is_running(pid), "the process of a dropped future is still running");
        drop(runtime);
    }
}
