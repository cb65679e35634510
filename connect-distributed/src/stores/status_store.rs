//! [`KafkaStatusStore`]: the status topic, Java's `KafkaStatusBackingStore`.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use connect_api::Result;
use connect_runtime::kafka::{ClientConfig, ConsumedRecord, KafkaCluster};
use connect_runtime::kafka_log::{KafkaLog, LogSpec};
use connect_runtime::status::{StatusListener, StatusStore, TaskId};

use crate::topics::status::{
    can_write_safely, should_apply_read_task_status, State, Status, StatusKey, StatusRecord,
    TopicStatus,
};

/// The worker property naming the status topic.
pub const STATUS_TOPIC_KEY: &str = "status.storage.topic";

/// Partitions of a created status topic (Kafka's default for `status.storage.topic`).
pub const DEFAULT_PARTITIONS: i32 = 5;

/// The wait before a failed status write is sent again.
const STATUS_RETRY_BACKOFF: Duration = Duration::from_millis(500);

/// What the status topic holds, as read back from it.
#[derive(Debug, Default)]
struct Cache {
    connectors: HashMap<String, Status>,
    tasks: HashMap<TaskId, Status>,
    /// Per connector: the topics it used.
    topics: HashMap<String, BTreeMap<String, TopicStatus>>,
}

impl Cache {
    /// Java's `read*Status`: a record read from the topic, from any worker.
    fn apply(&mut self, record: StatusRecord) {
        match record {
            StatusRecord::Connector { connector, status } => {
                self.connectors.insert(connector, status);
            }
            StatusRecord::Task { id, status } => {
                if should_apply_read_task_status(self.tasks.get(&id), &status) {
                    self.tasks.insert(id, status);
                } else {
                    tracing::trace!(task = %format!("{}-{}", id.connector, id.task),
                        "ignoring a stale UNASSIGNED status of a running task");
                }
            }
            StatusRecord::Topic {
                topic,
                connector,
                status,
            } => {
                self.topics
                    .entry(connector)
                    .or_default()
                    .insert(topic, status);
            }
            StatusRecord::Tombstone(StatusKey::Connector(connector)) => {
                self.connectors.remove(&connector);
            }
            StatusRecord::Tombstone(StatusKey::Task(id)) => {
                self.tasks.remove(&id);
            }
            StatusRecord::Tombstone(StatusKey::Topic { topic, connector }) => {
                if let Some(topics) = self.topics.get_mut(&connector) {
                    topics.remove(&topic);
                    if topics.is_empty() {
                        self.topics.remove(&connector);
                    }
                }
            }
        }
    }
}

/// The status topic as connect-runtime's [`StatusStore`]: tasks and the
/// herder write states through it, each write carrying this worker's id
/// and the current group generation; the topic's follower applies the
/// records of every worker, with Java's rule against a previous owner's
/// late `UNASSIGNED`. Reads return what was read back from the topic, so
/// a write shows once the follower has applied it
/// ([`KafkaStatusStore::read_to_end`] waits for that).
///
/// The trait's methods are synchronous: records are queued to the producer
/// at once, in call order (so writes of one key keep their order), and
/// their acknowledgements are awaited on spawned tasks. A write that fails
/// with a retriable error is sent again, as Java's store does, as long as
/// it is still the latest write of its key in the same generation (an
/// older status sent again would overwrite a newer one).
/// Create the store inside a tokio runtime.
pub struct KafkaStatusStore {
    log: Arc<KafkaLog>,
    cache: Arc<Mutex<Cache>>,
    worker_id: String,
    generation: Arc<AtomicI32>,
    /// Per key: the sequence number of its latest write.
    latest: Arc<Mutex<HashMap<String, u64>>>,
    next_sequence: AtomicU64,
    /// Per connector: the plugin version written into its statuses and its
    /// tasks' (Java writes `worker.connectorVersion` / `taskVersion`).
    versions: Mutex<HashMap<String, String>>,
    runtime: tokio::runtime::Handle,
}

