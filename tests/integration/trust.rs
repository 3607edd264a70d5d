//! Attacks on the one outcome: whatever stops a run (signals, kills, invalid input, a missing
//! shard, an edited file), no report ever reads green unless everything planned ran and passed.

use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::Value;

use crate::common::{ECHO_AGENT, Test, numbered, suite};

/// Waits until `path` exists with content (a pid file is created before it is written).
pub(crate) fn wait_for(path: &Path, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::fs::metadata(path).map_or(true, |m| m.len() == 0) {
        assert!(Instant::now() < deadline, "{what} never happened");
        std::thread::sleep(Duration::from_millis(20));
    }
}

pub(crate) fn wait_exit(child: &mut Child, within: Duration) -> i32 {
    let deadline = Instant::now() + within;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status.code().unwrap_or(-1);
        }
        assert!(Instant::now() < deadline, "evalgate did not exit within {within:?}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

pub(crate) fn signal(child: &Child, signal: Signal) {
    kill(Pid::from_raw(child.id() as i32), signal).unwrap();
}

fn json(path: PathBuf) -> Value {
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))).unwrap()
}

/// Every file report of `out` says the run did not pass.
pub(crate) fn assert_nothing_says_passed(out: &Path) {
    let results = json(out.join("results.json"));
    assert_eq!(results["verdict"]["passed"], false, "{}", results["verdict"]);
    assert_ne!(results["verdict"]["outcome"]["status"], "passed");
    assert_eq!(json(out.join("summary.json"))["passed"], false);
    let junit = std::fs::read_to_string(out.join("junit.xml")).unwrap();
    assert!(junit.contains(r#"<property name="passed" value="false"/>"#), "{junit}");
    let md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(!md.starts_with("## ✅"), "{md}");
}

#[test]
fn an_interrupt_during_the_last_cleanup_is_never_green() {
    let tasks = "
        - id: only
          prompt: x
          grade: [{type: contains, value: x}]
          cleanup: [{run: 'echo started > cleaning; sleep 1'}]
        ";
    let test = Test::new().write("agent.sh", ECHO_AGENT).write("evalgate.yaml", &suite("", tasks)).args(&["run"]);
    let dir = test.path().to_owned();
    let mut child = test.command().stderr(std::process::Stdio::null()).spawn().unwrap();
    wait_for(&dir.join("cleaning"), "the cleanup");
    signal(&child, Signal::SIGINT);
    assert_eq!(wait_exit(&mut child, Duration::from_secs(30)), 4);
    let results = json(dir.join("evalgate-out/results.json"));
    assert_eq!(results["tasks"][0]["status"], "passed", "the task itself passed before the signal");
    assert_eq!(results["verdict"]["outcome"]["status"], "interrupted");
    assert_nothing_says_passed(&dir.join("evalgate-out"));
}

#[test]
fn a_second_signal_kills_everything_and_exits_4_within_2_seconds_with_reports() {
    let agent = "#!/bin/sh\necho $$ > agent.pid\nsleep 60\n";
    let tasks = "
        - id: slow
          prompt: x
          grade: [{type: contains, value: x}]
          cleanup: [{run: 'echo $$ > cleanup.pid; sleep 60'}]
        ";
    let test = Test::new().write("agent.sh", agent).write("evalgate.yaml", &suite("", tasks)).args(&["run"]);
    let dir = test.path().to_owned();
    let mut child = test.command().stderr(std::process::Stdio::null()).spawn().unwrap();
    wait_for(&dir.join("agent.pid"), "the agent start");
    // GitHub's cancel: SIGINT, then SIGTERM while the cleanup runs.
    signal(&child, Signal::SIGINT);
    wait_for(&dir.join("cleanup.pid"), "the cleanup start");
    let second = Instant::now();
    signal(&child, Signal::SIGTERM);
    assert_eq!(wait_exit(&mut child, Duration::from_secs(10)), 4);
    let took = second.elapsed();
    assert!(took < Duration::from_secs(2), "took {took:?} after the second signal");
    for pid in ["agent.pid", "cleanup.pid"] {
        let pid: i32 = std::fs::read_to_string(dir.join(pid)).unwrap().trim().parse().unwrap();
        assert!(!crate::common::is_running(pid), "{pid} outlived the second signal");
    }
    assert_eq!(json(dir.join("evalgate-out/results.json"))["verdict"]["outcome"]["status"], "interrupted");
    assert_nothing_says_passed(&dir.join("evalgate-out"));
}

#[test]
fn a_killed_run_leaves_reports_that_say_incomplete() {
    let agent = "#!/bin/sh\ncase \"$1\" in\n  fast) echo fast;;\n  *) echo $$ > slow.pid; sleep 60;;\nesac\n";
    let tasks = "  - id: first\n    prompt: fast\n    grade: [{type: contains, value: fast}]\n  - id: second\n    prompt: slow\n    grade: [{type: contains, value: x}]\n";
    let test = Test::new().write("agent.sh", agent).write("evalgate.yaml", &suite("", tasks)).args(&["run", "-j", "1"]);
    let dir = test.path().to_owned();
    let mut child = test.command().stderr(std::process::Stdio::null()).spawn().unwrap();
    wait_for(&dir.join("slow.pid"), "the second task's start");
    // The reports are rewritten as tasks finish (a slow rewrite may put the next one off
    // briefly): the first task reaches results.json while the second is still running.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !std::fs::read_to_string(dir.join("evalgate-out/results.json")).is_ok_and(|t| t.contains("\"first\"")) {
        assert!(Instant::now() < deadline, "the finished task never reached results.json");
        std::thread::sleep(Duration::from_millis(20));
    }
    signal(&child, Signal::SIGKILL);
    wait_exit(&mut child, Duration::from_secs(5));
    let pid: i32 = std::fs::read_to_string(dir.join("slow.pid")).unwrap().trim().parse().unwrap();
    let _ = kill(Pid::from_raw(-pid), Signal::SIGKILL);
    let results = json(dir.join("evalgate-out/results.json"));
    assert_eq!(results["tasks"][0]["id"], "first", "the finished task is kept");
    assert_eq!(results["tasks"][0]["status"], "passed");
    assert_eq!(results["verdict"]["outcome"]["status"], "incomplete");
    assert_eq!(
        results["verdict"]["outcome"]["reason"],
        "the run had not finished when this was written: 1 of 2 planned task(s) done"
    );
    assert_nothing_says_passed(&dir.join("evalgate-out"));
}

#[test]
fn exit_2_or_3_after_a_green_run_replaces_its_green_reports() {
    let green = suite(
        "",
        "
        - id: a
          prompt: x
          grade: [{type: contains, value: x}]
        ",
    );
    let test = Test::new().write("agent.sh", ECHO_AGENT).write("evalgate.yaml", &green);
    let dir = test.path().to_owned();
    let run = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_evalgate")).current_dir(&dir).args(args).output().unwrap()
    };
    assert_eq!(run(&["run"]).status.code(), Some(0));
    assert!(std::fs::read_to_string(dir.join("evalgate-out/summary.md")).unwrap().starts_with("## ✅"));

    std::fs::write(dir.join("evalgate.yaml"), green.replace("prompt: x", "promt: x")).unwrap();
    assert_eq!(run(&["run"]).status.code(), Some(2));
    assert_eq!(json(dir.join("evalgate-out/results.json"))["verdict"]["outcome"]["status"], "invalid");
    assert!(!dir.join("evalgate-out/events.jsonl").exists(), "the green run's events are gone");
    assert_nothing_says_passed(&dir.join("evalgate-out"));

    let missing_env = green.replace("agents:", "env: {required_env: [EVALGATE_SURELY_UNSET]}\nagents:");
    std::fs::write(dir.join("evalgate.yaml"), missing_env).unwrap();
    assert_eq!(run(&["run"]).status.code(), Some(3));
    let results = json(dir.join("evalgate-out/results.json"));
    assert_eq!(results["verdict"]["outcome"]["status"], "preflight_failed");
    assert!(results["verdict"]["outcome"]["reason"].as_str().unwrap().contains("EVALGATE_SURELY_UNSET"));
    assert_nothing_says_passed(&dir.join("evalgate-out"));
}

