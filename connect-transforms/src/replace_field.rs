//! ReplaceField: drop, keep or rename the fields of a struct (or the keys of
//! a schemaless map).
//!
//! Kafka classes `org.apache.kafka.connect.transforms.ReplaceField$Key` and
//! `org.apache.kafka.connect.transforms.ReplaceField$Value`.
//!
//! | key | default | meaning |
//! |---|---|---|
//! | `exclude` | empty | fields to drop; wins over `include` |
//! | `include` | empty | fields to keep; empty keeps every field |
//! | `renames` | empty | `old:new` pairs |
//! | `blacklist`, `whitelist` | unset | deprecated names of `exclude` and `include`; when both the old and the new name are set, the new one wins |
//! | `replace.null.with.default` | `true` | a null struct field is read as its schema default |
//!
//! With a schema the output schema keeps the input schema's name, version,
//! doc and parameters and is derived once per input schema. A null value
//! (tombstone) passes through unchanged.
//!
//! This file also holds the small helpers the other struct-rewriting SMTs of
//! this crate share (reading a field with or without its default, rebuilding
//! a struct, copying schema basics).

use std::collections::{HashMap, HashSet};

use connect_api::config::{validators::Lambda, ConfigKey, ConfigType, Importance};
use connect_api::transform::{Configurable, Transformation, Verdict};
use connect_api::{
    ConfigDef, ConfigMap, ConnectError, ConnectRecord, Field, Result, Schema, Struct, Value,
};

use crate::util::{
    fill_defaults, into_map, into_struct, map_key, replace_null_with_default_key, same_or_new,
    struct_builder_like, SchemaCache, Side, REPLACE_NULL_WITH_DEFAULT,
};

/// Kafka's class name, without the `$Key` / `$Value` suffix.
pub const CLASS: &str = "org.apache.kafka.connect.transforms.ReplaceField";

const PURPOSE: &str = "field replacement";

const EXCLUDE: &str = "exclude";
const INCLUDE: &str = "include";
const RENAMES: &str = "renames";
const BLACKLIST: &str = "blacklist";
const WHITELIST: &str = "whitelist";

/// Drops, keeps and renames fields; see the [module docs](self).
///
/// ```
/// use connect_api::transform::{Configurable, Transformation};
/// use connect_api::{Record, Schema, SchemaBuilder, SinkRecord, Struct, Value};
/// use connect_transforms::replace_field::ReplaceField;
/// use connect_transforms::util::Side;
///
/// let mut smt = ReplaceField::new(Side::Value);
/// let cfg = connect_api::ConfigMap::from([("exclude", "ssn"), ("renames", "name:full_name")]);
/// smt.configure(&cfg).unwrap();
///
/// let schema = SchemaBuilder::struct_()
///     .field("name", Schema::string())
///     .field("ssn", Schema::string())
///     .build().unwrap();
/// let mut person = Struct::new(schema.clone()).unwrap();
/// person.put("name", "Ada").unwrap().put("ssn", "000").unwrap();
/// let rec = SinkRecord::new(Record::new("people", Some(schema), person.into()), 0, 0);
///
/// let out = smt.apply(rec).unwrap().unwrap();
/// let value = out.record.value.as_struct().unwrap();
/// assert_eq!(value.get_string("full_name").unwrap(), Some("Ada"));
/// assert_eq!(value.schema().field_count(), 1);
/// ```
#[derive(Debug)]
pub struct ReplaceField {
    side: Side,
    settings: Settings,
    cache: SchemaCache<Plan>,
}

#[derive(Debug, Default)]
struct Settings {
    exclude: HashSet<String>,
    include: HashSet<String>,
    renames: HashMap<String, String>,
    /// Names some field is renamed to (for resolving clashes in maps).
    rename_targets: HashSet<String>,
    replace_null_with_default: bool,
}

/// The output schema of an input schema and, for each output field, the
/// index of the input field it comes from (increasing): the per-record work
/// is then index moves within the struct's own values, with no name lookups.
#[derive(Debug, Clone)]
struct Plan {
    output: Schema,
    sources: Vec<usize>,
}

impl Settings {
    fn plan(&self, input: &Schema) -> Result<Plan> {
        Ok(Plan {
            output: self.derive(input)?,
            sources: input
                .field_list()
                .filter(|f| self.keeps(f.name()))
                .map(Field::index)
                .collect(),
        })
    }

