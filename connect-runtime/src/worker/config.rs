//! Worker and connector configuration keys.

use std::time::Duration;

use connect_api::config::validators::{NonEmptyString, OrNull, Range, ValidString};
use connect_api::config::{
    parse_list, with_prefix, ConfigDef, ConfigKey, ConfigMap, ConfigType, Importance, ParsedConfig,
};
use connect_api::{ConnectError, Result};

use super::client_overrides::ClientOverridePolicy;
use crate::errors::error_config_def;

/// The worker keys with Kafka's defaults.
pub fn worker_config_def() -> ConfigDef {
    const G: &str = "Worker";
    ConfigDef::new()
        .define(ConfigKey::new("bootstrap.servers", ConfigType::List).optional().importance(Importance::High).group(G, 1)
            .doc("Kafka brokers to connect to (host:port, comma-separated). Unlike Kafka Connect, when unset the standalone worker starts an embedded real-protocol Kafka (librdkafka's mock cluster) for trying things out."))
        .define(ConfigKey::new("security.protocol", ConfigType::String).optional().importance(Importance::Medium).group("Security", 1)
            .doc("Protocol to reach the brokers, for every client of the worker (prefixed producer./consumer./admin. keys override it): PLAINTEXT (default), SSL, SASL_PLAINTEXT or SASL_SSL."))
        .define(ConfigKey::new("sasl.mechanism", ConfigType::String).optional().importance(Importance::Medium).group("Security", 2)
            .doc("SASL mechanism with SASL_PLAINTEXT and SASL_SSL: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (GSSAPI and OAUTHBEARER are not implemented)."))
        .define(ConfigKey::new("sasl.jaas.config", ConfigType::Password).optional().importance(Importance::Medium).group("Security", 3)
            .doc("JAAS login line with the SASL credentials: org.apache.kafka.common.security.plain.PlainLoginModule (or scram.ScramLoginModule) required username=\"...\" password=\"...\";"))
        .define(ConfigKey::new("ssl.truststore.type", ConfigType::String).optional().importance(Importance::Medium).group("Security", 4)
            .doc("PEM. Kafka's default JKS cannot be read by OpenSSL and is refused; without a type, a location ending in .pem, .crt or .cer is read as PEM."))
        .define(ConfigKey::new("ssl.truststore.location", ConfigType::String).optional().importance(Importance::High).group("Security", 5)
            .doc("A PEM file of the certificates trusted to sign the brokers' (only these are trusted). Without it, the system's default roots."))
        .define(ConfigKey::new("ssl.truststore.certificates", ConfigType::Password).optional().importance(Importance::High).group("Security", 6)
            .doc("The trusted certificates as inline PEM, instead of ssl.truststore.location."))
        .define(ConfigKey::new("ssl.truststore.password", ConfigType::Password).optional().importance(Importance::High).group("Security", 7)
            .doc("Not needed for PEM truststores; accepted and ignored."))
        .define(ConfigKey::new("ssl.keystore.type", ConfigType::String).optional().importance(Importance::Medium).group("Security", 8)
            .doc("PEM or PKCS12 (JKS is refused); without a type, a location ending in .pem is PEM and one in .p12 or .pfx PKCS12."))
        .define(ConfigKey::new("ssl.keystore.location", ConfigType::String).optional().importance(Importance::High).group("Security", 9)
            .doc("The client's key and certificate chain, for brokers that require client certificates: one PEM file with both, or a PKCS#12 file."))
        .define(ConfigKey::new("ssl.keystore.password", ConfigType::Password).optional().importance(Importance::High).group("Security", 10)
            .doc("The PKCS#12 keystore's password."))
        .define(ConfigKey::new("ssl.keystore.key", ConfigType::Password).optional().importance(Importance::High).group("Security", 11)
            .doc("The client's private key as inline PEM (with ssl.keystore.certificate.chain), instead of ssl.keystore.location."))
        .define(ConfigKey::new("ssl.keystore.certificate.chain", ConfigType::Password).optional().importance(Importance::High).group("Security", 12)
            .doc("The client's certificate chain as inline PEM, leaf first."))
        .define(ConfigKey::new("ssl.key.password", ConfigType::Password).optional().importance(Importance::High).group("Security", 13)
            .doc("The password of an encrypted PEM private key."))
        .define(ConfigKey::new("ssl.endpoint.identification.algorithm", ConfigType::String).default("https").importance(Importance::Low).group("Security", 14)
            .doc("https checks the broker's host name against its certificate; an empty value does not."))
        .define(ConfigKey::new("key.converter", ConfigType::Class).importance(Importance::High).group(G, 2)
            .doc("Converter class for record keys, e.g. org.apache.kafka.connect.json.JsonConverter."))
        .define(ConfigKey::new("value.converter", ConfigType::Class).importance(Importance::High).group(G, 3)
            .doc("Converter class for record values."))
        .define(ConfigKey::new("header.converter", ConfigType::Class).default("org.apache.kafka.connect.storage.SimpleHeaderConverter").importance(Importance::Low).group(G, 4)
            .doc("HeaderConverter class for record headers."))
        .define(ConfigKey::new("offset.flush.interval.ms", ConfigType::Long).default(60_000i64).validator(Range::at_least(1)).importance(Importance::Low).group(G, 5)
            .doc("Interval at which to try committing offsets for tasks."))
        .define(ConfigKey::new("offset.flush.timeout.ms", ConfigType::Long).default(5_000i64).validator(Range::at_least(1)).importance(Importance::Low).group(G, 6)
            .doc("Maximum number of milliseconds to wait for records to flush and partition offset data to be committed to offset storage before cancelling the process and restoring the offset data to be committed in a future attempt."))
        .define(ConfigKey::new("task.shutdown.graceful.timeout.ms", ConfigType::Long).default(5_000i64).validator(Range::at_least(0)).importance(Importance::Low).group(G, 7)
            .doc("Amount of time to wait for tasks to shutdown gracefully."))
        .define(ConfigKey::new("offset.storage.file.filename", ConfigType::String).optional().importance(Importance::Low).group(G, 8)
            .doc("File to store source offsets in (standalone mode). Plain JSON, written atomically."))
        .define(ConfigKey::new("listeners", ConfigType::List).default(vec!["http://127.0.0.1:8083".to_string()]).importance(Importance::Low).group(G, 9)
            .doc("REST API listeners, http://HOST:PORT or https://HOST:PORT (stores from listeners.https.ssl.*, or ssl.*). Unlike Kafka Connect (all interfaces), the default binds loopback only: http://127.0.0.1:8083."))
        .define(ConfigKey::new("admin.listeners", ConfigType::List).optional().importance(Importance::Low).group(G, 9)
            .doc("Listeners of the /admin endpoints, as listeners (https ones with admin.listeners.https.ssl.*). Unset: on listeners; empty: disabled."))
        .define(ConfigKey::new("plugin.path", ConfigType::List).optional().importance(Importance::Low).group(G, 10)
            .doc("Accepted for compatibility and ignored: Rust has no class loading, plugins are compiled into the worker binary and registered by name."))
        .define(ConfigKey::new("config.providers", ConfigType::List).default(Vec::<String>::new()).importance(Importance::Low).group(G, 11)
            .doc("Names of ConfigProviders (file, directory, env) resolving ${provider:path:key} references in connector configs."))
        .define(ConfigKey::new("topic.creation.enable", ConfigType::Boolean).default(true).importance(Importance::Low).group(G, 12)
            .doc("Whether source connectors may create their topics (topic.creation.* connector keys)."))
        .define(ConfigKey::new("group.id", ConfigType::String).optional().importance(Importance::Low).group(G, 13)
            .doc("Distributed mode only; accepted and unused by the standalone worker."))
        .define(ConfigKey::new("topic.tracking.enable", ConfigType::Boolean).default(true).importance(Importance::Low).group(G, 14)
            .doc("Track the topics each connector uses (GET /connectors/{name}/topics, KIP-558)."))
        .define(ConfigKey::new("topic.tracking.allow.reset", ConfigType::Boolean).default(true).importance(Importance::Low).group(G, 15)
            .doc("Allow PUT /connectors/{name}/topics/reset."))
        .define(ConfigKey::new("connector.start.timeout.ms", ConfigType::Long).default(60_000i64).validator(Range::at_least(1)).importance(Importance::Low).group(G, 16)
            .doc("How long a connector's start (and its task_configs call) may take before the connector is marked FAILED and the call is abandoned. Not a Kafka key: Kafka's worker waits for ever. Other connectors never wait for it."))
        .define(ConfigKey::new("task.stall.warn.ms", ConfigType::Long).default(60_000i64).validator(Range::at_least(0)).importance(Importance::Low).group(G, 17)
            .doc("A task's poll, put or flush that runs longer than this is logged at WARN, shown in /metrics (stalled_seconds) and marked in /ui, until it returns; 0 turns the watch off. Not a Kafka key."))
        .define(ConfigKey::new(super::client_overrides::POLICY_KEY, ConfigType::String).default("All").importance(Importance::Medium).group("Security", 15)
            .doc("Which Kafka client keys a connector may set for its own clients (producer.override.*, consumer.override.*, admin.override.*): None, Principal (sasl.jaas.config, sasl.mechanism, security.protocol), All (Kafka's default) or Allowlist (the keys of connector.client.config.override.allowlist); Kafka's class names for them are accepted."))
        .define(ConfigKey::new(super::client_overrides::ALLOWLIST_KEY, ConfigType::List).default(Vec::<String>::new()).importance(Importance::Medium).group("Security", 16)
            .doc("The client keys the Allowlist policy lets connectors override; empty: none."))
        .define(ConfigKey::new("rest.extension.classes", ConfigType::List).default(Vec::<String>::new()).importance(Importance::Low).group("Security", 17)
            .doc("REST extensions: org.apache.kafka.connect.rest.basic.auth.extension.BasicAuthSecurityRestExtension (HTTP basic authentication with Kafka's JAAS and credentials files) is the one available."))
        .define(ConfigKey::new("java.security.auth.login.config", ConfigType::String).optional().importance(Importance::Low).group("Security", 18)
            .doc("The JAAS file of the basic-auth extension (its KafkaConnect entry names the credentials file). Not a Kafka worker key: a Java worker takes it as a system property, which this worker also reads from KAFKA_OPTS."))
        .merge(&crate::herder::auto_restart_worker_def())
}

