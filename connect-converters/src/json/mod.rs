//! `JsonConverter`, byte-for-byte compatible with Kafka's
//! `org.apache.kafka.connect.json.JsonConverter`.
//!
//! With `schemas.enable=true` (the default) a record is written as
//! `{"schema":S,"payload":P}`. The `{"schema":S,"payload":` prefix is
//! rendered once per schema and cached (looked up by the schema's identity,
//! then by equality), so the per-record cost is one copy of those bytes plus
//! the payload, written straight into the caller's buffer. Reading keeps the
//! raw schema text of the last records: when a record starts with the same
//! bytes, the schema is neither scanned nor parsed again.

mod javafmt;

/// Appends `s` as a JSON string escaped exactly as Kafka's Jackson writes
/// it, for other writers of Kafka's JSON formats (the distributed worker's
/// internal topics).
///
/// ```
/// let mut out = Vec::new();
/// connect_converters::json::write_jackson_string(&mut out, "a\u{1f}\u{1F600}");
/// assert_eq!(out, br#""a\u001F\uD83D\uDE00""#);
/// ```
pub use javafmt::write_str as write_jackson_string;

/// Appends a schemaless JSON value as Kafka's `JsonConverter` writes it
/// (Jackson's string escapes, Java's `Double.toString` for floating-point
/// numbers, objects in their map's order): the exact bytes Java's workers
/// write, e.g. for the offsets topic's keys.
///
/// ```
/// let mut out = Vec::new();
/// let v = serde_json::json!(["c", {"f": 1e10, "s": "\u{1}"}]);
/// connect_converters::json::write_jackson_value(&mut out, &v);
/// assert_eq!(out, br#"["c",{"f":1.0E10,"s":"\u0001"}]"#);
/// ```
pub use javafmt::write_value as write_jackson_value;
mod payload;
mod read;
mod schema;

#[cfg(feature = "avro")]
pub(crate) use payload::minimal_twos_complement;

use std::fmt;
use std::sync::Arc;

use connect_api::config::{
    validators::Range, validators::ValidString, ConfigKey, ConfigType, Importance,
};
use connect_api::{
    ConfigDef, ConfigMap, ConnectError, Converter, Headers, Result, Schema, SchemaAndValue,
    Serialized, Value,
};
use serde::de::{self, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

use connect_api::cache::{Lru, SchemaCache};

/// How Decimal values are written (`decimal.format`, KIP-481).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DecimalFormat {
    /// Base64 of the unscaled two's-complement bytes (Kafka's default).
    #[default]
    Base64,
    /// A plain JSON number.
    Numeric,
}

/// The settings the payload reader and writer need.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Settings {
    pub(crate) decimal_format: DecimalFormat,
    pub(crate) replace_null_with_default: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            decimal_format: DecimalFormat::Base64,
            replace_null_with_default: true,
        }
    }
}

/// Config key: whether records carry the `{"schema","payload"}` envelope.
pub const SCHEMAS_ENABLE: &str = "schemas.enable";
/// Config key: how many schemas to cache in each direction.
pub const SCHEMAS_CACHE_SIZE: &str = "schemas.cache.size";
/// Config key: `BASE64` or `NUMERIC`.
pub const DECIMAL_FORMAT: &str = "decimal.format";
/// Config key: whether a null is replaced by the schema's default.
pub const REPLACE_NULL_WITH_DEFAULT: &str = "replace.null.with.default";

const ENVELOPE_ERROR: &str = "JsonConverter with schemas.enable requires \"schema\" and \"payload\" fields and may not contain additional fields. If you are trying to deserialize plain JSON data, set schemas.enable=false in your converter configuration.";

/// Kafka's JSON converter (also a header converter).
///
/// ```
/// use connect_api::{Converter, Headers, Schema, Value};
/// use connect_converters::JsonConverter;
///
/// let mut json = JsonConverter::new();
/// let mut out = Vec::new();
/// json.from_connect_data("t", &Headers::new(), Some(&Schema::string()), &Value::from("firest line"), &mut out).unwrap();
/// assert_eq!(out, br#"{"schema":{"type":"string","optional":false},"payload":"firest line"}"#);
/// let back = json.to_connect_data("t", &Headers::new(), Some(&out)).unwrap();
/// assert_eq!(back.schema, Some(Schema::string()));
/// assert_eq!(back.value, Value::from("firest line"));
/// ```
pub struct JsonConverter {
    schemas_enabled: bool,
    settings: Settings,
    to_json: ToJsonCache,
    to_connect: ToConnectCache,
}

impl fmt::Debug for JsonConverter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JsonConverter")
            .field("schemas_enabled", &self.schemas_enabled)
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl Default for JsonConverter {
    fn default() -> Self {
        Self::new()
    }
}

impl JsonConverter {
    /// A converter with Kafka's defaults (schemas enabled, base64 decimals,
    /// nulls replaced by defaults, 1000 cached schemas per direction).
    pub fn new() -> Self {
        JsonConverter {
            schemas_enabled: true,
            settings: Settings::default(),
            to_json: ToJsonCache::new(1000),
            to_connect: ToConnectCache::new(1000),
        }
    }