impl std::fmt::Debug for KafkaStatusStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KafkaStatusStore")
            .field("topic", &self.log.topic())
            .field("worker_id", &self.worker_id)
            .finish_non_exhaustive()
    }
}

fn lock<T>(cache: &Mutex<T>) -> MutexGuard<'_, T> {
    // Every change replaces whole entries, so a poisoned cache is usable.
    cache.lock().unwrap_or_else(|e| e.into_inner())
}

fn summary(status: Option<&Status>) -> (State, Option<String>) {
    status.map_or((State::Unassigned, None), |s| {
        // A destroyed status is deleted; Java reports it as unassigned.
        let state = match s.state {
            State::Destroyed => State::Unassigned,
            state => state,
        };
        (state, s.trace.clone())
    })
}

use connect_runtime::kafka::time::now_ms;

impl KafkaStatusStore {
    /// Open the store on `topic` (compacted, created when missing with
    /// `partitions` and `replication_factor`), read it to its end and
    /// follow it. `worker_id` is this worker's REST `host:port`, written
    /// into every status.
    pub async fn open(
        cluster: &dyn KafkaCluster,
        client: &ClientConfig,
        topic: &str,
        partitions: i32,
        replication_factor: i16,
        worker_id: impl Into<String>,
        timeout: Duration,
    ) -> Result<KafkaStatusStore> {
        let cache = Arc::new(Mutex::new(Cache::default()));
        let applied = Arc::clone(&cache);
        let spec = LogSpec::new(topic, STATUS_TOPIC_KEY, partitions, replication_factor);
        let apply = move |r: &ConsumedRecord| {
            let Some(key) = r.key.as_deref() else {
                return;
            };
            match StatusRecord::decode(key, r.value.as_deref()) {
                Ok(record) => lock(&applied).apply(record),
                // Java logs records it cannot read and goes on.
                Err(e) => tracing::warn!(topic = %r.topic, partition = r.partition,
                    offset = r.offset, error = %e, "skipping a status record"),
            }
        };
        let log = KafkaLog::open(cluster, client, spec, apply, timeout).await?;
        Ok(KafkaStatusStore {
            log: Arc::new(log),
            cache,
            worker_id: worker_id.into(),
            generation: Arc::new(AtomicI32::new(-1)),
            latest: Arc::default(),
            next_sequence: AtomicU64::new(0),
            versions: Mutex::new(HashMap::new()),
            runtime: tokio::runtime::Handle::current(),
        })
    }

    /// The group generation written into statuses from now on (set after
    /// each rebalance).
    pub fn set_generation(&self, generation: i32) {
        self.generation.store(generation, Ordering::SeqCst);
    }

    /// The plugin version written into the statuses of `connector` and its
    /// tasks from now on (`None`: JSON null, as Java writes when it does not
    /// know the version).
    pub fn set_version(&self, connector: &str, version: Option<String>) {
        let mut versions = lock(&self.versions);
        match version {
            Some(v) => versions.insert(connector.to_string(), v),
            None => versions.remove(connector),
        };
    }

    /// The generation written into statuses.
    pub fn generation(&self) -> i32 {
        self.generation.load(Ordering::SeqCst)
    }

    /// This worker's id, as written into statuses.
    pub fn worker_id(&self) -> &str {
        &self.worker_id
    }

    /// The stored status of connector `name` (state, trace, the worker that
    /// wrote it, its generation and version), as read from the topic.
    pub fn connector_status(&self, name: &str) -> Option<Status> {
        lock(&self.cache).connectors.get(name).cloned()
    }

    /// The stored status of task `id`, as read from the topic.
    pub fn task_status(&self, id: &TaskId) -> Option<Status> {
        lock(&self.cache).tasks.get(id).cloned()
    }

    /// The stored statuses of `connector`'s tasks, by task number.
    pub fn task_statuses(&self, connector: &str) -> BTreeMap<u32, Status> {
        lock(&self.cache)
            .tasks
            .iter()
            .filter(|(id, _)| id.connector == connector)
            .map(|(id, s)| (id.task, s.clone()))
            .collect()
    }

