//! KIP-875 offset management: read, alter and reset a connector's offsets
//! (`GET/PATCH/DELETE /connectors/{name}/offsets`).
//!
//! Source offsets live in the worker's [`OffsetStore`](crate::offsets::OffsetStore),
//! behind the connector's own offsets topic when it names one
//! ([`Worker::source_offsets_for`]);
//! sink offsets are the committed offsets of the connector's consumer group
//! (`connect-<name>`, or `consumer.override.group.id`), read and written
//! through the Kafka port. Alter and reset need the connector to be STOPPED,
//! so no task races the change; the connector's own `alter_offsets` is asked
//! first, on a fresh unstarted instance, and may veto.
//!
//! Sink resets differ from Kafka: the port has no "delete consumer group
//! offsets" call, so a reset commits offset 0 (the log start) for every
//! partition the group has an offset for. The next consumer reads from the
//! beginning of the log; where the log start has moved past 0 (retention),
//! offset 0 is out of range and `auto.offset.reset=earliest`, the sink
//! default, takes over. `GET .../offsets` then shows `0` for those
//! partitions instead of omitting them.
//!
//! Sink offsets are committed from outside the group when the broker allows
//! it (Kafka does for an empty group). librdkafka's mock cluster does not, so
//! there the helper joins the (stopped, hence empty) group and commits as a
//! member; a member that left without leaving the group (a crashed or
//! unclean consumer) holds that join up until its session expires (45 s by
//! default), so the request can take that long.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use connect_api::config::ConfigMap;
use connect_api::connector::ConnectorType;
use connect_api::sink::TopicPartition;
use connect_api::{ConnectError, Result, SourceMap};
use serde::Serialize;
use serde_json::Value;

use super::{client_props, AnyConnector, Worker};
use crate::kafka::{CommitMode, Consumer, ConsumerEvent, Subscription, TopicPartitionOffsets};

const TIMEOUT: Duration = Duration::from_secs(30);
/// Longer than a consumer session (45 s by default): a member that left
/// without saying so holds up the join until its session expires.
const JOIN_TIMEOUT: Duration = Duration::from_secs(60);
const KAFKA_TOPIC: &str = "kafka_topic";
const KAFKA_PARTITION: &str = "kafka_partition";
const KAFKA_OFFSET: &str = "kafka_offset";

/// One partition and its offset, as `GET /connectors/{name}/offsets` lists it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConnectorOffset {
    /// The source partition, or `{"kafka_topic","kafka_partition"}` for sinks.
    pub partition: SourceMap,
    /// The offset, or `{"kafka_offset":N}` for sinks.
    pub offset: SourceMap,
}

/// `{"offsets":[...]}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConnectorOffsets {
    /// Every stored partition with its offset.
    pub offsets: Vec<ConnectorOffset>,
}

/// A requested offset change: partition and new offset (`None` resets it).
pub type OffsetChange = (SourceMap, Option<SourceMap>);

impl Worker {
    /// The offsets of connector `name` with `config`, wherever its config
    /// is kept (a distributed herder holds it in the config topic).
    pub async fn offsets_of(&self, name: &str, config: &ConfigMap) -> Result<ConnectorOffsets> {
        let class = config.get("connector.class").map_or("", |c| c.trim());
        let kind = self.inner.plugins.connector(class)?.kind;
        let offsets = match kind {
            ConnectorType::Source => {
                let store = self.source_offsets_for(config);
                // What other workers wrote, too (a no-op for local stores).
                store.refresh().await?;
                store
                    .connector_offsets(name)
                    .into_iter()
                    .map(|(partition, offset)| ConnectorOffset { partition, offset })
                    .collect()
            }
            ConnectorType::Sink => {
                let mut consumer = self.group_consumer(name, config)?;
                let partitions = self.sink_partitions(config).await?;
                let committed = consumer.committed(&partitions, TIMEOUT).await?;
                let _ = consumer.close().await;
                committed
                    .into_iter()
                    .map(|(tp, offset)| ConnectorOffset {
                        partition: sink_partition(&tp),
                        offset: [(KAFKA_OFFSET.to_string(), Value::from(offset))]
                            .into_iter()
                            .collect(),
                    })
                    .collect()
            }
        };
        Ok(ConnectorOffsets { offsets })
    }

