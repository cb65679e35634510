//! `/connectors/...` handlers.

use axum::extract::{Path, RawQuery, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use bytes::Bytes;
use connect_api::config::ConfigMap;
use serde::de::DeserializeOwned;
use serde_json::{json, Map, Value};

use super::{ApiError, Shared};
use crate::herder::InternalRefusal;
use crate::status::TargetState;
use crate::worker::offset_admin::OffsetChange;
use crate::worker::providers;

type ApiResult<T> = Result<T, ApiError>;

/// Parse a JSON body; a malformed one is a 400 saying where.
pub(super) fn parse_json<T: DeserializeOwned>(body: &[u8]) -> ApiResult<T> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::bad_request(
            "Request body is empty: a JSON document is required",
        ));
    }
    serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("Malformed JSON request body: {e}")))
}

/// Query pairs in order (keys may repeat: `expand=status&expand=info`).
fn query_pairs(query: &Option<String>) -> Vec<(String, String)> {
    query
        .as_deref()
        .unwrap_or("")
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (decode(k), decode(v))
        })
        .collect()
}

/// Percent-decoding of a query component (`+` is a space).
fn decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = |b: u8| (b as char).to_digit(16);
                match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                    (Some(h), Some(l)) => {
                        out.push((h * 16 + l) as u8);
                        i += 2;
                    }
                    _ => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A boolean query parameter (`true`/`false`, case-insensitive).
pub(super) fn query_bool(query: &Option<String>, key: &str, default: bool) -> ApiResult<bool> {
    match query_pairs(query).into_iter().rev().find(|(k, _)| k == key) {
        None => Ok(default),
        Some((_, v)) => match v.to_ascii_lowercase().as_str() {
            "true" => Ok(true),
            "false" => Ok(false),
            _ => Err(ApiError::bad_request(format!(
                "Query parameter {key} must be true or false, got '{v}'"
            ))),
        },
    }
}

/// A flat JSON object of config values as strings. Numbers and booleans are
/// accepted as their text (as Kafka's JSON binding does); `null`, objects and
/// arrays are rejected, naming the key.
fn config_map(value: &Map<String, Value>, what: &str) -> ApiResult<ConfigMap> {
    value
        .iter()
        .map(|(k, v)| {
            let s = match v {
                Value::String(s) => s.clone(),
                Value::Number(n) => n.to_string(),
                Value::Bool(b) => b.to_string(),
                other => {
                    return Err(ApiError::bad_request(format!(
                        "{what}: the value of '{k}' must be a string, got {}",
                        kind_of(other)
                    )))
                }
            };
            Ok((k.clone(), s))
        })
        .collect()
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn object<'a>(v: &'a Value, what: &str) -> ApiResult<&'a Map<String, Value>> {
    v.as_object().ok_or_else(|| {
        ApiError::bad_request(format!("{what} must be a JSON object, got {}", kind_of(v)))
    })
}

/// Kafka's rule: a `name` inside the config must match the connector's name.
fn check_name(name: &str, config: &mut ConfigMap) -> ApiResult<()> {
    if let Some(n) = config.get("name") {
        if n != name {
            return Err(ApiError::bad_request(format!(
                "Connector name configuration ({n}) doesn't match connector name in the URL ({name})"
            )));
        }
    }
    config.insert("name".into(), name.to_string());
    Ok(())
}

fn check_new_name(name: &str) -> ApiResult<()> {
    if name.trim().is_empty() {
        return Err(ApiError::bad_request("Connector name may not be empty"));
    }
    if name.contains('/') {
        return Err(ApiError::bad_request(format!(
            "Connector name '{name}' may not contain '/'"
        )));
    }
    if name.chars().any(char::is_control) {
        return Err(ApiError::bad_request(
            "Connector name may not contain control characters",
        ));
    }
    Ok(())
}

