//! The FileStream connectors driven through the connect-api traits, with
//! fake runtime contexts and a temporary directory.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use connect_api::connector::ExactlyOnceSupport;
use connect_api::sink::{ErrantRecordReporter, TopicPartitionOffsets};
use connect_api::source::OffsetStorageReader;
use connect_api::{
    ConfigMap, ConnectError, Connector, ConnectorContext, ErrorKind, Record, Schema, SchemaBuilder,
    SinkRecord, SinkTask, SinkTaskContext, SourceConnector, SourceMap, SourceRecord, SourceTask,
    SourceTaskContext, Struct, TopicPartition, Value,
};
use connect_file::{
    FileStreamSinkConnector, FileStreamSinkTask, FileStreamSourceConnector, FileStreamSourceTask,
    SINK_NAMES, SOURCE_NAMES,
};

/// Real-time bound for the polling loops; with paused tokio time the idle
/// waits inside `poll` cost nothing, so this only guards against a hang.
const DEADLINE: Duration = Duration::from_secs(60);

fn config(pairs: &[(&str, &str)]) -> ConfigMap {
    ConfigMap::from_pairs(pairs.iter().copied())
}

fn partition_of(path: &str) -> SourceMap {
    let mut p = SourceMap::new();
    p.insert("filename".into(), path.into());
    p
}

fn position(record: &SourceRecord) -> u64 {
    record.source_offset["position"].as_u64().unwrap()
}

fn values(records: &[SourceRecord]) -> Vec<&str> {
    records
        .iter()
        .map(|r| r.record.value.as_str().unwrap())
        .collect()
}

#[derive(Default)]
struct FakeOffsets(Mutex<Vec<(SourceMap, SourceMap)>>);

impl OffsetStorageReader for FakeOffsets {
    fn offset(&self, partition: &SourceMap) -> Option<SourceMap> {
        let stored = self.0.lock().unwrap();
        stored
            .iter()
            .find(|(p, _)| p == partition)
            .map(|(_, o)| o.clone())
    }
}

struct FakeSourceContext {
    config: ConfigMap,
    offsets: FakeOffsets,
}

impl SourceTaskContext for FakeSourceContext {
    fn configs(&self) -> &ConfigMap {
        &self.config
    }
    fn offset_storage_reader(&self) -> &dyn OffsetStorageReader {
        &self.offsets
    }
}

struct FakeSinkContext {
    config: ConfigMap,
}

impl SinkTaskContext for FakeSinkContext {
    fn configs(&self) -> &ConfigMap {
        &self.config
    }
    fn offset(&self, _: TopicPartitionOffsets) {}
    fn timeout(&self, _: u64) {}
    fn assignment(&self) -> Vec<TopicPartition> {
        vec![TopicPartition::new("connect-test", 0)]
    }
    fn pause(&self, _: &[TopicPartition]) {}
    fn resume(&self, _: &[TopicPartition]) {}
    fn request_commit(&self) {}
    fn errant_record_reporter(&self) -> Option<Arc<dyn ErrantRecordReporter>> {
        None
    }
}

struct FakeConnectorContext;

impl ConnectorContext for FakeConnectorContext {
    fn request_task_reconfiguration(&self) {}
    fn raise_error(&self, _: ConnectError) {}
}

/// A source task started on `path` with `stored` as its committed offset.
async fn start_source(
    path: &str,
    extra: &[(&str, &str)],
    stored: Option<u64>,
) -> FileStreamSourceTask {
    let mut pairs = vec![("file", path), ("topic", "connect-test")];
    pairs.extend_from_slice(extra);
    let config = config(&pairs);
    let offsets = FakeOffsets::default();
    if let Some(position) = stored {
        let mut offset = SourceMap::new();
        offset.insert("position".into(), position.into());
        offsets.0.lock().unwrap().push((partition_of(path), offset));
    }
    let context = Arc::new(FakeSourceContext {
        config: config.clone(),
        offsets,
    });
    let mut task = FileStreamSourceTask::new();
    task.start(&config, context).await.unwrap();
    task
}

