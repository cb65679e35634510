#![allow(missing_docs)] // criterion_group! generates an undocumented pub fn
//! End-to-end source pipeline against its floor, in the same run:
//!
//! - `pipeline`: a generator source task, 2 SMTs (InsertField static,
//!   ReplaceField rename), the JSON converter with schemas, produce, acks
//!   into the offset tracker, offset commit: the whole `WorkerSourceTask`.
//! - `direct`: the same number of pre-serialized values produced straight
//!   through the same adapter with no-op acknowledgement handling.
//!
//! Both run on the in-memory Kafka and over librdkafka's mock cluster (real
//! wire protocol). The figure that matters is the ratio pipeline/direct.
//! Also the sink path: consume, convert, 2 SMTs, put to a no-op task.

/// With `--features mimalloc`, the figures for the allocator the worker
/// binaries use (see BENCHMARKS.md).
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use connect_api::config::ConfigMap;
use connect_api::sink::{SinkTask, SinkTaskContext};
use connect_api::source::{SourceTask, SourceTaskContext};
use connect_api::{
    Record, Result, Schema, SchemaBuilder, SinkRecord, SourceMap, SourceRecord, Struct, Value,
};
use connect_runtime::converters::{ConverterRegistry, TaskConverters};
use connect_runtime::errors::ErrorConfig;
use connect_runtime::kafka::memory::MemoryKafka;
use connect_runtime::kafka::{
    Delivered, DeliverySink, KafkaCluster, KafkaError, NewTopic, OutRecord, Subscription,
};
use connect_runtime::offsets::MemoryOffsetStore;
use connect_runtime::sink::{SinkPlugins, SinkTaskSettings, WorkerSinkTask};
use connect_runtime::source::{
    OffsetsInvalidPolicy, SourcePlugins, SourceTaskSettings, WorkerSourceTask,
};
use connect_runtime::status::{State, StatusListener, TargetState, TaskId};
use connect_transforms::chain::TransformChain;
use connect_transforms::registry::TransformRegistry;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};

const RECORDS: u64 = 100_000;
const PARTITIONS: i32 = 8;
const TOPIC: &str = "bench";

fn schema() -> Schema {
    SchemaBuilder::struct_()
        .name("bench.Line")
        .field("id", Schema::int64())
        .field("name", Schema::string())
        .field("city", Schema::optional_string())
        .build()
        .expect("valid schema")
}

/// Yields `total` struct records in batches of 1000, then nothing.
struct Generator {
    next: u64,
    total: u64,
    schema: Schema,
    partition: Arc<SourceMap>,
    topic: Arc<str>,
}

#[async_trait]
impl SourceTask for Generator {
    async fn start(&mut self, _: &ConfigMap, _: Arc<dyn SourceTaskContext>) -> Result<()> {
        Ok(())
    }
    async fn poll(&mut self) -> Result<Vec<SourceRecord>> {
        if self.next >= self.total {
            tokio::time::sleep(Duration::from_millis(5)).await;
            return Ok(Vec::new());
        }
        let end = (self.next + 1000).min(self.total);
        let mut batch = Vec::with_capacity((end - self.next) as usize);
        for n in self.next..end {
            // Values in field order: what a source that knows its schema
            // builds (no per-field name lookup).
            let s = Struct::from_parts(
                self.schema.clone(),
                vec![
                    Value::Int64(n as i64),
                    Value::from("some name"),
                    Value::from("Lyon"),
                ],
            )?;
            let mut offset = SourceMap::new();
            offset.insert("n".into(), n.into());
            let mut record = Record::new(
                self.topic.clone(),
                Some(self.schema.clone()),
                Value::Struct(s),
            );
            record.kafka_partition = Some((n % PARTITIONS as u64) as i32);
            batch.push(SourceRecord::new(self.partition.clone(), offset, record));
        }
        self.next = end;
        Ok(batch)
    }
    async fn stop(&mut self) -> Result<()> {
        Ok(())
    }
}

struct NoStatus;
impl StatusListener for NoStatus {
    fn task_state(&self, _: &TaskId, state: State, trace: Option<String>) {
        if state == State::Failed {
            panic!("benchmark task failed: {trace:?}");
        }
    }
}

