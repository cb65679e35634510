//! The source side of the dead letter queue: a failed record's original
//! goes to the DLQ topic (the queue itself, [`DeadLetterQueue`], is the
//! sink's too).

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
        let Some(dlq) = &self.dlq else {
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
        let dlq_topic = dlq.topic().to_owned();
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
        let token = match at {
            Submit::New(p, o) => self.tracker.submit_dead_letter(p, o),
            Submit::Existing(token) => token,
        };
        self.in_transaction()?;
        let producer = match (
            &self.transactions,
            self.dlq.as_ref().and_then(|d| d.producer()),
        ) {
            // In the transaction, with the records it belongs with.
            (Some(_), _) => &*self.producer,
            (None, Some(own)) => own,
            (None, None) => return Ok(()),
        };
        let sent =
            send_with_backpressure(producer, &letter.out(&dlq_topic), token, &self.acks).await;
        self.pipeline.record_dlq_send(sent.is_err());
        sent.map_err(|e| e.context("cannot send a failed record to the dead letter queue"))?;
        if let Some(r) = record {
            self.tracker.attach(token, r);
        }
        Ok(())
    }
}
