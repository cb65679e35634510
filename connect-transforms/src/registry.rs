//! The registry of transforms and predicates: Kafka class names
//! (`org.apache.kafka.connect.transforms.InsertField$Value`) and short
//! aliases (`InsertField$Value`) mapped to factories, for source and sink
//! record chains alike. Users register their own SMTs and predicates here.

use std::any::{Any, TypeId};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use connect_api::transform::{Predicate, Transformation};
use connect_api::{ConnectRecord, SinkRecord, SourceRecord};

use crate::util::Side;
use crate::{
    cast, drop_headers, extract_field, filter, flatten, header_from, hoist_field, insert_field,
    insert_header, mask_field, predicates, regex_router, replace_field, set_schema_metadata,
    timestamp_converter, timestamp_router, value_to_key,
};

type TransformCtor<R> = Arc<dyn Fn() -> Box<dyn Transformation<R>> + Send + Sync>;
type PredicateCtor<R> = Arc<dyn Fn() -> Box<dyn Predicate<R>> + Send + Sync>;

/// One registered plugin: its class name and a constructor per record type
/// (keyed by the record's `TypeId`, holding a `TransformCtor<R>` or
/// `PredicateCtor<R>`).
struct Entry {
    class: String,
    ctors: HashMap<TypeId, Box<dyn Any + Send + Sync>>,
}

#[derive(Default)]
struct Table {
    entries: Vec<Entry>,
    by_name: HashMap<String, usize>,
}

impl Table {
    /// The entry for `class`, created (and its alias registered) if new.
    fn entry(&mut self, class: &str) -> &mut Entry {
        let index = match self.by_name.get(class) {
            Some(&i) if self.entries[i].class == class => i,
            _ => {
                self.entries.push(Entry {
                    class: class.to_string(),
                    ctors: HashMap::new(),
                });
                let i = self.entries.len() - 1;
                self.by_name.insert(class.to_string(), i);
                self.by_name.insert(short_alias(class).to_string(), i);
                i
            }
        };
        &mut self.entries[index]
    }

    fn get(&self, name: &str) -> Option<&Entry> {
        self.by_name.get(name.trim()).map(|&i| &self.entries[i])
    }
}

/// The short alias of a class name: what follows the last `.`
/// (`InsertField$Value`, `TopicNameMatches`).
pub fn short_alias(class: &str) -> &str {
    class.rsplit('.').next().unwrap_or(class)
}

/// Maps class names and aliases to transform and predicate factories.
///
/// ```
/// use connect_api::transform::{Configurable, Transformation, Verdict};
/// use connect_api::{ConnectRecord, Record, Result, SinkRecord, Value};
/// use connect_transforms::registry::TransformRegistry;
///
/// #[derive(Default)]
/// struct Upper;
/// impl Configurable for Upper {}
/// impl<R: ConnectRecord> Transformation<R> for Upper {
///     fn transform(&mut self, r: &mut R) -> Result<Verdict> {
///         let t = r.record().topic.to_uppercase();
///         r.record_mut().topic = t.into();
///         Ok(Verdict::Keep)
///     }
/// }
///
/// let mut registry = TransformRegistry::with_builtins();
/// registry.register_transform("com.example.Upper", Upper::default);
/// let (class, mut smt) = registry.create_transform::<SinkRecord>("Upper").unwrap();
/// assert_eq!(class, "com.example.Upper");
/// let out = smt.apply(SinkRecord::new(Record::new("t", None, Value::Null), 0, 0)).unwrap().unwrap();
/// assert_eq!(&*out.record.topic, "T");
/// assert!(registry.create_transform::<SinkRecord>("InsertHeader").is_some());
/// ```
#[derive(Default)]
pub struct TransformRegistry {
    transforms: Table,
    predicates: Table,
}

impl std::fmt::Debug for TransformRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TransformRegistry")
            .field("transforms", &self.transform_classes())
            .field("predicates", &self.predicate_classes())
            .finish()
    }
}

