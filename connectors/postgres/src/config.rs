//! Debezium's config keys for the PostgreSQL connector, and the typed
//! settings a task runs with.

use std::time::Duration;

use connect_api::config::validators::{Range, ValidString};
use connect_api::config::{ConfigKey, Importance, ParsedConfig};
use connect_api::{ConfigDef, ConfigMap, ConfigType, ConnectError, Result};
use regex::Regex;

use crate::wire::Endpoint;

/// `database.hostname`.
pub const DATABASE_HOSTNAME: &str = "database.hostname";
/// `database.port`.
pub const DATABASE_PORT: &str = "database.port";
/// `database.user`.
pub const DATABASE_USER: &str = "database.user";
/// `database.password` (masked in REST answers and logs).
pub const DATABASE_PASSWORD: &str = "database.password";
/// `database.dbname`.
pub const DATABASE_DBNAME: &str = "database.dbname";
/// `database.sslmode`: only `disable`, `allow` and `prefer` (both without
/// TLS) are supported today.
pub const DATABASE_SSLMODE: &str = "database.sslmode";
/// `topic.prefix`: the first part of every topic name and the source
/// partition (`{"server": prefix}`).
pub const TOPIC_PREFIX: &str = "topic.prefix";
/// `plugin.name`: only `pgoutput`.
pub const PLUGIN_NAME: &str = "plugin.name";
/// `slot.name`: the logical replication slot.
pub const SLOT_NAME: &str = "slot.name";
/// `slot.drop.on.stop`: drop the slot when the task stops (tests only).
pub const SLOT_DROP_ON_STOP: &str = "slot.drop.on.stop";
/// `publication.name`.
pub const PUBLICATION_NAME: &str = "publication.name";
/// `publication.autocreate.mode`: `all_tables`, `filtered`, `no_tables`
/// or `disabled`.
pub const PUBLICATION_AUTOCREATE_MODE: &str = "publication.autocreate.mode";
/// `table.include.list`: regular expressions matched against
/// `schema.table`.
pub const TABLE_INCLUDE_LIST: &str = "table.include.list";
/// `table.exclude.list`.
pub const TABLE_EXCLUDE_LIST: &str = "table.exclude.list";
/// `schema.include.list`.
pub const SCHEMA_INCLUDE_LIST: &str = "schema.include.list";
/// `schema.exclude.list`.
pub const SCHEMA_EXCLUDE_LIST: &str = "schema.exclude.list";
/// `column.include.list`: regular expressions matched against
/// `schema.table.column`.
pub const COLUMN_INCLUDE_LIST: &str = "column.include.list";
/// `column.exclude.list`.
pub const COLUMN_EXCLUDE_LIST: &str = "column.exclude.list";
/// `snapshot.mode`.
pub const SNAPSHOT_MODE: &str = "snapshot.mode";
/// `heartbeat.interval.ms`: 0 disables heartbeats.
pub const HEARTBEAT_INTERVAL_MS: &str = "heartbeat.interval.ms";
/// `topic.heartbeat.prefix`.
pub const TOPIC_HEARTBEAT_PREFIX: &str = "topic.heartbeat.prefix";
/// `tombstones.on.delete`.
pub const TOMBSTONES_ON_DELETE: &str = "tombstones.on.delete";
/// `decimal.handling.mode`: `precise`, `double` or `string`.
pub const DECIMAL_HANDLING_MODE: &str = "decimal.handling.mode";
/// `time.precision.mode`: `adaptive`, `adaptive_time_microseconds` or
/// `connect`.
pub const TIME_PRECISION_MODE: &str = "time.precision.mode";
/// `binary.handling.mode`: `bytes`, `base64`, `base64-url-safe` or `hex`.
pub const BINARY_HANDLING_MODE: &str = "binary.handling.mode";
/// `max.batch.size`: events per poll.
pub const MAX_BATCH_SIZE: &str = "max.batch.size";
/// `max.queue.size`: events read ahead of the poll.
pub const MAX_QUEUE_SIZE: &str = "max.queue.size";
/// `poll.interval.ms`: the longest a poll waits for the first event.
pub const POLL_INTERVAL_MS: &str = "poll.interval.ms";
/// `status.update.interval.ms`: how often the slot hears from us.
pub const STATUS_UPDATE_INTERVAL_MS: &str = "status.update.interval.ms";
/// `provide.transaction.metadata`: BEGIN/END records and a `transaction`
/// block in each event.
pub const PROVIDE_TRANSACTION_METADATA: &str = "provide.transaction.metadata";
/// `topic.transaction`: the transaction topic's suffix.
pub const TOPIC_TRANSACTION: &str = "topic.transaction";
/// `skipped.operations`: `c`, `u`, `d`, `t` not to emit (`none` for
/// none); `t` by default.
pub const SKIPPED_OPERATIONS: &str = "skipped.operations";
/// `snapshot.fetch.size` (accepted; rows stream without a cursor).
pub const SNAPSHOT_FETCH_SIZE: &str = "snapshot.fetch.size";

