//! Admin client on rdkafka's `AdminClient`. CreateTopics that times out (as
//! on librdkafka's mock cluster) is reported as unsupported so the runtime
//! falls back to auto-creation.

use std::sync::Arc;
use std::time::Duration;

use ::rdkafka::admin::{AdminClient, AdminOptions, NewTopic as RdNewTopic, TopicReplication};
use ::rdkafka::client::DefaultClientContext;
use ::rdkafka::error::RDKafkaErrorCode;
use ::rdkafka::metadata::Metadata;
use async_trait::async_trait;

use super::errors::{from_rd, kind_of};
use super::off_thread::DropOffThread;
use connect_kafka::{
    Admin, CreateTopicOutcome, KafkaError, KafkaErrorKind, NewTopic, TopicDescription,
};

pub(super) struct RdAdmin {
    /// Destroyed off the async threads: `rd_kafka_destroy` waits for the
    /// client's threads, about 100 ms (the first `GET /` asks an admin
    /// client for the cluster id and answered 100 ms late because of it).
    inner: DropOffThread<AdminClient<DefaultClientContext>>,
}

impl RdAdmin {
    pub(super) fn new(config: &::rdkafka::ClientConfig) -> Result<Self, KafkaError> {
        let inner = config
            .create()
            .map_err(|e| from_rd(&e, "creating the admin client"))?;
        Ok(RdAdmin {
            inner: DropOffThread::new(inner),
        })
    }

    async fn metadata(
        &self,
        topic: Option<String>,
        timeout: Duration,
    ) -> Result<Metadata, KafkaError> {
        let inner = Arc::clone(&*self.inner);
        let doing = match &topic {
            Some(t) => format!("metadata of topic '{t}'"),
            None => "listing topics".to_string(),
        };
        tokio::task::spawn_blocking(move || inner.inner().fetch_metadata(topic.as_deref(), timeout))
            .await
            .map_err(|e| KafkaError::fatal(format!("{doing} did not finish: {e}")))?
            .map_err(|e| from_rd(&e, doing))
    }
}

#[async_trait]
impl Admin for RdAdmin {
    async fn create_topic(
        &self,
        topic: &NewTopic,
        timeout: Duration,
    ) -> Result<CreateTopicOutcome, KafkaError> {
        let mut spec = RdNewTopic::new(
            &topic.name,
            topic.partitions,
            TopicReplication::Fixed(i32::from(topic.replication_factor)),
        );
        for (k, v) in &topic.configs {
            spec = spec.set(k, v);
        }
        let options = AdminOptions::new()
            .operation_timeout(Some(timeout))
            .request_timeout(Some(timeout));
        let unsupported = |why: String| CreateTopicOutcome::Unsupported {
            reason: format!(
                "CreateTopics for '{}' {why}; relying on auto-creation",
                topic.name
            ),
        };
        // The outer timeout covers clusters that never answer at all.
        let call = self.inner.create_topics([&spec], &options);
        let results = match tokio::time::timeout(timeout + Duration::from_secs(1), call).await {
            Err(_) => return Ok(unsupported(format!("got no answer within {timeout:?}"))),
            Ok(Err(e)) => {
                let err = from_rd(&e, format_args!("creating topic '{}'", topic.name));
                return match err.kind() {
                    KafkaErrorKind::Timeout | KafkaErrorKind::Unsupported => {
                        Ok(unsupported(err.to_string()))
                    }
                    _ => Err(err),
                };
            }
            Ok(Ok(results)) => results,
        };
        match results.into_iter().next() {
            Some(Ok(_)) => Ok(CreateTopicOutcome::Created),
            Some(Err((_, RDKafkaErrorCode::TopicAlreadyExists))) => {
                Ok(CreateTopicOutcome::AlreadyExists)
            }
            Some(Err((_, code))) => match kind_of(code) {
                KafkaErrorKind::Timeout | KafkaErrorKind::Unsupported => {
                    Ok(unsupported(format!("failed with {code}")))
                }
                kind => Err(KafkaError::new(
                    kind,
                    format!("creating topic '{}': {code}", topic.name),
                )),
            },
            None => Err(KafkaError::fatal(format!(
                "creating topic '{}': the broker returned no result",
                topic.name
            ))),
        }
    }

    async fn describe_topic(
        &self,
        name: &str,
        timeout: Duration,
    ) -> Result<Option<TopicDescription>, KafkaError> {
        let metadata = self.metadata(Some(name.to_string()), timeout).await?;
        let Some(topic) = metadata.topics().iter().find(|t| t.name() == name) else {
            return Ok(None);
        };
        match topic.error() {
            None => {}
            Some(e) if RDKafkaErrorCode::from(e) == RDKafkaErrorCode::UnknownTopicOrPartition => {
                return Ok(None)
            }
            Some(e) => {
                let code = RDKafkaErrorCode::from(e);
                return Err(KafkaError::new(
                    kind_of(code),
                    format!("describing topic '{name}': {code}"),
                ));
            }
        }
        let replication_factor = topic.partitions().first().map_or(-1, |p| {
            i16::try_from(p.replicas().len()).unwrap_or(i16::MAX)
        });
        Ok(Some(TopicDescription {
            name: name.to_string(),
            partitions: i32::try_from(topic.partitions().len()).unwrap_or(i32::MAX),
            replication_factor,
            configs: Default::default(),
        }))
    }

    async fn list_topics(&self, timeout: Duration) -> Result<Vec<String>, KafkaError> {
        let metadata = self.metadata(None, timeout).await?;
        let mut names: Vec<String> = metadata
            .topics()
            .iter()
            .map(|t| t.name().to_string())
            .collect();
        names.sort();
        Ok(names)
    }

    async fn cluster_id(&self, timeout: Duration) -> Result<Option<String>, KafkaError> {
        let inner = Arc::clone(&*self.inner);
        tokio::task::spawn_blocking(move || inner.inner().fetch_cluster_id(timeout))
            .await
            .map_err(|e| KafkaError::fatal(format!("fetching the cluster id did not finish: {e}")))
    }
}
