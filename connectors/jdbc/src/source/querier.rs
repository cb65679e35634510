//! One table (or the configured query) of a source task: its columns, its
//! position, and the SQL that reads what comes after that position.

use std::sync::Arc;

use chrono::{DateTime, NaiveDateTime, Utc};
use connect_api::{
    ConnectError, Record, Result, Schema, SchemaBuilder, SourceMap, SourceRecord, Struct, Value,
};
use serde_json::json;
use sqlx::{Column as _, Executor as _, Statement as _, TypeInfo as _};

use super::config::{Mode, NumericMapping, SourceSettings};
use crate::db::{catalog_columns, classify, with_pool, Column, Instant, Kind, Pool, ReadRow};
use crate::dialect::Dialect;
use crate::zone::DbTimeZone;

/// What a querier reads.
#[derive(Debug, Clone)]
pub(crate) enum Target {
    /// A table, by its qualified name (`schema.table`, `db.table` or
    /// `table`, as the catalog lists it).
    Table(String),
    /// The configured `query`.
    Query(String),
}

impl Target {
    /// The table's own name (the last part), or `None` for a query.
    fn table_name(&self) -> Option<&str> {
        match self {
            Target::Table(t) => Some(t.rsplit('.').next().unwrap_or(t)),
            Target::Query(_) => None,
        }
    }
}

/// The source partition of a target, as Confluent's connector writes it
/// (offset protocol 1: the qualified table name and `"protocol": "1"`;
/// `{"query": "query"}` in query mode).
pub(crate) fn partition(target: &Target) -> SourceMap {
    let mut m = SourceMap::new();
    match target {
        Target::Table(t) => {
            m.insert("protocol".into(), json!("1"));
            m.insert("table".into(), json!(t));
        }
        Target::Query(_) => {
            m.insert("query".into(), json!("query"));
        }
    }
    m
}

/// Confluent's protocol 0 partition (`{"table": name}`): read at start so a
/// connector migrated from an old deployment keeps its position.
pub(crate) fn legacy_partition(target: &Target) -> Option<SourceMap> {
    let name = target.table_name()?;
    let mut m = SourceMap::new();
    m.insert("table".into(), json!(name));
    Some(m)
}

/// Where a querier has read up to.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Position {
    pub(crate) incrementing: Option<i64>,
    pub(crate) timestamp: Option<Instant>,
}

impl Position {
    /// The position a stored offset names, or `None` for a malformed one.
    pub(crate) fn from_offset(offset: &SourceMap) -> Option<Position> {
        let incrementing = match offset.get("incrementing") {
            None | Some(serde_json::Value::Null) => None,
            Some(v) => Some(v.as_i64()?),
        };
        let timestamp = match offset.get("timestamp") {
            None | Some(serde_json::Value::Null) => None,
            Some(v) => Some(Instant::from_offset(
                v.as_i64()?,
                offset
                    .get("timestamp_nanos")
                    .and_then(serde_json::Value::as_i64),
            )),
        };
        Some(Position {
            incrementing,
            timestamp,
        })
    }

    /// Confluent's offset map for this position in `mode`.
    pub(crate) fn to_offset(self, mode: Mode) -> SourceMap {
        let mut m = SourceMap::new();
        if mode.uses_incrementing() {
            m.insert(
                "incrementing".into(),
                json!(self.incrementing.unwrap_or(-1)),
            );
        }
        if mode.uses_timestamp() {
            let t = self.timestamp.unwrap_or_default();
            m.insert("timestamp".into(), json!(t.millis()));
            m.insert("timestamp_nanos".into(), json!(t.nanos));
        }
        m
    }
}

/// A bind parameter of a source query.
#[derive(Debug, Clone, Copy)]
enum Param {
    Int(i64),
    Time(Instant),
}

/// One table or the query, with its resolved columns and position.
pub(crate) struct Querier {
    pub(crate) target: Target,
    topic: Arc<str>,
    partition: Arc<SourceMap>,
    pub(crate) position: Position,
    /// Resolved on the first poll: the columns read (unsupported types
    /// left out), the value schema, and where the offset columns are.
    shape: Option<Shape>,
    /// When this querier may run again (after an empty or short result).
    pub(crate) next_run: tokio::time::Instant,
}

