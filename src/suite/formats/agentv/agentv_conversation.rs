//! AgentV's `mode: conversation` tests (`turns`, `aggregation`, `on_turn_failure`,
//! `window_size`) as native conversations, graded as AgentV 4.42.4's `runConversationMode`
//! grades them: each turn by its own assertions (1 without any), the test by the mean, least
//! or greatest of the turn scores and of its own assertions' score on the whole transcript.

use serde_json::{Value, json};

use super::super::native_text::literal;
use super::assertions::Converter;

/// The test keys only a conversation has.
const CONVERSATION_KEYS: [&str; 4] = ["turns", "aggregation", "on_turn_failure", "window_size"];

/// The keys AgentV 4.42.4 reads of a turn (`parseTurns`); it ignores any other.
const TURN_KEYS: [&str; 3] = ["input", "expected_output", "assertions"];

/// The assertion types a conversation converts. AgentV runs a turn's assertions as written
/// (unparsed) and its whole-conversation ones on the transcript alone, without the answer's
/// messages, tool calls or the history as a code grader's `input`: only assertions that read
/// the text (and the judge) grade the same there.
const KINDS: [&str; 13] = [
    "contains",
    "icontains",
    "contains-any",
    "icontains-any",
    "contains-all",
    "icontains-all",
    "starts-with",
    "ends-with",
    "equals",
    "regex",
    "is-json",
    "llm-grader",
    "rubrics",
];

/// Whether the test `t` is (or tries to be) a conversation.
pub(super) fn is_conversation(t: &Value) -> bool {
    t.get("mode").is_some() || CONVERSATION_KEYS.iter().any(|k| t.get(*k).is_some())
}

/// The conversation keys of the task for test `t` (at `at`): `turns`, each with its graders,
/// and `conversation` (the verdict rule, the stop and the window). The test's own
/// assertions, the whole-conversation graders, are the caller's (`grade`).
pub(super) fn conversation(t: &Value, at: &str, criteria: Option<&str>, threshold: f64, cv: &mut Converter) -> Value {
    let mut out = json!({});
    if t.get("mode").and_then(Value::as_str) != Some("conversation") {
        let (key, message) = match t.get("mode") {
            Some(_) => ("mode", "`mode` is `conversation` (AgentV 4.42.4 knows no other mode)"),
            None => {
                let key = CONVERSATION_KEYS.iter().find(|k| t.get(**k).is_some()).copied().unwrap_or("turns");
                (key, "this key requires `mode: conversation`")
            }
        };
        cv.problems.push((format!("{at}/{key}"), message.into()));
        return out;
    }
    if t.get("expected_output").is_some() {
        cv.problems.push((
            format!("{at}/expected_output"),
            "a conversation has no test-level `expected_output` (AgentV: give each turn its own)".into(),
        ));
    }
    for (key, list) in ["assertions", "assert"].iter().filter_map(|k| Some((k, t.get(*k)?.as_array()?))) {
        kinds(list, &format!("{at}/{key}"), false, cv);
    }
    let Some(turns) = t.get("turns").and_then(Value::as_array).filter(|l| !l.is_empty()) else {
        cv.problems.push((format!("{at}/turns"), "`mode: conversation` requires a non-empty list of `turns`".into()));
        return out;
    };
    out["turns"] = Value::Array(
        turns
            .iter()
            .enumerate()
            .map(|(i, turn)| self::turn(turn, &format!("{at}/turns/{i}"), criteria, threshold, cv))
            .collect(),
    );
    // AgentV grades the test's own assertions on the transcript.
    let mut rule = json!({"verdict": {"score": "mean"}, "output": "transcript"});
    match t.get("aggregation") {
        None => {}
        Some(Value::String(a)) if matches!(a.as_str(), "mean" | "min" | "max") => rule["verdict"]["score"] = json!(a),
        Some(_) => cv.problems.push((format!("{at}/aggregation"), "`aggregation` is `mean`, `min` or `max`".into())),
    }
    match t.get("on_turn_failure").map(Value::as_str) {
        None | Some(Some("continue")) => {}
        Some(Some("stop")) => rule["stop_on_failure"] = json!(true),
        Some(_) => {
            cv.problems.push((format!("{at}/on_turn_failure"), "`on_turn_failure` is `continue` or `stop`".into()))
        }
    }
    match t.get("window_size") {
        None => {}
        // AgentV keeps the last `window_size` exchanges: a user message and its answer each.
        Some(w) => match w.as_u64().filter(|n| *n >= 1) {
            Some(n) => rule["window"] = json!(2 * n),
            None => cv
                .problems
                .push((format!("{at}/window_size"), "`window_size` is a whole number of turns, 1 or more".into())),
        },
    }
    out["conversation"] = rule;
    out
}

