//! # connect-testkit: test connectors, transforms and converters fast
//!
//! Everything a plugin author needs to test a connector end to end, faults
//! included, in milliseconds, with no broker and no JVM:
//!
//! - [`kafka`]: the in-memory Kafka ([`MemoryKafka`]) and its fault
//!   injection ([`FaultKind`]);
//! - [`SourceHarness`] and [`SinkHarness`]: drive one task directly (poll,
//!   acknowledge, commit, restart from offsets; put, flush, pre-commit,
//!   rebalance), with fakes that record what the task asked of the runtime;
//! - [`SourcePipeline`] and [`SinkPipeline`]: run a task under the real
//!   runtime loops on a [`MemoryKafka`], so injected faults hit them;
//! - [`SmtRunner`] and [`contract`]: run a transformation or a Kafka-style
//!   chain, and check the contract every SMT should keep;
//! - [`assert_records_eq!`]: record comparison that names the first
//!   differing record and field path;
//! - [`strategies`]: proptest strategies for schemas, values and records;
//! - [`faulty`]: connectors that panic, hang or fail at a call you name,
//!   to check that a worker contains them.
//!
//! The [`guide`] walks through testing a source, a sink and an SMT.
//!
//! ```
//! use connect_api::{Record, Schema, SinkRecord, Value};
//! use connect_testkit::{assert_records_eq, config, SmtRunner};
//!
//! let mut smt = SmtRunner::<SinkRecord>::chain(&config(&[
//!     ("transforms", "tag"),
//!     ("transforms.tag.type", "InsertHeader"),
//!     ("transforms.tag.header", "app"),
//!     ("transforms.tag.value.literal", "billing"),
//! ])).unwrap();
//! let out = smt.apply_all([Record::new("t", Some(Schema::string()), Value::from("x"))]).unwrap();
//! let mut expected = Record::new("t", Some(Schema::string()), Value::from("x")).with_partition(0);
//! expected.headers.add("app", Some(Schema::string()), Value::from("billing")).unwrap();
//! let got: Vec<Record> = out.into_iter().map(|r| r.record).collect();
//! assert_records_eq!(got, [expected]);
//! ```

mod context;
pub mod contract;
mod convert;
pub mod diff;
pub mod faulty;
pub mod kafka;
mod pipeline;
mod sink;
mod sink_pipeline;
mod smt;
mod source;
mod source_pipeline;
pub mod strategies;
mod wait;

#[doc = include_str!("../GUIDE.md")]
pub mod guide {}

pub use context::{connector_task_configs, FakeConnectorContext};
pub use contract::{assert_smt_contract, check_smt_contract, SmtContract};
pub use convert::{Converters, SerializedRecord, JSON_CONVERTER};
pub use kafka::{FaultKind, MemoryKafka};
pub use sink::{sink_records, ErrantReport, RecordingReporter, SinkContextLog, SinkHarness};
pub use sink_pipeline::SinkPipeline;
pub use smt::{SmtRunner, TestRecord};
pub use source::{Acked, SourceHarness};
pub use source_pipeline::SourcePipeline;
pub use wait::eventually;

/// Converter lookup by class name, for `with_converter_registry`.
pub use connect_runtime::converters::ConverterRegistry;
/// Where an [`exactly_once`](SourcePipeline::exactly_once) pipeline ends its
/// transactions.
pub use connect_runtime::source::TransactionBoundary;
/// Task states the pipelines report (`RUNNING`, `PAUSED`, `FAILED`...).
pub use connect_runtime::status::State;
/// Transform and predicate lookup by class name, for `with_transform_registry`
/// and [`SmtRunner::chain_with`].
pub use connect_transforms::registry::TransformRegistry;

use connect_api::ConfigMap;

/// A [`ConfigMap`] from `(key, value)` pairs: `config(&[("topic", "orders")])`.
pub fn config(pairs: &[(&str, &str)]) -> ConfigMap {
    ConfigMap::from_pairs(pairs.iter().copied())
}
