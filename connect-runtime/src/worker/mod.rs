//! The worker: runs connectors and their tasks inside the caller's tokio
//! runtime, and answers what the REST API asks (configs, states, restarts).
//!
//! ```no_run
//! # async fn demo(cluster: std::sync::Arc<dyn connect_runtime::kafka::KafkaCluster>) -> connect_api::Result<()> {
//! use std::sync::Arc;
//! use connect_runtime::offsets::MemoryOffsetStore;
//! use connect_runtime::status::TargetState;
//! use connect_runtime::worker::{Plugins, Worker, WorkerConfig};
//!
//! let props = connect_api::ConfigMap::from([("key.converter", "JsonConverter"), ("value.converter", "JsonConverter")]);
//! let worker = Worker::new(WorkerConfig::parse(&props)?, Plugins::with_builtins(), cluster,
//!     Arc::new(MemoryOffsetStore::new()));
//! let config = connect_api::ConfigMap::from([("connector.class", "MySource"), ("tasks.max", "1")]);
//! worker.create_connector("my-source", config, TargetState::Started).await?;
//! println!("{:?}", worker.connector_status("my-source").await?);
//! worker.shutdown().await;
//! # Ok(()) }
//! ```

mod assigned;
mod config;
pub mod offset_admin;
mod plugins;
pub mod providers;
mod task_settings;

use task_settings::client_props;

use std::collections::BTreeMap;
use std::sync::Arc;

use connect_api::config::{ConfigMap, ConfigReport};
use connect_api::connector::{ConnectorContext, ConnectorType};
use connect_api::{ConnectError, ErrorKind, Result, SinkRecord, SourceRecord};
use connect_transforms::chain::TransformChain;
use serde::Serialize;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tracing::Instrument;

pub use config::{
    check_sink_topics, connector_base_def, invalid_config, sink_connector_def, sink_topics,
    source_connector_def, worker_config_def, WorkerConfig, DEPRECATED_WORKER_KEYS,
};
pub use plugins::{AnyConnector, ConnectorPlugin, Plugins};

use crate::config_store::{ConfigStore, MemoryConfigStore};
use crate::converters::TaskConverters;
use crate::kafka::{KafkaCluster, KafkaError};
use crate::metrics::{ConnectorMeta, Startup, TaskKind, WorkerMetrics};
use crate::offsets::OffsetStore;
use crate::sink::{SinkPlugins, SinkTaskSettings, WorkerSinkTask};
use crate::source::{SourcePlugins, SourceTaskSettings, WorkerSourceTask};
use crate::status::{MemoryStatusStore, State, StatusListener, StatusStore, TargetState, TaskId};

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

struct RunningTask {
    control: watch::Sender<TargetState>,
    handle: JoinHandle<Result<()>>,
}

struct Entry {
    config: ConfigMap,
    kind: ConnectorType,
    /// The plugin's `version()`, for statuses.
    version: String,
    target: TargetState,
    instance: Option<AnyConnector>,
    task_configs: Vec<ConfigMap>,
    tasks: BTreeMap<u32, RunningTask>,
}

struct Inner {
    worker_id: String,
    /// The REST listener's bound address, when the configured one asked for
    /// any free port (`:0`): the id reported from then on.
    bound_id: std::sync::OnceLock<String>,
    config: WorkerConfig,
    plugins: Plugins,
    cluster: Arc<dyn KafkaCluster>,
    offsets: Arc<dyn OffsetStore>,
    /// The record of what should run; `connectors` is the worker's view
    /// of it, written after the store.
    configs: Arc<dyn ConfigStore>,
    connectors: tokio::sync::Mutex<BTreeMap<String, Entry>>,
    status: Arc<dyn StatusStore>,
    metrics: WorkerMetrics,
    reconfigure: mpsc::UnboundedSender<String>,
    /// Where reconfiguration requests go instead, when a herder took them
    /// ([`Worker::route_reconfiguration`]).
    reconfigure_route: std::sync::OnceLock<mpsc::UnboundedSender<String>>,
    providers: providers::Providers,
    /// The Kafka cluster's id, once fetched.
    cluster_id: tokio::sync::OnceCell<String>,
}

impl Drop for Inner {
    /// The last handle went away without `shutdown`: tell every task to stop.
    /// Each one still flushes and commits on its own (if the runtime keeps
    /// running); call [`Worker::shutdown`] to wait for that.
    fn drop(&mut self) {
        for entry in self.connectors.get_mut().values() {
            for task in entry.tasks.values() {
                let _ = task.control.send(TargetState::Stopped);
            }
        }
    }
}

/// Runs connectors; cheap to clone (a handle). Dropping the last handle
/// stops the tasks gracefully in the background; [`Worker::shutdown`] waits
/// for them.
#[derive(Clone)]
pub struct Worker {
    inner: Arc<Inner>,
}

