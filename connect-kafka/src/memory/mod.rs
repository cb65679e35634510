//! The in-memory Kafka: a cluster in the process for tests and benchmarks.
//!
//! It keeps Kafka's semantics where plugin authors can observe them: the
//! default partitioner (murmur2 of the key, sticky for null keys), offsets,
//! CreateTime/LogAppendTime, headers, consumer groups with range assignment
//! and assigned/revoked events, committed offsets, `auto.offset.reset`,
//! compaction on demand, transactions with `read_committed` isolation, and
//! fault injection ([`MemoryKafka::fail_next_produce`] and friends).
//!
//! Producers deliver acknowledgements in batches from a tokio task, so
//! clients must be created inside a tokio runtime; with paused tokio time,
//! injected ack delays and poll timeouts advance deterministically.

mod admin;
mod consumer;
mod group;
mod log;
mod producer;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::Notify;

use self::group::Group;
use self::log::{RecordState, Topic, TxnId};
use super::{
    ClientConfig, ConsumedRecord, CreateTopicOutcome, DeliverySink, KafkaCluster, KafkaError,
    KafkaErrorKind, NewTopic, TopicPartition, TopicPartitionOffsets,
};

/// How an injected fault fails the call it hits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultKind {
    /// A retriable error (as a broker that is briefly unavailable gives).
    Retriable,
    /// A non-retriable error.
    Fatal,
}

impl FaultKind {
    fn error(self, what: &str) -> KafkaError {
        match self {
            FaultKind::Retriable => {
                KafkaError::retriable(format!("injected retriable {what} fault"))
            }
            FaultKind::Fatal => KafkaError::fatal(format!("injected fatal {what} fault")),
        }
    }
}

#[derive(Debug, Default)]
struct FaultCounter {
    remaining: usize,
    kind: Option<FaultKind>,
}

impl FaultCounter {
    fn set(&mut self, n: usize, kind: FaultKind) {
        self.remaining = n;
        self.kind = Some(kind);
    }

    /// The error for this call, when a fault is armed.
    fn take(&mut self, what: &str) -> Option<KafkaError> {
        if self.remaining == 0 {
            return None;
        }
        self.remaining -= 1;
        self.kind.map(|k| k.error(what))
    }
}

#[derive(Debug, Default)]
struct Faults {
    produce: FaultCounter,
    commit: FaultCounter,
    fetch: FaultCounter,
    ack_delay: Duration,
}

/// An open transaction: what it wrote where, and the group offsets it
/// stores if it commits.
#[derive(Debug, Default)]
struct OpenTxn {
    touched: HashMap<(Arc<str>, i32), Vec<i64>>,
    offsets: Vec<(String, TopicPartitionOffsets)>,
    failed: bool,
}

/// The latest producer epoch of a `transactional.id`, and its open transaction.
#[derive(Debug, Default)]
struct TxnIdState {
    epoch: u64,
    open: Option<TxnId>,
}

#[derive(Debug)]
struct State {
    topics: HashMap<Arc<str>, Topic>,
    groups: HashMap<String, Group>,
    txn_ids: HashMap<String, TxnIdState>,
    txns: HashMap<TxnId, OpenTxn>,
    next_txn: TxnId,
    next_member: u64,
    faults: Faults,
    default_partitions: i32,
    auto_create: bool,
}

impl State {
    /// Create `spec` and rebalance groups whose subscriptions it matches.
    fn create_topic(&mut self, spec: &NewTopic) -> Result<CreateTopicOutcome, KafkaError> {
        if self.topics.contains_key(spec.name.as_str()) {
            return Ok(CreateTopicOutcome::AlreadyExists);
        }
        let topic = Topic::new(spec)?;
        self.topics.insert(Arc::clone(&topic.name), topic);
        for group in self.groups.values_mut() {
            group.rebalance(&self.topics);
        }
        Ok(CreateTopicOutcome::Created)
    }

    /// The topic, auto-created with the default partition count when allowed.
    fn topic_or_create(&mut self, name: &str) -> Result<&Topic, KafkaError> {
        if !self.topics.contains_key(name) {
            if !self.auto_create {
                return Err(KafkaError::new(
                    KafkaErrorKind::UnknownTopicOrPartition,
                    format!("topic '{name}' does not exist and auto-creation is disabled; create it first"),
                ));
            }
            self.create_topic(&NewTopic::new(name, self.default_partitions))?;
        }
        self.topics.get(name).ok_or_else(|| {
            KafkaError::new(
                KafkaErrorKind::UnknownTopicOrPartition,
                format!("topic '{name}' does not exist"),
            )
        })
    }

