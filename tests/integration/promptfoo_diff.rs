//! The promptfoo differential test: the configs of tests/fixtures/promptfoo-diff (written
//! by scripts/promptfoo-diff-gen.py: every assertion evalgate runs, `not-` forms, weights,
//! thresholds, sets, `defaultTest`, tests from CSV / JSONL / YAML files, var expansion, two
//! providers as arms; answers good, bad, partial and hostile) run through `evalgate run`;
//! each test × prompt × provider verdict is compared with promptfoo 0.123.1's own, recorded
//! in VERDICTS.tsv by scripts/promptfoo-diff-record.sh (CI reads the record and never needs
//! promptfoo), one test a file so that they run side by side. At least 1,000 verdicts are
//! recorded; in each file at least 99 % agree, evalgate never passes a run promptfoo fails,
//! and every disagreement is one of the classified ones below (four on this version: an
//! empty embedding), so a new one fails the test even inside the 1 %.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use serde_json::{Value, json};

use crate::common::server::Server;
use crate::common::{Test, copy_dir};

/// Where the recorded configs point their grading provider (stand_in.py's port).
const RECORDED_URL: &str = "http://127.0.0.1:18941";

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/promptfoo-diff")
}

/// promptfoo's verdicts: (file, task) → `passed` / `failed` / `error`.
fn recorded() -> BTreeMap<(String, String), String> {
    crate::common::differential::recorded(&fixtures().join("VERDICTS.tsv"))
}

/// The text between `start` and the next `end` in `text`.
fn between<'t>(text: &'t str, start: &str, end: &str) -> &'t str {
    text.split_once(start).and_then(|(_, rest)| rest.split_once(end)).map_or("", |(inside, _)| inside)
}

/// The reply of tests/fixtures/promptfoo-diff/stand_in.py, by the same rule: a judge's
/// verdict on promptfoo's rubric prompt, else what follows the last `Say: `.
fn stand_in_reply(user: &str, model: &str) -> String {
    if !user.contains("<Rubric>") {
        let said = user.rsplit_once("Say: ").map_or(user, |(_, s)| s);
        return if model == "stand-in-upper" { said.to_uppercase() } else { said.to_owned() };
    }
    let (output, rubric) = (between(user, "<Output>\n", "\n</Output>"), between(user, "<Rubric>\n", "\n</Rubric>"));
    let wanted = between(rubric, "`", "`");
    let shape = Some(between(rubric, "[", "]")).filter(|s| !s.is_empty()).unwrap_or("plain");
    let met = !wanted.is_empty() && output.to_lowercase().contains(&wanted.to_lowercase());
    let score = match (shape, met) {
        ("partial", true) => 0.6,
        ("partial", false) => 0.2,
        (_, true) => 1.0,
        (_, false) => 0.0,
    };
    let verdict = json!({"reason": format!("looked for {wanted}"), "pass": met, "score": score}).to_string();
    match shape {
        "fenced" => format!("```json\n{verdict}\n```"),
        "prose" => format!("Sure. My verdict: {verdict} Thanks!"),
        "strings" => {
            json!({"reason": "r", "pass": if met { "yes" } else { "no" }, "score": format!("{score:?}")}).to_string()
        }
        "noscore" => json!({"reason": "r", "pass": met}).to_string(),
        "nojson" => "I cannot grade this.".into(),
        "twice" => format!("{}\n{verdict}", json!({"pass": !met, "score": 1.0 - score})),
        "nopass" => json!({"reason": "r", "score": score}).to_string(),
        _ => verdict,
    }
}

/// The `[shape]` of a criterion, `plain` without one.
fn shape(text: &str) -> &str {
    Some(between(text, "[", "]")).filter(|s| !s.is_empty()).unwrap_or("plain")
}

/// Whether the criterion's `backticked` word is in the answer (any case).
fn marked(criterion: &str, answer: &str) -> bool {
    let wanted = between(criterion, "`", "`");
    !wanted.is_empty() && answer.to_lowercase().contains(&wanted.to_lowercase())
}

