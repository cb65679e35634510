//! The full pipelines: the real source and sink loops on the in-memory
//! Kafka, with injected faults.

mod common;

use std::time::Duration;

use common::{counter_partition, offset, BufferingSink, CounterLog, CounterSource, Written};
use connect_api::{Record, Schema, Value};
use connect_testkit::kafka::{FaultKind, MemoryKafka, NewTopic};
use connect_testkit::{config, eventually, SinkPipeline, SourcePipeline, State};

const WAIT: Duration = Duration::from_secs(30);

fn topic_values(p: &SourcePipeline, topic: &str) -> Vec<String> {
    p.read_topic(topic)
        .unwrap()
        .into_iter()
        .map(|r| r.record.value.to_string())
        .collect()
}

fn all(n: i64) -> Vec<String> {
    (0..n).map(|i| format!("v{i}")).collect()
}

#[tokio::test(start_paused = true)]
async fn source_records_land_on_the_topic_and_offsets_are_stored() {
    let kafka = MemoryKafka::new();
    let log = CounterLog::default();
    let mut p = SourcePipeline::for_connector(&kafka, "counter", CounterSource::new(log.clone()));
    p.start(config(&[("count", "25"), ("topic", "counts")]))
        .await
        .unwrap();
    p.wait_for_records("counts", 25, WAIT).await.unwrap();
    p.wait_for_offset(&counter_partition(), WAIT, |o| *o == offset(24))
        .await
        .unwrap();
    p.stop().await.unwrap();
    assert_eq!(topic_values(&p, "counts"), all(25));
    let acks = log.acks.lock().unwrap().clone();
    assert_eq!(acks.len(), 25);
    assert_eq!(
        acks[24],
        (24, Some((0, 24))),
        "commit_record got the Kafka offset"
    );
    assert!(*log.commits.lock().unwrap() >= 1);
}

/// A started counter source of 10 records on topic `counts`, with one more
/// config pair.
async fn ten_counts(kafka: &MemoryKafka, log: &CounterLog, extra: (&str, &str)) -> SourcePipeline {
    let mut p = SourcePipeline::for_connector(kafka, "counter", CounterSource::new(log.clone()));
    p.start(config(&[("count", "10"), ("topic", "counts"), extra]))
        .await
        .unwrap();
    p
}

/// `SourceTask::commit` is a notification, as in Kafka: an error from it
/// is logged, and the task keeps running and committing.
#[tokio::test(start_paused = true)]
async fn a_failing_task_commit_is_logged_not_fatal() {
    let kafka = MemoryKafka::new();
    let log = CounterLog::default();
    let mut p = ten_counts(&kafka, &log, ("fail.commits", "2")).await;
    p.wait_for_records("counts", 10, WAIT).await.unwrap();
    let commits = log.commits.clone();
    eventually("a commit after the two refused ones", WAIT, || {
        *commits.lock().unwrap() >= 3
    })
    .await
    .unwrap();
    assert!(!p.states().contains(&State::Failed));
    p.wait_for_offset(&counter_partition(), WAIT, |o| *o == offset(9))
        .await
        .unwrap();
    p.stop().await.unwrap();
}

/// `SourceTask::commit_record` is a notification too: an error from it is
/// logged, and the record's offset is stored all the same.
#[tokio::test(start_paused = true)]
async fn a_failing_commit_record_is_logged_not_fatal() {
    let kafka = MemoryKafka::new();
    let log = CounterLog::default();
    let mut p = ten_counts(&kafka, &log, ("fail.commit.records", "3")).await;
    p.wait_for_offset(&counter_partition(), WAIT, |o| *o == offset(9))
        .await
        .unwrap();
    assert!(!p.states().contains(&State::Failed));
    p.stop().await.unwrap();
    assert_eq!(topic_values(&p, "counts"), all(10));
    assert_eq!(log.acks.lock().unwrap().len(), 10);
}

