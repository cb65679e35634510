//! The Kafka port: everything the runtime does with Kafka, and the in-memory
//! adapter (the librdkafka one is the `connect-rdkafka` crate).
//!
//! The runtime is handed one `Arc<dyn KafkaCluster>` and reaches Kafka only
//! through the traits here: [`Producer`] (per-record acknowledgement through a
//! [`DeliverySink`] callback, transactions), [`Consumer`] (group membership
//! with assigned/revoked events, pause/resume, seek, commits) and [`Admin`]
//! (create, describe and list topics). Adapters implement them; no adapter
//! type appears in these signatures.
//!
//! Produce is callback based, not a future per record: the runtime hands each
//! record a `u64` token (an index into its own offset tracker) and the
//! adapter calls [`DeliverySink::delivered`] with that token once the record
//! is acknowledged or has failed for good.

mod acks;
mod error;
pub mod memory;
pub mod partitioner;
pub mod security;
pub mod time;
mod types;

pub use acks::{AckFailure, DeliveryWaiter};
pub use connect_api::sink::{TopicPartition, TopicPartitionOffsets};
pub use error::{KafkaError, KafkaErrorKind, SendError};
pub use types::{
    ClientConfig, CommitMode, ConsumedRecord, ConsumerEvent, CreateTopicOutcome, Delivered,
    GroupMetadata, NewTopic, OutHeader, OutRecord, Subscription, TimestampType, TopicDescription,
};

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

/// Receives the outcome of every record a [`Producer`] accepted.
///
/// Called from the adapter's delivery thread or task, possibly many times in a
/// row for a batch, so it must be quick (mark an offset, wake a waiter) and
/// must not block on the producer.
pub trait DeliverySink: Send + Sync {
    /// The record sent with `token` was written (`Ok`) or failed after the
    /// producer's own retries (`Err`). Called exactly once per accepted record.
    fn delivered(&self, token: u64, result: Result<Delivered<'_>, KafkaError>);
}

/// Produces records; acknowledgements go to the [`DeliverySink`] the producer
/// was created with.
///
/// Transactions follow Kafka's protocol: `init_transactions` once (requires
/// `transactional.id`), then per transaction `begin_transaction`, sends,
/// optionally `send_offsets_to_transaction`, and `commit_transaction` or
/// `abort_transaction`.
#[async_trait]
pub trait Producer: Send + Sync {
    /// Queue `record`; its outcome is reported later under `token`.
    /// [`SendError::QueueFull`] is backpressure: nothing was queued, wait and
    /// send again. Any other error means the record was rejected and will not
    /// be reported.
    fn send(&self, record: &OutRecord<'_>, token: u64) -> Result<(), SendError>;

    /// Wait until every queued record has been reported to the sink, or `timeout`.
    async fn flush(&self, timeout: Duration) -> Result<(), KafkaError>;

    /// Register `transactional.id` with the cluster, fencing older producers.
    async fn init_transactions(&self, timeout: Duration) -> Result<(), KafkaError>;

    /// Start a transaction.
    fn begin_transaction(&self) -> Result<(), KafkaError>;

    /// Add consumer offsets to the current transaction; they are stored for
    /// the group only if the transaction commits.
    async fn send_offsets_to_transaction(
        &self,
        offsets: &TopicPartitionOffsets,
        group: &GroupMetadata,
        timeout: Duration,
    ) -> Result<(), KafkaError>;

    /// Flush and commit the current transaction.
    async fn commit_transaction(&self, timeout: Duration) -> Result<(), KafkaError>;

    /// Abort the current transaction; its records stay invisible to
    /// `read_committed` consumers.
    async fn abort_transaction(&self, timeout: Duration) -> Result<(), KafkaError>;
}

/// Consumes records as a member of a consumer group (`group.id`), honoring
/// `auto.offset.reset`, `isolation.level` and `enable.auto.commit`, or from
/// explicitly assigned partitions without a group ([`Consumer::assign`]).
#[async_trait]
pub trait Consumer: Send {
    /// Replace the subscription; partitions arrive as
    /// [`ConsumerEvent::Assigned`] from later polls.
    fn subscribe(&mut self, subscription: &Subscription) -> Result<(), KafkaError>;

    /// Wait up to `timeout` for records or a rebalance event; `Ok(None)` when
    /// nothing happened in time.
    async fn poll(&mut self, timeout: Duration) -> Result<Option<ConsumerEvent>, KafkaError>;

    /// Stop returning records of `partitions` (they stay assigned).
    fn pause(&mut self, partitions: &[TopicPartition]) -> Result<(), KafkaError>;

