//! proptest strategies for Kafka Connect data: schemas, values that match
//! them, values that do not, and records.
//!
//! Use them to check that a transform, converter or connector holds a rule
//! for every shape of data, not just the three shapes a hand-written test
//! thinks of:
//!
//! ```
//! use connect_testkit::strategies::schema_and_value;
//! use proptest::prelude::*;
//!
//! proptest!(ProptestConfig::with_cases(16), |((schema, value) in schema_and_value())| {
//!     prop_assert!(schema.validate_value(&value).is_ok());
//! });
//! ```
//!
//! Schemas nest up to three levels of STRUCT, ARRAY and MAP over every
//! primitive type and the four logical types, optional or required, some
//! named, some with a default value. Generated values stay small (short
//! strings, collections of at most four elements) so a property runs its
//! 256 cases in milliseconds.

use std::sync::Arc;

use connect_api::logical::{self, LogicalType};
use connect_api::{
    Decimal, Headers, Record, Schema, SchemaBuilder, SinkRecord, SourceMap, SourceRecord, Struct,
    Type, Value,
};
use proptest::prelude::*;

/// The kinds of leaf schema [`schema`] draws from.
#[derive(Debug, Clone, Copy)]
enum Leaf {
    Plain(Type),
    Decimal(i32),
    Date,
    Time,
    Timestamp,
}

const PRIMITIVES: [Type; 9] = [
    Type::Int8,
    Type::Int16,
    Type::Int32,
    Type::Int64,
    Type::Float32,
    Type::Float64,
    Type::Boolean,
    Type::String,
    Type::Bytes,
];

/// Any primitive type (INT8 ... BYTES).
pub fn primitive_type() -> impl Strategy<Value = Type> {
    proptest::sample::select(&PRIMITIVES[..])
}

fn leaf_kind() -> impl Strategy<Value = Leaf> {
    prop_oneof![
        6 => primitive_type().prop_map(Leaf::Plain),
        1 => (0..=6i32).prop_map(Leaf::Decimal),
        1 => Just(Leaf::Date),
        1 => Just(Leaf::Time),
        1 => Just(Leaf::Timestamp),
    ]
}

fn leaf_builder(kind: Leaf, named: bool) -> SchemaBuilder {
    match kind {
        Leaf::Plain(ty) => {
            let b = SchemaBuilder::new(ty);
            if named {
                b.name(format!("com.example.{}", ty.name().to_lowercase()))
                    .version(1)
                    .doc("a named primitive")
            } else {
                b
            }
        }
        Leaf::Decimal(scale) => logical::decimal_builder(scale),
        Leaf::Date => logical::date_builder(),
        Leaf::Time => logical::time_builder(),
        Leaf::Timestamp => logical::timestamp_builder(),
    }
}

/// A primitive or logical schema: optional or not, sometimes named, and
/// sometimes with a default value (valid for the schema, as the builder
/// requires).
pub fn leaf_schema() -> impl Strategy<Value = Schema> {
    (leaf_kind(), any::<bool>(), any::<bool>(), any::<bool>()).prop_flat_map(
        |(kind, optional, named, with_default)| {
            let builder = move || {
                let b = leaf_builder(kind, named);
                if optional {
                    b.optional()
                } else {
                    b
                }
            };
            let plain = builder()
                .build()
                .expect("a leaf schema without default always builds");
            if !with_default {
                return Just(plain).boxed();
            }
            value_for(&plain)
                .prop_filter_map("default builds", move |default| {
                    builder().default_value(default).build().ok()
                })
                .boxed()
        },
    )
}

