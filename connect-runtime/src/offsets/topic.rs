//! Offsets in a compacted Kafka topic (`offset.storage.topic`), as Kafka
//! Connect's distributed mode keeps them.
//!
//! Records are keyed `["<connector>",{partition}]` (JSON, partition keys
//! sorted so equal partitions compact together) with the offset JSON as
//! value, or null to remove it: Kafka's own layout, readable by Kafka's
//! tools. The topic is a [`KafkaLog`]: read to its end on open, then
//! followed, so offsets other workers (Java ones included) write appear
//! here; [`OffsetStore::refresh`] reads it to its end again. Nothing but
//! offset records is written: Java workers share the topic.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use connect_api::{Result, SourceMap};
use serde_json::Value as Json;

use super::{offset_key_bytes, OffsetEntry, OffsetStore, SharedTable};
use crate::kafka::{ClientConfig, KafkaCluster};
use crate::kafka_log::{KafkaLog, LogSpec};

/// Partitions of a created offsets topic (Kafka's default for `offset.storage.topic`).
pub const DEFAULT_PARTITIONS: i32 = 25;

/// An [`OffsetStore`] in a compacted Kafka topic.
pub struct KafkaOffsetStore {
    log: KafkaLog,
    /// Serializes writers so a write's records stay together in the topic.
    write_lock: tokio::sync::Mutex<()>,
    table: Arc<SharedTable>,
}

impl std::fmt::Debug for KafkaOffsetStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KafkaOffsetStore")
            .field("topic", &self.log.topic())
            .finish_non_exhaustive()
    }
}

impl KafkaOffsetStore {
    /// Open the store on `topic`, creating it (compacted, `partitions`,
    /// `replication_factor`) when the cluster can, then reading it to its
    /// end and following it.
    pub async fn open(
        cluster: &dyn KafkaCluster,
        client: &ClientConfig,
        topic: &str,
        partitions: i32,
        replication_factor: i16,
        timeout: Duration,
    ) -> Result<KafkaOffsetStore> {
        let table = Arc::new(SharedTable::default());
        let applied = Arc::clone(&table);
        let spec = LogSpec::new(
            topic,
            "offset.storage.topic",
            partitions,
            replication_factor,
        );
        let log = KafkaLog::open(
            cluster,
            client,
            spec,
            move |r| {
                let Some(key) = r.key.as_deref() else {
                    return;
                };
                match parse_entry(key, r.value.as_deref()) {
                    Some((connector, partition, offset)) => {
                        // Every change replaces a whole entry, so a panic
                        // elsewhere cannot leave the table half-updated.
                        applied.apply(&connector, vec![(partition, offset)]);
                    }
                    None => tracing::debug!(
                        topic = %r.topic, partition = r.partition, offset = r.offset,
                        "skipping a record that is not an offset"
                    ),
                }
            },
            timeout,
        )
        .await?;
        Ok(KafkaOffsetStore {
            log,
            write_lock: tokio::sync::Mutex::new(()),
            table,
        })
    }

    /// Stop following the topic and close its clients.
    pub async fn close(self) -> Result<()> {
        self.log.close().await
    }
}

/// An offset record: key `["connector", {partition}]`, value an object or null.
fn parse_entry(key: &[u8], value: Option<&[u8]>) -> Option<(String, SourceMap, Option<SourceMap>)> {
    let key: Json = serde_json::from_slice(key).ok()?;
    let [connector, partition] = key.as_array()?.as_slice() else {
        return None;
    };
    let connector = connector.as_str()?.to_string();
    let partition = partition.as_object()?.clone();
    let offset = match value {
        None => None,
        Some(v) => match serde_json::from_slice::<Json>(v).ok()? {
            Json::Object(o) => Some(o),
            Json::Null => None,
            _ => return None,
        },
    };
    Some((connector, partition, offset))
}

#[async_trait]
impl OffsetStore for KafkaOffsetStore {
    fn get(&self, connector: &str, partition: &SourceMap) -> Option<SourceMap> {
        self.table.get(connector, partition)
    }

    fn connector_offsets(&self, connector: &str) -> Vec<(SourceMap, SourceMap)> {
        self.table.connector_offsets(connector)
    }

    async fn write(&self, connector: &str, entries: Vec<OffsetEntry>) -> Result<()> {
        if entries.is_empty() {
            return Ok(());
        }
        let _guard = self.write_lock.lock().await;
        let mut pending = Vec::with_capacity(entries.len());
        for (partition, offset) in &entries {
            let key = offset_key_bytes(connector, partition);
            let value = offset.as_ref().map(|o| Json::Object(o.clone()).to_string());
            pending.push(
                self.log
                    .enqueue(Some(&key), value.as_deref().map(str::as_bytes), None)
                    .await?,
            );
        }
        for p in pending {
            p.wait()
                .await
                .map_err(|e| e.context("cannot store source offsets"))?;
        }
        // The table changes only through the follower, in topic order, so
        // a later write by another worker is never undone; reading to the
        // end lets this worker see its own write before returning.
        self.refresh().await
    }

