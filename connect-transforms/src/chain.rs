//! The transform chain of a connector, built from its Kafka-style config:
//!
//! ```properties
//! transforms=route,drop
//! transforms.route.type=RegexRouter
//! transforms.route.regex=(.*)-raw
//! transforms.route.replacement=$1
//! transforms.drop.type=org.apache.kafka.connect.transforms.Filter
//! transforms.drop.predicate=isTombstone
//! predicates=isTombstone
//! predicates.isTombstone.type=RecordIsTombstone
//! ```
//!
//! Transforms run in the listed order; one returning no record ends the
//! chain. A transform with a predicate runs only when `negate` XOR the
//! predicate's result is true. Every error names the transform's alias and
//! class, and the config key or field at fault.

use std::collections::HashSet;

use connect_api::config::validators::Lambda;
use connect_api::config::{
    parse_value, with_prefix, ConfigDef, ConfigKey, ConfigMap, ConfigType, ConfigValue, Importance,
};
use connect_api::transform::{Predicate, Transformation, Verdict};
use connect_api::{ConnectError, ConnectRecord, ErrorKind, Result};

use crate::registry::TransformRegistry;

/// Config key listing the transform aliases.
pub const TRANSFORMS: &str = "transforms";
/// Config key listing the predicate aliases.
pub const PREDICATES: &str = "predicates";

struct Stage<R> {
    alias: String,
    class: String,
    transform: Box<dyn Transformation<R>>,
    /// Index into the chain's predicates.
    predicate: Option<usize>,
    negate: bool,
}

/// An ordered list of configured transforms with their predicates.
///
/// ```
/// use connect_api::config::ConfigMap;
/// use connect_api::{Record, SinkRecord, Value};
/// use connect_transforms::chain::TransformChain;
/// use connect_transforms::registry::TransformRegistry;
///
/// let config = ConfigMap::from([
///     ("transforms", "route,drop"),
///     ("transforms.route.type", "RegexRouter"),
///     ("transforms.route.regex", "(.*)-raw"),
///     ("transforms.route.replacement", "$1"),
///     ("transforms.drop.type", "Filter"),
///     ("transforms.drop.predicate", "isTombstone"),
///     ("predicates", "isTombstone"),
///     ("predicates.isTombstone.type", "RecordIsTombstone"),
/// ]);
/// let mut chain = TransformChain::<SinkRecord>::from_config(&config, &TransformRegistry::with_builtins()).unwrap();
///
/// let rec = SinkRecord::new(Record::new("orders-raw", None, Value::from("x")), 0, 0);
/// assert_eq!(&*chain.apply(rec).unwrap().unwrap().record.topic, "orders");
/// let tombstone = SinkRecord::new(Record::new("orders-raw", None, Value::Null), 0, 1);
/// assert!(chain.apply(tombstone).unwrap().is_none());
/// ```
pub struct TransformChain<R: ConnectRecord> {
    stages: Vec<Stage<R>>,
    predicates: Vec<Box<dyn Predicate<R>>>,
}

impl<R: ConnectRecord> std::fmt::Debug for TransformChain<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.stages.iter().map(|s| (&s.alias, &s.class)))
            .finish()
    }
}

impl<R: ConnectRecord> Default for TransformChain<R> {
    fn default() -> Self {
        TransformChain {
            stages: Vec::new(),
            predicates: Vec::new(),
        }
    }
}

/// `e` from configuring `what` (`transform 'a' (Class)`), re-keyed under
/// `prefix` so the key names the full connector config key.
fn config_context(e: ConnectError, prefix: &str, what: &str) -> ConnectError {
    match e.kind() {
        ErrorKind::Config { key } => {
            ConnectError::config(format!("{prefix}{key}"), format!("{what}: {}", e.message()))
        }
        _ => e.context(what),
    }
}

