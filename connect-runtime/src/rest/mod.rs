//! The REST API of one worker, on axum: Kafka Connect's endpoints, JSON
//! shapes and status codes (reference §9), errors as
//! `{"error_code":N,"message":"..."}`.
//!
//! The default listener is `http://127.0.0.1:8083`: loopback only, unlike
//! Kafka Connect (all interfaces), since the API can create connectors that
//! read and write files. Set `listeners=http://0.0.0.0:8083` to expose it.
//!
//! Config values are shown as stored: `${file:...}` / `${env:...}`
//! references stay unresolved, and request bodies are never logged.
//!
//! ```no_run
//! # async fn demo(herder: connect_runtime::herder::StandaloneHerder) -> connect_api::Result<()> {
//! use std::sync::Arc;
//! use connect_runtime::rest::{Loggers, RestServer};
//!
//! let server = RestServer::start(Arc::new(herder), "http://127.0.0.1:0", Loggers::in_memory("INFO")).await?;
//! println!("REST API on {}", server.url());
//! server.set_ready();
//! server.stop().await;
//! # Ok(()) }
//! ```

mod basic_auth;
pub mod client;
mod connectors;
mod error;
mod forward;
mod listener;
mod loggers;
mod plugins;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use axum::{Json, Router};
use connect_api::{ConnectError, Result};
use serde_json::json;
use tokio::sync::watch;
use tokio::task::JoinHandle;

pub use basic_auth::{BasicAuth, BASIC_AUTH_EXTENSION, EXTENSIONS_KEY, JAAS_KEY};
pub use client::{HttpReply, RestClient};
pub use listener::{
    ClientAuth, HttpsConnector, HttpsSettings, ListenerSpec, Scheme, ADMIN_HTTPS_PREFIX,
    HTTPS_PREFIX,
};

pub use error::ApiError;
use listener::TlsListener;
pub use loggers::{LevelSetter, Loggers};

use crate::herder::Herder;

/// What every handler sees.
struct AppState {
    herder: Arc<dyn Herder>,
    loggers: Loggers,
    ready: AtomicBool,
    /// Requests to other workers (forwarding to the leader).
    client: RestClient,
}

type Shared = Arc<AppState>;

/// The routes of the API over `herder` (a
/// [`StandaloneHerder`](crate::herder::StandaloneHerder) for standalone
/// mode), for embedding in another axum app (already ready: `/health`
/// answers 200), with the authentication the worker's config asks for
/// ([`BasicAuth::from_worker`]); when that cannot be set up, every request
/// is refused with a 500 naming why, never served without it.
pub fn router(herder: Arc<dyn Herder>, loggers: Loggers) -> Router {
    let config = herder.config().originals();
    let setup = BasicAuth::from_worker(config)
        .and_then(|auth| Ok((auth, RestClient::from_worker(config)?)));
    match setup {
        Ok((auth, client)) => {
            let state = Arc::new(AppState {
                herder,
                loggers,
                ready: AtomicBool::new(true),
                client,
            });
            routes(state, auth.map(Arc::new), Endpoints::All)
        }
        Err(e) => {
            let why = e.to_string();
            Router::new().fallback(move || {
                let why = why.clone();
                async move { ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, why).into_response() }
            })
        }
    }
}

/// Which endpoints a listener serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Endpoints {
    /// The whole API (no `admin.listeners` set).
    All,
    /// All but `/admin` (`admin.listeners` set, empty or not).
    WithoutAdmin,
    /// Only `/admin` (an `admin.listeners` listener).
    AdminOnly,
}

fn routes(state: Shared, auth: Option<Arc<BasicAuth>>, endpoints: Endpoints) -> Router {
    let mut api = Router::new();
    if endpoints != Endpoints::AdminOnly {
        api = api_routes(api);
    }
    if endpoints != Endpoints::WithoutAdmin {
        api = api.route("/admin/loggers", get(loggers::list)).route(
            "/admin/loggers/{logger}",
            get(loggers::get_one).put(loggers::set),
        );
    }
    let api = api
        .layer(axum::middleware::from_fn(answer_panics))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            forward::to_leader,
        ))
        .layer(axum::middleware::from_fn(log_request))
        .layer(axum::middleware::from_fn(run_to_the_end))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .with_state(state);
    match auth {
        // Outermost: nothing runs for a request without credentials.
        Some(auth) => api.layer(axum::middleware::from_fn_with_state(
            auth,
            basic_auth::require,
        )),
        None => api,
    }
}

