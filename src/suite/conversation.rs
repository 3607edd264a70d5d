//! Conversations: a task of several turns (`turns`), how its verdict comes from them
//! (`conversation`) and the model that plays the user (`simulated_user`), as written and
//! compiled ([conversations.md](../../docs/conversations.md)).

use std::num::NonZeroU32;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::agent::Agent;
use super::tasks::RawMessage;
use crate::grade::{Grader, RawGrader};
use crate::llm::spec::LlmSpec;
use crate::llm::types::MessageRole;
use crate::source::{KeyPath, ValidateCx, unknown};
use crate::template::{Scope, Template};
use crate::values::Rate;

/// One scripted turn: the user's message and the graders of the agent's answer to it.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawTurn {
    /// The user's message; may use what a task's prompt may, and `{turns.N.output}`, the
    /// answer of an earlier turn (1-based).
    pub prompt: String,
    /// Graders of this turn's answer (`{agent.output}` is this turn's answer).
    #[serde(default)]
    pub grade: Vec<RawGrader>,
    /// The turn passes when its graders' weighted score reaches this (as a task's `threshold`).
    pub threshold: Option<Rate>,
}

/// How a conversation is run and judged.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawConversation {
    /// How the task's verdict comes from its turns (default `all`).
    #[serde(default)]
    pub verdict: Verdict,
    /// A failed turn ends the conversation; the turns not run are recorded as skipped (failed).
    #[serde(default)]
    pub stop_on_failure: bool,
    /// The agent is given only the last N messages of the history (default: all of it).
    pub window: Option<NonZeroU32>,
    /// What the whole-conversation graders read as `{agent.output}`: `last`, the last
    /// answer (default), or `transcript`, every message as `ROLE: CONTENT` joined by a blank
    /// line (AgentV's conversation transcript).
    #[serde(default)]
    pub output: WholeOutput,
}

/// What the whole-conversation graders read as the output.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum WholeOutput {
    #[default]
    Last,
    Transcript,
}

impl WholeOutput {
    /// The output of the conversation that opened with `opening` and then `said` (user
    /// message, answer) a turn, as this reads it.
    pub fn of(self, opening: &[(MessageRole, String)], said: &[(String, String)]) -> String {
        match self {
            WholeOutput::Last => said.last().map(|(_, answer)| answer.clone()).unwrap_or_default(),
            WholeOutput::Transcript => transcript(opening, said),
        }
    }
}

/// Every message of a conversation, the `opening` ones first, as `ROLE: CONTENT` joined by
/// a blank line (AgentV's transcript).
pub fn transcript(opening: &[(MessageRole, String)], said: &[(String, String)]) -> String {
    let role = |r: MessageRole| match r {
        MessageRole::System => "system",
        MessageRole::User => "user",
        MessageRole::Assistant => "assistant",
    };
    opening
        .iter()
        .map(|(r, content)| format!("{}: {content}", role(*r)))
        .chain(said.iter().flat_map(|(user, answer)| [format!("user: {user}"), format!("assistant: {answer}")]))
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// `all`: every turn and the whole-conversation graders pass; `final`: the last turn run
/// and the whole-conversation graders pass; `{share: X}`: at least a share X of the turns
/// pass, and the whole-conversation graders; `{score: mean|min|max}`: the score is the
/// mean, least or most of the turns' scores with the whole-conversation graders' score as
/// one more, and the task passes when it reaches its `threshold` (default 1).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    #[default]
    All,
    Final,
    /// At least this share of the turns pass (a turn not run fails), and the whole-conversation graders.
    Share(
        /// The share of the turns that must pass, above 0 and at most 1.
        Rate,
    ),
    /// The mean, least or most of the turns' scores and the whole-conversation graders' score.
    Score(
        /// `mean`, `min` or `max`.
        Aggregation,
    ),
}

/// How turn scores are combined under `verdict: {score: …}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Aggregation {
    Mean,
    Min,
    Max,
}