fn cfg(pairs: &[(&str, &str)]) -> ConfigMap {
    ConfigMap::from_pairs(pairs.iter().copied())
}

/// InsertField (static `field`) and ReplaceField (rename city to town).
fn chain<R: connect_api::ConnectRecord>(field: &str) -> TransformChain<R> {
    let config = cfg(&[
        ("transforms", "insert,rename"),
        ("transforms.insert.type", "InsertField$Value"),
        ("transforms.insert.static.field", field),
        ("transforms.insert.static.value", "bench"),
        ("transforms.rename.type", "ReplaceField$Value"),
        ("transforms.rename.renames", "city:town"),
    ]);
    TransformChain::from_config(&config, &TransformRegistry::with_builtins()).expect("valid chain")
}

/// JSON with schemas for keys and values, as the worker would pick them.
fn json_converters() -> TaskConverters {
    let worker = cfg(&[
        (
            "key.converter",
            "org.apache.kafka.connect.json.JsonConverter",
        ),
        (
            "value.converter",
            "org.apache.kafka.connect.json.JsonConverter",
        ),
    ]);
    TaskConverters::for_connector(
        &ConverterRegistry::with_builtins(),
        &ConfigMap::new(),
        &worker,
    )
    .expect("json converters")
}

/// Sum of end offsets: how many records the topic holds.
type Count = Arc<dyn Fn() -> u64 + Send + Sync>;

async fn run_pipeline(cluster: Arc<dyn KafkaCluster>, count: Count) -> Duration {
    let settings = SourceTaskSettings {
        id: TaskId {
            connector: "bench".into(),
            task: 0,
        },
        flush_interval: Duration::from_millis(200),
        flush_timeout: Duration::from_secs(5),
        max_in_flight: 50_000,
        topic_creation: None,
        offsets_invalid_policy: OffsetsInvalidPolicy::Fail,
        errors: ErrorConfig::default(),
        producer: cfg(&[("linger.ms", "5")]),
        shutdown_timeout: Duration::from_secs(10),
        metrics: Default::default(),
        transactions: None,
    };
    let mut partition = SourceMap::new();
    partition.insert("p".into(), 0.into());
    let plugins = SourcePlugins {
        task: Box::new(Generator {
            next: 0,
            total: RECORDS,
            schema: schema(),
            partition: Arc::new(partition),
            topic: Arc::from(TOPIC),
        }),
        task_config: ConfigMap::new(),
        transforms: Some(chain("origin")),
        converters: json_converters(),
    };
    let (control, rx) = tokio::sync::watch::channel(TargetState::Started);
    let base = count();
    let task = WorkerSourceTask::new(
        settings,
        plugins,
        cluster,
        Arc::new(MemoryOffsetStore::new()),
        Arc::new(NoStatus),
        rx,
    )
    .expect("task");
    // As for `direct`, the clock starts once the producer exists.
    let start = Instant::now();
    let handle = tokio::spawn(task.run());
    while count() < base + RECORDS {
        tokio::time::sleep(Duration::from_micros(200)).await;
    }
    let elapsed = start.elapsed();
    let _ = control.send(TargetState::Stopped);
    handle.await.expect("join").expect("task ok");
    elapsed
}

