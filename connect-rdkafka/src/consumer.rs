//! Consumer on rdkafka's `StreamConsumer`: its context turns rebalances into
//! Assigned/Revoked events that `poll` returns before any record fetched after
//! them.
//!
//! Revoked partitions stay assigned until the poll after the one that
//! returned the event: librdkafka waits for the application's unassign
//! before it rejoins the group, so the task commits and closes them while
//! this member still owns them, as Kafka's `onPartitionsRevoked` does.

use std::borrow::Cow;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ::rdkafka::client::ClientContext;
use ::rdkafka::consumer::{
    BaseConsumer, CommitMode as RdCommitMode, Consumer as _, ConsumerContext, RebalanceProtocol,
    StreamConsumer,
};
use ::rdkafka::message::{BorrowedMessage, Headers, Message, Timestamp};
use ::rdkafka::types::RDKafkaRespErr;
use ::rdkafka::{Offset, TopicPartitionList};
use async_trait::async_trait;
use bytes::{Bytes, BytesMut};
use futures::{FutureExt, StreamExt};
use tokio::sync::Notify;
use tokio::time::Instant;

use super::batch::{BatchQueue, Fetch, Slots};
use super::errors::from_rd;
use super::off_thread::DropOffThread;
use super::producer::offsets_list;
use connect_kafka::{
    CommitMode, ConsumedRecord, Consumer, ConsumerEvent, GroupMetadata, KafkaError, KafkaErrorKind,
    Subscription, TimestampType, TopicPartition, TopicPartitionOffsets,
};

/// Bytes of record data copied into one shared buffer before a new one starts.
const ARENA_CHUNK: usize = 64 * 1024;

/// How often a consumer asks whether a missing subscribed topic exists yet.
const MISSING_TOPIC_LOOK: Duration = Duration::from_secs(1);

/// How long a requested seek may keep failing before `poll` reports it.
const SEEK_DEADLINE: Duration = Duration::from_secs(30);

/// How long `poll` waits between attempts of a seek librdkafka refused.
const SEEK_RETRY: Duration = Duration::from_millis(20);

/// How often the whole assignment is forwarded to the batch queue again
/// (see [`crate::batch`]: librdkafka may drop a forwarding after we made it).
const REFORWARD: Duration = Duration::from_secs(1);

pub(super) struct EventContext {
    events: Mutex<VecDeque<ConsumerEvent>>,
    changed: Notify,
    /// Partitions revoked by the group that librdkafka still holds for us:
    /// given up by [`RdConsumer::release_revoked`].
    revoked: Mutex<Option<TopicPartitionList>>,
    /// Set once the consumer closes: revocations are then given up at once,
    /// since nobody polls for them any more.
    closing: AtomicBool,
    /// The client asked for librdkafka debug lines (`debug`).
    debug: bool,
    /// Where assigned partitions' records go; taken out before the client
    /// is destroyed (the queue must go first).
    batch: Mutex<Option<Arc<BatchQueue>>>,
}

impl EventContext {
    fn pop(&self) -> Option<ConsumerEvent> {
        lock(&self.events).pop_front()
    }

    fn has_events(&self) -> bool {
        !lock(&self.events).is_empty()
    }

    /// Route `tpl`'s records to the batch queue.
    fn forward(&self, tpl: &TopicPartitionList) {
        if let Some(batch) = lock(&self.batch).as_ref() {
            for e in tpl.elements() {
                batch.forward(e.topic(), e.partition());
            }
        }
    }

    fn push(&self, event: ConsumerEvent) {
        lock(&self.events).push_back(event);
        self.changed.notify_one();
    }