    /// The keys this converter accepts (Kafka's `JsonConverterConfig`).
    pub fn definition() -> ConfigDef {
        ConfigDef::new()
            .define(
                ConfigKey::new(SCHEMAS_ENABLE, ConfigType::Boolean)
                    .default(true)
                    .importance(Importance::High)
                    .doc("Include schemas within each of the serialized values and keys."),
            )
            .define(
                ConfigKey::new(SCHEMAS_CACHE_SIZE, ConfigType::Int)
                    .default(1000)
                    .importance(Importance::High)
                    .validator(Range::at_least(0))
                    .doc("The maximum number of schemas that can be cached in this converter instance."),
            )
            .define(
                ConfigKey::new(DECIMAL_FORMAT, ConfigType::String)
                    .default("BASE64")
                    .importance(Importance::Low)
                    .validator(ValidString::case_insensitive(["BASE64", "NUMERIC"]))
                    .doc("Controls which format this converter will serialize decimals in. This value is case insensitive and can be either 'BASE64' (default) or 'NUMERIC'"),
            )
            .define(
                ConfigKey::new(REPLACE_NULL_WITH_DEFAULT, ConfigType::Boolean)
                    .default(true)
                    .importance(Importance::Low)
                    .doc("Whether to replace fields that have a default value and that are null to the default value. When set to true, the default value is used, otherwise null is used."),
            )
            .define(super::converter_type_key())
    }

    fn write_record(
        &mut self,
        schema: Option<&Schema>,
        value: &Value,
        out: &mut Vec<u8>,
    ) -> Result<()> {
        if !self.schemas_enabled {
            return payload::write_value(out, schema, value, &self.settings);
        }
        self.to_json.write_prefix(schema, &self.settings, out)?;
        payload::write_value(out, schema, value, &self.settings)?;
        out.push(b'}');
        Ok(())
    }

    fn read_record(&mut self, bytes: &[u8]) -> Result<SchemaAndValue> {
        if !self.schemas_enabled {
            if bytes.iter().all(u8::is_ascii_whitespace) {
                return Ok(SchemaAndValue::NULL);
            }
            let value = read::read_payload(bytes, None, &self.settings)?;
            return Ok(SchemaAndValue::new(None, value));
        }
        if let Some(found) = self.read_fast(bytes) {
            return found;
        }
        let (schema_raw, payload_raw) = split_envelope(bytes)?;
        let schema = self
            .to_connect
            .schema_for(schema_raw.get().as_bytes(), &self.settings)?;
        let value = read::read_payload(
            payload_raw.get().as_bytes(),
            schema.as_ref(),
            &self.settings,
        )?;
        Ok(SchemaAndValue::new(schema, value))
    }

    /// Compact envelopes whose schema text equals a recently seen one skip
    /// the schema entirely: only the payload is parsed. `None` sends the
    /// record to the general path.
    fn read_fast(&mut self, bytes: &[u8]) -> Option<Result<SchemaAndValue>> {
        const HEAD: &[u8] = b"{\"schema\":";
        const MID: &[u8] = b",\"payload\":";
        let rest = bytes.strip_prefix(HEAD)?;
        let (raw, schema) = self
            .to_connect
            .recent
            .iter()
            .find(|(raw, _)| rest.starts_with(raw))?;
        let rest = rest[raw.len()..].strip_prefix(MID)?;
        let end = rest.iter().rposition(|b| !b.is_ascii_whitespace())?;
        if rest[end] != b'}' {
            return None;
        }
        let schema = schema.clone();
        match read::read_payload(&rest[..end], schema.as_ref(), &self.settings) {
            Ok(value) => Some(Ok(SchemaAndValue::new(schema, value))),
            // A data error is final; a syntax error gets the general
            // path's message (the payload slice may just be malformed).
            Err(e) if e.source().is_none() => Some(Err(e)),
            Err(_) => None,
        }
    }
}

use std::error::Error as _;

/// Find `"schema"` and `"payload"` in an envelope, as raw JSON text.
fn split_envelope(bytes: &[u8]) -> Result<(&RawValue, &RawValue)> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let found = de::Deserializer::deserialize_any(&mut de, EnvelopeVisitor)
        .and_then(|found| de.end().map(|()| found))
        .map_err(read::serialization_error)?;
    found.ok_or_else(|| ConnectError::data(ENVELOPE_ERROR))
}

struct EnvelopeVisitor;

