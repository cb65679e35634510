//! The JDBC sink connector: records written as rows, one transaction per
//! `put`, with Confluent's keys.

pub(crate) mod config;
mod rows;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use async_trait::async_trait;
use bigdecimal::BigDecimal;
use connect_api::sink::{ErrantRecordReporter, SinkTask, SinkTaskContext};
use connect_api::{
    ConfigDef, ConfigMap, ConnectError, Connector, ConnectorContext, Result, SinkConnector,
    SinkRecord, Value,
};

use crate::db::{catalog_columns, classify, Pool};
use crate::dialect::Dialect;
use crate::pg_numeric::PgDecimal;
use crate::plugin_version;
use crate::zone::DbTimeZone;
use config::{sink_def, SinkSettings};
use rows::{bind_common, row_op, Bind, Col, Op, RowOp};

/// Confluent's JDBC sink connector: writes records of Kafka topics as
/// rows of PostgreSQL, MariaDB/MySQL or SQLite tables.
///
/// `insert.mode` (insert, upsert, update), `pk.mode` (none, kafka,
/// record_key, record_value), `delete.enabled`, `auto.create`,
/// `auto.evolve` and `table.name.format` mean what they mean in
/// Confluent's connector. Each `put` is one database transaction; a row
/// the database refuses goes to the errant record reporter (the dead
/// letter queue) and the rest of the batch commits; a database that is
/// away is a retriable error, so the worker retries the batch.
///
/// ```
/// use connect_api::{Connector, SinkConnector};
/// use connect_jdbc::JdbcSinkConnector;
///
/// let connector = JdbcSinkConnector::default();
/// let config = connect_api::ConfigMap::from([
///     ("connection.url", "jdbc:sqlite:copy.db"),
///     ("topics", "orders"),
///     ("insert.mode", "upsert"),
///     ("pk.mode", "record_key"),
///     ("auto.create", "true"),
/// ]);
/// assert!(connector.validate(&config).iter().all(|r| r.errors.is_empty()));
/// assert_eq!(JdbcSinkConnector::CLASS, "io.confluent.connect.jdbc.JdbcSinkConnector");
/// ```
#[derive(Debug, Default)]
pub struct JdbcSinkConnector {
    config: Option<ConfigMap>,
}

impl JdbcSinkConnector {
    /// Confluent's class name for this connector.
    pub const CLASS: &'static str = "io.confluent.connect.jdbc.JdbcSinkConnector";

    /// The keys this connector accepts.
    pub fn definition() -> ConfigDef {
        sink_def()
    }
}

#[async_trait]
impl Connector for JdbcSinkConnector {
    fn version(&self) -> String {
        plugin_version()
    }

    fn config_def(&self) -> ConfigDef {
        sink_def()
    }

    async fn start(
        &mut self,
        config: &ConfigMap,
        _context: Arc<dyn ConnectorContext>,
    ) -> Result<()> {
        SinkSettings::parse(config)?;
        self.config = Some(config.clone());
        Ok(())
    }

    async fn task_configs(&mut self, max_tasks: usize) -> Result<Vec<ConfigMap>> {
        let config = self.config.as_ref().ok_or_else(|| {
            ConnectError::other("JdbcSinkConnector: task_configs called before start")
        })?;
        Ok(vec![config.clone(); max_tasks])
    }

    async fn stop(&mut self) -> Result<()> {
        self.config = None;
        Ok(())
    }
}

impl SinkConnector for JdbcSinkConnector {
    fn create_task(&self) -> Box<dyn SinkTask> {
        Box::new(JdbcSinkTask::default())
    }
}

/// The task of [`JdbcSinkConnector`].
///
/// ```
/// let _task = connect_jdbc::JdbcSinkTask::default(); // started by the runtime
/// ```
#[derive(Default)]
pub struct JdbcSinkTask {
    state: Option<SinkState>,
}

impl std::fmt::Debug for JdbcSinkTask {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JdbcSinkTask")
            .field("settings", &self.state.as_ref().map(|s| &s.settings))
            .finish()
    }
}

/// Column name -> the type its parameter is cast to.
type Casts = HashMap<String, &'static str>;