pub(super) async fn list(
    State(state): State<Shared>,
    RawQuery(query): RawQuery,
) -> ApiResult<Json<Value>> {
    let mut status = false;
    let mut info = false;
    for (k, v) in query_pairs(&query) {
        if k == "expand" {
            match v.as_str() {
                "status" => status = true,
                "info" => info = true,
                other => {
                    return Err(ApiError::bad_request(format!(
                        "Unknown expand value '{other}': use status or info"
                    )))
                }
            }
        }
    }
    let w = &state.herder;
    let names = w.connector_names().await;
    if !status && !info {
        return Ok(Json(json!(names)));
    }
    let mut out = Map::new();
    for name in names {
        let mut entry = Map::new();
        // A connector deleted meanwhile is skipped, as Kafka does.
        if status {
            match w.connector_status(&name).await {
                Ok(s) => entry.insert("status".into(), json!(s)),
                Err(_) => continue,
            };
        }
        if info {
            match w.connector_info(&name).await {
                Ok(i) => entry.insert("info".into(), json!(i)),
                Err(_) => continue,
            };
        }
        out.insert(name, Value::Object(entry));
    }
    Ok(Json(Value::Object(out)))
}

pub(super) async fn create(State(state): State<Shared>, body: Bytes) -> ApiResult<Response> {
    let body: Value = parse_json(&body)?;
    let body = object(&body, "The request body")?;
    let name = match body.get("name") {
        Some(Value::String(n)) => n.trim().to_string(),
        None | Some(Value::Null) => {
            return Err(ApiError::bad_request(
                "Connector name is required: the request body must be {\"name\": \"...\", \"config\": {...}}",
            ))
        }
        Some(other) => {
            return Err(ApiError::bad_request(format!("Connector name must be a string, got {}", kind_of(other))))
        }
    };
    check_new_name(&name)?;
    let config = match body.get("config") {
        Some(Value::Object(c)) => config_map(c, "Connector config")?,
        None | Some(Value::Null) => {
            return Err(ApiError::bad_request(format!(
                "Connector config is required: give \"config\": {{\"connector.class\": ...}} for connector {name}"
            )))
        }
        Some(other) => {
            return Err(ApiError::bad_request(format!("Connector config must be a JSON object, got {}", kind_of(other))))
        }
    };
    let mut config = config;
    check_name(&name, &mut config)?;
    let initial = match body.get("initial_state") {
        None | Some(Value::Null) => TargetState::Started,
        Some(Value::String(s)) => match s.to_ascii_uppercase().as_str() {
            "RUNNING" => TargetState::Started,
            "PAUSED" => TargetState::Paused,
            "STOPPED" => TargetState::Stopped,
            _ => {
                return Err(ApiError::bad_request(format!(
                    "Invalid initial_state '{s}': use RUNNING, PAUSED or STOPPED"
                )))
            }
        },
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "initial_state must be a string, got {}",
                kind_of(other)
            )))
        }
    };
    let info = state
        .herder
        .create_connector(&name, config, initial)
        .await?;
    Ok((
        StatusCode::CREATED,
        [(header::LOCATION, format!("/connectors/{name}"))],
        Json(info),
    )
        .into_response())
}

pub(super) async fn info(
    State(state): State<Shared>,
    Path(name): Path<String>,
) -> ApiResult<Response> {
    Ok(Json(state.herder.connector_info(&name).await?).into_response())
}

pub(super) async fn delete(
    State(state): State<Shared>,
    Path(name): Path<String>,
) -> ApiResult<StatusCode> {
    state.herder.delete_connector(&name).await?;
    Ok(StatusCode::NO_CONTENT)
}

pub(super) async fn config(
    State(state): State<Shared>,
    Path(name): Path<String>,
) -> ApiResult<Json<ConfigMap>> {
    Ok(Json(state.herder.connector_info(&name).await?.config))
}

