//! The standalone herder: decides in this process what runs, keeps the
//! record of it in a [`ConfigStore`], and drives the [`Worker`] (the unit
//! runner) to match, as Kafka's `StandaloneHerder` drives its `Worker`.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Weak};

use async_trait::async_trait;
use connect_api::config::{ConfigMap, ConfigReport};
use connect_api::connector::ConnectorType;
use connect_api::{ConnectError, Result};
use tokio::sync::mpsc;

// Exactly-once source delivery needs distributed mode (as in Kafka):
// `exactly.once.support=required` fails its preflight here.
use super::validation::{
    check_connector_config, validate_connector_config, ExactlyOnceSource, WorkerRules,
};
use super::Herder;
use crate::config_store::{ConfigStore, MemoryConfigStore};
use crate::metrics::WorkerMetrics;
use crate::status::{State, TargetState, TaskId};
use crate::worker::offset_admin::{bad_request, no_changes, ConnectorOffsets, OffsetChange};
use crate::worker::{
    ConnectorInfo, ConnectorStatus, Plugins, StateInfo, TaskRef, TaskStateInfo, Worker,
    WorkerConfig,
};

/// What the herder holds of one connector: the stored config, target
/// state and task configs, and what it reports.
#[derive(Clone)]
struct Entry {
    config: ConfigMap,
    kind: ConnectorType,
    /// The plugin's `version()`, for statuses.
    version: String,
    target: TargetState,
    task_configs: Vec<ConfigMap>,
}

struct Inner {
    worker: Worker,
    /// The record of what should run; `connectors` is the herder's view
    /// of it, written after the store.
    configs: Arc<dyn ConfigStore>,
    connectors: std::sync::Mutex<BTreeMap<String, Arc<Slot>>>,
    /// Why one of the herder's own loops died, once one did.
    died: tokio::sync::watch::Sender<Option<String>>,
}

/// One connector in the herder. Changes to it (which call into its plugin
/// code and may take as long as that does) queue on `change`; other
/// connectors and reads never wait for them. A change works on a copy of
/// the entry and publishes it when done.
struct Slot {
    change: Arc<tokio::sync::Mutex<()>>,
    entry: std::sync::Mutex<Entry>,
}

impl Slot {
    fn get(&self) -> Entry {
        lock(&self.entry).clone()
    }

    fn set(&self, entry: Entry) {
        *lock(&self.entry) = entry;
    }
}

/// A connector's slot with its change lock held.
struct Changing {
    slot: Arc<Slot>,
    _change: tokio::sync::OwnedMutexGuard<()>,
}

/// Lock a std mutex, also after a panic elsewhere poisoned it: what these
/// locks guard is replaced whole, never left half-written.
fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Keeps connectors in this process: creates, reconfigures, pauses, stops,
/// restarts and deletes them, and tells its [`Worker`] what to run. Cheap
/// to clone (a handle). Use it through the [`Herder`] trait, directly when
/// embedding or behind the REST API.
///
/// ```no_run
/// # async fn demo(cluster: std::sync::Arc<dyn connect_runtime::kafka::KafkaCluster>) -> connect_api::Result<()> {
/// use std::sync::Arc;
/// use connect_runtime::herder::{Herder, StandaloneHerder};
/// use connect_runtime::offsets::MemoryOffsetStore;
/// use connect_runtime::status::TargetState;
/// use connect_runtime::worker::{Plugins, Worker, WorkerConfig};
///
/// let props = connect_api::ConfigMap::from([("key.converter", "JsonConverter"), ("value.converter", "JsonConverter")]);
/// let worker = Worker::new(WorkerConfig::parse(&props)?, Plugins::with_builtins(), cluster,
///     Arc::new(MemoryOffsetStore::new()));
/// let herder = StandaloneHerder::new(worker);
/// let config = connect_api::ConfigMap::from([("connector.class", "MySource"), ("tasks.max", "1")]);
/// herder.create_connector("my-source", config, TargetState::Started).await?;
/// println!("{:?}", herder.connector_status("my-source").await?);
/// herder.shutdown().await;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct StandaloneHerder {
    inner: Arc<Inner>,
}

