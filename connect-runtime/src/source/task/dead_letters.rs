//! The source dead letter queue: a failed record's original goes to the
//! DLQ topic, created when first needed.

use super::*;

impl WorkerSourceTask {
    /// A tolerated failure: log it, send the record to the DLQ when one is
    /// configured (beyond Kafka, which has no source DLQ), and let its offset
    /// move on once that send is acknowledged.
    pub(super) async fn dead_letter(
        &mut self,
        at: Submit,
        record: Option<SourceRecord>,
        failure: Failure,
    ) -> Result<()> {
        if let (Submit::Existing(token), Some(r)) = (&at, &record) {
            // An in-flight record's offset travels with it (see `process`).
            self.tracker.set_offset(*token, r.source_offset.clone());
        }
        let (partition, offset) = match &at {
            Submit::New(p, o) => (p.clone(), o.clone()),
            Submit::Existing(token) => match self.tracker.redirect_to_dead_letter(*token) {
                Some(po) => po,
                None => return Ok(()),
            },
        };
        let id = &self.settings.id;
        let logged = dlq::log_failure(id, &self.settings.errors, &failure, || {
            format!(
                "{record:?}, source partition {}, source offset {}",
                serde_json::Value::Object(SourceMap::clone(&partition)),
                serde_json::Value::Object(offset.clone())
            )
        });
        if logged {
            self.pipeline.record_logged();
        }
        if !self.has_dlq() {
            // Skipped: as Kafka, commit_record without metadata, with the
            // record when it was kept, else (as for a dropped record) its
            // source partition and offset.
            if self.commit_records {
                let skipped = record.unwrap_or_else(|| {
                    SourceRecord::new(partition.clone(), offset.clone(), Record::default())
                });
                self.commit_record(&skipped, None).await;
            }
            match at {
                Submit::New(p, o) => {
                    self.tracker.submit_done(p, o);
                }
                Submit::Existing(token) => {
                    self.tracker.complete(token);
                }
            }
            return Ok(());
        };
        let dlq_topic = self.settings.errors.dlq_topic.clone();
        // A source record has no bytes yet: the letter renders key and
        // value as JSON with schemas, which keeps everything readable.
        let letter = match &record {
            Some(r) => DeadLetter::rendered(self.plugins.converters.dlq_json.as_mut(), &r.record),
            None => DeadLetter::default(),
        };
        let origin = Origin::Polled {
            topic: record.as_ref().map_or("", |r| &r.record.topic),
            partition: record.as_ref().and_then(|r| r.record.kafka_partition),
            source_partition: &partition,
            source_offset: &offset,
        };
        let letter = letter.with_context(&self.settings.errors, id, origin, &failure);
        self.ensure_dlq_topic(&dlq_topic).await;
        let token = match at {
            Submit::New(p, o) => self.tracker.submit_dead_letter(p, o),
            Submit::Existing(token) => token,
        };
        self.in_transaction()?;
        let dlq = match (&self.transactions, self.dlq_producer.as_deref()) {
            // In the transaction, with the records it belongs with.
            (Some(_), _) => &*self.producer,
            (None, Some(dlq)) => dlq,
            (None, None) => return Ok(()),
        };
        let sent = send_with_backpressure(dlq, &letter.out(&dlq_topic), token, &self.acks).await;
        self.pipeline.record_dlq_send(sent.is_err());
        sent.map_err(|e| e.context("cannot send a failed record to the dead letter queue"))?;
        if let Some(r) = record {
            self.tracker.attach(token, r);
        }
        Ok(())
    }

    /// A DLQ is configured: its own producer, or (exactly once) the task's.
    fn has_dlq(&self) -> bool {
        self.dlq_producer.is_some()
            || (self.transactions.is_some() && !self.settings.errors.dlq_topic.is_empty())
    }

    pub(super) async fn ensure_dlq_topic(&mut self, topic: &str) {
        if self.known_topics.contains_str(topic) {
            return;
        }
        self.known_topics.insert(&Arc::from(topic));
        let mut spec = NewTopic::new(topic, 1);
        spec.replication_factor = self.settings.errors.dlq_replication_factor;
        create_topic(self.admin.as_deref(), spec).await;
    }
}
