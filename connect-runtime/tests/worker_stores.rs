//! The worker keeps connector configs, task configs and target states in
//! its `ConfigStore` and states in its `StatusStore`: it writes the store
//! before it acts, starts what a store already holds, and refuses a change
//! the store refused.

mod common;

use std::sync::Arc;

use async_trait::async_trait;
use common::*;
use connect_api::{ConfigMap, ConnectError, Result};
use connect_runtime::config_store::{ConfigStore, MemoryConfigStore, StoredConnector};
use connect_runtime::status::{MemoryStatusStore, State, StatusStore, TargetState};

fn sink_config() -> ConfigMap {
    props(&[
        ("connector.class", "CollectingSink"),
        ("topics", "out"),
        ("tasks.max", "1"),
    ])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_change_is_written_to_the_stores() {
    let s = setup();
    let configs = Arc::new(MemoryConfigStore::new());
    let statuses = Arc::new(MemoryStatusStore::default());
    let w = worker_with_stores(
        Arc::new(s.kafka.clone()),
        s.store.clone(),
        configs.clone(),
        statuses.clone(),
        &s.collected,
        &[],
    );
    w.create_connector("sink", sink_config(), TargetState::Started)
        .await
        .unwrap();
    let stored = configs.connector("sink").expect("the config is stored");
    assert_eq!(stored.config.get("topics").map(String::as_str), Some("out"));
    assert_eq!(stored.config.get("name").map(String::as_str), Some("sink"));
    assert_eq!(stored.target, TargetState::Started);
    assert_eq!(stored.task_configs, w.task_configs("sink").await.unwrap());
    assert_eq!(stored.task_configs.len(), 1);
    eventually("the connector RUNNING in the status store", || {
        statuses.connector("sink").0 == State::Running
    })
    .await;

    w.pause("sink").await.unwrap();
    assert_eq!(
        configs.connector("sink").unwrap().target,
        TargetState::Paused
    );
    w.stop("sink").await.unwrap();
    let stopped = configs.connector("sink").unwrap();
    assert_eq!(stopped.target, TargetState::Stopped);
    assert!(
        stopped.task_configs.is_empty(),
        "a STOPPED connector has no tasks"
    );

    let mut changed = sink_config();
    changed.insert("topics".into(), "dlq".into());
    w.put_connector_config("sink", changed).await.unwrap();
    let stored = configs.connector("sink").unwrap();
    assert_eq!(stored.config.get("topics").map(String::as_str), Some("dlq"));
    assert_eq!(
        stored.target,
        TargetState::Stopped,
        "an update keeps the target"
    );

    w.delete_connector("sink").await.unwrap();
    assert!(configs.snapshot().is_empty());
    assert_eq!(statuses.connector("sink").0, State::Unassigned);
    w.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_starts_what_its_config_store_holds() {
    let s = setup();
    let configs = Arc::new(MemoryConfigStore::new());
    let mut paused = sink_config();
    paused.insert("name".into(), "paused-sink".into());
    configs
        .put_connector_config("paused-sink", paused, TargetState::Paused)
        .await
        .unwrap();
    configs
        .put_connector_config(
            "unknown",
            props(&[("connector.class", "NoSuchConnector")]),
            TargetState::Started,
        )
        .await
        .unwrap();
    let w = worker_with_stores(
        Arc::new(s.kafka.clone()),
        s.store.clone(),
        configs.clone(),
        Arc::new(MemoryStatusStore::default()),
        &s.collected,
        &[],
    );
    assert!(
        w.connector_names().await.is_empty(),
        "nothing runs before start_stored"
    );
    assert_eq!(w.start_stored().await, ["paused-sink"]);
    assert_eq!(w.connector_names().await, ["paused-sink"]);
    eventually("the stored connector's task PAUSED", || {
        futures::executor::block_on(w.connector_status("paused-sink"))
            .is_ok_and(|st| st.connector.state == "PAUSED" && st.tasks.len() == 1)
    })
    .await;
    assert_eq!(
        configs.connector("paused-sink").unwrap().task_configs.len(),
        1
    );
    // A second call starts nothing twice.
    assert!(w.start_stored().await.is_empty());
    w.shutdown().await;
}

/// A store that refuses every write, as a config topic would while Kafka
/// is down.
#[derive(Default)]
struct Refusing;

#[async_trait]
impl ConfigStore for Refusing {
    fn snapshot(&self) -> std::collections::BTreeMap<String, StoredConnector> {
        Default::default()
    }
    async fn put_connector_config(&self, name: &str, _: ConfigMap, _: TargetState) -> Result<()> {
        Err(ConnectError::retriable(format!(
            "config store down ({name})"
        )))
    }
    async fn remove_connector(&self, name: &str) -> Result<()> {
        Err(ConnectError::retriable(format!(
            "config store down ({name})"
        )))
    }
    async fn put_task_configs(&self, name: &str, _: Vec<ConfigMap>) -> Result<()> {
        Err(ConnectError::retriable(format!(
            "config store down ({name})"
        )))
    }
    async fn put_target_state(&self, name: &str, _: TargetState) -> Result<()> {
        Err(ConnectError::retriable(format!(
            "config store down ({name})"
        )))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_runs_that_the_store_did_not_take() {
    let s = setup();
    let w = worker_with_stores(
        Arc::new(s.kafka.clone()),
        s.store.clone(),
        Arc::new(Refusing),
        Arc::new(MemoryStatusStore::default()),
        &s.collected,
        &[],
    );
    let err = w
        .create_connector("sink", sink_config(), TargetState::Started)
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("config store down (sink)"),
        "{err}"
    );
    assert!(w.connector_names().await.is_empty());
    w.shutdown().await;
}
