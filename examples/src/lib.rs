//! Example connectors and programs for Kafka Connect for Rust. The
//! FileStream connectors live in their own crate, `connect-file`
//! (`connectors/file`), and the worker commands in `connect-worker`.
pub mod add_header;