struct Shape {
    /// Every column of `SELECT *`, `None` for ones not read.
    columns: Vec<Option<(Column, Option<Kind>)>>,
    schema: Schema,
    incrementing: Option<usize>,
    timestamps: Vec<usize>,
    /// The kind timestamp parameters are bound as.
    timestamp_kind: Kind,
    /// The query after the position, rendered once (parameters in
    /// [`Querier::params`] order).
    next: String,
    /// Timestamp mode: the query of one whole group of rows sharing a
    /// timestamp (its one parameter).
    group: Option<String>,
}

impl Querier {
    pub(crate) fn new(target: Target, settings: &SourceSettings, position: Position) -> Querier {
        let topic: Arc<str> = match target.table_name() {
            Some(t) => format!("{}{t}", settings.topic_prefix).into(),
            None => settings.topic_prefix.as_str().into(),
        };
        Querier {
            partition: Arc::new(partition(&target)),
            target,
            topic,
            position,
            shape: None,
            next_run: tokio::time::Instant::now(),
        }
    }

    /// `SELECT * FROM <table>` or the query wrapped so conditions can
    /// follow it.
    fn base(&self, s: &SourceSettings) -> String {
        let mut sql = String::from("SELECT * FROM ");
        match &self.target {
            Target::Table(t) => s.conn.dialect.push_table(&mut sql, t, s.conn.quote),
            Target::Query(q) => {
                sql.push('(');
                sql.push_str(q);
                sql.push_str(") connect_query");
            }
        }
        sql
    }

    /// Reads the table's or query's columns (once).
    async fn resolve(&mut self, pool: &Pool, s: &SourceSettings) -> Result<()> {
        if self.shape.is_some() {
            return Ok(());
        }
        let dialect = s.conn.dialect;
        let base = self.base(s);
        let described: Vec<(String, String)> =
            with_pool!(pool, p => p.prepare(base.as_str()).await.map(|st| {
                st.columns()
                    .iter()
                    .map(|c| (c.name().to_string(), c.type_info().name().to_string()))
                    .collect()
            }))
            .map_err(|e| {
                classify(e).context(format_args!("reading the columns of {}", self.describe()))
            })?;
        let catalog = match &self.target {
            Target::Table(t) => catalog_columns(pool, dialect, t).await?,
            Target::Query(_) => Vec::new(),
        };
        let mut builder = SchemaBuilder::struct_();
        if let Some(name) = self.target.table_name() {
            builder = builder.name(name);
        }
        let mut columns = Vec::with_capacity(described.len());
        let (mut incrementing, mut timestamps) = (None, vec![None; s.timestamp_columns.len()]);
        for (i, (name, type_name)) in described.into_iter().enumerate() {
            let meta = catalog.iter().find(|c| c.name == name);
            let Some(mut kind) = Kind::of(dialect, &type_name) else {
                tracing::warn!(
                    "{}: column '{name}' has type {type_name}, which this connector does not read; it is left out",
                    self.describe()
                );
                columns.push(None);
                continue;
            };
            if let (Kind::Decimal(None), Some(scale)) = (kind, meta.and_then(|m| m.scale)) {
                kind = Kind::Decimal(Some(scale));
            }
            let mut mapped =
                numeric_target(kind, meta.and_then(|m| m.precision), s.numeric_mapping);
            if kind == Kind::Decimal(None) {
                // A Decimal schema needs a fixed scale; an unconstrained
                // NUMERIC (or one of a query) has none.
                tracing::warn!(
                    "{}: column '{name}' is a NUMERIC without a declared scale: read as FLOAT64; \
                     declare NUMERIC(p,s) or CAST it in the query for exact decimals",
                    self.describe()
                );
                mapped = Some(Kind::Float64);
            }
            let nullable = meta.is_none_or(|m| m.nullable);
            let schema_kind = mapped.unwrap_or(kind);
            builder = builder.field(name.as_str(), schema_kind.schema(nullable));
            if s.incrementing_column.as_deref() == Some(name.as_str()) {
                incrementing = Some(i);
            }
            if let Some(pos) = s.timestamp_columns.iter().position(|t| *t == name) {
                timestamps[pos] = Some(i);
            }
            columns.push(Some((
                Column {
                    name,
                    kind,
                    nullable,
                },
                mapped,
            )));
        }
        let what = self.describe();
        let incrementing = match (s.mode.uses_incrementing(), incrementing) {
            (true, None) => {
                return Err(ConnectError::config(
                    super::config::INCREMENTING_COLUMN_NAME,
                    format!(
                        "{what} has no readable column '{}'",
                        s.incrementing_column.as_deref().unwrap_or("")
                    ),
                ))
            }
            (_, i) => i,
        };
        let timestamps: Vec<usize> = if s.mode.uses_timestamp() {
            timestamps
                .iter()
                .zip(&s.timestamp_columns)
                .map(|(i, name)| {
                    i.ok_or_else(|| {
                        ConnectError::config(
                            super::config::TIMESTAMP_COLUMN_NAME,
                            format!("{what} has no readable column '{name}'"),
                        )
                    })
                })
                .collect::<Result<_>>()?
        } else {
            Vec::new()
        };
        let column = |i: usize| columns[i].as_ref().map(|(c, _)| c);
        if s.validate_non_null {
            for i in incrementing.iter().chain(&timestamps) {
                if let Some(c) = column(*i).filter(|c| c.nullable) {
                    if matches!(self.target, Target::Table(_)) {
                        return Err(ConnectError::config(
                            super::config::VALIDATE_NON_NULL,
                            format!(
                                "{what}: column '{}' may be NULL; make it NOT NULL or set validate.non.null=false",
                                c.name
                            ),
                        ));
                    }
                }
            }
        }
        let timestamp_kind = timestamps
            .first()
            .and_then(|i| column(*i))
            .map_or(Kind::Timestamp, |c| c.kind);
        if let Some(c) = timestamps
            .iter()
            .filter_map(|i| column(*i))
            .find(|c| !matches!(c.kind, Kind::Timestamp | Kind::TimestampTz | Kind::Date))
        {
            return Err(ConnectError::config(
                super::config::TIMESTAMP_COLUMN_NAME,
                format!("{what}: column '{}' is not a timestamp", c.name),
            ));
        }
        if let Some(c) = incrementing.and_then(column).filter(|c| {
            !matches!(
                c.kind,
                Kind::Int8 | Kind::Int16 | Kind::Int32 | Kind::Int64 | Kind::Decimal(_)
            )
        }) {
            return Err(ConnectError::config(
                super::config::INCREMENTING_COLUMN_NAME,
                format!("{what}: column '{}' is not an integer", c.name),
            ));
        }
        let schema = builder.build()?;
        let (next, group) = self.statements(s);
        self.shape = Some(Shape {
            columns,
            schema,
            incrementing,
            timestamps,
            timestamp_kind,
            next,
            group,
        });
        Ok(())
    }

