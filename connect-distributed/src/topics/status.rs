//! The status topic's records, as Java's `KafkaStatusBackingStore` writes
//! and reads them, and its rules for which status wins.
//!
//! Every worker publishes the state of the connectors and tasks it runs to
//! the status topic (compacted, 5 partitions by default) and reads
//! everyone's, which is what the REST API's `/status` shows. Keys:
//!
//! - `status-connector-<c>` and `status-task-<c>-<n>`: value
//!   `{"state":..,"trace":..,"worker_id":..,"generation":..,"version":..}`
//!   (Java's `STATUS_SCHEMA_V0`; `trace` and `version`, the plugin's
//!   version added in Kafka 4.x, are `null` when absent);
//! - `status-topic-<topic>:connector-<c>` (KIP-558, the topics a connector
//!   uses): value `{"topic":{"name":..,"connector":..,"task":..,
//!   "discoverTimestamp":..}}`.
//!
//! A null value deletes. Java never writes the state `DESTROYED`: it
//! writes a tombstone instead ([`StatusRecord::connector`] and
//! [`StatusRecord::task`] do the same).
//!
//! Two rules decide which status counts:
//! - [`can_write_safely`]: a worker's "safe" write (`putSafe`, used for
//!   `UNASSIGNED` when it gives work up) goes out only when nothing is
//!   cached for the key, the cached status is the same worker's, or the
//!   cached generation is not higher than the new one;
//! - [`should_apply_read_task_status`]: when reading, a task's
//!   `UNASSIGNED` does not replace a `RUNNING` of the same or a later
//!   generation.
//!
//! Differences from Java's reader, none on a record Java writes: a missing
//! `worker_id`, or a topic status without `name` or `connector`, is an
//! error (Java reads a null that later fails); a topic status key must
//! have `:connector-` after the topic (Java skips any 11 characters after
//! the first `:`); task numbers accept ASCII digits only.

use serde_json::{Map, Value};

use super::json::{self, Obj};
use super::{java_split_task_key, key_str, RecordError};
use crate::protocol::TaskId;

/// `status-connector-`.
pub const CONNECTOR_STATUS_PREFIX: &str = "status-connector-";
/// `status-task-`.
pub const TASK_STATUS_PREFIX: &str = "status-task-";
/// `status-topic-`.
pub const TOPIC_STATUS_PREFIX: &str = "status-topic-";
/// `:connector-`, between the topic and the connector of a topic status key.
pub const TOPIC_STATUS_SEPARATOR: &str = ":connector-";

pub use connect_runtime::status::State;

/// A connector's or task's status.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Status {
    /// The state.
    pub state: State,
    /// The failure's stack trace, if any.
    pub trace: Option<String>,
    /// The worker that wrote it (its REST `host:port`).
    pub worker_id: String,
    /// The group generation it was written in.
    pub generation: i32,
    /// The connector plugin's version, if known.
    pub version: Option<String>,
}

/// A topic a connector has used (KIP-558).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TopicStatus {
    /// The topic.
    pub topic: String,
    /// The connector.
    pub connector: String,
    /// The task that used it.
    pub task: i32,
    /// When it was first seen, in milliseconds since the epoch.
    pub discover_timestamp: i64,
}

/// A status topic key.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum StatusKey {
    /// `status-connector-<c>`.
    Connector(String),
    /// `status-task-<c>-<n>`.
    Task(TaskId),
    /// `status-topic-<topic>:connector-<c>`.
    Topic {
        /// The topic.
        topic: String,
        /// The connector.
        connector: String,
    },
}

impl StatusKey {
    /// The key's string form, as Java builds it.
    pub fn encode(&self) -> String {
        match self {
            StatusKey::Connector(c) => format!("{CONNECTOR_STATUS_PREFIX}{c}"),
            StatusKey::Task(id) => format!("{TASK_STATUS_PREFIX}{}-{}", id.connector, id.task),
            StatusKey::Topic { topic, connector } => {
                format!("{TOPIC_STATUS_PREFIX}{topic}{TOPIC_STATUS_SEPARATOR}{connector}")
            }
        }
    }

