//! What a run needs to talk to models: one client per provider endpoint (with its
//! concurrency limit and retries), the price table and the response cache.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::cache::ResponseCache;
use super::client::{LlmClient, LlmError};
use super::limiter::EndpointLimiter;
use super::pricing::PriceTable;
use super::retry::Retrying;
use super::types::{ChatRequest, ChatResponse};
use super::wire::HttpSettings;
use crate::cassette::{Cassette, Door, Miss, Traffic};
use crate::llm::spec::LlmSpec;
use crate::template::env_only;

/// A model request's time limit when the agent or judge sets none.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

pub struct LlmRuntime {
    pub prices: PriceTable,
    /// `None` with --no-cache.
    pub cache: Option<ResponseCache>,
    /// The suite's cassette: every request goes through it (and not through `cache`).
    pub cassette: Option<Arc<Cassette>>,
    clients: Mutex<HashMap<String, Arc<dyn LlmClient>>>,
}

/// A model's answer and what it cost.
#[derive(Debug, Clone)]
pub struct Completion {
    pub response: ChatResponse,
    /// `None` when the model has no known price; 0 for a cache hit.
    pub cost_usd: Option<f64>,
    pub cached: bool,
    /// The answer came from the cassette: nothing was spent, and `cost_usd` is what the
    /// recorded answer cost.
    pub replayed: bool,
}

impl LlmRuntime {
    pub fn new(prices: PriceTable, cache: Option<ResponseCache>) -> Self {
        LlmRuntime { prices, cache, cassette: None, clients: Mutex::new(HashMap::new()) }
    }

    pub fn with_cassette(self, cassette: Option<Arc<Cassette>>) -> Self {
        LlmRuntime { cassette, ..self }
    }

    /// Sends `request` to the model of `spec`; `use_cache` reads and fills the cache.
    pub async fn complete(
        &self,
        spec: &LlmSpec,
        request: &ChatRequest,
        use_cache: bool,
    ) -> Result<Completion, LlmError> {
        let base_url = base_url(spec);
        if let Some(cassette) = &self.cassette {
            return self.through_cassette(cassette, spec, base_url, request).await;
        }
        let key = ResponseCache::key(spec.provider.label(), &base_url, request);
        // Cache files are read and written off the async threads.
        let cache = self.cache.clone().filter(|_| use_cache).zip(key);
        if let Some((cache, key)) = cache.clone()
            && let Ok(Some(hit)) = tokio::task::spawn_blocking(move || cache.get(&key)).await
        {
            return Ok(Completion { response: hit, cost_usd: Some(0.0), cached: true, replayed: false });
        }
        let client = self.client(spec, base_url);
        let response = client.complete(request).await?;
        if let Some((cache, key)) = cache {
            let entry = response.clone();
            let _ = tokio::task::spawn_blocking(move || cache.put(&key, &entry)).await;
        }
        Ok(self.priced(spec, response))
    }

    /// `request` answered from the cassette, or asked live and recorded; a request the
    /// cassette does not hold in replay is an error, never a live call. Keyed on the provider
    /// and the request (model, messages, tools, forced tool, sampling parameters), never on
    /// the endpoint, a header or a key.
    async fn through_cassette(
        &self,
        cassette: &Cassette,
        spec: &LlmSpec,
        base_url: String,
        request: &ChatRequest,
    ) -> Result<Completion, LlmError> {
        let as_json = serde_json::to_value(request).expect("a request serializes");
        let live = || async { self.client(spec, base_url).complete(request).await };
        let passed = crate::cassette::pass(cassette, &ModelDoor(spec.provider), &as_json, live).await?;
        // A replay is priced as the answer was: a cost gate (a budget, an arm's cost) must
        // not pass on a replay's $0; what the run spent is the cassette's line.
        Ok(Completion { replayed: passed.replayed, ..self.priced(spec, passed.answer) })
    }

    fn priced(&self, spec: &LlmSpec, response: ChatResponse) -> Completion {
        let model = if response.model.is_empty() { &spec.model } else { &response.model };
        let cost_usd =
            self.prices.cost(model, &response.usage).or_else(|| self.prices.cost(&spec.model, &response.usage));
        Completion { response, cost_usd, cached: false, replayed: false }
    }

    fn client(&self, spec: &LlmSpec, base_url: String) -> Arc<dyn LlmClient> {
        let key = format!("{}|{base_url}|{}|{}", spec.provider.label(), spec.api_key_env, spec.model);
        let mut clients = self.clients.lock().unwrap_or_else(|e| e.into_inner());
        clients
            .entry(key)
            .or_insert_with(|| {
                let timeout = spec.timeout.unwrap_or(DEFAULT_TIMEOUT);
                let http = HttpSettings {
                    base_url,
                    auth: std::env::var(&spec.api_key_env)
                        .ok()
                        .filter(|k| !k.is_empty())
                        .map(|k| spec.provider.auth_header(&k)),
                    headers: spec.headers.iter().map(|(k, t)| (k.clone(), t.render(&env_only))).collect(),
                    timeout,
                    limiter: Arc::new(EndpointLimiter::new(spec.max_concurrency as usize)),
                };
                Arc::new(Retrying { inner: spec.provider.client(http), retries: spec.retries, patience: timeout })
            })
            .clone()
    }
}

/// The door of evalgate's own model requests (its model agents' and judges'), by provider.
struct ModelDoor(super::provider::Provider);

impl Door for ModelDoor {
    fn traffic(&self) -> Traffic {
        Traffic::Model(self.0.label())
    }
}

impl From<Miss> for LlmError {
    fn from(miss: Miss) -> Self {
        LlmError::Cassette { message: miss.message }
    }
}

/// The endpoint: `base_url`, else the SDK conventions' variables, else the official one.
pub fn base_url(spec: &LlmSpec) -> String {
    if let Some(t) = &spec.base_url {
        return t.render(&env_only);
    }
    let provider = spec.provider;
    std::env::var(provider.base_url_env())
        .ok()
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| provider.default_base_url().to_owned())
}
