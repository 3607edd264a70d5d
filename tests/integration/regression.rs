//! Baselines and regression budgets, repeated trials, sharding and merging.

use crate::common::{Test, unindent};
use serde_json::Value;

/// An agent whose answers depend on files in its directory: `fail-TASK` makes that task's
/// answer wrong, `cost` sets the reported cost, `slow` adds latency.
const AGENT: &str = r#"#!/bin/sh
task="$EVALGATE_TASK_ID"
if [ -f "fail-$task" ]; then echo wrong; else echo "right $task"; fi
cost=0.001; [ -f cost ] && cost=$(cat cost)
[ -f slow ] && sleep 0.3
printf '{"usage": {"input_tokens": 10, "output_tokens": 5, "cost_usd": %s}}' "$cost" > "$EVALGATE_TRACE"
"#;

fn suite_yaml(extra: &str, ids: &[&str]) -> String {
    let tasks: String = ids
        .iter()
        .map(|id| {
            unindent(
                "
            - id: <id>
              prompt: x
              grade: [{type: contains, value: right}]
            ",
            )
            .replace("<id>", id)
        })
        .collect();
    format!("evalgate: 1\nsuite: test.evals.reg\nagents: {{bot: {{command: [./agent.sh]}}}}\n{extra}\ntasks:\n{tasks}")
}

/// Runs the suite once to make `baseline.json`, then applies `change` and runs again.
#[track_caller]
fn baseline_then(extra: &str, ids: &[&str], change: &[(&str, &str)], head_ids: &[&str]) -> crate::common::Run {
    let base = Test::new().write("agent.sh", AGENT).write("evalgate.yaml", &suite_yaml("", ids)).args(&["run"]).run();
    base.expect_code(0);
    let baseline = base.read("evalgate-out/results.json");
    let mut test = Test::new()
        .write("agent.sh", AGENT)
        .write("baseline.json", &baseline)
        .write("evalgate.yaml", &suite_yaml(extra, head_ids));
    for (name, contents) in change {
        test = test.write(name, contents);
    }
    test.args(&["run"]).run()
}

fn check<'a>(results: &'a Value, name: &str) -> &'a Value {
    results["verdict"]["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no check {name}"))
}

#[test]
fn a_task_that_passed_and_now_fails_fails_the_gate_by_name() {
    let extra = "thresholds: {pass_score: 0.5}\nregression: {baseline: baseline.json, max_new_failures: 0}";
    let run = baseline_then(extra, &["a", "b", "c"], &[("fail-b", "")], &["a", "b", "c"]);
    run.expect_messages("  warning: inconclusive: too few tasks to tell noise from change: 3 comparable task(s) (1 worse, 0 better), fewer than min_tasks 10; the gate passes with this warning unless a task that passed every trial in the baseline fails every trial now. With these trials a flaky task can fail every trial after passing every one in up to 57.8% of runs with no change; with 3 trials that every run makes on both sides (`repeat: 3`, or adaptive trials with `min: 3`) that stays under α. Add tasks (or compare against a baseline with the same tasks) for a statistical verdict.\n");
    run.expect_code(1);
    let results = run.results();
    assert_eq!(check(&results, "aggregate score")["passed"], true);
    let c = check(&results, "new failures vs baseline");
    assert_eq!((c["passed"].as_bool(), c["actual"].as_str()), (Some(false), Some("1: b")));
    let md = run.read("evalgate-out/summary.md");
    assert!(md.contains("### Compared with baseline"), "{md}");
    assert!(md.contains("- ❌ newly failing (1): `b`"), "{md}");
    let summary = run.json("evalgate-out/summary.json");
    assert_eq!(summary["regression"]["scoreDelta"], -0.333333333);
    assert!(summary["regression"]["baselineRunId"].as_str().unwrap().starts_with("local-"));
    let events = run.read("evalgate-out/events.jsonl");
    assert!(events.lines().last().unwrap().contains("\"regressionVsBaseline\""));
}

