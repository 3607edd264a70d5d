//! The HTTP part both protocols share: one POST of JSON, errors classified.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use serde_json::Value;

use super::client::LlmError;
use super::limiter::EndpointLimiter;
use super::rate_limits::{RateLimits, retry_after};
use crate::http_body::{BodyError, read_capped};

/// Where and how to reach a provider.
#[derive(Clone)]
pub struct HttpSettings {
    pub base_url: String,
    /// The header carrying the API key, when there is one: never printed, never written.
    pub auth: Option<(String, String)>,
    pub headers: Vec<(String, String)>,
    pub timeout: Duration,
    /// The endpoint's requests in flight, shared by every client of it.
    pub limiter: Arc<EndpointLimiter>,
}

impl std::fmt::Debug for HttpSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpSettings").field("base_url", &self.base_url).field("timeout", &self.timeout).finish()
    }
}

/// The one HTTP client of model requests (evalgate's own, and those a cassette's model
/// endpoint forwards).
pub fn client() -> &'static reqwest::Client {
    static CLIENT: OnceLock<reqwest::Client> = OnceLock::new();
    CLIENT.get_or_init(|| {
        crate::http_body::client_builder()
            // A redirect to another origin is answered, not followed: a key goes only where
            // it was sent (reqwest keeps `x-api-key` on a redirect to another host).
            .redirect(reqwest::redirect::Policy::custom(|attempt| {
                let origin = attempt.previous().first().map(reqwest::Url::origin);
                if attempt.previous().len() >= 10 || origin.is_some_and(|o| o != attempt.url().origin()) {
                    attempt.stop()
                } else {
                    attempt.follow()
                }
            }))
            .build()
            .expect("a client with a redirect policy builds")
    })
}

/// The most read of an answer: a completion is kilobytes, and an endless body must not
/// take the run's memory (it took 1.45 GB) or outlast its timeout.
const MAX_BODY: usize = 16 << 20;

/// Characters of a response body quoted in an error.
const EXCERPT: usize = 300;

/// The error for an answer from `provider` that is not the protocol, quoting its body.
pub fn malformed<'a>(provider: &'static str, status: u16, body: &'a str) -> impl Fn(String) -> LlmError + 'a {
    move |message| LlmError::Malformed { provider, status, message, excerpt: excerpt(body) }
}

pub fn excerpt(text: &str) -> String {
    crate::excerpt::excerpt(text, EXCERPT)
}

/// POSTs `body` within the endpoint's limit (the limiter sees the status and the
/// rate-limit headers); a 2xx answer gives `(status, body)`, anything else an error.
pub async fn post_json(
    provider: &'static str,
    settings: &HttpSettings,
    url: &str,
    body: &Value,
) -> Result<(u16, String), LlmError> {
    let mut request = client().post(url).timeout(settings.timeout).json(body);
    for (k, v) in settings.headers.iter().chain(settings.auth.iter()) {
        request = request.header(k, v);
    }
    let slot = settings.limiter.acquire().await;
    let response = request.send().await.map_err(|e| LlmError::Transport {
        provider,
        message: if e.is_timeout() {
            format!("timed out after {}", humantime::format_duration(settings.timeout))
        } else {
            describe_reqwest(&e)
        },
        timeout: e.is_timeout(),
    })?;
    let status = response.status().as_u16();
    let retry_after = retry_after(response.headers());
    slot.observe(status, &RateLimits::from_headers(response.headers()));
    let body = read_capped(response, MAX_BODY).await;
    drop(slot);
    let text = match body {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(BodyError::Read(e)) => {
            return Err(LlmError::Transport { provider, message: describe_reqwest(&e), timeout: e.is_timeout() });
        }
        // Not retried: the same request would get the same answer.
        Err(BodyError::TooLarge { cap, start }) => {
            let message = format!("the answer is {}", BodyError::too_large(cap));
            return Err(malformed(provider, status, &String::from_utf8_lossy(&start))(message));
        }
    };
    if (200..300).contains(&status) {
        return Ok((status, text));
    }
    // Both providers put the reason in `error.message`.
    let message = serde_json::from_str::<Value>(&text)
        .ok()
        .and_then(|v| v.pointer("/error/message").and_then(Value::as_str).map(str::to_owned))
        .unwrap_or_else(|| excerpt(&text));
    Err(LlmError::Status { provider, status, message, retry_after })
}

/// reqwest's message stops at "error sending request"; its causes say what happened.
pub fn describe_reqwest(e: &reqwest::Error) -> String {
    let mut text = if e.is_timeout() { "timed out".to_owned() } else { e.to_string() };
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}