struct CountingSink(AtomicU64);
impl DeliverySink for CountingSink {
    fn delivered(&self, _: u64, result: std::result::Result<Delivered<'_>, KafkaError>) {
        if result.is_ok() {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// The floor: the same JSON bytes, pre-serialized, produced directly.
async fn run_direct(cluster: Arc<dyn KafkaCluster>, payload: &[u8]) -> Duration {
    let acks = Arc::new(CountingSink(AtomicU64::new(0)));
    // The settings the source task's producer runs with (Kafka Connect's
    // source producer defaults), so the two paths differ only in the work
    // between poll and send.
    let config = cfg(&[
        ("linger.ms", "5"),
        ("acks", "all"),
        ("max.in.flight.requests.per.connection", "1"),
        ("delivery.timeout.ms", "2147483647"),
    ]);
    let producer = cluster.producer(&config, acks.clone()).expect("producer");
    let start = Instant::now();
    for n in 0..RECORDS {
        let mut out = OutRecord::new(TOPIC, Some(payload));
        out.partition = Some((n % PARTITIONS as u64) as i32);
        loop {
            match producer.send(&out, n) {
                Ok(()) => break,
                Err(connect_runtime::kafka::SendError::QueueFull) => {
                    tokio::time::sleep(Duration::from_micros(100)).await
                }
                Err(e) => panic!("send failed: {e}"),
            }
        }
    }
    producer
        .flush(Duration::from_secs(60))
        .await
        .expect("flush");
    while acks.0.load(Ordering::Relaxed) < RECORDS {
        tokio::time::sleep(Duration::from_micros(200)).await;
    }
    start.elapsed()
}

fn payload() -> Vec<u8> {
    br#"{"schema":{"type":"struct","fields":[{"type":"int64","optional":false,"field":"id"},{"type":"string","optional":false,"field":"name"},{"type":"string","optional":true,"field":"town"},{"type":"string","optional":true,"field":"origin"}],"optional":false,"name":"bench.Line"},"payload":{"id":12345,"name":"some name","town":"Lyon","origin":"bench"}}"#.to_vec()
}

fn memory_cluster() -> (Arc<dyn KafkaCluster>, Count) {
    let kafka = MemoryKafka::new();
    kafka
        .create_topic(&NewTopic::new(TOPIC, PARTITIONS))
        .expect("topic");
    let k = kafka.clone();
    let count: Count = Arc::new(move || {
        (0..PARTITIONS)
            .map(|p| k.end_offset(TOPIC, p).unwrap_or(0).max(0) as u64)
            .sum()
    });
    (Arc::new(kafka), count)
}

fn source_in_memory(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let mut group = c.benchmark_group("source_in_memory");
    group.throughput(Throughput::Elements(RECORDS));
    group.sample_size(10);
    let payload = payload();
    group.bench_function("direct", |b| {
        b.iter_custom(|iters| {
            (0..iters)
                .map(|_| rt.block_on(run_direct(memory_cluster().0, &payload)))
                .sum()
        })
    });
    group.bench_function("pipeline", |b| {
        b.iter_custom(|iters| {
            (0..iters)
                .map(|_| {
                    let (cluster, count) = memory_cluster();
                    rt.block_on(run_pipeline(cluster, count))
                })
                .sum()
        })
    });
    group.finish();
}

fn source_over_mock_cluster(c: &mut Criterion) {
    use connect_runtime::kafka::rdkafka_adapter::MockKafka;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let mut group = c.benchmark_group("source_over_mock_cluster");
    group.throughput(Throughput::Elements(RECORDS));
    group.sample_size(10);
    let payload = payload();
    // One mock cluster per measurement: its 5 MiB per partition retention
    // must not drop what we count. 8 partitions x 100k x ~350 B fits.
    let fresh = || {
        let mock = MockKafka::start(1, &[(TOPIC, PARTITIONS)]).expect("mock cluster");
        let cluster: Arc<dyn KafkaCluster> = Arc::new(mock.cluster());
        (mock, cluster)
    };
    group.bench_function("direct", |b| {
        b.iter_custom(|iters| {
            (0..iters)
                .map(|_| {
                    let (_mock, cluster) = fresh();
                    rt.block_on(run_direct(cluster, &payload))
                })
                .sum()
        })
    });
    group.bench_function("pipeline", |b| {
        b.iter_custom(|iters| {
            (0..iters)
                .map(|_| {
                    let (_mock, cluster) = fresh();
                    // Count acknowledged records through commit_record-free
                    // means: the producer's end offsets via the admin port.
                    let acked = Arc::new(AtomicU64::new(0));
                    let counter = acked.clone();
                    let counting = Arc::new(AckCountingCluster {
                        inner: cluster,
                        acked: counter,
                    });
                    let count: Count = Arc::new(move || acked.load(Ordering::Relaxed));
                    rt.block_on(run_pipeline(counting, count))
                })
                .sum()
        })
    });
    group.finish();
}

/// Wraps a cluster so the benchmark can count acks of the task's producer.
struct AckCountingCluster {
    inner: Arc<dyn KafkaCluster>,
    acked: Arc<AtomicU64>,
}

struct TeeSink {
    inner: Arc<dyn DeliverySink>,
    acked: Arc<AtomicU64>,
}

impl DeliverySink for TeeSink {
    fn delivered(&self, token: u64, result: std::result::Result<Delivered<'_>, KafkaError>) {
        if result.is_ok() {
            self.acked.fetch_add(1, Ordering::Relaxed);
        }
        self.inner.delivered(token, result);
    }
}

impl KafkaCluster for AckCountingCluster {
    fn producer(
        &self,
        config: &connect_runtime::kafka::ClientConfig,
        sink: Arc<dyn DeliverySink>,
    ) -> std::result::Result<Box<dyn connect_runtime::kafka::Producer>, KafkaError> {
        let tee = Arc::new(TeeSink {
            inner: sink,
            acked: self.acked.clone(),
        });
        self.inner.producer(config, tee)
    }
    fn consumer(
        &self,
        config: &connect_runtime::kafka::ClientConfig,
    ) -> std::result::Result<Box<dyn connect_runtime::kafka::Consumer>, KafkaError> {
        self.inner.consumer(config)
    }
    fn admin(
        &self,
        config: &connect_runtime::kafka::ClientConfig,
    ) -> std::result::Result<Box<dyn connect_runtime::kafka::Admin>, KafkaError> {
        self.inner.admin(config)
    }
}

/// A sink task that only counts.
struct NoopSink(Arc<AtomicU64>);

#[async_trait]
impl SinkTask for NoopSink {
    async fn start(&mut self, _: &ConfigMap, _: Arc<dyn SinkTaskContext>) -> Result<()> {
        Ok(())
    }
    async fn put(&mut self, records: &[SinkRecord]) -> Result<()> {
        self.0.fetch_add(records.len() as u64, Ordering::Relaxed);
        Ok(())
    }
    async fn stop(&mut self) -> Result<()> {
        Ok(())
    }
}

fn sink_in_memory(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let mut group = c.benchmark_group("sink_in_memory");
    group.throughput(Throughput::Elements(RECORDS));
    group.sample_size(10);
    let payload = payload();
    group.bench_function("pipeline", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let (cluster, _) = memory_cluster();
                rt.block_on(run_direct(cluster.clone(), &payload));
                total += rt.block_on(run_sink(cluster));
            }
            total
        })
    });
    group.finish();
}