struct Context {
    name: String,
    status: Arc<dyn StatusStore>,
    reconfigure: mpsc::UnboundedSender<String>,
}

impl ConnectorContext for Context {
    fn request_task_reconfiguration(&self) {
        let _ = self.reconfigure.send(self.name.clone());
    }
    fn raise_error(&self, error: ConnectError) {
        tracing::error!(connector = %self.name, error = %error, "connector raised an error");
        self.status
            .put_connector(&self.name, State::Failed, Some(error.to_string()));
    }
}

impl Worker {
    /// A worker on `cluster`, storing source offsets in `offsets`, and
    /// configs and states in memory. Must be called inside a tokio runtime
    /// (it spawns its reconfiguration loop).
    pub fn new(
        config: WorkerConfig,
        plugins: Plugins,
        cluster: Arc<dyn KafkaCluster>,
        offsets: Arc<dyn OffsetStore>,
    ) -> Worker {
        Self::with_stores(
            config,
            plugins,
            cluster,
            offsets,
            Arc::new(MemoryConfigStore::new()),
            Arc::new(MemoryStatusStore::default()),
        )
    }

    /// A worker that keeps connector and task configs and target states in
    /// `configs`, and states in `statuses`. The connectors `configs`
    /// already holds start with [`Worker::start_stored`].
    pub fn with_stores(
        config: WorkerConfig,
        plugins: Plugins,
        cluster: Arc<dyn KafkaCluster>,
        offsets: Arc<dyn OffsetStore>,
        configs: Arc<dyn ConfigStore>,
        statuses: Arc<dyn StatusStore>,
    ) -> Worker {
        let (tx, mut rx) = mpsc::unbounded_channel::<String>();
        let worker_id = config
            .listeners()
            .first()
            .map(|l| l.trim_start_matches("http://").to_string())
            .unwrap_or_else(|| "embedded".to_string());
        let providers = providers::Providers::from_worker(config.originals());
        let worker = Worker {
            inner: Arc::new(Inner {
                providers,
                worker_id,
                bound_id: std::sync::OnceLock::new(),
                config,
                plugins,
                cluster,
                offsets,
                configs,
                connectors: tokio::sync::Mutex::new(BTreeMap::new()),
                metrics: WorkerMetrics::new(statuses.clone()),
                status: statuses,
                reconfigure: tx,
                reconfigure_route: std::sync::OnceLock::new(),
                cluster_id: tokio::sync::OnceCell::new(),
            }),
        };
        let weak = Arc::downgrade(&worker.inner);
        tokio::spawn(async move {
            while let Some(name) = rx.recv().await {
                let Some(inner) = weak.upgrade() else { break };
                if let Some(route) = inner.reconfigure_route.get() {
                    let _ = route.send(name);
                    continue;
                }
                let w = Worker { inner };
                if let Err(e) = w.reconfigure(&name).await {
                    tracing::error!(connector = %name, error = %e, "task reconfiguration failed");
                }
            }
        });
        worker
    }

    /// The worker id shown in statuses.
    pub fn worker_id(&self) -> &str {
        match self.inner.bound_id.get() {
            Some(id) => id,
            None => &self.inner.worker_id,
        }
    }

    /// Tell the worker the address its REST listener got: when the
    /// configured listener asked for a free port (`:0`), the id becomes the
    /// bound `host:port`, as Kafka's worker id names a reachable address.
    /// Only the first call counts.
    pub fn set_listener_address(&self, addr: std::net::SocketAddr) {
        if self.inner.worker_id.ends_with(":0") {
            let _ = self.inner.bound_id.set(addr.to_string());
        }
    }

    /// The Kafka cluster's id (`kafka_cluster_id` in `GET /`), asked of the
    /// cluster once and then remembered; `None` while the cluster cannot
    /// be reached or does not report one (asked again next time).
    pub async fn kafka_cluster_id(&self) -> Option<String> {
        let inner = &self.inner;
        let id = inner
            .cluster_id
            .get_or_try_init(|| async {
                let admin = inner.cluster.admin(&inner.config.admin_props())?;
                match admin.cluster_id(std::time::Duration::from_secs(5)).await? {
                    Some(id) => Ok(id),
                    None => Err(KafkaError::retriable("the cluster reported no id")),
                }
            })
            .await;
        match id {
            Ok(id) => Some(id.clone()),
            Err(e) => {
                tracing::debug!(error = %e, "cannot read the Kafka cluster id");
                None
            }
        }
    }

    /// The metrics of this worker, its connectors and tasks (`GET /metrics`).
    pub fn metrics(&self) -> &WorkerMetrics {
        &self.inner.metrics
    }

    /// The worker configuration.
    pub fn config(&self) -> &WorkerConfig {
        &self.inner.config
    }

    /// The plugins.
    pub fn plugins(&self) -> &Plugins {
        &self.inner.plugins
    }

