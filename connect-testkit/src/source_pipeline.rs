//! A source task under the real `WorkerSourceTask` loop on a [`MemoryKafka`].

use std::sync::Arc;
use std::time::Duration;

use connect_api::connector::{ConnectorContext, SourceConnector};
use connect_api::source::SourceTask;
use connect_api::{ConfigMap, ConnectError, Result, SinkRecord, SourceMap};
use connect_runtime::converters::ConverterRegistry;
use connect_runtime::kafka::ClientConfig;
use connect_runtime::kafka::{ConsumedRecord, KafkaCluster};
use connect_runtime::offsets::{KafkaOffsetStore, MemoryOffsetStore, OffsetStore};
use connect_runtime::source::{
    SourcePlugins, SourceTaskSettings, TransactionBoundary, TransactionSettings, WorkerSourceTask,
};
use connect_runtime::status::{State, TargetState};
use connect_transforms::chain::TransformChain;
use connect_transforms::registry::TransformRegistry;

use crate::context::FakeConnectorContext;
use crate::convert::Converters;
use crate::kafka::{topic_records, MemoryKafka};
use crate::pipeline::{task_converters, worker_config, Runner};
use crate::wait::eventually;

type TaskFactory = Box<dyn Fn() -> Box<dyn SourceTask> + Send>;

enum Tasks {
    Factory(TaskFactory),
    Connector(Box<dyn SourceConnector>),
}

/// One source task run by the runtime's own loop (transforms, converters,
/// produce with acknowledgements, offset flushes, `errors.*`, the DLQ) on a
/// [`MemoryKafka`], so faults injected there hit the real code path.
///
/// `start` takes the connector config: the task's own keys plus
/// `transforms.*`, `key.converter`/`value.converter`/`header.converter`
/// (JSON with schemas by default), `errors.*`, `offsets.invalid.policy`,
/// `source.max.inflight.records` and `producer.override.*`. Offsets are
/// flushed every 50 ms unless [`flush_interval`](Self::flush_interval)
/// says otherwise; the task's id is `<name>-0`.
///
/// The guide ([`crate::guide`]) has a complete example; in short:
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use connect_api::source::{SourceTask, SourceTaskContext};
/// use connect_api::{ConfigMap, Record, Result, Schema, SourceMap, SourceRecord, Value};
/// use connect_testkit::{config, MemoryKafka, SourcePipeline};
///
/// /// One greeting, then nothing.
/// struct Hello(bool);
/// #[async_trait::async_trait]
/// impl SourceTask for Hello {
///     async fn start(&mut self, _: &ConfigMap, _: Arc<dyn SourceTaskContext>) -> Result<()> { Ok(()) }
///     async fn poll(&mut self) -> Result<Vec<SourceRecord>> {
///         if std::mem::replace(&mut self.0, true) {
///             tokio::time::sleep(Duration::from_millis(100)).await;
///             return Ok(vec![]);
///         }
///         let r = Record::new("greetings", Some(Schema::string()), Value::from("hello"));
///         Ok(vec![SourceRecord::new(Arc::default(), SourceMap::new(), r)])
///     }
///     async fn stop(&mut self) -> Result<()> { Ok(()) }
/// }
///
/// # tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap().block_on(async {
/// let kafka = MemoryKafka::new();
/// let mut p = SourcePipeline::new(&kafka, "hello", || Box::new(Hello(false)));
/// p.start(config(&[("value.converter", "org.apache.kafka.connect.storage.StringConverter")])).await.unwrap();
/// let landed = p.wait_for_records("greetings", 1, Duration::from_secs(30)).await.unwrap();
/// assert_eq!(landed[0].value.as_deref(), Some(&b"hello"[..]));
/// p.stop().await.unwrap();
/// # });
/// ```
pub struct SourcePipeline {
    kafka: MemoryKafka,
    tasks: Tasks,
    store: Arc<MemoryOffsetStore>,
    /// Exactly once: the boundary, and the offsets topic store (on the
    /// same [`MemoryKafka`], read_committed), opened when first needed.
    exactly_once: Option<TransactionBoundary>,
    topic_offsets: tokio::sync::OnceCell<Arc<KafkaOffsetStore>>,
    runner: Runner,
    flush_interval: Duration,
    transforms: TransformRegistry,
    converters: ConverterRegistry,
    config: ConfigMap,
    task_config: Option<ConfigMap>,
    connector_context: Arc<FakeConnectorContext>,
}

impl std::fmt::Debug for SourcePipeline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SourcePipeline")
            .field("name", &self.runner.name)
            .field("running", &self.runner.is_running())
            .finish_non_exhaustive()
    }
}

impl SourcePipeline {
    /// A pipeline named `name` on `kafka`, making tasks with `factory` and
    /// giving them the connector config as their task config.
    pub fn new(
        kafka: &MemoryKafka,
        name: &str,
        factory: impl Fn() -> Box<dyn SourceTask> + Send + 'static,
    ) -> Self {
        Self::with_tasks(kafka, name, Tasks::Factory(Box::new(factory)))
    }

