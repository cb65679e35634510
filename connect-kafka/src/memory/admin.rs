//! Admin client of the in-memory cluster.

use std::time::Duration;

use async_trait::async_trait;

use super::MemoryKafka;
use crate::{Admin, CreateTopicOutcome, KafkaError, NewTopic, TopicDescription};

pub(super) struct MemoryAdmin {
    cluster: MemoryKafka,
}

impl MemoryAdmin {
    pub(super) fn new(cluster: MemoryKafka) -> Self {
        MemoryAdmin { cluster }
    }
}

#[async_trait]
impl Admin for MemoryAdmin {
    async fn create_topic(
        &self,
        topic: &NewTopic,
        _timeout: Duration,
    ) -> Result<CreateTopicOutcome, KafkaError> {
        self.cluster.create_topic(topic)
    }

    async fn describe_topic(
        &self,
        name: &str,
        _timeout: Duration,
    ) -> Result<Option<TopicDescription>, KafkaError> {
        let state = self.cluster.inner.lock();
        Ok(state.topics.get(name).map(|t| TopicDescription {
            name: name.to_string(),
            partitions: t.partition_count(),
            replication_factor: if t.replication_factor < 1 {
                1
            } else {
                t.replication_factor
            },
            configs: t.configs.clone(),
        }))
    }

    async fn cluster_id(&self, _timeout: Duration) -> Result<Option<String>, KafkaError> {
        Ok(Some(self.cluster.cluster_id().to_string()))
    }

    async fn list_topics(&self, _timeout: Duration) -> Result<Vec<String>, KafkaError> {
        let mut names: Vec<String> = self
            .cluster
            .inner
            .lock()
            .topics
            .keys()
            .map(|n| n.to_string())
            .collect();
        names.sort();
        Ok(names)
    }
}
