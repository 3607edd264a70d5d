//! The worked example `examples/mcp-server-gate/`: a small MCP server written with the Python
//! SDK, gated on two protocol eras, its tools/list linted, every call held to its
//! outputSchema, and its tool surface compared with the committed `tools.lock.json`.

use crate::common::Test;

const EXAMPLE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/mcp-server-gate");

/// The example, copied so that `--update-snapshot` writes the copy; `python3` is the test
/// venv's (it has the `mcp` SDK the example's README asks for).
fn example() -> Test {
    let mut test = Test::new();
    for file in ["evalgate.yaml", "server.py", "tools.lock.json"] {
        test = test.write(file, &std::fs::read_to_string(format!("{EXAMPLE}/{file}")).unwrap());
    }
    let venv = std::path::Path::new(&crate::mcp::python()).parent().unwrap().display().to_string();
    test.env("PATH", &format!("{venv}:{}", std::env::var("PATH").unwrap_or_default()))
}

fn check<'a>(results: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    results["verdict"]["checks"].as_array().unwrap().iter().find(|c| c["name"] == name).unwrap()
}

#[test]
fn the_example_server_passes_its_gate_on_both_eras() {
    let run = example().args(&["run"]).run();
    run.expect_code(0);
    let results = run.results();
    assert_eq!(results["totals"]["passed"], 6);
    for era in ["2025-11-25", "2026-07-28"] {
        assert_eq!(results["mcp_servers"][format!("shop@{era}")]["protocol_version"], era);
        assert_eq!(check(&results, &format!("tools/list lint of `shop@{era}`"))["actual"], "no finding");
        // `quote` declares an outputSchema, so its calls are held to it (what a breach does
        // is tested against a lying server in mcp_contracts.rs); this server keeps it.
        let lock: serde_json::Value = serde_json::from_str(&run.read("tools.lock.json")).unwrap();
        assert!(lock["servers"]["shop"]["tools"]["quote"]["output_schema"]["properties"]["lines"].is_object());
        let call = &run.task(&format!("quote-bread@{era}"))["trials"][0]["tool_calls"][0];
        assert!(call["result"]["structuredContent"]["lines"].is_array(), "{call}");
        assert!(call.get("violation").is_none(), "{call}");
    }
    assert_eq!(check(&results, "tool surface of `shop` vs tools.lock.json")["actual"], "no change");
    assert!(run.stderr_has("MCP protocol: `shop` passes on 2025-11-25; passes on 2026-07-28"), "{}", run.stderr);
}

#[test]
fn a_careless_release_fails_on_its_drift_until_the_snapshot_is_updated() {
    let run = example().env("SHOP_RELEASE", "2").args(&["run"]).run();
    run.expect_messages("  MCP protocol: `shop` fails on 2025-11-25 (1/3 passed): `quote-bread@2025-11-25`: `json` failed: the tool returned an error: Error executing tool quote: 1 validation error for quoteArguments currency   Field required [type=missing, input_value={'item': 'bread', 'qty': 2}, input_type=d… (and 1 more); fails on 2026-07-28 (1/3 passed): `quote-bread@2026-07-28`: `json` failed: the tool returned an error: Error executing tool quote: 1 validation error for quoteArguments currency   Field required [type=missing, input_value={'item': 'bread', 'qty': 2}, input_type=d… (and 1 more)\n");
    run.expect_code(1);
    let results = run.results();
    let drift = check(&results, "tool surface of `shop` vs tools.lock.json");
    assert_eq!(drift["passed"], false);
    assert_eq!(drift["actual"], "2 breaking, 1 review, 0 info: breaking: `list_items`: tool removed");
    let md = run.read("evalgate-out/summary.md");
    assert!(md.contains("- ❌ breaking: `quote`: new required parameter \\`currency\\`"), "{md}");
    // The old call now misses `currency`: the tool says so as a tool error, at both eras.
    assert!(run.task("quote-bread@2026-07-28")["reason"].as_str().unwrap().contains("the tool returned an error"));

    // Accepting the change on purpose rewrites the lock; the drift check then passes.
    let run = example().env("SHOP_RELEASE", "2").args(&["run", "--update-snapshot"]).run();
    run.expect_messages("  MCP protocol: `shop` fails on 2025-11-25 (1/3 passed): `quote-bread@2025-11-25`: `json` failed: the tool returned an error: Error executing tool quote: 1 validation error for quoteArguments currency   Field required [type=missing, input_value={'item': 'bread', 'qty': 2}, input_type=d… (and 1 more); fails on 2026-07-28 (1/3 passed): `quote-bread@2026-07-28`: `json` failed: the tool returned an error: Error executing tool quote: 1 validation error for quoteArguments currency   Field required [type=missing, input_value={'item': 'bread', 'qty': 2}, input_type=d… (and 1 more)\n");
    let lock: serde_json::Value = serde_json::from_str(&run.read("tools.lock.json")).unwrap();
    assert!(lock["servers"]["shop"]["tools"].get("list_items").is_none());
    assert_eq!(check(&run.results(), "tool surface of `shop` vs tools.lock.json")["passed"], true);
}
