//! Long texts cut to a share of the report's budget, with what was left out counted.

use serde::Serialize;

use super::{COLLAPSE_AT, TEXT_BUDGET, TEXT_MAX, TEXT_MIN};
use crate::results::Results;

/// Cuts long texts to a length that shares `TEXT_BUDGET` between all of them.
pub(super) struct Cutter {
    pub(super) cap: usize,
}

impl Cutter {
    pub(super) fn for_results(results: &Results) -> Cutter {
        let texts: usize = results
            .tasks
            .iter()
            .flat_map(|t| &t.trials)
            .map(|trial| 3 + 2 * trial.tool_calls.len() + trial.graders.len() + 2 * trial.steps.len())
            .sum();
        Cutter { cap: (TEXT_BUDGET / texts.max(1)).clamp(TEXT_MIN, TEXT_MAX) }
    }

    pub(super) fn text(&self, text: &str) -> Text {
        let chars = text.chars().count();
        if chars <= self.cap {
            return Text { text: text.to_owned(), cut: 0, collapsed: chars > COLLAPSE_AT };
        }
        Text { text: text.chars().take(self.cap).collect(), cut: chars - self.cap, collapsed: true }
    }

    pub(super) fn opt(&self, text: Option<&str>) -> Option<Text> {
        text.filter(|t| !t.is_empty()).map(|t| self.text(t))
    }

    pub(super) fn json(&self, value: &serde_json::Value) -> Text {
        match value {
            serde_json::Value::String(s) => self.text(s),
            other => self.text(&serde_json::to_string_pretty(other).unwrap_or_default()),
        }
    }
}

/// A text as shown: `cut` characters were left out (the full text is in `results.json`).
#[derive(Serialize)]
pub(super) struct Text {
    text: String,
    cut: usize,
    collapsed: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_texts_are_cut_with_a_note_and_short_ones_kept() {
        let cutter = Cutter { cap: 10 };
        let t = cutter.text("0123456789abc");
        assert_eq!((t.text.as_str(), t.cut, t.collapsed), ("0123456789", 3, true));
        let t = cutter.text("short");
        assert_eq!((t.text.as_str(), t.cut, t.collapsed), ("short", 0, false));
    }
}
