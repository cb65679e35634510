//! JSON payload -> Connect value, parsed by serde_json and directed by the
//! schema (no intermediate JSON tree), with the rules of Kafka's
//! `JsonConverter.convertToConnect`, made strict: a JSON type that does not
//! fit the schema is an error instead of Jackson's silent 0 / false / null.

use std::cell::RefCell;
use std::fmt;

use base64::Engine as _;
use connect_api::logical::{self, LogicalType};
use connect_api::{ConnectError, Decimal, Result, Schema, Struct, Type, Value};
use num_bigint::BigInt;
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

use super::Settings;

/// Parse one JSON payload from `text` against `schema`.
pub(crate) fn read_payload(
    text: &[u8],
    schema: Option<&Schema>,
    settings: &Settings,
) -> Result<Value> {
    let slot = RefCell::new(None);
    let mut de = serde_json::Deserializer::from_slice(text);
    let parsed = Seed {
        schema,
        settings,
        err: &slot,
    }
    .deserialize(&mut de)
    .and_then(|v| de.end().map(|()| v));
    parsed.map_err(|e| finish_error(e, &slot))
}

/// The error of a failed parse: a data error recorded by the seeds (with
/// its field path), or serde_json's syntax error.
pub(crate) fn finish_error(
    e: serde_json::Error,
    slot: &RefCell<Option<ConnectError>>,
) -> ConnectError {
    match slot.borrow_mut().take() {
        Some(err) => err,
        None => serialization_error(e),
    }
}

/// Kafka's message for bytes that are not JSON.
pub(crate) fn serialization_error(e: serde_json::Error) -> ConnectError {
    ConnectError::data(format!(
        "Converting byte[] to Kafka Connect data failed due to serialization error: {e}"
    ))
    .with_source(e)
}

/// Deserializes one value of `schema`.
#[derive(Clone, Copy)]
pub(crate) struct Seed<'s> {
    pub(crate) schema: Option<&'s Schema>,
    pub(crate) settings: &'s Settings,
    pub(crate) err: &'s RefCell<Option<ConnectError>>,
}

