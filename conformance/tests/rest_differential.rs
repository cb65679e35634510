//! REST differential test: the same sequence of REST calls goes to Apache
//! Kafka Connect 4.4.0's standalone worker (`conformance/rest-java`, started
//! with `ConnectStandalone`) and to ours (`Worker` + `RestServer` in this
//! process), both on the real broker named by `KAFKA_BOOTSTRAP_SERVERS`, with
//! the same worker settings and twin test connectors registered under the
//! same class names. For every call the status code and the *shape* of the
//! JSON body are compared: object keys (recursively), JSON value types,
//! array elements, and the values of a few keys that must agree (`state`,
//! `type`, `error_code`, `class`, `name`, ...). Versions, commit ids,
//! cluster ids, worker ids, traces, messages and timestamps are compared by
//! type only.
//!
//! Every difference is printed. The test fails on a difference that
//! `known_difference` does not name (the list in
//! `conformance/REST_DIFFERENCES.md`), and on a listed difference that no
//! longer shows (so the list stays exact).
//!
//! Skips loudly (`SKIPPED: ...` on stderr) without Java, Maven or a broker;
//! `CONFORMANCE_REQUIRE_JAVA=1` turns a missing Java or Maven (or a failed
//! Maven build) into a failure; a missing broker stays a skip, as for every
//! real-broker test. `CONFORMANCE_REST_DUMP=<file>` writes every call with
//! both full replies and every difference line there.

/// `eprintln!` that libtest does not capture.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

use connect_test_support::free_port as any_free_port;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use connect_api::config::validators::Range;
use connect_api::config::{ConfigDef, ConfigKey, ConfigMap, ConfigType, Importance, Width};
use connect_api::connector::{Connector, ConnectorContext, SinkConnector, SourceConnector};
use connect_api::sink::{SinkTask, SinkTaskContext, TopicPartition};
use connect_api::source::{SourceTask, SourceTaskContext};
use connect_api::{ConnectError, Result, SinkRecord, SourceMap, SourceRecord};
use connect_runtime::herder::StandaloneHerder;
use connect_runtime::kafka::rdkafka_adapter::RdKafkaCluster;
use connect_runtime::kafka::{ClientConfig, KafkaCluster, NewTopic};
use connect_runtime::offsets::FileOffsetStore;
use connect_runtime::rest::{Loggers, RestServer};
use connect_runtime::worker::{Plugins, Worker, WorkerConfig};
use serde_json::{json, Map as JMap, Value as Json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const SOURCE_CLASS: &str = "connectrs.conformance.rest.ConformanceSourceConnector";
const SINK_CLASS: &str = "connectrs.conformance.rest.ConformanceSinkConnector";
const JSON_CONVERTER: &str = "org.apache.kafka.connect.json.JsonConverter";

// ---------------------------------------------------------------------------
// Our twins of the Java test connectors (conformance/rest-java/src)

/// Twin of `ConformanceSourceConnector`: required `topic`, int `batch.size`
/// (default 10, at least 1); one task that produces nothing.
/// `fail.start=true` makes the connector fail to start, `fail.task=true`
/// its task.
#[derive(Default)]
struct ConformanceSource(ConfigMap);

fn source_def() -> ConfigDef {
    ConfigDef::new()
        .define(
            ConfigKey::new("topic", ConfigType::String)
                .importance(Importance::High)
                .doc("Topic to write to.")
                .group("Conformance", 1)
                .width(Width::None)
                .display_name("topic"),
        )
        .define(
            ConfigKey::new("batch.size", ConfigType::Int)
                .default(10)
                .validator(Range::at_least(1))
                .importance(Importance::Low)
                .doc("Unused number.")
                .group("Conformance", 2)
                .width(Width::None)
                .display_name("batch.size"),
        )
}

#[async_trait]
impl Connector for ConformanceSource {
    fn version(&self) -> String {
        "1.0".into()
    }
    fn config_def(&self) -> ConfigDef {
        source_def()
    }
    async fn start(&mut self, config: &ConfigMap, _: Arc<dyn ConnectorContext>) -> Result<()> {
        if config.get("fail.start").is_some_and(|v| v == "true") {
            return Err(ConnectError::other("configured to fail"));
        }
        self.0 = config.clone();
        Ok(())
    }
    async fn task_configs(&mut self, _max: usize) -> Result<Vec<ConfigMap>> {
        Ok(vec![self.0.clone()])
    }
    async fn stop(&mut self) -> Result<()> {
        Ok(())
    }
}

#[async_trait]
impl SourceConnector for ConformanceSource {
    fn create_task(&self) -> Box<dyn SourceTask> {
        Box::new(IdleSourceTask)
    }
    async fn alter_offsets(
        &mut self,
        _: &ConfigMap,
        _: &[(SourceMap, Option<SourceMap>)],
    ) -> Result<bool> {
        Ok(true)
    }
}

struct IdleSourceTask;

#[async_trait]
impl SourceTask for IdleSourceTask {
    async fn start(&mut self, config: &ConfigMap, _: Arc<dyn SourceTaskContext>) -> Result<()> {
        if config.get("fail.task").is_some_and(|v| v == "true") {
            return Err(ConnectError::other("configured to fail"));
        }
        Ok(())
    }
    async fn poll(&mut self) -> Result<Vec<SourceRecord>> {
        tokio::time::sleep(Duration::from_millis(100)).await;
        Ok(Vec::new())
    }
    async fn stop(&mut self) -> Result<()> {
        Ok(())
    }
}

/// Twin of `ConformanceSinkConnector`: no settings; one task that drops
/// what it gets.
#[derive(Default)]
struct ConformanceSink(ConfigMap);

#[async_trait]
impl Connector for ConformanceSink {
    fn version(&self) -> String {
        "1.0".into()
    }
    fn config_def(&self) -> ConfigDef {
        ConfigDef::new()
    }
    async fn start(&mut self, config: &ConfigMap, _: Arc<dyn ConnectorContext>) -> Result<()> {
        self.0 = config.clone();
        Ok(())
    }
    async fn task_configs(&mut self, _max: usize) -> Result<Vec<ConfigMap>> {
        Ok(vec![self.0.clone()])
    }
    async fn stop(&mut self) -> Result<()> {
        Ok(())
    }
}

#[async_trait]
impl SinkConnector for ConformanceSink {
    fn create_task(&self) -> Box<dyn SinkTask> {
        Box::new(DropSinkTask)
    }
    async fn alter_offsets(
        &mut self,
        _: &ConfigMap,
        _: &BTreeMap<TopicPartition, Option<i64>>,
    ) -> Result<bool> {
        Ok(true)
    }
}

struct DropSinkTask;

#[async_trait]
impl SinkTask for DropSinkTask {
    async fn start(&mut self, _: &ConfigMap, _: Arc<dyn SinkTaskContext>) -> Result<()> {
        Ok(())
    }
    async fn put(&mut self, _: &[SinkRecord]) -> Result<()> {
        Ok(())
    }
    async fn stop(&mut self) -> Result<()> {
        Ok(())
    }
}

// ---------------------------------------------------------------------------
// HTTP

/// A reply: status and body (JSON, or the raw text when it is not JSON).
#[derive(Debug, Clone)]
struct Reply {
    status: u16,
    body: Body,
}

#[derive(Debug, Clone)]
enum Body {
    Empty,
    Json(Json),
    Text(String),
}

/// One HTTP/1.1 request with `Connection: close`; `None` when the server
/// cannot be reached.
async fn http(base: &str, method: &str, path: &str, body: Option<&str>) -> Option<Reply> {
    let addr = base.trim_start_matches("http://").trim_end_matches('/');
    let mut stream = tokio::net::TcpStream::connect(addr).await.ok()?;
    let request = match body {
        Some(b) => format!(
            "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nAccept: application/json\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{b}",
            b.len()
        ),
        None => format!(
            "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nAccept: application/json\r\nContent-Length: 0\r\n\r\n"
        ),
    };
    stream.write_all(request.as_bytes()).await.ok()?;
    let mut raw = Vec::new();
    tokio::time::timeout(Duration::from_secs(120), stream.read_to_end(&mut raw))
        .await
        .ok()?
        .ok()?;
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, payload) = text.split_once("\r\n\r\n")?;
    let mut lines = head.lines();
    let status: u16 = lines.next()?.split(' ').nth(1)?.parse().ok()?;
    let chunked = lines.any(|l| {
        let l = l.to_ascii_lowercase();
        l.starts_with("transfer-encoding:") && l.contains("chunked")
    });
    let payload = if chunked {
        connect_test_support::dechunk(payload)
    } else {
        payload.to_string()
    };
    let body = if payload.trim().is_empty() {
        Body::Empty
    } else {
        match serde_json::from_str(&payload) {
            Ok(j) => Body::Json(j),
            Err(_) => Body::Text(payload),
        }
    };
    Some(Reply { status, body })
}

