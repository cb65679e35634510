//! Embedding a worker in your own tokio service.
//!
//! The service here has one job of its own (a ticker standing in for your
//! HTTP server or consumer) and runs a Kafka Connect worker beside it, in
//! the same runtime: a source connector that turns the service's events
//! into records on topic `events`, and a sink connector that reads them
//! back. Kafka is librdkafka's in-process mock cluster (real wire
//! protocol); point `bootstrap.servers` at a real cluster instead in
//! production.
//!
//! ```sh
//! cargo run -p connect-examples --bin embedded-worker -- 3   # run 3 seconds
//! ```
#![allow(clippy::print_stdout)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use connect_api::config::{ConfigDef, ConfigMap};
use connect_api::connector::{Connector, ConnectorContext, SinkConnector, SourceConnector};
use connect_api::sink::{SinkTask, SinkTaskContext};
use connect_api::source::{SourceTask, SourceTaskContext};
use connect_api::{Record, Result, Schema, SinkRecord, SourceMap, SourceRecord, Value};
use connect_runtime::herder::{Herder, StandaloneHerder};
use connect_runtime::kafka::rdkafka_adapter::MockKafka;
use connect_runtime::kafka::KafkaCluster;
use connect_runtime::offsets::MemoryOffsetStore;
use connect_runtime::status::TargetState;
use connect_runtime::worker::{Plugins, Worker, WorkerConfig};
use tokio::sync::mpsc;

/// mimalloc rather than the system allocator: with glibc's, the producer's
/// delivery thread freeing librdkafka's buffers contends with the task
/// thread's allocations on one arena lock (BENCHMARKS.md, source pipeline).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The service's events, shared with the source connector's task.
type Events = Arc<Mutex<Option<mpsc::Receiver<String>>>>;

/// Source: turns the service's events into records.
struct EventSource(Events);
struct EventTask {
    events: Events,
    rx: Option<mpsc::Receiver<String>>,
    partition: Arc<SourceMap>,
    seq: i64,
}

#[async_trait]
impl SourceTask for EventTask {
    async fn start(&mut self, _: &ConfigMap, ctx: Arc<dyn SourceTaskContext>) -> Result<()> {
        self.rx = self.events.lock().ok().and_then(|mut e| e.take());
        // Resume numbering after what was committed (matters on restart).
        if let Some(o) = ctx.offset_storage_reader().offset(&self.partition) {
            self.seq = o.get("seq").and_then(|s| s.as_i64()).unwrap_or(0);
        }
        Ok(())
    }
    async fn poll(&mut self) -> Result<Vec<SourceRecord>> {
        let Some(rx) = self.rx.as_mut() else {
            return Ok(Vec::new());
        };
        // Wait for one event at most a second, then take what else is queued.
        let first = tokio::time::timeout(Duration::from_secs(1), rx.recv()).await;
        let Ok(Some(first)) = first else {
            return Ok(Vec::new());
        };
        let mut batch = vec![first];
        while let Ok(e) = rx.try_recv() {
            batch.push(e);
        }
        Ok(batch
            .into_iter()
            .map(|event| {
                self.seq += 1;
                let mut offset = SourceMap::new();
                offset.insert("seq".into(), self.seq.into());
                SourceRecord::new(
                    self.partition.clone(),
                    offset,
                    Record::new("events", Some(Schema::string()), Value::from(event)),
                )
            })
            .collect())
    }
    // No commit_record here: the worker lets go of each record once sent.
    async fn stop(&mut self) -> Result<()> {
        Ok(())
    }
}

#[async_trait]
impl Connector for EventSource {
    fn version(&self) -> String {
        env!("CARGO_PKG_VERSION").into()
    }
    fn config_def(&self) -> ConfigDef {
        ConfigDef::new()
    }
    async fn start(&mut self, _: &ConfigMap, _: Arc<dyn ConnectorContext>) -> Result<()> {
        Ok(())
    }
    async fn task_configs(&mut self, _: usize) -> Result<Vec<ConfigMap>> {
        Ok(vec![ConfigMap::new()])
    }
    async fn stop(&mut self) -> Result<()> {
        Ok(())
    }
}

