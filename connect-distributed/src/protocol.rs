//! Kafka Connect's group sub-protocols, byte for byte as Apache Kafka 4.4
//! writes them.
//!
//! Distributed workers join a Kafka consumer-style group whose protocol
//! type is `"connect"` ([`PROTOCOL_TYPE`]). Each worker offers one or more
//! *sub-protocols* in its JoinGroup request, most preferred first, each with
//! its own metadata bytes ([`WorkerMetadata`]); the broker elects one that
//! every member offers, and the leader sends every member an
//! [`Assignment`] in SyncGroup. Because the broker treats these bytes as
//! opaque, a Rust worker can share a group with Java workers only if it
//! writes and reads exactly what Java's `ConnectProtocol` (v0, `default`)
//! and `IncrementalCooperativeConnectProtocol` (v1 `compatible`, v2
//! `sessioned`) do. That is what this module does, and nothing more: no
//! I/O, no clock.
//!
//! # Layout
//!
//! All integers are big-endian; a string is an int16 byte length and UTF-8;
//! an array is an int32 count (-1 = null where nullable) and its items;
//! bytes are an int32 length (-1 = null) and the bytes.
//!
//! ```text
//! metadata v0:  version:i16 url:string config-offset:i64
//! metadata v1+: version:i16 url:string config-offset:i64
//!               allocation:nullable-bytes      (an encoded assignment, with its own version)
//! assignment v0:  version:i16 error:i16 leader:string leader-url:string config-offset:i64
//!                 assignment:[connector:string tasks:[i32]]
//! assignment v1+: the same, then revoked:[connector:string tasks:[i32]] delay:i32
//! ```
//!
//! A task id of [`CONNECTOR_TASK`] (-1) in a `tasks` list stands for the
//! `Connector` instance itself.
//!
//! # Decoding rules (Java's)
//!
//! - A negative version is refused; any version from 0 up is accepted, and
//!   a version above 2 is read with the v1 layout (Java "assumes versions
//!   can be parsed").
//! - v1+ fields after `config-offset` that are absent because the buffer
//!   ended are tolerated: a missing allocation is null, missing
//!   assigned/revoked lists are empty, a missing delay is 0. A null
//!   assigned/revoked array also reads as empty.
//! - Assignments are always read with the tolerant v1 layout, whatever the
//!   version (as Java's `WorkerCoordinator` does for every sub-protocol);
//!   v0 metadata is read with the v0 layout.
//! - Bytes after the last field are ignored (room for future versions).
//!
//! Every decoding failure is a [`ProtocolError`] naming the field (with
//! Java's key name, e.g. `leader-url`) and its offset in the buffer;
//! decoding never panics, whatever the input.
//!
//! # Deviations from Java
//!
//! - Strings must be valid UTF-8; Java replaces bad sequences with U+FFFD.
//!   A Java peer never sends invalid UTF-8 (it encodes Java strings), so this
//!   only affects corrupted input, which is then reported instead of
//!   silently altered.
//! - Java writes the *assigned* connectors in `java.util.HashSet` order,
//!   which depends on the JDK; [`ConnectorAssignment::group`] uses
//!   first-seen order. No reader depends on that order. Decoding keeps the
//!   order of the bytes, so decoding Java's bytes and encoding them again
//!   gives the same bytes.

use std::fmt;

use thiserror::Error;

/// The group protocol type every Connect worker uses in JoinGroup.
pub const PROTOCOL_TYPE: &str = "connect";

/// Task id that stands for the `Connector` instance of a connector.
pub const CONNECTOR_TASK: i32 = -1;

/// Version of the eager protocol (`default`).
pub const CONNECT_PROTOCOL_V0: i16 = 0;
/// Version of the incremental cooperative protocol (`compatible`).
pub const CONNECT_PROTOCOL_V1: i16 = 1;
/// Version of the incremental cooperative protocol with session keys
/// (`sessioned`, KIP-507). Its bytes have the v1 layout.
pub const CONNECT_PROTOCOL_V2: i16 = 2;

/// Assignment error code: the assignment is valid.
pub const NO_ERROR: i16 = 0;
/// Assignment error code: the leader's config is behind some member's;
/// every worker should read the config topic to the end and rejoin.
pub const CONFIG_MISMATCH: i16 = 1;

