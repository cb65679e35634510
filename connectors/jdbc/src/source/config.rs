//! The source connector's keys (Confluent's) and the settings a task runs
//! with.

use std::time::Duration;

use connect_api::config::validators::{Range, ValidString};
use connect_api::config::{ConfigKey, Importance, ParsedConfig};
use connect_api::{ConfigDef, ConfigMap, ConfigType, ConnectError, Result};

use crate::config::{connection_def, list, Connection};

/// `mode`: `bulk`, `incrementing`, `timestamp` or `timestamp+incrementing`.
pub const MODE: &str = "mode";
/// `incrementing.column.name`.
pub const INCREMENTING_COLUMN_NAME: &str = "incrementing.column.name";
/// `timestamp.column.name`: one or more columns, COALESCE'd in order.
pub const TIMESTAMP_COLUMN_NAME: &str = "timestamp.column.name";
/// `table.whitelist` (also `table.include.list`).
pub const TABLE_WHITELIST: &str = "table.whitelist";
/// `table.blacklist` (also `table.exclude.list`).
pub const TABLE_BLACKLIST: &str = "table.blacklist";
/// `table.include.list`: the newer name of `table.whitelist`.
pub const TABLE_INCLUDE_LIST: &str = "table.include.list";
/// `table.exclude.list`: the newer name of `table.blacklist`.
pub const TABLE_EXCLUDE_LIST: &str = "table.exclude.list";
/// `query`: read this query instead of tables.
pub const QUERY: &str = "query";
/// `query.suffix`: appended to every statement.
pub const QUERY_SUFFIX: &str = "query.suffix";
/// `topic.prefix`: the topic is this plus the table name (the prefix
/// alone in query mode).
pub const TOPIC_PREFIX: &str = "topic.prefix";
/// `poll.interval.ms`: how often each table is read.
pub const POLL_INTERVAL_MS: &str = "poll.interval.ms";
/// `batch.max.rows`: rows per poll of one table.
pub const BATCH_MAX_ROWS: &str = "batch.max.rows";
/// `timestamp.delay.interval.ms`: how old a row's timestamp must be before
/// it is read.
pub const TIMESTAMP_DELAY_INTERVAL_MS: &str = "timestamp.delay.interval.ms";
/// `timestamp.initial`: where timestamp modes start with no offset
/// (epoch ms; -1 for now).
pub const TIMESTAMP_INITIAL: &str = "timestamp.initial";
/// `numeric.mapping`: `none`, `precision_only`, `best_fit`, `best_fit_eager_double`.
pub const NUMERIC_MAPPING: &str = "numeric.mapping";
/// `validate.non.null`: refuse nullable offset columns.
pub const VALIDATE_NON_NULL: &str = "validate.non.null";
/// `table.poll.interval.ms`: how often the connector looks for new and
/// dropped tables.
pub const TABLE_POLL_INTERVAL_MS: &str = "table.poll.interval.ms";
/// The tables a task reads (set by the connector, not by users).
pub const TABLES: &str = "tables";

/// How rows are found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Every row, every poll.
    Bulk,
    /// Rows with a larger incrementing column.
    Incrementing,
    /// Rows with a newer timestamp.
    Timestamp,
    /// Rows with a newer (timestamp, incrementing) pair.
    TimestampIncrementing,
}

impl Mode {
    pub(crate) fn uses_incrementing(self) -> bool {
        matches!(self, Mode::Incrementing | Mode::TimestampIncrementing)
    }
    pub(crate) fn uses_timestamp(self) -> bool {
        matches!(self, Mode::Timestamp | Mode::TimestampIncrementing)
    }
}

/// `numeric.mapping`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NumericMapping {
    /// Connect's Decimal always.
    None,
    /// Integers for scale-0 columns of small precision.
    PrecisionOnly,
    /// Also FLOAT64 for columns with a scale and precision under 19.
    BestFit,
    /// FLOAT64 for every column with a scale.
    BestFitEagerDouble,
}

