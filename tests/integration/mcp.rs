//! MCP servers, for real: @modelcontextprotocol/server-everything and server-filesystem
//! (npm, from tests/fixtures/mcp) and a fixture server written with the Python SDK (in the
//! venv scripts/test.sh creates).

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use crate::common::Test;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub(crate) fn bin(name: &str) -> String {
    let path = root().join("tests/fixtures/mcp/node_modules/.bin").join(name);
    assert!(path.exists(), "{} is missing: run scripts/test.sh (it runs npm ci in tests/fixtures/mcp)", path.display());
    path.display().to_string()
}

pub(crate) fn python() -> String {
    let path = root().join(".venv-test/bin/python");
    assert!(path.exists(), "{} is missing: run scripts/test.sh (it creates the venv)", path.display());
    path.display().to_string()
}

/// The Python fixture server, copied into the test's directory so its processes can be found.
fn fixture(test: Test) -> Test {
    test.write("fixture_server.py", include_str!("../fixtures/mcp/fixture_server.py"))
}

fn fixture_server(extra: &str) -> String {
    format!("  fx: {{command: [{}, fixture_server.py]{extra}}}\n", python())
}

/// Processes whose command line mentions `needle` (zombies excluded).
pub(crate) fn processes_with(needle: &str) -> Vec<i32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else { continue };
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        if String::from_utf8_lossy(&cmdline).contains(needle) && crate::common::is_running(pid) {
            found.push(pid);
        }
    }
    found
}

#[test]
fn execution_level_calls_on_stdio_servers() {
    let files = root().join("tests/fixtures/mcp");
    let servers = format!(
        "mcp_servers:\n  everything: {{command: [{}, stdio]}}\n  files: {{command: [{}, {}]}}\n{}",
        bin("mcp-server-everything"),
        bin("mcp-server-filesystem"),
        files.display(),
        fixture_server("")
    );
    let tasks = format!(
        "tasks:\n  - id: echo\n    level: execution\n    call: {{server: everything, tool: echo, arguments: {{message: hi}}}}\n    grade: [{{type: equals, value: 'Echo: hi'}}]\n  - id: sum\n    level: execution\n    call: {{server: everything, tool: get-sum, arguments: {{a: 2, b: 40}}}}\n    grade: [{{type: contains, value: '42'}}, {{type: tool_called, tool: everything.get-sum}}]\n  - id: read\n    level: execution\n    call: {{server: files, tool: read_text_file, arguments: {{path: '{}'}}}}\n    grade: [{{type: json, path: structuredContent.content, matches: 'server-everything'}}]\n  - id: add\n    level: execution\n    call: {{server: fx, tool: add, arguments: {{a: 2, b: 3}}}}\n    grade: [{{type: json, path: structuredContent.result, equals: 5}}, {{type: json, path: isError, equals: false}}]\n",
        files.join("package.json").display()
    );
    let yaml = format!("evalgate: 1\nsuite: t\n{servers}{tasks}");
    let run = fixture(Test::new()).write("evalgate.yaml", &yaml).args(&["run"]).run();
    run.expect_code(0);
    let servers = &run.results()["mcp_servers"];
    assert_eq!(servers["everything"]["name"], "mcp-servers/everything");
    assert!(servers["fx"]["protocol_version"].as_str().unwrap().starts_with("20"), "{servers}");
    assert!(
        processes_with(&run.dir.join("fixture_server.py").display().to_string()).is_empty(),
        "an MCP server outlived the run"
    );
}

/// Starts server-everything over streamable HTTP and waits until it listens.
pub(crate) fn everything_http() -> (Child, u16) {
    let port = crate::common::server::closed_port();
    let child = Command::new(bin("mcp-server-everything"))
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    crate::common::server::wait_listening(port, "server-everything");
    (child, port)
}

#[test]
fn execution_level_calls_over_streamable_http() {
    let (mut server, port) = everything_http();
    let yaml = format!(
        "evalgate: 1\nsuite: t\nmcp_servers:\n  remote: {{url: 'http://127.0.0.1:{port}/mcp', headers: {{X-Test: '{{env.EVALGATE_TEST_HEADER}}'}}}}\ntasks:\n  - id: echo\n    level: execution\n    call: {{server: remote, tool: echo, arguments: {{message: over http}}}}\n    grade: [{{type: equals, value: 'Echo: over http'}}]\n  - id: sum\n    level: execution\n    call: {{server: remote, tool: get-sum, arguments: {{a: 1, b: 2}}}}\n    grade: [{{type: contains, value: 'is 3'}}]\n"
    );
    let run = Test::new().write("evalgate.yaml", &yaml).env("EVALGATE_TEST_HEADER", "yes").args(&["run"]).run();
    let _ = server.kill();
    let _ = server.wait();
    run.expect_code(0);
}

