//! Tiny plugins the harness tests drive: a counter source that resumes
//! from its offsets and a sink that buffers until flush.

#![allow(dead_code, unreachable_pub)] // each test crate uses a different part

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use connect_api::config::{ConfigDef, ConfigMap};
use connect_api::connector::{Connector, ConnectorContext, SinkConnector, SourceConnector};
use connect_api::sink::{SinkTask, SinkTaskContext, TopicPartitionOffsets};
use connect_api::source::{RecordMetadata, SourceTask, SourceTaskContext};
use connect_api::{
    ConnectError, Record, Result, Schema, SinkRecord, SourceMap, SourceRecord, Value,
};

pub fn counter_partition() -> SourceMap {
    let mut p = SourceMap::new();
    p.insert("counter".into(), "main".into());
    p
}

pub fn offset(n: i64) -> SourceMap {
    let mut o = SourceMap::new();
    o.insert("n".into(), n.into());
    o
}

/// One `commit_record`: the counter value and (partition, offset) when written.
pub type Ack = (i64, Option<(i32, i64)>);

/// What the counter's tasks saw from the runtime, shared with the test.
#[derive(Default, Clone)]
pub struct CounterLog {
    pub acks: Arc<Mutex<Vec<Ack>>>,
    pub ack_offsets: Arc<Mutex<Vec<SourceMap>>>,
    pub commits: Arc<Mutex<usize>>,
    pub starts: Arc<Mutex<usize>>,
}

/// Emits `v<n>` for n = next.. up to `count` (config), `batch` per poll,
/// on `topic`; resumes after the stored `{"n": last}`.
#[derive(Default, Clone)]
pub struct CounterSource {
    pub log: CounterLog,
    config: ConfigMap,
}

impl CounterSource {
    pub fn new(log: CounterLog) -> Self {
        CounterSource {
            log,
            config: ConfigMap::new(),
        }
    }
}

pub struct CounterTask {
    log: CounterLog,
    next: i64,
    count: i64,
    batch: i64,
    fail_commits: i64,
    fail_commit_records: i64,
    topic: String,
    partition: Arc<SourceMap>,
}

impl CounterTask {
    pub fn new(log: CounterLog) -> Self {
        CounterTask {
            log,
            next: 0,
            count: 0,
            batch: 5,
            fail_commits: 0,
            fail_commit_records: 0,
            topic: String::new(),
            partition: Arc::new(counter_partition()),
        }
    }
}

fn int(config: &ConfigMap, key: &str, default: i64) -> Result<i64> {
    match config.get(key) {
        None => Ok(default),
        Some(v) => v
            .parse()
            .map_err(|_| ConnectError::config(key, format!("'{v}' is not an integer"))),
    }
}

#[async_trait]
impl SourceTask for CounterTask {
    async fn start(&mut self, config: &ConfigMap, ctx: Arc<dyn SourceTaskContext>) -> Result<()> {
        self.count = int(config, "count", 10)?;
        self.batch = int(config, "batch", 5)?.max(1);
        self.fail_commits = int(config, "fail.commits", 0)?;
        self.fail_commit_records = int(config, "fail.commit.records", 0)?;
        self.topic = config
            .get("topic")
            .cloned()
            .unwrap_or_else(|| "counts".into());
        if let Some(o) = ctx.offset_storage_reader().offset(&self.partition) {
            self.next = o.get("n").and_then(|n| n.as_i64()).map_or(0, |n| n + 1);
        }
        *self.log.starts.lock().unwrap() += 1;
        Ok(())
    }

    async fn poll(&mut self) -> Result<Vec<SourceRecord>> {
        if self.next >= self.count {
            // Idle like a real source: wait a little, return nothing.
            tokio::time::sleep(Duration::from_millis(100)).await;
            return Ok(Vec::new());
        }
        let end = (self.next + self.batch).min(self.count);
        let records = (self.next..end)
            .map(|n| {
                SourceRecord::new(
                    self.partition.clone(),
                    offset(n),
                    Record::new(
                        self.topic.as_str(),
                        Some(Schema::string()),
                        Value::from(format!("v{n}")),
                    )
                    .with_key(Some(Schema::int64()), Value::Int64(n))
                    .with_timestamp(1_700_000_000_000 + n),
                )
            })
            .collect();
        self.next = end;
        Ok(records)
    }

    async fn commit_record(
        &mut self,
        record: &SourceRecord,
        md: Option<&RecordMetadata>,
    ) -> Result<()> {
        let n = record.record.key.as_i64().unwrap_or(-1);
        self.log
            .acks
            .lock()
            .unwrap()
            .push((n, md.map(|m| (m.partition, m.offset))));
        self.log
            .ack_offsets
            .lock()
            .unwrap()
            .push(record.source_offset.clone());
        if self.fail_commit_records > 0 {
            self.fail_commit_records -= 1;
            return Err(ConnectError::other("the source system refused the ack"));
        }
        Ok(())
    }