    /// Validate a connector config: one report per key of the connector's
    /// full definition (common keys, kind keys, the plugin's own keys, and
    /// each transform's keys), plus cross-key rules. Never fails for bad
    /// values; an unknown `connector.class` is an error.
    pub fn validate(&self, config: &ConfigMap) -> Result<(String, Vec<ConfigReport>)> {
        let class = config
            .get("connector.class")
            .map(|s| s.trim())
            .unwrap_or("");
        if class.is_empty() {
            return Err(ConnectError::config(
                "connector.class",
                "Missing required configuration \"connector.class\" which has no default value.",
            ));
        }
        let plugin = self.inner.plugins.connector(class)?;
        let instance = plugin.create();
        let base = match plugin.kind {
            ConnectorType::Source => source_connector_def(),
            ConnectorType::Sink => sink_connector_def(),
        };
        let mut reports = base.validate(config);
        reports.extend(instance.as_connector_ref().validate(config));
        let chain_error = match plugin.kind {
            ConnectorType::Source => {
                TransformChain::<SourceRecord>::from_config(config, self.inner.plugins.transforms())
                    .err()
            }
            ConnectorType::Sink => {
                TransformChain::<SinkRecord>::from_config(config, self.inner.plugins.transforms())
                    .err()
            }
        };
        if let Some(e) = chain_error {
            let key = match e.kind() {
                ErrorKind::Config { key } => key.clone(),
                _ => "transforms".to_string(),
            };
            push_error(&mut reports, &key, e.to_string());
        }
        if plugin.kind == ConnectorType::Sink {
            if let Err((keys, msg)) = check_sink_topics(config) {
                for key in keys {
                    push_error(&mut reports, key, msg.clone());
                }
            }
        }
        Ok((plugin.class.clone(), reports))
    }

    /// Validate and return every error message (empty when valid).
    fn validation_errors(&self, config: &ConfigMap) -> Result<Vec<String>> {
        let (_, reports) = self.validate(config)?;
        Ok(reports
            .into_iter()
            .flat_map(|r| {
                r.errors
                    .into_iter()
                    .map(move |e| format!("{}: {e}", r.name))
            })
            .collect())
    }

    /// Create connector `name` and start it in `initial` state. Nothing is
    /// created when the config is invalid.
    pub async fn create_connector(
        &self,
        name: &str,
        mut config: ConfigMap,
        initial: TargetState,
    ) -> Result<ConnectorInfo> {
        config.insert("name".into(), name.to_string());
        // Validate what will run (provider references resolved); store what
        // was given, so REST shows references, never secrets.
        let errors = self.validation_errors(&self.resolved(&config)?)?;
        if !errors.is_empty() {
            return Err(invalid_config(&errors));
        }
        let mut map = self.inner.connectors.lock().await;
        if map.contains_key(name) {
            return Err(ConnectError::conflict(format!(
                "Connector {name} already exists"
            )));
        }
        let plugin = self.inner.plugins.connector(&config["connector.class"])?;
        self.inner
            .configs
            .put_connector_config(name, config.clone(), initial)
            .await?;
        let mut entry = Entry {
            config,
            kind: plugin.kind,
            version: plugin.create().as_connector_ref().version(),
            target: initial,
            instance: None,
            task_configs: Vec::new(),
            tasks: BTreeMap::new(),
        };
        self.start_connector(name, &mut entry).await;
        let info = self.info_of(name, &entry);
        map.insert(name.to_string(), entry);
        Ok(info)
    }

    /// Start every connector the config store holds that this worker does
    /// not run yet, each in its stored target state: how a worker picks up
    /// what its store says should run. Returns the names started; one whose
    /// class is unknown is not started and shows FAILED with the reason.
    pub async fn start_stored(&self) -> Vec<String> {
        let mut started = Vec::new();
        let mut map = self.inner.connectors.lock().await;
        for (name, stored) in self.inner.configs.snapshot() {
            if map.contains_key(&name) {
                continue;
            }
            let class = stored
                .config
                .get("connector.class")
                .map_or("", |c| c.trim());
            let (kind, version) = match self.inner.plugins.connector(class) {
                Ok(plugin) => (plugin.kind, plugin.create().as_connector_ref().version()),
                Err(e) => {
                    tracing::error!(connector = %name, error = %e, "cannot start a stored connector");
                    self.inner
                        .status
                        .put_connector(&name, State::Failed, Some(e.to_string()));
                    continue;
                }
            };
            let mut entry = Entry {
                config: stored.config,
                kind,
                version,
                target: stored.target,
                instance: None,
                task_configs: stored.task_configs,
                tasks: BTreeMap::new(),
            };
            self.start_connector(&name, &mut entry).await;
            map.insert(name.clone(), entry);
            started.push(name);
        }
        started
    }

