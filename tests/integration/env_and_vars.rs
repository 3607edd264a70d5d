//! `{env.X}` and `{vars.X}` wherever they are written: every `{env.X}` is preflighted
//! (unset, or empty where that makes a check vacuous: exit 3, naming the variable and the
//! places), and `{vars.X}` renders everywhere, models and tool-call arguments included.

use crate::common::Test;
use crate::common::server::{Server, answer};

/// An agent that must never run: preflight stops first.
const MARKER_AGENT: &str = "#!/bin/sh\ntouch ran.marker\necho ok\n";

/// One `{env.X}` in each kind of place: a grader's value, a step's header, the judge's
/// header, a model agent's header, a canary.
fn suite() -> &'static str {
    r#"evalgate: 1
suite: env.places
judge: {provider: openai, model: gpt-test, api_key_env: EG_T_KEY, headers: {X-Judge: "{env.EG_T_JUDGE_HEADER}"}}
agents:
  bot: {command: [./agent.sh]}
  model: {provider: openai, model: gpt-test, api_key_env: EG_T_KEY, headers: {X-Agent: "{env.EG_T_AGENT_HEADER}"}}
defaults: {agent: bot}
tasks:
  - id: grade
    prompt: hi
    grade: [{type: contains, value: "{env.EG_T_EXPECTED}"}]
  - id: step
    prompt: hi
    setup:
      - http: {url: "http://127.0.0.1:9/", headers: {Authorization: "Bearer {env.EG_T_STEP_TOKEN}"}}
    grade: [{type: no_leak, canaries: ["{env.EG_T_CANARY}"]}]
"#
}

const ALL: [&str; 6] =
    ["EG_T_KEY", "EG_T_JUDGE_HEADER", "EG_T_AGENT_HEADER", "EG_T_EXPECTED", "EG_T_STEP_TOKEN", "EG_T_CANARY"];

#[track_caller]
fn run_with(env: &[(&str, &str)]) -> crate::common::Run {
    let mut test = Test::new().write("agent.sh", MARKER_AGENT).write("evalgate.yaml", suite());
    for (k, v) in env {
        test = test.env(k, v);
    }
    test.args(&["run"]).run()
}

#[test]
fn an_unset_env_var_anywhere_fails_preflight_naming_it_and_where_it_is_used() {
    let run = run_with(&[("EG_T_KEY", "sk-test-000000")]);
    run.expect_messages("preflight failed for evalgate.yaml: 5 missing\n  - environment variable `EG_T_AGENT_HEADER`: is not set (used by agent `model`)\n  - environment variable `EG_T_CANARY`: is not set (used by task `step`)\n  - environment variable `EG_T_EXPECTED`: is not set (used by task `grade`)\n  - environment variable `EG_T_JUDGE_HEADER`: is not set (used by the judge)\n  - environment variable `EG_T_STEP_TOKEN`: is not set (used by task `step`)\nnothing ran\n");
    run.expect_code(3);
    for (name, place) in [
        ("EG_T_JUDGE_HEADER", "the judge"),
        ("EG_T_AGENT_HEADER", "agent `model`"),
        ("EG_T_EXPECTED", "task `grade`"),
        ("EG_T_STEP_TOKEN", "task `step`"),
        ("EG_T_CANARY", "task `step`"),
    ] {
        let line = run
            .stderr
            .lines()
            .find(|l| l.contains(&format!("`{name}`")))
            .unwrap_or_else(|| panic!("{name}: {}", run.stderr));
        assert!(line.contains("is not set") && line.contains(place), "{line}");
    }
    assert!(!run.dir.join("ran.marker").exists(), "nothing runs after a failed preflight");
}

#[test]
fn a_set_but_empty_value_that_makes_a_check_vacuous_fails_preflight() {
    let mut env: Vec<(&str, &str)> = ALL.iter().map(|n| (*n, "set-to-something")).collect();
    env.retain(|(n, _)| *n != "EG_T_EXPECTED" && *n != "EG_T_CANARY");
    env.extend([("EG_T_EXPECTED", ""), ("EG_T_CANARY", "  ")]);
    let run = run_with(&env);
    run.expect_code(3);
    assert!(run.stderr_has("`EG_T_EXPECTED`: is set but empty: a `contains` value in task `grade`"), "{}", run.stderr);
    assert!(run.stderr_has("`EG_T_CANARY`: is set but empty: a canary in task `step`"), "{}", run.stderr);
    // An empty header is not vacuous: only the two checks are named.
    assert_eq!(run.stderr.matches("is set but empty").count(), 2, "{}", run.stderr);
    assert!(!run.dir.join("ran.marker").exists());
}

