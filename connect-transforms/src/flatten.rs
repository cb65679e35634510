//! Flatten: turn nested structs (or nested schemaless maps) into one flat
//! level, joining field names with a delimiter.
//!
//! Kafka classes `org.apache.kafka.connect.transforms.Flatten$Key` and
//! `org.apache.kafka.connect.transforms.Flatten$Value`.
//!
//! | key | default | meaning |
//! |---|---|---|
//! | `delimiter` | `.` | put between a parent's and a child's field name |
//!
//! With a schema, each leaf field of a nested struct becomes a top-level
//! field named `parent<delimiter>child`; it is optional when it or any
//! ancestor is optional, and takes its own default or the one its ancestors'
//! defaults give it. Arrays are kept as they are; a MAP field is a data
//! error (Kafka cannot name its entries in a schema). The flat schema keeps
//! the input's name, version, doc and parameters and is derived once per
//! input schema. A null nested struct leaves its leaves null.
//!
//! Without a schema, nested maps are flattened the same way (null entries
//! kept); a struct inside a schemaless map is a data error. A null value
//! passes through unchanged.

use connect_api::config::{ConfigKey, ConfigType, Importance};
use connect_api::transform::{Configurable, Transformation, Verdict};
use connect_api::{
    ConfigDef, ConfigMap, ConnectError, ConnectRecord, Result, Schema, Struct, Type, Value,
};

use crate::util::{
    builder_like, fill_defaults, into_map, into_struct, map_key, same_or_new, struct_builder_like,
    take_field,
};
use crate::util::{SchemaCache, Side};

/// Kafka's class name, without the `$Key` / `$Value` suffix.
pub const CLASS: &str = "org.apache.kafka.connect.transforms.Flatten";

const PURPOSE: &str = "flattening";
const DELIMITER: &str = "delimiter";

/// Flattens nested structs and maps; see the [module docs](self).
///
/// ```
/// use connect_api::transform::{Configurable, Transformation};
/// use connect_api::{Record, SinkRecord, Value};
/// use connect_transforms::flatten::Flatten;
/// use connect_transforms::util::Side;
///
/// let mut smt = Flatten::new(Side::Value);
/// let cfg = connect_api::ConfigMap::from([("delimiter", "_")]);
/// smt.configure(&cfg).unwrap();
///
/// let value = Value::string_map([("user", Value::string_map([("id", Value::Int64(1))]))]);
/// let out = smt.apply(SinkRecord::new(Record::new("t", None, value), 0, 0)).unwrap().unwrap();
/// assert_eq!(out.record.value, Value::string_map([("user_id", Value::Int64(1))]));
/// ```
#[derive(Debug)]
pub struct Flatten {
    side: Side,
    naming: Naming,
    cache: SchemaCache,
}

/// The flattening rules, apart from the cache so both can be borrowed.
#[derive(Debug)]
struct Naming {
    delimiter: String,
}

impl Flatten {
    /// An unconfigured Flatten acting on `side`.
    pub fn new(side: Side) -> Self {
        Flatten {
            side,
            naming: Naming {
                delimiter: ".".to_string(),
            },
            cache: SchemaCache::default(),
        }
    }

    fn definition() -> ConfigDef {
        ConfigDef::new().define(
            ConfigKey::new(DELIMITER, ConfigType::String)
                .default(".")
                .importance(Importance::Medium)
                .doc(
                    "Delimiter to insert between field names from the input record when \
                     generating field names for the output record",
                ),
        )
    }
}

impl Naming {
    fn join(&self, prefix: &str, name: &str) -> String {
        if prefix.is_empty() {
            name.to_string()
        } else {
            format!("{prefix}{}{name}", self.delimiter)
        }
    }

    fn derive(&self, input: &Schema) -> Result<Schema> {
        let builder = struct_builder_like(input);
        let default = match input.default_value() {
            Some(Value::Struct(s)) => Some(s),
            _ => None,
        };
        let derived = self
            .add_leaves(input, "", builder, input.is_optional(), default)?
            .build()?;
        same_or_new(input, derived)
    }