/// Legacy keys Kafka still accepts with a deprecation warning.
pub const DEPRECATED_WORKER_KEYS: &[&str] = &[
    "internal.key.converter",
    "internal.value.converter",
    "internal.key.converter.schemas.enable",
    "internal.value.converter.schemas.enable",
    "rest.host.name",
    "rest.port",
];

/// Prefixes whose keys belong to clients or converters, not to the worker.
const PASS_THROUGH_PREFIXES: &[&str] = &[
    "key.converter.",
    "value.converter.",
    "header.converter.",
    "producer.",
    "consumer.",
    "admin.",
    "config.providers.",
    "internal.",
    "listeners.https.",
];

/// A parsed worker configuration.
#[derive(Debug, Clone)]
pub struct WorkerConfig {
    parsed: ParsedConfig,
    client_overrides: ClientOverridePolicy,
}

impl WorkerConfig {
    /// Parse `props`; every invalid value is reported at once, naming its key.
    pub fn parse(props: &ConfigMap) -> Result<WorkerConfig> {
        let parsed = worker_config_def().parse(props)?;
        let client_overrides = ClientOverridePolicy::parse(
            parsed
                .get_string(super::client_overrides::POLICY_KEY)
                .unwrap_or("All"),
            parsed
                .get_list(super::client_overrides::ALLOWLIST_KEY)
                .map(<[String]>::to_vec)
                .unwrap_or_default(),
        )?;
        Ok(WorkerConfig {
            parsed,
            client_overrides,
        })
    }