impl<'s> Seed<'s> {
    fn with(self, schema: Option<&'s Schema>) -> Seed<'s> {
        Seed { schema, ..self }
    }

    /// Record a data error and return serde's placeholder for it.
    fn fail<E: de::Error>(&self, err: ConnectError) -> E {
        let mut slot = self.err.borrow_mut();
        if slot.is_none() {
            *slot = Some(err);
        }
        E::custom("invalid Kafka Connect data")
    }

    /// Add `segment` to the path of a recorded error on the way out.
    fn nest<T, E>(
        &self,
        r: std::result::Result<T, E>,
        segment: impl FnOnce() -> String,
    ) -> std::result::Result<T, E> {
        if r.is_err() {
            let mut slot = self.err.borrow_mut();
            if let Some(e) = slot.take() {
                *slot = Some(e.in_field(&segment()));
            }
        }
        r
    }

    /// A JSON null (or a missing struct field) under this schema.
    fn null<E: de::Error>(&self) -> std::result::Result<Value, E> {
        let Some(schema) = self.schema else {
            return Ok(Value::Null);
        };
        if self.settings.replace_null_with_default {
            if let Some(d) = schema.default_value() {
                return Ok(d.clone());
            }
        }
        if schema.is_optional() {
            return Ok(Value::Null);
        }
        Err(self.fail(ConnectError::data(format!(
            "Invalid null value for required {} field",
            schema.ty()
        ))))
    }

    fn wrong<E: de::Error>(&self, found: &str) -> E {
        let expected = match self.schema {
            Some(s) => match LogicalType::of(s) {
                Some(l) => format!("{l:?}"),
                None => s.ty().name().to_string(),
            },
            None => "a JSON value".to_string(),
        };
        self.fail(ConnectError::data(format!(
            "expected {expected} but the JSON value is {found}"
        )))
    }

    fn int<E: de::Error>(&self, v: i128) -> std::result::Result<Value, E> {
        let ty = self.schema.map_or(Type::Int64, Schema::ty);
        let out_of_range = || {
            self.fail(ConnectError::data(format!(
                "{v} is out of range for {}",
                ty.name()
            )))
        };
        let value = match ty {
            Type::Int8 => Value::Int8(i8::try_from(v).map_err(|_| out_of_range())?),
            Type::Int16 => Value::Int16(i16::try_from(v).map_err(|_| out_of_range())?),
            Type::Int32 => Value::Int32(i32::try_from(v).map_err(|_| out_of_range())?),
            Type::Int64 => Value::Int64(i64::try_from(v).map_err(|_| out_of_range())?),
            Type::Float32 => Value::Float32(v as f32),
            Type::Float64 => Value::Float64(v as f64),
            _ => return Err(self.wrong("an integer")),
        };
        match self.schema {
            Some(s) => logical::from_primitive(s, value).map_err(|e| self.fail(e)),
            None => Ok(value),
        }
    }

    fn float<E: de::Error>(&self, v: f64) -> std::result::Result<Value, E> {
        match self.schema.map(Schema::ty) {
            None | Some(Type::Float64) => Ok(Value::Float64(v)),
            Some(Type::Float32) => Ok(Value::Float32(v as f32)),
            Some(_) => Err(self.wrong("a fraction")),
        }
    }

    fn string<E: de::Error>(&self, s: &str) -> std::result::Result<Value, E> {
        match self.schema.map(Schema::ty) {
            None | Some(Type::String) => Ok(Value::String(s.to_string())),
            Some(Type::Bytes) => base64::engine::general_purpose::STANDARD
                .decode(s)
                .map(|b| Value::Bytes(b.into()))
                .map_err(|e| self.fail(ConnectError::data(format!("Invalid bytes field: {e}")))),
            // Jackson writes non-finite floats as these strings.
            Some(Type::Float64 | Type::Float32) => {
                let v = match s {
                    "NaN" => f64::NAN,
                    "Infinity" => f64::INFINITY,
                    "-Infinity" => f64::NEG_INFINITY,
                    _ => return Err(self.wrong("a string")),
                };
                self.float(v)
            }
            Some(_) => Err(self.wrong("a string")),
        }
    }

    /// A Decimal: base64 of the unscaled bytes, or a JSON number read
    /// exactly from its text and brought to the schema's scale when that
    /// loses nothing.
    fn decimal<'de, D: de::Deserializer<'de>>(
        self,
        d: D,
        schema: &Schema,
    ) -> std::result::Result<Value, D::Error> {
        let raw: &RawValue = de::Deserialize::deserialize(d)?;
        let text = raw.get();
        let scale = logical::decimal_scale(schema).map_err(|e| self.fail::<D::Error>(e))?;
        match text.as_bytes().first() {
            Some(b'n') => self.null(),
            Some(b'"') => {
                let engine = &base64::engine::general_purpose::STANDARD;
                let inner = &text[1..text.len().saturating_sub(1).max(1)];
                let invalid = |e: base64::DecodeSliceError| {
                    self.fail::<D::Error>(ConnectError::data(format!("Invalid bytes for Decimal field: {e}")))
                };
                // Unescaped base64 of a decimal that fits 48 bytes decodes
                // on the stack; anything else takes the general route.
                let mut stack = [0u8; 48];
                if !inner.contains('\\') && base64::decoded_len_estimate(inner.len()) <= stack.len() {
                    let n = engine.decode_slice(inner, &mut stack).map_err(invalid)?;
                    return Ok(Value::Decimal(Decimal::from_unscaled_bytes(&stack[..n], scale)));
                }
                let s: String = serde_json::from_str(text).map_err(|e| self.fail::<D::Error>(ConnectError::data(e.to_string())))?;
                let bytes = engine
                    .decode(s)
                    .map_err(|e| self.fail::<D::Error>(ConnectError::data(format!("Invalid bytes for Decimal field: {e}"))))?;
                Ok(Value::Decimal(Decimal::from_unscaled_bytes(&bytes, scale)))
            }
            Some(b'-' | b'0'..=b'9') => {
                let parsed: Decimal = text.parse().map_err(|e| self.fail::<D::Error>(e))?;
                Ok(Value::Decimal(rescale(parsed, scale)))
            }
            _ => Err(self.fail(ConnectError::data(format!(
                "Invalid type for Decimal, underlying representation should be numeric or bytes but was {}",
                json_kind(text)
            )))),
        }
    }
}

impl Seed<'_> {
    /// Floats are parsed from their text by the standard library, which
    /// rounds correctly (serde_json's fast path may be one ulp off), and
    /// FLOAT32 straight to `f32` (no double rounding).
    fn exact_float<'de, D: de::Deserializer<'de>>(
        self,
        d: D,
        ty: Type,
    ) -> std::result::Result<Value, D::Error> {
        let raw: &RawValue = de::Deserialize::deserialize(d)?;
        let text = raw.get();
        match text.as_bytes().first() {
            Some(b'n') => self.null(),
            Some(b'"') => {
                let s: String = serde_json::from_str(text)
                    .map_err(|e| self.fail::<D::Error>(ConnectError::data(e.to_string())))?;
                self.string(&s)
            }
            Some(b'-' | b'0'..=b'9') => {
                let v = if ty == Type::Float32 {
                    text.parse::<f32>().map(Value::Float32)
                } else {
                    text.parse::<f64>().map(Value::Float64)
                };
                v.map_err(|e| self.fail(ConnectError::data(format!("'{text}' is not a {ty}: {e}"))))
            }
            _ => Err(self.wrong(json_kind(text))),
        }
    }
}

