//! A Kafka reached over the wire through the rdkafka adapter: librdkafka's
//! mock cluster in this process, or the real broker named by
//! `KAFKA_BOOTSTRAP_SERVERS` (`tools/real-kafka/broker.sh` starts one).
//! The same test runs on both; names are unique per run on the real broker,
//! whose topics and groups outlive the test.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use connect_runtime::kafka::rdkafka_adapter::{MockKafka, RdKafkaCluster};
use connect_runtime::kafka::{ClientConfig, CreateTopicOutcome, KafkaCluster, NewTopic};

// Not every test binary that includes this module needs it.
#[allow(unused_imports)]
pub(crate) use connect_test_support::real_bootstrap;

/// A cluster reached through the rdkafka adapter.
pub(crate) struct Wire {
    /// The cluster the worker and the checks use.
    pub(crate) cluster: Arc<dyn KafkaCluster>,
    /// Set for the mock cluster; keeps it alive.
    pub(crate) mock: Option<MockKafka>,
    /// Bootstrap servers of the cluster.
    pub(crate) bootstrap: String,
    /// Appended to topic, group and connector names on a real broker.
    suffix: String,
}

impl Wire {
    /// A fresh mock cluster.
    pub(crate) fn mock() -> Wire {
        let mock = MockKafka::start(1, &[]).expect("mock cluster");
        Wire {
            cluster: Arc::new(mock.cluster()),
            bootstrap: mock.bootstrap_servers().to_string(),
            mock: Some(mock),
            suffix: String::new(),
        }
    }

    /// The real broker, or `None` (said loudly) when none is configured.
    pub(crate) fn real(test: &str) -> Option<Wire> {
        let bootstrap = real_bootstrap(test)?;
        let mut base = ClientConfig::new();
        base.insert("bootstrap.servers".into(), bootstrap.clone());
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_micros();
        Some(Wire {
            cluster: Arc::new(RdKafkaCluster::new(base)),
            mock: None,
            bootstrap,
            suffix: format!(
                "-{}-{nanos}-{}",
                std::process::id(),
                NEXT.fetch_add(1, Ordering::Relaxed)
            ),
        })
    }

    /// True on a real broker.
    pub(crate) fn is_real(&self) -> bool {
        self.mock.is_none()
    }

    /// `base` made unique for this run (unchanged on the mock, which is
    /// new for every test).
    pub(crate) fn name(&self, base: &str) -> String {
        format!("{base}{}", self.suffix)
    }

    /// Create the topic `self.name(base)` with `partitions` and wait until
    /// its metadata shows every partition; returns its name.
    pub(crate) async fn topic(&self, base: &str, partitions: i32) -> String {
        let name = self.name(base);
        if let Some(mock) = &self.mock {
            mock.create_topic(&name, partitions).expect("mock topic");
            return name;
        }
        let admin = self.cluster.admin(&ClientConfig::new()).expect("admin");
        let outcome = admin
            .create_topic(&NewTopic::new(&name, partitions), Duration::from_secs(30))
            .await
            .expect("create topic");
        assert_eq!(outcome, CreateTopicOutcome::Created, "topic {name}");
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        while admin
            .describe_topic(&name, Duration::from_secs(5))
            .await
            .ok()
            .flatten()
            .is_none_or(|d| d.partitions != partitions)
        {
            assert!(
                tokio::time::Instant::now() < deadline,
                "topic {name} never showed {partitions} partitions"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        name
    }
}

/// Generates a `mock` and a `real_broker` test for each case `fn(Wire)`.
#[allow(unused_macros)] // binaries that include `common` without using it
macro_rules! over_the_wire {
    ($($case:ident),* $(,)?) => {
        mod mock {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    super::$case(crate::common::wire::Wire::mock()).await;
                }
            )*
        }
        mod real_broker {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    let test = concat!(module_path!(), "::", stringify!($case));
                    if let Some(wire) = crate::common::wire::Wire::real(test) {
                        super::$case(wire).await;
                    }
                }
            )*
        }
    };
}
#[allow(unused_imports)]
pub(crate) use over_the_wire;
