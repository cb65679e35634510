//! Helpers shared by the connect-worker tests.
#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use connect_runtime::kafka::rdkafka_adapter::RdKafkaCluster;
use connect_runtime::kafka::{
    ClientConfig, ConsumedRecord, ConsumerEvent, KafkaCluster, Subscription,
};

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
    topic_values_until(bootstrap, topic, &format!("{at_least} values"), |v| {
        v.len() >= at_least
    })
}

/// The values on `topic` from the start, read until `done` says they
/// are enough (`what` names that in the failure message).
pub(crate) fn topic_values_until(
    bootstrap: &str,
    topic: &str,
    what: &str,
    mut done: impl FnMut(&[String]) -> bool,
) -> Vec<String> {
    let mut values = Vec::new();
    topic_records_until(bootstrap, topic, what, |records| {
        values.extend(
            records
                .iter()
                .filter_map(|r| r.value.as_ref())
                .map(|v| String::from_utf8_lossy(v).into_owned()),
        );
        done(&values)
    });
    values
}

/// The records of `topic` from the start (keys, values and headers),
/// read until `done`, given each new batch, says they are enough.
pub(crate) fn topic_records_until(
    bootstrap: &str,
    topic: &str,
    what: &str,
    mut done: impl FnMut(&[ConsumedRecord]) -> bool,
) -> Vec<ConsumedRecord> {
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
            format!(
                "demo-check-{}-{}",
                std::process::id(),
                unique_suffix("read")
            ),
        );
        config.insert("auto.offset.reset".into(), "earliest".into());
        let mut consumer = cluster.consumer(&config).unwrap();
        consumer
            .subscribe(&Subscription::Topics(vec![topic.to_string()]))
            .unwrap();
        let mut all = Vec::new();
        let start = Instant::now();
        let mut finished = done(&[]);
        while !finished {
            assert!(
                start.elapsed() < DEADLINE,
                "{} records on {topic} after {DEADLINE:?}, not yet {what}",
                all.len()
            );
            if let Some(ConsumerEvent::Records(records)) =
                consumer.poll(Duration::from_millis(500)).await.unwrap()
            {
                finished = done(&records);
                all.extend(records);
            }
        }
        let _ = consumer.close().await;
        all
    })
}

/// A blocking HTTP/1.1 call like the seed's curl commands: (status, body).
/// Panics when the worker cannot be reached; see [`try_curl`].
pub(crate) fn curl(base: &str, method: &str, path: &str, body: &str) -> (u16, serde_json::Value) {
    try_curl(base, method, path, body).unwrap_or_else(|e| panic!("{method} {base}{path}: {e}"))
}

/// [`curl`], with an error when the worker cannot be reached (not started
/// yet, or killed).
/// The body of a `Transfer-Encoding: chunked` reply (Java's Jetty sends
/// larger answers so).
fn dechunk(mut rest: &str) -> String {
    let mut out = String::new();
    while let Some((size, after)) = rest.split_once("\r\n") {
        let Ok(n) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if n == 0 || after.len() < n {
            break;
        }
        out.push_str(&after[..n]);
        rest = after[n..].trim_start_matches("\r\n");
    }
    out
}

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
    let (head, payload) = reply.split_once("\r\n\r\n").unwrap_or((&reply, ""));
    let chunked = head.lines().any(|l| {
        l.to_ascii_lowercase()
            .starts_with("transfer-encoding: chunked")
    });
    let payload = if chunked {
        dechunk(payload)
    } else {
        payload.to_string()
    };
    Ok((
        status,
        serde_json::from_str(&payload).unwrap_or(serde_json::Value::Null),
    ))
}

// Not every test binary that includes this module needs it.
#[allow(unused_imports)]
pub(crate) use connect_test_support::real_bootstrap;

/// `-{what}-{pid}-{millis}`: names no earlier run used.
pub(crate) fn unique_suffix(what: &str) -> String {
    let millis = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis();
    format!("-{what}-{}-{millis}", std::process::id())
}

