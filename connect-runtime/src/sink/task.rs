//! `WorkerSinkTask`: drives one sink task.
//!
//! The loop: consume, then key/value/header converters and transforms
//! (Kafka's sink order), then `put` of the batch. Every
//! `offset.flush.interval.ms`, on `request_commit`, on revocation and on
//! stop: await outstanding DLQ sends, `pre_commit`, then commit what it
//! returned, clamped by [`FlushedOffsets`]. Consumer group
//! `connect-<name>`, auto commit off, `auto.offset.reset=earliest`.

use std::collections::BTreeSet;
use std::mem;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use connect_api::config::ConfigMap;
use connect_api::converter::{Converter, HeaderConverter};
use connect_api::sink::{
    ErrantRecordReporter, SinkTask, SinkTaskContext, TopicPartition, TopicPartitionOffsets,
};
use connect_api::{ConnectError, Result, SinkRecord};
use connect_transforms::chain::TransformChain;
use tokio::sync::watch;
use tokio::time::Instant;

use super::commit::FlushedOffsets;
use super::reporter::{reporter_enabled, Reporter, TaskReporter};
use crate::codec;
use crate::converters::TaskConverters;
use crate::errors::dlq::DeadLetterQueue;
use crate::errors::{ErrorConfig, ErrorPipeline, Failure, Stage, Transformed};
use crate::kafka::{
    Admin, ClientConfig, CommitMode, ConsumedRecord, Consumer, ConsumerEvent, KafkaCluster,
    Subscription,
};
use crate::metrics::TaskCall;
use crate::panics::{contain, CallOf};
use crate::status::{StatusListener, TargetState, TaskId};
use crate::task_loop::{flush_timer, report_failure, TargetWatch};

/// Redelivery delay after a retriable `put` failure when the task did not
/// set one with `SinkTaskContext::timeout`.
const DEFAULT_REDELIVERY: Duration = Duration::from_secs(1);

/// How long a stopping task retries a commit that failed retriably. Kept
/// under the worker's default graceful shutdown timeout (5 s), so a task
/// that cannot commit still stops in time.
const FINAL_COMMIT_DEADLINE: Duration = Duration::from_secs(3);

/// What a commit attempt left behind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CommitOutcome {
    /// Committed, nothing to commit, or nothing a retry now would improve
    /// (a failed `pre_commit` rewound to the last commit).
    Settled,
    /// The broker refused for now (a rebalance, a timeout): worth a retry.
    Retriable,
}

/// A batch whose `put` failed with a retriable error, waiting to be put
/// again. Its partitions stay paused meanwhile while the consumer keeps
/// polling (group membership, rebalances, stop), as Kafka's
/// `pausedForRedelivery`.
struct Redelivery {
    batch: Vec<SinkRecord>,
    /// Next offset per partition once the batch is put.
    delivered: TopicPartitionOffsets,
    at: Instant,
}

/// Settings of one sink task.
#[derive(Debug, Clone)]
pub struct SinkTaskSettings {
    /// The task's id.
    pub id: TaskId,
    /// `topics` or `topics.regex`.
    pub subscription: Subscription,
    /// `offset.flush.interval.ms`.
    pub flush_interval: Duration,
    /// The connector's `errors.*` settings.
    pub errors: ErrorConfig,
    /// Consumer properties (`consumer.*`, `consumer.override.*`); group,
    /// auto commit and offset reset get Kafka Connect's defaults unless set.
    pub consumer: ClientConfig,
    /// Producer properties for the DLQ.
    pub producer: ClientConfig,
    /// How long a consumer poll may wait.
    pub poll_timeout: Duration,
    /// Where the loop counts what it does (the worker's, or a detached set).
    pub metrics: Arc<crate::metrics::TaskMetrics>,
    /// How long the task may wait for its group to give it partitions
    /// before it says so at WARN (then again every minute).
    pub assignment_warn_after: Duration,
}

/// The task's standing in its consumer group, for the log: a task that
/// never hears from its group shows RUNNING and would otherwise say nothing.
struct Membership {
    group: String,
    /// An assignment (even an empty one) arrived.
    joined: bool,
    since: Instant,
    warned: Option<Instant>,
}