/// Refuses a converted conversation `task` (of the test at `at`) with no grader anywhere:
/// AgentV scores each of its turns 1 and passes it whatever the agent answers.
pub(super) fn refuse_ungraded(task: &Value, at: &str, cv: &mut Converter) {
    let graded = |v: &Value| v.get("grade").and_then(Value::as_array).is_some_and(|g| !g.is_empty());
    let turns = task.get("turns").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    if !turns.is_empty() && !graded(task) && !turns.iter().any(graded) {
        cv.problems.push((
            format!("{at}/turns"),
            "this conversation has no assertions: AgentV 4.42.4 scores each turn 1 and passes it whatever the agent answers; give a turn `assertions`".into(),
        ));
    }
}

/// One turn: its user message (a non-string input is its JSON, as AgentV sends it), and its
/// graders — its assertions, else with `expected_output` alone AgentV's implicit judge on the
/// test's `criteria` (shown no reference answer: AgentV keeps the turn's `expected_output`
/// from its judge), else none (the turn scores 1).
fn turn(turn: &Value, at: &str, criteria: Option<&str>, threshold: f64, cv: &mut Converter) -> Value {
    let Some(fields) = turn.as_object() else {
        cv.problems.push((at.to_owned(), "a turn is an object with `input`".into()));
        return json!({});
    };
    for key in fields.keys().filter(|k| !TURN_KEYS.contains(&k.as_str())) {
        cv.problems.push((
            format!("{at}/{key}"),
            format!("`{key}` on a turn is ignored by AgentV 4.42.4, which reads only `input`, `expected_output` and `assertions`"),
        ));
    }
    let prompt = match turn.get("input") {
        Some(Value::String(s)) if !s.trim().is_empty() => s.clone(),
        Some(v @ (Value::Array(_) | Value::Object(_))) if v.as_array().is_none_or(|l| !l.is_empty()) => v.to_string(),
        _ => {
            cv.problems.push((format!("{at}/input"), "each turn needs a non-empty `input`".into()));
            String::new()
        }
    };
    let mut native = json!({"prompt": literal(&prompt), "threshold": threshold});
    let grade = match turn.get("assertions") {
        Some(Value::Array(list)) if !list.is_empty() => {
            kinds(list, &format!("{at}/assertions"), true, cv);
            cv.assertions(list, &format!("{at}/assertions"), criteria)
        }
        Some(Value::Array(_)) | None if turn.get("expected_output").is_some() => {
            vec![cv.freeform(criteria.unwrap_or_default(), None, "criteria")]
        }
        Some(Value::Array(_)) | None => Vec::new(),
        Some(_) => {
            cv.problems.push((format!("{at}/assertions"), "expected a list of assertions".into()));
            Vec::new()
        }
    };
    if !grade.is_empty() {
        native["grade"] = Value::Array(grade);
    }
    native
}

