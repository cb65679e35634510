//! A source task that fails still commits the offsets of the records
//! Kafka acknowledged (Kafka's final offset commit of a failed task), so a
//! restart resumes after them: nothing is sent twice. The flush interval is
//! an hour, so only that final commit can explain a stored offset.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use common::*;
use connect_api::config::{ConfigDef, ConfigMap};
use connect_api::connector::{Connector, ConnectorContext, SourceConnector};
use connect_api::source::{SourceTask, SourceTaskContext};
use connect_api::{ConnectError, Record, Result, Schema, SourceMap, SourceRecord, Value};
use connect_runtime::status::TargetState;
use connect_runtime::worker::{Plugins, Worker, WorkerConfig};

/// Records of the first run (all acknowledged before the task fails).
const FIRST_RUN: i64 = 10;
/// Records in all, the rest sent by the restarted task.
const TOTAL: i64 = 25;

/// Where the failure of one connector's task stands.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Trigger {
    /// The task waits at `fail.at` for the test.
    Armed,
    /// The test asks the task to fail at its next check.
    Fire,
    /// The task failed once; later runs go on.
    Spent,
}

static TRIGGERS: Mutex<Vec<(String, Trigger)>> = Mutex::new(Vec::new());

fn trigger(name: &str) -> Trigger {
    TRIGGERS
        .lock()
        .unwrap()
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, t)| *t)
        .unwrap_or(Trigger::Armed)
}

fn set_trigger(name: &str, to: Trigger) {
    let mut triggers = TRIGGERS.lock().unwrap();
    match triggers.iter_mut().find(|(n, _)| n == name) {
        Some((_, t)) => *t = to,
        None => triggers.push((name.to_string(), to)),
    }
}

/// Emits "v0".."v{TOTAL-1}" (source offset `{"n": i}`), resuming after the
/// stored offset. Once `FIRST_RUN` records are out, its `poll` waits for
/// the test's trigger, then fails as `fail.with` says (`error` or `panic`),
/// once per connector.
#[derive(Default)]
struct FailingOnceTask {
    name: String,
    fail_with: String,
    next: i64,
}

#[async_trait]
impl SourceTask for FailingOnceTask {
    async fn start(&mut self, config: &ConfigMap, ctx: Arc<dyn SourceTaskContext>) -> Result<()> {
        self.name = config.get("name").cloned().unwrap_or_default();
        self.fail_with = config.get("fail.with").cloned().unwrap_or_default();
        if let Some(o) = ctx.offset_storage_reader().offset(&partition()) {
            self.next = o["n"].as_i64().unwrap_or(-1) + 1;
        }
        Ok(())
    }

    async fn poll(&mut self) -> Result<Vec<SourceRecord>> {
        if self.next >= FIRST_RUN {
            loop {
                match trigger(&self.name) {
                    Trigger::Armed => tokio::time::sleep(Duration::from_millis(5)).await,
                    Trigger::Fire => {
                        set_trigger(&self.name, Trigger::Spent);
                        if self.fail_with == "panic" {
                            panic!("poll exploded after {} records", self.next);
                        }
                        return Err(ConnectError::other("the source went away"));
                    }
                    Trigger::Spent => break,
                }
            }
        }
        if self.next >= TOTAL {
            tokio::time::sleep(Duration::from_millis(20)).await;
            return Ok(vec![]);
        }
        // Never past FIRST_RUN in the first run: the failure comes after
        // exactly those records.
        let limit = if self.next < FIRST_RUN {
            FIRST_RUN
        } else {
            TOTAL
        };
        let end = (self.next + 4).min(limit);
        let batch = (self.next..end)
            .map(|n| {
                let mut offset = SourceMap::new();
                offset.insert("n".into(), n.into());
                let value = Value::from(format!("v{n}"));
                let record = Record::new("out", Some(Schema::string()), value);
                SourceRecord::new(partition(), offset, record)
            })
            .collect();
        self.next = end;
        Ok(batch)
    }