#[test]
fn a_second_run_into_the_same_out_is_refused() {
    let agent = "#!/bin/sh\necho $$ > agent.pid\nsleep 60\n";
    let test = Test::new()
        .write("agent.sh", agent)
        .write(
            "evalgate.yaml",
            &suite(
                "",
                "
                - id: a
                  prompt: x
                  timeout: 20s
                  grade: [{type: contains, value: x}]
                ",
            ),
        )
        .args(&["run"]);
    let dir = test.path().to_owned();
    let mut first = test.command().stderr(std::process::Stdio::null()).spawn().unwrap();
    wait_for(&dir.join("agent.pid"), "the first run");
    let second =
        std::process::Command::new(env!("CARGO_BIN_EXE_evalgate")).current_dir(&dir).args(["run"]).output().unwrap();
    signal(&first, Signal::SIGKILL);
    let pid: i32 = std::fs::read_to_string(dir.join("agent.pid")).unwrap().trim().parse().unwrap();
    let _ = kill(Pid::from_raw(-pid), Signal::SIGKILL);
    wait_exit(&mut first, Duration::from_secs(5));
    assert_eq!(second.status.code(), Some(4));
    assert_eq!(
        String::from_utf8_lossy(&second.stderr),
        "error: evalgate-out is in use by another evalgate run; wait for it, or give this run its own --out\n"
    );
}

