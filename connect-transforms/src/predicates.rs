//! Kafka's built-in predicates, used to apply a transform only to some
//! records (`transforms.<alias>.predicate`): TopicNameMatches,
//! HasHeaderKey and RecordIsTombstone.

use connect_api::config::validators::NonEmptyString;
use connect_api::config::{ConfigDef, ConfigKey, ConfigMap, ConfigType, Importance};
use connect_api::transform::{Configurable, Predicate};
use connect_api::{ConnectError, ConnectRecord, Result};
use regex::Regex;

/// Kafka's `TopicNameMatches` class name.
pub const TOPIC_NAME_MATCHES_CLASS: &str =
    "org.apache.kafka.connect.transforms.predicates.TopicNameMatches";
/// Kafka's `HasHeaderKey` class name.
pub const HAS_HEADER_KEY_CLASS: &str =
    "org.apache.kafka.connect.transforms.predicates.HasHeaderKey";
/// Kafka's `RecordIsTombstone` class name.
pub const RECORD_IS_TOMBSTONE_CLASS: &str =
    "org.apache.kafka.connect.transforms.predicates.RecordIsTombstone";

const PATTERN: &str = "pattern";
const NAME: &str = "name";

/// True when the whole topic name matches `pattern`.
///
/// ```
/// use connect_api::config::ConfigMap;
/// use connect_api::transform::{Configurable, Predicate};
/// use connect_api::{Record, SinkRecord, Value};
/// use connect_transforms::predicates::TopicNameMatches;
///
/// let mut p = TopicNameMatches::new();
/// let cfg: ConfigMap = [("pattern".to_string(), "orders-.*".to_string())].into();
/// p.configure(&cfg).unwrap();
/// assert!(p.test(&SinkRecord::new(Record::new("orders-eu", None, Value::Null), 0, 0)));
/// assert!(!p.test(&SinkRecord::new(Record::new("my-orders-eu", None, Value::Null), 0, 0)));
/// ```
#[derive(Debug, Default, Clone)]
pub struct TopicNameMatches {
    pattern: Option<Regex>,
}

impl TopicNameMatches {
    /// An unconfigured predicate (matches nothing until configured).
    pub fn new() -> Self {
        Self::default()
    }

    /// The keys TopicNameMatches accepts.
    pub fn config_def() -> ConfigDef {
        ConfigDef::new().define(
            ConfigKey::new(PATTERN, ConfigType::String)
                .importance(Importance::Medium)
                .validator(NonEmptyString::default())
                .doc(
                    "A Java regular expression for matching against the name of a record's topic.",
                ),
        )
    }
}

impl Configurable for TopicNameMatches {
    fn configure(&mut self, config: &ConfigMap) -> Result<()> {
        let cfg = Self::config_def().parse(config)?;
        let pattern = cfg.get_string(PATTERN).unwrap_or_default();
        let re = Regex::new(&format!(r"\A(?:{pattern})\z")).map_err(|e| {
            ConnectError::config(PATTERN, format!("Invalid regex '{pattern}': {e}"))
        })?;
        self.pattern = Some(re);
        Ok(())
    }

    fn config_def(&self) -> ConfigDef {
        Self::config_def()
    }
}

impl<R: ConnectRecord> Predicate<R> for TopicNameMatches {
    fn test(&self, record: &R) -> bool {
        self.pattern
            .as_ref()
            .is_some_and(|p| p.is_match(&record.record().topic))
    }
}

/// True when the record has at least one header with key `name`.
///
/// ```
/// use connect_api::config::ConfigMap;
/// use connect_api::transform::{Configurable, Predicate};
/// use connect_api::{Headers, Record, SinkRecord, Value};
/// use connect_transforms::predicates::HasHeaderKey;
///
/// let mut p = HasHeaderKey::new();
/// let cfg: ConfigMap = [("name".to_string(), "trace".to_string())].into();
/// p.configure(&cfg).unwrap();
/// let mut h = Headers::new();
/// h.add_string("trace", "1");
/// assert!(p.test(&SinkRecord::new(Record::new("t", None, Value::Null).with_headers(h), 0, 0)));
/// ```
#[derive(Debug, Default, Clone)]
pub struct HasHeaderKey {
    name: String,
}

