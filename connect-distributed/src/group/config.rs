//! The group member's settings, with the worker config keys and defaults
//! of Java's `DistributedConfig`.
//!
//! Security: `security.protocol`, `sasl.*` and `ssl.*`, read by
//! [`connect_runtime::kafka::security`], the same reader the data clients
//! use; what it refuses is a [`ConfigError::Security`].

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use connect_runtime::kafka::security::{Security, SecurityError};
use thiserror::Error;

use crate::protocol::SubProtocol;

/// `group.id`: the Connect cluster's group (required).
pub const GROUP_ID_CONFIG: &str = "group.id";
/// `bootstrap.servers`: brokers to find the coordinator through.
pub const BOOTSTRAP_SERVERS_CONFIG: &str = "bootstrap.servers";
/// Default of `bootstrap.servers` (Java's).
pub const BOOTSTRAP_SERVERS_DEFAULT: &str = "localhost:9092";
/// `session.timeout.ms`: how long the coordinator waits for a heartbeat.
pub const SESSION_TIMEOUT_MS_CONFIG: &str = "session.timeout.ms";
/// Default of `session.timeout.ms`: 10 s.
pub const SESSION_TIMEOUT_MS_DEFAULT: u32 = 10_000;
/// `heartbeat.interval.ms`: the time between heartbeats.
pub const HEARTBEAT_INTERVAL_MS_CONFIG: &str = "heartbeat.interval.ms";
/// Default of `heartbeat.interval.ms`: 3 s.
pub const HEARTBEAT_INTERVAL_MS_DEFAULT: u32 = 3_000;
/// `rebalance.timeout.ms`: how long every member has to rejoin.
pub const REBALANCE_TIMEOUT_MS_CONFIG: &str = "rebalance.timeout.ms";
/// Default of `rebalance.timeout.ms`: 60 s.
pub const REBALANCE_TIMEOUT_MS_DEFAULT: u32 = 60_000;
/// `client.id`: sent in every request header.
pub const CLIENT_ID_CONFIG: &str = "client.id";
/// `request.timeout.ms`: the longest wait for a response (JoinGroup waits
/// at least the rebalance timeout plus 5 s, as in Java).
pub const REQUEST_TIMEOUT_MS_CONFIG: &str = "request.timeout.ms";
/// Default of `request.timeout.ms` in Connect's worker config: 40 s.
pub const REQUEST_TIMEOUT_MS_DEFAULT: u32 = 40_000;
/// `retry.backoff.ms`: the first wait before retrying a failed step.
pub const RETRY_BACKOFF_MS_CONFIG: &str = "retry.backoff.ms";
/// Default of `retry.backoff.ms`: 100 ms.
pub const RETRY_BACKOFF_MS_DEFAULT: u32 = 100;
/// `retry.backoff.max.ms`: the cap of the exponential retry backoff.
pub const RETRY_BACKOFF_MAX_MS_CONFIG: &str = "retry.backoff.max.ms";
/// Default of `retry.backoff.max.ms`: 1 s.
pub const RETRY_BACKOFF_MAX_MS_DEFAULT: u32 = 1_000;
/// `connect.protocol`: `sessioned`, `compatible` or `eager`.
pub const CONNECT_PROTOCOL_CONFIG: &str = "connect.protocol";
/// `security.protocol`: `PLAINTEXT`, `SSL`, `SASL_PLAINTEXT` or
/// `SASL_SSL`.
pub const SECURITY_PROTOCOL_CONFIG: &str = "security.protocol";
/// `sasl.mechanism`: `PLAIN`, `SCRAM-SHA-256` or `SCRAM-SHA-512`.
pub const SASL_MECHANISM_CONFIG: &str = "sasl.mechanism";
/// `sasl.jaas.config`: the `PlainLoginModule` line with the credentials.
pub const SASL_JAAS_CONFIG: &str = "sasl.jaas.config";

/// Why the settings were refused.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// A required key is absent (Java's wording).
    #[error("Missing required configuration \"{key}\" which has no default value.")]
    Missing {
        /// The key.
        key: &'static str,
    },
    /// A value is not valid for its key.
    #[error("Invalid value {value} for configuration {key}: {reason}")]
    Invalid {
        /// The key.
        key: &'static str,
        /// The value given.
        value: String,
        /// Why it is refused.
        reason: String,
    },
    /// A security key is refused (an unknown protocol, a mechanism this
    /// build does not implement, a JAAS line that does not parse, a JKS
    /// store).
    #[error(transparent)]
    Security(SecurityError),
}

