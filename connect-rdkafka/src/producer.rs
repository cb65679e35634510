//! Producer on rdkafka's `ThreadedProducer`: the record's token travels as
//! librdkafka's opaque pointer value (no allocation), and the delivery
//! callback on rdkafka's polling thread reports it to the sink.

use std::sync::Arc;
use std::time::{Duration, Instant};

use ::rdkafka::client::ClientContext;
use ::rdkafka::consumer::ConsumerGroupMetadata;
use ::rdkafka::error::{KafkaError as RdError, RDKafkaErrorCode};
use ::rdkafka::message::{DeliveryResult, Header, Message, OwnedHeaders};
use ::rdkafka::producer::{BaseRecord, Producer as _, ProducerContext, ThreadedProducer};
use ::rdkafka::{Offset, TopicPartitionList};
use async_trait::async_trait;

use super::errors::from_rd;
use connect_kafka::{
    Delivered, DeliverySink, GroupMetadata, KafkaError, KafkaErrorKind, OutRecord, Producer,
    SendError, TopicPartitionOffsets,
};

/// How often [`RdProducer`]'s flush looks again for unreported records.
const FLUSH_CHECK_INTERVAL: Duration = Duration::from_millis(1);

pub(super) struct SinkContext {
    sink: Arc<dyn DeliverySink>,
    debug: bool,
}

impl ClientContext for SinkContext {
    fn log(&self, level: ::rdkafka::config::RDKafkaLogLevel, fac: &str, message: &str) {
        crate::client_log::forward(self.debug, level, fac, message);
    }
}

impl ProducerContext for SinkContext {
    type DeliveryOpaque = usize;

    fn delivery(&self, result: &DeliveryResult<'_>, token: usize) {
        let token = token as u64;
        match result {
            Ok(m) => self.sink.delivered(
                token,
                Ok(Delivered {
                    topic: m.topic(),
                    partition: m.partition(),
                    offset: m.offset(),
                    timestamp: m.timestamp().to_millis(),
                }),
            ),
            Err((e, m)) => self.sink.delivered(
                token,
                Err(from_rd(
                    e,
                    format_args!("produce to {}-{}", m.topic(), m.partition()),
                )),
            ),
        }
    }
}

pub(super) struct RdProducer {
    inner: ThreadedProducer<SinkContext>,
}

impl RdProducer {
    pub(super) fn new(
        config: &::rdkafka::ClientConfig,
        sink: Arc<dyn DeliverySink>,
    ) -> Result<Self, KafkaError> {
        let inner = config
            .create_with_context(SinkContext {
                sink,
                debug: crate::client_log::debug_asked(config),
            })
            .map_err(|e| from_rd(&e, "creating the producer"))?;
        Ok(RdProducer { inner })
    }

    /// Run a blocking librdkafka call off the async threads.
    async fn blocking<T: Send + 'static>(
        &self,
        call: impl FnOnce(&ThreadedProducer<SinkContext>) -> Result<T, RdError> + Send + 'static,
        doing: &'static str,
    ) -> Result<T, KafkaError> {
        let producer = self.inner.clone();
        tokio::task::spawn_blocking(move || call(&producer))
            .await
            .map_err(|e| {
                KafkaError::fatal(format!("{doing}: the blocking call did not finish: {e}"))
            })?
            .map_err(|e| from_rd(&e, doing))
    }
}

#[async_trait]
impl Producer for RdProducer {
    fn send(&self, record: &OutRecord<'_>, token: u64) -> Result<(), SendError> {
        let token = usize::try_from(token).map_err(|_| {
            KafkaError::fatal(format!(
                "delivery token {token} does not fit this platform's usize"
            ))
        })?;
        let mut base: BaseRecord<'_, [u8], [u8], usize> =
            BaseRecord::with_opaque_to(record.topic, token);
        base.partition = record.partition;
        base.key = record.key;
        base.payload = record.value;
        base.timestamp = record.timestamp;
        if !record.headers.is_empty() {
            let mut headers = OwnedHeaders::new_with_capacity(record.headers.len());
            for (key, value) in record.headers {
                headers = headers.insert(Header {
                    key,
                    value: value.as_deref(),
                });
            }
            base.headers = Some(headers);
        }
        match self.inner.send(base) {
            Ok(()) => Ok(()),
            Err((RdError::MessageProduction(RDKafkaErrorCode::QueueFull), _)) => {
                Err(SendError::QueueFull)
            }
            Err((e, _)) => Err(SendError::Kafka(from_rd(
                &e,
                format_args!(
                    "produce to {}{}",
                    record.topic,
                    record
                        .partition
                        .map(|p| format!("-{p}"))
                        .unwrap_or_default()
                ),
            ))),
        }
    }

