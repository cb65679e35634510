//! librdkafka's log lines reach the worker's log: with `debug` set on a
//! client (`consumer.debug=cgrp` in a worker config), its debug lines come
//! at INFO, under the target `librdkafka`. Its own test binary: the log is
//! captured through a process-wide tracing subscriber.

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use connect_kafka::{ClientConfig, KafkaCluster, Subscription};
use connect_rdkafka::MockKafka;

#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn debug_contexts_put_librdkafka_lines_in_the_log_at_info() {
    let captured = Captured::default();
    let writer = captured.clone();
    tracing_subscriber::fmt()
        .with_ansi(false)
        .with_max_level(tracing::Level::INFO)
        .with_writer(move || writer.clone())
        .init();
    let kafka = MockKafka::start(1, &[("logged", 1)]).unwrap();
    let cluster = kafka.cluster();
    let config = ClientConfig::from([
        ("group.id", "log-check"),
        ("debug", "cgrp"),
        ("auto.offset.reset", "earliest"),
    ]);
    let mut consumer = cluster.consumer(&config).unwrap();
    consumer
        .subscribe(&Subscription::Topics(vec!["logged".into()]))
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let is_cgrp_line =
        |l: &&str| l.contains("INFO") && l.contains("librdkafka") && l.contains("CGRP");
    while !captured.text().lines().any(|l| is_cgrp_line(&l)) {
        assert!(
            Instant::now() < deadline,
            "no librdkafka CGRP line at INFO in:\n{}",
            captured.text()
        );
        let _ = consumer.poll(Duration::from_millis(100)).await;
    }
    let _ = consumer.close().await;
}
