//! Test connectors and helpers shared by the worker tests (in-memory Kafka
//! and librdkafka's mock cluster run the same cases).
#![allow(dead_code, unreachable_pub)] // each test binary uses a subset

use std::mem;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use connect_api::config::{ConfigDef, ConfigMap};
use connect_api::connector::{Connector, ConnectorContext, SinkConnector, SourceConnector};
use connect_api::sink::{SinkTask, SinkTaskContext};
use connect_api::source::{SourceTask, SourceTaskContext};
use connect_api::{Record, Result, Schema, SinkRecord, SourceMap, SourceRecord, Value};
/// The herder trait, so tests call a herder's methods without importing it.
#[allow(unused_imports)]
pub(crate) use connect_runtime::herder::{Herder, StandaloneHerder};
use connect_runtime::kafka::memory::MemoryKafka;
use connect_runtime::kafka::{KafkaCluster, NewTopic};
use connect_runtime::offsets::{MemoryOffsetStore, OffsetStore};
use connect_runtime::worker::{Plugins, Worker, WorkerConfig};

#[cfg(feature = "rdkafka")]
pub(crate) mod wire;

/// Emits `count` records "v0".."v{count-1}" on `topic`, in poll batches
/// of up to 10, resuming after the stored offset.
pub(crate) struct CountingTask {
    next: i64,
    count: i64,
    topic: String,
    partition: Arc<SourceMap>,
    name: String,
    heartbeat_only: bool,
    /// `commit_record` answers `not_implemented`, as the trait's default
    /// (the worker lets go of each record once sent).
    release_records: bool,
    context: Option<Arc<dyn SourceTaskContext>>,
}

/// Per connector name (the task's `name` setting): what its tasks did.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Counts {
    /// Records returned by `poll`.
    pub(crate) polled: u64,
    /// `commit_record` calls with metadata.
    pub(crate) acked: u64,
    /// `commit_record` calls without metadata (dropped records).
    pub(crate) dropped: u64,
    /// `poll` calls that had nothing left to return.
    pub(crate) idle_polls: u64,
    /// The source offset `n` of the last record `commit_record` acknowledged.
    pub(crate) last_acked: i64,
    /// Acknowledged records that still carried their value.
    pub(crate) acked_with_value: u64,
}

static PROGRESS: Mutex<Vec<(String, Counts)>> = Mutex::new(Vec::new());

fn bump(name: &str, change: impl FnOnce(&mut Counts)) {
    let mut p = PROGRESS.lock().unwrap();
    match p.iter_mut().find(|(n, _)| n == name) {
        Some((_, c)) => change(c),
        None => {
            let mut c = Counts::default();
            change(&mut c);
            p.push((name.to_string(), c));
        }
    }
}

/// What the tasks of connector `name` did so far.
pub(crate) fn counts(name: &str) -> Counts {
    PROGRESS
        .lock()
        .unwrap()
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, c)| *c)
        .unwrap_or_default()
}

pub(crate) fn partition() -> Arc<SourceMap> {
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
        self.name = config.get("name").cloned().unwrap_or_default();
        self.heartbeat_only = config.get("heartbeat.only").is_some_and(|v| v == "true");
        self.release_records = config.get("release.records").is_some_and(|v| v == "true");
        if let Some(o) = ctx.offset_storage_reader().offset(&self.partition) {
            if config
                .get("reject.stored.offset")
                .is_some_and(|v| v == "true")
            {
                return Err(connect_api::ConnectError::offset_invalid(
                    SourceMap::clone(&self.partition),
                    "the resume token expired",
                ));
            }
            self.next = o["n"].as_i64().unwrap_or(-1) + 1;
        }
        self.context = Some(ctx);
        Ok(())
    }
    async fn poll(&mut self) -> Result<Vec<SourceRecord>> {
        if self.heartbeat_only {
            // A quiet source: progress without records.
            tokio::time::sleep(Duration::from_millis(5)).await;
            if let Some(ctx) = &self.context {
                let mut off = SourceMap::new();
                off.insert("n".into(), self.next.into());
                ctx.heartbeat(self.partition.clone(), off);
                self.next += 1;
            }
            return Ok(vec![]);
        }
        if self.next >= self.count {
            bump(&self.name, |c| c.idle_polls += 1);
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
        bump(&self.name, |c| c.polled += (end - self.next) as u64);
        self.next = end;
        Ok(batch)
    }
    async fn commit_record(
        &mut self,
        record: &SourceRecord,
        metadata: Option<&connect_api::RecordMetadata>,
    ) -> Result<()> {
        if self.release_records {
            return Err(connect_api::ConnectError::not_implemented(
                "SourceTask::commit_record",
            ));
        }
        let n = record.source_offset.get("n").and_then(|n| n.as_i64());
        match metadata {
            Some(_) => bump(&self.name, |c| {
                c.acked += 1;
                c.last_acked = n.unwrap_or(-1);
                if !record.record.value.is_null() {
                    c.acked_with_value += 1;
                }
            }),
            None => bump(&self.name, |c| c.dropped += 1),
        }
        Ok(())
    }
    async fn stop(&mut self) -> Result<()> {
        Ok(())
    }
}