/// `snapshot.mode`: when the tables' existing rows are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SnapshotMode {
    /// With no stored offset, snapshot, then stream.
    Initial,
    /// Snapshot with no stored offset, and when the stored offset is no
    /// longer available in the slot.
    WhenNeeded,
    /// Snapshot at every start.
    Always,
    /// Stream only; with no stored offset, from the slot's position.
    NoData,
    /// Like `no_data` (Debezium's older name).
    Never,
    /// Snapshot with no stored offset, then stop streaming (the task idles).
    InitialOnly,
}

/// `decimal.handling.mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecimalHandling {
    /// Connect's Decimal (or Debezium's VariableScaleDecimal).
    Precise,
    /// FLOAT64.
    Double,
    /// The number as a string.
    String,
}

/// `time.precision.mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimePrecision {
    /// Debezium's types, their unit chosen by the column's precision.
    Adaptive,
    /// As adaptive, but every TIME in microseconds.
    AdaptiveTimeMicroseconds,
    /// Connect's Date, Time and Timestamp (milliseconds).
    Connect,
}

/// `binary.handling.mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinaryHandling {
    /// BYTES.
    Bytes,
    /// A base64 string.
    Base64,
    /// A URL-safe base64 string.
    Base64UrlSafe,
    /// A hexadecimal string.
    Hex,
}

/// `publication.autocreate.mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AutocreateMode {
    /// `CREATE PUBLICATION .. FOR ALL TABLES`.
    AllTables,
    /// A publication of the captured tables, kept in step with the filters.
    Filtered,
    /// An empty publication (tables added by the operator).
    NoTables,
    /// The publication must exist.
    Disabled,
}

fn choice(name: &str, values: &[&str]) -> ConfigKey {
    ConfigKey::new(name, ConfigType::String)
        .validator(ValidString::case_insensitive(values.iter().copied()))
}

