//! Attacks on what an `http` agent promises: its requests are recorded and replayed with no
//! key and no network, a request the cassette does not hold is an error (never a pass, never
//! live), a `{env.NAME}` secret reaches neither the cassette nor any output, and a huge or
//! slow answer is bounded.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::common::server::{Reply, Server};
use crate::common::{Test, unindent};

const SECRET: &str = "http-agent-secret-5c0ffee";

/// A suite with one `http` agent at `url` and a task per `(id, prompt, contains)`.
fn suite(url: &str, http: &str, tasks: &[(&str, &str, &str)]) -> String {
    let tasks: String = tasks
        .iter()
        .map(|(id, prompt, want)| {
            format!("  - {{id: {id}, prompt: '{prompt}', grade: [{{type: contains, value: '{want}'}}]}}\n")
        })
        .collect();
    unindent(&format!(
        "
        evalgate: 1
        suite: t
        agents:
          api:
            timeout: 3s
            http: {{url: '{url}/ask', {http}}}
        tasks:
        "
    )) + &tasks
}

/// An endpoint that answers `{answer: "echo: Q"}` to a request carrying the key, 401 to any other.
fn keyed_endpoint() -> Server {
    Server::start(|r| {
        if r.header("authorization") != Some(&format!("Bearer {SECRET}")) || r.query_param("lang") != Some("en") {
            return (401, "denied".into());
        }
        let q: serde_json::Value = serde_json::from_str(&r.body).unwrap();
        (200, serde_json::json!({"answer": format!("echo: {}", q["q"].as_str().unwrap())}).to_string())
    })
}

const KEYED: &str =
    "method: post, query: {lang: en}, auth: {bearer: '{env.HTTP_KEY}'}, json: {q: '{prompt}'}, transform: json.answer";

fn files_hold(dir: &Path, needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in walk(dir) {
        if std::fs::read(&entry).is_ok_and(|bytes| String::from_utf8_lossy(&bytes).contains(needle)) {
            found.push(entry.display().to_string());
        }
    }
    found
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() { out.extend(walk(&path)) } else { out.push(path) }
    }
    out
}

#[test]
fn an_http_agent_records_then_replays_offline_with_no_key_and_a_miss_is_an_error() {
    let server = keyed_endpoint();
    let tasks = [("paris", "Paris?", "echo: Paris?"), ("rome", "Rome?", "echo: Rome?")];
    let test = Test::new().file("evalgate.yaml", &suite(&server.url(), KEYED, &tasks)).env("HTTP_KEY", SECRET);
    let dir = test.path().to_owned();
    let recorded = test.args(&["run", "--record"]).run();
    recorded.expect_code(0);
    assert_eq!(server.requests(), 2);
    assert!(server.received().iter().all(|r| r.header("authorization") == Some(&format!("Bearer {SECRET}"))));
    let cassette = std::fs::read_to_string(dir.join("cassettes/t.jsonl")).unwrap();
    assert!(cassette.contains("http-agent:api") && cassette.contains("{env.HTTP_KEY}"), "{cassette}");
    assert!(files_hold(&dir, SECRET).is_empty(), "the key is in {:?}", files_hold(&dir, SECRET));

    // Replayed with the key unset: nothing reaches the endpoint.
    let replay = Test::new().file("evalgate.yaml", &suite(&server.url(), KEYED, &tasks));
    copy_cassette(&dir, replay.path());
    let replayed = replay.args(&["run", "--replay"]).run();
    replayed.expect_code(0);
    for task in ["paris", "rome"] {
        assert_eq!(replayed.task(task)["trials"][0]["replayed"], true, "{}", replayed.task(task));
    }
    assert_eq!(server.requests(), 2, "a replay went live");

    // A prompt the cassette does not hold: the task errors, naming what missed; nothing is asked.
    let missing =
        Test::new().file("evalgate.yaml", &suite(&server.url(), KEYED, &[tasks[0], ("rome", "Oslo?", "Oslo")]));
    copy_cassette(&dir, missing.path());
    let missed = missing.args(&["run", "--replay"]).run();
    assert_ne!(missed.code, 0);
    missed.take_stderr();
    let task = missed.task("rome");
    assert_eq!(task["status"], "error", "{task}");
    let reason = task["reason"].as_str().unwrap();
    assert!(
        reason.contains("not in cassette cassettes/t.jsonl: http-agent:api request") && reason.contains("Oslo"),
        "{reason}"
    );
    assert_eq!(server.requests(), 2, "a miss went live");
}