/// Most a Kafka protocol string can hold (int16 length prefix).
const MAX_STRING_LEN: usize = i16::MAX as usize;
/// Most items or bytes an int32 length prefix can count.
const MAX_ARRAY_LEN: usize = i32::MAX as usize;

/// The three Connect sub-protocols, as named in JoinGroup.
///
/// `connect.protocol` (the worker setting) names a *compatibility mode*:
/// a worker in mode `sessioned` offers all three, in `compatible` the last
/// two, in `eager` only `default` (see [`SubProtocol::offered`]).
///
/// ```
/// use connect_distributed::protocol::SubProtocol;
///
/// assert_eq!(SubProtocol::Sessioned.name(), "sessioned");
/// assert_eq!(SubProtocol::from_name("default"), Some(SubProtocol::Eager));
/// assert_eq!(
///     SubProtocol::Sessioned.offered(),
///     &[SubProtocol::Sessioned, SubProtocol::Compatible, SubProtocol::Eager]
/// );
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SubProtocol {
    /// `default`, version 0: stop-the-world rebalancing.
    Eager,
    /// `compatible`, version 1: incremental cooperative rebalancing.
    Compatible,
    /// `sessioned`, version 2: as `compatible`, plus signed internal
    /// REST requests with a session key (KIP-507).
    Sessioned,
}

/// Every sub-protocol, most preferred first (the order of a `sessioned`
/// worker's JoinGroup request).
pub const PREFERENCE: [SubProtocol; 3] = [
    SubProtocol::Sessioned,
    SubProtocol::Compatible,
    SubProtocol::Eager,
];

impl SubProtocol {
    /// The protocol name in JoinGroup: `default`, `compatible` or `sessioned`.
    pub const fn name(self) -> &'static str {
        match self {
            SubProtocol::Eager => "default",
            SubProtocol::Compatible => "compatible",
            SubProtocol::Sessioned => "sessioned",
        }
    }

    /// The value of the `connect.protocol` worker setting that selects this
    /// mode: `eager`, `compatible` or `sessioned`.
    pub const fn config_value(self) -> &'static str {
        match self {
            SubProtocol::Eager => "eager",
            SubProtocol::Compatible => "compatible",
            SubProtocol::Sessioned => "sessioned",
        }
    }

    /// The version written in the metadata and assignments of this
    /// sub-protocol.
    pub const fn version(self) -> i16 {
        match self {
            SubProtocol::Eager => CONNECT_PROTOCOL_V0,
            SubProtocol::Compatible => CONNECT_PROTOCOL_V1,
            SubProtocol::Sessioned => CONNECT_PROTOCOL_V2,
        }
    }

    /// Whether this sub-protocol rebalances incrementally (v1 and up).
    pub const fn is_incremental(self) -> bool {
        !matches!(self, SubProtocol::Eager)
    }

    /// The sub-protocol with this JoinGroup name, ignoring ASCII case (as
    /// Java does).
    pub fn from_name(name: &str) -> Option<SubProtocol> {
        PREFERENCE
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(name))
    }

    /// The mode selected by a `connect.protocol` value, ignoring ASCII case.
    pub fn from_config_value(value: &str) -> Option<SubProtocol> {
        PREFERENCE
            .into_iter()
            .find(|p| p.config_value().eq_ignore_ascii_case(value))
    }

    /// The sub-protocol of a protocol version (0, 1 or 2).
    pub const fn from_version(version: i16) -> Option<SubProtocol> {
        match version {
            CONNECT_PROTOCOL_V0 => Some(SubProtocol::Eager),
            CONNECT_PROTOCOL_V1 => Some(SubProtocol::Compatible),
            CONNECT_PROTOCOL_V2 => Some(SubProtocol::Sessioned),
            _ => None,
        }
    }

    /// The sub-protocols a worker in this mode offers, most preferred first.
    pub const fn offered(self) -> &'static [SubProtocol] {
        match self {
            SubProtocol::Eager => &[SubProtocol::Eager],
            SubProtocol::Compatible => &[SubProtocol::Compatible, SubProtocol::Eager],
            SubProtocol::Sessioned => &PREFERENCE,
        }
    }
}

