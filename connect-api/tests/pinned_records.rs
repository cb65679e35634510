//! Pins records and the default methods of the plugin traits: what a
//! plugin gets when it does not override them (Kafka's defaults).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use connect_api::config::{ConfigDef, ConfigKey, ConfigMap, ConfigType};
use connect_api::connector::{Connector, ConnectorContext, SinkConnector, SourceConnector};
use connect_api::sink::{SinkTask, SinkTaskContext, TopicPartition, TopicPartitionOffsets};
use connect_api::source::{OffsetStorageReader, SourceTask, SourceTaskContext};
use connect_api::transform::{Configurable, Transformation, Verdict};
use connect_api::{
    ConnectRecord, ConnectorType, Headers, Record, Result, Schema, Serialized, SinkRecord,
    SourceMap, SourceRecord, Value,
};

#[test]
fn record_builders_set_their_field() {
    let mut headers = Headers::new();
    headers.add_string("h", "v");
    let r = Record::new("t", Some(Schema::string()), Value::from("v"))
        .with_key(Some(Schema::int32()), Value::Int32(7))
        .with_timestamp(1234)
        .with_partition(3)
        .with_headers(headers.clone());
    assert_eq!(&*r.topic, "t");
    assert_eq!(r.value_schema, Some(Schema::string()));
    assert_eq!(r.value, Value::from("v"));
    assert_eq!(r.key_schema, Some(Schema::int32()));
    assert_eq!(r.key, Value::Int32(7));
    assert_eq!(r.timestamp, Some(1234));
    assert_eq!(r.kafka_partition, Some(3));
    assert_eq!(r.headers, headers);
    let plain = Record::new("t", None, Value::Null);
    assert_eq!(plain.timestamp, None);
    assert_eq!(plain.kafka_partition, None);
    assert!(plain.headers.is_empty());
}

#[test]
fn source_and_sink_records_expose_their_data() {
    let mut partition = SourceMap::new();
    partition.insert("file".into(), "a.txt".into());
    let mut offset = SourceMap::new();
    offset.insert("position".into(), 42.into());
    let data = Record::new("t", None, Value::from("x"));
    let mut source = SourceRecord::new(Arc::new(partition.clone()), offset.clone(), data.clone());
    assert_eq!(source.record(), &data);
    assert_eq!(source.kafka_offset(), None);
    source.record_mut().topic = "u".into();
    assert_eq!(&*source.record.topic, "u");

    let replaced = source.new_record(Record::new("v", None, Value::Int8(1)));
    assert_eq!(&*replaced.record.topic, "v");
    assert_eq!(replaced.record.value, Value::Int8(1));
    assert_eq!(*replaced.source_partition, partition);
    assert_eq!(replaced.source_offset, offset);

    let mut sink = SinkRecord::new(data.clone(), 4, 99);
    assert_eq!(sink.kafka_offset(), Some(99));
    assert_eq!(sink.record().kafka_partition, Some(4));
    assert_eq!(sink.record().value, Value::from("x"));
    sink.record_mut().topic = "renamed".into();
    assert_eq!(&*sink.record.topic, "renamed");
    assert_eq!(&*sink.original_topic, "t");
    let replaced = sink.new_record(Record::new("w", None, Value::Null));
    assert_eq!(&*replaced.record.topic, "w");
    assert_eq!(replaced.kafka_offset(), Some(99));
    assert_eq!(replaced.original_kafka_partition, 4);
    assert_eq!(replaced.original_kafka_offset, 99);
}

#[test]
fn serialized_null_or_bytes() {
    assert!(Serialized::Null.is_null());
    assert!(!Serialized::Bytes.is_null());
    assert_eq!(Serialized::Bytes.bytes_or_null(vec![1u8]), Some(vec![1u8]));
    assert_eq!(
        Serialized::Bytes.bytes_or_null(Vec::<u8>::new()),
        Some(vec![])
    );
    assert_eq!(Serialized::Null.bytes_or_null(vec![1u8]), None);
}

#[test]
fn connector_type_names_as_the_rest_api() {
    assert_eq!(ConnectorType::Source.as_str(), "source");
    assert_eq!(ConnectorType::Sink.as_str(), "sink");
}

#[test]
fn topic_partition_displays_as_kafka() {
    assert_eq!(TopicPartition::new("orders", 3).to_string(), "orders-3");
}

struct Plugin;

