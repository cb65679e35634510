//! [`KafkaLog`]: a compacted topic read from its beginning and then
//! followed, as Kafka Connect's `KafkaBasedLog` keeps the config, offsets
//! and status topics of distributed mode.
//!
//! Opening a log creates the topic when it is missing (compacted, with the
//! spec's partitions and replication factor), assigns every partition to a
//! consumer outside any group (nothing is committed: each worker reads the
//! whole topic), and reads it to its end: the end offsets are asked from
//! the cluster first, then records are applied through the caller's
//! callback until every partition reached them. A follower task then keeps
//! applying records as they arrive, written by this worker or any other
//! (Java workers included: the log writes nothing but the caller's
//! records). [`KafkaLog::read_to_end`] waits until everything written
//! before the call has been applied; [`KafkaLog::send`] writes one record
//! and waits for its acknowledgement (`acks=all`).
//!
//! Only the Kafka port's traits are used, so the log runs on the in-memory
//! cluster in tests and on librdkafka in production.
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().enable_all().start_paused(true).build().unwrap().block_on(async {
//! use std::sync::{Arc, Mutex};
//! use std::time::Duration;
//! use connect_runtime::kafka::{memory::MemoryKafka, ClientConfig};
//! use connect_runtime::kafka_log::{KafkaLog, LogSpec};
//!
//! let kafka = MemoryKafka::new();
//! let seen = Arc::new(Mutex::new(Vec::new()));
//! let sink = seen.clone();
//! let log = KafkaLog::open(
//!     &kafka,
//!     &ClientConfig::new(),
//!     LogSpec::new("connect-status", "status.storage.topic", 5, 1),
//!     move |r| sink.lock().unwrap().push(r.value.clone()),
//!     Duration::from_secs(30),
//! )
//! .await?;
//! log.send(Some(b"k"), Some(b"v"), None).await?;
//! log.read_to_end().await?;
//! assert_eq!(seen.lock().unwrap().len(), 1);
//! # Ok::<(), connect_api::ConnectError>(())
//! # }).unwrap();
//! ```

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use connect_api::{ConnectError, Result};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use crate::kafka::{
    ClientConfig, ConsumedRecord, Consumer, ConsumerEvent, CreateTopicOutcome, Delivered,
    DeliverySink, KafkaCluster, KafkaError, NewTopic, OutRecord, Producer, SendError,
    TopicPartition,
};

/// How long one follower poll waits before it looks at its positions again.
const POLL: Duration = Duration::from_millis(500);
/// Pause after a failed poll, so a broker that is down is not hammered.
const POLL_BACKOFF: Duration = Duration::from_secs(1);
/// Pause before sending again when the producer's queue is full.
const QUEUE_FULL_BACKOFF: Duration = Duration::from_millis(5);

/// The topic a [`KafkaLog`] keeps, and how to create it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogSpec {
    /// Topic name.
    pub topic: String,
    /// The worker property naming the topic (`config.storage.topic`, ...):
    /// errors about the topic name it, so the user knows what to fix.
    pub topic_key: String,
    /// Partitions when the log creates the topic.
    pub partitions: i32,
    /// Replication factor when the log creates the topic (`-1`: the broker's default).
    pub replication_factor: i16,
    /// Topic configs when the log creates the topic, besides
    /// `cleanup.policy=compact` which is always set.
    pub topic_configs: BTreeMap<String, String>,
}

impl LogSpec {
    /// A spec for `topic` (named by the worker property `topic_key`) with
    /// `partitions` and `replication_factor`, no extra topic configs.
    pub fn new(
        topic: impl Into<String>,
        topic_key: impl Into<String>,
        partitions: i32,
        replication_factor: i16,
    ) -> Self {
        LogSpec {
            topic: topic.into(),
            topic_key: topic_key.into(),
            partitions,
            replication_factor,
            topic_configs: BTreeMap::new(),
        }
    }
}

/// Hands each acknowledgement to the writer waiting for it. Not
/// [`DeliveryWaiter`](crate::kafka::DeliveryWaiter): that one also keeps
/// every failure until its `idle` is called, which a log that lives as long
/// as the worker would accumulate.
#[derive(Default)]
struct AckRoutes {
    waiting: std::sync::Mutex<HashMap<u64, AckSender>>,
}

/// Where an acknowledged record landed: its partition and offset.
type Landed = (i32, i64);

type AckSender = oneshot::Sender<std::result::Result<Landed, KafkaError>>;

impl AckRoutes {
    fn waiting(&self) -> std::sync::MutexGuard<'_, HashMap<u64, AckSender>> {
        // Inserts and removes leave the map whole: a poisoned one is usable.
        self.waiting.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn watch(&self, token: u64) -> oneshot::Receiver<std::result::Result<Landed, KafkaError>> {
        let (tx, rx) = oneshot::channel();
        self.waiting().insert(token, tx);
        rx
    }

    /// The record was not sent: it will never be acknowledged.
    fn forget(&self, token: u64) {
        self.waiting().remove(&token);
    }
}

impl DeliverySink for AckRoutes {
    fn delivered(&self, token: u64, result: std::result::Result<Delivered<'_>, KafkaError>) {
        let waiter = self.waiting().remove(&token);
        if let Some(tx) = waiter {
            // The writer may have stopped waiting (timed out): nothing to tell.
            let _ = tx.send(result.map(|d| (d.partition, d.offset)));
        }
    }
}

/// What the follower task is asked to do.
enum Request {
    /// Answer once everything up to the end offsets known now is applied.
    ReadToEnd(oneshot::Sender<Result<()>>),
    /// Answer once the follower's positions reach these offsets (one per
    /// partition).
    ReadTo(Vec<i64>, oneshot::Sender<Result<()>>),
    /// Close the consumer and end.
    Stop,
}

/// A compacted topic read to its end and then followed; see the
/// [module documentation](self).
pub struct KafkaLog {
    topic: String,
    partitions: i32,
    producer: Box<dyn Producer>,
    acks: Arc<AckRoutes>,
    next_token: AtomicU64,
    requests: mpsc::UnboundedSender<Request>,
    follower: Option<JoinHandle<()>>,
    timeout: Duration,
}

impl std::fmt::Debug for KafkaLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KafkaLog")
            .field("topic", &self.topic)
            .field("partitions", &self.partitions)
            .finish_non_exhaustive()
    }
}