/// Poll until `n` records arrived, checking that no batch exceeds `max_batch`.
async fn poll_records(
    task: &mut FileStreamSourceTask,
    n: usize,
    max_batch: usize,
) -> Vec<SourceRecord> {
    let deadline = Instant::now() + DEADLINE;
    let mut records = Vec::new();
    while records.len() < n {
        assert!(
            Instant::now() < deadline,
            "only {} of {n} records arrived",
            records.len()
        );
        let batch = task.poll().await.unwrap();
        assert!(batch.len() <= max_batch, "batch of {}", batch.len());
        records.extend(batch);
    }
    records
}

fn append(path: &Path, text: &str) {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
        .unwrap();
    f.write_all(text.as_bytes()).unwrap();
}

fn path_str(path: &Path) -> &str {
    path.to_str().unwrap()
}

#[tokio::test(start_paused = true)]
async fn lines_become_string_records_with_byte_positions() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("test.txt");
    append(&path, "firest line\nsecond line\n");
    let mut task = start_source(path_str(&path), &[], None).await;

    let records = poll_records(&mut task, 2, 2000).await;
    assert_eq!(values(&records), ["firest line", "second line"]);
    for r in &records {
        assert_eq!(&*r.record.topic, "connect-test");
        assert_eq!(r.record.value_schema, Some(Schema::string()));
        assert!(!r.record.value_schema.as_ref().unwrap().is_optional());
        assert_eq!(r.record.key, Value::Null);
        assert_eq!(r.record.key_schema, None);
        assert_eq!(*r.source_partition, partition_of(path_str(&path)));
    }
    assert!(Arc::ptr_eq(
        &records[0].source_partition,
        &records[1].source_partition
    ));
    assert_eq!(position(&records[0]), 12);
    assert_eq!(position(&records[1]), 24);

    // Nothing new: an empty batch, not a hang.
    assert!(task.poll().await.unwrap().is_empty());
    append(&path, "third\n");
    let more = poll_records(&mut task, 1, 2000).await;
    assert_eq!(values(&more), ["third"]);
    assert_eq!(position(&more[0]), 30);
    task.stop().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn resumes_after_the_stored_position() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("test.txt");
    append(&path, "one\ntwo\nthree\n");
    let mut task = start_source(path_str(&path), &[], Some(4)).await;
    let records = poll_records(&mut task, 2, 2000).await;
    assert_eq!(values(&records), ["two", "three"]);
    assert_eq!(position(&records[0]), 8);
    assert_eq!(position(&records[1]), 14);
}

#[tokio::test(start_paused = true)]
async fn stored_position_past_the_end_reads_from_the_start() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("test.txt");
    append(&path, "short\n");
    let mut task = start_source(path_str(&path), &[], Some(1000)).await;
    let records = poll_records(&mut task, 1, 2000).await;
    assert_eq!(values(&records), ["short"]);
    assert_eq!(position(&records[0]), 6);
}

#[tokio::test(start_paused = true)]
async fn file_truncated_while_tailed_is_read_again_from_the_start() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("test.txt");
    append(&path, "a long first line\n");
    let mut task = start_source(path_str(&path), &[], None).await;
    assert_eq!(
        values(&poll_records(&mut task, 1, 2000).await),
        ["a long first line"]
    );

    std::fs::write(&path, "new\n").unwrap();
    let records = poll_records(&mut task, 1, 2000).await;
    assert_eq!(values(&records), ["new"]);
    assert_eq!(position(&records[0]), 4);
}

#[tokio::test(start_paused = true)]
async fn a_line_written_in_two_parts_is_one_record() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("test.txt");
    append(&path, "first\nhal");
    let mut task = start_source(path_str(&path), &[], None).await;
    let first = poll_records(&mut task, 1, 2000).await;
    assert_eq!(values(&first), ["first"]);
    // The unterminated part is held back, however often we poll.
    for _ in 0..3 {
        assert!(task.poll().await.unwrap().is_empty());
    }
    append(&path, "f line\n");
    let rest = poll_records(&mut task, 1, 2000).await;
    assert_eq!(values(&rest), ["half line"]);
    assert_eq!(position(&rest[0]), 16);
}

#[tokio::test(start_paused = true)]
async fn crlf_terminators_are_stripped() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("test.txt");
    append(&path, "a\r\nb\r\n\r\n");
    let mut task = start_source(path_str(&path), &[], None).await;
    let records = poll_records(&mut task, 3, 2000).await;
    assert_eq!(values(&records), ["a", "b", ""]);
    let positions: Vec<u64> = records.iter().map(position).collect();
    assert_eq!(positions, [3, 6, 8]);
}

