//! The paired regression test through the real binary: a baseline run, then a candidate run
//! of a synthetic agent whose pass/fail per task is set by files, judged against it.

use crate::common::{Run, Test};
use serde_json::{Value, json};

/// Fails task T when `fail-T` exists; with `flaky-T`, fails trials whose number (counted in
/// `count-T`, the suite runs with `-j 1`) is in that file.
const AGENT: &str = r#"#!/bin/sh
task="$EVALGATE_TASK_ID"
echo x >> "count-$task"
n=$(wc -l < "count-$task" | tr -d ' ')
if [ -f "fail-$task" ] || grep -qx "$n" "flaky-$task" 2>/dev/null; then echo wrong; else echo "right $task"; fi
"#;

fn suite(extra: &str, ids: &[String], prompt_of: impl Fn(&str) -> String) -> String {
    let tasks: String = ids
        .iter()
        .map(|id| {
            format!("  - id: {id}\n    prompt: {}\n    grade: [{{type: contains, value: right}}]\n", prompt_of(id))
        })
        .collect();
    format!(
        "evalgate: 1\nsuite: test.evals.paired\nagents: {{bot: {{command: [./agent.sh]}}}}\nthresholds: {{pass_score: 0.1}}\n{extra}\ntasks:\n{tasks}"
    )
}

fn ids(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("t{i}")).collect()
}

/// The files that make tasks fail.
fn failing(ids: impl IntoIterator<Item = usize>) -> Vec<(String, String)> {
    ids.into_iter().map(|i| (format!("fail-t{i}"), String::new())).collect()
}

/// Runs the baseline (`n` tasks, `base` files), then the candidate (`head_ids`, `head` files,
/// `extra` in the suite, `args` after `run`) against it.
#[track_caller]
fn candidate(
    n: usize,
    base: &[(String, String)],
    head_ids: &[String],
    head: &[(String, String)],
    extra: &str,
    args: &[&str],
) -> Run {
    candidate_of(&suite("", &ids(n), |_| "x".into()), &[], base, head_ids, head, extra, args, &|_| "x".into())
}

/// [`candidate`] with the baseline's suite and extra arguments given, and the candidate's
/// prompts (or any more keys of a task) from `prompt_of`.
#[allow(clippy::too_many_arguments)]
#[track_caller]
fn candidate_of(
    base_suite: &str,
    base_args: &[&str],
    base: &[(String, String)],
    head_ids: &[String],
    head: &[(String, String)],
    extra: &str,
    args: &[&str],
    prompt_of: &dyn Fn(&str) -> String,
) -> Run {
    let mut test = Test::new().write("agent.sh", AGENT).write("evalgate.yaml", base_suite);
    for (name, contents) in base {
        test = test.write(name, contents);
    }
    let mut full = vec!["run", "-j", "1"];
    full.extend_from_slice(base_args);
    let baseline = test.args(&full).run();
    assert!(baseline.code <= 1, "{}", baseline.stderr);
    let results = baseline.read("evalgate-out/results.json");
    let mut test = Test::new().write("agent.sh", AGENT).write("baseline.json", &results).write(
        "evalgate.yaml",
        &suite(&format!("regression: {{baseline: baseline.json{extra}}}"), head_ids, prompt_of),
    );
    for (name, contents) in head {
        test = test.write(name, contents);
    }
    let mut full = vec!["run", "-j", "1"];
    full.extend_from_slice(args);
    test.args(&full).run()
}

fn check<'a>(results: &'a Value, name: &str) -> Option<&'a Value> {
    results["verdict"]["checks"].as_array().unwrap().iter().find(|c| c["name"] == name)
}