/// The source connector's keys: the connection's and Confluent's source keys.
pub(crate) fn source_def() -> ConfigDef {
    let modes = [
        "bulk",
        "incrementing",
        "timestamp",
        "timestamp+incrementing",
    ];
    connection_def()
        .define(
            ConfigKey::new(MODE, ConfigType::String)
                .validator(ValidString::of(modes))
                .importance(Importance::High)
                .doc("The mode for updating a table each time it is polled: bulk, incrementing, timestamp or timestamp+incrementing."),
        )
        .define(
            ConfigKey::new(INCREMENTING_COLUMN_NAME, ConfigType::String)
                .default("")
                .importance(Importance::Medium)
                .doc("The name of the strictly incrementing column used to detect new rows."),
        )
        .define(
            ConfigKey::new(TIMESTAMP_COLUMN_NAME, ConfigType::List)
                .default("")
                .importance(Importance::Medium)
                .doc("Comma-separated timestamp columns used to detect new or modified rows; the first non-null one counts (COALESCE)."),
        )
        .define(ConfigKey::new(TABLE_WHITELIST, ConfigType::List).default("").importance(Importance::Medium).doc("Tables to read; empty for all."))
        .define(ConfigKey::new(TABLE_BLACKLIST, ConfigType::List).default("").importance(Importance::Medium).doc("Tables not to read."))
        .define(ConfigKey::new(TABLE_INCLUDE_LIST, ConfigType::List).default("").importance(Importance::Medium).doc("Alias of table.whitelist."))
        .define(ConfigKey::new(TABLE_EXCLUDE_LIST, ConfigType::List).default("").importance(Importance::Medium).doc("Alias of table.blacklist."))
        .define(
            ConfigKey::new(QUERY, ConfigType::String)
                .default("")
                .importance(Importance::Medium)
                .doc("Read the rows of this query instead of tables (one task)."),
        )
        .define(ConfigKey::new(QUERY_SUFFIX, ConfigType::String).default("").importance(Importance::Low).doc("Suffix to append at the end of the generated query."))
        .define(
            ConfigKey::new(TOPIC_PREFIX, ConfigType::String)
                .importance(Importance::High)
                .doc("Prefix to prepend to table names to generate the topic names; the topic itself in query mode."),
        )
        .define(
            ConfigKey::new(POLL_INTERVAL_MS, ConfigType::Int)
                .default(5000)
                .validator(Range::at_least(1))
                .importance(Importance::High)
                .doc("Frequency in ms to poll for new data in each table."),
        )
        .define(
            ConfigKey::new(BATCH_MAX_ROWS, ConfigType::Int)
                .default(100)
                .validator(Range::at_least(1))
                .importance(Importance::Low)
                .doc("Maximum number of rows to include in a single batch when polling for new data."),
        )
        .define(
            ConfigKey::new(TIMESTAMP_DELAY_INTERVAL_MS, ConfigType::Long)
                .default(0i64)
                .validator(Range::at_least(0))
                .importance(Importance::High)
                .doc("How long to wait after a row with a certain timestamp appears before including it."),
        )
        .define(
            ConfigKey::new(TIMESTAMP_INITIAL, ConfigType::Long)
                .optional()
                .importance(Importance::Low)
                .doc("The epoch ms timestamp timestamp modes start from without an offset; -1 for the current time."),
        )
        .define(
            ConfigKey::new(NUMERIC_MAPPING, ConfigType::String)
                .default("none")
                .validator(ValidString::of(["none", "precision_only", "best_fit", "best_fit_eager_double"]))
                .importance(Importance::Low)
                .doc("Map NUMERIC values by precision and optionally scale to integral or decimal types."),
        )
        .define(
            ConfigKey::new(VALIDATE_NON_NULL, ConfigType::Boolean)
                .default(true)
                .importance(Importance::Low)
                .doc("Refuse tables whose incrementing or timestamp columns may be NULL."),
        )
        .define(
            ConfigKey::new(TABLE_POLL_INTERVAL_MS, ConfigType::Long)
                .default(60_000i64)
                .validator(Range::at_least(1))
                .importance(Importance::Low)
                .doc("Frequency in ms to poll for new or removed tables."),
        )
        .define(ConfigKey::new(TABLES, ConfigType::List).default("").importance(Importance::Low).doc("The tables a task reads (set by the connector)."))
}

/// What a source task (and the connector) run with.
#[derive(Debug, Clone)]
pub(crate) struct SourceSettings {
    pub(crate) conn: Connection,
    pub(crate) mode: Mode,
    pub(crate) incrementing_column: Option<String>,
    pub(crate) timestamp_columns: Vec<String>,
    pub(crate) include: Vec<String>,
    pub(crate) exclude: Vec<String>,
    pub(crate) query: Option<String>,
    pub(crate) query_suffix: Option<String>,
    pub(crate) topic_prefix: String,
    pub(crate) poll_interval: Duration,
    pub(crate) batch_max_rows: usize,
    pub(crate) timestamp_delay_ms: i64,
    pub(crate) timestamp_initial: Option<i64>,
    pub(crate) numeric_mapping: NumericMapping,
    pub(crate) validate_non_null: bool,
    pub(crate) table_poll_interval: Duration,
    pub(crate) tables: Vec<String>,
}

impl SourceSettings {
    pub(crate) fn parse(config: &ConfigMap) -> Result<SourceSettings> {
        let parsed = source_def().parse(config)?;
        Self::from_parsed(&parsed)
    }

