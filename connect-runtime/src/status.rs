//! Connector and task states, as the REST API reports them.

use std::fmt;

/// The state of a connector or a task (Kafka's `AbstractStatus.State`), in
/// both modes: the distributed status topic stores it by [`State::name`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum State {
    /// `UNASSIGNED`: not running anywhere yet.
    Unassigned,
    /// `RUNNING`.
    Running,
    /// `PAUSED`: assigned but idle.
    Paused,
    /// `FAILED`; the trace says why.
    Failed,
    /// `DESTROYED`: the connector was deleted (Java writes a tombstone
    /// instead; reads report it as UNASSIGNED).
    Destroyed,
    /// `RESTARTING`: being restarted.
    Restarting,
    /// `STOPPED`: the connector keeps its config, its tasks are shut down.
    Stopped,
}

impl State {
    /// Every state, in Java's declaration order.
    pub const ALL: [State; 7] = [
        State::Unassigned,
        State::Running,
        State::Paused,
        State::Failed,
        State::Destroyed,
        State::Restarting,
        State::Stopped,
    ];

    /// Java's enum name.
    pub fn name(self) -> &'static str {
        match self {
            State::Unassigned => "UNASSIGNED",
            State::Running => "RUNNING",
            State::Paused => "PAUSED",
            State::Failed => "FAILED",
            State::Destroyed => "DESTROYED",
            State::Restarting => "RESTARTING",
            State::Stopped => "STOPPED",
        }
    }

    /// Java's `valueOf`: the exact name.
    pub fn from_name(name: &str) -> Option<State> {
        State::ALL.into_iter().find(|s| s.name() == name)
    }
}

impl fmt::Display for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What the user asked a connector and its tasks to be (Kafka's
/// `TargetState`), in both modes: the distributed config topic stores it
/// by [`TargetState::name`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub enum TargetState {
    /// `STARTED`: running.
    #[default]
    Started,
    /// `PAUSED`: tasks stay assigned but do not poll or put.
    Paused,
    /// `STOPPED`: tasks are shut down, the connector has none (KIP-875).
    Stopped,
}

impl TargetState {
    /// Java's enum name.
    pub fn name(self) -> &'static str {
        match self {
            TargetState::Started => "STARTED",
            TargetState::Paused => "PAUSED",
            TargetState::Stopped => "STOPPED",
        }
    }

    /// Java's `TargetState.valueOf`: the exact name, case-sensitive.
    pub fn from_name(name: &str) -> Option<TargetState> {
        match name {
            "STARTED" => Some(TargetState::Started),
            "PAUSED" => Some(TargetState::Paused),
            "STOPPED" => Some(TargetState::Stopped),
            _ => None,
        }
    }
}

/// A task's id: connector name and task number (Java's `ConnectorTaskId`;
/// its `toString`, `<connector>-<task>`, is the `Display` form). Both modes
/// use this one type: the distributed wire formats carry the number as a
/// signed int and refuse a negative one where they read it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TaskId {
    /// Connector name.
    pub connector: String,
    /// Task number, from 0.
    pub task: u32,
}

impl TaskId {
    /// A task id.
    ///
    /// ```
    /// use connect_runtime::status::TaskId;
    ///
    /// let id = TaskId::new("jdbc", 3);
    /// assert_eq!(id.to_string(), "jdbc-3");
    /// ```
    pub fn new(connector: impl Into<String>, task: u32) -> Self {
        TaskId {
            connector: connector.into(),
            task,
        }
    }
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

    /// Task `id` wrote to or read from `topic` (KIP-558 active topics);
    /// called once per topic per task run, not per record.
    fn topic_active(&self, id: &TaskId, topic: &str) {
        let _ = (id, topic);
    }
}

