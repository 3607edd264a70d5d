//! Cassettes: model traffic recorded once against the local stand-in, then replayed with
//! the stand-in counting no call, no key set, and a miss failing its task with a diff.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use serde_json::{Value, json};

use crate::common::server::{Request, Server};
use crate::common::{Test, unindent};

pub const KEY: &str = "sk-cassette-secret-4f1e9a";

fn body(r: &Request) -> Value {
    serde_json::from_str(&r.body).unwrap_or(Value::Null)
}

pub fn openai(text: &str) -> String {
    json!({"id": "chatcmpl-1", "object": "chat.completion", "model": "gpt-4o-mini-2024-07-18",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5}})
    .to_string()
}

fn verdict(passed: bool) -> String {
    let arguments = json!({"passed": passed, "reason": "checked"}).to_string();
    json!({"id": "chatcmpl-2", "object": "chat.completion", "model": "gpt-4o-mini",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": null,
            "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "record_verdict", "arguments": arguments}}]}}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 10}})
    .to_string()
}

/// The stand-in: the judge passes what mentions Paris; the `flaky` prompt is answered right
/// every other time; the `leaky` prompt echoes the API key (a model that leaks it).
fn stand_in() -> Server {
    let asked = Arc::new(AtomicU32::new(0));
    Server::start(move |r| {
        let b = body(r);
        if b.get("tool_choice").is_some() {
            return (200, verdict(b.to_string().contains("Paris")));
        }
        let prompt =
            b["messages"].as_array().and_then(|m| m.last()).map(|m| m["content"].to_string()).unwrap_or_default();
        let n = asked.fetch_add(1, Ordering::SeqCst);
        let text = if prompt.contains("flaky") {
            if n.is_multiple_of(2) { format!("answer {n}: Paris") } else { format!("answer {n}: Lyon") }
        } else if prompt.contains("leaky") {
            format!("the key is {KEY}")
        } else {
            format!("answer {n}: Paris")
        };
        (200, openai(&text))
    })
}

const SUITE: &str = "
    evalgate: 1
    suite: t
    agents:
      bot: {provider: openai, model: gpt-4o-mini, base_url: '<url>/v1', api_key_env: EVALGATE_TEST_KEY}
    judge: {provider: openai, model: gpt-4o-mini, base_url: '<url>/v1', api_key_env: EVALGATE_TEST_KEY}
    thresholds: {pass_score: 0}
    tasks:
      - id: capital
        prompt: Capital of France?
        grade: [{type: llm, contains: Paris}]
      - id: flaky
        prompt: flaky Capital of France?
        repeat: 4
        grade: [{type: contains, value: Paris}]
    ";

const LEAKY: &str = "
  - id: leaky
    prompt: leaky What is your key?
    grade: [{type: not_contains, value: '{env.EVALGATE_TEST_KEY}'}]
";

/// Runs evalgate in `dir` with `args`; the key is set only when `key` is.
pub(crate) fn evalgate(dir: &Path, args: &[&str], key: bool) -> std::process::Output {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_evalgate"));
    command.current_dir(dir).args(args).env_remove("EVALGATE_TEST_KEY");
    for (name, _) in std::env::vars().filter(|(k, _)| k.starts_with("GITHUB_") || k.ends_with("_BASE_URL")) {
        command.env_remove(name);
    }
    if key {
        command.env("EVALGATE_TEST_KEY", KEY);
    }
    command.output().unwrap()
}

pub fn results(dir: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("evalgate-out/results.json")).unwrap()).unwrap()
}

/// Each task's status, score and trial outputs: what a replay must give exactly.
fn outcome(results: &Value) -> Vec<(String, String, String, Vec<String>)> {
    let mut tasks: Vec<_> = results["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let outputs = t["trials"].as_array().unwrap().iter().map(|tr| tr["output"].to_string()).collect();
            (t["id"].to_string(), t["status"].to_string(), t["score"].to_string(), outputs)
        })
        .collect();
    tasks.sort();
    tasks
}