    fn from_parsed(p: &ParsedConfig) -> Result<SourceSettings> {
        let mode = match p.string(MODE)? {
            "bulk" => Mode::Bulk,
            "incrementing" => Mode::Incrementing,
            "timestamp" => Mode::Timestamp,
            _ => Mode::TimestampIncrementing,
        };
        let nonempty = |k: &str| {
            p.get_string(k)
                .filter(|s| !s.trim().is_empty())
                .map(|s| s.trim().to_string())
        };
        let incrementing_column = nonempty(INCREMENTING_COLUMN_NAME);
        let timestamp_columns = list(p, TIMESTAMP_COLUMN_NAME);
        if mode.uses_incrementing() && incrementing_column.is_none() {
            return Err(ConnectError::config(
                INCREMENTING_COLUMN_NAME,
                format!(
                    "mode={} needs the incrementing column's name",
                    p.string(MODE)?
                ),
            ));
        }
        if mode.uses_timestamp() && timestamp_columns.is_empty() {
            return Err(ConnectError::config(
                TIMESTAMP_COLUMN_NAME,
                format!(
                    "mode={} needs at least one timestamp column",
                    p.string(MODE)?
                ),
            ));
        }
        let mut include = list(p, TABLE_WHITELIST);
        include.extend(list(p, TABLE_INCLUDE_LIST));
        let mut exclude = list(p, TABLE_BLACKLIST);
        exclude.extend(list(p, TABLE_EXCLUDE_LIST));
        if !include.is_empty() && !exclude.is_empty() {
            return Err(ConnectError::config(
                TABLE_BLACKLIST,
                "set either table.whitelist (table.include.list) or table.blacklist (table.exclude.list), not both",
            ));
        }
        let query = nonempty(QUERY);
        if query.is_some() && !include.is_empty() {
            return Err(ConnectError::config(
                QUERY,
                "set either query or table.whitelist, not both",
            ));
        }
        let numeric_mapping = match p.string(NUMERIC_MAPPING)? {
            "precision_only" => NumericMapping::PrecisionOnly,
            "best_fit" => NumericMapping::BestFit,
            "best_fit_eager_double" => NumericMapping::BestFitEagerDouble,
            _ => NumericMapping::None,
        };
        Ok(SourceSettings {
            conn: Connection::from_parsed(p)?,
            mode,
            incrementing_column,
            timestamp_columns,
            include,
            exclude,
            query,
            query_suffix: nonempty(QUERY_SUFFIX),
            topic_prefix: p.string(TOPIC_PREFIX)?.to_string(),
            poll_interval: Duration::from_millis(p.int(POLL_INTERVAL_MS)?.max(1) as u64),
            batch_max_rows: p.int(BATCH_MAX_ROWS)?.max(1) as usize,
            timestamp_delay_ms: p.long(TIMESTAMP_DELAY_INTERVAL_MS)?.max(0),
            timestamp_initial: p.get_long(TIMESTAMP_INITIAL),
            numeric_mapping,
            validate_non_null: p.boolean(VALIDATE_NON_NULL)?,
            table_poll_interval: Duration::from_millis(
                p.long(TABLE_POLL_INTERVAL_MS)?.max(1) as u64
            ),
            tables: list(p, TABLES),
        })
    }

    /// Whether `table` (qualified) is one the connector reads: matched
    /// against the include or exclude lists by qualified or bare name.
    pub(crate) fn selects(&self, table: &str) -> bool {
        let bare = table.rsplit('.').next().unwrap_or(table);
        let named = |list: &[String]| list.iter().any(|t| t == table || t == bare);
        if !self.include.is_empty() {
            named(&self.include)
        } else {
            !named(&self.exclude)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(extra: &[(&str, &str)]) -> ConfigMap {
        let mut m = ConfigMap::from([
            ("connection.url", "jdbc:sqlite::memory:"),
            ("topic.prefix", "db-"),
            ("mode", "bulk"),
        ]);
        for (k, v) in extra {
            m.insert(k.to_string(), v.to_string());
        }
        m
    }

    #[test]
    fn incremental_modes_need_their_columns_and_say_which_key() {
        let err = SourceSettings::parse(&config(&[("mode", "incrementing")])).unwrap_err();
        assert!(err.to_string().contains(INCREMENTING_COLUMN_NAME), "{err}");
        let err = SourceSettings::parse(&config(&[("mode", "timestamp")])).unwrap_err();
        assert!(err.to_string().contains(TIMESTAMP_COLUMN_NAME), "{err}");
        let err = SourceSettings::parse(&config(&[("mode", "sometimes")])).unwrap_err();
        assert!(err.to_string().contains(MODE), "{err}");
    }

    #[test]
    fn include_and_exclude_lists_match_qualified_or_bare_names() {
        let s = SourceSettings::parse(&config(&[("table.include.list", "orders, shop.users")]))
            .unwrap();
        assert!(s.selects("public.orders"));
        assert!(s.selects("shop.users"));
        assert!(!s.selects("other.users"));
        let s = SourceSettings::parse(&config(&[("table.blacklist", "audit")])).unwrap();
        assert!(!s.selects("public.audit"));
        assert!(s.selects("public.orders"));
        assert!(SourceSettings::parse(&config(&[
            ("table.whitelist", "a"),
            ("table.blacklist", "b")
        ]))
        .is_err());
    }
}
