//! MCP protocol eras, against real servers: the Python SDK fixture server (mcp 2.3.0 speaks
//! 2024-11-05 to 2026-07-28) and server-everything (the TypeScript SDK: up to 2025-11-25).

use std::process::{Child, Command, Stdio};

use serde_json::Value;

use crate::common::Test;
use crate::mcp::{mcp_suite, python};

fn fixture(test: Test) -> Test {
    test.write("fixture_server.py", include_str!("../fixtures/mcp/fixture_server.py"))
}

/// The version the fixture server's `protocol` tool saw, and the HTTP headers of its request.
fn seen(run: &crate::common::Run, id: &str) -> Value {
    let task = run.task(id);
    let result = &task["trials"][0]["tool_calls"][0]["result"];
    let text = result["content"][0]["text"].as_str().unwrap_or_else(|| panic!("{task}"));
    serde_json::from_str(text).unwrap()
}

#[test]
fn a_protocol_list_runs_each_task_once_per_era_and_reports_each_era() {
    let yaml = mcp_suite(
        "
        evalgate: 1
        suite: eras
        mcp_servers:
          fx:
            command: [<python>, fixture_server.py]
            protocol: [2024-11-05, 2025-06-18, 2025-11-25, 2026-07-28]
          everything:
            command: [<everything>, stdio]
            protocol: [2025-03-26, 2025-11-25, 2026-07-28]
        tasks:
          - id: version
            level: execution
            call: {server: fx, tool: protocol}
            grade: [{type: contains, value: version}]
          - id: echo
            level: execution
            setup: [{run: 'echo ran >> setup.log'}]
            call: {server: everything, tool: echo, arguments: {message: hi}}
            grade: [{type: equals, value: 'Echo: hi'}]
        ",
    );
    let run = fixture(Test::new()).write("evalgate.yaml", &yaml).args(&["run"]).run();
    // The version the server did not start at runs nothing of its task, not even setup.
    assert_eq!(run.read("setup.log").lines().count(), 2, "setup ran at 2025-03-26 and 2025-11-25 only");
    // server-everything does not speak 2026-07-28: that era's task cannot pass.
    run.expect_code(1);
    for era in ["2024-11-05", "2025-06-18", "2025-11-25", "2026-07-28"] {
        let id = format!("version@{era}");
        assert_eq!(run.task(&id)["status"], "passed", "{}", run.task(&id));
        assert_eq!(run.task(&id)["protocol"], serde_json::json!({"server": "fx", "version": era}));
        // The server itself saw the request at that version.
        assert_eq!(seen(&run, &id)["version"], era);
        assert_eq!(run.results()["mcp_servers"][format!("fx@{era}")]["protocol_version"], era);
    }
    for era in ["2025-03-26", "2025-11-25"] {
        assert_eq!(run.task(&format!("echo@{era}"))["status"], "passed");
    }
    let down = run.task("echo@2026-07-28");
    assert_eq!(down["status"], "error");
    let why = "handshake at protocol 2026-07-28 failed: the server does not know `server/discover` (Method not found, -32601), so it does not speak 2026-07-28";
    assert_eq!(down["reason"], format!("MCP server `everything` did not start at protocol 2026-07-28: {why}"));
    assert_eq!(run.results()["mcp_servers"]["everything@2026-07-28"]["error"], why);
    // Without the suffix no task runs: every task of a listed server is per era.
    assert!(run.results()["tasks"].as_array().unwrap().iter().all(|t| t["id"].as_str().unwrap().contains('@')));

    assert!(
        run.stderr_has("MCP protocol: `everything` passes on 2025-03-26; passes on 2025-11-25; fails on 2026-07-28 (0/1 passed): did not start at it: handshake at protocol 2026-07-28 failed"),
        "{}",
        run.stderr
    );
    assert!(run.stderr_has(
        "MCP protocol: `fx` passes on 2024-11-05; passes on 2025-06-18; passes on 2025-11-25; passes on 2026-07-28"
    ));
    let md = run.read("evalgate-out/summary.md");
    assert!(md.contains("| `fx` | 2026-07-28 | 1/1 | ✅ passes |"), "{md}");
    assert!(
        md.contains(
            "| `everything` | 2026-07-28 | 0/1 | ❌ fails: did not start at it: handshake at protocol 2026-07-28"
        ),
        "{md}"
    );
    let junit = run.read("evalgate-out/junit.xml");
    assert!(junit.contains("name=\"version@2026-07-28\""), "{junit}");
    // Four instances of the server ran; none outlived the run.
    let server = run.dir.join("fixture_server.py").display().to_string();
    assert!(crate::mcp::processes_with(&server).is_empty(), "an MCP server instance outlived the run");
}

