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

/// Issue 43, section 3: every subcommand runs in one signal frame (`commands::frame`). A
/// SIGINT in the middle of any phase ends it within seconds with exit 4, and every process
/// it started is gone.
pub(crate) mod every_command {
    use std::path::Path;
    use std::process::{Child, Stdio};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::mpsc::{Sender, channel};
    use std::time::{Duration, Instant};

    use nix::sys::signal::Signal;
    use serde_json::json;

    use crate::common::server::Server;
    use crate::common::{ECHO_AGENT, Test, is_running, suite};
    use crate::mcp::mcp_suite;
    use crate::trust::{signal, wait_exit};

    /// Well within seconds; far less than any timeout that would end the phase without it.
    const ENDS_WITHIN: Duration = Duration::from_secs(10);

    /// An MCP server that starts and never answers the handshake (evalgate waits 30 s), its pid
    /// in `hang.pid`.
    const HANGING_SERVER: &str = r#"{command: [sh, -c, 'echo $$ > hang.pid; exec sleep 600']}"#;

    /// The pid written to `file` below `dir`, once it is written whole.
    pub(crate) fn pid_in(dir: &Path, file: &str) -> i32 {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let text = std::fs::read_to_string(dir.join(file)).unwrap_or_default();
            if text.ends_with('\n') {
                return text.trim().parse().unwrap();
            }
            assert!(Instant::now() < deadline, "{file} was never written");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn spawn(test: &Test) -> Child {
        test.command().stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap()
    }

    /// SIGINT to `child`, which must end within [`ENDS_WITHIN`] with exit 4, leaving none of `pids`.
    fn interrupt(child: Child, pids: &[i32]) {
        stop_with(Signal::SIGINT, child, pids);
    }

    /// `interrupt`, with `sent`.
    fn stop_with(sent: Signal, mut child: Child, pids: &[i32]) {
        signal(&child, sent);
        assert_eq!(wait_exit(&mut child, ENDS_WITHIN), 4);
        for pid in pids {
            assert!(!is_running(*pid), "process {pid} outlived evalgate");
        }
    }

    fn server_suite(servers: &str) -> String {
        let tasks = "
            - id: t
              level: execution
              call: {server: hang, tool: add, arguments: {a: 1, b: 2}}
              grade: [{type: contains, value: '3'}]
            ";
        format!("evalgate: 1\nsuite: interrupt.mcp\nmcp_servers:\n{servers}tasks:\n{}", crate::common::indent(tasks, 2))
    }

    /// SIGTERM (GitHub's cancel sends it after SIGINT) as SIGINT.
    #[test]
    fn check_while_an_mcp_server_starts() {
        for sent in [Signal::SIGINT, Signal::SIGTERM] {
            let test = Test::new().write("evalgate.yaml", &server_suite(&format!("  hang: {HANGING_SERVER}\n")));
            let test = test.args(&["check"]);
            let child = spawn(&test);
            let server = pid_in(test.path(), "hang.pid");
            stop_with(sent, child, &[server]);
        }
    }

    #[test]
    fn list_while_a_live_evals_list_import_loads() {
        let yaml = "
            evalgate: 1
            suite: interrupt.list
            mcp_servers:
              evals: {command: [python3, '<fixtures>/evals_server.py', --slow-evals]}
            agents:
              bot: {provider: openai, model: m, api_key_env: EG_B_KEY, mcp: [evals]}
            imports:
              - {format: mcp-evals, server: evals, agent: bot}
            ";
        let test = Test::new()
            .write("evalgate.yaml", &mcp_suite(yaml))
            .env("EG_B_KEY", "sk-test-333333")
            .env("EVALS_SERVER_LOG", "requests.jsonl")
            .args(&["list"]);
        let child = spawn(&test);
        // Until the server is asked for its evals (it answers after 120 s).
        let deadline = Instant::now() + Duration::from_secs(60);
        let server = loop {
            let log = std::fs::read_to_string(test.path().join("requests.jsonl")).unwrap_or_default();
            let asked = log
                .lines()
                .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
                .find(|r| r["method"] == "evals/list");
            if let Some(request) = asked {
                break request["pid"].as_i64().unwrap() as i32;
            }
            assert!(Instant::now() < deadline, "evals/list was never asked");
            std::thread::sleep(Duration::from_millis(20));
        };
        interrupt(child, &[server]);
    }

    /// The fixture server (the Python SDK's), up, beside one still starting: both are stopped.
    #[test]
    fn mcp_tools_while_a_second_server_starts() {
        let real = "  a-real: {command: [sh, -c, 'echo $$ > real.pid; exec <python> fixture_server.py']}\n";
        let servers = real.replace("<python>", &crate::mcp::python()) + &format!("  hang: {HANGING_SERVER}\n");
        let test = Test::new()
            .write("fixture_server.py", include_str!("../fixtures/mcp/fixture_server.py"))
            .write("evalgate.yaml", &server_suite(&servers))
            .args(&["mcp", "tools"]);
        let child = spawn(&test);
        let pids = [pid_in(test.path(), "real.pid"), pid_in(test.path(), "hang.pid")];
        // The real server answers its handshake meanwhile (it was the one left running).
        std::thread::sleep(Duration::from_secs(2));
        assert!(is_running(pids[0]), "the fixture server did not start");
        interrupt(child, &pids);
    }

    /// A local server that takes every connection, tells `connected`, and never answers.
    fn silent_server(connected: Sender<()>) -> String {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        std::thread::spawn(move || {
            let mut held = Vec::new();
            for stream in listener.incoming() {
                held.push(stream);
                let _ = connected.send(());
            }
        });
        url
    }

    /// A directory with a results file of a passing run.
    fn ran() -> Test {
        let tasks = "- {id: a, prompt: hello, grade: [{type: contains, value: hello}]}";
        let test = Test::new().write("agent.sh", ECHO_AGENT).write("evalgate.yaml", &suite("", tasks));
        assert_eq!(test.command().args(["run", "--no-github"]).output().unwrap().status.code(), Some(0));
        test
    }

    /// The standalone `comment`, while GitHub's API (a stand-in that never answers; octocrab
    /// waits 30 s) is asked: it once posted after the signal and exited 0.
    #[test]
    fn comment_while_github_is_asked() {
        let (connected, first) = channel();
        let api = silent_server(connected);
        let test = ran()
            .env("GITHUB_API_URL", &api)
            .env("GITHUB_REPOSITORY", "acme/bot")
            .env("GITHUB_TOKEN", "ghs_test_token_never_printed")
            .env("GITHUB_SHA", "0123456789abcdef0123456789abcdef01234567")
            .args(&["comment", "evalgate-out/results.json", "--pr", "8"]);
        let child = spawn(&test);
        first.recv_timeout(Duration::from_secs(60)).expect("the comment never asked GitHub");
        interrupt(child, &[]);
    }

    /// `judge calibrate`'s bias probes, while the judge (a local stand-in, quick for the run,
    /// then never answering) is asked.
    #[test]
    fn judge_calibrate_while_the_judge_is_asked() {
        let slow = Arc::new(AtomicBool::new(false));
        let (asked, first) = channel();
        let asked = std::sync::Mutex::new(asked);
        let judge = {
            let slow = slow.clone();
            Server::start(move |_| {
                if slow.load(Ordering::SeqCst) {
                    let _ = asked.lock().unwrap().send(());
                    std::thread::sleep(Duration::from_secs(600));
                }
                let args = json!({"passed": true, "reason": "scripted"}).to_string();
                let message = json!({"role": "assistant", "content": null, "tool_calls": [{"id": "c", "type": "function",
                    "function": {"name": "record_verdict", "arguments": args}}]});
                let reply = json!({"id": "x", "object": "chat.completion", "model": "m",
                    "choices": [{"index": 0, "finish_reason": "stop", "message": message}],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 5}});
                (200, reply.to_string())
            })
        };
        let extra =
            format!("judge: {{provider: openai, model: m, base_url: '{}/v1', api_key_env: EG_J_KEY}}", judge.url());
        let tasks = "- {id: a, prompt: hello, grade: [{type: llm, contains: ok}]}";
        let label = r#"{"task": "a", "grader": "llm", "verdict": "pass", "labeller": "ana", "date": "2026-11-27"}"#;
        let test = Test::new()
            .write("agent.sh", ECHO_AGENT)
            .write("evalgate.yaml", &suite(&extra, tasks))
            .write("labels.jsonl", &format!("{label}\n"))
            .env("EG_J_KEY", "sk-test-judge-key-4411");
        let run = test.command().args(["run", "--no-github", "--no-cache"]).output().unwrap();
        assert_eq!(run.status.code(), Some(0), "{}", String::from_utf8_lossy(&run.stderr));
        slow.store(true, Ordering::SeqCst);
        let test = test.args(&["judge", "calibrate", "evalgate.yaml", "--labels", "labels.jsonl"]);
        let child = spawn(&test);
        first.recv_timeout(Duration::from_secs(60)).expect("the probes never asked the judge");
        interrupt(child, &[]);
    }
}