impl Membership {
    fn assigned(&mut self, id: &TaskId, partitions: &[TopicPartition]) {
        self.joined = true;
        tracing::info!(task = %id, group = %self.group, partitions = %list(partitions),
            "partitions assigned");
    }

    fn revoked(&self, id: &TaskId, partitions: &[TopicPartition]) {
        tracing::info!(task = %id, group = %self.group, partitions = %list(partitions),
            "partitions revoked");
    }

    /// Warn when the group has not answered for `after`, and every minute
    /// while it still has not.
    fn check(&mut self, id: &TaskId, after: Duration) {
        if self.joined {
            return;
        }
        let waited = self.since.elapsed();
        let due = match self.warned {
            None => waited >= after,
            Some(at) => at.elapsed() >= Duration::from_secs(60),
        };
        if due {
            self.warned = Some(Instant::now());
            tracing::warn!(task = %id, group = %self.group, waited_s = waited.as_secs(),
                "no partitions assigned by consumer group '{}' after {} s: the topics may not exist yet, a dead member's session may still be open, or the group coordinator does not answer",
                self.group, waited.as_secs());
        }
    }
}

/// Partitions as `topic-0, topic-1` for the log.
fn list(partitions: &[TopicPartition]) -> String {
    let names: Vec<String> = partitions.iter().map(ToString::to_string).collect();
    names.join(", ")
}

/// The plugins one sink task runs with.
pub struct SinkPlugins {
    /// The task.
    pub task: Box<dyn SinkTask>,
    /// The task configuration from the connector.
    pub task_config: ConfigMap,
    /// The transformation chain (absent when `transforms` is empty).
    pub transforms: Option<TransformChain<SinkRecord>>,
    /// Key, value and header converters, and the DLQ's JSON converter.
    pub converters: TaskConverters,
}

/// Requests a task makes through its context, applied by the loop.
#[derive(Default)]
struct Requests {
    seeks: TopicPartitionOffsets,
    timeout: Option<Duration>,
    pause: Vec<TopicPartition>,
    resume: Vec<TopicPartition>,
    commit: bool,
    assignment: Vec<TopicPartition>,
}

struct Context {
    config: ConfigMap,
    requests: Mutex<Requests>,
    reporter: Option<Arc<dyn ErrantRecordReporter>>,
}

impl Context {
    fn with<T>(&self, f: impl FnOnce(&mut Requests) -> T) -> Option<T> {
        self.requests.lock().ok().map(|mut r| f(&mut r))
    }
}

impl SinkTaskContext for Context {
    fn configs(&self) -> &ConfigMap {
        &self.config
    }
    fn offset(&self, offsets: TopicPartitionOffsets) {
        self.with(|r| r.seeks.extend(offsets));
    }
    fn timeout(&self, timeout_ms: u64) {
        self.with(|r| r.timeout = Some(Duration::from_millis(timeout_ms)));
    }
    fn assignment(&self) -> Vec<TopicPartition> {
        self.with(|r| r.assignment.clone()).unwrap_or_default()
    }
    fn pause(&self, partitions: &[TopicPartition]) {
        self.with(|r| r.pause.extend_from_slice(partitions));
    }
    fn resume(&self, partitions: &[TopicPartition]) {
        self.with(|r| r.resume.extend_from_slice(partitions));
    }
    fn request_commit(&self) {
        self.with(|r| r.commit = true);
    }
    fn errant_record_reporter(&self) -> Option<Arc<dyn ErrantRecordReporter>> {
        self.reporter.clone()
    }
}