/// Passes its connector config to its task, so tests configure the task
/// through the connector config. With `reconfigure.on.start=true` it asks
/// for a task reconfiguration as it starts.
#[derive(Default)]
pub(crate) struct PassThroughSource(ConfigMap);

#[async_trait]
impl Connector for PassThroughSource {
    fn version(&self) -> String {
        "1.0".into()
    }
    fn config_def(&self) -> ConfigDef {
        ConfigDef::new()
    }
    async fn start(&mut self, config: &ConfigMap, ctx: Arc<dyn ConnectorContext>) -> Result<()> {
        self.0 = config.clone();
        hang_if(config, "start").await;
        if config
            .get("reconfigure.on.start")
            .is_some_and(|v| v == "true")
        {
            ctx.request_task_reconfiguration();
        }
        Ok(())
    }
    async fn task_configs(&mut self, _max: usize) -> Result<Vec<ConfigMap>> {
        hang_if(&self.0, "task_configs").await;
        Ok(vec![self.0.clone()])
    }
    async fn stop(&mut self) -> Result<()> {
        hang_if(&self.0, "stop").await;
        Ok(())
    }
}

/// Never returns when `hang.in` names `call`: a plugin call that hangs.
async fn hang_if(config: &ConfigMap, call: &str) {
    if config.get("hang.in").is_some_and(|c| c == call) {
        std::future::pending::<()>().await;
    }
}

impl SourceConnector for PassThroughSource {
    fn create_task(&self) -> Box<dyn SourceTask> {
        Box::new(CountingTask {
            next: 0,
            count: 0,
            topic: String::new(),
            partition: partition(),
            name: String::new(),
            heartbeat_only: false,
            release_records: false,
            context: None,
        })
    }
}

