//! `/connector-plugins/...` handlers: plugin lists, config definitions and
//! validation (`ConfigInfos`).

use axum::extract::{Path, RawQuery, State};
use axum::Json;
use bytes::Bytes;
use connect_api::config::{ConfigDef, ConfigKey, ConfigType};
use connect_api::connector::ConnectorType;
use connect_api::SourceRecord;
use serde_json::{json, Map, Value};

use super::connectors::{parse_json, query_bool};
use super::{ApiError, Shared};
use crate::herder::unknown_connector_keys;
use crate::worker::{sink_connector_def, source_connector_def, ConnectorPlugin};

const VERSION: &str = env!("CARGO_PKG_VERSION");

pub(super) async fn list(
    State(state): State<Shared>,
    RawQuery(query): RawQuery,
) -> Result<Json<Vec<Value>>, ApiError> {
    let connectors_only = query_bool(&query, "connectorsOnly", true)?;
    let plugins = state.herder.plugins();
    let mut out: Vec<Value> = plugins
        .connector_classes()
        .map(|p| json!({"class": p.class, "type": p.kind.as_str(), "version": p.version}))
        .collect();
    if !connectors_only {
        let entry =
            |class: &str, kind: &str| json!({"class": class, "type": kind, "version": VERSION});
        let t = plugins.transforms();
        out.extend(
            t.transform_classes()
                .into_iter()
                .map(|c| entry(c, "transformation")),
        );
        out.extend(
            t.predicate_classes()
                .into_iter()
                .map(|c| entry(c, "predicate")),
        );
        // Aliases resolve to the same plugins: list full class names only.
        let c = plugins.converters();
        out.extend(
            c.converter_names()
                .filter(|n| n.contains('.'))
                .map(|n| entry(n, "converter")),
        );
        out.extend(
            c.header_converter_names()
                .filter(|n| n.contains('.'))
                .map(|n| entry(n, "header_converter")),
        );
    }
    Ok(Json(out))
}

fn plugin<'a>(state: &'a Shared, name: &str) -> Result<&'a ConnectorPlugin, ApiError> {
    state
        .herder
        .plugins()
        .connector(name)
        .map_err(|_| ApiError::not_found(format!("Unknown plugin {name}.")))
}

/// The common keys of the plugin's kind with the plugin's own keys.
fn full_def(plugin: &ConnectorPlugin) -> ConfigDef {
    let base = match plugin.kind {
        ConnectorType::Source => source_connector_def(),
        ConnectorType::Sink => sink_connector_def(),
    };
    base.merge(&plugin.create().as_connector_ref().config_def())
}

/// Kafka's `ConfigKeyInfo` JSON.
fn definition(key: &ConfigKey) -> Value {
    let default = match (&key.default, key.ty) {
        (Some(_), ConfigType::Password) => Value::from("[hidden]"),
        (Some(d), _) => d.to_config_string().map(Value::from).unwrap_or(Value::Null),
        (None, _) => Value::Null,
    };
    json!({
        "name": key.name,
        "type": key.ty.name(),
        "required": key.is_required(),
        "default_value": default,
        "importance": key.importance.name(),
        "documentation": key.documentation,
        "group": key.group,
        // Kafka 4.x writes `order_in_group` (3.x wrote `order`).
        "order_in_group": if key.group.is_some() { key.order_in_group } else { -1 },
        "width": key.width.name(),
        "display_name": if key.display_name.is_empty() { key.name.as_str() } else { key.display_name.as_str() },
        "dependents": key.dependents,
    })
}

/// A definition for a key validated outside any `ConfigDef` (a transform's
/// or predicate's key reported by the chain).
fn loose_definition(name: &str) -> Value {
    json!({
        "name": name, "type": "STRING", "required": false, "default_value": null,
        "importance": "LOW", "documentation": "", "group": null, "order_in_group": -1,
        "width": "NONE", "display_name": name, "dependents": [],
    })
}

