//! Source offset storage: where source tasks' committed positions live.
//!
//! One trait, [`OffsetStore`], with an in-memory store (tests, embedding), a
//! file store (standalone: `offset.storage.file.filename`), a compacted
//! Kafka topic store (`offset.storage.topic`) and a connector's own topic in
//! front of the worker's ([`ConnectorOffsetStore`], the connector key
//! `offsets.storage.topic`). Every store keeps the whole
//! map in memory, so reads are synchronous snapshots; writes are durable
//! when `write` returns.
//!
//! Entries are keyed as Kafka keys them: `["<connector>", {partition}]`.

mod connector;
mod file;
mod memory;
mod topic;

use std::collections::BTreeMap;

use async_trait::async_trait;
use connect_api::{Result, SourceMap};

pub use connector::{ConnectorOffsetStore, KafkaOffsetTopics, OffsetTopics};
pub use file::FileOffsetStore;
pub use memory::MemoryOffsetStore;
pub use topic::{KafkaOffsetStore, DEFAULT_PARTITIONS as DEFAULT_OFFSET_TOPIC_PARTITIONS};

/// One offset change: a source partition and its new offset (`None` removes
/// the stored offset, as a null value does in Kafka).
pub type OffsetEntry = (SourceMap, Option<SourceMap>);

/// Durable storage of source offsets for all connectors of a worker.
#[async_trait]
pub trait OffsetStore: Send + Sync {
    /// The stored offset of `partition` for `connector`.
    fn get(&self, connector: &str, partition: &SourceMap) -> Option<SourceMap>;

    /// Every stored (partition, offset) of `connector`.
    fn connector_offsets(&self, connector: &str) -> Vec<(SourceMap, SourceMap)>;

    /// Store `entries` for `connector` atomically: after `Ok`, all of them
    /// survive a crash; after `Err`, none is guaranteed to.
    async fn write(&self, connector: &str, entries: Vec<OffsetEntry>) -> Result<()>;

    /// Offsets already stored in this store's topic another way (an
    /// exactly-once task's transaction): write them to any copy the store
    /// keeps besides (the worker's topic behind a connector's own, see
    /// [`ConnectorOffsetStore`]). Nothing to do by default.
    async fn write_fallback(&self, _connector: &str, _entries: Vec<OffsetEntry>) -> Result<()> {
        Ok(())
    }

    /// Catch up with offsets other writers stored (other workers sharing
    /// the offsets topic), so that reads after it see them. Stores nobody
    /// else writes have nothing to do (the default).
    async fn refresh(&self) -> Result<()> {
        Ok(())
    }
}

/// The canonical key of a (connector, partition) pair: Kafka's key shape
/// `["<connector>",{partition}]` with the partition's keys sorted, so two
/// equal maps built in different orders are the same key.
pub fn offset_key(connector: &str, partition: &SourceMap) -> String {
    let sorted: BTreeMap<&String, &serde_json::Value> = partition.iter().collect();
    serde_json::json!([connector, sorted]).to_string()
}

/// The bytes of the offsets topic's key for a (connector, partition) pair,
/// as Java's workers write it: `["<connector>",{partition}]` through
/// `JsonConverter` without schemas (Jackson's escapes, Java's number
/// formatting), so a Java worker sharing the topic finds our offsets by
/// their key and compaction keeps one record per partition. The partition's
/// fields are written in key order, so one partition is one key; Java
/// writes its map's iteration order, the same for the one-field partitions
/// almost every connector uses (a known gap for multi-field ones, listed in
/// the README).
pub fn offset_key_bytes(connector: &str, partition: &SourceMap) -> Vec<u8> {
    let mut out = Vec::with_capacity(connector.len() + 32);
    out.push(b'[');
    crate::converters::json::write_jackson_string(&mut out, connector);
    out.push(b',');
    out.push(b'{');
    // Sorted, as `offset_key`: one partition is one key however its map
    // was built (the REST offsets API and the task may build it in
    // different orders).
    let sorted: BTreeMap<&String, &serde_json::Value> = partition.iter().collect();
    for (i, (k, v)) in sorted.into_iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        crate::converters::json::write_jackson_string(&mut out, k);
        out.push(b':');
        crate::converters::json::write_jackson_value(&mut out, v);
    }
    out.extend_from_slice(b"}]");
    out
}