    /// A pipeline running `connector`: `start` starts it and runs the
    /// first of its `task_configs(1)`; tasks come from `create_task`.
    pub fn for_connector(
        kafka: &MemoryKafka,
        name: &str,
        connector: impl SourceConnector + 'static,
    ) -> Self {
        Self::with_tasks(kafka, name, Tasks::Connector(Box::new(connector)))
    }

    fn with_tasks(kafka: &MemoryKafka, name: &str, tasks: Tasks) -> Self {
        SourcePipeline {
            kafka: kafka.clone(),
            tasks,
            store: Arc::new(MemoryOffsetStore::new()),
            exactly_once: None,
            topic_offsets: tokio::sync::OnceCell::new(),
            runner: Runner::new(name),
            flush_interval: Duration::from_millis(50),
            transforms: TransformRegistry::with_builtins(),
            converters: ConverterRegistry::with_builtins(),
            config: ConfigMap::new(),
            task_config: None,
            connector_context: Arc::default(),
        }
    }

    /// Set `offset.flush.interval.ms` (default 50 ms).
    pub fn flush_interval(mut self, interval: Duration) -> Self {
        self.flush_interval = interval;
        self
    }

    /// Run the task exactly once (KIP-618), as a distributed worker with
    /// `exactly.once.source.support=enabled` does: its records and source
    /// offsets go in transactions ending at `boundary`
    /// ([`TransactionBoundary::Connector`] gives the task a
    /// [`TransactionContext`](connect_api::source::TransactionContext)).
    /// The offsets are then kept where Kafka keeps them, in the offsets
    /// topic `connect-offsets` of the [`MemoryKafka`], and read
    /// `read_committed`; [`stored_offset`](Self::stored_offset) and
    /// [`store_offset`](Self::store_offset) use it, and the records an
    /// aborted transaction sent are never among
    /// [`wait_for_records`](Self::wait_for_records)'.
    pub fn exactly_once(mut self, boundary: TransactionBoundary) -> Self {
        self.exactly_once = Some(boundary);
        self
    }

    /// The offsets topic of an exactly-once pipeline.
    pub const OFFSETS_TOPIC: &'static str = "connect-offsets";

    /// The store the task reads and commits offsets to.
    async fn offsets(&self) -> Result<Arc<dyn OffsetStore>> {
        if self.exactly_once.is_none() {
            return Ok(self.store.clone());
        }
        let store = self
            .topic_offsets
            .get_or_try_init(|| async {
                let client = ClientConfig::from_pairs([("isolation.level", "read_committed")]);
                KafkaOffsetStore::open(
                    &self.kafka,
                    &client,
                    Self::OFFSETS_TOPIC,
                    1,
                    1,
                    Duration::from_secs(30),
                )
                .await
                .map(Arc::new)
            })
            .await?;
        Ok(store.clone())
    }

    /// Resolve `transforms.*.type` in `registry` (register your SMTs there).
    pub fn with_transform_registry(mut self, registry: TransformRegistry) -> Self {
        self.transforms = registry;
        self
    }

    /// Resolve converter classes in `registry`.
    pub fn with_converter_registry(mut self, registry: ConverterRegistry) -> Self {
        self.converters = registry;
        self
    }

    /// The cluster the task produces to.
    pub fn kafka(&self) -> &MemoryKafka {
        &self.kafka
    }

    /// The offset store the task reads and commits to (not used by an
    /// [`exactly_once`](Self::exactly_once) pipeline, whose offsets are in
    /// its offsets topic).
    pub fn offset_store(&self) -> &Arc<MemoryOffsetStore> {
        &self.store
    }

    /// Store `offset` for source `partition`, as an earlier run would have.
    pub async fn store_offset(&self, partition: SourceMap, offset: SourceMap) -> Result<()> {
        self.offsets()
            .await?
            .write(&self.runner.name, vec![(partition, Some(offset))])
            .await
    }

    /// The offset stored for source `partition` (for an exactly-once
    /// pipeline: the last one a committed transaction wrote, as far as the
    /// store has read its topic; [`wait_for_offset`](Self::wait_for_offset)
    /// waits for it).
    pub fn stored_offset(&self, partition: &SourceMap) -> Option<SourceMap> {
        match self.exactly_once {
            None => self.store.get(&self.runner.name, partition),
            Some(_) => self
                .topic_offsets
                .get()
                .and_then(|s| s.get(&self.runner.name, partition)),
        }
    }

    /// Wait (tokio time) until the stored offset of `partition` satisfies `check`.
    pub async fn wait_for_offset(
        &self,
        partition: &SourceMap,
        timeout: Duration,
        mut check: impl FnMut(&SourceMap) -> bool,
    ) -> Result<SourceMap> {
        eventually("the stored source offset", timeout, || {
            self.stored_offset(partition).is_some_and(|o| check(&o))
        })
        .await
        .map_err(|e| {
            e.context(format_args!(
                "last stored offset {:?}",
                self.stored_offset(partition)
            ))
        })?;
        self.stored_offset(partition)
            .ok_or_else(|| ConnectError::other("stored offset vanished"))
    }

