//! A task's trials as written (`repeat: N`, or adaptive `{min, max, adaptive: true}`, and
//! `min_pass`), and their checks, for a task or for `defaults`.

use std::num::NonZeroU32;

use schemars::JsonSchema;
use serde::Deserialize;

use crate::source::{KeyPath, ValidateCx};

/// `repeat: N`, or adaptive trials: `{min: 1, max: 8, adaptive: true}`.
#[derive(Debug, Clone, Copy, JsonSchema)]
#[serde(untagged)]
pub enum RawRepeat {
    Count(NonZeroU32),
    Adaptive(RawAdaptive),
}

#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawAdaptive {
    /// Trials every task runs (default 1).
    #[serde(default = "one")]
    pub min: NonZeroU32,
    /// Trials at most; `min_pass` counts out of these.
    pub max: NonZeroU32,
    /// Must be true: add trials only while the task's verdict is unsettled.
    pub adaptive: bool,
}

fn one() -> NonZeroU32 {
    NonZeroU32::MIN
}

/// One message for either form, rather than serde's "did not match any variant".
impl<'de> Deserialize<'de> for RawRepeat {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        const EXPECTED: &str = "expected a number of trials (1 or more) or {min, max, adaptive: true}";
        match serde_json::Value::deserialize(deserializer)? {
            serde_json::Value::Number(n) => n
                .as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .and_then(NonZeroU32::new)
                .map(RawRepeat::Count)
                .ok_or_else(|| D::Error::custom(format!("{EXPECTED}, got {n}"))),
            map @ serde_json::Value::Object(_) => {
                let adaptive: RawAdaptive =
                    serde_json::from_value(map).map_err(|e| D::Error::custom(format!("{e} ({EXPECTED})")))?;
                if !adaptive.adaptive {
                    return Err(D::Error::custom("`{min, max}` trials need `adaptive: true` (else write `repeat: N`)"));
                }
                if adaptive.min > adaptive.max {
                    return Err(D::Error::custom(format!(
                        "`min` ({}) is more than `max` ({})",
                        adaptive.min, adaptive.max
                    )));
                }
                if adaptive.max.get() > crate::stats::MOST_ADAPTIVE_TRIALS {
                    return Err(D::Error::custom(format!(
                        "`max` ({}) is more than {} adaptive trials",
                        adaptive.max,
                        crate::stats::MOST_ADAPTIVE_TRIALS
                    )));
                }
                Ok(RawRepeat::Adaptive(adaptive))
            }
            other => Err(D::Error::custom(format!("{EXPECTED}, got {other}"))),
        }
    }
}

impl RawRepeat {
    /// The trials at most, and the trials to start with when adaptive.
    pub fn split(self) -> (NonZeroU32, Option<NonZeroU32>) {
        match self {
            RawRepeat::Count(n) => (n, None),
            RawRepeat::Adaptive(a) => (a.max, a.adaptive.then_some(a.min.min(a.max))),
        }
    }
}

#[derive(Debug, Clone, Copy)]
pub(super) struct Trials {
    /// Trials at most.
    pub(super) repeat: Option<NonZeroU32>,
    /// Adaptive: the trials to start with.
    pub(super) adaptive: Option<NonZeroU32>,
    pub(super) min_pass: Option<NonZeroU32>,
}

impl Trials {
    pub(super) fn of(repeat: Option<RawRepeat>, min_pass: Option<NonZeroU32>) -> Trials {
        let (repeat, adaptive) = repeat.map(RawRepeat::split).unzip();
        Trials { repeat, adaptive: adaptive.flatten(), min_pass }
    }
}

pub(super) fn check_trials(cx: &mut ValidateCx, t: Trials, path: &KeyPath) {
    if let (Some(r), Some(m)) = (t.repeat, t.min_pass)
        && m > r
    {
        cx.error(&path.key("min_pass"), format!("`min_pass` ({m}) is more than `repeat` ({r})"));
    }
}
