//! What differs between two requests, leaf by leaf: the prompt, a tool's schema, the model.

use std::collections::BTreeMap;

use serde_json::Value;

/// How many differences a miss shows.
const SHOWN: usize = 3;
/// How much of each side of a difference a miss shows.
const EXCERPT: usize = 80;

/// One leaf that differs: its path, and its value on each side (`None`: absent there).
pub struct Difference {
    path: String,
    recorded: Option<String>,
    now: Option<String>,
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

fn leaves(value: &Value, path: String, out: &mut BTreeMap<String, String>) {
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
            out.insert(path, leaf.to_string());
        }
    }
}

/// `messages[0].text: recorded "a", now "b"; tools[1]: absent, now {...} (and 2 more)`.
pub fn describe(differences: &[Difference]) -> String {
    if differences.is_empty() {
        return "nothing: the same request".into();
    }
    let side = |v: &Option<String>| match v {
        Some(v) => crate::excerpt::excerpt(v, EXCERPT),
        None => "absent".into(),
    };
    let shown: Vec<String> = differences
        .iter()
        .take(SHOWN)
        .map(|d| {
            let path = if d.path.is_empty() { "the request" } else { &d.path };
            format!("{path}: recorded {}, now {}", side(&d.recorded), side(&d.now))
        })
        .collect();
    let more = differences.len().saturating_sub(SHOWN);
    let more = if more > 0 { format!(" (and {more} more)") } else { String::new() };
    format!("{}{more}", shown.join("; "))
}