/// Every endpoint but `/admin`.
fn api_routes(router: Router<Shared>) -> Router<Shared> {
    router
        .route("/", get(root))
        .route("/health", get(health))
        .route("/metrics", get(metrics))
        .route("/ui", get(ui))
        .route("/connector-plugins", get(plugins::list))
        .route("/connector-plugins/{plugin}/config", get(plugins::config))
        .route(
            "/connector-plugins/{plugin}/config/validate",
            put(plugins::validate),
        )
        .route(
            "/connectors",
            get(connectors::list).post(connectors::create),
        )
        .route(
            "/connectors/{name}",
            get(connectors::info).delete(connectors::delete),
        )
        .route(
            "/connectors/{name}/config",
            get(connectors::config)
                .put(connectors::put_config)
                .patch(connectors::patch_config),
        )
        .route("/connectors/{name}/status", get(connectors::status))
        .route(
            "/connectors/{name}/tasks",
            get(connectors::tasks).post(connectors::put_task_configs),
        )
        .route(
            "/connectors/{name}/tasks/{task}/status",
            get(connectors::task_status),
        )
        .route(
            "/connectors/{name}/tasks/{task}/restart",
            post(connectors::restart_task),
        )
        .route("/connectors/{name}/restart", post(connectors::restart))
        .route("/connectors/{name}/topics", get(connectors::topics))
        .route(
            "/connectors/{name}/topics/reset",
            put(connectors::reset_topics),
        )
        .route("/connectors/{name}/pause", put(connectors::pause))
        .route("/connectors/{name}/resume", put(connectors::resume))
        .route("/connectors/{name}/stop", put(connectors::stop))
        .route("/connectors/{name}/fence", put(connectors::fence))
        .route(
            "/connectors/{name}/offsets",
            get(connectors::offsets)
                .patch(connectors::alter_offsets)
                .delete(connectors::reset_offsets),
        )
}

/// Plugin code runs inside some handlers (a connector's `config_def`, a
/// converter's, a config provider): a panic there answers 500 naming it,
/// as Kafka answers a `Throwable`, instead of dropping the connection.
async fn answer_panics(req: axum::extract::Request, next: axum::middleware::Next) -> Response {
    let what = format!("{} {}", req.method(), req.uri().path());
    match crate::panics::contain(what, async { Ok(next.run(req).await) }).await {
        Ok(response) => response,
        Err(e) => {
            tracing::error!(error = %e, "a REST request panicked in plugin code");
            error::ApiError::new(axum::http::StatusCode::INTERNAL_SERVER_ERROR, e.to_string())
                .into_response()
        }
    }
}

/// A request's work runs to its end even when its client goes away.
/// Hyper drops a handler's future when the connection closes, and a herder
/// operation cut off midway (a task restart between stopping the running
/// instance and starting the new one) left work stopped for good; a
/// forwarding worker killed during a forwarded restart did that. As in
/// Kafka, whose request threads are not interrupted by a closed
/// connection, the work is done and only the answer is lost.
async fn run_to_the_end(request: axum::extract::Request, next: axum::middleware::Next) -> Response {
    let caller = request
        .headers()
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let work = client::CALLER_AUTHORIZATION.scope(caller, next.run(request));
    match tokio::spawn(work).await {
        Ok(response) => response,
        Err(e) => error::ApiError::new(
            axum::http::StatusCode::INTERNAL_SERVER_ERROR,
            format!("the request did not finish: {e}"),
        )
        .into_response(),
    }
}

/// Method, path and status of every request at DEBUG; never bodies or
/// query strings, which may hold secrets.
async fn log_request(request: axum::extract::Request, next: axum::middleware::Next) -> Response {
    let method = request.method().clone();
    let path = request.uri().path().to_string();
    let response = next.run(request).await;
    tracing::debug!(%method, %path, status = response.status().as_u16(), "REST request");
    response
}

async fn root(
    axum::extract::State(state): axum::extract::State<Shared>,
) -> Json<serde_json::Value> {
    Json(json!({
        "version": env!("CARGO_PKG_VERSION"),
        "commit": option_env!("CONNECT_GIT_COMMIT").unwrap_or("unknown"),
        "kafka_cluster_id": state.herder.kafka_cluster_id().await,
    }))
}

/// The status page: one static HTML file whose script reads this API
/// (`/connectors?expand=status&expand=info` and `/metrics`) every two
/// seconds; no build step and nothing served from elsewhere.
async fn ui() -> Response {
    (
        [(axum::http::header::CONTENT_TYPE, "text/html; charset=utf-8")],
        include_str!("ui.html"),
    )
        .into_response()
}