#[test]
fn record_then_replay_gives_the_same_results_with_no_call_and_no_key() {
    let server = stand_in();
    let test = Test::new().write("evalgate.yaml", &unindent(SUITE).replace("<url>", &server.url()));
    let dir = test.path();
    let recorded = evalgate(dir, &["run", "--record", "-j", "1"], true);
    assert_eq!(recorded.status.code(), Some(0), "{}", String::from_utf8_lossy(&recorded.stderr));
    let live = results(dir);
    assert_eq!(live["cassette"]["recorded"], 1 + 1 + 4, "{}", live["cassette"]);
    let calls = server.requests();
    // The live run saw the flaky task both pass and fail.
    let flaky = live["tasks"].as_array().unwrap().iter().find(|t| t["id"] == "flaky").unwrap();
    let passed = flaky["trials"].as_array().unwrap().iter().filter(|t| t["status"] == "passed").count();
    assert_eq!(passed, 2, "{flaky}");

    // Replayed without the key, as a fork's pull request runs: the same results, exactly,
    // and not one request reaches the stand-in.
    let replayed = evalgate(dir, &["run", "--replay", "-j", "2"], false);
    assert_eq!(replayed.status.code(), Some(0), "{}", String::from_utf8_lossy(&replayed.stderr));
    assert_eq!(server.requests(), calls, "a replay made a network call");
    let again = results(dir);
    assert_eq!(outcome(&again), outcome(&live));
    assert!(
        again["tasks"].as_array().unwrap().iter().all(|t| t["trials"]
            .as_array()
            .unwrap()
            .iter()
            .all(|tr| tr["replayed"] == true))
    );
    let usage = &again["cassette"];
    assert_eq!(
        (usage["replayed"].as_u64(), usage["missed"].as_u64(), usage["recorded"].as_u64()),
        (Some(6), Some(0), Some(0))
    );
    assert_eq!(usage["models"], json!(["gpt-4o-mini"]));
    assert!(usage["recorded_from"].as_str().is_some_and(|d| d.len() == 10), "{usage}");
    // Nothing was spent, yet the cost is the recorded answers': a cost gate holds on a replay.
    assert_eq!(again["totals"]["cost_usd"], live["totals"]["cost_usd"]);
    assert!(live["totals"]["cost_usd"].as_f64().is_some_and(|c| c > 0.0), "{}", live["totals"]);
    let summary = std::fs::read_to_string(dir.join("evalgate-out/summary.md")).unwrap();
    assert!(summary.contains("Replayed from the cassette `cassettes/t.jsonl`"), "{summary}");
}

