//! A panic in a transformation, predicate or converter is a failure of that
//! stage, as Kafka treats any `Throwable` there: `errors.tolerance=all`
//! skips the record, counts it, logs it and (sink side) sends it to the
//! DLQ with the panic's message; `none` fails the task with a trace naming
//! the panic. Each plugin here panics on the record whose value is "v2".
// The error counters are read from the rendered metrics.
#![cfg(feature = "prometheus")]

mod common;

use common::*;
use connect_api::config::ConfigMap;
use connect_api::converter::{Converter, SchemaAndValue};
use connect_api::transform::{Configurable, Predicate, Transformation, Verdict};
use connect_api::{
    ConnectRecord, Headers, Result, Schema, Serialized, SinkRecord, SourceRecord, Value,
};
use connect_runtime::converters::StringConverter;
use connect_runtime::status::TargetState;
use connect_runtime::worker::Plugins;

/// An SMT that panics on the record whose value is "v2".
struct PanicOnV2;

impl PanicOnV2 {
    fn check(record: &impl ConnectRecord) -> Result<Verdict> {
        if record.record().value == Value::from("v2") {
            panic!("transform exploded on v2");
        }
        Ok(Verdict::Keep)
    }
}

impl Configurable for PanicOnV2 {}

impl Transformation<SourceRecord> for PanicOnV2 {
    fn transform(&mut self, record: &mut SourceRecord) -> Result<Verdict> {
        Self::check(record)
    }
}

impl Transformation<SinkRecord> for PanicOnV2 {
    fn transform(&mut self, record: &mut SinkRecord) -> Result<Verdict> {
        Self::check(record)
    }
}

/// A predicate that panics on the record whose value is "v2" (and matches
/// nothing else).
struct PanicOnV2Predicate;

impl Configurable for PanicOnV2Predicate {}

impl<R: ConnectRecord> Predicate<R> for PanicOnV2Predicate {
    fn test(&self, record: &R) -> bool {
        if record.record().value == Value::from("v2") {
            panic!("predicate exploded on v2");
        }
        false
    }
}

/// The StringConverter, except that it panics on "v2", both ways.
#[derive(Default)]
struct PanickyConverter(StringConverter);

impl Converter for PanickyConverter {
    fn configure(&mut self, config: &ConfigMap, is_key: bool) -> Result<()> {
        self.0.configure(config, is_key)
    }
    fn from_connect_data(
        &mut self,
        topic: &str,
        headers: &Headers,
        schema: Option<&Schema>,
        value: &Value,
        out: &mut Vec<u8>,
    ) -> Result<Serialized> {
        if *value == Value::from("v2") {
            panic!("converter exploded on v2");
        }
        self.0.from_connect_data(topic, headers, schema, value, out)
    }
    fn to_connect_data(
        &mut self,
        topic: &str,
        headers: &Headers,
        bytes: Option<&[u8]>,
    ) -> Result<SchemaAndValue> {
        if bytes == Some(&b"v2"[..]) {
            panic!("converter exploded on v2");
        }
        self.0.to_connect_data(topic, headers, bytes)
    }
}

const STRING_CONVERTER: &str = "org.apache.kafka.connect.storage.StringConverter";

fn register(plugins: &mut Plugins) {
    plugins
        .transforms_mut()
        .register_transform("test.PanicOnV2", || PanicOnV2);
    plugins
        .transforms_mut()
        .register_predicate("test.PanicOnV2Predicate", || PanicOnV2Predicate);
    plugins
        .converters_mut()
        .register_converter("test.PanickyConverter", || {
            Box::new(PanickyConverter::default())
        });
}

fn herder(s: &Setup) -> StandaloneHerder {
    worker_with_plugins(s, &[], register)
}

/// One error-metrics sample of task 0 of `connector`.
fn error_metric(h: &StandaloneHerder, metric: &str, connector: &str) -> Option<f64> {
    let series = format!(
        "kafka_connect_task_error_metrics_{metric}{{connector=\"{connector}\",task=\"0\"}} "
    );
    h.worker()
        .metrics()
        .render()
        .lines()
        .find_map(|l| l.strip_prefix(series.as_str())?.parse().ok())
}

