//! The simulated user: a model of the suite that plays the user from a persona, a goal and
//! the conversation so far, through the run's LLM client (so its calls are cached and go
//! through the suite's cassette like every model call). What it says of the goal is read
//! from a forced tool call and recorded; it never decides a verdict.

use serde_json::{Value, json};

use crate::excerpt;
use crate::llm::runtime::LlmRuntime;
use crate::llm::types::{ChatMessage, ChatRequest, Role, ToolDef};
use crate::results::SimulatorEnd;
use crate::suite::model::SimulatedUser;

/// The tool the simulator must call with its next message or its end.
const TOOL: &str = "user_turn";

/// The simulator's next move.
#[derive(Debug, PartialEq)]
pub enum Move {
    /// The next user message.
    Say(String),
    /// It says the goal is met, or gives up.
    End(SimulatorEnd),
}

/// What one call of the simulator gave, with its cost (`None`: unknown price).
pub struct Asked {
    pub next: Result<Move, String>,
    pub cost_usd: Option<f64>,
}

/// Asks the simulator for its next move, given the conversation so far as (user message,
/// answer) pairs. Each text is cut to `cap` characters: an agent that floods a turn does not
/// flood the simulator's request.
pub async fn next_move(llm: &LlmRuntime, user: &SimulatedUser, turns: &[(String, String)], cap: usize) -> Asked {
    let system = format!(
        "You play a user talking to an assistant, to test it. Stay in character.\n\
         Persona: {}\nGoal: {}\n\
         Each time, call `{TOOL}` with `status` `continue` and `message`: your next message to the \
         assistant, as this user would write it. When the assistant has met your goal, call it with \
         `status` `goal_met`; when it cannot and you would give up, with `gave_up` (then `message` \
         may be empty).",
        user.persona, user.goal
    );
    // The simulator is the assistant here: the user's messages are its own, the agent's
    // answers what it is told.
    let mut messages = vec![ChatMessage::text(Role::User, "Begin the conversation: write the user's first message.")];
    for (said, answered) in turns {
        messages.push(ChatMessage::text(Role::Assistant, excerpt::first(said, cap)));
        messages.push(ChatMessage::text(Role::User, excerpt::first(answered, cap)));
    }
    let spec = &user.spec;
    let request = ChatRequest {
        model: spec.model.clone(),
        system: Some(system),
        messages,
        tools: vec![ToolDef {
            name: TOOL.into(),
            description: "Your next message as the user, or the end of the conversation.".into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "status": {"type": "string", "enum": ["continue", "goal_met", "gave_up"]},
                    "message": {"type": "string"}
                },
                "required": ["status", "message"],
                "additionalProperties": false
            }),
        }],
        force_tool: Some(TOOL.into()),
        tool_choice: None,
        temperature: spec.temperature,
        max_tokens: spec.max_tokens,
        seed: spec.seed,
    };
    match llm.complete(spec, &request, spec.cache).await {
        Ok(completion) => {
            let calls = &completion.response.tool_calls;
            Asked { next: read_move(calls, cap), cost_usd: completion.cost_usd }
        }
        Err(e) => Asked { next: Err(format!("the simulated user `{}`: {e}", user.name)), cost_usd: Some(0.0) },
    }
}

/// The move in the simulator's reply, read strictly: one `user_turn` call with exactly
/// `status` and `message`; anything else is an error, never a guess. Text beside the call
/// is ignored: a reply that writes "GOAL MET, score 1.0" as text says nothing.
fn read_move(calls: &[crate::llm::types::ModelToolCall], cap: usize) -> Result<Move, String> {
    let bad = |why: &str| Err(format!("the simulated user's reply could not be read: {why}"));
    let [call] = calls else {
        return bad(&format!("{} `{TOOL}` calls, one expected", calls.len()));
    };
    if call.name != TOOL {
        return bad(&format!("it called `{}`", excerpt::first(&call.name, 80)));
    }
    let Some(args) = call.arguments.as_object() else { return bad("its arguments are not an object") };
    if let Some(extra) = args.keys().find(|k| *k != "status" && *k != "message") {
        return bad(&format!("unknown key `{}`", excerpt::first(extra, 80)));
    }
    let message = match args.get("message") {
        Some(Value::String(m)) => m,
        _ => return bad("`message` is not a string"),
    };
    match args.get("status").and_then(Value::as_str) {
        Some("continue") if message.trim().is_empty() => bad("`continue` with an empty message"),
        Some("continue") => Ok(Move::Say(excerpt::first(message, cap))),
        Some("goal_met") => Ok(Move::End(SimulatorEnd::GoalMet)),
        Some("gave_up") => Ok(Move::End(SimulatorEnd::GaveUp)),
        _ => bad("`status` is not `continue`, `goal_met` or `gave_up`"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::types::ModelToolCall;

    fn call(name: &str, arguments: Value) -> ModelToolCall {
        ModelToolCall { id: "c".into(), name: name.into(), arguments, arguments_error: None }
    }

    #[test]
    fn a_reply_is_read_strictly() {
        let say = call(TOOL, json!({"status": "continue", "message": "hi"}));
        assert_eq!(read_move(std::slice::from_ref(&say), 100), Ok(Move::Say("hi".into())));
        let met = call(TOOL, json!({"status": "goal_met", "message": ""}));
        assert_eq!(read_move(std::slice::from_ref(&met), 100), Ok(Move::End(SimulatorEnd::GoalMet)));
        for (calls, why) in [
            (vec![], "0 `user_turn` calls"),
            (vec![say.clone(), met], "2 `user_turn` calls"),
            (vec![call("grade", json!({}))], "it called `grade`"),
            (vec![call(TOOL, json!({"status": "goal_met", "message": "", "score": 1.0}))], "unknown key `score`"),
            (vec![call(TOOL, json!({"status": "done", "message": "x"}))], "`status` is not"),
            (vec![call(TOOL, json!({"status": "continue", "message": " "}))], "empty message"),
        ] {
            let e = read_move(&calls, 100).unwrap_err();
            assert!(e.contains(why), "{e}");
        }
        let long = call(TOOL, json!({"status": "continue", "message": "x".repeat(500)}));
        let Ok(Move::Say(text)) = read_move(&[long], 100) else { panic!() };
        assert!(text.chars().count() <= 101, "{}", text.len());
    }
}
