//! JSON read as serde_json reads it, except that a key written twice in one object is
//! noticed: serde_json keeps the last value silently, and in a reply from a model (a judge's
//! `{"passed": false, …, "passed": true}`) that is a second answer, not a correction.

use std::cell::RefCell;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

/// `text` as a value, and the JSON pointer of every key written twice in it (the value kept
/// is the last, as serde_json keeps it).
pub fn parse_noting_duplicates(text: &str) -> serde_json::Result<(Value, Vec<String>)> {
    let duplicates = RefCell::new(Vec::new());
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let value = Read { at: String::new(), duplicates: &duplicates }.deserialize(&mut deserializer)?;
    deserializer.end()?;
    Ok((value, duplicates.into_inner()))
}

/// `text` as a value; a key written twice is an error naming it.
pub fn parse_strict(text: &str) -> Result<Value, String> {
    let (value, duplicates) = parse_noting_duplicates(text).map_err(|e| e.to_string())?;
    match duplicates.first() {
        None => Ok(value),
        Some(pointer) => Err(given_twice(pointer)),
    }
}

/// "`passed` is given twice", for the key at `pointer`.
pub fn given_twice(pointer: &str) -> String {
    let key = pointer.rsplit('/').next().unwrap_or_default().replace("~1", "/").replace("~0", "~");
    format!("`{key}` is given twice")
}

struct Read<'a> {
    /// The JSON pointer of the value read.
    at: String,
    duplicates: &'a RefCell<Vec<String>>,
}

impl Read<'_> {
    fn inner(&self, segment: &str) -> Self {
        let segment = segment.replace('~', "~0").replace('/', "~1");
        Read { at: format!("{}/{segment}", self.at), duplicates: self.duplicates }
    }
}

impl<'de> DeserializeSeed<'de> for Read<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Read<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(self.inner(&items.len().to_string()))? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut object = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let read = self.inner(&key);
            let at = read.at.clone();
            let value = map.next_value_seed(read)?;
            if object.insert(key, value).is_some() {
                self.duplicates.borrow_mut().push(at);
            }
        }
        Ok(Value::Object(object))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_key_written_twice_is_noted_where_it_is() {
        let (value, duplicates) =
            parse_noting_duplicates(r#"{"a": [{"passed": false, "x/y": 1, "passed": true, "x/y": 2}], "b": 1}"#)
                .unwrap();
        assert_eq!(value, json!({"a": [{"passed": true, "x/y": 2}], "b": 1}));
        assert_eq!(duplicates, ["/a/0/passed", "/a/0/x~1y"]);
        assert_eq!(parse_strict(r#"{"passed": false, "passed": true}"#).unwrap_err(), "`passed` is given twice");
        assert_eq!(given_twice("/a/0/x~1y"), "`x/y` is given twice");
    }

    #[test]
    fn everything_else_reads_as_serde_json_reads_it() {
        let text = r#"{"n": -1, "u": 18446744073709551615, "f": 1.5, "s": "\u00e9", "z": null, "l": [true, {}]}"#;
        assert_eq!(parse_strict(text).unwrap(), serde_json::from_str::<Value>(text).unwrap());
        assert!(parse_strict("{} x").is_err() && parse_strict("[1,]").is_err());
        assert!(parse_strict(&"[".repeat(200)).unwrap_err().contains("recursion limit"));
    }
}
