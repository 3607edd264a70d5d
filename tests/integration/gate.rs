//! End-to-end runs of the binary: verdicts, exit codes, reports.

use crate::common::{ECHO_AGENT, Test, numbered, suite};

#[test]
fn quickstart_example_passes() {
    let example = std::fs::canonicalize("examples/quickstart/evalgate.yaml").unwrap();
    let run = Test::new().args(&["run", example.to_str().unwrap()]).run();
    run.expect_code(0);
    let results = run.results();
    assert_eq!(results["verdict"]["passed"], true);
    assert_eq!(results["totals"]["passed"], 3);
    assert!(run.read("evalgate-out/summary.md").starts_with("## ✅ evalgate: `evalgate.evals.quickstart` passed"));
}

#[test]
fn a_failing_grader_fails_the_gate_with_its_reason() {
    let run = Test::new()
        .write("agent.sh", ECHO_AGENT)
        .write(
            "evalgate.yaml",
            &suite(
                "",
                "
                    - id: good
                      prompt: hello world
                      grade: [{type: contains, value: world}]
                    - id: bad
                      prompt: hello there
                      grade: [{type: contains, value: galaxy}]
                    ",
            ),
        )
        .args(&["run"])
        .run();
    run.expect_code(1);
    assert_eq!(run.task("good")["status"], "passed");
    assert_eq!(run.task("bad")["status"], "failed");
    let md = run.read("evalgate-out/summary.md");
    assert!(md.starts_with("## ❌ evalgate: `test.evals.demo` failed"), "{md}");
    assert!(
        md.contains("| `bad` | ❌ failed | 0.00 | \\`contains\\` failed: output does not contain \"galaxy\" |"),
        "{md}"
    );
    let junit = run.read("evalgate-out/junit.xml");
    assert!(
        junit.contains("<failure message=\"`contains` failed: output does not contain &quot;galaxy&quot;\""),
        "{junit}"
    );
}

#[test]
fn an_agent_that_crashes_is_an_error_not_a_failure() {
    let run = Test::new()
        .write("agent.sh", "#!/bin/sh\necho partial answer\necho 'Traceback: boom' >&2\nexit 3\n")
        .write(
            "evalgate.yaml",
            &suite(
                "",
                "
                - id: crash
                  prompt: hi
                  grade: [{type: contains, value: partial}]
                ",
            ),
        )
        .args(&["run"])
        .run();
    run.expect_code(1);
    let task = run.task("crash");
    assert_eq!(task["status"], "error");
    assert_eq!(task["reason"], "agent `bot` exit 3: Traceback: boom");
    let junit = run.read("evalgate-out/junit.xml");
    assert!(
        junit.contains("<error message=\"agent `bot` exit 3: Traceback: boom\" type=\"infrastructure-error\""),
        "{junit}"
    );
    let gate = &run.results()["verdict"]["checks"];
    assert!(gate.as_array().unwrap().iter().any(|c| c["name"] == "erroring tasks" && c["passed"] == false));
}

#[test]
fn a_hanging_agent_is_killed_with_its_children_after_the_timeout() {
    let test = Test::new()
        .write("agent.sh", "#!/bin/sh\nsleep 300 &\necho $! > child.pid\nsleep 300\n")
        .suite(
            "
                evalgate: 1
                suite: t
                agents:
                  bot: {command: [./agent.sh], timeout: 1s}
                tasks:
                  - id: hang
                    prompt: hi
                    grade: [{type: contains, value: x}]
                    cleanup: [{run: touch cleaned-up}]
                ",
        )
        .args(&["run"]);
    let started = std::time::Instant::now();
    let run = test.run();
    run.expect_code(1);
    assert!(started.elapsed() < std::time::Duration::from_secs(30));
    let task = run.task("hang");
    assert_eq!(task["status"], "error");
    assert_eq!(task["reason"], "agent `bot` timed out after 1s");
    let pid: i32 = run.read("child.pid").trim().parse().unwrap();
    // The forked `sleep` shared the agent's process group, so the timeout killed it too.
    assert!(!crate::common::is_running(pid), "the agent's child {pid} outlived the timeout");
    assert!(run.dir.join("cleaned-up").exists(), "cleanup did not run after the timeout");
}

