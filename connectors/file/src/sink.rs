//! FileStreamSink: appends each record's value to a file (or standard output).

use std::sync::Arc;

use async_trait::async_trait;
use connect_api::config::{ConfigKey, Importance};
use connect_api::sink::{SinkTask, SinkTaskContext, TopicPartitionOffsets};
use connect_api::values::write_java_string;
use connect_api::{
    ConfigDef, ConfigMap, ConfigType, ConnectError, Connector, ConnectorContext, Result,
    SinkConnector, SinkRecord, Value,
};
use tokio::io::{AsyncWrite, AsyncWriteExt, BufWriter};

use crate::{configured_file, plugin_version, FILE_CONFIG};

/// Capacity of the task's write buffer.
const WRITE_BUFFER: usize = 64 * 1024;

/// Sink connector writing one line per record to a file, or to standard
/// output when `file` is unset.
///
/// Its only key is `file` ([`FileStreamSinkConnector::definition`]); the
/// topics to read (`topics` / `topics.regex`) are the runtime's keys. Each
/// task gets the whole connector config.
///
/// ```
/// use connect_api::{Connector, SinkConnector};
/// use connect_file::FileStreamSinkConnector;
///
/// let connector = FileStreamSinkConnector::new();
/// let config = connect_api::ConfigMap::from([("file", "test.sink.txt"), ("topics", "connect-test")]);
/// assert!(connector.validate(&config).iter().all(|r| r.errors.is_empty()));
/// let _task = connector.create_task();
/// assert_eq!(FileStreamSinkConnector::CLASS, "org.apache.kafka.connect.file.FileStreamSinkConnector");
/// ```
#[derive(Debug, Default)]
pub struct FileStreamSinkConnector {
    config: Option<ConfigMap>,
}

impl FileStreamSinkConnector {
    /// Kafka's class name for this connector.
    pub const CLASS: &'static str = "org.apache.kafka.connect.file.FileStreamSinkConnector";

    /// An unstarted connector.
    pub fn new() -> Self {
        Self::default()
    }

    /// The keys this connector accepts.
    pub fn definition() -> ConfigDef {
        ConfigDef::new().define(
            ConfigKey::new(FILE_CONFIG, ConfigType::String)
                .optional()
                .importance(Importance::High)
                .doc("Destination filename. If not specified, the standard output will be used"),
        )
    }
}

#[async_trait]
impl Connector for FileStreamSinkConnector {
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
            ConnectError::other("FileStreamSinkConnector: task_configs called before start")
        })?;
        Ok(vec![config.clone(); max_tasks])
    }

    async fn stop(&mut self) -> Result<()> {
        self.config = None;
        Ok(())
    }
}

impl SinkConnector for FileStreamSinkConnector {
    fn create_task(&self) -> Box<dyn SinkTask> {
        Box::new(FileStreamSinkTask::new())
    }
}

/// The task of [`FileStreamSinkConnector`].
///
/// `put` appends one line per record: the value as Kafka's sink prints it
/// with Java's `String.valueOf` ([`connect_api::values::java_to_string`]: a
/// string raw, a struct as `Struct{a=1,b=x}`, a list as `[1, 2]`, a null
/// value as `null`). Each `put` renders its lines into a write buffer and
/// writes them out at its end (one write per batch, not per line; Kafka's
/// task writes each line as it goes), so a line is in the file as soon as
/// its batch is put, not at the next offset commit; `flush` (and so each
/// offset commit) also fsyncs the file, `stop` flushes and
/// closes it. The file is opened in append mode and created when missing,
/// so a restart keeps earlier lines (records redelivered after a crash may
/// appear twice: delivery is at-least-once).
///
/// ```
/// use connect_file::FileStreamSinkTask;
/// let _task = FileStreamSinkTask::new(); // started by the runtime
/// ```
#[derive(Default)]
pub struct FileStreamSinkTask {
    output: Option<Output>,
    /// Reused to render non-string values.
    scratch: String,
}

impl std::fmt::Debug for FileStreamSinkTask {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileStreamSinkTask")
            .field("destination", &self.output.as_ref().map(Output::name))
            .finish_non_exhaustive()
    }
}