#[test]
fn auto_speaks_the_newest_era_a_server_knows_and_a_pinned_version_is_held_to() {
    let yaml = mcp_suite(
        "
        evalgate: 1
        suite: auto
        mcp_servers:
          fx: {command: [<python>, fixture_server.py]}
          everything: {command: [<everything>, stdio], protocol: auto}
          old: {command: [<python>, fixture_server.py], protocol: 2025-03-26}
        tasks:
          - id: version
            level: execution
            call: {server: fx, tool: protocol}
            grade: [{type: contains, value: version}]
          - id: old
            level: execution
            call: {server: old, tool: protocol}
            grade: [{type: contains, value: version}]
          - id: echo
            level: execution
            call: {server: everything, tool: echo, arguments: {message: hi}}
            grade: [{type: equals, value: 'Echo: hi'}]
        ",
    );
    let run = fixture(Test::new()).write("evalgate.yaml", &yaml).args(&["run"]).run();
    run.expect_code(0);
    let servers = &run.results()["mcp_servers"];
    // `auto`: server/discover where the server knows it, else initialize.
    assert_eq!(servers["fx"]["protocol_version"], "2026-07-28");
    assert_eq!(seen(&run, "version")["version"], "2026-07-28");
    assert_eq!(servers["everything"]["protocol_version"], "2025-11-25");
    assert_eq!(servers["old"]["protocol_version"], "2025-03-26");
    assert_eq!(seen(&run, "old")["version"], "2025-03-26");
    assert_eq!(run.task("version")["protocol"], Value::Null, "one version is not a list of eras");

    // A server that cannot speak the one version asked of it is a preflight failure.
    let pinned = mcp_suite(
        "
        evalgate: 1
        suite: pinned
        mcp_servers:
          everything: {command: [<everything>, stdio], protocol: 2026-07-28}
        tasks:
          - id: echo
            level: execution
            call: {server: everything, tool: echo, arguments: {message: hi}}
            grade: [{type: equals, value: 'Echo: hi'}]
        ",
    );
    let run = Test::new().write("evalgate.yaml", &pinned).args(&["run"]).run();
    run.expect_code(3);
    assert!(
        run.stderr_has("MCP server `everything`: did not start: handshake at protocol 2026-07-28 failed: the server does not know `server/discover`"),
        "{}",
        run.stderr
    );
}

/// The fixture server over streamable HTTP, once it listens.
fn fixture_http(dir: &std::path::Path) -> (Child, u16) {
    let port = crate::common::server::closed_port();
    let child = Command::new(python())
        .arg(dir.join("fixture_server.py"))
        .args(["http", &port.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    crate::common::server::wait_listening(port, "the fixture server");
    (child, port)
}

#[test]
fn over_http_each_era_sends_its_version_header_and_2026_07_28_names_the_method() {
    let test = fixture(Test::new());
    let (mut server, port) = fixture_http(test.path());
    let yaml = "
        evalgate: 1
        suite: http
        mcp_servers:
          fx:
            url: 'http://127.0.0.1:<port>/mcp'
            protocol: [2025-06-18, 2025-11-25, 2026-07-28]
        tasks:
          - id: version
            level: execution
            call: {server: fx, tool: protocol}
            grade: [{type: contains, value: version}]
        ";
    let run = test.suite(&yaml.replace("<port>", &port.to_string())).args(&["run"]).run();
    run.expect_messages("  MCP protocol: `fx` passes on 2025-06-18; passes on 2025-11-25; passes on 2026-07-28\n");
    let _ = server.kill();
    let _ = server.wait();
    run.expect_code(0);
    for era in ["2025-06-18", "2025-11-25", "2026-07-28"] {
        let seen = seen(&run, &format!("version@{era}"));
        assert_eq!(seen["version"], era);
        assert_eq!(seen["header"], era, "MCP-Protocol-Version must match the negotiated version");
    }
    let modern = seen(&run, "version@2026-07-28");
    assert_eq!((modern["method"].as_str(), modern["name"].as_str()), (Some("tools/call"), Some("protocol")));
    assert_eq!(seen(&run, "version@2025-11-25")["method"], Value::Null);
}

#[test]
fn protocol_mistakes_are_load_errors_at_their_line() {
    // `gx` takes `<gx>` after its command: a protocol list, or nothing.
    let suite = "
        evalgate: 1
        suite: s
        mcp_servers:
          fx: {command: [<python>, s.py], protocol: <fx>}
          gx: {command: [<python>, s.py]<gx>}
        tasks:
          - id: t
            level: execution
            call: {server: fx, tool: add}
            grade: [{type: mcp, server: gx, tool: add, expect: {output: {contains: x}}}]
        ";
    let cases = [
        (
            "2025-06-17",
            "",
            "evalgate.yaml:4",
            "mcp_servers.fx.protocol: unknown protocol version `2025-06-17` (did you mean `2025-06-18`?)",
        ),
        ("[]", "", "evalgate.yaml:4", "the list of protocol versions is empty"),
        (
            "[2025-06-18, 2026-07-28]",
            ", protocol: [2025-06-18, 2025-11-25]",
            "",
            "task `t` uses two MCP servers with a protocol list (`fx`, `gx`)",
        ),
    ];
    for (fx, gx, at, message) in cases {
        let yaml = mcp_suite(suite).replace("<fx>", fx).replace("<gx>", gx);
        let run = Test::new().write("evalgate.yaml", &yaml).args(&["check"]).run();
        run.expect_code(2);
        assert!(run.stderr_has(message), "{message}\n{}", run.stderr);
        assert!(run.stderr_has(at), "{at}\n{}", run.stderr);
    }
}
