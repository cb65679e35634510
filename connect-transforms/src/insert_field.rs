//! InsertField: add fields holding record metadata (topic, partition,
//! offset, timestamp) or a fixed string to a struct or schemaless map.
//!
//! Kafka classes `org.apache.kafka.connect.transforms.InsertField$Key` and
//! `org.apache.kafka.connect.transforms.InsertField$Value`.
//!
//! | key | default | field added |
//! |---|---|---|
//! | `topic.field` | unset | the topic (STRING) |
//! | `partition.field` | unset | the Kafka partition (INT32) |
//! | `offset.field` | unset | the Kafka offset (INT64); sink records only |
//! | `timestamp.field` | unset | the record timestamp (Timestamp logical type; a Long without schema) |
//! | `static.field` | unset | `static.value` (STRING) |
//! | `static.value` | unset | the value of `static.field`; required when it is set |
//! | `replace.null.with.default` | `true` | null fields of the input struct are read as their defaults |
//!
//! At least one field must be configured. A field name may end in `!` to make
//! the added field required or `?` to make it optional (the default). With a
//! schema the input struct's fields are copied first and the derived schema
//! (input basics plus the new fields) is computed once per input schema. A
//! null value (tombstone, or a null struct) passes through unchanged.

use connect_api::config::{ConfigKey, ConfigType, Importance};
use connect_api::logical::{timestamp_builder, timestamp_schema};
use connect_api::transform::{Configurable, Transformation, Verdict};
use connect_api::{
    ConfigDef, ConfigMap, ConnectError, ConnectRecord, Result, Schema, Struct, Value,
};

use crate::util::{
    fill_defaults, into_map, into_struct, map_put, replace_null_with_default_key,
    struct_builder_like, REPLACE_NULL_WITH_DEFAULT,
};
use crate::util::{SchemaCache, Side};

/// Kafka's class name, without the `$Key` / `$Value` suffix.
pub const CLASS: &str = "org.apache.kafka.connect.transforms.InsertField";

const PURPOSE: &str = "field insertion";

const TOPIC_FIELD: &str = "topic.field";
const PARTITION_FIELD: &str = "partition.field";
const OFFSET_FIELD: &str = "offset.field";
const TIMESTAMP_FIELD: &str = "timestamp.field";
const STATIC_FIELD: &str = "static.field";
const STATIC_VALUE: &str = "static.value";

/// Adds metadata or static fields; see the [module docs](self).
///
/// ```
/// use connect_api::transform::{Configurable, Transformation};
/// use connect_api::{Record, SinkRecord, Value};
/// use connect_transforms::insert_field::InsertField;
/// use connect_transforms::util::Side;
///
/// let mut smt = InsertField::new(Side::Value);
/// let cfg = connect_api::ConfigMap::from([("topic.field", "source_topic!"), ("static.field", "dc"), ("static.value", "eu-1")]);
/// smt.configure(&cfg).unwrap();
///
/// let value = Value::string_map([("id", Value::Int64(1))]);
/// let out = smt.apply(SinkRecord::new(Record::new("orders", None, value), 0, 9)).unwrap().unwrap();
/// assert_eq!(out.record.value.map_get("source_topic"), Some(&Value::from("orders")));
/// assert_eq!(out.record.value.map_get("dc"), Some(&Value::from("eu-1")));
/// ```
#[derive(Debug)]
pub struct InsertField {
    side: Side,
    settings: Settings,
    cache: SchemaCache,
}

#[derive(Debug, Clone, PartialEq)]
struct Insertion {
    name: String,
    optional: bool,
}

impl Insertion {
    /// Kafka's `InsertionSpec.parse`: a trailing `?` or `!` sets optionality.
    fn parse(key: &str, spec: &str) -> Result<Insertion> {
        let (name, optional) = if let Some(n) = spec.strip_suffix('?') {
            (n, true)
        } else if let Some(n) = spec.strip_suffix('!') {
            (n, false)
        } else {
            (spec, true)
        };
        if name.is_empty() {
            return Err(ConnectError::config(
                key,
                format!("'{spec}' names no field; give a field name, optionally ending in ! or ?"),
            ));
        }
        Ok(Insertion {
            name: name.to_string(),
            optional,
        })
    }

    fn schema(&self, optional: Schema, required: Schema) -> Schema {
        if self.optional {
            optional
        } else {
            required
        }
    }
}

#[derive(Debug, Default)]
struct Settings {
    topic: Option<Insertion>,
    partition: Option<Insertion>,
    offset: Option<Insertion>,
    timestamp: Option<Insertion>,
    static_field: Option<Insertion>,
    static_value: String,
    replace_null_with_default: bool,
}

