//! MCP servers, for real: @modelcontextprotocol/server-everything and server-filesystem
//! (npm, from tests/fixtures/mcp) and a fixture server written with the Python SDK (in the
//! venv scripts/test.sh creates).

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use crate::common::{Test, unindent};

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

/// A suite written as an indented block, naming the fixture programs `<python>` (the venv's),
/// `<everything>` and `<filesystem>` (the npm servers) and the directory `<fixtures>`.
pub(crate) fn mcp_suite(text: &str) -> String {
    type Path = fn() -> String;
    let fixtures: [(&str, Path); 4] = [
        ("<python>", python),
        ("<everything>", || bin("mcp-server-everything")),
        ("<filesystem>", || bin("mcp-server-filesystem")),
        ("<fixtures>", || root().join("tests/fixtures/mcp").display().to_string()),
    ];
    let mut text = unindent(text);
    for (placeholder, path) in fixtures {
        if text.contains(placeholder) {
            text = text.replace(placeholder, &path());
        }
    }
    text
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
    let yaml = mcp_suite(
        "
        evalgate: 1
        suite: t
        mcp_servers:
          everything: {command: [<everything>, stdio]}
          files: {command: [<filesystem>, <fixtures>]}
          fx: {command: [<python>, fixture_server.py]}
        tasks:
          - id: echo
            level: execution
            call: {server: everything, tool: echo, arguments: {message: hi}}
            grade: [{type: equals, value: 'Echo: hi'}]
          - id: sum
            level: execution
            call: {server: everything, tool: get-sum, arguments: {a: 2, b: 40}}
            grade: [{type: contains, value: '42'}, {type: tool_called, tool: everything.get-sum}]
          - id: read
            level: execution
            call: {server: files, tool: read_text_file, arguments: {path: '<fixtures>/package.json'}}
            grade: [{type: json, path: structuredContent.content, matches: 'server-everything'}]
          - id: add
            level: execution
            call: {server: fx, tool: add, arguments: {a: 2, b: 3}}
            grade: [{type: json, path: structuredContent.result, equals: 5}, {type: json, path: isError, equals: false}]
        ",
    );
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

/// A `call`'s arguments are held to the tool's input schema at preflight: a renamed
/// parameter (server-everything's `get-sum` takes `a` and `b`; `echo` takes `message`) is a
/// miss naming the file, key path and line and the schema's names, and nothing runs.
#[test]
fn a_calls_renamed_parameter_fails_preflight_with_the_schemas_names() {
    let yaml = mcp_suite(
        "
        evalgate: 1
        suite: t
        mcp_servers:
          everything: {command: [<everything>, stdio]}
        tasks:
          - id: echo
            level: execution
            call: {server: everything, tool: echo, arguments: {mesage: hi}}
            grade: [{type: contains, value: hi}]
          - id: sum
            level: execution
            call:
              server: everything
              tool: get-sum
              arguments: {a: 2, b: forty}
            grade: [{type: contains, value: '42'}]
          - id: templated
            level: execution
            call: {server: everything, tool: echo, arguments: {message: '{vars.word}'}}
            grade: [{type: contains, value: hi}]
        vars: {word: hi}
        ",
    );
    let run = Test::new().write("evalgate.yaml", &yaml).args(&["run"]).run();
    run.expect_code(3);
    // A template's value is not known before the run: checked by name only, so two problems.
    run.expect_messages(
        "  preflight failed for evalgate.yaml: 2 missing
  - MCP tool arguments `everything.echo`: evalgate.yaml:8: tasks[0].call.arguments: the tool has no parameter `mesage`; did you mean `message`?
  - MCP tool arguments `everything.get-sum`: evalgate.yaml:15: tasks[1].call.arguments: `b`: \"forty\" is not of type \"number\"
nothing ran
",
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
    let yaml = mcp_suite(
        "
        evalgate: 1
        suite: t
        mcp_servers:
          remote: {url: 'http://127.0.0.1:<port>/mcp', headers: {X-Test: '{env.EVALGATE_TEST_HEADER}'}}
        tasks:
          - id: echo
            level: execution
            call: {server: remote, tool: echo, arguments: {message: over http}}
            grade: [{type: equals, value: 'Echo: over http'}]
          - id: sum
            level: execution
            call: {server: remote, tool: get-sum, arguments: {a: 1, b: 2}}
            grade: [{type: contains, value: 'is 3'}]
        ",
    )
    .replace("<port>", &port.to_string());
    let run = Test::new().write("evalgate.yaml", &yaml).env("EVALGATE_TEST_HEADER", "yes").args(&["run"]).run();
    let _ = server.kill();
    let _ = server.wait();
    run.expect_code(0);
}

#[test]
fn tool_errors_fail_graders_and_timeouts_and_crashes_are_task_errors() {
    let yaml = mcp_suite(
        "
        evalgate: 1
        suite: t
        mcp_servers:
          fx: {command: [<python>, fixture_server.py]}
        tasks:
          - id: refused
            level: execution
            call: {server: fx, tool: refuse, arguments: {reason: quota}}
            grade: [{type: json, path: result, equals: 1}]
          - id: slow
            level: execution
            timeout: 1s
            call: {server: fx, tool: slow, arguments: {seconds: 5}}
            grade: [{type: contains, value: done}]
          - id: crash
            level: execution
            call: {server: fx, tool: crash}
            grade: [{type: contains, value: x}]
          - id: after-crash
            level: execution
            call: {server: fx, tool: add, arguments: {a: 1, b: 1}}
            grade: [{type: json, path: structuredContent.result, equals: 2}]
        ",
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
    let yaml = mcp_suite(
        "
        evalgate: 1
        suite: t
        mcp_servers:
          everything: {command: [<everything>, stdio]}
        tasks:
          - id: t
            level: execution
            call: {server: everything, tool: get_sum, arguments: {a: 1, b: 2}}
            grade: [{type: contains, value: '3'}]
        ",
    );
    let run = Test::new().write("evalgate.yaml", &yaml).args(&["check"]).run();
    run.expect_code(3).expect_stderr(
        r"
        preflight failed for evalgate.yaml: 1 missing
          - MCP tool `everything.get_sum`: server `everything` has no such tool (task `t`); did you mean `get-sum`?
        nothing ran
        ",
    );
}

#[test]
fn a_destructive_tool_is_refused_without_allow_side_effects() {
    let yaml = mcp_suite(
        "
        evalgate: 1
        suite: t
        mcp_servers:
          fx: {command: [<python>, fixture_server.py]}
        tasks:
          - id: wipe
            level: execution
            call: {server: fx, tool: delete_all}
            grade: [{type: contains, value: deleted}]
        ",
    );
    let refused = fixture(Test::new()).write("evalgate.yaml", &yaml).args(&["run"]).run();
    refused.expect_code(3);
    assert!(refused.stderr_has("is annotated destructiveHint: calling it is refused unless `mcp_servers.fx.allow_side_effects: true` (task `wipe`)"), "{}", refused.stderr);
    let allowed = fixture(Test::new())
        .write("evalgate.yaml", &yaml.replace("fixture_server.py]}", "fixture_server.py], allow_side_effects: true}"))
        .args(&["run"])
        .run();
    allowed.expect_code(0);
}

#[test]
fn mcp_suite_mistakes_are_load_errors() {
    let yaml = unindent(
        "
        evalgate: 1
        suite: t
        mcp_servers:
          a: {command: [x], url: 'http://127.0.0.1:1/mcp'}
        tasks:
          - id: t
            level: execution
            call: {server: ab, tool: x}
            grade: [{type: contains, value: x}]
          - id: u
            level: execution
            prompt: x
            grade: [{type: contains, value: x}]
        ",
    );
    let run = Test::new().write("evalgate.yaml", &yaml).args(&["check"]).run();
    run.expect_code(2).expect_stderr(
        r"
        error: evalgate.yaml:4:6: mcp_servers.a: an MCP server has either `command` (stdio) or `url` (streamable HTTP)
          |
        4 |   a: {command: [x], url: 'http://127.0.0.1:1/mcp'}
          |      ^

        error: evalgate.yaml:8:20: tasks[0].call.server: unknown MCP server `ab`
          |
        8 |     call: {server: ab, tool: x}
          |                    ^
          help: did you mean `a`?

        error: evalgate.yaml:10:5: tasks[1]: an execution-level task needs `call: {server, tool, arguments}`
           |
        10 |   - id: u
           |     ^

        3 errors in the suite; nothing ran
        ",
    );
    // A level is read as one of the levels, before the suite is validated.
    let run = Test::new()
        .write("evalgate.yaml", &yaml.replace("level: execution\n    prompt", "level: executoin\n    prompt"))
        .args(&["check"])
        .run();
    run.expect_code(2).expect_stderr(
        r"
        error: evalgate.yaml:11:12: tasks[1].level: unknown level `executoin`
           |
        11 |     level: executoin
           |            ^
          help: did you mean `execution`?

        error: evalgate.yaml:4:6: mcp_servers.a: an MCP server has either `command` (stdio) or `url` (streamable HTTP)
          |
        4 |   a: {command: [x], url: 'http://127.0.0.1:1/mcp'}
          |      ^

        error: evalgate.yaml:8:20: tasks[0].call.server: unknown MCP server `ab`
          |
        8 |     call: {server: ab, tool: x}
          |                    ^
          help: did you mean `a`?

        3 errors in the suite; nothing ran
        ",
    );
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
    let yaml = mcp_suite(
        "
        evalgate: 1
        suite: t
        mcp_servers:
          everything: {command: [<everything>, stdio]}
        agents:
          cli: {command: [<python>, agent.py, '{mcp_config}'], mcp: [everything]}
        tasks:
          - id: t
            prompt: add
            grade:
              - {type: contains, value: 'is 42'}
              - {type: tool_sequence, order: exact, tools: [{tool: everything.get-sum, arguments: {a: 20}}, echo]}
        ",
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
    let yaml = mcp_suite(
        "
        evalgate: 1
        suite: t
        mcp_servers:
          everything: {command: [<everything>, stdio]}
        agents:
          cli: {command: [echo, done], mcp: [everything]}
        tasks:
          - id: t
            prompt: add
            grade:
              - {type: tool_not_called, tool: get-sum}
              - {type: tool_calls, max: 0}
        ",
    );
    let run = Test::new().write("evalgate.yaml", &yaml).args(&["run"]).run();
    run.expect_code(0);
    let graders = &run.task("t")["trials"][0]["graders"];
    assert_eq!(graders[0]["reason"], "get-sum was not called");
    assert_eq!(graders[1]["reason"], "0 tool calls");
}

#[test]
fn mcp_steps_and_graders_call_tools_and_capture_outputs() {
    let yaml = mcp_suite(
        "
        evalgate: 1
        suite: t
        mcp_servers:
          fx: {command: [<python>, fixture_server.py]}
        agents: {bot: {command: [sh, -c, 'echo total $0', '{prompt}']}}
        tasks:
          - id: t
            setup:
              - id: sum
                mcp: {server: fx, tool: add, arguments: {a: 40, b: 2}, expect: {output: {contains: '42'}}}
                outputs: {value: '{response.json.structuredContent.result}'}
              - mcp: {server: fx, tool: refuse, arguments: {reason: expected}, expect: {is_error: true}}
            prompt: '{steps.sum.outputs.value}'
            grade:
              - {type: contains, value: total 42}
              - {type: mcp, server: fx, tool: add, arguments: {a: '{steps.sum.outputs.value}', b: 1}, expect: {output: {json: {path: result, equals: 43}}}}
              - {type: mcp, server: fx, tool: add, arguments: {a: 1, b: 1}, expect: {output: {contains: '3'}}}
        ",
    );
    let run = fixture(Test::new()).write("evalgate.yaml", &yaml).args(&["run"]).run();
    let task = run.task("t");
    let graders = &task["trials"][0]["graders"];
    assert_eq!(graders[0]["status"], "passed", "{task}");
    assert_eq!(graders[1]["status"], "passed", "{task}");
    assert_eq!(graders[2]["status"], "failed");
    assert!(graders[2]["reason"].as_str().unwrap().ends_with("the result does not contain \"3\""), "{}", graders[2]);

    let typo = mcp_suite(
        "
        evalgate: 1
        suite: t
        mcp_servers:
          fx: {command: [<python>, fixture_server.py]}
        agents: {bot: {command: [echo]}}
        tasks:
          - id: t
            prompt: x
            grade: [{type: mcp, server: fx, tool: ad}]
        ",
    );
    let run = fixture(Test::new()).write("evalgate.yaml", &typo).args(&["check"]).run();
    run.expect_code(3).expect_stderr(
        r"
        preflight failed for evalgate.yaml: 1 missing
          - MCP tool `fx.ad`: server `fx` has no such tool (task `t`); did you mean `add`?
        nothing ran
        ",
    );
}

/// The tools graders name are found in the live `tools/list` before anything runs: a
/// misspelt `tool_not_called: fx.delete_al` passed every run. Named as `server.tool`, with
/// `server:`, or bare for a model agent (whose only tools are its servers'). Naming a
/// destructive tool to check it was not called is not refused.
#[test]
fn tools_named_by_graders_must_exist_on_their_server() {
    let yaml = mcp_suite(
        "
        evalgate: 1
        suite: t
        mcp_servers:
          fx: {command: [<python>, fixture_server.py]}
        agents:
          bot: {command: [echo]}
          model: {provider: openai, model: gpt-4o-mini, api_key_env: EVALGATE_TEST_KEY, mcp: [fx]}
        tasks:
          - id: t
            agent: bot
            prompt: x
            grade:
              - {type: tool_not_called, tool: fx.delete_al}
              - {type: tool_not_called, tool: fx.delete_all}
              - {type: tool_called, server: fx, tool: ad}
              - {type: tool_sequence, tools: [fx.add, {tool: fx.refuse}, fx.slo]}
              - {type: tool_calls, tools: [add], max: 2}
          - id: m
            agent: model
            prompt: x
            grade:
              - {type: tool_called, tool: ad}
              - {type: tool_called, tool: add}
        ",
    );
    let run = fixture(Test::new()).write("evalgate.yaml", &yaml).env("EVALGATE_TEST_KEY", "k").args(&["check"]).run();
    run.expect_code(3).expect_stderr(
        r"
        warning: [secret:EVALGATE_TEST_KEY] is shorter than 6 characters: reports are not redacted of it (too many false hits)
        preflight failed for evalgate.yaml: 4 missing
          - MCP tool `fx.delete_al`: server `fx` has no such tool (task `t`); did you mean `delete_all`?
          - MCP tool `fx.ad`: server `fx` has no such tool (task `t`); did you mean `add`?
          - MCP tool `fx.slo`: server `fx` has no such tool (task `t`); did you mean `slow`?
          - MCP tool `ad`: no server of its agent (`fx`) has such a tool (task `m`); did you mean `add`?
        nothing ran
        ",
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
    reply = b""
    try:
        s.sendall(head)
        # The status line, however the reply is split into reads (a busy machine splits it).
        while b"\r\n" not in reply:
            chunk = s.recv(200)
            if not chunk:
                break
            reply += chunk
    except OSError:  # refused before all was sent: the reply may be lost to the reset
        pass
    s.close()
    return reply.decode(errors="replace").split("\r\n")[0] or "closed"

path = urllib.parse.urlparse(url).path.encode()
host = b"Host: 127.0.0.1:%d\r\n" % port
call = b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "get-sum", "arguments": {"a": 1, "b": 2}}}'
def post(target, headers):
    # A connection that closed before any status line (seen once in 20 runs on a loaded
    # machine) is asked again: the status, when there is one, is what is checked.
    for _ in range(3):
        reply = raw(b"POST " + target + b" HTTP/1.1\r\n" + headers + b"Content-Length: %d\r\n\r\n" % len(call) + call)
        if reply != "closed":
            break
    return reply
json_type = b"Content-Type: application/json\r\n"
# Only the agent the proxy was started for, which knows its path, reaches a tool.
print("no token:", post(b"/mcp", host + json_type))
# The token with its last character changed (to `0`, or to `1` when it is `0`: a token
# ending in `0` made this probe the right token, the cause of this test's rare failures).
print("wrong token:", post(path[:-1] + (b"1" if path.endswith(b"0") else b"0"), host + json_type))
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
    let yaml = mcp_suite(
        r"
        evalgate: 1
        suite: t
        mcp_servers:
          everything: {command: [<everything>, stdio]}
        agents:
          cli: {command: [<python>, agent.py], mcp: [everything], timeout: 20s}
        tasks:
          - id: t
            prompt: add
            grade:
              - {type: contains, value: 'huge body: HTTP/1.1 413'}
              - {type: regex, pattern: 'no token: HTTP/1.1 404 .*\nwrong token: HTTP/1.1 404 .*\nrebound host: HTTP/1.1 403 .*\nbrowser origin: HTTP/1.1 403 .*\nsimple request: HTTP/1.1 415 '}
              - {type: regex, pattern: 'huge head: (HTTP/1.1 431|closed)'}
              - {type: contains, value: 'is 3'}
        ",
    );
    let run = Test::new().write("agent.py", HOSTILE_MCP_AGENT).write("evalgate.yaml", &yaml).args(&["run"]).run();
    // The graders' reasons cut the agent's output: on a failure, show all of it.
    let output = run.task("t")["trials"][0]["output"].clone();
    assert_eq!(run.code, 0, "the agent's whole output: {output}\nstderr: {}", run.stderr);
}

/// `{vars.X}` in a stdio server's `command` is rendered as in an agent's command (a `--var`
/// overrides it), `{env.X}` when the server starts; a value is never code: not the program,
/// nor the script an interpreter runs, each refused at its line as in an agent's command.
#[test]
fn a_servers_command_renders_its_variables_as_an_agents_does() {
    let yaml = |script: &str| {
        mcp_suite(
            "
            evalgate: 1
            suite: t
            vars: {script: '<fixtures>/fixture_server.py', release: '--release=1'}
            mcp_servers:
              fx: {command: [<python>, <script>, '{vars.release}', '{env.FIXTURE_FLAG}']}
            tasks:
              - id: add
                level: execution
                call: {server: fx, tool: add, arguments: {a: 1, b: 1}}
                grade: [{type: contains, value: '3'}]
            ",
        )
        .replace("<script>", script)
    };
    let run = |yaml: &str, args: &[&str]| {
        Test::new().write("evalgate.yaml", yaml).env("FIXTURE_FLAG", "--quiet").args(args).run()
    };
    let written = yaml(&mcp_suite("'<fixtures>/fixture_server.py'"));
    // The next release's `add` is off by one: 1 + 1 is 3 only when `{vars.release}` reached it.
    run(&written, &["run", "--var", "release=--release=2"]).expect_code(0);
    let first = run(&written, &["run"]);
    first.expect_code(1);
    assert_eq!(first.task("add")["status"], "failed", "{}", first.stderr);

    let code = run(&yaml("'{vars.script}'"), &["check"]);
    code.expect_code(2);
    code.expect_stderr_contains(&["evalgate.yaml:5:", "mcp_servers.fx.command[1]: `{vars.script}` would be code here"]);
    let program = yaml("x").replace(&python(), "'{vars.script}'");
    let refused = run(&program, &["check"]);
    refused.expect_code(2);
    refused
        .expect_stderr_contains(&["evalgate.yaml:5:", "mcp_servers.fx.command[0]: `{vars.script}` would be code here"]);
}

/// `mcp tools` and `mcp snapshot` list a server's tools before the suite has a task; `run`
/// still refuses a suite with none, at `tasks`.
#[test]
fn a_suite_with_no_tasks_lists_its_servers_tools_and_does_not_run() {
    let yaml = mcp_suite(
        "
        evalgate: 1
        suite: t
        mcp_servers:
          fx: {command: [<python>, '<fixtures>/fixture_server.py']}
        ",
    );
    let tools = Test::new().write("evalgate.yaml", &yaml).args(&["mcp", "tools"]).run();
    tools.expect_code(0);
    assert!(tools.stdout.contains("\n  add\n"), "{}", tools.stdout);
    let snapshot = Test::new().write("evalgate.yaml", &yaml).args(&["mcp", "snapshot"]).run();
    snapshot.expect_code(0);
    let lock: serde_json::Value = serde_json::from_str(&snapshot.stdout).unwrap();
    assert!(lock["servers"]["fx"]["tools"].get("add").is_some(), "{}", snapshot.stdout);
    let run = Test::new().write("evalgate.yaml", &yaml).args(&["run"]).run();
    run.expect_code(2);
    run.expect_messages("error: evalgate.yaml: tasks: the suite has no tasks\n1 error in the suite; nothing ran\n");
}

/// A live `evals/list` import is a stage after the suite is read: `mcp tools`, which needs
/// only the servers, lists the tools without asking the server for its evals (this one
/// would answer after 120 s).
#[test]
fn mcp_tools_does_not_list_a_live_imports_evals() {
    let yaml = mcp_suite(
        "
        evalgate: 1
        suite: t
        mcp_servers:
          evals: {command: [python3, '<fixtures>/evals_server.py', --slow-evals]}
        agents:
          bot: {provider: openai, model: m, mcp: [evals]}
        imports:
          - {format: mcp-evals, server: evals, agent: bot}
        ",
    );
    let started = std::time::Instant::now();
    let tools = Test::new()
        .write("evalgate.yaml", &yaml)
        .env("EVALS_SERVER_LOG", "requests.jsonl")
        .args(&["mcp", "tools"])
        .run();
    tools.expect_code(0);
    assert!(tools.stdout.contains("\n  add\n"), "{}", tools.stdout);
    assert!(started.elapsed() < std::time::Duration::from_secs(60));
    let log = std::fs::read_to_string(tools.dir.join("requests.jsonl")).unwrap_or_default();
    assert!(log.contains("tools/list") && !log.contains("evals/list"), "{log}");
}
