//! `allow_side_effects` on every path a tool call can take — a model agent's loop, a command
//! agent through the recording proxy, steps and graders — against the real filesystem
//! server, whose `write_file`, `edit_file` and `move_file` are annotated `destructiveHint`.

use serde_json::{Value, json};

use crate::common::server::{Server, answer};
use crate::common::{Test, unindent};
use crate::mcp::mcp_suite;
use crate::scenario::{body, tool_results};

const KEY: &str = "sk-test-key";
const ALLOW: &str = ", allow_side_effects: true";
const REFUSAL: &str = "not executed: `files.write_file` is annotated destructiveHint: calling it is refused unless `mcp_servers.files.allow_side_effects: true`";

/// A test directory holding `notes.txt` ("original"), and that file's absolute path.
fn with_notes() -> (Test, String) {
    let test = Test::new().write("notes.txt", "original");
    let notes = test.path().join("notes.txt").display().to_string();
    (test, notes)
}

/// The filesystem server on the test's directory (`extra` added to its entry), then `rest`,
/// indented blocks in which `<dir>` is the test's directory and `<notes>` its notes.txt.
fn files_suite(test: &Test, extra: &str, rest: &[&str]) -> String {
    let head = "
        evalgate: 1
        suite: t
        mcp_servers:
          files: {command: [<filesystem>, '<dir>']<extra>}
        ";
    let dir = test.path().display().to_string();
    let yaml = rest.iter().fold(mcp_suite(head), |yaml, part| yaml + &mcp_suite(part));
    yaml.replace("<extra>", extra).replace("<notes>", &format!("{dir}/notes.txt")).replace("<dir>", &dir)
}

/// A model agent `bot` on the files server, answered by `model`.
fn model_agent(model: &Server) -> String {
    let agents = "
        agents:
          bot: {provider: openai, model: gpt-4o-mini, base_url: '<url>/v1', api_key_env: EVALGATE_TEST_KEY, mcp: [files], max_turns: 3}
        ";
    unindent(agents).replace("<url>", &model.url())
}

/// A stand-in model that asks to overwrite `notes` with "overwritten", then answers with
/// the tool result it was given.
fn overwriting_model(notes: &str) -> Server {
    let arguments = json!({"path": notes, "content": "overwritten"}).to_string();
    Server::start(move |r| match tool_results(&body(r)).first() {
        None => (200, answer(None, &[("files__write_file", &arguments)])),
        Some(result) => (200, answer(Some(&format!("told: {result}")), &[])),
    })
}

/// The tool names offered in a captured chat request.
fn offered(request: &Value) -> Vec<String> {
    request["tools"].as_array().unwrap().iter().map(|t| t["function"]["name"].as_str().unwrap().to_owned()).collect()
}

#[test]
fn a_scenario_never_runs_a_destructive_tool_unless_its_server_allows_side_effects() {
    for extra in ["", ALLOW] {
        let (test, notes) = with_notes();
        let model = overwriting_model(&notes);
        let tasks = "
            tasks:
              - id: save
                level: scenario
                prompt: save my notes
                grade: [{type: tool_called, tool: files.write_file}]
            ";
        let yaml = files_suite(&test, extra, &[&model_agent(&model), tasks]);
        let run = test.write("evalgate.yaml", &yaml).env("EVALGATE_TEST_KEY", KEY).args(&["run", "-j", "1"]).run();
        run.expect_code(0);
        let requests: Vec<Value> = model.received().iter().map(body).collect();
        assert_eq!(requests.len(), 2, "{requests:?}");
        let tools = offered(&requests[0]);
        assert!(tools.contains(&"files__read_text_file".to_owned()), "{tools:?}");
        let call = &run.task("save")["trials"][0]["tool_calls"][0];
        assert_eq!((&call["server"], &call["name"]), (&json!("files"), &json!("write_file")), "{call}");
        if extra.is_empty() {
            assert_eq!(run.read("notes.txt"), "original");
            for withheld in ["files__write_file", "files__edit_file", "files__move_file"] {
                assert!(!tools.contains(&withheld.to_owned()), "{withheld} offered: {tools:?}");
            }
            // The model named it anyway: it is told why, and the trace shows the refusal.
            assert_eq!(tool_results(&requests[1]), [REFUSAL]);
            assert_eq!(call["result"]["isError"], true, "{call}");
            assert_eq!(call["result"]["content"][0]["text"], REFUSAL);
            assert_eq!(run.task("save")["trials"][0]["output"], format!("told: {REFUSAL}"));
        } else {
            assert_eq!(run.read("notes.txt"), "overwritten");
            assert!(tools.contains(&"files__write_file".to_owned()), "{tools:?}");
            assert!(call["result"].get("isError").is_none_or(|e| e == false), "{call}");
        }
    }
}

#[test]
fn a_destructive_tool_is_offered_where_no_call_reaches_the_server() {
    let (test, notes) = with_notes();
    let model = overwriting_model(&notes);
    // The invocation level executes nothing; a fixture without `arguments` answers every
    // call; with `fixtures_only`, a call no fixture matches is an error.
    let tasks = "
        tasks:
          - id: choose
            level: invocation
            prompt: choose
            grade: [{type: tool_called, tool: files.write_file}]
          - id: canned
            level: scenario
            prompt: canned
            fixtures:
              tool_responses: [{tool: files.write_file, response: saved}]
            grade: [{type: contains, value: 'told: saved'}]
          - id: strict
            level: scenario
            prompt: strict
            fixtures_only: true
            fixtures:
              tool_responses: [{tool: files.write_file, arguments: {content: other}, response: saved}]
            grade: [{type: contains, value: saved}]
        ";
    let yaml = files_suite(&test, "", &[&model_agent(&model), tasks]);
    let run = test.write("evalgate.yaml", &yaml).env("EVALGATE_TEST_KEY", KEY).args(&["run", "-j", "1"]).run();
    run.expect_code(1);
    let requests = model.received();
    assert_eq!(requests.len(), 4);
    for request in requests.iter().map(body) {
        assert!(offered(&request).contains(&"files__write_file".to_owned()), "{request}");
    }
    assert_eq!(run.task("choose")["status"], "passed");
    assert!(run.task("choose")["trials"][0]["tool_calls"][0].get("result").is_none());
    assert_eq!(run.task("canned")["status"], "passed", "{}", run.task("canned"));
    let strict = run.task("strict");
    assert!(strict["reason"].as_str().unwrap().contains("no fixture matches the call of files.write_file"), "{strict}");
    assert_eq!(run.read("notes.txt"), "original");
}

