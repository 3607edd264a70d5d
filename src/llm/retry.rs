//! Retries and concurrency for a provider: at most `max_concurrency` requests at once;
//! 429/529 wait for `Retry-After` (else back off exponentially with jitter); 5xx and
//! timeouts are retried up to `retries` times.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Semaphore;

use super::client::{LlmClient, LlmError};
use super::types::{ChatRequest, ChatResponse};

const BASE_BACKOFF: Duration = Duration::from_millis(250);
const MAX_BACKOFF: Duration = Duration::from_secs(30);

pub struct Retrying {
    pub inner: Box<dyn LlmClient>,
    pub retries: u32,
    pub permits: Arc<Semaphore>,
}

#[async_trait::async_trait]
impl LlmClient for Retrying {
    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let _permit = self.permits.acquire().await.expect("the semaphore is never closed");
        let mut attempt = 0;
        loop {
            match self.inner.complete(request).await {
                Err(e) if e.is_retryable() && attempt < self.retries => {
                    tokio::time::sleep(delay(&e, attempt)).await;
                    attempt += 1;
                }
                other => return other,
            }
        }
    }
}

fn delay(error: &LlmError, attempt: u32) -> Duration {
    if let LlmError::Status { retry_after: Some(wait), .. } = error {
        return (*wait).min(MAX_BACKOFF);
    }
    let backoff = BASE_BACKOFF.saturating_mul(2u32.saturating_pow(attempt)).min(MAX_BACKOFF);
    // Up to 25% jitter, so parallel tasks do not retry in lockstep.
    backoff + backoff.mul_f64(fastrand::f64() * 0.25)
}
