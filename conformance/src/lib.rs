//! Differential conformance test of this workspace's converters, SMTs,
//! predicates and `Values` against Apache Kafka Connect 4.4.0's own classes.
//!
//! The crate has no code: the test is `tests/java_differential.rs`, the
//! judge is the Java program in `java/`, and `README.md` describes the
//! protocol between them; `KNOWN_DIFFERENCES.md` lists what differs today.
