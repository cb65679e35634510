//! Topics and partition logs of the in-memory cluster.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use bytes::Bytes;

use crate::{ConsumedRecord, KafkaError, KafkaErrorKind, NewTopic, TimestampType};

/// Transaction id inside the in-memory cluster.
pub(super) type TxnId = u64;

/// Whether a stored record is visible to `read_committed` readers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum RecordState {
    /// Outside any transaction, or in a committed one.
    Committed,
    /// In a transaction that is still open: `read_committed` stops here.
    Pending(TxnId),
    /// In an aborted transaction: only `read_uncommitted` sees it.
    Aborted,
    /// A transaction marker: occupies an offset, never returned.
    Control,
}

#[derive(Debug, Clone)]
pub(super) struct Stored {
    pub(super) record: ConsumedRecord,
    pub(super) state: RecordState,
}

/// One partition: records sorted by offset (with gaps after compaction and
/// for aborted/marker records), plus leader availability for fault injection.
#[derive(Debug, Default)]
pub(super) struct PartitionLog {
    pub(super) records: Vec<Stored>,
    /// Offset the next record gets (the log end offset).
    pub(super) end_offset: i64,
    /// First offset still readable.
    pub(super) start_offset: i64,
    /// False while a fault took the partition leader away.
    pub(super) leader_away: bool,
}

impl PartitionLog {
    /// Index of the first record at or after `offset`.
    pub(super) fn index_of(&self, offset: i64) -> usize {
        self.records.partition_point(|s| s.record.offset < offset)
    }

    /// The last stable offset: the offset of the first record in a
    /// transaction still open, or the log end offset without one.
    pub(super) fn last_stable_offset(&self) -> i64 {
        self.records
            .iter()
            .find(|s| matches!(s.state, RecordState::Pending(_)))
            .map_or(self.end_offset, |s| s.record.offset)
    }

    /// Mark the records of `txn` in this partition as committed or aborted.
    /// `offsets` are the offsets that transaction wrote here.
    pub(super) fn finish_txn(&mut self, offsets: &[i64], outcome: RecordState) {
        for &offset in offsets {
            let i = self.index_of(offset);
            if let Some(s) = self.records.get_mut(i) {
                if s.record.offset == offset && matches!(s.state, RecordState::Pending(_)) {
                    s.state = outcome;
                }
            }
        }
    }

    /// Append a transaction marker.
    pub(super) fn append_marker(&mut self, topic: &Arc<str>, partition: i32, now: i64) {
        let offset = self.end_offset;
        self.end_offset += 1;
        self.records.push(Stored {
            record: ConsumedRecord {
                topic: Arc::clone(topic),
                partition,
                offset,
                timestamp: Some(now),
                timestamp_type: TimestampType::CreateTime,
                key: None,
                value: None,
                headers: Vec::new(),
            },
            state: RecordState::Control,
        });
    }

    /// Keep only the latest record of each key below the first open
    /// transaction; drop aborted records and markers there. With
    /// `remove_tombstones`, a latest record with a null value goes too (as
    /// Kafka does once `delete.retention.ms` passed).
    pub(super) fn compact(&mut self, remove_tombstones: bool) {
        let stable = self
            .records
            .iter()
            .position(|s| matches!(s.state, RecordState::Pending(_)))
            .unwrap_or(self.records.len());
        let mut latest: HashMap<Bytes, i64> = HashMap::new();
        for s in &self.records[..stable] {
            if s.state == RecordState::Committed {
                if let Some(key) = &s.record.key {
                    latest.insert(key.clone(), s.record.offset);
                }
            }
        }
        let mut index = 0;
        self.records.retain(|s| {
            let below_stable = index < stable;
            index += 1;
            if !below_stable {
                return true;
            }
            match s.state {
                RecordState::Committed => match &s.record.key {
                    Some(key) => {
                        latest.get(key) == Some(&s.record.offset)
                            && !(remove_tombstones && s.record.value.is_none())
                    }
                    None => false,
                },
                _ => false,
            }
        });
    }
}

/// A topic: its partitions and the configs the in-memory cluster honours
/// (`cleanup.policy`, `message.timestamp.type`); other configs are kept for
/// describe.
#[derive(Debug)]
pub(super) struct Topic {
    pub(super) name: Arc<str>,
    pub(super) partitions: Vec<PartitionLog>,
    pub(super) configs: BTreeMap<String, String>,
    pub(super) replication_factor: i16,
    pub(super) compacted: bool,
    pub(super) log_append_time: bool,
}

impl Topic {
    pub(super) fn new(spec: &NewTopic) -> Result<Topic, KafkaError> {
        validate_topic_name(&spec.name)?;
        if spec.partitions < 1 {
            return Err(KafkaError::new(
                KafkaErrorKind::Config,
                format!(
                    "topic '{}': partitions must be at least 1, got {}",
                    spec.name, spec.partitions
                ),
            ));
        }
        let compacted = match spec.configs.get("cleanup.policy").map(String::as_str) {
            None => false,
            Some(policy) => {
                let mut compact = false;
                for part in policy.split(',').map(str::trim) {
                    match part {
                        "compact" => compact = true,
                        "delete" => {}
                        other => {
                            return Err(KafkaError::new(
                                KafkaErrorKind::Config,
                                format!(
                                    "topic '{}': cleanup.policy '{other}' is not one of compact, delete",
                                    spec.name
                                ),
                            ))
                        }
                    }
                }
                compact
            }
        };
        let log_append_time = match spec.configs.get("message.timestamp.type").map(String::as_str)
        {
            None | Some("CreateTime") => false,
            Some("LogAppendTime") => true,
            Some(other) => {
                return Err(KafkaError::new(
                    KafkaErrorKind::Config,
                    format!(
                        "topic '{}': message.timestamp.type '{other}' is not CreateTime or LogAppendTime",
                        spec.name
                    ),
                ))
            }
        };
        let mut partitions = Vec::new();
        partitions.resize_with(spec.partitions as usize, PartitionLog::default);
        Ok(Topic {
            name: Arc::from(spec.name.as_str()),
            partitions,
            configs: spec.configs.clone(),
            replication_factor: spec.replication_factor,
            compacted,
            log_append_time,
        })
    }

    pub(super) fn partition_count(&self) -> i32 {
        // Bounded by NewTopic::partitions, an i32.
        self.partitions.len() as i32
    }
}

/// Kafka's topic name rules: 1 to 249 characters of `[a-zA-Z0-9._-]`, not
/// `.` or `..`.
pub(super) fn validate_topic_name(name: &str) -> Result<(), KafkaError> {
    let bad = |why: &str| {
        Err(KafkaError::new(
            KafkaErrorKind::Config,
            format!("invalid topic name '{name}': {why}"),
        ))
    };
    if name.is_empty() {
        return bad("it is empty");
    }
    if name == "." || name == ".." {
        return bad("'.' and '..' are not allowed");
    }
    if name.len() > 249 {
        return bad("longer than 249 characters");
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
    {
        return bad("only ASCII letters, digits, '.', '_' and '-' are allowed");
    }
    Ok(())
}