    async fn refresh(&self) -> Result<()> {
        self.log
            .read_to_end()
            .await
            .map_err(|e| e.context("cannot read the offsets topic to its end"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kafka::memory::MemoryKafka;

    fn map(k: &str, v: Json) -> SourceMap {
        let mut m = SourceMap::new();
        m.insert(k.into(), v);
        m
    }

    async fn open(kafka: &MemoryKafka) -> KafkaOffsetStore {
        KafkaOffsetStore::open(
            kafka,
            &ClientConfig::new(),
            "connect-offsets",
            5,
            1,
            Duration::from_secs(10),
        )
        .await
        .unwrap()
    }

    #[tokio::test(start_paused = true)]
    async fn offsets_survive_a_reopen_and_resets_remove_them() {
        let kafka = MemoryKafka::new();
        let a = map("filename", "a.txt".into());
        let b = map("filename", "b.txt".into());
        {
            let store = open(&kafka).await;
            store
                .write(
                    "src",
                    vec![
                        (a.clone(), Some(map("position", 10.into()))),
                        (b.clone(), Some(map("position", 3.into()))),
                    ],
                )
                .await
                .unwrap();
            store
                .write("src", vec![(a.clone(), Some(map("position", 42.into())))])
                .await
                .unwrap();
            store.write("src", vec![(b.clone(), None)]).await.unwrap();
        }
        let store = open(&kafka).await;
        assert_eq!(store.get("src", &a), Some(map("position", 42.into())));
        assert_eq!(store.get("src", &b), None);
        assert_eq!(store.connector_offsets("src").len(), 1);
        // The topic is compacted, and keyed as Kafka keys offsets.
        assert!(kafka
            .records("connect-offsets", 0)
            .iter()
            .chain(
                (1..5)
                    .flat_map(|p| kafka.records("connect-offsets", p))
                    .collect::<Vec<_>>()
                    .iter()
            )
            .any(|r| r.key.as_deref() == Some(br#"["src",{"filename":"a.txt"}]"#.as_slice())));
    }

    fn all_records(kafka: &MemoryKafka) -> Vec<crate::kafka::ConsumedRecord> {
        (0..5)
            .flat_map(|p| kafka.records("connect-offsets", p))
            .collect()
    }

    #[tokio::test(start_paused = true)]
    async fn only_offset_records_are_written() {
        let kafka = MemoryKafka::new();
        let store = open(&kafka).await;
        let _second = open(&kafka).await;
        assert!(all_records(&kafka).is_empty(), "opening writes nothing");
        store
            .write(
                "src",
                vec![(map("f", "a".into()), Some(map("p", 1.into())))],
            )
            .await
            .unwrap();
        let records = all_records(&kafka);
        assert_eq!(records.len(), 1);
        assert!(records
            .iter()
            .all(|r| parse_entry(r.key.as_deref().unwrap(), r.value.as_deref()).is_some()));
    }

    #[tokio::test(start_paused = true)]
    async fn a_second_store_sees_the_first_stores_writes_after_refresh() {
        let kafka = MemoryKafka::new();
        let first = open(&kafka).await;
        let second = open(&kafka).await;
        let a = map("filename", "a.txt".into());
        first
            .write("src", vec![(a.clone(), Some(map("position", 7.into())))])
            .await
            .unwrap();
        second.refresh().await.unwrap();
        assert_eq!(second.get("src", &a), Some(map("position", 7.into())));
        first.write("src", vec![(a.clone(), None)]).await.unwrap();
        second.refresh().await.unwrap();
        assert_eq!(
            second.get("src", &a),
            None,
            "a reset reaches the other store"
        );
        // A write through the second store wins over the first's older one.
        second
            .write("src", vec![(a.clone(), Some(map("position", 9.into())))])
            .await
            .unwrap();
        first.refresh().await.unwrap();
        assert_eq!(first.get("src", &a), Some(map("position", 9.into())));
        second.close().await.unwrap();
    }

    #[test]
    fn foreign_records_are_skipped() {
        assert!(parse_entry(b"not json", Some(b"{}")).is_none());
        assert!(parse_entry(br#"["c","not a map"]"#, None).is_none());
        let (c, p, o) = parse_entry(br#"["c",{"f":"x"}]"#, Some(b"null")).unwrap();
        assert_eq!((c.as_str(), p, o), ("c", map("f", "x".into()), None));
    }
}