/// The in-memory table every store keeps: canonical key to
/// (connector, partition, offset).
#[derive(Debug, Default, Clone)]
pub(crate) struct OffsetTable {
    entries: BTreeMap<String, (String, SourceMap, SourceMap)>,
}

impl OffsetTable {
    pub(crate) fn get(&self, connector: &str, partition: &SourceMap) -> Option<SourceMap> {
        self.entries
            .get(&offset_key(connector, partition))
            .map(|(_, _, o)| o.clone())
    }

    pub(crate) fn connector_offsets(&self, connector: &str) -> Vec<(SourceMap, SourceMap)> {
        self.entries
            .values()
            .filter(|(c, _, _)| c == connector)
            .map(|(_, p, o)| (p.clone(), o.clone()))
            .collect()
    }

    pub(crate) fn apply(&mut self, connector: &str, entries: Vec<OffsetEntry>) {
        for (partition, offset) in entries {
            let key = offset_key(connector, &partition);
            match offset {
                Some(o) => {
                    self.entries
                        .insert(key, (connector.to_string(), partition, o));
                }
                None => {
                    self.entries.remove(&key);
                }
            }
        }
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = &(String, SourceMap, SourceMap)> {
        self.entries.values()
    }
}

/// The table a store serves reads from, behind a lock: the one body of
/// every store's `get` and `connector_offsets`. A lock poisoned by a panic
/// elsewhere is still used: each change replaces whole entries, so no
/// half-applied change can be seen.
#[derive(Debug, Default)]
pub(crate) struct SharedTable(std::sync::RwLock<OffsetTable>);

impl SharedTable {
    pub(crate) fn new(table: OffsetTable) -> Self {
        SharedTable(std::sync::RwLock::new(table))
    }

    pub(crate) fn get(&self, connector: &str, partition: &SourceMap) -> Option<SourceMap> {
        self.read().get(connector, partition)
    }

    pub(crate) fn connector_offsets(&self, connector: &str) -> Vec<(SourceMap, SourceMap)> {
        self.read().connector_offsets(connector)
    }

    pub(crate) fn apply(&self, connector: &str, entries: Vec<OffsetEntry>) {
        self.0
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .apply(connector, entries);
    }

    pub(crate) fn replace(&self, table: OffsetTable) {
        *self.0.write().unwrap_or_else(|e| e.into_inner()) = table;
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, OffsetTable> {
        self.0.read().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_is_kafka_shaped_and_order_independent() {
        let mut a = SourceMap::new();
        a.insert("filename".into(), "test.txt".into());
        a.insert("db".into(), "x".into());
        let mut b = SourceMap::new();
        b.insert("db".into(), "x".into());
        b.insert("filename".into(), "test.txt".into());
        assert_eq!(offset_key("c", &a), offset_key("c", &b));
        assert_eq!(
            offset_key("c", &a),
            r#"["c",{"db":"x","filename":"test.txt"}]"#
        );
    }

    /// Review F16: the offsets topic's key bytes are Jackson's, which
    /// differ from serde_json's for control characters (upper-case hex),
    /// characters beyond the BMP (surrogate pairs) and floating-point
    /// numbers (Java's `Double.toString`).
    #[test]
    fn topic_key_bytes_are_javas() {
        let mut p = SourceMap::new();
        p.insert("file".into(), "a\u{1f}\u{1F600}".into());
        p.insert("shard".into(), serde_json::json!(1e10));
        p.insert("n".into(), serde_json::json!(7));
        assert_eq!(
            String::from_utf8(offset_key_bytes("c\"", &p)).unwrap(),
            r#"["c\"",{"file":"a\u001F\uD83D\uDE00","n":7,"shard":1.0E10}]"#
        );
        let parsed: serde_json::Value = serde_json::from_slice(&offset_key_bytes("c", &p)).unwrap();
        assert_eq!(parsed, serde_json::json!(["c", p]));
    }
}
