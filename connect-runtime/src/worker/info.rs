//! What the REST API shows of connectors and tasks: their configs and task
//! ids (`GET /connectors/{name}`) and their states
//! (`GET /connectors/{name}/status`). Both herders build these.

use connect_api::config::ConfigMap;
use serde::Serialize;

/// A connector's config and tasks, as `GET /connectors/{name}` shows them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConnectorInfo {
    /// Name.
    pub name: String,
    /// Config as given (secrets unresolved).
    pub config: ConfigMap,
    /// Task ids.
    pub tasks: Vec<TaskRef>,
    /// `source` or `sink`.
    #[serde(rename = "type")]
    pub kind: String,
}

/// A task id in REST form.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TaskRef {
    /// Connector name.
    pub connector: String,
    /// Task number.
    pub task: u32,
}

/// One state with its worker and failure trace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StateInfo {
    /// `RUNNING`, `FAILED`...
    pub state: String,
    /// The worker running it.
    pub worker_id: String,
    /// The connector plugin's version (KIP-891), as Kafka 4.x reports it
    /// with every state.
    pub version: String,
    /// Why it failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace: Option<String>,
}

/// A task's state, as in `GET /connectors/{name}/status`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TaskStateInfo {
    /// Task number.
    pub id: u32,
    /// State, worker and trace.
    #[serde(flatten)]
    pub state: StateInfo,
}

/// `GET /connectors/{name}/status`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ConnectorStatus {
    /// Name.
    pub name: String,
    /// The connector's state.
    pub connector: StateInfo,
    /// Its tasks' states.
    pub tasks: Vec<TaskStateInfo>,
    /// `source` or `sink`.
    #[serde(rename = "type")]
    pub kind: String,
}
