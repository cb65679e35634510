//! # connect-distributed: distributed mode's group protocol, Java-compatible
//!
//! Kafka Connect workers in distributed mode coordinate through a Kafka
//! group of protocol type `connect`: they join with metadata saying what
//! they run and how far they have read the config topic, and the leader
//! the broker picks tells each of them what to start and stop. To run Rust
//! workers in the same cluster as Java ones (Apache Kafka Connect 4.4), the
//! bytes and the leader's decisions must be Java's. This crate holds those
//! two pieces without I/O, clocks or a Kafka client, so that both can be
//! tested exhaustively, the group client that carries them, and the config
//! and status topics' stores (on connect-runtime's Kafka port):
//!
//! - [`protocol`]: the `default` (v0), `compatible` (v1) and `sessioned`
//!   (v2) sub-protocols: [`protocol::WorkerMetadata`] and
//!   [`protocol::Assignment`] with Java's exact encoding, and typed
//!   [`protocol::ProtocolError`]s for anything a peer may send;
//! - [`assignor`]: pure ports of Java's `IncrementalCooperativeAssignor`
//!   ([`assignor::assign`]) and, for the eager `default` sub-protocol, of
//!   its `EagerAssignor` ([`assignor::assign_eager`]);
//! - [`group`]: the group membership client: a [`group::GroupMember`]
//!   joins the `connect` group through Kafka's coordinator over its own
//!   TCP connections, heartbeats on its own task, and reports joins,
//!   rebalances and self-fencing as events;
//! - [`topics`]: the config and status topics' records with Java's exact
//!   bytes, and [`topics::config_state::ConfigState`], Java's replay of the
//!   config topic that the leader's snapshot comes from;
//! - [`stores`]: the config and status topics kept through
//!   `connect_runtime::kafka_log::KafkaLog`: [`stores::KafkaConfigLog`]
//!   and [`stores::KafkaStatusStore`].
//!
//! The herder builds on these (issue #15).
//!
//! ```
//! use connect_distributed::protocol::{join_group_protocols, SubProtocol, WorkerMetadata};
//!
//! // What a worker in the default `sessioned` mode offers in JoinGroup.
//! let offered = join_group_protocols(SubProtocol::Sessioned, "http://w1:8083/", 12, None)?;
//! let names: Vec<_> = offered.iter().map(|(name, _)| *name).collect();
//! assert_eq!(names, ["sessioned", "compatible", "default"]);
//! assert_eq!(WorkerMetadata::decode(&offered[2].1)?.version, 0);
//! # Ok::<(), connect_distributed::protocol::ProtocolError>(())
//! ```

pub mod assignor;
pub mod group;
pub mod herder;
pub mod protocol;
pub mod stores;
pub mod topics;