pub(super) async fn put_config(
    State(state): State<Shared>,
    Path(name): Path<String>,
    body: Bytes,
) -> ApiResult<Response> {
    let body: Value = parse_json(&body)?;
    let mut config = config_map(object(&body, "The connector config")?, "Connector config")?;
    check_new_name(&name)?;
    check_name(&name, &mut config)?;
    let (info, created) = state.herder.put_connector_config(&name, config).await?;
    let status = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok(if created {
        (
            status,
            [(header::LOCATION, format!("/connectors/{name}"))],
            Json(info),
        )
            .into_response()
    } else {
        (status, Json(info)).into_response()
    })
}

pub(super) async fn patch_config(
    State(state): State<Shared>,
    Path(name): Path<String>,
    body: Bytes,
) -> ApiResult<Response> {
    let body: Value = parse_json(&body)?;
    let patch = object(&body, "The config patch")?;
    let mut config = state.herder.connector_info(&name).await?.config;
    for (k, v) in patch {
        match v {
            Value::Null => {
                config.remove(k);
            }
            Value::String(s) => {
                config.insert(k.clone(), s.clone());
            }
            Value::Number(_) | Value::Bool(_) => {
                config.insert(k.clone(), v.to_string());
            }
            other => {
                return Err(ApiError::bad_request(format!(
                    "Config patch: the value of '{k}' must be a string or null, got {}",
                    kind_of(other)
                )))
            }
        }
    }
    check_name(&name, &mut config)?;
    let (info, _) = state.herder.put_connector_config(&name, config).await?;
    Ok(Json(info).into_response())
}

pub(super) async fn status(
    State(state): State<Shared>,
    Path(name): Path<String>,
) -> ApiResult<Response> {
    Ok(Json(state.herder.connector_status(&name).await?).into_response())
}

/// Task configs with config provider values put back as their references
/// (as Kafka does), so `GET .../tasks` shows no resolved secret.
/// `POST /connectors/{name}/tasks`: the internal request that hands a
/// connector's new task configs to the leader (distributed mode only).
pub(super) async fn put_task_configs(
    State(state): State<Shared>,
    Path(name): Path<String>,
    RawQuery(query): RawQuery,
    headers: axum::http::HeaderMap,
    body: Bytes,
) -> ApiResult<StatusCode> {
    let signature = signature(&headers);
    let forward = forward_param(&query);
    internal_answer(
        state
            .herder
            .accept_task_configs(&name, &body, signature, forward)
            .await,
    )
}

/// `PUT /connectors/{name}/fence`: the internal request that has the
/// leader fence the zombies of an exactly-once source connector's
/// earlier tasks (distributed mode only).
pub(super) async fn fence(
    State(state): State<Shared>,
    Path(name): Path<String>,
    RawQuery(query): RawQuery,
    headers: axum::http::HeaderMap,
    body: Bytes,
) -> ApiResult<StatusCode> {
    let signature = signature(&headers);
    let forward = forward_param(&query);
    internal_answer(
        state
            .herder
            .fence_zombies(&name, &body, signature, forward)
            .await,
    )
}

/// Kafka's `forward` query parameter: `Some(false)` on a request another
/// worker sent on already, `None` when absent. Read as Java reads a
/// `Boolean` query parameter: anything but `true` (any case) is false.
fn forward_param(query: &Option<String>) -> Option<bool> {
    query_pairs(query)
        .into_iter()
        .rev()
        .find(|(k, _)| k == "forward")
        .map(|(_, v)| v.eq_ignore_ascii_case("true"))
}

/// The KIP-507 signature headers of an internal request, when both are
/// there.
fn signature(headers: &axum::http::HeaderMap) -> Option<(&str, &str)> {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    match (
        header("X-Connect-Request-Signature-Algorithm"),
        header("X-Connect-Authorization"),
    ) {
        (Some(algorithm), Some(signature)) => Some((algorithm, signature)),
        _ => None,
    }
}

