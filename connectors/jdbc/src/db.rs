//! The database connection: a pool per dialect, connecting with
//! `connection.attempts`, errors sorted into retriable (the database is
//! away) and not (the statement or the data is wrong), and the column
//! kinds values are read and written as.

use std::time::Duration;

use bigdecimal::BigDecimal;
use chrono::{DateTime, NaiveDate, NaiveDateTime, NaiveTime, TimeZone, Utc};
use connect_api::{ConnectError, Decimal, Result, Schema, SchemaBuilder, Value};
use num_bigint::BigInt;
use sqlx::mysql::{MySqlConnectOptions, MySqlPool, MySqlPoolOptions, MySqlRow};
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions, PgRow};
use sqlx::sqlite::{SqliteConnectOptions, SqlitePool, SqlitePoolOptions, SqliteRow};
use sqlx::{Column as _, Row, TypeInfo as _, ValueRef as _};

use crate::config::{redact_url, Connection};
use crate::dialect::Dialect;
use crate::pg_numeric::PgNumericBytes;
use crate::zone::DbTimeZone;

/// A pool of connections to one database.
#[derive(Clone)]
pub(crate) enum Pool {
    Pg(PgPool),
    My(MySqlPool),
    Lite(SqlitePool),
}

/// Evaluates `$body` with `$p` bound to the pool inside `$pool`: the three
/// pool types share sqlx's API but not a type, so code generic over them
/// is written once and expanded for each.
macro_rules! with_pool {
    ($pool:expr, $p:ident => $body:expr) => {
        match $pool {
            Pool::Pg($p) => $body,
            Pool::My($p) => $body,
            Pool::Lite($p) => $body,
        }
    };
}
pub(crate) use with_pool;

/// Host, port and database of a `jdbc:<scheme>://host[:port]/db?params` URL.
fn host_port_db(url: &str, scheme_len: usize, default_port: u16) -> Result<(String, u16, String)> {
    let rest = &url[scheme_len..];
    let rest = rest.split_once('?').map_or(rest, |(r, _)| r);
    let (authority, db) = rest.split_once('/').unwrap_or((rest, ""));
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) => (
            h,
            p.parse::<u16>().map_err(|_| {
                ConnectError::config(
                    crate::config::CONNECTION_URL,
                    format!("'{}': port '{p}' is not a number", redact_url(url)),
                )
            })?,
        ),
        None => (authority, default_port),
    };
    if host.is_empty() {
        return Err(ConnectError::config(
            crate::config::CONNECTION_URL,
            format!("'{}' names no host", redact_url(url)),
        ));
    }
    Ok((host.to_string(), port, db.to_string()))
}

impl Pool {
    /// Connects, trying `connection.attempts` times `connection.backoff.ms`
    /// apart; the last failure is retriable (the database may come back).
    pub(crate) async fn connect(conn: &Connection, max_connections: u32) -> Result<Pool> {
        let mut attempt = 1;
        loop {
            match Self::connect_once(conn, max_connections).await {
                Ok(pool) => return Ok(pool),
                Err(e) if attempt >= conn.attempts || !e.is_retriable() => return Err(e),
                Err(e) => {
                    tracing::warn!(
                        "could not connect to {} (attempt {attempt} of {}), retrying in {} ms: {e}",
                        redact_url(&conn.url),
                        conn.attempts,
                        conn.backoff_ms
                    );
                    tokio::time::sleep(Duration::from_millis(conn.backoff_ms)).await;
                    attempt += 1;
                }
            }
        }
    }