/// Drives one sink task until it is stopped or fails.
pub struct WorkerSinkTask {
    settings: SinkTaskSettings,
    task: Box<dyn SinkTask>,
    task_config: ConfigMap,
    transforms: Option<TransformChain<SinkRecord>>,
    key_converter: (Box<dyn Converter>, String),
    value_converter: (Box<dyn Converter>, String),
    header_converter: (Box<dyn HeaderConverter>, String),
    pipeline: ErrorPipeline,
    consumer: Box<dyn Consumer>,
    reporter: Arc<Reporter>,
    context: Arc<Context>,
    status: Arc<dyn StatusListener>,
    control: watch::Receiver<TargetState>,
    /// Next offset to read, per original partition, of what was delivered.
    consumed: TopicPartitionOffsets,
    committed: TopicPartitionOffsets,
    assigned: BTreeSet<TopicPartition>,
    /// Partitions paused by the task (kept paused across a runtime pause).
    task_paused: BTreeSet<TopicPartition>,
    /// Creates the DLQ topic at start; `None` without a DLQ.
    dlq_admin: Option<Box<dyn Admin>>,
    /// When `put` was last called (an idle task gets empty puts).
    last_put: Instant,
    dlq_waits:
        Vec<tokio::sync::oneshot::Receiver<std::result::Result<(), crate::kafka::KafkaError>>>,
    batch: Vec<SinkRecord>,
    /// While set, every assigned partition is paused.
    redelivery: Option<Redelivery>,
    membership: Membership,
}

impl WorkerSinkTask {
    /// Prepare a task: open its consumer (and DLQ producer) on `cluster`.
    pub fn new(
        settings: SinkTaskSettings,
        plugins: SinkPlugins,
        cluster: Arc<dyn KafkaCluster>,
        status: Arc<dyn StatusListener>,
        control: watch::Receiver<TargetState>,
    ) -> Result<Self> {
        let mut consumer_config = settings.consumer.clone();
        for (k, v) in [
            ("group.id", format!("connect-{}", settings.id.connector)),
            ("enable.auto.commit", "false".to_string()),
            ("auto.offset.reset", "earliest".to_string()),
        ] {
            consumer_config.entry(k.to_string()).or_insert(v);
        }
        let group = consumer_config.get("group.id").cloned().unwrap_or_default();
        let mut consumer = cluster.consumer(&consumer_config)?;
        consumer.subscribe(&settings.subscription)?;
        let acks = Arc::new(crate::kafka::DeliveryWaiter::default());
        let dlq = DeadLetterQueue::open(
            cluster.as_ref(),
            &settings.errors,
            &settings.producer,
            acks.clone(),
            true,
        )?;
        let dlq_admin = match dlq {
            Some(_) => Some(cluster.admin(&settings.producer)?),
            None => None,
        };
        let SinkPlugins {
            task,
            task_config,
            transforms,
            converters,
        } = plugins;
        let key_converter = (converters.key, converters.key_class);
        let value_converter = (converters.value, converters.value_class);
        let header_converter = (converters.header, converters.header_class);
        let json = converters.dlq_json;
        let reporter = Arc::new(Reporter::new(
            settings.id.clone(),
            settings.errors.clone(),
            dlq,
            acks,
            json,
        ));
        let task_reporter: Option<Arc<dyn ErrantRecordReporter>> =
            reporter_enabled(&settings.errors)
                .then(|| Arc::new(TaskReporter(reporter.clone())) as Arc<dyn ErrantRecordReporter>);
        let context = Arc::new(Context {
            config: task_config.clone(),
            requests: Mutex::new(Requests::default()),
            reporter: task_reporter,
        });
        Ok(WorkerSinkTask {
            pipeline: ErrorPipeline::new(settings.errors.clone()),
            settings,
            task,
            task_config,
            transforms,
            key_converter,
            value_converter,
            header_converter,
            consumer,
            reporter,
            context,
            status,
            control,
            consumed: TopicPartitionOffsets::new(),
            committed: TopicPartitionOffsets::new(),
            assigned: BTreeSet::new(),
            task_paused: BTreeSet::new(),
            dlq_admin,
            last_put: Instant::now(),
            dlq_waits: Vec::new(),
            batch: Vec::new(),
            redelivery: None,
            membership: Membership {
                group,
                joined: false,
                since: Instant::now(),
                warned: None,
            },
        })
    }