    async fn stop(&mut self) -> Result<()> {
        Ok(())
    }
}

#[derive(Default)]
struct FailingOnceSource(ConfigMap);

#[async_trait]
impl Connector for FailingOnceSource {
    fn version(&self) -> String {
        "1.0".into()
    }
    fn config_def(&self) -> ConfigDef {
        ConfigDef::new()
    }
    async fn start(&mut self, config: &ConfigMap, _: Arc<dyn ConnectorContext>) -> Result<()> {
        self.0 = config.clone();
        Ok(())
    }
    async fn task_configs(&mut self, _max: usize) -> Result<Vec<ConfigMap>> {
        Ok(vec![self.0.clone()])
    }
    async fn stop(&mut self) -> Result<()> {
        Ok(())
    }
}

impl SourceConnector for FailingOnceSource {
    fn create_task(&self) -> Box<dyn SourceTask> {
        Box::new(FailingOnceTask::default())
    }
}

fn herder(s: &Setup) -> StandaloneHerder {
    let mut plugins = Plugins::with_builtins();
    plugins.register_source("test.FailingOnceSource", &["FailingOnceSource"], || {
        Box::new(FailingOnceSource::default())
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
        // No periodic commit during the test: only the final one.
        ("offset.flush.interval.ms", "3600000"),
    ]))
    .unwrap();
    StandaloneHerder::new(Worker::new(
        config,
        plugins,
        Arc::new(s.kafka.clone()),
        s.store.clone(),
    ))
}

async fn task_state(h: &StandaloneHerder, name: &str) -> (String, String) {
    let status = h.connector_status(name).await.unwrap();
    let task = &status.tasks[0].state;
    (task.state.clone(), task.trace.clone().unwrap_or_default())
}

/// Run the first `FIRST_RUN` records, fail the task as `fail_with` says,
/// check the stored offset, restart and check nothing is sent twice;
/// returns the failed task's trace.
async fn fails_then_resumes(fail_with: &str) -> String {
    let s = setup();
    let h = herder(&s);
    let name = format!("src-{fail_with}");
    h.create_connector(
        &name,
        props(&[
            ("connector.class", "FailingOnceSource"),
            ("fail.with", fail_with),
        ]),
        TargetState::Started,
    )
    .await
    .unwrap();
    // In the topic means acknowledged by Kafka.
    eventually("the first run's records in the topic", || {
        topic_values(&s.kafka, "out").len() == FIRST_RUN as usize
    })
    .await;
    assert_eq!(stored(&s.store, &name), None, "no periodic commit yet");
    set_trigger(&name, Trigger::Fire);
    let mut trace = String::new();
    eventually("the task FAILED", || {
        let (state, t) = futures::executor::block_on(task_state(&h, &name));
        trace = t;
        state == "FAILED"
    })
    .await;
    // FAILED is reported after the final commit.
    assert_eq!(
        stored(&s.store, &name),
        Some(FIRST_RUN - 1),
        "the offset of the last acknowledged record is stored"
    );
    h.restart_task(&name, 0).await.unwrap();
    eventually("every record in the topic", || {
        topic_values(&s.kafka, "out").len() >= TOTAL as usize
    })
    .await;
    let expected: Vec<String> = (0..TOTAL).map(|n| format!("v{n}")).collect();
    assert_eq!(
        topic_values(&s.kafka, "out"),
        expected,
        "the restart resumed after the stored offset: no duplicates"
    );
    assert_eq!(task_state(&h, &name).await.0, "RUNNING");
    h.shutdown().await;
    trace
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_poll_commits_the_acknowledged_offsets_before_failing() {
    let trace = fails_then_resumes("error").await;
    assert!(trace.contains("the source went away"), "{trace}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_poll_commits_the_acknowledged_offsets_before_failing() {
    let trace = fails_then_resumes("panic").await;
    assert!(trace.contains("poll exploded after 10 records"), "{trace}");
}
