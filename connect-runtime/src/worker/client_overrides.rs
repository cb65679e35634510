//! `connector.client.config.override.policy`: which Kafka client keys a
//! connector may set for its own clients through `producer.override.*`,
//! `consumer.override.*` and `admin.override.*`. Kafka's four policies
//! with their names and messages: `None`, `Principal` (the SASL keys and
//! `security.protocol` only), `All` (Kafka's default since 3.0) and
//! `Allowlist` (Kafka 4.2, KIP-1188: the keys named by
//! `connector.client.config.override.allowlist`, none by default).
//!
//! Without a policy, anyone who may create a connector could point its
//! producer at another cluster or swap its credentials.

use connect_api::config::ConfigMap;
use connect_api::connector::ConnectorType;
use connect_api::{ConnectError, Result};

/// The worker key naming the policy.
pub const POLICY_KEY: &str = "connector.client.config.override.policy";
/// The worker key listing what the `Allowlist` policy allows.
pub const ALLOWLIST_KEY: &str = "connector.client.config.override.allowlist";

/// The package of Kafka's policy classes, accepted before a policy's name.
const KAFKA_PACKAGE: &str = "org.apache.kafka.connect.connector.policy.";
/// The suffix of Kafka's policy class names.
const CLASS_SUFFIX: &str = "ConnectorClientConfigOverridePolicy";
/// What `Principal` allows.
const PRINCIPAL_KEYS: &[&str] = &["sasl.jaas.config", "sasl.mechanism", "security.protocol"];

/// A client override policy.
///
/// ```
/// use connect_api::config::ConfigMap;
/// use connect_api::connector::ConnectorType;
/// use connect_runtime::worker::ClientOverridePolicy;
///
/// let policy = ClientOverridePolicy::parse("Principal", Vec::new()).unwrap();
/// let config = ConfigMap::from_pairs([
///     ("producer.override.sasl.mechanism", "PLAIN"),
///     ("producer.override.bootstrap.servers", "elsewhere:9092"),
/// ]);
/// let refused = policy.violations(ConnectorType::Source, &config);
/// assert_eq!(refused.len(), 1);
/// assert_eq!(refused[0].0, "producer.override.bootstrap.servers");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ClientOverridePolicy {
    /// No override is allowed.
    None,
    /// Only `sasl.jaas.config`, `sasl.mechanism` and `security.protocol`:
    /// a principal per connector.
    Principal,
    /// Every override is allowed (Kafka's default).
    #[default]
    All,
    /// Only the keys listed.
    Allowlist(Vec<String>),
}

impl ClientOverridePolicy {
    /// The policy named `policy` (`None`, `Principal`, `All`, `Allowlist`
    /// or Kafka's class name for one), with `allowlist` for `Allowlist`.
    pub fn parse(policy: &str, allowlist: Vec<String>) -> Result<Self> {
        let name = policy.trim();
        let short = name.strip_prefix(KAFKA_PACKAGE).unwrap_or(name);
        let short = short.strip_suffix(CLASS_SUFFIX).unwrap_or(short);
        match short.to_ascii_lowercase().as_str() {
            "none" => Ok(ClientOverridePolicy::None),
            "principal" => Ok(ClientOverridePolicy::Principal),
            "all" => Ok(ClientOverridePolicy::All),
            "allowlist" => Ok(ClientOverridePolicy::Allowlist(allowlist)),
            _ => Err(ConnectError::config(
                POLICY_KEY,
                format!(
                    "unknown client override policy '{name}': use None, Principal, All or Allowlist \
                     (or Kafka's class name for one, e.g. {KAFKA_PACKAGE}None{CLASS_SUFFIX})"
                ),
            )),
        }
    }