impl StandaloneHerder {
    /// What this worker adds to a connector config's checks: no
    /// exactly-once source support (Kafka refuses it in standalone mode)
    /// and the worker's client override policy.
    fn rules(&self) -> WorkerRules {
        WorkerRules {
            exactly_once: ExactlyOnceSource::Disabled,
            client_overrides: self.worker().config().client_override_policy().clone(),
        }
    }

    /// A herder over `worker` keeping configs in memory (as Kafka's
    /// standalone worker: connectors come from the command line and REST,
    /// and are gone after a restart). Must be called inside a tokio
    /// runtime (it spawns its task-reconfiguration loop).
    pub fn new(worker: Worker) -> StandaloneHerder {
        Self::with_config_store(worker, Arc::new(MemoryConfigStore::new()))
    }

    /// A herder over `worker` that keeps connector and task configs and
    /// target states in `configs`. The connectors `configs` already holds
    /// start with [`StandaloneHerder::start_stored`].
    pub fn with_config_store(worker: Worker, configs: Arc<dyn ConfigStore>) -> StandaloneHerder {
        let (tx, rx) = mpsc::unbounded_channel();
        worker.route_reconfiguration(tx);
        let herder = StandaloneHerder {
            inner: Arc::new(Inner {
                worker,
                configs,
                connectors: std::sync::Mutex::new(BTreeMap::new()),
                died: tokio::sync::watch::channel(None).0,
            }),
        };
        herder.spawn_loop(
            "the task-reconfiguration loop",
            reconfigure_loop(Arc::downgrade(&herder.inner), rx),
        );
        let weak = Arc::downgrade(&herder.inner);
        let worker = herder.worker();
        herder.spawn_loop(
            "the automatic-restart loop",
            super::run_auto_restarts(
                move || {
                    weak.upgrade()
                        .map(|inner| Arc::new(StandaloneHerder { inner }))
                },
                worker.status_store().clone(),
                worker.metrics().clone(),
                worker.config().originals().clone(),
            ),
        );
        herder
    }

    /// The unit runner this herder drives.
    pub fn worker(&self) -> &Worker {
        &self.inner.worker
    }

    /// Resolves, with the reason, if one of the herder's own loops dies
    /// (a bug of ours, never a plugin's: plugin panics are contained). A
    /// process serving this herder should then stop (the standalone
    /// worker exits non-zero), as Java's worker does when its herder
    /// thread dies, rather than serve a REST API over nothing.
    pub async fn died(&self) -> String {
        let mut died = self.inner.died.subscribe();
        let why = match died.wait_for(Option::is_some).await {
            Ok(why) => why.clone().unwrap_or_default(),
            // The sender lives in the herder: unreachable while `self` is.
            Err(_) => return std::future::pending().await,
        };
        why
    }

    /// Spawn one of the herder's loops, watched: a panic is logged and
    /// reported through [`StandaloneHerder::died`].
    fn spawn_loop(
        &self,
        name: &'static str,
        work: impl std::future::Future<Output = ()> + Send + 'static,
    ) {
        let handle = tokio::spawn(work);
        let inner = Arc::downgrade(&self.inner);
        tokio::spawn(async move {
            let Err(ended) = handle.await else { return };
            if !ended.is_panic() {
                return;
            }
            let message = crate::panics::payload_message(&*ended.into_panic());
            let why = format!("{name} of the standalone herder panicked: {message}");
            tracing::error!("{why}; the worker must stop");
            if let Some(inner) = inner.upgrade() {
                inner.died.send_replace(Some(why));
            }
        });
    }

    /// Start every connector the config store holds that this herder does
    /// not run yet, each in its stored target state: how a worker picks up
    /// what its store says should run. Returns the names started; one whose
    /// class is unknown is not started and shows FAILED with the reason.
    pub async fn start_stored(&self) -> Vec<String> {
        let mut starts = Vec::new();
        for (name, stored) in self.inner.configs.snapshot() {
            if self.find(&name).is_some() {
                continue;
            }
            let class = stored
                .config
                .get("connector.class")
                .map_or("", |c| c.trim());
            let (kind, version) = match self.plugins().connector(class) {
                Ok(plugin) => (plugin.kind, plugin.create().as_connector_ref().version()),
                Err(e) => {
                    tracing::error!(connector = %name, error = %e, "cannot start a stored connector");
                    self.worker().status_store().put_connector(
                        &name,
                        State::Failed,
                        Some(e.to_string()),
                    );
                    continue;
                }
            };
            let entry = Entry {
                config: stored.config,
                kind,
                version,
                target: stored.target,
                task_configs: stored.task_configs,
            };
            let Some(changing) = self.insert(&name, entry) else {
                continue;
            };
            starts.push(async move {
                let mut entry = changing.slot.get();
                self.start_connector(&name, &mut entry).await;
                changing.slot.set(entry);
                name
            });
        }
        // Together: one connector's slow start delays no other.
        futures::future::join_all(starts).await
    }

