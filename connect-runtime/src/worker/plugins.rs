//! The plugin registry: connectors, transforms, predicates and converters
//! by Kafka's class names and aliases. Rust has no class loading, so plugins
//! are registered explicitly before the worker starts.

use std::collections::BTreeMap;
use std::sync::Arc;

use connect_api::config::ConfigMap;
use connect_api::connector::{ConnectorType, SinkConnector, SourceConnector};
use connect_api::{ConnectError, Connector, Result};
use connect_transforms::registry::TransformRegistry;

use crate::converters::ConverterRegistry;

/// A connector instance of either kind.
pub enum AnyConnector {
    /// A source connector.
    Source(Box<dyn SourceConnector>),
    /// A sink connector.
    Sink(Box<dyn SinkConnector>),
}

impl AnyConnector {
    /// Its kind.
    pub fn kind(&self) -> ConnectorType {
        match self {
            AnyConnector::Source(_) => ConnectorType::Source,
            AnyConnector::Sink(_) => ConnectorType::Sink,
        }
    }

    /// The shared lifecycle.
    pub fn as_connector(&mut self) -> &mut dyn Connector {
        match self {
            AnyConnector::Source(c) => &mut **c,
            AnyConnector::Sink(c) => &mut **c,
        }
    }

    /// The shared lifecycle, read-only.
    pub fn as_connector_ref(&self) -> &dyn Connector {
        match self {
            AnyConnector::Source(c) => &**c,
            AnyConnector::Sink(c) => &**c,
        }
    }
}

type Factory = Arc<dyn Fn() -> AnyConnector + Send + Sync>;

/// One registered connector plugin.
#[derive(Clone)]
pub struct ConnectorPlugin {
    /// The full class name (`org.apache.kafka.connect.file.FileStreamSourceConnector`).
    pub class: String,
    /// Source or sink.
    pub kind: ConnectorType,
    /// The plugin's version.
    pub version: String,
    /// The class name written as `task.class` into each task config, as
    /// Kafka's worker does (Java workers of a mixed cluster load tasks by
    /// it). By default the connector class with its `Connector` suffix
    /// replaced by `Task` (`...FileStreamSourceConnector` →
    /// `...FileStreamSourceTask`); set it with [`Plugins::set_task_class`].
    pub task_class: String,
    factory: Factory,
}

impl ConnectorPlugin {
    /// `configs` as the connector generated them plus what Kafka's worker
    /// adds to every task config: `task.class`, and for a sink the
    /// connector's `topics` or `topics.regex`.
    pub fn framework_task_configs(
        &self,
        connector: &ConfigMap,
        mut configs: Vec<ConfigMap>,
    ) -> Vec<ConfigMap> {
        for config in &mut configs {
            config.insert("task.class".into(), self.task_class.clone());
            if self.kind == ConnectorType::Sink {
                for key in ["topics", "topics.regex"] {
                    if let Some(v) = connector.get(key) {
                        config.insert(key.into(), v.clone());
                    }
                }
            }
        }
        configs
    }
}

/// Kafka's naming habit: `XConnector` runs `XTask`.
fn default_task_class(class: &str) -> String {
    match class.strip_suffix("Connector") {
        Some(base) => format!("{base}Task"),
        None => format!("{class}Task"),
    }
}

impl ConnectorPlugin {
    /// A fresh, unstarted instance.
    pub fn create(&self) -> AnyConnector {
        (self.factory)()
    }
}

/// Every plugin a worker can run.
///
/// ```
/// use connect_runtime::worker::Plugins;
/// let plugins = Plugins::with_builtins();
/// assert!(plugins.transforms().has_transform("InsertField$Value"));
/// assert!(plugins.connector("NoSuchConnector").is_err());
/// ```
pub struct Plugins {
    connectors: BTreeMap<String, ConnectorPlugin>,
    transforms: TransformRegistry,
    converters: ConverterRegistry,
}

impl Plugins {
    /// Built-in transforms, predicates and converters; no connectors.
    pub fn with_builtins() -> Self {
        Plugins {
            connectors: BTreeMap::new(),
            transforms: TransformRegistry::with_builtins(),
            converters: ConverterRegistry::with_builtins(),
        }
    }

    /// Register a source connector under its class name and aliases.
    pub fn register_source<F>(&mut self, class: &str, aliases: &[&str], factory: F) -> &mut Self
    where
        F: Fn() -> Box<dyn SourceConnector> + Send + Sync + 'static,
    {
        let f: Factory = Arc::new(move || AnyConnector::Source(factory()));
        self.register(class, aliases, ConnectorType::Source, f)
    }

    /// Register a sink connector under its class name and aliases.
    pub fn register_sink<F>(&mut self, class: &str, aliases: &[&str], factory: F) -> &mut Self
    where
        F: Fn() -> Box<dyn SinkConnector> + Send + Sync + 'static,
    {
        let f: Factory = Arc::new(move || AnyConnector::Sink(factory()));
        self.register(class, aliases, ConnectorType::Sink, f)
    }

    fn register(
        &mut self,
        class: &str,
        aliases: &[&str],
        kind: ConnectorType,
        factory: Factory,
    ) -> &mut Self {
        let version = factory().as_connector_ref().version();
        let plugin = ConnectorPlugin {
            class: class.to_string(),
            kind,
            version,
            task_class: default_task_class(class),
            factory,
        };
        for name in std::iter::once(class).chain(aliases.iter().copied()) {
            self.connectors.insert(name.to_string(), plugin.clone());
        }
        self
    }

    /// Set the `task.class` of the connector registered as `name` (class
    /// name or alias), for all its names: the Java class of its task, when
    /// it does not follow the `XConnector`/`XTask` habit.
    pub fn set_task_class(&mut self, name: &str, task_class: &str) -> Result<&mut Self> {
        let class = self.connector(name)?.class.clone();
        for plugin in self.connectors.values_mut().filter(|p| p.class == class) {
            plugin.task_class = task_class.to_string();
        }
        Ok(self)
    }

    /// The connector plugin registered as `name` (class name or alias).
    pub fn connector(&self, name: &str) -> Result<&ConnectorPlugin> {
        self.connectors.get(name).ok_or_else(|| {
            let known: Vec<&str> = self.connector_classes().map(|p| p.class.as_str()).collect();
            ConnectError::config(
                "connector.class",
                format!(
                    "Failed to find any class that implements Connector and which name matches {name}, available connectors are: {}",
                    known.join(", ")
                ),
            )
        })
    }

    /// Each connector plugin once (by class name).
    pub fn connector_classes(&self) -> impl Iterator<Item = &ConnectorPlugin> {
        self.connectors
            .iter()
            .filter(|(name, p)| **name == p.class)
            .map(|(_, p)| p)
    }

    /// The transform and predicate registry.
    pub fn transforms(&self) -> &TransformRegistry {
        &self.transforms
    }

    /// The transform registry, to register custom SMTs.
    pub fn transforms_mut(&mut self) -> &mut TransformRegistry {
        &mut self.transforms
    }

    /// The converter registry.
    pub fn converters(&self) -> &ConverterRegistry {
        &self.converters
    }

    /// The converter registry, to register custom converters.
    pub fn converters_mut(&mut self) -> &mut ConverterRegistry {
        &mut self.converters
    }
}
