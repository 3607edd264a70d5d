//! Redaction on what recorded traffic says, not on one encoding of it. A recorded HTTP body
//! is text in some encoding of its content: a JSON document whose encoder escaped characters
//! (`\u003c` for `<`, as Go's does: Ollama), a stream whose answer is split over many events
//! (OpenAI's chunks, Anthropic's deltas as server-sent events, Ollama's JSON lines), a form
//! or a URL percent-encoded, a base64 blob.
//!
//! [`Redactor::decoded`] redacts what it can rewrite in place: each JSON document a string
//! holds, and each event of a stream, parsed, redacted and written again. [`Redactor::hidden`]
//! then finds the secrets left in any decoding it knows, which no rewrite of the text can
//! remove: a secret split across events is whole only once the events are joined. What holds
//! one is refused (a cassette does not write the entry).
//!
//! The decodings: JSON string escapes at any depth (JSON held in a string too), the events
//! of a stream (`data:` lines or JSON lines) joined per field (`choices[0].delta.content`,
//! `delta.text`, `delta.partial_json`…), percent-encoding in any mix, `\uXXXX` and HTML's
//! `&#…;` escapes written as text, and base64 (standard and URL-safe, at any alignment). Not: a secret an agent that holds it encodes on purpose
//! (reversed, hex, encrypted, split over requests): no redactor finds every cipher, and an
//! agent that holds a secret can send it anywhere.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::LazyLock;

use base64::Engine as _;
use serde_json::Value;

use super::Redactor;

/// How many decodings deep a string is searched (base64 of percent-encoded JSON…).
const DEPTH: u8 = 4;

impl Redactor {
    /// Redacts every string and key of `value` on its decoded content: a string that holds a
    /// JSON document or a stream of JSON events is parsed, redacted and written again (as
    /// serde writes JSON: the rewrite changes only what held a secret). Whether anything
    /// changed.
    pub fn decoded(&self, value: &mut Value) -> bool {
        self.walk(value, &|s| self.decoded_text(s))
    }

    /// `text` redacted on its decoded content, or `None` when it holds no secret it can
    /// rewrite.
    fn decoded_text(&self, text: &str) -> Option<String> {
        let rewritten = if let Some(mut document) = document(text) {
            self.decoded(&mut document).then(|| document.to_string())
        } else if text.contains('\n') {
            let mut changed = false;
            let lines: String = text
                .split_inclusive('\n')
                .map(|line| {
                    let (prefix, payload, end) = event(line);
                    match document(payload) {
                        Some(mut document) => {
                            if self.decoded(&mut document) {
                                changed = true;
                                return Cow::Owned(format!("{prefix}{document}{end}"));
                            }
                            Cow::Borrowed(line)
                        }
                        None => Cow::Borrowed(line),
                    }
                })
                .collect();
            changed.then_some(lines)
        } else {
            None
        };
        match self.text(rewritten.as_deref().unwrap_or(text)) {
            Cow::Owned(redacted) => Some(redacted),
            Cow::Borrowed(_) => rewritten,
        }
    }

    /// The placeholders of the secrets `value` holds in any decoding this module knows
    /// (see the module's comment), as written or once decoded: none, for what may be kept.
    pub fn hidden(&self, value: &Value) -> Vec<String> {
        let mut found = BTreeSet::new();
        if !self.is_empty() {
            self.hidden_in(value, &mut found, DEPTH);
        }
        found.into_iter().collect()
    }

