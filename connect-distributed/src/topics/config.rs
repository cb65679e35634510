//! The config topic's records, as Java's `KafkaConfigBackingStore` writes
//! and reads them.
//!
//! The config topic (one partition, compacted) is the cluster's source of
//! truth for what runs: every worker replays it in order (see
//! [`super::config_state`]). Keys are plain strings; values are
//! `JsonConverter` JSON without schemas of Java's `Struct`s:
//!
//! | key | value | Java schema |
//! |---|---|---|
//! | `connector-<c>` | `{"properties":{..}}` | `CONNECTOR_CONFIGURATION_V0` |
//! | `task-<c>-<n>` | `{"properties":{..}}` | `TASK_CONFIGURATION_V0` |
//! | `commit-<c>` | `{"tasks":N}` | `CONNECTOR_TASKS_COMMIT_V0` |
//! | `target-state-<c>` | `{"state":..,"state.v2":..}` | `TARGET_STATE_V1` |
//! | `session-key` | `{"key":"<base64>","algorithm":..,"creation-timestamp":..}` | `SESSION_KEY_V0` |
//! | `restart-connector-<c>` | `{"include-tasks":..,"only-failed":..}` | `RESTART_REQUEST_V0` |
//! | `tasks-fencing-<c>` | `{"task-count":N}` | `TASK_COUNT_RECORD_V0` |
//! | `logger-cluster-<ns>` | `{"level":..}` | `LOGGER_LEVEL_V0` |
//!
//! A null value is a tombstone ([`ConfigRecord::Tombstone`]); so is the
//! JSON value `null`, which Java's converter also turns into a null value.
//!
//! Differences from Java's reader, none on a record Java writes:
//! - a `properties` value that is neither a string nor `null` is an error
//!   (Java keeps the number or boolean in a `Map<String, String>` by an
//!   unchecked cast, which fails later);
//! - task numbers in keys accept ASCII digits only (Java's `parseInt` also
//!   takes other Unicode digits);
//! - integral numbers beyond 64 bits are an error (Java keeps their low
//!   bits);
//! - a target state written by a pre-3.5 worker (`{"state":..}` only)
//!   decodes to the same [`ConfigRecord`] and re-encodes with `state.v2`,
//!   as a Java worker of today would write it.

use base64::alphabet;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use base64::Engine as _;
use indexmap::IndexMap;
use serde_json::{Map, Value};

use super::json::{self, Obj};
use super::{java_split_task_key, key_str, RecordError};
use crate::protocol::TaskId;

/// `target-state-`: a connector's target state.
pub const TARGET_STATE_PREFIX: &str = "target-state-";
/// `connector-`: a connector's configuration.
pub const CONNECTOR_PREFIX: &str = "connector-";
/// `task-`: a task's configuration.
pub const TASK_PREFIX: &str = "task-";
/// `commit-`: the commit of a connector's task configurations.
pub const COMMIT_TASKS_PREFIX: &str = "commit-";
/// `tasks-fencing-`: a connector's task count record (exactly-once source).
pub const TASK_COUNT_RECORD_PREFIX: &str = "tasks-fencing-";
/// `session-key`: the key of the session key record (KIP-507).
pub const SESSION_KEY_KEY: &str = "session-key";
/// `restart-connector-`: a restart request.
pub const RESTART_PREFIX: &str = "restart-connector-";
/// `logger-cluster-`: a cluster-wide logger level (KIP-976).
pub const LOGGER_CLUSTER_PREFIX: &str = "logger-cluster-";

/// A connector's or task's configuration, in the order Java wrote it.
/// Java's schema allows null values (`OPTIONAL_STRING_SCHEMA`).
pub type Properties = IndexMap<String, Option<String>>;

pub use connect_runtime::status::TargetState;

/// The v0 `state` field Java writes next to `state.v2`: `PAUSED` for
/// `STOPPED`, so that workers before 3.5 at least pause the connector.
pub fn v0_name(target: TargetState) -> &'static str {
    match target {
        TargetState::Stopped => TargetState::Paused.name(),
        other => other.name(),
    }
}

/// The key with which the leader signs internal REST requests (KIP-507).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionKey {
    /// The raw key bytes (base64 on the wire).
    pub key: Vec<u8>,
    /// The JCA algorithm name, e.g. `HmacSHA256`.
    pub algorithm: String,
    /// When the leader created the key, in milliseconds since the epoch.
    pub creation_timestamp: i64,
}

