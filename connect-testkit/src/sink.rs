//! Drive one sink task directly: deliver batches, flush and pre-commit,
//! rebalance, with a context and an errant-record reporter that record
//! every request.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use connect_api::connector::SinkConnector;
use connect_api::sink::{
    ErrantRecordReporter, SinkTask, SinkTaskContext, TopicPartition, TopicPartitionOffsets,
};
use connect_api::{ConfigMap, ConnectError, ErrorKind, Record, Result, SinkRecord};
use connect_transforms::chain::TransformChain;
use connect_transforms::registry::TransformRegistry;
use futures::future::BoxFuture;

type TaskFactory = Box<dyn Fn() -> Box<dyn SinkTask> + Send>;

/// Sink records of `partition` at offsets `first_offset`, `first_offset + 1`, ...
/// (each record's own topic).
pub fn sink_records(
    partition: i32,
    first_offset: i64,
    records: impl IntoIterator<Item = Record>,
) -> Vec<SinkRecord> {
    records
        .into_iter()
        .zip(first_offset..)
        .map(|(r, offset)| SinkRecord::new(r, partition, offset))
        .collect()
}

#[derive(Debug, Default)]
struct Log {
    seeks: Vec<TopicPartitionOffsets>,
    timeouts: Vec<u64>,
    paused: BTreeSet<TopicPartition>,
    commit_requests: usize,
    assignment: Vec<TopicPartition>,
}

/// The [`SinkTaskContext`] a [`SinkHarness`] gives its task: it records
/// seeks, timeouts, pauses and commit requests for the test to check.
#[derive(Debug)]
pub struct SinkContextLog {
    config: ConfigMap,
    log: Mutex<Log>,
    reporter: Option<Arc<RecordingReporter>>,
}

impl SinkContextLog {
    fn log(&self) -> MutexGuard<'_, Log> {
        // A test thread that panicked while holding it is already failing.
        self.log.lock().unwrap_or_else(|p| p.into_inner())
    }
    /// Every `offset(...)` (seek) request, in order.
    pub fn seeks(&self) -> Vec<TopicPartitionOffsets> {
        self.log().seeks.clone()
    }
    /// Every `timeout(ms)` request, in order.
    pub fn timeouts(&self) -> Vec<u64> {
        self.log().timeouts.clone()
    }
    /// Partitions the task has paused and not resumed.
    pub fn paused(&self) -> BTreeSet<TopicPartition> {
        self.log().paused.clone()
    }
    /// How many times the task called `request_commit`.
    pub fn commit_requests(&self) -> usize {
        self.log().commit_requests
    }
}

impl SinkTaskContext for SinkContextLog {
    fn configs(&self) -> &ConfigMap {
        &self.config
    }
    fn offset(&self, offsets: TopicPartitionOffsets) {
        self.log().seeks.push(offsets);
    }
    fn timeout(&self, timeout_ms: u64) {
        self.log().timeouts.push(timeout_ms);
    }
    fn assignment(&self) -> Vec<TopicPartition> {
        self.log().assignment.clone()
    }
    fn pause(&self, partitions: &[TopicPartition]) {
        self.log().paused.extend(partitions.iter().cloned());
    }
    fn resume(&self, partitions: &[TopicPartition]) {
        let mut log = self.log();
        for p in partitions {
            log.paused.remove(p);
        }
    }
    fn request_commit(&self) {
        self.log().commit_requests += 1;
    }
    fn errant_record_reporter(&self) -> Option<Arc<dyn ErrantRecordReporter>> {
        self.reporter
            .clone()
            .map(|r| r as Arc<dyn ErrantRecordReporter>)
    }
}

/// One record a task reported as errant.
#[derive(Debug, Clone, PartialEq)]
pub struct ErrantReport {
    /// The record.
    pub record: SinkRecord,
    /// The error's kind.
    pub kind: ErrorKind,
    /// The error as displayed.
    pub error: String,
}

/// An [`ErrantRecordReporter`] that keeps every report; set it to fail to
/// act like `errors.tolerance=none`.
#[derive(Debug, Default)]
pub struct RecordingReporter {
    reports: Mutex<Vec<ErrantReport>>,
    fail: std::sync::atomic::AtomicBool,
}