    /// Run until stopped (`Ok`) or failed (`Err`).
    pub async fn run(mut self) -> Result<()> {
        let id = self.settings.id.clone();
        // A panic in the task's plugins fails the task, as any error does.
        let result = crate::panics::contain(format!("sink task {id}"), self.run_inner()).await;
        // The failure that stopped the task counts too.
        let errors = self.pipeline.stats().plus(self.reporter.stats());
        self.settings.metrics.set_errors(&errors);
        if let Err(e) = &result {
            report_failure(&id, e, &self.control, self.status.as_ref(), "sink");
        }
        // As Kafka: the task closes every partition it holds before it
        // stops, after a clean stop (whose commit is done) or a failure
        // (nothing more is committed).
        let held: Vec<_> = mem::take(&mut self.assigned).into_iter().collect();
        if !held.is_empty() {
            let closed = self.task.close(&held);
            if let Err(e) = crate::panics::contain(format!("sink task {id}: close"), closed).await {
                tracing::warn!(task = %id, error = %e, "sink task close failed");
            }
        }
        let stopped = self.task.stop();
        if let Err(e) = crate::panics::contain(format!("sink task {id}: stop"), stopped).await {
            tracing::warn!(task = %id, error = %e, "sink task stop failed");
        }
        let _ = self.consumer.close().await;
        result
    }

    async fn run_inner(&mut self) -> Result<()> {
        let ctx: Arc<dyn SinkTaskContext> = self.context.clone();
        let config = self.task_config.clone();
        if let Some(admin) = self.dlq_admin.take() {
            self.reporter.create_dlq_topic(admin.as_ref()).await?;
        }
        self.task.start(&config, ctx).await?;
        let id = self.settings.id.clone();
        let mut flush = flush_timer(self.settings.flush_interval);
        let mut watch = TargetWatch::default();
        loop {
            let target = *self.control.borrow();
            if watch.changed(target) {
                match target {
                    TargetState::Started => self.set_paused(self.redelivery.is_some())?,
                    TargetState::Paused => self.set_paused(true)?,
                    TargetState::Stopped => {}
                }
                let s = &self.settings;
                TargetWatch::report(target, &s.id, self.status.as_ref(), &s.metrics);
            }
            if target == TargetState::Stopped {
                return self.final_commit().await;
            }
            self.apply_requests(target)?;
            self.membership
                .check(&id, self.settings.assignment_warn_after);
            // As Kafka: a poll that brings no records still calls put, with
            // none, so a sink can act on time (rotate a file, flush a
            // buffer). Polls here are cut short by flushes, so "idle" is
            // no put for a poll timeout.
            let now = Instant::now();
            if let Some(due) = self.redelivery.as_ref().map(|r| r.at) {
                if due <= now {
                    self.redeliver(target).await?;
                    continue;
                }
            } else if now.duration_since(self.last_put) >= self.settings.poll_timeout {
                self.put(Vec::new(), TopicPartitionOffsets::new()).await?;
            }
            if self.context.with(|r| mem::take(&mut r.commit)) == Some(true) {
                self.commit_all().await?;
            }
            let poll_timeout = self.poll_timeout();
            let event = tokio::select! {
                biased;
                changed = self.control.changed() => {
                    if changed.is_err() {
                        return self.final_commit().await;
                    }
                    continue;
                }
                _ = flush.tick() => {
                    self.commit_all().await?;
                    continue;
                }
                event = self.consumer.poll(poll_timeout) => event,
            };
            match event {
                Ok(None) => {}
                Ok(Some(ConsumerEvent::Assigned(tps))) => {
                    self.membership.assigned(&id, &tps);
                    // KIP-558: the topics the task reads are active.
                    let topics: BTreeSet<&str> = tps.iter().map(|tp| &*tp.topic).collect();
                    for topic in topics {
                        self.status.topic_active(&id, topic);
                    }
                    self.assigned.extend(tps.iter().cloned());
                    self.settings
                        .metrics
                        .set_partition_count(self.assigned.len());
                    self.sync_assignment();
                    self.task.open(&tps).await?;
                    if target == TargetState::Paused || self.redelivery.is_some() {
                        self.consumer.pause(&tps)?;
                    } else {
                        // Partitions the task paused stay paused when a
                        // rebalance gives them back.
                        let repause: Vec<_> = tps
                            .iter()
                            .filter(|tp| self.task_paused.contains(*tp))
                            .cloned()
                            .collect();
                        if !repause.is_empty() {
                            self.consumer.pause(&repause)?;
                        }
                    }
                }
                Ok(Some(ConsumerEvent::Revoked(tps))) => {
                    self.membership.revoked(&id, &tps);
                    // Commit what the task flushed, then close: the
                    // consumer holds the partitions until the next poll, so
                    // the next owner starts at this commit. No rewind if
                    // pre_commit fails: the next owner starts from the last
                    // commit.
                    for tp in &tps {
                        self.assigned.remove(tp);
                    }
                    self.settings
                        .metrics
                        .set_partition_count(self.assigned.len());
                    // The next owner reads the waiting records again from
                    // the commit.
                    if let Some(r) = &mut self.redelivery {
                        r.batch.retain(|rec| {
                            !tps.iter().any(|tp| {
                                tp.partition == rec.original_kafka_partition
                                    && tp.topic == rec.original_topic
                            })
                        });
                        for tp in &tps {
                            r.delivered.remove(tp);
                        }
                    }
                    self.commit(&tps).await?;
                    self.task.close(&tps).await?;
                    for tp in &tps {
                        self.consumed.remove(tp);
                        self.committed.remove(tp);
                    }
                    self.sync_assignment();
                }
                Ok(Some(ConsumerEvent::Records(records))) if self.redelivery.is_some() => {
                    // Fetched before the pause: read again after the
                    // waiting batch.
                    self.rewind(&records)?;
                }
                Ok(Some(ConsumerEvent::Records(records))) => self.deliver(records).await?,
                Err(e) if e.is_retriable() => {
                    tracing::warn!(task = %id, error = %e, "retriable consumer failure; polling again");
                }
                Err(e) => return Err(ConnectError::from(e).context("consumer failed")),
            }
        }
    }