/// The aliases listed under `key` (`transforms`, `predicates`), unique.
fn aliases(config: &ConfigMap, key: &str) -> Result<Vec<String>> {
    let Some(raw) = config.get(key) else {
        return Ok(Vec::new());
    };
    let list = match parse_value(ConfigType::List, raw) {
        Ok(ConfigValue::List(l)) => l,
        _ => {
            return Err(ConnectError::config(
                key,
                "must be a comma-separated list of aliases",
            ))
        }
    };
    let mut seen = HashSet::new();
    for alias in &list {
        if alias.is_empty() {
            return Err(ConnectError::config(key, "aliases must not be empty"));
        }
        if !seen.insert(alias.as_str()) {
            return Err(ConnectError::config(
                key,
                format!("Duplicate alias provided: '{alias}'"),
            ));
        }
    }
    Ok(list)
}

/// The config of one alias without the chain's own keys.
fn plugin_config(config: &ConfigMap, prefix: &str, own: &[&str]) -> ConfigMap {
    let mut c = with_prefix(config, prefix);
    for k in own {
        c.remove(*k);
    }
    c
}

impl<R: ConnectRecord> TransformChain<R> {
    /// A chain with no transforms (records pass unchanged).
    pub fn empty() -> Self {
        Self::default()
    }

    /// Build and configure the chain described by a connector config.
    pub fn from_config(config: &ConfigMap, registry: &TransformRegistry) -> Result<Self> {
        let mut chain = Self::empty();
        let predicate_aliases = aliases(config, PREDICATES)?;
        for alias in &predicate_aliases {
            let type_key = format!("{PREDICATES}.{alias}.type");
            let name = config.get(&type_key).ok_or_else(|| {
                ConnectError::config(
                    &type_key,
                    format!(
                        "Missing required configuration \"{type_key}\" for predicate '{alias}'"
                    ),
                )
            })?;
            let (class, mut predicate) = registry.create_predicate::<R>(name).ok_or_else(|| {
                ConnectError::config(
                    &type_key,
                    format!("Class {} could not be found.", name.trim()),
                )
            })?;
            let prefix = format!("{PREDICATES}.{alias}.");
            predicate
                .configure(&plugin_config(config, &prefix, &["type"]))
                .map_err(|e| {
                    config_context(e, &prefix, &format!("predicate '{alias}' ({class})"))
                })?;
            chain.predicates.push(predicate);
        }
        for alias in aliases(config, TRANSFORMS)? {
            let prefix = format!("{TRANSFORMS}.{alias}.");
            let type_key = format!("{prefix}type");
            let name = config.get(&type_key).ok_or_else(|| {
                ConnectError::config(
                    &type_key,
                    format!(
                        "Missing required configuration \"{type_key}\" for transform '{alias}'"
                    ),
                )
            })?;
            let (class, mut transform) = registry.create_transform::<R>(name).ok_or_else(|| {
                ConnectError::config(
                    &type_key,
                    format!("Class {} could not be found.", name.trim()),
                )
            })?;
            let what = format!("transform '{alias}' ({class})");
            let negate_key = format!("{prefix}negate");
            let negate = match config
                .get(&negate_key)
                .map(|raw| parse_value(ConfigType::Boolean, raw))
            {
                None => None,
                Some(Ok(ConfigValue::Boolean(b))) => Some(b),
                Some(_) => {
                    return Err(ConnectError::config(
                        &negate_key,
                        format!("{what}: Expected value to be either true or false"),
                    ))
                }
            };
            let predicate_key = format!("{prefix}predicate");
            let predicate = match config
                .get(&predicate_key)
                .map(|p| p.trim())
                .filter(|p| !p.is_empty())
            {
                None => {
                    if negate.is_some() {
                        return Err(ConnectError::config(
                            &negate_key,
                            format!("{what}: '{negate_key}' is set but '{predicate_key}' is not; negate needs a predicate"),
                        ));
                    }
                    None
                }
                Some(p) => Some(predicate_aliases.iter().position(|a| a == p).ok_or_else(
                    || {
                        ConnectError::config(
                            &predicate_key,
                            format!("{what}: predicate '{p}' is not listed in '{PREDICATES}'"),
                        )
                    },
                )?),
            };
            transform
                .configure(&plugin_config(
                    config,
                    &prefix,
                    &["type", "predicate", "negate"],
                ))
                .map_err(|e| config_context(e, &prefix, &what))?;
            chain.stages.push(Stage {
                alias,
                class,
                transform,
                predicate,
                negate: negate.unwrap_or(false),
            });
        }
        Ok(chain)
    }

