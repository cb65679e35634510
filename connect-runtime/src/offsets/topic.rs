//! Offsets in a compacted Kafka topic (`offset.storage.topic`), as Kafka
//! Connect's distributed mode keeps them.
//!
//! Records are keyed `["<connector>",{partition}]` (JSON, partition keys
//! sorted so equal partitions compact together) with the offset JSON as
//! value, or null to remove it: Kafka's own layout, readable by Kafka's
//! tools. On open the whole topic is read back. To know where "the end" is
//! through the narrow Kafka port (which has no end-offset query), the store
//! writes one marker record per partition and reads until it has seen every
//! marker; markers have a key that is not an offset key, which readers
//! (Kafka's included) skip.

use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use async_trait::async_trait;
use connect_api::{ConnectError, Result, SourceMap};
use serde_json::Value as Json;

use super::{offset_key, OffsetEntry, OffsetStore, OffsetTable};
use crate::kafka::{
    AckFailure, ClientConfig, ConsumerEvent, CreateTopicOutcome, DeliveryWaiter, KafkaCluster,
    NewTopic, OutRecord, Producer, SendError, Subscription,
};

/// Partitions of a created offsets topic (Kafka's default for `offset.storage.topic`).
pub const DEFAULT_PARTITIONS: i32 = 25;
/// Key tag of the end-of-log markers.
const MARKER: &str = "__connect-rs.end-marker";

/// An [`OffsetStore`] in a compacted Kafka topic.
pub struct KafkaOffsetStore {
    topic: String,
    producer: Box<dyn Producer>,
    acks: Arc<DeliveryWaiter>,
    next_token: Mutex<u64>,
    /// Serializes writers so each write's acks are its own.
    write_lock: tokio::sync::Mutex<()>,
    table: RwLock<OffsetTable>,
    timeout: Duration,
}

impl std::fmt::Debug for KafkaOffsetStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KafkaOffsetStore")
            .field("topic", &self.topic)
            .finish_non_exhaustive()
    }
}

impl KafkaOffsetStore {
    /// Open the store on `topic`, creating it (compacted, `partitions`,
    /// `replication_factor`) when the cluster can, then reading it back.
    pub async fn open(
        cluster: &dyn KafkaCluster,
        client: &ClientConfig,
        topic: &str,
        partitions: i32,
        replication_factor: i16,
        timeout: Duration,
    ) -> Result<KafkaOffsetStore> {
        let admin = cluster.admin(client)?;
        // Describe first: creating is only needed once, and some clusters
        // (librdkafka's mock) time out on CreateTopics.
        let mut existing = admin.describe_topic(topic, timeout).await?;
        if existing.is_none() {
            let mut spec = NewTopic::new(topic, partitions).config("cleanup.policy", "compact");
            spec.replication_factor = replication_factor;
            match admin.create_topic(&spec, timeout).await {
                Ok(CreateTopicOutcome::Created | CreateTopicOutcome::AlreadyExists) => {}
                Ok(CreateTopicOutcome::Unsupported { reason }) => {
                    tracing::warn!(topic, %reason, "cannot create the offsets topic")
                }
                Err(e) => tracing::warn!(topic, error = %e, "creating the offsets topic failed"),
            }
            existing = admin.describe_topic(topic, timeout).await?;
        }
        let partitions = existing.map(|d| d.partitions).ok_or_else(|| {
            ConnectError::config(
                "offset.storage.topic",
                format!("the offsets topic '{topic}' does not exist and could not be created; create it (compacted) and restart"),
            )
        })?;
        let acks = Arc::new(DeliveryWaiter::default());
        let mut producer_config = client.clone();
        producer_config.insert("acks".into(), "all".into());
        let producer = cluster.producer(&producer_config, acks.clone())?;
        let store = KafkaOffsetStore {
            topic: topic.to_string(),
            producer,
            acks,
            next_token: Mutex::new(0),
            write_lock: tokio::sync::Mutex::new(()),
            table: RwLock::new(OffsetTable::default()),
            timeout,
        };
        let table = store.read_back(cluster, client, partitions).await?;
        if let Ok(mut t) = store.table.write() {
            *t = table;
        }
        Ok(store)
    }

    /// The first of `n` fresh tokens.
    fn tokens(&self, n: u64) -> Result<u64> {
        let mut next = self
            .next_token
            .lock()
            .map_err(|_| ConnectError::other("offset store token lock poisoned"))?;
        let from = *next;
        *next += n;
        Ok(from)
    }

