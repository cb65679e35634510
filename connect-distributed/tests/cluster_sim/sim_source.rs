//! The simulation's source connector: it reports each instance to the
//! [`Tracker`], and its tasks write a counter per task (key: the task,
//! value: the counter) whose source offset is the counter, resuming after
//! the committed one. Its config keys:
//! - `stop.ms`: how long each task's `stop` takes (longer than the
//!   worker's `task.shutdown.graceful.timeout.ms` is a stuck stop);
//! - `poll.ms`: the pause before each record.

use std::sync::Arc;
use std::time::Duration;

use connect_api::config::{ConfigDef, ConfigMap};
use connect_api::connector::{Connector, ConnectorContext, SourceConnector};
use connect_api::source::{SourceTask, SourceTaskContext};
use connect_api::{Record, Schema, SourceMap, SourceRecord, Value};
use connect_runtime::worker::Plugins;

use super::{Running, Tracker};

/// The class name the schedule's connectors use.
pub(crate) const CLASS: &str = "sim.SimSource";
/// The topic the tasks write.
pub(crate) const TOPIC: &str = "sim-data";

/// Registers [`CLASS`] for `worker`.
pub(crate) fn register(plugins: &mut Plugins, tracker: &Arc<Tracker>, worker: &str) {
    let (tracker, worker) = (tracker.clone(), worker.to_owned());
    plugins.register_source(CLASS, &["SimSource"], move || {
        Box::new(SimSource {
            tracker: tracker.clone(),
            worker: worker.clone(),
            config: ConfigMap::new(),
            running: None,
        })
    });
}

struct SimSource {
    tracker: Arc<Tracker>,
    worker: String,
    config: ConfigMap,
    running: Option<Running>,
}

#[async_trait::async_trait]
impl Connector for SimSource {
    fn version(&self) -> String {
        "1.0".into()
    }
    fn config_def(&self) -> ConfigDef {
        ConfigDef::new()
    }
    async fn start(
        &mut self,
        config: &ConfigMap,
        _: Arc<dyn ConnectorContext>,
    ) -> connect_api::Result<()> {
        self.config = config.clone();
        let name = config.get("name").cloned().unwrap_or_default();
        self.running = Some(self.tracker.started(&name, &self.worker));
        Ok(())
    }
    async fn task_configs(&mut self, max: usize) -> connect_api::Result<Vec<ConfigMap>> {
        Ok((0..max)
            .map(|i| {
                let mut c = self.config.clone();
                c.insert("sim.task".into(), i.to_string());
                c
            })
            .collect())
    }
    async fn stop(&mut self) -> connect_api::Result<()> {
        self.running = None;
        Ok(())
    }
}

impl SourceConnector for SimSource {
    fn create_task(&self) -> Box<dyn SourceTask> {
        Box::new(SimTask {
            tracker: self.tracker.clone(),
            worker: self.worker.clone(),
            unit: String::new(),
            partition: Arc::new(SourceMap::new()),
            next: 0,
            poll: Duration::ZERO,
            stop: Duration::ZERO,
            running: None,
        })
    }
}

struct SimTask {
    tracker: Arc<Tracker>,
    worker: String,
    unit: String,
    partition: Arc<SourceMap>,
    next: i64,
    poll: Duration,
    stop: Duration,
    running: Option<Running>,
}

fn millis(config: &ConfigMap, key: &str, default: u64) -> Duration {
    Duration::from_millis(
        config
            .get(key)
            .and_then(|v| v.parse().ok())
            .unwrap_or(default),
    )
}

#[async_trait::async_trait]
impl SourceTask for SimTask {
    async fn start(
        &mut self,
        config: &ConfigMap,
        context: Arc<dyn SourceTaskContext>,
    ) -> connect_api::Result<()> {
        let name = config.get("name").cloned().unwrap_or_default();
        let task = config.get("sim.task").cloned().unwrap_or_default();
        self.unit = format!("{name}-{task}");
        self.poll = millis(config, "poll.ms", 500);
        self.stop = millis(config, "stop.ms", 0);
        let mut partition = SourceMap::new();
        partition.insert("task".into(), self.unit.clone().into());
        self.next = context
            .offset_storage_reader()
            .offset(&partition)
            .and_then(|o| o.get("n").and_then(|n| n.as_i64()))
            .map_or(0, |n| n + 1);
        self.partition = Arc::new(partition);
        self.running = Some(self.tracker.started(&self.unit, &self.worker));
        self.tracker.resumed(&self.unit, &self.worker, self.next);
        Ok(())
    }

    async fn poll(&mut self) -> connect_api::Result<Vec<SourceRecord>> {
        tokio::time::sleep(self.poll).await;
        if self.tracker.is_dead(&self.worker) {
            // A dead process writes nothing more.
            return Ok(Vec::new());
        }
        let n = self.next;
        self.next += 1;
        let mut offset = SourceMap::new();
        offset.insert("n".into(), n.into());
        let record = Record::new(TOPIC, Some(Schema::string()), Value::from(n.to_string()))
            .with_key(Some(Schema::string()), Value::from(self.unit.clone()));
        Ok(vec![SourceRecord::new(
            self.partition.clone(),
            offset,
            record,
        )])
    }

    async fn stop(&mut self) -> connect_api::Result<()> {
        if !self.tracker.is_dead(&self.worker) {
            tokio::time::sleep(self.stop).await;
        }
        self.running = None;
        Ok(())
    }
}