#[test]
fn a_merge_missing_a_shard_is_incomplete_and_names_it() {
    let tasks: String = numbered(
        1..=3,
        "
            - id: t<i>
              prompt: x
              grade: [{type: contains, value: x}]
            ",
    );
    let test = Test::new().write("agent.sh", ECHO_AGENT).write("evalgate.yaml", &suite("", &tasks));
    let dir = test.path().to_owned();
    let run = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_evalgate")).current_dir(&dir).args(args).output().unwrap()
    };
    for k in ["1", "2"] {
        let out = run(&["run", "--shard", &format!("{k}/3"), "--out", &format!("s{k}")]);
        assert_eq!(out.status.code(), Some(0));
        assert_eq!(json(dir.join(format!("s{k}/results.json")))["verdict"]["outcome"]["status"], "deferred");
    }
    assert_eq!(run(&["merge", "s1/results.json", "s2/results.json", "-o", "m.json"]).status.code(), Some(0));
    let merged = json(dir.join("m.json"));
    assert_eq!(merged["verdict"]["outcome"]["status"], "incomplete");
    assert_eq!(merged["verdict"]["outcome"]["reason"], "shard 3/3 is missing: its tasks did not run");
    assert_eq!(merged["verdict"]["passed"], false);
    let gate = run(&["report", "m.json", "--gate", "--out", "m-out"]);
    assert_eq!(gate.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&gate.stderr).contains("shard 3/3 is missing"));
    // A shard's own file is never gated green.
    assert_eq!(run(&["report", "s1/results.json", "--gate", "--out", "s-out"]).status.code(), Some(1));
}

#[test]
fn report_gate_refuses_a_file_whose_verdict_its_tasks_contradict() {
    let run = Test::new()
        .write("agent.sh", ECHO_AGENT)
        .write(
            "evalgate.yaml",
            &suite(
                "",
                "
            - id: a
              prompt: x
              grade: [{type: contains, value: nope}]
            ",
            ),
        )
        .args(&["run"])
        .run();
    run.expect_code(1);
    let mut results = run.results();
    results["verdict"]["passed"] = true.into();
    results["verdict"]["outcome"] = serde_json::json!({"status": "passed"});
    for check in results["verdict"]["checks"].as_array_mut().unwrap() {
        check["passed"] = true.into();
    }
    std::fs::write(run.dir.join("tampered.json"), results.to_string()).unwrap();
    let gate = std::process::Command::new(env!("CARGO_BIN_EXE_evalgate"))
        .current_dir(&run.dir)
        .args(["report", "tampered.json", "--gate", "--out", "t-out"])
        .output()
        .unwrap();
    assert_eq!(gate.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&gate.stderr),
        "error: tampered.json does not agree with its own tasks: it records the outcome `passed`, its tasks give \
         `failed` (failed: failing tasks); was it edited? Run the suite again\n"
    );
    assert!(!run.dir.join("t-out").exists(), "nothing is rendered from a file that cannot be believed");
}