/// The PostgreSQL column types that take no text parameter but read text
/// when cast: a STRING field written to one is cast in the statement, as
/// Confluent's users get with `stringtype=unspecified` in the URL.
fn pg_cast(udt_name: &str) -> Option<&'static str> {
    ["uuid", "json", "jsonb", "inet", "cidr", "macaddr", "xml"]
        .into_iter()
        .find(|t| *t == udt_name)
}

/// A cached statement: what it writes, and its text.
struct Cached {
    table: String,
    op: Op,
    keys: Vec<String>,
    values: Vec<String>,
    sql: Arc<str>,
}

impl Cached {
    fn matches(&self, op: &RowOp<'_>) -> bool {
        let same = |names: &[String], cols: &[Col<'_>]| {
            names.len() == cols.len() && names.iter().zip(cols).all(|(n, c)| *n == c.name)
        };
        self.op == op.op
            && *self.table == *op.table
            && same(&self.keys, &op.keys)
            && same(&self.values, &op.values)
    }
}

/// A hash of what a statement writes, computed without allocating.
fn shape_hash(op: &RowOp<'_>) -> u64 {
    use std::hash::{BuildHasher, Hash, Hasher};
    let mut h = foldhash::fast::FixedState::default().build_hasher();
    (&*op.table, op.op, op.keys.len()).hash(&mut h);
    for c in op.keys.iter().chain(&op.values) {
        c.name.hash(&mut h);
    }
    h.finish()
}

/// The most statements a task caches before it starts over.
const MAX_CACHED_STATEMENTS: usize = 1024;

/// Rows `rows` of a batch written by one statement.
struct Unit {
    sql: Arc<str>,
    rows: std::ops::Range<usize>,
}

struct SinkState {
    settings: SinkSettings,
    pool: Pool,
    reporter: Option<Arc<dyn ErrantRecordReporter>>,
    /// The columns of each table written to, as the catalog (or our own
    /// DDL) last described them.
    tables: HashMap<String, HashSet<String>>,
    /// The columns of each table that take their parameter cast to their
    /// type (PostgreSQL refuses text for uuid, json, ...).
    casts: HashMap<String, Casts>,
    /// Statement text by table, operation and column names.
    /// Statements by [`shape_hash`] (several per hash on a collision).
    statements: HashMap<u64, Vec<Cached>>,
    /// Multi-row forms of an insert or upsert statement, by the
    /// single-row statement's address and the row count.
    multi_row: HashMap<(usize, usize), Arc<str>>,
    /// Rows per multi-row statement (`batch.size`).
    batch_size: usize,
    /// The table of each topic (`table.name.format` applied once).
    topic_tables: HashMap<Arc<str>, Arc<str>>,
}

impl SinkState {
    /// The table of `topic` (`table.name.format` applied once per topic).
    fn table_of(&mut self, topic: &Arc<str>) -> Arc<str> {
        if let Some(t) = self.topic_tables.get(topic) {
            return t.clone();
        }
        let t: Arc<str> = self.settings.table_for(topic).into();
        self.topic_tables.insert(topic.clone(), t.clone());
        t
    }