    /// How long the next poll may wait: not past a pending redelivery.
    fn poll_timeout(&self) -> Duration {
        match &self.redelivery {
            Some(r) => {
                r.at.saturating_duration_since(Instant::now())
                    .min(self.settings.poll_timeout)
            }
            None => self.settings.poll_timeout,
        }
    }

    /// Seek each partition of `records` back to its first record.
    fn rewind(&mut self, records: &[ConsumedRecord]) -> Result<()> {
        let mut first = TopicPartitionOffsets::new();
        for r in records {
            first
                .entry(TopicPartition::new(r.topic.clone(), r.partition))
                .or_insert(r.offset);
        }
        for (tp, offset) in first {
            self.consumer.seek(&tp, offset)?;
        }
        Ok(())
    }

    fn sync_assignment(&self) {
        let now: Vec<_> = self.assigned.iter().cloned().collect();
        self.context.with(|r| r.assignment = now);
    }

    fn set_paused(&mut self, paused: bool) -> Result<()> {
        let all: Vec<_> = self.assigned.iter().cloned().collect();
        if paused {
            self.consumer.pause(&all)?;
        } else {
            let resume: Vec<_> = all
                .into_iter()
                .filter(|tp| !self.task_paused.contains(tp))
                .collect();
            self.consumer.resume(&resume)?;
        }
        Ok(())
    }

    /// Apply the task's seeks and pause/resume requests.
    fn apply_requests(&mut self, target: TargetState) -> Result<()> {
        let Some((seeks, pause, resume)) = self.context.with(|r| {
            (
                mem::take(&mut r.seeks),
                mem::take(&mut r.pause),
                mem::take(&mut r.resume),
            )
        }) else {
            return Ok(());
        };
        for (tp, offset) in seeks {
            if self.assigned.contains(&tp) {
                self.consumer.seek(&tp, offset)?;
                self.consumed.insert(tp, offset);
            } else {
                tracing::warn!(task = %self.settings.id, partition = %tp,
                    "ignoring a seek on a partition that is not assigned to this task");
            }
        }
        if !pause.is_empty() {
            self.task_paused.extend(pause.iter().cloned());
            self.consumer.pause(&pause)?;
        }
        if !resume.is_empty() {
            for tp in &resume {
                self.task_paused.remove(tp);
            }
            if target != TargetState::Paused {
                self.consumer.resume(&resume)?;
            }
        }
        Ok(())
    }

