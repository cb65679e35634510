//! The JDBC source connector: tables (or one query) polled into topics,
//! with Confluent's modes, offsets and topic names.

pub(crate) mod config;
mod querier;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use connect_api::connector::group_partitions;
use connect_api::source::{SourceTask, SourceTaskContext};
use connect_api::{
    ConfigDef, ConfigMap, ConnectError, Connector, ConnectorContext, Result, SourceConnector,
    SourceRecord,
};
use tokio::task::JoinHandle;

use crate::db::{Instant, Pool};
use crate::dialect::Dialect;
use crate::plugin_version;
use config::{source_def, SourceSettings, TABLES};
use querier::{legacy_partition, partition, Position, Querier, Target, UpperBound};

/// Confluent's JDBC source connector: reads tables (or a query) of
/// PostgreSQL, MariaDB/MySQL or SQLite into Kafka topics.
///
/// Keys, topic names (`topic.prefix` + table), record values (a struct
/// named after the table) and source offsets are Confluent's, so a
/// connector moved from `io.confluent.connect.jdbc.JdbcSourceConnector`
/// keeps its position. The crate's README has the keys, the type mapping
/// and where we differ.
///
/// ```
/// use connect_api::{Connector, SourceConnector};
/// use connect_jdbc::JdbcSourceConnector;
///
/// let connector = JdbcSourceConnector::default();
/// let config = connect_api::ConfigMap::from([
///     ("connection.url", "jdbc:sqlite:shop.db"),
///     ("mode", "incrementing"),
///     ("incrementing.column.name", "id"),
///     ("topic.prefix", "shop-"),
/// ]);
/// assert!(connector.validate(&config).iter().all(|r| r.errors.is_empty()));
/// assert_eq!(JdbcSourceConnector::CLASS, "io.confluent.connect.jdbc.JdbcSourceConnector");
/// ```
#[derive(Default)]
pub struct JdbcSourceConnector {
    running: Option<Running>,
}

struct Running {
    config: ConfigMap,
    settings: SourceSettings,
    pool: Pool,
    /// Looks for new and dropped tables every `table.poll.interval.ms`.
    monitor: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for JdbcSourceConnector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JdbcSourceConnector")
            .field("settings", &self.running.as_ref().map(|r| &r.settings))
            .finish()
    }
}

impl JdbcSourceConnector {
    /// Confluent's class name for this connector.
    pub const CLASS: &'static str = "io.confluent.connect.jdbc.JdbcSourceConnector";

    /// The keys this connector accepts.
    pub fn definition() -> ConfigDef {
        source_def()
    }
}

/// The tables of the database the settings select, qualified, sorted.
async fn list_tables(pool: &Pool, settings: &SourceSettings) -> Result<Vec<String>> {
    let sql = match settings.conn.dialect {
        Dialect::Postgres => {
            "SELECT (table_schema || '.' || table_name)::text FROM information_schema.tables \
             WHERE table_type = 'BASE TABLE' AND table_schema NOT IN ('pg_catalog', 'information_schema') ORDER BY 1"
        }
        Dialect::MySql => {
            "SELECT CAST(CONCAT(table_schema, '.', table_name) AS CHAR) FROM information_schema.tables \
             WHERE table_type = 'BASE TABLE' AND table_schema = DATABASE() ORDER BY 1"
        }
        Dialect::Sqlite => "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY 1",
    };
    let rows = pool.text_rows(sql, &[]).await?;
    Ok(rows
        .into_iter()
        .filter_map(|r| r.into_iter().next().flatten())
        .filter(|t| settings.selects(t))
        .collect())
}

#[async_trait]
impl Connector for JdbcSourceConnector {
    fn version(&self) -> String {
        plugin_version()
    }

    fn config_def(&self) -> ConfigDef {
        source_def()
    }

    async fn start(
        &mut self,
        config: &ConfigMap,
        context: Arc<dyn ConnectorContext>,
    ) -> Result<()> {
        let settings = SourceSettings::parse(config)?;
        let pool = Pool::connect(&settings.conn, 1).await?;
        let monitor = if settings.query.is_none() {
            let known = list_tables(&pool, &settings).await?;
            let (pool, settings) = (pool.clone(), settings.clone());
            Some(tokio::spawn(async move {
                let mut known = known;
                loop {
                    tokio::time::sleep(settings.table_poll_interval).await;
                    match list_tables(&pool, &settings).await {
                        Ok(now) if now != known => {
                            tracing::info!("the tables to read changed from {known:?} to {now:?}: reconfiguring the tasks");
                            known = now;
                            context.request_task_reconfiguration();
                        }
                        Ok(_) => {}
                        Err(e) => tracing::warn!(
                            "could not list the tables to read (will try again): {e}"
                        ),
                    }
                }
            }))
        } else {
            None
        };
        self.running = Some(Running {
            config: config.clone(),
            settings,
            pool,
            monitor,
        });
        Ok(())
    }