/// The plugin's own keys: a connector's, or (KIP-769) a transform's,
/// predicate's, converter's or header converter's.
pub(super) async fn config(
    State(state): State<Shared>,
    Path(name): Path<String>,
) -> Result<Json<Vec<Value>>, ApiError> {
    let plugins = state.herder.plugins();
    let def = if let Ok(p) = plugins.connector(&name) {
        p.create().as_connector_ref().config_def()
    } else if let Some((_, t)) = plugins.transforms().create_transform::<SourceRecord>(&name) {
        t.config_def()
    } else if let Some((_, p)) = plugins.transforms().create_predicate::<SourceRecord>(&name) {
        p.config_def()
    } else if let Ok(c) = plugins.converters().create_converter(&name) {
        c.config_def()
    } else if let Ok(c) = plugins.converters().create_header_converter(&name) {
        c.config_def()
    } else {
        return Err(ApiError::not_found(format!("Unknown plugin {name}.")));
    };
    Ok(Json(def.keys().iter().map(definition).collect()))
}

/// `ConfigInfos`; 200 even when invalid.
///
/// Keys nothing defines ([`unknown_connector_keys`]) are not errors, as in
/// Kafka, whose `ConfigInfos` has no place for them: it lists only defined
/// keys in `configs`, and a report with no errors there would pass the key
/// off as a defined one (with a made-up definition) and still not say
/// anything is wrong. So they go in one extra top-level member,
/// `"warnings": [{"name": key, "message": text}]`, present only when there
/// is something in it: `name`, `error_count`, `groups` and `configs` stay
/// exactly Kafka's, and a config Kafka would take silently gets a
/// byte-for-byte Kafka-shaped answer.
pub(super) async fn validate(
    State(state): State<Shared>,
    Path(name): Path<String>,
    body: Bytes,
) -> Result<Json<Value>, ApiError> {
    let body: Value = parse_json(&body)?;
    let body = body.as_object().ok_or_else(|| {
        ApiError::bad_request("The connector config to validate must be a JSON object")
    })?;
    let mut config = connect_api::config::ConfigMap::new();
    for (k, v) in body {
        let s = match v {
            Value::String(s) => s.clone(),
            Value::Number(_) | Value::Bool(_) => v.to_string(),
            _ => {
                return Err(ApiError::bad_request(format!(
                    "The value of '{k}' must be a string"
                )))
            }
        };
        config.insert(k.clone(), s);
    }
    let plugin = plugin(&state, &name)?;
    match config.get("connector.class") {
        Some(given) => {
            let same = state
                .herder
                .plugins()
                .connector(given)
                .is_ok_and(|p| p.class == plugin.class);
            if !same {
                return Err(ApiError::bad_request(format!(
                    "Included connector type {given} does not match request type {name}"
                )));
            }
        }
        None => {
            config.insert("connector.class".into(), plugin.class.clone());
        }
    }
    let (class, reports) = state.herder.validate(&config)?;
    let def = full_def(plugin);
    let mut groups: Vec<String> = Vec::new();
    for key in def.keys() {
        if let Some(g) = &key.group {
            if !groups.contains(g) {
                groups.push(g.clone());
            }
        }
    }
    let error_count: usize = reports.iter().map(|r| r.errors.len()).sum();
    let configs: Vec<Value> = reports
        .iter()
        .map(|r| {
            let definition = def
                .key(&r.name)
                .map(definition)
                .unwrap_or_else(|| loose_definition(&r.name));
            let value = match def.key(&r.name).map(|k| k.ty) {
                Some(ConfigType::Password) if r.value.is_some() => Some("[hidden]".to_string()),
                _ => r.value.clone(),
            };
            let mut v = Map::new();
            v.insert("name".into(), Value::from(r.name.clone()));
            v.insert(
                "value".into(),
                value.map(Value::from).unwrap_or(Value::Null),
            );
            v.insert("recommended_values".into(), json!(r.recommended_values));
            v.insert("errors".into(), json!(r.errors));
            v.insert("visible".into(), Value::from(r.visible));
            json!({"definition": definition, "value": v})
        })
        .collect();
    let mut infos = json!({
        "name": class,
        "error_count": error_count,
        "groups": groups,
        "configs": configs,
    });
    let warnings: Vec<Value> = unknown_connector_keys(state.herder.plugins(), &config)
        .into_iter()
        .map(|u| json!({"name": u.key, "message": u.to_string()}))
        .collect();
    if !warnings.is_empty() {
        infos["warnings"] = Value::Array(warnings);
    }
    Ok(Json(infos))
}
