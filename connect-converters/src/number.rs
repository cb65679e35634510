//! Kafka's `LongConverter`, `IntegerConverter`, `ShortConverter`,
//! `FloatConverter`, `DoubleConverter` and `BooleanConverter`: fixed-width
//! big-endian encodings, as Kafka's serializers write them.

use std::marker::PhantomData;

use connect_api::{
    ConfigDef, ConfigMap, ConnectError, Converter, Headers, Result, Schema, SchemaAndValue,
    Serialized, Type, Value,
};

/// One fixed-width primitive: its schema, size and byte encoding.
pub trait NumberKind: Send + 'static {
    /// Kafka's converter name, for messages.
    const NAME: &'static str;
    /// The schema type.
    const TYPE: Type;
    /// Encoded length in bytes.
    const SIZE: usize;
    /// Append the encoding of `value`; `None` when the value has another type.
    fn encode(value: &Value, out: &mut Vec<u8>) -> Option<()>;
    /// Decode exactly `SIZE` bytes; `None` when they are not a valid encoding.
    fn decode(bytes: &[u8]) -> Option<Value>;
}

macro_rules! number_kind {
    ($(#[$doc:meta])* $kind:ident, $name:literal, $ty:expr, $rust:ty, $variant:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, Default)]
        pub struct $kind;
        impl NumberKind for $kind {
            const NAME: &'static str = $name;
            const TYPE: Type = $ty;
            const SIZE: usize = std::mem::size_of::<$rust>();
            fn encode(value: &Value, out: &mut Vec<u8>) -> Option<()> {
                match value {
                    Value::$variant(v) => {
                        out.extend_from_slice(&v.to_be_bytes());
                        Some(())
                    }
                    _ => None,
                }
            }
            fn decode(bytes: &[u8]) -> Option<Value> {
                Some(Value::$variant(<$rust>::from_be_bytes(bytes.try_into().ok()?)))
            }
        }
    };
}

number_kind!(/// INT64 as 8 bytes.
    LongKind, "LongConverter", Type::Int64, i64, Int64);
number_kind!(/// INT32 as 4 bytes.
    IntegerKind, "IntegerConverter", Type::Int32, i32, Int32);
number_kind!(/// INT16 as 2 bytes.
    ShortKind, "ShortConverter", Type::Int16, i16, Int16);
number_kind!(/// FLOAT32 as 4 bytes (IEEE 754).
    FloatKind, "FloatConverter", Type::Float32, f32, Float32);
number_kind!(/// FLOAT64 as 8 bytes (IEEE 754).
    DoubleKind, "DoubleConverter", Type::Float64, f64, Float64);

/// BOOLEAN as one byte, 0x01 or 0x00.
#[derive(Debug, Clone, Copy, Default)]
pub struct BooleanKind;

impl NumberKind for BooleanKind {
    const NAME: &'static str = "BooleanConverter";
    const TYPE: Type = Type::Boolean;
    const SIZE: usize = 1;
    fn encode(value: &Value, out: &mut Vec<u8>) -> Option<()> {
        match value {
            Value::Boolean(b) => {
                out.push(u8::from(*b));
                Some(())
            }
            _ => None,
        }
    }
    fn decode(bytes: &[u8]) -> Option<Value> {
        match bytes {
            [0] => Some(Value::Boolean(false)),
            [1] => Some(Value::Boolean(true)),
            _ => None,
        }
    }
}

/// A converter for one fixed-width primitive; use the aliases
/// ([`LongConverter`], [`BooleanConverter`], ...).
///
/// ```
/// use connect_api::{Converter, Headers, Schema, Value};
/// use connect_converters::LongConverter;
///
/// let mut c = LongConverter::default();
/// let mut out = Vec::new();
/// c.from_connect_data("t", &Headers::new(), None, &Value::Int64(258), &mut out).unwrap();
/// assert_eq!(out, [0, 0, 0, 0, 0, 0, 1, 2]);
/// let back = c.to_connect_data("t", &Headers::new(), Some(&out)).unwrap();
/// assert_eq!(back.schema, Some(Schema::optional_int64()));
/// assert_eq!(back.value, Value::Int64(258));
/// assert!(c.to_connect_data("t", &Headers::new(), Some(&[1, 2])).is_err());
/// ```
#[derive(Debug)]
pub struct NumberConverter<K>(PhantomData<fn() -> K>);

impl<K> Default for NumberConverter<K> {
    fn default() -> Self {
        NumberConverter(PhantomData)
    }
}

/// Kafka's `LongConverter`.
pub type LongConverter = NumberConverter<LongKind>;
/// Kafka's `IntegerConverter`.
pub type IntegerConverter = NumberConverter<IntegerKind>;
/// Kafka's `ShortConverter`.
pub type ShortConverter = NumberConverter<ShortKind>;
/// Kafka's `FloatConverter`.
pub type FloatConverter = NumberConverter<FloatKind>;
/// Kafka's `DoubleConverter`.
pub type DoubleConverter = NumberConverter<DoubleKind>;
/// Kafka's `BooleanConverter`.
pub type BooleanConverter = NumberConverter<BooleanKind>;

impl<K: NumberKind> Converter for NumberConverter<K> {
    fn configure(&mut self, config: &ConfigMap, _is_key: bool) -> Result<()> {
        self.config_def().parse(config).map(|_| ())
    }

    fn config_def(&self) -> ConfigDef {
        ConfigDef::new().define(super::converter_type_key())
    }

    fn from_connect_data(
        &mut self,
        _topic: &str,
        _headers: &Headers,
        schema: Option<&Schema>,
        value: &Value,
        out: &mut Vec<u8>,
    ) -> Result<Serialized> {
        if let Some(s) = schema.filter(|s| s.ty() != K::TYPE) {
            return Err(ConnectError::data(format!(
                "Invalid schema type for {}: {}",
                K::NAME,
                s.ty()
            )));
        }
        if value.is_null() {
            return Ok(Serialized::Null);
        }
        K::encode(value, out).ok_or_else(|| {
            ConnectError::data(format!(
                "{} is not compatible with objects of type {} (expected {})",
                K::NAME,
                value.type_name(),
                K::TYPE
            ))
        })?;
        Ok(Serialized::Bytes)
    }

    fn to_connect_data(
        &mut self,
        _topic: &str,
        _headers: &Headers,
        bytes: Option<&[u8]>,
    ) -> Result<SchemaAndValue> {
        let schema = Schema::of_type(K::TYPE, true);
        let Some(bytes) = bytes else {
            return Ok(SchemaAndValue::new(schema, Value::Null));
        };
        if bytes.len() != K::SIZE {
            return Err(ConnectError::data(format!(
                "Failed to deserialize {}: size of data received is {} bytes, expected {}",
                K::TYPE,
                bytes.len(),
                K::SIZE
            )));
        }
        let value = K::decode(bytes).ok_or_else(|| {
            ConnectError::data(format!(
                "Failed to deserialize {}: unexpected byte {:#04x}",
                K::TYPE,
                bytes[0]
            ))
        })?;
        Ok(SchemaAndValue::new(schema, value))
    }
}

impl<K: NumberKind> connect_api::HeaderConverter for NumberConverter<K> {
    fn configure(&mut self, config: &ConfigMap) -> Result<()> {
        Converter::configure(self, config, false)
    }
    fn config_def(&self) -> ConfigDef {
        Converter::config_def(self)
    }
    fn from_connect_header(
        &mut self,
        topic: &str,
        _key: &str,
        schema: Option<&Schema>,
        value: &Value,
        out: &mut Vec<u8>,
    ) -> Result<Serialized> {
        self.from_connect_data(topic, &Headers::new(), schema, value, out)
    }
    fn to_connect_header(
        &mut self,
        topic: &str,
        _key: &str,
        bytes: Option<&[u8]>,
    ) -> Result<SchemaAndValue> {
        self.to_connect_data(topic, &Headers::new(), bytes)
    }
}