    /// The query of the rows after the position (at most one more than
    /// `batch.max.rows`, which tells whether rows remain) and, in timestamp
    /// mode, the query of one group of rows sharing a timestamp.
    fn statements(&self, s: &SourceSettings) -> (String, Option<String>) {
        let dialect = s.conn.dialect;
        let ts = timestamp_expression(dialect, &s.timestamp_columns, s.conn.quote);
        let mut inc = String::new();
        if let Some(c) = &s.incrementing_column {
            dialect.push_ident(&mut inc, c, s.conn.quote);
        }
        let mut sql = self.base(s);
        let mut n = 0;
        let mut param = |sql: &mut String| {
            n += 1;
            dialect.push_param(sql, n);
        };
        match s.mode {
            Mode::Bulk => {}
            Mode::Incrementing => {
                sql.push_str(&format!(" WHERE {inc} > "));
                param(&mut sql);
                sql.push_str(&format!(" ORDER BY {inc} ASC"));
            }
            Mode::Timestamp => {
                sql.push_str(&format!(" WHERE {ts} < "));
                param(&mut sql);
                sql.push_str(&format!(" AND {ts} > "));
                param(&mut sql);
                sql.push_str(&format!(" ORDER BY {ts} ASC"));
            }
            Mode::TimestampIncrementing => {
                sql.push_str(&format!(" WHERE {ts} < "));
                param(&mut sql);
                sql.push_str(&format!(" AND (({ts} = "));
                param(&mut sql);
                sql.push_str(&format!(" AND {inc} > "));
                param(&mut sql);
                sql.push_str(&format!(") OR {ts} > "));
                param(&mut sql);
                sql.push_str(&format!(") ORDER BY {ts}, {inc} ASC"));
            }
        }
        if s.mode != Mode::Bulk {
            sql.push_str(&format!(" LIMIT {}", s.batch_max_rows + 1));
        }
        if let Some(suffix) = &s.query_suffix {
            sql.push(' ');
            sql.push_str(suffix);
        }
        let group = (s.mode == Mode::Timestamp).then(|| {
            let mut group = self.base(s);
            group.push_str(&format!(" WHERE {ts} = "));
            dialect.push_param(&mut group, 1);
            group
        });
        (sql, group)
    }