impl fmt::Display for SubProtocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why bytes could not be decoded, or a value could not be encoded.
///
/// Field names are Java's schema key names (`version`, `url`,
/// `config-offset`, `allocation`, `error`, `leader`, `leader-url`,
/// `assignment`, `revoked`, `delay`, `connector`, `tasks`); offsets count
/// from the start of the outermost buffer, also inside a metadata's
/// embedded assignment.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum ProtocolError {
    /// The buffer ends inside a field.
    #[error("truncated `{field}` at offset {offset}: needs {needed} bytes, {remaining} left")]
    Truncated {
        /// The field being read.
        field: &'static str,
        /// Where the field (or its length prefix's payload) starts.
        offset: usize,
        /// Bytes the field needs at least.
        needed: usize,
        /// Bytes left in the buffer.
        remaining: usize,
    },
    /// A length or count is negative where null is not allowed.
    #[error("negative length {length} for `{field}` at offset {offset}")]
    NegativeLength {
        /// The field being read.
        field: &'static str,
        /// Where its length prefix starts.
        offset: usize,
        /// The length read.
        length: i32,
    },
    /// A string is not UTF-8.
    #[error("`{field}` at offset {offset} is not valid UTF-8")]
    InvalidUtf8 {
        /// The field being read.
        field: &'static str,
        /// Where the string's bytes start.
        offset: usize,
    },
    /// The version is negative (decoding) or not one this crate can write.
    #[error("unsupported Connect protocol version {version} at offset {offset}")]
    UnsupportedVersion {
        /// The version.
        version: i16,
        /// Where it is (0 when encoding).
        offset: usize,
    },
    /// A value is too long for its length prefix.
    #[error("`{field}` is too long to encode: {length} > {max}")]
    TooLong {
        /// The field.
        field: &'static str,
        /// Its length in bytes or items.
        length: usize,
        /// The most the encoding allows.
        max: usize,
    },
    /// A v1 field is set on a value encoded with version 0.
    #[error("`{field}` cannot be encoded in Connect protocol version {version}")]
    FieldNotInVersion {
        /// The field.
        field: &'static str,
        /// The version.
        version: i16,
    },
}

/// A connector's task: the runtime's one task id type, which the
/// assignment's wire form carries as a signed int (read with
/// [`task_number`], which refuses a negative one).
pub use connect_runtime::status::TaskId;

/// A task number read from a wire format as a signed int: negative numbers
/// name no task (-1 is the connector instance in an assignment, handled
/// before this is called).
pub fn task_number(n: i32) -> Option<u32> {
    u32::try_from(n).ok()
}

/// A task number as the wire formats write it (a signed int, as Java's).
pub fn wire_task(n: u32) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

/// One entry of an assignment's wire form: a connector and the ids of its
/// items, where [`CONNECTOR_TASK`] (-1) is the `Connector` instance.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ConnectorAssignment {
    /// The connector's name.
    pub connector: String,
    /// Task ids, in wire order; -1 for the `Connector` instance.
    pub tasks: Vec<i32>,
}

impl ConnectorAssignment {
    /// Groups connectors and tasks into wire entries as Java does for
    /// revoked items: one entry per connector in first-seen order, the
    /// connectors first (each contributing -1, duplicates dropped), then
    /// the tasks appended to their connector's entry (duplicates kept).
    ///
    /// ```
    /// use connect_distributed::protocol::{ConnectorAssignment, TaskId};
    ///
    /// let entries = ConnectorAssignment::group(
    ///     ["b", "a"],
    ///     [TaskId::new("a", 0), TaskId::new("c", 1)],
    /// );
    /// let flat: Vec<_> = entries.iter().map(|e| (e.connector.as_str(), e.tasks.clone())).collect();
    /// assert_eq!(flat, [("b", vec![-1]), ("a", vec![-1, 0]), ("c", vec![1])]);
    /// ```
    pub fn group<C, T>(connectors: C, tasks: T) -> Vec<ConnectorAssignment>
    where
        C: IntoIterator,
        C::Item: AsRef<str>,
        T: IntoIterator,
        T::Item: std::borrow::Borrow<TaskId>,
    {
        use std::borrow::Borrow;
        let mut entries: indexmap::IndexMap<String, Vec<i32>> = indexmap::IndexMap::new();
        for c in connectors {
            let c = c.as_ref();
            if !entries.contains_key(c) {
                entries.insert(c.to_owned(), vec![CONNECTOR_TASK]);
            }
        }
        for t in tasks {
            let t: &TaskId = t.borrow();
            entries
                .entry(t.connector.clone())
                .or_default()
                .push(wire_task(t.task));
        }
        entries
            .into_iter()
            .map(|(connector, tasks)| ConnectorAssignment { connector, tasks })
            .collect()
    }
}

