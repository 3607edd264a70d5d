//! What a run did with its cassette, as its results say.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::Mode;

/// What a run did with its cassette, for its results.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Usage {
    /// The cassette, as the suite names it.
    pub path: String,
    pub mode: Option<Mode>,
    /// Answers replayed, asked live and recorded, and requests the cassette did not hold.
    pub replayed: u64,
    pub recorded: u64,
    pub missed: u64,
    /// Of `replayed`, the answers a command agent's model endpoint gave: only what the agent
    /// sent through it was seen; traffic it sent another way is neither replayed nor counted.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub through_endpoint: u64,
    /// Live answers not recorded: they held a secret in a form that cannot be redacted (a
    /// streamed answer's pieces that join to it, base64 of it).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub refused: u64,
    /// The days the replayed answers were recorded, the first and the last.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recorded_from: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recorded_to: Option<String>,
    /// The models of the replayed answers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub models: Vec<String>,
    /// The keys of recorded entries this run did not ask (stale, if the run was whole).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unused: Vec<String>,
}

impl Usage {
    /// Two shards' use of one cassette: counts summed, the dates' span, every model, and
    /// the entries neither shard asked.
    pub fn merged(a: Option<Usage>, b: Option<Usage>) -> Option<Usage> {
        let (mut a, b) = match (a, b) {
            (Some(a), Some(b)) => (a, b),
            (a, b) => return a.or(b),
        };
        a.replayed += b.replayed;
        a.through_endpoint += b.through_endpoint;
        a.recorded += b.recorded;
        a.missed += b.missed;
        a.refused += b.refused;
        a.recorded_from = a.recorded_from.into_iter().chain(b.recorded_from).min();
        a.recorded_to = a.recorded_to.into_iter().chain(b.recorded_to).max();
        a.models.extend(b.models);
        a.models.sort();
        a.models.dedup();
        a.unused.retain(|k| b.unused.contains(k));
        Some(a)
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}
