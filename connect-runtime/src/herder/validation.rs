//! Validating a connector config, as both herders do before they accept
//! one (Kafka's `AbstractHerder.validateConnectorConfig`).
//!
//! Besides the connector's own keys this checks what would otherwise only
//! fail when a task starts: the classes named by `key.converter`,
//! `value.converter`, `header.converter`, `transforms.<alias>.type` and
//! `predicates.<alias>.type`, and the configs those plugins are given.
//!
//! Keys that nothing defines are not errors (Kafka accepts them, and a
//! connector may read keys it does not declare): [`unknown_connector_keys`]
//! names them, create and update log a warning for each, and the REST
//! validate endpoint lists them outside Kafka's fields.

use std::fmt;

use connect_api::config::{ConfigDef, ConfigMap, ConfigReport};
use connect_api::connector::{
    ConnectorType, ExactlyOnceSupport, SourceConnector, TransactionBoundarySupport,
};
use connect_api::{ConnectError, ErrorKind, Result, SinkRecord, SourceRecord};
use connect_transforms::chain::TransformChain;

use crate::converters::registry::HEADER_CONVERTER;
use crate::converters::ConverterRole;

use crate::panics::{catch_sync, contain_sync};
use crate::worker::{
    check_sink_topics, invalid_config, sink_connector_def, source_connector_def, AnyConnector,
    ClientOverridePolicy, Plugins, EXACTLY_ONCE_SUPPORT, TRANSACTION_BOUNDARY,
};

/// Whether the worker validating a config runs exactly-once source
/// connectors (`exactly.once.source.support=enabled`), which decides
/// whether `exactly.once.support=required` can pass (KIP-618's preflight).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ExactlyOnceSource {
    /// A standalone worker, or a distributed one without exactly-once
    /// source support.
    #[default]
    Disabled,
    /// A distributed worker with `exactly.once.source.support=enabled`.
    Enabled,
}

/// What the validating worker's own settings add to a connector config's
/// checks (Kafka's herder reads them from its worker config).
///
/// ```
/// use connect_runtime::herder::{ExactlyOnceSource, WorkerRules};
/// use connect_runtime::worker::ClientOverridePolicy;
///
/// let rules = WorkerRules {
///     exactly_once: ExactlyOnceSource::Disabled,
///     client_overrides: ClientOverridePolicy::None,
/// };
/// assert!(!rules.client_overrides.allows("client.id"));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WorkerRules {
    /// Whether `exactly.once.support=required` can pass.
    pub exactly_once: ExactlyOnceSource,
    /// `connector.client.config.override.policy`: which
    /// `<client>.override.*` keys are allowed.
    pub client_overrides: ClientOverridePolicy,
}

impl From<ExactlyOnceSource> for WorkerRules {
    /// The rules of a worker with that exactly-once support and Kafka's
    /// default client override policy (`All`).
    fn from(exactly_once: ExactlyOnceSource) -> Self {
        WorkerRules {
            exactly_once,
            client_overrides: ClientOverridePolicy::All,
        }
    }
}

/// Validate a connector config: one report per key of the connector's full
/// definition (common keys, kind keys, the plugin's own keys), errors on
/// the transform and predicate keys the chain rejects, errors on the
/// converter keys (an unknown class on `value.converter`, a value the
/// converter refuses on `value.converter.<key>`), errors on client
/// overrides the worker's policy refuses (`producer.override.<key>`), plus
/// cross-key rules. Returns the connector's class with the reports. Never
/// fails for bad values; an unknown or missing `connector.class` is an
/// error.
pub fn validate_connector_config(
    plugins: &Plugins,
    config: &ConfigMap,
    worker: &WorkerRules,
) -> Result<(String, Vec<ConfigReport>)> {
    let class = config
        .get("connector.class")
        .map(|s| s.trim())
        .unwrap_or("");
    if class.is_empty() {
        return Err(ConnectError::config(
            "connector.class",
            "Missing required configuration \"connector.class\" which has no default value.",
        ));
    }
    let plugin = plugins.connector(class)?;
    let base = match plugin.kind {
        ConnectorType::Source => source_connector_def(),
        ConnectorType::Sink => sink_connector_def(),
    };
    let mut reports = base.validate(config);
    // Plugin code: a panic in it is an error of this request (a 500, as
    // Kafka answers when `validate` throws), never a dropped connection.
    let call = format!("connector {class}: validate");
    let instance = contain_sync(&call, || Ok(plugin.create()))?;
    let own = contain_sync(&call, || Ok(instance.as_connector_ref().validate(config)))?;
    reports.extend(own);
    if let AnyConnector::Source(source) = &instance {
        exactly_once_preflight(source.as_ref(), config, worker.exactly_once, &mut reports);
    }
    let chain_error = match plugin.kind {
        ConnectorType::Source => {
            TransformChain::<SourceRecord>::from_config(config, plugins.transforms()).err()
        }
        ConnectorType::Sink => {
            TransformChain::<SinkRecord>::from_config(config, plugins.transforms()).err()
        }
    };
    if let Some(e) = chain_error {
        let key = match e.kind() {
            ErrorKind::Config { key } => key.clone(),
            _ => "transforms".to_string(),
        };
        push_error(&mut reports, &key, e.to_string());
    }
    validate_converters(plugins, config, &mut reports);
    for (key, message) in worker.client_overrides.violations(plugin.kind, config) {
        push_error(&mut reports, &key, message);
    }
    if plugin.kind == ConnectorType::Sink {
        if let Err((keys, msg)) = check_sink_topics(config) {
            for key in keys {
                push_error(&mut reports, key, msg.clone());
            }
        }
    }
    Ok((plugin.class.clone(), reports))
}

