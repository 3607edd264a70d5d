//! The doors: every place traffic meets the cassette (a model request of evalgate's own,
//! a command agent's model endpoint, an MCP server's session, an `http` agent's requests)
//! is a [`Door`], and [`pass`] is the one walk each takes: look the request up, then
//! replay, miss or ask live and record. A door says only what traffic it passes and which
//! live answers it keeps; a new door is an impl and a [`Traffic`] variant.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::recorded::{Cassette, Lookup};

/// A request the cassette cannot answer.
#[derive(Debug, Clone)]
pub struct Miss {
    pub message: String,
}

impl std::fmt::Display for Miss {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}
/// What traffic a door passes: the namespace of its entries' keys, written in the file as
/// their `kind` ([`Traffic::label`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Traffic {
    /// evalgate's own model agents and judges, by provider label: `openai`.
    Model(&'static str),
    /// evalgate's own judges' embeddings (`/embeddings`), by provider label:
    /// `embeddings:openai`.
    Embeddings(&'static str),
    /// A command agent's own model calls through its model endpoint, by provider label:
    /// `http:openai`.
    Endpoint(&'static str),
    /// An MCP server's session, by the server's name in the cassette: `mcp:NAME`.
    Mcp(String),
    /// An `http` agent's requests, by the agent's name: `http-agent:NAME`.
    HttpAgent(String),
}

impl Traffic {
    /// The kind its entries are written and keyed with.
    pub fn label(&self) -> String {
        match self {
            Traffic::Model(provider) => (*provider).to_owned(),
            Traffic::Embeddings(provider) => format!("embeddings:{provider}"),
            Traffic::Endpoint(provider) => format!("http:{provider}"),
            Traffic::Mcp(server) => format!("mcp:{server}"),
            Traffic::HttpAgent(agent) => format!("http-agent:{agent}"),
        }
    }
}

/// A place where traffic meets the cassette. It takes [`pass`] for every request, so the
/// lookup, the replay, the miss (an error, never a live call) and the recording of a live
/// answer (redacted, refused when it holds a secret no redaction removes, written only by
/// `file::write`) are the same at every door.
pub trait Door {
    /// What it passes.
    fn traffic(&self) -> Traffic;

    /// Whether a live answer, as recorded, is kept (default: every one). An answer kept is
    /// replayed for ever: a door whose answers may be a passing failure (an HTTP 429) keeps
    /// only the others.
    fn keeps(&self, _recorded: &Value) -> bool {
        true
    }
}

/// An answer through a door, and whether it came from the cassette.
#[derive(Debug)]
pub struct Passed<T> {
    pub answer: T,
    pub replayed: bool,
}

/// `request` through `door`: the recorded answer (read back as a `T`), a miss (`E` from the
/// [`Miss`], never a live call), or `live` asked and its answer recorded. The one walk:
/// nothing outside the cassette looks a request up or records an answer.
pub async fn pass<T, E, F>(
    cassette: &Cassette,
    door: &impl Door,
    request: &Value,
    live: impl FnOnce() -> F,
) -> Result<Passed<T>, E>
where
    T: Serialize + DeserializeOwned,
    E: From<Miss>,
    F: Future<Output = Result<T, E>>,
{
    let traffic = door.traffic();
    match cassette.lookup(&traffic, request) {
        Lookup::Replay(recorded) => match serde_json::from_value(recorded) {
            Ok(answer) => Ok(Passed { answer, replayed: true }),
            Err(e) => Err(Miss {
                message: format!("cassette {}: a recorded {} answer is not one: {e}", cassette.name, traffic.label()),
            }
            .into()),
        },
        Lookup::Miss(miss) => Err(miss.into()),
        Lookup::Live(slot) => {
            let answer = live().await?;
            let recorded = serde_json::to_value(&answer).expect("an answer serializes");
            if door.keeps(&recorded) {
                cassette.record(slot, &recorded);
            }
            Ok(Passed { answer, replayed: false })
        }
    }
}
