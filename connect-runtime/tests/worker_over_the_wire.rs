//! The worker's main cases over the Kafka wire protocol through the rdkafka
//! adapter: each case runs on librdkafka's mock cluster and on the real
//! broker named by `KAFKA_BOOTSTRAP_SERVERS` (skipped, loudly, without it).
#![cfg(feature = "rdkafka")]

mod common;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use common::wire::{over_the_wire, Wire};
use common::*;
use connect_api::config::ConfigMap;
use connect_runtime::kafka::{
    ConsumedRecord, ConsumerEvent, KafkaCluster, OutRecord, Subscription, TopicPartition,
};
use connect_runtime::offsets::MemoryOffsetStore;
use connect_runtime::status::TargetState;

/// Read `n` records of `topic` from the beginning with a throwaway group.
async fn read(cluster: &Arc<dyn KafkaCluster>, topic: &str, n: usize) -> Vec<ConsumedRecord> {
    static READERS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n_reader = READERS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let group = format!("reader-{topic}-{}-{n_reader}", std::process::id());
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

/// The group's committed offset of `topic`'s partition `partition`.
async fn committed(
    cluster: &Arc<dyn KafkaCluster>,
    group: &str,
    topic: &str,
    partition: i32,
) -> Option<i64> {
    let mut consumer = cluster
        .consumer(&props(&[
            ("group.id", group),
            ("enable.auto.commit", "false"),
        ]))
        .ok()?;
    let offsets = consumer
        .committed(
            &[TopicPartition::new(topic, partition)],
            Duration::from_secs(5),
        )
        .await
        .ok()?;
    offsets.values().next().copied()
}

/// Poll until the group has committed `want` on every partition of `topic`.
async fn wait_committed(wire: &Wire, group: &str, topic: &str, partitions: i32, want: &[i64]) {
    wait_committed_or(wire, group, topic, partitions, want, String::new).await
}

/// [`wait_committed`], adding `context()` (what the tasks saw) to a failure.
async fn wait_committed_or(
    wire: &Wire,
    group: &str,
    topic: &str,
    partitions: i32,
    want: &[i64],
    context: impl Fn() -> String,
) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(45);
    loop {
        let mut got = Vec::new();
        for p in 0..partitions {
            got.push(
                committed(&wire.cluster, group, topic, p)
                    .await
                    .unwrap_or(-1),
            );
        }
        if got == want {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "group {group} committed {got:?} on {topic}, want {want:?}{}",
            context()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Worker settings for sink consumers that leave a group's view quickly
/// when they go away without leaving it.
const FAST_GROUP: [(&str, &str); 2] = [
    ("consumer.session.timeout.ms", "6000"),
    ("consumer.heartbeat.interval.ms", "500"),
];

/// A sink connector config that reads `topic`.
fn sink_config(topic: &str) -> ConfigMap {
    props(&[("connector.class", "CollectingSink"), ("topics", topic)])
}

/// A PassThroughSource of `count` records to `topic`.
fn source_config(topic: &str, count: usize) -> ConfigMap {
    props(&[
        ("connector.class", "PassThroughSource"),
        ("count", &count.to_string()),
        ("topic", topic),
    ])
}

async fn source_to_sink(wire: Wire) {
    let out = wire.topic("out", 1).await;
    let (src, sink) = (wire.name("src"), wire.name("sink"));
    let store = Arc::new(MemoryOffsetStore::new());
    let collected = Collector::default();
    let w = worker_on(wire.cluster.clone(), store.clone(), &collected);
    w.create_connector(&src, source_config(&out, 30), TargetState::Started)
        .await
        .unwrap();
    w.create_connector(&sink, sink_config(&out), TargetState::Started)
        .await
        .unwrap();
    eventually("30 records in the sink", || {
        collected.0.lock().unwrap().len() >= 30
    })
    .await;
    let want: Vec<String> = (0..30).map(|n| format!("v{n}")).collect();
    assert_eq!(*collected.0.lock().unwrap(), want);
    let first = read(&wire.cluster, &out, 1).await;
    assert_eq!(
        first[0].value.as_deref(),
        Some(&br#"{"schema":{"type":"string","optional":false},"payload":"v0"}"#[..])
    );
    eventually("source offsets stored", || stored(&store, &src) == Some(29)).await;
    wait_committed(&wire, &format!("connect-{sink}"), &out, 1, &[30]).await;
    w.shutdown().await;
}

async fn sink_dlq(wire: Wire) {
    let out = wire.topic("out", 1).await;
    let dlq = wire.topic("dlq", 1).await;
    let producer = wire
        .cluster
        .producer(&ConfigMap::new(), Arc::new(NullSink))
        .expect("producer");
    producer
        .send(&OutRecord::new(&out, Some(b"{broken")), 0)
        .unwrap();
    producer
        .send(
            &OutRecord::new(
                &out,
                Some(br#"{"schema":{"type":"string","optional":false},"payload":"ok"}"#),
            ),
            1,
        )
        .unwrap();
    producer.flush(Duration::from_secs(10)).await.unwrap();
    let collected = Collector::default();
    let w = worker_on(
        wire.cluster.clone(),
        Arc::new(MemoryOffsetStore::new()),
        &collected,
    );
    let mut config = sink_config(&out);
    config.extend(props(&[
        ("errors.tolerance", "all"),
        ("errors.deadletterqueue.topic.name", &dlq),
        ("errors.deadletterqueue.context.headers.enable", "true"),
    ]));
    w.create_connector(&wire.name("sink"), config, TargetState::Started)
        .await
        .unwrap();
    eventually("good record delivered", || {
        collected.0.lock().unwrap().len() == 1
    })
    .await;
    let dead = read(&wire.cluster, &dlq, 1).await;
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

async fn source_dlq(wire: Wire) {
    // Every record fails its transform (TimestampRouter needs a timestamp
    // these records lack) and goes to the DLQ with its source context.
    let out = wire.topic("out", 1).await;
    let dlq = wire.topic("dlq", 1).await;
    let src = wire.name("src");
    let store = Arc::new(MemoryOffsetStore::new());
    let w = worker_on(wire.cluster.clone(), store.clone(), &Collector::default());
    let mut config = source_config(&out, 5);
    config.extend(props(&[
        ("transforms", "route"),
        ("transforms.route.type", "TimestampRouter"),
        ("errors.tolerance", "all"),
        ("errors.deadletterqueue.topic.name", &dlq),
        ("errors.deadletterqueue.context.headers.enable", "true"),
    ]));
    w.create_connector(&src, config, TargetState::Started)
        .await
        .unwrap();
    let dead = read(&wire.cluster, &dlq, 5).await;
    let stage = dead[4]
        .headers
        .iter()
        .find(|(h, _)| h == "__connect.errors.stage")
        .and_then(|(_, v)| v.clone());
    assert_eq!(stage.as_deref(), Some(&b"TRANSFORMATION"[..]));
    eventually("source offsets stored past the dead letters", || {
        stored(&store, &src) == Some(4)
    })
    .await;
    w.shutdown().await;
}

async fn crash_and_restart_loses_nothing(wire: Wire) {
    let out = wire.topic("out", 1).await;
    let src = wire.name("src");
    let store = Arc::new(MemoryOffsetStore::new());
    let collected = Collector::default();
    {
        let w = worker_on(wire.cluster.clone(), store.clone(), &collected);
        w.create_connector(&src, source_config(&out, 40), TargetState::Started)
            .await
            .unwrap();
        read(&wire.cluster, &out, 10).await;
        w.abort().await; // a crash: no flush, no commit
    }
    let w = worker_on(wire.cluster.clone(), store.clone(), &collected);
    w.create_connector(&src, source_config(&out, 40), TargetState::Started)
        .await
        .unwrap();
    eventually("offset of the last record stored", || {
        stored(&store, &src) == Some(39)
    })
    .await;
    let all = read(&wire.cluster, &out, 40).await;
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

async fn offsets_topic_store(wire: Wire) {
    use connect_runtime::offsets::{KafkaOffsetStore, OffsetStore};
    let topic = if wire.is_real() {
        // The store creates its topic (compacted) on a real broker.
        wire.name("connect-offsets")
    } else {
        // The mock cluster cannot create topics: pre-create it, as a user would.
        wire.topic("connect-offsets", 3).await
    };
    let mut partition = connect_api::SourceMap::new();
    partition.insert("filename".into(), "test.txt".into());
    let mut offset = connect_api::SourceMap::new();
    offset.insert("position".into(), 42.into());
    let client = ConfigMap::new();
    let open = || {
        KafkaOffsetStore::open(
            wire.cluster.as_ref(),
            &client,
            &topic,
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
    // A second worker's store follows the topic: after a refresh it has
    // what the first wrote since it opened.
    let other = open().await.expect("open a second store");
    let mut moved = connect_api::SourceMap::new();
    moved.insert("position".into(), 43.into());
    store
        .write("src", vec![(partition.clone(), Some(moved.clone()))])
        .await
        .expect("write again");
    other.refresh().await.expect("refresh");
    assert_eq!(other.get("src", &partition), Some(moved));
}

/// Two workers run the same sink connector, so its two tasks share one
/// group: the second joins mid-stream and leaves again. Every record is
/// written (at least once) and the group commits the end of both partitions.
async fn two_sink_tasks_through_a_rebalance(wire: Wire) {
    two_sink_tasks(&wire, &FAST_GROUP).await;
}

/// On Kafka, where a member may commit revoked partitions before the
/// rebalance goes on, nothing is written twice by two sink tasks through
/// two rebalances, even with no periodic commit: each revocation commits
/// exactly what was written, and no record of a revoked partition reaches
/// `put` after it. (The mock cluster refuses commits while its group is
/// joining; see the conformance suite.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rebalance_writes_no_record_twice_on_real_kafka() {
    let Some(wire) =
        Wire::real("worker_over_the_wire::a_rebalance_writes_no_record_twice_on_real_kafka")
    else {
        return;
    };
    let mut extra = FAST_GROUP.to_vec();
    extra.push(("offset.flush.interval.ms", "600000"));
    let (a, b) = two_sink_tasks(&wire, &extra).await;
    let written = a.0.lock().unwrap().len() + b.0.lock().unwrap().len();
    assert_eq!(
        written,
        300,
        "records written twice: A {:?} B {:?}",
        a.events(),
        b.events()
    );
}

/// The rebalance case, on workers with the `extra` settings; returns what
/// each task wrote.
async fn two_sink_tasks(wire: &Wire, extra: &[(&str, &str)]) -> (Collector, Collector) {
    let out = wire.topic("out", 2).await;
    let sink = wire.name("sink");
    let producer = wire
        .cluster
        .producer(&ConfigMap::new(), Arc::new(NullSink))
        .expect("producer");
    let send = |from: usize, to: usize| {
        for n in from..to {
            let value =
                format!(r#"{{"schema":{{"type":"string","optional":false}},"payload":"r{n}"}}"#);
            let mut record = OutRecord::new(&out, Some(value.as_bytes()));
            record.partition = Some((n % 2) as i32);
            producer.send(&record, n as u64).unwrap();
        }
    };
    let (a_got, b_got) = (Collector::default(), Collector::default());
    // A worker running the sink connector, so its task joins the group.
    let start = |got: &Collector| {
        let w = worker_with(
            wire.cluster.clone(),
            Arc::new(MemoryOffsetStore::new()),
            got,
            extra,
        );
        let (sink, config) = (sink.clone(), sink_config(&out));
        async move {
            w.create_connector(&sink, config, TargetState::Started)
                .await
                .unwrap();
            w
        }
    };
    let a = start(&a_got).await;
    send(0, 100);
    producer.flush(Duration::from_secs(10)).await.unwrap();
    eventually("the first task wrote the first 100", || {
        a_got.0.lock().unwrap().len() >= 100
    })
    .await;
    let b = start(&b_got).await;
    // The group rebalances only when the first member sees the second join.
    eventually("the second task given a partition", || {
        b_got.events().iter().any(|e| e.starts_with("open "))
    })
    .await;
    send(100, 200);
    producer.flush(Duration::from_secs(10)).await.unwrap();
    let everything = |upto: usize| {
        let seen: BTreeSet<String> = a_got
            .0
            .lock()
            .unwrap()
            .iter()
            .chain(b_got.0.lock().unwrap().iter())
            .cloned()
            .collect();
        (0..upto).all(|n| seen.contains(&format!("r{n}")))
    };
    eventually("200 records written by the two tasks", || everything(200)).await;
    b.shutdown().await;
    send(200, 300);
    producer.flush(Duration::from_secs(10)).await.unwrap();
    eventually("300 records written after the second task left", || {
        everything(300)
    })
    .await;
    a.shutdown().await;
    let lifecycle = |c: &Collector| -> Vec<String> {
        let all = c.events().into_iter();
        all.filter(|e| !e.starts_with("put")).collect()
    };
    let events = || format!("\nA: {:?}\nB: {:?}", lifecycle(&a_got), lifecycle(&b_got));
    wait_committed_or(
        wire,
        &format!("connect-{sink}"),
        &out,
        2,
        &[150, 150],
        events,
    )
    .await;
    (a_got, b_got)
}

/// Five records on a new topic and a worker whose consumers must poll
/// within 3.5 s: the worker, what its sink collects, the sink's name and
/// its config (to which a case adds its failure).
async fn short_poll_sink(wire: &Wire) -> (StandaloneHerder, Collector, String, ConfigMap) {
    let out = wire.topic("out", 1).await;
    produce_strings(wire, &out, (0..5).map(|n| format!("r{n}"))).await;
    let collected = Collector::default();
    let w = worker_with(
        wire.cluster.clone(),
        Arc::new(MemoryOffsetStore::new()),
        &collected,
        &[
            ("consumer.session.timeout.ms", "3000"),
            ("consumer.heartbeat.interval.ms", "300"),
            ("consumer.max.poll.interval.ms", "3500"),
        ],
    );
    (w, collected, wire.name("sink"), sink_config(&out))
}

/// A downstream outage longer than `max.poll.interval.ms`: while a failed
/// batch waits to be put again, the task's partitions are paused and its
/// consumer keeps polling, so the group keeps the member (no rebalance,
/// no second `open`) and every record is written once the outage ends.
async fn a_put_outage_longer_than_the_poll_interval(wire: Wire) {
    let (w, collected, sink, mut config) = short_poll_sink(&wire).await;
    config.extend(props(&[("fail.puts", "3"), ("put.timeout.ms", "2000")]));
    w.create_connector(&sink, config, TargetState::Started)
        .await
        .unwrap();
    eventually("the 5 records after the outage", || {
        collected.0.lock().unwrap().len() >= 5
    })
    .await;
    let want: Vec<String> = (0..5).map(|n| format!("r{n}")).collect();
    assert_eq!(*collected.0.lock().unwrap(), want);
    let status = w.task_status(&sink, 0).await.unwrap();
    assert_eq!(status.state.state, "RUNNING", "{:?}", status.state.trace);
    let events = collected.events();
    let fails = events.iter().filter(|e| *e == "put failed").count();
    let opens = events.iter().filter(|e| e.starts_with("open ")).count();
    assert_eq!((fails, opens), (3, 1), "{events:?}");
    w.shutdown().await;
}

/// A `put` slower than `max.poll.interval.ms`: librdkafka drops the member
/// and reports it at the next poll. As with Kafka's consumer, the task
/// rejoins and goes on (records since the last commit come again); it
/// does not fail.
async fn a_put_slower_than_the_poll_interval(wire: Wire) {
    let (w, collected, sink, mut config) = short_poll_sink(&wire).await;
    config.extend(props(&[("first.put.delay.ms", "5000")]));
    let out = config["topics"].clone();
    w.create_connector(&sink, config, TargetState::Started)
        .await
        .unwrap();
    produce_strings(&wire, &out, (5..10).map(|n| format!("r{n}"))).await;
    eventually("every record, after the member rejoined", || {
        let got = collected.0.lock().unwrap();
        (0..10).all(|n| got.contains(&format!("r{n}")))
    })
    .await;
    let status = w.task_status(&sink, 0).await.unwrap();
    assert_eq!(status.state.state, "RUNNING", "{:?}", status.state.trace);
    w.shutdown().await;
}

/// A sink started before its topic exists waits for it, as Kafka's does
/// (librdkafka reports "Subscribed topic not available"; the task used to
/// fail on it), and reads the topic once it is created.
async fn sink_waits_for_a_topic_created_later(wire: Wire) {
    let out = wire.name("later");
    let collected = Collector::default();
    let w = worker_on(
        wire.cluster.clone(),
        Arc::new(MemoryOffsetStore::new()),
        &collected,
    );
    let sink = wire.name("sink");
    w.create_connector(&sink, sink_config(&out), TargetState::Started)
        .await
        .unwrap();
    // librdkafka reports the missing topic within milliseconds of the
    // subscription; the sleep only lets that happen before the topic exists.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(wire.topic("later", 1).await, out);
    let producer = wire
        .cluster
        .producer(&ConfigMap::new(), Arc::new(NullSink))
        .expect("producer");
    let value = br#"{"schema":{"type":"string","optional":false},"payload":"late"}"#;
    producer
        .send(&OutRecord::new(&out, Some(value)), 0)
        .unwrap();
    producer.flush(Duration::from_secs(10)).await.unwrap();
    eventually("the record of the new topic in the sink", || {
        collected.0.lock().unwrap().len() == 1
    })
    .await;
    let status = w.task_status(&sink, 0).await.unwrap();
    assert_eq!(status.state.state, "RUNNING", "{:?}", status.state.trace);
    w.shutdown().await;
}

/// A source record for a topic that does not exist (no auto-creation, no
/// `topic.creation.*`) is sent again until the topic exists, as Kafka
/// Connect retries such sends: never skipped, even under
/// `errors.tolerance=all`, and its offset is stored only once written.
async fn source_waits_for_a_missing_topic(wire: Wire) {
    let out = wire.name("missing");
    let src = wire.name("src");
    let store = Arc::new(MemoryOffsetStore::new());
    let w = worker_with(
        wire.cluster.clone(),
        store.clone(),
        &Collector::default(),
        &[
            ("producer.allow.auto.create.topics", "false"),
            // librdkafka gives up on a missing topic after this (30 s by
            // default); 1 s shows the failure quickly.
            ("producer.topic.metadata.propagation.max.ms", "1000"),
        ],
    );
    let mut config = source_config(&out, 20);
    config.insert("errors.tolerance".into(), "all".into());
    w.create_connector(&src, config, TargetState::Started)
        .await
        .unwrap();
    // Past the propagation limit before the topic exists; the sleep only
    // picks when the topic appears.
    tokio::time::sleep(Duration::from_millis(3000)).await;
    assert_eq!(
        stored(&store, &src),
        None,
        "offsets stored for unwritten records"
    );
    assert_eq!(wire.topic("missing", 1).await, out);
    let all = read(&wire.cluster, &out, 20).await;
    for n in 0..20 {
        let want = format!(r#""payload":"v{n}""#);
        assert!(
            all.iter().any(|r| r
                .value
                .as_deref()
                .is_some_and(|v| String::from_utf8_lossy(v).contains(&want))),
            "v{n} was skipped"
        );
    }
    eventually("every offset stored", || stored(&store, &src) == Some(19)).await;
    w.shutdown().await;
}

/// Produce `values` (JSON string envelopes) to partition 0 of `topic`.
async fn produce_strings(wire: &Wire, topic: &str, values: impl IntoIterator<Item = String>) {
    let producer = wire
        .cluster
        .producer(&ConfigMap::new(), Arc::new(NullSink))
        .expect("producer");
    for (token, v) in (0u64..).zip(values) {
        let value = format!(r#"{{"schema":{{"type":"string","optional":false}},"payload":"{v}"}}"#);
        let mut record = OutRecord::new(topic, Some(value.as_bytes()));
        record.partition = Some(0);
        producer.send(&record, token).unwrap();
    }
    producer.flush(Duration::from_secs(10)).await.unwrap();
}

/// `SinkTaskContext::offset` called in `open` takes effect: the task reads
/// from the offset it asked for, not from the group's committed position.
async fn sink_offset_requested_in_open_takes_effect(wire: Wire) {
    let out = wire.topic("out", 1).await;
    produce_strings(&wire, &out, (0..10).map(|n| format!("r{n}"))).await;
    let sink = wire.name("sink");
    // A first run commits offset 10 for the group.
    {
        let collected = Collector::default();
        let w = worker_with(
            wire.cluster.clone(),
            Arc::new(MemoryOffsetStore::new()),
            &collected,
            &FAST_GROUP,
        );
        w.create_connector(&sink, sink_config(&out), TargetState::Started)
            .await
            .unwrap();
        eventually("10 records", || collected.0.lock().unwrap().len() == 10).await;
        w.shutdown().await;
        wait_committed(&wire, &format!("connect-{sink}"), &out, 1, &[10]).await;
    }
    // The second asks for offset 3 when its partition opens. (Short
    // sessions: the mock cluster keeps the first member until it expires.)
    let collected = Collector::default();
    let w = worker_with(
        wire.cluster.clone(),
        Arc::new(MemoryOffsetStore::new()),
        &collected,
        &FAST_GROUP,
    );
    let mut config = sink_config(&out);
    config.insert("seek.on.open".into(), "3".into());
    w.create_connector(&sink, config, TargetState::Started)
        .await
        .unwrap();
    eventually("the records from offset 3", || {
        collected.0.lock().unwrap().len() >= 7
    })
    .await;
    let want: Vec<String> = (3..10).map(|n| format!("r{n}")).collect();
    assert_eq!(collected.0.lock().unwrap()[..7], want[..]);
    w.shutdown().await;
}

over_the_wire!(
    sink_offset_requested_in_open_takes_effect,
    source_waits_for_a_missing_topic,
    sink_waits_for_a_topic_created_later,
    source_to_sink,
    sink_dlq,
    source_dlq,
    crash_and_restart_loses_nothing,
    offsets_topic_store,
    two_sink_tasks_through_a_rebalance,
    a_put_outage_longer_than_the_poll_interval,
    a_put_slower_than_the_poll_interval,
);

/// The sink creates its dead letter queue topic (one partition, the
/// configured replication factor) when the task starts, as Kafka's does:
/// here the producer may not auto-create it. Real broker only: the mock
/// cluster cannot create topics.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sink_creates_its_dlq_topic_on_real_kafka() {
    let Some(wire) = Wire::real("worker_over_the_wire::sink_creates_its_dlq_topic_on_real_kafka")
    else {
        return;
    };
    let out = wire.topic("out", 1).await;
    let dlq = wire.name("dlq");
    produce_strings(&wire, &out, ["ok".to_string()]).await;
    let producer = wire
        .cluster
        .producer(&ConfigMap::new(), Arc::new(NullSink))
        .expect("producer");
    producer
        .send(&OutRecord::new(&out, Some(b"{broken")), 9)
        .unwrap();
    producer.flush(Duration::from_secs(10)).await.unwrap();
    let collected = Collector::default();
    let w = worker_with(
        wire.cluster.clone(),
        Arc::new(MemoryOffsetStore::new()),
        &collected,
        &[("producer.allow.auto.create.topics", "false")],
    );
    let mut config = sink_config(&out);
    config.extend(props(&[
        ("errors.tolerance", "all"),
        ("errors.deadletterqueue.topic.name", &dlq),
        ("errors.deadletterqueue.topic.replication.factor", "1"),
    ]));
    let sink = wire.name("sink");
    w.create_connector(&sink, config, TargetState::Started)
        .await
        .unwrap();
    let dead = read(&wire.cluster, &dlq, 1).await;
    assert_eq!(dead[0].value.as_deref(), Some(&b"{broken"[..]));
    eventually("the good record", || collected.0.lock().unwrap().len() == 1).await;
    let status = w.task_status(&sink, 0).await.unwrap();
    assert_eq!(status.state.state, "RUNNING", "{:?}", status.state.trace);
    w.shutdown().await;
}

/// Both loops share one dead letter queue type, and with it when its topic
/// is made: at task start. A topic that cannot exist (three replicas on a
/// one-broker cluster) fails the task before it moves a record, with a
/// message naming the topic and the key to change; the source DLQ used to
/// be created at the first failed record, and a failure there was only
/// logged. Real broker only: the mock cluster cannot create topics.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dlq_topic_that_cannot_exist_fails_either_task_at_start_on_real_kafka() {
    let Some(wire) = Wire::real(
        "worker_over_the_wire::a_dlq_topic_that_cannot_exist_fails_either_task_at_start_on_real_kafka",
    ) else {
        return;
    };
    let out = wire.topic("out", 1).await;
    let dlq = wire.name("dlq");
    let collected = Collector::default();
    let w = worker_with(
        wire.cluster.clone(),
        Arc::new(MemoryOffsetStore::new()),
        &collected,
        &[("producer.allow.auto.create.topics", "false")],
    );
    let dlq_keys = props(&[
        ("errors.tolerance", "all"),
        ("errors.deadletterqueue.topic.name", &dlq),
        ("errors.deadletterqueue.topic.replication.factor", "3"),
    ]);
    let src = wire.name("src");
    let mut source = source_config(&out, 5);
    source.extend(dlq_keys.clone());
    let sink = wire.name("sink");
    let mut sink_props = sink_config(&out);
    sink_props.extend(dlq_keys);
    for (name, config) in [(&src, source), (&sink, sink_props)] {
        w.create_connector(name, config, TargetState::Started)
            .await
            .unwrap();
        let mut last = String::new();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        let trace = loop {
            let status = w.task_status(name, 0).await;
            if let Ok(s) = &status {
                last = s.state.state.clone();
                if last == "FAILED" {
                    break s.state.trace.clone().unwrap_or_default();
                }
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "{name}: the task never FAILED (last {last}, {status:?})"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        assert!(
            trace.contains(&format!("dead letter queue topic '{dlq}'"))
                && trace.contains("errors.deadletterqueue.topic.replication.factor=3"),
            "{name}: {trace}"
        );
    }
    let mut consumer = wire
        .cluster
        .consumer(&props(&[("enable.auto.commit", "false")]))
        .expect("consumer");
    let tp = TopicPartition::new(out.as_str(), 0);
    let ends = consumer
        .end_offsets(std::slice::from_ref(&tp), Duration::from_secs(30))
        .await
        .expect("the end offset");
    assert_eq!(
        ends,
        [0],
        "the source task sent records before its DLQ existed"
    );
    w.shutdown().await;
}