    /// The parameters of the query after the position, in its order.
    fn params(&self, mode: Mode, upper: Instant) -> Vec<Param> {
        let inc = Param::Int(self.position.incrementing.unwrap_or(-1));
        let from = Param::Time(self.position.timestamp.unwrap_or_default());
        match mode {
            Mode::Bulk => Vec::new(),
            Mode::Incrementing => vec![inc],
            Mode::Timestamp => vec![Param::Time(upper), from],
            Mode::TimestampIncrementing => vec![Param::Time(upper), from, inc, from],
        }
    }

    /// "table X" or "the query", for messages.
    pub(crate) fn describe(&self) -> String {
        match &self.target {
            Target::Table(t) => format!("table {t}"),
            Target::Query(_) => "the query".to_string(),
        }
    }

    /// The records after the current position, at most `batch.max.rows`
    /// (more only to finish a group of rows that share a timestamp).
    pub(crate) async fn poll(
        &mut self,
        pool: &Pool,
        s: &SourceSettings,
        bound: &mut UpperBound,
    ) -> Result<Vec<SourceRecord>> {
        self.resolve(pool, s).await?;
        let limit = s.batch_max_rows;
        let upper = if s.mode.uses_timestamp() {
            bound.get(pool, s).await?
        } else {
            Instant::default()
        };
        let params = self.params(s.mode, upper);
        let shape = self.shape.as_ref().expect("resolved above");
        let mut rows = self.fetch(s, pool, &shape.next, &params).await?;
        let more = s.mode != Mode::Bulk && rows.len() > limit;
        rows.truncate(limit);
        if s.mode == Mode::Timestamp && more {
            // A batch cut inside a group of rows sharing the last timestamp
            // would move the offset past rows of that group not yet read:
            // leave the group for the next poll, or read it whole when it is
            // the whole batch.
            let last = rows.last().and_then(|r| r.timestamp);
            let keep = rows
                .iter()
                .rposition(|r| r.timestamp != last)
                .map_or(0, |i| i + 1);
            if keep > 0 {
                rows.truncate(keep);
            } else if let (Some(t), Some(group)) = (last, &shape.group) {
                rows = self.fetch(s, pool, group, &[Param::Time(t)]).await?;
            }
        }
        let mut out = Vec::with_capacity(rows.len());
        for row in rows {
            if let Some(i) = row.incrementing {
                self.position.incrementing = Some(i);
            }
            if let Some(t) = row.timestamp {
                self.position.timestamp = Some(t);
            }
            let value = Struct::from_parts(shape.schema.clone(), row.values)?;
            let record = Record::new(
                self.topic.clone(),
                Some(shape.schema.clone()),
                Value::Struct(value),
            );
            out.push(SourceRecord::new(
                self.partition.clone(),
                self.position.to_offset(s.mode),
                record,
            ));
        }
        self.next_run = if more {
            tokio::time::Instant::now()
        } else {
            tokio::time::Instant::now() + s.poll_interval
        };
        Ok(out)
    }

    async fn fetch(
        &self,
        s: &SourceSettings,
        pool: &Pool,
        sql: &str,
        params: &[Param],
    ) -> Result<Vec<Row>> {
        let shape = self.shape.as_ref().expect("resolved before fetching");
        let tz = s.conn.timezone;
        let ts_kind = shape.timestamp_kind;
        macro_rules! run {
            ($p:expr) => {{
                let mut q = sqlx::query(sql);
                for p in params {
                    q = match (*p, ts_kind) {
                        (Param::Int(v), _) => q.bind(v),
                        (Param::Time(t), Kind::TimestampTz) => q.bind(t.utc()),
                        (Param::Time(t), _) => q.bind(local(t, tz)),
                    };
                }
                let rows = q.fetch_all($p).await.map_err(|e| {
                    classify(e).context(format_args!("reading {}", self.describe()))
                })?;
                rows.iter()
                    .map(|r| decode(r, shape, tz))
                    .collect::<Result<Vec<Row>>>()
            }};
        }
        with_pool!(pool, p => run!(p))
    }
}

/// A timestamp as the zone-less local time of `db.timezone` (the UTC time
/// at the ends of chrono's range, where the offset cannot be added).
fn local(t: Instant, tz: DbTimeZone) -> NaiveDateTime {
    tz.local(t.utc()).unwrap_or_else(|| t.utc().naive_utc())
}

