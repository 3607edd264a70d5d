//! Model agents and judges against a local server that speaks the OpenAI Chat Completions
//! and Anthropic Messages protocols.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use crate::common::server::{Reply, Request, Server};
use crate::common::{Test, indent, numbered, unindent};
use serde_json::{Value, json};

const KEY: &str = "sk-test-secret-value-9b1c";

fn openai_answer(text: &str, usage: Value) -> String {
    json!({"id": "chatcmpl-1", "object": "chat.completion", "model": "gpt-4o-mini-2024-07-18",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
        "usage": usage})
    .to_string()
}

fn openai_verdict(arguments: Value) -> String {
    json!({"id": "chatcmpl-2", "object": "chat.completion", "model": "gpt-4o-mini",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": null,
            "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "record_verdict", "arguments": arguments.to_string()}}]}}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}})
    .to_string()
}

fn body(r: &Request) -> Value {
    serde_json::from_str(&r.body).unwrap_or(Value::Null)
}

/// A suite with the OpenAI agent `bot` on `server`, the top-level keys `extra` and the given tasks,
/// each an indented block; `<url>` anywhere is the server's address.
fn suite(server: &Server, extra: &str, tasks: &str) -> String {
    let header = "
        evalgate: 1
        suite: t
        agents:
          bot: {provider: openai, model: gpt-4o-mini, base_url: '<url>/v1', api_key_env: EVALGATE_TEST_KEY, system: Be brief., retries: 2, timeout: 2s}
        ";
    let yaml = unindent(header) + &unindent(extra) + "\ntasks:\n" + &indent(tasks, 2);
    yaml.replace("<url>", &server.url())
}

/// The top-level judge for [`suite`]: gpt-4o-mini on the test's server.
const JUDGE: &str =
    "judge: {provider: openai, model: gpt-4o-mini, base_url: '<url>/v1', api_key_env: EVALGATE_TEST_KEY}";

#[track_caller]
fn run(yaml: &str) -> crate::common::Run {
    Test::new().write("evalgate.yaml", yaml).env("EVALGATE_TEST_KEY", KEY).args(&["run", "-j", "1"]).run()
}

#[test]
fn an_openai_agent_answers_and_its_cost_comes_from_the_price_table() {
    let server = Server::start(|r| {
        let b = body(r);
        assert_eq!(r.path, "/v1/chat/completions");
        assert_eq!(r.header("authorization"), Some(format!("Bearer {KEY}").as_str()));
        assert_eq!(b["messages"][0], json!({"role": "system", "content": "Be brief."}));
        let usage = json!({"prompt_tokens": 1000, "completion_tokens": 200, "total_tokens": 1200,
            "prompt_tokens_details": {"cached_tokens": 400}, "completion_tokens_details": {"reasoning_tokens": 50}});
        (
            200,
            openai_answer(
                &format!("Refunds within 30 days. You asked: {}", b["messages"][1]["content"].as_str().unwrap()),
                usage,
            ),
        )
    });
    let yaml = suite(
        &server,
        "",
        "
            - id: refund
              prompt: What is the refund window?
              grade: [{type: contains, value: 30 days}]
            ",
    );
    let run = run(&yaml);
    run.expect_code(0);
    let trial = &run.task("refund")["trials"][0];
    assert_eq!(trial["model"], "gpt-4o-mini-2024-07-18");
    assert_eq!(trial["usage"]["input_tokens"], 1000);
    // (600 × 0.15 + 400 × 0.075 + 200 × 0.60) / 1e6
    let cost = trial["usage"]["cost_usd"].as_f64().unwrap();
    assert!((cost - 0.00024).abs() < 1e-12, "{cost}");
}

#[test]
fn an_anthropic_agent_with_cache_tokens_and_a_price_override() {
    let server = Server::start(|r| {
        assert_eq!(r.path, "/v1/messages");
        assert_eq!(r.header("x-api-key"), Some(KEY));
        assert_eq!(r.header("anthropic-version"), Some("2023-06-01"));
        let b = body(r);
        assert_eq!(b["system"], "Be brief.");
        assert_eq!(b["max_tokens"], 1024);
        let answer = json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-x-1",
            "content": [{"type": "thinking", "thinking": "..."}, {"type": "text", "text": "Paris."}],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": 100, "output_tokens": 10, "cache_creation_input_tokens": 200, "cache_read_input_tokens": 300}});
        (200, answer.to_string())
    });
    let yaml = "
        evalgate: 1
        suite: t
        pricing:
          claude-x: {input_per_mtok: 1, output_per_mtok: 10, cache_read_per_mtok: 0.1, cache_write_per_mtok: 2}
        agents:
          bot: {provider: anthropic, model: claude-x-1, base_url: '<url>', api_key_env: EVALGATE_TEST_KEY, system: Be brief.}
        tasks:
          - id: capital
            prompt: Capital of France?
            grade: [{type: equals, value: Paris.}]
        ";
    let run = run(&unindent(yaml).replace("<url>", &server.url()));
    run.expect_code(0);
    let usage = &run.task("capital")["trials"][0]["usage"];
    assert_eq!(usage["input_tokens"], 600);
    // (100 × 1 + 300 × 0.1 + 200 × 2 + 10 × 10) / 1e6
    assert!((usage["cost_usd"].as_f64().unwrap() - 0.00063).abs() < 1e-12, "{usage}");
}

/// A negative or non-finite price would make costs negative and pass a cost gate: the
/// suite's `pricing:` refuses it at its line, `--pricing FILE` with the file's name.
#[test]
fn negative_or_non_finite_prices_are_invalid_input() {
    let yaml = unindent(
        "
        evalgate: 1
        suite: t
        pricing:
          m: {input_per_mtok: 1, output_per_mtok: -10}
        agents:
          bot: {command: [echo, hi]}
        tasks:
          - {id: t, prompt: x, grade: [{type: contains, value: hi}]}
        ",
    );
    let run = Test::new().write("evalgate.yaml", &yaml).args(&["check"]).run();
    run.expect_code(2).expect_stderr(
        "
        error: evalgate.yaml:4:43: pricing.m.output_per_mtok: must be 0 or more, got -10
          |
        4 |   m: {input_per_mtok: 1, output_per_mtok: -10}
          |                                           ^

        1 error in the suite; nothing ran
        ",
    );
    let prices = "
        pricing:
          m: {input_per_mtok: 1, output_per_mtok: -10}
        ";
    let yaml = yaml.replace(&unindent(prices), "");
    for (prices, why) in [
        (
            "m: {input_per_mtok: 1, output_per_mtok: 1, cache_read_per_mtok: -0.5}",
            "m.cache_read_per_mtok: must be 0 or more, got -0.5",
        ),
        ("m: {input_per_mtok: .nan, output_per_mtok: 1}", "m.input_per_mtok: must be 0 or more, got NaN"),
        ("m: {input_per_mtok: 1, output_per_mtok: .inf}", "m.output_per_mtok: must be 0 or more, got inf"),
    ] {
        let run = Test::new()
            .write("evalgate.yaml", &yaml)
            .write("prices.yaml", prices)
            .args(&["run", "--pricing", "prices.yaml"])
            .run();
        run.expect_code(2);
        assert!(run.stderr_has(&format!("invalid pricing file prices.yaml: {why}")), "{prices}: {}", run.stderr);
    }
}

#[test]
fn rate_limits_honour_retry_after_and_server_errors_are_retried() {
    let calls = Arc::new(AtomicU32::new(0));
    let count = calls.clone();
    let server = Server::start_with(move |_| match count.fetch_add(1, Ordering::SeqCst) {
        0 => Reply {
            status: 429,
            headers: vec![("retry-after".into(), "1".into())],
            body: br#"{"error": {"message": "Rate limit reached", "type": "rate_limit"}}"#.to_vec(),
        },
        1 => Reply::json(500, r#"{"error": {"message": "internal"}}"#),
        _ => Reply::json(200, openai_answer("ok", json!({"prompt_tokens": 1, "completion_tokens": 1}))),
    });
    let started = std::time::Instant::now();
    let run = run(&suite(
        &server,
        "",
        "
        - id: t
          prompt: x
          grade: [{type: equals, value: ok}]
        ",
    ));
    run.expect_code(0);
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    assert!(started.elapsed() >= Duration::from_secs(1), "Retry-After was not honoured");
}

#[test]
fn malformed_bodies_errors_and_timeouts_are_task_errors() {
    let server = Server::start_with(|r| {
        let prompt = body(r)["messages"][1]["content"].as_str().unwrap_or_default().to_owned();
        match prompt.as_str() {
            "malformed" => Reply::json(200, "{\"choices\": [}"),
            "missing" => Reply::json(200, r#"{"id": "x", "choices": []}"#),
            "forbidden" => Reply::json(401, r#"{"error": {"message": "Incorrect API key provided"}}"#),
            _ => {
                std::thread::sleep(Duration::from_secs(4));
                Reply::json(200, openai_answer("late", json!({})))
            }
        }
    });
    let tasks = ["malformed", "missing", "forbidden", "slow"]
        .map(|p| {
            unindent(
                "
            - id: <p>
              prompt: <p>
              grade: [{type: contains, value: x}]
            ",
            )
            .replace("<p>", p)
        })
        .concat();
    let yaml = suite(&server, "", &tasks).replace("retries: 2", "retries: 0");
    let run = run(&yaml);
    run.expect_code(1);
    let reason = |id: &str| run.task(id)["reason"].as_str().unwrap().to_owned();
    assert!(
        reason("malformed").starts_with("agent `bot`: malformed response from openai (HTTP 200): not JSON"),
        "{}",
        reason("malformed")
    );
    assert!(reason("malformed").contains("body: {\"choices\": [}"));
    assert_eq!(
        reason("missing"),
        "agent `bot`: malformed response from openai (HTTP 200): no `choices[0]`; body: {\"id\": \"x\", \"choices\": []}"
    );
    assert_eq!(reason("forbidden"), "agent `bot`: HTTP 401 from openai: Incorrect API key provided");
    // The request's own timeout and the agent's (both 2s) may fire first: either way a timeout error.
    assert!(
        reason("slow").starts_with("agent `bot`: ") && reason("slow").ends_with("timed out after 2s"),
        "{}",
        reason("slow")
    );
    for id in ["malformed", "missing", "forbidden", "slow"] {
        assert_eq!(run.task(id)["status"], "error");
    }
}

#[test]
fn a_rubric_judged_two_of_three_criteria_scores_their_weights() {
    let server = Server::start(|r| {
        let b = body(r);
        if b.get("tool_choice").is_some() {
            let user = b["messages"][1]["content"].as_str().unwrap();
            assert!(user.contains("0. polite") && user.contains("2. cites the 30-day window"), "{user}");
            (
                200,
                openai_verdict(json!({"criteria": [
                {"index": 0, "met": true, "note": "courteous"},
                {"index": 1, "met": false, "note": "no apology"},
                {"index": 2, "met": true, "note": "mentions 30 days"}]})),
            )
        } else {
            (200, openai_answer("Refunds within 30 days.", json!({"prompt_tokens": 10, "completion_tokens": 5})))
        }
    });
    let tasks = "
        - id: t
          prompt: Refund?
          threshold: 0.7
          grade:
            - type: rubric
              criteria:
                - {criterion: polite, weight: 0.5}
                - {criterion: apologises, weight: 0.3}
                - {criterion: cites the 30-day window, weight: 0.2}
        ";
    let run = run(&suite(&server, JUDGE, tasks));
    run.expect_code(0);
    let grader = &run.task("t")["trials"][0]["graders"][0];
    assert!((grader["score"].as_f64().unwrap() - 0.7).abs() < 1e-9, "{grader}");
    assert_eq!(
        grader["reason"],
        "✓ polite: courteous; ✗ apologises: no apology; ✓ cites the 30-day window: mentions 30 days"
    );
    // The judge's cost is counted with the agent's: 10+5 and 100+10 tokens of gpt-4o-mini.
    let trial = &run.task("t")["trials"][0];
    assert!(trial["judge_cost_usd"].as_f64().unwrap() > 0.0);
}

/// Both replies were paid for: the grader's error keeps their cost in the trial's judge cost.
#[test]
fn an_unparseable_judge_is_asked_twice_then_errors() {
    let judged = Arc::new(AtomicU32::new(0));
    let count = judged.clone();
    let server = Server::start(move |r| {
        if body(r).get("tool_choice").is_some() {
            count.fetch_add(1, Ordering::SeqCst);
            (200, openai_answer("I think it is fine.", json!({"prompt_tokens": 100_000, "completion_tokens": 10_000})))
        } else {
            (200, openai_answer("answer", json!({})))
        }
    });
    let run = run(&suite(
        &server,
        JUDGE,
        "
            - id: t
              prompt: x
              grade: [{type: llm, contains: the answer}]
            ",
    ));
    run.expect_code(1);
    let task = run.task("t");
    assert_eq!(judged.load(Ordering::SeqCst), 2, "{task}");
    assert_eq!(task["status"], "error");
    assert_eq!(
        task["reason"],
        "grader `llm` errored: the judge's verdict could not be read twice: no record_verdict call"
    );
    // Each call: 100k input and 10k output tokens of gpt-4o-mini, $0.015 + $0.006.
    let trial = &task["trials"][0];
    assert!((trial["judge_cost_usd"].as_f64().unwrap() - 2.0 * 0.021).abs() < 1e-9, "{trial}");
}

/// A verdict that miscounts the criteria, or answers with something other than the
/// booleans asked for, is read twice (the judge is asked again) and then is an error.
#[test]
fn a_judge_verdict_that_miscounts_or_does_not_answer_the_question_is_an_error() {
    let server = Server::start(|r| {
        let b = body(r);
        if b.get("tool_choice").is_none() {
            return (200, openai_answer("answer", json!({})));
        }
        let user = b["messages"][1]["content"].as_str().unwrap();
        let prompt = user.lines().nth(1).unwrap();
        let (a, b) = (json!({"index": 0, "met": true, "note": ""}), json!({"index": 1, "met": true, "note": ""}));
        let verdict = match prompt {
            "twice" => json!({"criteria": [a, a, b]}),
            "missing" => json!({"criteria": [a]}),
            "extra" => json!({"criteria": [a, b, {"index": 2, "met": true, "note": ""}]}),
            "not-boolean" => json!({"criteria": [a, {"index": 1, "met": 1, "note": ""}]}),
            "score" => json!({"score": 1.5, "reason": "very good"}),
            _ => json!({"criteria": [a, b]}),
        };
        (200, openai_verdict(verdict))
    });
    let rubric = "
        - id: <id>
          prompt: <id>
          grade: [{type: rubric, criteria: [polite, correct]}]
        ";
    let mut tasks = String::new();
    for id in ["twice", "missing", "extra", "not-boolean", "fine"] {
        tasks.push_str(&unindent(rubric).replace("<id>", id));
    }
    tasks.push_str(&unindent(
        "
        - id: score
          prompt: score
          grade: [{type: llm, contains: the answer}]
        ",
    ));
    let run = run(&suite(&server, JUDGE, &tasks));
    run.expect_code(1);
    let expected = [
        ("twice", "grader `rubric` {} criterion 0 judged twice"),
        ("missing", "grader `rubric` {} no verdict for criterion 1"),
        ("extra", "grader `rubric` {} criterion index 2 out of range"),
        ("not-boolean", "grader `rubric` {} a criterion without a boolean `met`"),
        ("score", "grader `llm` {} the verdict has a key the schema does not: `score`"),
    ];
    unreadable_verdicts(&run, &expected);
}

/// A judge's reply is read strictly, from OpenAI and Anthropic alike: two `record_verdict`
/// calls (pass, then fail), a key given twice in the arguments (`"passed": false, …,
/// "passed": true`: serde_json keeps the last) and a key the schema does not have are each a
/// second or another answer, so the grader errors instead of passing a wrong answer.
#[test]
fn a_judge_that_answers_twice_or_outside_the_schema_is_an_error() {
    let calls = |arguments: &[&str]| {
        let calls: Vec<Value> = arguments
            .iter()
            .enumerate()
            .map(|(i, a)| json!({"id": format!("call_{i}"), "type": "function", "function": {"name": "record_verdict", "arguments": a}}))
            .collect();
        json!({"id": "chatcmpl-2", "model": "gpt-4o-mini", "choices": [{"index": 0, "finish_reason": "tool_calls",
            "message": {"role": "assistant", "content": null, "tool_calls": calls}}]})
        .to_string()
    };
    let server = Server::start(move |r| {
        let b = body(r);
        if r.path == "/v1/chat/completions" && b.get("tool_choice").is_none() {
            return (200, openai_answer("answer", json!({})));
        }
        let user = match r.path.as_str() {
            "/v1/messages" => &b["messages"][0]["content"][0]["text"],
            _ => &b["messages"][1]["content"],
        };
        let prompt = user.as_str().unwrap().lines().nth(1).unwrap().to_owned();
        let reply = match prompt.as_str() {
            "two-calls" => calls(&[r#"{"passed": true, "reason": "yes"}"#, r#"{"passed": false, "reason": "no"}"#]),
            "key-twice" => calls(&[r#"{"passed": false, "reason": "wrong", "passed": true}"#]),
            "unknown-key" => calls(&[r#"{"passed": true, "reason": "ok", "score": 7}"#]),
            "criterion-key" => calls(&[
                r#"{"criteria": [{"index": 0, "met": true, "note": "", "weight": 9}, {"index": 1, "met": true, "note": ""}]}"#,
            ]),
            "anthropic-key-twice" => r#"{"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-x-1", "stop_reason": "tool_use",
                "content": [{"type": "tool_use", "id": "t1", "name": "record_verdict", "input": {"passed": false, "reason": "wrong", "passed": true}}],
                "usage": {"input_tokens": 1, "output_tokens": 1}}"#
                .to_owned(),
            _ => calls(&[r#"{"passed": true, "reason": "yes"}"#]),
        };
        (200, reply)
    });
    let llm = "
        - id: <id>
          prompt: <id>
          grade: [{type: llm, contains: the answer}]
        ";
    let mut tasks = String::new();
    for id in ["two-calls", "key-twice", "unknown-key", "fine"] {
        tasks.push_str(&unindent(llm).replace("<id>", id));
    }
    tasks.push_str(&unindent(
        "
            - id: criterion-key
              prompt: criterion-key
              grade: [{type: rubric, criteria: [polite, correct]}]
            ",
    ));
    tasks.push_str(&unindent(
        "
            - id: anthropic-key-twice
              prompt: anthropic-key-twice
              grade: [{type: llm, contains: the answer, judge: {provider: anthropic, model: claude-x-1, base_url: '<url>', api_key_env: EVALGATE_TEST_KEY}}]
            ",
    ));
    let run = run(&suite(&server, JUDGE, &tasks));
    run.expect_code(1);
    let expected = [
        ("two-calls", "grader `llm` {} judged twice: 2 record_verdict calls"),
        ("key-twice", "grader `llm` {} the record_verdict arguments: `passed` is given twice"),
        ("unknown-key", "grader `llm` {} the verdict has a key the schema does not: `score`"),
        ("criterion-key", "grader `rubric` {} a criterion has a key the schema does not: `weight`"),
        ("anthropic-key-twice", "grader `llm` {} the record_verdict arguments: `passed` is given twice"),
    ];
    unreadable_verdicts(&run, &expected);
}

/// Each task of `expected` is an error, its judge's verdict unread for `why` (a grader and
/// its problem around `{}`), and task `fine` passed.
fn unreadable_verdicts(run: &crate::common::Run, expected: &[(&str, &str)]) {
    let unreadable = "errored: the judge's verdict could not be read twice:";
    for (id, why) in expected {
        let task = run.task(id);
        assert_eq!(task["status"], "error", "{task}");
        assert_eq!(task["reason"], why.replace("{}", unreadable), "{task}");
    }
    assert_eq!(run.task("fine")["status"], "passed");
}

#[test]
fn judge_responses_are_cached_across_runs() {
    let judged = Arc::new(AtomicU32::new(0));
    let count = judged.clone();
    let server = Server::start(move |r| {
        if body(r).get("tool_choice").is_some() {
            count.fetch_add(1, Ordering::SeqCst);
            (200, openai_verdict(json!({"passed": true, "reason": "same meaning"})))
        } else {
            (200, openai_answer("Paris is the capital.", json!({"prompt_tokens": 5, "completion_tokens": 5})))
        }
    });
    let yaml = suite(
        &server,
        JUDGE,
        "
        - id: t
          prompt: x
          grade: [{type: llm, contains: Paris}]
        ",
    );
    let test = Test::new().write("evalgate.yaml", &yaml).env("EVALGATE_TEST_KEY", KEY);
    let dir = test.path().to_owned();
    let first = test.args(&["run"]).run();
    first.expect_code(0);
    let evalgate = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_evalgate"))
            .current_dir(&dir)
            .env("EVALGATE_TEST_KEY", KEY)
            .args(args)
            .output()
            .unwrap()
    };
    assert_eq!(evalgate(&["run"]).status.code(), Some(0));
    assert_eq!(judged.load(Ordering::SeqCst), 1, "the second run's judge answer came from the cache");
    let results: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("evalgate-out/results.json")).unwrap()).unwrap();
    let grader = &results["tasks"][0]["trials"][0]["graders"][0];
    assert_eq!(grader["cached"], true);
    assert_eq!(results["tasks"][0]["trials"][0]["judge_cost_usd"], 0.0);
    assert_eq!(evalgate(&["run", "--no-cache"]).status.code(), Some(0));
    assert_eq!(judged.load(Ordering::SeqCst), 2);
}

#[test]
fn the_cost_budget_stops_dispatch() {
    let server =
        Server::start(|_| (200, openai_answer("ok", json!({"prompt_tokens": 1_000_000, "completion_tokens": 0}))));
    let tasks: String = numbered(
        0..4,
        "
            - id: t<i>
              prompt: x
              grade: [{type: equals, value: ok}]
            ",
    );
    // Each answer costs $0.15 (1M input tokens of gpt-4o-mini); the budget is $0.20.
    let run = run(&suite(&server, "thresholds: {max_cost_usd: 0.2}", &tasks));
    run.expect_messages(
        "  2 planned task(s) did not run (`t2`: not run: the cost budget (thresholds.max_cost_usd) is spent)\n",
    );
    run.expect_code(1);
    let totals = &run.results()["totals"];
    assert_eq!(totals["skipped"], 2, "{totals}");
    assert_eq!(run.task("t3")["reason"], "not run: the cost budget (thresholds.max_cost_usd) is spent");
    assert_eq!(server.requests(), 2);
}

#[test]
fn the_api_key_never_reaches_an_output() {
    let server = Server::start(|_| (401, r#"{"error": {"message": "bad key"}}"#.to_string()));
    let run = run(&suite(
        &server,
        "",
        "
        - id: t
          prompt: x
          grade: [{type: equals, value: ok}]
        ",
    ));
    run.expect_code(1);
    for file in ["results.json", "summary.json", "events.jsonl", "junit.xml", "summary.md"] {
        assert!(!run.read(&format!("evalgate-out/{file}")).contains(KEY), "{file} contains the key");
    }
    assert!(!run.stdout.contains(KEY) && run.stderr_lacks(KEY));
}

#[test]
fn a_missing_api_key_fails_preflight_by_name() {
    let server = Server::start(|_| (200, String::new()));
    let yaml = suite(
        &server,
        "",
        "
        - id: t
          prompt: x
          grade: [{type: equals, value: ok}]
        ",
    );
    let run = Test::new().write("evalgate.yaml", &yaml).args(&["run"]).run();
    run.expect_code(3);
    assert!(
        run.stderr_has("- API key `EVALGATE_TEST_KEY`: is not set (agent `bot`, openai gpt-4o-mini)"),
        "{}",
        run.stderr
    );
}

#[test]
fn agents_with_cache_true_reuse_answers_and_mark_them() {
    let calls = Arc::new(AtomicU32::new(0));
    let count = calls.clone();
    let server = Server::start(move |_| {
        count.fetch_add(1, Ordering::SeqCst);
        (200, openai_answer("ok", json!({"prompt_tokens": 1000, "completion_tokens": 10})))
    });
    let yaml = suite(
        &server,
        "",
        "
        - id: t
          prompt: x
          grade: [{type: equals, value: ok}]
        ",
    )
    .replace("timeout: 2s}", "timeout: 2s, cache: true}");
    let test = Test::new().write("evalgate.yaml", &yaml).env("EVALGATE_TEST_KEY", KEY);
    let dir = test.path().to_owned();
    let first = test.args(&["run"]).run();
    first.expect_code(0);
    let again = std::process::Command::new(env!("CARGO_BIN_EXE_evalgate"))
        .current_dir(&dir)
        .env("EVALGATE_TEST_KEY", KEY)
        .arg("run")
        .output()
        .unwrap();
    assert_eq!(again.status.code(), Some(0));
    assert_eq!(calls.load(Ordering::SeqCst), 1, "the second run's answer came from the cache");
    let results: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("evalgate-out/results.json")).unwrap()).unwrap();
    let trial = &results["tasks"][0]["trials"][0];
    assert_eq!(trial["cached"], true);
    assert_eq!(trial["usage"]["cost_usd"], 0.0);
}

/// A suite of `n` model tasks whose answers are cached (`cache: true`).
fn cached_suite(server: &Server, n: usize) -> String {
    let tasks: String = (1..=n)
        .map(|i| {
            unindent(
                "
            - id: t<i>
              prompt: question <i>
              grade: [{type: contains, value: ok}]
            ",
            )
            .replace("<i>", &i.to_string())
        })
        .collect();
    // A generous timeout: the concurrent test's runs share two busy cores.
    suite(server, "", &tasks).replace("timeout: 2s}", "timeout: 60s, cache: true}")
}

fn cache_entries(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut entries: Vec<_> =
        std::fs::read_dir(dir.join(".evalgate/cache")).unwrap().map(|e| e.unwrap().path()).collect();
    entries.sort();
    entries
}

fn evalgate_in(dir: &std::path::Path, args: &[&str]) -> std::process::Child {
    std::process::Command::new(env!("CARGO_BIN_EXE_evalgate"))
        .current_dir(dir)
        .env("EVALGATE_TEST_KEY", KEY)
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn a_truncated_or_corrupt_cache_entry_is_a_miss_and_is_rewritten() {
    let calls = Arc::new(AtomicU32::new(0));
    let count = calls.clone();
    let server = Server::start(move |_| {
        count.fetch_add(1, Ordering::SeqCst);
        (200, openai_answer("ok", json!({"prompt_tokens": 10, "completion_tokens": 1})))
    });
    let test = Test::new().write("evalgate.yaml", &cached_suite(&server, 2)).env("EVALGATE_TEST_KEY", KEY);
    let dir = test.path().to_owned();
    let first = test.args(&["run"]).run(); // keeps the directory
    first.expect_code(0);
    let entries = cache_entries(&dir);
    assert_eq!(entries.len(), 2);
    let whole = std::fs::read(&entries[0]).unwrap();
    std::fs::write(&entries[0], &whole[..whole.len() / 2]).unwrap(); // truncated
    std::fs::write(&entries[1], b"\0\xff not json").unwrap(); // corrupt
    let again = evalgate_in(&dir, &["run"]).wait_with_output().unwrap();
    assert_eq!(again.status.code(), Some(0), "{}", String::from_utf8_lossy(&again.stderr));
    assert_eq!(calls.load(Ordering::SeqCst), 4, "both broken entries were asked again");
    for entry in cache_entries(&dir) {
        let text = std::fs::read_to_string(&entry).unwrap();
        serde_json::from_str::<Value>(&text).unwrap_or_else(|e| panic!("{} not rewritten: {e}", entry.display()));
    }
    assert_eq!(std::fs::read(&entries[0]).unwrap(), whole, "the entry is rewritten whole");
}

#[test]
fn concurrent_runs_sharing_the_cache_leave_only_whole_entries() {
    // Large answers (64 KiB), so a write that is not atomic could be seen half done.
    let answer =
        openai_answer(&format!("ok {}", "x".repeat(64 * 1024)), json!({"prompt_tokens": 10, "completion_tokens": 1}));
    let server = Server::start(move |_| (200, answer.clone()));
    let tasks = 24;
    let test = Test::new().write("evalgate.yaml", &cached_suite(&server, tasks)).env("EVALGATE_TEST_KEY", KEY);
    let dir = test.path().to_owned();
    let runs: Vec<_> =
        ["out-a", "out-b", "out-c"].iter().map(|out| evalgate_in(&dir, &["run", "-j", "4", "--out", out])).collect();
    for run in runs {
        let output = run.wait_with_output().unwrap();
        assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    }
    let entries = cache_entries(&dir);
    assert_eq!(entries.len(), tasks, "one entry per request and no temp file left: {entries:?}");
    for entry in &entries {
        let text = std::fs::read_to_string(entry).unwrap();
        let json: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is torn: {e}", entry.display()));
        assert!(json.to_string().contains("ok xxx"), "{}", entry.display());
    }
    let before = server.requests();
    let last = evalgate_in(&dir, &["run", "--out", "out-d"]).wait_with_output().unwrap();
    assert_eq!(last.status.code(), Some(0));
    assert_eq!(server.requests(), before, "every answer came from the shared cache");
}

#[test]
fn repeated_trials_ask_the_model_again_unless_cache_repeats() {
    let calls = Arc::new(AtomicU32::new(0));
    let count = calls.clone();
    let server = Server::start(move |_| {
        count.fetch_add(1, Ordering::SeqCst);
        (200, openai_answer("ok", json!({"prompt_tokens": 10, "completion_tokens": 1})))
    });
    let task = "
        - id: t
          prompt: x
          repeat: 3
          grade: [{type: equals, value: ok}]
        ";
    let yaml = suite(&server, "", task).replace("timeout: 2s}", "timeout: 2s, cache: true}");
    let test = Test::new().write("evalgate.yaml", &yaml).env("EVALGATE_TEST_KEY", KEY);
    let dir = test.path().to_owned();
    // The run owns the temporary directory: keep it while the later runs use it.
    let first = test.args(&["run", "-j", "1"]).run();
    first.expect_code(0);
    assert_eq!(calls.load(Ordering::SeqCst), 3, "trials 2 and 3 must ask the model, not reuse trial 1's cached answer");
    let evalgate = |args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_evalgate"))
            .current_dir(&dir)
            .env("EVALGATE_TEST_KEY", KEY)
            .args(args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_str::<Value>(&std::fs::read_to_string(dir.join("evalgate-out/results.json")).unwrap()).unwrap()
    };
    // The next run serves trial 1 from the cache and asks again for the others.
    let results = evalgate(&["run", "-j", "1"]);
    assert_eq!(calls.load(Ordering::SeqCst), 5);
    let cached: Vec<bool> =
        results["tasks"][0]["trials"].as_array().unwrap().iter().map(|t| t["cached"] == true).collect();
    assert_eq!(cached, [true, false, false]);
    // Opting in: every trial may come from the cache.
    std::fs::write(dir.join("evalgate.yaml"), yaml.replace("cache: true}", "cache: true, cache_repeats: true}"))
        .unwrap();
    evalgate(&["run", "-j", "1"]);
    assert_eq!(calls.load(Ordering::SeqCst), 5, "cache_repeats: true serves every trial from the cache");
}

#[test]
fn cache_repeats_without_cache_is_invalid() {
    let server = Server::start(|_| (200, String::new()));
    let yaml = suite(
        &server,
        "",
        "
        - id: t
          prompt: x
          grade: [{type: equals, value: ok}]
        ",
    )
    .replace("timeout: 2s}", "timeout: 2s, cache_repeats: true}");
    let run = run(&yaml);
    run.expect_code(2);
    assert!(run.stderr_has("agents.bot.cache_repeats: `cache_repeats` needs `cache: true`"), "{}", run.stderr);
}

#[test]
fn a_429_storm_finishes_every_task_at_default_settings_within_the_endpoint_limit() {
    // Every prompt is refused three times (429 with `retry-after-ms`, or `Retry-After` as
    // an HTTP date in the past) before it is answered; `retries: 0` does not cut that short:
    // a rate limit is waited out within the request's timeout.
    let attempts = Arc::new(std::sync::Mutex::new(std::collections::HashMap::<String, u32>::new()));
    let (in_flight, most) = (Arc::new(AtomicU32::new(0)), Arc::new(AtomicU32::new(0)));
    let (now, highest) = (in_flight.clone(), most.clone());
    let server = Server::start_with(move |r| {
        let current = now.fetch_add(1, Ordering::SeqCst) + 1;
        highest.fetch_max(current, Ordering::SeqCst);
        std::thread::sleep(Duration::from_millis(50));
        let prompt = body(r)["messages"][1]["content"].as_str().unwrap_or_default().to_owned();
        let n = {
            let mut attempts = attempts.lock().unwrap();
            let n = attempts.entry(prompt.clone()).or_default();
            *n += 1;
            *n
        };
        let reply = match n {
            1 | 3 => Reply {
                status: 429,
                headers: vec![("retry-after-ms".into(), "30".into())],
                body: r#"{"error": {"message": "Rate limit reached", "type": "rate_limit"}}"#.into(),
            },
            2 => Reply {
                status: 429,
                headers: vec![("retry-after".into(), "Wed, 21 Oct 2015 07:28:00 GMT".into())],
                body: r#"{"error": {"message": "Rate limit reached", "type": "rate_limit"}}"#.into(),
            },
            _ => Reply::json(
                200,
                openai_answer(&format!("ok {prompt}"), json!({"prompt_tokens": 1, "completion_tokens": 1})),
            ),
        };
        now.fetch_sub(1, Ordering::SeqCst);
        reply
    });
    let tasks: String = numbered(
        0..60,
        "
            - id: t<i>
              prompt: p<i>
              grade: [{type: equals, value: ok p<i>}]
            ",
    );
    let yaml = suite(&server, "", &tasks).replace("retries: 2, timeout: 2s", "retries: 0, timeout: 20s");
    let run = Test::new().write("evalgate.yaml", &yaml).env("EVALGATE_TEST_KEY", KEY).args(&["run"]).run();
    run.expect_code(0);
    let results: Value = serde_json::from_str(&run.read("evalgate-out/results.json")).unwrap();
    assert_eq!(results["totals"]["passed"], 60, "{}", results["totals"]);
    assert_eq!(results["totals"]["errors"], 0);
    assert_eq!(server.requests(), 240);
    // Without `-j` or `max_concurrency`, more than the old defaults (2 cores × 4 per
    // endpoint) were in flight, and never more than the endpoint's default 32.
    let most = most.load(Ordering::SeqCst);
    assert!((5..=32).contains(&most), "{most} requests in flight at once");
}