    async fn connect_once(conn: &Connection, max_connections: u32) -> Result<Pool> {
        let url = conn.url.as_str();
        let context =
            |e: sqlx::Error| classify(e).context(format_args!("connecting to {}", redact_url(url)));
        // How long a statement waits for a connection before the database
        // counts as away (a retriable error: the worker retries the batch).
        let acquire = Duration::from_secs(10);
        Ok(match conn.dialect {
            Dialect::Postgres => {
                let (host, port, db) = host_port_db(url, "jdbc:postgresql://".len(), 5432)?;
                let mut o = PgConnectOptions::new().host(&host).port(port).database(&db);
                if let Some(u) = &conn.user {
                    o = o.username(u);
                }
                if let Some(p) = &conn.password {
                    o = o.password(p);
                }
                let pool = PgPoolOptions::new()
                    .max_connections(max_connections)
                    .acquire_timeout(acquire)
                    .connect_with(o)
                    .await
                    .map_err(context)?;
                Pool::Pg(pool)
            }
            Dialect::MySql => {
                let scheme = if url.starts_with("jdbc:mariadb://") {
                    "jdbc:mariadb://".len()
                } else {
                    "jdbc:mysql://".len()
                };
                let (host, port, db) = host_port_db(url, scheme, 3306)?;
                let mut o = MySqlConnectOptions::new()
                    .host(&host)
                    .port(port)
                    .database(&db)
                    .timezone(Some("+00:00".to_string()));
                if let Some(u) = &conn.user {
                    o = o.username(u);
                }
                if let Some(p) = &conn.password {
                    o = o.password(p);
                }
                let pool = MySqlPoolOptions::new()
                    .max_connections(max_connections)
                    .acquire_timeout(acquire)
                    .connect_with(o)
                    .await
                    .map_err(context)?;
                Pool::My(pool)
            }
            Dialect::Sqlite => {
                let path = url["jdbc:sqlite:".len()..]
                    .split_once('?')
                    .map_or(&url["jdbc:sqlite:".len()..], |(p, _)| p);
                let o = if path.is_empty() || path == ":memory:" {
                    SqliteConnectOptions::new().in_memory(true)
                } else {
                    SqliteConnectOptions::new()
                        .filename(path)
                        .create_if_missing(true)
                };
                // One writer at a time is SQLite's rule; a single connection
                // also keeps an in-memory database one database.
                let pool = SqlitePoolOptions::new()
                    .max_connections(1)
                    .acquire_timeout(acquire)
                    .connect_with(o.busy_timeout(Duration::from_secs(10)))
                    .await
                    .map_err(context)?;
                Pool::Lite(pool)
            }
        })
    }

    /// Closes every connection.
    pub(crate) async fn close(&self) {
        with_pool!(self, p => p.close().await)
    }

    /// Runs a statement with no parameters and no rows (DDL).
    pub(crate) async fn execute(&self, sql: &str) -> Result<()> {
        let r = with_pool!(self, p => sqlx::raw_sql(sql).execute(p).await.map(|_| ()));
        r.map_err(|e| classify(e).context(format_args!("running '{sql}'")))
    }

    /// Rows of a query whose parameters and result columns are all text
    /// (catalog queries), each row as its columns in order.
    pub(crate) async fn text_rows(
        &self,
        sql: &str,
        params: &[&str],
    ) -> Result<Vec<Vec<Option<String>>>> {
        fn texts<R: Row>(row: &R) -> Vec<Option<String>>
        where
            for<'r> Option<String>: sqlx::Decode<'r, R::Database>,
            usize: sqlx::ColumnIndex<R>,
        {
            (0..row.len())
                .map(|i| row.try_get_unchecked::<Option<String>, _>(i).ok().flatten())
                .collect()
        }
        let r = with_pool!(self, p => {
            let mut q = sqlx::query(sql);
            for v in params {
                q = q.bind(*v);
            }
            q.fetch_all(p).await.map(|rows| rows.iter().map(texts).collect())
        });
        r.map_err(|e| classify(e).context(format_args!("running '{sql}'")))
    }
}

