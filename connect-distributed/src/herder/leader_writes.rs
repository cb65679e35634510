//! The leader's own config-topic writes in a cluster with
//! `exactly.once.source.support=enabled` (KIP-618), as Kafka's config store
//! makes them: through a transactional producer with the id
//! `connect-cluster-<group.id>`, one transaction per write.
//!
//! Each worker that starts leading takes over that id, which fences the
//! producer of the leader before it. A leader cut off from the group that
//! still believes it leads (a paused process, a partition) can then no
//! longer write task configs, task counts or session keys: task configs
//! that nobody fenced zombies for would otherwise start tasks of an
//! exactly-once connector twice. Writes any worker may make (connector
//! configs, target states, restart requests) stay plain writes, as in
//! Kafka they are not the leader's privilege (here any worker appends
//! them; see the README's differences).
//!
//! A leader whose write is fenced drops its producer and reports the
//! write failed (retriable). It takes the id again only at a join that
//! makes it leader, never at its next write: a fenced leader is most
//! likely a zombie, and reclaiming the id at once would fence the real
//! leader in turn. (Kafka's herder reclaims it at its next tick when it
//! still believes it leads; waiting for the group's word is stricter.)

use std::time::Duration;

use connect_api::{ConnectError, Result};
use connect_runtime::kafka::{KafkaError, KafkaErrorKind, OutRecord, Producer, SendError};

use super::config::ExactlyOnceSourceSupport;
use super::Shared;
use crate::topics::config::ConfigRecord;

/// How long taking over the leader's transactional id may take.
const CLAIM_TIMEOUT: Duration = Duration::from_secs(30);

/// How long committing one write may take.
const COMMIT_TIMEOUT: Duration = Duration::from_secs(30);

/// Why a fenced leader does not write: said when its write fails and to
/// every later write until a join makes it leader again.
const FENCED: &str = "a newer leader took over the leader's transactional id; this worker \
                      writes as leader again only after a rebalance makes it leader";

/// Kafka's transactional id of the leader of Connect group `group_id`
/// (Java's `DistributedConfig.transactionalProducerId`).
///
/// ```
/// use connect_distributed::herder::leader_transactional_id;
///
/// assert_eq!(leader_transactional_id("connect-cluster"), "connect-cluster-connect-cluster");
/// ```
pub fn leader_transactional_id(group_id: &str) -> String {
    format!("connect-cluster-{group_id}")
}

/// The leader's transactional producer, while this worker holds the id.
#[derive(Default)]
pub(super) struct LeaderWriter {
    producer: Option<Box<dyn Producer>>,
    /// A write found the id taken over by another producer since this
    /// worker last joined as leader.
    fenced: bool,
}

#[cfg(test)]
impl LeaderWriter {
    /// Whether the leader holds the transactional producer now.
    pub(super) fn holds_producer(&self) -> bool {
        self.producer.is_some()
    }
}

impl Shared {
    /// Whether the leader's writes go through its transactional producer.
    fn fencable_leader_writes(&self) -> bool {
        self.settings.exactly_once_source == ExactlyOnceSourceSupport::Enabled
    }

    /// Take over the leader's transactional id, fencing the producer of
    /// any earlier leader (Kafka's `claimWritePrivileges`), at each join
    /// that makes this worker leader: a producer kept from an earlier
    /// generation may have been fenced meanwhile by a leader in between.
    /// Nothing to do when the cluster is not exactly-once.
    pub(super) async fn claim_write_privileges(&self) -> Result<()> {
        if !self.fencable_leader_writes() {
            return Ok(());
        }
        let mut writer = self.leader_writer.lock().await;
        writer.fenced = false;
        // Dropped first: if taking the id over fails, no producer that may
        // already be fenced is kept for the next write, which then tries
        // to take it over itself.
        writer.producer = None;
        writer.producer = Some(self.leader_producer().await?);
        Ok(())
    }

    /// Drop the leader's producer: this worker no longer leads.
    pub(super) async fn release_write_privileges(&self) {
        let mut writer = self.leader_writer.lock().await;
        writer.fenced = false;
        if writer.producer.take().is_some() {
            tracing::debug!("released the leader's transactional producer of the config topic");
        }
    }

    /// Append `records` as the leader and wait until they are applied
    /// here: one transaction of the leader's producer in an exactly-once
    /// cluster, a plain write otherwise.
    pub(super) async fn write_as_leader(&self, records: Vec<ConfigRecord>) -> Result<()> {
        if !self.fencable_leader_writes() {
            return self.configs.write(records).await;
        }
        {
            let mut writer = self.leader_writer.lock().await;
            let topic = &self.settings.configs.name;
            let producer = match writer.producer.take() {
                Some(p) => p,
                None if writer.fenced => {
                    return Err(ConnectError::retriable(format!(
                        "config topic '{topic}': {FENCED}"
                    )))
                }
                None => self.leader_producer().await?,
            };
            match transact(producer.as_ref(), topic, &records).await {
                // Kept for the next write.
                Ok(()) => writer.producer = Some(producer),
                // Dropped: a fenced producer is done for, and any other
                // failure leaves a transaction the next `init_transactions`
                // aborts.
                Err(e) => {
                    writer.fenced = e.kind() == KafkaErrorKind::Fenced;
                    let why = if writer.fenced {
                        FENCED
                    } else {
                        "the transaction of the leader's config-topic write failed; retry"
                    };
                    tracing::warn!(error = %e, fenced = writer.fenced, "a leader write to the config topic failed");
                    return Err(ConnectError::retriable(format!(
                        "config topic '{topic}': {why}: {e}"
                    )));
                }
            }
        }
        // To the end suffices here, unlike a plain write's read-back: the
        // only transactions on the config topic are the leader id's, and
        // taking the id over aborted any a previous holder left open.
        self.configs.read_to_end().await
    }

    /// A producer holding `connect-cluster-<group.id>`, initialised.
    async fn leader_producer(&self) -> Result<Box<dyn Producer>> {
        let id = leader_transactional_id(self.worker.config().group_id());
        let producer = self
            .take_over_transactional_id(&id, CLAIM_TIMEOUT)
            .await
            .map_err(|e| {
                e.context(format!(
                    "cannot take over the leader's transactional id '{id}' for the config topic"
                ))
            })?;
        tracing::info!(transactional_id = %id, "took over the leader's transactional producer of the config topic");
        Ok(producer)
    }
}

/// `records`, in order, to partition 0 of `topic` in one transaction.
async fn transact(
    producer: &dyn Producer,
    topic: &str,
    records: &[ConfigRecord],
) -> std::result::Result<(), KafkaError> {
    producer.begin_transaction()?;
    for record in records {
        let (key, value) = record.encode();
        let out = OutRecord {
            topic,
            partition: Some(0),
            key: Some(key.as_bytes()),
            value: value.as_deref(),
            timestamp: None,
            headers: &[],
        };
        loop {
            match producer.send(&out, 0) {
                Ok(()) => break,
                // A handful of records: the queue drains with a flush.
                Err(SendError::QueueFull) => producer.flush(COMMIT_TIMEOUT).await?,
                Err(SendError::Kafka(e)) => return Err(e),
            }
        }
    }
    producer.commit_transaction(COMMIT_TIMEOUT).await
}
