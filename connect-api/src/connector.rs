//! Connectors: the part of a plugin that reads configuration and splits the
//! work into task configurations.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;

use crate::config::{ConfigDef, ConfigMap, ConfigReport};
use crate::error::{ConnectError, Result};
use crate::record::SourceMap;
use crate::sink::{SinkTask, TopicPartition};
use crate::source::SourceTask;

/// Whether a connector reads into Kafka or writes out of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ConnectorType {
    /// Reads from an external system into Kafka.
    Source,
    /// Writes from Kafka to an external system.
    Sink,
}

impl ConnectorType {
    /// `source` / `sink`, as the REST API writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            ConnectorType::Source => "source",
            ConnectorType::Sink => "sink",
        }
    }
}

/// What a connector may ask of the runtime.
///
/// The runtime implements it; a test double records the calls:
///
/// ```
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use connect_api::connector::ConnectorContext;
/// use connect_api::ConnectError;
///
/// #[derive(Default)]
/// struct Recorder { reconfigurations: AtomicUsize }
/// impl ConnectorContext for Recorder {
///     fn request_task_reconfiguration(&self) { self.reconfigurations.fetch_add(1, Ordering::Relaxed); }
///     fn raise_error(&self, _: ConnectError) {}
/// }
/// let ctx = Recorder::default();
/// ctx.request_task_reconfiguration();
/// assert_eq!(ctx.reconfigurations.load(Ordering::Relaxed), 1);
/// ```
pub trait ConnectorContext: Send + Sync {
    /// Ask the runtime to call `task_configs` again and restart the tasks
    /// (the source system's shape changed: new tables, new files...).
    fn request_task_reconfiguration(&self);
    /// Fail the connector with `error` (its state becomes FAILED).
    fn raise_error(&self, error: ConnectError);
}

/// The lifecycle shared by source and sink connectors.
///
/// Methods are `async` through `async-trait`, so `Box<dyn SourceConnector>`
/// works and every future is `Send` (native `async fn` in traits is not yet
/// usable behind `dyn`). connect-api itself pulls in no async runtime.
#[async_trait]
pub trait Connector: Send {
    /// The plugin's version, shown by the REST API.
    fn version(&self) -> String;

    /// The keys this connector accepts (beyond the runtime's common ones).
    fn config_def(&self) -> ConfigDef;

    /// Validate a configuration, reporting every problem at once. The
    /// default checks [`config_def`](Connector::config_def).
    fn validate(&self, config: &ConfigMap) -> Vec<ConfigReport> {
        self.config_def().validate(config)
    }

    /// Start with a validated configuration.
    async fn start(&mut self, config: &ConfigMap, context: Arc<dyn ConnectorContext>)
        -> Result<()>;

    /// At most `max_tasks` task configurations; one task runs per entry.
    async fn task_configs(&mut self, max_tasks: usize) -> Result<Vec<ConfigMap>>;

    /// Stop and release resources.
    async fn stop(&mut self) -> Result<()>;
}

/// Whether a source connector can give exactly-once delivery (KIP-618),
/// asked by the preflight check of `exactly.once.support=required`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ExactlyOnceSupport {
    /// It can, with the given config.
    Supported,
    /// It cannot, with the given config.
    Unsupported,
    /// The connector does not say (the default; Kafka's `null`): a config
    /// with `exactly.once.support=required` is refused, asking the user to
    /// check the connector's documentation and use `requested`.
    #[default]
    Unknown,
}

/// Whether a source connector can define its own transaction boundaries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TransactionBoundarySupport {
    /// It can (`transaction.boundary=connector` is allowed).
    Supported,
    /// It cannot (the default).
    #[default]
    Unsupported,
}