    /// Append an already configured transform under `alias`, with no predicate.
    pub fn push(
        &mut self,
        alias: impl Into<String>,
        class: impl Into<String>,
        transform: Box<dyn Transformation<R>>,
    ) {
        self.stages.push(Stage {
            alias: alias.into(),
            class: class.into(),
            transform,
            predicate: None,
            negate: false,
        });
    }

    /// Run `record` through the chain: `Ok(None)` when a transform dropped it.
    pub fn apply(&mut self, mut record: R) -> Result<Option<R>> {
        Ok(match self.transform(&mut record)? {
            Verdict::Keep => Some(record),
            Verdict::Drop => None,
        })
    }

    /// Run `record` through the chain in place; [`Verdict::Drop`] when a
    /// transform dropped it (the record is then left as that transform left
    /// it). On an error the record may be half transformed.
    pub fn transform(&mut self, record: &mut R) -> Result<Verdict> {
        for index in 0..self.stages.len() {
            if self.apply_stage(index, record)? == Verdict::Drop {
                return Ok(Verdict::Drop);
            }
        }
        Ok(Verdict::Keep)
    }

    /// Run `record` through the transform at `index` alone (its predicate
    /// decides whether it applies), so a caller can retry or tolerate each
    /// transform on its own, as Kafka's worker does. An error names the
    /// alias and class; an index past the end passes the record through.
    pub fn apply_stage(&mut self, index: usize, record: &mut R) -> Result<Verdict> {
        let Some(stage) = self.stages.get_mut(index) else {
            return Ok(Verdict::Keep);
        };
        if let Some(p) = stage.predicate {
            let matches = self.predicates.get(p).is_some_and(|p| p.test(record));
            if matches == stage.negate {
                return Ok(Verdict::Keep);
            }
        }
        stage.transform.transform(record).map_err(|e| {
            e.context(format_args!(
                "transform '{}' ({})",
                stage.alias, stage.class
            ))
        })
    }

    /// The class of the transform at `index` (what the DLQ's
    /// `__connect.errors.class.name` header names).
    pub fn stage_class(&self, index: usize) -> Option<&str> {
        self.stages.get(index).map(|s| s.class.as_str())
    }

    /// The transform aliases, in order.
    pub fn aliases(&self) -> impl Iterator<Item = &str> + '_ {
        self.stages.iter().map(|s| s.alias.as_str())
    }

    /// Number of transforms.
    pub fn len(&self) -> usize {
        self.stages.len()
    }

    /// Whether the chain has no transforms.
    pub fn is_empty(&self) -> bool {
        self.stages.is_empty()
    }

    /// Close every transform.
    pub fn close(&mut self) {
        for s in &mut self.stages {
            s.transform.close();
        }
    }

    /// Every key the chain described by `config` accepts, prefixed as in the
    /// connector config (`transforms.<alias>.<key>`, `predicates.<alias>.<key>`),
    /// for REST validation. Unknown classes and missing predicates show up as
    /// errors on the `type` / `predicate` keys when validated.
    pub fn config_def(config: &ConfigMap, registry: &TransformRegistry) -> ConfigDef {
        let mut def = ConfigDef::new()
            .define(
                ConfigKey::new(TRANSFORMS, ConfigType::List)
                    .default(Vec::<String>::new())
                    .importance(Importance::Low)
                    .doc("Aliases for the transformations to be applied to records."),
            )
            .define(
                ConfigKey::new(PREDICATES, ConfigType::List)
                    .default(Vec::<String>::new())
                    .importance(Importance::Low)
                    .doc("Aliases for the predicates used by transformations."),
            );
        let predicate_aliases = aliases(config, PREDICATES).unwrap_or_default();
        for alias in &predicate_aliases {
            let prefix = format!("{PREDICATES}.{alias}.");
            let ty = config
                .get(&format!("{prefix}type"))
                .map(|s| s.trim().to_string());
            def = def.define(class_key(&prefix, "predicate", registry.predicate_names()));
            if let Some((_, p)) = ty.and_then(|t| registry.create_predicate::<R>(&t)) {
                def = merge_prefixed(def, &prefix, &p.config_def());
            }
        }
        for alias in aliases(config, TRANSFORMS).unwrap_or_default() {
            let prefix = format!("{TRANSFORMS}.{alias}.");
            let ty = config
                .get(&format!("{prefix}type"))
                .map(|s| s.trim().to_string());
            def = def.define(class_key(
                &prefix,
                "transformation",
                registry.transform_names(),
            ));
            let known = predicate_aliases.clone();
            def = def
                .define(
                    ConfigKey::new(format!("{prefix}predicate"), ConfigType::String)
                        .optional()
                        .importance(Importance::Medium)
                        .validator(Lambda::new("a predicate alias", move |_: &str, v: &ConfigValue| match v {
                            ConfigValue::String(p) if !p.is_empty() && !known.contains(p) => {
                                Err(format!("predicate '{p}' is not listed in '{PREDICATES}'"))
                            }
                            _ => Ok(()),
                        }))
                        .doc("The alias of a predicate used to determine whether to apply this transformation."),
                )
                .define(
                    ConfigKey::new(format!("{prefix}negate"), ConfigType::Boolean)
                        .default(false)
                        .importance(Importance::Medium)
                        .doc("Whether the configured predicate should be negated."),
                );
            if let Some((_, t)) = ty.and_then(|t| registry.create_transform::<R>(&t)) {
                def = merge_prefixed(def, &prefix, &t.config_def());
            }
        }
        def
    }
}