/// A database error as a Connect error: the database being away (I/O,
/// pool timeout, a closed pool, a server shutting down) is retriable,
/// everything else (bad SQL, a constraint, a bad value) is not.
pub(crate) fn classify(e: sqlx::Error) -> ConnectError {
    let retriable = match &e {
        sqlx::Error::Io(_)
        | sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::WorkerCrashed
        | sqlx::Error::Tls(_)
        | sqlx::Error::Protocol(_) => true,
        sqlx::Error::Database(db) => db.code().is_some_and(|code| {
            // PostgreSQL: 08xxx connection exceptions, 57P0x shutdown and
            // crash, 40001/40P01 serialization failure and deadlock.
            // MariaDB: 1205 lock wait timeout, 1213 deadlock, 2006/2013
            // server gone away. SQLite: 5/6 busy and locked.
            code.starts_with("08")
                || code.starts_with("57P0")
                || code == "40001"
                || code == "40P01"
                || code == "1205"
                || code == "1213"
                || code == "2006"
                || code == "2013"
                || code == "5"
                || code == "6"
        }),
        _ => false,
    };
    let message = e.to_string();
    if retriable {
        ConnectError::retriable(message).with_source(e)
    } else {
        ConnectError::data(message).with_source(e)
    }
}

/// How a column's values are read and which Connect schema they get.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Bool,
    Int8,
    Int16,
    Int32,
    Int64,
    Float32,
    Float64,
    /// Connect's Decimal with this scale; `None` until known (a NUMERIC
    /// column of a query: taken from the first value).
    Decimal(Option<i32>),
    Text,
    Bytes,
    Date,
    Time,
    /// A timestamp without a zone, in `db.timezone`.
    Timestamp,
    /// A timestamp with a zone (an instant).
    TimestampTz,
    /// PostgreSQL `uuid`, as its text form.
    Uuid,
    /// PostgreSQL `json` / `jsonb`, as its text.
    Json,
}

impl Kind {
    /// The kind of a column the database reports as `type_name`, `None`
    /// for types this connector does not read (a warning names them).
    pub(crate) fn of(dialect: Dialect, type_name: &str) -> Option<Kind> {
        let t = type_name.to_ascii_uppercase();
        Some(match dialect {
            Dialect::Postgres => match t.as_str() {
                "BOOL" => Kind::Bool,
                "INT2" => Kind::Int16,
                "INT4" | "OID" => Kind::Int32,
                "INT8" => Kind::Int64,
                "FLOAT4" => Kind::Float32,
                "FLOAT8" => Kind::Float64,
                "NUMERIC" => Kind::Decimal(None),
                "TEXT" | "VARCHAR" | "BPCHAR" | "NAME" | "CHAR" | "CITEXT" => Kind::Text,
                "BYTEA" => Kind::Bytes,
                "DATE" => Kind::Date,
                "TIME" => Kind::Time,
                "TIMESTAMP" => Kind::Timestamp,
                "TIMESTAMPTZ" => Kind::TimestampTz,
                "UUID" => Kind::Uuid,
                "JSON" | "JSONB" => Kind::Json,
                _ => return None,
            },
            Dialect::MySql => match t.as_str() {
                "BOOLEAN" => Kind::Bool,
                "TINYINT" => Kind::Int8,
                "TINYINT UNSIGNED" | "SMALLINT" | "YEAR" => Kind::Int16,
                "SMALLINT UNSIGNED" | "MEDIUMINT" | "MEDIUMINT UNSIGNED" | "INT" => Kind::Int32,
                "INT UNSIGNED" | "BIGINT" => Kind::Int64,
                "BIGINT UNSIGNED" => Kind::Decimal(Some(0)),
                "FLOAT" => Kind::Float32,
                "DOUBLE" => Kind::Float64,
                "DECIMAL" => Kind::Decimal(None),
                "CHAR" | "VARCHAR" | "TEXT" | "TINYTEXT" | "MEDIUMTEXT" | "LONGTEXT" | "ENUM"
                | "SET" | "JSON" => Kind::Text,
                "BINARY" | "VARBINARY" | "BLOB" | "TINYBLOB" | "MEDIUMBLOB" | "LONGBLOB" => {
                    Kind::Bytes
                }
                "DATE" => Kind::Date,
                "TIME" => Kind::Time,
                "DATETIME" => Kind::Timestamp,
                "TIMESTAMP" => Kind::TimestampTz,
                _ => return None,
            },
            Dialect::Sqlite => match t.as_str() {
                "BOOLEAN" => Kind::Bool,
                "INTEGER" => Kind::Int64,
                "REAL" | "NUMERIC" => Kind::Float64,
                "TEXT" | "NULL" => Kind::Text,
                "BLOB" => Kind::Bytes,
                "DATE" => Kind::Date,
                "TIME" => Kind::Time,
                "DATETIME" => Kind::Timestamp,
                _ => return None,
            },
        })
    }

