//! The measuring tool of the rebalance benchmark (`benches/rebalance/run.sh`,
//! results in BENCHMARKS.md): one round of one side, three distributed
//! workers (ours, `connect-distributed`, or Kafka Connect 4.4's
//! `ConnectDistributed` JVMs) in a fresh group on a real broker, timed from
//! the outside through REST; and the summary of every round.
//!
//! ```text
//! rebalance round ours|java ROUND BOOTSTRAP DIR OURS_BIN JAVA_PROJECT
//! rebalance summary RESULTS.tsv
//! ```
//!
//! A round, each step timed from the moment it begins to the first poll
//! (every `POLL`, one `GET /connectors?expand=status` on a live worker) that
//! sees every connector and every task RUNNING on a live worker:
//! 1. `start`: launch the three workers at once; the connectors are posted
//!    to a worker as soon as its log says it joined the group (retried until
//!    accepted). Also `rest_first` (the first `GET /` that answers 200 on any
//!    of the three), `rest_all` (all three answered) and `group_first` (the
//!    first worker log line saying it joined the group) and `start_spread`
//!    (until, besides, each of the three runs at least one unit);
//! 2. `kill_follower`: SIGKILL of a worker that is not the leader;
//! 3. `join_after_follower`: a fresh worker starts (2 -> 3); until it runs at
//!    least one unit and every unit runs (the exec and the JVM start count);
//! 4. `kill_leader`: SIGKILL of the leader (the last join line of each live
//!    worker's log: ours `joined the Connect group ... leader=true`, Java's
//!    `Joined group at generation N ... leaderUrl='http://<own id>/'`);
//! 5. `join_after_leader`: another fresh worker (2 -> 3), as in 3;
//! 6. `config_change`: `PUT /connectors/sink-0/config` with `tasks.max` one
//!    higher (3 -> 4), until sink-0's four tasks and every other unit run;
//! 7. `leave`: SIGTERM of the follower with the most units (a graceful
//!    leave), until every unit runs on the other two; also `leave_gap_max`
//!    and `leave_gap_median`: for each unit that moved, the time between the
//!    last poll that saw it RUNNING on the leaving worker and the first that
//!    saw it RUNNING on another (the stop-to-start gap, to within a poll).
//!
//! Output: one tab-separated line per measure on stdout
//! (`side round step value unit`), RSS lines (`VmHWM` of each worker just
//! before it is killed or at the end of the round) included. Settings come
//! from the environment: `SESSION_MS` (default 10000), `HEARTBEAT_MS` (3000),
//! `DELAY_MS` (`scheduled.rebalance.max.delay.ms`, 0), `POLL_MS` (50).

// Its results are its standard output.
#![allow(clippy::print_stdout)]

use std::collections::{BTreeMap, BTreeSet};
use std::error::Error;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::config::ClientConfig;
use serde_json::{json, Value};

type Result<T> = std::result::Result<T, Box<dyn Error>>;

/// A step gives up after this long.
const STEP_DEADLINE: Duration = Duration::from_secs(240);
/// Sinks (tasks.max=3 each, over a topic of 3 partitions) and sources
/// (one task each).
const SINKS: usize = 4;
const SINK_TASKS: usize = 3;
const SOURCES: usize = 2;

fn env_ms(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("round") if args.len() == 7 => round(&args[1..]),
        Some("summary") if args.len() == 2 => summary(&args[1]),
        _ => Err("usage: see the docs of benches/src/bin/rebalance.rs".into()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rebalance: {e}");
            ExitCode::from(2)
        }
    }
}

// ---------------------------------------------------------------------------
// HTTP (one request per connection)

fn http(port: u16, method: &str, path: &str, body: Option<&Value>) -> Option<(u16, Value)> {
    let addr = format!("127.0.0.1:{port}");
    let mut stream =
        TcpStream::connect_timeout(&addr.parse().ok()?, Duration::from_millis(500)).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .ok()?;
    let payload = body.map(Value::to_string).unwrap_or_default();
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
    Some((status, serde_json::from_str(&text).unwrap_or(Value::Null)))
}

// ---------------------------------------------------------------------------
// Workers

struct Worker {
    n: usize,
    port: u16,
    child: Option<Child>,
    log: PathBuf,
    java: bool,
    /// Sent SIGTERM: its units must move, whether or not it has exited.
    leaving: bool,
}

