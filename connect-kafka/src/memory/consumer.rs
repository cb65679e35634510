//! Consumer of the in-memory cluster.

use std::pin::pin;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use tokio::time::Instant;

use super::group::{Matcher, Member};
use super::log::{PartitionLog, RecordState};
use super::{config_number, Inner, State};
use crate::{
    ClientConfig, CommitMode, ConsumedRecord, Consumer, ConsumerEvent, GroupMetadata, KafkaError,
    KafkaErrorKind, Subscription, TopicPartition, TopicPartitionOffsets,
};

/// Where a partition without a committed offset starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reset {
    Earliest,
    Latest,
    None,
}

/// A partition this consumer holds.
struct Owned {
    tp: TopicPartition,
    /// Next offset to read; `None` until the first fetch looks up the
    /// committed offset or applies `auto.offset.reset`.
    position: Option<i64>,
    paused: bool,
}

pub(super) struct MemoryConsumer {
    cluster: Arc<Inner>,
    group_id: Option<String>,
    member_id: Option<String>,
    subscription: Option<Subscription>,
    owned: Vec<Owned>,
    reset: Reset,
    read_committed: bool,
    auto_commit: bool,
    max_poll_records: usize,
    client_id: String,
    /// Partition fetched first next time, so one busy partition does not
    /// starve the others.
    rotation: usize,
    /// Partitions of the last Revoked event: still this member's in the
    /// group (no other member gets them) until the next poll, so the
    /// caller commits and closes them first, as on a real broker.
    releasing: Vec<TopicPartition>,
}

impl MemoryConsumer {
    pub(super) fn new(cluster: Arc<Inner>, config: &ClientConfig) -> Result<Self, KafkaError> {
        let reset = match config.get("auto.offset.reset").map(String::as_str) {
            None | Some("latest" | "largest" | "end") => Reset::Latest,
            Some("earliest" | "smallest" | "beginning") => Reset::Earliest,
            Some("none" | "error") => Reset::None,
            Some(other) => {
                return Err(KafkaError::new(
                    KafkaErrorKind::Config,
                    format!("client property auto.offset.reset='{other}' is not one of earliest, latest, none"),
                ))
            }
        };
        let read_committed = match config.get("isolation.level").map(String::as_str) {
            None | Some("read_uncommitted") => false,
            Some("read_committed") => true,
            Some(other) => {
                return Err(KafkaError::new(
                    KafkaErrorKind::Config,
                    format!("client property isolation.level='{other}' is not read_committed or read_uncommitted"),
                ))
            }
        };
        let auto_commit = match config.get("enable.auto.commit").map(String::as_str) {
            None | Some("true") => true,
            Some("false") => false,
            Some(other) => {
                return Err(KafkaError::new(
                    KafkaErrorKind::Config,
                    format!("client property enable.auto.commit='{other}' is not true or false"),
                ))
            }
        };
        Ok(MemoryConsumer {
            cluster,
            group_id: config.get("group.id").filter(|g| !g.is_empty()).cloned(),
            member_id: None,
            subscription: None,
            owned: Vec::new(),
            reset,
            read_committed,
            auto_commit,
            max_poll_records: config_number(config, "max.poll.records", 500usize)?.max(1),
            client_id: config
                .get("client.id")
                .cloned()
                .unwrap_or_else(|| "consumer".to_string()),
            rotation: 0,
            releasing: Vec::new(),
        })
    }

    fn group_id(&self, what: &str) -> Result<&str, KafkaError> {
        self.group_id.as_deref().ok_or_else(|| {
            KafkaError::new(
                KafkaErrorKind::Config,
                format!("{what} needs the client property group.id"),
            )
        })
    }

