//! The `mock-kafka` binary: its command line, its ready line, its shutdown on
//! SIGTERM, and interoperability with an independent client (kcat).

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use connect_kafka::{
    ClientConfig, ConsumerEvent, Delivered, DeliverySink, KafkaCluster, KafkaError, OutRecord,
    Subscription,
};
use connect_rdkafka::RdKafkaCluster;
use tokio::time::Instant;

const BIN: &str = env!("CARGO_BIN_EXE_mock-kafka");

/// A running `mock-kafka`, stopped with SIGTERM when dropped.
struct Running {
    child: Child,
    bootstrap: String,
}

impl Running {
    fn start(args: &[&str]) -> Running {
        let mut child = Command::new(BIN)
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("mock-kafka starts");
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let line = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("a ready line within 30 s");
        let bootstrap = line
            .trim_end()
            .strip_prefix("bootstrap.servers=")
            .unwrap_or_else(|| panic!("unexpected ready line {line:?}"))
            .to_string();
        Running { child, bootstrap }
    }

    /// Send SIGTERM and return whether it exited successfully within 30 s.
    fn terminate(&mut self) -> bool {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while std::time::Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                return status.success();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        false
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            self.terminate();
        }
    }
}

#[test]
fn prints_one_bootstrap_line_and_stops_on_sigterm() {
    let mut running = Running::start(&["--brokers", "2", "--topic", "demo:3"]);
    let servers: Vec<&str> = running.bootstrap.split(',').collect();
    assert_eq!(servers.len(), 2, "{}", running.bootstrap);
    assert!(
        servers.iter().all(|s| s.starts_with("127.0.0.1:")),
        "{}",
        running.bootstrap
    );
    assert!(running.terminate(), "exits with status 0 on SIGTERM");
}

#[test]
fn bad_arguments_are_a_usage_error_naming_the_argument() {
    for (args, needle) in [
        (&["--brokers", "none"][..], "--brokers"),
        (&["--topic", "demo"][..], "--topic"),
        (&["--frobnicate"][..], "--frobnicate"),
    ] {
        let out = Command::new(BIN).args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(needle) && stderr.contains("usage:"),
            "{args:?}: {stderr}"
        );
        assert!(out.stdout.is_empty());
    }
}

fn kcat_available() -> bool {
    Command::new("kcat")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success())
}

#[derive(Default)]
struct Acks(Mutex<Vec<Result<(i32, i64), KafkaError>>>);

impl DeliverySink for Acks {
    fn delivered(&self, _token: u64, result: Result<Delivered<'_>, KafkaError>) {
        self.0
            .lock()
            .unwrap()
            .push(result.map(|d| (d.partition, d.offset)));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kcat_and_the_port_exchange_records_through_it() {
    if !kcat_available() {
        eprintln!("skipped: kcat is not installed (Debian package `kcat`); CI installs it");
        return;
    }
    let running = Running::start(&["--topic", "demo:2"]);
    let b = running.bootstrap.clone();

    // kcat produces with keys and a header; our consumer reads them.
    let mut kcat = Command::new("kcat")
        .args([
            "-b",
            &b,
            "-P",
            "-t",
            "demo",
            "-p",
            "0",
            "-K",
            ":",
            "-H",
            "trace=abc",
        ])
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    kcat.stdin
        .take()
        .unwrap()
        .write_all(b"k1:v1\nk2:v2\n")
        .unwrap();
    assert!(kcat.wait().unwrap().success(), "kcat produced");

    let mut base = ClientConfig::new();
    base.insert("bootstrap.servers".into(), b.clone());
    let cluster = RdKafkaCluster::new(base);
    let config = ClientConfig::from([
        ("group.id", "port"),
        ("auto.offset.reset", "earliest"),
        ("enable.auto.commit", "false"),
    ]);
    let mut consumer = cluster.consumer(&config).unwrap();
    consumer
        .subscribe(&Subscription::Topics(vec!["demo".into()]))
        .unwrap();
    let mut got = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    while got.len() < 2 {
        assert!(
            Instant::now() < deadline,
            "read {} of 2 records kcat produced",
            got.len()
        );
        if let Some(ConsumerEvent::Records(records)) =
            consumer.poll(Duration::from_millis(200)).await.unwrap()
        {
            got.extend(records);
        }
    }
    let seen: Vec<(Vec<u8>, Vec<u8>, String)> = got
        .iter()
        .map(|r| {
            let headers: Vec<String> = r
                .headers
                .iter()
                .map(|(k, v)| {
                    format!(
                        "{k}={}",
                        String::from_utf8_lossy(v.as_deref().unwrap_or_default())
                    )
                })
                .collect();
            (
                r.key.clone().unwrap().to_vec(),
                r.value.clone().unwrap().to_vec(),
                headers.join(","),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            (b"k1".to_vec(), b"v1".to_vec(), "trace=abc".to_string()),
            (b"k2".to_vec(), b"v2".to_vec(), "trace=abc".to_string())
        ]
    );

    // Our producer writes; kcat reads it back with key, value and header.
    let acks = Arc::new(Acks::default());
    let producer = cluster
        .producer(&ClientConfig::new(), acks.clone())
        .unwrap();
    let headers = vec![("x".to_string(), Some(b"y".to_vec()))];
    let record = OutRecord {
        partition: Some(1),
        key: Some(b"ours"),
        headers: &headers,
        ..OutRecord::new("demo", Some(b"hello"))
    };
    producer.send(&record, 0).unwrap();
    producer.flush(Duration::from_secs(30)).await.unwrap();
    assert_eq!(acks.0.lock().unwrap().as_slice(), &[Ok((1, 0))]);
    let out = Command::new("kcat")
        .args([
            "-b",
            &b,
            "-C",
            "-t",
            "demo",
            "-p",
            "1",
            "-o",
            "beginning",
            "-e",
            "-q",
            "-f",
            "%k|%s|%h\n",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "ours|hello|x=y\n");
}
