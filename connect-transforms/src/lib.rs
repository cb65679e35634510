//! # connect-transforms: Kafka Connect's built-in SMTs and predicates
//!
//! Every transform here has Kafka's class name, config keys and defaults, so
//! a `transforms.*` block from a Kafka Connect config means the same thing.
//! Field-level SMTs have `$Key` and `$Value` variants sharing one
//! implementation through [`util::Side`]; SMTs that derive a schema compute
//! it once per input schema ([`util::SchemaCache`]).

pub mod util;

pub mod cast;
pub mod drop_headers;
pub mod extract_field;
pub mod filter;
pub mod flatten;
pub mod header_from;
pub mod hoist_field;
pub mod insert_field;
pub mod insert_header;
pub mod mask_field;
pub mod regex_router;
pub mod replace_field;
pub mod set_schema_metadata;
pub mod timestamp_converter;
pub mod timestamp_router;
pub mod value_to_key;

pub mod predicates;

pub mod chain;
pub mod registry;
