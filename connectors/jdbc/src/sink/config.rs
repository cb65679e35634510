//! The sink connector's keys (Confluent's) and the settings a task runs with.

use connect_api::config::validators::{Range, ValidString};
use connect_api::config::{ConfigKey, Importance};
use connect_api::{ConfigDef, ConfigMap, ConfigType, ConnectError, Result};

use crate::config::{connection_def, list, Connection};

/// `insert.mode`: `insert`, `upsert` or `update`.
pub const INSERT_MODE: &str = "insert.mode";
/// `pk.mode`: `none`, `kafka`, `record_key` or `record_value`.
pub const PK_MODE: &str = "pk.mode";
/// `pk.fields`: the primary key's columns (meaning depends on `pk.mode`).
pub const PK_FIELDS: &str = "pk.fields";
/// `fields.whitelist`: the value fields written (all when empty).
pub const FIELDS_WHITELIST: &str = "fields.whitelist";
/// `delete.enabled`: a tombstone deletes the row with its key.
pub const DELETE_ENABLED: &str = "delete.enabled";
/// `auto.create`: create a missing table from the record's schema.
pub const AUTO_CREATE: &str = "auto.create";
/// `auto.evolve`: add columns the record has and the table lacks.
pub const AUTO_EVOLVE: &str = "auto.evolve";
/// `batch.size`: rows per statement batch within a `put`.
pub const BATCH_SIZE: &str = "batch.size";
/// `table.name.format`: the table of a record, `${topic}` replaced.
pub const TABLE_NAME_FORMAT: &str = "table.name.format";

/// How rows are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InsertMode {
    /// `INSERT`: a row with an existing key is an error.
    Insert,
    /// Insert or update by primary key (idempotent under redelivery).
    Upsert,
    /// `UPDATE ... WHERE key`.
    Update,
}

/// Where the primary key comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PkMode {
    /// No key.
    None,
    /// `__connect_topic`, `__connect_partition`, `__connect_offset`.
    Kafka,
    /// The record's key (a primitive: one column; a struct: its fields).
    RecordKey,
    /// Fields of the record's value.
    RecordValue,
}

pub(crate) fn sink_def() -> ConfigDef {
    connection_def()
        .define(
            ConfigKey::new(INSERT_MODE, ConfigType::String)
                .default("insert")
                .validator(ValidString::case_insensitive(["insert", "upsert", "update"]))
                .importance(Importance::High)
                .doc("The insertion mode to use: insert, upsert or update."),
        )
        .define(
            ConfigKey::new(PK_MODE, ConfigType::String)
                .default("none")
                .validator(ValidString::case_insensitive(["none", "kafka", "record_key", "record_value"]))
                .importance(Importance::High)
                .doc("The primary key mode: none, kafka, record_key or record_value."),
        )
        .define(
            ConfigKey::new(PK_FIELDS, ConfigType::List)
                .default("")
                .importance(Importance::Medium)
                .doc("List of comma-separated primary key field names; its meaning depends on pk.mode."),
        )
        .define(
            ConfigKey::new(FIELDS_WHITELIST, ConfigType::List)
                .default("")
                .importance(Importance::Medium)
                .doc("List of comma-separated record value field names; empty for all."),
        )
        .define(
            ConfigKey::new(DELETE_ENABLED, ConfigType::Boolean)
                .default(false)
                .importance(Importance::Medium)
                .doc("Whether to treat null record values as deletes. Requires pk.mode=record_key."),
        )
        .define(
            ConfigKey::new(AUTO_CREATE, ConfigType::Boolean)
                .default(false)
                .importance(Importance::Medium)
                .doc("Whether to automatically create the destination table based on the record schema."),
        )
        .define(
            ConfigKey::new(AUTO_EVOLVE, ConfigType::Boolean)
                .default(false)
                .importance(Importance::Medium)
                .doc("Whether to automatically add columns to the table when the record schema has new optional fields."),
        )
        .define(
            ConfigKey::new(BATCH_SIZE, ConfigType::Int)
                .default(3000)
                .validator(Range::at_least(1))
                .importance(Importance::Medium)
                .doc("The most rows one INSERT statement writes (consecutive inserts or upserts of one table and shape share a multi-row statement); each put is one transaction whatever its size."),
        )
        .define(
            ConfigKey::new(TABLE_NAME_FORMAT, ConfigType::String)
                .default("${topic}")
                .importance(Importance::Medium)
                .doc("A format string for the destination table name, which may contain '${topic}'."),
        )
}