#[test]
fn a_clear_regression_fails_with_the_numbers_and_noise_alone_cannot() {
    // 200 tasks: t0–t1 fail in the baseline only (2 better), t2–t21 in the candidate only
    // (20 worse), t22–t29 on both sides.
    let run = candidate(200, &failing((0..2).chain(22..30)), &ids(200), &failing(2..30), "", &[]);
    run.expect_code(1);
    let results = run.results();
    let test = &results["regression"]["test"];
    let keys: Vec<&str> = test.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "method",
            "pairs",
            "discordant_worse",
            "discordant_better",
            "delta",
            "ci_low",
            "ci_high",
            "p_value",
            "alpha",
            "mde",
            "verdict",
            "added",
            "missing",
            "not_comparable"
        ]
    );
    assert_eq!(test["method"], "mcnemar-midp");
    assert_eq!(
        (test["pairs"].as_u64(), test["discordant_worse"].as_u64(), test["discordant_better"].as_u64()),
        (Some(200), Some(20), Some(2))
    );
    assert_eq!((test["delta"].as_f64(), test["verdict"].as_str()), (Some(-0.09), Some("regression")));
    // Tango's interval (tests/fixtures/stats/reference.py), and the larger of the mid-p of
    // 20 against 2 (3.3e-5) and McNemar's score test's (scipy: norm.cdf(−18/√22)).
    assert!((test["ci_high"].as_f64().unwrap() + 0.05571546410376386).abs() < 1e-8, "{test}");
    assert!((test["p_value"].as_f64().unwrap() - 6.211806171561044e-05).abs() < 1e-9, "{test}");
    let c = check(&results, "paired test vs baseline").unwrap();
    assert_eq!(c["passed"], false);
    assert_eq!(
        c["actual"],
        "−9.0 points (90% interval −13.2 to −5.6), 20 task(s) worse and 2 better, p < 0.0001: regression"
    );
    assert_eq!(results["verdict"]["outcome"]["failed_checks"], json!(["paired test vs baseline"]));
    // With enough tasks the paired test is the default gate: no "no new failures" budget.
    assert!(check(&results, "new failures vs baseline").is_none());
    let md = run.read("evalgate-out/summary.md");
    assert!(md.contains("**Paired test:** −9.0 points (90% interval −13.2 to −5.6)"), "{md}");
    assert!(
        md.contains("this suite can detect drops of 6.3 points or more (caught about three times in four)"),
        "{md}"
    );
    assert!(run.stderr_has("FAIL paired test vs baseline"), "{}", run.stderr);
    let junit = run.read("evalgate-out/junit.xml");
    assert!(
        junit.contains(r#"<property name="paired_test" value="−9.0 points (90% interval −13.2 to −5.6)"#),
        "{junit}"
    );
}

#[test]
fn noise_passes_where_the_new_failures_budget_would_have_failed() {
    // 50 tasks, 3 worse and 2 better.
    let run = candidate(50, &failing(0..2), &ids(50), &failing(2..5), "", &[]);
    run.expect_code(0);
    let results = run.results();
    let test = &results["regression"]["test"];
    assert_eq!((test["verdict"].as_str(), test["discordant_worse"].as_u64()), (Some("no_regression"), Some(3)));
    assert!(test["ci_low"].as_f64().unwrap() < 0.0 && test["ci_high"].as_f64().unwrap() > 0.0);
    assert!(check(&results, "new failures vs baseline").is_none());
    // The budgets still gate when set.
    let run = candidate(50, &failing(0..2), &ids(50), &failing(2..5), ", max_new_failures: 0", &[]);
    run.expect_code(1);
    assert_eq!(run.results()["verdict"]["outcome"]["failed_checks"], json!(["new failures vs baseline"]));
}