impl Worker {
    fn id(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    fn alive(&self) -> bool {
        self.child.is_some() && !self.leaving
    }

    /// SIGTERM: a graceful shutdown (the process exits by itself).
    fn terminate(&mut self) -> Result<()> {
        let pid = self.child.as_ref().ok_or("not running")?.id();
        let status = Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .status()?;
        if !status.success() {
            return Err(format!("kill -TERM {pid} failed: {status}").into());
        }
        self.leaving = true;
        Ok(())
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The last join line of its log: (generation, leads).
    fn last_join(&self) -> Option<(i64, bool)> {
        let log = self.log_text();
        let mut last = None;
        for line in log.lines() {
            if self.java {
                // "Joined group at generation 3 with protocol version 2 and got
                // assignment: Assignment{error=0, leader='...', leaderUrl='http://host:port/', ..."
                if let Some((_, r)) = line.split_once("Joined group at generation ") {
                    let g = r.split(' ').next().and_then(|g| g.parse().ok());
                    let leads = line.contains(&format!("leaderUrl='http://{}/'", self.id()));
                    if let Some(g) = g {
                        last = Some((g, leads));
                    }
                }
            } else if line.contains("joined the Connect group") {
                let g = line
                    .split_once("generation=")
                    .and_then(|(_, r)| r.split(|c: char| !c.is_ascii_digit()).next())
                    .and_then(|g| g.parse().ok());
                if let Some(g) = g {
                    last = Some((g, line.contains("leader=true")));
                }
            }
        }
        last
    }

    fn peak_rss_mib(&self) -> Option<f64> {
        let pid = self.child.as_ref()?.id();
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
        let kb: f64 = status
            .lines()
            .find(|l| l.starts_with("VmHWM:"))?
            .split_whitespace()
            .nth(1)?
            .parse()
            .ok()?;
        Some(kb / 1024.0)
    }

    fn kill_9(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.kill_9();
    }
}

fn free_port() -> Result<u16> {
    Ok(connect_test_support::free_port().ok_or("no free port in 20000-31999")?)
}

struct Round {
    side: String,
    round: String,
    bootstrap: String,
    dir: PathBuf,
    ours: PathBuf,
    java_project: PathBuf,
    group: String,
    workers: Vec<Worker>,
    poll: Duration,
    /// `tasks.max` of sink-0 (raised by the config change step).
    sink0_tasks: usize,
    session_ms: u64,
    heartbeat_ms: u64,
    delay_ms: u64,
}

impl Round {
    fn emit(&self, step: &str, value: f64, unit: &str) {
        println!("{}\t{}\t{step}\t{value:.0}\t{unit}", self.side, self.round);
        let _ = std::io::stdout().flush();
        eprintln!(
            "rebalance: {} round {}: {step} {value:.0} {unit}",
            self.side, self.round
        );
    }

    fn java(&self) -> bool {
        self.side == "java"
    }

    fn props(&self, port: u16) -> String {
        let g = &self.group;
        format!(
            "bootstrap.servers={}\n\
             group.id={g}\n\
             config.storage.topic={g}-configs\n\
             offset.storage.topic={g}-offsets\n\
             status.storage.topic={g}-status\n\
             config.storage.replication.factor=1\n\
             offset.storage.replication.factor=1\n\
             status.storage.replication.factor=1\n\
             key.converter=org.apache.kafka.connect.json.JsonConverter\n\
             value.converter=org.apache.kafka.connect.json.JsonConverter\n\
             key.converter.schemas.enable=true\n\
             value.converter.schemas.enable=true\n\
             offset.flush.interval.ms=10000\n\
             listeners=http://127.0.0.1:{port}\n\
             session.timeout.ms={}\n\
             heartbeat.interval.ms={}\n\
             scheduled.rebalance.max.delay.ms={}\n",
            self.bootstrap, self.session_ms, self.heartbeat_ms, self.delay_ms
        )
    }

    /// Launch one more worker (no wait).
    fn launch(&mut self) -> Result<usize> {
        let n = self.workers.len();
        let port = free_port()?;
        let wdir = self.dir.join(format!("w{n}"));
        std::fs::create_dir_all(&wdir)?;
        let props = wdir.join("worker.properties");
        std::fs::write(&props, self.props(port))?;
        let out = std::fs::File::create(wdir.join("stdout.log"))?;
        let (child, log) = if self.java() {
            let p = &self.java_project;
            let classpath = format!(
                "{}:{}/*",
                p.join("target/connect-java.jar").display(),
                p.join("target/lib").display()
            );
            // The heap and GC flags of Kafka's bin/connect-distributed.sh and
            // kafka-run-class.sh.
            let child = Command::new("java")
                .args([
                    "-Xms256M",
                    "-Xmx2G",
                    "-server",
                    "-XX:+UseG1GC",
                    "-XX:MaxGCPauseMillis=20",
                    "-XX:InitiatingHeapOccupancyPercent=35",
                    "-XX:+ExplicitGCInvokesConcurrent",
                    "-XX:MaxInlineLevel=15",
                    "-Djava.awt.headless=true",
                ])
                .arg(format!(
                    "-Dlog4j2.configurationFile={}",
                    p.join("log4j2.properties").display()
                ))
                .arg(format!("-Dkafka.logs.dir={}", wdir.display()))
                .arg("-cp")
                .arg(classpath)
                .arg("org.apache.kafka.connect.cli.ConnectDistributed")
                .arg(&props)
                .current_dir(&wdir)
                .stdin(Stdio::null())
                .stdout(out.try_clone()?)
                .stderr(out)
                .spawn()?;
            (child, wdir.join("connect.log"))
        } else {
            let child = Command::new(&self.ours)
                .arg(&props)
                .current_dir(&wdir)
                .env("RUST_LOG", "info")
                .env("NO_COLOR", "1")
                .stdin(Stdio::null())
                .stdout(out.try_clone()?)
                .stderr(out)
                .spawn()?;
            (child, wdir.join("stdout.log"))
        };
        self.workers.push(Worker {
            n,
            port,
            child: Some(child),
            log,
            java: self.java(),
            leaving: false,
        });
        Ok(n)
    }

    fn live_ids(&self) -> Vec<String> {
        self.workers
            .iter()
            .filter(|w| w.alive())
            .map(Worker::id)
            .collect()
    }

    fn connector_names() -> Vec<String> {
        (0..SINKS)
            .map(|i| format!("sink-{i}"))
            .chain((0..SOURCES).map(|i| format!("source-{i}")))
            .collect()
    }

    fn connector_config(&self, name: &str) -> Value {
        let topic = format!("{}-data", self.group);
        let file = |f: String| self.dir.join(f).display().to_string();
        if let Some(i) = name.strip_prefix("sink-") {
            json!({
                "name": name,
                "config": {
                    "connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector",
                    "tasks.max": if name == "sink-0" { self.sink0_tasks } else { SINK_TASKS }.to_string(),
                    "topics": topic,
                    "file": file(format!("out-{i}.txt")),
                }
            })
        } else {
            let i = name.strip_prefix("source-").unwrap_or("0");
            json!({
                "name": name,
                "config": {
                    "connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
                    "tasks.max": "1",
                    "topic": topic,
                    "file": file(format!("in-{i}.txt")),
                }
            })
        }
    }

    /// Ok(units per worker id) when every connector and task is RUNNING on
    /// a live worker; Err(why not) otherwise.
    fn placement(&self) -> std::result::Result<BTreeMap<String, usize>, String> {
        let live = self.live_ids();
        let mut reply = None;
        for w in self.workers.iter().filter(|w| w.alive()) {
            if let Some((200, body)) = http(w.port, "GET", "/connectors?expand=status", None) {
                reply = Some(body);
                break;
            }
        }
        let body = reply.ok_or("no live worker answered GET /connectors?expand=status")?;
        let mut per_worker = BTreeMap::new();
        let mut unit = |what: String, s: &Value| -> std::result::Result<(), String> {
            let state = s["state"].as_str().unwrap_or("?");
            let id = s["worker_id"].as_str().unwrap_or("?");
            if state != "RUNNING" {
                return Err(format!("{what} is {state} on {id}"));
            }
            if !live.iter().any(|l| l == id) {
                return Err(format!("{what} is RUNNING on {id}, which is dead"));
            }
            *per_worker.entry(id.to_string()).or_insert(0) += 1;
            Ok(())
        };
        for name in Self::connector_names() {
            let status = &body[&name]["status"];
            if status.is_null() {
                return Err(format!("{name} has no status yet"));
            }
            unit(format!("{name} (connector)"), &status["connector"])?;
            let tasks = status["tasks"].as_array().cloned().unwrap_or_default();
            let want = if name == "sink-0" {
                self.sink0_tasks
            } else if name.starts_with("sink") {
                SINK_TASKS
            } else {
                1
            };
            if tasks.len() != want {
                return Err(format!("{name} has {} of {want} tasks", tasks.len()));
            }
            for t in &tasks {
                unit(format!("{name}/{}", t["id"]), t)?;
            }
        }
        Ok(per_worker)
    }

    /// Every unit REST reports RUNNING, with its worker id (alive or not).
    fn units_running(&self) -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        let Some(body) = self.workers.iter().filter(|w| w.alive()).find_map(|w| {
            match http(w.port, "GET", "/connectors?expand=status", None) {
                Some((200, body)) => Some(body),
                _ => None,
            }
        }) else {
            return out;
        };
        for name in Self::connector_names() {
            let status = &body[&name]["status"];
            let mut add = |unit: String, s: &Value| {
                if s["state"] == "RUNNING" {
                    out.insert(unit, s["worker_id"].as_str().unwrap_or("?").to_string());
                }
            };
            add(name.clone(), &status["connector"]);
            for t in status["tasks"].as_array().into_iter().flatten() {
                add(format!("{name}/{}", t["id"]), t);
            }
        }
        out
    }

    /// Poll until `done` says yes; the time since `from`.
    fn wait(
        &self,
        what: &str,
        from: Instant,
        mut done: impl FnMut(&BTreeMap<String, usize>) -> bool,
    ) -> Result<Duration> {
        let mut last: String;
        loop {
            match self.placement() {
                Ok(p) if done(&p) => return Ok(from.elapsed()),
                Ok(p) => last = format!("placement {p:?}"),
                Err(e) => last = e,
            }
            if from.elapsed() > STEP_DEADLINE {
                return Err(format!("{what}: not done after {STEP_DEADLINE:?}: {last}").into());
            }
            std::thread::sleep(self.poll);
        }
    }

    /// The leader, the live follower with the most units, and the
    /// placement they were read from (`before` names the step for errors).
    fn busiest_follower(&self, before: &str) -> Result<(usize, usize, BTreeMap<String, usize>)> {
        let leader = self.leader().ok_or("no leader in the logs")?;
        let placement = self
            .placement()
            .map_err(|e| format!("before the {before}: {e}"))?;
        let follower = self
            .workers
            .iter()
            .filter(|w| w.alive() && w.n != leader)
            .max_by_key(|w| placement.get(&w.id()).copied().unwrap_or(0))
            .map(|w| w.n)
            .ok_or("no follower")?;
        Ok((leader, follower, placement))
    }

    fn leader(&self) -> Option<usize> {
        self.workers
            .iter()
            .filter(|w| w.alive())
            .filter_map(|w| w.last_join().map(|(g, leads)| (g, leads, w.n)))
            .filter(|(_, leads, _)| *leads)
            .max()
            .map(|(_, _, n)| n)
    }

    fn emit_rss(&self, w: &Worker) {
        if let Some(mib) = w.peak_rss_mib() {
            self.emit(&format!("rss_w{}", w.n), mib, "MiB");
        }
    }

    fn kill(&mut self, n: usize) -> Instant {
        self.emit_rss(&self.workers[n]);
        self.workers[n].kill_9();
        Instant::now()
    }

    /// Start one worker and time until it runs a unit and every unit runs.
    fn join(&mut self, step: &str) -> Result<()> {
        let t = Instant::now();
        let n = self.launch()?;
        let id = self.workers[n].id();
        let took = self.wait(step, t, |p| p.get(&id).copied().unwrap_or(0) > 0)?;
        self.emit(step, took.as_secs_f64() * 1000.0, "ms");
        Ok(())
    }

    fn run(&mut self) -> Result<()> {
        // The data topic (3 partitions) and the source files.
        create_topic(&self.bootstrap, &format!("{}-data", self.group), 3)?;
        for i in 0..SOURCES {
            let lines: String = (0..100).map(|l| format!("source-{i}-line-{l}\n")).collect();
            std::fs::write(self.dir.join(format!("in-{i}.txt")), lines)?;
        }

        // 1. Start.
        let t0 = Instant::now();
        for _ in 0..3 {
            self.launch()?;
        }
        let mut rest_answered = [false; 3];
        let mut rest_first = None;
        let mut group_first = None;
        let mut created = [false; SOURCES + SINKS];
        let names = Self::connector_names();
        let mut last = String::new();
        loop {
            for (i, w) in self.workers.iter().enumerate() {
                if !rest_answered[i] && matches!(http(w.port, "GET", "/", None), Some((200, _))) {
                    rest_answered[i] = true;
                    let at = t0.elapsed();
                    rest_first.get_or_insert(at);
                    if rest_answered.iter().all(|a| *a) {
                        self.emit("rest_all", at.as_secs_f64() * 1000.0, "ms");
                    }
                }
            }
            let joined: Vec<usize> = self
                .workers
                .iter()
                .filter(|w| w.last_join().is_some())
                .map(|w| w.n)
                .collect();
            if group_first.is_none() && !joined.is_empty() {
                group_first = Some(t0.elapsed());
            }
            if let Some(&n) = joined.first() {
                for (name, done) in names.iter().zip(created.iter_mut()) {
                    if *done {
                        continue;
                    }
                    let body = self.connector_config(name);
                    match http(self.workers[n].port, "POST", "/connectors", Some(&body)) {
                        Some((201, _)) => *done = true,
                        Some((409, b)) if b.to_string().contains("already exists") => *done = true,
                        Some((s, b)) => {
                            last = format!("POST {name}: {s} {b}");
                            break;
                        }
                        None => {
                            last = format!("POST {name}: no answer");
                            break;
                        }
                    }
                }
            }
            if created.iter().all(|d| *d) {
                match self.placement() {
                    Ok(_) => break,
                    Err(e) => last = e,
                }
            }
            if t0.elapsed() > STEP_DEADLINE {
                return Err(format!("start: not done after {STEP_DEADLINE:?}: {last}").into());
            }
            std::thread::sleep(self.poll);
        }
        let start = t0.elapsed();
        if let Some(t) = rest_first {
            self.emit("rest_first", t.as_secs_f64() * 1000.0, "ms");
        }
        if let Some(t) = group_first {
            self.emit("group_first", t.as_secs_f64() * 1000.0, "ms");
        }
        self.emit("start", start.as_secs_f64() * 1000.0, "ms");
        // Work may first run on fewer than three workers: also until each of
        // the three runs at least one unit.
        let spread = self.wait("start_spread", t0, |p| p.len() == 3)?;
        self.emit("start_spread", spread.as_secs_f64() * 1000.0, "ms");

        // 2. A follower.
        let (leader, follower, placement) = self.busiest_follower("kill")?;
        eprintln!(
            "rebalance: killing follower w{follower} ({} units); leader w{leader}; placement {placement:?}",
            placement.get(&self.workers[follower].id()).copied().unwrap_or(0)
        );
        let t = self.kill(follower);
        let took = self.wait("kill_follower", t, |_| true)?;
        self.emit("kill_follower", took.as_secs_f64() * 1000.0, "ms");

        // 3. A join (2 -> 3).
        self.join("join_after_follower")?;

        // 4. The leader.
        let leader = self.leader().ok_or("no leader in the logs")?;
        let placement = self
            .placement()
            .map_err(|e| format!("before the kill: {e}"))?;
        eprintln!(
            "rebalance: killing leader w{leader} ({} units); placement {placement:?}",
            placement
                .get(&self.workers[leader].id())
                .copied()
                .unwrap_or(0)
        );
        let t = self.kill(leader);
        let took = self.wait("kill_leader", t, |_| true)?;
        self.emit("kill_leader", took.as_secs_f64() * 1000.0, "ms");

        // 5. A join (2 -> 3).
        self.join("join_after_leader")?;

        // 6. A config change: one more task for sink-0.
        self.sink0_tasks = SINK_TASKS + 1;
        let body = self.connector_config("sink-0");
        let t = Instant::now();
        let n = self
            .workers
            .iter()
            .find(|w| w.alive())
            .map(|w| w.n)
            .ok_or("no live worker")?;
        match http(
            self.workers[n].port,
            "PUT",
            "/connectors/sink-0/config",
            Some(&body["config"]),
        ) {
            Some((200, _)) => {}
            other => return Err(format!("PUT /connectors/sink-0/config: {other:?}").into()),
        }
        let took = self.wait("config_change", t, |_| true)?;
        self.emit("config_change", took.as_secs_f64() * 1000.0, "ms");

        // 7. A graceful leave of the follower with the most units.
        let (_, leaving, placement) = self.busiest_follower("leave")?;
        let leaving_id = self.workers[leaving].id();
        let on_leaving: BTreeSet<String> = self
            .units_running()
            .into_iter()
            .filter(|(_, w)| *w == leaving_id)
            .map(|(u, _)| u)
            .collect();
        eprintln!(
            "rebalance: SIGTERM to follower w{leaving} ({} units); placement {placement:?}",
            on_leaving.len()
        );
        self.emit_rss(&self.workers[leaving]);
        let t = Instant::now();
        self.workers[leaving].terminate()?;
        // Unit -> last poll that saw it RUNNING on the leaving worker.
        let mut last_old: BTreeMap<String, Instant> =
            on_leaving.iter().map(|u| (u.clone(), t)).collect();
        let mut gaps: BTreeMap<String, Duration> = BTreeMap::new();
        loop {
            let now = Instant::now();
            for (unit, worker) in self.units_running() {
                if !on_leaving.contains(&unit) {
                    continue;
                }
                if worker == leaving_id {
                    last_old.insert(unit, now);
                } else {
                    let since = last_old.get(&unit).copied().unwrap_or(t);
                    gaps.entry(unit)
                        .or_insert_with(|| now.saturating_duration_since(since));
                }
            }
            if gaps.len() == on_leaving.len() && self.placement().is_ok() {
                break;
            }
            if t.elapsed() > STEP_DEADLINE {
                return Err(format!(
                    "leave: not done after {STEP_DEADLINE:?}: moved {} of {}",
                    gaps.len(),
                    on_leaving.len()
                )
                .into());
            }
            std::thread::sleep(self.poll);
        }
        self.emit("leave", t.elapsed().as_secs_f64() * 1000.0, "ms");
        let mut gaps: Vec<f64> = gaps.values().map(|g| g.as_secs_f64() * 1000.0).collect();
        gaps.sort_by(f64::total_cmp);
        if let (Some(max), Some(median)) = (gaps.last(), gaps.get(gaps.len() / 2)) {
            self.emit("leave_gap_max", *max, "ms");
            self.emit("leave_gap_median", *median, "ms");
        }

        for w in self.workers.iter().filter(|w| w.alive()) {
            self.emit_rss(w);
        }
        Ok(())
    }
}

fn create_topic(bootstrap: &str, topic: &str, partitions: i32) -> Result<()> {
    let admin: AdminClient<DefaultClientContext> = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .create()?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let results = rt.block_on(admin.create_topics(
        &[NewTopic::new(topic, partitions, TopicReplication::Fixed(1))],
        &AdminOptions::new().operation_timeout(Some(Duration::from_secs(30))),
    ))?;
    for r in results {
        r.map_err(|(t, e)| format!("creating {t}: {e}"))?;
    }
    Ok(())
}

fn round(args: &[String]) -> Result<()> {
    let side = args[0].clone();
    if side != "ours" && side != "java" {
        return Err(format!("side must be ours or java, got {side}").into());
    }
    let nonce = SystemTime::now().duration_since(UNIX_EPOCH)?.as_millis();
    let group = format!("rebalance-{side}-{}-{nonce}", args[1]);
    let dir = Path::new(&args[3]).join(format!("{side}-{}", args[1]));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    let mut r = Round {
        side,
        round: args[1].clone(),
        bootstrap: args[2].clone(),
        dir,
        ours: PathBuf::from(&args[4]),
        java_project: PathBuf::from(&args[5]),
        group,
        workers: Vec::new(),
        poll: Duration::from_millis(env_ms("POLL_MS", 50)),
        sink0_tasks: SINK_TASKS,
        session_ms: env_ms("SESSION_MS", 10_000),
        heartbeat_ms: env_ms("HEARTBEAT_MS", 3_000),
        delay_ms: env_ms("DELAY_MS", 0),
    };
    let result = r.run();
    if let Err(e) = &result {
        for w in &r.workers {
            let log = w.log_text();
            let tail: Vec<&str> = log.lines().rev().take(15).collect();
            eprintln!(
                "--- w{} ({}) last lines of {}:",
                w.n,
                w.id(),
                w.log.display()
            );
            for l in tail.iter().rev() {
                eprintln!("{l}");
            }
        }
        eprintln!("rebalance: {} round {} failed: {e}", r.side, r.round);
        r.emit("failed", 1.0, "");
    }
    drop(r);
    result
}

// ---------------------------------------------------------------------------
// Summary

fn median_range(v: &mut [f64]) -> Option<(f64, f64, f64)> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let m = if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    };
    Some((m, v[0], v[n - 1]))
}