    /// The Connect schema of a column of this kind.
    pub(crate) fn schema(self, optional: bool) -> Schema {
        let b = match self {
            Kind::Bool => SchemaBuilder::boolean(),
            Kind::Int8 => SchemaBuilder::int8(),
            Kind::Int16 => SchemaBuilder::int16(),
            Kind::Int32 => SchemaBuilder::int32(),
            Kind::Int64 => SchemaBuilder::int64(),
            Kind::Float32 => SchemaBuilder::float32(),
            Kind::Float64 => SchemaBuilder::float64(),
            Kind::Decimal(scale) => connect_api::logical::decimal_builder(scale.unwrap_or(0)),
            Kind::Text | Kind::Uuid | Kind::Json => SchemaBuilder::string(),
            Kind::Bytes => SchemaBuilder::bytes(),
            Kind::Date => connect_api::logical::date_builder(),
            Kind::Time => connect_api::logical::time_builder(),
            Kind::Timestamp | Kind::TimestampTz => connect_api::logical::timestamp_builder(),
        };
        let b = if optional { b.optional() } else { b };
        b.build()
            .expect("primitive and logical schemas always build")
    }
}

/// A column of a result: its name, how it is read, whether it may be null.
#[derive(Debug, Clone)]
pub(crate) struct Column {
    pub(crate) name: String,
    pub(crate) kind: Kind,
    pub(crate) nullable: bool,
}

/// A timestamp read from the database: epoch milliseconds plus the
/// nanoseconds within its second (Confluent's offset fields).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub(crate) struct Instant {
    pub(crate) secs: i64,
    pub(crate) nanos: u32,
}

impl Instant {
    pub(crate) fn from_utc(t: DateTime<Utc>) -> Instant {
        Instant {
            secs: t.timestamp(),
            nanos: t.timestamp_subsec_nanos(),
        }
    }
    pub(crate) fn millis(self) -> i64 {
        self.secs * 1000 + i64::from(self.nanos / 1_000_000)
    }
    /// From Confluent's offset fields: `timestamp` (ms) and
    /// `timestamp_nanos` (the nanoseconds of that second).
    pub(crate) fn from_offset(millis: i64, nanos: Option<i64>) -> Instant {
        let secs = millis.div_euclid(1000);
        let nanos = match nanos {
            Some(n) if (0..1_000_000_000).contains(&n) => n as u32,
            _ => (millis.rem_euclid(1000) * 1_000_000) as u32,
        };
        Instant { secs, nanos }
    }
    pub(crate) fn utc(self) -> DateTime<Utc> {
        Utc.timestamp_opt(self.secs, self.nanos)
            .single()
            .unwrap_or_default()
    }
}

/// Reads column `i` of a row as `kind`; `Null` for SQL NULL. Timestamps
/// also come back as an [`Instant`] for offsets.
pub(crate) trait ReadRow {
    fn read(&self, i: usize, kind: Kind, tz: DbTimeZone) -> Result<(Value, Option<Instant>)>;
}

/// The decimal of a `BigDecimal` at `scale` (rescaled, rounding half even
/// when the column's scale is smaller than the value's).
/// `None` keeps the value's own scale.
fn decimal_value(d: BigDecimal, scale: Option<i32>) -> Value {
    let (unscaled, exponent) = d.into_bigint_and_exponent();
    match scale {
        // The usual case: the value already has the column's scale (no
        // copy). PostgreSQL's NUMERIC columns are read by crate::pg_numeric.
        Some(scale) if i64::from(scale) != exponent => Value::Decimal(Decimal::new(
            rescale_rounding(unscaled, exponent, scale),
            scale,
        )),
        _ => Value::Decimal(Decimal::new(unscaled, exponent as i32)),
    }
}

