//! Forwarding leader-only writes to the group leader, as Kafka's REST
//! layer does in distributed mode.
//!
//! A write only the leader may make (create or reconfigure a connector,
//! delete, stop, restart, change offsets) that reaches another worker is
//! sent on to the leader's URL and the leader's answer is returned as is.
//! Kafka's `forward` query parameter bounds the hops: a request from a
//! user (no parameter) is forwarded with `forward=true`, which may be
//! forwarded once more (the leader changed meanwhile) with
//! `forward=false`, which is not forwarded again: 409, as while no leader
//! is known.
//!
//! Unlike a refusal at once, a user's request that arrives while no leader
//! is known (a rebalance under way, a worker that has not joined yet)
//! waits up to [`REBALANCE_WAIT`] for one; and when the leader it was
//! forwarded to does not answer or answers that it cannot place it (the
//! leader just changed), it is sent again to the new leader within the
//! same wait. Only then does it get the 409 (or the last answer).

use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use tokio::time::Instant;

use super::client::HttpReply;
use super::{ApiError, Shared};
use crate::herder::{Herder, RequestOwner, REBALANCE_WAIT};

/// Kafka's answer when a write cannot be placed now.
const CONFLICT: &str =
    "Cannot complete request because of a conflicting operation (e.g. worker rebalance)";

/// How long a forwarded request may take: Kafka's REST request timeout.
const FORWARD_TIMEOUT: Duration = Duration::from_secs(90);

/// The largest request body forwarded (connector configs are small).
const MAX_BODY: usize = 16 * 1024 * 1024;

/// Whether `method path` is a write only the leader makes.
fn leader_only(method: &Method, path: &str) -> bool {
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    matches!(
        (method, segments.as_slice()),
        (&Method::POST, ["connectors"])
            | (&Method::PUT | &Method::PATCH, ["connectors", _, "config"])
            | (&Method::DELETE, ["connectors", _])
            | (&Method::PUT, ["connectors", _, "stop"])
            | (&Method::POST, ["connectors", _, "restart"])
            | (
                &Method::PATCH | &Method::DELETE,
                ["connectors", _, "offsets"]
            )
    )
}

/// The `forward` query parameter: `None` when absent.
fn forward_flag(query: &str) -> Option<bool> {
    query.split('&').find_map(|kv| match kv.split_once('=') {
        Some(("forward", v)) => Some(!v.eq_ignore_ascii_case("false")),
        _ => None,
    })
}

/// The query without `forward`, plus `forward=<next>`.
fn next_query(query: &str, next: bool) -> String {
    let mut parts: Vec<&str> = query
        .split('&')
        .filter(|kv| !kv.is_empty() && !kv.starts_with("forward="))
        .collect();
    let flag = format!("forward={next}");
    parts.push(&flag);
    parts.join("&")
}

/// Where a leader-only write goes, waiting until `deadline` while no
/// leader is known or the leader is still `tried` (the one that just did
/// not take the request).
async fn owner_by(herder: &dyn Herder, deadline: Instant, tried: Option<&str>) -> RequestOwner {
    loop {
        let owner = herder.leader_writes();
        let settled = match &owner {
            RequestOwner::Here => true,
            RequestOwner::Leader(url) => tried != Some(url.as_str()),
            RequestOwner::Unknown => false,
        };
        if settled || Instant::now() >= deadline {
            return owner;
        }
        tokio::time::sleep(LOOK_AGAIN).await;
    }
}

/// How often a waiting request looks for a leader again.
const LOOK_AGAIN: Duration = Duration::from_millis(100);

fn conflict() -> Response {
    ApiError::new(StatusCode::CONFLICT, CONFLICT).into_response()
}

/// Whether the leader's answer means it could not place the request now
/// (it stopped leading meanwhile, or a rebalance is under way): worth
/// sending again once the leader has changed.
fn not_placed(reply: &HttpReply) -> bool {
    reply.status == StatusCode::CONFLICT.as_u16()
        && String::from_utf8_lossy(&reply.body).contains(CONFLICT)
}

