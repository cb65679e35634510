//! A task whose `poll` does not return for longer than `task.stall.warn.ms`
//! still shows RUNNING (nothing failed), so the worker says so elsewhere:
//! a WARN naming the connector, task, call and duration, and a metric
//! (`stalled_seconds`, with the call as a label) that `/ui` marks, both
//! cleared when the call returns.
#![cfg(feature = "prometheus")]

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use common::*;
use connect_api::config::{ConfigDef, ConfigMap};
use connect_api::connector::{Connector, ConnectorContext, SourceConnector};
use connect_api::source::{SourceTask, SourceTaskContext};
use connect_api::{Result, SourceRecord};
use connect_runtime::status::TargetState;
use connect_runtime::worker::{Plugins, Worker, WorkerConfig};

/// A source whose `poll` waits while `stall` is set.
#[derive(Clone)]
struct StallingSource(Arc<AtomicBool>);

#[async_trait]
impl Connector for StallingSource {
    fn version(&self) -> String {
        "1.0".into()
    }
    fn config_def(&self) -> ConfigDef {
        ConfigDef::new()
    }
    async fn start(&mut self, _: &ConfigMap, _: Arc<dyn ConnectorContext>) -> Result<()> {
        Ok(())
    }
    async fn task_configs(&mut self, _max: usize) -> Result<Vec<ConfigMap>> {
        Ok(vec![ConfigMap::new()])
    }
    async fn stop(&mut self) -> Result<()> {
        Ok(())
    }
}

impl SourceConnector for StallingSource {
    fn create_task(&self) -> Box<dyn SourceTask> {
        Box::new(self.clone())
    }
}

#[async_trait]
impl SourceTask for StallingSource {
    async fn start(&mut self, _: &ConfigMap, _: Arc<dyn SourceTaskContext>) -> Result<()> {
        Ok(())
    }
    async fn poll(&mut self) -> Result<Vec<SourceRecord>> {
        while self.0.load(Ordering::SeqCst) {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        Ok(Vec::new())
    }
    async fn stop(&mut self) -> Result<()> {
        Ok(())
    }
}

/// The `stalled_seconds` sample of the task, as `/metrics` renders it.
fn stalled_line(h: &StandaloneHerder) -> String {
    h.worker()
        .metrics()
        .render()
        .lines()
        .find(|l| {
            l.starts_with(
                "kafka_connect_connector_task_metrics_stalled_seconds{connector=\"stuck\"",
            )
        })
        .unwrap_or_default()
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_poll_that_does_not_return_is_warned_about_and_measured_until_it_does() {
    let captured = Captured::default();
    let writer = captured.clone();
    tracing_subscriber::fmt()
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .init();
    let s = setup();
    let stall = Arc::new(AtomicBool::new(true));
    let mut plugins = Plugins::with_builtins();
    let shared = stall.clone();
    plugins.register_source("test.StallingSource", &["StallingSource"], move || {
        Box::new(StallingSource(shared.clone()))
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
        ("task.stall.warn.ms", "300"),
    ]))
    .unwrap();
    let h = StandaloneHerder::new(Worker::new(
        config,
        plugins,
        Arc::new(s.kafka.clone()),
        s.store.clone(),
    ));
    h.create_connector(
        "stuck",
        props(&[("connector.class", "StallingSource")]),
        TargetState::Started,
    )
    .await
    .unwrap();
    eventually("the stall warned about", || {
        captured
            .lines_with("poll has not returned for")
            .iter()
            .any(|l| l.contains("WARN") && l.contains("stuck") && l.contains("task.stall.warn.ms"))
    })
    .await;
    eventually("the stall in /metrics", || {
        let line = stalled_line(&h);
        line.contains("call=\"poll\"") && !line.ends_with(" 0.0")
    })
    .await;
    // Still RUNNING: nothing failed.
    let status = h.connector_status("stuck").await.unwrap();
    assert_eq!(status.tasks[0].state.state, "RUNNING");
    // Once poll returns, the stall is over.
    stall.store(false, Ordering::SeqCst);
    eventually("the stall cleared", || {
        let line = stalled_line(&h);
        line.contains("call=\"none\"") && line.ends_with(" 0.0")
    })
    .await;
    eventually("the return logged", || {
        !captured
            .lines_with("the stalled call returned after")
            .is_empty()
    })
    .await;
    // Warned once per stalled call, not on every look.
    assert_eq!(captured.lines_with("poll has not returned for").len(), 1);
    h.shutdown().await;
}
