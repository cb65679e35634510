//! The source harness on a counter source: resume after restart from
//! committed offsets, acknowledgements with metadata, transforms,
//! converters, timeouts.

mod common;

use std::time::Duration;

use common::{counter_partition, offset, CounterLog, CounterSource, CounterTask};
use connect_api::{Schema, Value};
use connect_testkit::{config, SourceHarness};

const WAIT: Duration = Duration::from_secs(30);

fn values(records: &[connect_api::SourceRecord]) -> Vec<String> {
    records.iter().map(|r| r.record.value.to_string()).collect()
}

#[tokio::test(start_paused = true)]
async fn resumes_after_restart_from_committed_offsets() {
    let log = CounterLog::default();
    let mut h = SourceHarness::for_connector(CounterSource::new(log.clone()));
    h.start(config(&[("count", "20"), ("batch", "4")]))
        .await
        .unwrap();

    let first = h.poll_until(10, WAIT).await.unwrap();
    assert_eq!(values(&first[..3]), ["v0", "v1", "v2"]);
    assert_eq!(h.pending(), 12, "3 polls of 4 records");

    // Only the first 7 reach Kafka before the "crash".
    let acked = h.acknowledge(7).await.unwrap();
    assert_eq!(acked.len(), 7);
    assert_eq!(acked[6].metadata.as_ref().map(|m| m.offset), Some(6));
    h.commit().await.unwrap();
    assert_eq!(h.committed_offset(&counter_partition()), Some(offset(6)));
    assert_eq!(*log.commits.lock().unwrap(), 1);

    h.restart().await.unwrap();
    assert_eq!(*log.starts.lock().unwrap(), 2, "a fresh task was started");
    let resumed = h.poll_until(1, WAIT).await.unwrap();
    assert_eq!(
        resumed[0].record.value,
        Value::from("v7"),
        "resumes after the committed v6"
    );
}

#[tokio::test(start_paused = true)]
async fn stored_offsets_are_read_at_start() {
    let log = CounterLog::default();
    let mut h = SourceHarness::new(move || Box::new(CounterTask::new(log.clone())))
        .with_offset(counter_partition(), offset(16));
    h.start(config(&[("count", "20")])).await.unwrap();
    let rest = h.poll_until(3, WAIT).await.unwrap();
    assert_eq!(values(&rest), ["v17", "v18", "v19"]);
    // Nothing more: the counter is exhausted.
    assert!(h.poll_for(Duration::from_secs(2)).await.unwrap().is_empty());
}

#[tokio::test(start_paused = true)]
async fn poll_until_times_out_naming_the_count() {
    let log = CounterLog::default();
    let mut h = SourceHarness::for_connector(CounterSource::new(log));
    h.start(config(&[("count", "3")])).await.unwrap();
    let err = h.poll_until(5, Duration::from_secs(10)).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "expected 5 records within 10s, got 3",
        "the error says how many arrived"
    );
}

#[tokio::test(start_paused = true)]
async fn metadata_names_where_the_chain_sent_the_record() {
    let log = CounterLog::default();
    let chain = config(&[
        ("transforms", "route"),
        ("transforms.route.type", "RegexRouter"),
        ("transforms.route.regex", "counts"),
        ("transforms.route.replacement", "routed"),
    ]);
    let mut h = SourceHarness::for_connector(CounterSource::new(log.clone()))
        .with_transforms(&chain)
        .unwrap();
    h.start(config(&[("count", "3"), ("batch", "3")]))
        .await
        .unwrap();
    let kept = h.poll().await.unwrap();
    assert!(kept.iter().all(|r| &*r.record.topic == "routed"));
    let acked = h.acknowledge_all().await.unwrap();
    // commit_record gets the record as polled (Kafka's rule), metadata
    // names the topic it was written to.
    assert_eq!(&*acked[2].record.record.topic, "counts");
    let md = acked[2].metadata.as_ref().unwrap();
    assert_eq!((&*md.topic, md.partition, md.offset), ("routed", 0, 2));
    assert_eq!(md.timestamp, Some(1_700_000_000_002));
    assert_eq!(log.acks.lock().unwrap().len(), 3);
}