/// A connector that reads from an external system into Kafka.
///
/// ```
/// use std::sync::Arc;
/// use async_trait::async_trait;
/// use connect_api::config::{ConfigDef, ConfigMap};
/// use connect_api::connector::{Connector, ConnectorContext, SourceConnector};
/// use connect_api::source::{SourceTask, SourceTaskContext};
/// use connect_api::{Result, SourceRecord};
///
/// struct Ticker;
/// struct TickTask;
///
/// #[async_trait]
/// impl SourceTask for TickTask {
///     async fn start(&mut self, _: &ConfigMap, _: Arc<dyn SourceTaskContext>) -> Result<()> { Ok(()) }
///     async fn poll(&mut self) -> Result<Vec<SourceRecord>> { Ok(vec![]) }
///     async fn stop(&mut self) -> Result<()> { Ok(()) }
/// }
///
/// #[async_trait]
/// impl Connector for Ticker {
///     fn version(&self) -> String { "1.0".into() }
///     fn config_def(&self) -> ConfigDef { ConfigDef::new() }
///     async fn start(&mut self, _: &ConfigMap, _: Arc<dyn ConnectorContext>) -> Result<()> { Ok(()) }
///     async fn task_configs(&mut self, max: usize) -> Result<Vec<ConfigMap>> {
///         Ok(vec![ConfigMap::new(); max.min(1)])
///     }
///     async fn stop(&mut self) -> Result<()> { Ok(()) }
/// }
///
/// impl SourceConnector for Ticker {
///     fn create_task(&self) -> Box<dyn SourceTask> { Box::new(TickTask) }
/// }
/// let _boxed: Box<dyn SourceConnector> = Box::new(Ticker);
/// ```
#[async_trait]
pub trait SourceConnector: Connector {
    /// A fresh, unstarted task. Rust has no task classes: the connector is
    /// the task factory. It may be called on a connector that was not started.
    fn create_task(&self) -> Box<dyn SourceTask>;

    /// Whether this connector can give exactly-once delivery with `config`
    /// (Kafka's `exactlyOnceSupport`); by default it does not say
    /// ([`ExactlyOnceSupport::Unknown`]). Asked only when the config has
    /// `exactly.once.support=required`.
    fn exactly_once_support(&self, _config: &ConfigMap) -> ExactlyOnceSupport {
        ExactlyOnceSupport::Unknown
    }

    /// Whether this connector can define transaction boundaries with
    /// `config` (Kafka's `canDefineTransactionBoundaries`); asked only when
    /// the config has `transaction.boundary=connector`.
    fn can_define_transaction_boundaries(&self, _config: &ConfigMap) -> TransactionBoundarySupport {
        TransactionBoundarySupport::Unsupported
    }

    /// Called before the runtime alters (`Some`) or resets (`None`) stored
    /// offsets (KIP-875). Return `Ok(true)` if the connector acknowledges the
    /// change, `Ok(false)` (the default) if it does not manage offsets
    /// itself, an error to veto. May be called on an unstarted connector.
    async fn alter_offsets(
        &mut self,
        _config: &ConfigMap,
        _offsets: &[(SourceMap, Option<SourceMap>)],
    ) -> Result<bool> {
        Ok(false)
    }
}