/// 204, or the herder's refusal with its status.
fn internal_answer(answer: Result<(), InternalRefusal>) -> ApiResult<StatusCode> {
    match answer {
        Ok(()) => Ok(StatusCode::NO_CONTENT),
        Err(refusal) => Err(ApiError::new(
            StatusCode::from_u16(refusal.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
            refusal.message,
        )),
    }
}

pub(super) async fn tasks(
    State(state): State<Shared>,
    Path(name): Path<String>,
) -> ApiResult<Json<Value>> {
    let w = &state.herder;
    let raw = w.connector_info(&name).await?.config;
    let configs = w.task_configs(&name).await?;
    let providers = providers::Providers::from_worker(w.config().originals());
    let resolved = providers::resolve(&raw, &providers).unwrap_or_else(|_| raw.clone());
    let tasks: Vec<Value> = configs
        .into_iter()
        .enumerate()
        .map(|(t, mut config)| {
            for (k, v) in config.iter_mut() {
                if let (Some(r), Some(orig)) = (resolved.get(k), raw.get(k)) {
                    if r == v && r != orig {
                        *v = orig.clone();
                    }
                }
            }
            json!({"id": {"connector": name, "task": t}, "config": config})
        })
        .collect();
    Ok(Json(Value::Array(tasks)))
}

fn task_number(name: &str, task: &str) -> ApiResult<u32> {
    task.parse().map_err(|_| {
        ApiError::not_found(format!(
            "Task {name}-{task} not found: task ids are numbers (0, 1, ...)"
        ))
    })
}

pub(super) async fn task_status(
    State(state): State<Shared>,
    Path((name, task)): Path<(String, String)>,
) -> ApiResult<Response> {
    let t = task_number(&name, &task)?;
    Ok(Json(state.herder.task_status(&name, t).await?).into_response())
}

pub(super) async fn restart_task(
    State(state): State<Shared>,
    Path((name, task)): Path<(String, String)>,
    RawQuery(query): RawQuery,
) -> ApiResult<StatusCode> {
    let t = task_number(&name, &task)?;
    // Sent on by another worker (Kafka's `forward=false`): here or not at all.
    if forward_param(&query) == Some(false) {
        state.herder.restart_task_here(&name, t).await?;
    } else {
        state.herder.restart_task(&name, t).await?;
    }
    Ok(StatusCode::NO_CONTENT)
}

/// KIP-745: 204 when only the connector restarts, else 202 with the restart
/// plan (what restarts shows RESTARTING).
/// `GET /connectors/{name}/topics` (KIP-558): `{"<name>": {"topics": [...]}}`.
pub(super) async fn topics(
    State(state): State<Shared>,
    Path(name): Path<String>,
) -> ApiResult<Json<Value>> {
    let topics = state.herder.connector_topics(&name).await?;
    Ok(Json(json!({ name: { "topics": topics } })))
}

/// `PUT /connectors/{name}/topics/reset` (KIP-558): 202, no body.
pub(super) async fn reset_topics(
    State(state): State<Shared>,
    Path(name): Path<String>,
) -> ApiResult<StatusCode> {
    state.herder.reset_connector_topics(&name).await?;
    Ok(StatusCode::ACCEPTED)
}

pub(super) async fn restart(
    State(state): State<Shared>,
    Path(name): Path<String>,
    RawQuery(query): RawQuery,
) -> ApiResult<Response> {
    let include_tasks = query_bool(&query, "includeTasks", false)?;
    let only_failed = query_bool(&query, "onlyFailed", false)?;
    let w = &state.herder;
    if !include_tasks && !only_failed {
        w.restart_connector(&name, false, false).await?;
        return Ok(StatusCode::NO_CONTENT.into_response());
    }
    // The restart plan, as Kafka's: what restarts shows RESTARTING and
    // keeps the trace of the failure it restarts.
    let mut plan = w.connector_status(&name).await?;
    let failed = |s: &str| s == "FAILED";
    if !only_failed || failed(&plan.connector.state) {
        plan.connector.state = "RESTARTING".into();
    }
    if include_tasks {
        for t in &mut plan.tasks {
            if !only_failed || failed(&t.state.state) {
                t.state.state = "RESTARTING".into();
            }
        }
    }
    w.restart_connector(&name, include_tasks, only_failed)
        .await?;
    Ok((StatusCode::ACCEPTED, Json(plan)).into_response())
}

pub(super) async fn pause(
    State(state): State<Shared>,
    Path(name): Path<String>,
) -> ApiResult<StatusCode> {
    state.herder.pause(&name).await?;
    Ok(StatusCode::ACCEPTED)
}

pub(super) async fn resume(
    State(state): State<Shared>,
    Path(name): Path<String>,
) -> ApiResult<StatusCode> {
    state.herder.resume(&name).await?;
    Ok(StatusCode::ACCEPTED)
}

pub(super) async fn stop(
    State(state): State<Shared>,
    Path(name): Path<String>,
) -> ApiResult<StatusCode> {
    state.herder.stop(&name).await?;
    Ok(StatusCode::NO_CONTENT)
}

pub(super) async fn offsets(
    State(state): State<Shared>,
    Path(name): Path<String>,
) -> ApiResult<Response> {
    Ok(Json(state.herder.connector_offsets(&name).await?).into_response())
}

pub(super) async fn alter_offsets(
    State(state): State<Shared>,
    Path(name): Path<String>,
    body: Bytes,
) -> ApiResult<Json<Value>> {
    let body: Value = parse_json(&body)?;
    let list = match object(&body, "The request body")?.get("offsets") {
        Some(Value::Array(list)) => list,
        _ => {
            return Err(ApiError::bad_request(
                "Offsets must be specified: the request body must be {\"offsets\": [{\"partition\": {...}, \"offset\": {...} or null}]}",
            ))
        }
    };
    let mut changes: Vec<OffsetChange> = Vec::with_capacity(list.len());
    for (i, item) in list.iter().enumerate() {
        let item = object(item, &format!("offsets[{i}]"))?;
        let partition = match item.get("partition") {
            Some(Value::Object(p)) => p.clone(),
            _ => {
                return Err(ApiError::bad_request(format!(
                    "offsets[{i}]: the partition must be a JSON object and may not be null"
                )))
            }
        };
        let offset = match item.get("offset") {
            None | Some(Value::Null) => None,
            Some(Value::Object(o)) => Some(o.clone()),
            Some(other) => {
                return Err(ApiError::bad_request(format!(
                    "offsets[{i}]: the offset must be a JSON object or null, got {}",
                    kind_of(other)
                )))
            }
        };
        changes.push((partition, offset));
    }
    let message = state.herder.alter_connector_offsets(&name, changes).await?;
    Ok(Json(json!({ "message": message })))
}

pub(super) async fn reset_offsets(
    State(state): State<Shared>,
    Path(name): Path<String>,
) -> ApiResult<Json<Value>> {
    let message = state.herder.reset_connector_offsets(&name).await?;
    Ok(Json(json!({ "message": message })))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_forward_parameter_is_absent_true_or_false() {
        assert_eq!(forward_param(&None), None);
        assert_eq!(forward_param(&Some("x=1".into())), None);
        assert_eq!(forward_param(&Some("forward=false".into())), Some(false));
        assert_eq!(forward_param(&Some("forward=TRUE".into())), Some(true));
        assert_eq!(forward_param(&Some("forward=maybe".into())), Some(false));
    }

    #[test]
    fn query_decoding() {
        let q = Some("expand=status&expand=info&x=a%20b+c&bad=%zz&tail=%4".to_string());
        let pairs = query_pairs(&q);
        assert_eq!(pairs[0], ("expand".into(), "status".into()));
        assert_eq!(pairs[2], ("x".into(), "a b c".into()));
        assert_eq!(pairs[3], ("bad".into(), "%zz".into()));
        assert_eq!(pairs[4], ("tail".into(), "%4".into()));
        assert!(query_bool(&Some("onlyFailed=TRUE".into()), "onlyFailed", false).unwrap());
        assert!(query_bool(&Some("onlyFailed=yes".into()), "onlyFailed", false).is_err());
    }
}