/// The group member's settings.
///
/// Build it with [`GroupConfig::new`] and adjust the fields, or read a
/// worker config with [`GroupConfig::from_properties`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupConfig {
    /// `group.id`.
    pub group_id: String,
    /// `bootstrap.servers`, as `host:port` entries.
    pub bootstrap_servers: Vec<String>,
    /// `session.timeout.ms`.
    pub session_timeout: Duration,
    /// `heartbeat.interval.ms`.
    pub heartbeat_interval: Duration,
    /// `rebalance.timeout.ms`.
    pub rebalance_timeout: Duration,
    /// `client.id` (Java's default when empty: `connect-<n>`).
    pub client_id: String,
    /// `request.timeout.ms`.
    pub request_timeout: Duration,
    /// `retry.backoff.ms`.
    pub retry_backoff: Duration,
    /// `retry.backoff.max.ms`.
    pub retry_backoff_max: Duration,
    /// `connect.protocol`: which sub-protocols to offer.
    pub connect_protocol: SubProtocol,
    /// `security.protocol`, `sasl.mechanism` and `sasl.jaas.config`:
    /// plaintext or SASL/PLAIN credentials.
    pub security: Security,
    /// How long before its session could run out a member fences itself
    /// (stops all its work): the time its work may take to stop. Not a
    /// Kafka key; the herder sets it to `task.shutdown.graceful.timeout.ms`.
    /// A successor leader has no memory of the previous assignment and
    /// hands the old leader's work out at once; a follower's lost work
    /// waits `scheduled.rebalance.max.delay.ms` only while the leader that
    /// remembers it stays, and not at all when the delay is 0. Capped at
    /// half of `session.timeout.ms`. Default 0.
    pub fence_lead: Duration,
}

/// Numbers Java's default client ids (`connect-1`, `connect-2`, ...).
static CLIENT_SEQUENCE: AtomicU32 = AtomicU32::new(1);

fn default_client_id() -> String {
    format!(
        "connect-{}",
        CLIENT_SEQUENCE.fetch_add(1, Ordering::Relaxed)
    )
}

impl GroupConfig {
    /// Java's defaults for `group_id` and `bootstrap_servers`.
    pub fn new(group_id: impl Into<String>, bootstrap_servers: &str) -> GroupConfig {
        GroupConfig {
            group_id: group_id.into(),
            bootstrap_servers: split_list(bootstrap_servers),
            session_timeout: ms(SESSION_TIMEOUT_MS_DEFAULT),
            heartbeat_interval: ms(HEARTBEAT_INTERVAL_MS_DEFAULT),
            rebalance_timeout: ms(REBALANCE_TIMEOUT_MS_DEFAULT),
            client_id: default_client_id(),
            request_timeout: ms(REQUEST_TIMEOUT_MS_DEFAULT),
            retry_backoff: ms(RETRY_BACKOFF_MS_DEFAULT),
            retry_backoff_max: ms(RETRY_BACKOFF_MAX_MS_DEFAULT),
            connect_protocol: SubProtocol::Sessioned,
            security: Security::default(),
            fence_lead: Duration::ZERO,
        }
    }

