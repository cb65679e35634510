//! FileStreamSource: tails a file (or standard input), one record per line.

use std::io::{ErrorKind as IoErrorKind, SeekFrom};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use connect_api::config::validators::{Lambda, Range};
use connect_api::config::{ConfigKey, ConfigValue, Importance, ParsedConfig};
use connect_api::connector::{ExactlyOnceSupport, SourceConnector};
use connect_api::source::{SourceTask, SourceTaskContext};
use connect_api::{
    ConfigDef, ConfigMap, ConfigType, ConnectError, Connector, ConnectorContext, Record, Result,
    Schema, SourceMap, SourceRecord, Value,
};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncSeekExt};

use crate::{configured_file, plugin_version, FILE_CONFIG};

/// Config key: the topic every line is written to (required, one topic).
pub const TOPIC_CONFIG: &str = "topic";
/// Config key: the most records one `poll` returns.
pub const BATCH_SIZE_CONFIG: &str = "batch.size";
/// Default of [`BATCH_SIZE_CONFIG`], as in Kafka.
pub const DEFAULT_BATCH_SIZE: i32 = 2000;
/// Source partition key holding the file name.
pub const FILENAME_FIELD: &str = "filename";
/// Source offset key holding the byte position after the last emitted line.
pub const POSITION_FIELD: &str = "position";

/// How long `poll` waits when there is nothing to read (no new line, or the
/// file does not exist yet) before returning an empty batch, so the runtime
/// can flush offsets and react to pause/stop in between.
const IDLE_WAIT: Duration = Duration::from_millis(500);
/// Bytes requested per read; the line buffer grows beyond it only for lines
/// longer than this.
const READ_CHUNK: usize = 64 * 1024;

/// Source connector reading lines from a file, or from standard input when
/// `file` is unset.
///
/// Config keys ([`FileStreamSourceConnector::definition`]): `file`, `topic`
/// (required), `batch.size` (default 2000). It always runs one task: a file
/// cannot be split between readers.
///
/// ```
/// use connect_api::{Connector, SourceConnector};
/// use connect_file::FileStreamSourceConnector;
///
/// let connector = FileStreamSourceConnector::new();
/// let config = connect_api::ConfigMap::from([("topic", "connect-test"), ("file", "test.txt")]);
/// assert!(connector.validate(&config).iter().all(|r| r.errors.is_empty()));
/// let _task = connector.create_task();
/// assert_eq!(FileStreamSourceConnector::CLASS, "org.apache.kafka.connect.file.FileStreamSourceConnector");
/// ```
#[derive(Debug, Default)]
pub struct FileStreamSourceConnector {
    config: Option<ConfigMap>,
}

impl FileStreamSourceConnector {
    /// Kafka's class name for this connector.
    pub const CLASS: &'static str = "org.apache.kafka.connect.file.FileStreamSourceConnector";

    /// An unstarted connector.
    pub fn new() -> Self {
        Self::default()
    }

    /// The keys this connector accepts.
    pub fn definition() -> ConfigDef {
        ConfigDef::new()
            .define(
                ConfigKey::new(FILE_CONFIG, ConfigType::String)
                    .optional()
                    .importance(Importance::High)
                    .doc("Source filename. If not specified, the standard input will be used"),
            )
            .define(
                ConfigKey::new(TOPIC_CONFIG, ConfigType::String)
                    .importance(Importance::High)
                    .validator(Lambda::new("a single topic name", check_single_topic))
                    .doc(
                        "The topic to publish data to. Exactly one topic: a comma-separated \
                         list is rejected",
                    ),
            )
            .define(
                ConfigKey::new(BATCH_SIZE_CONFIG, ConfigType::Int)
                    .default(DEFAULT_BATCH_SIZE)
                    .validator(Range::at_least(1))
                    .importance(Importance::Low)
                    .doc("The maximum number of records the source task can read from the file each time it is polled"),
            )
    }
}