/// stand_in.py's `graded`: its reply to promptfoo's closed-QA, factuality and G-Eval
/// prompts (`text`: every message joined), `None` for any other.
fn graded_reply(text: &str) -> Option<String> {
    if text.contains("[Criterion]:") {
        let (answer, criterion) = (between(text, "[Submission]: ", "\n***"), between(text, "[Criterion]: ", "\n***"));
        let letter = if marked(criterion, answer) { "Y" } else { "N" };
        return Some(match shape(criterion) {
            "lower" => format!("checked\n{}", letter.to_lowercase()),
            "noletter" => "I cannot say.".into(),
            "trailing" => format!("checked\n{letter}\n\n  "),
            "quoted" => format!("\"{letter}\""),
            _ => format!("The answer was checked.\n{letter}\n{letter}"),
        });
    }
    if text.contains("<expert_answer>") {
        let expert = between(text, "<expert_answer>\n", "\n</expert_answer>");
        let answer = between(text, "<submitted_answer>\n", "\n</submitted_answer>");
        let letter = if marked(expert, answer) { "C" } else { "D" };
        return Some(match shape(expert) {
            "legacy" => format!("({letter}) compared"),
            "bad" => json!({"category": "F", "reason": "x"}).to_string(),
            "lower" => json!({"category": letter.to_lowercase()}).to_string(),
            "prose" => "They look alike to me.".into(),
            "superset" => json!({"category": if letter == "C" { "B" } else { "D" }, "reason": ""}).to_string(),
            "fenced" => format!("```json\n{}\n```", json!({"category": letter, "reason": "r"})),
            _ => json!({"category": letter, "reason": "compared"}).to_string(),
        });
    }
    if text.contains("**EVALUATION CRITERIA**") {
        return Some(match shape(between(text, "**EVALUATION CRITERIA**\n", "\n\n**OUTPUT FORMAT**")) {
            "nosteps" => "Step one: read it.".into(),
            "emptysteps" => r#"{"steps": []}"#.into(),
            _ => json!({"steps": ["Look for the marked word", "Judge"]}).to_string(),
        });
    }
    if text.contains("**Evaluation Steps**") {
        let criteria = between(text, "**Evaluation Criteria**\n", "\n\n**Evaluation Steps**");
        let answer = between(text, "**Reply**\n", "\n\n**OUTPUT FORMAT**");
        let score = if marked(criteria, answer) { 8 } else { 3 };
        return Some(match shape(criteria) {
            "string" => json!({"score": score.to_string(), "reason": "s"}).to_string(),
            "range" => json!({"score": score + 9, "reason": "s"}).to_string(),
            "noreason" => json!({"score": score}).to_string(),
            "prose" => format!("I give it {score}."),
            "half" => json!({"score": score - 1, "reason": "s"}).to_string(),
            "nosteps" | "emptysteps" => String::new(),
            _ => json!({"score": score, "reason": "scored"}).to_string(),
        });
    }
    None
}

/// The http provider's routes, as stand_in.py's `http_reply` answers them.
fn http_reply(r: &crate::common::server::Request) -> (u16, String) {
    match r.path.as_str() {
        "/http/get" => return (200, "got: nothing".into()),
        "/http/text" => return (200, format!("got: {}", r.body)),
        "/http/auth" if r.header("x-key") != Some("local") => return (401, "denied".into()),
        _ => {}
    }
    let said = serde_json::from_str::<Value>(&r.body).unwrap()["input"].clone();
    scripted(&said, json!({"output": said}))
}

/// The `/http/` and `/http2/` routes' answer to `said`: a 500, no `output` or a `null` one
/// when it ends in `fail500`, `nooutput` or `null`, else `ok`.
fn scripted(said: &Value, ok: Value) -> (u16, String) {
    let ends = |tail: &str| said.as_str().is_some_and(|s| s.ends_with(tail));
    if ends("fail500") {
        (500, json!({"output": "server said no"}).to_string())
    } else if ends("nooutput") {
        (200, json!({"other": 1}).to_string())
    } else if ends("null") {
        (200, json!({"output": null}).to_string())
    } else {
        (200, ok.to_string())
    }
}