#[test]
fn cleanup_runs_after_a_failed_grader_in_reverse_order_even_when_a_step_fails() {
    let run = Test::new()
        .write("agent.sh", ECHO_AGENT)
        .write(
            "evalgate.yaml",
            &suite(
                "",
                "
                    - id: t
                      prompt: hi
                      setup: [{run: echo setup > log}]
                      grade: [{type: equals, value: bye}]
                      cleanup:
                        - run: echo first >> log
                        - run: exit 7
                        - run: echo third >> log
                    ",
            ),
        )
        .args(&["run"])
        .run();
    run.expect_code(1);
    assert_eq!(run.read("log"), "setup\nthird\nfirst\n");
    let task = run.task("t");
    assert_eq!(task["status"], "failed");
    let steps = task["trials"][0]["steps"].as_array().unwrap();
    let cleanup: Vec<_> = steps
        .iter()
        .filter(|s| s["phase"] == "cleanup")
        .map(|s| (s["index"].as_u64().unwrap(), s["status"].as_str().unwrap()))
        .collect();
    assert_eq!(cleanup, vec![(2, "passed"), (1, "failed"), (0, "passed")]);
    assert!(run.read("evalgate-out/summary.md").contains("### Cleanup failures (logged, not gated)"));
}

#[test]
fn a_failing_setup_step_makes_the_task_an_error_and_skips_the_agent() {
    let run = Test::new()
        .write("agent.sh", "#!/bin/sh\ntouch agent-ran\necho hi\n")
        .write(
            "evalgate.yaml",
            &suite(
                "",
                "
                - id: t
                  prompt: hi
                  setup: [{id: db, run: 'echo no database >&2; exit 2'}]
                  grade: [{type: contains, value: hi}]
                  cleanup: [{run: touch cleaned}]
                ",
            ),
        )
        .args(&["run"])
        .run();
    run.expect_code(1);
    let task = run.task("t");
    assert_eq!(task["status"], "error");
    assert_eq!(task["reason"], "setup step 1 (`db`) failed: exit 2, expected exit 0: no database");
    assert!(!run.dir.join("agent-ran").exists());
    assert!(run.dir.join("cleaned").exists());
}

#[test]
fn thresholds_gate_on_the_aggregate_score() {
    let tasks = "  - id: a\n    prompt: alpha\n    grade: [{type: contains, value: alpha}]\n  - id: b\n    prompt: beta\n    grade: [{type: contains, value: alpha}]\n  - id: c\n    prompt: alpha gamma\n    grade: [{type: contains, all: [alpha, gamma, delta, epsilon]}]\n";
    let run = |score: &str| {
        Test::new()
            .write("agent.sh", ECHO_AGENT)
            .write("evalgate.yaml", &suite(&format!("thresholds: {{pass_score: {score}}}"), tasks))
            .args(&["run"])
            .run()
    };
    // Scores: 1, 0 and 2/4 → aggregate 0.5.
    let passing = run("0.5");
    passing.expect_code(0);
    assert_eq!(passing.results()["totals"]["score"], 0.5);
    assert_eq!(passing.task("c")["score"], 0.5);
    run("0.51").expect_code(1);
}

#[test]
fn a_selection_of_nothing_is_invalid_and_names_what_exists() {
    let yaml = suite(
        "",
        "
        - id: alpha
          tags: [smoke]
          prompt: x
          grade: [{type: contains, value: x}]
        ",
    );
    let test = || Test::new().write("agent.sh", ECHO_AGENT).write("evalgate.yaml", &yaml);
    let run = test().args(&["run", "--filter", "nothing-*"]).run();
    run.expect_messages(
        r#"
            error: no task of test.evals.demo (evalgate.yaml) matches --filter nothing-*
              help: task ids: alpha
        "#,
    );
    run.expect_code(2);
    assert_eq!(
        run.stderr,
        "error: no task of test.evals.demo (evalgate.yaml) matches --filter nothing-*\n  help: task ids: alpha\n"
    );
    assert_eq!(run.results()["verdict"]["outcome"]["status"], "invalid");
    assert_eq!(run.results()["verdict"]["passed"], false);
    let tag = test().args(&["list", "--tag", "smok"]).run();
    tag.expect_messages(
        r#"
            error: no task of test.evals.demo (evalgate.yaml) matches --tag smok
              help: did you mean `--tag smoke`?
        "#,
    );
    tag.expect_code(2);
    assert!(tag.stderr.ends_with("--tag smok\n  help: did you mean `--tag smoke`?\n"), "{}", tag.stderr);
}

