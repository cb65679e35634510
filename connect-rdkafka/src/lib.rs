//! The rdkafka adapter: the port on librdkafka (bundled), for real brokers
//! and for librdkafka's mock cluster ([`MockKafka`]).
//!
//! Client properties use Kafka's names; Java-only ones librdkafka does not
//! know (serializer classes, `max.poll.records`, ...) are dropped or used by
//! the adapter itself. Defaults differing from librdkafka's: the producer uses
//! `partitioner=murmur2_random` (Java's key partitioning), consumers use
//! `fetch.wait.max.ms=10` and `fetch.queue.backoff.ms=10` (librdkafka's
//! defaults stall fetching for up to a second when its local queue fills)
//! and `queued.max.messages.kbytes=4096` (librdkafka prefetches 64 MiB).

mod admin;
mod client_log;
mod consumer;
mod errors;
mod mock;
mod producer;

use std::sync::Arc;

pub use self::mock::MockKafka;
use connect_kafka::{
    Admin, ClientConfig, Consumer, DeliverySink, KafkaCluster, KafkaError, Producer,
};

/// Properties Java clients accept that librdkafka rejects as unknown.
const JAVA_ONLY: &[&str] = &[
    "key.serializer",
    "value.serializer",
    "key.deserializer",
    "value.deserializer",
    "buffer.memory",
    "max.poll.records",
    "interceptor.classes",
    "metric.reporters",
    "default.api.timeout.ms",
    "max.block.ms",
    "retry.backoff.max.ms",
    "auto.include.jmx.reporter",
];

/// A Kafka cluster reached through librdkafka.
///
/// ```no_run
/// use connect_rdkafka::RdKafkaCluster;
/// use connect_kafka::{ClientConfig, KafkaCluster};
///
/// let mut base = ClientConfig::new();
/// base.insert("bootstrap.servers".into(), "localhost:9092".into());
/// let cluster = RdKafkaCluster::new(base);
/// let admin = cluster.admin(&ClientConfig::new()).unwrap();
/// ```
#[derive(Debug, Clone)]
pub struct RdKafkaCluster {
    base: ClientConfig,
}

impl RdKafkaCluster {
    /// A cluster whose clients all start from `base` (at least
    /// `bootstrap.servers`); per-client properties override it.
    pub fn new(base: ClientConfig) -> Self {
        RdKafkaCluster { base }
    }

    /// Merge base and per-client properties into an rdkafka config, with the
    /// adapter's `defaults` where neither sets a key.
    fn client_config(
        &self,
        config: &ClientConfig,
        defaults: &[(&str, &str)],
    ) -> ::rdkafka::ClientConfig {
        let mut merged = self.base.clone();
        merged.extend(config.iter().map(|(k, v)| (k.clone(), v.clone())));
        for (k, v) in defaults {
            merged
                .entry((*k).to_string())
                .or_insert_with(|| (*v).to_string());
        }
        let mut out = ::rdkafka::ClientConfig::new();
        for (k, v) in &merged {
            if JAVA_ONLY.contains(&k.as_str()) {
                continue;
            }
            let value = if k == "partition.assignment.strategy" {
                translate_assignors(v)
            } else {
                v.clone()
            };
            out.set(k, value);
        }
        // librdkafka drops debug lines below its log level, which
        // rust-rdkafka sets from the log filter at creation.
        if client_log::debug_asked(&out) {
            out.set_log_level(::rdkafka::config::RDKafkaLogLevel::Debug);
        }
        out
    }
}

/// What a consumer gets where neither the worker nor the connector sets it.
const CONSUMER_DEFAULTS: &[(&str, &str)] = &[
    ("fetch.wait.max.ms", "10"),
    ("fetch.queue.backoff.ms", "10"),
    // librdkafka prefetches up to 64 MiB by default, sized for servers;
    // Java's consumer buffers about one fetch per partition
    // (max.partition.fetch.bytes, 1 MiB). 4 MiB keeps a sink worker's peak
    // memory near 30 MB at full speed (BENCHMARKS.md, head-to-head) for a
    // few percent more CPU.
    ("queued.max.messages.kbytes", "4096"),
];

/// Java assignor class names to librdkafka's assignor names.
fn translate_assignors(value: &str) -> String {
    value
        .split(',')
        .map(|a| match a.trim().rsplit('.').next().unwrap_or_default() {
            "RangeAssignor" => "range",
            "RoundRobinAssignor" => "roundrobin",
            "CooperativeStickyAssignor" => "cooperative-sticky",
            _ => a.trim(),
        })
        .collect::<Vec<_>>()
        .join(",")
}

impl KafkaCluster for RdKafkaCluster {
    fn producer(
        &self,
        config: &ClientConfig,
        sink: Arc<dyn DeliverySink>,
    ) -> Result<Box<dyn Producer>, KafkaError> {
        let native = self.client_config(config, &[("partitioner", "murmur2_random")]);
        Ok(Box::new(producer::RdProducer::new(&native, sink)?))
    }

    fn consumer(&self, config: &ClientConfig) -> Result<Box<dyn Consumer>, KafkaError> {
        let max_poll_records = match config
            .get("max.poll.records")
            .or_else(|| self.base.get("max.poll.records"))
        {
            None => 500,
            Some(v) => v.trim().parse::<usize>().map_err(|_| {
                KafkaError::new(
                    connect_kafka::KafkaErrorKind::Config,
                    format!("client property max.poll.records='{v}' is not a valid number"),
                )
            })?,
        };
        let native = self.client_config(config, CONSUMER_DEFAULTS);
        Ok(Box::new(consumer::RdConsumer::new(
            &native,
            max_poll_records.max(1),
        )?))
    }

    fn admin(&self, config: &ClientConfig) -> Result<Box<dyn Admin>, KafkaError> {
        let native = self.client_config(config, &[("allow.auto.create.topics", "false")]);
        Ok(Box::new(admin::RdAdmin::new(&native)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn java_assignor_classes_become_librdkafka_names() {
        assert_eq!(
            translate_assignors(
                "org.apache.kafka.clients.consumer.CooperativeStickyAssignor, range"
            ),
            "cooperative-sticky,range"
        );
    }

    #[test]
    fn java_only_properties_are_dropped_and_defaults_filled() {
        let mut base = ClientConfig::new();
        base.insert("bootstrap.servers".into(), "b:9092".into());
        let cluster = RdKafkaCluster::new(base);
        let mut config = ClientConfig::new();
        config.insert(
            "key.serializer".into(),
            "org.apache.kafka.common.serialization.ByteArraySerializer".into(),
        );
        config.insert("fetch.wait.max.ms".into(), "50".into());
        let native = cluster.client_config(&config, CONSUMER_DEFAULTS);
        assert_eq!(native.get("key.serializer"), None);
        assert_eq!(native.get("fetch.wait.max.ms"), Some("50"));
        assert_eq!(native.get("fetch.queue.backoff.ms"), Some("10"));
        assert_eq!(native.get("queued.max.messages.kbytes"), Some("4096"));
        assert_eq!(native.get("bootstrap.servers"), Some("b:9092"));
    }
}
