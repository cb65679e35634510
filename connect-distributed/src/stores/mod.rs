//! The config and status topics of distributed mode, kept through
//! connect-runtime's [`KafkaLog`](connect_runtime::kafka_log::KafkaLog):
//! read to their end when opened, then followed, so that writes of every
//! worker in the group (Java ones included) are applied here.
//!
//! - [`KafkaConfigLog`]: the config topic (`config.storage.topic`) replayed
//!   into a [`ConfigState`](crate::topics::config_state::ConfigState), with
//!   change notifications and one write method per record kind;
//! - [`KafkaStatusStore`]: the status topic (`status.storage.topic`) as
//!   connect-runtime's [`StatusStore`](connect_runtime::status::StatusStore),
//!   with Java's rules for writes racing across workers and generations.

mod config_log;
mod status_store;

pub use config_log::{KafkaConfigLog, RestartRequest, CONFIG_TOPIC_KEY};
pub use status_store::{
    KafkaStatusStore, DEFAULT_PARTITIONS as DEFAULT_STATUS_TOPIC_PARTITIONS, STATUS_TOPIC_KEY,
};