/// The connectors (one per -1 occurrence) in wire entries.
fn connectors_of(entries: &[ConnectorAssignment]) -> Vec<&str> {
    entries
        .iter()
        .flat_map(|e| {
            e.tasks
                .iter()
                .filter(|&&t| t == CONNECTOR_TASK)
                .map(move |_| e.connector.as_str())
        })
        .collect()
}

/// The tasks (every id but -1) in wire entries. Another negative number
/// names no task (Java never writes one): it is skipped.
fn tasks_of(entries: &[ConnectorAssignment]) -> Vec<TaskId> {
    entries
        .iter()
        .flat_map(|e| {
            e.tasks
                .iter()
                .filter_map(|&t| task_number(t))
                .map(move |t| TaskId::new(e.connector.clone(), t))
        })
        .collect()
}

/// What the leader sends one member in SyncGroup (Java's
/// `ConnectProtocol.Assignment` for v0, `ExtendedAssignment` for v1 and v2),
/// and, from v1, what a worker reports as its current assignment inside its
/// metadata.
///
/// The lists keep their wire order, so decoding and encoding again gives the
/// same bytes.
///
/// ```
/// use connect_distributed::protocol::{Assignment, ConnectorAssignment, TaskId, NO_ERROR};
///
/// let assignment = Assignment {
///     version: 2,
///     error: NO_ERROR,
///     leader: "worker-1".into(),
///     leader_url: "http://10.0.0.1:8083/".into(),
///     config_offset: 42,
///     assigned: ConnectorAssignment::group(["jdbc"], [TaskId::new("jdbc", 0)]),
///     revoked: ConnectorAssignment::group(["s3"], Vec::<TaskId>::new()),
///     delay: 0,
/// };
/// let bytes = assignment.encode()?;
/// assert_eq!(Assignment::decode(&bytes)?, assignment);
/// assert_eq!(assignment.connectors(), ["jdbc"]);
/// assert_eq!(assignment.revoked_connectors(), ["s3"]);
/// # Ok::<(), connect_distributed::protocol::ProtocolError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Assignment {
    /// Protocol version in the header: 0, 1 or 2 (the elected sub-protocol's).
    pub version: i16,
    /// [`NO_ERROR`] or [`CONFIG_MISMATCH`].
    pub error: i16,
    /// The leader's member id.
    pub leader: String,
    /// The leader's REST URL.
    pub leader_url: String,
    /// The config topic offset the assignment was computed at.
    pub config_offset: i64,
    /// Connectors and tasks to run (v1+: newly assigned ones only).
    pub assigned: Vec<ConnectorAssignment>,
    /// Connectors and tasks to stop (v1+; empty in v0).
    pub revoked: Vec<ConnectorAssignment>,
    /// Milliseconds after which the member should rejoin (v1+; 0 in v0).
    pub delay: i32,
}

impl Assignment {
    /// Whether the assignment carries an error (Java's `failed()`).
    pub fn failed(&self) -> bool {
        self.error != NO_ERROR
    }

    /// The assigned connectors, in wire order.
    pub fn connectors(&self) -> Vec<&str> {
        connectors_of(&self.assigned)
    }

    /// The assigned tasks, in wire order.
    pub fn tasks(&self) -> Vec<TaskId> {
        tasks_of(&self.assigned)
    }

    /// The revoked connectors, in wire order.
    pub fn revoked_connectors(&self) -> Vec<&str> {
        connectors_of(&self.revoked)
    }

    /// The revoked tasks, in wire order.
    pub fn revoked_tasks(&self) -> Vec<TaskId> {
        tasks_of(&self.revoked)
    }

    /// The bytes Java would write for this assignment (given the same
    /// entry order).
    ///
    /// Version 0 writes no revoked list and no delay, so a version-0
    /// assignment with either set is an error, as is a negative version, a
    /// string longer than 32767 bytes or a list longer than `i32::MAX`.
    pub fn encode(&self) -> Result<Vec<u8>, ProtocolError> {
        let mut w = Writer::default();
        self.write(&mut w)?;
        Ok(w.buf)
    }