/// A config topic key.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ConfigKey {
    /// `connector-<c>`.
    Connector(String),
    /// `task-<c>-<n>`.
    Task(TaskId),
    /// `commit-<c>`.
    TasksCommit(String),
    /// `target-state-<c>`.
    TargetState(String),
    /// `session-key`.
    SessionKey,
    /// `restart-connector-<c>`.
    RestartRequest(String),
    /// `tasks-fencing-<c>`.
    TaskCount(String),
    /// `logger-cluster-<namespace>`.
    LoggerLevel(String),
}

impl ConfigKey {
    /// The key's string form, as Java's `*_KEY` functions build it.
    pub fn encode(&self) -> String {
        match self {
            ConfigKey::Connector(c) => format!("{CONNECTOR_PREFIX}{c}"),
            ConfigKey::Task(id) => format!("{TASK_PREFIX}{}-{}", id.connector, id.task),
            ConfigKey::TasksCommit(c) => format!("{COMMIT_TASKS_PREFIX}{c}"),
            ConfigKey::TargetState(c) => format!("{TARGET_STATE_PREFIX}{c}"),
            ConfigKey::SessionKey => SESSION_KEY_KEY.to_owned(),
            ConfigKey::RestartRequest(c) => format!("{RESTART_PREFIX}{c}"),
            ConfigKey::TaskCount(c) => format!("{TASK_COUNT_RECORD_PREFIX}{c}"),
            ConfigKey::LoggerLevel(ns) => format!("{LOGGER_CLUSTER_PREFIX}{ns}"),
        }
    }

    /// Parses a key with Java's rules, prefixes tried in Java's order.
    /// A task key is split on `-` as Java's `String.split` does, so
    /// `task-a-b-2` is task 2 of connector `a-b`.
    ///
    /// ```
    /// use connect_distributed::topics::config::ConfigKey;
    /// use connect_distributed::protocol::TaskId;
    ///
    /// assert_eq!(
    ///     ConfigKey::parse(b"task-my-sink-2")?,
    ///     ConfigKey::Task(TaskId::new("my-sink", 2)),
    /// );
    /// assert!(ConfigKey::parse(b"task-x").is_err());
    /// # Ok::<(), connect_distributed::topics::RecordError>(())
    /// ```
    pub fn parse(key: &[u8]) -> Result<ConfigKey, RecordError> {
        let key = key_str(key)?;
        let own = |s: &str| s.to_owned();
        if let Some(c) = key.strip_prefix(TARGET_STATE_PREFIX) {
            Ok(ConfigKey::TargetState(own(c)))
        } else if let Some(c) = key.strip_prefix(CONNECTOR_PREFIX) {
            Ok(ConfigKey::Connector(own(c)))
        } else if key.starts_with(TASK_PREFIX) {
            match java_split_task_key(key, 1, 3) {
                Some((connector, task)) => Ok(ConfigKey::Task(TaskId { connector, task })),
                None => Err(RecordError::InvalidKey {
                    key: own(key),
                    problem: "a task key must be `task-<connector>-<task number>`",
                }),
            }
        } else if let Some(c) = key.strip_prefix(COMMIT_TASKS_PREFIX) {
            Ok(ConfigKey::TasksCommit(own(c)))
        } else if let Some(c) = key.strip_prefix(RESTART_PREFIX) {
            Ok(ConfigKey::RestartRequest(own(c)))
        } else if let Some(c) = key.strip_prefix(TASK_COUNT_RECORD_PREFIX) {
            Ok(ConfigKey::TaskCount(own(c)))
        } else if key == SESSION_KEY_KEY {
            Ok(ConfigKey::SessionKey)
        } else if let Some(ns) = key.strip_prefix(LOGGER_CLUSTER_PREFIX) {
            Ok(ConfigKey::LoggerLevel(own(ns)))
        } else {
            Err(RecordError::UnknownKey {
                key: own(key),
                topic: "config",
            })
        }
    }
}