#[test]
fn filters_tags_and_vars_select_and_shape_tasks() {
    let test = Test::new().write("agent.sh", ECHO_AGENT).write(
        "evalgate.yaml",
        &suite(
            "vars: {name: world}",
            r#"
                - id: api.one
                  tags: [fast]
                  prompt: hello {vars.name}
                  grade: [{type: equals, value: "hello {vars.name}"}]
                - id: api.two
                  prompt: x
                  grade: [{type: contains, value: x}]
                - id: ui.one
                  tags: [fast]
                  prompt: x
                  grade: [{type: contains, value: x}]
                "#,
        ),
    );
    let listed = test.args(&["list", "--filter", "api.*", "--tag", "fast"]).run();
    listed.expect_code(0);
    assert_eq!(listed.stdout, "test.evals.demo/api.one  evalgate.yaml:7 [fast]\n");

    let run = Test::new()
        .write("agent.sh", ECHO_AGENT)
        .write(
            "evalgate.yaml",
            &suite(
                "vars: {name: world}",
                "
                    - id: t
                      prompt: hello {vars.name}
                      grade: [{type: equals, value: hello mars}]
                    ",
            ),
        )
        .args(&["run", "--var", "name=mars"])
        .run();
    run.expect_code(0);
}

#[test]
fn dry_run_and_check_run_nothing() {
    let test = Test::new().write("agent.sh", "#!/bin/sh\ntouch ran\n").write(
        "evalgate.yaml",
        &suite(
            "",
            "
            - id: a
              prompt: x
              grade: [{type: contains, value: x}]
            ",
        ),
    );
    let dry = test.args(&["run", "--dry-run"]).run();
    dry.expect_code(0);
    assert!(dry.stdout.contains("test.evals.demo/a"));
    assert!(!dry.dir.join("ran").exists() && !dry.dir.join("evalgate-out").exists());
    let test = Test::new().write("agent.sh", "#!/bin/sh\ntouch ran\n").write(
        "evalgate.yaml",
        &suite(
            "",
            "
            - id: a
              prompt: x
              grade: [{type: contains, value: x}]
            ",
        ),
    );
    let check = test.args(&["check"]).run();
    check.expect_messages(
        r#"
            ok: test.evals.demo (evalgate.yaml): 1 task(s), 1 agent(s); preflight passed
        "#,
    );
    check.expect_code(0);
    assert!(!check.dir.join("ran").exists());
}

#[test]
fn retries_rerun_infrastructure_errors_only() {
    // The agent crashes on its first run and answers on the second.
    let flaky = "#!/bin/sh\nif [ ! -f first ]; then touch first; exit 1; fi\necho ok\n";
    let run = Test::new()
        .write("agent.sh", flaky)
        .write(
            "evalgate.yaml",
            &suite(
                "defaults: {retries: 1}",
                "
                - id: t
                  prompt: x
                  grade: [{type: contains, value: ok}]
                ",
            ),
        )
        .args(&["run"])
        .run();
    run.expect_code(0);
    assert_eq!(run.task("t")["attempts"], 2);

    let counting = "#!/bin/sh\necho x >> runs\necho wrong\n";
    let run = Test::new()
        .write("agent.sh", counting)
        .write(
            "evalgate.yaml",
            &suite(
                "defaults: {retries: 3}",
                "
                - id: t
                  prompt: x
                  grade: [{type: contains, value: ok}]
                ",
            ),
        )
        .args(&["run"])
        .run();
    run.expect_code(1);
    assert_eq!(run.read("runs"), "x\n", "a graded failure must not be retried");
}