    /// `connector.client.config.override.policy` (with its allowlist).
    pub fn client_override_policy(&self) -> &ClientOverridePolicy {
        &self.client_overrides
    }

    /// Keys that are neither worker keys nor client/converter pass-through
    /// keys (warned about), and deprecated keys (warned about separately).
    pub fn unknown_and_deprecated(&self) -> (Vec<String>, Vec<String>) {
        let mut unknown = Vec::new();
        let mut deprecated = Vec::new();
        for k in self.parsed.unknown() {
            if DEPRECATED_WORKER_KEYS.contains(&k.as_str()) {
                deprecated.push(k.clone());
            } else if !PASS_THROUGH_PREFIXES.iter().any(|p| k.starts_with(p)) {
                unknown.push(k.clone());
            }
        }
        (unknown, deprecated)
    }

    /// Whether source tasks deliver exactly once: a distributed worker
    /// with `exactly.once.source.support=enabled` (`preparing` and
    /// `disabled` run them at least once).
    pub fn exactly_once_source(&self) -> bool {
        self.parsed
            .originals()
            .get("exactly.once.source.support")
            .is_some_and(|v| v.trim() == "enabled")
    }

    /// `group.id` of a distributed worker ("" otherwise).
    pub fn group_id(&self) -> &str {
        self.parsed
            .originals()
            .get("group.id")
            .map_or("", |g| g.trim())
    }

