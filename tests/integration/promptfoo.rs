//! promptfoo configs: run on their own (providers as agents, several as arms), imported
//! into a native suite with its agent, converted, sent to a model through evalgate's model
//! plumbing, and refused where evalgate does not run what they use, each refusal at its
//! file, key path and line.

use serde_json::Value;

use crate::common::server::{Server, answer};
use crate::common::{Test, sorted_statuses, unindent};

fn owned(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter().map(|(a, b)| ((*a).to_owned(), (*b).to_owned())).collect()
}

const CONFIG: &str = "
    description: Capitals
    prompts:
      - {raw: 'Capital of {{ country }}? {{ hint }}', label: ask}
    providers: [echo]
    defaultTest:
      vars: {hint: Be brief.}
      assert:
        - {type: not-icontains, value: lyon}
    tests:
      - description: France
        vars: {country: [France, Spain]}
        assert:
          - {type: contains, value: France, metric: names}
      - vars: {country: Lyon}
        assert:
          - {type: starts-with, value: Capital}
    ";

#[test]
fn a_config_runs_on_its_own_with_readable_task_ids() {
    let run = Test::new().file("promptfooconfig.yaml", CONFIG).args(&["run", "promptfooconfig.yaml"]).run();
    run.expect_code(1);
    assert_eq!(
        sorted_statuses(&run.results()),
        owned(&[("france.v1.ask", "passed"), ("france.v2.ask", "failed"), ("test-2.ask", "failed")])
    );
    // The prompt is rendered with the test's vars, `defaultTest`'s included.
    let task = run.task("test-2.ask");
    assert_eq!(task["trials"][0]["prompt"], "Capital of Lyon? Be brief.");
    assert_eq!(task["trials"][0]["graders"][0]["name"], "not-icontains");
    assert_eq!(run.task("france.v1.ask")["trials"][0]["graders"][1]["name"], "names");
}

#[test]
fn an_import_runs_the_tests_with_the_importing_suite_s_agent() {
    let run = Test::new()
        .file("pf/promptfooconfig.yaml", CONFIG)
        .write("bot.sh", "#!/bin/sh\nprintf 'Capital of France? Paris'\n")
        .suite(
            "
            evalgate: 1
            suite: imported
            agents:
              bot: {command: [./bot.sh, '{prompt}']}
            imports:
              - {format: promptfoo, path: pf/promptfooconfig.yaml, agent: bot}
            ",
        )
        .args(&["run"])
        .run();
    run.expect_code(0);
    // The file's providers are not started: the import's agent answers every test.
    assert_eq!(
        sorted_statuses(&run.results()),
        owned(&[("france.v1.ask", "passed"), ("france.v2.ask", "passed"), ("test-2.ask", "passed")])
    );
}

#[test]
fn convert_writes_the_native_suite() {
    let run = Test::new().file("promptfooconfig.yaml", CONFIG).args(&["convert", "promptfooconfig.yaml"]).run();
    run.expect_code(0);
    for line in [
        "suite: capitals",
        "- prompt: Capital of Spain? Be brief.",
        "  id: france.v2.ask",
        "  - type: promptfoo",
        "      type: not-icontains",
    ] {
        assert!(run.stdout.contains(line), "no `{line}` in\n{}", run.stdout);
    }
}

/// An OpenAI-compatible stand-in: answers `Paris` when the user asks about France, else
/// `I do not know`.
fn stand_in() -> Server {
    Server::start(|r| {
        let body: Value = serde_json::from_str(&r.body).unwrap();
        let user = body["messages"].as_array().unwrap().iter().rev().find(|m| m["role"] == "user").unwrap()["content"]
            .as_str()
            .unwrap()
            .to_owned();
        let text = if user.contains("France") { "Paris" } else { "I do not know" };
        (200, answer(Some(text), &[]))
    })
}