    fn keeps(&self, name: &str) -> bool {
        !self.exclude.contains(name) && (self.include.is_empty() || self.include.contains(name))
    }

    fn renamed<'a>(&'a self, name: &'a str) -> &'a str {
        self.renames.get(name).map_or(name, String::as_str)
    }

    fn derive(&self, schema: &Schema) -> Result<Schema> {
        let mut builder = struct_builder_like(schema);
        for field in schema.fields()? {
            if self.keeps(field.name()) {
                builder = builder.field(self.renamed(field.name()), field.schema().clone());
            }
        }
        same_or_new(schema, builder.build()?)
    }
}

impl ReplaceField {
    /// An unconfigured ReplaceField acting on `side`.
    pub fn new(side: Side) -> Self {
        ReplaceField {
            side,
            settings: Settings {
                replace_null_with_default: true,
                ..Settings::default()
            },
            cache: SchemaCache::default(),
        }
    }

    fn definition() -> ConfigDef {
        let list = |name: &str, doc: &str| {
            ConfigKey::new(name, ConfigType::List)
                .default(Vec::<String>::new())
                .importance(Importance::Medium)
                .doc(doc)
        };
        ConfigDef::new()
            .define(list(
                EXCLUDE,
                "Fields to exclude. This takes precedence over the fields to include.",
            ))
            .define(list(
                INCLUDE,
                "Fields to include. If specified, only these fields will be used.",
            ))
            .define(
                list(RENAMES, "Field rename mappings, as `old:new` pairs.").validator(Lambda::new(
                    "list of colon-delimited pairs, e.g. foo:bar,abc:xyz",
                    |_: &str, value: &connect_api::config::ConfigValue| match value {
                        connect_api::config::ConfigValue::List(items) => {
                            parse_renames(items).map(|_| ())
                        }
                        _ => Ok(()),
                    },
                )),
            )
            .define(
                ConfigKey::new(BLACKLIST, ConfigType::List)
                    .optional()
                    .importance(Importance::Low)
                    .doc("Deprecated. Use `exclude` instead."),
            )
            .define(
                ConfigKey::new(WHITELIST, ConfigType::List)
                    .optional()
                    .importance(Importance::Low)
                    .doc("Deprecated. Use `include` instead."),
            )
            .define(replace_null_with_default_key())
    }

    fn apply_struct(&mut self, value: Value) -> Result<(Schema, Value)> {
        let rnwd = self.settings.replace_null_with_default;
        let (input, mut values) = into_struct(value, PURPOSE)?.into_parts();
        let settings = &self.settings;
        let plan = self.cache.get_or_try_insert(&input, |s| settings.plan(s))?;
        // Compact in place, as `Vec::retain` does: sources increase and each
        // target is at or before its source, so a swap moves a kept value
        // down and a dropped one up, to be truncated.
        for (target, &source) in plan.sources.iter().enumerate() {
            if target != source && source < values.len() {
                values.swap(target, source);
            }
        }
        values.truncate(plan.sources.len());
        let output = plan.output.clone();
        // Renamed fields keep their schemas, so the output's defaults are
        // the input's.
        let mut s = Struct::from_parts(output.clone(), values)?;
        if rnwd {
            fill_defaults(&mut s);
        }
        Ok((output, Value::Struct(s)))
    }

    fn apply_map(&self, value: Value) -> Result<Value> {
        let s = &self.settings;
        let entries = into_map(value, PURPOSE)?;
        let mut out: Vec<(Value, Value)> = Vec::with_capacity(entries.len());
        for (key, v) in entries {
            let name = map_key(&key, PURPOSE)?;
            if !s.keeps(name) {
                continue;
            }
            match s.renames.get(name) {
                // A renamed entry wins over an entry that already has the new name.
                Some(new) => {
                    out.retain(|(k, _)| k.as_str() != Some(new));
                    out.push((Value::String(new.clone()), v));
                }
                None if s.rename_targets.contains(name)
                    && out.iter().any(|(k, _)| k.as_str() == Some(name)) => {}
                None => out.push((key, v)),
            }
        }
        Ok(Value::Map(out))
    }
}

