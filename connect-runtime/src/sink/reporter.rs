//! The sink's dead letter queue and errant-record reporter (KIP-610).
//!
//! Failures in the converters and transforms (raised by the runtime) and
//! failures the task reports through `ErrantRecordReporter` (raised by the
//! task during `put`) take the same path: tolerance check, error log, DLQ
//! with the original raw key, value, headers and timestamp. Offsets are not
//! committed while a DLQ send is outstanding, and a DLQ send that fails
//! fails the task: a record that was neither written nor dead-lettered
//! must be consumed again.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use connect_api::converter::{Converter, Serialized};
use connect_api::sink::ErrantRecordReporter;
use connect_api::{ConnectError, Result, SinkRecord};
use futures::future::BoxFuture;
use tokio::sync::oneshot;

use crate::errors::dlq::{self, Origin};
use crate::errors::{ErrorConfig, ErrorPipeline, Failure, Stage};
use crate::kafka::{ConsumedRecord, DeliverySink, DeliveryWaiter, KafkaError, OutRecord, Producer};
use crate::status::TaskId;

/// What goes to the DLQ for one failed record (owned, so a send refused by
/// a full queue can be retried later).
struct Letter {
    key: Option<Bytes>,
    value: Option<Bytes>,
    timestamp: Option<i64>,
    headers: Vec<(String, Option<Vec<u8>>)>,
}

/// Outcome of one send attempt.
#[derive(Debug, PartialEq, Eq)]
enum Sent {
    /// Queued, or refused for good (reported through the acks).
    Done,
    /// The producer's queue is full: try again once acks make room.
    QueueFull,
}

/// The raw record a sink record came from, kept for the DLQ.
pub(crate) type RawKey = (Arc<str>, i32, i64);

/// Shared by the task loop and the task (through `SinkTaskContext`).
pub(crate) struct Reporter {
    id: TaskId,
    errors: ErrorConfig,
    pipeline: Mutex<ErrorPipeline>,
    producer: Option<Box<dyn Producer>>,
    acks: Arc<DeliveryWaiter>,
    next_token: std::sync::atomic::AtomicU64,
    /// Raw records of the batch being delivered, by original coordinates.
    raw: Mutex<HashMap<RawKey, ConsumedRecord>>,
    /// Renders a record whose raw bytes are gone (reported after its batch).
    json: Mutex<Box<dyn Converter>>,
    /// A failure that must stop the task (tolerance none in `put`).
    fatal: Mutex<Option<ConnectError>>,
}

impl Reporter {
    pub(crate) fn new(
        id: TaskId,
        errors: ErrorConfig,
        producer: Option<Box<dyn Producer>>,
        acks: Arc<DeliveryWaiter>,
        json: Box<dyn Converter>,
    ) -> Self {
        Reporter {
            id,
            pipeline: Mutex::new(ErrorPipeline::new(errors.clone())),
            errors,
            producer,
            acks,
            next_token: Default::default(),
            raw: Mutex::new(HashMap::new()),
            json: Mutex::new(json),
            fatal: Mutex::new(None),
        }
    }

    /// The counters of the reporter's error pipeline.
    pub(crate) fn stats(&self) -> crate::errors::ErrorStats {
        self.pipeline.lock().map(|p| p.stats()).unwrap_or_default()
    }

    /// Whether a task-reported failure has to fail the task, and why.
    pub(crate) fn take_fatal(&self) -> Option<ConnectError> {
        self.fatal.lock().ok()?.take()
    }

    /// Replace the raw records kept for the current batch.
    pub(crate) fn set_batch(&self, records: impl IntoIterator<Item = ConsumedRecord>) {
        if let Ok(mut raw) = self.raw.lock() {
            raw.clear();
            raw.extend(
                records
                    .into_iter()
                    .map(|r| ((r.topic.clone(), r.partition, r.offset), r)),
            );
        }
    }

    /// Wait until every DLQ send is acknowledged; an error if one failed.
    pub(crate) async fn wait_idle(&self) -> Result<()> {
        self.acks.idle(None).await.map_err(|failure| {
            ConnectError::other(format!(
                "the dead letter queue '{}' rejected a record ({failure}); stopping so that no record is lost",
                self.errors.dlq_topic
            ))
        })
    }