fn copy_cassette(from: &Path, to: &Path) {
    std::fs::create_dir_all(to.join("cassettes")).unwrap();
    std::fs::copy(from.join("cassettes/t.jsonl"), to.join("cassettes/t.jsonl")).unwrap();
}

#[test]
fn an_endpoint_that_echoes_the_key_leaks_it_nowhere() {
    // The answer holds the key as sent, and base64-encoded: the output shows neither, and the
    // cassette refuses to keep such an answer.
    let server = Server::start(|r| {
        let auth = r.header("authorization").unwrap_or_default().to_owned();
        let encoded = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, &auth);
        (200, serde_json::json!({"answer": format!("you sent {auth} ({encoded})")}).to_string())
    });
    let test = Test::new()
        .file(
            "evalgate.yaml",
            &suite(&server.url(), KEYED.replace("query: {lang: en}, ", "").as_str(), &[("t", "hi", "you sent")]),
        )
        .env("HTTP_KEY", SECRET);
    let dir = test.path().to_owned();
    let run = test.args(&["run", "--record"]).run();
    run.take_stderr();
    assert_eq!(server.requests(), 1);
    let output = run.task("t")["trials"][0]["output"].as_str().unwrap_or_default().to_owned();
    assert!(output.starts_with("you sent Bearer ") && !output.contains(SECRET), "{output}");
    assert!(files_hold(&dir, SECRET).is_empty(), "the key is in {:?}", files_hold(&dir, SECRET));
    assert!(!run.stdout.contains(SECRET) && !run.stderr.contains(SECRET));
}

#[test]
fn a_huge_or_slow_answer_is_bounded() {
    let huge = Server::start_with(|_| Reply::json(200, "x".repeat(17 << 20)));
    let run =
        Test::new().file("evalgate.yaml", &suite(&huge.url(), "method: get", &[("t", "hi", "x")])).args(&["run"]).run();
    assert_ne!(run.code, 0);
    run.take_stderr();
    let reason = run.task("t")["reason"].as_str().unwrap().to_owned();
    assert!(reason.contains("larger than 16 MiB"), "{reason}");

    let slow = Server::start(|_| {
        std::thread::sleep(Duration::from_secs(30));
        (200, "late".into())
    });
    let started = Instant::now();
    let run = Test::new()
        .file("evalgate.yaml", &suite(&slow.url(), "method: get", &[("t", "hi", "late")]))
        .args(&["run"])
        .run();
    assert!(started.elapsed() < Duration::from_secs(20), "the 3s timeout did not end the request");
    assert_ne!(run.code, 0);
    run.take_stderr();
    let reason = run.task("t")["reason"].as_str().unwrap().to_owned();
    assert!(reason.contains("timed out after 3s"), "{reason}");
}

#[test]
fn a_javascript_transform_reads_the_answer_and_no_output_fails_the_task() {
    let server = Server::start(|r| (200, serde_json::json!({"items": [{"t": r.body.clone()}], "n": 2}).to_string()));
    let http = "method: post, body: '{prompt}', transform: '(json, text, context) => json.items.map(i => i.t.toUpperCase()).join() + context.response.status'";
    let run = Test::new()
        .file("evalgate.yaml", &suite(&server.url(), http, &[("t", "shout", "SHOUT200")]))
        .args(&["run"])
        .run();
    run.expect_code(0);
    let http = "method: post, body: '{prompt}', transform: 'json.missing?.x'";
    let run = Test::new().file("evalgate.yaml", &suite(&server.url(), http, &[("t", "x", "x")])).args(&["run"]).run();
    run.expect_code(1);
    assert!(run.task("t")["trials"][0]["reason"].as_str().unwrap().contains("no output"), "{}", run.task("t"));
}