/// `a-0,b-1`: partitions as Kafka prints them.
fn names(partitions: &[connect_api::sink::TopicPartition]) -> String {
    partitions
        .iter()
        .map(|tp| tp.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

/// Collects the string form of every value it is given.
#[derive(Clone, Default)]
pub(crate) struct Collector(
    pub(crate) Arc<Mutex<Vec<String>>>,
    /// `pre_commit` calls so far: proof that the task loop is turning.
    pub(crate) Arc<AtomicUsize>,
    /// The task's lifecycle calls in order: `open out-0,..`, `close out-0,..`,
    /// `put []` (empty batches), `stop`.
    pub(crate) Arc<Mutex<Vec<String>>>,
);

impl Collector {
    /// The lifecycle calls so far.
    pub(crate) fn events(&self) -> Vec<String> {
        self.2.lock().unwrap().clone()
    }

    fn event(&self, e: String) {
        self.2.lock().unwrap().push(e);
    }

    /// How many times the worker has called `pre_commit` on its tasks.
    pub(crate) fn pre_commits(&self) -> usize {
        self.1.load(Ordering::SeqCst)
    }
}

/// Its tasks fail the first `fail.puts` non-empty puts with a retriable
/// error (logging `put failed`), once `fail.puts.after` records (default 0)
/// were collected; `put.timeout.ms=N` has them ask for N ms before the
/// redelivery (`SinkTaskContext::timeout`); and with `seek.on.open=N` ask (`SinkTaskContext::offset`) in
/// `open` to read every assigned partition from offset N; with
/// `report.in.pre_commit=true` they report the last record they were given
/// to the errant record reporter from `pre_commit` (a write that failed
/// when flushed); with `pause.on.first.open=true` they pause the partitions
/// of their first `open` (`SinkTaskContext::pause`) and no later ones;
/// `stop.delay.ms=N` makes `stop` take N ms, `first.put.delay.ms=N` the
/// first non-empty `put`; `task.count=N` runs N tasks;
/// `fail.pre_commit.at=N` fails the first `pre_commit` once N records
/// were collected;
/// `task.unresolvable=true` gives them a `${env:...}` reference to an unset
/// variable, so they cannot start where the worker enables `env`.
pub(crate) struct CollectingSink(Collector, ConfigMap);
pub(crate) struct CollectingTask {
    out: Collector,
    fail_first_puts: AtomicUsize,
    fail_puts_after: usize,
    put_timeout: Option<u64>,
    seek_on_open: Option<i64>,
    context: Option<Arc<dyn SinkTaskContext>>,
    report_in_pre_commit: bool,
    last: Option<SinkRecord>,
    pause_on_first_open: bool,
    stop_delay: Duration,
    first_put_delay: Duration,
    fail_pre_commit_at: Option<usize>,
}

#[async_trait]
impl SinkTask for CollectingTask {
    async fn start(&mut self, config: &ConfigMap, ctx: Arc<dyn SinkTaskContext>) -> Result<()> {
        let n = config
            .get("fail.puts")
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        self.fail_first_puts = AtomicUsize::new(n);
        self.fail_puts_after = config
            .get("fail.puts.after")
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        self.put_timeout = config.get("put.timeout.ms").and_then(|n| n.parse().ok());
        self.seek_on_open = config.get("seek.on.open").and_then(|n| n.parse().ok());
        self.stop_delay = Duration::from_millis(
            config
                .get("stop.delay.ms")
                .and_then(|n| n.parse().ok())
                .unwrap_or(0),
        );
        self.first_put_delay = Duration::from_millis(
            config
                .get("first.put.delay.ms")
                .and_then(|n| n.parse().ok())
                .unwrap_or(0),
        );
        self.fail_pre_commit_at = config
            .get("fail.pre_commit.at")
            .and_then(|n| n.parse().ok());
        self.pause_on_first_open = config
            .get("pause.on.first.open")
            .is_some_and(|v| v == "true");
        self.report_in_pre_commit = config
            .get("report.in.pre_commit")
            .is_some_and(|v| v == "true");
        self.context = Some(ctx);
        Ok(())
    }
    async fn open(&mut self, partitions: &[connect_api::sink::TopicPartition]) -> Result<()> {
        self.out.event(format!("open {}", names(partitions)));
        if mem::take(&mut self.pause_on_first_open) {
            if let Some(ctx) = &self.context {
                ctx.pause(partitions);
            }
        }
        if let (Some(offset), Some(ctx)) = (self.seek_on_open, &self.context) {
            ctx.offset(partitions.iter().map(|tp| (tp.clone(), offset)).collect());
        }
        Ok(())
    }
    async fn put(&mut self, records: &[SinkRecord]) -> Result<()> {
        if records.is_empty() {
            self.out.event("put []".into());
        } else if !self.first_put_delay.is_zero() {
            tokio::time::sleep(mem::take(&mut self.first_put_delay)).await;
        }
        if !records.is_empty()
            && self.out.0.lock().unwrap().len() >= self.fail_puts_after
            && self
                .fail_first_puts
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                .is_ok()
        {
            self.out.event("put failed".into());
            if let (Some(ms), Some(ctx)) = (self.put_timeout, &self.context) {
                ctx.timeout(ms);
            }
            return Err(connect_api::ConnectError::retriable("database busy"));
        }
        if self.report_in_pre_commit {
            if let Some(r) = records.last() {
                self.last = Some(r.clone());
            }
        }
        let mut out = self.out.0.lock().unwrap();
        out.extend(records.iter().map(|r| r.record.value.to_string()));
        Ok(())
    }
    async fn pre_commit(
        &mut self,
        offsets: connect_api::sink::TopicPartitionOffsets,
    ) -> Result<connect_api::sink::TopicPartitionOffsets> {
        self.out.1.fetch_add(1, Ordering::SeqCst);
        if self
            .fail_pre_commit_at
            .is_some_and(|n| self.out.0.lock().unwrap().len() >= n)
        {
            self.fail_pre_commit_at = None;
            return Err(connect_api::ConnectError::other("the flush failed"));
        }
        if let (Some(record), Some(ctx)) = (self.last.take(), &self.context) {
            if let Some(reporter) = ctx.errant_record_reporter() {
                let failure = connect_api::ConnectError::other("the flush of this record failed");
                let _ = reporter.report(&record, &failure).await;
            }
        }
        Ok(offsets)
    }
    async fn close(&mut self, partitions: &[connect_api::sink::TopicPartition]) -> Result<()> {
        self.out.event(format!("close {}", names(partitions)));
        Ok(())
    }
    async fn stop(&mut self) -> Result<()> {
        tokio::time::sleep(self.stop_delay).await;
        self.out.event("stop".into());
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
        let n = self
            .1
            .get("task.count")
            .and_then(|n| n.parse().ok())
            .unwrap_or(1);
        let mut config = self.1.clone();
        if config.get("task.unresolvable").is_some_and(|v| v == "true") {
            // Only the tasks refer to an unset variable: the connector
            // starts, its task cannot.
            config.insert(
                "x".into(),
                format!("${{{}}}", "env:CONNECT_TEST_VARIABLE_THAT_IS_NOT_SET"),
            );
        }
        Ok(vec![config; n])
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
            fail_puts_after: 0,
            put_timeout: None,
            seek_on_open: None,
            context: None,
            report_in_pre_commit: false,
            last: None,
            pause_on_first_open: false,
            stop_delay: Duration::ZERO,
            first_put_delay: Duration::ZERO,
            fail_pre_commit_at: None,
        })
    }
}

