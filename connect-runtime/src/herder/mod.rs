//! The herder seam: what the REST API and the command line ask of a
//! worker, whatever keeps its connectors.
//!
//! A herder creates, reconfigures, pauses, stops, restarts and deletes
//! connectors, reports their status and task configs, and administers
//! their offsets; it decides what runs and tells the
//! [`Worker`](crate::worker::Worker) (the unit runner) to start and stop
//! connector instances and tasks. [`StandaloneHerder`] keeps everything in
//! this process. The distributed herder (`connect-distributed`: group
//! membership, configs and statuses in Kafka topics, requests forwarded to
//! the leader) implements the same trait, so the REST layer does not change
//! with the mode.
//!
//! ```no_run
//! # async fn demo(herder: connect_runtime::herder::StandaloneHerder) -> connect_api::Result<()> {
//! use std::sync::Arc;
//! use connect_runtime::herder::Herder;
//!
//! let herder: Arc<dyn Herder> = Arc::new(herder);
//! for name in herder.connector_names().await {
//!     println!("{name}: {}", herder.connector_status(&name).await?.connector.state);
//! }
//! # Ok(()) }
//! ```

use async_trait::async_trait;
use connect_api::config::{ConfigMap, ConfigReport};
use connect_api::Result;
use std::net::SocketAddr;

use crate::status::TargetState;
use crate::worker::offset_admin::{ConnectorOffsets, OffsetChange};
use crate::worker::{ConnectorInfo, ConnectorStatus, Plugins, TaskStateInfo, WorkerConfig};

mod auto_restart;
mod standalone;
mod validation;

pub use auto_restart::run as run_auto_restarts;
pub use auto_restart::{auto_restart_connector_def, auto_restart_worker_def, RestartPolicy};
pub use standalone::StandaloneHerder;
pub use validation::{
    check_connector_config, unknown_connector_keys, validate_connector_config, ExactlyOnceSource,
    UnknownKey, WorkerRules, CONNECTOR_PASS_THROUGH_PREFIXES,
};

