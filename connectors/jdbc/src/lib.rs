//! JDBC-style source and sink connectors for PostgreSQL, MariaDB/MySQL and
//! SQLite, with the class names, keys, topics and source offsets of
//! Confluent's JDBC connector, written against `connect-api` only.
//!
//! - [`JdbcSourceConnector`] polls tables (or one query) in `bulk`,
//!   `incrementing`, `timestamp` or `timestamp+incrementing` mode into
//!   `<topic.prefix><table>` topics.
//! - [`JdbcSinkConnector`] writes records as rows: `insert`, `upsert` or
//!   `update`, keys from the record key, value or Kafka coordinates,
//!   tombstones as deletes, tables created and widened on demand.
//!
//! The database is chosen from `connection.url` ([`Dialect`]):
//!
//! ```properties
//! name=orders-source
//! connector.class=io.confluent.connect.jdbc.JdbcSourceConnector
//! connection.url=jdbc:postgresql://localhost:5432/shop
//! connection.user=connect
//! connection.password=${file:/etc/connect/secrets.properties:db.password}
//! mode=timestamp+incrementing
//! timestamp.column.name=updated_at
//! incrementing.column.name=id
//! table.whitelist=orders
//! topic.prefix=shop-
//! ```
//!
//! The crate's README has every key, the column type mapping, the
//! quickstart, and where we differ from Confluent's connector (among
//! them: timestamp mode does not lose rows that share the last timestamp
//! or that commit late).

mod config;
mod db;
mod dialect;
mod pg_numeric;
mod sink;
mod source;
mod zone;

pub use dialect::Dialect;
pub use sink::config::{InsertMode, PkMode};
pub use sink::{JdbcSinkConnector, JdbcSinkTask};
pub use source::config::{Mode, NumericMapping};
pub use source::{JdbcSourceConnector, JdbcSourceTask};

/// The config keys of both connectors, under Confluent's names.
pub mod keys {
    pub use crate::config::{
        CONNECTION_ATTEMPTS, CONNECTION_BACKOFF_MS, CONNECTION_PASSWORD, CONNECTION_URL,
        CONNECTION_USER, DB_TIMEZONE, QUOTE_SQL_IDENTIFIERS,
    };
    pub use crate::sink::config::{
        AUTO_CREATE, AUTO_EVOLVE, BATCH_SIZE, DELETE_ENABLED, FIELDS_WHITELIST, INSERT_MODE,
        PK_FIELDS, PK_MODE, TABLE_NAME_FORMAT,
    };
    pub use crate::source::config::{
        BATCH_MAX_ROWS, INCREMENTING_COLUMN_NAME, MODE, NUMERIC_MAPPING, POLL_INTERVAL_MS, QUERY,
        QUERY_SUFFIX, TABLES, TABLE_BLACKLIST, TABLE_EXCLUDE_LIST, TABLE_INCLUDE_LIST,
        TABLE_POLL_INTERVAL_MS, TABLE_WHITELIST, TIMESTAMP_COLUMN_NAME,
        TIMESTAMP_DELAY_INTERVAL_MS, TIMESTAMP_INITIAL, TOPIC_PREFIX, VALIDATE_NON_NULL,
    };
}

/// The names the source connector is registered under: Confluent's class
/// name and two short aliases.
pub const SOURCE_NAMES: [&str; 3] = [
    JdbcSourceConnector::CLASS,
    "JdbcSource",
    "JdbcSourceConnector",
];

/// The names the sink connector is registered under: Confluent's class
/// name and two short aliases.
pub const SINK_NAMES: [&str; 3] = [JdbcSinkConnector::CLASS, "JdbcSink", "JdbcSinkConnector"];

/// The plugin version reported by both connectors.
fn plugin_version() -> String {
    env!("CARGO_PKG_VERSION").to_string()
}
