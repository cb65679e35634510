//! Connectors that misbehave on purpose, to check that a worker (ours, or
//! one you embed) contains what plugin code can do to it. A
//! [`FaultySource`] or [`FaultySink`] works normally except in the one call
//! its config names (`fault.call`, e.g. `SourceTask::poll`), where it does
//! what `fault.kind` says: `panic`, `hang` (never returns) or `error`
//! (returns a `ConnectError`). The message of a panic or an error names
//! the call, so a test can find it in the unit's trace.
//!
//! ```
//! use connect_runtime::worker::Plugins;
//! use connect_testkit::faulty::{self, FAULTY_CALLS};
//!
//! let mut plugins = Plugins::with_builtins();
//! faulty::register(&mut plugins);
//! assert!(plugins.connector("FaultySource").is_ok());
//! assert!(FAULTY_CALLS.contains(&"SinkTask::put"));
//! ```
//!
//! A source writes `count` records (default 10, `topic` default `faulty`)
//! with source partition `{"faulty": "p"}` and offset `{"n": i}`, then
//! polls nothing; a sink accepts whatever it is given.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock};

use async_trait::async_trait;
use connect_api::config::{ConfigDef, ConfigMap, ConfigReport};
use connect_api::connector::{Connector, ConnectorContext, SinkConnector, SourceConnector};
use connect_api::sink::{SinkTask, SinkTaskContext, TopicPartition, TopicPartitionOffsets};
use connect_api::source::{RecordMetadata, SourceTask, SourceTaskContext};
use connect_api::{
    ConnectError, Record, Result, Schema, SinkRecord, SourceMap, SourceRecord, Value,
};
use connect_runtime::worker::Plugins;

/// The key naming the call that misbehaves.
pub const FAULT_CALL: &str = "fault.call";
/// The key naming what it does: `panic`, `hang` or `error`.
pub const FAULT_KIND: &str = "fault.kind";

/// Every call [`FAULT_CALL`] may name.
pub const FAULTY_CALLS: &[&str] = &[
    "Connector::start",
    "Connector::task_configs",
    "Connector::validate",
    "Connector::stop",
    "SourceTask::start",
    "SourceTask::poll",
    "SourceTask::commit",
    "SourceTask::commit_record",
    "SourceTask::stop",
    "SinkTask::start",
    "SinkTask::open",
    "SinkTask::put",
    "SinkTask::flush",
    "SinkTask::pre_commit",
    "SinkTask::close",
    "SinkTask::stop",
];

/// Register [`FaultySource`] (`FaultySource`) and [`FaultySink`]
/// (`FaultySink`) in `plugins`.
pub fn register(plugins: &mut Plugins) {
    plugins.register_source(
        "connect_testkit.faulty.FaultySource",
        &["FaultySource"],
        || Box::new(FaultySource::default()),
    );
    plugins.register_sink("connect_testkit.faulty.FaultySink", &["FaultySink"], || {
        Box::new(FaultySink::default())
    });
}

/// How many times each connector's fault fired, by connector name and
/// call: proof that the worker made the call.
fn fired() -> &'static Mutex<BTreeMap<(String, String), u64>> {
    static FIRED: OnceLock<Mutex<BTreeMap<(String, String), u64>>> = OnceLock::new();
    FIRED.get_or_init(Default::default)
}

/// How many times the fault of connector `name` (its `name` key) fired in
/// `call`, in this process.
pub fn faults(name: &str, call: &str) -> u64 {
    let fired = fired().lock().unwrap_or_else(|p| p.into_inner());
    fired
        .get(&(name.to_string(), call.to_string()))
        .copied()
        .unwrap_or(0)
}

/// Whether `config` makes `call` misbehave; counts it when it does.
fn fires(config: &ConfigMap, call: &str) -> bool {
    if config.get(FAULT_CALL).map(|c| c.trim()) != Some(call) {
        return false;
    }
    let name = config.get("name").cloned().unwrap_or_default();
    let mut fired = fired().lock().unwrap_or_else(|p| p.into_inner());
    *fired.entry((name, call.to_string())).or_default() += 1;
    true
}

/// Misbehave in `call` if `config` says so; otherwise return at once.
async fn maybe_fault(config: &ConfigMap, call: &str) -> Result<()> {
    if !fires(config, call) {
        return Ok(());
    }
    match config.get(FAULT_KIND).map_or("panic", |k| k.trim()) {
        "hang" => std::future::pending().await,
        "error" => Err(ConnectError::other(format!(
            "faulty: {call} failed on purpose"
        ))),
        _ => panic!("faulty: {call} panicked on purpose"),
    }
}

/// [`maybe_fault`] for a synchronous call (it cannot hang: it panics
/// instead of blocking a runtime thread).
fn maybe_fault_sync(config: &ConfigMap, call: &str) -> Result<()> {
    if !fires(config, call) {
        return Ok(());
    }
    match config.get(FAULT_KIND).map_or("panic", |k| k.trim()) {
        "error" => Err(ConnectError::other(format!(
            "faulty: {call} failed on purpose"
        ))),
        _ => panic!("faulty: {call} panicked on purpose"),
    }
}

/// The connector side, shared by both kinds.
#[derive(Default, Clone)]
struct Instance(ConfigMap);

