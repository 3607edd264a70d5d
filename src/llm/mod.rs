//! Language models: the wire protocols (OpenAI-compatible Chat Completions, OpenAI's Responses
//! API, Anthropic Messages and OpenAI-compatible embeddings) behind one small `LlmClient` trait,
//! with retries, prices and a response cache.

pub mod anthropic;
pub mod cache;
pub mod client;
pub mod embeddings;
pub mod judge_calibration;
pub mod limiter;
pub mod openai;
pub mod openai_responses;
pub mod pricing;
pub mod provider;
pub mod rate_limits;
pub mod retry;
pub mod runtime;
pub mod spec;
pub mod types;
mod wire;

pub use wire::{HttpSettings, client, describe_reqwest};