    /// Wait until every status written before this call (by any worker,
    /// this one's queued writes included) is applied.
    pub async fn read_to_end(&self) -> Result<()> {
        self.log.flush().await?;
        self.log.read_to_end().await
    }

    /// Stop following the topic and close its clients, once the queued
    /// writes are acknowledged.
    pub async fn close(self) -> Result<()> {
        match Arc::try_unwrap(self.log) {
            Ok(log) => log.close().await,
            // Acknowledgement tasks still hold the log: it closes with them.
            Err(log) => log.flush().await,
        }
    }

    fn status(&self, connector: &str, state: State, trace: Option<String>) -> Status {
        Status {
            state,
            trace,
            worker_id: self.worker_id.clone(),
            generation: self.generation(),
            version: lock(&self.versions).get(connector).cloned(),
        }
    }

    /// Java's `putSafe`: skipped when another worker wrote the key in a
    /// later generation (this worker's view is stale).
    fn write_safely(&self, record: StatusRecord, cached: Option<Status>, incoming: &Status) {
        if can_write_safely(cached.as_ref(), incoming) {
            self.write(record);
        } else {
            tracing::debug!(key = %record.key().encode(), "not overwriting a status of a later generation");
        }
    }

    /// Queue `record` now (keeping call order per key); send it again
    /// after a retriable failure while it is still its key's latest write
    /// in this generation; log what fails for good.
    fn write(&self, record: StatusRecord) {
        let (key, value) = record.encode();
        let sequence = self.next_sequence.fetch_add(1, Ordering::Relaxed);
        lock(&self.latest).insert(key.clone(), sequence);
        let generation = self.generation();
        let queued = self
            .log
            .send_nowait(Some(key.as_bytes()), value.as_deref(), None);
        let log = Arc::clone(&self.log);
        let latest = Arc::clone(&self.latest);
        let current_generation = Arc::clone(&self.generation);
        self.runtime.spawn(async move {
            let mut result = match queued {
                Ok(pending) => pending.wait().await,
                Err(e) => Err(e),
            };
            while let Err(e) = &result {
                let still_current = lock(&latest).get(&key) == Some(&sequence)
                    && current_generation.load(Ordering::SeqCst) == generation;
                if !e.is_retriable() || !still_current {
                    break;
                }
                tracing::debug!(key, error = %e, "writing a status failed; sending it again");
                tokio::time::sleep(STATUS_RETRY_BACKOFF).await;
                // A full producer queue also lands here: `send` waits for
                // room. The record may then pass a later one of its key,
                // which the check above then stops from being sent again.
                result = log.send(Some(key.as_bytes()), value.as_deref(), None).await;
            }
            if let Err(e) = result {
                tracing::warn!(key, error = %e, "writing a status failed");
            }
        });
    }

    fn put_task(&self, id: &TaskId, state: State, trace: Option<String>) {
        let status = self.status(&id.connector, state, trace);
        // Java's herder writes a task leaving this worker (UNASSIGNED)
        // safely: a new owner's status of a later generation stays.
        if state == State::Unassigned {
            let cached = self.task_status(id);
            self.write_safely(
                StatusRecord::task(id.clone(), status.clone()),
                cached,
                &status,
            );
        } else {
            self.write(StatusRecord::task(id.clone(), status));
        }
    }
}

impl StatusListener for KafkaStatusStore {
    fn task_state(&self, id: &TaskId, state: State, trace: Option<String>) {
        self.put_task(id, state, trace);
    }

    fn topic_active(&self, id: &TaskId, topic: &str) {
        let known = lock(&self.cache)
            .topics
            .get(&id.connector)
            .is_some_and(|t| t.contains_key(topic));
        if known {
            return;
        }
        let task = i32::try_from(id.task).unwrap_or(i32::MAX);
        self.write(StatusRecord::topic(TopicStatus {
            topic: topic.to_string(),
            connector: id.connector.clone(),
            task,
            discover_timestamp: now_ms(),
        }));
    }
}

