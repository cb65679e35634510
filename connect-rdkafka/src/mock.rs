//! An embedded Kafka on librdkafka's mock cluster: real wire protocol on
//! 127.0.0.1, in this process, for tests, demos and `mock-kafka`.
//!
//! Limits measured with librdkafka 2.12 (see the reference notes): CreateTopics
//! through the admin API times out (use [`MockKafka::create_topic`] or
//! auto-creation, which gives 4 partitions), transactions do not give
//! `read_committed` semantics, and each partition silently keeps only about
//! 5 MiB of data.

use ::rdkafka::client::{Client, ClientContext};
use ::rdkafka::producer::{BaseProducer, Producer as _};
use ::rdkafka::ClientConfig as RdConfig;

use super::errors::from_rd;
use super::RdKafkaCluster;
use connect_kafka::{ClientConfig, KafkaError, KafkaErrorKind};

/// A running mock cluster; it stops when this is dropped.
///
/// ```
/// use connect_rdkafka::MockKafka;
///
/// let kafka = MockKafka::start(1, &[("orders", 3)]).unwrap();
/// assert!(kafka.bootstrap_servers().starts_with("127.0.0.1:"));
/// ```
pub struct MockKafka {
    /// The client that owns the mock cluster (librdkafka ties the cluster's
    /// life to it).
    holder: BaseProducer,
    bootstrap: String,
}

impl std::fmt::Debug for MockKafka {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MockKafka")
            .field("bootstrap", &self.bootstrap)
            .finish()
    }
}

impl MockKafka {
    /// Start `brokers` mock brokers (at least 1) and create `topics` (name,
    /// partitions). Consumer groups join without the 3 s initial rebalance
    /// delay of the mock's default.
    pub fn start(brokers: i32, topics: &[(&str, i32)]) -> Result<MockKafka, KafkaError> {
        if brokers < 1 {
            return Err(KafkaError::new(
                KafkaErrorKind::Config,
                format!("a mock cluster needs at least 1 broker, got {brokers}"),
            ));
        }
        let holder: BaseProducer = RdConfig::new()
            .set("test.mock.num.brokers", brokers.to_string())
            .create()
            .map_err(|e| from_rd(&e, "starting the mock cluster"))?;
        if !ffi::disable_initial_rebalance_delay(holder.client()) {
            return Err(KafkaError::fatal(
                "the client did not create a mock cluster",
            ));
        }
        let bootstrap = holder
            .client()
            .mock_cluster()
            .ok_or_else(|| KafkaError::fatal("the client did not create a mock cluster"))?
            .bootstrap_servers();
        let kafka = MockKafka { holder, bootstrap };
        for (name, partitions) in topics {
            kafka.create_topic(name, *partitions)?;
        }
        Ok(kafka)
    }

    /// The `bootstrap.servers` value for clients of this cluster.
    pub fn bootstrap_servers(&self) -> &str {
        &self.bootstrap
    }

    /// Create a topic with `partitions` (replication factor 1) through the
    /// mock API.
    pub fn create_topic(&self, name: &str, partitions: i32) -> Result<(), KafkaError> {
        if partitions < 1 {
            return Err(KafkaError::new(
                KafkaErrorKind::Config,
                format!("topic '{name}': partitions must be at least 1, got {partitions}"),
            ));
        }
        let cluster = self
            .holder
            .client()
            .mock_cluster()
            .ok_or_else(|| KafkaError::fatal("the mock cluster is gone"))?;
        cluster
            .create_topic(name, partitions, 1)
            .map_err(|e| from_rd(&e, format_args!("creating mock topic '{name}'")))
    }

    /// Fault injection: the next `count` Heartbeat requests that reach the
    /// cluster are answered `REQUEST_TIMED_OUT` without being served, so the
    /// group coordinator does not see them and a member's session runs out
    /// as if the network had dropped them. The failures are shared by all
    /// clients of the cluster, in arrival order.
    pub fn fail_next_heartbeats(&self, count: usize) -> Result<(), KafkaError> {
        use ::rdkafka::types::{RDKafkaApiKey, RDKafkaRespErr};
        let cluster = self
            .holder
            .client()
            .mock_cluster()
            .ok_or_else(|| KafkaError::fatal("the mock cluster is gone"))?;
        let errors = vec![RDKafkaRespErr::RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT; count];
        cluster.request_errors(RDKafkaApiKey::Heartbeat, &errors);
        Ok(())
    }

    /// An rdkafka-backed [`KafkaCluster`](connect_kafka::KafkaCluster) on this
    /// mock cluster.
    pub fn cluster(&self) -> RdKafkaCluster {
        let mut base = ClientConfig::new();
        base.insert("bootstrap.servers".to_string(), self.bootstrap.clone());
        RdKafkaCluster::new(base)
    }
}

/// The one foreign call the safe rdkafka API does not offer.
#[allow(unsafe_code)]
mod ffi {
    use super::{Client, ClientContext};

    /// Set the mock cluster's `group.initial.rebalance.delay.ms` to 0 so a
    /// classic group's first join takes ~0.1 s instead of ~3 s. Returns false
    /// when `client` has no mock cluster.
    pub(super) fn disable_initial_rebalance_delay<C: ClientContext>(client: &Client<C>) -> bool {
        // SAFETY: `client.native_ptr()` is a live rd_kafka_t owned by `client`,
        // which outlives this call. rd_kafka_handle_mock_cluster returns the
        // mock cluster that handle owns, or null; we check null before use and
        // do not keep the pointer. rd_kafka_mock_group_initial_rebalance_delay_ms
        // only stores an integer in the cluster (it posts an op to the mock
        // cluster's own thread), so it is safe to call from any thread.
        unsafe {
            let cluster = ::rdkafka::bindings::rd_kafka_handle_mock_cluster(client.native_ptr());
            if cluster.is_null() {
                return false;
            }
            ::rdkafka::bindings::rd_kafka_mock_group_initial_rebalance_delay_ms(cluster, 0);
        }
        true
    }
}