/// The `<prefix>type` key, valid when `names` (the class names and aliases
/// the registry resolves) holds the value.
fn class_key(prefix: &str, kind: &str, names: HashSet<String>) -> ConfigKey {
    ConfigKey::new(format!("{prefix}type"), ConfigType::Class)
        .importance(Importance::High)
        .validator(Lambda::new(
            format!("a {kind} class"),
            move |_: &str, v: &ConfigValue| match v {
                ConfigValue::String(c) if !names.contains(c) => {
                    Err(format!("Class {c} could not be found."))
                }
                _ => Ok(()),
            },
        ))
        .doc(format!(
            "Class for the '{}' {kind}.",
            prefix.trim_end_matches('.')
        ))
}

fn merge_prefixed(mut def: ConfigDef, prefix: &str, plugin: &ConfigDef) -> ConfigDef {
    for key in plugin.keys() {
        let mut k = key.clone();
        k.name = format!("{prefix}{}", key.name);
        k.display_name = format!("{prefix}{}", key.display_name);
        def = def.define(k);
    }
    def
}

#[cfg(test)]
mod tests {
    use super::*;
    use connect_api::{Headers, Record, SinkRecord, SourceMap, SourceRecord, Value};

    fn config(pairs: &[(&str, &str)]) -> ConfigMap {
        ConfigMap::from_pairs(pairs.iter().copied())
    }

    fn build(pairs: &[(&str, &str)]) -> Result<TransformChain<SinkRecord>> {
        TransformChain::from_config(&config(pairs), &TransformRegistry::with_builtins())
    }

    fn rec(topic: &str, value: Value) -> SinkRecord {
        SinkRecord::new(Record::new(topic, None, value), 0, 0)
    }

    #[test]
    fn empty_config_is_an_empty_chain() {
        let mut chain = build(&[]).unwrap();
        assert!(chain.is_empty());
        assert_eq!(
            chain
                .apply(rec("t", Value::Null))
                .unwrap()
                .unwrap()
                .record
                .topic
                .as_ref(),
            "t"
        );
    }

    #[test]
    fn applies_in_order_with_class_names_and_aliases() {
        let mut chain = build(&[
            ("transforms", "a, b"),
            (
                "transforms.a.type",
                "org.apache.kafka.connect.transforms.RegexRouter",
            ),
            ("transforms.a.regex", "(.*)"),
            ("transforms.a.replacement", "$1-x"),
            ("transforms.b.type", "RegexRouter"),
            ("transforms.b.regex", "(.*)-x"),
            ("transforms.b.replacement", "y-$1"),
        ])
        .unwrap();
        assert_eq!(chain.aliases().collect::<Vec<_>>(), ["a", "b"]);
        assert_eq!(
            &*chain
                .apply(rec("t", Value::Null))
                .unwrap()
                .unwrap()
                .record
                .topic,
            "y-t"
        );
    }

