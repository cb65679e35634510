//! Exactly-once source delivery (KIP-618) in the task loop, on the
//! in-memory Kafka (whose transactions behave like Kafka's: read_committed,
//! aborts, fencing by transactional id): records and source offsets land
//! in one transaction, a crash between two boundaries replays what was not
//! committed and nothing else, and a zombie instance of a task cannot
//! commit once a new one took its transactional id.
//!
//! Each case has its at-least-once twin where that shows what the mode
//! removes.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use connect_api::config::ConfigMap;
use connect_api::source::{SourceTask, SourceTaskContext};
use connect_api::{ConnectError, Record, Result, Schema, SourceMap, SourceRecord, Value};
use connect_runtime::converters::{ConverterRegistry, TaskConverters};
use connect_runtime::errors::ErrorConfig;
use connect_runtime::kafka::memory::MemoryKafka;
use connect_runtime::kafka::{ClientConfig, NewTopic};
use connect_runtime::offsets::{
    ConnectorOffsetStore, KafkaOffsetStore, KafkaOffsetTopics, OffsetStore,
};
use connect_runtime::source::{
    OffsetsInvalidPolicy, SourcePlugins, SourceTaskSettings, TransactionBoundary,
    TransactionSettings, WorkerSourceTask,
};
use connect_runtime::status::{MemoryStatusStore, TargetState, TaskId};
use tokio::sync::watch;
use tokio::task::JoinHandle;

const TOPIC: &str = "numbers";
const OFFSETS: &str = "connect-offsets";
const BATCH: u64 = 10;

fn partition() -> SourceMap {
    let mut p = SourceMap::new();
    p.insert("p".into(), 0.into());
    p
}

/// Emits `n-0`, `n-1`, ... in batches of ten, from the stored offset on;
/// fails its poll when it reaches `fail_at` (if ever), and emits nothing
/// past `end`.
struct Numbers {
    next: u64,
    end: u64,
    fail_at: Arc<AtomicU64>,
    partition: Arc<SourceMap>,
}

#[async_trait]
impl SourceTask for Numbers {
    async fn start(&mut self, _: &ConfigMap, ctx: Arc<dyn SourceTaskContext>) -> Result<()> {
        self.next = ctx
            .offset_storage_reader()
            .offset(&self.partition)
            .and_then(|o| o.get("n").and_then(|n| n.as_u64()))
            .map_or(0, |n| n + 1);
        Ok(())
    }

    async fn poll(&mut self) -> Result<Vec<SourceRecord>> {
        if self.next >= self.end {
            tokio::time::sleep(Duration::from_millis(10)).await;
            return Ok(Vec::new());
        }
        if self.next >= self.fail_at.load(Ordering::SeqCst) {
            return Err(ConnectError::other("the source broke"));
        }
        let end = (self.next + BATCH).min(self.end);
        let batch = (self.next..end)
            .map(|n| {
                let mut offset = SourceMap::new();
                offset.insert("n".into(), n.into());
                let record = Record::new(
                    Arc::from(TOPIC),
                    Some(Schema::string()),
                    Value::from(format!("n-{n}")),
                );
                SourceRecord::new(self.partition.clone(), offset, record)
            })
            .collect();
        self.next = end;
        Ok(batch)
    }

    async fn stop(&mut self) -> Result<()> {
        Ok(())
    }
}

fn kafka() -> MemoryKafka {
    let kafka = MemoryKafka::new();
    kafka.create_topic(&NewTopic::new(TOPIC, 1)).unwrap();
    kafka
}

/// The offset store a worker with exactly-once support reads: the offsets
/// topic, read_committed.
async fn offset_store(kafka: &MemoryKafka) -> Arc<KafkaOffsetStore> {
    let client = ClientConfig::from_pairs([("isolation.level", "read_committed")]);
    let store = KafkaOffsetStore::open(kafka, &client, OFFSETS, 1, 1, Duration::from_secs(10))
        .await
        .unwrap();
    Arc::new(store)
}

