//! The in-memory Kafka and its fault injection, re-exported so a plugin's
//! tests depend on the testkit only.
//!
//! [`MemoryKafka`] is a whole cluster in the process: topics, Kafka's
//! default partitioner, consumer groups, committed offsets, compaction,
//! transactions. Faults are injected on the cluster handle and hit whatever
//! runs on it, including the real source and sink loops of
//! [`SourcePipeline`](crate::SourcePipeline) and
//! [`SinkPipeline`](crate::SinkPipeline):
//!
//! | call | effect |
//! |---|---|
//! | [`MemoryKafka::fail_next_produce`]`(n, kind)` | the next `n` produced records fail on delivery |
//! | [`MemoryKafka::fail_next_commit`]`(n, kind)` | the next `n` consumer offset commits fail |
//! | [`MemoryKafka::fail_next_fetch`]`(n, kind)` | the next `n` consumer polls fail |
//! | [`MemoryKafka::set_ack_delay`]`(d)` | acknowledgements wait `d` |
//! | [`MemoryKafka::take_leader_away`] / [`MemoryKafka::restore_leader`] | a partition is unavailable, then back |
//! | [`MemoryKafka::drop_group_member`] | a consumer is dropped from its group (rebalance) |
//!
//! `kind` is [`FaultKind::Retriable`] (a broker briefly unavailable) or
//! [`FaultKind::Fatal`].
//!
//! ```
//! use connect_testkit::kafka::{FaultKind, MemoryKafka, NewTopic};
//!
//! let kafka = MemoryKafka::new();
//! kafka.create_topic(&NewTopic::new("orders", 3)).unwrap();
//! kafka.fail_next_produce(2, FaultKind::Retriable);
//! assert_eq!(kafka.partitions("orders"), Some(3));
//! assert_eq!(kafka.end_offset("orders", 0), Some(0));
//! ```

pub use connect_runtime::kafka::memory::{FaultKind, MemoryKafka};
pub use connect_runtime::kafka::{
    ClientConfig, ConsumedRecord, KafkaCluster, KafkaError, KafkaErrorKind, NewTopic,
    TimestampType, TopicPartition, TopicPartitionOffsets,
};

/// Every record of `topic` as a `read_committed` consumer reads it, partition
/// by partition (offset order within a partition); empty for an unknown topic.
pub fn topic_records(kafka: &MemoryKafka, topic: &str) -> Vec<ConsumedRecord> {
    let partitions = kafka.partitions(topic).unwrap_or(0);
    (0..partitions)
        .flat_map(|p| kafka.records(topic, p))
        .collect()
}
