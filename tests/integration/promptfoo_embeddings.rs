//! promptfoo's embedding assertions through the binary: the judge's embedding model is asked
//! through the cassette (recorded, replayed offline at $0 with no key, a miss an error and
//! never a pass), priced, waited for on a 429, and an answer that is no vector never passes.

use std::path::Path;
use std::process::{Command, Output};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};

use crate::common::server::{Reply, Server};

/// An OpenAI-compatible embeddings endpoint: a text holding `Paris` is `[1, 0]`, `[bad:KIND]`
/// a malformed answer, any other text `[0, 1]`; each answer costs 1,000 prompt tokens.
fn embeddings() -> Server {
    Server::start(|r| {
        assert!(r.path.ends_with("/v1/embeddings"), "{}", r.path);
        let input = serde_json::from_str::<Value>(&r.body).unwrap()["input"].as_str().unwrap().to_owned();
        let embedding = match input.split_once("[bad:").map(|(_, k)| k.split(']').next().unwrap_or_default()) {
            Some("string") => json!("1,0"),
            Some("short") => json!([1.0]),
            Some("texts") => json!(["1", "0"]),
            Some("nested") => json!([[1.0], [0.0]]),
            Some("object") => json!({"0": 1.0, "1": 0.0}),
            _ if input.contains("Paris") => json!([1.0, 0.0]),
            _ => json!([0.0, 1.0]),
        };
        let body = json!({"object": "list", "data": [{"index": 0, "embedding": embedding}],
            "model": "text-embedding-3-small", "usage": {"prompt_tokens": 1000, "total_tokens": 1000}});
        (200, body.to_string())
    })
}

/// A promptfoo config whose tests `similar` / `not-similar` the answers against `Paris is
/// here`, its embedding model at `url`.
fn config(url: &str, answers: &[&str]) -> String {
    let answers = serde_json::to_string(answers).unwrap();
    format!(
        "
prompts: ['{{{{answer}}}}']
providers: [echo]
defaultTest:
  options:
    provider:
      embedding: {{id: 'openai:embedding:text-embedding-3-small', config: {{apiBaseUrl: '{url}/v1', apiKeyEnvar: EMBED_KEY}}}}
tests:
  - description: similar
    vars: {{answer: {answers}}}
    assert: [{{type: similar, value: Paris is here, threshold: 0.9}}]
  - description: not similar
    vars: {{answer: {answers}}}
    assert: [{{type: not-similar, value: Paris is here, threshold: 0.9}}]
"
    )
}

/// `evalgate ARGS` in `dir`, with `EMBED_KEY` set or not.
fn evalgate(dir: &Path, args: &[&str], key: bool) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_evalgate"));
    command.current_dir(dir).args(args).env_remove("EMBED_KEY").env_remove("OPENAI_API_KEY");
    for (name, _) in std::env::vars().filter(|(k, _)| k.starts_with("GITHUB_") || k.ends_with("_BASE_URL")) {
        command.env_remove(name);
    }
    if key {
        command.env("EMBED_KEY", "embed-secret-key");
    }
    command.output().unwrap()
}

/// What the judges of every trial cost: the embeddings, here.
fn judge_cost(results: &Value) -> f64 {
    fn sum(v: &Value) -> f64 {
        match v {
            Value::Object(o) => {
                o.iter().map(|(k, x)| if k == "judge_cost_usd" { x.as_f64().unwrap() } else { sum(x) }).sum()
            }
            Value::Array(l) => l.iter().map(sum).sum(),
            _ => 0.0,
        }
    }
    sum(results)
}

fn results(dir: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("evalgate-out/results.json")).unwrap()).unwrap()
}

/// Each task's status, sorted by id.
fn statuses(results: &Value) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = results["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["id"].as_str().unwrap().to_owned(), t["status"].as_str().unwrap().to_owned()))
        .collect();
    out.sort();
    out
}

/// The suite's cassette, as text.
fn cassette(dir: &Path) -> String {
    let files: Vec<_> = std::fs::read_dir(dir.join("cassettes")).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(files.len(), 1, "{files:?}");
    std::fs::read_to_string(&files[0]).unwrap()
}

