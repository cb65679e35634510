//! Sink tasks: receive records from Kafka, write them to an external system.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use futures::future::BoxFuture;

use crate::config::ConfigMap;
use crate::error::{ConnectError, Result};
use crate::record::SinkRecord;

/// A Kafka topic partition.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TopicPartition {
    /// Topic name.
    pub topic: Arc<str>,
    /// Partition number.
    pub partition: i32,
}

impl TopicPartition {
    /// A topic partition.
    pub fn new(topic: impl Into<Arc<str>>, partition: i32) -> Self {
        TopicPartition {
            topic: topic.into(),
            partition,
        }
    }
}

impl fmt::Display for TopicPartition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.topic, self.partition)
    }
}

/// Offsets per partition; an offset is the next record to read, as in Kafka.
pub type TopicPartitionOffsets = BTreeMap<TopicPartition, i64>;

/// Reports a record the sink task could not write (KIP-610), so it goes to
/// the error log and the dead letter queue instead of failing the task.
///
/// A sink task uses it like this (the runtime provides the reporter):
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use futures::future::BoxFuture;
/// use connect_api::sink::ErrantRecordReporter;
/// use connect_api::{ConnectError, Record, Result, SinkRecord, Value};
///
/// #[derive(Default)]
/// struct Collect(Mutex<Vec<i64>>);
/// impl ErrantRecordReporter for Collect {
///     fn report(&self, record: &SinkRecord, _: &ConnectError) -> BoxFuture<'static, Result<()>> {
///         self.0.lock().unwrap().push(record.kafka_offset);
///         Box::pin(async { Ok(()) })
///     }
/// }
/// let reporter = Arc::new(Collect::default());
/// let bad = SinkRecord::new(Record::new("t", None, Value::from("not a number")), 0, 7);
/// // In put(): skip what cannot be written, report it, carry on.
/// futures::executor::block_on(reporter.report(&bad, &ConnectError::data("not a number"))).unwrap();
/// assert_eq!(*reporter.0.lock().unwrap(), [7]);
/// ```
pub trait ErrantRecordReporter: Send + Sync {
    /// Report `record` with `error`. The runtime awaits every returned future
    /// before committing offsets; awaiting it here is optional. With
    /// `errors.tolerance=none` the future fails and the task stops.
    fn report(&self, record: &SinkRecord, error: &ConnectError) -> BoxFuture<'static, Result<()>>;
}

/// What a sink task may ask of the runtime.
///
/// The runtime implements it (connect-testkit has a recording double).
/// The hints (`timeout`, `request_commit`) and the reporter have defaults,
/// so a test double implements only what it checks, and a hook added in a
/// later 0.x version comes with a default rather than breaking it. A task
/// typically keeps the `Arc` from `start` and, after a transient
/// failure in `put`, asks for a pause before redelivery:
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use connect_api::config::ConfigMap;
/// use connect_api::sink::{ErrantRecordReporter, SinkTaskContext, TopicPartition, TopicPartitionOffsets};
///
/// #[derive(Default)]
/// struct Ctx { config: ConfigMap, timeout: Mutex<Option<u64>> }
/// impl SinkTaskContext for Ctx {
///     fn configs(&self) -> &ConfigMap { &self.config }
///     fn offset(&self, _: TopicPartitionOffsets) {}
///     fn timeout(&self, ms: u64) { *self.timeout.lock().unwrap() = Some(ms); }
///     fn assignment(&self) -> Vec<TopicPartition> { Vec::new() }
///     fn pause(&self, _: &[TopicPartition]) {}
///     fn resume(&self, _: &[TopicPartition]) {}
///     fn request_commit(&self) {}
///     fn errant_record_reporter(&self) -> Option<Arc<dyn ErrantRecordReporter>> { None }
/// }
/// let ctx = Ctx::default();
/// ctx.timeout(5_000);
/// assert_eq!(*ctx.timeout.lock().unwrap(), Some(5_000));
/// ```
pub trait SinkTaskContext: Send + Sync {
    /// The task's configuration.
    fn configs(&self) -> &ConfigMap;
    /// Reset consumer positions before the next delivery (seek).
    fn offset(&self, offsets: TopicPartitionOffsets);
    /// After a retriable `put` failure, wait `timeout_ms` before redelivering.
    /// The default ignores it (the runtime's context implements it).
    fn timeout(&self, _timeout_ms: u64) {}
    /// Partitions currently assigned to this task.
    fn assignment(&self) -> Vec<TopicPartition>;
    /// Stop delivering records of `partitions`.
    fn pause(&self, partitions: &[TopicPartition]);
    /// Resume delivering records of `partitions`.
    fn resume(&self, partitions: &[TopicPartition]);
    /// Ask for an offset commit soon (a hint; the default ignores it).
    fn request_commit(&self) {}
    /// The errant-record reporter, when the connector has a DLQ or error
    /// logging configured; the default has none, as Kafka's.
    fn errant_record_reporter(&self) -> Option<Arc<dyn ErrantRecordReporter>> {
        None
    }
}