/// A retried attempt is kept, not discarded: what it cost counts (a $1 cost gate fails on
/// an attempt that spent $5 and crashed), and a canary it leaked before it failed fails the
/// task however the retry went (`-j 1`: the tasks run in order, so the budget stop after
/// `spend` skips `after`).
#[test]
fn every_attempt_is_kept_its_cost_counted_and_a_leak_in_any_fails_the_task() {
    let agent = r#"#!/bin/sh
if [ "$1" = leak ]; then
  if [ ! -f leaked ]; then touch leaked; echo "here it is: canary-retry-4b1a"; exit 1; fi
  echo ok; exit 0
fi
if [ ! -f spent ]; then
  touch spent
  printf '{"usage": {"cost_usd": 5.0}}' > "$EVALGATE_TRACE"
  echo "crashed after spending" >&2; exit 1
fi
printf '{"usage": {"cost_usd": 0.01}}' > "$EVALGATE_TRACE"
echo ok
"#;
    let grade = "grade: [{type: contains, value: ok}, {type: no_leak, canaries: [canary-retry-4b1a]}]";
    let run = Test::new()
        .write("agent.sh", agent)
        .write(
            "evalgate.yaml",
            &suite(
                "defaults: {retries: 2}\nthresholds: {max_cost_usd: 1}",
                &format!(
                    "  - id: leak\n    prompt: leak\n    {grade}\n  - id: spend\n    prompt: spend\n    {grade}\n  - id: after\n    prompt: after\n    {grade}\n"
                ),
            ),
        )
        .args(&["run", "-j", "1"])
        .run();
    run.expect_messages(
        "  1 planned task(s) did not run (`after`: not run: the cost budget (thresholds.max_cost_usd) is spent)\n",
    );
    run.expect_code(1);
    let spend = run.task("spend");
    assert_eq!((spend["status"].as_str(), spend["attempts"].as_u64()), (Some("passed"), Some(2)), "{spend}");
    let retried = &spend["trials"][0]["retried"];
    assert_eq!(retried.as_array().map(Vec::len), Some(1), "{spend}");
    assert_eq!(retried[0]["status"], "error");
    assert_eq!(retried[0]["usage"]["cost_usd"], 5.0);
    assert!(retried[0]["reason"].as_str().unwrap().contains("crashed after spending"), "{retried}");
    let totals = &run.results()["totals"];
    assert!((totals["cost_usd"].as_f64().unwrap() - 5.01).abs() < 1e-9, "{totals}");
    let cost =
        run.results()["verdict"]["checks"].as_array().unwrap().iter().find(|c| c["name"] == "total cost").cloned();
    assert_eq!(cost.as_ref().map(|c| c["passed"].clone()), Some(false.into()), "{cost:?}");
    // The budget stop counted the retried attempt too.
    assert_eq!(run.task("after")["not_run"], "cost_budget");
    // The leaking attempt failed the task: it was not retried into a pass.
    let leak = run.task("leak");
    assert_eq!((leak["status"].as_str(), leak["attempts"].as_u64()), (Some("failed"), Some(1)), "{leak}");
    assert!(leak["reason"].as_str().unwrap().contains("`no_leak` leaked"), "{leak}");
}

#[test]
fn fail_fast_skips_the_remaining_tasks() {
    let tasks: String = numbered(
        0..5,
        "
            - id: t<i>
              prompt: x
              grade: [{type: contains, value: y}]
            ",
    );
    let run = Test::new()
        .write("agent.sh", ECHO_AGENT)
        .write("evalgate.yaml", &suite("", &tasks))
        .args(&["run", "-j", "1", "--fail-fast"])
        .run();
    run.expect_code(1);
    let totals = &run.results()["totals"];
    assert_eq!(totals["failed"], 1);
    assert_eq!(totals["skipped"], 4);
    assert_eq!(run.task("t4")["reason"], "not run: --fail-fast stopped the run after a failure");
}

#[test]
fn reports_go_where_the_flags_say() {
    let run = Test::new()
        .write("agent.sh", ECHO_AGENT)
        .write(
            "evalgate.yaml",
            &suite(
                "",
                "
            - id: a
              prompt: x
              grade: [{type: contains, value: x}]
            ",
            ),
        )
        .args(&[
            "run",
            "--out",
            "o",
            "--junit",
            "j/junit.xml",
            "--markdown",
            "m.md",
            "--json",
            "r.json",
            "--html",
            "h.html",
        ])
        .run();
    run.expect_code(0);
    for f in ["o/summary.json", "o/events.jsonl", "j/junit.xml", "m.md", "r.json", "h.html"] {
        assert!(run.dir.join(f).exists(), "{f} missing");
    }
    // `report` takes the same flags, to the same reports.
    let flags = ["--junit", "j2.xml", "--markdown", "m2.md", "--json", "r2.json", "--html", "h2.html"];
    let report =
        Test::new().write("r.json", &run.read("r.json")).args(&["report", "r.json", "--out", "o2"]).args(&flags).run();
    report.expect_code(0);
    for f in ["o2/summary.json", "j2.xml", "m2.md", "r2.json", "h2.html"] {
        assert!(report.dir.join(f).exists(), "{f} missing");
    }
    assert!(report.read("j2.xml").contains("<testsuite"), "{}", report.read("j2.xml"));
    assert!(report.read("h2.html").contains("<html"));
    assert_eq!(report.json("r2.json")["suite"], run.json("r.json")["suite"]);
}

