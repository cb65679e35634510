//! `WorkerSourceTask`: drives one source task.
//!
//! The loop: poll a batch, then per record transforms, header/key/value
//! converters and produce; acks come back through a [`DeliverySink`] into
//! the [`SubmittedRecords`] tracker; every `offset.flush.interval.ms` the
//! committable offsets are written to the offset store and
//! `SourceTask::commit` is called. Polling stops while
//! `source.max.inflight.records` submissions are held (backpressure), and
//! every failure goes through the one [`ErrorPipeline`].
//!
//! This module holds the loop and the record path; the rest is split by
//! concern: `acks` (delivery outcomes; `Resends`, the retry clock of records
//! sent again), `commit` (offset commits; `OffsetWriter`, the store and its
//! write timeout), `dead_letters` (the source DLQ) and `topics`
//! (`SeenTopics`, topic creation). The parts with state of their own are
//! types that own it; what needs the whole task stays a method of it.

use std::collections::HashSet;
use std::mem;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use connect_api::config::ConfigMap;
use connect_api::source::{OffsetStorageReader, RecordMetadata, SourceTask, SourceTaskContext};
use connect_api::{ConnectError, ErrorKind, Record, Result, SourceMap, SourceRecord};
use connect_transforms::chain::TransformChain;
use tokio::sync::{watch, Notify};
use tokio::time::Instant;

mod acks;
mod commit;
mod dead_letters;
mod topics;
mod transactions;

use self::acks::{AckMeta, AckQueue, Resends};
use self::commit::OffsetWriter;
use self::topics::SeenTopics;
use self::transactions::Transactions;
pub use self::transactions::{TransactionBoundary, TransactionSettings, ZombieFencing};
use super::submitted::SubmittedRecords;
use crate::codec::{self, Encoded};
use crate::converters::TaskConverters;
use crate::errors::dlq::{self, DeadLetter, DeadLetterQueue, Origin};
use crate::errors::{ErrorConfig, ErrorPipeline, Failure, Stage, Transformed};
use crate::kafka::{
    Admin, ClientConfig, CreateTopicOutcome, Delivered, DeliverySink, KafkaCluster, KafkaError,
    KafkaErrorKind, NewTopic, OutRecord, Producer, SendError,
};
use crate::metrics::{TaskCall, TaskMetrics};
use crate::offsets::OffsetStore;
use crate::panics::{contain, CallOf};
use crate::status::{StatusListener, TargetState, TaskId};
use crate::task_loop::{flush_timer, report_failure, TargetWatch};

/// What to do when a task reports that its stored offset is no longer valid.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OffsetsInvalidPolicy {
    /// Fail the task with a message that says how to reset (the default).
    #[default]
    Fail,
    /// Remove the stored offset of that source partition, warn, and restart
    /// the task from its default position.
    Reset,
}

/// Settings of one source task.
#[derive(Debug, Clone)]
pub struct SourceTaskSettings {
    /// The task's id.
    pub id: TaskId,
    /// `offset.flush.interval.ms`.
    pub flush_interval: Duration,
    /// `offset.flush.timeout.ms`.
    pub flush_timeout: Duration,
    /// `source.max.inflight.records`: submissions held before polling stops.
    pub max_in_flight: usize,
    /// `topic.creation.default.partitions` / `.replication.factor`, when set.
    pub topic_creation: Option<(i32, i16)>,
    /// `offsets.invalid.policy`.
    pub offsets_invalid_policy: OffsetsInvalidPolicy,
    /// The connector's `errors.*` settings.
    pub errors: ErrorConfig,
    /// Producer properties (`producer.*` worker keys, `producer.override.*`).
    pub producer: ClientConfig,
    /// How long `stop` may take to flush and commit
    /// (`task.shutdown.graceful.timeout.ms`).
    pub shutdown_timeout: Duration,
    /// Where the loop counts what it does (the worker's, or a detached set).
    pub metrics: Arc<TaskMetrics>,
    /// Exactly-once delivery: records and offsets in transactions
    /// (`None`: at least once, offsets written to the offset store).
    pub transactions: Option<TransactionSettings>,
}

