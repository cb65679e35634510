//! The seed's file demo end to end with the real `connect-standalone`
//! binary on temporary copies of the shipped configs: lines appended to
//! test.txt reach test.sink.txt, the topic holds the JsonConverter envelope,
//! and after `kill -9` and a restart every line still reaches the sink
//! (at-least-once; duplicates only from the uncommitted window). Once on the
//! embedded Kafka (no bootstrap.servers), once on `mock-kafka` as an
//! external broker.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};

mod common;

use common::{
    curl, real_bootstrap, repo_file, topic_values, unique_suffix, wait_for, worker_config,
    worker_config_with_session,
};

/// A running `connect-standalone` whose stderr is collected.
struct Worker {
    child: Child,
    log: Arc<Mutex<Vec<String>>>,
}

impl Worker {
    /// Runs the worker in `dir` on `worker_props` and the connector configs
    /// that [`connector_configs`] wrote there.
    fn start(dir: &Path, worker_props: &Path) -> Worker {
        Self::start_with(dir, worker_props, &[])
    }

    /// [`Worker::start`] with extra environment variables.
    fn start_with(dir: &Path, worker_props: &Path, env: &[(&str, &str)]) -> Worker {
        let mut child = Command::new(env!("CARGO_BIN_EXE_connect-standalone"))
            .arg(worker_props)
            .arg(dir.join("connect-file-source.properties"))
            .arg(dir.join("connect-file-sink.properties"))
            .current_dir(dir)
            .env("RUST_LOG", "info")
            .envs(env.iter().copied())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start connect-standalone");
        let log = Arc::new(Mutex::new(Vec::new()));
        let stderr = child.stderr.take().expect("piped stderr");
        let sink = log.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                sink.lock().unwrap().push(line);
            }
        });
        Worker { child, log }
    }

    /// The first log line containing `marker`, from `marker` to the end.
    fn logged(&mut self, marker: &str) -> String {
        wait_for(&format!("'{marker}' in the worker log"), || {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!(
                    "worker exited with {status}:\n{}",
                    self.log.lock().unwrap().join("\n")
                );
            }
            let log = self.log.lock().unwrap();
            log.iter().find_map(|l| {
                l.find(marker)
                    .map(|i| l[i + marker.len()..].trim().to_string())
            })
        })
    }

    fn kill_9(mut self) {
        self.child.kill().expect("SIGKILL");
        let _ = self.child.wait();
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Copies of the shipped connector configs in `dir`; with `unique`, the
/// topic and the connector names (so the sink's group) get that suffix, so
/// runs on a long-lived broker do not meet each other's data.
fn connector_configs(dir: &Path, unique: &str) {
    for name in [
        "connect-file-source.properties",
        "connect-file-sink.properties",
    ] {
        let shipped = std::fs::read_to_string(repo_file(&format!("config/{name}"))).unwrap();
        let text: String = shipped
            .lines()
            .map(|l| match l.split_once('=') {
                Some((k @ ("name" | "topic" | "topics"), v)) => format!("{k}={v}{unique}\n"),
                _ => format!("{l}\n"),
            })
            .collect();
        std::fs::write(dir.join(name), text).unwrap();
    }
}

fn append(dir: &Path, lines: &[String]) {
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("test.txt"))
        .unwrap();
    for l in lines {
        writeln!(f, "{l}").unwrap();
    }
}

fn sink_lines(dir: &Path) -> Vec<String> {
    std::fs::read_to_string(dir.join("test.sink.txt"))
        .map(|t| t.lines().map(str::to_string).collect())
        .unwrap_or_default()
}

fn wait_for_sink(dir: &Path, expected: &[String]) -> Vec<String> {
    wait_for("every line in test.sink.txt", || {
        let got = sink_lines(dir);
        expected.iter().all(|l| got.contains(l)).then_some(got)
    })
}

