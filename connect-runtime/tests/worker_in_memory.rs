//! The worker end to end on the in-memory Kafka: source and sink loops,
//! offsets, transforms, errors.tolerance and the DLQ on both sides,
//! pause/resume, and crash recovery.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use connect_api::config::ConfigMap;
use connect_runtime::kafka::memory::FaultKind;
use connect_runtime::kafka::{KafkaCluster, OutRecord};
use connect_runtime::status::TargetState;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn source_to_sink_end_to_end_with_json() {
    let s = setup();
    let w = worker(&s);
    w.create_connector(
        "src",
        props(&[
            ("connector.class", "PassThroughSource"),
            ("count", "25"),
            ("topic", "out"),
        ]),
        TargetState::Started,
    )
    .await
    .unwrap();
    w.create_connector(
        "sink",
        props(&[("connector.class", "CollectingSink"), ("topics", "out")]),
        TargetState::Started,
    )
    .await
    .unwrap();
    eventually("25 records in the sink", || {
        s.collected.0.lock().unwrap().len() == 25
    })
    .await;
    let got = s.collected.0.lock().unwrap().clone();
    let want: Vec<String> = (0..25).map(|n| format!("v{n}")).collect();
    assert_eq!(got, want);
    // The JSON envelope on the topic is Kafka's.
    assert_eq!(
        topic_values(&s.kafka, "out")[0],
        r#"{"schema":{"type":"string","optional":false},"payload":"v0"}"#
    );
    eventually("source offset 24 stored", || {
        stored(&s.store, "src") == Some(24)
    })
    .await;
    eventually("sink offsets committed", || {
        s.kafka
            .committed_offsets("connect-sink")
            .values()
            .any(|&o| o == 25)
    })
    .await;
    let status = w.connector_status("sink").await.unwrap();
    assert_eq!(status.connector.state, "RUNNING");
    assert_eq!(status.tasks[0].state.state, "RUNNING");
    w.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn filtered_records_still_commit_their_offsets() {
    let s = setup();
    let w = worker(&s);
    // Drop every record: Kafka would never commit these offsets (KAFKA-15296).
    w.create_connector(
        "filt-src",
        props(&[
            ("connector.class", "PassThroughSource"),
            ("count", "5"),
            ("topic", "out"),
            ("transforms", "drop"),
            (
                "transforms.drop.type",
                "org.apache.kafka.connect.transforms.Filter",
            ),
        ]),
        TargetState::Started,
    )
    .await
    .unwrap();
    eventually("offset of the last dropped record", || {
        stored(&s.store, "filt-src") == Some(4)
    })
    .await;
    assert!(topic_values(&s.kafka, "out").is_empty());
    eventually("commit_record(None) for each dropped record", || {
        counts("filt-src").dropped == 5
    })
    .await;
    w.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn source_transform_failures_go_to_the_dlq_with_context() {
    let s = setup();
    let w = worker(&s);
    // TimestampRouter fails on records without a timestamp: every one here.
    w.create_connector(
        "src",
        props(&[
            ("connector.class", "PassThroughSource"),
            ("count", "3"),
            ("topic", "out"),
            ("transforms", "route"),
            ("transforms.route.type", "TimestampRouter"),
            ("errors.tolerance", "all"),
            ("errors.deadletterqueue.topic.name", "dlq"),
            ("errors.deadletterqueue.context.headers.enable", "true"),
        ]),
        TargetState::Started,
    )
    .await
    .unwrap();
    eventually("3 DLQ records", || s.kafka.records("dlq", 0).len() == 3).await;
    let first = &s.kafka.records("dlq", 0)[0];
    let header = |k: &str| {
        first
            .headers
            .iter()
            .find(|(h, _)| h == k)
            .and_then(|(_, v)| v.clone())
            .map(|v| String::from_utf8(v.to_vec()).unwrap())
    };
    assert_eq!(
        header("__connect.errors.stage").as_deref(),
        Some("TRANSFORMATION")
    );
    assert_eq!(
        header("__connect.errors.connector.name").as_deref(),
        Some("src")
    );
    // As in Kafka: the class of the transformation that failed.
    assert_eq!(
        header("__connect.errors.class.name").as_deref(),
        Some("org.apache.kafka.connect.transforms.TimestampRouter")
    );
    assert_eq!(
        header("__connect.errors.source.offset").as_deref(),
        Some(r#"{"n":0}"#)
    );
    assert_eq!(
        String::from_utf8(first.value.clone().unwrap().to_vec()).unwrap(),
        r#"{"schema":{"type":"string","optional":false},"payload":"v0"}"#
    );
    assert!(topic_values(&s.kafka, "out").is_empty());
    eventually("offsets move past dead-lettered records", || {
        stored(&s.store, "src") == Some(2)
    })
    .await;
    w.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tolerance_all_without_a_dlq_skips_failed_records_and_moves_on() {
    let s = setup();
    let w = worker(&s);
    // TimestampRouter fails on records without a timestamp: every one here.
    // With and without records in the error log (which keeps each record
    // as polled for the log line).
    for (name, include_messages) in [("skip-src", "false"), ("skip-log-src", "true")] {
        w.create_connector(
            name,
            failing_transform_source("4", include_messages),
            TargetState::Started,
        )
        .await
        .unwrap();
        eventually("offsets move past the skipped records", || {
            stored(&s.store, name) == Some(3)
        })
        .await;
        // As Kafka: each skipped record is committed without metadata.
        eventually("commit_record for every skipped record", || {
            counts(name).dropped == 4
        })
        .await;
        assert_eq!(counts(name).acked, 0);
        let status = w.connector_status(name).await.unwrap();
        assert_eq!(status.tasks[0].state.state, "RUNNING");
    }
    assert!(topic_values(&s.kafka, "out").is_empty());
    w.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tolerance_none_fails_the_task_with_a_trace() {
    let s = setup();
    let w = worker(&s);
    w.create_connector(
        "src",
        props(&[
            ("connector.class", "PassThroughSource"),
            ("count", "3"),
            ("topic", "out"),
            ("transforms", "route"),
            ("transforms.route.type", "TimestampRouter"),
        ]),
        TargetState::Started,
    )
    .await
    .unwrap();
    let mut trace = None;
    eventually("task FAILED", || {
        let status = futures::executor::block_on(w.connector_status("src")).unwrap();
        trace = status.tasks[0].state.trace.clone();
        status.tasks[0].state.state == "FAILED"
    })
    .await;
    let trace = trace.unwrap();
    assert!(trace.contains("Tolerance exceeded"), "{trace}");
    assert!(topic_values(&s.kafka, "out").is_empty());
    assert_eq!(stored(&s.store, "src"), None);
    w.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sink_converter_failures_go_to_the_dlq_with_raw_bytes() {
    let s = setup();
    let w = worker(&s);
    // One good record, one that is not JSON.
    let producer_sink = Arc::new(NullSink);
    let producer = s.kafka.producer(&ConfigMap::new(), producer_sink).unwrap();
    let good = br#"{"schema":{"type":"string","optional":false},"payload":"ok"}"#;
    producer
        .send(
            &connect_runtime::kafka::OutRecord::new("out", Some(b"not json")),
            0,
        )
        .unwrap();
    producer
        .send(
            &connect_runtime::kafka::OutRecord::new("out", Some(good)),
            1,
        )
        .unwrap();
    producer.flush(Duration::from_secs(5)).await.unwrap();
    w.create_connector(
        "sink",
        props(&[
            ("connector.class", "CollectingSink"),
            ("topics", "out"),
            ("errors.tolerance", "all"),
            ("errors.deadletterqueue.topic.name", "dlq"),
            ("errors.deadletterqueue.context.headers.enable", "true"),
        ]),
        TargetState::Started,
    )
    .await
    .unwrap();
    eventually("good record delivered", || {
        s.collected.0.lock().unwrap().len() == 1
    })
    .await;
    eventually("bad record dead-lettered", || {
        s.kafka.records("dlq", 0).len() == 1
    })
    .await;
    let dead = &s.kafka.records("dlq", 0)[0];
    assert_eq!(dead.value.as_deref(), Some(&b"not json"[..]));
    let stage = dead
        .headers
        .iter()
        .find(|(k, _)| k == "__connect.errors.stage")
        .and_then(|(_, v)| v.clone());
    assert_eq!(stage.as_deref(), Some(&b"VALUE_CONVERTER"[..]));
    eventually("both offsets committed", || {
        s.kafka
            .committed_offsets("connect-sink")
            .values()
            .any(|&o| o == 2)
    })
    .await;
    w.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retriable_put_failures_redeliver_the_batch() {
    let s = setup();
    let w = worker(&s);
    w.create_connector(
        "src",
        props(&[
            ("connector.class", "PassThroughSource"),
            ("count", "5"),
            ("topic", "out"),
        ]),
        TargetState::Started,
    )
    .await
    .unwrap();
    w.create_connector(
        "sink",
        props(&[
            ("connector.class", "CollectingSink"),
            ("topics", "out"),
            ("fail.puts", "2"),
        ]),
        TargetState::Started,
    )
    .await
    .unwrap();
    eventually("all 5 after redelivery", || {
        s.collected.0.lock().unwrap().len() >= 5
    })
    .await;
    let got = s.collected.0.lock().unwrap().clone();
    let want: Vec<String> = (0..5).map(|n| format!("v{n}")).collect();
    assert_eq!(got, want, "nothing lost, nothing duplicated");
    w.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crash_before_offset_commit_repeats_but_never_loses() {
    let s = setup();
    {
        let w = worker(&s);
        w.create_connector(
            "src",
            props(&[
                ("connector.class", "PassThroughSource"),
                ("count", "50"),
                ("topic", "out"),
            ]),
            TargetState::Started,
        )
        .await
        .unwrap();
        eventually("some records produced", || {
            s.kafka.records("out", 0).len() >= 10
        })
        .await;
        // Crash: no graceful shutdown, the latest offsets may not be stored.
        w.abort().await;
    }
    let before = stored(&s.store, "src");
    let w = worker(&s);
    w.create_connector(
        "src",
        props(&[
            ("connector.class", "PassThroughSource"),
            ("count", "50"),
            ("topic", "out"),
        ]),
        TargetState::Started,
    )
    .await
    .unwrap();
    eventually("all records after restart", || {
        let values = topic_values(&s.kafka, "out");
        (0..50).all(|n| {
            let want = format!(r#""payload":"v{n}""#);
            values.iter().any(|v| v.contains(&want))
        })
    })
    .await;
    // The restart resumed after the stored offset: records up to it were
    // not produced again.
    if let Some(b) = before {
        let values = topic_values(&s.kafka, "out");
        for n in 0..=b {
            let want = format!(r#""payload":"v{n}""#);
            assert_eq!(
                values.iter().filter(|v| v.contains(&want)).count(),
                1,
                "v{n}"
            );
        }
    }
    w.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pause_stops_the_flow_and_resume_restarts_it() {
    let s = setup();
    let w = worker(&s);
    w.create_connector(
        "sink",
        props(&[("connector.class", "CollectingSink"), ("topics", "out")]),
        TargetState::Started,
    )
    .await
    .unwrap();
    w.create_connector(
        "src",
        props(&[
            ("connector.class", "PassThroughSource"),
            ("count", "5"),
            ("topic", "out"),
        ]),
        TargetState::Started,
    )
    .await
    .unwrap();
    eventually("the first records delivered", || {
        s.collected.0.lock().unwrap().len() == 5
    })
    .await;
    w.pause("sink").await.unwrap();
    eventually("sink reports PAUSED", || {
        futures::executor::block_on(w.connector_status("sink"))
            .map(|st| st.tasks.first().is_some_and(|t| t.state.state == "PAUSED"))
            .unwrap_or(false)
    })
    .await;
    let producer = s
        .kafka
        .producer(&ConfigMap::new(), Arc::new(NullSink))
        .unwrap();
    let late = br#"{"schema":{"type":"string","optional":false},"payload":"late"}"#;
    for token in 0..5 {
        producer
            .send(
                &connect_runtime::kafka::OutRecord::new("out", Some(late)),
                token,
            )
            .unwrap();
    }
    producer.flush(Duration::from_secs(5)).await.unwrap();
    // Paused with records waiting: the loop keeps turning (each offset flush
    // calls pre_commit) and delivers none of them.
    let turns = s.collected.pre_commits();
    eventually("three offset flushes while paused", || {
        s.collected.pre_commits() >= turns + 3
    })
    .await;
    assert_eq!(s.collected.0.lock().unwrap().len(), 5);
    w.resume("sink").await.unwrap();
    eventually("the waiting records after resume", || {
        s.collected.0.lock().unwrap().len() == 10
    })
    .await;
    w.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_configs_are_rejected_whole() {
    let s = setup();
    let w = worker(&s);
    let e = w
        .create_connector(
            "sink",
            props(&[("connector.class", "CollectingSink"), ("tasks.max", "0")]),
            TargetState::Started,
        )
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("Connector configuration is invalid"), "{e}");
    assert!(e.contains("tasks.max") && e.contains("topics"), "{e}");
    let e = w
        .create_connector(
            "x",
            props(&[("connector.class", "Nope")]),
            TargetState::Started,
        )
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("Nope"), "{e}");
    assert!(w.connector_names().await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retriable_delivery_failures_are_sent_again_in_order() {
    let s = setup();
    s.kafka.fail_next_produce(3, FaultKind::Retriable);
    let w = worker(&s);
    w.create_connector(
        "src",
        props(&[
            ("connector.class", "PassThroughSource"),
            ("count", "10"),
            ("topic", "out"),
            ("errors.retry.timeout", "60000"),
            ("errors.retry.delay.max.ms", "50"),
        ]),
        TargetState::Started,
    )
    .await
    .unwrap();
    eventually("offset of the last record", || {
        stored(&s.store, "src") == Some(9)
    })
    .await;
    let values = topic_values(&s.kafka, "out");
    for n in 0..10 {
        let want = format!(r#""payload":"v{n}""#);
        assert!(
            values.iter().any(|v| v.contains(&want)),
            "v{n} lost: {values:?}"
        );
    }
    assert!(
        s.kafka.records("dlq", 0).is_empty(),
        "retried, never dead-lettered"
    );
    w.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_without_commit_record_still_commits_every_offset() {
    let s = setup();
    let w = worker(&s);
    // `release.records`: the task's commit_record answers not_implemented,
    // so the worker lets go of each record once sent.
    w.create_connector(
        "rel-src",
        props(&[
            ("connector.class", "PassThroughSource"),
            ("count", "300"),
            ("topic", "out"),
            ("release.records", "true"),
        ]),
        TargetState::Started,
    )
    .await
    .unwrap();
    eventually("the last offset stored", || {
        stored(&s.store, "rel-src") == Some(299)
    })
    .await;
    assert_eq!(topic_values(&s.kafka, "out").len(), 300);
    let c = counts("rel-src");
    assert_eq!((c.acked, c.dropped), (0, 0), "commit_record is not called");
    w.shutdown().await;
}

/// Under `errors.tolerance=none`, a source whose first record fails to
/// deliver fails, and the failed record's offset is not committed.
async fn a_failed_first_delivery_fails_the_task(name: &str, extra: &[(&str, &str)]) {
    let s = setup();
    s.kafka.fail_next_produce(1, FaultKind::Fatal);
    let w = worker(&s);
    let mut config = props(&[
        ("connector.class", "PassThroughSource"),
        ("count", "5"),
        ("topic", "out"),
    ]);
    config.extend(props(extra));
    w.create_connector(name, config, TargetState::Started)
        .await
        .unwrap();
    eventually("task FAILED", || {
        futures::executor::block_on(w.connector_status(name))
            .map(|st| st.tasks[0].state.state == "FAILED")
            .unwrap_or(false)
    })
    .await;
    assert_eq!(
        stored(&s.store, name),
        None,
        "v0 failed: nothing may be committed"
    );
    w.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_deliveries_of_records_let_go_at_send_follow_the_tolerance() {
    a_failed_first_delivery_fails_the_task("rel-none", &[("release.records", "true")]).await;

    // all (no DLQ): the failed record is skipped and the offsets move on.
    let s = setup();
    s.kafka.fail_next_produce(1, FaultKind::Fatal);
    let w = worker(&s);
    w.create_connector(
        "rel-all",
        props(&[
            ("connector.class", "PassThroughSource"),
            ("count", "5"),
            ("topic", "out"),
            ("release.records", "true"),
            ("errors.tolerance", "all"),
        ]),
        TargetState::Started,
    )
    .await
    .unwrap();
    eventually("offsets past the skipped record", || {
        stored(&s.store, "rel-all") == Some(4)
    })
    .await;
    assert_eq!(topic_values(&s.kafka, "out").len(), 4);
    w.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fatal_delivery_failures_under_both_tolerances() {
    a_failed_first_delivery_fails_the_task("src", &[]).await;

    // all: the record goes to the DLQ and the offsets move on.
    let s = setup();
    s.kafka.fail_next_produce(1, FaultKind::Fatal);
    let w = worker(&s);
    w.create_connector(
        "src",
        props(&[
            ("connector.class", "PassThroughSource"),
            ("count", "5"),
            ("topic", "out"),
            ("errors.tolerance", "all"),
            ("errors.deadletterqueue.topic.name", "dlq"),
            ("errors.deadletterqueue.context.headers.enable", "true"),
        ]),
        TargetState::Started,
    )
    .await
    .unwrap();
    eventually("all offsets committed", || {
        stored(&s.store, "src") == Some(4)
    })
    .await;
    let dead = s.kafka.records("dlq", 0);
    assert_eq!(dead.len(), 1);
    let stage = dead[0]
        .headers
        .iter()
        .find(|(k, _)| k == "__connect.errors.stage")
        .and_then(|(_, v)| v.clone());
    assert_eq!(stage.as_deref(), Some(&b"KAFKA_PRODUCE"[..]));
    assert_eq!(topic_values(&s.kafka, "out").len(), 4);
    w.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backpressure_bounds_what_is_held_with_a_slow_broker() {
    let s = setup();
    s.kafka.set_ack_delay(Duration::from_millis(20));
    let w = worker(&s);
    w.create_connector(
        "bp-src",
        props(&[
            ("connector.class", "PassThroughSource"),
            ("count", "200"),
            ("topic", "out"),
            ("source.max.inflight.records", "5"),
        ]),
        TargetState::Started,
    )
    .await
    .unwrap();
    // The task never runs more than one poll batch (10) past the limit (5)
    // ahead of the acknowledgements.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let Counts { polled, acked, .. } = counts("bp-src");
        assert!(polled <= acked + 5 + 10, "polled {polled}, acked {acked}");
        if acked >= 200 {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "stalled at {acked}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // By default commit_record gets each record as produced.
    assert_eq!(counts("bp-src").acked_with_value, counts("bp-src").acked);
    w.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_in_flight_limit_follows_acks_not_offset_flushes() {
    let s = setup();
    let cluster: Arc<dyn KafkaCluster> = Arc::new(s.kafka.clone());
    // No offset flush during the test: acknowledged records alone must make
    // room under the limit (they used to count until the next flush, which
    // held a task to 5 records per flush interval here).
    let slow = [("offset.flush.interval.ms", "600000")];
    let w = worker_with(cluster, s.store.clone(), &s.collected, &slow);
    w.create_connector(
        "flow-src",
        props(&[
            ("connector.class", "PassThroughSource"),
            ("count", "500"),
            ("topic", "out"),
            ("source.max.inflight.records", "5"),
        ]),
        TargetState::Started,
    )
    .await
    .unwrap();
    eventually("all 500 records produced without an offset flush", || {
        topic_values(&s.kafka, "out").len() == 500
    })
    .await;
    w.shutdown().await;
    // The final commit on shutdown still stores the last offset.
    assert_eq!(stored(&s.store, "flow-src"), Some(499));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restart_only_failed_tasks_recovers_without_loss() {
    let s = setup();
    s.kafka.fail_next_produce(1, FaultKind::Fatal);
    let w = worker(&s);
    w.create_connector(
        "src",
        props(&[
            ("connector.class", "PassThroughSource"),
            ("count", "8"),
            ("topic", "out"),
        ]),
        TargetState::Started,
    )
    .await
    .unwrap();
    task_failed(&w, "src").await;
    w.restart_connector("src", true, true).await.unwrap();
    eventually("every record after the restart", || {
        let values = topic_values(&s.kafka, "out");
        (0..8).all(|n| {
            values
                .iter()
                .any(|v| v.contains(&format!(r#""payload":"v{n}""#)))
        })
    })
    .await;
    let status = w.connector_status("src").await.unwrap();
    assert_eq!(status.tasks[0].state.state, "RUNNING");
    assert_eq!(status.connector.state, "RUNNING");
    w.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_commits_and_resume_continues_from_the_stored_offset() {
    let s = setup();
    let w = worker(&s);
    w.create_connector(
        "resume-src",
        props(&[
            ("connector.class", "PassThroughSource"),
            ("count", "6"),
            ("topic", "out"),
        ]),
        TargetState::Started,
    )
    .await
    .unwrap();
    eventually("records produced", || s.kafka.records("out", 0).len() == 6).await;
    w.stop("resume-src").await.unwrap();
    // A graceful stop flushes and commits: no waiting for the flush interval.
    assert_eq!(stored(&s.store, "resume-src"), Some(5));
    let status = w.connector_status("resume-src").await.unwrap();
    assert_eq!(status.connector.state, "STOPPED");
    assert!(status.tasks.is_empty());
    assert!(w
        .connector_info("resume-src")
        .await
        .unwrap()
        .tasks
        .is_empty());
    w.resume("resume-src").await.unwrap();
    eventually("running again", || {
        futures::executor::block_on(w.connector_status("resume-src"))
            .map(|st| st.tasks.first().is_some_and(|t| t.state.state == "RUNNING"))
            .unwrap_or(false)
    })
    .await;
    // The resumed task polls and finds nothing left: it started after the
    // stored offset, so no record is polled (or produced) twice.
    let idle = counts("resume-src").idle_polls;
    eventually("two polls after resume", || {
        counts("resume-src").idle_polls >= idle + 2
    })
    .await;
    assert_eq!(
        counts("resume-src").polled,
        6,
        "resumed after the stored offset"
    );
    assert_eq!(s.kafka.records("out", 0).len(), 6);
    w.delete_connector("resume-src").await.unwrap();
    assert!(w.connector_status("resume-src").await.is_err());
    w.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quiet_sources_move_their_offset_with_heartbeats() {
    let s = setup();
    let w = worker(&s);
    w.create_connector(
        "src",
        props(&[
            ("connector.class", "PassThroughSource"),
            ("heartbeat.only", "true"),
        ]),
        TargetState::Started,
    )
    .await
    .unwrap();
    eventually("heartbeat offsets stored", || {
        stored(&s.store, "src").is_some_and(|n| n >= 5)
    })
    .await;
    assert!(
        s.kafka.records("out", 0).is_empty(),
        "no record was produced"
    );
    w.shutdown().await;
}

/// Store offset 4 for connector `src` by running it once to the end.
async fn run_once(s: &Setup) {
    let w = worker(s);
    w.create_connector(
        "src",
        props(&[
            ("connector.class", "PassThroughSource"),
            ("count", "5"),
            ("topic", "out"),
        ]),
        TargetState::Started,
    )
    .await
    .unwrap();
    eventually("first run committed", || stored(&s.store, "src") == Some(4)).await;
    w.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invalid_stored_offset_fails_the_task_with_reset_instructions() {
    let s = setup();
    run_once(&s).await;
    let w = worker(&s);
    w.create_connector(
        "src",
        props(&[
            ("connector.class", "PassThroughSource"),
            ("count", "5"),
            ("topic", "out"),
            ("reject.stored.offset", "true"),
        ]),
        TargetState::Started,
    )
    .await
    .unwrap();
    let mut trace = String::new();
    eventually("task FAILED", || {
        let st = futures::executor::block_on(w.connector_status("src")).unwrap();
        trace = st.tasks[0].state.trace.clone().unwrap_or_default();
        st.tasks[0].state.state == "FAILED"
    })
    .await;
    assert!(trace.contains("resume token expired"), "{trace}");
    assert!(trace.contains("DELETE /connectors/src/offsets"), "{trace}");
    assert!(trace.contains("offsets.invalid.policy=reset"), "{trace}");
    assert_eq!(
        stored(&s.store, "src"),
        Some(4),
        "nothing is reset behind the user's back"
    );
    w.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invalid_stored_offset_is_reset_and_the_task_starts_over() {
    let s = setup();
    run_once(&s).await;
    let w = worker(&s);
    w.create_connector(
        "src",
        props(&[
            ("connector.class", "PassThroughSource"),
            ("count", "5"),
            ("topic", "out"),
            ("reject.stored.offset", "true"),
            ("offsets.invalid.policy", "reset"),
        ]),
        TargetState::Started,
    )
    .await
    .unwrap();
    // Started over from its default position: v0..v4 a second time.
    eventually("records produced again", || {
        s.kafka.records("out", 0).len() == 10
    })
    .await;
    let status = w.connector_status("src").await.unwrap();
    assert_eq!(status.tasks[0].state.state, "RUNNING");
    w.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sink_crash_before_its_commit_redelivers_the_records() {
    let s = setup();
    let cluster: Arc<dyn KafkaCluster> = Arc::new(s.kafka.clone());
    // Offsets are only committed on a (10 minute) flush or a clean stop.
    let slow = [("offset.flush.interval.ms", "600000")];
    let w = worker_with(cluster.clone(), s.store.clone(), &s.collected, &slow);
    w.create_connector(
        "src",
        props(&[
            ("connector.class", "PassThroughSource"),
            ("count", "5"),
            ("topic", "out"),
        ]),
        TargetState::Started,
    )
    .await
    .unwrap();
    w.create_connector(
        "sink",
        props(&[("connector.class", "CollectingSink"), ("topics", "out")]),
        TargetState::Started,
    )
    .await
    .unwrap();
    eventually("sink got all 5", || {
        s.collected.0.lock().unwrap().len() == 5
    })
    .await;
    assert!(s.kafka.committed_offsets("connect-sink").is_empty());
    w.abort().await;
    let w = worker_with(cluster, s.store.clone(), &s.collected, &slow);
    w.create_connector(
        "sink",
        props(&[("connector.class", "CollectingSink"), ("topics", "out")]),
        TargetState::Started,
    )
    .await
    .unwrap();
    eventually("records redelivered after the crash", || {
        s.collected.0.lock().unwrap().len() == 10
    })
    .await;
    let got = s.collected.0.lock().unwrap().clone();
    for n in 0..5 {
        assert_eq!(
            got.iter().filter(|v| **v == format!("v{n}")).count(),
            2,
            "v{n}"
        );
    }
    w.shutdown().await;
    assert!(
        s.kafka
            .committed_offsets("connect-sink")
            .values()
            .any(|&o| o == 5),
        "a clean stop commits"
    );
}

/// A source whose task count grows by one each time the runtime asks, and
/// which asks for a reconfiguration once, shortly after it starts (as a
/// connector that discovers a new table would).
#[derive(Default)]
struct Growing {
    calls: usize,
}

#[async_trait::async_trait]
impl connect_api::connector::Connector for Growing {
    fn version(&self) -> String {
        "1.0".into()
    }
    fn config_def(&self) -> connect_api::config::ConfigDef {
        connect_api::config::ConfigDef::new()
    }
    async fn start(
        &mut self,
        _: &ConfigMap,
        ctx: Arc<dyn connect_api::connector::ConnectorContext>,
    ) -> connect_api::Result<()> {
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            ctx.request_task_reconfiguration();
        });
        Ok(())
    }
    async fn task_configs(&mut self, max: usize) -> connect_api::Result<Vec<ConfigMap>> {
        self.calls += 1;
        let topic = [("topic".to_string(), "out".to_string())].into();
        Ok(vec![topic; self.calls.min(max)])
    }
    async fn stop(&mut self) -> connect_api::Result<()> {
        Ok(())
    }
}

impl connect_api::connector::SourceConnector for Growing {
    fn create_task(&self) -> Box<dyn connect_api::source::SourceTask> {
        PassThroughSource::default().create_task()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connector_that_requests_reconfiguration_gets_new_tasks() {
    let s = setup();
    let mut plugins = connect_runtime::worker::Plugins::with_builtins();
    plugins.register_source(
        "test.Growing",
        &["Growing"],
        || Box::new(Growing::default()),
    );
    let config = connect_runtime::worker::WorkerConfig::parse(&props(&[
        (
            "key.converter",
            "org.apache.kafka.connect.json.JsonConverter",
        ),
        (
            "value.converter",
            "org.apache.kafka.connect.json.JsonConverter",
        ),
    ]))
    .unwrap();
    let cluster: Arc<dyn KafkaCluster> = Arc::new(s.kafka.clone());
    let w = StandaloneHerder::new(connect_runtime::worker::Worker::new(
        config,
        plugins,
        cluster,
        s.store.clone(),
    ));
    w.create_connector(
        "grow",
        props(&[("connector.class", "Growing"), ("tasks.max", "4")]),
        TargetState::Started,
    )
    .await
    .unwrap();
    eventually("two running tasks after the reconfiguration", || {
        futures::executor::block_on(w.connector_status("grow"))
            .map(|st| st.tasks.len() == 2 && st.tasks.iter().all(|t| t.state.state == "RUNNING"))
            .unwrap_or(false)
    })
    .await;
    assert_eq!(w.task_configs("grow").await.unwrap().len(), 2);
    w.shutdown().await;
}

/// A cluster that remembers the configs its producers were created with.
struct ProducerConfigs {
    inner: connect_runtime::kafka::memory::MemoryKafka,
    seen: std::sync::Mutex<Vec<connect_runtime::kafka::ClientConfig>>,
}

impl KafkaCluster for ProducerConfigs {
    fn producer(
        &self,
        config: &connect_runtime::kafka::ClientConfig,
        sink: Arc<dyn connect_runtime::kafka::DeliverySink>,
    ) -> Result<Box<dyn connect_runtime::kafka::Producer>, connect_runtime::kafka::KafkaError> {
        self.seen.lock().unwrap().push(config.clone());
        self.inner.producer(config, sink)
    }
    fn consumer(
        &self,
        config: &connect_runtime::kafka::ClientConfig,
    ) -> Result<Box<dyn connect_runtime::kafka::Consumer>, connect_runtime::kafka::KafkaError> {
        self.inner.consumer(config)
    }
    fn admin(
        &self,
        config: &connect_runtime::kafka::ClientConfig,
    ) -> Result<Box<dyn connect_runtime::kafka::Admin>, connect_runtime::kafka::KafkaError> {
        self.inner.admin(config)
    }
}

/// The source producer settings of Kafka Connect's worker: all replicas
/// acknowledge, no retry limit, and one request in flight per broker so a
/// retry cannot reorder a partition. A worker's `producer.*` setting wins.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn source_producers_get_kafka_connects_defaults_unless_overridden() {
    for (extra, in_flight) in [
        (&[][..], "1"),
        (
            &[("producer.max.in.flight.requests.per.connection", "5")][..],
            "5",
        ),
    ] {
        let s = setup();
        let cluster = Arc::new(ProducerConfigs {
            inner: s.kafka.clone(),
            seen: Default::default(),
        });
        let w = worker_with(cluster.clone(), s.store.clone(), &s.collected, extra);
        w.create_connector(
            "src",
            props(&[
                ("connector.class", "PassThroughSource"),
                ("count", "1"),
                ("topic", "out"),
            ]),
            TargetState::Started,
        )
        .await
        .unwrap();
        eventually("the source task's producer", || {
            !cluster.seen.lock().unwrap().is_empty()
        })
        .await;
        let seen = cluster.seen.lock().unwrap().clone();
        let config = &seen[0];
        let get = |k: &str| config.get(k).map(String::as_str);
        assert_eq!(get("acks"), Some("all"));
        assert_eq!(get("delivery.timeout.ms"), Some("2147483647"));
        assert_eq!(
            get("max.in.flight.requests.per.connection"),
            Some(in_flight)
        );
        w.shutdown().await;
    }
}

/// An offset store whose first writes fail as a broker outage would.
struct FlakyStore {
    inner: connect_runtime::offsets::MemoryOffsetStore,
    failures: std::sync::atomic::AtomicUsize,
}

#[async_trait::async_trait]
impl connect_runtime::offsets::OffsetStore for FlakyStore {
    fn get(
        &self,
        connector: &str,
        partition: &connect_api::SourceMap,
    ) -> Option<connect_api::SourceMap> {
        self.inner.get(connector, partition)
    }
    fn connector_offsets(
        &self,
        connector: &str,
    ) -> Vec<(connect_api::SourceMap, connect_api::SourceMap)> {
        self.inner.connector_offsets(connector)
    }
    async fn write(
        &self,
        connector: &str,
        entries: Vec<connect_runtime::offsets::OffsetEntry>,
    ) -> connect_api::Result<()> {
        use std::sync::atomic::Ordering;
        if self
            .failures
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok()
        {
            return Err(connect_api::ConnectError::retriable(
                "the offsets topic has no leader",
            ));
        }
        self.inner.write(connector, entries).await
    }
}

/// A retriable failure to store offsets is logged and the same offsets
/// are written at the next flush, even when no new record comes: the task
/// keeps running and a restart would not replay what was delivered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn offsets_that_failed_to_store_are_written_at_the_next_flush() {
    let s = setup();
    let store = Arc::new(FlakyStore {
        inner: connect_runtime::offsets::MemoryOffsetStore::new(),
        failures: std::sync::atomic::AtomicUsize::new(2),
    });
    let w = worker_with(Arc::new(s.kafka.clone()), store.clone(), &s.collected, &[]);
    w.create_connector(
        "flaky-src",
        props(&[
            ("connector.class", "PassThroughSource"),
            ("count", "3"),
            ("topic", "out"),
        ]),
        TargetState::Started,
    )
    .await
    .unwrap();
    eventually("the last offset stored after two failed writes", || {
        use connect_runtime::offsets::OffsetStore;
        store
            .inner
            .get("flaky-src", &partition())
            .and_then(|o| o["n"].as_i64())
            == Some(2)
    })
    .await;
    assert_eq!(store.failures.load(std::sync::atomic::Ordering::SeqCst), 0);
    let status = w.connector_status("flaky-src").await.unwrap();
    assert_eq!(status.tasks[0].state.state, "RUNNING");
    w.shutdown().await;
}

/// An errant record reported while the task flushes (`pre_commit`) under
/// `errors.tolerance=none` fails the task before the commit, as Kafka fails
/// the flush: the group never commits past the failed record.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_errant_record_reported_in_pre_commit_fails_before_the_commit() {
    let s = setup();
    produce_strings(&s.kafka, "out", 0..3).await;
    let w = worker(&s);
    w.create_connector(
        "sink",
        props(&[
            ("connector.class", "CollectingSink"),
            ("topics", "out"),
            ("report.in.pre_commit", "true"),
            // Kafka offers the reporter only with a DLQ or error logging.
            ("errors.log.enable", "true"),
        ]),
        TargetState::Started,
    )
    .await
    .unwrap();
    task_failed(&w, "sink").await;
    assert!(
        s.kafka.committed_offsets("connect-sink").is_empty(),
        "committed past a record that failed: {:?}",
        s.kafka.committed_offsets("connect-sink")
    );
    w.shutdown().await;
}

/// A stop while a batch waits to be put again (the sink's system is down)
/// is a clean stop: what was put is committed, the waiting batch is not,
/// and the task closes and stops instead of failing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_while_waiting_to_redeliver_commits_what_was_put() {
    let s = setup();
    produce_strings(&s.kafka, "out", 0..3).await;
    let w = worker_with(
        Arc::new(s.kafka.clone()),
        s.store.clone(),
        &s.collected,
        &[("offset.flush.interval.ms", "600000")],
    );
    w.create_connector(
        "sink",
        props(&[
            ("connector.class", "CollectingSink"),
            ("topics", "out"),
            ("fail.puts", "1000"),
            ("fail.puts.after", "3"),
            ("put.timeout.ms", "60000"),
        ]),
        TargetState::Started,
    )
    .await
    .unwrap();
    eventually("the first 3 put", || {
        s.collected.0.lock().unwrap().len() == 3
    })
    .await;
    produce_strings(&s.kafka, "out", 3..6).await;
    eventually("a put that failed", || {
        s.collected.events().contains(&"put failed".to_string())
    })
    .await;
    w.stop("sink").await.unwrap();
    let committed = s.kafka.committed_offsets("connect-sink");
    assert_eq!(
        committed.values().copied().collect::<Vec<_>>(),
        [3],
        "the final commit covers what was put and no more"
    );
    let events = s.collected.events();
    assert_eq!(
        events[events.len() - 2..],
        ["close out-0", "stop"],
        "{events:?}"
    );
    w.shutdown().await;
}

/// Wait until the first task of connector `name` is FAILED.
async fn task_failed(w: &StandaloneHerder, name: &str) {
    eventually("task FAILED", || {
        futures::executor::block_on(w.connector_status(name))
            .is_ok_and(|st| st.tasks[0].state.state == "FAILED")
    })
    .await;
}

/// Produce JSON string records "r{n}" for each `n` in `range` to `topic`
/// of the in-memory Kafka.
async fn produce_strings(
    kafka: &connect_runtime::kafka::memory::MemoryKafka,
    topic: &str,
    range: std::ops::Range<u64>,
) {
    let producer = kafka
        .producer(&ConfigMap::new(), Arc::new(NullSink))
        .unwrap();
    for n in range {
        let value =
            format!(r#"{{"schema":{{"type":"string","optional":false}},"payload":"r{n}"}}"#);
        producer
            .send(&OutRecord::new(topic, Some(value.as_bytes())), n)
            .unwrap();
    }
    producer.flush(Duration::from_secs(5)).await.unwrap();
}

/// As Kafka: a sink task closes its partitions before it stops, after a
/// clean stop and after a failure.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sink_task_closes_its_partitions_before_it_stops() {
    let s = setup();
    produce_strings(&s.kafka, "out", 0..3).await;
    let w = worker(&s);
    w.create_connector(
        "sink",
        props(&[("connector.class", "CollectingSink"), ("topics", "out")]),
        TargetState::Started,
    )
    .await
    .unwrap();
    eventually("3 records", || s.collected.0.lock().unwrap().len() == 3).await;
    w.shutdown().await;
    let events = s.collected.events();
    let tail: Vec<&str> = events
        .iter()
        .rev()
        .take(2)
        .rev()
        .map(String::as_str)
        .collect();
    assert_eq!(tail, ["close out-0", "stop"], "{events:?}");

    // Failed: a record no converter can read under errors.tolerance=none.
    let s = setup();
    let producer = s
        .kafka
        .producer(&ConfigMap::new(), Arc::new(NullSink))
        .unwrap();
    producer
        .send(&OutRecord::new("out", Some(b"{broken")), 0)
        .unwrap();
    producer.flush(Duration::from_secs(5)).await.unwrap();
    let w = worker(&s);
    w.create_connector(
        "sink",
        props(&[("connector.class", "CollectingSink"), ("topics", "out")]),
        TargetState::Started,
    )
    .await
    .unwrap();
    task_failed(&w, "sink").await;
    eventually("stop after close", || {
        s.collected
            .events()
            .ends_with(&["close out-0".to_string(), "stop".to_string()])
    })
    .await;
    w.shutdown().await;
}

/// As Kafka: a poll that brings no record still calls put, with an empty
/// batch, so a sink can act on time (rotate a file, flush a buffer).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_sink_gets_empty_puts() {
    let s = setup();
    let w = worker(&s);
    w.create_connector(
        "sink",
        props(&[("connector.class", "CollectingSink"), ("topics", "out")]),
        TargetState::Started,
    )
    .await
    .unwrap();
    eventually("two empty puts", || {
        s.collected
            .events()
            .iter()
            .filter(|e| *e == "put []")
            .count()
            >= 2
    })
    .await;
    w.shutdown().await;
}

/// A partition the task paused stays paused when a rebalance takes it
/// away and gives it back (Kafka re-pauses it on assignment).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partition_the_task_paused_stays_paused_across_a_rebalance() {
    let s = setup();
    let w = worker(&s);
    w.create_connector(
        "sink",
        props(&[
            ("connector.class", "CollectingSink"),
            ("topics", "out"),
            ("pause.on.first.open", "true"),
        ]),
        TargetState::Started,
    )
    .await
    .unwrap();
    // Two idle polls after the open: the task's pause is applied.
    eventually("the partition opened and paused", || {
        let events = s.collected.events();
        events
            .iter()
            .skip_while(|e| *e != "open out-0")
            .filter(|e| *e == "put []")
            .count()
            >= 2
    })
    .await;
    let member = s.kafka.group_members("connect-sink").remove(0);
    assert!(s.kafka.drop_group_member("connect-sink", &member));
    eventually("the partition opened again", || {
        s.collected
            .events()
            .iter()
            .filter(|e| e.starts_with("open"))
            .count()
            == 2
    })
    .await;
    produce_strings(&s.kafka, "out", 0..3).await;
    // The loop turns (empty puts) while the records wait.
    let puts = s.collected.events().len();
    eventually("three idle polls after the records arrived", || {
        s.collected.events()[puts..]
            .iter()
            .filter(|e| *e == "put []")
            .count()
            >= 3
    })
    .await;
    assert!(
        s.collected.0.lock().unwrap().is_empty(),
        "records of a paused partition were delivered: {:?}",
        s.collected.0.lock().unwrap()
    );
    w.shutdown().await;
}

/// Tasks stop together: three whose stop takes 1 s each are done in about
/// 1 s, not 3 (each used to wait for the one before it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_stop_together_not_one_after_another() {
    let s = setup();
    let w = worker(&s);
    w.create_connector(
        "sink",
        props(&[
            ("connector.class", "CollectingSink"),
            ("topics", "out"),
            ("tasks.max", "3"),
            ("task.count", "3"),
            ("stop.delay.ms", "1000"),
        ]),
        TargetState::Started,
    )
    .await
    .unwrap();
    eventually("three tasks running", || {
        futures::executor::block_on(w.connector_status("sink")).is_ok_and(|st| {
            st.tasks.len() == 3 && st.tasks.iter().all(|t| t.state.state == "RUNNING")
        })
    })
    .await;
    let started = std::time::Instant::now();
    w.shutdown().await;
    let took = started.elapsed();
    assert_eq!(
        s.collected.events().iter().filter(|e| *e == "stop").count(),
        3
    );
    assert!(took < Duration::from_millis(2500), "stopping took {took:?}");
}

/// As Kafka: restarting only the connector leaves its tasks running when
/// their configs do not change.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restarting_only_the_connector_keeps_its_tasks() {
    let s = setup();
    let w = worker(&s);
    w.create_connector(
        "sink",
        props(&[("connector.class", "CollectingSink"), ("topics", "out")]),
        TargetState::Started,
    )
    .await
    .unwrap();
    eventually("the task running", || {
        s.collected.events().iter().any(|e| e.starts_with("open"))
    })
    .await;
    let status = w.restart_connector("sink", false, false).await.unwrap();
    assert_eq!(status.connector.state, "RUNNING");
    assert_eq!(status.tasks.len(), 1);
    assert!(
        !s.collected.events().iter().any(|e| e == "stop"),
        "the task was restarted: {:?}",
        s.collected.events()
    );
    // With its tasks, the task restarts.
    w.restart_connector("sink", true, false).await.unwrap();
    eventually("the task stopped and started again", || {
        s.collected
            .events()
            .iter()
            .filter(|e| e.starts_with("open"))
            .count()
            == 2
    })
    .await;
    w.shutdown().await;
}

/// A task that cannot start (its config refers to an unset environment
/// variable) is listed FAILED in the connector's status, not left out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_that_fails_to_start_is_in_the_status() {
    let s = setup();
    let w = worker_with(
        Arc::new(s.kafka.clone()),
        s.store.clone(),
        &s.collected,
        &[("config.providers", "env")],
    );
    w.create_connector(
        "sink",
        props(&[
            ("connector.class", "CollectingSink"),
            ("topics", "out"),
            ("task.unresolvable", "true"),
        ]),
        TargetState::Started,
    )
    .await
    .unwrap();
    let status = w.connector_status("sink").await.unwrap();
    assert_eq!(status.connector.state, "RUNNING");
    assert_eq!(status.tasks.len(), 1, "{status:?}");
    assert_eq!(status.tasks[0].state.state, "FAILED");
    assert!(
        status.tasks[0]
            .state
            .trace
            .as_deref()
            .is_some_and(|t| t.contains("CONNECT_TEST_VARIABLE_THAT_IS_NOT_SET")),
        "{status:?}"
    );
    w.shutdown().await;
}

/// A failed flush rewinds to the last offsets the group committed, which
/// the periodic commits keep moving: not to where the task started (the
/// periodic commits were asynchronous and never counted as committed).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_flush_rewinds_only_to_the_last_periodic_commit() {
    let s = setup();
    produce_strings(&s.kafka, "out", 0..10).await;
    let w = worker(&s);
    w.create_connector(
        "sink",
        props(&[
            ("connector.class", "CollectingSink"),
            ("topics", "out"),
            ("fail.pre_commit.at", "15"),
        ]),
        TargetState::Started,
    )
    .await
    .unwrap();
    eventually("the first 10 committed", || {
        s.kafka.committed_offsets("connect-sink").values().next() == Some(&10)
    })
    .await;
    // Five more; the flush after them fails and rewinds.
    produce_strings(&s.kafka, "out", 10..15).await;
    eventually("the last five redelivered and committed", || {
        s.kafka.committed_offsets("connect-sink").values().next() == Some(&15)
            && s.collected.0.lock().unwrap().len() >= 20
    })
    .await;
    let got = s.collected.0.lock().unwrap().clone();
    let want: Vec<String> = (0..15).chain(10..15).map(|n| format!("r{n}")).collect();
    assert_eq!(got, want, "only what followed the last commit comes again");
    w.shutdown().await;
}

/// An offset store shared with another worker whose last offsets it only
/// learns on `refresh`, as the offsets topic's store does.
struct SharedStore {
    inner: connect_runtime::offsets::MemoryOffsetStore,
    other_workers_write: std::sync::Mutex<Option<(String, connect_runtime::offsets::OffsetEntry)>>,
}

#[async_trait::async_trait]
impl connect_runtime::offsets::OffsetStore for SharedStore {
    fn get(
        &self,
        connector: &str,
        partition: &connect_api::SourceMap,
    ) -> Option<connect_api::SourceMap> {
        self.inner.get(connector, partition)
    }
    fn connector_offsets(
        &self,
        connector: &str,
    ) -> Vec<(connect_api::SourceMap, connect_api::SourceMap)> {
        self.inner.connector_offsets(connector)
    }
    async fn write(
        &self,
        connector: &str,
        entries: Vec<connect_runtime::offsets::OffsetEntry>,
    ) -> connect_api::Result<()> {
        self.inner.write(connector, entries).await
    }
    async fn refresh(&self) -> connect_api::Result<()> {
        let learned = self.other_workers_write.lock().unwrap().take();
        if let Some((connector, entry)) = learned {
            self.inner.write(&connector, vec![entry]).await?;
        }
        Ok(())
    }
}

/// A source task moved here from another worker refreshes the offsets
/// before it starts, so it resumes where the other worker stopped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_source_task_resumes_from_offsets_another_worker_stored() {
    let s = setup();
    let mut offset = connect_api::SourceMap::new();
    offset.insert("n".into(), 6.into());
    let store = Arc::new(SharedStore {
        inner: connect_runtime::offsets::MemoryOffsetStore::new(),
        other_workers_write: std::sync::Mutex::new(Some((
            "moved-src".into(),
            (connect_api::SourceMap::clone(&partition()), Some(offset)),
        ))),
    });
    let w = worker_with(Arc::new(s.kafka.clone()), store.clone(), &s.collected, &[]);
    w.create_connector(
        "moved-src",
        props(&[
            ("connector.class", "PassThroughSource"),
            ("count", "10"),
            ("topic", "out"),
        ]),
        TargetState::Started,
    )
    .await
    .unwrap();
    eventually("the last offset stored", || {
        stored(&store.inner, "moved-src") == Some(9)
    })
    .await;
    assert_eq!(
        topic_values(&s.kafka, "out").len(),
        3,
        "only the records after the other worker's offset are produced"
    );
    w.shutdown().await;
}

/// Transactions written to `out`: "kept-1" committed, "aborted" aborted,
/// "kept-2" committed, then "open" left open. Returns the producer, whose
/// open transaction the caller ends.
async fn write_transactions(s: &Setup) -> Box<dyn connect_runtime::kafka::Producer> {
    let config = ConfigMap::from([("transactional.id", "writer")]);
    let producer = s.kafka.producer(&config, Arc::new(NullSink)).unwrap();
    let timeout = Duration::from_secs(5);
    producer.init_transactions(timeout).await.unwrap();
    for (token, (value, commit)) in (0u64..).zip([
        ("kept-1", Some(true)),
        ("aborted", Some(false)),
        ("kept-2", Some(true)),
        ("open", None),
    ]) {
        producer.begin_transaction().unwrap();
        let json =
            format!(r#"{{"schema":{{"type":"string","optional":false}},"payload":"{value}"}}"#);
        producer
            .send(&OutRecord::new("out", Some(json.as_bytes())), token)
            .unwrap();
        match commit {
            Some(true) => producer.commit_transaction(timeout).await.unwrap(),
            Some(false) => producer.abort_transaction(timeout).await.unwrap(),
            None => producer.flush(timeout).await.unwrap(),
        }
    }
    producer
}

/// Issue 28 item 5: a sink reading with
/// `consumer.override.isolation.level=read_committed` never sees a record of
/// an aborted transaction, and sees one of an open transaction only once it
/// commits (in its place in the partition).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_committed_sink_never_sees_aborted_records() {
    let s = setup();
    let w = worker(&s);
    let producer = write_transactions(&s).await;
    w.create_connector(
        "sink",
        props(&[
            ("connector.class", "CollectingSink"),
            ("topics", "out"),
            ("consumer.override.isolation.level", "read_committed"),
        ]),
        TargetState::Started,
    )
    .await
    .unwrap();
    eventually("the two committed records", || {
        s.collected.0.lock().unwrap().len() == 2
    })
    .await;
    producer
        .commit_transaction(Duration::from_secs(5))
        .await
        .unwrap();
    eventually("the record of the transaction committed last", || {
        s.collected.0.lock().unwrap().len() == 3
    })
    .await;
    assert_eq!(
        *s.collected.0.lock().unwrap(),
        ["kept-1", "kept-2", "open"],
        "a read_committed sink saw what it must not"
    );
    w.shutdown().await;
}

/// The same records read with the consumer's default isolation
/// (`read_uncommitted`, Kafka's default too): the aborted and the open
/// record are delivered, which is what `read_committed` is for.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sink_with_the_default_isolation_sees_aborted_records() {
    let s = setup();
    let w = worker(&s);
    let producer = write_transactions(&s).await;
    w.create_connector(
        "sink",
        props(&[("connector.class", "CollectingSink"), ("topics", "out")]),
        TargetState::Started,
    )
    .await
    .unwrap();
    eventually("all four records", || {
        s.collected.0.lock().unwrap().len() == 4
    })
    .await;
    assert_eq!(
        *s.collected.0.lock().unwrap(),
        ["kept-1", "aborted", "kept-2", "open"]
    );
    producer
        .abort_transaction(Duration::from_secs(5))
        .await
        .unwrap();
    w.shutdown().await;
}
