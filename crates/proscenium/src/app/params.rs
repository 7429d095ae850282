//! Path parameters: percent-decoding and a serde deserializer over them.
//!
//! One parameter deserializes as a single value, several as a tuple (in pattern order)
//! or a struct (by name). Numbers and booleans are parsed from their text.

use std::borrow::Cow;

use serde::de::{
    self, DeserializeSeed, Deserializer, IntoDeserializer, MapAccess, SeqAccess, Visitor,
};
use serde::forward_to_deserialize_any;

/// Percent-decodes every parameter value, refusing values that are not UTF-8.
pub(crate) fn decode(
    params: &[(String, String)],
) -> Result<Vec<(&str, Cow<'_, str>)>, &'static str> {
    params
        .iter()
        .map(|(k, v)| {
            percent_encoding::percent_decode_str(v)
                .decode_utf8()
                .map(|v| (k.as_str(), v))
                .map_err(|_| "path parameter is not UTF-8")
        })
        .collect()
}

/// The error of parameter deserialization.
#[derive(Debug)]
pub(crate) struct ParamsError(String);

impl std::fmt::Display for ParamsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ParamsError {}

impl de::Error for ParamsError {
    fn custom<T: std::fmt::Display>(msg: T) -> Self {
        Self(msg.to_string())
    }
}

/// Deserializes a value, tuple or struct from decoded path parameters.
pub(crate) struct ParamsDeserializer<'a> {
    params: &'a [(&'a str, Cow<'a, str>)],
}

impl<'a> ParamsDeserializer<'a> {
    pub(crate) fn new(params: &'a [(&'a str, Cow<'a, str>)]) -> Self {
        Self { params }
    }

    fn single(&self) -> Result<ValueDeserializer<'a>, ParamsError> {
        match self.params {
            [(_, v)] => Ok(ValueDeserializer(v)),
            _ => Err(ParamsError(format!(
                "expected 1 path parameter, found {}",
                self.params.len()
            ))),
        }
    }
}

macro_rules! forward_to_single {
    ($($method:ident)*) => {
        $(fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
            self.single()?.$method(visitor)
        })*
    };
}

impl<'de> Deserializer<'de> for ParamsDeserializer<'de> {
    type Error = ParamsError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        match self.params.len() {
            1 => self.single()?.deserialize_any(visitor),
            _ => self.deserialize_map(visitor),
        }
    }

    forward_to_single! {
        deserialize_bool deserialize_i8 deserialize_i16 deserialize_i32 deserialize_i64
        deserialize_u8 deserialize_u16 deserialize_u32 deserialize_u64 deserialize_f32
        deserialize_f64 deserialize_char deserialize_str deserialize_string
        deserialize_option deserialize_bytes deserialize_byte_buf
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        visitor.visit_map(ParamMap {
            params: self.params.iter(),
            value: None,
        })
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.deserialize_map(visitor)
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        visitor.visit_seq(ParamSeq(self.params.iter()))
    }

    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        if len != self.params.len() {
            return Err(ParamsError(format!(
                "expected {len} path parameters, found {}",
                self.params.len()
            )));
        }
        self.deserialize_seq(visitor)
    }

    forward_to_deserialize_any! {
        unit unit_struct newtype_struct tuple_struct enum identifier ignored_any i128 u128
    }
}

struct ParamMap<'a, I> {
    params: I,
    value: Option<&'a str>,
}

impl<'de, I: Iterator<Item = &'de (&'de str, Cow<'de, str>)>> MapAccess<'de> for ParamMap<'de, I> {
    type Error = ParamsError;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Self::Error> {
        let Some((k, v)) = self.params.next() else {
            return Ok(None);
        };
        self.value = Some(v);
        seed.deserialize((*k).into_deserializer()).map(Some)
    }

    fn next_value_seed<S: DeserializeSeed<'de>>(
        &mut self,
        seed: S,
    ) -> Result<S::Value, Self::Error> {
        let value = self
            .value
            .take()
            .ok_or_else(|| ParamsError("value without key".into()))?;
        seed.deserialize(ValueDeserializer(value))
    }
}

struct ParamSeq<I>(I);

impl<'de, I: Iterator<Item = &'de (&'de str, Cow<'de, str>)>> SeqAccess<'de> for ParamSeq<I> {
    type Error = ParamsError;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Self::Error> {
        self.0
            .next()
            .map(|(_, v)| seed.deserialize(ValueDeserializer(v)))
            .transpose()
    }
}

/// Deserializes one parameter's text, parsing it as the visitor asks.
struct ValueDeserializer<'a>(&'a str);

macro_rules! parse_value {
    ($($method:ident => $visit:ident,)*) => {
        $(fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
            let value = self.0.parse().map_err(|e| ParamsError(format!("`{}`: {e}", self.0)))?;
            visitor.$visit(value)
        })*
    };
}

impl<'de> Deserializer<'de> for ValueDeserializer<'de> {
    type Error = ParamsError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        visitor.visit_str(self.0)
    }

    parse_value! {
        deserialize_bool => visit_bool,
        deserialize_i8 => visit_i8,
        deserialize_i16 => visit_i16,
        deserialize_i32 => visit_i32,
        deserialize_i64 => visit_i64,
        deserialize_u8 => visit_u8,
        deserialize_u16 => visit_u16,
        deserialize_u32 => visit_u32,
        deserialize_u64 => visit_u64,
        deserialize_f32 => visit_f32,
        deserialize_f64 => visit_f64,
        deserialize_char => visit_char,
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        visitor.visit_some(self)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        visitor.visit_enum(self.0.into_deserializer())
    }

    forward_to_deserialize_any! {
        str string bytes byte_buf unit unit_struct newtype_struct seq tuple tuple_struct
        map struct identifier ignored_any i128 u128
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use super::*;

    fn params(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn de<T: for<'de> Deserialize<'de>>(pairs: &[(&str, &str)]) -> Result<T, ParamsError> {
        let raw = params(pairs);
        let decoded = decode(&raw).unwrap();
        T::deserialize(ParamsDeserializer::new(&decoded))
    }

    #[derive(Deserialize, Debug, PartialEq)]
    struct Ids {
        user: u32,
        name: String,
    }

    #[test]
    fn deserializes_values_tuples_and_structs() {
        assert_eq!(de::<u64>(&[("id", "42")]).unwrap(), 42);
        assert_eq!(de::<String>(&[("name", "a%20b")]).unwrap(), "a b");
        assert_eq!(
            de::<(u32, String)>(&[("a", "1"), ("b", "x")]).unwrap(),
            (1, "x".into())
        );
        let ids = de::<Ids>(&[("user", "7"), ("name", "ann")]).unwrap();
        assert_eq!(
            ids,
            Ids {
                user: 7,
                name: "ann".into()
            }
        );
    }

    #[test]
    fn refuses_bad_numbers_and_counts() {
        assert!(de::<u64>(&[("id", "x")]).is_err());
        assert!(de::<u64>(&[("a", "1"), ("b", "2")]).is_err());
        assert!(de::<(u32, u32)>(&[("a", "1")]).is_err());
    }
}