    /// Reads the group keys of a worker config; other keys are ignored.
    ///
    /// The security keys are read as the data clients read them; what they
    /// refuse is a [`ConfigError::Security`].
    ///
    /// ```
    /// use connect_distributed::group::GroupConfig;
    /// use std::time::Duration;
    ///
    /// let config = GroupConfig::from_properties([
    ///     ("group.id", "connect-cluster"),
    ///     ("bootstrap.servers", "k1:9092, k2:9092"),
    ///     ("session.timeout.ms", "6000"),
    /// ])?;
    /// assert_eq!(config.bootstrap_servers, ["k1:9092", "k2:9092"]);
    /// assert_eq!(config.session_timeout, Duration::from_secs(6));
    /// assert_eq!(config.heartbeat_interval, Duration::from_secs(3));
    ///
    /// let err = GroupConfig::from_properties([("group.id", "g"), ("security.protocol", "TLS")])
    ///     .unwrap_err();
    /// assert!(err.to_string().contains("security.protocol"));
    /// # Ok::<(), connect_distributed::group::ConfigError>(())
    /// ```
    pub fn from_properties<I, K, V>(props: I) -> Result<GroupConfig, ConfigError>
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<str>,
        V: AsRef<str>,
    {
        let props: BTreeMap<String, String> = props
            .into_iter()
            .map(|(k, v)| (k.as_ref().to_owned(), v.as_ref().trim().to_owned()))
            .collect();
        let get = |key: &str| props.get(key).map(String::as_str);

        let group_id = match get(GROUP_ID_CONFIG) {
            Some(g) if !g.is_empty() => g.to_owned(),
            _ => {
                return Err(ConfigError::Missing {
                    key: GROUP_ID_CONFIG,
                })
            }
        };
        let servers =
            split_list(get(BOOTSTRAP_SERVERS_CONFIG).unwrap_or(BOOTSTRAP_SERVERS_DEFAULT));
        if servers.is_empty() {
            return Err(ConfigError::Invalid {
                key: BOOTSTRAP_SERVERS_CONFIG,
                value: String::new(),
                reason: "at least one host:port is required".into(),
            });
        }
        for s in &servers {
            check_host_port(s)?;
        }
        let mut config = GroupConfig::new(group_id, "");
        config.bootstrap_servers = servers;
        config.session_timeout = ms_key(
            &get,
            SESSION_TIMEOUT_MS_CONFIG,
            SESSION_TIMEOUT_MS_DEFAULT,
            1,
        )?;
        config.heartbeat_interval = ms_key(
            &get,
            HEARTBEAT_INTERVAL_MS_CONFIG,
            HEARTBEAT_INTERVAL_MS_DEFAULT,
            1,
        )?;
        config.rebalance_timeout = ms_key(
            &get,
            REBALANCE_TIMEOUT_MS_CONFIG,
            REBALANCE_TIMEOUT_MS_DEFAULT,
            1,
        )?;
        config.request_timeout = ms_key(
            &get,
            REQUEST_TIMEOUT_MS_CONFIG,
            REQUEST_TIMEOUT_MS_DEFAULT,
            1,
        )?;
        config.retry_backoff = ms_key(&get, RETRY_BACKOFF_MS_CONFIG, RETRY_BACKOFF_MS_DEFAULT, 0)?;
        config.retry_backoff_max = ms_key(
            &get,
            RETRY_BACKOFF_MAX_MS_CONFIG,
            RETRY_BACKOFF_MAX_MS_DEFAULT,
            0,
        )?;
        if let Some(id) = get(CLIENT_ID_CONFIG).filter(|id| !id.is_empty()) {
            config.client_id = id.to_owned();
        }
        if let Some(p) = get(CONNECT_PROTOCOL_CONFIG) {
            config.connect_protocol =
                SubProtocol::from_config_value(p).ok_or_else(|| ConfigError::Invalid {
                    key: CONNECT_PROTOCOL_CONFIG,
                    value: p.to_owned(),
                    reason:
                        "String must be one of (case insensitive): EAGER, COMPATIBLE, SESSIONED"
                            .into(),
                })?;
        }
        config.security = Security::from_lookup(get).map_err(ConfigError::Security)?;
        config.validate()?;
        Ok(config)
    }

    /// Checks the relations between settings: a heartbeat interval below
    /// the session timeout, at least one bootstrap server, a group id.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.group_id.is_empty() {
            return Err(ConfigError::Missing {
                key: GROUP_ID_CONFIG,
            });
        }
        if self.bootstrap_servers.is_empty() {
            return Err(ConfigError::Invalid {
                key: BOOTSTRAP_SERVERS_CONFIG,
                value: String::new(),
                reason: "at least one host:port is required".into(),
            });
        }
        if self.heartbeat_interval >= self.session_timeout {
            return Err(ConfigError::Invalid {
                key: HEARTBEAT_INTERVAL_MS_CONFIG,
                value: self.heartbeat_interval.as_millis().to_string(),
                reason: format!(
                    "must be lower than {SESSION_TIMEOUT_MS_CONFIG} ({})",
                    self.session_timeout.as_millis()
                ),
            });
        }
        for (key, d) in [
            (SESSION_TIMEOUT_MS_CONFIG, self.session_timeout),
            (REBALANCE_TIMEOUT_MS_CONFIG, self.rebalance_timeout),
        ] {
            if d.is_zero() || d.as_millis() > i32::MAX as u128 {
                return Err(ConfigError::Invalid {
                    key,
                    value: d.as_millis().to_string(),
                    reason: "must be between 1 and 2147483647".into(),
                });
            }
        }
        Ok(())
    }
}

fn ms(v: u32) -> Duration {
    Duration::from_millis(u64::from(v))
}

fn ms_key<'a>(
    get: &impl Fn(&str) -> Option<&'a str>,
    key: &'static str,
    default: u32,
    min: i64,
) -> Result<Duration, ConfigError> {
    let Some(raw) = get(key) else {
        return Ok(ms(default));
    };
    let invalid = |reason: String| ConfigError::Invalid {
        key,
        value: raw.to_owned(),
        reason,
    };
    let v: i64 = raw
        .parse()
        .map_err(|_| invalid("Not a number of type INT".into()))?;
    if v < min || v > i64::from(i32::MAX) {
        return Err(invalid(format!("Value must be at least {min}")));
    }
    Ok(Duration::from_millis(v.unsigned_abs()))
}