#[test]
fn a_score_drop_inside_the_budget_passes() {
    let extra = "thresholds: {pass_score: 0.5}\nregression: {baseline: baseline.json, max_score_drop: 0.5, max_new_failures: 1}";
    let run = baseline_then(extra, &["a", "b", "c"], &[("fail-b", "")], &["a", "b", "c"]);
    run.expect_messages("  warning: inconclusive: too few tasks to tell noise from change: 3 comparable task(s) (1 worse, 0 better), fewer than min_tasks 10; the gate passes with this warning unless a task that passed every trial in the baseline fails every trial now. With these trials a flaky task can fail every trial after passing every one in up to 57.8% of runs with no change; with 3 trials that every run makes on both sides (`repeat: 3`, or adaptive trials with `min: 3`) that stays under α. Add tasks (or compare against a baseline with the same tasks) for a statistical verdict.\n");
    run.expect_code(0);
    assert_eq!(check(&run.results(), "score drop vs baseline")["actual"], "0.33 (1.00 → 0.67)");
}

#[test]
fn cost_and_latency_increases_over_budget_fail() {
    let extra = "regression: {baseline: baseline.json, max_cost_increase_pct: 50, max_p95_latency_increase_pct: 50}";
    let run = baseline_then(extra, &["a", "b"], &[("cost", "0.01"), ("slow", "")], &["a", "b"]);
    run.expect_messages("  warning: inconclusive: too few tasks to tell noise from change: 2 comparable task(s) (0 worse, 0 better), fewer than min_tasks 10; the gate passes with this warning unless a task that passed every trial in the baseline fails every trial now. With these trials a flaky task can fail every trial after passing every one in up to 43.8% of runs with no change; with 3 trials that every run makes on both sides (`repeat: 3`, or adaptive trials with `min: 3`) that stays under α. Add tasks (or compare against a baseline with the same tasks) for a statistical verdict.\n");
    run.expect_code(1);
    let results = run.results();
    let cost = check(&results, "cost increase vs baseline");
    assert_eq!((cost["passed"].as_bool(), cost["actual"].as_str()), (Some(false), Some("+900.0% ($0.0020 → $0.0200)")));
    assert_eq!(check(&results, "p95 latency increase vs baseline")["passed"], false);
}

#[test]
fn added_and_removed_tasks_are_listed_without_failing_under_the_budgets_alone() {
    // With the default paired test, `b` would be missing and fail the gate (paired_gate.rs).
    let extra = "regression: {baseline: baseline.json, test: budgets}";
    let run = baseline_then(extra, &["a", "b"], &[], &["a", "c"]);
    run.expect_code(0);
    let cmp = &run.results()["regression"]["comparison"];
    assert_eq!(cmp["added"], serde_json::json!(["c"]));
    assert_eq!(cmp["removed"], serde_json::json!(["b"]));
    let md = run.read("evalgate-out/summary.md");
    assert!(md.contains("- added (not gated): `c`") && md.contains("- removed (not gated): `b`"), "{md}");
}

#[test]
fn a_missing_baseline_warns_unless_required() {
    let run = Test::new()
        .write("agent.sh", AGENT)
        .write("evalgate.yaml", &suite_yaml("regression: {baseline: .evalgate/baseline.json}", &["a"]))
        .args(&["run"])
        .run();
    run.expect_code(0);
    assert!(run.stderr_has("warning: baseline") && run.stderr_has("the regression gate is skipped"), "{}", run.stderr);
    let run = Test::new()
        .write("agent.sh", AGENT)
        .write("evalgate.yaml", &suite_yaml("regression: {baseline: .evalgate/baseline.json, required: true}", &["a"]))
        .args(&["run"])
        .run();
    run.expect_messages(
        r#"
            warning: baseline [DIR]/.evalgate/baseline.json does not exist; the regression gate fails
        "#,
    );
    run.expect_code(1);
    assert_eq!(check(&run.results(), "baseline")["passed"], false);
}

