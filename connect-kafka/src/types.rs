//! Plain data carried through the Kafka port.

use std::any::Any;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use bytes::Bytes;

/// Kafka client properties (`bootstrap.servers`, `group.id`,
/// `auto.offset.reset`, `isolation.level`, `transactional.id`, ...), with
/// Kafka's names. Adapters pass through what they understand. A
/// [`ConfigMap`](connect_api::ConfigMap), so `Debug` hides `sasl.jaas.config`
/// and the SSL passwords.
pub type ClientConfig = connect_api::ConfigMap;

/// A header as produced: key and optional (null) value.
pub type OutHeader = (String, Option<Vec<u8>>);

/// A record to produce. It borrows its bytes so the runtime can serialize into
/// buffers it reuses; the adapter copies what it keeps before `send` returns.
#[derive(Debug, Clone, Copy)]
pub struct OutRecord<'a> {
    /// Destination topic.
    pub topic: &'a str,
    /// Explicit partition; `None` lets the adapter apply Kafka's default
    /// partitioner (murmur2 of the key, sticky for null keys).
    pub partition: Option<i32>,
    /// Key bytes; `None` is a null key.
    pub key: Option<&'a [u8]>,
    /// Value bytes; `None` is a tombstone.
    pub value: Option<&'a [u8]>,
    /// CreateTime in epoch milliseconds; `None` lets the producer use now.
    pub timestamp: Option<i64>,
    /// Headers in order; keys may repeat.
    pub headers: &'a [OutHeader],
}

impl<'a> OutRecord<'a> {
    /// A record for `topic` with `value`, no key, no headers, default partitioning.
    pub fn new(topic: &'a str, value: Option<&'a [u8]>) -> Self {
        OutRecord {
            topic,
            partition: None,
            key: None,
            value,
            timestamp: None,
            headers: &[],
        }
    }
}

/// Where an acknowledged record was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Delivered<'a> {
    /// Topic written to.
    pub topic: &'a str,
    /// Partition written to.
    pub partition: i32,
    /// Offset of the record in its partition.
    pub offset: i64,
    /// The record's timestamp as stored (CreateTime or LogAppendTime), when known.
    pub timestamp: Option<i64>,
}

/// How a consumed record's timestamp was assigned: the plugin contract's
/// own type, so the sink path passes it through unconverted.
pub use connect_api::TimestampType;

/// A record read from Kafka.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumedRecord {
    /// Topic it was read from (shared between records of one topic).
    pub topic: Arc<str>,
    /// Partition it was read from.
    pub partition: i32,
    /// Its offset.
    pub offset: i64,
    /// Timestamp in epoch milliseconds, when `timestamp_type` is not `NotAvailable`.
    pub timestamp: Option<i64>,
    /// How the timestamp was assigned.
    pub timestamp_type: TimestampType,
    /// Key bytes; `None` is a null key.
    pub key: Option<Bytes>,
    /// Value bytes; `None` is a tombstone.
    pub value: Option<Bytes>,
    /// Headers in order; keys may repeat, values may be null.
    pub headers: Vec<(String, Option<Bytes>)>,
}

/// What a consumer subscribes to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Subscription {
    /// These topics.
    Topics(Vec<String>),
    /// Every topic whose whole name matches this regular expression
    /// (Kafka Connect's `topics.regex`).
    Pattern(String),
}

/// Whether an offset commit waits for the broker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommitMode {
    /// Wait until the group coordinator stored the offsets.
    Sync,
    /// Send and return; failures are logged by the adapter.
    Async,
}

/// Something a consumer poll produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConsumerEvent {
    /// Records, in offset order within each partition.
    Records(Vec<ConsumedRecord>),
    /// Partitions newly assigned to this member (after a rebalance).
    Assigned(Vec<super::TopicPartition>),
    /// Partitions taken from this member. They stay this member's (no other
    /// member reads them) until its next poll or close, so the runtime
    /// commits and closes them first; no record of them is returned after
    /// this event unless they are assigned again.
    Revoked(Vec<super::TopicPartition>),
}

/// Identifies a consumer's group membership for
/// [`Producer::send_offsets_to_transaction`](super::Producer::send_offsets_to_transaction).
/// Obtained from [`Consumer::group_metadata`](super::Consumer::group_metadata);
/// adapters may keep their own state in it, which other adapters ignore.
#[derive(Clone)]
pub struct GroupMetadata {
    /// The consumer group id.
    pub group_id: String,
    /// The group generation the consumer is in (-1 when unknown).
    pub generation_id: i32,
    /// The member id (empty when unknown).
    pub member_id: String,
    adapter_state: Option<Arc<dyn Any + Send + Sync>>,
}

impl GroupMetadata {
    /// Metadata for `group_id` without a generation.
    pub fn new(group_id: impl Into<String>) -> Self {
        GroupMetadata {
            group_id: group_id.into(),
            generation_id: -1,
            member_id: String::new(),
            adapter_state: None,
        }
    }

    /// Attach adapter-private state (for example the client library's own
    /// metadata handle).
    pub fn with_adapter_state(mut self, state: Arc<dyn Any + Send + Sync>) -> Self {
        self.adapter_state = Some(state);
        self
    }

    /// Adapter-private state of type `T`, if this metadata carries one.
    pub fn adapter_state<T: Any + Send + Sync>(&self) -> Option<&T> {
        self.adapter_state.as_deref()?.downcast_ref::<T>()
    }
}

impl fmt::Debug for GroupMetadata {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GroupMetadata")
            .field("group_id", &self.group_id)
            .field("generation_id", &self.generation_id)
            .field("member_id", &self.member_id)
            .finish_non_exhaustive()
    }
}

/// A topic to create.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewTopic {
    /// Topic name.
    pub name: String,
    /// Number of partitions (at least 1).
    pub partitions: i32,
    /// Replication factor; `-1` uses the broker default.
    pub replication_factor: i16,
    /// Topic configs, e.g. `cleanup.policy=compact`.
    pub configs: BTreeMap<String, String>,
}

impl NewTopic {
    /// A topic with `partitions`, the broker's default replication factor and no configs.
    pub fn new(name: impl Into<String>, partitions: i32) -> Self {
        NewTopic {
            name: name.into(),
            partitions,
            replication_factor: -1,
            configs: BTreeMap::new(),
        }
    }

    /// Set one topic config.
    pub fn config(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.configs.insert(key.into(), value.into());
        self
    }
}

/// What [`Admin::create_topic`](super::Admin::create_topic) did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CreateTopicOutcome {
    /// The topic was created.
    Created,
    /// A topic of that name existed already (its settings were not changed).
    AlreadyExists,
    /// The cluster cannot create topics through the admin API (for example
    /// librdkafka's mock cluster); the runtime relies on auto-creation.
    Unsupported {
        /// Why, for the log.
        reason: String,
    },
}

/// What a cluster knows about a topic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicDescription {
    /// Topic name.
    pub name: String,
    /// Number of partitions.
    pub partitions: i32,
    /// Replicas per partition, when the adapter knows it (else `-1`).
    pub replication_factor: i16,
    /// Topic configs the adapter knows of (may be empty).
    pub configs: BTreeMap<String, String>,
}