/// What a sink task runs with.
#[derive(Debug, Clone)]
pub(crate) struct SinkSettings {
    pub(crate) conn: Connection,
    pub(crate) insert_mode: InsertMode,
    pub(crate) pk_mode: PkMode,
    pub(crate) pk_fields: Vec<String>,
    pub(crate) fields_whitelist: Vec<String>,
    pub(crate) delete_enabled: bool,
    pub(crate) auto_create: bool,
    pub(crate) auto_evolve: bool,
    pub(crate) table_name_format: String,
    pub(crate) batch_size: usize,
}

impl SinkSettings {
    pub(crate) fn parse(config: &ConfigMap) -> Result<SinkSettings> {
        let p = sink_def().parse(config)?;
        let insert_mode = match p.string(INSERT_MODE)?.to_ascii_lowercase().as_str() {
            "upsert" => InsertMode::Upsert,
            "update" => InsertMode::Update,
            _ => InsertMode::Insert,
        };
        let pk_mode = match p.string(PK_MODE)?.to_ascii_lowercase().as_str() {
            "kafka" => PkMode::Kafka,
            "record_key" => PkMode::RecordKey,
            "record_value" => PkMode::RecordValue,
            _ => PkMode::None,
        };
        let delete_enabled = p.boolean(DELETE_ENABLED)?;
        if delete_enabled && pk_mode != PkMode::RecordKey {
            return Err(ConnectError::config(
                DELETE_ENABLED,
                "delete.enabled=true needs pk.mode=record_key: a tombstone has only its key to name the row",
            ));
        }
        if insert_mode != InsertMode::Insert && pk_mode == PkMode::None {
            return Err(ConnectError::config(
                PK_MODE,
                format!(
                    "insert.mode={} needs a primary key: set pk.mode",
                    p.string(INSERT_MODE)?
                ),
            ));
        }
        let mut pk_fields = list(&p, PK_FIELDS);
        if pk_mode == PkMode::Kafka {
            if pk_fields.is_empty() {
                pk_fields = vec![
                    "__connect_topic".into(),
                    "__connect_partition".into(),
                    "__connect_offset".into(),
                ];
            } else if pk_fields.len() != 3 {
                return Err(ConnectError::config(
                    PK_FIELDS,
                    "with pk.mode=kafka, pk.fields names three columns (topic, partition, offset) or none",
                ));
            }
        }
        Ok(SinkSettings {
            conn: Connection::from_parsed(&p)?,
            insert_mode,
            pk_mode,
            pk_fields,
            fields_whitelist: list(&p, FIELDS_WHITELIST),
            delete_enabled,
            auto_create: p.boolean(AUTO_CREATE)?,
            auto_evolve: p.boolean(AUTO_EVOLVE)?,
            table_name_format: p.string(TABLE_NAME_FORMAT)?.to_string(),
            batch_size: p.int(BATCH_SIZE)?.max(1) as usize,
        })
    }

    /// The table a record of `topic` goes to.
    pub(crate) fn table_for(&self, topic: &str) -> String {
        self.table_name_format.replace("${topic}", topic)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(extra: &[(&str, &str)]) -> ConfigMap {
        let mut m = ConfigMap::from([("connection.url", "jdbc:sqlite::memory:")]);
        for (k, v) in extra {
            m.insert(k.to_string(), v.to_string());
        }
        m
    }

    #[test]
    fn deletes_need_the_record_key_as_primary_key() {
        let err = SinkSettings::parse(&config(&[
            ("delete.enabled", "true"),
            ("pk.mode", "record_value"),
        ]))
        .unwrap_err();
        assert!(err.to_string().contains(DELETE_ENABLED), "{err}");
        assert!(SinkSettings::parse(&config(&[
            ("delete.enabled", "true"),
            ("pk.mode", "record_key")
        ]))
        .is_ok());
    }

    #[test]
    fn upserts_need_a_key_and_kafka_keys_have_default_names() {
        let err = SinkSettings::parse(&config(&[("insert.mode", "upsert")])).unwrap_err();
        assert!(err.to_string().contains(PK_MODE), "{err}");
        let s = SinkSettings::parse(&config(&[("pk.mode", "kafka")])).unwrap();
        assert_eq!(
            s.pk_fields,
            ["__connect_topic", "__connect_partition", "__connect_offset"]
        );
        assert_eq!(s.table_for("orders"), "orders");
        let s = SinkSettings::parse(&config(&[("table.name.format", "kafka_${topic}")])).unwrap();
        assert_eq!(s.table_for("orders"), "kafka_orders");
    }
}
