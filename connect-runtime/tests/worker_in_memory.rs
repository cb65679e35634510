//! The worker end to end on the in-memory Kafka: source and sink loops,
//! offsets, transforms, errors.tolerance and the DLQ on both sides,
//! pause/resume, and crash recovery.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use connect_api::config::{ConfigDef, ConfigMap};
use connect_api::connector::{Connector, ConnectorContext, SinkConnector, SourceConnector};
use connect_api::sink::{SinkTask, SinkTaskContext};
use connect_api::source::{SourceTask, SourceTaskContext};
use connect_api::{Record, Result, Schema, SinkRecord, SourceMap, SourceRecord, Value};
use connect_runtime::kafka::memory::MemoryKafka;
use connect_runtime::kafka::{KafkaCluster, NewTopic};
use connect_runtime::offsets::{MemoryOffsetStore, OffsetStore};
use connect_runtime::status::TargetState;
use connect_runtime::worker::{Plugins, Worker, WorkerConfig};

/// Emits `count` records "v0".."v{count-1}" on `topic`, in poll batches
/// of up to 10, resuming after the stored offset.
struct CountingTask {
    next: i64,
    count: i64,
    topic: String,
    partition: Arc<SourceMap>,
    committed: Arc<Mutex<Vec<Option<i64>>>>,
}

fn partition() -> Arc<SourceMap> {
    let mut p = SourceMap::new();
    p.insert("source".into(), "counter".into());
    Arc::new(p)
}

#[async_trait]
impl SourceTask for CountingTask {
    async fn start(&mut self, config: &ConfigMap, ctx: Arc<dyn SourceTaskContext>) -> Result<()> {
        self.count = config
            .get("count")
            .and_then(|c| c.parse().ok())
            .unwrap_or(10);
        self.topic = config.get("topic").cloned().unwrap_or_else(|| "out".into());
        if let Some(o) = ctx.offset_storage_reader().offset(&self.partition) {
            self.next = o["n"].as_i64().unwrap_or(-1) + 1;
        }
        Ok(())
    }
    async fn poll(&mut self) -> Result<Vec<SourceRecord>> {
        if self.next >= self.count {
            tokio::time::sleep(Duration::from_millis(20)).await;
            return Ok(vec![]);
        }
        let end = (self.next + 10).min(self.count);
        let batch = (self.next..end)
            .map(|n| {
                let mut off = SourceMap::new();
                off.insert("n".into(), n.into());
                SourceRecord::new(
                    self.partition.clone(),
                    off,
                    Record::new(
                        self.topic.as_str(),
                        Some(Schema::string()),
                        Value::from(format!("v{n}")),
                    ),
                )
            })
            .collect();
        self.next = end;
        Ok(batch)
    }
    async fn commit_record(
        &mut self,
        record: &SourceRecord,
        metadata: Option<&connect_api::RecordMetadata>,
    ) -> Result<()> {
        let _ = record;
        if let Ok(mut c) = self.committed.lock() {
            c.push(metadata.map(|m| m.offset));
        }
        Ok(())
    }
    async fn stop(&mut self) -> Result<()> {
        Ok(())
    }
}

/// Passes its connector config to its task, so tests configure the task
/// through the connector config.
#[derive(Default)]
struct PassThroughSource(ConfigMap);

#[async_trait]
impl Connector for PassThroughSource {
    fn version(&self) -> String {
        "1.0".into()
    }
    fn config_def(&self) -> ConfigDef {
        ConfigDef::new()
    }
    async fn start(&mut self, config: &ConfigMap, _: Arc<dyn ConnectorContext>) -> Result<()> {
        self.0 = config.clone();
        Ok(())
    }
    async fn task_configs(&mut self, _max: usize) -> Result<Vec<ConfigMap>> {
        Ok(vec![self.0.clone()])
    }
    async fn stop(&mut self) -> Result<()> {
        Ok(())
    }
}

impl SourceConnector for PassThroughSource {
    fn create_task(&self) -> Box<dyn SourceTask> {
        Box::new(CountingTask {
            next: 0,
            count: 0,
            topic: String::new(),
            partition: partition(),
            committed: Arc::new(Mutex::new(Vec::new())),
        })
    }
}

/// Collects the string form of every value it is given.
#[derive(Clone, Default)]
struct Collector(Arc<Mutex<Vec<String>>>);

/// Its tasks fail the first `fail.puts` non-empty puts with a retriable error.
struct CollectingSink(Collector, ConfigMap);
struct CollectingTask {
    out: Collector,
    fail_first_puts: AtomicUsize,
}

