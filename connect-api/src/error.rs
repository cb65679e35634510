//! The one error type of the plugin contract.

use std::fmt;

/// Boxed source error kept in a [`ConnectError`]'s `source()` chain.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Result alias used across the connect crates.
pub type Result<T, E = ConnectError> = std::result::Result<T, E>;

/// What kind of failure a [`ConnectError`] is.
///
/// The runtime's retry and tolerance logic looks only at this kind (through
/// [`ConnectError::is_retriable`]), so a plugin chooses the kind with care:
/// a retriable error is retried with backoff, everything else is handed to
/// `errors.tolerance`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A configuration value is missing or invalid; `key` names the config key.
    Config {
        /// The config key at fault.
        key: String,
    },
    /// A value does not fit its schema, or data cannot be converted;
    /// `path` is the field path (`address.zip`) when one is known.
    Data {
        /// Dotted field path, empty when the whole value is at fault.
        path: String,
    },
    /// A schema could not be built (an attribute set twice, a bad default, ...).
    SchemaBuilder,
    /// A transient failure: retrying the same operation later may succeed.
    Retriable,
    /// The requested item (connector, plugin, topic...) does not exist.
    NotFound,
    /// The request conflicts with the current state (a connector that
    /// already exists, offsets altered while the connector runs).
    Conflict,
    /// A source task's stored offset for `partition` is no longer valid in
    /// the source system (a resume token that expired, a file that was
    /// replaced). The runtime applies `offsets.invalid.policy`.
    OffsetInvalid {
        /// The source partition whose stored offset is invalid.
        partition: crate::record::SourceMap,
    },
    /// An optional plugin method the plugin does not implement: its
    /// default body answers this, and the runtime stops calling it (and
    /// drops what it kept for it). Plugins do not return it themselves.
    NotImplemented,
    /// Any other failure.
    Other,
}

/// The error every connect-api call returns.
///
/// It carries a [`kind`](ConnectError::kind), a human message that says what
/// failed and where, and an optional source error.
///
/// ```
/// use connect_api::{ConnectError, ErrorKind};
///
/// let e = ConnectError::data_at("address.zip", "expected INT32, got STRING");
/// assert_eq!(e.to_string(), "address.zip: expected INT32, got STRING");
/// assert!(!e.is_retriable());
/// assert!(ConnectError::retriable("broker not available").is_retriable());
/// assert!(matches!(ConnectError::config("topic", "is required").kind(), ErrorKind::Config { key } if key == "topic"));
/// ```
#[derive(Debug)]
pub struct ConnectError {
    kind: ErrorKind,
    message: String,
    source: Option<BoxError>,
}

impl ConnectError {
    /// A new error of `kind` with `message`.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        ConnectError {
            kind,
            message: message.into(),
            source: None,
        }
    }

    /// A configuration error for `key`. The message is shown as
    /// `Invalid value for configuration <key>: <message>`.
    pub fn config(key: impl Into<String>, message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Config { key: key.into() }, message)
    }

    /// A data error without a field path.
    pub fn data(message: impl Into<String>) -> Self {
        Self::new(
            ErrorKind::Data {
                path: String::new(),
            },
            message,
        )
    }

    /// A data error at field `path` (`address.zip`).
    pub fn data_at(path: impl Into<String>, message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Data { path: path.into() }, message)
    }

    /// A schema-builder error.
    pub fn schema_builder(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::SchemaBuilder, message)
    }

    /// A retriable error.
    pub fn retriable(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Retriable, message)
    }

    /// What the default body of an optional plugin method answers, naming
    /// it (e.g. `SourceTask::commit_record`).
    pub fn not_implemented(method: &str) -> Self {
        Self::new(
            ErrorKind::NotImplemented,
            format!("{method} is not implemented"),
        )
    }

    /// Whether this is [`not_implemented`](Self::not_implemented)'s answer.
    pub fn is_not_implemented(&self) -> bool {
        matches!(self.kind, ErrorKind::NotImplemented)
    }

    /// A not-found error.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::NotFound, message)
    }

    /// The stored offset of source `partition` is no longer valid.
    pub fn offset_invalid(partition: crate::record::SourceMap, message: impl Into<String>) -> Self {
        Self::new(ErrorKind::OffsetInvalid { partition }, message)
    }

    /// A conflict with the current state.
    pub fn conflict(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Conflict, message)
    }

    /// Any other error.
    pub fn other(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Other, message)
    }

    /// Attach the underlying cause, kept in the `source()` chain.
    pub fn with_source(mut self, source: impl Into<BoxError>) -> Self {
        self.source = Some(source.into());
        self
    }

    /// The kind of failure.
    pub fn kind(&self) -> &ErrorKind {
        &self.kind
    }

    /// The message, without the field path or config key prefix.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Whether retrying the same operation may succeed.
    pub fn is_retriable(&self) -> bool {
        matches!(self.kind, ErrorKind::Retriable)
    }

    /// Prefix the field path of a data error with `parent` (used while
    /// validating nested values so the final message names the full path).
    pub fn in_field(mut self, parent: &str) -> Self {
        if let ErrorKind::Data { path } = &mut self.kind {
            *path = if path.is_empty() {
                parent.to_string()
            } else if path.starts_with('[') {
                // An element index reads as `items[2]`, not `items.[2]`.
                format!("{parent}{path}")
            } else {
                format!("{parent}.{path}")
            };
        }
        self
    }

    /// Prepend context to the message (`"transform 'mask': " + message`).
    pub fn context(mut self, context: impl fmt::Display) -> Self {
        self.message = format!("{context}: {}", self.message);
        self
    }
}

impl fmt::Display for ConnectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            // A message that already names its key (ConfigDef's "Invalid value
            // x for configuration k: ..." / "Missing required configuration
            // \"k\"") is shown as is, not prefixed a second time.
            ErrorKind::Config { key } if !self.message.contains(key.as_str()) => {
                write!(f, "Invalid value for configuration {key}: {}", self.message)
            }
            ErrorKind::Data { path } if !path.is_empty() => write!(f, "{path}: {}", self.message),
            _ => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for ConnectError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_ref()
            .map(|e| e.as_ref() as &(dyn std::error::Error + 'static))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error as _;

    #[test]
    fn nested_paths_compose() {
        let e = ConnectError::data_at("zip", "expected INT32, got STRING").in_field("address");
        assert_eq!(e.to_string(), "address.zip: expected INT32, got STRING");
    }

    #[test]
    fn element_indexes_attach_without_a_dot() {
        let e = ConnectError::data_at("[2]", "expected INT32, got STRING")
            .in_field("zip")
            .in_field("addresses");
        assert_eq!(
            e.to_string(),
            "addresses.zip[2]: expected INT32, got STRING"
        );
    }

    #[test]
    fn config_error_names_key() {
        let e = ConnectError::config("batch.size", "must be at least 1");
        assert_eq!(
            e.to_string(),
            "Invalid value for configuration batch.size: must be at least 1"
        );
    }

    #[test]
    fn config_messages_naming_their_key_are_not_prefixed_twice() {
        let e = ConnectError::config(
            "topic",
            "Missing required configuration \"topic\" which has no default value.",
        );
        assert_eq!(
            e.to_string(),
            "Missing required configuration \"topic\" which has no default value."
        );
    }

    #[test]
    fn source_chain_kept() {
        let io = std::io::Error::other("disk gone");
        let e = ConnectError::other("cannot write offsets").with_source(io);
        assert_eq!(
            e.source().map(|s| s.to_string()).as_deref(),
            Some("disk gone")
        );
    }
}