    /// `offset.storage.topic` of a distributed worker (Kafka's default
    /// name otherwise).
    pub fn offset_storage_topic(&self) -> &str {
        self.parsed
            .originals()
            .get("offset.storage.topic")
            .map(|t| t.trim())
            .filter(|t| !t.is_empty())
            .unwrap_or("connect-offsets")
    }

    /// The raw map (for converter resolution).
    pub fn originals(&self) -> &ConfigMap {
        self.parsed.originals()
    }

    /// `bootstrap.servers`, when set.
    pub fn bootstrap_servers(&self) -> Option<String> {
        self.parsed
            .get_list("bootstrap.servers")
            .filter(|l| !l.is_empty())
            .map(|l| l.join(","))
    }

    fn millis(&self, key: &str) -> Duration {
        Duration::from_millis(self.parsed.get_long(key).unwrap_or(0).max(0) as u64)
    }

    /// `offset.flush.interval.ms`.
    pub fn offset_flush_interval(&self) -> Duration {
        self.millis("offset.flush.interval.ms")
    }
    /// `offset.flush.timeout.ms`.
    pub fn offset_flush_timeout(&self) -> Duration {
        self.millis("offset.flush.timeout.ms")
    }
    /// `task.shutdown.graceful.timeout.ms`.
    pub fn shutdown_timeout(&self) -> Duration {
        self.millis("task.shutdown.graceful.timeout.ms")
    }
    /// `connector.start.timeout.ms` (ours; Kafka has no bound).
    pub fn connector_start_timeout(&self) -> Duration {
        self.millis("connector.start.timeout.ms")
    }
    /// `task.stall.warn.ms` (ours; zero: off).
    pub fn stall_threshold(&self) -> Duration {
        self.millis("task.stall.warn.ms")
    }
    /// `offset.storage.file.filename`.
    pub fn offset_file(&self) -> Option<&str> {
        self.parsed.get_string("offset.storage.file.filename")
    }
    /// `listeners`.
    pub fn listeners(&self) -> &[String] {
        self.parsed.get_list("listeners").unwrap_or(&[])
    }
    /// `topic.creation.enable`.
    /// `topic.tracking.enable` and `topic.tracking.allow.reset`.
    pub fn topic_tracking(&self) -> (bool, bool) {
        (
            self.parsed
                .get_bool("topic.tracking.enable")
                .unwrap_or(true),
            self.parsed
                .get_bool("topic.tracking.allow.reset")
                .unwrap_or(true),
        )
    }
    /// `topic.creation.enable`.
    pub fn topic_creation_enabled(&self) -> bool {
        self.parsed
            .get_bool("topic.creation.enable")
            .unwrap_or(true)
    }
    /// `producer.*` keys, prefix removed, plus `bootstrap.servers` and the
    /// worker-level security keys (see `client_props`).
    pub fn producer_props(&self) -> ConfigMap {
        self.client_props("producer.")
    }
    /// `consumer.*` keys, prefix removed, plus `bootstrap.servers` and the
    /// worker-level security keys.
    pub fn consumer_props(&self) -> ConfigMap {
        self.client_props("consumer.")
    }
    /// `admin.*` keys, prefix removed, plus `bootstrap.servers` and the
    /// worker-level security keys.
    ///
    /// `admin.listeners` and `admin.listeners.https.*` are the REST admin
    /// listeners' keys, not the admin client's: left out.
    pub fn admin_props(&self) -> ConfigMap {
        let mut props = self.client_props("admin.");
        props.retain(|k, _| k != "listeners" && !k.starts_with("listeners."));
        props
    }
    /// `<prefix>*` keys, prefix removed, plus the worker-level
    /// `bootstrap.servers` and security keys (`security.protocol`,
    /// `sasl.mechanism`, `sasl.jaas.config`) where the prefixed keys do not
    /// set them, as Java's worker does for every client.
    fn client_props(&self, prefix: &str) -> ConfigMap {
        let mut m = with_prefix(self.originals(), prefix);
        if let Some(b) = self.bootstrap_servers() {
            m.entry("bootstrap.servers".into()).or_insert(b);
        }
        for key in crate::kafka::security::SECURITY_KEYS {
            if let Some(v) = self.originals().get(key) {
                m.entry(key.into()).or_insert_with(|| v.clone());
            }
        }
        m
    }
}