#[tokio::test(start_paused = true)]
async fn batch_size_bounds_each_poll() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("test.txt");
    let text: String = (0..10).map(|i| format!("line {i}\n")).collect();
    append(&path, &text);
    let mut task = start_source(path_str(&path), &[("batch.size", "3")], None).await;
    let first = task.poll().await.unwrap();
    assert_eq!(first.len(), 3);
    let mut records = first;
    records.extend(poll_records(&mut task, 7, 3).await);
    let expected: Vec<String> = (0..10).map(|i| format!("line {i}")).collect();
    assert_eq!(values(&records), expected);
}

#[tokio::test(start_paused = true)]
async fn a_missing_file_is_waited_for() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("later.txt");
    let mut task = start_source(path_str(&path), &[], None).await;
    assert!(task.poll().await.unwrap().is_empty());
    assert!(task.poll().await.unwrap().is_empty());
    append(&path, "finally\n");
    let records = poll_records(&mut task, 1, 2000).await;
    assert_eq!(values(&records), ["finally"]);
    assert_eq!(position(&records[0]), 8);
}

/// Start the source connector with `pairs` and return the config error's key.
async fn source_config_error(pairs: &[(&str, &str)]) -> (String, String) {
    let mut connector = FileStreamSourceConnector::new();
    let err = connector
        .start(&config(pairs), Arc::new(FakeConnectorContext))
        .await
        .unwrap_err();
    let key = match err.kind() {
        ErrorKind::Config { key } => key.clone(),
        other => panic!("expected a config error, got {other:?}: {err}"),
    };
    // The task checks its config the same way.
    let context = Arc::new(FakeSourceContext {
        config: config(pairs),
        offsets: FakeOffsets::default(),
    });
    let task_err = FileStreamSourceTask::new()
        .start(&config(pairs), context)
        .await
        .unwrap_err();
    assert!(matches!(task_err.kind(), ErrorKind::Config { key: k } if *k == key));
    (key, err.to_string())
}

#[tokio::test]
async fn config_errors_name_the_key() {
    let (key, message) = source_config_error(&[("file", "x.txt")]).await;
    assert_eq!(key, "topic");
    assert!(message.contains("topic"), "{message}");

    let (key, message) =
        source_config_error(&[("file", "x.txt"), ("topic", "t"), ("batch.size", "0")]).await;
    assert_eq!(key, "batch.size");
    assert!(message.contains("at least 1"), "{message}");

    let (key, message) = source_config_error(&[("file", "x.txt"), ("topic", "a,b")]).await;
    assert_eq!(key, "topic");
    assert!(message.contains("single topic"), "{message}");

    let (key, _) = source_config_error(&[("topic", "")]).await;
    assert_eq!(key, "topic");

    let (key, message) = source_config_error(&[("topic", "t"), ("batch.size", "many")]).await;
    assert_eq!(key, "batch.size");
    assert!(message.contains("many"), "{message}");

    // validate reports each problem on its key, without failing.
    let reports = FileStreamSourceConnector::new()
        .validate(&config(&[("topic", "a,b"), ("batch.size", "0")]));
    let with_errors: Vec<&str> = reports
        .iter()
        .filter(|r| !r.errors.is_empty())
        .map(|r| r.name.as_str())
        .collect();
    assert_eq!(with_errors, ["topic", "batch.size"]);
}

#[tokio::test]
async fn every_key_is_documented() {
    for def in [
        FileStreamSourceConnector::definition(),
        FileStreamSinkConnector::definition(),
    ] {
        for key in def.keys() {
            assert!(!key.documentation.is_empty(), "{} has no doc", key.name);
        }
    }
    let source = FileStreamSourceConnector::definition();
    assert_eq!(
        source.names().into_iter().collect::<Vec<_>>(),
        ["batch.size", "file", "topic"]
    );
    assert!(!source.key("file").unwrap().is_required());
    assert!(source.key("topic").unwrap().is_required());
    // The sink leaves `topics` / `topics.regex` to the runtime.
    let sink = FileStreamSinkConnector::definition();
    assert_eq!(sink.names().into_iter().collect::<Vec<_>>(), ["file"]);
}

