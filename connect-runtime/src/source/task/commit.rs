//! Offset commits: committable offsets to the offset store, then
//! `SourceTask::commit`, periodically and at the final stop.

use super::*;

/// Where a source task's offsets are stored: the store, the connector they
/// belong to, and how long one write may take (`offset.flush.timeout.ms`).
pub(super) struct OffsetWriter {
    store: Arc<dyn OffsetStore>,
    connector: String,
    timeout: Duration,
}

impl OffsetWriter {
    pub(super) fn new(store: Arc<dyn OffsetStore>, connector: String, timeout: Duration) -> Self {
        OffsetWriter {
            store,
            connector,
            timeout,
        }
    }

    /// Read what a shared store holds now: a task moved here from another
    /// worker resumes from that worker's last committed offsets.
    pub(super) async fn refresh(&self) -> Result<()> {
        self.store
            .refresh()
            .await
            .map_err(|e| e.context("cannot read the latest source offsets"))
    }

    /// The stored offset of `partition`.
    pub(super) fn stored(&self, partition: &SourceMap) -> Option<SourceMap> {
        self.store.get(&self.connector, partition)
    }

    /// Copy offsets an exactly-once transaction stored to the store's
    /// fallback (see [`OffsetStore::write_fallback`]); a failure there is
    /// only logged: the transaction stored them.
    pub(super) async fn write_fallback(&self, entries: Vec<crate::offsets::OffsetEntry>) {
        if let Err(e) = self.store.write_fallback(&self.connector, entries).await {
            tracing::warn!(connector = %self.connector, error = %e,
                "cannot copy the committed offsets to the worker's offsets topic");
        }
    }

    /// Remove the stored offset of `partition` (`offsets.invalid.policy=reset`).
    pub(super) async fn remove(&self, partition: SourceMap) -> Result<()> {
        self.store
            .write(&self.connector, vec![(partition, None)])
            .await
    }

    /// Store `tracker`'s committable offsets. A timed-out or retriable
    /// failure puts them back for the next flush (a quiet partition would
    /// otherwise keep its old position and replay after a restart) and
    /// answers why; any other failure is the task's.
    pub(super) async fn write(&self, tracker: &mut SubmittedRecords) -> Result<Option<String>> {
        let committable = tracker.committable();
        if committable.is_empty() {
            return Ok(None);
        }
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
        let write = self.store.write(&self.connector, entries);
        let failure = match tokio::time::timeout(self.timeout, write).await {
            Ok(Ok(())) => return Ok(None),
            Ok(Err(e)) if e.is_retriable() => e.to_string(),
            Ok(Err(e)) => return Err(e),
            Err(_) => format!(
                "timed out after {:?} (offset.flush.timeout.ms)",
                self.timeout
            ),
        };
        tracker.restore(offsets);
        Ok(Some(failure))
    }
}

impl WorkerSourceTask {
    /// Write committable offsets, then `SourceTask::commit`.
    pub(super) async fn commit_offsets(&mut self) -> Result<()> {
        // Exactly once: offsets go in the transaction, at its boundary.
        if let Some(t) = &self.transactions {
            return match t.settings.boundary {
                TransactionBoundary::Interval(_) => self.commit_transaction().await,
                TransactionBoundary::Poll | TransactionBoundary::Connector => Ok(()),
            };
        }
        self.process_acks().await?;
        if let Some(reason) = self.offsets.write(&mut self.tracker).await? {
            tracing::warn!(task = %self.settings.id, reason = %reason,
                "offset flush failed; the offsets are kept for the next flush");
            return Ok(());
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
        if self.transactions.is_some() {
            // As Kafka: a stopping task commits its open transaction, a
            // failed one aborts it.
            if self.failed {
                self.abort_transaction().await;
                return Ok(());
            }
            return self.commit_transaction().await;
        }
        let flushed = self.producer.flush(timeout).await;
        if let Some(d) = &self.dlq {
            let _ = d.flush(timeout).await;
        }
        if let Err(e) = flushed {
            tracing::warn!(task = %self.settings.id, error = %e,
                "producer flush before the final offset commit did not complete; unacknowledged records will be polled again after restart");
        }
        self.commit_offsets().await
    }
}
