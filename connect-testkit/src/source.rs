//! Drive one source task directly: start with stored offsets, poll,
//! acknowledge, commit, stop, restart from the committed offsets.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use connect_api::connector::SourceConnector;
use connect_api::source::{OffsetStorageReader, RecordMetadata, SourceTask, SourceTaskContext};
use connect_api::{ConfigMap, ConnectError, Result, SourceMap, SourceRecord};
use connect_runtime::offsets::offset_key;
use connect_transforms::chain::TransformChain;
use connect_transforms::registry::TransformRegistry;

use crate::convert::Converters;

type TaskFactory = Box<dyn Fn() -> Box<dyn SourceTask> + Send>;
type OffsetTable = Arc<Mutex<BTreeMap<String, (SourceMap, SourceMap)>>>;

/// A record the harness acknowledged: as the task polled it, and where it
/// "landed".
#[derive(Debug, Clone, PartialEq)]
pub struct Acked {
    /// The record as `poll` returned it (what Kafka passes to `commit_record`).
    pub record: SourceRecord,
    /// Where it landed; `None` when a transform dropped it.
    pub metadata: Option<RecordMetadata>,
}

struct Reader(OffsetTable);

impl OffsetStorageReader for Reader {
    fn offset(&self, partition: &SourceMap) -> Option<SourceMap> {
        let table = self.0.lock().ok()?;
        table
            .get(&offset_key("", partition))
            .map(|(_, o)| o.clone())
    }
}

struct Context {
    config: ConfigMap,
    reader: Reader,
    heartbeats: Mutex<Vec<(Arc<SourceMap>, SourceMap)>>,
}

impl SourceTaskContext for Context {
    fn configs(&self) -> &ConfigMap {
        &self.config
    }
    fn offset_storage_reader(&self) -> &dyn OffsetStorageReader {
        &self.reader
    }
    fn heartbeat(&self, partition: Arc<SourceMap>, offset: SourceMap) {
        if let Ok(mut h) = self.heartbeats.lock() {
            h.push((partition, offset));
        }
    }
}

/// Where an acknowledged record landed: topic, partition, timestamp.
type Landing = (Arc<str>, i32, Option<i64>);

/// A polled submission awaiting acknowledgement: a record (with where the
/// chain sent it, `None` when dropped) or a heartbeat (no record).
struct Pending {
    partition: Arc<SourceMap>,
    offset: SourceMap,
    polled: Option<SourceRecord>,
    landing: Option<Landing>,
}

/// Drives one [`SourceTask`] the way the runtime does, one step at a time.
///
/// Polled records go through the transform chain and converters when
/// configured, and wait for [`acknowledge`](Self::acknowledge), which calls
/// `commit_record` with metadata (the record's partition, or 0, and
/// offsets counting from 0 per topic partition). [`commit`](Self::commit)
/// stores the offsets of acknowledged records and calls
/// `SourceTask::commit`; [`restart`](Self::restart) stops the task and
/// starts a fresh one from the factory with the committed offsets, so a
/// test proves resume-after-restart. Unacknowledged records are lost by a
/// restart, as on a crash.
///
/// The guide ([`crate::guide`]) has a complete example; in short:
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use connect_api::source::{SourceTask, SourceTaskContext};
/// use connect_api::{ConfigMap, Record, Result, SourceMap, SourceRecord, Value};
/// use connect_testkit::{config, SourceHarness};
///
/// /// One record per poll, offset {"n": n}; ignores stored offsets.
/// struct Once(i64);
/// #[async_trait::async_trait]
/// impl SourceTask for Once {
///     async fn start(&mut self, _: &ConfigMap, _: Arc<dyn SourceTaskContext>) -> Result<()> { Ok(()) }
///     async fn poll(&mut self) -> Result<Vec<SourceRecord>> {
///         self.0 += 1;
///         let mut offset = SourceMap::new();
///         offset.insert("n".into(), self.0.into());
///         Ok(vec![SourceRecord::new(Arc::default(), offset, Record::new("t", None, Value::Int64(self.0)))])
///     }
///     async fn stop(&mut self) -> Result<()> { Ok(()) }
/// }
///
/// # tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap().block_on(async {
/// let mut h = SourceHarness::new(|| Box::new(Once(0)));
/// h.start(config(&[])).await.unwrap();
/// assert_eq!(h.poll_until(2, Duration::from_secs(30)).await.unwrap().len(), 2);
/// h.acknowledge_all().await.unwrap();
/// h.commit().await.unwrap();
/// assert_eq!(h.committed_offset(&SourceMap::new()).unwrap()["n"], 2);
/// # });
/// ```
pub struct SourceHarness {
    factory: TaskFactory,
    config: ConfigMap,
    offsets: OffsetTable,
    task: Option<Box<dyn SourceTask>>,
    context: Option<Arc<Context>>,
    chain: Option<TransformChain<SourceRecord>>,
    converters: Option<Converters>,
    pending: VecDeque<Pending>,
    acked: Vec<(Arc<SourceMap>, SourceMap)>,
    next_offset: HashMap<(Arc<str>, i32), i64>,
    commits: usize,
}