fn summary(path: &str) -> Result<()> {
    let text = std::fs::read_to_string(path)?;
    // (side, step) -> values
    let mut values: BTreeMap<(String, String), Vec<f64>> = BTreeMap::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split('\t').collect();
        if f.len() < 4 {
            continue;
        }
        let step = if f[2].starts_with("rss_w") {
            "rss"
        } else {
            f[2]
        };
        if let Ok(v) = f[3].parse::<f64>() {
            values
                .entry((f[0].to_string(), step.to_string()))
                .or_default()
                .push(v);
        }
    }
    let steps = [
        (
            "rest_first",
            "REST first answers (any of 3), s after launch",
        ),
        ("rest_all", "REST answers on all 3, s after launch"),
        ("group_first", "first join in a log, s after launch"),
        ("start", "1. start: launch until all 20 units RUNNING, s"),
        (
            "start_spread",
            "1b. start: until each of the 3 workers runs a unit too, s",
        ),
        (
            "kill_follower",
            "2. kill -9 follower until all RUNNING on live workers, s",
        ),
        (
            "join_after_follower",
            "3. join (2->3) until the new worker runs a unit, s",
        ),
        (
            "kill_leader",
            "4. kill -9 leader until all RUNNING on live workers, s",
        ),
        (
            "join_after_leader",
            "5. join (2->3) until the new worker runs a unit, s",
        ),
        (
            "config_change",
            "6. config change (sink-0 tasks.max 3->4) until all RUNNING, s",
        ),
        (
            "leave",
            "7. graceful leave (SIGTERM) until all RUNNING on the other 2, s",
        ),
        (
            "leave_gap_median",
            "7b. stop-to-start gap of a moved unit, median of a round, s",
        ),
        (
            "leave_gap_max",
            "7c. stop-to-start gap of a moved unit, max of a round, s",
        ),
        ("rss", "peak RSS per worker (VmHWM), MiB"),
    ];
    let rounds = |side: &str| {
        values
            .get(&(side.to_string(), "start".to_string()))
            .map_or(0, Vec::len)
    };
    println!(
        "| step | Java 4.4 ({} rounds) | ours ({} rounds) | Java / ours |",
        rounds("java"),
        rounds("ours")
    );
    println!("|---|---|---|---|");
    for (step, label) in steps {
        let mut cell = |side: &str| -> (String, Option<f64>) {
            let Some(v) = values.get_mut(&(side.to_string(), step.to_string())) else {
                return ("-".into(), None);
            };
            let scale = if step == "rss" { 1.0 } else { 1000.0 };
            let digits = if step == "rss" { 0 } else { 2 };
            match median_range(v) {
                Some((m, lo, hi)) => (
                    format!(
                        "{:.d$} ({:.d$}-{:.d$})",
                        m / scale,
                        lo / scale,
                        hi / scale,
                        d = digits
                    ),
                    Some(m),
                ),
                None => ("-".into(), None),
            }
        };
        let (java, jm) = cell("java");
        let (ours, om) = cell("ours");
        let ratio = match (jm, om) {
            (Some(j), Some(o)) if o > 0.0 => format!("{:.1}x", j / o),
            _ => "-".into(),
        };
        println!("| {label} | {java} | {ours} | {ratio} |");
    }
    let failed = |side: &str| {
        values
            .get(&(side.to_string(), "failed".to_string()))
            .map_or(0, Vec::len)
    };
    if failed("java") + failed("ours") > 0 {
        println!(
            "\nFailed rounds: Java {}, ours {} (their steps after the failure are missing).",
            failed("java"),
            failed("ours")
        );
    }
    Ok(())
}
