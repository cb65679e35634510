//! REST request bodies on the routes that take one, through the router a
//! worker serves (in-memory Kafka): nothing a client sends may panic, and
//! every refusal is a 4xx.
#![no_main]

use std::sync::{Arc, OnceLock};

use axum::body::Body;
use axum::http::{Method, Request};
use axum::Router;
use connect_runtime::herder::StandaloneHerder;
use connect_runtime::kafka::memory::MemoryKafka;
use connect_runtime::offsets::MemoryOffsetStore;
use connect_runtime::rest::{router, Loggers};
use connect_runtime::worker::{Plugins, Worker, WorkerConfig};
use libfuzzer_sys::fuzz_target;
use tower::ServiceExt;

/// (method, path) of each route with a body.
const ROUTES: &[(&str, &str)] = &[
    ("POST", "/connectors"),
    ("PUT", "/connectors/c/config"),
    ("PATCH", "/connectors/c/config"),
    ("PUT", "/connector-plugins/FileStreamSource/config/validate"),
    ("PATCH", "/connectors/c/offsets"),
    ("PUT", "/admin/loggers/org.apache.kafka.connect"),
    (
        "POST",
        "/connectors/c/restart?includeTasks=true&onlyFailed=true",
    ),
];

fn setup() -> &'static (tokio::runtime::Runtime, Router) {
    static SETUP: OnceLock<(tokio::runtime::Runtime, Router)> = OnceLock::new();
    SETUP.get_or_init(|| {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let props = connect_api::ConfigMap::from([
            (
                "key.converter",
                "org.apache.kafka.connect.json.JsonConverter",
            ),
            (
                "value.converter",
                "org.apache.kafka.connect.json.JsonConverter",
            ),
        ]);
        let config = WorkerConfig::parse(&props).expect("config");
        let herder = runtime.block_on(async {
            StandaloneHerder::new(Worker::new(
                config,
                Plugins::with_builtins(),
                Arc::new(MemoryKafka::new()),
                Arc::new(MemoryOffsetStore::new()),
            ))
        });
        let app = router(Arc::new(herder), Loggers::in_memory("INFO"));
        (runtime, app)
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, body)) = data.split_first() else {
        return;
    };
    let (runtime, app) = setup();
    let (method, path) = ROUTES[usize::from(pick) % ROUTES.len()];
    let request = Request::builder()
        .method(Method::from_bytes(method.as_bytes()).expect("method"))
        .uri(path)
        .header("content-type", "application/json")
        .body(Body::from(body.to_vec()))
        .expect("request");
    let response = runtime
        .block_on(app.clone().oneshot(request))
        .expect("infallible");
    assert!(
        !response.status().is_server_error(),
        "{method} {path} answered {} to {:?}",
        response.status(),
        String::from_utf8_lossy(body)
    );
});
