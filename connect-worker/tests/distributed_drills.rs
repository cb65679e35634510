//! Fault drills of a distributed cluster of real `connect-distributed`
//! processes on the real Kafka broker (issue #15): a file source reads
//! lines appended under load, a file sink writes them out, and the drills
//! kill, add, remove and restart things while the lines flow. Every drill
//! ends with every line in the sink file (at-least-once: repeats are
//! counted and reported, never a loss) and prints a timeline. The
//! exactly-once drills (issue #28) count the topic itself with a
//! `read_committed` reader instead: every line once. `EOS_DRILL_CYCLES`
//! sets their kill -9 cycles (20 in CI; e.g. 100 for a long run), and
//! `DRILL_SEED` replays a run's random choices.
//!
//! The drills run one after another (one lock), so that a loaded 2-core
//! machine does not run 8 workers at once and miss heartbeats.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

mod common;

use common::{
    curl, free_port, real_bootstrap, set_client_quotas, try_curl, unique_suffix, CommittedReader,
    Node, OwnBroker,
};
use serde_json::Value;

/// One drill at a time.
static SERIAL: Mutex<()> = Mutex::new(());

const SESSION_MS: u64 = 6000;
const DELAY_MS: u64 = 3000;
/// What the issue allows for lost work to run again: the session, the
/// scheduled rebalance delay and a few seconds.
const MOVE_BUDGET: Duration = Duration::from_millis(SESSION_MS + DELAY_MS + 10_000);

/// A cluster of workers sharing a group and three topics, the input and
/// output files, and a timeline of what happened.
struct Drill {
    name: &'static str,
    dir: tempfile::TempDir,
    bootstrap: String,
    unique: String,
    nodes: Vec<Node>,
    /// How many times each worker was started.
    spawns: Vec<usize>,
    started: Instant,
    timeline: Mutex<Vec<String>>,
}

impl Drill {
    fn new(name: &'static str, bootstrap: String) -> Drill {
        let mut dir = tempfile::tempdir().unwrap();
        // DRILL_KEEP=1 keeps the logs and files for a look afterwards.
        if std::env::var_os("DRILL_KEEP").is_some() {
            dir.disable_cleanup(true);
            eprintln!("[{name}] files in {}", dir.path().display());
        }
        Drill {
            name,
            dir,
            bootstrap,
            unique: unique_suffix(name),
            nodes: Vec::new(),
            spawns: Vec::new(),
            started: Instant::now(),
            timeline: Mutex::new(Vec::new()),
        }
    }

    fn note(&self, event: impl AsRef<str>) {
        let line = format!(
            "{:7.2}s  {}",
            self.started.elapsed().as_secs_f64(),
            event.as_ref()
        );
        eprintln!("[{}] {line}", self.name);
        self.timeline.lock().unwrap().push(line);
    }

    fn path(&self, file: &str) -> PathBuf {
        self.dir.path().join(file)
    }

    /// Start one more worker; returns its index.
    fn start_worker(&mut self) -> usize {
        self.start_worker_with("")
    }

    /// Start one more worker with `extra` properties (lines); returns its
    /// index.
    fn start_worker_with(&mut self, extra: &str) -> usize {
        self.start_worker_on("127.0.0.1", extra)
    }

    /// Start one more worker listening on `host` (advertising 127.0.0.1),
    /// with `extra` properties; returns its index.
    fn start_worker_on(&mut self, host: &str, extra: &str) -> usize {
        let i = self.nodes.len();
        let port = free_port();
        let props = self.path(&format!("worker-{i}.properties"));
        let u = &self.unique;
        std::fs::write(
            &props,
            format!(
                "bootstrap.servers={}\ngroup.id=drill{u}\n\
                 config.storage.topic=configs{u}\noffset.storage.topic=offsets{u}\nstatus.storage.topic=status{u}\n\
                 config.storage.replication.factor=1\noffset.storage.replication.factor=1\nstatus.storage.replication.factor=1\n\
                 offset.storage.partitions=5\nstatus.storage.partitions=3\n\
                 key.converter=org.apache.kafka.connect.json.JsonConverter\nvalue.converter=org.apache.kafka.connect.json.JsonConverter\n\
                 offset.flush.interval.ms=500\nlisteners=http://{host}:{port}\nrest.advertised.host.name=127.0.0.1\n\
                 session.timeout.ms={SESSION_MS}\nheartbeat.interval.ms=1000\nscheduled.rebalance.max.delay.ms={DELAY_MS}\n\
                 consumer.session.timeout.ms=6000\nconsumer.heartbeat.interval.ms=1000\n{extra}",
                self.bootstrap
            ),
        )
        .unwrap();
        let log = self.path(&format!("worker-{i}.log"));
        self.nodes
            .push(Node::spawn(self.dir.path(), &props, &log, port));
        self.spawns.push(1);
        self.note(format!("worker {i} started on port {port}"));
        self.wait("worker answers GET /", || {
            let (status, _) = self.get(i, "/");
            (status == 200).then_some(())
        });
        i
    }

    /// Start worker `i` again (after a kill) with its properties and
    /// port, logging to a new file.
    fn restart_worker(&mut self, i: usize) {
        let props = self.path(&format!("worker-{i}.properties"));
        self.spawns[i] += 1;
        let log = self.path(&format!("worker-{i}.{}.log", self.spawns[i]));
        let port = self.nodes[i].port;
        self.nodes[i] = Node::spawn(self.dir.path(), &props, &log, port);
        self.note(format!("worker {i} started again on port {port}"));
        self.wait("worker answers GET /", || {
            let (status, _) = self.get(i, "/");
            (status == 200).then_some(())
        });
    }

    fn get(&self, i: usize, path: &str) -> (u16, Value) {
        let node = &self.nodes[i];
        if !node.alive() {
            return (0, Value::Null);
        }
        try_curl(&node.url(), "GET", path, "").unwrap_or((0, Value::Null))
    }

    fn call(&self, i: usize, method: &str, path: &str, body: &str) -> (u16, Value) {
        curl(&self.nodes[i].url(), method, path, body)
    }