/// The plugins one source task runs with.
pub struct SourcePlugins {
    /// The task.
    pub task: Box<dyn SourceTask>,
    /// The task configuration from the connector.
    pub task_config: ConfigMap,
    /// The transformation chain (absent when `transforms` is empty).
    pub transforms: Option<TransformChain<SourceRecord>>,
    /// Key, value and header converters, and the DLQ's JSON converter.
    pub converters: TaskConverters,
}

/// The context handed to the task: its config, the stored offsets, and
/// heartbeats that the loop drains after each poll.
struct Context {
    config: ConfigMap,
    reader: StoreReader,
    heartbeats: Mutex<Vec<(Arc<SourceMap>, SourceMap)>>,
    /// The transaction requests of a task with connector-defined
    /// boundaries.
    transactions: Option<transactions::Requests>,
}

struct StoreReader {
    connector: String,
    store: Arc<dyn OffsetStore>,
}

impl OffsetStorageReader for StoreReader {
    fn offset(&self, partition: &SourceMap) -> Option<SourceMap> {
        self.store.get(&self.connector, partition)
    }
}

impl SourceTaskContext for Context {
    fn configs(&self) -> &ConfigMap {
        &self.config
    }
    fn offset_storage_reader(&self) -> &dyn OffsetStorageReader {
        &self.reader
    }
    fn heartbeat(&self, partition: Arc<SourceMap>, offset: SourceMap) {
        if let Ok(mut h) = self.heartbeats.lock() {
            h.push((partition, offset));
        }
    }
    fn transaction_context(&self) -> Option<&dyn connect_api::source::TransactionContext> {
        self.transactions
            .as_ref()
            .map(|r| r as &dyn connect_api::source::TransactionContext)
    }
}

/// Drives one source task until it is stopped or fails.
pub struct WorkerSourceTask {
    settings: SourceTaskSettings,
    plugins: SourcePlugins,
    pipeline: ErrorPipeline,
    tracker: SubmittedRecords,
    acks: Arc<AckQueue>,
    drained: Vec<(u64, std::result::Result<AckMeta, KafkaError>)>,
    producer: Box<dyn Producer>,
    /// The dead letter queue, when one is configured.
    dlq: Option<DeadLetterQueue>,
    admin: Option<Box<dyn Admin>>,
    offsets: OffsetWriter,
    context: Arc<Context>,
    status: Arc<dyn StatusListener>,
    control: watch::Receiver<TargetState>,
    /// Topics created or found.
    known_topics: SeenTopics,
    /// Topics this run wrote to, told to the status store once each
    /// (KIP-558).
    active_topics: SeenTopics,
    /// Topics the producer has written a record of this task to. Until
    /// then a record keeps its copy after the send even when records are
    /// let go once sent: a topic that does not exist fails the delivery,
    /// and the record must be sent again, never skipped.
    delivered_topics: SeenTopics,
    /// When a missing topic was last logged (at most every 30 s).
    missing_topic_logged: Option<tokio::time::Instant>,
    encoded: Encoded,
    /// The task takes `commit_record` calls: true until its first call
    /// answers `not_implemented` (the trait's default body).
    commit_records: bool,
    /// Let go of each record once sent: neither `commit_record` nor anything
    /// configured (retries, the DLQ) needs it after the send.
    release_records: bool,
    /// Resend attempts and first failure time of records whose delivery
    /// failed retriably.
    resends: Resends,
    /// Exactly-once delivery, when configured.
    transactions: Option<Transactions>,
    /// The task has failed and only its final offset commit is left: a
    /// failed delivery is neither resent nor tolerated any more, it stays
    /// unacknowledged (its offset, and the later ones of its source
    /// partition, are not committed).
    failed: bool,
}