/// stand_in.py's `model_message` (the pfresp routes: tools.yaml, responses.yaml): an answer
/// that reads as a JSON object is the model's message or a Responses `output`; `CHOICE`
/// answers the request's `tool_choice`; anything else is its text.
fn model_message(said: &str, model: &str, choice: &Value) -> Value {
    if said == "CHOICE" {
        let name =
            choice.as_str().or(choice["name"].as_str()).or(choice["function"]["name"].as_str()).unwrap_or("None");
        return json!({"content": format!("choice={name}")});
    }
    match serde_json::from_str::<Value>(said) {
        Ok(message @ Value::Object(_)) => message,
        _ => json!({"content": if model == "stand-in-upper" { said.to_uppercase() } else { said.to_owned() }}),
    }
}

/// stand_in.py's `responses_reply`: `/v1/responses`, its calls as `function_call` items.
fn responses_reply(body: &Value) -> Value {
    let text = |c: &Value| match c {
        Value::String(s) => s.clone(),
        other => other.as_array().into_iter().flatten().filter_map(|p| p["text"].as_str()).collect(),
    };
    let user = match &body["input"] {
        Value::Array(items) => {
            items.iter().rev().find(|i| i["role"] == "user").map(|i| text(&i["content"])).unwrap_or_default()
        }
        other => text(other),
    };
    let said = user.rsplit_once("Say: ").map_or(user.as_str(), |(_, s)| s);
    let message = model_message(said, body["model"].as_str().unwrap_or_default(), &body["tool_choice"]);
    let output = message.get("output").cloned().unwrap_or_else(|| {
        let mut output = Vec::new();
        if let Some(content) = message["content"].as_str().filter(|c| !c.is_empty()) {
            output.push(
                json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": content}]}),
            );
        }
        for c in message["tool_calls"].as_array().into_iter().flatten() {
            let id = c["id"].as_str().unwrap_or_default();
            output.push(json!({"type": "function_call", "id": format!("fc_{id}"), "call_id": id,
                "name": c["function"]["name"], "arguments": c["function"]["arguments"], "status": "completed"}));
        }
        Value::Array(output)
    });
    json!({"id": "r", "object": "response", "model": body["model"], "status": "completed", "output": output,
        "usage": {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2}})
}

/// stand_in.py's `tools_reply`: a chat request with `tools`.
fn tools_reply(body: &Value, user: &str) -> Value {
    let said = user.rsplit_once("Say: ").map_or(user, |(_, s)| s);
    let mut message = json!({"role": "assistant"});
    let given = model_message(said, body["model"].as_str().unwrap_or_default(), &body["tool_choice"]);
    for (k, v) in given.as_object().into_iter().flatten() {
        message[k] = v.clone();
    }
    let reason = if message["tool_calls"].as_array().is_some_and(|c| !c.is_empty()) { "tool_calls" } else { "stop" };
    json!({"id": "s", "object": "chat.completion", "created": 0, "model": body["model"],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        "choices": [{"index": 0, "message": message, "finish_reason": reason}]})
}

/// stand_in.py's answer-relevance rule: asked promptfoo's question prompt, the question is
/// what follows the last `Answer:` (none when it holds `noq`).
fn question_reply(user: &str) -> Option<String> {
    if !user.contains("Generate question for the given answer.") {
        return None;
    }
    let tail = user.rsplit_once("Answer:").map_or(user, |(_, t)| t);
    Some(if tail.contains("noq") { String::new() } else { format!("Q: {tail}") })
}

/// stand_in.py's `embedding`: `[vec:A,B,…]` in the text is its vector, `[bad:KIND]` a
/// malformed answer; any other text counts its words (ASCII case ignored), then a 1.
fn embedding_reply(text: &str) -> String {
    const WORDS: [&str; 7] = ["paris", "capital", "france", "lyon", "city", "what", "is"];
    let one = |embedding: Value| json!([{"object": "embedding", "index": 0, "embedding": embedding}]);
    let data = match between(text, "[bad:", "]") {
        "nodata" => json!([]),
        "null" => one(Value::Null),
        "text" => one(json!("0.5,0.5")),
        "short" => one(json!([1.0])),
        "zero" => one(json!([0, 0])),
        "empty" => one(json!([])),
        _ if text.contains("[vec:") => {
            let vec: Vec<f64> = between(text, "[vec:", "]").split(',').map(|x| x.parse().unwrap()).collect();
            one(json!(vec))
        }
        _ => {
            let low = text.to_ascii_lowercase();
            let mut counts: Vec<usize> = WORDS.iter().map(|w| low.matches(w).count()).collect();
            counts.push(1);
            one(json!(counts))
        }
    };
    json!({"object": "list", "data": data, "model": "stand-in-embed", "usage": {"prompt_tokens": 1, "total_tokens": 1}})
        .to_string()
}

