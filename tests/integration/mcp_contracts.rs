//! Every `tools/call` result of a tool that declares an `outputSchema` is held to it: at the
//! execution level, in steps and for an agent's calls through the proxy. The server is a
//! fixture that breaks its own schema on request (tests/fixtures/mcp/lying_server.py).

use crate::common::{Test, unindent};
use crate::mcp::mcp_suite;

/// A suite with the lying shop server (`extra` added to its entry), then `rest`, both indented blocks.
fn shop_suite(extra: &str, rest: &str) -> String {
    let head = "
        evalgate: 1
        suite: t
        mcp_servers:
          shop: {command: [python3, '<fixtures>/lying_server.py']<extra>}
        ";
    (mcp_suite(head) + &unindent(rest)).replace("<extra>", extra)
}

/// One task calling the schema-less tool `plain`, passing on what it returns.
const PLAIN_TASK: &str = "
    tasks:
      - id: honest
        level: execution
        call: {server: shop, tool: plain, arguments: {}}
        grade: [{type: contains, value: 'x'}]
    ";

#[test]
fn a_result_that_breaks_its_output_schema_fails_the_call_with_the_schema_path() {
    let tasks = "
        tasks:
          - id: honest
            level: execution
            call: {server: shop, tool: quote, arguments: {lie: false}}
            grade: [{type: contains, value: 'price'}]
          - id: lying
            level: execution
            call: {server: shop, tool: quote, arguments: {lie: true}}
            grade: [{type: contains, value: 'price'}]
          - id: bare
            level: execution
            call: {server: shop, tool: bare, arguments: {}}
            grade: [{type: contains, value: 'price'}]
          - id: plain
            level: execution
            call: {server: shop, tool: plain, arguments: {}}
            grade: [{type: contains, value: 'x'}]
          # A setup step's call is held to the same contract.
          - id: step
            setup: [{mcp: {server: shop, tool: quote, arguments: {lie: true}}}]
            level: execution
            call: {server: shop, tool: plain}
            grade: [{type: contains, value: x}]
        ";
    let yaml = shop_suite("", tasks);
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
    let rest = "
        agents:
          cli: {command: [python3, agent.py, '{task.id}'], mcp: [shop]}
        tasks:
          - id: lie
            prompt: quote
            grade: [{type: contains, value: price}]
          - id: truth
            prompt: quote
            grade: [{type: contains, value: price}]
        ";
    let yaml = shop_suite("", rest);
    let run = Test::new().write("agent.py", AGENT).write("evalgate.yaml", &yaml).args(&["run"]).run();
    run.expect_code(1);
    assert_eq!(run.task("truth")["status"], "passed");
    assert_eq!(run.task("lie")["status"], "failed");
    let trial = &run.task("lie")["trials"][0];
    assert!(trial["reason"].as_str().unwrap().contains("structuredContent.items[0].price"), "{trial}");
    assert_eq!(trial["graders"][0]["status"], "passed", "the grader alone would have passed it");
}