    /// Report a tolerated failure of a consumed record: log, then DLQ with
    /// the raw bytes. Returns a future resolving when the DLQ has it.
    pub(crate) fn dead_letter(
        self: &Arc<Self>,
        raw: &ConsumedRecord,
        failure: &Failure,
    ) -> oneshot::Receiver<std::result::Result<(), KafkaError>> {
        self.log(failure, || {
            format!("{}-{}@{}", raw.topic, raw.partition, raw.offset)
        });
        if self.producer.is_none() {
            let (tx, rx) = oneshot::channel();
            let _ = tx.send(Ok(()));
            return rx;
        }
        let mut headers: Vec<(String, Option<Vec<u8>>)> = raw
            .headers
            .iter()
            .map(|(k, v)| (k.clone(), v.as_ref().map(|b| b.to_vec())))
            .collect();
        if self.errors.dlq_context_headers {
            dlq::append_context_headers(
                &mut headers,
                &self.id.connector,
                self.id.task,
                Origin::Consumed {
                    topic: &raw.topic,
                    partition: raw.partition,
                    offset: raw.offset,
                },
                failure,
            );
        }
        let letter = Letter {
            key: raw.key.clone(),
            value: raw.value.clone(),
            timestamp: raw.timestamp,
            headers,
        };
        let token = self.next_token.fetch_add(1, Ordering::Relaxed);
        self.acks.sending();
        let rx = self.acks.watch(token);
        if let Ok(mut pl) = self.pipeline.lock() {
            pl.record_dlq_send(false);
        }
        if self.try_send(&letter, token) == Sent::QueueFull {
            // Wait for room off the caller's path: this is called from
            // synchronous code on a runtime thread, which must not sleep.
            match tokio::runtime::Handle::try_current() {
                Ok(runtime) => {
                    let me = self.clone();
                    runtime.spawn(async move { me.send_when_room(letter, token).await });
                }
                Err(_) => self.acks.delivered(
                    token,
                    Err(KafkaError::retriable(
                        "the DLQ producer queue is full and no runtime can wait for room",
                    )),
                ),
            }
        }
        rx
    }

    /// One attempt to queue `letter`; a refusal other than a full queue is
    /// reported through the acks, so the waiting future resolves.
    fn try_send(&self, letter: &Letter, token: u64) -> Sent {
        let Some(producer) = &self.producer else {
            return Sent::Done;
        };
        let out = OutRecord {
            topic: &self.errors.dlq_topic,
            partition: None,
            key: letter.key.as_deref(),
            value: letter.value.as_deref(),
            timestamp: letter.timestamp,
            headers: &letter.headers,
        };
        match producer.send(&out, token) {
            Ok(()) => Sent::Done,
            Err(crate::kafka::SendError::QueueFull) => Sent::QueueFull,
            Err(crate::kafka::SendError::Kafka(e)) => {
                self.acks.delivered(token, Err(e));
                Sent::Done
            }
        }
    }

    /// Retry a send refused by a full queue until there is room: acks of
    /// earlier sends make it. As long as it waits, the task's next commit
    /// waits too (nothing past the record is committed); Kafka's DLQ
    /// producer likewise blocks on a full buffer. The wait starts at 1 ms
    /// and grows to 100 ms between tries.
    async fn send_when_room(&self, letter: Letter, token: u64) {
        let mut pause = std::time::Duration::from_millis(1);
        let started = tokio::time::Instant::now();
        let mut warned = false;
        loop {
            tokio::time::sleep(pause).await;
            if self.try_send(&letter, token) == Sent::Done {
                return;
            }
            pause = (pause * 2).min(std::time::Duration::from_millis(100));
            if !warned && started.elapsed() >= std::time::Duration::from_secs(1) {
                warned = true;
                tracing::warn!(task = %self.id, topic = %self.errors.dlq_topic,
                    "the dead letter queue producer's queue has been full for 1 s; waiting for room");
            }
        }
    }

    fn log(&self, failure: &Failure, describe: impl FnOnce() -> String) {
        if !self.errors.log_enable {
            return;
        }
        if let Ok(mut pl) = self.pipeline.lock() {
            pl.record_logged();
        }
        let id = &self.id;
        if self.errors.log_include_messages {
            tracing::error!(task = %id, stage = %failure.stage, executing = %failure.executing,
                error = %failure.error, record = %describe(), "Error encountered in task {id}");
        } else {
            tracing::error!(task = %id, stage = %failure.stage, executing = %failure.executing,
                error = %failure.error, "Error encountered in task {id}");
        }
    }
}

/// The task-facing reporter: a `put` failure the task chose to report.
pub(crate) struct TaskReporter(pub(crate) Arc<Reporter>);

impl ErrantRecordReporter for TaskReporter {
    fn report(&self, record: &SinkRecord, error: &ConnectError) -> BoxFuture<'static, Result<()>> {
        let reporter = &self.0;
        let err = ConnectError::new(error.kind().clone(), error.message().to_string());
        let tolerated = reporter
            .pipeline
            .lock()
            .map_err(|_| ConnectError::other("error pipeline poisoned"))
            .and_then(|mut p| p.tolerate(Stage::TaskPut, "SinkTask::put", err, 1));
        let failure = match tolerated {
            Ok(f) => f,
            Err(e) => {
                let msg = e.to_string();
                if let Ok(mut f) = reporter.fatal.lock() {
                    f.get_or_insert(e);
                }
                return Box::pin(async move { Err(ConnectError::other(msg)) });
            }
        };
        let key: RawKey = (
            record.original_topic.clone(),
            record.original_kafka_partition,
            record.original_kafka_offset,
        );
        let raw = reporter.raw.lock().ok().and_then(|r| r.get(&key).cloned());
        let raw = raw.unwrap_or_else(|| render(reporter, record));
        let rx = reporter.dead_letter(&raw, &failure);
        Box::pin(async move {
            match rx.await {
                Ok(Ok(())) => Ok(()),
                Ok(Err(e)) => Err(ConnectError::from(e).context("dead letter queue send failed")),
                Err(_) => Err(ConnectError::other("dead letter queue producer went away")),
            }
        })
    }
}