    async fn commit(&mut self) -> Result<()> {
        *self.log.commits.lock().unwrap() += 1;
        if self.fail_commits > 0 {
            self.fail_commits -= 1;
            return Err(ConnectError::other("the source system refused the commit"));
        }
        Ok(())
    }

    async fn stop(&mut self) -> Result<()> {
        Ok(())
    }
}

#[async_trait]
impl Connector for CounterSource {
    fn version(&self) -> String {
        "1.0".into()
    }
    fn config_def(&self) -> ConfigDef {
        ConfigDef::new()
    }
    async fn start(&mut self, config: &ConfigMap, _: Arc<dyn ConnectorContext>) -> Result<()> {
        self.config = config.clone();
        Ok(())
    }
    async fn task_configs(&mut self, _max: usize) -> Result<Vec<ConfigMap>> {
        Ok(vec![self.config.clone()])
    }
    async fn stop(&mut self) -> Result<()> {
        Ok(())
    }
}

impl SourceConnector for CounterSource {
    fn create_task(&self) -> Box<dyn SourceTask> {
        Box::new(CounterTask::new(self.log.clone()))
    }
}

/// What the buffering sink wrote, shared with the test.
#[derive(Default, Clone)]
pub struct Written(pub Arc<Mutex<Vec<String>>>);

impl Written {
    pub fn values(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
}

/// Buffers `put` records and writes them on `flush`. Values `bad` are
/// reported as errant; the first `fail.puts` non-empty puts fail
/// retriably after asking for a 250 ms timeout.
#[derive(Default)]
pub struct BufferingSink {
    pub written: Written,
    config: ConfigMap,
}

impl BufferingSink {
    pub fn new(written: Written) -> Self {
        BufferingSink {
            written,
            config: ConfigMap::new(),
        }
    }
}

pub struct BufferingTask {
    written: Written,
    buffer: Vec<String>,
    fail_puts: i64,
    fail_flushes: i64,
    ctx: Option<Arc<dyn SinkTaskContext>>,
}

impl BufferingTask {
    pub fn new(written: Written) -> Self {
        BufferingTask {
            written,
            buffer: Vec::new(),
            fail_puts: 0,
            fail_flushes: 0,
            ctx: None,
        }
    }
}

#[async_trait]
impl SinkTask for BufferingTask {
    async fn start(&mut self, config: &ConfigMap, ctx: Arc<dyn SinkTaskContext>) -> Result<()> {
        self.fail_puts = int(config, "fail.puts", 0)?;
        self.fail_flushes = int(config, "fail.flushes", 0)?;
        self.ctx = Some(ctx);
        Ok(())
    }

    async fn put(&mut self, records: &[SinkRecord]) -> Result<()> {
        if self.fail_puts > 0 && !records.is_empty() {
            self.fail_puts -= 1;
            if let Some(c) = &self.ctx {
                c.timeout(250);
            }
            return Err(ConnectError::retriable("the store is busy"));
        }
        for r in records {
            let v = r.record.value.to_string();
            if v == "bad" {
                if let Some(rep) = self.ctx.as_ref().and_then(|c| c.errant_record_reporter()) {
                    rep.report(r, &ConnectError::data("bad value")).await?;
                    continue;
                }
                return Err(ConnectError::data("bad value and no reporter"));
            }
            self.buffer.push(v);
        }
        Ok(())
    }

    async fn flush(&mut self, _: &TopicPartitionOffsets) -> Result<()> {
        if self.fail_flushes > 0 && !self.buffer.is_empty() {
            // The write failed: what was buffered never reached the store.
            self.fail_flushes -= 1;
            self.buffer.clear();
            return Err(ConnectError::other("the store rejected the write"));
        }
        self.written.0.lock().unwrap().append(&mut self.buffer);
        Ok(())
    }

    async fn stop(&mut self) -> Result<()> {
        Ok(())
    }
}

#[async_trait]
impl Connector for BufferingSink {
    fn version(&self) -> String {
        "1.0".into()
    }
    fn config_def(&self) -> ConfigDef {
        ConfigDef::new()
    }
    async fn start(&mut self, config: &ConfigMap, _: Arc<dyn ConnectorContext>) -> Result<()> {
        self.config = config.clone();
        Ok(())
    }
    async fn task_configs(&mut self, _max: usize) -> Result<Vec<ConfigMap>> {
        Ok(vec![self.config.clone()])
    }
    async fn stop(&mut self) -> Result<()> {
        Ok(())
    }
}

impl SinkConnector for BufferingSink {
    fn create_task(&self) -> Box<dyn SinkTask> {
        Box::new(BufferingTask::new(self.written.clone()))
    }
}
