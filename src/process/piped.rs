//! A long-lived child spoken to a line at a time over its stdin and stdout (an extension,
//! an ACP agent): started in a process group of its own and tracked by the reaper like every
//! process evalgate starts, its stdout read a bounded line at a time, the tail of its stderr
//! kept, and the whole group killed at its end (such children do not exit when stdin closes).

use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use super::reaper;

/// Bytes of stderr kept (the last ones), for the report.
const STDERR_TAIL: usize = 16 << 10;
/// How long the stderr reader is waited for once the group is dead.
const STDERR_GRACE: Duration = Duration::from_secs(3);

/// A started child: its pipes, its group, and the tail of its stderr.
pub struct Piped {
    pub child: Child,
    pub stdin: ChildStdin,
    pub stdout: BufReader<ChildStdout>,
    pub stderr: StderrTail,
    pub pgid: Option<i32>,
}

impl Piped {
    /// Starts `cmd` (program, arguments, variables and directory set by the caller) in a
    /// group of its own with its three streams piped, without evalgate's credentials, its
    /// group tracked under `owner`.
    pub fn spawn(cmd: &mut Command, owner: &str) -> std::io::Result<Piped> {
        super::strip_credentials(cmd.as_std_mut());
        cmd.env(reaper::OWNER_VAR, owner)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .process_group(0);
        let mut child = reaper::spawn(|| cmd.spawn(), Child::id, owner)?;
        let pgid = child.id().and_then(|id| i32::try_from(id).ok());
        let stderr = StderrTail::read(child.stderr.take());
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            unreachable!("stdin and stdout are piped")
        };
        Ok(Piped { child, stdin, stdout: BufReader::new(stdout), stderr, pgid })
    }
}

/// SIGKILLs a group evalgate started and forgets it.
pub fn kill_group(pgid: Option<i32>) {
    if let Some(pgid) = pgid {
        let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pgid), nix::sys::signal::Signal::SIGKILL);
        reaper::untrack_group(pgid);
    }
}

/// The last `STDERR_TAIL` bytes a child wrote to stderr, read until the pipe closes.
pub struct StderrTail {
    bytes: Arc<Mutex<Vec<u8>>>,
    reader: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl StderrTail {
    fn read(pipe: Option<tokio::process::ChildStderr>) -> StderrTail {
        let bytes = Arc::new(Mutex::new(Vec::new()));
        let reader = pipe.map(|pipe| tokio::spawn(keep_tail(pipe, bytes.clone())));
        StderrTail { bytes, reader: Mutex::new(reader) }
    }

    /// Waits (a few seconds at most) for the pipe to close, so what the child wrote last (a
    /// panic) is read before anyone asks for the tail: call once its group is dead.
    pub async fn finish(&self) {
        let reader = self.reader.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(reader) = reader {
            let _ = tokio::time::timeout(STDERR_GRACE, reader).await;
        }
    }

    /// The tail, redacted and trimmed.
    pub fn text(&self) -> String {
        let bytes = self.bytes.lock().unwrap_or_else(|e| e.into_inner()).clone();
        crate::redact::text(String::from_utf8_lossy(&bytes).trim()).into_owned()
    }
}

/// Keeps the last `STDERR_TAIL` bytes of a pipe until it closes.
async fn keep_tail(mut pipe: tokio::process::ChildStderr, tail: Arc<Mutex<Vec<u8>>>) {
    let mut buf = [0u8; 8192];
    while let Ok(n) = pipe.read(&mut buf).await {
        if n == 0 {
            break;
        }
        let mut tail = tail.lock().unwrap_or_else(|e| e.into_inner());
        tail.extend_from_slice(&buf[..n]);
        if tail.len() > STDERR_TAIL {
            let cut = tail.len() - STDERR_TAIL;
            tail.drain(..cut);
        }
    }
}

/// One non-blank line of at most `max` bytes, trimmed; the end of the stream (`exited`)
/// and a longer line are errors, never a message. The line is gathered in `line`, the
/// caller's: a read cancelled midway (a timeout) loses nothing, the next call goes on.
pub async fn read_line(
    reader: &mut (impl AsyncBufRead + Unpin),
    line: &mut Vec<u8>,
    max: usize,
) -> Result<String, String> {
    loop {
        let buf = reader.fill_buf().await.map_err(|e| format!("cannot be read: {e}"))?;
        if buf.is_empty() {
            return Err("exited".into());
        }
        let (take, end) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (buf.len(), false),
        };
        line.extend_from_slice(&buf[..take]);
        reader.consume(take);
        if line.len() > max {
            return Err(format!("wrote a line longer than {} MiB", max >> 20));
        }
        if end {
            let text = String::from_utf8_lossy(line).trim().to_owned();
            line.clear();
            if !text.is_empty() {
                return Ok(text);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_line_is_read_up_to_its_bound() {
        let max = 4 << 20;
        let mut ok = BufReader::new(&b"\n  {\"a\":1}\nrest"[..]);
        assert_eq!(read_line(&mut ok, &mut Vec::new(), max).await.unwrap(), "{\"a\":1}");
        assert_eq!(read_line(&mut ok, &mut Vec::new(), max).await.unwrap_err(), "exited");
        let long = vec![b'x'; max + 10];
        let mut long = BufReader::new(&long[..]);
        assert_eq!(read_line(&mut long, &mut Vec::new(), max).await.unwrap_err(), "wrote a line longer than 4 MiB");
    }
}
