//! Producer of the in-memory cluster: `send` copies the record into a queue;
//! a tokio task appends each queued batch under one cluster lock and reports
//! the batch's acknowledgements after releasing it.

use std::collections::{HashMap, HashSet, VecDeque};
use std::pin::pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use async_trait::async_trait;
use bytes::{Bytes, BytesMut};
use tokio::sync::Notify;
use tokio::time::Instant;

use super::log::{RecordState, Stored, TxnId};
use super::{config_number, now_ms, Inner, OpenTxn, State};
use crate::partitioner::partition_for_key;
use crate::{
    ClientConfig, ConsumedRecord, Delivered, DeliverySink, GroupMetadata, KafkaError,
    KafkaErrorKind, OutRecord, Producer, SendError, TimestampType, TopicPartitionOffsets,
};

/// Bytes copied into one shared buffer before a new one is started, so
/// records do not cost an allocation each.
const ARENA_CHUNK: usize = 64 * 1024;

/// How often a delivery task re-checks records waiting for a partition leader.
const PARKED_RETRY: Duration = Duration::from_millis(5);

/// A record waiting for its acknowledgement.
struct Pending {
    topic: Arc<str>,
    partition: i32,
    key: Option<Bytes>,
    value: Option<Bytes>,
    timestamp: Option<i64>,
    headers: Vec<(String, Option<Bytes>)>,
    token: u64,
    txn: Option<TxnId>,
}

/// What the producer knows of a topic, and its sticky partition for null keys.
struct TopicMeta {
    name: Arc<str>,
    partitions: i32,
    sticky: Option<i32>,
    sticky_bytes: usize,
}

/// Transactional state of a producer.
#[derive(Default)]
struct TxnLocal {
    id: Option<String>,
    epoch: Option<u64>,
    current: Option<TxnId>,
}

struct Queue {
    pending: Vec<Pending>,
    arena: BytesMut,
    /// Topics this producer sent to, found through `topic_index`; `last`
    /// spares hashing the name when records go to the same topic in a row.
    topics: Vec<TopicMeta>,
    topic_index: HashMap<Arc<str>, usize>,
    last: usize,
    txn: TxnLocal,
}

struct Shared {
    queue: Mutex<Queue>,
    /// Wakes the delivery task when the queue becomes non-empty.
    wake: Notify,
    /// Wakes `flush` when acknowledgements went out.
    acked: Notify,
    outstanding: AtomicUsize,
    closed: AtomicBool,
    /// Set by `flush` and by a full queue: deliver without lingering.
    urgent: AtomicBool,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|p| p.into_inner())
    }
}

pub(super) struct MemoryProducer {
    shared: Arc<Shared>,
    cluster: Arc<Inner>,
    max_outstanding: usize,
    batch_size: usize,
}