#[test]
fn embeddings_are_recorded_then_replayed_offline_with_no_key_and_priced_as_recorded() {
    let server = embeddings();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("promptfooconfig.yaml"), config(&server.url(), &["Paris it is", "Lyon it is"]))
        .unwrap();
    let recorded = evalgate(dir.path(), &["run", "promptfooconfig.yaml", "--record", "-j", "1"], true);
    assert_eq!(recorded.status.code(), Some(1), "{}", String::from_utf8_lossy(&recorded.stderr));
    let expected = [
        ("not-similar.v1", "failed"),
        ("not-similar.v2", "passed"),
        ("similar.v1", "passed"),
        ("similar.v2", "failed"),
    ]
    .map(|(a, b)| (a.to_owned(), b.to_owned()));
    assert_eq!(statuses(&results(dir.path())), expected);
    let asked = server.requests();
    assert!(asked >= 4, "{asked} requests");
    let text = cassette(dir.path());
    assert!(text.contains("\"embeddings:openai\""), "{text}");
    assert!(!text.contains("embed-secret-key"), "a key reached the cassette");
    // 1,000 tokens an embedding at $0.02 a million.
    let live_cost = judge_cost(&results(dir.path()));
    assert!((live_cost - asked as f64 * 2e-5).abs() < 1e-12, "the embeddings were priced: {live_cost}");

    // Offline: no key, and the endpoint no longer answers what it is asked.
    std::fs::write(
        dir.path().join("promptfooconfig.yaml"),
        config("http://127.0.0.1:9", &["Paris it is", "Lyon it is"]),
    )
    .unwrap();
    let replayed = evalgate(dir.path(), &["run", "promptfooconfig.yaml", "--replay", "-j", "2"], false);
    assert_eq!(replayed.status.code(), Some(1), "{}", String::from_utf8_lossy(&replayed.stderr));
    assert_eq!(statuses(&results(dir.path())), expected);
    assert_eq!(server.requests(), asked, "a replay asked the endpoint");
    assert_eq!(judge_cost(&results(dir.path())), live_cost, "a replay is priced as recorded");
}

#[test]
fn an_embedding_the_cassette_does_not_hold_is_an_error_never_a_pass() {
    let server = embeddings();
    let dir = tempfile::tempdir().unwrap();
    let write = |answers: &[&str]| {
        std::fs::write(dir.path().join("promptfooconfig.yaml"), config(&server.url(), answers)).unwrap();
    };
    write(&["Paris it is"]);
    let recorded = evalgate(dir.path(), &["run", "promptfooconfig.yaml", "--record"], true);
    assert_eq!(recorded.status.code(), Some(1), "{}", String::from_utf8_lossy(&recorded.stderr));
    let asked = server.requests();
    // A new answer: its embedding was never recorded. `not-similar` must not pass on it.
    write(&["Lyon it is"]);
    let replayed = evalgate(dir.path(), &["run", "promptfooconfig.yaml", "--replay"], false);
    let stderr = String::from_utf8_lossy(&replayed.stderr);
    assert_ne!(replayed.status.code(), Some(0), "{stderr}");
    let results = results(dir.path());
    for (id, status) in statuses(&results) {
        assert_eq!(status, "error", "{id}: a miss is an error\n{stderr}");
    }
    assert!(results.to_string().contains("not in cassette"), "the miss is named: {results}");
    assert_eq!(server.requests(), asked, "a miss went live");
}

#[test]
fn an_answer_that_is_no_vector_never_passes() {
    let server = embeddings();
    let dir = tempfile::tempdir().unwrap();
    let answers = ["[bad:string]", "[bad:short]", "[bad:texts]", "[bad:nested]", "[bad:object]"];
    std::fs::write(dir.path().join("promptfooconfig.yaml"), config(&server.url(), &answers)).unwrap();
    let run = evalgate(dir.path(), &["run", "promptfooconfig.yaml"], true);
    assert_ne!(run.status.code(), Some(0), "{}", String::from_utf8_lossy(&run.stderr));
    let results = results(dir.path());
    let statuses = statuses(&results);
    assert_eq!(statuses.len(), 10);
    for (id, status) in statuses {
        assert_eq!(status, "error", "{id}: {results}");
    }
    let text = results.to_string();
    assert!(text.contains("different lengths") && text.contains("not a list of numbers"), "{text}");
}

#[test]
fn a_rate_limited_embedding_is_asked_again_after_retry_after() {
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = calls.clone();
    let server = Server::start_with(move |_| {
        if seen.fetch_add(1, Ordering::SeqCst) == 0 {
            let mut reply = Reply::json(429, r#"{"error": {"message": "slow down"}}"#);
            reply.headers.push(("retry-after".into(), "1".into()));
            return reply;
        }
        Reply::json(200, json!({"data": [{"embedding": [1.0, 0.0]}], "usage": {"prompt_tokens": 1}}).to_string())
    });
    let dir = tempfile::tempdir().unwrap();
    let only_similar =
        config(&server.url(), &["Paris"]).split("  - description: not similar").next().unwrap().to_owned();
    std::fs::write(dir.path().join("promptfooconfig.yaml"), only_similar).unwrap();
    let run = evalgate(dir.path(), &["run", "promptfooconfig.yaml", "-j", "1"], true);
    assert_eq!(run.status.code(), Some(0), "{}", String::from_utf8_lossy(&run.stderr));
    assert_eq!(calls.load(Ordering::SeqCst), 3, "the 429 was asked again, then both texts");
}

#[test]
fn a_judge_s_embedding_model_is_checked_at_load() {
    let suite = "
evalgate: 1
suite: s
agents:
  bot: {command: [cat], stdin: true}
judge:
  provider: openai
  model: m
  embedding: {provider: anthropic, model: e, temperature: 0.2}
tasks:
  - {id: t, agent: bot, prompt: hi, grade: [{type: contains, value: hi}]}
";
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("evalgate.yaml"), suite).unwrap();
    let run = evalgate(dir.path(), &["run"], false);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("evalgate.yaml:9") && stderr.contains("anthropic has no embeddings API"), "{stderr}");
}