/// A record sent by [`KafkaLog::send_nowait`] whose acknowledgement has not
/// been awaited yet.
#[derive(Debug)]
#[must_use = "a write is only known to be stored once its acknowledgement is awaited"]
pub struct PendingWrite {
    ack: oneshot::Receiver<std::result::Result<Landed, KafkaError>>,
    topic: String,
    timeout: Duration,
}

impl PendingWrite {
    /// Wait for the record's acknowledgement, at most the log's timeout.
    pub async fn wait(self) -> Result<()> {
        self.wait_landed().await.map(|_| ())
    }

    /// [`PendingWrite::wait`], returning the partition and offset the
    /// record was written at (for [`KafkaLog::read_past`]).
    pub async fn wait_landed(self) -> Result<(i32, i64)> {
        let topic = self.topic;
        match tokio::time::timeout(self.timeout, self.ack).await {
            Err(_) => Err(ConnectError::retriable(format!(
                "topic '{topic}' did not acknowledge a write within {:?}",
                self.timeout
            ))),
            Ok(Err(_)) => Err(ConnectError::other(format!(
                "the producer of topic '{topic}' closed before acknowledging a write"
            ))),
            Ok(Ok(Err(e))) => {
                Err(ConnectError::from(e).context(format!("cannot write to topic '{topic}'")))
            }
            Ok(Ok(Ok(landed))) => Ok(landed),
        }
    }
}

