//! HoistField: wrap the key or value in a struct (or map) with one field.
//!
//! Kafka classes `org.apache.kafka.connect.transforms.HoistField$Key` and
//! `org.apache.kafka.connect.transforms.HoistField$Value`.
//!
//! | key | default | meaning |
//! |---|---|---|
//! | `field` | required | name of the single field of the new struct or map |
//!
//! With a schema the new schema is `Struct{field: <old schema>}`, derived
//! once per input schema; without a schema the result is the map
//! `{field: value}`. Null values are wrapped too: with a schema this needs
//! the old schema to be optional (else a data error, as Kafka's `Struct.put`).

use connect_api::config::{ConfigKey, ConfigType, Importance};
use connect_api::transform::{Configurable, Transformation, Verdict};
use connect_api::{ConfigDef, ConfigMap, ConnectRecord, Result, SchemaBuilder, Struct, Value};

use crate::util::{SchemaCache, Side};

/// Kafka's class name, without the `$Key` / `$Value` suffix.
pub const CLASS: &str = "org.apache.kafka.connect.transforms.HoistField";

const FIELD: &str = "field";

/// Wraps the operand in a one-field struct or map; see the [module docs](self).
///
/// ```
/// use connect_api::transform::{Configurable, Transformation};
/// use connect_api::{Record, Schema, SinkRecord, Value};
/// use connect_transforms::hoist_field::HoistField;
/// use connect_transforms::util::Side;
///
/// let mut smt = HoistField::new(Side::Value);
/// let cfg = connect_api::ConfigMap::from([("field", "line")]);
/// smt.configure(&cfg).unwrap();
///
/// let rec = SinkRecord::new(Record::new("t", Some(Schema::string()), "hello".into()), 0, 0);
/// let out = smt.apply(rec).unwrap().unwrap();
/// let wrapped = out.record.value.as_struct().unwrap();
/// assert_eq!(wrapped.get_string("line").unwrap(), Some("hello"));
/// ```
#[derive(Debug)]
pub struct HoistField {
    side: Side,
    field: String,
    cache: SchemaCache,
}

impl HoistField {
    /// An unconfigured HoistField acting on `side`.
    pub fn new(side: Side) -> Self {
        HoistField {
            side,
            field: String::new(),
            cache: SchemaCache::default(),
        }
    }

    fn definition() -> ConfigDef {
        ConfigDef::new().define(
            ConfigKey::new(FIELD, ConfigType::String)
                .importance(Importance::Medium)
                .doc(
                    "Field name for the single field that will be created in the resulting \
                     Struct or Map.",
                ),
        )
    }
}

impl Configurable for HoistField {
    fn configure(&mut self, config: &ConfigMap) -> Result<()> {
        let parsed = Self::definition().parse(config)?;
        self.field = parsed.get_string(FIELD).unwrap_or_default().to_string();
        self.cache = SchemaCache::default();
        Ok(())
    }

    fn config_def(&self) -> ConfigDef {
        Self::definition()
    }
}

impl<R: ConnectRecord> Transformation<R> for HoistField {
    fn transform(&mut self, record: &mut R) -> Result<Verdict> {
        let (schema, value) = self.side.take(record);
        let (schema, value) = match schema {
            None => (
                None,
                Value::Map(vec![(Value::String(self.field.clone()), value)]),
            ),
            Some(s) => {
                let field = &self.field;
                let wrapped = self
                    .cache
                    .get_or_try_insert(&s, |s| {
                        SchemaBuilder::struct_()
                            .field(field.as_str(), s.clone())
                            .build()
                    })?
                    .clone();
                let mut out = Struct::new(wrapped.clone())?;
                out.put_at(0, value)?;
                (Some(wrapped), Value::Struct(out))
            }
        };
        self.side.set(record, schema, value);
        Ok(Verdict::Keep)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::test_support::*;
    use connect_api::{ErrorKind, Schema};

    fn smt(side: Side, field: Option<&str>) -> Result<HoistField> {
        let mut t = HoistField::new(side);
        let pairs: Vec<(&str, &str)> = field.map(|f| ("field", f)).into_iter().collect();
        t.configure(&props(&pairs))?;
        Ok(t)
    }

    #[test]
    fn schemaless_wraps_in_a_map() {
        let mut t = smt(Side::Key, Some("magic")).unwrap();
        let out = t.apply(sink_key(None, Value::Int32(42))).unwrap().unwrap();
        assert_eq!(
            out.record.key,
            Value::string_map([("magic", Value::Int32(42))])
        );
        assert!(out.record.key_schema.is_none());
        assert_eq!(out.record.value, Value::from("v"));
    }

    #[test]
    fn with_schema_wraps_in_a_struct() {
        let mut t = smt(Side::Key, Some("magic")).unwrap();
        let out = t
            .apply(sink_key(Some(Schema::int32()), Value::Int32(42)))
            .unwrap()
            .unwrap();
        let ks = out.record.key_schema.as_ref().unwrap();
        assert_eq!(
            ks,
            &SchemaBuilder::struct_()
                .field("magic", Schema::int32())
                .build()
                .unwrap()
        );
        let k = out.record.key.as_struct().unwrap();
        assert_eq!(k.get_int32("magic").unwrap(), Some(42));
        k.validate().unwrap();
    }

    #[test]
    fn nulls_are_wrapped() {
        let mut t = smt(Side::Value, Some("f")).unwrap();
        let out = t.apply(sink(None, Value::Null)).unwrap().unwrap();
        assert_eq!(out.record.value, Value::string_map([("f", Value::Null)]));

        let out = t
            .apply(sink(Some(Schema::optional_string()), Value::Null))
            .unwrap()
            .unwrap();
        let v = out.record.value.as_struct().unwrap();
        assert_eq!(v.get("f").unwrap(), &Value::Null);

        let e = t
            .apply(sink(Some(Schema::string()), Value::Null))
            .unwrap_err();
        assert!(e.to_string().starts_with("f: "), "{e}");
    }

    #[test]
    fn schema_is_derived_once() {
        let mut t = smt(Side::Value, Some("f")).unwrap();
        let a = t
            .apply(sink(Some(Schema::string()), Value::from("a")))
            .unwrap()
            .unwrap();
        let b = t
            .apply(sink(Some(Schema::string()), Value::from("b")))
            .unwrap()
            .unwrap();
        assert!(a
            .record
            .value_schema
            .unwrap()
            .ptr_eq(b.record.value_schema.as_ref().unwrap()));
    }

    #[test]
    fn config_errors() {
        let e = smt(Side::Value, None).unwrap_err();
        assert!(
            matches!(e.kind(), ErrorKind::Config { key } if key == "field"),
            "{e}"
        );
        // Kafka accepts an empty name and fails when building the schema.
        let mut t = smt(Side::Value, Some("")).unwrap();
        assert!(t
            .apply(sink(Some(Schema::string()), Value::from("a")))
            .is_err());
    }

    #[test]
    fn every_key_is_documented() {
        let def = Configurable::config_def(&HoistField::new(Side::Value));
        assert_eq!(def.keys().len(), 1);
        assert!(!def.keys()[0].documentation.is_empty());
    }
}
