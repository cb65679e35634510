//! Interoperability on a real broker: ONE Apache Kafka Connect 4.4
//! distributed worker (`ConnectDistributed`, built by `tools/connect-java`)
//! and TWO of ours (`connect-distributed`) in one Connect group, on the same
//! three internal topics, with the JSON converter (schemas enabled). Two
//! scenarios (run in parallel, each its own group and topics): the Java
//! worker starts first and leads (ours hand it their task configs, signed,
//! and the kill takes the leader away), or ours start first and lead (the
//! Java worker hands its task configs to ours).
//!
//! In order, each with a polling deadline:
//! 1. the three workers join one group (the same generation in all logs,
//!    `GET /connectors` answers everywhere, the expected leader, no ERROR in
//!    any log);
//! 2. FileStreamSources created through the Java worker's REST (and one
//!    through ours) and FileStreamSinks created through ours move every line
//!    of the source files into the sink files, wherever the leader put them;
//! 3. `GET /connectors/{c}/status` is identical on all three workers (worker
//!    ids and plugin versions included);
//! 4. the Java worker is killed with SIGKILL: its connectors and tasks move
//!    to ours (timed), lines appended afterwards arrive too, and a source
//!    task that ran on Java resumes from Java's committed offsets (its file
//!    does not arrive twice);
//! 5. connectors created through our REST run on the Java worker (checked
//!    through the status's worker ids before the kill; the leader decides,
//!    so a run where none does says so and only asserts that Java ran work).
//!
//! Two more scenarios (the same two orders) run exactly-once sources
//! (KIP-618) on all three workers and count the topic with a
//! `read_committed` reader: see `eos_scenario`.
//!
//! Differences from Java seen here (not asserted; they do not break the
//! mixed cluster):
//! - none in who writes what: like Java's, our REST forwards leader-only
//!   writes (`POST /connectors`, config changes, delete, stop, restart,
//!   offsets) to the leader with `forward=true`, and task configs go to the
//!   leader both ways (`POST /connectors/{c}/tasks?forward=true`, signed,
//!   204 in Java's log);
//! - our tasks have no `version()`: task statuses carry their connector's
//!   version, where Java writes the task's (the same for FileStream).
//!
//! Prints a timeline (scenario, seconds since its start, event). Skips loudly
//! (`SKIPPED`) without `KAFKA_BOOTSTRAP_SERVERS`; without Java or Maven too,
//! unless `CONFORMANCE_REQUIRE_JAVA=1` (CI), which makes that a failure. On a
//! failure the tail of every worker's log is printed and the run directory
//! (the Java worker's `java/connect.log` included) is kept;
//! `DISTRIBUTED_INTEROP_KEEP=1` keeps it after a success too.

mod common;

use common::{free_port, java_project};

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use connect_runtime::kafka::rdkafka_adapter::RdKafkaCluster;
use connect_runtime::kafka::{ClientConfig, KafkaCluster, NewTopic};
use serde_json::{json, Value as Json};

/// `eprintln!` that libtest does not capture.
macro_rules! say {
    ($($arg:tt)*) => {{
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

const JSON_CONVERTER: &str = "org.apache.kafka.connect.json.JsonConverter";
/// Lines in each source file before the kill, and appended after it.
const FIRST: usize = 200;
const SECOND: usize = 100;

// ---------------------------------------------------------------------------
// Skipping

fn banner(line: &str) {
    say!("==================================================================");
    say!("{line}");
    say!("==================================================================");
}

/// Skip (or, with `CONFORMANCE_REQUIRE_JAVA`, fail) for want of Java.
fn skip_java(why: &str) {
    assert!(
        std::env::var_os("CONFORMANCE_REQUIRE_JAVA").is_none(),
        "CONFORMANCE_REQUIRE_JAVA is set but the distributed interop test cannot run: {why}"
    );
    banner(&format!(
        "SKIPPED distributed_interop: Kafka Connect 4.4's Java worker is not available: {why}"
    ));
}

// ---------------------------------------------------------------------------
// HTTP (one request per connection)

struct Reply {
    status: u16,
    body: Json,
    text: String,
}

fn http(base: &str, method: &str, path: &str, body: Option<&Json>) -> Option<Reply> {
    let addr = base.trim_start_matches("http://").trim_end_matches('/');
    let mut stream = TcpStream::connect(addr).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_secs(90)))
        .ok()?;
    let payload = body.map(|b| b.to_string()).unwrap_or_default();
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nAccept: application/json\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{payload}",
        payload.len()
    );
    stream.write_all(request.as_bytes()).ok()?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).ok()?;
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, rest) = text.split_once("\r\n\r\n")?;
    let mut lines = head.lines();
    let status: u16 = lines.next()?.split(' ').nth(1)?.parse().ok()?;
    let chunked = lines.any(|l| {
        let l = l.to_ascii_lowercase();
        l.starts_with("transfer-encoding:") && l.contains("chunked")
    });
    let text = if chunked {
        connect_test_support::dechunk(rest)
    } else {
        rest.to_string()
    };
    let body = serde_json::from_str(&text).unwrap_or(Json::Null);
    Some(Reply { status, body, text })
}

// ---------------------------------------------------------------------------
// Workers

