//! Plugin code may hang at any call. A connector whose `start`,
//! `task_configs` or `stop` hangs holds up only itself: other connectors
//! are created and run, REST reads answer, and a start that hangs past
//! `connector.start.timeout.ms` leaves the connector FAILED saying so.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use connect_runtime::status::TargetState;

fn herder_with(s: &Setup, start_timeout_ms: &str) -> StandaloneHerder {
    worker_with(
        Arc::new(s.kafka.clone()),
        s.store.clone(),
        &s.collected,
        &[
            ("connector.start.timeout.ms", start_timeout_ms),
            ("task.shutdown.graceful.timeout.ms", "500"),
        ],
    )
}

fn healthy() -> connect_api::ConfigMap {
    props(&[
        ("connector.class", "PassThroughSource"),
        ("count", "3"),
        ("topic", "out"),
    ])
}

fn hanging_in(call: &str) -> connect_api::ConfigMap {
    props(&[
        ("connector.class", "PassThroughSource"),
        ("count", "3"),
        ("topic", "out"),
        ("hang.in", call),
    ])
}

/// Start `stuck` hanging in `call` in the background, and wait until its
/// create is in flight (the herder lists it).
async fn create_in_background(
    h: &StandaloneHerder,
    name: &'static str,
    config: connect_api::ConfigMap,
) -> tokio::task::JoinHandle<connect_api::Result<connect_runtime::worker::ConnectorInfo>> {
    let herder = h.clone();
    let create = tokio::spawn(async move {
        herder
            .create_connector(name, config, TargetState::Started)
            .await
    });
    eventually("the stuck create in flight", || {
        futures::executor::block_on(h.connector_names()).contains(&name.to_string())
    })
    .await;
    create
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hanging_start_delays_no_other_connector_and_fails_at_its_timeout() {
    let s = setup();
    let h = herder_with(&s, "3000");
    let stuck = create_in_background(&h, "stuck", hanging_in("start")).await;

    // Another connector is created and runs at once.
    let began = Instant::now();
    tokio::time::timeout(
        Duration::from_secs(10),
        h.create_connector("healthy", healthy(), TargetState::Started),
    )
    .await
    .expect("the healthy connector's create waits for the stuck one")
    .unwrap();
    assert!(
        began.elapsed() < Duration::from_secs(1),
        "creating a connector took {:?} beside a hanging start",
        began.elapsed()
    );
    eventually("the healthy connector's records", || {
        topic_values(&s.kafka, "out").len() >= 3
    })
    .await;
    // Reads of the stuck connector answer while its start hangs.
    tokio::time::timeout(Duration::from_secs(1), h.connector_status("stuck"))
        .await
        .expect("the stuck connector's status answers")
        .unwrap();

    // At the timeout the start is abandoned and the connector FAILED.
    stuck.await.unwrap().unwrap();
    let status = h.connector_status("stuck").await.unwrap();
    assert_eq!(status.connector.state, "FAILED");
    let trace = status.connector.trace.unwrap_or_default();
    assert!(
        trace.contains("connector.start.timeout.ms") && trace.contains("start"),
        "{trace}"
    );
    assert_eq!(
        h.connector_status("healthy").await.unwrap().connector.state,
        "RUNNING"
    );
    h.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_a_connector_whose_start_hangs_does_not_wait_for_it() {
    let s = setup();
    // The start's own bound is far away: only abandoning it can be quick.
    let h = herder_with(&s, "600000");
    let stuck = create_in_background(&h, "stuck", hanging_in("start")).await;
    tokio::time::timeout(Duration::from_secs(5), h.delete_connector("stuck"))
        .await
        .expect("delete waited for the hanging start")
        .unwrap();
    stuck.await.unwrap().unwrap();
    assert!(h.connector_names().await.is_empty());
    // And shutdown with another hanging start in flight ends promptly.
    let _stuck = create_in_background(&h, "stuck2", hanging_in("start")).await;
    tokio::time::timeout(Duration::from_secs(5), h.shutdown())
        .await
        .expect("shutdown waited for a hanging start");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hanging_stop_is_abandoned_after_the_graceful_timeout() {
    let s = setup();
    let h = herder_with(&s, "600000");
    h.create_connector("stuck", hanging_in("stop"), TargetState::Started)
        .await
        .unwrap();
    h.create_connector("healthy", healthy(), TargetState::Started)
        .await
        .unwrap();
    // task.shutdown.graceful.timeout.ms is 500 ms.
    tokio::time::timeout(Duration::from_secs(5), h.delete_connector("stuck"))
        .await
        .expect("delete waited for a hanging stop")
        .unwrap();
    assert_eq!(h.connector_names().await, vec!["healthy".to_string()]);
    h.shutdown().await;
}

/// A status store that panics on reads once `armed`: a bug of the
/// worker's own, as no plugin panic reaches the herder's loops.
struct PanickingStatuses {
    inner: connect_runtime::status::MemoryStatusStore,
    armed: std::sync::atomic::AtomicBool,
}

impl connect_runtime::status::StatusListener for PanickingStatuses {
    fn task_state(
        &self,
        id: &connect_runtime::status::TaskId,
        state: connect_runtime::status::State,
        trace: Option<String>,
    ) {
        self.inner.task_state(id, state, trace)
    }
}

impl connect_runtime::status::StatusStore for PanickingStatuses {
    fn put_connector(
        &self,
        name: &str,
        state: connect_runtime::status::State,
        trace: Option<String>,
    ) {
        self.inner.put_connector(name, state, trace)
    }
    fn connector(&self, name: &str) -> (connect_runtime::status::State, Option<String>) {
        if self.armed.load(std::sync::atomic::Ordering::SeqCst) {
            panic!("status read exploded");
        }
        self.inner.connector(name)
    }
    fn task(
        &self,
        id: &connect_runtime::status::TaskId,
    ) -> (connect_runtime::status::State, Option<String>) {
        self.inner.task(id)
    }
    fn forget(&self, name: &str) {
        self.inner.forget(name)
    }
    fn topics(&self, name: &str) -> Vec<String> {
        self.inner.topics(name)
    }
    fn reset_topics(&self, name: &str) {
        self.inner.reset_topics(name)
    }
}

/// One of the standalone herder's own loops panics (here the automatic
/// restart loop, reading a status store that breaks): the herder says so,
/// so the process serving it stops instead of serving a REST API over
/// nothing (the standalone worker exits with status 1).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_herder_loop_that_dies_is_reported() {
    let s = setup();
    let statuses = Arc::new(PanickingStatuses {
        inner: Default::default(),
        armed: std::sync::atomic::AtomicBool::new(false),
    });
    let worker = runner_with(
        Arc::new(s.kafka.clone()),
        s.store.clone(),
        statuses.clone(),
        &s.collected,
        &[],
    );
    let h = StandaloneHerder::new(worker);
    h.create_connector("healthy", healthy(), TargetState::Started)
        .await
        .unwrap();
    statuses
        .armed
        .store(true, std::sync::atomic::Ordering::SeqCst);
    let why = tokio::time::timeout(Duration::from_secs(30), h.died())
        .await
        .expect("the dead loop was never reported");
    assert!(
        why.contains("automatic-restart loop") && why.contains("status read exploded"),
        "{why}"
    );
}
