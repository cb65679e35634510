//! Offsets in a local JSON file (`offset.storage.file.filename`), for the
//! standalone worker.
//!
//! The file holds `{"offsets":[{"key":["<connector>",{partition}],"value":{offset}}]}`.
//! Each write goes to `<file>.tmp`, is fsynced, renamed over the file and
//! the directory is fsynced: a crash at any moment leaves either the old or
//! the new complete file, never a torn one. (Kafka's own file is Java
//! serialization and unreadable elsewhere; this one is plain JSON.)
//!
//! A write keeps going on its blocking thread when the caller gives up on
//! it (a flush timeout drops the future): file writes take turns under
//! their own lock, and one older than what the file already holds is not
//! written, so an abandoned write can neither tear a later one's temp file
//! nor put older offsets back. An empty or torn file is an error, never
//! "no offsets".

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use connect_api::{ConnectError, Result, SourceMap};
use serde_json::{json, Value as Json};
use tokio::sync::Mutex;

use super::{OffsetEntry, OffsetStore, OffsetTable, SharedTable};

/// An [`OffsetStore`] backed by one JSON file.
#[derive(Debug)]
pub struct FileOffsetStore {
    path: PathBuf,
    /// Writers serialize here so two flushes never interleave their renames.
    table: Mutex<OffsetTable>,
    /// Snapshot for synchronous readers.
    snapshot: SharedTable,
    /// Numbers each write's contents in the order they were made.
    next_generation: AtomicU64,
    /// Held by the blocking thread writing the file, with the generation
    /// the file holds: independent of the caller's future, which may be
    /// dropped while its write goes on.
    file: Arc<std::sync::Mutex<u64>>,
}

impl FileOffsetStore {
    /// Open (or create on first write) the file at `path`, loading what it holds.
    pub fn open(path: impl Into<PathBuf>) -> Result<Self> {
        let path = path.into();
        let table = load(&path)?;
        Ok(FileOffsetStore {
            path,
            snapshot: SharedTable::new(table.clone()),
            table: Mutex::new(table),
            next_generation: AtomicU64::new(1),
            file: Arc::new(std::sync::Mutex::new(0)),
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
    // Writes are atomic, so an empty file was cut short by something else
    // (a full disk, a copy); reading it as "no offsets" would silently
    // replay every source from its start.
    if text.trim().is_empty() {
        return Err(corrupt("the file is empty".into()));
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

/// Write `contents` (the table as of `generation`) once no other write is
/// running, unless the file already holds a later generation.
fn write_in_turn(
    file: &std::sync::Mutex<u64>,
    generation: u64,
    path: &Path,
    contents: &str,
) -> std::io::Result<()> {
    let mut written = file.lock().unwrap_or_else(|p| p.into_inner());
    if *written > generation {
        return Ok(()); // a later write is on disk already
    }
    write_atomically(path, contents)?;
    *written = generation;
    Ok(())
}

#[async_trait]
impl OffsetStore for FileOffsetStore {
    fn get(&self, connector: &str, partition: &SourceMap) -> Option<SourceMap> {
        self.snapshot.get(connector, partition)
    }

    fn connector_offsets(&self, connector: &str) -> Vec<(SourceMap, SourceMap)> {
        self.snapshot.connector_offsets(connector)
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
        let generation = self.next_generation.fetch_add(1, Ordering::Relaxed);
        let file = Arc::clone(&self.file);
        tokio::task::spawn_blocking(move || write_in_turn(&file, generation, &path, &contents))
            .await
            .map_err(|e| ConnectError::other(format!("offset writer task failed: {e}")))?
            .map_err(|e| {
                ConnectError::retriable(format!(
                    "cannot write offset file {}: {e}",
                    self.path.display()
                ))
                .with_source(e)
            })?;
        self.snapshot.replace(next.clone());
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
    fn an_empty_file_is_an_error_not_a_reset() {
        let path = temp_path("empty");
        fs::write(&path, "").unwrap();
        let e = FileOffsetStore::open(&path).unwrap_err().to_string();
        assert!(e.contains("connect.offsets") && e.contains("empty"), "{e}");
        fs::write(&path, "  \n").unwrap();
        assert!(FileOffsetStore::open(&path).is_err());
    }

    /// An abandoned write that reaches the disk after a later one leaves the
    /// later one in place.
    #[test]
    fn a_late_older_write_does_not_replace_a_newer_one() {
        let path = temp_path("late");
        let file = std::sync::Mutex::new(0);
        write_in_turn(&file, 2, &path, "{\"offsets\":[]}\n").unwrap();
        write_in_turn(&file, 1, &path, "older").unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "{\"offsets\":[]}\n");
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