/// Where connector and task states are kept: the seam Kafka calls
/// `StatusBackingStore`. Tasks write their states from their own threads
/// through [`StatusListener`]; the herder writes connector states and reads
/// both for the REST API. The standalone worker keeps them in a
/// [`MemoryStatusStore`]; the distributed herder keeps them in the status
/// topic.
///
/// ```
/// use connect_runtime::status::{MemoryStatusStore, State, StatusListener, StatusStore, TaskId};
///
/// let store = MemoryStatusStore::default();
/// let task = TaskId { connector: "files".into(), task: 0 };
/// store.put_connector("files", State::Running, None);
/// store.task_state(&task, State::Failed, Some("disk full".into()));
/// assert_eq!(store.task(&task), (State::Failed, Some("disk full".into())));
/// store.forget("files");
/// assert_eq!(store.connector("files").0, State::Unassigned);
/// ```
pub trait StatusStore: StatusListener {
    /// Connector `name` entered `state` (`trace` explains a failure).
    fn put_connector(&self, name: &str, state: State, trace: Option<String>);
    /// The state of connector `name`; UNASSIGNED when none was written.
    fn connector(&self, name: &str) -> (State, Option<String>);
    /// The state of task `id`; UNASSIGNED when none was written.
    fn task(&self, id: &TaskId) -> (State, Option<String>);
    /// Forget connector `name` and all its tasks (it was deleted).
    fn forget(&self, name: &str);
    /// The topics connector `name` used since it was created or its topics
    /// were last reset (`GET /connectors/{name}/topics`), sorted.
    fn topics(&self, name: &str) -> Vec<String>;
    /// Forget the topics connector `name` used (`PUT .../topics/reset`).
    fn reset_topics(&self, name: &str);
}

type States<K> = std::sync::Mutex<std::collections::HashMap<K, (State, Option<String>)>>;

/// A [`StatusStore`] in memory.
#[derive(Debug, Default)]
pub struct MemoryStatusStore {
    connectors: States<String>,
    tasks: States<TaskId>,
    topics: std::sync::Mutex<std::collections::HashMap<String, std::collections::BTreeSet<String>>>,
}

/// The map behind `lock`, also after a panic elsewhere poisoned it: every
/// write replaces a whole entry, so the map is never half-updated.
fn locked<K>(
    lock: &States<K>,
) -> std::sync::MutexGuard<'_, std::collections::HashMap<K, (State, Option<String>)>> {
    lock.lock().unwrap_or_else(|e| e.into_inner())
}

impl StatusListener for MemoryStatusStore {
    fn task_state(&self, id: &TaskId, state: State, trace: Option<String>) {
        locked(&self.tasks).insert(id.clone(), (state, trace));
    }
    fn topic_active(&self, id: &TaskId, topic: &str) {
        let mut topics = self.topics.lock().unwrap_or_else(|e| e.into_inner());
        topics
            .entry(id.connector.clone())
            .or_default()
            .insert(topic.to_string());
    }
}

impl StatusStore for MemoryStatusStore {
    fn put_connector(&self, name: &str, state: State, trace: Option<String>) {
        locked(&self.connectors).insert(name.to_string(), (state, trace));
    }
    fn connector(&self, name: &str) -> (State, Option<String>) {
        locked(&self.connectors)
            .get(name)
            .cloned()
            .unwrap_or((State::Unassigned, None))
    }
    fn task(&self, id: &TaskId) -> (State, Option<String>) {
        locked(&self.tasks)
            .get(id)
            .cloned()
            .unwrap_or((State::Unassigned, None))
    }
    fn forget(&self, name: &str) {
        locked(&self.connectors).remove(name);
        locked(&self.tasks).retain(|id, _| id.connector != name);
        self.reset_topics(name);
    }
    fn topics(&self, name: &str) -> Vec<String> {
        let topics = self.topics.lock().unwrap_or_else(|e| e.into_inner());
        topics
            .get(name)
            .map(|t| t.iter().cloned().collect())
            .unwrap_or_default()
    }
    fn reset_topics(&self, name: &str) {
        let mut topics = self.topics.lock().unwrap_or_else(|e| e.into_inner());
        topics.remove(name);
    }
}