/// At-least-once: each expected line is there, in order of first
/// appearance, and repeats come only from `may_repeat`.
fn assert_at_least_once(got: &[String], expected: &[String], may_repeat: &[String]) {
    let mut firsts: Vec<&String> = Vec::new();
    for l in got {
        if firsts.contains(&l) {
            assert!(
                may_repeat.contains(l),
                "'{l}' delivered twice but it was not in the uncommitted window: {got:?}"
            );
        } else {
            firsts.push(l);
        }
    }
    assert_eq!(
        firsts,
        expected.iter().collect::<Vec<_>>(),
        "lines lost or reordered"
    );
}

/// The seed's REST calls against the running worker.
fn seed_rest_calls(rest: &str, dir: &Path) {
    let (status, names) = curl(rest, "GET", "/connectors", "");
    assert_eq!(
        (status, names),
        (
            200,
            serde_json::json!(["local-file-sink", "local-file-source"])
        )
    );
    let (status, root) = curl(rest, "GET", "/", "");
    assert_eq!(status, 200);
    assert!(root["version"].is_string());
    let (_, plugins) = curl(rest, "GET", "/connector-plugins", "");
    let classes: Vec<&str> = plugins
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["class"].as_str())
        .collect();
    assert_eq!(
        classes,
        [
            "io.confluent.connect.jdbc.JdbcSinkConnector",
            "io.confluent.connect.jdbc.JdbcSourceConnector",
            "io.debezium.connector.postgresql.PostgresConnector",
            "org.apache.kafka.connect.file.FileStreamSinkConnector",
            "org.apache.kafka.connect.file.FileStreamSourceConnector"
        ]
    );
    let (status, s) = curl(rest, "GET", "/connectors/local-file-source/status", "");
    assert_eq!(
        (status, s["connector"]["state"].as_str()),
        (200, Some("RUNNING"))
    );
    assert_eq!(s["tasks"][0]["state"], "RUNNING", "{s}");
    let (status, tasks) = curl(rest, "GET", "/connectors/local-file-source/tasks", "");
    assert_eq!(
        (status, tasks[0]["config"]["file"].as_str()),
        (200, Some("test.txt"))
    );
    let (_, config) = curl(rest, "GET", "/connectors/local-file-sink/config", "");
    assert_eq!(config["topics"], "connect-test");

    std::fs::write(dir.join("demo-file.txt"), "").unwrap();
    let create = r#"{"name": "file-stream-demo-distributed", "config": {"connector.class":"org.apache.kafka.connect.file.FileStreamSourceConnector", "key.converter.schemas.enable":"true", "file":"demo-file.txt", "tasks.max":"1", "value.converter.schemas.enable":"true", "name":"file-stream-demo-distributed", "topic":"demo-distributed", "value.converter":"org.apache.kafka.connect.json.JsonConverter", "key.converter":"org.apache.kafka.connect.json.JsonConverter"}}"#;
    let (status, info) = curl(rest, "POST", "/connectors", create);
    assert_eq!(status, 201, "{info}");
    assert_eq!(info["type"], "source");
    let update = r#"{"connector.class":"org.apache.kafka.connect.file.FileStreamSourceConnector", "key.converter.schemas.enable":"true", "file":"demo-file.txt", "tasks.max":"2", "value.converter.schemas.enable":"true", "name":"file-stream-demo-distributed", "topic":"demo-2-distributed", "value.converter":"org.apache.kafka.connect.json.JsonConverter", "key.converter":"org.apache.kafka.connect.json.JsonConverter"}"#;
    let (status, info) = curl(
        rest,
        "PUT",
        "/connectors/file-stream-demo-distributed/config",
        update,
    );
    assert_eq!(
        (status, info["config"]["topic"].as_str()),
        (200, Some("demo-2-distributed"))
    );
    assert_eq!(
        curl(
            rest,
            "PUT",
            "/connectors/file-stream-demo-distributed/pause",
            ""
        )
        .0,
        202
    );
    assert_eq!(
        curl(
            rest,
            "PUT",
            "/connectors/file-stream-demo-distributed/resume",
            ""
        )
        .0,
        202
    );
    assert_eq!(
        curl(
            rest,
            "DELETE",
            "/connectors/file-stream-demo-distributed",
            ""
        )
        .0,
        204
    );
    assert_eq!(
        curl(rest, "GET", "/connectors/file-stream-demo-distributed", "").0,
        404
    );
}