/// Kafka's legal topic characters and length; checked here so a typo fails
/// when the connector is created, naming the key, not later in the producer.
fn check_single_topic(_: &str, value: &ConfigValue) -> std::result::Result<(), String> {
    let topic = match value {
        ConfigValue::String(s) => s.as_str(),
        _ => return Err("String must be non-empty".into()),
    };
    if topic.is_empty() {
        return Err("String must be non-empty".into());
    }
    if topic.contains(',') {
        return Err(
            "FileStreamSourceConnector writes to a single topic, but a comma-separated list was given; set one topic name"
                .into(),
        );
    }
    if topic == "." || topic == ".." {
        return Err("Topic name cannot be \".\" or \"..\"".into());
    }
    if topic.len() > 249 {
        return Err("Topic name is longer than the 249 characters Kafka allows".into());
    }
    if let Some(c) = topic
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
    {
        return Err(format!(
            "Topic name contains {c:?}; Kafka allows only ASCII letters, digits, '.', '_' and '-'"
        ));
    }
    Ok(())
}

#[async_trait]
impl Connector for FileStreamSourceConnector {
    fn version(&self) -> String {
        plugin_version()
    }

    fn config_def(&self) -> ConfigDef {
        Self::definition()
    }

    async fn start(
        &mut self,
        config: &ConfigMap,
        _context: Arc<dyn ConnectorContext>,
    ) -> Result<()> {
        Self::definition().parse(config)?;
        self.config = Some(config.clone());
        Ok(())
    }

    async fn task_configs(&mut self, max_tasks: usize) -> Result<Vec<ConfigMap>> {
        let config = self.config.as_ref().ok_or_else(|| {
            ConnectError::other("FileStreamSourceConnector: task_configs called before start")
        })?;
        // Only one task can read a file, whatever tasks.max says.
        Ok(if max_tasks == 0 {
            Vec::new()
        } else {
            vec![config.clone()]
        })
    }

    async fn stop(&mut self) -> Result<()> {
        self.config = None;
        Ok(())
    }
}

#[async_trait]
impl SourceConnector for FileStreamSourceConnector {
    fn create_task(&self) -> Box<dyn connect_api::SourceTask> {
        Box::new(FileStreamSourceTask::new())
    }

    /// Exactly-once is possible with a file (offsets are byte positions that
    /// can be replayed), not with standard input.
    fn exactly_once_support(&self, config: &ConfigMap) -> ExactlyOnceSupport {
        match config.get(FILE_CONFIG) {
            Some(f) if !f.trim().is_empty() => ExactlyOnceSupport::Supported,
            _ => ExactlyOnceSupport::Unsupported,
        }
    }

    /// Accepts offsets of the form `{"filename": ...}` → `{"position": n}`
    /// with `n >= 0`, or a reset (`None`). Whether the position fits the file
    /// is checked by the task when it starts.
    async fn alter_offsets(
        &mut self,
        config: &ConfigMap,
        offsets: &[(SourceMap, Option<SourceMap>)],
    ) -> Result<bool> {
        let parsed = Self::definition().parse(config)?;
        if configured_file(&parsed).is_none() {
            return Err(ConnectError::other(format!(
                "Offsets cannot be modified when '{FILE_CONFIG}' is unset: standard input is read \
                 without offsets"
            )));
        }
        for (partition, offset) in offsets {
            let Some(offset) = offset else { continue };
            if !partition.contains_key(FILENAME_FIELD) {
                return Err(ConnectError::other(format!(
                    "Source partition {} must contain the key '{FILENAME_FIELD}'",
                    serde_json::Value::Object(partition.clone())
                )));
            }
            match offset.get(POSITION_FIELD).map(serde_json::Value::as_i64) {
                Some(Some(p)) if p >= 0 => {}
                Some(Some(_)) => {
                    return Err(ConnectError::other(format!(
                        "The '{POSITION_FIELD}' in offset {} must not be negative",
                        serde_json::Value::Object(offset.clone())
                    )))
                }
                Some(None) => {
                    return Err(ConnectError::other(format!(
                        "The '{POSITION_FIELD}' in offset {} must be an integer",
                        serde_json::Value::Object(offset.clone())
                    )))
                }
                None => {
                    return Err(ConnectError::other(format!(
                        "Offset {} must be null or contain the key '{POSITION_FIELD}'",
                        serde_json::Value::Object(offset.clone())
                    )))
                }
            }
        }
        Ok(true)
    }
}