    /// Creates the table or adds columns when the settings allow it; an
    /// error names what is missing and the key that would add it.
    async fn ensure_table(&mut self, op: &RowOp<'_>) -> Result<()> {
        let dialect = self.settings.conn.dialect;
        let quote = self.settings.conn.quote;
        if !self.tables.contains_key(&*op.table) {
            let catalog = catalog_columns(&self.pool, dialect, &op.table).await?;
            let casts: Casts = catalog
                .iter()
                .filter_map(|c| Some((c.name.clone(), pg_cast(c.type_name.as_deref()?)?)))
                .collect();
            if !casts.is_empty() {
                self.casts.insert(op.table.to_string(), casts);
            }
            let columns: HashSet<String> = catalog.into_iter().map(|c| c.name).collect();
            if columns.is_empty() {
                if !self.settings.auto_create {
                    return Err(ConnectError::config(
                        config::AUTO_CREATE,
                        format!(
                            "table '{}' does not exist: create it, or set auto.create=true",
                            op.table
                        ),
                    ));
                }
                let sql = create_table(dialect, quote, op)?;
                tracing::info!("creating table {}: {sql}", op.table);
                self.pool.execute(&sql).await?;
                let created = op
                    .keys
                    .iter()
                    .chain(&op.values)
                    .map(|c| c.name.to_string())
                    .collect();
                self.tables.insert(op.table.to_string(), created);
                return Ok(());
            }
            self.tables.insert(op.table.to_string(), columns);
        }
        let known = self.tables.get(&*op.table).expect("inserted above");
        let missing: Vec<&Col<'_>> = op
            .keys
            .iter()
            .chain(&op.values)
            .filter(|c| !known.contains(c.name.as_ref()))
            .collect();
        if missing.is_empty() {
            return Ok(());
        }
        let names: Vec<&str> = missing.iter().map(|c| c.name.as_ref()).collect();
        if !self.settings.auto_evolve {
            return Err(ConnectError::config(
                config::AUTO_EVOLVE,
                format!(
                    "table '{}' has no column {names:?}: add them, or set auto.evolve=true",
                    op.table
                ),
            ));
        }
        for col in &missing {
            if !col.schema.is_optional() && col.schema.default_value().is_none() {
                return Err(ConnectError::data(format!(
                    "table '{}' lacks column '{}', which is required (not optional) in the record's schema: \
                     auto.evolve adds only optional columns, as existing rows have no value for it",
                    op.table, col.name
                )));
            }
            let ty = dialect.column_type(&col.schema, false).ok_or_else(|| {
                ConnectError::data(format!(
                    "column '{}': a {} cannot be a column",
                    col.name,
                    col.schema.ty()
                ))
            })?;
            let mut sql = String::from("ALTER TABLE ");
            dialect.push_table(&mut sql, &op.table, quote);
            sql.push_str(" ADD COLUMN ");
            if dialect != Dialect::Sqlite {
                sql.push_str("IF NOT EXISTS ");
            }
            dialect.push_ident(&mut sql, &col.name, quote);
            sql.push(' ');
            sql.push_str(&ty);
            sql.push_str(" NULL");
            tracing::info!("adding a column to {}: {sql}", op.table);
            self.pool.execute(&sql).await?;
        }
        let known = self.tables.get_mut(&*op.table).expect("inserted above");
        known.extend(names.iter().map(|n| n.to_string()));
        Ok(())
    }