#[test]
fn tool_errors_fail_graders_and_timeouts_and_crashes_are_task_errors() {
    let yaml = format!(
        "evalgate: 1\nsuite: t\nmcp_servers:\n{}tasks:\n  - id: refused\n    level: execution\n    call: {{server: fx, tool: refuse, arguments: {{reason: quota}}}}\n    grade: [{{type: json, path: result, equals: 1}}]\n  - id: slow\n    level: execution\n    timeout: 1s\n    call: {{server: fx, tool: slow, arguments: {{seconds: 5}}}}\n    grade: [{{type: contains, value: done}}]\n  - id: crash\n    level: execution\n    call: {{server: fx, tool: crash}}\n    grade: [{{type: contains, value: x}}]\n  - id: after-crash\n    level: execution\n    call: {{server: fx, tool: add, arguments: {{a: 1, b: 1}}}}\n    grade: [{{type: json, path: structuredContent.result, equals: 2}}]\n",
        fixture_server("")
    );
    let run = fixture(Test::new()).write("evalgate.yaml", &yaml).args(&["run", "-j", "1"]).run();
    run.expect_code(1);
    let refused = run.task("refused");
    assert_eq!(refused["status"], "failed");
    assert_eq!(
        refused["reason"],
        "`json` failed: the tool returned an error: Error executing tool refuse: refused: quota"
    );
    let slow = run.task("slow");
    assert_eq!(slow["status"], "error");
    assert_eq!(slow["reason"], "MCP server `fx`: tools/call slow timed out after 1s");
    let crash = run.task("crash");
    assert_eq!(crash["status"], "error");
    assert!(crash["reason"].as_str().unwrap().starts_with("MCP server `fx`: tools/call crash failed"), "{crash}");
    // The server was restarted once; later tasks run against it.
    assert_eq!(run.task("after-crash")["status"], "passed", "{}", run.task("after-crash"));
    assert!(processes_with(&run.dir.join("fixture_server.py").display().to_string()).is_empty());
}

#[test]
fn an_unknown_tool_is_caught_in_preflight_with_a_suggestion() {
    let yaml = format!(
        "evalgate: 1\nsuite: t\nmcp_servers:\n  everything: {{command: [{}, stdio]}}\ntasks:\n  - id: t\n    level: execution\n    call: {{server: everything, tool: get_sum, arguments: {{a: 1, b: 2}}}}\n    grade: [{{type: contains, value: '3'}}]\n",
        bin("mcp-server-everything")
    );
    let run = Test::new().write("evalgate.yaml", &yaml).args(&["check"]).run();
    run.expect_code(3);
    assert!(
        run.stderr.contains(
            "- MCP tool `everything.get_sum`: server `everything` has no such tool (task `t`); did you mean `get-sum`?"
        ),
        "{}",
        run.stderr
    );
}

#[test]
fn a_destructive_tool_is_refused_without_allow_side_effects() {
    let task = "tasks:\n  - id: wipe\n    level: execution\n    call: {server: fx, tool: delete_all}\n    grade: [{type: contains, value: deleted}]\n";
    let refused = fixture(Test::new())
        .write("evalgate.yaml", &format!("evalgate: 1\nsuite: t\nmcp_servers:\n{}{task}", fixture_server("")))
        .args(&["run"])
        .run();
    refused.expect_code(3);
    assert!(refused.stderr.contains("is annotated destructiveHint: calling it is refused unless `mcp_servers.fx.allow_side_effects: true` (task `wipe`)"), "{}", refused.stderr);
    let allowed = fixture(Test::new())
        .write(
            "evalgate.yaml",
            &format!("evalgate: 1\nsuite: t\nmcp_servers:\n{}{task}", fixture_server(", allow_side_effects: true")),
        )
        .args(&["run"])
        .run();
    allowed.expect_code(0);
}