impl Settings {
    fn derive(&self, schema: &Schema) -> Result<Schema> {
        let mut builder = struct_builder_like(schema);
        for field in schema.fields()? {
            builder = builder.field(field.name(), field.schema().clone());
        }
        let optional_timestamp = timestamp_builder().optional().build()?;
        let added = [
            (&self.topic, Schema::optional_string(), Schema::string()),
            (&self.partition, Schema::optional_int32(), Schema::int32()),
            (&self.offset, Schema::optional_int64(), Schema::int64()),
            (&self.timestamp, optional_timestamp, timestamp_schema()),
            (
                &self.static_field,
                Schema::optional_string(),
                Schema::string(),
            ),
        ];
        for (spec, optional, required) in added {
            if let Some(spec) = spec {
                builder = builder.field(spec.name.as_str(), spec.schema(optional, required));
            }
        }
        builder.build()
    }

    /// Hand each configured field and its value to `insert`, in field
    /// order; `timestamp_logical` picks the Timestamp logical value (with
    /// schema) or a plain Long (schemaless). Values are built only for the
    /// configured fields.
    fn each_value<R: ConnectRecord>(
        &self,
        record: &R,
        timestamp_logical: bool,
        mut insert: impl FnMut(&Insertion, Value) -> Result<()>,
    ) -> Result<()> {
        let r = record.record();
        if let Some(spec) = &self.topic {
            insert(spec, Value::String(r.topic.to_string()))?;
        }
        if let Some(spec) = &self.partition {
            insert(spec, Value::from(r.kafka_partition))?;
        }
        if let Some(spec) = &self.offset {
            let offset = record.kafka_offset().ok_or_else(|| {
                ConnectError::data(format!(
                    "Only SinkRecord supported for [{PURPOSE}], found: {}",
                    short_type_name::<R>()
                ))
            })?;
            insert(spec, Value::Int64(offset))?;
        }
        if let Some(spec) = &self.timestamp {
            let v = match r.timestamp {
                Some(t) if timestamp_logical => Value::Timestamp(t),
                Some(t) => Value::Int64(t),
                None => Value::Null,
            };
            insert(spec, v)?;
        }
        if let Some(spec) = &self.static_field {
            insert(spec, Value::String(self.static_value.clone()))?;
        }
        Ok(())
    }
}

fn short_type_name<R>() -> &'static str {
    let full = std::any::type_name::<R>();
    full.rsplit("::").next().unwrap_or(full)
}

impl InsertField {
    /// An unconfigured InsertField acting on `side`.
    pub fn new(side: Side) -> Self {
        InsertField {
            side,
            settings: Settings {
                replace_null_with_default: true,
                ..Settings::default()
            },
            cache: SchemaCache::default(),
        }
    }

    fn definition() -> ConfigDef {
        let key = |name: &str, doc: &str| {
            ConfigKey::new(name, ConfigType::String)
                .optional()
                .importance(Importance::Medium)
                .doc(doc)
        };
        const SUFFIX: &str = " Suffix with `!` to make this a required field, or `?` to keep it optional (the default).";
        ConfigDef::new()
            .define(key(
                TOPIC_FIELD,
                &format!("Field name for the Kafka topic.{SUFFIX}"),
            ))
            .define(key(
                PARTITION_FIELD,
                &format!("Field name for the Kafka partition.{SUFFIX}"),
            ))
            .define(key(
                OFFSET_FIELD,
                &format!(
                    "Field name for the Kafka offset - only applicable to sink connectors.{SUFFIX}"
                ),
            ))
            .define(key(
                TIMESTAMP_FIELD,
                &format!("Field name for the record timestamp.{SUFFIX}"),
            ))
            .define(key(
                STATIC_FIELD,
                &format!("Field name for the static data field.{SUFFIX}"),
            ))
            .define(key(
                STATIC_VALUE,
                "Static field value, if a field name is configured.",
            ))
            .define(replace_null_with_default_key())
    }

    fn apply_struct<R: ConnectRecord>(
        &mut self,
        record: &R,
        value: Value,
    ) -> Result<(Schema, Value)> {
        let settings = &self.settings;
        // The input's values vector becomes the output's: the inserted
        // fields come after the input's, so no new vector, no null fill.
        let mut s = into_struct(value, PURPOSE)?;
        if settings.replace_null_with_default {
            fill_defaults(&mut s);
        }
        let (input, mut values) = s.into_parts();
        let output = self
            .cache
            .get_or_try_insert(&input, |s| settings.derive(s))?
            .clone();
        values.reserve_exact(output.field_count().saturating_sub(values.len()));
        settings.each_value(record, true, |spec, v| {
            if v.is_null() && !spec.optional {
                return Err(ConnectError::data_at(
                    spec.name.as_str(),
                    "the field is configured as required (`!`) but the record has no value for it",
                ));
            }
            values.push(v);
            Ok(())
        })?;
        Ok((
            output.clone(),
            Value::Struct(Struct::from_parts(output, values)?),
        ))
    }