impl KafkaLog {
    /// Open the log on `spec.topic`: create the topic when missing, read it
    /// to its end applying every record through `apply`, then follow it on
    /// a task that keeps calling `apply` (records in offset order within a
    /// partition). `client` holds the worker's client properties
    /// (`bootstrap.servers`, security); `timeout` bounds each cluster
    /// request, the initial read and every acknowledgement.
    ///
    /// A topic that exists with a `cleanup.policy` without `compact` is
    /// refused with a config error naming `spec.topic_key`, as Kafka
    /// Connect refuses it (the check needs the adapter to report topic
    /// configs; librdkafka's adapter reports none, then it is skipped).
    pub async fn open(
        cluster: &dyn KafkaCluster,
        client: &ClientConfig,
        spec: LogSpec,
        apply: impl FnMut(&ConsumedRecord) + Send + 'static,
        timeout: Duration,
    ) -> Result<KafkaLog> {
        let partitions = ensure_topic(cluster, client, &spec, timeout).await?;
        let topic = spec.topic;

        let mut producer_config = client.clone();
        // A consumer's key (read_committed logs); librdkafka warns of it.
        producer_config.remove("isolation.level");
        producer_config.insert("acks".into(), "all".into());
        // One request in flight keeps records in send order across retries.
        producer_config
            .entry("max.in.flight.requests.per.connection".into())
            .or_insert_with(|| "1".into());
        let acks = Arc::new(AckRoutes::default());
        let producer = cluster.producer(&producer_config, acks.clone())?;

        let mut consumer_config = client.clone();
        // Outside any group: every worker reads every partition, and no
        // offsets are committed for the log.
        consumer_config.remove("group.id");
        consumer_config.remove("group.instance.id");
        consumer_config.insert("enable.auto.commit".into(), "false".into());
        consumer_config.insert("auto.offset.reset".into(), "earliest".into());
        // Never apply an aborted record: an exactly-once cluster's leader
        // (ours or Java's) writes the config topic in transactions, and a
        // zombie's are aborted. librdkafka's default already; Kafka's
        // Java client and the in-memory adapter default to uncommitted.
        consumer_config.insert("isolation.level".into(), "read_committed".into());
        let mut consumer = cluster.consumer(&consumer_config)?;
        let tps: Vec<TopicPartition> = (0..partitions)
            .map(|p| TopicPartition::new(topic.as_str(), p))
            .collect();
        let from_start: Vec<(TopicPartition, Option<i64>)> =
            tps.iter().map(|tp| (tp.clone(), None)).collect();
        consumer
            .assign(&from_start)
            .map_err(|e| ConnectError::from(e).context(format!("cannot read topic '{topic}'")))?;

        let (requests, rx) = mpsc::unbounded_channel();
        let follower = Follower {
            topic: topic.clone(),
            positions: vec![0; tps.len()],
            partitions: tps,
            consumer,
            apply: Box::new(apply),
            waiting: Vec::new(),
            timeout,
        };
        let log = KafkaLog {
            topic,
            partitions,
            producer,
            acks,
            next_token: AtomicU64::new(0),
            requests,
            follower: Some(tokio::spawn(follower.run(rx))),
            timeout,
        };
        log.read_to_end().await?;
        Ok(log)
    }

    /// The topic name.
    pub fn topic(&self) -> &str {
        &self.topic
    }

    /// The topic's partition count.
    pub fn partitions(&self) -> i32 {
        self.partitions
    }

    /// Wait until every record written to the topic before this call (by
    /// anyone) has been applied: the end offsets are asked from the cluster
    /// now, and the call returns once the follower passed them. Fails when
    /// the end offsets cannot be had or are not reached within the log's
    /// timeout.
    pub async fn read_to_end(&self) -> Result<()> {
        let (tx, rx) = oneshot::channel();
        self.requests
            .send(Request::ReadToEnd(tx))
            .map_err(|_| self.follower_gone())?;
        match tokio::time::timeout(self.timeout, rx).await {
            Err(_) => Err(ConnectError::retriable(format!(
                "did not read topic '{}' to its end within {:?}",
                self.topic, self.timeout
            ))),
            Ok(Err(_)) => Err(self.follower_gone()),
            Ok(Ok(result)) => result,
        }
    }

    /// Wait until the records written at `landed` (partition, offset; as
    /// [`PendingWrite::wait_landed`] returns them) and everything before
    /// them in their partitions are applied. Unlike
    /// [`KafkaLog::read_to_end`], which reads to the end offsets a
    /// `read_committed` reader is told (the last stable offset, before any
    /// open transaction), this waits for the writer's own records even
    /// when another producer's transaction is open before them: they
    /// become readable when it ends.
    pub async fn read_past(&self, landed: &[(i32, i64)]) -> Result<()> {
        let mut ends = vec![0i64; usize::try_from(self.partitions).unwrap_or(0)];
        for &(partition, offset) in landed {
            let end = usize::try_from(partition)
                .ok()
                .and_then(|p| ends.get_mut(p))
                .ok_or_else(|| {
                    ConnectError::other(format!(
                        "topic '{}' has no partition {partition} to read past",
                        self.topic
                    ))
                })?;
            *end = (*end).max(offset + 1);
        }
        let (tx, rx) = oneshot::channel();
        self.requests
            .send(Request::ReadTo(ends, tx))
            .map_err(|_| self.follower_gone())?;
        match tokio::time::timeout(self.timeout, rx).await {
            Err(_) => Err(ConnectError::retriable(format!(
                "did not read topic '{}' past its own writes within {:?} (a transaction \
                 left open before them holds them back until it ends)",
                self.topic, self.timeout
            ))),
            Ok(Err(_)) => Err(self.follower_gone()),
            Ok(Ok(result)) => result,
        }
    }