#[test]
fn mcp_suite_mistakes_are_load_errors() {
    let yaml = "evalgate: 1\nsuite: t\nmcp_servers:\n  a: {command: [x], url: 'http://127.0.0.1:1/mcp'}\ntasks:\n  - id: t\n    level: execution\n    call: {server: ab, tool: x}\n    grade: [{type: contains, value: x}]\n  - id: u\n    level: execution\n    prompt: x\n    grade: [{type: contains, value: x}]\n";
    let run = Test::new().write("evalgate.yaml", yaml).args(&["check"]).run();
    run.expect_code(2);
    for expected in [
        "mcp_servers.a: an MCP server has either `command` (stdio) or `url` (streamable HTTP)",
        "tasks[0].call.server: unknown MCP server `ab`",
        "tasks[1]: an execution-level task needs `call: {server, tool, arguments}`",
    ] {
        assert!(run.stderr.contains(expected), "missing {expected:?} in:\n{}", run.stderr);
    }
    // A level is read as one of the levels, before the suite is validated.
    let run = Test::new()
        .write("evalgate.yaml", &yaml.replace("level: execution\n    prompt", "level: executoin\n    prompt"))
        .args(&["check"])
        .run();
    run.expect_code(2);
    assert!(run.stderr.contains("tasks[1].level: unknown level `executoin`\n"), "{}", run.stderr);
    assert!(run.stderr.contains("help: did you mean `execution`?"), "{}", run.stderr);
}

/// A command agent that speaks MCP (streamable HTTP, JSON-RPC) to the config it is given.
const MCP_AGENT: &str = r#"#!/usr/bin/env python3
import json, os, sys, urllib.request

config = json.load(open(os.environ["EVALGATE_MCP_CONFIG"]))
assert sys.argv[1] == os.environ["EVALGATE_MCP_CONFIG"], "{mcp_config} is the same file"
url = config["mcpServers"]["everything"]["url"]

def rpc(method, params, id=1):
    body = json.dumps({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).encode()
    req = urllib.request.Request(url, data=body, headers={"content-type": "application/json", "accept": "application/json, text/event-stream"})
    return json.load(urllib.request.urlopen(req))

rpc("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test-agent", "version": "1"}})
tools = [t["name"] for t in rpc("tools/list", {}, 2)["result"]["tools"]]
assert "get-sum" in tools, tools
total = rpc("tools/call", {"name": "get-sum", "arguments": {"a": 20, "b": 22}}, 3)["result"]["content"][0]["text"]
rpc("tools/call", {"name": "echo", "arguments": {"message": "done"}}, 4)
print(total)
"#;

#[test]
fn a_command_agent_s_tool_calls_are_recorded_through_the_proxy() {
    let yaml = format!(
        "evalgate: 1\nsuite: t\nmcp_servers:\n  everything: {{command: [{}, stdio]}}\nagents:\n  cli: {{command: [{}, agent.py, '{{mcp_config}}'], mcp: [everything]}}\ntasks:\n  - id: t\n    prompt: add\n    grade:\n      - {{type: contains, value: 'is 42'}}\n      - {{type: tool_sequence, order: exact, tools: [{{tool: everything.get-sum, arguments: {{a: 20}}}}, echo]}}\n",
        bin("mcp-server-everything"),
        python()
    );
    let run = Test::new().write("agent.py", MCP_AGENT).write("evalgate.yaml", &yaml).args(&["run"]).run();
    run.expect_code(0);
    let calls = &run.task("t")["trials"][0]["tool_calls"];
    assert_eq!(calls[0]["server"], "everything");
    assert_eq!(calls[0]["result"]["content"][0]["text"], "The sum of 20 and 22 is 42.");
    assert!(calls[0]["duration_ms"].is_u64());
}

/// Through the proxy the calls are known even when the agent reports none itself: a negative
/// tool grader judges (an agent without the proxy or a trace gets an error, see `graders`).
#[test]
fn with_the_proxy_an_agent_that_calls_no_tool_is_judged() {
    let yaml = format!(
        "evalgate: 1\nsuite: t\nmcp_servers:\n  everything: {{command: [{}, stdio]}}\nagents:\n  cli: {{command: [echo, done], mcp: [everything]}}\ntasks:\n  - id: t\n    prompt: add\n    grade:\n      - {{type: tool_not_called, tool: get-sum}}\n      - {{type: tool_calls, max: 0}}\n",
        bin("mcp-server-everything"),
    );
    let run = Test::new().write("evalgate.yaml", &yaml).args(&["run"]).run();
    run.expect_code(0);
    let graders = &run.task("t")["trials"][0]["graders"];
    assert_eq!(graders[0]["reason"], "get-sum was not called");
    assert_eq!(graders[1]["reason"], "0 tool calls");
}

