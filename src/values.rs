//! Value types as written in suite files, shared by every kind's raw keys: durations and
//! scalars. A leaf: it imports nothing above it.

use std::fmt;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde::de::{self, Deserializer, Visitor};

/// A string, number or boolean, kept as text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scalar(pub String);

impl<'de> Deserialize<'de> for Scalar {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ScalarVisitor;
        impl Visitor<'_> for ScalarVisitor {
            type Value = Scalar;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string, number or boolean")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Scalar, E> {
                Ok(Scalar(v.to_owned()))
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<Scalar, E> {
                Ok(Scalar(v.to_string()))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Scalar, E> {
                Ok(Scalar(v.to_string()))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Scalar, E> {
                Ok(Scalar(v.to_string()))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Scalar, E> {
                Ok(Scalar(v.to_string()))
            }
        }
        deserializer.deserialize_any(ScalarVisitor)
    }
}

impl JsonSchema for Scalar {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Scalar".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({"type": ["string", "number", "boolean"]})
    }
}

/// A duration such as `30s`, `500ms` or `2m`; a bare number is seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawDuration(pub Duration);

impl<'de> Deserialize<'de> for RawDuration {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct DurationVisitor;
        impl Visitor<'_> for DurationVisitor {
            type Value = RawDuration;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a duration such as 30s, 500ms or 2m")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<RawDuration, E> {
                humantime::parse_duration(v)
                    .map(RawDuration)
                    .map_err(|_| E::custom(format!("invalid duration `{v}`: expected e.g. 30s, 500ms or 2m")))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<RawDuration, E> {
                Ok(RawDuration(Duration::from_secs(v)))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<RawDuration, E> {
                u64::try_from(v)
                    .map(|s| RawDuration(Duration::from_secs(s)))
                    .map_err(|_| E::custom("a duration cannot be negative"))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<RawDuration, E> {
                Duration::try_from_secs_f64(v)
                    .map(RawDuration)
                    .map_err(|_| E::custom(format!("invalid duration `{v}`")))
            }
        }
        deserializer.deserialize_any(DurationVisitor)
    }
}

impl JsonSchema for RawDuration {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Duration".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "A duration such as 30s, 500ms or 2m; a number is seconds",
            "type": ["string", "number"]
        })
    }
}
