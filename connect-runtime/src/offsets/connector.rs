//! A source connector's own offsets topic (`offsets.storage.topic` in the
//! connector's config, KIP-618, distributed mode), in front of the worker's.
//!
//! As in Kafka: offsets are read from the connector's topic first and
//! from the worker's topic where the connector's has none (a connector
//! that moved to a topic of its own resumes from what it stored before);
//! writes go to the connector's topic, then to the worker's, whose
//! failure is only logged (it is the fallback copy). An exactly-once task
//! writes its offsets to the connector's topic inside its transaction and
//! then the copy through [`OffsetStore::write_fallback`].

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use connect_api::{Result, SourceMap};
use tokio::sync::OnceCell;

use super::{offset_key, KafkaOffsetStore, OffsetEntry, OffsetStore};
use crate::kafka::{ClientConfig, KafkaCluster};

/// Opens the offsets topics connectors name, each once per worker.
#[async_trait]
pub trait OffsetTopics: Send + Sync {
    /// The store of offsets topic `topic`, created when missing.
    async fn open(&self, topic: &str) -> Result<Arc<dyn OffsetStore>>;
}

/// [`OffsetTopics`] on a Kafka cluster: each topic opened as a
/// [`KafkaOffsetStore`] with the worker's offsets-topic settings, kept
/// open for every task of every connector that names it.
pub struct KafkaOffsetTopics {
    cluster: Arc<dyn KafkaCluster>,
    client: ClientConfig,
    partitions: i32,
    replication_factor: i16,
    timeout: Duration,
    open: tokio::sync::Mutex<HashMap<String, Arc<KafkaOffsetStore>>>,
}

impl KafkaOffsetTopics {
    /// Topics on `cluster` reached with the worker's `client` properties,
    /// created with `partitions` and `replication_factor` (the worker's
    /// `offset.storage.partitions` and `.replication.factor`, as Kafka
    /// creates a connector's offsets topic).
    pub fn new(
        cluster: Arc<dyn KafkaCluster>,
        client: ClientConfig,
        partitions: i32,
        replication_factor: i16,
        timeout: Duration,
    ) -> Self {
        KafkaOffsetTopics {
            cluster,
            client,
            partitions,
            replication_factor,
            timeout,
            open: tokio::sync::Mutex::new(HashMap::new()),
        }
    }
}

#[async_trait]
impl OffsetTopics for KafkaOffsetTopics {
    async fn open(&self, topic: &str) -> Result<Arc<dyn OffsetStore>> {
        // Held while opening: two tasks of one connector open it once.
        let mut open = self.open.lock().await;
        if let Some(store) = open.get(topic) {
            return Ok(store.clone());
        }
        let store = KafkaOffsetStore::open(
            self.cluster.as_ref(),
            &self.client,
            topic,
            self.partitions,
            self.replication_factor,
            self.timeout,
        )
        .await
        .map_err(|e| {
            e.context(format!(
                "cannot open the connector's offsets topic '{topic}'"
            ))
        })?;
        let store = Arc::new(store);
        open.insert(topic.to_string(), store.clone());
        Ok(store)
    }
}

/// The offsets of a connector with its own offsets topic: that topic's
/// store first, the worker's behind it. The connector's store is opened
/// at the first [`OffsetStore::refresh`] or write (a task refreshes
/// before it reads), so creating this costs nothing.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// use std::sync::Arc;
/// use async_trait::async_trait;
/// use connect_api::{Result, SourceMap};
/// use connect_runtime::offsets::{ConnectorOffsetStore, MemoryOffsetStore, OffsetStore, OffsetTopics};
///
/// struct OneTopic(Arc<MemoryOffsetStore>);
/// #[async_trait]
/// impl OffsetTopics for OneTopic {
///     async fn open(&self, _topic: &str) -> Result<Arc<dyn OffsetStore>> {
///         Ok(self.0.clone())
///     }
/// }
///
/// let own = Arc::new(MemoryOffsetStore::new());
/// let worker = Arc::new(MemoryOffsetStore::new());
/// let file = |f: &str| SourceMap::from_iter([("file".to_string(), f.into())]);
/// let at = |n: u64| SourceMap::from_iter([("position".to_string(), n.into())]);
/// // Stored before the connector had a topic of its own.
/// worker.write("files", vec![(file("a"), Some(at(7)))]).await?;
///
/// let store = ConnectorOffsetStore::new("files-offsets", Arc::new(OneTopic(own.clone())), worker.clone());
/// store.refresh().await?;
/// assert_eq!(store.get("files", &file("a")), Some(at(7)), "the worker's copy behind");
/// store.write("files", vec![(file("a"), Some(at(9)))]).await?;
/// assert_eq!(own.get("files", &file("a")), Some(at(9)));
/// assert_eq!(worker.get("files", &file("a")), Some(at(9)), "the fallback copy");
/// # Ok::<(), connect_api::ConnectError>(())
/// # }).unwrap();
/// ```
pub struct ConnectorOffsetStore {
    topic: String,
    topics: Arc<dyn OffsetTopics>,
    own: OnceCell<Arc<dyn OffsetStore>>,
    worker: Arc<dyn OffsetStore>,
}