/// The shop server's surface, snapshotted, then drifted (`SURFACE=v2`): the run's gate, the
/// Markdown and `mcp diff` classify each change; `mcp snapshot` prints the same lock file.
#[test]
fn a_snapshot_gates_the_drift_of_a_servers_tool_surface() {
    let suite = |surface: &str, drift: &str| {
        shop_suite(", env: {SURFACE: <surface>}, snapshot: tools.lock.json<drift>", PLAIN_TASK)
            .replace("<surface>", surface)
            .replace("<drift>", drift)
    };
    let test = Test::new().write("evalgate.yaml", &suite("v1", ""));
    let dir = test.path().to_owned();
    let first = test.args(&["run", "--update-snapshot"]).run();
    first.expect_code(0);
    let lock = std::fs::read_to_string(dir.join("tools.lock.json")).unwrap();
    let parsed: serde_json::Value = serde_json::from_str(&lock).unwrap();
    assert_eq!(parsed["format"], "evalgate-tools/1");
    assert_eq!(
        parsed["servers"]["shop"]["tools"].as_object().unwrap().keys().collect::<Vec<_>>(),
        ["bare", "plain", "quote"]
    );

    let in_dir = |yaml: &str, args: &[&str]| {
        let mut test = Test::new().write("evalgate.yaml", yaml).write("tools.lock.json", &lock);
        test = test.args(args);
        test.run()
    };
    // The same surface: the same lock text, and no drift.
    let again = in_dir(&suite("v1", ""), &["mcp", "snapshot"]);
    again.expect_code(0);
    assert_eq!(again.stdout, lock);
    in_dir(&suite("v1", ""), &["run"]).expect_code(0);

    let drifted = in_dir(&suite("v2", ""), &["run"]);
    drifted.expect_code(1);
    let check = drifted.results()["verdict"]["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "tool surface of `shop` vs tools.lock.json")
        .cloned()
        .unwrap();
    assert_eq!(check["passed"], false);
    assert_eq!(check["actual"], "3 breaking, 2 review, 1 info: breaking: `bare`: tool removed");
    // Worst first: breaking, then review, then info; by tool within a class.
    let summary = drifted.read("evalgate-out/summary.md");
    let listed: Vec<&str> = summary.lines().filter(|l| l.starts_with("- ")).collect();
    assert_eq!(
        listed,
        [
            "- ❌ breaking: `bare`: tool removed",
            // What the server named is escaped: a hostile name cannot break the Markdown.
            "- ❌ breaking: `quote`: parameter \\`lie\\` is now required",
            "- ❌ breaking: `quote`: output field \\`items\\` removed",
            "- ⚠️ review: `extra`: tool added",
            "- ⚠️ review: `plain`: description changed: \"No schema.\" → \"No schema, changed.\"",
            "- ℹ️ info: `quote`: new output field \\`lines\\`",
        ],
        "{summary}"
    );

    // The HTML report lists the same changes in the same order, names as code, not backticks.
    let html = drifted.read("evalgate-out/report.html");
    let section = html.split("<section id=\"mcp-drift\">").nth(1).and_then(|s| s.split("</section>").next());
    let items: Vec<&str> = section.expect("a drift section").lines().filter(|l| l.starts_with("<li>")).collect();
    assert_eq!(
        items,
        [
            "<li><span class=\"badge fail\">breaking</span> <code>bare</code>: tool removed</li>",
            "<li><span class=\"badge fail\">breaking</span> <code>quote</code>: parameter <code>lie</code> is now required</li>",
            "<li><span class=\"badge fail\">breaking</span> <code>quote</code>: output field <code>items</code> removed</li>",
            "<li><span class=\"badge warn\">review</span> <code>extra</code>: tool added</li>",
            "<li><span class=\"badge warn\">review</span> <code>plain</code>: description changed: &quot;No schema.&quot; → &quot;No schema, changed.&quot;</li>",
            "<li><span class=\"badge info\">info</span> <code>quote</code>: new output field <code>lines</code></li>",
        ],
        "{html}"
    );
    assert!(
        html.contains("<td>3 breaking, 2 review, 1 info: breaking: <code>bare</code>: tool removed</td>"),
        "the gate table's cells show code, not backticks"
    );

    // The suite as `mcp diff`'s argument, as `run` and `check` take it; the same order.
    let diff = in_dir(&suite("v2", ""), &["mcp", "diff", "evalgate.yaml"]);
    diff.expect_code(1);
    let lines: Vec<&str> = diff.stdout.lines().collect();
    assert_eq!(lines[0], "shop vs tools.lock.json: 6 change(s)", "{}", diff.stdout);
    assert_eq!(lines[1], "  breaking: `bare`: tool removed", "{}", diff.stdout);
    assert_eq!(lines[2], "  breaking: `quote`: parameter `lie` is now required", "{}", diff.stdout);
    assert_eq!(lines[6], "  info: `quote`: new output field `lines`", "{}", diff.stdout);
    in_dir(&suite("v2", ""), &["mcp", "diff", "evalgate.yaml", "shop"]).expect_code(1);

    in_dir(&suite("v2", ", drift: {fail_on: never}"), &["run"]).expect_code(0);
    in_dir(&suite("v2", ", drift: {fail_on: review}"), &["mcp", "diff"]).expect_code(1);

    let tools = in_dir(&suite("v1", ""), &["mcp", "tools", "shop"]);
    tools.expect_code(0);
    assert!(tools.stdout.contains("shop (liar 1, protocol "), "{}", tools.stdout);
    assert!(tools.stdout.contains("\n  quote\n    A price quote.\n    input:  {"), "{}", tools.stdout);
    assert!(tools.stdout.contains("    output: {\"properties\":{\"items\""), "{}", tools.stdout);

    // No lock file yet: the check fails and says how to write one.
    let missing = Test::new().write("evalgate.yaml", &suite("v1", "")).args(&["run"]).run();
    missing.expect_code(1);
    let checks = missing.results()["verdict"]["checks"].clone();
    let name = "tool surface of `shop` vs tools.lock.json";
    let check = checks.as_array().unwrap().iter().find(|c| c["name"] == name).unwrap().clone();
    assert_eq!(check["actual"], "tools.lock.json does not exist: write it with `evalgate run --update-snapshot`");
    assert!(missing.read("evalgate-out/summary.md").contains("❌ tools.lock.json does not exist"));
}

/// With a protocol list, the HTML report has the per-version table the Markdown has.
#[test]
fn the_html_report_has_a_row_per_protocol_version() {
    let yaml = shop_suite(", protocol: [2025-06-18, 2025-11-25]", PLAIN_TASK);
    let run = Test::new().write("evalgate.yaml", &yaml).args(&["run"]).run();
    run.expect_messages("  MCP protocol: `shop` passes on 2025-06-18; passes on 2025-11-25\n");
    run.expect_code(0);
    let html = run.read("evalgate-out/report.html");
    let section = html.split("<section id=\"mcp-eras\">").nth(1).and_then(|s| s.split("</section>").next());
    let rows: Vec<&str> = section.expect("an eras section").lines().filter(|l| l.starts_with("<tr><td>")).collect();
    let row = |v: &str| {
        format!(
            "<tr><td><code>shop</code></td><td>{v}</td><td class=\"num\">1/1</td><td><span class=\"badge pass\">passes</span></td></tr>"
        )
    };
    assert_eq!(rows, [row("2025-06-18"), row("2025-11-25")], "{html}");
}
