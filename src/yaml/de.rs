//! Deserializing the raw types from a parsed YAML tree. A scalar read as a string is the text
//! as written (`version: 1.10` is `"1.10"`, not `1.1`), as the suite format always allowed;
//! read as any value, it is typed by the YAML 1.2 core schema.

use serde::de::value::{Error, StrDeserializer};
use serde::de::{self, DeserializeSeed, Deserializer, IntoDeserializer, Unexpected, Visitor};

use super::{Node, Resolved, Value};

/// A deserializer over one node of a [`Document`](super::Document).
#[derive(Clone, Copy)]
pub struct NodeDeserializer<'a> {
    node: &'a Node,
}

impl<'a> NodeDeserializer<'a> {
    pub fn new(node: &'a Node) -> Self {
        NodeDeserializer { node }
    }

    fn at(self, node: &'a Node) -> Self {
        NodeDeserializer { node }
    }

    fn unexpected(self) -> Unexpected<'a> {
        match &self.node.value {
            Value::Scalar(s) => match s.resolve() {
                Resolved::Null => Unexpected::Unit,
                Resolved::Bool(b) => Unexpected::Bool(b),
                Resolved::Int(n) => Unexpected::Signed(n),
                Resolved::UInt(n) => Unexpected::Unsigned(n),
                Resolved::Float(n) => Unexpected::Float(n),
                Resolved::Str(s) => Unexpected::Str(s),
            },
            Value::Sequence(_) => Unexpected::Seq,
            Value::Mapping(_) => Unexpected::Map,
        }
    }
}

impl<'de> Deserializer<'de> for NodeDeserializer<'_> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match &self.node.value {
            Value::Scalar(s) => match s.resolve() {
                Resolved::Null => visitor.visit_unit(),
                Resolved::Bool(b) => visitor.visit_bool(b),
                Resolved::Int(n) => visitor.visit_i64(n),
                Resolved::UInt(n) => visitor.visit_u64(n),
                Resolved::Float(n) => visitor.visit_f64(n),
                Resolved::Str(s) => visitor.visit_str(s),
            },
            Value::Sequence(items) => {
                visitor.visit_seq(de::value::SeqDeserializer::new(items.iter().map(|n| self.at(n))))
            }
            Value::Mapping(entries) => visitor
                .visit_map(de::value::MapDeserializer::new(entries.iter().map(|(k, v)| (self.at(k), self.at(v))))),
        }
    }

    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match &self.node.value {
            Value::Scalar(s) => visitor.visit_str(&s.text),
            Value::Sequence(_) | Value::Mapping(_) => self.deserialize_any(visitor),
        }
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_str(visitor)
    }

    fn deserialize_char<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_str(visitor)
    }

    fn deserialize_identifier<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_str(visitor)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match &self.node.value {
            Value::Scalar(s) if s.resolve() == Resolved::Null => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(self, _: &'static str, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        match &self.node.value {
            Value::Mapping(entries) if entries.len() == 1 => {
                let (key, value) = &entries[0];
                visitor.visit_enum(Variant { key: self.at(key), value: Some(self.at(value)) })
            }
            Value::Mapping(_) | Value::Sequence(_) => {
                Err(de::Error::invalid_type(self.unexpected(), &"a variant name or a mapping with one key"))
            }
            _ => visitor.visit_enum(Variant { key: self, value: None }),
        }
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_unit()
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 bytes byte_buf unit unit_struct seq
        tuple tuple_struct map struct
    }
}

impl<'de> IntoDeserializer<'de, Error> for NodeDeserializer<'_> {
    type Deserializer = Self;

    fn into_deserializer(self) -> Self {
        self
    }
}

/// An enum written as its variant's name, or as a mapping from the name to its content.
struct Variant<'a> {
    key: NodeDeserializer<'a>,
    value: Option<NodeDeserializer<'a>>,
}

/// A variant's content: none when only its name is written.
struct Content<'a>(Option<NodeDeserializer<'a>>);

impl<'de, 'a> de::EnumAccess<'de> for Variant<'a> {
    type Error = Error;
    type Variant = Content<'a>;

    fn variant_seed<S: DeserializeSeed<'de>>(self, seed: S) -> Result<(S::Value, Self::Variant), Error> {
        let variant = seed.deserialize(StrDeserializer::<Error>::new(self.key.node.text()))?;
        Ok((variant, Content(self.value)))
    }
}

impl<'de> de::VariantAccess<'de> for Content<'_> {
    type Error = Error;

    fn unit_variant(self) -> Result<(), Error> {
        match self.0 {
            None => Ok(()),
            Some(value) => de::Deserialize::deserialize(value),
        }
    }

    fn newtype_variant_seed<S: DeserializeSeed<'de>>(self, seed: S) -> Result<S::Value, Error> {
        match self.0 {
            Some(value) => seed.deserialize(value),
            None => Err(de::Error::invalid_type(Unexpected::UnitVariant, &"a variant with content")),
        }
    }

    fn tuple_variant<V: Visitor<'de>>(self, _: usize, visitor: V) -> Result<V::Value, Error> {
        match self.0 {
            Some(value) => value.deserialize_any(visitor),
            None => Err(de::Error::invalid_type(Unexpected::UnitVariant, &"a tuple variant")),
        }
    }

    fn struct_variant<V: Visitor<'de>>(self, _: &'static [&'static str], visitor: V) -> Result<V::Value, Error> {
        match self.0 {
            Some(value) => value.deserialize_any(visitor),
            None => Err(de::Error::invalid_type(Unexpected::UnitVariant, &"a struct variant")),
        }
    }
}
