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
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

pub use basic_auth::{BasicAuth, BASIC_AUTH_EXTENSION, EXTENSIONS_KEY, JAAS_KEY};
pub use error::ApiError;
pub use loggers::{LevelSetter, Loggers};

use crate::herder::Herder;

/// What every handler sees.
struct AppState {
    herder: Arc<dyn Herder>,
    loggers: Loggers,
    ready: AtomicBool,
}

type Shared = Arc<AppState>;

/// The routes of the API over `herder` (a
/// [`StandaloneHerder`](crate::herder::StandaloneHerder) for standalone
/// mode), for embedding in another axum app (already ready: `/health`
/// answers 200), with the authentication the worker's config asks for
/// ([`BasicAuth::from_worker`]); when that cannot be set up, every request
/// is refused with a 500 naming why, never served without it.
pub fn router(herder: Arc<dyn Herder>, loggers: Loggers) -> Router {
    let auth = BasicAuth::from_worker(herder.config().originals());
    let state = Arc::new(AppState {
        herder,
        loggers,
        ready: AtomicBool::new(true),
    });
    match auth {
        Ok(auth) => routes(state, auth.map(Arc::new)),
        Err(e) => {
            let why = e.to_string();
            Router::new().fallback(move || {
                let why = why.clone();
                async move { ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, why).into_response() }
            })
        }
    }
}

fn routes(state: Shared, auth: Option<Arc<BasicAuth>>) -> Router {
    let api = Router::new()
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
        .route(
            "/connectors/{name}/offsets",
            get(connectors::offsets)
                .patch(connectors::alter_offsets)
                .delete(connectors::reset_offsets),
        )
        .route("/admin/loggers", get(loggers::list))
        .route(
            "/admin/loggers/{logger}",
            get(loggers::get_one).put(loggers::set),
        )
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

/// The REST server of a worker, running on the caller's tokio runtime.
pub struct RestServer {
    addr: SocketAddr,
    state: Shared,
    shutdown: oneshot::Sender<()>,
    handle: JoinHandle<()>,
}

impl std::fmt::Debug for RestServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RestServer")
            .field("addr", &self.addr)
            .finish()
    }
}

impl RestServer {
    /// Bind `listener` (`http://host:port`; an empty host means all
    /// interfaces, port 0 a free port) and serve. `/health` answers 503
    /// until [`set_ready`](RestServer::set_ready).
    pub async fn start(
        herder: Arc<dyn Herder>,
        listener: &str,
        loggers: Loggers,
    ) -> Result<RestServer> {
        let addr = parse_listener(listener)?;
        let tcp = tokio::net::TcpListener::bind(&addr).await.map_err(|e| {
            ConnectError::config(
                "listeners",
                format!("cannot listen on {listener} ({addr}): {e}; is another worker running? Choose another port with listeners=http://127.0.0.1:PORT"),
            )
        })?;
        let addr = tcp
            .local_addr()
            .map_err(|e| ConnectError::other(format!("listener address: {e}")))?;
        herder.set_listener_address(addr);
        let auth = BasicAuth::from_worker(herder.config().originals())?.map(Arc::new);
        let state = Arc::new(AppState {
            herder,
            loggers,
            ready: AtomicBool::new(false),
        });
        let app = routes(state.clone(), auth);
        let (tx, rx) = oneshot::channel::<()>();
        let handle = tokio::spawn(async move {
            let served = axum::serve(tcp, app)
                .with_graceful_shutdown(async {
                    let _ = rx.await;
                })
                .await;
            if let Err(e) = served {
                tracing::error!(error = %e, "REST server failed");
            }
        });
        tracing::info!("REST API listening on http://{addr}");
        Ok(RestServer {
            addr,
            state,
            shutdown: tx,
            handle,
        })
    }

    /// The bound address.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://<bound address>`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Startup is complete: `/health` answers 200.
    pub fn set_ready(&self) {
        self.state.ready.store(true, Ordering::Release);
    }

    /// Stop accepting requests and wait for in-flight ones.
    pub async fn stop(self) {
        let _ = self.shutdown.send(());
        let _ = self.handle.await;
    }
}

/// `http://host:port` as a socket address; `https` is not supported.
fn parse_listener(listener: &str) -> Result<String> {
    let bad = |why: &str| {
        ConnectError::config(
            "listeners",
            format!("invalid listener '{listener}': {why} (expected http://HOST:PORT, e.g. http://127.0.0.1:8083)"),
        )
    };
    let rest = listener
        .trim()
        .strip_prefix("http://")
        .ok_or_else(|| bad("only http:// listeners are supported"))?;
    let rest = rest.trim_end_matches('/');
    let (host, port) = rest.rsplit_once(':').ok_or_else(|| bad("missing port"))?;
    let port: u16 = port
        .parse()
        .map_err(|_| bad("the port is not a number 0-65535"))?;
    let host = match host {
        "" => "0.0.0.0",
        h => h,
    };
    Ok(format!("{host}:{port}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listeners() {
        assert_eq!(
            parse_listener("http://127.0.0.1:8083").unwrap(),
            "127.0.0.1:8083"
        );
        assert_eq!(parse_listener("http://:8083").unwrap(), "0.0.0.0:8083");
        assert_eq!(parse_listener("http://[::1]:0/").unwrap(), "[::1]:0");
        assert!(parse_listener("https://x:1").is_err());
        assert!(parse_listener("http://x").is_err());
        assert!(parse_listener("http://x:99999").is_err());
    }
}
