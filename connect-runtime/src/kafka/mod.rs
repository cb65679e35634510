//! The Kafka port: everything the runtime does with Kafka, and its adapters.
