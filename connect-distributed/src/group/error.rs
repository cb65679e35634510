//! Typed errors of the group client: broker error codes, malformed bytes,
//! I/O, configuration.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use thiserror::Error;

use super::config::ConfigError;
use crate::protocol::ProtocolError;

/// A Kafka error code as a broker sent it, with Kafka's name when it is
/// one the group APIs use. Any `i16` is accepted: a code this crate does
/// not know is kept and shown as a number, never a panic.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ErrorCode(pub i16);

impl ErrorCode {
    /// `NONE` (0): success.
    pub const NONE: ErrorCode = ErrorCode(0);
    /// `UNKNOWN_SERVER_ERROR` (-1).
    pub const UNKNOWN_SERVER_ERROR: ErrorCode = ErrorCode(-1);
    /// `REQUEST_TIMED_OUT` (7).
    pub const REQUEST_TIMED_OUT: ErrorCode = ErrorCode(7);
    /// `NETWORK_EXCEPTION` (13).
    pub const NETWORK_EXCEPTION: ErrorCode = ErrorCode(13);
    /// `COORDINATOR_LOAD_IN_PROGRESS` (14): find the coordinator again.
    pub const COORDINATOR_LOAD_IN_PROGRESS: ErrorCode = ErrorCode(14);
    /// `COORDINATOR_NOT_AVAILABLE` (15): find the coordinator again.
    pub const COORDINATOR_NOT_AVAILABLE: ErrorCode = ErrorCode(15);
    /// `NOT_COORDINATOR` (16): find the coordinator again.
    pub const NOT_COORDINATOR: ErrorCode = ErrorCode(16);
    /// `ILLEGAL_GENERATION` (22): rejoin.
    pub const ILLEGAL_GENERATION: ErrorCode = ErrorCode(22);
    /// `INCONSISTENT_GROUP_PROTOCOL` (23): the group uses another protocol
    /// type, or no sub-protocol is offered by every member.
    pub const INCONSISTENT_GROUP_PROTOCOL: ErrorCode = ErrorCode(23);
    /// `INVALID_GROUP_ID` (24).
    pub const INVALID_GROUP_ID: ErrorCode = ErrorCode(24);
    /// `UNKNOWN_MEMBER_ID` (25): drop the member id and rejoin.
    pub const UNKNOWN_MEMBER_ID: ErrorCode = ErrorCode(25);
    /// `INVALID_SESSION_TIMEOUT` (26): outside the broker's
    /// `group.min.session.timeout.ms`..`group.max.session.timeout.ms`.
    pub const INVALID_SESSION_TIMEOUT: ErrorCode = ErrorCode(26);
    /// `REBALANCE_IN_PROGRESS` (27): rejoin.
    pub const REBALANCE_IN_PROGRESS: ErrorCode = ErrorCode(27);
    /// `GROUP_AUTHORIZATION_FAILED` (30).
    pub const GROUP_AUTHORIZATION_FAILED: ErrorCode = ErrorCode(30);
    /// `UNSUPPORTED_SASL_MECHANISM` (33): the broker does not enable the
    /// mechanism asked for.
    pub const UNSUPPORTED_SASL_MECHANISM: ErrorCode = ErrorCode(33);
    /// `ILLEGAL_SASL_STATE` (34).
    pub const ILLEGAL_SASL_STATE: ErrorCode = ErrorCode(34);
    /// `SASL_AUTHENTICATION_FAILED` (58): wrong credentials.
    pub const SASL_AUTHENTICATION_FAILED: ErrorCode = ErrorCode(58);
    /// `UNSUPPORTED_VERSION` (35).
    pub const UNSUPPORTED_VERSION: ErrorCode = ErrorCode(35);
    /// `INVALID_REQUEST` (42): librdkafka's mock answers late followers'
    /// SyncGroup with it; rejoin.
    pub const INVALID_REQUEST: ErrorCode = ErrorCode(42);
    /// `GROUP_ID_NOT_FOUND` (69).
    pub const GROUP_ID_NOT_FOUND: ErrorCode = ErrorCode(69);
    /// `MEMBER_ID_REQUIRED` (79): rejoin with the member id in the response.
    pub const MEMBER_ID_REQUIRED: ErrorCode = ErrorCode(79);
    /// `GROUP_MAX_SIZE_REACHED` (81).
    pub const GROUP_MAX_SIZE_REACHED: ErrorCode = ErrorCode(81);
    /// `FENCED_INSTANCE_ID` (82).
    pub const FENCED_INSTANCE_ID: ErrorCode = ErrorCode(82);

    /// Whether this is `NONE`.
    pub const fn is_ok(self) -> bool {
        self.0 == 0
    }