    fn follower_gone(&self) -> ConnectError {
        ConnectError::other(format!("the reader of topic '{}' has stopped", self.topic))
    }

    /// Queue one record (a `None` value is a tombstone; a `None` partition
    /// lets the key choose, as Kafka's partitioner does) and return its
    /// pending acknowledgement. Records queued in order are written in
    /// order. Fails at once when the producer refuses the record, also when
    /// its queue is full (retriable).
    pub fn send_nowait(
        &self,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
        partition: Option<i32>,
    ) -> Result<PendingWrite> {
        self.try_send(key, value, partition)?.ok_or_else(|| {
            ConnectError::retriable(format!(
                "the producer queue of topic '{}' is full",
                self.topic
            ))
        })
    }

    /// Write one record and wait for its acknowledgement (`acks=all`). A
    /// full producer queue is waited out.
    pub async fn send(
        &self,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
        partition: Option<i32>,
    ) -> Result<()> {
        self.enqueue(key, value, partition).await?.wait().await
    }

    /// Queue one record as [`KafkaLog::send_nowait`] does, but wait (at most
    /// the log's timeout) while the producer's queue is full.
    pub async fn enqueue(
        &self,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
        partition: Option<i32>,
    ) -> Result<PendingWrite> {
        let deadline = tokio::time::Instant::now() + self.timeout;
        loop {
            if let Some(pending) = self.try_send(key, value, partition)? {
                return Ok(pending);
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(ConnectError::retriable(format!(
                    "the producer queue of topic '{}' stayed full for {:?}",
                    self.topic, self.timeout
                )));
            }
            tokio::time::sleep(QUEUE_FULL_BACKOFF).await;
        }
    }

    /// Queue one record: `Ok(None)` when the producer queue is full.
    fn try_send(
        &self,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
        partition: Option<i32>,
    ) -> Result<Option<PendingWrite>> {
        let token = self.next_token.fetch_add(1, Ordering::Relaxed);
        let record = OutRecord {
            partition,
            key,
            ..OutRecord::new(&self.topic, value)
        };
        // Watch before sending, so an ack arriving at once is seen.
        let ack = self.acks.watch(token);
        match self.producer.send(&record, token) {
            Ok(()) => Ok(Some(PendingWrite {
                ack,
                topic: self.topic.clone(),
                timeout: self.timeout,
            })),
            Err(SendError::QueueFull) => {
                self.acks.forget(token);
                Ok(None)
            }
            Err(SendError::Kafka(e)) => {
                self.acks.forget(token);
                Err(ConnectError::from(e)
                    .context(format!("cannot write to topic '{}'", self.topic)))
            }
        }
    }

    /// Wait until every record queued so far is acknowledged or failed (at
    /// most the log's timeout).
    pub async fn flush(&self) -> Result<()> {
        self.producer.flush(self.timeout).await.map_err(|e| {
            ConnectError::from(e).context(format!("flushing the writes to topic '{}'", self.topic))
        })
    }

    /// Wait for the records in flight (at most the log's timeout), stop the
    /// follower and close its consumer.
    pub async fn close(mut self) -> Result<()> {
        let flushed = self.flush().await;
        let _ = self.requests.send(Request::Stop);
        if let Some(follower) = self.follower.take() {
            let _ = follower.await;
        }
        flushed
    }
}

impl Drop for KafkaLog {
    fn drop(&mut self) {
        if let Some(follower) = self.follower.take() {
            follower.abort();
        }
    }
}