/// Every key the connector accepts, with Debezium's defaults.
pub(crate) fn definition() -> ConfigDef {
    ConfigDef::new()
        .define(
            ConfigKey::new(DATABASE_HOSTNAME, ConfigType::String)
                .importance(Importance::High)
                .doc("Resolvable hostname or IP address of the database server."),
        )
        .define(
            ConfigKey::new(DATABASE_PORT, ConfigType::Int)
                .default(5432)
                .validator(Range::between(1, 65535))
                .importance(Importance::High)
                .doc("Port of the database server."),
        )
        .define(
            ConfigKey::new(DATABASE_USER, ConfigType::String)
                .importance(Importance::High)
                .doc("Name of the database user (needs REPLICATION and SELECT on the captured tables)."),
        )
        .define(
            ConfigKey::new(DATABASE_PASSWORD, ConfigType::Password)
                .optional()
                .importance(Importance::High)
                .doc("Password of the database user."),
        )
        .define(
            ConfigKey::new(DATABASE_DBNAME, ConfigType::String)
                .importance(Importance::High)
                .doc("The name of the database from which to stream the changes."),
        )
        .define(
            choice(DATABASE_SSLMODE, &["disable", "allow", "prefer"])
                .default("prefer")
                .importance(Importance::Medium)
                .doc("Whether to use TLS. Only disable, allow and prefer are supported (no TLS is used): a server that requires TLS is refused with a clear error."),
        )
        .define(
            ConfigKey::new(TOPIC_PREFIX, ConfigType::String)
                .importance(Importance::High)
                .doc("Topic prefix naming this database server: topics are <prefix>.<schema>.<table>, and it names the source partition of the offsets."),
        )
        .define(
            choice(PLUGIN_NAME, &["pgoutput"])
                .default("pgoutput")
                .importance(Importance::Medium)
                .doc("The logical decoding plugin: only pgoutput (built into PostgreSQL 10+)."),
        )
        .define(
            ConfigKey::new(SLOT_NAME, ConfigType::String)
                .default("debezium")
                .importance(Importance::Medium)
                .doc("The name of the logical replication slot."),
        )
        .define(
            ConfigKey::new(SLOT_DROP_ON_STOP, ConfigType::Boolean)
                .default(false)
                .importance(Importance::Low)
                .doc("Drop the slot when the task stops: changes made while it is stopped are then lost. For tests."),
        )
        .define(
            ConfigKey::new(PUBLICATION_NAME, ConfigType::String)
                .default("dbz_publication")
                .importance(Importance::Medium)
                .doc("The name of the publication the slot streams."),
        )
        .define(
            choice(PUBLICATION_AUTOCREATE_MODE, &["all_tables", "disabled", "filtered", "no_tables"])
                .default("all_tables")
                .importance(Importance::Medium)
                .doc("all_tables: create the publication FOR ALL TABLES; filtered: for the captured tables, kept in step; no_tables: empty; disabled: it must exist."),
        )
        .define(list_key(TABLE_INCLUDE_LIST, "Regular expressions matching schema.table of the tables to capture (all when empty)."))
        .define(list_key(TABLE_EXCLUDE_LIST, "Regular expressions matching schema.table of tables not to capture."))
        .define(list_key(SCHEMA_INCLUDE_LIST, "Regular expressions matching the schemas to capture."))
        .define(list_key(SCHEMA_EXCLUDE_LIST, "Regular expressions matching schemas not to capture."))
        .define(list_key(COLUMN_INCLUDE_LIST, "Regular expressions matching schema.table.column of the columns to keep."))
        .define(list_key(COLUMN_EXCLUDE_LIST, "Regular expressions matching schema.table.column of columns to leave out."))
        .define(
            choice(SNAPSHOT_MODE, &["initial", "when_needed", "always", "no_data", "never", "initial_only"])
                .default("initial")
                .importance(Importance::Medium)
                .doc("initial: snapshot when there is no offset; when_needed: also when the offset is no longer in the slot; always: at every start; no_data/never: stream only; initial_only: snapshot, then no streaming."),
        )
        .define(
            ConfigKey::new(HEARTBEAT_INTERVAL_MS, ConfigType::Int)
                .default(0)
                .validator(Range::at_least(0))
                .importance(Importance::Medium)
                .doc("How often a heartbeat record is sent to __debezium-heartbeat.<prefix> and the slot moved forward on a quiet database; 0 disables."),
        )
        .define(
            ConfigKey::new(TOPIC_HEARTBEAT_PREFIX, ConfigType::String)
                .default("__debezium-heartbeat")
                .importance(Importance::Low)
                .doc("The prefix of the heartbeat topic."),
        )
        .define(
            ConfigKey::new(TOMBSTONES_ON_DELETE, ConfigType::Boolean)
                .default(true)
                .importance(Importance::Medium)
                .doc("Whether a delete event is followed by a tombstone (null value) for log compaction."),
        )
        .define(
            choice(DECIMAL_HANDLING_MODE, &["precise", "double", "string"])
                .default("precise")
                .importance(Importance::Medium)
                .doc("How NUMERIC, DECIMAL and MONEY values are represented."),
        )
        .define(
            choice(TIME_PRECISION_MODE, &["adaptive", "adaptive_time_microseconds", "connect"])
                .default("adaptive")
                .importance(Importance::Medium)
                .doc("How time, date and timestamp values are represented."),
        )
        .define(
            choice(BINARY_HANDLING_MODE, &["bytes", "base64", "base64-url-safe", "hex"])
                .default("bytes")
                .importance(Importance::Low)
                .doc("How BYTEA values are represented."),
        )
        .define(
            ConfigKey::new(MAX_BATCH_SIZE, ConfigType::Int)
                .default(2048)
                .validator(Range::at_least(1))
                .importance(Importance::Low)
                .doc("The most events one poll returns."),
        )
        .define(
            ConfigKey::new(MAX_QUEUE_SIZE, ConfigType::Int)
                .default(8192)
                .validator(Range::at_least(1))
                .importance(Importance::Low)
                .doc("The most change events read from the slot ahead of the polls (the reader waits when it is full)."),
        )
        .define(
            ConfigKey::new(POLL_INTERVAL_MS, ConfigType::Long)
                .default(500i64)
                .validator(Range::at_least(1))
                .importance(Importance::Low)
                .doc("The longest a poll waits for the first event."),
        )
        .define(
            ConfigKey::new(STATUS_UPDATE_INTERVAL_MS, ConfigType::Int)
                .default(10_000)
                .validator(Range::at_least(1))
                .importance(Importance::Low)
                .doc("How often the connector tells the server its position (keeps the connection alive)."),
        )
        .define(
            ConfigKey::new(PROVIDE_TRANSACTION_METADATA, ConfigType::Boolean)
                .default(false)
                .importance(Importance::Low)
                .doc("Emit BEGIN and END records per transaction on <prefix>.<topic.transaction> and a transaction block (id, total_order, data_collection_order) in each change event."),
        )
        .define(
            ConfigKey::new(TOPIC_TRANSACTION, ConfigType::String)
                .default("transaction")
                .importance(Importance::Low)
                .doc("The suffix of the transaction metadata topic."),
        )
        .define(
            ConfigKey::new(SKIPPED_OPERATIONS, ConfigType::List)
                .default(vec!["t".to_string()])
                .validator(connect_api::config::validators::ValidList::of(["c", "u", "d", "t", "none"]))
                .importance(Importance::Low)
                .doc("Operations not to emit: c (inserts), u (updates), d (deletes), t (truncates), or none."),
        )
        .define(
            ConfigKey::new(SNAPSHOT_FETCH_SIZE, ConfigType::Int)
                .optional()
                .importance(Importance::Low)
                .doc("Accepted for Debezium compatibility: snapshot rows stream from the socket without a cursor."),
        )
}

