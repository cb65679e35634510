//! The worker as the unit runner both herders drive: connector instances
//! and tasks started one by one with configs kept elsewhere.

mod common;

use std::sync::Arc;

use common::*;
use connect_runtime::status::{MemoryStatusStore, State, StatusStore, TargetState, TaskId};
use connect_runtime::worker::{RunningUnits, Worker};

fn runner(s: &Setup, statuses: Arc<MemoryStatusStore>) -> Worker {
    runner_with(
        Arc::new(s.kafka.clone()),
        s.store.clone(),
        statuses,
        &s.collected,
        &[],
    )
}

fn id(connector: &str, task: u32) -> TaskId {
    TaskId {
        connector: connector.into(),
        task,
    }
}

/// A task runs on a worker that does not run its connector, from the task
/// config it is given.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_runs_without_its_connector_instance() {
    let s = setup();
    let statuses = Arc::new(MemoryStatusStore::default());
    let w = runner(&s, statuses.clone());
    let connector = props(&[
        ("connector.class", "PassThroughSource"),
        ("count", "5"),
        ("topic", "out"),
    ]);
    // What the connector's owner elsewhere generated for task 0.
    let task = props(&[("count", "5"), ("topic", "out")]);
    w.start_task("src", 0, connector.clone(), &task, TargetState::Started)
        .await
        .unwrap();
    eventually("5 records written by the task", || {
        topic_values(&s.kafka, "out").len() == 5
    })
    .await;
    let RunningUnits {
        connectors: instances,
        tasks,
    } = w.running_units().await;
    assert!(instances.is_empty(), "{instances:?}");
    assert_eq!(tasks.into_iter().collect::<Vec<_>>(), [id("src", 0)]);
    assert_eq!(statuses.task(&id("src", 0)).0, State::Running);

    w.stop_tasks(&[id("src", 0)]).await;
    let RunningUnits {
        connectors: instances,
        tasks,
    } = w.running_units().await;
    assert!(instances.is_empty() && tasks.is_empty());
    // Stopped cleanly: no status says it still runs here (review F15).
    assert_eq!(statuses.task(&id("src", 0)).0, State::Unassigned);
    eventually("the task's offset stored at its stop", || {
        stored(&s.store, "src") == Some(4)
    })
    .await;
}

/// The connector instance gives its task configs to the caller, and a
/// reconfiguration request goes to the route the herder set instead of
/// being handled by the worker.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connector_reports_task_configs_and_routes_reconfiguration() {
    let s = setup();
    let w = runner(&s, Arc::new(MemoryStatusStore::default()));
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    w.route_reconfiguration(tx);
    let connector = props(&[
        ("connector.class", "PassThroughSource"),
        ("count", "3"),
        ("topic", "out"),
        ("tasks.max", "1"),
        ("reconfigure.on.start", "true"),
    ]);
    let configs = w
        .start_connector("src", connector.clone(), TargetState::Started)
        .await
        .expect("started");
    assert_eq!(configs.len(), 1);
    assert_eq!(
        w.connector_task_configs("src").await.unwrap(),
        Some(configs.clone())
    );
    // Stopped: no tasks, and the instance does not run.
    let stopped = w
        .start_connector("src", connector, TargetState::Stopped)
        .await;
    assert_eq!(stopped, Some(Vec::new()));
    assert_eq!(w.connector_task_configs("src").await.unwrap(), None);
    let routed = tokio::time::timeout(std::time::Duration::from_secs(30), rx.recv()).await;
    assert_eq!(routed.ok().flatten().as_deref(), Some("src"));
}

/// An unknown class fails the connector with the reason, and nothing runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_class_fails_the_connector() {
    let s = setup();
    let statuses = Arc::new(MemoryStatusStore::default());
    let w = runner(&s, statuses.clone());
    let got = w
        .start_connector(
            "x",
            props(&[("connector.class", "NoSuchConnector")]),
            TargetState::Started,
        )
        .await;
    assert_eq!(got, None);
    let (state, trace) = statuses.connector("x");
    assert_eq!(state, State::Failed);
    assert!(trace.unwrap_or_default().contains("NoSuchConnector"));
    let RunningUnits {
        connectors: instances,
        tasks,
    } = w.running_units().await;
    assert!(instances.is_empty() && tasks.is_empty());
}

/// An exactly-once source naming an offsets topic of its own commits its
/// offsets there; a worker that cannot open that topic (no
/// `set_offset_topics`, as an embedded worker without distributed mode)
/// refuses to start the task, naming the key, rather than write offsets it
/// would never read back. With the topics set, the task runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exactly_once_task_with_its_own_offsets_topic_needs_a_worker_that_can_open_it() {
    let s = setup();
    let statuses = Arc::new(MemoryStatusStore::default());
    let w = runner_with(
        Arc::new(s.kafka.clone()),
        s.store.clone(),
        statuses,
        &s.collected,
        &[("exactly.once.source.support", "enabled")],
    );
    let connector = props(&[
        ("connector.class", "PassThroughSource"),
        ("count", "5"),
        ("topic", "out"),
        ("offsets.storage.topic", "src-offsets"),
    ]);
    let task = props(&[("count", "5"), ("topic", "out")]);
    let refused = w
        .start_task("src", 0, connector.clone(), &task, TargetState::Started)
        .await
        .expect_err("no offset topics on this worker");
    assert!(
        refused.to_string().contains("offsets.storage.topic"),
        "{refused}"
    );

    w.set_offset_topics(Arc::new(connect_runtime::offsets::KafkaOffsetTopics::new(
        Arc::new(s.kafka.clone()),
        connect_runtime::kafka::ClientConfig::new(),
        1,
        1,
        std::time::Duration::from_secs(10),
    )));
    w.start_task("src", 0, connector, &task, TargetState::Started)
        .await
        .unwrap();
    eventually("5 records written by the task", || {
        topic_values(&s.kafka, "out").len() == 5
    })
    .await;
    w.stop_tasks(&[id("src", 0)]).await;
}
