//! Converter lookup by Kafka class name or alias, and configured key, value
//! and header converters from a worker or connector config.
//!
//! A Kafka worker config works unchanged: `key.converter`,
//! `value.converter` and `header.converter` name the classes, and the
//! `key.converter.*` / `value.converter.*` / `header.converter.*` entries
//! (prefix removed, plus Kafka's `converter.type`) configure them.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use connect_api::{ConfigMap, ConnectError, Converter, HeaderConverter, Result};

use super::{
    BooleanConverter, ByteArrayConverter, DoubleConverter, FloatConverter, IntegerConverter,
    JsonConverter, LongConverter, ShortConverter, SimpleHeaderConverter, StringConverter,
};

/// Makes a new, unconfigured converter.
pub type ConverterFactory = Arc<dyn Fn() -> Box<dyn Converter> + Send + Sync>;
/// Makes a new, unconfigured header converter.
pub type HeaderConverterFactory = Arc<dyn Fn() -> Box<dyn HeaderConverter> + Send + Sync>;

/// Which record part a converter serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConverterRole {
    /// The record key (`key.converter`).
    Key,
    /// The record value (`value.converter`).
    Value,
}

impl ConverterRole {
    /// The config key naming the converter class (`key.converter`).
    pub fn class_key(self) -> &'static str {
        match self {
            ConverterRole::Key => "key.converter",
            ConverterRole::Value => "value.converter",
        }
    }
    fn type_name(self) -> &'static str {
        match self {
            ConverterRole::Key => "key",
            ConverterRole::Value => "value",
        }
    }
}

/// Config key naming the header converter class.
pub const HEADER_CONVERTER: &str = "header.converter";
/// Kafka's default header converter class.
pub const DEFAULT_HEADER_CONVERTER: &str = "org.apache.kafka.connect.storage.SimpleHeaderConverter";

/// Converter factories by name.
///
/// ```
/// use connect_converters::{ConverterRegistry, ConverterRole};
///
/// let registry = ConverterRegistry::with_builtins();
/// let worker = connect_api::ConfigMap::from([
///     ("key.converter", "org.apache.kafka.connect.storage.StringConverter"),
///     ("value.converter", "JsonConverter"),
///     ("value.converter.schemas.enable", "false"),
/// ]);
/// let key = registry.configured_converter(&worker, ConverterRole::Key).unwrap();
/// let value = registry.configured_converter(&worker, ConverterRole::Value).unwrap();
/// let headers = registry.configured_header_converter(&worker).unwrap(); // SimpleHeaderConverter
/// assert!(registry.configured_converter(&connect_api::ConfigMap::new(), ConverterRole::Key).is_err());
/// # drop((key, value, headers));
/// ```
#[derive(Clone, Default)]
pub struct ConverterRegistry {
    converters: BTreeMap<String, ConverterFactory>,
    header_converters: BTreeMap<String, HeaderConverterFactory>,
}

impl fmt::Debug for ConverterRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConverterRegistry")
            .field("converters", &self.converters.keys().collect::<Vec<_>>())
            .field(
                "header_converters",
                &self.header_converters.keys().collect::<Vec<_>>(),
            )
            .finish()
    }
}

/// Kafka's aliases of a class: the full name, the simple name, and the
/// simple name without its `Converter` suffix.
fn aliases(class: &str) -> Vec<String> {
    let simple = class.rsplit('.').next().unwrap_or(class);
    let mut names = vec![class.to_string(), simple.to_string()];
    if let Some(pruned) = simple.strip_suffix("Converter").filter(|p| !p.is_empty()) {
        names.push(pruned.to_string());
    }
    names.dedup();
    names
}