    #[test]
    fn predicates_gate_transforms_and_negate_inverts() {
        let base = [
            ("transforms", "drop"),
            ("transforms.drop.type", "Filter"),
            ("transforms.drop.predicate", "isFoo"),
            ("predicates", "isFoo"),
            (
                "predicates.isFoo.type",
                "org.apache.kafka.connect.transforms.predicates.TopicNameMatches",
            ),
            ("predicates.isFoo.pattern", "foo.*"),
        ];
        let mut chain = build(&base).unwrap();
        assert!(chain.apply(rec("foo1", Value::Null)).unwrap().is_none());
        assert!(chain.apply(rec("bar", Value::Null)).unwrap().is_some());
        let mut negated: Vec<_> = base.to_vec();
        negated.push(("transforms.drop.negate", "true"));
        let mut chain = build(&negated).unwrap();
        assert!(chain.apply(rec("foo1", Value::Null)).unwrap().is_some());
        assert!(chain.apply(rec("bar", Value::Null)).unwrap().is_none());
    }

    #[test]
    fn a_dropped_record_ends_the_chain() {
        let mut chain = build(&[
            ("transforms", "drop,hdr"),
            ("transforms.drop.type", "Filter"),
            ("transforms.drop.predicate", "hasH"),
            ("transforms.hdr.type", "InsertHeader"),
            ("transforms.hdr.header", "h"),
            ("transforms.hdr.value.literal", "1"),
            ("predicates", "hasH"),
            ("predicates.hasH.type", "HasHeaderKey"),
            ("predicates.hasH.name", "h"),
        ])
        .unwrap();
        let mut h = Headers::new();
        h.add_string("h", "x");
        let with_h = SinkRecord::new(Record::new("t", None, Value::Null).with_headers(h), 0, 0);
        assert!(chain.apply(with_h.clone()).unwrap().is_none());
        let out = chain.apply(rec("t", Value::Null)).unwrap().unwrap();
        assert_eq!(out.record.headers.len(), 1);
        // In place: the stages after the drop never see the record.
        let mut in_place = with_h;
        assert_eq!(chain.transform(&mut in_place).unwrap(), Verdict::Drop);
        assert_eq!(in_place.record.headers.len(), 1);
        let mut kept = rec("t", Value::Null);
        assert_eq!(chain.transform(&mut kept).unwrap(), Verdict::Keep);
        assert_eq!(kept.record.headers.len(), 1);
    }

    #[test]
    fn config_errors_name_alias_class_and_key() {
        type Case<'a> = (Vec<(&'a str, &'a str)>, &'a str, &'a str);
        let cases: Vec<Case> = vec![
            (
                vec![("transforms", "a")],
                "transforms.a.type",
                "Missing required configuration",
            ),
            (
                vec![("transforms", "a"), ("transforms.a.type", "Nope")],
                "transforms.a.type",
                "Class Nope could not be found",
            ),
            (
                vec![("transforms", "a,a"), ("transforms.a.type", "Filter")],
                "transforms",
                "Duplicate alias",
            ),
            (
                vec![
                    ("transforms", "a"),
                    ("transforms.a.type", "Filter"),
                    ("transforms.a.negate", "true"),
                ],
                "transforms.a.negate",
                "negate needs a predicate",
            ),
            (
                vec![
                    ("transforms", "a"),
                    ("transforms.a.type", "Filter"),
                    ("transforms.a.predicate", "p"),
                ],
                "transforms.a.predicate",
                "predicate 'p' is not listed",
            ),
            (
                vec![
                    ("transforms", "r"),
                    ("transforms.r.type", "RegexRouter"),
                    ("transforms.r.regex", "("),
                ],
                "transforms.r.",
                "transform 'r' (org.apache.kafka.connect.transforms.RegexRouter)",
            ),
            (
                vec![
                    ("predicates", "p"),
                    ("predicates.p.type", "TopicNameMatches"),
                ],
                "predicates.p.pattern",
                "predicate 'p' (org.apache.kafka.connect.transforms.predicates.TopicNameMatches)",
            ),
            (
                vec![("predicates", "p"), ("predicates.p.type", "Gone")],
                "predicates.p.type",
                "could not be found",
            ),
        ];
        for (pairs, key, fragment) in cases {
            let e = build(&pairs).unwrap_err();
            let ErrorKind::Config { key: k } = e.kind() else {
                panic!("not a config error: {e}");
            };
            assert!(k.starts_with(key), "{k} vs {key}");
            assert!(e.to_string().contains(fragment), "{e}");
        }
    }

