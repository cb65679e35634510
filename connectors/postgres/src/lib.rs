//! PostgreSQL change data capture for Kafka Connect for Rust, written
//! against `connect-api` only: a source connector with Debezium's class
//! name, config keys, topics, keys, change-event envelopes and source
//! offsets, reading PostgreSQL's logical replication (`pgoutput`).
//!
//! ```properties
//! name=inventory
//! connector.class=io.debezium.connector.postgresql.PostgresConnector
//! database.hostname=127.0.0.1
//! database.port=5432
//! database.user=postgres
//! database.password=${file:/etc/connect/secrets.properties:pg.password}
//! database.dbname=shop
//! topic.prefix=dbz
//! table.include.list=public.orders
//! slot.name=dbz_slot
//! publication.autocreate.mode=filtered
//! ```
//!
//! Each captured table's changes go to `<topic.prefix>.<schema>.<table>`
//! as Debezium's envelope (`before`, `after`, `source`, `op`, `ts_ms`,
//! ...), keyed by the primary key. The crate's README has the keys, the
//! type mapping, and where this connector differs from Debezium.

mod catalog;
mod config;
mod offsets;
mod resume;
mod setup;
mod snapshot;
mod source_info;
mod stream;
mod table;
mod task;
mod transactions;
mod types;
mod wire;

use std::sync::Arc;

use async_trait::async_trait;
use connect_api::source::SourceTask;
use connect_api::{
    ConfigDef, ConfigMap, ConnectError, Connector, ConnectorContext, Result, SourceConnector,
};

pub use config::{AutocreateMode, BinaryHandling, DecimalHandling, SnapshotMode, TimePrecision};
pub use task::PostgresConnectorTask;

/// Debezium's config keys, as this connector reads them.
pub mod keys {
    pub use crate::config::{
        BINARY_HANDLING_MODE, COLUMN_EXCLUDE_LIST, COLUMN_INCLUDE_LIST, DATABASE_DBNAME,
        DATABASE_HOSTNAME, DATABASE_PASSWORD, DATABASE_PORT, DATABASE_SSLMODE, DATABASE_USER,
        DECIMAL_HANDLING_MODE, HEARTBEAT_INTERVAL_MS, MAX_BATCH_SIZE, MAX_QUEUE_SIZE, PLUGIN_NAME,
        POLL_INTERVAL_MS, PROVIDE_TRANSACTION_METADATA, PUBLICATION_AUTOCREATE_MODE,
        PUBLICATION_NAME, SCHEMA_EXCLUDE_LIST, SCHEMA_INCLUDE_LIST, SKIPPED_OPERATIONS,
        SLOT_DROP_ON_STOP, SLOT_NAME, SNAPSHOT_FETCH_SIZE, SNAPSHOT_MODE,
        STATUS_UPDATE_INTERVAL_MS, TABLE_EXCLUDE_LIST, TABLE_INCLUDE_LIST, TIME_PRECISION_MODE,
        TOMBSTONES_ON_DELETE, TOPIC_HEARTBEAT_PREFIX, TOPIC_PREFIX, TOPIC_TRANSACTION,
    };
}

/// The names the connector is registered under: Debezium's class name and
/// two short aliases.
pub const NAMES: [&str; 3] = [PostgresConnector::CLASS, "PostgresConnector", "PostgresCdc"];

/// The plugin version reported by the connector and in `source.version`.
fn plugin_version() -> String {
    env!("CARGO_PKG_VERSION").to_string()
}

/// Debezium's PostgreSQL connector: streams the changes of a database's
/// tables from a logical replication slot, after an optional snapshot of
/// their rows.
///
/// ```
/// use connect_api::Connector;
/// use connect_postgres::PostgresConnector;
///
/// let connector = PostgresConnector::default();
/// let config = connect_api::ConfigMap::from([
///     ("database.hostname", "127.0.0.1"),
///     ("database.user", "postgres"),
///     ("database.dbname", "shop"),
///     ("topic.prefix", "dbz"),
/// ]);
/// assert!(connector.validate(&config).iter().all(|r| r.errors.is_empty()));
/// assert_eq!(PostgresConnector::CLASS, "io.debezium.connector.postgresql.PostgresConnector");
/// ```
#[derive(Debug, Default)]
pub struct PostgresConnector {
    config: Option<ConfigMap>,
}

impl PostgresConnector {
    /// Debezium's class name for this connector.
    pub const CLASS: &'static str = "io.debezium.connector.postgresql.PostgresConnector";

    /// The keys this connector accepts.
    pub fn definition() -> ConfigDef {
        config::definition()
    }
}

#[async_trait]
impl Connector for PostgresConnector {
    fn version(&self) -> String {
        plugin_version()
    }

    fn config_def(&self) -> ConfigDef {
        config::definition()
    }

    async fn start(
        &mut self,
        config: &ConfigMap,
        _context: Arc<dyn ConnectorContext>,
    ) -> Result<()> {
        config::Settings::parse(config)?;
        self.config = Some(config.clone());
        Ok(())
    }

    async fn task_configs(&mut self, _max_tasks: usize) -> Result<Vec<ConfigMap>> {
        // One slot, one reader: always one task, as Debezium.
        let config = self.config.clone().ok_or_else(|| {
            ConnectError::other("PostgresConnector: task_configs called before start")
        })?;
        Ok(vec![config])
    }

    async fn stop(&mut self) -> Result<()> {
        self.config = None;
        Ok(())
    }
}

impl SourceConnector for PostgresConnector {
    fn create_task(&self) -> Box<dyn SourceTask> {
        Box::new(PostgresConnectorTask::default())
    }
}
