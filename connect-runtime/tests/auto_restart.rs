//! Automatic restarts (`auto.restart.*`, ours, off by default): a task
//! that fails is restarted after a backoff until it runs, the status says
//! which attempt comes when, the restarts give up after the configured
//! number with a final FAILED that says so, and nothing restarts unless
//! asked.

mod common;

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use common::*;
use connect_api::config::{ConfigDef, ConfigMap};
use connect_api::connector::{Connector, ConnectorContext, SourceConnector};
use connect_api::source::{SourceTask, SourceTaskContext};
use connect_api::{ConnectError, Record, Result, Schema, SourceMap, SourceRecord, Value};
use connect_runtime::status::TargetState;
use connect_runtime::worker::{Plugins, Worker, WorkerConfig};

/// A source whose tasks fail their first poll while `failures` is above
/// zero (each failure takes one), then write one record each.
#[derive(Clone)]
struct FlakySource {
    failures: Arc<AtomicU32>,
    config: ConfigMap,
}

#[async_trait]
impl Connector for FlakySource {
    fn version(&self) -> String {
        "1.0".into()
    }
    fn config_def(&self) -> ConfigDef {
        ConfigDef::new()
    }
    async fn start(&mut self, config: &ConfigMap, _: Arc<dyn ConnectorContext>) -> Result<()> {
        self.config = config.clone();
        Ok(())
    }
    async fn task_configs(&mut self, _max: usize) -> Result<Vec<ConfigMap>> {
        Ok(vec![self.config.clone()])
    }
    async fn stop(&mut self) -> Result<()> {
        Ok(())
    }
}

impl SourceConnector for FlakySource {
    fn create_task(&self) -> Box<dyn SourceTask> {
        Box::new(FlakyTask {
            failures: self.failures.clone(),
            sent: false,
        })
    }
}

struct FlakyTask {
    failures: Arc<AtomicU32>,
    sent: bool,
}

#[async_trait]
impl SourceTask for FlakyTask {
    async fn start(&mut self, _: &ConfigMap, _: Arc<dyn SourceTaskContext>) -> Result<()> {
        Ok(())
    }
    async fn poll(&mut self) -> Result<Vec<SourceRecord>> {
        let left = self.failures.load(Ordering::SeqCst);
        if left > 0 {
            self.failures.store(left - 1, Ordering::SeqCst);
            return Err(ConnectError::other("flaky: the system behind it is down"));
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        if std::mem::replace(&mut self.sent, true) {
            return Ok(Vec::new());
        }
        let record = Record::new("out", Some(Schema::string()), Value::from("recovered"));
        Ok(vec![SourceRecord::new(
            Arc::new(SourceMap::new()),
            SourceMap::new(),
            record,
        )])
    }
    async fn stop(&mut self) -> Result<()> {
        Ok(())
    }
}

fn herder(s: &Setup, failures: u32, worker_keys: &[(&str, &str)]) -> StandaloneHerder {
    let failures = Arc::new(AtomicU32::new(failures));
    let mut plugins = Plugins::with_builtins();
    plugins.register_source("test.FlakySource", &["FlakySource"], move || {
        Box::new(FlakySource {
            failures: failures.clone(),
            config: ConfigMap::new(),
        })
    });
    let mut worker_props = props(&[
        (
            "key.converter",
            "org.apache.kafka.connect.storage.StringConverter",
        ),
        (
            "value.converter",
            "org.apache.kafka.connect.storage.StringConverter",
        ),
        ("offset.flush.interval.ms", "50"),
    ]);
    worker_props.extend(props(worker_keys));
    let config = WorkerConfig::parse(&worker_props).unwrap();
    StandaloneHerder::new(Worker::new(
        config,
        plugins,
        Arc::new(s.kafka.clone()),
        s.store.clone(),
    ))
}

fn task_state(h: &StandaloneHerder) -> (String, String) {
    let status = futures::executor::block_on(h.connector_status("flaky")).unwrap();
    let task = &status.tasks[0].state;
    (task.state.clone(), task.trace.clone().unwrap_or_default())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flaky_task_is_restarted_until_it_runs() {
    let s = setup();
    let h = herder(
        &s,
        2,
        &[
            ("auto.restart.enable", "true"),
            ("auto.restart.backoff.ms", "100"),
        ],
    );
    h.create_connector(
        "flaky",
        props(&[("connector.class", "FlakySource")]),
        TargetState::Started,
    )
    .await
    .unwrap();
    // The pending restart shows in the trace, after the failure itself.
    let mut announced = false;
    eventually("the record written after two restarts", || {
        let (_, trace) = task_state(&h);
        announced |= trace.contains("flaky: the system behind it is down")
            && trace.contains("[auto restart] restart ")
            && trace.contains(" of 10 in ");
        topic_values(&s.kafka, "out").contains(&"recovered".to_string())
    })
    .await;
    assert!(announced, "the status never said a restart was coming");
    eventually("the task RUNNING", || task_state(&h).0 == "RUNNING").await;
    let (attempts, gave_up) = h.worker().metrics().auto_restarts();
    assert_eq!((attempts, gave_up), (2, 0));
    h.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restarts_give_up_after_max_attempts_with_a_final_status() {
    let s = setup();
    let h = herder(&s, u32::MAX, &[("auto.restart.backoff.ms", "50")]);
    // Enabled for this connector only, by its own config.
    h.create_connector(
        "flaky",
        props(&[
            ("connector.class", "FlakySource"),
            ("auto.restart.enable", "true"),
            ("auto.restart.max.attempts", "2"),
        ]),
        TargetState::Started,
    )
    .await
    .unwrap();
    eventually("the restarts to give up", || {
        let (state, trace) = task_state(&h);
        state == "FAILED" && trace.contains("[auto restart] gave up after 2 restarts")
    })
    .await;
    assert_eq!(h.worker().metrics().auto_restarts(), (2, 1));
    h.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_policy_a_failed_task_stays_failed() {
    let s = setup();
    let h = herder(&s, 1, &[("auto.restart.backoff.ms", "0")]);
    h.create_connector(
        "flaky",
        props(&[("connector.class", "FlakySource")]),
        TargetState::Started,
    )
    .await
    .unwrap();
    eventually("the task FAILED", || task_state(&h).0 == "FAILED").await;
    // A healthy connector created afterwards runs: the loop had turns.
    h.create_connector(
        "healthy",
        props(&[("connector.class", "FlakySource")]),
        TargetState::Started,
    )
    .await
    .unwrap();
    eventually("the healthy connector's record", || {
        topic_values(&s.kafka, "out").contains(&"recovered".to_string())
    })
    .await;
    let (state, trace) = task_state(&h);
    assert_eq!(state, "FAILED");
    assert!(!trace.contains("[auto restart]"), "{trace}");
    assert_eq!(h.worker().metrics().auto_restarts(), (0, 0));
    h.shutdown().await;
}