    /// Convert, transform and `put` one consumed batch.
    async fn deliver(&mut self, records: Vec<ConsumedRecord>) -> Result<()> {
        self.settings.metrics.record_read(records.len());
        let mut batch = mem::take(&mut self.batch);
        batch.clear();
        let mut delivered = TopicPartitionOffsets::new();
        for raw in &records {
            let tp = TopicPartition::new(raw.topic.clone(), raw.partition);
            match delivered.get_mut(&tp) {
                Some(next) => *next = raw.offset + 1,
                None => {
                    // Until the task commits on a partition, where it started
                    // consuming counts as its last commit, so a failed
                    // pre_commit rewinds there and nothing consumed since is
                    // lost (Kafka seeds these from the positions at
                    // assignment).
                    self.committed.entry(tp.clone()).or_insert(raw.offset);
                    delivered.insert(tp, raw.offset + 1);
                }
            }
            let record = match self.convert(raw).await? {
                Ok(record) => record,
                Err(failure) => {
                    self.dead_letter(raw, &failure);
                    continue;
                }
            };
            match &mut self.transforms {
                None => batch.push(record),
                // Nothing can wait: transformed where the record lies in
                // the batch, not moved through the async path.
                Some(chain) if self.pipeline.config().retry_timeout_ms == 0 => {
                    batch.push(record);
                    let Some(last) = batch.last_mut() else {
                        continue;
                    };
                    match self.pipeline.transform_in_place(chain, last)? {
                        Transformed::Kept(()) => {}
                        Transformed::Dropped => {
                            batch.pop();
                        }
                        Transformed::Failed(_, failure) => {
                            batch.pop();
                            self.dead_letter(raw, &failure);
                        }
                    }
                }
                Some(_) => {
                    if let Some(r) = self.transform(raw, record).await? {
                        batch.push(r);
                    }
                }
            }
        }
        self.reporter.set_batch(records);
        let put = self.put(batch, delivered).await;
        let metrics = &self.settings.metrics;
        metrics.set_errors(&self.pipeline.stats().plus(self.reporter.stats()));
        self.count_active();
        put
    }

    /// `sink-record-active-count`: records read and put but not committed.
    fn count_active(&self) {
        let uncommitted: i64 = self
            .consumed
            .iter()
            .map(|(tp, next)| next - self.committed.get(tp).copied().unwrap_or(*next))
            .filter(|n| *n > 0)
            .sum();
        let metrics = &self.settings.metrics;
        metrics.set_active(usize::try_from(uncommitted).unwrap_or(0));
        let lag = self
            .assigned
            .iter()
            .filter_map(|tp| {
                let end = self.consumer.end_offset(tp)?;
                let position = self.consumed.get(tp).or_else(|| self.committed.get(tp))?;
                Some(end - position)
            })
            .max()
            .unwrap_or(0);
        metrics.set_lag_max(u64::try_from(lag).unwrap_or(0));
    }

    /// `put` the batch; once it is accepted its records count as consumed.
    /// A retriable error pauses every assigned partition and keeps the
    /// batch for [`Self::redeliver`] after the task's timeout (Kafka's
    /// semantics); the loop goes on polling meanwhile.
    async fn put(
        &mut self,
        batch: Vec<SinkRecord>,
        delivered: TopicPartitionOffsets,
    ) -> Result<()> {
        self.last_put = Instant::now();
        let in_call = self.settings.metrics.calls.enter(TaskCall::Put);
        let outcome = self.task.put(&batch).await;
        drop(in_call);
        self.settings
            .metrics
            .record_put(batch.len(), self.last_put.elapsed());
        if let Some(fatal) = self.reporter.take_fatal() {
            return Err(fatal);
        }
        match outcome {
            Ok(()) => {
                self.consumed.extend(delivered);
                self.batch = batch;
                Ok(())
            }
            Err(e) if e.is_retriable() => {
                let wait = self
                    .context
                    .with(|r| r.timeout.take())
                    .flatten()
                    .unwrap_or(DEFAULT_REDELIVERY);
                tracing::warn!(task = %self.settings.id, error = %e,
                    "retriable put failure; partitions paused, redelivering the batch in {wait:?}");
                // Pausing is idempotent; a failed redelivery pauses again.
                self.set_paused(true)?;
                self.redelivery = Some(Redelivery {
                    batch,
                    delivered,
                    at: Instant::now() + wait,
                });
                Ok(())
            }
            Err(e) => Err(ConnectError::other(format!(
                "Task threw an uncaught and unrecoverable exception. Task is being killed and will not recover until manually restarted. Error: {e}"
            ))
            .with_source(e)),
        }
    }

