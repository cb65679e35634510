//! `InsertHeader`: adds a header with a fixed value to every record. The
//! literal is typed as Kafka's `Values.parseString` reads it (`42` is an
//! INT8, `true` a BOOLEAN, `[1,2]` an ARRAY, anything else a STRING).

use connect_api::config::validators::NonNull;
use connect_api::config::{ConfigDef, ConfigKey, ConfigMap, ConfigType, Importance};
use connect_api::transform::{Configurable, Transformation, Verdict};
use connect_api::values::parse_string;
use connect_api::{ConnectError, ConnectRecord, Header, Result};

/// Kafka's class name.
pub const CLASS: &str = "org.apache.kafka.connect.transforms.InsertHeader";

const HEADER: &str = "header";
const VALUE_LITERAL: &str = "value.literal";

/// Kafka's `InsertHeader`.
///
/// ```
/// use connect_api::config::ConfigMap;
/// use connect_api::transform::{Configurable, Transformation};
/// use connect_api::{Record, Schema, SinkRecord, Value};
/// use connect_transforms::insert_header::InsertHeader;
///
/// let mut smt = InsertHeader::new();
/// let cfg = ConfigMap::from([("header", "retries"), ("value.literal", "3")]);
/// smt.configure(&cfg).unwrap();
/// let out = smt.apply(SinkRecord::new(Record::new("t", None, Value::Null), 0, 0)).unwrap().unwrap();
/// let h = out.record.headers.last_with_name("retries").unwrap();
/// assert_eq!((h.schema(), h.value()), (Some(&Schema::int8()), &Value::Int8(3)));
/// ```
#[derive(Debug, Default, Clone)]
pub struct InsertHeader {
    header: Option<Header>,
}

impl InsertHeader {
    /// An unconfigured InsertHeader.
    pub fn new() -> Self {
        Self::default()
    }
}

/// The keys InsertHeader accepts.
pub fn config_def() -> ConfigDef {
    ConfigDef::new()
        .define(
            ConfigKey::new(HEADER, ConfigType::String)
                .importance(Importance::High)
                .validator(NonNull)
                .doc("The name of the header."),
        )
        .define(
            ConfigKey::new(VALUE_LITERAL, ConfigType::String)
                .importance(Importance::High)
                .validator(NonNull)
                .doc("The literal value that is to be set as the header value on all records."),
        )
}

impl Configurable for InsertHeader {
    fn configure(&mut self, config: &ConfigMap) -> Result<()> {
        let cfg = config_def().parse(config)?;
        let parsed = parse_string(cfg.get_string(VALUE_LITERAL).unwrap_or_default());
        self.header = Some(Header::new(
            cfg.get_string(HEADER).unwrap_or_default(),
            parsed.schema,
            parsed.value,
        ));
        Ok(())
    }

    fn config_def(&self) -> ConfigDef {
        config_def()
    }
}

impl<R: ConnectRecord> Transformation<R> for InsertHeader {
    fn transform(&mut self, record: &mut R) -> Result<Verdict> {
        let header = self
            .header
            .as_ref()
            .ok_or_else(|| ConnectError::other("InsertHeader is not configured"))?;
        record.record_mut().headers.push(header.clone());
        Ok(Verdict::Keep)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use connect_api::{Headers, Record, Schema, SourceMap, SourceRecord, Value};

    fn smt(pairs: &[(&str, &str)]) -> Result<InsertHeader> {
        let mut t = InsertHeader::new();
        let cfg: ConfigMap = ConfigMap::from_pairs(pairs.iter().copied());
        t.configure(&cfg)?;
        Ok(t)
    }

    fn apply(t: &mut InsertHeader, headers: Headers) -> Headers {
        let rec = SourceRecord::new(
            Default::default(),
            SourceMap::new(),
            Record::new("t", Some(Schema::string()), Value::from("v")).with_headers(headers),
        );
        let out = t.apply(rec).unwrap().unwrap();
        assert_eq!(out.record.value, Value::from("v"));
        out.record.headers
    }

    #[test]
    fn literal_is_typed_like_values_parse_string() {
        for (literal, schema, value) in [
            (
                "hello world",
                Some(Schema::string()),
                Value::from("hello world"),
            ),
            ("true", Some(Schema::boolean()), Value::Boolean(true)),
            ("70000", Some(Schema::int32()), Value::Int32(70000)),
        ] {
            let mut t = smt(&[("header", "h"), ("value.literal", literal)]).unwrap();
            let headers = apply(&mut t, Headers::new());
            let h = headers.last_with_name("h").unwrap();
            assert_eq!(
                (h.schema(), h.value()),
                (schema.as_ref(), &value),
                "{literal}"
            );
        }
    }

    #[test]
    fn appends_after_existing_headers_with_same_key() {
        let mut t = smt(&[("header", "h"), ("value.literal", "new")]).unwrap();
        let mut existing = Headers::new();
        existing.add_string("h", "old");
        let headers = apply(&mut t, existing);
        assert_eq!(headers.all_with_name("h").count(), 2);
        assert_eq!(
            headers.last_with_name("h").unwrap().value(),
            &Value::from("new")
        );
    }

    #[test]
    fn both_keys_are_required() {
        let e = smt(&[("header", "h")]).unwrap_err().to_string();
        assert!(e.contains("value.literal"), "{e}");
        let e = smt(&[("value.literal", "x")]).unwrap_err().to_string();
        assert!(e.contains("\"header\""), "{e}");
    }
}
