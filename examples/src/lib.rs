//! Example connectors and programs for Kafka Connect for Rust.
pub mod add_header;
pub mod file_stream;