impl HasHeaderKey {
    /// An unconfigured predicate.
    pub fn new() -> Self {
        Self::default()
    }

    /// The keys HasHeaderKey accepts.
    pub fn config_def() -> ConfigDef {
        ConfigDef::new().define(
            ConfigKey::new(NAME, ConfigType::String)
                .importance(Importance::Medium)
                .validator(NonEmptyString::default())
                .doc("The header name."),
        )
    }
}

impl Configurable for HasHeaderKey {
    fn configure(&mut self, config: &ConfigMap) -> Result<()> {
        let cfg = Self::config_def().parse(config)?;
        self.name = cfg.get_string(NAME).unwrap_or_default().to_string();
        Ok(())
    }

    fn config_def(&self) -> ConfigDef {
        Self::config_def()
    }
}

impl<R: ConnectRecord> Predicate<R> for HasHeaderKey {
    fn test(&self, record: &R) -> bool {
        record.record().headers.iter().any(|h| h.key() == self.name)
    }
}

/// True when the record's value is null (a tombstone), whatever its schema.
///
/// ```
/// use connect_api::transform::Predicate;
/// use connect_api::{Record, SinkRecord, Value};
/// use connect_transforms::predicates::RecordIsTombstone;
///
/// assert!(RecordIsTombstone.test(&SinkRecord::new(Record::new("t", None, Value::Null), 0, 0)));
/// ```
#[derive(Debug, Default, Clone, Copy)]
pub struct RecordIsTombstone;

impl RecordIsTombstone {
    /// The predicate.
    pub fn new() -> Self {
        RecordIsTombstone
    }
}

impl Configurable for RecordIsTombstone {}

impl<R: ConnectRecord> Predicate<R> for RecordIsTombstone {
    fn test(&self, record: &R) -> bool {
        record.record().value.is_null()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use connect_api::{Headers, Record, Schema, SinkRecord, SourceMap, SourceRecord, Value};

    fn cfg(k: &str, v: &str) -> ConfigMap {
        [(k.to_string(), v.to_string())].into()
    }

    fn rec(topic: &str, value: Value) -> SourceRecord {
        SourceRecord::new(
            Default::default(),
            SourceMap::new(),
            Record::new(topic, None, value),
        )
    }

    #[test]
    fn topic_name_matches_needs_a_full_match() {
        let mut p = TopicNameMatches::new();
        p.configure(&cfg(PATTERN, "a|ab")).unwrap();
        assert!(p.test(&rec("ab", Value::Null)));
        assert!(p.test(&rec("a", Value::Null)));
        assert!(!p.test(&rec("abc", Value::Null)));
        let e = p.configure(&cfg(PATTERN, "(")).unwrap_err();
        assert!(e.to_string().contains("pattern"), "{e}");
        let e = p.configure(&cfg(PATTERN, "")).unwrap_err();
        assert!(e.to_string().contains("non-empty"), "{e}");
        assert!(p.configure(&ConfigMap::new()).is_err());
    }

    #[test]
    fn has_header_key() {
        let mut p = HasHeaderKey::new();
        p.configure(&cfg(NAME, "h")).unwrap();
        let mut headers = Headers::new();
        headers.add_string("other", "x");
        let r = SinkRecord::new(
            Record::new("t", None, Value::Null).with_headers(headers.clone()),
            0,
            0,
        );
        assert!(!p.test(&r));
        headers.add_string("h", "y");
        let r = SinkRecord::new(
            Record::new("t", None, Value::Null).with_headers(headers),
            0,
            0,
        );
        assert!(p.test(&r));
        assert!(p.configure(&ConfigMap::new()).is_err());
    }

    #[test]
    fn record_is_tombstone_looks_at_the_value_only() {
        let p = RecordIsTombstone::new();
        assert!(Predicate::<SourceRecord>::test(&p, &rec("t", Value::Null)));
        assert!(!Predicate::<SourceRecord>::test(
            &p,
            &rec("t", Value::from("x"))
        ));
        let with_schema = SinkRecord::new(
            Record::new("t", Some(Schema::optional_string()), Value::Null),
            0,
            0,
        );
        assert!(p.test(&with_schema));
    }
}