/// A free port for a worker; the test cannot go on without one.
pub(crate) fn free_port() -> u16 {
    connect_test_support::free_port().expect("a free port in 20000-31999")
}

/// A `connect-distributed` process, its REST port and its log file;
/// killed when dropped.
pub(crate) struct Node {
    pub(crate) port: u16,
    pub(crate) child: Option<std::process::Child>,
    pub(crate) log: PathBuf,
}

impl Node {
    /// Start `connect-distributed` on `props` in `dir`, its log in `log`.
    pub(crate) fn spawn(dir: &Path, props: &Path, log: &Path, port: u16) -> Node {
        // DRILL_WORKER_BIN runs another build of the worker (a before and
        // after measurement of the same drill).
        let bin = std::env::var_os("DRILL_WORKER_BIN")
            .unwrap_or_else(|| env!("CARGO_BIN_EXE_connect-distributed").into());
        let child = std::process::Command::new(bin)
            .arg(props)
            .current_dir(dir)
            .env("RUST_LOG", "info,connect_distributed=debug")
            .env("NO_COLOR", "1")
            .stdout(std::process::Stdio::null())
            .stderr(std::fs::File::create(log).expect("create the worker's log"))
            .spawn()
            .expect("start connect-distributed");
        Node {
            port,
            child: Some(child),
            log: log.to_path_buf(),
        }
    }

