//! The Agent Client Protocol as evalgate speaks it (protocol version 1, the published
//! schema at agentclientprotocol.com): what it sends, and what each stop reason means for a
//! trial. Written against the schema with serde_json rather than the `agent-client-protocol`
//! crate: evalgate reads a small part of it, must bound and judge every line itself, and
//! the crate (five major versions so far) brings its own connection and runtime model.

use serde_json::{Value, json};

/// The protocol version evalgate speaks; an agent that answers another is refused.
pub const PROTOCOL_VERSION: u64 = 1;

/// What `initialize` sends: files are served inside the working directory; no terminal
/// (evalgate would run the agent's commands for it: agents run their own).
pub fn initialize() -> Value {
    json!({
        "protocolVersion": PROTOCOL_VERSION,
        "clientCapabilities": {"fs": {"readTextFile": true, "writeTextFile": true}, "terminal": false},
        "clientInfo": {"name": "evalgate", "version": env!("CARGO_PKG_VERSION")},
    })
}

/// How a turn's stop reason decides the trial.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stop {
    /// `end_turn`: the agent answered; the graders decide.
    Finished,
    /// The agent's own limit or choice ended the turn without an answer: a graded fail,
    /// never retried away (`refusal`, `max_tokens`, `max_turn_requests`).
    Failed(String),
    /// No answer the agent stands behind: an error (`cancelled` evalgate did not ask for,
    /// a reason the protocol does not have).
    Error(String),
}

impl Stop {
    pub fn of(reason: &str) -> Stop {
        match reason {
            "end_turn" => Stop::Finished,
            "refusal" => Stop::Failed("the agent refused (stop reason `refusal`)".into()),
            "max_tokens" => Stop::Failed("the agent ran out of tokens (stop reason `max_tokens`)".into()),
            "max_turn_requests" => {
                Stop::Failed("the agent reached its turn limit (stop reason `max_turn_requests`)".into())
            }
            "cancelled" => Stop::Error("the agent cancelled its turn unasked (stop reason `cancelled`)".into()),
            other => Stop::Error(format!("the agent stopped for a reason the protocol does not have: {other:?}")),
        }
    }
}

/// The option of a permission request that answers `allowed` (`allow_once` before
/// `allow_always`, `reject_once` before `reject_always`), if the agent offered one.
pub fn option_for(options: &Value, allowed: bool) -> Option<(String, String)> {
    let kinds: [&str; 2] = if allowed { ["allow_once", "allow_always"] } else { ["reject_once", "reject_always"] };
    let options = options.as_array()?;
    kinds.iter().find_map(|kind| {
        let option = options.iter().find(|o| o.get("kind").and_then(Value::as_str) == Some(kind))?;
        Some((option.get("optionId").and_then(Value::as_str)?.to_owned(), (*kind).to_owned()))
    })
}

/// The answer to a permission request: the option chosen, or `cancelled` when none fits
/// (or the turn is being cancelled).
pub fn permission_answer(option: Option<&str>) -> Value {
    match option {
        Some(id) => json!({"outcome": {"outcome": "selected", "optionId": id}}),
        None => json!({"outcome": {"outcome": "cancelled"}}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_end_turn_finishes_a_trial() {
        assert_eq!(Stop::of("end_turn"), Stop::Finished);
        for failed in ["refusal", "max_tokens", "max_turn_requests"] {
            assert!(matches!(Stop::of(failed), Stop::Failed(why) if why.contains(failed)), "{failed}");
        }
        for error in ["cancelled", "END_TURN", ""] {
            assert!(matches!(Stop::of(error), Stop::Error(_)), "{error}");
        }
    }

    #[test]
    fn the_option_chosen_is_of_the_policys_kind() {
        let options = json!([
            {"optionId": "a", "name": "Always", "kind": "allow_always"},
            {"optionId": "o", "name": "Once", "kind": "allow_once"},
            {"optionId": "r", "name": "No", "kind": "reject_once"},
        ]);
        assert_eq!(option_for(&options, true), Some(("o".into(), "allow_once".into())));
        assert_eq!(option_for(&options, false), Some(("r".into(), "reject_once".into())));
        assert_eq!(option_for(&json!([{"optionId": "a", "kind": "allow_always"}]), false), None);
    }
}