/// The task of [`FileStreamSourceConnector`].
///
/// With a file, it tails it: every complete line (terminated by `\n`; a `\r`
/// before it is dropped too) becomes a record on `topic` with value schema
/// [`Schema::string`], no key, source partition `{"filename": file}` and
/// source offset `{"position": p}`, `p` being the byte position just after
/// the line. A last line still missing its newline is held back until the
/// newline arrives, so a line written in two parts is one record. Bytes that
/// are not UTF-8 are replaced by U+FFFD.
///
/// On start it resumes from the stored position. If the file is shorter than
/// that position (it was truncated or replaced), it logs a warning and reads
/// from the start; the same happens when the file shrinks while tailed. A
/// file that does not exist yet is waited for. A file renamed away or
/// deleted (log rotation) is not followed: the task keeps its handle on the
/// old one until it is restarted. With no new data, `poll` waits up to half
/// a second before returning an empty batch, which bounds the added latency.
///
/// Without a file it reads standard input, with empty source partition and
/// offset (Kafka's null ones): nothing to resume from. Tokio reads stdin on
/// a blocking thread that cannot be interrupted, so shutting down may wait
/// for the next input line.
///
/// ```
/// use connect_file::FileStreamSourceTask;
/// let _task = FileStreamSourceTask::new(); // started by the runtime
/// ```
#[derive(Default)]
pub struct FileStreamSourceTask {
    running: Option<Running>,
}

impl std::fmt::Debug for FileStreamSourceTask {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut d = f.debug_struct("FileStreamSourceTask");
        if let Some(r) = &self.running {
            d.field("topic", &r.topic)
                .field("partition", &r.partition)
                .field("position", &r.lines.position());
        }
        d.finish_non_exhaustive()
    }
}

impl FileStreamSourceTask {
    /// An unstarted task.
    pub fn new() -> Self {
        Self::default()
    }
}

#[async_trait]
impl SourceTask for FileStreamSourceTask {
    async fn start(
        &mut self,
        config: &ConfigMap,
        context: Arc<dyn SourceTaskContext>,
    ) -> Result<()> {
        let parsed = FileStreamSourceConnector::definition().parse(config)?;
        self.running = Some(Running::new(&parsed, context.as_ref())?);
        Ok(())
    }

    async fn poll(&mut self) -> Result<Vec<SourceRecord>> {
        match self.running.as_mut() {
            Some(running) => running.poll().await,
            None => Err(ConnectError::other(
                "FileStreamSourceTask: poll called before start",
            )),
        }
    }

    async fn stop(&mut self) -> Result<()> {
        self.running = None;
        Ok(())
    }
}

/// A started task's state.
struct Running {
    topic: Arc<str>,
    batch_size: usize,
    /// `{"filename": ...}`, shared by every record; empty for stdin.
    partition: Arc<SourceMap>,
    input: Input,
    lines: LineBuffer,
    /// Records read but not yet returned. Kept here rather than in a local so
    /// that a `poll` future dropped while awaiting a read loses nothing.
    pending: Vec<SourceRecord>,
}