    /// Replace the config of `name` (creating it if absent); returns the info
    /// and whether it was created.
    pub async fn put_connector_config(
        &self,
        name: &str,
        mut config: ConfigMap,
    ) -> Result<(ConnectorInfo, bool)> {
        config.insert("name".into(), name.to_string());
        let exists = self.inner.connectors.lock().await.contains_key(name);
        if !exists {
            return Ok((
                self.create_connector(name, config, TargetState::Started)
                    .await?,
                true,
            ));
        }
        let errors = self.validation_errors(&self.resolved(&config)?)?;
        if !errors.is_empty() {
            return Err(invalid_config(&errors));
        }
        let mut map = self.inner.connectors.lock().await;
        let entry = map.get_mut(name).ok_or_else(|| not_found(name))?;
        self.inner
            .configs
            .put_connector_config(name, config.clone(), entry.target)
            .await?;
        self.stop_connector(name, entry).await;
        entry.config = config;
        let plugin = self
            .inner
            .plugins
            .connector(&entry.config["connector.class"])?;
        entry.kind = plugin.kind;
        entry.version = plugin.create().as_connector_ref().version();
        self.start_connector(name, entry).await;
        Ok((self.info_of(name, entry), false))
    }

    /// Stop and remove `name`.
    pub async fn delete_connector(&self, name: &str) -> Result<()> {
        let mut map = self.inner.connectors.lock().await;
        if !map.contains_key(name) {
            return Err(not_found(name));
        }
        self.inner.configs.remove_connector(name).await?;
        let mut entry = map.remove(name).ok_or_else(|| not_found(name))?;
        self.stop_connector(name, &mut entry).await;
        self.inner.status.forget(name);
        self.inner.metrics.forget(name, None);
        Ok(())
    }

    /// Names of all connectors, sorted.
    pub async fn connector_names(&self) -> Vec<String> {
        self.inner.connectors.lock().await.keys().cloned().collect()
    }

    /// The topics `name` used since it was created or they were reset
    /// (KIP-558), sorted; an error when `topic.tracking.enable` is off.
    pub async fn connector_topics(&self, name: &str) -> Result<Vec<String>> {
        if !self.inner.connectors.lock().await.contains_key(name) {
            return Err(not_found(name));
        }
        self.tracked_topics(name)
    }

    /// Forget the topics `name` used (KIP-558); an error when
    /// `topic.tracking.enable` or `topic.tracking.allow.reset` is off.
    pub async fn reset_connector_topics(&self, name: &str) -> Result<()> {
        if !self.inner.connectors.lock().await.contains_key(name) {
            return Err(not_found(name));
        }
        self.reset_tracked_topics(name)
    }

    /// The topics connector `name` used, as the status store tracks them,
    /// wherever the connector is kept (the caller checked it exists).
    pub fn tracked_topics(&self, name: &str) -> Result<Vec<String>> {
        if !self.inner.config.topic_tracking().0 {
            return Err(ConnectError::config(
                "topic.tracking.enable",
                "Topic tracking is disabled.",
            ));
        }
        Ok(self.inner.status.topics(name))
    }

    /// Forget the topics connector `name` used (the caller checked it
    /// exists).
    pub fn reset_tracked_topics(&self, name: &str) -> Result<()> {
        match self.inner.config.topic_tracking() {
            (false, _) => Err(ConnectError::config(
                "topic.tracking.enable",
                "Topic tracking is disabled.",
            )),
            (true, false) => Err(ConnectError::config(
                "topic.tracking.allow.reset",
                "Topic tracking reset is disabled.",
            )),
            (true, true) => {
                self.inner.status.reset_topics(name);
                Ok(())
            }
        }
    }

    /// Config and tasks of `name`.
    pub async fn connector_info(&self, name: &str) -> Result<ConnectorInfo> {
        let map = self.inner.connectors.lock().await;
        let entry = map.get(name).ok_or_else(|| not_found(name))?;
        Ok(self.info_of(name, entry))
    }

    /// The task configs of `name`.
    pub async fn task_configs(&self, name: &str) -> Result<Vec<ConfigMap>> {
        let map = self.inner.connectors.lock().await;
        let entry = map.get(name).ok_or_else(|| not_found(name))?;
        Ok(entry.task_configs.clone())
    }

    /// States of `name` and its tasks.
    pub async fn connector_status(&self, name: &str) -> Result<ConnectorStatus> {
        let map = self.inner.connectors.lock().await;
        let entry = map.get(name).ok_or_else(|| not_found(name))?;
        Ok(self.status_of(name, entry))
    }

    /// State of one task.
    pub async fn task_status(&self, name: &str, task: u32) -> Result<TaskStateInfo> {
        let status = self.connector_status(name).await?;
        status
            .tasks
            .into_iter()
            .find(|t| t.id == task)
            .ok_or_else(|| ConnectError::not_found(format!("Task {name}-{task} not found")))
    }

    /// Pause `name`: tasks stay assigned but idle.
    pub async fn pause(&self, name: &str) -> Result<()> {
        self.set_target(name, TargetState::Paused).await
    }

