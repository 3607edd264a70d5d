//! The one trait model providers implement, and its error.

use super::embeddings::{EmbeddingRequest, EmbeddingResponse};
use super::types::{ChatRequest, ChatResponse};

#[derive(Debug, Clone, thiserror::Error)]
pub enum LlmError {
    /// The provider answered with an error status.
    #[error("HTTP {status} from {provider}: {message}")]
    Status { provider: &'static str, status: u16, message: String, retry_after: Option<std::time::Duration> },
    /// No answer: connection refused, timeout.
    #[error("{provider} request failed: {message}")]
    Transport { provider: &'static str, message: String, timeout: bool },
    /// An answer that is not the protocol: malformed JSON, a missing field.
    #[error("malformed response from {provider} (HTTP {status}): {message}; body: {excerpt}")]
    Malformed { provider: &'static str, status: u16, message: String, excerpt: String },
    /// In replay, a request the cassette does not hold (never asked live), or an answer it
    /// holds that is not one.
    #[error("{message}")]
    Cassette { message: String },
}

impl LlmError {
    /// The provider asks to slow down (429, 529 overloaded, or 503 with `Retry-After`): a
    /// patient client asks again, for as long as the request's time allows.
    pub fn is_rate_limited(&self) -> bool {
        match self {
            LlmError::Status { status, retry_after, .. } => {
                matches!(status, 429 | 529) || (*status == 503 && retry_after.is_some())
            }
            LlmError::Transport { .. } | LlmError::Malformed { .. } | LlmError::Cassette { .. } => false,
        }
    }

    /// 429, 529 (overloaded), 5xx and timeouts are worth another try.
    pub fn is_retryable(&self) -> bool {
        match self {
            LlmError::Status { status, .. } => *status == 429 || *status == 529 || *status >= 500,
            LlmError::Transport { .. } => true,
            LlmError::Malformed { .. } | LlmError::Cassette { .. } => false,
        }
    }
}

#[async_trait::async_trait]
pub trait LlmClient: Send + Sync {
    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError>;

    /// An embedding of the request's text (`/embeddings`); a provider without that API
    /// (Anthropic) keeps this default, an error. A suite cannot name one: the judge's
    /// `embedding` model is checked at load.
    async fn embed(&self, _request: &EmbeddingRequest) -> Result<EmbeddingResponse, LlmError> {
        Err(LlmError::Malformed {
            provider: "model",
            status: 0,
            message: "this provider has no embeddings API".into(),
            excerpt: String::new(),
        })
    }
}