#[test]
fn too_few_tasks_are_inconclusive_passing_in_pr_and_failing_in_release() {
    let run = candidate(5, &[], &ids(5), &[], "", &[]);
    run.expect_code(0);
    let results = run.results();
    assert_eq!(results["regression"]["test"]["verdict"], "inconclusive");
    let c = check(&results, "paired test vs baseline").unwrap();
    assert_eq!(
        (c["passed"].as_bool(), c["actual"].as_str()),
        (Some(true), Some("inconclusive: 5 comparable task(s), fewer than min_tasks 10"))
    );
    // Below min_tasks no task may go from passing every trial to failing every trial.
    let c = check(&results, "new failures vs baseline").unwrap();
    assert_eq!((c["budget"].as_str(), c["passed"].as_bool()), (Some("≤ 0 that now fail every trial"), Some(true)));
    // Said in one plain line, with the reason, the figures and what to do, in the terminal and
    // the Markdown.
    let line = "inconclusive: too few tasks to tell noise from change: 5 comparable task(s) (0 worse, 0 better), \
                fewer than min_tasks 10; the gate passes with this warning unless a task that passed every trial in \
                the baseline fails every trial now. With these trials a flaky task can fail every trial after \
                passing every one in up to 76.3% of runs with no change; with 4 trials that every run makes on both \
                sides (`repeat: 4`, or adaptive trials with `min: 4`) that stays under α. Add tasks (or compare \
                against a baseline with the same tasks) for a statistical verdict.";
    assert!(run.stderr_has(&format!("warning: {line}")), "{}", run.stderr);
    // (Markdown escapes the `_` of `min_tasks` and the backquotes: it renders the same.)
    let escaped = line.replace('_', "\\_").replace('`', "\\`");
    assert!(run.read("evalgate-out/summary.md").contains(&format!("> ⚠️ {escaped}")));
    // The command line overrides the suite: release needs evidence.
    let run = candidate(5, &[], &ids(5), &[], "", &["--regression-mode", "release"]);
    run.expect_code(1);
    assert!(run.stderr_has("fewer than min_tasks 10; the gate fails: a release needs evidence."), "{}", run.stderr);
    assert_eq!(run.results()["verdict"]["outcome"]["failed_checks"], json!(["paired test vs baseline"]));
    // And `min_tasks` from the suite lowers the bar.
    let run = candidate(5, &[], &ids(5), &[], ", min_tasks: 5", &[]);
    run.expect_code(0);
    assert_eq!(run.results()["regression"]["test"]["verdict"], "no_regression");
}

#[test]
fn release_names_a_suite_too_small_to_rule_out_the_margin() {
    // 20 tasks, one worse and one better: nothing moved, but 20 tasks cannot show "at most 5
    // points worse".
    let run = candidate(20, &failing([0]), &ids(20), &failing([1]), ", mode: release", &[]);
    run.expect_messages("  warning: inconclusive: this suite can only detect drops of 31.0 points, more than the margin of 5.0 points, so the interval −15.7 to +15.7 points cannot rule out a drop beyond the margin; the gate fails. Add tasks or trials per task (`repeat`), or run `evalgate calibrate` to see how many are needed (docs/statistics.md).\n");
    run.expect_code(1);
    let test = &run.results()["regression"]["test"];
    assert_eq!(test["verdict"], "inconclusive");
    assert!(test["mde"].as_f64().unwrap() > 0.05, "{test}");
    let warning = run.stderr.lines().find(|l| l.contains("warning: inconclusive")).unwrap_or_default();
    assert!(
        warning.contains("points, more than the margin of 5.0 points, so the interval ")
            && warning.ends_with("cannot rule out a drop beyond the margin; the gate fails. Add tasks or trials per task (`repeat`), or run `evalgate calibrate` to see how many are needed (docs/statistics.md)."),
        "{}",
        run.stderr
    );
    assert!(run.read("evalgate-out/summary.md").contains("> ⚠️ inconclusive: this suite can only detect drops of"));
}

#[test]
fn release_passes_a_solid_candidate_as_non_inferior() {
    let run = candidate(200, &failing(0..2), &ids(200), &failing(2..4), ", mode: release", &[]);
    run.expect_code(0);
    let test = &run.results()["regression"]["test"];
    assert_eq!(test["verdict"], "non_inferior");
    assert!(test["ci_low"].as_f64().unwrap() > -0.05, "{test}");
    let c = check(&run.results(), "paired test vs baseline").unwrap().clone();
    assert_eq!(c["budget"], "non-inferior within 5.0 points (α 0.05)");
}

