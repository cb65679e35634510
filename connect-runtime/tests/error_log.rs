//! `errors.log.enable` / `errors.log.include.messages`: what a tolerated
//! failure writes to the log. Its own test binary, because the log is
//! captured through a process-wide tracing subscriber.

mod common;

use common::*;
use connect_runtime::kafka::memory::FaultKind;
use connect_runtime::status::TargetState;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_error_log_names_the_failure_and_includes_the_record_only_when_asked() {
    let captured = Captured::default();
    let writer = captured.clone();
    tracing_subscriber::fmt()
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .init();
    let s = setup();
    let w = worker(&s);
    // TimestampRouter fails on records without a timestamp: every one here.
    for (name, include_messages) in [("log-bare", "false"), ("log-full", "true")] {
        w.create_connector(
            name,
            failing_transform_source("2", include_messages),
            TargetState::Started,
        )
        .await
        .unwrap();
        eventually("both records skipped", || stored(&s.store, name) == Some(1)).await;
    }
    // A record the producer fails, from a task that lets records go once
    // sent: the log still shows it when asked.
    s.kafka.fail_next_produce(1, FaultKind::Fatal);
    w.create_connector(
        "log-produce",
        props(&[
            ("connector.class", "PassThroughSource"),
            ("count", "2"),
            ("topic", "out"),
            ("release.records", "true"),
            ("errors.tolerance", "all"),
            ("errors.log.enable", "true"),
            ("errors.log.include.messages", "true"),
        ]),
        TargetState::Started,
    )
    .await
    .unwrap();
    eventually("past the failed record", || {
        stored(&s.store, "log-produce") == Some(1)
    })
    .await;
    w.shutdown().await;
    let produce_errors: Vec<String> = captured
        .lines_with("log-produce-0")
        .into_iter()
        .filter(|l| l.contains("Error encountered in task"))
        .collect();
    assert_eq!(produce_errors.len(), 1, "{produce_errors:#?}");
    assert!(
        produce_errors[0].contains("KAFKA_PRODUCE"),
        "{produce_errors:#?}"
    );
    assert!(produce_errors[0].contains("v0"), "{produce_errors:#?}");

    for (name, with_record) in [("log-bare", false), ("log-full", true)] {
        let errors: Vec<String> = captured
            .lines_with(&format!("{name}-0"))
            .into_iter()
            .filter(|l| l.contains("Error encountered in task"))
            .collect();
        assert_eq!(errors.len(), 2, "one line per skipped record: {errors:#?}");
        for line in &errors {
            assert!(line.contains("TRANSFORMATION"), "{line}");
            assert!(line.contains("TimestampRouter"), "{line}");
        }
        // The record as polled: its value and its source offset.
        assert_eq!(
            errors[0].contains("v0") && errors[1].contains("v1"),
            with_record,
            "{errors:#?}"
        );
    }
}
