//! Exactly-once delivery (KIP-618): the task's records and their source
//! offsets go to Kafka in one transaction of the task's transactional
//! producer, committed at each boundary (`transaction.boundary=poll`: after
//! every batch the task returns; `interval`: every
//! `transaction.boundary.interval.ms`). A transaction either lands whole
//! (records readable by `read_committed` consumers, offsets stored) or not
//! at all, so a crash between two boundaries replays exactly what was not
//! committed, and nothing twice.
//!
//! The producer's `init_transactions` fences an earlier instance of the
//! same task (same transactional id) that may still be running on another
//! worker: that zombie can no longer commit.
//!
//! Where a transaction fails (a delivery, the offsets, the commit), it is
//! aborted and the task fails: its offsets stay where the last commit put
//! them, as in Kafka.

use super::*;
use crate::offsets::offset_key_bytes;
use async_trait::async_trait;

/// `transaction.boundary`: when a transactional source task commits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransactionBoundary {
    /// After every batch `SourceTask::poll` returns (Kafka's default).
    Poll,
    /// Every `transaction.boundary.interval.ms` (the worker's
    /// `offset.flush.interval.ms` when unset).
    Interval(Duration),
    /// Where the task says, through its
    /// [`TransactionContext`](connect_api::source::TransactionContext).
    Connector,
}

/// The settings of a task that delivers exactly once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransactionSettings {
    /// The producer's `transactional.id`: Kafka's
    /// `<group.id>-<connector>-<task>`, so a task's new instance fences its
    /// old ones wherever they run.
    pub transactional_id: String,
    /// When transactions are committed.
    pub boundary: TransactionBoundary,
    /// The offsets topic the source offsets are written to, inside the
    /// transaction (the worker's, or the connector's
    /// `offsets.storage.topic`).
    pub offsets_topic: String,
}

impl TransactionSettings {
    /// Kafka's transactional id of `task` in the Connect group `group_id`.
    ///
    /// ```
    /// use connect_runtime::source::TransactionSettings;
    /// use connect_runtime::status::TaskId;
    ///
    /// let id = TaskId::new("orders", 2);
    /// assert_eq!(TransactionSettings::transactional_id("connect-cluster", &id), "connect-cluster-orders-2");
    /// ```
    pub fn transactional_id(group_id: &str, task: &TaskId) -> String {
        format!("{group_id}-{}-{}", task.connector, task.task)
    }
}

/// What a distributed herder does around an exactly-once task's producer
/// start (Kafka's pre- and post-producer checks): the leader fences the
/// transactional ids of the connector's earlier task generations
/// (zombies that another worker may still run) before the task's producer
/// takes over its own id; afterwards, the task starts only if its task
/// configs are still current and it is still assigned here.
#[async_trait]
pub trait ZombieFencing: Send + Sync {
    /// Before the producer's `init_transactions`: have the tasks of
    /// earlier generations of `task`'s connector fenced out. Returns the
    /// task config generation the task was started for, for
    /// [`ZombieFencing::verify`].
    async fn fence(&self, task: &TaskId) -> Result<i64>;
    /// After `init_transactions`: fail when the connector has newer task
    /// configs than `generation` or `task` is no longer assigned here.
    async fn verify(&self, task: &TaskId, generation: i64) -> Result<()>;
}

/// Delivery tokens of the offset records a transaction carries. The
/// tracker's tokens count up from 0 and never come near: an ack of one of
/// these finds no submission and is skipped.
const OFFSET_RECORD_TOKEN: u64 = u64::MAX / 2;

/// What a task asked of its transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Action {
    Commit,
    Abort,
}

/// The requests of a task with connector-defined boundaries, as its
/// context collects them; the loop takes them after each record and
/// each batch.
#[derive(Debug, Default)]
pub(super) struct Requests {
    /// Something is asked: the loop looks at records only then.
    pending: std::sync::atomic::AtomicBool,
    asked: Mutex<Asked>,
}

#[derive(Debug, Default)]
struct Asked {
    batch: Option<Action>,
    at: Vec<(SourceMap, SourceMap, Action)>,
}

impl Requests {
    fn ask(&self, f: impl FnOnce(&mut Asked)) {
        if let Ok(mut asked) = self.asked.lock() {
            f(&mut asked);
            self.pending
                .store(true, std::sync::atomic::Ordering::Release);
        }
    }

    /// `action` once the record with `record`'s source partition and
    /// offset is sent.
    fn ask_at(&self, record: &SourceRecord, action: Action) {
        let partition = SourceMap::clone(&record.source_partition);
        let offset = record.source_offset.clone();
        self.ask(|a| a.at.push((partition, offset, action)));
    }

