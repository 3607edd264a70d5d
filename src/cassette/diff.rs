//! What differs between two requests, leaf by leaf: the prompt, a tool's schema, the model.

use std::collections::BTreeMap;

use serde_json::Value;

/// How many differences a miss shows.
const SHOWN: usize = 3;
/// How much of each side of a difference a miss shows before its first differing
/// character, and from it on.
const BEFORE: usize = 30;
const AFTER: usize = 40;

/// One leaf that differs: its path, and its value on each side (`None`: absent there).
pub struct Difference {
    path: String,
    recorded: Option<Value>,
    now: Option<Value>,
}

/// The leaves of `recorded` and `now` that differ, in path order.
pub fn differences(recorded: &Value, now: &Value) -> Vec<Difference> {
    let (mut a, mut b) = (BTreeMap::new(), BTreeMap::new());
    leaves(recorded, String::new(), &mut a);
    leaves(now, String::new(), &mut b);
    let paths: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    paths
        .into_iter()
        .filter(|p| a.get(*p) != b.get(*p))
        .map(|p| Difference { path: p.clone(), recorded: a.get(p).cloned(), now: b.get(p).cloned() })
        .collect()
}

fn leaves(value: &Value, path: String, out: &mut BTreeMap<String, Value>) {
    match value {
        Value::Object(map) if !map.is_empty() => {
            for (k, v) in map {
                let path = if path.is_empty() { k.clone() } else { format!("{path}.{k}") };
                leaves(v, path, out);
            }
        }
        Value::Array(items) if !items.is_empty() => {
            for (i, v) in items.iter().enumerate() {
                leaves(v, format!("{path}[{i}]"), out);
            }
        }
        leaf => {
            out.insert(path, leaf.clone());
        }
    }
}

/// `messages[0].text: recorded "…the capital of France?", now "…the capital of Spain?" (they
/// part at character 1204); tools[1]: recorded absent, now {} (and 2 more)`: two texts each
/// from a little before their first differing character, so a long text changed late shows
/// where the two part, not their shared start twice.
pub fn describe(differences: &[Difference]) -> String {
    if differences.is_empty() {
        return "nothing: the same request".into();
    }
    let shown: Vec<String> = differences
        .iter()
        .take(SHOWN)
        .map(|d| {
            let path = if d.path.is_empty() { "the request" } else { &d.path };
            let at = match (&d.recorded, &d.now) {
                (Some(Value::String(a)), Some(Value::String(b))) => parting(&redact(a), &redact(b)),
                _ => 0,
            };
            let side = |v: &Option<Value>| match v {
                Some(Value::String(s)) => window(&redact(s), at),
                Some(other) => redact(&other.to_string()),
                None => "absent".into(),
            };
            let place = if at > BEFORE { format!(" (they part at character {})", at + 1) } else { String::new() };
            format!("{path}: recorded {}, now {}{place}", side(&d.recorded), side(&d.now))
        })
        .collect();
    let more = differences.len().saturating_sub(SHOWN);
    let more = if more > 0 { format!(" (and {more} more)") } else { String::new() };
    format!("{}{more}", shown.join("; "))
}

/// A leaf's text redacted before any cut: no piece of a secret is left at an edge.
fn redact(text: &str) -> String {
    crate::redact::text(text).into_owned()
}

/// The index (in characters) of the first character where `a` and `b` differ.
fn parting(a: &str, b: &str) -> usize {
    a.chars().zip(b.chars()).take_while(|(x, y)| x == y).count()
}

/// `text` from `BEFORE` characters before `at` to `AFTER` after it, `…` where cut, quoted
/// as JSON (control characters and newlines escaped: nothing acts on a terminal).
fn window(text: &str, at: usize) -> String {
    let start = at.saturating_sub(BEFORE);
    let count = text.chars().count();
    let piece: String = text.chars().skip(start).take(at - start + AFTER).collect();
    let quoted = serde_json::to_string(&piece).expect("a string serializes");
    let inner = &quoted[1..quoted.len() - 1];
    let head = if start > 0 { "…" } else { "" };
    let tail = if at + AFTER < count { "…" } else { "" };
    format!("\"{head}{inner}{tail}\"")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_late_change_in_a_long_text_shows_where_the_two_part_with_context_on_both_sides() {
        let start = "You are a careful assistant. ".repeat(40);
        let recorded = json!({"messages": [{"content": format!("{start}Answer in French, please.")}]});
        let now = json!({"messages": [{"content": format!("{start}Answer in Spanish, please.")}]});
        let shown = describe(&differences(&recorded, &now));
        let at = start.chars().count() + "Answer in ".len() + 1;
        assert_eq!(
            shown,
            format!(
                r#"messages[0].content: recorded "… careful assistant. Answer in French, please.", now "… careful assistant. Answer in Spanish, please." (they part at character {at})"#
            )
        );
    }

    #[test]
    fn short_values_and_absent_ones_are_shown_whole() {
        let shown = describe(&differences(&json!({"a": "Say hi", "n": 1}), &json!({"a": "Say hello", "t": [true]})));
        assert_eq!(
            shown,
            r#"a: recorded "Say hi", now "Say hello"; n: recorded 1, now absent; t[0]: recorded absent, now true"#
        );
    }
}
