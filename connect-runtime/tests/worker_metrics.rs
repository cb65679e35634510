//! The worker's metrics, with Kafka Connect's names, after real work on the
//! in-memory Kafka: records polled, written, read and put, commits, errors
//! and dead letters, connector and task counts.

mod common;

use common::*;
use connect_runtime::status::TargetState;

/// The value of the sample `name{labels}` in `text`, if there is one.
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pipeline_counts_what_it_moved() {
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
    let src = r#"{connector="src",task="0"}"#;
    let sink = r#"{connector="sink",task="0"}"#;
    let written = format!("kafka_connect_source_task_metrics_source_record_write_total{src}");
    let sent = format!("kafka_connect_sink_task_metrics_sink_record_send_total{sink}");
    let commits = format!("kafka_connect_sink_task_metrics_offset_commit_completion_total{sink}");
    eventually("25 records written, put and a commit", || {
        let text = w.worker().metrics().render();
        sample(&text, &written) == Some(25.0)
            && sample(&text, &sent) == Some(25.0)
            && sample(&text, &commits).is_some_and(|c| c >= 1.0)
    })
    .await;
    let text = w.worker().metrics().render();
    let at = |series: String| {
        sample(&text, &series).unwrap_or_else(|| panic!("no {series} in:\n{text}"))
    };
    assert_eq!(
        at(format!(
            "kafka_connect_source_task_metrics_source_record_poll_total{src}"
        )),
        25.0
    );
    assert_eq!(
        at(format!(
            "kafka_connect_sink_task_metrics_sink_record_read_total{sink}"
        )),
        25.0
    );
    assert_eq!(
        at(format!(
            "kafka_connect_sink_task_metrics_partition_count{sink}"
        )),
        1.0
    );
    assert_eq!(
        at("kafka_connect_connect_worker_metrics_connector_count".into()),
        2.0
    );
    assert_eq!(
        at("kafka_connect_connect_worker_metrics_task_count".into()),
        2.0
    );
    assert_eq!(
        at("kafka_connect_connect_worker_metrics_task_startup_success_total".into()),
        2.0
    );
    assert_eq!(
        at(format!(
            "kafka_connect_connector_task_metrics_offset_commit_success_percentage{sink}"
        )),
        1.0
    );
    assert_eq!(
        at(r#"kafka_connect_connector_status{connector="sink",status="running"}"#.into()),
        1.0
    );
    let poll_rate = at(format!(
        "kafka_connect_source_task_metrics_source_record_poll_rate{src}"
    ));
    assert!(poll_rate > 0.0, "25 records since the start: {poll_rate}");
    let running = at(format!(
        "kafka_connect_connector_task_metrics_running_ratio{sink}"
    ));
    assert!(running > 0.5 && running <= 1.0, "{running}");
    let paused = at(format!(
        "kafka_connect_connector_task_metrics_pause_ratio{sink}"
    ));
    assert_eq!(paused, 0.0);
    let active = at(format!(
        "kafka_connect_sink_task_metrics_sink_record_active_count{sink}"
    ));
    assert_eq!(active, 0.0, "all 25 committed");
    let max_batch = at(format!(
        "kafka_connect_connector_task_metrics_batch_size_max{src}"
    ));
    assert!((1.0..=25.0).contains(&max_batch), "{max_batch}");

    w.delete_connector("src").await.unwrap();
    let text = w.worker().metrics().render();
    assert!(
        !text.contains(r#"connector="src""#),
        "a deleted connector leaves:\n{text}"
    );
    assert_eq!(
        sample(
            &text,
            "kafka_connect_connect_worker_metrics_connector_count"
        ),
        Some(1.0)
    );
    w.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tolerated_failures_show_in_the_error_metrics() {
    let s = setup();
    let w = worker(&s);
    w.create_connector(
        "bad",
        failing_transform_source("4", "false"),
        TargetState::Started,
    )
    .await
    .unwrap();
    let series =
        r#"kafka_connect_task_error_metrics_total_records_skipped{connector="bad",task="0"}"#;
    eventually("4 skipped records counted", || {
        sample(&w.worker().metrics().render(), series) == Some(4.0)
    })
    .await;
    let text = w.worker().metrics().render();
    let errors =
        r#"kafka_connect_task_error_metrics_total_record_errors{connector="bad",task="0"}"#;
    assert_eq!(sample(&text, errors), Some(4.0));
    let logged =
        r#"kafka_connect_task_error_metrics_total_errors_logged{connector="bad",task="0"}"#;
    assert_eq!(sample(&text, logged), Some(4.0), "{text}");
    let last = r#"kafka_connect_task_error_metrics_last_error_timestamp{connector="bad",task="0"}"#;
    assert!(sample(&text, last).is_some_and(|t| t > 1.7e12), "{text}");
    w.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_sink_shows_how_far_behind_it_is() {
    let s = setup();
    let w = worker(&s);
    w.create_connector(
        "sink",
        props(&[("connector.class", "CollectingSink"), ("topics", "out")]),
        TargetState::Started,
    )
    .await
    .unwrap();
    let source = |name: &str, count: &str| {
        props(&[
            ("connector.class", "PassThroughSource"),
            ("count", count),
            ("topic", "out"),
            ("name", name),
        ])
    };
    w.create_connector("first", source("first", "5"), TargetState::Started)
        .await
        .unwrap();
    eventually("5 records in the sink", || {
        s.collected.0.lock().unwrap().len() == 5
    })
    .await;
    w.pause("sink").await.unwrap();
    w.create_connector("second", source("second", "7"), TargetState::Started)
        .await
        .unwrap();
    let lag = r#"kafka_connect_sink_task_metrics_sink_record_lag_max{connector="sink",task="0"}"#;
    eventually("a lag of the 7 records not read", || {
        sample(&w.worker().metrics().render(), lag) == Some(7.0)
    })
    .await;
    w.resume("sink").await.unwrap();
    eventually("no lag once they are read", || {
        sample(&w.worker().metrics().render(), lag) == Some(0.0)
    })
    .await;
    let paused = r#"kafka_connect_connector_task_metrics_pause_ratio{connector="sink",task="0"}"#;
    assert!(
        sample(&w.worker().metrics().render(), paused).is_some_and(|p| p > 0.0),
        "the pause shows in the pause ratio"
    );
    w.shutdown().await;
}
