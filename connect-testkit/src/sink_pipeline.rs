//! A sink task under the real `WorkerSinkTask` loop on a [`MemoryKafka`].

use std::sync::Arc;
use std::time::Duration;

use connect_api::connector::{ConnectorContext, SinkConnector};
use connect_api::sink::SinkTask;
use connect_api::{ConfigMap, ConnectError, Record, Result};
use connect_runtime::converters::ConverterRegistry;
use connect_runtime::kafka::{
    ClientConfig, DeliveryWaiter, KafkaCluster, OutRecord, SendError, TopicPartition,
    TopicPartitionOffsets,
};
use connect_runtime::sink::{SinkPlugins, SinkTaskSettings, WorkerSinkTask};
use connect_runtime::status::{State, TargetState};
use connect_transforms::chain::TransformChain;
use connect_transforms::registry::TransformRegistry;

use crate::context::FakeConnectorContext;
use crate::convert::Converters;
use crate::kafka::MemoryKafka;
use crate::pipeline::{task_converters, worker_config, Runner};
use crate::wait::eventually;

type TaskFactory = Box<dyn Fn() -> Box<dyn SinkTask> + Send>;

enum Tasks {
    Factory(TaskFactory),
    Connector(Box<dyn SinkConnector>),
}

/// One sink task run by the runtime's own loop (consumer group
/// `connect-<name>`, converters, transforms, `put`, `pre_commit`, offset
/// commits, `errors.*`, the DLQ) on a [`MemoryKafka`], so faults injected
/// there hit the real code path.
///
/// `start` takes the connector config: `topics` or `topics.regex`, the
/// task's own keys, `transforms.*`, converters (JSON with schemas by
/// default), `errors.*` and `consumer.override.*`. Offsets are committed
/// every 50 ms unless [`flush_interval`](Self::flush_interval) says
/// otherwise.
///
/// The guide ([`crate::guide`]) has a complete example; in short:
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use std::time::Duration;
/// use connect_api::sink::{SinkTask, SinkTaskContext};
/// use connect_api::{ConfigMap, Record, Result, Schema, SinkRecord, Value};
/// use connect_testkit::{config, MemoryKafka, SinkPipeline};
///
/// struct Count(Arc<Mutex<usize>>);
/// #[async_trait::async_trait]
/// impl SinkTask for Count {
///     async fn start(&mut self, _: &ConfigMap, _: Arc<dyn SinkTaskContext>) -> Result<()> { Ok(()) }
///     async fn put(&mut self, records: &[SinkRecord]) -> Result<()> {
///         *self.0.lock().unwrap() += records.len();
///         Ok(())
///     }
///     async fn stop(&mut self) -> Result<()> { Ok(()) }
/// }
///
/// # tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap().block_on(async {
/// let kafka = MemoryKafka::new();
/// let seen = Arc::new(Mutex::new(0));
/// let s = seen.clone();
/// let mut p = SinkPipeline::new(&kafka, "count", move || Box::new(Count(s.clone())));
/// p.start(config(&[("topics", "t")])).await.unwrap();
/// p.produce(&[Record::new("t", Some(Schema::string()), Value::from("a"))]).await.unwrap();
/// p.wait_for_commit("t", 0, 1, Duration::from_secs(30)).await.unwrap();
/// p.stop().await.unwrap();
/// assert_eq!(*seen.lock().unwrap(), 1);
/// assert_eq!(p.group(), "connect-count");
/// # });
/// ```
pub struct SinkPipeline {
    kafka: MemoryKafka,
    tasks: Tasks,
    runner: Runner,
    flush_interval: Duration,
    transforms: TransformRegistry,
    converters: ConverterRegistry,
    config: Option<ConfigMap>,
    task_config: ConfigMap,
    connector_context: Arc<FakeConnectorContext>,
}

impl std::fmt::Debug for SinkPipeline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SinkPipeline")
            .field("name", &self.runner.name)
            .field("running", &self.runner.is_running())
            .finish_non_exhaustive()
    }
}

impl SinkPipeline {
    /// A pipeline named `name` on `kafka`, making tasks with `factory` and
    /// giving them the connector config as their task config.
    pub fn new(
        kafka: &MemoryKafka,
        name: &str,
        factory: impl Fn() -> Box<dyn SinkTask> + Send + 'static,
    ) -> Self {
        Self::with_tasks(kafka, name, Tasks::Factory(Box::new(factory)))
    }

    /// A pipeline running `connector`: `start` starts it and runs the
    /// first of its `task_configs(1)`; tasks come from `create_task`.
    pub fn for_connector(
        kafka: &MemoryKafka,
        name: &str,
        connector: impl SinkConnector + 'static,
    ) -> Self {
        Self::with_tasks(kafka, name, Tasks::Connector(Box::new(connector)))
    }

    fn with_tasks(kafka: &MemoryKafka, name: &str, tasks: Tasks) -> Self {
        SinkPipeline {
            kafka: kafka.clone(),
            tasks,
            runner: Runner::new(name),
            flush_interval: Duration::from_millis(50),
            transforms: TransformRegistry::with_builtins(),
            converters: ConverterRegistry::with_builtins(),
            config: None,
            task_config: ConfigMap::new(),
            connector_context: Arc::default(),
        }
    }