    /// Stop every connector, flushing and committing within
    /// `task.shutdown.graceful.timeout.ms`. Plugin calls in flight are
    /// abandoned.
    pub async fn shutdown(&self) {
        self.worker().shutdown().await;
        // Changes in flight end quickly once their plugin calls are
        // abandoned; whatever they started meanwhile stops too.
        let slots = std::mem::take(&mut *lock(&self.inner.connectors));
        for slot in slots.values() {
            let _ = slot.change.lock().await;
        }
        self.worker().shutdown().await;
    }

    /// Kill every task at once, without flushing or committing, as a crash
    /// (`kill -9`) would: for tests that prove recovery. Connectors and
    /// their configs stay registered; their tasks show FAILED.
    pub async fn abort(&self) {
        self.worker().abort().await;
    }

    fn find(&self, name: &str) -> Option<Arc<Slot>> {
        lock(&self.inner.connectors).get(name).cloned()
    }

    /// Register a new connector with `entry`, its change lock held; `None`
    /// when one of that name exists.
    fn insert(&self, name: &str, entry: Entry) -> Option<Changing> {
        let change = Arc::new(tokio::sync::Mutex::new(()));
        let guard = change.clone().try_lock_owned().ok()?;
        let slot = Arc::new(Slot {
            change,
            entry: std::sync::Mutex::new(entry),
        });
        let mut map = lock(&self.inner.connectors);
        if map.contains_key(name) {
            return None;
        }
        map.insert(name.to_string(), slot.clone());
        Some(Changing {
            slot,
            _change: guard,
        })
    }

    /// Take connector `name`'s change lock (waiting for changes before);
    /// not found when it does not exist, also when it was deleted while
    /// this waited.
    async fn change(&self, name: &str) -> Result<Changing> {
        let slot = self.find(name).ok_or_else(|| not_found(name))?;
        let guard = slot.change.clone().lock_owned().await;
        match self.find(name) {
            Some(now) if Arc::ptr_eq(&now, &slot) => Ok(Changing {
                slot,
                _change: guard,
            }),
            _ => Err(not_found(name)),
        }
    }

    /// Start the connector instance (unless STOPPED) and its tasks.
    async fn start_connector(&self, name: &str, entry: &mut Entry) {
        if entry.target == TargetState::Stopped {
            self.worker()
                .status_store()
                .put_connector(name, State::Stopped, None);
            self.set_task_configs(name, entry, Vec::new()).await;
            return;
        }
        let configs = self
            .worker()
            .start_connector(name, entry.config.clone(), entry.target)
            .await;
        match configs {
            Some(configs) => {
                if self.set_task_configs(name, entry, configs).await {
                    self.start_tasks(name, entry).await;
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
        if entry.target == TargetState::Stopped {
            self.worker().stop_connector(name).await;
            return;
        }
        // Stops the running instance first.
        let Some(configs) = self
            .worker()
            .start_connector(name, entry.config.clone(), entry.target)
            .await
        else {
            return; // FAILED; the tasks keep what they run
        };
        if configs != entry.task_configs {
            self.worker().stop_tasks(&task_ids(name, entry)).await;
            if self.set_task_configs(name, entry, configs).await {
                self.start_tasks(name, entry).await;
            }
        }
    }

    /// Store `configs` as the task configs of `name`, then take them as the
    /// herder's view. `false` (connector FAILED, view unchanged) when the
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
                self.worker().status_store().put_connector(
                    name,
                    State::Failed,
                    Some(format!("cannot store task configs: {e}")),
                );
                false
            }
        }
    }

    /// Start every task of `name` (a task that cannot start shows FAILED).
    async fn start_tasks(&self, name: &str, entry: &Entry) {
        for (t, task_config) in entry.task_configs.iter().enumerate() {
            let _ = self
                .worker()
                .start_task(
                    name,
                    t as u32,
                    entry.config.clone(),
                    task_config,
                    entry.target,
                )
                .await;
        }
    }

