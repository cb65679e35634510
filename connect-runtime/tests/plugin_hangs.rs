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