    /// Resume returning records of `partitions`.
    fn resume(&mut self, partitions: &[TopicPartition]) -> Result<(), KafkaError>;

    /// Read `partition` from `offset` next (an assigned partition).
    fn seek(&mut self, partition: &TopicPartition, offset: i64) -> Result<(), KafkaError>;

    /// Store `offsets` (next offset to read, per partition) for the group.
    async fn commit(
        &mut self,
        offsets: &TopicPartitionOffsets,
        mode: CommitMode,
    ) -> Result<(), KafkaError>;

    /// The group's committed offsets for `partitions`; partitions without a
    /// committed offset are absent.
    async fn committed(
        &mut self,
        partitions: &[TopicPartition],
        timeout: Duration,
    ) -> Result<TopicPartitionOffsets, KafkaError>;

    /// The partitions currently assigned to this member.
    fn assignment(&self) -> Result<Vec<TopicPartition>, KafkaError>;

    /// The end of `partition`'s log (its high watermark) as this consumer
    /// last learned it, without asking the cluster: what lag is measured
    /// against. `None` when not known (the default).
    fn end_offset(&self, partition: &TopicPartition) -> Option<i64> {
        let _ = partition;
        None
    }

    /// Read exactly `partitions` from now on, outside any consumer group
    /// (Kafka's `assign`): each from the given offset, or from the start of
    /// its log when `None`. Replaces an earlier assignment; no rebalance
    /// events follow, and nothing is committed (create the consumer with
    /// `enable.auto.commit=false`; `group.id` is not needed). An offset out
    /// of the log's range follows `auto.offset.reset`. Fails on a consumer
    /// that subscribed to a group.
    fn assign(&mut self, partitions: &[(TopicPartition, Option<i64>)]) -> Result<(), KafkaError>;

    /// The end offsets (high watermarks: the offset the next record will
    /// get) of `partitions`, in their order, asked from the cluster now,
    /// unlike [`Consumer::end_offset`]. Works for any partition, assigned
    /// or not.
    async fn end_offsets(
        &mut self,
        partitions: &[TopicPartition],
        timeout: Duration,
    ) -> Result<Vec<i64>, KafkaError>;

    /// The offset of the next record this consumer will return for the
    /// assigned `partition` (past skipped transaction markers and compacted
    /// gaps), when the adapter knows it; `None` otherwise (the default).
    /// Lets a reader that must reach an end offset see that it did even
    /// when the last offsets hold no record it receives.
    fn position(&self, partition: &TopicPartition) -> Option<i64> {
        let _ = partition;
        None
    }

    /// This member's group metadata, for transactional offset commits.
    fn group_metadata(&self) -> Option<GroupMetadata>;

    /// Leave the group (its partitions move to other members without waiting
    /// for a session timeout). Dropping the consumer also leaves.
    async fn close(&mut self) -> Result<(), KafkaError>;
}

/// Topic administration.
#[async_trait]
pub trait Admin: Send + Sync {
    /// Create `topic`; an existing topic is [`CreateTopicOutcome::AlreadyExists`],
    /// a cluster without CreateTopics support is [`CreateTopicOutcome::Unsupported`].
    async fn create_topic(
        &self,
        topic: &NewTopic,
        timeout: Duration,
    ) -> Result<CreateTopicOutcome, KafkaError>;

    /// Describe `name`; `Ok(None)` when it does not exist.
    async fn describe_topic(
        &self,
        name: &str,
        timeout: Duration,
    ) -> Result<Option<TopicDescription>, KafkaError>;

    /// Names of all topics, sorted.
    async fn list_topics(&self, timeout: Duration) -> Result<Vec<String>, KafkaError>;

    /// The cluster's id (Kafka Connect's `GET /` reports it as
    /// `kafka_cluster_id`); `Ok(None)` when the cluster does not report one.
    async fn cluster_id(&self, _timeout: Duration) -> Result<Option<String>, KafkaError> {
        Ok(None)
    }
}

/// A Kafka cluster the runtime can open clients on: the one handle the runtime
/// is given.
pub trait KafkaCluster: Send + Sync {
    /// A producer configured by `config`, reporting acknowledgements to `sink`.
    fn producer(
        &self,
        config: &ClientConfig,
        sink: Arc<dyn DeliverySink>,
    ) -> Result<Box<dyn Producer>, KafkaError>;

    /// A consumer configured by `config` (`group.id` required for group
    /// membership and commits).
    fn consumer(&self, config: &ClientConfig) -> Result<Box<dyn Consumer>, KafkaError>;

    /// An admin client configured by `config`.
    fn admin(&self, config: &ClientConfig) -> Result<Box<dyn Admin>, KafkaError>;
}
