//! Plugin code may panic at any call. A panic is a failure of its unit, as
//! Kafka treats any `Throwable`: the unit shows FAILED with the panic's
//! message and place, the worker keeps serving, and other connectors run on.

mod common;

use std::sync::Arc;

use async_trait::async_trait;
use common::*;
use connect_api::config::{ConfigDef, ConfigMap, ConfigReport};
use connect_api::connector::{Connector, ConnectorContext, SinkConnector, SourceConnector};
use connect_api::sink::{SinkTask, SinkTaskContext};
use connect_api::source::{SourceTask, SourceTaskContext};
use connect_api::{Record, Result, Schema, SinkRecord, SourceMap, SourceRecord, Value};
use connect_runtime::status::TargetState;
use connect_runtime::worker::{Plugins, Worker, WorkerConfig};

/// A connector (source or sink) that panics in the call its `panic.in`
/// key names: `start`, `task_configs`, `validate`, `poll`, `put`, `stop`.
#[derive(Default, Clone)]
struct Panicky(ConfigMap);

impl Panicky {
    fn panics_in(config: &ConfigMap, call: &str) -> bool {
        config.get("panic.in").is_some_and(|c| c == call)
    }
}

#[async_trait]
impl Connector for Panicky {
    fn version(&self) -> String {
        "1.0".into()
    }
    fn config_def(&self) -> ConfigDef {
        ConfigDef::new()
    }
    fn validate(&self, config: &ConfigMap) -> Vec<ConfigReport> {
        if Self::panics_in(config, "validate") {
            panic!("validate exploded");
        }
        Vec::new()
    }
    async fn start(&mut self, config: &ConfigMap, _: Arc<dyn ConnectorContext>) -> Result<()> {
        if Self::panics_in(config, "start") {
            panic!("start exploded");
        }
        self.0 = config.clone();
        Ok(())
    }
    async fn task_configs(&mut self, _max: usize) -> Result<Vec<ConfigMap>> {
        if Self::panics_in(&self.0, "task_configs") {
            panic!("task_configs exploded");
        }
        Ok(vec![self.0.clone()])
    }
    async fn stop(&mut self) -> Result<()> {
        Ok(())
    }
}

impl SourceConnector for Panicky {
    fn create_task(&self) -> Box<dyn SourceTask> {
        Box::new(PanickyTask::default())
    }
}

impl SinkConnector for Panicky {
    fn create_task(&self) -> Box<dyn SinkTask> {
        Box::new(PanickyTask::default())
    }
}

#[derive(Default)]
struct PanickyTask {
    config: ConfigMap,
    polls: u32,
}