impl MemoryProducer {
    pub(super) fn new(
        cluster: Arc<Inner>,
        config: &ClientConfig,
        sink: Arc<dyn DeliverySink>,
    ) -> Result<Self, KafkaError> {
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| {
            KafkaError::new(
                KafkaErrorKind::Config,
                "the in-memory producer must be created inside a tokio runtime (it acknowledges from a task)",
            )
        })?;
        let max_outstanding =
            config_number(config, "queue.buffering.max.messages", 100_000usize)?.max(1);
        let batch_size = config_number(config, "batch.size", 16_384usize)?.max(1);
        let delivery_timeout =
            Duration::from_millis(config_number(config, "delivery.timeout.ms", 120_000u64)?);
        let linger = Duration::from_millis(config_number(config, "linger.ms", 5u64)?);
        let shared = Arc::new(Shared {
            queue: Mutex::new(Queue {
                pending: Vec::new(),
                arena: BytesMut::new(),
                topics: Vec::new(),
                topic_index: HashMap::new(),
                last: 0,
                txn: TxnLocal {
                    id: config.get("transactional.id").cloned(),
                    ..TxnLocal::default()
                },
            }),
            wake: Notify::new(),
            acked: Notify::new(),
            outstanding: AtomicUsize::new(0),
            closed: AtomicBool::new(false),
            urgent: AtomicBool::new(false),
        });
        runtime.spawn(deliver(
            Arc::clone(&shared),
            Arc::clone(&cluster),
            sink,
            Timing {
                linger,
                delivery_timeout,
            },
        ));
        Ok(MemoryProducer {
            shared,
            cluster,
            max_outstanding,
            batch_size,
        })
    }

    /// The transactional id, epoch and open transaction, or why there is none.
    fn txn_state(&self) -> Result<(String, u64, Option<TxnId>), KafkaError> {
        let q = self.shared.lock();
        let id = q.txn.id.clone().ok_or_else(|| {
            KafkaError::new(
                KafkaErrorKind::Config,
                "transactions need the client property transactional.id",
            )
        })?;
        let epoch = q.txn.epoch.ok_or_else(|| {
            KafkaError::fatal(format!(
                "call init_transactions first (transactional.id '{id}')"
            ))
        })?;
        Ok((id, epoch, q.txn.current))
    }

    /// Close the open transaction, committing or aborting it.
    async fn end_txn(&self, commit: bool, timeout: Duration) -> Result<(), KafkaError> {
        let what = if commit { "commit" } else { "abort" };
        let (id, epoch, current) = self.txn_state()?;
        let txn = current.ok_or_else(|| {
            KafkaError::fatal(format!(
                "no transaction to {what} (transactional.id '{id}')"
            ))
        })?;
        self.flush(timeout).await?;
        {
            let mut state = self.cluster.lock();
            check_epoch(&state, &id, epoch)?;
            if commit && state.txns.get(&txn).is_some_and(|t| t.failed) {
                return Err(KafkaError::fatal(format!(
                    "transaction of transactional.id '{id}' had records that failed; abort it"
                )));
            }
            state.finish_txn(txn, commit);
            if let Some(s) = state.txn_ids.get_mut(&id) {
                s.open = None;
            }
        }
        self.shared.lock().txn.current = None;
        self.cluster.changed.notify_waiters();
        Ok(())
    }
}

fn check_epoch(state: &State, id: &str, epoch: u64) -> Result<(), KafkaError> {
    match state.txn_ids.get(id) {
        Some(s) if s.epoch == epoch => Ok(()),
        _ => Err(KafkaError::new(
            KafkaErrorKind::Fenced,
            format!("producer with transactional.id '{id}' was fenced by a newer instance"),
        )),
    }
}

impl Drop for MemoryProducer {
    fn drop(&mut self) {
        self.shared.closed.store(true, Ordering::Release);
        self.shared.wake.notify_one();
    }
}

fn copy(arena: &mut BytesMut, data: &[u8]) -> Bytes {
    if data.is_empty() {
        return Bytes::new();
    }
    if arena.capacity() - arena.len() < data.len() {
        arena.reserve(data.len().max(ARENA_CHUNK));
    }
    arena.extend_from_slice(data);
    arena.split().freeze()
}

