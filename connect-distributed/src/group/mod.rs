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
//! `security.protocol=SASL_PLAINTEXT` with `sasl.mechanism=PLAIN`: every
//! connection, after ApiVersions, sends SaslHandshake (v1) naming `PLAIN`
//! and SaslAuthenticate (v0..v2, as negotiated) with the credentials of
//! `sasl.jaas.config` (`PlainLoginModule required username="..."
//! password="...";`). Wrong credentials are [`GroupError::Authentication`]
//! (naming `sasl.jaas.config`), a broker without `PLAIN` is
//! [`GroupError::SaslMechanism`] (naming `sasl.mechanism`); both are fatal.
//! [`check_brokers`] runs that exchange once at start-up.
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
//! - TLS on the group connection: `security.protocol` `SSL` and
//!   `SASL_SSL` are refused ([`ConfigError::UnsupportedSecurityProtocol`]):
//!   TLS needs a TLS stack, which this client does not have.
//! - SASL mechanisms other than `PLAIN` (`SCRAM-*`, `GSSAPI`,
//!   `OAUTHBEARER`): refused ([`ConfigError::Security`]).
//! - Static membership (`group.instance.id`): Java's Connect refuses it
//!   too.

mod config;
mod conn;
mod error;
mod member;
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