fn converters() -> TaskConverters {
    let worker = ConfigMap::from_pairs([
        (
            "key.converter",
            "org.apache.kafka.connect.storage.StringConverter",
        ),
        (
            "value.converter",
            "org.apache.kafka.connect.storage.StringConverter",
        ),
    ]);
    TaskConverters::for_connector(
        &ConverterRegistry::with_builtins(),
        &ConfigMap::new(),
        &worker,
    )
    .unwrap()
}

/// Task 0 of connector `numbers`: exactly once with `boundary`, or at
/// least once (`None`).
fn settings(boundary: Option<TransactionBoundary>) -> SourceTaskSettings {
    let id = TaskId::new("numbers", 0);
    SourceTaskSettings {
        transactions: boundary.map(|boundary| TransactionSettings {
            transactional_id: TransactionSettings::transactional_id("connect-cluster", &id),
            boundary,
            offsets_topic: OFFSETS.into(),
        }),
        id,
        // Long: the at-least-once twin stores offsets only when told to.
        flush_interval: Duration::from_secs(3600),
        flush_timeout: Duration::from_secs(5),
        max_in_flight: 10_000,
        topic_creation: None,
        offsets_invalid_policy: OffsetsInvalidPolicy::Fail,
        errors: ErrorConfig::default(),
        producer: ClientConfig::new(),
        shutdown_timeout: Duration::from_secs(5),
        metrics: Default::default(),
    }
}

struct Running {
    control: watch::Sender<TargetState>,
    handle: JoinHandle<Result<()>>,
}

impl Running {
    async fn stop(self) -> Result<()> {
        let _ = self.control.send(TargetState::Stopped);
        self.handle.await.expect("the task does not panic")
    }

    /// A crash: the task's future is dropped where it is, with no final
    /// commit (kill -9 of its worker).
    async fn crash(self) {
        self.handle.abort();
        let _ = self.handle.await;
    }
}

/// [`Numbers`] up to `end` under the task loop.
fn start(
    kafka: &MemoryKafka,
    store: Arc<dyn OffsetStore>,
    boundary: Option<TransactionBoundary>,
    end: u64,
    fail_at: Arc<AtomicU64>,
) -> Running {
    let numbers = Numbers {
        next: 0,
        end,
        fail_at,
        partition: Arc::new(partition()),
    };
    start_task(kafka, store, boundary, Box::new(numbers))
}

/// `task` under the task loop.
fn start_task(
    kafka: &MemoryKafka,
    store: Arc<dyn OffsetStore>,
    boundary: Option<TransactionBoundary>,
    task: Box<dyn SourceTask>,
) -> Running {
    start_task_with(kafka, store, settings(boundary), task)
}

/// `task` under the task loop with `settings`.
fn start_task_with(
    kafka: &MemoryKafka,
    store: Arc<dyn OffsetStore>,
    settings: SourceTaskSettings,
    task: Box<dyn SourceTask>,
) -> Running {
    let plugins = SourcePlugins {
        task,
        task_config: ConfigMap::new(),
        transforms: None,
        converters: converters(),
    };
    let (control, rx) = watch::channel(TargetState::Started);
    let task = WorkerSourceTask::new(
        settings,
        plugins,
        Arc::new(kafka.clone()),
        store,
        Arc::new(MemoryStatusStore::default()),
        rx,
    )
    .unwrap();
    Running {
        control,
        handle: tokio::spawn(task.run()),
    }
}

fn never() -> Arc<AtomicU64> {
    Arc::new(AtomicU64::new(u64::MAX))
}

/// What a read_committed consumer of the topic reads.
fn committed_values(kafka: &MemoryKafka) -> Vec<String> {
    kafka
        .records(TOPIC, 0)
        .iter()
        .map(|r| String::from_utf8_lossy(r.value.as_deref().unwrap_or_default()).into_owned())
        .collect()
}

fn expected(range: std::ops::Range<u64>) -> Vec<String> {
    range.map(|n| format!("n-{n}")).collect()
}

async fn stored(kafka: &MemoryKafka) -> Option<SourceMap> {
    offset_store(kafka).await.get("numbers", &partition())
}

