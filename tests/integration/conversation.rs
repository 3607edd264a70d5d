//! Conversations through the binary: scripted turns against the LLM stand-in and a command
//! agent, the history each kind carries, per-turn graders, `stop_on_failure`, every verdict
//! rule, and a flooding agent.

use serde_json::{Value, json};

use crate::common::server::{Server, answer};
use crate::common::{Test, indent, unindent};
use crate::mcp::mcp_suite;
use crate::scenario::body;

const KEY: &str = "sk-test-key";

/// A suite with the model agent `bot` (and the everything server) on `server`.
pub(crate) fn model_suite(server: &Server, extra: &str, tasks: &str) -> String {
    let header = "
        evalgate: 1
        suite: t
        mcp_servers:
          everything: {command: [<everything>, stdio]}
        agents:
          bot: {provider: openai, model: gpt-4o-mini, base_url: '<url>/v1', api_key_env: EVALGATE_TEST_KEY, mcp: [everything], max_turns: 3}
        ";
    let yaml = mcp_suite(header) + &unindent(extra) + "tasks:\n" + &indent(tasks, 2);
    yaml.replace("<url>", &server.url())
}

#[track_caller]
pub(crate) fn run(yaml: &str) -> crate::common::Run {
    Test::new().write("evalgate.yaml", yaml).env("EVALGATE_TEST_KEY", KEY).args(&["run", "-j", "1"]).run()
}

/// The user's texts in a request (what `role: user` messages with text content say).
fn said(b: &Value) -> Vec<String> {
    b["messages"].as_array().unwrap().iter().filter(|m| m["role"] == "user").map(|m| m["content"].to_string()).collect()
}