#[test]
fn missing_tasks_fail_unless_filtered_and_changed_ones_are_not_compared() {
    let head_ids: Vec<String> = ids(12).into_iter().filter(|id| id != "t11").collect();
    // t10's prompt changes: another definition.
    let test = Test::new().write("agent.sh", AGENT).write("evalgate.yaml", &suite("", &ids(12), |_| "x".into()));
    let baseline = test.args(&["run", "-j", "1"]).run();
    baseline.expect_code(0);
    let results = baseline.read("evalgate-out/results.json");
    let changed =
        suite(
            "regression: {baseline: baseline.json}",
            &head_ids,
            |id| if id == "t10" { "y".into() } else { "x".into() },
        );
    let with = |args: &[&str]| {
        let mut full = vec!["run", "-j", "1"];
        full.extend_from_slice(args);
        Test::new()
            .write("agent.sh", AGENT)
            .write("baseline.json", &results)
            .write("evalgate.yaml", &changed)
            .args(&full)
            .run()
    };
    let run = with(&[]);
    run.expect_code(1);
    let r = run.results();
    let test = &r["regression"]["test"];
    assert_eq!((test["missing"].clone(), test["not_comparable"].clone()), (json!(["t11"]), json!(["t10"])));
    assert_eq!(test["pairs"], 10);
    assert_eq!(check(&r, "missing tasks vs baseline").unwrap()["actual"], "1: t11");
    assert_eq!(r["verdict"]["outcome"]["failed_checks"], json!(["missing tasks vs baseline"]));
    let md = run.read("evalgate-out/summary.md");
    assert!(
        md.contains("- ❌ missing from this run (1): `t11`")
            && md.contains("- changed definition, not compared: `t10`"),
        "{md}"
    );
    // A run filtered to some tasks does not miss the others (t11 was removed from the suite,
    // not filtered: it stays missing).
    let run = with(&["--filter", "t1*"]);
    run.expect_messages("  warning: inconclusive: too few tasks to tell noise from change: 1 comparable task(s) (0 worse, 0 better), fewer than min_tasks 10; the gate passes with this warning unless a task that passed every trial in the baseline fails every trial now. With these trials a flaky task can fail every trial after passing every one in up to 25.0% of runs with no change; with 3 trials that every run makes on both sides (`repeat: 3`, or adaptive trials with `min: 3`) that stays under α. Add tasks (or compare against a baseline with the same tasks) for a statistical verdict.\n");
    run.expect_code(1);
    assert_eq!(run.results()["regression"]["test"]["missing"], json!(["t11"]));
    let whole = suite("regression: {baseline: baseline.json}", &ids(12), |_| "x".into());
    let run = Test::new()
        .write("agent.sh", AGENT)
        .write("baseline.json", &results)
        .write("evalgate.yaml", &whole)
        .args(&["run", "-j", "1", "--filter", "t1*"])
        .run();
    run.expect_messages("  warning: inconclusive: too few tasks to tell noise from change: 3 comparable task(s) (0 worse, 0 better), fewer than min_tasks 10; the gate passes with this warning unless a task that passed every trial in the baseline fails every trial now. With these trials a flaky task can fail every trial after passing every one in up to 57.8% of runs with no change; with 3 trials that every run makes on both sides (`repeat: 3`, or adaptive trials with `min: 3`) that stays under α. Add tasks (or compare against a baseline with the same tasks) for a statistical verdict.\n");
    run.expect_code(0);
    let test = &run.results()["regression"]["test"];
    assert_eq!((test["missing"].clone(), test["pairs"].clone()), (json!([]), json!(3)));
    // `test: budgets` is wave 1: the removed task is listed, not gated, and no paired test runs.
    let budgets = changed.replace("{baseline: baseline.json}", "{baseline: baseline.json, test: budgets}");
    let run = Test::new()
        .write("agent.sh", AGENT)
        .write("baseline.json", &results)
        .write("evalgate.yaml", &budgets)
        .args(&["run", "-j", "1"])
        .run();
    run.expect_code(0);
    assert!(run.results()["regression"].get("test").is_none());
    assert_eq!(run.results()["regression"]["comparison"]["removed"], json!(["t11"]));
}