    fn write(&self, w: &mut Writer) -> Result<(), ProtocolError> {
        if self.version < 0 {
            return Err(ProtocolError::UnsupportedVersion {
                version: self.version,
                offset: 0,
            });
        }
        if self.version == CONNECT_PROTOCOL_V0 {
            if !self.revoked.is_empty() {
                return Err(ProtocolError::FieldNotInVersion {
                    field: "revoked",
                    version: self.version,
                });
            }
            if self.delay != 0 {
                return Err(ProtocolError::FieldNotInVersion {
                    field: "delay",
                    version: self.version,
                });
            }
        }
        w.i16(self.version);
        w.i16(self.error);
        w.string("leader", &self.leader)?;
        w.string("leader-url", &self.leader_url)?;
        w.i64(self.config_offset);
        w.entries("assignment", &self.assigned)?;
        if self.version >= CONNECT_PROTOCOL_V1 {
            w.entries("revoked", &self.revoked)?;
            w.i32(self.delay);
        }
        Ok(())
    }

    /// Reads an assignment as Java's `WorkerCoordinator` does, with the
    /// tolerant v1 layout whatever the version (see the module docs).
    pub fn decode(bytes: &[u8]) -> Result<Assignment, ProtocolError> {
        Assignment::read(&mut Reader::new(bytes, 0))
    }

    fn read(r: &mut Reader<'_>) -> Result<Assignment, ProtocolError> {
        let version = r.version()?;
        let error = r.i16("error")?;
        let leader = r.string("leader")?;
        let leader_url = r.string("leader-url")?;
        let config_offset = r.i64("config-offset")?;
        let assigned = if r.has_remaining() {
            r.entries("assignment")?
        } else {
            Vec::new()
        };
        let revoked = if r.has_remaining() {
            r.entries("revoked")?
        } else {
            Vec::new()
        };
        let delay = if r.has_remaining() {
            r.i32("delay")?
        } else {
            0
        };
        Ok(Assignment {
            version,
            error,
            leader,
            leader_url,
            config_offset,
            assigned,
            revoked,
            delay,
        })
    }
}

/// A worker's JoinGroup metadata for one sub-protocol (Java's
/// `WorkerState` for v0, `ExtendedWorkerState` for v1 and v2).
///
/// ```
/// use connect_distributed::protocol::{SubProtocol, WorkerMetadata};
///
/// let metadata = WorkerMetadata::new(SubProtocol::Sessioned, "http://10.0.0.2:8083/", 17, None);
/// let bytes = metadata.encode()?;
/// assert_eq!(&bytes[..2], &[0, 2]); // version 2
/// assert_eq!(WorkerMetadata::decode(&bytes)?, metadata);
/// # Ok::<(), connect_distributed::protocol::ProtocolError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct WorkerMetadata {
    /// Protocol version in the header: 0, 1 or 2.
    pub version: i16,
    /// The worker's REST URL (its advertised listener).
    pub url: String,
    /// The newest config topic offset the worker has read.
    pub config_offset: i64,
    /// v1+: the worker's current assignment, `None` when it has none (Java
    /// writes null for its empty assignment). Must be `None` in v0.
    pub assignment: Option<Assignment>,
}

impl WorkerMetadata {
    /// Metadata for one sub-protocol; for v1+ the embedded assignment's
    /// version is set to the sub-protocol's, as Java writes it. An
    /// assignment given for v0 is dropped (v0 cannot carry it).
    pub fn new(
        protocol: SubProtocol,
        url: impl Into<String>,
        config_offset: i64,
        assignment: Option<Assignment>,
    ) -> WorkerMetadata {
        let version = protocol.version();
        let assignment = if protocol.is_incremental() {
            assignment.map(|a| Assignment { version, ..a })
        } else {
            None
        };
        WorkerMetadata {
            version,
            url: url.into(),
            config_offset,
            assignment,
        }
    }

