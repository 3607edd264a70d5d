//! Embeddings: the OpenAI-compatible `POST /embeddings` wire (every OpenAI-compatible server
//! speaks it too), its request and answer, and [`Vector`], the one way a grader reads an
//! answered embedding and compares two. The request goes through the same machinery as a
//! chat completion (`LlmRuntime::embed`: the cassette, the cache, retries, the endpoint's
//! limit, the price).

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::client::LlmError;
use super::types::TokenUsage;
use super::wire::malformed;

/// One text to embed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EmbeddingRequest {
    pub model: String,
    pub input: String,
}

/// What the endpoint answered. The embedding is kept as it came (`null` when the answer has
/// none), so a reply that is no vector is recorded and replayed like any other, and refused
/// where it is read ([`Vector::read`]), never here.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EmbeddingResponse {
    /// `data[0].embedding` of the answer.
    pub embedding: Value,
    pub usage: TokenUsage,
    /// The model the provider says answered.
    #[serde(default)]
    pub model: String,
}

/// An embedding and what it cost.
#[derive(Debug, Clone)]
pub struct Embedded {
    pub response: EmbeddingResponse,
    /// `None` when the model has no known price; 0 for a cache hit.
    pub cost_usd: Option<f64>,
    pub cached: bool,
    /// The answer came from the cassette.
    pub replayed: bool,
}

/// The OpenAI embeddings request body.
pub fn to_wire(request: &EmbeddingRequest) -> Value {
    json!({"input": request.input, "model": request.model})
}

/// An OpenAI embeddings answer: JSON, else an error; its embedding as it is.
pub fn from_wire(provider: &'static str, status: u16, body: &str) -> Result<EmbeddingResponse, LlmError> {
    let v: Value =
        serde_json::from_str(body).map_err(|e| malformed(provider, status, body)(format!("not JSON: {e}")))?;
    let n = |path: &str| v.pointer(path).and_then(Value::as_u64).unwrap_or(0);
    Ok(EmbeddingResponse {
        embedding: v.pointer("/data/0/embedding").cloned().unwrap_or(Value::Null),
        usage: TokenUsage { input: n("/usage/prompt_tokens"), ..TokenUsage::default() },
        model: v.get("model").and_then(Value::as_str).unwrap_or_default().to_owned(),
    })
}

/// An embedding as a grader compares it: a non-empty list of finite numbers. The only
/// constructor is [`Vector::read`], and every comparison refuses two lengths, so an answer
/// that is no vector, or two that do not match, is an error and never a score.
#[derive(Debug, Clone, PartialEq)]
pub struct Vector(Vec<f64>);

impl Vector {
    /// An answered embedding, or why it is none.
    pub fn read(embedding: &Value) -> Result<Vector, String> {
        let Value::Array(items) = embedding else {
            return Err(format!(
                "the embedding is not a list of numbers: {}",
                super::wire::excerpt(&embedding.to_string())
            ));
        };
        if items.is_empty() {
            return Err("the embedding is an empty list".into());
        }
        let numbers: Option<Vec<f64>> = items.iter().map(|x| x.as_f64().filter(|f| f.is_finite())).collect();
        numbers.map(Vector).ok_or_else(|| {
            format!(
                "the embedding holds something other than numbers: {}",
                super::wire::excerpt(&embedding.to_string())
            )
        })
    }

    fn pair<'a>(&'a self, other: &'a Vector) -> Result<impl Iterator<Item = (f64, f64)> + 'a, String> {
        if self.0.len() != other.0.len() {
            return Err(format!("two embeddings of different lengths ({} and {})", self.0.len(), other.0.len()));
        }
        Ok(self.0.iter().copied().zip(other.0.iter().copied()))
    }

    /// The dot product, summed left to right as promptfoo sums it (the same rounding).
    pub fn dot(&self, other: &Vector) -> Result<f64, String> {
        finite(self.pair(other)?.fold(0.0, |acc, (a, b)| acc + a * b))
    }

    fn magnitude(&self) -> f64 {
        self.0.iter().fold(0.0, |acc, a| acc + a * a).sqrt()
    }

    /// The cosine similarity; 0 when either vector is all zeros (promptfoo's).
    pub fn cosine(&self, other: &Vector) -> Result<f64, String> {
        let dot = self.dot(other)?;
        let (a, b) = (self.magnitude(), other.magnitude());
        finite(if a == 0.0 || b == 0.0 { 0.0 } else { dot / (a * b) })
    }

    /// The Euclidean distance.
    pub fn euclidean(&self, other: &Vector) -> Result<f64, String> {
        finite(self.pair(other)?.fold(0.0, |acc, (a, b)| acc + (a - b) * (a - b)).sqrt())
    }
}

/// A comparison's value, or an error when finite numbers overflowed on the way (`[1e200]`
/// has an infinite magnitude, and its cosine is NaN): a comparison is never a NaN or
/// infinite score, which no threshold test reads the right way.
fn finite(value: f64) -> Result<f64, String> {
    if value.is_finite() {
        Ok(value)
    } else {
        Err(format!("two embeddings compare to {value} (their numbers overflow)"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_list_of_finite_numbers_is_a_vector() {
        assert!(Vector::read(&json!([0.5, -1, 2e-3])).is_ok());
        for bad in
            [json!(null), json!([]), json!("0.1,0.2"), json!({"0": 1}), json!([1, "2"]), json!([1, null]), json!([[1]])]
        {
            assert!(Vector::read(&bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn vectors_of_two_lengths_are_never_compared() {
        let (a, b) = (Vector::read(&json!([1, 0])).unwrap(), Vector::read(&json!([1, 0, 0])).unwrap());
        assert!(a.cosine(&b).is_err() && a.dot(&b).is_err() && a.euclidean(&b).is_err());
    }

    #[test]
    fn numbers_that_overflow_are_an_error_never_a_score() {
        let (big, other) =
            (Vector::read(&json!([1e200, 1e200])).unwrap(), Vector::read(&json!([-1e200, 1e200])).unwrap());
        assert!(big.dot(&big).is_err() && big.cosine(&big).is_err() && big.euclidean(&other).is_err());
    }

    #[test]
    fn comparisons_as_promptfoo_computes_them() {
        let (a, b) = (Vector::read(&json!([3, 4])).unwrap(), Vector::read(&json!([4, 3])).unwrap());
        assert_eq!(a.cosine(&b).unwrap(), 24.0 / 25.0);
        assert_eq!(a.dot(&b).unwrap(), 24.0);
        assert_eq!(a.euclidean(&b).unwrap(), 2f64.sqrt());
        let zero = Vector::read(&json!([0, 0])).unwrap();
        assert_eq!(a.cosine(&zero).unwrap(), 0.0);
    }

    #[test]
    fn an_answer_without_an_embedding_is_read_as_null_and_a_body_that_is_no_json_is_an_error() {
        let r = from_wire("openai", 200, r#"{"data": [], "usage": {"prompt_tokens": 3}}"#).unwrap();
        assert_eq!((r.embedding, r.usage.input), (Value::Null, 3));
        assert!(from_wire("openai", 200, "<html>").is_err());
    }
}
