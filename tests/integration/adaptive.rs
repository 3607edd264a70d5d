//! Adaptive trials through the real binary: a seeded mix of always-passing, always-failing
//! and flaky agents, run with a fixed 8 trials and with `--repeat auto` (1 to 8, added only
//! while a task's verdict is unsettled): the same verdicts, far fewer trials.

use crate::common::{Run, Test, unindent};
use serde_json::Value;

/// Task `pass-*` always passes, `fail-*` never does, `flaky-*` passes on the trials whose
/// (task, trial number) hash is even: the same draw in every run (trials are counted in
/// `count-TASK`; the runs use `-j 1`).
const AGENT: &str = r#"#!/bin/sh
task="$EVALGATE_TASK_ID"
echo x >> "count-$task"
n=$(wc -l < "count-$task" | tr -d ' ')
case "$task" in
  pass-*) echo right ;;
  fail-*) echo wrong ;;
  *) h=$(printf '%s-%s' "$task" "$n" | cksum | cut -d' ' -f1); if [ $((h % 2)) = 0 ]; then echo right; else echo wrong; fi ;;
esac
"#;

fn suite(defaults: &str) -> String {
    let tasks: String = ["pass", "fail", "flaky"]
        .iter()
        .flat_map(|kind| {
            (0..10).map(move |i| {
                unindent(
                    "
                    - id: <kind>-<i>
                      prompt: x
                      grade: [{type: contains, value: right}]
                    ",
                )
                .replace("<kind>", kind)
                .replace("<i>", &i.to_string())
            })
        })
        .collect();
    format!("evalgate: 1\nsuite: t\nagents: {{bot: {{command: [./agent.sh]}}}}\n{defaults}tasks:\n{tasks}")
}

#[track_caller]
fn run(defaults: &str, args: &[&str]) -> Run {
    let run = Test::new().write("agent.sh", AGENT).write("evalgate.yaml", &suite(defaults)).args(args).run();
    assert!(run.code <= 1, "{}", run.stderr);
    run
}

