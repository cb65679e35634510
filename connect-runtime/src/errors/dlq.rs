//! Dead letter queues: the queue a task sends failed records to, the
//! records (letters) and Kafka's `__connect.errors.*` context headers.

use std::fmt::Write as _;

use std::sync::Arc;

use bytes::Bytes;
use connect_api::converter::{Converter, Serialized};
use connect_api::{ConnectError, ErrorKind, Record, Result, SourceMap};

use super::config::ErrorConfig;
use super::pipeline::Failure;
use crate::kafka::{
    Admin, ClientConfig, ConsumedRecord, CreateTopicOutcome, DeliverySink, KafkaCluster, NewTopic,
    OutHeader, OutRecord, Producer,
};
use crate::status::TaskId;

/// One record on its way to a dead letter queue, from either loop: the
/// key, value, timestamp and headers to send. Owned, so that a send
/// refused by a full producer queue can be tried again later.
///
/// ```
/// use connect_runtime::errors::dlq::DeadLetter;
/// use connect_runtime::converters::JsonConverter;
/// use connect_api::{Record, Value};
///
/// // A record without bytes (a polled source record) is rendered as JSON
/// // with schemas, so the dead letter queue stays readable.
/// let mut json = JsonConverter::new();
/// let letter = DeadLetter::rendered(&mut json, &Record::new("t", None, Value::from("v")));
/// let out = letter.out("dlq");
/// assert_eq!(out.topic, "dlq");
/// assert_eq!(out.value, Some(&br#"{"schema":null,"payload":"v"}"#[..]));
/// ```
#[derive(Debug, Clone, Default)]
pub struct DeadLetter {
    /// Key bytes (`None`: null).
    pub key: Option<Bytes>,
    /// Value bytes (`None`: null).
    pub value: Option<Bytes>,
    /// The failed record's timestamp.
    pub timestamp: Option<i64>,
    /// The failed record's headers, then the context headers.
    pub headers: Vec<OutHeader>,
}

impl DeadLetter {
    /// A consumed record as it was read: its original bytes and headers
    /// (the sink side, as Kafka's DLQ reporter sends them).
    pub fn raw(raw: &ConsumedRecord) -> Self {
        DeadLetter {
            key: raw.key.clone(),
            value: raw.value.clone(),
            timestamp: raw.timestamp,
            headers: raw
                .headers
                .iter()
                .map(|(k, v)| (k.clone(), v.as_ref().map(|b| b.to_vec())))
                .collect(),
        }
    }

    /// A record that has no bytes (a polled source record, or a sink
    /// record reported after its batch's bytes are gone): key and value
    /// written by `json` (the runtime passes a JsonConverter with schemas),
    /// no headers. A part the converter refuses is sent as null.
    pub fn rendered(json: &mut dyn Converter, record: &Record) -> Self {
        let mut render = |schema, value| {
            let mut out = Vec::new();
            let written =
                json.from_connect_data(&record.topic, &record.headers, schema, value, &mut out);
            written
                .is_ok_and(|w| w == Serialized::Bytes)
                .then(|| Bytes::from(out))
        };
        DeadLetter {
            key: render(record.key_schema.as_ref(), &record.key),
            value: render(record.value_schema.as_ref(), &record.value),
            timestamp: record.timestamp,
            headers: Vec::new(),
        }
    }

    /// Add Kafka's `__connect.errors.*` headers when
    /// `errors.deadletterqueue.context.headers.enable` is on.
    pub fn with_context(
        mut self,
        errors: &ErrorConfig,
        task: &TaskId,
        origin: Origin<'_>,
        failure: &Failure,
    ) -> Self {
        if errors.dlq_context_headers {
            append_context_headers(
                &mut self.headers,
                &task.connector,
                task.task,
                origin,
                failure,
            );
        }
        self
    }

    /// What the producer sends to the dead letter queue `topic` (Kafka
    /// picks the partition).
    pub fn out<'a>(&'a self, topic: &'a str) -> OutRecord<'a> {
        OutRecord {
            topic,
            partition: None,
            key: self.key.as_deref(),
            value: self.value.as_deref(),
            timestamp: self.timestamp,
            headers: &self.headers,
        }
    }
}

