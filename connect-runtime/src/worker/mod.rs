//! The worker: the unit runner. It starts, stops and reports connector
//! instances and tasks inside the caller's tokio runtime, one unit at a
//! time, as a herder tells it. It decides nothing: what should run, with
//! which configs, is the herder's ([`StandaloneHerder`] keeps it in this
//! process, `connect-distributed`'s herder in Kafka topics), as Kafka's
//! `Worker` is driven by its `StandaloneHerder` and `DistributedHerder`.
//!
//! [`StandaloneHerder`]: crate::herder::StandaloneHerder
//!
//! ```no_run
//! # async fn demo(cluster: std::sync::Arc<dyn connect_runtime::kafka::KafkaCluster>) -> connect_api::Result<()> {
//! use std::sync::Arc;
//! use connect_runtime::offsets::MemoryOffsetStore;
//! use connect_runtime::status::{TargetState, TaskId};
//! use connect_runtime::worker::{Plugins, Worker, WorkerConfig};
//!
//! let props = connect_api::ConfigMap::from([("key.converter", "JsonConverter"), ("value.converter", "JsonConverter")]);
//! let worker = Worker::new(WorkerConfig::parse(&props)?, Plugins::with_builtins(), cluster,
//!     Arc::new(MemoryOffsetStore::new()));
//! let config = connect_api::ConfigMap::from([("connector.class", "MySource"), ("tasks.max", "1")]);
//! // Start the instance; it answers with its task configs.
//! let tasks = worker.start_connector("my-source", config.clone(), TargetState::Started).await;
//! for (t, task_config) in tasks.unwrap_or_default().iter().enumerate() {
//!     worker.start_task("my-source", t as u32, config.clone(), task_config, TargetState::Started).await?;
//! }
//! worker.stop_tasks(&[TaskId { connector: "my-source".into(), task: 0 }]).await;
//! worker.shutdown().await;
//! # Ok(()) }
//! ```

mod client_overrides;
mod config;
mod info;
pub mod offset_admin;
mod plugins;
pub mod providers;
mod task_settings;

use task_settings::client_props;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use connect_api::config::ConfigMap;
use connect_api::connector::{ConnectorContext, ConnectorType};
use connect_api::{ConnectError, Result};
use connect_transforms::chain::TransformChain;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tracing::Instrument;

pub use client_overrides::{ClientOverridePolicy, ALLOWLIST_KEY, POLICY_KEY};
pub use config::{
    check_sink_topics, connector_base_def, invalid_config, sink_connector_def, sink_topics,
    source_connector_def, worker_config_def, WorkerConfig, DEPRECATED_WORKER_KEYS,
    EXACTLY_ONCE_SUPPORT, TRANSACTION_BOUNDARY,
};
pub use info::{ConnectorInfo, ConnectorStatus, StateInfo, TaskRef, TaskStateInfo};
pub use plugins::{AnyConnector, ConnectorPlugin, Plugins};

use crate::converters::TaskConverters;
use crate::kafka::{KafkaCluster, KafkaError};
use crate::metrics::{ConnectorMeta, Startup, TaskKind, WorkerMetrics};
use crate::offsets::{ConnectorOffsetStore, OffsetStore, OffsetTopics};
use crate::panics::{contain, contain_sync};
use crate::sink::{SinkPlugins, SinkTaskSettings, WorkerSinkTask};
use crate::source::{SourcePlugins, SourceTaskSettings, WorkerSourceTask, ZombieFencing};
use crate::status::{MemoryStatusStore, State, StatusListener, StatusStore, TargetState, TaskId};

struct RunningTask {
    control: watch::Sender<TargetState>,
    handle: JoinHandle<Result<()>>,
}

/// What runs here of one connector: its instance (when this worker runs
/// it) and its tasks. Each connector has its own locks, and the map of
/// slots is locked only to look one up: a plugin call that hangs holds up
/// its own connector only, never another one, REST or a rebalance.
struct Slot {
    kind: ConnectorType,
    /// Bumped to abandon the instance's plugin call in flight (`start`,
    /// `task_configs`): a stop, a restart or a shutdown need not wait for
    /// a call that hangs.
    abandon: watch::Sender<u64>,
    /// The instance, locked for the length of a call into it.
    instance: tokio::sync::Mutex<Instance>,
    /// Whether the instance runs (readable while a call holds `instance`).
    running: AtomicBool,
    target: std::sync::Mutex<TargetState>,
    tasks: std::sync::Mutex<BTreeMap<u32, RunningTask>>,
}

