//! The worker's main cases over librdkafka's mock cluster: the real Kafka
//! wire protocol through the rdkafka adapter, in process.
#![cfg(feature = "rdkafka")]

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use connect_api::config::ConfigMap;
use connect_runtime::kafka::rdkafka::MockKafka;
use connect_runtime::kafka::{
    ConsumedRecord, ConsumerEvent, KafkaCluster, OutRecord, Subscription, TopicPartition,
};
use connect_runtime::offsets::MemoryOffsetStore;
use connect_runtime::status::TargetState;

fn mock() -> (MockKafka, Arc<dyn KafkaCluster>) {
    let mock = MockKafka::start(1, &[("out", 1), ("dlq", 1)]).expect("mock cluster");
    let cluster: Arc<dyn KafkaCluster> = Arc::new(mock.cluster());
    (mock, cluster)
}

/// Read `n` records of `topic` from the beginning with a throwaway group.
async fn read(cluster: &Arc<dyn KafkaCluster>, topic: &str, n: usize) -> Vec<ConsumedRecord> {
    static READERS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n_reader = READERS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let group = format!("reader-{}-{n_reader}", std::process::id());
    let mut consumer = cluster
        .consumer(&props(&[
            ("group.id", &group),
            ("auto.offset.reset", "earliest"),
            ("enable.auto.commit", "false"),
        ]))
        .expect("consumer");
    consumer
        .subscribe(&Subscription::Topics(vec![topic.to_string()]))
        .expect("subscribe");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let mut out = Vec::new();
    while out.len() < n {
        assert!(
            tokio::time::Instant::now() < deadline,
            "read {} of {n} records from {topic}",
            out.len()
        );
        if let Ok(Some(ConsumerEvent::Records(batch))) =
            consumer.poll(Duration::from_millis(200)).await
        {
            out.extend(batch);
        }
    }
    let _ = consumer.close().await;
    out
}