/// Wait (paused time advances when everything idles) until a
/// read_committed reader sees `n` records.
async fn wait_committed(kafka: &MemoryKafka, n: usize) {
    for _ in 0..10_000 {
        if committed_values(kafka).len() >= n {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!(
        "a read_committed reader sees {} records, not {n}",
        committed_values(kafka).len()
    );
}

#[tokio::test(start_paused = true)]
async fn records_and_their_offsets_land_in_one_transaction_per_poll() {
    let kafka = kafka();
    let store = offset_store(&kafka).await;
    let task = start(&kafka, store, Some(TransactionBoundary::Poll), 30, never());
    wait_committed(&kafka, 30).await;
    task.stop().await.unwrap();
    assert_eq!(committed_values(&kafka), expected(0..30));
    // The offsets came in the same transactions, to the offsets topic.
    let offset = stored(&kafka).await.expect("an offset is stored");
    assert_eq!(offset["n"], 29);
}

#[tokio::test(start_paused = true)]
async fn a_crash_between_boundaries_replays_only_what_was_not_committed() {
    // Exactly once: the first 20 records are committed, the next ones sit
    // in a transaction when the worker dies; the new instance aborts it
    // and sends them again, so every record is read once.
    let kafka = kafka();
    let store = offset_store(&kafka).await;
    let fail_at = Arc::new(AtomicU64::new(u64::MAX));
    let task = start(
        &kafka,
        store.clone(),
        Some(TransactionBoundary::Interval(Duration::from_secs(3600))),
        20,
        fail_at.clone(),
    );
    // The stop commits the first 20.
    wait_for_end_offset(&kafka, 20).await;
    task.stop().await.unwrap();
    let store = offset_store(&kafka).await;
    let task = start(
        &kafka,
        store,
        Some(TransactionBoundary::Interval(Duration::from_secs(3600))),
        45,
        never(),
    );
    wait_for_end_offset(&kafka, 20 + 1 + 25).await;
    task.crash().await;
    assert_eq!(
        committed_values(&kafka),
        expected(0..20),
        "the open transaction is not read"
    );
    let store = offset_store(&kafka).await;
    let task = start(
        &kafka,
        store,
        Some(TransactionBoundary::Interval(Duration::from_secs(3600))),
        60,
        never(),
    );
    wait_committed(&kafka, 20).await;
    // Let it run to its end, then stop: the stop commits.
    settle().await;
    task.stop().await.unwrap();
    assert_eq!(
        committed_values(&kafka),
        expected(0..60),
        "each record once"
    );

    // At least once, the same crash: the records sent after the last
    // stored offset are sent again, and a reader sees them twice.
    let kafka = self::kafka();
    let store = offset_store(&kafka).await;
    let task = start(&kafka, store, None, 20, never());
    wait_committed(&kafka, 20).await;
    task.stop().await.unwrap();
    let store = offset_store(&kafka).await;
    let task = start(&kafka, store, None, 45, never());
    wait_committed(&kafka, 45).await;
    task.crash().await;
    let store = offset_store(&kafka).await;
    let task = start(&kafka, store, None, 60, never());
    wait_committed(&kafka, 45 + 40).await;
    task.stop().await.unwrap();
    let values = committed_values(&kafka);
    let twice = values.iter().filter(|v| *v == "n-30").count();
    assert_eq!(twice, 2, "at least once replays n-20..n-44: {values:?}");
}

#[tokio::test(start_paused = true)]
async fn a_failed_task_aborts_its_transaction_and_keeps_its_offsets() {
    let kafka = kafka();
    let store = offset_store(&kafka).await;
    let fail_at = Arc::new(AtomicU64::new(35));
    let boundary = Some(TransactionBoundary::Interval(Duration::from_secs(3600)));
    let task = start(&kafka, store, boundary, 50, fail_at.clone());
    let e = task.handle.await.unwrap().unwrap_err();
    assert!(e.to_string().contains("the source broke"), "{e}");
    assert!(
        committed_values(&kafka).is_empty(),
        "the aborted records are not read"
    );
    assert_eq!(stored(&kafka).await, None, "no offset moved");
    // A restart sends everything once.
    fail_at.store(u64::MAX, Ordering::SeqCst);
    let store = offset_store(&kafka).await;
    let task = start(&kafka, store, boundary, 50, fail_at);
    settle().await;
    task.stop().await.unwrap();
    assert_eq!(committed_values(&kafka), expected(0..50));
    assert_eq!(stored(&kafka).await.unwrap()["n"], 49);
}

#[tokio::test(start_paused = true)]
async fn a_zombie_instance_cannot_commit_once_a_new_one_runs() {
    let kafka = kafka();
    let boundary = Some(TransactionBoundary::Interval(Duration::from_secs(3600)));
    // The zombie: its worker lost the task but it still runs.
    let zombie = start(&kafka, offset_store(&kafka).await, boundary, 20, never());
    wait_for_end_offset(&kafka, 20).await;
    // The task's new instance elsewhere takes the same transactional id.
    let new = start(&kafka, offset_store(&kafka).await, boundary, 30, never());
    settle().await;
    new.stop().await.unwrap();
    // The zombie's commit (at its stop) is refused: it is fenced.
    let e = zombie.stop().await.unwrap_err();
    assert!(e.to_string().to_lowercase().contains("fenced"), "{e}");
    assert_eq!(
        committed_values(&kafka),
        expected(0..30),
        "only the new instance's records"
    );
    assert_eq!(stored(&kafka).await.unwrap()["n"], 29);
}

/// Wait until the topic's end offset (records and markers, committed or
/// not) reaches `n`.
async fn wait_for_end_offset(kafka: &MemoryKafka, n: i64) {
    for _ in 0..10_000 {
        if kafka.end_offset(TOPIC, 0).unwrap_or(0) >= n {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!(
        "the topic's end offset stays at {:?}",
        kafka.end_offset(TOPIC, 0)
    );
}

/// Give a running task (paused) time to send what it has left: it idles
/// once it has sent up to its end.
async fn settle() {
    tokio::time::sleep(Duration::from_secs(1)).await;
}

/// Ends transactions where a table scan would: commits at `n-14`, aborts
/// at `n-24`, and commits the batch that ends with `n-39`.
struct Boundaries {
    inner: Numbers,
    ctx: Option<Arc<dyn SourceTaskContext>>,
}

#[async_trait]
impl SourceTask for Boundaries {
    async fn start(&mut self, config: &ConfigMap, ctx: Arc<dyn SourceTaskContext>) -> Result<()> {
        self.ctx = Some(ctx.clone());
        self.inner.start(config, ctx).await
    }

    async fn poll(&mut self) -> Result<Vec<SourceRecord>> {
        let batch = self.inner.poll().await?;
        let ctx = self.ctx.as_ref().expect("started");
        let tx = ctx
            .transaction_context()
            .expect("a transaction context with transaction.boundary=connector");
        for record in &batch {
            match record.source_offset["n"].as_u64() {
                Some(14) => tx.commit_transaction_at(record),
                Some(24) => tx.abort_transaction_at(record),
                Some(39) => tx.commit_transaction(),
                _ => {}
            }
        }
        Ok(batch)
    }

    async fn stop(&mut self) -> Result<()> {
        Ok(())
    }
}

#[tokio::test(start_paused = true)]
async fn a_connector_commits_and_aborts_where_it_says() {
    let kafka = kafka();
    let store = offset_store(&kafka).await;
    let task = Boundaries {
        inner: Numbers {
            next: 0,
            end: 40,
            fail_at: never(),
            partition: Arc::new(partition()),
        },
        ctx: None,
    };
    let boundary = Some(TransactionBoundary::Connector);
    let running = start_task(&kafka, store, boundary, Box::new(task));
    wait_committed(&kafka, 30).await;
    // The abort did not fail the task, and nothing else is committed by
    // the clock.
    settle().await;
    assert!(!running.handle.is_finished());
    let mut want = expected(0..15);
    want.extend(expected(25..40));
    assert_eq!(committed_values(&kafka), want);
    assert_eq!(stored(&kafka).await.unwrap()["n"], 39);
    running.stop().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn tasks_without_connector_boundaries_get_no_transaction_context() {
    struct Probe(Arc<AtomicU64>);
    #[async_trait]
    impl SourceTask for Probe {
        async fn start(&mut self, _: &ConfigMap, ctx: Arc<dyn SourceTaskContext>) -> Result<()> {
            self.0
                .store(ctx.transaction_context().is_some() as u64, Ordering::SeqCst);
            Ok(())
        }
        async fn poll(&mut self) -> Result<Vec<SourceRecord>> {
            tokio::time::sleep(Duration::from_millis(10)).await;
            Ok(Vec::new())
        }
        async fn stop(&mut self) -> Result<()> {
            Ok(())
        }
    }
    for boundary in [None, Some(TransactionBoundary::Poll)] {
        let kafka = kafka();
        let seen = Arc::new(AtomicU64::new(7));
        let store = offset_store(&kafka).await;
        let running = start_task(&kafka, store, boundary, Box::new(Probe(seen.clone())));
        settle().await;
        running.stop().await.unwrap();
        assert_eq!(seen.load(Ordering::SeqCst), 0, "{boundary:?}");
    }
}

/// The sink side: a sink whose consumer reads `read_committed`
/// (`consumer.override.isolation.level`) is never handed a record of an
/// aborted or open transaction; with Kafka's default `read_uncommitted` it
/// is.
#[tokio::test(start_paused = true)]
async fn a_read_committed_sink_never_sees_an_aborted_record() {
    use connect_api::sink::{SinkTask, SinkTaskContext};
    use connect_api::SinkRecord;
    use connect_runtime::kafka::{Delivered, DeliverySink, KafkaCluster, KafkaError, OutRecord};
    use connect_runtime::sink::{SinkPlugins, SinkTaskSettings, WorkerSinkTask};
    use connect_runtime::worker::WorkerConfig;
    use std::sync::Mutex;

    struct Collect(Arc<Mutex<Vec<String>>>);
    #[async_trait]
    impl SinkTask for Collect {
        async fn start(&mut self, _: &ConfigMap, _: Arc<dyn SinkTaskContext>) -> Result<()> {
            Ok(())
        }
        async fn put(&mut self, records: &[SinkRecord]) -> Result<()> {
            let mut seen = self.0.lock().unwrap();
            for r in records {
                seen.push(r.record.value.as_str().unwrap_or_default().to_string());
            }
            Ok(())
        }
        async fn stop(&mut self) -> Result<()> {
            Ok(())
        }
    }
    struct Ignore;
    impl DeliverySink for Ignore {
        fn delivered(&self, _: u64, _: std::result::Result<Delivered<'_>, KafkaError>) {}
    }

    let kafka = kafka();
    // committed "a", aborted "b", committed "c", then "d" left open.
    let producer = kafka
        .producer(
            &ClientConfig::from_pairs([("transactional.id", "writer")]),
            Arc::new(Ignore),
        )
        .unwrap();
    producer
        .init_transactions(Duration::from_secs(5))
        .await
        .unwrap();
    for (value, commit) in [
        ("a", Some(true)),
        ("b", Some(false)),
        ("c", Some(true)),
        ("d", None),
    ] {
        producer.begin_transaction().unwrap();
        producer
            .send(&OutRecord::new(TOPIC, Some(value.as_bytes())), 0)
            .unwrap();
        match commit {
            Some(true) => producer
                .commit_transaction(Duration::from_secs(5))
                .await
                .unwrap(),
            Some(false) => producer
                .abort_transaction(Duration::from_secs(5))
                .await
                .unwrap(),
            None => producer.flush(Duration::from_secs(5)).await.unwrap(),
        }
    }
    let worker = WorkerConfig::parse(&ConfigMap::from_pairs([
        (
            "key.converter",
            "org.apache.kafka.connect.storage.StringConverter",
        ),
        (
            "value.converter",
            "org.apache.kafka.connect.storage.StringConverter",
        ),
    ]))
    .unwrap();
    for (isolation, want) in [
        (Some("read_committed"), vec!["a", "c"]),
        (None, vec!["a", "b", "c", "d"]),
    ] {
        let mut connector = ConfigMap::from_pairs([
            ("name", "reader"),
            ("connector.class", "Collect"),
            ("topics", TOPIC),
        ]);
        if let Some(level) = isolation {
            connector.insert("consumer.override.isolation.level".into(), level.into());
        }
        let settings = SinkTaskSettings::from_configs(
            TaskId::new(format!("reader-{}", isolation.unwrap_or("default")), 0),
            &connector,
            &worker,
        )
        .unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let plugins = SinkPlugins {
            task: Box::new(Collect(seen.clone())),
            task_config: ConfigMap::new(),
            transforms: None,
            converters: converters(),
        };
        let (control, rx) = watch::channel(TargetState::Started);
        let cluster: Arc<dyn KafkaCluster> = Arc::new(kafka.clone());
        let task = WorkerSinkTask::new(
            settings,
            plugins,
            cluster,
            Arc::new(MemoryStatusStore::default()),
            rx,
        )
        .unwrap();
        let handle = tokio::spawn(task.run());
        for _ in 0..1000 {
            if seen.lock().unwrap().len() >= want.len() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        settle().await;
        let _ = control.send(TargetState::Stopped);
        handle.await.unwrap().unwrap();
        assert_eq!(*seen.lock().unwrap(), want, "isolation.level={isolation:?}");
    }
}

/// The offset `{"n": n}` of [`partition`].
fn offset_n(n: u64) -> SourceMap {
    let mut o = SourceMap::new();
    o.insert("n".into(), n.into());
    o
}

/// KIP-618's `offsets.storage.topic`: a connector with an offsets topic of
/// its own resumes from what it stored in the worker's topic before it had
/// one, commits its offsets to its own topic in its transactions and copies
/// them to the worker's; its next instance reads its own topic first.
#[tokio::test(start_paused = true)]
async fn a_connector_with_its_own_offsets_topic_commits_there_and_copies_to_the_workers() {
    const OWN: &str = "numbers-offsets";
    let kafka = kafka();
    let worker_store = offset_store(&kafka).await;
    // Stored in the worker's topic before the connector had its own.
    worker_store
        .write("numbers", vec![(partition(), Some(offset_n(9)))])
        .await
        .unwrap();
    let client = ClientConfig::from_pairs([("isolation.level", "read_committed")]);
    let topics = Arc::new(KafkaOffsetTopics::new(
        Arc::new(kafka.clone()),
        client.clone(),
        1,
        1,
        Duration::from_secs(10),
    ));
    let store = || -> Arc<dyn OffsetStore> {
        Arc::new(ConnectorOffsetStore::new(
            OWN,
            topics.clone(),
            worker_store.clone(),
        ))
    };
    let mut own_topic = settings(Some(TransactionBoundary::Poll));
    if let Some(t) = own_topic.transactions.as_mut() {
        t.offsets_topic = OWN.into();
    }
    let numbers = |end: u64| -> Box<dyn SourceTask> {
        Box::new(Numbers {
            next: 0,
            end,
            fail_at: never(),
            partition: Arc::new(partition()),
        })
    };
    let task = start_task_with(&kafka, store(), own_topic.clone(), numbers(30));
    wait_committed(&kafka, 20).await;
    task.stop().await.unwrap();
    assert_eq!(
        committed_values(&kafka),
        expected(10..30),
        "resumed after n-9"
    );
    let own = KafkaOffsetStore::open(&kafka, &client, OWN, 1, 1, Duration::from_secs(10))
        .await
        .unwrap();
    assert_eq!(
        own.get("numbers", &partition()),
        Some(offset_n(29)),
        "committed in the connector's topic"
    );
    assert_eq!(
        stored(&kafka).await,
        Some(offset_n(29)),
        "copied to the worker's"
    );

    // The worker's copy falls behind (say a copy failed): the next
    // instance still resumes from the connector's own topic.
    worker_store
        .write("numbers", vec![(partition(), Some(offset_n(5)))])
        .await
        .unwrap();
    let task = start_task_with(&kafka, store(), own_topic, numbers(40));
    wait_committed(&kafka, 30).await;
    task.stop().await.unwrap();
    assert_eq!(committed_values(&kafka), expected(10..40));
}