    /// Join the group with a fresh member id.
    fn join(&mut self, state: &mut State, matcher: Matcher) -> Result<(), KafkaError> {
        let group_id = self.group_id("subscribe")?.to_string();
        let member_id = format!("{}-{:08}", self.client_id, state.next_member);
        state.next_member += 1;
        let State { groups, topics, .. } = state;
        let group = groups.entry(group_id).or_default();
        group.members.insert(
            member_id.clone(),
            Member {
                matcher,
                target: Default::default(),
                owned: Default::default(),
            },
        );
        group.rebalance(topics);
        self.member_id = Some(member_id);
        Ok(())
    }

    fn leave(&mut self) {
        self.releasing.clear();
        let (Some(group_id), Some(member_id)) = (&self.group_id, self.member_id.take()) else {
            return;
        };
        {
            let mut state = self.cluster.lock();
            let State { groups, topics, .. } = &mut *state;
            if let Some(group) = groups.get_mut(group_id) {
                if group.members.remove(&member_id).is_some() {
                    group.rebalance(topics);
                }
            }
        }
        self.owned.clear();
        self.cluster.changed.notify_waiters();
    }

    /// One non-blocking poll: an error, a rebalance event, records, or nothing.
    fn poll_once(&mut self) -> Result<Option<ConsumerEvent>, KafkaError> {
        let cluster = Arc::clone(&self.cluster);
        let mut guard = cluster.lock();
        let state = &mut *guard;
        if let Some(e) = state.faults.fetch.take("fetch") {
            return Err(e);
        }
        if !self.releasing.is_empty() {
            self.release(state);
            self.cluster.changed.notify_waiters();
        }
        if let Some(event) = self.membership_event(state)? {
            drop(guard);
            // Another member may be waiting for the partitions just revoked.
            self.cluster.changed.notify_waiters();
            return Ok(Some(event));
        }
        if self.auto_commit {
            if let Some(group) = self.group_id.as_ref().and_then(|g| state.groups.get_mut(g)) {
                for o in &self.owned {
                    if let Some(pos) = o.position {
                        group.committed.insert(o.tp.clone(), pos);
                    }
                }
            }
        }
        let records = self.fetch(state)?;
        Ok((!records.is_empty()).then_some(ConsumerEvent::Records(records)))
    }

    /// Give the group the partitions of the last Revoked event.
    fn release(&mut self, state: &mut State) {
        let member = self
            .group_id
            .as_ref()
            .zip(self.member_id.as_ref())
            .and_then(|(g, m)| state.groups.get_mut(g)?.members.get_mut(m));
        if let Some(member) = member {
            for tp in &self.releasing {
                member.owned.remove(tp);
            }
        }
        self.releasing.clear();
    }

    /// Revocations first, then assignments of partitions no other member
    /// still holds; a member the group dropped loses everything and rejoins.
    fn membership_event(&mut self, state: &mut State) -> Result<Option<ConsumerEvent>, KafkaError> {
        let (Some(group_id), Some(member_id)) = (self.group_id.clone(), self.member_id.clone())
        else {
            return Ok(None);
        };
        let in_group = state
            .groups
            .get(&group_id)
            .is_some_and(|g| g.members.contains_key(&member_id));
        if !in_group {
            self.releasing.clear();
            let lost: Vec<TopicPartition> = self.owned.drain(..).map(|o| o.tp).collect();
            if let Some(subscription) = &self.subscription {
                let matcher = Matcher::compile(subscription)?;
                self.join(state, matcher)?;
            }
            return Ok((!lost.is_empty()).then_some(ConsumerEvent::Revoked(lost)));
        }
        let Some(group) = state.groups.get_mut(&group_id) else {
            return Ok(None);
        };
        let Some(member) = group.members.get_mut(&member_id) else {
            return Ok(None);
        };
        if member.owned == member.target {
            return Ok(None);
        }
        let revoked: Vec<TopicPartition> =
            member.owned.difference(&member.target).cloned().collect();
        if !revoked.is_empty() {
            self.owned.retain(|o| !revoked.contains(&o.tp));
            self.releasing.clone_from(&revoked);
            return Ok(Some(ConsumerEvent::Revoked(revoked)));
        }
        let wanted: Vec<TopicPartition> =
            member.target.difference(&member.owned).cloned().collect();
        let assigned: Vec<TopicPartition> = wanted
            .into_iter()
            .filter(|tp| !group.owned_by_other(&member_id, tp))
            .collect();
        if assigned.is_empty() {
            return Ok(None);
        }
        if let Some(member) = group.members.get_mut(&member_id) {
            member.owned.extend(assigned.iter().cloned());
        }
        self.owned.extend(assigned.iter().map(|tp| Owned {
            tp: tp.clone(),
            position: None,
            paused: false,
        }));
        Ok(Some(ConsumerEvent::Assigned(assigned)))
    }

