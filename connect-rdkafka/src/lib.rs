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
//! Security keys are Java's and translated once, in `translate_security`
//! (see [`connect_kafka::security`] for what is accepted): the four
//! protocols, SASL `PLAIN` and `SCRAM-SHA-256/512` with the credentials of
//! `sasl.jaas.config`, and PEM or PKCS#12 stores for TLS. librdkafka is
//! built with the system's OpenSSL, which carries TLS and computes SCRAM.

mod admin;
mod batch;
mod client_log;
mod consumer;
mod errors;
mod mock;
mod off_thread;
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
    // TLS settings of Java's JSSE with no librdkafka counterpart (OpenSSL
    // picks the protocol versions; its defaults are TLS 1.2 and later).
    "ssl.protocol",
    "ssl.enabled.protocols",
    "ssl.keymanager.algorithm",
    "ssl.trustmanager.algorithm",
    "ssl.secure.random.implementation",
    "ssl.engine.factory.class",
    "ssl.provider",
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

/// Java's security keys to librdkafka's, in place:
/// - `security.protocol` stays (lower case);
/// - `sasl.mechanism` and the `sasl.jaas.config` credentials become
///   `sasl.mechanisms`, `sasl.username` and `sasl.password`;
/// - the `ssl.*` stores become `ssl.ca.location` / `ssl.ca.pem` (PEM
///   truststore), `ssl.certificate.location` + `ssl.key.location` (one PEM
///   file with both, as Kafka's PEM keystore), `ssl.certificate.pem` +
///   `ssl.key.pem` (inline), or `ssl.keystore.location` +
///   `ssl.keystore.password` (PKCS#12), with `ssl.key.password`;
/// - `ssl.endpoint.identification.algorithm` empty becomes `none`.
///
/// Settings librdkafka cannot carry (JKS stores, GSSAPI, OAUTHBEARER) and
/// JAAS lines that do not parse are errors naming the key. Java's `ssl.*`
/// keys are removed even with `PLAINTEXT` (Java ignores them there;
/// librdkafka would refuse the unknown ones).
///
/// A config that gives librdkafka's own `sasl.username` and no
/// `sasl.jaas.config` is passed through (with `sasl.mechanism` renamed).
fn translate_security(merged: &mut ClientConfig) -> Result<(), KafkaError> {
    use connect_kafka::security::{
        check_mechanism, KeyStore, Security, TrustStore, SASL_JAAS_CONFIG, SASL_MECHANISM_CONFIG,
        SECURITY_KEYS, SECURITY_PROTOCOL_CONFIG,
    };
    let config_error = |e: connect_kafka::security::SecurityError| {
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
    // An explicit PLAINTEXT stays explicit.
    let explicit = merged.contains_key(SECURITY_PROTOCOL_CONFIG);
    for key in SECURITY_KEYS {
        merged.remove(key);
    }
    let mut set = |k: &str, v: String| {
        merged.insert(k.into(), v);
    };
    if explicit || security.tls.is_some() || security.sasl.is_some() {
        set(
            SECURITY_PROTOCOL_CONFIG,
            security.protocol_name().to_ascii_lowercase(),
        );
    }
    if let Some(c) = security.sasl {
        set("sasl.mechanisms", c.mechanism.name().into());
        set("sasl.username", c.username);
        set("sasl.password", c.password);
    }
    if let Some(tls) = security.tls {
        match tls.trust {
            TrustStore::SystemDefault => {}
            TrustStore::PemFile(p) => set("ssl.ca.location", p.display().to_string()),
            TrustStore::PemInline(pem) => set("ssl.ca.pem", pem),
        }
        match tls.identity {
            None => {}
            Some(KeyStore::PemFile(p)) => {
                set("ssl.certificate.location", p.display().to_string());
                set("ssl.key.location", p.display().to_string());
            }
            Some(KeyStore::PemInline {
                certificate_chain,
                key,
            }) => {
                set("ssl.certificate.pem", certificate_chain);
                set("ssl.key.pem", key);
            }
            Some(KeyStore::Pkcs12File { location, password }) => {
                set("ssl.keystore.location", location.display().to_string());
                if let Some(p) = password {
                    set("ssl.keystore.password", p);
                }
            }
        }
        if let Some(p) = tls.key_password {
            set("ssl.key.password", p);
        }
        let check = if tls.verify_hostname { "https" } else { "none" };
        set("ssl.endpoint.identification.algorithm", check.into());
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
            (
                vec![
                    ("security.protocol", "SSL"),
                    ("ssl.truststore.location", "/x/truststore.jks"),
                ],
                "keytool",
            ),
            (
                vec![
                    ("security.protocol", "SASL_SSL"),
                    ("sasl.mechanism", "GSSAPI"),
                    ("sasl.jaas.config", ALICE),
                ],
                "GSSAPI",
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
        config.insert("ssl.keystore.location".into(), "/x/keystore.jks".into());
        assert!(cluster.admin(&config).is_err());
    }

    #[test]
    fn java_tls_and_scram_keys_become_librdkafka_keys() {
        let scram = r#"org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" password="alice-secret";"#;
        let m = translated(&[
            ("security.protocol", "SASL_SSL"),
            ("sasl.mechanism", "SCRAM-SHA-512"),
            ("sasl.jaas.config", scram),
            ("ssl.truststore.type", "PEM"),
            ("ssl.truststore.location", "/tls/ca.pem"),
            ("ssl.keystore.type", "PEM"),
            ("ssl.keystore.location", "/tls/client-bundle.pem"),
            ("ssl.key.password", "kp"),
            ("ssl.endpoint.identification.algorithm", ""),
        ])
        .unwrap();
        let get = |k: &str| m.get(k).map(String::as_str);
        assert_eq!(get("security.protocol"), Some("sasl_ssl"));
        assert_eq!(get("sasl.mechanisms"), Some("SCRAM-SHA-512"));
        assert_eq!(get("sasl.username"), Some("alice"));
        assert_eq!(get("ssl.ca.location"), Some("/tls/ca.pem"));
        assert_eq!(
            get("ssl.certificate.location"),
            Some("/tls/client-bundle.pem")
        );
        assert_eq!(get("ssl.key.location"), Some("/tls/client-bundle.pem"));
        assert_eq!(get("ssl.key.password"), Some("kp"));
        assert_eq!(get("ssl.endpoint.identification.algorithm"), Some("none"));
        for java_only in [
            "ssl.truststore.location",
            "ssl.keystore.type",
            "ssl.truststore.type",
        ] {
            assert_eq!(get(java_only), None, "{java_only}");
        }
        // PKCS#12 keeps librdkafka's own key names; inline PEM moves.
        let m = translated(&[
            ("security.protocol", "SSL"),
            ("ssl.truststore.certificates", "CA-PEM"),
            ("ssl.keystore.type", "PKCS12"),
            ("ssl.keystore.location", "/tls/client.p12"),
            ("ssl.keystore.password", "p12"),
        ])
        .unwrap();
        let get = |k: &str| m.get(k).map(String::as_str);
        assert_eq!(get("security.protocol"), Some("ssl"));
        assert_eq!(get("ssl.ca.pem"), Some("CA-PEM"));
        assert_eq!(get("ssl.keystore.location"), Some("/tls/client.p12"));
        assert_eq!(get("ssl.keystore.password"), Some("p12"));
        assert_eq!(get("ssl.endpoint.identification.algorithm"), Some("https"));
        let m = translated(&[
            ("security.protocol", "SSL"),
            ("ssl.keystore.key", "KEY"),
            ("ssl.keystore.certificate.chain", "CHAIN"),
        ])
        .unwrap();
        assert_eq!(m.get("ssl.key.pem").map(String::as_str), Some("KEY"));
        assert_eq!(
            m.get("ssl.certificate.pem").map(String::as_str),
            Some("CHAIN")
        );
        // Java's ssl keys are dropped under PLAINTEXT (Java ignores them).
        let m = translated(&[
            ("security.protocol", "PLAINTEXT"),
            ("ssl.truststore.location", "/tls/ca.pem"),
        ])
        .unwrap();
        assert_eq!(m.len(), 1);
        // librdkafka (built with OpenSSL) takes every translated key.
        let mut base = ClientConfig::new();
        for (k, v) in [
            ("bootstrap.servers", "127.0.0.1:1"),
            ("security.protocol", "SASL_SSL"),
            ("sasl.mechanism", "SCRAM-SHA-256"),
            ("sasl.jaas.config", scram),
            ("ssl.endpoint.identification.algorithm", ""),
            ("ssl.enabled.protocols", "TLSv1.2,TLSv1.3"),
        ] {
            base.insert(k.into(), v.into());
        }
        RdKafkaCluster::new(base)
            .admin(&ClientConfig::new())
            .expect("librdkafka accepts SASL_SSL with SCRAM");
    }
}
