//! Distributed mode's worker keys (Kafka's `DistributedConfig`): the
//! group, the three internal topics and how other workers reach this one.

use std::collections::BTreeMap;
use std::time::Duration;

use connect_api::ConnectError;

use crate::assignor::{AssignorConfig, SCHEDULED_REBALANCE_MAX_DELAY_MS_DEFAULT};
use crate::group::GroupConfig;

/// One internal topic: its name, and how to create it when missing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TopicSettings {
    /// `*.storage.topic`.
    pub name: String,
    /// `*.storage.partitions` (the config topic always has 1).
    pub partitions: i32,
    /// `*.storage.replication.factor` (-1: the broker's default).
    pub replication_factor: i16,
}

/// The distributed worker's own settings, parsed from the worker
/// properties (the rest, converters and client settings, is the runtime's
/// `WorkerConfig`).
///
/// ```
/// use connect_distributed::herder::DistributedConfig;
///
/// let props = [
///     ("group.id", "connect-cluster"),
///     ("bootstrap.servers", "localhost:9092"),
///     ("config.storage.topic", "connect-configs"),
///     ("offset.storage.topic", "connect-offsets"),
///     ("status.storage.topic", "connect-status"),
/// ];
/// let config = DistributedConfig::parse(props)?;
/// assert_eq!(config.offsets.partitions, 25);
/// assert_eq!(config.status.partitions, 5);
/// # Ok::<(), connect_api::ConnectError>(())
/// ```
#[derive(Clone, Debug)]
pub struct DistributedConfig {
    /// Group membership (`group.id`, timeouts, `connect.protocol`).
    pub group: GroupConfig,
    /// `config.storage.topic` (one partition).
    pub configs: TopicSettings,
    /// `offset.storage.topic` (default 25 partitions).
    pub offsets: TopicSettings,
    /// `status.storage.topic` (default 5 partitions).
    pub status: TopicSettings,
    /// `scheduled.rebalance.max.delay.ms`.
    pub assignor: AssignorConfig,
    /// `worker.sync.timeout.ms`: how long to wait to catch up with the
    /// config topic before giving up a round.
    pub worker_sync_timeout: Duration,
    /// `worker.unsync.backoff.ms`: how long a worker that stays behind
    /// the config topic waits before it joins again (review F2: no
    /// rebalance storm while it cannot catch up).
    pub worker_unsync_backoff: Duration,
    /// `inter.worker.key.ttl.ms`: how long a session key lives before the
    /// leader rotates it.
    pub key_ttl: Duration,
    /// `exactly.once.source.support`.
    pub exactly_once_source: ExactlyOnceSourceSupport,
}

fn required(props: &BTreeMap<String, String>, key: &str) -> Result<String, ConnectError> {
    match props.get(key).map(|v| v.trim()) {
        Some(v) if !v.is_empty() => Ok(v.to_string()),
        _ => Err(ConnectError::config(
            key,
            format!("Missing required configuration \"{key}\" which has no default value."),
        )),
    }
}

fn number<T: std::str::FromStr>(
    props: &BTreeMap<String, String>,
    key: &str,
    default: T,
) -> Result<T, ConnectError> {
    match props.get(key).map(|v| v.trim()) {
        None | Some("") => Ok(default),
        Some(v) => v.parse().map_err(|_| {
            ConnectError::config(
                key,
                format!(
                    "Invalid value {v} for configuration {key}: Not a number of the expected type"
                ),
            )
        }),
    }
}