impl Instance {
    fn validate(config: &ConfigMap) -> Vec<ConfigReport> {
        match maybe_fault_sync(config, "Connector::validate") {
            Ok(()) => Vec::new(),
            Err(e) => {
                let mut report = ConfigReport::new(FAULT_CALL);
                report.errors.push(e.to_string());
                vec![report]
            }
        }
    }
    async fn start(&mut self, config: &ConfigMap) -> Result<()> {
        self.0 = config.clone();
        maybe_fault(config, "Connector::start").await
    }
    async fn task_configs(&mut self) -> Result<Vec<ConfigMap>> {
        maybe_fault(&self.0, "Connector::task_configs").await?;
        Ok(vec![self.0.clone()])
    }
    async fn stop(&mut self) -> Result<()> {
        maybe_fault(&self.0, "Connector::stop").await
    }
}

/// A source connector that misbehaves where its config says (see the
/// [module docs](self)).
#[derive(Default, Clone)]
pub struct FaultySource(Instance);

/// A sink connector that misbehaves where its config says (see the
/// [module docs](self)).
#[derive(Default, Clone)]
pub struct FaultySink(Instance);

macro_rules! connector_via_instance {
    ($ty:ty) => {
        #[async_trait]
        impl Connector for $ty {
            fn version(&self) -> String {
                "1.0".into()
            }
            fn config_def(&self) -> ConfigDef {
                ConfigDef::new()
            }
            fn validate(&self, config: &ConfigMap) -> Vec<ConfigReport> {
                Instance::validate(config)
            }
            async fn start(
                &mut self,
                config: &ConfigMap,
                _: Arc<dyn ConnectorContext>,
            ) -> Result<()> {
                self.0.start(config).await
            }
            async fn task_configs(&mut self, _max: usize) -> Result<Vec<ConfigMap>> {
                self.0.task_configs().await
            }
            async fn stop(&mut self) -> Result<()> {
                self.0.stop().await
            }
        }
    };
}

connector_via_instance!(FaultySource);
connector_via_instance!(FaultySink);

impl SourceConnector for FaultySource {
    fn create_task(&self) -> Box<dyn SourceTask> {
        Box::new(FaultySourceTask::default())
    }
}

impl SinkConnector for FaultySink {
    fn create_task(&self) -> Box<dyn SinkTask> {
        Box::new(FaultySinkTask::default())
    }
}

#[derive(Default)]
struct FaultySourceTask {
    config: ConfigMap,
    next: u64,
    count: u64,
    topic: String,
}

#[async_trait]
impl SourceTask for FaultySourceTask {
    async fn start(&mut self, config: &ConfigMap, _: Arc<dyn SourceTaskContext>) -> Result<()> {
        self.config = config.clone();
        self.count = config
            .get("count")
            .and_then(|c| c.parse().ok())
            .unwrap_or(10);
        self.topic = config
            .get("topic")
            .map_or("faulty", |t| t.as_str())
            .to_string();
        maybe_fault(config, "SourceTask::start").await
    }
    async fn poll(&mut self) -> Result<Vec<SourceRecord>> {
        // One good record first, so acknowledged work exists when it fails.
        if self.next > 0 {
            maybe_fault(&self.config, "SourceTask::poll").await?;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        if self.next >= self.count {
            return Ok(Vec::new());
        }
        let n = self.next;
        self.next += 1;
        let mut partition = SourceMap::new();
        partition.insert("faulty".into(), "p".into());
        let mut offset = SourceMap::new();
        offset.insert("n".into(), n.into());
        let record = Record::new(
            self.topic.as_str(),
            Some(Schema::string()),
            Value::from(format!("faulty-{n}")),
        );
        let partition = Arc::new(partition);
        Ok(vec![SourceRecord::new(partition, offset, record)])
    }
    async fn commit(&mut self) -> Result<()> {
        maybe_fault(&self.config, "SourceTask::commit").await
    }
    async fn commit_record(&mut self, _: &SourceRecord, _: Option<&RecordMetadata>) -> Result<()> {
        maybe_fault(&self.config, "SourceTask::commit_record").await
    }
    async fn stop(&mut self) -> Result<()> {
        maybe_fault(&self.config, "SourceTask::stop").await
    }
}

#[derive(Default)]
struct FaultySinkTask {
    config: ConfigMap,
}

#[async_trait]
impl SinkTask for FaultySinkTask {
    async fn start(&mut self, config: &ConfigMap, _: Arc<dyn SinkTaskContext>) -> Result<()> {
        self.config = config.clone();
        maybe_fault(config, "SinkTask::start").await
    }
    async fn open(&mut self, _: &[TopicPartition]) -> Result<()> {
        maybe_fault(&self.config, "SinkTask::open").await
    }
    async fn put(&mut self, records: &[SinkRecord]) -> Result<()> {
        if !records.is_empty() {
            maybe_fault(&self.config, "SinkTask::put").await?;
        }
        Ok(())
    }
    async fn flush(&mut self, _: &TopicPartitionOffsets) -> Result<()> {
        maybe_fault(&self.config, "SinkTask::flush").await
    }
    async fn pre_commit(
        &mut self,
        offsets: TopicPartitionOffsets,
    ) -> Result<TopicPartitionOffsets> {
        maybe_fault(&self.config, "SinkTask::pre_commit").await?;
        self.flush(&offsets).await?;
        Ok(offsets)
    }
    async fn close(&mut self, _: &[TopicPartition]) -> Result<()> {
        maybe_fault(&self.config, "SinkTask::close").await
    }
    async fn stop(&mut self) -> Result<()> {
        maybe_fault(&self.config, "SinkTask::stop").await
    }
}
