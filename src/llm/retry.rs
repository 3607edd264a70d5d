//! Retries for a provider. A rate-limited answer (429, 529, or 503 with `Retry-After`) is
//! asked again, as a patient client would, until the request's `timeout` runs out: after
//! `Retry-After`, else backing off exponentially with jitter. Other 5xx answers and
//! transport failures are retried up to `retries` times. Waiting holds no slot of the
//! endpoint's limit (`limiter.rs`): the slot is taken per request, on the wire.

use std::time::Duration;

use tokio::time::Instant;

use super::client::{LlmClient, LlmError};
use super::embeddings::{EmbeddingRequest, EmbeddingResponse};
use super::types::{ChatRequest, ChatResponse};

const BASE_BACKOFF: Duration = Duration::from_millis(250);
const MAX_BACKOFF: Duration = Duration::from_secs(30);

pub struct Retrying {
    pub inner: Box<dyn LlmClient>,
    pub retries: u32,
    /// How long rate-limited answers are retried, from the first attempt.
    pub patience: Duration,
}

#[async_trait::async_trait]
impl LlmClient for Retrying {
    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        self.again(|| self.inner.complete(request)).await
    }

    async fn embed(&self, request: &EmbeddingRequest) -> Result<EmbeddingResponse, LlmError> {
        self.again(|| self.inner.embed(request)).await
    }
}

impl Retrying {
    /// `call` asked, and asked again as the module says: the one retry loop of every kind of
    /// request.
    async fn again<T, F: Future<Output = Result<T, LlmError>>>(&self, call: impl Fn() -> F) -> Result<T, LlmError> {
        let deadline = Instant::now() + self.patience;
        let (mut failures, mut limited) = (0, 0);
        loop {
            match call().await {
                Err(e) if e.is_rate_limited() => {
                    let wait = delay(&e, limited);
                    if Instant::now() + wait > deadline {
                        return Err(e);
                    }
                    tokio::time::sleep(wait).await;
                    limited += 1;
                }
                Err(e) if e.is_retryable() && failures < self.retries => {
                    // A server error's `Retry-After` is honoured up to the back-off cap: only
                    // a rate limit is waited out until the request's deadline.
                    tokio::time::sleep(delay(&e, failures).min(MAX_BACKOFF)).await;
                    failures += 1;
                }
                other => return other,
            }
        }
    }
}

fn delay(error: &LlmError, attempt: u32) -> Duration {
    if let LlmError::Status { retry_after: Some(wait), .. } = error {
        return *wait;
    }
    let backoff = BASE_BACKOFF.saturating_mul(2u32.saturating_pow(attempt)).min(MAX_BACKOFF);
    // Up to 25% jitter, so parallel tasks do not retry in lockstep.
    backoff + backoff.mul_f64(fastrand::f64() * 0.25)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU32, Ordering};

    use super::*;
    use crate::llm::limiter::EndpointLimiter;
    use crate::llm::rate_limits::RateLimits;
    use crate::llm::types::{ChatMessage, Role};

    /// Answers `429, Retry-After: 10 s` to the prompt "limited" the first time, and every
    /// other request at once; like the wire, it holds a slot of `limiter` per request.
    struct Scripted {
        limiter: Arc<EndpointLimiter>,
        calls: Arc<AtomicU32>,
        status: u16,
    }

    #[async_trait::async_trait]
    impl LlmClient for Scripted {
        async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
            let slot = self.limiter.acquire().await;
            let n = self.calls.fetch_add(1, Ordering::SeqCst);
            let limited = request.model == "limited" && (n == 0 || self.status != 429);
            slot.observe(if limited { self.status } else { 200 }, &RateLimits::default());
            if limited {
                return Err(LlmError::Status {
                    provider: "openai",
                    status: self.status,
                    message: "slow down".into(),
                    retry_after: Some(Duration::from_secs(10)),
                });
            }
            Ok(ChatResponse { text: "ok".into(), ..ChatResponse::default() })
        }
    }

    fn request(model: &str) -> ChatRequest {
        ChatRequest {
            model: model.into(),
            system: None,
            messages: vec![ChatMessage::text(Role::User, "x")],
            tools: Vec::new(),
            force_tool: None,
            tool_choice: None,
            temperature: None,
            max_tokens: None,
            seed: None,
        }
    }

    fn client(limiter: &Arc<EndpointLimiter>, status: u16, patience: Duration) -> (Retrying, Arc<AtomicU32>) {
        let calls = Arc::new(AtomicU32::new(0));
        let inner = Scripted { limiter: limiter.clone(), calls: calls.clone(), status };
        (Retrying { inner: Box::new(inner), retries: 0, patience }, calls)
    }

    #[tokio::test(start_paused = true)]
    async fn waiting_for_retry_after_holds_no_slot() {
        // One slot: if the waiting request kept it, the other could not start for 10 s.
        let limiter = Arc::new(EndpointLimiter::new(1));
        let (client, _) = client(&limiter, 429, Duration::from_secs(60));
        let started = Instant::now();
        let first = request("limited");
        let (limited, other) = tokio::join!(client.complete(&first), async {
            tokio::time::sleep(Duration::from_millis(1)).await;
            let answer = client.complete(&request("other")).await;
            (answer, started.elapsed())
        });
        assert_eq!(limited.unwrap().text, "ok");
        assert_eq!(started.elapsed(), Duration::from_secs(10), "Retry-After was honoured");
        assert!(other.0.is_ok());
        assert!(other.1 < Duration::from_secs(1), "the other request waited {:?}", other.1);
    }

    #[tokio::test(start_paused = true)]
    async fn rate_limits_are_retried_beyond_retries_until_the_patience_runs_out() {
        // 503 + Retry-After on every attempt, `retries: 0`: asked again every 10 s while
        // the next wait fits in 35 s.
        let limiter = Arc::new(EndpointLimiter::new(4));
        let (client, calls) = client(&limiter, 503, Duration::from_secs(35));
        let started = Instant::now();
        let error = client.complete(&request("limited")).await.unwrap_err();
        assert!(error.to_string().contains("HTTP 503"), "{error}");
        assert_eq!(started.elapsed(), Duration::from_secs(30));
        assert_eq!(calls.load(Ordering::SeqCst), 4, "at 0, 10, 20 and 30 s");
    }
}