/// Create the topic when it is missing; check an existing one is compacted
/// when the adapter reports its configs. Returns its partition count.
async fn ensure_topic(
    cluster: &dyn KafkaCluster,
    client: &ClientConfig,
    spec: &LogSpec,
    timeout: Duration,
) -> Result<i32> {
    let topic = spec.topic.as_str();
    let admin = cluster.admin(client)?;
    // Describe first: creating is only needed once, and some clusters
    // (librdkafka's mock) time out on CreateTopics.
    let mut existing = admin.describe_topic(topic, timeout).await?;
    if existing.is_none() {
        let mut new = NewTopic::new(topic, spec.partitions);
        new.replication_factor = spec.replication_factor;
        new.configs.clone_from(&spec.topic_configs);
        new.configs
            .insert("cleanup.policy".into(), "compact".into());
        let exists = match admin.create_topic(&new, timeout).await {
            Ok(CreateTopicOutcome::Created) => {
                tracing::info!(topic, "created topic");
                true
            }
            // Another worker created it a moment ago.
            Ok(CreateTopicOutcome::AlreadyExists) => true,
            Ok(CreateTopicOutcome::Unsupported { reason }) => {
                tracing::warn!(topic, %reason, "cannot create the topic");
                false
            }
            Err(e) => {
                tracing::warn!(topic, error = %e, "creating the topic failed");
                false
            }
        };
        existing = admin.describe_topic(topic, timeout).await?;
        // A topic created a moment ago (here or by a worker starting at the
        // same time) may not be in the metadata yet: ask again until it is,
        // as Java's KafkaBasedLog retries partitionsFor until its deadline.
        let deadline = tokio::time::Instant::now() + timeout;
        while exists && existing.is_none() && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(100)).await;
            existing = admin.describe_topic(topic, timeout).await?;
        }
    }
    let Some(description) = existing else {
        return Err(ConnectError::config(
            spec.topic_key.clone(),
            format!("topic '{topic}' does not exist and could not be created; create it (compacted) and restart"),
        ));
    };
    if let Some(policy) = description.configs.get("cleanup.policy") {
        if !policy.split(',').any(|p| p.trim() == "compact") {
            return Err(ConnectError::config(
                spec.topic_key.clone(),
                format!("topic '{topic}' has cleanup.policy={policy}; Kafka Connect needs it compacted (cleanup.policy=compact) so that nothing it stores is deleted"),
            ));
        }
    }
    if description.partitions < 1 {
        return Err(ConnectError::config(
            spec.topic_key.clone(),
            format!("topic '{topic}' has no partitions"),
        ));
    }
    Ok(description.partitions)
}

/// The task that owns the consumer and applies records.
struct Follower {
    topic: String,
    partitions: Vec<TopicPartition>,
    /// Next offset to apply per partition (index = partition number).
    positions: Vec<i64>,
    consumer: Box<dyn Consumer>,
    apply: Box<dyn FnMut(&ConsumedRecord) + Send>,
    /// Read-to-end requests: end offsets to reach, and who to tell.
    waiting: Vec<(Vec<i64>, oneshot::Sender<Result<()>>)>,
    timeout: Duration,
}

impl Follower {
    async fn run(mut self, mut requests: mpsc::UnboundedReceiver<Request>) {
        loop {
            // Requests first: a read-to-end must learn the end offsets
            // before records written after it are applied.
            let polled = tokio::select! {
                biased;
                request = requests.recv() => {
                    let mut next = request;
                    let mut asked = Vec::new();
                    // Every request queued now shares one end-offset query.
                    loop {
                        match next {
                            None | Some(Request::Stop) => {
                                let _ = self.consumer.close().await;
                                return;
                            }
                            Some(Request::ReadToEnd(tx)) => asked.push(tx),
                            Some(Request::ReadTo(ends, tx)) => self.waiting.push((ends, tx)),
                        }
                        match requests.try_recv() {
                            Ok(r) => next = Some(r),
                            Err(_) => break,
                        }
                    }
                    if asked.is_empty() {
                        self.learn_positions();
                        self.answer_reached();
                    } else {
                        self.ask_end(asked).await;
                    }
                    continue;
                }
                polled = self.consumer.poll(POLL) => polled,
            };
            match polled {
                Ok(Some(ConsumerEvent::Records(batch))) => {
                    for record in &batch {
                        (self.apply)(record);
                        if let Some(p) = self.position_mut(record.partition) {
                            *p = (*p).max(record.offset + 1);
                        }
                    }
                }
                // No group: assignment events do not come; nothing to do.
                Ok(Some(_)) | Ok(None) => {}
                Err(e) => {
                    tracing::warn!(topic = %self.topic, error = %e, "reading the topic failed; trying again");
                    tokio::time::sleep(POLL_BACKOFF).await;
                }
            }
            self.learn_positions();
            self.answer_reached();
        }
    }

