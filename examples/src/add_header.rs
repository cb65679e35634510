//! `AddHeader`: the seed's custom SMT, which adds one fixed STRING header to
//! every record, written against connect-api alone.
//!
//! It keeps the seed's configuration keys, so a Java configuration carries
//! over unchanged:
//!
//! ```properties
//! transforms=addHeader
//! transforms.addHeader.type=AddHeader
//! transforms.addHeader.header.key=source
//! transforms.addHeader.header.value=connect
//! ```
//!
//! The value is a STRING header; a header converter writes it as the same
//! UTF-8 bytes the seed wrote. (connect-transforms' `InsertHeader` is
//! Kafka's built-in equivalent, with keys `header` and `value.literal` and a
//! typed literal.)

use connect_api::config::validators::NonEmptyString;
use connect_api::config::{ConfigDef, ConfigKey, ConfigMap, ConfigType, Importance};
use connect_api::transform::{Configurable, Transformation, Verdict};
use connect_api::{ConnectError, ConnectRecord, Header, Result, Schema, Value};

/// Name of the header to add.
pub const HEADER_KEY: &str = "header.key";
/// Value of the header to add.
pub const HEADER_VALUE: &str = "header.value";

/// Adds the header `header.key` = `header.value` (a STRING) to every record,
/// after any headers it already has. Records are never dropped.
///
/// ```
/// use connect_api::config::ConfigMap;
/// use connect_api::transform::{Configurable, Transformation};
/// use connect_api::{Record, SinkRecord, Value};
/// use connect_examples::add_header::AddHeader;
///
/// let config = ConfigMap::from([("header.key", "source"), ("header.value", "connect")]);
/// let mut smt = AddHeader::new();
/// smt.configure(&config).unwrap();
///
/// let record = SinkRecord::new(Record::new("orders", None, Value::from("o-1")), 0, 42);
/// let out = smt.apply(record).unwrap().expect("AddHeader never drops a record");
/// let header = out.record.headers.last_with_name("source").unwrap();
/// assert_eq!(header.value(), &Value::from("connect"));
/// ```
#[derive(Debug, Clone, Default)]
pub struct AddHeader {
    /// Built once at configure time; each record gets a copy.
    header: Option<Header>,
}

impl AddHeader {
    /// An unconfigured AddHeader; call `configure` before `transform` (or `apply`).
    pub fn new() -> Self {
        Self::default()
    }
}

/// The keys AddHeader accepts: both required.
pub fn config_def() -> ConfigDef {
    ConfigDef::new()
        .define(
            ConfigKey::new(HEADER_KEY, ConfigType::String)
                .importance(Importance::High)
                .validator(NonEmptyString::default())
                .doc("Name of the header added to every record."),
        )
        .define(
            ConfigKey::new(HEADER_VALUE, ConfigType::String)
                .importance(Importance::High)
                .doc("Value of the header, added as a STRING (may be empty)."),
        )
}

impl Configurable for AddHeader {
    fn configure(&mut self, config: &ConfigMap) -> Result<()> {
        let parsed = config_def().parse(config)?;
        let key = parsed.get_string(HEADER_KEY).unwrap_or_default();
        let value = parsed.get_string(HEADER_VALUE).unwrap_or_default();
        self.header = Some(Header::new(key, Some(Schema::string()), Value::from(value)));
        Ok(())
    }

    fn config_def(&self) -> ConfigDef {
        config_def()
    }
}

impl<R: ConnectRecord> Transformation<R> for AddHeader {
    fn transform(&mut self, record: &mut R) -> Result<Verdict> {
        let header = self.header.as_ref().ok_or_else(|| {
            ConnectError::other("AddHeader was applied before configure(); configure it first")
        })?;
        record.record_mut().headers.push(header.clone());
        Ok(Verdict::Keep)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use connect_api::{Headers, Record, SinkRecord, SourceMap, SourceRecord};

    use super::*;

    fn config(pairs: &[(&str, &str)]) -> ConfigMap {
        ConfigMap::from_pairs(pairs.iter().copied())
    }

    fn configured() -> AddHeader {
        let mut smt = AddHeader::new();
        smt.configure(&config(&[
            (HEADER_KEY, "source"),
            (HEADER_VALUE, "connect"),
        ]))
        .unwrap();
        smt
    }

    #[test]
    fn appends_after_existing_headers_of_source_records() {
        let mut headers = Headers::new();
        headers.add_string("source", "db").add_string("trace", "t1");
        let record = SourceRecord::new(
            Arc::new(SourceMap::new()),
            SourceMap::new(),
            Record::new("t", None, Value::from("v")).with_headers(headers),
        );
        let out = configured().apply(record).unwrap().unwrap();
        let all: Vec<_> = out
            .record
            .headers
            .iter()
            .map(|h| (h.key(), h.value().as_str().unwrap()))
            .collect();
        assert_eq!(
            all,
            [("source", "db"), ("trace", "t1"), ("source", "connect")]
        );
        let added = out.record.headers.last_with_name("source").unwrap();
        assert_eq!(added.schema(), Some(&Schema::string()));
    }

    #[test]
    fn keeps_tombstones_and_sink_metadata() {
        let record = SinkRecord::new(Record::new("t", None, Value::Null), 3, 9);
        let out = configured().apply(record.clone()).unwrap().unwrap();
        assert!(out.record.value.is_null());
        assert_eq!(
            (out.original_kafka_partition, out.kafka_offset),
            (record.original_kafka_partition, record.kafka_offset)
        );
        assert_eq!(out.record.headers.len(), 1);
    }

    #[test]
    fn reports_every_missing_key_at_once() {
        let mut smt = AddHeader::new();
        let e = smt.configure(&ConfigMap::new()).unwrap_err();
        let text = e.to_string();
        assert!(
            text.contains("\"header.key\"") && text.contains("\"header.value\""),
            "{text}"
        );
    }

    #[test]
    fn rejects_an_empty_header_name_but_not_an_empty_value() {
        let mut smt = AddHeader::new();
        let bad = config(&[(HEADER_KEY, " "), (HEADER_VALUE, "x")]);
        let e = smt.configure(&bad).unwrap_err();
        assert!(e.to_string().contains("header.key"), "{e}");
        let ok = config(&[(HEADER_KEY, "k"), (HEADER_VALUE, "")]);
        smt.configure(&ok).unwrap();
    }

    #[test]
    fn unconfigured_is_an_error_not_a_panic() {
        let record = SinkRecord::new(Record::new("t", None, Value::Null), 0, 0);
        let e = AddHeader::new().apply(record).unwrap_err();
        assert!(e.to_string().contains("configure"), "{e}");
    }

    #[test]
    fn every_key_is_documented() {
        for key in config_def().keys() {
            assert!(!key.documentation.is_empty(), "{} has no doc", key.name);
        }
    }
}