/// `d` at `scale` when no digit is lost, else `d` unchanged.
fn rescale(d: Decimal, scale: i32) -> Decimal {
    let diff = i64::from(scale) - i64::from(d.scale());
    if diff == 0 || diff.unsigned_abs() > 1000 {
        return d;
    }
    let ten = BigInt::from(10);
    if diff > 0 {
        let factor = num_traits_pow(&ten, diff as u32);
        Decimal::new(d.unscaled() * factor, scale)
    } else {
        let factor = num_traits_pow(&ten, (-diff) as u32);
        let rem = d.unscaled() % &factor;
        if rem == BigInt::from(0) {
            Decimal::new(d.unscaled() / factor, scale)
        } else {
            d
        }
    }
}

fn num_traits_pow(base: &BigInt, exp: u32) -> BigInt {
    base.pow(exp)
}

fn json_kind(text: &str) -> &'static str {
    match text.as_bytes().first() {
        Some(b'{') => "OBJECT",
        Some(b'[') => "ARRAY",
        Some(b't' | b'f') => "BOOLEAN",
        Some(b'n') => "NULL",
        Some(b'"') => "STRING",
        _ => "NUMBER",
    }
}

impl<'de> DeserializeSeed<'de> for Seed<'_> {
    type Value = Value;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> std::result::Result<Value, D::Error> {
        if let Some(schema) = self.schema {
            if LogicalType::of(schema) == Some(LogicalType::Decimal) {
                return self.decimal(d, schema);
            }
            if matches!(schema.ty(), Type::Float32 | Type::Float64) {
                return self.exact_float(d, schema.ty());
            }
        }
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Seed<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.schema {
            Some(s) => write!(f, "a JSON value for {s}"),
            None => f.write_str("a JSON value"),
        }
    }

    fn visit_unit<E: de::Error>(self) -> std::result::Result<Value, E> {
        self.null()
    }
    fn visit_none<E: de::Error>(self) -> std::result::Result<Value, E> {
        self.null()
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> std::result::Result<Value, E> {
        match self.schema.map(Schema::ty) {
            None | Some(Type::Boolean) => Ok(Value::Boolean(v)),
            Some(_) => Err(self.wrong("a boolean")),
        }
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> std::result::Result<Value, E> {
        self.int(i128::from(v))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> std::result::Result<Value, E> {
        self.int(i128::from(v))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> std::result::Result<Value, E> {
        self.float(v)
    }
    fn visit_str<E: de::Error>(self, v: &str) -> std::result::Result<Value, E> {
        self.string(v)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<Value, A::Error> {
        match self.schema.map(|s| (s.ty(), s)) {
            None => {
                let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0));
                while let Some(v) =
                    self.nest(seq.next_element_seed(self), || format!("[{}]", items.len()))?
                {
                    items.push(v);
                }
                Ok(Value::Array(items))
            }
            Some((Type::Array, s)) => {
                let inner = self.with(s.value_schema());
                let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0));
                while let Some(v) = self.nest(seq.next_element_seed(inner), || {
                    format!("[{}]", items.len())
                })? {
                    items.push(v);
                }
                Ok(Value::Array(items))
            }
            Some((Type::Map, s)) if s.key_schema().is_some_and(|k| k.ty() != Type::String) => {
                let entry = EntrySeed {
                    key: self.with(s.key_schema()),
                    value: self.with(s.value_schema()),
                };
                let mut entries = Vec::with_capacity(seq.size_hint().unwrap_or(0));
                while let Some(kv) = self.nest(seq.next_element_seed(entry), || {
                    format!("[{}]", entries.len())
                })? {
                    entries.push(kv);
                }
                Ok(Value::Map(entries))
            }
            Some((Type::Map, _)) => Err(self.fail(ConnectError::data(
                "Maps with string fields should be encoded as JSON objects, but found ARRAY",
            ))),
            Some(_) => Err(self.wrong("an array")),
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<Value, A::Error> {
        match self.schema.map(|s| (s.ty(), s)) {
            None => {
                let mut entries = Vec::new();
                while let Some(k) = map.next_key::<String>()? {
                    let v = self.nest(map.next_value_seed(self), || k.clone())?;
                    entries.push((Value::String(k), v));
                }
                Ok(Value::Map(entries))
            }
            Some((Type::Map, s)) if s.key_schema().is_none_or(|k| k.ty() == Type::String) => {
                let inner = self.with(s.value_schema());
                let mut entries = Vec::new();
                while let Some(k) = map.next_key::<String>()? {
                    let v = self.nest(map.next_value_seed(inner), || format!("[{k}]"))?;
                    entries.push((Value::String(k), v));
                }
                Ok(Value::Map(entries))
            }
            Some((Type::Map, _)) => Err(self.fail(ConnectError::data(
                "Maps with non-string fields should be encoded as JSON array of tuples, but found OBJECT",
            ))),
            Some((Type::Struct, s)) => {
                let mut out = Struct::new(s.clone()).map_err(|e| self.fail::<A::Error>(e))?;
                let mut seen = Seen::new(s.field_count());
                let mut next = 0;
                while let Some(index) = map.next_key_seed(FieldIndex { schema: s, expected: next })? {
                    next = index.map_or(next, |i| i + 1);
                    let Some(field) = index.and_then(|i| s.field_at(i)) else {
                        map.next_value::<IgnoredAny>()?;
                        continue;
                    };
                    let v = self.nest(map.next_value_seed(self.with(Some(field.schema()))), || {
                        field.name().to_string()
                    })?;
                    // Every value came out of a seed for this field's schema.
                    out.put_at_unchecked(field.index(), v);
                    seen.set(field.index());
                }
                for field in s.field_list() {
                    if !seen.get(field.index()) {
                        let v = self.nest(self.with(Some(field.schema())).null(), || {
                            field.name().to_string()
                        })?;
                        out.put_at_unchecked(field.index(), v);
                    }
                }
                Ok(Value::Struct(out))
            }
            Some(_) => Err(self.wrong("an object")),
        }
    }
}

/// A struct key: the index of the field it names (`None` for unknown keys,
/// which Kafka ignores). Borrows the key, never allocates; writers emit
/// fields in schema order, so the expected next field is tried before the
/// name lookup.
struct FieldIndex<'s> {
    schema: &'s Schema,
    expected: usize,
}

impl<'de> DeserializeSeed<'de> for FieldIndex<'_> {
    type Value = Option<usize>;
    fn deserialize<D: de::Deserializer<'de>>(
        self,
        d: D,
    ) -> std::result::Result<Option<usize>, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for FieldIndex<'_> {
    type Value = Option<usize>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a field name")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> std::result::Result<Option<usize>, E> {
        if let Some(f) = self
            .schema
            .field_at(self.expected)
            .filter(|f| f.name() == v)
        {
            return Ok(Some(f.index()));
        }
        Ok(self.schema.field(v).map(|f| f.index()))
    }
}