/// A task that writes batches of records to an external system.
///
/// `put` receives each batch; `pre_commit` decides which offsets Kafka may
/// store (by default: `flush`, then all of them). Offsets are keyed by the
/// partition the record was consumed from, whatever transforms did to it.
///
/// ```
/// use std::sync::Arc;
/// use async_trait::async_trait;
/// use connect_api::config::ConfigMap;
/// use connect_api::sink::{SinkTask, SinkTaskContext, TopicPartitionOffsets};
/// use connect_api::{Result, SinkRecord};
///
/// #[derive(Default)]
/// struct Collect { buffered: Vec<String>, written: Vec<String> }
///
/// #[async_trait]
/// impl SinkTask for Collect {
///     async fn start(&mut self, _: &ConfigMap, _: Arc<dyn SinkTaskContext>) -> Result<()> { Ok(()) }
///     async fn put(&mut self, records: &[SinkRecord]) -> Result<()> {
///         self.buffered.extend(records.iter().map(|r| r.record.value.to_string()));
///         Ok(())
///     }
///     async fn flush(&mut self, _: &TopicPartitionOffsets) -> Result<()> {
///         self.written.append(&mut self.buffered);
///         Ok(())
///     }
///     async fn stop(&mut self) -> Result<()> { Ok(()) }
/// }
/// let mut t = Collect::default();
/// let rec = SinkRecord::new(connect_api::Record::new("t", None, "a".into()), 0, 0);
/// futures::executor::block_on(async {
///     t.put(&[rec]).await.unwrap();
///     let committable = t.pre_commit(TopicPartitionOffsets::new()).await.unwrap();
///     assert!(committable.is_empty());
/// });
/// assert_eq!(t.written, ["a"]);
/// ```
#[async_trait]
pub trait SinkTask: Send {
    /// Start with the task configuration.
    async fn start(&mut self, config: &ConfigMap, context: Arc<dyn SinkTaskContext>) -> Result<()>;

    /// Partitions newly assigned to this task.
    async fn open(&mut self, _partitions: &[TopicPartition]) -> Result<()> {
        Ok(())
    }

    /// Write (or buffer) a batch; may be empty. A retriable error makes the
    /// runtime redeliver the same batch after `context.timeout`; any other
    /// error fails the task. The batch is borrowed so that redelivery needs
    /// no copy; clone what must outlive the call.
    async fn put(&mut self, records: &[SinkRecord]) -> Result<()>;

    /// Make everything `put` so far durable.
    async fn flush(&mut self, _offsets: &TopicPartitionOffsets) -> Result<()> {
        Ok(())
    }

    /// Decide what may be committed, given the offsets consumed so far. The
    /// default flushes and returns them all. The runtime never commits past
    /// what was consumed, whatever this returns.
    async fn pre_commit(
        &mut self,
        offsets: TopicPartitionOffsets,
    ) -> Result<TopicPartitionOffsets> {
        self.flush(&offsets).await?;
        Ok(offsets)
    }

    /// Partitions taken away from this task (after their final commit).
    async fn close(&mut self, _partitions: &[TopicPartition]) -> Result<()> {
        Ok(())
    }

    /// Stop and release resources.
    async fn stop(&mut self) -> Result<()>;
}
