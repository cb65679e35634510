//! KIP-618's connector keys and preflight checks, with Kafka's messages:
//! `exactly.once.support`, `transaction.boundary`,
//! `transaction.boundary.interval.ms` and `offsets.storage.topic` are
//! validated like Kafka's `SourceConnectorConfig`, and `required` or
//! `connector` ask the connector (and the worker) whether they can.

use std::sync::Arc;

use async_trait::async_trait;
use connect_api::config::{ConfigDef, ConfigMap, ConfigReport};
use connect_api::connector::{
    Connector, ConnectorContext, ExactlyOnceSupport, SourceConnector, TransactionBoundarySupport,
};
use connect_api::source::{SourceTask, SourceTaskContext};
use connect_api::{Result, SourceRecord};
use connect_runtime::herder::{
    check_connector_config, validate_connector_config, ExactlyOnceSource,
};
use connect_runtime::worker::Plugins;

/// A source whose answers to the two preflight questions come from its
/// config (`eos.answer`, `boundaries.answer`); it never runs.
struct Asked;

struct Idle;

#[async_trait]
impl SourceTask for Idle {
    async fn start(&mut self, _: &ConfigMap, _: Arc<dyn SourceTaskContext>) -> Result<()> {
        Ok(())
    }
    async fn poll(&mut self) -> Result<Vec<SourceRecord>> {
        Ok(Vec::new())
    }
    async fn stop(&mut self) -> Result<()> {
        Ok(())
    }
}