/// The keys every connector accepts (Kafka's `ConnectorConfig`), merged
/// with the `errors.*` keys.
pub fn connector_base_def() -> ConfigDef {
    const G: &str = "Common";
    ConfigDef::new()
        .define(ConfigKey::new("name", ConfigType::String).validator(NonEmptyString { without_control_chars: true }).importance(Importance::High).group(G, 1)
            .doc("Globally unique name to use for this connector."))
        .define(ConfigKey::new("connector.class", ConfigType::String).importance(Importance::High).group(G, 2)
            .doc("Name or alias of the connector (e.g. org.apache.kafka.connect.file.FileStreamSinkConnector or FileStreamSink)."))
        .define(ConfigKey::new("tasks.max", ConfigType::Int).default(1).validator(Range::at_least(1)).importance(Importance::High).group(G, 3)
            .doc("Maximum number of tasks to use for this connector."))
        .define(ConfigKey::new("tasks.max.enforce", ConfigType::Boolean).default(true).importance(Importance::Low).group(G, 4)
            .doc("Whether to fail a connector that generates more task configs than tasks.max (KAFKA-15575)."))
        .define(ConfigKey::new("key.converter", ConfigType::Class).optional().importance(Importance::Low).group(G, 5)
            .doc("Converter for keys; overrides the worker's key.converter."))
        .define(ConfigKey::new("value.converter", ConfigType::Class).optional().importance(Importance::Low).group(G, 6)
            .doc("Converter for values; overrides the worker's value.converter."))
        .define(ConfigKey::new("header.converter", ConfigType::Class).optional().importance(Importance::Low).group(G, 7)
            .doc("HeaderConverter for headers; overrides the worker's header.converter."))
        .define(ConfigKey::new("transforms", ConfigType::List).default(Vec::<String>::new()).importance(Importance::Low).group(G, 8)
            .doc("Aliases for the transformations to be applied to records, in order."))
        .define(ConfigKey::new("predicates", ConfigType::List).default(Vec::<String>::new()).importance(Importance::Low).group(G, 9)
            .doc("Aliases for the predicates used by transformations."))
        .define(ConfigKey::new("config.action.reload", ConfigType::String).default("restart").validator(ValidString::case_insensitive(["none", "restart"])).importance(Importance::Low).group(G, 10)
            .doc("What to do when an external config provider reports a change: restart or none."))
        .merge(&error_config_def())
        .merge(&crate::herder::auto_restart_connector_def())
}