    fn statement(&mut self, op: &RowOp<'_>) -> Arc<str> {
        let hash = shape_hash(op);
        if let Some(c) = self
            .statements
            .get(&hash)
            .and_then(|v| v.iter().find(|c| c.matches(op)))
        {
            return c.sql.clone();
        }
        if self.statements.len() >= MAX_CACHED_STATEMENTS {
            // Column sets that change with every record would grow the
            // cache without end.
            self.statements.clear();
            self.multi_row.clear();
        }
        let names = |cols: &[Col<'_>]| cols.iter().map(|c| c.name.to_string()).collect();
        let casts = self.casts.get(&*op.table);
        let sql: Arc<str> = statement_sql(
            self.settings.conn.dialect,
            self.settings.conn.quote,
            casts,
            op,
            1,
        )
        .into();
        self.statements.entry(hash).or_default().push(Cached {
            table: op.table.to_string(),
            op: op.op,
            keys: names(&op.keys),
            values: names(&op.values),
            sql: sql.clone(),
        });
        sql
    }

    /// The statements of a batch: runs of inserts or upserts of the same
    /// shape share a multi-row statement (up to `batch.size` rows and the
    /// database's parameter limit); everything else runs row by row.
    fn units(&mut self, statements: &[Arc<str>], ops: &[RowOp<'_>]) -> Vec<Unit> {
        let dialect = self.settings.conn.dialect;
        let quote = self.settings.conn.quote;
        let param_limit = match dialect {
            Dialect::Sqlite => 32_766,
            Dialect::Postgres | Dialect::MySql => 65_535,
        };
        let mut units = Vec::new();
        let mut start = 0;
        // PostgreSQL refuses an upsert that touches one key twice: a
        // repeated key starts a new statement (order is kept).
        let mut keys_seen: HashSet<u64, foldhash::fast::FixedState> = HashSet::default();
        while start < ops.len() {
            let first = &ops[start];
            let columns = (first.keys.len() + first.values.len()).max(1);
            let max = if matches!(first.op, Op::Insert | Op::Upsert) {
                self.batch_size.min(param_limit / columns).max(1)
            } else {
                1
            };
            let dedupe = dialect == Dialect::Postgres && first.op == Op::Upsert;
            keys_seen.clear();
            let mut end = start;
            while end < ops.len()
                && end - start < max
                && Arc::ptr_eq(&statements[end], &statements[start])
            {
                if dedupe && !keys_seen.insert(key_fingerprint(&ops[end])) {
                    break;
                }
                end += 1;
            }
            let n = end - start;
            let sql = if n == 1 {
                statements[start].clone()
            } else {
                let id = Arc::as_ptr(&statements[start]) as *const u8 as usize;
                self.multi_row
                    .entry((id, n))
                    .or_insert_with(|| {
                        statement_sql(dialect, quote, self.casts.get(&*first.table), first, n)
                            .into()
                    })
                    .clone()
            };
            units.push(Unit {
                sql,
                rows: start..end,
            });
            start = end;
        }
        units
    }
}

/// A hash of the key values of a row, to find a key repeated in a batch
/// (a collision only splits a statement, never changes what is written).
fn key_fingerprint(op: &RowOp<'_>) -> u64 {
    use std::hash::{BuildHasher, Hash, Hasher};
    let mut h = foldhash::fast::FixedState::default().build_hasher();
    for k in &op.keys {
        let v: &Value = &k.value;
        std::mem::discriminant(v).hash(&mut h);
        match v {
            Value::Int8(x) => x.hash(&mut h),
            Value::Int16(x) => x.hash(&mut h),
            Value::Int32(x) | Value::Date(x) | Value::Time(x) => x.hash(&mut h),
            Value::Int64(x) | Value::Timestamp(x) => x.hash(&mut h),
            Value::Boolean(x) => x.hash(&mut h),
            Value::String(x) => x.hash(&mut h),
            Value::Bytes(x) => x.hash(&mut h),
            Value::Float32(x) => x.to_bits().hash(&mut h),
            Value::Float64(x) => x.to_bits().hash(&mut h),
            other => other.to_string().hash(&mut h),
        }
    }
    h.finish()
}

/// `CREATE TABLE` for the row's columns, keys first, as the primary key.
fn create_table(dialect: Dialect, quote: bool, op: &RowOp<'_>) -> Result<String> {
    let mut sql = String::from("CREATE TABLE ");
    dialect.push_table(&mut sql, &op.table, quote);
    sql.push_str(" (");
    for (i, (col, is_key)) in op
        .keys
        .iter()
        .map(|c| (c, true))
        .chain(op.values.iter().map(|c| (c, false)))
        .enumerate()
    {
        if i > 0 {
            sql.push_str(", ");
        }
        let ty = dialect.column_type(&col.schema, is_key).ok_or_else(|| {
            ConnectError::data(format!(
                "column '{}': a {} cannot be a column",
                col.name,
                col.schema.ty()
            ))
        })?;
        dialect.push_ident(&mut sql, &col.name, quote);
        sql.push(' ');
        sql.push_str(&ty);
        sql.push_str(if is_key || !col.schema.is_optional() {
            " NOT NULL"
        } else {
            " NULL"
        });
    }
    if !op.keys.is_empty() {
        sql.push_str(", PRIMARY KEY (");
        for (i, k) in op.keys.iter().enumerate() {
            if i > 0 {
                sql.push_str(", ");
            }
            dialect.push_ident(&mut sql, &k.name, quote);
        }
        sql.push(')');
    }
    sql.push(')');
    Ok(sql)
}

/// The statement of a row operation, for `rows` rows of the same shape
/// (inserts and upserts only; others are single-row); parameters in
/// [`params`] order, row after row.
fn statement_sql(
    dialect: Dialect,
    quote: bool,
    casts: Option<&Casts>,
    op: &RowOp<'_>,
    rows: usize,
) -> String {
    let mut sql = String::new();
    let mut n = 0;
    // A parameter for `column`, cast to the column's type where the
    // database takes no text for it (PostgreSQL's uuid, json, ...).
    let mut param = |sql: &mut String, column: &str| {
        n += 1;
        match casts.and_then(|c| c.get(column)) {
            Some(ty) => {
                sql.push_str("CAST(");
                dialect.push_param(sql, n);
                sql.push_str(" AS ");
                sql.push_str(ty);
                sql.push(')');
            }
            None => dialect.push_param(sql, n),
        }
    };
    let conditions = |sql: &mut String, param: &mut dyn FnMut(&mut String, &str)| {
        for (i, k) in op.keys.iter().enumerate() {
            sql.push_str(if i == 0 { " WHERE " } else { " AND " });
            dialect.push_ident(sql, &k.name, quote);
            sql.push_str(" = ");
            param(sql, &k.name);
        }
    };
    match op.op {
        Op::Insert | Op::Upsert => {
            sql.push_str("INSERT INTO ");
            dialect.push_table(&mut sql, &op.table, quote);
            sql.push_str(" (");
            for (i, c) in op.keys.iter().chain(&op.values).enumerate() {
                if i > 0 {
                    sql.push_str(", ");
                }
                dialect.push_ident(&mut sql, &c.name, quote);
            }
            sql.push_str(") VALUES ");
            for row in 0..rows {
                sql.push_str(if row == 0 { "(" } else { ", (" });
                for (i, c) in op.keys.iter().chain(&op.values).enumerate() {
                    if i > 0 {
                        sql.push_str(", ");
                    }
                    param(&mut sql, &c.name);
                }
                sql.push(')');
            }
            if op.op == Op::Upsert {
                let keys: Vec<&str> = op.keys.iter().map(|c| c.name.as_ref()).collect();
                let values: Vec<&str> = op.values.iter().map(|c| c.name.as_ref()).collect();
                dialect.push_upsert_tail(&mut sql, &keys, &values, quote);
            }
        }
        Op::Update => {
            sql.push_str("UPDATE ");
            dialect.push_table(&mut sql, &op.table, quote);
            sql.push_str(" SET ");
            for (i, c) in op.values.iter().enumerate() {
                if i > 0 {
                    sql.push_str(", ");
                }
                dialect.push_ident(&mut sql, &c.name, quote);
                sql.push_str(" = ");
                param(&mut sql, &c.name);
            }
            conditions(&mut sql, &mut param);
        }
        Op::Delete => {
            sql.push_str("DELETE FROM ");
            dialect.push_table(&mut sql, &op.table, quote);
            conditions(&mut sql, &mut param);
        }
    }
    sql
}

/// The columns bound, in the statement's parameter order.
fn params<'a, 'b>(
    op: &'b RowOp<'a>,
) -> std::iter::Chain<std::slice::Iter<'b, Col<'a>>, std::slice::Iter<'b, Col<'a>>> {
    match op.op {
        Op::Insert | Op::Upsert => op.keys.iter().chain(&op.values),
        Op::Update => op.values.iter().chain(&op.keys),
        Op::Delete => op.keys.iter().chain(&[]),
    }
}

/// What went wrong writing a batch: at which row, and the error.
struct Failure {
    row: usize,
    error: ConnectError,
}

/// Runs the statements of a batch in one transaction. With `isolate`,
/// each unit (then one row each) runs under a savepoint: a row the
/// database refuses is rolled back alone and its index returned, the
/// others commit.
async fn write_batch(
    pool: &Pool,
    units: &[Unit],
    ops: &[RowOp<'_>],
    tz: DbTimeZone,
    isolate: bool,
) -> std::result::Result<Vec<(usize, ConnectError)>, Failure> {
    macro_rules! run {
        ($pool:expr, $bind:expr) => {{
            let begin = |e| Failure {
                row: 0,
                error: classify(e).context("starting a transaction"),
            };
            let mut tx = $pool.begin().await.map_err(begin)?;
            let mut refused = Vec::new();
            for unit in units {
                let row = unit.rows.start;
                let op = &ops[row];
                let fail = |error: ConnectError| Failure { row, error };
                let mut q = sqlx::query(unit.sql.as_ref());
                for (i, op) in ops[unit.rows.clone()].iter().enumerate() {
                    for col in params(op) {
                        let bind =
                            Bind::of(&col.name, &col.schema, &col.value, tz).map_err(|error| {
                                Failure {
                                    row: row + i,
                                    error,
                                }
                            })?;
                        q = $bind(q, bind);
                    }
                }
                if isolate {
                    sqlx::query("SAVEPOINT connect_row")
                        .execute(&mut *tx)
                        .await
                        .map_err(|e| fail(classify(e)))?;
                }
                match q.execute(&mut *tx).await {
                    Ok(_) if isolate => {
                        sqlx::query("RELEASE SAVEPOINT connect_row")
                            .execute(&mut *tx)
                            .await
                            .map_err(|e| fail(classify(e)))?;
                    }
                    Ok(_) => {}
                    Err(e) => {
                        let error =
                            classify(e).context(format_args!("writing to table {}", op.table));
                        if !isolate || error.is_retriable() {
                            return Err(fail(error));
                        }
                        sqlx::query("ROLLBACK TO SAVEPOINT connect_row")
                            .execute(&mut *tx)
                            .await
                            .map_err(|e| fail(classify(e)))?;
                        refused.push((row, error));
                    }
                }
            }
            tx.commit().await.map_err(|e| Failure {
                row: ops.len(),
                error: classify(e).context("committing"),
            })?;
            Ok(refused)
        }};
    }
    match pool {
        Pool::Pg(p) => run!(p, |q, b| match b {
            Bind::Decimal(d) => sqlx::query::Query::bind(q, d.map(PgDecimal)),
            b => bind_common(q, b),
        }),
        Pool::My(p) => run!(p, |q, b| match b {
            Bind::Decimal(d) => sqlx::query::Query::bind(
                q,
                d.map(|d| BigDecimal::new(d.unscaled().clone(), i64::from(d.scale()))),
            ),
            b => bind_common(q, b),
        }),
        Pool::Lite(p) => run!(p, bind_common),
    }
}

#[async_trait]
impl SinkTask for JdbcSinkTask {
    async fn start(&mut self, config: &ConfigMap, context: Arc<dyn SinkTaskContext>) -> Result<()> {
        let settings = SinkSettings::parse(config)?;
        let pool = Pool::connect(&settings.conn, 1).await?;
        let batch_size = settings.batch_size;
        self.state = Some(SinkState {
            settings,
            pool,
            reporter: context.errant_record_reporter(),
            tables: HashMap::new(),
            casts: HashMap::new(),
            statements: HashMap::new(),
            multi_row: HashMap::new(),
            batch_size,
            topic_tables: HashMap::new(),
        });
        Ok(())
    }

    async fn put(&mut self, records: &[SinkRecord]) -> Result<()> {
        let state = self
            .state
            .as_mut()
            .ok_or_else(|| ConnectError::other("JdbcSinkTask: put called before start"))?;
        let mut ops = Vec::with_capacity(records.len());
        let mut sources = Vec::with_capacity(records.len());
        let mut statements = Vec::with_capacity(records.len());
        // The record before, when it was written: its shape (the very same
        // key and value schemas, alive for the whole put so the addresses
        // cannot be reused, and whether it is a tombstone), its topic, its
        // table and its statement. A record of the same shape and topic
        // writes the same columns of the same table: no table, catalog or
        // statement lookup for it.
        let mut last: Option<((usize, usize, bool), Arc<str>, Arc<str>, Arc<str>)> = None;
        for record in records {
            let at = |e: ConnectError| {
                e.context(format_args!(
                    "record {}-{}@{}",
                    record.original_topic,
                    record.original_kafka_partition,
                    record.original_kafka_offset
                ))
            };
            let shape = (
                record
                    .key_schema
                    .as_ref()
                    .map_or(0, connect_api::Schema::addr),
                record
                    .value_schema
                    .as_ref()
                    .map_or(0, connect_api::Schema::addr),
                record.value.is_null(),
            );
            let (table, same_sql) = match &last {
                Some((s, topic, table, sql)) if *s == shape && *topic == record.topic => {
                    (table.clone(), Some(sql.clone()))
                }
                _ => (state.table_of(&record.topic), None),
            };
            let op = match row_op(&state.settings, record, table) {
                Ok(Some(op)) => op,
                Ok(None) => continue,
                Err(e) => {
                    report(state.reporter.as_deref(), record, at(e)).await?;
                    continue;
                }
            };
            let sql = match same_sql {
                Some(sql) => sql,
                None => {
                    if let Err(e) = state.ensure_table(&op).await {
                        if e.is_retriable()
                            || matches!(e.kind(), connect_api::ErrorKind::Config { .. })
                        {
                            return Err(at(e));
                        }
                        report(state.reporter.as_deref(), record, at(e)).await?;
                        continue;
                    }
                    let sql = state.statement(&op);
                    last = Some((shape, record.topic.clone(), op.table.clone(), sql.clone()));
                    sql
                }
            };
            statements.push(sql);
            ops.push(op);
            sources.push(record);
        }
        if ops.is_empty() {
            return Ok(());
        }
        let tz = state.settings.conn.timezone;
        let units = state.units(&statements, &ops);
        match write_batch(&state.pool, &units, &ops, tz, false).await {
            Ok(_) => return Ok(()),
            Err(f) if f.error.is_retriable() || state.reporter.is_none() => {
                let record = sources.get(f.row).copied();
                return Err(match record {
                    Some(r) => f.error.context(format_args!(
                        "record {}-{}@{}",
                        r.original_topic, r.original_kafka_partition, r.original_kafka_offset
                    )),
                    None => f.error,
                });
            }
            Err(f) => tracing::debug!(
                "a row of the batch was refused ({}): writing row by row",
                f.error
            ),
        }
        // A row was refused: write again, each row under a savepoint, and
        // send the refused ones to the reporter.
        let rows: Vec<Unit> = statements
            .into_iter()
            .enumerate()
            .map(|(i, sql)| Unit {
                sql,
                rows: i..i + 1,
            })
            .collect();
        match write_batch(&state.pool, &rows, &ops, tz, true).await {
            Ok(refused) => {
                for (row, error) in refused {
                    report(state.reporter.as_deref(), sources[row], error).await?;
                }
                Ok(())
            }
            Err(f) => Err(f.error),
        }
    }

    async fn stop(&mut self) -> Result<()> {
        if let Some(state) = self.state.take() {
            state.pool.close().await;
        }
        Ok(())
    }
}

/// Sends a record the database (or the connector) cannot take to the
/// errant record reporter; without one (errors.tolerance=none) the error
/// fails the task.
async fn report(
    reporter: Option<&dyn ErrantRecordReporter>,
    record: &SinkRecord,
    error: ConnectError,
) -> Result<()> {
    match reporter {
        Some(r) => {
            tracing::warn!("record refused, sent to the error reporter: {error}");
            r.report(record, &error).await
        }
        None => Err(error),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use connect_api::{Schema, Value};
    use std::borrow::Cow;

    fn op(kind: Op) -> RowOp<'static> {
        let col = |name: &'static str| Col {
            name: Cow::Borrowed(name),
            schema: Cow::Owned(Schema::int64()),
            value: Cow::Owned(Value::Int64(1)),
        };
        RowOp {
            table: Arc::from("t"),
            op: kind,
            keys: vec![col("id")],
            values: vec![col("v")],
        }
    }

    #[test]
    fn multi_row_statements_number_their_parameters_row_after_row() {
        assert_eq!(
            statement_sql(Dialect::Postgres, true, None, &op(Op::Upsert), 2),
            "INSERT INTO \"t\" (\"id\", \"v\") VALUES ($1, $2), ($3, $4) ON CONFLICT (\"id\") DO UPDATE SET \"v\" = EXCLUDED.\"v\""
        );
        assert_eq!(
            statement_sql(Dialect::MySql, false, None, &op(Op::Insert), 2),
            "INSERT INTO t (id, v) VALUES (?, ?), (?, ?)"
        );
        assert_eq!(
            statement_sql(Dialect::Sqlite, false, None, &op(Op::Update), 1),
            "UPDATE t SET v = ? WHERE id = ?"
        );
        assert_eq!(
            statement_sql(Dialect::Postgres, false, None, &op(Op::Delete), 1),
            "DELETE FROM t WHERE id = $1"
        );
    }

    #[test]
    fn columns_that_take_no_text_get_their_parameter_cast() {
        let casts = Casts::from([("v".to_string(), "uuid")]);
        assert_eq!(
            statement_sql(Dialect::Postgres, false, Some(&casts), &op(Op::Upsert), 2),
            "INSERT INTO t (id, v) VALUES ($1, CAST($2 AS uuid)), ($3, CAST($4 AS uuid)) ON CONFLICT (id) DO UPDATE SET v = EXCLUDED.v"
        );
        assert_eq!(
            statement_sql(Dialect::Postgres, false, Some(&casts), &op(Op::Update), 1),
            "UPDATE t SET v = CAST($1 AS uuid) WHERE id = $2"
        );
        assert_eq!(pg_cast("jsonb"), Some("jsonb"));
        assert_eq!(pg_cast("text"), None);
    }
}
