//! Example connectors and programs for Kafka Connect for Rust.