impl WorkerSourceTask {
    /// Prepare a task: open its producers on `cluster`.
    pub fn new(
        settings: SourceTaskSettings,
        plugins: SourcePlugins,
        cluster: Arc<dyn KafkaCluster>,
        store: Arc<dyn OffsetStore>,
        status: Arc<dyn StatusListener>,
        control: watch::Receiver<TargetState>,
    ) -> Result<Self> {
        let acks = Arc::new(AckQueue::default());
        let mut producer_config = settings.producer.clone();
        if let Some(t) = &settings.transactions {
            Self::transactional_producer(&mut producer_config, t);
        }
        // Kafka's source producer defaults: nothing is lost to a retry limit.
        // librdkafka already retries without limit, but gives up on a record
        // after delivery.timeout.ms (5 minutes); Kafka Connect sets it to
        // Integer.MAX_VALUE, so an outage only delays records. (A
        // transactional producer keeps its own bound: librdkafka ties it to
        // transaction.timeout.ms.) One request in flight per broker, as in
        // Kafka Connect: without idempotence, a retried request could
        // otherwise land after a later one and reorder a partition.
        producer_config
            .entry("acks".into())
            .or_insert_with(|| "all".into());
        producer_config
            .entry("max.in.flight.requests.per.connection".into())
            .or_insert_with(|| "1".into());
        if !producer_config.contains_key("transactional.id") {
            producer_config
                .entry("delivery.timeout.ms".into())
                .or_insert_with(|| "2147483647".into());
        }
        let producer = cluster.producer(&producer_config, acks.clone())?;
        // A transactional task sends its dead letters in its transaction,
        // through its own producer.
        let dlq = DeadLetterQueue::open(
            cluster.as_ref(),
            &settings.errors,
            &producer_config,
            acks.clone(),
            settings.transactions.is_none(),
        )?;
        let admin = cluster.admin(&producer_config).ok();
        let context = Arc::new(Context {
            config: plugins.task_config.clone(),
            reader: StoreReader {
                connector: settings.id.connector.clone(),
                store: store.clone(),
            },
            heartbeats: Mutex::new(Vec::new()),
            transactions: settings
                .transactions
                .as_ref()
                .filter(|t| t.boundary == TransactionBoundary::Connector)
                .map(|_| transactions::Requests::default()),
        });
        let offsets =
            OffsetWriter::new(store, settings.id.connector.clone(), settings.flush_timeout);
        let transactions = settings.transactions.clone().map(Transactions::new);
        Ok(WorkerSourceTask {
            transactions,
            pipeline: ErrorPipeline::new(settings.errors.clone()),
            settings,
            plugins,
            tracker: SubmittedRecords::new(),
            acks,
            drained: Vec::new(),
            producer,
            dlq,
            admin,
            offsets,
            context,
            status,
            control,
            known_topics: SeenTopics::default(),
            active_topics: SeenTopics::default(),
            delivered_topics: SeenTopics::default(),
            missing_topic_logged: None,
            encoded: Encoded::default(),
            commit_records: true,
            release_records: false,
            resends: Default::default(),
            failed: false,
        })
    }

    /// Run until stopped (`Ok`) or failed (`Err`, with the reason). The
    /// status listener sees RUNNING/PAUSED/FAILED transitions; a final flush
    /// and commit happen on a clean stop.
    pub async fn run(mut self) -> Result<()> {
        let id = self.settings.id.clone();
        // A panic in the task's plugins fails the task, as any error does.
        let result = crate::panics::contain(format!("source task {id}"), self.run_inner()).await;
        if result.is_err() {
            // As Kafka's final offset commit of a failed task: what Kafka
            // acknowledged is written, so a restart resumes after it instead
            // of sending every record since the last periodic commit again.
            // Before FAILED is reported, so whoever sees FAILED sees the
            // offsets too. The task may be broken (it may have panicked):
            // this is contained as well, and a failure here only logged.
            let commit = self.commit_after_failure();
            let label = format!("source task {id}: final offset commit");
            if let Err(e) = crate::panics::contain(label, commit).await {
                tracing::warn!(task = %id, error = %e,
                    "final offset commit of the failed task did not complete; \
                     records since the last commit will be sent again after a restart");
            }
        }
        // The failure that stopped the task counts too.
        self.settings.metrics.set_errors(&self.pipeline.stats());
        if let Err(e) = &result {
            report_failure(&id, e, &self.control, self.status.as_ref(), "source");
        }
        let stopped = self.plugins.task.stop();
        if let Err(e) = crate::panics::contain(format!("source task {id}: stop"), stopped).await {
            tracing::warn!(task = %id, error = %e, "source task stop failed");
        }
        result
    }