impl Running {
    fn new(config: &ParsedConfig, context: &dyn SourceTaskContext) -> Result<Self> {
        let topic: Arc<str> = config.get_string(TOPIC_CONFIG).unwrap_or_default().into();
        let batch_size = config
            .get_int(BATCH_SIZE_CONFIG)
            .and_then(|b| usize::try_from(b).ok())
            .unwrap_or(1)
            .max(1);
        let (input, partition) = match configured_file(config) {
            None => (
                Input::Stream(Box::new(tokio::io::stdin())),
                SourceMap::new(),
            ),
            Some(path) => {
                let mut partition = SourceMap::new();
                partition.insert(FILENAME_FIELD.into(), path.clone().into());
                let resume_from = stored_position(&partition, context)?;
                if resume_from > 0 {
                    tracing::info!(file = %path, position = resume_from, "FileStreamSource resuming from the stored position");
                }
                (
                    Input::File(FileInput {
                        path,
                        file: None,
                        resume_from,
                        warned_missing: false,
                    }),
                    partition,
                )
            }
        };
        Ok(Running::with_input(topic, batch_size, input, partition))
    }

    fn with_input(topic: Arc<str>, batch_size: usize, input: Input, partition: SourceMap) -> Self {
        Running {
            topic,
            batch_size,
            partition: Arc::new(partition),
            input,
            lines: LineBuffer::default(),
            pending: Vec::new(),
        }
    }

    async fn poll(&mut self) -> Result<Vec<SourceRecord>> {
        loop {
            self.take_lines();
            if self.pending.len() >= self.batch_size {
                break;
            }
            if !self.input.read_into(&mut self.lines).await? {
                break;
            }
        }
        if self.pending.is_empty() {
            self.input.check_truncated(&self.lines).await?;
            tokio::time::sleep(IDLE_WAIT).await;
        }
        Ok(std::mem::take(&mut self.pending))
    }

    /// Move complete lines from the buffer to `pending`, up to the batch size.
    fn take_lines(&mut self) {
        let with_offsets = matches!(self.input, Input::File(_));
        while self.pending.len() < self.batch_size {
            let Some((line, position)) = self.lines.next_line() else {
                break;
            };
            let mut offset = SourceMap::new();
            if with_offsets {
                offset.insert(POSITION_FIELD.into(), position.into());
            }
            let record = Record::new(
                self.topic.clone(),
                Some(Schema::string()),
                Value::String(line),
            );
            self.pending
                .push(SourceRecord::new(self.partition.clone(), offset, record));
        }
    }
}

/// The stored `{"position": n}` of `partition`, 0 when there is none.
///
/// A position that is not a non-negative integer is an
/// [`OffsetInvalid`](connect_api::ErrorKind::OffsetInvalid) error, so the
/// runtime's `offsets.invalid.policy` decides between failing and starting
/// over.
fn stored_position(partition: &SourceMap, context: &dyn SourceTaskContext) -> Result<u64> {
    let Some(offset) = context.offset_storage_reader().offset(partition) else {
        return Ok(0);
    };
    match offset.get(POSITION_FIELD) {
        None | Some(serde_json::Value::Null) => Ok(0),
        Some(p) => p.as_u64().ok_or_else(|| {
            ConnectError::offset_invalid(
                partition.clone(),
                format!(
                    "FileStreamSource: the '{POSITION_FIELD}' of stored offset {} for file {} \
                     is not a non-negative integer; reset the connector's offsets to read the \
                     file from the start",
                    serde_json::Value::Object(offset.clone()),
                    partition
                        .get(FILENAME_FIELD)
                        .and_then(serde_json::Value::as_str)
                        .unwrap_or_default(),
                ),
            )
        }),
    }
}

/// Where lines come from.
enum Input {
    File(FileInput),
    /// Standard input (any reader in unit tests): no offsets.
    Stream(Box<dyn AsyncRead + Send + Unpin>),
}

/// A tailed file, opened lazily so a missing file can be waited for.
struct FileInput {
    path: String,
    file: Option<tokio::fs::File>,
    /// Where to start reading when the file is (re)opened.
    resume_from: u64,
    warned_missing: bool,
}