#[async_trait]
impl Producer for MemoryProducer {
    fn send(&self, record: &OutRecord<'_>, token: u64) -> Result<(), SendError> {
        if self.shared.outstanding.load(Ordering::Acquire) >= self.max_outstanding {
            self.shared.urgent.store(true, Ordering::Release);
            self.shared.wake.notify_one();
            return Err(SendError::QueueFull);
        }
        let mut guard = self.shared.lock();
        let q = &mut *guard;
        let txn = match (&q.txn.id, q.txn.current) {
            (None, _) => None,
            (Some(_), Some(txn)) => Some(txn),
            (Some(id), None) => {
                return Err(SendError::Kafka(KafkaError::fatal(format!(
                    "transactional producer '{id}' must begin_transaction before sending"
                ))))
            }
        };
        let cached = q
            .topics
            .get(q.last)
            .filter(|m| &*m.name == record.topic)
            .map(|_| q.last)
            .or_else(|| q.topic_index.get(record.topic).copied());
        let index = match cached {
            Some(i) => i,
            None => {
                let mut state = self.cluster.lock();
                let topic = state.topic_or_create(record.topic)?;
                let meta = TopicMeta {
                    name: Arc::clone(&topic.name),
                    partitions: topic.partition_count(),
                    sticky: None,
                    sticky_bytes: 0,
                };
                drop(state);
                self.cluster.changed.notify_waiters();
                q.topic_index.insert(Arc::clone(&meta.name), q.topics.len());
                q.topics.push(meta);
                q.topics.len() - 1
            }
        };
        q.last = index;
        let meta = &mut q.topics[index];
        let partition = match (record.partition, record.key) {
            (Some(p), _) if (0..meta.partitions).contains(&p) => p,
            (Some(p), _) => {
                return Err(SendError::Kafka(KafkaError::new(
                    KafkaErrorKind::UnknownTopicOrPartition,
                    format!(
                        "topic '{}' has {} partitions, no partition {p}",
                        record.topic, meta.partitions
                    ),
                )))
            }
            (None, Some(key)) => partition_for_key(key, meta.partitions),
            (None, None) => {
                // Kafka's uniform sticky partitioner: stay on one partition
                // until a batch worth of bytes went there.
                let size = record.value.map_or(0, <[u8]>::len);
                let p = match meta.sticky {
                    Some(p) if meta.sticky_bytes < self.batch_size => p,
                    previous => {
                        let mut p = crate::time::random_below(meta.partitions as u64) as i32;
                        if meta.partitions > 1 && previous == Some(p) {
                            p = (p + 1) % meta.partitions;
                        }
                        meta.sticky = Some(p);
                        meta.sticky_bytes = 0;
                        p
                    }
                };
                meta.sticky_bytes += size.max(1);
                p
            }
        };
        let topic = Arc::clone(&meta.name);
        let key = record.key.map(|k| copy(&mut q.arena, k));
        let value = record.value.map(|v| copy(&mut q.arena, v));
        let headers = record
            .headers
            .iter()
            .map(|(k, v)| (k.clone(), v.as_deref().map(|v| copy(&mut q.arena, v))))
            .collect();
        let was_empty = q.pending.is_empty();
        q.pending.push(Pending {
            topic,
            partition,
            key,
            value,
            timestamp: record.timestamp,
            headers,
            token,
            txn,
        });
        self.shared.outstanding.fetch_add(1, Ordering::AcqRel);
        drop(guard);
        if was_empty {
            self.shared.wake.notify_one();
        }
        Ok(())
    }

    async fn flush(&self, timeout: Duration) -> Result<(), KafkaError> {
        let deadline = Instant::now() + timeout;
        self.shared.urgent.store(true, Ordering::Release);
        self.shared.wake.notify_one();
        loop {
            let mut acked = pin!(self.shared.acked.notified());
            acked.as_mut().enable();
            let outstanding = self.shared.outstanding.load(Ordering::Acquire);
            if outstanding == 0 {
                return Ok(());
            }
            if tokio::time::timeout_at(deadline, acked).await.is_err() {
                return Err(KafkaError::new(
                    KafkaErrorKind::Timeout,
                    format!("flush timed out after {timeout:?} with {outstanding} records unacknowledged"),
                ));
            }
        }
    }

    async fn init_transactions(&self, _timeout: Duration) -> Result<(), KafkaError> {
        let id = self.shared.lock().txn.id.clone().ok_or_else(|| {
            KafkaError::new(
                KafkaErrorKind::Config,
                "init_transactions needs the client property transactional.id",
            )
        })?;
        let epoch = {
            let mut state = self.cluster.lock();
            let entry = state.txn_ids.entry(id).or_default();
            entry.epoch += 1;
            let epoch = entry.epoch;
            // A newer instance aborts what an older one left open.
            if let Some(open) = entry.open.take() {
                state.finish_txn(open, false);
            }
            epoch
        };
        self.cluster.changed.notify_waiters();
        let mut q = self.shared.lock();
        q.txn.epoch = Some(epoch);
        q.txn.current = None;
        Ok(())
    }

    fn begin_transaction(&self) -> Result<(), KafkaError> {
        let (id, epoch, current) = self.txn_state()?;
        if current.is_some() {
            return Err(KafkaError::fatal(format!(
                "transactional.id '{id}' already has an open transaction"
            )));
        }
        let txn = {
            let mut state = self.cluster.lock();
            check_epoch(&state, &id, epoch)?;
            let txn = state.next_txn;
            state.next_txn += 1;
            state.txns.insert(txn, OpenTxn::default());
            if let Some(s) = state.txn_ids.get_mut(&id) {
                s.open = Some(txn);
            }
            txn
        };
        self.shared.lock().txn.current = Some(txn);
        Ok(())
    }