    /// Alter (`Some`) or reset (`None`) the offsets of connector `name`
    /// with `config`, which the caller checked is STOPPED; Kafka's message.
    pub async fn modify_offsets_of(
        &self,
        name: &str,
        stored: &ConfigMap,
        changes: Option<Vec<OffsetChange>>,
    ) -> Result<String> {
        if changes.as_ref().is_some_and(|c| c.is_empty()) {
            return Err(no_changes());
        }
        let reset = changes.is_none();
        let config = self.resolved(stored)?;
        let class = stored.get("connector.class").ok_or_else(|| {
            ConnectError::config(
                "connector.class",
                "the stored config has no connector.class",
            )
        })?;
        let plugin = self.inner.plugins.connector(class)?;
        let acknowledged = match plugin.create() {
            AnyConnector::Source(mut connector) => {
                // The connector's own offsets topic and the worker's: a
                // change or reset goes to both, as Kafka writes it.
                let store = self.source_offsets_for(stored);
                store.refresh().await?;
                let entries = match changes {
                    Some(c) => {
                        for (partition, _) in &c {
                            if partition.is_empty() {
                                return Err(bad_request(
                                    "Source partitions may not be empty objects",
                                ));
                            }
                        }
                        c
                    }
                    None => store
                        .connector_offsets(name)
                        .into_iter()
                        .map(|(p, _)| (p, None))
                        .collect(),
                };
                let ack = connector.alter_offsets(&config, &entries).await?;
                if !entries.is_empty() {
                    store.write(name, entries).await?;
                }
                ack
            }
            AnyConnector::Sink(mut connector) => {
                let mut consumer = self.group_consumer(name, stored)?;
                let wanted: BTreeMap<TopicPartition, Option<i64>> = match changes {
                    Some(c) => c
                        .iter()
                        .map(|(p, o)| parse_sink_change(p, o.as_ref()))
                        .collect::<Result<_>>()?,
                    None => {
                        let partitions = self.sink_partitions(stored).await?;
                        consumer
                            .committed(&partitions, TIMEOUT)
                            .await?
                            .into_keys()
                            .map(|tp| (tp, None))
                            .collect()
                    }
                };
                let ack = connector.alter_offsets(&config, &wanted).await?;
                // No "delete group offsets" in the port: a reset commits the
                // log start and auto.offset.reset=earliest covers the rest.
                let commit: TopicPartitionOffsets = wanted
                    .into_iter()
                    .map(|(tp, o)| (tp, o.unwrap_or(0)))
                    .collect();
                if !commit.is_empty() {
                    commit_as_member(consumer.as_mut(), &commit).await?;
                }
                let _ = consumer.close().await;
                ack
            }
        };
        let done = if reset { "reset" } else { "altered" };
        Ok(if acknowledged {
            format!("The offsets for this connector have been {done} successfully")
        } else {
            format!("The Connect framework-managed offsets for this connector have been {done} successfully. However, if this connector manages offsets externally, they will need to be manually {done} in the system that the connector uses.")
        })
    }

    /// A consumer in the sink connector's group, not subscribed: used only
    /// to read and commit the group's offsets.
    fn group_consumer(&self, name: &str, connector: &ConfigMap) -> Result<Box<dyn Consumer>> {
        let mut props = client_props(
            self.inner.config.consumer_props(),
            connector,
            "consumer.override.",
        );
        props
            .entry("group.id".into())
            .or_insert_with(|| format!("connect-{name}"));
        props.insert("enable.auto.commit".into(), "false".into());
        // If this helper has to join the group, a short session keeps its
        // membership from delaying the connector's next start for long.
        props
            .entry("session.timeout.ms".into())
            .or_insert_with(|| "6000".into());
        props
            .entry("heartbeat.interval.ms".into())
            .or_insert_with(|| "1000".into());
        Ok(self.inner.cluster.consumer(&props)?)
    }

    /// Every partition of the topics a sink config names (or its regex matches).
    async fn sink_partitions(&self, connector: &ConfigMap) -> Result<Vec<TopicPartition>> {
        let admin = self.inner.cluster.admin(&self.inner.config.admin_props())?;
        let regex = connector
            .get("topics.regex")
            .map(|r| r.trim())
            .filter(|r| !r.is_empty());
        let topics: Vec<String> = match regex {
            Some(r) => {
                let re = regex::Regex::new(&format!("^(?:{r})$"))
                    .map_err(|e| ConnectError::config("topics.regex", e.to_string()))?;
                admin
                    .list_topics(TIMEOUT)
                    .await?
                    .into_iter()
                    .filter(|t| re.is_match(t))
                    .collect()
            }
            None => super::sink_topics(connector),
        };
        let mut out = Vec::new();
        for topic in topics {
            if let Some(d) = admin.describe_topic(&topic, TIMEOUT).await? {
                let topic: std::sync::Arc<str> = topic.into();
                out.extend((0..d.partitions).map(|p| TopicPartition::new(topic.clone(), p)));
            }
        }
        Ok(out)
    }
}