/// The metrics in Prometheus' text format, for a scraper.
async fn metrics(axum::extract::State(state): axum::extract::State<Shared>) -> Response {
    match state.herder.metrics() {
        Some(m) => (
            [(
                axum::http::header::CONTENT_TYPE,
                "text/plain; version=0.0.4; charset=utf-8",
            )],
            m.render(),
        )
            .into_response(),
        None => (
            StatusCode::NOT_FOUND,
            Json(json!({"error_code": 404, "message": "this herder keeps no metrics"})),
        )
            .into_response(),
    }
}

async fn health(axum::extract::State(state): axum::extract::State<Shared>) -> Response {
    if state.ready.load(Ordering::Acquire) {
        Json(json!({
            "status": "healthy",
            "message": "Worker has completed startup and is ready to handle requests."
        }))
        .into_response()
    } else {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(json!({
                "status": "starting",
                "message": "Worker is still starting up."
            })),
        )
            .into_response()
    }
}

async fn not_found(uri: axum::http::Uri) -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        format!("HTTP 404 Not Found: {}", uri.path()),
    )
}

async fn method_not_allowed(method: axum::http::Method, uri: axum::http::Uri) -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        format!("HTTP 405 Method Not Allowed: {method} {}", uri.path()),
    )
}

/// The REST server of a worker, running on the caller's tokio runtime:
/// one axum server per listener, all over the same herder.
pub struct RestServer {
    listeners: Vec<Bound>,
    admin: Vec<Bound>,
    state: Shared,
    shutdown: watch::Sender<bool>,
    handles: Vec<JoinHandle<()>>,
}

/// A listener once bound.
#[derive(Debug, Clone, Copy)]
struct Bound {
    scheme: Scheme,
    addr: SocketAddr,
}

impl Bound {
    fn url(&self) -> String {
        format!("{}://{}", self.scheme.as_str(), self.addr)
    }
}

impl std::fmt::Debug for RestServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RestServer")
            .field("listeners", &self.listeners)
            .field("admin", &self.admin)
            .finish()
    }
}

/// `admin.listeners`: where the `/admin` endpoints are served.
const ADMIN_LISTENERS: &str = "admin.listeners";

impl RestServer {
    /// Bind `listener` (`http://host:port` or `https://host:port`; an
    /// empty host means all interfaces, port 0 a free port) and serve.
    /// `/health` answers 503 until [`set_ready`](RestServer::set_ready).
    pub async fn start(
        herder: Arc<dyn Herder>,
        listener: &str,
        loggers: Loggers,
    ) -> Result<RestServer> {
        Self::start_all(herder, &[listener.to_string()], loggers).await
    }

    /// Bind every one of `listeners` (a worker's `listeners`) and serve
    /// the API on each, as [`start`](RestServer::start) does for one. The
    /// worker's `admin.listeners`, when set, moves the `/admin` endpoints
    /// to listeners of their own (none if it is empty), as in Kafka.
    /// https listeners take their stores from `listeners.https.ssl.*`
    /// (`admin.listeners.https.ssl.*`), or the worker's `ssl.*` keys.
    pub async fn start_all(
        herder: Arc<dyn Herder>,
        listeners: &[String],
        loggers: Loggers,
    ) -> Result<RestServer> {
        let config = herder.config().originals();
        let main: Vec<ListenerSpec> = listeners
            .iter()
            .filter(|l| !l.trim().is_empty())
            .map(|l| ListenerSpec::parse("listeners", l))
            .collect::<Result<_>>()?;
        if main.is_empty() {
            return Err(ConnectError::config(
                "listeners",
                "no REST listener given: set listeners=http://HOST:PORT",
            ));
        }
        let admin: Option<Vec<ListenerSpec>> = config
            .get(ADMIN_LISTENERS)
            .map(|list| {
                list.split(',')
                    .filter(|l| !l.trim().is_empty())
                    .map(|l| ListenerSpec::parse(ADMIN_LISTENERS, l))
                    .collect::<Result<_>>()
            })
            .transpose()?;
        let auth = BasicAuth::from_worker(config)?.map(Arc::new);
        let client = RestClient::from_worker(config)?;
        let main_tcp = bind_all(&main, HTTPS_PREFIX, config).await?;
        let admin_tcp = match &admin {
            Some(specs) => bind_all(specs, ADMIN_HTTPS_PREFIX, config).await?,
            None => Vec::new(),
        };
        herder.set_listener_address(main_tcp[0].0.addr);
        let state = Arc::new(AppState {
            herder,
            loggers,
            ready: AtomicBool::new(false),
            client,
        });
        let (shutdown, stopping) = watch::channel(false);
        let mut handles = Vec::new();
        let main_endpoints = match admin {
            None => Endpoints::All,
            Some(_) => Endpoints::WithoutAdmin,
        };
        let mut serve = |bound: Bound, tcp: Accepting, endpoints: Endpoints| {
            let app = routes(state.clone(), auth.clone(), endpoints);
            let mut stopping = stopping.clone();
            let stop = async move {
                let _ = stopping.wait_for(|stop| *stop).await;
            };
            handles.push(tokio::spawn(async move {
                let served = match tcp {
                    Accepting::Plain(tcp) => {
                        axum::serve(tcp, app).with_graceful_shutdown(stop).await
                    }
                    Accepting::Tls(tls) => axum::serve(tls, app).with_graceful_shutdown(stop).await,
                };
                if let Err(e) = served {
                    tracing::error!(error = %e, listener = %bound.url(), "REST server failed");
                }
            }));
            tracing::info!(
                "REST API{} listening on {}",
                if endpoints == Endpoints::AdminOnly {
                    " (admin)"
                } else {
                    ""
                },
                bound.url()
            );
            bound
        };
        let listeners = main_tcp
            .into_iter()
            .map(|(bound, tcp)| serve(bound, tcp, main_endpoints))
            .collect();
        let admin = admin_tcp
            .into_iter()
            .map(|(bound, tcp)| serve(bound, tcp, Endpoints::AdminOnly))
            .collect();
        Ok(RestServer {
            listeners,
            admin,
            state,
            shutdown,
            handles,
        })
    }

