//! A model behind a provider, as a suite names it for an agent or a judge: the keys as
//! written, and their compile step.

use std::collections::BTreeMap;
use std::num::NonZeroU32;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;

use super::provider::Provider;
use crate::source::{KeyPath, ValidateCx};
use crate::template::{Scope, Template};
use crate::values::RawDuration;

/// Requests in flight per endpoint when the suite sets no `max_concurrency`: providers
/// serve far more at once than a machine has cores, and the limiter halves it on overload.
pub const DEFAULT_MAX_CONCURRENCY: u32 = 32;

/// A model behind a provider, for an agent or a judge.
#[derive(Debug, Clone)]
pub struct LlmSpec {
    pub provider: Provider,
    pub model: String,
    /// `None`: $OPENAI_BASE_URL / $ANTHROPIC_BASE_URL, else the official endpoint.
    pub base_url: Option<Template>,
    pub api_key_env: String,
    pub temperature: Option<f64>,
    pub max_tokens: Option<u32>,
    pub seed: Option<u64>,
    pub system: Option<String>,
    pub headers: Vec<(String, Template)>,
    pub max_concurrency: u32,
    pub retries: u32,
    pub cache: bool,
    pub timeout: Option<Duration>,
    /// A judge's `calibration` (docs/llm.md "Calibrating a judge").
    pub calibration: Option<Box<crate::llm::judge_calibration::Calibrated>>,
}

/// A judge model (same keys as a model agent). The keys are repeated rather than
/// `#[serde(flatten)]`ed because serde cannot reject unknown keys through a flatten.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawJudge {
    /// How long one judgement may take.
    pub timeout: Option<RawDuration>,
    /// The model's provider.
    pub provider: Option<Provider>,
    /// The model name, as the provider spells it.
    pub model: Option<String>,
    /// Default: $OPENAI_BASE_URL / $ANTHROPIC_BASE_URL, else the official endpoint.
    pub base_url: Option<String>,
    /// The environment variable holding the key (default OPENAI_API_KEY / ANTHROPIC_API_KEY).
    pub api_key_env: Option<String>,
    /// Sampling temperature, 0 to 2 (default: the provider's).
    pub temperature: Option<f64>,
    /// Most tokens of one completion.
    pub max_tokens: Option<u32>,
    /// Sampling seed, where the provider supports one.
    pub seed: Option<u64>,
    /// The system prompt.
    pub system: Option<String>,
    /// Extra HTTP headers of every request; values may use `{env.NAME}`.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Most requests in flight at once to this endpoint (default 32); fewer while it answers 429/503.
    pub max_concurrency: Option<NonZeroU32>,
    /// Retries of 429, 5xx and timeouts (default 2).
    pub retries: Option<u32>,
    /// Cache responses on disk (judges always do unless --no-cache).
    pub cache: Option<bool>,
    /// Gate only when calibrated against human labels (`evalgate judge calibrate`): `required`,
    /// or `{file, min_kappa, min_labels, required}`. Without it the judge gates, as before.
    pub calibration: Option<crate::llm::judge_calibration::RawCalibration>,
}

/// The model keys agents and judges share, gathered for validation.
pub struct RawLlmFields<'a> {
    pub provider: Option<Provider>,
    pub model: &'a Option<String>,
    pub base_url: &'a Option<String>,
    pub api_key_env: &'a Option<String>,
    pub temperature: Option<f64>,
    pub max_tokens: Option<u32>,
    pub seed: Option<u64>,
    pub system: &'a Option<String>,
    pub headers: &'a BTreeMap<String, String>,
    pub max_concurrency: Option<NonZeroU32>,
    pub retries: Option<u32>,
    pub cache: Option<bool>,
    pub timeout: Option<RawDuration>,
}

impl RawLlmFields<'_> {
    /// Every model key, each with whether it is given: the one list of them (`timeout` is
    /// not one: a command agent has it too). A test holds `RawJudge` and `RawAgent` to it.
    pub fn keys(&self) -> [(&'static str, bool); 12] {
        [
            ("provider", self.provider.is_some()),
            ("model", self.model.is_some()),
            ("base_url", self.base_url.is_some()),
            ("api_key_env", self.api_key_env.is_some()),
            ("temperature", self.temperature.is_some()),
            ("max_tokens", self.max_tokens.is_some()),
            ("seed", self.seed.is_some()),
            ("system", self.system.is_some()),
            ("headers", !self.headers.is_empty()),
            ("max_concurrency", self.max_concurrency.is_some()),
            ("retries", self.retries.is_some()),
            ("cache", self.cache.is_some()),
        ]
    }
}

/// `llm()` on a raw type with the model keys (agents, judges).
macro_rules! llm_fields {
    ($t:ty) => {
        impl $t {
            pub fn llm(&self) -> $crate::llm::spec::RawLlmFields<'_> {
                $crate::llm::spec::RawLlmFields {
                    provider: self.provider,
                    model: &self.model,
                    base_url: &self.base_url,
                    api_key_env: &self.api_key_env,
                    temperature: self.temperature,
                    max_tokens: self.max_tokens,
                    seed: self.seed,
                    system: &self.system,
                    headers: &self.headers,
                    max_concurrency: self.max_concurrency,
                    retries: self.retries,
                    cache: self.cache,
                    timeout: self.timeout,
                }
            }
        }
    };
}
pub(crate) use llm_fields;
llm_fields!(RawJudge);

/// A model for an agent or a judge.
pub fn llm_spec(cx: &mut ValidateCx, raw: &RawLlmFields<'_>, path: &KeyPath) -> Option<LlmSpec> {
    let provider = raw.provider;
    if provider.is_none() {
        cx.error(path, format!("a model needs `provider` ({})", Provider::labels()));
    }
    let model = match raw.model.as_deref() {
        Some(model) => cx.constant(model, &path.key("model"), "a model name"),
        None => None,
    };
    if raw.model.is_none() {
        cx.error(path, "a model needs `model`");
    } else if model.as_deref().is_some_and(str::is_empty) {
        cx.error(&path.key("model"), "a model needs `model`: this one is empty");
    }
    if let Some(t) = raw.temperature
        && !(0.0..=2.0).contains(&t)
    {
        cx.error(&path.key("temperature"), format!("temperature must be between 0 and 2, got {t}"));
    }
    let base_url = raw.base_url.as_deref().map(|b| cx.template(b, Scope::Hook, &path.key("base_url")));
    let headers = cx.env_templates(raw.headers, Scope::Hook, &path.key("headers"));
    let provider = provider?;
    Some(LlmSpec {
        provider,
        model: model?,
        base_url: match base_url {
            Some(b) => Some(b?),
            None => None,
        },
        api_key_env: raw.api_key_env.clone().unwrap_or_else(|| provider.default_api_key_env().to_owned()),
        temperature: raw.temperature,
        max_tokens: raw.max_tokens,
        seed: raw.seed,
        system: raw.system.clone(),
        headers,
        max_concurrency: raw.max_concurrency.map_or(DEFAULT_MAX_CONCURRENCY, std::num::NonZeroU32::get),
        retries: raw.retries.unwrap_or(2),
        cache: raw.cache.unwrap_or(false),
        timeout: raw.timeout.map(|d| d.0),
        calibration: None,
    })
}
