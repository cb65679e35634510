//! The worker as a herder's hands: run exactly the connectors and tasks a
//! cluster assigned to this worker, with configs read elsewhere.
//!
//! In standalone mode the worker decides what runs (everything it holds)
//! and records it in its own config store. In distributed mode a group
//! leader decides, the config topic holds the configs, and a herder
//! (`connect-distributed`) tells this worker, one unit at a time, which
//! connector instances and tasks to start and stop. These calls never
//! write the worker's config store; states still go to its status store
//! (the status topic in distributed mode).

use std::collections::{BTreeMap, BTreeSet};

use connect_api::config::ConfigMap;
use tokio::sync::mpsc;

use super::{not_found, task_id, Entry, Worker};
use crate::status::{State, TargetState, TaskId};
use connect_api::Result;

impl Worker {
    /// Send connectors' task reconfiguration requests
    /// (`ConnectorContext::request_task_reconfiguration`) to `to`, by
    /// connector name, instead of handling them here: in distributed mode
    /// new task configs go through the leader and the config topic. Only
    /// the first call counts.
    pub fn route_reconfiguration(&self, to: mpsc::UnboundedSender<String>) {
        let _ = self.inner.reconfigure_route.set(to);
    }

    /// Start connector `name`'s instance with `config` in `target` and
    /// return the task configs it generates: `Some(empty)` when `target`
    /// is STOPPED (a stopped connector has no tasks), `None` when it failed
    /// (its status says why). An instance already running is stopped
    /// first; tasks running here are left alone.
    pub async fn start_assigned_connector(
        &self,
        name: &str,
        mut config: ConfigMap,
        target: TargetState,
    ) -> Option<Vec<ConfigMap>> {
        config.insert("name".into(), name.to_string());
        let mut map = self.inner.connectors.lock().await;
        let entry = match self.assigned_entry(&mut map, name, &config, target) {
            Ok(entry) => entry,
            Err(e) => {
                tracing::error!(connector = %name, error = %e, "cannot start an assigned connector");
                self.inner
                    .status
                    .put_connector(name, State::Failed, Some(e.to_string()));
                return None;
            }
        };
        self.stop_instance(name, entry).await;
        entry.config = config;
        entry.target = target;
        if target == TargetState::Stopped {
            self.inner.status.put_connector(name, State::Stopped, None);
            return Some(Vec::new());
        }
        self.start_instance(name, entry).await
    }

    /// Ask connector `name`'s running instance for its task configs again
    /// (after it requested a reconfiguration). `None` when it does not run
    /// here or is STOPPED.
    pub async fn assigned_task_configs(&self, name: &str) -> Result<Option<Vec<ConfigMap>>> {
        let mut map = self.inner.connectors.lock().await;
        let Some(entry) = map.get_mut(name) else {
            return Ok(None);
        };
        if entry.target == TargetState::Stopped {
            return Ok(None);
        }
        match entry.instance.as_mut() {
            Some(instance) => Ok(Some(
                super::ask_task_configs(&self.inner.plugins, &entry.config, instance).await?,
            )),
            None => Ok(None),
        }
    }

    /// Stop connector `name`'s instance (not its tasks) if it runs here.
    pub async fn stop_assigned_connector(&self, name: &str) {
        let mut map = self.inner.connectors.lock().await;
        if let Some(entry) = map.get_mut(name) {
            self.stop_instance(name, entry).await;
            if entry.tasks.is_empty() {
                map.remove(name);
            }
        }
    }

    /// Start task `task` of `name` with `task_config`, under the
    /// connector's `connector_config`, in `target`. The task is created
    /// from the connector's class; the connector instance need not run on
    /// this worker. A copy already running here is stopped first.
    pub async fn start_assigned_task(
        &self,
        name: &str,
        task: u32,
        mut connector_config: ConfigMap,
        task_config: &ConfigMap,
        target: TargetState,
    ) -> Result<()> {
        connector_config.insert("name".into(), name.to_string());
        let mut map = self.inner.connectors.lock().await;
        let entry = self.assigned_entry(&mut map, name, &connector_config, target)?;
        if let Some(running) = entry.tasks.remove(&task) {
            self.stop_task(name, task, running).await;
        }
        if entry.instance.is_none() {
            // Only the class matters to a task, so any instance will do.
            entry.config = connector_config;
            entry.target = target;
        }
        let fresh;
        let connector = match entry.instance.as_ref() {
            Some(instance) => instance,
            None => {
                fresh = self
                    .inner
                    .plugins
                    .connector(&entry.config["connector.class"])?
                    .create();
                &fresh
            }
        };
        let started = self.spawn_task(name, entry, task, connector, task_config);
        self.inner
            .metrics
            .startup(crate::metrics::Startup::Task(started.is_ok()));
        match started {
            Ok(running) => {
                entry.tasks.insert(task, running);
                Ok(())
            }
            Err(e) => {
                self.inner.status.task_state(
                    &task_id(name, task),
                    State::Failed,
                    Some(e.to_string()),
                );
                Err(e)
            }
        }
    }