    fn add_leaves(
        &self,
        schema: &Schema,
        prefix: &str,
        mut builder: connect_api::SchemaBuilder,
        optional: bool,
        parent_default: Option<&Struct>,
    ) -> Result<connect_api::SchemaBuilder> {
        for field in schema.fields()? {
            let name = self.join(prefix, field.name());
            let fs = field.schema();
            let optional = optional || fs.is_optional();
            let default = fs.default_value().cloned().or_else(|| {
                parent_default
                    .map(|p| p.value_or_default(field).clone())
                    .filter(|v| !v.is_null())
            });
            match fs.ty() {
                Type::Struct => {
                    let default = match &default {
                        Some(Value::Struct(s)) => Some(s),
                        _ => None,
                    };
                    builder = self.add_leaves(fs, &name, builder, optional, default)?;
                }
                Type::Map => {
                    return Err(ConnectError::data(format!(
                        "Flatten transformation does not support MAP for record with schemas \
                         (for field {name})."
                    )))
                }
                _ => {
                    let mut leaf = builder_like(fs);
                    if optional {
                        leaf = leaf.optional();
                    }
                    if let Some(d) = default {
                        leaf = leaf.default_value(d);
                    }
                    builder = builder.field(name, leaf.build()?);
                }
            }
        }
        Ok(builder)
    }

    fn flatten_map(
        &self,
        entries: Vec<(Value, Value)>,
        prefix: &str,
        out: &mut Vec<(Value, Value)>,
    ) -> Result<()> {
        for (key, value) in entries {
            let name = if prefix.is_empty() {
                map_key(&key, PURPOSE)?;
                key
            } else {
                Value::String(self.join(prefix, map_key(&key, PURPOSE)?))
            };
            match value {
                Value::Map(inner) => {
                    let prefix = name.as_str().unwrap_or_default().to_string();
                    self.flatten_map(inner, &prefix, out)?;
                }
                Value::Struct(_) => {
                    return Err(ConnectError::data(format!(
                        "Flatten transformation does not support STRUCT for record without \
                         schemas (for field {}).",
                        name.as_str().unwrap_or_default()
                    )))
                }
                v => out.push((name, v)),
            }
        }
        Ok(())
    }
}

/// Number of leaf fields `schema` flattens to.
fn leaf_count(schema: &Schema) -> usize {
    schema
        .field_list()
        .map(|f| match f.schema().ty() {
            Type::Struct => leaf_count(f.schema()),
            _ => 1,
        })
        .sum()
}

/// Move the leaves of a struct (of `schema`, with raw `values`) into `out`
/// from position `*next` on, in the depth-first order `derive` laid out.
fn collect_leaves(
    schema: &Schema,
    mut values: Vec<Value>,
    out: &mut Struct,
    next: &mut usize,
) -> Result<()> {
    for field in schema.field_list() {
        let value = take_field(&mut values, field, true);
        if field.schema().ty() != Type::Struct {
            out.put_at_unchecked(*next, value);
            *next += 1;
            continue;
        }
        match value {
            Value::Struct(inner) => {
                let (_, inner_values) = inner.into_parts();
                collect_leaves(field.schema(), inner_values, out, next)
                    .map_err(|e| e.in_field(field.name()))?;
            }
            // The leaves stay null.
            Value::Null => *next += leaf_count(field.schema()),
            other => {
                return Err(ConnectError::data_at(
                    field.name(),
                    format!("expected STRUCT, got {}", other.type_name()),
                ))
            }
        }
    }
    Ok(())
}

impl Configurable for Flatten {
    fn configure(&mut self, config: &ConfigMap) -> Result<()> {
        let parsed = Self::definition().parse(config)?;
        self.naming.delimiter = parsed.get_string(DELIMITER).unwrap_or(".").to_string();
        self.cache = SchemaCache::default();
        Ok(())
    }