    fn fetch(&mut self, state: &mut State) -> Result<Vec<ConsumedRecord>, KafkaError> {
        let mut out = Vec::new();
        let n = self.owned.len();
        if n == 0 {
            return Ok(out);
        }
        let committed = self
            .group_id
            .as_ref()
            .and_then(|g| state.groups.get(g))
            .map(|g| &g.committed);
        let start = self.rotation % n;
        self.rotation = self.rotation.wrapping_add(1);
        for i in 0..n {
            if out.len() >= self.max_poll_records {
                break;
            }
            let owned = &mut self.owned[(start + i) % n];
            if owned.paused {
                continue;
            }
            let Some(log) = state.topics.get(&*owned.tp.topic).and_then(|t| {
                usize::try_from(owned.tp.partition)
                    .ok()
                    .and_then(|p| t.partitions.get(p))
            }) else {
                continue;
            };
            if log.leader_away {
                continue;
            }
            let position = match owned.position {
                Some(p) if p >= log.start_offset && p <= log.end_offset => p,
                Some(_) | None => {
                    let from_commit = if owned.position.is_none() {
                        committed.and_then(|c| c.get(&owned.tp)).copied()
                    } else {
                        None
                    };
                    match from_commit {
                        Some(p) => p.clamp(log.start_offset, log.end_offset),
                        None => match self.reset {
                            Reset::Earliest => log.start_offset,
                            Reset::Latest => log.end_offset,
                            Reset::None => {
                                return Err(KafkaError::new(
                                    KafkaErrorKind::Fatal,
                                    format!(
                                        "no valid offset for {} and auto.offset.reset=none",
                                        owned.tp
                                    ),
                                ))
                            }
                        },
                    }
                }
            };
            let limit = self.max_poll_records - out.len();
            owned.position = Some(read(log, position, limit, self.read_committed, &mut out));
        }
        Ok(out)
    }

    fn owned_mut(&mut self, tp: &TopicPartition, what: &str) -> Result<&mut Owned, KafkaError> {
        self.owned.iter_mut().find(|o| &o.tp == tp).ok_or_else(|| {
            KafkaError::fatal(format!(
                "cannot {what} {tp}: the partition is not assigned to this consumer"
            ))
        })
    }
}

/// The log of `tp`, when the topic and partition exist.
fn partition_log<'s>(state: &'s State, tp: &TopicPartition) -> Option<&'s PartitionLog> {
    state
        .topics
        .get(&*tp.topic)?
        .partitions
        .get(usize::try_from(tp.partition).ok()?)
}

fn unknown_partition(tp: &TopicPartition) -> KafkaError {
    KafkaError::new(
        KafkaErrorKind::UnknownTopicOrPartition,
        format!("partition {tp} does not exist"),
    )
}

/// Copy up to `limit` readable records from `position`; return the next position.
fn read(
    log: &PartitionLog,
    position: i64,
    limit: usize,
    read_committed: bool,
    out: &mut Vec<ConsumedRecord>,
) -> i64 {
    let mut next = position;
    let mut taken = 0;
    for stored in &log.records[log.index_of(position)..] {
        match stored.state {
            // The last stable offset: nothing past an open transaction.
            RecordState::Pending(_) if read_committed => return next,
            RecordState::Control => {}
            RecordState::Aborted if read_committed => {}
            _ => {
                if taken == limit {
                    return next;
                }
                out.push(stored.record.clone());
                taken += 1;
            }
        }
        next = stored.record.offset + 1;
    }
    // Read to the end: skip any gap compaction left at the tail.
    log.end_offset.max(position)
}