/// A model that plays the user after the scripted turns (or from the start).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawSimulatedUser {
    /// A model agent of the suite (`agents`) that plays the user; default: the suite's `judge`.
    pub model: Option<String>,
    /// Who the user is.
    pub persona: String,
    /// What the user wants; the simulator says when it is met or given up. Its word is
    /// recorded, never trusted: the task's graders decide.
    pub goal: String,
    /// Most turns of the whole conversation, scripted ones included (default 6).
    pub max_turns: Option<NonZeroU32>,
}

/// A compiled conversation.
#[derive(Debug)]
pub struct Conversation {
    /// The task's `messages`: the history the first turn follows (a system prompt, an
    /// earlier exchange).
    pub opening: Vec<(MessageRole, Template)>,
    pub turns: Vec<Turn>,
    pub verdict: Verdict,
    pub stop_on_failure: bool,
    pub window: Option<NonZeroU32>,
    pub output: WholeOutput,
    pub simulated_user: Option<SimulatedUser>,
}

/// A compiled scripted turn.
#[derive(Debug)]
pub struct Turn {
    pub prompt: Template,
    pub graders: Vec<Grader>,
    pub threshold: Option<f64>,
}

/// The compiled simulated user.
#[derive(Debug)]
pub struct SimulatedUser {
    /// The name it is shown under: the agent's, or `judge`.
    pub name: String,
    pub spec: LlmSpec,
    pub persona: String,
    pub goal: String,
    pub max_turns: NonZeroU32,
}

/// Turns of a conversation with a simulated user when it sets no `max_turns`.
pub const DEFAULT_SIMULATED_TURNS: NonZeroU32 = NonZeroU32::new(6).unwrap();

/// The keys of a task that make it a conversation, as written.
pub(super) struct ConversationKeys<'a> {
    pub turns: Option<&'a [RawTurn]>,
    pub conversation: Option<&'a RawConversation>,
    pub simulated_user: Option<&'a RawSimulatedUser>,
    /// The task also has `prompt`.
    pub prompt: bool,
    /// The task's `messages`: with `turns`, the history the first turn follows.
    pub messages: Option<&'a [RawMessage]>,
    /// The task's own `grade` list is not empty.
    pub whole_graders: bool,
}

/// Compiles a task's `turns`, `conversation` and `simulated_user`; `None` when it has none
/// of them (or they are wrong: then each problem is recorded at its key). `turns` in reach
/// of the whole-conversation graders is set on `cx` for the caller to compile them.
pub(super) fn compile_conversation(
    cx: &mut ValidateCx,
    keys: &ConversationKeys,
    path: &KeyPath,
    agents: &std::collections::BTreeMap<String, std::sync::Arc<Agent>>,
    judge: Option<&LlmSpec>,
) -> Option<Result<Conversation, ()>> {
    if keys.turns.is_none() && keys.simulated_user.is_none() {
        if keys.conversation.is_some() {
            cx.error(&path.key("conversation"), "`conversation` goes with `turns` or `simulated_user`");
            return Some(Err(()));
        }
        return None;
    }
    let mut ok = true;
    if keys.prompt {
        cx.error(
            path,
            "set either `prompt` or `turns`/`simulated_user`, not both (`messages` may open the conversation)",
        );
        ok = false;
    }
    // The opening messages come before any turn: they reach no turn's answer.
    cx.turns = Some(0);
    let mut opening = Vec::new();
    for (j, m) in keys.messages.unwrap_or_default().iter().enumerate() {
        match cx.template(&m.content, Scope::Task, &path.key("messages").index(j).key("content")) {
            Some(content) => opening.push((m.role, content)),
            None => ok = false,
        }
    }
    let raw_turns = keys.turns.unwrap_or_default();
    if keys.turns.is_some_and(<[RawTurn]>::is_empty) {
        cx.error(&path.key("turns"), "`turns` is empty: give at least one turn, or only `simulated_user`");
        ok = false;
    }
    let mut turns = Vec::with_capacity(raw_turns.len());
    for (i, raw) in raw_turns.iter().enumerate() {
        let at = path.key("turns").index(i);
        // A turn's prompt reaches the answers of the turns before it; its graders its own too.
        cx.turns = Some(i as u32);
        let prompt = cx.template(&raw.prompt, Scope::Task, &at.key("prompt"));
        cx.turns = Some(i as u32 + 1);
        let graders: Vec<Option<Grader>> = raw
            .grade
            .iter()
            .enumerate()
            .map(|(j, g)| Grader::from_raw(cx, g.clone(), &at.key("grade").index(j)))
            .collect();
        let graders = graders.into_iter().collect::<Option<Vec<_>>>();
        match (prompt, graders) {
            (Some(prompt), Some(graders)) => {
                turns.push(Turn { prompt, graders, threshold: raw.threshold.map(Rate::get) })
            }
            _ => ok = false,
        }
    }
    let any_turn_graders = raw_turns.iter().any(|t| !t.grade.is_empty());
    if !any_turn_graders && !keys.whole_graders {
        cx.error(path, "the conversation has no graders: add them under a turn's `grade` or the task's `grade`");
        ok = false;
    }
    let simulated_user = match keys.simulated_user {
        Some(raw) => match simulated_user(cx, raw, &path.key("simulated_user"), agents, judge, raw_turns.len()) {
            Some(s) => Some(s),
            None => {
                ok = false;
                None
            }
        },
        None => None,
    };
    if simulated_user.is_some() && !keys.whole_graders {
        // The simulator's turns have no graders of their own, and its word is not a verdict.
        cx.error(
            path,
            "a conversation with `simulated_user` needs whole-conversation graders (the task's `grade`): the simulator's own word never decides",
        );
        ok = false;
    }
    let raw = keys.conversation.cloned().unwrap_or_default();
    if let Verdict::Share(share) = raw.verdict
        && share.get() <= 0.0
    {
        cx.error(&path.key("conversation").key("verdict").key("share"), "a share of 0 passes every conversation");
        ok = false;
    }
    // The whole-conversation graders reach every scripted turn's answer.
    cx.turns = Some(raw_turns.len() as u32);
    if !ok {
        return Some(Err(()));
    }
    Some(Ok(Conversation {
        opening,
        turns,
        verdict: raw.verdict,
        stop_on_failure: raw.stop_on_failure,
        window: raw.window,
        output: raw.output,
        simulated_user,
    }))
}