#[tokio::test(start_paused = true)]
async fn failed_produces_fail_the_task_and_a_restart_delivers_everything() {
    let kafka = MemoryKafka::new();
    kafka.create_topic(&NewTopic::new("counts", 1)).unwrap();
    let log = CounterLog::default();
    let mut p = SourcePipeline::for_connector(&kafka, "counter", CounterSource::new(log));
    p.start(config(&[("count", "5"), ("topic", "counts")]))
        .await
        .unwrap();
    p.wait_for_offset(&counter_partition(), WAIT, |o| *o == offset(4))
        .await
        .unwrap();

    // The next records fail after the producer's own retries; with
    // errors.tolerance=none the task fails...
    kafka.fail_next_produce(3, FaultKind::Retriable);
    p.stop().await.unwrap();
    p.start(config(&[("count", "40"), ("topic", "counts")]))
        .await
        .unwrap();
    let err = p.wait_failed(WAIT).await.unwrap();
    assert!(
        err.to_string().contains("injected retriable produce fault"),
        "{err}"
    );

    // ...and a restart resumes from the stored offset: nothing is lost.
    p.restart().await.unwrap();
    p.wait_for_offset(&counter_partition(), WAIT, |o| *o == offset(39))
        .await
        .unwrap();
    p.stop().await.unwrap();
    let mut got = topic_values(&p, "counts");
    got.sort_by_key(|v| v[1..].parse::<i64>().unwrap());
    got.dedup();
    assert_eq!(got, all(40), "at-least-once: every record is on the topic");
}

#[tokio::test(start_paused = true)]
async fn a_long_outage_delays_records_but_never_drops_them() {
    // Kafka Connect's source producer never times a record out
    // (delivery.timeout.ms = Integer.MAX_VALUE): ten minutes without a
    // leader (the in-memory producer's own default gives up after two)
    // end with every record delivered and the task still running.
    let kafka = MemoryKafka::new();
    kafka.create_topic(&NewTopic::new("counts", 1)).unwrap();
    kafka.take_leader_away("counts", 0).unwrap();
    let mut p =
        SourcePipeline::for_connector(&kafka, "counter", CounterSource::new(CounterLog::default()));
    p.start(config(&[("count", "10"), ("topic", "counts")]))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_secs(600)).await;
    assert!(topic_values(&p, "counts").is_empty());
    kafka.restore_leader("counts", 0).unwrap();
    p.wait_for_records("counts", 10, WAIT).await.unwrap();
    p.stop().await.unwrap();
    assert_eq!(topic_values(&p, "counts"), all(10));
}

#[tokio::test(start_paused = true)]
async fn a_partition_without_leader_holds_records_until_it_is_back() {
    let kafka = MemoryKafka::new();
    kafka.create_topic(&NewTopic::new("counts", 1)).unwrap();
    kafka.take_leader_away("counts", 0).unwrap();
    let log = CounterLog::default();
    let mut p = SourcePipeline::for_connector(&kafka, "counter", CounterSource::new(log));
    p.start(config(&[("count", "10"), ("topic", "counts")]))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(topic_values(&p, "counts").is_empty());
    assert_eq!(
        p.stored_offset(&counter_partition()),
        None,
        "nothing acknowledged, nothing stored"
    );
    kafka.restore_leader("counts", 0).unwrap();
    p.wait_for_records("counts", 10, WAIT).await.unwrap();
    p.stop().await.unwrap();
    assert_eq!(topic_values(&p, "counts"), all(10));
}

#[tokio::test(start_paused = true)]
async fn sink_pipeline_writes_everything_and_commits_its_group_offsets() {
    let kafka = MemoryKafka::new();
    kafka.create_topic(&NewTopic::new("orders", 2)).unwrap();
    let written = Written::default();
    let mut p = SinkPipeline::for_connector(&kafka, "buffer", BufferingSink::new(written.clone()));
    p.start(config(&[("topics", "orders")])).await.unwrap();
    let records: Vec<Record> = (0..20)
        .map(|i| {
            Record::new(
                "orders",
                Some(Schema::string()),
                Value::from(format!("o{i}")),
            )
            .with_partition(i % 2)
        })
        .collect();
    // A flaky fetch on the way.
    kafka.fail_next_fetch(2, FaultKind::Retriable);
    p.produce(&records).await.unwrap();
    p.wait_for_commit("orders", 0, 10, WAIT).await.unwrap();
    p.wait_for_commit("orders", 1, 10, WAIT).await.unwrap();
    p.stop().await.unwrap();
    assert_eq!(p.group(), "connect-buffer");
    let mut got = written.values();
    got.sort();
    let mut want: Vec<String> = (0..20).map(|i| format!("o{i}")).collect();
    want.sort();
    assert_eq!(got, want);
}