#[test]
fn a_model_provider_is_a_model_agent_and_several_are_arms() {
    let server = stand_in();
    let config = format!(
        "
        prompts:
          - file://chat.json
        providers:
          - id: openai:chat:stand-in
            label: first
            config: {{apiBaseUrl: '{url}/v1', apiKeyEnvar: STAND_IN_KEY, temperature: 0}}
          - id: openai:chat:stand-in-2
            label: second
            config: {{apiBaseUrl: '{url}/v1', apiKeyEnvar: STAND_IN_KEY}}
        tests:
          - vars: {{country: France}}
            assert: [{{type: equals, value: Paris}}]
          - vars: {{country: Peru}}
            assert: [{{type: equals, value: Lima}}]
        ",
        url = server.url()
    );
    let chat = r#"[{"role": "system", "content": "You answer {{ country }} questions."}, {"role": "user", "content": "Capital of {{ country }}?"}]"#;
    let run = Test::new()
        .file("promptfooconfig.yaml", &config)
        .write("chat.json", chat)
        .env("STAND_IN_KEY", "k")
        .args(&["run", "promptfooconfig.yaml"])
        .run();
    run.expect_code(1);
    assert_eq!(
        sorted_statuses(&run.results()),
        owned(&[
            ("test-1@first", "passed"),
            ("test-1@second", "passed"),
            ("test-2@first", "failed"),
            ("test-2@second", "failed"),
        ])
    );
    let first: Value = serde_json::from_str(&server.received()[0].body).unwrap();
    let messages = first["messages"].as_array().unwrap();
    assert_eq!(messages[0]["role"], "system");
    assert!(messages[0]["content"].as_str().unwrap().ends_with("questions."), "{first}");
}