impl std::fmt::Debug for SourceHarness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SourceHarness")
            .field("running", &self.task.is_some())
            .field("pending", &self.pending.len())
            .field("commits", &self.commits)
            .finish_non_exhaustive()
    }
}

/// Let tokio time move after an empty poll (paused time only advances
/// while the test awaits a timer).
async fn idle() {
    tokio::time::sleep(Duration::from_millis(1)).await;
}

impl SourceHarness {
    /// A harness making tasks with `factory` (called again on restart).
    pub fn new(factory: impl Fn() -> Box<dyn SourceTask> + Send + 'static) -> Self {
        SourceHarness {
            factory: Box::new(factory),
            config: ConfigMap::new(),
            offsets: Arc::default(),
            task: None,
            context: None,
            chain: None,
            converters: None,
            pending: VecDeque::new(),
            acked: Vec::new(),
            next_offset: HashMap::new(),
            commits: 0,
        }
    }

    /// A harness making tasks with `connector.create_task()`.
    pub fn for_connector(connector: impl SourceConnector + 'static) -> Self {
        Self::new(move || connector.create_task())
    }

    /// Store `offset` for source `partition` before the task starts, as if
    /// an earlier run had committed it.
    pub fn with_offset(self, partition: SourceMap, offset: SourceMap) -> Self {
        if let Ok(mut t) = self.offsets.lock() {
            t.insert(offset_key("", &partition), (partition, offset));
        }
        self
    }

    /// Run polled records through the chain `config` describes
    /// (`transforms=...`, built-in SMTs).
    pub fn with_transforms(self, config: &ConfigMap) -> Result<Self> {
        self.with_transforms_from(config, &TransformRegistry::with_builtins())
    }

    /// Run polled records through the chain `config` describes, resolving
    /// classes in `registry`.
    pub fn with_transforms_from(
        mut self,
        config: &ConfigMap,
        registry: &TransformRegistry,
    ) -> Result<Self> {
        let chain = TransformChain::from_config(config, registry)?;
        self.chain = (!chain.is_empty()).then_some(chain);
        Ok(self)
    }

    /// Round-trip polled records through the converters `config` names
    /// (see [`Converters::from_config`]): the test sees what a consumer of
    /// the topic would read, and conversion errors surface from `poll`.
    pub fn with_converters(mut self, config: &ConfigMap) -> Result<Self> {
        self.converters = Some(Converters::from_config(config)?);
        Ok(self)
    }

    /// Start a task from the factory with `config` (kept for restarts).
    pub async fn start(&mut self, config: ConfigMap) -> Result<()> {
        self.config = config;
        self.start_fresh().await
    }

    async fn start_fresh(&mut self) -> Result<()> {
        let context = Arc::new(Context {
            config: self.config.clone(),
            reader: Reader(self.offsets.clone()),
            heartbeats: Mutex::new(Vec::new()),
        });
        let mut task = (self.factory)();
        let ctx: Arc<dyn SourceTaskContext> = context.clone();
        task.start(&self.config, ctx).await?;
        self.task = Some(task);
        self.context = Some(context);
        Ok(())
    }

    fn task(&mut self) -> Result<&mut Box<dyn SourceTask>> {
        self.task.as_mut().ok_or_else(|| {
            ConnectError::other("the source task is not started; call start() first")
        })
    }

    /// One `poll`; returns the records kept by the chain, after the
    /// converters (when configured). Each polled record awaits
    /// acknowledgement, dropped ones included.
    pub async fn poll(&mut self) -> Result<Vec<SourceRecord>> {
        let batch = self.task()?.poll().await?;
        if let Some(ctx) = &self.context {
            if let Ok(mut beats) = ctx.heartbeats.lock() {
                for (p, o) in beats.drain(..) {
                    self.pending.push_back(Pending {
                        partition: p,
                        offset: o,
                        polled: None,
                        landing: None,
                    });
                }
            }
        }
        let mut kept = Vec::with_capacity(batch.len());
        for (i, polled) in batch.into_iter().enumerate() {
            let out = match &mut self.chain {
                Some(chain) => chain
                    .apply(polled.clone())
                    .map_err(|e| e.context(format_args!("transforms, record {i} of the batch")))?,
                None => Some(polled.clone()),
            };
            let out = match (out, &mut self.converters) {
                (Some(r), Some(conv)) => Some(
                    conv.round_trip(r)
                        .map_err(|e| e.context(format_args!("record {i} of the batch")))?,
                ),
                (out, _) => out,
            };
            let landing = out.as_ref().map(|r| {
                let r = &r.record;
                (r.topic.clone(), r.kafka_partition.unwrap_or(0), r.timestamp)
            });
            kept.extend(out);
            self.pending.push_back(Pending {
                partition: polled.source_partition.clone(),
                offset: polled.source_offset.clone(),
                polled: Some(polled),
                landing,
            });
        }
        Ok(kept)
    }