#[tokio::test(start_paused = true)]
async fn filtered_records_get_no_metadata() {
    let log = CounterLog::default();
    let mut h = SourceHarness::for_connector(CounterSource::new(log.clone()))
        .with_transforms(&config(&[
            ("transforms", "all"),
            ("transforms.all.type", "Filter"),
        ]))
        .unwrap();
    h.start(config(&[("count", "2"), ("batch", "2")]))
        .await
        .unwrap();
    assert!(h.poll().await.unwrap().is_empty());
    let acked = h.acknowledge_all().await.unwrap();
    assert!(acked.iter().all(|a| a.metadata.is_none()));
    assert_eq!(*log.acks.lock().unwrap(), [(0, None), (1, None)]);
    h.commit().await.unwrap();
    assert_eq!(
        h.committed_offset(&counter_partition()),
        Some(offset(1)),
        "dropped records' offsets commit too"
    );
}

#[tokio::test(start_paused = true)]
async fn converters_show_what_a_consumer_reads() {
    let log = CounterLog::default();
    let mut h = SourceHarness::for_connector(CounterSource::new(log))
        .with_converters(&config(&[
            (
                "key.converter",
                "org.apache.kafka.connect.storage.StringConverter",
            ),
            (
                "value.converter",
                "org.apache.kafka.connect.storage.StringConverter",
            ),
        ]))
        .unwrap();
    h.start(config(&[("count", "1")])).await.unwrap();
    let r = &h.poll_until(1, WAIT).await.unwrap()[0].record;
    // The INT64 key comes back as the string "0": that is what a sink sees.
    assert_eq!(r.key, Value::from("0"));
    assert_eq!(r.key_schema, Some(Schema::optional_string()));
    assert_eq!(r.value, Value::from("v0"));
}

#[tokio::test(start_paused = true)]
async fn errors_from_start_and_bad_config_surface() {
    let log = CounterLog::default();
    let mut h = SourceHarness::for_connector(CounterSource::new(log));
    let err = h.start(config(&[("count", "ten")])).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "Invalid value for configuration count: 'ten' is not an integer"
    );
    let err = h.poll().await.unwrap_err();
    assert!(err.to_string().contains("not started"), "{err}");
}

/// Returns nothing at once, forever; reports progress by heartbeat.
struct Quiet {
    beats: i64,
    ctx: Option<std::sync::Arc<dyn connect_api::source::SourceTaskContext>>,
}

#[async_trait::async_trait]
impl connect_api::SourceTask for Quiet {
    async fn start(
        &mut self,
        _: &connect_api::ConfigMap,
        ctx: std::sync::Arc<dyn connect_api::source::SourceTaskContext>,
    ) -> connect_api::Result<()> {
        self.ctx = Some(ctx);
        Ok(())
    }
    async fn poll(&mut self) -> connect_api::Result<Vec<connect_api::SourceRecord>> {
        if let Some(ctx) = &self.ctx {
            ctx.heartbeat(std::sync::Arc::new(counter_partition()), offset(self.beats));
            self.beats += 1;
        }
        Ok(Vec::new())
    }
    async fn stop(&mut self) -> connect_api::Result<()> {
        Ok(())
    }
}

#[tokio::test(start_paused = true)]
async fn heartbeats_commit_offsets_and_empty_polls_do_not_spin() {
    let mut h = SourceHarness::new(|| {
        Box::new(Quiet {
            beats: 0,
            ctx: None,
        })
    });
    h.start(config(&[])).await.unwrap();
    // Under paused time a task that never yields would hang here.
    let err = h
        .poll_until(1, Duration::from_millis(50))
        .await
        .unwrap_err();
    assert!(err.to_string().ends_with("got 0"), "{err}");
    let beats = h.pending();
    assert!(beats >= 10, "one heartbeat per poll, got {beats}");
    assert!(
        h.acknowledge_all().await.unwrap().is_empty(),
        "heartbeats carry no record"
    );
    h.commit().await.unwrap();
    assert_eq!(
        h.committed_offset(&counter_partition()),
        Some(offset(beats as i64 - 1))
    );
}