    async fn send(&self, record: &OutRecord<'_>, token: u64) -> Result<()> {
        self.acks.sending();
        loop {
            match self.producer.send(record, token) {
                Ok(()) => return Ok(()),
                Err(SendError::QueueFull) => tokio::time::sleep(Duration::from_millis(5)).await,
                Err(SendError::Kafka(e)) => {
                    self.acks.not_sent(token);
                    return Err(ConnectError::from(e).context("cannot write to the offsets topic"));
                }
            }
        }
    }

    /// Wait for every record sent (writers are serialized, so they are this
    /// writer's), or the store's timeout.
    async fn acknowledged(&self) -> Result<()> {
        self.acks
            .idle(Some(self.timeout))
            .await
            .map_err(|failure| match failure {
                AckFailure::TimedOut { waited, .. } => ConnectError::retriable(format!(
                    "offsets topic did not acknowledge the write within {waited:?}"
                )),
                AckFailure::Failed { first, .. } => {
                    ConnectError::from(first).context("cannot write to the offsets topic")
                }
            })
    }

    /// Write one marker per partition, then read everything up to them.
    async fn read_back(
        &self,
        cluster: &dyn KafkaCluster,
        client: &ClientConfig,
        partitions: i32,
    ) -> Result<OffsetTable> {
        let nonce = format!(
            "{}-{:?}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default()
        );
        let marker = serde_json::json!([MARKER, nonce]).to_string();
        let from = self.tokens(partitions as u64)?;
        for p in 0..partitions {
            let record = OutRecord {
                partition: Some(p),
                key: Some(marker.as_bytes()),
                ..OutRecord::new(&self.topic, None)
            };
            self.send(&record, from + p as u64).await?;
        }
        self.acknowledged().await?;

        let mut config = client.clone();
        config.insert("group.id".into(), format!("connect-offsets-reader-{nonce}"));
        config.insert("auto.offset.reset".into(), "earliest".into());
        config.insert("enable.auto.commit".into(), "false".into());
        let mut consumer = cluster.consumer(&config)?;
        consumer.subscribe(&Subscription::Topics(vec![self.topic.clone()]))?;
        let mut table = OffsetTable::default();
        let mut seen = vec![false; partitions as usize];
        let deadline = tokio::time::Instant::now() + self.timeout.max(Duration::from_secs(30));
        while seen.iter().any(|s| !s) {
            if tokio::time::Instant::now() > deadline {
                return Err(ConnectError::retriable(format!(
                    "timed out reading the offsets topic '{}' back",
                    self.topic
                )));
            }
            let Some(ConsumerEvent::Records(batch)) =
                consumer.poll(Duration::from_millis(200)).await?
            else {
                continue;
            };
            for r in batch {
                let Some(key) = r.key.as_deref() else {
                    continue;
                };
                if key == marker.as_bytes() {
                    if let Some(s) = seen.get_mut(r.partition as usize) {
                        *s = true;
                    }
                    continue;
                }
                match parse_entry(key, r.value.as_deref()) {
                    Some((connector, partition, offset)) => {
                        table.apply(&connector, vec![(partition, offset)])
                    }
                    None => {
                        tracing::debug!(topic = %self.topic, "skipping a record that is not an offset")
                    }
                }
            }
        }
        let _ = consumer.close().await;
        Ok(table)
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
        self.table.read().ok()?.get(connector, partition)
    }

    fn connector_offsets(&self, connector: &str) -> Vec<(SourceMap, SourceMap)> {
        self.table
            .read()
            .map(|t| t.connector_offsets(connector))
            .unwrap_or_default()
    }

    async fn write(&self, connector: &str, entries: Vec<OffsetEntry>) -> Result<()> {
        if entries.is_empty() {
            return Ok(());
        }
        let _guard = self.write_lock.lock().await;
        let from = self.tokens(entries.len() as u64)?;
        for (i, (partition, offset)) in entries.iter().enumerate() {
            let key = offset_key(connector, partition);
            let value = offset.as_ref().map(|o| Json::Object(o.clone()).to_string());
            let record = OutRecord {
                key: Some(key.as_bytes()),
                ..OutRecord::new(&self.topic, value.as_deref().map(str::as_bytes))
            };
            self.send(&record, from + i as u64).await?;
        }
        self.acknowledged().await?;
        self.table
            .write()
            .map_err(|_| ConnectError::other("offset table poisoned"))?
            .apply(connector, entries);
        Ok(())
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

    #[tokio::test]
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

    #[test]
    fn foreign_records_are_skipped() {
        assert!(parse_entry(b"not json", Some(b"{}")).is_none());
        assert!(parse_entry(br#"["c","not a map"]"#, None).is_none());
        let (c, p, o) = parse_entry(br#"["c",{"f":"x"}]"#, Some(b"null")).unwrap();
        assert_eq!((c.as_str(), p, o), ("c", map("f", "x".into()), None));
    }
}