impl Input {
    /// Read more bytes into `lines`; `false` when there is nothing new now.
    async fn read_into(&mut self, lines: &mut LineBuffer) -> Result<bool> {
        match self {
            Input::Stream(reader) => {
                let n = lines.fill_from(reader).await.map_err(|e| {
                    ConnectError::other("FileStreamSource: could not read standard input")
                        .with_source(e)
                })?;
                Ok(n > 0)
            }
            Input::File(input) => {
                if input.file.is_none() {
                    match input.open().await? {
                        Some((file, position)) => {
                            lines.reset(position);
                            input.file = Some(file);
                        }
                        None => return Ok(false),
                    }
                }
                let Some(file) = input.file.as_mut() else {
                    return Ok(false);
                };
                let n = lines.fill_from(file).await.map_err(|e| {
                    ConnectError::other(format!("FileStreamSource: could not read {}", input.path))
                        .with_source(e)
                })?;
                Ok(n > 0)
            }
        }
    }

    /// When idle, notice a file that shrank below what was read, and start
    /// over from its beginning on the next poll.
    async fn check_truncated(&mut self, lines: &LineBuffer) -> Result<()> {
        let Input::File(input) = self else {
            return Ok(());
        };
        let Some(file) = input.file.as_ref() else {
            return Ok(());
        };
        let len = match file.metadata().await {
            Ok(m) => m.len(),
            Err(e) => {
                return Err(ConnectError::other(format!(
                    "FileStreamSource: could not inspect {}",
                    input.path
                ))
                .with_source(e))
            }
        };
        if len < lines.read_end() {
            tracing::warn!(
                file = %input.path,
                length = len,
                position = lines.read_end(),
                "FileStreamSource: the file shrank (truncated?); reading it again from the start"
            );
            // Reopening gives a fresh handle at 0, with no seek in flight to
            // interrupt if this future is dropped.
            input.file = None;
            input.resume_from = 0;
        }
        Ok(())
    }
}

impl FileInput {
    /// Open the file at the resume position; `None` when it does not exist yet.
    async fn open(&mut self) -> Result<Option<(tokio::fs::File, u64)>> {
        let io_err = |what: &str, e: std::io::Error| {
            ConnectError::other(format!(
                "FileStreamSource: could not {what} {}; check that it is a readable file",
                self.path
            ))
            .with_source(e)
        };
        let mut file = match tokio::fs::File::open(&self.path).await {
            Ok(f) => f,
            Err(e) if e.kind() == IoErrorKind::NotFound => {
                if self.warned_missing {
                    tracing::debug!(file = %self.path, "FileStreamSource: file still missing");
                } else {
                    tracing::warn!(file = %self.path, "FileStreamSource: file not found, waiting for it to be created");
                    self.warned_missing = true;
                }
                return Ok(None);
            }
            Err(e) => return Err(io_err("open", e)),
        };
        self.warned_missing = false;
        let len = file
            .metadata()
            .await
            .map_err(|e| io_err("inspect", e))?
            .len();
        let mut position = self.resume_from;
        if position > len {
            tracing::warn!(
                file = %self.path,
                stored_position = position,
                length = len,
                "FileStreamSource: the file is shorter than the stored position (truncated or replaced?); reading it from the start"
            );
            position = 0;
        }
        if position > 0 {
            file.seek(SeekFrom::Start(position))
                .await
                .map_err(|e| io_err("seek in", e))?;
        }
        tracing::info!(file = %self.path, position, "FileStreamSource: reading file");
        Ok(Some((file, position)))
    }
}

/// Bytes read but not yet emitted as lines, with the file position of each.
///
/// One buffer is reused for the task's whole life: consumed lines are
/// compacted away before each read, and it grows only for lines longer than
/// [`READ_CHUNK`].
#[derive(Debug, Default)]
struct LineBuffer {
    buf: Vec<u8>,
    /// Index of the first byte not yet emitted.
    start: usize,
    /// Bytes before this index (from `start`) hold no newline: a long
    /// partial line is not scanned again on every read.
    scanned: usize,
    /// Stream position of `buf[0]`.
    base: u64,
}

