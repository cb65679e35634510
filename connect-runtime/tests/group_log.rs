//! What a sink task says about its consumer group: a WARN when no
//! partitions come for a while (naming the group and the wait), INFO on
//! each assignment. Its own test binary: the log is captured through a
//! process-wide tracing subscriber.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use connect_api::ConfigMap;
use connect_runtime::converters::{ConverterRegistry, TaskConverters};
use connect_runtime::kafka::memory::MemoryKafka;
use connect_runtime::kafka::{NewTopic, Subscription};
use connect_runtime::sink::{SinkPlugins, SinkTaskSettings, WorkerSinkTask};
use connect_runtime::status::{MemoryStatusStore, TargetState, TaskId};
use connect_runtime::worker::WorkerConfig;

/// A sink that takes everything and does nothing.
struct Quiet;

#[async_trait::async_trait]
impl connect_api::SinkTask for Quiet {
    async fn start(
        &mut self,
        _: &ConfigMap,
        _: Arc<dyn connect_api::SinkTaskContext>,
    ) -> connect_api::Result<()> {
        Ok(())
    }
    async fn put(&mut self, _: &[connect_api::SinkRecord]) -> connect_api::Result<()> {
        Ok(())
    }
    async fn stop(&mut self) -> connect_api::Result<()> {
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sink_without_partitions_says_so_and_logs_its_assignment() {
    let captured = Captured::default();
    let writer = captured.clone();
    tracing_subscriber::fmt()
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .init();
    let kafka = MemoryKafka::new();
    let id = TaskId {
        connector: "lonely".into(),
        task: 0,
    };
    let connector = props(&[("connector.class", "CollectingSink"), ("topics", "later")]);
    let worker = WorkerConfig::parse(&props(&[
        (
            "key.converter",
            "org.apache.kafka.connect.storage.StringConverter",
        ),
        (
            "value.converter",
            "org.apache.kafka.connect.storage.StringConverter",
        ),
    ]))
    .unwrap();
    let mut settings = SinkTaskSettings::from_configs(id.clone(), &connector, &worker).unwrap();
    assert_eq!(
        settings.subscription,
        Subscription::Topics(vec!["later".into()])
    );
    settings.assignment_warn_after = Duration::from_millis(300);
    let plugins = SinkPlugins {
        task: Box::new(Quiet),
        task_config: ConfigMap::new(),
        transforms: None,
        converters: TaskConverters::for_connector(
            &ConverterRegistry::with_builtins(),
            &connector,
            worker.originals(),
        )
        .unwrap(),
    };
    let (control, rx) = tokio::sync::watch::channel(TargetState::Started);
    let task = WorkerSinkTask::new(
        settings,
        plugins,
        Arc::new(kafka.clone()),
        Arc::new(MemoryStatusStore::default()),
        rx,
    )
    .unwrap();
    let handle = tokio::spawn(task.run());

    eventually("a WARN naming the group", || {
        !captured.lines_with("no partitions assigned").is_empty()
    })
    .await;
    let warn = &captured.lines_with("no partitions assigned")[0];
    assert!(warn.contains("WARN"), "{warn}");
    assert!(warn.contains("consumer group 'connect-lonely'"), "{warn}");
    assert!(warn.contains("lonely-0"), "the task's id: {warn}");
    assert!(
        captured
            .lines_with("partitions assigned")
            .iter()
            .all(|l| !l.contains("INFO")),
        "no assignment yet"
    );

    kafka.create_topic(&NewTopic::new("later", 2)).unwrap();
    eventually("an INFO line with the assignment", || {
        captured
            .lines_with("partitions assigned")
            .iter()
            .any(|l| l.contains("INFO") && l.contains("later-0") && l.contains("later-1"))
    })
    .await;
    let _ = control.send(TargetState::Stopped);
    handle.await.unwrap().unwrap();
    // One warning only: the next would come a minute later.
    assert_eq!(captured.lines_with("no partitions assigned").len(), 1);
}