    /// Put the waiting batch again; once it is accepted, resume what the
    /// redelivery paused (not the partitions the task or the target paused).
    async fn redeliver(&mut self, target: TargetState) -> Result<()> {
        if let Some(r) = self.redelivery.take() {
            self.put(r.batch, r.delivered).await?;
            if self.redelivery.is_none() {
                self.set_paused(target == TargetState::Paused)?;
            }
        }
        Ok(())
    }

    /// Header, key and value converters, each under the error pipeline
    /// (the record codec's stages: the key and value converters see the
    /// headers, as Kafka's do).
    async fn convert(
        &mut self,
        raw: &ConsumedRecord,
    ) -> Result<std::result::Result<SinkRecord, Failure>> {
        let (hc, hc_name) = &mut self.header_converter;
        let headers = match self
            .pipeline
            .execute(Stage::HeaderConverter, hc_name, || {
                codec::decode_headers(hc.as_mut(), raw)
            })
            .await?
        {
            Ok(h) => h,
            Err(f) => return Ok(Err(f)),
        };
        let (kc, kc_name) = &mut self.key_converter;
        let key = match self
            .pipeline
            .execute(Stage::KeyConverter, kc_name, || {
                codec::decode_key(kc.as_mut(), raw, &headers)
            })
            .await?
        {
            Ok(k) => k,
            Err(f) => return Ok(Err(f)),
        };
        let (vc, vc_name) = &mut self.value_converter;
        let value = match self
            .pipeline
            .execute(Stage::ValueConverter, vc_name, || {
                codec::decode_value(vc.as_mut(), raw, &headers)
            })
            .await?
        {
            Ok(v) => v,
            Err(f) => return Ok(Err(f)),
        };
        Ok(Ok(codec::sink_record(raw, headers, key, value)))
    }

    async fn transform(
        &mut self,
        raw: &ConsumedRecord,
        record: SinkRecord,
    ) -> Result<Option<SinkRecord>> {
        let Some(chain) = self.transforms.as_mut() else {
            return Ok(Some(record));
        };
        // The DLQ gets the raw consumed bytes, so no copy of the record.
        match self.pipeline.transform(chain, record, false).await? {
            Transformed::Kept(r) => Ok(Some(r)),
            Transformed::Dropped => Ok(None),
            Transformed::Failed(_, failure) => {
                self.dead_letter(raw, &failure);
                Ok(None)
            }
        }
    }

    fn dead_letter(&mut self, raw: &ConsumedRecord, failure: &Failure) {
        self.dlq_waits.push(self.reporter.dead_letter(raw, failure));
    }

    /// The periodic (and task-requested) commit of every assigned
    /// partition. Synchronous, unlike Kafka's: a commit counts as the
    /// position a failed flush rewinds to only once the group has it, and
    /// waiting for it (off this thread, one round trip per flush interval)
    /// is simpler than tracking asynchronous completions, which the port
    /// does not report.
    async fn commit_all(&mut self) -> Result<()> {
        let all: Vec<_> = self.assigned.iter().cloned().collect();
        self.commit(&all).await.map(drop)
    }

    /// The commit before the task stops (see [`FINAL_COMMIT_DEADLINE`]). A retriable failure here has no
    /// next flush to retry it, so it is retried until
    /// [`FINAL_COMMIT_DEADLINE`]: typically the group is rebalancing (a late
    /// heartbeat on a loaded machine), which refuses commits until the
    /// member rejoins, and rejoining needs polls. Records fetched by those
    /// polls are not delivered, so they are not committed either; the next
    /// owner reads them from the commit.
    async fn final_commit(&mut self) -> Result<()> {
        let deadline = Instant::now() + FINAL_COMMIT_DEADLINE;
        loop {
            let all: Vec<_> = self.assigned.iter().cloned().collect();
            if self.commit(&all).await? == CommitOutcome::Settled {
                return Ok(());
            }
            if Instant::now() >= deadline {
                tracing::warn!(task = %self.settings.id, "the last offset commit failed until the deadline; the next owner of these partitions starts at the previous commit");
                return Ok(());
            }
            match self.consumer.poll(Duration::from_millis(100)).await {
                Ok(Some(ConsumerEvent::Revoked(tps))) => {
                    // Taken away while stopping: commit them now, as on a
                    // running task, and keep them out of the final commit.
                    self.commit(&tps).await?;
                    for tp in &tps {
                        self.assigned.remove(tp);
                        self.consumed.remove(tp);
                    }
                    self.task.close(&tps).await?;
                }
                // A stopping task opens no partitions and delivers nothing.
                Ok(_) => {}
                Err(e) if e.is_retriable() => {}
                Err(e) => return Err(ConnectError::from(e).context("consumer failed")),
            }
        }
    }