    /// Close transaction `txn`: flip its records, write markers, and on
    /// commit store its group offsets.
    fn finish_txn(&mut self, txn: TxnId, commit: bool) {
        let Some(open) = self.txns.remove(&txn) else {
            return;
        };
        let outcome = if commit {
            RecordState::Committed
        } else {
            RecordState::Aborted
        };
        let now = now_ms();
        for ((topic, partition), offsets) in &open.touched {
            if let Some(t) = self.topics.get_mut(&**topic) {
                let name = Arc::clone(&t.name);
                if let Some(log) = usize::try_from(*partition)
                    .ok()
                    .and_then(|p| t.partitions.get_mut(p))
                {
                    log.finish_txn(offsets, outcome);
                    log.append_marker(&name, *partition, now);
                }
            }
        }
        if commit {
            for (group, offsets) in open.offsets {
                self.groups
                    .entry(group)
                    .or_default()
                    .committed
                    .extend(offsets);
            }
        }
    }
}

struct Inner {
    state: Mutex<State>,
    /// Woken when records, rebalances or leader changes may let a waiting
    /// consumer make progress.
    changed: Notify,
    /// This cluster's id, shaped like Kafka's (22 characters of base64url).
    cluster_id: String,
}

/// A fresh id in Kafka's format: 16 random bytes in unpadded base64url.
fn new_cluster_id() -> String {
    use base64::Engine as _;
    use std::hash::{BuildHasher, Hasher};
    // std's per-instance random hasher keys are the randomness at hand.
    let half = || {
        std::collections::hash_map::RandomState::new()
            .build_hasher()
            .finish()
    };
    let mut bytes = [0u8; 16];
    bytes[..8].copy_from_slice(&half().to_le_bytes());
    bytes[8..].copy_from_slice(&half().to_le_bytes());
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock cannot leave the state half-updated
        // in a way later calls rely on, so keep serving.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// An in-memory Kafka cluster. Cloning gives another handle to the same
/// cluster.
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use std::time::Duration;
/// use connect_kafka::memory::MemoryKafka;
/// use connect_kafka::*;
///
/// struct Acks(Mutex<Vec<(u64, i32, i64)>>);
/// impl DeliverySink for Acks {
///     fn delivered(&self, token: u64, result: Result<Delivered<'_>, KafkaError>) {
///         let d = result.unwrap();
///         self.0.lock().unwrap().push((token, d.partition, d.offset));
///     }
/// }
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let kafka = MemoryKafka::new();
/// kafka.create_topic(&NewTopic::new("orders", 3)).unwrap();
/// let cluster: Arc<dyn KafkaCluster> = Arc::new(kafka.clone());
///
/// let acks = Arc::new(Acks(Mutex::new(Vec::new())));
/// let producer = cluster.producer(&ClientConfig::new(), acks.clone()).unwrap();
/// let mut record = OutRecord::new("orders", Some(b"hello"));
/// record.key = Some(b"21");
/// producer.send(&record, 7).unwrap();
/// producer.flush(Duration::from_secs(5)).await.unwrap();
/// // Where Kafka's default partitioner puts key "21" among 3 partitions.
/// let p = connect_kafka::partitioner::partition_for_key(b"21", 3);
/// assert_eq!(acks.0.lock().unwrap().as_slice(), &[(7, p, 0)]);
///
/// let config = ClientConfig::from([("group.id", "g"), ("auto.offset.reset", "earliest")]);
/// let mut consumer = cluster.consumer(&config).unwrap();
/// consumer.subscribe(&Subscription::Topics(vec!["orders".into()])).unwrap();
/// let mut values = Vec::new();
/// while values.is_empty() {
///     if let Some(ConsumerEvent::Records(records)) = consumer.poll(Duration::from_secs(5)).await.unwrap() {
///         values.extend(records.into_iter().map(|r| r.value));
///     }
/// }
/// assert_eq!(values, [Some(bytes::Bytes::from_static(b"hello"))]);
/// # });
/// ```
#[derive(Clone)]
pub struct MemoryKafka {
    inner: Arc<Inner>,
}

impl Default for MemoryKafka {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for MemoryKafka {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.inner.lock();
        f.debug_struct("MemoryKafka")
            .field("topics", &state.topics.len())
            .field("groups", &state.groups.len())
            .finish()
    }
}

impl MemoryKafka {
    /// An empty cluster that auto-creates topics with 1 partition on first
    /// produce (Kafka's `num.partitions` default).
    pub fn new() -> Self {
        MemoryKafka {
            inner: Arc::new(Inner {
                state: Mutex::new(State {
                    topics: HashMap::new(),
                    groups: HashMap::new(),
                    txn_ids: HashMap::new(),
                    txns: HashMap::new(),
                    next_txn: 1,
                    next_member: 1,
                    faults: Faults::default(),
                    default_partitions: 1,
                    auto_create: true,
                }),
                changed: Notify::new(),
                cluster_id: new_cluster_id(),
            }),
        }
    }

    /// This cluster's id (22 characters of base64url, as Kafka's).
    pub fn cluster_id(&self) -> &str {
        &self.inner.cluster_id
    }

    /// Partitions of auto-created topics (values below 1 count as 1).
    pub fn with_default_partitions(self, partitions: i32) -> Self {
        self.inner.lock().default_partitions = partitions.max(1);
        self
    }

    /// Whether producing to an unknown topic creates it (default true).
    pub fn with_auto_create_topics(self, enabled: bool) -> Self {
        self.inner.lock().auto_create = enabled;
        self
    }

    /// Create a topic (configs `cleanup.policy` and `message.timestamp.type`
    /// are honoured).
    pub fn create_topic(&self, topic: &NewTopic) -> Result<CreateTopicOutcome, KafkaError> {
        let outcome = self.inner.lock().create_topic(topic);
        self.inner.changed.notify_waiters();
        outcome
    }

    /// Partition count of `topic`, if it exists.
    pub fn partitions(&self, topic: &str) -> Option<i32> {
        self.inner
            .lock()
            .topics
            .get(topic)
            .map(Topic::partition_count)
    }

    /// The offset the next record of `topic`-`partition` will get.
    pub fn end_offset(&self, topic: &str, partition: i32) -> Option<i64> {
        let state = self.inner.lock();
        let log = state
            .topics
            .get(topic)?
            .partitions
            .get(usize::try_from(partition).ok()?)?;
        Some(log.end_offset)
    }

    /// The records of `topic`-`partition` a `read_committed` consumer would
    /// read from the start: committed data, no markers, nothing aborted, and
    /// nothing from the first open transaction on.
    pub fn records(&self, topic: &str, partition: i32) -> Vec<ConsumedRecord> {
        let state = self.inner.lock();
        let Some(log) = state
            .topics
            .get(topic)
            .and_then(|t| t.partitions.get(usize::try_from(partition).ok()?))
        else {
            return Vec::new();
        };
        log.records
            .iter()
            .take_while(|s| !matches!(s.state, RecordState::Pending(_)))
            .filter(|s| s.state == RecordState::Committed)
            .map(|s| s.record.clone())
            .collect()
    }

    /// Offsets committed by `group`.
    pub fn committed_offsets(&self, group: &str) -> TopicPartitionOffsets {
        self.inner
            .lock()
            .groups
            .get(group)
            .map(|g| g.committed.clone())
            .unwrap_or_default()
    }

    /// Member ids of `group`, sorted.
    pub fn group_members(&self, group: &str) -> Vec<String> {
        self.inner
            .lock()
            .groups
            .get(group)
            .map(|g| g.members.keys().cloned().collect())
            .unwrap_or_default()
    }

    /// The partitions the last rebalance assigned to `member` of `group`.
    pub fn member_assignment(&self, group: &str, member: &str) -> Vec<TopicPartition> {
        self.inner
            .lock()
            .groups
            .get(group)
            .and_then(|g| g.members.get(member))
            .map(|m| m.target.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// Compact `topic` now: keep the latest record per key (below the first
    /// open transaction), dropping aborted records and markers; with
    /// `remove_tombstones` also drop keys whose latest value is null.
    /// Offsets of the kept records do not change.
    pub fn compact(&self, topic: &str, remove_tombstones: bool) -> Result<(), KafkaError> {
        let mut state = self.inner.lock();
        let t = state.topics.get_mut(topic).ok_or_else(|| {
            KafkaError::new(
                KafkaErrorKind::UnknownTopicOrPartition,
                format!("cannot compact unknown topic '{topic}'"),
            )
        })?;
        if !t.compacted {
            return Err(KafkaError::new(
                KafkaErrorKind::Config,
                format!(
                    "topic '{topic}' is not compacted (cleanup.policy does not contain compact)"
                ),
            ));
        }
        for log in &mut t.partitions {
            log.compact(remove_tombstones);
        }
        Ok(())
    }

    /// Fail the next `n` produced records: their delivery reports `kind`'s
    /// error (as if the producer's own retries were exhausted).
    pub fn fail_next_produce(&self, n: usize, kind: FaultKind) {
        self.inner.lock().faults.produce.set(n, kind);
    }

    /// Fail the next `n` consumer offset commits (sync commits return the
    /// error; async commits log it and store nothing).
    pub fn fail_next_commit(&self, n: usize, kind: FaultKind) {
        self.inner.lock().faults.commit.set(n, kind);
    }

    /// Fail the next `n` consumer polls and end-offset lookups.
    pub fn fail_next_fetch(&self, n: usize, kind: FaultKind) {
        self.inner.lock().faults.fetch.set(n, kind);
    }

    /// Hold every acknowledgement batch for `delay` before writing it
    /// (`Duration::ZERO` turns it off).
    pub fn set_ack_delay(&self, delay: Duration) {
        self.inner.lock().faults.ack_delay = delay;
    }

    /// Take the leader of `topic`-`partition` away: produced records wait
    /// (up to the producer's `delivery.timeout.ms`, then fail as retriable)
    /// and consumers get nothing from it until [`restore_leader`](Self::restore_leader).
    pub fn take_leader_away(&self, topic: &str, partition: i32) -> Result<(), KafkaError> {
        self.set_leader_away(topic, partition, true)
    }

    /// Bring the leader of `topic`-`partition` back.
    pub fn restore_leader(&self, topic: &str, partition: i32) -> Result<(), KafkaError> {
        self.set_leader_away(topic, partition, false)
    }

    fn set_leader_away(&self, topic: &str, partition: i32, away: bool) -> Result<(), KafkaError> {
        {
            let mut state = self.inner.lock();
            let log = state
                .topics
                .get_mut(topic)
                .and_then(|t| t.partitions.get_mut(usize::try_from(partition).ok()?))
                .ok_or_else(|| {
                    KafkaError::new(
                        KafkaErrorKind::UnknownTopicOrPartition,
                        format!("no partition {topic}-{partition}"),
                    )
                })?;
            log.leader_away = away;
        }
        self.inner.changed.notify_waiters();
        Ok(())
    }

    /// Remove `member` from `group` as a session timeout would: its
    /// partitions are reassigned at once; the consumer learns it on its next
    /// poll (its partitions are revoked and it rejoins) and its commits fail
    /// until then. Returns whether the member existed.
    pub fn drop_group_member(&self, group: &str, member: &str) -> bool {
        let removed = {
            let mut state = self.inner.lock();
            let State { groups, topics, .. } = &mut *state;
            match groups.get_mut(group) {
                Some(g) => {
                    let removed = g.members.remove(member).is_some();
                    g.rebalance(topics);
                    removed
                }
                None => false,
            }
        };
        self.inner.changed.notify_waiters();
        removed
    }
}

impl KafkaCluster for MemoryKafka {
    fn producer(
        &self,
        config: &ClientConfig,
        sink: Arc<dyn DeliverySink>,
    ) -> Result<Box<dyn super::Producer>, KafkaError> {
        Ok(Box::new(producer::MemoryProducer::new(
            Arc::clone(&self.inner),
            config,
            sink,
        )?))
    }

    fn consumer(&self, config: &ClientConfig) -> Result<Box<dyn super::Consumer>, KafkaError> {
        Ok(Box::new(consumer::MemoryConsumer::new(
            Arc::clone(&self.inner),
            config,
        )?))
    }

    fn admin(&self, _config: &ClientConfig) -> Result<Box<dyn super::Admin>, KafkaError> {
        Ok(Box::new(admin::MemoryAdmin::new(self.clone())))
    }
}

use crate::time::now_ms;

/// Parse an optional numeric client property.
fn config_number<T: std::str::FromStr>(
    config: &ClientConfig,
    key: &str,
    default: T,
) -> Result<T, KafkaError> {
    match config.get(key) {
        None => Ok(default),
        Some(v) => v.trim().parse().map_err(|_| {
            KafkaError::new(
                KafkaErrorKind::Config,
                format!("client property {key}='{v}' is not a valid number"),
            )
        }),
    }
}