struct Worker {
    name: &'static str,
    child: Child,
    url: String,
    /// The worker id Connect reports: the advertised `host:port`.
    id: String,
    log: PathBuf,
    java: bool,
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The worker properties every member of the group shares, plus `port`.
fn worker_props(bootstrap: &str, run: &str, port: u16) -> String {
    format!(
        "bootstrap.servers={bootstrap}\n\
         group.id={run}\n\
         config.storage.topic={run}-configs\n\
         offset.storage.topic={run}-offsets\n\
         status.storage.topic={run}-status\n\
         config.storage.replication.factor=1\n\
         offset.storage.replication.factor=1\n\
         status.storage.replication.factor=1\n\
         offset.storage.partitions=5\n\
         status.storage.partitions=3\n\
         key.converter={JSON_CONVERTER}\n\
         value.converter={JSON_CONVERTER}\n\
         key.converter.schemas.enable=true\n\
         value.converter.schemas.enable=true\n\
         offset.flush.interval.ms=1000\n\
         scheduled.rebalance.max.delay.ms=2000\n\
         session.timeout.ms=6000\n\
         heartbeat.interval.ms=1000\n\
         consumer.session.timeout.ms=6000\n\
         consumer.heartbeat.interval.ms=1000\n\
         listeners=http://127.0.0.1:{port}\n\
         rest.advertised.host.name=127.0.0.1\n\
         rest.advertised.port={port}\n"
    )
}

fn start_java(project: &Path, dir: &Path, props: &str, port: u16) -> Worker {
    let logs = dir.join("java");
    std::fs::create_dir_all(&logs).unwrap();
    let file = logs.join("worker.properties");
    std::fs::write(&file, props).unwrap();
    let child = common::spawn_java_connect(project, &file, &logs);
    Worker {
        name: "java",
        child,
        url: format!("http://127.0.0.1:{port}"),
        id: format!("127.0.0.1:{port}"),
        log: logs.join("connect.log"),
        java: true,
    }
}

fn start_ours(name: &'static str, dir: &Path, props: &str, port: u16) -> Worker {
    let file = dir.join(format!("{name}.properties"));
    std::fs::write(&file, props).unwrap();
    let log = dir.join(format!("{name}.log"));
    let out = std::fs::File::create(&log).unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_connect-distributed"))
        .arg(&file)
        .env("RUST_LOG", "info,connect_distributed=debug")
        .stdin(Stdio::null())
        .stdout(out.try_clone().unwrap())
        .stderr(out)
        .spawn()
        .expect("start connect-distributed");
    Worker {
        name,
        child,
        url: format!("http://127.0.0.1:{port}"),
        id: format!("127.0.0.1:{port}"),
        log,
        java: false,
    }
}

/// The last generation a worker's log says it joined at.
fn joined_generation(w: &Worker) -> Option<i64> {
    let log = std::fs::read_to_string(&w.log).ok()?;
    let mut last = None;
    for line in log.lines() {
        let number = if w.java {
            // "Joined group at generation 3 with protocol version 2 and got assignment: ..."
            line.split_once("Joined group at generation ")
                .and_then(|(_, r)| r.split(' ').next())
        } else if line.contains("joined the Connect group") {
            line.split_once("generation=")
                .and_then(|(_, r)| r.split(|c: char| !c.is_ascii_digit()).next())
        } else {
            None
        };
        if let Some(n) = number.and_then(|n| n.parse().ok()) {
            last = Some(n);
        }
    }
    last
}

fn error_lines(w: &Worker) -> Vec<String> {
    let log = std::fs::read_to_string(&w.log).unwrap_or_default();
    log.lines()
        .filter(|l| {
            if w.java {
                l.contains("] ERROR ")
            } else {
                l.contains(" ERROR ")
            }
        })
        .map(str::to_string)
        .collect()
}

// ---------------------------------------------------------------------------
// The run: timeline, waits, and the tails printed on failure

struct Run {
    label: &'static str,
    started: Instant,
    dir: PathBuf,
    logs: Vec<(String, PathBuf)>,
    failed: AtomicBool,
}

impl Run {
    fn event(&self, what: impl AsRef<str>) {
        say!(
            "[{} {:6.1} s] {}",
            self.label,
            self.started.elapsed().as_secs_f64(),
            what.as_ref()
        );
    }

    fn fail(&self, what: impl AsRef<str>) -> ! {
        self.failed.store(true, Ordering::SeqCst);
        self.event(format!("FAILED: {}", what.as_ref()));
        self.dump_logs();
        panic!("{}", what.as_ref());
    }

    fn check(&self, ok: bool, what: impl FnOnce() -> String) {
        if !ok {
            self.fail(what());
        }
    }

    fn dump_logs(&self) {
        for (name, path) in &self.logs {
            let text = std::fs::read_to_string(path).unwrap_or_default();
            // Not the REST access log: every poll of the test is a line.
            let lines: Vec<&str> = text
                .lines()
                .filter(|l| !l.ends_with("(org.apache.kafka.connect.runtime.rest.RestServer)"))
                .collect();
            let from = lines.len().saturating_sub(60);
            say!("----- tail of {name}'s log ({}) -----", path.display());
            for l in &lines[from..] {
                say!("{l}");
            }
        }
        say!(
            "----- the run directory (worker logs, the Java worker's java/connect.log, the files) is kept: {}",
            self.dir.display()
        );
    }

