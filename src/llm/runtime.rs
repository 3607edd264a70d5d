//! What a run needs to talk to models: one client per provider endpoint (with its
//! concurrency limit and retries), the price table and the response cache.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::cache::ResponseCache;
use super::client::{LlmClient, LlmError};
use super::embeddings::{Embedded, EmbeddingRequest};
use super::limiter::EndpointLimiter;
use super::pricing::PriceTable;
use super::retry::Retrying;
use super::types::{ChatRequest, ChatResponse, TokenUsage};
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
        let traffic = Traffic::Model(spec.provider.label());
        let asked = self.ask(spec, traffic, request, use_cache, |client| async move { client.complete(request).await });
        let Asked { answer, cached, replayed } = asked.await?;
        let cost_usd = if cached { Some(0.0) } else { self.priced(spec, &answer.model, &answer.usage) };
        Ok(Completion { response: answer, cost_usd, cached, replayed })
    }

    /// The embedding of `request.input` by the model of `spec` (the judge's `embedding`),
    /// through the same walk as a completion: the cassette (`embeddings:PROVIDER` entries),
    /// else the cache when `use_cache`, else the endpoint with its retries and limit.
    pub async fn embed(
        &self,
        spec: &LlmSpec,
        request: &EmbeddingRequest,
        use_cache: bool,
    ) -> Result<Embedded, LlmError> {
        let traffic = Traffic::Embeddings(spec.provider.label());
        let asked = self.ask(spec, traffic, request, use_cache, |client| async move { client.embed(request).await });
        let Asked { answer, cached, replayed } = asked.await?;
        let cost_usd = if cached { Some(0.0) } else { self.priced(spec, &answer.model, &answer.usage) };
        Ok(Embedded { response: answer, cost_usd, cached, replayed })
    }

    /// The one walk of every model request: with a cassette, answered from it or asked live
    /// and recorded (a request it does not hold in replay is an error, never a live call;
    /// keyed on the traffic and the request, never on the endpoint, a header or a key);
    /// else from the cache when `use_cache`, or asked and cached.
    async fn ask<Q, A, F>(
        &self,
        spec: &LlmSpec,
        traffic: Traffic,
        request: &Q,
        use_cache: bool,
        live: impl FnOnce(Arc<dyn LlmClient>) -> F,
    ) -> Result<Asked<A>, LlmError>
    where
        Q: Serialize,
        A: Serialize + DeserializeOwned + Send + 'static,
        F: Future<Output = Result<A, LlmError>>,
    {
        let base_url = base_url(spec);
        if let Some(cassette) = &self.cassette {
            let as_json = serde_json::to_value(request).expect("a request serializes");
            let door = ModelDoor(traffic);
            let passed = crate::cassette::pass(cassette, &door, &as_json, || live(self.client(spec, base_url))).await?;
            return Ok(Asked { answer: passed.answer, cached: false, replayed: passed.replayed });
        }
        let key = ResponseCache::key(&traffic.label(), &base_url, request);
        // Cache files are read and written off the async threads.
        let cache = self.cache.clone().filter(|_| use_cache).zip(key);
        if let Some((cache, key)) = cache.clone()
            && let Ok(Some(hit)) = tokio::task::spawn_blocking(move || cache.get::<A>(&key)).await
        {
            return Ok(Asked { answer: hit, cached: true, replayed: false });
        }
        let answer = live(self.client(spec, base_url)).await?;
        let Some((cache, key)) = cache else { return Ok(Asked { answer, cached: false, replayed: false }) };
        let entry = serde_json::to_value(&answer).expect("an answer serializes");
        let _ = tokio::task::spawn_blocking(move || cache.put(&key, &entry)).await;
        Ok(Asked { answer, cached: false, replayed: false })
    }

    /// What an answer cost: by the model that says it answered, else the one asked. A replay
    /// is priced as the answer was: a cost gate (a budget, an arm's cost) must not pass on a
    /// replay's $0; what the run spent is the cassette's line.
    fn priced(&self, spec: &LlmSpec, answered: &str, usage: &TokenUsage) -> Option<f64> {
        let model = if answered.is_empty() { &spec.model } else { answered };
        self.prices.cost(model, usage).or_else(|| self.prices.cost(&spec.model, usage))
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

/// An answer through [`LlmRuntime::ask`], and where it came from.
struct Asked<A> {
    answer: A,
    cached: bool,
    replayed: bool,
}

/// The door of evalgate's own model requests (its model agents' and judges' completions,
/// its judges' embeddings), by the traffic they are.
struct ModelDoor(Traffic);

impl Door for ModelDoor {
    fn traffic(&self) -> Traffic {
        self.0.clone()
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