/// http2.yaml's routes, as stand_in.py's `http2_reply` answers them: 401 without each
/// route's credential, else the input (the query's `q`, the JSON body's `input`, or the
/// text body) with the method and the query's `lang`.
fn http2_reply(r: &crate::common::server::Request) -> (u16, String) {
    use base64::Engine as _;
    let query: BTreeMap<String, String> = url_pairs(&r.query);
    let basic = format!("Basic {}", base64::engine::general_purpose::STANDARD.encode("u:local"));
    let wanted = match r.path.as_str() {
        "/http2/bearer" => Some(("authorization", "Bearer local")),
        "/http2/header" => Some(("x-api-key", "local")),
        "/http2/basic" => Some(("authorization", basic.as_str())),
        _ => None,
    };
    let denied = wanted.is_some_and(|(name, value)| r.header(name) != Some(value))
        || (r.path == "/http2/query" && query.get("key").map(String::as_str) != Some("local"));
    if denied {
        return (401, "denied".into());
    }
    let said = if r.path == "/http2/query" {
        json!(query.get("q").cloned().unwrap_or_default())
    } else if r.header("content-type").is_some_and(|t| t.starts_with("application/json")) {
        serde_json::from_str::<Value>(&r.body).unwrap()["input"].clone()
    } else {
        json!(r.body)
    };
    scripted(&said, json!({"output": said, "method": r.method, "lang": query.get("lang")}))
}

/// A query string's pairs, decoded as a form (`+` a space), the first of each name kept.
fn url_pairs(query: &str) -> BTreeMap<String, String> {
    let mut pairs = BTreeMap::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        let decode =
            |t: &str| percent_encoding::percent_decode_str(&t.replace('+', " ")).decode_utf8_lossy().into_owned();
        pairs.entry(decode(k)).or_insert_with(|| decode(v));
    }
    pairs
}

/// The model and judge stand-in, answering as stand_in.py answered promptfoo.
fn stand_in() -> Server {
    Server::start(|r| {
        if r.path.starts_with("/http/") {
            return http_reply(r);
        }
        if r.path.starts_with("/http2/") {
            return http2_reply(r);
        }
        let body: Value = serde_json::from_str(&r.body).unwrap();
        if r.path.ends_with("/responses") {
            return (200, responses_reply(&body).to_string());
        }
        if r.path.ends_with("/embeddings") {
            return (200, embedding_reply(body["input"].as_str().unwrap()));
        }
        let messages = body["messages"].as_array().unwrap();
        let user = messages.iter().rev().find(|m| m["role"] == "user").map_or("", |m| m["content"].as_str().unwrap());
        if body.get("tools").is_some_and(|t| t.as_array().is_some_and(|t| !t.is_empty())) {
            return (200, tools_reply(&body, user).to_string());
        }
        let text: Vec<&str> = messages.iter().map(|m| m["content"].as_str().unwrap()).collect();
        let content = question_reply(user)
            .or_else(|| graded_reply(&text.join("\n")))
            .unwrap_or_else(|| stand_in_reply(user, body["model"].as_str().unwrap_or_default()));
        let reply = json!({"id": "s", "object": "chat.completion", "created": 0, "model": "judge",
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}]});
        (200, reply.to_string())
    })
}

/// evalgate's verdict on each task of `file`, run on its own (`evalgate run FILE`), its
/// grading provider pointed at `judge`.
fn evalgate_verdicts(file: &str, judge: &Server) -> BTreeMap<String, String> {
    let test = Test::new();
    copy_dir(&fixtures(), test.path());
    let config = test.path().join(file);
    let text = std::fs::read_to_string(&config).unwrap().replace(RECORDED_URL, &judge.url());
    std::fs::write(&config, text).unwrap();
    let run = test.env("STAND_IN_KEY", "local").args(&["run", file, "-j", "2"]).run();
    assert!(run.code == 0 || run.code == 1, "{file}: exit {}\n{}", run.code, run.stderr);
    let results = run.results();
    let tasks = results["tasks"].as_array().unwrap();
    tasks.iter().map(|t| (t["id"].as_str().unwrap().to_owned(), t["status"].as_str().unwrap().to_owned())).collect()
}