/// A command agent that lists the proxy's tools, then calls `write_file` on notes.txt anyway.
const PROXY_AGENT: &str = r#"#!/usr/bin/env python3
import json, os, sys, urllib.request

url = json.load(open(sys.argv[1]))["mcpServers"]["files"]["url"]

def rpc(method, params, id=1):
    body = json.dumps({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).encode()
    req = urllib.request.Request(url, data=body, headers={"content-type": "application/json", "accept": "application/json, text/event-stream"})
    return json.load(urllib.request.urlopen(req))

rpc("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test-agent", "version": "1"}})
tools = [t["name"] for t in rpc("tools/list", {}, 2)["result"]["tools"]]
print("listed write_file:", "write_file" in tools, "read_text_file:", "read_text_file" in tools)
args = {"path": os.path.abspath("notes.txt"), "content": "overwritten"}
print(rpc("tools/call", {"name": "write_file", "arguments": args}, 3)["result"]["content"][0]["text"])
"#;

#[test]
fn a_command_agent_through_the_proxy_is_refused_the_same_way() {
    for extra in ["", ALLOW] {
        let (test, _) = with_notes();
        let agents = "
            agents:
              cli: {command: [<python>, agent.py, '{mcp_config}'], mcp: [files]}
            ";
        let tasks = "
            tasks:
              - id: t
                prompt: save
                grade: [{type: tool_called, tool: files.write_file}]
            ";
        let yaml = files_suite(&test, extra, &[agents, tasks]);
        let run = test.write("agent.py", PROXY_AGENT).write("evalgate.yaml", &yaml).args(&["run"]).run();
        run.expect_code(0);
        let trial = &run.task("t")["trials"][0];
        let call = &trial["tool_calls"][0];
        assert_eq!(call["name"], "write_file", "{trial}");
        if extra.is_empty() {
            assert_eq!(trial["output"], format!("listed write_file: False read_text_file: True\n{REFUSAL}\n"));
            assert_eq!(call["result"]["isError"], true, "{call}");
            assert_eq!(call["result"]["content"][0]["text"], REFUSAL);
            assert_eq!(run.read("notes.txt"), "original");
        } else {
            assert!(trial["output"].as_str().unwrap().starts_with("listed write_file: True"), "{trial}");
            assert_eq!(run.read("notes.txt"), "overwritten");
        }
    }
}

#[test]
fn steps_and_graders_that_call_a_destructive_tool_are_preflight_errors() {
    let (test, _) = with_notes();
    let rest = "
        agents: {bot: {command: [echo, hi]}}
        hooks:
          before_all:
            - mcp: {server: files, tool: write_file, arguments: {path: '<notes>', content: overwritten}}
        tasks:
          - id: t
            prompt: x
            setup:
              - mcp: {server: files, tool: create_directory, arguments: {path: '<dir>/made'}}
            cleanup:
              - mcp: {server: files, tool: move_file, arguments: {source: '<notes>', destination: '<dir>/moved.txt'}}
            grade:
              - {type: mcp, server: files, tool: edit_file, arguments: {path: '<notes>', edits: [{oldText: original, newText: edited}]}}
              - {type: steps, steps: [{mcp: {server: files, tool: write_file, arguments: {path: '<dir>/other.txt', content: verified}}}]}
        ";
    let yaml = files_suite(&test, "", &[rest]);
    let run = test.write("evalgate.yaml", &yaml).args(&["run"]).run();
    run.expect_code(3);
    let unless =
        "is annotated destructiveHint: calling it is refused unless `mcp_servers.files.allow_side_effects: true`";
    for expected in [
        format!("- MCP tool `files.write_file`: {unless} (hooks)"),
        format!("- MCP tool `files.move_file`: {unless} (task `t`)"),
        format!("- MCP tool `files.edit_file`: {unless} (task `t`)"),
        format!("- MCP tool `files.write_file`: {unless} (task `t`)"),
    ] {
        assert!(run.stderr_has(&expected), "missing {expected:?} in:\n{}", run.stderr);
    }
    // The non-destructive setup step is not reported, and nothing ran.
    assert!(run.stderr_lacks("create_directory"), "{}", run.stderr);
    assert_eq!(run.read("notes.txt"), "original");
    assert!(!run.dir.join("made").exists());

    // Allowed, they run: the hook overwrites, the graders edit and write, cleanup moves.
    let (test, _) = with_notes();
    let yaml = files_suite(&test, ALLOW, &[&rest.replace("oldText: original", "oldText: overwritten")]);
    let run = test.write("evalgate.yaml", &yaml).args(&["run"]).run();
    run.expect_code(0);
    assert_eq!(run.read("moved.txt"), "edited");
    assert_eq!(run.read("other.txt"), "verified");
    assert!(run.dir.join("made").is_dir());
}