/// A row read: its values in schema order and its offset columns.
struct Row {
    values: Vec<Value>,
    incrementing: Option<i64>,
    timestamp: Option<Instant>,
}

fn decode<R: ReadRow>(row: &R, shape: &Shape, tz: DbTimeZone) -> Result<Row> {
    let mut values = Vec::with_capacity(shape.schema.field_count());
    let (mut incrementing, mut timestamp) = (None, None);
    for (i, col) in shape.columns.iter().enumerate() {
        let Some((column, mapped)) = col else {
            continue;
        };
        let (value, instant) = row.read(i, column.kind, tz)?;
        if Some(i) == shape.incrementing {
            incrementing = match &value {
                Value::Decimal(d) => i64::try_from(d.unscaled().clone()).ok(),
                v => v.as_i64(),
            };
        }
        if timestamp.is_none() && shape.timestamps.contains(&i) {
            timestamp = instant.or_else(|| match value {
                Value::Date(days) => Some(Instant {
                    secs: i64::from(days) * 86_400,
                    nanos: 0,
                }),
                _ => None,
            });
        }
        values.push(match mapped {
            Some(target) => convert_numeric(value, *target, &column.name)?,
            None => value,
        });
    }
    Ok(Row {
        values,
        incrementing,
        timestamp,
    })
}

/// `COALESCE(a, b)` over the timestamp columns, or the one column.
fn timestamp_expression(dialect: Dialect, columns: &[String], quote: bool) -> String {
    let mut e = String::new();
    if columns.len() > 1 {
        e.push_str("COALESCE(");
    }
    for (i, c) in columns.iter().enumerate() {
        if i > 0 {
            e.push_str(", ");
        }
        dialect.push_ident(&mut e, c, quote);
    }
    if columns.len() > 1 {
        e.push(')');
    }
    e
}

/// How long an upper bound is used before it is read again. MariaDB
/// refreshes `information_schema.INNODB_TRX` only when it was not read for
/// 100 ms: read more often, it shows a transaction long committed forever.
const BOUND_REUSE: std::time::Duration = std::time::Duration::from_millis(250);

/// The newest timestamp a task's timestamp queries read up to, read from
/// the database at most every [`BOUND_REUSE`] (a reused bound is only
/// older, so it can delay rows, never skip them).
#[derive(Debug, Default)]
pub(crate) struct UpperBound {
    last: Option<(tokio::time::Instant, Instant)>,
}

impl UpperBound {
    async fn get(&mut self, pool: &Pool, s: &SourceSettings) -> Result<Instant> {
        let now = tokio::time::Instant::now();
        if let Some((at, bound)) = self.last {
            if now.duration_since(at) < BOUND_REUSE {
                return Ok(bound);
            }
        }
        let bound = upper_bound(pool, s).await?;
        self.last = Some((now, bound));
        Ok(bound)
    }
}

/// The newest timestamp a poll may read up to: the database's clock less
/// `timestamp.delay.interval.ms`, and never past the start of the oldest
/// transaction still open, whose rows may yet commit with timestamps
/// before the database's clock (Confluent's connector skips them for good).
async fn upper_bound(pool: &Pool, s: &SourceSettings) -> Result<Instant> {
    // Saturating: a delay beyond chrono's range reads nothing rather than panic.
    let delay =
        chrono::Duration::try_milliseconds(s.timestamp_delay_ms).unwrap_or(chrono::Duration::MAX);
    let fetch = |e: sqlx::Error| classify(e).context("reading the database's clock");
    let (now, oldest): (DateTime<Utc>, Option<DateTime<Utc>>) = match pool {
        Pool::Pg(p) => sqlx::query_as(
            "SELECT clock_timestamp(), (SELECT min(xact_start) FROM pg_stat_activity \
             WHERE xact_start IS NOT NULL AND pid <> pg_backend_pid() AND backend_type = 'client backend')",
        )
        .fetch_one(p)
        .await
        .map_err(fetch)?,
        Pool::My(p) => {
            let (now, oldest): (NaiveDateTime, Option<NaiveDateTime>) = sqlx::query_as(
                "SELECT UTC_TIMESTAMP(6), (SELECT MIN(trx_started) FROM information_schema.INNODB_TRX)",
            )
            .fetch_one(p)
            .await
            .map_err(fetch)?;
            (now.and_utc(), oldest.map(|t| t.and_utc()))
        }
        // One writer at a time: no transaction can commit in the past.
        Pool::Lite(_) => (Utc::now(), None),
    };
    let mut upper = now
        .checked_sub_signed(delay)
        .unwrap_or(DateTime::<Utc>::MIN_UTC);
    if let Some(o) = oldest {
        upper = upper.min(o);
    }
    Ok(Instant::from_utc(upper))
}

