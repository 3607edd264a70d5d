//! The model providers evalgate speaks to, and everything it knows about each: its name in
//! a suite, its endpoint and key conventions, the wire protocol it speaks, and where the
//! cassette's model endpoint (`sut/model_endpoint.rs`) serves it to a command agent. Adding a
//! provider is a variant here (and its arms below: the compiler lists each) plus its wire
//! file; nothing else names a provider.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::anthropic::Anthropic;
use super::client::LlmClient;
use super::openai::OpenAi;
use super::openai_responses::OpenAiResponses;
use super::wire::HttpSettings;

/// The model's provider: `openai` (the Chat Completions API, which every OpenAI-compatible
/// server speaks too: vLLM, Ollama, llama.cpp, LiteLLM, OpenRouter; point `base_url` at
/// it), `openai-responses` (OpenAI's Responses API, `/v1/responses`, with OpenAI's base URL
/// and key) or `anthropic` (the Messages API).
//  Variants carry no doc comments, so the schema lists the names as one `enum`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum Provider {
    #[serde(rename = "openai")]
    OpenAi,
    #[serde(rename = "anthropic")]
    Anthropic,
    #[serde(rename = "openai-responses")]
    OpenAiResponses,
}

impl Provider {
    pub const ALL: [Provider; 3] = [Provider::OpenAi, Provider::Anthropic, Provider::OpenAiResponses];

    /// Its name in a suite, in messages and in cache keys.
    pub const fn label(self) -> &'static str {
        match self {
            Provider::OpenAi => "openai",
            Provider::Anthropic => "anthropic",
            Provider::OpenAiResponses => "openai-responses",
        }
    }

    /// The provider whose endpoint this one's is: its base URL, key, headers and path below
    /// the cassette's model endpoint. OpenAI's Responses API is below OpenAI's base URL, with
    /// its key: an SDK reaches both from `OPENAI_BASE_URL`, so the model endpoint serves it
    /// there (and records it as OpenAI's traffic).
    pub const fn endpoint_owner(self) -> Provider {
        match self {
            Provider::OpenAiResponses => Provider::OpenAi,
            other => other,
        }
    }

    /// The providers that own an endpoint, each served below its own path by the model endpoint.
    pub fn endpoints() -> impl Iterator<Item = Provider> {
        Provider::ALL.into_iter().filter(|p| p.endpoint_owner() == *p)
    }

    pub fn from_label(label: &str) -> Option<Provider> {
        Provider::ALL.into_iter().find(|p| p.label() == label)
    }

    /// Every provider's name, for messages: `openai, anthropic, openai-responses`.
    pub fn labels() -> String {
        Provider::ALL.map(Provider::label).join(", ")
    }

    /// The environment variable holding the API key when the suite names none.
    pub const fn default_api_key_env(self) -> &'static str {
        match self.endpoint_owner() {
            Provider::Anthropic => "ANTHROPIC_API_KEY",
            _ => "OPENAI_API_KEY",
        }
    }

    /// The variable the provider's SDKs read the endpoint from, as evalgate does when the
    /// suite sets no `base_url`.
    pub const fn base_url_env(self) -> &'static str {
        match self.endpoint_owner() {
            Provider::Anthropic => "ANTHROPIC_BASE_URL",
            _ => "OPENAI_BASE_URL",
        }
    }

    /// The official endpoint.
    pub const fn default_base_url(self) -> &'static str {
        match self.endpoint_owner() {
            Provider::Anthropic => "https://api.anthropic.com",
            _ => "https://api.openai.com/v1",
        }
    }

    /// The header that carries `api_key`.
    pub fn auth_header(self, api_key: &str) -> (String, String) {
        match self.endpoint_owner() {
            Provider::Anthropic => ("x-api-key".to_owned(), api_key.to_owned()),
            _ => ("authorization".to_owned(), format!("Bearer {api_key}")),
        }
    }

    /// Where the cassette's model endpoint serves the provider, below its secret prefix: the
    /// agent's SDK is handed `http://127.0.0.1:PORT/SECRET/{endpoint_path}` as its base URL
    /// ([`Provider::base_url_env`]), and its requests come back below it.
    pub const fn endpoint_path(self) -> &'static str {
        match self.endpoint_owner() {
            Provider::Anthropic => "anthropic",
            _ => "openai/v1",
        }
    }

    /// The prefix of the provider's own request headers (API version, betas), which the
    /// model endpoint forwards upstream when it records; no other header is forwarded.
    pub const fn header_prefix(self) -> &'static str {
        match self.endpoint_owner() {
            Provider::Anthropic => "anthropic-",
            _ => "openai-",
        }
    }

    /// A client speaking the provider's wire protocol.
    pub fn client(self, http: HttpSettings) -> Box<dyn LlmClient> {
        match self {
            Provider::OpenAi => Box::new(OpenAi { http }),
            Provider::Anthropic => Box::new(Anthropic { http }),
            Provider::OpenAiResponses => Box::new(OpenAiResponses { http }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_label_is_the_name_in_a_suite() {
        for provider in Provider::ALL {
            assert_eq!(serde_json::to_value(provider).unwrap(), provider.label());
            assert_eq!(Provider::from_label(provider.label()), Some(provider));
        }
        assert_eq!(Provider::from_label("open_ai"), None);
        assert_eq!(Provider::labels(), "openai, anthropic, openai-responses");
    }

    /// The endpoint routes a request by the first path that starts it: one provider's path
    /// may not start another's, or the second would never be reached.
    #[test]
    fn no_endpoint_path_starts_another() {
        for a in Provider::endpoints() {
            for b in Provider::endpoints().filter(|b| *b != a) {
                assert!(
                    !format!("{}/", b.endpoint_path()).starts_with(&format!("{}/", a.endpoint_path())),
                    "{a:?} {b:?}"
                );
                assert_ne!(a.base_url_env(), b.base_url_env());
                assert_ne!(a.default_api_key_env(), b.default_api_key_env());
            }
        }
    }

    /// A provider sharing another's endpoint shares all of it: the model endpoint serves
    /// it below the owner's path, with the owner's variables, key header and headers.
    #[test]
    fn a_provider_sharing_an_endpoint_shares_all_of_it() {
        let p = Provider::OpenAiResponses;
        let owner = p.endpoint_owner();
        assert_eq!(owner, Provider::OpenAi);
        assert!(!Provider::endpoints().any(|e| e == p));
        assert_eq!(
            (p.endpoint_path(), p.base_url_env(), p.default_api_key_env(), p.default_base_url(), p.header_prefix()),
            (
                owner.endpoint_path(),
                owner.base_url_env(),
                owner.default_api_key_env(),
                owner.default_base_url(),
                owner.header_prefix()
            )
        );
        assert_eq!(p.auth_header("k"), owner.auth_header("k"));
    }
}
