//! promptfoo's `extractJsonObjects`: the JSON objects in a text, found from each `{` by
//! counting braces and read as promptfoo reads them, as YAML (so `{a: 1}` is one).

use serde::Deserialize;
use serde_json::Value;

/// promptfoo reads at most this many characters from one `{`.
const MAX_JSON: usize = 100_000;

/// The objects in `text`, in order; after one is found the search goes on past its end.
pub fn json_objects(text: &str) -> Vec<Value> {
    let chars: Vec<char> = text.encode_utf16().map(|u| char::from_u32(u32::from(u)).unwrap_or('\u{fffd}')).collect();
    let units: Vec<u16> = text.encode_utf16().collect();
    let mut found = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if chars[i] != '{' {
            i += 1;
            continue;
        }
        let (mut open, mut close, mut j) = (1usize, 0usize, i + 1);
        let end = (i + MAX_JSON).min(chars.len());
        let mut next = i + 1;
        while j < end && open > close {
            match chars[j] {
                '{' => open += 1,
                '}' => close += 1,
                _ => {}
            }
            j += 1;
            if open == close || j == chars.len() || j == i + MAX_JSON {
                let mut candidate = String::from_utf16_lossy(&units[i..j]);
                if open > close {
                    candidate.push_str(&"}".repeat(open - close));
                }
                match parse(&candidate) {
                    Some(v) => {
                        found.push(v);
                        next = j;
                        break;
                    }
                    None if open == close => break,
                    None => {}
                }
            }
        }
        i = next;
    }
    found
}

/// `text` as YAML, when it is a mapping or a list.
fn parse(text: &str) -> Option<Value> {
    let doc = crate::yaml::Document::parse(text).ok()?;
    let value = Value::deserialize(doc.de(doc.root())).ok()?;
    (value.is_object() || value.is_array()).then_some(value)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn finds_objects_in_prose_as_promptfoo_does() {
        assert_eq!(json_objects(r#"Here: {"a": 1} and {"b": {"c": 2}} done"#), [json!({"a": 1}), json!({"b": {"c": 2}})]);
        assert_eq!(json_objects("no braces"), Vec::<Value>::new());
        // YAML reads a flow mapping without quotes.
        assert_eq!(json_objects("{answer: yes}"), [json!({"answer": "yes"})]);
        // An unclosed object is closed.
        assert_eq!(json_objects(r#"{"a": 1"#), [json!({"a": 1})]);
    }
}