/// Kafka's `Error encountered in task` line for a tolerated failure, when
/// `errors.log.enable` is on; `record` describes the record, logged only
/// with `errors.log.include.messages`. Returns whether it logged.
pub fn log_failure(
    task: &TaskId,
    errors: &ErrorConfig,
    failure: &Failure,
    record: impl FnOnce() -> String,
) -> bool {
    if !errors.log_enable {
        return false;
    }
    if errors.log_include_messages {
        tracing::error!(task = %task, stage = %failure.stage, executing = %failure.executing,
            error = %failure.error, record = %record(), "Error encountered in task {task}");
    } else {
        tracing::error!(task = %task, stage = %failure.stage, executing = %failure.executing,
            error = %failure.error, "Error encountered in task {task}");
    }
    true
}

/// Header names, as Kafka writes them.
pub mod headers {
    /// Topic of the failed record.
    pub const TOPIC: &str = "__connect.errors.topic";
    /// Partition of the failed record.
    pub const PARTITION: &str = "__connect.errors.partition";
    /// Offset of the failed record.
    pub const OFFSET: &str = "__connect.errors.offset";
    /// Connector name.
    pub const CONNECTOR_NAME: &str = "__connect.errors.connector.name";
    /// Task id.
    pub const TASK_ID: &str = "__connect.errors.task.id";
    /// Failed stage (`VALUE_CONVERTER`...).
    pub const STAGE: &str = "__connect.errors.stage";
    /// What ran in that stage.
    pub const CLASS_NAME: &str = "__connect.errors.class.name";
    /// The error's class (Kafka's exception class names).
    pub const EXCEPTION_CLASS_NAME: &str = "__connect.errors.exception.class.name";
    /// The error message.
    pub const EXCEPTION_MESSAGE: &str = "__connect.errors.exception.message";
    /// The error and its causes, one per line.
    pub const EXCEPTION_STACKTRACE: &str = "__connect.errors.exception.stacktrace";
    /// Source DLQ only (not in Kafka): the record's source partition as JSON.
    pub const SOURCE_PARTITION: &str = "__connect.errors.source.partition";
    /// Source DLQ only (not in Kafka): the record's source offset as JSON.
    pub const SOURCE_OFFSET: &str = "__connect.errors.source.offset";
}

/// Kafka's exception class for an error kind, so tools that match on Java
/// class names keep working.
pub fn exception_class(error: &ConnectError) -> &'static str {
    match error.kind() {
        ErrorKind::Data { .. } => "org.apache.kafka.connect.errors.DataException",
        ErrorKind::Retriable => "org.apache.kafka.connect.errors.RetriableException",
        ErrorKind::Config { .. } => "org.apache.kafka.common.config.ConfigException",
        ErrorKind::SchemaBuilder => "org.apache.kafka.connect.errors.SchemaBuilderException",
        ErrorKind::NotFound => "org.apache.kafka.connect.errors.NotFoundException",
        _ => "org.apache.kafka.connect.errors.ConnectException",
    }
}

/// The error and its `source()` chain, one per line (Rust's closest thing
/// to a stack trace).
pub fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut out = error.to_string();
    let mut cause = error.source();
    while let Some(c) = cause {
        let _ = write!(out, "\nCaused by: {c}");
        cause = c.source();
    }
    out
}

/// Where the failed record came from.
#[derive(Debug, Clone, Copy)]
pub enum Origin<'a> {
    /// A consumed record (sink side): original topic, partition, offset.
    Consumed {
        /// Original topic.
        topic: &'a str,
        /// Original partition.
        partition: i32,
        /// Original offset.
        offset: i64,
    },
    /// A polled record (source side, our extension).
    Polled {
        /// Target topic.
        topic: &'a str,
        /// Target partition, if the record named one.
        partition: Option<i32>,
        /// Source partition.
        source_partition: &'a SourceMap,
        /// Source offset.
        source_offset: &'a SourceMap,
    },
}

