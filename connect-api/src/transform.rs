//! Transformations (SMTs) and predicates.

use crate::config::{ConfigDef, ConfigMap};
use crate::error::Result;
use crate::record::ConnectRecord;

/// What a transformation decided about the record it was given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Pass the (possibly changed) record on to the next transform.
    Keep,
    /// Drop the record: the chain ends here, as when Kafka's `apply`
    /// returns null.
    Drop,
}

/// What a transform or predicate reads from its configuration, apart from
/// the record type it works on (as Java's `Configurable`, which Kafka's
/// `Transformation` and `Predicate` extend).
///
/// One implementation configures a plugin for source and sink records
/// alike, so `smt.configure(&config)` needs no record type named. Both
/// methods have defaults: a plugin without keys writes
/// `impl Configurable for MySmt {}`.
///
/// ```
/// use connect_api::config::{ConfigDef, ConfigMap};
/// use connect_api::transform::Configurable;
/// use connect_api::Result;
///
/// #[derive(Default)]
/// struct Tag { tag: String }
///
/// impl Configurable for Tag {
///     fn configure(&mut self, config: &ConfigMap) -> Result<()> {
///         self.tag = config.get("tag").cloned().unwrap_or_default();
///         Ok(())
///     }
/// }
///
/// let mut t = Tag::default();
/// t.configure(&[("tag".to_string(), "x".to_string())].into()).unwrap();
/// assert_eq!(t.tag, "x");
/// assert!(t.config_def().keys().is_empty());
/// ```
pub trait Configurable {
    /// Read the configuration (`transforms.<alias>.*` or
    /// `predicates.<alias>.*` without the prefix).
    fn configure(&mut self, _config: &ConfigMap) -> Result<()> {
        Ok(())
    }

    /// The keys this plugin accepts.
    fn config_def(&self) -> ConfigDef {
        ConfigDef::new()
    }
}

/// A Single Message Transform: changes, or drops, one record at a time.
///
/// Generic over the record type so one implementation serves source and sink
/// records (`impl<R: ConnectRecord> Transformation<R> for MySmt`), and
/// object-safe so the runtime holds a chain of `Box<dyn Transformation<R>>`.
/// Its configuration is the [`Configurable`] supertrait, written once for
/// both record types.
///
/// Implement [`transform`](Transformation::transform): it changes the record
/// in place and says whether to keep it. The chain hands every transform
/// the same record, so nothing is copied or moved between transforms (a
/// record is about 200 bytes; moving it in and out of each transform was a
/// visible share of a chain's time). [`apply`](Transformation::apply) is
/// Kafka's by-value form, for callers that hold one record.
///
/// When `transform` fails, the record may be left half changed: callers
/// that need the original (retries, a dead letter queue) keep a copy.
/// `&mut self` lets a transform keep a per-schema cache without a lock,
/// since each task owns its own chain.
///
/// ```
/// use connect_api::config::ConfigMap;
/// use connect_api::transform::{Configurable, Transformation, Verdict};
/// use connect_api::{ConnectRecord, Record, Result, SourceRecord, SourceMap};
///
/// /// The seed's AddHeader: a fixed header on every record.
/// #[derive(Default)]
/// struct AddHeader { key: String, value: String }
///
/// impl Configurable for AddHeader {
///     fn configure(&mut self, config: &ConfigMap) -> Result<()> {
///         self.key = config.get("header").cloned().unwrap_or_else(|| "source".into());
///         self.value = config.get("value").cloned().unwrap_or_default();
///         Ok(())
///     }
/// }
///
/// impl<R: ConnectRecord> Transformation<R> for AddHeader {
///     fn transform(&mut self, record: &mut R) -> Result<Verdict> {
///         record.record_mut().headers.add_string(self.key.clone(), self.value.clone());
///         Ok(Verdict::Keep)
///     }
/// }
///
/// let mut smt = AddHeader::default();
/// let cfg: ConfigMap = [("value".to_string(), "app-1".to_string())].into();
/// smt.configure(&cfg).unwrap();
/// let rec = SourceRecord::new(Default::default(), SourceMap::new(), Record::new("t", None, "v".into()));
/// let out = smt.apply(rec).unwrap().unwrap();
/// assert_eq!(out.record.headers.last_with_name("source").unwrap().value().as_str(), Some("app-1"));
/// ```
pub trait Transformation<R: ConnectRecord>: Configurable + Send {
    /// Transform `record` in place; [`Verdict::Drop`] drops it and ends the chain.
    fn transform(&mut self, record: &mut R) -> Result<Verdict>;

    /// Transform an owned record: `Ok(None)` when it was dropped.
    fn apply(&mut self, mut record: R) -> Result<Option<R>> {
        Ok(match self.transform(&mut record)? {
            Verdict::Keep => Some(record),
            Verdict::Drop => None,
        })
    }

    /// Release resources.
    fn close(&mut self) {}
}

/// A condition on a record, used to apply a transform only to some records
/// (`transforms.<alias>.predicate`).
///
/// ```
/// use connect_api::config::ConfigMap;
/// use connect_api::transform::{Configurable, Predicate};
/// use connect_api::{ConnectRecord, Record, SinkRecord};
///
/// struct IsOrders;
/// impl Configurable for IsOrders {}
/// impl<R: ConnectRecord> Predicate<R> for IsOrders {
///     fn test(&self, record: &R) -> bool { &*record.record().topic == "orders" }
/// }
/// let r = SinkRecord::new(Record::new("orders", None, Default::default()), 0, 0);
/// assert!(IsOrders.test(&r));
/// ```
pub trait Predicate<R: ConnectRecord>: Configurable + Send {
    /// Whether `record` matches.
    fn test(&self, record: &R) -> bool;
}