/// A connector that writes from Kafka to an external system.
///
/// ```
/// use std::sync::Arc;
/// use async_trait::async_trait;
/// use connect_api::config::{ConfigDef, ConfigMap};
/// use connect_api::connector::{Connector, ConnectorContext, SinkConnector};
/// use connect_api::sink::{SinkTask, SinkTaskContext};
/// use connect_api::{Result, SinkRecord};
///
/// /// Every task gets the connector's config.
/// #[derive(Default)]
/// struct Discard { config: ConfigMap }
/// struct DiscardTask;
///
/// #[async_trait]
/// impl SinkTask for DiscardTask {
///     async fn start(&mut self, _: &ConfigMap, _: Arc<dyn SinkTaskContext>) -> Result<()> { Ok(()) }
///     async fn put(&mut self, _: &[SinkRecord]) -> Result<()> { Ok(()) }
///     async fn stop(&mut self) -> Result<()> { Ok(()) }
/// }
///
/// #[async_trait]
/// impl Connector for Discard {
///     fn version(&self) -> String { "1.0".into() }
///     fn config_def(&self) -> ConfigDef { ConfigDef::new() }
///     async fn start(&mut self, config: &ConfigMap, _: Arc<dyn ConnectorContext>) -> Result<()> {
///         self.config = config.clone();
///         Ok(())
///     }
///     async fn task_configs(&mut self, max: usize) -> Result<Vec<ConfigMap>> {
///         Ok(vec![self.config.clone(); max])
///     }
///     async fn stop(&mut self) -> Result<()> { Ok(()) }
/// }
///
/// impl SinkConnector for Discard {
///     fn create_task(&self) -> Box<dyn SinkTask> { Box::new(DiscardTask) }
/// }
/// let mut c = Discard::default();
/// let configs = futures::executor::block_on(c.task_configs(3)).unwrap();
/// assert_eq!(configs.len(), 3);
/// ```
#[async_trait]
pub trait SinkConnector: Connector {
    /// A fresh, unstarted task (see [`SourceConnector::create_task`]).
    fn create_task(&self) -> Box<dyn SinkTask>;

    /// Called before the runtime alters (`Some(offset)`) or resets (`None`)
    /// consumer offsets (KIP-875); see [`SourceConnector::alter_offsets`].
    async fn alter_offsets(
        &mut self,
        _config: &ConfigMap,
        _offsets: &BTreeMap<TopicPartition, Option<i64>>,
    ) -> Result<bool> {
        Ok(false)
    }
}

/// Splits `elements` into `groups` contiguous groups as even as possible,
/// the first ones one element larger when they do not divide evenly: Java's
/// `ConnectorUtils.groupPartitions`, for `Connector::task_configs` to spread
/// tables, files or partitions over `max_tasks` tasks. With more groups than
/// elements the last groups are empty (Java's too); a connector usually asks
/// for `elements.len().min(max_tasks)` groups so that no task idles.
///
/// ```
/// use connect_api::connector::group_partitions;
///
/// let tables = ["a", "b", "c", "d", "e"];
/// assert_eq!(group_partitions(&tables, 2).unwrap(), [vec!["a", "b", "c"], vec!["d", "e"]]);
/// assert_eq!(group_partitions(&tables, 1).unwrap(), [tables.to_vec()]);
/// assert!(group_partitions(&tables, 0).is_err());
/// ```
pub fn group_partitions<T: Clone>(elements: &[T], groups: usize) -> Result<Vec<Vec<T>>> {
    if groups == 0 {
        return Err(ConnectError::other(
            "cannot group elements into 0 groups: ask for at least one (tasks.max must be positive)",
        ));
    }
    let base = elements.len() / groups;
    let larger = elements.len() % groups;
    let mut rest = elements;
    Ok((0..groups)
        .map(|g| {
            let size = base + usize::from(g < larger);
            let (group, tail) = rest.split_at(size);
            rest = tail;
            group.to_vec()
        })
        .collect())
}

#[cfg(test)]
mod group_partitions_tests {
    use super::group_partitions;
    use proptest::prelude::*;

    proptest! {
        /// Every element once, in order; group sizes differ by at most one,
        /// larger groups first.
        #[test]
        fn groups_cover_all_elements_evenly(n in 0usize..200, groups in 1usize..40) {
            let elements: Vec<usize> = (0..n).collect();
            let grouped = group_partitions(&elements, groups).unwrap();
            prop_assert_eq!(grouped.len(), groups);
            prop_assert_eq!(grouped.concat(), elements);
            let sizes: Vec<usize> = grouped.iter().map(Vec::len).collect();
            prop_assert!(sizes.windows(2).all(|w| w[0] >= w[1] && w[0] - w[1] <= 1), "{:?}", sizes);
        }
    }
}