impl StatusStore for KafkaStatusStore {
    fn put_connector(&self, name: &str, state: State, trace: Option<String>) {
        let status = self.status(name, state, trace);
        let record = StatusRecord::connector(name, status.clone());
        if state == State::Unassigned {
            let cached = self.connector_status(name);
            self.write_safely(record, cached, &status);
        } else {
            self.write(record);
        }
    }

    fn connector(&self, name: &str) -> (State, Option<String>) {
        summary(lock(&self.cache).connectors.get(name))
    }

    fn task(&self, id: &TaskId) -> (State, Option<String>) {
        summary(lock(&self.cache).tasks.get(id))
    }

    /// Tombstones for the connector's tasks and the connector itself, as
    /// Java's herder writes `DESTROYED` statuses on deletion.
    fn forget(&self, name: &str) {
        let tasks: Vec<TaskId> = lock(&self.cache)
            .tasks
            .keys()
            .filter(|id| id.connector == name)
            .cloned()
            .collect();
        for id in tasks {
            self.write(StatusRecord::Tombstone(StatusKey::Task(id)));
        }
        self.write(StatusRecord::Tombstone(StatusKey::Connector(
            name.to_string(),
        )));
        self.reset_topics(name);
    }

    fn topics(&self, name: &str) -> Vec<String> {
        lock(&self.cache)
            .topics
            .get(name)
            .map(|t| t.keys().cloned().collect())
            .unwrap_or_default()
    }

