//! Helpers shared by the connect-standalone tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use connect_runtime::kafka::rdkafka_adapter::RdKafkaCluster;
use connect_runtime::kafka::{ClientConfig, ConsumerEvent, KafkaCluster, Subscription};

/// How long any wait in these tests may take.
pub(crate) const DEADLINE: Duration = Duration::from_secs(45);

/// A file of the repository (the shipped configs).
pub(crate) fn repo_file(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(name)
}

/// Poll `check` until it returns `Some` (45 s deadline).
pub(crate) fn wait_for<T>(what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(v) = check() {
            return v;
        }
        assert!(start.elapsed() < DEADLINE, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The values on `topic`, read from the start through the Kafka port.
pub(crate) fn topic_values(bootstrap: &str, topic: &str, at_least: usize) -> Vec<String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut base = ClientConfig::new();
        base.insert("bootstrap.servers".into(), bootstrap.to_string());
        let cluster = RdKafkaCluster::new(base);
        let mut config = ClientConfig::new();
        config.insert(
            "group.id".into(),
            format!("demo-check-{}", std::process::id()),
        );
        config.insert("auto.offset.reset".into(), "earliest".into());
        let mut consumer = cluster.consumer(&config).unwrap();
        consumer
            .subscribe(&Subscription::Topics(vec![topic.to_string()]))
            .unwrap();
        let mut values = Vec::new();
        let start = Instant::now();
        while values.len() < at_least {
            assert!(start.elapsed() < DEADLINE, "only {values:?} on {topic}");
            if let Some(ConsumerEvent::Records(records)) =
                consumer.poll(Duration::from_millis(500)).await.unwrap()
            {
                values.extend(
                    records
                        .into_iter()
                        .filter_map(|r| r.value)
                        .map(|v| String::from_utf8_lossy(&v).into_owned()),
                );
            }
        }
        let _ = consumer.close().await;
        values
    })
}
