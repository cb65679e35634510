//! Converters: between Connect data and the bytes stored in Kafka.

use crate::config::{ConfigDef, ConfigMap};
use crate::error::Result;
use crate::header::Headers;
use crate::schema::Schema;
use crate::value::Value;

/// A schema (possibly absent) and a value, as read from bytes.
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct SchemaAndValue {
    /// The schema, `None` for schemaless data.
    pub schema: Option<Schema>,
    /// The value.
    pub value: Value,
}

impl SchemaAndValue {
    /// A schema and a value.
    pub fn new(schema: Option<Schema>, value: Value) -> Self {
        SchemaAndValue { schema, value }
    }
    /// No schema, null value (what null bytes read as).
    pub const NULL: SchemaAndValue = SchemaAndValue {
        schema: None,
        value: Value::Null,
    };
}

/// What [`Converter::from_connect_data`] wrote into the caller's buffer.
///
/// Kafka distinguishes null bytes (a tombstone) from empty bytes, so a
/// converter says which one it meant instead of leaving the caller to guess
/// from an empty buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Serialized {
    /// The buffer holds the serialized bytes (possibly none: empty bytes).
    Bytes,
    /// Null bytes: the buffer was left empty and the record's key or value
    /// is written as null.
    Null,
}

impl Serialized {
    /// `true` for [`Serialized::Null`].
    pub fn is_null(self) -> bool {
        self == Serialized::Null
    }

    /// `Some(buffer)` for [`Serialized::Bytes`], `None` for
    /// [`Serialized::Null`]: the shape a Kafka record's key and value take.
    ///
    /// ```
    /// use connect_api::Serialized;
    /// assert_eq!(Serialized::Bytes.bytes_or_null(vec![1u8]), Some(vec![1]));
    /// assert_eq!(Serialized::Null.bytes_or_null(vec![1u8]), None);
    /// ```
    pub fn bytes_or_null<B>(self, buffer: B) -> Option<B> {
        match self {
            Serialized::Bytes => Some(buffer),
            Serialized::Null => None,
        }
    }
}

/// Turns keys and values into bytes and back.
///
/// `from_connect_data` writes into a buffer the caller owns and reuses, so
/// the hot path allocates nothing per record; it returns
/// [`Serialized::Null`] for a null result (a tombstone), leaving the buffer
/// empty.
///
/// ```
/// use connect_api::config::ConfigMap;
/// use connect_api::converter::{Converter, SchemaAndValue, Serialized};
/// use connect_api::{ConnectError, Headers, Result, Schema, Value};
///
/// /// UTF-8 strings only.
/// struct Utf8;
/// impl Converter for Utf8 {
///     fn configure(&mut self, _: &ConfigMap, _is_key: bool) -> Result<()> { Ok(()) }
///     fn from_connect_data(&mut self, _: &str, _: &Headers, _: Option<&Schema>, value: &Value, out: &mut Vec<u8>) -> Result<Serialized> {
///         match value {
///             Value::Null => Ok(Serialized::Null),
///             Value::String(s) => { out.extend_from_slice(s.as_bytes()); Ok(Serialized::Bytes) }
///             v => Err(ConnectError::data(format!("expected STRING, got {}", v.type_name()))),
///         }
///     }
///     fn to_connect_data(&mut self, _: &str, _: &Headers, bytes: Option<&[u8]>) -> Result<SchemaAndValue> {
///         let Some(b) = bytes else { return Ok(SchemaAndValue::NULL) };
///         let s = std::str::from_utf8(b).map_err(|e| ConnectError::data(e.to_string()))?;
///         Ok(SchemaAndValue::new(Some(Schema::optional_string()), Value::from(s)))
///     }
/// }
/// let mut buf = Vec::new();
/// let written = Utf8.from_connect_data("t", &Headers::new(), None, &Value::from("hi"), &mut buf).unwrap();
/// assert_eq!(written, Serialized::Bytes);
/// assert_eq!(buf, b"hi");
/// ```
#[allow(clippy::wrong_self_convention)] // Kafka's method names, kept on purpose
pub trait Converter: Send {
    /// Configure (`key.converter.*` / `value.converter.*` without the prefix).
    fn configure(&mut self, config: &ConfigMap, is_key: bool) -> Result<()>;

