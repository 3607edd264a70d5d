//! A conversation's opening `messages` (a system prompt, an earlier exchange) through the
//! binary: each agent kind is given them before the first turn, `window` keeps the system
//! messages outside it, and the transcript the whole-conversation graders read starts with
//! them (AgentV's).

use serde_json::{Value, json};

use super::conversation::{command_run, model_suite, run};
use crate::common::Test;
use crate::common::server::{Server, answer};
use crate::scenario::body;

/// A model agent gets the opening's system message as its system prompt and its exchange
/// before turn 1; under `window` the system prompt stays; the transcript starts with it.
#[test]
fn a_model_agent_follows_the_opening_messages() {
    let server = Server::start(|r| {
        let b = body(r);
        (200, answer(Some(&format!("answer {}", b["messages"].as_array().unwrap().len())), &[]))
    });
    let tasks = r#"
        - id: opened
          messages:
            - {role: system, content: 'Be brief, Ann.'}
            - {role: user, content: earlier question}
            - {role: assistant, content: earlier answer}
          turns:
            - prompt: first
              grade: [{type: equals, value: answer 4}]
            - prompt: second
              grade: [{type: equals, value: answer 4}]
          conversation: {window: 3, output: transcript}
          grade:
            - type: regex
              pattern: "^system: Be brief, Ann.\n\nuser: earlier question\n\nassistant: earlier answer\n\nuser: first\n\nassistant: answer 4\n\nuser: second\n\nassistant: answer 4$"
        "#;
    let run = run(&model_suite(&server, "", tasks));
    run.expect_code(0);
    let requests: Vec<Value> = server.received().iter().map(body).collect();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        requests[0]["messages"],
        json!([
            {"role": "system", "content": "Be brief, Ann."},
            {"role": "user", "content": "earlier question"},
            {"role": "assistant", "content": "earlier answer"},
            {"role": "user", "content": "first"},
        ])
    );
    // `window: 3`: the last three messages from a user's one, and the system prompt beside.
    assert_eq!(
        requests[1]["messages"],
        json!([
            {"role": "system", "content": "Be brief, Ann."},
            {"role": "user", "content": "first"},
            {"role": "assistant", "content": "answer 4"},
            {"role": "user", "content": "second"},
        ])
    );
    let trial = &run.task("opened")["trials"][0];
    assert_eq!(trial["status"], "passed");
    // The conversation a judge is shown starts with the opening too.
    let prompt: Value = serde_json::from_str(trial["prompt"].as_str().unwrap()).unwrap();
    assert_eq!(prompt[0], json!({"role": "system", "content": "Be brief, Ann."}));
    assert_eq!(prompt.as_array().unwrap().len(), 7);
}

/// A command agent finds the opening at the head of `$EVALGATE_CONVERSATION`; `window`
/// keeps its system message.
#[test]
fn a_command_agent_gets_the_opening_at_the_head_of_the_history() {
    let run = command_run(
        "
        - id: opened
          messages:
            - {role: system, content: be brief}
            - {role: user, content: earlier}
            - {role: assistant, content: before}
          turns:
            - prompt: one
              grade: [{type: contains, value: 'echo: one [3 earlier]'}]
            - prompt: two
              grade: [{type: contains, value: 'echo: two [3 earlier]'}]
          conversation: {window: 2}
        ",
    );
    run.expect_code(0);
    let history: Value = serde_json::from_str(&run.read("last-history.json")).unwrap();
    assert_eq!(
        history,
        json!([
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "one"},
            {"role": "assistant", "content": "echo: one [3 earlier]\n"},
        ])
    );
}

/// An ACP agent's session is told the opening once, before the first turn's message.
#[test]
fn an_acp_agent_hears_the_opening_before_the_first_turn() {
    let test = Test::new().write("fake_agent.py", include_str!("../fixtures/acp/fake_agent.py")).file(
        "evalgate.yaml",
        "
            evalgate: 1
            suite: t
            agents:
              coder:
                timeout: 5s
                acp: {command: [python3, fake_agent.py], env: {FAKE_ACP: converse}}
            tasks:
              - id: chat
                messages: [{role: system, content: be brief}, {role: user, content: earlier}]
                turns:
                  - prompt: hello
                    grade: [{type: equals, value: \"turn 1 of session 1 heard: system: be brief\\n\\nuser: earlier\\n\\nhello\"}]
                  - prompt: again
                    grade: [{type: ends_with, value: ' | again'}]
            ",
    );
    let run = test.args(&["run"]).run();
    run.expect_code(0);
    let turns = &run.task("chat")["trials"][0]["turns"];
    assert_eq!(turns[0]["prompt"], "hello", "the turn's own message is recorded");
}