    /// The policy's name, as Kafka's messages give it.
    pub fn name(&self) -> &'static str {
        match self {
            ClientOverridePolicy::None => "None",
            ClientOverridePolicy::Principal => "Principal",
            ClientOverridePolicy::All => "All",
            ClientOverridePolicy::Allowlist(_) => "Allowlist",
        }
    }

    /// Whether a connector may set client key `key` (without its prefix).
    pub fn allows(&self, key: &str) -> bool {
        match self {
            ClientOverridePolicy::None => false,
            ClientOverridePolicy::Principal => PRINCIPAL_KEYS.contains(&key),
            ClientOverridePolicy::All => true,
            ClientOverridePolicy::Allowlist(keys) => keys.iter().any(|k| k == key),
        }
    }

    /// The overrides in a `kind` connector's `config` that this policy
    /// refuses, as (the prefixed key, Kafka's message). Only the clients
    /// the connector uses are looked at, as Kafka does: a source's
    /// producer, and its admin client when it creates topics; a sink's
    /// consumer, and its producer and admin client when it has a dead
    /// letter queue.
    pub fn violations(&self, kind: ConnectorType, config: &ConfigMap) -> Vec<(String, String)> {
        if *self == ClientOverridePolicy::All {
            return Vec::new();
        }
        let has_dlq = config
            .get("errors.deadletterqueue.topic.name")
            .is_some_and(|t| !t.trim().is_empty());
        let creates_topics = config.keys().any(|k| k.starts_with("topic.creation."));
        let prefixes: &[&str] = match kind {
            ConnectorType::Source if creates_topics => &["producer.override.", "admin.override."],
            ConnectorType::Source => &["producer.override."],
            ConnectorType::Sink if has_dlq => &[
                "consumer.override.",
                "producer.override.",
                "admin.override.",
            ],
            ConnectorType::Sink => &["consumer.override."],
        };
        let mut refused = Vec::new();
        for (full, _) in config.iter() {
            let Some(key) = prefixes.iter().find_map(|p| full.strip_prefix(p)) else {
                continue;
            };
            if !self.allows(key) {
                refused.push((
                    full.clone(),
                    format!(
                        "The '{}' policy does not allow '{key}' to be overridden in the connector configuration.",
                        self.name()
                    ),
                ));
            }
        }
        refused
    }

    /// [`violations`](Self::violations) as one error naming every refused
    /// key: a task of a connector whose config reached this worker without
    /// its validation (written by a worker with another policy) does not
    /// start, as Kafka's worker refuses it.
    pub fn enforce(&self, kind: ConnectorType, config: &ConfigMap) -> Result<()> {
        let refused = self.violations(kind, config);
        let Some((first, _)) = refused.first() else {
            return Ok(());
        };
        let all: Vec<String> = refused.iter().map(|(k, m)| format!("{k}: {m}")).collect();
        Err(ConnectError::config(
            first.clone(),
            format!(
                "client config overrides not allowed by {POLICY_KEY}={}: {}",
                self.name(),
                all.join("; ")
            ),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(pairs: &[(&str, &str)]) -> ConfigMap {
        ConfigMap::from_pairs(pairs.iter().copied())
    }

    #[test]
    fn the_worker_config_carries_the_policy_and_refuses_an_unknown_one() {
        use crate::worker::WorkerConfig;
        let worker = |extra: &[(&str, &str)]| {
            let mut props = config(&[("key.converter", "J"), ("value.converter", "J")]);
            props.extend(config(extra));
            WorkerConfig::parse(&props)
        };
        assert_eq!(
            *worker(&[]).unwrap().client_override_policy(),
            ClientOverridePolicy::All
        );
        let allow = worker(&[
            (POLICY_KEY, "Allowlist"),
            (ALLOWLIST_KEY, "linger.ms, batch.size"),
        ])
        .unwrap();
        assert_eq!(
            *allow.client_override_policy(),
            ClientOverridePolicy::Allowlist(vec!["linger.ms".into(), "batch.size".into()])
        );
        let e = worker(&[(POLICY_KEY, "Everything")]).unwrap_err();
        assert!(e.to_string().contains(POLICY_KEY), "{e}");
    }

    #[test]
    fn names_and_class_names_parse_and_anything_else_is_refused() {
        for (name, want) in [
            ("None", ClientOverridePolicy::None),
            ("principal", ClientOverridePolicy::Principal),
            (" All ", ClientOverridePolicy::All),
            (
                "org.apache.kafka.connect.connector.policy.NoneConnectorClientConfigOverridePolicy",
                ClientOverridePolicy::None,
            ),
            (
                "org.apache.kafka.connect.connector.policy.AllowlistConnectorClientConfigOverridePolicy",
                ClientOverridePolicy::Allowlist(vec!["linger.ms".into()]),
            ),
        ] {
            let got = ClientOverridePolicy::parse(name, vec!["linger.ms".into()]).unwrap();
            assert_eq!(got, want, "{name}");
        }
        let e = ClientOverridePolicy::parse("Some", Vec::new()).unwrap_err();
        assert!(e.to_string().contains(POLICY_KEY), "{e}");
        assert!(e.to_string().contains("'Some'"), "{e}");
    }

    #[test]
    fn each_policy_refuses_what_kafkas_refuses_with_its_message() {
        let c = config(&[
            ("producer.override.sasl.jaas.config", "x"),
            ("producer.override.linger.ms", "5"),
            ("consumer.override.max.poll.records", "10"),
            ("producer.overrides.linger.ms", "not an override"),
        ]);
        let refused = |p: &ClientOverridePolicy| -> Vec<String> {
            p.violations(ConnectorType::Source, &c)
                .into_iter()
                .map(|(k, _)| k)
                .collect()
        };
        assert!(refused(&ClientOverridePolicy::All).is_empty());
        // A source has no consumer: its consumer overrides are not looked at.
        assert_eq!(
            refused(&ClientOverridePolicy::None),
            [
                "producer.override.linger.ms",
                "producer.override.sasl.jaas.config"
            ]
        );
        assert_eq!(
            refused(&ClientOverridePolicy::Principal),
            ["producer.override.linger.ms"]
        );
        assert_eq!(
            refused(&ClientOverridePolicy::Allowlist(vec!["linger.ms".into()])),
            ["producer.override.sasl.jaas.config"]
        );
        assert_eq!(
            refused(&ClientOverridePolicy::Allowlist(Vec::new())).len(),
            2
        );
        let (_, message) =
            &ClientOverridePolicy::Principal.violations(ConnectorType::Source, &c)[0];
        assert_eq!(
            message,
            "The 'Principal' policy does not allow 'linger.ms' to be overridden in the connector configuration."
        );
    }

    #[test]
    fn the_clients_looked_at_are_those_the_connector_uses() {
        let none = ClientOverridePolicy::None;
        let sink = config(&[
            ("consumer.override.a", "1"),
            ("producer.override.b", "1"),
            ("admin.override.c", "1"),
        ]);
        let keys = |kind, c: &ConfigMap| -> Vec<String> {
            none.violations(kind, c)
                .into_iter()
                .map(|(k, _)| k)
                .collect()
        };
        assert_eq!(keys(ConnectorType::Sink, &sink), ["consumer.override.a"]);
        let mut with_dlq = sink.clone();
        with_dlq.insert("errors.deadletterqueue.topic.name".into(), "dlq".into());
        assert_eq!(keys(ConnectorType::Sink, &with_dlq).len(), 3);
        assert_eq!(keys(ConnectorType::Source, &sink), ["producer.override.b"]);
        let mut creating = sink.clone();
        creating.insert("topic.creation.default.partitions".into(), "3".into());
        assert_eq!(
            keys(ConnectorType::Source, &creating),
            ["admin.override.c", "producer.override.b"]
        );
        let e = none.enforce(ConnectorType::Sink, &sink).unwrap_err();
        assert!(e.to_string().contains("consumer.override.a"), "{e}");
        assert!(e.to_string().contains(POLICY_KEY), "{e}");
    }
}
