//! Records: what flows through connectors, transforms and converters.

use std::sync::Arc;

use crate::header::Headers;
use crate::schema::Schema;
use crate::value::Value;

/// A source partition or source offset: a map of primitive JSON values
/// (`{"filename": "test.txt"}`, `{"position": 42}`), as Kafka's `Map<String, ?>`.
pub type SourceMap = serde_json::Map<String, serde_json::Value>;

/// The data every record carries, source or sink.
///
/// Fields are public: a transform owns the record it is given and changes it
/// in place (no copy per transform, unlike Kafka's `newRecord`).
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct Record {
    /// Topic name; shared, so cloning a record does not copy it.
    pub topic: Arc<str>,
    /// Kafka partition, or `None` to let the producer choose.
    pub kafka_partition: Option<i32>,
    /// Key schema (`None` for schemaless keys).
    pub key_schema: Option<Schema>,
    /// Key.
    pub key: Value,
    /// Value schema (`None` for schemaless values).
    pub value_schema: Option<Schema>,
    /// Value; `Null` with no schema is a tombstone.
    pub value: Value,
    /// Timestamp in epoch milliseconds.
    pub timestamp: Option<i64>,
    /// Headers.
    pub headers: Headers,
}

impl Record {
    /// A record with a topic and a value; everything else empty.
    pub fn new(topic: impl Into<Arc<str>>, value_schema: Option<Schema>, value: Value) -> Self {
        Record {
            topic: topic.into(),
            value_schema,
            value,
            ..Default::default()
        }
    }

    /// Set the key (builder style).
    pub fn with_key(mut self, key_schema: Option<Schema>, key: Value) -> Self {
        self.key_schema = key_schema;
        self.key = key;
        self
    }

    /// Set the timestamp (builder style).
    pub fn with_timestamp(mut self, timestamp: i64) -> Self {
        self.timestamp = Some(timestamp);
        self
    }

    /// Set the partition (builder style).
    pub fn with_partition(mut self, partition: i32) -> Self {
        self.kafka_partition = Some(partition);
        self
    }

    /// Set the headers (builder style).
    pub fn with_headers(mut self, headers: Headers) -> Self {
        self.headers = headers;
        self
    }
}

/// Behaviour shared by [`SourceRecord`] and [`SinkRecord`], so transforms and
/// predicates are written once for both.
///
/// ```
/// use connect_api::{ConnectRecord, Record, SinkRecord, Value};
///
/// fn upper_topic<R: ConnectRecord>(mut r: R) -> R {
///     let t = r.record().topic.to_uppercase();
///     r.record_mut().topic = t.into();
///     r
/// }
/// let r = upper_topic(SinkRecord::new(Record::new("orders", None, Value::Null), 0, 7));
/// assert_eq!(&*r.record().topic, "ORDERS");
/// assert_eq!(&*r.original_topic, "orders");
/// ```
pub trait ConnectRecord: Clone + std::fmt::Debug + Send + Sync + 'static {
    /// The shared record data.
    fn record(&self) -> &Record;
    /// The shared record data, mutably.
    fn record_mut(&mut self) -> &mut Record;
    /// Kafka offset of a sink record; `None` for source records.
    fn kafka_offset(&self) -> Option<i64> {
        None
    }
    /// A copy with `data` replacing the shared data, keeping what is specific
    /// to the record kind (source partition/offset, Kafka offset, originals).
    fn new_record(&self, data: Record) -> Self {
        let mut copy = self.clone();
        *copy.record_mut() = data;
        copy
    }
}

/// A record produced by a source task.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SourceRecord {
    /// Shared record data.
    pub record: Record,
    /// Where in the source system this record came from (`{"filename": ...}`);
    /// shared between the records of one partition.
    pub source_partition: Arc<SourceMap>,
    /// Position within that partition (`{"position": 42}`).
    pub source_offset: SourceMap,
}

impl SourceRecord {
    /// A source record.
    pub fn new(source_partition: Arc<SourceMap>, source_offset: SourceMap, record: Record) -> Self {
        SourceRecord {
            record,
            source_partition,
            source_offset,
        }
    }
}

impl ConnectRecord for SourceRecord {
    fn record(&self) -> &Record {
        &self.record
    }
    fn record_mut(&mut self) -> &mut Record {
        &mut self.record
    }
}

/// How a sink record's timestamp was assigned (the topic's
/// `message.timestamp.type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum TimestampType {
    /// No timestamp.
    #[default]
    NoTimestampType,
    /// Set by the producer.
    CreateTime,
    /// Set by the broker.
    LogAppendTime,
}

/// A record delivered to a sink task.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SinkRecord {
    /// Shared record data.
    pub record: Record,
    /// Offset of the record in its Kafka partition.
    pub kafka_offset: i64,
    /// How the timestamp was assigned.
    pub timestamp_type: TimestampType,
    /// Topic the record was consumed from (unchanged by transforms).
    pub original_topic: Arc<str>,
    /// Partition the record was consumed from (unchanged by transforms).
    pub original_kafka_partition: i32,
    /// Offset the record was consumed at (unchanged by transforms).
    pub original_kafka_offset: i64,
}

impl SinkRecord {
    /// A sink record consumed from `record.topic` / `partition` at `offset`.
    pub fn new(mut record: Record, partition: i32, offset: i64) -> Self {
        record.kafka_partition = Some(partition);
        SinkRecord {
            original_topic: record.topic.clone(),
            record,
            kafka_offset: offset,
            timestamp_type: TimestampType::NoTimestampType,
            original_kafka_partition: partition,
            original_kafka_offset: offset,
        }
    }
}

impl ConnectRecord for SinkRecord {
    fn record(&self) -> &Record {
        &self.record
    }
    fn record_mut(&mut self) -> &mut Record {
        &mut self.record
    }
    fn kafka_offset(&self) -> Option<i64> {
        Some(self.kafka_offset)
    }
}

/// A source record reads as its [`Record`]: `record.value` for
/// `record.record.value`.
///
/// ```
/// use std::sync::Arc;
/// use connect_api::{Record, Schema, SourceMap, SourceRecord, Value};
///
/// let mut r = SourceRecord::new(
///     Arc::new(SourceMap::new()),
///     SourceMap::new(),
///     Record::new("orders", Some(Schema::string()), Value::from("x")),
/// );
/// assert_eq!(&*r.topic, "orders");
/// r.value = Value::from("y");
/// assert_eq!(r.record.value, Value::from("y"));
/// ```
impl std::ops::Deref for SourceRecord {
    type Target = Record;
    fn deref(&self) -> &Record {
        &self.record
    }
}

impl std::ops::DerefMut for SourceRecord {
    fn deref_mut(&mut self) -> &mut Record {
        &mut self.record
    }
}

/// A sink record reads as its [`Record`]: `record.value` for
/// `record.record.value`.
///
/// ```
/// use connect_api::{Record, Schema, SinkRecord, Value};
///
/// let r = SinkRecord::new(Record::new("orders", Some(Schema::string()), Value::from("x")), 0, 42);
/// assert_eq!(r.value, Value::from("x"));
/// assert_eq!(r.kafka_offset, 42);
/// ```
impl std::ops::Deref for SinkRecord {
    type Target = Record;
    fn deref(&self) -> &Record {
        &self.record
    }
}

impl std::ops::DerefMut for SinkRecord {
    fn deref_mut(&mut self) -> &mut Record {
        &mut self.record
    }
}