    /// Kafka's name for the code, when this crate knows it.
    pub fn name(self) -> Option<&'static str> {
        Some(match self.0 {
            0 => "NONE",
            -1 => "UNKNOWN_SERVER_ERROR",
            7 => "REQUEST_TIMED_OUT",
            13 => "NETWORK_EXCEPTION",
            14 => "COORDINATOR_LOAD_IN_PROGRESS",
            15 => "COORDINATOR_NOT_AVAILABLE",
            16 => "NOT_COORDINATOR",
            22 => "ILLEGAL_GENERATION",
            23 => "INCONSISTENT_GROUP_PROTOCOL",
            24 => "INVALID_GROUP_ID",
            25 => "UNKNOWN_MEMBER_ID",
            26 => "INVALID_SESSION_TIMEOUT",
            27 => "REBALANCE_IN_PROGRESS",
            30 => "GROUP_AUTHORIZATION_FAILED",
            33 => "UNSUPPORTED_SASL_MECHANISM",
            34 => "ILLEGAL_SASL_STATE",
            35 => "UNSUPPORTED_VERSION",
            58 => "SASL_AUTHENTICATION_FAILED",
            42 => "INVALID_REQUEST",
            69 => "GROUP_ID_NOT_FOUND",
            79 => "MEMBER_ID_REQUIRED",
            81 => "GROUP_MAX_SIZE_REACHED",
            82 => "FENCED_INSTANCE_ID",
            _ => return None,
        })
    }

    /// Whether the coordinator has to be found again (14, 15, 16).
    pub const fn needs_rediscovery(self) -> bool {
        matches!(self.0, 14..=16)
    }

    /// Whether retrying cannot help: the group's settings or rights are
    /// wrong (23, 24, 26, 30, 33, 34, 35, 58, 81, 82).
    pub const fn is_fatal(self) -> bool {
        matches!(self.0, 23 | 24 | 26 | 30 | 33 | 34 | 35 | 58 | 81 | 82)
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => write!(f, "{name} ({})", self.0),
            None => write!(f, "unknown error code {}", self.0),
        }
    }
}

/// Bytes from a broker that are not a valid response (framing, header or
/// body). Never a panic: every malformed input ends up here.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum WireError {
    /// The size prefix of a frame is negative, too small for a response
    /// header, or above the limit.
    #[error("invalid response frame size {size} (must be 4..={max})")]
    InvalidFrameSize {
        /// The size read.
        size: i64,
        /// The most this client accepts.
        max: usize,
    },
    /// The response is for another request.
    #[error("{api} response has correlation id {actual}, expected {expected}")]
    CorrelationMismatch {
        /// The API of the request sent.
        api: &'static str,
        /// The correlation id of the request sent.
        expected: i32,
        /// The one in the response.
        actual: i32,
    },
    /// A count in the response is larger than the bytes that follow could
    /// hold (checked before anything is allocated for it).
    #[error("{api} v{version} response: `{field}` claims {count} entries but only {remaining} bytes follow")]
    ImplausibleCount {
        /// The API.
        api: &'static str,
        /// The version.
        version: i16,
        /// The array field.
        field: &'static str,
        /// The count read.
        count: i64,
        /// Bytes left after the count.
        remaining: usize,
    },
    /// The header or body does not decode with the negotiated version's
    /// schema (truncated, bad UTF-8, negative lengths, ...).
    #[error("malformed {api} v{version} response: {message}")]
    Malformed {
        /// The API.
        api: &'static str,
        /// The version.
        version: i16,
        /// What the decoder said.
        message: String,
    },
    /// A request could not be encoded (a field the version cannot carry).
    #[error("cannot encode {api} v{version} request: {message}")]
    Encode {
        /// The API.
        api: &'static str,
        /// The version.
        version: i16,
        /// What the encoder said.
        message: String,
    },
}