    fn hidden_in(&self, value: &Value, found: &mut BTreeSet<String>, depth: u8) {
        match value {
            Value::String(s) => self.hidden_text(s, found, depth),
            Value::Array(items) => items.iter().for_each(|item| self.hidden_in(item, found, depth)),
            Value::Object(map) => map.iter().for_each(|(key, v)| {
                self.hidden_text(key, found, depth);
                self.hidden_in(v, found, depth);
            }),
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }

    fn hidden_text(&self, text: &str, found: &mut BTreeSet<String>, depth: u8) {
        let Some(matcher) = &self.matcher else { return };
        found.extend(matcher.find_iter(text).map(|m| self.placeholders[m.pattern().as_usize()].clone()));
        if depth == 0 {
            return;
        }
        let depth = depth - 1;
        if let Some(document) = document(text) {
            self.hidden_in(&document, found, depth);
        } else if text.contains('\n') {
            // A stream: each event, and each field's pieces joined in order.
            let mut joined: BTreeMap<String, String> = BTreeMap::new();
            for line in text.lines() {
                let (prefix, payload, _) = event(line);
                match document(payload) {
                    Some(document) => {
                        self.hidden_in(&document, found, depth);
                        pieces(&document, String::new(), &mut joined);
                    }
                    // An event whose data is text: the texts joined.
                    None if !prefix.is_empty() => joined.entry(String::new()).or_default().push_str(payload),
                    None => {}
                }
            }
            joined.values().for_each(|whole| self.hidden_text(whole, found, depth));
        }
        if text.contains('%') {
            let decoded = percent_encoding::percent_decode_str(text).decode_utf8_lossy();
            if decoded != text {
                self.hidden_text(&decoded, found, depth);
            }
            // A form body's space.
            if decoded.contains('+') {
                self.hidden_text(&decoded.replace('+', " "), found, depth);
            }
        }
        if let Some(unescaped) = unescaped(text) {
            self.hidden_text(&unescaped, found, depth);
        }
        for blob in base64_decoded(text) {
            self.hidden_text(&blob, found, depth);
        }
    }
}

/// The JSON document (an object or an array) `text` is, if it is one.
fn document(text: &str) -> Option<Value> {
    let trimmed = text.trim();
    if !(trimmed.starts_with('{') || trimmed.starts_with('[')) {
        return None;
    }
    serde_json::from_str(trimmed).ok().filter(|v: &Value| v.is_object() || v.is_array())
}

/// A line of a stream as its prefix (`data: ` of a server-sent event, or nothing: a JSON
/// line), its payload and its line end.
fn event(line: &str) -> (&str, &str, &str) {
    let body = line.trim_end_matches(['\r', '\n']);
    let end = &line[body.len()..];
    let prefix_len = match body.strip_prefix("data:") {
        Some(rest) => body.len() - rest.trim_start_matches(' ').len(),
        None => 0,
    };
    (&body[..prefix_len], &body[prefix_len..], end)
}

/// Every string of `value` appended to its field's text in `joined`, the field named by its
/// path (`choices.0.delta.content`): the pieces a stream sends of one text, in order.
fn pieces(value: &Value, path: String, joined: &mut BTreeMap<String, String>) {
    match value {
        Value::String(s) => joined.entry(path).or_default().push_str(s),
        Value::Array(items) => {
            items.iter().enumerate().for_each(|(i, item)| pieces(item, format!("{path}.{i}"), joined));
        }
        Value::Object(map) => map.iter().for_each(|(k, v)| pieces(v, format!("{path}.{k}"), joined)),
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

/// `text` with its character escapes decoded, when it has any: `\uXXXX` (JSON's, written in
/// text outside a JSON document, or a JSON document cut short) and HTML's `&#NNN;` and
/// `&#xHH;`.
fn unescaped(text: &str) -> Option<String> {
    static ESCAPE: LazyLock<regex::Regex> = LazyLock::new(|| {
        regex::Regex::new(r"\\u([0-9a-fA-F]{4})|&#([0-9]{1,7});|&#[xX]([0-9a-fA-F]{1,6});").expect("a valid regex")
    });
    if !(text.contains("\\u") || text.contains("&#")) || !ESCAPE.is_match(text) {
        return None;
    }
    let decoded = ESCAPE.replace_all(text, |c: &regex::Captures<'_>| {
        let code = match (c.get(1), c.get(2), c.get(3)) {
            (Some(hex), _, _) | (_, _, Some(hex)) => u32::from_str_radix(hex.as_str(), 16).ok(),
            (_, Some(decimal), _) => decimal.as_str().parse().ok(),
            _ => None,
        };
        code.and_then(char::from_u32).map_or_else(|| c[0].to_owned(), String::from)
    });
    Some(decoded.into_owned())
}

/// What the base64 runs of `text` decode to, as text: each run at each of the four
/// alignments (a blob may start mid-run), in both alphabets.
fn base64_decoded(text: &str) -> Vec<String> {
    use base64::alphabet::{STANDARD, URL_SAFE};
    use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
    static RUN: LazyLock<regex::Regex> =
        LazyLock::new(|| regex::Regex::new(r"[A-Za-z0-9+/_-]{8,}").expect("a valid regex"));
    static ENGINES: LazyLock<[GeneralPurpose; 2]> = LazyLock::new(|| {
        let config = GeneralPurposeConfig::new()
            .with_decode_padding_mode(DecodePaddingMode::Indifferent)
            .with_decode_allow_trailing_bits(true);
        [GeneralPurpose::new(&STANDARD, config), GeneralPurpose::new(&URL_SAFE, config)]
    });
    let mut decoded = Vec::new();
    for run in RUN.find_iter(text).map(|m| m.as_str()) {
        for skip in 0..4 {
            let run = &run[skip..];
            // A last group of 2 or 3 characters is bytes without their padding; of 1, none.
            let run = &run[..run.len() - usize::from(run.len() % 4 == 1)];
            for engine in ENGINES.iter() {
                if let Ok(bytes) = engine.decode(run) {
                    decoded.push(String::from_utf8_lossy(&bytes).into_owned());
                }
            }
        }
    }
    decoded
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::Secret;
    use super::*;

    const KEY: &str = "sk-live-0123456789";

    fn redactor() -> Redactor {
        Redactor::new(&[Secret::env("KEY", KEY.into()), Secret::env("PW", "p<a>ss&word".into())])
    }

    #[test]
    fn a_json_body_escaped_as_go_writes_it_is_redacted_as_parsed() {
        let r = redactor();
        let body = r#"{"message":{"content":"pw \u003c p\u003ca\u003ess\u0026word"}}"#;
        assert!(matches!(r.text(body), Cow::Borrowed(_)), "the text alone does not show it");
        let mut value = json!({"body": body});
        assert!(r.decoded(&mut value));
        let text = value["body"].as_str().unwrap();
        assert_eq!(serde_json::from_str::<Value>(text).unwrap()["message"]["content"], "pw < [secret:PW]");
        assert!(r.hidden(&value).is_empty(), "{value}");
    }

    #[test]
    fn a_secret_split_across_stream_events_is_found_once_they_are_joined() {
        let r = redactor();
        let sse: String = ["sk-li", "ve-01234", "56789"]
            .iter()
            .map(|piece| format!("data: {}\n\n", json!({"choices": [{"delta": {"content": piece}}]})))
            .collect();
        let text: String = ["sk-li", "ve-01234", "56789"].iter().map(|p| format!("event: t\ndata: {p}\n\n")).collect();
        assert_eq!(r.hidden(&json!(text)), ["[secret:KEY]"]);
        let ndjson: String = ["sk-li", "ve-01234", "56789"]
            .iter()
            .map(|p| format!("{}\n", json!({"message": {"content": p}})))
            .collect();
        for stream in [sse, ndjson] {
            let mut value = json!({"body": stream});
            r.decoded(&mut value);
            assert_eq!(r.hidden(&value), ["[secret:KEY]"], "{value}");
        }
        // Whole in one event: redacted in place, the stream still a stream.
        let whole = format!("event: x\ndata: {}\n\n", json!({"delta": {"text": "k=sk-live-0123456789"}}));
        let mut value = json!(whole);
        assert!(r.decoded(&mut value));
        assert!(value.as_str().unwrap().starts_with("event: x\ndata: {"), "{value}");
        assert!(r.hidden(&value).is_empty(), "{value}");
    }

    #[test]
    fn percent_encoding_in_any_mix_and_base64_at_any_alignment_are_found() {
        use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
        let r = redactor();
        assert_eq!(r.hidden(&json!("key=%73k-live-0123456789")), ["[secret:KEY]"]);
        for prefix in ["", "x", "xy", "xyz"] {
            let blob = STANDARD.encode(format!("{prefix}{KEY} and more"));
            assert_eq!(r.hidden(&json!(format!("data:{blob}"))), ["[secret:KEY]"], "{prefix}");
            let blob = URL_SAFE_NO_PAD.encode(format!("{prefix}{KEY}"));
            assert_eq!(r.hidden(&json!({"b": blob})), ["[secret:KEY]"], "{prefix}");
        }
        assert!(r.hidden(&json!("an ordinary answer, nothing in it: Paris 75001 %41")).is_empty());
        // Escapes written as text, outside a JSON document: JSON's and HTML's.
        assert_eq!(r.hidden(&json!(r"k=\u0073k-live-0123456789")), ["[secret:KEY]"]);
        assert_eq!(r.hidden(&json!("k=&#115;k-live-&#x30;123456789")), ["[secret:KEY]"]);
    }
}