/// Any schema: leaves from [`leaf_schema`], nested up to three levels in
/// STRUCT (one to four uniquely named fields), ARRAY and MAP (primitive or
/// logical keys), each optional or not.
pub fn schema() -> impl Strategy<Value = Schema> {
    leaf_schema().prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            (inner.clone(), any::<bool>())
                .prop_map(|(elem, optional)| { optional_if(SchemaBuilder::array(elem), optional) }),
            (leaf_schema(), inner.clone(), any::<bool>())
                .prop_map(|(k, v, optional)| { optional_if(SchemaBuilder::map(k, v), optional) }),
            (
                proptest::collection::vec(("[a-z][a-z0-9_]{0,5}", inner), 1..=4),
                any::<bool>(),
                any::<bool>(),
            )
                .prop_map(|(fields, optional, named)| {
                    let mut b = SchemaBuilder::struct_();
                    if named {
                        b = b.name("com.example.Record");
                    }
                    for (i, (name, schema)) in fields.into_iter().enumerate() {
                        // The index keeps names unique, as the builder requires.
                        b = b.field(format!("{name}_{i}"), schema);
                    }
                    optional_if(b, optional)
                }),
        ]
    })
}

fn optional_if(b: SchemaBuilder, optional: bool) -> Schema {
    let b = if optional { b.optional() } else { b };
    b.build()
        .expect("containers with valid inner schemas and unique field names build")
}

/// A schema together with a value that matches it.
pub fn schema_and_value() -> impl Strategy<Value = (Schema, Value)> {
    schema().prop_flat_map(|s| {
        let values = value_for(&s);
        (Just(s), values)
    })
}

/// Values valid for `schema`: null sometimes when it is optional; structs
/// with every required field set (optional or defaulted fields sometimes
/// left unset); maps with distinct keys; floats including NaN and
/// infinities.
pub fn value_for(schema: &Schema) -> BoxedStrategy<Value> {
    let present = present_value_for(schema);
    if schema.is_optional() {
        prop_oneof![1 => Just(Value::Null), 4 => present].boxed()
    } else {
        present
    }
}

fn present_value_for(schema: &Schema) -> BoxedStrategy<Value> {
    match LogicalType::of(schema) {
        Some(LogicalType::Decimal) => {
            let scale = logical::decimal_scale(schema).unwrap_or(0);
            return any::<i64>()
                .prop_map(move |u| Value::Decimal(Decimal::new(u, scale)))
                .boxed();
        }
        Some(LogicalType::Date) => return any::<i32>().prop_map(Value::Date).boxed(),
        Some(LogicalType::Time) => return (0..86_400_000i32).prop_map(Value::Time).boxed(),
        Some(LogicalType::Timestamp) => return any::<i64>().prop_map(Value::Timestamp).boxed(),
        None => {}
    }
    match schema.ty() {
        Type::Int8 => any::<i8>().prop_map(Value::Int8).boxed(),
        Type::Int16 => any::<i16>().prop_map(Value::Int16).boxed(),
        Type::Int32 => any::<i32>().prop_map(Value::Int32).boxed(),
        Type::Int64 => any::<i64>().prop_map(Value::Int64).boxed(),
        Type::Float32 => any::<f32>().prop_map(Value::Float32).boxed(),
        Type::Float64 => any::<f64>().prop_map(Value::Float64).boxed(),
        Type::Boolean => any::<bool>().prop_map(Value::Boolean).boxed(),
        Type::String => "\\PC{0,12}".prop_map(Value::String).boxed(),
        Type::Bytes => proptest::collection::vec(any::<u8>(), 0..16)
            .prop_map(|b| Value::Bytes(b.into()))
            .boxed(),
        Type::Array => match schema.value_schema() {
            Some(elem) => proptest::collection::vec(value_for(elem), 0..=4)
                .prop_map(Value::Array)
                .boxed(),
            None => Just(Value::Array(Vec::new())).boxed(),
        },
        Type::Map => match (schema.key_schema(), schema.value_schema()) {
            (Some(k), Some(v)) => proptest::collection::vec((value_for(k), value_for(v)), 0..=4)
                .prop_map(|entries| Value::Map(distinct_keys(entries)))
                .boxed(),
            _ => Just(Value::Map(Vec::new())).boxed(),
        },
        Type::Struct => struct_for(schema),
    }
}

