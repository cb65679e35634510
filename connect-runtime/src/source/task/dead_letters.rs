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
        if self.settings.errors.log_enable {
            self.pipeline.record_logged();
            if self.settings.errors.log_include_messages {
                tracing::error!(task = %id, stage = %failure.stage, executing = %failure.executing,
                    error = %failure.error, record = ?record,
                    source_partition = %serde_json::Value::Object(SourceMap::clone(&partition)),
                    source_offset = %serde_json::Value::Object(offset.clone()),
                    "Error encountered in task {id}");
            } else {
                tracing::error!(task = %id, stage = %failure.stage, executing = %failure.executing,
                    error = %failure.error, "Error encountered in task {id}");
            }
        }
        if self.dlq_producer.is_none() {
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
        let mut headers = Vec::new();
        let (topic, kafka_partition) = record
            .as_ref()
            .map(|r| (r.record.topic.clone(), r.record.kafka_partition))
            .unwrap_or_else(|| (Arc::from(""), None));
        if self.settings.errors.dlq_context_headers {
            dlq::append_context_headers(
                &mut headers,
                &id.connector,
                id.task,
                Origin::Polled {
                    topic: &topic,
                    partition: kafka_partition,
                    source_partition: &partition,
                    source_offset: &offset,
                },
                &failure,
            );
        }
        // Render key and value with the JSON converter: a source record has
        // no raw bytes yet, and JSON with schemas keeps everything readable.
        let (mut key, mut value) = (Vec::new(), Vec::new());
        let (mut has_key, mut has_value) = (false, false);
        if let Some(r) = &record {
            let rec = &r.record;
            let conv = &mut self.plugins.converters.dlq_json;
            has_key = conv
                .from_connect_data(
                    &topic,
                    &rec.headers,
                    rec.key_schema.as_ref(),
                    &rec.key,
                    &mut key,
                )
                .is_ok_and(|w| w == Serialized::Bytes);
            has_value = conv
                .from_connect_data(
                    &topic,
                    &rec.headers,
                    rec.value_schema.as_ref(),
                    &rec.value,
                    &mut value,
                )
                .is_ok_and(|w| w == Serialized::Bytes);
        }
        self.ensure_dlq_topic(&dlq_topic).await;
        let token = match at {
            Submit::New(p, o) => self.tracker.submit_dead_letter(p, o),
            Submit::Existing(token) => token,
        };
        let out = OutRecord {
            topic: &dlq_topic,
            partition: None,
            key: has_key.then_some(key.as_slice()),
            value: has_value.then_some(value.as_slice()),
            timestamp: record.as_ref().and_then(|r| r.record.timestamp),
            headers: &headers,
        };
        let Some(dlq) = self.dlq_producer.as_deref() else {
            return Ok(());
        };
        let sent = send_with_backpressure(dlq, &out, token, &self.acks).await;
        self.pipeline.record_dlq_send(sent.is_err());
        sent.map_err(|e| e.context("cannot send a failed record to the dead letter queue"))?;
        if let Some(r) = record {
            self.tracker.attach(token, r);
        }
        Ok(())
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
