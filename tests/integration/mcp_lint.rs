//! `mcp_servers.NAME.lint`: a server's tools/list held to the spec, as a gate check on `run`
//! and on `check`; against a hand-written server that breaks the rules on request
//! (tests/fixtures/mcp/lying_server.py, `LINT=1`) and the Python SDK fixture server.

use crate::common::Test;
use crate::mcp::python;

fn liar() -> String {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp/lying_server.py").display().to_string()
}

const TASK: &str = "tasks:\n  - id: plain\n    level: execution\n    call: {server: shop, tool: plain}\n    grade: [{type: json, path: x, equals: y}]\n";

#[test]
fn a_tools_list_that_breaks_the_spec_fails_the_gate_with_each_finding() {
    let yaml = format!(
        "evalgate: 1\nsuite: t\nmcp_servers:\n  shop: {{command: [python3, '{}'], env: {{LINT: '1'}}, protocol: 2025-11-25, lint: {{invalid_input: true}}}}\n{TASK}",
        liar()
    );
    let run = Test::new().write("evalgate.yaml", &yaml).args(&["run"]).run();
    // The task passes; the gate fails on the lint.
    run.expect_code(1);
    assert_eq!(run.task("plain")["status"], "passed");
    let lint = &run.results()["mcp_lint"]["shop"];
    assert_eq!(lint["protocol_version"], "2025-11-25");
    let lines: Vec<String> = lint["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            format!(
                "{} {}: {}",
                f["level"].as_str().unwrap(),
                f["tool"].as_str().unwrap_or(""),
                f["what"].as_str().unwrap()
            )
        })
        .collect();
    let expected = [
        "error plain: is listed twice: tool names must be unique",
        "error has space: the name has characters outside `A-Z a-z 0-9 _ - .`: \" \"",
        "error typo: inputSchema is not a valid JSON Schema at type: ",
        "error strict: answered arguments its inputSchema rejects ({}) with a protocol error, not a tool error (`isError: true`) a model can read and correct: ",
        "review quote: accepted arguments its inputSchema rejects ({\"lie\":\"not of this type\"}) without a tool error",
        "review delete_record: its name says `delete` but it has no `destructiveHint` or `readOnlyHint: false`",
        "review peek: is annotated readOnlyHint: true, but its description says `erase`",
    ];
    for want in expected {
        assert!(lines.iter().any(|l| l.starts_with(want)), "missing {want:?} in {lines:#?}");
    }
    // `quote`, `bare` and the others accept anything or reject with a tool error: no finding.
    assert_eq!(lines.len(), expected.len(), "{lines:#?}");
    let check = run.results()["verdict"]["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "tools/list lint of `shop`")
        .cloned()
        .unwrap();
    assert_eq!(check["passed"], false);
    assert_eq!(check["budget"], "no error");
    assert!(check["actual"].as_str().unwrap().starts_with("4 error, 3 review: `plain`: is listed twice"), "{check}");
    let md = run.read("evalgate-out/summary.md");
    assert!(md.contains("### MCP tools/list lint of `shop` (protocol 2025-11-25)"), "{md}");
    assert!(md.contains("- ⚠️ review: `delete_record`: its name says \\`delete\\`"), "{md}");
    assert!(md.contains("- ❌ error: `plain`: is listed twice"), "{md}");

    // `check` runs nothing, and fails on the same findings.
    let check = Test::new().write("evalgate.yaml", &yaml).args(&["check"]).run();
    check.expect_code(1);
    assert!(check.stderr_has("error: MCP server `shop` tools/list: `plain`: is listed twice"), "{}", check.stderr);
    assert!(check.stderr_has("warning: MCP server `shop` tools/list: `delete_record`: its name says `delete`"));

    // `fail_on: never` lists them and passes; without LINT=1, and without calling tools with
    // invalid input (which `quote` does not validate), the same server is clean.
    let never = yaml.replace("lint: {invalid_input: true}", "lint: {fail_on: never}");
    Test::new().write("evalgate.yaml", &never).args(&["run"]).run().expect_code(0);
    let clean = yaml.replace("env: {LINT: '1'}, ", "").replace("lint: {invalid_input: true}", "lint: true");
    let run = Test::new().write("evalgate.yaml", &clean).args(&["run"]).run();
    run.expect_code(0);
    assert_eq!(run.results()["mcp_lint"]["shop"]["findings"], serde_json::json!([]));
}

#[test]
fn each_era_is_linted_and_the_python_sdk_answers_invalid_input_with_tool_errors() {
    let yaml = format!(
        "evalgate: 1\nsuite: t\nmcp_servers:\n  fx:\n    command: [{}, fixture_server.py]\n    protocol: [2025-06-18, 2026-07-28]\n    lint: {{invalid_input: true}}\ntasks:\n  - id: add\n    level: execution\n    call: {{server: fx, tool: add, arguments: {{a: 1, b: 2}}}}\n    grade: [{{type: contains, value: '3'}}]\n",
        python()
    );
    let run = Test::new()
        .write("fixture_server.py", include_str!("../fixtures/mcp/fixture_server.py"))
        .write("evalgate.yaml", &yaml)
        .args(&["run"])
        .run();
    run.expect_messages("  MCP protocol: `fx` passes on 2025-06-18; passes on 2026-07-28\n");
    run.expect_code(0);
    let lints = &run.results()["mcp_lint"];
    for era in ["2025-06-18", "2026-07-28"] {
        let lint = &lints[format!("fx@{era}")];
        assert_eq!(lint["protocol_version"], era, "{lints}");
        // `crash` kills the server ("Kills …") and says nothing of it in its annotations.
        let findings = lint["findings"].as_array().unwrap();
        assert_eq!(findings.len(), 1, "{lint}");
        assert_eq!(findings[0]["tool"], "crash");
        assert_eq!(findings[0]["level"], "review");
    }
}