#[test]
fn what_evalgate_does_not_run_is_refused_at_its_line() {
    let config = unindent(
        "
        prompts: ['{{ q }}']
        providers:
          - echo
          - vertex:gemini-pro
        tests:
          - vars: {q: hi}
            assert:
              - {type: webhook, value: 'http://localhost/hook'}
              - {type: moderation}
            options: {postprocess: output.toUpperCase()}
          - file://rows.csv
        ",
    );
    let run = Test::new()
        .file("promptfooconfig.yaml", &config)
        .write("rows.csv", "q,__expected,__prefixx\nhi,contains: h,x\n")
        .args(&["run", "promptfooconfig.yaml"])
        .run();
    run.expect_code(2);
    run.expect_messages(
        "error: promptfooconfig.yaml: invalid promptfoo config:
  promptfooconfig.yaml:4:5: /providers/1: provider `vertex:gemini-pro` is not supported (openai:chat:MODEL, openai:responses:MODEL, openai:MODEL, anthropic:messages:MODEL, exec:COMMAND, http, file:// and python: scripts, and echo are)
  rows.csv:2:1: /0: the CSV column `__prefixx` is not supported (`__expected…`, `__description`, `__threshold`, `__metric`, `__prefix`, `__suffix` and `__metadata:…` are)
  promptfooconfig.yaml:10:15: /tests/0/options/postprocess: the option `postprocess`: `postprocess` is not supported: write it as `transform`
  promptfooconfig.yaml:8:10: /tests/0/assert/0/type: a `webhook` assertion sends the output to a server evalgate does not call; run it as a `command` grader
  promptfooconfig.yaml:9:10: /tests/0/assert/1/type: the model-graded `moderation` assertion is not supported yet: write it as a native `rubric` grader
1 error in the suite; nothing ran
",
    );
}

/// promptfoo's simulated user plays the user through promptfoo's remote service: refused at
/// its line with the reason and the native alternative, as `defaultTest.provider` (where
/// promptfoo's docs put it) and as a test's; another `defaultTest` key is never dropped
/// silently.
#[test]
fn the_simulated_user_is_refused_at_its_line_with_the_native_alternative() {
    let config = unindent(
        "
        prompts: ['{{ q }}']
        providers: [echo]
        defaultTest:
          provider: {id: 'promptfoo:simulated-user', config: {maxTurns: 3}}
          assertScoringFunction: file://score.js
        tests:
          - vars: {q: hi}
            provider: promptfoo:simulated-user
            assert: [{type: contains, value: hi}]
        ",
    );
    let run = Test::new().file("promptfooconfig.yaml", &config).args(&["run", "promptfooconfig.yaml"]).run();
    run.expect_code(2);
    let stderr = run.take_stderr();
    let why = "provider `promptfoo:simulated-user` is not supported: promptfoo plays the user through its remote generation service, which evalgate does not call";
    for needle in [
        format!("promptfooconfig.yaml:4:3: /defaultTest/provider: {why}"),
        format!("promptfooconfig.yaml:8:5: /tests/0/provider: {why}"),
        "/defaultTest/assertScoringFunction: the `defaultTest` key `assertScoringFunction` is not supported".into(),
        "write the conversation as a native task with `simulated_user`".into(),
    ] {
        assert!(stderr.contains(&needle), "{needle}\n---\n{stderr}");
    }
}

/// An endpoint that puts the `x-key` header it was sent into its answer, and answers
/// without a `text` when asked about Peru.
fn echoing_endpoint() -> Server {
    Server::start(|r| {
        let body: Value = serde_json::from_str(&r.body).unwrap();
        let q = body["q"].as_str().unwrap_or_default();
        if q.contains("Peru") {
            return (200, r#"{"reply": [{"other": 1}]}"#.to_owned());
        }
        let said = format!("Paris; key was {}", r.header("x-key").unwrap_or("none"));
        (200, serde_json::json!({"reply": [{"text": said}]}).to_string())
    })
}

#[test]
fn an_http_provider_is_requested_by_evalgate_and_its_credential_never_shows() {
    let server = echoing_endpoint();
    let secret = "pf-http-secret-8d1f3c";
    let config = format!(
        "
        prompts: ['Capital of {{{{ country }}}}?']
        providers:
          - id: http
            config:
              url: '{url}/ask'
              method: POST
              headers: {{x-key: '{{{{ env.PF_HTTP_KEY }}}}'}}
              body: {{q: '{{{{prompt}}}}', n: 1}}
              transformResponse: json.reply[0].text
        tests:
          - vars: {{country: France}}
            assert: [{{type: contains, value: Paris}}]
          - vars: {{country: Peru}}
            assert: [{{type: not-contains, value: Paris}}]
        ",
        url = server.url()
    );
    let test = Test::new().file("promptfooconfig.yaml", &config).env("PF_HTTP_KEY", secret);
    let run = test.args(&["run", "promptfooconfig.yaml"]).run();
    run.expect_code(1);
    // No output is a failed test, as promptfoo fails it, whatever the assertion says.
    assert_eq!(sorted_statuses(&run.results()), owned(&[("test-1", "passed"), ("test-2", "failed")]));
    assert!(run.task("test-2")["trials"][0]["reason"].as_str().unwrap().contains("No output"));
    // evalgate made the request, with the prompt in the body and the key in its header...
    let received = server.received();
    let sent = received.iter().find(|r| r.body.contains("France")).unwrap();
    assert_eq!(sent.header("x-key"), Some(secret));
    assert_eq!(sent.header("content-type"), Some("application/json"));
    assert_eq!(sent.body, r#"{"q":"Capital of France?","n":1}"#);
    // ...and the key reaches no output: not the results, the terminal, or the converted suite.
    let output = run.task("test-1")["trials"][0]["output"].as_str().unwrap().to_owned();
    assert!(output.starts_with("Paris; key was ") && !output.contains(secret), "{output}");
    for file in ["results.json", "summary.json", "summary.md", "junit.xml", "report.html", "events.jsonl"] {
        assert!(!run.read(&format!("evalgate-out/{file}")).contains(secret), "{file} holds the key");
    }
    assert!(!run.stdout.contains(secret) && !run.stderr.contains(secret));
    let converted = Test::new().file("promptfooconfig.yaml", &config).args(&["convert", "promptfooconfig.yaml"]).run();
    converted.expect_code(0);
    assert!(
        converted.stdout.contains(r#"x-key: "{env.PF_HTTP_KEY}""#) && !converted.stdout.contains(secret),
        "{}",
        converted.stdout
    );
}

#[test]
fn an_http_provider_s_test_vars_and_file_transforms_are_refused_at_their_line() {
    let config = unindent(
        "
        prompts: ['{{ q }}']
        providers:
          - id: http
            config:
              url: 'http://127.0.0.1:1/ask'
              method: POST
              body: {q: '{{ q }}', p: '{{prompt}}'}
              transformResponse: 'json => json.choices[0].text'
              tls: {}
          - id: https://127.0.0.1:1/x
            config: {body: x, transformResponse: file://parse.js}
        tests:
          - vars: {q: hi}
        ",
    );
    let run = Test::new().file("promptfooconfig.yaml", &config).args(&["run", "promptfooconfig.yaml"]).run();
    run.expect_code(2);
    run.expect_messages(
        "error: promptfooconfig.yaml: invalid promptfoo config:
  promptfooconfig.yaml:9:7: /providers/0/config/tls: the http provider's `tls` is not supported
  promptfooconfig.yaml:7:14: /providers/0/config/body/q: the http provider's template `{{ q }}` is not supported: one agent serves every test, so its templates name only `{{prompt}}` and `{{env.NAME}}`
  promptfooconfig.yaml:11:23: /providers/1/config/transformResponse: `transformResponse`: a transform from a file is not run
1 error in the suite; nothing ran
",
    );
}
