//! The official MCP conformance suite as tasks: the real `@modelcontextprotocol/conformance`
//! (npm, from tests/fixtures/conformance) against server-everything over streamable HTTP,
//! and recorded runs of it (tests/fixtures/conformance/recorded).

use std::path::PathBuf;

use crate::common::Test;
use crate::mcp::{bin, everything_http};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `node …/conformance/dist/index.js`, as a YAML flow list.
fn conformance_command() -> String {
    let path = root().join("tests/fixtures/conformance/node_modules/@modelcontextprotocol/conformance/dist/index.js");
    assert!(path.exists(), "{} is missing: run scripts/test.sh (npm ci in tests/fixtures/conformance)", path.display());
    format!("[node, '{}']", path.display())
}

/// The scenarios of the tool's default suite that server-everything 2026.8.31 fails under
/// conformance 0.1.13 (both pinned by their lockfiles).
const EVERYTHING_FAILS: &[&str] = &[
    "completion-complete",
    "tools-call-image",
    "tools-call-audio",
    "tools-call-embedded-resource",
    "tools-call-mixed-content",
    "tools-call-with-logging",
    "tools-call-with-progress",
    "tools-call-sampling",
    "tools-call-elicitation",
    "elicitation-sep1034-defaults",
    "elicitation-sep1330-enums",
    "resources-read-text",
    "resources-read-binary",
    "resources-templates-read",
    "prompts-get-simple",
    "prompts-get-with-args",
    "prompts-get-embedded-resource",
    "prompts-get-with-image",
];

fn testcase<'a>(junit: &'a str, name: &str) -> &'a str {
    let start = junit.find(&format!("name=\"{name}\"")).unwrap_or_else(|| panic!("no testcase {name} in:\n{junit}"));
    let end = junit[start..].find("</testcase>").map_or(junit.len(), |e| start + e);
    &junit[start..end]
}

