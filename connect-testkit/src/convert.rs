//! Key, value and header converters as a connector config names them, to
//! turn records into the bytes Kafka stores and back.

use connect_api::{ConfigMap, ConnectRecord, Record, Result, SinkRecord};
use connect_runtime::codec::{self, Encoded};
use connect_runtime::converters::{ConverterRegistry, TaskConverters};
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
    /// The converters, as a task holds them; the runtime's record codec
    /// runs them, so a test sees what a worker would.
    converters: TaskConverters,
    /// Reused from record to record.
    encoded: Encoded,
}

impl std::fmt::Debug for Converters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Converters")
            .field("key", &self.converters.key_class)
            .field("value", &self.converters.value_class)
            .field("header", &self.converters.header_class)
            .finish_non_exhaustive()
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
        Ok(Converters {
            converters: TaskConverters::for_connector(registry, config, &default_worker_config())?,
            encoded: Encoded::default(),
        })
    }

    /// Serialize `record` as the source path does (headers, key, value;
    /// the key and value converters see the headers).
    pub fn serialize(&mut self, record: &Record) -> Result<SerializedRecord> {
        self.encoded.encode(&mut self.converters, record)?;
        let e = &self.encoded;
        Ok(SerializedRecord {
            topic: record.topic.to_string(),
            partition: record.kafka_partition,
            key: e.key().map(<[u8]>::to_vec),
            value: e.value().map(<[u8]>::to_vec),
            timestamp: record.timestamp,
            headers: e.headers().to_vec(),
        })
    }

    /// Read a record consumed from Kafka as the sink path does (headers
    /// first; the key and value converters see them).
    pub fn deserialize(&mut self, consumed: &ConsumedRecord) -> Result<SinkRecord> {
        codec::decode(&mut self.converters, consumed)
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