#[test]
fn a_baseline_of_another_suite_is_an_error() {
    let other = Test::new()
        .write("agent.sh", AGENT)
        .write("evalgate.yaml", &suite_yaml("", &["a"]).replace("test.evals.reg", "other.evals.x"))
        .args(&["run"])
        .run();
    let run = Test::new()
        .write("agent.sh", AGENT)
        .write("baseline.json", &other.read("evalgate-out/results.json"))
        .write("evalgate.yaml", &suite_yaml("", &["a"]))
        .args(&["run", "--baseline", "baseline.json"])
        .run();
    run.expect_code(2);
    assert!(
        run.stderr_has("baseline baseline.json is for suite `other.evals.x`, not `test.evals.reg`"),
        "{}",
        run.stderr
    );
}

#[test]
fn compare_two_results_files_and_an_openwop_summary() {
    let test = Test::new().write("agent.sh", AGENT).write("evalgate.yaml", &suite_yaml("", &["a", "b"]));
    let base = test.args(&["run", "--out", "base"]).run();
    let dir = base.dir.clone();
    let run = |args: &[&str]| {
        let out =
            std::process::Command::new(env!("CARGO_BIN_EXE_evalgate")).current_dir(&dir).args(args).output().unwrap();
        (out.status.code().unwrap(), String::from_utf8_lossy(&out.stdout).into_owned())
    };
    std::fs::write(dir.join("fail-a"), "").unwrap();
    assert_eq!(run(&["run", "--out", "head"]).0, 1);
    let (code, out) = run(&["compare", "base/results.json", "head/results.json"]);
    assert_eq!(code, 1);
    assert!(out.starts_with("## ❌ evalgate compare: `test.evals.reg` regressed"), "{out}");
    assert!(out.contains("| new failures vs baseline | ≤ 0 that now fail every trial | 1: a | ❌ |"), "{out}");
    let (code, _) = run(&["compare", "base/results.json", "head/results.json", "--max-new-failures", "1"]);
    assert_eq!(code, 0);
    // An OpenWOP EvalSummary works as the baseline too.
    let (code, out) = run(&["compare", "base/summary.json", "head/results.json"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("1: a"), "{out}");
    let (code, _) = run(&["compare", "head/results.json", "head/results.json"]);
    assert_eq!(code, 0);
}

#[test]
fn compare_counts_tasks_the_candidate_did_not_run_as_missing_and_never_clears_it() {
    let test = Test::new().write("agent.sh", AGENT).write("evalgate.yaml", &suite_yaml("", &["a", "b"]));
    let base = test.args(&["run", "--out", "base"]).run();
    base.expect_code(0);
    let dir = base.dir.clone();
    let run = |args: &[&str]| {
        let out =
            std::process::Command::new(env!("CARGO_BIN_EXE_evalgate")).current_dir(&dir).args(args).output().unwrap();
        (out.status.code().unwrap(), String::from_utf8_lossy(&out.stdout).into_owned())
    };
    // The environment was not ready: no task ran, every one is skipped.
    let hook = "hooks:\n  before_all: [{run: 'exit 1', preflight: true}]";
    std::fs::write(dir.join("evalgate.yaml"), suite_yaml(hook, &["a", "b"])).unwrap();
    assert_eq!(run(&["run", "--out", "head"]).0, 3);
    let (code, out) = run(&["compare", "base/results.json", "head/results.json"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.starts_with("## ❌ evalgate compare: `test.evals.reg` not judged: the candidate did not run as planned"),
        "{out}"
    );
    assert!(out.contains("| candidate run | passed or failed | preflight failed: "), "{out}");
    assert!(out.contains("| missing tasks vs baseline | 0 | 2: a, b | ❌ |"), "{out}");
    // Even with every budget waived, a candidate that did not run is not "no regression".
    let (code, out) = run(&["compare", "base/results.json", "head/results.json", "--max-new-failures", "9"]);
    assert_eq!(code, 1, "{out}");
}

#[test]
fn update_baseline_writes_the_results_after_a_passing_run() {
    let run = Test::new()
        .write("agent.sh", AGENT)
        .write("evalgate.yaml", &suite_yaml("regression: {baseline: .evalgate/baseline.json}", &["a"]))
        .args(&["run", "--update-baseline"])
        .run();
    run.expect_messages(
        r#"
            warning: baseline [DIR]/.evalgate/baseline.json does not exist; the regression gate is skipped
            baseline updated: [DIR]/.evalgate/baseline.json
        "#,
    );
    run.expect_code(0);
    let baseline = run.json(".evalgate/baseline.json");
    assert_eq!(baseline["format"], "evalgate-results/1");
    assert_eq!(baseline["tasks"][0]["id"], "a");
    let run = Test::new()
        .write("agent.sh", AGENT)
        .write("evalgate.yaml", &suite_yaml("", &["a"]))
        .args(&["run", "--update-baseline"])
        .run();
    run.expect_messages(
        r#"
            error: --update-baseline needs a baseline path: --baseline FILE or `regression.baseline` in evalgate.yaml
        "#,
    );
    run.expect_code(2);
}

#[test]
fn repeated_trials_pass_with_min_pass_and_are_flaky() {
    // Exactly one of the five concurrent trials wins the mkdir and answers wrong.
    let agent = "#!/bin/sh\nif mkdir lost.lock 2>/dev/null; then echo wrong; else echo right; fi\n";
    let yaml = "evalgate: 1\nsuite: t\nagents: {bot: {command: [./agent.sh]}}\ntasks:\n  - id: flaky\n    prompt: x\n    repeat: 5\n    min_pass: 3\n    grade: [{type: contains, value: right}]\n";
    let run = Test::new().write("agent.sh", agent).write("evalgate.yaml", yaml).args(&["run", "-j", "3"]).run();
    run.expect_code(0);
    let task = run.task("flaky");
    assert_eq!(task["status"], "passed");
    assert_eq!(task["flaky"], true);
    assert_eq!(task["score"], 0.8);
    assert_eq!(task["trials"].as_array().unwrap().len(), 5);
    assert_eq!((task["pass_at_k"].as_f64(), task["pass_hat_k"].as_f64()), (Some(1.0), Some(0.0)));
    assert_eq!(run.results()["totals"]["flaky"], 1);
    assert!(
        run.read("evalgate-out/junit.xml")
            .contains("<flakyFailure message=\"`contains` failed: output does not contain &quot;right&quot;\"")
    );
    assert!(run.read("evalgate-out/summary.md").contains("| `flaky` | 4/5 | 3 | passed |"));

    // Without min_pass every trial must pass; --repeat overrides the suite.
    let yaml = "
        evalgate: 1
        suite: t
        agents: {bot: {command: [./agent.sh]}}
        tasks:
          - id: strict
            prompt: x
            grade: [{type: contains, value: right}]
        ";
    let run = Test::new().write("agent.sh", agent).file("evalgate.yaml", yaml).args(&["run", "--repeat", "3"]).run();
    run.expect_code(1);
    let task = run.task("strict");
    assert_eq!(task["status"], "failed");
    assert!(task["reason"].as_str().unwrap().starts_with("2/3 trials passed, 3 required; trial"), "{task}");
}

#[test]
fn shards_cover_every_task_once_and_merge_to_the_unsharded_verdict() {
    let ids: Vec<String> = (0..10).map(|i| format!("t{i}")).collect();
    let id_refs: Vec<&str> = ids.iter().map(String::as_str).collect();
    let test = Test::new()
        .write("agent.sh", AGENT)
        .write("fail-t4", "")
        .write("fail-t7", "")
        .write("evalgate.yaml", &suite_yaml("thresholds: {pass_score: 0.7}", &id_refs));
    let dir = test.path().to_owned();
    let full = test.args(&["run", "--out", "full"]).run();
    full.expect_code(0);
    let evalgate = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_evalgate")).current_dir(&dir).args(args).output().unwrap()
    };
    let mut seen = Vec::new();
    for k in 1..=3 {
        let out = evalgate(&["run", "--shard", &format!("{k}/3"), "--out", &format!("shard{k}")]);
        assert_eq!(out.status.code(), Some(0));
        let results: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join(format!("shard{k}/results.json"))).unwrap())
                .unwrap();
        let shard_ids: Vec<String> =
            results["tasks"].as_array().unwrap().iter().map(|t| t["id"].as_str().unwrap().to_owned()).collect();
        // Round-robin in suite order, the same every time.
        let expected: Vec<String> = ids.iter().skip(k - 1).step_by(3).cloned().collect();
        assert_eq!(shard_ids, expected);
        let listed = evalgate(&["list", "--filter", "*"]);
        assert!(listed.status.success());
        seen.extend(shard_ids);
    }
    seen.sort();
    let mut all = ids.clone();
    all.sort();
    assert_eq!(seen, all, "every task exactly once");

    let merged =
        evalgate(&["merge", "shard1/results.json", "shard2/results.json", "shard3/results.json", "-o", "merged.json"]);
    assert_eq!(merged.status.code(), Some(0), "{}", String::from_utf8_lossy(&merged.stderr));
    let merged: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("merged.json")).unwrap()).unwrap();
    let full: Value = full.json("full/results.json");
    assert_eq!(merged["totals"]["score"], full["totals"]["score"]);
    assert_eq!(merged["verdict"]["passed"], full["verdict"]["passed"]);
    assert_eq!(merged["verdict"]["checks"], full["verdict"]["checks"]);
    let merged_ids: Vec<&str> = merged["tasks"].as_array().unwrap().iter().map(|t| t["id"].as_str().unwrap()).collect();
    assert_eq!(merged_ids, id_refs);

    let report = evalgate(&["report", "merged.json", "--out", "merged-out", "--gate"]);
    assert_eq!(report.status.code(), Some(0));
    assert!(dir.join("merged-out/junit.xml").exists() && dir.join("merged-out/summary.md").exists());
    // Giving a shard twice is refused.
    let twice = evalgate(&["merge", "shard1/results.json", "shard1/results.json", "-o", "bad.json"]);
    assert_eq!(twice.status.code(), Some(2));
}