async fn wait_for_failed(h: &StandaloneHerder, name: &str) -> String {
    let mut trace = String::new();
    eventually(&format!("task of {name} FAILED"), || {
        let status = futures::executor::block_on(h.connector_status(name)).unwrap();
        let task = &status.tasks[0].state;
        trace = task.trace.clone().unwrap_or_default();
        task.state == "FAILED"
    })
    .await;
    trace
}

/// A PassThroughSource of v0..v4 on "out" as plain strings, with `extra`.
fn source(extra: &[(&str, &str)]) -> ConfigMap {
    let mut config = props(&[
        ("connector.class", "PassThroughSource"),
        ("count", "5"),
        ("topic", "out"),
        ("value.converter", STRING_CONVERTER),
    ]);
    config.extend(props(extra));
    config
}

/// v0..v4 on "out" as plain strings, from a source without faults.
async fn fill_out(h: &StandaloneHerder, s: &Setup) {
    h.create_connector("feed", source(&[]), TargetState::Started)
        .await
        .unwrap();
    eventually("5 records on out", || {
        topic_values(&s.kafka, "out").len() == 5
    })
    .await;
}

/// A CollectingSink on "out" reading plain strings, with `extra`.
fn sink(extra: &[(&str, &str)]) -> ConfigMap {
    let mut config = props(&[
        ("connector.class", "CollectingSink"),
        ("topics", "out"),
        ("value.converter", STRING_CONVERTER),
    ]);
    config.extend(props(extra));
    config
}

const SMT: [(&str, &str); 2] = [
    ("transforms", "boom"),
    ("transforms.boom.type", "test.PanicOnV2"),
];
/// A Filter that applies where the predicate matches (never: it panics on
/// v2 and matches nothing else).
const PREDICATE: [(&str, &str); 5] = [
    ("transforms", "drop"),
    ("transforms.drop.type", "Filter"),
    ("transforms.drop.predicate", "odd"),
    ("predicates", "odd"),
    ("predicates.odd.type", "test.PanicOnV2Predicate"),
];
const PANICKY_VALUES: (&str, &str) = ("value.converter", "test.PanickyConverter");
const TOLERATE: [(&str, &str); 2] = [("errors.tolerance", "all"), ("errors.log.enable", "true")];
const DLQ: [(&str, &str); 2] = [
    ("errors.deadletterqueue.topic.name", "dlq"),
    ("errors.deadletterqueue.context.headers.enable", "true"),
];

/// Under `all` the source skips v2 alone, counts it, and moves on.
async fn source_skips_v2(extra: &[(&str, &str)]) {
    let s = setup();
    let h = herder(&s);
    let mut config = TOLERATE.to_vec();
    config.extend_from_slice(extra);
    h.create_connector("src", source(&config), TargetState::Started)
        .await
        .unwrap();
    eventually("offsets past every record", || {
        stored(&s.store, "src") == Some(4)
    })
    .await;
    assert_eq!(topic_values(&s.kafka, "out"), ["v0", "v1", "v3", "v4"]);
    eventually("the skipped record counted", || {
        error_metric(&h, "total_records_skipped", "src") == Some(1.0)
    })
    .await;
    assert_eq!(error_metric(&h, "total_record_errors", "src"), Some(1.0));
    assert_eq!(error_metric(&h, "total_errors_logged", "src"), Some(1.0));
    let status = h.connector_status("src").await.unwrap();
    assert_eq!(status.tasks[0].state.state, "RUNNING");
    h.shutdown().await;
}

