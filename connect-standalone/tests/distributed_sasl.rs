//! SASL/PLAIN (`SASL_PLAINTEXT`) end to end on a real Kafka broker: two
//! `connect-distributed` processes configured with Kafka's worker keys
//! (`security.protocol`, `sasl.mechanism`, `sasl.jaas.config`) join one
//! group through the broker's SASL listener, a FileStreamSource and a
//! FileStreamSink move lines through it, and a worker with a wrong password
//! fails to start with an error naming `sasl.jaas.config`.
//!
//! Runs its own broker (`tools/real-kafka/broker.sh start --sasl`), only
//! when `KAFKA_BOOTSTRAP_SERVERS` says real-broker tests are wanted.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod common;

use common::{real_bootstrap, try_curl, unique_suffix};
use serde_json::Value;

const LINES: usize = 300;

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

fn jaas(user: &str, password: &str) -> String {
    format!(
        "org.apache.kafka.common.security.plain.PlainLoginModule required username=\"{user}\" password=\"{password}\";"
    )
}

/// A worker process; killed when dropped.
struct Node {
    port: u16,
    child: Child,
    log: PathBuf,
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Node {
    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

/// The broker of this test, stopped when dropped.
struct Broker {
    script: PathBuf,
    dir: tempfile::TempDir,
}

impl Drop for Broker {
    fn drop(&mut self) {
        let _ = Command::new(&self.script)
            .args(["stop", "--dir", self.dir.path().to_str().unwrap()])
            .output();
    }
}

fn write_props(
    dir: &Path,
    name: &str,
    sasl_bootstrap: &str,
    unique: &str,
    port: u16,
    password: &str,
) -> PathBuf {
    let path = dir.join(format!("{name}.properties"));
    std::fs::write(
        &path,
        format!(
            "bootstrap.servers={sasl_bootstrap}\ngroup.id=sasl{unique}\n\
             security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.jaas.config={}\n\
             config.storage.topic=configs{unique}\noffset.storage.topic=offsets{unique}\nstatus.storage.topic=status{unique}\n\
             config.storage.replication.factor=1\noffset.storage.replication.factor=1\nstatus.storage.replication.factor=1\n\
             offset.storage.partitions=5\nstatus.storage.partitions=3\n\
             key.converter=org.apache.kafka.connect.json.JsonConverter\nvalue.converter=org.apache.kafka.connect.json.JsonConverter\n\
             offset.flush.interval.ms=500\nlisteners=http://127.0.0.1:{port}\n\
             session.timeout.ms=6000\nheartbeat.interval.ms=1000\nscheduled.rebalance.max.delay.ms=3000\n",
            jaas("alice", password)
        ),
    )
    .unwrap();
    path
}

fn spawn(dir: &Path, props: &Path, log: &Path) -> Child {
    Command::new(env!("CARGO_BIN_EXE_connect-distributed"))
        .arg(props)
        .current_dir(dir)
        .env("RUST_LOG", "info,connect_distributed=debug")
        .env("NO_COLOR", "1")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(log).unwrap())
        .spawn()
        .expect("start connect-distributed")
}

fn wait<T>(nodes: &[&Node], what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        if let Some(v) = check() {
            return v;
        }
        if Instant::now() > deadline {
            let mut report = format!("timed out waiting for {what}\n");
            for (i, n) in nodes.iter().enumerate() {
                let text = n.log_text();
                let tail: Vec<&str> = text.lines().rev().take(40).collect();
                report.push_str(&format!("--- worker {i} log tail ---\n"));
                for l in tail.into_iter().rev() {
                    report.push_str(l);
                    report.push('\n');
                }
            }
            panic!("{report}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn sasl_plain_workers_join_and_move_lines_and_a_wrong_password_fails_on_real_kafka() {
    let test = "distributed_sasl::sasl_plain_workers_join_and_move_lines_and_a_wrong_password_fails_on_real_kafka";
    if real_bootstrap(test).is_none() {
        return;
    }
    let broker = Broker {
        script: common::repo_file("tools/real-kafka/broker.sh"),
        dir: tempfile::tempdir().unwrap(),
    };
    let out = Command::new(&broker.script)
        .args([
            "start",
            "--sasl",
            "--dir",
            broker.dir.path().to_str().unwrap(),
            "--owner",
            &std::process::id().to_string(),
        ])
        .output()
        .expect("run broker.sh");
    assert!(
        out.status.success(),
        "broker.sh start --sasl: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let sasl = String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| {
            l.strip_prefix("sasl.bootstrap.servers=")
                .map(str::to_string)
        })
        .expect("broker.sh prints sasl.bootstrap.servers=");
    eprintln!("SASL listener at {sasl}");

    let dir = tempfile::tempdir().unwrap();
    let unique = unique_suffix("sasl");
    let input: String = (0..LINES).map(|i| format!("sasl line {i}\n")).collect();
    std::fs::write(dir.path().join("in.txt"), &input).unwrap();

    // Two workers, one group, through the SASL listener only.
    let nodes: Vec<Node> = (0..2)
        .map(|i| {
            let port = free_port();
            let props = write_props(
                dir.path(),
                &format!("worker-{i}"),
                &sasl,
                &unique,
                port,
                "alice-secret",
            );
            let log = dir.path().join(format!("worker-{i}.log"));
            Node {
                port,
                child: spawn(dir.path(), &props, &log),
                log,
            }
        })
        .collect();
    let all: Vec<&Node> = nodes.iter().collect();
    for n in &nodes {
        wait(&all, "the worker's REST API", || {
            try_curl(&n.url(), "GET", "/", "")
                .ok()
                .filter(|(s, _)| *s == 200)
        });
    }
    wait(&all, "both workers joined the group", || {
        nodes
            .iter()
            .all(|n| n.log_text().contains("joined the Connect group"))
            .then_some(())
    });
    let topic = format!("lines{unique}");
    for (name, config) in [
        (
            "source",
            serde_json::json!({"connector.class": "FileStreamSource", "file": dir.path().join("in.txt"), "topic": topic}),
        ),
        (
            "sink",
            serde_json::json!({"connector.class": "FileStreamSink", "file": dir.path().join("out.txt"), "topics": topic}),
        ),
    ] {
        let body = serde_json::json!({"name": name, "config": config}).to_string();
        // 409 while the group has no leader yet: ask again.
        wait(&all, &format!("creating {name}"), || {
            match try_curl(&nodes[1].url(), "POST", "/connectors", &body) {
                Ok((201, _)) => Some(()),
                Ok((409, _)) | Err(_) => None,
                Ok((s, v)) => panic!("creating {name}: {s} {v}"),
            }
        });
    }
    let expected: Vec<String> = (0..LINES).map(|i| format!("sasl line {i}")).collect();
    wait(&all, "every line in the sink file", || {
        let got = std::fs::read_to_string(dir.path().join("out.txt")).unwrap_or_default();
        let got: std::collections::BTreeSet<&str> = got.lines().collect();
        expected
            .iter()
            .all(|l| got.contains(l.as_str()))
            .then_some(())
    });
    // Both workers are members of one group: the status names the workers
    // that run the units, and every worker sees both connectors.
    for n in &nodes {
        let (status, list) = try_curl(&n.url(), "GET", "/connectors", "").unwrap();
        assert_eq!(status, 200);
        let mut names: Vec<String> = list
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect();
        names.sort();
        assert_eq!(names, ["sink", "source"]);
    }
    let (_, status) = try_curl(&nodes[0].url(), "GET", "/connectors/source/status", "").unwrap();
    assert_eq!(
        status["connector"]["state"],
        Value::from("RUNNING"),
        "{status}"
    );
    eprintln!("{LINES} lines moved end to end over SASL_PLAINTEXT by two workers");

    // A worker with a wrong password does not start, and says why.
    let port = free_port();
    let props = write_props(
        dir.path(),
        "wrong",
        &sasl,
        &unique,
        port,
        "not-the-password",
    );
    let log = dir.path().join("wrong.log");
    let mut child = spawn(dir.path(), &props, &log);
    let deadline = Instant::now() + Duration::from_secs(90);
    let code = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!(
                "a worker with a wrong password is still running after 90 s:\n{}",
                std::fs::read_to_string(&log).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let stderr = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(!code.success(), "exit {code:?}\n{stderr}");
    assert!(
        stderr.contains("sasl.jaas.config") && !stderr.contains("not-the-password"),
        "{stderr}"
    );
    eprintln!("a wrong password: exit {code:?}, stderr names sasl.jaas.config");
    drop(nodes);
    drop(broker);
}
