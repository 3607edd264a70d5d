//! Unknown never stands for known: a figure over a set with an unknown member is unknown,
//! and an unknown never satisfies a gate; what an attempt did counts; a verdict on cut
//! output stands only if no byte past the cut could change it.

use serde_json::{Value, json};

use crate::common::server::Server;
use crate::common::{Test, suite, unindent};

fn check<'a>(results: &'a Value, name: &str) -> &'a Value {
    let checks = results["verdict"]["checks"].as_array().unwrap();
    checks.iter().find(|c| c["name"] == name).unwrap_or_else(|| panic!("no check {name}: {checks:#?}"))
}

/// A p95 latency gate over a partial replay: the replayed task was not measured, so the
/// p95 of the live one alone would stand for the run. It is unknown, and fails the gate.
#[test]
fn a_p95_over_a_partial_replay_is_unknown_and_fails_its_gate() {
    let server = Server::start(|_| {
        let reply = json!({"id": "c", "object": "chat.completion", "model": "m",
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "Paris"}}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 1}});
        (200, reply.to_string())
    });
    let yaml = unindent(
        "
        evalgate: 1
        suite: p95
        cassettes: {}
        agents:
          bot: {provider: openai, model: m, base_url: '<url>/v1', api_key_env: EVALGATE_TEST_KEY}
        pricing: {m: {input_per_mtok: 1, output_per_mtok: 1}}
        thresholds: {max_p95_latency_ms: 600000}
        tasks:
          - {id: a, prompt: Capital of France?, grade: [{type: contains, value: Paris}]}
          - {id: b, prompt: Capital of France again?, grade: [{type: contains, value: Paris}]}
        ",
    )
    .replace("<url>", &server.url());
    let test = Test::new().write("evalgate.yaml", &yaml);
    let dir = test.path().to_owned();
    let run = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_evalgate"))
            .current_dir(&dir)
            .args(args)
            .env("EVALGATE_TEST_KEY", "sk-test")
            .env_remove("GITHUB_ACTIONS")
            .output()
            .unwrap()
    };
    assert_eq!(run(&["run", "--record", "--filter", "a"]).status.code(), Some(0));
    let partial = run(&["run", "--record-missing"]);
    let results: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("evalgate-out/results.json")).unwrap()).unwrap();
    let p95 = check(&results, "p95 latency");
    assert_eq!(p95["passed"], false, "{p95}");
    assert!(p95["actual"].as_str().unwrap().starts_with("unknown: 1 of 2 not known"), "{p95}");
    assert_eq!(results["totals"]["tasks_without_latency"], 1, "{}", results["totals"]);
    assert_eq!(partial.status.code(), Some(1));
}

/// An arm's cost gate when half its tasks reported no cost: a difference over the tasks
/// where both arms reported one would stand for the arm. It is unknown, and fails.
#[test]
fn an_arm_with_costs_unknown_on_some_tasks_fails_its_cost_gate() {
    let agent = r#"#!/bin/sh
case "$3:$2" in
  yes:t3@*|yes:t4@*) echo '{}' > "$EVALGATE_TRACE" ;;
  *) printf '{"usage": {"cost_usd": %s}}' "$1" > "$EVALGATE_TRACE" ;;
esac
echo ok
"#;
    let yaml = "
        evalgate: 1
        suite: costs
        vars: {cost: '1.0', partial: 'no'}
        agents:
          bot: {command: [./agent.sh, '{vars.cost}', '{task.id}', '{vars.partial}']}
        thresholds: {pass_score: 0}
        variants:
          control: full
          arms:
            full: {}
            cheap: {vars: {cost: '0.5', partial: 'yes'}, gate: {max_cost_increase_pct: 0}}
        tasks:
          - {id: t1, prompt: x, grade: [{type: contains, value: ok}]}
          - {id: t2, prompt: x, grade: [{type: contains, value: ok}]}
          - {id: t3, prompt: x, grade: [{type: contains, value: ok}]}
          - {id: t4, prompt: x, grade: [{type: contains, value: ok}]}
        ";
    let run = Test::new().suite(yaml).write("agent.sh", agent).args(&["run", "-q"]).run();
    let results = run.results();
    let cost = check(&results, "variant cheap vs full: cost");
    assert_eq!(cost["passed"], false, "{cost}");
    assert!(cost["actual"].as_str().unwrap().starts_with("unknown"), "{cost}");
    assert_eq!(run.code, 1, "{}", run.stderr);
}

