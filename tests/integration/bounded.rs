//! Issue 31, section 6: every read evalgate makes of what an agent, a server or a model
//! controls is bounded, and every phase of a command can be interrupted or cut short.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::Test;
use crate::mcp::mcp_suite;

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

/// What an agent leaves where evalgate will read: a FIFO (no writer: a blocking open or read
/// hangs the run for ever) or `/dev/zero` (a read never ends).
const PLANTING_AGENT: &str = r#"#!/bin/sh
case "$1" in
  fifo-trace) mkfifo "$EVALGATE_TRACE" ;;
  zero-trace) ln -s /dev/zero "$EVALGATE_TRACE" ;;
  big-trace) head -c 17000000 /dev/zero | tr '\0' ' ' > "$EVALGATE_TRACE" ;;
  fifo-file) mkfifo planted.fifo ;;
  zero-file) ln -sf /dev/zero planted.zero ;;
esac
echo done
"#;

#[test]
fn files_an_agent_controls_are_read_bounded_and_only_when_regular() {
    let tasks = "
        - id: fifo-trace
          prompt: fifo-trace
          grade: [{type: contains, value: done}]
        - id: zero-trace
          prompt: zero-trace
          grade: [{type: contains, value: done}]
        - id: big-trace
          prompt: big-trace
          grade: [{type: contains, value: done}]
        - id: fifo-file
          prompt: fifo-file
          grade: [{type: file, path: planted.fifo, expect: {contains: x}}]
        - id: zero-file
          prompt: zero-file
          cleanup: [{file: {path: planted.zero, expect: {contains: x}}}]
          grade: [{type: contains, value: done}]
        ";
    // A hang is killed by `timeout`: the exit code then says 137, not the verdict.
    let run = Test::new()
        .write("evalgate.yaml", &crate::common::suite("", tasks))
        .write("agent.sh", PLANTING_AGENT)
        .args(&["run"])
        .run_via(&["timeout", "-s", "KILL", "120"]);
    run.expect_code(1);
    let reason = |id: &str| {
        let task = run.task(id);
        assert_eq!(task["status"], "error", "{id}: {task}");
        task["reason"].as_str().unwrap().to_owned()
    };
    let trace = "cannot read the agent's trace: ";
    assert_eq!(reason("fifo-trace"), format!("{trace}not a regular file (a FIFO)"));
    assert_eq!(reason("zero-trace"), format!("{trace}not a regular file (a character device)"));
    assert_eq!(
        reason("big-trace"),
        format!("{trace}larger than 16 MiB, the most evalgate reads of a file an agent controls")
    );
    let fifo = reason("fifo-file");
    assert!(fifo.contains("planted.fifo: not a regular file (a FIFO)"), "{fifo}");
    let cleanup = &run.task("zero-file")["trials"][0]["steps"][0];
    assert_eq!(cleanup["status"], "error", "{cleanup}");
    let failure = cleanup["failure"].as_str().unwrap_or_default();
    assert!(failure.contains("planted.zero: not a regular file (a character device)"), "{cleanup}");
}

/// A server that answers every connection with a 200 whose chunked body never ends (until
/// the reader goes away): what an endless model answer looks like on the wire.
fn endless_body_server() -> u16 {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            std::thread::spawn(move || {
                let mut request = [0u8; 65536];
                let _ = stream.read(&mut request);
                let head = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n";
                let chunk = format!("{:x}\r\n{}\r\n", 65536, "x".repeat(65536));
                if stream.write_all(head.as_bytes()).is_err() {
                    return;
                }
                while stream.write_all(chunk.as_bytes()).is_ok() {}
            });
        }
    });
    port
}

#[test]
fn an_endless_model_answer_is_cut_at_the_cap_and_is_an_error() {
    let port = endless_body_server();
    let yaml = r#"
        evalgate: 1
        suite: bounded.model
        agents:
          bot: {provider: openai, model: m, api_key_env: EG_B_KEY, base_url: "http://127.0.0.1:<port>/v1", timeout: 600s, retries: 0}
        tasks:
          - id: t
            prompt: hi
            grade: [{type: contains, value: x}]
        "#;
    let run = Test::new()
        .suite(&yaml.replace("<port>", &port.to_string()))
        .env("EG_B_KEY", "sk-test-222222")
        .args(&["run"])
        .run_via(&["timeout", "-s", "KILL", "60"]);
    run.expect_code(1);
    let task = run.task("t");
    assert_eq!(task["status"], "error", "{task}");
    let reason = task["reason"].as_str().unwrap();
    assert!(reason.contains("the answer is larger than 16 MiB, the most evalgate reads of a response"), "{reason}");
}

#[test]
fn a_tools_list_that_loops_or_never_ends_is_an_error_naming_it() {
    let cases = [
        ("--looping-tools", "`tools/list` returned the cursor `again` twice"),
        ("--endless-tools", "`tools/list` did not end: 1000 pages (0 MiB) and another cursor"),
    ];
    for (flag, expected) in cases {
        let yaml = "
            evalgate: 1
            suite: bounded.tools
            mcp_servers:
              evals: {command: [python3, '<fixtures>/evals_server.py', <flag>]}
            tasks:
              - id: t
                level: execution
                call: {server: evals, tool: add, arguments: {a: 1, b: 2}}
                grade: [{type: contains, value: '3'}]
            ";
        let run = Test::new()
            .write("evalgate.yaml", &mcp_suite(yaml).replace("<flag>", flag))
            .args(&["mcp", "tools"])
            .run_via(&["timeout", "-s", "KILL", "120"]);
        run.expect_code(3);
        assert!(run.stderr_has(&format!("MCP server `evals` did not start: {expected}")), "{flag}: {}", run.stderr);
    }
}

