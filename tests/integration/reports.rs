//! The report files: JUnit read back, the OpenWOP summary checked against its schema,
//! events in order, Markdown escaped and bounded, snapshots with timings redacted.

use crate::common::{Test, suite};
use quick_junit::{NonSuccessKind, Report, TestCaseStatus};

/// A suite with one task of each outcome: passed, failed, error, and (with --fail-fast -j1
/// not used here) everything else through the other tests.
#[track_caller]
fn mixed() -> crate::common::Run {
    let agent = "#!/bin/sh\ncase \"$1\" in\n  crash*) echo 'fatal: model unavailable' >&2; exit 2;;\n  *) printf '%s\\n' \"$1\";;\nesac\n";
    let tasks = r#"
        - id: passes
          tags: [core]
          prompt: hello | <b>world</b>
          grade: [{type: contains, value: hello}]
        - id: fails
          tags: [core, edge]
          prompt: "@team `rm -rf` | <script>"
          grade: [{type: contains, value: "expected text"}]
        - id: crashes
          prompt: crash now
          grade: [{type: contains, value: x}]
        "#;
    Test::new()
        .write("agent.sh", agent)
        .write("evalgate.yaml", &suite("version: 2.1.0", tasks))
        .args(&["run", "-j", "1"])
        .run()
}

#[test]
fn junit_cases_carry_classname_time_file_and_line() {
    let run = mixed();
    run.expect_code(1);
    let report = Report::deserialize_from_str(&run.read("evalgate-out/junit.xml")).unwrap();
    assert_eq!(report.test_suites.len(), 1);
    let suite = &report.test_suites[0];
    assert_eq!(suite.name.as_str(), "test.evals.demo");
    assert_eq!((suite.tests, suite.failures, suite.errors), (3, 1, 1));
    assert!(suite.time.is_some());
    let expected_lines = [("passes", "7"), ("fails", "11"), ("crashes", "15")];
    for (case, (id, line)) in suite.test_cases.iter().zip(expected_lines) {
        assert_eq!(case.name.as_str(), id);
        assert_eq!(case.classname.as_ref().map(|c| c.as_str()), Some("test.evals.demo"));
        assert!(case.time.is_some(), "{id} has no time");
        assert_eq!(case.extra.get("file").map(|f| f.as_str()), Some("evalgate.yaml"));
        assert_eq!(case.extra.get("line").map(|l| l.as_str()), Some(line), "{id}");
    }
    match &suite.test_cases[1].status {
        TestCaseStatus::NonSuccess { kind: NonSuccessKind::Failure, message, .. } => {
            assert_eq!(
                message.as_ref().unwrap().as_str(),
                "`contains` failed: output does not contain \"expected text\""
            );
        }
        other => panic!("expected a failure, got {other:?}"),
    }
    assert!(matches!(&suite.test_cases[2].status, TestCaseStatus::NonSuccess { kind: NonSuccessKind::Error, .. }));
}

#[test]
fn summary_json_satisfies_the_openwop_eval_summary_schema() {
    let run = mixed();
    let summary = run.json("evalgate-out/summary.json");
    let schema: serde_json::Value =
        serde_json::from_str(include_str!("../fixtures/openwop/openwop-eval-summary.schema.json")).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator.iter_errors(&summary).map(|e| format!("{}: {e}", e.instance_path())).collect();
    assert!(errors.is_empty(), "{errors:?}\n{summary:#}");
    assert_eq!(summary["suiteId"], "test.evals.demo");
    assert_eq!(summary["suiteVersion"], "2.1.0");
    assert_eq!(summary["taskCount"], 3);
    assert_eq!(summary["passedCount"], 1);
    assert_eq!(summary["passed"], false);
    let keys: Vec<&str> = summary.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, ["suiteId", "suiteVersion", "aggregateScore", "passed", "taskCount", "passedCount", "tasks"]);

    // Ids outside OpenWOP's shape are mapped so the summary stays valid.
    let run = Test::new()
        .write("agent.sh", crate::common::ECHO_AGENT)
        .suite(
            r#"
            evalgate: 1
            suite: quick.start
            agents: {bot: {command: [./agent.sh, "{prompt}"]}}
            tasks:
              - id: my_task.one
                prompt: x
                grade: [{type: contains, value: x}]
            "#,
        )
        .args(&["run"])
        .run();
    let summary = run.json("evalgate-out/summary.json");
    assert!(validator.is_valid(&summary), "{summary:#}");
    assert_eq!(summary["suiteId"], "local.evals.quick-start");
    assert_eq!(summary["suiteVersion"], "0.0.0");
    assert_eq!(summary["tasks"][0]["taskId"], "my-utask-done--x");
}

#[test]
fn events_are_written_in_order_one_per_line() {
    let run = mixed();
    let lines: Vec<serde_json::Value> =
        run.read("evalgate-out/events.jsonl").lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let types: Vec<&str> = lines.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(types, ["eval.started", "eval.scored", "eval.scored", "eval.scored", "eval.completed"]);
    assert_eq!(lines[0]["payload"]["taskCount"], 3);
    assert_eq!(lines[4]["payload"]["passedCount"], 1);
}