impl SourceConnector for EventSource {
    fn create_task(&self) -> Box<dyn SourceTask> {
        let mut partition = SourceMap::new();
        partition.insert("service".into(), "ticker".into());
        Box::new(EventTask {
            events: self.0.clone(),
            rx: None,
            partition: Arc::new(partition),
            seq: 0,
        })
    }
}

/// Sink: prints what it reads back.
struct PrintSink;
struct PrintTask;

#[async_trait]
impl SinkTask for PrintTask {
    async fn start(&mut self, _: &ConfigMap, _: Arc<dyn SinkTaskContext>) -> Result<()> {
        Ok(())
    }
    async fn put(&mut self, records: &[SinkRecord]) -> Result<()> {
        for r in records {
            println!(
                "sink got {} from {}-{}@{}",
                r.record.value, r.original_topic, r.original_kafka_partition, r.kafka_offset
            );
        }
        Ok(())
    }
    async fn stop(&mut self) -> Result<()> {
        Ok(())
    }
}

#[async_trait]
impl Connector for PrintSink {
    fn version(&self) -> String {
        env!("CARGO_PKG_VERSION").into()
    }
    fn config_def(&self) -> ConfigDef {
        ConfigDef::new()
    }
    async fn start(&mut self, _: &ConfigMap, _: Arc<dyn ConnectorContext>) -> Result<()> {
        Ok(())
    }
    async fn task_configs(&mut self, _: usize) -> Result<Vec<ConfigMap>> {
        Ok(vec![ConfigMap::new()])
    }
    async fn stop(&mut self) -> Result<()> {
        Ok(())
    }
}

impl SinkConnector for PrintSink {
    fn create_task(&self) -> Box<dyn SinkTask> {
        Box::new(PrintTask)
    }
}

fn props(pairs: &[(&str, &str)]) -> ConfigMap {
    ConfigMap::from_pairs(pairs.iter().copied())
}

#[tokio::main]
async fn main() -> Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()),
        )
        .init();
    let seconds: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(3);

    // Kafka: librdkafka's mock cluster, in process, real protocol.
    let kafka = MockKafka::start(1, &[("events", 3)])?;
    println!("bootstrap.servers={}", kafka.bootstrap_servers());
    let cluster: Arc<dyn KafkaCluster> = Arc::new(kafka.cluster());

    // The service's own work, feeding the source connector.
    let (tx, rx) = mpsc::channel(1024);
    let events: Events = Arc::new(Mutex::new(Some(rx)));
    let service = tokio::spawn(async move {
        for n in 0.. {
            if tx.send(format!("tick {n}")).await.is_err() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    });

    // The worker, in the same runtime.
    let mut plugins = Plugins::with_builtins();
    plugins.register_source("example.EventSource", &["EventSource"], move || {
        Box::new(EventSource(events.clone()))
    });
    plugins.register_sink("example.PrintSink", &["PrintSink"], || Box::new(PrintSink));
    let config = WorkerConfig::parse(&props(&[
        (
            "key.converter",
            "org.apache.kafka.connect.storage.StringConverter",
        ),
        (
            "value.converter",
            "org.apache.kafka.connect.json.JsonConverter",
        ),
        ("offset.flush.interval.ms", "1000"),
    ]))?;
    let worker = Worker::new(config, plugins, cluster, Arc::new(MemoryOffsetStore::new()));
    // The herder decides what runs (here: what this program creates) and
    // drives the worker; REST, if you want it, serves the same herder.
    let herder = StandaloneHerder::new(worker);
    herder
        .create_connector(
            "events-in",
            props(&[("connector.class", "EventSource")]),
            TargetState::Started,
        )
        .await?;
    herder
        .create_connector(
            "events-out",
            props(&[("connector.class", "PrintSink"), ("topics", "events")]),
            TargetState::Started,
        )
        .await?;

    tokio::time::sleep(Duration::from_secs(seconds)).await;
    for name in herder.connector_names().await {
        let status = herder.connector_status(&name).await?;
        println!(
            "{name}: {} (tasks: {:?})",
            status.connector.state,
            status
                .tasks
                .iter()
                .map(|t| t.state.state.as_str())
                .collect::<Vec<_>>()
        );
    }
    // Graceful: flush, commit, stop.
    herder.shutdown().await;
    service.abort();
    Ok(())
}