impl Configurable for ReplaceField {
    fn configure(&mut self, config: &ConfigMap) -> Result<()> {
        // Kafka's translation of the deprecated names: used only when the new
        // name is absent.
        let mut config = config.clone();
        for (new, old) in [(EXCLUDE, BLACKLIST), (INCLUDE, WHITELIST)] {
            if !config.contains_key(new) {
                if let Some(v) = config.get(old).cloned() {
                    config.insert(new.to_string(), v);
                }
            }
        }
        let parsed = Self::definition().parse(&config)?;
        let list = |k: &str| -> HashSet<String> {
            parsed
                .get_list(k)
                .unwrap_or_default()
                .iter()
                .cloned()
                .collect()
        };
        let renames = parse_renames(parsed.get_list(RENAMES).unwrap_or_default())
            .map_err(|e| ConnectError::config(RENAMES, e))?;
        self.settings = Settings {
            exclude: list(EXCLUDE),
            include: list(INCLUDE),
            rename_targets: renames.values().cloned().collect(),
            renames,
            replace_null_with_default: parsed.get_bool(REPLACE_NULL_WITH_DEFAULT).unwrap_or(true),
        };
        self.cache = SchemaCache::default();
        Ok(())
    }

    fn config_def(&self) -> ConfigDef {
        Self::definition()
    }
}

impl<R: ConnectRecord> Transformation<R> for ReplaceField {
    fn transform(&mut self, record: &mut R) -> Result<Verdict> {
        if self.side.value(&*record).is_null() {
            return Ok(Verdict::Keep);
        }
        let (schema, value) = self.side.take(record);
        let (schema, value) = match schema {
            Some(_) => {
                let (s, v) = self.apply_struct(value)?;
                (Some(s), v)
            }
            None => (None, self.apply_map(value)?),
        };
        self.side.set(record, schema, value);
        Ok(Verdict::Keep)
    }
}

