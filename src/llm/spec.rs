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
    /// A judge's `embedding` model.
    pub embedding: Option<Box<LlmSpec>>,
}

/// Every model key, written once, handed to the macro `$then` after `$head`: [`RawModel`]
/// is declared from this list, and so is the form as written of every type that embeds
/// one (`embeds_model!`: an agent, a judge), whose model keys sit beside its own in the
/// suite. They are not `#[serde(flatten)]`ed: serde cannot reject an unknown key through a
/// flatten, nor say where in it a value is wrong.
macro_rules! model_keys {
    ($then:ident ! { $($head:tt)* }) => {
        $then! { $($head)* ;
            /// The model's provider.
            provider: Option<$crate::llm::provider::Provider>,
            /// The model name, as the provider spells it.
            model: Option<String>,
            /// Default: $OPENAI_BASE_URL / $ANTHROPIC_BASE_URL, else the official endpoint.
            base_url: Option<String>,
            /// The environment variable holding the key (default OPENAI_API_KEY / ANTHROPIC_API_KEY).
            api_key_env: Option<String>,
            /// Sampling temperature, 0 to 2 (default: the provider's).
            temperature: Option<f64>,
            /// Most tokens of one completion.
            max_tokens: Option<u32>,
            /// Sampling seed, where the provider supports one.
            seed: Option<u64>,
            /// The system prompt.
            system: Option<String>,
            /// Extra HTTP headers of every request; values may use `{env.NAME}`.
            #[serde(default)]
            headers: BTreeMap<String, String>,
            /// Most requests in flight at once to this endpoint (default 32); fewer while it answers 429/503.
            max_concurrency: Option<NonZeroU32>,
            /// Retries of 429, 5xx and timeouts (default 2).
            retries: Option<u32>,
            /// Cache responses on disk (judges always do unless --no-cache).
            cache: Option<bool>,
        }
    };
}
pub(crate) use model_keys;

