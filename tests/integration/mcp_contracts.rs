//! Every `tools/call` result of a tool that declares an `outputSchema` is held to it: at the
//! execution level, in steps and for an agent's calls through the proxy. The server is a
//! fixture that breaks its own schema on request (tests/fixtures/mcp/lying_server.py).

use crate::common::Test;

fn server_line() -> String {
    let server = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp/lying_server.py");
    format!("mcp_servers:\n  shop: {{command: [python3, '{}']}}\n", server.display())
}

/// A task calling `tool`, whose grader passes on what the tool returns (`expect`).
fn execution(id: &str, tool: &str, arguments: &str, expect: &str) -> String {
    format!(
        "  - id: {id}\n    level: execution\n    call: {{server: shop, tool: {tool}, arguments: {arguments}}}\n    grade: [{{type: contains, value: '{expect}'}}]\n"
    )
}

#[test]
fn a_result_that_breaks_its_output_schema_fails_the_call_with_the_schema_path() {
    let tasks = [
        execution("honest", "quote", "{lie: false}", "price"),
        execution("lying", "quote", "{lie: true}", "price"),
        execution("bare", "bare", "{}", "price"),
        execution("plain", "plain", "{}", "x"),
        // A setup step's call is held to the same contract.
        "  - id: step\n    setup: [{mcp: {server: shop, tool: quote, arguments: {lie: true}}}]\n    level: execution\n    call: {server: shop, tool: plain}\n    grade: [{type: contains, value: x}]\n".into(),
    ];
    let yaml = format!("evalgate: 1\nsuite: t\n{}tasks:\n{}", server_line(), tasks.concat());
    let run = Test::new().write("evalgate.yaml", &yaml).args(&["run"]).run();
    run.expect_code(1);
    let status = |id: &str| run.task(id)["status"].as_str().unwrap().to_owned();
    assert_eq!(status("honest"), "passed");
    assert_eq!(status("plain"), "passed");
    assert_eq!(status("lying"), "failed");
    assert_eq!(
        run.task("lying")["trials"][0]["reason"],
        r#"`shop.quote` broke its outputSchema: structuredContent.items[0].price: "2.50" is not of type "number""#
    );
    assert_eq!(run.task("lying")["trials"][0]["tool_calls"][0]["violation"], run.task("lying")["trials"][0]["reason"]);
    assert_eq!(status("bare"), "failed");
    let bare = run.task("bare")["trials"][0]["reason"].as_str().unwrap().to_owned();
    assert!(bare.ends_with("declares an outputSchema but its result has no structuredContent"), "{bare}");
    assert_ne!(status("step"), "passed");
    let shown = format!("{}{}", run.stdout, run.stderr);
    assert!(shown.contains("`shop.quote` broke its outputSchema: structuredContent.items[0].price"), "{shown}");
}

/// A command agent calling the tool through the recording proxy: the agent gets the result
/// as the server sent it, and the trial fails on the broken contract whatever graders say.
const AGENT: &str = r#"#!/usr/bin/env python3
import json, os, sys, urllib.request

url = json.load(open(os.environ["EVALGATE_MCP_CONFIG"]))["mcpServers"]["shop"]["url"]

def rpc(method, params, id=1):
    body = json.dumps({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).encode()
    req = urllib.request.Request(url, data=body, headers={"content-type": "application/json", "accept": "application/json, text/event-stream"})
    return json.load(urllib.request.urlopen(req))

rpc("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "agent", "version": "1"}})
tools = {t["name"]: t for t in rpc("tools/list", {}, 2)["result"]["tools"]}
assert "outputSchema" in tools["quote"], tools["quote"]
lie = sys.argv[1] == "lie"
result = rpc("tools/call", {"name": "quote", "arguments": {"lie": lie}}, 3)["result"]
print("price", result["structuredContent"]["items"][0]["price"])
"#;

#[test]
fn an_agent_s_call_through_the_proxy_is_held_to_the_contract() {
    let yaml = format!(
        "evalgate: 1\nsuite: t\n{}agents:\n  cli: {{command: [python3, agent.py, '{{task.id}}'], mcp: [shop]}}\ntasks:\n  - id: lie\n    prompt: quote\n    grade: [{{type: contains, value: price}}]\n  - id: truth\n    prompt: quote\n    grade: [{{type: contains, value: price}}]\n",
        server_line(),
    );
    let run = Test::new().write("agent.py", AGENT).write("evalgate.yaml", &yaml).args(&["run"]).run();
    run.expect_code(1);
    assert_eq!(run.task("truth")["status"], "passed");
    assert_eq!(run.task("lie")["status"], "failed");
    let trial = &run.task("lie")["trials"][0];
    assert!(trial["reason"].as_str().unwrap().contains("structuredContent.items[0].price"), "{trial}");
    assert_eq!(trial["graders"][0]["status"], "passed", "the grader alone would have passed it");
}