impl Drop for MemoryConsumer {
    fn drop(&mut self) {
        self.leave();
    }
}

#[async_trait]
impl Consumer for MemoryConsumer {
    fn subscribe(&mut self, subscription: &Subscription) -> Result<(), KafkaError> {
        self.group_id("subscribe")?;
        let matcher = Matcher::compile(subscription)?;
        {
            let cluster = Arc::clone(&self.cluster);
            let mut state = cluster.lock();
            let is_member = match (&self.group_id, &self.member_id) {
                (Some(g), Some(m)) => state
                    .groups
                    .get(g)
                    .is_some_and(|g| g.members.contains_key(m)),
                _ => false,
            };
            let State { groups, topics, .. } = &mut *state;
            let group = self.group_id.as_ref().and_then(|g| groups.get_mut(g));
            match (is_member, group, &self.member_id) {
                (true, Some(group), Some(member_id)) => {
                    if let Some(member) = group.members.get_mut(member_id) {
                        member.matcher = matcher;
                    }
                    group.rebalance(topics);
                }
                _ => self.join(&mut state, matcher)?,
            }
        }
        self.subscription = Some(subscription.clone());
        self.cluster.changed.notify_waiters();
        Ok(())
    }

    async fn poll(&mut self, timeout: Duration) -> Result<Option<ConsumerEvent>, KafkaError> {
        let deadline = Instant::now() + timeout;
        let cluster = Arc::clone(&self.cluster);
        loop {
            let mut changed = pin!(cluster.changed.notified());
            changed.as_mut().enable();
            if let Some(event) = self.poll_once()? {
                return Ok(Some(event));
            }
            if tokio::time::timeout_at(deadline, changed).await.is_err() {
                return Ok(None);
            }
        }
    }

    fn pause(&mut self, partitions: &[TopicPartition]) -> Result<(), KafkaError> {
        for tp in partitions {
            self.owned_mut(tp, "pause")?.paused = true;
        }
        Ok(())
    }

    fn resume(&mut self, partitions: &[TopicPartition]) -> Result<(), KafkaError> {
        for tp in partitions {
            self.owned_mut(tp, "resume")?.paused = false;
        }
        self.cluster.changed.notify_waiters();
        Ok(())
    }

    fn seek(&mut self, partition: &TopicPartition, offset: i64) -> Result<(), KafkaError> {
        if offset < 0 {
            return Err(KafkaError::new(
                KafkaErrorKind::Config,
                format!("cannot seek {partition} to negative offset {offset}"),
            ));
        }
        self.owned_mut(partition, "seek")?.position = Some(offset);
        Ok(())
    }

    async fn commit(
        &mut self,
        offsets: &TopicPartitionOffsets,
        mode: CommitMode,
    ) -> Result<(), KafkaError> {
        let group_id = self.group_id("commit")?.to_string();
        let result = (|| {
            if let Some((tp, offset)) = offsets.iter().find(|(_, o)| **o < 0) {
                return Err(KafkaError::new(
                    KafkaErrorKind::Config,
                    format!(
                        "cannot commit negative offset {offset} for {tp} in group '{group_id}'"
                    ),
                ));
            }
            let mut state = self.cluster.lock();
            if let Some(e) = state.faults.commit.take("commit") {
                return Err(e.context(format!("commit for group '{group_id}'")));
            }
            let group = state.groups.entry(group_id.clone()).or_default();
            if let Some(member) = &self.member_id {
                if !group.members.contains_key(member) {
                    return Err(KafkaError::new(
                        KafkaErrorKind::RebalanceInProgress,
                        format!("member '{member}' is no longer in group '{group_id}'; poll to rejoin before committing"),
                    ));
                }
            }
            group
                .committed
                .extend(offsets.iter().map(|(tp, o)| (tp.clone(), *o)));
            Ok(())
        })();
        match (result, mode) {
            (Err(e), CommitMode::Async) => {
                tracing::warn!(group = %group_id, error = %e, "asynchronous offset commit failed");
                Ok(())
            }
            (result, _) => result,
        }
    }