    /// Stop the tasks and the instance; a STOPPED connector also loses its
    /// task configs.
    async fn stop_connector(&self, name: &str, entry: &mut Entry) {
        self.worker().stop_tasks(&task_ids(name, entry)).await;
        self.worker().stop_connector(name).await;
        if entry.target == TargetState::Stopped {
            self.set_task_configs(name, entry, Vec::new()).await;
            self.worker()
                .status_store()
                .put_connector(name, State::Stopped, None);
        }
    }

    async fn restart_one(&self, name: &str, entry: &Entry, task: u32) -> Result<()> {
        let id = task_id(name, task);
        self.worker().stop_tasks(std::slice::from_ref(&id)).await;
        self.worker()
            .status_store()
            .task_state(&id, State::Restarting, None);
        let task_config = entry
            .task_configs
            .get(task as usize)
            .ok_or_else(|| task_not_found(name, task))?;
        self.worker()
            .start_task(name, task, entry.config.clone(), task_config, entry.target)
            .await
    }

    /// Ask connector `name` for its task configs again (it requested a
    /// reconfiguration) and restart its tasks when they changed.
    async fn reconfigure(&self, name: &str) -> Result<()> {
        let Ok(changing) = self.change(name).await else {
            return Ok(()); // deleted meanwhile
        };
        let mut entry = changing.slot.get();
        let Some(configs) = self.worker().connector_task_configs(name).await? else {
            return Ok(());
        };
        if configs == entry.task_configs {
            return Ok(());
        }
        self.worker().stop_tasks(&task_ids(name, &entry)).await;
        if self.set_task_configs(name, &mut entry, configs).await {
            self.start_tasks(name, &entry).await;
        }
        changing.slot.set(entry);
        Ok(())
    }

    async fn set_target(&self, name: &str, target: TargetState) -> Result<()> {
        if target == TargetState::Stopped {
            self.worker().abandon_calls(name);
        }
        let changing = self.change(name).await?;
        let mut entry = changing.slot.get();
        self.inner.configs.put_target_state(name, target).await?;
        let previous = entry.target;
        entry.target = target;
        // Published first: reads show the new target while it applies.
        changing.slot.set(entry.clone());
        match (previous, target) {
            (TargetState::Stopped, TargetState::Stopped) => {}
            (_, TargetState::Stopped) => self.stop_connector(name, &mut entry).await,
            (TargetState::Stopped, _) => self.start_connector(name, &mut entry).await,
            (_, t) => self.worker().set_target_state(name, t).await,
        }
        changing.slot.set(entry);
        Ok(())
    }

    async fn modify_offsets(
        &self,
        name: &str,
        changes: Option<Vec<OffsetChange>>,
    ) -> Result<String> {
        // Held throughout, so the connector cannot be resumed mid-change.
        let changing = self.change(name).await?;
        let entry = changing.slot.get();
        if entry.target != TargetState::Stopped {
            return Err(bad_request(format!(
                "Connectors must be in the STOPPED state before their offsets can be modified. This can be done for the specified connector by issuing a 'PUT' request to the '/connectors/{name}/stop' endpoint"
            )));
        }
        self.worker()
            .modify_offsets_of(name, &entry.config, changes)
            .await
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
        let status = self.worker().status_store();
        let state_info = |(state, trace): (State, Option<String>)| StateInfo {
            state: state.name().to_string(),
            worker_id: self.worker().worker_id().to_string(),
            version: entry.version.clone(),
            trace,
        };
        ConnectorStatus {
            name: name.to_string(),
            connector: state_info(status.connector(name)),
            // Every task the connector has, also those that failed to
            // start (they have no running handle).
            tasks: (0..entry.task_configs.len() as u32)
                .map(|t| TaskStateInfo {
                    id: t,
                    state: state_info(status.task(&task_id(name, t))),
                })
                .collect(),
            kind: entry.kind.as_str().to_string(),
        }
    }

    async fn with_entry<T>(&self, name: &str, f: impl FnOnce(&Entry) -> T) -> Result<T> {
        let slot = self.find(name).ok_or_else(|| not_found(name))?;
        let entry = lock(&slot.entry);
        Ok(f(&entry))
    }
}