impl RecordingReporter {
    /// Every report so far, in order.
    pub fn reports(&self) -> Vec<ErrantReport> {
        self.reports.lock().map(|r| r.clone()).unwrap_or_default()
    }
    /// Make later reports fail (as with `errors.tolerance=none`) or succeed.
    pub fn set_failing(&self, fail: bool) {
        self.fail.store(fail, std::sync::atomic::Ordering::SeqCst);
    }
}

impl ErrantRecordReporter for RecordingReporter {
    fn report(&self, record: &SinkRecord, error: &ConnectError) -> BoxFuture<'static, Result<()>> {
        if let Ok(mut r) = self.reports.lock() {
            r.push(ErrantReport {
                record: record.clone(),
                kind: error.kind().clone(),
                error: error.to_string(),
            });
        }
        let fail = self.fail.load(std::sync::atomic::Ordering::SeqCst);
        let message = error.to_string();
        Box::pin(async move {
            if fail {
                Err(ConnectError::other(format!(
                    "errant record reported with errors.tolerance=none: {message}"
                )))
            } else {
                Ok(())
            }
        })
    }
}

/// Drives one [`SinkTask`] the way the runtime does, one step at a time.
///
/// [`put`](Self::put) delivers a batch (through the transform chain when
/// configured) and, when it succeeds, advances the consumed offsets of the
/// records' original partitions. [`commit`](Self::commit) calls
/// `pre_commit` with those offsets and keeps what it returns, clamped as the
/// runtime clamps it (assigned partitions, never past what was consumed).
/// [`rebalance`](Self::rebalance) commits and closes revoked partitions and
/// opens new ones.
///
/// The guide ([`crate::guide`]) has a complete example; in short:
///
/// ```
/// use std::sync::Arc;
/// use connect_api::sink::{SinkTask, SinkTaskContext, TopicPartition};
/// use connect_api::{ConfigMap, Record, Result, SinkRecord, Value};
/// use connect_testkit::{config, sink_records, SinkHarness};
///
/// /// Accepts everything, asks for a commit after each batch.
/// #[derive(Default)]
/// struct Eager(Option<Arc<dyn SinkTaskContext>>);
/// #[async_trait::async_trait]
/// impl SinkTask for Eager {
///     async fn start(&mut self, _: &ConfigMap, ctx: Arc<dyn SinkTaskContext>) -> Result<()> {
///         self.0 = Some(ctx);
///         Ok(())
///     }
///     async fn put(&mut self, _: &[SinkRecord]) -> Result<()> {
///         if let Some(c) = &self.0 { c.request_commit(); }
///         Ok(())
///     }
///     async fn stop(&mut self) -> Result<()> { Ok(()) }
/// }
///
/// # futures::executor::block_on(async {
/// let mut h = SinkHarness::new(|| Box::<Eager>::default());
/// h.start(config(&[])).await.unwrap();
/// h.open(&[TopicPartition::new("t", 0)]).await.unwrap();
/// h.put(&sink_records(0, 7, [Record::new("t", None, Value::from("x"))])).await.unwrap();
/// assert_eq!(h.context().commit_requests(), 1);
/// assert_eq!(h.commit().await.unwrap()[&TopicPartition::new("t", 0)], 8);
/// # });
/// ```
pub struct SinkHarness {
    factory: TaskFactory,
    task: Option<Box<dyn SinkTask>>,
    context: Option<Arc<SinkContextLog>>,
    reporter: Option<Arc<RecordingReporter>>,
    chain: Option<TransformChain<SinkRecord>>,
    assigned: BTreeSet<TopicPartition>,
    consumed: TopicPartitionOffsets,
    committed: TopicPartitionOffsets,
}

impl std::fmt::Debug for SinkHarness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SinkHarness")
            .field("running", &self.task.is_some())
            .field("assigned", &self.assigned)
            .field("consumed", &self.consumed)
            .field("committed", &self.committed)
            .finish_non_exhaustive()
    }
}

impl SinkHarness {
    /// A harness making tasks with `factory`, with an errant-record reporter.
    pub fn new(factory: impl Fn() -> Box<dyn SinkTask> + Send + 'static) -> Self {
        SinkHarness {
            factory: Box::new(factory),
            task: None,
            context: None,
            reporter: Some(Arc::default()),
            chain: None,
            assigned: BTreeSet::new(),
            consumed: TopicPartitionOffsets::new(),
            committed: TopicPartitionOffsets::new(),
        }
    }