/// `calibrate` (the A/A runs) answers a signal as `run` does: the run it is in stops with its
/// reports, no run starts after it, exit 4, the agent killed.
#[test]
fn sigint_during_calibrate_stops_its_run_and_starts_no_other() {
    use crate::trust::{signal, wait_exit};

    let agent = "#!/bin/sh\necho $$ > slow.pid\nexec sleep 60\n";
    let tasks = "  - id: a\n    prompt: slow\n    grade: [{type: contains, value: x}]\n";
    let test = Test::new().write("agent.sh", agent).write("evalgate.yaml", &suite("", tasks));
    let test = test.args(&["calibrate", "--runs", "3", "--no-github"]);
    let dir = test.path().to_owned();
    let mut child =
        test.command().stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null()).spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::fs::read_to_string(dir.join("slow.pid")).map_or(true, |pid| !pid.ends_with('\n')) {
        assert!(Instant::now() < deadline, "the agent never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    signal(&child, Signal::SIGINT);
    assert_eq!(wait_exit(&mut child, Duration::from_secs(20)), 4);
    let pid: i32 = std::fs::read_to_string(dir.join("slow.pid")).unwrap().trim().parse().unwrap();
    assert!(!crate::common::is_running(pid), "the agent outlived evalgate");
    let results: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("evalgate-out/run-1/results.json")).unwrap()).unwrap();
    assert_eq!(results["interrupted"], true);
    assert!(!dir.join("evalgate-out/run-2").exists(), "a run started after the signal");
}
