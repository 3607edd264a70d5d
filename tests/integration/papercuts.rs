//! What a new user noticed first, through the binary: the task line's timings, a crashing
//! grader's last stderr line, the unknown-cost message, `check`'s budget warnings, the
//! latency floor, and "1 error".

use crate::common::{ECHO_AGENT, Test, suite};

#[test]
fn the_task_line_labels_agent_latency_and_total_time_and_counts_one_error() {
    let tasks = "
        - id: greets
          prompt: hello
          grade: [{type: contains, value: hello}]
        - id: crashes
          prompt: x
          grade: [{type: contains, value: x}]
        ";
    let agent = "#!/bin/sh\n[ \"$1\" = x ] && exit 3\nprintf '%s\\n' \"$1\"\n";
    let run =
        Test::new().write("agent.sh", agent).write("evalgate.yaml", &suite("", tasks)).args(&["run", "-j", "1"]).run();
    run.expect_code(1);
    let line = run.stderr.lines().find(|l| l.starts_with("PASS  greets")).expect("a task line");
    let re = regex::Regex::new(r"^PASS  greets \[1\.00\] agent \d+ ms · total (\d+ ms|\d+\.\d s)$").unwrap();
    assert!(re.is_match(line), "{line}");
    assert!(run.stderr_has("1/2 passed, 0 failed, 1 error, 0 skipped"), "{}", run.stderr);
}

#[test]
fn a_crashing_grader_keeps_its_last_stderr_line() {
    let grader = "#!/bin/sh\necho 'Traceback (most recent call last):' >&2\nfor i in 1 2 3 4 5 6 7 8 9 10; do echo \"  File \\\"grade.py\\\", line $i, in check_everything_carefully\" >&2; done\necho 'ValueError: the rubric has no criteria' >&2\nexit 1\n";
    let tasks = "
        - id: t
          prompt: x
          grade: [{type: command, run: ./grade.sh}]
        ";
    let run = Test::new()
        .write("agent.sh", ECHO_AGENT)
        .write("grade.sh", grader)
        .write("evalgate.yaml", &suite("", tasks))
        .args(&["run"])
        .run();
    run.expect_code(1);
    let reason = run.task("t")["reason"].as_str().unwrap().to_owned();
    assert!(reason.contains("Traceback (most recent call last):"), "{reason}");
    assert!(reason.ends_with("… ValueError: the rubric has no criteria"), "{reason}");
}

#[test]
fn an_unknown_cost_says_how_to_report_it_and_check_warns_first() {
    let tasks = "
        - id: t
          prompt: x
          grade: [{type: contains, value: x}]
        ";
    let yaml = suite("thresholds: {max_cost_usd: 1}", tasks);
    let run = Test::new().write("agent.sh", ECHO_AGENT).write("evalgate.yaml", &yaml).args(&["run"]).run();
    run.expect_code(1);
    let results = run.results();
    let check = results["verdict"]["checks"].as_array().unwrap().iter().find(|c| c["name"] == "total cost").unwrap();
    assert_eq!(
        check["actual"],
        "unknown for 1 task: report cost from the agent (usage.cost_usd, or token usage with a known price) or set thresholds.unknown_cost: ignore"
    );
    let run = Test::new().write("agent.sh", ECHO_AGENT).write("evalgate.yaml", &yaml).args(&["check"]).run();
    run.expect_messages(
        r#"
            warning: test.evals.demo: thresholds.max_cost_usd is set, but no agent is known to report cost: a command agent reports it by writing {"usage": {"cost_usd": …}} (or tokens and a model with a known price) to $EVALGATE_TRACE; an llm agent needs a priced model (`pricing:`); else set thresholds.unknown_cost: ignore
            ok: test.evals.demo (evalgate.yaml): 1 task(s), 1 agent(s); preflight passed
        "#,
    );
    run.expect_code(0);
    assert!(
        run.stderr
            .contains("warning: test.evals.demo: thresholds.max_cost_usd is set, but no agent is known to report cost"),
        "{}",
        run.stderr
    );
    // An agent that can: no warning.
    let priced = "
        evalgate: 1
        suite: test.evals.demo
        agents:
          bot: {provider: openai, model: gpt-4o-mini, base_url: 'http://127.0.0.1:9/v1'}
        thresholds: {max_cost_usd: 1}
        tasks:
          - id: t
            prompt: x
            grade: [{type: contains, value: x}]
        ";
    let run = Test::new()
        .file("evalgate.yaml", priced)
        .env("OPENAI_API_KEY", "sk-test-0123456789abcdef")
        .args(&["check"])
        .expect_messages("ok: test.evals.demo (evalgate.yaml): 1 task(s), 1 agent(s); preflight passed\n")
        .run();
    run.expect_messages(
        r#"
            ok: test.evals.demo (evalgate.yaml): 1 task(s), 1 agent(s); preflight passed
        "#,
    );
    assert!(run.stderr_lacks("no agent is known to report cost"), "{}", run.stderr);
}