fn topic(
    props: &BTreeMap<String, String>,
    prefix: &str,
    partitions: Option<i32>,
) -> Result<TopicSettings, ConnectError> {
    let name = required(props, &format!("{prefix}.storage.topic"))?;
    let replication_key = format!("{prefix}.storage.replication.factor");
    let replication_factor: i16 = number(props, &replication_key, 3)?;
    if replication_factor == 0 || replication_factor < -1 {
        return Err(ConnectError::config(
            &replication_key,
            format!("{replication_key} must be -1 (the broker's default) or at least 1"),
        ));
    }
    let partitions = match partitions {
        Some(p) => p,
        None => {
            let key = format!("{prefix}.storage.partitions");
            let default = if prefix == "offset" { 25 } else { 5 };
            let p: i32 = number(props, &key, default)?;
            if p == 0 || p < -1 {
                return Err(ConnectError::config(
                    &key,
                    format!("{key} must be -1 (the broker's default) or at least 1"),
                ));
            }
            p
        }
    };
    Ok(TopicSettings {
        name,
        partitions,
        replication_factor,
    })
}

/// `exactly.once.source.support` (KIP-618), with Kafka's values and
/// meaning. Every worker of a cluster must have the same value, as in
/// Kafka.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ExactlyOnceSourceSupport {
    /// Source tasks deliver at least once (Kafka's default).
    #[default]
    Disabled,
    /// A step of a rolling upgrade: source tasks still deliver at least
    /// once, but this worker, as leader, fences zombies when asked
    /// (`PUT /connectors/{c}/fence`), so workers with `enabled` can join.
    Preparing,
    /// Source tasks deliver exactly once: each in transactions of its own
    /// producer, with the tasks of earlier generations fenced out first.
    Enabled,
}

impl ExactlyOnceSourceSupport {
    const KEY: &str = "exactly.once.source.support";

    fn parse(props: &BTreeMap<String, String>) -> Result<Self, ConnectError> {
        match props.get(Self::KEY).map(|v| v.trim()) {
            None | Some("disabled") => Ok(Self::Disabled),
            Some("preparing") => Ok(Self::Preparing),
            Some("enabled") => Ok(Self::Enabled),
            Some(v) => Err(ConnectError::config(
                Self::KEY,
                format!(
                    "Invalid value {v} for configuration {}: String must be one of: disabled, preparing, enabled",
                    Self::KEY
                ),
            )),
        }
    }

    /// Whether the leader fences zombies (`preparing` and `enabled`).
    pub fn fences(self) -> bool {
        self != Self::Disabled
    }
}