#[async_trait]
impl SinkTask for CollectingTask {
    async fn start(&mut self, config: &ConfigMap, _: Arc<dyn SinkTaskContext>) -> Result<()> {
        let n = config
            .get("fail.puts")
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        self.fail_first_puts = AtomicUsize::new(n);
        Ok(())
    }
    async fn put(&mut self, records: &[SinkRecord]) -> Result<()> {
        if self
            .fail_first_puts
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok()
            && !records.is_empty()
        {
            return Err(connect_api::ConnectError::retriable("database busy"));
        }
        let mut out = self.out.0.lock().unwrap();
        out.extend(records.iter().map(|r| r.record.value.to_string()));
        Ok(())
    }
    async fn stop(&mut self) -> Result<()> {
        Ok(())
    }
}

#[async_trait]
impl Connector for CollectingSink {
    fn version(&self) -> String {
        "1.0".into()
    }
    fn config_def(&self) -> ConfigDef {
        ConfigDef::new()
    }
    async fn start(&mut self, config: &ConfigMap, _: Arc<dyn ConnectorContext>) -> Result<()> {
        self.1 = config.clone();
        Ok(())
    }
    async fn task_configs(&mut self, _max: usize) -> Result<Vec<ConfigMap>> {
        Ok(vec![self.1.clone()])
    }
    async fn stop(&mut self) -> Result<()> {
        Ok(())
    }
}

impl SinkConnector for CollectingSink {
    fn create_task(&self) -> Box<dyn SinkTask> {
        Box::new(CollectingTask {
            out: self.0.clone(),
            fail_first_puts: AtomicUsize::new(0),
        })
    }
}

