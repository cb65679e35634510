//! The config and status stores over librdkafka: on librdkafka's mock
//! cluster always, and on a real broker when `KAFKA_BOOTSTRAP_SERVERS` is
//! set (`tools/real-kafka/broker.sh start` runs one). Without it the
//! real-broker tests print `SKIPPED ...` on the terminal and pass.
//!
//! Two store instances stand for two workers sharing the topics; checks
//! wait for conditions with generous deadlines, never sleep and assert.

use std::io::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use connect_distributed::stores::{KafkaConfigLog, KafkaStatusStore};
use connect_distributed::topics::config::{Properties, TargetState};
use connect_rdkafka::{MockKafka, RdKafkaCluster};
use connect_runtime::kafka::{ClientConfig, KafkaCluster};
use connect_runtime::status::{State, StatusListener, StatusStore, TaskId};
use tokio::time::Instant;

/// Generous: the machine may be loaded.
const TIMEOUT: Duration = Duration::from_secs(60);

/// A cluster to run on, and the mock (kept alive) when it is one.
struct Wire {
    cluster: Box<dyn KafkaCluster>,
    mock: Option<MockKafka>,
}

impl Wire {
    fn mock() -> Wire {
        let mock = MockKafka::start(1, &[]).expect("the mock cluster starts");
        Wire {
            cluster: Box::new(mock.cluster()),
            mock: Some(mock),
        }
    }

    fn real(test: &str) -> Option<Wire> {
        match std::env::var("KAFKA_BOOTSTRAP_SERVERS") {
            Ok(servers) if !servers.trim().is_empty() => {
                let base = ClientConfig::from([("bootstrap.servers", servers.as_str())]);
                Some(Wire {
                    cluster: Box::new(RdKafkaCluster::new(base)),
                    mock: None,
                })
            }
            _ => {
                // Written to the stderr handle directly: libtest captures
                // only the print macros, so this shows in every run.
                let _ = writeln!(
                    std::io::stderr(),
                    "SKIPPED stores_real_kafka::{test}: needs a real Kafka broker; start one with \
                     tools/real-kafka/broker.sh start and set KAFKA_BOOTSTRAP_SERVERS"
                );
                None
            }
        }
    }

    /// A fresh topic name; on the mock (which cannot create topics through
    /// the admin API) the topic is created here with `partitions`.
    fn topic(&self, prefix: &str, partitions: i32) -> String {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let name = format!(
            "{prefix}-{}-{nanos}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        if let Some(mock) = &self.mock {
            mock.create_topic(&name, partitions)
                .expect("the mock creates the topic");
        }
        name
    }
}

fn props(pairs: &[(&str, &str)]) -> Properties {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), Some(v.to_string())))
        .collect()
}

async fn config_topic_between_two_workers(wire: Wire) {
    let topic = wire.topic("connect-configs", 1);
    let client = ClientConfig::new();
    let open = || KafkaConfigLog::open(wire.cluster.as_ref(), &client, &topic, 1, TIMEOUT);
    let first = open().await.expect("open the config log");
    let second = open().await.expect("open a second config log");
    let mut changes = second.changes();
    first
        .put_connector_config("files", &props(&[("connector.class", "FileStreamSource")]))
        .await
        .expect("write the connector config");
    first
        .put_task_configs(
            "files",
            vec![props(&[("file", "a")]), props(&[("file", "b")])],
        )
        .await
        .expect("write the task configs");
    first
        .put_target_state("files", TargetState::Paused)
        .await
        .expect("write the target state");
    // The second worker's follower applies them without being asked.
    let deadline = Instant::now() + TIMEOUT;
    while second.state().target_state("files") != Some(TargetState::Paused) {
        assert!(
            Instant::now() < deadline,
            "the writes never reached the second worker"
        );
        let _ = tokio::time::timeout(Duration::from_millis(500), changes.changed()).await;
    }
    second.read_to_end().await.expect("read to end");
    let state = second.snapshot();
    assert_eq!(state.tasks("files").len(), 2);
    assert_eq!(
        state.task_config(&TaskId::new("files", 0)),
        Some(&props(&[("file", "a")]))
    );
    assert_eq!(state, first.snapshot());
    first.close().await.expect("close");
    second.close().await.expect("close");
}

async fn status_topic_between_two_workers(wire: Wire) {
    let topic = wire.topic("connect-status", 5);
    let client = ClientConfig::new();
    let open = |worker: &'static str| {
        KafkaStatusStore::open(
            wire.cluster.as_ref(),
            &client,
            &topic,
            5,
            1,
            worker,
            TIMEOUT,
        )
    };
    let w1 = open("w1:8083").await.expect("open the status store");
    let w2 = open("w2:8083").await.expect("open a second status store");
    w1.set_generation(2);
    let task = TaskId {
        connector: "files".into(),
        task: 0,
    };
    w1.put_connector("files", State::Running, None);
    w1.task_state(&task, State::Failed, Some("boom".into()));
    let deadline = Instant::now() + TIMEOUT;
    while w2.task(&task).0 != State::Failed {
        assert!(
            Instant::now() < deadline,
            "the status never reached the second worker"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    w2.read_to_end().await.expect("read to end");
    assert_eq!(w2.connector("files").0, State::Running);
    let status = w2
        .task_status(&TaskId::new("files", 0))
        .expect("the task's status");
    assert_eq!(
        (
            status.worker_id.as_str(),
            status.generation,
            status.trace.as_deref()
        ),
        ("w1:8083", 2, Some("boom"))
    );
    w1.close().await.expect("close");
    w2.close().await.expect("close");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn config_topic_on_the_mock() {
    config_topic_between_two_workers(Wire::mock()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn config_topic_on_real_kafka() {
    if let Some(wire) = Wire::real("config_topic_on_real_kafka") {
        config_topic_between_two_workers(wire).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_topic_on_the_mock() {
    status_topic_between_two_workers(Wire::mock()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_topic_on_real_kafka() {
    if let Some(wire) = Wire::real("status_topic_on_real_kafka") {
        status_topic_between_two_workers(wire).await;
    }
}
