//! A cassette's entry (one request, its answers), the mode a run opens it in, and how a
//! request is keyed: its canonical JSON, hashed with its traffic's kind.

use std::collections::BTreeSet;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// What a run does with its cassette.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Every request live; their answers replace the recorded ones.
    Record,
    /// What the cassette holds is replayed; the rest is asked live and added.
    RecordMissing,
    /// Everything from the cassette; a request it does not hold is an error.
    Replay,
}

impl Mode {
    pub const fn label(self) -> &'static str {
        match self {
            Mode::Record => "record",
            Mode::RecordMissing => "record_missing",
            Mode::Replay => "replay",
        }
    }

    /// Whether requests may go live (and need the provider's key).
    pub const fn live(self) -> bool {
        !matches!(self, Mode::Replay)
    }
}

/// One recorded request and its answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    pub key: String,
    /// What asked: a provider's label (`openai`, `anthropic`: evalgate's own model agents
    /// and judges) or an endpoint a command agent called (`http:openai`, `http:anthropic`).
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The day (UTC) its answers were recorded.
    pub recorded: String,
    pub request: Value,
    pub responses: Vec<Value>,
    /// The suites whose recording runs asked it (recorded or replayed): `cassettes prune`
    /// removes it only on whole runs of every one of them.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub suites: BTreeSet<String>,
}

/// The model a request asks: its `model`, or its body's (a command agent's HTTP request).
pub(super) fn model_of(request: &Value) -> Option<String> {
    request.get("model").or_else(|| request.pointer("/body/model")).and_then(Value::as_str).map(str::to_owned)
}

/// `value` with the keys of every object sorted.
pub fn canonical(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            Value::Object(keys.into_iter().map(|k| (k.clone(), canonical(&map[k]))).collect())
        }
        Value::Array(items) => Value::Array(items.iter().map(canonical).collect()),
        other => other.clone(),
    }
}

/// 64 bits of SHA-256 over the kind and the canonical request, in hex.
pub(super) fn key_of(kind: &str, canonical_request: &Value) -> String {
    let mut hasher = Sha256::new();
    hasher.update(kind.as_bytes());
    hasher.update([0]);
    hasher.update(canonical_request.to_string().as_bytes());
    hasher.finalize()[..8].iter().map(|b| format!("{b:02x}")).collect()
}

/// Today (UTC), `YYYY-MM-DD`.
pub(super) fn today() -> String {
    humantime::format_rfc3339(std::time::SystemTime::now()).to_string()[..10].to_owned()
}
