//! Foreign formats: OpenWOP AgentEvalSuite run through imports and `convert`.

use crate::common::{Test, unindent};
use serde_json::Value;

const SUITE: &str = include_str!("../fixtures/openwop/support-resolver.json");

/// A support agent: right on three of the four tasks (no ticket on escalation).
const AGENT: &str = r#"#!/bin/sh
case "$1" in
  *refund*) echo "Refunds are accepted within 30 days.";;
  *hello*) echo "Hello!";;
  *A-7*) echo '{"status": "shipped", "order": "A-7"}';;
  *) echo "Please hold.";;
esac
"#;

fn native(imports: &str, tasks: &str) -> String {
    unindent(
        r#"
        evalgate: 1
        suite: acme.evals.support
        agents: {bot: {command: [./agent.sh, "{prompt}"]}}
        thresholds: {pass_score: 0.6}
        imports:
        <imports>
        tasks:<tasks>
        "#,
    )
    .replace("<imports>", imports)
    .replace("<tasks>", tasks)
}

fn statuses(results: &Value) -> Vec<(String, String)> {
    results["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["id"].as_str().unwrap().to_owned(), t["status"].as_str().unwrap().to_owned()))
        .collect()
}

#[test]
fn an_openwop_suite_runs_when_imported_with_its_source_lines() {
    let run = Test::new()
        .write("agent.sh", AGENT)
        .write("evals/support-resolver.json", SUITE)
        .write("evalgate.yaml", &native("  - {format: openwop, path: \"evals/*.json\", agent: bot}", " []"))
        .args(&["run"])
        .run();
    run.expect_code(0);
    let results = run.results();
    assert_eq!(
        statuses(&results),
        [("refund-window", "passed"), ("greeting", "passed"), ("order-lookup", "passed"), ("escalation", "failed")]
            .map(|(a, b)| (a.to_owned(), b.to_owned()))
    );
    assert_eq!(results["suite"]["modes"], serde_json::json!(["golden"]), "the import's modes are the suite's");
    assert_eq!(results["tasks"][2]["file"], "evals/support-resolver.json");
    assert_eq!(results["tasks"][2]["line"], 17);
    let junit = run.read("evalgate-out/junit.xml");
    assert!(
        junit.contains("name=\"escalation\" classname=\"acme.evals.support\"")
            && junit.contains("file=\"evals/support-resolver.json\" line=\"22\""),
        "{junit}"
    );
    let summary = run.json("evalgate-out/summary.json");
    let schema: Value =
        serde_json::from_str(include_str!("../fixtures/openwop/openwop-eval-summary.schema.json")).unwrap();
    assert!(jsonschema::validator_for(&schema).unwrap().is_valid(&summary), "{summary:#}");
    assert_eq!(summary["passedCount"], 3);
    let events: Vec<Value> =
        run.read("evalgate-out/events.jsonl").lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(events.first().unwrap()["type"], "eval.started");
    assert_eq!(events.iter().filter(|e| e["type"] == "eval.scored").count(), 4);
    assert_eq!(events.last().unwrap()["type"], "eval.completed");
}

#[test]
fn colliding_ids_are_prefixed_with_the_import() {
    let run = Test::new()
        .write("agent.sh", AGENT)
        .write("support-resolver.json", SUITE)
        .write(
            "evalgate.yaml",
            &native(
                "  - {format: openwop, path: support-resolver.json, agent: bot}",
                "\n  - id: greeting\n    prompt: Say hello\n    grade: [{type: contains, value: Hello}]",
            ),
        )
        .args(&["run"])
        .run();
    let ids: Vec<String> = statuses(&run.results()).into_iter().map(|(id, _)| id).collect();
    assert!(ids.contains(&"greeting".to_owned()) && ids.contains(&"support-resolver.greeting".to_owned()), "{ids:?}");
}

#[test]
fn run_directly_says_what_is_missing_and_how_to_supply_it() {
    let run = Test::new().write("suite.json", SUITE).args(&["run", "suite.json"]).run();
    run.expect_code(2);
    assert!(
        run.stderr_has("this OpenWOP AgentEvalSuite does not say how to run the agent under test"),
        "{}",
        run.stderr
    );
    assert!(run.stderr_has("imports: [{format: openwop, path: suite.json, agent: NAME}]"), "{}", run.stderr);
    assert!(run.stderr_has("evalgate convert suite.json"), "{}", run.stderr);
}

#[test]
fn invalid_openwop_suites_list_every_problem() {
    let mut doc: Value = serde_json::from_str(SUITE).unwrap();
    doc["suiteId"] = "acme.support".into();
    doc["thresholds"]["passScore"] = 1.5.into();
    doc["tasks"][1]["expected"].as_object_mut().unwrap().remove("match");
    doc["tasks"][3]["taskId"] = "refund-window".into();
    doc["tasks"][2]["fixtures"] = serde_json::json!({"memorySeed": [{"fact": "likes tea"}]});
    // An unknown key in a rubric item is refused, as everywhere else in the schema.
    doc["tasks"][0]["expected"] =
        serde_json::json!({"kind": "rubric", "rubric": [{"criterion": "polite", "weight": 1, "note": "x"}]});
    let run = Test::new().write("suite.json", &doc.to_string()).args(&["check", "suite.json"]).run();
    run.expect_code(2);
    for expected in [
        "/suiteId: \"acme.support\" does not match",
        "/thresholds/passScore: 1.5 is greater than the maximum of 1",
        "/tasks/1/expected: a golden task needs `match`",
        "/tasks/3/taskId: duplicate taskId `refund-window`",
        "/tasks/2/fixtures/memorySeed: `memorySeed` is not supported",
        "/tasks/0/expected/rubric/0: Additional properties are not allowed ('note' was unexpected)",
    ] {
        assert!(run.stderr_has(expected), "missing {expected:?} in:\n{}", run.stderr);
    }
}

#[test]
fn convert_prints_a_native_suite_that_gives_the_same_results() {
    let test = Test::new().write("agent.sh", AGENT).write("support-resolver.json", SUITE);
    let dir = test.path().to_owned();
    let converted = test.args(&["convert", "support-resolver.json"]).run();
    converted.expect_code(0);
    assert!(converted.stdout.starts_with("# Converted from support-resolver.json (OpenWOP AgentEvalSuite)"));
    std::fs::write(dir.join("converted.yaml"), &converted.stdout).unwrap();
    let evalgate = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_evalgate")).current_dir(&dir).args(args).output().unwrap()
    };
    assert_eq!(evalgate(&["run", "converted.yaml", "--out", "converted"]).status.code(), Some(0));
    std::fs::write(
        dir.join("import.yaml"),
        native("  - {format: openwop, path: support-resolver.json, agent: bot}", " []")
            .replace("acme.evals.support", "acme.evals.support-resolver"),
    )
    .unwrap();
    assert_eq!(evalgate(&["run", "import.yaml", "--out", "imported"]).status.code(), Some(0));
    let read = |p: &str| -> Value { serde_json::from_str(&std::fs::read_to_string(dir.join(p)).unwrap()).unwrap() };
    let (a, b) = (read("converted/results.json"), read("imported/results.json"));
    assert_eq!(statuses(&a), statuses(&b));
    assert_eq!(a["totals"]["score"], b["totals"]["score"]);
    assert_eq!(a["verdict"]["passed"], b["verdict"]["passed"]);
    // The OpenWOP thresholds became the converted suite's gate.
    assert!(converted.stdout.contains("pass_score: 0.6"), "{}", converted.stdout);
}