fn list_key(name: &str, doc: &str) -> ConfigKey {
    ConfigKey::new(name, ConfigType::List)
        .default(Vec::<String>::new())
        .importance(Importance::Medium)
        .doc(doc)
}

/// Which tables and columns are captured.
#[derive(Debug, Clone, Default)]
pub(crate) struct Filters {
    table_include: Vec<Regex>,
    table_exclude: Vec<Regex>,
    schema_include: Vec<Regex>,
    schema_exclude: Vec<Regex>,
    column_include: Vec<Regex>,
    column_exclude: Vec<Regex>,
}

fn regexes(parsed: &ParsedConfig, key: &str) -> Result<Vec<Regex>> {
    parsed
        .get_list(key)
        .unwrap_or(&[])
        .iter()
        .map(|s| s.trim())
        .filter(|s| !s.is_empty())
        .map(|s| {
            // Debezium matches the whole name, case-insensitively.
            Regex::new(&format!("(?i)^(?:{s})$")).map_err(|e| {
                ConnectError::config(key, format!("'{s}' is not a regular expression: {e}"))
            })
        })
        .collect()
}

impl Filters {
    /// Whether `schema.table` is captured.
    pub(crate) fn table(&self, schema: &str, table: &str) -> bool {
        if schema == "pg_catalog" || schema == "information_schema" {
            return false;
        }
        let qualified = format!("{schema}.{table}");
        let any = |list: &[Regex], s: &str| list.iter().any(|r| r.is_match(s));
        if !self.table_include.is_empty() {
            return any(&self.table_include, &qualified);
        }
        if any(&self.table_exclude, &qualified) {
            return false;
        }
        if !self.schema_include.is_empty() {
            return any(&self.schema_include, schema);
        }
        !any(&self.schema_exclude, schema)
    }

    /// Whether `schema.table.column` is kept.
    pub(crate) fn column(&self, schema: &str, table: &str, column: &str) -> bool {
        if self.column_include.is_empty() && self.column_exclude.is_empty() {
            return true;
        }
        let qualified = format!("{schema}.{table}.{column}");
        if !self.column_include.is_empty() {
            return self.column_include.iter().any(|r| r.is_match(&qualified));
        }
        !self.column_exclude.iter().any(|r| r.is_match(&qualified))
    }
}

