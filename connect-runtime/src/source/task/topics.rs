//! Topics the task writes to: known ones, creation (`topic.creation.*`),
//! and when a record can be let go once its topic was delivered to.

use super::*;

/// Create a topic; without CreateTopics support, rely on auto-creation.
/// A free function: holding `&WorkerSourceTask` across the await would
/// require the task to be `Sync`.
pub(super) async fn create_topic(admin: Option<&dyn Admin>, spec: NewTopic) {
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

impl WorkerSourceTask {
    /// Whether `topic`'s records are let go once sent: the task does not
    /// need them back, nothing configured does, and the topic is known to
    /// take records (see `delivered_topics`).
    pub(super) fn releases(&self, topic: &Arc<str>) -> bool {
        self.release_records
            && (self
                .last_delivered
                .as_ref()
                .is_some_and(|t| Arc::ptr_eq(t, topic) || **t == **topic)
                || self.delivered_topics.contains(topic))
    }

    /// `topic` took a record or is known to exist: later records may be let
    /// go once sent.
    pub(super) fn topic_delivered(&mut self, topic: &Arc<str>) {
        if self.release_records && !self.releases(topic) {
            self.delivered_topics.insert(topic.clone());
            self.last_delivered = Some(topic.clone());
        }
    }

    /// Tell the status store the first time this run writes to `topic`
    /// (KIP-558 active topics): a pointer comparison for most records.
    pub(super) fn topic_active(&mut self, topic: &Arc<str>) {
        if self
            .last_active
            .as_ref()
            .is_some_and(|t| Arc::ptr_eq(t, topic))
        {
            return;
        }
        if self.active_topics.insert(topic.clone()) {
            self.status.topic_active(&self.settings.id, topic);
        }
        self.last_active = Some(topic.clone());
    }

    /// Whether `topic` needs no creation step (seen before, or the last one).
    pub(super) fn topic_known(&self, topic: &Arc<str>) -> bool {
        self.last_topic
            .as_ref()
            .is_some_and(|t| Arc::ptr_eq(t, topic))
            || self.known_topics.contains(topic)
    }

    /// Create the record's topic once, when topic creation is configured;
    /// without CreateTopics support, rely on the broker's auto-creation.
    pub(super) async fn ensure_topic(&mut self, topic: &Arc<str>) {
        if self
            .last_topic
            .as_ref()
            .is_some_and(|t| Arc::ptr_eq(t, topic))
        {
            return;
        }
        self.last_topic = Some(topic.clone());
        if self.known_topics.contains(topic) {
            return;
        }
        self.known_topics.insert(topic.clone());
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