    /// The keys this converter accepts.
    fn config_def(&self) -> ConfigDef {
        ConfigDef::new()
    }

    /// Serialize `value` (of `schema`) for `topic` into `out`;
    /// [`Serialized::Null`] means null bytes (nothing was written).
    fn from_connect_data(
        &mut self,
        topic: &str,
        headers: &Headers,
        schema: Option<&Schema>,
        value: &Value,
        out: &mut Vec<u8>,
    ) -> Result<Serialized>;

    /// Deserialize `bytes` (`None` for null) read from `topic`.
    fn to_connect_data(
        &mut self,
        topic: &str,
        headers: &Headers,
        bytes: Option<&[u8]>,
    ) -> Result<SchemaAndValue>;
}

/// Turns header values into bytes and back.
///
/// `from_connect_header` has [`Converter::from_connect_data`]'s shape: it
/// writes into a buffer the caller owns and reuses and says whether it
/// meant bytes or null, so a record's headers cost no allocation once the
/// buffers have grown.
///
/// ```
/// use connect_api::config::ConfigMap;
/// use connect_api::converter::{HeaderConverter, SchemaAndValue, Serialized};
/// use connect_api::{ConnectError, Result, Schema, Value};
///
/// /// Header values as their `Values` string form, read back as strings.
/// struct AsText;
/// impl HeaderConverter for AsText {
///     fn configure(&mut self, _: &ConfigMap) -> Result<()> { Ok(()) }
///     fn from_connect_header(&mut self, _: &str, _: &str, _: Option<&Schema>, value: &Value, out: &mut Vec<u8>) -> Result<Serialized> {
///         if value.is_null() {
///             return Ok(Serialized::Null);
///         }
///         out.extend_from_slice(connect_api::values::convert_to_string(value).as_bytes());
///         Ok(Serialized::Bytes)
///     }
///     fn to_connect_header(&mut self, _: &str, key: &str, bytes: Option<&[u8]>) -> Result<SchemaAndValue> {
///         let Some(b) = bytes else { return Ok(SchemaAndValue::NULL) };
///         let s = std::str::from_utf8(b).map_err(|e| ConnectError::data_at(key, e.to_string()))?;
///         Ok(SchemaAndValue::new(Some(Schema::optional_string()), Value::from(s)))
///     }
/// }
/// let mut c = AsText;
/// let mut buf = Vec::new();
/// let written = c.from_connect_header("t", "retries", None, &Value::Int32(3), &mut buf).unwrap();
/// assert_eq!(written.bytes_or_null(&buf[..]), Some(&b"3"[..]));
/// assert_eq!(c.to_connect_header("t", "retries", Some(&buf)).unwrap().value, Value::from("3"));
/// ```
#[allow(clippy::wrong_self_convention)] // Kafka's method names, kept on purpose
pub trait HeaderConverter: Send {
    /// Configure (`header.converter.*` without the prefix).
    fn configure(&mut self, config: &ConfigMap) -> Result<()>;

    /// The keys this converter accepts.
    fn config_def(&self) -> ConfigDef {
        ConfigDef::new()
    }

    /// Serialize one header value (of `schema`) into `out`, which the
    /// caller hands over empty; [`Serialized::Null`] means null bytes
    /// (nothing was written).
    fn from_connect_header(
        &mut self,
        topic: &str,
        header_key: &str,
        schema: Option<&Schema>,
        value: &Value,
        out: &mut Vec<u8>,
    ) -> Result<Serialized>;

    /// Deserialize one header value.
    fn to_connect_header(
        &mut self,
        topic: &str,
        header_key: &str,
        bytes: Option<&[u8]>,
    ) -> Result<SchemaAndValue>;
}