#[test]
fn a_latency_budget_on_a_tiny_baseline_warns_and_the_floor_passes_it() {
    let tasks = "  - id: t\n    prompt: x\n    grade: [{type: contains, value: x}]\n";
    let base = Test::new().write("agent.sh", ECHO_AGENT).write("evalgate.yaml", &suite("", tasks)).args(&["run"]).run();
    base.expect_code(0);
    let baseline = base.read("evalgate-out/results.json");
    let slow = "#!/bin/sh\nsleep 0.3\nprintf '%s\\n' \"$1\"\n";
    let budget = "regression: {baseline: baseline.json, test: budgets, max_p95_latency_increase_pct: 10";
    let head = |extra: &str, args: &[&str]| {
        Test::new()
            .write("agent.sh", slow)
            .write("baseline.json", &baseline)
            .write("evalgate.yaml", &suite(&format!("{budget}{extra}}}"), tasks))
            .args(args)
            .run()
    };
    let run = head("", &["check"]);
    assert!(
        run.stderr_has("regression.max_p95_latency_increase_pct: 10 is measured on a baseline p95 of")
            && run.stderr_has("set regression.min_latency_increase_ms"),
        "{}",
        run.stderr
    );
    head("", &["run"]).expect_code(1);
    let run = head(", min_latency_increase_ms: 5000", &["run"]);
    run.expect_code(0);
    let results = run.results();
    let check = results["verdict"]["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "p95 latency increase vs baseline")
        .unwrap();
    assert_eq!(check["budget"], "≤ 10% or ≤ 5000 ms");
    assert!(check["actual"].as_str().unwrap().contains(" ms → "), "{check}");
    assert!(!head(", min_latency_increase_ms: 5000", &["check"]).stderr_has("min_latency_increase_ms (a rise"));
}

/// The README's `run` options paragraph names every flag `run --help` lists, and the README
/// installs nothing from a registry that does not hold evalgate.
#[test]
fn the_readme_lists_every_run_flag_and_installs_from_a_source_that_exists() {
    let readme = std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let start = readme.find("`run` options:").expect("the README's `run` options paragraph");
    let options = &readme[start..start + readme[start..].find("\n\n").unwrap()];
    let help = Test::new().args(&["run", "--help"]).run();
    help.expect_code(0);
    let flag = regex::Regex::new(r"^\s+(?:-\w, )?(--[a-z][a-z-]*)").unwrap();
    let flags: Vec<&str> =
        help.stdout.lines().filter_map(|l| flag.captures(l)).map(|c| c.get(1).unwrap().as_str()).collect();
    assert!(flags.len() > 30, "{}", help.stdout);
    let missing: Vec<&&str> = flags.iter().filter(|f| **f != "--help" && !options.contains(&format!("`{f}"))).collect();
    assert!(missing.is_empty(), "the README's `run` options miss {missing:?}");
    assert!(!readme.contains("cargo install --locked evalgate "), "evalgate is on no registry");
}
