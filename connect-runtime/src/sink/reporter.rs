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

use connect_api::converter::Converter;
use connect_api::sink::ErrantRecordReporter;
use connect_api::{ConnectError, Result, SinkRecord};
use futures::future::BoxFuture;
use tokio::sync::oneshot;

use crate::errors::dlq::{self, DeadLetter, DeadLetterQueue, Origin};
use crate::errors::{ErrorConfig, ErrorPipeline, Failure, Stage};
use crate::kafka::{Admin, ConsumedRecord, DeliverySink, DeliveryWaiter, KafkaError};
use crate::status::TaskId;

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
    dlq: Option<DeadLetterQueue>,
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
        dlq: Option<DeadLetterQueue>,
        acks: Arc<DeliveryWaiter>,
        json: Box<dyn Converter>,
    ) -> Self {
        Reporter {
            id,
            pipeline: Mutex::new(ErrorPipeline::new(errors.clone())),
            errors,
            dlq,
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

    /// Create the DLQ topic with `admin`, when there is a DLQ (at task
    /// start, as Kafka).
    pub(crate) async fn create_dlq_topic(&self, admin: &dyn Admin) -> Result<()> {
        match &self.dlq {
            Some(dlq) => dlq.create_topic(admin).await,
            None => Ok(()),
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
        let at = (raw.topic.clone(), raw.partition, raw.offset);
        self.send_letter(at, failure, || DeadLetter::raw(raw))
    }

    /// Log the failure of the record consumed `at`, then send the letter
    /// `letter` makes to the DLQ (made only when there is one).
    fn send_letter(
        self: &Arc<Self>,
        at: RawKey,
        failure: &Failure,
        letter: impl FnOnce() -> DeadLetter,
    ) -> oneshot::Receiver<std::result::Result<(), KafkaError>> {
        let (topic, partition, offset) = &at;
        let logged = dlq::log_failure(&self.id, &self.errors, failure, || {
            format!("{topic}-{partition}@{offset}")
        });
        if logged {
            if let Ok(mut pl) = self.pipeline.lock() {
                pl.record_logged();
            }
        }
        if self.dlq.is_none() {
            let (tx, rx) = oneshot::channel();
            let _ = tx.send(Ok(()));
            return rx;
        }
        let origin = Origin::Consumed {
            topic,
            partition: *partition,
            offset: *offset,
        };
        let letter = letter().with_context(&self.errors, &self.id, origin, failure);
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
    fn try_send(&self, letter: &DeadLetter, token: u64) -> Sent {
        let Some((producer, topic)) = self
            .dlq
            .as_ref()
            .and_then(|dlq| Some((dlq.producer()?, dlq.topic())))
        else {
            return Sent::Done;
        };
        match producer.send(&letter.out(topic), token) {
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
    async fn send_when_room(&self, letter: DeadLetter, token: u64) {
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
        // Made only when a DLQ is configured: the batch's raw bytes when
        // it still has them; otherwise the record rendered as JSON with
        // schemas.
        let letter = || {
            let raw = reporter.raw.lock().ok();
            match raw.as_ref().and_then(|r| r.get(&key)) {
                Some(raw) => DeadLetter::raw(raw),
                None => match reporter.json.lock() {
                    Ok(mut json) => DeadLetter::rendered(json.as_mut(), &record.record),
                    Err(_) => DeadLetter::default(),
                },
            }
        };
        let rx = reporter.send_letter(key.clone(), &failure, letter);
        Box::pin(async move {
            match rx.await {
                Ok(Ok(())) => Ok(()),
                Ok(Err(e)) => Err(ConnectError::from(e).context("dead letter queue send failed")),
                Err(_) => Err(ConnectError::other("dead letter queue producer went away")),
            }
        })
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

    use bytes::Bytes;
    use connect_api::config::ConfigMap;

    use super::*;
    use crate::converters::json::JsonConverter;
    use crate::errors::Tolerance;
    use crate::kafka::memory::MemoryKafka;
    use crate::kafka::{NewTopic, TimestampType};

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
        let errors = ErrorConfig {
            tolerance: Tolerance::All,
            dlq_topic: "dlq".into(),
            ..ErrorConfig::default()
        };
        let dlq = DeadLetterQueue::open(&kafka, &errors, &config, acks.clone(), true).unwrap();
        let id = TaskId {
            connector: "sink".into(),
            task: 0,
        };
        let reporter = Arc::new(Reporter::new(
            id,
            errors,
            dlq,
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