#[test]
fn prompts_reach_agents_by_file_and_stdin_and_paths_resolve_against_the_suite() {
    let run = Test::new()
        .write("suite/agent.sh", "#!/bin/sh\ncat \"$1\"\nprintf ' / '\ncat\n")
        .file(
            "suite/evalgate.yaml",
            r#"
                evalgate: 1
                suite: t
                agents:
                  bot: {command: [./agent.sh, "{prompt_file}"], stdin: true}
                tasks:
                  - id: t
                    prompt: "say {{hi}} to {task.id}"
                    grade: [{type: equals, value: "say {{hi}} to t / say {{hi}} to t"}]
                "#,
        )
        .args(&["run", "suite/evalgate.yaml"])
        .run();
    run.expect_code(0);
}

#[test]
fn an_agent_without_stdin_input_never_reads_evalgates_own_stdin() {
    // evalgate's stdin is a pipe held open: an agent that inherited it would wait on it
    // until its timeout.
    let test = Test::new()
        .write("agent.sh", "#!/bin/sh\ncat\necho done\n")
        .suite(
            "
                evalgate: 1
                suite: t
                agents:
                  bot: {command: [./agent.sh], timeout: 5s}
                tasks:
                  - {id: t, prompt: p, grade: [{type: contains, value: done}]}
                ",
        )
        .args(&["run", "--quiet"]);
    let dir = test.path().to_owned();
    let mut evalgate = test.command().stdin(std::process::Stdio::piped()).spawn().unwrap();
    let _held_open = evalgate.stdin.take();
    assert_eq!(evalgate.wait().unwrap().code(), Some(0));
    let results: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("evalgate-out/results.json")).unwrap()).unwrap();
    assert_eq!(results["tasks"][0]["status"], "passed", "{}", results["tasks"][0]["reason"]);
}

#[test]
fn each_agent_run_s_prompt_and_trace_files_are_removed_when_it_ends() {
    // Each agent writes a trace and lists the scratch directory: it sees its own two files,
    // never an earlier task's.
    let agent = "#!/bin/sh\necho '{}' > \"$EVALGATE_TRACE\"\nls \"$(dirname \"$EVALGATE_TRACE\")\"\n";
    let tasks: String = numbered(
        1..=3,
        "
            - {id: t<i>, prompt: p, grade: [{type: contains, value: trace}]}
            ",
    );
    let run = Test::new()
        .write("agent.sh", agent)
        .write(
            "evalgate.yaml",
            &format!(
                "evalgate: 1\nsuite: t\nagents:\n  bot: {{command: [./agent.sh, \"{{prompt_file}}\"]}}\ntasks:\n{tasks}"
            ),
        )
        .args(&["run", "-j", "1"])
        .run();
    run.expect_code(0);
    for i in 1..=3 {
        let output = run.task(&format!("t{i}"))["trials"][0]["output"].as_str().unwrap().to_owned();
        let files: Vec<&str> = output.lines().collect();
        assert_eq!(files.len(), 2, "t{i} saw {files:?}");
        assert!(
            files.iter().any(|f| f.starts_with("prompt-")) && files.iter().any(|f| f.starts_with("trace-")),
            "{files:?}"
        );
    }
}

#[test]
fn messages_reach_command_agents_as_json() {
    let run = Test::new()
        .write("agent.sh", ECHO_AGENT)
        .write(
            "evalgate.yaml",
            &suite("vars: {q: \"a \\\"quoted\\\" word\"}", "  - id: t\n    messages:\n      - {role: system, content: be brief}\n      - {role: user, content: \"{vars.q}\"}\n    grade: [{type: json, equals: [{role: system, content: be brief}, {role: user, content: 'a \"quoted\" word'}]}]\n"),
        )
        .args(&["run"])
        .run();
    run.expect_code(0);
}