    /// Resume a paused or stopped `name`.
    pub async fn resume(&self, name: &str) -> Result<()> {
        self.set_target(name, TargetState::Started).await
    }

    /// Stop `name` (KIP-875): tasks shut down, config kept.
    pub async fn stop(&self, name: &str) -> Result<()> {
        self.set_target(name, TargetState::Stopped).await
    }

    async fn set_target(&self, name: &str, target: TargetState) -> Result<()> {
        let mut map = self.inner.connectors.lock().await;
        let entry = map.get_mut(name).ok_or_else(|| not_found(name))?;
        self.inner.configs.put_target_state(name, target).await?;
        let previous = entry.target;
        entry.target = target;
        match (previous, target) {
            (TargetState::Stopped, TargetState::Stopped) => {}
            (_, TargetState::Stopped) => self.stop_connector(name, entry).await,
            (TargetState::Stopped, _) => self.start_connector(name, entry).await,
            (_, t) => {
                for task in entry.tasks.values() {
                    let _ = task.control.send(t);
                }
                let state = if t == TargetState::Paused {
                    State::Paused
                } else {
                    State::Running
                };
                if self.inner.status.connector(name).0 != State::Failed {
                    self.inner.status.put_connector(name, state, None);
                }
            }
        }
        Ok(())
    }

    /// Restart `name` (and its tasks when `include_tasks`; only failed ones
    /// when `only_failed`), as `POST /connectors/{name}/restart`.
    pub async fn restart_connector(
        &self,
        name: &str,
        include_tasks: bool,
        only_failed: bool,
    ) -> Result<ConnectorStatus> {
        let mut map = self.inner.connectors.lock().await;
        let entry = map.get_mut(name).ok_or_else(|| not_found(name))?;
        let connector_failed = self.inner.status.connector(name).0 == State::Failed;
        if !include_tasks {
            if !only_failed || connector_failed {
                self.restart_instance(name, entry).await;
            }
            return Ok(self.status_of(name, entry));
        }
        if entry.target == TargetState::Stopped {
            return Ok(self.status_of(name, entry));
        }
        let ids: Vec<u32> = (0..entry.task_configs.len() as u32)
            .filter(|&t| {
                !only_failed || self.inner.status.task(&task_id(name, t)).0 == State::Failed
            })
            .collect();
        if !only_failed || connector_failed {
            self.stop_connector(name, entry).await;
            self.start_connector(name, entry).await;
        } else {
            for t in ids {
                self.restart_one(name, entry, t).await?;
            }
        }
        Ok(self.status_of(name, entry))
    }

    /// Restart one task.
    pub async fn restart_task(&self, name: &str, task: u32) -> Result<()> {
        let mut map = self.inner.connectors.lock().await;
        let entry = map.get_mut(name).ok_or_else(|| not_found(name))?;
        if task as usize >= entry.task_configs.len() {
            return Err(ConnectError::not_found(format!(
                "Task {name}-{task} not found"
            )));
        }
        self.restart_one(name, entry, task).await
    }

    async fn restart_one(&self, name: &str, entry: &mut Entry, task: u32) -> Result<()> {
        if let Some(running) = entry.tasks.remove(&task) {
            self.stop_task(name, task, running).await;
        }
        self.inner
            .status
            .task_state(&task_id(name, task), State::Restarting, None);
        let running = self.start_task(name, entry, task)?;
        entry.tasks.insert(task, running);
        Ok(())
    }

    /// Stop every connector, flushing and committing within
    /// `task.shutdown.graceful.timeout.ms`.
    pub async fn shutdown(&self) {
        let mut map = self.inner.connectors.lock().await;
        // All connectors at once: each task has the same graceful timeout.
        let stops = map
            .iter_mut()
            .map(|(name, entry)| self.stop_connector(name, entry));
        futures::future::join_all(stops).await;
        map.clear();
    }

    /// Kill every task at once, without flushing or committing, as a crash
    /// (`kill -9`) would: for tests that prove recovery. Connectors and
    /// their configs stay registered; their tasks show FAILED.
    pub async fn abort(&self) {
        let mut map = self.inner.connectors.lock().await;
        for (name, entry) in map.iter_mut() {
            for (t, running) in std::mem::take(&mut entry.tasks) {
                running.handle.abort();
                let _ = running.handle.await;
                self.inner.status.task_state(
                    &task_id(name, t),
                    State::Failed,
                    Some("aborted (Worker::abort)".into()),
                );
            }
            entry.instance = None;
        }
    }

    /// Source offsets of `name` as stored (KIP-875 `GET .../offsets` for sources).
    pub fn source_offsets(
        &self,
        name: &str,
    ) -> Vec<(connect_api::SourceMap, connect_api::SourceMap)> {
        self.inner.offsets.connector_offsets(name)
    }

    /// The offset store.
    pub fn offset_store(&self) -> &Arc<dyn OffsetStore> {
        &self.inner.offsets
    }

