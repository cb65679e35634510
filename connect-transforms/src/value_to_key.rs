//! ValueToKey: replace the record key with a struct (or map) made of some
//! fields of the value.
//!
//! Kafka class `org.apache.kafka.connect.transforms.ValueToKey` (no
//! `$Key`/`$Value` variants: it always reads the value and writes the key).
//!
//! | key | default | meaning |
//! |---|---|---|
//! | `fields` | required | value fields to copy into the key, in this order |
//! | `replace.null.with.default` | `true` | null value fields are copied as their defaults |
//!
//! With a value schema the key schema is a struct of the listed fields' schemas
//! (derived once per value schema); a listed field missing from the value
//! schema is a data error. Without a schema the key is a map, and a missing
//! field is copied as null. The value is left as it is; a null value is a
//! data error, as in Kafka.

use connect_api::config::validators::Lambda;
use connect_api::config::{ConfigKey, ConfigType, ConfigValue, Importance};
use connect_api::transform::{Configurable, Transformation, Verdict};
use connect_api::{
    ConfigDef, ConfigMap, ConnectError, ConnectRecord, Result, Schema, SchemaBuilder, Struct, Value,
};

use crate::util::{replace_null_with_default_key, REPLACE_NULL_WITH_DEFAULT};
use crate::util::{require_map, require_struct, SchemaCache};

/// Kafka's class name.
pub const CLASS: &str = "org.apache.kafka.connect.transforms.ValueToKey";

const PURPOSE: &str = "copying fields from value to key";
const FIELDS: &str = "fields";

/// Builds the key from value fields; see the [module docs](self).
///
/// ```
/// use connect_api::transform::{Configurable, Transformation};
/// use connect_api::{Record, SinkRecord, Value};
/// use connect_transforms::value_to_key::ValueToKey;
///
/// let mut smt = ValueToKey::new();
/// let cfg = connect_api::ConfigMap::from([("fields", "id")]);
/// smt.configure(&cfg).unwrap();
///
/// let value = Value::string_map([("id", Value::Int64(7)), ("name", Value::from("x"))]);
/// let out = smt.apply(SinkRecord::new(Record::new("t", None, value), 0, 0)).unwrap().unwrap();
/// assert_eq!(out.record.key, Value::string_map([("id", Value::Int64(7))]));
/// ```
#[derive(Debug)]
pub struct ValueToKey {
    fields: Vec<String>,
    replace_null_with_default: bool,
    cache: SchemaCache,
}

impl Default for ValueToKey {
    fn default() -> Self {
        Self::new()
    }
}

fn derive_key_schema(fields: &[String], value_schema: &Schema) -> Result<Schema> {
    let mut builder = SchemaBuilder::struct_();
    for name in fields {
        let field = value_schema
            .field(name)
            .ok_or_else(|| ConnectError::data(format!("Field does not exist: {name}")))?;
        builder = builder.field(name.as_str(), field.schema().clone());
    }
    builder.build()
}

impl ValueToKey {
    /// An unconfigured ValueToKey.
    pub fn new() -> Self {
        ValueToKey {
            fields: Vec::new(),
            replace_null_with_default: true,
            cache: SchemaCache::default(),
        }
    }

    fn definition() -> ConfigDef {
        ConfigDef::new()
            .define(
                ConfigKey::new(FIELDS, ConfigType::List)
                    .importance(Importance::High)
                    .doc("Field names on the record value to extract as the record key.")
                    .validator(Lambda::new(
                        "non-empty list",
                        |_: &str, v: &ConfigValue| match v {
                            ConfigValue::List(l) if l.is_empty() => Err("Empty list".to_string()),
                            _ => Ok(()),
                        },
                    )),
            )
            .define(replace_null_with_default_key())
    }

    fn key_from_struct(&mut self, value: &Struct) -> Result<(Schema, Value)> {
        let fields = &self.fields;
        let key_schema = self
            .cache
            .get_or_try_insert(value.schema(), |s| derive_key_schema(fields, s))?
            .clone();
        let mut key = Struct::new(key_schema.clone())?;
        for (i, name) in self.fields.iter().enumerate() {
            let v = if self.replace_null_with_default {
                value.get(name)?
            } else {
                value.get_without_default(name)?
            };
            key.put_at_unchecked(i, v.clone());
        }
        Ok((key_schema, Value::Struct(key)))
    }

    fn key_from_map(&self, entries: &[(Value, Value)]) -> Value {
        Value::Map(
            self.fields
                .iter()
                .map(|name| {
                    let v = entries
                        .iter()
                        .find(|(k, _)| k.as_str() == Some(name.as_str()))
                        .map(|(_, v)| v.clone())
                        .unwrap_or_default();
                    (Value::String(name.clone()), v)
                })
                .collect(),
        )
    }
}

impl Configurable for ValueToKey {
    fn configure(&mut self, config: &ConfigMap) -> Result<()> {
        let parsed = Self::definition().parse(config)?;
        self.fields = parsed.get_list(FIELDS).unwrap_or_default().to_vec();
        self.replace_null_with_default = parsed.get_bool(REPLACE_NULL_WITH_DEFAULT).unwrap_or(true);
        self.cache = SchemaCache::default();
        Ok(())
    }

    fn config_def(&self) -> ConfigDef {
        Self::definition()
    }
}