/// One `[key, value]` entry of a map with non-string keys.
#[derive(Clone, Copy)]
struct EntrySeed<'s> {
    key: Seed<'s>,
    value: Seed<'s>,
}

impl<'de> DeserializeSeed<'de> for EntrySeed<'_> {
    type Value = (Value, Value);
    fn deserialize<D: de::Deserializer<'de>>(
        self,
        d: D,
    ) -> std::result::Result<(Value, Value), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for EntrySeed<'_> {
    type Value = (Value, Value);
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a [key, value] map entry")
    }
    fn visit_seq<A: SeqAccess<'de>>(
        self,
        mut seq: A,
    ) -> std::result::Result<(Value, Value), A::Error> {
        let bad_len = |n: usize| {
            self.key.fail::<A::Error>(ConnectError::data(format!(
                "Found invalid map entry, expected length 2 but found :{n}"
            )))
        };
        let k = self
            .key
            .nest(seq.next_element_seed(self.key), || "<key>".to_string())?
            .ok_or_else(|| bad_len(0))?;
        let v = self
            .value
            .nest(seq.next_element_seed(self.value), || format!("[{k}]"))?
            .ok_or_else(|| bad_len(1))?;
        if seq.next_element::<IgnoredAny>()?.is_some() {
            let mut n = 3;
            while seq.next_element::<IgnoredAny>()?.is_some() {
                n += 1;
            }
            return Err(bad_len(n));
        }
        Ok((k, v))
    }
    fn visit_map<A: MapAccess<'de>>(
        self,
        mut map: A,
    ) -> std::result::Result<(Value, Value), A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Err(self.key.fail(ConnectError::data(
            "Found invalid map entry instead of array tuple: OBJECT",
        )))
    }
    fn visit_unit<E: de::Error>(self) -> std::result::Result<(Value, Value), E> {
        Err(self.key.fail(ConnectError::data(
            "Found invalid map entry instead of array tuple: NULL",
        )))
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> std::result::Result<(Value, Value), E> {
        Err(self.key.fail(ConnectError::data(
            "Found invalid map entry instead of array tuple: BOOLEAN",
        )))
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> std::result::Result<(Value, Value), E> {
        Err(self.key.fail(ConnectError::data(
            "Found invalid map entry instead of array tuple: NUMBER",
        )))
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> std::result::Result<(Value, Value), E> {
        Err(self.key.fail(ConnectError::data(
            "Found invalid map entry instead of array tuple: NUMBER",
        )))
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> std::result::Result<(Value, Value), E> {
        Err(self.key.fail(ConnectError::data(
            "Found invalid map entry instead of array tuple: NUMBER",
        )))
    }
    fn visit_str<E: de::Error>(self, _: &str) -> std::result::Result<(Value, Value), E> {
        Err(self.key.fail(ConnectError::data(
            "Found invalid map entry instead of array tuple: STRING",
        )))
    }
}

/// Which struct fields a JSON object named (no allocation up to 64 fields).
enum Seen {
    Small(u64),
    Large(Vec<bool>),
}

impl Seen {
    fn new(n: usize) -> Seen {
        if n <= 64 {
            Seen::Small(0)
        } else {
            Seen::Large(vec![false; n])
        }
    }
    fn set(&mut self, i: usize) {
        match self {
            Seen::Small(bits) => *bits |= 1 << i,
            Seen::Large(v) => v[i] = true,
        }
    }
    fn get(&self, i: usize) -> bool {
        match self {
            Seen::Small(bits) => bits & (1 << i) != 0,
            Seen::Large(v) => v[i],
        }
    }
}