/// Under `none` the source fails at v2, with the panic in its trace; what
/// Kafka acknowledged before it (v0, v1) is committed.
async fn source_fails_at_v2(extra: &[(&str, &str)], panicked: &str) {
    let s = setup();
    let h = herder(&s);
    h.create_connector("src", source(extra), TargetState::Started)
        .await
        .unwrap();
    let trace = wait_for_failed(&h, "src").await;
    assert!(trace.contains("Tolerance exceeded"), "{trace}");
    assert!(trace.contains(panicked), "{trace}");
    assert!(trace.contains("record_path_panics.rs:"), "{trace}");
    assert_eq!(topic_values(&s.kafka, "out"), ["v0", "v1"]);
    assert_eq!(stored(&s.store, "src"), Some(1));
    h.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_source_smt_panic_is_tolerated_under_all() {
    source_skips_v2(&SMT).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_source_smt_panic_fails_the_task_under_none() {
    source_fails_at_v2(
        &SMT,
        "transform 'boom' (test.PanicOnV2) or its predicate panicked: transform exploded on v2",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_source_predicate_panic_is_tolerated_under_all() {
    source_skips_v2(&PREDICATE).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sink_predicate_panic_fails_the_task_under_none() {
    sink_fails_at_v2(
        &PREDICATE,
        "transform 'drop' (org.apache.kafka.connect.transforms.Filter) or its predicate \
         panicked: predicate exploded on v2",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_source_converter_panic_is_tolerated_under_all() {
    source_skips_v2(&[PANICKY_VALUES]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_source_converter_panic_fails_the_task_under_none() {
    source_fails_at_v2(
        &[PANICKY_VALUES],
        "value converter test.PanickyConverter panicked: converter exploded on v2",
    )
    .await;
}

/// Under `all` the sink skips v2 alone, counts it, and sends its raw bytes
/// to the DLQ with the panic in its error headers.
async fn sink_dead_letters_v2(extra: &[(&str, &str)], stage: &str, panicked: &str) {
    let s = setup();
    let h = herder(&s);
    fill_out(&h, &s).await;
    let mut config = TOLERATE.to_vec();
    config.extend_from_slice(&DLQ);
    config.extend_from_slice(extra);
    h.create_connector("sink", sink(&config), TargetState::Started)
        .await
        .unwrap();
    eventually("v2 dead-lettered", || s.kafka.records("dlq", 0).len() == 1).await;
    eventually("the other records put", || {
        s.collected.0.lock().unwrap().len() == 4
    })
    .await;
    assert_eq!(*s.collected.0.lock().unwrap(), ["v0", "v1", "v3", "v4"]);
    let dead = &s.kafka.records("dlq", 0)[0];
    assert_eq!(dead.value.as_deref(), Some(&b"v2"[..]));
    let header = |k: &str| {
        dead.headers
            .iter()
            .find(|(h, _)| h == k)
            .and_then(|(_, v)| v.clone())
            .map(|v| String::from_utf8(v.to_vec()).unwrap())
            .unwrap_or_default()
    };
    assert_eq!(header("__connect.errors.stage"), stage);
    let message = header("__connect.errors.exception.message");
    assert!(message.contains(panicked), "{message}");
    assert!(message.contains("record_path_panics.rs:"), "{message}");
    eventually("the skipped record counted", || {
        error_metric(&h, "total_records_skipped", "sink") == Some(1.0)
    })
    .await;
    assert_eq!(error_metric(&h, "total_record_errors", "sink"), Some(1.0));
    assert_eq!(
        error_metric(&h, "deadletterqueue_produce_requests", "sink"),
        Some(1.0)
    );
    let status = h.connector_status("sink").await.unwrap();
    assert_eq!(status.tasks[0].state.state, "RUNNING");
    h.shutdown().await;
}

/// Under `none` the sink fails at v2, with the panic in its trace.
async fn sink_fails_at_v2(extra: &[(&str, &str)], panicked: &str) {
    let s = setup();
    let h = herder(&s);
    fill_out(&h, &s).await;
    h.create_connector("sink", sink(extra), TargetState::Started)
        .await
        .unwrap();
    let trace = wait_for_failed(&h, "sink").await;
    assert!(trace.contains("Tolerance exceeded"), "{trace}");
    assert!(trace.contains(panicked), "{trace}");
    assert!(s.kafka.records("dlq", 0).is_empty());
    h.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sink_smt_panic_goes_to_the_dlq_under_all() {
    sink_dead_letters_v2(&SMT, "TRANSFORMATION", "transform exploded on v2").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sink_smt_panic_fails_the_task_under_none() {
    sink_fails_at_v2(&SMT, "panicked: transform exploded on v2").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sink_converter_panic_goes_to_the_dlq_under_all() {
    sink_dead_letters_v2(
        &[PANICKY_VALUES],
        "VALUE_CONVERTER",
        "test.PanickyConverter panicked: converter exploded on v2",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sink_converter_panic_fails_the_task_under_none() {
    sink_fails_at_v2(
        &[PANICKY_VALUES],
        "test.PanickyConverter panicked: converter exploded on v2",
    )
    .await;
}
