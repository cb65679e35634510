//! The settings of one task, built in one place from the connector's config
//! (provider references resolved) and the worker's: the worker and the
//! testkit's pipelines both use these, so a default lives once.

use std::time::Duration;

use connect_api::config::{with_prefix, ConfigMap};
use connect_api::connector::ConnectorType;
use connect_api::{ConnectError, Result};

use super::config::{sink_topics, source_connector_def, WorkerConfig, TRANSACTION_BOUNDARY};
use crate::errors::ErrorConfig;
use crate::kafka::Subscription;
use crate::sink::SinkTaskSettings;
use crate::source::{
    OffsetsInvalidPolicy, SourceTaskSettings, TransactionBoundary, TransactionSettings,
};
use crate::status::TaskId;

/// How long a sink task's consumer poll waits before the loop turns (idle
/// `put`s, flushes, control changes).
const SINK_POLL_TIMEOUT: Duration = Duration::from_millis(500);

/// Worker client properties with the connector's `<client>.override.*`
/// entries on top (Kafka's `connector.client.config.override.policy=All`).
pub(super) fn client_props(mut base: ConfigMap, connector: &ConfigMap, prefix: &str) -> ConfigMap {
    base.extend(with_prefix(connector, prefix));
    base
}

impl SourceTaskSettings {
    /// The settings of source task `id` of a connector configured by
    /// `connector`, on a worker configured by `worker`: Kafka's keys and
    /// defaults (`source.max.inflight.records` 10000, topic creation only
    /// when the worker allows it and the connector names
    /// `topic.creation.default.partitions`, ...).
    pub fn from_configs(id: TaskId, connector: &ConfigMap, worker: &WorkerConfig) -> Result<Self> {
        worker
            .client_override_policy()
            .enforce(ConnectorType::Source, connector)?;
        let def = source_connector_def().parse(connector)?;
        let topic_creation = (worker.topic_creation_enabled()
            && connector.contains_key("topic.creation.default.partitions"))
        .then(|| {
            (
                def.get_int("topic.creation.default.partitions")
                    .unwrap_or(-1),
                def.get_short("topic.creation.default.replication.factor")
                    .unwrap_or(-1),
            )
        });
        let offsets_invalid_policy = match def.get_string("offsets.invalid.policy") {
            Some(p) if p.eq_ignore_ascii_case("reset") => OffsetsInvalidPolicy::Reset,
            _ => OffsetsInvalidPolicy::Fail,
        };
        let transactions = transactions(&id, &def, worker)?;
        Ok(SourceTaskSettings {
            id,
            flush_interval: worker.offset_flush_interval(),
            flush_timeout: worker.offset_flush_timeout(),
            max_in_flight: def
                .get_int("source.max.inflight.records")
                .unwrap_or(10_000)
                .max(1) as usize,
            topic_creation,
            offsets_invalid_policy,
            errors: ErrorConfig::parse(connector)?,
            producer: client_props(worker.producer_props(), connector, "producer.override."),
            shutdown_timeout: worker.shutdown_timeout(),
            metrics: Default::default(),
            transactions,
        })
    }
}

/// The connector key naming a source connector's own offsets topic
/// (KIP-618).
pub(crate) const CONNECTOR_OFFSETS_TOPIC: &str = "offsets.storage.topic";

/// The transactions of a source task on a worker with exactly-once source
/// support: Kafka's transactional id, the connector's boundary, and the
/// offsets topic (the connector's own, or the worker's).
fn transactions(
    id: &TaskId,
    def: &connect_api::config::ParsedConfig,
    worker: &WorkerConfig,
) -> Result<Option<TransactionSettings>> {
    if !worker.exactly_once_source() {
        return Ok(None);
    }
    let boundary = match def
        .get_string(TRANSACTION_BOUNDARY)
        .map(|b| b.trim().to_ascii_lowercase())
        .as_deref()
    {
        Some("interval") => {
            let every = def
                .get_long("transaction.boundary.interval.ms")
                .map_or(worker.offset_flush_interval(), |ms| {
                    Duration::from_millis(ms.max(0) as u64)
                });
            TransactionBoundary::Interval(every)
        }
        Some("connector") => TransactionBoundary::Connector,
        _ => TransactionBoundary::Poll,
    };
    // The connector's own offsets topic when it names one (its records and
    // offsets then commit together there; the worker's topic gets a copy).
    let offsets_topic = def
        .get_string(CONNECTOR_OFFSETS_TOPIC)
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .unwrap_or(worker.offset_storage_topic());
    Ok(Some(TransactionSettings {
        transactional_id: TransactionSettings::transactional_id(worker.group_id(), id),
        boundary,
        offsets_topic: offsets_topic.to_string(),
    }))
}