    /// The bytes Java would write for this metadata.
    ///
    /// Errors: a negative version, an assignment in v0, a string longer
    /// than 32767 bytes, or an embedded assignment that cannot be encoded.
    pub fn encode(&self) -> Result<Vec<u8>, ProtocolError> {
        if self.version < 0 {
            return Err(ProtocolError::UnsupportedVersion {
                version: self.version,
                offset: 0,
            });
        }
        let mut w = Writer::default();
        w.i16(self.version);
        w.string("url", &self.url)?;
        w.i64(self.config_offset);
        if self.version >= CONNECT_PROTOCOL_V1 {
            match &self.assignment {
                None => w.i32(-1),
                Some(a) => {
                    let mut inner = Writer::default();
                    a.write(&mut inner)?;
                    w.len("allocation", inner.buf.len())?;
                    w.buf.extend_from_slice(&inner.buf);
                }
            }
        } else if self.assignment.is_some() {
            return Err(ProtocolError::FieldNotInVersion {
                field: "allocation",
                version: self.version,
            });
        }
        Ok(w.buf)
    }

    /// Reads metadata: v0 with the v0 layout, v1 and up with the tolerant
    /// v1 layout (see the module docs).
    pub fn decode(bytes: &[u8]) -> Result<WorkerMetadata, ProtocolError> {
        let mut r = Reader::new(bytes, 0);
        let version = r.version()?;
        let url = r.string("url")?;
        let config_offset = r.i64("config-offset")?;
        let assignment = if version >= CONNECT_PROTOCOL_V1 && r.has_remaining() {
            match r.nullable_bytes("allocation")? {
                None => None,
                Some((slice, base)) => Some(Assignment::read(&mut Reader::new(slice, base))?),
            }
        } else {
            None
        };
        Ok(WorkerMetadata {
            version,
            url,
            config_offset,
            assignment,
        })
    }
}

/// The (name, metadata) pairs of a JoinGroup request for a worker in
/// `mode`, most preferred first (Java's `metadataRequest`): each offered
/// sub-protocol with metadata of its own version; `default` never carries
/// the assignment.
pub fn join_group_protocols(
    mode: SubProtocol,
    url: &str,
    config_offset: i64,
    assignment: Option<&Assignment>,
) -> Result<Vec<(&'static str, Vec<u8>)>, ProtocolError> {
    mode.offered()
        .iter()
        .map(|&p| {
            let bytes = WorkerMetadata::new(p, url, config_offset, assignment.cloned()).encode()?;
            Ok((p.name(), bytes))
        })
        .collect()
}

#[derive(Default)]
struct Writer {
    buf: Vec<u8>,
}

impl Writer {
    fn i16(&mut self, v: i16) {
        self.buf.extend_from_slice(&v.to_be_bytes());
    }

    fn i32(&mut self, v: i32) {
        self.buf.extend_from_slice(&v.to_be_bytes());
    }

    fn i64(&mut self, v: i64) {
        self.buf.extend_from_slice(&v.to_be_bytes());
    }

    /// An int32 length or count prefix.
    fn len(&mut self, field: &'static str, n: usize) -> Result<(), ProtocolError> {
        let n = i32::try_from(n).map_err(|_| ProtocolError::TooLong {
            field,
            length: n,
            max: MAX_ARRAY_LEN,
        })?;
        self.i32(n);
        Ok(())
    }

    fn string(&mut self, field: &'static str, s: &str) -> Result<(), ProtocolError> {
        let n = i16::try_from(s.len()).map_err(|_| ProtocolError::TooLong {
            field,
            length: s.len(),
            max: MAX_STRING_LEN,
        })?;
        self.i16(n);
        self.buf.extend_from_slice(s.as_bytes());
        Ok(())
    }

    fn entries(
        &mut self,
        field: &'static str,
        entries: &[ConnectorAssignment],
    ) -> Result<(), ProtocolError> {
        self.len(field, entries.len())?;
        for e in entries {
            self.string("connector", &e.connector)?;
            self.len("tasks", e.tasks.len())?;
            for &t in &e.tasks {
                self.i32(t);
            }
        }
        Ok(())
    }
}

/// A bounds-checked cursor; `base` is the absolute offset of `buf[0]`.
struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    base: usize,
}

impl<'a> Reader<'a> {
    fn new(buf: &'a [u8], base: usize) -> Self {
        Reader { buf, pos: 0, base }
    }

    fn offset(&self) -> usize {
        self.base + self.pos
    }

    fn remaining(&self) -> usize {
        self.buf.len().saturating_sub(self.pos)
    }

