//! `ByteArrayConverter`: Kafka's `org.apache.kafka.connect.converters.ByteArrayConverter`.

use connect_api::{
    ConfigDef, ConfigMap, ConnectError, Converter, Headers, Result, Schema, SchemaAndValue,
    Serialized, Type, Value,
};

/// Passes bytes through unchanged; reads as optional BYTES.
///
/// ```
/// use connect_api::{Converter, Headers, Schema, Value};
/// use connect_converters::ByteArrayConverter;
///
/// let mut c = ByteArrayConverter;
/// let mut out = Vec::new();
/// c.from_connect_data("t", &Headers::new(), Some(&Schema::bytes()), &Value::Bytes(vec![1, 2].into()), &mut out).unwrap();
/// assert_eq!(out, [1, 2]);
/// assert!(c.from_connect_data("t", &Headers::new(), None, &Value::from("x"), &mut out).is_err());
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct ByteArrayConverter;

impl Converter for ByteArrayConverter {
    fn configure(&mut self, config: &ConfigMap, _is_key: bool) -> Result<()> {
        ConfigDef::new()
            .define(super::converter_type_key())
            .parse(config)
            .map(|_| ())
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
        if let Some(s) = schema.filter(|s| s.ty() != Type::Bytes) {
            return Err(ConnectError::data(format!(
                "Invalid schema type for ByteArrayConverter: {}",
                s.ty()
            )));
        }
        match value {
            Value::Null => Ok(Serialized::Null),
            Value::Bytes(b) => {
                out.extend_from_slice(b);
                Ok(Serialized::Bytes)
            }
            other => Err(ConnectError::data(format!(
                "ByteArrayConverter is not compatible with objects of type {}",
                other.type_name()
            ))),
        }
    }

    fn to_connect_data(
        &mut self,
        _topic: &str,
        _headers: &Headers,
        bytes: Option<&[u8]>,
    ) -> Result<SchemaAndValue> {
        let value = bytes.map_or(Value::Null, |b| {
            Value::Bytes(bytes::Bytes::copy_from_slice(b))
        });
        Ok(SchemaAndValue::new(Some(Schema::optional_bytes()), value))
    }
}

super::header_converter_via_converter!(ByteArrayConverter);