impl ConnectorOffsetStore {
    /// The offsets in `topic` (opened through `topics`), with `worker`'s
    /// store behind them.
    pub fn new(
        topic: impl Into<String>,
        topics: Arc<dyn OffsetTopics>,
        worker: Arc<dyn OffsetStore>,
    ) -> Self {
        ConnectorOffsetStore {
            topic: topic.into(),
            topics,
            own: OnceCell::new(),
            worker,
        }
    }

    async fn own(&self) -> Result<&Arc<dyn OffsetStore>> {
        self.own
            .get_or_try_init(|| self.topics.open(&self.topic))
            .await
    }
}

#[async_trait]
impl OffsetStore for ConnectorOffsetStore {
    fn get(&self, connector: &str, partition: &SourceMap) -> Option<SourceMap> {
        self.own
            .get()
            .and_then(|own| own.get(connector, partition))
            .or_else(|| self.worker.get(connector, partition))
    }

    fn connector_offsets(&self, connector: &str) -> Vec<(SourceMap, SourceMap)> {
        let mut merged: BTreeMap<String, (SourceMap, SourceMap)> = self
            .worker
            .connector_offsets(connector)
            .into_iter()
            .map(|(p, o)| (offset_key(connector, &p), (p, o)))
            .collect();
        if let Some(own) = self.own.get() {
            for (p, o) in own.connector_offsets(connector) {
                merged.insert(offset_key(connector, &p), (p, o));
            }
        }
        merged.into_values().collect()
    }

    async fn write(&self, connector: &str, entries: Vec<OffsetEntry>) -> Result<()> {
        self.own().await?.write(connector, entries.clone()).await?;
        self.write_fallback(connector, entries).await
    }

    async fn write_fallback(&self, connector: &str, entries: Vec<OffsetEntry>) -> Result<()> {
        if let Err(e) = self.worker.write(connector, entries).await {
            tracing::warn!(connector, topic = %self.topic, error = %e,
                "stored the offsets in the connector's offsets topic but not their copy in the worker's");
        }
        Ok(())
    }

    async fn refresh(&self) -> Result<()> {
        self.own().await?.refresh().await?;
        self.worker.refresh().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::offsets::MemoryOffsetStore;
    use connect_api::ConnectError;

    struct Fixed(Arc<dyn OffsetStore>);

    #[async_trait]
    impl OffsetTopics for Fixed {
        async fn open(&self, _: &str) -> Result<Arc<dyn OffsetStore>> {
            Ok(self.0.clone())
        }
    }

    /// A worker's store whose writes fail (its topic unreachable).
    struct Broken(MemoryOffsetStore);

    #[async_trait]
    impl OffsetStore for Broken {
        fn get(&self, connector: &str, partition: &SourceMap) -> Option<SourceMap> {
            self.0.get(connector, partition)
        }
        fn connector_offsets(&self, connector: &str) -> Vec<(SourceMap, SourceMap)> {
            self.0.connector_offsets(connector)
        }
        async fn write(&self, _: &str, _: Vec<OffsetEntry>) -> Result<()> {
            Err(ConnectError::retriable(
                "the worker's offsets topic is away",
            ))
        }
    }

    fn map(key: &str, value: u64) -> SourceMap {
        SourceMap::from_iter([(key.to_string(), value.into())])
    }

    #[tokio::test]
    async fn the_connectors_topic_wins_and_the_workers_fills_in() {
        let own = Arc::new(MemoryOffsetStore::new());
        let worker = Arc::new(MemoryOffsetStore::new());
        worker
            .write(
                "c",
                vec![
                    (map("p", 1), Some(map("at", 1))),
                    (map("p", 2), Some(map("at", 2))),
                ],
            )
            .await
            .unwrap();
        own.write("c", vec![(map("p", 2), Some(map("at", 20)))])
            .await
            .unwrap();
        let store = ConnectorOffsetStore::new("own", Arc::new(Fixed(own)), worker);
        // Before the first refresh only the worker's store is known.
        assert_eq!(store.get("c", &map("p", 2)), Some(map("at", 2)));
        store.refresh().await.unwrap();
        assert_eq!(store.get("c", &map("p", 2)), Some(map("at", 20)));
        assert_eq!(store.get("c", &map("p", 1)), Some(map("at", 1)));
        let mut all = store.connector_offsets("c");
        all.sort_by_key(|(p, _)| p["p"].as_u64());
        assert_eq!(
            all,
            vec![(map("p", 1), map("at", 1)), (map("p", 2), map("at", 20))]
        );
    }

    #[tokio::test]
    async fn a_failed_copy_to_the_workers_topic_does_not_fail_the_write() {
        let own = Arc::new(MemoryOffsetStore::new());
        let store = ConnectorOffsetStore::new(
            "own",
            Arc::new(Fixed(own.clone())),
            Arc::new(Broken(MemoryOffsetStore::new())),
        );
        store
            .write("c", vec![(map("p", 1), Some(map("at", 5)))])
            .await
            .unwrap();
        assert_eq!(own.get("c", &map("p", 1)), Some(map("at", 5)));
    }
}