fn split_list(s: &str) -> Vec<String> {
    s.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

fn check_host_port(s: &str) -> Result<(), ConfigError> {
    let bad = || ConfigError::Invalid {
        key: BOOTSTRAP_SERVERS_CONFIG,
        value: s.to_owned(),
        reason: "Invalid url in bootstrap.servers: expected host:port".into(),
    };
    // An optional scheme (`PLAINTEXT://host:port`) is tolerated, as Java does.
    let s = s.rsplit("://").next().unwrap_or(s);
    let (host, port) = s.rsplit_once(':').ok_or_else(bad)?;
    if host.is_empty() || port.parse::<u16>().is_err() {
        return Err(bad());
    }
    Ok(())
}

/// The address to connect to for a bootstrap entry (without a scheme).
pub(crate) fn connect_address(entry: &str) -> &str {
    entry.rsplit("://").next().unwrap_or(entry)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_javas() {
        let c = GroupConfig::from_properties([("group.id", "g")]).unwrap();
        assert_eq!(c.bootstrap_servers, ["localhost:9092"]);
        assert_eq!(c.session_timeout, Duration::from_millis(10_000));
        assert_eq!(c.heartbeat_interval, Duration::from_millis(3_000));
        assert_eq!(c.rebalance_timeout, Duration::from_millis(60_000));
        assert_eq!(c.connect_protocol, SubProtocol::Sessioned);
        assert!(c.client_id.starts_with("connect-"));
    }

    #[test]
    fn refuses_bad_values() {
        assert!(matches!(
            GroupConfig::from_properties([("bootstrap.servers", "a:1")]),
            Err(ConfigError::Missing { key: "group.id" })
        ));
        let e = GroupConfig::from_properties([("group.id", "g"), ("session.timeout.ms", "x")]);
        assert!(matches!(
            e,
            Err(ConfigError::Invalid {
                key: "session.timeout.ms",
                ..
            })
        ));
        let e = GroupConfig::from_properties([
            ("group.id", "g"),
            ("session.timeout.ms", "1000"),
            ("heartbeat.interval.ms", "1000"),
        ]);
        assert!(matches!(
            e,
            Err(ConfigError::Invalid {
                key: "heartbeat.interval.ms",
                ..
            })
        ));
        let e = GroupConfig::from_properties([("group.id", "g"), ("bootstrap.servers", "nohost")]);
        assert!(matches!(
            e,
            Err(ConfigError::Invalid {
                key: "bootstrap.servers",
                ..
            })
        ));
        let e = GroupConfig::from_properties([("group.id", "g"), ("connect.protocol", "x")]);
        assert!(matches!(
            e,
            Err(ConfigError::Invalid {
                key: "connect.protocol",
                ..
            })
        ));
    }

    const ALICE: &str = r#"org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" password="alice-secret";"#;

    #[test]
    fn security_keys_are_read_as_the_data_clients_read_them() {
        for p in ["PLAINTEXT", "plaintext"] {
            let c = GroupConfig::from_properties([("group.id", "g"), ("security.protocol", p)])
                .unwrap();
            assert_eq!(c.security, Security::default());
        }
        let c = GroupConfig::from_properties([
            ("group.id", "g"),
            ("security.protocol", "SASL_PLAINTEXT"),
            ("sasl.mechanism", "PLAIN"),
            ("sasl.jaas.config", ALICE),
        ])
        .unwrap();
        assert!(
            matches!(&c.security.sasl, Some(p) if p.username == "alice" && p.password == "alice-secret")
        );
        assert!(!format!("{c:?}").contains("alice-secret"));
        let c = GroupConfig::from_properties([
            ("group.id", "g"),
            ("security.protocol", "SASL_SSL"),
            ("sasl.mechanism", "SCRAM-SHA-512"),
            ("sasl.jaas.config", ALICE),
            ("ssl.truststore.location", "/tls/ca.pem"),
        ])
        .unwrap();
        assert_eq!(c.security.protocol_name(), "SASL_SSL");
        let e = GroupConfig::from_properties([("group.id", "g"), ("security.protocol", "TLS")]);
        assert!(
            matches!(
                e,
                Err(ConfigError::Security(SecurityError::Invalid {
                    key: "security.protocol",
                    ..
                }))
            ),
            "{e:?}"
        );
        for (mechanism, jaas, needle) in [
            ("GSSAPI", ALICE, "sasl.mechanism=GSSAPI"),
            ("PLAIN", "PlainLoginModule required;", "sasl.jaas.config"),
        ] {
            let e = GroupConfig::from_properties([
                ("group.id", "g"),
                ("security.protocol", "SASL_PLAINTEXT"),
                ("sasl.mechanism", mechanism),
                ("sasl.jaas.config", jaas),
            ])
            .unwrap_err();
            assert!(matches!(e, ConfigError::Security(_)), "{e:?}");
            assert!(e.to_string().contains(needle), "{e}");
        }
    }
}