#[test]
fn repeated_trials_are_compared_task_by_task() {
    // The same 4 trials a side (a baseline of 1 trial would be compared on first trials).
    // 12 tasks, 4 trials each. In the candidate t0–t5 fail every trial and t6 fails one in
    // four: seven tasks worse, by 1 or by a quarter.
    let mut head = failing(0..6);
    head.push(("flaky-t6".into(), "2\n".into()));
    let base = suite("", &ids(12), |_| "x".into());
    let four = ["--repeat", "4"];
    let run = candidate_of(&base, &four, &[], &ids(12), &head, "", &four, &|_| "x".into());
    run.expect_code(1);
    let test = &run.results()["regression"]["test"];
    assert_eq!(test["method"], "paired-t");
    assert!(test.get("redesigned").is_none(), "{test}");
    assert_eq!((test["discordant_worse"].as_u64(), test["discordant_better"].as_u64()), (Some(7), Some(0)));
    assert!((test["delta"].as_f64().unwrap() + 6.25 / 12.0).abs() < 1e-9, "{test}");
    // The paired t-test on the twelve differences with the HC3 standard error (scipy:
    // t.cdf(mean / (sem · √(12/11)), 11); ttest_1samp's plain t gives 0.002192031259950682).
    assert!((test["p_value"].as_f64().unwrap() - 0.0028647399115661466).abs() < 1e-9, "{test}");
    assert!(test["ci_high"].as_f64().unwrap() < 0.0, "{test}");
    assert_eq!(test["verdict"], "regression");
}

/// 12 tasks of 8 trials each on both sides.
#[track_caller]
fn eight_trials(head: &[(String, String)], extra: &str, prompt_of: &dyn Fn(&str) -> String) -> Run {
    let base = suite("", &ids(12), |_| "x".into());
    candidate_of(&base, &["--repeat", "8"], &[], &ids(12), head, extra, &["--repeat", "8"], prompt_of)
}

#[test]
fn a_task_worse_beyond_chance_is_listed_as_suspect_and_gates_only_when_asked() {
    // t0 passes 8/8 in the baseline and 0/8 now: Fisher's p is 1/C(16, 8), times 12 (Holm).
    // One task of twelve is not a suite-wide regression.
    let run = eight_trials(&failing([0]), "", &|_| "x".into());
    run.expect_code(0);
    let results = run.results();
    assert_eq!(results["regression"]["test"]["verdict"], "no_regression");
    let flags = &results["regression"]["flags"];
    assert_eq!(flags["suspect"].as_array().unwrap().len(), 1, "{flags}");
    let t0 = &flags["suspect"][0];
    assert_eq!(
        (
            t0["id"].as_str(),
            t0["baseline_passed"].as_u64(),
            t0["candidate_passed"].as_u64(),
            t0["candidate_trials"].as_u64()
        ),
        (Some("t0"), Some(8), Some(0), Some(8))
    );
    assert!((t0["p_value"].as_f64().unwrap() - 1.0 / 12870.0).abs() < 1e-9, "{t0}");
    assert!((t0["p_holm"].as_f64().unwrap() - 12.0 / 12870.0).abs() < 1e-9, "{t0}");
    let line =
        "1 suspect task(s) (Fisher's exact test per task, Holm-corrected, α 0.05): t0 8/8 → 0/8 (Holm p = 0.0009)";
    assert!(run.stderr_has(&format!("suspect: {line}")), "{}", run.stderr);
    assert!(run.read("evalgate-out/summary.md").contains(&format!("**Suspect:** {line}")));
    assert!(check(&results, "suspect tasks vs baseline").is_none());
    // The policy key makes it gate.
    let run = eight_trials(&failing([0]), ", gate_on_suspect: true", &|_| "x".into());
    run.expect_messages("  suspect: 1 suspect task(s) (Fisher's exact test per task, Holm-corrected, α 0.05): t0 8/8 → 0/8 (Holm p = 0.0009)\n");
    run.expect_code(1);
    assert_eq!(run.results()["verdict"]["outcome"]["failed_checks"], json!(["suspect tasks vs baseline"]));
    assert_eq!(check(&run.results(), "suspect tasks vs baseline").unwrap()["actual"], "1: t0");
}

