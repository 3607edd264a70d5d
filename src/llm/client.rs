//! The one trait model providers implement, and its error.

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
}

impl LlmError {
    /// 429, 529 (overloaded), 5xx and timeouts are worth another try.
    pub fn is_retryable(&self) -> bool {
        match self {
            LlmError::Status { status, .. } => *status == 429 || *status == 529 || *status >= 500,
            LlmError::Transport { .. } => true,
            LlmError::Malformed { .. } => false,
        }
    }
}

#[async_trait::async_trait]
pub trait LlmClient: Send + Sync {
    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError>;
}
