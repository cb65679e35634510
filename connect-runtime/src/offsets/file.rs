//! Offsets in a local JSON file (`offset.storage.file.filename`), for the
//! standalone worker.
//!
//! The file holds `{"offsets":[{"key":["<connector>",{partition}],"value":{offset}}]}`.
//! Each write goes to `<file>.tmp`, is fsynced, renamed over the file and
//! the directory is fsynced: a crash at any moment leaves either the old or
//! the new complete file, never a torn one. (Kafka's own file is Java
//! serialization and unreadable elsewhere; this one is plain JSON.)

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use async_trait::async_trait;
use connect_api::{ConnectError, Result, SourceMap};
use serde_json::{json, Value as Json};
use tokio::sync::Mutex;

use super::{OffsetEntry, OffsetStore, OffsetTable};

/// An [`OffsetStore`] backed by one JSON file.
#[derive(Debug)]
pub struct FileOffsetStore {
    path: PathBuf,
    /// Writers serialize here so two flushes never interleave their renames.
    table: Mutex<OffsetTable>,
    /// Snapshot for synchronous readers.
    snapshot: std::sync::RwLock<OffsetTable>,
}

impl FileOffsetStore {
    /// Open (or create on first write) the file at `path`, loading what it holds.
    pub fn open(path: impl Into<PathBuf>) -> Result<Self> {
        let path = path.into();
        let table = load(&path)?;
        Ok(FileOffsetStore {
            path,
            snapshot: std::sync::RwLock::new(table.clone()),
            table: Mutex::new(table),
        })
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

fn load(path: &Path) -> Result<OffsetTable> {
    let text = match fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(OffsetTable::default()),
        Err(e) => {
            return Err(ConnectError::other(format!(
                "cannot read offset file {}: {e}",
                path.display()
            ))
            .with_source(e))
        }
    };
    let corrupt = |why: String| {
        ConnectError::other(format!(
            "offset file {} is not a valid offsets file ({why}); fix or move it, or point offset.storage.file.filename elsewhere to start from no offsets",
            path.display()
        ))
    };
    if text.trim().is_empty() {
        return Ok(OffsetTable::default());
    }
    let doc: Json = serde_json::from_str(&text).map_err(|e| corrupt(e.to_string()))?;
    let entries = doc
        .get("offsets")
        .and_then(Json::as_array)
        .ok_or_else(|| corrupt("missing \"offsets\" array".into()))?;
    let mut table = OffsetTable::default();
    for (i, entry) in entries.iter().enumerate() {
        let key = entry
            .get("key")
            .and_then(Json::as_array)
            .filter(|k| k.len() == 2)
            .ok_or_else(|| corrupt(format!("entry {i}: key must be [connector, partition]")))?;
        let connector = key[0]
            .as_str()
            .ok_or_else(|| corrupt(format!("entry {i}: connector name must be a string")))?;
        let partition: SourceMap = key[1]
            .as_object()
            .cloned()
            .ok_or_else(|| corrupt(format!("entry {i}: partition must be an object")))?;
        let offset: Option<SourceMap> = match entry.get("value") {
            Some(Json::Object(o)) => Some(o.clone()),
            Some(Json::Null) | None => None,
            Some(_) => return Err(corrupt(format!("entry {i}: value must be an object"))),
        };
        table.apply(connector, vec![(partition, offset)]);
    }
    Ok(table)
}

fn render(table: &OffsetTable) -> String {
    let entries: Vec<Json> = table
        .iter()
        .map(|(c, p, o)| json!({"key": [c, p], "value": o}))
        .collect();
    let mut text = serde_json::to_string_pretty(&json!({ "offsets": entries }))
        .unwrap_or_else(|_| "{\"offsets\":[]}".to_string());
    text.push('\n');
    text
}

fn write_atomically(path: &Path, contents: &str) -> std::io::Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    {
        let mut f = fs::File::create(&tmp)?;
        f.write_all(contents.as_bytes())?;
        f.sync_all()?;
    }
    fs::rename(&tmp, path)?;
    // Make the rename itself durable.
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        fs::File::open(dir)?.sync_all()?;
    }
    Ok(())
}

