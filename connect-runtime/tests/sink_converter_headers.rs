//! Key and value converters see the record's headers on both paths, as
//! Kafka's do (a converter may read or write a schema id there). Before,
//! the sink loop gave them none while the testkit gave them the headers;
//! now both loops and the testkit run one record codec.

mod common;

use common::*;
use connect_api::config::ConfigMap;
use connect_api::converter::{Converter, SchemaAndValue};
use connect_api::{Headers, Result, Schema, Serialized, Value};
use connect_runtime::converters::StringConverter;
use connect_runtime::status::TargetState;

/// A string converter that reads and writes values as `<text>|h=<header h>`.
#[derive(Default)]
struct HeaderEcho(StringConverter);

impl Converter for HeaderEcho {
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
        let written = self
            .0
            .from_connect_data(topic, headers, schema, value, out)?;
        out.extend_from_slice(format!("|h={}", header_h(headers)).as_bytes());
        Ok(written)
    }
    fn to_connect_data(
        &mut self,
        topic: &str,
        headers: &Headers,
        bytes: Option<&[u8]>,
    ) -> Result<SchemaAndValue> {
        let read = self.0.to_connect_data(topic, headers, bytes)?;
        Ok(SchemaAndValue::new(
            Some(Schema::string()),
            Value::from(format!("{}|h={}", read.value, header_h(headers))),
        ))
    }
}

fn header_h(headers: &Headers) -> String {
    headers
        .all_with_name("h")
        .last()
        .map_or("none".to_string(), |h| h.value().to_string())
}

/// Source `value.converter`, sink `value.converter`: the one that reads
/// the headers is `echo`, the other a plain string converter.
async fn headers_reach(source_converter: &str, sink_converter: &str) -> Vec<String> {
    let s = setup();
    let h = worker_with_plugins(&s, &[], |plugins| {
        plugins
            .converters_mut()
            .register_converter("test.HeaderEcho", || Box::new(HeaderEcho::default()));
    });
    // A source writes three records with header h=tagged.
    h.create_connector(
        "src",
        props(&[
            ("connector.class", "PassThroughSource"),
            ("count", "3"),
            ("topic", "out"),
            ("value.converter", source_converter),
            ("transforms", "tag"),
            ("transforms.tag.type", "InsertHeader"),
            ("transforms.tag.header", "h"),
            ("transforms.tag.value.literal", "tagged"),
        ]),
        TargetState::Started,
    )
    .await
    .unwrap();
    h.create_connector(
        "sink",
        props(&[
            ("connector.class", "CollectingSink"),
            ("topics", "out"),
            ("value.converter", sink_converter),
        ]),
        TargetState::Started,
    )
    .await
    .unwrap();
    eventually("three records at the sink", || {
        s.collected.0.lock().unwrap().len() >= 3
    })
    .await;
    let values = s.collected.0.lock().unwrap().clone();
    h.shutdown().await;
    values
}

const STRING: &str = "org.apache.kafka.connect.storage.StringConverter";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn source_converters_see_the_records_headers() {
    let values = headers_reach("test.HeaderEcho", STRING).await;
    assert!(
        values.iter().all(|v| v.ends_with("|h=tagged")),
        "the source's value converter did not see the headers: {values:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sink_converters_see_the_records_headers() {
    let values = headers_reach(STRING, "test.HeaderEcho").await;
    assert!(
        values.iter().all(|v| v.ends_with("|h=tagged")),
        "the sink's value converter did not see the headers: {values:?}"
    );
}