// ---------------------------------------------------------------------------
// Shapes

/// Keys whose values (not only types) must agree on both sides.
const VALUE_KEYS: &[&str] = &[
    "state",
    "type",
    "error_code",
    "class",
    "name",
    "connector",
    "task",
    "id",
    "connector.class",
    "topic",
    "topics",
    "tasks.max",
    "required",
    "importance",
    "error_count",
    "level",
];

/// The shape of a JSON value: objects keep their keys with the shapes of
/// their values, arrays the shapes of their elements (objects that carry a
/// name, such as validation results, become an object keyed by that name;
/// arrays of strings are sorted), leaves become their JSON type, except under
/// [`VALUE_KEYS`] where the value itself is kept.
fn shape(v: &Json, key: Option<&str>) -> Json {
    match v {
        Json::Object(o) => Json::Object(
            o.iter()
                .map(|(k, x)| (k.clone(), shape(x, Some(k))))
                .collect::<JMap<_, _>>(),
        ),
        Json::Array(a) => {
            let named: Option<Vec<String>> = a.iter().map(element_name).collect();
            match named {
                Some(names) if !a.is_empty() => {
                    let mut m = JMap::new();
                    for (n, x) in names.into_iter().zip(a) {
                        m.insert(format!("[{n}]"), shape(x, None));
                    }
                    json!({ "array of named": m })
                }
                _ => {
                    let mut elems: Vec<Json> = a.iter().map(|x| shape(x, key)).collect();
                    if a.iter().all(Json::is_string) {
                        elems.sort_by_key(|e| e.to_string());
                    }
                    Json::Array(elems)
                }
            }
        }
        leaf => match key {
            Some(k) if VALUE_KEYS.contains(&k) => leaf.clone(),
            _ => Json::from(match leaf {
                Json::Null => "<null>",
                Json::Bool(_) => "<bool>",
                Json::Number(_) => "<number>",
                _ => "<string>",
            }),
        },
    }
}

/// `name` of a validation result (`definition.name`) or of a config key,
/// or `class` of a plugin.
fn element_name(x: &Json) -> Option<String> {
    let n = x
        .pointer("/definition/name")
        .or_else(|| x.pointer("/value/name"))
        .or_else(|| x.get("class"))
        .or_else(|| x.get("name"))?;
    n.as_str().map(str::to_string)
}

fn body_shape(b: &Body) -> Json {
    match b {
        Body::Empty => Json::from("<empty>"),
        Body::Text(_) => Json::from("<text>"),
        Body::Json(j) => shape(j, None),
    }
}

/// Paths where two shapes differ, at most `limit` of them.
fn diff(path: &str, j: &Json, o: &Json, out: &mut Vec<String>) {
    match (j, o) {
        (Json::Object(a), Json::Object(b)) => {
            let keys: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
            for k in keys {
                let p = format!("{path}/{k}");
                match (a.get(k), b.get(k)) {
                    (Some(x), Some(y)) => diff(&p, x, y, out),
                    (Some(x), None) => out.push(format!("{p}: only Kafka has it ({x})")),
                    (None, Some(y)) => out.push(format!("{p}: only ours has it ({y})")),
                    (None, None) => {}
                }
            }
        }
        (Json::Array(a), Json::Array(b)) if a.len() == b.len() => {
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                diff(&format!("{path}[{i}]"), x, y, out);
            }
        }
        (Json::Array(a), Json::Array(b)) => out.push(format!(
            "{path}: Kafka has {} elements {}, ours {} {}",
            a.len(),
            clip(j),
            b.len(),
            clip(o)
        )),
        _ if j == o => {}
        _ => out.push(format!("{path}: Kafka {}, ours {}", clip(j), clip(o))),
    }
}

