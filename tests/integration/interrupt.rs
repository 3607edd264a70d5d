//! Ctrl-C mid-run: running tasks are cancelled, their cleanup runs, results so far are written.

use std::time::{Duration, Instant};

use crate::common::{Test, suite};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

#[test]
fn sigint_mid_run_exits_4_and_keeps_finished_tasks() {
    let agent = "#!/bin/sh\ncase \"$1\" in\n  fast) echo fast;;\n  *) echo $$ > slow.pid; sleep 60;;\nesac\n";
    let tasks = "  - id: first\n    prompt: fast\n    grade: [{type: contains, value: fast}]\n  - id: second\n    prompt: slow\n    grade: [{type: contains, value: x}]\n    cleanup: [{run: touch second-cleaned}]\n  - id: third\n    prompt: slow\n    grade: [{type: contains, value: x}]\n";
    let test = Test::new().write("agent.sh", agent).write("evalgate.yaml", &suite("", tasks)).args(&["run", "-j", "1"]);
    let dir = test.path().to_owned();
    let mut child = test.command().stderr(std::process::Stdio::null()).spawn().unwrap();

    // Wait until the second task's agent is running (its pid written, not just the file
    // created: a SIGINT between the two left it empty).
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::fs::read_to_string(dir.join("slow.pid")).map_or(true, |pid| !pid.ends_with('\n')) {
        assert!(Instant::now() < deadline, "the second task never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    kill(Pid::from_raw(child.id() as i32), Signal::SIGINT).unwrap();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "evalgate did not stop after SIGINT");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(4));

    let results: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("evalgate-out/results.json")).unwrap()).unwrap();
    assert_eq!(results["interrupted"], true);
    let status_of =
        |i: usize| (results["tasks"][i]["status"].as_str().unwrap().to_owned(), results["tasks"][i]["reason"].clone());
    assert_eq!(status_of(0).0, "passed");
    assert_eq!(status_of(1), ("error".into(), "interrupted".into()));
    assert_eq!(status_of(2), ("skipped".into(), "run interrupted".into()));
    assert!(dir.join("second-cleaned").exists(), "cleanup of the cancelled task did not run");
    let pid: i32 = std::fs::read_to_string(dir.join("slow.pid")).unwrap().trim().parse().unwrap();
    assert!(!crate::common::is_running(pid), "the cancelled agent is still running");
    let md = std::fs::read_to_string(dir.join("evalgate-out/summary.md")).unwrap();
    assert!(md.starts_with("## ⚠️ evalgate: `test.evals.demo` interrupted"), "{md}");
}