impl FileStreamSinkTask {
    /// An unstarted task.
    pub fn new() -> Self {
        Self::default()
    }

    fn output(&mut self) -> Result<&mut Output> {
        self.output
            .as_mut()
            .ok_or_else(|| ConnectError::other("FileStreamSinkTask: used before start"))
    }
}

/// Where lines go.
enum Output {
    File {
        path: String,
        writer: BufWriter<tokio::fs::File>,
    },
    Stdout(BufWriter<tokio::io::Stdout>),
}

impl Output {
    fn name(&self) -> &str {
        match self {
            Output::File { path, .. } => path,
            Output::Stdout(_) => "stdout",
        }
    }

    fn writer(&mut self) -> &mut (dyn AsyncWrite + Send + Unpin) {
        match self {
            Output::File { writer, .. } => writer,
            Output::Stdout(writer) => writer,
        }
    }

    fn error(&self, what: &str, e: std::io::Error) -> ConnectError {
        ConnectError::other(format!("FileStreamSink: could not {what} {}", self.name()))
            .with_source(e)
    }

    async fn write(&mut self, bytes: &[u8]) -> Result<()> {
        match self.writer().write_all(bytes).await {
            Ok(()) => Ok(()),
            Err(e) => Err(self.error("write to", e)),
        }
    }

    /// Hand the buffered lines to the file (or stdout), without an fsync.
    async fn write_out(&mut self) -> Result<()> {
        match self.writer().flush().await {
            Ok(()) => Ok(()),
            Err(e) => Err(self.error("write to", e)),
        }
    }

    /// Write the buffer out and, for a file, fsync it.
    async fn flush(&mut self) -> Result<()> {
        self.write_out().await?;
        if let Output::File { writer, .. } = self {
            if let Err(e) = writer.get_ref().sync_data().await {
                return Err(self.error("fsync", e));
            }
        }
        Ok(())
    }
}

#[async_trait]
impl SinkTask for FileStreamSinkTask {
    async fn start(
        &mut self,
        config: &ConfigMap,
        _context: Arc<dyn SinkTaskContext>,
    ) -> Result<()> {
        let parsed = FileStreamSinkConnector::definition().parse(config)?;
        self.output = Some(match configured_file(&parsed) {
            None => Output::Stdout(BufWriter::with_capacity(WRITE_BUFFER, tokio::io::stdout())),
            Some(path) => {
                let file = tokio::fs::OpenOptions::new()
                    .append(true)
                    .create(true)
                    .open(&path)
                    .await
                    .map_err(|e| {
                        ConnectError::other(format!(
                            "FileStreamSink: could not open or create {path}; check that its \
                             directory exists and is writable"
                        ))
                        .with_source(e)
                    })?;
                tracing::info!(file = %path, "FileStreamSink: appending to file");
                Output::File {
                    path,
                    writer: BufWriter::with_capacity(WRITE_BUFFER, file),
                }
            }
        });
        Ok(())
    }

    async fn put(&mut self, records: &[SinkRecord]) -> Result<()> {
        let mut scratch = std::mem::take(&mut self.scratch);
        let output = self.output()?;
        for record in records {
            let line = match &record.record.value {
                Value::String(s) => s.as_str(),
                other => {
                    scratch.clear();
                    // Writing to a String cannot fail.
                    let _ = write_java_string(&mut scratch, other);
                    scratch.as_str()
                }
            };
            output.write(line.as_bytes()).await?;
            output.write(b"\n").await?;
        }
        // A batch's lines become visible now: holding the buffer's tail
        // until the next offset commit (60 s by default) left the last
        // lines of a drained backlog waiting for it.
        if !records.is_empty() {
            output.write_out().await?;
        }
        self.scratch = scratch;
        Ok(())
    }

    async fn flush(&mut self, _offsets: &TopicPartitionOffsets) -> Result<()> {
        self.output()?.flush().await
    }

    async fn stop(&mut self) -> Result<()> {
        let Some(mut output) = self.output.take() else {
            return Ok(());
        };
        output.flush().await?;
        if let Output::File { writer, .. } = &mut output {
            // Closing the file; for stdout, shutdown would only flush again.
            if let Err(e) = writer.shutdown().await {
                return Err(output.error("close", e));
            }
        }
        Ok(())
    }
}