impl ConverterRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Every converter of this crate under Kafka's class names and aliases.
    pub fn with_builtins() -> Self {
        let mut r = Self::new();
        macro_rules! both {
            ($class:literal, $ty:ty) => {
                r.register_converter($class, || Box::new(<$ty>::default()));
                r.register_header_converter($class, || Box::new(<$ty>::default()));
            };
        }
        both!("org.apache.kafka.connect.json.JsonConverter", JsonConverter);
        both!(
            "org.apache.kafka.connect.storage.StringConverter",
            StringConverter
        );
        both!(
            "org.apache.kafka.connect.converters.ByteArrayConverter",
            ByteArrayConverter
        );
        both!(
            "org.apache.kafka.connect.converters.LongConverter",
            LongConverter
        );
        both!(
            "org.apache.kafka.connect.converters.IntegerConverter",
            IntegerConverter
        );
        both!(
            "org.apache.kafka.connect.converters.ShortConverter",
            ShortConverter
        );
        both!(
            "org.apache.kafka.connect.converters.FloatConverter",
            FloatConverter
        );
        both!(
            "org.apache.kafka.connect.converters.DoubleConverter",
            DoubleConverter
        );
        both!(
            "org.apache.kafka.connect.converters.BooleanConverter",
            BooleanConverter
        );
        r.register_header_converter(DEFAULT_HEADER_CONVERTER, || Box::new(SimpleHeaderConverter));
        #[cfg(feature = "avro")]
        r.register_converter("io.confluent.connect.avro.AvroConverter", || {
            Box::new(super::avro::AvroConverter::default())
        });
        r
    }

    /// Register a converter under `class` and its aliases (a later
    /// registration of a name replaces the earlier one).
    pub fn register_converter<F>(&mut self, class: &str, factory: F) -> &mut Self
    where
        F: Fn() -> Box<dyn Converter> + Send + Sync + 'static,
    {
        let factory: ConverterFactory = Arc::new(factory);
        for name in aliases(class) {
            self.converters.insert(name, factory.clone());
        }
        self
    }

    /// Register a header converter under `class` and its aliases.
    pub fn register_header_converter<F>(&mut self, class: &str, factory: F) -> &mut Self
    where
        F: Fn() -> Box<dyn HeaderConverter> + Send + Sync + 'static,
    {
        let factory: HeaderConverterFactory = Arc::new(factory);
        for name in aliases(class) {
            self.header_converters.insert(name, factory.clone());
        }
        self
    }

    /// Every name a converter can be created under.
    pub fn converter_names(&self) -> impl Iterator<Item = &str> {
        self.converters.keys().map(String::as_str)
    }

    /// Every name a header converter can be created under.
    pub fn header_converter_names(&self) -> impl Iterator<Item = &str> {
        self.header_converters.keys().map(String::as_str)
    }

    /// A new unconfigured converter; a not-found error lists what exists.
    pub fn create_converter(&self, name: &str) -> Result<Box<dyn Converter>> {
        let name = name.trim();
        self.converters.get(name).map(|f| f()).ok_or_else(|| {
            ConnectError::not_found(format!(
                "Failed to find any class that implements Converter and which name matches {name}; available converters: {}",
                self.converters.keys().cloned().collect::<Vec<_>>().join(", ")
            ))
        })
    }

    /// A new unconfigured header converter.
    pub fn create_header_converter(&self, name: &str) -> Result<Box<dyn HeaderConverter>> {
        let name = name.trim();
        self.header_converters.get(name).map(|f| f()).ok_or_else(|| {
            ConnectError::not_found(format!(
                "Failed to find any class that implements HeaderConverter and which name matches {name}; available header converters: {}",
                self.header_converters.keys().cloned().collect::<Vec<_>>().join(", ")
            ))
        })
    }

    /// The key or value converter named by `config` (`key.converter`),
    /// configured with the `key.converter.*` entries and
    /// `converter.type=key`.
    pub fn configured_converter(
        &self,
        config: &ConfigMap,
        role: ConverterRole,
    ) -> Result<Box<dyn Converter>> {
        let class_key = role.class_key();
        let class = config.get(class_key).ok_or_else(|| {
            ConnectError::config(
                class_key,
                format!(
                    "Missing required configuration \"{class_key}\" which has no default value."
                ),
            )
        })?;
        let mut converter = self
            .create_converter(class)
            .map_err(|e| ConnectError::config(class_key, e.to_string()))?;
        let mut props = connect_api::config::with_prefix(config, &format!("{class_key}."));
        props.insert("converter.type".to_string(), role.type_name().to_string());
        converter
            .configure(&props, role == ConverterRole::Key)
            .map_err(|e| e.context(format_args!("cannot configure {class_key} {class}")))?;
        Ok(converter)
    }

    /// The header converter named by `header.converter` (default
    /// `SimpleHeaderConverter`), configured with `header.converter.*`.
    pub fn configured_header_converter(
        &self,
        config: &ConfigMap,
    ) -> Result<Box<dyn HeaderConverter>> {
        let class = config
            .get(HEADER_CONVERTER)
            .map_or(DEFAULT_HEADER_CONVERTER, String::as_str);
        let mut converter = self
            .create_header_converter(class)
            .map_err(|e| ConnectError::config(HEADER_CONVERTER, e.to_string()))?;
        let mut props = connect_api::config::with_prefix(config, "header.converter.");
        props.insert("converter.type".to_string(), "header".to_string());
        converter
            .configure(&props)
            .map_err(|e| e.context(format_args!("cannot configure {HEADER_CONVERTER} {class}")))?;
        Ok(converter)
    }

    /// Kafka's rule for a connector: its own `key.converter` (with its
    /// `key.converter.*` entries) when set, else the worker's.
    pub fn connector_converter(
        &self,
        connector: &ConfigMap,
        worker: &ConfigMap,
        role: ConverterRole,
    ) -> Result<Box<dyn Converter>> {
        if connector.contains_key(role.class_key()) {
            self.configured_converter(connector, role)
        } else {
            self.configured_converter(worker, role)
        }
    }

    /// Kafka's rule for a connector's header converter: its own
    /// `header.converter` when set, else the worker's (default
    /// `SimpleHeaderConverter`).
    pub fn connector_header_converter(
        &self,
        connector: &ConfigMap,
        worker: &ConfigMap,
    ) -> Result<Box<dyn HeaderConverter>> {
        if connector.contains_key(HEADER_CONVERTER) {
            self.configured_header_converter(connector)
        } else {
            self.configured_header_converter(worker)
        }
    }
}
