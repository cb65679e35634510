//! Offsets kept in memory only (tests and embedded workers that do not
//! need to resume after a restart).

use async_trait::async_trait;
use connect_api::{Result, SourceMap};

use super::{OffsetEntry, OffsetStore, SharedTable};

/// An [`OffsetStore`] in memory.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// use connect_runtime::offsets::{MemoryOffsetStore, OffsetStore};
/// use connect_api::SourceMap;
///
/// let store = MemoryOffsetStore::new();
/// let mut part = SourceMap::new();
/// part.insert("filename".into(), "a.txt".into());
/// let mut off = SourceMap::new();
/// off.insert("position".into(), 42.into());
/// store.write("src", vec![(part.clone(), Some(off.clone()))]).await.unwrap();
/// assert_eq!(store.get("src", &part), Some(off));
/// assert_eq!(store.get("other", &part), None);
/// # });
/// ```
#[derive(Debug, Default)]
pub struct MemoryOffsetStore {
    table: SharedTable,
}

impl MemoryOffsetStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }
}

#[async_trait]
impl OffsetStore for MemoryOffsetStore {
    fn get(&self, connector: &str, partition: &SourceMap) -> Option<SourceMap> {
        self.table.get(connector, partition)
    }

    fn connector_offsets(&self, connector: &str) -> Vec<(SourceMap, SourceMap)> {
        self.table.connector_offsets(connector)
    }

    async fn write(&self, connector: &str, entries: Vec<OffsetEntry>) -> Result<()> {
        self.table.apply(connector, entries);
        Ok(())
    }
}
