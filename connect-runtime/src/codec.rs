//! The record codec: a [`Record`] to the bytes Kafka stores and a consumed
//! record back to a [`SinkRecord`], with a task's [`TaskConverters`].
//!
//! One codec serves the source loop, the sink loop and the testkit, so they
//! cannot drift apart. Kafka's rules, which it keeps:
//! - the header converter runs first, then the key converter, then the
//!   value converter (a record whose headers and key both fail reports the
//!   header stage);
//! - the key and value converters see the record's headers, both ways
//!   (a converter may read or write a schema id there);
//! - a `Serialized::Null` key or value is a null in Kafka, not empty bytes.
//!
//! Each stage is a function of its own, so the task loops can run each
//! one under the error pipeline (retries, tolerance, the stage's name in
//! the DLQ headers); [`Encoded::encode`] and [`decode`] run all three for
//! callers that only want the record or an error naming the stage.
//!
//! ```
//! use connect_api::{ConfigMap, Record, Schema, Value};
//! use connect_runtime::codec::{self, Encoded};
//! use connect_runtime::converters::{ConverterRegistry, TaskConverters};
//! use connect_runtime::kafka::{ConsumedRecord, TimestampType};
//!
//! let worker = ConfigMap::from([
//!     ("key.converter", "org.apache.kafka.connect.storage.StringConverter"),
//!     ("value.converter", "org.apache.kafka.connect.storage.StringConverter"),
//! ]);
//! let mut converters =
//!     TaskConverters::for_connector(&ConverterRegistry::with_builtins(), &ConfigMap::new(), &worker).unwrap();
//! let record = Record::new("lines", Some(Schema::string()), Value::from("hello"));
//! let mut encoded = Encoded::default();
//! encoded.encode(&mut converters, &record).unwrap();
//! assert_eq!(encoded.value(), Some(&b"hello"[..]));
//!
//! let consumed = ConsumedRecord {
//!     topic: "lines".into(),
//!     partition: 0,
//!     offset: 7,
//!     timestamp: None,
//!     timestamp_type: TimestampType::NoTimestampType,
//!     key: None,
//!     value: Some(encoded.value().unwrap().to_vec().into()),
//!     headers: Vec::new(),
//! };
//! let sink = codec::decode(&mut converters, &consumed).unwrap();
//! assert_eq!(sink.value, Value::from("hello"));
//! assert_eq!(sink.kafka_offset, 7);
//! ```

use connect_api::converter::{Converter, HeaderConverter};
use connect_api::{Header, Headers, Record, Result, SchemaAndValue, Serialized, SinkRecord};

use crate::converters::TaskConverters;
use crate::errors::Stage;
use crate::kafka::{ConsumedRecord, OutHeader, OutRecord};

/// The converter stages in Kafka's order, both ways.
pub const STAGES: [Stage; 3] = [
    Stage::HeaderConverter,
    Stage::KeyConverter,
    Stage::ValueConverter,
];

/// The class name of the converter that runs `stage` (what errors and the
/// DLQ headers cite).
pub fn class(converters: &TaskConverters, stage: Stage) -> &str {
    match stage {
        Stage::HeaderConverter => &converters.header_class,
        Stage::KeyConverter => &converters.key_class,
        _ => &converters.value_class,
    }
}

/// A record in the bytes Kafka stores, in buffers reused from record to
/// record (no allocation per record once they have grown).
#[derive(Debug, Default)]
pub struct Encoded {
    key: Vec<u8>,
    value: Vec<u8>,
    /// Slots reused from record to record: the first `header_count` hold
    /// this record's headers; a slot keeps its name's and value's buffers.
    headers: Vec<OutHeader>,
    header_count: usize,
    key_some: bool,
    value_some: bool,
}

impl Encoded {
    /// Run one converter `stage` of `record` into its buffer. A panic in the
    /// converter is an error naming it, so a caller decides as for any
    /// conversion failure (nothing is allocated unless it panics).
    pub fn stage(
        &mut self,
        converters: &mut TaskConverters,
        stage: Stage,
        record: &Record,
    ) -> Result<()> {
        match crate::panics::catch_sync(|| self.stage_unguarded(converters, stage, record)) {
            Ok(converted) => converted,
            Err(panic) => {
                let kind = match stage {
                    Stage::HeaderConverter => "header",
                    Stage::KeyConverter => "key",
                    _ => "value",
                };
                let class = class(converters, stage);
                Err(panic.into_error(format_args!("{kind} converter {class}")))
            }
        }
    }