/// Shards of one plan run by different evalgate versions, or one replayed from a cassette
/// beside one asked live, are not one run: `merge` refuses them, naming the difference.
#[test]
fn shards_of_other_versions_or_other_model_traffic_are_not_merged() {
    let test = Test::new().write("agent.sh", AGENT).write("evalgate.yaml", &suite_yaml("", &["a", "b"]));
    let dir = test.path().to_owned();
    let first = test.args(&["run", "--shard", "1/2", "--out", "s1"]).expect_messages("  shard 1 of 2: the gate is decided on the merged results (`evalgate merge`, then `evalgate report --gate`)\n").run(); // holds the directory
    first.expect_code(0);
    assert_eq!(evalgate_in(&dir, &["run", "--shard", "2/2", "--out", "s2"], &[]).0, 0);
    let edit = |edit: &dyn Fn(&mut Value)| {
        let path = dir.join("s2/results.json");
        let mut shard: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        edit(&mut shard);
        std::fs::write(dir.join("edited.json"), shard.to_string()).unwrap();
        evalgate_in(&dir, &["merge", "s1/results.json", "edited.json", "-o", "m.json"], &[])
    };
    let (code, err) = edit(&|_| {});
    assert_eq!(code, 0, "{err}");
    let (code, err) = edit(&|r| r["evalgate_version"] = "0.0.1".into());
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("are not parts of one plan: evalgate versions `"), "{err}");
    assert!(err.contains("` and `0.0.1`"), "{err}");
    // The second shard replayed its answers; the first asked live.
    let (code, err) = edit(&|r| {
        r["cassette"] = serde_json::json!({"path": "cassettes/t.jsonl", "mode": "replay", "replayed": 2, "recorded": 0, "missed": 0});
    });
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("model traffic `live` and `cassette replay`"), "{err}");
}