/// Extra keys of sink connectors.
pub fn sink_connector_def() -> ConfigDef {
    const G: &str = "Sink";
    connector_base_def()
        .define(ConfigKey::new("topics", ConfigType::List).default(Vec::<String>::new()).importance(Importance::High).group(G, 1)
            .doc("List of topics to consume, separated by commas. Exactly one of topics and topics.regex must be set."))
        .define(ConfigKey::new("topics.regex", ConfigType::String).default("").importance(Importance::High).group(G, 2)
            .doc("Regular expression giving topics to consume. Exactly one of topics and topics.regex must be set."))
}

/// Extra keys of source connectors.
pub fn source_connector_def() -> ConfigDef {
    const G: &str = "Source";
    connector_base_def()
        .define(ConfigKey::new("topic.creation.default.partitions", ConfigType::Int).default(-1).validator(Range::at_least(-1)).importance(Importance::Low).group(G, 1)
            .doc("Partitions of topics this connector creates (-1: the broker default). Topic creation is enabled for the connector when this and topic.creation.default.replication.factor are set."))
        .define(ConfigKey::new("topic.creation.default.replication.factor", ConfigType::Short).default(-1i16).validator(Range::at_least(-1)).importance(Importance::Low).group(G, 2)
            .doc("Replication factor of topics this connector creates (-1: the broker default)."))
        .define(ConfigKey::new("offsets.invalid.policy", ConfigType::String).default("fail").validator(ValidString::case_insensitive(["fail", "reset"])).importance(Importance::Medium).group(G, 3)
            .doc("Not in Kafka. What to do when the task reports that its stored offset is no longer valid in the source system: fail (the task fails with instructions to reset its offsets) or reset (the stored offset of that source partition is removed, a warning names the lost position, and the task restarts from its default position)."))
        .define(ConfigKey::new("source.max.inflight.records", ConfigType::Int).default(10_000).validator(Range::at_least(1)).importance(Importance::Low).group(G, 4)
            .doc("Not in Kafka. Submitted records held before the task stops polling (backpressure), bounding memory when Kafka is slow."))
        .define(ConfigKey::new(EXACTLY_ONCE_SUPPORT, ConfigType::String).default("requested").validator(ValidString::case_insensitive(["requested", "required"])).importance(Importance::Medium).group(EOS, 1)
            .doc("Permitted values are requested, required. If set to \"required\", forces a preflight check that the connector can provide exactly-once semantics with the given configuration, and that the worker validating it has exactly-once source support enabled; otherwise requests to create or validate the connector fail."))
        .define(ConfigKey::new(TRANSACTION_BOUNDARY, ConfigType::String).default("poll").validator(ValidString::case_insensitive(["poll", "interval", "connector"])).importance(Importance::Medium).group(EOS, 2)
            .doc("Permitted values are: poll, interval, connector. poll: a producer transaction per batch of records a task returns; connector: the connector defines the boundaries (only connectors that can); interval: a transaction per transaction.boundary.interval.ms."))
        .define(ConfigKey::new("transaction.boundary.interval.ms", ConfigType::Long).optional().validator(OrNull(Range::at_least(0))).importance(Importance::Low).group(EOS, 3)
            .doc("With transaction.boundary=interval, how often tasks commit their producer transactions; unset: the worker's offset.flush.interval.ms. No effect with another transaction.boundary."))
        .define(ConfigKey::new("offsets.storage.topic", ConfigType::String).optional().validator(OrNull(NonEmptyString::default())).importance(Importance::Low).group("offsets.topic", 1)
            .doc("The name of a separate offsets topic for this connector; unset: the worker's offsets topic. Only applicable in distributed mode; in standalone mode it has no effect."))
}

