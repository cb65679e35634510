//! `Filter`: drops every record it is applied to. Used with a predicate
//! (`transforms.f.predicate=isTombstone`) to drop only matching records.

use connect_api::config::ConfigDef;
use connect_api::transform::{Configurable, Transformation, Verdict};
use connect_api::{ConnectRecord, Result};

/// Kafka's class name.
pub const CLASS: &str = "org.apache.kafka.connect.transforms.Filter";

/// Kafka's `Filter`: drops the record (ending the chain). It has no keys.
///
/// ```
/// use connect_api::transform::Transformation;
/// use connect_api::{Record, SinkRecord, Value};
/// use connect_transforms::filter::Filter;
///
/// let rec = SinkRecord::new(Record::new("t", None, Value::Null), 0, 0);
/// assert!(Filter::new().apply(rec).unwrap().is_none());
/// ```
#[derive(Debug, Default, Clone, Copy)]
pub struct Filter;

impl Filter {
    /// A filter.
    pub fn new() -> Self {
        Filter
    }
}

/// Filter has no config keys.
pub fn config_def() -> ConfigDef {
    ConfigDef::new()
}

impl Configurable for Filter {
    fn config_def(&self) -> ConfigDef {
        config_def()
    }
}

impl<R: ConnectRecord> Transformation<R> for Filter {
    fn transform(&mut self, _record: &mut R) -> Result<Verdict> {
        Ok(Verdict::Drop)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use connect_api::config::ConfigMap;
    use connect_api::{Record, SourceMap, SourceRecord, Value};

    #[test]
    fn drops_every_record_and_accepts_any_config() {
        let mut f = Filter::new();
        let cfg: ConfigMap = [("unrelated".to_string(), "x".to_string())].into();
        f.configure(&cfg).unwrap();
        for v in [Value::Null, Value::from("x")] {
            let rec = SourceRecord::new(
                Default::default(),
                SourceMap::new(),
                Record::new("t", None, v),
            );
            assert!(f.apply(rec).unwrap().is_none());
        }
        assert!(Configurable::config_def(&f).keys().is_empty());
    }
}