/// A raw stand-in for a record whose bytes are gone: JSON with schemas.
fn render(reporter: &Reporter, record: &SinkRecord) -> ConsumedRecord {
    let r = &record.record;
    let mut key = Vec::new();
    let mut value = Vec::new();
    let (mut has_key, mut has_value) = (false, false);
    if let Ok(mut json) = reporter.json.lock() {
        has_key = json
            .from_connect_data(
                &r.topic,
                &r.headers,
                r.key_schema.as_ref(),
                &r.key,
                &mut key,
            )
            .is_ok_and(|w| w == Serialized::Bytes);
        has_value = json
            .from_connect_data(
                &r.topic,
                &r.headers,
                r.value_schema.as_ref(),
                &r.value,
                &mut value,
            )
            .is_ok_and(|w| w == Serialized::Bytes);
    }
    ConsumedRecord {
        topic: record.original_topic.clone(),
        partition: record.original_kafka_partition,
        offset: record.original_kafka_offset,
        timestamp: r.timestamp,
        timestamp_type: crate::kafka::TimestampType::CreateTime,
        key: has_key.then(|| Bytes::from(key)),
        value: has_value.then(|| Bytes::from(value)),
        headers: Vec::new(),
    }
}

/// Whether a reporter is offered to the task: Kafka offers one only when a
/// DLQ or error logging is configured.
pub(crate) fn reporter_enabled(errors: &ErrorConfig) -> bool {
    !errors.dlq_topic.is_empty() || errors.log_enable
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use connect_api::config::ConfigMap;

    use super::*;
    use crate::converters::json::JsonConverter;
    use crate::errors::Tolerance;
    use crate::kafka::memory::MemoryKafka;
    use crate::kafka::{KafkaCluster, NewTopic, TimestampType};

    fn raw(offset: i64) -> ConsumedRecord {
        ConsumedRecord {
            topic: Arc::from("in"),
            partition: 0,
            offset,
            timestamp: Some(1),
            timestamp_type: TimestampType::CreateTime,
            key: None,
            value: Some(Bytes::from(format!("bad {offset}"))),
            headers: Vec::new(),
        }
    }

    /// On a single-threaded runtime the delivery task only runs when the
    /// reporter yields: a reporter that slept on a full queue (it once did)
    /// would never see room and fail every send after the first.
    #[tokio::test(flavor = "current_thread")]
    async fn a_full_dlq_queue_is_waited_out_without_blocking_the_thread() {
        full_dlq_queue_waited_out(Duration::from_millis(5)).await;
    }

    /// A queue that stays full for longer than a second (a slow broker) is
    /// waited out too: the task used to fail after 1 s.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_dlq_queue_full_for_over_a_second_is_waited_out() {
        full_dlq_queue_waited_out(Duration::from_millis(1300)).await;
    }

    /// Three DLQ sends through a queue of one with `ack_delay` per ack.
    async fn full_dlq_queue_waited_out(ack_delay: Duration) {
        let kafka = MemoryKafka::new();
        kafka.create_topic(&NewTopic::new("dlq", 1)).unwrap();
        kafka.set_ack_delay(ack_delay);
        let acks = Arc::new(DeliveryWaiter::default());
        let config = ConfigMap::from([("queue.buffering.max.messages", "1")]);
        let producer = kafka.producer(&config, acks.clone()).unwrap();
        let errors = ErrorConfig {
            tolerance: Tolerance::All,
            dlq_topic: "dlq".into(),
            ..ErrorConfig::default()
        };
        let id = TaskId {
            connector: "sink".into(),
            task: 0,
        };
        let reporter = Arc::new(Reporter::new(
            id,
            errors,
            Some(producer),
            acks,
            Box::new(JsonConverter::new()),
        ));
        let failure = Failure {
            stage: Stage::ValueConverter,
            executing: "JsonConverter".into(),
            error: ConnectError::data("not json"),
            attempts: 1,
        };
        let waits: Vec<_> = (0..3)
            .map(|i| reporter.dead_letter(&raw(i), &failure))
            .collect();
        for (i, wait) in waits.into_iter().enumerate() {
            let sent = wait.await.expect("the send resolves");
            assert!(sent.is_ok(), "send {i}: {sent:?}");
        }
        reporter.wait_idle().await.unwrap();
        let values: Vec<_> = kafka
            .records("dlq", 0)
            .into_iter()
            .filter_map(|r| r.value)
            .collect();
        assert_eq!(values.len(), 3);
        assert!(values.contains(&Bytes::from("bad 2")));
    }
}