/// `n` string records `o0`, `o1`, ... for topic `orders`.
fn orders(n: usize) -> Vec<Record> {
    (0..n)
        .map(|i| {
            Record::new(
                "orders",
                Some(Schema::string()),
                Value::from(format!("o{i}")),
            )
        })
        .collect()
}

/// Every one of `orders(n)` reached the store (at least once).
fn assert_each_written(written: &Written, n: usize) {
    let mut got = written.values();
    got.sort();
    got.dedup();
    let want: Vec<String> = (0..n).map(|i| format!("o{i}")).collect();
    assert_eq!(got, want);
}

/// A flush (`pre_commit`) that fails before the task ever committed: as
/// Kafka, the runtime rewinds to where the task started consuming and
/// delivers those records again, so the failed write loses nothing.
#[tokio::test(start_paused = true)]
async fn a_failed_first_flush_redelivers_from_where_the_task_started() {
    let kafka = MemoryKafka::new();
    kafka.create_topic(&NewTopic::new("orders", 1)).unwrap();
    let written = Written::default();
    let mut p = SinkPipeline::for_connector(&kafka, "buffer", BufferingSink::new(written.clone()));
    p.start(config(&[("topics", "orders"), ("fail.flushes", "1")]))
        .await
        .unwrap();
    p.produce(&orders(5)).await.unwrap();
    p.wait_for_commit("orders", 0, 5, WAIT).await.unwrap();
    p.stop().await.unwrap();
    assert_each_written(&written, 5);
}

/// A flush that fails while the task's partitions are being taken away:
/// nothing to rewind (the next owner starts from the last commit), so the
/// task keeps running, and the records come back with the partitions.
#[tokio::test(start_paused = true)]
async fn a_failed_flush_on_revocation_keeps_the_task_running() {
    let kafka = MemoryKafka::new();
    kafka.create_topic(&NewTopic::new("orders", 1)).unwrap();
    let written = Written::default();
    // No periodic flush: the first flush is the one at revocation.
    let mut p = SinkPipeline::for_connector(&kafka, "buffer", BufferingSink::new(written.clone()))
        .flush_interval(Duration::from_secs(3600));
    p.start(config(&[("topics", "orders"), ("fail.flushes", "1")]))
        .await
        .unwrap();
    p.produce(&orders(3)).await.unwrap();
    // Paused time moves only once every task is idle: the records are put.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let members = kafka.group_members(&p.group());
    assert!(kafka.drop_group_member(&p.group(), &members[0]));
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(
        !p.states().contains(&State::Failed),
        "{:?}",
        p.connector_errors()
    );
    p.stop().await.unwrap();
    assert_each_written(&written, 3);
}

#[tokio::test(start_paused = true)]
async fn sink_restart_resumes_from_committed_offsets() {
    let kafka = MemoryKafka::new();
    kafka.create_topic(&NewTopic::new("t", 1)).unwrap();
    let written = Written::default();
    let mut p = SinkPipeline::for_connector(&kafka, "buffer", BufferingSink::new(written.clone()));
    p.start(config(&[("topics", "t"), ("fail.puts", "1")]))
        .await
        .unwrap();
    let batch = |from: i32| -> Vec<Record> {
        (from..from + 5)
            .map(|i| Record::new("t", Some(Schema::int32()), Value::Int32(i)))
            .collect()
    };
    p.produce(&batch(0)).await.unwrap();
    p.wait_for_commit("t", 0, 5, WAIT).await.unwrap();
    p.stop().await.unwrap();
    p.produce(&batch(5)).await.unwrap();
    p.restart().await.unwrap();
    p.wait_for_commit("t", 0, 10, WAIT).await.unwrap();
    p.stop().await.unwrap();
    // The retriable first put was redelivered; nothing came twice.
    assert_eq!(
        written.values(),
        (0..10).map(|i| i.to_string()).collect::<Vec<_>>()
    );
}

