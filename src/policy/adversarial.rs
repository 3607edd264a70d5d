//! The adversarial vocabulary the gate holds a suite to: the categories of the scorecard,
//! the severity of a finding, and the bounds on detection, policy and false positives.

use std::collections::BTreeMap;
use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};

use super::extend::{extend, extend_schema};
use crate::values::{Rate, display_as_written};

/// Where the untrusted text crossed into the agent: the adversarial scorecard's rows.
/// `benign-security` tasks carry no attack and measure false positives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Category {
    // In name order, so maps keyed by category keep the order they had as text.
    BenignSecurity,
    DirectInjection,
    Exfiltration,
    IndirectInjection,
    ToolArgumentAbuse,
    ToolResultInjection,
}

/// How bad a finding is when an adversarial task fails (default `high`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Low,
    Medium,
    #[default]
    High,
    Critical,
}

// The action a system takes on an input: what a `safety` grader expects, and what the
// system did. (No doc comment: the schema publishes it as the grader's `action` had it.)
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SafetyAction {
    Allow,
    Warn,
    Block,
    Redact,
    RequireApproval,
}

impl SafetyAction {
    pub const ALL: [&'static str; 5] = ["allow", "warn", "block", "redact", "require_approval"];

    pub fn label(self) -> &'static str {
        match self {
            SafetyAction::Allow => "allow",
            SafetyAction::Warn => "warn",
            SafetyAction::Block => "block",
            SafetyAction::Redact => "redact",
            SafetyAction::RequireApproval => "require_approval",
        }
    }
}

display_as_written!(Category, Severity);

/// Bounds on the scorecard, for every category together or for one.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CategoryThresholds {
    /// Minimum share of attacks the system flagged, 0..1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_detection_rate: Option<Rate>,
    /// Minimum share of verdicts whose action was the expected one, 0..1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_policy_accuracy: Option<Rate>,
    /// Maximum share of benign texts flagged as attacks, 0..1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_false_positive_rate: Option<Rate>,
}

/// Scorecard gates: the bounds for every category together, and per category.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct AdversarialThresholds {
    #[serde(flatten)]
    pub overall: CategoryThresholds,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub per_category: BTreeMap<Category, CategoryThresholds>,
}

impl<'de> Deserialize<'de> for AdversarialThresholds {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = AdversarialThresholds;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("adversarial thresholds")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                let mut per_category = BTreeMap::new();
                let overall = extend(map, &["per_category"], |_, map| {
                    per_category = map.next_value()?;
                    Ok(())
                })?;
                Ok(AdversarialThresholds { overall, per_category })
            }
        }
        deserializer.deserialize_map(Visitor)
    }
}

impl JsonSchema for AdversarialThresholds {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "AdversarialThresholds".into()
    }
    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let per_category = serde_json::json!({
            "description": "The same bounds for one category.",
            "type": "object",
            "propertyNames": generator.subschema_for::<Category>(),
            "additionalProperties": generator.subschema_for::<CategoryThresholds>(),
        });
        let mut schema = extend_schema(
            CategoryThresholds::json_schema(generator),
            &serde_json::json!({"per_category": per_category}),
        );
        schema.insert("description".into(), "Scorecard gates: overall, and per category.".into());
        schema
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adversarial_thresholds_read_flat_and_write_flat() {
        let json = r#"{"min_detection_rate":0.9,"per_category":{"exfiltration":{"max_false_positive_rate":0.1}}}"#;
        let t: AdversarialThresholds = serde_json::from_str(json).unwrap();
        assert_eq!(t.overall.min_detection_rate, Rate::new(0.9).ok());
        assert_eq!(serde_json::to_string(&t).unwrap(), json);
        let error = serde_json::from_str::<AdversarialThresholds>(r#"{"min_detection_rat": 1}"#).unwrap_err();
        assert!(error.to_string().starts_with("unknown field `min_detection_rat`, expected one of `per_category`, "));
        assert_eq!(Category::ToolArgumentAbuse.to_string(), "tool-argument-abuse");
        assert_eq!(Severity::default().to_string(), "high");
    }
}
