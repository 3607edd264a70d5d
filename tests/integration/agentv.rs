//! AgentV EVAL.yaml (tests/fixtures/agentv): imported into a native suite with a command
//! agent and a local LLM stand-in as the judge, converted, and the errors of a file run on
//! its own or using what evalgate does not support.

use std::path::PathBuf;

use crate::common::server::{Server, answer};
use crate::common::{Test, owned_pairs, sorted_statuses, unindent};
use serde_json::{Value, json};

const KEY: &str = "sk-test-key";

/// `evalgate convert` of an eval file with this text.
#[track_caller]
fn convert(eval: &str) -> crate::common::Run {
    Test::new().file("e.eval.yaml", eval).args(&["convert", "e.eval.yaml"]).run()
}

fn fixture(name: &str) -> String {
    std::fs::read_to_string(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/agentv").join(name)).unwrap()
}

fn with_fixtures() -> Test {
    Test::new()
        .write("agent.sh", &fixture("agent.sh"))
        .write("evals/refund.eval.yaml", &fixture("evals/refund.eval.yaml"))
        .write("evals/graders/check_refund.py", &fixture("evals/graders/check_refund.py"))
}

/// A judge that meets a criterion when the answer contains its `backticked` words.
fn judge() -> Server {
    Server::start(|r| {
        let b: Value = serde_json::from_str(&r.body).unwrap();
        let user = b["messages"][1]["content"].as_str().unwrap();
        // AgentV's freeform grader: one score on its criteria.
        if let Some(rest) = user.split("[[ ## criteria ## ]]\n").nth(1) {
            let criteria = rest.split("\n\n[[ ## question ## ]]").next().unwrap();
            let answer_text = user.rsplit("[[ ## answer ## ]]\n").next().unwrap();
            let wanted = criteria.split('`').nth(1).unwrap_or("\u{0}");
            let score = if answer_text.contains(wanted) { 1.0 } else { 0.0 };
            return (
                200,
                answer(
                    None,
                    &[(
                        "record_verdict",
                        &json!({"score": score, "reason": format!("looked for {wanted}")}).to_string(),
                    )],
                ),
            );
        }
        let answer_text = user.split("The system's answer:\n").nth(1).unwrap().split("\n\n").next().unwrap().to_owned();
        let criteria = user.rsplit("Criteria:\n").next().unwrap();
        let verdicts: Vec<Value> = criteria
            .lines()
            .filter_map(|line| line.split_once(". "))
            .map(|(i, text)| {
                let wanted = text.split('`').nth(1).unwrap_or("\u{0}");
                json!({"index": i.parse::<u64>().unwrap(), "met": answer_text.contains(wanted), "note": format!("looked for {wanted}")})
            })
            .collect();
        (200, answer(None, &[("record_verdict", &json!({"criteria": verdicts}).to_string())]))
    })
}

const VERDICTS: [(&str, &str); 5] = [
    ("misses", "failed"),
    ("receipt-checks", "passed"),
    ("receipt-rule", "passed"),
    ("status-json", "passed"),
    ("trajectory", "passed"),
];

#[test]
fn an_agentv_file_imported_runs_its_tests_hooks_and_preflight() {
    let server = judge();
    let suite = unindent(
        "
            evalgate: 1
            suite: support
            agents:
              bot: {command: [./agent.sh, '{prompt}']}
            judge: {provider: openai, model: gpt-4o-mini, base_url: '<url>/v1', api_key_env: JUDGE_KEY}
            imports:
              - {format: agentv, path: evals/refund.eval.yaml, agent: bot}
            ",
    )
    .replace("<url>", &server.url());
    let run = with_fixtures().write("evalgate.yaml", &suite).env("JUDGE_KEY", KEY).args(&["run", "-j", "1"]).run();
    run.expect_code(1);
    let results = run.results();
    assert_eq!(sorted_statuses(&results), owned_pairs(&VERDICTS), "{results:#}");

    // Every task points at its test in the AgentV file.
    let checks = run.task("receipt-checks");
    assert_eq!((checks["file"].as_str(), checks["line"].as_u64()), (Some("evals/refund.eval.yaml"), Some(27)));
    // The code grader ran in the eval's directory and got AgentV's fields on stdin.
    let graders = checks["trials"][0]["graders"].as_array().unwrap();
    let script = graders.iter().find(|g| g["name"] == "grader-script").unwrap();
    assert_eq!((script["status"].as_str(), script["score"].as_f64()), (Some("passed"), Some(1.0)), "{script}");
    assert_eq!(graders.len(), 8);
    // The threshold is AgentV's: a missed minimum costs half of one assertion's weight.
    let trajectory = run.task("trajectory");
    let score = trajectory["score"].as_f64().unwrap();
    assert!((score - 2.5 / 3.0).abs() < 1e-9, "{trajectory}");
    let misses = run.task("misses");
    assert_eq!(misses["score"].as_f64(), Some(0.5), "{misses}");
    // Hooks ran in the eval's directory: each test has a workspace of its own (AgentV's
    // `isolation: per_test`), set up by `before_all` and `before_each`; `after_all` once.
    let log = run.read("evals/hooks.log");
    assert_eq!(log, format!("{}all-done\n", "ready\neach\ndone\n".repeat(5)));

    // `workspace.env` is the preflight: a missing module stops the run before anything ran.
    let eval = fixture("evals/refund.eval.yaml")
        .replace("required_python_modules: [json]", "required_python_modules: [no_such_module_xyz]");
    let run = with_fixtures()
        .write("evals/refund.eval.yaml", &eval)
        .write("evalgate.yaml", &suite)
        .env("JUDGE_KEY", KEY)
        .args(&["run"])
        .run();
    run.expect_code(3);
    assert!(run.stderr_has("no_such_module_xyz"), "{}", run.stderr);
}

#[test]
fn convert_prints_a_suite_that_gives_the_same_verdicts() {
    let server = judge();
    let test = with_fixtures();
    let dir = test.path().to_owned();
    let converted = test.args(&["convert", "evals/refund.eval.yaml"]).run();
    converted.expect_code(0);
    let mut suite: Value = evalgate::yaml::from_str(&converted.stdout).unwrap();
    assert_eq!(suite["agents"]["agent"]["command"], json!(["./agent.sh", "{prompt}"]), "{}", converted.stdout);
    assert_eq!(suite["env"]["required_commands"], json!(["python3"]));
    let judge = suite["judge"].as_object_mut().unwrap();
    judge.insert("base_url".into(), json!(format!("{}/v1", server.url())));
    judge.insert("api_key_env".into(), json!("JUDGE_KEY"));
    // Saved beside the original, with the agent there too: paths are relative to it.
    std::fs::write(dir.join("evals/converted.yaml"), serde_saphyr::to_string(&suite).unwrap()).unwrap();
    std::fs::copy(dir.join("agent.sh"), dir.join("evals/agent.sh")).unwrap();
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_evalgate"))
        .current_dir(&dir)
        .env("JUDGE_KEY", KEY)
        .args(["run", "evals/converted.yaml", "-j", "1"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", String::from_utf8_lossy(&output.stderr));
    let results: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("evalgate-out/results.json")).unwrap()).unwrap();
    assert_eq!(sorted_statuses(&results), owned_pairs(&VERDICTS));
}

#[test]
fn run_alone_or_with_unsupported_features_says_what_and_where() {
    let run = with_fixtures().args(&["run", "evals/refund.eval.yaml"]).run();
    run.expect_code(2);
    assert!(run.stderr_has("names its target in .agentv/targets.yaml"), "{}", run.stderr);
    assert!(run.stderr_has("imports: [{format: agentv, path: evals/refund.eval.yaml, agent: NAME}]"), "{}", run.stderr);

    let eval = "
        workspace:
          repos: [{path: ./repo, repo: org/repo}]
          docker: {image: python:3.11-slim}
        tests:
          - id: a
            input: hi
            assertions:
              - {type: field-accuracy, fields: [{path: x, match: exact}]}
              - {type: contains, value: x, transform: upper}
          - id: b
            input: hi
        ";
    let run = convert(eval);
    run.expect_code(2).expect_stderr(
        "
        error: invalid AgentV EVAL.yaml:
          e.eval.yaml:3:3: /workspace/docker: `workspace.docker` is not supported: evalgate's workspaces are directories, not containers
          e.eval.yaml:8:10: /tests/0/assertions/0/type: assertion type `field-accuracy` is not supported
          e.eval.yaml:9:36: /tests/0/assertions/1/transform: `transform` is not supported on a `contains` assertion
          e.eval.yaml:2:26: /workspace/repos/0/repo: `org/repo` is a remote repository: evalgate checks out only local repositories (no network at trial time)
          e.eval.yaml:10:5: /tests/1: a test needs `criteria`, `expected_output` or `assertions`
        ",
    );
}

#[test]
fn suite_level_assertions_and_input_apply_to_every_test_with_its_own_criteria() {
    let eval = "
        input: You are terse.
        assertions:
          - {type: llm-grader}
          - {type: contains, value: ok}
        tests:
          - id: a
            criteria: Says `ok`
            input: first
          - id: b
            criteria: Says `fine`
            input: second
            execution: {skip_defaults: true}
            assertions: [{type: equals, value: fine}]
        ";
    let run = convert(eval);
    run.expect_code(0);
    let suite: Value = evalgate::yaml::from_str(&run.stdout).unwrap();
    let a = &suite["tasks"][0];
    assert_eq!(
        a["messages"],
        json!([{"role": "user", "content": "You are terse."}, {"role": "user", "content": "first"}])
    );
    assert_eq!(a["grade"][0]["criteria"], json!([{"criterion": "Says `ok`", "weight": 1.0}]), "{}", run.stdout);
    assert_eq!(a["grade"][1]["type"], "contains");
    let b = &suite["tasks"][1];
    assert_eq!(b["prompt"], "second", "skip_defaults drops the suite's input");
    assert_eq!(b["grade"], json!([{"type": "equals", "value": "fine"}]), "and its assertions");
    assert_eq!(a["threshold"], 0.8);
}

#[test]
fn deprecated_4x_spellings_are_read_and_errors_point_at_them() {
    let eval = "
        assert:
          - {type: contains, value: ok}
        eval_cases:
          - id: a
            expected_outcome: Says `ok`
            input: first
            assert: [Is polite, Is short, {type: equals, value: ok}]
          - id: b
            criteria: Says `fine`
            input: second
            evaluators: [{type: starts-with, value: fine}]
          - id: c
            expected_outcome: Says hi
            input: third
            execution: {skip_defaults: true}
        ";
    let run = convert(eval);
    run.expect_code(0);
    let suite: Value = evalgate::yaml::from_str(&run.stdout).unwrap();
    let a = &suite["tasks"][0]["grade"];
    assert_eq!(a[0], json!({"type": "equals", "value": "ok"}), "{}", run.stdout);
    assert_eq!(a[1]["weight"], 2, "two shorthand strings weigh as two assertions: {}", run.stdout);
    assert_eq!(a[1]["criteria"][1]["criterion"], "Is short");
    assert_eq!(a[2]["type"], "contains", "the suite's `assert` applies too");
    let b = &suite["tasks"][1]["grade"];
    assert_eq!(b[0], json!({"type": "starts_with", "value": "fine"}));
    let c = &suite["tasks"][2]["grade"];
    assert_eq!(c[0]["criteria"], json!([{"criterion": "Says hi", "weight": 1.0}]), "judged on `expected_outcome`");

    let broken = eval.replace("{type: equals, value: ok}", "{type: field-accuracy}").replace("input: second", "");
    let run = convert(&broken);
    run.expect_code(2);
    assert!(run.stderr_has("e.eval.yaml:7:36: /eval_cases/0/assert/2/type"), "{}", run.stderr);
    // A missing key is reported at the test that lacks it.
    assert!(run.stderr_has("e.eval.yaml:8:5: /eval_cases/1/input: a test needs `input`"), "{}", run.stderr);
}

/// An eval whose code grader checks AgentV's whole payload (tests/fixtures/agentv/evals/
/// graders/sdk_payload.py), with a test's `vars`, suite metadata and grader `config`.
const PAYLOAD_EVAL: &str = r#"input: You are terse.
metadata: {team: billing}
tests:
  - id: refund
    vars: {order: 7, days: "30"}
    metadata: {priority: 1}
    criteria: "Refunds order {{ order }} within {{days}} days"
    input: "Process the refund for order {{ order }}"
    expected_output: "Refund issued for order {{order}}"
    assertions:
      - type: code-grader
        command: [python3, graders/sdk_payload.py]
        maxRefund: 100
        config: {currencyCode: EUR}
        required: true
      - {type: code-grader, name: exits-1, command: [sh, -c, "echo '{\"score\": 1}'; exit 1"]}
"#;

#[test]
fn a_code_grader_reads_agentv_s_payload_and_a_failing_exit_scores_0_as_in_agentv() {
    let suite = "
        evalgate: 1
        suite: payload
        agents:
          bot: {command: [./refund-agent.sh, '{prompt}']}
        imports:
          - {format: agentv, path: evals/payload.eval.yaml, agent: bot}
        ";
    let run = Test::new()
        .write("refund-agent.sh", &fixture("refund-agent.sh"))
        .write("evals/payload.eval.yaml", PAYLOAD_EVAL)
        .write("evals/graders/sdk_payload.py", &fixture("evals/graders/sdk_payload.py"))
        .file("evalgate.yaml", suite)
        .args(&["run", "-j", "1"])
        .run();
    let task = run.task("refund");
    let graders = task["trials"][0]["graders"].as_array().unwrap();
    let payload = &graders[0];
    let failed: Vec<&Value> =
        payload["evidence"].as_array().map(|a| a.iter().filter(|c| c["passed"] != true).collect()).unwrap_or_default();
    assert_eq!((payload["status"].as_str(), failed.len()), (Some("passed"), 0), "{payload:#}");
    // AgentV: a code grader exiting non-zero with JSON on stdout failed, and a failed grader
    // scores 0; the test is graded on (half its weight met: below 0.8).
    assert_eq!(
        (graders[1]["status"].as_str(), graders[1]["score"].as_f64()),
        (Some("failed"), Some(0.0)),
        "{:#}",
        graders[1]
    );
    assert!(graders[1]["reason"].as_str().unwrap().contains("exited with code 1"), "{:#}", graders[1]);
    assert_eq!((task["status"].as_str(), task["trials"][0]["score"].as_f64()), (Some("failed"), Some(0.5)), "{task:#}");
}

#[test]
fn required_min_score_trials_operators_and_reference_answers_map_as_agentv_reads_them() {
    let eval = "
        execution: {threshold: 0.7, trials: {count: 3, strategy: pass_at_k}}
        tests:
          - id: a
            criteria: Says `ok`
            expected_output: ok then
            input: first
          - id: b
            input: second
            assertions:
              - {type: contains, value: ok, required: 0.6, id: c1}
              - {type: contains, value: fine, required: true}
              - {type: contains, value: yes, required: true, min_score: 0.5}
              - type: rubrics
                criteria:
                  - {id: r1, outcome: Claims the refund is free, operator: contradiction, required: false}
                  - {id: r2, outcome: Names the order, required: true}
        ";
    let run = convert(eval);
    run.expect_code(0);
    let suite: Value = evalgate::yaml::from_str(&run.stdout).unwrap();
    let a = &suite["tasks"][0];
    assert_eq!((a["repeat"].as_u64(), a["min_pass"].as_u64()), (Some(3), Some(1)), "pass_at_k: {}", run.stdout);
    assert_eq!(a["grade"][0]["reference"], "ok then", "expected_output is the judge's reference: {}", run.stdout);
    let b = &suite["tasks"][1]["grade"];
    assert_eq!((b[0]["required"].as_bool(), b[0]["min_score"].as_f64()), (Some(true), Some(0.6)), "{}", run.stdout);
    // AgentV 4.42.4: the file's `execution.threshold` (0.7) is its summary's alone; a
    // required grader's default minimum is the test's threshold, 0.8 here
    // (tests/fixtures/agentv-diff/probe-threshold.eval.yaml, recorded).
    assert_eq!(b[1]["min_score"], 0.8, "a required grader's default min_score is the test threshold");
    assert_eq!(suite["tasks"][1]["threshold"], 0.8, "the file's threshold is not the test's");
    assert_eq!(b[2]["min_score"], 0.5);
    let contradiction = b[3]["criteria"][0]["criterion"].as_str().unwrap();
    assert!(contradiction.starts_with("The answer makes no claim that contradicts"), "{contradiction}");

    let run = convert(&eval.replace("strategy: pass_at_k", "strategy: mean"));
    run.expect_code(2);
    assert!(run.stderr_has("/execution/trials/strategy: trial strategy `mean` is not supported"), "{}", run.stderr);
    let turns = "
        tests:
          - id: a
            turns: [{input: hi}]
            input: hi
            criteria: x
        ";
    let run = convert(turns);
    run.expect_code(2);
    assert!(
        run.stderr_has("e.eval.yaml:3:5: /tests/0/turns: this key requires `mode: conversation`"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_required_grader_passes_at_its_min_score() {
    // One of two criteria met: score 0.5. Required with min_score 0.5 it passes; the test's
    // threshold (0.5 here) is met, so the task passes; with min_score 0.6 it fails. The
    // threshold is the test's own: a file-level one would leave the test at 0.8 in AgentV.
    let server = judge();
    let eval = |min: &str| {
        unindent(
            "
            tests:
              - id: a
                execution: {threshold: 0.5}
                input: receipt
                assertions:
                  - type: rubrics
                    required: true
                    min_score: <min>
                    criteria: [{outcome: 'Says `receipt`'}, {outcome: 'Says `invoice`'}]
            ",
        )
        .replace("<min>", min)
    };
    let suite = unindent(
        "
            evalgate: 1
            suite: s
            agents:
              bot: {command: [./agent.sh, '{prompt}']}
            judge: {provider: openai, model: m, base_url: '<url>/v1', api_key_env: JUDGE_KEY}
            imports:
              - {format: agentv, path: e.eval.yaml, agent: bot}
            ",
    )
    .replace("<url>", &server.url());
    for (min, status) in [("0.5", "passed"), ("0.6", "failed")] {
        let run = Test::new()
            .write("agent.sh", &fixture("agent.sh"))
            .write("e.eval.yaml", &eval(min))
            .write("evalgate.yaml", &suite)
            .env("JUDGE_KEY", KEY)
            .args(&["run"])
            .run();
        assert_eq!(run.task("a")["status"], status, "min_score {min}: {}", run.stderr);
    }
}

#[test]
fn external_test_lists_are_read_and_point_at_their_own_lines() {
    let eval = "tests: ./cases.jsonl\n";
    let cases = "{\"id\": \"one\", \"input\": \"hi\", \"criteria\": \"x\"}\n\n{\"id\": \"two\", \"input\": \"hi\", \"assertions\": [{\"type\": \"contains\", \"value\": \"a\"}]}\n";
    let yaml_cases = "
        - id: three
          input: hi
          assertions: [{type: equals, value: hi}]
        ";
    let test = |eval: &str, cases: &str| {
        Test::new()
            .write("agent.sh", &fixture("agent.sh"))
            .file("e.eval.yaml", eval)
            .write("cases.jsonl", cases)
            .file("more.yaml", yaml_cases)
            .suite(
                "
                evalgate: 1
                suite: s
                agents:
                  bot: {command: [./agent.sh, '{prompt}']}
                judge: {provider: openai, model: m}
                imports:
                  - {format: agentv, path: e.eval.yaml, agent: bot}
                ",
            )
    };
    // `evalgate list` prints each task at its own file and line.
    let run = test(
        "
        tests:
          - file://cases.jsonl
          - file://more.yaml
        ",
        cases,
    )
    .args(&["list"])
    .run();
    run.expect_code(0);
    assert_eq!(run.stdout, "s/one  cases.jsonl:1\ns/two  cases.jsonl:3\ns/three  more.yaml:1\n");
    // A problem in a test of the external list is reported at its line in that file.
    let run = test(eval, &cases.replace("\"criteria\": \"x\"", "\"turns\": []")).args(&["check"]).run();
    run.expect_code(2);
    assert!(run.stderr_has("cases.jsonl:1:30: /0/turns: this key requires `mode: conversation`"), "{}", run.stderr);
}

#[test]
fn an_agentv_5_file_gets_one_error() {
    let mut eval = unindent(
        "
        providers: [github-models]
        prompts: ['{{ input }}']
        tests:
        ",
    );
    let test = "
        - id: t<i>
          assert: [{type: script-grader, command: x}]
        ";
    for i in 0..50 {
        eval.push_str(&unindent(test).replace("<i>", &i.to_string()));
    }
    let run = convert(&eval);
    run.expect_messages("error: invalid AgentV EVAL.yaml:\n  e.eval.yaml:1:1: /: AgentV 5.x is not supported (4.x is): this file is a 5.x eval, by its top-level `providers`; write it in the 4.x format (AgentV v4.42.4) or run it with AgentV\n");
    run.expect_code(2);
    assert_eq!(run.stderr.matches("AgentV 5.x is not supported (4.x is)").count(), 1, "{}", run.stderr);
    assert!(run.stderr.lines().count() < 8, "{}", run.stderr);
}

#[test]
fn a_problem_in_an_imported_task_is_reported_in_the_file_that_holds_it() {
    let eval = r#"
        tests:
          - id: one
            input: hi
            assertions: [{type: contains, value: hi}]
          - id: two
            input: hi
            assertions:
              - {type: regex, value: "([a"}
        "#;
    let run = Test::new()
        .file("evals/e.eval.yaml", eval)
        .suite(
            "
            evalgate: 1
            suite: s
            agents:
              bot: {command: [echo, '{prompt}']}
            imports:
              - {format: agentv, path: evals/e.eval.yaml, agent: bot}
            ",
        )
        .args(&["check"])
        .expect_messages("error: evals/e.eval.yaml:5:1: this task's converted `grade[0].pattern`: the JavaScript regex /([a/ cannot be matched as AgentV matches it: a class `[` is not closed\n  help: `evalgate convert` prints the task as converted\n1 error in the suite; nothing ran\n").run();
    run.expect_code(2);
    assert!(
        run.stderr
            .contains("evals/e.eval.yaml:5:1: this task's converted `grade[0].pattern`: the JavaScript regex /([a/ cannot be matched as AgentV matches it: a class `[` is not closed"),
        "{}",
        run.stderr
    );
    assert!(run.stderr_lacks("tasks[1]"), "no key the user never wrote: {}", run.stderr);
}

/// A `file` content block reaches a command agent as AgentV's `cli` target gets it, a
/// reference to the file by its absolute path; a missing file is refused at its block.
#[test]
fn a_file_content_block_is_a_reference_to_the_file_and_a_missing_one_is_refused() {
    let eval = "
        tests:
          - id: policy
            criteria: Cites the policy
            input:
              - role: user
                content: [{type: text, value: Summarise}, {type: file, value: docs/policy.md}]
        ";
    let run = Test::new()
        .file("docs/policy.md", "Refunds within 30 days.\n")
        .file("e.eval.yaml", eval)
        .args(&["convert", "e.eval.yaml"])
        .run();
    run.expect_code(0);
    let path = run.dir.join("docs/policy.md");
    let reference = format!("Summarise\n    <file: path=\"{}\">", path.display());
    assert!(run.stdout.contains(&reference), "{}", run.stdout);
    let missing = convert(eval);
    missing.expect_code(2);
    assert!(
        missing.stderr_has("/tests/0/input/0/content: cannot find the file `docs/policy.md` beside the eval file"),
        "{}",
        missing.stderr
    );
}

/// AgentV 4.42.4 trims the expected value of `starts-with` and `ends-with` as well as the
/// output: `" Dear "` matches an answer starting `Dear`.
#[test]
fn starts_with_and_ends_with_trim_the_expected_value() {
    let run = convert(
        "
        tests:
          - id: a
            input: hi
            assertions:
              - {type: starts-with, value: '  Dear '}
              - {type: ends-with, value: \"regards\\n\"}
        ",
    );
    run.expect_code(0);
    let suite: Value = evalgate::yaml::from_str(&run.stdout).unwrap();
    let grade = &suite["tasks"][0]["grade"];
    assert_eq!(
        (grade[0]["value"].clone(), grade[1]["value"].clone()),
        (json!("Dear"), json!("regards")),
        "{}",
        run.stdout
    );
}
