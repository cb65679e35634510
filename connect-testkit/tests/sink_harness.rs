//! The sink harness on a buffering sink: flush and pre-commit, rebalance,
//! redelivery after retriable failures, errant-record reports, the fake
//! context.

mod common;

use std::time::Duration;

use common::{BufferingSink, BufferingTask, Written};
use connect_api::sink::TopicPartition;
use connect_api::{Record, Schema, Value};
use connect_testkit::{config, sink_records, SinkHarness};

fn batch(topic: &str, partition: i32, first: i64, values: &[&str]) -> Vec<connect_api::SinkRecord> {
    sink_records(
        partition,
        first,
        values
            .iter()
            .map(|v| Record::new(topic, Some(Schema::string()), Value::from(*v))),
    )
}

fn tp(topic: &str, partition: i32) -> TopicPartition {
    TopicPartition::new(topic, partition)
}

#[tokio::test]
async fn records_are_durable_only_after_the_commit_flushes_them() {
    let written = Written::default();
    let mut h = SinkHarness::for_connector(BufferingSink::new(written.clone()));
    h.start(config(&[])).await.unwrap();
    h.open(&[tp("orders", 0), tp("orders", 1)]).await.unwrap();

    h.put(&batch("orders", 0, 0, &["a", "b"])).await.unwrap();
    h.put(&batch("orders", 1, 10, &["c"])).await.unwrap();
    assert!(written.values().is_empty(), "buffered, not written");
    assert_eq!(h.consumed()[&tp("orders", 1)], 11);

    let committed = h.commit().await.unwrap();
    assert_eq!(written.values(), ["a", "b", "c"]);
    assert_eq!(
        committed,
        [(tp("orders", 0), 2), (tp("orders", 1), 11)].into()
    );
    // Nothing new: the next commit stores nothing.
    assert!(h.commit().await.unwrap().is_empty());
}

#[tokio::test]
async fn rebalance_commits_and_closes_revoked_partitions() {
    let written = Written::default();
    let mut h = SinkHarness::for_connector(BufferingSink::new(written.clone()));
    h.start(config(&[])).await.unwrap();
    h.open(&[tp("orders", 0)]).await.unwrap();
    h.put(&batch("orders", 0, 5, &["x"])).await.unwrap();

    let stored = h
        .rebalance(&[tp("orders", 0)], &[tp("orders", 1)])
        .await
        .unwrap();
    assert_eq!(stored, [(tp("orders", 0), 6)].into());
    assert_eq!(written.values(), ["x"], "flushed before close");
    assert_eq!(h.assignment(), [tp("orders", 1)]);
    assert_eq!(h.context().seeks(), Vec::new());
    // The revoked partition is no longer deliverable.
    let err = h.put(&batch("orders", 0, 6, &["y"])).await.unwrap_err();
    assert!(
        err.to_string()
            .contains("orders-0 is not from an assigned partition"),
        "{err}"
    );
}

#[tokio::test(start_paused = true)]
async fn retriable_puts_are_redelivered_after_the_requested_timeout() {
    let written = Written::default();
    let w = written.clone();
    let mut h = SinkHarness::new(move || Box::new(BufferingTask::new(w.clone())));
    h.start(config(&[("fail.puts", "2")])).await.unwrap();
    h.open(&[tp("t", 0)]).await.unwrap();
    let records = batch("t", 0, 0, &["a", "b"]);

    let err = h.put(&records).await.unwrap_err();
    assert!(err.is_retriable());
    assert!(h.consumed().is_empty(), "a failed put consumes nothing");

    let start = tokio::time::Instant::now();
    let attempts = h.put_until_accepted(&records, 5).await.unwrap();
    assert_eq!(attempts, 2);
    assert_eq!(h.context().timeouts(), [250, 250]);
    assert!(start.elapsed() >= Duration::from_millis(250));
    h.stop().await.unwrap();
    assert_eq!(written.values(), ["a", "b"]);
}

#[tokio::test]
async fn errant_records_are_reported_and_a_failing_reporter_fails_put() {
    let written = Written::default();
    let mut h = SinkHarness::for_connector(BufferingSink::new(written.clone()));
    h.start(config(&[])).await.unwrap();
    h.open(&[tp("t", 0)]).await.unwrap();
    h.put(&batch("t", 0, 0, &["ok", "bad", "ok2"]))
        .await
        .unwrap();
    let reports = h.reporter().unwrap().reports();
    assert_eq!(reports.len(), 1);
    assert_eq!(reports[0].record.kafka_offset, 1);
    assert_eq!(reports[0].error, "bad value");

    h.reporter().unwrap().set_failing(true);
    let err = h.put(&batch("t", 0, 3, &["bad"])).await.unwrap_err();
    assert!(err.to_string().contains("errors.tolerance=none"), "{err}");
}