impl DistributedConfig {
    /// Parse the distributed keys of a worker's properties. Missing
    /// required keys and bad values are config errors naming the key.
    pub fn parse<I, K, V>(props: I) -> Result<DistributedConfig, ConnectError>
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<str>,
        V: AsRef<str>,
    {
        let props: BTreeMap<String, String> = props
            .into_iter()
            .map(|(k, v)| (k.as_ref().to_string(), v.as_ref().to_string()))
            .collect();
        let mut group = GroupConfig::from_properties(&props).map_err(|e| {
            let key = match &e {
                crate::group::ConfigError::Missing { key }
                | crate::group::ConfigError::Invalid { key, .. } => key.to_string(),
                crate::group::ConfigError::Security(
                    connect_runtime::kafka::security::SecurityError::Invalid { key, .. }
                    | connect_runtime::kafka::security::SecurityError::Unsupported { key, .. },
                ) => key.to_string(),
                crate::group::ConfigError::Security(_) => "sasl.jaas.config".to_string(),
            };
            ConnectError::config(key, e.to_string())
        })?;
        // A member fences itself early by the time its work may take to
        // stop (see `GroupConfig::fence_lead`).
        let shutdown_ms: u64 = number(&props, "task.shutdown.graceful.timeout.ms", 5_000)?;
        group.fence_lead = Duration::from_millis(shutdown_ms);
        let max_delay_ms: i32 = number(
            &props,
            "scheduled.rebalance.max.delay.ms",
            SCHEDULED_REBALANCE_MAX_DELAY_MS_DEFAULT,
        )?;
        if max_delay_ms < 0 {
            return Err(ConnectError::config(
                "scheduled.rebalance.max.delay.ms",
                "scheduled.rebalance.max.delay.ms must be at least 0",
            ));
        }
        let sync_ms: u64 = number(&props, "worker.sync.timeout.ms", 3000)?;
        let unsync_ms: u64 = number(&props, "worker.unsync.backoff.ms", 300_000)?;
        let ttl_ms: u64 = number(&props, "inter.worker.key.ttl.ms", 3_600_000)?;
        let exactly_once_source = ExactlyOnceSourceSupport::parse(&props)?;
        Ok(DistributedConfig {
            group,
            configs: topic(&props, "config", Some(1))?,
            offsets: topic(&props, "offset", None)?,
            status: topic(&props, "status", None)?,
            assignor: AssignorConfig { max_delay_ms },
            worker_sync_timeout: Duration::from_millis(sync_ms),
            worker_unsync_backoff: Duration::from_millis(unsync_ms),
            key_ttl: Duration::from_millis(ttl_ms),
            exactly_once_source,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> Vec<(&'static str, &'static str)> {
        vec![
            ("group.id", "g"),
            ("config.storage.topic", "c"),
            ("offset.storage.topic", "o"),
            ("status.storage.topic", "s"),
        ]
    }

    #[test]
    fn javas_defaults() {
        let c = DistributedConfig::parse(base()).unwrap();
        assert_eq!(c.configs.partitions, 1);
        assert_eq!(c.offsets.partitions, 25);
        assert_eq!(c.status.partitions, 5);
        assert_eq!(c.configs.replication_factor, 3);
        assert_eq!(c.assignor.max_delay_ms, 300_000);
    }

    #[test]
    fn each_missing_topic_is_named() {
        for key in [
            "config.storage.topic",
            "offset.storage.topic",
            "status.storage.topic",
            "group.id",
        ] {
            let props: Vec<_> = base().into_iter().filter(|(k, _)| *k != key).collect();
            let err = DistributedConfig::parse(props).unwrap_err();
            assert!(err.to_string().contains(key), "{key}: {err}");
        }
    }

    #[test]
    fn exactly_once_source_support_takes_kafkas_values() {
        let with = |v: &'static str| {
            let mut props = base();
            props.push(("exactly.once.source.support", v));
            DistributedConfig::parse(props).map(|c| c.exactly_once_source)
        };
        assert_eq!(
            DistributedConfig::parse(base())
                .unwrap()
                .exactly_once_source,
            ExactlyOnceSourceSupport::Disabled
        );
        assert_eq!(
            with("disabled").unwrap(),
            ExactlyOnceSourceSupport::Disabled
        );
        assert_eq!(
            with("preparing").unwrap(),
            ExactlyOnceSourceSupport::Preparing
        );
        assert_eq!(with("enabled").unwrap(), ExactlyOnceSourceSupport::Enabled);
        // Case-sensitive, as Kafka's validator.
        let e = with("ENABLED").unwrap_err().to_string();
        assert!(
            e.contains("must be one of: disabled, preparing, enabled"),
            "{e}"
        );
    }

    #[test]
    fn bad_numbers_name_their_key() {
        let mut props = base();
        props.push(("offset.storage.replication.factor", "0"));
        let err = DistributedConfig::parse(props).unwrap_err();
        assert!(err
            .to_string()
            .contains("offset.storage.replication.factor"));
        let mut props = base();
        props.push(("scheduled.rebalance.max.delay.ms", "soon"));
        let err = DistributedConfig::parse(props).unwrap_err();
        assert!(err.to_string().contains("scheduled.rebalance.max.delay.ms"));
    }

    fn parse_with(
        extra: &[(&'static str, &'static str)],
    ) -> Result<DistributedConfig, ConnectError> {
        let mut props = base();
        props.extend_from_slice(extra);
        DistributedConfig::parse(props)
    }

    /// The config key a parse error names.
    fn key_of(extra: &[(&'static str, &'static str)]) -> String {
        match parse_with(extra).map(|_| ()).unwrap_err().kind() {
            connect_api::ErrorKind::Config { key } => key.clone(),
            other => panic!("{extra:?}: not a config error: {other:?}"),
        }
    }

    #[test]
    fn the_timing_keys_are_read_with_kafkas_defaults() {
        let c = DistributedConfig::parse(base()).unwrap();
        assert_eq!(c.worker_sync_timeout, Duration::from_millis(3000));
        assert_eq!(c.worker_unsync_backoff, Duration::from_millis(300_000));
        assert_eq!(c.key_ttl, Duration::from_millis(3_600_000));
        assert_eq!(c.group.fence_lead, Duration::from_millis(5_000));
        let c = parse_with(&[
            ("worker.sync.timeout.ms", "11"),
            ("worker.unsync.backoff.ms", "12"),
            ("inter.worker.key.ttl.ms", "13"),
            ("task.shutdown.graceful.timeout.ms", "14"),
            ("scheduled.rebalance.max.delay.ms", "0"),
            // An empty value takes the default, as a missing one.
            ("status.storage.partitions", " "),
        ])
        .unwrap();
        assert_eq!(c.worker_sync_timeout, Duration::from_millis(11));
        assert_eq!(c.worker_unsync_backoff, Duration::from_millis(12));
        assert_eq!(c.key_ttl, Duration::from_millis(13));
        assert_eq!(c.group.fence_lead, Duration::from_millis(14));
        assert_eq!(c.assignor.max_delay_ms, 0);
        assert_eq!(c.status.partitions, 5);
        assert_eq!(
            key_of(&[("scheduled.rebalance.max.delay.ms", "-1")]),
            "scheduled.rebalance.max.delay.ms"
        );
    }

    #[test]
    fn partitions_and_replication_take_minus_one_or_at_least_one() {
        let c = parse_with(&[
            ("offset.storage.partitions", "-1"),
            ("status.storage.partitions", "1"),
            ("offset.storage.replication.factor", "-1"),
            ("status.storage.replication.factor", "1"),
            // The config topic has one partition whatever is asked.
            ("config.storage.partitions", "7"),
        ])
        .unwrap();
        assert_eq!((c.offsets.partitions, c.status.partitions), (-1, 1));
        assert_eq!(c.configs.partitions, 1);
        assert_eq!(
            (c.offsets.replication_factor, c.status.replication_factor),
            (-1, 1)
        );
        assert_eq!(
            (c.configs.name.as_str(), c.offsets.name.as_str()),
            ("c", "o")
        );
        for bad in ["0", "-2"] {
            for key in [
                "offset.storage.partitions",
                "status.storage.partitions",
                "config.storage.replication.factor",
                "status.storage.replication.factor",
            ] {
                let extra = [(key, bad)];
                assert_eq!(key_of(&extra), key, "{key}={bad}");
            }
        }
    }

    #[test]
    fn a_blank_required_key_is_missing() {
        assert_eq!(
            key_of(&[("status.storage.topic", "  ")]),
            "status.storage.topic"
        );
        let c = parse_with(&[("status.storage.topic", " s2 ")]).unwrap();
        assert_eq!(c.status.name, "s2");
    }

    #[test]
    fn group_and_security_errors_name_their_key() {
        assert_eq!(
            key_of(&[("session.timeout.ms", "soon")]),
            "session.timeout.ms"
        );
        assert_eq!(
            key_of(&[("security.protocol", "CARRIER_PIGEON")]),
            "security.protocol"
        );
        assert_eq!(
            key_of(&[
                ("security.protocol", "SASL_PLAINTEXT"),
                ("sasl.mechanism", "PLAIN")
            ]),
            "sasl.jaas.config"
        );
        // Kafka's default mechanism, GSSAPI, is not implemented.
        assert_eq!(
            key_of(&[("security.protocol", "SASL_PLAINTEXT")]),
            "sasl.mechanism"
        );
    }

    #[test]
    fn preparing_and_enabled_fence_zombies() {
        assert!(!ExactlyOnceSourceSupport::Disabled.fences());
        assert!(ExactlyOnceSourceSupport::Preparing.fences());
        assert!(ExactlyOnceSourceSupport::Enabled.fences());
    }
}