/// The n-th request holds the n-1 earlier turns exactly, tool calls and their results
/// included; `{turns.1.output}` is the first turn's answer; each turn has its graders.
#[test]
fn a_model_agent_is_given_every_earlier_turn_exactly() {
    let server = Server::start(|r| {
        let b = body(r);
        let messages = b["messages"].as_array().unwrap();
        let last = messages.last().unwrap();
        match (last["role"].as_str().unwrap(), last["content"].as_str().unwrap_or_default()) {
            // The first turn calls a tool, then answers with its result.
            ("user", "hello") => (200, answer(None, &[("everything__echo", r#"{"message": "ping"}"#)])),
            ("tool", result) => (200, answer(Some(&format!("first: {result}")), &[])),
            ("user", _) => (200, answer(Some(&format!("answer {}", messages.len())), &[])),
            other => panic!("{other:?}"),
        }
    });
    let tasks = "
        - id: chat
          level: scenario
          turns:
            - prompt: hello
              grade: [{type: contains, value: 'first: Echo: ping'}, {type: tool_called, tool: echo}]
            - prompt: 'you said {turns.1.output}'
              grade: [{type: contains, value: 'answer 5'}]
            - prompt: third
              grade: [{type: contains, value: 'nope'}]
          conversation: {verdict: {share: 0.6}}
          grade: [{type: tool_called, tool: echo}]
        - id: window
          turns:
            - {prompt: a}
            - {prompt: b}
            - prompt: c
              grade: [{type: contains, value: 'answer 3'}]
          conversation: {window: 3}
        ";
    let run = run(&model_suite(&server, "", tasks));
    run.expect_code(0);
    let requests: Vec<Value> = server.received().iter().map(body).collect();
    let chat: Vec<&Value> = requests.iter().filter(|b| said(b)[0] == "\"hello\"").collect();
    assert_eq!(chat.len(), 4, "two for the tool loop of turn 1, one each for turns 2 and 3");
    let turn1 = &chat[1]["messages"];
    assert_eq!(turn1[1]["tool_calls"][0]["function"]["name"], "everything__echo");
    assert_eq!(turn1[2]["role"], "tool");
    // Turn 2's request is turn 1 exactly (its tool call and result), its answer, then turn 2.
    let turn2 = chat[2]["messages"].as_array().unwrap();
    assert_eq!(&turn2[..3], &turn1.as_array().unwrap()[..]);
    assert_eq!(turn2[3], json!({"role": "assistant", "content": "first: Echo: ping"}));
    assert_eq!(turn2[4], json!({"role": "user", "content": "you said first: Echo: ping"}));
    assert_eq!(turn2.len(), 5);
    let turn3 = chat[3]["messages"].as_array().unwrap();
    assert_eq!(&turn3[..5], &turn2[..]);
    assert_eq!(turn3[5], json!({"role": "assistant", "content": "answer 5"}));
    assert_eq!(turn3[6], json!({"role": "user", "content": "third"}));

    let trial = &run.task("chat")["trials"][0];
    let turns = trial["turns"].as_array().unwrap();
    let statuses: Vec<&str> = turns.iter().map(|t| t["status"].as_str().unwrap()).collect();
    assert_eq!(statuses, ["passed", "passed", "failed"]);
    assert_eq!(turns[0]["tool_calls"][0]["name"], "echo");
    assert_eq!(turns[1]["prompt"], "you said first: Echo: ping");
    assert_eq!(turns[2]["graders"][0]["status"], "failed");
    // 2 of 3 turns passed (a share of 0.6 is enough) and the whole-conversation grader passed.
    assert_eq!(run.task("chat")["status"], "passed");
    assert_eq!(trial["graders"][0]["type"], "tool_called");
    assert_eq!(trial["output"], "answer 7");

    // `window: 3`: the third turn is given the last three messages, from a user's message.
    let window: Vec<&Value> = requests.iter().filter(|b| said(b).last().unwrap() == "\"c\"").collect();
    assert_eq!(window[0]["messages"].as_array().unwrap().len(), 3);
    assert_eq!(window[0]["messages"][0], json!({"role": "user", "content": "b"}));
}

/// A command agent that answers `echo: PROMPT [N earlier messages]`, and `fail` to a
/// prompt holding `fail`.
const CONVERSING_AGENT: &str = r#"#!/bin/sh
n=0
if [ -n "$EVALGATE_CONVERSATION" ]; then n=$(grep -o '"role"' "$EVALGATE_CONVERSATION" | wc -l); fi
case "$1" in
  *flood*) head -c 200000 /dev/zero | tr '\0' 'x'; exit 0;;
esac
printf 'echo: %s [%s earlier]\n' "$1" "$n"
if [ -n "$EVALGATE_CONVERSATION" ]; then cat "$EVALGATE_CONVERSATION" > "last-history.json"; fi
"#;

fn command_suite(tasks: &str) -> String {
    let header = "
        evalgate: 1
        suite: t
        agents:
          bot: {command: [./agent.sh, '{prompt}']}
        ";
    unindent(header) + "tasks:\n" + &indent(tasks, 2)
}

pub(crate) fn command_run(tasks: &str) -> crate::common::Run {
    Test::new().write("agent.sh", CONVERSING_AGENT).write("evalgate.yaml", &command_suite(tasks)).args(&["run"]).run()
}

/// The protocol: the command runs once a turn with the turn's prompt as `{prompt}` and the
/// earlier turns as JSON in the file `$EVALGATE_CONVERSATION` names.
#[test]
fn a_command_agent_gets_the_earlier_turns_in_a_file() {
    let run = command_run(
        "
        - id: chat
          turns:
            - prompt: one
              grade: [{type: contains, value: 'echo: one [0 earlier]'}]
            - prompt: 'two after {turns.1.output}'
              grade: [{type: contains, value: '[2 earlier]'}]
          grade:
            - {type: contains, value: 'two after echo: one'}
            - {type: command, run: 'cat > whole.json'}
        ",
    );
    run.expect_code(0);
    // A whole-conversation grader reads the conversation: each turn, its answer and calls.
    let whole: Value = serde_json::from_str(&run.read("whole.json")).unwrap();
    let turns = &whole["conversation"]["turns"];
    assert_eq!(turns[0], json!({"turn": 1, "prompt": "one", "output": "echo: one [0 earlier]\n", "tool_calls": []}));
    assert_eq!(turns[1]["prompt"], "two after echo: one [0 earlier]\n");
    assert_eq!(whole["output"], "echo: two after echo: one [0 earlier]\n [2 earlier]\n");
    let history: Value = serde_json::from_str(&run.read("last-history.json")).unwrap();
    assert_eq!(
        history,
        json!([{"role": "user", "content": "one"}, {"role": "assistant", "content": "echo: one [0 earlier]\n"}])
    );
    let turns = &run.task("chat")["trials"][0]["turns"];
    assert_eq!(turns[1]["output"], "echo: two after echo: one [0 earlier]\n [2 earlier]\n");
}

/// `stop_on_failure`: the turns after a failed one do not run, and fail.
#[test]
fn a_failed_turn_stops_the_conversation_when_asked() {
    let tasks = "
        - id: <id>
          turns:
            - {prompt: one, grade: [{type: contains, value: one}]}
            - {prompt: two, grade: [{type: contains, value: nope}]}
            - {prompt: three, grade: [{type: contains, value: three}]}
          conversation: {stop_on_failure: <stop>, verdict: final}
        ";
    let both = ["stops", "goes-on"]
        .map(|id| unindent(tasks).replace("<id>", id).replace("<stop>", if id == "stops" { "true" } else { "false" }))
        .concat();
    let run = command_run(&both);
    run.expect_code(1);
    let statuses = |id: &str| -> Vec<String> {
        run.task(id)["trials"][0]["turns"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["status"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(statuses("stops"), ["passed", "failed", "skipped"]);
    assert_eq!(run.task("stops")["status"], "failed");
    assert_eq!(run.task("stops")["reason"], "the final turn 2: `contains` failed: output does not contain \"nope\"");
    // Without it, the third turn runs and passes, and `final` reads it.
    assert_eq!(statuses("goes-on"), ["passed", "failed", "passed"]);
    assert_eq!(run.task("goes-on")["status"], "passed");
}

/// Each verdict rule on the same turns (pass, fail, pass) and a whole-conversation grader.
#[test]
fn each_verdict_rule_decides_as_documented() {
    let task = "
        - id: <id>
          turns:
            - {prompt: one, grade: [{type: contains, value: one}]}
            - {prompt: two, grade: [{type: contains, value: nope}]}
            - {prompt: three, grade: [{type: contains, value: three}]}
          conversation: {verdict: <rule>}
          threshold: 0.7
          grade: [{type: contains, value: <whole>}]
        ";
    let cases = [
        ("all", "all", "three", "failed"),
        ("final", "final", "three", "passed"),
        ("final-whole-fails", "final", "zzz", "failed"),
        ("share-met", "{share: 0.6}", "three", "passed"),
        ("share-missed", "{share: 0.7}", "three", "failed"),
        ("share-whole-fails", "{share: 0.6}", "zzz", "failed"),
        // mean of 1, 0, 1 and the whole's 1: 0.75 ≥ 0.7; with the whole failing, 0.5.
        ("mean", "{score: mean}", "three", "passed"),
        ("mean-low", "{score: mean}", "zzz", "failed"),
        ("min", "{score: min}", "three", "failed"),
        ("max", "{score: max}", "zzz", "passed"),
    ];
    let tasks: String = cases
        .iter()
        .map(|(id, rule, whole, _)| {
            unindent(task).replace("<id>", id).replace("<rule>", rule).replace("<whole>", whole)
        })
        .collect();
    let run = command_run(&tasks);
    run.expect_code(1);
    for (id, _, _, status) in cases {
        assert_eq!(run.task(id)["status"], status, "{id}: {}", run.task(id)["reason"]);
    }
    assert_eq!(run.task("mean")["score"], 0.75);
    assert_eq!(run.task("share-missed")["reason"], "2/3 turns passed, a share of 0.7 required");
}

/// An agent that floods a turn is cut as every output is, in the turn and in the trial.
#[test]
fn a_flooding_turn_is_bounded() {
    let run = command_run(
        "
        - id: flood
          turns:
            - {prompt: flood, grade: [{type: contains, value: xxx}]}
            - {prompt: after, grade: [{type: contains, value: '[2 earlier]'}]}
        ",
    );
    run.expect_code(0);
    let turn = &run.task("flood")["trials"][0]["turns"][0];
    assert_eq!(turn["output_truncated"], true);
    assert!(turn["output"].as_str().unwrap().len() <= 16 * 1024 + 8);
    assert!(run.read("evalgate-out/results.json").len() < 200_000);
}

/// An ACP agent holds the conversation in one session: a `session/prompt` a turn, each
/// turn's answer and tool calls its own, the session's trace the trial's.
#[test]
fn an_acp_agent_converses_in_one_session() {
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
                turns:
                  - prompt: hello
                    grade: [{type: equals, value: 'turn 1 of session 1 heard: hello'}, {type: tool_called, tool: Note}]
                  - prompt: 'again, after {turns.1.output}'
                    grade: [{type: contains, value: 'turn 2 of session 1 heard: hello | again, after turn 1'}]
                grade: [{type: tool_sequence, tools: [Note, Note], order: exact}]
            ",
    );
    let run = test.args(&["run"]).run();
    run.expect_code(0);
    let trial = &run.task("chat")["trials"][0];
    let turns = trial["turns"].as_array().unwrap();
    assert_eq!(turns.len(), 2);
    assert_eq!(turns[1]["tool_calls"].as_array().unwrap().len(), 1, "each turn has its own calls");
    assert_eq!(turns[1]["tool_calls"][0]["arguments"]["turn"], 2);
    assert_eq!(trial["usage"]["input_tokens"], 20, "the session's usage adds its turns'");
    assert_eq!(trial["session"]["stop_reason"], "end_turn");
}

/// The HTML report shows the conversation as a transcript, each turn with its graders, and
/// the agent's text escaped, never markup.
#[test]
fn the_report_shows_the_transcript_with_hostile_text_escaped() {
    let run = command_run(
        "
        - id: chat
          turns:
            - prompt: '<img src=x onerror=alert(1)>'
              grade: [{type: contains, value: echo, name: said-echo}]
            - prompt: '</ol><script>alert(2)</script>'
              grade: [{type: contains, value: nope, name: never}]
        ",
    );
    run.expect_code(1);
    let html = run.read("evalgate-out/report.html");
    assert!(html.contains("<h5>Conversation</h5>"));
    assert!(html.contains("<span class=\"who\">turn 2</span>"));
    assert!(html.contains("said-echo") && html.contains("never"));
    assert!(!html.contains("<img src=x") && !html.contains("<script>alert(2)"), "hostile text became markup");
    assert!(html.contains("&lt;script&gt;alert(2)&lt;&#x2f;script&gt;"));
}

/// A canary leaked in an earlier turn fails the conversation, though the whole-conversation
/// `no_leak` grader reads only the last answer.
#[test]
fn a_canary_leaked_in_any_turn_fails_the_conversation() {
    let run = command_run(
        "
        - id: leak
          turns:
            - {prompt: 'the code is CANARY-7731'}
            - {prompt: fine}
          grade: [{type: no_leak, canaries: [CANARY-7731]}]
        ",
    );
    run.expect_code(1);
    let task = run.task("leak");
    assert_eq!(task["status"], "failed");
    assert_eq!(task["reason"], "a canary of `no_leak` leaked in turn 1");
    assert_eq!(task["trials"][0]["graders"][0]["status"], "passed", "the last answer alone is clean");
}

/// Under `verdict: {score: …}` (AgentV's rule) a turn whose command exits nonzero scores 0
/// and the conversation goes on (or stops under `stop_on_failure`); under the other rules
/// it errors the trial, and a timeout errors it under every rule: unknown never passes.
#[test]
fn an_agent_failing_a_turn_scores_0_only_under_the_score_rule() {
    let agent = "#!/bin/sh\ncase \"$1\" in\n  *crash*) echo half; echo boom >&2; exit 3;;\n  *sleep*) sleep 5;;\nesac\necho \"echo: $1\"\n";
    let task = "
        - id: <id>
          timeout: 2s
          turns:
            - {prompt: one, grade: [{type: contains, value: one}]}
            - {prompt: <second>, grade: [{type: contains, value: echo}]}
            - {prompt: three, grade: [{type: contains, value: three}]}
          conversation: {verdict: <rule>, stop_on_failure: <stop>}
          threshold: 0.6
        ";
    let cases = [
        ("scored", "crash", "{score: mean}", "false"),
        ("scored-stops", "crash", "{score: mean}", "true"),
        ("all", "crash", "all", "false"),
        ("timeout", "sleep", "{score: mean}", "false"),
    ];
    let tasks: String = cases
        .iter()
        .map(|(id, second, rule, stop)| {
            unindent(task)
                .replace("<id>", id)
                .replace("<second>", second)
                .replace("<rule>", rule)
                .replace("<stop>", stop)
        })
        .collect();
    let yaml = unindent(
        "
        evalgate: 1
        suite: t
        agents:
          bot: {command: [./agent.sh, '{prompt}']}
        ",
    ) + "tasks:\n"
        + &indent(&tasks, 2);
    let run = Test::new().write("agent.sh", agent).write("evalgate.yaml", &yaml).args(&["run"]).run();
    let stderr = run.take_stderr();
    assert!(run.code == 1 || run.code == 2, "exit {}: {stderr}", run.code);
    let statuses = |id: &str| -> Vec<String> {
        let turns = run.task(id)["trials"][0]["turns"].as_array().unwrap().clone();
        turns.iter().map(|t| t["status"].as_str().unwrap().to_owned()).collect()
    };
    // 1, 0, 1: a mean of 0.67 reaches 0.6; the failed turn says why.
    assert_eq!(statuses("scored"), ["passed", "failed", "passed"]);
    assert_eq!(run.task("scored")["status"], "passed", "{}", run.task("scored")["reason"]);
    let turn = &run.task("scored")["trials"][0]["turns"][1];
    assert_eq!(turn["score"], 0.0);
    assert!(turn["reason"].as_str().unwrap().contains("boom"), "{turn}");
    assert_eq!(statuses("scored-stops"), ["passed", "failed", "skipped"]);
    assert_eq!(run.task("scored-stops")["status"], "failed");
    assert_eq!(run.task("all")["status"], "error");
    assert_eq!(run.task("timeout")["status"], "error");
    assert_eq!(statuses("timeout"), ["passed", "error"]);
}

/// A conversation in a workspace gets the checks a single prompt gets: a turn that changes a
/// protected file turns the trial into an error with its reason, and each turn's graders see
/// the workspace as that turn left it.
#[test]
fn a_conversation_in_a_workspace_is_checked_after_its_turns() {
    let test = Test::new().file(
        "evalgate.yaml",
        "
        evalgate: 1
        suite: t
        agents:
          editor:
            command: [sh, -c, 'if [ \"$1\" = edit ]; then echo changed > tests/check.sh; fi; echo ok', sh, '{prompt}']
        workspace: {template: tmpl, isolation: none, protect: ['tests/**'], keep: never}
        tasks:
          - id: quiet
            agent: editor
            turns:
              - prompt: hello
                grade: [{type: contains, value: ok}]
              - prompt: again
                grade: [{type: command, run: 'grep -qx original tests/check.sh'}]
          - id: edits
            agent: editor
            turns:
              - prompt: hello
                grade: [{type: contains, value: ok}]
              - prompt: edit
                grade: [{type: command, run: 'grep -qx changed tests/check.sh'}]
        ",
    );
    let run = test.write("tmpl/tests/check.sh", "original\n").args(&["run"]).run();
    run.expect_code(1);
    run.any_stderr();
    assert_eq!(run.task("quiet")["trials"][0]["status"], "passed", "{:#}", run.task("quiet"));
    let edits = &run.task("edits")["trials"][0];
    assert_eq!(edits["status"], "error", "{edits:#}");
    assert!(
        edits["reason"].as_str().unwrap().contains("the agent changed the protected file `tests/check.sh`"),
        "{edits:#}"
    );
    // The second turn's grader ran in the workspace the turn left.
    assert_eq!(edits["turns"][1]["status"], "passed", "{edits:#}");
}