    fn apply_map<R: ConnectRecord>(&self, record: &R, value: Value) -> Result<Value> {
        let mut entries = into_map(value, PURPOSE)?;
        self.settings.each_value(record, false, |spec, v| {
            // Kafka skips a missing partition or timestamp in schemaless maps.
            if !v.is_null() {
                map_put(&mut entries, &spec.name, v);
            }
            Ok(())
        })?;
        Ok(Value::Map(entries))
    }
}

impl Configurable for InsertField {
    fn configure(&mut self, config: &ConfigMap) -> Result<()> {
        let parsed = Self::definition().parse(config)?;
        let spec = |key: &str| {
            parsed
                .get_string(key)
                .map(|s| Insertion::parse(key, s))
                .transpose()
        };
        let settings = Settings {
            topic: spec(TOPIC_FIELD)?,
            partition: spec(PARTITION_FIELD)?,
            offset: spec(OFFSET_FIELD)?,
            timestamp: spec(TIMESTAMP_FIELD)?,
            static_field: spec(STATIC_FIELD)?,
            static_value: parsed
                .get_string(STATIC_VALUE)
                .unwrap_or_default()
                .to_string(),
            replace_null_with_default: parsed.get_bool(REPLACE_NULL_WITH_DEFAULT).unwrap_or(true),
        };
        if settings.topic.is_none()
            && settings.partition.is_none()
            && settings.offset.is_none()
            && settings.timestamp.is_none()
            && settings.static_field.is_none()
        {
            return Err(ConnectError::config(
                "topic.field/partition.field/offset.field/timestamp.field/static.field",
                "No field insertion configured",
            ));
        }
        if let Some(f) = &settings.static_field {
            if parsed.get_string(STATIC_VALUE).is_none() {
                return Err(ConnectError::config(
                    STATIC_VALUE,
                    format!("No value specified for static field: {}", f.name),
                ));
            }
        }
        self.settings = settings;
        self.cache = SchemaCache::default();
        Ok(())
    }

    fn config_def(&self) -> ConfigDef {
        Self::definition()
    }
}