    /// Stop these tasks where they run here (flushing and committing,
    /// together, within `task.shutdown.graceful.timeout.ms`).
    pub async fn stop_assigned_tasks(&self, tasks: &[TaskId]) {
        let mut map = self.inner.connectors.lock().await;
        let mut by_connector: BTreeMap<&str, Vec<u32>> = BTreeMap::new();
        for id in tasks {
            by_connector.entry(&id.connector).or_default().push(id.task);
        }
        let stops = map.iter_mut().filter_map(|(name, entry)| {
            let wanted = by_connector.get(name.as_str())?;
            let running: Vec<_> = wanted
                .iter()
                .filter_map(|t| entry.tasks.remove(t).map(|r| (*t, r)))
                .collect();
            Some(self.stop_tasks(name, running))
        });
        futures::future::join_all(stops).await;
        map.retain(|_, e| e.instance.is_some() || !e.tasks.is_empty());
    }

    /// Apply a new target state (`PAUSED`/`STARTED`) to whatever of `name`
    /// runs here. STOPPED stops the instance and the tasks.
    pub async fn set_assigned_target(&self, name: &str, target: TargetState) -> Result<()> {
        if target == TargetState::Stopped {
            let tasks: Vec<TaskId> = {
                let map = self.inner.connectors.lock().await;
                let entry = map.get(name).ok_or_else(|| not_found(name))?;
                entry.tasks.keys().map(|&t| task_id(name, t)).collect()
            };
            self.stop_assigned_tasks(&tasks).await;
            let mut map = self.inner.connectors.lock().await;
            if let Some(entry) = map.get_mut(name) {
                self.stop_instance(name, entry).await;
                entry.target = target;
                map.remove(name);
                self.inner.status.put_connector(name, State::Stopped, None);
            }
            return Ok(());
        }
        let mut map = self.inner.connectors.lock().await;
        let entry = map.get_mut(name).ok_or_else(|| not_found(name))?;
        entry.target = target;
        for task in entry.tasks.values() {
            let _ = task.control.send(target);
        }
        if entry.instance.is_some() && self.inner.status.connector(name).0 != State::Failed {
            let state = if target == TargetState::Paused {
                State::Paused
            } else {
                State::Running
            };
            self.inner.status.put_connector(name, state, None);
        }
        Ok(())
    }

    /// The connector instances and the tasks running on this worker.
    pub async fn running_units(&self) -> (BTreeSet<String>, BTreeSet<TaskId>) {
        let map = self.inner.connectors.lock().await;
        let connectors = map
            .iter()
            .filter(|(_, e)| e.instance.is_some())
            .map(|(n, _)| n.clone())
            .collect();
        let tasks = map
            .iter()
            .flat_map(|(n, e)| e.tasks.keys().map(move |&t| task_id(n, t)))
            .collect();
        (connectors, tasks)
    }

    /// The entry of `name`, created (nothing running) when absent.
    fn assigned_entry<'m>(
        &self,
        map: &'m mut BTreeMap<String, Entry>,
        name: &str,
        config: &ConfigMap,
        target: TargetState,
    ) -> Result<&'m mut Entry> {
        if !map.contains_key(name) {
            let class = config.get("connector.class").map_or("", |c| c.trim());
            let plugin = self.inner.plugins.connector(class)?;
            map.insert(
                name.to_string(),
                Entry {
                    config: config.clone(),
                    kind: plugin.kind,
                    version: plugin.create().as_connector_ref().version(),
                    target,
                    instance: None,
                    task_configs: Vec::new(),
                    tasks: BTreeMap::new(),
                },
            );
        }
        map.get_mut(name).ok_or_else(|| not_found(name))
    }
}
