//! `TimestampRouter`: routes a record to a topic built from its topic and
//! timestamp (`${topic}-${timestamp}`), for time-partitioned sinks.

use std::sync::Arc;

use connect_api::config::{ConfigDef, ConfigKey, ConfigMap, ConfigType, Importance};
use connect_api::transform::{Configurable, Transformation, Verdict};
use connect_api::{ConnectError, ConnectRecord, Result};

use crate::timestamp_converter::date_format::DateFormat;

/// Kafka's class name.
pub const CLASS: &str = "org.apache.kafka.connect.transforms.TimestampRouter";

const TOPIC_FORMAT: &str = "topic.format";
const TIMESTAMP_FORMAT: &str = "timestamp.format";

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Literal(String),
    Topic,
    Timestamp,
}

#[derive(Debug)]
struct Config {
    parts: Vec<Part>,
    format: DateFormat,
}

/// Kafka's `TimestampRouter`.
///
/// ```
/// use connect_api::config::ConfigMap;
/// use connect_api::transform::{Configurable, Transformation};
/// use connect_api::{Record, SinkRecord, Value};
/// use connect_transforms::timestamp_router::TimestampRouter;
///
/// let mut smt = TimestampRouter::new();
/// smt.configure(&ConfigMap::new()).unwrap();
/// let rec = SinkRecord::new(Record::new("logs", None, Value::Null).with_timestamp(1_706_708_700_000), 0, 0);
/// assert_eq!(&*smt.apply(rec).unwrap().unwrap().record.topic, "logs-20240131");
/// ```
#[derive(Debug, Default)]
pub struct TimestampRouter {
    config: Option<Config>,
    scratch: String,
    /// The last routing, reused while topic and formatted time repeat.
    last: Option<(Arc<str>, Arc<str>)>,
}

impl TimestampRouter {
    /// An unconfigured TimestampRouter.
    pub fn new() -> Self {
        Self::default()
    }
}

/// The keys TimestampRouter accepts, with Kafka's defaults.
pub fn config_def() -> ConfigDef {
    ConfigDef::new()
        .define(
            ConfigKey::new(TOPIC_FORMAT, ConfigType::String)
                .default("${topic}-${timestamp}")
                .importance(Importance::High)
                .doc("Format string which can contain <code>${topic}</code> and <code>${timestamp}</code> as placeholders for the topic and timestamp, respectively."),
        )
        .define(
            ConfigKey::new(TIMESTAMP_FORMAT, ConfigType::String)
                .default("yyyyMMdd")
                .importance(Importance::High)
                .doc("Format string for the timestamp that is compatible with <code>java.text.SimpleDateFormat</code>."),
        )
}

fn compile_topic_format(format: &str) -> Vec<Part> {
    let mut parts = Vec::new();
    let mut rest = format;
    loop {
        let next = [("${topic}", Part::Topic), ("${timestamp}", Part::Timestamp)]
            .into_iter()
            .filter_map(|(p, part)| rest.find(p).map(|i| (i, p.len(), part)))
            .min_by_key(|(i, _, _)| *i);
        match next {
            Some((i, len, part)) => {
                if i > 0 {
                    parts.push(Part::Literal(rest[..i].to_string()));
                }
                parts.push(part);
                rest = &rest[i + len..];
            }
            None => {
                if !rest.is_empty() {
                    parts.push(Part::Literal(rest.to_string()));
                }
                return parts;
            }
        }
    }
}

impl Configurable for TimestampRouter {
    fn configure(&mut self, config: &ConfigMap) -> Result<()> {
        let cfg = config_def().parse(config)?;
        let format = DateFormat::new(cfg.get_string(TIMESTAMP_FORMAT).unwrap_or_default())
            .map_err(|e| ConnectError::config(TIMESTAMP_FORMAT, e))?;
        self.config = Some(Config {
            parts: compile_topic_format(cfg.get_string(TOPIC_FORMAT).unwrap_or_default()),
            format,
        });
        self.last = None;
        Ok(())
    }

