//! What a provider's response headers say about its rate limits: how long to wait before
//! a retry (`retry-after-ms`, `Retry-After` in seconds or as an HTTP date) and how much of
//! its budget is left (`x-ratelimit-*` of OpenAI-compatible servers, `anthropic-ratelimit-*`).

use std::time::{Duration, SystemTime};

use reqwest::header::HeaderMap;

/// The longest pause a header can ask for: a bogus reset time does not stall a run.
const MAX_PAUSE: Duration = Duration::from_secs(60);
/// New requests wait for the reset once less than this share of a token budget is left:
/// the size of the next request is not known before it is sent.
const TOKEN_RESERVE: f64 = 0.05;

/// One budget the provider reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    pub limit: Option<u64>,
    pub remaining: u64,
    /// Until the budget is full again.
    pub reset: Option<Duration>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RateLimits {
    pub requests: Option<Budget>,
    /// The tightest token budget (Anthropic reports input, output and total tokens).
    pub tokens: Option<Budget>,
}

impl RateLimits {
    pub fn from_headers(headers: &HeaderMap) -> Self {
        Self::at(headers, SystemTime::now())
    }

    fn at(headers: &HeaderMap, now: SystemTime) -> Self {
        let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).map(str::trim);
        let budget = |limit: &str, remaining: &str, reset: &str| {
            Some(Budget {
                limit: text(limit).and_then(|v| v.parse().ok()),
                remaining: text(remaining)?.parse().ok()?,
                reset: text(reset).and_then(|v| reset_in(v, now)),
            })
        };
        let openai = |kind: &str| {
            budget(
                &format!("x-ratelimit-limit-{kind}"),
                &format!("x-ratelimit-remaining-{kind}"),
                &format!("x-ratelimit-reset-{kind}"),
            )
        };
        let anthropic = |kind: &str| {
            budget(
                &format!("anthropic-ratelimit-{kind}-limit"),
                &format!("anthropic-ratelimit-{kind}-remaining"),
                &format!("anthropic-ratelimit-{kind}-reset"),
            )
        };
        let tokens = [openai("tokens"), anthropic("tokens"), anthropic("input-tokens"), anthropic("output-tokens")]
            .into_iter()
            .flatten()
            .min_by(|a, b| share_left(a).total_cmp(&share_left(b)));
        RateLimits { requests: openai("requests").or_else(|| anthropic("requests")), tokens }
    }

    /// How long new requests should wait, when the budget left would not cover them:
    /// the requests already in flight (`others_in_flight`) spend it too.
    pub fn wait_before_next(&self, others_in_flight: usize) -> Option<Duration> {
        let requests = self.requests.filter(|b| b.remaining <= others_in_flight as u64);
        let tokens = self.tokens.filter(|b| match b.limit {
            Some(limit) if limit > 0 => (b.remaining as f64) < limit as f64 * TOKEN_RESERVE,
            _ => b.remaining == 0,
        });
        [requests, tokens].into_iter().flatten().filter_map(|b| b.reset).max().map(|d| d.min(MAX_PAUSE))
    }
}

fn share_left(budget: &Budget) -> f64 {
    match budget.limit {
        Some(limit) if limit > 0 => budget.remaining as f64 / limit as f64,
        _ => budget.remaining as f64,
    }
}

/// How long the answer asks to wait before the request is sent again: `retry-after-ms`
/// (OpenAI), else `Retry-After` as seconds or as an HTTP date.
pub fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    retry_after_at(headers, SystemTime::now())
}

fn retry_after_at(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).map(str::trim);
    if let Some(ms) = text("retry-after-ms").and_then(|v| v.parse::<f64>().ok()) {
        return Duration::try_from_secs_f64(ms / 1000.0).ok();
    }
    let value = text("retry-after")?;
    match value.parse::<f64>() {
        Ok(seconds) => Duration::try_from_secs_f64(seconds).ok(),
        Err(_) => {
            let at = httpdate::parse_http_date(value).ok()?;
            Some(at.duration_since(now).unwrap_or(Duration::ZERO))
        }
    }
}

/// A reset as OpenAI writes it (a Go duration: `1s`, `6m0s`, `1m30.5s`, `20ms`) or as
/// Anthropic does (an RFC 3339 time).
fn reset_in(value: &str, now: SystemTime) -> Option<Duration> {
    go_duration(value).or_else(|| {
        let at = humantime::parse_rfc3339_weak(value).ok()?;
        Some(at.duration_since(now).unwrap_or(Duration::ZERO))
    })
}