impl LineBuffer {
    /// Forget everything; the next byte read is at `position`.
    fn reset(&mut self, position: u64) {
        self.buf.clear();
        self.start = 0;
        self.scanned = 0;
        self.base = position;
    }

    /// Position after the last emitted line.
    fn position(&self) -> u64 {
        self.base + self.start as u64
    }

    /// Position after the last byte read.
    fn read_end(&self) -> u64 {
        self.base + self.buf.len() as u64
    }

    /// Append what `reader` has; returns the number of bytes read (0 at EOF).
    /// Cancel-safe: `read_buf` reads nothing if its future is dropped.
    async fn fill_from<R: AsyncRead + Unpin>(&mut self, reader: &mut R) -> std::io::Result<usize> {
        self.compact();
        if self.buf.capacity() - self.buf.len() < READ_CHUNK / 4 {
            self.buf.reserve(READ_CHUNK);
        }
        reader.read_buf(&mut self.buf).await
    }

    fn compact(&mut self) {
        if self.start > 0 {
            self.buf.drain(..self.start);
            self.base += self.start as u64;
            self.scanned = self.scanned.saturating_sub(self.start);
            self.start = 0;
        }
    }

    /// The next complete line without its terminator, and the position
    /// after its terminator.
    fn next_line(&mut self) -> Option<(String, u64)> {
        let from = self.scanned.max(self.start);
        let Some(newline) = self.buf[from..].iter().position(|&b| b == b'\n') else {
            self.scanned = self.buf.len();
            return None;
        };
        let end = from + newline;
        let mut line = &self.buf[self.start..end];
        if let [rest @ .., b'\r'] = line {
            line = rest;
        }
        let text = String::from_utf8_lossy(line).into_owned();
        self.start = end + 1;
        self.scanned = self.start;
        Some((text, self.position()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Feed `chunks` one at a time, collecting every line as soon as it is
    /// complete.
    fn split(chunks: &[Vec<u8>]) -> Vec<(String, u64)> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let mut lines = LineBuffer::default();
        let mut out = Vec::new();
        for chunk in chunks {
            let mut reader: &[u8] = chunk;
            while !reader.is_empty() {
                rt.block_on(lines.fill_from(&mut reader)).unwrap();
            }
            while let Some(line) = lines.next_line() {
                out.push(line);
            }
        }
        out
    }

    #[test]
    fn terminators_and_partial_lines() {
        let got = split(&[b"a\r\nbb".to_vec(), b"b\n\ncc".to_vec()]);
        assert_eq!(
            got,
            [
                ("a".to_string(), 3),
                ("bbb".to_string(), 7),
                (String::new(), 8)
            ]
        );
    }

    #[test]
    fn cr_split_from_its_lf_is_still_one_terminator() {
        let got = split(&[b"x\r".to_vec(), b"\ny".to_vec()]);
        assert_eq!(got, [("x".to_string(), 3)]);
    }

    #[test]
    fn invalid_utf8_is_replaced_not_rejected() {
        let got = split(&[b"a\xffb\n".to_vec()]);
        assert_eq!(got, [("a\u{fffd}b".to_string(), 4)]);
    }

    #[test]
    fn lines_longer_than_a_read_chunk() {
        let long = vec![b'x'; READ_CHUNK * 3 + 7];
        let mut data = long.clone();
        data.push(b'\n');
        let got = split(&[data]);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].0.len(), long.len());
        assert_eq!(got[0].1, long.len() as u64 + 1);
    }

