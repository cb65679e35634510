//! Delivery outcomes: acks from the producer into the tracker, and
//! retriable failures sent again (a missing topic included) until they are
//! written or fail for good.

use super::*;

/// Delivery outcomes collected from the producer's thread.
#[derive(Default)]
pub(super) struct AckQueue {
    pub(super) acks: Mutex<Vec<(u64, std::result::Result<AckMeta, KafkaError>)>>,
    pub(super) notify: Notify,
}

/// Records being sent again after a retriable delivery failure: per
/// token, the attempts so far and when the first one failed, so the waits
/// grow up to `errors.retry.delay.max.ms` and end at
/// `errors.retry.timeout` (0, the default, never resends; -1 never ends).
#[derive(Debug, Default)]
pub(super) struct Resends(std::collections::HashMap<u64, (u32, tokio::time::Instant)>);

impl Resends {
    /// The wait before sending `token` again, or `None` once the retry
    /// timeout is used up.
    pub(super) fn delay(&mut self, token: u64, errors: &ErrorConfig) -> Option<Duration> {
        let timeout = errors.retry_timeout_ms;
        if timeout == 0 {
            return None;
        }
        let now = tokio::time::Instant::now();
        let (attempts, first) = self.0.entry(token).or_insert((0, now));
        *attempts += 1;
        if timeout > 0 && now.duration_since(*first) >= Duration::from_millis(timeout as u64) {
            return None;
        }
        let backoff = crate::kafka::time::Backoff::new(
            Duration::from_millis(300),
            Duration::from_millis(errors.retry_delay_max_ms.max(1)),
        );
        Some(backoff.delay(*attempts - 1))
    }

    /// `token` is settled (written, dead-lettered or failed for good).
    pub(super) fn settled(&mut self, token: u64) {
        if !self.0.is_empty() {
            self.0.remove(&token);
        }
    }
}

#[derive(Debug, Clone, Copy)]
pub(super) struct AckMeta {
    partition: i32,
    offset: i64,
    timestamp: Option<i64>,
}

impl DeliverySink for AckQueue {
    fn delivered(&self, token: u64, result: std::result::Result<Delivered<'_>, KafkaError>) {
        // The topic is known from the record kept in the tracker, so nothing
        // here allocates per ack.
        let meta = result.map(|d| AckMeta {
            partition: d.partition,
            offset: d.offset,
            timestamp: d.timestamp,
        });
        let first = match self.acks.lock() {
            Ok(mut q) => {
                q.push((token, meta));
                q.len() == 1
            }
            Err(_) => true,
        };
        // One wake-up per batch of acks: the loop drains the whole queue.
        if first {
            self.notify.notify_one();
        }
    }
}

impl WorkerSourceTask {
    /// Route delivery outcomes: acks complete submissions and call
    /// `commit_record`; failures go through the error pipeline.
    pub(super) async fn process_acks(&mut self) -> Result<()> {
        {
            let Ok(mut q) = self.acks.acks.lock() else {
                return Err(ConnectError::other("ack queue poisoned"));
            };
            if q.is_empty() {
                return Ok(());
            }
            mem::swap(&mut *q, &mut self.drained);
        }
        let mut drained = mem::take(&mut self.drained);
        let mut written = 0;
        for (token, result) in drained.drain(..) {
            match result {
                Ok(meta) => {
                    self.resends.settled(token);
                    let Some(done) = self.tracker.complete(token) else {
                        continue;
                    };
                    if !done.dead_letter {
                        written += 1;
                    }
                    // Records let go at send time have nothing left to do
                    // here: their offsets are in the tracker already.
                    if let Some(mut record) = done.record {
                        if self.commit_records {
                            let md = (!done.dead_letter).then(|| {
                                RecordMetadata::new(
                                    record.record.topic.clone(),
                                    meta.partition,
                                    meta.offset,
                                    meta.timestamp,
                                )
                            });
                            self.commit_record(&record, md.as_ref()).await;
                        }
                        if !done.dead_letter {
                            self.tracker
                                .set_offset(token, mem::take(&mut record.source_offset));
                            self.topic_delivered(&record.record.topic);
                        }
                    }
                }
                // A failed task sends nothing more: the record stays
                // unacknowledged and is polled again after a restart.
                // Exactly once: a record that did not reach Kafka fails
                // the transaction, which is aborted with the task.
                Err(e) if self.transactions.is_some() && !self.failed => {
                    return Err(ConnectError::from(e).context(format!(
                        "source task {}: a record of the open transaction was not delivered",
                        self.settings.id
                    )));
                }
                Err(e) if self.failed => {
                    tracing::debug!(task = %self.settings.id, error = %e,
                        "delivery failed after the task failed; its offset is not committed");
                }
                Err(e) => self.delivery_failed(token, e).await?,
            }
        }
        self.drained = drained;
        self.settings.metrics.record_write(written);
        Ok(())
    }

    /// Tell the task a record is done. A notification, as in Kafka: an error
    /// is logged, and the record's offset moves on regardless.
    pub(super) async fn commit_record(
        &mut self,
        record: &SourceRecord,
        metadata: Option<&RecordMetadata>,
    ) {
        // A panic is a failed notification too (Kafka catches any
        // Throwable from commitRecord and logs it).
        let call = self.plugins.task.commit_record(record, metadata);
        let what = CallOf(&self.settings.id, "SourceTask::commit_record");
        match contain(what, call).await {
            Ok(()) => {}
            // The trait's default body: the task does not use the call.
            // Stop making it, and let go of records once sent from now on
            // unless something configured needs them back.
            Err(e) if e.is_not_implemented() => {
                tracing::debug!(task = %self.settings.id,
                    "SourceTask::commit_record is not implemented; records are let go once sent");
                self.commit_records = false;
                self.release_records = !keeps_copies(self.pipeline.config());
            }
            Err(e) => tracing::error!(task = %self.settings.id, error = %e,
                "SourceTask::commit_record failed; the task keeps running"),
        }
    }