    /// The Kafka cluster.
    pub fn cluster(&self) -> &Arc<dyn KafkaCluster> {
        &self.inner.cluster
    }

    /// Whether `name` exists and is STOPPED (KIP-875 precondition), and its kind.
    pub async fn stopped_kind(&self, name: &str) -> Result<(bool, ConnectorType, ConfigMap)> {
        let map = self.inner.connectors.lock().await;
        let entry = map.get(name).ok_or_else(|| not_found(name))?;
        Ok((
            entry.target == TargetState::Stopped,
            entry.kind,
            entry.config.clone(),
        ))
    }

    async fn reconfigure(&self, name: &str) -> Result<()> {
        let mut map = self.inner.connectors.lock().await;
        let Some(entry) = map.get_mut(name) else {
            return Ok(());
        };
        if entry.target == TargetState::Stopped {
            return Ok(());
        }
        let Some(instance) = entry.instance.as_mut() else {
            return Ok(());
        };
        let configs = ask_task_configs(&self.inner.plugins, &entry.config, instance).await?;
        if configs == entry.task_configs {
            return Ok(());
        }
        for (t, running) in std::mem::take(&mut entry.tasks) {
            self.stop_task(name, t, running).await;
        }
        if self.set_task_configs(name, entry, configs).await {
            self.start_tasks(name, entry);
        }
        Ok(())
    }

    fn info_of(&self, name: &str, entry: &Entry) -> ConnectorInfo {
        ConnectorInfo {
            name: name.to_string(),
            config: entry.config.clone(),
            tasks: (0..entry.task_configs.len() as u32)
                .map(|task| TaskRef {
                    connector: name.to_string(),
                    task,
                })
                .collect(),
            kind: entry.kind.as_str().to_string(),
        }
    }

    fn status_of(&self, name: &str, entry: &Entry) -> ConnectorStatus {
        let (state, trace) = self.inner.status.connector(name);
        ConnectorStatus {
            name: name.to_string(),
            connector: StateInfo {
                state: state.name().to_string(),
                worker_id: self.worker_id().to_string(),
                version: entry.version.clone(),
                trace,
            },
            // Every task the connector has, also those that failed to
            // start (they have no running handle).
            tasks: (0..entry.task_configs.len() as u32)
                .map(|t| {
                    let (state, trace) = self.inner.status.task(&task_id(name, t));
                    TaskStateInfo {
                        id: t,
                        state: StateInfo {
                            state: state.name().to_string(),
                            worker_id: self.worker_id().to_string(),
                            version: entry.version.clone(),
                            trace,
                        },
                    }
                })
                .collect(),
            kind: entry.kind.as_str().to_string(),
        }
    }

    /// Start the connector instance (unless STOPPED) and its tasks.
    async fn start_connector(&self, name: &str, entry: &mut Entry) {
        if entry.target == TargetState::Stopped {
            self.inner.status.put_connector(name, State::Stopped, None);
            self.set_task_configs(name, entry, Vec::new()).await;
            return;
        }
        match self.start_instance(name, entry).await {
            Some(configs) => {
                if self.set_task_configs(name, entry, configs).await {
                    self.start_tasks(name, entry);
                }
            }
            None => {
                self.set_task_configs(name, entry, Vec::new()).await;
            }
        }
    }

    /// Restart only the connector instance, as Kafka's connector restart
    /// does: its tasks keep running unless the restarted instance hands out
    /// different task configs.
    async fn restart_instance(&self, name: &str, entry: &mut Entry) {
        self.stop_instance(name, entry).await;
        if entry.target == TargetState::Stopped {
            return;
        }
        let Some(configs) = self.start_instance(name, entry).await else {
            return; // FAILED; the tasks keep what they run
        };
        if configs != entry.task_configs {
            let tasks = std::mem::take(&mut entry.tasks);
            self.stop_tasks(name, tasks).await;
            if self.set_task_configs(name, entry, configs).await {
                self.start_tasks(name, entry);
            }
        }
    }

    /// Store `configs` as the task configs of `name`, then take them as the
    /// worker's view. `false` (connector FAILED, view unchanged) when the
    /// store refused them: no task runs a config the store does not hold.
    async fn set_task_configs(
        &self,
        name: &str,
        entry: &mut Entry,
        configs: Vec<ConfigMap>,
    ) -> bool {
        if configs == entry.task_configs {
            return true;
        }
        match self
            .inner
            .configs
            .put_task_configs(name, configs.clone())
            .await
        {
            Ok(()) => {
                entry.task_configs = configs;
                true
            }
            Err(e) => {
                tracing::error!(connector = %name, error = %e, "cannot store task configs");
                self.inner.status.put_connector(
                    name,
                    State::Failed,
                    Some(format!("cannot store task configs: {e}")),
                );
                false
            }
        }
    }