fn distinct_keys(entries: Vec<(Value, Value)>) -> Vec<(Value, Value)> {
    let mut out: Vec<(Value, Value)> = Vec::with_capacity(entries.len());
    for (k, v) in entries {
        if !out.iter().any(|(seen, _)| *seen == k) {
            out.push((k, v));
        }
    }
    out
}

fn struct_for(schema: &Schema) -> BoxedStrategy<Value> {
    let fields: Vec<BoxedStrategy<Value>> = schema
        .field_list()
        .map(|f| {
            let fs = f.schema();
            if !fs.is_optional() && fs.default_value().is_some() {
                // A defaulted required field may be left unset.
                prop_oneof![1 => Just(Value::Null), 3 => present_value_for(fs)].boxed()
            } else {
                value_for(fs)
            }
        })
        .collect();
    let schema = schema.clone();
    fields
        .prop_map(move |values| {
            let mut s = Struct::new(schema.clone()).expect("a STRUCT schema");
            for (i, v) in values.into_iter().enumerate() {
                // Null means unset; `put_at` would reject it for a required
                // field even when the field has a default.
                if !v.is_null() {
                    s.put_at(i, v).expect("generated for the field's schema");
                }
            }
            Value::Struct(s)
        })
        .boxed()
}

/// The kind of value `schema` expects, named as [`Value::type_name`] does.
fn expected_kind(schema: &Schema) -> &'static str {
    match LogicalType::of(schema) {
        Some(LogicalType::Decimal) => "Decimal",
        Some(LogicalType::Date) => "Date",
        Some(LogicalType::Time) => "Time",
        Some(LogicalType::Timestamp) => "Timestamp",
        None => schema.ty().name(),
    }
}

fn samples() -> Vec<Value> {
    vec![
        Value::Int8(1),
        Value::Int16(1),
        Value::Int32(1),
        Value::Int64(1),
        Value::Float32(1.0),
        Value::Float64(1.0),
        Value::Boolean(true),
        Value::from("x"),
        Value::Bytes(vec![1].into()),
        Value::Array(Vec::new()),
        Value::Map(Vec::new()),
        Value::Decimal(Decimal::new(1, 0)),
        Value::Date(1),
        Value::Time(1),
        Value::Timestamp(1),
    ]
}

/// A non-null value of a different kind than `schema` expects (a STRING
/// for an INT32, an INT32 for a Date, an ARRAY for a STRUCT...). Chosen by
/// kind, not by asking the validator, so a property that checks the
/// validator rejects it is not circular.
pub fn wrong_kind_for(schema: &Schema) -> BoxedStrategy<Value> {
    let expected = expected_kind(schema);
    let wrong: Vec<Value> = samples()
        .into_iter()
        .filter(|v| v.type_name() != expected)
        .collect();
    proptest::sample::select(wrong).boxed()
}

