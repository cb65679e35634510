//! Offset commits: committable offsets to the offset store, then
//! `SourceTask::commit`, periodically and at the final stop.

use super::*;

impl WorkerSourceTask {
    /// Write committable offsets, then `SourceTask::commit`.
    pub(super) async fn commit_offsets(&mut self) -> Result<()> {
        self.process_acks().await?;
        let committable = self.tracker.committable();
        if !committable.is_empty() {
            // Records without a source partition (stdin, Kafka's null
            // partition) have no position to store.
            let offsets: Vec<_> = committable
                .offsets
                .into_iter()
                .filter(|(p, _)| !p.is_empty())
                .collect();
            let entries = offsets
                .iter()
                .map(|(p, o)| (p.clone(), Some(o.clone())))
                .collect();
            let write = self.store.write(&self.settings.id.connector, entries);
            // A timed-out or retriable failure keeps the offsets for the next
            // flush (a quiet partition would otherwise keep its old position
            // and replay after a restart); any other failure stops the task.
            let failure = match tokio::time::timeout(self.settings.flush_timeout, write).await {
                Ok(Ok(())) => None,
                Ok(Err(e)) if e.is_retriable() => Some(e.to_string()),
                Ok(Err(e)) => return Err(e),
                Err(_) => Some(format!(
                    "timed out after {:?} (offset.flush.timeout.ms)",
                    self.settings.flush_timeout
                )),
            };
            if let Some(reason) = failure {
                tracing::warn!(task = %self.settings.id, reason = %reason,
                    "offset flush failed; the offsets are kept for the next flush");
                self.tracker.restore(offsets);
                return Ok(());
            }
        }
        // A notification, as in Kafka: the offsets are stored already, so a
        // failure here is the task's to report, not a reason to stop it.
        let what = CallOf(&self.settings.id, "SourceTask::commit");
        if let Err(e) = contain(what, self.plugins.task.commit()).await {
            tracing::error!(task = %self.settings.id, error = %e,
                "SourceTask::commit failed after the offsets were stored; the task keeps running");
        }
        Ok(())
    }

    /// On stop: flush the producer, process the last acks, commit.
    pub(super) async fn final_commit(&mut self) -> Result<()> {
        self.flush_and_commit(self.settings.shutdown_timeout).await
    }

    /// After the task failed (Kafka's `finalOffsetCommit(failed)` of a
    /// non-transactional task): wait up to `offset.flush.timeout.ms` for the
    /// records already handed to the producer, then commit the offsets of
    /// those Kafka acknowledged. A record whose delivery failed is left
    /// unacknowledged, so it and the later records of its source partition
    /// are polled again after a restart.
    pub(super) async fn commit_after_failure(&mut self) -> Result<()> {
        self.failed = true;
        self.flush_and_commit(self.settings.flush_timeout).await
    }

    /// Flush the producers within `timeout`, process the last acks, commit.
    async fn flush_and_commit(&mut self, timeout: Duration) -> Result<()> {
        let flushed = self.producer.flush(timeout).await;
        if let Some(d) = &self.dlq_producer {
            let _ = d.flush(timeout).await;
        }
        if let Err(e) = flushed {
            tracing::warn!(task = %self.settings.id, error = %e,
                "producer flush before the final offset commit did not complete; unacknowledged records will be polled again after restart");
        }
        self.commit_offsets().await
    }
}