    /// Create and start the connector instance and ask it for task configs;
    /// sets the connector's status. `None` when it failed.
    async fn start_instance(&self, name: &str, entry: &mut Entry) -> Option<Vec<ConfigMap>> {
        let status = &self.inner.status;
        let started = async {
            let plugin = self.inner.plugins.connector(&entry.config["connector.class"])?;
            let mut instance = plugin.create();
            let ctx = Arc::new(Context {
                name: name.to_string(),
                status: status.clone(),
                reconfigure: self.inner.reconfigure.clone(),
            });
            let resolved = self.resolved(&entry.config)?;
            instance.as_connector().start(&resolved, ctx).await?;
            let max = tasks_max(&entry.config);
            let configs = ask_task_configs(&self.inner.plugins, &entry.config, &mut instance).await?;
            if configs.len() > max && enforce_tasks_max(&entry.config) {
                return Err(ConnectError::other(format!(
                    "The connector {name} has generated {} tasks, which is greater than {max}, the maximum number of tasks it is configured to create. Set tasks.max.enforce=false to allow it.",
                    configs.len()
                )));
            }
            Ok::<_, ConnectError>((instance, configs))
        }
        .await;
        self.inner.metrics.connector(
            name,
            ConnectorMeta {
                class: self.plugin_class(&entry.config),
                kind: task_kind(entry.kind),
            },
        );
        self.inner
            .metrics
            .startup(Startup::Connector(started.is_ok()));
        match started {
            Ok((instance, configs)) => {
                entry.instance = Some(instance);
                let state = if entry.target == TargetState::Paused {
                    State::Paused
                } else {
                    State::Running
                };
                status.put_connector(name, state, None);
                Some(configs)
            }
            Err(e) => {
                tracing::error!(connector = %name, error = %e, "connector failed to start");
                status.put_connector(name, State::Failed, Some(e.to_string()));
                None
            }
        }
    }

    fn start_tasks(&self, name: &str, entry: &mut Entry) {
        for t in 0..entry.task_configs.len() as u32 {
            let started = self.start_task(name, entry, t);
            self.inner.metrics.startup(Startup::Task(started.is_ok()));
            match started {
                Ok(running) => {
                    entry.tasks.insert(t, running);
                }
                Err(e) => {
                    tracing::error!(connector = %name, task = t, error = %e, "task failed to start");
                    self.inner.status.task_state(
                        &task_id(name, t),
                        State::Failed,
                        Some(e.to_string()),
                    );
                }
            }
        }
    }

    /// The full class name of the connector `config` names (Kafka's
    /// `connector-class`), or the name as given when it is unknown.
    fn plugin_class(&self, config: &ConfigMap) -> String {
        let given = config.get("connector.class").map_or("", |c| c.trim());
        self.inner
            .plugins
            .connector(given)
            .map_or_else(|_| given.to_string(), |p| p.class.clone())
    }

    /// Resolve config provider references (`${env:X}`, `${file:/p:k}`) for
    /// running; the stored config (and so REST) keeps the references.
    fn resolved(&self, config: &ConfigMap) -> Result<ConfigMap> {
        providers::resolve(config, &self.inner.providers)
    }

    fn start_task(&self, name: &str, entry: &Entry, t: u32) -> Result<RunningTask> {
        let Some(connector) = entry.instance.as_ref() else {
            return Err(ConnectError::other(format!(
                "connector {name} is not running; cannot start task {t}"
            )));
        };
        let Some(task_config) = entry.task_configs.get(t as usize) else {
            return Err(ConnectError::not_found(format!(
                "Task {name}-{t} not found"
            )));
        };
        self.spawn_task(name, entry, t, connector, task_config)
    }

    /// Start task `t` of `name` with `task_config`, its task created by
    /// `connector` (which need not be started: a task only needs its
    /// class, as Kafka's `task.class`).
    fn spawn_task(
        &self,
        name: &str,
        entry: &Entry,
        t: u32,
        connector: &AnyConnector,
        task_config: &ConfigMap,
    ) -> Result<RunningTask> {
        let id = task_id(name, t);
        let inner = &self.inner;
        let connector_config = self.resolved(&entry.config)?;
        let task_config = self.resolved(task_config)?;
        let converters = TaskConverters::for_connector(
            inner.plugins.converters(),
            &connector_config,
            inner.config.originals(),
        )?;
        // Before the task runs, so its own RUNNING is never overwritten; a
        // restart keeps showing RESTARTING until then.
        if inner.status.task(&id).0 != State::Restarting {
            inner.status.task_state(&id, State::Unassigned, None);
        }
        let metrics = inner.metrics.task(&id, task_kind(entry.kind));
        let (control, rx) = watch::channel(entry.target);
        let status: Arc<dyn StatusListener> = inner.status.clone();
        let span = tracing::info_span!("task", connector = %name, task = t);
        let handle = match connector {
            AnyConnector::Source(c) => {
                let transforms =
                    TransformChain::from_config(&connector_config, inner.plugins.transforms())?;
                let mut settings =
                    SourceTaskSettings::from_configs(id.clone(), &connector_config, &inner.config)?;
                settings.metrics = metrics;
                let plugins = SourcePlugins {
                    task: c.create_task(),
                    task_config,
                    transforms: (!transforms.is_empty()).then_some(transforms),
                    converters,
                };
                let task = WorkerSourceTask::new(
                    settings,
                    plugins,
                    inner.cluster.clone(),
                    inner.offsets.clone(),
                    status,
                    rx,
                )?;
                tokio::spawn(task.run().instrument(span))
            }
            AnyConnector::Sink(c) => {
                let transforms =
                    TransformChain::from_config(&connector_config, inner.plugins.transforms())?;
                let mut settings =
                    SinkTaskSettings::from_configs(id.clone(), &connector_config, &inner.config)?;
                settings.metrics = metrics;
                let plugins = SinkPlugins {
                    task: c.create_task(),
                    task_config,
                    transforms: (!transforms.is_empty()).then_some(transforms),
                    converters,
                };
                let task =
                    WorkerSinkTask::new(settings, plugins, inner.cluster.clone(), status, rx)?;
                tokio::spawn(task.run().instrument(span))
            }
        };
        Ok(RunningTask { control, handle })
    }