#[test]
fn a_failing_merged_gate_exits_1_from_report() {
    let test =
        Test::new().write("agent.sh", AGENT).write("fail-a", "").write("evalgate.yaml", &suite_yaml("", &["a", "b"]));
    let dir = test.path().to_owned();
    let shard = test.args(&["run", "--shard", "1/2", "--out", "s1"]).run();
    shard.expect_code(0);
    assert!(shard.stderr_has("DEFERRED test.evals.reg"), "{}", shard.stderr);
    assert!(shard.stderr_has("shard 1 of 2: the gate is decided on the merged results"), "{}", shard.stderr);
    let evalgate = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_evalgate")).current_dir(&dir).args(args).output().unwrap()
    };
    assert_eq!(evalgate(&["run", "--shard", "2/2", "--out", "s2"]).status.code(), Some(0));
    assert_eq!(evalgate(&["merge", "s1/results.json", "s2/results.json", "-o", "m.json"]).status.code(), Some(0));
    assert_eq!(evalgate(&["report", "m.json", "--gate"]).status.code(), Some(1));
    // A shard with no task exits 0 with a notice.
    let empty = evalgate(&["run", "--shard", "3/3", "--out", "s3", "--filter", "a"]);
    assert_eq!(empty.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&empty.stderr).contains("has no task"));
}