/// `value` (valid for `schema`) with one value somewhere inside it replaced
/// by a value of the wrong kind: the whole value, one struct field, one
/// array element or one map value.
pub fn mutated(schema: &Schema, value: &Value) -> BoxedStrategy<Value> {
    let top = wrong_kind_for(schema);
    match (schema.ty(), value) {
        (Type::Struct, Value::Struct(s)) if s.schema().field_count() > 0 => {
            let s = s.clone();
            let n = s.schema().field_count();
            let field = (0..n)
                .prop_flat_map(move |i| {
                    let s = s.clone();
                    let field_schema = s.schema().field_at(i).map(|f| f.schema().clone());
                    let current = s.get_at(i).cloned().unwrap_or_default();
                    let Some(field_schema) = field_schema else {
                        return Just(Value::Struct(s)).boxed();
                    };
                    // An unset field has no value to mutate inside, so it
                    // gets a wrong kind outright.
                    let inner = if current.is_null() {
                        wrong_kind_for(&field_schema)
                    } else {
                        mutated(&field_schema, &current)
                    };
                    inner
                        .prop_map(move |bad| {
                            let mut s = s.clone();
                            s.put_at_unchecked(i, bad);
                            Value::Struct(s)
                        })
                        .boxed()
                })
                .boxed();
            prop_oneof![top, field].boxed()
        }
        (Type::Array, Value::Array(items)) if items.iter().any(|v| !v.is_null()) => {
            let items = items.clone();
            let Some(elem) = schema.value_schema().cloned() else {
                return top;
            };
            let positions: Vec<usize> = (0..items.len()).filter(|&i| !items[i].is_null()).collect();
            let element = proptest::sample::select(positions)
                .prop_flat_map(move |i| {
                    let items = items.clone();
                    mutated(&elem, &items[i])
                        .prop_map(move |bad| {
                            let mut items = items.clone();
                            items[i] = bad;
                            Value::Array(items)
                        })
                        .boxed()
                })
                .boxed();
            prop_oneof![top, element].boxed()
        }
        (Type::Map, Value::Map(entries)) if entries.iter().any(|(_, v)| !v.is_null()) => {
            let entries = entries.clone();
            let Some(vs) = schema.value_schema().cloned() else {
                return top;
            };
            let positions: Vec<usize> = (0..entries.len())
                .filter(|&i| !entries[i].1.is_null())
                .collect();
            let entry = proptest::sample::select(positions)
                .prop_flat_map(move |i| {
                    let entries = entries.clone();
                    mutated(&vs, &entries[i].1)
                        .prop_map(move |bad| {
                            let mut entries = entries.clone();
                            entries[i].1 = bad;
                            Value::Map(entries)
                        })
                        .boxed()
                })
                .boxed();
            prop_oneof![top, entry].boxed()
        }
        _ => top,
    }
}

/// A topic name (`[a-z][a-z0-9._-]{0,20}`).
pub fn topic() -> impl Strategy<Value = String> {
    "[a-z][a-z0-9._-]{0,20}"
}

/// A few STRING headers, keys possibly repeated.
pub fn headers() -> impl Strategy<Value = Headers> {
    proptest::collection::vec(("[a-c]", "\\PC{0,8}"), 0..4).prop_map(|pairs| {
        let mut h = Headers::new();
        for (k, v) in pairs {
            h.add_string(k, v);
        }
        h
    })
}

/// A key or value: schemaless (a string or null) a quarter of the time,
/// else a generated schema with a matching value.
fn key_or_value() -> impl Strategy<Value = (Option<Schema>, Value)> {
    prop_oneof![
        1 => prop_oneof![Just(Value::Null), "\\PC{0,12}".prop_map(Value::String)]
            .prop_map(|v| (None, v)),
        3 => schema_and_value().prop_map(|(s, v)| (Some(s), v)),
    ]
}

/// The record data shared by source and sink records: topic, optional
/// partition, key and value (with or without schema), optional timestamp,
/// headers.
pub fn record() -> impl Strategy<Value = Record> {
    (
        topic(),
        proptest::option::of(0..8i32),
        key_or_value(),
        key_or_value(),
        proptest::option::of(0..=4_102_444_800_000i64),
        headers(),
    )
        .prop_map(|(topic, partition, (ks, k), (vs, v), ts, headers)| {
            let mut r = Record::new(topic, vs, v)
                .with_key(ks, k)
                .with_headers(headers);
            r.kafka_partition = partition;
            r.timestamp = ts;
            r
        })
}

/// A source record from file `{"filename": ...}` at `{"position": n}`.
pub fn source_record() -> impl Strategy<Value = SourceRecord> {
    (record(), "[a-z]{1,8}\\.txt", 0..1_000_000i64).prop_map(|(r, file, pos)| {
        let mut partition = SourceMap::new();
        partition.insert("filename".into(), file.into());
        let mut offset = SourceMap::new();
        offset.insert("position".into(), pos.into());
        SourceRecord::new(Arc::new(partition), offset, r)
    })
}

/// A sink record consumed from its topic at a partition and offset.
pub fn sink_record() -> impl Strategy<Value = SinkRecord> {
    (record(), 0..8i32, 0..i64::MAX / 2)
        .prop_map(|(r, partition, offset)| SinkRecord::new(r, partition, offset))
}