#[test]
fn a_signal_during_the_pr_comment_stops_it_and_the_run_is_never_green() {
    use nix::sys::signal::Signal;

    use crate::trust::{assert_nothing_says_passed, signal, wait_exit};
    // A GitHub API that takes the connection and never answers (octocrab waits 30 s).
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let api = format!("http://{}", listener.local_addr().unwrap());
    let (connected, first) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming() {
            held.push(stream);
            let _ = connected.send(());
        }
    });
    let tasks = "
        - id: a
          prompt: hello
          grade: [{type: contains, value: hello}]
        ";
    let test = Test::new()
        .write("agent.sh", crate::common::ECHO_AGENT)
        .write("evalgate.yaml", &crate::common::suite("", tasks))
        .write("event.json", r#"{"pull_request": {"number": 5}}"#)
        .write("output.txt", "");
    let event = test.path().join("event.json").display().to_string();
    let output = test.path().join("output.txt");
    let test = test
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_OUTPUT", &output.display().to_string())
        .env("GITHUB_API_URL", &api)
        .env("GITHUB_REPOSITORY", "acme/bot")
        .env("GITHUB_EVENT_PATH", &event)
        .env("GITHUB_TOKEN", "ghs_test_token_never_printed")
        .args(&["run", "--comment"]);
    let out = test.path().join("evalgate-out");
    let mut child = test.command().stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    first.recv_timeout(Duration::from_secs(60)).expect("the comment never began");
    signal(&child, Signal::SIGINT);
    // Well before the API's 30 s timeout, which would end the comment without the signal.
    assert_eq!(wait_exit(&mut child, Duration::from_secs(20)), 4);
    let results: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join("results.json")).unwrap()).unwrap();
    assert_eq!(results["verdict"]["outcome"]["status"], "interrupted", "{}", results["verdict"]);
    assert_nothing_says_passed(&out);
    // The step outputs are written after the comment, so they say it too.
    let outputs = crate::github::outputs(&std::fs::read_to_string(&output).unwrap());
    assert_eq!((outputs["passed"].as_str(), outputs["outcome"].as_str()), ("false", "interrupted"), "{outputs:?}");
}

#[test]
fn a_signal_during_a_live_evals_list_import_stops_the_run_with_reports_and_no_server_left() {
    use nix::sys::signal::Signal;

    use crate::trust::{signal, wait_exit};
    let yaml = "
        evalgate: 1
        suite: bounded.import
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
        .args(&["run"]);
    let dir = test.path().to_owned();
    let mut child = test.command().stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    // Until the server is asked for its evals (it answers after 120 s).
    let deadline = Instant::now() + Duration::from_secs(60);
    let server = loop {
        let log = std::fs::read_to_string(dir.join("requests.jsonl")).unwrap_or_default();
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
    signal(&child, Signal::SIGINT);
    assert_eq!(wait_exit(&mut child, Duration::from_secs(20)), 4);
    let results: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("evalgate-out/results.json")).unwrap()).unwrap();
    assert_eq!(results["verdict"]["outcome"]["status"], "interrupted", "{}", results["verdict"]);
    assert!(!crate::common::is_running(server), "the MCP server of the abandoned import is still running");
}

/// A FIFO given as the suite is refused at once (it was once waited on for ever, until a
/// signal): the run is invalid, and its reports say so.
#[test]
fn a_suite_file_that_is_a_fifo_is_refused_at_once_and_the_run_reported_invalid() {
    let test = Test::new().args(&["run"]);
    nix::unistd::mkfifo(&test.path().join("evalgate.yaml"), nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    let run = test.run_via(&["timeout", "-s", "KILL", "60"]);
    run.expect_code(2);
    assert!(run.stderr_has("cannot read suite file evalgate.yaml: not a regular file (a FIFO)"), "{}", run.stderr);
    let results = run.results();
    assert_eq!(results["verdict"]["outcome"]["status"], "invalid", "{}", results["verdict"]);
}

#[test]
fn a_github_api_answer_past_the_cap_is_a_warning_not_read_whole() {
    // A page of comments far larger than any GitHub sends.
    let huge = format!("[{{\"id\": 1, \"body\": \"{}\"}}]", "x".repeat(17 << 20));
    let api = crate::common::server::Server::start(move |_| (200, huge.clone()));
    let tasks = "
        - id: a
          prompt: hello
          grade: [{type: contains, value: hello}]
        ";
    let test = Test::new()
        .write("agent.sh", crate::common::ECHO_AGENT)
        .write("evalgate.yaml", &crate::common::suite("", tasks))
        .write("event.json", r#"{"pull_request": {"number": 5}}"#);
    let event = test.path().join("event.json").display().to_string();
    let run = test
        .env("GITHUB_API_URL", &api.url())
        .env("GITHUB_REPOSITORY", "acme/bot")
        .env("GITHUB_EVENT_PATH", &event)
        .env("GITHUB_TOKEN", "ghs_test_token_never_printed")
        .args(&["run", "--comment"])
        .run();
    run.expect_code(0);
    assert!(
        run.stdout.contains(
            "::warning title=evalgate::the GitHub comment request failed: the answer is larger than 16 MiB, the most evalgate reads of a response"
        ),
        "{}",
        run.stdout
    );
}