async fn committed(cluster: &Arc<dyn KafkaCluster>, group: &str) -> Option<i64> {
    let mut consumer = cluster
        .consumer(&props(&[
            ("group.id", group),
            ("enable.auto.commit", "false"),
        ]))
        .ok()?;
    let offsets = consumer
        .committed(&[TopicPartition::new("out", 0)], Duration::from_secs(5))
        .await
        .ok()?;
    offsets.values().next().copied()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn source_to_sink_over_the_wire() {
    let (_mock, cluster) = mock();
    let store = Arc::new(MemoryOffsetStore::new());
    let collected = Collector::default();
    let w = worker_on(cluster.clone(), store.clone(), &collected);
    w.create_connector(
        "src",
        props(&[
            ("connector.class", "PassThroughSource"),
            ("count", "30"),
            ("topic", "out"),
        ]),
        TargetState::Started,
    )
    .await
    .unwrap();
    w.create_connector(
        "sink",
        props(&[("connector.class", "CollectingSink"), ("topics", "out")]),
        TargetState::Started,
    )
    .await
    .unwrap();
    eventually("30 records in the sink", || {
        collected.0.lock().unwrap().len() >= 30
    })
    .await;
    let want: Vec<String> = (0..30).map(|n| format!("v{n}")).collect();
    assert_eq!(*collected.0.lock().unwrap(), want);
    let first = read(&cluster, "out", 1).await;
    assert_eq!(
        first[0].value.as_deref(),
        Some(&br#"{"schema":{"type":"string","optional":false},"payload":"v0"}"#[..])
    );
    eventually("source offsets stored", || {
        stored(&store, "src") == Some(29)
    })
    .await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while committed(&cluster, "connect-sink").await != Some(30) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "sink offsets not committed"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    w.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sink_dlq_over_the_wire() {
    let (_mock, cluster) = mock();
    let producer = cluster
        .producer(&ConfigMap::new(), Arc::new(NullSink))
        .expect("producer");
    producer
        .send(&OutRecord::new("out", Some(b"{broken")), 0)
        .unwrap();
    producer
        .send(
            &OutRecord::new(
                "out",
                Some(br#"{"schema":{"type":"string","optional":false},"payload":"ok"}"#),
            ),
            1,
        )
        .unwrap();
    producer.flush(Duration::from_secs(10)).await.unwrap();
    let collected = Collector::default();
    let w = worker_on(
        cluster.clone(),
        Arc::new(MemoryOffsetStore::new()),
        &collected,
    );
    w.create_connector(
        "sink",
        props(&[
            ("connector.class", "CollectingSink"),
            ("topics", "out"),
            ("errors.tolerance", "all"),
            ("errors.deadletterqueue.topic.name", "dlq"),
            ("errors.deadletterqueue.context.headers.enable", "true"),
        ]),
        TargetState::Started,
    )
    .await
    .unwrap();
    eventually("good record delivered", || {
        collected.0.lock().unwrap().len() == 1
    })
    .await;
    let dead = read(&cluster, "dlq", 1).await;
    assert_eq!(dead[0].value.as_deref(), Some(&b"{broken"[..]));
    let header = |k: &str| {
        dead[0]
            .headers
            .iter()
            .find(|(h, _)| h == k)
            .and_then(|(_, v)| v.clone())
    };
    assert_eq!(
        header("__connect.errors.stage").as_deref(),
        Some(&b"VALUE_CONVERTER"[..])
    );
    assert_eq!(
        header("__connect.errors.offset").as_deref(),
        Some(&b"0"[..])
    );
    w.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crash_and_restart_over_the_wire_loses_nothing() {
    let (_mock, cluster) = mock();
    let store = Arc::new(MemoryOffsetStore::new());
    let collected = Collector::default();
    {
        let w = worker_on(cluster.clone(), store.clone(), &collected);
        w.create_connector(
            "src",
            props(&[
                ("connector.class", "PassThroughSource"),
                ("count", "40"),
                ("topic", "out"),
            ]),
            TargetState::Started,
        )
        .await
        .unwrap();
        read(&cluster, "out", 10).await;
        w.abort().await; // a crash: no flush, no commit
    }
    let w = worker_on(cluster.clone(), store.clone(), &collected);
    w.create_connector(
        "src",
        props(&[
            ("connector.class", "PassThroughSource"),
            ("count", "40"),
            ("topic", "out"),
        ]),
        TargetState::Started,
    )
    .await
    .unwrap();
    eventually("offset of the last record stored", || {
        stored(&store, "src") == Some(39)
    })
    .await;
    let all = read(&cluster, "out", 40).await;
    for n in 0..40 {
        let want = format!(r#""payload":"v{n}""#);
        assert!(
            all.iter().any(|r| r
                .value
                .as_deref()
                .is_some_and(|v| String::from_utf8_lossy(v).contains(&want))),
            "v{n} lost"
        );
    }
    w.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn offsets_topic_store_over_the_wire() {
    use connect_runtime::offsets::{KafkaOffsetStore, OffsetStore};
    // The mock cluster cannot create topics: pre-create it, as a user would.
    let mock = MockKafka::start(1, &[("connect-offsets", 3)]).expect("mock cluster");
    let cluster = mock.cluster();
    let mut partition = connect_api::SourceMap::new();
    partition.insert("filename".into(), "test.txt".into());
    let mut offset = connect_api::SourceMap::new();
    offset.insert("position".into(), 42.into());
    let client = ConfigMap::new();
    let open = || {
        KafkaOffsetStore::open(
            &cluster,
            &client,
            "connect-offsets",
            3,
            1,
            Duration::from_secs(20),
        )
    };
    {
        let store = open().await.expect("open");
        store
            .write("src", vec![(partition.clone(), Some(offset.clone()))])
            .await
            .expect("write");
    }
    let store = open().await.expect("reopen");
    assert_eq!(store.get("src", &partition), Some(offset));
}