impl<R: ConnectRecord> Transformation<R> for InsertField {
    fn transform(&mut self, record: &mut R) -> Result<Verdict> {
        if self.side.value(&*record).is_null() {
            return Ok(Verdict::Keep);
        }
        let (schema, value) = self.side.take(record);
        let (schema, value) = match schema {
            Some(_) => {
                let (s, v) = self.apply_struct(&*record, value)?;
                (Some(s), v)
            }
            None => (None, self.apply_map(&*record, value)?),
        };
        self.side.set(record, schema, value);
        Ok(Verdict::Keep)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::test_support::*;
    use connect_api::logical::TIMESTAMP_NAME;
    use connect_api::{ErrorKind, SchemaBuilder};

    fn smt(side: Side, pairs: &[(&str, &str)]) -> Result<InsertField> {
        let mut t = InsertField::new(side);
        t.configure(&props(pairs))?;
        Ok(t)
    }

    const ALL: &[(&str, &str)] = &[
        ("topic.field", "topic_field!"),
        ("partition.field", "partition_field"),
        ("offset.field", "offset_field!"),
        ("timestamp.field", "timestamp_field?"),
        ("static.field", "instance_id"),
        ("static.value", "my-instance-id"),
    ];

    fn input_schema() -> Schema {
        SchemaBuilder::struct_()
            .name("name")
            .version(1)
            .doc("doc")
            .field("magic", Schema::optional_int64())
            .build()
            .unwrap()
    }

    fn input_value() -> Value {
        let mut s = Struct::new(input_schema()).unwrap();
        s.put("magic", 42i64).unwrap();
        Value::Struct(s)
    }

    #[test]
    fn with_schema_adds_every_field_with_kafka_types() {
        let mut t = smt(Side::Value, ALL).unwrap();
        let out = t
            .apply(sink(Some(input_schema()), input_value()))
            .unwrap()
            .unwrap();
        let s = out.record.value_schema.as_ref().unwrap();
        assert_eq!(s.name(), Some("name"));
        assert_eq!(s.version(), Some(1));
        assert_eq!(s.doc(), Some("doc"));
        assert_eq!(
            s.field("magic").unwrap().schema(),
            &Schema::optional_int64()
        );
        assert_eq!(s.field("topic_field").unwrap().schema(), &Schema::string());
        assert_eq!(
            s.field("partition_field").unwrap().schema(),
            &Schema::optional_int32()
        );
        assert_eq!(s.field("offset_field").unwrap().schema(), &Schema::int64());
        let ts = s.field("timestamp_field").unwrap().schema();
        assert_eq!(ts.name(), Some(TIMESTAMP_NAME));
        assert!(ts.is_optional());
        assert_eq!(
            s.field("instance_id").unwrap().schema(),
            &Schema::optional_string()
        );

        let v = out.record.value.as_struct().unwrap();
        v.validate().unwrap();
        assert_eq!(v.get_int64("magic").unwrap(), Some(42));
        assert_eq!(v.get_string("topic_field").unwrap(), Some("test"));
        assert_eq!(v.get_int32("partition_field").unwrap(), Some(3));
        assert_eq!(v.get_int64("offset_field").unwrap(), Some(42));
        assert_eq!(v.get("timestamp_field").unwrap(), &Value::Timestamp(1000));
        assert_eq!(v.get_string("instance_id").unwrap(), Some("my-instance-id"));
    }

    #[test]
    fn schemaless_adds_every_field_timestamp_as_long() {
        let mut t = smt(Side::Value, ALL).unwrap();
        let value = Value::string_map([("magic", Value::Int64(42))]);
        let out = t.apply(sink(None, value)).unwrap().unwrap();
        let v = &out.record.value;
        assert_eq!(v.map_get("magic"), Some(&Value::Int64(42)));
        assert_eq!(v.map_get("topic_field"), Some(&Value::from("test")));
        assert_eq!(v.map_get("partition_field"), Some(&Value::Int32(3)));
        assert_eq!(v.map_get("offset_field"), Some(&Value::Int64(42)));
        assert_eq!(v.map_get("timestamp_field"), Some(&Value::Int64(1000)));
        assert_eq!(
            v.map_get("instance_id"),
            Some(&Value::from("my-instance-id"))
        );
        assert!(out.record.value_schema.is_none());
    }

    #[test]
    fn schemaless_replaces_existing_key_and_skips_missing_metadata() {
        let mut t = smt(
            Side::Value,
            &[("topic.field", "t"), ("timestamp.field", "ts")],
        )
        .unwrap();
        let mut rec = sink(None, Value::string_map([("t", Value::from("old"))]));
        rec.record.timestamp = None;
        let out = t.apply(rec).unwrap().unwrap();
        assert_eq!(
            out.record.value,
            Value::string_map([("t", Value::from("test"))])
        );
    }

    #[test]
    fn key_side() {
        let mut t = smt(Side::Key, &[("topic.field", "topic_field")]).unwrap();
        let out = t
            .apply(sink_key(None, Value::string_map([("id", Value::Int32(1))])))
            .unwrap()
            .unwrap();
        assert_eq!(
            out.record.key.map_get("topic_field"),
            Some(&Value::from("test"))
        );
        assert_eq!(out.record.value, Value::from("v"));
    }

    #[test]
    fn tombstones_and_null_structs_pass_through() {
        let mut t = smt(Side::Value, ALL).unwrap();
        let out = t.apply(sink(None, Value::Null)).unwrap().unwrap();
        assert!(out.record.value.is_null() && out.record.value_schema.is_none());
        let optional = SchemaBuilder::struct_().optional().build().unwrap();
        let out = t
            .apply(sink(Some(optional.clone()), Value::Null))
            .unwrap()
            .unwrap();
        assert!(out.record.value.is_null());
        assert_eq!(out.record.value_schema, Some(optional));
    }

    #[test]
    fn offset_field_needs_a_sink_record() {
        let mut t = InsertField::new(Side::Value);
        t.configure(&props(&[("offset.field", "o")])).unwrap();
        let e = t
            .apply(source(None, Value::string_map([("a", Value::Int32(1))])))
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "Only SinkRecord supported for [field insertion], found: SourceRecord"
        );
    }

    #[test]
    fn source_records_get_topic_and_missing_optional_metadata_as_null() {
        let mut t = InsertField::new(Side::Value);
        t.configure(&props(&[
            ("topic.field", "t"),
            ("partition.field", "p"),
            ("timestamp.field", "ts"),
        ]))
        .unwrap();
        let out = t
            .apply(source(Some(input_schema()), input_value()))
            .unwrap()
            .unwrap();
        let v = out.record.value.as_struct().unwrap();
        v.validate().unwrap();
        assert_eq!(v.get_string("t").unwrap(), Some("test"));
        assert_eq!(v.get("p").unwrap(), &Value::Null);
        assert_eq!(v.get("ts").unwrap(), &Value::Null);
    }