/// The source connector key that asks for exactly-once delivery.
pub const EXACTLY_ONCE_SUPPORT: &str = "exactly.once.support";
/// The source connector key that says where producer transactions end.
pub const TRANSACTION_BOUNDARY: &str = "transaction.boundary";
/// Kafka's group of the exactly-once keys.
const EOS: &str = "Exactly Once Support";

/// A sink's `topics` as Kafka reads them (`parseTopicsList`): the LIST
/// value without empty entries and duplicates, in order.
pub fn sink_topics(config: &ConfigMap) -> Vec<String> {
    let mut topics = config
        .get("topics")
        .map(|t| parse_list(t))
        .unwrap_or_default();
    topics.retain(|t| !t.is_empty());
    let mut seen = std::collections::HashSet::new();
    topics.retain(|t| seen.insert(t.clone()));
    topics
}

/// Check the rules Kafka applies to a sink config across keys: exactly one
/// of `topics` / `topics.regex`, and a DLQ topic that is not consumed. An
/// error names every key it concerns (as Kafka, both `topics` and
/// `topics.regex` when neither or both are set) and the message.
pub fn check_sink_topics(
    config: &ConfigMap,
) -> std::result::Result<(), (Vec<&'static str>, String)> {
    let topics = sink_topics(config);
    let regex = config.get("topics.regex").map(|r| r.trim()).unwrap_or("");
    match (topics.is_empty(), regex.is_empty()) {
        (true, true) => {
            return Err((
                vec!["topics", "topics.regex"],
                "Must configure one of topics or topics.regex".into(),
            ))
        }
        (false, false) => {
            return Err((
                vec!["topics", "topics.regex"],
                "topics and topics.regex are mutually exclusive options, but both are set.".into(),
            ))
        }
        _ => {}
    }
    if !regex.is_empty() {
        if let Err(e) = regex::Regex::new(regex) {
            return Err((
                vec!["topics.regex"],
                format!("not a valid regular expression: {e}"),
            ));
        }
    }
    let dlq = config
        .get("errors.deadletterqueue.topic.name")
        .map(|s| s.trim())
        .unwrap_or("");
    if !dlq.is_empty() {
        let consumed = topics.iter().any(|t| t == dlq)
            || (!regex.is_empty()
                && regex::Regex::new(&format!("^(?:{regex})$")).is_ok_and(|r| r.is_match(dlq)));
        if consumed {
            return Err((
                vec!["errors.deadletterqueue.topic.name"],
                format!("The DLQ topic '{dlq}' may not be included in the list of topics ('topics={}') or match the topics regex ('topics.regex={regex}') consumed by the connector", topics.join(",")),
            ));
        }
    }
    Ok(())
}

