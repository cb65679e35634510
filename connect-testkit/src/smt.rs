//! Run one transformation, or a whole Kafka-style chain, on records.

use std::sync::Arc;

use connect_api::transform::Transformation;
use connect_api::{ConfigMap, ConnectRecord, Record, Result, SinkRecord, SourceMap, SourceRecord};
use connect_transforms::chain::TransformChain;
use connect_transforms::registry::TransformRegistry;

/// A record type the testkit can build from plain [`Record`] data.
pub trait TestRecord: ConnectRecord {
    /// `record` as this kind: a source record from source partition
    /// `{"testkit":"records"}` at offset `{"n": n}`, or a sink record at Kafka
    /// offset `n` of partition `record.kafka_partition` (0 when unset).
    fn from_record(record: Record, n: i64) -> Self;
    /// `"source"` or `"sink"`, for messages.
    const KIND: &'static str;
}

impl TestRecord for SourceRecord {
    fn from_record(record: Record, n: i64) -> Self {
        let mut partition = SourceMap::new();
        partition.insert("testkit".into(), "records".into());
        let mut offset = SourceMap::new();
        offset.insert("n".into(), n.into());
        SourceRecord::new(Arc::new(partition), offset, record)
    }
    const KIND: &'static str = "source";
}

impl TestRecord for SinkRecord {
    fn from_record(record: Record, n: i64) -> Self {
        let partition = record.kafka_partition.unwrap_or(0);
        SinkRecord::new(record, partition, n)
    }
    const KIND: &'static str = "sink";
}

enum Stages<R: ConnectRecord> {
    One(Box<dyn Transformation<R>>),
    Chain(TransformChain<R>),
}

/// A configured transformation or chain, applied record by record.
///
/// ```
/// use connect_api::{Record, Schema, SinkRecord, Value};
/// use connect_testkit::{config, SmtRunner};
///
/// let mut chain = SmtRunner::<SinkRecord>::chain(&config(&[
///     ("transforms", "route"),
///     ("transforms.route.type", "RegexRouter"),
///     ("transforms.route.regex", "(.*)-raw"),
///     ("transforms.route.replacement", "$1"),
/// ])).unwrap();
/// let out = chain.apply_all([Record::new("orders-raw", Some(Schema::string()), Value::from("x"))]).unwrap();
/// assert_eq!(&*out[0].record.topic, "orders");
/// ```
pub struct SmtRunner<R: ConnectRecord> {
    stages: Stages<R>,
    next: i64,
}

impl<R: ConnectRecord> std::fmt::Debug for SmtRunner<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.stages {
            Stages::One(_) => f.write_str("SmtRunner(one transformation)"),
            Stages::Chain(c) => write!(f, "SmtRunner({c:?})"),
        }
    }
}

impl<R: TestRecord> SmtRunner<R> {
    /// `transform`, configured with `config` (its own keys, no prefix).
    pub fn transform(
        mut transform: impl Transformation<R> + 'static,
        config: &ConfigMap,
    ) -> Result<Self> {
        transform.configure(config)?;
        Ok(SmtRunner {
            stages: Stages::One(Box::new(transform)),
            next: 0,
        })
    }

    /// The chain a connector config describes (`transforms=a,b`,
    /// `transforms.a.type=...`, `predicates=...`), with the built-in SMTs.
    pub fn chain(config: &ConfigMap) -> Result<Self> {
        Self::chain_with(config, &TransformRegistry::with_builtins())
    }

    /// The chain `config` describes, resolving classes in `registry` (where
    /// your own SMTs are registered).
    pub fn chain_with(config: &ConfigMap, registry: &TransformRegistry) -> Result<Self> {
        Ok(SmtRunner {
            stages: Stages::Chain(TransformChain::from_config(config, registry)?),
            next: 0,
        })
    }

    /// Apply to one record; `Ok(None)` when it was dropped.
    pub fn apply(&mut self, record: R) -> Result<Option<R>> {
        match &mut self.stages {
            Stages::One(t) => t.apply(record),
            Stages::Chain(c) => c.apply(record),
        }
    }

    /// Wrap each [`Record`] as `R` (see [`TestRecord::from_record`], offsets
    /// counting up across calls), apply, and return the records kept. An
    /// error names the index of the record that failed.
    pub fn apply_all(&mut self, records: impl IntoIterator<Item = Record>) -> Result<Vec<R>> {
        let mut out = Vec::new();
        for (i, record) in records.into_iter().enumerate() {
            let r = R::from_record(record, self.next);
            self.next += 1;
            if let Some(kept) = self
                .apply(r)
                .map_err(|e| e.context(format_args!("record {i}")))?
            {
                out.push(kept);
            }
        }
        Ok(out)
    }
}
