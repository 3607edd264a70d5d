//! Key case conversion for foreign wire formats.

use serde_json::Value;

/// AgentV's `toSnakeCaseDeep`: every object key in camelCase becomes snake_case; a key
/// that starts with a capital letter (a tool name such as `Read`) is kept.
pub fn snake_case_deep(v: Value) -> Value {
    match v {
        Value::Array(list) => Value::Array(list.into_iter().map(snake_case_deep).collect()),
        Value::Object(map) => {
            Value::Object(map.into_iter().map(|(k, v)| (snake_case(&k), snake_case_deep(v))).collect())
        }
        other => other,
    }
}

fn snake_case(key: &str) -> String {
    if key.starts_with(|c: char| c.is_ascii_uppercase()) {
        return key.to_owned();
    }
    let mut out = String::with_capacity(key.len() + 4);
    for c in key.chars() {
        if c.is_ascii_uppercase() {
            out.push('_');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keys_become_snake_case_as_agentv_converts_them() {
        let v = snake_case_deep(json!({"toolCalls": {"Read": 1, "lookupOrder": 2}, "a": [{"eventId": "x"}]}));
        assert_eq!(v, json!({"tool_calls": {"Read": 1, "lookup_order": 2}, "a": [{"event_id": "x"}]}));
    }
}