/// What the REST API and the CLI need from a worker (Kafka's `Herder`).
///
/// Errors carry the [`ErrorKind`](connect_api::ErrorKind) the REST layer
/// maps to a status code: not found (404), conflict (409), bad request
/// (400).
#[async_trait]
pub trait Herder: Send + Sync + 'static {
    /// This worker's id, as shown in statuses (`host:port`).
    fn worker_id(&self) -> &str;

    /// The worker's configuration.
    fn config(&self) -> &WorkerConfig;

    /// The connectors, transforms, predicates and converters it can run.
    fn plugins(&self) -> &Plugins;

    /// Tell the herder the address its REST listener got (a `:0` port
    /// becomes the bound one in the worker id).
    fn set_listener_address(&self, addr: SocketAddr);

    /// The Kafka cluster's id, `None` while it cannot be reached.
    async fn kafka_cluster_id(&self) -> Option<String>;

    /// Who takes the writes that only a group leader may make (connector
    /// configs, deletes, stop, restarts, offset changes): this worker
    /// ([`RequestOwner::Here`], always for a standalone worker), the
    /// leader at a URL (the REST layer forwards the request there, as
    /// Kafka's does), or nobody while no leader is known (409).
    fn leader_writes(&self) -> RequestOwner {
        RequestOwner::Here
    }

    /// The metrics of this worker, its connectors and tasks, when it keeps
    /// them (`GET /metrics` renders them).
    fn metrics(&self) -> Option<&crate::metrics::WorkerMetrics> {
        None
    }

    /// Validate a connector config: the connector class and one report per
    /// key. An unknown `connector.class` is an error; bad values are not.
    fn validate(&self, config: &ConfigMap) -> Result<(String, Vec<ConfigReport>)>;

    /// The connectors' names.
    async fn connector_names(&self) -> Vec<String>;

    /// Create connector `name` in state `initial`; a conflict if it exists.
    async fn create_connector(
        &self,
        name: &str,
        config: ConfigMap,
        initial: TargetState,
    ) -> Result<ConnectorInfo>;

    /// Create or replace the config of `name`; `true` when it was created.
    async fn put_connector_config(
        &self,
        name: &str,
        config: ConfigMap,
    ) -> Result<(ConnectorInfo, bool)>;

    /// Stop and forget `name`.
    async fn delete_connector(&self, name: &str) -> Result<()>;

    /// The config and tasks of `name`.
    async fn connector_info(&self, name: &str) -> Result<ConnectorInfo>;

    /// The task configs of `name`.
    async fn task_configs(&self, name: &str) -> Result<Vec<ConfigMap>>;

    /// The states of `name` and its tasks.
    async fn connector_status(&self, name: &str) -> Result<ConnectorStatus>;

    /// The state of task `task` of `name`.
    async fn task_status(&self, name: &str, task: u32) -> Result<TaskStateInfo>;

    /// Pause `name` and its tasks (they keep their resources).
    async fn pause(&self, name: &str) -> Result<()>;

    /// Resume a paused or stopped `name`.
    async fn resume(&self, name: &str) -> Result<()>;

    /// Stop `name` (KIP-875): tasks shut down, config kept.
    async fn stop(&self, name: &str) -> Result<()>;

    /// Restart `name`, and its tasks with `include_tasks` (only the failed
    /// ones with `only_failed`), as `POST /connectors/{name}/restart`.
    async fn restart_connector(
        &self,
        name: &str,
        include_tasks: bool,
        only_failed: bool,
    ) -> Result<ConnectorStatus>;

    /// Restart one task.
    async fn restart_task(&self, name: &str, task: u32) -> Result<()>;

    /// Restart one task that another worker forwarded here (Kafka's
    /// `forward=false`): only where it runs, never forwarded again, so a
    /// request cannot bounce between workers. The default restarts it as
    /// [`Herder::restart_task`] does (a single-worker herder runs
    /// everything).
    async fn restart_task_here(&self, name: &str, task: u32) -> Result<()> {
        self.restart_task(name, task).await
    }

    /// The topics `name` used (KIP-558), sorted.
    async fn connector_topics(&self, name: &str) -> Result<Vec<String>>;

    /// Forget the topics `name` used (KIP-558).
    async fn reset_connector_topics(&self, name: &str) -> Result<()>;

    /// The offsets of `name` (`GET /connectors/{name}/offsets`).
    async fn connector_offsets(&self, name: &str) -> Result<ConnectorOffsets>;

    /// Alter the offsets of the stopped connector `name`; Kafka's message.
    async fn alter_connector_offsets(
        &self,
        name: &str,
        changes: Vec<OffsetChange>,
    ) -> Result<String>;

    /// Reset every offset of the stopped connector `name`; Kafka's message.
    async fn reset_connector_offsets(&self, name: &str) -> Result<String>;

    /// The internal request `POST /connectors/{name}/tasks`: a connector's
    /// owner hands its new task configs (`body`, a JSON array of string
    /// maps) to the group leader, signed as KIP-507 says (`signature`: the
    /// `X-Connect-Request-Signature-Algorithm` and
    /// `X-Connect-Authorization` headers). `forward` is the request's
    /// `forward` query parameter: a worker that does not lead sends the
    /// request on to the leader unless it is `false` (Kafka's bound on
    /// hops). Only a distributed herder takes them; a standalone worker
    /// answers 404.
    async fn accept_task_configs(
        &self,
        name: &str,
        body: &[u8],
        signature: Option<(&str, &str)>,
        forward: Option<bool>,
    ) -> std::result::Result<(), InternalRefusal> {
        let _ = (name, body, signature, forward);
        Err(InternalRefusal {
            status: 404,
            message: "Internal task config requests are only taken by distributed workers"
                .to_string(),
        })
    }

    /// The internal request `PUT /connectors/{name}/fence` (KIP-618): the
    /// group leader fences the transactional producers of the exactly-once
    /// source connector's earlier task generations and records its task
    /// count, signed and sent on as [`Herder::accept_task_configs`] (over
    /// `body`, empty). Only a distributed herder takes it; a standalone
    /// worker answers 404.
    async fn fence_zombies(
        &self,
        name: &str,
        body: &[u8],
        signature: Option<(&str, &str)>,
        forward: Option<bool>,
    ) -> std::result::Result<(), InternalRefusal> {
        let _ = (name, body, signature, forward);
        Err(InternalRefusal {
            status: 404,
            message: "Zombie fencing requests are only taken by distributed workers".to_string(),
        })
    }
}

/// How long a REST request waits for a rebalance under way to settle (a
/// leader to be known, the assignment to stop moving) before it is
/// answered with Kafka's 409. Java's herder queues such requests behind
/// the rebalance likewise; a rebalance normally takes a few seconds.
pub const REBALANCE_WAIT: std::time::Duration = std::time::Duration::from_secs(20);

/// Where a leader-only write goes ([`Herder::leader_writes`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RequestOwner {
    /// This worker takes it.
    Here,
    /// The leader at this REST base URL (`http://host:port/`) takes it.
    Leader(String),
    /// No leader is known now (a rebalance is under way): answer 409.
    Unknown,
}

/// Why a herder refused an internal request between workers: the HTTP
/// status to answer (400 unsigned, 403 badly signed, 409 not the leader or
/// no session key yet, 404 unknown connector) and Kafka's message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InternalRefusal {
    /// The HTTP status.
    pub status: u16,
    /// What was wrong.
    pub message: String,
}