    async fn committed(
        &mut self,
        partitions: &[TopicPartition],
        _timeout: Duration,
    ) -> Result<TopicPartitionOffsets, KafkaError> {
        let group_id = self.group_id("committed")?;
        let state = self.cluster.lock();
        let Some(group) = state.groups.get(group_id) else {
            return Ok(TopicPartitionOffsets::new());
        };
        Ok(partitions
            .iter()
            .filter_map(|tp| group.committed.get(tp).map(|o| (tp.clone(), *o)))
            .collect())
    }

    fn end_offset(&self, partition: &TopicPartition) -> Option<i64> {
        let state = self.cluster.lock();
        partition_log(&state, partition).map(|log| log.end_offset)
    }

    fn assign(&mut self, partitions: &[(TopicPartition, Option<i64>)]) -> Result<(), KafkaError> {
        if self.member_id.is_some() {
            return Err(KafkaError::new(
                KafkaErrorKind::Config,
                "cannot assign partitions to a consumer that subscribed to a group",
            ));
        }
        let mut owned = Vec::with_capacity(partitions.len());
        {
            let state = self.cluster.lock();
            for (tp, offset) in partitions {
                let log = partition_log(&state, tp).ok_or_else(|| unknown_partition(tp))?;
                owned.push(Owned {
                    tp: tp.clone(),
                    position: Some(offset.unwrap_or(log.start_offset)),
                    paused: false,
                });
            }
        }
        self.owned = owned;
        self.cluster.changed.notify_waiters();
        Ok(())
    }

    async fn end_offsets(
        &mut self,
        partitions: &[TopicPartition],
        _timeout: Duration,
    ) -> Result<Vec<i64>, KafkaError> {
        let mut state = self.cluster.lock();
        // Injected fetch faults fail offset lookups too, as a broker that
        // is briefly unavailable fails both.
        if let Some(e) = state.faults.fetch.take("list offsets") {
            return Err(e);
        }
        // As Kafka's ListOffsets: a read_committed reader is told the last
        // stable offset, where the first open transaction begins.
        let read_committed = self.read_committed;
        partitions
            .iter()
            .map(|tp| {
                partition_log(&state, tp)
                    .map(|log| {
                        if read_committed {
                            log.last_stable_offset()
                        } else {
                            log.end_offset
                        }
                    })
                    .ok_or_else(|| unknown_partition(tp))
            })
            .collect()
    }

    fn position(&self, partition: &TopicPartition) -> Option<i64> {
        self.owned
            .iter()
            .find(|o| &o.tp == partition)
            .and_then(|o| o.position)
    }

    fn assignment(&self) -> Result<Vec<TopicPartition>, KafkaError> {
        let mut tps: Vec<TopicPartition> = self.owned.iter().map(|o| o.tp.clone()).collect();
        tps.sort();
        Ok(tps)
    }

    fn group_metadata(&self) -> Option<GroupMetadata> {
        let group_id = self.group_id.as_ref()?;
        let mut meta = GroupMetadata::new(group_id.clone());
        meta.member_id = self.member_id.clone().unwrap_or_default();
        meta.generation_id = self
            .cluster
            .lock()
            .groups
            .get(group_id)
            .map_or(-1, |g| g.generation);
        Some(meta)
    }

    async fn close(&mut self) -> Result<(), KafkaError> {
        self.leave();
        self.subscription = None;
        Ok(())
    }
}
