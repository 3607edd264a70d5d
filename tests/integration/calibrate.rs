//! `evalgate calibrate` through the real binary: an A/A test of a seeded flaky agent, and the
//! calibration file read back as `regression.noise`.

use crate::common::Test;

/// Answers right or wrong as line N of `outcomes-TASK` says (1 or 0) on its N-th call for
/// that task (the suite runs with `-j 1`); past the end, right.
const AGENT: &str = r#"#!/bin/sh
task="$EVALGATE_TASK_ID"
echo x >> "count-$task"
n=$(wc -l < "count-$task" | tr -d ' ')
if [ "$(sed -n "${n}p" "outcomes-$task" 2>/dev/null)" = "0" ]; then echo wrong; else echo right; fi
"#;

const TASKS: usize = 48;
const RUNS: usize = 3;

fn suite(extra: &str) -> String {
    let tasks: String = (0..TASKS)
        .map(|i| format!("  - id: t{i}\n    prompt: x\n    grade: [{{type: contains, value: right}}]\n"))
        .collect();
    format!("evalgate: 1\nsuite: test.calibrate\nagents: {{bot: {{command: [./agent.sh]}}}}\n{extra}\ntasks:\n{tasks}")
}

/// t0–t23 always pass, t24–t31 always fail, t32–t47 pass each run with probability ½
/// (seeded): enough churn that the noise, not the suite's size, limits what it detects.
fn outcomes() -> Vec<Vec<bool>> {
    let mut rng = fastrand::Rng::with_seed(2026);
    (0..TASKS)
        .map(|i| {
            (0..RUNS)
                .map(|_| {
                    if i < 24 {
                        true
                    } else if i < 32 {
                        false
                    } else {
                        rng.bool()
                    }
                })
                .collect()
        })
        .collect()
}

fn lines(runs: &[bool]) -> String {
    runs.iter().map(|p| if *p { "1\n" } else { "0\n" }).collect()
}

#[test]
fn an_a_a_run_measures_flips_and_its_file_informs_the_power_line() {
    let outcomes = outcomes();
    let mut test = Test::new().write("agent.sh", AGENT).write("evalgate.yaml", &suite(""));
    for (i, runs) in outcomes.iter().enumerate() {
        test = test.write(&format!("outcomes-t{i}"), &lines(runs));
    }
    let run = test.args(&["calibrate", "--runs", "3", "-j", "1"]).run();
    run.expect_code(0);
    // What the seeded draws imply: a task flips in a pair of runs when its verdicts differ.
    let pairs = [(0, 1), (0, 2), (1, 2)];
    let flips: Vec<usize> = outcomes.iter().map(|o| pairs.iter().filter(|(a, b)| o[*a] != o[*b]).count()).collect();
    let total: usize = flips.iter().sum();
    assert!(total > 0, "the seed must make some task flip");
    let rate = total as f64 / (TASKS * pairs.len()) as f64;
    let cal = run.json("evalgate-out/calibration.json");
    assert_eq!(cal["format"], "evalgate-calibration/1");
    assert_eq!((cal["runs"].as_u64(), cal["tasks"].as_u64(), cal["repeat"].as_u64()), (Some(3), Some(48), Some(1)));
    assert!((cal["flip_rate"].as_f64().unwrap() - rate).abs() < 1e-9, "{cal}");
    // One trial a side: a flip is a squared difference of 1.
    assert!((cal["discordance"].as_f64().unwrap() - rate).abs() < 1e-9, "{cal}");
    for (i, f) in flips.iter().enumerate() {
        let task = &cal["per_task"][i];
        assert_eq!(task["id"], format!("t{i}"));
        assert!((task["flip_rate"].as_f64().unwrap() - *f as f64 / 3.0).abs() < 1e-9, "{task}");
    }
    let mde = evalgate::stats::min_detectable_drop(TASKS, rate, 0.05, 1).unwrap();
    assert!((cal["mde"].as_f64().unwrap() - mde).abs() < 1e-8, "{cal}");
    let needed = evalgate::stats::tasks_to_detect(0.05, rate, 0.05, 1, 100_000).unwrap();
    assert_eq!(cal["recommended_tasks"].as_u64(), Some(needed as u64));
    assert_eq!(cal["detect"], 0.05);
    for line in [
        format!("verdict flips: {:.1}% of task verdicts between two runs", rate * 100.0),
        format!(
            "this suite can detect drops of {:.1} points or more (caught about three times in four, α 0.05)",
            mde * 100.0
        ),
        format!("or {needed} task(s) at 1 trial(s) each, with the same noise"),
    ] {
        assert!(run.stdout.contains(&line), "{line}\n{}", run.stdout);
    }
    for i in 1..=RUNS {
        assert!(run.dir.join(format!("evalgate-out/run-{i}/results.json")).exists());
    }

    // A later run, identical to the first A/A run: it sees no churn of its own, but with
    // `regression.noise` it does not claim more power than the calibration showed.
    let baseline = run.read("evalgate-out/run-1/results.json");
    let calibration = run.read("evalgate-out/calibration.json");
    let candidate = |extra: &str| {
        let mut test = Test::new()
            .write("agent.sh", AGENT)
            .write("baseline.json", &baseline)
            .write("calibration.json", &calibration)
            .write("evalgate.yaml", &suite(extra));
        for (i, runs) in outcomes.iter().enumerate() {
            test = test.write(&format!("outcomes-t{i}"), &lines(&runs[..1]));
        }
        let run = test.args(&["run", "-j", "1"]).run();
        run.expect_code(0);
        run.results()["regression"].clone()
    };
    let plain = candidate("thresholds: {pass_score: 0.1}\nregression: {baseline: baseline.json, min_tasks: 5}");
    let informed = candidate(
        "thresholds: {pass_score: 0.1}\nregression: {baseline: baseline.json, min_tasks: 5, noise: calibration.json}",
    );
    assert_eq!(plain["test"]["discordant_worse"], 0);
    assert_eq!(informed["noise"].as_f64(), cal["discordance"].as_f64());
    let (a, b) = (plain["test"]["mde"].as_f64().unwrap(), informed["test"]["mde"].as_f64().unwrap());
    assert!((b - mde).abs() < 1e-8 && b > a, "without noise {a}, with {b}, calibrated {mde}");
}

#[test]
fn a_noise_file_that_is_not_a_calibration_is_invalid_input() {
    let run = Test::new()
        .write("agent.sh", AGENT)
        .write("baseline.json", "{}")
        .write("noise.json", "{\"format\": \"other\"}")
        .write("evalgate.yaml", &suite("regression: {baseline: baseline.json, noise: noise.json}"))
        .args(&["run"])
        .run();
    run.expect_code(2);
    assert!(run.stderr_has("regression.noise: ") && run.stderr_has("noise.json"), "{}", run.stderr);
}