impl<R: ConnectRecord> Transformation<R> for ValueToKey {
    fn transform(&mut self, record: &mut R) -> Result<Verdict> {
        let r = record.record();
        let (key_schema, key) = match &r.value_schema {
            Some(_) => {
                let value = require_struct(&r.value, PURPOSE)?;
                let (s, k) = self.key_from_struct(value)?;
                (Some(s), k)
            }
            None => (None, self.key_from_map(require_map(&r.value, PURPOSE)?)),
        };
        let r = record.record_mut();
        r.key_schema = key_schema;
        r.key = key;
        Ok(Verdict::Keep)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::test_support::*;
    use connect_api::ErrorKind;

    fn smt(pairs: &[(&str, &str)]) -> Result<ValueToKey> {
        let mut t = ValueToKey::new();
        t.configure(&props(pairs))?;
        Ok(t)
    }

    fn schema() -> Schema {
        SchemaBuilder::struct_()
            .field("a", Schema::int32())
            .field("b", Schema::int32())
            .field("c", Schema::int32())
            .field(
                "d",
                SchemaBuilder::int32()
                    .optional()
                    .default_value(9)
                    .build()
                    .unwrap(),
            )
            .build()
            .unwrap()
    }

    fn value() -> Value {
        let mut s = Struct::new(schema()).unwrap();
        s.put("a", 1)
            .unwrap()
            .put("b", 2)
            .unwrap()
            .put("c", 3)
            .unwrap();
        Value::Struct(s)
    }

    #[test]
    fn schemaless_key_is_a_map_with_nulls_for_missing() {
        let mut t = smt(&[("fields", "a,b,zz")]).unwrap();
        let value = Value::string_map([
            ("a", Value::Int32(1)),
            ("b", Value::Int32(2)),
            ("c", Value::Int32(3)),
        ]);
        let out = t.apply(sink(None, value.clone())).unwrap().unwrap();
        assert!(out.record.key_schema.is_none());
        assert_eq!(
            out.record.key,
            Value::string_map([
                ("a", Value::Int32(1)),
                ("b", Value::Int32(2)),
                ("zz", Value::Null)
            ])
        );
        assert_eq!(out.record.value, value);
    }

    #[test]
    fn with_schema_key_is_a_struct_in_field_order() {
        let mut t = smt(&[("fields", "b,a")]).unwrap();
        let out = t.apply(sink(Some(schema()), value())).unwrap().unwrap();
        let ks = out.record.key_schema.as_ref().unwrap();
        assert_eq!(
            ks,
            &SchemaBuilder::struct_()
                .field("b", Schema::int32())
                .field("a", Schema::int32())
                .build()
                .unwrap()
        );
        let k = out.record.key.as_struct().unwrap();
        k.validate().unwrap();
        assert_eq!(k.get_int32("a").unwrap(), Some(1));
        assert_eq!(k.get_int32("b").unwrap(), Some(2));
        assert_eq!(out.record.value, value());
        assert_eq!(out.record.value_schema, Some(schema()));
    }

    #[test]
    fn missing_field_with_schema_is_an_error() {
        let mut t = smt(&[("fields", "not_exist")]).unwrap();
        let e = t.apply(sink(Some(schema()), value())).unwrap_err();
        assert_eq!(e.to_string(), "Field does not exist: not_exist");
    }

    #[test]
    fn defaults_are_copied_unless_disabled() {
        for (rnwd, want) in [("true", Value::Int32(9)), ("false", Value::Null)] {
            let mut t = smt(&[("fields", "d"), ("replace.null.with.default", rnwd)]).unwrap();
            let out = t.apply(sink(Some(schema()), value())).unwrap().unwrap();
            let k = out.record.key.as_struct().unwrap();
            assert_eq!(k.get_without_default("d").unwrap(), &want, "{rnwd}");
        }
    }

    #[test]
    fn null_values_are_errors() {
        let mut t = smt(&[("fields", "a")]).unwrap();
        let e = t.apply(sink(None, Value::Null)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "Only Map objects supported in absence of schema for [copying fields from value to key], found: null"
        );
        let e = t.apply(sink(Some(schema()), Value::Null)).unwrap_err();
        assert!(e.to_string().starts_with("Only Struct objects"), "{e}");
    }

    #[test]
    fn key_schema_is_derived_once() {
        let mut t = smt(&[("fields", "a")]).unwrap();
        let x = t.apply(sink(Some(schema()), value())).unwrap().unwrap();
        let y = t.apply(sink(Some(schema()), value())).unwrap().unwrap();
        assert!(x
            .record
            .key_schema
            .unwrap()
            .ptr_eq(y.record.key_schema.as_ref().unwrap()));
    }

    #[test]
    fn config_errors() {
        let e = smt(&[]).unwrap_err();
        assert!(matches!(e.kind(), ErrorKind::Config { key } if key == "fields"));
        let e = smt(&[("fields", "")]).unwrap_err();
        assert!(e.to_string().contains("Empty list"), "{e}");
        let e = smt(&[("fields", "a"), ("replace.null.with.default", "no")]).unwrap_err();
        assert!(
            matches!(e.kind(), ErrorKind::Config { key } if key == "replace.null.with.default")
        );
    }

    #[test]
    fn duplicate_fields_are_an_error_with_schema() {
        let mut t = smt(&[("fields", "a,a")]).unwrap();
        assert!(t.apply(sink(Some(schema()), value())).is_err());
    }

    #[test]
    fn every_key_is_documented() {
        let def = Configurable::config_def(&ValueToKey::default());
        assert_eq!(def.keys().len(), 2);
        assert!(def.keys().iter().all(|k| !k.documentation.is_empty()));
    }
}
