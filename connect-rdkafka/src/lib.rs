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
//!
//! Security keys are Java's and translated once, in `translate_security`:
//! `security.protocol=SASL_PLAINTEXT` with `sasl.mechanism=PLAIN` and a
//! `PlainLoginModule` line in `sasl.jaas.config` become librdkafka's
//! `sasl.mechanisms`, `sasl.username` and `sasl.password`. This build of
//! librdkafka has no OpenSSL: `SSL`, `SASL_SSL` and SCRAM are refused with
//! an error that says so (see [`connect_kafka::sasl`]).

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
    ) -> Result<::rdkafka::ClientConfig, KafkaError> {
        let mut merged = self.base.clone();
        merged.extend(config.iter().map(|(k, v)| (k.clone(), v.clone())));
        for (k, v) in defaults {
            merged
                .entry((*k).to_string())
                .or_insert_with(|| (*v).to_string());
        }
        translate_security(&mut merged)?;
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
        Ok(out)
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

/// Java's security keys to librdkafka's, in place: `security.protocol`,
/// `sasl.mechanism` and `sasl.jaas.config` (PlainLoginModule) become
/// `security.protocol`, `sasl.mechanisms`, `sasl.username` and
/// `sasl.password`. Settings this build cannot carry (TLS, SCRAM, GSSAPI,
/// OAUTHBEARER) and JAAS lines that do not parse are errors naming the key.
///
/// A config that gives librdkafka's own `sasl.username` and no
/// `sasl.jaas.config` is passed through (with `sasl.mechanism` renamed).
fn translate_security(merged: &mut ClientConfig) -> Result<(), KafkaError> {
    use connect_kafka::sasl::{
        check_mechanism, Security, SASL_JAAS_CONFIG, SASL_MECHANISM_CONFIG,
        SECURITY_PROTOCOL_CONFIG,
    };
    let config_error = |e: connect_kafka::sasl::SecurityError| {
        KafkaError::new(connect_kafka::KafkaErrorKind::Config, e.to_string())
    };
    let native_credentials =
        merged.contains_key("sasl.username") && !merged.contains_key(SASL_JAAS_CONFIG);
    if native_credentials {
        if let Some(m) = merged.remove(SASL_MECHANISM_CONFIG) {
            check_mechanism(m.trim()).map_err(config_error)?;
            merged.insert("sasl.mechanisms".into(), m.trim().to_owned());
        }
        return Ok(());
    }
    let security =
        Security::from_lookup(|k| merged.get(k).map(String::as_str)).map_err(config_error)?;
    merged.remove(SASL_MECHANISM_CONFIG);
    merged.remove(SASL_JAAS_CONFIG);
    match security {
        Security::Plaintext => {
            if merged.contains_key(SECURITY_PROTOCOL_CONFIG) {
                merged.insert(SECURITY_PROTOCOL_CONFIG.into(), "plaintext".into());
            }
        }
        Security::SaslPlain(c) => {
            merged.insert(SECURITY_PROTOCOL_CONFIG.into(), "sasl_plaintext".into());
            merged.insert("sasl.mechanisms".into(), "PLAIN".into());
            merged.insert("sasl.username".into(), c.username);
            merged.insert("sasl.password".into(), c.password);
        }
        // `Security` may grow; anything else is not carried by this build.
        #[allow(unreachable_patterns)]
        _ => {
            return Err(KafkaError::new(
                connect_kafka::KafkaErrorKind::Config,
                "this security setting is not supported by the librdkafka adapter",
            ))
        }
    }
    Ok(())
}

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
        let native = self.client_config(config, &[("partitioner", "murmur2_random")])?;
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
        let native = self.client_config(config, CONSUMER_DEFAULTS)?;
        Ok(Box::new(consumer::RdConsumer::new(
            &native,
            max_poll_records.max(1),
        )?))
    }

    fn admin(&self, config: &ClientConfig) -> Result<Box<dyn Admin>, KafkaError> {
        let native = self.client_config(config, &[("allow.auto.create.topics", "false")])?;
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
        let native = cluster.client_config(&config, CONSUMER_DEFAULTS).unwrap();
        assert_eq!(native.get("key.serializer"), None);
        assert_eq!(native.get("fetch.wait.max.ms"), Some("50"));
        assert_eq!(native.get("fetch.queue.backoff.ms"), Some("10"));
        assert_eq!(native.get("queued.max.messages.kbytes"), Some("4096"));
        assert_eq!(native.get("bootstrap.servers"), Some("b:9092"));
    }

    const ALICE: &str = r#"org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" password="alice-secret";"#;

    fn translated(pairs: &[(&str, &str)]) -> Result<ClientConfig, KafkaError> {
        let mut m: ClientConfig = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        translate_security(&mut m).map(|()| m)
    }

    #[test]
    fn java_sasl_plain_keys_become_librdkafka_keys() {
        let m = translated(&[
            ("security.protocol", "SASL_PLAINTEXT"),
            ("sasl.mechanism", "PLAIN"),
            ("sasl.jaas.config", ALICE),
        ])
        .unwrap();
        assert_eq!(
            m.get("security.protocol").map(String::as_str),
            Some("sasl_plaintext")
        );
        assert_eq!(m.get("sasl.mechanisms").map(String::as_str), Some("PLAIN"));
        assert_eq!(m.get("sasl.username").map(String::as_str), Some("alice"));
        assert_eq!(
            m.get("sasl.password").map(String::as_str),
            Some("alice-secret")
        );
        assert!(!m.contains_key("sasl.jaas.config") && !m.contains_key("sasl.mechanism"));
        // The whole client config builds (librdkafka knows every key).
        let mut base = ClientConfig::new();
        base.insert("bootstrap.servers".into(), "b:9092".into());
        base.insert("security.protocol".into(), "SASL_PLAINTEXT".into());
        base.insert("sasl.mechanism".into(), "PLAIN".into());
        base.insert("sasl.jaas.config".into(), ALICE.into());
        let native = RdKafkaCluster::new(base)
            .client_config(&ClientConfig::new(), &[])
            .unwrap();
        assert_eq!(native.get("sasl.username"), Some("alice"));
        // Plaintext stays plaintext; nothing is added.
        let m = translated(&[("bootstrap.servers", "b:1")]).unwrap();
        assert_eq!(m.len(), 1);
        // librdkafka's own keys pass through.
        let m = translated(&[
            ("security.protocol", "SASL_PLAINTEXT"),
            ("sasl.mechanism", "PLAIN"),
            ("sasl.username", "u"),
            ("sasl.password", "p"),
        ])
        .unwrap();
        assert_eq!(m.get("sasl.mechanisms").map(String::as_str), Some("PLAIN"));
    }

    #[test]
    fn unsupported_security_is_a_plain_error() {
        for (pairs, needle) in [
            (vec![("security.protocol", "SSL")], "TLS is not implemented"),
            (
                vec![
                    ("security.protocol", "SASL_SSL"),
                    ("sasl.jaas.config", ALICE),
                ],
                "TLS is not implemented",
            ),
            (
                vec![
                    ("security.protocol", "SASL_PLAINTEXT"),
                    ("sasl.mechanism", "SCRAM-SHA-512"),
                    ("sasl.jaas.config", ALICE),
                ],
                "OpenSSL",
            ),
            (
                vec![
                    ("security.protocol", "SASL_PLAINTEXT"),
                    ("sasl.mechanism", "PLAIN"),
                    ("sasl.jaas.config", "PlainLoginModule required"),
                ],
                "sasl.jaas.config",
            ),
        ] {
            let e = translated(&pairs).unwrap_err();
            assert!(e.to_string().contains(needle), "{pairs:?}: {e}");
        }
        let cluster = RdKafkaCluster::new(ClientConfig::new());
        let mut config = ClientConfig::new();
        config.insert("security.protocol".into(), "SSL".into());
        assert!(cluster.admin(&config).is_err());
    }
}
