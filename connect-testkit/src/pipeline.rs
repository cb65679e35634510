//! What the source and sink pipelines share: the task's spawned run, its
//! status history, stop/pause/resume, and plugins built from a connector
//! config as the worker builds them.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use connect_api::{ConfigMap, ConnectError, Result};
use connect_runtime::converters::{ConverterRegistry, TaskConverters};
use connect_runtime::status::{State, StatusListener, TargetState, TaskId};
use connect_runtime::worker::WorkerConfig;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::convert::default_worker_config;

/// Task states as the runtime reports them.
#[derive(Default)]
pub(crate) struct StatusLog(Mutex<Vec<(State, Option<String>)>>);

impl StatusListener for StatusLog {
    fn task_state(&self, _id: &TaskId, state: State, trace: Option<String>) {
        if let Ok(mut s) = self.0.lock() {
            s.push((state, trace));
        }
    }
}

/// The task's converters as the worker picks them (the connector's own, else
/// the testkit's default worker config: JSON with schemas).
pub(crate) fn task_converters(
    config: &ConfigMap,
    registry: &ConverterRegistry,
) -> Result<TaskConverters> {
    TaskConverters::for_connector(registry, config, &default_worker_config())
}

/// The worker config the pipelines' tasks run under: the testkit's
/// converters and `flush_interval`, Kafka's defaults for the rest, so task
/// settings come from the same `from_configs` as on a worker.
pub(crate) fn worker_config(flush_interval: Duration) -> Result<WorkerConfig> {
    let mut props = default_worker_config();
    props.insert(
        "offset.flush.interval.ms".into(),
        flush_interval.as_millis().max(1).to_string(),
    );
    WorkerConfig::parse(&props)
}

/// One task running under a runtime loop.
pub(crate) struct Runner {
    pub(crate) name: String,
    pub(crate) status: Arc<StatusLog>,
    control: Option<watch::Sender<TargetState>>,
    handle: Option<JoinHandle<Result<()>>>,
}

impl Runner {
    pub(crate) fn new(name: &str) -> Self {
        Runner {
            name: name.to_string(),
            status: Arc::default(),
            control: None,
            handle: None,
        }
    }

    pub(crate) fn id(&self) -> TaskId {
        TaskId {
            connector: self.name.clone(),
            task: 0,
        }
    }

    /// A control channel for a new run.
    pub(crate) fn control(&mut self) -> watch::Receiver<TargetState> {
        let (tx, rx) = watch::channel(TargetState::Started);
        self.control = Some(tx);
        rx
    }

    pub(crate) fn spawn(
        &mut self,
        run: impl std::future::Future<Output = Result<()>> + Send + 'static,
    ) {
        self.handle = Some(tokio::spawn(run));
    }

    pub(crate) fn is_running(&self) -> bool {
        self.handle.as_ref().is_some_and(|h| !h.is_finished())
    }

    pub(crate) fn set_target(&self, target: TargetState) -> Result<()> {
        match &self.control {
            Some(c) if self.is_running() => {
                let _ = c.send(target);
                Ok(())
            }
            _ => Err(ConnectError::other(format!(
                "task {}-0 is not running",
                self.name
            ))),
        }
    }

    async fn join(handle: JoinHandle<Result<()>>) -> Result<()> {
        handle.await.map_err(|e| {
            ConnectError::other(format!("the task's run panicked or was cancelled: {e}"))
        })?
    }

    /// Ask the task to stop and return how its run ended.
    pub(crate) async fn stop(&mut self) -> Result<()> {
        if let Some(c) = self.control.take() {
            let _ = c.send(TargetState::Stopped);
        }
        match self.handle.take() {
            Some(h) => Self::join(h).await,
            None => Ok(()),
        }
    }

    /// Wait (tokio time) for the run to fail; its error.
    pub(crate) async fn wait_failed(&mut self, timeout: Duration) -> Result<ConnectError> {
        let Some(h) = self.handle.as_mut() else {
            return Err(ConnectError::other("the task is not running"));
        };
        match tokio::time::timeout(timeout, h).await {
            Err(_) => Err(ConnectError::retriable(format!(
                "task {}-0 was still running after {timeout:?}",
                self.name
            ))),
            Ok(joined) => {
                self.handle = None;
                self.control = None;
                match joined {
                    Ok(Err(e)) => Ok(e),
                    Ok(Ok(())) => Err(ConnectError::other(format!(
                        "task {}-0 stopped without failing",
                        self.name
                    ))),
                    Err(e) => Ok(ConnectError::other(format!("the task's run panicked: {e}"))),
                }
            }
        }
    }

    pub(crate) fn states(&self) -> Vec<State> {
        self.status
            .0
            .lock()
            .map(|s| s.iter().map(|(st, _)| *st).collect())
            .unwrap_or_default()
    }
}