/// KIP-618's preflight checks, with Kafka's messages, on keys whose value
/// passed their own validation: `exactly.once.support=required` needs a
/// worker with exactly-once source support and a connector that says it
/// supports it with this config; `transaction.boundary=connector` needs a
/// connector that can define its own boundaries.
fn exactly_once_preflight(
    connector: &dyn SourceConnector,
    config: &ConfigMap,
    worker: ExactlyOnceSource,
    reports: &mut Vec<ConfigReport>,
) {
    let valid = |reports: &[ConfigReport], key: &str| {
        reports
            .iter()
            .find(|r| r.name == key)
            .is_some_and(|r| r.errors.is_empty())
    };
    let value = |key: &str| config.get(key).map(|v| v.trim().to_ascii_lowercase());
    if valid(reports, EXACTLY_ONCE_SUPPORT)
        && value(EXACTLY_ONCE_SUPPORT).as_deref() == Some("required")
    {
        if worker == ExactlyOnceSource::Disabled {
            push_error(
                reports,
                EXACTLY_ONCE_SUPPORT,
                "This worker does not have exactly-once source support enabled.".to_string(),
            );
        }
        let message = match catch_sync(|| connector.exactly_once_support(config)) {
            Ok(ExactlyOnceSupport::Supported) => None,
            Ok(ExactlyOnceSupport::Unsupported) => Some("The connector does not support exactly-once semantics with the provided configuration.".to_string()),
            Ok(ExactlyOnceSupport::Unknown) => Some("The connector does not implement the API required for preflight validation of exactly-once source support. Please consult the documentation for the connector to determine whether it supports exactly-once semantics, and then consider reconfiguring the connector to use the value \"requested\" for this property (which will disable this preflight check and allow the connector to be created).".to_string()),
            Err(panic) => Some(format!("An unexpected error occurred during validation: {}", panic.into_error("SourceConnector::exactly_once_support"))),
        };
        if let Some(m) = message {
            push_error(reports, EXACTLY_ONCE_SUPPORT, m);
        }
    }
    if valid(reports, TRANSACTION_BOUNDARY)
        && value(TRANSACTION_BOUNDARY).as_deref() == Some("connector")
    {
        let message = match catch_sync(|| connector.can_define_transaction_boundaries(config)) {
            Ok(TransactionBoundarySupport::Supported) => None,
            Ok(TransactionBoundarySupport::Unsupported) => Some("The connector does not support connector-defined transaction boundaries with the given configuration. Please reconfigure it to use a different transaction boundary definition.".to_string()),
            Err(panic) => Some(format!("An unexpected error occurred during validation: {}", panic.into_error("SourceConnector::can_define_transaction_boundaries"))),
        };
        if let Some(m) = message {
            push_error(reports, TRANSACTION_BOUNDARY, m);
        }
    }
}

/// Accept `config` only when its validation finds no error: otherwise
/// Kafka's "Connector configuration is invalid" error listing every
/// problem as `key: message` (a 400 over REST). Keys nothing defines are
/// accepted, each with a warning in the log naming the connector and key.
pub fn check_connector_config(
    plugins: &Plugins,
    config: &ConfigMap,
    worker: &WorkerRules,
) -> Result<()> {
    let (_, reports) = validate_connector_config(plugins, config, worker)?;
    let name = config.get("name").map_or("", String::as_str);
    for unknown in unknown_connector_keys(plugins, config) {
        tracing::warn!(connector = name, key = %unknown.key, "connector '{name}': {unknown}");
    }
    let errors: Vec<String> = reports
        .into_iter()
        .flat_map(|r| {
            r.errors
                .into_iter()
                .map(move |e| format!("{}: {e}", r.name))
        })
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(invalid_config(&errors))
    }
}