fn lines(prefix: &str, n: usize) -> Vec<String> {
    (1..=n).map(|i| format!("{prefix} line {i}")).collect()
}

/// The demo: start, append, see the sink and the topic, kill -9, append
/// more, restart, see every line.
///
/// `unique` is appended to the topic and connector names (see
/// [`connector_configs`]).
fn demo(external: Option<&str>, unique: &str) {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let props = worker_config(dir, external);
    connector_configs(dir, unique);
    let topic = format!("connect-test{unique}");

    let mut worker = Worker::start(dir, &props);
    let bootstrap = match external {
        Some(b) => b.to_string(),
        None => worker.logged("bootstrap.servers="),
    };
    let rest = worker.logged("REST API listening on ");
    assert!(rest.starts_with("http://127.0.0.1:"), "{rest}");

    let mut first = vec!["firest line".to_string(), "second line".to_string()];
    first.extend(lines("before crash", 8));
    append(dir, &first);
    let got = wait_for_sink(dir, &first);
    assert_at_least_once(&got, &first, &[]);

    if external.is_none() {
        seed_rest_calls(&rest, dir);
    }

    let values = topic_values(&bootstrap, &topic, first.len());
    assert_eq!(
        values[0],
        r#"{"schema":{"type":"string","optional":false},"payload":"firest line"}"#
    );
    assert_eq!(
        values[1],
        r#"{"schema":{"type":"string","optional":false},"payload":"second line"}"#
    );

    worker.kill_9();
    let second = lines("after crash", 10);
    append(dir, &second);
    let mut worker = Worker::start(dir, &props);
    worker.logged("worker started");
    let all: Vec<String> = first.iter().chain(&second).cloned().collect();
    let got = wait_for_sink(dir, &all);
    assert_at_least_once(&got, &all, &first);
    if external.is_some() {
        // The topic outlived the crash: rewind the sink (KIP-875) and see
        // the topic delivered again from the start.
        let rest = worker.logged("REST API listening on ");
        rewind_sink(&rest, dir, unique);
    }
    drop(worker);
}

/// Stop the sink, set its offset to 0, resume: "firest line" arrives again.
fn rewind_sink(rest: &str, dir: &Path, unique: &str) {
    let sink = format!("/connectors/local-file-sink{unique}");
    let topic = format!("connect-test{unique}");
    assert_eq!(curl(rest, "PUT", &format!("{sink}/stop"), "").0, 204);
    let (status, offsets) = curl(rest, "GET", &format!("{sink}/offsets"), "");
    assert_eq!(status, 200);
    assert_eq!(
        offsets["offsets"][0]["partition"],
        serde_json::json!({"kafka_topic": topic, "kafka_partition": 0})
    );
    let body = serde_json::json!({"offsets": [{
        "partition": {"kafka_topic": topic, "kafka_partition": 0},
        "offset": {"kafka_offset": 0}
    }]})
    .to_string();
    let (status, reply) = curl(rest, "PATCH", &format!("{sink}/offsets"), &body);
    assert_eq!(status, 200, "{reply}");
    let (_, offsets) = curl(rest, "GET", &format!("{sink}/offsets"), "");
    assert_eq!(
        offsets["offsets"][0]["offset"],
        serde_json::json!({"kafka_offset": 0})
    );
    assert_eq!(curl(rest, "PUT", &format!("{sink}/resume"), "").0, 202);
    wait_for("the rewound sink to write the first line again", || {
        (sink_lines(dir)
            .iter()
            .filter(|l| *l == "firest line")
            .count()
            >= 2)
            .then_some(())
    });
}

#[test]
fn file_demo_on_the_embedded_kafka() {
    demo(None, "");
}

