//! Topics the task writes to: known ones, creation (`topic.creation.*`),
//! and when a record can be let go once its topic was delivered to.

use super::*;

/// Create a topic; without CreateTopics support, rely on auto-creation.
/// A free function: holding `&WorkerSourceTask` across the await would
/// require the task to be `Sync`.
async fn create_topic(admin: Option<&dyn Admin>, spec: NewTopic) {
    let Some(admin) = admin else { return };
    match admin.create_topic(&spec, Duration::from_secs(5)).await {
        Ok(CreateTopicOutcome::Created) => {
            tracing::info!(topic = %spec.name, partitions = spec.partitions, "created topic")
        }
        Ok(CreateTopicOutcome::AlreadyExists) => {}
        Ok(CreateTopicOutcome::Unsupported { reason }) => tracing::info!(
            topic = %spec.name, %reason,
            "the cluster cannot create topics; relying on auto-creation"
        ),
        Err(e) => tracing::warn!(topic = %spec.name, error = %e,
            "topic creation failed; relying on auto-creation"),
    }
}

/// A set of topics that remembers the last one inserted: most records of
/// a task go to one topic, so a lookup is usually one pointer comparison,
/// no hashing.
#[derive(Debug, Default)]
pub(super) struct SeenTopics {
    all: HashSet<Arc<str>>,
    last: Option<Arc<str>>,
}

impl SeenTopics {
    /// Whether `topic` is in the set.
    pub(super) fn contains(&self, topic: &Arc<str>) -> bool {
        self.last
            .as_ref()
            .is_some_and(|t| Arc::ptr_eq(t, topic) || **t == **topic)
            || self.all.contains(topic)
    }

    /// Add `topic` and make it the last one; true when it was new.
    pub(super) fn insert(&mut self, topic: &Arc<str>) -> bool {
        if self.last.as_ref().is_some_and(|t| Arc::ptr_eq(t, topic)) {
            return false;
        }
        self.last = Some(topic.clone());
        !self.all.contains(topic) && self.all.insert(topic.clone())
    }
}

impl WorkerSourceTask {
    /// Whether `topic`'s records are let go once sent: the task does not
    /// need them back, nothing configured does, and the topic is known to
    /// take records (see `delivered_topics`).
    pub(super) fn releases(&self, topic: &Arc<str>) -> bool {
        self.release_records && self.delivered_topics.contains(topic)
    }

    /// `topic` took a record or is known to exist: later records may be let
    /// go once sent.
    pub(super) fn topic_delivered(&mut self, topic: &Arc<str>) {
        if self.release_records {
            self.delivered_topics.insert(topic);
        }
    }

    /// Tell the status store the first time this run writes to `topic`
    /// (KIP-558 active topics): a pointer comparison for most records.
    pub(super) fn topic_active(&mut self, topic: &Arc<str>) {
        if self.active_topics.insert(topic) {
            self.status.topic_active(&self.settings.id, topic);
        }
    }

    /// Whether `topic` needs no creation step (seen before, or the last one).
    pub(super) fn topic_known(&self, topic: &Arc<str>) -> bool {
        self.known_topics.contains(topic)
    }

    /// Create the record's topic once, when topic creation is configured;
    /// without CreateTopics support, rely on the broker's auto-creation.
    pub(super) async fn ensure_topic(&mut self, topic: &Arc<str>) {
        if !self.known_topics.insert(topic) {
            return;
        }
        if let Some((partitions, rf)) = self.settings.topic_creation {
            let mut spec = NewTopic::new(topic.to_string(), partitions);
            spec.replication_factor = rf;
            create_topic(self.admin.as_deref(), spec).await;
        }
        // A topic the cluster already has needs no kept copies (see
        // `delivered_topics`): one metadata request per new topic, rather
        // than a copy of every record sent before its first ack.
        if self.release_records && !self.releases(topic) {
            if let Some(admin) = &self.admin {
                if let Ok(Some(_)) = admin.describe_topic(topic, Duration::from_secs(5)).await {
                    self.topic_delivered(topic);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seen_topics_find_equal_names_and_insert_once() {
        let mut seen = SeenTopics::default();
        let a: Arc<str> = Arc::from("a");
        let b: Arc<str> = Arc::from("b");
        assert!(!seen.contains(&a));
        assert!(seen.insert(&a));
        assert!(!seen.insert(&a), "the last one again");
        assert!(seen.insert(&b));
        // Another allocation of the same name: found by value, not inserted twice.
        let a2: Arc<str> = Arc::from("a");
        assert!(seen.contains(&a2) && seen.contains(&a) && seen.contains(&Arc::from("b")));
        assert!(!seen.insert(&a2));
        assert!(!seen.contains(&Arc::from("c")));
    }
}
