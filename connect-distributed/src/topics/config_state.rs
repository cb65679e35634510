//! Java's replay of the config topic, as a pure state machine.
//!
//! Every worker reads the config topic from the start and applies each
//! record in order, exactly as `KafkaConfigBackingStore`'s consumer
//! callback does, so that all workers (Java or Rust) that read to the same
//! offset hold the same view: the one the leader's assignment is computed
//! from and that the assignment's config offset refers to. The rules:
//!
//! - `connector-<c>` sets the connector's config (and its target state to
//!   `STARTED` if it has none); its tombstone deletes the config, task
//!   count, task configs and pending task configs of the connector (not
//!   its target state: Java deletes that with its own tombstone, written
//!   alongside);
//! - `task-<c>-<n>` is held back per connector, invisible, until a
//!   `commit-<c>` arrives. If the commit's `N` tasks `0..N` are all held
//!   back, they become the connector's task configs, its task config
//!   generation grows by one and it is consistent again; if not (log
//!   compaction removed some), the connector is *inconsistent* and has no
//!   tasks until the next complete commit. Either way the held-back
//!   configs are dropped and the task count becomes `N`. A commit for a
//!   connector that has no config deletes what is left of it;
//! - `target-state-<c>` sets the target state; its tombstone resets it to
//!   `STARTED` if the connector still exists, or removes it;
//! - `session-key` replaces the session key; `tasks-fencing-<c>` records
//!   the fenced task count (and ends the connector's pending fencing,
//!   which each commit starts);
//! - restart requests and logger levels change no state: the caller acts
//!   on the returned record;
//! - every record advances the offset to its own offset + 1, even one
//!   that is skipped, except a value that is not JSON at all (Java returns
//!   before it updates the offset).

use std::collections::{BTreeMap, BTreeSet};

use super::config::{ConfigKey, ConfigRecord, Properties, SessionKey, TargetState};
use super::{json, RecordError};
use crate::assignor::ConfigSnapshot;
use crate::protocol::TaskId;

/// The config topic's state after replaying it up to [`ConfigState::offset`].
///
/// ```
/// use connect_distributed::topics::config::{ConfigRecord, Properties};
/// use connect_distributed::topics::config_state::ConfigState;
/// use connect_distributed::protocol::TaskId;
///
/// let props = |v: &str| Properties::from([("k".to_string(), Some(v.to_string()))]);
/// let mut state = ConfigState::new();
/// let records = [
///     ConfigRecord::Connector { connector: "c".into(), properties: props("conn") },
///     ConfigRecord::Task { id: TaskId::new("c", 0), properties: props("t0") },
///     ConfigRecord::Task { id: TaskId::new("c", 1), properties: props("t1") },
/// ];
/// for (offset, record) in records.iter().enumerate() {
///     state.apply_record(offset as i64, record);
/// }
/// // Not committed yet: the tasks are invisible.
/// assert!(state.tasks("c").is_empty());
///
/// state.apply_record(3, &ConfigRecord::TasksCommit { connector: "c".into(), tasks: 2 });
/// assert_eq!(state.tasks("c").len(), 2);
/// assert_eq!(state.task_config(&TaskId::new("c", 1)), Some(&props("t1")));
/// let snapshot = state.snapshot();
/// assert_eq!((snapshot.offset, snapshot.connectors["c"]), (4, 2));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ConfigState {
    offset: i64,
    session_key: Option<SessionKey>,
    connector_configs: BTreeMap<String, Properties>,
    connector_task_counts: BTreeMap<String, i32>,
    task_configs: BTreeMap<TaskId, Properties>,
    deferred: BTreeMap<String, BTreeMap<u32, Properties>>,
    inconsistent: BTreeSet<String>,
    target_states: BTreeMap<String, TargetState>,
    task_count_records: BTreeMap<String, i32>,
    task_config_generations: BTreeMap<String, i32>,
    applied_connector_configs: BTreeMap<String, Properties>,
    pending_fencing: BTreeSet<String>,
}

impl ConfigState {
    /// The state before the first record: offset -1, as in Java.
    pub fn new() -> ConfigState {
        ConfigState {
            offset: -1,
            ..ConfigState::default()
        }
    }

