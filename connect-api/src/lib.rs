//! # connect-api: the Kafka Connect plugin contract, in Rust
//!
//! This crate is what connector, transform and converter authors compile
//! against. It holds Kafka Connect's data model and nothing that runs:
//!
//! - [`Schema`], [`SchemaBuilder`], [`Value`], [`Struct`] and the logical
//!   types in [`logical`] (Decimal, Date, Time, Timestamp), with Kafka's
//!   rules and error messages that name the field path;
//! - records ([`SourceRecord`], [`SinkRecord`], the shared [`Record`]) and
//!   [`Headers`];
//! - [`SchemaProjector`] and [`values`] (string rendering and
//!   parsing), which transforms and header converters build on;
//! - one error type, [`ConnectError`].
//!
//! Start with the [`guide`]: a source, a sink, a custom transform and
//! configuration, each as code that compiles.
//!
//! It depends on no async runtime, no Kafka client and no HTTP stack
//! (`cargo tree -p connect-api -e normal` shows it).

pub mod error;
pub mod header;
pub mod java_number;
pub mod logical;
pub mod projector;
pub mod record;
pub mod schema;
pub mod structs;
pub mod value;
pub mod values;

pub use error::{BoxError, ConnectError, ErrorKind, Result};
pub use header::{Header, Headers};
pub use logical::{Decimal, LogicalType};
pub use projector::SchemaProjector;
pub use record::{ConnectRecord, Record, SinkRecord, SourceMap, SourceRecord, TimestampType};
pub use schema::{Field, Schema, SchemaBuilder, Type};
pub use structs::Struct;
pub use value::Value;

pub mod config;
pub mod connector;
#[doc = include_str!("../GUIDE.md")]
pub mod guide {}
pub mod converter;
pub mod sink;
pub mod source;
pub mod transform;

pub use config::{ConfigDef, ConfigKey, ConfigMap, ConfigType};
pub use connector::{Connector, ConnectorContext, ConnectorType, SinkConnector, SourceConnector};
pub use converter::{Converter, HeaderConverter, SchemaAndValue, Serialized};
pub use sink::{SinkTask, SinkTaskContext, TopicPartition, TopicPartitionOffsets};
pub use source::{RecordMetadata, SourceTask, SourceTaskContext};
pub use transform::{Predicate, Transformation, Verdict};
