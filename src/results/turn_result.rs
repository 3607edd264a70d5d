//! A conversation's turns in `results.json`: what each turn asked and answered, its
//! graders and verdict, and what the simulated user said of the goal.

use serde::{Deserialize, Serialize};

use super::{GraderResult, Status};
use crate::trace::ToolCall;

/// One turn of a conversation trial.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TurnResult {
    /// The turn's number, from 1.
    pub turn: u32,
    /// Who wrote the user's message: `script` (the task's `turns`) or `simulated_user`.
    pub by: TurnAuthor,
    /// `passed` or `failed` by the turn's graders (a turn without graders passes),
    /// `error`, or `skipped`: not run, after a failed turn with `stop_on_failure` (a fail).
    pub status: Status,
    #[schemars(range(min = 0.0, max = 1.0))]
    pub score: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The user's message, rendered, cut to `OUTPUT_EXCERPT` characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// The agent's answer, cut to `OUTPUT_EXCERPT` characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub output_truncated: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_ms: Option<u64>,
    /// The tool calls of this turn.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// This turn's graders.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub graders: Vec<GraderResult>,
}

/// Who wrote a turn's user message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TurnAuthor {
    Script,
    SimulatedUser,
}

/// How a simulated user ended the conversation, in its own word: recorded, never a verdict.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SimulatedUserRecord {
    /// The model that played the user (the agent's name, or `judge`).
    pub model: String,
    /// `goal_met` or `gave_up` (its word), or `max_turns` (it was stopped).
    pub ended: SimulatorEnd,
}

/// How a simulated user's part ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SimulatorEnd {
    GoalMet,
    GaveUp,
    MaxTurns,
    /// The conversation ended before the simulator did (a failed turn, an agent's error).
    Stopped,
}
