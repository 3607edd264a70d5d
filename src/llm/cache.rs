//! The response cache: judge responses and embeddings (and, with `cache: true`, agent responses) on disk
//! under `.evalgate/cache/`, keyed by a hash of the exact request. A hit costs nothing.

use std::path::PathBuf;

use serde::Serialize;
use serde::de::DeserializeOwned;
use sha2::{Digest, Sha256};

#[derive(Debug, Clone)]
pub struct ResponseCache {
    pub dir: PathBuf,
}

impl ResponseCache {
    /// The key covers the kind of traffic (the provider's label for a chat, `embeddings:…`
    /// for an embedding) and the endpoint as well as the request (never the API key); `None`
    /// if the request cannot be serialized (then it is not cached at all).
    pub fn key(provider: &str, base_url: &str, request: &impl Serialize) -> Option<String> {
        let mut hasher = Sha256::new();
        hasher.update(provider.as_bytes());
        hasher.update([0]);
        hasher.update(base_url.as_bytes());
        hasher.update([0]);
        hasher.update(serde_json::to_vec(request).ok()?);
        Some(hasher.finalize().iter().map(|b| format!("{b:02x}")).collect())
    }

    /// A missing, unreadable, truncated or corrupt entry is a miss: the request is made
    /// again and `put` replaces the entry.
    pub fn get<T: DeserializeOwned>(&self, key: &str) -> Option<T> {
        let text = crate::files::read::text(&self.dir.join(format!("{key}.json")), crate::files::read::CACHE).ok()?;
        serde_json::from_str(&text).ok()
    }

    /// Best effort: a cache that cannot be written only costs a later re-request. Written
    /// whole (a temp file in the cache directory, renamed), so runs sharing the cache never
    /// read a torn entry; not synced to disk (an entry lost to a power cut is only a miss).
    pub fn put(&self, key: &str, response: &impl Serialize) {
        if std::fs::create_dir_all(&self.dir).is_ok()
            && let Ok(json) = serde_json::to_vec(response)
        {
            let _ = crate::files::write_atomic_unsynced(&self.dir.join(format!("{key}.json")), &json);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::types::{ChatMessage, ChatRequest, Role};

    #[test]
    fn different_requests_get_different_keys() {
        let mut a = ChatRequest {
            model: "m".into(),
            system: None,
            messages: vec![ChatMessage::text(Role::User, "one")],
            tools: Vec::new(),
            force_tool: None,
            tool_choice: None,
            temperature: None,
            max_tokens: None,
            seed: None,
        };
        let first = ResponseCache::key("openai", "http://x", &a).unwrap();
        a.messages.push(ChatMessage::text(Role::User, "two"));
        assert_ne!(first, ResponseCache::key("openai", "http://x", &a).unwrap());
        assert_ne!(first, ResponseCache::key("anthropic", "http://x", &a).unwrap());
    }
}