/// The disagreements known and why: (file, task, class).
const CLASSIFIED: &[(&str, &str, &str)] = &[
    ("embed.yaml", "answer-relevance-malformed.v6.bare", EMPTY_EMBEDDING),
    ("embed.yaml", "answer-relevance-malformed.v6.prefixed", EMPTY_EMBEDDING),
    ("embed.yaml", "not-answer-relevance-malformed.v6.bare", EMPTY_EMBEDDING),
    ("embed.yaml", "not-answer-relevance-malformed.v6.prefixed", EMPTY_EMBEDDING),
];

/// An endpoint answering `[]` for both the query and the questions: promptfoo compares the
/// two empty vectors (cosine 0: fails, and `not-` passes); evalgate refuses an empty
/// embedding (an error), so a broken endpoint never passes an assertion.
const EMPTY_EMBEDDING: &str = "an empty embedding is an error in evalgate";

/// Compares evalgate's verdicts on `file` with promptfoo's: every one agrees but the
/// classified, none is a pass promptfoo failed, and at least 99 % agree.
fn agrees_on(file: &str) {
    let expected: BTreeMap<(String, String), String> = recorded().into_iter().filter(|((f, _), _)| f == file).collect();
    assert!(!expected.is_empty(), "{file}: no recorded verdicts");
    let judge = stand_in();
    let compared = crate::common::differential::compare("promptfoo", &expected, |file| evalgate_verdicts(file, &judge));
    let (agree, differ, false_greens) = (compared.agree, &compared.differ, &compared.false_greens);
    let share = compared.share(expected.len());
    let unclassified: Vec<&String> =
        differ.iter().filter(|d| !CLASSIFIED.iter().any(|(f, id, _)| d.starts_with(&format!("{f} {id}:")))).collect();
    assert!(unclassified.is_empty(), "disagreements not classified in CLASSIFIED: {unclassified:#?}");
    assert!(false_greens.is_empty(), "evalgate passes what promptfoo fails: {false_greens:#?}");
    assert!(share >= 0.99, "{agree} of {} verdicts agree ({:.1} %): {differ:#?}", expected.len(), share * 100.0);
}

/// One test a recorded file, so that the runner runs them side by side, and the list of
/// them for the check that none is left out.
macro_rules! differential {
    ($($name:ident: $file:literal),* $(,)?) => {
        const FILES: &[&str] = &[$($file),*];
        $(
            #[test]
            fn $name() {
                agrees_on($file);
            }
        )*
    };
}

differential! {
    config_yaml: "config.yaml",
    embed_yaml: "embed.yaml",
    exec_yaml: "exec.yaml",
    files_yaml: "files.yaml",
    graded_yaml: "graded.yaml",
    http_yaml: "http.yaml",
    http2_yaml: "http2.yaml",
    json_yaml: "json.yaml",
    metrics_yaml: "metrics.yaml",
    provider_yaml: "provider.yaml",
    responses_yaml: "responses.yaml",
    rubric_yaml: "rubric.yaml",
    scoring_yaml: "scoring.yaml",
    scriptprov_yaml: "scriptprov.yaml",
    scripts_yaml: "scripts.yaml",
    text_yaml: "text.yaml",
    tools_yaml: "tools.yaml",
}

#[test]
fn every_recorded_file_is_compared_and_the_record_is_large_enough() {
    let expected = recorded();
    let files: BTreeSet<&str> = expected.keys().map(|(f, _)| f.as_str()).collect();
    let listed: BTreeSet<&str> = FILES.iter().copied().collect();
    assert_eq!(files, listed, "every file of VERDICTS.tsv has its test in `differential!`, and only those");
    assert!(files.len() >= 5 && expected.len() >= 1000, "{} verdicts in {} files", expected.len(), files.len());
}