#[tokio::test(start_paused = true)]
async fn a_fatal_fetch_fails_the_sink_task() {
    let kafka = MemoryKafka::new();
    kafka.create_topic(&NewTopic::new("t", 1)).unwrap();
    let mut p =
        SinkPipeline::for_connector(&kafka, "buffer", BufferingSink::new(Written::default()));
    kafka.fail_next_fetch(1, FaultKind::Fatal);
    p.start(config(&[("topics", "t")])).await.unwrap();
    let err = p.wait_failed(WAIT).await.unwrap();
    assert!(
        err.to_string().contains("injected fatal fetch fault"),
        "{err}"
    );
    assert_eq!(p.states().last(), Some(&connect_testkit::State::Failed));
}

#[tokio::test(start_paused = true)]
async fn a_failed_offset_commit_is_retried() {
    let kafka = MemoryKafka::new();
    kafka.create_topic(&NewTopic::new("t", 1)).unwrap();
    let mut p =
        SinkPipeline::for_connector(&kafka, "buffer", BufferingSink::new(Written::default()));
    p.start(config(&[("topics", "t")])).await.unwrap();
    kafka.fail_next_commit(1, FaultKind::Retriable);
    p.produce(&[Record::new("t", Some(Schema::string()), Value::from("a"))])
        .await
        .unwrap();
    p.wait_for_commit("t", 0, 1, WAIT).await.unwrap();
}

