//! Errors of the Kafka port.

use connect_api::ConnectError;

/// What kind of failure a [`KafkaError`] is; the runtime's retry logic only
/// looks at [`KafkaError::is_retriable`], the kind refines log messages and
/// lets the runtime react to fencing and unsupported operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum KafkaErrorKind {
    /// A transient failure (leader unavailable, timeout, network): retrying
    /// the same operation later may succeed.
    Retriable,
    /// The operation did not finish in time; retriable.
    Timeout,
    /// The topic or partition does not exist.
    UnknownTopicOrPartition,
    /// A client property is invalid or missing.
    Config,
    /// Another producer with the same `transactional.id` took over; this
    /// producer must be closed.
    Fenced,
    /// The cluster does not support the operation (for example CreateTopics on
    /// librdkafka's mock cluster).
    Unsupported,
    /// The record is too large, malformed, or otherwise rejected for good.
    InvalidRecord,
    /// The consumer's group generation moved on (a rebalance happened), so
    /// its offset commit was rejected; retry after the next poll.
    RebalanceInProgress,
    /// Any other non-retriable failure.
    Fatal,
}

impl KafkaErrorKind {
    /// Whether an error of this kind may succeed when retried.
    pub fn is_retriable(self) -> bool {
        matches!(
            self,
            KafkaErrorKind::Retriable
                | KafkaErrorKind::Timeout
                | KafkaErrorKind::RebalanceInProgress
        )
    }
}

/// An error from a Kafka operation: a kind and a message that says what
/// failed and where (topic, partition, group).
///
/// ```
/// use connect_kafka::{KafkaError, KafkaErrorKind};
///
/// let e = KafkaError::new(KafkaErrorKind::Timeout, "produce to orders-3 timed out");
/// assert!(e.is_retriable());
/// let c: connect_api::ConnectError = e.into();
/// assert!(c.is_retriable());
/// assert!(!KafkaError::fatal("bad record").is_retriable());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct KafkaError {
    kind: KafkaErrorKind,
    message: String,
}

impl KafkaError {
    /// An error of `kind` with `message`.
    pub fn new(kind: KafkaErrorKind, message: impl Into<String>) -> Self {
        KafkaError {
            kind,
            message: message.into(),
        }
    }

    /// A retriable error.
    pub fn retriable(message: impl Into<String>) -> Self {
        Self::new(KafkaErrorKind::Retriable, message)
    }

    /// A non-retriable error.
    pub fn fatal(message: impl Into<String>) -> Self {
        Self::new(KafkaErrorKind::Fatal, message)
    }

    /// The kind of failure.
    pub fn kind(&self) -> KafkaErrorKind {
        self.kind
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Whether retrying the same operation may succeed.
    pub fn is_retriable(&self) -> bool {
        self.kind.is_retriable()
    }

    /// Prepend context to the message (`"commit for group g: " + message`).
    pub fn context(mut self, context: impl std::fmt::Display) -> Self {
        self.message = format!("{context}: {}", self.message);
        self
    }
}

impl From<KafkaError> for ConnectError {
    fn from(e: KafkaError) -> Self {
        let message = format!("Kafka: {}", e.message);
        match e.kind {
            k if k.is_retriable() => ConnectError::retriable(message),
            KafkaErrorKind::UnknownTopicOrPartition => ConnectError::not_found(message),
            _ => ConnectError::other(message),
        }
    }
}

/// Why [`Producer::send`](super::Producer::send) did not accept a record.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SendError {
    /// The producer's local queue is full: backpressure. The caller waits
    /// for acknowledgements (or a short while) and sends the same record again.
    #[error("the producer queue is full")]
    QueueFull,
    /// The record was rejected; it will not be acknowledged.
    #[error(transparent)]
    Kafka(#[from] KafkaError),
}
