//! Connector and task states, as the REST API reports them.

use std::fmt;

/// The state of a connector or a task (Kafka's `AbstractStatus.State`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum State {
    /// Not running anywhere yet.
    Unassigned,
    /// Running.
    Running,
    /// Paused: assigned but idle.
    Paused,
    /// Stopped: connector keeps its config, tasks are shut down.
    Stopped,
    /// Failed; the trace says why.
    Failed,
    /// Being restarted.
    Restarting,
}

impl State {
    /// Kafka's upper-case name.
    pub fn name(self) -> &'static str {
        match self {
            State::Unassigned => "UNASSIGNED",
            State::Running => "RUNNING",
            State::Paused => "PAUSED",
            State::Stopped => "STOPPED",
            State::Failed => "FAILED",
            State::Restarting => "RESTARTING",
        }
    }
}

impl fmt::Display for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What the user asked a connector and its tasks to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum TargetState {
    /// Running.
    #[default]
    Started,
    /// Paused: tasks stay assigned but do not poll or put.
    Paused,
    /// Stopped: tasks are shut down (KIP-875).
    Stopped,
}

/// A task's id: connector name and task number.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TaskId {
    /// Connector name.
    pub connector: String,
    /// Task number, from 0.
    pub task: u32,
}

impl fmt::Display for TaskId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.connector, self.task)
    }
}

/// Receives state changes of tasks.
pub trait StatusListener: Send + Sync {
    /// Task `id` entered `state` (`trace` explains a failure).
    fn task_state(&self, id: &TaskId, state: State, trace: Option<String>);
}
