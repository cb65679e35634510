//! Source tasks: read from an external system, hand records to the runtime.

use std::sync::Arc;

use async_trait::async_trait;

use crate::config::ConfigMap;
use crate::error::{ConnectError, Result};
use crate::record::{SourceMap, SourceRecord};

/// Where a record landed in Kafka, given to [`SourceTask::commit_record`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RecordMetadata {
    /// Topic written to.
    pub topic: Arc<str>,
    /// Partition written to.
    pub partition: i32,
    /// Offset assigned by the broker.
    pub offset: i64,
    /// Timestamp stored with the record.
    pub timestamp: Option<i64>,
}

impl RecordMetadata {
    /// Where a record landed: `topic`, `partition`, `offset`, `timestamp`.
    pub fn new(
        topic: impl Into<Arc<str>>,
        partition: i32,
        offset: i64,
        timestamp: Option<i64>,
    ) -> Self {
        RecordMetadata {
            topic: topic.into(),
            partition,
            offset,
            timestamp,
        }
    }
}

/// Reads the offsets the runtime stored for this connector.
///
/// ```
/// use connect_api::source::OffsetStorageReader;
/// use connect_api::SourceMap;
///
/// /// One stored offset, as a test double.
/// struct One(SourceMap, SourceMap);
/// impl OffsetStorageReader for One {
///     fn offset(&self, p: &SourceMap) -> Option<SourceMap> { (*p == self.0).then(|| self.1.clone()) }
/// }
/// let mut p = SourceMap::new();
/// p.insert("filename".into(), "a.txt".into());
/// let mut o = SourceMap::new();
/// o.insert("position".into(), 42.into());
/// let reader = One(p.clone(), o.clone());
/// assert_eq!(reader.offsets(&[p.clone(), SourceMap::new()]), vec![(p, o)]);
/// ```
pub trait OffsetStorageReader: Send + Sync {
    /// The last committed offset of one source partition.
    fn offset(&self, partition: &SourceMap) -> Option<SourceMap>;

    /// The last committed offsets of several source partitions (absent ones
    /// are left out).
    fn offsets(&self, partitions: &[SourceMap]) -> Vec<(SourceMap, SourceMap)> {
        partitions
            .iter()
            .filter_map(|p| self.offset(p).map(|o| (p.clone(), o)))
            .collect()
    }
}

/// What a source task may ask of the runtime.
///
/// ```
/// use std::sync::Arc;
/// use connect_api::config::ConfigMap;
/// use connect_api::source::{OffsetStorageReader, SourceTaskContext};
/// use connect_api::SourceMap;
///
/// struct NoOffsets;
/// impl OffsetStorageReader for NoOffsets {
///     fn offset(&self, _: &SourceMap) -> Option<SourceMap> { None }
/// }
/// /// A context for a task's first start: its config, nothing stored.
/// struct Fresh(ConfigMap, NoOffsets);
/// impl SourceTaskContext for Fresh {
///     fn configs(&self) -> &ConfigMap { &self.0 }
///     fn offset_storage_reader(&self) -> &dyn OffsetStorageReader { &self.1 }
/// }
/// let ctx: Arc<dyn SourceTaskContext> = Arc::new(Fresh(ConfigMap::new(), NoOffsets));
/// assert!(ctx.offset_storage_reader().offset(&SourceMap::new()).is_none());
/// ```
pub trait SourceTaskContext: Send + Sync {
    /// The task's configuration.
    fn configs(&self) -> &ConfigMap;
    /// Committed offsets, to resume from.
    fn offset_storage_reader(&self) -> &dyn OffsetStorageReader;

    /// Move the stored offset of `partition` to `offset` without producing a
    /// record: a quiet source (a change stream with no changes for hours)
    /// reports progress so that its resume position does not go stale. The
    /// offset is committed in order with the records polled before this
    /// call. The runtime's context implements it; the default does nothing,
    /// which suits test doubles only.
    fn heartbeat(&self, _partition: Arc<SourceMap>, _offset: SourceMap) {}

    /// The task's hand on its transactions, when it runs exactly once with
    /// `transaction.boundary=connector` (Kafka's
    /// `SourceTaskContext.transactionContext()`); `None` otherwise, and in
    /// the default.
    fn transaction_context(&self) -> Option<&dyn TransactionContext> {
        None
    }
}

