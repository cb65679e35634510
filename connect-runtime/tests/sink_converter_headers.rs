//! A sink's key and value converters see the consumed record's headers,
//! as Kafka's do (a converter may read a schema id from them). Before,
//! the sink loop gave them none while the testkit gave them the headers.

mod common;

use common::*;
use connect_api::config::ConfigMap;
use connect_api::converter::{Converter, SchemaAndValue};
use connect_api::{Headers, Result, Schema, Serialized, Value};
use connect_runtime::converters::StringConverter;
use connect_runtime::status::TargetState;

/// A string converter that reads values as `<text>|h=<header h>`.
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
        self.0.from_connect_data(topic, headers, schema, value, out)
    }
    fn to_connect_data(
        &mut self,
        topic: &str,
        headers: &Headers,
        bytes: Option<&[u8]>,
    ) -> Result<SchemaAndValue> {
        let read = self.0.to_connect_data(topic, headers, bytes)?;
        let h = headers
            .all_with_name("h")
            .last()
            .map_or("none".to_string(), |h| h.value().to_string());
        Ok(SchemaAndValue::new(
            Some(Schema::string()),
            Value::from(format!("{}|h={h}", read.value)),
        ))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sink_converters_see_the_records_headers() {
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
            (
                "value.converter",
                "org.apache.kafka.connect.storage.StringConverter",
            ),
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
            ("value.converter", "test.HeaderEcho"),
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
    assert!(
        values.iter().all(|v| v.ends_with("|h=tagged")),
        "the value converter did not see the headers: {values:?}"
    );
    h.shutdown().await;
}
