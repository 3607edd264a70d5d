//! `allow_side_effects` on every path a tool call can take — a model agent's loop, a command
//! agent through the recording proxy, steps and graders — against the real filesystem
//! server, whose `write_file`, `edit_file` and `move_file` are annotated `destructiveHint`.

use serde_json::{Value, json};

use crate::common::Test;
use crate::common::server::{Server, answer};
use crate::mcp::{bin, python};
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

/// The filesystem server on the test's directory (`extra` added to its entry), then `rest`.
fn files_suite(test: &Test, extra: &str, rest: &str) -> String {
    format!(
        "evalgate: 1\nsuite: t\nmcp_servers:\n  files: {{command: [{}, '{}']{extra}}}\n{rest}",
        bin("mcp-server-filesystem"),
        test.path().display()
    )
}

/// A model agent `bot` on the files server, answered by `model`.
fn model_agent(model: &Server) -> String {
    format!(
        "agents:\n  bot: {{provider: openai, model: gpt-4o-mini, base_url: '{}/v1', api_key_env: EVALGATE_TEST_KEY, mcp: [files], max_turns: 3}}\n",
        model.url()
    )
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
        let tasks = "tasks:\n  - id: save\n    level: scenario\n    prompt: save my notes\n    grade: [{type: tool_called, tool: files.write_file}]\n";
        let yaml = files_suite(&test, extra, &format!("{}{tasks}", model_agent(&model)));
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
    let tasks = "tasks:\n  - id: choose\n    level: invocation\n    prompt: choose\n    grade: [{type: tool_called, tool: files.write_file}]\n  - id: canned\n    level: scenario\n    prompt: canned\n    fixtures:\n      tool_responses: [{tool: files.write_file, response: saved}]\n    grade: [{type: contains, value: 'told: saved'}]\n  - id: strict\n    level: scenario\n    prompt: strict\n    fixtures_only: true\n    fixtures:\n      tool_responses: [{tool: files.write_file, arguments: {content: other}, response: saved}]\n    grade: [{type: contains, value: saved}]\n";
    let yaml = files_suite(&test, "", &format!("{}{tasks}", model_agent(&model)));
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
        let agents = format!("agents:\n  cli: {{command: [{}, agent.py, '{{mcp_config}}'], mcp: [files]}}\n", python());
        let tasks = "tasks:\n  - id: t\n    prompt: save\n    grade: [{type: tool_called, tool: files.write_file}]\n";
        let yaml = files_suite(&test, extra, &format!("{agents}{tasks}"));
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
    let (test, notes) = with_notes();
    let write = format!("{{server: files, tool: write_file, arguments: {{path: '{notes}', content: overwritten}}}}");
    let rest = format!(
        "agents: {{bot: {{command: [echo, hi]}}}}\nhooks:\n  before_all:\n    - mcp: {write}\ntasks:\n  - id: t\n    prompt: x\n    setup:\n      - mcp: {{server: files, tool: create_directory, arguments: {{path: '{dir}/made'}}}}\n    cleanup:\n      - mcp: {{server: files, tool: move_file, arguments: {{source: '{notes}', destination: '{dir}/moved.txt'}}}}\n    grade:\n      - {{type: mcp, server: files, tool: edit_file, arguments: {{path: '{notes}', edits: [{{oldText: original, newText: edited}}]}}}}\n      - {{type: steps, steps: [{{mcp: {{server: files, tool: write_file, arguments: {{path: '{dir}/other.txt', content: verified}}}}}}]}}\n",
        dir = test.path().display()
    );
    let yaml = files_suite(&test, "", &rest);
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
        assert!(run.stderr.contains(&expected), "missing {expected:?} in:\n{}", run.stderr);
    }
    // The non-destructive setup step is not reported, and nothing ran.
    assert!(!run.stderr.contains("create_directory"), "{}", run.stderr);
    assert_eq!(run.read("notes.txt"), "original");
    assert!(!run.dir.join("made").exists());

    // Allowed, they run: the hook overwrites, the graders edit and write, cleanup moves.
    let (test, _) = with_notes();
    let yaml = files_suite(&test, ALLOW, &rest.replace("oldText: original", "oldText: overwritten"));
    let yaml = yaml.replace(&run.dir.display().to_string(), &test.path().display().to_string());
    let run = test.write("evalgate.yaml", &yaml).args(&["run"]).run();
    run.expect_code(0);
    assert_eq!(run.read("moved.txt"), "edited");
    assert_eq!(run.read("other.txt"), "verified");
    assert!(run.dir.join("made").is_dir());
}