/// Connector-defined transaction boundaries (KIP-618,
/// `transaction.boundary=connector`): the task says where a transaction
/// ends, and whether it is committed or aborted.
///
/// A request for "the transaction ending at `record`" names the record by
/// its source partition and source offset: the runtime acts on it right
/// after it has sent the first record it polls with equal ones (Kafka
/// compares the record objects; a Rust task hands its records over by
/// value). A request for the current transaction is acted on once the
/// batch being polled has been sent.
///
/// Committing writes the transaction's records and their source offsets
/// together. Aborting discards its records and leaves the stored offsets
/// where they were; the task goes on, and should not expect those records
/// to be polled again unless it rewinds itself.
///
/// ```
/// use std::sync::Arc;
/// use connect_api::source::TransactionContext;
/// use connect_api::{Record, SourceMap, SourceRecord};
///
/// /// Ends a transaction at every 100th row of a table scan.
/// fn end_every_hundredth(ctx: &dyn TransactionContext, row: u64, record: &SourceRecord) {
///     if row % 100 == 99 {
///         ctx.commit_transaction_at(record);
///     }
/// }
/// # struct Noop;
/// # impl TransactionContext for Noop {
/// #     fn commit_transaction(&self) {}
/// #     fn commit_transaction_at(&self, _: &SourceRecord) {}
/// #     fn abort_transaction(&self) {}
/// #     fn abort_transaction_at(&self, _: &SourceRecord) {}
/// # }
/// let record = SourceRecord::new(Arc::new(SourceMap::new()), SourceMap::new(), Record::default());
/// end_every_hundredth(&Noop, 99, &record);
/// ```
pub trait TransactionContext: Send + Sync {
    /// Commit the current transaction once the batch being polled is sent.
    fn commit_transaction(&self);
    /// Commit the transaction that ends with `record` (its records up to
    /// and including it).
    fn commit_transaction_at(&self, record: &SourceRecord);
    /// Abort the current transaction once the batch being polled is sent.
    fn abort_transaction(&self);
    /// Abort the transaction that ends with `record`.
    fn abort_transaction_at(&self, record: &SourceRecord);
}

/// A task that polls an external system for records.
///
/// `poll` is awaited in a loop. It should return within a second or so (an
/// empty batch is fine) so the runtime can flush offsets and react to
/// pause/stop; the runtime may also drop a pending `poll` future to stop the
/// task, so `poll` must not leave state half-updated across an `.await`.
/// Return [`ConnectError::retriable`](crate::ConnectError::retriable) for a
/// transient failure: the runtime polls again after a backoff.
///
/// ```
/// use std::sync::Arc;
/// use async_trait::async_trait;
/// use connect_api::config::ConfigMap;
/// use connect_api::source::{SourceTask, SourceTaskContext};
/// use connect_api::{Record, Result, Schema, SourceMap, SourceRecord, Value};
///
/// /// Emits "tick 0", "tick 1", ... and resumes after the last committed count.
/// struct Ticks { next: i64, partition: Arc<SourceMap> }
///
/// #[async_trait]
/// impl SourceTask for Ticks {
///     async fn start(&mut self, _: &ConfigMap, ctx: Arc<dyn SourceTaskContext>) -> Result<()> {
///         if let Some(off) = ctx.offset_storage_reader().offset(&self.partition) {
///             self.next = off.get("n").and_then(|n| n.as_i64()).unwrap_or(-1) + 1;
///         }
///         Ok(())
///     }
///     async fn poll(&mut self) -> Result<Vec<SourceRecord>> {
///         let n = self.next;
///         self.next += 1;
///         let mut offset = SourceMap::new();
///         offset.insert("n".into(), n.into());
///         let record = Record::new("ticks", Some(Schema::string()), Value::from(format!("tick {n}")));
///         Ok(vec![SourceRecord::new(self.partition.clone(), offset, record)])
///     }
///     async fn stop(&mut self) -> Result<()> { Ok(()) }
/// }
/// let mut t = Ticks { next: 0, partition: Arc::new(SourceMap::new()) };
/// let batch = futures::executor::block_on(t.poll()).unwrap();
/// assert_eq!(batch[0].record.value, Value::from("tick 0"));
/// ```
#[async_trait]
pub trait SourceTask: Send {
    /// Start with the task configuration from the connector.
    async fn start(
        &mut self,
        config: &ConfigMap,
        context: Arc<dyn SourceTaskContext>,
    ) -> Result<()>;

    /// The next batch of records; empty when there is nothing yet.
    async fn poll(&mut self) -> Result<Vec<SourceRecord>>;

    /// Called after each offset flush: everything polled before it is durable
    /// in Kafka and its offsets are stored. A notification, as in Kafka: an
    /// error is logged and the task keeps running.
    async fn commit(&mut self) -> Result<()> {
        Ok(())
    }

    /// Called once per record: with its metadata when Kafka acknowledged it,
    /// with `None` when it was dropped (filtered by a transform, or tolerated
    /// by `errors.tolerance=all`).
    ///
    /// Unlike Kafka, which keeps a copy of every polled record for this call,
    /// the record given here is the one that was produced (after the
    /// transforms; its source partition and offset are the polled ones). A
    /// record dropped by a transform is passed with its source partition and
    /// offset only: the transform consumed its data. Identify records by
    /// their source offset. A notification, as in Kafka: an error is
    /// logged, and the record's offset is committed all the same.
    ///
    /// Override it only to use it. The default body answers
    /// [`ConnectError::not_implemented`]: at that first answer the worker
    /// stops calling it and from then on lets go of each record as soon as
    /// the producer has its bytes, instead of keeping it until Kafka
    /// acknowledges it (less memory and a fifth more records per second in
    /// the source pipeline benchmark). Offsets are committed the same way
    /// either way. Do not return `not_implemented` from an override.
    async fn commit_record(
        &mut self,
        _record: &SourceRecord,
        _metadata: Option<&RecordMetadata>,
    ) -> Result<()> {
        Err(ConnectError::not_implemented("SourceTask::commit_record"))
    }

    /// Stop and release resources. Not called concurrently with `poll`.
    async fn stop(&mut self) -> Result<()>;
}
