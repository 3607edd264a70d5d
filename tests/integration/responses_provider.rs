//! OpenAI's Responses API (`provider: openai-responses`) against a local stand-in speaking
//! it, and a model agent's `declared_tools`, whose calls are its answer and are read by
//! promptfoo's `is-valid-openai-tools-call` from the agent's answer, never from text.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use serde_json::{Value, json};

use crate::cassettes::{evalgate, evalgate_with, results};
use crate::common::server::{Reply, Server};
use crate::common::{Test, unindent};

const KEY: &str = "sk-test-secret-value-9b1c";

/// A Responses API answer: its output items and usage.
fn response(output: Value) -> String {
    json!({"id": "resp_1", "object": "response", "model": "gpt-4o-mini-2024-07-18", "status": "completed",
        "output": output,
        "usage": {"input_tokens": 1000, "input_tokens_details": {"cached_tokens": 400}, "output_tokens": 200,
            "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 1200}})
    .to_string()
}

fn message(text: &str) -> Value {
    json!([{"type": "message", "id": "msg_1", "role": "assistant", "content": [{"type": "output_text", "text": text}]}])
}

const SUITE: &str = "
    evalgate: 1
    suite: resp
    agents:
      bot: {provider: openai-responses, model: gpt-4o-mini, base_url: '<url>/v1', api_key_env: EVALGATE_TEST_KEY, system: Be brief., max_tokens: 64, retries: 2, timeout: 5s}
    tasks:
      - id: capital
        prompt: Capital of France?
        grade: [{type: contains, value: Paris}]
    ";

/// The request is the Responses API's (instructions, input items, `max_output_tokens`, the
/// key as a bearer), a 429 is waited out and retried, the answer is its message's text,
/// priced from its usage; recorded, it replays with no key and no call at the same cost.
#[test]
fn a_responses_agent_is_asked_retried_priced_recorded_and_replayed() {
    let calls = Arc::new(AtomicU32::new(0));
    let count = calls.clone();
    let server = Server::start_with(move |r| {
        assert_eq!(r.path, "/v1/responses");
        assert!(r.header("authorization").is_some_and(|a| a.starts_with("Bearer sk-")), "{:?}", r.headers);
        let body: Value = serde_json::from_str(&r.body).unwrap();
        assert_eq!(body["instructions"], "Be brief.");
        assert_eq!(body["input"], json!([{"role": "user", "content": "Capital of France?"}]));
        assert_eq!(body["max_output_tokens"], 64);
        match count.fetch_add(1, Ordering::SeqCst) {
            0 => Reply {
                status: 429,
                headers: vec![("retry-after".into(), "0".into())],
                body: br#"{"error": {"message": "Rate limit reached"}}"#.to_vec(),
            },
            _ => Reply::json(200, response(message("Paris."))),
        }
    });
    let test = Test::new().write("evalgate.yaml", &unindent(SUITE).replace("<url>", &server.url()));
    let dir = test.path();
    let recorded = evalgate(dir, &["run", "--record"], true);
    assert_eq!(recorded.status.code(), Some(0), "{}", String::from_utf8_lossy(&recorded.stderr));
    assert_eq!(calls.load(Ordering::SeqCst), 2, "the 429 was not retried");
    let live = results(dir);
    let trial = &live["tasks"][0]["trials"][0];
    assert_eq!((trial["output"].as_str(), trial["model"].as_str()), (Some("Paris."), Some("gpt-4o-mini-2024-07-18")));
    assert_eq!(trial["usage"]["input_tokens"], 1000);
    // (600 × 0.15 + 400 × 0.075 + 200 × 0.60) / 1e6, as for chat completions.
    let cost = trial["usage"]["cost_usd"].as_f64().unwrap();
    assert!((cost - 0.00024).abs() < 1e-12, "{cost}");
    let cassette = std::fs::read_to_string(dir.join("cassettes/resp.jsonl")).unwrap();
    assert!(cassette.contains("openai-responses") && !cassette.contains(KEY), "{cassette}");

    let replayed = evalgate(dir, &["run", "--replay"], false);
    assert_eq!(replayed.status.code(), Some(0), "{}", String::from_utf8_lossy(&replayed.stderr));
    assert_eq!(calls.load(Ordering::SeqCst), 2, "a replay made a network call");
    let again = results(dir);
    let trial = &again["tasks"][0]["trials"][0];
    assert_eq!((trial["output"].as_str(), trial["replayed"].as_bool()), (Some("Paris."), Some(true)));
    assert_eq!(again["totals"]["cost_usd"], live["totals"]["cost_usd"]);
}

/// An answer that is not the protocol (no `output`, an `error` in a 200) is the task's
/// error, quoting the body; never an empty pass.
#[test]
fn a_responses_answer_that_is_not_the_protocol_is_an_error() {
    let server = Server::start(|r| {
        let body: Value = serde_json::from_str(&r.body).unwrap();
        match body["input"][0]["content"].as_str().unwrap() {
            "empty" => (200, json!({"id": "r", "output": []}).to_string()),
            _ => (200, json!({"id": "r", "error": {"message": "server_error"}, "output": null}).to_string()),
        }
    });
    let tasks = "tasks:
      - {id: empty, prompt: empty, grade: [{type: not_contains, value: x}]}
      - {id: failed, prompt: failed, grade: [{type: not_contains, value: x}]}
    ";
    let head = SUITE.split("tasks:").next().unwrap();
    let yaml = unindent(&format!("{head}{tasks}")).replace("<url>", &server.url());
    let run = Test::new().write("evalgate.yaml", &yaml).env("EVALGATE_TEST_KEY", KEY).args(&["run"]).run();
    run.expect_code(1).take_stderr();
    for (id, why) in [("empty", "no `output` list"), ("failed", "server_error")] {
        let task = run.task(id);
        assert_eq!(task["status"], "error", "{task}");
        assert!(task["reason"].as_str().unwrap().contains(why), "{task}");
    }
}

/// A command agent calling the Responses API itself (`$OPENAI_BASE_URL/responses`, as the
/// OpenAI SDK does) is served by the model endpoint: recorded, then replayed with no key.
#[test]
fn a_command_agent_calling_the_responses_api_is_recorded_and_replayed() {
    let server = Server::start(|r| {
        assert_eq!(r.path, "/v1/responses");
        assert_eq!(r.header("authorization"), Some(format!("Bearer {KEY}").as_str()));
        (200, response(message("Paris, of course.")))
    });
    let agent = r#"#!/usr/bin/env python3
import json, os, sys, urllib.request
request = urllib.request.Request(
    os.environ["OPENAI_BASE_URL"] + "/responses",
    data=json.dumps({"model": "gpt-4o-mini", "input": sys.argv[1]}).encode(),
    headers={"Content-Type": "application/json", "Authorization": "Bearer " + os.environ["OPENAI_API_KEY"]},
)
print(json.load(urllib.request.urlopen(request))["output"][0]["content"][0]["text"])
"#;
    let suite = "
        evalgate: 1
        suite: cli
        agents:
          cli: {command: ['./agent.py', '{prompt}']}
        tasks:
          - {id: capital, prompt: Capital of France?, grade: [{type: contains, value: Paris}]}
        ";
    let test = Test::new().file("evalgate.yaml", suite).write("agent.py", agent);
    let dir = test.path();
    std::fs::set_permissions(dir.join("agent.py"), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let upstream = format!("{}/v1", server.url());
    let recorded = evalgate_with(dir, &["run", "--record"], &[("OPENAI_BASE_URL", &upstream), ("OPENAI_API_KEY", KEY)]);
    assert_eq!(recorded.status.code(), Some(0), "{}", String::from_utf8_lossy(&recorded.stderr));
    assert_eq!(server.requests(), 1);
    let closed = format!("http://127.0.0.1:{}/v1", crate::common::server::closed_port());
    let replayed = evalgate_with(dir, &["run", "--replay"], &[("OPENAI_BASE_URL", &closed)]);
    assert_eq!(replayed.status.code(), Some(0), "{}", String::from_utf8_lossy(&replayed.stderr));
    assert_eq!(server.requests(), 1);
    let trial = &results(dir)["tasks"][0]["trials"][0];
    assert_eq!((trial["output"].as_str(), trial["replayed"].as_bool()), (Some("Paris, of course.\n"), Some(true)));
}

const TOOLS_SUITE: &str = "
    evalgate: 1
    suite: tools
    agents:
      bot:
        provider: <provider>
        model: gpt-4o-mini
        base_url: '<url>/v1'
        api_key_env: EVALGATE_TEST_KEY
        declared_tools:
          - name: get_weather
            description: Weather in a city
            parameters: {type: object, properties: {city: {type: string}}, required: [city]}
        tool_choice: required
      forger: {command: [cat, forged.json]}
    defaults: {agent: bot}
    tasks:
      - {id: valid, prompt: valid, grade: [{type: promptfoo, assertion: {type: is-valid-openai-tools-call}}]}
      - {id: invalid, prompt: invalid, grade: [{type: promptfoo, assertion: {type: is-valid-openai-tools-call}}]}
      - {id: malformed, prompt: malformed, grade: [{type: promptfoo, assertion: {type: is-valid-openai-tools-call}}]}
      - {id: forged, prompt: forged, grade: [{type: promptfoo, assertion: {type: is-valid-openai-tools-call}}]}
      - {id: forged-by-a-command, agent: forger, prompt: x, grade: [{type: promptfoo, assertion: {type: is-valid-openai-tools-call}}]}
    ";

/// The model's calls per prompt: valid, a wrong argument type, malformed JSON, and a text
/// answer that reads exactly like valid calls.
fn calls_for(prompt: &str) -> Value {
    let args = match prompt {
        "valid" => r#"{"city": "Paris"}"#,
        "invalid" => r#"{"city": 7}"#,
        _ => r#"{"city": "Par"#,
    };
    json!([{"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": args}}])
}

/// A model agent's declared tools are offered (with `tool_choice`), never run; its output is
/// the calls as the provider gave them, and `is-valid-openai-tools-call` passes only calls
/// that match the declared schema, read from the agent's answer: text that reads like a
/// valid call, from the model or a command agent, fails.
#[test]
fn declared_tools_are_offered_and_their_calls_checked_never_text() {
    let server = Server::start(|r| {
        let body: Value = serde_json::from_str(&r.body).unwrap();
        assert_eq!(body["tool_choice"], "required", "{body}");
        assert_eq!(body["tools"][0]["function"]["name"], "get_weather", "{body}");
        let prompt = body["messages"][0]["content"].as_str().unwrap();
        let message = match prompt {
            "forged" => json!({"role": "assistant", "content": calls_for("valid").to_string()}),
            _ => json!({"role": "assistant", "content": null, "tool_calls": calls_for(prompt)}),
        };
        let answer = json!({"id": "c", "object": "chat.completion", "model": "gpt-4o-mini",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": message}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1}});
        (200, answer.to_string())
    });
    let yaml = unindent(TOOLS_SUITE).replace("<url>", &server.url()).replace("<provider>", "openai");
    let forged = calls_for("valid").to_string();
    let test = Test::new().write("evalgate.yaml", &yaml).write("forged.json", &forged);
    let run = test.env("EVALGATE_TEST_KEY", KEY).args(&["run", "-j", "1"]).run();
    run.expect_code(1);
    let status = |id: &str| run.task(id)["status"].as_str().unwrap().to_owned();
    assert_eq!(
        ["valid", "invalid", "malformed", "forged", "forged-by-a-command"].map(status),
        ["passed", "failed", "failed", "failed", "failed"]
    );
    let trial = &run.task("valid")["trials"][0];
    assert_eq!(serde_json::from_str::<Value>(trial["output"].as_str().unwrap()).unwrap(), calls_for("valid"));
    let calls = trial["tool_calls"].as_array().unwrap();
    assert_eq!((calls.len(), calls[0]["name"].as_str()), (1, Some("get_weather")));
    assert!(calls[0].get("result").is_none_or(Value::is_null), "a declared tool ran: {trial}");
}

/// `declared_tools` and `tool_choice` are model agents' keys, checked at their key path.
#[test]
fn declared_tools_are_checked_at_their_key() {
    let yaml = "
        evalgate: 1
        suite: t
        mcp_servers:
          fs: {command: [cat]}
        agents:
          bot:
            provider: openai
            model: gpt-4o-mini
            declared_tools: [{name: f, parameters: [1]}, {name: f}]
            tool_choice: {name: g}
          both: {provider: openai, model: gpt-4o-mini, mcp: [fs], declared_tools: [{name: f}]}
          chooser: {provider: openai, model: gpt-4o-mini, tool_choice: none}
          cli: {command: [cat], declared_tools: [{name: f}]}
        tasks:
          - {id: a, agent: bot, prompt: x, grade: [{type: contains, value: x}]}
        ";
    let run = Test::new().file("evalgate.yaml", yaml).args(&["check"]).run();
    run.expect_code(2);
    for said in [
        "agents.bot.declared_tools[0].parameters: `parameters` is a JSON Schema object",
        "agents.bot.declared_tools[1].name: the tool name `f` is empty or given twice",
        "agents.bot.tool_choice.name: `g` is not among `declared_tools`",
        "agents.both.declared_tools: `declared_tools` are never run and `mcp` tools are",
        "agents.chooser.tool_choice: `tool_choice` needs `declared_tools`",
        "agents.cli.declared_tools: `declared_tools` belongs to model agents",
    ] {
        assert!(run.stderr_has(said), "missing {said:?} in\n{}", run.stderr);
    }
}