fn parse_renames(items: &[String]) -> std::result::Result<HashMap<String, String>, String> {
    let mut out = HashMap::with_capacity(items.len());
    for mapping in items {
        match mapping.split_once(':') {
            Some((old, new)) if !old.is_empty() && !new.is_empty() && !new.contains(':') => {
                out.insert(old.to_string(), new.to_string());
            }
            _ => return Err(format!("Invalid rename mapping: {mapping}")),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::test_support::*;
    use connect_api::ErrorKind;
    use connect_api::SchemaBuilder;
    use proptest::prelude::*;

    fn smt(side: Side, pairs: &[(&str, &str)]) -> Result<ReplaceField> {
        let mut t = ReplaceField::new(side);
        t.configure(&props(pairs))?;
        Ok(t)
    }

    fn schema() -> Schema {
        SchemaBuilder::struct_()
            .name("com.example.Person")
            .version(2)
            .doc("a person")
            .field("dont", Schema::string())
            .field("abc", Schema::int32())
            .field("foo", Schema::boolean())
            .field("etc", Schema::string())
            .build()
            .unwrap()
    }

    fn value() -> Value {
        let mut s = Struct::new(schema()).unwrap();
        s.put("dont", "whatever")
            .unwrap()
            .put("abc", 42)
            .unwrap()
            .put("foo", true)
            .unwrap()
            .put("etc", "etc")
            .unwrap();
        Value::Struct(s)
    }

    fn field_names(s: &Schema) -> Vec<&str> {
        s.field_list().map(Field::name).collect()
    }

    #[test]
    fn with_schema_excludes_and_renames() {
        let mut t = smt(
            Side::Value,
            &[("exclude", "dont"), ("renames", "abc:xyz,foo:bar")],
        )
        .unwrap();
        let out = t.apply(sink(Some(schema()), value())).unwrap().unwrap();
        let s = out.record.value_schema.as_ref().unwrap();
        assert_eq!(field_names(s), ["xyz", "bar", "etc"]);
        // Schema basics are kept.
        assert_eq!(s.name(), Some("com.example.Person"));
        assert_eq!(s.version(), Some(2));
        assert_eq!(s.doc(), Some("a person"));
        let v = out.record.value.as_struct().unwrap();
        assert_eq!(v.get_int32("xyz").unwrap(), Some(42));
        assert_eq!(v.get_boolean("bar").unwrap(), Some(true));
        assert_eq!(v.get_string("etc").unwrap(), Some("etc"));
        v.validate().unwrap();
    }

    #[test]
    fn include_keeps_only_listed_and_exclude_wins() {
        let mut t = smt(
            Side::Value,
            &[("include", "abc,foo,dont"), ("exclude", "dont")],
        )
        .unwrap();
        let out = t.apply(sink(Some(schema()), value())).unwrap().unwrap();
        assert_eq!(
            field_names(out.record.value_schema.as_ref().unwrap()),
            ["abc", "foo"]
        );
    }

    #[test]
    fn schemaless_excludes_includes_and_renames() {
        let map = Value::string_map([
            ("dont", Value::from("whatever")),
            ("abc", Value::Int32(42)),
            ("foo", Value::Boolean(true)),
            ("etc", Value::from("etc")),
        ]);
        let mut t = smt(
            Side::Value,
            &[
                ("exclude", "dont"),
                ("include", "abc,foo,dont"),
                ("renames", "abc:xyz,foo:bar"),
            ],
        )
        .unwrap();
        let out = t.apply(sink(None, map)).unwrap().unwrap();
        assert_eq!(
            out.record.value,
            Value::string_map([("xyz", Value::Int32(42)), ("bar", Value::Boolean(true))])
        );
        assert!(out.record.value_schema.is_none());
    }

    #[test]
    fn schemaless_rename_wins_over_existing_key() {
        let map = Value::string_map([("b", Value::Int32(1)), ("a", Value::Int32(2))]);
        let mut t = smt(Side::Value, &[("renames", "a:b")]).unwrap();
        let out = t.apply(sink(None, map)).unwrap().unwrap();
        assert_eq!(
            out.record.value,
            Value::string_map([("b", Value::Int32(2))])
        );
    }

    #[test]
    fn legacy_names_translate_and_new_names_win() {
        let mut t = smt(
            Side::Value,
            &[("blacklist", "dont"), ("whitelist", "dont,abc")],
        )
        .unwrap();
        let out = t.apply(sink(Some(schema()), value())).unwrap().unwrap();
        assert_eq!(
            field_names(out.record.value_schema.as_ref().unwrap()),
            ["abc"]
        );

        let mut t = smt(Side::Value, &[("blacklist", "abc"), ("exclude", "dont")]).unwrap();
        let out = t.apply(sink(Some(schema()), value())).unwrap().unwrap();
        assert_eq!(
            field_names(out.record.value_schema.as_ref().unwrap()),
            ["abc", "foo", "etc"]
        );
    }

    #[test]
    fn key_side() {
        let mut t = smt(Side::Key, &[("exclude", "dont")]).unwrap();
        let out = t.apply(sink_key(Some(schema()), value())).unwrap().unwrap();
        assert_eq!(
            field_names(out.record.key_schema.as_ref().unwrap()),
            ["abc", "foo", "etc"]
        );
        assert_eq!(out.record.value, Value::from("v"));
    }

    #[test]
    fn tombstones_pass_through() {
        let mut t = smt(Side::Value, &[("exclude", "dont")]).unwrap();
        let out = t.apply(sink(None, Value::Null)).unwrap().unwrap();
        assert_eq!(out.record.value, Value::Null);
        assert!(out.record.value_schema.is_none());
        let out = t
            .apply(sink(
                Some(SchemaBuilder::struct_().optional().build().unwrap()),
                Value::Null,
            ))
            .unwrap()
            .unwrap();
        assert!(out.record.value.is_null());
    }

    #[test]
    fn null_fields_read_defaults_unless_disabled() {
        let schema = SchemaBuilder::struct_()
            .field(
                "n",
                SchemaBuilder::int32()
                    .optional()
                    .default_value(7)
                    .build()
                    .unwrap(),
            )
            .build()
            .unwrap();
        let value = Value::Struct(Struct::new(schema.clone()).unwrap());
        let mut t = smt(Side::Value, &[]).unwrap();
        let out = t
            .apply(sink(Some(schema.clone()), value.clone()))
            .unwrap()
            .unwrap();
        let got = out.record.value.as_struct().unwrap();
        assert_eq!(got.get_without_default("n").unwrap(), &Value::Int32(7));

        let mut t = smt(Side::Value, &[("replace.null.with.default", "false")]).unwrap();
        let out = t.apply(sink(Some(schema), value)).unwrap().unwrap();
        let got = out.record.value.as_struct().unwrap();
        assert_eq!(got.get_without_default("n").unwrap(), &Value::Null);
    }

    #[test]
    fn unchanged_schema_is_passed_on_as_is() {
        let mut t = smt(Side::Value, &[("exclude", "not_there")]).unwrap();
        let v = value();
        let input = v.as_struct().unwrap().schema().clone();
        let out = t.apply(sink(Some(input.clone()), v)).unwrap().unwrap();
        assert!(out.record.value_schema.as_ref().unwrap().ptr_eq(&input));
        assert_eq!(out.record.value, value());
    }

    #[test]
    fn derived_schema_is_cached_per_input_schema() {
        let mut t = smt(Side::Value, &[("exclude", "dont")]).unwrap();
        let a = t.apply(sink(Some(schema()), value())).unwrap().unwrap();
        let b = t.apply(sink(Some(schema()), value())).unwrap().unwrap();
        assert!(a
            .record
            .value_schema
            .unwrap()
            .ptr_eq(b.record.value_schema.as_ref().unwrap()));
    }

    #[test]
    fn wrong_operand_types_are_data_errors() {
        let mut t = smt(Side::Value, &[]).unwrap();
        let e = t
            .apply(sink(Some(Schema::int32()), Value::Int32(1)))
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "Only Struct objects supported for [field replacement], found: INT32"
        );
        let e = t.apply(sink(None, Value::from("x"))).unwrap_err();
        assert!(e.to_string().contains("Only Map objects"), "{e}");
        let e = t
            .apply(sink(None, Value::Map(vec![(Value::Int32(1), Value::Null)])))
            .unwrap_err();
        assert!(e.to_string().contains("string keys"), "{e}");
    }

    #[test]
    fn rename_clash_is_an_error_with_schema() {
        let mut t = smt(Side::Value, &[("renames", "abc:foo")]).unwrap();
        let e = t.apply(sink(Some(schema()), value())).unwrap_err();
        assert!(e.to_string().contains("duplication"), "{e}");
    }

    #[test]
    fn config_errors_name_the_key() {
        for bad in ["abc", "abc:", ":x", "a:b:c"] {
            let e = smt(Side::Value, &[("renames", bad)]).unwrap_err();
            assert!(
                matches!(e.kind(), ErrorKind::Config { key } if key == "renames"),
                "{bad}: {e}"
            );
            assert!(e.to_string().contains("Invalid rename mapping"), "{e}");
        }
        let e = smt(Side::Value, &[("replace.null.with.default", "maybe")]).unwrap_err();
        assert!(
            matches!(e.kind(), ErrorKind::Config { key } if key == "replace.null.with.default")
        );
    }

    #[test]
    fn every_key_is_documented() {
        let def = Configurable::config_def(&ReplaceField::new(Side::Value));
        for key in [
            "exclude",
            "include",
            "renames",
            "blacklist",
            "whitelist",
            "replace.null.with.default",
        ] {
            assert!(!def.key(key).unwrap().documentation.is_empty(), "{key}");
        }
    }

    proptest! {
        #[test]
        fn empty_config_is_identity((schema, value) in flat_struct()) {
            let mut t = smt(Side::Value, &[]).unwrap();
            let out = t.apply(sink(Some(schema.clone()), value.clone())).unwrap().unwrap();
            prop_assert_eq!(out.record.value_schema, Some(schema));
            prop_assert_eq!(out.record.value, value);
        }

        #[test]
        fn excluded_fields_never_survive((schema, value) in flat_struct(), pick in 0usize..8) {
            let Some(victim) = schema.field_at(pick % schema.field_count().max(1)) else {
                return Ok(());
            };
            let name = victim.name().to_string();
            let mut t = smt(Side::Value, &[("exclude", &name)]).unwrap();
            let out = t.apply(sink(Some(schema.clone()), value)).unwrap().unwrap();
            let s = out.record.value_schema.unwrap();
            prop_assert!(s.field(&name).is_none());
            prop_assert_eq!(s.field_count(), schema.field_count() - 1);
        }
    }
}