    /// Parses a key with Java's rules: the connector name must not be
    /// empty, a task key is split on `-` like Java's `String.split`, a
    /// topic key is split at its first `:` and needs a topic and a
    /// connector.
    ///
    /// ```
    /// use connect_distributed::topics::status::StatusKey;
    ///
    /// assert_eq!(
    ///     StatusKey::parse(b"status-topic-orders:connector-my-sink")?,
    ///     StatusKey::Topic { topic: "orders".into(), connector: "my-sink".into() },
    /// );
    /// # Ok::<(), connect_distributed::topics::RecordError>(())
    /// ```
    pub fn parse(key: &[u8]) -> Result<StatusKey, RecordError> {
        let key = key_str(key)?;
        let invalid = |problem| RecordError::InvalidKey {
            key: key.to_owned(),
            problem,
        };
        if let Some(c) = key.strip_prefix(CONNECTOR_STATUS_PREFIX) {
            if c.is_empty() {
                return Err(invalid("the connector name is empty"));
            }
            Ok(StatusKey::Connector(c.to_owned()))
        } else if key.starts_with(TASK_STATUS_PREFIX) {
            match java_split_task_key(key, 2, 4) {
                Some((connector, task)) => Ok(StatusKey::Task(TaskId { connector, task })),
                None => Err(invalid(
                    "a task status key must be `status-task-<connector>-<task number>`",
                )),
            }
        } else if let Some(rest) = key.strip_prefix(TOPIC_STATUS_PREFIX) {
            let Some((topic, after)) = rest.split_once(':') else {
                return Err(invalid("a topic status key needs a `:`"));
            };
            if topic.is_empty() {
                return Err(invalid("the topic is empty"));
            }
            let Some(connector) = after.strip_prefix(&TOPIC_STATUS_SEPARATOR[1..]) else {
                return Err(invalid("the topic must be followed by `:connector-`"));
            };
            if connector.is_empty() {
                return Err(invalid("the connector name is empty"));
            }
            Ok(StatusKey::Topic {
                topic: topic.to_owned(),
                connector: connector.to_owned(),
            })
        } else {
            Err(RecordError::UnknownKey {
                key: key.to_owned(),
                topic: "status",
            })
        }
    }
}

/// One status topic record, typed.
///
/// ```
/// use connect_distributed::topics::status::{State, Status, StatusRecord};
///
/// let status = Status {
///     state: State::Running,
///     trace: None,
///     worker_id: "w1:8083".into(),
///     generation: 7,
///     version: Some("1.0".into()),
/// };
/// let record = StatusRecord::connector("jdbc", status);
/// let (key, value) = record.encode();
/// assert_eq!(key, "status-connector-jdbc");
/// assert_eq!(
///     value.as_deref(),
///     Some(&br#"{"state":"RUNNING","trace":null,"worker_id":"w1:8083","generation":7,"version":"1.0"}"#[..]),
/// );
/// assert_eq!(StatusRecord::decode(key.as_bytes(), value.as_deref())?, record);
/// # Ok::<(), connect_distributed::topics::RecordError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StatusRecord {
    /// `status-connector-<c>`.
    Connector {
        /// The connector.
        connector: String,
        /// Its status.
        status: Status,
    },
    /// `status-task-<c>-<n>`.
    Task {
        /// The task.
        id: TaskId,
        /// Its status.
        status: Status,
    },
    /// `status-topic-<topic>:connector-<c>`.
    Topic {
        /// The topic in the key.
        topic: String,
        /// The connector in the key.
        connector: String,
        /// The value (Java writes the key's topic and connector into it).
        status: TopicStatus,
    },
    /// A null value: the status is deleted.
    Tombstone(StatusKey),
}

impl StatusRecord {
    /// A connector status record as Java's `put` writes it: a tombstone
    /// for `DESTROYED`.
    pub fn connector(connector: impl Into<String>, status: Status) -> StatusRecord {
        let connector = connector.into();
        if status.state == State::Destroyed {
            StatusRecord::Tombstone(StatusKey::Connector(connector))
        } else {
            StatusRecord::Connector { connector, status }
        }
    }

    /// A task status record as Java's `put` writes it: a tombstone for
    /// `DESTROYED`.
    pub fn task(id: TaskId, status: Status) -> StatusRecord {
        if status.state == State::Destroyed {
            StatusRecord::Tombstone(StatusKey::Task(id))
        } else {
            StatusRecord::Task { id, status }
        }
    }

    /// A topic status record, keyed by the status's topic and connector.
    pub fn topic(status: TopicStatus) -> StatusRecord {
        StatusRecord::Topic {
            topic: status.topic.clone(),
            connector: status.connector.clone(),
            status,
        }
    }

    /// The record's key.
    pub fn key(&self) -> StatusKey {
        match self {
            StatusRecord::Connector { connector, .. } => StatusKey::Connector(connector.clone()),
            StatusRecord::Task { id, .. } => StatusKey::Task(id.clone()),
            StatusRecord::Topic {
                topic, connector, ..
            } => StatusKey::Topic {
                topic: topic.clone(),
                connector: connector.clone(),
            },
            StatusRecord::Tombstone(key) => key.clone(),
        }
    }