pub(crate) fn props(pairs: &[(&str, &str)]) -> ConfigMap {
    ConfigMap::from_pairs(pairs.iter().copied())
}

pub(crate) struct Setup {
    pub(crate) kafka: MemoryKafka,
    pub(crate) store: Arc<MemoryOffsetStore>,
    pub(crate) collected: Collector,
}

pub(crate) fn worker(setup: &Setup) -> StandaloneHerder {
    worker_on(
        Arc::new(setup.kafka.clone()),
        setup.store.clone(),
        &setup.collected,
    )
}

/// A worker on any cluster with the test connectors registered.
pub(crate) fn worker_on(
    cluster: Arc<dyn KafkaCluster>,
    store: Arc<MemoryOffsetStore>,
    collected: &Collector,
) -> StandaloneHerder {
    worker_with(cluster, store, collected, &[])
}

/// A PassThroughSource of `count` records whose every record fails its
/// transform (TimestampRouter needs a timestamp; these records have none),
/// tolerated and logged, with or without the record in the log line.
pub(crate) fn failing_transform_source(count: &str, include_messages: &str) -> ConfigMap {
    props(&[
        ("connector.class", "PassThroughSource"),
        ("count", count),
        ("topic", "out"),
        ("transforms", "route"),
        ("transforms.route.type", "TimestampRouter"),
        ("errors.tolerance", "all"),
        ("errors.log.enable", "true"),
        ("errors.log.include.messages", include_messages),
    ])
}

/// A worker with extra (or overriding) worker properties.
pub(crate) fn worker_with(
    cluster: Arc<dyn KafkaCluster>,
    store: Arc<dyn OffsetStore>,
    collected: &Collector,
    extra: &[(&str, &str)],
) -> StandaloneHerder {
    let configs = Arc::new(connect_runtime::config_store::MemoryConfigStore::new());
    let statuses = Arc::new(connect_runtime::status::MemoryStatusStore::default());
    worker_with_stores(cluster, store, configs, statuses, collected, extra)
}

