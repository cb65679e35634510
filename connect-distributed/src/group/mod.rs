//! Group membership: a worker joins the Connect group (protocol type
//! `connect`) through Kafka's group coordinator, as Java's
//! `WorkerGroupMember` does.
//!
//! # Why a client of our own
//!
//! librdkafka, which carries the data, cannot run a group of another
//! protocol type: its assignors are internal and it writes the consumer's
//! own subscription bytes (`group.protocol.type=connect` is refused). So
//! this module speaks the six group APIs itself (and SASL's two), over tokio TCP, with the
//! `kafka-protocol` crate for the messages: ApiVersions, FindCoordinator,
//! JoinGroup, SyncGroup, Heartbeat and LeaveGroup. The sub-protocol bytes
//! inside JoinGroup and SyncGroup are [`crate::protocol`]'s, so Rust and
//! Java workers can share a group.
//!
//! # Pieces
//!
//! - [`GroupMember`]: the member, on its own tokio tasks, reporting
//!   [`GroupEvent`]s (joined, rebalancing, fenced, stopped); its docs hold
//!   the contract with the herder.
//! - [`GroupHandler`]: what the worker supplies: its URL and config offset
//!   for JoinGroup, and the leader's assignment (see
//!   [`crate::assignor::assign`]).
//! - [`GroupConfig`]: Java's keys and defaults (`group.id`,
//!   `bootstrap.servers`, `session.timeout.ms` 10000,
//!   `heartbeat.interval.ms` 3000, `rebalance.timeout.ms` 60000,
//!   `client.id`, ...).
//! - `wire` (private): framing, version negotiation and defensive
//!   decoding of what the broker sends; malformed bytes are typed
//!   [`WireError`]s, never panics.
//!
//! # Security
//!
//! The same keys as the data clients (`security.protocol`, `sasl.*`,
//! `ssl.*`, read by [`connect_runtime::kafka::security`]):
//! - `SSL` and `SASL_SSL`: a TLS handshake (OpenSSL) right after TCP
//!   connects, trusting the PEM truststore (or the system's roots), with
//!   the keystore's certificate when the broker asks for one, and the host
//!   name checked unless `ssl.endpoint.identification.algorithm` is empty.
//!   A store that cannot be read is [`GroupError::TlsSetup`] (naming the
//!   key), a refused certificate [`GroupError::TlsHandshake`]; both fatal.
//! - `SASL_PLAINTEXT` and `SASL_SSL`: after ApiVersions, SaslHandshake (v1)
//!   naming the mechanism, then SaslAuthenticate (v0..v2, as negotiated):
//!   once with the credentials for `PLAIN`, twice for `SCRAM-SHA-256` and
//!   `SCRAM-SHA-512` (RFC 5802; the broker's signature is checked). Wrong
//!   credentials are [`GroupError::Authentication`] (naming
//!   `sasl.jaas.config`), a broker without the mechanism is
//!   [`GroupError::SaslMechanism`] (naming `sasl.mechanism`); both fatal.
//!
//! [`check_brokers`] runs these once at start-up.
//!
//! # Versions
//!
//! Each connection starts with ApiVersions and uses, per API, the highest
//! version both sides support up to librdkafka's (FindCoordinator 2,
//! JoinGroup 5, SyncGroup 3, Heartbeat 3, LeaveGroup 1), which librdkafka's
//! mock cluster also reads correctly; only a broker that refuses all of
//! those gets a higher one (up to [`GroupApi::max_version`]).
//!
//! # Not implemented yet
//!
//! - SASL mechanisms `GSSAPI` and `OAUTHBEARER`: refused
//!   ([`ConfigError::Security`]).
//! - Static membership (`group.instance.id`): Java's Connect refuses it
//!   too.

mod config;
mod conn;
mod error;
mod member;
mod scram;
mod tls;
mod wire;

pub use config::{
    ConfigError, GroupConfig, BOOTSTRAP_SERVERS_CONFIG, BOOTSTRAP_SERVERS_DEFAULT,
    CLIENT_ID_CONFIG, CONNECT_PROTOCOL_CONFIG, GROUP_ID_CONFIG, HEARTBEAT_INTERVAL_MS_CONFIG,
    HEARTBEAT_INTERVAL_MS_DEFAULT, REBALANCE_TIMEOUT_MS_CONFIG, REBALANCE_TIMEOUT_MS_DEFAULT,
    REQUEST_TIMEOUT_MS_CONFIG, REQUEST_TIMEOUT_MS_DEFAULT, RETRY_BACKOFF_MAX_MS_CONFIG,
    RETRY_BACKOFF_MAX_MS_DEFAULT, RETRY_BACKOFF_MS_CONFIG, RETRY_BACKOFF_MS_DEFAULT,
    SASL_JAAS_CONFIG, SASL_MECHANISM_CONFIG, SECURITY_PROTOCOL_CONFIG, SESSION_TIMEOUT_MS_CONFIG,
    SESSION_TIMEOUT_MS_DEFAULT,
};
pub use error::{ErrorCode, GroupError, WireError};
pub use member::{
    check_brokers, GroupEvent, GroupHandler, GroupMember, HandlerError, Joined, LeaderRound,
    MemberPhase, MemberStatus, RebalanceReason, RoundMember, WorkerState,
};
pub use wire::GroupApi;