/// Handles connectors' task reconfiguration requests until the herder is
/// gone.
async fn reconfigure_loop(herder: Weak<Inner>, mut requests: mpsc::UnboundedReceiver<String>) {
    while let Some(name) = requests.recv().await {
        let Some(inner) = herder.upgrade() else { break };
        let herder = StandaloneHerder { inner };
        // Each on its own: a connector whose task_configs hangs holds up
        // its own requests only.
        tokio::spawn(async move {
            if let Err(e) = herder.reconfigure(&name).await {
                tracing::error!(connector = %name, error = %e, "task reconfiguration failed");
            }
        });
    }
}

#[async_trait]
impl Herder for StandaloneHerder {
    fn worker_id(&self) -> &str {
        self.worker().worker_id()
    }

    fn config(&self) -> &WorkerConfig {
        self.worker().config()
    }

    fn plugins(&self) -> &Plugins {
        self.worker().plugins()
    }

    fn set_listener_address(&self, addr: SocketAddr) {
        self.worker().set_listener_address(addr);
    }

    async fn kafka_cluster_id(&self) -> Option<String> {
        self.worker().kafka_cluster_id().await
    }

    fn metrics(&self) -> Option<&WorkerMetrics> {
        Some(self.worker().metrics())
    }

    fn validate(&self, config: &ConfigMap) -> Result<(String, Vec<ConfigReport>)> {
        validate_connector_config(self.plugins(), config, &self.rules())
    }

    async fn connector_names(&self) -> Vec<String> {
        lock(&self.inner.connectors).keys().cloned().collect()
    }

    /// Create connector `name` and start it in `initial` state. Nothing is
    /// created when the config is invalid.
    async fn create_connector(
        &self,
        name: &str,
        mut config: ConfigMap,
        initial: TargetState,
    ) -> Result<ConnectorInfo> {
        config.insert("name".into(), name.to_string());
        // Validate what will run (provider references resolved); store what
        // was given, so REST shows references, never secrets.
        check_connector_config(
            self.plugins(),
            &self.worker().resolved(&config)?,
            &self.rules(),
        )?;
        let plugin = self.plugins().connector(&config["connector.class"])?;
        let mut entry = Entry {
            config: config.clone(),
            kind: plugin.kind,
            version: plugin.create().as_connector_ref().version(),
            target: initial,
            task_configs: Vec::new(),
        };
        let changing = self
            .insert(name, entry.clone())
            .ok_or_else(|| ConnectError::conflict(format!("Connector {name} already exists")))?;
        if let Err(e) = self
            .inner
            .configs
            .put_connector_config(name, config, initial)
            .await
        {
            lock(&self.inner.connectors).remove(name);
            return Err(e);
        }
        self.start_connector(name, &mut entry).await;
        let info = self.info_of(name, &entry);
        changing.slot.set(entry);
        Ok(info)
    }

    async fn put_connector_config(
        &self,
        name: &str,
        mut config: ConfigMap,
    ) -> Result<(ConnectorInfo, bool)> {
        config.insert("name".into(), name.to_string());
        let exists = self.find(name).is_some();
        if !exists {
            let info = self
                .create_connector(name, config, TargetState::Started)
                .await?;
            return Ok((info, true));
        }
        check_connector_config(
            self.plugins(),
            &self.worker().resolved(&config)?,
            &self.rules(),
        )?;
        self.worker().abandon_calls(name);
        let changing = self.change(name).await?;
        let mut entry = changing.slot.get();
        self.inner
            .configs
            .put_connector_config(name, config.clone(), entry.target)
            .await?;
        self.stop_connector(name, &mut entry).await;
        let plugin = self.plugins().connector(&config["connector.class"])?;
        entry.kind = plugin.kind;
        entry.version = plugin.create().as_connector_ref().version();
        entry.config = config;
        changing.slot.set(entry.clone());
        self.start_connector(name, &mut entry).await;
        let info = self.info_of(name, &entry);
        changing.slot.set(entry);
        Ok((info, false))
    }

    async fn delete_connector(&self, name: &str) -> Result<()> {
        self.worker().abandon_calls(name);
        let changing = self.change(name).await?;
        self.inner.configs.remove_connector(name).await?;
        lock(&self.inner.connectors).remove(name);
        let mut entry = changing.slot.get();
        self.stop_connector(name, &mut entry).await;
        self.worker().status_store().forget(name);
        self.worker().metrics().forget(name, None);
        Ok(())
    }