    /// The request ending the transaction at the record with this source
    /// partition and offset, if any.
    pub(super) fn take_at(&self, partition: &SourceMap, offset: &SourceMap) -> Option<Action> {
        if !self.pending.load(std::sync::atomic::Ordering::Acquire) {
            return None;
        }
        let mut asked = self.asked.lock().ok()?;
        let i = asked
            .at
            .iter()
            .position(|(p, o, _)| p == partition && o == offset)?;
        Some(asked.at.remove(i).2)
    }

    /// The request for the current transaction, once its batch is sent.
    pub(super) fn take_batch(&self) -> Option<Action> {
        if !self.pending.load(std::sync::atomic::Ordering::Acquire) {
            return None;
        }
        let mut asked = self.asked.lock().ok()?;
        let action = asked.batch.take();
        // Requests for records never seen stay until they are.
        if asked.at.is_empty() {
            self.pending
                .store(false, std::sync::atomic::Ordering::Release);
        }
        action
    }
}

impl connect_api::source::TransactionContext for Requests {
    fn commit_transaction(&self) {
        self.ask(|a| a.batch = Some(Action::Commit));
    }
    fn commit_transaction_at(&self, record: &SourceRecord) {
        self.ask_at(record, Action::Commit);
    }
    fn abort_transaction(&self) {
        self.ask(|a| a.batch = Some(Action::Abort));
    }
    fn abort_transaction_at(&self, record: &SourceRecord) {
        self.ask_at(record, Action::Abort);
    }
}

/// A transactional task's state.
pub(super) struct Transactions {
    pub(super) settings: TransactionSettings,
    /// A transaction is open: records were sent since the last boundary.
    open: bool,
    /// The herder's fencing around the producer's start, in distributed
    /// mode.
    fencing: Option<Arc<dyn ZombieFencing>>,
}

impl Transactions {
    pub(super) fn new(settings: TransactionSettings) -> Self {
        Transactions {
            settings,
            open: false,
            fencing: None,
        }
    }
}

impl WorkerSourceTask {
    /// The producer settings a transactional task adds to its own.
    pub(super) fn transactional_producer(config: &mut ClientConfig, t: &TransactionSettings) {
        config.insert("transactional.id".into(), t.transactional_id.clone());
        config.insert("enable.idempotence".into(), "true".into());
    }

    /// Have the herder fence this task's zombies and check it may start
    /// (distributed mode, [`ZombieFencing`]); a task without transactions
    /// or without a herder's fencing ignores it.
    pub fn with_zombie_fencing(mut self, fencing: Arc<dyn ZombieFencing>) -> Self {
        if let Some(t) = self.transactions.as_mut() {
            t.fencing = Some(fencing);
        }
        self
    }

    /// Before the task starts: have the earlier task generations fenced
    /// (distributed mode), take over the transactional id, fencing any
    /// earlier instance of this task and aborting what it left open, then
    /// check the task may still start.
    pub(super) async fn init_transactions(&mut self) -> Result<()> {
        let Some(t) = &self.transactions else {
            return Ok(());
        };
        let id = t.settings.transactional_id.clone();
        let fencing = t.fencing.clone();
        let task = &self.settings.id;
        let generation = match &fencing {
            Some(f) => Some(f.fence(task).await.map_err(|e| {
                e.context(format!(
                    "source task {task}: the zombie fencing before its producer started failed"
                ))
            })?),
            None => None,
        };
        self.producer
            .init_transactions(self.settings.flush_timeout.max(Duration::from_secs(30)))
            .await
            .map_err(|e| {
                ConnectError::from(e).context(format!(
                    "cannot initialize the transactional producer '{id}' of source task {task}"
                ))
            })?;
        if let (Some(f), Some(generation)) = (&fencing, generation) {
            f.verify(task, generation).await?;
        }
        Ok(())
    }

    /// Open a transaction before the first send after a boundary; nothing
    /// to do for a task without transactions.
    pub(super) fn in_transaction(&mut self) -> Result<()> {
        let Some(t) = self.transactions.as_mut() else {
            return Ok(());
        };
        if !t.open {
            self.producer.begin_transaction().map_err(|e| {
                ConnectError::from(e).context(format!(
                    "cannot begin a transaction of source task {}",
                    self.settings.id
                ))
            })?;
            t.open = true;
        }
        Ok(())
    }

    /// The transaction request a connector made for `record`, taken
    /// before the record goes down the pipeline.
    pub(super) fn requested_at(&self, record: &SourceRecord) -> Option<Action> {
        self.context
            .transactions
            .as_ref()?
            .take_at(&record.source_partition, &record.source_offset)
    }

    /// After a batch: commit per poll, or what the connector asked for.
    pub(super) async fn end_of_batch(&mut self) -> Result<()> {
        if self.commits_per_poll() {
            return self.commit_transaction().await;
        }
        let asked = self
            .context
            .transactions
            .as_ref()
            .and_then(|r| r.take_batch());
        match asked {
            Some(action) => self.end_transaction(action).await,
            None => Ok(()),
        }
    }

