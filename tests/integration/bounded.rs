//! Issue 31, section 6: every read evalgate makes of what an agent, a server or a model
//! controls is bounded, and every phase of a command can be interrupted or cut short.

use std::process::{Command, Stdio};

use crate::common::Test;

/// A stream whose reader is already gone: the pipe's read end is closed before the spawn, so
/// the first write fails with EPIPE whatever the timing.
fn closed_pipe() -> Stdio {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    writer.into()
}

#[test]
fn a_closed_stdout_or_stderr_is_a_quiet_exit_not_a_panic() {
    let test = Test::new();
    let bin = env!("CARGO_BIN_EXE_evalgate");
    // `evalgate schema | head -1`: stdout gone; the schema was all it had to do.
    let schema = Command::new(bin).arg("schema").stdout(closed_pipe()).stderr(Stdio::piped()).output().unwrap();
    let stderr = String::from_utf8_lossy(&schema.stderr);
    assert_eq!((schema.status.code(), stderr.as_ref()), (Some(0), ""));
    // An error with stderr gone keeps its exit code (2: invalid input), not a panic's 101.
    let check = Command::new(bin)
        .current_dir(test.path())
        .args(["check", "missing.yaml"])
        .stdout(Stdio::piped())
        .stderr(closed_pipe())
        .output()
        .unwrap();
    assert_eq!(check.status.code(), Some(2), "{}", String::from_utf8_lossy(&check.stdout));
}