/// The middleware: handle here, forward to the leader, or answer 409.
pub(super) async fn to_leader(
    State(state): State<Shared>,
    request: Request,
    next: Next,
) -> Response {
    if !leader_only(request.method(), request.uri().path()) {
        return next.run(request).await;
    }
    let query = request.uri().query().unwrap_or("").to_string();
    let flag = forward_flag(&query);
    let herder = state.herder.as_ref();
    if flag == Some(false) {
        // Forwarded twice already: taken here or refused at once (the
        // worker the user asked waits and sends it again).
        return match herder.leader_writes() {
            RequestOwner::Here => next.run(request).await,
            _ => conflict(),
        };
    }
    let deadline = Instant::now() + REBALANCE_WAIT;
    let mut leader = match owner_by(herder, deadline, None).await {
        RequestOwner::Here => return next.run(request).await,
        RequestOwner::Leader(url) => url,
        RequestOwner::Unknown => return conflict(),
    };
    let (parts, body) = request.into_parts();
    let body = match axum::body::to_bytes(body, MAX_BODY).await {
        Ok(b) => b,
        Err(e) => {
            return ApiError::bad_request(format!("cannot read the request body: {e}"))
                .into_response()
        }
    };
    let method = parts.method.to_string();
    // The user's request may hop twice; a forwarded one once more.
    let query = next_query(&query, flag.is_none());
    loop {
        let url = format!(
            "{}{}?{query}",
            leader.trim_end_matches('/'),
            parts.uri.path()
        );
        tracing::debug!(%method, %url, "forwarding a leader-only request to the leader");
        let sent = state
            .client
            .send(&method, &url, body.to_vec(), &[], FORWARD_TIMEOUT)
            .await;
        let placed = sent.as_ref().is_ok_and(|reply| !not_placed(reply));
        if !placed && Instant::now() < deadline {
            // The leader went away or stopped leading: the next one, if
            // the group names it in time.
            match owner_by(herder, deadline, Some(&leader)).await {
                RequestOwner::Here => {
                    return next.run(Request::from_parts(parts, Body::from(body))).await
                }
                RequestOwner::Leader(url) if url != leader => {
                    tracing::info!(old = %leader, new = %url, "the leader changed; sending the request to the new one");
                    leader = url;
                    continue;
                }
                _ => {}
            }
        }
        return match sent {
            Ok(reply) => relay(reply),
            Err(e) => ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("the leader at {leader} did not answer the forwarded request: {e}"),
            )
            .into_response(),
        };
    }
}

/// The leader's answer, as the user's.
fn relay(reply: HttpReply) -> Response {
    let status = StatusCode::from_u16(reply.status).unwrap_or(StatusCode::BAD_GATEWAY);
    let mut response = Response::builder().status(status);
    if let Some(ct) = reply.content_type {
        response = response.header(header::CONTENT_TYPE, ct);
    }
    if let Some(location) = reply.location {
        response = response.header(header::LOCATION, location);
    }
    response
        .body(Body::from(reply.body))
        .unwrap_or_else(|_| StatusCode::BAD_GATEWAY.into_response())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leader_only_writes_are_kafkas() {
        let yes = [
            (Method::POST, "/connectors"),
            (Method::PUT, "/connectors/a/config"),
            (Method::PATCH, "/connectors/a/config"),
            (Method::DELETE, "/connectors/a"),
            (Method::PUT, "/connectors/a/stop"),
            (Method::POST, "/connectors/a/restart"),
            (Method::PATCH, "/connectors/a/offsets"),
            (Method::DELETE, "/connectors/a/offsets"),
        ];
        for (m, p) in yes {
            assert!(leader_only(&m, p), "{m} {p}");
        }
        let no = [
            (Method::GET, "/connectors"),
            (Method::GET, "/connectors/a/config"),
            (Method::PUT, "/connectors/a/pause"),
            (Method::PUT, "/connectors/a/resume"),
            (Method::POST, "/connectors/a/tasks/0/restart"),
            (Method::POST, "/connectors/a/tasks"),
            (Method::GET, "/connectors/a/offsets"),
        ];
        for (m, p) in no {
            assert!(!leader_only(&m, p), "{m} {p}");
        }
    }

    #[test]
    fn the_forward_flag_bounds_the_hops() {
        assert_eq!(forward_flag(""), None);
        assert_eq!(forward_flag("includeTasks=true&forward=true"), Some(true));
        assert_eq!(forward_flag("forward=false"), Some(false));
        assert_eq!(
            next_query("includeTasks=true&forward=true", false),
            "includeTasks=true&forward=false"
        );
        assert_eq!(next_query("", true), "forward=true");
    }
}