#[test]
fn report_gate_and_compare_give_the_verdict_run_gave_on_the_same_results() {
    let test = Test::new()
        .write("agent.sh", AGENT)
        .write("evalgate.yaml", &suite_yaml("thresholds: {pass_score: 0.5}", &["a", "b", "c"]));
    let dir = test.path();
    let code = |args: &[&str]| evalgate_in(dir, args, &[]).0;
    assert_eq!(code(&["run", "--out", "base"]), 0);
    // `b` newly fails: the score holds, the regression check does not.
    std::fs::write(dir.join("fail-b"), "").unwrap();
    assert_eq!(code(&["run", "--out", "worse", "--baseline", "base/results.json"]), 1);
    assert_eq!(code(&["report", "worse/results.json", "--gate"]), 1);
    assert_eq!(code(&["compare", "base/results.json", "worse/results.json"]), 1);
    std::fs::remove_file(dir.join("fail-b")).unwrap();
    assert_eq!(code(&["run", "--out", "same", "--baseline", "base/results.json"]), 0);
    assert_eq!(code(&["report", "same/results.json", "--gate"]), 0);
    assert_eq!(code(&["compare", "base/results.json", "same/results.json"]), 0);
    // A shard's run succeeds and defers; its file, gated on its own, is never a pass.
    assert_eq!(code(&["run", "--out", "s1", "--shard", "1/2"]), 0);
    let (report, stderr) = evalgate_in(dir, &["report", "s1/results.json", "--gate"], &[]);
    assert_eq!(report, 1, "{stderr}");
    assert!(stderr.contains("DEFERRED test.evals.reg"), "{stderr}");
    let (compare, stderr) = evalgate_in(dir, &["compare", "base/results.json", "s1/results.json"], &[]);
    assert_eq!(compare, 1, "{stderr}");
}