fn go_duration(value: &str) -> Option<Duration> {
    let mut rest = value;
    let mut total = 0.0;
    while !rest.is_empty() {
        let number_end = rest.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
        let number: f64 = rest[..number_end].parse().ok()?;
        rest = &rest[number_end..];
        let unit_end = rest.find(|c: char| c.is_ascii_digit() || c == '.').unwrap_or(rest.len());
        let seconds = match &rest[..unit_end] {
            "h" => 3600.0,
            "m" => 60.0,
            "s" => 1.0,
            "ms" => 1e-3,
            "us" | "µs" => 1e-6,
            "ns" => 1e-9,
            _ => return None,
        };
        total += number * seconds;
        rest = &rest[unit_end..];
    }
    Duration::try_from_secs_f64(total).ok().filter(|_| !value.is_empty())
}

#[cfg(test)]
mod tests {
    use reqwest::header::{HeaderName, HeaderValue};

    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        pairs
            .iter()
            .map(|(k, v)| (HeaderName::from_bytes(k.as_bytes()).unwrap(), HeaderValue::from_str(v).unwrap()))
            .collect()
    }

    #[test]
    fn retry_after_in_milliseconds_seconds_or_as_an_http_date() {
        let now = httpdate::parse_http_date("Wed, 21 Oct 2026 07:28:00 GMT").unwrap();
        let at = |pairs| retry_after_at(&headers(pairs), now);
        assert_eq!(at(&[("retry-after", "3")]), Some(Duration::from_secs(3)));
        assert_eq!(at(&[("retry-after", "0.5")]), Some(Duration::from_millis(500)));
        assert_eq!(at(&[("retry-after", "Wed, 21 Oct 2026 07:28:42 GMT")]), Some(Duration::from_secs(42)));
        assert_eq!(at(&[("retry-after", "Wed, 21 Oct 2026 07:27:00 GMT")]), Some(Duration::ZERO), "in the past");
        assert_eq!(at(&[("retry-after", "3"), ("retry-after-ms", "250")]), Some(Duration::from_millis(250)));
        assert_eq!(at(&[("retry-after", "soon")]), None);
        assert_eq!(at(&[]), None);
    }

    #[test]
    fn openai_budgets_with_go_durations() {
        let limits = RateLimits::from_headers(&headers(&[
            ("x-ratelimit-limit-requests", "500"),
            ("x-ratelimit-remaining-requests", "2"),
            ("x-ratelimit-reset-requests", "1m30.5s"),
            ("x-ratelimit-limit-tokens", "30000"),
            ("x-ratelimit-remaining-tokens", "29000"),
            ("x-ratelimit-reset-tokens", "20ms"),
        ]));
        assert_eq!(
            limits.requests,
            Some(Budget { limit: Some(500), remaining: 2, reset: Some(Duration::from_secs_f64(90.5)) })
        );
        assert_eq!(limits.tokens.unwrap().reset, Some(Duration::from_millis(20)));
        // Two requests left: enough for one other in flight, not for two.
        assert_eq!(limits.wait_before_next(1), None);
        assert_eq!(limits.wait_before_next(2), Some(MAX_PAUSE), "90.5 s, capped");
        for (text, expected) in [("6m0s", 360.0), ("1s", 1.0), ("0s", 0.0), ("2h1m", 7260.0), ("1.5ms", 0.0015)] {
            assert_eq!(go_duration(text), Some(Duration::from_secs_f64(expected)), "{text}");
        }
        for bad in ["", "5", "s", "1x", "1.2.3s"] {
            assert_eq!(go_duration(bad), None, "{bad}");
        }
    }

    #[test]
    fn anthropic_budgets_with_rfc3339_resets_and_the_tightest_token_budget() {
        let now = humantime::parse_rfc3339("2026-11-25T12:00:00Z").unwrap();
        let limits = RateLimits::at(
            &headers(&[
                ("anthropic-ratelimit-requests-limit", "50"),
                ("anthropic-ratelimit-requests-remaining", "40"),
                ("anthropic-ratelimit-requests-reset", "2026-11-25T12:00:10Z"),
                ("anthropic-ratelimit-input-tokens-limit", "40000"),
                ("anthropic-ratelimit-input-tokens-remaining", "1000"),
                ("anthropic-ratelimit-input-tokens-reset", "2026-11-25T12:00:07Z"),
                ("anthropic-ratelimit-output-tokens-limit", "8000"),
                ("anthropic-ratelimit-output-tokens-remaining", "7000"),
                ("anthropic-ratelimit-output-tokens-reset", "2026-11-25T12:00:01Z"),
            ]),
            now,
        );
        assert_eq!(limits.requests.unwrap().reset, Some(Duration::from_secs(10)));
        // 1,000 of 40,000 input tokens (2.5%) is below the reserve: wait for that reset.
        assert_eq!(limits.tokens.unwrap().remaining, 1000);
        assert_eq!(limits.wait_before_next(0), Some(Duration::from_secs(7)));
    }

    #[test]
    fn no_headers_no_wait() {
        let limits = RateLimits::from_headers(&HeaderMap::new());
        assert_eq!(limits, RateLimits::default());
        assert_eq!(limits.wait_before_next(100), None);
    }
}