struct Instance {
    /// The connector config the instance started with.
    config: ConfigMap,
    connector: Option<AnyConnector>,
}

impl Slot {
    /// Abandon the instance's plugin call in flight, if any.
    fn abandon_calls(&self) {
        self.abandon.send_modify(|n| *n = n.wrapping_add(1));
    }

    fn target(&self) -> TargetState {
        *lock(&self.target)
    }

    fn take_tasks(&self) -> Vec<(u32, RunningTask)> {
        std::mem::take(&mut *lock(&self.tasks))
            .into_iter()
            .collect()
    }

    fn is_idle(&self) -> bool {
        !self.running.load(Ordering::Acquire) && lock(&self.tasks).is_empty()
    }
}

/// Lock a std mutex, also after a panic elsewhere poisoned it: the data
/// behind these locks is replaced whole, never left half-written.
fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Whether a stopped task is replaced by a new copy at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Replaced {
    Yes,
    No,
}

/// Why a bounded call into a connector instance gave no answer.
enum Unanswered {
    /// It failed, panicked or hung past its bound: the connector fails.
    Failed(ConnectError),
    /// A stop, a restart or a shutdown abandoned it: whoever did reports.
    Abandoned,
}

/// The connector instances and tasks running on a worker
/// ([`Worker::running_units`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunningUnits {
    /// Connectors whose instance runs here.
    pub connectors: BTreeSet<String>,
    /// Tasks that run here.
    pub tasks: BTreeSet<TaskId>,
}

type Route = Arc<OnceLock<mpsc::UnboundedSender<String>>>;

struct Inner {
    worker_id: String,
    /// The REST listener's bound address, when the configured one asked for
    /// any free port (`:0`): the id reported from then on.
    bound_id: OnceLock<String>,
    config: WorkerConfig,
    plugins: Plugins,
    cluster: Arc<dyn KafkaCluster>,
    offsets: Arc<dyn OffsetStore>,
    units: std::sync::Mutex<BTreeMap<String, Arc<Slot>>>,
    status: Arc<dyn StatusStore>,
    metrics: WorkerMetrics,
    /// Where connectors' task reconfiguration requests go: the herder
    /// ([`Worker::route_reconfiguration`]).
    reconfigure: Route,
    providers: providers::Providers,
    /// The Kafka cluster's id, once fetched.
    cluster_id: tokio::sync::OnceCell<String>,
    /// Set once the stall watch runs (started with the first task).
    stall_watch: OnceLock<()>,
    /// The distributed herder's zombie fencing around exactly-once source
    /// tasks' producer starts ([`Worker::set_zombie_fencing`]).
    zombie_fencing: OnceLock<Arc<dyn ZombieFencing>>,
    /// The offsets topics source connectors name for themselves
    /// (`offsets.storage.topic`; distributed mode,
    /// [`Worker::set_offset_topics`]).
    offset_topics: OnceLock<Arc<dyn OffsetTopics>>,
}

impl Drop for Inner {
    /// The last handle went away without `shutdown`: tell every task to stop.
    /// Each one still flushes and commits on its own (if the runtime keeps
    /// running); call [`Worker::shutdown`] to wait for that.
    fn drop(&mut self) {
        let units = self.units.get_mut().unwrap_or_else(|p| p.into_inner());
        for slot in units.values() {
            for task in lock(&slot.tasks).values() {
                let _ = task.control.send(TargetState::Stopped);
            }
        }
    }
}

/// Runs connector instances and tasks; cheap to clone (a handle). Dropping
/// the last handle stops the tasks gracefully in the background;
/// [`Worker::shutdown`] waits for them.
#[derive(Clone)]
pub struct Worker {
    inner: Arc<Inner>,
}

struct Context {
    name: String,
    status: Arc<dyn StatusStore>,
    reconfigure: Route,
}

impl ConnectorContext for Context {
    fn request_task_reconfiguration(&self) {
        match self.reconfigure.get() {
            Some(to) => {
                let _ = to.send(self.name.clone());
            }
            None => tracing::debug!(connector = %self.name,
                "task reconfiguration requested, but no herder takes requests"),
        }
    }
    fn raise_error(&self, error: ConnectError) {
        tracing::error!(connector = %self.name, error = %error, "connector raised an error");
        self.status
            .put_connector(&self.name, State::Failed, Some(error.to_string()));
    }
}