/// Runs `args` with the real binary in `dir`: (exit code, stderr).
fn evalgate_in(dir: &std::path::Path, args: &[&str], env: &[(&str, &str)]) -> (i32, String) {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_evalgate"));
    command.current_dir(dir).args(args).env_remove("GITHUB_SHA").env_remove("GITHUB_ACTIONS");
    for (k, v) in env {
        command.env(k, v);
    }
    let out = command.output().unwrap();
    (out.status.code().unwrap(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn a_merge_keeps_the_shards_regression_verdict_when_the_baseline_is_not_there() {
    let ids = ["a", "b", "c", "d"];
    // Only the regression check fails: 3 of 4 tasks pass the threshold.
    let extra = "thresholds: {pass_score: 0.7}\nregression: {baseline: baseline.json, max_new_failures: 0}";
    let head = baseline_then(extra, &ids, &[("fail-c", "")], &ids);
    head.expect_messages("  warning: inconclusive: too few tasks to tell noise from change: 4 comparable task(s) (1 worse, 0 better), fewer than min_tasks 10; the gate passes with this warning unless a task that passed every trial in the baseline fails every trial now. With these trials a flaky task can fail every trial after passing every one in up to 68.4% of runs with no change; with 4 trials that every run makes on both sides (`repeat: 4`, or adaptive trials with `min: 4`) that stays under α. Add tasks (or compare against a baseline with the same tasks) for a statistical verdict.\n");
    head.expect_code(1);
    let dir = head.dir.clone();
    let full = head.results();
    for k in 1..=2 {
        let (code, err) = evalgate_in(&dir, &["run", "--shard", &format!("{k}/2"), "--out", &format!("s{k}")], &[]);
        assert_eq!(code, 0, "{err}");
    }
    // The merging job of the documented matrix has the shards' results, not the baseline.
    std::fs::remove_file(dir.join("baseline.json")).unwrap();
    let (code, err) = evalgate_in(&dir, &["merge", "s2/results.json", "s1/results.json", "-o", "m.json"], &[]);
    assert_eq!(code, 0, "{err}");
    let merged: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("m.json")).unwrap()).unwrap();
    assert_eq!(
        merged["verdict"]["checks"], full["verdict"]["checks"],
        "the unsharded run's checks, regression included"
    );
    assert_eq!(merged["verdict"]["outcome"], full["verdict"]["outcome"]);
    assert_eq!(merged["verdict"]["outcome"]["failed_checks"], serde_json::json!(["new failures vs baseline"]));
    assert_eq!(check(&merged, "new failures vs baseline")["actual"], "1: c");
    assert_eq!(evalgate_in(&dir, &["report", "m.json", "--out", "m-out", "--gate"], &[]).0, 1);

    // Shards that do not record their baseline (an older version) with the baseline gone:
    // incomplete, never a pass by omission.
    for k in 1..=2 {
        let path = dir.join(format!("s{k}/results.json"));
        let mut shard: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        shard["regression"].as_object_mut().unwrap().remove("compared_with").unwrap();
        std::fs::write(&path, shard.to_string()).unwrap();
    }
    let (code, err) = evalgate_in(&dir, &["merge", "s1/results.json", "s2/results.json", "-o", "old.json"], &[]);
    assert_eq!(code, 0, "{err}");
    let merged: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("old.json")).unwrap()).unwrap();
    assert_eq!(merged["verdict"]["outcome"]["status"], "incomplete");
    assert!(
        merged["verdict"]["outcome"]["reason"].as_str().unwrap().contains(
            "the shards were compared with the baseline baseline.json, which cannot be read here and which they do not record"
        ),
        "{merged}"
    );
    assert_eq!(evalgate_in(&dir, &["report", "old.json", "--out", "old-out", "--gate"], &[]).0, 1);
}