    #[test]
    fn required_field_without_a_value_is_an_error() {
        let mut t = InsertField::new(Side::Value);
        t.configure(&props(&[("partition.field", "p!")])).unwrap();
        let e = t
            .apply(source(Some(input_schema()), input_value()))
            .unwrap_err();
        assert!(e.to_string().starts_with("p: "), "{e}");
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
        for (rnwd, expected) in [("true", Value::Int32(7)), ("false", Value::Null)] {
            let mut t = smt(
                Side::Value,
                &[("topic.field", "t"), ("replace.null.with.default", rnwd)],
            )
            .unwrap();
            let out = t
                .apply(sink(Some(schema.clone()), value.clone()))
                .unwrap()
                .unwrap();
            let got = out.record.value.as_struct().unwrap();
            assert_eq!(got.get_without_default("n").unwrap(), &expected, "{rnwd}");
        }
    }

    #[test]
    fn existing_field_name_clash_is_an_error() {
        let mut t = smt(Side::Value, &[("topic.field", "magic")]).unwrap();
        let e = t
            .apply(sink(Some(input_schema()), input_value()))
            .unwrap_err();
        assert!(e.to_string().contains("duplication"), "{e}");
    }

    #[test]
    fn non_struct_and_non_map_operands_are_errors() {
        let mut t = smt(Side::Value, &[("topic.field", "t")]).unwrap();
        let e = t
            .apply(sink(Some(Schema::int32()), Value::Int32(1)))
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "Only Struct objects supported for [field insertion], found: INT32"
        );
        let e = t.apply(sink(None, Value::Int32(1))).unwrap_err();
        assert!(e.to_string().contains("Only Map objects"), "{e}");
    }

    #[test]
    fn schema_is_derived_once() {
        let mut t = smt(Side::Value, &[("topic.field", "t")]).unwrap();
        let a = t
            .apply(sink(Some(input_schema()), input_value()))
            .unwrap()
            .unwrap();
        let b = t
            .apply(sink(Some(input_schema()), input_value()))
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
        let e = smt(Side::Value, &[]).unwrap_err();
        assert!(matches!(e.kind(), ErrorKind::Config { .. }));
        assert!(
            e.to_string().contains("No field insertion configured"),
            "{e}"
        );

        let e = smt(Side::Value, &[("static.field", "s")]).unwrap_err();
        assert!(matches!(e.kind(), ErrorKind::Config { key } if key == "static.value"));
        assert!(e
            .to_string()
            .contains("No value specified for static field: s"));

        for spec in ["!", "?", ""] {
            let e = smt(Side::Value, &[("topic.field", spec)]).unwrap_err();
            assert!(
                matches!(e.kind(), ErrorKind::Config { key } if key == "topic.field"),
                "{spec}: {e}"
            );
        }
        let e = smt(
            Side::Value,
            &[("topic.field", "t"), ("replace.null.with.default", "x")],
        )
        .unwrap_err();
        assert!(
            matches!(e.kind(), ErrorKind::Config { key } if key == "replace.null.with.default")
        );
    }

    proptest::proptest! {
        #[test]
        fn inserts_after_the_input_fields_and_keeps_them((schema, value) in flat_struct()) {
            let mut t = smt(Side::Value, &[("topic.field", "TOPIC!"), ("offset.field", "OFFSET")]).unwrap();
            let out = t.apply(sink(Some(schema.clone()), value.clone())).unwrap().unwrap();
            let s = out.record.value_schema.as_ref().unwrap();
            let n = schema.field_count();
            proptest::prop_assert_eq!(s.field_count(), n + 2);
            for (a, b) in schema.field_list().zip(s.field_list()) {
                proptest::prop_assert_eq!(a, b);
            }
            let v = out.record.value.as_struct().unwrap();
            proptest::prop_assert_eq!(&v.values()[..n], value.as_struct().unwrap().values());
            proptest::prop_assert_eq!(&v.values()[n..], &[Value::from("test"), Value::Int64(42)][..]);
            v.validate().unwrap();
        }
    }

    #[test]
    fn every_key_is_documented() {
        let def = Configurable::config_def(&InsertField::new(Side::Value));
        assert_eq!(def.keys().len(), 7);
        assert!(def.keys().iter().all(|k| !k.documentation.is_empty()));
    }
}