    /// [`Drill::call`] for a leader-only write: while no leader is known
    /// (the group is still forming) Kafka's answer is 409; ask again.
    fn write(&self, i: usize, method: &str, path: &str, body: &str) -> (u16, Value) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let answer = self.call(i, method, path, body);
            if answer.0 != 409 || Instant::now() > deadline {
                return answer;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Poll `check` for up to 90 s; on timeout fail with every log's tail.
    fn wait<T>(&self, what: &str, mut check: impl FnMut() -> Option<T>) -> T {
        let deadline = Instant::now() + Duration::from_secs(90);
        loop {
            if let Some(v) = check() {
                return v;
            }
            if Instant::now() > deadline {
                self.fail(&format!("timed out waiting for {what}"));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn fail(&self, why: &str) -> ! {
        let mut report = format!(
            "{why}\ntimeline:\n{}\n",
            self.timeline.lock().unwrap().join("\n")
        );
        if let Some(i) = self.nodes.iter().position(Node::alive) {
            let (_, units) = self.get(i, "/connectors?expand=status");
            report.push_str(&format!("status as worker {i} sees it: {units}\n"));
        }
        for (i, n) in self.nodes.iter().enumerate() {
            let text = n.log_text();
            let tail: Vec<&str> = text.lines().rev().take(40).collect();
            report.push_str(&format!(
                "--- worker {i} ({}), last lines of {}:\n{}\n",
                n.worker_id(),
                n.log.display(),
                tail.into_iter().rev().collect::<Vec<_>>().join("\n")
            ));
        }
        panic!("{report}");
    }

    /// The first live worker.
    fn any(&self) -> usize {
        self.nodes
            .iter()
            .position(Node::alive)
            .expect("a live worker")
    }

    /// Where each unit of `connector` runs and in what state, as a live
    /// worker's REST reports it: `[("connector", state, worker), ("0", ...)]`.
    fn placement(&self, connector: &str) -> Vec<(String, String, String)> {
        self.placement_from(self.any(), connector)
    }

    /// [`Drill::placement`] as worker `i` reports it.
    fn placement_from(&self, i: usize, connector: &str) -> Vec<(String, String, String)> {
        let (status, body) = self.get(i, &format!("/connectors/{connector}/status"));
        if status != 200 {
            return Vec::new();
        }
        let unit = |name: String, v: &Value| {
            (
                name,
                v["state"].as_str().unwrap_or("").to_string(),
                v["worker_id"].as_str().unwrap_or("").to_string(),
            )
        };
        let mut out = vec![unit("connector".into(), &body["connector"])];
        for t in body["tasks"].as_array().into_iter().flatten() {
            out.push(unit(t["id"].to_string(), t));
        }
        out
    }

    /// Whether every unit of `connectors` (with `tasks[c]` tasks) is RUNNING
    /// on a live worker.
    fn all_running_on_live(&self, connectors: &[(&str, usize)]) -> bool {
        let live: Vec<String> = self
            .nodes
            .iter()
            .filter(|n| n.alive())
            .map(Node::worker_id)
            .collect();
        connectors.iter().all(|(c, tasks)| {
            let p = self.placement(c);
            p.len() == tasks + 1
                && p.iter()
                    .all(|(_, state, worker)| state == "RUNNING" && live.contains(worker))
        })
    }

    /// The index of the worker that led the last generation any live
    /// worker logged.
    fn leader(&self) -> Option<usize> {
        let mut best: Option<(u64, usize)> = None;
        for (i, n) in self.nodes.iter().enumerate().filter(|(_, n)| n.alive()) {
            for line in n.log_text().lines() {
                if !line.contains("joined the Connect group") || !line.contains("leader=true") {
                    continue;
                }
                let generation = line
                    .split("generation=")
                    .nth(1)
                    .and_then(|r| r.split_whitespace().next())
                    .and_then(|g| g.parse::<u64>().ok())
                    .unwrap_or(0);
                if best.is_none_or(|(g, _)| generation >= g) {
                    best = Some((generation, i));
                }
            }
        }
        best.map(|(_, i)| i)
    }

    fn create(&self, worker: usize, name: &str, config: Value) {
        let body = serde_json::json!({ "name": name, "config": config }).to_string();
        let (status, answer) = self.write(worker, "POST", "/connectors", &body);
        if status != 201 {
            self.fail(&format!("creating {name}: {status} {answer}"));
        }
        self.note(format!("created connector {name} through worker {worker}"));
    }

    fn source_and_sink(&self, worker: usize, sink_tasks: usize) {
        let topic = format!("lines{}", self.unique);
        self.create(
            worker,
            "source",
            serde_json::json!({
                "connector.class": "FileStreamSource",
                "file": self.path("in.txt"),
                "topic": topic,
            }),
        );
        self.create(
            worker,
            "sink",
            serde_json::json!({
                "connector.class": "FileStreamSink",
                "file": self.path("out.txt"),
                "topics": topic,
                "tasks.max": sink_tasks.to_string(),
            }),
        );
    }

    fn sink_lines(&self) -> Vec<String> {
        std::fs::read_to_string(self.path("out.txt"))
            .map(|t| t.lines().map(str::to_string).collect())
            .unwrap_or_default()
    }

    /// Wait until the sink file has each of the `written` lines; report
    /// repeats.
    fn check_every_line(&self, written: usize) {
        let expected: Vec<String> = (0..written).map(line).collect();
        let got = self.wait("every line in the sink file", || {
            let got = self.sink_lines();
            let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
            for l in &got {
                *seen.entry(l.as_str()).or_default() += 1;
            }
            expected
                .iter()
                .all(|l| seen.contains_key(l.as_str()))
                .then(|| got.clone())
        });
        let repeats = got.len() - expected.len();
        let strangers: Vec<&String> = got.iter().filter(|l| !expected.contains(l)).collect();
        if !strangers.is_empty() {
            self.fail(&format!(
                "lines nobody wrote in the sink file: {strangers:?}"
            ));
        }
        self.note(format!(
            "all {written} lines in the sink file ({repeats} delivered more than once)"
        ));
    }
}

/// `GET /metrics` of a worker, as text.
fn metrics_text(node: &Node) -> String {
    use std::io::Read;
    let addr = format!("127.0.0.1:{}", node.port);
    let Ok(mut s) = std::net::TcpStream::connect(&addr) else {
        return String::new();
    };
    let _ = write!(
        s,
        "GET /metrics HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    );
    let mut reply = String::new();
    let _ = s.read_to_string(&mut reply);
    reply
}

fn line(n: usize) -> String {
    format!("line-{n:06}")
}

/// Appends lines to the source file on its own thread: the load.
struct Writer {
    stop: Arc<AtomicBool>,
    written: Arc<AtomicUsize>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Writer {
    /// About `per_second` lines per second until stopped.
    fn start(path: &Path, per_second: usize) -> Writer {
        let stop = Arc::new(AtomicBool::new(false));
        let written = Arc::new(AtomicUsize::new(0));
        let (s, w, path) = (stop.clone(), written.clone(), path.to_path_buf());
        let thread = std::thread::spawn(move || {
            let mut f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
                .unwrap();
            let batch = (per_second / 20).max(1);
            while !s.load(Ordering::SeqCst) {
                let from = w.load(Ordering::SeqCst);
                let text: String = (from..from + batch).map(|n| line(n) + "\n").collect();
                f.write_all(text.as_bytes()).unwrap();
                f.flush().unwrap();
                w.store(from + batch, Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(50));
            }
        });
        Writer {
            stop,
            written,
            thread: Some(thread),
        }
    }

    fn written(&self) -> usize {
        self.written.load(Ordering::SeqCst)
    }

    /// Stop writing; returns how many lines were written.
    fn finish(mut self) -> usize {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        self.written()
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// 3 workers, a file source and a 2-task file sink under load; kill -9 of
/// a follower, then of the leader: each time the lost units run on a live
/// worker within session + delay + 10 s, and every line reaches the sink.
#[test]
fn kill_9_of_a_follower_and_of_the_leader_loses_no_line_on_real_kafka() {
    let test =
        "distributed_drills::kill_9_of_a_follower_and_of_the_leader_loses_no_line_on_real_kafka";
    let Some(bootstrap) = real_bootstrap(test) else {
        return;
    };
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut d = Drill::new("kill-9", bootstrap);
    for _ in 0..3 {
        d.start_worker();
    }
    let writer = Writer::start(&d.path("in.txt"), 400);
    d.source_and_sink(1, 2);
    let units = [("source", 1), ("sink", 2)];
    d.wait("source and sink running", || {
        d.all_running_on_live(&units).then_some(())
    });
    d.note(format!(
        "running: {:?} {:?}",
        d.placement("source"),
        d.placement("sink")
    ));
    // Each worker reports its rebalances (connect-worker-rebalance-metrics).
    let metrics = metrics_text(&d.nodes[0]);
    for name in [
        "kafka_connect_connect_worker_rebalance_metrics_completed_rebalances_total",
        "kafka_connect_connect_worker_rebalance_metrics_epoch",
        "kafka_connect_connect_worker_rebalance_metrics_info{connect_protocol=\"sessioned\"",
    ] {
        if !metrics.contains(name) {
            d.fail(&format!("GET /metrics has no {name}:\n{metrics}"));
        }
    }
    for victim_kind in ["follower", "leader"] {
        let leader = d.wait("a leader", || d.leader());
        let victim = if victim_kind == "leader" {
            leader
        } else {
            (0..d.nodes.len())
                .find(|&i| i != leader && d.nodes[i].alive())
                .expect("a live follower")
        };
        d.wait("some lines through the sink first", || {
            (d.sink_lines().len() > 100).then_some(())
        });
        let killed_at = Instant::now();
        d.nodes[victim].kill_9();
        d.note(format!(
            "kill -9 of worker {victim} (the {victim_kind}), {} lines written so far",
            writer.written()
        ));
        d.wait("every unit running on a live worker", || {
            d.all_running_on_live(&units).then_some(())
        });
        let took = killed_at.elapsed();
        d.note(format!(
            "every unit runs on a live worker again after {:.1} s: {:?} {:?}",
            took.as_secs_f64(),
            d.placement("source"),
            d.placement("sink")
        ));
        if took > MOVE_BUDGET {
            d.fail(&format!(
                "the lost work took {took:?} to run again, more than {MOVE_BUDGET:?}"
            ));
        }
    }
    std::thread::sleep(Duration::from_millis(500));
    let written = writer.finish();
    d.note(format!("stopped writing after {written} lines"));
    d.check_every_line(written);
}

/// Review F4 on the real broker: with `listeners=http://0.0.0.0:PORT`
/// (what a multi-host cluster uses) and `rest.advertised.host.name`, a
/// restart of a task, of a connector, and of a connector with its tasks
/// answers in under a second through every worker, whichever runs the
/// unit (before F4's fix a task restart through a worker that did not run
/// it never answered), and everything runs again afterwards.
#[test]
fn restarts_answer_at_once_through_every_worker_with_wildcard_listeners_on_real_kafka() {
    let test = "distributed_drills::restarts_answer_at_once_through_every_worker_with_wildcard_listeners_on_real_kafka";
    let Some(bootstrap) = real_bootstrap(test) else {
        return;
    };
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut d = Drill::new("wildcard-restarts", bootstrap);
    for _ in 0..3 {
        d.start_worker_on("0.0.0.0", "");
    }
    d.source_and_sink(0, 3);
    let units = [("source", 1), ("sink", 3)];
    d.wait("source and sink running", || {
        d.all_running_on_live(&units).then_some(())
    });
    d.note(format!("running: {:?}", d.placement("sink")));
    let calls = [
        ("/connectors/sink/tasks/0/restart", 204),
        ("/connectors/sink/tasks/2/restart", 204),
        ("/connectors/source/restart", 204),
        ("/connectors/sink/restart?includeTasks=true", 202),
    ];
    for worker in 0..d.nodes.len() {
        for (path, want) in calls {
            // A restart that meets the previous one still under way is
            // refused ("retry after the rebalance"); it must succeed once
            // everything runs again. Every answer must come within 1 s.
            for attempt in 1..=10 {
                let started = Instant::now();
                let (status, body) = d.call(worker, "POST", path, "");
                let took = started.elapsed();
                d.note(format!(
                    "POST {path} through worker {worker}: {status} in {} ms",
                    took.as_millis()
                ));
                if took >= Duration::from_secs(1) {
                    d.fail(&format!(
                        "POST {path} through worker {worker} took {took:?}, a second or more"
                    ));
                }
                if status == want {
                    break;
                }
                let busy = body.to_string().contains("retry after the rebalance");
                if !busy || attempt == 10 {
                    d.fail(&format!(
                        "POST {path} through worker {worker} answered {status} {body}, not {want}"
                    ));
                }
                std::thread::sleep(Duration::from_millis(500));
                d.wait("everything running again before a retry", || {
                    d.all_running_on_live(&units).then_some(())
                });
            }
        }
        d.wait("everything running again after the restarts", || {
            d.all_running_on_live(&units).then_some(())
        });
    }
}

/// 2 workers, then a third joins and later leaves with SIGTERM: work
/// moves, units that stay where they are keep running without a restart
/// (the incremental cooperative protocol), and no line is lost.
#[test]
fn a_join_and_a_graceful_leave_move_only_what_moves_on_real_kafka() {
    let test = "distributed_drills::a_join_and_a_graceful_leave_move_only_what_moves_on_real_kafka";
    let Some(bootstrap) = real_bootstrap(test) else {
        return;
    };
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut d = Drill::new("join-leave", bootstrap);
    d.start_worker();
    d.start_worker();
    let writer = Writer::start(&d.path("in.txt"), 200);
    d.source_and_sink(0, 3);
    let units = [("source", 1), ("sink", 3)];
    d.wait("source and sink running", || {
        d.all_running_on_live(&units).then_some(())
    });
    let starts = |d: &Drill| -> BTreeMap<String, usize> {
        // Each task start logs one of these lines, with its span.
        let mut out = BTreeMap::new();
        for (i, n) in d.nodes.iter().enumerate() {
            for l in n.log_text().lines() {
                for (marker, kind) in [
                    ("FileStreamSink: appending to file", "sink"),
                    ("FileStreamSource: reading file", "source"),
                ] {
                    if l.contains(marker) {
                        let task = l
                            .split("task=")
                            .nth(1)
                            .and_then(|r| r.split(['}', ' ']).next())
                            .unwrap_or("?");
                        *out.entry(format!("worker {i} {kind}-{task}")).or_default() += 1;
                    }
                }
            }
        }
        out
    };
    let placed = |d: &Drill| -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        for (c, _) in units {
            for (unit, _, worker) in d.placement(c) {
                out.insert(format!("{c}/{unit}"), worker);
            }
        }
        out
    };
    let before = placed(&d);
    let starts_before = starts(&d);
    d.note(format!("placement with 2 workers: {before:?}"));
    let joined_at = Instant::now();
    let newcomer = d.start_worker();
    let new_id = d.nodes[newcomer].worker_id();
    d.wait("the newcomer runs something", || {
        let p = placed(&d);
        (d.all_running_on_live(&units) && p.values().any(|w| *w == new_id)).then_some(())
    });
    let after = placed(&d);
    d.note(format!(
        "after the join ({:.1} s): {after:?}",
        joined_at.elapsed().as_secs_f64()
    ));
    let starts_after = starts(&d);
    for (unit, worker) in &before {
        if after.get(unit) == Some(worker) {
            let w = d
                .nodes
                .iter()
                .position(|n| n.worker_id() == *worker)
                .unwrap();
            // A unit that stayed was not restarted: its start count on its
            // worker did not change.
            let key_prefix = format!("worker {w} ");
            let restarted: Vec<_> = starts_after
                .iter()
                .filter(|(k, n)| k.starts_with(&key_prefix) && starts_before.get(*k) != Some(n))
                .collect();
            if !restarted.is_empty() && !unit.ends_with("/connector") {
                d.fail(&format!(
                    "{unit} stayed on {worker} but tasks there started again: {restarted:?}"
                ));
            }
        }
    }
    let left_at = Instant::now();
    d.nodes[newcomer].terminate();
    d.note("SIGTERM to the newcomer; it left the group");
    d.wait("everything running on the first two again", || {
        d.all_running_on_live(&units).then_some(())
    });
    let took = left_at.elapsed();
    d.note(format!(
        "after the leave ({:.1} s): {:?}",
        took.as_secs_f64(),
        placed(&d)
    ));
    if took > Duration::from_millis(SESSION_MS) {
        d.fail(&format!(
            "a graceful leave took {took:?}: the work should move before a session timeout"
        ));
    }
    let written = writer.finish();
    d.check_every_line(written);
}

/// Two workers get conflicting config writes for the same connector at
/// the same moment: the config topic's order decides, and both workers
/// end with the same config.
#[test]
fn conflicting_rest_writes_end_with_one_view_on_real_kafka() {
    let test = "distributed_drills::conflicting_rest_writes_end_with_one_view_on_real_kafka";
    let Some(bootstrap) = real_bootstrap(test) else {
        return;
    };
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut d = Drill::new("conflict", bootstrap);
    d.start_worker();
    d.start_worker();
    for round in 0..5 {
        let body = |who: usize| {
            serde_json::json!({
                "connector.class": "FileStreamSink",
                "file": d.path(&format!("out-{who}.txt")),
                "topics": format!("t{}", d.unique),
            })
            .to_string()
        };
        let (a, b) = (body(0), body(1));
        let (ra, rb) = std::thread::scope(|s| {
            let ha = s.spawn(|| d.write(0, "PUT", "/connectors/contested/config", &a));
            let hb = s.spawn(|| d.write(1, "PUT", "/connectors/contested/config", &b));
            (ha.join().unwrap(), hb.join().unwrap())
        });
        if !matches!(ra.0, 200 | 201) || !matches!(rb.0, 200 | 201) {
            d.fail(&format!("round {round}: {ra:?} {rb:?}"));
        }
        let view = d.wait("both workers with the same config", || {
            let (s0, c0) = d.get(0, "/connectors/contested/config");
            let (s1, c1) = d.get(1, "/connectors/contested/config");
            (s0 == 200 && s1 == 200 && c0 == c1).then_some(c0)
        });
        d.note(format!(
            "round {round}: both workers say file={}",
            view["file"]
        ));
    }
}

/// The broker restarts under load: the workers ride it out without a
/// restart of their own, and every line reaches the sink. Runs its own
/// broker (tools/real-kafka/broker.sh), as the shared one must not go away.
#[test]
fn a_broker_restart_under_load_loses_no_line_on_real_kafka() {
    let test = "distributed_drills::a_broker_restart_under_load_loses_no_line_on_real_kafka";
    if real_bootstrap(test).is_none() {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let broker = OwnBroker::start(&[]);
    let bootstrap = broker.printed("bootstrap.servers");
    let mut d = Drill::new("broker-restart", bootstrap);
    d.start_worker();
    d.start_worker();
    let writer = Writer::start(&d.path("in.txt"), 200);
    d.source_and_sink(0, 1);
    let units = [("source", 1), ("sink", 1)];
    d.wait("source and sink running", || {
        d.all_running_on_live(&units).then_some(())
    });
    d.wait("some lines through the sink first", || {
        (d.sink_lines().len() > 100).then_some(())
    });
    d.note("restarting the broker");
    let again = broker.restart();
    d.note(format!(
        "broker back ({})",
        again.trim().replace('\n', ", ")
    ));
    d.wait("source and sink running after the restart", || {
        d.all_running_on_live(&units).then_some(())
    });
    d.note("source and sink report RUNNING");
    let before = writer.written();
    d.wait("new lines through the sink after the restart", || {
        let got = d.sink_lines();
        got.contains(&line(before + 50)).then_some(())
    });
    d.note(format!("line {} through the sink", before + 50));
    let written = writer.finish();
    d.check_every_line(written);
    for (i, n) in d.nodes.iter_mut().enumerate() {
        if n.child
            .as_mut()
            .is_some_and(|c| !matches!(c.try_wait(), Ok(None)))
        {
            panic!("worker {i} exited during the broker restart");
        }
    }
    drop(d);
    drop(broker);
}

/// What a worker's last "joined the Connect group" log line says:
/// (generation, protocol, connectors, tasks).
fn last_join(log: &str) -> Option<(u64, String, Vec<String>, Vec<String>)> {
    let line = log
        .lines()
        .rev()
        .find(|l| l.contains("joined the Connect group"))?;
    let field = |key: &str| -> Option<&str> {
        let rest = line.split(&format!("{key}=")).nth(1)?;
        Some(rest)
    };
    // The quoted names of a `{..}` or `[..]` debug list.
    let names = |rest: &str| -> Vec<String> {
        let end = rest.find(['}', ']']).unwrap_or(rest.len());
        rest[..end]
            .split('"')
            .skip(1)
            .step_by(2)
            .map(str::to_string)
            .collect()
    };
    let generation = field("generation")?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    let protocol = field("protocol")?.split_whitespace().next()?.to_string();
    Some((
        generation,
        protocol,
        names(field("connectors")?),
        names(field("tasks")?),
    ))
}

/// 2 workers with `connect.protocol=eager` (Java's `default`
/// sub-protocol, the leader's `EagerAssignor`), a file source and a 3-task
/// file sink under load, then a third worker joins and leaves again:
/// every rebalance stops everything before rejoining, each unit runs on
/// exactly one worker after each round, and every line reaches the sink.
#[test]
fn eager_rebalances_stop_everything_and_lose_no_line_on_real_kafka() {
    let test =
        "distributed_drills::eager_rebalances_stop_everything_and_lose_no_line_on_real_kafka";
    let Some(bootstrap) = real_bootstrap(test) else {
        return;
    };
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut d = Drill::new("eager", bootstrap);
    let eager = "connect.protocol=eager\n";
    d.start_worker_with(eager);
    d.start_worker_with(eager);
    let writer = Writer::start(&d.path("in.txt"), 200);
    d.source_and_sink(0, 3);
    let units = [("source", 1), ("sink", 3)];
    let all: Vec<String> = ["source", "sink", "source-0", "sink-0", "sink-1", "sink-2"]
        .into_iter()
        .map(str::to_string)
        .collect();
    // The live workers' last rounds: one generation, the eager protocol,
    // and every unit owned by exactly one of them.
    let settled = |d: &Drill| -> Option<BTreeMap<String, usize>> {
        let mut joins = Vec::new();
        for (i, n) in d.nodes.iter().enumerate().filter(|(_, n)| n.alive()) {
            let (generation, protocol, connectors, tasks) = last_join(&n.log_text())?;
            if protocol != "default" {
                d.fail(&format!(
                    "worker {i} joined with protocol {protocol}, not default"
                ));
            }
            joins.push((i, generation, connectors, tasks));
        }
        // Only rounds of one generation can be compared.
        if joins.windows(2).any(|w| w[0].1 != w[1].1) {
            return None;
        }
        let mut owners: BTreeMap<String, usize> = BTreeMap::new();
        for (i, generation, connectors, tasks) in joins {
            for unit in connectors.into_iter().chain(tasks) {
                if let Some(other) = owners.insert(unit.clone(), i) {
                    d.fail(&format!(
                        "{unit} is owned by workers {other} and {i} in generation {generation}"
                    ));
                }
            }
        }
        let covered = owners.len() == all.len() && all.iter().all(|u| owners.contains_key(u));
        (covered && d.all_running_on_live(&units)).then_some(owners)
    };
    let owners = d.wait("every unit owned once and running", || settled(&d));
    d.note(format!("eager placement with 2 workers: {owners:?}"));

    d.wait("some lines through the sink first", || {
        (d.sink_lines().len() > 100).then_some(())
    });
    let joined_at = Instant::now();
    let newcomer = d.start_worker_with(eager);
    let new_id = d.nodes[newcomer].worker_id();
    let owners = d.wait("the newcomer owns something", || {
        settled(&d).filter(|o| o.values().any(|&w| w == newcomer))
    });
    d.wait("the newcomer runs something", || {
        let runs = units.iter().any(|(c, _)| {
            d.placement(c)
                .iter()
                .any(|(_, state, w)| *w == new_id && state == "RUNNING")
        });
        runs.then_some(())
    });
    d.note(format!(
        "after the join ({:.1} s): {owners:?}",
        joined_at.elapsed().as_secs_f64()
    ));
    for i in 0..2 {
        if !d.nodes[i]
            .log_text()
            .contains("eager rebalance: stopping all connectors and tasks before rejoining")
        {
            d.fail(&format!(
                "worker {i} did not stop its work before rejoining for the join"
            ));
        }
    }
    let left_at = Instant::now();
    d.nodes[newcomer].terminate();
    d.note("SIGTERM to the newcomer; it left the group");
    let owners = d.wait("everything on the first two again", || settled(&d));
    d.note(format!(
        "after the leave ({:.1} s): {owners:?}",
        left_at.elapsed().as_secs_f64()
    ));
    std::thread::sleep(Duration::from_millis(500));
    let written = writer.finish();
    d.note(format!("stopped writing after {written} lines"));
    d.check_every_line(written);
}

/// Write `lines` to `path` at once.
fn write_lines(path: &Path, lines: impl Iterator<Item = String>) {
    let text: String = lines.map(|l| l + "\n").collect();
    std::fs::write(path, text).unwrap();
}

impl Drill {
    /// Create (through worker 0) a file source reading `file` into `topic`
    /// whose producer has client id `client` (for a broker quota), sends
    /// requests of at most 16 KB (so that throttling spreads them out) and
    /// may hold `in_flight` records: its stop waits for that backlog.
    fn create_throttled_source(
        &self,
        name: &str,
        file: &str,
        topic: &str,
        client: &str,
        in_flight: usize,
    ) {
        self.create(
            0,
            name,
            serde_json::json!({
                "connector.class": "FileStreamSource",
                "file": self.path(file),
                "topic": topic,
                "producer.override.client.id": client,
                "producer.override.batch.size": "16384",
                "source.max.inflight.records": in_flight.to_string(),
            }),
        );
    }

    /// Wait until the sink file holds every line of `expected`, then fail
    /// if any line is there twice or was never written.
    fn check_each_line_once(&self, expected: &[String]) {
        let got = self.wait("every line in the sink file", || {
            let got = self.sink_lines();
            let have: std::collections::HashSet<&str> = got.iter().map(String::as_str).collect();
            expected
                .iter()
                .all(|l| have.contains(l.as_str()))
                .then(|| got.clone())
        });
        let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
        for l in &got {
            *seen.entry(l.as_str()).or_default() += 1;
        }
        let twice: Vec<&&str> = seen
            .iter()
            .filter(|(_, n)| **n > 1)
            .map(|(l, _)| l)
            .collect();
        if !twice.is_empty() {
            self.fail(&format!(
                "{} lines written more than once, e.g. {:?}",
                twice.len(),
                twice.iter().take(10).collect::<Vec<_>>()
            ));
        }
        if got.len() != expected.len() {
            self.fail(&format!(
                "{} lines in the sink file, {} written",
                got.len(),
                expected.len()
            ));
        }
        self.note(format!(
            "all {} lines in the sink file, each once",
            got.len()
        ));
    }
}

/// Review F1 on the real broker: revoked source tasks that take seconds
/// to stop (their producers throttled by a broker quota, so the final
/// flush waits for a backlog of records) while config changes and another
/// join start new rounds. A worker reports revoked work released only once
/// it has stopped it and committed its offsets, so the next owner starts
/// from those offsets: no line reaches the sink twice (before the fix the
/// next round gave the still-stopping tasks to another worker, which
/// produced again what the first was still flushing).
#[test]
fn revoked_sources_slow_to_stop_write_no_line_twice_on_real_kafka() {
    let test = "distributed_drills::revoked_sources_slow_to_stop_write_no_line_twice_on_real_kafka";
    let Some(bootstrap) = real_bootstrap(test) else {
        return;
    };
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut d = Drill::new("slow-stops", bootstrap.clone());
    const SOURCES: usize = 3;
    const LINES: usize = 3000;
    let u = d.unique.clone();
    // About 100 records a second per source (a record is about 100 bytes
    // with its JSON schema), in requests of at most 16 KB so that the
    // broker's throttling spreads them out; the 1,000 records each
    // producer may hold take seconds to flush when the task stops.
    let clients: Vec<String> = (0..SOURCES).map(|i| format!("slow{u}-{i}")).collect();
    let quotas: Vec<(&str, &str, f64)> = clients
        .iter()
        .map(|c| (c.as_str(), "producer_byte_rate", 10_000.0))
        .collect();
    set_client_quotas(&bootstrap, &quotas);
    d.note("producer_byte_rate=10000 for each source's producer");
    let mut expected = Vec::new();
    for i in 0..SOURCES {
        let lines: Vec<String> = (0..LINES).map(|n| format!("s{i}-{n:06}")).collect();
        write_lines(&d.path(&format!("in{i}.txt")), lines.iter().cloned());
        expected.extend(lines);
    }
    std::fs::write(d.path("late.txt"), "").unwrap();
    let extra = "task.shutdown.graceful.timeout.ms=60000\n";
    d.start_worker_with(extra);
    let topic = format!("lines{u}");
    for (i, client) in clients.iter().enumerate() {
        d.create_throttled_source(
            &format!("src{i}"),
            &format!("in{i}.txt"),
            &topic,
            client,
            1000,
        );
    }
    d.create(
        0,
        "sink",
        serde_json::json!({
            "connector.class": "FileStreamSink",
            "file": d.path("out.txt"),
            "topics": topic,
            "tasks.max": "2",
        }),
    );
    let first = [("src0", 1), ("src1", 1), ("src2", 1), ("sink", 2)];
    d.wait("every unit running on worker 0", || {
        d.all_running_on_live(&first).then_some(())
    });
    d.wait("some lines through the sink", || {
        (d.sink_lines().len() > 300).then_some(())
    });
    let owned = |d: &Drill| last_join(&d.nodes[0].log_text()).map(|j| j.3.len());
    let before = owned(&d).unwrap_or(0);
    d.start_worker_with(extra);
    d.wait("worker 0 giving tasks up", || {
        owned(&d).filter(|&n| n < before).map(|_| ())
    });
    d.note(format!(
        "worker 0 revoked tasks ({before} -> {:?}); a config change and a join while it stops them",
        owned(&d)
    ));
    d.create(
        1,
        "late",
        serde_json::json!({
            "connector.class": "FileStreamSource",
            "file": d.path("late.txt"),
            "topic": format!("late{u}"),
        }),
    );
    d.start_worker_with(extra);
    let resized = serde_json::json!({
        "connector.class": "FileStreamSink",
        "file": d.path("out.txt"),
        "topics": topic,
        "tasks.max": "3",
    })
    .to_string();
    let (status, body) = d.write(2, "PUT", "/connectors/sink/config", &resized);
    if status != 200 {
        d.fail(&format!("resizing the sink: {status} {body}"));
    }
    d.note("sink resized to 3 tasks through worker 2");
    let last = [
        ("src0", 1),
        ("src1", 1),
        ("src2", 1),
        ("sink", 3),
        ("late", 1),
    ];
    d.wait("every unit running on the three workers", || {
        d.all_running_on_live(&last).then_some(())
    });
    d.note(format!(
        "running: {:?}",
        last.iter().map(|(c, _)| d.placement(c)).collect::<Vec<_>>()
    ));
    d.check_each_line_once(&expected);
}

/// Review F11 on the real broker: a source task takes half a minute to
/// stop (its producer throttled by a broker quota, with a backlog to
/// flush). A reset of the connector's offsets right after `stop` is
/// refused with 409 while the task is still stopping (its final commit
/// would land over the reset), accepted once it has stopped, and it holds:
/// the offsets read back empty and the resumed source reads its file again
/// from the first line.
#[test]
fn an_offsets_reset_while_a_task_is_stopping_is_refused_with_409_on_real_kafka() {
    let test = "distributed_drills::an_offsets_reset_while_a_task_is_stopping_is_refused_with_409_on_real_kafka";
    let Some(bootstrap) = real_bootstrap(test) else {
        return;
    };
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut d = Drill::new("reset-stopping", bootstrap.clone());
    let client = format!("stopping{}", d.unique);
    // About 50 records a second: the 1,500 records the producer may hold
    // took 50 s to flush here (1,000 took 21 s), well past the 20 s a REST
    // request waits for a rebalance.
    set_client_quotas(&bootstrap, &[(&client, "producer_byte_rate", 5_000.0)]);
    write_lines(&d.path("in.txt"), (0..4000).map(line));
    let extra = "task.shutdown.graceful.timeout.ms=90000\n";
    d.start_worker_with(extra);
    d.start_worker_with(extra);
    let topic = format!("lines{}", d.unique);
    d.create_throttled_source("source", "in.txt", &topic, &client, 1500);
    d.create(
        0,
        "sink",
        serde_json::json!({
            "connector.class": "FileStreamSink",
            "file": d.path("out.txt"),
            "topics": topic,
        }),
    );
    d.wait("source and sink running", || {
        d.all_running_on_live(&[("source", 1), ("sink", 1)])
            .then_some(())
    });
    d.wait("some lines through the sink", || {
        (d.sink_lines().len() > 200).then_some(())
    });
    let (status, body) = d.write(1, "PUT", "/connectors/source/stop", "");
    if status != 204 {
        d.fail(&format!("stop: {status} {body}"));
    }
    let stopped_at = Instant::now();
    d.note(format!("PUT stop through worker 1: {status}"));
    let (status, body) = d.call(1, "DELETE", "/connectors/source/offsets", "");
    d.note(format!(
        "DELETE offsets through worker 1 after {:.1} s: {status} {body}",
        stopped_at.elapsed().as_secs_f64()
    ));
    let conflict = body["message"]
        .as_str()
        .is_some_and(|m| m.contains("conflicting operation"));
    if status != 409 || !conflict {
        d.fail(&format!(
            "a reset while the task stops answered {status} {body}, not 409"
        ));
    }
    let (status, body) = d.wait("the reset accepted once the task has stopped", || {
        let answer = d.call(1, "DELETE", "/connectors/source/offsets", "");
        (answer.0 != 409).then_some(answer)
    });
    d.note(format!(
        "DELETE offsets after {:.1} s: {status} {body}",
        stopped_at.elapsed().as_secs_f64()
    ));
    if status != 200 {
        d.fail(&format!("the reset answered {status} {body}"));
    }
    let (status, body) = d.call(0, "GET", "/connectors/source/offsets", "");
    if status != 200 || body["offsets"].as_array().is_none_or(|o| !o.is_empty()) {
        d.fail(&format!("offsets after the reset: {status} {body}"));
    }
    let (status, body) = d.call(0, "PUT", "/connectors/source/resume", "");
    if status != 202 {
        d.fail(&format!("resume: {status} {body}"));
    }
    d.note("resumed; the first line must come again");
    d.wait("the first line in the sink file twice", || {
        let first = line(0);
        (d.sink_lines().iter().filter(|l| **l == first).count() >= 2).then_some(())
    });
    d.note("the source read its file again from the first line");
}

/// Review F10 on the real broker: the leader can no longer read the config
/// topic (a broker quota of 1 byte a second on its internal consumers,
/// `admin.client.id`) while its group connection works. A follower pauses
/// the sink (a record the leader cannot see), then another follower dies
/// with `scheduled.rebalance.max.delay.ms=0`. Every round the leader
/// computes would fail the config check, so it leaves the group for
/// `worker.unsync.backoff.ms`, as Java's does; the surviving follower
/// leads and runs everything, the sink paused.
#[test]
fn a_leader_that_cannot_read_the_config_topic_hands_leadership_on_on_real_kafka() {
    let test = "distributed_drills::a_leader_that_cannot_read_the_config_topic_hands_leadership_on_on_real_kafka";
    let Some(bootstrap) = real_bootstrap(test) else {
        return;
    };
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut d = Drill::new("blind-leader", bootstrap.clone());
    let unique = d.unique.clone();
    let internal = |i: usize| format!("internal{unique}-{i}");
    for i in 0..3 {
        let extra = format!(
            "admin.client.id={}\nscheduled.rebalance.max.delay.ms=0\n",
            internal(i)
        );
        d.start_worker_with(&extra);
    }
    d.source_and_sink(0, 2);
    let units = [("source", 1), ("sink", 2)];
    d.wait("source and sink running", || {
        d.all_running_on_live(&units).then_some(())
    });
    let leader = d.wait("a leader", || d.leader());
    let mut followers = (0..3).filter(|&i| i != leader);
    let (keep, victim) = (followers.next().unwrap(), followers.next().unwrap());
    set_client_quotas(
        &bootstrap,
        &[(&internal(leader), "consumer_byte_rate", 1.0)],
    );
    d.note(format!(
        "worker {leader} (the leader) throttled to 1 byte/s on its internal consumers"
    ));
    // The broker applies a quota within a moment; give it that before the
    // record the leader must not see.
    std::thread::sleep(Duration::from_secs(3));
    let (status, body) = d.call(keep, "PUT", "/connectors/sink/pause", "");
    if status != 202 {
        d.fail(&format!("pause through worker {keep}: {status} {body}"));
    }
    d.note(format!("sink paused through worker {keep}"));
    let killed_at = Instant::now();
    d.nodes[victim].kill_9();
    d.note(format!("kill -9 of worker {victim}"));
    let survivor = d.nodes[keep].worker_id();
    d.wait(
        "everything on the surviving follower, the sink paused",
        || {
            let source = d.placement_from(keep, "source");
            let sink = d.placement_from(keep, "sink");
            let on = |units: &[(String, String, String)], n: usize, state: &str| {
                units.len() == n && units.iter().all(|(_, s, w)| s == state && *w == survivor)
            };
            (on(&source, 2, "RUNNING") && on(&sink, 3, "PAUSED")).then_some(())
        },
    );
    d.note(format!(
        "worker {keep} runs everything {:.1} s after the kill: {:?} {:?}",
        killed_at.elapsed().as_secs_f64(),
        d.placement_from(keep, "source"),
        d.placement_from(keep, "sink")
    ));
    let log = d.nodes[leader].log_text();
    if !log.contains("could not read the config topic") {
        d.fail("the old leader's log does not say why it left");
    }
    let new_leader = d.leader();
    if new_leader != Some(keep) {
        d.fail(&format!("the leader is {new_leader:?}, not worker {keep}"));
    }
}

/// What the REST client of the churn drill got, per kind of request.
#[derive(Default)]
struct Answers {
    /// (request, status) -> count; status 0: the worker could not be
    /// reached (killed).
    counts: BTreeMap<(&'static str, u16), usize>,
    /// The slowest answer.
    slowest: Duration,
}

/// REST under churn (issue 27 item 4): 3 workers under load, cycles of
/// kill -9 and restart of one worker (`DRILL_CHURN_CYCLES`, 3 in CI),
/// while a client sends, through random live workers, config writes,
/// connector restarts (both forwarded to the leader), task restarts
/// (forwarded to the owner) and status reads. Requests that meet a
/// rebalance wait for it (up to 20 s) before answering 409; forwarding
/// follows a leader that changed. The share of 409 and 500 answers is
/// printed (with `DRILL_WORKER_BIN` another build is measured the same
/// way); every line reaches the sink and no answer takes 60 s.
#[test]
fn rest_answers_under_churn_on_real_kafka() {
    let test = "distributed_drills::rest_answers_under_churn_on_real_kafka";
    let Some(bootstrap) = real_bootstrap(test) else {
        return;
    };
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let cycles: usize = std::env::var("DRILL_CHURN_CYCLES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3);
    let mut d = Drill::new("rest-churn", bootstrap);
    for _ in 0..3 {
        d.start_worker();
    }
    let writer = Writer::start(&d.path("in.txt"), 200);
    d.source_and_sink(0, 2);
    std::fs::write(d.path("idle.txt"), "").unwrap();
    let (idle_file, idle_topic) = (d.path("idle.txt"), format!("idle{}", d.unique));
    let idle = |n: usize| {
        serde_json::json!({
            "connector.class": "FileStreamSource",
            "file": idle_file,
            "topic": idle_topic,
            "batch.size": (100 + n % 2).to_string(),
        })
        .to_string()
    };
    let (status, body) = d.write(0, "PUT", "/connectors/idle/config", &idle(0));
    if status != 201 {
        d.fail(&format!("creating idle: {status} {body}"));
    }
    let units = [("source", 1), ("sink", 2), ("idle", 1)];
    d.wait("every unit running", || {
        d.all_running_on_live(&units).then_some(())
    });
    let ports: Vec<u16> = d.nodes.iter().map(|n| n.port).collect();
    let answers = Mutex::new(Answers::default());
    let done = AtomicBool::new(false);
    let churned = std::thread::scope(|s| {
        s.spawn(|| {
            let mut n = 0usize;
            while !done.load(Ordering::SeqCst) {
                n += 1;
                let port = ports[n % ports.len()];
                let base = format!("http://127.0.0.1:{port}");
                let (what, method, path, body) = match n % 4 {
                    0 => ("PUT config", "PUT", "/connectors/idle/config", idle(n)),
                    1 => (
                        "POST connector restart",
                        "POST",
                        "/connectors/sink/restart",
                        String::new(),
                    ),
                    2 => (
                        "POST task restart",
                        "POST",
                        "/connectors/source/tasks/0/restart",
                        String::new(),
                    ),
                    _ => (
                        "GET status",
                        "GET",
                        "/connectors/sink/status",
                        String::new(),
                    ),
                };
                let began = Instant::now();
                let status = try_curl(&base, method, path, &body).map_or(0, |(s, _)| s);
                let took = began.elapsed();
                let mut a = answers.lock().unwrap();
                *a.counts.entry((what, status)).or_default() += 1;
                a.slowest = a.slowest.max(took);
                drop(a);
                std::thread::sleep(Duration::from_millis(250));
            }
        });
        let run = || {
            for cycle in 0..cycles {
                let victim = cycle % 3;
                d.nodes[victim].kill_9();
                d.note(format!("cycle {cycle}: kill -9 of worker {victim}"));
                d.wait("every unit running on a live worker", || {
                    d.all_running_on_live(&units).then_some(())
                });
                d.note("every unit runs on a live worker");
                d.restart_worker(victim);
                d.wait("every unit running after the restart", || {
                    d.all_running_on_live(&units).then_some(())
                });
                // Work moves back to the restarted worker after the delay.
                std::thread::sleep(Duration::from_millis(DELAY_MS + 2000));
            }
        };
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(run));
        done.store(true, Ordering::SeqCst);
        outcome
    });
    let a = answers.into_inner().unwrap();
    // The answers so far, also when the churn failed.
    let total: usize = a.counts.values().sum();
    let reached: usize = a
        .counts
        .iter()
        .filter(|((_, s), _)| *s != 0)
        .map(|(_, n)| n)
        .sum();
    let share = |status: u16| {
        let n: usize = a
            .counts
            .iter()
            .filter(|((_, s), _)| *s == status)
            .map(|(_, n)| n)
            .sum();
        format!("{n} ({:.1}%)", 100.0 * n as f64 / reached.max(1) as f64)
    };
    d.note(format!(
        "{total} requests, {reached} answered: 409 {}, 500 {}, slowest {:.1} s",
        share(409),
        share(500),
        a.slowest.as_secs_f64()
    ));
    for ((what, status), n) in &a.counts {
        d.note(format!("  {what}: {status} x{n}"));
    }
    if let Err(e) = churned {
        std::panic::resume_unwind(e);
    }
    let written = writer.finish();
    d.check_every_line(written);
    if a.slowest >= Duration::from_secs(60) {
        d.fail("a request went unanswered for 60 s");
    }
    // A worker that dies or a rebalance is waited out (then 409); a 500
    // means a request failed on the way (it did before issue 27's item 4:
    // 16-18% of the answers).
    let failed: usize = a
        .counts
        .iter()
        .filter(|((_, s), _)| *s >= 500)
        .map(|(_, n)| n)
        .sum();
    if failed > 0 {
        d.fail(&format!("{failed} requests answered 5xx"));
    }
}

/// Whether `reader` has read every drill line below `written`.
fn has_lines(reader: &CommittedReader, written: usize) -> bool {
    reader.has_all((0..written).map(line))
}

/// Of the drill's lines below `written`: the missing ones, the values read
/// more than once (with their counts), and the records that were no line.
fn tally(reader: &CommittedReader, written: usize) -> (Vec<usize>, Vec<(String, u32)>, usize) {
    let counts = reader.counts();
    let missing = (0..written)
        .filter(|&n| !counts.contains_key(&line(n)))
        .collect();
    let twice = counts
        .iter()
        .filter(|(_, &c)| c > 1)
        .map(|(v, &c)| (v.clone(), c))
        .collect();
    let other = counts
        .iter()
        .filter(|(v, _)| !v.starts_with("line-"))
        .map(|(_, &c)| c as usize)
        .sum();
    (missing, twice, other)
}

/// A small seeded generator for the drills' random choices: the seed is
/// printed, and `DRILL_SEED` replays a run's choices.
struct DrillRng(u64);

impl DrillRng {
    fn new(d: &Drill) -> DrillRng {
        let seed = std::env::var("DRILL_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap()
                    .as_nanos() as u64
            });
        d.note(format!("random choices from DRILL_SEED={seed}"));
        DrillRng(seed)
    }

    /// splitmix64: each output well mixed even from a seed of nanoseconds.
    fn below(&mut self, n: usize) -> usize {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        ((z ^ (z >> 31)) % n as u64) as usize
    }
}

/// How many kill -9/restart cycles the exactly-once drill and its
/// at-least-once twin run: 20 in CI (what the issue asks), more with
/// `EOS_DRILL_CYCLES`, e.g. 100 for a long run.
fn eos_drill_cycles() -> usize {
    std::env::var("EOS_DRILL_CYCLES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20)
}

/// Three workers, a FileStream source under load, and `cycles` rounds of
/// kill -9 of a worker and its restart (every other round the one running
/// the source task, the others a random one); after each round the drill
/// waits until a `read_committed` reader has every line written so far (the
/// source runs again), so no two kills fall on one outage. Returns the
/// reader's tally once every written line has arrived: lines read more
/// than once, and records that were no line.
fn kill_9_cycles_under_load(
    d: &mut Drill,
    exactly_once: bool,
    cycles: usize,
) -> (usize, Vec<(String, u32)>, usize) {
    let support = if exactly_once { "enabled" } else { "disabled" };
    for _ in 0..3 {
        d.start_worker_with(&format!("exactly.once.source.support={support}\n"));
    }
    let topic = format!("lines{}", d.unique);
    let reader = CommittedReader::start(&d.bootstrap, &topic);
    let writer = Writer::start(&d.path("in.txt"), 400);
    let mut config = serde_json::json!({
        "connector.class": "FileStreamSource",
        "file": d.path("in.txt"),
        "topic": topic,
    });
    if exactly_once {
        config["transaction.boundary"] = "poll".into();
    }
    d.create(0, "source", config);
    let units = [("source", 1)];
    d.wait("the source running", || {
        d.all_running_on_live(&units).then_some(())
    });
    let mut rng = DrillRng::new(d);
    let mut task_kills = 0;
    for cycle in 0..cycles {
        // Let lines flow for a moment, so that every kill falls on a
        // source in the middle of its work.
        std::thread::sleep(Duration::from_millis(500 + 100 * rng.below(10) as u64));
        // Every other kill takes the worker running the source task (the
        // kill that replays or aborts); the others a random worker, which
        // may be that one, the connector's or the leader.
        let task_worker = d
            .placement("source")
            .into_iter()
            .find(|(unit, _, _)| unit != "connector")
            .map(|(_, _, worker)| worker)
            .unwrap_or_default();
        let victim = match cycle % 2 {
            0 => (0..d.nodes.len())
                .find(|&i| d.nodes[i].worker_id() == task_worker)
                .unwrap_or_else(|| rng.below(d.nodes.len())),
            _ => rng.below(d.nodes.len()),
        };
        let ran_task = d.nodes[victim].worker_id() == task_worker;
        task_kills += usize::from(ran_task);
        d.nodes[victim].kill_9();
        d.note(format!(
            "cycle {cycle}: kill -9 of worker {victim}{}; {} lines written so far",
            if ran_task {
                ", which ran the source task"
            } else {
                ""
            },
            writer.written()
        ));
        d.restart_worker(victim);
        let written = writer.written();
        let outage = Instant::now();
        // Lines written before the restart all arrive: the source task runs
        // again, wherever the group put it. A group that lost a member waits
        // for its session to expire and the scheduled delay.
        let deadline = Instant::now() + MOVE_BUDGET + Duration::from_secs(60);
        while !has_lines(&reader, written) {
            if Instant::now() > deadline {
                let (missing, _, _) = tally(&reader, written);
                d.fail(&format!(
                    "cycle {cycle}: {} of the {written} lines written before the restart had \
                     not arrived {:?} after it (first: {:?})",
                    missing.len(),
                    outage.elapsed(),
                    missing.first().map(|&n| line(n))
                ));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        d.note(format!(
            "cycle {cycle}: all {written} lines before the restart read, {:.1} s after it",
            outage.elapsed().as_secs_f64()
        ));
    }
    let written = writer.finish();
    d.note(format!(
        "stopped writing after {written} lines; {task_kills} of {cycles} kills hit the source task's worker"
    ));
    d.wait(
        "every written line read by the read_committed reader",
        || has_lines(&reader, written).then_some(()),
    );
    // Anything still in flight (a last transaction, a replay) lands
    // before the tally: one offset flush and a poll or two.
    std::thread::sleep(Duration::from_secs(3));
    let (missing, twice, other) = tally(&reader, written);
    assert!(missing.is_empty(), "checked by the wait above");
    (written, twice, other)
}

/// KIP-618 on the real broker, the "done when": three workers with
/// `exactly.once.source.support=enabled`, a FileStream source with a
/// transaction per poll under load, and 20 kill -9/restart cycles of
/// workers, every other one the source task's, the others random
/// (`EOS_DRILL_CYCLES` for more). A `read_committed` reader of the
/// topic sees every line exactly once: a killed task's open transaction is
/// aborted when its next instance takes over the transactional id, and that
/// instance resumes from the offsets committed in the same transactions as
/// the records. The twin below runs the same drill at least once and
/// must see duplicates, so this one can fail.
#[test]
fn exactly_once_sources_write_each_line_once_through_kill_9_cycles_on_real_kafka() {
    let test = "distributed_drills::exactly_once_sources_write_each_line_once_through_kill_9_cycles_on_real_kafka";
    let Some(bootstrap) = real_bootstrap(test) else {
        return;
    };
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut d = Drill::new("eos-kill-9", bootstrap);
    let cycles = eos_drill_cycles();
    let (written, twice, other) = kill_9_cycles_under_load(&mut d, true, cycles);
    if !twice.is_empty() || other > 0 {
        d.fail(&format!(
            "of {written} lines, {} were read more than once (first 5: {:?}); {other} records \
             were no line",
            twice.len(),
            &twice[..twice.len().min(5)]
        ));
    }
    d.note(format!(
        "all {written} lines read exactly once through {cycles} kill -9 cycles"
    ));
}

/// The exactly-once drill's twin with `exactly.once.source.support=disabled`:
/// the same kills deliver some lines twice (offsets flushed every 500 ms
/// trail the records), which is what the exactly-once mode removes. It
/// fails if no line arrives twice, since then the exactly-once drill proves
/// nothing.
#[test]
fn at_least_once_sources_write_lines_twice_through_the_same_kill_9_cycles_on_real_kafka() {
    let test = "distributed_drills::at_least_once_sources_write_lines_twice_through_the_same_kill_9_cycles_on_real_kafka";
    let Some(bootstrap) = real_bootstrap(test) else {
        return;
    };
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut d = Drill::new("alo-kill-9", bootstrap);
    let cycles = eos_drill_cycles();
    let (written, twice, _) = kill_9_cycles_under_load(&mut d, false, cycles);
    if twice.is_empty() {
        d.fail(&format!(
            "at least once, {cycles} kill -9 cycles delivered all {written} lines exactly once: \
             the exactly-once drill's twin shows nothing for it to remove"
        ));
    }
    let extra: u32 = twice.iter().map(|(_, c)| c - 1).sum();
    d.note(format!(
        "at least once: all {written} lines arrived, {} of them more than once ({extra} extra records)",
        twice.len()
    ));
}

/// A zombie task, the way: the worker running an exactly-once
/// source task is paused with SIGSTOP past its session, the group gives
/// the task to another worker, whose producer takes over the task's
/// transactional id; then the paused worker resumes (SIGCONT) with an open
/// transaction and a file that grew meanwhile, and its task tries to commit.
/// It cannot: a `read_committed` reader sees every line exactly once, and
/// the task ends RUNNING where the group put it (which may be the woken
/// worker again, as a new instance).
#[test]
fn a_paused_worker_cannot_commit_after_its_exactly_once_task_moved_on_real_kafka() {
    let test = "distributed_drills::a_paused_worker_cannot_commit_after_its_exactly_once_task_moved_on_real_kafka";
    let Some(bootstrap) = real_bootstrap(test) else {
        return;
    };
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut d = Drill::new("eos-zombie", bootstrap);
    for _ in 0..3 {
        d.start_worker_with("exactly.once.source.support=enabled\n");
    }
    let topic = format!("lines{}", d.unique);
    let reader = CommittedReader::start(&d.bootstrap, &topic);
    let writer = Writer::start(&d.path("in.txt"), 400);
    d.create(
        0,
        "source",
        serde_json::json!({
            "connector.class": "FileStreamSource",
            "file": d.path("in.txt"),
            "topic": topic,
            "transaction.boundary": "poll",
        }),
    );
    let units = [("source", 1)];
    d.wait("the exactly-once source running", || {
        d.all_running_on_live(&units).then_some(())
    });
    std::thread::sleep(Duration::from_secs(2));
    let task_on = |from: usize| {
        d.placement_from(from, "source")
            .into_iter()
            .find(|(unit, state, _)| unit != "connector" && state == "RUNNING")
            .map(|(_, _, worker)| worker)
    };
    let zombie_id = d.wait("the task's worker", || task_on(d.any()));
    let zombie = (0..d.nodes.len())
        .find(|&i| d.nodes[i].worker_id() == zombie_id)
        .expect("the worker running the task");
    let other = (zombie + 1) % d.nodes.len();
    let joins_before = d.nodes[zombie]
        .log_text()
        .matches("joined the Connect group")
        .count();
    let starts_before = d.nodes[zombie]
        .log_text()
        .matches("starting task connector=source task=0")
        .count();
    d.nodes[zombie].signal("STOP");
    d.note(format!(
        "SIGSTOP to worker {zombie}, which runs the source task; {} lines written so far",
        writer.written()
    ));
    d.wait("the task RUNNING on another worker", || {
        task_on(other).filter(|w| *w != zombie_id)
    });
    let written = writer.written();
    d.wait(
        "the lines written so far read, from the task's new instance",
        || has_lines(&reader, written).then_some(()),
    );
    d.note(format!(
        "the task runs on {:?}; all {written} lines written so far read",
        task_on(other)
    ));
    d.nodes[zombie].signal("CONT");
    d.note(format!("SIGCONT to worker {zombie}: the zombie wakes"));
    d.wait("the zombie back in the group", || {
        let joins = d.nodes[zombie]
            .log_text()
            .matches("joined the Connect group")
            .count();
        (joins > joins_before).then_some(())
    });
    // Where the group puts the task now is the assignor's choice: the
    // woken worker is a member again and may get it back (a new instance,
    // started after the wake; its old one was fenced and stopped). The old
    // instance's status cannot win: the status store refuses a write of an
    // older generation.
    let placed = d.wait("the task RUNNING on one worker, as all see it", || {
        let seen: Vec<Option<String>> = (0..d.nodes.len()).map(task_on).collect();
        match seen.first() {
            Some(Some(w)) if seen.iter().all(|s| s.as_ref() == Some(w)) => Some(w.clone()),
            _ => None,
        }
    });
    if placed == zombie_id {
        let starts = d.nodes[zombie]
            .log_text()
            .matches("starting task connector=source task=0")
            .count();
        if starts <= starts_before {
            d.fail("the task shows RUNNING on the woken worker, but no new instance started there: the fenced one still reports");
        }
    }
    d.note(format!(
        "the task RUNNING on {placed} (the woken worker: {})",
        placed == zombie_id
    ));
    let written = writer.finish();
    d.wait("every written line read", || {
        has_lines(&reader, written).then_some(())
    });
    std::thread::sleep(Duration::from_secs(3));
    let (_, twice, other_records) = tally(&reader, written);
    let fenced: Vec<String> = d.nodes[zombie]
        .log_text()
        .lines()
        .filter(|l| l.contains("enced"))
        .take(3)
        .map(str::to_string)
        .collect();
    d.note(format!("the zombie's log on fencing: {fenced:#?}"));
    if !twice.is_empty() || other_records > 0 {
        d.fail(&format!(
            "of {written} lines, {} were read more than once (first 5: {:?}): the zombie \
             committed; {other_records} records were no line",
            twice.len(),
            &twice[..twice.len().min(5)]
        ));
    }
    d.note(format!("all {written} lines read exactly once"));
}