/// A PATCH with nothing to alter.
pub(crate) fn no_changes() -> ConnectError {
    bad_request(
        "The offsets to be altered must not be empty: give at least one {\"partition\":...,\"offset\":...} entry",
    )
}

/// Commit `offsets` for the consumer's group. A commit from outside the
/// group is tried first (Kafka accepts it for an empty group); brokers that
/// refuse it (librdkafka's mock cluster answers UNKNOWN_MEMBER_ID) get a
/// commit from a member: the consumer joins the group, which is empty since
/// the connector is stopped, and commits once partitions are assigned.
async fn commit_as_member(
    consumer: &mut dyn Consumer,
    offsets: &TopicPartitionOffsets,
) -> Result<()> {
    let outside = match consumer.commit(offsets, CommitMode::Sync).await {
        Ok(()) => return Ok(()),
        Err(e) => e,
    };
    let topics: BTreeSet<String> = offsets.keys().map(|tp| tp.topic.to_string()).collect();
    consumer.subscribe(&Subscription::Topics(topics.into_iter().collect()))?;
    let deadline = tokio::time::Instant::now() + JOIN_TIMEOUT;
    loop {
        if tokio::time::Instant::now() >= deadline {
            return Err(ConnectError::retriable(format!(
                "could not commit the new offsets ({outside}), and joining the consumer group to commit them timed out after {JOIN_TIMEOUT:?}; check that no other consumer uses the connector's group, then retry"
            )));
        }
        if let Some(ConsumerEvent::Assigned(_)) = consumer.poll(Duration::from_millis(200)).await? {
            break;
        }
    }
    consumer
        .commit(offsets, CommitMode::Sync)
        .await
        .map_err(|e| ConnectError::from(e).context("committing the new offsets as a group member"))
}

fn sink_partition(tp: &TopicPartition) -> SourceMap {
    [
        (KAFKA_TOPIC.to_string(), Value::from(&*tp.topic)),
        (KAFKA_PARTITION.to_string(), Value::from(tp.partition)),
    ]
    .into_iter()
    .collect()
}

/// A sink offset change in KIP-875's shape, checked as Kafka checks it.
fn parse_sink_change(
    partition: &SourceMap,
    offset: Option<&SourceMap>,
) -> Result<(TopicPartition, Option<i64>)> {
    let topic = match partition.get(KAFKA_TOPIC) {
        Some(Value::String(t)) if !t.is_empty() => t.clone(),
        _ => {
            return Err(bad_request(format!(
                "Kafka partitions must be objects with a non-empty string '{KAFKA_TOPIC}' and an integer '{KAFKA_PARTITION}'; got {}",
                Value::Object(partition.clone())
            )))
        }
    };
    let part = partition
        .get(KAFKA_PARTITION)
        .and_then(Value::as_i64)
        .and_then(|p| i32::try_from(p).ok())
        .filter(|p| *p >= 0)
        .ok_or_else(|| {
            bad_request(format!(
                "Partition '{KAFKA_PARTITION}' must be a non-negative integer; got {}",
                Value::Object(partition.clone())
            ))
        })?;
    let offset = match offset {
        None => None,
        Some(o) => Some(
            o.get(KAFKA_OFFSET)
                .and_then(Value::as_i64)
                .filter(|v| *v >= 0)
                .ok_or_else(|| {
                    bad_request(format!(
                        "Offsets for sink connectors must be objects with a non-negative integer '{KAFKA_OFFSET}' (or null to reset); got {} for {topic}-{part}",
                        Value::Object(o.clone())
                    ))
                })?,
        ),
    };
    Ok((TopicPartition::new(topic, part), offset))
}

/// A request the caller must fix (HTTP 400); the REST layer shows the
/// message alone.
pub(crate) fn bad_request(message: impl Into<String>) -> ConnectError {
    ConnectError::config(REQUEST_KEY, message)
}

/// The pseudo config key of errors that concern the whole request.
pub(crate) const REQUEST_KEY: &str = "request";