#[tokio::test]
async fn connectors_split_work_like_kafka() {
    let source_config = config(&[("file", "in.txt"), ("topic", "connect-test")]);
    let mut source = FileStreamSourceConnector::new();
    source
        .start(&source_config, Arc::new(FakeConnectorContext))
        .await
        .unwrap();
    assert_eq!(
        source.task_configs(5).await.unwrap(),
        std::slice::from_ref(&source_config)
    );
    assert!(source.task_configs(0).await.unwrap().is_empty());
    assert_eq!(
        source.exactly_once_support(&source_config),
        ExactlyOnceSupport::Supported
    );
    assert_eq!(
        source.exactly_once_support(&config(&[("topic", "t")])),
        ExactlyOnceSupport::Unsupported
    );
    source.stop().await.unwrap();

    let sink_config = config(&[("file", "out.txt"), ("topics", "connect-test")]);
    let mut sink = FileStreamSinkConnector::new();
    sink.start(&sink_config, Arc::new(FakeConnectorContext))
        .await
        .unwrap();
    let tasks = sink.task_configs(3).await.unwrap();
    assert_eq!(tasks.len(), 3);
    assert!(tasks.iter().all(|t| *t == sink_config));

    assert_eq!(source.version(), env!("CARGO_PKG_VERSION"));
    assert_eq!(sink.version(), env!("CARGO_PKG_VERSION"));
    assert_eq!(
        SOURCE_NAMES,
        [
            "org.apache.kafka.connect.file.FileStreamSourceConnector",
            "FileStreamSource",
            "FileStreamSourceConnector"
        ]
    );
    assert_eq!(
        SINK_NAMES,
        [
            "org.apache.kafka.connect.file.FileStreamSinkConnector",
            "FileStreamSink",
            "FileStreamSinkConnector"
        ]
    );
}

#[tokio::test]
async fn source_offsets_can_be_altered_only_in_the_documented_shape() {
    let file_config = config(&[("file", "in.txt"), ("topic", "t")]);
    let mut connector = FileStreamSourceConnector::new();
    let offset = |v: serde_json::Value| {
        let mut o = SourceMap::new();
        o.insert("position".into(), v);
        o
    };
    let good = [
        (partition_of("in.txt"), Some(offset(42.into()))),
        (partition_of("old.txt"), None),
    ];
    assert!(connector.alter_offsets(&file_config, &good).await.unwrap());
    for bad in [
        (partition_of("in.txt"), Some(offset((-1).into()))),
        (partition_of("in.txt"), Some(offset("12".into()))),
        (partition_of("in.txt"), Some(SourceMap::new())),
        (SourceMap::new(), Some(offset(1.into()))),
    ] {
        assert!(connector.alter_offsets(&file_config, &[bad]).await.is_err());
    }
    let stdin_config = config(&[("topic", "t")]);
    let err = connector
        .alter_offsets(&stdin_config, &good)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("file"), "{err}");
}

#[tokio::test]
async fn an_invalid_stored_position_fails_start_with_a_fix() {
    let path = "in.txt";
    let config = config(&[("file", path), ("topic", "t")]);
    let offsets = FakeOffsets::default();
    let mut bad = SourceMap::new();
    bad.insert("position".into(), "abc".into());
    offsets.0.lock().unwrap().push((partition_of(path), bad));
    let context = Arc::new(FakeSourceContext {
        config: config.clone(),
        offsets,
    });
    let err = FileStreamSourceTask::new()
        .start(&config, context)
        .await
        .unwrap_err();
    let message = err.to_string();
    assert!(
        message.contains("position") && message.contains("in.txt"),
        "{message}"
    );
}

async fn start_sink(path: &Path) -> FileStreamSinkTask {
    let config = config(&[("file", path_str(path)), ("topics", "connect-test")]);
    let mut task = FileStreamSinkTask::new();
    task.start(
        &config,
        Arc::new(FakeSinkContext {
            config: config.clone(),
        }),
    )
    .await
    .unwrap();
    task
}

fn sink_record(schema: Option<Schema>, value: Value, offset: i64) -> SinkRecord {
    SinkRecord::new(Record::new("connect-test", schema, value), 0, offset)
}