    /// Decodes and applies the record at `offset`. Returns the record so
    /// that the caller can act on restart requests and logger levels, or
    /// why it was skipped; a skipped record still advances the offset
    /// unless its value is not JSON.
    pub fn apply(
        &mut self,
        offset: i64,
        key: &[u8],
        value: Option<&[u8]>,
    ) -> Result<ConfigRecord, RecordError> {
        if let Some(bytes) = value {
            if let Err(e @ RecordError::InvalidJson { .. }) =
                json::parse(&String::from_utf8_lossy(key), bytes)
            {
                return Err(e);
            }
        }
        self.offset = offset.saturating_add(1);
        match ConfigRecord::decode(key, value) {
            Ok(record) => {
                self.apply_decoded(&record);
                Ok(record)
            }
            Err(e) => {
                // Java checks for the connector before it looks at a
                // commit's value.
                if let Ok(ConfigKey::TasksCommit(connector)) = ConfigKey::parse(key) {
                    if !self.connector_configs.contains_key(&connector) {
                        self.remove_connector(&connector);
                    }
                }
                Err(e)
            }
        }
    }

    /// Applies a decoded record read at `offset`.
    pub fn apply_record(&mut self, offset: i64, record: &ConfigRecord) {
        self.offset = offset.saturating_add(1);
        self.apply_decoded(record);
    }

    fn apply_decoded(&mut self, record: &ConfigRecord) {
        match record {
            ConfigRecord::Connector {
                connector,
                properties,
            } => {
                self.connector_configs
                    .insert(connector.clone(), properties.clone());
                self.target_states
                    .entry(connector.clone())
                    .or_insert(TargetState::Started);
            }
            ConfigRecord::Tombstone(ConfigKey::Connector(connector)) => {
                self.remove_connector(connector);
            }
            ConfigRecord::Task { id, properties } => {
                self.deferred
                    .entry(id.connector.clone())
                    .or_default()
                    .insert(id.task, properties.clone());
            }
            ConfigRecord::TasksCommit { connector, tasks } => self.commit(connector, *tasks),
            ConfigRecord::Tombstone(ConfigKey::TasksCommit(connector)) => {
                if !self.connector_configs.contains_key(connector) {
                    self.remove_connector(connector);
                }
            }
            ConfigRecord::TargetState { connector, state } => {
                self.target_states.insert(connector.clone(), *state);
            }
            ConfigRecord::Tombstone(ConfigKey::TargetState(connector)) => {
                self.target_states.remove(connector);
                if self.connector_configs.contains_key(connector) {
                    self.target_states
                        .insert(connector.clone(), TargetState::Started);
                }
            }
            ConfigRecord::SessionKey(key) => self.session_key = Some(key.clone()),
            ConfigRecord::TaskCount {
                connector,
                task_count,
            } => {
                self.task_count_records
                    .insert(connector.clone(), *task_count);
                self.pending_fencing.remove(connector);
            }
            // No state: the caller acts on these.
            ConfigRecord::RestartRequest { .. } | ConfigRecord::LoggerLevel { .. } => {}
            // Java ignores null task configs, session keys, restart
            // requests, task count records and logger levels.
            ConfigRecord::Tombstone(
                ConfigKey::Task(_)
                | ConfigKey::SessionKey
                | ConfigKey::RestartRequest(_)
                | ConfigKey::TaskCount(_)
                | ConfigKey::LoggerLevel(_),
            ) => {}
        }
    }

    fn commit(&mut self, connector: &str, tasks: i32) {
        let Some(applied) = self.connector_configs.get(connector) else {
            // Deleted earlier, and compaction removed its config.
            self.remove_connector(connector);
            return;
        };
        let deferred = self.deferred.get_mut(connector);
        let complete = match &deferred {
            None => tasks <= 0,
            Some(d) => {
                // Java: a set of at least `tasks` ids containing 0..tasks.
                (d.len() as i64) >= i64::from(tasks)
                    && (0..tasks.max(0).unsigned_abs()).all(|t| d.contains_key(&t))
            }
        };
        if !complete {
            self.inconsistent.insert(connector.to_owned());
        } else {
            if let Some(d) = &deferred {
                for (task, props) in d.iter() {
                    self.task_configs
                        .insert(TaskId::new(connector, *task), props.clone());
                }
                self.task_config_generations
                    .entry(connector.to_owned())
                    .and_modify(|g| *g = g.wrapping_add(1))
                    .or_insert(0);
            }
            self.inconsistent.remove(connector);
            self.applied_connector_configs
                .insert(connector.to_owned(), applied.clone());
        }
        if let Some(d) = deferred {
            d.clear();
        }
        self.connector_task_counts
            .insert(connector.to_owned(), tasks);
        self.pending_fencing.insert(connector.to_owned());
    }