/// Weights that add up to 0 decide nothing: the task is an error, not the unweighted mean
/// of graders given weight 0.
#[test]
fn graders_whose_weights_add_up_to_zero_decide_nothing() {
    let run = Test::new()
        .write("agent.sh", "#!/bin/sh\necho ok\n")
        .write("evalgate.yaml", &suite("", "  - {id: t, prompt: x, grade: [{type: contains, value: ok, weight: 0}]}\n"))
        .args(&["run"])
        .run();
    run.expect_code(1);
    let task = run.task("t");
    assert_eq!(task["status"], "error", "{task}");
    assert!(task["reason"].as_str().unwrap().contains("has weight 0: nothing decides its score"), "{task}");
}

/// An attempt called the destructive tool and crashed; the retry was clean. The call
/// happened: `tool_not_called` judges every attempt's calls and fails the task.
#[test]
fn a_call_an_attempt_made_before_it_crashed_fails_tool_not_called_after_a_clean_retry() {
    let agent = r#"#!/bin/sh
if [ ! -e attempted ]; then
  touch attempted
  echo '{"tool_calls": [{"name": "delete_all", "arguments": {}}]}' > "$EVALGATE_TRACE"
  echo crashed >&2
  exit 3
fi
echo '{"tool_calls": []}' > "$EVALGATE_TRACE"
echo done
"#;
    let run = Test::new()
        .write("agent.sh", agent)
        .write(
            "evalgate.yaml",
            &suite(
                "defaults: {retries: 1}",
                "  - {id: t, prompt: x, grade: [{type: tool_not_called, tool: delete_all}, {type: contains, value: done}]}\n",
            ),
        )
        .args(&["run"])
        .run();
    run.expect_code(1);
    let task = run.task("t");
    assert_eq!(task["status"], "failed", "{task}");
    let trial = &task["trials"][0];
    assert_eq!(trial["retried"].as_array().map(Vec::len), Some(1), "{trial}");
    let graders = trial["graders"].as_array().unwrap();
    assert_eq!(graders[0]["status"], "failed", "{graders:?}");
    assert!(graders[0]["reason"].as_str().unwrap().contains("was called 1 time(s)"), "{graders:?}");
}

/// A regex whose match reaches the 1 MiB cut (`done\b`, where the whole output goes on
/// `donex…`) is no match in the whole: not a pass. A `file` content check of a file that
/// was never written saw no content: negated, it is an error, not "does not contain".
#[test]
fn a_verdict_past_the_cut_or_on_an_absent_file_is_never_a_pass() {
    let agent =
        "#!/usr/bin/env python3\nimport sys\ncap = 1 << 20\nsys.stdout.write('a' * (cap - 5) + ' done' + 'xyz' * 10)\n";
    let run = Test::new()
        .write("agent.py", agent)
        .write(
            "evalgate.yaml",
            &unindent(
                r#"
                evalgate: 1
                suite: cut
                agents:
                  bot: {command: [./agent.py], timeout: 20s}
                tasks:
                  - {id: boundary, prompt: x, grade: [{type: regex, pattern: 'done\b'}]}
                  - {id: inside, prompt: x, grade: [{type: regex, pattern: 'a+ d'}]}
                  - id: never-written
                    prompt: x
                    grade: [{type: file, path: out.sql, expect: {contains: DROP TABLE}, negate: true}]
                "#,
            ),
        )
        .args(&["run"])
        .run();
    run.expect_code(1);
    let boundary = run.task("boundary");
    assert_eq!(boundary["status"], "error", "{boundary}");
    assert!(boundary["reason"].as_str().unwrap().contains("cut at 1 MiB"), "{boundary}");
    assert_eq!(run.task("inside")["status"], "passed", "a match that ends before the cut holds");
    let absent = run.task("never-written");
    assert_eq!(absent["status"], "error", "{absent}");
    assert!(absent["reason"].as_str().unwrap().contains("its content was never there to check"), "{absent}");
}