impl SinkTaskSettings {
    /// The settings of sink task `id` of a connector configured by
    /// `connector`, on a worker configured by `worker`: the subscription
    /// from `topics` (a LIST, as Kafka parses it) or `topics.regex`, the
    /// worker's flush interval and client properties with the connector's
    /// overrides.
    pub fn from_configs(id: TaskId, connector: &ConfigMap, worker: &WorkerConfig) -> Result<Self> {
        worker
            .client_override_policy()
            .enforce(ConnectorType::Sink, connector)?;
        let regex = connector
            .get("topics.regex")
            .map(|r| r.trim())
            .filter(|r| !r.is_empty());
        let subscription = match regex {
            Some(r) => Subscription::Pattern(r.to_string()),
            None => {
                let topics = sink_topics(connector);
                if topics.is_empty() {
                    return Err(ConnectError::config(
                        "topics",
                        "a sink needs 'topics' or 'topics.regex'",
                    ));
                }
                Subscription::Topics(topics)
            }
        };
        Ok(SinkTaskSettings {
            id,
            subscription,
            flush_interval: worker.offset_flush_interval(),
            errors: ErrorConfig::parse(connector)?,
            consumer: client_props(worker.consumer_props(), connector, "consumer.override."),
            producer: client_props(worker.producer_props(), connector, "producer.override."),
            poll_timeout: SINK_POLL_TIMEOUT,
            metrics: Default::default(),
            assignment_warn_after: Duration::from_secs(10),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(pairs: &[(&str, &str)]) -> ConfigMap {
        ConfigMap::from_pairs(pairs.iter().copied())
    }

    fn worker(extra: &[(&str, &str)]) -> WorkerConfig {
        let mut props = map(&[
            ("key.converter", "JsonConverter"),
            ("value.converter", "JsonConverter"),
            ("consumer.max.poll.records", "7"),
        ]);
        props.extend(map(extra));
        WorkerConfig::parse(&props).unwrap()
    }

    fn id() -> TaskId {
        TaskId {
            connector: "c".into(),
            task: 0,
        }
    }

    #[test]
    fn sink_topics_are_a_list_without_blanks_or_repeats() {
        let s = SinkTaskSettings::from_configs(
            id(),
            &map(&[
                ("topics", " a, b ,a,, c"),
                ("consumer.override.fetch.min.bytes", "9"),
            ]),
            &worker(&[]),
        )
        .unwrap();
        assert_eq!(
            s.subscription,
            Subscription::Topics(vec!["a".into(), "b".into(), "c".into()])
        );
        assert_eq!(
            s.consumer.get("max.poll.records").map(String::as_str),
            Some("7")
        );
        assert_eq!(
            s.consumer.get("fetch.min.bytes").map(String::as_str),
            Some("9")
        );
        let regex =
            SinkTaskSettings::from_configs(id(), &map(&[("topics.regex", "t.*")]), &worker(&[]))
                .unwrap();
        assert_eq!(regex.subscription, Subscription::Pattern("t.*".into()));
        let e = SinkTaskSettings::from_configs(id(), &map(&[("topics", " , ")]), &worker(&[]))
            .unwrap_err();
        assert!(e.to_string().contains("topics"), "{e}");
    }

    #[test]
    fn source_defaults_are_kafkas() {
        let base = map(&[("name", "c"), ("connector.class", "X")]);
        let s = SourceTaskSettings::from_configs(id(), &base, &worker(&[])).unwrap();
        assert_eq!(s.max_in_flight, 10_000);
        assert_eq!(s.topic_creation, None);
        assert_eq!(s.offsets_invalid_policy, OffsetsInvalidPolicy::Fail);
        assert_eq!(s.flush_interval, Duration::from_secs(60));
        let mut creating = base.clone();
        creating.extend(map(&[
            ("topic.creation.default.partitions", "3"),
            ("offsets.invalid.policy", "RESET"),
        ]));
        let s = SourceTaskSettings::from_configs(id(), &creating, &worker(&[])).unwrap();
        assert_eq!(s.topic_creation, Some((3, -1)));
        assert_eq!(s.offsets_invalid_policy, OffsetsInvalidPolicy::Reset);
        let off = worker(&[("topic.creation.enable", "false")]);
        let s = SourceTaskSettings::from_configs(id(), &creating, &off).unwrap();
        assert_eq!(s.topic_creation, None);
    }
}
