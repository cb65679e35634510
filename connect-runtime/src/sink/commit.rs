//! Sink offset commits that cannot run ahead of what the task flushed.
//!
//! The consumer commit takes a [`FlushedOffsets`], and the only way to get
//! one is [`FlushedOffsets::clamp`], from what `pre_commit` returned after a
//! completed flush and what was actually consumed: committing past a flush
//! or past the consumed position cannot be expressed.

use connect_api::sink::{TopicPartition, TopicPartitionOffsets};

use crate::kafka::{CommitMode, Consumer, KafkaError};

/// Offsets safe to commit: returned by `pre_commit` and no further than
/// consumed. Built only by [`FlushedOffsets::clamp`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlushedOffsets(TopicPartitionOffsets);

/// What [`FlushedOffsets::clamp`] left out, for the warning log.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Ignored {
    /// Partitions `pre_commit` named that this task does not own.
    pub unassigned: Vec<TopicPartition>,
    /// Partitions whose returned offset was past the consumed position
    /// (clamped down to it).
    pub clamped: Vec<TopicPartition>,
}

impl FlushedOffsets {
    /// Keep the offsets `pre_commit` returned for partitions that were
    /// consumed, each no further than its consumed position; offsets not
    /// above `last_committed` are dropped (nothing new to commit).
    pub fn clamp(
        returned: TopicPartitionOffsets,
        consumed: &TopicPartitionOffsets,
        last_committed: &TopicPartitionOffsets,
    ) -> (FlushedOffsets, Ignored) {
        let mut ignored = Ignored::default();
        let mut safe = TopicPartitionOffsets::new();
        for (tp, offset) in returned {
            let Some(&position) = consumed.get(&tp) else {
                ignored.unassigned.push(tp);
                continue;
            };
            let offset = if offset > position {
                ignored.clamped.push(tp.clone());
                position
            } else {
                offset
            };
            if last_committed.get(&tp).is_some_and(|&c| c >= offset) {
                continue;
            }
            safe.insert(tp, offset);
        }
        (FlushedOffsets(safe), ignored)
    }

    /// Whether there is nothing to commit.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The offsets.
    pub fn offsets(&self) -> &TopicPartitionOffsets {
        &self.0
    }

    /// Commit through `consumer`; returns the offsets on success so the
    /// caller can remember them as committed.
    pub async fn commit(
        self,
        consumer: &mut dyn Consumer,
        mode: CommitMode,
    ) -> Result<TopicPartitionOffsets, KafkaError> {
        if !self.0.is_empty() {
            consumer.commit(&self.0, mode).await?;
        }
        Ok(self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn tp(p: i32) -> TopicPartition {
        TopicPartition::new("t", p)
    }

    #[test]
    fn never_past_consumed_nor_unassigned() {
        let consumed: TopicPartitionOffsets = [(tp(0), 10), (tp(1), 5)].into();
        let returned: TopicPartitionOffsets = [(tp(0), 12), (tp(1), 3), (tp(9), 1)].into();
        let (safe, ignored) = FlushedOffsets::clamp(returned, &consumed, &Default::default());
        assert_eq!(safe.offsets(), &[(tp(0), 10), (tp(1), 3)].into());
        assert_eq!(ignored.unassigned, vec![tp(9)]);
        assert_eq!(ignored.clamped, vec![tp(0)]);
    }

    #[test]
    fn nothing_new_is_nothing_to_commit() {
        let consumed: TopicPartitionOffsets = [(tp(0), 10)].into();
        let committed: TopicPartitionOffsets = [(tp(0), 10)].into();
        let (safe, _) = FlushedOffsets::clamp(consumed.clone(), &consumed, &committed);
        assert!(safe.is_empty());
    }

    proptest! {
        #[test]
        fn clamp_never_exceeds_consumed(
            consumed in proptest::collection::btree_map(0i32..5, 0i64..100, 0..5),
            returned in proptest::collection::btree_map(0i32..8, 0i64..200, 0..8),
        ) {
            let consumed: TopicPartitionOffsets = consumed.into_iter().map(|(p, o)| (tp(p), o)).collect();
            let returned: TopicPartitionOffsets = returned.into_iter().map(|(p, o)| (tp(p), o)).collect();
            let (safe, _) = FlushedOffsets::clamp(returned.clone(), &consumed, &Default::default());
            for (p, o) in safe.offsets() {
                prop_assert!(consumed.get(p).is_some_and(|c| o <= c));
                prop_assert!(returned.get(p).is_some_and(|r| o <= r));
            }
        }
    }
}