/// The settings of a running connector or task.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    pub endpoint: Endpoint,
    pub topic_prefix: String,
    pub slot: String,
    pub slot_drop_on_stop: bool,
    pub publication: String,
    pub autocreate: AutocreateMode,
    pub filters: Filters,
    pub snapshot_mode: SnapshotMode,
    pub heartbeat_interval: Option<Duration>,
    pub heartbeat_topic: String,
    pub tombstones_on_delete: bool,
    pub decimal: DecimalHandling,
    pub time: TimePrecision,
    pub binary: BinaryHandling,
    pub max_batch_size: usize,
    pub max_queue_size: usize,
    pub poll_interval: Duration,
    pub status_interval: Duration,
    /// `provide.transaction.metadata`.
    pub transaction_metadata: bool,
    /// `<prefix>.<topic.transaction>`.
    pub transaction_topic: std::sync::Arc<str>,
    /// The operations not emitted (`c`, `u`, `d`, `t`).
    pub skipped: Vec<char>,
}

fn lower(parsed: &ParsedConfig, key: &str) -> Result<String> {
    Ok(parsed.string(key)?.to_ascii_lowercase())
}

impl Settings {
    /// Parses and checks a connector config.
    pub(crate) fn parse(config: &ConfigMap) -> Result<Settings> {
        let parsed = definition().parse(config)?;
        let required = |key: &str| -> Result<String> {
            parsed
                .get_string(key)
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .ok_or_else(|| ConnectError::config(key, "is required"))
        };
        let endpoint = Endpoint {
            host: required(DATABASE_HOSTNAME)?,
            port: parsed.int(DATABASE_PORT)? as u16,
            user: required(DATABASE_USER)?,
            password: parsed
                .get_password(DATABASE_PASSWORD)
                .map(|p| p.value().to_string()),
            dbname: required(DATABASE_DBNAME)?,
            connect_timeout: Duration::from_secs(30),
        };
        let topic_prefix = required(TOPIC_PREFIX)?;
        if !topic_prefix
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
        {
            return Err(ConnectError::config(
                TOPIC_PREFIX,
                format!("'{topic_prefix}' may only contain ASCII letters, digits, '.', '_' and '-' (it begins topic names)"),
            ));
        }
        let slot = required(SLOT_NAME)?;
        if !slot
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
            || slot.len() > 63
        {
            return Err(ConnectError::config(
                SLOT_NAME,
                format!("'{slot}' is not a valid slot name: PostgreSQL allows lower-case letters, digits and '_', at most 63"),
            ));
        }
        let snapshot_mode = match lower(&parsed, SNAPSHOT_MODE)?.as_str() {
            "when_needed" => SnapshotMode::WhenNeeded,
            "always" => SnapshotMode::Always,
            "no_data" => SnapshotMode::NoData,
            "never" => SnapshotMode::Never,
            "initial_only" => SnapshotMode::InitialOnly,
            _ => SnapshotMode::Initial,
        };
        let autocreate = match lower(&parsed, PUBLICATION_AUTOCREATE_MODE)?.as_str() {
            "disabled" => AutocreateMode::Disabled,
            "filtered" => AutocreateMode::Filtered,
            "no_tables" => AutocreateMode::NoTables,
            _ => AutocreateMode::AllTables,
        };
        let decimal = match lower(&parsed, DECIMAL_HANDLING_MODE)?.as_str() {
            "double" => DecimalHandling::Double,
            "string" => DecimalHandling::String,
            _ => DecimalHandling::Precise,
        };
        let time = match lower(&parsed, TIME_PRECISION_MODE)?.as_str() {
            "adaptive_time_microseconds" => TimePrecision::AdaptiveTimeMicroseconds,
            "connect" => TimePrecision::Connect,
            _ => TimePrecision::Adaptive,
        };
        let binary = match lower(&parsed, BINARY_HANDLING_MODE)?.as_str() {
            "base64" => BinaryHandling::Base64,
            "base64-url-safe" => BinaryHandling::Base64UrlSafe,
            "hex" => BinaryHandling::Hex,
            _ => BinaryHandling::Bytes,
        };
        let heartbeat_ms = parsed.int(HEARTBEAT_INTERVAL_MS)?;
        let skipped: Vec<char> = parsed
            .get_list(SKIPPED_OPERATIONS)
            .unwrap_or(&[])
            .iter()
            .filter(|o| o.trim() != "none")
            .filter_map(|o| o.trim().chars().next())
            .collect();
        let transaction_topic =
            format!("{topic_prefix}.{}", parsed.string(TOPIC_TRANSACTION)?).into();
        Ok(Settings {
            heartbeat_topic: format!("{}.{topic_prefix}", parsed.string(TOPIC_HEARTBEAT_PREFIX)?),
            endpoint,
            topic_prefix,
            slot,
            slot_drop_on_stop: parsed.boolean(SLOT_DROP_ON_STOP)?,
            publication: required(PUBLICATION_NAME)?,
            autocreate,
            filters: Filters {
                table_include: regexes(&parsed, TABLE_INCLUDE_LIST)?,
                table_exclude: regexes(&parsed, TABLE_EXCLUDE_LIST)?,
                schema_include: regexes(&parsed, SCHEMA_INCLUDE_LIST)?,
                schema_exclude: regexes(&parsed, SCHEMA_EXCLUDE_LIST)?,
                column_include: regexes(&parsed, COLUMN_INCLUDE_LIST)?,
                column_exclude: regexes(&parsed, COLUMN_EXCLUDE_LIST)?,
            },
            snapshot_mode,
            heartbeat_interval: (heartbeat_ms > 0)
                .then(|| Duration::from_millis(heartbeat_ms as u64)),
            tombstones_on_delete: parsed.boolean(TOMBSTONES_ON_DELETE)?,
            decimal,
            time,
            binary,
            max_batch_size: parsed.int(MAX_BATCH_SIZE)?.max(1) as usize,
            max_queue_size: parsed.int(MAX_QUEUE_SIZE)?.max(1) as usize,
            poll_interval: Duration::from_millis(parsed.long(POLL_INTERVAL_MS)?.max(1) as u64),
            transaction_metadata: parsed.boolean(PROVIDE_TRANSACTION_METADATA)?,
            transaction_topic,
            skipped,
            status_interval: Duration::from_millis(
                parsed.int(STATUS_UPDATE_INTERVAL_MS)?.max(1) as u64
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> ConfigMap {
        ConfigMap::from([
            (DATABASE_HOSTNAME, "127.0.0.1"),
            (DATABASE_USER, "postgres"),
            (DATABASE_DBNAME, "shop"),
            (TOPIC_PREFIX, "dbz"),
        ])
    }

    #[test]
    fn debeziums_defaults_apply() {
        let s = Settings::parse(&base()).unwrap();
        assert_eq!(s.slot, "debezium");
        assert_eq!(s.publication, "dbz_publication");
        assert_eq!(s.autocreate, AutocreateMode::AllTables);
        assert_eq!(s.snapshot_mode, SnapshotMode::Initial);
        assert!(s.tombstones_on_delete);
        assert_eq!(s.heartbeat_interval, None);
        assert_eq!(s.heartbeat_topic, "__debezium-heartbeat.dbz");
        assert_eq!(s.skipped, ['t'], "truncates are skipped by default");
        assert_eq!(s.endpoint.port, 5432);
    }

    #[test]
    fn filters_match_whole_names_case_insensitively() {
        let mut c = base();
        c.insert(TABLE_INCLUDE_LIST.into(), "public.orders,inv\\..*".into());
        c.insert(COLUMN_EXCLUDE_LIST.into(), "public.orders.secret".into());
        let f = Settings::parse(&c).unwrap().filters;
        assert!(f.table("public", "orders"));
        assert!(f.table("public", "ORDERS"));
        assert!(!f.table("public", "orders2"));
        assert!(f.table("inv", "items"));
        assert!(!f.table("public", "items"));
        assert!(!f.column("public", "orders", "secret"));
        assert!(f.column("public", "orders", "id"));
    }

    #[test]
    fn bad_values_name_their_key() {
        for (key, value) in [
            (SLOT_NAME, "Bad-Slot"),
            (TOPIC_PREFIX, "a b"),
            (TABLE_INCLUDE_LIST, "public.(unclosed"),
            (SNAPSHOT_MODE, "sometimes"),
            (PLUGIN_NAME, "decoderbufs"),
        ] {
            let mut c = base();
            c.insert(key.into(), value.into());
            let err = Settings::parse(&c).unwrap_err().to_string();
            assert!(err.contains(key), "{key}: {err}");
        }
        let mut c = base();
        c.remove(TOPIC_PREFIX);
        assert!(Settings::parse(&c)
            .unwrap_err()
            .to_string()
            .contains(TOPIC_PREFIX));
    }
}