    pub(crate) fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub(crate) fn worker_id(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    pub(crate) fn alive(&self) -> bool {
        self.child.is_some()
    }

    pub(crate) fn kill_9(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Send `signal` (`STOP`, `CONT`, ...) to the process, if it runs.
    pub(crate) fn signal(&self, signal: &str) {
        if let Some(c) = &self.child {
            let _ = std::process::Command::new("kill")
                .args([&format!("-{signal}"), &c.id().to_string()])
                .status();
        }
    }

    /// SIGTERM and wait: a graceful stop (LeaveGroup).
    pub(crate) fn terminate(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = std::process::Command::new("kill")
                .args(["-TERM", &c.id().to_string()])
                .status();
            let deadline = Instant::now() + Duration::from_secs(60);
            while Instant::now() < deadline {
                if let Ok(Some(_)) = c.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    pub(crate) fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        self.kill_9();
    }
}

/// A broker of one test's own (`tools/real-kafka/broker.sh`), for tests
/// that restart it or need extra listeners; stopped when dropped (and by
/// the script's watchdog when the test process dies).
pub(crate) struct OwnBroker {
    script: PathBuf,
    dir: tempfile::TempDir,
    /// What `start` printed: `bootstrap.servers=...` and the like.
    pub(crate) printed: String,
}

impl OwnBroker {
    /// `broker.sh start` with `flags` (`--sasl`, `--tls`).
    pub(crate) fn start(flags: &[&str]) -> OwnBroker {
        let mut broker = OwnBroker {
            script: repo_file("tools/real-kafka/broker.sh"),
            dir: tempfile::tempdir().expect("a broker directory"),
            printed: String::new(),
        };
        broker.printed = broker.run("start", flags);
        broker
    }

    /// `broker.sh restart`: same ports, same data.
    pub(crate) fn restart(&self) -> String {
        self.run("restart", &[])
    }

    fn run(&self, command: &str, flags: &[&str]) -> String {
        let out = std::process::Command::new(&self.script)
            .arg(command)
            .args(flags)
            .args(["--dir", self.dir.path().to_str().expect("a UTF-8 path")])
            .args(["--owner", &std::process::id().to_string()])
            .output()
            .expect("run broker.sh");
        assert!(
            out.status.success(),
            "broker.sh {command} {flags:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The value of the `key=` line `start` printed.
    pub(crate) fn printed(&self, key: &str) -> String {
        let prefix = format!("{key}=");
        self.printed
            .lines()
            .find_map(|l| l.strip_prefix(&prefix).map(str::to_string))
            .unwrap_or_else(|| panic!("broker.sh printed no {key}=: {}", self.printed))
    }
}

impl Drop for OwnBroker {
    fn drop(&mut self) {
        let _ = std::process::Command::new(&self.script)
            .args([
                "stop",
                "--dir",
                self.dir.path().to_str().unwrap_or_default(),
            ])
            .output();
    }
}

fn runs(program: &str, arg: &str) -> bool {
    std::process::Command::new(program)
        .arg(arg)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

fn mtime(path: &Path) -> Option<std::time::SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

/// `tools/connect-java` (Kafka Connect 4.4's Java worker with the
/// FileStream connectors) built (with `mvn -q -B package` when missing or
/// older than its pom or the shim): the project's directory, or why it
/// cannot be had.
pub(crate) fn java_project() -> Result<PathBuf, String> {
    let dir = repo_file("tools/connect-java");
    let shim =
        repo_file("benches/head-to-head/compat/org/apache/kafka/common/utils/AppInfoParser.java");
    maven_project(
        &dir,
        &[dir.join("target/connect-java.jar"), dir.join("target/lib")],
        &[dir.join("pom.xml"), shim],
    )
}

/// The Maven project `dir` built: `mvn -q -B package` runs when any of
/// `built` is missing or older than the newest of `sources`. The
/// directory, or why it cannot be had (no Java, no Maven, a failed build).
pub(crate) fn maven_project(
    dir: &Path,
    built: &[PathBuf],
    sources: &[PathBuf],
) -> Result<PathBuf, String> {
    if !runs("java", "-version") {
        return Err("`java` is not installed (Java 17+ is needed)".into());
    }
    let newest_source = sources.iter().filter_map(|p| mtime(p)).max();
    let fresh = built
        .iter()
        .all(|b| matches!((mtime(b), newest_source), (Some(b), Some(s)) if b >= s));
    if fresh {
        return Ok(dir.to_path_buf());
    }
    if !runs("mvn", "-v") {
        return Err(format!(
            "{} is not built and `mvn` is not installed",
            dir.display()
        ));
    }
    let _ = writeln!(
        std::io::stderr(),
        "building {}: mvn -q -B package",
        dir.display()
    );
    let out = std::process::Command::new("mvn")
        .args(["-q", "-B", "package"])
        .current_dir(dir)
        .output()
        .map_err(|e| format!("cannot run mvn: {e}"))?;
    if !out.status.success() || !built.iter().all(|b| b.exists()) {
        return Err(format!(
            "`mvn -q -B package` failed in {}:\n{}{}",
            dir.display(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(dir.to_path_buf())
}

/// Start Kafka Connect's Java `ConnectDistributed` from `project` (see
/// [`java_project`]) on `props`; its log is `logs/connect.log`, its
/// stdout and stderr `logs/java.out`.
pub(crate) fn spawn_java_connect(project: &Path, props: &Path, logs: &Path) -> std::process::Child {
    let classpath = format!(
        "{}:{}/*",
        project.join("target/connect-java.jar").display(),
        project.join("target/lib").display()
    );
    spawn_java_main(
        &classpath,
        &project.join("log4j2.properties"),
        "org.apache.kafka.connect.cli.ConnectDistributed",
        &[props],
        logs,
    )
}

/// Start the JVM on `classpath` running `main` with `args`, logging with
/// `log4j` under `logs` (stdout and stderr in `logs/java.out`).
pub(crate) fn spawn_java_main(
    classpath: &str,
    log4j: &Path,
    main: &str,
    args: &[&Path],
    logs: &Path,
) -> std::process::Child {
    let out = std::fs::File::create(logs.join("java.out")).expect("create java.out");
    std::process::Command::new("java")
        .args(["-Xms128m", "-Xmx512m"])
        .arg(format!("-Dlog4j2.configurationFile={}", log4j.display()))
        .arg(format!("-Dkafka.logs.dir={}", logs.display()))
        .arg("-cp")
        .arg(classpath)
        .arg(main)
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(out.try_clone().expect("clone java.out"))
        .stderr(out)
        .spawn()
        .expect("start java")
}

/// Set client quotas on the real broker at `bootstrap`, as an operator
/// would with `kafka-configs.sh --entity-type clients`: each entry is
/// (client id, quota key such as `producer_byte_rate`, value). Done with
/// Kafka's own `Admin.alterClientQuotas` in `jshell` on the broker's
/// classpath (`tools/real-kafka/broker.sh classpath`), since neither
/// librdkafka nor our port has the call. The drills slow clients down with
/// it to widen the windows they test.
pub(crate) fn set_client_quotas(bootstrap: &str, quotas: &[(&str, &str, f64)]) {
    let broker_sh = repo_file("tools/real-kafka/broker.sh");
    let out = std::process::Command::new(&broker_sh)
        .arg("classpath")
        .output()
        .expect("run broker.sh classpath");
    assert!(
        out.status.success(),
        "broker.sh classpath failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let classpath = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let alterations: Vec<String> = quotas
        .iter()
        .map(|(client, key, value)| {
            format!(
                "new ClientQuotaAlteration(new ClientQuotaEntity(Map.of(\"client-id\", \"{client}\")), \
                 List.of(new ClientQuotaAlteration.Op(\"{key}\", {value:.1})))"
            )
        })
        .collect();
    let script = format!(
        "import org.apache.kafka.clients.admin.*;\n\
         import org.apache.kafka.common.quota.*;\n\
         var admin = Admin.create(Map.of(\"bootstrap.servers\", \"{bootstrap}\"));\n\
         admin.alterClientQuotas(List.of({})).all().get();\n\
         admin.close();\n\
         System.out.println(\"QUOTAS SET\");\n\
         /exit\n",
        alterations.join(", ")
    );
    let dir = tempfile::tempdir().expect("a temporary directory");
    let file = dir.path().join("quotas.jsh");
    std::fs::write(&file, script).expect("write the jshell script");
    let out = std::process::Command::new("jshell")
        .arg("--class-path")
        .arg(&classpath)
        .arg(&file)
        .output()
        .expect("run jshell (Java 17 runs the real broker too)");
    let printed = String::from_utf8_lossy(&out.stdout);
    assert!(
        printed.contains("QUOTAS SET"),
        "setting client quotas {quotas:?} failed:\n{printed}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The shipped worker config with test paths, a free REST port, a 1 s
/// offset flush (instead of 10 s, to keep the test short) and optionally an
/// external broker.
pub(crate) fn worker_config(dir: &Path, bootstrap: Option<&str>) -> PathBuf {
    worker_config_with_session(dir, bootstrap, 6000)
}

/// [`worker_config`] with the sink consumer's `session.timeout.ms`.
pub(crate) fn worker_config_with_session(
    dir: &Path,
    bootstrap: Option<&str>,
    session_ms: u32,
) -> PathBuf {
    let shipped =
        std::fs::read_to_string(repo_file("config/connect-standalone.properties")).unwrap();
    assert!(shipped.contains("offset.flush.interval.ms=10000"));
    assert!(
        !shipped.lines().any(|l| l.starts_with("bootstrap.servers")),
        "the shipped config uses the embedded Kafka"
    );
    let offsets = dir.join("connect.offsets");
    let mut text: String = shipped
        .lines()
        .map(|l| {
            if l.starts_with("offset.storage.file.filename=") {
                format!("offset.storage.file.filename={}", offsets.display())
            } else if l.starts_with("listeners=") {
                "listeners=http://127.0.0.1:0".to_string()
            } else if l.starts_with("offset.flush.interval.ms=") {
                "offset.flush.interval.ms=1000".to_string()
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    if let Some(b) = bootstrap {
        // The killed worker's sink stays in the group until its session
        // times out (45 s by default, as in Kafka); 6 s keeps the test short.
        let heartbeat_ms = session_ms / 4;
        text.push_str(&format!(
            "\nbootstrap.servers={b}\nconsumer.session.timeout.ms={session_ms}\nconsumer.heartbeat.interval.ms={heartbeat_ms}\n"
        ));
    }
    let path = dir.join("connect-standalone.properties");
    std::fs::write(&path, text).unwrap();
    path
}

/// A running `connect-standalone` with connector property files, killed
/// (SIGKILL) on drop; its log goes to `worker.log` in its directory.
pub(crate) struct Standalone(std::process::Child);

impl Standalone {
    pub(crate) fn start(dir: &Path, props: &Path, connectors: &[&Path]) -> Standalone {
        Self::start_with_env(dir, props, connectors, &[])
    }

    /// [`Standalone::start`] with extra environment variables.
    pub(crate) fn start_with_env(
        dir: &Path,
        props: &Path,
        connectors: &[&Path],
        env: &[(&str, &str)],
    ) -> Standalone {
        let log = std::fs::File::create(dir.join("worker.log")).unwrap();
        let child = std::process::Command::new(env!("CARGO_BIN_EXE_connect-standalone"))
            .arg(props)
            .args(connectors)
            .envs(env.iter().copied())
            .current_dir(dir)
            .env("RUST_LOG", "info")
            .stdout(std::process::Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start connect-standalone");
        Standalone(child)
    }
}

impl Drop for Standalone {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A `read_committed` reader of a topic on its own thread, counting how
/// often it has read each value while the test goes on: the judge of
/// exactly-once delivery. Values written by the workers' JsonConverter
/// (`{"schema":..,"payload":"..."}`) count by their payload.
pub(crate) struct CommittedReader {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    counts: std::sync::Arc<std::sync::Mutex<std::collections::HashMap<String, u32>>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl CommittedReader {
    /// Read `topic` from its start, `isolation.level=read_committed`.
    pub(crate) fn start(bootstrap: &str, topic: &str) -> CommittedReader {
        use std::sync::atomic::Ordering;
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let counts = std::sync::Arc::new(std::sync::Mutex::new(std::collections::HashMap::new()));
        let (s, c) = (stop.clone(), counts.clone());
        let (bootstrap, topic) = (bootstrap.to_string(), topic.to_string());
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async {
                let mut config = ClientConfig::new();
                config.insert("bootstrap.servers".into(), bootstrap);
                config.insert("group.id".into(), format!("reader-{topic}"));
                config.insert("auto.offset.reset".into(), "earliest".into());
                config.insert("enable.auto.commit".into(), "false".into());
                config.insert("isolation.level".into(), "read_committed".into());
                let cluster = RdKafkaCluster::new(ClientConfig::new());
                let mut consumer = cluster.consumer(&config).unwrap();
                consumer
                    .subscribe(&Subscription::Topics(vec![topic]))
                    .unwrap();
                while !s.load(Ordering::SeqCst) {
                    let Ok(Some(ConsumerEvent::Records(records))) =
                        consumer.poll(Duration::from_millis(200)).await
                    else {
                        continue;
                    };
                    let mut counts = c.lock().unwrap();
                    for r in records {
                        let value = r.value.as_deref().unwrap_or_default();
                        let json: serde_json::Value =
                            serde_json::from_slice(value).unwrap_or_default();
                        let value = match json["payload"].as_str() {
                            Some(p) => p.to_string(),
                            None => String::from_utf8_lossy(value).into_owned(),
                        };
                        *counts.entry(value).or_default() += 1;
                    }
                }
            });
        });
        CommittedReader {
            stop,
            counts,
            thread: Some(thread),
        }
    }

    /// How often `value` has been read so far.
    pub(crate) fn count(&self, value: &str) -> u32 {
        self.counts.lock().unwrap().get(value).copied().unwrap_or(0)
    }

    /// Whether every one of `values` has been read at least once.
    pub(crate) fn has_all(&self, mut values: impl Iterator<Item = String>) -> bool {
        let counts = self.counts.lock().unwrap();
        values.all(|v| counts.contains_key(&v))
    }

    /// Every value read so far, with how often.
    pub(crate) fn counts(&self) -> std::collections::HashMap<String, u32> {
        self.counts.lock().unwrap().clone()
    }
}

impl Drop for CommittedReader {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