fn clip(j: &Json) -> String {
    let s = j.to_string();
    if s.len() > 300 {
        format!("{}...", &s[..s.floor_char_boundary(300)])
    } else {
        s
    }
}

// ---------------------------------------------------------------------------
// The two workers

fn skip(why: &str) {
    assert!(
        std::env::var_os("CONFORMANCE_REQUIRE_JAVA").is_none(),
        "CONFORMANCE_REQUIRE_JAVA is set but the REST differential test cannot run: {why}"
    );
    say!("==================================================================");
    say!("SKIPPED: REST differential test against Kafka Connect 4.4.0: {why}");
    say!("==================================================================");
}

/// Kafka's `ConnectStandalone`, killed on drop.
struct JavaWorker {
    child: Child,
    url: String,
    dir: PathBuf,
}

impl Drop for JavaWorker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Start Kafka's standalone worker and wait (3 min at most) until `GET /`
/// answers 200; returns it with its REST ready time.
async fn start_java(
    project: &Path,
    bootstrap: &str,
    dir: &Path,
) -> std::result::Result<(JavaWorker, Duration), String> {
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}");
    let props = format!(
        "bootstrap.servers={bootstrap}\nlisteners={url}\noffset.storage.file.filename={}\n\
         key.converter={JSON_CONVERTER}\nvalue.converter={JSON_CONVERTER}\n\
         offset.flush.interval.ms=1000\n",
        dir.join("java.offsets").display()
    );
    let worker_file = dir.join("java-worker.properties");
    std::fs::write(&worker_file, props).map_err(|e| e.to_string())?;
    let log = std::fs::File::create(dir.join("java.out")).map_err(|e| e.to_string())?;
    let classpath = format!(
        "{}:{}/*",
        project.join("target/rest-conformance.jar").display(),
        project.join("target/lib").display()
    );
    let started = Instant::now();
    let child = Command::new("java")
        .arg("-Xms128m")
        .arg("-Xmx512m")
        .arg(format!(
            "-Dlog4j2.configurationFile={}",
            project.join("log4j2.properties").display()
        ))
        .arg(format!("-Dkafka.logs.dir={}", dir.display()))
        .arg("-cp")
        .arg(classpath)
        .arg("org.apache.kafka.connect.cli.ConnectStandalone")
        .arg(&worker_file)
        .stdin(Stdio::null())
        .stdout(log.try_clone().map_err(|e| e.to_string())?)
        .stderr(log)
        .spawn()
        .map_err(|e| format!("cannot start java: {e}"))?;
    let mut java = JavaWorker {
        child,
        url,
        dir: dir.to_path_buf(),
    };
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        if let Some(r) = http(&java.url, "GET", "/", None).await {
            if r.status == 200 {
                return Ok((java, started.elapsed()));
            }
        }
        if let Ok(Some(status)) = java.child.try_wait() {
            return Err(format!(
                "ConnectStandalone exited with {status}; see {}",
                java.dir.display()
            ));
        }
        if Instant::now() > deadline {
            return Err(format!(
                "ConnectStandalone did not answer GET / within 180 s; see {}",
                java.dir.display()
            ));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

struct Ours {
    server: RestServer,
    worker: Worker,
}

/// Our worker with the same settings as Kafka's, and its REST ready time.
async fn start_ours(bootstrap: &str, dir: &Path) -> (Ours, Duration) {
    let started = Instant::now();
    let mut plugins = Plugins::with_builtins();
    plugins.register_source(
        SOURCE_CLASS,
        &["ConformanceSourceConnector", "ConformanceSource"],
        || Box::new(ConformanceSource::default()),
    );
    plugins.register_sink(
        SINK_CLASS,
        &["ConformanceSinkConnector", "ConformanceSink"],
        || Box::new(ConformanceSink::default()),
    );
    // The twins' Java task classes are nested classes.
    for (class, task) in [
        (SOURCE_CLASS, "$IdleSourceTask"),
        (SINK_CLASS, "$DropSinkTask"),
    ] {
        plugins
            .set_task_class(class, &format!("{class}{task}"))
            .unwrap();
    }
    let offsets = dir.join("ours.offsets");
    let props = ConfigMap::from([
        ("bootstrap.servers", bootstrap),
        ("listeners", "http://127.0.0.1:0"),
        ("offset.storage.file.filename", offsets.to_str().unwrap()),
        ("key.converter", JSON_CONVERTER),
        ("value.converter", JSON_CONVERTER),
        ("offset.flush.interval.ms", "1000"),
    ]);
    let mut base = ClientConfig::new();
    base.insert("bootstrap.servers".into(), bootstrap.to_string());
    let worker = Worker::new(
        WorkerConfig::parse(&props).expect("worker config"),
        plugins,
        Arc::new(RdKafkaCluster::new(base)),
        Arc::new(FileOffsetStore::open(&offsets).expect("offset file")),
    );
    let herder = StandaloneHerder::new(worker.clone());
    let server = RestServer::start(
        Arc::new(herder),
        "http://127.0.0.1:0",
        Loggers::in_memory("INFO"),
    )
    .await
    .expect("REST server");
    server.set_ready();
    let url = server.url();
    while http(&url, "GET", "/", None)
        .await
        .is_none_or(|r| r.status != 200)
    {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    (Ours { server, worker }, started.elapsed())
}

// ---------------------------------------------------------------------------
// The sequence

/// One side: its URL and its connector names.
struct Side {
    url: String,
    src: String,
    sink: String,
    topic: String,
}

impl Side {
    fn fill(&self, s: &str) -> String {
        s.replace("{src}", &self.src)
            .replace("{sink}", &self.sink)
            .replace("{topic}", &self.topic)
            .replace("{SOURCE}", SOURCE_CLASS)
            .replace("{SINK}", SINK_CLASS)
    }

    /// Replace this side's names by their placeholders in a reply.
    fn unfill(&self, r: Reply) -> Reply {
        let body = match r.body {
            Body::Json(j) => {
                let text = j
                    .to_string()
                    .replace(&self.src, "{src}")
                    .replace(&self.sink, "{sink}");
                Body::Json(serde_json::from_str(&text).expect("still JSON"))
            }
            other => other,
        };
        Reply {
            status: r.status,
            body,
        }
    }

    async fn call(&self, method: &str, path: &str, body: Option<&str>) -> Reply {
        let path = self.fill(path);
        let body = body.map(|b| self.fill(b));
        let r = http(&self.url, method, &path, body.as_deref())
            .await
            .unwrap_or_else(|| panic!("{method} {path} on {}: no reply", self.url));
        self.unfill(r)
    }

    /// Poll the status of `name` until the connector is `connector` and
    /// every task `task` (no tasks for `None`), 60 s at most.
    async fn wait_state(&self, name: &str, connector: &str, task: Option<&str>) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let r = self
                .call("GET", &format!("/connectors/{name}/status"), None)
                .await;
            let ok = match &r.body {
                Body::Json(s) => {
                    s["connector"]["state"] == connector
                        && match task {
                            Some(t) => s["tasks"].as_array().is_some_and(|ts| {
                                !ts.is_empty() && ts.iter().all(|x| x["state"] == t)
                            }),
                            None => s["tasks"].as_array().is_some_and(Vec::is_empty),
                        }
                }
                _ => false,
            };
            if ok {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{}: {name} never became {connector}/{task:?}: last status {r:?}",
                self.url
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// One call of the sequence: a label (the name `known_difference` and
/// REST_DIFFERENCES.md use), method, path, body.
type Call = (
    &'static str,
    &'static str,
    &'static str,
    Option<&'static str>,
);

/// What one call showed on each side.
struct Outcome {
    label: &'static str,
    request: String,
    kafka: Reply,
    ours: Reply,
}

/// Labels whose bodies are collections keyed by data that legitimately
/// differs (logger names, the plugin set): their elements are compared as a
/// set of distinct shapes.
const COLLAPSED: &[&str] = &["loggers", "plugins all"];

/// The distinct shapes of the members of an object (or of an
/// `array of named`), without the keys.
fn collapse(s: &Json) -> Json {
    let members: Vec<&Json> = match s {
        Json::Object(o) => match o.get("array of named") {
            Some(Json::Object(named)) => named.values().collect(),
            _ => o.values().collect(),
        },
        Json::Array(a) => a.iter().collect(),
        other => return other.clone(),
    };
    let mut distinct: Vec<Json> = Vec::new();
    for m in members {
        let mut m = m.clone();
        if let Some(o) = m.as_object_mut() {
            o.remove("class");
        }
        if !distinct.contains(&m) {
            distinct.push(m);
        }
    }
    distinct.sort_by_key(|d| d.to_string());
    json!({ "distinct member shapes": distinct })
}

impl Outcome {
    fn shapes(&self) -> (Json, Json) {
        let (k, o) = (body_shape(&self.kafka.body), body_shape(&self.ours.body));
        if COLLAPSED.contains(&self.label) && self.kafka.status == 200 && self.ours.status == 200 {
            (collapse(&k), collapse(&o))
        } else {
            (k, o)
        }
    }

    /// The differences in status and shape, empty when both agree.
    fn differences(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.kafka.status != self.ours.status {
            out.push(format!(
                "status: Kafka {}, ours {}",
                self.kafka.status, self.ours.status
            ));
        }
        let (k, o) = self.shapes();
        diff("body", &k, &o, &mut out);
        out
    }
}

async fn both(java: &Side, ours: &Side, outcomes: &mut Vec<Outcome>, calls: &[Call]) {
    for &(label, method, path, body) in calls {
        let kafka = java.call(method, path, body).await;
        let o = ours.call(method, path, body).await;
        outcomes.push(Outcome {
            label,
            request: format!(
                "{method} {path}{}",
                body.map(|b| format!(" {b}")).unwrap_or_default()
            ),
            kafka,
            ours: o,
        });
    }
}

async fn wait_both(java: &Side, ours: &Side, name: &str, connector: &str, task: Option<&str>) {
    java.wait_state(name, connector, task).await;
    ours.wait_state(name, connector, task).await;
}

const SOURCE_CONFIG: &str =
    r#"{"name":"{src}","config":{"connector.class":"{SOURCE}","topic":"{topic}","tasks.max":"1"}}"#;
const SINK_CONFIG: &str =
    r#"{"name":"{sink}","config":{"connector.class":"{SINK}","topics":"{topic}","tasks.max":"1"}}"#;

async fn sequence(java: &Side, ours: &Side) -> Vec<Outcome> {
    let mut out = Vec::new();
    let o = &mut out;
    both(
        java,
        ours,
        o,
        &[
            ("root", "GET", "/", None),
            ("health", "GET", "/health", None),
            ("plugins", "GET", "/connector-plugins", None),
            (
                "plugins all",
                "GET",
                "/connector-plugins?connectorsOnly=false",
                None,
            ),
            (
                "plugin config",
                "GET",
                "/connector-plugins/{SOURCE}/config",
                None,
            ),
            (
                "plugin config alias",
                "GET",
                "/connector-plugins/ConformanceSource/config",
                None,
            ),
            (
                "plugin config unknown",
                "GET",
                "/connector-plugins/NoSuchConnector/config",
                None,
            ),
            (
                "validate valid",
                "PUT",
                "/connector-plugins/ConformanceSourceConnector/config/validate",
                Some(r#"{"connector.class":"{SOURCE}","name":"v","topic":"{topic}"}"#),
            ),
            (
                "validate invalid",
                "PUT",
                "/connector-plugins/ConformanceSourceConnector/config/validate",
                Some(r#"{"connector.class":"{SOURCE}","batch.size":"0"}"#),
            ),
            (
                "validate sink valid",
                "PUT",
                "/connector-plugins/{SINK}/config/validate",
                Some(r#"{"connector.class":"{SINK}","name":"v","topics":"{topic}"}"#),
            ),
            (
                "validate sink no topics",
                "PUT",
                "/connector-plugins/{SINK}/config/validate",
                Some(r#"{"connector.class":"{SINK}","name":"v"}"#),
            ),
            (
                "validate class mismatch",
                "PUT",
                "/connector-plugins/{SINK}/config/validate",
                Some(r#"{"connector.class":"{SOURCE}","name":"v","topic":"{topic}"}"#),
            ),
            (
                "validate unknown plugin",
                "PUT",
                "/connector-plugins/NoSuchConnector/config/validate",
                Some(r#"{"connector.class":"NoSuchConnector","name":"v"}"#),
            ),
            (
                "validate malformed",
                "PUT",
                "/connector-plugins/{SOURCE}/config/validate",
                Some("{not json"),
            ),
            ("create source", "POST", "/connectors", Some(SOURCE_CONFIG)),
            (
                "create duplicate",
                "POST",
                "/connectors",
                Some(SOURCE_CONFIG),
            ),
            ("create malformed", "POST", "/connectors", Some("{not json")),
            (
                "create no name",
                "POST",
                "/connectors",
                Some(r#"{"config":{"connector.class":"{SOURCE}","topic":"{topic}"}}"#),
            ),
            (
                "create no config",
                "POST",
                "/connectors",
                Some(r#"{"name":"{src}-x"}"#),
            ),
            (
                "create invalid config",
                "POST",
                "/connectors",
                Some(r#"{"name":"{src}-x","config":{"connector.class":"{SOURCE}"}}"#),
            ),
            (
                "create unknown class",
                "POST",
                "/connectors",
                Some(r#"{"name":"{src}-x","config":{"connector.class":"NoSuchConnector"}}"#),
            ),
            ("create sink", "POST", "/connectors", Some(SINK_CONFIG)),
        ],
    )
    .await;
    wait_both(java, ours, "{src}", "RUNNING", Some("RUNNING")).await;
    wait_both(java, ours, "{sink}", "RUNNING", Some("RUNNING")).await;
    both(java, ours, o, &[
        ("list", "GET", "/connectors", None),
        ("list expanded", "GET", "/connectors?expand=status&expand=info", None),
        ("info", "GET", "/connectors/{src}", None),
        ("config", "GET", "/connectors/{src}/config", None),
        ("status", "GET", "/connectors/{src}/status", None),
        ("tasks", "GET", "/connectors/{src}/tasks", None),
        ("task status", "GET", "/connectors/{src}/tasks/0/status", None),
        ("topics", "GET", "/connectors/{src}/topics", None),
        ("sink info", "GET", "/connectors/{sink}", None),
        ("sink status", "GET", "/connectors/{sink}/status", None),
        ("put config update", "PUT", "/connectors/{src}/config",
            Some(r#"{"connector.class":"{SOURCE}","topic":"{topic}","tasks.max":"1","batch.size":"5"}"#)),
        ("put config create", "PUT", "/connectors/{src}-put/config",
            Some(r#"{"connector.class":"{SOURCE}","topic":"{topic}","tasks.max":"1"}"#)),
        ("delete put-created", "DELETE", "/connectors/{src}-put", None),
        ("put config name mismatch", "PUT", "/connectors/{src}/config",
            Some(r#"{"connector.class":"{SOURCE}","topic":"{topic}","name":"other"}"#)),
        ("put config invalid", "PUT", "/connectors/{src}/config",
            Some(r#"{"connector.class":"{SOURCE}","batch.size":"0"}"#)),
        ("topics reset running", "PUT", "/connectors/{src}/topics/reset", None),
        ("offsets running", "GET", "/connectors/{src}/offsets", None),
        ("patch offsets running", "PATCH", "/connectors/{src}/offsets",
            Some(r#"{"offsets":[{"partition":{"p":"a"},"offset":{"n":5}}]}"#)),
        ("delete offsets running", "DELETE", "/connectors/{src}/offsets", None),
        ("pause", "PUT", "/connectors/{src}/pause", None),
    ]).await;
    wait_both(java, ours, "{src}", "PAUSED", Some("PAUSED")).await;
    both(
        java,
        ours,
        o,
        &[
            ("status paused", "GET", "/connectors/{src}/status", None),
            ("resume", "PUT", "/connectors/{src}/resume", None),
        ],
    )
    .await;
    wait_both(java, ours, "{src}", "RUNNING", Some("RUNNING")).await;
    both(
        java,
        ours,
        o,
        &[(
            "restart connector",
            "POST",
            "/connectors/{src}/restart",
            None,
        )],
    )
    .await;
    wait_both(java, ours, "{src}", "RUNNING", Some("RUNNING")).await;
    both(
        java,
        ours,
        o,
        &[(
            "restart with tasks",
            "POST",
            "/connectors/{src}/restart?includeTasks=true&onlyFailed=false",
            None,
        )],
    )
    .await;
    wait_both(java, ours, "{src}", "RUNNING", Some("RUNNING")).await;
    both(
        java,
        ours,
        o,
        &[
            (
                "restart only failed",
                "POST",
                "/connectors/{src}/restart?includeTasks=true&onlyFailed=true",
                None,
            ),
            (
                "restart task",
                "POST",
                "/connectors/{src}/tasks/0/restart",
                None,
            ),
        ],
    )
    .await;
    wait_both(java, ours, "{src}", "RUNNING", Some("RUNNING")).await;
    both(
        java,
        ours,
        o,
        &[
            ("stop", "PUT", "/connectors/{src}/stop", None),
            ("stop sink", "PUT", "/connectors/{sink}/stop", None),
        ],
    )
    .await;
    wait_both(java, ours, "{src}", "STOPPED", None).await;
    wait_both(java, ours, "{sink}", "STOPPED", None).await;
    both(java, ours, o, &[
        ("status stopped", "GET", "/connectors/{src}/status", None),
        ("tasks stopped", "GET", "/connectors/{src}/tasks", None),
        ("offsets stopped", "GET", "/connectors/{src}/offsets", None),
        ("patch offsets", "PATCH", "/connectors/{src}/offsets",
            Some(r#"{"offsets":[{"partition":{"p":"a"},"offset":{"n":5}}]}"#)),
        ("offsets after patch", "GET", "/connectors/{src}/offsets", None),
        ("patch offsets no offsets", "PATCH", "/connectors/{src}/offsets", Some(r#"{}"#)),
        ("patch offsets empty list", "PATCH", "/connectors/{src}/offsets", Some(r#"{"offsets":[]}"#)),
        ("patch offsets malformed", "PATCH", "/connectors/{src}/offsets", Some("{not json")),
        ("delete offsets", "DELETE", "/connectors/{src}/offsets", None),
        ("offsets after delete", "GET", "/connectors/{src}/offsets", None),
        ("sink offsets stopped", "GET", "/connectors/{sink}/offsets", None),
        ("sink patch offsets", "PATCH", "/connectors/{sink}/offsets",
            Some(r#"{"offsets":[{"partition":{"kafka_topic":"{topic}","kafka_partition":0},"offset":{"kafka_offset":3}}]}"#)),
        ("sink offsets after patch", "GET", "/connectors/{sink}/offsets", None),
        ("sink patch offsets bad partition", "PATCH", "/connectors/{sink}/offsets",
            Some(r#"{"offsets":[{"partition":{"kafka_topic":"{topic}"},"offset":{"kafka_offset":3}}]}"#)),
        ("sink delete offsets", "DELETE", "/connectors/{sink}/offsets", None),
        ("sink offsets after delete", "GET", "/connectors/{sink}/offsets", None),
        ("topics reset stopped", "PUT", "/connectors/{src}/topics/reset", None),
        ("resume stopped", "PUT", "/connectors/{src}/resume", None),
    ]).await;
    wait_both(java, ours, "{src}", "RUNNING", Some("RUNNING")).await;
    // Failures: a connector that fails to start, a task that fails to start.
    both(java, ours, o, &[
        ("create failing connector", "POST", "/connectors",
            Some(r#"{"name":"{src}-cfail","config":{"connector.class":"{SOURCE}","topic":"{topic}","fail.start":"true"}}"#)),
        ("create failing task", "POST", "/connectors",
            Some(r#"{"name":"{src}-tfail","config":{"connector.class":"{SOURCE}","topic":"{topic}","fail.task":"true"}}"#)),
    ]).await;
    wait_both(java, ours, "{src}-cfail", "FAILED", None).await;
    wait_both(java, ours, "{src}-tfail", "RUNNING", Some("FAILED")).await;
    both(
        java,
        ours,
        o,
        &[
            (
                "status failed connector",
                "GET",
                "/connectors/{src}-cfail/status",
                None,
            ),
            (
                "tasks of failed connector",
                "GET",
                "/connectors/{src}-cfail/tasks",
                None,
            ),
            (
                "status failed task",
                "GET",
                "/connectors/{src}-tfail/status",
                None,
            ),
            (
                "failed task status",
                "GET",
                "/connectors/{src}-tfail/tasks/0/status",
                None,
            ),
            (
                "restart failed only",
                "POST",
                "/connectors/{src}-tfail/restart?includeTasks=true&onlyFailed=true",
                None,
            ),
        ],
    )
    .await;
    wait_both(java, ours, "{src}-tfail", "RUNNING", Some("FAILED")).await;
    both(
        java,
        ours,
        o,
        &[
            (
                "delete failing connector",
                "DELETE",
                "/connectors/{src}-cfail",
                None,
            ),
            (
                "delete failing task",
                "DELETE",
                "/connectors/{src}-tfail",
                None,
            ),
        ],
    )
    .await;
    both(
        java,
        ours,
        o,
        &[
            (
                "unknown connector",
                "GET",
                "/connectors/no-such-connector",
                None,
            ),
            (
                "unknown config",
                "GET",
                "/connectors/no-such-connector/config",
                None,
            ),
            (
                "unknown status",
                "GET",
                "/connectors/no-such-connector/status",
                None,
            ),
            (
                "unknown tasks",
                "GET",
                "/connectors/no-such-connector/tasks",
                None,
            ),
            (
                "unknown task status",
                "GET",
                "/connectors/no-such-connector/tasks/0/status",
                None,
            ),
            (
                "unknown task of known",
                "GET",
                "/connectors/{src}/tasks/99/status",
                None,
            ),
            (
                "unknown offsets",
                "GET",
                "/connectors/no-such-connector/offsets",
                None,
            ),
            (
                "unknown pause",
                "PUT",
                "/connectors/no-such-connector/pause",
                None,
            ),
            (
                "unknown resume",
                "PUT",
                "/connectors/no-such-connector/resume",
                None,
            ),
            (
                "unknown stop",
                "PUT",
                "/connectors/no-such-connector/stop",
                None,
            ),
            (
                "unknown restart",
                "POST",
                "/connectors/no-such-connector/restart",
                None,
            ),
            (
                "unknown task restart",
                "POST",
                "/connectors/{src}/tasks/99/restart",
                None,
            ),
            (
                "unknown delete",
                "DELETE",
                "/connectors/no-such-connector",
                None,
            ),
            ("unknown route", "GET", "/no-such-route", None),
            ("wrong method", "DELETE", "/connector-plugins", None),
            ("loggers", "GET", "/admin/loggers", None),
            ("logger root", "GET", "/admin/loggers/root", None),
            (
                "logger set",
                "PUT",
                "/admin/loggers/connectrs.conformance.rest",
                Some(r#"{"level":"DEBUG"}"#),
            ),
            (
                "logger get set",
                "GET",
                "/admin/loggers/connectrs.conformance.rest",
                None,
            ),
            (
                "logger set invalid",
                "PUT",
                "/admin/loggers/connectrs.conformance.rest",
                Some(r#"{"level":"LOUD"}"#),
            ),
            (
                "logger unknown",
                "GET",
                "/admin/loggers/no.such.logger",
                None,
            ),
            ("delete", "DELETE", "/connectors/{src}", None),
            ("delete sink", "DELETE", "/connectors/{sink}", None),
            ("list after delete", "GET", "/connectors", None),
        ],
    )
    .await;
    out
}

// ---------------------------------------------------------------------------
// Known differences (conformance/REST_DIFFERENCES.md)

/// One entry of REST_DIFFERENCES.md: the calls (labels) it concerns and
/// the difference lines it explains, as regular expressions over the lines
/// `Outcome::differences` prints.
struct Known {
    id: &'static str,
    labels: &'static [&'static str],
    lines: &'static [&'static str],
}

/// Whether `diff` says no more than that one side lists plain converters
/// (`"type":"converter"`) in `GET /connector-plugins?connectorsOnly=false`.
/// Kafka's own answer varies there between checkouts: its classpath scan
/// follows the order the JVM expands `lib/*` in, which is the directory's,
/// and on a fresh clone it has reported no plain converter at all. Ours
/// always lists them; nothing else about that call is let through.
fn only_plain_converters_differ(diff: &str) -> bool {
    let Some(rest) = diff.strip_prefix("body/distinct member shapes: Kafka has ") else {
        return false;
    };
    let Some((kafka, ours)) = rest.split_once(", ours ") else {
        return false;
    };
    let shapes = |side: &str| -> Option<String> {
        let list = &side[side.find('[')?..=side.rfind(']')?];
        Some(
            list.replace(r#"{"version":"<string>","type":"converter"},"#, "")
                .replace(r#",{"version":"<string>","type":"converter"}"#, ""),
        )
    };
    matches!((shapes(kafka), shapes(ours)), (Some(k), Some(o)) if k == o)
}

/// Every difference listed in conformance/REST_DIFFERENCES.md, by its id.
fn known_differences() -> Vec<Known> {
    const VALIDATE: &[&str] = &[
        "validate valid",
        "validate invalid",
        "validate sink valid",
        "validate sink no topics",
    ];
    const PLUGIN_CONFIG: &[&str] = &["plugin config", "plugin config alias"];
    vec![
        Known {
            id: "D2 plugin config lists only the plugin's own keys",
            labels: PLUGIN_CONFIG,
            lines: &[r"^body/array of named/\[[^\]]+\]: only Kafka has it"],
        },
        Known {
            id: "D3 framework keys in validate",
            labels: VALIDATE,
            lines: &[
                r"^body/configs/array of named/\[(connector|key\.converter|value\.converter|header\.converter)\.plugin\.version\]: only Kafka has it",
                r"^body/configs/array of named/\[topic\.creation\.groups\]: only Kafka has it",
                r"^body/configs/array of named/\[(errors\.deadletterqueue\.[a-z.]+|auto\.restart\.[a-z.]+|offsets\.invalid\.policy|source\.max\.inflight\.records|topic\.creation\.default\.(partitions|replication\.factor))\]: only ours has it",
                r"^body/groups: Kafka has \d+ elements .*, ours \d+ ",
            ],
        },
        Known {
            id: "D4 converter defaults in validate",
            labels: VALIDATE,
            lines: &[
                r#"^body/configs/array of named/\[(key|value|header)\.converter\]/(definition/default_value|value/value): Kafka "<string>", ours "<null>"$"#,
                r"^body/configs/array of named/\[(key|value|header)\.converter\]/value/recommended_values: Kafka has \d+ elements .*, ours 0 \[\]$",
            ],
        },
        Known {
            id: "D5 recommended values of enum keys",
            labels: VALIDATE,
            lines: &[
                r"^body/configs/array of named/\[(config\.action\.reload|errors\.tolerance|exactly\.once\.support)\]/value/recommended_values: Kafka has 0 elements \[\], ours 2 ",
                r"^body/configs/array of named/\[transaction\.boundary\]/value/recommended_values: Kafka has 0 elements \[\], ours 3 ",
            ],
        },
        Known {
            id: "D10 Kafka answers 500 to bad request bodies",
            labels: &[
                "validate malformed",
                "create malformed",
                "patch offsets malformed",
                "create no config",
            ],
            lines: &[
                r"^status: Kafka 500, ours 400$",
                r"^body/error_code: Kafka 500, ours 400$",
            ],
        },
        Known {
            id: "D11 validate with an unknown plugin",
            labels: &["validate unknown plugin"],
            lines: &[
                r"^status: Kafka 500, ours 404$",
                r"^body/error_code: Kafka 500, ours 404$",
            ],
        },
        Known {
            id: "D12 Kafka answers 500 for some unknown connectors",
            labels: &["unknown stop", "unknown restart"],
            lines: &[
                r"^status: Kafka 500, ours 404$",
                r"^body/error_code: Kafka 500, ours 404$",
            ],
        },
        Known {
            id: "D13 invalid log level",
            labels: &["logger set invalid"],
            lines: &[
                r"^status: Kafka 404, ours 400$",
                r"^body/error_code: Kafka 404, ours 400$",
            ],
        },
        Known {
            id: "D14 sink offsets after a reset",
            labels: &["sink offsets after delete"],
            lines: &[
                r"^body/offsets: Kafka has 0 elements \[\], ours 1 \[\{.partition.:\{.kafka_topic.:.<string>.,.kafka_partition.:.<number>.\},.offset.:\{.kafka_offset.:.<number>.\}\}\]$",
            ],
        },
        Known {
            id: "D15 creating a connector that fails to start",
            labels: &["create failing connector"],
            lines: &[
                r"^status: Kafka 500, ours 201$",
                r"^body/(config|name|tasks|type): only ours has it",
                r"^body/(error_code|message): only Kafka has it",
            ],
        },
    ]
}

/// The id of the listed difference that explains `line` of the call
/// `label`, if any.
fn explain(known: &[(Known, Vec<regex::Regex>)], label: &str, line: &str) -> Option<&'static str> {
    known
        .iter()
        .find(|(k, res)| k.labels.contains(&label) && res.iter().any(|r| r.is_match(line)))
        .map(|(k, _)| k.id)
}

// ---------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rest_calls_agree_with_kafka_connect() {
    // A missing broker is a skip even with CONFORMANCE_REQUIRE_JAVA, as for
    // every real-broker test (.ci/run says so when its broker fails).
    let bootstrap = match std::env::var("KAFKA_BOOTSTRAP_SERVERS") {
        Ok(s) if !s.trim().is_empty() => s,
        _ => {
            say!("==================================================================");
            say!(
                "SKIPPED: REST differential test against Kafka Connect 4.4.0: needs a real \
                 Kafka broker: start one with tools/real-kafka/broker.sh start and set \
                 KAFKA_BOOTSTRAP_SERVERS"
            );
            say!("==================================================================");
            return;
        }
    };
    let project = match connect_conformance::maven_jar("rest-java", "rest-conformance.jar") {
        Ok(_) => Path::new(env!("CARGO_MANIFEST_DIR")).join("rest-java"),
        Err(why) => return skip(&why),
    };
    let nonce = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_micros();
    let dir =
        std::env::temp_dir().join(format!("rest-differential-{}-{nonce}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");

    // The shared topic (the sink's, and where offsets are altered).
    let topic = format!("rest-conformance-{nonce}");
    let mut base = ClientConfig::new();
    base.insert("bootstrap.servers".into(), bootstrap.clone());
    let admin = RdKafkaCluster::new(base)
        .admin(&ClientConfig::new())
        .expect("admin");
    admin
        .create_topic(&NewTopic::new(&topic, 1), Duration::from_secs(30))
        .await
        .expect("create topic");

    let (java_worker, java_ready) = match start_java(&project, &bootstrap, &dir).await {
        Ok(x) => x,
        Err(why) => panic!("Kafka's worker did not start: {why}"),
    };
    let (ours_worker, ours_ready) = start_ours(&bootstrap, &dir).await;
    say!(
        "rest conformance: REST ready after {java_ready:.1?} (Kafka ConnectStandalone, JVM start included) vs {ours_ready:.1?} (ours, in process)"
    );
    let java = Side {
        url: java_worker.url.clone(),
        src: format!("rc-src-java-{nonce}"),
        sink: format!("rc-sink-java-{nonce}"),
        topic: topic.clone(),
    };
    let ours = Side {
        url: ours_worker.server.url(),
        src: format!("rc-src-ours-{nonce}"),
        sink: format!("rc-sink-ours-{nonce}"),
        topic,
    };

    let outcomes = sequence(&java, &ours).await;

    let known: Vec<(Known, Vec<regex::Regex>)> = known_differences()
        .into_iter()
        .map(|k| {
            let res = k
                .lines
                .iter()
                .map(|l| regex::Regex::new(l).expect("valid regex"))
                .collect();
            (k, res)
        })
        .collect();
    let mut dump = String::new();
    let mut unexplained = Vec::new();
    let mut known_seen = BTreeSet::new();
    let mut agreed = 0;
    for o in &outcomes {
        let diffs: Vec<String> = o
            .differences()
            .into_iter()
            .filter(|d| !(o.label == "plugins all" && only_plain_converters_differ(d)))
            .collect();
        dump.push_str(&format!(
            "=== {} [{}]\nKafka: {} {}\nours:  {} {}\n",
            o.request,
            o.label,
            o.kafka.status,
            body_text(&o.kafka.body),
            o.ours.status,
            body_text(&o.ours.body)
        ));
        if diffs.is_empty() {
            agreed += 1;
            continue;
        }
        let mut lines = Vec::new();
        let mut new_lines = 0;
        for d in &diffs {
            dump.push_str(&format!("  {d}\n"));
            match explain(&known, o.label, d) {
                Some(id) => {
                    known_seen.insert(id);
                    lines.push(format!("[{id}] {d}"));
                }
                None => {
                    new_lines += 1;
                    lines.push(format!("[NEW] {d}"));
                }
            }
        }
        let tag = if new_lines == 0 {
            "known"
        } else {
            unexplained.push(o.label.to_string());
            "UNEXPLAINED"
        };
        say!("--- {tag}: {} [{}]", o.request, o.label);
        say!("    Kafka: {} {}", o.kafka.status, clip_body(&o.kafka.body));
        say!("    ours:  {} {}", o.ours.status, clip_body(&o.ours.body));
        // New lines first, then at most a few of the known ones.
        lines.sort_by_key(|l| !l.starts_with("[NEW]"));
        for l in lines.iter().take(new_lines.max(4)) {
            say!("    {l}");
        }
        if lines.len() > new_lines.max(4) {
            say!("    ... {} more", lines.len() - new_lines.max(4));
        }
    }
    let stale: Vec<&str> = known
        .iter()
        .map(|(k, _)| k.id)
        .filter(|id| !known_seen.contains(id))
        .collect();
    say!(
        "rest conformance: {} calls, {agreed} agree, {} differ only as listed ({}), {} unexplained, {} listed but not seen ({})",
        outcomes.len(),
        outcomes.len() - agreed - unexplained.len(),
        known_seen.iter().copied().collect::<Vec<_>>().join(", "),
        unexplained.len(),
        stale.len(),
        stale.join(", ")
    );
    if let Some(path) = std::env::var_os("CONFORMANCE_REST_DUMP") {
        std::fs::write(&path, dump).expect("write CONFORMANCE_REST_DUMP");
    }

    ours_worker.server.stop().await;
    ours_worker.worker.shutdown().await;
    drop(java_worker);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        unexplained.is_empty(),
        "REST differences not listed in conformance/REST_DIFFERENCES.md: {unexplained:?}"
    );
    assert!(
        stale.is_empty(),
        "listed in REST_DIFFERENCES.md but no longer seen (remove them from the list): {stale:?}"
    );
}

fn body_text(b: &Body) -> String {
    match b {
        Body::Empty => "(empty)".into(),
        Body::Text(t) => format!("text {t:?}"),
        Body::Json(j) => j.to_string(),
    }
}

fn clip_body(b: &Body) -> String {
    match b {
        Body::Empty => "(empty)".into(),
        Body::Text(t) => format!("text {:?}", &t[..t.floor_char_boundary(200)]),
        Body::Json(j) => clip(j),
    }
}

#[test]
fn a_missing_plain_converter_list_is_the_only_thing_let_through() {
    let seen_in_ci = r#"body/distinct member shapes: Kafka has 5 elements [{"version":"<string>","type":"header_converter"},{"version":"<string>","type":"predicate"},{"version":"<string>","type":"sink"},{"version":"<string>","type":"source"},{"version":"<string>","type":"transformation"}], ours 6 [{"version":"<string>","type":"converter"},{"version":"<string>","type":"header_converter"},{"version":"<string>","type":"predicate"},{"version":"<string>","type":"sink"},{"version":"<string>","type":"source"},{"version":"<string>","type":"transformation"}]"#;
    assert!(only_plain_converters_differ(seen_in_ci));
    let predicate_missing =
        seen_in_ci.replacen(r#"{"version":"<string>","type":"predicate"},"#, "", 1);
    assert!(!only_plain_converters_differ(&predicate_missing));
    assert!(!only_plain_converters_differ("status: Kafka 200, ours 404"));
}

/// A free port for a worker; the test cannot go on without one.
fn free_port() -> u16 {
    any_free_port().expect("a free port in 20000-31999")
}
