//! # connect-testkit: test connectors, transforms and converters fast
//!
//! Helpers for testing Kafka Connect for Rust plugins without a broker.
//!
//! - [`strategies`]: proptest strategies for schemas, values that match
//!   (or do not match) them, and source/sink records.

pub mod strategies;