    /// Hand librdkafka the partitions it revoked, so the group can go on
    /// rebalancing.
    fn give_up(
        &self,
        consumer: &impl ::rdkafka::consumer::Consumer<Self>,
        tpl: &TopicPartitionList,
    ) {
        let result = match consumer.rebalance_protocol() {
            RebalanceProtocol::Cooperative => consumer.incremental_unassign(tpl),
            _ => consumer.unassign(),
        };
        if let Err(e) = result {
            tracing::warn!(error = %e, "giving up revoked partitions failed");
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl ClientContext for EventContext {
    fn log(&self, level: ::rdkafka::config::RDKafkaLogLevel, fac: &str, message: &str) {
        crate::client_log::forward(self.debug, level, fac, message);
    }
}

impl ConsumerContext for EventContext {
    // Replaces rust-rdkafka's default, which unassigns revoked partitions
    // inside the callback: by the time the task saw the event they were gone
    // and its commit for them raced the next owner.
    fn rebalance(
        &self,
        consumer: &BaseConsumer<Self>,
        err: RDKafkaRespErr,
        tpl: &mut TopicPartitionList,
    ) {
        match err {
            RDKafkaRespErr::RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS => {
                let result = match consumer.rebalance_protocol() {
                    RebalanceProtocol::Cooperative => consumer.incremental_assign(tpl),
                    _ => consumer.assign(tpl),
                };
                if let Err(e) = result {
                    tracing::warn!(error = %e, "taking assigned partitions failed");
                }
                self.forward(tpl);
                self.push(ConsumerEvent::Assigned(partitions(tpl)));
            }
            RDKafkaRespErr::RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS => {
                // A lost assignment (session expired, member fenced) is
                // already someone else's: nothing to hold on to.
                if self.closing.load(Ordering::SeqCst) || consumer.assignment_lost() {
                    self.give_up(consumer, tpl);
                } else {
                    let mut held = lock(&self.revoked);
                    match held.as_mut() {
                        Some(all) => {
                            for e in tpl.elements() {
                                all.add_partition(e.topic(), e.partition());
                            }
                        }
                        None => *held = Some(tpl.clone()),
                    }
                }
                self.push(ConsumerEvent::Revoked(partitions(tpl)));
            }
            other => {
                tracing::warn!(error = ?other, "consumer group rebalance failed; giving up the assignment");
                self.give_up(consumer, tpl);
            }
        }
    }
}

/// `config` for a consumer the caller gave no `group.id`: librdkafka's
/// `assign` refuses to work without one ("Unknown group"), so it gets a
/// name of its own that it never joins (only `subscribe` joins, and the
/// adapter refuses that without the caller's `group.id`) and never commits
/// to (auto commit is off: there is no group of the caller's to commit to).
fn without_group(config: &::rdkafka::ClientConfig) -> ::rdkafka::ClientConfig {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let mut native = config.clone();
    native.set(
        "group.id",
        format!(
            "connect-rs-unjoined-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ),
    );
    native.set("enable.auto.commit", "false");
    native
}

fn partitions(tpl: &TopicPartitionList) -> Vec<TopicPartition> {
    tpl.elements()
        .iter()
        .map(|e| TopicPartition::new(e.topic(), e.partition()))
        .collect()
}

fn partition_list(partitions: &[TopicPartition]) -> TopicPartitionList {
    let mut tpl = TopicPartitionList::with_capacity(partitions.len());
    for tp in partitions {
        tpl.add_partition(&tp.topic, tp.partition);
    }
    tpl
}

pub(super) struct RdConsumer {
    /// Closed off the async threads: leaving the group can take seconds.
    inner: DropOffThread<StreamConsumer<EventContext>>,
    group_id: Option<String>,
    max_poll_records: usize,
    /// Records fetched after a rebalance event was queued: returned after it.
    stash: Vec<ConsumedRecord>,
    topics: HashMap<String, Arc<str>>,
    arena: BytesMut,
    /// Subscribed topics that did not exist at the last look, and when to
    /// ask the cluster about them again.
    missing: Option<(Vec<String>, Instant)>,
    /// The subscribed topic names (empty for a pattern).
    subscribed: Vec<String>,
    /// Seeks librdkafka has not confirmed yet: target offset and the time
    /// of the first request. Records of these partitions are dropped until
    /// the seek is done.
    pending_seeks: HashMap<TopicPartition, (i64, Instant)>,
    /// A Revoked event was returned: its partitions are given up at the
    /// next poll (or close), once the caller has committed and closed them.
    release_due: bool,
    /// The queue assigned partitions forward their records to, taken a
    /// batch at a time (`None` if librdkafka would not make one: then
    /// records come one by one from the consumer's queue).
    batch: Option<Arc<BatchQueue>>,
    slots: Slots,
    /// When the assignment is next forwarded to `batch` again.
    next_reforward: Instant,
}

impl Drop for RdConsumer {
    fn drop(&mut self) {
        self.stop_holding();
        // The batch queue goes before the client: librdkafka's queues
        // must not outlive their client.
        lock(&self.inner.context().batch).take();
        self.batch = None;
    }
}

/// A message of rust-rdkafka's one-by-one poll (records fetched before
/// their partition was forwarded to the batch queue).
impl Fetch for BorrowedMessage<'_> {
    fn topic(&self) -> &str {
        Message::topic(self)
    }
    fn partition(&self) -> i32 {
        Message::partition(self)
    }
    fn offset(&self) -> i64 {
        Message::offset(self)
    }
    fn timestamp(&self) -> Timestamp {
        Message::timestamp(self)
    }
    fn key(&self) -> Option<&[u8]> {
        Message::key(self)
    }
    fn payload(&self) -> Option<&[u8]> {
        Message::payload(self)
    }
    fn headers<'s>(&'s self, mut each: impl FnMut(Cow<'s, str>, Option<&'s [u8]>)) {
        if let Some(headers) = Message::headers(self) {
            for h in headers.iter() {
                each(Cow::Borrowed(h.key), h.value);
            }
        }
    }
}

impl RdConsumer {
    pub(super) fn new(
        config: &::rdkafka::ClientConfig,
        max_poll_records: usize,
    ) -> Result<Self, KafkaError> {
        let context = EventContext {
            events: Mutex::new(VecDeque::new()),
            changed: Notify::new(),
            revoked: Mutex::new(None),
            closing: AtomicBool::new(false),
            debug: crate::client_log::debug_asked(config),
            batch: Mutex::new(None),
        };
        let group_id = config.get("group.id").map(str::to_string);
        let inner: StreamConsumer<EventContext> = match group_id {
            Some(_) => config.create_with_context(context),
            None => without_group(config).create_with_context(context),
        }
        .map_err(|e| from_rd(&e, "creating the consumer"))?;
        let batch = BatchQueue::new(inner.client()).map(Arc::new);
        lock(&inner.context().batch).clone_from(&batch);
        Ok(RdConsumer {
            inner: DropOffThread::new(inner),
            group_id,
            max_poll_records,
            stash: Vec::new(),
            topics: HashMap::new(),
            arena: BytesMut::new(),
            missing: None,
            subscribed: Vec::new(),
            pending_seeks: HashMap::new(),
            release_due: false,
            batch,
            slots: Slots::default(),
            next_reforward: Instant::now() + REFORWARD,
        })
    }

    /// From now on revocations are given up at once, held ones included:
    /// librdkafka's close runs a last revocation and must not wait for a
    /// poll that never comes.
    fn stop_holding(&mut self) {
        self.inner.context().closing.store(true, Ordering::SeqCst);
        self.release_revoked();
    }

    /// Give librdkafka the partitions of the last Revoked event, letting the
    /// group's rebalance go on.
    fn release_revoked(&mut self) {
        self.release_due = false;
        let held = lock(&self.inner.context().revoked).take();
        if let Some(tpl) = held {
            self.inner.context().give_up(&**self.inner, &tpl);
        }
    }

    fn copy(&mut self, data: &[u8]) -> Bytes {
        if data.is_empty() {
            return Bytes::new();
        }
        if self.arena.capacity() - self.arena.len() < data.len() {
            self.arena.reserve(data.len().max(ARENA_CHUNK));
        }
        self.arena.extend_from_slice(data);
        self.arena.split().freeze()
    }

    fn convert(&mut self, m: &impl Fetch) -> ConsumedRecord {
        let topic = match self.topics.get(m.topic()) {
            Some(t) => Arc::clone(t),
            None => {
                let t: Arc<str> = Arc::from(m.topic());
                self.topics.insert(m.topic().to_string(), Arc::clone(&t));
                t
            }
        };
        let (timestamp, timestamp_type) = match m.timestamp() {
            Timestamp::NotAvailable => (None, TimestampType::NoTimestampType),
            Timestamp::CreateTime(t) => (Some(t), TimestampType::CreateTime),
            Timestamp::LogAppendTime(t) => (Some(t), TimestampType::LogAppendTime),
        };
        let key = m.key().map(|k| self.copy(k));
        let value = m.payload().map(|v| self.copy(v));
        let mut headers = Vec::new();
        m.headers(|name, v| headers.push((name.into_owned(), v.map(|v| self.copy(v)))));
        ConsumedRecord {
            topic,
            partition: m.partition(),
            offset: m.offset(),
            timestamp,
            timestamp_type,
            key,
            value,
            headers,
        }
    }

    /// Whether `m` belongs to a partition whose requested seek is not done:
    /// it was fetched from the old position and must not be returned.
    fn awaits_seek(&self, m: &impl Fetch) -> bool {
        !self.pending_seeks.is_empty()
            && self
                .pending_seeks
                .keys()
                .any(|tp| tp.partition == m.partition() && *tp.topic == *m.topic())
    }

    /// Forward the whole assignment to the batch queue again if it is time
    /// (see [`REFORWARD`]).
    fn reforward_if_due(&mut self) {
        let now = Instant::now();
        if now < self.next_reforward {
            return;
        }
        self.next_reforward = now + REFORWARD;
        if let (Some(batch), Ok(assigned)) = (&self.batch, self.inner.assignment()) {
            for e in assigned.elements() {
                batch.forward(e.topic(), e.partition());
            }
        }
    }

    /// Up to `records`' room of what the batch queue holds, converted (those
    /// of partitions awaiting a seek dropped). A fetch error is returned
    /// only when it came with no record.
    fn drain_batch(
        &mut self,
        records: &mut Vec<ConsumedRecord>,
    ) -> Result<(), ::rdkafka::error::KafkaError> {
        let Some(batch) = self.batch.clone() else {
            return Ok(());
        };
        let room = self.max_poll_records.saturating_sub(records.len());
        if room == 0 {
            return Ok(());
        }
        let mut slots = std::mem::take(&mut self.slots);
        let mut error = None;
        batch.drain(&mut slots, room, |m| match m {
            Ok(m) if self.awaits_seek(&m) => {}
            Ok(m) => records.push(self.convert(&m)),
            Err(code) => {
                error.get_or_insert(::rdkafka::error::KafkaError::MessageConsumption(code));
            }
        });
        self.slots = slots;
        match error {
            Some(e) if records.is_empty() => Err(e),
            Some(e) => {
                tracing::warn!(error = %e, "consumer fetch error in a batch; returning the batch");
                Ok(())
            }
            None => Ok(()),
        }
    }

    /// Perform the requested seeks, waiting for librdkafka's answer. A
    /// refused seek is tried again at the next poll; one refused for
    /// [`SEEK_DEADLINE`] fails the poll, so a requested position never
    /// silently turns into the committed one.
    async fn apply_seeks(&mut self) -> Result<(), KafkaError> {
        let mut tpl = TopicPartitionList::with_capacity(self.pending_seeks.len());
        for (tp, (offset, _)) in &self.pending_seeks {
            tpl.add_partition_offset(&tp.topic, tp.partition, Offset::Offset(*offset))
                .map_err(|e| from_rd(&e, format_args!("seek {tp} to {offset}")))?;
        }
        let inner = Arc::clone(&self.inner);
        let answer =
            tokio::task::spawn_blocking(move || inner.seek_partitions(tpl, Duration::from_secs(5)))
                .await
                .map_err(|e| KafkaError::fatal(format!("seek did not finish: {e}")))?;
        let refused: HashMap<TopicPartition, String> = match answer {
            Ok(list) => list
                .elements()
                .iter()
                .filter_map(|e| {
                    e.error().err().map(|err| {
                        (
                            TopicPartition::new(e.topic(), e.partition()),
                            err.to_string(),
                        )
                    })
                })
                .collect(),
            Err(e) => self
                .pending_seeks
                .keys()
                .map(|tp| (tp.clone(), e.to_string()))
                .collect(),
        };
        let now = Instant::now();
        let mut failed = None;
        self.pending_seeks
            .retain(|tp, (offset, since)| match refused.get(tp) {
                None => false,
                Some(reason) => {
                    if now.duration_since(*since) >= SEEK_DEADLINE {
                        failed = Some(format!(
                            "seek {tp} to {offset} was refused for {SEEK_DEADLINE:?}: {reason}"
                        ));
                    }
                    true
                }
            });
        match failed {
            Some(message) => Err(KafkaError::fatal(message)),
            None => Ok(()),
        }
    }

    /// Ask the cluster about the subscribed topics that were missing.
    /// librdkafka refreshes a consumer's metadata only every
    /// `topic.metadata.refresh.interval.ms` (5 minutes), so a topic created
    /// after the subscription would wait that long; any metadata answer
    /// updates the group's view, and the consumer joins the new topic.
    async fn look_for_missing_topics(&mut self) {
        let Some((topics, _)) = self.missing.take() else {
            return;
        };
        let inner = Arc::clone(&self.inner);
        let asked = topics.clone();
        let found = tokio::task::spawn_blocking(move || {
            asked
                .iter()
                .filter(|t| {
                    inner
                        .fetch_metadata(Some(t), Duration::from_secs(2))
                        .is_ok_and(|m| {
                            m.topics()
                                .iter()
                                .any(|mt| mt.error().is_none() && !mt.partitions().is_empty())
                        })
                })
                .count()
        })
        .await
        .unwrap_or(0);
        if found < topics.len() {
            self.missing = Some((topics, Instant::now() + MISSING_TOPIC_LOOK));
        } else {
            tracing::info!(topics = ?topics, "the subscribed topics exist now");
        }
    }

    /// "Subscribed topic not available": librdkafka reports a subscribed
    /// topic that does not exist yet, and joins it once it appears. Kafka's
    /// consumer waits for it too; a sink whose topic is created later is
    /// not a failure.
    fn note_missing(&mut self, e: &::rdkafka::error::KafkaError) {
        if self.missing.is_none() {
            tracing::warn!(error = %e, topics = ?self.subscribed,
                "a subscribed topic does not exist yet; waiting for it");
            self.missing = Some((self.subscribed.clone(), Instant::now()));
        }
    }

    fn group_id(&self, what: &str) -> Result<&str, KafkaError> {
        self.group_id.as_deref().ok_or_else(|| {
            KafkaError::new(
                KafkaErrorKind::Config,
                format!("{what} needs the client property group.id"),
            )
        })
    }
}

#[async_trait]
impl Consumer for RdConsumer {
    fn subscribe(&mut self, subscription: &Subscription) -> Result<(), KafkaError> {
        self.group_id("subscribe")?;
        let result = match subscription {
            Subscription::Topics(topics) => {
                self.subscribed.clone_from(topics);
                let names: Vec<&str> = topics.iter().map(String::as_str).collect();
                self.inner.subscribe(&names)
            }
            // librdkafka treats a name starting with '^' as a regex; anchor
            // both ends so the pattern matches whole names, as Kafka does.
            Subscription::Pattern(pattern) => {
                self.subscribed.clear();
                self.inner.subscribe(&[&format!("^({pattern})$")])
            }
        };
        result.map_err(|e| from_rd(&e, format_args!("subscribe to {subscription:?}")))
    }

    async fn poll(&mut self, timeout: Duration) -> Result<Option<ConsumerEvent>, KafkaError> {
        let deadline = Instant::now() + timeout;
        let inner = Arc::clone(&self.inner);
        if self.release_due {
            self.release_revoked();
        }
        loop {
            if let Some(event) = inner.context().pop() {
                if let ConsumerEvent::Revoked(tps) = &event {
                    // Records fetched before the revocation belong to the
                    // next owner now: it reads them from the commit.
                    self.stash.retain(|r| {
                        !tps.iter()
                            .any(|tp| tp.partition == r.partition && *tp.topic == *r.topic)
                    });
                    for tp in tps {
                        self.pending_seeks.remove(tp);
                    }
                    self.release_due = true;
                }
                return Ok(Some(event));
            }
            if !self.pending_seeks.is_empty() {
                self.apply_seeks().await?;
            }
            self.reforward_if_due();
            let mut stream = inner.stream();
            // Held records first (fetched before the event just returned,
            // or by the wait below); then those on the consumer's own queue,
            // fetched before their partition was forwarded to the batch
            // queue, so older than the batch queue's.
            let mut records = std::mem::take(&mut self.stash);
            while records.len() < self.max_poll_records && !inner.context().has_events() {
                match stream.next().now_or_never() {
                    Some(Some(Ok(m))) if self.awaits_seek(&m) => {}
                    Some(Some(Ok(m))) => records.push(self.convert(&m)),
                    Some(Some(Err(e))) if is_missing_topic(&e) => self.note_missing(&e),
                    Some(Some(Err(e))) if records.is_empty() => {
                        return Err(from_rd(&e, "consumer poll"))
                    }
                    Some(Some(Err(e))) => {
                        tracing::warn!(error = %e, "consumer fetch error after a batch; returning the batch");
                        break;
                    }
                    _ => break,
                }
            }
            if !inner.context().has_events() {
                if let Err(e) = self.drain_batch(&mut records) {
                    return Err(from_rd(&e, "consumer poll"));
                }
            }
            if inner.context().has_events() {
                self.stash = records;
                continue;
            }
            if !records.is_empty() {
                return Ok(Some(ConsumerEvent::Records(records)));
            }
            let next_look = match (&self.missing, self.pending_seeks.is_empty()) {
                (_, false) => Instant::now() + SEEK_RETRY,
                (Some((_, at)), true) => *at,
                (None, true) => deadline,
            }
            .min(self.next_reforward);
            let batch_wake = self.batch.as_ref().map(|b| b.wake().notified());
            let first = tokio::select! {
                biased;
                _ = inner.context().changed.notified() => continue,
                m = stream.next() => m,
                _ = async { batch_wake?.await; Some(()) }, if self.batch.is_some() => continue,
                _ = tokio::time::sleep_until(deadline) => return Ok(None),
                _ = tokio::time::sleep_until(next_look), if next_look < deadline => {
                    drop(stream);
                    if self.missing.as_ref().is_some_and(|(_, at)| *at <= Instant::now()) {
                        self.look_for_missing_topics().await;
                    }
                    continue;
                }
            };
            match first {
                // Held for the next turn of the loop, which returns it with
                // whatever else is queued by then.
                Some(Ok(m)) if self.awaits_seek(&m) => {}
                Some(Ok(m)) => {
                    let record = self.convert(&m);
                    self.stash.push(record);
                }
                Some(Err(e)) if is_missing_topic(&e) => self.note_missing(&e),
                Some(Err(e)) => return Err(from_rd(&e, "consumer poll")),
                None => return Ok(None),
            }
        }
    }

    fn pause(&mut self, partitions: &[TopicPartition]) -> Result<(), KafkaError> {
        self.inner
            .pause(&partition_list(partitions))
            .map_err(|e| from_rd(&e, "pause"))
    }

    fn resume(&mut self, partitions: &[TopicPartition]) -> Result<(), KafkaError> {
        self.inner
            .resume(&partition_list(partitions))
            .map_err(|e| from_rd(&e, "resume"))
    }

    fn seek(&mut self, partition: &TopicPartition, offset: i64) -> Result<(), KafkaError> {
        // Records of this partition fetched before the seek must not be returned.
        self.stash
            .retain(|r| !(*r.topic == *partition.topic && r.partition == partition.partition));
        // librdkafka seeks asynchronously and refuses a partition whose
        // fetcher has not started (right after assignment, where a sink
        // task's open() asks for positions), dropping the error. The next
        // poll performs the seek and waits for its result; until then no
        // record of the partition is returned.
        self.pending_seeks
            .insert(partition.clone(), (offset, Instant::now()));
        Ok(())
    }

    async fn commit(
        &mut self,
        offsets: &TopicPartitionOffsets,
        mode: CommitMode,
    ) -> Result<(), KafkaError> {
        let group = self.group_id("commit")?.to_string();
        if offsets.is_empty() {
            return Ok(());
        }
        let tpl = offsets_list(offsets)?;
        match mode {
            CommitMode::Async => self
                .inner
                .commit(&tpl, RdCommitMode::Async)
                .map_err(|e| from_rd(&e, format_args!("commit for group '{group}'"))),
            CommitMode::Sync => {
                let inner = Arc::clone(&self.inner);
                tokio::task::spawn_blocking(move || inner.commit(&tpl, RdCommitMode::Sync))
                    .await
                    .map_err(|e| {
                        KafkaError::fatal(format!("commit for group '{group}' did not finish: {e}"))
                    })?
                    .map_err(|e| from_rd(&e, format_args!("commit for group '{group}'")))
            }
        }
    }

    async fn committed(
        &mut self,
        partitions: &[TopicPartition],
        timeout: Duration,
    ) -> Result<TopicPartitionOffsets, KafkaError> {
        let group = self.group_id("committed")?.to_string();
        let tpl = partition_list(partitions);
        let inner = Arc::clone(&self.inner);
        let list = tokio::task::spawn_blocking(move || inner.committed_offsets(tpl, timeout))
            .await
            .map_err(|e| {
                KafkaError::fatal(format!(
                    "committed offsets of group '{group}' did not finish: {e}"
                ))
            })?
            .map_err(|e| from_rd(&e, format_args!("committed offsets of group '{group}'")))?;
        Ok(list
            .elements()
            .iter()
            .filter_map(|e| match e.offset() {
                Offset::Offset(o) => Some((TopicPartition::new(e.topic(), e.partition()), o)),
                _ => None,
            })
            .collect())
    }

    fn end_offset(&self, partition: &TopicPartition) -> Option<i64> {
        ffi::cached_high_watermark(self.inner.client(), &partition.topic, partition.partition)
    }

    fn assign(&mut self, partitions: &[(TopicPartition, Option<i64>)]) -> Result<(), KafkaError> {
        if self.inner.subscription().is_ok_and(|s| s.count() > 0) {
            return Err(KafkaError::new(
                KafkaErrorKind::Config,
                "cannot assign partitions to a consumer that subscribed to a group",
            ));
        }
        let mut tpl = TopicPartitionList::with_capacity(partitions.len());
        for (tp, offset) in partitions {
            let offset = offset.map_or(Offset::Beginning, Offset::Offset);
            tpl.add_partition_offset(&tp.topic, tp.partition, offset)
                .map_err(|e| from_rd(&e, format_args!("assign {tp}")))?;
        }
        // Records fetched for an earlier assignment are not wanted any more.
        self.stash.clear();
        self.pending_seeks.clear();
        self.inner
            .assign(&tpl)
            .map_err(|e| from_rd(&e, "assign partitions"))?;
        self.inner.context().forward(&tpl);
        Ok(())
    }

    async fn end_offsets(
        &mut self,
        partitions: &[TopicPartition],
        timeout: Duration,
    ) -> Result<Vec<i64>, KafkaError> {
        let inner = Arc::clone(&self.inner);
        let asked = partitions.to_vec();
        // fetch_watermarks blocks on a broker round trip: never on the
        // async worker thread.
        tokio::task::spawn_blocking(move || {
            asked
                .iter()
                .map(|tp| {
                    inner
                        .fetch_watermarks(&tp.topic, tp.partition, timeout)
                        .map(|(_low, high)| high)
                        .map_err(|e| from_rd(&e, format_args!("end offset of {tp}")))
                })
                .collect()
        })
        .await
        .map_err(|e| KafkaError::fatal(format!("asking for end offsets did not finish: {e}")))?
    }

    fn position(&self, partition: &TopicPartition) -> Option<i64> {
        let tpl = self.inner.position().ok()?;
        let element = tpl.find_partition(&partition.topic, partition.partition)?;
        match element.offset() {
            Offset::Offset(o) => Some(o),
            _ => None,
        }
    }

    fn assignment(&self) -> Result<Vec<TopicPartition>, KafkaError> {
        let tpl = self
            .inner
            .assignment()
            .map_err(|e| from_rd(&e, "assignment"))?;
        let mut tps = partitions(&tpl);
        tps.sort();
        Ok(tps)
    }

    fn group_metadata(&self) -> Option<GroupMetadata> {
        let group = self.group_id.clone()?;
        let metadata = self.inner.group_metadata()?;
        Some(GroupMetadata::new(group).with_adapter_state(Arc::new(metadata)))
    }

    async fn close(&mut self) -> Result<(), KafkaError> {
        self.stop_holding();
        self.inner.unsubscribe();
        self.stash.clear();
        self.pending_seeks.clear();
        Ok(())
    }
}

/// A consumer error saying a subscribed topic does not exist (yet).
fn is_missing_topic(e: &::rdkafka::error::KafkaError) -> bool {
    use ::rdkafka::error::{KafkaError as RdError, RDKafkaErrorCode as Code};
    matches!(
        e,
        RdError::MessageConsumption(Code::UnknownTopicOrPartition | Code::UnknownTopic)
    )
}

/// The one foreign call the safe rdkafka API lacks here: the high watermark
/// librdkafka keeps from fetch responses (`fetch_watermarks` asks the broker
/// and blocks, which a per-batch lag reading must not).
#[allow(unsafe_code)]
mod ffi {
    use std::ffi::CString;

    use ::rdkafka::client::{Client, ClientContext};

    /// `topic`-`partition`'s high watermark as last fetched, if known.
    pub(super) fn cached_high_watermark<C: ClientContext>(
        client: &Client<C>,
        topic: &str,
        partition: i32,
    ) -> Option<i64> {
        let topic = CString::new(topic).ok()?;
        let (mut low, mut high) = (-1i64, -1i64);
        // SAFETY: `client.native_ptr()` is a live rd_kafka_t owned by
        // `client`, which outlives this call; `topic` is a NUL-terminated
        // string that outlives it; `low` and `high` are valid for writes.
        // rd_kafka_get_watermark_offsets only reads the partition's cached
        // offsets under librdkafka's own lock and keeps no pointer.
        let err = unsafe {
            ::rdkafka::bindings::rd_kafka_get_watermark_offsets(
                client.native_ptr(),
                topic.as_ptr(),
                partition,
                &mut low,
                &mut high,
            )
        };
        (err == ::rdkafka::bindings::rd_kafka_resp_err_t::RD_KAFKA_RESP_ERR_NO_ERROR && high >= 0)
            .then_some(high)
    }
}
