//! The REST API end to end over HTTP on 127.0.0.1:0, with the in-memory
//! Kafka and small test connectors: every endpoint, Kafka's shapes and status
//! codes, bad inputs, and what pause/resume/stop/restart/delete do to states
//! and to data flow.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use connect_api::config::validators::Range;
use connect_api::config::ConfigReport;
use connect_api::config::{ConfigDef, ConfigKey, ConfigMap, ConfigType, Importance};
use connect_api::connector::{Connector, ConnectorContext, SinkConnector, SourceConnector};
use connect_api::sink::{SinkTask, SinkTaskContext};
use connect_api::source::{SourceTask, SourceTaskContext};
use connect_api::{
    ConnectError, Record, Result, Schema, SinkRecord, SourceMap, SourceRecord, Value,
};
use connect_runtime::herder::{Herder, StandaloneHerder};
use connect_runtime::kafka::memory::MemoryKafka;
use connect_runtime::offsets::MemoryOffsetStore;
use connect_runtime::rest::{Loggers, RestServer};
use connect_runtime::status::TargetState;
use connect_runtime::worker::offset_admin::{ConnectorOffsets, OffsetChange};
use connect_runtime::worker::{
    ConnectorInfo, ConnectorStatus, Plugins, TaskStateInfo, Worker, WorkerConfig,
};
use serde_json::{json, Value as Json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

// ---------------------------------------------------------------- HTTP client

struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: Json,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
    fn message(&self) -> &str {
        self.body["message"].as_str().unwrap_or("")
    }
}

/// One HTTP/1.1 request with `Connection: close`; the body is read to EOF.
async fn http(base: &str, method: &str, path: &str, body: Option<&str>) -> Reply {
    let (status, headers, payload) = http_raw(base, method, path, body).await;
    let body = if payload.trim().is_empty() {
        Json::Null
    } else {
        serde_json::from_str(&payload)
            .unwrap_or_else(|e| panic!("{method} {path}: not JSON ({e}): {payload}"))
    };
    Reply {
        status,
        headers,
        body,
    }
}

/// Status, headers and body text of one request.
async fn http_raw(
    base: &str,
    method: &str,
    path: &str,
    body: Option<&str>,
) -> (u16, Vec<(String, String)>, String) {
    http_raw_with(base, method, path, None, body).await
}

/// [`http_raw`] with the extra header `header` (`"Name: value"`).
async fn http_raw_with(
    base: &str,
    method: &str,
    path: &str,
    header: Option<&str>,
    body: Option<&str>,
) -> (u16, Vec<(String, String)>, String) {
    let addr = base.trim_start_matches("http://").trim_end_matches('/');
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let body = body.unwrap_or("");
    let extra = header.map(|h| format!("{h}\r\n")).unwrap_or_default();
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n{extra}Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.expect("write");
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).await.expect("read");
    let text = String::from_utf8(raw).expect("utf-8 reply");
    let (head, payload) = text.split_once("\r\n\r\n").expect("header end");
    let mut lines = head.lines();
    let status: u16 = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect();
    let chunked = headers
        .iter()
        .any(|(k, v)| k.eq_ignore_ascii_case("transfer-encoding") && v.contains("chunked"));
    let payload = if chunked {
        connect_test_support::dechunk(payload)
    } else {
        payload.to_string()
    };
    (status, headers, payload)
}