#[tokio::test]
async fn sink_writes_each_value_string_form_on_its_own_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("test.sink.txt");
    let mut task = start_sink(&path).await;

    let schema = SchemaBuilder::struct_()
        .field("id", Schema::int32())
        .field("name", Schema::string())
        .build()
        .unwrap();
    let mut value = Struct::new(schema.clone()).unwrap();
    value.put("id", 7).unwrap().put("name", "ann").unwrap();
    let records = vec![
        sink_record(Some(Schema::string()), Value::from("firest line"), 0),
        sink_record(Some(Schema::int32()), Value::Int32(42), 1),
        sink_record(Some(schema), Value::Struct(value), 2),
        sink_record(None, Value::Null, 3),
        sink_record(
            None,
            Value::Array(vec![Value::Int64(1), Value::from("b")]),
            4,
        ),
    ];
    task.put(&records).await.unwrap();
    task.put(&[]).await.unwrap();
    task.flush(&TopicPartitionOffsets::new()).await.unwrap();
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        // What Kafka's sink prints: Java's toString of each value.
        "firest line\n42\nStruct{id=7,name=ann}\nnull\n[1, b]\n"
    );

    // pre_commit (what the runtime calls on each offset commit) flushes too.
    task.put(&[sink_record(None, Value::from("second line"), 5)])
        .await
        .unwrap();
    let mut offsets = TopicPartitionOffsets::new();
    offsets.insert(TopicPartition::new("connect-test", 0), 6);
    assert_eq!(task.pre_commit(offsets.clone()).await.unwrap(), offsets);
    assert!(std::fs::read_to_string(&path)
        .unwrap()
        .ends_with("[1, b]\nsecond line\n"));
    task.stop().await.unwrap();
}

#[tokio::test]
async fn sink_lines_are_in_the_file_once_their_batch_is_put() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("test.sink.txt");
    let mut task = start_sink(&path).await;
    let records: Vec<SinkRecord> = (0..3)
        .map(|i| sink_record(None, Value::from(format!("line {i}")), i))
        .collect();
    task.put(&records).await.unwrap();
    // No flush, no offset commit: a drained backlog's last lines must not
    // wait for the next one (offset.flush.interval.ms, 60 s by default).
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "line 0\nline 1\nline 2\n"
    );
    task.stop().await.unwrap();
}

#[tokio::test]
async fn sink_appends_to_an_existing_file_and_stop_flushes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("test.sink.txt");
    append(&path, "earlier\n");
    let mut task = start_sink(&path).await;
    task.put(&[sink_record(None, Value::from("later"), 0)])
        .await
        .unwrap();
    task.stop().await.unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "earlier\nlater\n");

    // A restarted task keeps appending.
    let mut task = start_sink(&path).await;
    task.put(&[sink_record(None, Value::from("again"), 1)])
        .await
        .unwrap();
    task.flush(&TopicPartitionOffsets::new()).await.unwrap();
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "earlier\nlater\nagain\n"
    );
}

#[tokio::test]
async fn sink_reports_an_unwritable_path() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("no-such-dir").join("out.txt");
    let config = config(&[("file", path_str(&path))]);
    let err = FileStreamSinkTask::new()
        .start(
            &config,
            Arc::new(FakeSinkContext {
                config: config.clone(),
            }),
        )
        .await
        .unwrap_err();
    assert!(err.to_string().contains(path_str(&path)), "{err}");
}

#[tokio::test]
async fn source_end_to_end_into_sink() {
    // The seed demo without Kafka: lines from the source, through the sink.
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("test.txt");
    let output = dir.path().join("test.sink.txt");
    append(&input, "firest line\nsecond line\n");
    let mut source = start_source(path_str(&input), &[], None).await;
    let mut sink = start_sink(&output).await;
    let records = poll_records(&mut source, 2, 2000).await;
    let delivered: Vec<SinkRecord> = records
        .into_iter()
        .enumerate()
        .map(|(i, r)| SinkRecord::new(r.record, 0, i as i64))
        .collect();
    sink.put(&delivered).await.unwrap();
    sink.flush(&TopicPartitionOffsets::new()).await.unwrap();
    assert_eq!(
        std::fs::read_to_string(&output).unwrap(),
        "firest line\nsecond line\n"
    );
}