#[test]
fn the_real_conformance_suite_runs_against_a_live_server_and_gates_on_its_checks() {
    let (mut server, port) = everything_http();
    // A few scenarios, one `--scenario` run each: one expected failure, one unexpected.
    let yaml = format!(
        "evalgate: 1\nsuite: conf\nmcp_servers:\n  everything:\n    url: 'http://127.0.0.1:{port}/mcp'\n    conformance:\n      command: {}\n      scenarios: [server-initialize, ping, tools-call-image, dns-rebinding-protection]\n      expected_failures: [tools-call-image]\n",
        conformance_command()
    );
    let run = Test::new().write("evalgate.yaml", &yaml).args(&["run"]).run();
    run.expect_messages(
        r#"
            MCP conformance of `everything`: 1 unexpected failure(s) (conformance/dns-rebinding-protection/localhost-host-rebinding-rejected)
        "#,
    );
    run.expect_code(1);
    let statuses = |run: &crate::common::Run| crate::common::sorted_statuses(&run.results());
    assert_eq!(
        statuses(&run),
        crate::common::owned_pairs(&[
            ("conformance/dns-rebinding-protection/localhost-host-rebinding-rejected", "failed"),
            ("conformance/dns-rebinding-protection/localhost-host-valid-accepted", "passed"),
            ("conformance/ping/ping", "passed"),
            ("conformance/server-initialize/server-initialize", "passed"),
            ("conformance/tools-call-image/tools-call-image", "skipped"),
        ])
    );
    let rebinding = run.task("conformance/dns-rebinding-protection/localhost-host-rebinding-rejected");
    assert_eq!(rebinding["reason"], "FAILURE: Expected HTTP 4xx for invalid Host/Origin headers, got 200");
    assert_eq!(rebinding["tags"], serde_json::json!(["conformance"]));
    assert_eq!(
        (rebinding["file"].as_str(), rebinding["line"].as_u64()),
        (Some("evalgate.yaml"), Some(6)),
        "the `conformance` key"
    );
    let image = run.task("conformance/tools-call-image/tools-call-image");
    assert_eq!(image["reason"], "expected failure: FAILURE: No image content found");
    assert_eq!(image["not_run"], "expected_failure");
    let results = run.results();
    let gate = results["verdict"]["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "MCP conformance of `everything`")
        .cloned()
        .unwrap();
    assert_eq!(gate["passed"], false);
    assert_eq!(
        gate["actual"],
        "1 unexpected failure(s) (conformance/dns-rebinding-protection/localhost-host-rebinding-rejected)"
    );
    assert_eq!(results["mcp_conformance"]["everything"]["checks"], 5);
    let junit = run.read("evalgate-out/junit.xml");
    assert!(testcase(&junit, "conformance/tools-call-image/tools-call-image").contains("<skipped"), "{junit}");
    assert!(
        testcase(&junit, "conformance/dns-rebinding-protection/localhost-host-rebinding-rejected").contains("<failure"),
        "{junit}"
    );
    assert!(!testcase(&junit, "conformance/ping/ping").contains("<failure"), "{junit}");
    let markdown = run.read("evalgate-out/summary.md");
    assert!(markdown.contains("conformance/dns-rebinding-protection/localhost-host-rebinding-rejected"), "{markdown}");

    // The tool's whole default suite, in one run, every failure expected (the scenarios in
    // the official tool's baseline file, one check in the suite): green.
    let baseline = format!(
        "server:\n{}client:\n  - sse-retry\n",
        EVERYTHING_FAILS.iter().map(|s| format!("  - {s}\n")).collect::<String>()
    );
    let yaml = format!(
        "evalgate: 1\nsuite: conf\nmcp_servers:\n  everything:\n    url: 'http://127.0.0.1:{port}/mcp'\n    conformance:\n      command: {}\n      expected_failures_file: conformance-baseline.yml\n      expected_failures: [dns-rebinding-protection/localhost-host-rebinding-rejected]\n",
        conformance_command(),
    );
    let run =
        Test::new().write("conformance-baseline.yml", &baseline).write("evalgate.yaml", &yaml).args(&["run"]).run();
    run.expect_messages(
        r#"
            MCP conformance of `everything`: 13 of 32 checks passed, 19 expected failure(s)
        "#,
    );
    let _ = server.kill();
    let _ = server.wait();
    run.expect_code(0);
    let results = run.results();
    let passed: Vec<&str> = results["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["status"] == "passed")
        .map(|t| t["id"].as_str().unwrap())
        .collect();
    for id in [
        "conformance/tools-list/tools-list",
        "conformance/resources-list/resources-list",
        "conformance/prompts-list/prompts-list",
    ] {
        assert!(passed.contains(&id), "{id} did not pass: {passed:?}");
    }
    assert_eq!(
        results["mcp_conformance"]["everything"]["expected"].as_array().unwrap().len(),
        EVERYTHING_FAILS.len() + 1
    );
}

/// The recorded run's suite: the server is only declared (a recorded run does not reach it).
fn recorded_suite(conformance: &str) -> String {
    format!(
        "evalgate: 1\nsuite: conf\nmcp_servers:\n  everything:\n    command: [{}, stdio]\n    conformance: {conformance}\n",
        bin("mcp-server-everything")
    )
}

#[test]
fn a_recorded_run_is_judged_with_expected_unexpected_stale_and_unreadable_checks() {
    let recorded = root().join("tests/fixtures/conformance/recorded");
    let yaml =
        recorded_suite(&format!("{{results: '{}', expected_failures: [tools-call-image, ping]}}", recorded.display()));
    let run = Test::new().write("evalgate.yaml", &yaml).args(&["run"]).run();
    run.expect_messages(
        r#"
            MCP conformance of `everything`: 2 not run or unreadable (conformance/log-only, conformance/odd-status/future-check); 1 unexpected failure(s) (conformance/dns-rebinding-protection/localhost-host-rebinding-rejected); 1 stale expected failure(s) (ping)
        "#,
    );
    run.expect_code(1);
    assert_eq!(
        crate::common::sorted_statuses(&run.results()),
        crate::common::owned_pairs(&[
            ("conformance/dns-rebinding-protection/localhost-host-rebinding-rejected", "failed"),
            ("conformance/dns-rebinding-protection/localhost-host-valid-accepted", "passed"),
            ("conformance/log-only", "error"),
            ("conformance/logging-set-level/logging-set-level", "passed"),
            ("conformance/odd-status/future-check", "error"),
            ("conformance/ping/ping", "failed"),
            ("conformance/server-initialize/server-initialize", "passed"),
            ("conformance/tools-call-image/tools-call-image", "skipped"),
        ])
    );
    assert_eq!(
        run.task("conformance/ping/ping")["reason"],
        "stale expected failure: the check passes now; remove `ping` from mcp_servers.everything.conformance.expected_failures"
    );
    assert_eq!(
        run.task("conformance/log-only")["reason"],
        "the scenario reported no check (only log entries or skipped checks)"
    );
    assert_eq!(
        run.task("conformance/odd-status/future-check")["reason"],
        "unknown check status `FLAKY`: cannot judge it"
    );
    let results = run.results();
    let gate = results["verdict"]["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "MCP conformance of `everything`")
        .cloned()
        .unwrap();
    assert_eq!(
        gate["actual"],
        "2 not run or unreadable (conformance/log-only, conformance/odd-status/future-check); 1 unexpected failure(s) (conformance/dns-rebinding-protection/localhost-host-rebinding-rejected); 1 stale expected failure(s) (ping)"
    );
    assert_eq!(results["mcp_conformance"]["everything"]["source"], format!("recorded run {}", recorded.display()));
    let junit = run.read("evalgate-out/junit.xml");
    assert!(testcase(&junit, "conformance/ping/ping").contains("<failure"), "{junit}");
    assert!(testcase(&junit, "conformance/odd-status/future-check").contains("<error"), "{junit}");
    assert!(testcase(&junit, "conformance/tools-call-image/tools-call-image").contains("<skipped"), "{junit}");

    // `list` shows where the checks will come from (they are known once the tool has run).
    let list = Test::new().write("evalgate.yaml", &yaml).args(&["list"]).run();
    list.expect_code(0);
    assert_eq!(list.stdout, "conf/conformance/*  evalgate.yaml:6 [conformance]\n");

    // One checks.json read on its own: its scenario is its directory's.
    let file = recorded.join("server-server-initialize-2026-11-25T17-24-21-034Z/checks.json");
    let run = Test::new()
        .write("evalgate.yaml", &recorded_suite(&format!("{{results: '{}'}}", file.display())))
        .args(&["run"])
        .run();
    run.expect_messages(
        r#"
            MCP conformance of `everything`: 1 of 1 checks passed, 0 expected failure(s)
        "#,
    );
    run.expect_code(0);
    assert_eq!(run.task("conformance/server-initialize/server-initialize")["status"], "passed");
}

#[test]
fn a_conformance_run_that_cannot_start_or_writes_nothing_is_an_error_never_a_pass() {
    let (mut server, port) = everything_http();
    let suite = |conformance: &str| {
        format!(
            "evalgate: 1\nsuite: conf\nmcp_servers:\n  everything:\n    url: 'http://127.0.0.1:{port}/mcp'\n    conformance: {conformance}\n"
        )
    };
    let silent = Test::new()
        .write("quiet.sh", "#!/bin/sh\necho 'conformance: out of luck' >&2\nexit 3\n")
        .write("evalgate.yaml", &suite("{command: [./quiet.sh]}"))
        .args(&["run"])
        .run();
    silent.expect_messages(
        r#"
            MCP conformance of `everything`: 1 not run or unreadable (conformance)
        "#,
    );
    let missing = Test::new().write("evalgate.yaml", &suite("{command: [./no-such-tool]}")).args(&["run"]).run();
    missing.expect_messages(
        r#"
            MCP conformance of `everything`: 1 not run or unreadable (conformance)
        "#,
    );
    let empty =
        Test::new().write("empty/.keep", "").write("evalgate.yaml", &suite("{results: empty}")).args(&["run"]).run();
    empty.expect_messages(
        r#"
            MCP conformance of `everything`: 1 not run or unreadable (conformance)
        "#,
    );
    let _ = server.kill();
    let _ = server.wait();
    silent.expect_code(1);
    let task = silent.task("conformance");
    assert_eq!(task["status"], "error");
    assert_eq!(task["reason"], "`./quiet.sh` wrote no results (exit 3): conformance: out of luck");
    missing.expect_code(1);
    assert_eq!(missing.task("conformance")["status"], "error");
    assert!(missing.task("conformance")["reason"].as_str().unwrap().starts_with("cannot start `./no-such-tool`"));
    empty.expect_code(1);
    let reason = empty.task("conformance")["reason"].as_str().unwrap().to_owned();
    assert!(reason.ends_with("empty: no checks.json in it (the conformance tool's `-o DIR`)"), "{reason}");
}

#[test]
fn conformance_mistakes_are_load_errors() {
    let yaml = format!(
        "evalgate: 1\nsuite: conf\nmcp_servers:\n  local:\n    command: [{}, stdio]\n    conformance: {{expected_failures: [a/b/c]}}\n  remote:\n    url: 'http://127.0.0.1:1/mcp'\n    conformance: {{results: out, scenarios: [ping], expected_failures_file: missing.yml}}\n",
        bin("mcp-server-everything")
    );
    let run = Test::new().write("evalgate.yaml", &yaml).args(&["check"]).run();
    run.expect_code(2);
    for expected in [
        "mcp_servers.local.conformance: the conformance suite tests streamable-HTTP servers: give the server a `url`, or read a recorded run with `results`",
        "mcp_servers.local.conformance.expected_failures[0]: `a/b/c` is neither a scenario nor `SCENARIO/CHECK`",
        "mcp_servers.remote.conformance.results: `results` reads a recorded run: `command`, `scenarios` and `timeout` belong to a run of the tool",
        "mcp_servers.remote.conformance.expected_failures_file: cannot read ",
        "missing.yml: No such file or directory",
    ] {
        assert!(run.stderr_has(expected), "missing {expected:?} in:\n{}", run.stderr);
    }
}

#[test]
fn sharded_runs_have_the_conformance_checks_once_and_merge_keeps_them() {
    let recorded = root().join("tests/fixtures/conformance/recorded/server-server-initialize-2026-11-25T17-24-21-034Z");
    let extra = format!(
        "mcp_servers:\n  everything:\n    command: [{}, stdio]\n    conformance: {{results: '{}'}}",
        bin("mcp-server-everything"),
        recorded.display()
    );
    let tasks = "
        - {id: a, prompt: hello, grade: [{type: contains, value: hello}]}
        - {id: b, prompt: hi, grade: [{type: contains, value: hi}]}
        ";
    let test = Test::new()
        .write("agent.sh", crate::common::ECHO_AGENT)
        .write("evalgate.yaml", &crate::common::suite(&extra, tasks));
    let dir = test.path().to_owned();
    let evalgate = |args: &[&str]| {
        let out =
            std::process::Command::new(env!("CARGO_BIN_EXE_evalgate")).current_dir(&dir).args(args).output().unwrap();
        (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
    };
    for shard in ["1/2", "2/2"] {
        let (code, stderr) = evalgate(&["run", "--shard", shard, "--out", &format!("out-{}", &shard[..1])]);
        assert_eq!(code, Some(0), "shard {shard}: {stderr}");
    }
    let ids = |file: &str| -> Vec<String> {
        let results: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join(file)).unwrap()).unwrap();
        results["tasks"].as_array().unwrap().iter().map(|t| t["id"].as_str().unwrap().to_owned()).collect()
    };
    assert_eq!(ids("out-1/results.json"), ["a", "conformance/server-initialize/server-initialize"]);
    assert_eq!(ids("out-2/results.json"), ["b"]);
    let (code, stderr) = evalgate(&["merge", "out-2/results.json", "out-1/results.json", "-o", "merged.json"]);
    assert_eq!(code, Some(0), "{stderr}");
    let merged: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("merged.json")).unwrap()).unwrap();
    assert_eq!(merged["tasks"].as_array().unwrap().len(), 3);
    let checks: Vec<&str> =
        merged["verdict"]["checks"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert!(checks.contains(&"MCP conformance of `everything`"), "{checks:?}");
    drop(test);
}