    /// Start a task with connector config `config`.
    pub async fn start(&mut self, config: ConfigMap) -> Result<()> {
        if self.runner.is_running() {
            return Err(ConnectError::conflict(format!(
                "{} is already running; stop it first",
                self.runner.name
            )));
        }
        if self.task_config.is_none() || self.config != config {
            let task_config = match &mut self.tasks {
                Tasks::Factory(_) => config.clone(),
                Tasks::Connector(c) => {
                    let ctx: Arc<dyn ConnectorContext> = self.connector_context.clone();
                    c.start(&config, ctx).await?;
                    c.task_configs(1).await?.into_iter().next().ok_or_else(|| {
                        ConnectError::other("the connector returned no task configs")
                    })?
                }
            };
            self.task_config = Some(task_config);
            self.config = config;
        }
        self.spawn().await
    }

    async fn spawn(&mut self) -> Result<()> {
        let config = &self.config;
        let converters = task_converters(config, &self.converters)?;
        // The connector-level keys are required by the definition but
        // mean nothing to one task run here.
        let mut full = config.clone();
        full.entry("name".into())
            .or_insert_with(|| self.runner.name.clone());
        full.entry("connector.class".into())
            .or_insert_with(|| "testkit".into());
        let mut settings = SourceTaskSettings::from_configs(
            self.runner.id(),
            &full,
            &worker_config(self.flush_interval)?,
        )?;
        settings.transactions = self.exactly_once.map(|boundary| TransactionSettings {
            transactional_id: TransactionSettings::transactional_id("testkit", &settings.id),
            boundary,
            offsets_topic: Self::OFFSETS_TOPIC.into(),
        });
        let store = self.offsets().await?;
        let transforms = TransformChain::from_config(config, &self.transforms)?;
        let task = match &self.tasks {
            Tasks::Factory(f) => f(),
            Tasks::Connector(c) => c.create_task(),
        };
        let plugins = SourcePlugins {
            task,
            task_config: self.task_config.clone().unwrap_or_default(),
            transforms: (!transforms.is_empty()).then_some(transforms),
            converters,
        };
        let cluster: Arc<dyn KafkaCluster> = Arc::new(self.kafka.clone());
        let control = self.runner.control();
        let task = WorkerSourceTask::new(
            settings,
            plugins,
            cluster,
            store,
            self.runner.status.clone(),
            control,
        )?;
        self.runner.spawn(task.run());
        Ok(())
    }

    /// Wait (tokio time) until `topic` holds at least `n` records; all of them.
    pub async fn wait_for_records(
        &self,
        topic: &str,
        n: usize,
        timeout: Duration,
    ) -> Result<Vec<ConsumedRecord>> {
        eventually(&format!("{n} records on topic '{topic}'"), timeout, || {
            topic_records(&self.kafka, topic).len() >= n
        })
        .await
        .map_err(|e| {
            e.context(format_args!(
                "{} records arrived; task states {:?}",
                topic_records(&self.kafka, topic).len(),
                self.runner.states()
            ))
        })?;
        Ok(topic_records(&self.kafka, topic))
    }

    /// Every record of `topic`, read back with the pipeline's converters.
    pub fn read_topic(&self, topic: &str) -> Result<Vec<SinkRecord>> {
        let mut conv = Converters::with_registry(&self.config, &self.converters)?;
        topic_records(&self.kafka, topic)
            .iter()
            .map(|r| conv.deserialize(r))
            .collect()
    }

    /// Stop the task (a final flush and offset commit) and return how its
    /// run ended.
    pub async fn stop(&mut self) -> Result<()> {
        self.runner.stop().await
    }

    /// Stop the task, ignoring how it ended (see [`stop`](Self::stop)), and
    /// start a fresh one with the same config and the stored offsets.
    pub async fn restart(&mut self) -> Result<()> {
        let _ = self.runner.stop().await;
        self.spawn().await
    }

    /// Wait (tokio time) for the task to fail; its error.
    pub async fn wait_failed(&mut self, timeout: Duration) -> Result<ConnectError> {
        self.runner.wait_failed(timeout).await
    }

    /// Pause the task (it stops polling).
    pub fn pause(&self) -> Result<()> {
        self.runner.set_target(TargetState::Paused)
    }

    /// Resume a paused task.
    pub fn resume(&self) -> Result<()> {
        self.runner.set_target(TargetState::Started)
    }

    /// Every state the task reported, in order (RUNNING, PAUSED, FAILED...).
    pub fn states(&self) -> Vec<State> {
        self.runner.states()
    }

    /// Errors the connector raised through its context.
    pub fn connector_errors(&self) -> Vec<String> {
        self.connector_context.errors()
    }
}