/// `unscaled * 10^-exponent` at `scale`, rounding half even.
pub(crate) fn rescale_rounding(unscaled: BigInt, exponent: i64, scale: i32) -> BigInt {
    BigDecimal::new(unscaled, exponent)
        .with_scale_round(i64::from(scale), bigdecimal::RoundingMode::HalfEven)
        .into_bigint_and_exponent()
        .0
}

fn naive_instant(t: NaiveDateTime, tz: DbTimeZone) -> Instant {
    Instant::from_utc(tz.utc(t))
}

fn date_value(d: NaiveDate) -> Value {
    let epoch = NaiveDate::from_ymd_opt(1970, 1, 1).expect("epoch");
    Value::Date((d - epoch).num_days() as i32)
}

fn time_value(t: NaiveTime) -> Value {
    let ms = (t - NaiveTime::MIN).num_milliseconds();
    Value::Time(ms as i32)
}

fn instant_value(i: Instant) -> (Value, Option<Instant>) {
    (Value::Timestamp(i.millis()), Some(i))
}

macro_rules! get {
    ($row:expr, $i:expr, $t:ty, $f:expr) => {
        match $row
            .try_get_unchecked::<Option<$t>, _>($i)
            .map_err(|e| read_error($row.column($i).name(), e))?
        {
            None => (Value::Null, None),
            Some(v) => $f(v),
        }
    };
}

fn read_error(column: &str, e: sqlx::Error) -> ConnectError {
    ConnectError::data(format!("could not read column '{column}': {e}")).with_source(e)
}

fn plain(v: impl Into<Value>) -> (Value, Option<Instant>) {
    (v.into(), None)
}

/// Reads a column of a PostgreSQL or MariaDB row: the types both decode
/// the same way.
fn read_typed<R>(row: &R, i: usize, kind: Kind, tz: DbTimeZone) -> Result<(Value, Option<Instant>)>
where
    R: Row,
    usize: sqlx::ColumnIndex<R>,
    for<'r> bool: sqlx::Decode<'r, R::Database>,
    for<'r> i16: sqlx::Decode<'r, R::Database>,
    for<'r> i32: sqlx::Decode<'r, R::Database>,
    for<'r> i64: sqlx::Decode<'r, R::Database>,
    for<'r> f32: sqlx::Decode<'r, R::Database>,
    for<'r> f64: sqlx::Decode<'r, R::Database>,
    for<'r> BigDecimal: sqlx::Decode<'r, R::Database>,
    for<'r> String: sqlx::Decode<'r, R::Database>,
    for<'r> Vec<u8>: sqlx::Decode<'r, R::Database>,
    for<'r> NaiveDate: sqlx::Decode<'r, R::Database>,
    for<'r> NaiveTime: sqlx::Decode<'r, R::Database>,
    for<'r> NaiveDateTime: sqlx::Decode<'r, R::Database>,
    for<'r> DateTime<Utc>: sqlx::Decode<'r, R::Database>,
    for<'r> sqlx::types::Uuid: sqlx::Decode<'r, R::Database>,
    for<'r> sqlx::types::JsonValue: sqlx::Decode<'r, R::Database>,
{
    Ok(match kind {
        Kind::Bool => get!(row, i, bool, plain),
        Kind::Int8 | Kind::Int16 => get!(row, i, i16, plain),
        Kind::Int32 => get!(row, i, i32, plain),
        Kind::Int64 => get!(row, i, i64, plain),
        Kind::Float32 => get!(row, i, f32, plain),
        Kind::Float64 => get!(row, i, f64, plain),
        Kind::Decimal(s) => get!(row, i, BigDecimal, |d| (decimal_value(d, s), None)),
        Kind::Text => get!(row, i, String, plain),
        Kind::Bytes => get!(row, i, Vec<u8>, |b: Vec<u8>| plain(Value::Bytes(b.into()))),
        Kind::Date => get!(row, i, NaiveDate, |d| (date_value(d), None)),
        Kind::Time => get!(row, i, NaiveTime, |t| (time_value(t), None)),
        Kind::Timestamp => get!(row, i, NaiveDateTime, |t| instant_value(naive_instant(
            t, tz
        ))),
        Kind::TimestampTz => get!(row, i, DateTime<Utc>, |t| instant_value(Instant::from_utc(
            t
        ))),
        Kind::Uuid => get!(row, i, sqlx::types::Uuid, |u: sqlx::types::Uuid| plain(
            u.to_string()
        )),
        Kind::Json => get!(
            row,
            i,
            sqlx::types::JsonValue,
            |j: sqlx::types::JsonValue| plain(j.to_string())
        ),
    })
}

