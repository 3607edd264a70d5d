//! Bad suites and bad environments: exit 2 and 3, every problem listed with where it is.

use crate::common::{ECHO_AGENT, Test, suite, unindent};

#[test]
fn invalid_yaml_is_reported_with_line_and_column() {
    let run = Test::new()
        .suite(
            "
            evalgate: 1
            suite: t
            tasks:
              - id: [a
                prompt: x
            ",
        )
        .args(&["run"])
        .run();
    run.expect_messages(
        r#"
            error: evalgate.yaml:5:11: invalid YAML: illegal placement of ':' indicator
              |
            5 |     prompt: x
              |           ^
            1 error in the suite; nothing ran
        "#,
    );
    run.expect_code(2);
    assert!(run.stderr.starts_with("error: evalgate.yaml:5:11: invalid YAML:"), "{}", run.stderr);
    // Nothing ran, and the reports say so (never an older run's green report).
    let results = run.results();
    assert_eq!(results["verdict"]["outcome"]["status"], "invalid");
    assert!(results["tasks"].as_array().unwrap().is_empty());
    assert!(run.read("evalgate-out/summary.md").starts_with("## ⛔ evalgate: `evalgate` invalid"));
}

#[test]
fn unknown_keys_get_a_suggestion_and_all_are_listed_together() {
    let run = Test::new()
        .suite(
            "
            evalgate: 1
            suite: t
            agents:
              bot: {command: [echo], timout: 3s}
            tasks:
              - id: a
                promt: x
                grade: [{type: contains, valeu: x}]
              - id: b
                prompt: x
                grade: [{type: contians, value: x}]
            ",
        )
        .args(&["check"])
        .run();
    run.expect_code(2).expect_stderr(
        r"
        error: evalgate.yaml:4:26: agents.bot.timout: unknown key `timout`
          |
        4 |   bot: {command: [echo], timout: 3s}
          |                          ^
          help: did you mean `timeout`?

        error: evalgate.yaml:7:5: tasks[0].promt: unknown key `promt`
          |
        7 |     promt: x
          |     ^
          help: did you mean `prompt`?

        error: evalgate.yaml:8:30: tasks[0].grade[0].valeu: unknown key `valeu`
          |
        8 |     grade: [{type: contains, valeu: x}]
          |                              ^
          help: did you mean `value`?

        error: evalgate.yaml:11:20: tasks[1].grade[0].type: unknown type `contians`
           |
        11 |     grade: [{type: contians, value: x}]
           |                    ^
          help: did you mean `contains`?

        4 errors in the suite; nothing ran
        ",
    );
}

#[test]
fn semantic_errors_are_all_listed() {
    let run = Test::new()
        .write("agent.sh", ECHO_AGENT)
        .suite(
            r#"
            vars: {name: x}
            evalgate: 1
            suite: t
            agents:
              bot: {command: [./agent.sh, "{prompt}"]}
            tasks:
              - id: a
                agent: bott
                prompt: "hi {vars.nmae}"
                grade: [{type: contains, value: x}]
              - id: a
                prompt: x
                grade:
                  - {type: regex, pattern: "("}
                  - {type: json}
              - id: Bad_ID
                prompt: x
                grade: []
            "#,
        )
        .args(&["run"])
        .run();
    // The template error points at the variable itself.
    run.expect_code(2).expect_stderr(
        r#"
        error: evalgate.yaml:8:12: tasks[0].agent: unknown agent `bott`
          |
        8 |     agent: bott
          |            ^
          help: did you mean `bot`?

        error: evalgate.yaml:9:17: tasks[0].prompt: unknown variable `{vars.nmae}`
          |
        9 |     prompt: "hi {vars.nmae}"
          |                 ^
          help: did you mean `{vars.name}`?

        error: evalgate.yaml:11:9: tasks[1].id: duplicate task id `a`
           |
        11 |   - id: a
           |         ^

        error: evalgate.yaml:14:32: tasks[1].grade[0].pattern: invalid regular expression: regex parse error:
            (
            ^
        error: unclosed group
           |
        14 |       - {type: regex, pattern: "("}
           |                                ^

        error: evalgate.yaml:15:9: tasks[1].grade[1]: a `json` grader needs `equals`, `subset`, or `path` with a check
           |
        15 |       - {type: json}
           |         ^

        error: evalgate.yaml:16:9: tasks[2].id: invalid task id `Bad_ID`: use lowercase letters, digits, `.`, `_` and `-`, starting with a letter or digit
           |
        16 |   - id: Bad_ID
           |         ^

        error: evalgate.yaml:16:5: tasks[2]: the task has no graders: add at least one under `grade`
           |
        16 |   - id: Bad_ID
           |     ^

        7 errors in the suite; nothing ran
        "#,
    );
}

#[test]
fn values_of_the_wrong_kind_are_rejected_as_they_are_read_with_the_allowed_values_or_the_bound() {
    let run = Test::new()
        .suite(
            "
            evalgate: 1
            suite: t
            modes: [adversarail]
            agents:
              bot: {command: [echo], max_concurrency: 0}
            tasks:
              - {id: a, level: scenery, prompt: x, grade: [{type: contains, value: x}]}
              - {id: b, severity: hihg, prompt: x, grade: [{type: contains, value: x, weight: -1}]}
              - {id: c, repeat: 0, threshold: 1.5, prompt: x, grade: [{type: contains, value: x}]}
              - {id: d, threshold: 1.5, prompt: x, grade: [{type: contains, value: x}]}
            ",
        )
        .args(&["check"])
        .expect_messages("error: evalgate.yaml:3:9: modes[0]: unknown mode `adversarail`\n  |\n3 | modes: [adversarail]\n  |         ^\n  help: did you mean `adversarial`?\nerror: evalgate.yaml:5:43: agents.bot.max_concurrency: invalid value: integer `0`, expected a nonzero u32\n  |\n5 |   bot: {command: [echo], max_concurrency: 0}\n  |                                           ^\nerror: evalgate.yaml:7:20: tasks[0].level: unknown level `scenery`\n  |\n7 |   - {id: a, level: scenery, prompt: x, grade: [{type: contains, value: x}]}\n  |                    ^\n  help: did you mean `scenario`?\nerror: evalgate.yaml:8:23: tasks[1].severity: unknown severity `hihg`\n  |\n8 |   - {id: b, severity: hihg, prompt: x, grade: [{type: contains, value: x, weight: -1}]}\n  |                       ^\n  help: did you mean `high`?\nerror: evalgate.yaml:8:83: tasks[1].grade[0].weight: must be 0 or more, got -1\n  |\n8 |   - {id: b, severity: hihg, prompt: x, grade: [{type: contains, value: x, weight: -1}]}\n  |                                                                                   ^\nerror: evalgate.yaml:9:21: tasks[2].repeat: expected a number of trials (1 or more) or {min, max, adaptive: true}, got 0\n  |\n9 |   - {id: c, repeat: 0, threshold: 1.5, prompt: x, grade: [{type: contains, value: x}]}\n  |                     ^\nerror: evalgate.yaml:9:35: tasks[2].threshold: must be between 0 and 1, got 1.5\n  |\n9 |   - {id: c, repeat: 0, threshold: 1.5, prompt: x, grade: [{type: contains, value: x}]}\n  |                                   ^\nerror: evalgate.yaml:10:24: tasks[3].threshold: must be between 0 and 1, got 1.5\n   |\n10 |   - {id: d, threshold: 1.5, prompt: x, grade: [{type: contains, value: x}]}\n   |                        ^\n8 errors in the suite; nothing ran\n").run();
    run.expect_code(2);
    let expected = "\
error: evalgate.yaml:3:9: modes[0]: unknown mode `adversarail`
  |
3 | modes: [adversarail]
  |         ^
  help: did you mean `adversarial`?

error: evalgate.yaml:5:43: agents.bot.max_concurrency: invalid value: integer `0`, expected a nonzero u32
  |
5 |   bot: {command: [echo], max_concurrency: 0}
  |                                           ^

error: evalgate.yaml:7:20: tasks[0].level: unknown level `scenery`
  |
7 |   - {id: a, level: scenery, prompt: x, grade: [{type: contains, value: x}]}
  |                    ^
  help: did you mean `scenario`?

error: evalgate.yaml:8:23: tasks[1].severity: unknown severity `hihg`
  |
8 |   - {id: b, severity: hihg, prompt: x, grade: [{type: contains, value: x, weight: -1}]}
  |                       ^
  help: did you mean `high`?

error: evalgate.yaml:8:83: tasks[1].grade[0].weight: must be 0 or more, got -1
  |
8 |   - {id: b, severity: hihg, prompt: x, grade: [{type: contains, value: x, weight: -1}]}
  |                                                                                   ^

error: evalgate.yaml:9:21: tasks[2].repeat: expected a number of trials (1 or more) or {min, max, adaptive: true}, got 0
  |
9 |   - {id: c, repeat: 0, threshold: 1.5, prompt: x, grade: [{type: contains, value: x}]}
  |                     ^

error: evalgate.yaml:9:35: tasks[2].threshold: must be between 0 and 1, got 1.5
  |
9 |   - {id: c, repeat: 0, threshold: 1.5, prompt: x, grade: [{type: contains, value: x}]}
  |                                   ^

error: evalgate.yaml:10:24: tasks[3].threshold: must be between 0 and 1, got 1.5
   |
10 |   - {id: d, threshold: 1.5, prompt: x, grade: [{type: contains, value: x}]}
   |                        ^

8 errors in the suite; nothing ran
";
    assert_eq!(run.stderr, expected);
}

/// A value of the wrong kind is dropped where it is read and the rest of the suite is still
/// validated: the bound, the duplicate id and the unknown agent are listed together (the
/// first alone was reported, and the others only once it was fixed).
#[test]
fn values_of_the_wrong_kind_and_semantic_errors_are_listed_together() {
    // Only the wrong value is dropped: `defaults.agent` beside it still gives task `a` its agent.
    let run = Test::new()
        .suite(
            "
            evalgate: 1
            suite: t
            agents:
              bot: {command: [echo]}
              other: {command: [echo]}
            thresholds: {pass_score: 1.5}
            defaults: {agent: bot, timeout: soon}
            tasks:
              - {id: a, prompt: x, grade: [{type: contains, value: x}]}
              - {id: a, agent: bott, prompt: x, grade: [{type: contains, value: x}]}
            ",
        )
        .args(&["check"])
        .run();
    run.expect_code(2).expect_stderr(
        r"
        error: evalgate.yaml:6:26: thresholds.pass_score: must be between 0 and 1, got 1.5
          |
        6 | thresholds: {pass_score: 1.5}
          |                          ^

        error: evalgate.yaml:7:33: defaults.timeout: invalid duration `soon`: expected e.g. 30s, 500ms, 2m or none
          |
        7 | defaults: {agent: bot, timeout: soon}
          |                                 ^

        error: evalgate.yaml:10:10: tasks[1].id: duplicate task id `a`
           |
        10 |   - {id: a, agent: bott, prompt: x, grade: [{type: contains, value: x}]}
           |          ^

        error: evalgate.yaml:10:20: tasks[1].agent: unknown agent `bott`
           |
        10 |   - {id: a, agent: bott, prompt: x, grade: [{type: contains, value: x}]}
           |                    ^
          help: did you mean `bot`?

        4 errors in the suite; nothing ran
        ",
    );
}

#[test]
fn templates_reject_near_misses_and_out_of_scope_variables_and_leave_shell_braces_alone() {
    let run = Test::new()
        .write("agent.sh", ECHO_AGENT)
        .write(
            "evalgate.yaml",
            &suite(
                "",
                r#"
                - id: a
                  prompt: "{agent.output}"
                  setup: [{run: "awk '{print $1}' f"}, {run: "echo {var.x} ${HOME}"}]
                  grade: [{type: contains, value: "{agent.output}"}]
                "#,
            ),
        )
        .args(&["check"])
        .run();
    run.expect_code(2);
    assert!(
        run.stderr_has("tasks[0].prompt: `{agent.output}` is only available in graders and cleanup steps"),
        "{}",
        run.stderr
    );
    assert!(run.stderr_lacks("setup[0]"), "awk's braces are shell text: {}", run.stderr);
    assert!(run.stderr_has("tasks[0].setup[1].run: unknown variable `{var.x}`"), "{}", run.stderr);
    assert!(run.stderr_has("help: did you mean `{vars.x}`?"), "{}", run.stderr);
}

#[test]
fn a_missing_suite_file_is_invalid_input() {
    let run = Test::new().args(&["run"]).run();
    run.expect_messages(
        r#"
            error: cannot read suite file evalgate.yaml: No such file or directory (os error 2)
        "#,
    );
    run.expect_code(2);
    assert!(run.stderr.starts_with("error: cannot read suite file evalgate.yaml:"), "{}", run.stderr);
}

#[test]
fn bad_command_lines_exit_2() {
    Test::new().args(&["run", "--bogus"]).expect_messages("error: unexpected argument '--bogus' found\n  tip: to pass '--bogus' as a value, use '-- --bogus'\nUsage: evalgate run [OPTIONS] [SUITE]...\nFor more information, try '--help'.\n").run().expect_code(2);
    Test::new().args(&["run", "--var", "novalue"]).expect_messages("error: invalid value 'novalue' for '--var <KEY=VALUE>': expected KEY=VALUE, got `novalue`\nFor more information, try '--help'.\n").run().expect_code(2);
    Test::new()
        .args(&["run", "-j", "0"])
        .expect_messages("error: invalid value '0' for '--jobs <N>': 0 is not in 1..=4294967295\nFor more information, try '--help'.\n")
        .run()
        .expect_code(2);
    let run = Test::new()
        .write("agent.sh", ECHO_AGENT)
        .write("evalgate.yaml", &suite("", ONE_TASK))
        .args(&["run", "--agent", "bto"])
        .run();
    run.expect_code(2);
    assert!(run.stderr_has("did you mean `bot`?"), "{}", run.stderr);
}

/// A model key on a command agent would be ignored: every one of them is refused, naming it.
#[test]
fn a_command_agent_with_a_model_key_is_refused() {
    for key in ["temperature: 0.2", "max_tokens: 9", "system: be brief", "headers: {X-A: b}", "cache: true"] {
        let yaml = unindent(
            "
            evalgate: 1
            suite: t
            agents:
              bot: {command: [./agent.sh], <key>}
            tasks:
              - id: a
                prompt: x
                grade: [{type: contains, value: x}]
            ",
        )
        .replace("<key>", key);
        let run = Test::new().write("agent.sh", ECHO_AGENT).write("evalgate.yaml", &yaml).args(&["check"]).run();
        run.expect_code(2);
        let name = key.split(':').next().unwrap();
        let expected = format!("agents.bot.{name}: `{name}` belongs to model agents, and this one has a `command`");
        assert!(run.stderr_has(&expected), "{key}: {}", run.stderr);
    }
}

/// One task, passed by an agent that echoes its prompt.
const ONE_TASK: &str = "
    - id: a
      prompt: x
      grade: [{type: contains, value: x}]
    ";

/// An agent that leaves a mark: whether anything ran.
const MARKING_AGENT: &str = "#!/bin/sh\ntouch ran\nprintf '%s\\n' \"$1\"\n";

#[test]
fn two_suites_with_one_id_are_invalid_before_anything_runs() {
    let run = Test::new()
        .write("agent.sh", MARKING_AGENT)
        .write("a.yaml", &suite("", ONE_TASK))
        .write("b.yaml", &suite("", ONE_TASK))
        .args(&["run", "a.yaml", "b.yaml"])
        .run();
    run.expect_messages(
        r#"
            error: b.yaml:2:8: suite: `test.evals.demo` is also the id of a.yaml: each suite of a run needs its own id (its reports go to OUT/test.evals.demo/)
              |
            2 | suite: test.evals.demo
              |        ^
            1 error in the suite; nothing ran
        "#,
    );
    run.expect_code(2);
    let expected =
        "error: b.yaml:2:8: suite: `test.evals.demo` is also the id of a.yaml: each suite of a run needs its own id";
    assert!(run.stderr.starts_with(expected), "{}", run.stderr);
    assert!(!run.dir.join("ran").exists(), "nothing runs");
    assert_eq!(run.results()["verdict"]["outcome"]["status"], "invalid");
    // `check` refuses them as well.
    let check = Test::new()
        .write("a.yaml", &suite("", ONE_TASK))
        .write("b.yaml", &suite("", ONE_TASK))
        .args(&["check", "a.yaml", "b.yaml"])
        .run();
    check.expect_messages(
        r#"
            error: b.yaml:2:8: suite: `test.evals.demo` is also the id of a.yaml: each suite of a run needs its own id (its reports go to OUT/test.evals.demo/)
              |
            2 | suite: test.evals.demo
              |        ^
            1 error in the suite; nothing ran
        "#,
    );
    check.expect_code(2);
    assert!(check.stderr.starts_with(expected), "{}", check.stderr);
}

#[test]
fn two_reports_named_to_one_file_are_invalid_before_anything_runs() {
    for args in [
        vec!["run", "--markdown", "evalgate-out/results.json"],
        vec!["run", "--junit", "r.xml", "--html", "./r.xml"],
        vec!["run", "--json", "evalgate-out/events.jsonl"],
        vec!["run", "--json", "x/../r.json", "--junit", "r.json"],
    ] {
        let run =
            Test::new().write("agent.sh", MARKING_AGENT).write("evalgate.yaml", &suite("", ONE_TASK)).args(&args).run();
        run.expect_code(2);
        assert!(run.stderr_has("would both be written to"), "{args:?}: {}", run.stderr);
        assert!(run.stderr_has("give each report its own path"), "{}", run.stderr);
        assert!(!run.dir.join("ran").exists(), "nothing runs");
    }
    let run = Test::new()
        .write("agent.sh", MARKING_AGENT)
        .write("evalgate.yaml", &suite("", ONE_TASK))
        .args(&["run", "--markdown", "evalgate-out/results.json"])
        .run();
    run.expect_messages(
        r#"
            error: results.json and summary.md would both be written to evalgate-out/results.json: give each report its own path (--junit, --markdown, --json and --html)
        "#,
    );
    assert!(
        run.stderr.starts_with("error: results.json and summary.md would both be written to evalgate-out/results.json"),
        "{}",
        run.stderr
    );
    // The file the two share holds one report whole: the results, which say invalid.
    assert_eq!(run.results()["verdict"]["outcome"]["status"], "invalid");
}

#[test]
fn a_command_line_value_clap_refuses_is_reported_as_an_invalid_run() {
    let cases: [(&[&str], &str); 5] = [
        (&["--shard", "3/2"], "invalid value '3/2' for '--shard <K/N>'"),
        (&["--repeat=0"], "invalid value '0' for '--repeat <N|auto>'"),
        (&["-j", "0", "--shard", "3/2"], "invalid value '0' for '--jobs <N>'"),
        (&["-j0"], "invalid value '0' for '--jobs <N>'"),
        (&["--bogus", "--repeat", "0"], "unexpected argument '--bogus' found"),
    ];
    for (bad, reason) in cases {
        let test = Test::new().write("agent.sh", MARKING_AGENT).write("evalgate.yaml", &suite("", ONE_TASK));
        let dir = test.path().to_owned();
        // The previous run's reports are green.
        let green = std::process::Command::new(env!("CARGO_BIN_EXE_evalgate"))
            .current_dir(&dir)
            .args(["run", "--out", "out", "--junit", "junit.xml"])
            .output()
            .unwrap();
        assert_eq!(green.status.code(), Some(0));
        std::fs::remove_file(dir.join("ran")).unwrap();
        let mut args = vec!["run", "--github", "--out", "out", "--junit", "junit.xml"];
        args.extend_from_slice(bad);
        let run = test
            .env("GITHUB_OUTPUT", dir.join("output.txt").to_str().unwrap())
            .env("GITHUB_STEP_SUMMARY", dir.join("step-summary.md").to_str().unwrap())
            .args(&args)
            .run();
        run.expect_code(2);
        assert!(run.take_stderr().starts_with(&format!("error: {reason}")), "{bad:?}: {}", run.stderr);
        assert!(!run.dir.join("ran").exists(), "{bad:?}: nothing runs");
        let results = run.json("out/results.json");
        assert_eq!(results["verdict"]["outcome"]["status"], "invalid", "{bad:?}");
        assert!(results["verdict"]["outcome"]["reason"].as_str().unwrap().starts_with(reason), "{results}");
        assert!(run.read("out/summary.md").starts_with("## ⛔ evalgate: `test.evals.demo` invalid"), "{bad:?}");
        assert!(!run.read("junit.xml").contains("<testcase"), "{bad:?}: the named JUnit file is replaced too");
        assert!(run.read("step-summary.md").starts_with("## ⛔ evalgate: `test.evals.demo` invalid"), "{bad:?}");
        let outputs = run.read("output.txt");
        let outcome = outputs.lines().skip_while(|l| !l.starts_with("outcome<<")).nth(1);
        assert_eq!(outcome, Some("invalid"), "{bad:?}: {outputs}");
        assert!(outputs.contains("passed<<") && !outputs.contains("\ntrue\n"), "{outputs}");
        assert!(run.stdout.contains("::error title=evalgate%3A invalid::"), "{bad:?}: {}", run.stdout);
    }
}

#[test]
fn every_preflight_miss_is_listed_and_nothing_runs() {
    let extra = "
        env:
          required_commands: [definitely-not-a-command-xyz, sh]
          required_python_modules: [json, no_such_module_xyz]
          required_env: [EVALGATE_TEST_UNSET_VAR]
          required_files: [fixtures/missing.json]
        ";
    let tasks = r#"
        - id: a
          prompt: "{env.EVALGATE_TEST_OTHER_UNSET}"
          grade: [{type: contains, value: x}]
        "#;
    let run = Test::new()
        .write("agent.sh", "#!/bin/sh\ntouch ran\n")
        .write("evalgate.yaml", &suite(extra, tasks))
        .args(&["run"])
        .run();
    run.expect_code(3).expect_stderr(
        r"
        preflight failed for evalgate.yaml: 5 missing
          - command `definitely-not-a-command-xyz`: not found on PATH
          - python module `no_such_module_xyz`: cannot be imported by python3
          - environment variable `EVALGATE_TEST_OTHER_UNSET`: is not set (used by task `a`)
          - environment variable `EVALGATE_TEST_UNSET_VAR`: is not set (used by `env.required_env`)
          - file `fixtures/missing.json`: [DIR]/fixtures/missing.json does not exist
        nothing ran
        ",
    );
    assert!(!run.dir.join("ran").exists());
}

/// Every program the suite starts is looked up in the first round, with the variables:
/// a command grader's (argv or the first word of its shell line) before any agent runs, and
/// a stdio MCP server's (not only once the servers start, after the rest is fixed). A shell
/// line starting with a builtin is not guessed at.
#[test]
fn every_missing_program_is_listed_with_the_variables_before_anything_runs() {
    let run = Test::new()
        .write("agent.sh", "#!/bin/sh\ntouch ran\n")
        .write("ok.sh", "#!/bin/sh\n")
        .suite(
            r#"
            evalgate: 1
            suite: t
            mcp_servers:
              s: {command: [./servers/missing.py]}
            agents:
              bot: {command: [./agent.sh, "{prompt}"]}
            tasks:
              - id: a
                prompt: "{env.EVALGATE_TEST_UNSET_VAR}"
                grade:
                  - {type: command, run: ./graders/polite.sh --strict}
                  - {type: command, run: [no-such-grader-xyz, x]}
                  - {type: command, run: 'cd graders && ./other.sh'}
                  - {type: command, run: [./ok.sh]}
              - id: b
                prompt: x
                grade: [{type: command, run: ./graders/polite.sh --strict}]
            "#,
        )
        .args(&["run"])
        .run();
    run.expect_code(3).expect_stderr(
        r"
        preflight failed for evalgate.yaml: 4 missing
          - environment variable `EVALGATE_TEST_UNSET_VAR`: is not set (used by task `a`)
          - MCP server command `./servers/missing.py`: [DIR]/./servers/missing.py does not exist (MCP server `s`)
          - command grader `./graders/polite.sh`: [DIR]/./graders/polite.sh does not exist (task `a`, task `b`)
          - command grader `no-such-grader-xyz`: not found on PATH (task `a`)
        nothing ran
        ",
    );
    assert!(!run.dir.join("ran").exists(), "the agent ran");
}

#[test]
fn a_missing_or_non_executable_agent_fails_preflight() {
    let run = Test::new()
        .write("agent.txt", "not executable")
        .suite(
            "
            evalgate: 1
            suite: t
            agents:
              a: {command: [./agent.txt]}
              b: {command: [./nope.sh]}
            defaults: {agent: a}
            tasks:
              - id: x
                prompt: x
                grade: [{type: contains, value: x}]
            ",
        )
        .args(&["check"])
        .run();
    run.expect_code(3).expect_stderr(
        r"
        preflight failed for evalgate.yaml: 2 missing
          - agent command `./agent.txt`: [DIR]/./agent.txt is not executable (chmod +x) (agent `a`)
          - agent command `./nope.sh`: [DIR]/./nope.sh does not exist (agent `b`)
        nothing ran
        ",
    );
}

#[test]
fn a_pathological_regex_is_refused_at_load_naming_the_limit() {
    let tasks = r#"
        - id: a
          prompt: x
          grade:
            - {type: regex, pattern: "(a{1000}){1000}"}
            - {type: json, path: a, matches: "(\\w{100}){100}"}
        "#;
    // No timing here (a timed test flakes on a busy runner): without the limit the pattern
    // compiles, so the error below is missing and the test fails.
    let run =
        Test::new().write("agent.sh", ECHO_AGENT).write("evalgate.yaml", &suite("", tasks)).args(&["check"]).run();
    run.expect_code(2);
    for path in ["tasks[0].grade[0].pattern", "tasks[0].grade[1].matches"] {
        let line = format!(
            "{path}: the regular expression compiles to more than 1 MiB, the limit; repetitions such as `(a{{1000}}){{1000}}` multiply its size"
        );
        assert!(run.stderr_has(&line), "missing {line:?} in:\n{}", run.stderr);
    }
}

/// A results file edited one way, and the problem every reader must name with its key path.
type Tamper = (fn(&mut serde_json::Value), &'static str);

#[test]
fn every_reader_of_a_results_file_refuses_one_that_breaks_the_schema_or_its_own_tasks() {
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
                - id: b
                  prompt: y
                  grade: [{type: contains, value: y}]
                ",
            ),
        )
        .args(&["run"])
        .run();
    run.expect_code(0);
    let tampers: [Tamper; 7] = [
        (
            |r| r["format"] = "evalgate-results/999".into(),
            "format: unknown results format `evalgate-results/999`; this evalgate reads `evalgate-results/1`",
        ),
        (|r| r["tasks"][1]["score"] = 1.5.into(), "tasks[1].score: 1.5 is greater than the maximum of 1"),
        (
            |r| r["tasks"][0]["trials"][0]["score"] = (-0.5).into(),
            "tasks[0].trials[0].score: -0.5 is less than the minimum of 0",
        ),
        (|r| r["tasks"][1]["id"] = "a".into(), "tasks[1].id: duplicate task id `a`"),
        (|r| r["totals"]["passed"] = 7.into(), "totals.passed: 7, but the tasks count 2"),
        (
            // Adaptive trials reported as more than planned: "18446744073709551116% saved" once.
            |r| r["tasks"][0]["trials_planned"] = 0.into(),
            "tasks[0].trials_planned: 0, but the task ran 1 trials (`repeat`): a plan holds at least the trials run",
        ),
        (
            |r| r["tasks"][1]["status"] = "failed".into(),
            "does not agree with its own tasks: it records the outcome `passed`, its tasks give `failed`",
        ),
    ];
    for (tamper, problem) in tampers {
        let mut results = run.results();
        tamper(&mut results);
        if problem.contains("failed") {
            // A consistent count, so that only the verdict contradicts the tasks.
            results["totals"]["passed"] = 1.into();
            results["totals"]["failed"] = 1.into();
        }
        std::fs::write(run.dir.join("bad.json"), results.to_string()).unwrap();
        for args in [
            &["report", "bad.json", "--out", "r-out"][..],
            &["compare", "bad.json", "evalgate-out/results.json"],
            &["compare", "evalgate-out/results.json", "bad.json"],
            &["merge", "bad.json", "--output", "merged.json"],
            &["comment", "bad.json"],
            &["run", "--baseline", "bad.json", "--out", "b-out"],
        ] {
            // A baseline is read for its tasks' scores, not for its verdict.
            let baseline = args[0] == "run" || args[1] == "bad.json" && args[0] == "compare";
            if baseline && problem.contains("agree") {
                continue;
            }
            let out = std::process::Command::new(env!("CARGO_BIN_EXE_evalgate"))
                .current_dir(&run.dir)
                .args(args)
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{args:?} with {problem:?}:\n{stderr}");
            assert!(stderr.contains(problem), "{args:?}: missing {problem:?} in:\n{stderr}");
        }
    }
    assert!(!run.dir.join("r-out").exists() && !run.dir.join("merged.json").exists());
}
