//! # connect-runtime: drives Kafka Connect plugins
//!
//! Converters, the Kafka port with its rdkafka and in-memory adapters, the
//! task loops with offset tracking, the error pipeline and dead letter
//! queue, the worker, its REST API and CLI.

/// The converters, from their own crate (`connect-converters`).
pub use connect_converters as converters;
pub mod errors;
pub mod herder;
/// The Kafka port (`connect-kafka`) and, with the `rdkafka` feature, its
/// librdkafka adapter as `kafka::rdkafka_adapter` (`connect-rdkafka`; named
/// so that it is not mistaken for the `rdkafka` crate it wraps).
pub mod kafka {
    pub use connect_kafka::*;
    #[cfg(feature = "rdkafka")]
    pub use connect_rdkafka as rdkafka_adapter;
}
pub mod codec;
pub mod config_store;
pub mod kafka_log;
pub mod metrics;
pub mod offsets;
mod panics;
pub mod properties;
#[cfg(feature = "rest")]
pub mod rest;
pub mod sink;
pub mod source;
pub mod status;
mod task_loop;
#[cfg(feature = "tls")]
pub mod tls;
pub mod worker;