    /// A record the producer gave up on (its own retries are infinite by
    /// default, so this is final): KAFKA_PRODUCE under errors.tolerance.
    pub(super) async fn delivery_failed(&mut self, token: u64, error: KafkaError) -> Result<()> {
        if self.tracker.is_dead_letter(token) {
            self.tracker.complete(token);
            self.pipeline.record_dlq_send(true);
            return Err(ConnectError::from(error).context(
                "the dead letter queue rejected a failed record; stopping so it is not lost",
            ));
        }
        if !self.tracker.is_in_flight(token) {
            return Ok(()); // unknown, or already completed
        }
        // A record let go at send time (no retries or DLQ configured) has
        // nothing to resend: the tolerance alone decides.
        let record = self.tracker.take_record(token);
        if error.kind() == KafkaErrorKind::UnknownTopicOrPartition {
            return self.topic_missing(token, record, error).await;
        }
        let error = ConnectError::from(error);
        let record = match record {
            Some(record) if error.is_retriable() => {
                match self.resends.delay(token, self.pipeline.config()) {
                    Some(delay) => {
                        tracing::warn!(task = %self.settings.id, error = %error,
                        "retriable delivery failure; sending the record again in {delay:?}");
                        tokio::time::sleep(delay).await;
                        return self.resend(token, record).await;
                    }
                    None => Some(record),
                }
            }
            other => other,
        };
        self.resends.settled(token);
        let failure = self
            .pipeline
            .tolerate(Stage::KafkaProduce, "producer", error, 1)?;
        self.dead_letter(Submit::Existing(token), record, failure)
            .await
    }

    /// The record's topic does not exist (librdkafka gives up after
    /// `topic.metadata.propagation.max.ms`). Kafka Connect's producer waits
    /// for the topic and the task sends again, for as long as it takes;
    /// skipping the record under `errors.tolerance=all` would lose it. A
    /// record sent to a topic is kept until the topic took one, so it is
    /// here to resend unless the topic disappeared later.
    pub(super) async fn topic_missing(
        &mut self,
        token: u64,
        record: Option<SourceRecord>,
        error: KafkaError,
    ) -> Result<()> {
        let Some(record) = record else {
            self.resends.settled(token);
            return Err(ConnectError::from(error).context(
                "a record's topic no longer exists and the record was not kept to send again; \
                 stopping so it is not skipped (create the topic, then restart the task)",
            ));
        };
        let now = tokio::time::Instant::now();
        if self
            .missing_topic_logged
            .is_none_or(|at| now.duration_since(at) >= Duration::from_secs(30))
        {
            self.missing_topic_logged = Some(now);
            tracing::warn!(task = %self.settings.id, topic = %record.record.topic, error = %error,
                "the topic does not exist; sending its records again until it does \
                 (create it, or configure topic.creation.* or the broker's auto-creation)");
        }
        // No pause here: while the producer knows the topic is missing it
        // refuses at once, and the send waits (send_with_backpressure).
        self.resend(token, record).await
    }

    /// Convert and send `record` again under the same token, so its place
    /// in the offset order is kept.
    pub(super) async fn resend(&mut self, token: u64, record: SourceRecord) -> Result<()> {
        if let Some(failure) = self.convert(&record).await? {
            return self
                .dead_letter(Submit::Existing(token), Some(record), failure)
                .await;
        }
        self.send(token, record, false).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn errors(retry_timeout_ms: i64, retry_delay_max_ms: u64) -> ErrorConfig {
        ErrorConfig {
            retry_timeout_ms,
            retry_delay_max_ms,
            ..ErrorConfig::default()
        }
    }

    #[tokio::test(start_paused = true)]
    async fn resends_back_off_and_end_at_the_retry_timeout() {
        let mut r = Resends::default();
        // errors.retry.timeout=0 (Kafka's default): never sent again.
        assert_eq!(r.delay(1, &errors(0, 60_000)), None);
        let config = errors(5_000, 1_000);
        let waits: Vec<_> = (0..4).map(|_| r.delay(2, &config)).collect();
        let ms = |n| Some(Duration::from_millis(n));
        assert_eq!(waits[0], ms(300));
        assert!(waits[1] > ms(300) && waits[1] <= ms(1_000), "{waits:?}");
        assert_eq!(waits[3], ms(1_000), "capped at errors.retry.delay.max.ms");
        // Another token keeps its own count.
        assert_eq!(r.delay(3, &config), ms(300));
        tokio::time::advance(Duration::from_millis(5_000)).await;
        assert_eq!(r.delay(2, &config), None, "the retry timeout is used up");
        // Settled, a token starts over.
        r.settled(2);
        assert_eq!(r.delay(2, &config), ms(300));
        // -1: retried for as long as it takes.
        tokio::time::advance(Duration::from_secs(3_600)).await;
        assert!(r.delay(4, &errors(-1, 1_000)).is_some());
        assert!(r.delay(4, &errors(-1, 1_000)).is_some());
    }
}