    fn reset_topics(&self, name: &str) {
        for topic in self.topics(name) {
            self.write(StatusRecord::Tombstone(StatusKey::Topic {
                topic,
                connector: name.to_string(),
            }));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use connect_runtime::kafka::memory::MemoryKafka;

    async fn open(kafka: &MemoryKafka, worker: &str) -> KafkaStatusStore {
        KafkaStatusStore::open(
            kafka,
            &ClientConfig::new(),
            "connect-status",
            DEFAULT_PARTITIONS,
            1,
            worker,
            Duration::from_secs(30),
        )
        .await
        .unwrap()
    }

    fn task(n: u32) -> TaskId {
        TaskId {
            connector: "files".into(),
            task: n,
        }
    }

    #[tokio::test(start_paused = true)]
    async fn statuses_of_both_workers_reach_both_stores() {
        let kafka = MemoryKafka::new();
        let w1 = open(&kafka, "w1:8083").await;
        let w2 = open(&kafka, "w2:8083").await;
        w1.set_generation(3);
        w2.set_generation(3);
        w1.put_connector("files", State::Running, None);
        w1.task_state(&task(0), State::Running, None);
        w2.task_state(&task(1), State::Failed, Some("boom".into()));
        w2.topic_active(&task(1), "lines");
        w1.read_to_end().await.unwrap();
        w2.read_to_end().await.unwrap();
        w1.read_to_end().await.unwrap();
        for store in [&w1, &w2] {
            assert_eq!(store.connector("files"), (State::Running, None));
            assert_eq!(store.task(&task(1)), (State::Failed, Some("boom".into())));
            assert_eq!(store.topics("files"), vec!["lines".to_string()]);
            let status = store.task_status(&TaskId::new("files", 0)).unwrap();
            assert_eq!(
                (status.worker_id.as_str(), status.generation),
                ("w1:8083", 3)
            );
        }
        assert_eq!(w1.task_statuses("files").len(), 2);

        w2.forget("files");
        w2.read_to_end().await.unwrap();
        w1.read_to_end().await.unwrap();
        assert_eq!(w1.connector("files"), (State::Unassigned, None));
        assert_eq!(w1.task(&task(0)), (State::Unassigned, None));
        assert!(w1.topics("files").is_empty());
    }

    /// Java's records carry the plugin version and Java's REST shows the
    /// record's (null when absent): ours write it too, so both show the same.
    #[tokio::test(start_paused = true)]
    async fn statuses_carry_the_connectors_version() {
        let kafka = MemoryKafka::new();
        let w1 = open(&kafka, "w1:8083").await;
        w1.set_version("files", Some("4.4.0".into()));
        w1.put_connector("files", State::Running, None);
        w1.task_state(&task(0), State::Running, None);
        w1.put_connector("other", State::Running, None);
        w1.read_to_end().await.unwrap();
        let connector = w1.connector_status("files").unwrap();
        let task = w1.task_status(&TaskId::new("files", 0)).unwrap();
        assert_eq!(connector.version.as_deref(), Some("4.4.0"));
        assert_eq!(task.version.as_deref(), Some("4.4.0"));
        assert_eq!(w1.connector_status("other").unwrap().version, None);
    }

    #[tokio::test(start_paused = true)]
    async fn a_previous_owners_late_unassigned_does_not_hide_the_new_owner() {
        let kafka = MemoryKafka::new();
        let old_owner = open(&kafka, "w1:8083").await;
        let new_owner = open(&kafka, "w2:8083").await;
        old_owner.set_generation(4);
        old_owner.task_state(&task(0), State::Running, None);
        old_owner.read_to_end().await.unwrap();
        // A rebalance moves the task: generation 5 on the new owner.
        new_owner.set_generation(5);
        new_owner.task_state(&task(0), State::Running, None);
        new_owner.read_to_end().await.unwrap();
        old_owner.read_to_end().await.unwrap();

        // The old owner still thinks it is in generation 4: its safe write
        // of UNASSIGNED is not even sent (a later generation wrote the key).
        old_owner.task_state(&task(0), State::Unassigned, None);
        // Written unsafely (as a worker that has not seen the new status
        // would), a same-or-older-generation UNASSIGNED over RUNNING is
        // ignored by readers.
        let late = old_owner.status("files", State::Unassigned, None);
        old_owner.write(StatusRecord::task(TaskId::new("files", 0), late));
        old_owner.read_to_end().await.unwrap();
        new_owner.read_to_end().await.unwrap();
        for store in [&old_owner, &new_owner] {
            let status = store.task_status(&TaskId::new("files", 0)).unwrap();
            assert_eq!(
                (status.state, status.worker_id.as_str(), status.generation),
                (State::Running, "w2:8083", 5)
            );
        }
        // An UNASSIGNED of a later generation does apply.
        new_owner.set_generation(6);
        new_owner.task_state(&task(0), State::Unassigned, None);
        new_owner.read_to_end().await.unwrap();
        old_owner.read_to_end().await.unwrap();
        assert_eq!(old_owner.task(&task(0)).0, State::Unassigned);
    }

    #[tokio::test(start_paused = true)]
    async fn a_failed_status_write_is_sent_again_unless_a_newer_one_was_made() {
        use connect_runtime::kafka::memory::FaultKind;
        let kafka = MemoryKafka::new();
        let store = open(&kafka, "w1:8083").await;
        store.set_generation(1);
        kafka.fail_next_produce(3, FaultKind::Retriable);
        store.task_state(&task(0), State::Running, None);
        // Paused time: the retries' backoff passes at once.
        for _ in 0..50 {
            store.read_to_end().await.unwrap();
            if store.task(&task(0)).0 == State::Running {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert_eq!(store.task(&task(0)).0, State::Running);

        // A failed RUNNING followed by PAUSED: RUNNING is not sent again
        // over the newer PAUSED.
        kafka.fail_next_produce(1, FaultKind::Retriable);
        store.task_state(&task(1), State::Running, None);
        store.task_state(&task(1), State::Paused, None);
        tokio::time::sleep(STATUS_RETRY_BACKOFF * 10).await;
        store.read_to_end().await.unwrap();
        assert_eq!(store.task(&task(1)).0, State::Paused);

        // A fatal error is not retried.
        kafka.fail_next_produce(1, FaultKind::Fatal);
        store.task_state(&task(2), State::Running, None);
        tokio::time::sleep(STATUS_RETRY_BACKOFF * 10).await;
        store.read_to_end().await.unwrap();
        assert_eq!(store.task(&task(2)).0, State::Unassigned);
    }
}
