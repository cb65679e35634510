//! Consumer groups of the in-memory cluster: membership, range assignment and
//! committed offsets.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use regex::Regex;

use super::log::Topic;
use crate::{KafkaError, KafkaErrorKind, Subscription, TopicPartition, TopicPartitionOffsets};

/// A subscription ready to match topic names.
#[derive(Debug, Clone)]
pub(super) enum Matcher {
    Topics(BTreeSet<String>),
    Pattern(Regex),
}

impl Matcher {
    pub(super) fn compile(subscription: &Subscription) -> Result<Matcher, KafkaError> {
        match subscription {
            Subscription::Topics(topics) => Ok(Matcher::Topics(topics.iter().cloned().collect())),
            Subscription::Pattern(pattern) => Regex::new(&format!("^(?:{pattern})$"))
                .map(Matcher::Pattern)
                .map_err(|e| {
                    KafkaError::new(
                        KafkaErrorKind::Config,
                        format!("subscription pattern '{pattern}' is not a valid regex: {e}"),
                    )
                }),
        }
    }

    pub(super) fn matches(&self, topic: &str) -> bool {
        match self {
            Matcher::Topics(topics) => topics.contains(topic),
            Matcher::Pattern(re) => re.is_match(topic),
        }
    }
}

/// One member as the group coordinator sees it.
#[derive(Debug)]
pub(super) struct Member {
    pub(super) matcher: Matcher,
    /// What the last rebalance gave this member.
    pub(super) target: BTreeSet<TopicPartition>,
    /// What the member's consumer holds right now (it learns about `target`
    /// from its polls): a partition moves to a new owner only after the old
    /// owner polled its revocation, as in Kafka's rebalance protocol.
    pub(super) owned: BTreeSet<TopicPartition>,
}

/// A consumer group.
#[derive(Debug, Default)]
pub(super) struct Group {
    pub(super) generation: i32,
    /// Sorted by member id: the order the range assignor uses.
    pub(super) members: BTreeMap<String, Member>,
    pub(super) committed: TopicPartitionOffsets,
}

impl Group {
    /// Recompute every member's target with Kafka's range assignor: per
    /// topic, members subscribed to it (in member id order) get consecutive
    /// ranges, the first `partitions % members` one partition more.
    pub(super) fn rebalance(&mut self, topics: &HashMap<Arc<str>, Topic>) {
        let mut targets: BTreeMap<String, BTreeSet<TopicPartition>> = self
            .members
            .keys()
            .map(|id| (id.clone(), BTreeSet::new()))
            .collect();
        let mut names: Vec<&Arc<str>> = topics.keys().collect();
        names.sort();
        for name in names {
            let subscribers: Vec<&str> = self
                .members
                .iter()
                .filter(|(_, m)| m.matcher.matches(name))
                .map(|(id, _)| id.as_str())
                .collect();
            if subscribers.is_empty() {
                continue;
            }
            let partitions = topics[name].partition_count();
            let count = subscribers.len() as i32;
            let (per, extra) = (partitions / count, partitions % count);
            let mut next = 0;
            for (i, id) in subscribers.iter().enumerate() {
                let take = per + i32::from((i as i32) < extra);
                if let Some(set) = targets.get_mut(*id) {
                    set.extend(
                        (next..next + take).map(|p| TopicPartition::new(Arc::clone(name), p)),
                    );
                }
                next += take;
            }
        }
        let mut changed = false;
        for (id, target) in targets {
            if let Some(member) = self.members.get_mut(&id) {
                if member.target != target {
                    member.target = target;
                    changed = true;
                }
            }
        }
        if changed {
            self.generation += 1;
        }
    }

    /// Whether `tp` is held by a member other than `member_id`.
    pub(super) fn owned_by_other(&self, member_id: &str, tp: &TopicPartition) -> bool {
        self.members
            .iter()
            .any(|(id, m)| id != member_id && m.owned.contains(tp))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::NewTopic;

    fn member(topics: &[&str]) -> Member {
        Member {
            matcher: Matcher::Topics(topics.iter().map(|t| t.to_string()).collect()),
            target: BTreeSet::new(),
            owned: BTreeSet::new(),
        }
    }

    #[test]
    fn range_assignment_gives_first_members_the_extra_partitions() {
        let mut topics = HashMap::new();
        let t = Topic::new(&NewTopic::new("t", 5)).unwrap();
        topics.insert(Arc::clone(&t.name), t);
        let mut g = Group::default();
        g.members.insert("a".into(), member(&["t"]));
        g.members.insert("b".into(), member(&["t"]));
        g.rebalance(&topics);
        let parts = |id: &str| {
            g.members[id]
                .target
                .iter()
                .map(|tp| tp.partition)
                .collect::<Vec<_>>()
        };
        assert_eq!(parts("a"), [0, 1, 2]);
        assert_eq!(parts("b"), [3, 4]);
        assert_eq!(g.generation, 1);
        g.rebalance(&topics);
        assert_eq!(
            g.generation, 1,
            "an unchanged assignment is not a new generation"
        );
    }

    #[test]
    fn pattern_matches_whole_names_only() {
        let m = Matcher::compile(&Subscription::Pattern("orders.*".into())).unwrap();
        assert!(m.matches("orders-eu"));
        assert!(!m.matches("old-orders"));
        assert!(Matcher::compile(&Subscription::Pattern("(".into())).is_err());
    }
}