#[async_trait]
impl OffsetStore for FileOffsetStore {
    fn get(&self, connector: &str, partition: &SourceMap) -> Option<SourceMap> {
        self.snapshot.read().ok()?.get(connector, partition)
    }

    fn connector_offsets(&self, connector: &str) -> Vec<(SourceMap, SourceMap)> {
        self.snapshot
            .read()
            .map(|t| t.connector_offsets(connector))
            .unwrap_or_default()
    }

    async fn write(&self, connector: &str, entries: Vec<OffsetEntry>) -> Result<()> {
        if entries.is_empty() {
            return Ok(());
        }
        let mut table = self.table.lock().await;
        let mut next = table.clone();
        next.apply(connector, entries);
        let contents = render(&next);
        let path = self.path.clone();
        tokio::task::spawn_blocking(move || write_atomically(&path, &contents))
            .await
            .map_err(|e| ConnectError::other(format!("offset writer task failed: {e}")))?
            .map_err(|e| {
                ConnectError::retriable(format!(
                    "cannot write offset file {}: {e}",
                    self.path.display()
                ))
                .with_source(e)
            })?;
        if let Ok(mut snap) = self.snapshot.write() {
            *snap = next.clone();
        }
        *table = next;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(k: &str, v: serde_json::Value) -> SourceMap {
        let mut m = SourceMap::new();
        m.insert(k.into(), v);
        m
    }

    fn temp_path(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("connect-offsets-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir.join("connect.offsets")
    }

    #[tokio::test]
    async fn survives_reopen_and_resets() {
        let path = temp_path("reopen");
        let part = map("filename", "test.txt".into());
        {
            let store = FileOffsetStore::open(&path).unwrap();
            store
                .write(
                    "src",
                    vec![(part.clone(), Some(map("position", 10.into())))],
                )
                .await
                .unwrap();
            store
                .write(
                    "src",
                    vec![(part.clone(), Some(map("position", 25.into())))],
                )
                .await
                .unwrap();
        }
        let store = FileOffsetStore::open(&path).unwrap();
        assert_eq!(store.get("src", &part), Some(map("position", 25.into())));
        let text = fs::read_to_string(&path).unwrap();
        assert!(text.contains(r#""key": ["#), "{text}");
        store
            .write("src", vec![(part.clone(), None)])
            .await
            .unwrap();
        assert_eq!(
            FileOffsetStore::open(&path).unwrap().get("src", &part),
            None
        );
    }

    #[tokio::test]
    async fn leftover_tmp_file_is_ignored() {
        let path = temp_path("tmp");
        let part = map("filename", "a".into());
        let store = FileOffsetStore::open(&path).unwrap();
        store
            .write("c", vec![(part.clone(), Some(map("position", 1.into())))])
            .await
            .unwrap();
        // A crash mid-write leaves a torn temp file next to a complete file.
        fs::write(path.with_extension("offsets.tmp"), "{\"offs").unwrap();
        let reopened = FileOffsetStore::open(&path).unwrap();
        assert_eq!(reopened.get("c", &part), Some(map("position", 1.into())));
    }

    #[test]
    fn corrupt_file_is_an_error_naming_the_file() {
        let path = temp_path("corrupt");
        fs::write(&path, "not json").unwrap();
        let e = FileOffsetStore::open(&path).unwrap_err().to_string();
        assert!(
            e.contains("connect.offsets") && e.contains("offset.storage.file.filename"),
            "{e}"
        );
        fs::write(&path, r#"{"offsets":[{"key":"x"}]}"#).unwrap();
        assert!(FileOffsetStore::open(&path).is_err());
    }
}