/// Poll `check` until it holds (30 s deadline).
async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while !check().await {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

// ------------------------------------------------------------ test plugins

/// Counts up from its stored offset: one record "v{n}" per poll (10 ms
/// apart) on `topic`, partition `{"source":"counter"}`, offset `{"n":n}`.
struct CounterTask {
    next: i64,
    topic: String,
    /// `stop.delay.ms`: how long `stop` takes.
    stop_delay: Duration,
}

fn counter_partition() -> SourceMap {
    let mut p = SourceMap::new();
    p.insert("source".into(), "counter".into());
    p
}

#[async_trait]
impl SourceTask for CounterTask {
    async fn start(&mut self, config: &ConfigMap, ctx: Arc<dyn SourceTaskContext>) -> Result<()> {
        if config.get("fail.start").is_some_and(|v| v == "true") {
            return Err(ConnectError::other("configured to fail"));
        }
        self.topic = config.get("topic").cloned().unwrap_or_default();
        self.stop_delay = Duration::from_millis(
            config
                .get("stop.delay.ms")
                .and_then(|v| v.parse().ok())
                .unwrap_or(0),
        );
        if let Some(o) = ctx.offset_storage_reader().offset(&counter_partition()) {
            self.next = o["n"].as_i64().unwrap_or(-1) + 1;
        }
        Ok(())
    }
    async fn poll(&mut self) -> Result<Vec<SourceRecord>> {
        tokio::time::sleep(Duration::from_millis(10)).await;
        let n = self.next;
        self.next += 1;
        let mut offset = SourceMap::new();
        offset.insert("n".into(), n.into());
        Ok(vec![SourceRecord::new(
            Arc::new(counter_partition()),
            offset,
            Record::new(
                self.topic.as_str(),
                Some(Schema::string()),
                Value::from(format!("v{n}")),
            ),
        )])
    }
    async fn commit(&mut self) -> Result<()> {
        if let Ok(mut c) = COMMITS.lock() {
            *c.entry(self.topic.clone()).or_default() += 1;
        }
        Ok(())
    }
    async fn stop(&mut self) -> Result<()> {
        tokio::time::sleep(self.stop_delay).await;
        Ok(())
    }
}

/// `SourceTask::commit` calls per topic: the worker calls it after every
/// offset flush, paused or not, so it shows the task's loop turning.
static COMMITS: Mutex<std::collections::BTreeMap<String, usize>> =
    Mutex::new(std::collections::BTreeMap::new());

fn commits(topic: &str) -> usize {
    COMMITS
        .lock()
        .map(|c| c.get(topic).copied().unwrap_or(0))
        .unwrap_or(0)
}

/// Source connector with a required `topic`, an int `count.hint`, a
/// PASSWORD `secret`; tasks get the connector config. `alter_offsets`
/// acknowledges when `ack.offsets=true`.
#[derive(Default)]
struct CounterSource(ConfigMap);

fn counter_def() -> ConfigDef {
    ConfigDef::new()
        .define(
            ConfigKey::new("topic", ConfigType::String)
                .importance(Importance::High)
                .group("Counter", 1)
                .doc("Topic to write to."),
        )
        .define(
            ConfigKey::new("count.hint", ConfigType::Int)
                .default(10)
                .validator(Range::at_least(0))
                .group("Counter", 2)
                .doc("Unused number."),
        )
        .define(
            ConfigKey::new("secret", ConfigType::Password)
                .optional()
                .group("Counter", 3)
                .doc("A secret."),
        )
}

#[async_trait]
impl Connector for CounterSource {
    fn version(&self) -> String {
        "1.2.3".into()
    }
    fn config_def(&self) -> ConfigDef {
        counter_def()
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
impl SourceConnector for CounterSource {
    fn create_task(&self) -> Box<dyn SourceTask> {
        Box::new(CounterTask {
            next: 0,
            topic: String::new(),
            stop_delay: Duration::ZERO,
        })
    }
    async fn alter_offsets(
        &mut self,
        config: &ConfigMap,
        _: &[(SourceMap, Option<SourceMap>)],
    ) -> Result<bool> {
        Ok(config.get("ack.offsets").is_some_and(|v| v == "true"))
    }
}

type Collected = Arc<Mutex<Vec<String>>>;

struct CollectSink(Collected);
struct CollectTask(Collected);

#[async_trait]
impl SinkTask for CollectTask {
    async fn start(&mut self, _: &ConfigMap, _: Arc<dyn SinkTaskContext>) -> Result<()> {
        Ok(())
    }
    async fn put(&mut self, records: &[SinkRecord]) -> Result<()> {
        let mut c = self.0.lock().unwrap();
        c.extend(records.iter().map(|r| r.record.value.to_string()));
        Ok(())
    }
    async fn stop(&mut self) -> Result<()> {
        Ok(())
    }
}

#[async_trait]
impl Connector for CollectSink {
    fn version(&self) -> String {
        "1.0".into()
    }
    fn config_def(&self) -> ConfigDef {
        ConfigDef::new()
    }
    async fn start(&mut self, _: &ConfigMap, _: Arc<dyn ConnectorContext>) -> Result<()> {
        Ok(())
    }
    async fn task_configs(&mut self, _max: usize) -> Result<Vec<ConfigMap>> {
        Ok(vec![ConfigMap::new()])
    }
    async fn stop(&mut self) -> Result<()> {
        Ok(())
    }
}

impl SinkConnector for CollectSink {
    fn create_task(&self) -> Box<dyn SinkTask> {
        Box::new(CollectTask(self.0.clone()))
    }
}

// ------------------------------------------------------------------ fixture

struct Fixture {
    url: String,
    kafka: MemoryKafka,
    collected: Collected,
    server: Option<RestServer>,
    worker: StandaloneHerder,
}

impl Fixture {
    async fn start() -> Fixture {
        Self::start_with(&[]).await
    }

    /// A fixture whose worker has the `extra` properties too.
    async fn start_with(extra: &[(&str, &str)]) -> Fixture {
        let kafka = MemoryKafka::new();
        let collected: Collected = Arc::default();
        let mut plugins = Plugins::with_builtins();
        plugins.register_source("test.CounterSource", &["CounterSource"], || {
            Box::new(CounterSource::default())
        });
        let c = collected.clone();
        plugins.register_sink("test.CollectSink", &["CollectSink"], move || {
            Box::new(CollectSink(c.clone()))
        });
        let props = ConfigMap::from([
            (
                "key.converter",
                "org.apache.kafka.connect.json.JsonConverter",
            ),
            (
                "value.converter",
                "org.apache.kafka.connect.json.JsonConverter",
            ),
            ("offset.flush.interval.ms", "50"),
            ("listeners", "http://127.0.0.1:0"),
            ("config.providers", "env"),
            ("consumer.auto.offset.reset", "earliest"),
        ]);
        let mut props = props;
        props.extend(ConfigMap::from_pairs(extra.iter().copied()));
        let worker = StandaloneHerder::new(Worker::new(
            WorkerConfig::parse(&props).unwrap(),
            plugins,
            Arc::new(kafka.clone()),
            Arc::new(MemoryOffsetStore::new()),
        ));
        let server = RestServer::start(
            Arc::new(worker.clone()),
            "http://127.0.0.1:0",
            Loggers::in_memory("INFO"),
        )
        .await
        .unwrap();
        server.set_ready();
        Fixture {
            url: server.url(),
            kafka,
            collected,
            server: Some(server),
            worker,
        }
    }

    async fn call(&self, method: &str, path: &str, body: Option<&str>) -> Reply {
        http(&self.url, method, path, body).await
    }

    async fn create_source(&self, name: &str, topic: &str) -> Reply {
        let body =
            json!({"name": name, "config": {"connector.class": "CounterSource", "topic": topic}});
        self.call("POST", "/connectors", Some(&body.to_string()))
            .await
    }

    async fn create_sink(&self, name: &str, topic: &str) -> Reply {
        let body =
            json!({"name": name, "config": {"connector.class": "CollectSink", "topics": topic}});
        self.call("POST", "/connectors", Some(&body.to_string()))
            .await
    }

    async fn wait_state(&self, name: &str, connector: &str, task: Option<&str>) {
        let what = format!("{name} to be {connector}/{task:?}");
        eventually(&what, || async {
            let s = self
                .call("GET", &format!("/connectors/{name}/status"), None)
                .await
                .body;
            s["connector"]["state"] == connector
                && match task {
                    Some(t) => s["tasks"]
                        .as_array()
                        .is_some_and(|ts| !ts.is_empty() && ts.iter().all(|x| x["state"] == t)),
                    None => s["tasks"].as_array().is_some_and(|ts| ts.is_empty()),
                }
        })
        .await;
    }

    fn produced(&self, topic: &str) -> i64 {
        self.kafka.end_offset(topic, 0).unwrap_or(0)
    }

    fn collected(&self) -> usize {
        self.collected.lock().unwrap().len()
    }

    async fn stop(mut self) {
        if let Some(s) = self.server.take() {
            s.stop().await;
        }
        self.worker.shutdown().await;
    }
}

// -------------------------------------------------------------------- tests

#[tokio::test]
async fn root_health_plugins_and_unknown_routes() {
    let f = Fixture::start().await;
    let r = f.call("GET", "/", None).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body["version"], env!("CARGO_PKG_VERSION"));
    assert!(r.body.get("commit").is_some());
    assert_eq!(r.body["kafka_cluster_id"], f.kafka.cluster_id());
    assert_eq!(f.kafka.cluster_id().len(), 22, "Kafka's id format");

    let r = f.call("GET", "/health", None).await;
    assert_eq!(
        (r.status, r.body["status"].as_str()),
        (200, Some("healthy"))
    );

    let r = f.call("GET", "/connector-plugins", None).await;
    assert_eq!(r.status, 200);
    assert_eq!(
        r.body,
        json!([
            {"class": "test.CollectSink", "type": "sink", "version": "1.0"},
            {"class": "test.CounterSource", "type": "source", "version": "1.2.3"},
        ])
    );
    let all = f
        .call("GET", "/connector-plugins?connectorsOnly=false", None)
        .await
        .body;
    let types: Vec<&str> = all
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["type"].as_str())
        .collect();
    for t in [
        "source",
        "sink",
        "transformation",
        "predicate",
        "converter",
        "header_converter",
    ] {
        assert!(types.contains(&t), "{t} missing from {all}");
    }
    assert!(all
        .as_array()
        .unwrap()
        .iter()
        .any(|p| p["class"] == "org.apache.kafka.connect.json.JsonConverter"));
    assert_eq!(
        f.call("GET", "/connector-plugins?connectorsOnly=maybe", None)
            .await
            .status,
        400
    );

    let r = f
        .call("GET", "/connector-plugins/CounterSource/config", None)
        .await;
    assert_eq!(r.status, 200);
    let topic = &r.body.as_array().unwrap()[0];
    assert_eq!(topic["name"], "topic");
    assert_eq!(topic["type"], "STRING");
    assert_eq!(topic["required"], true);
    assert_eq!(topic["importance"], "HIGH");
    assert_eq!(topic["group"], "Counter");
    assert_eq!(topic["order_in_group"], 1);
    // KIP-769: transforms, predicates and converters too.
    for (plugin, key) in [
        (
            "org.apache.kafka.connect.transforms.InsertField$Value",
            "static.field",
        ),
        ("TopicNameMatches", "pattern"),
        ("JsonConverter", "schemas.enable"),
    ] {
        let r = f
            .call("GET", &format!("/connector-plugins/{plugin}/config"), None)
            .await;
        assert_eq!(r.status, 200, "{plugin}: {}", r.body);
        assert!(
            r.body.as_array().unwrap().iter().any(|d| d["name"] == key),
            "{plugin} lacks {key}: {}",
            r.body
        );
    }
    let r = f.call("GET", "/connector-plugins/Nope/config", None).await;
    assert_eq!((r.status, r.body["error_code"].as_u64()), (404, Some(404)));

    let r = f.call("GET", "/no/such/path", None).await;
    assert_eq!((r.status, r.body["error_code"].as_u64()), (404, Some(404)));
    let r = f.call("DELETE", "/connector-plugins", None).await;
    assert_eq!((r.status, r.body["error_code"].as_u64()), (405, Some(405)));
    f.stop().await;
}

#[tokio::test]
async fn validate_returns_config_infos_even_when_invalid() {
    let f = Fixture::start().await;
    let path = "/connector-plugins/CounterSource/config/validate";
    let ok = f
        .call("PUT", path, Some(r#"{"connector.class":"test.CounterSource","name":"v","topic":"t","secret":"hunter2"}"#))
        .await;
    assert_eq!(ok.status, 200);
    assert_eq!(ok.body["name"], "test.CounterSource");
    assert_eq!(ok.body["error_count"], 0, "{}", ok.body);
    assert!(ok.body["groups"]
        .as_array()
        .unwrap()
        .contains(&json!("Counter")));
    let configs = ok.body["configs"].as_array().unwrap();
    let secret = configs
        .iter()
        .find(|c| c["definition"]["name"] == "secret")
        .unwrap();
    assert_eq!(secret["definition"]["type"], "PASSWORD");
    assert_eq!(secret["value"]["value"], "[hidden]");
    assert!(!ok.body.to_string().contains("hunter2"));
    for c in configs {
        for k in [
            "name",
            "type",
            "required",
            "default_value",
            "importance",
            "documentation",
            "group",
            "order_in_group",
            "width",
            "display_name",
            "dependents",
        ] {
            assert!(
                c["definition"].get(k).is_some(),
                "definition lacks {k}: {c}"
            );
        }
        for k in ["name", "value", "recommended_values", "errors", "visible"] {
            assert!(c["value"].get(k).is_some(), "value lacks {k}: {c}");
        }
    }

    // Invalid: 200 with the errors counted and attached to their keys.
    let bad = f
        .call("PUT", path, Some(r#"{"name":"v","count.hint":"many"}"#))
        .await;
    assert_eq!(bad.status, 200);
    assert_eq!(bad.body["error_count"], 2, "{}", bad.body);
    let errors_of = |key: &str| {
        bad.body["configs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["value"]["name"] == key)
            .map(|c| c["value"]["errors"].as_array().unwrap().len())
    };
    assert_eq!(errors_of("topic"), Some(1));
    assert_eq!(errors_of("count.hint"), Some(1));

    let r = f
        .call("PUT", path, Some(r#"{"connector.class":"CollectSink"}"#))
        .await;
    assert_eq!(r.status, 400);
    assert!(r.message().contains("does not match"), "{}", r.message());
    assert_eq!(f.call("PUT", path, Some("{nope")).await.status, 400);
    assert_eq!(
        f.call("PUT", "/connector-plugins/Nope/config/validate", Some("{}"))
            .await
            .status,
        404
    );
    f.stop().await;
}

#[tokio::test]
async fn create_rejects_bad_requests_without_side_effects() {
    let f = Fixture::start().await;
    let cases: &[(&str, u16, &str)] = &[
        ("{not json", 400, "Malformed JSON"),
        ("", 400, "empty"),
        ("[1,2]", 400, "JSON object"),
        (
            r#"{"config":{"connector.class":"CounterSource","topic":"t"}}"#,
            400,
            "name is required",
        ),
        (r#"{"name":"a"}"#, 400, "config is required"),
        (r#"{"name":"  ","config":{}}"#, 400, "may not be empty"),
        (r#"{"name":"a/b","config":{}}"#, 400, "'/'"),
        (
            r#"{"name":"a","config":{"connector.class":"NoSuchConnector","topic":"t"}}"#,
            400,
            "NoSuchConnector",
        ),
        (
            r#"{"name":"a","config":{"topic":"t"}}"#,
            400,
            "connector.class",
        ),
        (
            r#"{"name":"a","config":{"connector.class":"CounterSource"}}"#,
            400,
            "Connector configuration is invalid and contains the following 1 error(s)",
        ),
        (
            r#"{"name":"a","config":{"connector.class":"CounterSource","topic":{"x":1}}}"#,
            400,
            "'topic' must be a string",
        ),
        (
            r#"{"name":"a","config":{"connector.class":"CounterSource","topic":"t","name":"b"}}"#,
            400,
            "doesn't match",
        ),
        (
            r#"{"name":"a","config":{"connector.class":"CounterSource","topic":"t"},"initial_state":"SLEEPING"}"#,
            400,
            "initial_state",
        ),
    ];
    for (body, status, needle) in cases {
        let r = f.call("POST", "/connectors", Some(body)).await;
        assert_eq!(r.status, *status, "{body}: {}", r.body);
        assert_eq!(r.body["error_code"].as_u64(), Some(*status as u64));
        assert!(
            r.message().contains(needle),
            "{body}: expected '{needle}' in '{}'",
            r.message()
        );
    }
    assert_eq!(f.call("GET", "/connectors", None).await.body, json!([]));

    let r = f.create_source("counter", "numbers").await;
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(r.header("location"), Some("/connectors/counter"));
    assert_eq!(r.body["name"], "counter");
    assert_eq!(r.body["type"], "source");
    assert_eq!(r.body["config"]["topic"], "numbers");
    assert_eq!(
        r.body["tasks"],
        json!([{"connector": "counter", "task": 0}])
    );
    let dup = f.create_source("counter", "other").await;
    assert_eq!(dup.status, 409);
    assert!(
        dup.message().contains("already exists"),
        "{}",
        dup.message()
    );
    let info = f.call("GET", "/connectors/counter", None).await;
    assert_eq!(
        info.body["config"]["topic"], "numbers",
        "the duplicate changed nothing"
    );
    assert_eq!(
        f.call("GET", "/connectors", None).await.body,
        json!(["counter"])
    );
    f.stop().await;
}

/// A CounterSource config with `extra` entries added.
fn counter_config(extra: &[(&str, &str)]) -> Json {
    let mut config = json!({"connector.class": "CounterSource", "topic": "t"});
    for (k, v) in extra {
        config[*k] = json!(v);
    }
    config
}

/// PUT `config` (named "v") to CounterSource's validate endpoint.
async fn validate_counter(f: &Fixture, config: &Json) -> Reply {
    let mut config = config.clone();
    config["name"] = json!("v");
    let path = "/connector-plugins/CounterSource/config/validate";
    let r = f.call("PUT", path, Some(&config.to_string())).await;
    assert_eq!(r.status, 200, "{}", r.body);
    r
}

/// The errors the validate response reports on `key` (`None`: no entry).
fn validate_errors(infos: &Json, key: &str) -> Option<Vec<String>> {
    infos["configs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["value"]["name"] == key)
        .map(|c| {
            c["value"]["errors"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| e.as_str().unwrap().to_string())
                .collect()
        })
}

#[tokio::test]
async fn unknown_plugin_classes_and_bad_plugin_configs_are_refused_up_front_naming_the_key() {
    let f = Fixture::start().await;
    // (extra entries, the key the error must be on, a word of its message)
    type Case<'a> = (&'a [(&'a str, &'a str)], &'a str, &'a str);
    let cases: &[Case] = &[
        (
            &[(
                "value.converter",
                "org.apache.kafka.connect.json.JsonConverterr",
            )],
            "value.converter",
            "JsonConverterr",
        ),
        (
            &[("key.converter", "StringConvertr")],
            "key.converter",
            "StringConvertr",
        ),
        (
            &[("header.converter", "NoSuchHeaderConverter")],
            "header.converter",
            "NoSuchHeaderConverter",
        ),
        (
            &[("value.converter", " ")],
            "value.converter",
            "No class given",
        ),
        (
            &[
                ("value.converter", "JsonConverter"),
                ("value.converter.schemas.enable", "maybe"),
            ],
            "value.converter.schemas.enable",
            "true or false",
        ),
        (
            &[
                ("value.converter", "JsonConverter"),
                ("value.converter.decimal.format", "ROMAN"),
            ],
            "value.converter.decimal.format",
            "ROMAN",
        ),
        (
            &[("transforms", "t"), ("transforms.t.type", "NoSuchSmt")],
            "transforms.t.type",
            "NoSuchSmt",
        ),
        (
            &[
                ("predicates", "p"),
                ("predicates.p.type", "NoSuchPredicate"),
            ],
            "predicates.p.type",
            "NoSuchPredicate",
        ),
    ];
    for (extra, key, needle) in cases {
        let config = counter_config(extra);
        let body = json!({"name": "bad", "config": config});
        let r = f.call("POST", "/connectors", Some(&body.to_string())).await;
        assert_eq!(r.status, 400, "POST {config}: {}", r.body);
        assert!(
            r.message().contains("Connector configuration is invalid")
                && r.message().contains(&format!("{key}: "))
                && r.message().contains(needle),
            "POST {config}: expected an error on {key} with '{needle}' in '{}'",
            r.message()
        );

        let r = f
            .call("PUT", "/connectors/bad/config", Some(&config.to_string()))
            .await;
        assert_eq!(r.status, 400, "PUT {config}: {}", r.body);
        assert!(
            r.message().contains(&format!("{key}: ")) && r.message().contains(needle),
            "PUT {config}: expected an error on {key} in '{}'",
            r.message()
        );

        let v = validate_counter(&f, &config).await;
        assert!(
            v.body["error_count"].as_u64() > Some(0),
            "{config}: {}",
            v.body
        );
        let errors = validate_errors(&v.body, key)
            .unwrap_or_else(|| panic!("{config}: no entry for {key}: {}", v.body));
        assert!(
            errors.iter().any(|e| e.contains(needle)),
            "{config}: errors on {key}: {errors:?}"
        );
    }
    assert_eq!(
        f.call("GET", "/connectors", None).await.body,
        json!([]),
        "nothing was created"
    );

    // An existing connector keeps its config when an update names a bad class.
    assert_eq!(f.create_source("good", "t").await.status, 201);
    let bad = counter_config(&[("value.converter", "JsonConverterr")]);
    let r = f
        .call("PUT", "/connectors/good/config", Some(&bad.to_string()))
        .await;
    assert_eq!(r.status, 400, "{}", r.body);
    let kept = f.call("GET", "/connectors/good/config", None).await.body;
    assert!(kept.get("value.converter").is_none(), "{kept}");

    // Known classes with valid configs pass.
    let ok = counter_config(&[
        ("key.converter", "StringConverter"),
        (
            "value.converter",
            "org.apache.kafka.connect.json.JsonConverter",
        ),
        ("value.converter.schemas.enable", "false"),
        ("header.converter", "SimpleHeaderConverter"),
        ("transforms", "t"),
        ("transforms.t.type", "InsertField$Value"),
        ("transforms.t.static.field", "f"),
        ("transforms.t.static.value", "v"),
        ("transforms.t.predicate", "p"),
        ("predicates", "p"),
        ("predicates.p.type", "TopicNameMatches"),
        ("predicates.p.pattern", "t.*"),
    ]);
    let v = validate_counter(&f, &ok).await;
    assert_eq!(v.body["error_count"], 0, "{}", v.body);
    let body = json!({"name": "fine", "config": ok});
    let r = f.call("POST", "/connectors", Some(&body.to_string())).await;
    assert_eq!(r.status, 201, "{}", r.body);
    f.stop().await;
}

#[tokio::test]
async fn unknown_connector_keys_are_accepted_and_listed_as_warnings_in_validate() {
    let f = Fixture::start().await;
    // Keys under a pass-through prefix and Kafka's own keys are known.
    let known = counter_config(&[
        ("producer.override.linger.ms", "5"),
        ("errors.tolerance", "all"),
        ("topic.creation.groups", "g"),
        ("exactly.once.support", "requested"),
    ]);
    let v = validate_counter(&f, &known).await;
    assert_eq!(v.body["error_count"], 0, "{}", v.body);
    assert!(
        v.body.get("warnings").is_none(),
        "a config Kafka takes silently gets Kafka's shape: {}",
        v.body
    );

    let typo = counter_config(&[("topicz", "t"), ("my.own.flag", "x")]);
    let v = validate_counter(&f, &typo).await;
    assert_eq!(v.body["error_count"], 0, "not an error: {}", v.body);
    assert_eq!(
        validate_errors(&v.body, "topicz"),
        None,
        "not passed off as a defined key in configs: {}",
        v.body
    );
    let warnings = v.body["warnings"].as_array().expect("warnings listed");
    let names: Vec<&str> = warnings
        .iter()
        .map(|w| w["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["my.own.flag", "topicz"]);
    let topicz = warnings[1]["message"].as_str().unwrap();
    assert!(topicz.contains("Did you mean 'topic'?"), "{topicz}");

    let body = json!({"name": "typo", "config": typo});
    let r = f.call("POST", "/connectors", Some(&body.to_string())).await;
    assert_eq!(r.status, 201, "accepted as Kafka does: {}", r.body);
    assert_eq!(r.body["config"]["topicz"], "t");
    f.stop().await;
}

#[tokio::test]
async fn initial_state_kip_980() {
    let f = Fixture::start().await;
    for (name, state, expected, tasks) in [
        ("p", "PAUSED", "PAUSED", Some("PAUSED")),
        ("s", "STOPPED", "STOPPED", None),
        ("r", "RUNNING", "RUNNING", Some("RUNNING")),
    ] {
        let body = json!({"name": name, "config": {"connector.class": "CounterSource", "topic": name}, "initial_state": state});
        let r = f.call("POST", "/connectors", Some(&body.to_string())).await;
        assert_eq!(r.status, 201, "{}", r.body);
        f.wait_state(name, expected, tasks).await;
    }
    assert_eq!(
        f.produced("p"),
        0,
        "a connector created PAUSED produces nothing"
    );
    assert_eq!(
        f.call("PUT", "/connectors/s/resume", None).await.status,
        202
    );
    f.wait_state("s", "RUNNING", Some("RUNNING")).await;
    eventually("the resumed connector to produce", || async {
        f.produced("s") > 0
    })
    .await;
    f.stop().await;
}

#[tokio::test]
async fn read_endpoints_shapes_and_not_found() {
    let f = Fixture::start().await;
    f.create_source("src", "numbers").await;
    f.create_sink("snk", "numbers").await;
    f.wait_state("src", "RUNNING", Some("RUNNING")).await;
    f.wait_state("snk", "RUNNING", Some("RUNNING")).await;

    let status = f.call("GET", "/connectors/src/status", None).await;
    assert_eq!(status.status, 200);
    assert_eq!(status.body["name"], "src");
    assert_eq!(status.body["type"], "source");
    // The listener asked for a free port: the id names the bound one.
    let bound = f.url.trim_start_matches("http://");
    assert_eq!(status.body["connector"]["worker_id"], bound);
    assert_eq!(status.body["tasks"][0]["worker_id"], bound);
    assert!(!bound.ends_with(":0"), "{bound}");
    assert_eq!(status.body["tasks"][0]["id"], 0);

    let t = f.call("GET", "/connectors/src/tasks/0/status", None).await;
    assert_eq!((t.status, &t.body["state"]), (200, &json!("RUNNING")));
    assert_eq!(t.body["id"], 0);
    assert_eq!(
        f.call("GET", "/connectors/src/tasks/7/status", None)
            .await
            .status,
        404
    );
    assert_eq!(
        f.call("GET", "/connectors/src/tasks/abc/status", None)
            .await
            .status,
        404
    );

    let tasks = f.call("GET", "/connectors/src/tasks", None).await;
    assert_eq!(tasks.body[0]["id"], json!({"connector": "src", "task": 0}));
    assert_eq!(tasks.body[0]["config"]["topic"], "numbers");

    let config = f.call("GET", "/connectors/snk/config", None).await;
    assert_eq!(
        config.body,
        json!({"connector.class": "CollectSink", "name": "snk", "topics": "numbers"})
    );

    let both = f
        .call("GET", "/connectors?expand=status&expand=info", None)
        .await
        .body;
    assert_eq!(both["src"]["status"]["connector"]["state"], "RUNNING");
    assert_eq!(both["snk"]["info"]["type"], "sink");
    let only_info = f.call("GET", "/connectors?expand=info", None).await.body;
    assert!(only_info["src"].get("status").is_none() && only_info["src"]["info"].is_object());
    assert_eq!(
        f.call("GET", "/connectors?expand=everything", None)
            .await
            .status,
        400
    );

    for (method, path) in [
        ("GET", "/connectors/ghost"),
        ("GET", "/connectors/ghost/config"),
        ("GET", "/connectors/ghost/status"),
        ("GET", "/connectors/ghost/tasks"),
        ("GET", "/connectors/ghost/offsets"),
        ("DELETE", "/connectors/ghost"),
        ("PUT", "/connectors/ghost/pause"),
        ("PUT", "/connectors/ghost/resume"),
        ("PUT", "/connectors/ghost/stop"),
        ("POST", "/connectors/ghost/restart"),
        ("POST", "/connectors/ghost/tasks/0/restart"),
        ("DELETE", "/connectors/ghost/offsets"),
    ] {
        let r = f.call(method, path, None).await;
        assert_eq!(r.status, 404, "{method} {path}");
        assert_eq!(r.message(), "Connector ghost not found", "{method} {path}");
    }
    assert_eq!(
        f.call("PATCH", "/connectors/ghost/config", Some(r#"{"a":"b"}"#))
            .await
            .status,
        404
    );
    // Zombie fencing (KIP-618) is the distributed leader's: a standalone
    // worker refuses it, for a connector it runs too.
    let fence = f.call("PUT", "/connectors/src/fence", None).await;
    assert_eq!(fence.status, 404);
    assert_eq!(
        fence.message(),
        "Zombie fencing requests are only taken by distributed workers"
    );
    f.stop().await;
}

#[tokio::test]
async fn put_and_patch_config() {
    let f = Fixture::start().await;
    let created = f
        .call(
            "PUT",
            "/connectors/c/config",
            Some(r#"{"connector.class":"CounterSource","topic":"t1"}"#),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    assert_eq!(created.body["config"]["name"], "c");
    let updated = f
        .call(
            "PUT",
            "/connectors/c/config",
            Some(r#"{"connector.class":"CounterSource","topic":"t2","count.hint":"3"}"#),
        )
        .await;
    assert_eq!(updated.status, 200);
    assert_eq!(updated.body["config"]["topic"], "t2");

    let bad = f
        .call(
            "PUT",
            "/connectors/c/config",
            Some(r#"{"connector.class":"CounterSource","count.hint":"-1"}"#),
        )
        .await;
    assert_eq!(bad.status, 400);
    assert!(bad.message().contains("2 error(s)"), "{}", bad.message());
    assert_eq!(
        f.call("GET", "/connectors/c/config", None).await.body["topic"],
        "t2",
        "nothing half-applied"
    );
    assert_eq!(
        f.call(
            "PUT",
            "/connectors/c/config",
            Some(r#"{"connector.class":"CounterSource","topic":"t","name":"d"}"#)
        )
        .await
        .status,
        400
    );

    let patched = f
        .call(
            "PATCH",
            "/connectors/c/config",
            Some(r#"{"count.hint":null,"topic":"t3","tasks.max":2}"#),
        )
        .await;
    assert_eq!(patched.status, 200, "{}", patched.body);
    let config = &patched.body["config"];
    assert_eq!(config["topic"], "t3");
    assert_eq!(config["tasks.max"], "2");
    assert!(
        config.get("count.hint").is_none(),
        "null deletes the key: {config}"
    );
    let bad = f
        .call("PATCH", "/connectors/c/config", Some(r#"{"topic":null}"#))
        .await;
    assert_eq!(bad.status, 400);
    assert_eq!(
        f.call("GET", "/connectors/c/config", None).await.body["topic"],
        "t3"
    );
    assert_eq!(
        f.call("PATCH", "/connectors/c/config", Some("[]"))
            .await
            .status,
        400
    );
    f.stop().await;
}

#[tokio::test]
async fn lifecycle_changes_states_and_data_flow() {
    let f = Fixture::start().await;
    f.create_source("src", "flow").await;
    f.create_sink("snk", "flow").await;
    f.wait_state("src", "RUNNING", Some("RUNNING")).await;
    eventually("records to flow to the sink", || async {
        f.collected() >= 5
    })
    .await;

    // Pause: PAUSED everywhere, the source stops producing.
    let r = f.call("PUT", "/connectors/src/pause", None).await;
    assert_eq!(r.status, 202);
    f.wait_state("src", "PAUSED", Some("PAUSED")).await;
    // Once the stored offset covers everything on the topic, every record
    // sent before the pause has landed; from there, three offset flushes
    // pass with nothing produced.
    eventually(
        "the last records before the pause to be acknowledged",
        || async {
            let r = f.call("GET", "/connectors/src/offsets", None).await;
            let stored = r.body["offsets"][0]["offset"]["n"].as_i64();
            stored == Some(f.produced("flow") - 1)
        },
    )
    .await;
    let at_pause = f.produced("flow");
    let turns = commits("flow");
    eventually("three offset flushes while paused", || async {
        commits("flow") >= turns + 3
    })
    .await;
    assert_eq!(
        f.produced("flow"),
        at_pause,
        "a paused source must not produce"
    );
    eventually("the sink to receive everything produced", || async {
        f.collected() as i64 >= at_pause
    })
    .await;

    let r = f.call("PUT", "/connectors/src/resume", None).await;
    assert_eq!(r.status, 202);
    f.wait_state("src", "RUNNING", Some("RUNNING")).await;
    eventually("production to resume", || async {
        f.produced("flow") > at_pause + 3
    })
    .await;

    // Stop: STOPPED with no tasks; resume starts it again.
    let r = f.call("PUT", "/connectors/src/stop", None).await;
    assert_eq!(r.status, 204);
    f.wait_state("src", "STOPPED", None).await;
    assert_eq!(
        f.call("GET", "/connectors/src/tasks", None).await.body,
        json!([])
    );
    assert_eq!(
        f.call("PUT", "/connectors/src/resume", None).await.status,
        202
    );
    f.wait_state("src", "RUNNING", Some("RUNNING")).await;

    // Restarts.
    let r = f.call("POST", "/connectors/src/restart", None).await;
    assert_eq!((r.status, &r.body), (204, &Json::Null));
    let r = f
        .call(
            "POST",
            "/connectors/src/restart?includeTasks=true&onlyFailed=false",
            None,
        )
        .await;
    assert_eq!(r.status, 202);
    assert_eq!(r.body["connector"]["state"], "RESTARTING");
    assert_eq!(r.body["tasks"][0]["state"], "RESTARTING");
    f.wait_state("src", "RUNNING", Some("RUNNING")).await;
    let r = f
        .call(
            "POST",
            "/connectors/src/restart?includeTasks=true&onlyFailed=true",
            None,
        )
        .await;
    assert_eq!(r.status, 202);
    assert_eq!(
        r.body["connector"]["state"], "RUNNING",
        "nothing failed, nothing restarts"
    );
    assert_eq!(r.body["tasks"][0]["state"], "RUNNING");
    assert_eq!(
        f.call("POST", "/connectors/src/restart?includeTasks=perhaps", None)
            .await
            .status,
        400
    );
    assert_eq!(
        f.call("POST", "/connectors/src/tasks/0/restart", None)
            .await
            .status,
        204
    );
    assert_eq!(
        f.call("POST", "/connectors/src/tasks/5/restart", None)
            .await
            .status,
        404
    );
    f.wait_state("src", "RUNNING", Some("RUNNING")).await;

    // A failed task shows FAILED with a trace; fixing the config and
    // restarting only the failed task recovers it.
    f.create_source("broken", "other").await;
    let patch = f
        .call(
            "PATCH",
            "/connectors/broken/config",
            Some(r#"{"fail.start":"true"}"#),
        )
        .await;
    assert_eq!(patch.status, 200);
    f.wait_state("broken", "RUNNING", Some("FAILED")).await;
    let s = f
        .call("GET", "/connectors/broken/tasks/0/status", None)
        .await;
    assert!(s.body["trace"]
        .as_str()
        .unwrap()
        .contains("configured to fail"));

    // Delete: 204, gone, and the sink stops receiving.
    assert_eq!(f.call("DELETE", "/connectors/snk", None).await.status, 204);
    assert_eq!(f.call("GET", "/connectors/snk", None).await.status, 404);
    let after_delete = f.collected();
    eventually("more production", || async {
        f.produced("flow") as usize > after_delete + 5
    })
    .await;
    assert_eq!(
        f.collected(),
        after_delete,
        "a deleted sink must not receive records"
    );
    assert_eq!(
        f.call("GET", "/connectors", None).await.body,
        json!(["broken", "src"])
    );
    f.stop().await;
}

#[tokio::test]
async fn source_offsets_kip_875() {
    let f = Fixture::start().await;
    f.create_source("src", "numbers").await;
    eventually("a committed source offset", || async {
        let r = f.call("GET", "/connectors/src/offsets", None).await;
        r.body["offsets"][0]["offset"]["n"]
            .as_i64()
            .is_some_and(|n| n >= 3)
    })
    .await;
    let r = f.call("GET", "/connectors/src/offsets", None).await;
    assert_eq!(
        r.body["offsets"][0]["partition"],
        json!({"source": "counter"})
    );

    let body = r#"{"offsets":[{"partition":{"source":"counter"},"offset":{"n":100}}]}"#;
    let running = f.call("PATCH", "/connectors/src/offsets", Some(body)).await;
    assert_eq!(running.status, 400);
    assert!(
        running.message().contains("STOPPED state"),
        "{}",
        running.message()
    );
    assert_eq!(
        f.call("DELETE", "/connectors/src/offsets", None)
            .await
            .status,
        400
    );

    assert_eq!(
        f.call("PUT", "/connectors/src/stop", None).await.status,
        204
    );
    for bad in [
        "{}",
        r#"{"offsets":[{"offset":{"n":1}}]}"#,
        r#"{"offsets":[{"partition":{"source":"counter"},"offset":5}]}"#,
        r#"{"offsets":[]}"#,
        "nope",
    ] {
        let r = f.call("PATCH", "/connectors/src/offsets", Some(bad)).await;
        assert_eq!(r.status, 400, "{bad}: {}", r.body);
    }
    let altered = f.call("PATCH", "/connectors/src/offsets", Some(body)).await;
    assert_eq!(altered.status, 200, "{}", altered.body);
    assert!(altered.message().starts_with(
        "The Connect framework-managed offsets for this connector have been altered successfully"
    ));
    let r = f.call("GET", "/connectors/src/offsets", None).await;
    assert_eq!(
        r.body,
        json!({"offsets": [{"partition": {"source": "counter"}, "offset": {"n": 100}}]})
    );

    // A connector that acknowledges gets the short message.
    let ack = f
        .call(
            "PATCH",
            "/connectors/src/config",
            Some(r#"{"ack.offsets":"true"}"#),
        )
        .await;
    assert_eq!(ack.status, 200);
    let reset = f.call("DELETE", "/connectors/src/offsets", None).await;
    assert_eq!(reset.status, 200);
    assert_eq!(
        reset.message(),
        "The offsets for this connector have been reset successfully"
    );
    assert_eq!(
        f.call("GET", "/connectors/src/offsets", None).await.body,
        json!({"offsets": []})
    );

    // Resumed, it starts from its default position again.
    f.call("PUT", "/connectors/src/resume", None).await;
    f.wait_state("src", "RUNNING", Some("RUNNING")).await;
    f.stop().await;
}

#[tokio::test]
async fn sink_offsets_kip_875() {
    let f = Fixture::start().await;
    f.create_source("src", "numbers").await;
    f.create_sink("snk", "numbers").await;
    eventually("a committed sink offset", || async {
        let r = f.call("GET", "/connectors/snk/offsets", None).await;
        r.body["offsets"][0]["offset"]["kafka_offset"]
            .as_i64()
            .is_some_and(|n| n >= 3)
    })
    .await;
    let r = f.call("GET", "/connectors/snk/offsets", None).await;
    assert_eq!(
        r.body["offsets"][0]["partition"],
        json!({"kafka_topic": "numbers", "kafka_partition": 0})
    );

    assert_eq!(
        f.call("PUT", "/connectors/snk/stop", None).await.status,
        204
    );
    f.wait_state("snk", "STOPPED", None).await;
    let bad = f.call("PATCH", "/connectors/snk/offsets", Some(r#"{"offsets":[{"partition":{"kafka_topic":"numbers"},"offset":{"kafka_offset":1}}]}"#)).await;
    assert_eq!(bad.status, 400);
    assert!(
        bad.message().contains("kafka_partition"),
        "{}",
        bad.message()
    );
    let bad = f.call("PATCH", "/connectors/snk/offsets", Some(r#"{"offsets":[{"partition":{"kafka_topic":"numbers","kafka_partition":0},"offset":{"kafka_offset":-4}}]}"#)).await;
    assert_eq!(bad.status, 400);

    let ok = f.call("PATCH", "/connectors/snk/offsets", Some(r#"{"offsets":[{"partition":{"kafka_topic":"numbers","kafka_partition":0},"offset":{"kafka_offset":2}}]}"#)).await;
    assert_eq!(ok.status, 200, "{}", ok.body);
    assert!(ok.message().contains("altered successfully"));
    assert_eq!(
        f.kafka
            .committed_offsets("connect-snk")
            .values()
            .copied()
            .collect::<Vec<_>>(),
        [2]
    );
    let r = f.call("GET", "/connectors/snk/offsets", None).await;
    assert_eq!(r.body["offsets"][0]["offset"], json!({"kafka_offset": 2}));

    let reset = f.call("DELETE", "/connectors/snk/offsets", None).await;
    assert_eq!(reset.status, 200);
    assert!(reset.message().contains("reset successfully"));
    assert_eq!(
        f.kafka
            .committed_offsets("connect-snk")
            .values()
            .copied()
            .collect::<Vec<_>>(),
        [0]
    );

    // Resumed after the reset, the sink reads the topic from the start again.
    let before = f.collected();
    f.call("PUT", "/connectors/snk/resume", None).await;
    eventually("re-delivery from offset 0", || async {
        f.collected.lock().unwrap()[before..]
            .iter()
            .any(|v| v == "v0")
    })
    .await;
    f.stop().await;
}

#[tokio::test]
async fn secrets_stay_unresolved_in_responses() {
    // A per-process name: no other test reads or writes it.
    let var = format!("REST_TEST_SECRET_{}", std::process::id());
    std::env::set_var(&var, "hunter2");
    let f = Fixture::start().await;
    let reference = format!("${{env:{var}}}");
    let body = json!({"name": "s", "config": {"connector.class": "CounterSource", "topic": "t", "secret": reference}});
    let r = f.call("POST", "/connectors", Some(&body.to_string())).await;
    assert_eq!(r.status, 201, "{}", r.body);
    f.wait_state("s", "RUNNING", Some("RUNNING")).await;
    for path in [
        "/connectors/s",
        "/connectors/s/config",
        "/connectors/s/tasks",
        "/connectors?expand=info",
    ] {
        let r = f.call("GET", path, None).await;
        assert!(
            !r.body.to_string().contains("hunter2"),
            "{path} leaks the secret: {}",
            r.body
        );
        assert!(
            r.body.to_string().contains(&reference),
            "{path} should show the reference: {}",
            r.body
        );
    }
    f.stop().await;
}

#[tokio::test]
async fn loggers() {
    let f = Fixture::start().await;
    let r = f.call("GET", "/admin/loggers", None).await;
    assert_eq!(r.body["root"]["level"], "INFO");
    let r = f
        .call(
            "PUT",
            "/admin/loggers/connect_runtime::worker",
            Some(r#"{"level":"debug"}"#),
        )
        .await;
    assert_eq!(
        (r.status, &r.body),
        (200, &json!(["connect_runtime::worker"]))
    );
    let r = f
        .call("GET", "/admin/loggers/connect_runtime::worker", None)
        .await;
    assert_eq!(r.body["level"], "DEBUG");
    assert!(r.body["last_modified"].is_i64());
    assert_eq!(
        f.call("GET", "/admin/loggers/nobody", None).await.status,
        404
    );
    assert_eq!(
        f.call("PUT", "/admin/loggers/x", Some(r#"{"level":"LOUD"}"#))
            .await
            .status,
        400
    );
    assert_eq!(
        f.call("PUT", "/admin/loggers/x", Some(r#"{"lvl":"INFO"}"#))
            .await
            .status,
        400
    );
    f.stop().await;
}

/// KIP-558: the topics a connector used, and their reset.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn active_topics_are_tracked_and_reset() {
    let f = Fixture::start().await;
    assert_eq!(f.create_source("src", "orders").await.status, 201);
    assert_eq!(f.create_sink("snk", "orders").await.status, 201);
    for name in ["src", "snk"] {
        let path = format!("/connectors/{name}/topics");
        eventually(&format!("{name} using 'orders'"), || async {
            f.call("GET", &path, None).await.body == json!({ name: { "topics": ["orders"] } })
        })
        .await;
    }
    let reset = f.call("PUT", "/connectors/snk/topics/reset", None).await;
    assert_eq!(reset.status, 202, "{}", reset.body);
    let after = f.call("GET", "/connectors/snk/topics", None).await;
    assert_eq!(after.body, json!({"snk": {"topics": []}}));
    let unknown = f.call("GET", "/connectors/nope/topics", None).await;
    assert_eq!(unknown.status, 404, "{}", unknown.body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_are_served_in_prometheus_text_format() {
    let f = Fixture::start().await;
    let r = http(
        &f.url,
        "POST",
        "/connectors",
        Some(r#"{"name":"collect","config":{"connector.class":"CollectSink","topics":"t"}}"#),
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.body);
    let (status, headers, text) = http_raw(&f.url, "GET", "/metrics", None).await;
    assert_eq!(status, 200, "{text}");
    let content_type = headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("content-type"))
        .map(|(_, v)| v.as_str());
    assert_eq!(
        content_type,
        Some("text/plain; version=0.0.4; charset=utf-8")
    );
    let value = |series: &str| -> Option<f64> {
        text.lines()
            .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
    };
    for (series, want) in [
        ("kafka_connect_connect_worker_metrics_connector_count", 1.0),
        ("kafka_connect_connect_worker_metrics_task_count", 1.0),
        (
            r#"kafka_connect_connector_metrics_info{connector="collect",connector_class="test.CollectSink",connector_type="sink"}"#,
            1.0,
        ),
        (
            r#"kafka_connect_sink_task_metrics_sink_record_read_total{connector="collect",task="0"}"#,
            0.0,
        ),
    ] {
        assert_eq!(value(series), Some(want), "{series} in:\n{text}");
    }
    assert!(
        text.contains("# TYPE kafka_connect_sink_task_metrics_sink_record_read counter"),
        "{text}"
    );
}

#[tokio::test]
async fn health_is_503_until_ready() {
    let kafka = MemoryKafka::new();
    let props = ConfigMap::from([
        ("key.converter", "JsonConverter"),
        ("value.converter", "JsonConverter"),
    ]);
    let worker = StandaloneHerder::new(Worker::new(
        WorkerConfig::parse(&props).unwrap(),
        Plugins::with_builtins(),
        Arc::new(kafka),
        Arc::new(MemoryOffsetStore::new()),
    ));
    let server = RestServer::start(
        Arc::new(worker),
        "http://127.0.0.1:0",
        Loggers::in_memory("INFO"),
    )
    .await
    .unwrap();
    let r = http(&server.url(), "GET", "/health", None).await;
    assert_eq!(
        (r.status, r.body["status"].as_str()),
        (503, Some("starting"))
    );
    server.set_ready();
    assert_eq!(
        http(&server.url(), "GET", "/health", None).await.status,
        200
    );
    let taken = server.local_addr().to_string();
    let worker2 = StandaloneHerder::new(Worker::new(
        WorkerConfig::parse(&props).unwrap(),
        Plugins::with_builtins(),
        Arc::new(MemoryKafka::new()),
        Arc::new(MemoryOffsetStore::new()),
    ));
    let e = RestServer::start(
        Arc::new(worker2),
        &format!("http://{taken}"),
        Loggers::in_memory("INFO"),
    )
    .await
    .unwrap_err();
    assert!(e.to_string().contains("listeners"), "{e}");
    server.stop().await;
}

/// `admin.listeners` as in Kafka: set, the `/admin` endpoints move to
/// their own listeners and leave the main ones; empty, they are gone;
/// several `listeners` all serve the API.
#[tokio::test]
async fn admin_listeners_move_or_disable_the_admin_endpoints() {
    let start = |admin: Option<&str>| {
        let mut props = ConfigMap::from([
            ("key.converter", "JsonConverter"),
            ("value.converter", "JsonConverter"),
        ]);
        if let Some(admin) = admin {
            props.insert("admin.listeners".into(), admin.into());
        }
        let worker = StandaloneHerder::new(Worker::new(
            WorkerConfig::parse(&props).unwrap(),
            Plugins::with_builtins(),
            Arc::new(MemoryKafka::new()),
            Arc::new(MemoryOffsetStore::new()),
        ));
        async move {
            RestServer::start_all(
                Arc::new(worker),
                &[
                    "http://127.0.0.1:0".to_string(),
                    "http://127.0.0.1:0".to_string(),
                ],
                Loggers::in_memory("INFO"),
            )
            .await
            .unwrap()
        }
    };
    // Unset: /admin on every listener.
    let server = start(None).await;
    assert_eq!(server.urls().len(), 2);
    assert!(server.admin_urls().is_empty());
    for url in server.urls() {
        assert_eq!(http(&url, "GET", "/admin/loggers", None).await.status, 200);
        assert_eq!(http(&url, "GET", "/connectors", None).await.status, 200);
    }
    server.stop().await;
    // Set: /admin only on the admin listener, which serves nothing else.
    let server = start(Some("http://127.0.0.1:0")).await;
    let admin = &server.admin_urls()[0];
    assert_eq!(http(admin, "GET", "/admin/loggers", None).await.status, 200);
    assert_eq!(http(admin, "GET", "/connectors", None).await.status, 404);
    for url in server.urls() {
        assert_eq!(http(&url, "GET", "/admin/loggers", None).await.status, 404);
        assert_eq!(http(&url, "GET", "/connectors", None).await.status, 200);
    }
    server.stop().await;
    // Empty: no /admin anywhere.
    let server = start(Some("")).await;
    assert!(server.admin_urls().is_empty());
    assert_eq!(
        http(&server.url(), "GET", "/admin/loggers", None)
            .await
            .status,
        404
    );
    server.stop().await;
}

// ------------------------------------------------------------ the herder seam

/// A herder that is not the standalone worker: it answers reads from a
/// worker and refuses every change with a conflict, as a distributed
/// follower that cannot reach its leader would. The REST layer serves it
/// unchanged, and every request goes through the trait (recorded).
struct ReadOnlyHerder {
    inner: StandaloneHerder,
    calls: Mutex<Vec<&'static str>>,
}

impl ReadOnlyHerder {
    fn read(&self, call: &'static str) -> &StandaloneHerder {
        self.calls.lock().unwrap().push(call);
        &self.inner
    }
    fn refuse<T>(&self, call: &'static str) -> connect_api::Result<T> {
        self.calls.lock().unwrap().push(call);
        Err(connect_api::ConnectError::conflict(
            "this worker cannot reach the leader; try again",
        ))
    }
}

#[async_trait]
impl Herder for ReadOnlyHerder {
    fn worker_id(&self) -> &str {
        self.inner.worker_id()
    }
    fn config(&self) -> &WorkerConfig {
        self.inner.config()
    }
    fn plugins(&self) -> &Plugins {
        self.inner.plugins()
    }
    fn set_listener_address(&self, addr: std::net::SocketAddr) {
        self.inner.set_listener_address(addr);
    }
    async fn kafka_cluster_id(&self) -> Option<String> {
        self.read("kafka_cluster_id").kafka_cluster_id().await
    }
    fn validate(&self, config: &ConfigMap) -> connect_api::Result<(String, Vec<ConfigReport>)> {
        self.read("validate").validate(config)
    }
    async fn connector_names(&self) -> Vec<String> {
        self.read("connector_names").connector_names().await
    }
    async fn create_connector(
        &self,
        _: &str,
        _: ConfigMap,
        _: TargetState,
    ) -> connect_api::Result<ConnectorInfo> {
        self.refuse("create_connector")
    }
    async fn put_connector_config(
        &self,
        _: &str,
        _: ConfigMap,
    ) -> connect_api::Result<(ConnectorInfo, bool)> {
        self.refuse("put_connector_config")
    }
    async fn delete_connector(&self, _: &str) -> connect_api::Result<()> {
        self.refuse("delete_connector")
    }
    async fn connector_info(&self, name: &str) -> connect_api::Result<ConnectorInfo> {
        self.read("connector_info").connector_info(name).await
    }
    async fn task_configs(&self, name: &str) -> connect_api::Result<Vec<ConfigMap>> {
        self.read("task_configs").task_configs(name).await
    }
    async fn connector_status(&self, name: &str) -> connect_api::Result<ConnectorStatus> {
        self.read("connector_status").connector_status(name).await
    }
    async fn task_status(&self, name: &str, task: u32) -> connect_api::Result<TaskStateInfo> {
        self.read("task_status").task_status(name, task).await
    }
    async fn pause(&self, _: &str) -> connect_api::Result<()> {
        self.refuse("pause")
    }
    async fn resume(&self, _: &str) -> connect_api::Result<()> {
        self.refuse("resume")
    }
    async fn stop(&self, _: &str) -> connect_api::Result<()> {
        self.refuse("stop")
    }
    async fn restart_connector(
        &self,
        _: &str,
        _: bool,
        _: bool,
    ) -> connect_api::Result<ConnectorStatus> {
        self.refuse("restart_connector")
    }
    async fn restart_task(&self, _: &str, _: u32) -> connect_api::Result<()> {
        self.refuse("restart_task")
    }
    async fn connector_topics(&self, name: &str) -> connect_api::Result<Vec<String>> {
        self.read("connector_topics").connector_topics(name).await
    }
    async fn reset_connector_topics(&self, _: &str) -> connect_api::Result<()> {
        self.refuse("reset_connector_topics")
    }
    async fn connector_offsets(&self, name: &str) -> connect_api::Result<ConnectorOffsets> {
        self.read("connector_offsets").connector_offsets(name).await
    }
    async fn alter_connector_offsets(
        &self,
        _: &str,
        _: Vec<OffsetChange>,
    ) -> connect_api::Result<String> {
        self.refuse("alter_connector_offsets")
    }
    async fn reset_connector_offsets(&self, _: &str) -> connect_api::Result<String> {
        self.refuse("reset_connector_offsets")
    }
}

#[tokio::test]
async fn the_rest_api_serves_any_herder() {
    let f = Fixture::start().await;
    assert_eq!(f.create_source("src", "t").await.status, 201);
    let herder = Arc::new(ReadOnlyHerder {
        inner: f.worker.clone(),
        calls: Mutex::new(Vec::new()),
    });
    let server = RestServer::start(
        herder.clone(),
        "http://127.0.0.1:0",
        Loggers::in_memory("INFO"),
    )
    .await
    .unwrap();
    let url = server.url();
    let listed = http(&url, "GET", "/connectors", None).await;
    assert_eq!((listed.status, listed.body.clone()), (200, json!(["src"])));
    let status = http(&url, "GET", "/connectors/src/status", None).await;
    assert_eq!(status.status, 200);
    assert_eq!(status.body["name"], "src");
    let body = json!({"name": "other", "config": {"connector.class": "CounterSource"}});
    let refused = http(&url, "POST", "/connectors", Some(&body.to_string())).await;
    assert_eq!(refused.status, 409);
    assert!(
        refused.message().contains("cannot reach the leader"),
        "{}",
        refused.message()
    );
    let paused = http(&url, "PUT", "/connectors/src/pause", None).await;
    assert_eq!(paused.status, 409);
    assert_eq!(
        *herder.calls.lock().unwrap(),
        [
            "connector_names",
            "connector_status",
            "create_connector",
            "pause"
        ]
    );
    server.stop().await;
}

/// A client that goes away in the middle of a task restart does not cut
/// the restart short. Hyper drops a handler's future when its connection
/// closes; a restart dropped between stopping the task and starting it
/// again left the task stopped for good (the churn drill found it: a
/// worker killed while its forwarded restart ran on the task's owner).
#[tokio::test]
async fn a_restart_finishes_when_its_client_goes_away() {
    let f = Fixture::start().await;
    let body = json!({"name": "slow", "config": {
        "connector.class": "CounterSource", "topic": "slow", "stop.delay.ms": "500",
    }});
    assert_eq!(
        f.call("POST", "/connectors", Some(&body.to_string()))
            .await
            .status,
        201
    );
    f.wait_state("slow", "RUNNING", Some("RUNNING")).await;
    let addr = f.url.trim_start_matches("http://").trim_end_matches('/');
    let mut conn = tokio::net::TcpStream::connect(addr).await.unwrap();
    conn.write_all(
        format!(
            "POST /connectors/slow/tasks/0/restart HTTP/1.1\r\nHost: {addr}\r\nContent-Length: 0\r\n\r\n"
        )
        .as_bytes(),
    )
    .await
    .unwrap();
    // The task is stopping (500 ms) when the client goes away.
    tokio::time::sleep(Duration::from_millis(100)).await;
    drop(conn);
    f.wait_state("slow", "RUNNING", Some("RUNNING")).await;
    let produced = f.produced("slow");
    eventually("the restarted task producing", || async {
        f.produced("slow") > produced
    })
    .await;
}

/// `connector.client.config.override.policy=Principal`: a connector may
/// set its own SASL principal but not point its producer elsewhere; the
/// refused override is a 400 naming the key, with Kafka's message, and
/// `validate` reports it on the prefixed key.
#[tokio::test]
async fn client_overrides_outside_the_workers_policy_are_refused() {
    let f = Fixture::start_with(&[("connector.client.config.override.policy", "Principal")]).await;
    let config = |key: &str, value: &str| {
        let mut c = json!({"name": "c", "connector.class": "CounterSource", "topic": "t"});
        c[key] = json!(value);
        c
    };
    let refused = config("producer.override.bootstrap.servers", "elsewhere:9092");
    let body = json!({"name": "c", "config": refused});
    let r = f.call("POST", "/connectors", Some(&body.to_string())).await;
    assert_eq!(r.status, 400, "{}", r.body);
    assert!(
        r.message().contains("producer.override.bootstrap.servers: The 'Principal' policy does not allow 'bootstrap.servers' to be overridden in the connector configuration."),
        "{}",
        r.message()
    );
    let r = f
        .call(
            "PUT",
            "/connector-plugins/CounterSource/config/validate",
            Some(&refused.to_string()),
        )
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body["error_count"], 1, "{}", r.body);
    let reported = r.body["configs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["value"]["name"] == "producer.override.bootstrap.servers")
        .expect("the refused key is reported");
    assert_eq!(reported["value"]["errors"].as_array().unwrap().len(), 1);
    // The principal keys pass; a consumer override is not a source's.
    let mut allowed = config("producer.override.sasl.mechanism", "PLAIN");
    allowed["consumer.override.client.id"] = json!("ignored");
    let body = json!({"name": "c", "config": allowed});
    let r = f.call("POST", "/connectors", Some(&body.to_string())).await;
    assert_eq!(r.status, 201, "{}", r.body);
}

/// Status, the response head and body of a request with the extra header
/// `header` (`"Name: value"`) when given.
async fn http_with_header(
    base: &str,
    method: &str,
    path: &str,
    header: Option<&str>,
    body: &str,
) -> (u16, String, String) {
    let (status, headers, payload) = http_raw_with(base, method, path, header, Some(body)).await;
    let head: Vec<String> = headers.iter().map(|(k, v)| format!("{k}: {v}")).collect();
    (status, head.join("\r\n"), payload)
}

/// Kafka's basic-auth extension, with a Java user's JAAS and credentials
/// files as they are: no or wrong credentials get 401 with
/// `WWW-Authenticate`, right ones go through, the signed worker-to-worker
/// task-config request is not asked for credentials, and a user added to
/// the credentials file can log in without a restart.
#[tokio::test]
async fn basic_auth_reads_kafkas_jaas_and_credentials_files() {
    let dir = std::env::temp_dir().join(format!("rest-basic-auth-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let passwords = dir.join("connect.password");
    std::fs::write(&passwords, "# users\nadmin: admin-secret\nops=ops-secret\n").unwrap();
    let jaas = dir.join("connect_jaas.conf");
    std::fs::write(
        &jaas,
        format!(
            "KafkaConnect {{\n  org.apache.kafka.connect.rest.basic.auth.extension.PropertyFileLoginModule required\n  file=\"{}\";\n}};\n",
            passwords.display()
        ),
    )
    .unwrap();
    let jaas_path = jaas.display().to_string();
    let f = Fixture::start_with(&[
        (
            "rest.extension.classes",
            "org.apache.kafka.connect.rest.basic.auth.extension.BasicAuthSecurityRestExtension",
        ),
        ("java.security.auth.login.config", &jaas_path),
    ])
    .await;
    let basic = |user_password: &str| {
        use base64::Engine;
        format!(
            "Authorization: Basic {}",
            base64::engine::general_purpose::STANDARD.encode(user_password)
        )
    };
    let (status, head, body) = http_with_header(&f.url, "GET", "/connectors", None, "").await;
    assert_eq!(status, 401, "{body}");
    assert!(
        head.to_ascii_lowercase()
            .contains("www-authenticate: basic realm=\"kafkaconnect\""),
        "{head}"
    );
    assert!(body.contains("User cannot access the resource."), "{body}");
    let wrong = basic("admin:nope");
    let (status, _, _) = http_with_header(&f.url, "GET", "/connectors", Some(&wrong), "").await;
    assert_eq!(status, 401);
    for user in ["admin:admin-secret", "ops:ops-secret"] {
        let right = basic(user);
        let (status, _, body) =
            http_with_header(&f.url, "GET", "/connectors", Some(&right), "").await;
        assert_eq!(status, 200, "{user}: {body}");
    }
    // Worker-to-worker task configs are signed, not authenticated: not a
    // 401 (here a standalone worker refuses them for another reason).
    let (status, _, _) = http_with_header(&f.url, "POST", "/connectors/x/tasks", None, "[]").await;
    assert_ne!(status, 401);
    // A user added while the worker runs.
    std::fs::write(
        &passwords,
        "admin: admin-secret\nops=ops-secret\nnewcomer: fresh\n",
    )
    .unwrap();
    let (status, _, _) = http_with_header(
        &f.url,
        "GET",
        "/connectors",
        Some(&basic("newcomer:fresh")),
        "",
    )
    .await;
    assert_eq!(status, 200);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A worker asked to authenticate does not start without a usable JAAS
/// file, and names what to fix.
#[tokio::test]
async fn basic_auth_without_a_jaas_file_stops_the_start() {
    let props = ConfigMap::from([
        (
            "key.converter",
            "org.apache.kafka.connect.json.JsonConverter",
        ),
        (
            "value.converter",
            "org.apache.kafka.connect.json.JsonConverter",
        ),
        (
            "rest.extension.classes",
            "org.apache.kafka.connect.rest.basic.auth.extension.BasicAuthSecurityRestExtension",
        ),
        (
            "java.security.auth.login.config",
            "/nonexistent/connect_jaas.conf",
        ),
    ]);
    let worker = StandaloneHerder::new(Worker::new(
        WorkerConfig::parse(&props).unwrap(),
        Plugins::with_builtins(),
        Arc::new(MemoryKafka::new()),
        Arc::new(MemoryOffsetStore::new()),
    ));
    let err = RestServer::start(
        Arc::new(worker),
        "http://127.0.0.1:0",
        Loggers::in_memory("INFO"),
    )
    .await
    .unwrap_err();
    assert!(
        err.to_string().contains("/nonexistent/connect_jaas.conf"),
        "{err}"
    );
}