/// `CONNECT_LOG_FORMAT=json`: every line is a JSON object, and a task's
/// lines carry its connector and task number.
#[test]
fn json_logs_carry_the_connector_and_the_task() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let props = worker_config(dir, None);
    connector_configs(dir, "");
    let worker = Worker::start_with(dir, &props, &[("CONNECT_LOG_FORMAT", "json")]);
    let assigned: serde_json::Value = wait_for("the sink's assignment in the log", || {
        let log = worker.log.lock().unwrap();
        log.iter()
            .find(|l| l.contains("partitions assigned"))
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
    });
    assert_eq!(assigned["level"], "INFO", "{assigned}");
    assert_eq!(
        assigned["fields"]["message"], "partitions assigned",
        "{assigned}"
    );
    assert_eq!(
        assigned["span"]["connector"], "local-file-sink",
        "{assigned}"
    );
    assert_eq!(assigned["span"]["task"], 0, "{assigned}");
    let log = worker.log.lock().unwrap();
    for line in log.iter() {
        assert!(
            serde_json::from_str::<serde_json::Value>(line).is_ok(),
            "not JSON: {line}"
        );
    }
}

#[test]
fn file_demo_on_mock_kafka_as_external_broker() {
    // The `mock-kafka` binary when it was built next to connect-standalone,
    // else the same mock cluster started in this process.
    let exe = Path::new(env!("CARGO_BIN_EXE_connect-standalone"))
        .with_file_name(format!("mock-kafka{}", std::env::consts::EXE_SUFFIX));
    if exe.exists() {
        let mut child = Command::new(&exe)
            .args(["--topic", "connect-test:1"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start mock-kafka");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let bootstrap = line
            .trim()
            .strip_prefix("bootstrap.servers=")
            .map(str::to_string);
        let result = std::panic::catch_unwind(|| {
            demo(
                Some(bootstrap.as_deref().expect("bootstrap.servers line")),
                "",
            )
        });
        let _ = child.kill();
        let _ = child.wait();
        if let Err(p) = result {
            std::panic::resume_unwind(p);
        }
    } else {
        let kafka =
            connect_runtime::kafka::rdkafka_adapter::MockKafka::start(1, &[("connect-test", 1)])
                .unwrap();
        demo(Some(kafka.bootstrap_servers()), "");
    }
}

#[test]
fn file_demo_on_real_kafka() {
    let Some(bootstrap) = real_bootstrap("standalone_demo::file_demo_on_real_kafka") else {
        return;
    };
    // Names unique to this run: the broker keeps topics and groups.
    demo(Some(&bootstrap), &unique_suffix("demo"));
}

/// 20 times: start the worker, append lines, `kill -9` it at a moment that
/// varies (before it read them, while the sink writes, after); then a last
/// start. Every line reaches the sink, in order of first appearance.
#[test]
fn twenty_kill_9_and_restart_cycles_on_real_kafka_lose_no_line() {
    let test = "twenty_kill_9_and_restart_cycles_on_real_kafka_lose_no_line";
    let Some(bootstrap) = real_bootstrap(&format!("standalone_demo::{test}")) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    // The test broker allows 1 s sessions; a killed sink then blocks the
    // next start's rebalance for 2 s instead of 6.
    let props = worker_config_with_session(dir, Some(&bootstrap), 2000);
    connector_configs(dir, &unique_suffix("kill9"));
    let mut expected = Vec::new();
    for cycle in 0..20 {
        let mut worker = Worker::start(dir, &props);
        worker.logged("worker started");
        let new = lines(&format!("cycle {cycle}"), 5);
        append(dir, &new);
        expected.extend(new);
        match cycle % 4 {
            0 => {} // at once: the source may not have read the lines
            1 => {
                wait_for_sink(dir, &expected);
            }
            // Somewhere in between; a sleep only picks the moment of the
            // kill, nothing is asserted after it.
            n => std::thread::sleep(std::time::Duration::from_millis(150 * n + 40 * cycle)),
        }
        worker.kill_9();
    }
    let mut worker = Worker::start(dir, &props);
    worker.logged("worker started");
    let got = wait_for_sink(dir, &expected);
    // Repeats are allowed anywhere: every cycle ended in a crash.
    assert_at_least_once(&got, &expected, &expected);
    drop(worker);
}