/// A config error with Kafka's 400 wording for create/update.
pub fn invalid_config(errors: &[String]) -> ConnectError {
    ConnectError::config(
        "config",
        format!(
            "Connector configuration is invalid and contains the following {} error(s):\n{}\nYou can also find the above list of errors at the endpoint `/connector-plugins/{{connectorType}}/config/validate`",
            errors.len(),
            errors.join("\n")
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(pairs: &[(&str, &str)]) -> ConfigMap {
        ConfigMap::from_pairs(pairs.iter().copied())
    }

    #[test]
    fn worker_security_keys_reach_every_client_unless_prefixed() {
        let jaas = r#"org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" password="alice-secret";"#;
        let w = WorkerConfig::parse(&props(&[
            ("key.converter", "JsonConverter"),
            ("value.converter", "JsonConverter"),
            ("bootstrap.servers", "b:9092"),
            ("security.protocol", "SASL_PLAINTEXT"),
            ("sasl.mechanism", "PLAIN"),
            ("sasl.jaas.config", jaas),
            ("admin.sasl.jaas.config", "admin-line"),
        ]))
        .unwrap();
        let (unknown, _) = w.unknown_and_deprecated();
        assert!(unknown.is_empty(), "{unknown:?}");
        for m in [w.producer_props(), w.consumer_props(), w.admin_props()] {
            assert_eq!(
                m.get("security.protocol").map(String::as_str),
                Some("SASL_PLAINTEXT")
            );
            assert_eq!(m.get("sasl.mechanism").map(String::as_str), Some("PLAIN"));
            assert_eq!(
                m.get("bootstrap.servers").map(String::as_str),
                Some("b:9092")
            );
        }
        assert_eq!(
            w.producer_props()
                .get("sasl.jaas.config")
                .map(String::as_str),
            Some(jaas)
        );
        assert_eq!(
            w.admin_props().get("sasl.jaas.config").map(String::as_str),
            Some("admin-line")
        );
        // Without them, nothing is added.
        let w = WorkerConfig::parse(&props(&[
            ("key.converter", "JsonConverter"),
            ("value.converter", "JsonConverter"),
        ]))
        .unwrap();
        assert!(!w.producer_props().contains_key("security.protocol"));
    }

    #[test]
    fn worker_keys_and_warnings() {
        let w = WorkerConfig::parse(&props(&[
            ("key.converter", "JsonConverter"),
            ("value.converter", "JsonConverter"),
            ("key.converter.schemas.enable", "true"),
            ("internal.key.converter", "x"),
            ("offset.flush.interval.ms", "10000"),
            ("typo.key", "1"),
        ]))
        .unwrap();
        assert_eq!(w.offset_flush_interval(), Duration::from_secs(10));
        let (unknown, deprecated) = w.unknown_and_deprecated();
        assert_eq!(unknown, ["typo.key"]);
        assert_eq!(deprecated, ["internal.key.converter"]);
        assert_eq!(w.listeners(), ["http://127.0.0.1:8083"]);
        assert_eq!(w.bootstrap_servers(), None);
    }

    #[test]
    fn invalid_worker_values_name_the_key() {
        let e = WorkerConfig::parse(&props(&[
            ("key.converter", "JsonConverter"),
            ("value.converter", "JsonConverter"),
            ("offset.flush.interval.ms", "soon"),
        ]))
        .unwrap_err();
        assert!(e.to_string().contains("offset.flush.interval.ms"), "{e}");
        let e = WorkerConfig::parse(&ConfigMap::new()).unwrap_err();
        assert!(e.to_string().contains("key.converter"), "{e}");
    }

    #[test]
    fn sink_topic_rules() {
        assert!(check_sink_topics(&props(&[("topics", "a")])).is_ok());
        assert!(check_sink_topics(&props(&[("topics.regex", "a.*")])).is_ok());
        assert!(check_sink_topics(&props(&[])).is_err());
        assert!(check_sink_topics(&props(&[("topics", "a"), ("topics.regex", "b")])).is_err());
        let (keys, _) = check_sink_topics(&props(&[
            ("topics", "a,dlq"),
            ("errors.deadletterqueue.topic.name", "dlq"),
        ]))
        .unwrap_err();
        assert_eq!(keys, ["errors.deadletterqueue.topic.name"]);
        let (keys, _) = check_sink_topics(&props(&[])).unwrap_err();
        assert_eq!(keys, ["topics", "topics.regex"], "as Kafka: both keys");
        assert!(check_sink_topics(&props(&[
            ("topics.regex", "d.*"),
            ("errors.deadletterqueue.topic.name", "dlq"),
        ]))
        .is_err());
        assert!(check_sink_topics(&props(&[("topics.regex", "(")])).is_err());
    }
}