/// [`worker_with`], keeping configs and states in the given stores.
pub(crate) fn worker_with_stores(
    cluster: Arc<dyn KafkaCluster>,
    store: Arc<dyn OffsetStore>,
    configs: Arc<dyn connect_runtime::config_store::ConfigStore>,
    statuses: Arc<dyn connect_runtime::status::StatusStore>,
    collected: &Collector,
    extra: &[(&str, &str)],
) -> StandaloneHerder {
    let worker = runner_with(cluster, store, statuses, collected, extra);
    StandaloneHerder::with_config_store(worker, configs)
}

/// A worker on the setup's in-memory Kafka with the test connectors and
/// what `register` adds (custom transforms, converters).
pub(crate) fn worker_with_plugins(
    setup: &Setup,
    extra: &[(&str, &str)],
    register: impl FnOnce(&mut Plugins),
) -> StandaloneHerder {
    let statuses = Arc::new(connect_runtime::status::MemoryStatusStore::default());
    let worker = runner_with_plugins(
        Arc::new(setup.kafka.clone()),
        setup.store.clone(),
        statuses,
        &setup.collected,
        extra,
        register,
    );
    StandaloneHerder::new(worker)
}

/// The unit runner alone, with the test connectors registered, keeping
/// states in `statuses`.
pub(crate) fn runner_with(
    cluster: Arc<dyn KafkaCluster>,
    store: Arc<dyn OffsetStore>,
    statuses: Arc<dyn connect_runtime::status::StatusStore>,
    collected: &Collector,
    extra: &[(&str, &str)],
) -> Worker {
    runner_with_plugins(cluster, store, statuses, collected, extra, |_| {})
}

/// [`runner_with`], with what `register` adds to the plugins.
pub(crate) fn runner_with_plugins(
    cluster: Arc<dyn KafkaCluster>,
    store: Arc<dyn OffsetStore>,
    statuses: Arc<dyn connect_runtime::status::StatusStore>,
    collected: &Collector,
    extra: &[(&str, &str)],
    register: impl FnOnce(&mut Plugins),
) -> Worker {
    let mut plugins = Plugins::with_builtins();
    register(&mut plugins);
    plugins.register_source("test.PassThroughSource", &["PassThroughSource"], || {
        Box::new(PassThroughSource::default())
    });
    let collected = collected.clone();
    plugins.register_sink("test.CollectingSink", &["CollectingSink"], move || {
        Box::new(CollectingSink(collected.clone(), ConfigMap::new()))
    });
    let mut worker_props = props(&[
        (
            "key.converter",
            "org.apache.kafka.connect.json.JsonConverter",
        ),
        (
            "value.converter",
            "org.apache.kafka.connect.json.JsonConverter",
        ),
        ("offset.flush.interval.ms", "50"),
    ]);
    worker_props.extend(props(extra));
    let config = WorkerConfig::parse(&worker_props).unwrap();
    Worker::with_status_store(config, plugins, cluster, store, statuses)
}

pub(crate) fn setup() -> Setup {
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
pub(crate) async fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while !check() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

pub(crate) fn stored(store: &MemoryOffsetStore, connector: &str) -> Option<i64> {
    store
        .get(connector, &partition())
        .and_then(|o| o["n"].as_i64())
}

pub(crate) fn topic_values(kafka: &MemoryKafka, topic: &str) -> Vec<String> {
    kafka
        .records(topic, 0)
        .into_iter()
        .map(|r| String::from_utf8(r.value.unwrap_or_default().to_vec()).unwrap())
        .collect()
}

/// Ignores acknowledgements (for producing test input).
pub(crate) struct NullSink;
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

/// Everything a test's tracing subscriber writes, shared with the test
/// (`tracing_subscriber::fmt().with_writer(move || captured.clone())`).
#[derive(Clone, Default)]
pub(crate) struct Captured(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    /// The captured lines that contain `needle`.
    pub(crate) fn lines_with(&self, needle: &str) -> Vec<String> {
        String::from_utf8_lossy(&self.0.lock().unwrap())
            .lines()
            .filter(|l| l.contains(needle))
            .map(str::to_string)
            .collect()
    }
}