#[async_trait]
impl SourceTask for PanickyTask {
    async fn start(&mut self, config: &ConfigMap, _: Arc<dyn SourceTaskContext>) -> Result<()> {
        self.config = config.clone();
        Ok(())
    }
    async fn poll(&mut self) -> Result<Vec<SourceRecord>> {
        self.polls += 1;
        if Panicky::panics_in(&self.config, "poll") && self.polls > 1 {
            let empty: Vec<u8> = Vec::new();
            let _ = empty[self.polls as usize]; // index out of bounds
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        let record = Record::new("out", Some(Schema::string()), Value::from("x"));
        Ok(vec![SourceRecord::new(
            Arc::new(SourceMap::new()),
            SourceMap::new(),
            record,
        )])
    }
    async fn stop(&mut self) -> Result<()> {
        if Panicky::panics_in(&self.config, "stop") {
            panic!("stop exploded");
        }
        Ok(())
    }
}

#[async_trait]
impl SinkTask for PanickyTask {
    async fn start(&mut self, config: &ConfigMap, _: Arc<dyn SinkTaskContext>) -> Result<()> {
        self.config = config.clone();
        Ok(())
    }
    async fn put(&mut self, records: &[SinkRecord]) -> Result<()> {
        if !records.is_empty() && Panicky::panics_in(&self.config, "put") {
            panic!("put exploded on {} records", records.len());
        }
        Ok(())
    }
    async fn stop(&mut self) -> Result<()> {
        Ok(())
    }
}

fn herder(s: &Setup) -> StandaloneHerder {
    let mut plugins = Plugins::with_builtins();
    plugins.register_source("test.PanickySource", &["PanickySource"], || {
        Box::new(Panicky::default())
    });
    plugins.register_sink("test.PanickySink", &["PanickySink"], || {
        Box::new(Panicky::default())
    });
    plugins.register_source("test.PassThroughSource", &["PassThroughSource"], || {
        Box::new(PassThroughSource::default())
    });
    let config = WorkerConfig::parse(&props(&[
        (
            "key.converter",
            "org.apache.kafka.connect.storage.StringConverter",
        ),
        (
            "value.converter",
            "org.apache.kafka.connect.storage.StringConverter",
        ),
        ("offset.flush.interval.ms", "50"),
    ]))
    .unwrap();
    StandaloneHerder::new(Worker::new(
        config,
        plugins,
        Arc::new(s.kafka.clone()),
        s.store.clone(),
    ))
}

async fn wait_for_task_failed(h: &StandaloneHerder, name: &str) -> String {
    let mut trace = String::new();
    eventually(&format!("task of {name} FAILED"), || {
        let status = futures::executor::block_on(h.connector_status(name)).unwrap();
        let task = &status.tasks[0].state;
        trace = task.trace.clone().unwrap_or_default();
        task.state == "FAILED"
    })
    .await;
    trace
}

/// A healthy connector beside the broken ones keeps running.
async fn healthy_beside(h: &StandaloneHerder, s: &Setup) {
    h.create_connector(
        "healthy",
        props(&[
            ("connector.class", "PassThroughSource"),
            ("count", "5"),
            ("topic", "out"),
        ]),
        TargetState::Started,
    )
    .await
    .unwrap();
    eventually("the healthy connector's 5 records", || {
        topic_values(&s.kafka, "out")
            .iter()
            .filter(|v| v.starts_with('v'))
            .count()
            >= 5
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_poll_fails_the_task_with_its_message_and_place() {
    let s = setup();
    let h = herder(&s);
    h.create_connector(
        "src",
        props(&[("connector.class", "PanickySource"), ("panic.in", "poll")]),
        TargetState::Started,
    )
    .await
    .unwrap();
    let trace = wait_for_task_failed(&h, "src").await;
    assert!(trace.contains("panicked"), "{trace}");
    assert!(trace.contains("index out of bounds"), "{trace}");
    assert!(trace.contains("plugin_panics.rs:"), "{trace}");
    #[cfg(feature = "prometheus")]
    assert!(h.worker().metrics().render().contains("connector=\"src\""));
    healthy_beside(&h, &s).await;
    // A restart runs the task again, and it fails again the same way.
    h.restart_task("src", 0).await.unwrap();
    wait_for_task_failed(&h, "src").await;
    h.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_put_fails_the_sink_task() {
    let s = setup();
    let h = herder(&s);
    h.create_connector(
        "sink",
        props(&[
            ("connector.class", "PanickySink"),
            ("topics", "out"),
            ("panic.in", "put"),
        ]),
        TargetState::Started,
    )
    .await
    .unwrap();
    healthy_beside(&h, &s).await;
    let trace = wait_for_task_failed(&h, "sink").await;
    assert!(trace.contains("put exploded on"), "{trace}");
    h.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_connector_start_or_task_configs_fails_the_connector() {
    let s = setup();
    let h = herder(&s);
    for (name, call) in [("a", "start"), ("b", "task_configs")] {
        let info = h
            .create_connector(
                name,
                props(&[("connector.class", "PanickySource"), ("panic.in", call)]),
                TargetState::Started,
            )
            .await
            .unwrap();
        assert!(info.tasks.is_empty());
        let status = h.connector_status(name).await.unwrap();
        assert_eq!(status.connector.state, "FAILED", "{name}");
        let trace = status.connector.trace.unwrap_or_default();
        assert!(trace.contains(&format!("{call} exploded")), "{trace}");
    }
    healthy_beside(&h, &s).await;
    h.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_validate_is_an_error_of_the_request() {
    let s = setup();
    let h = herder(&s);
    let config = props(&[
        ("connector.class", "PanickySource"),
        ("panic.in", "validate"),
    ]);
    let e = h.validate(&config).unwrap_err();
    assert!(e.to_string().contains("validate exploded"), "{e}");
    let e = h
        .create_connector("v", config, TargetState::Started)
        .await
        .unwrap_err();
    assert!(e.to_string().contains("validate exploded"), "{e}");
    assert!(h.connector_names().await.is_empty());
    healthy_beside(&h, &s).await;
    h.shutdown().await;
}

/// A guard rather than a failing-first test: before containment a panic
/// here only ended the task's own spawned future, after its work.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_task_stop_does_not_stop_the_worker() {
    let s = setup();
    let h = herder(&s);
    h.create_connector(
        "src",
        props(&[("connector.class", "PanickySource"), ("panic.in", "stop")]),
        TargetState::Started,
    )
    .await
    .unwrap();
    eventually("records from src", || {
        !topic_values(&s.kafka, "out").is_empty()
    })
    .await;
    h.delete_connector("src").await.unwrap();
    healthy_beside(&h, &s).await;
    h.shutdown().await;
}