    fn position_mut(&mut self, partition: i32) -> Option<&mut i64> {
        usize::try_from(partition)
            .ok()
            .and_then(|p| self.positions.get_mut(p))
    }

    /// Take the consumer's positions when it knows them: past transaction
    /// markers and compacted gaps, which no record reports.
    fn learn_positions(&mut self) {
        for (tp, position) in self.partitions.iter().zip(self.positions.iter_mut()) {
            if let Some(p) = self.consumer.position(tp) {
                *position = (*position).max(p);
            }
        }
    }

    /// The end offsets, asked again while the cluster answers with a
    /// retriable error (a topic just created has no leader for a moment),
    /// for at most the log's timeout.
    async fn end_offsets(&mut self) -> std::result::Result<Vec<i64>, KafkaError> {
        let deadline = tokio::time::Instant::now() + self.timeout;
        let mut backoff = Duration::from_millis(50);
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            match self.consumer.end_offsets(&self.partitions, left).await {
                Err(e)
                    if (e.is_retriable()
                        || e.kind() == crate::kafka::KafkaErrorKind::UnknownTopicOrPartition)
                        && tokio::time::Instant::now() + backoff < deadline =>
                {
                    tracing::debug!(topic = %self.topic, error = %e, "end offsets not known yet; asking again");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(POLL_BACKOFF);
                }
                other => return other,
            }
        }
    }

    async fn ask_end(&mut self, asked: Vec<oneshot::Sender<Result<()>>>) {
        match self.end_offsets().await {
            Ok(ends) => {
                for tx in asked {
                    self.waiting.push((ends.clone(), tx));
                }
                self.learn_positions();
                self.answer_reached();
            }
            Err(e) => {
                for tx in asked {
                    let _ = tx.send(Err(ConnectError::from(e.clone()).context(format!(
                        "cannot learn the end offsets of topic '{}'",
                        self.topic
                    ))));
                }
            }
        }
    }

    /// Tell the requests whose end offsets were all reached.
    fn answer_reached(&mut self) {
        let positions = &self.positions;
        let (done, open): (Vec<_>, Vec<_>) = std::mem::take(&mut self.waiting)
            .into_iter()
            .partition(|(ends, _)| ends.iter().zip(positions).all(|(end, at)| at >= end));
        self.waiting = open;
        for (_, tx) in done {
            let _ = tx.send(Ok(()));
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;
    use crate::kafka::memory::MemoryKafka;

    type Seen = Arc<Mutex<Vec<(Option<Vec<u8>>, Option<Vec<u8>>)>>>;

    async fn open(kafka: &MemoryKafka, topic: &str) -> (KafkaLog, Seen) {
        let seen: Seen = Arc::default();
        let sink = seen.clone();
        let log = KafkaLog::open(
            kafka,
            &ClientConfig::new(),
            LogSpec::new(topic, "config.storage.topic", 3, 1),
            move |r| {
                sink.lock().unwrap().push((
                    r.key.as_deref().map(<[u8]>::to_vec),
                    r.value.as_deref().map(<[u8]>::to_vec),
                ))
            },
            Duration::from_secs(30),
        )
        .await
        .unwrap();
        (log, seen)
    }

    fn count(seen: &Seen) -> usize {
        seen.lock().unwrap().len()
    }

    /// Acknowledgements nobody waits for.
    struct Unheard;

    impl DeliverySink for Unheard {
        fn delivered(&self, _: u64, _: std::result::Result<Delivered<'_>, KafkaError>) {}
    }

    #[tokio::test(start_paused = true)]
    async fn a_write_is_read_back_past_a_transaction_left_open_before_it() {
        let kafka = MemoryKafka::new();
        let (log, seen) = open(&kafka, "log").await;
        let mut config = ClientConfig::new();
        config.insert("transactional.id".into(), "a-leader".into());
        let other = kafka.producer(&config, Arc::new(Unheard)).unwrap();
        other
            .init_transactions(Duration::from_secs(5))
            .await
            .unwrap();
        other.begin_transaction().unwrap();
        let open_txn = OutRecord {
            partition: Some(0),
            key: Some(b"theirs"),
            ..OutRecord::new("log", Some(b"v"))
        };
        other.send(&open_txn, 0).unwrap();
        other.flush(Duration::from_secs(5)).await.unwrap();

        let landed = log
            .enqueue(Some(b"mine"), Some(b"v"), Some(0))
            .await
            .unwrap()
            .wait_landed()
            .await
            .unwrap();
        let mine = (Some(b"mine".to_vec()), Some(b"v".to_vec()));
        // The end a read_committed reader is told stops before the open
        // transaction: reading to it does not reach this write.
        log.read_to_end().await.unwrap();
        assert!(!seen.lock().unwrap().contains(&mine));
        // Reading past the write waits for the transaction to end.
        let commit = async {
            tokio::time::sleep(Duration::from_secs(1)).await;
            other
                .commit_transaction(Duration::from_secs(5))
                .await
                .unwrap();
        };
        let landed = [landed];
        let (read, ()) = tokio::join!(log.read_past(&landed), commit);
        read.unwrap();
        assert!(seen.lock().unwrap().contains(&mine));
        assert!(log.read_past(&[(7, 0)]).await.is_err(), "no partition 7");
    }

    #[tokio::test(start_paused = true)]
    async fn opening_reads_everything_written_before() {
        let kafka = MemoryKafka::new();
        let (first, _) = open(&kafka, "log").await;
        for i in 0..20u8 {
            first.send(Some(&[i]), Some(b"v"), None).await.unwrap();
        }
        first.send(Some(b"t"), None, Some(2)).await.unwrap();
        let (second, seen) = open(&kafka, "log").await;
        assert_eq!(
            count(&seen),
            21,
            "open returns once the whole topic is applied"
        );
        assert!(seen.lock().unwrap().contains(&(Some(b"t".to_vec()), None)));
        assert_eq!(second.partitions(), 3);
        let description = kafka
            .admin(&ClientConfig::new())
            .unwrap()
            .describe_topic("log", Duration::from_secs(1))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            description
                .configs
                .get("cleanup.policy")
                .map(String::as_str),
            Some("compact")
        );
        second.close().await.unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn the_follower_applies_writes_of_another_instance() {
        let kafka = MemoryKafka::new();
        let (reader, seen) = open(&kafka, "log").await;
        let (writer, _) = open(&kafka, "log").await;
        writer.send(Some(b"a"), Some(b"1"), None).await.unwrap();
        // Without asking: the follower picks the record up by itself.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        while count(&seen) < 1 {
            assert!(
                tokio::time::Instant::now() < deadline,
                "the write never arrived"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        writer.send(Some(b"b"), Some(b"2"), None).await.unwrap();
        reader.read_to_end().await.unwrap();
        assert_eq!(
            seen.lock().unwrap().last(),
            Some(&(Some(b"b".to_vec()), Some(b"2".to_vec()))),
            "read_to_end returns with the other instance's write applied"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_topic_that_is_not_compacted_is_refused() {
        let kafka = MemoryKafka::new();
        kafka
            .create_topic(&NewTopic::new("deleting", 1).config("cleanup.policy", "delete"))
            .unwrap();
        let err = KafkaLog::open(
            &kafka,
            &ClientConfig::new(),
            LogSpec::new("deleting", "status.storage.topic", 1, 1),
            |_| {},
            Duration::from_secs(5),
        )
        .await
        .unwrap_err();
        assert!(err.to_string().contains("status.storage.topic"), "{err}");
        assert!(err.to_string().contains("deleting"), "{err}");
    }

    #[tokio::test(start_paused = true)]
    async fn reading_goes_on_through_retriable_broker_errors() {
        let kafka = MemoryKafka::new();
        let (log, seen) = open(&kafka, "log").await;
        log.send(Some(b"k"), Some(b"v"), None).await.unwrap();
        kafka.fail_next_fetch(3, crate::kafka::memory::FaultKind::Retriable);
        log.send(Some(b"k"), Some(b"w"), None).await.unwrap();
        log.read_to_end().await.unwrap();
        assert_eq!(count(&seen), 2);
    }

    #[tokio::test(start_paused = true)]
    async fn a_failed_write_is_reported() {
        let kafka = MemoryKafka::new();
        let (log, _) = open(&kafka, "log").await;
        kafka.fail_next_produce(1, crate::kafka::memory::FaultKind::Fatal);
        let err = log.send(Some(b"k"), Some(b"v"), None).await.unwrap_err();
        assert!(err.to_string().contains("'log'"), "{err}");
        log.send(Some(b"k"), Some(b"v"), None).await.unwrap();
    }
}