impl ReadRow for PgRow {
    fn read(&self, i: usize, kind: Kind, tz: DbTimeZone) -> Result<(Value, Option<Instant>)> {
        let Kind::Decimal(Some(scale)) = kind else {
            return read_typed(self, i, kind, tz);
        };
        // A NUMERIC column's values at its scale, on machine integers where
        // they fit (crate::pg_numeric).
        let name = || self.column(i).name();
        let raw = self
            .try_get_unchecked::<Option<PgNumericBytes<'_>>, _>(i)
            .map_err(|e| read_error(name(), e))?;
        Ok(match raw {
            None => (Value::Null, None),
            Some(n) => {
                let unscaled = n.at_scale(scale).map_err(|e| {
                    ConnectError::data(format!("could not read column '{}': {e}", name()))
                })?;
                (Value::Decimal(Decimal::new(unscaled, scale)), None)
            }
        })
    }
}

impl ReadRow for MySqlRow {
    fn read(&self, i: usize, kind: Kind, tz: DbTimeZone) -> Result<(Value, Option<Instant>)> {
        // MariaDB's own integer widths: signed TINYINT, and unsigned types
        // read one size up (BIGINT UNSIGNED as a scale-0 decimal).
        let unsigned = self.column(i).type_info().name().ends_with("UNSIGNED");
        Ok(match kind {
            Kind::Int8 => get!(self, i, i8, plain),
            Kind::Int16 if unsigned => get!(self, i, u8, |v: u8| plain(i16::from(v))),
            Kind::Int32 if unsigned => get!(self, i, u16, |v: u16| plain(i32::from(v))),
            Kind::Int64 if unsigned => get!(self, i, u32, |v: u32| plain(i64::from(v))),
            Kind::Decimal(s) if unsigned => get!(self, i, u64, |v: u64| (
                Value::Decimal(Decimal::new(BigInt::from(v), s.unwrap_or(0))),
                None
            )),
            _ => return read_typed(self, i, kind, tz),
        })
    }
}

impl ReadRow for SqliteRow {
    fn read(&self, i: usize, kind: Kind, tz: DbTimeZone) -> Result<(Value, Option<Instant>)> {
        // SQLite stores by value, not by column: a NULL is NULL whatever
        // the declared type.
        if self.try_get_raw(i).map(|v| v.is_null()).unwrap_or(false) {
            return Ok((Value::Null, None));
        }
        Ok(match kind {
            Kind::Bool => get!(self, i, bool, plain),
            Kind::Int8 | Kind::Int16 | Kind::Int32 | Kind::Int64 => get!(self, i, i64, plain),
            Kind::Float32 | Kind::Float64 | Kind::Decimal(_) => get!(self, i, f64, plain),
            Kind::Text => get!(self, i, String, plain),
            Kind::Bytes => get!(self, i, Vec<u8>, |b: Vec<u8>| plain(Value::Bytes(b.into()))),
            Kind::Date => get!(self, i, NaiveDate, |d| (date_value(d), None)),
            Kind::Time => get!(self, i, NaiveTime, |t| (time_value(t), None)),
            Kind::Timestamp => get!(self, i, NaiveDateTime, |t| instant_value(naive_instant(
                t, tz
            ))),
            Kind::TimestampTz => get!(self, i, DateTime<Utc>, |t| instant_value(
                Instant::from_utc(t)
            )),
            // PostgreSQL's kinds; SQLite has none of them.
            Kind::Uuid | Kind::Json => get!(self, i, String, plain),
        })
    }
}