#[async_trait]
impl Connector for Plugin {
    fn version(&self) -> String {
        "1".into()
    }
    fn config_def(&self) -> ConfigDef {
        ConfigDef::new().define(ConfigKey::new("topic", ConfigType::String))
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

impl SourceConnector for Plugin {
    fn create_task(&self) -> Box<dyn SourceTask> {
        Box::new(Task::default())
    }
}

impl SinkConnector for Plugin {
    fn create_task(&self) -> Box<dyn SinkTask> {
        Box::new(Task::default())
    }
}

#[derive(Default)]
struct Task {
    flushed: Arc<Mutex<Vec<TopicPartitionOffsets>>>,
}

#[async_trait]
impl SourceTask for Task {
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
impl SinkTask for Task {
    async fn start(&mut self, _: &ConfigMap, _: Arc<dyn SinkTaskContext>) -> Result<()> {
        Ok(())
    }
    async fn put(&mut self, _: &[SinkRecord]) -> Result<()> {
        Ok(())
    }
    async fn flush(&mut self, offsets: &TopicPartitionOffsets) -> Result<()> {
        self.flushed.lock().unwrap().push(offsets.clone());
        Ok(())
    }
    async fn stop(&mut self) -> Result<()> {
        Ok(())
    }
}

#[test]
fn connector_validate_defaults_to_its_config_def() {
    let report = Connector::validate(&Plugin, &ConfigMap::new());
    assert_eq!(report.len(), 1);
    assert_eq!(report[0].name, "topic");
    assert_eq!(report[0].errors.len(), 1);
    let ok = Connector::validate(&Plugin, &ConfigMap::from([("topic", "t")]));
    assert_eq!(ok.len(), 1);
    assert!(ok[0].errors.is_empty());
    assert_eq!(ok[0].value.as_deref(), Some("t"));
}

#[test]
fn alter_offsets_defaults_to_not_managed() {
    let mut plugin = Plugin;
    let config = ConfigMap::new();
    let source = SourceConnector::alter_offsets(&mut plugin, &config, &[]);
    assert!(!futures::executor::block_on(source).unwrap());
    let none = BTreeMap::new();
    let sink = SinkConnector::alter_offsets(&mut plugin, &config, &none);
    assert!(!futures::executor::block_on(sink).unwrap());
}

#[test]
fn pre_commit_defaults_to_flush_then_everything() {
    let mut task = Task::default();
    let mut offsets = TopicPartitionOffsets::new();
    offsets.insert(TopicPartition::new("t", 0), 10);
    offsets.insert(TopicPartition::new("t", 1), 20);
    let committed = futures::executor::block_on(task.pre_commit(offsets.clone())).unwrap();
    assert_eq!(committed, offsets);
    assert_eq!(*task.flushed.lock().unwrap(), [offsets]);
}

/// The default `commit_record` says it is not implemented, which is how
/// the worker learns to let go of records once sent (no opt-out flag to
/// forget).
#[test]
fn commit_record_defaults_to_not_implemented() {
    let mut task = Task::default();
    let record = SourceRecord::new(
        Arc::new(SourceMap::new()),
        SourceMap::new(),
        connect_api::Record::new("t", None, connect_api::Value::Null),
    );
    let err = futures::executor::block_on(SourceTask::commit_record(&mut task, &record, None))
        .unwrap_err();
    assert!(err.is_not_implemented(), "{err}");
}

#[test]
fn offsets_default_looks_up_each_partition() {
    struct Reader;
    impl OffsetStorageReader for Reader {
        fn offset(&self, p: &SourceMap) -> Option<SourceMap> {
            p.get("known").map(|_| {
                let mut o = SourceMap::new();
                o.insert("position".into(), 1.into());
                o
            })
        }
    }
    let mut known = SourceMap::new();
    known.insert("known".into(), true.into());
    let unknown = SourceMap::new();
    let found = Reader.offsets(&[unknown, known.clone()]);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].0, known);
    assert_eq!(found[0].1.get("position"), Some(&1.into()));
}

#[test]
fn apply_defaults_to_transform_in_place() {
    struct Upper;
    impl Configurable for Upper {}

    impl Transformation<SinkRecord> for Upper {
        fn transform(&mut self, record: &mut SinkRecord) -> Result<Verdict> {
            if record.record.value.is_null() {
                return Ok(Verdict::Drop);
            }
            record.record.topic = record.record.topic.to_uppercase().into();
            Ok(Verdict::Keep)
        }
    }
    let kept = Upper
        .apply(SinkRecord::new(
            Record::new("t", None, Value::Int8(1)),
            0,
            0,
        ))
        .unwrap()
        .unwrap();
    assert_eq!(&*kept.record.topic, "T");
    let dropped = Upper
        .apply(SinkRecord::new(Record::new("t", None, Value::Null), 0, 0))
        .unwrap();
    assert!(dropped.is_none());
}