    fn has_remaining(&self) -> bool {
        self.remaining() > 0
    }

    fn take(&mut self, field: &'static str, n: usize) -> Result<&'a [u8], ProtocolError> {
        let start = self.pos;
        match start
            .checked_add(n)
            .and_then(|end| self.buf.get(start..end))
        {
            Some(slice) => {
                self.pos = start + n;
                Ok(slice)
            }
            None => Err(ProtocolError::Truncated {
                field,
                offset: self.offset(),
                needed: n,
                remaining: self.remaining(),
            }),
        }
    }

    fn array<const N: usize>(&mut self, field: &'static str) -> Result<[u8; N], ProtocolError> {
        let slice = self.take(field, N)?;
        let mut out = [0u8; N];
        out.copy_from_slice(slice);
        Ok(out)
    }

    fn i16(&mut self, field: &'static str) -> Result<i16, ProtocolError> {
        Ok(i16::from_be_bytes(self.array(field)?))
    }

    fn i32(&mut self, field: &'static str) -> Result<i32, ProtocolError> {
        Ok(i32::from_be_bytes(self.array(field)?))
    }

    fn i64(&mut self, field: &'static str) -> Result<i64, ProtocolError> {
        Ok(i64::from_be_bytes(self.array(field)?))
    }

    fn version(&mut self) -> Result<i16, ProtocolError> {
        let offset = self.offset();
        let version = self.i16("version")?;
        if version < CONNECT_PROTOCOL_V0 {
            return Err(ProtocolError::UnsupportedVersion { version, offset });
        }
        Ok(version)
    }

    fn string(&mut self, field: &'static str) -> Result<String, ProtocolError> {
        let prefix_at = self.offset();
        let len = self.i16(field)?;
        let len = usize::try_from(len).map_err(|_| ProtocolError::NegativeLength {
            field,
            offset: prefix_at,
            length: i32::from(len),
        })?;
        let at = self.offset();
        let bytes = self.take(field, len)?;
        std::str::from_utf8(bytes)
            .map(str::to_owned)
            .map_err(|_| ProtocolError::InvalidUtf8 { field, offset: at })
    }

    /// An int32 count or length; `None` for a negative value when
    /// `nullable`, an error otherwise. A count larger than the bytes left
    /// is refused before anything is allocated (as Java does).
    fn count(
        &mut self,
        field: &'static str,
        nullable: bool,
    ) -> Result<Option<usize>, ProtocolError> {
        let prefix_at = self.offset();
        let n = self.i32(field)?;
        if n < 0 {
            return if nullable {
                Ok(None)
            } else {
                Err(ProtocolError::NegativeLength {
                    field,
                    offset: prefix_at,
                    length: n,
                })
            };
        }
        let n = usize::try_from(n).map_err(|_| ProtocolError::NegativeLength {
            field,
            offset: prefix_at,
            length: n,
        })?;
        if n > self.remaining() {
            return Err(ProtocolError::Truncated {
                field,
                offset: self.offset(),
                needed: n,
                remaining: self.remaining(),
            });
        }
        Ok(Some(n))
    }

    fn nullable_bytes(
        &mut self,
        field: &'static str,
    ) -> Result<Option<(&'a [u8], usize)>, ProtocolError> {
        match self.count(field, true)? {
            None => Ok(None),
            Some(n) => {
                let at = self.offset();
                Ok(Some((self.take(field, n)?, at)))
            }
        }
    }

    /// A nullable array of connector entries; null reads as empty.
    fn entries(&mut self, field: &'static str) -> Result<Vec<ConnectorAssignment>, ProtocolError> {
        let Some(n) = self.count(field, true)? else {
            return Ok(Vec::new());
        };
        let mut entries = Vec::with_capacity(n);
        for _ in 0..n {
            let connector = self.string("connector")?;
            let Some(m) = self.count("tasks", false)? else {
                return Ok(entries); // unreachable: not nullable
            };
            let mut tasks = Vec::with_capacity(m);
            for _ in 0..m {
                tasks.push(self.i32("tasks")?);
            }
            entries.push(ConnectorAssignment { connector, tasks });
        }
        Ok(entries)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(version: i16) -> Assignment {
        Assignment {
            version,
            error: NO_ERROR,
            leader: "leader".into(),
            leader_url: "http://l:8083/".into(),
            config_offset: 7,
            assigned: ConnectorAssignment::group(["a"], [TaskId::new("a", 0)]),
            revoked: Vec::new(),
            delay: 0,
        }
    }

    #[test]
    fn v0_assignment_layout() {
        let bytes = sample(0).encode().unwrap();
        let mut expected = vec![0, 0, 0, 0];
        expected.extend_from_slice(&[0, 6]);
        expected.extend_from_slice(b"leader");
        expected.extend_from_slice(&[0, 14]);
        expected.extend_from_slice(b"http://l:8083/");
        expected.extend_from_slice(&7i64.to_be_bytes());
        expected.extend_from_slice(&1i32.to_be_bytes());
        expected.extend_from_slice(&[0, 1, b'a']);
        expected.extend_from_slice(&2i32.to_be_bytes());
        expected.extend_from_slice(&(-1i32).to_be_bytes());
        expected.extend_from_slice(&0i32.to_be_bytes());
        assert_eq!(bytes, expected);
        assert_eq!(Assignment::decode(&bytes).unwrap(), sample(0));
    }

    #[test]
    fn v0_refuses_v1_fields() {
        let mut a = sample(0);
        a.delay = 5;
        assert_eq!(
            a.encode(),
            Err(ProtocolError::FieldNotInVersion {
                field: "delay",
                version: 0
            })
        );
    }

    #[test]
    fn truncation_names_field_and_offset() {
        let bytes = sample(1).encode().unwrap();
        // Cut inside the leader url string: 2 (version) + 2 (error) + 8 (leader) + 2 (prefix) + 3.
        let err = Assignment::decode(&bytes[..17]).unwrap_err();
        assert_eq!(
            err,
            ProtocolError::Truncated {
                field: "leader-url",
                offset: 14,
                needed: 14,
                remaining: 3
            }
        );
        assert!(err.to_string().contains("leader-url"));
    }

    #[test]
    fn negative_version_is_refused() {
        assert_eq!(
            WorkerMetadata::decode(&[0xff, 0xff]),
            Err(ProtocolError::UnsupportedVersion {
                version: -1,
                offset: 0
            })
        );
    }

    #[test]
    fn missing_v1_tail_fields_take_defaults() {
        let full = sample(1).encode().unwrap();
        // Drop revoked and delay (4 + 4 bytes): still an assignment.
        let cut = &full[..full.len() - 8];
        let a = Assignment::decode(cut).unwrap();
        assert_eq!(a, sample(1));
        // Metadata v1 without the allocation field.
        let mut m = WorkerMetadata::new(SubProtocol::Compatible, "u", 3, None)
            .encode()
            .unwrap();
        m.truncate(m.len() - 4);
        assert_eq!(
            WorkerMetadata::decode(&m).unwrap(),
            WorkerMetadata::new(SubProtocol::Compatible, "u", 3, None)
        );
    }

    #[test]
    fn nested_errors_use_absolute_offsets() {
        let a = sample(2);
        let m = WorkerMetadata::new(SubProtocol::Sessioned, "u", 3, Some(a));
        let mut bytes = m.encode().unwrap();
        // Break the nested leader string length: header 2 + url 3 + offset 8 + len 4
        // = 17 is the start of the nested assignment; its leader prefix is at 17 + 4.
        bytes[21] = 0xff;
        bytes[22] = 0xff;
        assert_eq!(
            WorkerMetadata::decode(&bytes),
            Err(ProtocolError::NegativeLength {
                field: "leader",
                offset: 21,
                length: -1
            })
        );
    }

    #[test]
    fn protocol_names() {
        for p in PREFERENCE {
            assert_eq!(SubProtocol::from_name(p.name()), Some(p));
            assert_eq!(SubProtocol::from_version(p.version()), Some(p));
            assert_eq!(SubProtocol::from_config_value(p.config_value()), Some(p));
        }
        assert_eq!(
            SubProtocol::from_name("SESSIONED"),
            Some(SubProtocol::Sessioned)
        );
        assert_eq!(SubProtocol::from_name("eager"), None);
        let protocols = join_group_protocols(SubProtocol::Compatible, "u", 1, None).unwrap();
        let names: Vec<_> = protocols.iter().map(|(n, _)| *n).collect();
        assert_eq!(names, ["compatible", "default"]);
    }
}
