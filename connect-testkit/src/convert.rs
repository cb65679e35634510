//! Key, value and header converters as a connector config names them, to
//! turn records into the bytes Kafka stores and back.

use connect_api::{
    ConfigMap, ConnectRecord, Converter, Header, HeaderConverter, Headers, Record, Result,
    SinkRecord,
};
use connect_runtime::converters::{ConverterRegistry, ConverterRole};
use connect_runtime::kafka::{ConsumedRecord, OutHeader, TimestampType};

/// Kafka's JSON converter class, the testkit's default key and value converter.
pub use connect_runtime::converters::JSON_CONVERTER;

/// A record as bytes, ready to produce.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SerializedRecord {
    /// Destination topic.
    pub topic: String,
    /// Explicit partition, if the record has one.
    pub partition: Option<i32>,
    /// Key bytes (`None`: null key).
    pub key: Option<Vec<u8>>,
    /// Value bytes (`None`: tombstone).
    pub value: Option<Vec<u8>>,
    /// Timestamp in epoch milliseconds.
    pub timestamp: Option<i64>,
    /// Headers as bytes, in order.
    pub headers: Vec<OutHeader>,
}

/// The configured key, value and header converters of one connector.
///
/// Built from a connector config with Kafka's keys (`key.converter`,
/// `value.converter`, `header.converter` and their `*.` sub-keys); a key left
/// out defaults to the JSON converter with schemas (keys and values) and
/// `SimpleHeaderConverter` (headers), so everything round-trips.
///
/// ```
/// use connect_api::{ConfigMap, Record, Schema, Value};
/// use connect_testkit::Converters;
///
/// let config = ConfigMap::from([("value.converter", "org.apache.kafka.connect.storage.StringConverter")]);
/// let mut conv = Converters::from_config(&config).unwrap();
/// let bytes = conv.serialize(&Record::new("t", Some(Schema::string()), Value::from("hi"))).unwrap();
/// assert_eq!(bytes.value.as_deref(), Some(&b"hi"[..]));
/// ```
pub struct Converters {
    key: Box<dyn Converter>,
    value: Box<dyn Converter>,
    header: Box<dyn HeaderConverter>,
}

impl std::fmt::Debug for Converters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Converters").finish_non_exhaustive()
    }
}

/// The defaults a connector config falls back to (the testkit's "worker").
pub(crate) fn default_worker_config() -> ConfigMap {
    ConfigMap::from([
        ("key.converter", JSON_CONVERTER),
        ("value.converter", JSON_CONVERTER),
    ])
}

impl Converters {
    /// JSON with schemas for keys and values, `SimpleHeaderConverter` for headers.
    pub fn json() -> Result<Self> {
        Self::from_config(&ConfigMap::new())
    }

    /// The converters `config` names, with the built-in converter registry.
    pub fn from_config(config: &ConfigMap) -> Result<Self> {
        Self::with_registry(config, &ConverterRegistry::with_builtins())
    }

    /// The converters `config` names, looked up in `registry` (register
    /// your own converter there to test it).
    pub fn with_registry(config: &ConfigMap, registry: &ConverterRegistry) -> Result<Self> {
        let worker = default_worker_config();
        Ok(Converters {
            key: registry.connector_converter(config, &worker, ConverterRole::Key)?,
            value: registry.connector_converter(config, &worker, ConverterRole::Value)?,
            header: registry.connector_header_converter(config, &worker)?,
        })
    }

    /// Serialize `record` as the source path does (headers, key, value).
    pub fn serialize(&mut self, record: &Record) -> Result<SerializedRecord> {
        let topic: &str = &record.topic;
        let mut headers = Vec::with_capacity(record.headers.len());
        for h in record.headers.iter() {
            let bytes = self
                .header
                .from_connect_header(topic, h.key(), h.schema(), h.value())?;
            headers.push((h.key().to_string(), bytes));
        }
        let mut key = Vec::new();
        let key_written = self
            .key
            .from_connect_data(
                topic,
                &record.headers,
                record.key_schema.as_ref(),
                &record.key,
                &mut key,
            )
            .map_err(|e| e.context(format_args!("key converter, topic '{topic}'")))?;
        let mut value = Vec::new();
        let value_written = self
            .value
            .from_connect_data(
                topic,
                &record.headers,
                record.value_schema.as_ref(),
                &record.value,
                &mut value,
            )
            .map_err(|e| e.context(format_args!("value converter, topic '{topic}'")))?;
        Ok(SerializedRecord {
            topic: topic.to_string(),
            partition: record.kafka_partition,
            key: key_written.bytes_or_null(key),
            value: value_written.bytes_or_null(value),
            timestamp: record.timestamp,
            headers,
        })
    }

    /// Read a record consumed from Kafka as the sink path does.
    pub fn deserialize(&mut self, consumed: &ConsumedRecord) -> Result<SinkRecord> {
        let topic: &str = &consumed.topic;
        let where_ = || format!("{topic}-{}@{}", consumed.partition, consumed.offset);
        let mut headers = Headers::new();
        for (k, v) in &consumed.headers {
            let sv = self
                .header
                .to_connect_header(topic, k, v.as_deref())
                .map_err(|e| e.context(format_args!("header '{k}' of {}", where_())))?;
            headers.push(Header::new(k.clone(), sv.schema, sv.value));
        }
        let key = self
            .key
            .to_connect_data(topic, &headers, consumed.key.as_deref())
            .map_err(|e| e.context(format_args!("key of {}", where_())))?;
        let value = self
            .value
            .to_connect_data(topic, &headers, consumed.value.as_deref())
            .map_err(|e| e.context(format_args!("value of {}", where_())))?;
        let mut record = Record::new(consumed.topic.clone(), value.schema, value.value)
            .with_key(key.schema, key.value)
            .with_headers(headers);
        record.timestamp = consumed.timestamp;
        let mut sink = SinkRecord::new(record, consumed.partition, consumed.offset);
        sink.timestamp_type = consumed.timestamp_type;
        Ok(sink)
    }

    /// Serialize then deserialize `record`: the data a sink reading the
    /// topic would see. Everything but key, value and headers is kept.
    pub fn round_trip<R: ConnectRecord>(&mut self, mut record: R) -> Result<R> {
        let bytes = self.serialize(record.record())?;
        let consumed = ConsumedRecord {
            topic: record.record().topic.clone(),
            partition: record.record().kafka_partition.unwrap_or(0),
            offset: 0,
            timestamp: bytes.timestamp,
            timestamp_type: TimestampType::CreateTime,
            key: bytes.key.map(Into::into),
            value: bytes.value.map(Into::into),
            headers: bytes
                .headers
                .into_iter()
                .map(|(k, v)| (k, v.map(Into::into)))
                .collect(),
        };
        let read = self.deserialize(&consumed)?.record;
        let r = record.record_mut();
        r.key_schema = read.key_schema;
        r.key = read.key;
        r.value_schema = read.value_schema;
        r.value = read.value;
        r.headers = read.headers;
        Ok(record)
    }
}