impl<'de> Visitor<'de> for EnvelopeVisitor {
    type Value = Option<(&'de RawValue, &'de RawValue)>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_map<A: MapAccess<'de>>(
        self,
        mut map: A,
    ) -> std::result::Result<Self::Value, A::Error> {
        let (mut schema, mut payload, mut other) = (None, None, false);
        // Keys are compared borrowed; escaped keys are never "schema"/"payload" in Kafka's output.
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            match key.as_ref() {
                "schema" => schema = Some(map.next_value::<&'de RawValue>()?),
                "payload" => payload = Some(map.next_value::<&'de RawValue>()?),
                _ => {
                    other = true;
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(match (schema, payload, other) {
            (Some(s), Some(p), false) => Some((s, p)),
            _ => None,
        })
    }
    fn visit_seq<A: SeqAccess<'de>>(
        self,
        mut seq: A,
    ) -> std::result::Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(None)
    }
    fn visit_unit<E: de::Error>(self) -> std::result::Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> std::result::Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> std::result::Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> std::result::Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> std::result::Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_str<E: de::Error>(self, _: &str) -> std::result::Result<Self::Value, E> {
        Ok(None)
    }
}

/// Schema -> rendered `{"schema":S,"payload":` prefix.
struct ToJsonCache {
    rendered: SchemaCache<Arc<[u8]>>,
    null_prefix: Arc<[u8]>,
}

/// Raw schema texts remembered for the fast read path.
const RECENT: usize = 4;

impl ToJsonCache {
    fn new(capacity: usize) -> Self {
        ToJsonCache {
            rendered: SchemaCache::new(capacity),
            null_prefix: Arc::from(&b"{\"schema\":null,\"payload\":"[..]),
        }
    }

    /// Append the `{"schema":S,"payload":` prefix of `schema` to `out`.
    fn write_prefix(
        &mut self,
        schema: Option<&Schema>,
        settings: &Settings,
        out: &mut Vec<u8>,
    ) -> Result<()> {
        let Some(schema) = schema else {
            out.extend_from_slice(&self.null_prefix);
            return Ok(());
        };
        let prefix = self.rendered.get_or_try_insert(schema, |schema| {
            let mut rendered = b"{\"schema\":".to_vec();
            schema::render_schema(&mut rendered, schema, None, settings)?;
            rendered.extend_from_slice(b",\"payload\":");
            Ok(Arc::from(rendered))
        })?;
        out.extend_from_slice(prefix);
        Ok(())
    }
}

/// Raw schema JSON text -> Connect schema.
struct ToConnectCache {
    recent: Vec<(Box<[u8]>, Option<Schema>)>,
    by_text: Lru<Box<[u8]>, Option<Schema>>,
}

impl ToConnectCache {
    fn new(capacity: usize) -> Self {
        ToConnectCache {
            recent: Vec::with_capacity(RECENT),
            by_text: Lru::new(capacity),
        }
    }

    fn schema_for(&mut self, raw: &[u8], settings: &Settings) -> Result<Option<Schema>> {
        let schema = match self.by_text.get(raw) {
            Some(s) => s.clone(),
            None => {
                let json: serde_json::Value =
                    serde_json::from_slice(raw).map_err(read::serialization_error)?;
                let s = schema::parse_schema(&json, settings)?;
                self.by_text.insert(raw.into(), s.clone());
                s
            }
        };
        if !self.recent.iter().any(|(r, _)| &**r == raw) {
            if self.recent.len() == RECENT {
                self.recent.remove(0);
            }
            self.recent.push((raw.into(), schema.clone()));
        }
        Ok(schema)
    }
}

impl Converter for JsonConverter {
    fn configure(&mut self, config: &ConfigMap, _is_key: bool) -> Result<()> {
        let parsed = Self::definition().parse(config)?;
        self.schemas_enabled = parsed.get_bool(SCHEMAS_ENABLE).unwrap_or(true);
        let size = parsed.get_int(SCHEMAS_CACHE_SIZE).unwrap_or(1000);
        let size = usize::try_from(size).unwrap_or(0);
        self.settings = Settings {
            decimal_format: match parsed.get_string(DECIMAL_FORMAT) {
                Some(f) if f.eq_ignore_ascii_case("NUMERIC") => DecimalFormat::Numeric,
                _ => DecimalFormat::Base64,
            },
            replace_null_with_default: parsed.get_bool(REPLACE_NULL_WITH_DEFAULT).unwrap_or(true),
        };
        self.to_json = ToJsonCache::new(size);
        self.to_connect = ToConnectCache::new(size);
        Ok(())
    }

    fn config_def(&self) -> ConfigDef {
        Self::definition()
    }

    fn from_connect_data(
        &mut self,
        topic: &str,
        _headers: &Headers,
        schema: Option<&Schema>,
        value: &Value,
        out: &mut Vec<u8>,
    ) -> Result<Serialized> {
        if schema.is_none() && value.is_null() {
            return Ok(Serialized::Null);
        }
        let start = out.len();
        match self.write_record(schema, value, out) {
            Ok(()) => Ok(Serialized::Bytes),
            Err(e) => {
                out.truncate(start);
                Err(e.context(format_args!(
                    "JsonConverter cannot write a record for topic '{topic}'"
                )))
            }
        }
    }

    fn to_connect_data(
        &mut self,
        topic: &str,
        _headers: &Headers,
        bytes: Option<&[u8]>,
    ) -> Result<SchemaAndValue> {
        let Some(bytes) = bytes else {
            return Ok(SchemaAndValue::NULL);
        };
        self.read_record(bytes).map_err(|e| {
            e.context(format_args!(
                "JsonConverter cannot read a record from topic '{topic}'"
            ))
        })
    }
}

super::header_converter_via_converter!(JsonConverter);
