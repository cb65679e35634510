//! The `errors.*` connector keys.

use connect_api::config::validators::{Range, ValidString};
use connect_api::config::{ConfigDef, ConfigKey, ConfigMap, ConfigType, Importance};
use connect_api::Result;

/// `errors.tolerance`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Tolerance {
    /// Any failure fails the task (the default).
    #[default]
    None,
    /// Failed records are skipped (and reported to the log / DLQ).
    All,
}

/// The parsed `errors.*` keys of a connector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrorConfig {
    /// `errors.retry.timeout`: ms to keep retrying a retriable failure; -1 forever.
    pub retry_timeout_ms: i64,
    /// `errors.retry.delay.max.ms`: cap of the backoff between retries.
    pub retry_delay_max_ms: u64,
    /// `errors.tolerance`.
    pub tolerance: Tolerance,
    /// `errors.log.enable`.
    pub log_enable: bool,
    /// `errors.log.include.messages`.
    pub log_include_messages: bool,
    /// `errors.deadletterqueue.topic.name` (empty: no DLQ).
    pub dlq_topic: String,
    /// `errors.deadletterqueue.topic.replication.factor`.
    pub dlq_replication_factor: i16,
    /// `errors.deadletterqueue.context.headers.enable`.
    pub dlq_context_headers: bool,
}

impl Default for ErrorConfig {
    fn default() -> Self {
        ErrorConfig {
            retry_timeout_ms: 0,
            retry_delay_max_ms: 60_000,
            tolerance: Tolerance::None,
            log_enable: false,
            log_include_messages: false,
            dlq_topic: String::new(),
            dlq_replication_factor: 3,
            dlq_context_headers: false,
        }
    }
}

/// The `errors.*` keys with Kafka's defaults and docs.
pub fn error_config_def() -> ConfigDef {
    const GROUP: &str = "Error Handling";
    ConfigDef::new()
        .define(
            ConfigKey::new("errors.retry.timeout", ConfigType::Long)
                .default(0i64)
                .validator(Range::at_least(-1))
                .importance(Importance::Medium)
                .group(GROUP, 1)
                .doc("The maximum duration in milliseconds that a failed operation will be reattempted. The default is 0, which means no retries will be attempted. Use -1 for infinite retries."),
        )
        .define(
            ConfigKey::new("errors.retry.delay.max.ms", ConfigType::Long)
                .default(60_000i64)
                .validator(Range::at_least(1))
                .importance(Importance::Medium)
                .group(GROUP, 2)
                .doc("The maximum duration in milliseconds between consecutive retry attempts. Jitter will be added to the delay once this limit is reached to prevent thundering herd issues."),
        )
        .define(
            ConfigKey::new("errors.tolerance", ConfigType::String)
                .default("none")
                .validator(ValidString::case_insensitive(["none", "all"]))
                .importance(Importance::Medium)
                .group(GROUP, 3)
                .doc("Behavior for tolerating errors during connector operation. 'none' is the default value and signals that any error will result in an immediate connector task failure; 'all' changes the behavior to skip over problematic records."),
        )
        .define(
            ConfigKey::new("errors.log.enable", ConfigType::Boolean)
                .default(false)
                .importance(Importance::Medium)
                .group(GROUP, 4)
                .doc("If true, write each error and the details of the failed operation and problematic record to the Connect application log. This is 'false' by default, so that only errors that are not tolerated are reported."),
        )
        .define(
            ConfigKey::new("errors.log.include.messages", ConfigType::Boolean)
                .default(false)
                .importance(Importance::Medium)
                .group(GROUP, 5)
                .doc("Whether to include in the log the Connect record that resulted in a failure. For sink records, the topic, partition, offset, and timestamp will be logged. For source records, the key and value (and their schemas), all headers, and the timestamp, Kafka topic, Kafka partition, source partition, and source offset will be logged. This is 'false' by default, which will prevent record keys, values, and headers from being written to log files."),
        )
        .define(
            ConfigKey::new("errors.deadletterqueue.topic.name", ConfigType::String)
                .default("")
                .importance(Importance::Medium)
                .group(GROUP, 6)
                .doc("The name of the topic to be used as the dead letter queue (DLQ) for messages that result in an error when processed by this connector, or its transformations or converters. Unlike Kafka Connect, this also works for source connectors. The topic name is blank by default, which means that no messages are to be recorded in the DLQ."),
        )
        .define(
            ConfigKey::new("errors.deadletterqueue.topic.replication.factor", ConfigType::Short)
                .default(3i16)
                .importance(Importance::Medium)
                .group(GROUP, 7)
                .doc("Replication factor used to create the dead letter queue topic when it doesn't already exist."),
        )
        .define(
            ConfigKey::new("errors.deadletterqueue.context.headers.enable", ConfigType::Boolean)
                .default(false)
                .importance(Importance::Medium)
                .group(GROUP, 8)
                .doc("If true, add headers containing error context to the messages written to the dead letter queue. To avoid clashing with headers from the original record, all error context header keys, all error context header keys will start with __connect.errors."),
        )
}