/// A results file is its writer's word, thresholds included: one made under a lax suite
/// (a fork's, `pass_score: 0`) is consistent and gates green by itself, and is held to the
/// repository's own suite with `--suite`.
#[test]
fn report_gate_with_the_suite_holds_a_file_to_the_suites_thresholds_not_its_own() {
    let tasks = "  - id: a\n    prompt: x\n    grade: [{type: contains, value: nope}]\n";
    let run = Test::new()
        .write("agent.sh", ECHO_AGENT)
        .write("lax.yaml", &suite("thresholds: {pass_score: 0}", tasks))
        .write("evalgate.yaml", &suite("", tasks))
        .write("other.yaml", &suite("", tasks).replace("test.evals.demo", "another.suite"))
        .args(&["run", "lax.yaml"])
        .run();
    run.expect_code(0);
    let gate = |extra: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_evalgate"))
            .current_dir(&run.dir)
            .args([&["report", "evalgate-out/results.json", "--gate", "--out", "g-out"], extra].concat())
            .output()
            .unwrap();
        (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
    };
    assert_eq!(gate(&[]).0, Some(0), "the file alone: its own thresholds");
    let (code, stderr) = gate(&["--suite", "evalgate.yaml"]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("FAIL failing tasks"), "{stderr}");
    assert!(run.dir.join("g-out/summary.md").exists());
    assert!(std::fs::read_to_string(run.dir.join("g-out/results.json")).unwrap().contains("\"failed\""));
    let (code, stderr) = gate(&["--suite", "other.yaml"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("is suite `another.suite`, the results are of `test.evals.demo`"), "{stderr}");
}

#[test]
fn a_signal_during_before_all_or_a_server_start_is_honoured_at_once() {
    let hooks = "hooks:\n  before_all: [{run: 'echo $$ > hook.pid; sleep 60'}]\n  after_all: [{run: touch after}]\n";
    let server = "mcp_servers:\n  slow: {command: [sh, -c, 'echo $$ > server.pid; sleep 60']}\n";
    let tasks = "
        - id: a
          prompt: x
          grade: [{type: contains, value: x}]
        ";
    for (extra, pid_file) in [(hooks, "hook.pid"), (server, "server.pid")] {
        let test =
            Test::new().write("agent.sh", ECHO_AGENT).write("evalgate.yaml", &suite(extra, tasks)).args(&["run"]);
        let dir = test.path().to_owned();
        let mut child = test.command().stderr(std::process::Stdio::null()).spawn().unwrap();
        wait_for(&dir.join(pid_file), pid_file);
        let sent = Instant::now();
        signal(&child, Signal::SIGINT);
        assert_eq!(wait_exit(&mut child, Duration::from_secs(10)), 4, "{pid_file}");
        assert!(sent.elapsed() < Duration::from_secs(3), "{pid_file}: took {:?}", sent.elapsed());
        let pid: i32 = std::fs::read_to_string(dir.join(pid_file)).unwrap().trim().parse().unwrap();
        assert!(!crate::common::is_running(pid), "{pid_file}: {pid} outlived the run");
        let results = json(dir.join("evalgate-out/results.json"));
        assert_eq!(results["verdict"]["outcome"]["status"], "interrupted", "{pid_file}");
        assert_nothing_says_passed(&dir.join("evalgate-out"));
        if pid_file == "hook.pid" {
            assert!(dir.join("after").exists(), "after_all runs after a first signal");
            assert_eq!(results["tasks"][0]["not_run"], "interrupted");
        }
    }
}

#[test]
fn the_system_under_test_never_inherits_evalgates_credentials() {
    const TOKEN: &str = "ghs_pull-request-write-token-0123456789";
    const RUNTIME: &str = "actions-runtime-token-0123456789";
    let agent = "#!/bin/sh\nenv > agent-env\necho ok\n";
    let yaml = "
        evalgate: 1
        suite: test.evals.creds
        agents:
          bot: {command: [./agent.sh], env: {GH_TOKEN: '{env.GITHUB_TOKEN}'}}
        tasks:
          - id: a
            prompt: x
            setup: [{run: env > step-env}]
            grade: [{type: command, run: 'env > grader-env; exit 0'}]
        ";
    let run = Test::new()
        .write("agent.sh", agent)
        .file("evalgate.yaml", yaml)
        .env("GITHUB_TOKEN", TOKEN)
        .env("INPUT_GITHUB-TOKEN", TOKEN)
        .env("ACTIONS_RUNTIME_TOKEN", RUNTIME)
        .env("ACTIONS_ID_TOKEN_REQUEST_TOKEN", RUNTIME)
        .args(&["run", "--no-github"])
        .run();
    run.expect_code(0);
    for file in ["agent-env", "step-env", "grader-env"] {
        let env = std::fs::read_to_string(run.dir.join(file)).unwrap();
        assert!(!env.contains("GITHUB_TOKEN=") && !env.contains("INPUT_GITHUB-TOKEN="), "{file}: {env}");
        assert!(!env.contains(RUNTIME), "{file} holds a runner token");
    }
    // Passed on purpose, it arrives: under its own name only.
    let agent_env = std::fs::read_to_string(run.dir.join("agent-env")).unwrap();
    assert!(agent_env.lines().any(|l| l == format!("GH_TOKEN={TOKEN}")), "{agent_env}");
    assert_eq!(agent_env.matches(TOKEN).count(), 1, "{agent_env}");
}
