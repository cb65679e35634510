//! Converters: Kafka-compatible JSON, String, ByteArray, numbers, headers and Avro.
