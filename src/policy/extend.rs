//! Deserializing a struct that extends another with keys of its own, in one pass. serde's
//! `flatten` would buffer the map first, which loses the key path of an error inside it and
//! the unknown-key check; here the extension's keys go to the caller and the rest stream
//! to the base struct.

use schemars::JsonSchema;
use serde::Deserialize;
use serde::de::value::{MapAccessDeserializer, StringDeserializer};
use serde::de::{self, DeserializeSeed, MapAccess};

/// Deserializes `T` from `map`, except the keys in `own`: `take` reads each of their values.
pub(super) fn extend<'de, T, A, F>(map: A, own: &'static [&'static str], take: F) -> Result<T, A::Error>
where
    T: Deserialize<'de> + JsonSchema,
    A: MapAccess<'de>,
    F: FnMut(&str, &mut A) -> Result<(), A::Error>,
{
    T::deserialize(MapAccessDeserializer::new(Rest { map, own, base: keys_of::<T>(), take }))
}

/// The keys of a struct, as its schema lists them.
fn keys_of<T: JsonSchema>() -> Vec<String> {
    let schema = schemars::schema_for!(T);
    let properties = schema.get("properties").and_then(serde_json::Value::as_object);
    properties.map(|p| p.keys().cloned().collect()).unwrap_or_default()
}

/// Adds the extension's keys (`schema`'s properties) to the base struct's schema.
pub(super) fn extend_schema(mut base: schemars::Schema, schema: &serde_json::Value) -> schemars::Schema {
    if let (Some(properties), Some(own)) =
        (base.get_mut("properties").and_then(serde_json::Value::as_object_mut), schema.as_object())
    {
        properties.extend(own.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
    base
}

struct Rest<A, F> {
    map: A,
    own: &'static [&'static str],
    base: Vec<String>,
    take: F,
}

impl<'de, A, F> MapAccess<'de> for Rest<A, F>
where
    A: MapAccess<'de>,
    F: FnMut(&str, &mut A) -> Result<(), A::Error>,
{
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, A::Error> {
        while let Some(key) = self.map.next_key::<String>()? {
            if self.own.contains(&key.as_str()) {
                (self.take)(&key, &mut self.map)?;
                continue;
            }
            if !self.base.contains(&key) {
                // serde's own wording, so the loader offers a did-you-mean over every key.
                let expected: Vec<String> =
                    self.own.iter().map(|k| (*k).to_owned()).chain(self.base.iter().cloned()).collect();
                let expected = expected.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", ");
                return Err(de::Error::custom(format!("unknown field `{key}`, expected one of {expected}")));
            }
            return seed.deserialize(StringDeserializer::new(key)).map(Some);
        }
        Ok(None)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, A::Error> {
        self.map.next_value_seed(seed)
    }
}
