//! `StringConverter`: Kafka's `org.apache.kafka.connect.storage.StringConverter`.

use connect_api::config::{validators::ValidString, ConfigKey, ConfigType, Importance};
use connect_api::{
    ConfigDef, ConfigMap, Converter, Headers, Result, Schema, SchemaAndValue, Serialized, Value,
};

/// Config key: the character set (`UTF-8`, `US-ASCII` or `ISO-8859-1`).
pub const CONVERTER_ENCODING: &str = "converter.encoding";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Encoding {
    Utf8,
    Ascii,
    Latin1,
}

/// Writes any value as its string form and reads bytes as an optional STRING.
///
/// Writing uses Kafka's `Values.convertToString` form for non-strings.
/// Reading replaces malformed input with U+FFFD, as Java's decoder does.
///
/// ```
/// use connect_api::{Converter, Headers, Schema, Value};
/// use connect_converters::StringConverter;
///
/// let mut c = StringConverter::default();
/// let mut out = Vec::new();
/// c.from_connect_data("t", &Headers::new(), None, &Value::Int32(42), &mut out).unwrap();
/// assert_eq!(out, b"42");
/// let back = c.to_connect_data("t", &Headers::new(), Some(b"hi")).unwrap();
/// assert_eq!(back.schema, Some(Schema::optional_string()));
/// assert_eq!(back.value, Value::from("hi"));
/// ```
#[derive(Debug, Clone)]
pub struct StringConverter {
    encoding: Encoding,
}

impl Default for StringConverter {
    fn default() -> Self {
        StringConverter {
            encoding: Encoding::Utf8,
        }
    }
}

impl StringConverter {
    /// The keys this converter accepts.
    pub fn definition() -> ConfigDef {
        ConfigDef::new()
            .define(
                ConfigKey::new(CONVERTER_ENCODING, ConfigType::String)
                    .default("UTF-8")
                    .importance(Importance::High)
                    .validator(ValidString::case_insensitive(["UTF-8", "UTF8", "US-ASCII", "ASCII", "ISO-8859-1", "LATIN1"]))
                    .doc("The name of the Java character set to use for encoding strings as byte arrays."),
            )
            .define(super::converter_type_key())
    }
}

impl Converter for StringConverter {
    fn configure(&mut self, config: &ConfigMap, _is_key: bool) -> Result<()> {
        let parsed = Self::definition().parse(config)?;
        let name = parsed
            .get_string(CONVERTER_ENCODING)
            .unwrap_or("UTF-8")
            .to_ascii_uppercase();
        self.encoding = match name.as_str() {
            "US-ASCII" | "ASCII" => Encoding::Ascii,
            "ISO-8859-1" | "LATIN1" => Encoding::Latin1,
            _ => Encoding::Utf8,
        };
        Ok(())
    }

    fn config_def(&self) -> ConfigDef {
        Self::definition()
    }

    fn from_connect_data(
        &mut self,
        _topic: &str,
        _headers: &Headers,
        _schema: Option<&Schema>,
        value: &Value,
        out: &mut Vec<u8>,
    ) -> Result<Serialized> {
        let text;
        let s = match value {
            Value::Null => return Ok(Serialized::Null),
            Value::String(s) => s.as_str(),
            other => {
                text = connect_api::values::convert_to_string(other);
                text.as_str()
            }
        };
        match self.encoding {
            Encoding::Utf8 => out.extend_from_slice(s.as_bytes()),
            // Java's encoders write '?' for unmappable characters.
            Encoding::Ascii => {
                out.extend(s.chars().map(|c| if c.is_ascii() { c as u8 } else { b'?' }))
            }
            Encoding::Latin1 => out.extend(
                s.chars()
                    .map(|c| u8::try_from(u32::from(c)).unwrap_or(b'?')),
            ),
        }
        Ok(Serialized::Bytes)
    }

    fn to_connect_data(
        &mut self,
        _topic: &str,
        _headers: &Headers,
        bytes: Option<&[u8]>,
    ) -> Result<SchemaAndValue> {
        let value = match bytes {
            None => Value::Null,
            Some(b) => Value::String(match self.encoding {
                Encoding::Utf8 => String::from_utf8_lossy(b).into_owned(),
                Encoding::Ascii => b
                    .iter()
                    .map(|&c| {
                        if c.is_ascii() {
                            char::from(c)
                        } else {
                            '\u{fffd}'
                        }
                    })
                    .collect(),
                Encoding::Latin1 => b.iter().map(|&c| char::from(c)).collect(),
            }),
        };
        Ok(SchemaAndValue::new(Some(Schema::optional_string()), value))
    }
}

super::header_converter_via_converter!(StringConverter);