/// Prefixes under which connector keys are passed on to something else
/// (a transform, predicate, converter, client, topic-creation group), so a
/// key under them is never "unknown" to the connector's definition.
pub const CONNECTOR_PASS_THROUGH_PREFIXES: &[&str] = &[
    "transforms.",
    "predicates.",
    "key.converter.",
    "value.converter.",
    "header.converter.",
    "errors.",
    "producer.override.",
    "consumer.override.",
    "admin.override.",
    "topic.creation.",
];

/// Connector keys Kafka's `ConnectorConfig` (and its source and sink
/// subclasses) defines that this runtime does not declare: accepted
/// silently, so a config written for Kafka draws no warning for them.
const KAFKA_ONLY_KEYS: &[&str] = &["connector.plugin.version"];

/// A connector config key that neither the connector's full definition
/// (common, kind, plugin and transform/predicate keys) nor a
/// [pass-through prefix](CONNECTOR_PASS_THROUGH_PREFIXES) covers: most often a typo.
/// Not an error: Kafka accepts such keys and a connector may read keys it
/// does not declare.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownKey {
    /// The key as written in the config.
    pub key: String,
    /// A defined key it is one or two edits away from, if any.
    pub did_you_mean: Option<String>,
}

impl fmt::Display for UnknownKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "'{}' is not a config of this connector or of the runtime; it is passed to the connector unchanged",
            self.key
        )?;
        match &self.did_you_mean {
            Some(k) => write!(f, ". Did you mean '{k}'?"),
            None => write!(f, ". Check its spelling, or remove it if nothing reads it."),
        }
    }
}

/// The keys of `config` that nothing defines ([`UnknownKey`]), in key
/// order. Empty when `connector.class` names no known connector (that is
/// a validation error of its own).
pub fn unknown_connector_keys(plugins: &Plugins, config: &ConfigMap) -> Vec<UnknownKey> {
    let class = config.get("connector.class").map_or("", |s| s.trim());
    let Ok(plugin) = plugins.connector(class) else {
        return Vec::new();
    };
    let (base, chain) = match plugin.kind {
        ConnectorType::Source => (
            source_connector_def(),
            TransformChain::<SourceRecord>::config_def(config, plugins.transforms()),
        ),
        ConnectorType::Sink => (
            sink_connector_def(),
            TransformChain::<SinkRecord>::config_def(config, plugins.transforms()),
        ),
    };
    // Plugin code: a panic leaves the connector's keys out (validation
    // reports the panic itself).
    let own = contain_sync(format!("connector {class}: config_def"), || {
        Ok(plugin.create().as_connector_ref().config_def())
    })
    .unwrap_or_default();
    let def = base.merge(&own).merge(&chain);
    config
        .keys()
        .filter(|k| {
            def.key(k).is_none()
                && !KAFKA_ONLY_KEYS.contains(&k.as_str())
                && !CONNECTOR_PASS_THROUGH_PREFIXES
                    .iter()
                    .any(|p| k.starts_with(p))
        })
        .map(|k| UnknownKey {
            key: k.clone(),
            did_you_mean: closest(k, def.keys().iter().map(|d| d.name.as_str())),
        })
        .collect()
}

/// The candidate at the smallest edit distance from `key`, if at most 2.
fn closest<'a>(key: &str, candidates: impl Iterator<Item = &'a str>) -> Option<String> {
    candidates
        .map(|c| (edit_distance(key, c), c))
        .filter(|(d, _)| *d <= 2)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c.to_string())
}

/// Levenshtein distance over chars.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = if ca == *cb {
                prev
            } else {
                1 + prev.min(cur).min(row[j])
            };
            prev = cur;
        }
    }
    row[b.len()]
}