/// Columns of a table as the catalog describes them.
pub(crate) struct CatalogColumn {
    pub(crate) name: String,
    pub(crate) nullable: bool,
    pub(crate) precision: Option<i32>,
    pub(crate) scale: Option<i32>,
    /// PostgreSQL's type name (`udt_name`); `None` elsewhere.
    pub(crate) type_name: Option<String>,
}

/// The columns of `table` (qualified or not); empty when it does not exist.
pub(crate) async fn catalog_columns(
    pool: &Pool,
    dialect: Dialect,
    table: &str,
) -> Result<Vec<CatalogColumn>> {
    let (schema, name) = match table.rsplit_once('.') {
        Some((s, n)) => (Some(s), n),
        None => (None, table),
    };
    let rows = match dialect {
        Dialect::Postgres => {
            pool.text_rows(
                "SELECT column_name::text, is_nullable::text, numeric_precision::text, numeric_scale::text, \
                 udt_name::text FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2",
                &[schema.unwrap_or("public"), name],
            )
            .await?
        }
        Dialect::MySql => match schema {
            Some(db) => {
                pool.text_rows(
                    "SELECT CAST(column_name AS CHAR), CAST(is_nullable AS CHAR), CAST(numeric_precision AS CHAR), \
                     CAST(numeric_scale AS CHAR), NULL FROM information_schema.columns WHERE table_schema = ? AND table_name = ?",
                    &[db, name],
                )
                .await?
            }
            None => {
                pool.text_rows(
                    "SELECT CAST(column_name AS CHAR), CAST(is_nullable AS CHAR), CAST(numeric_precision AS CHAR), \
                     CAST(numeric_scale AS CHAR), NULL FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = ?",
                    &[name],
                )
                .await?
            }
        },
        Dialect::Sqlite => {
            pool.text_rows(
                "SELECT name, CASE WHEN \"notnull\" = 0 AND pk = 0 THEN 'YES' ELSE 'NO' END, NULL, NULL, NULL \
                 FROM pragma_table_info(?)",
                &[name],
            )
            .await?
        }
    };
    Ok(rows
        .into_iter()
        .filter_map(|r| {
            let mut r = r.into_iter();
            let name = r.next()??;
            let nullable = r
                .next()
                .flatten()
                .is_none_or(|n| n.eq_ignore_ascii_case("YES"));
            let precision = r.next().flatten().and_then(|p| p.parse().ok());
            let scale = r.next().flatten().and_then(|p| p.parse().ok());
            let type_name = r.next().flatten();
            Some(CatalogColumn {
                name,
                nullable,
                precision,
                scale,
                type_name,
            })
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_keep_nanoseconds_and_milliseconds_agree() {
        let i = Instant::from_offset(1_700_000_000_123, Some(123_456_789));
        assert_eq!(i.millis(), 1_700_000_000_123);
        assert_eq!(i.nanos, 123_456_789);
        // Without timestamp_nanos the milliseconds give the fraction.
        assert_eq!(
            Instant::from_offset(-1, None),
            Instant {
                secs: -1,
                nanos: 999_000_000
            }
        );
    }

    #[test]
    fn jdbc_urls_give_host_port_and_database() {
        let (h, p, d) =
            host_port_db("jdbc:postgresql://db.local:6543/shop?ssl=false", 18, 5432).unwrap();
        assert_eq!((h.as_str(), p, d.as_str()), ("db.local", 6543, "shop"));
        let (h, p, _) = host_port_db("jdbc:mysql://db/shop", 13, 3306).unwrap();
        assert_eq!((h.as_str(), p), ("db", 3306));
        assert!(host_port_db("jdbc:mysql://db:x/shop", 13, 3306).is_err());
    }

    #[test]
    fn decimals_take_the_columns_scale() {
        let d: BigDecimal = "12.5".parse().unwrap();
        assert_eq!(
            decimal_value(d, Some(2)),
            Value::Decimal(Decimal::new(1250, 2))
        );
    }
}