    /// Await DLQ sends, `pre_commit`, commit the clamped result for `partitions`.
    /// Every commit is synchronous: its offsets become the position a
    /// failed flush rewinds to. A retriable commit failure is logged and
    /// reported as [`CommitOutcome::Retriable`], for the next flush to retry.
    async fn commit(&mut self, partitions: &[TopicPartition]) -> Result<CommitOutcome> {
        for rx in self.dlq_waits.drain(..) {
            match rx.await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => return Err(ConnectError::from(e).context(
                    "the dead letter queue rejected a record; stopping so that no record is lost",
                )),
                Err(_) => {
                    return Err(ConnectError::other(
                        "the dead letter queue producer went away",
                    ))
                }
            }
        }
        self.reporter.wait_idle().await?;
        let current: TopicPartitionOffsets = partitions
            .iter()
            .filter_map(|tp| self.consumed.get(tp).map(|o| (tp.clone(), *o)))
            .collect();
        if current.is_empty() {
            self.settings.metrics.record_commit(None, Duration::ZERO);
            return Ok(CommitOutcome::Settled);
        }
        let committing = Instant::now();
        let in_call = self.settings.metrics.calls.enter(TaskCall::Flush);
        // A panic here is a failed commit, as Kafka treats a Throwable
        // from preCommit: rewind to the last commit and go on.
        let what = CallOf(&self.settings.id, "SinkTask::pre_commit");
        let returned = contain(what, self.task.pre_commit(current.clone())).await;
        drop(in_call);
        let returned = match returned {
            Ok(r) => r,
            Err(e) => {
                // Kafka rewinds to the last commit so nothing is skipped.
                tracing::error!(task = %self.settings.id, error = %e,
                    "pre_commit failed; rewinding to the last committed offsets");
                for tp in partitions.iter().filter(|tp| self.assigned.contains(*tp)) {
                    if let Some(&o) = self.committed.get(tp) {
                        self.consumer.seek(tp, o)?;
                        self.consumed.insert(tp.clone(), o);
                    }
                }
                return Ok(CommitOutcome::Settled);
            }
        };
        // Records the task reported as errant while flushing: their DLQ
        // sends must be done, and under errors.tolerance=none a report
        // fails the flush, before anything past them is committed.
        self.reporter.wait_idle().await?;
        if let Some(fatal) = self.reporter.take_fatal() {
            return Err(fatal.context("a record reported as errant during the flush"));
        }
        let (safe, ignored) = FlushedOffsets::clamp(returned, &current, &self.committed);
        if !ignored.unassigned.is_empty() || !ignored.clamped.is_empty() {
            tracing::warn!(task = %self.settings.id, ?ignored,
                "pre_commit returned offsets for unassigned partitions or past the consumed position; those were ignored or clamped");
        }
        let result = safe.commit(&mut *self.consumer, CommitMode::Sync).await;
        let metrics = &self.settings.metrics;
        metrics.record_commit(Some(result.is_ok()), committing.elapsed());
        match result {
            Ok(done) => {
                self.committed.extend(done);
                self.count_active();
                Ok(CommitOutcome::Settled)
            }
            Err(e) if e.is_retriable() => {
                tracing::warn!(task = %self.settings.id, error = %e, "offset commit failed; will retry at the next flush");
                Ok(CommitOutcome::Retriable)
            }
            Err(e) => Err(ConnectError::from(e).context("offset commit failed")),
        }
    }
}