#[test]
fn markdown_escapes_model_output() {
    let run = mixed();
    let md = run.read("evalgate-out/summary.md");
    assert!(!md.contains("<script>") && !md.contains("@team"), "{md}");
    assert!(md.contains("&lt;script&gt;") && md.contains("@\u{200b}team"), "{md}");
    assert!(md.contains("| `crashes` | 💥 error | 0.00 | agent \\`bot\\` exit 2: fatal: model unavailable |"), "{md}");
}

#[test]
fn markdown_stays_under_the_comment_limit_with_the_verdict_first() {
    let agent = "#!/bin/sh\nhead -c 3000 /dev/zero | tr '\\0' 'x'\n";
    let tasks: String = (0..600)
        .map(|i| format!("  - id: task-{i}-with-a-rather-long-descriptive-name-for-testing-the-limit\n    prompt: x\n    grade: [{{type: contains, value: \"{}\"}}]\n", "needle ".repeat(30)))
        .collect();
    let run =
        Test::new().write("agent.sh", agent).write("evalgate.yaml", &suite("", &tasks)).args(&["run", "-q"]).run();
    run.expect_code(1);
    let md = run.read("evalgate-out/summary.md");
    assert!(md.chars().count() <= 65_536, "{} characters", md.chars().count());
    assert!(md.starts_with("## ❌ evalgate: `test.evals.demo` failed"));
    assert!(md.contains("more failing tasks: see `results.json`."));
    // The results file keeps every task.
    assert_eq!(run.results()["tasks"].as_array().unwrap().len(), 600);
}