/// Refuses the assertions of `list` a conversation does not grade as AgentV does. A turn's
/// are run as written (`in_turn`): AgentV's parser, which reads `contains_all` as
/// `contains-all` and knows `rubrics`, never sees them.
pub(super) fn kinds(list: &[Value], at: &str, in_turn: bool, cv: &mut Converter) {
    let allowed: Vec<&str> = KINDS.iter().copied().filter(|k| !in_turn || *k != "rubrics").collect();
    for (i, a) in list.iter().enumerate() {
        let Some(kind) = a.get("type").and_then(Value::as_str) else { continue };
        let parsed = kind.replace('_', "-");
        let message = if allowed.contains(&if in_turn { kind } else { parsed.as_str() }) {
            continue;
        } else if in_turn && KINDS.contains(&parsed.as_str()) {
            let fix =
                if kind == "rubrics" { "; write plain strings or an `llm-grader`" } else { ": write it with hyphens" };
            format!(
                "AgentV 4.42.4 runs a turn's assertions unparsed, where `{kind}` is an unknown grader that scores 0{fix}"
            )
        } else {
            let there = if in_turn { "in a turn" } else { "for the whole conversation" };
            format!(
                "a `{kind}` assertion is not supported in a conversation ({there}: {}, and plain strings)",
                allowed.join(", ")
            )
        };
        cv.problems.push((format!("{at}/{i}/type"), message));
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::super::super::{ConvertCx, ForeignFormat};
    use super::super::AgentV;

    fn convert(tests: Value) -> Result<Value, Vec<(String, String)>> {
        let file = std::env::temp_dir().join("conversation.eval.yaml");
        let cx = ConvertCx { file: &file, rel_dir: "".into(), agent: Some("bot"), model_agent: false, server: None };
        AgentV.convert(&json!({"tests": tests}), &cx).map(|c| c.suite["tasks"][0].clone())
    }

    fn problems(tests: Value) -> Vec<String> {
        convert(tests).unwrap_err().into_iter().map(|(at, message)| format!("{at}: {message}")).collect()
    }

    #[test]
    fn a_conversation_becomes_turns_and_agentv_s_score_rule() {
        let task = convert(json!([{
            "id": "chat", "mode": "conversation", "aggregation": "min", "on_turn_failure": "stop", "window_size": 2,
            "criteria": "Polite", "execution": {"threshold": 0.6},
            "input": [{"role": "system", "content": "Be brief {x}."}],
            "turns": [
                {"input": "Hi {name}", "assertions": [{"type": "contains", "value": "Hello"}]},
                {"input": {"role": "user", "content": "structured"}, "expected_output": "ref"},
                {"input": "Bye"},
            ],
            "assertions": [{"type": "regex", "value": "^system: "}],
        }]))
        .unwrap();
        // The test's input opens the conversation.
        assert!(task.get("prompt").is_none());
        assert_eq!(task["messages"], json!([{"role": "system", "content": "Be brief {{x}}."}]));
        assert_eq!(
            task["conversation"],
            json!({"verdict": {"score": "min"}, "output": "transcript", "stop_on_failure": true, "window": 4})
        );
        let turns = task["turns"].as_array().unwrap();
        assert_eq!(turns[0]["prompt"], "Hi {{name}}");
        assert_eq!(turns[0]["threshold"], 0.6);
        assert_eq!(turns[0]["grade"][0]["type"], "contains");
        // A structured input is sent as its JSON, as AgentV sends it.
        assert_eq!(turns[1]["prompt"], r#"{{"role":"user","content":"structured"}}"#);
        // `expected_output` alone: AgentV's judge on the test's criteria, with no reference.
        assert_eq!(turns[1]["grade"][0]["criteria"][0]["criterion"], "Polite");
        assert!(turns[1]["grade"][0].get("reference").is_none());
        assert!(turns[2].get("grade").is_none());
        // The test's assertions grade the whole transcript; no implicit judge is added.
        assert_eq!(task["grade"].as_array().unwrap().len(), 1);
        assert_eq!(task["grade"][0]["type"], "regex");
    }

    #[test]
    fn a_conversation_without_assertions_has_no_whole_conversation_grader() {
        let task = convert(json!([{"id": "c", "mode": "conversation", "criteria": "x", "input": "hi",
            "turns": [{"input": "a", "assertions": [{"type": "contains", "value": "a"}]}]}]));
        assert_eq!(task.unwrap()["grade"], json!([]));
        // Nothing graded at all: AgentV passes it whatever the agent says.
        assert_eq!(
            problems(
                json!([{"id": "c", "mode": "conversation", "criteria": "x", "input": "hi", "turns": [{"input": "a"}]}])
            ),
            [
                "/tests/0/turns: this conversation has no assertions: AgentV 4.42.4 scores each turn 1 and passes it whatever the agent answers; give a turn `assertions`"
            ]
        );
    }

    #[test]
    fn what_agentv_would_ignore_or_misread_is_refused_at_its_key() {
        let conv = |extra: Value| {
            let mut t = json!({"id": "c", "mode": "conversation", "input": "hi", "turns": [{"input": "a", "expected_output": "b"}]});
            t.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
            problems(json!([t]))
        };
        assert_eq!(
            problems(json!([{"id": "c", "input": "hi", "turns": [{"input": "a"}]}])),
            ["/tests/0/turns: this key requires `mode: conversation`"]
        );
        assert_eq!(
            problems(json!([{"id": "c", "input": "hi", "window_size": 2, "criteria": "x"}])),
            ["/tests/0/window_size: this key requires `mode: conversation`"]
        );
        assert_eq!(
            conv(json!({"mode": "chat"})),
            ["/tests/0/mode: `mode` is `conversation` (AgentV 4.42.4 knows no other mode)"]
        );
        assert_eq!(
            conv(json!({"turns": []})),
            ["/tests/0/turns: `mode: conversation` requires a non-empty list of `turns`"]
        );
        assert_eq!(
            conv(json!({"aggregation": "median"})),
            ["/tests/0/aggregation: `aggregation` is `mean`, `min` or `max`"]
        );
        assert_eq!(
            conv(json!({"on_turn_failure": "halt"})),
            ["/tests/0/on_turn_failure: `on_turn_failure` is `continue` or `stop`"]
        );
        assert_eq!(
            conv(json!({"window_size": 0})),
            ["/tests/0/window_size: `window_size` is a whole number of turns, 1 or more"]
        );
        assert_eq!(
            conv(json!({"expected_output": "x"})),
            [
                "/tests/0/expected_output: a conversation has no test-level `expected_output` (AgentV: give each turn its own)"
            ]
        );
        assert_eq!(
            conv(json!({"turns": [{"input": "a", "assert": ["polite"]}, {"input": "b", "expected_output": "c"}]})),
            [
                "/tests/0/turns/0/assert: `assert` on a turn is ignored by AgentV 4.42.4, which reads only `input`, `expected_output` and `assertions`"
            ]
        );
        assert_eq!(
            conv(json!({"turns": [{"input": " ", "expected_output": "b"}]})),
            ["/tests/0/turns/0/input: each turn needs a non-empty `input`"]
        );
        assert_eq!(
            conv(json!({"turns": [{"input": "a", "assertions": [{"type": "contains_all", "value": ["a"]}]}]})),
            [
                "/tests/0/turns/0/assertions/0/type: AgentV 4.42.4 runs a turn's assertions unparsed, where `contains_all` is an unknown grader that scores 0: write it with hyphens"
            ]
        );
        let code = conv(json!({"assertions": [{"type": "code-grader", "command": "x"}]}));
        assert!(
            code[0].starts_with(
                "/tests/0/assertions/0/type: a `code-grader` assertion is not supported in a conversation"
            ),
            "{code:?}"
        );
        // A test without `input` is skipped by AgentV: refused here.
        assert_eq!(
            problems(json!([{"id": "c", "mode": "conversation", "turns": [{"input": "a", "expected_output": "b"}]}])),
            ["/tests/0/input: a test needs `input`"]
        );
    }
}