impl ErrorConfig {
    /// Parse the `errors.*` keys of a connector config (other keys ignored).
    pub fn parse(props: &ConfigMap) -> Result<ErrorConfig> {
        let cfg = error_config_def().parse(props)?;
        let tolerance = match cfg.get_string("errors.tolerance") {
            Some(t) if t.eq_ignore_ascii_case("all") => Tolerance::All,
            _ => Tolerance::None,
        };
        Ok(ErrorConfig {
            retry_timeout_ms: cfg.get_long("errors.retry.timeout").unwrap_or(0),
            retry_delay_max_ms: cfg
                .get_long("errors.retry.delay.max.ms")
                .and_then(|v| u64::try_from(v).ok())
                .unwrap_or(60_000),
            tolerance,
            log_enable: cfg.get_bool("errors.log.enable").unwrap_or(false),
            log_include_messages: cfg.get_bool("errors.log.include.messages").unwrap_or(false),
            dlq_topic: cfg
                .get_string("errors.deadletterqueue.topic.name")
                .unwrap_or("")
                .to_string(),
            dlq_replication_factor: cfg
                .get_short("errors.deadletterqueue.topic.replication.factor")
                .unwrap_or(3),
            dlq_context_headers: cfg
                .get_bool("errors.deadletterqueue.context.headers.enable")
                .unwrap_or(false),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(pairs: &[(&str, &str)]) -> ConfigMap {
        ConfigMap::from_pairs(pairs.iter().copied())
    }

    #[test]
    fn defaults_are_kafkas() {
        assert_eq!(
            ErrorConfig::parse(&ConfigMap::new()).unwrap(),
            ErrorConfig::default()
        );
    }

    #[test]
    fn parses_every_key() {
        let c = ErrorConfig::parse(&props(&[
            ("errors.retry.timeout", "-1"),
            ("errors.retry.delay.max.ms", "1000"),
            ("errors.tolerance", "ALL"),
            ("errors.log.enable", "true"),
            ("errors.log.include.messages", "true"),
            ("errors.deadletterqueue.topic.name", "dlq"),
            ("errors.deadletterqueue.topic.replication.factor", "1"),
            ("errors.deadletterqueue.context.headers.enable", "true"),
        ]))
        .unwrap();
        assert_eq!(c.retry_timeout_ms, -1);
        assert_eq!(c.retry_delay_max_ms, 1000);
        assert_eq!(c.tolerance, Tolerance::All);
        assert!(c.log_enable && c.log_include_messages && c.dlq_context_headers);
        assert_eq!(c.dlq_topic, "dlq");
        assert_eq!(c.dlq_replication_factor, 1);
    }

    #[test]
    fn bad_values_name_the_key() {
        let e = ErrorConfig::parse(&props(&[("errors.tolerance", "some")])).unwrap_err();
        assert!(e.to_string().contains("errors.tolerance"), "{e}");
        let e = ErrorConfig::parse(&props(&[("errors.retry.timeout", "-2")])).unwrap_err();
        assert!(e.to_string().contains("errors.retry.timeout"), "{e}");
    }
}