/// One config topic record, typed.
///
/// ```
/// use connect_distributed::topics::config::{ConfigKey, ConfigRecord, Properties};
///
/// let properties = Properties::from([("tasks.max".to_string(), Some("2".to_string()))]);
/// let record = ConfigRecord::Connector { connector: "jdbc".into(), properties };
/// let (key, value) = record.encode();
/// assert_eq!(key, "connector-jdbc");
/// assert_eq!(value.as_deref(), Some(&br#"{"properties":{"tasks.max":"2"}}"#[..]));
/// assert_eq!(ConfigRecord::decode(key.as_bytes(), value.as_deref())?, record);
///
/// // Deleting the connector: a tombstone.
/// let deleted = ConfigRecord::decode(b"connector-jdbc", None)?;
/// assert_eq!(deleted, ConfigRecord::Tombstone(ConfigKey::Connector("jdbc".into())));
/// # Ok::<(), connect_distributed::topics::RecordError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConfigRecord {
    /// `connector-<c>`: the connector's configuration.
    Connector {
        /// The connector's name.
        connector: String,
        /// Its configuration.
        properties: Properties,
    },
    /// `task-<c>-<n>`: one task's configuration, applied only when its
    /// connector's commit arrives.
    Task {
        /// The task.
        id: TaskId,
        /// Its configuration.
        properties: Properties,
    },
    /// `commit-<c>`: the connector's task configurations written before it
    /// are complete, and there are `tasks` of them.
    TasksCommit {
        /// The connector's name.
        connector: String,
        /// The number of tasks.
        tasks: i32,
    },
    /// `target-state-<c>`.
    TargetState {
        /// The connector's name.
        connector: String,
        /// Its target state.
        state: TargetState,
    },
    /// `session-key`.
    SessionKey(SessionKey),
    /// `restart-connector-<c>`: a restart request (KIP-745).
    RestartRequest {
        /// The connector's name.
        connector: String,
        /// Restart the tasks too.
        include_tasks: bool,
        /// Restart only the failed instances.
        only_failed: bool,
    },
    /// `tasks-fencing-<c>`: the task count whose zombies were fenced
    /// (exactly-once source, KIP-618).
    TaskCount {
        /// The connector's name.
        connector: String,
        /// The number of tasks.
        task_count: i32,
    },
    /// `logger-cluster-<namespace>`: a cluster-wide log level (KIP-976).
    LoggerLevel {
        /// The logger namespace.
        namespace: String,
        /// The level, e.g. `DEBUG`.
        level: String,
    },
    /// Any key with a null value. Deleting a connector writes tombstones
    /// for `connector-<c>` and `target-state-<c>`; Java ignores tombstones
    /// of most other keys (see [`super::config_state::ConfigState`]).
    Tombstone(ConfigKey),
}

/// Java's `Base64.getDecoder()`: the standard alphabet, padding optional.
const JAVA_BASE64: GeneralPurpose = GeneralPurpose::new(
    &alphabet::STANDARD,
    GeneralPurposeConfig::new()
        .with_decode_padding_mode(DecodePaddingMode::Indifferent)
        .with_decode_allow_trailing_bits(true),
);

fn properties_json(properties: &Properties) -> String {
    let mut obj = Obj::new();
    for (k, v) in properties {
        obj = obj.opt_str(k, v.as_deref());
    }
    obj.finish()
}

fn properties_value(properties: &Properties) -> Vec<u8> {
    Obj::new()
        .raw("properties", &properties_json(properties))
        .finish()
        .into_bytes()
}

fn decode_properties(key: &str, map: &Map<String, Value>) -> Result<Properties, RecordError> {
    let props = json::req_obj(key, map, "properties")?;
    let mut out = Properties::with_capacity(props.len());
    for (k, v) in props {
        let v = match v {
            Value::String(s) => Some(s.clone()),
            Value::Null => None,
            _ => {
                return Err(RecordError::InvalidField {
                    key: key.to_owned(),
                    field: "properties",
                    problem: format!("has a value for `{k}` that is neither a string nor null"),
                })
            }
        };
        out.insert(k.clone(), v);
    }
    Ok(out)
}

impl ConfigRecord {
    /// The record's key.
    pub fn key(&self) -> ConfigKey {
        match self {
            ConfigRecord::Connector { connector, .. } => ConfigKey::Connector(connector.clone()),
            ConfigRecord::Task { id, .. } => ConfigKey::Task(id.clone()),
            ConfigRecord::TasksCommit { connector, .. } => {
                ConfigKey::TasksCommit(connector.clone())
            }
            ConfigRecord::TargetState { connector, .. } => {
                ConfigKey::TargetState(connector.clone())
            }
            ConfigRecord::SessionKey(_) => ConfigKey::SessionKey,
            ConfigRecord::RestartRequest { connector, .. } => {
                ConfigKey::RestartRequest(connector.clone())
            }
            ConfigRecord::TaskCount { connector, .. } => ConfigKey::TaskCount(connector.clone()),
            ConfigRecord::LoggerLevel { namespace, .. } => {
                ConfigKey::LoggerLevel(namespace.clone())
            }
            ConfigRecord::Tombstone(key) => key.clone(),
        }
    }