#[test]
fn a_changed_prompt_is_a_miss_naming_the_nearest_request_and_what_changed() {
    let server = stand_in();
    let yaml = unindent(SUITE).replace("<url>", &server.url());
    let test = Test::new().write("evalgate.yaml", &yaml);
    let dir = test.path();
    assert_eq!(evalgate(dir, &["run", "--record", "--filter", "capital"], true).status.code(), Some(0));
    let calls = server.requests();
    std::fs::write(dir.join("evalgate.yaml"), yaml.replace("Capital of France?\n", "Capital of Spain?\n")).unwrap();
    let replayed = evalgate(dir, &["run", "--replay", "--filter", "capital"], true);
    assert_ne!(replayed.status.code(), Some(0));
    assert_eq!(server.requests(), calls, "a miss went live");
    let task = &results(dir)["tasks"][0];
    assert_eq!(task["status"], "error", "{task}");
    let reason = task["reason"].as_str().unwrap();
    assert!(reason.contains("not in cassette cassettes/t.jsonl: openai request (model gpt-4o-mini), key "), "{reason}");
    assert!(
        reason.contains(r#"messages[0].parts[0].data: recorded "Capital of France?", now "Capital of Spain?""#),
        "{reason}"
    );
}

/// A long prompt changed near its end: the miss shows where the two part, with context on
/// both sides, in results.json and on the terminal's line of the task (not the shared start,
/// twice, nor a line cut before the difference).
#[test]
fn a_long_prompt_changed_late_misses_showing_where_the_two_part() {
    let server = stand_in();
    let long = "You are a careful assistant who answers in one word. ".repeat(30);
    let yaml = unindent(SUITE)
        .replace("<url>", &server.url())
        .replace("prompt: Capital of France?", &format!("prompt: {long}Capital of France?"));
    let test = Test::new().write("evalgate.yaml", &yaml);
    let dir = test.path();
    assert_eq!(evalgate(dir, &["run", "--record", "--filter", "capital"], true).status.code(), Some(0));
    std::fs::write(dir.join("evalgate.yaml"), yaml.replace("Capital of France?\n", "Capital of Spain?\n")).unwrap();
    let replayed = evalgate(dir, &["run", "--replay", "--filter", "capital"], true);
    assert_ne!(replayed.status.code(), Some(0));
    let at = long.chars().count() + "Capital of ".len() + 1;
    let shown = format!(
        r#"recorded "…swers in one word. Capital of France?", now "…swers in one word. Capital of Spain?" (they part at character {at})"#
    );
    let reason = results(dir)["tasks"][0]["reason"].as_str().unwrap().to_owned();
    assert!(reason.contains(&shown), "{reason}");
    let terminal = String::from_utf8_lossy(&replayed.stdout).into_owned() + &String::from_utf8_lossy(&replayed.stderr);
    let line = terminal.lines().find(|l| l.contains("ERROR") && l.contains("capital")).unwrap_or_default();
    assert!(line.contains(&shown), "{terminal}");
}

#[test]
fn replayed_repeats_are_the_recorded_samples_never_copies() {
    let server = stand_in();
    let test = Test::new().write("evalgate.yaml", &unindent(SUITE).replace("<url>", &server.url()));
    let dir = test.path();
    assert_eq!(evalgate(dir, &["run", "--record", "--filter", "flaky", "--repeat", "1"], true).status.code(), Some(0));
    // Three trials cannot be three copies of one recorded answer: the second and third miss.
    let replayed = evalgate(dir, &["run", "--replay", "--filter", "flaky", "--repeat", "3"], false);
    assert_ne!(replayed.status.code(), Some(0));
    let task = &results(dir)["tasks"][0];
    let trials = task["trials"].as_array().unwrap();
    assert_eq!(trials[0]["replayed"], true);
    for trial in &trials[1..] {
        assert_eq!(trial["status"], "error", "{trial}");
        assert!(trial["reason"].as_str().unwrap().contains("holds 1 answer(s) of this request"), "{trial}");
    }
    // `--record-missing` asks only for the two it lacks, and then three replay.
    let calls = server.requests();
    assert_eq!(
        evalgate(dir, &["run", "--record-missing", "--filter", "flaky", "--repeat", "3"], true).status.code(),
        Some(0)
    );
    assert_eq!(server.requests(), calls + 2);
    assert_eq!(evalgate(dir, &["run", "--replay", "--filter", "flaky", "--repeat", "3"], false).status.code(), Some(0));
    assert_eq!(server.requests(), calls + 2);
}

#[test]
fn no_secret_reaches_a_cassette_and_a_recorded_leak_replays_as_a_leak() {
    let server = stand_in();
    let yaml = unindent(SUITE).replace("<url>", &server.url()) + LEAKY;
    let test = Test::new().write("evalgate.yaml", &yaml);
    let dir = test.path();
    assert_eq!(evalgate(dir, &["run", "--record", "--filter", "leaky"], true).status.code(), Some(0));
    let calls = server.requests();
    // Not the key (a header: never stored), not the answer that echoed it, in any form.
    let cassette = std::fs::read_to_string(dir.join("cassettes/t.jsonl")).unwrap();
    for piece in KEY.as_bytes().windows(8) {
        assert!(!cassette.contains(std::str::from_utf8(piece).unwrap()), "{cassette}");
    }
    assert!(cassette.contains("the key is [secret:EVALGATE_TEST_KEY]"), "{cassette}");
    // Replayed, the model's answer is the one it gave: the leak fails the task again.
    assert_eq!(evalgate(dir, &["run", "--replay", "--filter", "leaky"], true).status.code(), Some(0));
    assert_eq!(server.requests(), calls);
    let task = &results(dir)["tasks"][0];
    assert_eq!(
        (task["status"].as_str(), task["trials"][0]["replayed"].as_bool()),
        (Some("failed"), Some(true)),
        "{task}"
    );
}

/// A CLI that calls the model itself, as an SDK does: `$OPENAI_BASE_URL/chat/completions`
/// with `$OPENAI_API_KEY`.
const SDK_AGENT: &str = r#"#!/usr/bin/env python3
import json, os, sys, urllib.request
prompt = sys.argv[1]
request = urllib.request.Request(
    os.environ["OPENAI_BASE_URL"] + "/chat/completions",
    data=json.dumps({"model": "gpt-4o-mini", "messages": [{"role": "user", "content": prompt}]}).encode(),
    headers={"Content-Type": "application/json", "Authorization": "Bearer " + os.environ["OPENAI_API_KEY"]},
)
try:
    answer = json.load(urllib.request.urlopen(request))
except urllib.error.HTTPError as e:
    sys.exit("model error: " + e.read().decode())
print("key=" + os.environ["OPENAI_API_KEY"] + " " + answer["choices"][0]["message"]["content"])
"#;

const SDK_SUITE: &str = "
    evalgate: 1
    suite: cli
    agents:
      cli: {command: ['./agent.py', '{prompt}']}
    tasks:
      - id: capital
        prompt: Capital of France?
        repeat: 2
        grade: [{type: contains, value: Paris}]
    ";

pub fn evalgate_with(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_evalgate"));
    command.current_dir(dir).args(args).env_remove("OPENAI_API_KEY").env_remove("OPENAI_BASE_URL");
    for (name, _) in std::env::vars().filter(|(k, _)| k.starts_with("GITHUB_") || k.ends_with("_BASE_URL")) {
        command.env_remove(name);
    }
    command.envs(env.iter().copied());
    command.output().unwrap()
}

#[test]
fn a_command_agent_calling_the_model_itself_records_and_replays_through_the_endpoint() {
    let server = Server::start(|r| {
        // The real key reaches the real endpoint; the agent never held it.
        assert_eq!(r.header("authorization"), Some(format!("Bearer {KEY}").as_str()));
        (200, openai("Paris, of course."))
    });
    let test = Test::new().file("evalgate.yaml", SDK_SUITE).write("agent.py", SDK_AGENT);
    let dir = test.path();
    let upstream = format!("{}/v1", server.url());
    let live = [("OPENAI_BASE_URL", upstream.as_str()), ("OPENAI_API_KEY", KEY)];
    let recorded = evalgate_with(dir, &["run", "--record"], &live);
    assert_eq!(recorded.status.code(), Some(0), "{}", String::from_utf8_lossy(&recorded.stderr));
    assert_eq!(server.requests(), 2);
    let trial = &results(dir)["tasks"][0]["trials"][0];
    assert_eq!(trial["output"], "key=evalgate-model-endpoint Paris, of course.\n", "{trial}");
    let cassette = std::fs::read_to_string(dir.join("cassettes/cli.jsonl")).unwrap();
    assert!(!cassette.contains(KEY), "{cassette}");
    assert!(cassette.contains(r#""kind":"http:openai""#), "{cassette}");

    // Replayed with no key and nothing listening where the model was: the same answers.
    let closed = format!("http://127.0.0.1:{}/v1", crate::common::server::closed_port());
    let replayed = evalgate_with(dir, &["run", "--replay"], &[("OPENAI_BASE_URL", closed.as_str())]);
    assert_eq!(replayed.status.code(), Some(0), "{}", String::from_utf8_lossy(&replayed.stderr));
    assert_eq!(server.requests(), 2);
    let task = &results(dir)["tasks"][0];
    assert!(
        task["trials"].as_array().unwrap().iter().all(|t| t["replayed"] == true && t["status"] == "passed"),
        "{task}"
    );

    // A changed prompt is a miss that fails the task, even though the agent printed Paris
    // into its error: never a pass, never live.
    let changed = unindent(SDK_SUITE).replace("Capital of France?", "Capital of Paris?");
    std::fs::write(dir.join("evalgate.yaml"), changed).unwrap();
    let missed = evalgate_with(dir, &["run", "--replay"], &live);
    assert_ne!(missed.status.code(), Some(0));
    assert_eq!(server.requests(), 2);
    let task = &results(dir)["tasks"][0];
    assert_eq!(task["status"], "error", "{task}");
    let reason = task["reason"].as_str().unwrap();
    assert!(reason.contains("http:openai request (model gpt-4o-mini)"), "{reason}");
    assert!(reason.contains(r#"recorded "Capital of France?", now "Capital of Paris?""#), "{reason}");
}

#[test]
fn prune_lists_then_removes_what_a_whole_run_did_not_ask() {
    let server = stand_in();
    let yaml = unindent(SUITE).replace("<url>", &server.url());
    let test = Test::new().write("evalgate.yaml", &yaml);
    let dir = test.path();
    assert_eq!(evalgate(dir, &["run", "--record"], true).status.code(), Some(0));
    let before = std::fs::read_to_string(dir.join("cassettes/t.jsonl")).unwrap();
    // The prompt changes: re-recording what is missing leaves the old request stale.
    std::fs::write(dir.join("evalgate.yaml"), yaml.replace("flaky Capital of France?", "flaky Capital of Italy?"))
        .unwrap();
    assert_eq!(evalgate(dir, &["run", "--record-missing"], true).status.code(), Some(0));
    // A filtered run cannot tell what is stale.
    assert_eq!(evalgate(dir, &["run", "--replay", "--filter", "capital"], false).status.code(), Some(0));
    let refused = evalgate(dir, &["cassettes", "prune", "--dry-run"], false);
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&refused.stderr)
            .contains("is not a whole run of the suite (a selection of it (--filter capital))")
    );
    assert_eq!(evalgate(dir, &["run", "--replay"], false).status.code(), Some(0));
    let listed = evalgate(dir, &["cassettes", "prune", "--dry-run"], false);
    let stdout = String::from_utf8_lossy(&listed.stdout);
    assert!(stdout.contains("would remove 1 of 4 entries from cassettes/t.jsonl"), "{stdout}");
    let stale = before.lines().find(|l| l.contains("flaky Capital of France?")).unwrap();
    let key = serde_json::from_str::<Value>(stale).unwrap()["key"].as_str().unwrap().to_owned();
    assert!(stdout.starts_with(&format!("{key}  openai  gpt-4o-mini  recorded ")), "{stdout}");
    assert!(
        std::fs::read_to_string(dir.join("cassettes/t.jsonl")).unwrap().contains(&key),
        "a dry run changed the cassette"
    );
    let pruned = evalgate(dir, &["cassettes", "prune"], false);
    assert!(String::from_utf8_lossy(&pruned.stdout).contains("removed 1 of 4 entries"));
    let after = std::fs::read_to_string(dir.join("cassettes/t.jsonl")).unwrap();
    assert!(!after.contains(&key) && after.lines().count() == 3, "{after}");
    assert_eq!(evalgate(dir, &["run", "--replay"], false).status.code(), Some(0));
}

#[test]
fn calibrate_refuses_to_measure_noise_on_replayed_answers() {
    let server = stand_in();
    let test = Test::new().write("evalgate.yaml", &unindent(SUITE).replace("<url>", &server.url()));
    let dir = test.path();
    assert_eq!(evalgate(dir, &["run", "--record", "--filter", "flaky"], true).status.code(), Some(0));
    let calibrate = evalgate(dir, &["calibrate", "--runs", "2", "--replay", "--filter", "flaky"], false);
    assert_eq!(calibrate.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&calibrate.stderr);
    assert!(
        stderr.contains(
            "calibrate: run 1 replayed 4 answer(s) from the cassette cassettes/t.jsonl, the same in every run"
        ),
        "{stderr}"
    );
}

#[test]
fn an_mcp_server_is_recorded_then_replayed_without_being_started() {
    let yaml = crate::mcp::mcp_suite(
        "
        evalgate: 1
        suite: m
        mcp_servers:
          fx: {command: [<python>, fixture_server.py], cassette: true}
        tasks:
          - id: add
            level: execution
            call: {server: fx, tool: add, arguments: {a: 2, b: 3}}
            grade: [{type: json, path: structuredContent.result, equals: 5}]
        ",
    );
    let test = Test::new()
        .write("evalgate.yaml", &yaml)
        .write("fixture_server.py", include_str!("../fixtures/mcp/fixture_server.py"));
    let dir = test.path();
    let recorded = evalgate(dir, &["run", "--record"], false);
    assert_eq!(recorded.status.code(), Some(0), "{}", String::from_utf8_lossy(&recorded.stderr));
    let live = results(dir);
    // The server is gone: its program does not exist. Replayed, it is never started.
    let gone = yaml.replace(&crate::mcp::python(), "/nonexistent/python");
    std::fs::write(dir.join("evalgate.yaml"), &gone).unwrap();
    let replayed = evalgate(dir, &["run", "--replay"], false);
    assert_eq!(replayed.status.code(), Some(0), "{}", String::from_utf8_lossy(&replayed.stderr));
    let again = results(dir);
    assert_eq!(again["tasks"][0]["status"], "passed");
    assert_eq!(again["tasks"][0]["trials"][0]["output"], live["tasks"][0]["trials"][0]["output"]);
    assert_eq!(again["mcp_servers"]["fx"], live["mcp_servers"]["fx"], "the handshake is the recorded one");
    assert_eq!(again["cassette"]["replayed"], 3, "initialize, tools/list, tools/call: {}", again["cassette"]);
    // With the suite's `cassettes:` (auto: replay), `check` sees the server as the run does.
    std::fs::write(dir.join("evalgate.yaml"), format!("{gone}cassettes: {{}}\n")).unwrap();
    let check = evalgate(dir, &["check"], false);
    assert_eq!(check.status.code(), Some(0), "{}", String::from_utf8_lossy(&check.stderr));
    // Other arguments: a miss naming what changed, never a start of the server.
    std::fs::write(dir.join("evalgate.yaml"), gone.replace("b: 3", "b: 4")).unwrap();
    assert_ne!(evalgate(dir, &["run", "--replay"], false).status.code(), Some(0));
    let task = &results(dir)["tasks"][0];
    assert_eq!(task["status"], "error", "{task}");
    let reason = task["reason"].as_str().unwrap();
    assert!(reason.contains("mcp:fx request, key"), "{reason}");
    assert!(reason.contains("arguments.b: recorded 3, now 4"), "{reason}");
}

/// Another local process (or a web page) cannot use an agent run's model endpoint: without
/// its secret prefix it gets 404, with an `Origin` or a foreign `Host` 403.
#[test]
fn the_model_endpoint_answers_only_its_own_agent_run() {
    const PROBE: &str = r#"#!/usr/bin/env python3
import os, urllib.parse, urllib.request
base = os.environ["EVALGATE_MODEL_ENDPOINT"]
url = urllib.parse.urlsplit(base)
def status(path, **headers):
    request = urllib.request.Request(f"{url.scheme}://{url.netloc}{path}", data=b"{}", headers={"Content-Type": "application/json", **headers})
    try:
        return urllib.request.urlopen(request).status
    except urllib.error.HTTPError as e:
        return e.code
print(status("/openai/v1/chat/completions"), status("/guess/openai/v1/chat/completions"),
      status(url.path + "/openai/v1/chat/completions", Origin="http://evil.example"),
      status(url.path + "/openai/v1/chat/completions", Host="evil.example"))
"#;
    let suite = "
        evalgate: 1
        suite: probe
        cassettes: {mode: replay}
        agents:
          probe: {command: ['./probe.py']}
        tasks:
          - {id: probe, prompt: x, grade: [{type: equals, value: 404 404 403 403}]}
        ";
    let run = Test::new().suite(suite).write("probe.py", PROBE).args(&["run"]).run();
    run.expect_code(0);
}

/// Variants record and replay per arm: each model arm's answers are its own, and the
/// comparison (cost included) is the same replayed as live.
#[test]
fn variants_record_and_replay_each_arm() {
    let server = Server::start(|r| {
        let b = body(r);
        let answer = if b["model"] == "gpt-4o" { "Paris" } else { "Lyon" };
        (200, openai(answer))
    });
    let yaml = unindent(
        "
        evalgate: 1
        suite: arms
        agents:
          bot: {provider: openai, model: gpt-4o, base_url: '<url>/v1', api_key_env: EVALGATE_TEST_KEY}
        thresholds: {pass_score: 0}
        variants:
          control: big
          arms:
            big: {}
            small: {model: {model: gpt-4o-mini}}
        tasks:
          - {id: capital, prompt: Capital of France?, grade: [{type: contains, value: Paris}]}
        ",
    )
    .replace("<url>", &server.url());
    let test = Test::new().write("evalgate.yaml", &yaml);
    let dir = test.path();
    assert_eq!(evalgate(dir, &["run", "--record"], true).status.code(), Some(0));
    let live = results(dir);
    let calls = server.requests();
    assert_eq!(evalgate(dir, &["run", "--replay"], false).status.code(), Some(0));
    assert_eq!(server.requests(), calls);
    let again = results(dir);
    assert_eq!(outcome(&again), outcome(&live));
    let statuses: Vec<_> =
        again["tasks"].as_array().unwrap().iter().map(|t| (t["id"].clone(), t["status"].clone())).collect();
    assert!(statuses.contains(&(json!("capital@big"), json!("passed"))), "{statuses:?}");
    assert!(statuses.contains(&(json!("capital@small"), json!("failed"))), "{statuses:?}");
    let (was, is) = (&live["variants"]["arms"][1]["comparison"], &again["variants"]["arms"][1]["comparison"]);
    for key in ["verdict", "delta", "ci_low", "ci_high", "cost_usd"] {
        assert_eq!(is[key], was[key], "{key}");
    }
    // A replay takes no time: its latency is not measured, so no latency gate passes on it.
    assert!(was["latency_ms"].is_object() && is.get("latency_ms").is_none_or(Value::is_null), "{is}");
    assert_eq!(again["totals"].get("p95_latency_ms").and_then(Value::as_u64), None, "{}", again["totals"]);
}

/// A streamed answer (Anthropic's event stream) is recorded whole and replayed as the same
/// stream, with its content type.
#[test]
fn a_streamed_answer_replays_as_the_same_event_stream() {
    const STREAMING_AGENT: &str = r#"#!/usr/bin/env python3
import json, os, sys, urllib.request
request = urllib.request.Request(
    os.environ["ANTHROPIC_BASE_URL"] + "/v1/messages",
    data=json.dumps({"model": "claude-x", "max_tokens": 64, "stream": True,
                     "messages": [{"role": "user", "content": sys.argv[1]}]}).encode(),
    headers={"content-type": "application/json", "x-api-key": os.environ["ANTHROPIC_API_KEY"],
             "anthropic-version": "2023-06-01"},
)
response = urllib.request.urlopen(request)
text = ""
for line in response.read().decode().splitlines():
    if line.startswith("data: "):
        event = json.loads(line[6:])
        if event.get("type") == "content_block_delta":
            text += event["delta"]["text"]
print(response.headers["content-type"], text)
"#;
    let server = Server::start_with(|r| {
        assert_eq!(r.path, "/v1/messages");
        assert_eq!(r.header("anthropic-version"), Some("2023-06-01"));
        let mut body = String::new();
        for (event, data) in [
            ("message_start", json!({"type": "message_start"})),
            (
                "content_block_delta",
                json!({"type": "content_block_delta", "delta": {"type": "text_delta", "text": "Par"}}),
            ),
            (
                "content_block_delta",
                json!({"type": "content_block_delta", "delta": {"type": "text_delta", "text": "is"}}),
            ),
            ("message_stop", json!({"type": "message_stop"})),
        ] {
            body.push_str(&format!("event: {event}\ndata: {data}\n\n"));
        }
        let mut reply = crate::common::server::Reply::json(200, body);
        reply.headers.push(("content-type".into(), "text/event-stream".into()));
        reply
    });
    let suite = "
        evalgate: 1
        suite: stream
        agents:
          cli: {command: ['./agent.py', '{prompt}']}
        tasks:
          - {id: capital, prompt: Capital of France?, grade: [{type: equals, value: text/event-stream Paris}]}
        ";
    let test = Test::new().file("evalgate.yaml", suite).write("agent.py", STREAMING_AGENT);
    let dir = test.path();
    let live = [("ANTHROPIC_BASE_URL", server.url()), ("ANTHROPIC_API_KEY", KEY.to_owned())];
    let live: Vec<(&str, &str)> = live.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let recorded = evalgate_with(dir, &["run", "--record"], &live);
    assert_eq!(recorded.status.code(), Some(0), "{}", String::from_utf8_lossy(&recorded.stderr));
    let closed = format!("http://127.0.0.1:{}", crate::common::server::closed_port());
    let replayed = evalgate_with(dir, &["run", "--replay"], &[("ANTHROPIC_BASE_URL", closed.as_str())]);
    assert_eq!(replayed.status.code(), Some(0), "{}", String::from_utf8_lossy(&replayed.stderr));
    assert_eq!(server.requests(), 1);
    let task = &results(dir)["tasks"][0];
    assert_eq!(
        (task["status"].as_str(), task["trials"][0]["replayed"].as_bool()),
        (Some("passed"), Some(true)),
        "{task}"
    );
}

/// `cassettes.normalize`: a pattern that is not a regular expression, or one that matches
/// the empty string (it would rewrite every request), is refused at its line.
#[test]
fn a_bad_normalisation_is_refused_at_its_line() {
    let suite = "evalgate: 1\nsuite: t\ncassettes:\n  normalize:\n    - {pattern: 'session-('}\n    - {pattern: 'x*', replace: y}\n    - {pattern: 'run-[0-9]+'}\nagents:\n  cli: {command: [echo, hi]}\ntasks:\n  - {id: t, agent: cli, prompt: x, grade: [{type: contains, value: hi}]}\n";
    let run = Test::new().write("evalgate.yaml", suite).args(&["check"]).run();
    run.expect_code(2);
    run.expect_stderr_contains(&[
        "evalgate.yaml:5:",
        "cassettes.normalize[0].pattern: not a regular expression",
        "evalgate.yaml:6:",
        "cassettes.normalize[1].pattern: the pattern matches the empty string: it would rewrite every request",
    ]);
    assert!(run.stderr_lacks("normalize[2]"));
}