#[test]
fn mcp_steps_and_graders_call_tools_and_capture_outputs() {
    let yaml = format!(
        "evalgate: 1\nsuite: t\nmcp_servers:\n{}agents: {{bot: {{command: [sh, -c, 'echo total $0', '{{prompt}}']}}}}\ntasks:\n  - id: t\n    setup:\n      - id: sum\n        mcp: {{server: fx, tool: add, arguments: {{a: 40, b: 2}}, expect: {{output: {{contains: '42'}}}}}}\n        outputs: {{value: '{{response.json.structuredContent.result}}'}}\n      - mcp: {{server: fx, tool: refuse, arguments: {{reason: expected}}, expect: {{is_error: true}}}}\n    prompt: '{{steps.sum.outputs.value}}'\n    grade:\n      - {{type: contains, value: total 42}}\n      - {{type: mcp, server: fx, tool: add, arguments: {{a: '{{steps.sum.outputs.value}}', b: 1}}, expect: {{output: {{json: {{path: result, equals: 43}}}}}}}}\n      - {{type: mcp, server: fx, tool: add, arguments: {{a: 1, b: 1}}, expect: {{output: {{contains: '3'}}}}}}\n",
        fixture_server("")
    );
    let run = fixture(Test::new()).write("evalgate.yaml", &yaml).args(&["run"]).run();
    let task = run.task("t");
    let graders = &task["trials"][0]["graders"];
    assert_eq!(graders[0]["status"], "passed", "{task}");
    assert_eq!(graders[1]["status"], "passed", "{task}");
    assert_eq!(graders[2]["status"], "failed");
    assert!(graders[2]["reason"].as_str().unwrap().ends_with("the result does not contain \"3\""), "{}", graders[2]);

    let typo = format!(
        "evalgate: 1\nsuite: t\nmcp_servers:\n{}agents: {{bot: {{command: [echo]}}}}\ntasks:\n  - id: t\n    prompt: x\n    grade: [{{type: mcp, server: fx, tool: ad}}]\n",
        fixture_server("")
    );
    let run = fixture(Test::new()).write("evalgate.yaml", &typo).args(&["check"]).run();
    run.expect_code(3);
    assert!(
        run.stderr.contains("- MCP tool `fx.ad`: server `fx` has no such tool (task `t`); did you mean `add`?"),
        "{}",
        run.stderr
    );
}

/// The tools graders name are found in the live `tools/list` before anything runs: a
/// misspelt `tool_not_called: fx.delete_al` passed every run. Named as `server.tool`, with
/// `server:`, or bare for a model agent (whose only tools are its servers'). Naming a
/// destructive tool to check it was not called is not refused.
#[test]
fn tools_named_by_graders_must_exist_on_their_server() {
    let graders = "      - {type: tool_not_called, tool: fx.delete_al}\n      - {type: tool_not_called, tool: fx.delete_all}\n      - {type: tool_called, server: fx, tool: ad}\n      - {type: tool_sequence, tools: [fx.add, {tool: fx.refuse}, fx.slo]}\n      - {type: tool_calls, tools: [add], max: 2}\n";
    let yaml = format!(
        "evalgate: 1\nsuite: t\nmcp_servers:\n{}agents:\n  bot: {{command: [echo]}}\n  model: {{provider: openai, model: gpt-4o-mini, api_key_env: EVALGATE_TEST_KEY, mcp: [fx]}}\ntasks:\n  - id: t\n    agent: bot\n    prompt: x\n    grade:\n{graders}  - id: m\n    agent: model\n    prompt: x\n    grade:\n      - {{type: tool_called, tool: ad}}\n      - {{type: tool_called, tool: add}}\n",
        fixture_server("")
    );
    let run = fixture(Test::new()).write("evalgate.yaml", &yaml).env("EVALGATE_TEST_KEY", "k").args(&["check"]).run();
    run.expect_code(3);
    let misses: Vec<&str> = run.stderr.lines().filter(|l| l.starts_with("  - ")).collect();
    assert_eq!(
        misses,
        [
            "  - MCP tool `fx.delete_al`: server `fx` has no such tool (task `t`); did you mean `delete_all`?",
            "  - MCP tool `fx.ad`: server `fx` has no such tool (task `t`); did you mean `add`?",
            "  - MCP tool `fx.slo`: server `fx` has no such tool (task `t`); did you mean `slow`?",
            "  - MCP tool `ad`: no server of its agent (`fx`) has such a tool (task `m`); did you mean `add`?",
        ],
        "{}",
        run.stderr
    );
    assert!(!run.stdout.contains("preflight passed"), "{}", run.stdout);
}

