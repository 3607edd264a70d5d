//! Conversations as written: `turns`, `conversation`, `simulated_user` and
//! `{turns.N.output}`, each wrong value refused at its line.

use crate::common::Test;

#[test]
fn a_conversation_loads_and_its_mistakes_are_located() {
    let ok = Test::new()
        .suite(
            "
            evalgate: 1
            suite: t
            agents:
              bot: {command: [echo, '{prompt}']}
            tasks:
              - id: chat
                messages: [{role: system, content: be brief}, {role: user, content: hi}, {role: assistant, content: hello}]
                turns:
                  - prompt: hello
                    grade: [{type: contains, value: hello}]
                  - prompt: 'you said {turns.1.output}'
                    grade: [{type: contains, value: '{turns.2.output}'}]
                conversation: {verdict: {share: 0.5}, stop_on_failure: true, window: 4}
            ",
        )
        .args(&["check"])
        .run();
    ok.expect_code(0);
    let _ = ok.take_stderr();

    let run = Test::new()
        .suite(
            "
            evalgate: 1
            suite: t
            agents:
              bot: {command: [echo, '{prompt}']}
            tasks:
              - id: forward
                turns:
                  - prompt: 'answer {turns.2.output}'
                    grade: [{type: contains, value: x}]
                  - prompt: 'me {turns.2.output}'
              - id: both
                prompt: hi
                turns: [{prompt: hi, grade: [{type: contains, value: x}]}]
              - id: verdict
                turns: [{prompt: hi, grade: [{type: contains, value: x}]}]
                conversation: {verdict: most}
              - id: nograde
                turns: [{prompt: hi}]
              - id: outside
                prompt: 'hi {turns.1.output}'
                grade: [{type: contains, value: x}]
              - id: sim
                turns: [{prompt: hi}]
                simulated_user: {persona: p, goal: g, max_turns: 3}
                grade: [{type: contains, value: x}]
              - id: lonely
                prompt: hi
                conversation: {stop_on_failure: true}
                grade: [{type: contains, value: x}]
              - id: opening
                messages: [{role: system, content: 'be {turns.1.output}'}]
                turns: [{prompt: hi, grade: [{type: contains, value: x}]}]
            ",
        )
        .args(&["check"])
        .run();
    run.expect_code(2);
    let stderr = run.take_stderr();
    for needle in [
        "evalgate.yaml:8:25: tasks[0].turns[0].prompt: `{turns.2.output}` refers to a turn not answered yet: the first turn has no earlier turn",
        "evalgate.yaml:10:21: tasks[0].turns[1].prompt: `{turns.2.output}` refers to a turn not answered yet: only turns 1 to 1 are answered here",
        "evalgate.yaml:11:5: tasks[1]: set either `prompt` or `turns`/`simulated_user`, not both (`messages` may open the conversation)",
        "evalgate.yaml:16:29: tasks[2].conversation.verdict: unknown verdict `most`",
        "evalgate.yaml:17:5: tasks[3]: the conversation has no graders",
        "evalgate.yaml:20:17: tasks[4].prompt: `{turns.1.output}` is only available in a conversation's turns and graders (`turns`)",
        "evalgate.yaml:24:21: tasks[5].simulated_user: the simulated user needs a model",
        "evalgate.yaml:28:19: tasks[6].conversation: `conversation` goes with `turns` or `simulated_user`",
        // The opening messages come before the first turn.
        "evalgate.yaml:31:44: tasks[7].messages[0].content: `{turns.1.output}` refers to a turn not answered yet: the first turn has no earlier turn",
    ] {
        assert!(stderr.contains(needle), "{needle}\n---\n{stderr}");
    }
}

#[test]
fn an_acp_conversation_takes_no_window() {
    let run = Test::new()
        .suite(
            "
            evalgate: 1
            suite: t
            agents:
              coder: {acp: {command: [python3, agent.py]}}
            tasks:
              - id: chat
                turns: [{prompt: hi, grade: [{type: contains, value: x}]}]
                conversation: {window: 2}
            ",
        )
        .args(&["check"])
        .run();
    run.expect_code(2);
    let stderr = run.take_stderr();
    let needle = "evalgate.yaml:8:28: tasks[0].conversation.window: an ACP agent keeps its own history in its session";
    assert!(stderr.contains(needle), "{stderr}");
}