/// Declares [`RawModel`] from [`model_keys!`]'s list.
macro_rules! declare_raw_model {
    ($(#[$meta:meta])* ; $($(#[$key_meta:meta])* $key:ident : $ty:ty,)*) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
        #[serde(deny_unknown_fields)]
        pub struct RawModel {
            $($(#[$key_meta])* pub $key: $ty,)*
        }

        impl RawModel {
            /// The model keys, in the order they are written.
            pub const KEYS: &'static [&'static str] = &[$(stringify!($key)),*];

            /// The keys this one gives.
            pub fn given(&self) -> Vec<&'static str> {
                let mut given = Vec::new();
                $(if ModelKey::is_given(&self.$key) { given.push(stringify!($key)); })*
                given
            }

            /// This model (an arm's) over `base` (the suite's): each key it gives replaces the
            /// base's, `headers` entry by entry. The one merge of two models.
            #[must_use]
            pub fn over(self, base: RawModel) -> RawModel {
                RawModel { $($key: ModelKey::over(self.$key, base.$key),)* }
            }
        }
    };
}

model_keys!(declare_raw_model! {
    /// A model behind a provider, as a suite writes it: the keys a model agent, a judge and a
    /// variant arm's `model` share.
});

/// Declares a type as written that embeds a [`RawModel`] (its model keys beside its own in
/// the suite), from [`model_keys!`]'s list: `$name` with a `model` field, read through
/// `$written`, which holds every key flat and rejects unknown ones with their key path.
macro_rules! embeds_model {
    (
        $(#[$meta:meta])*
        pub struct $name:ident read as $written:ident = $written_name:literal {
            $($(#[$own_meta:meta])* pub $own:ident : $own_ty:ty,)*
        }
        ; $($(#[$key_meta:meta])* $key:ident : $key_ty:ty,)*
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, serde::Deserialize)]
        #[serde(from = $written_name)]
        pub struct $name {
            $($(#[$own_meta])* pub $own: $own_ty,)*
            /// Its model keys.
            pub model: $crate::llm::spec::RawModel,
        }

        $(#[$meta])*
        #[derive(serde::Deserialize, schemars::JsonSchema)]
        #[serde(deny_unknown_fields)]
        #[doc(hidden)]
        pub struct $written {
            $($(#[$own_meta])* $own: $own_ty,)*
            $($(#[$key_meta])* $key: $key_ty,)*
        }

        impl From<$written> for $name {
            fn from(written: $written) -> $name {
                $name {
                    $($own: written.$own,)*
                    model: $crate::llm::spec::RawModel { $($key: written.$key,)* },
                }
            }
        }

        impl schemars::JsonSchema for $name {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($name).into()
            }

            fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
                <$written as schemars::JsonSchema>::json_schema(generator)
            }
        }
    };
}
pub(crate) use embeds_model;

/// What a model key is to [`RawModel::given`] and [`RawModel::over`].
trait ModelKey {
    fn is_given(&self) -> bool;
    #[must_use]
    fn over(self, base: Self) -> Self;
}

impl<T> ModelKey for Option<T> {
    fn is_given(&self) -> bool {
        self.is_some()
    }

    fn over(self, base: Self) -> Self {
        self.or(base)
    }
}

impl ModelKey for BTreeMap<String, String> {
    fn is_given(&self) -> bool {
        !self.is_empty()
    }

    fn over(self, mut base: Self) -> Self {
        base.extend(self);
        base
    }
}

model_keys!(embeds_model! {
    /// A judge model (the model keys of a model agent, with its own `timeout` and
    /// `calibration`).
    pub struct RawJudge read as RawJudgeWritten = "RawJudgeWritten" {
        /// How long one judgement may take.
        pub timeout: Option<RawDuration>,
        /// Gate only when calibrated against human labels (`evalgate judge calibrate`): `required`,
        /// or `{file, min_kappa, min_labels, required}`. Without it the judge gates, as before.
        pub calibration: Option<crate::llm::judge_calibration::RawCalibration>,
        /// The embedding model of the graders that compare embeddings (promptfoo's `similar`
        /// and `answer-relevance`): `{provider: openai, model: text-embedding-3-large}`, with
        /// its endpoint's keys (`base_url`, `api_key_env`, `headers`, `retries`, `max_concurrency`).
        pub embedding: Option<crate::llm::spec::RawModel>,
    }
});

/// A model for an agent or a judge.
pub fn llm_spec(cx: &mut ValidateCx, raw: &RawModel, timeout: Option<RawDuration>, path: &KeyPath) -> Option<LlmSpec> {
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
    let headers = cx.env_templates(&raw.headers, Scope::Hook, &path.key("headers"));
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
        timeout: timeout.map(|d| d.0),
        calibration: None,
        embedding: None,
    })
}

#[cfg(test)]
mod tests {
    use super::RawModel;

    /// An arm's model over the suite's: what the arm gives wins, key by key; what it does not
    /// give is the base's; `headers` merge entry by entry.
    #[test]
    fn an_arms_model_replaces_only_the_keys_it_gives() {
        let base: RawModel = serde_json::from_str(
            r#"{"provider": "openai", "model": "a", "temperature": 0.5, "headers": {"X-A": "1", "X-B": "2"}}"#,
        )
        .unwrap();
        let arm: RawModel = serde_json::from_str(r#"{"model": "b", "seed": 7, "headers": {"X-B": "3"}}"#).unwrap();
        let merged = arm.over(base);
        assert_eq!(merged.model.as_deref(), Some("b"));
        assert_eq!(merged.seed, Some(7));
        assert_eq!(merged.temperature, Some(0.5));
        assert!(merged.provider.is_some());
        assert_eq!(
            merged.headers.into_iter().collect::<Vec<_>>(),
            [("X-A".into(), "1".into()), ("X-B".into(), "3".into())]
        );
    }
}