#[test]
fn one_suite_gates_on_several_formats_at_once() {
    let agentv = "tests:\n  - id: refund-window\n    input: What is the refund window?\n    assertions:\n      - {type: contains, value: 30 days}\n  - id: hold\n    input: Anything else\n    assertions:\n      - {type: icontains, value: please hold}\n";
    let task = "kind: Task\nmetadata: {name: greeting-file}\nsteps:\n  setup: {inline: \"echo hello > greeting.txt\"}\n  verify: {inline: \"grep -q hello greeting.txt\"}\n  cleanup: {inline: \"rm greeting.txt\"}\n  prompt: {inline: \"say hello\"}\n";
    let imports = "  - {format: openwop, path: evals/support-resolver.json, agent: bot}\n  - {format: agentv, path: evals/refund.eval.yaml, agent: bot}\n  - {format: mcpchecker, path: \"tasks/*/task.yaml\", agent: bot}";
    let run = Test::new()
        .write("agent.sh", AGENT)
        .write("evals/support-resolver.json", SUITE)
        .write("evals/refund.eval.yaml", agentv)
        .write("tasks/greeting/task.yaml", task)
        .write("evalgate.yaml", &native(imports, " []"))
        .args(&["run"])
        .run();
    run.expect_code(0);
    let results = run.results();
    assert_eq!(
        statuses(&results),
        [
            ("refund-window", "passed"),
            ("greeting", "passed"),
            ("order-lookup", "passed"),
            ("escalation", "failed"),
            ("refund.refund-window", "passed"),
            ("hold", "passed"),
            ("greeting-file", "passed"),
        ]
        .map(|(a, b)| (a.to_owned(), b.to_owned())),
        "the AgentV task that collides with an OpenWOP id is prefixed with its file's name"
    );
    let files: Vec<&str> = results["tasks"].as_array().unwrap().iter().map(|t| t["file"].as_str().unwrap()).collect();
    assert_eq!(
        files,
        [
            "evals/support-resolver.json",
            "evals/support-resolver.json",
            "evals/support-resolver.json",
            "evals/support-resolver.json",
            "evals/refund.eval.yaml",
            "evals/refund.eval.yaml",
            "tasks/greeting/task.yaml"
        ]
    );
    // One gate over all of them: 6 of 7 passed, above the suite's pass_score of 0.6.
    let checks = &results["verdict"]["checks"];
    assert_eq!((checks[1]["name"].as_str(), checks[1]["actual"].as_str()), (Some("aggregate score"), Some("0.86")));
    assert_eq!(results["verdict"]["passed"], true);
}