    async fn task_configs(&mut self, max_tasks: usize) -> Result<Vec<ConfigMap>> {
        let running = self.running.as_ref().ok_or_else(|| {
            ConnectError::other("JdbcSourceConnector: task_configs called before start")
        })?;
        if running.settings.query.is_some() {
            return Ok(vec![running.config.clone()]);
        }
        let tables = list_tables(&running.pool, &running.settings).await?;
        if tables.is_empty() {
            tracing::warn!("no tables to read: check table.whitelist / table.blacklist and the user's privileges");
            return Ok(Vec::new());
        }
        let groups = group_partitions(&tables, max_tasks.min(tables.len()).max(1))?;
        Ok(groups
            .into_iter()
            .filter(|g| !g.is_empty())
            .map(|g| {
                let mut c = running.config.clone();
                c.insert(TABLES.to_string(), g.join(","));
                c
            })
            .collect())
    }

    async fn stop(&mut self) -> Result<()> {
        if let Some(running) = self.running.take() {
            if let Some(m) = running.monitor {
                m.abort();
            }
            running.pool.close().await;
        }
        Ok(())
    }
}

impl SourceConnector for JdbcSourceConnector {
    fn create_task(&self) -> Box<dyn SourceTask> {
        Box::new(JdbcSourceTask::default())
    }
}

/// The task of [`JdbcSourceConnector`]: reads its tables (the `tables`
/// key the connector sets) or the query, each every `poll.interval.ms`,
/// at most `batch.max.rows` rows per table per poll.
///
/// ```
/// let _task = connect_jdbc::JdbcSourceTask::default(); // started by the runtime
/// ```
#[derive(Default)]
pub struct JdbcSourceTask {
    state: Option<TaskState>,
}

struct TaskState {
    settings: SourceSettings,
    pool: Pool,
    queriers: Vec<Querier>,
    bound: UpperBound,
}

impl std::fmt::Debug for JdbcSourceTask {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JdbcSourceTask")
            .field(
                "targets",
                &self
                    .state
                    .as_ref()
                    .map(|s| s.queriers.iter().map(Querier::describe).collect::<Vec<_>>()),
            )
            .finish()
    }
}

/// The longest one `poll` waits for a table to be due, so the task stays
/// responsive to stop.
const MAX_POLL_WAIT: Duration = Duration::from_millis(500);

#[async_trait]
impl SourceTask for JdbcSourceTask {
    async fn start(
        &mut self,
        config: &ConfigMap,
        context: Arc<dyn SourceTaskContext>,
    ) -> Result<()> {
        let settings = SourceSettings::parse(config)?;
        let targets: Vec<Target> = match &settings.query {
            Some(q) => vec![Target::Query(q.clone())],
            None if settings.tables.is_empty() => {
                return Err(ConnectError::config(
                    TABLES,
                    "the task was given no tables to read",
                ));
            }
            None => settings.tables.iter().cloned().map(Target::Table).collect(),
        };
        let reader = context.offset_storage_reader();
        let initial = match settings.timestamp_initial {
            Some(-1) => Some(Instant::from_utc(chrono::Utc::now())),
            Some(ms) => Some(Instant::from_offset(ms, None)),
            None => None,
        };
        let mut queriers = Vec::with_capacity(targets.len());
        for target in targets {
            let stored = reader
                .offset(&partition(&target))
                .or_else(|| legacy_partition(&target).and_then(|p| reader.offset(&p)));
            let position = match stored {
                Some(offset) => Position::from_offset(&offset).ok_or_else(|| {
                    ConnectError::offset_invalid(
                        partition(&target),
                        format!("the stored offset {offset:?} is not Confluent's JDBC offset"),
                    )
                })?,
                None => Position {
                    incrementing: None,
                    timestamp: initial,
                },
            };
            queriers.push(Querier::new(target, &settings, position));
        }
        let pool = Pool::connect(&settings.conn, 2).await?;
        self.state = Some(TaskState {
            settings,
            pool,
            queriers,
            bound: UpperBound::default(),
        });
        Ok(())
    }

    async fn poll(&mut self) -> Result<Vec<SourceRecord>> {
        let state = self
            .state
            .as_mut()
            .ok_or_else(|| ConnectError::other("JdbcSourceTask: poll called before start"))?;
        let Some(next) = state.queriers.iter_mut().min_by_key(|q| q.next_run) else {
            return Ok(Vec::new());
        };
        let now = tokio::time::Instant::now();
        if next.next_run > now {
            tokio::time::sleep_until(next.next_run.min(now + MAX_POLL_WAIT)).await;
            if next.next_run > tokio::time::Instant::now() {
                return Ok(Vec::new());
            }
        }
        next.poll(&state.pool, &state.settings, &mut state.bound)
            .await
    }

    async fn stop(&mut self) -> Result<()> {
        if let Some(state) = self.state.take() {
            state.pool.close().await;
        }
        Ok(())
    }
}