    fn stage_unguarded(
        &mut self,
        converters: &mut TaskConverters,
        stage: Stage,
        r: &Record,
    ) -> Result<()> {
        let topic: &str = &r.topic;
        match stage {
            Stage::HeaderConverter => {
                self.header_count = 0;
                for h in r.headers.iter() {
                    if self.header_count == self.headers.len() {
                        self.headers.push((String::new(), None));
                    }
                    let (name, bytes) = &mut self.headers[self.header_count];
                    name.clear();
                    name.push_str(h.key());
                    let mut buffer = bytes.take().unwrap_or_default();
                    buffer.clear();
                    let written = converters.header.from_connect_header(
                        topic,
                        h.key(),
                        h.schema(),
                        h.value(),
                        &mut buffer,
                    )?;
                    *bytes = written.bytes_or_null(buffer);
                    self.header_count += 1;
                }
            }
            Stage::KeyConverter => {
                self.key.clear();
                self.key_some = converters.key.from_connect_data(
                    topic,
                    &r.headers,
                    r.key_schema.as_ref(),
                    &r.key,
                    &mut self.key,
                )? == Serialized::Bytes;
            }
            _ => {
                self.value.clear();
                self.value_some = converters.value.from_connect_data(
                    topic,
                    &r.headers,
                    r.value_schema.as_ref(),
                    &r.value,
                    &mut self.value,
                )? == Serialized::Bytes;
            }
        }
        Ok(())
    }

    /// All three stages, in order; the error names the stage and topic.
    pub fn encode(&mut self, converters: &mut TaskConverters, record: &Record) -> Result<()> {
        for stage in STAGES {
            self.stage(converters, stage, record).map_err(|e| {
                let class = class(converters, stage);
                e.context(format_args!(
                    "{} ({class}), topic '{}'",
                    stage.name(),
                    record.topic
                ))
            })?;
        }
        Ok(())
    }

    /// The key bytes (`None`: a null key).
    pub fn key(&self) -> Option<&[u8]> {
        self.key_some.then_some(self.key.as_slice())
    }

    /// The value bytes (`None`: a tombstone).
    pub fn value(&self) -> Option<&[u8]> {
        self.value_some.then_some(self.value.as_slice())
    }

    /// The headers as bytes, in order.
    pub fn headers(&self) -> &[OutHeader] {
        &self.headers[..self.header_count]
    }

    /// What the producer sends for `record` (encoded last).
    pub fn out<'a>(&'a self, record: &'a Record) -> OutRecord<'a> {
        OutRecord {
            topic: &record.topic,
            partition: record.kafka_partition,
            key: self.key(),
            value: self.value(),
            timestamp: record.timestamp,
            headers: self.headers(),
        }
    }
}

/// The header stage of a consumed record: every header through the
/// header converter, in order.
pub fn decode_headers(
    converter: &mut dyn HeaderConverter,
    raw: &ConsumedRecord,
) -> Result<Headers> {
    let mut headers = Headers::new();
    for (k, v) in &raw.headers {
        let sv = converter
            .to_connect_header(&raw.topic, k, v.as_deref())
            .map_err(|e| e.context(format_args!("header '{k}'")))?;
        headers.push(Header::new(k.clone(), sv.schema, sv.value));
    }
    Ok(headers)
}

/// The key stage of a consumed record; the converter sees its headers.
pub fn decode_key(
    converter: &mut dyn Converter,
    raw: &ConsumedRecord,
    headers: &Headers,
) -> Result<SchemaAndValue> {
    converter.to_connect_data(&raw.topic, headers, raw.key.as_deref())
}

/// The value stage of a consumed record; the converter sees its headers.
pub fn decode_value(
    converter: &mut dyn Converter,
    raw: &ConsumedRecord,
    headers: &Headers,
) -> Result<SchemaAndValue> {
    converter.to_connect_data(&raw.topic, headers, raw.value.as_deref())
}

/// The sink record the three stages' results make, with the consumed
/// record's topic, partition, offset and timestamp.
pub fn sink_record(
    raw: &ConsumedRecord,
    headers: Headers,
    key: SchemaAndValue,
    value: SchemaAndValue,
) -> SinkRecord {
    let mut record = Record::new(raw.topic.clone(), value.schema, value.value)
        .with_key(key.schema, key.value)
        .with_headers(headers);
    record.timestamp = raw.timestamp;
    let mut sink = SinkRecord::new(record, raw.partition, raw.offset);
    sink.timestamp_type = raw.timestamp_type;
    sink
}

/// All three stages, in order; the error names the stage and the record
/// (`topic-partition@offset`).
pub fn decode(converters: &mut TaskConverters, raw: &ConsumedRecord) -> Result<SinkRecord> {
    let at = |stage: Stage, class: &str| {
        format!(
            "{} ({class}) of {}-{}@{}",
            stage.name(),
            raw.topic,
            raw.partition,
            raw.offset
        )
    };
    let headers = decode_headers(converters.header.as_mut(), raw)
        .map_err(|e| e.context(at(Stage::HeaderConverter, &converters.header_class)))?;
    let key = decode_key(converters.key.as_mut(), raw, &headers)
        .map_err(|e| e.context(at(Stage::KeyConverter, &converters.key_class)))?;
    let value = decode_value(converters.value.as_mut(), raw, &headers)
        .map_err(|e| e.context(at(Stage::ValueConverter, &converters.value_class)))?;
    Ok(sink_record(raw, headers, key, value))
}