    fn config_def(&self) -> ConfigDef {
        Self::definition()
    }
}

impl<R: ConnectRecord> Transformation<R> for Flatten {
    fn transform(&mut self, record: &mut R) -> Result<Verdict> {
        if self.side.value(&*record).is_null() {
            return Ok(Verdict::Keep);
        }
        let (schema, value) = self.side.take(record);
        let (schema, value) = match schema {
            Some(_) => {
                let mut s = into_struct(value, PURPOSE)?;
                let naming = &self.naming;
                let output = self
                    .cache
                    .get_or_try_insert(s.schema(), |s| naming.derive(s))?
                    .clone();
                if output.ptr_eq(s.schema()) {
                    // Already flat: leaves read with their defaults, as below.
                    fill_defaults(&mut s);
                    self.side.set(record, Some(output), Value::Struct(s));
                    return Ok(Verdict::Keep);
                }
                let (input, values) = s.into_parts();
                let mut out = Struct::new(output.clone())?;
                collect_leaves(&input, values, &mut out, &mut 0)?;
                (Some(output), Value::Struct(out))
            }
            None => {
                let entries = into_map(value, PURPOSE)?;
                let mut out = Vec::with_capacity(entries.len());
                self.naming.flatten_map(entries, "", &mut out)?;
                (None, Value::Map(out))
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
    use connect_api::logical::{decimal_schema, timestamp_schema};
    use connect_api::{Decimal, SchemaBuilder};
    use proptest::prelude::*;

    fn smt(side: Side, pairs: &[(&str, &str)]) -> Result<Flatten> {
        let mut t = Flatten::new(side);
        t.configure(&props(pairs))?;
        Ok(t)
    }

    fn names(s: &Schema) -> Vec<&str> {
        s.field_list().map(|f| f.name()).collect()
    }

    fn leaf_schema() -> Schema {
        SchemaBuilder::struct_()
            .field("int8", Schema::int8())
            .field("string", Schema::string())
            .field("decimal", decimal_schema(1))
            .field("ts", timestamp_schema())
            .field(
                "array",
                SchemaBuilder::array(Schema::int32()).build().unwrap(),
            )
            .build()
            .unwrap()
    }

    fn leaf() -> Struct {
        let mut s = Struct::new(leaf_schema()).unwrap();
        s.put("int8", 8i8)
            .unwrap()
            .put("string", "s")
            .unwrap()
            .put("decimal", Decimal::new(15, 1))
            .unwrap()
            .put("ts", Value::Timestamp(5))
            .unwrap()
            .put("array", vec![Value::Int32(1)])
            .unwrap();
        s
    }

    fn nested() -> (Schema, Value) {
        let mid_schema = SchemaBuilder::struct_()
            .field("leaf", leaf_schema())
            .field("n", Schema::int32())
            .build()
            .unwrap();
        let top = SchemaBuilder::struct_()
            .name("com.example.Top")
            .field("A", mid_schema.clone())
            .field("B", Schema::boolean())
            .build()
            .unwrap();
        let mut mid = Struct::new(mid_schema).unwrap();
        mid.put("leaf", leaf()).unwrap().put("n", 3).unwrap();
        let mut t = Struct::new(top.clone()).unwrap();
        t.put("A", mid).unwrap().put("B", true).unwrap();
        (top, Value::Struct(t))
    }

    #[test]
    fn nested_struct_with_default_delimiter() {
        let (schema, value) = nested();
        let mut t = smt(Side::Value, &[]).unwrap();
        let out = t.apply(sink(Some(schema), value)).unwrap().unwrap();
        let s = out.record.value_schema.as_ref().unwrap();
        assert_eq!(s.name(), Some("com.example.Top"));
        assert_eq!(
            names(s),
            [
                "A.leaf.int8",
                "A.leaf.string",
                "A.leaf.decimal",
                "A.leaf.ts",
                "A.leaf.array",
                "A.n",
                "B"
            ]
        );
        // Logical types and arrays are kept.
        assert_eq!(
            s.field("A.leaf.decimal").unwrap().schema(),
            &decimal_schema(1)
        );
        assert_eq!(s.field("A.leaf.ts").unwrap().schema(), &timestamp_schema());
        let v = out.record.value.as_struct().unwrap();
        v.validate().unwrap();
        assert_eq!(v.get("A.leaf.int8").unwrap(), &Value::Int8(8));
        assert_eq!(
            v.get("A.leaf.array").unwrap(),
            &Value::Array(vec![Value::Int32(1)])
        );
        assert_eq!(v.get("A.n").unwrap(), &Value::Int32(3));
        assert_eq!(v.get("B").unwrap(), &Value::Boolean(true));
    }

    #[test]
    fn custom_delimiter_and_key_side() {
        let (schema, value) = nested();
        let mut t = smt(Side::Key, &[("delimiter", "#")]).unwrap();
        let out = t.apply(sink_key(Some(schema), value)).unwrap().unwrap();
        assert_eq!(
            names(out.record.key_schema.as_ref().unwrap())[0],
            "A#leaf#int8"
        );
        assert_eq!(out.record.value, Value::from("v"));
    }

    #[test]
    fn optional_ancestor_makes_leaves_optional_and_null_struct_gives_nulls() {
        let inner = SchemaBuilder::struct_()
            .field("x", Schema::int32())
            .field("y", Schema::string())
            .optional()
            .build()
            .unwrap();
        let top = SchemaBuilder::struct_()
            .field("inner", inner)
            .field("z", Schema::int64())
            .build()
            .unwrap();
        let mut v = Struct::new(top.clone()).unwrap();
        v.put("z", 1i64).unwrap();
        let mut t = smt(Side::Value, &[]).unwrap();
        let out = t.apply(sink(Some(top), Value::Struct(v))).unwrap().unwrap();
        let s = out.record.value_schema.as_ref().unwrap();
        assert_eq!(
            s.field("inner.x").unwrap().schema(),
            &Schema::optional_int32()
        );
        assert_eq!(
            s.field("inner.y").unwrap().schema(),
            &Schema::optional_string()
        );
        assert_eq!(s.field("z").unwrap().schema(), &Schema::int64());
        let v = out.record.value.as_struct().unwrap();
        v.validate().unwrap();
        assert_eq!(v.get("inner.x").unwrap(), &Value::Null);
        assert_eq!(v.get("z").unwrap(), &Value::Int64(1));
    }

    #[test]
    fn leaf_defaults_are_kept() {
        let inner = SchemaBuilder::struct_()
            .field(
                "b",
                SchemaBuilder::int32().default_value(2).build().unwrap(),
            )
            .build()
            .unwrap();
        let top = SchemaBuilder::struct_()
            .field("inner", inner.clone())
            .build()
            .unwrap();
        let mut v = Struct::new(top.clone()).unwrap();
        v.put("inner", Struct::new(inner).unwrap()).unwrap();
        let mut t = smt(Side::Value, &[]).unwrap();
        let out = t.apply(sink(Some(top), Value::Struct(v))).unwrap().unwrap();
        let s = out.record.value_schema.as_ref().unwrap();
        assert_eq!(
            s.field("inner.b").unwrap().schema().default_value(),
            Some(&Value::Int32(2))
        );
        let flat = out.record.value.as_struct().unwrap();
        flat.validate().unwrap();
        assert_eq!(
            flat.get_without_default("inner.b").unwrap(),
            &Value::Int32(2)
        );
    }

    #[test]
    fn defaults_come_from_ancestors() {
        let inner = SchemaBuilder::struct_()
            .field("a", Schema::int32())
            .field(
                "b",
                SchemaBuilder::int32().default_value(2).build().unwrap(),
            )
            .build()
            .unwrap();
        let mut inner_default = Struct::new(inner.clone()).unwrap();
        inner_default.put("a", 10).unwrap();
        let inner_with_default = inner
            .to_builder()
            .default_value(Value::Struct(inner_default))
            .build()
            .unwrap();
        let top = SchemaBuilder::struct_()
            .field("inner", inner_with_default)
            .build()
            .unwrap();
        let mut t = smt(Side::Value, &[]).unwrap();
        let out = t
            .apply(sink(
                Some(top.clone()),
                Value::Struct(Struct::new(top).unwrap()),
            ))
            .unwrap()
            .unwrap();
        let s = out.record.value_schema.as_ref().unwrap();
        let default_of = |name: &str| s.field(name).unwrap().schema().default_value().cloned();
        assert_eq!(default_of("inner.a"), Some(Value::Int32(10)));
        assert_eq!(default_of("inner.b"), Some(Value::Int32(2)));
        // The null nested struct reads as its default.
        let v = out.record.value.as_struct().unwrap();
        assert_eq!(v.get_without_default("inner.a").unwrap(), &Value::Int32(10));
    }

    #[test]
    fn flat_input_keeps_its_schema_and_reads_defaults() {
        let schema = SchemaBuilder::struct_()
            .field(
                "a",
                SchemaBuilder::int32()
                    .optional()
                    .default_value(4)
                    .build()
                    .unwrap(),
            )
            .build()
            .unwrap();
        let mut t = smt(Side::Value, &[]).unwrap();
        let out = t
            .apply(sink(
                Some(schema.clone()),
                Value::Struct(Struct::new(schema.clone()).unwrap()),
            ))
            .unwrap()
            .unwrap();
        assert!(out.record.value_schema.as_ref().unwrap().ptr_eq(&schema));
        let v = out.record.value.as_struct().unwrap();
        assert_eq!(v.get_without_default("a").unwrap(), &Value::Int32(4));
    }

    #[test]
    fn optional_top_level_with_default_as_kafka_tests_it() {
        let base = SchemaBuilder::struct_()
            .optional()
            .field("req_field", Schema::string())
            .field(
                "opt_field",
                SchemaBuilder::string()
                    .optional()
                    .default_value("child_default")
                    .build()
                    .unwrap(),
            )
            .build()
            .unwrap();
        let mut default = Struct::new(base.clone()).unwrap();
        default.put("req_field", "req_default").unwrap();
        let schema = base
            .to_builder()
            .default_value(Value::Struct(default))
            .build()
            .unwrap();
        let mut t = smt(Side::Value, &[]).unwrap();
        let out = t
            .apply(sink(
                Some(schema.clone()),
                Value::Struct(Struct::new(schema).unwrap()),
            ))
            .unwrap()
            .unwrap();
        let s = out.record.value_schema.as_ref().unwrap();
        assert_eq!(s.field_count(), 2);
        assert_eq!(
            s.field("req_field").unwrap().schema(),
            &SchemaBuilder::string()
                .optional()
                .default_value("req_default")
                .build()
                .unwrap()
        );
        assert_eq!(
            s.field("opt_field").unwrap().schema(),
            &SchemaBuilder::string()
                .optional()
                .default_value("child_default")
                .build()
                .unwrap()
        );
    }

    #[test]
    fn map_field_with_schema_is_an_error() {
        let top = SchemaBuilder::struct_()
            .field(
                "m",
                SchemaBuilder::map(Schema::string(), Schema::string())
                    .build()
                    .unwrap(),
            )
            .build()
            .unwrap();
        let mut t = smt(Side::Value, &[]).unwrap();
        let e = t
            .apply(sink(
                Some(top.clone()),
                Value::Struct(Struct::new(top).unwrap()),
            ))
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "Flatten transformation does not support MAP for record with schemas (for field m)."
        );
    }

    #[test]
    fn schemaless_nested_maps() {
        let value = Value::string_map([
            (
                "A",
                Value::string_map([
                    ("B", Value::string_map([("int", Value::Int32(1))])),
                    ("null", Value::Null),
                    ("arr", Value::Array(vec![Value::Int32(1)])),
                ]),
            ),
            ("top", Value::from("x")),
        ]);
        let mut t = smt(Side::Value, &[("delimiter", "_")]).unwrap();
        let out = t.apply(sink(None, value)).unwrap().unwrap();
        assert_eq!(
            out.record.value,
            Value::string_map([
                ("A_B_int", Value::Int32(1)),
                ("A_null", Value::Null),
                ("A_arr", Value::Array(vec![Value::Int32(1)])),
                ("top", Value::from("x")),
            ])
        );
        assert!(out.record.value_schema.is_none());
    }

    #[test]
    fn struct_inside_schemaless_map_is_an_error() {
        let s = Struct::new(SchemaBuilder::struct_().build().unwrap()).unwrap();
        let value = Value::string_map([("a", Value::string_map([("s", Value::Struct(s))]))]);
        let mut t = smt(Side::Value, &[]).unwrap();
        let e = t.apply(sink(None, value)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "Flatten transformation does not support STRUCT for record without schemas (for field a.s)."
        );
    }

    #[test]
    fn tombstones_pass_and_wrong_operands_fail() {
        let mut t = smt(Side::Value, &[]).unwrap();
        let out = t.apply(sink(None, Value::Null)).unwrap().unwrap();
        assert!(out.record.value.is_null() && out.record.value_schema.is_none());
        let opt = SchemaBuilder::struct_().optional().build().unwrap();
        let out = t
            .apply(sink(Some(opt.clone()), Value::Null))
            .unwrap()
            .unwrap();
        assert_eq!(out.record.value_schema, Some(opt));

        let e = t
            .apply(sink(Some(Schema::int32()), Value::Int32(1)))
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "Only Struct objects supported for [flattening], found: INT32"
        );
        let e = t.apply(sink(None, Value::Int32(1))).unwrap_err();
        assert_eq!(
            e.to_string(),
            "Only Map objects supported in absence of schema for [flattening], found: INT32"
        );
    }

    #[test]
    fn schema_is_derived_once() {
        let mut t = smt(Side::Value, &[]).unwrap();
        let (s, v) = nested();
        let a = t.apply(sink(Some(s.clone()), v.clone())).unwrap().unwrap();
        let b = t.apply(sink(Some(s), v)).unwrap().unwrap();
        assert!(a
            .record
            .value_schema
            .unwrap()
            .ptr_eq(b.record.value_schema.as_ref().unwrap()));
    }

    #[test]
    fn config_key_is_documented_and_defaults_to_a_dot() {
        let def = Configurable::config_def(&Flatten::new(Side::Value));
        assert_eq!(def.keys().len(), 1);
        assert!(!def.keys()[0].documentation.is_empty());
        let mut t = smt(Side::Value, &[]).unwrap();
        let value = Value::string_map([("a", Value::string_map([("b", Value::Int32(1))]))]);
        let out = t.apply(sink(None, value)).unwrap().unwrap();
        assert_eq!(
            out.record.value,
            Value::string_map([("a.b", Value::Int32(1))])
        );
    }

    proptest! {
        #[test]
        fn flat_struct_is_unchanged((schema, value) in flat_struct()) {
            let mut t = smt(Side::Value, &[]).unwrap();
            let out = t.apply(sink(Some(schema.clone()), value.clone())).unwrap().unwrap();
            prop_assert_eq!(out.record.value_schema, Some(schema));
            prop_assert_eq!(out.record.value, value);
        }

        #[test]
        fn flat_map_is_unchanged(
            entries in proptest::collection::btree_map("[a-z]{1,6}", any::<i64>(), 0..8)
        ) {
            let value = Value::string_map(entries.into_iter().map(|(k, v)| (k, Value::Int64(v))));
            let mut t = smt(Side::Value, &[]).unwrap();
            let out = t.apply(sink(None, value.clone())).unwrap().unwrap();
            prop_assert_eq!(out.record.value, value);
        }
    }
}
