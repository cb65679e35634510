//! `DropHeaders`: removes every header whose key is in `headers`.

use connect_api::config::validators::ListSize;
use connect_api::config::{ConfigDef, ConfigKey, ConfigMap, ConfigType, Importance};
use connect_api::transform::{Configurable, Transformation, Verdict};
use connect_api::{ConnectRecord, Result};

/// Kafka's class name.
pub const CLASS: &str = "org.apache.kafka.connect.transforms.DropHeaders";

const HEADERS: &str = "headers";

/// Kafka's `DropHeaders`.
///
/// ```
/// use connect_api::config::ConfigMap;
/// use connect_api::transform::{Configurable, Transformation};
/// use connect_api::{Headers, Record, SinkRecord, Value};
/// use connect_transforms::drop_headers::DropHeaders;
///
/// let mut smt = DropHeaders::new();
/// let cfg: ConfigMap = [("headers".to_string(), "a,b".to_string())].into();
/// smt.configure(&cfg).unwrap();
/// let mut h = Headers::new();
/// h.add_string("a", "1").add_string("c", "3").add_string("a", "2");
/// let rec = SinkRecord::new(Record::new("t", None, Value::Null).with_headers(h), 0, 0);
/// let out = smt.apply(rec).unwrap().unwrap();
/// assert_eq!(out.record.headers.iter().map(|h| h.key()).collect::<Vec<_>>(), ["c"]);
/// ```
#[derive(Debug, Default, Clone)]
pub struct DropHeaders {
    headers: Vec<String>,
}

impl DropHeaders {
    /// An unconfigured DropHeaders.
    pub fn new() -> Self {
        Self::default()
    }
}

/// The keys DropHeaders accepts.
pub fn config_def() -> ConfigDef {
    ConfigDef::new().define(
        ConfigKey::new(HEADERS, ConfigType::List)
            .importance(Importance::High)
            .validator(ListSize {
                min: 1,
                max: usize::MAX,
            })
            .doc("The name of the headers to be removed."),
    )
}

impl Configurable for DropHeaders {
    fn configure(&mut self, config: &ConfigMap) -> Result<()> {
        let cfg = config_def().parse(config)?;
        self.headers = cfg.get_list(HEADERS).unwrap_or_default().to_vec();
        Ok(())
    }

    fn config_def(&self) -> ConfigDef {
        config_def()
    }
}

impl<R: ConnectRecord> Transformation<R> for DropHeaders {
    fn transform(&mut self, record: &mut R) -> Result<Verdict> {
        let names = &self.headers;
        record
            .record_mut()
            .headers
            .retain(|h| !names.iter().any(|n| n == h.key()));
        Ok(Verdict::Keep)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use connect_api::{Headers, Record, SinkRecord, Value};

    fn configure(headers: Option<&str>) -> Result<DropHeaders> {
        let mut smt = DropHeaders::new();
        let cfg: ConfigMap = headers
            .map(|h| (HEADERS.to_string(), h.to_string()))
            .into_iter()
            .collect();
        smt.configure(&cfg)?;
        Ok(smt)
    }

    #[test]
    fn removes_all_headers_with_listed_keys_and_keeps_order() {
        let mut smt = configure(Some("dropped, gone")).unwrap();
        let mut h = Headers::new();
        h.add_string("keep1", "a")
            .add_string("dropped", "x")
            .add_string("keep2", "b")
            .add_string("gone", "y")
            .add_string("dropped", "z");
        let rec = SinkRecord::new(Record::new("t", None, Value::Null).with_headers(h), 0, 0);
        let out = smt.apply(rec).unwrap().unwrap();
        let keys: Vec<_> = out.record.headers.iter().map(|h| h.key()).collect();
        assert_eq!(keys, ["keep1", "keep2"]);
        assert_eq!(out.record.value, Value::Null);
    }

    #[test]
    fn headers_is_required_and_non_empty() {
        assert!(configure(None).unwrap_err().to_string().contains("headers"));
        let e = configure(Some("")).unwrap_err().to_string();
        assert!(e.contains("at least 1"), "{e}");
    }
}