    /// Commit or abort the current transaction, as the connector asked.
    pub(super) async fn end_transaction(&mut self, action: Action) -> Result<()> {
        match action {
            Action::Commit => self.commit_transaction().await,
            Action::Abort => {
                // The records sent so far reach Kafka first, so their acks
                // are in and the tracker forgets them with their offsets.
                let timeout = self.settings.flush_timeout;
                self.producer
                    .flush(timeout)
                    .await
                    .map_err(ConnectError::from)?;
                self.process_acks().await?;
                let _discarded = self.tracker.committable();
                self.try_abort().await
            }
        }
    }

    /// Whether this task commits at the end of every poll batch.
    pub(super) fn commits_per_poll(&self) -> bool {
        self.transactions
            .as_ref()
            .is_some_and(|t| t.settings.boundary == TransactionBoundary::Poll)
    }

    /// A boundary: wait until Kafka has every record of the transaction,
    /// write the offsets they reach into it, and commit. Any failure
    /// aborts the transaction and fails the task.
    pub(super) async fn commit_transaction(&mut self) -> Result<()> {
        match self.try_commit_transaction().await {
            Ok(()) => {}
            Err(e) => {
                self.abort_transaction().await;
                return Err(e);
            }
        }
        // A notification, as in Kafka: the transaction is committed.
        let what = CallOf(&self.settings.id, "SourceTask::commit");
        if let Err(e) = contain(what, self.plugins.task.commit()).await {
            tracing::error!(task = %self.settings.id, error = %e,
                "SourceTask::commit failed after the transaction was committed; the task keeps running");
        }
        Ok(())
    }

    async fn try_commit_transaction(&mut self) -> Result<()> {
        let id = self.settings.id.clone();
        let timeout = self.settings.flush_timeout;
        self.producer.flush(timeout).await.map_err(|e| {
            ConnectError::from(e).context(format!(
                "source task {id}: the transaction's records did not all reach Kafka within \
                 {timeout:?} (offset.flush.timeout.ms)"
            ))
        })?;
        self.process_acks().await?;
        let committable = self.tracker.committable();
        let offsets: Vec<_> = committable
            .offsets
            .into_iter()
            .filter(|(p, _)| !p.is_empty())
            .collect();
        let open = self.transactions.as_ref().is_some_and(|t| t.open);
        if !open && offsets.is_empty() {
            return Ok(());
        }
        self.in_transaction()?;
        let Some(t) = self.transactions.as_ref() else {
            return Ok(());
        };
        let topic = t.settings.offsets_topic.clone();
        for (partition, offset) in &offsets {
            let key = offset_key_bytes(&id.connector, partition);
            let value = serde_json::Value::Object(offset.clone()).to_string();
            let mut out = OutRecord::new(&topic, Some(value.as_bytes()));
            out.key = Some(&key);
            send_with_backpressure(&*self.producer, &out, OFFSET_RECORD_TOKEN, &self.acks)
                .await
                .map_err(|e| {
                    e.context(format!(
                        "source task {id}: cannot write its offsets to '{topic}' in the transaction"
                    ))
                })?;
        }
        self.producer
            .commit_transaction(timeout)
            .await
            .map_err(|e| {
                ConnectError::from(e).context(format!(
                "source task {id}: cannot commit its transaction; it is aborted and the records \
                 since the last commit will be polled again"
            ))
            })?;
        if let Some(t) = self.transactions.as_mut() {
            t.open = false;
        }
        // The copy in the worker's offsets topic behind a connector's own
        // (outside the transaction, as Kafka writes it).
        if !offsets.is_empty() {
            let entries = offsets.into_iter().map(|(p, o)| (p, Some(o))).collect();
            self.offsets.write_fallback(entries).await;
        }
        Ok(())
    }

    /// Abort the open transaction, if any: its records and offsets are
    /// discarded by Kafka, the stored offsets stay where the last commit
    /// put them. A failure here is only logged: the task is failing, and a
    /// new instance's `init_transactions` aborts what is left open.
    pub(super) async fn abort_transaction(&mut self) {
        if let Err(e) = self.try_abort().await {
            tracing::warn!(task = %self.settings.id, error = %e,
                "cannot abort the open transaction; the next instance of the task aborts it");
        }
    }

    async fn try_abort(&mut self) -> Result<()> {
        let Some(t) = self.transactions.as_mut() else {
            return Ok(());
        };
        if !std::mem::replace(&mut t.open, false) {
            return Ok(());
        }
        let id = &self.settings.id;
        self.producer
            .abort_transaction(self.settings.flush_timeout)
            .await
            .map_err(|e| {
                ConnectError::from(e)
                    .context(format!("source task {id}: cannot abort its transaction"))
            })
    }
}