    async fn run_inner(&mut self) -> Result<()> {
        // A task moved here from another worker resumes from that worker's
        // last committed offsets, which a shared store may not have read yet.
        // A transactional task first takes over its id (aborting what an
        // earlier instance left open, which read_committed readers of the
        // offsets would otherwise wait for), then reads its offsets.
        self.init_transactions().await?;
        self.offsets.refresh().await?;
        // As the sink does (and Kafka's sink DLQ reporter): a DLQ that
        // cannot exist fails the task now, not at its first failed record.
        if let (Some(dlq), Some(admin)) = (&self.dlq, self.admin.as_deref()) {
            dlq.create_topic(admin).await?;
        }
        loop {
            let ctx: Arc<dyn SourceTaskContext> = self.context.clone();
            let config = self.plugins.task_config.clone();
            match self.plugins.task.start(&config, ctx).await {
                Ok(()) => {}
                Err(e) => {
                    self.handle_invalid_offset(e).await?;
                    continue;
                }
            }
            match self.poll_loop().await {
                Err(e) if matches!(e.kind(), ErrorKind::OffsetInvalid { .. }) => {
                    self.handle_invalid_offset(e).await?;
                    // Restart from the default position with a fresh start().
                    self.plugins.task.stop().await?;
                }
                other => return other,
            }
        }
    }

    /// Apply `offsets.invalid.policy` to an error from start/poll; any other
    /// error is returned as is.
    async fn handle_invalid_offset(&mut self, e: ConnectError) -> Result<()> {
        let ErrorKind::OffsetInvalid { partition } = e.kind() else {
            return Err(e);
        };
        let partition = partition.clone();
        let id = &self.settings.id;
        let stored = self.offsets.stored(&partition);
        let shown = |m: &Option<SourceMap>| {
            m.as_ref()
                .map(|o| serde_json::Value::Object(o.clone()).to_string())
                .unwrap_or_else(|| "none".into())
        };
        match self.settings.offsets_invalid_policy {
            OffsetsInvalidPolicy::Fail => Err(ConnectError::other(format!(
                "The stored offset {} of source partition {} is no longer valid: {}. \
                 To start over, stop the connector (PUT /connectors/{}/stop), reset its offsets \
                 (DELETE /connectors/{}/offsets) and resume it, or set offsets.invalid.policy=reset \
                 to do this automatically.",
                shown(&stored),
                serde_json::Value::Object(partition.clone()),
                e.message(),
                id.connector,
                id.connector
            ))),
            OffsetsInvalidPolicy::Reset => {
                tracing::warn!(
                    task = %id,
                    partition = %serde_json::Value::Object(partition.clone()),
                    lost_position = %shown(&stored),
                    reason = %e.message(),
                    "stored offset is no longer valid; removing it (offsets.invalid.policy=reset) \
                     and restarting the task from its default position"
                );
                // Offsets of the partition still in the tracker would put
                // the invalid position back at the next flush.
                self.tracker.forget(&partition);
                self.offsets.remove(partition).await?;
                Ok(())
            }
        }
    }

