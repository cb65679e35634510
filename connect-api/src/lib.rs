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
//!
//! ## Other crates' types in this API, and why
//!
//! Four types from other crates appear in public signatures. Each is the
//! ecosystem's standard type for what it holds, so a plugin passes its own
//! data in without a copy; each crate is re-exported here
//! (`connect_api::bytes`, ...) so a plugin names the same version as the
//! runtime without adding a dependency of its own. A major version bump of
//! one of them is a breaking change of this crate and is listed in the
//! CHANGELOG.
//!
//! - [`bytes::Bytes`] in [`Value::Bytes`]: BYTES values are cloned on the
//!   record path (transforms, DLQ, retries); `Bytes` clones by reference
//!   count, and the Kafka clients already hand out `Bytes`.
//! - [`num_bigint::BigInt`] in [`Decimal`]: Kafka's Decimal is an unscaled
//!   `BigInteger` of any size; no fixed-width integer holds every value a
//!   Java connector may send.
//! - [`indexmap::IndexMap`] in [`Schema::parameters`]: Kafka keeps schema
//!   parameters in insertion order and the JSON and Avro converters write
//!   them in that order, which decides the bytes.
//! - [`serde_json::Map`] as [`SourceMap`] (source partitions and offsets):
//!   Kafka stores them as JSON in the offsets topic and file, so a JSON
//!   object is their real shape, and connectors build them with
//!   `serde_json::json!`.
//!
//! `serde` is used for one thing: [`ConfigMap`] serializes as the plain JSON
//! object Kafka's REST API and config files hold.

/// Re-exported: the type of [`Value::Bytes`].
pub use bytes;
/// Re-exported: the order-keeping map of [`Schema::parameters`].
pub use indexmap;
/// Re-exported: the unscaled value of a [`Decimal`].
pub use num_bigint;
/// Re-exported: the JSON map of [`SourceMap`].
pub use serde_json;

pub mod cache;
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
pub use transform::{Configurable, Predicate, Transformation, Verdict};
