//! Value types as written in suite files, shared by every kind's raw keys: durations,
//! scalars and bounded numbers. A leaf: it imports nothing above it.

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

/// A figure over a set whose members may each be unknown (a cost not reported, a latency
/// a replay did not measure): known only when every member is. A figure taken over the
/// known part would stand for the whole (half the costs, one local trial's latency) and
/// pass a gate the whole would fail, so gates and comparisons take one of these, and an
/// unknown never satisfies a gate (`GateCheck::measured`, in `results`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Known<T> {
    Known(T),
    /// `unknown` of the `of` members had no value.
    Unknown {
        unknown: usize,
        of: usize,
    },
}

impl<X> Known<Vec<X>> {
    /// Every member's value, or how many were not known.
    pub fn all(members: impl IntoIterator<Item = Option<X>>) -> Self {
        let (mut values, mut unknown) = (Vec::new(), 0);
        for member in members {
            match member {
                Some(v) => values.push(v),
                None => unknown += 1,
            }
        }
        if unknown == 0 { Known::Known(values) } else { Known::Unknown { unknown, of: unknown + values.len() } }
    }
}

impl<T> Known<T> {
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Known<U> {
        match self {
            Known::Known(v) => Known::Known(f(v)),
            Known::Unknown { unknown, of } => Known::Unknown { unknown, of },
        }
    }

    /// The value, forgetting how many members were unknown.
    pub fn known(self) -> Option<T> {
        match self {
            Known::Known(v) => Some(v),
            Known::Unknown { .. } => None,
        }
    }
}

/// `timeout: none`: a hundred years, which deadlines (an instant plus the timeout) can add
/// without overflowing, as they could not `Duration::MAX`.
pub const NO_LIMIT: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

/// A duration such as `30s`, `500ms` or `2m`; a bare number is seconds; `none` is no limit
/// (as an mcpchecker agent without `limits.timeout` has).
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
                if v == "none" {
                    return Ok(RawDuration(NO_LIMIT));
                }
                humantime::parse_duration(v)
                    .map(RawDuration)
                    .map_err(|_| E::custom(format!("invalid duration `{v}`: expected e.g. 30s, 500ms, 2m or none")))
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
            "description": "A duration such as 30s, 500ms or 2m; a number is seconds; none is no limit",
            "type": ["string", "number"]
        })
    }
}

/// `Display` for enums of names: the name as written in suites and reports (their serde name).
macro_rules! display_as_written {
    ($($t:ty),*) => {$(
        impl std::fmt::Display for $t {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                serde::Serialize::serialize(self, f)
            }
        }
    )*};
}
pub(crate) use display_as_written;

/// A number with bounds as a type: deserializing rejects a value outside them with a
/// message that gives the bounds, the schema carries them, and the command line parses it.
macro_rules! bounded {
    ($name:ident, $doc:literal, min: $min:expr, max: $max:expr, $bounds:literal) => {
        #[doc = $doc]
        #[derive(Debug, Clone, Copy, PartialEq, PartialOrd, serde::Serialize)]
        #[serde(transparent)]
        pub struct $name(f64);

        impl $name {
            pub fn new(value: f64) -> Result<Self, String> {
                if value.is_finite() && ($min..=$max).contains(&value) {
                    Ok(Self(value))
                } else {
                    Err(format!("must be {}, got {value}", $bounds))
                }
            }

            pub fn get(self) -> f64 {
                self.0
            }

            /// For constants: a value out of bounds does not compile.
            pub const fn of(value: f64) -> Self {
                assert!(value.is_finite() && value >= $min && value <= $max, "out of bounds");
                Self(value)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                Self::new(f64::deserialize(deserializer)?).map_err(de::Error::custom)
            }
        }

        impl JsonSchema for $name {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($name).into()
            }
            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                let mut schema = schemars::json_schema!({"description": $doc, "type": "number", "minimum": $min});
                if $max < f64::INFINITY {
                    schema.insert("maximum".into(), $max.into());
                }
                schema
            }
        }

        impl std::str::FromStr for $name {
            type Err = String;
            fn from_str(s: &str) -> Result<Self, String> {
                Self::new(s.trim().parse().map_err(|_| format!("`{s}` is not a number"))?)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Display::fmt(&self.0, f)
            }
        }
    };
}

bounded!(Rate, "A score, rate or share: a number from 0 to 1.", min: 0.0, max: 1.0, "between 0 and 1");
bounded!(Significance, "A one-sided significance level: from 0.0001 to 0.5.", min: 0.0001, max: 0.5, "between 0.0001 and 0.5");
bounded!(NonNegative, "A cost, a percentage or a weight: a number of 0 or more.", min: 0.0, max: f64::INFINITY, "0 or more");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounded_numbers_reject_what_is_outside_with_the_bounds() {
        assert_eq!(serde_json::from_str::<Rate>("0.5").unwrap().get(), 0.5);
        assert_eq!(serde_json::from_str::<Rate>("1").unwrap().get(), 1.0);
        let error = serde_json::from_str::<Rate>("1.5").unwrap_err().to_string();
        assert!(error.starts_with("must be between 0 and 1, got 1.5"), "{error}");
        assert_eq!("-1".parse::<NonNegative>().unwrap_err(), "must be 0 or more, got -1");
        assert_eq!("x".parse::<NonNegative>().unwrap_err(), "`x` is not a number");
        assert_eq!(serde_json::to_string(&Rate::new(0.25).unwrap()).unwrap(), "0.25");
        assert_eq!(format!("{:.2}", Rate::new(0.5).unwrap()), "0.50");
    }
}