    fn config_def(&self) -> ConfigDef {
        config_def()
    }
}

impl<R: ConnectRecord> Transformation<R> for TimestampRouter {
    fn transform(&mut self, record: &mut R) -> Result<Verdict> {
        let cfg = self
            .config
            .as_ref()
            .ok_or_else(|| ConnectError::other("TimestampRouter is not configured"))?;
        let r = record.record();
        let Some(ts) = r.timestamp else {
            let at = record
                .kafka_offset()
                .map(|o| {
                    format!(
                        " at partition {} offset {o}",
                        r.kafka_partition.unwrap_or(-1)
                    )
                })
                .unwrap_or_default();
            return Err(ConnectError::data(format!(
                "Timestamp missing on record from topic '{}'{at}",
                r.topic
            )));
        };
        self.scratch.clear();
        for part in &cfg.parts {
            match part {
                Part::Literal(s) => self.scratch.push_str(s),
                Part::Topic => self.scratch.push_str(&r.topic),
                Part::Timestamp => cfg
                    .format
                    .format_into(ts, &mut self.scratch)
                    .map_err(ConnectError::data)?,
            }
        }
        let routed = match &self.last {
            Some((from, to)) if Arc::ptr_eq(from, &r.topic) && **to == *self.scratch => to.clone(),
            _ => {
                let to: Arc<str> = self.scratch.as_str().into();
                self.last = Some((r.topic.clone(), to.clone()));
                to
            }
        };
        record.record_mut().topic = routed;
        Ok(Verdict::Keep)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use connect_api::{Record, SinkRecord, SourceMap, SourceRecord, Value};

    const T: i64 = 1_706_708_700_123;

    fn router(pairs: &[(&str, &str)]) -> Result<TimestampRouter> {
        let mut r = TimestampRouter::new();
        let cfg: ConfigMap = ConfigMap::from_pairs(pairs.iter().copied());
        r.configure(&cfg)?;
        Ok(r)
    }

    fn source(topic: &str, ts: Option<i64>) -> SourceRecord {
        let mut rec = Record::new(topic, None, Value::from("v"));
        rec.timestamp = ts;
        SourceRecord::new(Default::default(), SourceMap::new(), rec)
    }

    #[test]
    fn default_format() {
        let mut r = router(&[]).unwrap();
        let out = r.apply(source("test", Some(T))).unwrap().unwrap();
        assert_eq!(&*out.record.topic, "test-20240131");
        assert_eq!(out.record.value, Value::from("v"));
    }

    #[test]
    fn custom_formats_and_repeated_placeholders() {
        let mut r = router(&[
            ("topic.format", "${timestamp}/${topic}/${topic}"),
            ("timestamp.format", "yyyy-MM-dd'T'HH"),
        ])
        .unwrap();
        assert_eq!(
            &*r.apply(source("a", Some(T))).unwrap().unwrap().record.topic,
            "2024-01-31T13/a/a"
        );
        // A new topic with the same time gets its own name.
        assert_eq!(
            &*r.apply(source("b", Some(T))).unwrap().unwrap().record.topic,
            "2024-01-31T13/b/b"
        );
    }

    #[test]
    fn missing_timestamp_is_a_data_error() {
        let mut r = router(&[]).unwrap();
        let rec = SinkRecord::new(Record::new("t", None, Value::Null), 3, 42);
        let e = r.apply(rec).unwrap_err().to_string();
        assert!(
            e.contains("Timestamp missing") && e.contains("partition 3 offset 42"),
            "{e}"
        );
    }

    #[test]
    fn bad_timestamp_format_is_a_config_error() {
        let e = router(&[("timestamp.format", "yyyy'")])
            .unwrap_err()
            .to_string();
        assert!(e.contains("timestamp.format"), "{e}");
    }
}