    #[test]
    fn runtime_errors_name_alias_class_and_field() {
        let mut chain = build(&[
            ("transforms", "conv"),
            ("transforms.conv.type", "TimestampConverter$Value"),
            ("transforms.conv.target.type", "unix"),
            ("transforms.conv.field", "ts"),
            ("transforms.conv.format", "yyyy-MM-dd"),
        ])
        .unwrap();
        let v = Value::string_map([("ts", Value::from("not a date"))]);
        let e = chain.apply(rec("t", v)).unwrap_err().to_string();
        assert!(e.starts_with("ts: transform 'conv' (org.apache.kafka.connect.transforms.TimestampConverter$Value): "), "{e}");
    }

    #[test]
    fn works_for_source_records_too() {
        let cfg = config(&[
            ("transforms", "r"),
            ("transforms.r.type", "TimestampRouter"),
        ]);
        let mut chain =
            TransformChain::<SourceRecord>::from_config(&cfg, &TransformRegistry::with_builtins())
                .unwrap();
        let r = SourceRecord::new(
            Default::default(),
            SourceMap::new(),
            Record::new("t", None, Value::Null).with_timestamp(0),
        );
        assert_eq!(
            &*chain.apply(r).unwrap().unwrap().record.topic,
            "t-19700101"
        );
    }

    #[test]
    fn combined_config_def_prefixes_keys_and_validates() {
        let cfg = config(&[
            ("transforms", "r,bad"),
            ("transforms.r.type", "RegexRouter"),
            ("transforms.r.predicate", "missing"),
            ("transforms.bad.type", "Nope"),
            ("predicates", "p"),
            ("predicates.p.type", "HasHeaderKey"),
        ]);
        let def =
            TransformChain::<SinkRecord>::config_def(&cfg, &TransformRegistry::with_builtins());
        for k in [
            "transforms",
            "transforms.r.type",
            "transforms.r.regex",
            "transforms.r.replacement",
            "transforms.r.negate",
            "predicates.p.name",
            "transforms.bad.type",
        ] {
            assert!(def.key(k).is_some(), "{k}");
        }
        let report = def.validate(&cfg);
        let errors = |name: &str| {
            report
                .iter()
                .find(|r| r.name == name)
                .map(|r| r.errors.clone())
                .unwrap_or_default()
        };
        assert!(errors("transforms.bad.type")[0].contains("could not be found"));
        assert!(errors("transforms.r.predicate")[0].contains("not listed"));
        assert!(errors("transforms.r.type").is_empty());
        assert!(!errors("transforms.r.regex").is_empty());
        assert!(!errors("predicates.p.name").is_empty());
    }

    proptest::proptest! {
        #[test]
        fn transform_runs_iff_negate_xor_predicate(topic in "[a-c]{0,4}", negate: bool) {
            let negate_s = negate.to_string();
            let mut chain = build(&[
                ("transforms", "drop"),
                ("transforms.drop.type", "Filter"),
                ("transforms.drop.predicate", "p"),
                ("transforms.drop.negate", negate_s.as_str()),
                ("predicates", "p"),
                ("predicates.p.type", "TopicNameMatches"),
                ("predicates.p.pattern", "a.*"),
            ])
            .unwrap();
            let matches = topic.starts_with('a');
            let dropped = chain.apply(rec(&topic, Value::Null)).unwrap().is_none();
            proptest::prop_assert_eq!(dropped, matches != negate);
        }
    }
}
