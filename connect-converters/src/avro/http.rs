//! A Confluent Schema Registry client over its REST API.
//!
//! `ureq` (blocking, small, no async runtime) is enough: the converter calls
//! the registry once per new schema and caches the answer.

use std::time::Duration;

use connect_api::{ConnectError, Result};
use serde_json::json;

use super::registry::SchemaRegistryClient;

const CONTENT_TYPE: &str = "application/vnd.schemaregistry.v1+json";

/// Talks to `POST /subjects/{subject}/versions`, `POST /subjects/{subject}`
/// and `GET /schemas/ids/{id}`.
pub struct HttpSchemaRegistry {
    base: String,
    auth: Option<String>,
    agent: ureq::Agent,
}

impl std::fmt::Debug for HttpSchemaRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpSchemaRegistry")
            .field("base", &self.base)
            .field("auth", &self.auth.as_ref().map(|_| "[hidden]"))
            .finish()
    }
}

fn encode_path(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn base64(s: &str) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(s)
}

impl HttpSchemaRegistry {
    /// A client for the registry at `url` (`http://host:8081`); `user_info`
    /// (`user:password`) enables basic authentication.
    pub fn new(url: &str, user_info: Option<&str>) -> Result<Self> {
        let base = url.trim().trim_end_matches('/').to_string();
        if !base.starts_with("http://") && !base.starts_with("https://") {
            return Err(ConnectError::config(
                "schema.registry.url",
                format!("'{url}' is not an http(s) URL"),
            ));
        }
        let config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(30)))
            .build();
        Ok(HttpSchemaRegistry {
            base,
            auth: user_info.map(|u| format!("Basic {}", base64(u))),
            agent: ureq::Agent::new_with_config(config),
        })
    }

    fn call(
        &self,
        method: &str,
        path: &str,
        body: Option<serde_json::Value>,
    ) -> Result<serde_json::Value> {
        let url = format!("{}{path}", self.base);
        let failed = |e: ureq::Error| {
            // Network trouble may pass; the runtime retries retriable errors.
            ConnectError::retriable(format!("schema registry {method} {url} failed: {e}"))
                .with_source(e)
        };
        let mut response = match body {
            Some(b) => {
                let mut req = self
                    .agent
                    .post(&url)
                    .header("Content-Type", CONTENT_TYPE)
                    .header("Accept", CONTENT_TYPE);
                if let Some(a) = &self.auth {
                    req = req.header("Authorization", a);
                }
                req.send(b.to_string()).map_err(failed)?
            }
            None => {
                let mut req = self.agent.get(&url).header("Accept", CONTENT_TYPE);
                if let Some(a) = &self.auth {
                    req = req.header("Authorization", a);
                }
                req.call().map_err(failed)?
            }
        };
        let status = response.status().as_u16();
        let text = response.body_mut().read_to_string().map_err(failed)?;
        let json: serde_json::Value =
            serde_json::from_str(&text).unwrap_or(serde_json::Value::Null);
        if (200..300).contains(&status) {
            return Ok(json);
        }
        let message = json
            .get("message")
            .and_then(|m| m.as_str())
            .unwrap_or(&text);
        let error = format!("schema registry {method} {url} answered {status}: {message}");
        Err(match status {
            404 => ConnectError::not_found(error),
            408 | 429 | 500..=599 => ConnectError::retriable(error),
            _ => ConnectError::data(error),
        })
    }

    fn id_of(json: &serde_json::Value, what: &str) -> Result<u32> {
        json.get("id")
            .and_then(serde_json::Value::as_u64)
            .and_then(|id| u32::try_from(id).ok())
            .ok_or_else(|| {
                ConnectError::data(format!("schema registry {what} answer has no id: {json}"))
            })
    }
}

impl SchemaRegistryClient for HttpSchemaRegistry {
    fn register(&self, subject: &str, schema: &str) -> Result<u32> {
        let json = self.call(
            "POST",
            &format!("/subjects/{}/versions", encode_path(subject)),
            Some(json!({ "schema": schema })),
        )?;
        Self::id_of(&json, "register")
    }

    fn lookup(&self, subject: &str, schema: &str) -> Result<u32> {
        let json = self.call(
            "POST",
            &format!("/subjects/{}", encode_path(subject)),
            Some(json!({ "schema": schema })),
        )?;
        Self::id_of(&json, "lookup")
    }

    fn schema_by_id(&self, id: u32) -> Result<String> {
        let json = self.call("GET", &format!("/schemas/ids/{id}"), None)?;
        json.get("schema")
            .and_then(serde_json::Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| {
                ConnectError::data(format!(
                    "schema registry answer for id {id} has no schema: {json}"
                ))
            })
    }
}