#[test]
fn a_golden_task_that_stops_always_passing_fails_the_gate() {
    // t1 and t2 are golden (which does not change their definition); t1 fails one trial in
    // eight now: no suspect (p = 0.5), no suite-wide regression, but a golden drop.
    let golden = |id: &str| if id == "t1" || id == "t2" { "x\n    golden: true".into() } else { "x".into() };
    let run = eight_trials(&[("flaky-t1".into(), "3\n".into())], "", &golden);
    run.expect_code(1);
    let results = run.results();
    assert_eq!(results["regression"]["test"]["pairs"], 12);
    assert_eq!(results["regression"]["flags"]["golden_dropped"], json!(["t1"]));
    assert_eq!(results["regression"]["flags"]["suspect"], json!([]));
    assert_eq!(results["verdict"]["outcome"]["failed_checks"], json!(["golden tasks vs baseline"]));
    assert_eq!(check(&results, "golden tasks vs baseline").unwrap()["actual"], "1: t1");
    assert!(run.read("evalgate-out/summary.md").contains("❌ **Golden task(s) no longer always passing:** `t1`"));
    // Every golden trial passing holds.
    let run = eight_trials(&[], "", &golden);
    run.expect_code(0);
    assert_eq!(check(&run.results(), "golden tasks vs baseline").unwrap()["passed"], true);
}

/// Below `min_tasks` with adaptive trials: a candidate that stops at its first failure
/// "fails every trial" with one failed trial, so the small-suite rule would fail runs of
/// flaky tasks with no change a third of the time against a fixed-4 baseline. It does not
/// judge those tasks and says why, with the trials that let it; with adaptive trials that
/// always run 4 (`min: 4`), a task that broke fails the gate again.
#[test]
fn a_small_suite_rule_judges_adaptive_trials_only_where_it_holds() {
    let base_suite = suite("", &ids(5), |_| "x".into());
    let broken = failing([0]);
    let run = candidate_of(&base_suite, &["--repeat", "4"], &[], &ids(5), &broken, "", &["--repeat", "auto"], &|_| {
        "x".into()
    });
    run.expect_code(0);
    let results = run.results();
    assert_eq!(results["regression"]["test"]["small_suite_unjudged"], 5, "{}", results["regression"]["test"]);
    let c = check(&results, "new failures vs baseline").unwrap();
    assert_eq!((c["actual"].as_str(), c["passed"].as_bool()), (Some("0"), Some(true)));
    assert!(
        run.stderr_has(
            "5 task(s) with adaptive trials are not judged by this rule: a task stops at its first failure, so one \
             failed trial is \"every trial\""
        ),
        "{}",
        run.stderr
    );
    assert!(run.stderr_has("(`repeat: 4`, or adaptive trials with `min: 4`) they are."), "{}", run.stderr);
    // Adaptive trials that always run 4: judged, and the broken task fails the gate.
    let repeat = "defaults: {repeat: {min: 4, max: 8, adaptive: true}}";
    let head_suite = |extra: &str| suite(&format!("{repeat}\n{extra}"), &ids(5), |_| "x".into());
    let mut test = Test::new().write("agent.sh", AGENT).write("evalgate.yaml", &head_suite(""));
    let baseline = test.args(&["run", "-j", "1"]).run();
    let base_results = baseline.read("evalgate-out/results.json");
    test = Test::new()
        .write("agent.sh", AGENT)
        .write("baseline.json", &base_results)
        .write("evalgate.yaml", &head_suite("regression: {baseline: baseline.json}"))
        .write("fail-t0", "");
    let run = test.args(&["run", "-j", "1"]).run();
    run.expect_messages("  warning: inconclusive: too few tasks to tell noise from change: 5 comparable task(s) (1 worse, 0 better), fewer than min_tasks 10; the gate passes with this warning unless a task that passed every trial in the baseline fails every trial now. With these trials a flaky task fails every trial after passing every one in at most 0.2% of runs with no change (under α). Add tasks (or compare against a baseline with the same tasks) for a statistical verdict.\n  note: 5 task(s) with adaptive trials are not tested per task for suspect drops (where a task stops depends on its outcomes)\n");
    run.expect_code(1);
    let results = run.results();
    assert!(results["regression"]["test"].get("small_suite_unjudged").is_none());
    let c = check(&results, "new failures vs baseline").unwrap();
    assert_eq!((c["actual"].as_str(), c["passed"].as_bool()), (Some("1: t0"), Some(false)));
}