    #[tokio::test(start_paused = true)]
    async fn a_stream_yields_records_without_partition_or_offset() {
        let reader: &'static [u8] = b"one\r\ntwo\nthree";
        let input = Input::Stream(Box::new(reader));
        let mut running = Running::with_input("t".into(), 10, input, SourceMap::new());
        let records = running.poll().await.unwrap();
        let values: Vec<_> = records.iter().map(|r| r.record.value.clone()).collect();
        assert_eq!(values, [Value::from("one"), Value::from("two")]);
        for r in &records {
            assert!(r.source_partition.is_empty() && r.source_offset.is_empty());
            assert_eq!(r.record.value_schema, Some(Schema::string()));
        }
        // At end of input: the unterminated "three" is held back.
        assert!(running.poll().await.unwrap().is_empty());
    }

    /// Hands out `data` a few bytes at a time, each read first answering
    /// `Pending` once, as a slow disk or pipe would.
    struct Trickle {
        data: &'static [u8],
        ready: bool,
    }

    impl AsyncRead for Trickle {
        fn poll_read(
            mut self: std::pin::Pin<&mut Self>,
            cx: &mut std::task::Context<'_>,
            buf: &mut tokio::io::ReadBuf<'_>,
        ) -> std::task::Poll<std::io::Result<()>> {
            let was_ready = self.ready;
            self.ready = !was_ready;
            if !was_ready {
                cx.waker().wake_by_ref();
                return std::task::Poll::Pending;
            }
            let n = self.data.len().min(7).min(buf.remaining());
            buf.put_slice(&self.data[..n]);
            self.data = &self.data[n..];
            std::task::Poll::Ready(Ok(()))
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_dropped_poll_loses_and_repeats_nothing() {
        // The runtime may drop a pending poll (stop, pause); the next poll
        // must carry on exactly after the records handed out so far.
        let n = 200;
        let text: String = (0..n).map(|i| format!("l{i}\n")).collect();
        let reader = Trickle {
            data: Box::leak(text.into_bytes().into_boxed_slice()),
            ready: false,
        };
        let mut running = Running::with_input(
            "t".into(),
            10,
            Input::Stream(Box::new(reader)),
            SourceMap::new(),
        );
        let mut got = Vec::new();
        let mut dropped = 0;
        // Lost lines would make the loop wait forever: bound it.
        for _ in 0..10 * n {
            if got.len() >= n {
                break;
            }
            // Poll once and drop the future if it waits on a read; then let
            // one poll complete so the test makes progress.
            let ready = tokio::select! {
                biased;
                batch = running.poll() => Some(batch.unwrap()),
                () = std::future::ready(()) => None,
            };
            let batch = match ready {
                Some(batch) => batch,
                None => {
                    dropped += 1;
                    running.poll().await.unwrap()
                }
            };
            assert!(batch.len() <= 10);
            got.extend(batch.into_iter().map(|r| r.record.value));
        }
        let expected: Vec<Value> = (0..n).map(|i| Value::from(format!("l{i}"))).collect();
        assert_eq!(got, expected);
        assert!(dropped >= 5, "only {dropped} polls were dropped");
    }

    proptest! {
        /// However the bytes arrive, the complete lines and their end
        /// positions are those of the whole text; the unterminated tail is
        /// never emitted.
        #[test]
        fn chunking_does_not_change_lines(
            text in "[ab\r\n]{0,60}",
            cuts in proptest::collection::vec(0usize..60, 0..6),
        ) {
            let bytes = text.as_bytes();
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(bytes.len())).collect();
            cuts.sort_unstable();
            let mut chunks = Vec::new();
            let mut prev = 0;
            for c in cuts.into_iter().chain([bytes.len()]) {
                chunks.push(bytes[prev..c].to_vec());
                prev = c;
            }
            let mut expected = Vec::new();
            let mut pos = 0;
            for piece in text.split_inclusive('\n').filter(|p| p.ends_with('\n')) {
                pos += piece.len() as u64;
                let line = piece.strip_suffix('\n').unwrap_or(piece);
                expected.push((line.strip_suffix('\r').unwrap_or(line).to_string(), pos));
            }
            prop_assert_eq!(split(&chunks), expected);
        }
    }
}