/// Append the `__connect.errors.*` headers for `failure` to `out`.
pub fn append_context_headers(
    out: &mut Vec<OutHeader>,
    connector: &str,
    task: u32,
    origin: Origin<'_>,
    failure: &Failure,
) {
    let mut put = |k: &str, v: String| out.push((k.to_string(), Some(v.into_bytes())));
    match origin {
        Origin::Consumed {
            topic,
            partition,
            offset,
        } => {
            put(headers::TOPIC, topic.to_string());
            put(headers::PARTITION, partition.to_string());
            put(headers::OFFSET, offset.to_string());
        }
        Origin::Polled {
            topic,
            partition,
            source_partition,
            source_offset,
        } => {
            put(headers::TOPIC, topic.to_string());
            if let Some(p) = partition {
                put(headers::PARTITION, p.to_string());
            }
            put(
                headers::SOURCE_PARTITION,
                serde_json::Value::Object(source_partition.clone()).to_string(),
            );
            put(
                headers::SOURCE_OFFSET,
                serde_json::Value::Object(source_offset.clone()).to_string(),
            );
        }
    }
    put(headers::CONNECTOR_NAME, connector.to_string());
    put(headers::TASK_ID, task.to_string());
    put(headers::STAGE, failure.stage.name().to_string());
    put(headers::CLASS_NAME, failure.executing.clone());
    put(
        headers::EXCEPTION_CLASS_NAME,
        exception_class(&failure.error).to_string(),
    );
    put(headers::EXCEPTION_MESSAGE, failure.error.to_string());
    put(headers::EXCEPTION_STACKTRACE, error_chain(&failure.error));
}

/// A task's dead letter queue, the same for the source and the sink loop:
/// the topic (`errors.deadletterqueue.topic.name`), the producer letters
/// go through, and the topic's creation (both loops call it when the task
/// starts, with the admin client they have).
///
/// ```
/// use std::sync::Arc;
/// use connect_runtime::errors::dlq::DeadLetterQueue;
/// use connect_runtime::errors::ErrorConfig;
/// use connect_runtime::kafka::memory::MemoryKafka;
/// use connect_runtime::kafka::{ClientConfig, DeliveryWaiter, KafkaCluster};
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let kafka = MemoryKafka::new();
/// let errors = ErrorConfig { dlq_topic: "dlq".into(), ..ErrorConfig::default() };
/// let acks = Arc::new(DeliveryWaiter::default());
/// let dlq = DeadLetterQueue::open(&kafka, &errors, &ClientConfig::new(), acks, true)
///     .unwrap()
///     .expect("a DLQ topic is configured");
/// let admin = kafka.admin(&ClientConfig::new()).unwrap();
/// dlq.create_topic(admin.as_ref()).await.unwrap();
/// assert_eq!(dlq.topic(), "dlq");
/// assert_eq!(kafka.partitions("dlq"), Some(1));
/// # });
/// ```
pub struct DeadLetterQueue {
    topic: String,
    replication_factor: i16,
    /// `None`: letters go through another producer (an exactly-once
    /// source task sends them in its transaction, with its own).
    producer: Option<Box<dyn Producer>>,
}

impl DeadLetterQueue {
    /// The dead letter queue `errors` configures: `None` when no DLQ topic
    /// is set. With `own_producer` its letters have a producer of their
    /// own, opened on `cluster` with `client` (the task's producer
    /// properties) and reporting acknowledgements to `acks`.
    pub fn open(
        cluster: &dyn KafkaCluster,
        errors: &ErrorConfig,
        client: &ClientConfig,
        acks: Arc<dyn DeliverySink>,
        own_producer: bool,
    ) -> Result<Option<Self>> {
        if errors.dlq_topic.is_empty() {
            return Ok(None);
        }
        let producer = if own_producer {
            Some(cluster.producer(client, acks)?)
        } else {
            None
        };
        Ok(Some(DeadLetterQueue {
            topic: errors.dlq_topic.clone(),
            replication_factor: errors.dlq_replication_factor,
            producer,
        }))
    }

    /// The topic letters go to.
    pub fn topic(&self) -> &str {
        &self.topic
    }

    /// The queue's own producer (`None` when letters go through the task's).
    pub fn producer(&self) -> Option<&dyn Producer> {
        self.producer.as_deref()
    }

