//! The converters one task runs with.

use connect_api::config::ConfigMap;
use connect_api::converter::{Converter, HeaderConverter};
use connect_api::Result;

use super::registry::{ConverterRegistry, ConverterRole, DEFAULT_HEADER_CONVERTER};

/// Kafka's JSON converter class, which renders records for the DLQ when no
/// raw bytes exist.
pub const JSON_CONVERTER: &str = "org.apache.kafka.connect.json.JsonConverter";

/// A task's key, value and header converters, each with the class name its
/// errors cite, and the JSON converter the DLQ renders records with.
pub struct TaskConverters {
    /// Key converter.
    pub key: Box<dyn Converter>,
    /// Its class name.
    pub key_class: String,
    /// Value converter.
    pub value: Box<dyn Converter>,
    /// Its class name.
    pub value_class: String,
    /// Header converter.
    pub header: Box<dyn HeaderConverter>,
    /// Its class name.
    pub header_class: String,
    /// JSON with schemas, rendering records that have no raw bytes (source
    /// records, sink records reported after their batch) for the DLQ.
    pub dlq_json: Box<dyn Converter>,
}

impl TaskConverters {
    /// Kafka's rule: the connector's own `key.converter` /
    /// `value.converter` / `header.converter` (with their prefixed
    /// settings) when set, else the worker's.
    ///
    /// ```
    /// use connect_converters::{ConverterRegistry, TaskConverters};
    /// let cfg = |pairs: &[(&str, &str)]| connect_api::ConfigMap::from_pairs(pairs.iter().copied());
    /// let worker = cfg(&[("key.converter", "StringConverter"), ("value.converter", "JsonConverter")]);
    /// let connector = cfg(&[("value.converter", "org.apache.kafka.connect.converters.ByteArrayConverter")]);
    /// let c = TaskConverters::for_connector(&ConverterRegistry::with_builtins(), &connector, &worker).unwrap();
    /// assert_eq!(c.key_class, "StringConverter");
    /// assert_eq!(c.value_class, "org.apache.kafka.connect.converters.ByteArrayConverter");
    /// assert_eq!(c.header_class, "org.apache.kafka.connect.storage.SimpleHeaderConverter");
    /// ```
    pub fn for_connector(
        registry: &ConverterRegistry,
        connector: &ConfigMap,
        worker: &ConfigMap,
    ) -> Result<TaskConverters> {
        let class = |key: &str, default: &str| {
            connector
                .get(key)
                .or_else(|| worker.get(key))
                .cloned()
                .unwrap_or_else(|| default.to_string())
        };
        let mut dlq_json = registry.create_converter(JSON_CONVERTER)?;
        dlq_json.configure(
            &[("schemas.enable".to_string(), "true".to_string())].into(),
            false,
        )?;
        Ok(TaskConverters {
            key: registry.connector_converter(connector, worker, ConverterRole::Key)?,
            key_class: class("key.converter", ""),
            value: registry.connector_converter(connector, worker, ConverterRole::Value)?,
            value_class: class("value.converter", ""),
            header: registry.connector_header_converter(connector, worker)?,
            header_class: class("header.converter", DEFAULT_HEADER_CONVERTER),
            dlq_json,
        })
    }
}
