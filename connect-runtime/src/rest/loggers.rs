//! `GET /admin/loggers`, `PUT /admin/loggers/{logger}`: log levels per
//! logger (a tracing target such as `connect_runtime::worker`, or `root`).
//!
//! Levels are kept here and, when the binary gives a [`LevelSetter`] (a
//! `tracing_subscriber` reload handle, as `connect-standalone` does), applied
//! to the live subscriber as one filter (`info,connect_runtime::worker=debug`).
//! Without a setter the levels are only recorded.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use axum::extract::{Path, State};
use axum::Json;
use bytes::Bytes;
use serde_json::{json, Value};

use super::{ApiError, Shared};

/// Applies a tracing filter directive (`info,my_crate=debug`) to the live
/// subscriber; an error is reported as a 400.
pub type LevelSetter = Arc<dyn Fn(&str) -> Result<(), String> + Send + Sync>;

const ROOT: &str = "root";

/// Logger name to (level, last modified in epoch ms; `None` if never set).
type Levels = BTreeMap<String, (String, Option<i64>)>;

/// Logger levels, shared by the REST handlers.
#[derive(Clone)]
pub struct Loggers {
    levels: Arc<Mutex<Levels>>,
    setter: Option<LevelSetter>,
}

impl std::fmt::Debug for Loggers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Loggers").finish_non_exhaustive()
    }
}

impl Loggers {
    /// Levels recorded but not applied; `root` starts at `root_level`.
    pub fn in_memory(root_level: &str) -> Self {
        let mut levels = BTreeMap::new();
        levels.insert(ROOT.to_string(), (root_level.to_ascii_uppercase(), None));
        Loggers {
            levels: Arc::new(Mutex::new(levels)),
            setter: None,
        }
    }

    /// Levels applied through `setter` on every change.
    pub fn with_setter(root_level: &str, setter: LevelSetter) -> Self {
        Loggers {
            setter: Some(setter),
            ..Self::in_memory(root_level)
        }
    }

    fn snapshot(&self) -> Levels {
        self.levels.lock().map(|l| l.clone()).unwrap_or_default()
    }

    /// Set `logger` to `level` (log4j names: OFF, FATAL, ERROR, WARN, INFO,
    /// DEBUG, TRACE); returns the loggers changed.
    pub fn set(&self, logger: &str, level: &str) -> Result<Vec<String>, String> {
        let level = level.trim().to_ascii_uppercase();
        if directive_level(&level).is_none() {
            return Err(format!(
                "Invalid log level '{level}': use one of OFF, FATAL, ERROR, WARN, INFO, DEBUG, TRACE"
            ));
        }
        let logger = logger.trim();
        if logger.is_empty() || logger.contains([',', '=', ' ']) {
            return Err(format!("Invalid logger name '{logger}'"));
        }
        let now = crate::kafka::time::now_ms();
        let mut next = self.snapshot();
        next.insert(logger.to_string(), (level, Some(now)));
        if let Some(setter) = &self.setter {
            setter(&directive(&next))?;
        }
        if let Ok(mut l) = self.levels.lock() {
            *l = next;
        }
        Ok(vec![logger.to_string()])
    }
}

fn directive_level(level: &str) -> Option<&'static str> {
    Some(match level {
        "OFF" => "off",
        "FATAL" | "ERROR" => "error",
        "WARN" => "warn",
        "INFO" => "info",
        "DEBUG" => "debug",
        "TRACE" => "trace",
        _ => return None,
    })
}

/// The tracing filter for `levels`: the root level first, then one
/// `target=level` per logger.
fn directive(levels: &Levels) -> String {
    let mut parts = Vec::new();
    if let Some(l) = levels.get(ROOT).and_then(|(l, _)| directive_level(l)) {
        parts.push(l.to_string());
    }
    for (name, (level, _)) in levels {
        if name != ROOT {
            if let Some(l) = directive_level(level) {
                parts.push(format!("{name}={l}"));
            }
        }
    }
    parts.join(",")
}

fn render(level: &str, modified: Option<i64>) -> Value {
    json!({"level": level, "last_modified": modified})
}

pub(super) async fn list(State(state): State<Shared>) -> Json<Value> {
    Json(Value::Object(
        state
            .loggers
            .snapshot()
            .into_iter()
            .map(|(name, (level, m))| (name, render(&level, m)))
            .collect(),
    ))
}

pub(super) async fn get_one(
    State(state): State<Shared>,
    Path(logger): Path<String>,
) -> Result<Json<Value>, ApiError> {
    state
        .loggers
        .snapshot()
        .get(&logger)
        .map(|(level, m)| Json(render(level, *m)))
        .ok_or_else(|| ApiError::not_found(format!("Logger {logger} not found.")))
}

pub(super) async fn set(
    State(state): State<Shared>,
    Path(logger): Path<String>,
    body: Bytes,
) -> Result<Json<Vec<String>>, ApiError> {
    let body: Value = super::connectors::parse_json(&body)?;
    let level = body.get("level").and_then(Value::as_str).ok_or_else(|| {
        ApiError::bad_request("The request body must be {\"level\": \"<LEVEL>\"}")
    })?;
    state
        .loggers
        .set(&logger, level)
        .map(Json)
        .map_err(ApiError::bad_request)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directives_and_levels() {
        let seen = Arc::new(Mutex::new(String::new()));
        let s = seen.clone();
        let loggers = Loggers::with_setter(
            "INFO",
            Arc::new(move |d: &str| {
                *s.lock().unwrap() = d.to_string();
                Ok(())
            }),
        );
        assert_eq!(
            loggers.set("connect_runtime::worker", "debug").unwrap(),
            ["connect_runtime::worker"]
        );
        assert_eq!(*seen.lock().unwrap(), "info,connect_runtime::worker=debug");
        assert!(loggers.set("x", "LOUD").is_err());
        assert!(loggers.set("a,b", "INFO").is_err());
        loggers.set(ROOT, "WARN").unwrap();
        assert_eq!(*seen.lock().unwrap(), "warn,connect_runtime::worker=debug");
    }
}