    /// The bound address of the first listener.
    pub fn local_addr(&self) -> SocketAddr {
        self.listeners[0].addr
    }

    /// `http://<bound address>` (or `https://`) of the first listener.
    pub fn url(&self) -> String {
        self.listeners[0].url()
    }

    /// The URLs of every listener serving the API, in the order of
    /// `listeners`.
    pub fn urls(&self) -> Vec<String> {
        self.listeners.iter().map(Bound::url).collect()
    }

    /// The URLs of the `admin.listeners` (empty when that is not set or
    /// empty).
    pub fn admin_urls(&self) -> Vec<String> {
        self.admin.iter().map(Bound::url).collect()
    }

    /// Startup is complete: `/health` answers 200.
    pub fn set_ready(&self) {
        self.state.ready.store(true, Ordering::Release);
    }

    /// Stop accepting requests and wait for in-flight ones.
    pub async fn stop(self) {
        let _ = self.shutdown.send(true);
        for handle in self.handles {
            let _ = handle.await;
        }
    }
}

/// A bound listener before it serves.
enum Accepting {
    Plain(tokio::net::TcpListener),
    Tls(TlsListener),
}

/// Binds `specs`; the https ones with the stores under `prefix`.
async fn bind_all(
    specs: &[ListenerSpec],
    prefix: &'static str,
    config: &connect_api::ConfigMap,
) -> Result<Vec<(Bound, Accepting)>> {
    let key = if prefix == HTTPS_PREFIX {
        "listeners"
    } else {
        ADMIN_LISTENERS
    };
    // One TLS context for all the https listeners, read once.
    let acceptor = specs
        .iter()
        .any(|s| s.scheme == Scheme::Https)
        .then(|| HttpsSettings::from_worker(config, prefix)?.acceptor())
        .transpose()?;
    let mut bound = Vec::with_capacity(specs.len());
    for spec in specs {
        let tcp = tokio::net::TcpListener::bind(&spec.addr)
            .await
            .map_err(|e| {
                ConnectError::config(
                    key,
                    format!(
                        "cannot listen on {}://{}: {e}; is another worker running? Choose another \
                     port with {key}={}://127.0.0.1:PORT",
                        spec.scheme.as_str(),
                        spec.addr,
                        spec.scheme.as_str()
                    ),
                )
            })?;
        let addr = tcp
            .local_addr()
            .map_err(|e| ConnectError::other(format!("listener address: {e}")))?;
        let accepting = match (spec.scheme, &acceptor) {
            (Scheme::Http, _) => Accepting::Plain(tcp),
            (Scheme::Https, Some(acceptor)) => Accepting::Tls(
                TlsListener::new(tcp, acceptor.clone())
                    .map_err(|e| ConnectError::other(format!("listener address: {e}")))?,
            ),
            // Not reached: the context is read whenever an https listener is given.
            (Scheme::Https, None) => {
                return Err(ConnectError::config(
                    key,
                    "no TLS settings for an https listener",
                ))
            }
        };
        bound.push((
            Bound {
                scheme: spec.scheme,
                addr,
            },
            accepting,
        ));
    }
    Ok(bound)
}