impl TransformRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// A registry holding every built-in Kafka SMT (with its `$Key`/`$Value`
    /// variants) and the three built-in predicates.
    pub fn with_builtins() -> Self {
        let mut r = Self::new();
        r.register_sided(insert_field::CLASS, insert_field::InsertField::new);
        r.register_sided(replace_field::CLASS, replace_field::ReplaceField::new);
        r.register_sided(mask_field::CLASS, mask_field::MaskField::new);
        r.register_transform(value_to_key::CLASS, value_to_key::ValueToKey::new);
        r.register_sided(extract_field::CLASS, extract_field::ExtractField::new);
        r.register_sided(hoist_field::CLASS, hoist_field::HoistField::new);
        r.register_sided(cast::CLASS, cast::Cast::new);
        r.register_sided(flatten::CLASS, flatten::Flatten::new);
        r.register_sided(
            timestamp_converter::CLASS,
            timestamp_converter::TimestampConverter::new,
        );
        r.register_sided(
            set_schema_metadata::CLASS,
            set_schema_metadata::SetSchemaMetadata::new,
        );
        r.register_sided(header_from::CLASS, header_from::HeaderFrom::new);
        r.register_transform(
            timestamp_router::CLASS,
            timestamp_router::TimestampRouter::new,
        );
        r.register_transform(regex_router::CLASS, regex_router::RegexRouter::new);
        r.register_transform(filter::CLASS, filter::Filter::new);
        r.register_transform(insert_header::CLASS, insert_header::InsertHeader::new);
        r.register_transform(drop_headers::CLASS, drop_headers::DropHeaders::new);

        r.register_predicate(
            predicates::TOPIC_NAME_MATCHES_CLASS,
            predicates::TopicNameMatches::new,
        );
        r.register_predicate(
            predicates::HAS_HEADER_KEY_CLASS,
            predicates::HasHeaderKey::new,
        );
        r.register_predicate(
            predicates::RECORD_IS_TOMBSTONE_CLASS,
            predicates::RecordIsTombstone::new,
        );
        r
    }

    /// Register a transform written for every record type under `class` and
    /// its short alias (what follows the last `.`). A later registration of
    /// the same name replaces the earlier one.
    pub fn register_transform<T, F>(&mut self, class: &str, make: F)
    where
        T: Transformation<SourceRecord> + Transformation<SinkRecord> + 'static,
        F: Fn() -> T + Send + Sync + 'static,
    {
        let make = Arc::new(make);
        let m = make.clone();
        self.register_transform_for::<SourceRecord, _>(class, move || Box::new(m()));
        self.register_transform_for::<SinkRecord, _>(class, move || Box::new(make()));
    }

    /// Register the `$Key` and `$Value` variants of a field-level SMT
    /// (`<class>$Key`, `<class>$Value` and their aliases).
    pub fn register_sided<T>(&mut self, class: &str, make: fn(Side) -> T)
    where
        T: Transformation<SourceRecord> + Transformation<SinkRecord> + 'static,
    {
        for side in [Side::Key, Side::Value] {
            self.register_transform(&format!("{class}{}", side.suffix()), move || make(side));
        }
    }

    /// Register a transform for one record type `R` only.
    pub fn register_transform_for<R, F>(&mut self, class: &str, make: F)
    where
        R: ConnectRecord,
        F: Fn() -> Box<dyn Transformation<R>> + Send + Sync + 'static,
    {
        let ctor: TransformCtor<R> = Arc::new(make);
        self.transforms
            .entry(class)
            .ctors
            .insert(TypeId::of::<R>(), Box::new(ctor));
    }

    /// Register a predicate written for every record type under `class` and
    /// its short alias.
    pub fn register_predicate<P, F>(&mut self, class: &str, make: F)
    where
        P: Predicate<SourceRecord> + Predicate<SinkRecord> + 'static,
        F: Fn() -> P + Send + Sync + 'static,
    {
        let make = Arc::new(make);
        let m = make.clone();
        self.register_predicate_for::<SourceRecord, _>(class, move || Box::new(m()));
        self.register_predicate_for::<SinkRecord, _>(class, move || Box::new(make()));
    }

    /// Register a predicate for one record type `R` only.
    pub fn register_predicate_for<R, F>(&mut self, class: &str, make: F)
    where
        R: ConnectRecord,
        F: Fn() -> Box<dyn Predicate<R>> + Send + Sync + 'static,
    {
        let ctor: PredicateCtor<R> = Arc::new(make);
        self.predicates
            .entry(class)
            .ctors
            .insert(TypeId::of::<R>(), Box::new(ctor));
    }

    /// A new, unconfigured transform for `name` (class name or alias) and
    /// its canonical class name; `None` if unknown for records of type `R`.
    pub fn create_transform<R: ConnectRecord>(
        &self,
        name: &str,
    ) -> Option<(String, Box<dyn Transformation<R>>)> {
        let entry = self.transforms.get(name)?;
        let ctor = entry
            .ctors
            .get(&TypeId::of::<R>())?
            .downcast_ref::<TransformCtor<R>>()?;
        Some((entry.class.clone(), ctor()))
    }

    /// A new, unconfigured predicate for `name` and its class name.
    pub fn create_predicate<R: ConnectRecord>(
        &self,
        name: &str,
    ) -> Option<(String, Box<dyn Predicate<R>>)> {
        let entry = self.predicates.get(name)?;
        let ctor = entry
            .ctors
            .get(&TypeId::of::<R>())?
            .downcast_ref::<PredicateCtor<R>>()?;
        Some((entry.class.clone(), ctor()))
    }

    /// Class names of every registered transform, in registration order.
    pub fn transform_classes(&self) -> Vec<&str> {
        self.transforms
            .entries
            .iter()
            .map(|e| e.class.as_str())
            .collect()
    }

    /// Class names of every registered predicate, in registration order.
    pub fn predicate_classes(&self) -> Vec<&str> {
        self.predicates
            .entries
            .iter()
            .map(|e| e.class.as_str())
            .collect()
    }

    /// Every name (class or alias) that resolves to a transform.
    pub fn transform_names(&self) -> HashSet<String> {
        self.transforms.by_name.keys().cloned().collect()
    }

    /// Every name (class or alias) that resolves to a predicate.
    pub fn predicate_names(&self) -> HashSet<String> {
        self.predicates.by_name.keys().cloned().collect()
    }

    /// Whether `name` (class or alias) is a known transform.
    pub fn has_transform(&self, name: &str) -> bool {
        self.transforms.get(name).is_some()
    }

    /// Whether `name` (class or alias) is a known predicate.
    pub fn has_predicate(&self, name: &str) -> bool {
        self.predicates.get(name).is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use connect_api::config::ConfigMap;
    use connect_api::{Record, Value};

    /// `(class, has $Key/$Value variants)` for every SMT of the reference.
    const SMTS: &[(&str, bool)] = &[
        ("InsertField", true),
        ("ReplaceField", true),
        ("MaskField", true),
        ("ValueToKey", false),
        ("ExtractField", true),
        ("HoistField", true),
        ("Cast", true),
        ("Flatten", true),
        ("TimestampConverter", true),
        ("SetSchemaMetadata", true),
        ("HeaderFrom", true),
        ("TimestampRouter", false),
        ("RegexRouter", false),
        ("Filter", false),
        ("InsertHeader", false),
        ("DropHeaders", false),
    ];
    const PREDICATES: &[&str] = &["TopicNameMatches", "HasHeaderKey", "RecordIsTombstone"];

    fn smt_names() -> Vec<String> {
        SMTS.iter()
            .flat_map(|(name, sided)| {
                let class = format!("org.apache.kafka.connect.transforms.{name}");
                if *sided {
                    vec![format!("{class}$Key"), format!("{class}$Value")]
                } else {
                    vec![class]
                }
            })
            .collect()
    }

    #[test]
    fn every_reference_class_and_alias_resolves_for_both_record_types() {
        let r = TransformRegistry::with_builtins();
        for class in smt_names() {
            for name in [class.as_str(), short_alias(&class)] {
                let (c, _) = r
                    .create_transform::<SinkRecord>(name)
                    .unwrap_or_else(|| panic!("{name}"));
                assert_eq!(c, class);
                assert!(r.create_transform::<SourceRecord>(name).is_some(), "{name}");
            }
        }
        for p in PREDICATES {
            let class = format!("org.apache.kafka.connect.transforms.predicates.{p}");
            for name in [class.as_str(), p] {
                assert_eq!(r.create_predicate::<SinkRecord>(name).unwrap().0, class);
                assert!(r.create_predicate::<SourceRecord>(name).is_some(), "{name}");
            }
        }
        assert_eq!(r.transform_classes().len(), smt_names().len());
        assert_eq!(r.predicate_classes().len(), PREDICATES.len());
        assert!(r.create_transform::<SinkRecord>("Nope").is_none());
        assert!(!r.has_predicate("Filter"));
    }

    #[test]
    fn every_builtin_key_is_documented() {
        let r = TransformRegistry::with_builtins();
        for class in r.transform_classes() {
            let (_, t) = r.create_transform::<SinkRecord>(class).unwrap();
            for key in t.config_def().keys() {
                assert!(
                    !key.documentation.trim().is_empty(),
                    "{class}: {}",
                    key.name
                );
            }
        }
        for class in r.predicate_classes() {
            let (_, p) = r.create_predicate::<SinkRecord>(class).unwrap();
            for key in p.config_def().keys() {
                assert!(
                    !key.documentation.trim().is_empty(),
                    "{class}: {}",
                    key.name
                );
            }
        }
    }

    #[test]
    fn users_register_and_override_per_record_type() {
        use connect_api::transform::Configurable;

        #[derive(Default)]
        struct Tag(String);
        impl Configurable for Tag {
            fn configure(&mut self, c: &ConfigMap) -> connect_api::Result<()> {
                self.0 = c.get("tag").cloned().unwrap_or_default();
                Ok(())
            }
        }

        impl Transformation<SinkRecord> for Tag {
            fn transform(
                &mut self,
                r: &mut SinkRecord,
            ) -> connect_api::Result<connect_api::Verdict> {
                r.record.value = Value::from(self.0.as_str());
                Ok(connect_api::Verdict::Keep)
            }
        }
        let mut r = TransformRegistry::with_builtins();
        r.register_transform_for::<SinkRecord, _>("com.acme.Tag", || Box::new(Tag::default()));
        let (class, mut t) = r.create_transform::<SinkRecord>("Tag").unwrap();
        assert_eq!(class, "com.acme.Tag");
        t.configure(&[("tag".to_string(), "x".to_string())].into())
            .unwrap();
        let out = t
            .apply(SinkRecord::new(Record::new("t", None, Value::Null), 0, 0))
            .unwrap()
            .unwrap();
        assert_eq!(out.record.value, Value::from("x"));
        // Sink-only: not offered for source chains.
        assert!(r.create_transform::<SourceRecord>("com.acme.Tag").is_none());
        // A user class may replace a built-in alias.
        r.register_transform_for::<SinkRecord, _>("com.acme.Filter", || Box::new(Tag::default()));
        assert_eq!(
            r.create_transform::<SinkRecord>("Filter").unwrap().0,
            "com.acme.Filter"
        );
        assert_eq!(
            r.create_transform::<SinkRecord>("org.apache.kafka.connect.transforms.Filter")
                .unwrap()
                .0,
            "org.apache.kafka.connect.transforms.Filter"
        );
    }
}
