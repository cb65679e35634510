//! The runtime holds plugins as trait objects and drives their futures on a
//! multi-threaded tokio runtime. These checks fail to compile if a change to
//! connect-api breaks either: a trait that stops being object-safe, or an
//! async method whose future stops being `Send`.

use std::sync::Arc;

use async_trait::async_trait;
use connect_api::config::{ConfigDef, ConfigMap};
use connect_api::connector::{Connector, ConnectorContext, SinkConnector, SourceConnector};
use connect_api::converter::{Converter, HeaderConverter};
use connect_api::sink::{SinkTask, SinkTaskContext};
use connect_api::source::{SourceTask, SourceTaskContext};
use connect_api::transform::{Configurable, Predicate, Transformation, Verdict};
use connect_api::{ConnectRecord, Record, Result, SinkRecord, SourceRecord, Value};

fn assert_send<T: Send>(_: &T) {}

struct Quiet;

#[async_trait]
impl SourceTask for Quiet {
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
impl SinkTask for Quiet {
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
impl Connector for Quiet {
    fn version(&self) -> String {
        "0".into()
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

impl SourceConnector for Quiet {
    fn create_task(&self) -> Box<dyn SourceTask> {
        Box::new(Quiet)
    }
}

impl SinkConnector for Quiet {
    fn create_task(&self) -> Box<dyn SinkTask> {
        Box::new(Quiet)
    }
}

impl Configurable for Quiet {}

impl<R: ConnectRecord> Transformation<R> for Quiet {
    fn transform(&mut self, _record: &mut R) -> Result<Verdict> {
        Ok(Verdict::Keep)
    }
}

impl<R: ConnectRecord> Predicate<R> for Quiet {
    fn test(&self, _: &R) -> bool {
        true
    }
}

#[test]
fn boxed_tasks_and_their_futures_are_send() {
    let mut source: Box<dyn SourceTask> = Box::new(Quiet);
    assert_send(&source);
    let poll = source.poll();
    assert_send(&poll);
    assert!(futures::executor::block_on(poll).unwrap().is_empty());

    let mut sink: Box<dyn SinkTask> = Box::new(Quiet);
    assert_send(&sink);
    let batch = [SinkRecord::new(Record::new("t", None, Value::Null), 0, 0)];
    let put = sink.put(&batch);
    assert_send(&put);
    futures::executor::block_on(put).unwrap();
    let commit = sink.pre_commit(Default::default());
    assert_send(&commit);
    assert!(futures::executor::block_on(commit).unwrap().is_empty());
}

#[test]
fn boxed_connectors_create_boxed_tasks() {
    let mut source: Box<dyn SourceConnector> = Box::new(Quiet);
    assert_send(&source);
    let configs = source.task_configs(3);
    assert_send(&configs);
    assert!(futures::executor::block_on(configs).unwrap().is_empty());
    let _task: Box<dyn SourceTask> = source.create_task();

    let sink: Box<dyn SinkConnector> = Box::new(Quiet);
    let _task: Box<dyn SinkTask> = sink.create_task();
}

#[test]
fn transforms_and_predicates_chain_as_trait_objects_for_both_record_kinds() {
    let mut source_chain: Vec<Box<dyn Transformation<SourceRecord>>> = vec![Box::new(Quiet)];
    let mut sink_chain: Vec<Box<dyn Transformation<SinkRecord>>> = vec![Box::new(Quiet)];
    let predicate: Box<dyn Predicate<SinkRecord>> = Box::new(Quiet);
    assert_send(&source_chain);
    assert_send(&sink_chain);
    assert_send(&predicate);

    let record = SinkRecord::new(Record::new("t", None, Value::from("v")), 1, 2);
    assert!(predicate.test(&record));
    let out = sink_chain[0].apply(record.clone()).unwrap();
    assert_eq!(out, Some(record));
    let source = SourceRecord::new(Default::default(), Default::default(), Record::default());
    assert!(source_chain[0].apply(source).unwrap().is_some());
}

#[test]
fn converters_are_object_safe() {
    fn takes(_: Option<Box<dyn Converter>>, _: Option<Box<dyn HeaderConverter>>) {}
    takes(None, None);
}

/// A sink task context double needs only the methods that carry data; the
/// hints and the reporter have defaults (none, as Kafka's).
#[test]
fn a_sink_context_double_implements_only_what_it_needs() {
    struct Minimal(ConfigMap);
    impl SinkTaskContext for Minimal {
        fn configs(&self) -> &ConfigMap {
            &self.0
        }
        fn offset(&self, _: connect_api::sink::TopicPartitionOffsets) {}
        fn assignment(&self) -> Vec<connect_api::sink::TopicPartition> {
            Vec::new()
        }
        fn pause(&self, _: &[connect_api::sink::TopicPartition]) {}
        fn resume(&self, _: &[connect_api::sink::TopicPartition]) {}
    }
    let ctx: Arc<dyn SinkTaskContext> = Arc::new(Minimal(ConfigMap::new()));
    ctx.timeout(10);
    ctx.request_commit();
    assert!(ctx.errant_record_reporter().is_none());
}