/// Kafka's `validateConverterConfig`, for each converter the connector
/// config names itself (one it does not name is the worker's, checked when
/// the worker started): the class must be known (the error is on
/// `key.converter` / `value.converter` / `header.converter`), and the
/// `<role>.converter.*` entries must pass the converter's definition and
/// its `configure` (errors on the prefixed key, e.g.
/// `value.converter.schemas.enable`). Converter code runs contained: a
/// panic in it is an error on the class key.
fn validate_converters(plugins: &Plugins, config: &ConfigMap, reports: &mut Vec<ConfigReport>) {
    let registry = plugins.converters();
    for (class_key, type_name) in [
        (ConverterRole::Key.class_key(), "key"),
        (ConverterRole::Value.class_key(), "value"),
        (HEADER_CONVERTER, "header"),
    ] {
        let Some(raw) = config.get(class_key) else {
            continue;
        };
        let class = raw.trim();
        let header = class_key == HEADER_CONVERTER;
        if class.is_empty() {
            push_error(
                reports,
                class_key,
                format!("No class given: name a converter class (e.g. org.apache.kafka.connect.json.JsonConverter) or remove \"{class_key}\" to use the worker's."),
            );
            continue;
        }
        let prefix = format!("{class_key}.");
        let mut props = connect_api::config::with_prefix(config, &prefix);
        props.insert("converter.type".to_string(), type_name.to_string());
        let checked = contain_sync(format!("{class_key} {class}: configure"), || {
            if header {
                let mut c = registry.create_header_converter(class)?;
                check_converter_config(&c.config_def(), &props, |p| c.configure(p))
            } else {
                let mut c = registry.create_converter(class)?;
                let is_key = type_name == "key";
                check_converter_config(&c.config_def(), &props, |p| c.configure(p, is_key))
            }
        });
        match checked {
            Ok(errors) => {
                for (key, message) in errors {
                    match key {
                        Some(key) => push_error(reports, &format!("{prefix}{key}"), message),
                        None => push_error(reports, class_key, message),
                    }
                }
            }
            // Not found (the message lists the known converters), or a
            // panic: the class itself is the problem.
            Err(e) if matches!(e.kind(), ErrorKind::NotFound) => {
                push_error(reports, class_key, e.message().to_string())
            }
            Err(e) => push_error(reports, class_key, e.to_string()),
        }
    }
}

/// The converter's own keys checked by its definition, then (when they
/// pass) by `configure`, which may refuse more: the key (without the
/// converter prefix; `None` when the error names none) and message of each
/// problem.
fn check_converter_config(
    def: &ConfigDef,
    props: &ConfigMap,
    configure: impl FnOnce(&ConfigMap) -> Result<()>,
) -> Result<Vec<(Option<String>, String)>> {
    let errors: Vec<(Option<String>, String)> = def
        .validate(props)
        .into_iter()
        .flat_map(|r| {
            let name = r.name;
            r.errors.into_iter().map(move |e| (Some(name.clone()), e))
        })
        .collect();
    if !errors.is_empty() {
        return Ok(errors);
    }
    Ok(match configure(props) {
        Ok(()) => Vec::new(),
        Err(e) => match e.kind() {
            ErrorKind::Config { key } if !key.is_empty() => {
                vec![(Some(key.clone()), e.message().to_string())]
            }
            _ => vec![(None, e.to_string())],
        },
    })
}

