//! # The config and status topics' records, byte-compatible with Java
//!
//! A distributed Connect cluster keeps its shared state in three compacted
//! Kafka topics. For Rust and Java workers to share one cluster they must
//! read and write the same records, so this module ports the record
//! formats of Apache Kafka Connect 4.4's `KafkaConfigBackingStore` and
//! `KafkaStatusBackingStore` exactly: the string keys, and the values as
//! Java's `JsonConverter` (with `schemas.enable=false`) writes its
//! `Struct`s, down to the field order and Jackson's string escaping. It
//! does no I/O and needs no Kafka client, so that every rule can be tested
//! on bytes alone; the stores that read and write the topics build on it.
//!
//! - [`config`]: the config topic's records ([`config::ConfigRecord`]):
//!   connector and task configs, task commits, target states, the session
//!   key, restart requests, task-count (fencing) records and logger levels;
//! - [`config_state`]: [`config_state::ConfigState`], Java's replay of the
//!   config topic: task configs stay invisible until their commit, a
//!   commit without all of its task configs marks the connector
//!   inconsistent, tombstones delete. It gives the assignor its
//!   [`crate::assignor::ConfigSnapshot`];
//! - [`status`]: the status topic's records ([`status::StatusRecord`]) and
//!   Java's "safe write" rule ([`status::can_write_safely`]).
//!
//! The offsets topic's `["<connector>",{partition}]` keys are not here:
//! `connect-runtime`'s `offsets` module already writes them.
//!
//! Decoding never panics. Where Java would log a record and skip it, the
//! decoders return a typed [`RecordError`] that names the key and what is
//! wrong. Known differences from Java, all on records Java itself never
//! writes, are listed on the decoders.
//!
//! ```
//! use connect_distributed::topics::config::{ConfigRecord, TargetState};
//!
//! let record = ConfigRecord::TargetState { connector: "jdbc".into(), state: TargetState::Stopped };
//! let (key, value) = record.encode();
//! assert_eq!(key, "target-state-jdbc");
//! // Java 3.5+ writes the v1 value: workers before `STOPPED` existed read `state`.
//! assert_eq!(value.as_deref(), Some(&br#"{"state":"PAUSED","state.v2":"STOPPED"}"#[..]));
//! assert_eq!(ConfigRecord::decode(key.as_bytes(), value.as_deref())?, record);
//! # Ok::<(), connect_distributed::topics::RecordError>(())
//! ```

pub mod config;
pub mod config_state;
mod json;
pub mod status;

use thiserror::Error;

/// Why a config or status topic record could not be decoded.
///
/// Java logs such records and skips them; every variant names the record's
/// key (lossily decoded if it is not UTF-8) and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum RecordError {
    /// The key is not UTF-8 (Java's `StringDeserializer` would replace the
    /// bad bytes; no key Java writes has them).
    #[error("record key `{key}` is not valid UTF-8")]
    KeyNotUtf8 {
        /// The key, with invalid bytes replaced by U+FFFD.
        key: String,
    },
    /// The key has none of the topic's prefixes.
    #[error("record key `{key}` is not a known {topic} topic key")]
    UnknownKey {
        /// The key.
        key: String,
        /// `config` or `status`.
        topic: &'static str,
    },
    /// The key has a known prefix but cannot be parsed.
    #[error("record key `{key}` is malformed: {problem}")]
    InvalidKey {
        /// The key.
        key: String,
        /// What is wrong.
        problem: &'static str,
    },
    /// The value is not JSON (Java's `JsonConverter` fails on it; such a
    /// record does not even advance Java's config offset).
    #[error("record `{key}`: the value is not JSON: {problem}")]
    InvalidJson {
        /// The key.
        key: String,
        /// The JSON parser's message.
        problem: String,
    },
    /// The value is JSON but not an object.
    #[error("record `{key}`: the value is not a JSON object")]
    NotAnObject {
        /// The key.
        key: String,
    },
    /// A field is missing or has the wrong type or an unknown value.
    #[error("record `{key}`: field `{field}` {problem}")]
    InvalidField {
        /// The key.
        key: String,
        /// The field's name.
        field: &'static str,
        /// What is wrong.
        problem: String,
    },
    /// The value is null (a tombstone) where Java ignores tombstones.
    #[error("record `{key}`: unexpected null value")]
    UnexpectedTombstone {
        /// The key.
        key: String,
    },
}

impl RecordError {
    /// The key of the record the error is about.
    pub fn key(&self) -> &str {
        match self {
            RecordError::KeyNotUtf8 { key }
            | RecordError::UnknownKey { key, .. }
            | RecordError::InvalidKey { key, .. }
            | RecordError::InvalidJson { key, .. }
            | RecordError::NotAnObject { key }
            | RecordError::InvalidField { key, .. }
            | RecordError::UnexpectedTombstone { key } => key,
        }
    }
}

/// Decodes a record key as UTF-8.
fn key_str(key: &[u8]) -> Result<&str, RecordError> {
    std::str::from_utf8(key).map_err(|_| RecordError::KeyNotUtf8 {
        key: String::from_utf8_lossy(key).into_owned(),
    })
}

/// Java's `Integer.parseInt` for the task number at the end of a key: an
/// optional `+` and ASCII digits that fit an `i32`.
fn java_parse_int(s: &str) -> Option<i32> {
    let digits = s.strip_prefix('+').unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse::<i32>().ok()
}

/// Java's task id parsing of `<prefix>-...-<connector>-<n>` keys:
/// `key.split("-")` (which drops trailing empty strings), at least
/// `min_parts` parts, the last one the task number, the connector the
/// parts from `skip` up to the last joined with `-`.
fn java_split_task_key(key: &str, skip: usize, min_parts: usize) -> Option<(String, u32)> {
    let mut parts: Vec<&str> = key.split('-').collect();
    while parts.last().is_some_and(|p| p.is_empty()) {
        parts.pop();
    }
    if parts.len() < min_parts {
        return None;
    }
    let (last, rest) = parts.split_last()?;
    // A task number is never negative (and cannot be: '-' splits).
    let task = u32::try_from(java_parse_int(last)?).ok()?;
    let connector = rest.get(skip..)?.join("-");
    Some((connector, task))
}