    /// Set `offset.flush.interval.ms` (default 50 ms).
    pub fn flush_interval(mut self, interval: Duration) -> Self {
        self.flush_interval = interval;
        self
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

    /// The cluster the task consumes from.
    pub fn kafka(&self) -> &MemoryKafka {
        &self.kafka
    }

    /// The task's consumer group: `connect-<name>`.
    pub fn group(&self) -> String {
        format!("connect-{}", self.runner.name)
    }

    /// Start a task with connector config `config`.
    pub async fn start(&mut self, config: ConfigMap) -> Result<()> {
        if self.runner.is_running() {
            return Err(ConnectError::conflict(format!(
                "{} is already running; stop it first",
                self.runner.name
            )));
        }
        if self.config.as_ref() != Some(&config) {
            self.task_config = match &mut self.tasks {
                Tasks::Factory(_) => config.clone(),
                Tasks::Connector(c) => {
                    let ctx: Arc<dyn ConnectorContext> = self.connector_context.clone();
                    c.start(&config, ctx).await?;
                    c.task_configs(1).await?.into_iter().next().ok_or_else(|| {
                        ConnectError::other("the connector returned no task configs")
                    })?
                }
            };
            self.config = Some(config);
        }
        self.spawn()
    }

    fn spawn(&mut self) -> Result<()> {
        let config = self.config.clone().unwrap_or_default();
        let converters = task_converters(&config, &self.converters)?;
        let mut settings = SinkTaskSettings::from_configs(
            self.runner.id(),
            &config,
            &worker_config(self.flush_interval)?,
        )?;
        // Short polls: the harness drives tokio's paused clock.
        settings.poll_timeout = Duration::from_millis(100);
        let transforms = TransformChain::from_config(&config, &self.transforms)?;
        let task = match &self.tasks {
            Tasks::Factory(f) => f(),
            Tasks::Connector(c) => c.create_task(),
        };
        let plugins = SinkPlugins {
            task,
            task_config: self.task_config.clone(),
            transforms: (!transforms.is_empty()).then_some(transforms),
            converters,
        };
        let cluster: Arc<dyn KafkaCluster> = Arc::new(self.kafka.clone());
        let control = self.runner.control();
        let task = WorkerSinkTask::new(
            settings,
            plugins,
            cluster,
            self.runner.status.clone(),
            control,
        )?;
        self.runner.spawn(task.run());
        Ok(())
    }

    /// Produce `records` (serialized with the converters of the config
    /// given to `start`) and wait for their acknowledgements. Faults
    /// injected into produce hit this too.
    pub async fn produce(&self, records: &[Record]) -> Result<()> {
        let config = self.config.as_ref().ok_or_else(|| {
            ConnectError::other("call start() first: produce uses the connector's converters")
        })?;
        let mut conv = Converters::with_registry(config, &self.converters)?;
        let acks = Arc::new(DeliveryWaiter::default());
        let producer = self.kafka.producer(&ClientConfig::new(), acks.clone())?;
        for (token, record) in records.iter().enumerate() {
            let s = conv.serialize(record)?;
            let out = OutRecord {
                topic: &s.topic,
                partition: s.partition,
                key: s.key.as_deref(),
                value: s.value.as_deref(),
                timestamp: s.timestamp,
                headers: &s.headers,
            };
            acks.sending();
            loop {
                match producer.send(&out, token as u64) {
                    Ok(()) => break,
                    Err(SendError::QueueFull) => tokio::task::yield_now().await,
                    Err(SendError::Kafka(e)) => return Err(e.into()),
                }
            }
        }
        producer.flush(Duration::from_secs(30)).await?;
        acks.idle(Some(Duration::from_secs(30)))
            .await
            .map_err(|failure| {
                ConnectError::retriable(format!("of {} records produced, {failure}", records.len()))
            })
    }

    /// Offsets committed by the task's group.
    pub fn committed_offsets(&self) -> TopicPartitionOffsets {
        self.kafka.committed_offsets(&self.group())
    }

    /// Wait (tokio time) until the group committed at least `offset` for
    /// `topic`-`partition`.
    pub async fn wait_for_commit(
        &self,
        topic: &str,
        partition: i32,
        offset: i64,
        timeout: Duration,
    ) -> Result<()> {
        let tp = TopicPartition::new(topic, partition);
        eventually(
            &format!("offset {offset} committed for {tp}"),
            timeout,
            || {
                self.committed_offsets()
                    .get(&tp)
                    .is_some_and(|&o| o >= offset)
            },
        )
        .await
        .map_err(|e| {
            e.context(format_args!(
                "committed {:?}; task states {:?}",
                self.committed_offsets(),
                self.runner.states()
            ))
        })
    }

    /// Stop the task (a final commit) and return how its run ended.
    pub async fn stop(&mut self) -> Result<()> {
        self.runner.stop().await
    }

    /// Stop the task, ignoring how it ended (see [`stop`](Self::stop)), and
    /// start a fresh one that resumes from the group's committed offsets.
    pub async fn restart(&mut self) -> Result<()> {
        let _ = self.runner.stop().await;
        self.spawn()
    }

    /// Wait (tokio time) for the task to fail; its error.
    pub async fn wait_failed(&mut self, timeout: Duration) -> Result<ConnectError> {
        self.runner.wait_failed(timeout).await
    }

    /// Pause the task (its partitions are paused).
    pub fn pause(&self) -> Result<()> {
        self.runner.set_target(TargetState::Paused)
    }

    /// Resume a paused task.
    pub fn resume(&self) -> Result<()> {
        self.runner.set_target(TargetState::Started)
    }

    /// Every state the task reported, in order.
    pub fn states(&self) -> Vec<State> {
        self.runner.states()
    }

    /// Errors the connector raised through its context.
    pub fn connector_errors(&self) -> Vec<String> {
        self.connector_context.errors()
    }
}
