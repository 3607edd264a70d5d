//! AgentV `mode: conversation` files through the binary: converted to native turns that
//! load, and what AgentV would ignore or misread refused at its line. Their verdicts are
//! compared with AgentV's own in agentv_diff.rs (tests/fixtures/agentv-diff/conversation*).

use serde_json::Value;

use crate::common::Test;

/// `evalgate convert` of an eval file with this text.
#[track_caller]
fn convert(eval: &str) -> crate::common::Run {
    Test::new().file("e.eval.yaml", eval).args(&["convert", "e.eval.yaml"]).run()
}

#[test]
fn a_conversation_converts_to_turns_that_load_with_agentv_s_rule() {
    let run = convert(
        "
        tests:
          - id: chat
            mode: conversation
            aggregation: max
            on_turn_failure: stop
            window_size: 3
            input: [{role: system, content: Be brief.}]
            turns:
              - {input: 'Hi {name}', assertions: [{type: contains, value: Hello, required: true}]}
              - {input: Bye, assertions: [Says goodbye]}
            assertions: [{type: regex, value: '^system: '}]
        ",
    );
    run.expect_code(0);
    let suite: Value = evalgate::yaml::from_str(&run.stdout).unwrap();
    let task = &suite["tasks"][0];
    assert_eq!(task["conversation"]["verdict"]["score"], "max", "{}", run.stdout);
    assert_eq!(
        (task["conversation"]["stop_on_failure"].as_bool(), task["conversation"]["window"].as_u64()),
        (Some(true), Some(6))
    );
    assert_eq!(task["turns"][0]["prompt"], "Hi {{name}}", "AgentV's braces are literal text");
    assert_eq!(task["turns"][0]["grade"][0]["required"], true);
    assert_eq!(task["turns"][1]["grade"][0]["type"], "rubric", "plain strings are one rubric judge");
    assert_eq!((task["grade"][0]["type"].as_str(), task["threshold"].as_f64()), (Some("regex"), Some(0.8)));
}

#[test]
fn what_agentv_ignores_or_misreads_in_a_conversation_is_refused_at_its_line() {
    let run = convert(
        "
        tests:
          - id: chat
            mode: conversation
            input: hi
            turns:
              - input: one
                assert: [Greets]
              - input: two
                assertions: [{type: rubrics, criteria: [x]}, {type: code-grader, command: ./g.py}]
        ",
    );
    run.expect_code(2);
    for (at, what) in [
        ("e.eval.yaml:7:9: /tests/0/turns/0/assert", "ignored by AgentV 4.42.4"),
        ("e.eval.yaml:9:23: /tests/0/turns/1/assertions/0/type", "`rubrics` is an unknown grader"),
        (
            "e.eval.yaml:9:55: /tests/0/turns/1/assertions/1/type",
            "a `code-grader` assertion is not supported in a conversation (in a turn: ",
        ),
    ] {
        assert!(run.stderr_has(&format!("{at}: ")) && run.stderr_has(what), "{at}: {what}\n{}", run.stderr);
    }
    let run = convert("tests:\n  - {id: a, input: hi, mode: conversation, turns: [{input: one}]}\n");
    run.expect_code(2);
    assert!(run.stderr_has("this conversation has no assertions"), "{}", run.stderr);
}