/// The commit a stopping task makes is its last: when the broker refuses
/// it for now (a rebalance in progress, a timeout), the task retries it
/// before it stops, so the next owner does not read those records again.
#[tokio::test(start_paused = true)]
async fn a_stopping_sink_retries_its_last_commit() {
    let kafka = MemoryKafka::new();
    kafka.create_topic(&NewTopic::new("t", 1)).unwrap();
    let written = Written::default();
    let mut p = SinkPipeline::for_connector(&kafka, "buffer", BufferingSink::new(written.clone()))
        .flush_interval(Duration::from_secs(3600));
    p.start(config(&[("topics", "t")])).await.unwrap();
    p.produce(&[Record::new("t", Some(Schema::string()), Value::from("a"))])
        .await
        .unwrap();
    // Virtual time: the task polls and puts the record; no periodic commit.
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert!(p.committed_offsets().is_empty());
    kafka.fail_next_commit(2, FaultKind::Retriable);
    p.stop().await.unwrap();
    assert_eq!(written.values(), ["a"]);
    let committed = p.committed_offsets();
    assert_eq!(
        committed.values().copied().collect::<Vec<_>>(),
        [1],
        "{committed:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn commit_record_gets_the_record_as_polled() {
    let kafka = MemoryKafka::new();
    let log = CounterLog::default();
    let mut p = SourcePipeline::for_connector(&kafka, "counter", CounterSource::new(log.clone()));
    p.start(config(&[("count", "3"), ("topic", "counts")]))
        .await
        .unwrap();
    p.wait_for_offset(&counter_partition(), WAIT, |o| *o == offset(2))
        .await
        .unwrap();
    p.stop().await.unwrap();
    let offsets = log.ack_offsets.lock().unwrap().clone();
    assert_eq!(offsets, [offset(0), offset(1), offset(2)]);
}

#[tokio::test(start_paused = true)]
async fn a_sink_dropped_from_its_group_rejoins_and_keeps_delivering() {
    let kafka = MemoryKafka::new();
    kafka.create_topic(&NewTopic::new("t", 2)).unwrap();
    let written = Written::default();
    let mut p = SinkPipeline::for_connector(&kafka, "buffer", BufferingSink::new(written.clone()));
    p.start(config(&[("topics", "t")])).await.unwrap();
    let batch = |from: i32| -> Vec<Record> {
        (from..from + 6)
            .map(|i| Record::new("t", Some(Schema::int32()), Value::Int32(i)).with_partition(i % 2))
            .collect()
    };
    p.produce(&batch(0)).await.unwrap();
    p.wait_for_commit("t", 0, 3, WAIT).await.unwrap();
    p.wait_for_commit("t", 1, 3, WAIT).await.unwrap();

    let members = kafka.group_members(&p.group());
    assert_eq!(members.len(), 1);
    assert!(kafka.drop_group_member(&p.group(), &members[0]));
    p.produce(&batch(6)).await.unwrap();
    p.wait_for_commit("t", 0, 6, WAIT).await.unwrap();
    p.wait_for_commit("t", 1, 6, WAIT).await.unwrap();
    p.stop().await.unwrap();
    let mut got: Vec<i32> = written
        .values()
        .iter()
        .map(|v| v.parse().unwrap())
        .collect();
    got.sort();
    got.dedup();
    assert_eq!(got, (0..12).collect::<Vec<_>>());
}

#[tokio::test(start_paused = true)]
async fn offsets_wait_for_delayed_acknowledgements() {
    let kafka = MemoryKafka::new();
    kafka.create_topic(&NewTopic::new("counts", 1)).unwrap();
    kafka.set_ack_delay(Duration::from_secs(5));
    let mut p =
        SourcePipeline::for_connector(&kafka, "counter", CounterSource::new(CounterLog::default()));
    p.start(config(&[("count", "3"), ("topic", "counts")]))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(
        p.stored_offset(&counter_partition()),
        None,
        "not acknowledged yet"
    );
    p.wait_for_offset(&counter_partition(), WAIT, |o| *o == offset(2))
        .await
        .unwrap();
    p.stop().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn tolerated_transform_failures_go_to_the_dead_letter_queue() {
    let kafka = MemoryKafka::new();
    let mut p =
        SourcePipeline::for_connector(&kafka, "counter", CounterSource::new(CounterLog::default()));
    // "v0" cannot be cast to INT32: every record fails in the chain.
    p.start(config(&[
        ("count", "4"),
        ("topic", "counts"),
        ("transforms", "bad"),
        (
            "transforms.bad.type",
            "org.apache.kafka.connect.transforms.Cast$Value",
        ),
        ("transforms.bad.spec", "int32"),
        ("errors.tolerance", "all"),
        ("errors.deadletterqueue.topic.name", "dlq"),
        ("errors.deadletterqueue.context.headers.enable", "true"),
    ]))
    .await
    .unwrap();
    let dead = p.wait_for_records("dlq", 4, WAIT).await.unwrap();
    p.wait_for_offset(&counter_partition(), WAIT, |o| *o == offset(3))
        .await
        .unwrap();
    p.stop().await.unwrap();
    assert!(topic_values(&p, "counts").is_empty());
    let stage = dead[0]
        .headers
        .iter()
        .find(|(k, _)| k == "__connect.errors.stage")
        .and_then(|(_, v)| v.clone());
    assert_eq!(stage.as_deref(), Some(&b"TRANSFORMATION"[..]));
}

#[tokio::test(start_paused = true)]
async fn a_tolerated_produce_failure_keeps_the_source_offset() {
    let kafka = MemoryKafka::new();
    kafka.create_topic(&NewTopic::new("counts", 1)).unwrap();
    kafka.fail_next_produce(1, FaultKind::Fatal);
    let mut p =
        SourcePipeline::for_connector(&kafka, "counter", CounterSource::new(CounterLog::default()));
    p.start(config(&[
        ("count", "1"),
        ("topic", "counts"),
        ("errors.tolerance", "all"),
        ("errors.deadletterqueue.topic.name", "dlq"),
    ]))
    .await
    .unwrap();
    p.wait_for_records("dlq", 1, WAIT).await.unwrap();
    let stored = p
        .wait_for_offset(&counter_partition(), WAIT, |_| true)
        .await
        .unwrap();
    p.stop().await.unwrap();
    assert_eq!(stored, offset(0));
}