#[async_trait]
impl Connector for Asked {
    fn version(&self) -> String {
        "1".into()
    }
    fn config_def(&self) -> ConfigDef {
        ConfigDef::new()
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

impl SourceConnector for Asked {
    fn create_task(&self) -> Box<dyn SourceTask> {
        Box::new(Idle)
    }
    fn exactly_once_support(&self, config: &ConfigMap) -> ExactlyOnceSupport {
        match config.get("eos.answer").map(String::as_str) {
            Some("supported") => ExactlyOnceSupport::Supported,
            Some("unsupported") => ExactlyOnceSupport::Unsupported,
            Some("panic") => panic!("cannot tell"),
            _ => ExactlyOnceSupport::Unknown,
        }
    }
    fn can_define_transaction_boundaries(&self, config: &ConfigMap) -> TransactionBoundarySupport {
        match config.get("boundaries.answer").map(String::as_str) {
            Some("supported") => TransactionBoundarySupport::Supported,
            _ => TransactionBoundarySupport::Unsupported,
        }
    }
}

fn plugins() -> Plugins {
    let mut p = Plugins::with_builtins();
    p.register_source("test.Asked", &["Asked"], || Box::new(Asked));
    p
}

fn config(extra: &[(&str, &str)]) -> ConfigMap {
    let mut c = ConfigMap::from_pairs([("name", "a"), ("connector.class", "Asked")]);
    c.extend(ConfigMap::from_pairs(extra.iter().copied()));
    c
}

/// The errors validation reports on `key`.
fn errors(extra: &[(&str, &str)], worker: ExactlyOnceSource, key: &str) -> Vec<String> {
    let (_, reports) =
        validate_connector_config(&plugins(), &config(extra), &worker.into()).unwrap();
    reports
        .into_iter()
        .filter(|r: &ConfigReport| r.name == key)
        .flat_map(|r| r.errors)
        .collect()
}

const WORKER_OFF: &str = "This worker does not have exactly-once source support enabled.";

#[test]
fn requested_is_the_default_and_asks_nothing() {
    for worker in [ExactlyOnceSource::Disabled, ExactlyOnceSource::Enabled] {
        assert!(errors(&[], worker, "exactly.once.support").is_empty());
        assert!(errors(
            &[
                ("exactly.once.support", "REQUESTED"),
                ("eos.answer", "panic")
            ],
            worker,
            "exactly.once.support"
        )
        .is_empty());
    }
    check_connector_config(
        &plugins(),
        &config(&[]),
        &ExactlyOnceSource::Disabled.into(),
    )
    .unwrap();
}

#[test]
fn required_needs_the_worker_and_the_connector() {
    let required = ("exactly.once.support", "required");
    // The worker without exactly-once source support (a standalone worker,
    // or a distributed one with it disabled): Kafka's message.
    assert_eq!(
        errors(
            &[required, ("eos.answer", "supported")],
            ExactlyOnceSource::Disabled,
            "exactly.once.support"
        ),
        [WORKER_OFF]
    );
    assert!(errors(
        &[required, ("eos.answer", "supported")],
        ExactlyOnceSource::Enabled,
        "exactly.once.support"
    )
    .is_empty());
    let unsupported = errors(
        &[required, ("eos.answer", "unsupported")],
        ExactlyOnceSource::Enabled,
        "exactly.once.support",
    );
    assert_eq!(
        unsupported,
        ["The connector does not support exactly-once semantics with the provided configuration."]
    );
    // A connector that does not say (the default) is refused with the way
    // out: `requested`.
    let unknown = errors(
        &[required],
        ExactlyOnceSource::Enabled,
        "exactly.once.support",
    );
    assert_eq!(unknown.len(), 1, "{unknown:?}");
    assert!(
        unknown[0].starts_with(
            "The connector does not implement the API required for preflight validation"
        ) && unknown[0].contains("\"requested\""),
        "{unknown:?}"
    );
    // Both problems at once, as Kafka lists them.
    assert_eq!(
        errors(
            &[required, ("eos.answer", "unsupported")],
            ExactlyOnceSource::Disabled,
            "exactly.once.support"
        )
        .len(),
        2
    );
    // A panic in the connector's answer is an error of the key, not of the
    // request.
    let panicked = errors(
        &[required, ("eos.answer", "panic")],
        ExactlyOnceSource::Enabled,
        "exactly.once.support",
    );
    assert!(
        panicked.len() == 1
            && panicked[0].starts_with("An unexpected error occurred during validation")
            && panicked[0].contains("cannot tell"),
        "{panicked:?}"
    );
    let e = check_connector_config(
        &plugins(),
        &config(&[required, ("eos.answer", "supported")]),
        &ExactlyOnceSource::Disabled.into(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("exactly.once.support") && e.contains(WORKER_OFF),
        "{e}"
    );
}

#[test]
fn connector_defined_boundaries_need_a_connector_that_can() {
    let boundary = ("transaction.boundary", "Connector");
    let refused = errors(
        &[boundary],
        ExactlyOnceSource::Enabled,
        "transaction.boundary",
    );
    assert_eq!(
        refused,
        ["The connector does not support connector-defined transaction boundaries with the given configuration. Please reconfigure it to use a different transaction boundary definition."]
    );
    assert!(errors(
        &[boundary, ("boundaries.answer", "supported")],
        ExactlyOnceSource::Disabled,
        "transaction.boundary"
    )
    .is_empty());
    for ok in ["poll", "interval"] {
        assert!(errors(
            &[("transaction.boundary", ok)],
            ExactlyOnceSource::Enabled,
            "transaction.boundary"
        )
        .is_empty());
    }
}

#[test]
fn bad_values_name_their_key() {
    for (key, value) in [
        ("exactly.once.support", "always"),
        ("transaction.boundary", "batch"),
        ("transaction.boundary.interval.ms", "-1"),
        ("transaction.boundary.interval.ms", "soon"),
        ("offsets.storage.topic", ""),
    ] {
        let found = errors(&[(key, value)], ExactlyOnceSource::Enabled, key);
        assert_eq!(found.len(), 1, "{key}={value}: {found:?}");
    }
    // A bad value is not asked about: only its own error.
    assert_eq!(
        errors(
            &[("exactly.once.support", "always"), ("eos.answer", "panic")],
            ExactlyOnceSource::Disabled,
            "exactly.once.support"
        )
        .len(),
        1
    );
    assert!(errors(
        &[
            ("transaction.boundary.interval.ms", "0"),
            ("offsets.storage.topic", "my-offsets")
        ],
        ExactlyOnceSource::Enabled,
        "transaction.boundary.interval.ms"
    )
    .is_empty());
}