    /// A harness making tasks with `connector.create_task()`.
    pub fn for_connector(connector: impl SinkConnector + 'static) -> Self {
        Self::new(move || connector.create_task())
    }

    /// Give the task no errant-record reporter (no DLQ, no error logging).
    pub fn without_reporter(mut self) -> Self {
        self.reporter = None;
        self
    }

    /// Run delivered records through the chain `config` describes
    /// (`transforms=...`, built-in SMTs) before `put`.
    pub fn with_transforms(mut self, config: &ConfigMap) -> Result<Self> {
        let chain = TransformChain::from_config(config, &TransformRegistry::with_builtins())?;
        self.chain = (!chain.is_empty()).then_some(chain);
        Ok(self)
    }

    /// Start a task with `config`; then [`open`](Self::open) partitions.
    pub async fn start(&mut self, config: ConfigMap) -> Result<()> {
        let context = Arc::new(SinkContextLog {
            config: config.clone(),
            log: Mutex::default(),
            reporter: self.reporter.clone(),
        });
        let mut task = (self.factory)();
        let ctx: Arc<dyn SinkTaskContext> = context.clone();
        task.start(&config, ctx).await?;
        self.task = Some(task);
        self.context = Some(context);
        Ok(())
    }

    fn task(&mut self) -> Result<&mut Box<dyn SinkTask>> {
        self.task
            .as_mut()
            .ok_or_else(|| ConnectError::other("the sink task is not started; call start() first"))
    }

    fn sync_assignment(&self) {
        if let Some(c) = &self.context {
            c.log().assignment = self.assigned.iter().cloned().collect();
        }
    }

    /// Assign `partitions` and call `open`.
    pub async fn open(&mut self, partitions: &[TopicPartition]) -> Result<()> {
        self.assigned.extend(partitions.iter().cloned());
        self.sync_assignment();
        self.task()?.open(partitions).await
    }

    /// The context the task was given.
    pub fn context(&self) -> &SinkContextLog {
        static EMPTY: std::sync::OnceLock<SinkContextLog> = std::sync::OnceLock::new();
        self.context.as_deref().unwrap_or_else(|| {
            EMPTY.get_or_init(|| SinkContextLog {
                config: ConfigMap::new(),
                log: Mutex::default(),
                reporter: None,
            })
        })
    }

    /// The errant-record reporter (absent after [`without_reporter`](Self::without_reporter)).
    pub fn reporter(&self) -> Option<&RecordingReporter> {
        self.reporter.as_deref()
    }

    /// Deliver one batch to `put`. Records must come from assigned
    /// partitions. On success the consumed offsets move past the batch.
    pub async fn put(&mut self, records: &[SinkRecord]) -> Result<()> {
        for r in records {
            let tp = TopicPartition::new(r.original_topic.clone(), r.original_kafka_partition);
            if !self.assigned.contains(&tp) {
                return Err(ConnectError::other(format!(
                    "record at offset {} of {tp} is not from an assigned partition; call open(&[{tp}]) first",
                    r.original_kafka_offset
                )));
            }
        }
        let batch: Vec<SinkRecord> = match &mut self.chain {
            Some(chain) => {
                let mut out = Vec::with_capacity(records.len());
                for r in records {
                    if let Some(t) = chain.apply(r.clone()).map_err(|e| {
                        e.context(format_args!(
                            "transforms, record at offset {} of {}-{}",
                            r.original_kafka_offset, r.original_topic, r.original_kafka_partition
                        ))
                    })? {
                        out.push(t);
                    }
                }
                out
            }
            None => records.to_vec(),
        };
        self.task()?.put(&batch).await?;
        for r in records {
            let tp = TopicPartition::new(r.original_topic.clone(), r.original_kafka_partition);
            let next = r.original_kafka_offset + 1;
            let e = self.consumed.entry(tp).or_insert(next);
            *e = (*e).max(next);
        }
        Ok(())
    }