async fn run_sink(cluster: Arc<dyn KafkaCluster>) -> Duration {
    let seen = Arc::new(AtomicU64::new(0));
    let settings = SinkTaskSettings {
        id: TaskId {
            connector: "bench-sink".into(),
            task: 0,
        },
        subscription: Subscription::Topics(vec![TOPIC.into()]),
        flush_interval: Duration::from_millis(200),
        errors: ErrorConfig::default(),
        consumer: ConfigMap::new(),
        producer: ConfigMap::new(),
        poll_timeout: Duration::from_millis(100),
        metrics: Default::default(),
        assignment_warn_after: Duration::from_secs(10),
    };
    let plugins = SinkPlugins {
        task: Box::new(NoopSink(seen.clone())),
        task_config: ConfigMap::new(),
        transforms: Some(chain("sink_origin")),
        converters: json_converters(),
    };
    let (control, rx) = tokio::sync::watch::channel(TargetState::Started);
    let start = Instant::now();
    let task =
        WorkerSinkTask::new(settings, plugins, cluster, Arc::new(NoStatus), rx).expect("sink task");
    let handle = tokio::spawn(task.run());
    while seen.load(Ordering::Relaxed) < RECORDS {
        tokio::time::sleep(Duration::from_micros(200)).await;
    }
    let elapsed = start.elapsed();
    let _ = control.send(TargetState::Stopped);
    handle.await.expect("join").expect("sink ok");
    elapsed
}

criterion_group!(
    benches,
    source_in_memory,
    source_over_mock_cluster,
    sink_in_memory
);
criterion_main!(benches);