    /// Create the topic (one partition,
    /// `errors.deadletterqueue.topic.replication.factor` replicas) unless
    /// it exists, as Kafka's sink DLQ reporter does at task start. A
    /// cluster that cannot create topics (librdkafka's mock) relies on
    /// auto-creation; any other failure is an error naming the topic and
    /// the replication factor, since records sent to a DLQ that cannot
    /// exist would fail the task later, mid-stream.
    pub async fn create_topic(&self, admin: &dyn Admin) -> Result<()> {
        create_topic(admin, &self.topic, self.replication_factor).await
    }

    /// Wait up to `timeout` for the queue's own producer to deliver what it
    /// holds.
    pub async fn flush(&self, timeout: std::time::Duration) -> Result<()> {
        match &self.producer {
            Some(p) => p.flush(timeout).await.map_err(ConnectError::from),
            None => Ok(()),
        }
    }
}

impl std::fmt::Debug for DeadLetterQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeadLetterQueue")
            .field("topic", &self.topic)
            .field("own_producer", &self.producer.is_some())
            .finish()
    }
}

async fn create_topic(admin: &dyn Admin, topic: &str, replication_factor: i16) -> Result<()> {
    // Look first, as Kafka does: a cluster without CreateTopics support
    // (the mock) answers a create only after its timeout. Listing asks for
    // no auto-creation, unlike a metadata request for the one topic.
    let timeout = std::time::Duration::from_secs(30);
    if admin
        .list_topics(timeout)
        .await
        .is_ok_and(|topics| topics.iter().any(|t| t == topic))
    {
        return Ok(());
    }
    let mut spec = NewTopic::new(topic, 1);
    spec.replication_factor = replication_factor;
    match admin.create_topic(&spec, timeout).await {
        Ok(CreateTopicOutcome::Created) => {
            tracing::info!(
                topic,
                replication_factor,
                "created the dead letter queue topic"
            );
            Ok(())
        }
        Ok(CreateTopicOutcome::AlreadyExists) => Ok(()),
        Ok(CreateTopicOutcome::Unsupported { reason }) => {
            tracing::info!(topic, %reason,
                "the cluster cannot create topics; relying on auto-creation for the dead letter queue");
            Ok(())
        }
        Err(e) => Err(ConnectError::from(e).context(format_args!(
            "could not create the dead letter queue topic '{topic}' with \
             errors.deadletterqueue.topic.replication.factor={replication_factor}; \
             create it, or lower the replication factor to at most the number of brokers"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::errors::Stage;

    #[test]
    fn sink_headers_have_kafkas_names_and_values() {
        let failure = Failure {
            stage: Stage::ValueConverter,
            executing: "org.apache.kafka.connect.json.JsonConverter".into(),
            error: ConnectError::data("Converting byte[] to Kafka Connect data failed")
                .with_source(std::io::Error::other("unexpected token")),
            attempts: 1,
        };
        let mut out = Vec::new();
        append_context_headers(
            &mut out,
            "sink-1",
            0,
            Origin::Consumed {
                topic: "orders",
                partition: 2,
                offset: 17,
            },
            &failure,
        );
        let get = |k: &str| {
            out.iter()
                .find(|(h, _)| h == k)
                .and_then(|(_, v)| v.clone())
                .map(|v| String::from_utf8(v).unwrap())
        };
        assert_eq!(get("__connect.errors.topic").as_deref(), Some("orders"));
        assert_eq!(get("__connect.errors.partition").as_deref(), Some("2"));
        assert_eq!(get("__connect.errors.offset").as_deref(), Some("17"));
        assert_eq!(
            get("__connect.errors.connector.name").as_deref(),
            Some("sink-1")
        );
        assert_eq!(get("__connect.errors.task.id").as_deref(), Some("0"));
        assert_eq!(
            get("__connect.errors.stage").as_deref(),
            Some("VALUE_CONVERTER")
        );
        assert_eq!(
            get("__connect.errors.exception.class.name").as_deref(),
            Some("org.apache.kafka.connect.errors.DataException")
        );
        assert!(get("__connect.errors.exception.stacktrace")
            .unwrap()
            .contains("Caused by: unexpected token"));
    }
}