#[test]
fn junit_and_markdown_snapshots() {
    let run = mixed();
    let mut settings = insta::Settings::clone_current();
    for (pattern, replacement) in [
        (r#"time="[0-9.]+""#, r#"time="[time]""#),
        (r#"timestamp="[^"]+""#, r#"timestamp="[timestamp]""#),
        (r#"name="latency_ms" value="\d+""#, r#"name="latency_ms" value="[ms]""#),
        (r#"name="p95_latency_ms" value="\d+""#, r#"name="p95_latency_ms" value="[ms]""#),
        (r"p95 \d+ ms", "p95 [ms] ms"),
        (r"p95 latency \| \d+ ms", "p95 latency | [ms] ms"),
        (r"wall time \| [0-9.]+ s", "wall time | [s] s"),
    ] {
        settings.add_filter(pattern, replacement);
    }
    settings.bind(|| {
        insta::assert_snapshot!("junit", run.read("evalgate-out/junit.xml"));
        insta::assert_snapshot!("markdown", run.read("evalgate-out/summary.md"));
    });
}

/// Upstream's schemas (openwop/openwop-sdks, see tests/fixtures/openwop/): the event
/// envelope and the `eval.*` payload definitions.
fn openwop_event_errors(event: &serde_json::Value) -> Vec<String> {
    let envelope: serde_json::Value =
        serde_json::from_str(include_str!("../fixtures/openwop/run-event.envelope.extract.json")).unwrap();
    let mut defs: serde_json::Value =
        serde_json::from_str(include_str!("../fixtures/openwop/run-event-payloads.eval-defs.extract.json")).unwrap();
    let def = match event["type"].as_str().unwrap_or_default() {
        "eval.started" => "evalStarted",
        "eval.scored" => "evalScored",
        "eval.completed" => "evalCompleted",
        other => return vec![format!("unknown event type {other}")],
    };
    let payload_schema = defs["$defs"][def].take();
    let mut errors: Vec<String> = Vec::new();
    for (schema, value, at) in [(&envelope, event, ""), (&payload_schema, &event["payload"], "/payload")] {
        let validator = jsonschema::validator_for(schema).unwrap();
        errors.extend(validator.iter_errors(value).map(|e| format!("{at}{}: {e}", e.instance_path())));
    }
    errors
}

/// Keys upstream's conformance test forbids anywhere in a payload.
const FORBIDDEN: [&str; 10] =
    ["taskOutput", "output", "rubric", "completion", "prompt", "body", "secret", "credentials", "token", "apiKey"];

fn keys(value: &serde_json::Value, out: &mut Vec<String>) {
    match value {
        serde_json::Value::Object(map) => {
            for (k, v) in map {
                out.push(k.clone());
                keys(v, out);
            }
        }
        serde_json::Value::Array(items) => items.iter().for_each(|v| keys(v, out)),
        _ => {}
    }
}

#[test]
fn events_jsonl_is_valid_upstream_openwop_and_meets_its_conformance_rules() {
    let yaml = suite(
        "modes: [golden, regression]",
        "
            - id: passes
              prompt: hello
              grade: [{type: contains, value: hello}]
            - id: fails
              prompt: x
              grade: [{type: contains, value: y}]
            - id: also.passes
              prompt: z
              grade: [{type: contains, value: z}]
            ",
    );
    let base =
        Test::new().write("agent.sh", crate::common::ECHO_AGENT).write("evalgate.yaml", &yaml).args(&["run"]).run();
    base.expect_code(1);
    let baseline = base.read("evalgate-out/results.json");
    let baseline_run_id = base.results()["run_id"].as_str().unwrap().to_owned();
    let run = Test::new()
        .write("agent.sh", crate::common::ECHO_AGENT)
        .write("evalgate.yaml", &yaml)
        .write("baseline.json", &baseline)
        .args(&["run", "--baseline", "baseline.json"])
        .run();
    run.expect_messages("  warning: inconclusive: too few tasks to tell noise from change: 3 comparable task(s) (0 worse, 0 better), fewer than min_tasks 10; the gate passes with this warning unless a task that passed every trial in the baseline fails every trial now. With these trials a flaky task can fail every trial after passing every one in up to 57.8% of runs with no change; with 3 trials that every run makes on both sides (`repeat: 3`, or adaptive trials with `min: 3`) that stays under α. Add tasks (or compare against a baseline with the same tasks) for a statistical verdict.\n");
    let events: Vec<serde_json::Value> =
        run.read("evalgate-out/events.jsonl").lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let run_id = run.results()["run_id"].as_str().unwrap().to_owned();

    for (i, event) in events.iter().enumerate() {
        let errors = openwop_event_errors(event);
        assert!(errors.is_empty(), "event {i}: {errors:?}\n{event:#}");
        assert_eq!(event["sequence"], i, "ordered by sequence from 0");
        assert_eq!(event["runId"], run_id.as_str(), "the run's id, as in results.json");
        let mut found = Vec::new();
        keys(&event["payload"], &mut found);
        assert!(found.iter().all(|k| !FORBIDDEN.contains(&k.as_str())), "forbidden key in {event:#}");
    }
    let ids: std::collections::BTreeSet<&str> = events.iter().map(|e| e["eventId"].as_str().unwrap()).collect();
    assert_eq!(ids.len(), events.len(), "event ids are unique");
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(types.first(), Some(&"eval.started"));
    assert_eq!(types.last(), Some(&"eval.completed"));
    assert_eq!(types.iter().filter(|t| **t == "eval.started" || **t == "eval.completed").count(), 2);
    let completed = &events.last().unwrap()["payload"];
    assert_eq!(types.iter().filter(|t| **t == "eval.scored").count() as u64, completed["taskCount"].as_u64().unwrap());
    let started = &events[0]["payload"];
    assert_eq!(started["modes"], serde_json::json!(["golden", "regression"]));
    assert_eq!(started["baselineRunId"], baseline_run_id.as_str());
    assert!(completed["regressionVsBaseline"].is_number(), "{completed:#}");

    // summary.json against upstream's EvalSummary schema.
    let summary = run.json("evalgate-out/summary.json");
    let schema: serde_json::Value =
        serde_json::from_str(include_str!("../fixtures/openwop/eval-summary.upstream.schema.json")).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator.iter_errors(&summary).map(|e| format!("{}: {e}", e.instance_path())).collect();
    assert!(errors.is_empty(), "{errors:?}\n{summary:#}");
}

/// Markdown and HTML show one per-tag score, by the rule of the run's own score (weighted, an
/// error counts 0, skipped tasks and untagged ones left out), and count tasks in words that
/// agree with the number.
#[test]
fn markdown_and_html_show_the_same_per_tag_score_as_the_run_score_rule() {
    let tasks = "  - id: heavy\n    prompt: x\n    weight: 3\n    tags: [core]\n    grade: [{type: contains, value: x}]\n  - id: light\n    prompt: x\n    tags: [core]\n    grade: [{type: contains, value: y}]\n  - id: plain\n    prompt: x\n    grade: [{type: contains, value: y}]\n";
    let run = Test::new()
        .write("agent.sh", crate::common::ECHO_AGENT)
        .write("evalgate.yaml", &suite("thresholds: {pass_score: 0.1}", tasks))
        .args(&["run"])
        .run();
    let md = run.read("evalgate-out/summary.md");
    let table = md.split("### By tag\n\n").nth(1).and_then(|t| t.split("\n\n").next()).expect("a tag table");
    assert_eq!(table, "| tag | passed | score |\n|---|---|---|\n| core | 1/2 | 0.75 |", "{md}");
    let html = crate::html::unescape(&run.read("evalgate-out/report.html"));
    let chart = html.split("id=\"chart-tags\"").nth(1).and_then(|c| c.split("</figure>").next()).expect("a tag chart");
    assert!(chart.contains(">0.75 · 1/2</text>"), "{chart}");
    assert!(!chart.contains("untagged"), "{chart}");
    assert!(html.contains("not reported"), "the echo agent reports no cost");
}