/// The kind `numeric.mapping` turns a NUMERIC/DECIMAL column into, as
/// Confluent's connector decides it from precision and scale.
fn numeric_target(kind: Kind, precision: Option<i32>, mapping: NumericMapping) -> Option<Kind> {
    let (Kind::Decimal(Some(scale)), Some(precision)) = (kind, precision) else {
        return None;
    };
    if mapping == NumericMapping::None || precision <= 0 {
        return None;
    }
    if scale == 0 && precision < 19 {
        return Some(match precision {
            p if p < 3 => Kind::Int8,
            p if p < 5 => Kind::Int16,
            p if p < 10 => Kind::Int32,
            _ => Kind::Int64,
        });
    }
    match mapping {
        NumericMapping::BestFit if scale > 0 && precision < 19 => Some(Kind::Float64),
        NumericMapping::BestFitEagerDouble if scale > 0 => Some(Kind::Float64),
        _ => None,
    }
}

fn convert_numeric(value: Value, target: Kind, column: &str) -> Result<Value> {
    let Value::Decimal(d) = value else {
        return Ok(value);
    };
    let overflow = || {
        ConnectError::data(format!(
            "column '{column}': {d} does not fit numeric.mapping's type"
        ))
    };
    let int = || i64::try_from(d.unscaled().clone()).map_err(|_| overflow());
    Ok(match target {
        Kind::Int8 => Value::Int8(i8::try_from(int()?).map_err(|_| overflow())?),
        Kind::Int16 => Value::Int16(i16::try_from(int()?).map_err(|_| overflow())?),
        Kind::Int32 => Value::Int32(i32::try_from(int()?).map_err(|_| overflow())?),
        Kind::Int64 => Value::Int64(int()?),
        _ => Value::Float64(d.to_f64()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_have_confluents_shape_and_read_back() {
        let p = Position {
            incrementing: Some(42),
            timestamp: Some(Instant {
                secs: 1_700_000_000,
                nanos: 5_000_123,
            }),
        };
        let o = p.to_offset(Mode::TimestampIncrementing);
        assert_eq!(
            serde_json::Value::Object(o.clone()),
            json!({"incrementing": 42, "timestamp": 1_700_000_000_005i64, "timestamp_nanos": 5_000_123})
        );
        assert_eq!(Position::from_offset(&o), Some(p));
        assert_eq!(
            serde_json::Value::Object(p.to_offset(Mode::Incrementing)),
            json!({"incrementing": 42})
        );
        assert_eq!(
            Position::from_offset(&serde_json::from_value(json!({"incrementing": "x"})).unwrap()),
            None
        );
    }

    #[test]
    fn partitions_are_confluents_protocol_one_and_zero() {
        let t = Target::Table("public.orders".into());
        assert_eq!(
            serde_json::Value::Object(partition(&t)),
            json!({"protocol": "1", "table": "public.orders"})
        );
        assert_eq!(
            serde_json::Value::Object(legacy_partition(&t).unwrap()),
            json!({"table": "orders"})
        );
        assert_eq!(
            serde_json::Value::Object(partition(&Target::Query("q".into()))),
            json!({"query": "query"})
        );
    }

    #[test]
    fn numeric_mapping_follows_precision_and_scale() {
        let d = |s| Kind::Decimal(Some(s));
        assert_eq!(
            numeric_target(d(0), Some(9), NumericMapping::BestFit),
            Some(Kind::Int32)
        );
        assert_eq!(
            numeric_target(d(0), Some(2), NumericMapping::PrecisionOnly),
            Some(Kind::Int8)
        );
        assert_eq!(
            numeric_target(d(2), Some(10), NumericMapping::PrecisionOnly),
            None
        );
        assert_eq!(
            numeric_target(d(2), Some(10), NumericMapping::BestFit),
            Some(Kind::Float64)
        );
        assert_eq!(
            numeric_target(d(2), Some(30), NumericMapping::BestFit),
            None
        );
        assert_eq!(numeric_target(d(2), Some(10), NumericMapping::None), None);
    }
}
