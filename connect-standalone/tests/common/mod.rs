//! Helpers shared by the connect-standalone tests.
#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use connect_runtime::kafka::rdkafka_adapter::RdKafkaCluster;
use connect_runtime::kafka::{ClientConfig, ConsumerEvent, KafkaCluster, Subscription};

/// How long any wait in these tests may take.
pub(crate) const DEADLINE: Duration = Duration::from_secs(45);

/// A file of the repository (the shipped configs).
pub(crate) fn repo_file(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(name)
}

/// Poll `check` until it returns `Some` (45 s deadline).
pub(crate) fn wait_for<T>(what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(v) = check() {
            return v;
        }
        assert!(start.elapsed() < DEADLINE, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The values on `topic`, read from the start through the Kafka port.
pub(crate) fn topic_values(bootstrap: &str, topic: &str, at_least: usize) -> Vec<String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut base = ClientConfig::new();
        base.insert("bootstrap.servers".into(), bootstrap.to_string());
        let cluster = RdKafkaCluster::new(base);
        let mut config = ClientConfig::new();
        config.insert(
            "group.id".into(),
            format!("demo-check-{}", std::process::id()),
        );
        config.insert("auto.offset.reset".into(), "earliest".into());
        let mut consumer = cluster.consumer(&config).unwrap();
        consumer
            .subscribe(&Subscription::Topics(vec![topic.to_string()]))
            .unwrap();
        let mut values = Vec::new();
        let start = Instant::now();
        while values.len() < at_least {
            assert!(start.elapsed() < DEADLINE, "only {values:?} on {topic}");
            if let Some(ConsumerEvent::Records(records)) =
                consumer.poll(Duration::from_millis(500)).await.unwrap()
            {
                values.extend(
                    records
                        .into_iter()
                        .filter_map(|r| r.value)
                        .map(|v| String::from_utf8_lossy(&v).into_owned()),
                );
            }
        }
        let _ = consumer.close().await;
        values
    })
}

/// A blocking HTTP/1.1 call like the seed's curl commands: (status, body).
/// Panics when the worker cannot be reached; see [`try_curl`].
pub(crate) fn curl(base: &str, method: &str, path: &str, body: &str) -> (u16, serde_json::Value) {
    try_curl(base, method, path, body).unwrap_or_else(|e| panic!("{method} {base}{path}: {e}"))
}

/// [`curl`], with an error when the worker cannot be reached (not started
/// yet, or killed).
pub(crate) fn try_curl(
    base: &str,
    method: &str,
    path: &str,
    body: &str,
) -> std::io::Result<(u16, serde_json::Value)> {
    use std::io::Read;
    let addr = base.trim_start_matches("http://");
    let mut s = std::net::TcpStream::connect(addr)?;
    s.set_read_timeout(Some(Duration::from_secs(60)))?;
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )?;
    let mut reply = String::new();
    s.read_to_string(&mut reply)?;
    let status = reply
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let payload = reply.split_once("\r\n\r\n").map(|(_, b)| b).unwrap_or("");
    Ok((
        status,
        serde_json::from_str(payload).unwrap_or(serde_json::Value::Null),
    ))
}

/// The real broker's bootstrap servers, or `None` after telling the terminal
/// (not the captured output: libtest captures only the print macros) that
/// `test` did not run.
pub(crate) fn real_bootstrap(test: &str) -> Option<String> {
    match std::env::var("KAFKA_BOOTSTRAP_SERVERS") {
        Ok(servers) if !servers.trim().is_empty() => Some(servers),
        _ => {
            let _ = writeln!(
                std::io::stderr(),
                "SKIPPED {test}: needs a real Kafka broker; start one with \
                 tools/real-kafka/broker.sh start and set KAFKA_BOOTSTRAP_SERVERS"
            );
            None
        }
    }
}

/// `-{what}-{pid}-{millis}`: names no earlier run used.
pub(crate) fn unique_suffix(what: &str) -> String {
    let millis = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis();
    format!("-{what}-{}-{millis}", std::process::id())
}