    async fn connector_info(&self, name: &str) -> Result<ConnectorInfo> {
        self.with_entry(name, |entry| self.info_of(name, entry))
            .await
    }

    async fn task_configs(&self, name: &str) -> Result<Vec<ConfigMap>> {
        self.with_entry(name, |entry| entry.task_configs.clone())
            .await
    }

    async fn connector_status(&self, name: &str) -> Result<ConnectorStatus> {
        self.with_entry(name, |entry| self.status_of(name, entry))
            .await
    }

    async fn task_status(&self, name: &str, task: u32) -> Result<TaskStateInfo> {
        let status = self.connector_status(name).await?;
        status
            .tasks
            .into_iter()
            .find(|t| t.id == task)
            .ok_or_else(|| task_not_found(name, task))
    }

    async fn pause(&self, name: &str) -> Result<()> {
        self.set_target(name, TargetState::Paused).await
    }

    async fn resume(&self, name: &str) -> Result<()> {
        self.set_target(name, TargetState::Started).await
    }

    async fn stop(&self, name: &str) -> Result<()> {
        self.set_target(name, TargetState::Stopped).await
    }

    async fn restart_connector(
        &self,
        name: &str,
        include_tasks: bool,
        only_failed: bool,
    ) -> Result<ConnectorStatus> {
        self.worker().abandon_calls(name);
        let changing = self.change(name).await?;
        let mut entry = changing.slot.get();
        let status = self.worker().status_store();
        let connector_failed = status.connector(name).0 == State::Failed;
        if !include_tasks {
            if !only_failed || connector_failed {
                self.restart_instance(name, &mut entry).await;
                changing.slot.set(entry.clone());
            }
            return Ok(self.status_of(name, &entry));
        }
        if entry.target == TargetState::Stopped {
            return Ok(self.status_of(name, &entry));
        }
        if !only_failed || connector_failed {
            self.stop_connector(name, &mut entry).await;
            self.start_connector(name, &mut entry).await;
            changing.slot.set(entry.clone());
        } else {
            let failed: Vec<u32> = (0..entry.task_configs.len() as u32)
                .filter(|&t| status.task(&task_id(name, t)).0 == State::Failed)
                .collect();
            for t in failed {
                self.restart_one(name, &entry, t).await?;
            }
        }
        Ok(self.status_of(name, &entry))
    }

    async fn restart_task(&self, name: &str, task: u32) -> Result<()> {
        let changing = self.change(name).await?;
        let entry = changing.slot.get();
        if task as usize >= entry.task_configs.len() {
            return Err(task_not_found(name, task));
        }
        self.restart_one(name, &entry, task).await
    }

    async fn connector_topics(&self, name: &str) -> Result<Vec<String>> {
        self.with_entry(name, |_| ()).await?;
        self.worker().tracked_topics(name)
    }

    async fn reset_connector_topics(&self, name: &str) -> Result<()> {
        self.with_entry(name, |_| ()).await?;
        self.worker().reset_tracked_topics(name)
    }

    async fn connector_offsets(&self, name: &str) -> Result<ConnectorOffsets> {
        let config = self.with_entry(name, |entry| entry.config.clone()).await?;
        self.worker().offsets_of(name, &config).await
    }

    async fn alter_connector_offsets(
        &self,
        name: &str,
        changes: Vec<OffsetChange>,
    ) -> Result<String> {
        if changes.is_empty() {
            return Err(no_changes());
        }
        self.modify_offsets(name, Some(changes)).await
    }

    async fn reset_connector_offsets(&self, name: &str) -> Result<String> {
        self.modify_offsets(name, None).await
    }
}

fn not_found(name: &str) -> ConnectError {
    ConnectError::not_found(format!("Connector {name} not found"))
}

fn task_not_found(name: &str, task: u32) -> ConnectError {
    ConnectError::not_found(format!("Task {name}-{task} not found"))
}

fn task_id(name: &str, task: u32) -> TaskId {
    TaskId {
        connector: name.to_string(),
        task,
    }
}

/// The ids of every task `entry` has.
fn task_ids(name: &str, entry: &Entry) -> Vec<TaskId> {
    (0..entry.task_configs.len() as u32)
        .map(|t| task_id(name, t))
        .collect()
}