#[tokio::test]
async fn without_a_reporter_the_task_sees_none() {
    let written = Written::default();
    let mut h = SinkHarness::for_connector(BufferingSink::new(written)).without_reporter();
    h.start(config(&[])).await.unwrap();
    h.open(&[tp("t", 0)]).await.unwrap();
    let err = h.put(&batch("t", 0, 0, &["bad"])).await.unwrap_err();
    assert_eq!(err.to_string(), "bad value and no reporter");
}

#[tokio::test]
async fn transforms_run_before_put_and_offsets_follow_the_original_partition() {
    let written = Written::default();
    let mut h = SinkHarness::for_connector(BufferingSink::new(written.clone()))
        .with_transforms(&config(&[
            ("transforms", "route"),
            ("transforms.route.type", "RegexRouter"),
            ("transforms.route.regex", ".*"),
            ("transforms.route.replacement", "elsewhere"),
        ]))
        .unwrap();
    h.start(config(&[])).await.unwrap();
    h.open(&[tp("orders", 0)]).await.unwrap();
    h.put(&batch("orders", 0, 41, &["a"])).await.unwrap();
    assert_eq!(h.commit().await.unwrap(), [(tp("orders", 0), 42)].into());
}

/// A task using every context request.
struct Demanding;

#[async_trait::async_trait]
impl connect_api::SinkTask for Demanding {
    async fn start(
        &mut self,
        _: &connect_api::ConfigMap,
        ctx: std::sync::Arc<dyn connect_api::SinkTaskContext>,
    ) -> connect_api::Result<()> {
        ctx.offset([(tp("t", 0), 7)].into());
        ctx.pause(&[tp("t", 0), tp("t", 1)]);
        ctx.resume(&[tp("t", 1)]);
        ctx.request_commit();
        Ok(())
    }
    async fn put(&mut self, _: &[connect_api::SinkRecord]) -> connect_api::Result<()> {
        Ok(())
    }
    async fn stop(&mut self) -> connect_api::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn the_context_records_every_request() {
    let mut h = SinkHarness::new(|| Box::new(Demanding));
    h.start(config(&[])).await.unwrap();
    let ctx = h.context();
    assert_eq!(ctx.seeks(), [[(tp("t", 0), 7)].into()]);
    assert_eq!(ctx.paused(), [tp("t", 0)].into());
    assert_eq!(ctx.commit_requests(), 1);
}

/// Commits only what it flushed at its last flush, one batch behind.
#[derive(Default)]
struct Lagging {
    flushed: connect_api::sink::TopicPartitionOffsets,
}

#[async_trait::async_trait]
impl connect_api::SinkTask for Lagging {
    async fn start(
        &mut self,
        _: &connect_api::ConfigMap,
        _: std::sync::Arc<dyn connect_api::SinkTaskContext>,
    ) -> connect_api::Result<()> {
        Ok(())
    }
    async fn put(&mut self, _: &[connect_api::SinkRecord]) -> connect_api::Result<()> {
        Ok(())
    }
    async fn pre_commit(
        &mut self,
        offsets: connect_api::sink::TopicPartitionOffsets,
    ) -> connect_api::Result<connect_api::sink::TopicPartitionOffsets> {
        // Also claims a partition it does not own and an offset past the end.
        let mut out = std::mem::replace(&mut self.flushed, offsets);
        out.insert(tp("other", 0), 5);
        if let Some(o) = out.get_mut(&tp("t", 0)) {
            *o += 100;
        }
        Ok(out)
    }
    async fn stop(&mut self) -> connect_api::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn pre_commit_results_are_clamped_like_the_runtime_does() {
    let mut h = SinkHarness::new(|| Box::<Lagging>::default());
    h.start(config(&[])).await.unwrap();
    h.open(&[tp("t", 0)]).await.unwrap();
    h.put(&batch("t", 0, 0, &["a", "b"])).await.unwrap();
    // The raw answer, as the task gave it.
    assert_eq!(h.pre_commit().await.unwrap(), [(tp("other", 0), 5)].into());
    h.put(&batch("t", 0, 2, &["c"])).await.unwrap();
    // The lagging task returns offset 2 (+100): clamped to consumed (3);
    // the unassigned partition is ignored.
    assert_eq!(h.commit().await.unwrap(), [(tp("t", 0), 3)].into());
    assert_eq!(h.committed(), &[(tp("t", 0), 3)].into());
}