    /// The record's value bytes as Java writes them (`None` for a
    /// tombstone).
    pub fn encode_value(&self) -> Option<Vec<u8>> {
        match self {
            StatusRecord::Connector { status, .. } | StatusRecord::Task { status, .. } => Some(
                Obj::new()
                    .str("state", status.state.name())
                    .opt_str("trace", status.trace.as_deref())
                    .str("worker_id", &status.worker_id)
                    .int("generation", i64::from(status.generation))
                    .opt_str("version", status.version.as_deref())
                    .finish()
                    .into_bytes(),
            ),
            StatusRecord::Topic { status, .. } => {
                let inner = Obj::new()
                    .str("name", &status.topic)
                    .str("connector", &status.connector)
                    .int("task", i64::from(status.task))
                    .int("discoverTimestamp", status.discover_timestamp)
                    .finish();
                Some(Obj::new().raw("topic", &inner).finish().into_bytes())
            }
            StatusRecord::Tombstone(_) => None,
        }
    }

    /// The record's key and value bytes as Java writes them.
    pub fn encode(&self) -> (String, Option<Vec<u8>>) {
        (self.key().encode(), self.encode_value())
    }

    /// Decodes a record read from the status topic. Never panics; a
    /// record Java would skip is a [`RecordError`].
    pub fn decode(key: &[u8], value: Option<&[u8]>) -> Result<StatusRecord, RecordError> {
        let parsed = StatusKey::parse(key)?;
        let key = key_str(key)?;
        let map = match value {
            None => None,
            Some(bytes) => json::parse(key, bytes)?,
        };
        let Some(map) = map else {
            return Ok(StatusRecord::Tombstone(parsed));
        };
        Ok(match parsed {
            StatusKey::Connector(connector) => StatusRecord::Connector {
                connector,
                status: decode_status(key, &map)?,
            },
            StatusKey::Task(id) => StatusRecord::Task {
                id,
                status: decode_status(key, &map)?,
            },
            StatusKey::Topic { topic, connector } => {
                let inner = json::req_obj(key, &map, "topic")?;
                StatusRecord::Topic {
                    topic,
                    connector,
                    status: TopicStatus {
                        topic: json::req_str(key, inner, "name")?,
                        connector: json::req_str(key, inner, "connector")?,
                        task: json::req_int(key, inner, "task")?,
                        discover_timestamp: json::req_long(key, inner, "discoverTimestamp")?,
                    },
                }
            }
        })
    }
}

fn decode_status(key: &str, m: &Map<String, Value>) -> Result<Status, RecordError> {
    let name = json::req_str(key, m, "state")?;
    let state = State::from_name(&name).ok_or_else(|| RecordError::InvalidField {
        key: key.to_owned(),
        field: "state",
        problem: format!("`{name}` is not a connector or task state"),
    })?;
    Ok(Status {
        state,
        trace: json::opt_str(key, m, "trace")?,
        worker_id: json::req_str(key, m, "worker_id")?,
        generation: json::req_int(key, m, "generation")?,
        version: json::opt_str(key, m, "version")?,
    })
}

/// Java's `CacheEntry.canWriteSafely`: whether a worker's safe write
/// (`putSafe`) of `incoming` goes out, given the status it has cached for
/// the key. True when nothing is cached, when the cached status comes from
/// the same worker, or when the cached generation is not higher than the
/// incoming one — so an equal generation from another worker is written.
///
/// ```
/// use connect_distributed::topics::status::{can_write_safely, State, Status};
///
/// let status = |worker: &str, generation| Status {
///     state: State::Unassigned,
///     trace: None,
///     worker_id: worker.into(),
///     generation,
///     version: None,
/// };
/// assert!(can_write_safely(None, &status("w1", 1)));
/// assert!(can_write_safely(Some(&status("w2", 5)), &status("w1", 5)));
/// assert!(!can_write_safely(Some(&status("w2", 6)), &status("w1", 5)));
/// assert!(can_write_safely(Some(&status("w1", 6)), &status("w1", 5)));
/// ```
pub fn can_write_safely(cached: Option<&Status>, incoming: &Status) -> bool {
    match cached {
        None => true,
        Some(c) => c.worker_id == incoming.worker_id || c.generation <= incoming.generation,
    }
}

/// Java's rule in `readTaskStatus`: a task status read from the topic
/// replaces the cached one, except an `UNASSIGNED` over a `RUNNING` whose
/// generation is the same or later (a late write from the task's previous
/// owner). Connector statuses always replace.
pub fn should_apply_read_task_status(cached: Option<&Status>, incoming: &Status) -> bool {
    match cached {
        Some(c) => {
            !(incoming.state == State::Unassigned
                && c.state == State::Running
                && c.generation >= incoming.generation)
        }
        None => true,
    }
}