fn push_error(reports: &mut Vec<ConfigReport>, key: &str, message: String) {
    match reports.iter_mut().find(|r| r.name == key) {
        Some(r) => r.errors.push(message),
        None => {
            let mut report = ConfigReport::new(key);
            report.errors.push(message);
            reports.push(report);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::sync::{Arc, Mutex};

    use async_trait::async_trait;
    use connect_api::config::{ConfigKey, ConfigType, Importance};
    use connect_api::connector::{ConnectorContext, SinkConnector};
    use connect_api::sink::{SinkTask, SinkTaskContext};
    use connect_api::{Connector, SinkRecord};

    use super::*;

    /// A sink with one key of its own, `path`; it never runs.
    struct PathSink;

    struct NoTask;

    #[async_trait]
    impl SinkTask for NoTask {
        async fn start(&mut self, _: &ConfigMap, _: Arc<dyn SinkTaskContext>) -> Result<()> {
            Ok(())
        }
        async fn put(&mut self, _: &[SinkRecord]) -> Result<()> {
            Ok(())
        }
        async fn stop(&mut self) -> Result<()> {
            Ok(())
        }
    }

    #[async_trait]
    impl Connector for PathSink {
        fn version(&self) -> String {
            "1".into()
        }
        fn config_def(&self) -> ConfigDef {
            ConfigDef::new().define(
                ConfigKey::new("path", ConfigType::String)
                    .optional()
                    .importance(Importance::High)
                    .doc("Where to write."),
            )
        }
        async fn start(&mut self, _: &ConfigMap, _: Arc<dyn ConnectorContext>) -> Result<()> {
            Ok(())
        }
        async fn task_configs(&mut self, _: usize) -> Result<Vec<ConfigMap>> {
            Ok(Vec::new())
        }
        async fn stop(&mut self) -> Result<()> {
            Ok(())
        }
    }

    impl SinkConnector for PathSink {
        fn create_task(&self) -> Box<dyn SinkTask> {
            Box::new(NoTask)
        }
    }

    fn plugins() -> Plugins {
        let mut p = Plugins::with_builtins();
        p.register_sink("test.PathSink", &["PathSink"], || Box::new(PathSink));
        p
    }

    fn config(extra: &[(&str, &str)]) -> ConfigMap {
        let mut c = ConfigMap::from_pairs([
            ("name", "s"),
            ("connector.class", "PathSink"),
            ("topics", "t"),
        ]);
        for (k, v) in extra {
            c.insert(k.to_string(), v.to_string());
        }
        c
    }

    #[test]
    fn edit_distance_counts_insertions_deletions_and_substitutions() {
        assert_eq!(edit_distance("topic", "topic"), 0);
        assert_eq!(edit_distance("topicz", "topic"), 1);
        assert_eq!(edit_distance("tpoic", "topic"), 2);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("päth", "path"), 1);
    }

    #[test]
    fn unknown_keys_are_those_no_definition_or_prefix_covers() {
        let c = config(&[
            ("pth", "/tmp"),
            ("tasks.max", "2"),
            ("transforms", "x"),
            ("transforms.x.type", "InsertField$Value"),
            ("transforms.x.whatever", "1"),
            ("value.converter.anything", "1"),
            ("consumer.override.max.poll.records", "5"),
            ("connector.plugin.version", "1.0"),
            ("completely.different", "1"),
        ]);
        let unknown = unknown_connector_keys(&plugins(), &c);
        assert_eq!(
            unknown,
            [
                UnknownKey {
                    key: "completely.different".into(),
                    did_you_mean: None
                },
                UnknownKey {
                    key: "pth".into(),
                    did_you_mean: Some("path".into())
                },
            ]
        );
        let text = unknown[1].to_string();
        assert!(text.contains("'pth'") && text.contains("Did you mean 'path'?"));
        assert!(unknown[0].to_string().contains("Check its spelling"));
        // An unknown connector class is validation's error, not a list here.
        assert!(
            unknown_connector_keys(&plugins(), &config(&[("connector.class", "Nope")])).is_empty()
        );
    }

    #[test]
    fn a_converter_error_is_on_the_key_and_configure_runs_only_on_known_classes() {
        let (_, reports) = validate_connector_config(
            &plugins(),
            &config(&[
                ("key.converter", "Strin"),
                ("value.converter", "JsonConverter"),
                ("value.converter.schemas.cache.size", "-1"),
                ("header.converter", "StringConverter"),
                ("header.converter.converter.encoding", "NO-SUCH-CHARSET"),
            ]),
            &ExactlyOnceSource::Disabled.into(),
        )
        .unwrap();
        let errors = |key: &str| {
            reports
                .iter()
                .find(|r| r.name == key)
                .map(|r| r.errors.clone())
                .unwrap_or_default()
        };
        assert!(errors("key.converter")[0].contains("Strin"), "{reports:?}");
        assert_eq!(errors("value.converter.schemas.cache.size").len(), 1);
        assert!(errors("value.converter").is_empty());
        assert_eq!(
            errors("header.converter.converter.encoding").len(),
            1,
            "{reports:?}"
        );
    }

    /// A `Write` into a shared buffer, for capturing log lines.
    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl Write for Captured {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn accepting_a_config_warns_about_each_unknown_key_naming_the_connector() {
        let logs = Captured::default();
        let writer = logs.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .finish();
        let accepted = tracing::subscriber::with_default(subscriber, || {
            check_connector_config(
                &plugins(),
                &config(&[("pth", "/tmp")]),
                &ExactlyOnceSource::Disabled.into(),
            )
        });
        assert!(accepted.is_ok(), "unknown keys are no error: {accepted:?}");
        let text = String::from_utf8(logs.0.lock().unwrap().clone()).unwrap();
        assert!(
            text.contains("WARN")
                && text.contains("connector 's'")
                && text.contains("'pth'")
                && text.contains("Did you mean 'path'?"),
            "{text}"
        );
    }
}