    /// Deliver `records` until `put` accepts them, as the runtime
    /// redelivers after a retriable failure: waiting the task's last
    /// `timeout` request (1 s when it made none) in tokio time. Returns
    /// the number of attempts; a non-retriable error, or `max_attempts`
    /// retriable ones, end it.
    pub async fn put_until_accepted(
        &mut self,
        records: &[SinkRecord],
        max_attempts: usize,
    ) -> Result<usize> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            match self.put(records).await {
                Ok(()) => return Ok(attempt),
                Err(e) if e.is_retriable() && attempt < max_attempts => {
                    let wait = self.context().timeouts().last().copied().unwrap_or(1000);
                    tokio::time::sleep(Duration::from_millis(wait)).await;
                }
                Err(e) => return Err(e.context(format_args!("put attempt {attempt}"))),
            }
        }
    }

    /// Call `flush` with the consumed offsets (what the default `pre_commit` does).
    pub async fn flush(&mut self) -> Result<()> {
        let offsets = self.consumed.clone();
        self.task()?.flush(&offsets).await
    }

    /// Call `pre_commit` with the consumed offsets of assigned partitions
    /// and return exactly what the task returned; nothing is committed
    /// (see [`commit`](Self::commit) for that).
    pub async fn pre_commit(&mut self) -> Result<TopicPartitionOffsets> {
        let offsets: TopicPartitionOffsets = self
            .consumed
            .iter()
            .filter(|(tp, _)| self.assigned.contains(*tp))
            .map(|(tp, o)| (tp.clone(), *o))
            .collect();
        self.task()?.pre_commit(offsets).await
    }

    /// Commit as the runtime does: `pre_commit` with the consumed offsets;
    /// what it returns, clamped to assigned partitions and to what was
    /// consumed, becomes committed. Returns what this commit stored.
    pub async fn commit(&mut self) -> Result<TopicPartitionOffsets> {
        let all: Vec<TopicPartition> = self.assigned.iter().cloned().collect();
        self.commit_partitions(&all).await
    }

    async fn commit_partitions(
        &mut self,
        partitions: &[TopicPartition],
    ) -> Result<TopicPartitionOffsets> {
        let offsets: TopicPartitionOffsets = self
            .consumed
            .iter()
            .filter(|(tp, _)| self.assigned.contains(*tp))
            .map(|(tp, o)| (tp.clone(), *o))
            .collect();
        let returned = self.task()?.pre_commit(offsets).await?;
        let mut stored = TopicPartitionOffsets::new();
        for (tp, offset) in returned {
            let Some(&consumed) = self.consumed.get(&tp) else {
                continue;
            };
            if !partitions.contains(&tp) {
                continue;
            }
            let offset = offset.min(consumed);
            if self.committed.get(&tp) != Some(&offset) {
                self.committed.insert(tp.clone(), offset);
                stored.insert(tp, offset);
            }
        }
        Ok(stored)
    }

    /// Offsets consumed so far (next offset to read, per partition).
    pub fn consumed(&self) -> &TopicPartitionOffsets {
        &self.consumed
    }

    /// Offsets committed so far.
    pub fn committed(&self) -> &TopicPartitionOffsets {
        &self.committed
    }

    /// Partitions currently assigned.
    pub fn assignment(&self) -> Vec<TopicPartition> {
        self.assigned.iter().cloned().collect()
    }

    /// A rebalance: commit `revoked` partitions, `close` them, then assign
    /// and `open` `assigned`. Returns what the commit stored.
    pub async fn rebalance(
        &mut self,
        revoked: &[TopicPartition],
        assigned: &[TopicPartition],
    ) -> Result<TopicPartitionOffsets> {
        let stored = self.commit_partitions(revoked).await?;
        self.task()?.close(revoked).await?;
        for tp in revoked {
            self.assigned.remove(tp);
            self.consumed.remove(tp);
        }
        self.sync_assignment();
        if !assigned.is_empty() {
            self.open(assigned).await?;
        }
        Ok(stored)
    }

    /// Stop as the runtime does: a final commit, `close` of every assigned
    /// partition, then `stop`.
    pub async fn stop(&mut self) -> Result<TopicPartitionOffsets> {
        if self.task.is_none() {
            return Ok(TopicPartitionOffsets::new());
        }
        let stored = self.commit().await?;
        let all: Vec<TopicPartition> = self.assigned.iter().cloned().collect();
        self.task()?.close(&all).await?;
        self.assigned.clear();
        self.sync_assignment();
        if let Some(mut t) = self.task.take() {
            t.stop().await?;
        }
        Ok(stored)
    }
}
