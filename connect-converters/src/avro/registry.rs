//! The schema-registry client contract, and an in-memory registry for tests
//! (also reachable as `schema.registry.url=mock://<scope>`, as Confluent's).

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};

use connect_api::{ConnectError, Result};

/// What the Avro converter needs from a Confluent-compatible schema registry.
///
/// Calls are blocking; the converter makes one per new schema (per subject)
/// and caches the answer, never one per record.
pub trait SchemaRegistryClient: Send + Sync {
    /// Register `schema` (Avro schema JSON) under `subject`; the global id.
    fn register(&self, subject: &str, schema: &str) -> Result<u32>;
    /// The id of `schema` already registered under `subject` (for
    /// `auto.register.schemas=false`).
    fn lookup(&self, subject: &str, schema: &str) -> Result<u32>;
    /// The schema JSON with global `id`.
    fn schema_by_id(&self, id: u32) -> Result<String>;
}

#[derive(Debug, Default)]
struct State {
    schemas: Vec<String>,
    ids: HashMap<String, u32>,
    subjects: HashMap<String, Vec<u32>>,
}

/// A registry in memory: ids start at 1, an identical schema text gets the
/// same id under every subject (as Confluent's registry does).
///
/// ```
/// use connect_converters::avro::{MemorySchemaRegistry, SchemaRegistryClient};
/// let r = MemorySchemaRegistry::new();
/// let id = r.register("t-value", r#""string""#).unwrap();
/// assert_eq!(r.register("u-value", r#""string""#).unwrap(), id);
/// assert_eq!(r.schema_by_id(id).unwrap(), r#""string""#);
/// assert!(r.schema_by_id(99).is_err());
/// ```
#[derive(Debug, Default)]
pub struct MemorySchemaRegistry {
    state: Mutex<State>,
    calls: std::sync::atomic::AtomicUsize,
}

impl MemorySchemaRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// How many calls the registry has served (tests use it to prove caching).
    pub fn calls(&self) -> usize {
        self.calls.load(std::sync::atomic::Ordering::Relaxed)
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.calls
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        // A panic while holding the lock cannot leave State half-updated
        // in a way that matters for a test registry.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The shared registry of a `mock://<scope>` URL.
    pub fn for_scope(scope: &str) -> Arc<MemorySchemaRegistry> {
        static SCOPES: LazyLock<Mutex<HashMap<String, Arc<MemorySchemaRegistry>>>> =
            LazyLock::new(Default::default);
        let mut scopes = SCOPES.lock().unwrap_or_else(|p| p.into_inner());
        scopes.entry(scope.to_string()).or_default().clone()
    }
}

impl SchemaRegistryClient for MemorySchemaRegistry {
    fn register(&self, subject: &str, schema: &str) -> Result<u32> {
        let mut st = self.state();
        let id = match st.ids.get(schema) {
            Some(id) => *id,
            None => {
                st.schemas.push(schema.to_string());
                let id = u32::try_from(st.schemas.len())
                    .map_err(|_| ConnectError::other("registry full"))?;
                st.ids.insert(schema.to_string(), id);
                id
            }
        };
        let versions = st.subjects.entry(subject.to_string()).or_default();
        if !versions.contains(&id) {
            versions.push(id);
        }
        Ok(id)
    }

    fn lookup(&self, subject: &str, schema: &str) -> Result<u32> {
        let st = self.state();
        st.ids
            .get(schema)
            .filter(|id| st.subjects.get(subject).is_some_and(|v| v.contains(id)))
            .copied()
            .ok_or_else(|| {
                ConnectError::not_found(format!(
                    "Schema not found under subject '{subject}' (auto.register.schemas is false)"
                ))
            })
    }

    fn schema_by_id(&self, id: u32) -> Result<String> {
        let st = self.state();
        usize::try_from(id)
            .ok()
            .and_then(|i| i.checked_sub(1))
            .and_then(|i| st.schemas.get(i))
            .cloned()
            .ok_or_else(|| {
                ConnectError::data(format!("Schema {id} not found in the schema registry"))
            })
    }
}