    /// Poll until at least `n` records were kept or `timeout` (tokio time)
    /// passes; an error on timeout says how many arrived. An empty batch is
    /// followed by a 1 ms pause, so a task that returns at once with
    /// nothing lets time pass instead of spinning.
    pub async fn poll_until(&mut self, n: usize, timeout: Duration) -> Result<Vec<SourceRecord>> {
        let mut out = Vec::new();
        let deadline = tokio::time::Instant::now() + timeout;
        while out.len() < n {
            match tokio::time::timeout_at(deadline, self.poll()).await {
                Ok(batch) => {
                    let batch = batch?;
                    if batch.is_empty() {
                        idle().await;
                    }
                    out.extend(batch);
                }
                Err(_) => {
                    return Err(ConnectError::retriable(format!(
                        "expected {n} records within {timeout:?}, got {}",
                        out.len()
                    )))
                }
            }
            if out.len() < n && tokio::time::Instant::now() >= deadline {
                return Err(ConnectError::retriable(format!(
                    "expected {n} records within {timeout:?}, got {}",
                    out.len()
                )));
            }
        }
        Ok(out)
    }

    /// Poll for `duration` (tokio time) and return every record kept: to
    /// check that a task emits nothing more.
    pub async fn poll_for(&mut self, duration: Duration) -> Result<Vec<SourceRecord>> {
        let mut out = Vec::new();
        let deadline = tokio::time::Instant::now() + duration;
        while tokio::time::Instant::now() < deadline {
            match tokio::time::timeout_at(deadline, self.poll()).await {
                Ok(batch) => {
                    let batch = batch?;
                    if batch.is_empty() {
                        idle().await;
                    }
                    out.extend(batch);
                }
                Err(_) => break,
            }
        }
        Ok(out)
    }

    /// Polled submissions not yet acknowledged (records and heartbeats).
    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    /// Acknowledge the oldest `n` submissions (all when fewer): call
    /// `commit_record` as Kafka would, and make their offsets committable.
    pub async fn acknowledge(&mut self, n: usize) -> Result<Vec<Acked>> {
        let mut acked = Vec::new();
        for _ in 0..n {
            let Some(p) = self.pending.pop_front() else {
                break;
            };
            if let Some(polled) = p.polled {
                let metadata = p.landing.map(|(topic, partition, timestamp)| {
                    let next = self
                        .next_offset
                        .entry((topic.clone(), partition))
                        .or_insert(0);
                    let offset = *next;
                    *next += 1;
                    RecordMetadata::new(topic, partition, offset, timestamp)
                });
                match self.task()?.commit_record(&polled, metadata.as_ref()).await {
                    // The trait's default body: the task does not use it.
                    Err(e) if e.is_not_implemented() => {}
                    other => other?,
                }
                acked.push(Acked {
                    record: polled,
                    metadata,
                });
            }
            self.acked.push((p.partition, p.offset));
        }
        Ok(acked)
    }

    /// Acknowledge every pending submission.
    pub async fn acknowledge_all(&mut self) -> Result<Vec<Acked>> {
        self.acknowledge(self.pending.len()).await
    }

    /// Store the offsets of acknowledged records (the latest per source
    /// partition) and call `SourceTask::commit`.
    pub async fn commit(&mut self) -> Result<()> {
        if let Ok(mut t) = self.offsets.lock() {
            for (p, o) in self.acked.drain(..) {
                t.insert(offset_key("", &p), (SourceMap::clone(&p), o));
            }
        }
        self.task()?.commit().await?;
        self.commits += 1;
        Ok(())
    }

    /// How many times `SourceTask::commit` was called.
    pub fn commits(&self) -> usize {
        self.commits
    }

    /// The committed offset of source `partition`.
    pub fn committed_offset(&self, partition: &SourceMap) -> Option<SourceMap> {
        Reader(self.offsets.clone()).offset(partition)
    }

    /// Every committed (partition, offset).
    pub fn committed_offsets(&self) -> Vec<(SourceMap, SourceMap)> {
        self.offsets
            .lock()
            .map(|t| t.values().cloned().collect())
            .unwrap_or_default()
    }

    /// Stop the task. Pending submissions stay pending (acknowledge then
    /// commit to keep them).
    pub async fn stop(&mut self) -> Result<()> {
        match self.task.take() {
            Some(mut t) => t.stop().await,
            None => Ok(()),
        }
    }

    /// Stop the task (if running), forget unacknowledged and uncommitted
    /// work as a crash would, and start a fresh task from the factory with
    /// the same config and the committed offsets.
    pub async fn restart(&mut self) -> Result<()> {
        self.stop().await?;
        self.pending.clear();
        self.acked.clear();
        self.start_fresh().await
    }
}
