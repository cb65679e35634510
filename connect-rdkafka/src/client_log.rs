//! librdkafka's own log lines, in the worker's log (target `librdkafka`).
//!
//! A client configured with librdkafka's `debug` contexts (`consumer.debug`,
//! `producer.debug`, `consumer.override.debug`, ...) gets its debug lines at
//! INFO: whoever set `debug` asked to see them, and should not also have to
//! lower the whole worker's log level.

use rdkafka::config::RDKafkaLogLevel;

/// Whether `config` names librdkafka debug contexts.
pub(super) fn debug_asked(config: &rdkafka::ClientConfig) -> bool {
    config.get("debug").is_some_and(|d| !d.trim().is_empty())
}

/// One librdkafka log line, at the matching level.
pub(super) fn forward(debug_asked: bool, level: RDKafkaLogLevel, facility: &str, message: &str) {
    match level {
        RDKafkaLogLevel::Emerg
        | RDKafkaLogLevel::Alert
        | RDKafkaLogLevel::Critical
        | RDKafkaLogLevel::Error => {
            tracing::error!(target: "librdkafka", facility, "{message}")
        }
        RDKafkaLogLevel::Warning => tracing::warn!(target: "librdkafka", facility, "{message}"),
        RDKafkaLogLevel::Notice | RDKafkaLogLevel::Info => {
            tracing::info!(target: "librdkafka", facility, "{message}")
        }
        RDKafkaLogLevel::Debug if debug_asked => {
            tracing::info!(target: "librdkafka", facility, "{message}")
        }
        RDKafkaLogLevel::Debug => tracing::debug!(target: "librdkafka", facility, "{message}"),
    }
}
