//! What promptfoo lacks, applied to a promptfoo config: its model and judge calls recorded
//! once and replayed in a pull request with no key and no call, the regression gate against
//! a base run, and repeated trials with a pass threshold.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use serde_json::Value;

use crate::cassettes::{evalgate_with, results};
use crate::common::server::{Server, answer};
use crate::common::{Test, owned_pairs, sorted_statuses, unindent};

/// The model and judge stand-in. The model answers `Paris` for France (or `Lyon` once
/// `worse` is set, and on every fourth question when `flaky` is), `Madrid` for Spain and
/// `I do not know` otherwise; the judge (promptfoo's rubric prompt) passes an answer naming
/// a capital.
fn stand_in(worse: Arc<AtomicBool>, flaky: bool) -> Server {
    let asked = Arc::new(AtomicU32::new(0));
    Server::start(move |r| {
        let body: Value = serde_json::from_str(&r.body).unwrap();
        let text: Vec<&str> =
            body["messages"].as_array().unwrap().iter().filter_map(|m| m["content"].as_str()).collect();
        let text = text.join("\n");
        if text.contains("<Rubric>") {
            let pass = text.contains("Paris") || text.contains("Madrid");
            return (
                200,
                answer(Some(&format!(r#"{{"pass": {pass}, "score": {}, "reason": "r"}}"#, u8::from(pass))), &[]),
            );
        }
        let reply = if text.contains("France") {
            let n = asked.fetch_add(1, Ordering::SeqCst);
            if worse.load(Ordering::SeqCst) || (flaky && n % 4 == 3) { "Lyon" } else { "Paris" }
        } else if text.contains("Spain") {
            "Madrid"
        } else {
            "I do not know"
        };
        (200, answer(Some(reply), &[]))
    })
}

/// A config with a model provider and a model-graded assertion, both on the stand-in.
fn config(url: &str) -> String {
    unindent(&format!(
        "
        description: capitals
        prompts: ['Capital of {{{{ country }}}}?']
        providers:
          - id: openai:chat:stand-in
            config: {{apiBaseUrl: '{url}/v1', apiKeyEnvar: STAND_IN_KEY}}
        defaultTest:
          options:
            provider: {{id: 'openai:chat:judge', config: {{apiBaseUrl: '{url}/v1', apiKeyEnvar: STAND_IN_KEY}}}}
        tests:
          - description: france
            vars: {{country: France}}
            assert: [{{type: contains, value: Paris}}, {{type: llm-rubric, value: names the capital}}]
          - description: spain
            vars: {{country: Spain}}
            assert: [{{type: llm-rubric, value: names the capital}}]
          - description: peru
            vars: {{country: Peru}}
            assert: [{{type: equals, value: Lima}}]
        "
    ))
}

/// Each task's status, score and trial outputs: what a replay must give exactly.
fn outcome(results: &Value) -> Vec<String> {
    let mut tasks: Vec<String> = results["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| format!("{} {} {} {}", t["id"], t["status"], t["score"], t["trials"][0]["output"]))
        .collect();
    tasks.sort();
    tasks
}

#[test]
fn a_promptfoo_config_recorded_once_replays_with_no_key_and_no_call() {
    let server = stand_in(Arc::default(), false);
    let test = Test::new().write("promptfooconfig.yaml", &config(&server.url()));
    let dir = test.path();
    let live = evalgate_with(dir, &["run", "promptfooconfig.yaml", "--record", "-j", "1"], &[("STAND_IN_KEY", "k")]);
    assert_eq!(live.status.code(), Some(1), "{}", String::from_utf8_lossy(&live.stderr));
    let recorded = results(dir);
    // Three answers and two rubric verdicts (France's and Spain's).
    assert_eq!(recorded["cassette"]["recorded"], 5, "{}", recorded["cassette"]);
    assert_eq!(server.requests(), 5);

    // A fork's pull request: no key, and the stand-in must not be asked.
    let replayed = evalgate_with(dir, &["run", "promptfooconfig.yaml", "--replay", "-j", "2"], &[]);
    assert_eq!(replayed.status.code(), Some(1), "{}", String::from_utf8_lossy(&replayed.stderr));
    assert_eq!(server.requests(), 5, "a replay made a network call");
    let again = results(dir);
    assert_eq!(outcome(&again), outcome(&recorded));
    assert_eq!(sorted_statuses(&again), owned_pairs(&[("france", "passed"), ("peru", "failed"), ("spain", "passed")]));
    assert_eq!(again["cassette"]["replayed"], 5, "{}", again["cassette"]);
    assert_eq!(again["totals"]["cost_usd"], recorded["totals"]["cost_usd"]);
}

/// A native suite importing the config: its agent, thresholds and regression gate apply.
fn importing_suite(url: &str, extra: &str) -> String {
    unindent(&format!(
        "
        evalgate: 1
        suite: gated
        agents:
          bot: {{provider: openai, model: stand-in, base_url: '{url}/v1', api_key_env: STAND_IN_KEY}}
        judge: {{provider: openai, model: judge, base_url: '{url}/v1', api_key_env: STAND_IN_KEY}}
        thresholds: {{pass_score: 0.3}}
        imports:
          - {{format: promptfoo, path: promptfooconfig.yaml, agent: bot}}
        "
    )) + &unindent(extra)
}

#[test]
fn a_promptfoo_config_is_gated_against_its_base_run() {
    let worse = Arc::new(AtomicBool::new(false));
    let server = stand_in(worse.clone(), false);
    let gate = "regression: {baseline: base.json, max_new_failures: 0}\n";
    let test = Test::new()
        .write("promptfooconfig.yaml", &config(&server.url()))
        .write("evalgate.yaml", &importing_suite(&server.url(), gate));
    let dir = test.path();
    let key = [("STAND_IN_KEY", "k")];
    let base = evalgate_with(dir, &["run", "--update-baseline"], &key);
    assert_eq!(base.status.code(), Some(0), "{}", String::from_utf8_lossy(&base.stderr));
    assert!(dir.join("base.json").exists());

    // The head branch answers France wrongly: one of three still passes the 0.3 threshold, so
    // only the gate against the base run fails it.
    worse.store(true, Ordering::SeqCst);
    let head = evalgate_with(dir, &["run"], &key);
    let stderr = String::from_utf8_lossy(&head.stderr);
    assert_eq!(head.status.code(), Some(1), "{stderr}");
    let head = results(dir);
    assert_eq!(sorted_statuses(&head)[0], ("france".to_owned(), "failed".to_owned()));
    assert_eq!(head["regression"]["comparison"]["new_failures"], serde_json::json!(["france"]));
    let checks = head["verdict"]["checks"].as_array().unwrap();
    let check = |name: &str| checks.iter().find(|c| c["name"] == name).unwrap_or_else(|| panic!("no check {name}"));
    assert_eq!(check("aggregate score")["passed"], true);
    let new = check("new failures vs baseline");
    assert_eq!((new["passed"].as_bool(), new["actual"].as_str()), (Some(false), Some("1: france")));
}

#[test]
fn repeated_trials_of_a_promptfoo_test_pass_at_the_suite_s_threshold() {
    let server = stand_in(Arc::default(), true);
    let run = |min_pass: u32| {
        let defaults = format!("defaults: {{repeat: 4, min_pass: {min_pass}}}\n");
        let test = Test::new()
            .write("promptfooconfig.yaml", &config(&server.url()))
            .write("evalgate.yaml", &importing_suite(&server.url(), &defaults));
        let out = evalgate_with(test.path(), &["run", "-j", "1"], &[("STAND_IN_KEY", "k")]);
        assert!(matches!(out.status.code(), Some(0 | 1)), "{}", String::from_utf8_lossy(&out.stderr));
        let france = results(test.path())["tasks"].as_array().unwrap().iter().find(|t| t["id"] == "france").cloned();
        let france = france.unwrap();
        let passed = france["trials"].as_array().unwrap().iter().filter(|t| t["status"] == "passed").count();
        (france["status"].as_str().unwrap().to_owned(), passed)
    };
    // France is answered wrongly on every fourth trial: 3 of 4 pass.
    assert_eq!(run(3), ("passed".to_owned(), 3));
    assert_eq!(run(4), ("failed".to_owned(), 3));
}