/// (id, status, trials run) of every task.
fn tasks(run: &Run) -> Vec<(String, String, u64)> {
    let results = run.results();
    let tasks = results["tasks"].as_array().unwrap();
    tasks
        .iter()
        .map(|t: &Value| {
            (
                t["id"].as_str().unwrap().to_owned(),
                t["status"].as_str().unwrap().to_owned(),
                t["repeat"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn adaptive_trials_give_the_fixed_verdicts_with_far_fewer_trials() {
    let fixed = tasks(&run("", &["run", "-j", "1", "--repeat", "8"]));
    let auto_run = run("", &["run", "-j", "1", "--repeat", "auto"]);
    let adaptive = tasks(&auto_run);
    assert_eq!(fixed.len(), 30);
    let same = fixed.iter().zip(&adaptive).filter(|(f, a)| f.0 == a.0 && f.1 == a.1).count();
    assert!(same * 100 >= 95 * fixed.len(), "{same} of 30 verdicts agree:\n{fixed:?}\n{adaptive:?}");
    let (run_fixed, run_adaptive): (u64, u64) = (fixed.iter().map(|t| t.2).sum(), adaptive.iter().map(|t| t.2).sum());
    assert_eq!(run_fixed, 240);
    assert!(run_adaptive * 100 <= 60 * run_fixed, "{run_adaptive} of {run_fixed} trials: less than 40% saved");
    // Every always-passing task needed all 8 (every trial must pass); a failure settles at once.
    for (id, status, trials) in &adaptive {
        match id.split('-').next().unwrap() {
            "pass" => assert_eq!((status.as_str(), *trials), ("passed", 8), "{id}"),
            "fail" => assert_eq!((status.as_str(), *trials), ("failed", 1), "{id}"),
            _ => assert!(*trials >= 1 && *trials <= 8, "{id}"),
        }
    }
    let task = &auto_run.results()["tasks"][10];
    assert_eq!(task["trials_planned"], 8, "{task}");
    let summary = auto_run.read("evalgate-out/summary.md");
    assert!(summary.contains(&format!("Adaptive trials: {run_adaptive} of 240 run")), "{summary}");
}

#[test]
fn the_suite_key_starts_every_task_at_min_and_counts_min_pass_out_of_max() {
    // 2 of 4 must pass: a task passing its first 2 settles there, one failing 3 does.
    let run = run("defaults: {repeat: {min: 2, max: 4, adaptive: true}, min_pass: 2}\n", &["run", "-j", "1"]);
    for (id, status, trials) in tasks(&run) {
        match id.split('-').next().unwrap() {
            "pass" => assert_eq!((status.as_str(), trials), ("passed", 2), "{id}"),
            "fail" => assert_eq!((status.as_str(), trials), ("failed", 3), "{id}"),
            _ => assert!((2..=4).contains(&trials), "{id}: {trials}"),
        }
    }
}

/// A fixed-trial baseline against an adaptive run, nothing changed: before, stopping at the
/// first failure read a flaky task as failing more often than it does and the drop looked
/// like a regression. The two designs are compared on the trials both always run (the first),
/// the design is recorded per task, and the power line says why the comparison is weaker.
#[test]
fn a_fixed_baseline_against_adaptive_trials_is_compared_on_the_trials_both_ran() {
    let base = run("", &["run", "-j", "1", "--repeat", "8", "--out", "base"]);
    let dir = base.dir.clone();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_evalgate"))
        .current_dir(&dir)
        .args(["run", "-j", "1", "--repeat", "auto", "--baseline", "base/results.json", "--out", "head"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let head: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("head/results.json")).unwrap()).unwrap();
    let test = &head["regression"]["test"];
    assert_eq!((test["pairs"].as_u64(), test["redesigned"].as_u64()), (Some(30), Some(30)), "{test}");
    // The first trials, one a side: McNemar's mid-p with Tango's interval.
    assert_eq!(test["method"], "mcnemar-midp");
    assert_ne!(test["verdict"], "regression", "{test}");
    let design = &head["tasks"][0]["adaptive"];
    assert_eq!(*design, serde_json::json!({"min": 1, "max": 8, "min_pass": 8, "alpha": 0.05}));
    let summary = std::fs::read_to_string(dir.join("head/summary.md")).unwrap();
    assert!(summary.contains("30 task(s) ran other trials in the baseline"), "{summary}");
    assert!(summary.contains("30 task(s) ran adaptive trials"), "{summary}");
    assert!(stderr.contains("note: 30 task(s) with adaptive trials are not tested per task"), "{stderr}");
}

/// An adaptive task's score is its unbiased estimate, everywhere it is read: stopping at the
/// first failure, a flaky task that passed its first trial scores its passing trials' mean
/// (here 1), not the raw share (3 of 4 = 0.75); the raw counts stand beside it in
/// `results.json` and the terminal, and the aggregate score is the mean of the estimates. A
/// results file written with the raw share (an earlier evalgate) is read the same way.
#[test]
fn an_adaptive_tasks_score_is_its_unbiased_estimate_with_the_raw_counts_beside_it() {
    let auto_run = run("", &["run", "-j", "1", "--repeat", "auto"]);
    let results = auto_run.results();
    let tasks = results["tasks"].as_array().unwrap();
    let mut stopped_early = 0;
    for t in tasks {
        let (passed, ran) = (t["trials_passed"].as_u64().unwrap(), t["repeat"].as_u64().unwrap());
        let expected = if passed > 0 { 1.0 } else { 0.0 };
        assert_eq!(t["score"].as_f64(), Some(expected), "{t}");
        if passed > 0 && passed < ran {
            stopped_early += 1;
            let line = format!("[1.00 (unbiased; {passed} of {ran} trials passed)]");
            assert!(auto_run.stderr_has(&line), "{line}\n{}", auto_run.stderr);
        }
    }
    assert!(stopped_early > 0, "a flaky task passed some trials and then failed one");
    let mean = tasks.iter().map(|t| t["score"].as_f64().unwrap()).sum::<f64>() / tasks.len() as f64;
    assert!((results["totals"]["score"].as_f64().unwrap() - mean).abs() < 1e-9);

    // The same file with the raw shares, as an earlier evalgate wrote it: read unbiased.
    let mut raw = results.clone();
    for t in raw["tasks"].as_array_mut().unwrap() {
        let share = t["trials_passed"].as_f64().unwrap() / t["repeat"].as_f64().unwrap();
        t["score"] = share.into();
        t.as_object_mut().unwrap().remove("trials_passed");
    }
    std::fs::write(auto_run.dir.join("raw.json"), raw.to_string()).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_evalgate"))
        .current_dir(&auto_run.dir)
        .args(["compare", "evalgate-out/results.json", "raw.json", "--max-score-drop", "0"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "the same scores: no drop\n{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        stdout.contains("score drop vs baseline")
            || String::from_utf8_lossy(&out.stderr).contains("score drop vs baseline")
    );
}