/// An agent attacking the recording proxy: a body announced at 900 GB, then 100 KB of
/// headers; each is refused (the second with 431, or a reset that loses it), evalgate keeps
/// running, and the proxy still serves a real call.
const HOSTILE_MCP_AGENT: &str = r#"#!/usr/bin/env python3
import json, os, socket, urllib.request, urllib.parse

url = json.load(open(os.environ["EVALGATE_MCP_CONFIG"]))["mcpServers"]["everything"]["url"]
port = urllib.parse.urlparse(url).port

def raw(head):
    s = socket.create_connection(("127.0.0.1", port))
    try:
        s.sendall(head)
        reply = s.recv(200).decode(errors="replace")
    except OSError:  # refused before all was sent: the reply may be lost to the reset
        reply = ""
    s.close()
    return reply.split("\r\n")[0] or "closed"

path = urllib.parse.urlparse(url).path.encode()
host = b"Host: 127.0.0.1:%d\r\n" % port
call = b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "get-sum", "arguments": {"a": 1, "b": 2}}}'
def post(target, headers):
    return raw(b"POST " + target + b" HTTP/1.1\r\n" + headers + b"Content-Length: %d\r\n\r\n" % len(call) + call)
json_type = b"Content-Type: application/json\r\n"
# Only the agent the proxy was started for, which knows its path, reaches a tool.
print("no token:", post(b"/mcp", host + json_type))
print("wrong token:", post(path[:-1] + b"0", host + json_type))
print("rebound host:", post(path, b"Host: evil.example\r\n" + json_type))
print("browser origin:", post(path, host + json_type + b"Origin: http://evil.example\r\n"))
print("simple request:", post(path, host + b"Content-Type: text/plain\r\n"))
print("huge body:", raw(b"POST " + path + b" HTTP/1.1\r\n" + host + json_type + b"Content-Length: 900000000000\r\n\r\n{"))
print("huge head:", raw(b"POST " + path + b" HTTP/1.1\r\n" + host + b"X-Big: " + b"a" * 100000 + b"\r\n\r\n"))
body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "get-sum", "arguments": {"a": 1, "b": 2}}}).encode()
req = urllib.request.Request(url, data=body, headers={"content-type": "application/json"})
print(json.load(urllib.request.urlopen(req))["result"]["content"][0]["text"])
"#;

#[test]
fn the_recording_proxy_serves_only_its_agent_refuses_oversized_requests_and_keeps_serving() {
    let yaml = format!(
        "evalgate: 1\nsuite: t\nmcp_servers:\n  everything: {{command: [{}, stdio]}}\nagents:\n  cli: {{command: [{}, agent.py], mcp: [everything], timeout: 20s}}\ntasks:\n  - id: t\n    prompt: add\n    grade:\n      - {{type: contains, value: 'huge body: HTTP/1.1 413'}}\n      - {{type: regex, pattern: 'no token: HTTP/1.1 404 .*\\nwrong token: HTTP/1.1 404 .*\\nrebound host: HTTP/1.1 403 .*\\nbrowser origin: HTTP/1.1 403 .*\\nsimple request: HTTP/1.1 415 '}}\n      - {{type: regex, pattern: 'huge head: (HTTP/1.1 431|closed)'}}\n      - {{type: contains, value: 'is 3'}}\n",
        bin("mcp-server-everything"),
        python()
    );
    let run = Test::new().write("agent.py", HOSTILE_MCP_AGENT).write("evalgate.yaml", &yaml).args(&["run"]).run();
    run.expect_code(0);
}
