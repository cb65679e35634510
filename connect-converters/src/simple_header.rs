//! `SimpleHeaderConverter`: Kafka's default header converter.

use connect_api::values::{convert_to_string, parse_string};
use connect_api::{
    ConfigDef, ConfigMap, HeaderConverter, Result, Schema, SchemaAndValue, Serialized, Value,
};

/// Writes a header value in `Values.convertToString` form (UTF-8) and reads
/// it back with `Values.parseString`, which infers the type (`true` is a
/// BOOLEAN, `42` an INT8, `[1,2]` an ARRAY...); the empty string stays a
/// STRING.
///
/// ```
/// use connect_api::{HeaderConverter, Value};
/// use connect_converters::SimpleHeaderConverter;
///
/// let mut c = SimpleHeaderConverter;
/// let mut buf = Vec::new();
/// let written = c.from_connect_header("t", "k", None, &Value::Int32(42), &mut buf).unwrap();
/// assert_eq!(written.bytes_or_null(&buf[..]), Some(&b"42"[..]));
/// assert_eq!(c.to_connect_header("t", "k", Some(b"true")).unwrap().value, Value::Boolean(true));
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct SimpleHeaderConverter;

impl HeaderConverter for SimpleHeaderConverter {
    fn configure(&mut self, config: &ConfigMap) -> Result<()> {
        self.config_def().parse(config).map(|_| ())
    }

    fn config_def(&self) -> ConfigDef {
        ConfigDef::new().define(super::converter_type_key())
    }

    fn from_connect_header(
        &mut self,
        _topic: &str,
        _key: &str,
        _schema: Option<&Schema>,
        value: &Value,
        out: &mut Vec<u8>,
    ) -> Result<Serialized> {
        if value.is_null() {
            return Ok(Serialized::Null);
        }
        out.extend_from_slice(convert_to_string(value).as_bytes());
        Ok(Serialized::Bytes)
    }

    fn to_connect_header(
        &mut self,
        _topic: &str,
        _key: &str,
        bytes: Option<&[u8]>,
    ) -> Result<SchemaAndValue> {
        let Some(bytes) = bytes else {
            return Ok(SchemaAndValue::NULL);
        };
        // As Java's `new String(bytes, UTF_8)`: bytes that are not UTF-8
        // decode to U+FFFD, and the text is parsed like any other.
        let text = String::from_utf8_lossy(bytes);
        if text.is_empty() {
            return Ok(SchemaAndValue::new(Some(Schema::string()), Value::from("")));
        }
        Ok(parse_string(&text))
    }
}