    async fn stop_task(&self, name: &str, t: u32, running: RunningTask) {
        self.stop_tasks(name, [(t, running)]).await;
    }

    /// Tell every task to stop, then wait for them together: they flush
    /// and commit at the same time, within one
    /// `task.shutdown.graceful.timeout.ms`, rather than one after another.
    async fn stop_tasks(&self, name: &str, tasks: impl IntoIterator<Item = (u32, RunningTask)>) {
        let tasks: Vec<(u32, RunningTask)> = tasks.into_iter().collect();
        for (t, running) in &tasks {
            let _ = running.control.send(TargetState::Stopped);
            self.inner.metrics.forget(name, Some(*t));
        }
        let timeout = self.inner.config.shutdown_timeout();
        let deadline = tokio::time::Instant::now() + timeout;
        let waits = tasks.into_iter().map(|(t, running)| async move {
            let mut handle = running.handle;
            if tokio::time::timeout_at(deadline, &mut handle).await.is_err() {
                tracing::error!(connector = %name, task = t,
                    "task did not stop within task.shutdown.graceful.timeout.ms ({timeout:?}); aborting it");
                handle.abort();
            }
        });
        futures::future::join_all(waits).await;
    }

    /// Stop the instance only.
    async fn stop_instance(&self, name: &str, entry: &mut Entry) {
        if let Some(mut instance) = entry.instance.take() {
            if let Err(e) = instance.as_connector().stop().await {
                tracing::warn!(connector = %name, error = %e, "connector stop failed");
            }
        }
    }

    async fn stop_connector(&self, name: &str, entry: &mut Entry) {
        let tasks = std::mem::take(&mut entry.tasks);
        self.stop_tasks(name, tasks).await;
        self.stop_instance(name, entry).await;
        if entry.target == TargetState::Stopped {
            self.set_task_configs(name, entry, Vec::new()).await;
            self.inner.status.put_connector(name, State::Stopped, None);
        }
    }
}

fn push_error(reports: &mut Vec<ConfigReport>, key: &str, message: String) {
    match reports.iter_mut().find(|r| r.name == key) {
        Some(r) => r.errors.push(message),
        None => {
            let mut report = ConfigReport::new(key);
            report.errors.push(message);
            reports.push(report);
        }
    }
}

fn not_found(name: &str) -> ConnectError {
    ConnectError::not_found(format!("Connector {name} not found"))
}

fn task_id(name: &str, task: u32) -> TaskId {
    TaskId {
        connector: name.to_string(),
        task,
    }
}

fn task_kind(kind: ConnectorType) -> TaskKind {
    match kind {
        ConnectorType::Source => TaskKind::Source,
        ConnectorType::Sink => TaskKind::Sink,
    }
}

/// Ask a started connector for its task configs (up to `tasks.max`), with
/// the keys Kafka's worker adds (`task.class`, a sink's topics).
async fn ask_task_configs(
    plugins: &Plugins,
    config: &ConfigMap,
    instance: &mut AnyConnector,
) -> Result<Vec<ConfigMap>> {
    let configs = instance
        .as_connector()
        .task_configs(tasks_max(config))
        .await?;
    let class = config.get("connector.class").map_or("", |c| c.trim());
    Ok(plugins
        .connector(class)?
        .framework_task_configs(config, configs))
}

fn tasks_max(config: &ConfigMap) -> usize {
    config
        .get("tasks.max")
        .and_then(|v| v.trim().parse::<usize>().ok())
        .unwrap_or(1)
        .max(1)
}

fn enforce_tasks_max(config: &ConfigMap) -> bool {
    !config
        .get("tasks.max.enforce")
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("false"))
}