/// Everything that can go wrong in group membership.
///
/// It is `Clone` (I/O errors are shared) so that it can travel in
/// [`GroupEvent`](super::GroupEvent)s.
#[derive(Clone, Debug, Error)]
#[non_exhaustive]
pub enum GroupError {
    /// The configuration is invalid.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// Connecting, reading or writing failed.
    #[error("connection to {addr} failed: {source}")]
    Io {
        /// The broker address.
        addr: String,
        /// The I/O error.
        #[source]
        source: Arc<std::io::Error>,
    },
    /// A request got no answer in time.
    #[error("{api} request to {addr} timed out after {after:?}")]
    Timeout {
        /// The broker address.
        addr: String,
        /// The API.
        api: &'static str,
        /// The time waited.
        after: Duration,
    },
    /// The broker sent bytes that are not a valid response.
    #[error("bad response from {addr}: {source}")]
    Wire {
        /// The broker address.
        addr: String,
        /// What is wrong with the bytes.
        #[source]
        source: WireError,
    },
    /// The connection was left unusable by an earlier cancelled request.
    #[error("connection to {addr} is unusable after an interrupted request")]
    Poisoned {
        /// The broker address.
        addr: String,
    },
    /// The broker supports no version of an API that this client speaks.
    #[error(
        "broker {addr} supports {api} versions {broker_min}..={broker_max}, \
         this client {client_min}..={client_max}"
    )]
    UnsupportedVersion {
        /// The broker address.
        addr: String,
        /// The API.
        api: &'static str,
        /// The broker's lowest version (-1 if it does not list the API).
        broker_min: i16,
        /// The broker's highest version (-1 if it does not list the API).
        broker_max: i16,
        /// This client's lowest version.
        client_min: i16,
        /// This client's highest version.
        client_max: i16,
    },
    /// The broker answered with an error code.
    #[error("{api} failed: {code}{}", suffix(.message))]
    Broker {
        /// The API.
        api: &'static str,
        /// The error code.
        code: ErrorCode,
        /// The broker's message, if any.
        message: Option<String>,
    },
    /// The broker refused the SASL credentials (or, with SCRAM, could not
    /// prove it knows them).
    #[error(
        "SASL/{mechanism} authentication of user `{username}` to {addr} failed{}: \
         check the username and password in sasl.jaas.config",
        suffix(.message)
    )]
    Authentication {
        /// The broker address.
        addr: String,
        /// The mechanism (`PLAIN`, `SCRAM-SHA-256`, `SCRAM-SHA-512`).
        mechanism: &'static str,
        /// The user name sent (never the password).
        username: String,
        /// The broker's message, if any.
        message: Option<String>,
    },
    /// The broker does not enable the SASL mechanism asked for.
    #[error(
        "broker {addr} does not enable SASL mechanism {mechanism} (it enables {enabled:?}): \
         check sasl.mechanism and the broker's sasl.enabled.mechanisms"
    )]
    SaslMechanism {
        /// The broker address.
        addr: String,
        /// The mechanism asked for.
        mechanism: &'static str,
        /// The mechanisms the broker listed.
        enabled: Vec<String>,
    },
    /// A TLS store named by an `ssl.*` key cannot be read or used.
    #[error("TLS setting {key}: {message}")]
    TlsSetup {
        /// The key (`ssl.truststore.location`, `ssl.keystore.location`, ...).
        key: &'static str,
        /// What is wrong.
        message: String,
    },
    /// The TLS handshake with a broker failed for a reason other than a
    /// broken connection (a refused certificate, no common protocol, a
    /// client certificate the broker requires).
    #[error("TLS handshake with {addr} failed: {message}")]
    TlsHandshake {
        /// The broker address.
        addr: String,
        /// What failed, and which setting to check.
        message: String,
    },
    /// No bootstrap server answered FindCoordinator.
    #[error("no coordinator found for group `{group}` through {servers:?}: {last}")]
    NoCoordinator {
        /// The group id.
        group: String,
        /// The servers tried.
        servers: Vec<String>,
        /// The last failure.
        last: Box<GroupError>,
    },
    /// Connect sub-protocol bytes (metadata or assignment) did not decode.
    #[error("invalid Connect {what}: {source}")]
    Protocol {
        /// `metadata of member <id>` or `assignment`.
        what: String,
        /// The decoding error.
        #[source]
        source: ProtocolError,
    },
    /// The broker elected a sub-protocol this worker did not offer.
    #[error("the broker elected unknown sub-protocol `{0}`")]
    UnknownSubProtocol(String),
    /// The caller's [`GroupHandler`](super::GroupHandler) failed.
    #[error("group handler failed in {stage}: {message}")]
    Handler {
        /// `worker_state` or `assign`.
        stage: &'static str,
        /// The handler's error, as text.
        message: String,
    },
    /// The member has stopped.
    #[error("the group member has stopped")]
    Stopped,
}

fn suffix(message: &Option<String>) -> String {
    message
        .as_deref()
        .map(|m| format!(": {m}"))
        .unwrap_or_default()
}

impl GroupError {
    pub(crate) fn io(addr: &str, source: std::io::Error) -> GroupError {
        GroupError::Io {
            addr: addr.to_owned(),
            source: Arc::new(source),
        }
    }

    /// Whether retrying cannot help (configuration, authorization,
    /// unsupported versions, a group that refuses this member).
    pub fn is_fatal(&self) -> bool {
        match self {
            GroupError::Config(_)
            | GroupError::UnsupportedVersion { .. }
            | GroupError::Authentication { .. }
            | GroupError::SaslMechanism { .. }
            | GroupError::TlsSetup { .. }
            | GroupError::TlsHandshake { .. } => true,
            GroupError::Broker { code, .. } => code.is_fatal(),
            _ => false,
        }
    }
}
