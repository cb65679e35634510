//! Source offsets in Debezium's shape: the partition `{"server": prefix}`
//! and the keys Debezium writes (`lsn`, `lsn_proc`, `lsn_commit`, `txId`,
//! `ts_usec`, `messageType`, and during a snapshot `snapshot`,
//! `last_snapshot_record`, `snapshot_completed`), so a connector moved
//! between Debezium and this one keeps its position.

use std::sync::Arc;

use connect_api::SourceMap;
use serde_json::Value as Json;

/// The source partition of a connector with `topic.prefix` `prefix`.
pub(crate) fn partition(prefix: &str) -> Arc<SourceMap> {
    let mut m = SourceMap::new();
    m.insert("server".into(), Json::from(prefix));
    Arc::new(m)
}

/// Where the connector is.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Position {
    /// The LSN of the last event handed over (`lsn`).
    pub lsn: u64,
    /// The LSN of the last completely processed event (`lsn_proc`).
    pub lsn_proc: Option<u64>,
    /// The commit LSN of the transaction of that event (`lsn_commit`).
    pub lsn_commit: Option<u64>,
    /// `txId`.
    pub tx_id: Option<i64>,
    /// `ts_usec`: the commit time in microseconds since the epoch.
    pub ts_usec: i64,
    /// `messageType`: INSERT, UPDATE, DELETE, ...
    pub message_type: Option<&'static str>,
    /// During the snapshot: whether this is its last record.
    pub snapshot: Option<SnapshotMark>,
}

/// The snapshot part of a snapshot record's offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SnapshotMark {
    pub last_record: bool,
}

/// What a stored offset says.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Stored {
    pub position: Position,
    /// Written during a snapshot that had not finished.
    pub snapshot_incomplete: bool,
}

impl Position {
    /// The offset map of this position.
    pub(crate) fn to_offset(&self) -> SourceMap {
        let mut m = SourceMap::new();
        m.insert("ts_usec".into(), Json::from(self.ts_usec));
        if let Some(tx) = self.tx_id {
            m.insert("txId".into(), Json::from(tx));
        }
        m.insert("lsn".into(), Json::from(self.lsn));
        match self.snapshot {
            Some(mark) => {
                m.insert("snapshot".into(), Json::from("INITIAL"));
                m.insert("last_snapshot_record".into(), Json::from(mark.last_record));
                m.insert("snapshot_completed".into(), Json::from(mark.last_record));
            }
            None => {
                if let Some(p) = self.lsn_proc {
                    m.insert("lsn_proc".into(), Json::from(p));
                }
                if let Some(c) = self.lsn_commit {
                    m.insert("lsn_commit".into(), Json::from(c));
                }
                if let Some(t) = self.message_type {
                    m.insert("messageType".into(), Json::from(t));
                }
            }
        }
        m
    }

    /// Reads an offset Debezium or this connector wrote; `None` when it
    /// has no `lsn`.
    pub(crate) fn from_offset(offset: &SourceMap) -> Option<Stored> {
        let num = |k: &str| {
            offset
                .get(k)
                .and_then(|v| v.as_i64().or_else(|| v.as_str()?.parse().ok()))
        };
        let lsn = u64::try_from(num("lsn")?).ok()?;
        let in_snapshot = match offset.get("snapshot") {
            None | Some(Json::Null) => false,
            Some(Json::Bool(b)) => *b,
            Some(Json::String(s)) => !s.eq_ignore_ascii_case("false"),
            Some(_) => true,
        };
        let flag = |k: &str| offset.get(k).and_then(Json::as_bool);
        let completed = flag("snapshot_completed")
            .or_else(|| flag("last_snapshot_record"))
            .unwrap_or(false);
        Some(Stored {
            snapshot_incomplete: in_snapshot && !completed,
            position: Position {
                lsn,
                lsn_proc: num("lsn_proc").and_then(|v| u64::try_from(v).ok()),
                lsn_commit: num("lsn_commit").and_then(|v| u64::try_from(v).ok()),
                tx_id: num("txId"),
                ts_usec: num("ts_usec").unwrap_or(0),
                message_type: None,
                snapshot: None,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_round_trip() {
        let p = Position {
            lsn: 100,
            lsn_proc: Some(100),
            lsn_commit: Some(90),
            tx_id: Some(7),
            ts_usec: 1_700_000_000_000_000,
            message_type: Some("INSERT"),
            snapshot: None,
        };
        let back = Position::from_offset(&p.to_offset()).unwrap();
        assert!(!back.snapshot_incomplete);
        assert_eq!(back.position.lsn_commit, Some(90));
        let s = Position {
            snapshot: Some(SnapshotMark { last_record: false }),
            ..p
        };
        assert!(
            Position::from_offset(&s.to_offset())
                .unwrap()
                .snapshot_incomplete
        );
    }

    #[test]
    fn foreign_offsets_without_an_lsn_are_not_ours() {
        let mut m = SourceMap::new();
        m.insert("incrementing".into(), Json::from(5));
        assert!(Position::from_offset(&m).is_none());
    }
}
