//! The FileStream connectors: Kafka's `connect-file` example pair, written
//! against `connect-api` only.
//!
//! - [`FileStreamSourceConnector`] tails a file (or reads standard input) and
//!   produces one record per line, with a required STRING value schema.
//! - [`FileStreamSinkConnector`] appends the string form of each record's
//!   value to a file (or standard output), one line per record.
//!
//! They are the connectors of Kafka's quickstart, registered under the names
//! Kafka uses ([`SOURCE_NAMES`], [`SINK_NAMES`]), so an existing
//! `connect-file-source.properties` works unchanged:
//!
//! ```properties
//! name=local-file-source
//! connector.class=FileStreamSource
//! tasks.max=1
//! file=test.txt
//! topic=connect-test
//! ```
//!
//! They are also meant to be read and copied: each shows the parts a real
//! connector needs (a documented [`ConfigDef`](connect_api::ConfigDef),
//! config validation that names the key, resuming from stored source
//! offsets, buffered writes with `flush`).

mod sink;
mod source;

pub use sink::{FileStreamSinkConnector, FileStreamSinkTask};
pub use source::{
    FileStreamSourceConnector, FileStreamSourceTask, BATCH_SIZE_CONFIG, DEFAULT_BATCH_SIZE,
    FILENAME_FIELD, POSITION_FIELD, TOPIC_CONFIG,
};

/// Config key shared by both connectors: the file to read or write; unset
/// or empty means standard input / standard output.
pub const FILE_CONFIG: &str = "file";

/// The names the source connector is registered under: Kafka's class name
/// and its two aliases.
pub const SOURCE_NAMES: [&str; 3] = [
    FileStreamSourceConnector::CLASS,
    "FileStreamSource",
    "FileStreamSourceConnector",
];

/// The names the sink connector is registered under: Kafka's class name and
/// its two aliases.
pub const SINK_NAMES: [&str; 3] = [
    FileStreamSinkConnector::CLASS,
    "FileStreamSink",
    "FileStreamSinkConnector",
];

/// The plugin version reported by both connectors and their tasks.
fn plugin_version() -> String {
    env!("CARGO_PKG_VERSION").to_string()
}

/// The configured file name, `None` for the standard streams (Kafka treats
/// an empty `file` like an absent one).
fn configured_file(config: &connect_api::config::ParsedConfig) -> Option<String> {
    config
        .get_string(FILE_CONFIG)
        .filter(|f| !f.is_empty())
        .map(str::to_string)
}