    /// Poll `check` (every 200 ms) until it returns `Some`, or fail after
    /// `limit` with the last `Err` description.
    fn wait<T>(
        &self,
        what: &str,
        limit: Duration,
        mut check: impl FnMut() -> Result<T, String>,
    ) -> T {
        let start = Instant::now();
        loop {
            match check() {
                Ok(v) => return v,
                Err(last) => {
                    if start.elapsed() > limit {
                        self.fail(format!(
                            "timed out after {limit:?} waiting for {what}: {last}"
                        ));
                    }
                }
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

// ---------------------------------------------------------------------------
// Connectors and files

/// The data topic, with one partition (the sink files keep the order).
fn create_topic(bootstrap: &str, topic: &str) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut base = ClientConfig::new();
        base.insert("bootstrap.servers".into(), bootstrap.to_string());
        let admin = RdKafkaCluster::new(base)
            .admin(&ClientConfig::new())
            .expect("admin client");
        admin
            .create_topic(&NewTopic::new(topic, 1), Duration::from_secs(30))
            .await
            .expect("create the data topic");
    });
}

fn write_lines(path: &Path, prefix: &str, from: usize, to: usize, append: bool) {
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(append)
        .write(true)
        .truncate(!append)
        .open(path)
        .unwrap();
    for i in from..to {
        writeln!(f, "{prefix}-line-{i:05}").unwrap();
    }
}

/// How often each line occurs in a sink file.
fn counts(path: &Path) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for l in std::fs::read_to_string(path).unwrap_or_default().lines() {
        *out.entry(l.to_string()).or_insert(0) += 1;
    }
    out
}

fn expected(prefixes: &[String], to: usize) -> BTreeSet<String> {
    prefixes
        .iter()
        .flat_map(|p| (0..to).map(move |i| format!("{p}-line-{i:05}")))
        .collect()
}

fn missing_in(path: &Path, want: &BTreeSet<String>) -> Result<BTreeMap<String, usize>, String> {
    let got = counts(path);
    let missing: Vec<&String> = want.iter().filter(|l| !got.contains_key(*l)).collect();
    if missing.is_empty() {
        Ok(got)
    } else {
        Err(format!(
            "{} has {} distinct lines, {} of {} expected are missing (first: {:?})",
            path.display(),
            got.len(),
            missing.len(),
            want.len(),
            missing.first()
        ))
    }
}

fn create(run: &Run, via: &Worker, name: &str, config: Json) {
    let body = json!({ "name": name, "config": config });
    let reply = run.wait(
        &format!("POST /connectors {name} through {}", via.name),
        Duration::from_secs(60),
        || match http(&via.url, "POST", "/connectors", Some(&body)) {
            Some(r) if r.status == 201 => Ok(r),
            // 409: a rebalance is under way; Java says retry.
            Some(r) if r.status == 409 || r.status >= 500 => {
                Err(format!("{} {}", r.status, r.text))
            }
            Some(r) => run.fail(format!(
                "POST /connectors {name} through {}: {} {}",
                via.name, r.status, r.text
            )),
            None => Err("no answer".into()),
        },
    );
    run.event(format!(
        "created {name} through {}'s REST ({})",
        via.name, reply.status
    ));
}

/// A connector's status as `GET /connectors/{c}/status` gives it, tasks
/// sorted by id.
fn status(w: &Worker, name: &str) -> Result<Json, String> {
    match http(&w.url, "GET", &format!("/connectors/{name}/status"), None) {
        Some(r) if r.status == 200 => {
            let mut s = r.body;
            if let Some(tasks) = s.get_mut("tasks").and_then(Json::as_array_mut) {
                tasks.sort_by_key(|t| t["id"].as_i64());
            }
            Ok(s)
        }
        Some(r) => Err(format!("{}: {} {}", w.name, r.status, r.text)),
        None => Err(format!("{}: no answer", w.name)),
    }
}

/// Every unit (the connector and each task) RUNNING, with `tasks` tasks.
fn all_running(s: &Json, tasks: usize) -> Result<(), String> {
    let t = s["tasks"].as_array().map(Vec::len).unwrap_or(0);
    let running = s["connector"]["state"] == "RUNNING"
        && t == tasks
        && s["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t["state"] == "RUNNING");
    if running {
        Ok(())
    } else {
        Err(format!("not all RUNNING: {s}"))
    }
}

/// `name`'s status once it is the same on all `workers`, every unit
/// RUNNING with one task.
fn settled(run: &Run, workers: &[&Worker], name: &str) -> Json {
    let s = run.wait(
        &format!("the same RUNNING status of {name} on all live workers"),
        Duration::from_secs(60),
        || {
            let all: Vec<Json> = workers
                .iter()
                .map(|w| status(w, name))
                .collect::<Result<_, _>>()?;
            all_running(&all[0], 1)?;
            if all.iter().all(|s| *s == all[0]) {
                Ok(all[0].clone())
            } else {
                let seen: Vec<String> = workers
                    .iter()
                    .zip(&all)
                    .map(|(w, s)| format!("{} {s}", w.name))
                    .collect();
                Err(seen.join(" / "))
            }
        },
    );
    run.event(format!(
        "{name}: identical status everywhere, connector/task on {:?}",
        worker_ids(&s)
    ));
    s
}

/// The worker ids of a status: the connector's, then each task's.
fn worker_ids(s: &Json) -> Vec<String> {
    std::iter::once(&s["connector"])
        .chain(s["tasks"].as_array().into_iter().flatten())
        .map(|u| u["worker_id"].as_str().unwrap_or("?").to_string())
        .collect()
}

fn units_on(s: &Json, worker: &str) -> Vec<String> {
    let mut out = Vec::new();
    if s["connector"]["worker_id"] == worker {
        out.push(format!("{} (connector)", s["name"].as_str().unwrap_or("?")));
    }
    for t in s["tasks"].as_array().into_iter().flatten() {
        if t["worker_id"] == worker {
            out.push(format!("{}-{}", s["name"].as_str().unwrap_or("?"), t["id"]));
        }
    }
    out
}

// ---------------------------------------------------------------------------

/// The Java worker starts (and leads: the first member stays the leader)
/// before ours join; ours hand their task configs to it, signed; the
/// kill takes the leader away.
#[test]
fn java_leads_ours_follow_then_java_dies() {
    scenario(Order::JavaFirst);
}

/// Ours form the group and one of them leads; the Java worker joins as a
/// follower and hands its task configs to our leader.
#[test]
fn ours_lead_java_follows_then_java_dies() {
    scenario(Order::OursFirst);
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Order {
    JavaFirst,
    OursFirst,
}

/// The three workers of a scenario in one group, the data topic, and the
/// run's timeline.
struct Group {
    run: Run,
    bootstrap: String,
    java: Worker,
    a: Worker,
    b: Worker,
    dir: PathBuf,
    topic: String,
    nonce: u128,
    /// The name of the worker that led the first generation.
    leader: &'static str,
    /// How long the three took to join one generation.
    join_time: Duration,
}

/// Start the Java worker and two of ours in `order`, each with the shared
/// properties plus `extra`, and wait until they form one group (step 1 of
/// every scenario). `None` when the test is skipped.
fn form_group(order: Order, extra: &str) -> Option<Group> {
    let bootstrap = match std::env::var("KAFKA_BOOTSTRAP_SERVERS") {
        Ok(s) if !s.trim().is_empty() => s,
        _ => {
            banner(
                "SKIPPED distributed_interop: needs a real Kafka broker; start one with \
                 tools/real-kafka/broker.sh start and set KAFKA_BOOTSTRAP_SERVERS",
            );
            return None;
        }
    };
    let project = match java_project() {
        Ok(p) => p,
        Err(why) => {
            skip_java(&why);
            return None;
        }
    };
    let nonce = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_micros();
    let label = match (order, extra.is_empty()) {
        (Order::JavaFirst, true) => "java-leads",
        (Order::OursFirst, true) => "ours-lead",
        (Order::JavaFirst, false) => "eos-java-leads",
        (Order::OursFirst, false) => "eos-ours-lead",
    };
    let tag = format!("interop-{label}-{}-{nonce}", std::process::id());
    let dir = std::env::temp_dir().join(&tag);
    std::fs::create_dir_all(&dir).unwrap();
    let topic = format!("{tag}-data");
    create_topic(&bootstrap, &topic);

    let (p_java, p_a, p_b) = (free_port(), free_port(), free_port());
    let props = |port| worker_props(&bootstrap, &tag, port) + extra;
    let run = Run {
        label,
        started: Instant::now(),
        dir: dir.clone(),
        logs: vec![
            ("java".into(), dir.join("java/connect.log")),
            ("java (stdout)".into(), dir.join("java/java.out")),
            ("ours-a".into(), dir.join("ours-a.log")),
            ("ours-b".into(), dir.join("ours-b.log")),
        ],
        failed: AtomicBool::new(false),
    };
    run.event(format!("run directory {}", dir.display()));
    let first_joined = |w: &Worker| {
        run.wait(
            &format!("{} to join the group", w.name),
            Duration::from_secs(120),
            || joined_generation(w).ok_or_else(|| "no join in its log yet".to_string()),
        );
        run.event(format!("{} ({}) joined the group", w.name, w.id));
    };
    let (java, a, b) = match order {
        Order::JavaFirst => {
            let java = start_java(&project, &dir, &props(p_java), p_java);
            first_joined(&java);
            let a = start_ours("ours-a", &dir, &props(p_a), p_a);
            let b = start_ours("ours-b", &dir, &props(p_b), p_b);
            (java, a, b)
        }
        Order::OursFirst => {
            let a = start_ours("ours-a", &dir, &props(p_a), p_a);
            let b = start_ours("ours-b", &dir, &props(p_b), p_b);
            first_joined(&a);
            first_joined(&b);
            let java = start_java(&project, &dir, &props(p_java), p_java);
            (java, a, b)
        }
    };
    run.event(format!(
        "started java ({}), ours-a ({}), ours-b ({}) in group {tag}",
        java.id, a.id, b.id
    ));

    // 1. One group.
    for w in [&java, &a, &b] {
        run.wait(
            &format!("{}: GET /connectors", w.name),
            Duration::from_secs(120),
            || match http(&w.url, "GET", "/connectors", None) {
                Some(r) if r.status == 200 => Ok(()),
                Some(r) => Err(format!("{} {}", r.status, r.text)),
                None => Err("no answer".into()),
            },
        );
        run.event(format!("{} answers GET /connectors", w.name));
    }
    let generation = run.wait(
        "the same generation in all three logs",
        Duration::from_secs(60),
        || {
            let g: Vec<Option<i64>> = [&java, &a, &b]
                .iter()
                .map(|w| joined_generation(w))
                .collect();
            match g[0] {
                Some(x) if g.iter().all(|y| *y == Some(x)) => Ok(x),
                _ => Err(format!("generations java/ours-a/ours-b: {g:?}")),
            }
        },
    );
    let join_time = run.started.elapsed();
    run.event(format!(
        "all three joined generation {generation} ({:.1} s after start)",
        join_time.as_secs_f64()
    ));
    let leader = [&java, &a, &b]
        .into_iter()
        .find(|w| {
            let log = std::fs::read_to_string(&w.log).unwrap_or_default();
            if w.java {
                log.lines()
                    .rev()
                    .find(|l| l.contains("Joined group at generation"))
                    .is_some_and(|l| l.contains(&format!("leaderUrl='http://{}/'", w.id)))
            } else {
                log.lines()
                    .rev()
                    .find(|l| l.contains("joined the Connect group"))
                    .is_some_and(|l| l.contains("leader=true"))
            }
        })
        .map(|w| w.name)
        .unwrap_or("?");
    run.event(format!("the leader is {leader}"));
    match order {
        Order::JavaFirst => run.check(leader == "java", || {
            format!("the Java worker joined first but {leader} leads")
        }),
        Order::OursFirst => run.check(leader.starts_with("ours"), || {
            format!("ours joined first but {leader} leads")
        }),
    }

    Some(Group {
        run,
        bootstrap,
        java,
        a,
        b,
        dir,
        topic,
        nonce,
        leader,
        join_time,
    })
}

fn scenario(order: Order) {
    let Some(Group {
        run,
        mut java,
        a,
        b,
        dir,
        topic,
        nonce,
        leader,
        join_time,
        ..
    }) = form_group(order, "")
    else {
        return;
    };
    // 2. Data through sources created on Java's REST and sinks on ours.
    let prefixes: Vec<String> = ["j0", "j1", "o0"].iter().map(|s| s.to_string()).collect();
    for p in &prefixes {
        write_lines(&dir.join(format!("in-{p}.txt")), p, 0, FIRST, false);
    }
    let source = |p: &str| {
        json!({
            "connector.class": "FileStreamSource",
            "tasks.max": "1",
            "file": dir.join(format!("in-{p}.txt")).display().to_string(),
            "topic": topic,
        })
    };
    let sink = |file: &str| {
        json!({
            "connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector",
            "tasks.max": "1",
            "file": dir.join(file).display().to_string(),
            "topics": topic,
        })
    };
    let out_all = dir.join("out-all.txt");
    let out_b = dir.join("out-b.txt");
    // (name, created through, tasks)
    let mut connectors: Vec<(String, &'static str)> = vec![
        (format!("src-j0-{nonce}"), "java"),
        (format!("sink-all-{nonce}"), "ours-a"),
        (format!("src-j1-{nonce}"), "java"),
        (format!("src-o0-{nonce}"), "ours-b"),
        (format!("sink-b-{nonce}"), "ours-b"),
    ];
    create(&run, &java, &connectors[0].0, source("j0"));
    create(&run, &a, &connectors[1].0, sink("out-all.txt"));
    create(&run, &java, &connectors[2].0, source("j1"));
    create(&run, &b, &connectors[3].0, source("o0"));
    create(&run, &b, &connectors[4].0, sink("out-b.txt"));

    let want = expected(&prefixes, FIRST);
    let got = run.wait(
        "every line of the three source files in out-all.txt",
        Duration::from_secs(90),
        || missing_in(&out_all, &want),
    );
    let dups: usize = got.values().map(|n| n - 1).sum();
    run.event(format!(
        "out-all.txt has all {} lines ({dups} duplicates)",
        want.len()
    ));
    let got = run.wait(
        "every line of the three source files in out-b.txt",
        Duration::from_secs(90),
        || missing_in(&out_b, &want),
    );
    let dups: usize = got.values().map(|n| n - 1).sum();
    run.event(format!(
        "out-b.txt has all {} lines ({dups} duplicates)",
        want.len()
    ));

    // 3. The same status through all three REST APIs.
    let mut statuses = BTreeMap::new();
    let settled = |name: &str| settled(&run, &[&java, &a, &b], name);
    for (name, _) in &connectors {
        statuses.insert(name.clone(), settled(name));
    }
    let known_ids: BTreeSet<&str> = [&java, &a, &b].iter().map(|w| w.id.as_str()).collect();
    for s in statuses.values() {
        for id in worker_ids(s) {
            run.check(known_ids.contains(id.as_str()), || {
                format!("a worker id that is none of ours: {id} in {s}")
            });
        }
    }

    // 5 (before the kill). Work created through our REST on the Java worker.
    // The leader places new connectors; when none of ours landed on Java,
    // more sinks are created through our REST (at most 3) until one does.
    let ours_on_java = |connectors: &[(String, &str)], statuses: &BTreeMap<String, Json>| {
        connectors
            .iter()
            .filter(|(_, via)| *via != "java")
            .flat_map(|(n, _)| units_on(&statuses[n], &java.id))
            .collect::<Vec<String>>()
    };
    let mut sink_files = vec![out_all.clone(), out_b.clone()];
    for extra in 0..3 {
        if !ours_on_java(&connectors, &statuses).is_empty() {
            break;
        }
        let name = format!("sink-x{extra}-{nonce}");
        let file = format!("out-x{extra}.txt");
        create(&run, &a, &name, sink(&file));
        statuses.insert(name.clone(), settled(&name));
        connectors.push((name, "ours-a"));
        sink_files.push(dir.join(file));
    }
    let on_java: Vec<String> = statuses
        .values()
        .flat_map(|s| units_on(s, &java.id))
        .collect();
    let ours_on_java = ours_on_java(&connectors, &statuses);
    run.event(format!(
        "the Java worker runs {on_java:?}; of those created through our REST: {ours_on_java:?}"
    ));
    run.check(on_java.iter().any(|u| !u.ends_with("(connector)")), || {
        format!("the Java worker runs no task (only {on_java:?})")
    });
    if ours_on_java.is_empty() {
        run.event(
            "NOTE: no connector created through our REST landed on the Java worker this run \
             (the leader's assignment decides); only that Java ran a task is asserted",
        );
    }
    for file in &sink_files[2..] {
        let got = run.wait(
            &format!("every line in {}", file.display()),
            Duration::from_secs(90),
            || missing_in(file, &want),
        );
        let dups: usize = got.values().map(|n| n - 1).sum();
        run.event(format!(
            "{} has all {} lines ({dups} duplicates)",
            file.file_name().unwrap().to_string_lossy(),
            want.len()
        ));
    }
    // Which sources' tasks Java ran: their offsets must be resumed by ours.
    let java_sources: Vec<String> = connectors
        .iter()
        .filter(|(n, _)| n.starts_with("src-"))
        .filter(|(n, _)| statuses[n]["tasks"][0]["worker_id"] == java.id.as_str())
        .map(|(n, _)| n.split('-').nth(1).unwrap().to_string())
        .collect();
    run.event(format!("source tasks on the Java worker: {java_sources:?}"));
    if java_sources.is_empty() {
        run.event(
            "NOTE: no source task ran on the Java worker this run: offsets are not handed \
             from Java to ours in it",
        );
    }
    let errors: Vec<String> = [&java, &a, &b]
        .iter()
        .flat_map(|w| error_lines(w))
        .collect();
    run.check(errors.is_empty(), || {
        format!("ERROR lines in the worker logs before the kill: {errors:#?}")
    });
    let before = counts(&out_all);

    // 4. Kill the Java worker.
    // Let at least one offset flush (1 s) pass after the last record.
    std::thread::sleep(Duration::from_millis(2500));
    let _ = java.child.kill(); // SIGKILL
    let _ = java.child.wait();
    let killed = Instant::now();
    run.event(format!(
        "killed the Java worker ({leader} led) with SIGKILL"
    ));
    let moved = run.wait(
        "every connector and task RUNNING on our two workers",
        Duration::from_secs(6 + 2 + 60),
        || {
            for (name, _) in &connectors {
                for w in [&a, &b] {
                    let s = status(w, name)?;
                    all_running(&s, 1)?;
                    if worker_ids(&s).contains(&java.id) {
                        return Err(format!("{name} still on java: {s}"));
                    }
                }
            }
            Ok(killed.elapsed())
        },
    );
    run.event(format!(
        "all work RUNNING on ours {:.1} s after the kill",
        moved.as_secs_f64()
    ));
    for p in &prefixes {
        write_lines(
            &dir.join(format!("in-{p}.txt")),
            p,
            FIRST,
            FIRST + SECOND,
            true,
        );
    }
    run.event(format!("appended {SECOND} lines to each source file"));
    let want = expected(&prefixes, FIRST + SECOND);
    // A sink task that ran on Java moves when the broker drops Java's sink
    // consumer: `consumer.session.timeout.ms` (6 s here, Kafka's default
    // 45 s) after the kill.
    for out in &sink_files {
        let got = run.wait(
            &format!("every line, old and appended, in {}", out.display()),
            Duration::from_secs(90),
            || missing_in(out, &want),
        );
        let dups: usize = got.values().map(|n| n - 1).sum();
        run.event(format!(
            "{} has all {} lines ({dups} duplicates), {:.1} s after the kill",
            out.file_name().unwrap().to_string_lossy(),
            want.len(),
            killed.elapsed().as_secs_f64()
        ));
    }
    // Offsets: a source whose task ran on Java is resumed, not restarted.
    let after = counts(&out_all);
    for p in &prefixes {
        let again = (0..FIRST)
            .map(|i| format!("{p}-line-{i:05}"))
            .filter(|l| after.get(l).copied().unwrap_or(0) > before.get(l).copied().unwrap_or(0))
            .count();
        let moved_from_java = java_sources.contains(p);
        run.event(format!(
            "source {p}{}: {again} of its first {FIRST} lines arrived again after the kill",
            if moved_from_java {
                " (moved from Java)"
            } else {
                ""
            }
        ));
        run.check(again < FIRST, || {
            format!("source {p} started over from line 1 after the kill: Java's offsets were not resumed")
        });
    }

    let errors: Vec<String> = [&a, &b].iter().flat_map(|w| error_lines(w)).collect();
    if !errors.is_empty() {
        run.event(format!(
            "ERROR lines in our logs after the kill: {errors:#?}"
        ));
    }
    run.event(format!(
        "done: joined in {:.1} s, failover in {:.1} s",
        join_time.as_secs_f64(),
        moved.as_secs_f64()
    ));
    drop(a);
    drop(b);
    if std::env::var_os("DISTRIBUTED_INTEROP_KEEP").is_some() {
        run.event(format!("kept {} (DISTRIBUTED_INTEROP_KEEP)", dir.display()));
    } else if !run.failed.load(Ordering::SeqCst) {
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// KIP-618 in the mixed cluster, the Java worker leading first.
#[test]
fn exactly_once_sources_move_between_java_and_ours_java_leads() {
    eos_scenario(Order::JavaFirst);
}

/// KIP-618 in the mixed cluster, one of ours leading first.
#[test]
fn exactly_once_sources_move_between_java_and_ours_ours_lead() {
    eos_scenario(Order::OursFirst);
}

/// Exactly-once sources in the mixed cluster (issue #28, item 4): all three
/// workers with `exactly.once.source.support=enabled`, FileStream sources
/// with `exactly.once.support=required` (every other one with an offsets
/// topic of its own) created through both REST APIs until each side runs
/// at least one task. Then kill -9 of one of ours that
/// runs a task (its tasks move to Java or to our other worker, and the
/// leader may change), then kill -9 of the Java worker (its tasks move to
/// ours). After each step a `read_committed` reader of the topic has every
/// line of every file exactly once: each new task instance had its earlier
/// generation fenced by the leader (Java's or ours, each asked by the other
/// side) and resumed from the offsets committed with its records.
fn eos_scenario(order: Order) {
    let Some(Group {
        run,
        bootstrap,
        mut java,
        a,
        b,
        dir,
        topic,
        nonce,
        leader,
        ..
    }) = form_group(order, "exactly.once.source.support=enabled\n")
    else {
        return;
    };
    let reader = common::CommittedReader::start(&bootstrap, &topic);
    // Every other source keeps its offsets in a topic of its own
    // (`offsets.storage.topic`), which both kinds of worker must read and
    // commit to when the task moves.
    let source = |p: &str, own_offsets: bool| {
        let mut config = json!({
            "connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
            "tasks.max": "1",
            "file": dir.join(format!("in-{p}.txt")).display().to_string(),
            "topic": topic,
            "exactly.once.support": "required",
            "transaction.boundary": "poll",
        });
        if own_offsets {
            config["offsets.storage.topic"] = format!("{topic}-{p}-offsets").into();
        }
        config
    };
    let workers = [&java, &a, &b];
    // (line prefix, connector name)
    let mut sources: Vec<(String, String)> = Vec::new();
    let add = |via: &Worker, sources: &mut Vec<(String, String)>| {
        let p = format!("e{}", sources.len());
        write_lines(&dir.join(format!("in-{p}.txt")), &p, 0, FIRST, false);
        let name = format!("eos-{p}-{nonce}");
        create(&run, via, &name, source(&p, sources.len() % 2 == 1));
        settled(&run, &workers, &name);
        sources.push((p, name));
    };
    add(&java, &mut sources);
    add(&a, &mut sources);
    add(&java, &mut sources);
    add(&b, &mut sources);
    let task_worker = |via: &Worker, name: &str| -> String {
        status(via, name)
            .map(|s| {
                s["tasks"][0]["worker_id"]
                    .as_str()
                    .unwrap_or("?")
                    .to_string()
            })
            .unwrap_or_default()
    };
    // Each side runs a task: the leader places them, so add sources (at
    // most 4 more, through the REST of the side that lacks one) until so.
    for _ in 0..4 {
        let on: Vec<String> = sources.iter().map(|(_, n)| task_worker(&a, n)).collect();
        let java_runs = on.contains(&java.id);
        let ours_run = on.iter().any(|w| *w == a.id || *w == b.id);
        match (java_runs, ours_run) {
            (true, true) => break,
            (false, _) => add(&a, &mut sources),
            (_, false) => add(&java, &mut sources),
        }
    }
    let placement = |via: &Worker| -> Vec<(String, String)> {
        sources
            .iter()
            .map(|(p, n)| (p.clone(), task_worker(via, n)))
            .collect()
    };
    let first = placement(&a);
    run.event(format!(
        "exactly-once source tasks (prefix, worker): {first:?}"
    ));
    run.check(first.iter().any(|(_, w)| *w == java.id), || {
        format!("no exactly-once task on the Java worker: {first:?}")
    });
    run.check(first.iter().any(|(_, w)| *w != java.id), || {
        format!("no exactly-once task on ours: {first:?}")
    });
    let prefixes: Vec<String> = sources.iter().map(|(p, _)| p.clone()).collect();
    let exactly_once = |to: usize, step: &str| {
        let want = expected(&prefixes, to);
        run.wait(
            &format!("{step}: every line read by the read_committed reader"),
            Duration::from_secs(120),
            || {
                if reader.has_all(want.iter().cloned()) {
                    Ok(())
                } else {
                    let counts = reader.counts();
                    let missing: Vec<&String> =
                        want.iter().filter(|l| !counts.contains_key(*l)).collect();
                    Err(format!(
                        "{} of {} lines missing (first: {:?})",
                        missing.len(),
                        want.len(),
                        missing.first()
                    ))
                }
            },
        );
        // A replay would follow the lines it repeats: give it a moment.
        std::thread::sleep(Duration::from_secs(3));
        let counts = reader.counts();
        let twice: Vec<(&String, &u32)> = counts.iter().filter(|(_, c)| **c > 1).collect();
        let strangers: Vec<&String> = counts.keys().filter(|v| !want.contains(*v)).collect();
        run.check(twice.is_empty() && strangers.is_empty(), || {
            format!(
                "{step}: {} lines read more than once (first 5: {:?}); unexpected values: {:?}",
                twice.len(),
                &twice[..twice.len().min(5)],
                &strangers[..strangers.len().min(5)]
            )
        });
        run.event(format!(
            "{step}: all {} lines read exactly once",
            want.len()
        ));
    };
    exactly_once(FIRST, "before the kills");

    // Kill -9 of one of ours that runs a task.
    let (victim, survivor) = if first.iter().any(|(_, w)| *w == a.id) {
        (a, b)
    } else {
        (b, a)
    };
    let victim_id = victim.id.clone();
    let moved: Vec<String> = first
        .iter()
        .filter(|(_, w)| *w == victim_id)
        .map(|(p, _)| p.clone())
        .collect();
    // Let a transaction or two commit after the last line.
    std::thread::sleep(Duration::from_millis(1500));
    drop(victim); // SIGKILL
    run.event(format!(
        "killed {victim_id} (ours, ran {moved:?}; {leader} led first) with SIGKILL"
    ));
    let live = [&java, &survivor];
    for (_, name) in &sources {
        run.wait(
            &format!("{name}'s task RUNNING on a live worker"),
            Duration::from_secs(90),
            || {
                let s = status(&survivor, name)?;
                all_running(&s, 1)?;
                if worker_ids(&s).contains(&victim_id) {
                    return Err(format!("still on the killed worker: {s}"));
                }
                Ok(())
            },
        );
        settled(&run, &live, name);
    }
    let second = placement(&survivor);
    let to_java: Vec<&String> = second
        .iter()
        .filter(|(p, w)| moved.contains(p) && *w == java.id)
        .map(|(p, _)| p)
        .collect();
    run.event(format!(
        "after the kill (prefix, worker): {second:?}; moved from ours to Java: {to_java:?}"
    ));
    if to_java.is_empty() {
        run.event(
            "NOTE: no task moved from ours to the Java worker this run (the leader's \
             assignment decides); Java's tasks still move to ours below",
        );
    }
    for p in &prefixes {
        write_lines(
            &dir.join(format!("in-{p}.txt")),
            p,
            FIRST,
            FIRST + SECOND,
            true,
        );
    }
    exactly_once(FIRST + SECOND, "after the kill of ours");

    // Kill -9 of the Java worker: its tasks move to ours.
    let on_java: Vec<&String> = second
        .iter()
        .filter(|(_, w)| *w == java.id)
        .map(|(p, _)| p)
        .collect();
    std::thread::sleep(Duration::from_millis(1500));
    let _ = java.child.kill();
    let _ = java.child.wait();
    run.event(format!(
        "killed the Java worker (ran {on_java:?}) with SIGKILL"
    ));
    for (_, name) in &sources {
        run.wait(
            &format!("{name}'s task RUNNING on {}", survivor.id),
            Duration::from_secs(90),
            || {
                let s = status(&survivor, name)?;
                all_running(&s, 1)?;
                if worker_ids(&s).iter().any(|w| *w != survivor.id) {
                    return Err(format!("not all on {}: {s}", survivor.id));
                }
                Ok(())
            },
        );
    }
    let third = FIRST + SECOND + SECOND;
    for p in &prefixes {
        write_lines(
            &dir.join(format!("in-{p}.txt")),
            p,
            FIRST + SECOND,
            third,
            true,
        );
    }
    exactly_once(third, "after the kill of Java");
    // The sources with an offsets topic of their own committed there.
    for (i, (p, name)) in sources.iter().enumerate().filter(|(i, _)| i % 2 == 1) {
        let own = format!("{topic}-{p}-offsets");
        let records =
            common::topic_records_until(&bootstrap, &own, "an offset record", |r| !r.is_empty());
        let key = records
            .first()
            .and_then(|r| r.key.as_deref())
            .map(String::from_utf8_lossy)
            .unwrap_or_default()
            .into_owned();
        run.check(key.contains(name.as_str()), || {
            format!("source {i}'s own offsets topic {own} holds a record keyed {key:?}")
        });
        run.event(format!("{own} holds {name}'s offsets (key {key})"));
        // And REST reads them there: the position after the file's last line.
        let size = std::fs::metadata(dir.join(format!("in-{p}.txt")))
            .map(|m| m.len())
            .unwrap_or(0);
        let path = format!("/connectors/{name}/offsets");
        let offsets = run.wait(
            &format!("GET {path} at the end of the file"),
            Duration::from_secs(30),
            || match http(&survivor.url, "GET", &path, None) {
                Some(r) if r.status == 200 => {
                    let at = r.body["offsets"][0]["offset"]["position"].as_u64();
                    if at == Some(size) {
                        Ok(r.body)
                    } else {
                        Err(format!(
                            "position {at:?}, the file has {size} bytes: {}",
                            r.text
                        ))
                    }
                }
                Some(r) => Err(format!("{} {}", r.status, r.text)),
                None => Err("no answer".into()),
            },
        );
        run.event(format!("GET {path}: {offsets}"));
    }
    run.event(format!(
        "done: {} exactly-once sources, tasks moved Java -> ours {on_java:?} and ours -> Java {to_java:?}",
        sources.len()
    ));
    drop(reader);
    drop(survivor);
    if std::env::var_os("DISTRIBUTED_INTEROP_KEEP").is_some() {
        run.event(format!("kept {} (DISTRIBUTED_INTEROP_KEEP)", dir.display()));
    } else if !run.failed.load(Ordering::SeqCst) {
        let _ = std::fs::remove_dir_all(&dir);
    }
}