fn props(pairs: &[(&str, &str)]) -> ConfigMap {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

struct Setup {
    kafka: MemoryKafka,
    store: Arc<MemoryOffsetStore>,
    collected: Collector,
}

fn worker(setup: &Setup) -> Worker {
    let mut plugins = Plugins::with_builtins();
    plugins.register_source("test.PassThroughSource", &["PassThroughSource"], || {
        Box::new(PassThroughSource::default())
    });
    let collected = setup.collected.clone();
    plugins.register_sink("test.CollectingSink", &["CollectingSink"], move || {
        Box::new(CollectingSink(collected.clone(), ConfigMap::new()))
    });
    let config = WorkerConfig::parse(&props(&[
        (
            "key.converter",
            "org.apache.kafka.connect.json.JsonConverter",
        ),
        (
            "value.converter",
            "org.apache.kafka.connect.json.JsonConverter",
        ),
        ("offset.flush.interval.ms", "50"),
    ]))
    .unwrap();
    let cluster: Arc<dyn KafkaCluster> = Arc::new(setup.kafka.clone());
    Worker::new(config, plugins, cluster, setup.store.clone())
}

fn setup() -> Setup {
    let kafka = MemoryKafka::new();
    for t in ["out", "dlq"] {
        kafka.create_topic(&NewTopic::new(t, 1)).unwrap();
    }
    Setup {
        kafka,
        store: Arc::new(MemoryOffsetStore::new()),
        collected: Collector::default(),
    }
}

/// Poll `check` until it holds or 30 s pass (generous for a loaded CI box).
async fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while !check() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn stored(store: &MemoryOffsetStore, connector: &str) -> Option<i64> {
    store
        .get(connector, &partition())
        .and_then(|o| o["n"].as_i64())
}

fn topic_values(kafka: &MemoryKafka, topic: &str) -> Vec<String> {
    kafka
        .records(topic, 0)
        .into_iter()
        .map(|r| String::from_utf8(r.value.unwrap_or_default().to_vec()).unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn source_to_sink_end_to_end_with_json() {
    let s = setup();
    let w = worker(&s);
    w.create_connector(
        "src",
        props(&[
            ("connector.class", "PassThroughSource"),
            ("count", "25"),
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
    eventually("25 records in the sink", || {
        s.collected.0.lock().unwrap().len() == 25
    })
    .await;
    let got = s.collected.0.lock().unwrap().clone();
    let want: Vec<String> = (0..25).map(|n| format!("v{n}")).collect();
    assert_eq!(got, want);
    // The JSON envelope on the topic is Kafka's.
    assert_eq!(
        topic_values(&s.kafka, "out")[0],
        r#"{"schema":{"type":"string","optional":false},"payload":"v0"}"#
    );
    eventually("source offset 24 stored", || {
        stored(&s.store, "src") == Some(24)
    })
    .await;
    eventually("sink offsets committed", || {
        s.kafka
            .committed_offsets("connect-sink")
            .values()
            .any(|&o| o == 25)
    })
    .await;
    let status = w.connector_status("sink").await.unwrap();
    assert_eq!(status.connector.state, "RUNNING");
    assert_eq!(status.tasks[0].state.state, "RUNNING");
    w.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn filtered_records_still_commit_their_offsets() {
    let s = setup();
    let w = worker(&s);
    // Drop every record: Kafka would never commit these offsets (KAFKA-15296).
    w.create_connector(
        "src",
        props(&[
            ("connector.class", "PassThroughSource"),
            ("count", "5"),
            ("topic", "out"),
            ("transforms", "drop"),
            (
                "transforms.drop.type",
                "org.apache.kafka.connect.transforms.Filter",
            ),
        ]),
        TargetState::Started,
    )
    .await
    .unwrap();
    eventually("offset of the last dropped record", || {
        stored(&s.store, "src") == Some(4)
    })
    .await;
    assert!(topic_values(&s.kafka, "out").is_empty());
    w.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn source_transform_failures_go_to_the_dlq_with_context() {
    let s = setup();
    let w = worker(&s);
    // TimestampRouter fails on records without a timestamp: every one here.
    w.create_connector(
        "src",
        props(&[
            ("connector.class", "PassThroughSource"),
            ("count", "3"),
            ("topic", "out"),
            ("transforms", "route"),
            ("transforms.route.type", "TimestampRouter"),
            ("errors.tolerance", "all"),
            ("errors.deadletterqueue.topic.name", "dlq"),
            ("errors.deadletterqueue.context.headers.enable", "true"),
        ]),
        TargetState::Started,
    )
    .await
    .unwrap();
    eventually("3 DLQ records", || s.kafka.records("dlq", 0).len() == 3).await;
    let first = &s.kafka.records("dlq", 0)[0];
    let header = |k: &str| {
        first
            .headers
            .iter()
            .find(|(h, _)| h == k)
            .and_then(|(_, v)| v.clone())
            .map(|v| String::from_utf8(v.to_vec()).unwrap())
    };
    assert_eq!(
        header("__connect.errors.stage").as_deref(),
        Some("TRANSFORMATION")
    );
    assert_eq!(
        header("__connect.errors.connector.name").as_deref(),
        Some("src")
    );
    assert_eq!(
        header("__connect.errors.source.offset").as_deref(),
        Some(r#"{"n":0}"#)
    );
    assert_eq!(
        String::from_utf8(first.value.clone().unwrap().to_vec()).unwrap(),
        r#"{"schema":{"type":"string","optional":false},"payload":"v0"}"#
    );
    assert!(topic_values(&s.kafka, "out").is_empty());
    eventually("offsets move past dead-lettered records", || {
        stored(&s.store, "src") == Some(2)
    })
    .await;
    w.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tolerance_none_fails_the_task_with_a_trace() {
    let s = setup();
    let w = worker(&s);
    w.create_connector(
        "src",
        props(&[
            ("connector.class", "PassThroughSource"),
            ("count", "3"),
            ("topic", "out"),
            ("transforms", "route"),
            ("transforms.route.type", "TimestampRouter"),
        ]),
        TargetState::Started,
    )
    .await
    .unwrap();
    let mut trace = None;
    eventually("task FAILED", || {
        let status = futures::executor::block_on(w.connector_status("src")).unwrap();
        trace = status.tasks[0].state.trace.clone();
        status.tasks[0].state.state == "FAILED"
    })
    .await;
    let trace = trace.unwrap();
    assert!(trace.contains("Tolerance exceeded"), "{trace}");
    assert!(topic_values(&s.kafka, "out").is_empty());
    assert_eq!(stored(&s.store, "src"), None);
    w.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sink_converter_failures_go_to_the_dlq_with_raw_bytes() {
    let s = setup();
    let w = worker(&s);
    // One good record, one that is not JSON.
    let producer_sink = Arc::new(NullSink);
    let producer = s.kafka.producer(&ConfigMap::new(), producer_sink).unwrap();
    let good = br#"{"schema":{"type":"string","optional":false},"payload":"ok"}"#;
    producer
        .send(
            &connect_runtime::kafka::OutRecord::new("out", Some(b"not json")),
            0,
        )
        .unwrap();
    producer
        .send(
            &connect_runtime::kafka::OutRecord::new("out", Some(good)),
            1,
        )
        .unwrap();
    producer.flush(Duration::from_secs(5)).await.unwrap();
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
        s.collected.0.lock().unwrap().len() == 1
    })
    .await;
    eventually("bad record dead-lettered", || {
        s.kafka.records("dlq", 0).len() == 1
    })
    .await;
    let dead = &s.kafka.records("dlq", 0)[0];
    assert_eq!(dead.value.as_deref(), Some(&b"not json"[..]));
    let stage = dead
        .headers
        .iter()
        .find(|(k, _)| k == "__connect.errors.stage")
        .and_then(|(_, v)| v.clone());
    assert_eq!(stage.as_deref(), Some(&b"VALUE_CONVERTER"[..]));
    eventually("both offsets committed", || {
        s.kafka
            .committed_offsets("connect-sink")
            .values()
            .any(|&o| o == 2)
    })
    .await;
    w.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retriable_put_failures_redeliver_the_batch() {
    let s = setup();
    let w = worker(&s);
    w.create_connector(
        "src",
        props(&[
            ("connector.class", "PassThroughSource"),
            ("count", "5"),
            ("topic", "out"),
        ]),
        TargetState::Started,
    )
    .await
    .unwrap();
    w.create_connector(
        "sink",
        props(&[
            ("connector.class", "CollectingSink"),
            ("topics", "out"),
            ("fail.puts", "2"),
        ]),
        TargetState::Started,
    )
    .await
    .unwrap();
    eventually("all 5 after redelivery", || {
        s.collected.0.lock().unwrap().len() >= 5
    })
    .await;
    let got = s.collected.0.lock().unwrap().clone();
    let want: Vec<String> = (0..5).map(|n| format!("v{n}")).collect();
    assert_eq!(got, want, "nothing lost, nothing duplicated");
    w.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crash_before_offset_commit_repeats_but_never_loses() {
    let s = setup();
    {
        let w = worker(&s);
        w.create_connector(
            "src",
            props(&[
                ("connector.class", "PassThroughSource"),
                ("count", "50"),
                ("topic", "out"),
            ]),
            TargetState::Started,
        )
        .await
        .unwrap();
        eventually("some records produced", || {
            s.kafka.records("out", 0).len() >= 10
        })
        .await;
        // Crash: no graceful shutdown, the latest offsets may not be stored.
        drop(w);
    }
    let before = stored(&s.store, "src");
    let w = worker(&s);
    w.create_connector(
        "src",
        props(&[
            ("connector.class", "PassThroughSource"),
            ("count", "50"),
            ("topic", "out"),
        ]),
        TargetState::Started,
    )
    .await
    .unwrap();
    eventually("all records after restart", || {
        let values = topic_values(&s.kafka, "out");
        (0..50).all(|n| {
            let want = format!(r#""payload":"v{n}""#);
            values.iter().any(|v| v.contains(&want))
        })
    })
    .await;
    // The restart resumed after the stored offset: records up to it were
    // not produced again.
    if let Some(b) = before {
        let values = topic_values(&s.kafka, "out");
        for n in 0..=b {
            let want = format!(r#""payload":"v{n}""#);
            assert_eq!(
                values.iter().filter(|v| v.contains(&want)).count(),
                1,
                "v{n}"
            );
        }
    }
    w.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pause_stops_the_flow_and_resume_restarts_it() {
    let s = setup();
    let w = worker(&s);
    w.create_connector(
        "sink",
        props(&[("connector.class", "CollectingSink"), ("topics", "out")]),
        TargetState::Paused,
    )
    .await
    .unwrap();
    w.create_connector(
        "src",
        props(&[
            ("connector.class", "PassThroughSource"),
            ("count", "5"),
            ("topic", "out"),
        ]),
        TargetState::Started,
    )
    .await
    .unwrap();
    eventually("records on the topic", || {
        s.kafka.records("out", 0).len() == 5
    })
    .await;
    eventually("sink reports PAUSED", || {
        futures::executor::block_on(w.connector_status("sink"))
            .map(|st| st.tasks.first().is_some_and(|t| t.state.state == "PAUSED"))
            .unwrap_or(false)
    })
    .await;
    // Paused: give it real time to (wrongly) deliver, then check nothing came.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(s.collected.0.lock().unwrap().is_empty());
    w.resume("sink").await.unwrap();
    eventually("records after resume", || {
        s.collected.0.lock().unwrap().len() == 5
    })
    .await;
    w.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_configs_are_rejected_whole() {
    let s = setup();
    let w = worker(&s);
    let e = w
        .create_connector(
            "sink",
            props(&[("connector.class", "CollectingSink"), ("tasks.max", "0")]),
            TargetState::Started,
        )
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("Connector configuration is invalid"), "{e}");
    assert!(e.contains("tasks.max") && e.contains("topics"), "{e}");
    let e = w
        .create_connector(
            "x",
            props(&[("connector.class", "Nope")]),
            TargetState::Started,
        )
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("Nope"), "{e}");
    assert!(w.connector_names().await.is_empty());
}

struct NullSink;
impl connect_runtime::kafka::DeliverySink for NullSink {
    fn delivered(
        &self,
        _: u64,
        _: std::result::Result<
            connect_runtime::kafka::Delivered<'_>,
            connect_runtime::kafka::KafkaError,
        >,
    ) {
    }
}
