//! Token prices, to turn usage into cost. A small built-in table we maintain (each entry
//! with its source and date), overridden by the suite's `pricing:` block and `--pricing FILE`.
//! Models match by the longest prefix.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::types::TokenUsage;
use crate::values::NonNegative;

/// USD per million tokens. Each price is a `NonNegative`: a negative or infinite price
/// would make costs negative or infinite, and a cost gate pass on them.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Price {
    /// USD per million input (prompt) tokens.
    pub input_per_mtok: NonNegative,
    /// USD per million output (completion) tokens.
    pub output_per_mtok: NonNegative,
    /// Default: the input price.
    pub cache_read_per_mtok: Option<NonNegative>,
    /// Default: the input price.
    pub cache_write_per_mtok: Option<NonNegative>,
}

impl Price {
    /// Cached and cache-writing input tokens are priced apart from the rest of the input.
    pub fn cost(&self, u: &TokenUsage) -> f64 {
        let plain = u.input.saturating_sub(u.cache_read + u.cache_write) as f64;
        let input = self.input_per_mtok.get();
        let read = self.cache_read_per_mtok.map_or(input, NonNegative::get);
        let write = self.cache_write_per_mtok.map_or(input, NonNegative::get);
        (plain * input
            + u.cache_read as f64 * read
            + u.cache_write as f64 * write
            + u.output as f64 * self.output_per_mtok.get())
            / 1e6
    }
}

struct Builtin {
    prefix: &'static str,
    price: Price,
}

const fn p(input: f64, output: f64, read: f64, write: f64) -> Price {
    Price {
        input_per_mtok: NonNegative::of(input),
        output_per_mtok: NonNegative::of(output),
        cache_read_per_mtok: Some(NonNegative::of(read)),
        cache_write_per_mtok: Some(NonNegative::of(write)),
    }
}

/// Sources: https://openai.com/api/pricing/ and https://www.anthropic.com/pricing#api,
/// as published on 2025-06-01. Override with `pricing:` when your contract differs.
pub const PRICES_AS_OF: &str = "2025-06-01";
const BUILTIN: &[Builtin] = &[
    Builtin { prefix: "gpt-4o-mini", price: p(0.15, 0.60, 0.075, 0.15) },
    Builtin { prefix: "gpt-4o", price: p(2.50, 10.00, 1.25, 2.50) },
    Builtin { prefix: "gpt-4.1-nano", price: p(0.10, 0.40, 0.025, 0.10) },
    Builtin { prefix: "gpt-4.1-mini", price: p(0.40, 1.60, 0.10, 0.40) },
    Builtin { prefix: "gpt-4.1", price: p(2.00, 8.00, 0.50, 2.00) },
    Builtin { prefix: "o3-mini", price: p(1.10, 4.40, 0.55, 1.10) },
    Builtin { prefix: "o4-mini", price: p(1.10, 4.40, 0.275, 1.10) },
    // Embeddings: input tokens only.
    Builtin { prefix: "text-embedding-3-small", price: p(0.02, 0.0, 0.02, 0.02) },
    Builtin { prefix: "text-embedding-3-large", price: p(0.13, 0.0, 0.13, 0.13) },
    Builtin { prefix: "text-embedding-ada-002", price: p(0.10, 0.0, 0.10, 0.10) },
    Builtin { prefix: "claude-3-haiku", price: p(0.25, 1.25, 0.03, 0.30) },
    Builtin { prefix: "claude-3-5-haiku", price: p(0.80, 4.00, 0.08, 1.00) },
    Builtin { prefix: "claude-3-5-sonnet", price: p(3.00, 15.00, 0.30, 3.75) },
    Builtin { prefix: "claude-3-7-sonnet", price: p(3.00, 15.00, 0.30, 3.75) },
    Builtin { prefix: "claude-sonnet-4", price: p(3.00, 15.00, 0.30, 3.75) },
    Builtin { prefix: "claude-opus-4", price: p(15.00, 75.00, 1.50, 18.75) },
];

/// Prices by model-name prefix: overrides first, then the built-in table.
#[derive(Debug, Clone, Default)]
pub struct PriceTable {
    pub overrides: BTreeMap<String, Price>,
}

impl PriceTable {
    pub fn price(&self, model: &str) -> Option<Price> {
        let longest = |prefixes: &mut dyn Iterator<Item = (&str, Price)>| {
            prefixes
                .filter(|(prefix, _)| model.starts_with(prefix))
                .max_by_key(|(prefix, _)| prefix.len())
                .map(|(_, p)| p)
        };
        longest(&mut self.overrides.iter().map(|(k, v)| (k.as_str(), *v)))
            .or_else(|| longest(&mut BUILTIN.iter().map(|b| (b.prefix, b.price))))
    }

    /// `None` when the model has no known price.
    pub fn cost(&self, model: &str, usage: &TokenUsage) -> Option<f64> {
        self.price(model).map(|p| p.cost(usage))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn longest_prefix_and_cache_aware_cost() {
        let table = PriceTable::default();
        assert_eq!(table.price("gpt-4o-mini-2024-07-18").unwrap().input_per_mtok.get(), 0.15);
        assert_eq!(table.price("gpt-4o-2024-08-06").unwrap().input_per_mtok.get(), 2.50);
        assert!(table.price("llama3").is_none());
        // 1M input of which 400k cached, 100k output on gpt-4o: 0.6M×2.5 + 0.4M×1.25 + 0.1M×10.
        let u = TokenUsage { input: 1_000_000, output: 100_000, cache_read: 400_000, cache_write: 0, reasoning: 0 };
        assert!((table.cost("gpt-4o", &u).unwrap() - 3.0).abs() < 1e-9);
        let mut custom = PriceTable::default();
        custom.overrides.insert(
            "gpt-4o".into(),
            Price {
                input_per_mtok: NonNegative::of(1.0),
                output_per_mtok: NonNegative::of(1.0),
                cache_read_per_mtok: None,
                cache_write_per_mtok: None,
            },
        );
        assert!((custom.cost("gpt-4o-mini", &u).unwrap() - 1.1).abs() < 1e-9);
    }
}