    /// The record's value bytes as Java writes them (`None` for a
    /// tombstone).
    pub fn encode_value(&self) -> Option<Vec<u8>> {
        let value = match self {
            ConfigRecord::Connector { properties, .. } | ConfigRecord::Task { properties, .. } => {
                return Some(properties_value(properties))
            }
            ConfigRecord::TasksCommit { tasks, .. } => Obj::new().int("tasks", i64::from(*tasks)),
            ConfigRecord::TargetState { state, .. } => Obj::new()
                .str("state", v0_name(*state))
                .str("state.v2", state.name()),
            ConfigRecord::SessionKey(k) => Obj::new()
                .str(
                    "key",
                    &base64::engine::general_purpose::STANDARD.encode(&k.key),
                )
                .str("algorithm", &k.algorithm)
                .int("creation-timestamp", k.creation_timestamp),
            ConfigRecord::RestartRequest {
                include_tasks,
                only_failed,
                ..
            } => Obj::new()
                .bool("include-tasks", *include_tasks)
                .bool("only-failed", *only_failed),
            ConfigRecord::TaskCount { task_count, .. } => {
                Obj::new().int("task-count", i64::from(*task_count))
            }
            ConfigRecord::LoggerLevel { level, .. } => Obj::new().str("level", level),
            ConfigRecord::Tombstone(_) => return None,
        };
        Some(value.finish().into_bytes())
    }

    /// The record's key and value bytes as Java writes them.
    pub fn encode(&self) -> (String, Option<Vec<u8>>) {
        (self.key().encode(), self.encode_value())
    }

    /// Decodes a record read from the config topic. Never panics; a
    /// record Java would skip is a [`RecordError`].
    pub fn decode(key: &[u8], value: Option<&[u8]>) -> Result<ConfigRecord, RecordError> {
        let parsed = ConfigKey::parse(key)?;
        let key = key_str(key)?;
        let map = match value {
            None => None,
            Some(bytes) => json::parse(key, bytes)?,
        };
        let Some(map) = map else {
            return Ok(ConfigRecord::Tombstone(parsed));
        };
        let m = &map;
        Ok(match parsed {
            ConfigKey::Connector(connector) => ConfigRecord::Connector {
                connector,
                properties: decode_properties(key, m)?,
            },
            ConfigKey::Task(id) => ConfigRecord::Task {
                id,
                properties: decode_properties(key, m)?,
            },
            ConfigKey::TasksCommit(connector) => ConfigRecord::TasksCommit {
                connector,
                tasks: json::req_int(key, m, "tasks")?,
            },
            ConfigKey::TargetState(connector) => ConfigRecord::TargetState {
                connector,
                state: decode_target_state(key, m)?,
            },
            ConfigKey::SessionKey => {
                let encoded = json::req_str(key, m, "key")?;
                let bytes = JAVA_BASE64.decode(encoded.as_bytes()).map_err(|e| {
                    RecordError::InvalidField {
                        key: key.to_owned(),
                        field: "key",
                        problem: format!("is not base64: {e}"),
                    }
                })?;
                ConfigRecord::SessionKey(SessionKey {
                    key: bytes,
                    algorithm: json::req_str(key, m, "algorithm")?,
                    creation_timestamp: json::req_long(key, m, "creation-timestamp")?,
                })
            }
            ConfigKey::RestartRequest(connector) => ConfigRecord::RestartRequest {
                connector,
                include_tasks: json::bool_or(m, "include-tasks", false),
                only_failed: json::bool_or(m, "only-failed", false),
            },
            ConfigKey::TaskCount(connector) => ConfigRecord::TaskCount {
                connector,
                task_count: json::req_int(key, m, "task-count")?,
            },
            ConfigKey::LoggerLevel(namespace) => ConfigRecord::LoggerLevel {
                namespace,
                level: json::req_str(key, m, "level")?,
            },
        })
    }
}

/// Java's rule: `state.v2` when it is a string, otherwise `state`.
fn decode_target_state(key: &str, m: &Map<String, Value>) -> Result<TargetState, RecordError> {
    let (field, name) = match m.get("state.v2") {
        Some(Value::String(s)) => ("state.v2", s.clone()),
        _ => ("state", json::req_str(key, m, "state")?),
    };
    TargetState::from_name(&name).ok_or_else(|| RecordError::InvalidField {
        key: key.to_owned(),
        field,
        problem: format!("`{name}` is not STARTED, PAUSED or STOPPED"),
    })
}