impl Worker {
    /// A worker on `cluster`, storing source offsets in `offsets` and
    /// states in memory.
    pub fn new(
        config: WorkerConfig,
        plugins: Plugins,
        cluster: Arc<dyn KafkaCluster>,
        offsets: Arc<dyn OffsetStore>,
    ) -> Worker {
        Self::with_status_store(
            config,
            plugins,
            cluster,
            offsets,
            Arc::new(MemoryStatusStore::default()),
        )
    }

    /// A worker that keeps connector and task states in `statuses` (the
    /// status topic in distributed mode).
    pub fn with_status_store(
        config: WorkerConfig,
        plugins: Plugins,
        cluster: Arc<dyn KafkaCluster>,
        offsets: Arc<dyn OffsetStore>,
        statuses: Arc<dyn StatusStore>,
    ) -> Worker {
        let worker_id = config
            .listeners()
            .first()
            .map(|l| {
                l.trim_start_matches("http://")
                    .trim_start_matches("https://")
                    .to_string()
            })
            .unwrap_or_else(|| "embedded".to_string());
        let providers = providers::Providers::from_worker(config.originals());
        Worker {
            inner: Arc::new(Inner {
                providers,
                worker_id,
                bound_id: OnceLock::new(),
                config,
                plugins,
                cluster,
                offsets,
                units: std::sync::Mutex::new(BTreeMap::new()),
                metrics: WorkerMetrics::new(statuses.clone()),
                status: statuses,
                reconfigure: Route::default(),
                cluster_id: tokio::sync::OnceCell::new(),
                stall_watch: OnceLock::new(),
                zombie_fencing: OnceLock::new(),
                offset_topics: OnceLock::new(),
            }),
        }
    }

    /// Have exactly-once source tasks (a worker with
    /// `exactly.once.source.support=enabled`) call `fencing` before and
    /// after their transactional producer takes over its id: the
    /// distributed herder fences the tasks of earlier generations then,
    /// and checks the task may still start. Set once; later calls are
    /// ignored.
    pub fn set_zombie_fencing(&self, fencing: Arc<dyn ZombieFencing>) {
        let _ = self.inner.zombie_fencing.set(fencing);
    }

    /// Let source connectors keep their offsets in a topic of their own
    /// (the connector key `offsets.storage.topic`, KIP-618), opened
    /// through `topics`, with the worker's offset store behind it as the
    /// fallback. Distributed mode sets it; without it (standalone) the key
    /// has no effect, as in Kafka's standalone worker. Only the first call
    /// counts.
    pub fn set_offset_topics(&self, topics: Arc<dyn OffsetTopics>) {
        let _ = self.inner.offset_topics.set(topics);
    }

    /// The offset store of source connector `config`: its own offsets
    /// topic in front of the worker's store when it names one (and the
    /// worker can open it, [`Worker::set_offset_topics`]), the worker's
    /// store otherwise.
    pub fn source_offsets_for(&self, config: &ConfigMap) -> Arc<dyn OffsetStore> {
        let own = config
            .get(crate::worker::task_settings::CONNECTOR_OFFSETS_TOPIC)
            .map(|t| t.trim())
            .filter(|t| !t.is_empty() && *t != self.inner.config.offset_storage_topic());
        match (own, self.inner.offset_topics.get()) {
            (Some(topic), Some(topics)) => Arc::new(ConnectorOffsetStore::new(
                topic,
                topics.clone(),
                self.inner.offsets.clone(),
            )),
            _ => self.inner.offsets.clone(),
        }
    }