    async fn send_offsets_to_transaction(
        &self,
        offsets: &TopicPartitionOffsets,
        group: &GroupMetadata,
        _timeout: Duration,
    ) -> Result<(), KafkaError> {
        let (id, epoch, current) = self.txn_state()?;
        let txn = current.ok_or_else(|| {
            KafkaError::fatal(format!(
                "send_offsets_to_transaction needs an open transaction (transactional.id '{id}')"
            ))
        })?;
        let mut state = self.cluster.lock();
        check_epoch(&state, &id, epoch)?;
        let open = state
            .txns
            .get_mut(&txn)
            .ok_or_else(|| KafkaError::fatal(format!("transaction of '{id}' is no longer open")))?;
        open.offsets.push((group.group_id.clone(), offsets.clone()));
        Ok(())
    }

    async fn commit_transaction(&self, timeout: Duration) -> Result<(), KafkaError> {
        self.end_txn(true, timeout).await
    }

    async fn abort_transaction(&self, timeout: Duration) -> Result<(), KafkaError> {
        self.end_txn(false, timeout).await
    }
}

/// Partition, offset and timestamp of a written record, or why it failed.
type Written = Result<(i32, i64, i64), KafkaError>;

/// Outcome of writing one record.
enum Append {
    Written {
        partition: i32,
        offset: i64,
        timestamp: i64,
    },
    Failed(KafkaError),
    /// The partition has no leader: keep the record and try again later.
    Park,
}

/// Write `p` to its partition, moving its bytes into the log.
fn append(state: &mut State, p: &mut Pending, now: i64) -> Append {
    if let Some(txn) = p.txn {
        // A newer instance's init_transactions aborts and removes the
        // transaction, so a missing one means this producer was fenced.
        if !state.txns.contains_key(&txn) {
            return Append::Failed(KafkaError::new(
                KafkaErrorKind::Fenced,
                format!(
                    "record for {}-{} belongs to a fenced or finished transaction",
                    p.topic, p.partition
                ),
            ));
        }
    }
    let Some(topic) = state.topics.get_mut(&*p.topic) else {
        return Append::Failed(KafkaError::new(
            KafkaErrorKind::UnknownTopicOrPartition,
            format!("topic '{}' does not exist", p.topic),
        ));
    };
    let (compacted, log_append_time) = (topic.compacted, topic.log_append_time);
    let Some(log) = usize::try_from(p.partition)
        .ok()
        .and_then(|i| topic.partitions.get_mut(i))
    else {
        return Append::Failed(KafkaError::new(
            KafkaErrorKind::UnknownTopicOrPartition,
            format!("no partition {}-{}", p.topic, p.partition),
        ));
    };
    if log.leader_away {
        return Append::Park;
    }
    if let Some(e) = state.faults.produce.take("produce") {
        return Append::Failed(e.context(format!("produce to {}-{}", p.topic, p.partition)));
    }
    if compacted && p.key.is_none() {
        return Append::Failed(KafkaError::new(
            KafkaErrorKind::InvalidRecord,
            format!(
                "compacted topic '{}' does not accept records with a null key",
                p.topic
            ),
        ));
    }
    let (timestamp, timestamp_type) = if log_append_time {
        (now, TimestampType::LogAppendTime)
    } else {
        (p.timestamp.unwrap_or(now), TimestampType::CreateTime)
    };
    let offset = log.end_offset;
    log.end_offset += 1;
    log.records.push(Stored {
        record: ConsumedRecord {
            topic: Arc::clone(&p.topic),
            partition: p.partition,
            offset,
            timestamp: Some(timestamp),
            timestamp_type,
            key: p.key.take(),
            value: p.value.take(),
            headers: std::mem::take(&mut p.headers),
        },
        state: match p.txn {
            Some(txn) => RecordState::Pending(txn),
            None => RecordState::Committed,
        },
    });
    if let Some(txn) = p.txn {
        if let Some(open) = state.txns.get_mut(&txn) {
            open.touched
                .entry((Arc::clone(&p.topic), p.partition))
                .or_default()
                .push(offset);
        }
    }
    Append::Written {
        partition: p.partition,
        offset,
        timestamp,
    }
}