    /// Java's `processConnectorRemoval`.
    fn remove_connector(&mut self, connector: &str) {
        self.connector_configs.remove(connector);
        self.connector_task_counts.remove(connector);
        self.task_configs.retain(|id, _| id.connector != connector);
        self.deferred.remove(connector);
        self.applied_connector_configs.remove(connector);
    }

    /// The offset after the last record applied (-1 before any).
    pub fn offset(&self) -> i64 {
        self.offset
    }

    /// The connectors that have a config, in name order.
    pub fn connectors(&self) -> impl Iterator<Item = &str> {
        self.connector_configs.keys().map(String::as_str)
    }

    /// A connector's config.
    pub fn connector_config(&self, connector: &str) -> Option<&Properties> {
        self.connector_configs.get(connector)
    }

    /// A connector's target state.
    pub fn target_state(&self, connector: &str) -> Option<TargetState> {
        self.target_states.get(connector).copied()
    }

    /// The task count of a connector's last commit, consistent or not.
    pub fn task_count(&self, connector: &str) -> Option<i32> {
        self.connector_task_counts.get(connector).copied()
    }

    /// Java's `ClusterConfigState.tasks`: tasks `0..N` of the last commit,
    /// none while the connector is inconsistent.
    pub fn tasks(&self, connector: &str) -> Vec<TaskId> {
        if self.inconsistent.contains(connector) {
            return Vec::new();
        }
        let n = self
            .task_count(connector)
            .unwrap_or(0)
            .max(0)
            .unsigned_abs();
        (0..n).map(|t| TaskId::new(connector, t)).collect()
    }

    /// A committed task config. Like Java, a config stays until its
    /// connector is deleted, even when a later commit has fewer tasks: use
    /// [`ConfigState::tasks`] for the current ones.
    pub fn task_config(&self, id: &TaskId) -> Option<&Properties> {
        self.task_configs.get(id)
    }

    /// Task configs read but not committed yet, by task number.
    pub fn pending_task_configs(&self, connector: &str) -> Option<&BTreeMap<u32, Properties>> {
        self.deferred.get(connector)
    }

    /// Whether the connector's last commit found task configs missing.
    pub fn is_inconsistent(&self, connector: &str) -> bool {
        self.inconsistent.contains(connector)
    }

    /// The inconsistent connectors.
    pub fn inconsistent(&self) -> impl Iterator<Item = &str> {
        self.inconsistent.iter().map(String::as_str)
    }

    /// The latest session key.
    pub fn session_key(&self) -> Option<&SessionKey> {
        self.session_key.as_ref()
    }

    /// The task count of the connector's last `tasks-fencing-` record.
    pub fn task_count_record(&self, connector: &str) -> Option<i32> {
        self.task_count_records.get(connector).copied()
    }

    /// How many complete commits with task configs the connector has had,
    /// minus one (Java's `connectorTaskConfigGenerations`).
    pub fn task_config_generation(&self, connector: &str) -> Option<i32> {
        self.task_config_generations.get(connector).copied()
    }

    /// The connector config in force at its last complete commit (Java's
    /// `appliedConnectorConfigs`).
    pub fn applied_connector_config(&self, connector: &str) -> Option<&Properties> {
        self.applied_connector_configs.get(connector)
    }

    /// Whether a commit arrived after the connector's last task count
    /// record (its zombies may need fencing).
    pub fn is_pending_fencing(&self, connector: &str) -> bool {
        self.pending_fencing.contains(connector)
    }

    /// What the leader's assignor needs: every connector with a config and
    /// its task count (0 while inconsistent, as Java's
    /// `ClusterConfigState.tasks` gives none), and the offset.
    pub fn snapshot(&self) -> ConfigSnapshot {
        ConfigSnapshot {
            offset: self.offset,
            connectors: self
                .connector_configs
                .keys()
                .map(|c| {
                    let n = u32::try_from(self.tasks(c).len()).unwrap_or(u32::MAX);
                    (c.clone(), n)
                })
                .collect(),
        }
    }
}