    async fn flush(&self, timeout: Duration) -> Result<(), KafkaError> {
        // rdkafka's own flush waits by polling the main queue in steps of up
        // to 100 ms; here the producer's polling thread serves that queue, so
        // such a step sat idle until it timed out, up to 100 ms after the
        // last delivery report. A zero-timeout flush asks librdkafka to send
        // what lingers and answers at once whether any record is still
        // unreported; check it again every millisecond.
        let deadline = Instant::now() + timeout;
        loop {
            match self.inner.flush(Duration::ZERO) {
                Ok(()) => return Ok(()),
                Err(RdError::Flush(RDKafkaErrorCode::OperationTimedOut))
                    if Instant::now() < deadline =>
                {
                    tokio::time::sleep(FLUSH_CHECK_INTERVAL).await
                }
                Err(e) => return Err(from_rd(&e, "flush")),
            }
        }
    }

    async fn init_transactions(&self, timeout: Duration) -> Result<(), KafkaError> {
        self.blocking(move |p| p.init_transactions(timeout), "init_transactions")
            .await
    }

    fn begin_transaction(&self) -> Result<(), KafkaError> {
        self.inner
            .begin_transaction()
            .map_err(|e| from_rd(&e, "begin_transaction"))
    }

    async fn send_offsets_to_transaction(
        &self,
        offsets: &TopicPartitionOffsets,
        group: &GroupMetadata,
        timeout: Duration,
    ) -> Result<(), KafkaError> {
        let Some(metadata) = group.adapter_state::<ConsumerGroupMetadata>() else {
            return Err(KafkaError::new(
                KafkaErrorKind::Config,
                format!(
                    "group metadata of '{}' did not come from an rdkafka consumer; send_offsets_to_transaction needs one",
                    group.group_id
                ),
            ));
        };
        let tpl = offsets_list(offsets)?;
        // The metadata handle is borrowed only for this call; librdkafka copies it.
        self.inner
            .send_offsets_to_transaction(&tpl, metadata, timeout)
            .map_err(|e| {
                from_rd(
                    &e,
                    format_args!("send_offsets_to_transaction for group '{}'", group.group_id),
                )
            })
    }

    async fn commit_transaction(&self, timeout: Duration) -> Result<(), KafkaError> {
        // rust-rdkafka's commit_transaction flushes first with its own
        // flush, whose 100 ms steps sit idle here (see `flush`): with a
        // record still unreported (the transaction's offsets, sent just
        // before), every commit took 100 ms more, capping an exactly-once
        // source at about nine transactions a second. Our flush first
        // leaves it nothing to wait for.
        let deadline = Instant::now() + timeout;
        self.flush(timeout).await?;
        let left = deadline.saturating_duration_since(Instant::now());
        self.blocking(move |p| p.commit_transaction(left), "commit_transaction")
            .await
    }

    async fn abort_transaction(&self, timeout: Duration) -> Result<(), KafkaError> {
        // librdkafka can fail an abort issued while the transaction's first
        // records (and the AddPartitionsToTxn they trigger) are still in
        // flight: the coordinator answers INVALID_TXN_STATE and the producer
        // is left unusable (confluentinc/librdkafka#4849, seen once in our
        // CI on Kafka 4.4). Letting those requests finish first closes that
        // window; records delivered now are aborted with the rest. A flush
        // that fails (a record already failed, which is why one aborts)
        // must not stop the abort.
        let deadline = Instant::now() + timeout;
        if let Err(e) = self.flush(timeout).await {
            tracing::debug!(error = %e, "flush before abort_transaction failed; aborting anyway");
        }
        let left = deadline.saturating_duration_since(Instant::now());
        self.blocking(move |p| p.abort_transaction(left), "abort_transaction")
            .await
    }
}

/// Offsets as an rdkafka partition list.
pub(super) fn offsets_list(
    offsets: &TopicPartitionOffsets,
) -> Result<TopicPartitionList, KafkaError> {
    let mut tpl = TopicPartitionList::with_capacity(offsets.len());
    for (tp, offset) in offsets {
        tpl.add_partition_offset(&tp.topic, tp.partition, Offset::Offset(*offset))
            .map_err(|e| from_rd(&e, format_args!("offset {offset} for {tp}")))?;
    }
    Ok(tpl)
}