/// Records queued beyond which the delivery task stops lingering.
const FULL_BATCH: usize = 8192;

/// The producer's `linger.ms` and `delivery.timeout.ms`.
struct Timing {
    linger: Duration,
    delivery_timeout: Duration,
}

/// The delivery task of one producer.
async fn deliver(
    shared: Arc<Shared>,
    cluster: Arc<Inner>,
    sink: Arc<dyn DeliverySink>,
    timing: Timing,
) {
    let Timing {
        linger,
        delivery_timeout,
    } = timing;
    let mut batch: Vec<Pending> = Vec::new();
    let mut parked: VecDeque<(Pending, Instant)> = VecDeque::new();
    let mut results: Vec<(u64, Arc<str>, Written)> = Vec::new();
    let mut blocked: HashSet<(Arc<str>, i32)> = HashSet::new();
    loop {
        let queued = shared.lock().pending.len();
        let closed = shared.closed.load(Ordering::Acquire);
        if queued == 0 {
            if parked.is_empty() {
                if closed {
                    return;
                }
                shared.wake.notified().await;
                continue;
            }
            tokio::select! {
                _ = shared.wake.notified() => {}
                _ = tokio::time::sleep(PARKED_RETRY) => {}
            }
        } else if queued < FULL_BATCH
            && !linger.is_zero()
            && !closed
            && !shared.urgent.swap(false, Ordering::AcqRel)
        {
            // linger.ms: let the batch fill, so one cluster lock and one
            // round of wake-ups serve many records.
            tokio::select! {
                _ = shared.wake.notified() => {}
                _ = tokio::time::sleep(linger) => {}
            }
        }
        std::mem::swap(&mut shared.lock().pending, &mut batch);
        let delay = cluster.lock().faults.ack_delay;
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
        {
            let mut state = cluster.lock();
            let now = now_ms();
            let clock = Instant::now();
            blocked.clear();
            let mut keep = VecDeque::new();
            for (mut p, since) in parked.drain(..).chain(batch.drain(..).map(|p| (p, clock))) {
                // Records behind a parked one wait too, keeping partition order.
                let behind_parked =
                    !blocked.is_empty() && blocked.contains(&(Arc::clone(&p.topic), p.partition));
                let outcome = if behind_parked {
                    Append::Park
                } else {
                    append(&mut state, &mut p, now)
                };
                match outcome {
                    Append::Written {
                        partition,
                        offset,
                        timestamp,
                    } => results.push((p.token, p.topic, Ok((partition, offset, timestamp)))),
                    Append::Failed(e) => {
                        if let Some(txn) = p.txn {
                            if let Some(open) = state.txns.get_mut(&txn) {
                                open.failed = true;
                            }
                        }
                        results.push((p.token, p.topic, Err(e)))
                    }
                    Append::Park if clock.duration_since(since) >= delivery_timeout => {
                        let e = KafkaError::new(
                            KafkaErrorKind::Timeout,
                            format!(
                                "record for {}-{} not acknowledged within delivery.timeout.ms ({} ms): no leader",
                                p.topic,
                                p.partition,
                                delivery_timeout.as_millis()
                            ),
                        );
                        results.push((p.token, p.topic, Err(e)));
                    }
                    Append::Park => {
                        blocked.insert((Arc::clone(&p.topic), p.partition));
                        keep.push_back((p, since));
                    }
                }
            }
            parked = keep;
        }
        if results.is_empty() {
            continue;
        }
        cluster.changed.notify_waiters();
        let acked = results.len();
        for (token, topic, result) in results.drain(..) {
            let result = result.map(|(partition, offset, timestamp)| Delivered {
                topic: &topic,
                partition,
                offset,
                timestamp: Some(timestamp),
            });
            sink.delivered(token, result);
        }
        shared.outstanding.fetch_sub(acked, Ordering::AcqRel);
        shared.acked.notify_waiters();
    }
}