#[test]
fn shards_of_different_plans_are_not_merged_and_file_order_does_not_matter() {
    let ids = ["a", "b", "c", "d"];
    let test = Test::new().write("agent.sh", AGENT).write("fail-b", "").write("evalgate.yaml", &suite_yaml("", &ids));
    let dir = test.path().to_owned();
    let shard = |k: u32, extra: &[&str], env: &[(&str, &str)]| {
        let out = format!("s{k}{}", extra.join("").replace(['-', '*', ' '], ""));
        let mut args = vec!["run".to_owned(), "--shard".into(), format!("{k}/2"), "--out".into(), out.clone()];
        args.extend(extra.iter().map(|s| s.to_string()));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        evalgate_in(&dir, &args, env);
        format!("{out}/results.json")
    };
    // Shard 2's job was re-run (attempt 2 of the same workflow run).
    let run = |attempt| [("GITHUB_RUN_ID", "42"), ("GITHUB_RUN_ATTEMPT", attempt)];
    let (s1, s2) = (shard(1, &[], &run("1")), shard(2, &[], &run("2")));
    // The same merged file whichever order the shards are given in.
    assert_eq!(evalgate_in(&dir, &["merge", &s1, &s2, "-o", "m12.json"], &[]).0, 0);
    assert_eq!(evalgate_in(&dir, &["merge", &s2, &s1, "-o", "m21.json"], &[]).0, 0);
    let m12 = std::fs::read_to_string(dir.join("m12.json")).unwrap();
    assert!(m12 == std::fs::read_to_string(dir.join("m21.json")).unwrap(), "the merged file depends on file order");
    assert!(m12.contains("\"definitions\""), "results carry the plan's fingerprint");

    let refused = |other: &str, expected: &str| {
        let (code, err) = evalgate_in(&dir, &["merge", &s1, other, "-o", "bad.json"], &[]);
        assert_eq!(code, 2, "{err}");
        assert!(err.contains("are not parts of one plan") && err.contains(expected), "{expected}: {err}");
        assert!(!dir.join("bad.json").exists());
    };
    refused(&shard(2, &["--filter", "[abc]"], &[]), "selection `none` and `--filter [abc]`");
    refused(&shard(2, &[], &[("GITHUB_SHA", "0123abcd")]), "commit `unknown` and `0123abcd`");
    std::fs::write(dir.join("evalgate.yaml"), suite_yaml("thresholds: {pass_score: 0.5}", &ids)).unwrap();
    refused(&shard(2, &[], &[]), "thresholds `none` and `{\"pass_score\":0.5,");
    let changed = suite_yaml("", &ids).replace("value: right", "value: rig");
    std::fs::write(dir.join("evalgate.yaml"), changed).unwrap();
    refused(&shard(2, &[], &[]), "task definitions (another commit or suite?)");
}

#[test]
fn more_required_passes_than_trials_is_invalid_never_fewer() {
    let yaml = "evalgate: 1\nsuite: t\nagents: {bot: {command: [echo, right]}}\ndefaults: {min_pass: 2}\ntasks:\n  - id: own\n    prompt: x\n    min_pass: 2\n    grade: [{type: contains, value: right}]\n  - id: inherited\n    prompt: x\n    grade: [{type: contains, value: right}]\n";
    let run = Test::new().write("evalgate.yaml", yaml).args(&["check"]).run();
    run.expect_code(2);
    assert!(
        run.stderr_has(
            "evalgate.yaml:8:15: tasks[0].min_pass: `min_pass` (2) is more than the task's 1 trial(s); set `repeat`"
        ),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("tasks[1]: `min_pass` (2) (from `defaults`) is more than the task's 1 trial(s); set `repeat`"),
        "{}",
        run.stderr
    );
    // --repeat may not ask for fewer trials than a task must pass.
    let yaml = "
        evalgate: 1
        suite: t
        agents: {bot: {command: [echo, right]}}
        tasks:
          - id: two
            prompt: x
            repeat: 3
            min_pass: 2
            grade: [{type: contains, value: right}]
        ";
    let run = Test::new().file("evalgate.yaml", yaml).args(&["run", "--repeat", "1"]).run();
    run.expect_messages(
        r#"
            error: --repeat 1 is fewer trials than these tasks must pass (`min_pass`): two (2)
        "#,
    );
    run.expect_code(2);
    assert_eq!(run.stderr, "error: --repeat 1 is fewer trials than these tasks must pass (`min_pass`): two (2)\n");
}