fn simulated_user(
    cx: &mut ValidateCx,
    raw: &RawSimulatedUser,
    path: &KeyPath,
    agents: &std::collections::BTreeMap<String, std::sync::Arc<Agent>>,
    judge: Option<&LlmSpec>,
    scripted: usize,
) -> Option<SimulatedUser> {
    let (name, spec) = match &raw.model {
        Some(name) => match agents.get(name).map(|a| &**a) {
            Some(Agent::Llm(agent)) => (name.clone(), agent.spec.clone()),
            Some(_) => {
                cx.error(&path.key("model"), format!("agent `{name}` is not a model agent (`provider` and `model`)"));
                return None;
            }
            None => {
                let models = agents.iter().filter(|(_, a)| matches!(***a, Agent::Llm(_))).map(|(n, _)| n.as_str());
                let help = unknown(name, models).help("model agents", "the suite defines no model agent");
                cx.error(&path.key("model"), format!("unknown agent `{name}`")).help = Some(help);
                return None;
            }
        },
        None => match judge {
            Some(judge) => ("judge".to_owned(), judge.clone()),
            None => {
                cx.error(path, "the simulated user needs a model: name a model agent here, or set the suite's `judge`");
                return None;
            }
        },
    };
    for (key, text) in [("persona", &raw.persona), ("goal", &raw.goal)] {
        if text.trim().is_empty() {
            cx.error(&path.key(key), format!("`{key}` is empty"));
            return None;
        }
    }
    let max_turns = raw.max_turns.unwrap_or(DEFAULT_SIMULATED_TURNS);
    if max_turns.get() as usize <= scripted {
        cx.error(
            &path.key("max_turns"),
            format!("`max_turns` ({max_turns}) leaves the simulated user no turn after the {scripted} scripted one(s)"),
        );
        return None;
    }
    Some(SimulatedUser { name, spec, persona: raw.persona.clone(), goal: raw.goal.clone(), max_turns })
}

impl Conversation {
    /// Every grader of its turns.
    pub fn turn_graders(&self) -> impl Iterator<Item = &Grader> {
        self.turns.iter().flat_map(|t| &t.graders)
    }
}