    /// The zombie fencing set by [`Worker::set_zombie_fencing`], if any.
    pub fn zombie_fencing(&self) -> Option<Arc<dyn ZombieFencing>> {
        self.inner.zombie_fencing.get().cloned()
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

    /// Where connector and task states are kept.
    pub fn status_store(&self) -> &Arc<dyn StatusStore> {
        &self.inner.status
    }

    /// The offset store.
    pub fn offset_store(&self) -> &Arc<dyn OffsetStore> {
        &self.inner.offsets
    }

    /// The Kafka cluster.
    pub fn cluster(&self) -> &Arc<dyn KafkaCluster> {
        &self.inner.cluster
    }

    /// Source offsets of `name` as stored (KIP-875 `GET .../offsets` for sources).
    pub fn source_offsets(
        &self,
        name: &str,
    ) -> Vec<(connect_api::SourceMap, connect_api::SourceMap)> {
        self.inner.offsets.connector_offsets(name)
    }

    /// Send connectors' task reconfiguration requests
    /// (`ConnectorContext::request_task_reconfiguration`) to `to`, by
    /// connector name: the herder decides what follows. Only the first
    /// call counts; before it, requests are dropped.
    pub fn route_reconfiguration(&self, to: mpsc::UnboundedSender<String>) {
        let _ = self.inner.reconfigure.set(to);
    }

    /// Start connector `name`'s instance with `config` in `target` and
    /// return the task configs it generates: `Some(empty)` when `target`
    /// is STOPPED (a stopped connector has no tasks), `None` when it failed
    /// (its status says why) or a later call on this connector abandoned
    /// it. An instance already running is stopped first, and a start still
    /// in flight is abandoned; tasks running here are left alone. The start
    /// is bounded by `connector.start.timeout.ms`.
    pub async fn start_connector(
        &self,
        name: &str,
        mut config: ConfigMap,
        target: TargetState,
    ) -> Option<Vec<ConfigMap>> {
        config.insert("name".into(), name.to_string());
        let slot = match self.slot(name, &config) {
            Ok(slot) => slot,
            Err(e) => {
                tracing::error!(connector = %name, error = %e, "cannot start connector");
                self.inner
                    .status
                    .put_connector(name, State::Failed, Some(e.to_string()));
                return None;
            }
        };
        slot.abandon_calls();
        let mut instance = slot.instance.lock().await;
        let abandoned = slot.abandon.subscribe();
        self.stop_instance(name, &slot, &mut instance, self.graceful())
            .await;
        instance.config = config;
        *lock(&slot.target) = target;
        if target == TargetState::Stopped {
            self.inner.status.put_connector(name, State::Stopped, None);
            return Some(Vec::new());
        }
        self.start_instance(name, &slot, &mut instance, abandoned)
            .await
    }

    /// Ask connector `name`'s running instance for its task configs again
    /// (after it requested a reconfiguration), within
    /// `connector.start.timeout.ms`. `None` when it does not run here, is
    /// STOPPED, or a stop abandoned the call.
    pub async fn connector_task_configs(&self, name: &str) -> Result<Option<Vec<ConfigMap>>> {
        let Some(slot) = self.find(name) else {
            return Ok(None);
        };
        if slot.target() == TargetState::Stopped {
            return Ok(None);
        }
        let mut guard = slot.instance.lock().await;
        let abandoned = slot.abandon.subscribe();
        let Instance { config, connector } = &mut *guard;
        let Some(connector) = connector.as_mut() else {
            return Ok(None);
        };
        let asked = ask_task_configs(&self.inner.plugins, config, connector);
        let what = format!("connector {name}: task_configs");
        match self
            .bounded(name, "task_configs", abandoned, contain(what, asked))
            .await
        {
            Ok(configs) => Ok(Some(configs)),
            Err(Unanswered::Failed(e)) => Err(e),
            Err(Unanswered::Abandoned) => Ok(None),
        }
    }

    /// Abandon connector `name`'s plugin call in flight (`start` or
    /// `task_configs`), if any, as a stop does: its caller gets no answer.
    /// For a herder about to stop, reconfigure or delete the connector, so
    /// that it need not wait for a call that hangs.
    pub fn abandon_calls(&self, name: &str) {
        if let Some(slot) = self.find(name) {
            slot.abandon_calls();
        }
    }

    /// Stop connector `name`'s instance (not its tasks) if it runs here,
    /// abandoning a start still in flight.
    pub async fn stop_connector(&self, name: &str) {
        self.stop_connector_by(name, self.graceful()).await
    }

    async fn stop_connector_by(&self, name: &str, deadline: Instant) {
        let Some(slot) = self.find(name) else { return };
        slot.abandon_calls();
        let mut instance = slot.instance.lock().await;
        self.stop_instance(name, &slot, &mut instance, deadline)
            .await;
        drop(instance);
        self.release_if_idle(name, slot);
    }

    /// Stop several connector instances at once, each within
    /// `task.shutdown.graceful.timeout.ms`: together they take one timeout
    /// at most, not one each (a fenced leader counts on that).
    pub async fn stop_connectors(&self, names: &[String]) {
        self.stop_connectors_by(names, self.graceful()).await
    }

    /// [`Worker::stop_connectors`] with a deadline of the caller's: a
    /// connector whose `stop` has not returned by then is abandoned. For
    /// a worker fenced out of its group, whose session ends before
    /// `task.shutdown.graceful.timeout.ms` would.
    pub async fn stop_connectors_by(&self, names: &[String], deadline: Instant) {
        let stops = names
            .iter()
            .map(|name| self.stop_connector_by(name, deadline));
        futures::future::join_all(stops).await;
    }

    /// Start task `task` of `name` with `task_config`, under the
    /// connector's `connector_config`, in `target`. The task is created
    /// from the connector's class; the connector instance need not run on
    /// this worker (a task only needs its class, as Kafka's `task.class`).
    /// A copy already running here is stopped first. A task that cannot
    /// start shows FAILED with the reason, which is also returned.
    pub async fn start_task(
        &self,
        name: &str,
        task: u32,
        mut connector_config: ConfigMap,
        task_config: &ConfigMap,
        target: TargetState,
    ) -> Result<()> {
        connector_config.insert("name".into(), name.to_string());
        let slot = self.slot(name, &connector_config)?;
        let previous = lock(&slot.tasks).remove(&task);
        if let Some(running) = previous {
            tracing::info!(connector = %name, task, "stopping the task's running instance before starting it again");
            self.stop_running(name, vec![(task, running)], Replaced::Yes, self.graceful())
                .await;
        }
        tracing::info!(connector = %name, task, "starting task");
        let started = self.spawn_task(
            name,
            slot.kind,
            task,
            &connector_config,
            task_config,
            target,
        );
        self.inner.metrics.startup(Startup::Task(started.is_ok()));
        match started {
            Ok(running) => {
                // Another start of the same task raced this one: the
                // later one runs, the other stops.
                let raced = lock(&slot.tasks).insert(task, running);
                if let Some(raced) = raced {
                    self.stop_running(name, vec![(task, raced)], Replaced::Yes, self.graceful())
                        .await;
                }
                Ok(())
            }
            Err(e) => {
                tracing::error!(connector = %name, task, error = %e, "task failed to start");
                self.inner.status.task_state(
                    &task_id(name, task),
                    State::Failed,
                    Some(e.to_string()),
                );
                self.release_if_idle(name, slot);
                Err(e)
            }
        }
    }

    /// Stop these tasks where they run here (flushing and committing,
    /// together, within `task.shutdown.graceful.timeout.ms`).
    pub async fn stop_tasks(&self, tasks: &[TaskId]) {
        self.stop_tasks_by(tasks, self.graceful()).await
    }

    /// [`Worker::stop_tasks`] with a deadline of the caller's: a task still
    /// running then is aborted without committing (its records since the
    /// last commit are delivered again by whoever runs it next). For a
    /// worker fenced out of its group, whose session ends before
    /// `task.shutdown.graceful.timeout.ms` would.
    pub async fn stop_tasks_by(&self, tasks: &[TaskId], deadline: Instant) {
        let mut by_connector: BTreeMap<&str, Vec<u32>> = BTreeMap::new();
        for id in tasks {
            by_connector.entry(&id.connector).or_default().push(id.task);
        }
        let stops = by_connector.into_iter().filter_map(|(name, wanted)| {
            let slot = self.find(name)?;
            let running: Vec<_> = {
                let mut tasks = lock(&slot.tasks);
                wanted
                    .iter()
                    .filter_map(|t| tasks.remove(t).map(|r| (*t, r)))
                    .collect()
            };
            Some(async move {
                self.stop_running(name, running, Replaced::No, deadline)
                    .await;
                self.release_if_idle(name, slot);
            })
        });
        futures::future::join_all(stops).await;
    }

    /// Apply a new target state to whatever of `name` runs here: PAUSED
    /// and STARTED go to the tasks (and the connector's status, unless it
    /// failed); STOPPED stops the instance (abandoning a start in flight)
    /// and the tasks.
    pub async fn set_target_state(&self, name: &str, target: TargetState) {
        let Some(slot) = self.find(name) else { return };
        *lock(&slot.target) = target;
        if target == TargetState::Stopped {
            slot.abandon_calls();
            let deadline = self.graceful();
            self.stop_running(name, slot.take_tasks(), Replaced::No, deadline)
                .await;
            let mut instance = slot.instance.lock().await;
            self.stop_instance(name, &slot, &mut instance, deadline)
                .await;
            drop(instance);
            self.release_if_idle(name, slot);
            self.inner.status.put_connector(name, State::Stopped, None);
            return;
        }
        for task in lock(&slot.tasks).values() {
            let _ = task.control.send(target);
        }
        if slot.running.load(Ordering::Acquire)
            && self.inner.status.connector(name).0 != State::Failed
        {
            let state = if target == TargetState::Paused {
                State::Paused
            } else {
                State::Running
            };
            self.inner.status.put_connector(name, state, None);
        }
    }

    /// The connector instances and the tasks running on this worker.
    pub async fn running_units(&self) -> RunningUnits {
        let map = lock(&self.inner.units);
        RunningUnits {
            connectors: map
                .iter()
                .filter(|(_, s)| s.running.load(Ordering::Acquire))
                .map(|(n, _)| n.clone())
                .collect(),
            tasks: map
                .iter()
                .flat_map(|(n, s)| {
                    let ids: Vec<TaskId> = lock(&s.tasks).keys().map(|&t| task_id(n, t)).collect();
                    ids
                })
                .collect(),
        }
    }

    /// Stop every connector and task, flushing and committing within
    /// `task.shutdown.graceful.timeout.ms`; plugin calls in flight are
    /// abandoned.
    pub async fn shutdown(&self) {
        let slots = std::mem::take(&mut *lock(&self.inner.units));
        for slot in slots.values() {
            slot.abandon_calls();
        }
        // All connectors at once: each task has the same graceful timeout.
        let deadline = self.graceful();
        let stops = slots.iter().map(|(name, slot)| async move {
            self.stop_running(name, slot.take_tasks(), Replaced::No, deadline)
                .await;
            let mut instance = slot.instance.lock().await;
            self.stop_instance(name, slot, &mut instance, deadline)
                .await;
        });
        futures::future::join_all(stops).await;
    }

    /// Kill every task at once, without flushing or committing, as a crash
    /// (`kill -9`) would: for tests that prove recovery. The tasks show
    /// FAILED; connector instances are dropped without `stop`.
    pub async fn abort(&self) {
        let slots = std::mem::take(&mut *lock(&self.inner.units));
        for (name, slot) in &slots {
            slot.abandon_calls();
            for (t, running) in slot.take_tasks() {
                running.handle.abort();
                let _ = running.handle.await;
                self.inner.status.task_state(
                    &task_id(name, t),
                    State::Failed,
                    Some("aborted (Worker::abort)".into()),
                );
            }
            slot.instance.lock().await.connector = None;
            slot.running.store(false, Ordering::Release);
        }
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

    /// The slot of `name`, when something of it runs (or starts) here.
    fn find(&self, name: &str) -> Option<Arc<Slot>> {
        lock(&self.inner.units).get(name).cloned()
    }

    /// The slot of `name`, created (nothing running) when absent.
    fn slot(&self, name: &str, config: &ConfigMap) -> Result<Arc<Slot>> {
        let mut map = lock(&self.inner.units);
        if let Some(slot) = map.get(name) {
            return Ok(slot.clone());
        }
        let class = config.get("connector.class").map_or("", |c| c.trim());
        let plugin = self.inner.plugins.connector(class)?;
        let slot = Arc::new(Slot {
            kind: plugin.kind,
            abandon: watch::channel(0).0,
            instance: tokio::sync::Mutex::new(Instance {
                config: config.clone(),
                connector: None,
            }),
            running: AtomicBool::new(false),
            target: std::sync::Mutex::new(TargetState::Started),
            tasks: std::sync::Mutex::new(BTreeMap::new()),
        });
        map.insert(name.to_string(), slot.clone());
        Ok(slot)
    }

    /// Forget `name`'s slot when nothing of it runs and nobody else holds
    /// it (every holder took it from the map under the map's lock, so the
    /// count cannot grow behind this check).
    fn release_if_idle(&self, name: &str, slot: Arc<Slot>) {
        let mut map = lock(&self.inner.units);
        drop(slot);
        let idle = map
            .get(name)
            .is_some_and(|s| Arc::strong_count(s) == 1 && s.is_idle());
        if idle {
            map.remove(name);
        }
    }

    /// Run one call into connector `name`'s instance within
    /// `connector.start.timeout.ms`, unless `abandoned` fires first.
    async fn bounded<T>(
        &self,
        name: &str,
        call: &str,
        mut abandoned: watch::Receiver<u64>,
        answer: impl std::future::Future<Output = Result<T>>,
    ) -> std::result::Result<T, Unanswered> {
        let limit = self.inner.config.connector_start_timeout();
        tokio::select! {
            answered = tokio::time::timeout(limit, answer) => match answered {
                Ok(Ok(value)) => Ok(value),
                Ok(Err(e)) => Err(Unanswered::Failed(e)),
                Err(_) => Err(Unanswered::Failed(ConnectError::other(format!(
                    "Connector {name}: {call} did not return within connector.start.timeout.ms ({} ms) and was abandoned; check what it waits for (the system it connects to) or raise connector.start.timeout.ms, then restart the connector",
                    limit.as_millis()
                )))),
            },
            _ = abandoned.changed() => Err(Unanswered::Abandoned),
        }
    }

    /// Create and start the connector instance and ask it for task configs;
    /// sets the connector's status. `None` when it failed or was abandoned.
    async fn start_instance(
        &self,
        name: &str,
        slot: &Slot,
        instance: &mut Instance,
        abandoned: watch::Receiver<u64>,
    ) -> Option<Vec<ConfigMap>> {
        let status = &self.inner.status;
        let config = &instance.config;
        // A panic in the plugin fails the connector, as an error does.
        let start = contain(format!("connector {name}: start"), async {
            let plugin = self
                .inner
                .plugins
                .connector(config.get("connector.class").map_or("", |c| c.trim()))?;
            let mut connector = plugin.create();
            let ctx = Arc::new(Context {
                name: name.to_string(),
                status: status.clone(),
                reconfigure: self.inner.reconfigure.clone(),
            });
            let resolved = self.resolved(config)?;
            connector.as_connector().start(&resolved, ctx).await?;
            let max = tasks_max(config);
            let configs = ask_task_configs(&self.inner.plugins, config, &mut connector).await?;
            if configs.len() > max && enforce_tasks_max(config) {
                return Err(ConnectError::other(format!(
                    "The connector {name} has generated {} tasks, which is greater than {max}, the maximum number of tasks it is configured to create. Set tasks.max.enforce=false to allow it.",
                    configs.len()
                )));
            }
            Ok::<_, ConnectError>((connector, configs))
        });
        let started = self.bounded(name, "start", abandoned, start).await;
        self.inner.metrics.connector(
            name,
            ConnectorMeta {
                class: self.plugin_class(config),
                kind: task_kind(slot.kind),
            },
        );
        match started {
            Ok((connector, configs)) => {
                self.inner.metrics.startup(Startup::Connector(true));
                instance.connector = Some(connector);
                slot.running.store(true, Ordering::Release);
                let state = if slot.target() == TargetState::Paused {
                    State::Paused
                } else {
                    State::Running
                };
                status.put_connector(name, state, None);
                Some(configs)
            }
            Err(Unanswered::Failed(e)) => {
                self.inner.metrics.startup(Startup::Connector(false));
                tracing::error!(connector = %name, error = %e, "connector failed to start");
                status.put_connector(name, State::Failed, Some(e.to_string()));
                None
            }
            Err(Unanswered::Abandoned) => {
                tracing::info!(connector = %name, "connector start abandoned for a later stop or start");
                None
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
    /// running and for checking a config on create or update; the stored
    /// config (and so REST) keeps the references.
    pub fn resolved(&self, config: &ConfigMap) -> Result<ConfigMap> {
        providers::resolve(config, &self.inner.providers)
    }

    /// Start task `t` of connector `name` (of `kind`) with `task_config`.
    fn spawn_task(
        &self,
        name: &str,
        kind: ConnectorType,
        t: u32,
        connector_config: &ConfigMap,
        task_config: &ConfigMap,
        target: TargetState,
    ) -> Result<RunningTask> {
        let id = task_id(name, t);
        let inner = &self.inner;
        inner.stall_watch.get_or_init(|| {
            let watch = inner.metrics.watch_stalls(inner.config.stall_threshold());
            tokio::spawn(watch);
        });
        // Tasks come from a fresh instance of the connector's class: only
        // the class matters to a task (Kafka's `task.class`), and the
        // running instance may be busy in a call of its own.
        let connector = inner
            .plugins
            .connector(
                connector_config
                    .get("connector.class")
                    .map_or("", |c| c.trim()),
            )?
            .create();
        let connector_config = self.resolved(connector_config)?;
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
        let metrics = inner.metrics.task(&id, task_kind(kind));
        let (control, rx) = watch::channel(target);
        let status: Arc<dyn StatusListener> = inner.status.clone();
        let span = tracing::info_span!("task", connector = %name, task = t);
        let handle = match connector {
            AnyConnector::Source(c) => {
                let transforms =
                    TransformChain::from_config(&connector_config, inner.plugins.transforms())?;
                let mut settings =
                    SourceTaskSettings::from_configs(id.clone(), &connector_config, &inner.config)?;
                // Transactions commit offsets to the connector's own topic;
                // reading them back needs the worker able to open it.
                let own_topic = settings
                    .transactions
                    .as_ref()
                    .is_some_and(|t| t.offsets_topic != inner.config.offset_storage_topic());
                if own_topic && inner.offset_topics.get().is_none() {
                    return Err(ConnectError::config(
                        crate::worker::task_settings::CONNECTOR_OFFSETS_TOPIC,
                        format!(
                            "connector {name}: an offsets topic of its own needs a worker that \
                             can open it (distributed mode, Worker::set_offset_topics); remove \
                             the key to use the worker's offsets topic"
                        ),
                    ));
                }
                settings.metrics = metrics;
                let plugins = SourcePlugins {
                    task: contain_sync(format!("task {id}: create"), || Ok(c.create_task()))?,
                    task_config,
                    transforms: (!transforms.is_empty()).then_some(transforms),
                    converters,
                };
                let mut task = WorkerSourceTask::new(
                    settings,
                    plugins,
                    inner.cluster.clone(),
                    self.source_offsets_for(&connector_config),
                    status,
                    rx,
                )?;
                if let Some(fencing) = inner.zombie_fencing.get() {
                    task = task.with_zombie_fencing(fencing.clone());
                }
                tokio::spawn(task.run().instrument(span))
            }
            AnyConnector::Sink(c) => {
                let transforms =
                    TransformChain::from_config(&connector_config, inner.plugins.transforms())?;
                let mut settings =
                    SinkTaskSettings::from_configs(id.clone(), &connector_config, &inner.config)?;
                settings.metrics = metrics;
                let plugins = SinkPlugins {
                    task: contain_sync(format!("task {id}: create"), || Ok(c.create_task()))?,
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

    /// When a stop that starts now must be done:
    /// `task.shutdown.graceful.timeout.ms` from now.
    fn graceful(&self) -> Instant {
        Instant::now() + self.inner.config.shutdown_timeout()
    }

    /// Tell every task to stop, then wait for them together: they flush
    /// and commit at the same time, within one
    /// `task.shutdown.graceful.timeout.ms`, rather than one after another.
    /// A task that stopped without failing shows UNASSIGNED (Kafka's
    /// `onShutdown`), so no status says it runs where nothing runs it;
    /// unless another copy replaces it at once (a restart), whose own
    /// states follow.
    async fn stop_running(
        &self,
        name: &str,
        tasks: Vec<(u32, RunningTask)>,
        replaced: Replaced,
        deadline: Instant,
    ) {
        for (t, running) in &tasks {
            let _ = running.control.send(TargetState::Stopped);
            self.inner.metrics.forget(name, Some(*t));
        }
        let waits = tasks.into_iter().map(|(t, running)| async move {
            let mut handle = running.handle;
            if tokio::time::timeout_at(deadline, &mut handle).await.is_err() {
                tracing::error!(connector = %name, task = t,
                    "task did not stop in time (task.shutdown.graceful.timeout.ms, or the group session's end for a fenced worker); aborting it");
                handle.abort();
            }
            let id = task_id(name, t);
            if replaced == Replaced::No && self.inner.status.task(&id).0 != State::Failed {
                self.inner.status.task_state(&id, State::Unassigned, None);
            }
        });
        futures::future::join_all(waits).await;
    }

    /// Stop the instance only, within `task.shutdown.graceful.timeout.ms`:
    /// a `stop` that hangs past it is abandoned (as Kafka abandons a
    /// connector that does not stop in time).
    async fn stop_instance(
        &self,
        name: &str,
        slot: &Slot,
        instance: &mut Instance,
        deadline: Instant,
    ) {
        slot.running.store(false, Ordering::Release);
        if let Some(mut connector) = instance.connector.take() {
            let stopped = contain(format!("connector {name}: stop"), async move {
                connector.as_connector().stop().await
            });
            match tokio::time::timeout_at(deadline, stopped).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    tracing::warn!(connector = %name, error = %e, "connector stop failed")
                }
                Err(_) => tracing::error!(connector = %name,
                    "connector stop did not return in time (task.shutdown.graceful.timeout.ms, or the group session's end for a fenced worker); abandoned it"),
            }
        }
    }
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
    let mut configs = instance
        .as_connector()
        .task_configs(tasks_max(config))
        .await?;
    // The instance ran with the secrets resolved; what it hands back is
    // stored and sent between workers, so the references go back in.
    for task in &mut configs {
        providers::unresolve(task, config);
    }
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