    async fn poll_loop(&mut self) -> Result<()> {
        // An interval boundary commits on this timer instead of the offset flush.
        let every = match self.transactions.as_ref().map(|t| t.settings.boundary) {
            Some(TransactionBoundary::Interval(every)) => every,
            _ => self.settings.flush_interval,
        };
        let mut flush = flush_timer(every);
        let mut watch = TargetWatch::default();
        loop {
            let target = *self.control.borrow();
            if watch.changed(target) {
                let s = &self.settings;
                TargetWatch::report(target, &s.id, self.status.as_ref(), &s.metrics);
            }
            if target == TargetState::Stopped {
                return self.final_commit().await;
            }
            self.process_acks().await?;
            // Acked (and dropped) records at the front stop counting against
            // the in-flight limit now, not at the next offset flush.
            self.tracker.release_done();
            let backpressured = self.tracker.held() >= self.settings.max_in_flight;
            if target == TargetState::Paused || backpressured {
                tokio::select! {
                    _ = flush.tick() => self.commit_offsets().await?,
                    _ = self.acks.notify.notified() => {}
                    changed = self.control.changed() => {
                        if changed.is_err() { return self.final_commit().await; }
                    }
                }
                continue;
            }
            // The flush waits for poll to return (it must, regularly):
            // cancelling a poll on every flush tick would make tasks redo
            // work (reopen files, re-issue queries). Only a state change
            // (pause, stop) cancels a pending poll.
            if flush_due(&mut flush) {
                self.commit_offsets().await?;
            }
            let polling = Instant::now();
            let in_call = self.settings.metrics.calls.enter(TaskCall::Poll);
            let batch = tokio::select! {
                biased;
                changed = self.control.changed() => {
                    drop(in_call);
                    if changed.is_err() { return self.final_commit().await; }
                    continue;
                }
                batch = self.plugins.task.poll() => batch,
            };
            drop(in_call);
            let batch = match batch {
                Ok(b) => b,
                Err(e) if e.is_retriable() => {
                    tracing::warn!(task = %self.settings.id, error = %e, "retriable poll failure; polling again");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
                Err(e) => return Err(e),
            };
            self.drain_heartbeats();
            let metrics = self.settings.metrics.clone();
            metrics.record_poll(batch.len(), polling.elapsed());
            for record in batch {
                let ends = self.requested_at(&record);
                if let Some(unfinished) = self.process_now(record)? {
                    self.finish(unfinished).await?;
                }
                if let Some(action) = ends {
                    self.end_transaction(action).await?;
                }
            }
            if self.transactions.is_some() {
                self.end_of_batch().await?;
            }
            metrics.set_active(self.tracker.held());
            metrics.set_errors(&self.pipeline.stats());
        }
    }

    fn drain_heartbeats(&mut self) {
        let beats = match self.context.heartbeats.lock() {
            Ok(mut h) if !h.is_empty() => mem::take(&mut *h),
            _ => return,
        };
        for (partition, offset) in beats {
            self.tracker.submit_done(partition, offset);
        }
    }

    /// One record, in the common case: no copies are configured (retries,
    /// source DLQ), the transforms and converters succeed, the topic is
    /// known and the producer takes the record. None of that waits, so it
    /// runs without an await: at a few hundred thousand records a second,
    /// moving each record through the general path's large async frames
    /// was a visible share of the loop. Anything else comes back as a
    /// [`Unfinished`] record for [`finish`](Self::finish) on the general path.
    fn process_now(&mut self, mut record: SourceRecord) -> Result<Option<Unfinished>> {
        if keeps_copies(self.pipeline.config()) {
            return Ok(Some(Unfinished::Whole(record)));
        }
        let partition = record.source_partition.clone();
        // Transforms never read the offset: keep it out of their way and put
        // it back, so commit_record sees the record's own offset.
        let offset = mem::take(&mut record.source_offset);
        let mut record = match self.plugins.transforms.as_mut() {
            None => record,
            Some(chain) => match self.pipeline.transform_now(chain, record)? {
                Transformed::Kept(r) => r,
                Transformed::Dropped => return Ok(Some(Unfinished::Dropped(partition, offset))),
                Transformed::Failed(_, failure) => {
                    return Ok(Some(Unfinished::Failed(partition, offset, failure)))
                }
            },
        };
        record.source_offset = offset;
        let converted = codec::STAGES.into_iter().all(|stage| {
            self.encoded
                .stage(&mut self.plugins.converters, stage, &record)
                .is_ok()
        });
        if !converted || !self.topic_known(&record.record.topic) {
            return Ok(Some(Unfinished::Convert(partition, record)));
        }
        let release = self.releases(&record.record.topic);
        self.in_transaction()?;
        let token = self.submit(partition, &mut record, release);
        match self.producer.send(&self.encoded.out(&record.record), token) {
            Ok(()) => {
                self.sent(token, record, release);
                Ok(None)
            }
            // A full queue or a send error: the general path waits or fails.
            Err(_) => Ok(Some(Unfinished::Send(token, record, release))),
        }
    }

    /// The general path for what [`process_now`](Self::process_now) left.
    async fn finish(&mut self, unfinished: Unfinished) -> Result<()> {
        match unfinished {
            Unfinished::Whole(record) => self.process(record).await,
            Unfinished::Dropped(partition, offset) => self.dropped(partition, offset).await,
            Unfinished::Failed(partition, offset, failure) => {
                self.dead_letter(Submit::New(partition, offset), None, failure)
                    .await
            }
            Unfinished::Convert(partition, record) => {
                self.convert_and_send(partition, record).await
            }
            Unfinished::Send(token, record, release) => self.send(token, record, release).await,
        }
    }

    /// One record through every stage under the error pipeline, keeping the
    /// copies that retries and the source DLQ need.
    async fn process(&mut self, mut record: SourceRecord) -> Result<()> {
        let partition = record.source_partition.clone();
        let offset = mem::take(&mut record.source_offset);
        let mut record = match self.transform(record).await? {
            Transformed::Kept(r) => r,
            Transformed::Dropped => return self.dropped(partition, offset).await,
            Transformed::Failed(mut original, failure) => {
                if let Some(o) = original.as_mut() {
                    o.source_offset = offset.clone();
                }
                return self
                    .dead_letter(Submit::New(partition, offset), original, failure)
                    .await;
            }
        };
        record.source_offset = offset;
        self.convert_and_send(partition, record).await
    }

    /// A record a transform dropped: `commit_record` gets its source
    /// partition and offset (the transform consumed the rest, see
    /// SourceTask::commit_record), and it is done at once.
    async fn dropped(&mut self, partition: Arc<SourceMap>, offset: SourceMap) -> Result<()> {
        let dropped = SourceRecord::new(partition, offset, Record::default());
        if self.commit_records {
            self.commit_record(&dropped, None).await;
        }
        self.tracker
            .submit_done(dropped.source_partition, dropped.source_offset);
        Ok(())
    }

    /// Converters under the error pipeline, topic creation, then send.
    async fn convert_and_send(
        &mut self,
        partition: Arc<SourceMap>,
        mut record: SourceRecord,
    ) -> Result<()> {
        if let Some(failure) = self.convert(&record).await? {
            let offset = record.source_offset.clone();
            return self
                .dead_letter(Submit::New(partition, offset), Some(record), failure)
                .await;
        }
        self.ensure_topic(&record.record.topic).await;
        let release = self.releases(&record.record.topic);
        let token = self.submit(partition, &mut record, release);
        self.send(token, record, release).await
    }

    /// Enter `record` in the tracker. Its offset travels with the record
    /// until the ack and then moves into the tracker (no copy on the hot
    /// path); when the record is let go once sent (`release`), it goes
    /// there now.
    fn submit(
        &mut self,
        partition: Arc<SourceMap>,
        record: &mut SourceRecord,
        release: bool,
    ) -> u64 {
        if release {
            let offset = mem::take(&mut record.source_offset);
            self.tracker.submit(partition, offset)
        } else {
            self.tracker.submit(partition, SourceMap::new())
        }
    }

    /// The producer has `record`: keep it with its submission until the ack,
    /// or let it go (`release`, as decided at submit).
    fn sent(&mut self, token: u64, record: SourceRecord, release: bool) {
        self.topic_active(&record.record.topic);
        if !release {
            self.tracker.attach(token, record);
        }
    }

    /// Send the converted `record` (in the buffers) under `token` and keep
    /// it with its submission until the ack (unless `release`).
    async fn send(&mut self, token: u64, record: SourceRecord, release: bool) -> Result<()> {
        self.in_transaction()?;
        send_with_backpressure(
            &*self.producer,
            &self.encoded.out(&record.record),
            token,
            &self.acks,
        )
        .await?;
        self.sent(token, record, release);
        Ok(())
    }

    /// Run the transformation chain under the error pipeline.
    async fn transform(&mut self, record: SourceRecord) -> Result<Transformed<SourceRecord>> {
        let Some(chain) = self.plugins.transforms.as_mut() else {
            return Ok(Transformed::Kept(record));
        };
        // The source DLQ, and an error log that includes records, want the
        // record as polled: keep a copy only then.
        let keep = keeps_original(self.pipeline.config());
        self.pipeline.transform(chain, record, keep).await
    }

    /// Run header, key and value converters (Kafka's source order) into the
    /// reusable buffers under the error pipeline; `Some(failure)` when a
    /// tolerated failure skips the record.
    async fn convert(&mut self, record: &SourceRecord) -> Result<Option<Failure>> {
        for stage in codec::STAGES {
            let converters = &mut self.plugins.converters;
            let encoded = &mut self.encoded;
            let first = match encoded.stage(converters, stage, record) {
                Ok(()) => continue,
                Err(e) => e,
            };
            // Failed once: the pipeline decides (retries, tolerance), which
            // needs the converter's class name.
            let class = codec::class(converters, stage).to_string();
            if !first.is_retriable() || self.pipeline.config().retry_timeout_ms == 0 {
                // Nothing to retry: count and tolerate this failure rather
                // than run the converter (which may have panicked) again.
                return self.pipeline.failed_once(stage, &class, first).map(Some);
            }
            let out = self
                .pipeline
                .execute(stage, &class, || encoded.stage(converters, stage, record))
                .await?;
            if let Err(failure) = out {
                return Ok(Some(failure));
            }
        }
        Ok(None)
    }
}

/// A record [`WorkerSourceTask::process_now`] could not finish without
/// waiting, and how far it got: the general (async) path takes it from there.
enum Unfinished {
    /// Copies are configured: the whole record takes the general path.
    Whole(SourceRecord),
    /// Dropped by a transform: its source partition and offset.
    Dropped(Arc<SourceMap>, SourceMap),
    /// A tolerated transform failure (the record is gone: no copy was kept).
    Failed(Arc<SourceMap>, SourceMap, Failure),
    /// Transformed; a converter failed or its topic is new.
    Convert(Arc<SourceMap>, SourceRecord),
    /// Converted and submitted under this token (let go once sent if the
    /// flag says so); the producer refused it.
    Send(u64, SourceRecord, bool),
}

/// Where a dead-lettered record stands in the offset tracker.
enum Submit {
    /// Not submitted yet: its source partition and offset.
    New(Arc<SourceMap>, SourceMap),
    /// Already submitted under this token (a failed delivery).
    Existing(u64),
}

/// Whether a failed record must be kept as polled: for the source DLQ, and
/// for an error log that includes records (`errors.log.include.messages`).
fn keeps_original(errors: &ErrorConfig) -> bool {
    !errors.dlq_topic.is_empty() || (errors.log_enable && errors.log_include_messages)
}

/// Whether records are copied on their way (retries need a stage's input
/// again; a kept original serves the DLQ and the error log), so they take
/// the general path and stay with their submission until the ack.
fn keeps_copies(errors: &ErrorConfig) -> bool {
    errors.retry_timeout_ms != 0 || keeps_original(errors)
}

/// Whether the flush interval has elapsed (consumes the tick if so).
fn flush_due(flush: &mut tokio::time::Interval) -> bool {
    let waker = futures::task::noop_waker();
    let mut cx = std::task::Context::from_waker(&waker);
    flush.poll_tick(&mut cx).is_ready()
}

/// Queue `out`, waiting for acks while the producer's queue is full.
async fn send_with_backpressure(
    producer: &dyn Producer,
    out: &OutRecord<'_>,
    token: u64,
    acks: &AckQueue,
) -> Result<()> {
    let mut missing_reported = false;
    loop {
        match producer.send(out, token) {
            Ok(()) => return Ok(()),
            Err(SendError::QueueFull) => {
                // Acks free room; the timeout covers a wake-up lost to a race.
                let _ =
                    tokio::time::timeout(Duration::from_millis(50), acks.notify.notified()).await;
            }
            Err(SendError::Kafka(e)) if e.is_retriable() => {
                // As Kafka: a retriable synchronous send failure is retried
                // after 100 ms, for as long as it takes.
                tracing::warn!(topic = out.topic, error = %e, "retriable send failure; sending again");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            // The producer knows the topic does not exist (librdkafka
            // refuses at once after a first record failed on it). As Kafka's
            // producer blocks until the topic exists, wait and send again.
            Err(SendError::Kafka(e)) if e.kind() == KafkaErrorKind::UnknownTopicOrPartition => {
                if !missing_reported {
                    missing_reported = true;
                    tracing::warn!(topic = out.topic, error = %e,
                        "the topic does not exist; sending again until it does");
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(SendError::Kafka(e)) => {
                return Err(ConnectError::from(e).context(format_args!(
                    "cannot send a record to topic '{}'",
                    out.topic
                )))
            }
        }
    }
}