#[test]
fn vars_render_in_a_model_agents_base_url_and_headers() {
    let stub = Server::start(|_| (200, answer(Some("Paris."), &[])));
    let yaml = format!(
        r#"evalgate: 1
suite: vars.models
vars: {{endpoint: "{}", team: evals-team, model: gpt-test}}
agents:
  bot: {{provider: openai, model: "{{vars.model}}-1", api_key_env: EG_V_KEY, base_url: "{{vars.endpoint}}/v1", headers: {{X-Team: "{{vars.team}}"}}}}
tasks:
  - id: capital
    prompt: Capital of France?
    grade: [{{type: equals, value: Paris.}}]
"#,
        stub.url()
    );
    let run = Test::new().write("evalgate.yaml", &yaml).env("EG_V_KEY", "sk-test-111111").args(&["run"]).run();
    run.expect_code(0);
    let requests = stub.received();
    assert_eq!(requests.len(), 1, "the model was reached at the rendered base_url");
    assert_eq!(requests[0].path, "/v1/chat/completions");
    assert_eq!(requests[0].header("x-team"), Some("evals-team"));
    let body: serde_json::Value = serde_json::from_str(&requests[0].body).unwrap();
    assert_eq!(body["model"], "gpt-test-1", "the model name is rendered, not sent as written");
}

#[test]
fn a_model_name_renders_its_vars_or_is_a_load_error() {
    let yaml = r#"evalgate: 1
suite: vars.model-names
vars: {empty: ""}
agents:
  a: {provider: openai, model: "{env.MODEL}"}
  b: {provider: openai, model: "{vars.empty}"}
tasks:
  - id: t
    agent: a
    prompt: hi
    grade: [{type: contains, value: x}]
"#;
    let run = Test::new().write("evalgate.yaml", yaml).args(&["check"]).run();
    run.expect_code(2);
    let env = "error: evalgate.yaml:5:32: agents.a.model: a model name may use only `{vars.X}`, constants of the run: \
               `{env.MODEL}` is known later";
    assert!(run.stderr_has(env), "{}", run.stderr);
    let empty = "error: evalgate.yaml:6:32: agents.b.model: a model needs `model`: this one is empty";
    assert!(run.stderr_has(empty), "{}", run.stderr);
}

#[test]
fn an_execution_level_calls_arguments_are_templates() {
    let yaml = format!(
        r#"evalgate: 1
suite: vars.calls
vars: {{who: world}}
mcp_servers:
  everything: {{command: [{}, stdio]}}
tasks:
  - id: echo
    level: execution
    call: {{server: everything, tool: echo, arguments: {{message: "{{env.EG_V_GREETING}} {{vars.who}}"}}}}
    grade: [{{type: equals, value: "Echo: hello world"}}]
"#,
        crate::mcp::bin("mcp-server-everything")
    );
    let run = Test::new().write("evalgate.yaml", &yaml).env("EG_V_GREETING", "hello").args(&["run"]).run();
    run.expect_code(0);
    assert_eq!(run.task("echo")["trials"][0]["tool_calls"][0]["arguments"]["message"], "hello world");

    let unknown = yaml.replace("{vars.who}", "{vars.nope}");
    let run = Test::new().write("evalgate.yaml", &unknown).args(&["check"]).run();
    run.expect_code(2);
    assert!(run.stderr_has("unknown variable `{vars.nope}`"), "{}", run.stderr);
    assert!(run.stderr_has("tasks[0].call.arguments.message"), "{}", run.stderr);
    assert!(run.stderr_has("evalgate.yaml:9"), "located at its line: {}", run.stderr);
}

#[test]
fn check_warns_about_a_secret_too_short_to_redact_without_printing_it() {
    let yaml = r#"
        evalgate: 1
        suite: short.secret
        agents:
          bot: {command: [./agent.sh], env: {PIN: "{env.EG_S_PIN}"}}
        tasks:
          - id: t
            prompt: hi
            grade: [{type: contains, value: ok}]
        "#;
    let run = Test::new()
        .write("agent.sh", MARKER_AGENT)
        .file("evalgate.yaml", yaml)
        .env("EG_S_PIN", "4711")
        .args(&["check"])
        .run();
    run.expect_code(0);
    assert!(run.stderr_has("warning: [secret:EG_S_PIN] is shorter than 6 characters"), "{}", run.stderr);
    assert!(run.stderr_lacks("4711"), "{}", run.stderr);
}
