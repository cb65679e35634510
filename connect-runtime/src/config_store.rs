//! Where connector configs, task configs and target states are kept: the
//! [`ConfigStore`] seam (Kafka's `ConfigBackingStore`).
//!
//! A herder writes every change here before it acts on it, and starts the
//! connectors a store already holds, so the store, not the herder's memory,
//! is the record of what should run. The standalone herder keeps them in a
//! [`MemoryConfigStore`] (as Kafka's standalone worker does: connectors come
//! from the command line and REST, and are gone after a restart); the
//! distributed herder keeps them in the config topic.

use std::collections::BTreeMap;
use std::sync::Mutex;

use async_trait::async_trait;
use connect_api::{ConfigMap, ConnectError, Result};

use crate::status::TargetState;

/// What a store holds for one connector.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StoredConnector {
    /// The connector's config as given (provider references unresolved).
    pub config: ConfigMap,
    /// What the user asked it to be.
    pub target: TargetState,
    /// The configs its tasks run with, in task order; empty while it has
    /// no tasks (not started yet, failed, or STOPPED).
    pub task_configs: Vec<ConfigMap>,
}

/// Connector configs, task configs and target states.
///
/// Writes are async because a Kafka-backed store produces a record and waits
/// until it has read it back; reads come from the store's local view.
///
/// ```
/// # futures::executor::block_on(async {
/// use connect_api::ConfigMap;
/// use connect_runtime::config_store::{ConfigStore, MemoryConfigStore};
/// use connect_runtime::status::TargetState;
///
/// let store = MemoryConfigStore::new();
/// let config = ConfigMap::from([("connector.class", "FileStreamSource")]);
/// store.put_connector_config("files", config.clone(), TargetState::Paused).await.unwrap();
/// store.put_task_configs("files", vec![config.clone()]).await.unwrap();
/// let stored = store.connector("files").unwrap();
/// assert_eq!((stored.target, stored.task_configs.len()), (TargetState::Paused, 1));
/// store.remove_connector("files").await.unwrap();
/// assert!(store.snapshot().is_empty());
/// # });
/// ```
#[async_trait]
pub trait ConfigStore: Send + Sync {
    /// Every connector the store holds, by name.
    fn snapshot(&self) -> BTreeMap<String, StoredConnector>;

    /// One connector, if the store holds it.
    fn connector(&self, name: &str) -> Option<StoredConnector> {
        self.snapshot().remove(name)
    }

    /// Create or replace connector `name`'s config, with `target` as its
    /// target state; a replaced connector keeps its task configs until
    /// [`ConfigStore::put_task_configs`] replaces them.
    async fn put_connector_config(
        &self,
        name: &str,
        config: ConfigMap,
        target: TargetState,
    ) -> Result<()>;

    /// Forget connector `name` (config, task configs and target state).
    async fn remove_connector(&self, name: &str) -> Result<()>;

    /// Replace the task configs of `name`; an error when the store does not
    /// hold `name`.
    async fn put_task_configs(&self, name: &str, configs: Vec<ConfigMap>) -> Result<()>;

    /// Set the target state of `name`; an error when the store does not
    /// hold `name`.
    async fn put_target_state(&self, name: &str, target: TargetState) -> Result<()>;
}

/// A [`ConfigStore`] in memory: what the standalone worker uses.
#[derive(Debug, Default)]
pub struct MemoryConfigStore {
    connectors: Mutex<BTreeMap<String, StoredConnector>>,
}

impl MemoryConfigStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn update<T>(&self, f: impl FnOnce(&mut BTreeMap<String, StoredConnector>) -> T) -> T {
        // A poisoned lock only means a panic elsewhere while holding it; the
        // map itself is always whole, so keep using it.
        let mut map = self.connectors.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut map)
    }

    fn with_connector(&self, name: &str, f: impl FnOnce(&mut StoredConnector)) -> Result<()> {
        self.update(|map| match map.get_mut(name) {
            Some(stored) => {
                f(stored);
                Ok(())
            }
            None => Err(ConnectError::not_found(format!(
                "Connector {name} not found in the config store"
            ))),
        })
    }
}

#[async_trait]
impl ConfigStore for MemoryConfigStore {
    fn snapshot(&self) -> BTreeMap<String, StoredConnector> {
        self.update(|map| map.clone())
    }

    fn connector(&self, name: &str) -> Option<StoredConnector> {
        self.update(|map| map.get(name).cloned())
    }

    async fn put_connector_config(
        &self,
        name: &str,
        config: ConfigMap,
        target: TargetState,
    ) -> Result<()> {
        self.update(|map| {
            let stored = map.entry(name.to_string()).or_default();
            stored.config = config;
            stored.target = target;
        });
        Ok(())
    }

    async fn remove_connector(&self, name: &str) -> Result<()> {
        self.update(|map| map.remove(name));
        Ok(())
    }

    async fn put_task_configs(&self, name: &str, configs: Vec<ConfigMap>) -> Result<()> {
        self.with_connector(name, |stored| stored.task_configs = configs)
    }

    async fn put_target_state(&self, name: &str, target: TargetState) -> Result<()> {
        self.with_connector(name, |stored| stored.target = target)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn replacing_a_config_keeps_task_configs_until_they_are_replaced() {
        let store = MemoryConfigStore::new();
        let a = ConfigMap::from([("k", "1")]);
        let b = ConfigMap::from([("k", "2")]);
        store
            .put_connector_config("c", a.clone(), TargetState::Started)
            .await
            .unwrap();
        store.put_task_configs("c", vec![a.clone()]).await.unwrap();
        store
            .put_connector_config("c", b.clone(), TargetState::Stopped)
            .await
            .unwrap();
        let stored = store.connector("c").unwrap();
        assert_eq!(stored.config, b);
        assert_eq!(stored.target, TargetState::Stopped);
        assert_eq!(stored.task_configs, vec![a]);
    }

    #[tokio::test]
    async fn writes_to_an_unknown_connector_are_refused() {
        let store = MemoryConfigStore::new();
        let err = store
            .put_task_configs("nope", Vec::new())
            .await
            .unwrap_err();
        assert!(err.to_string().contains("nope"), "{err}");
        let err = store
            .put_target_state("nope", TargetState::Paused)
            .await
            .unwrap_err();
        assert!(err.to_string().contains("nope"), "{err}");
        assert!(store.snapshot().is_empty());
    }
}
