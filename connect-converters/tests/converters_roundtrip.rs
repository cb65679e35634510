//! Property tests: any schema and value survive JSON (with schemas) and Avro
//! round trips unchanged, and arbitrary input never panics a reader: it
//! gives a data error.

use std::collections::BTreeMap;
use std::sync::Arc;

use connect_api::logical::{date_builder, decimal_builder, time_builder, timestamp_builder};
use connect_api::{
    ConfigMap, Converter, Decimal, ErrorKind, Headers, Schema, SchemaBuilder, Struct, Type, Value,
};
use connect_converters::avro::{AvroConverter, MemorySchemaRegistry};
use connect_converters::JsonConverter;
use proptest::prelude::*;

fn build(b: SchemaBuilder, optional: bool) -> Schema {
    let b = if optional { b.optional() } else { b };
    b.build().expect("generated schemas are valid")
}

fn leaf() -> impl Strategy<Value = Schema> {
    let kinds = prop_oneof![
        Just(SchemaBuilder::int8()),
        Just(SchemaBuilder::int16()),
        Just(SchemaBuilder::int32()),
        Just(SchemaBuilder::int64()),
        Just(SchemaBuilder::float32()),
        Just(SchemaBuilder::float64()),
        Just(SchemaBuilder::boolean()),
        Just(SchemaBuilder::string()),
        Just(SchemaBuilder::bytes()),
        (0..6i32).prop_map(decimal_builder),
        Just(date_builder()),
        Just(time_builder()),
        Just(timestamp_builder()),
    ];
    (kinds, any::<bool>()).prop_map(|(b, opt)| build(b, opt))
}

fn schema() -> impl Strategy<Value = Schema> {
    leaf().prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            (inner.clone(), any::<bool>()).prop_map(|(s, o)| build(SchemaBuilder::array(s), o)),
            (inner.clone(), any::<bool>())
                .prop_map(|(s, o)| build(SchemaBuilder::map(Schema::string(), s), o)),
            (inner.clone(), any::<bool>())
                .prop_map(|(s, o)| build(SchemaBuilder::map(Schema::int32(), s), o)),
            (prop::collection::vec(inner, 1..5), any::<bool>()).prop_map(|(fields, o)| {
                let mut b = SchemaBuilder::struct_();
                for (i, f) in fields.into_iter().enumerate() {
                    b = b.field(format!("f{i}"), f);
                }
                build(b, o)
            }),
        ]
    })
}

fn value_for(schema: &Schema) -> BoxedStrategy<Value> {
    let present = present_value(schema);
    if schema.is_optional() {
        prop_oneof![1 => Just(Value::Null), 4 => present].boxed()
    } else {
        present
    }
}

fn present_value(schema: &Schema) -> BoxedStrategy<Value> {
    use connect_api::LogicalType as L;
    match connect_api::LogicalType::of(schema) {
        Some(L::Decimal) => {
            let scale = connect_api::logical::decimal_scale(schema).unwrap();
            return any::<i64>()
                .prop_map(move |u| Value::Decimal(Decimal::new(u, scale)))
                .boxed();
        }
        Some(L::Date) => return any::<i32>().prop_map(Value::Date).boxed(),
        Some(L::Time) => return (0..86_400_000i32).prop_map(Value::Time).boxed(),
        Some(L::Timestamp) => return any::<i64>().prop_map(Value::Timestamp).boxed(),
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
        Type::String => any::<String>().prop_map(Value::String).boxed(),
        Type::Bytes => prop::collection::vec(any::<u8>(), 0..16)
            .prop_map(|b| Value::Bytes(b.into()))
            .boxed(),
        Type::Array => prop::collection::vec(value_for(schema.value_schema().unwrap()), 0..4)
            .prop_map(Value::Array)
            .boxed(),
        Type::Map => {
            let v = value_for(schema.value_schema().unwrap());
            if schema.key_schema().unwrap().ty() == Type::String {
                prop::collection::btree_map(any::<String>(), v, 0..4)
                    .prop_map(|m| {
                        Value::Map(m.into_iter().map(|(k, v)| (Value::String(k), v)).collect())
                    })
                    .boxed()
            } else {
                prop::collection::btree_map(any::<i32>(), v, 0..4)
                    .prop_map(|m: BTreeMap<i32, Value>| {
                        Value::Map(m.into_iter().map(|(k, v)| (Value::Int32(k), v)).collect())
                    })
                    .boxed()
            }
        }
        Type::Struct => {
            let schema = schema.clone();
            let fields: Vec<BoxedStrategy<Value>> =
                schema.field_list().map(|f| value_for(f.schema())).collect();
            fields
                .prop_map(move |values| {
                    let mut s = Struct::new(schema.clone()).unwrap();
                    for (i, v) in values.into_iter().enumerate() {
                        s.put_at(i, v).unwrap();
                    }
                    Value::Struct(s)
                })
                .boxed()
        }
    }
}

fn schema_and_value() -> impl Strategy<Value = (Schema, Value)> {
    schema().prop_flat_map(|s| {
        let v = value_for(&s);
        (Just(s), v)
    })
}

fn json(pairs: &[(&str, &str)]) -> JsonConverter {
    let mut c = JsonConverter::new();
    let cfg: ConfigMap = ConfigMap::from_pairs(pairs.iter().copied());
    c.configure(&cfg, false).unwrap();
    c
}

fn round_trip(
    c: &mut dyn Converter,
    schema: &Schema,
    value: &Value,
) -> Option<(Option<Schema>, Value)> {
    let mut out = Vec::new();
    let written = c
        .from_connect_data("t", &Headers::new(), Some(schema), value, &mut out)
        .unwrap();
    let back = c
        .to_connect_data("t", &Headers::new(), written.bytes_or_null(&out[..]))
        .unwrap();
    written.bytes_or_null((back.schema, back.value))
}

fn arbitrary_json() -> impl Strategy<Value = serde_json::Value> {
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::from),
        any::<i64>().prop_map(serde_json::Value::from),
        any::<u64>().prop_map(serde_json::Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(serde_json::Value::from),
        prop_oneof![
            Just("type".to_string()),
            Just("int32".to_string()),
            Just("struct".to_string()),
            any::<String>()
        ]
        .prop_map(serde_json::Value::from),
    ];
    leaf.prop_recursive(4, 32, 5, |inner| {
        let key = prop_oneof![
            Just("type".to_string()),
            Just("fields".to_string()),
            Just("field".to_string()),
            Just("items".to_string()),
            Just("keys".to_string()),
            Just("values".to_string()),
            Just("optional".to_string()),
            Just("default".to_string()),
            Just("parameters".to_string()),
            Just("name".to_string()),
            any::<String>(),
        ];
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(serde_json::Value::Array),
            prop::collection::vec((key, inner), 0..4)
                .prop_map(|kv| serde_json::Value::Object(kv.into_iter().collect())),
        ]
    })
}

fn assert_data_error(r: connect_api::Result<connect_api::SchemaAndValue>) {
    if let Err(e) = r {
        assert!(
            matches!(e.kind(), ErrorKind::Data { .. }),
            "not a data error: {e:?}"
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn json_with_schemas_round_trips((schema, value) in schema_and_value()) {
        let mut c = JsonConverter::new();
        let back = round_trip(&mut c, &schema, &value).expect("a schema is always written");
        prop_assert_eq!(back.0.as_ref(), Some(&schema));
        prop_assert_eq!(back.1, value);
    }

    #[test]
    fn json_numeric_decimals_round_trip((schema, value) in schema_and_value()) {
        let mut c = json(&[("decimal.format", "NUMERIC")]);
        let back = round_trip(&mut c, &schema, &value).expect("a schema is always written");
        prop_assert_eq!(back.0.as_ref(), Some(&schema));
        prop_assert_eq!(back.1, value);
    }

    #[test]
    fn avro_round_trips((schema, value) in schema_and_value()) {
        let mut c = AvroConverter::with_client(Arc::new(MemorySchemaRegistry::new()));
        match round_trip(&mut c, &schema, &value) {
            // Only a null of an optional schema is a tombstone.
            None => prop_assert!(value.is_null() && schema.is_optional()),
            Some((s, v)) => {
                prop_assert_eq!(s.as_ref(), Some(&schema));
                prop_assert_eq!(v, value);
            }
        }
    }

    #[test]
    fn json_arbitrary_bytes_give_data_errors(bytes in prop::collection::vec(any::<u8>(), 0..64)) {
        assert_data_error(JsonConverter::new().to_connect_data("t", &Headers::new(), Some(&bytes)));
        assert_data_error(json(&[("schemas.enable", "false")]).to_connect_data("t", &Headers::new(), Some(&bytes)));
    }

    #[test]
    fn json_arbitrary_documents_give_data_errors(schema in arbitrary_json(), payload in arbitrary_json()) {
        let envelope = serde_json::json!({"schema": schema, "payload": payload}).to_string();
        assert_data_error(JsonConverter::new().to_connect_data("t", &Headers::new(), Some(envelope.as_bytes())));
        let bare = payload.to_string();
        assert_data_error(json(&[("schemas.enable", "false")]).to_connect_data("t", &Headers::new(), Some(bare.as_bytes())));
        assert_data_error(JsonConverter::new().to_connect_data("t", &Headers::new(), Some(bare.as_bytes())));
    }

    #[test]
    fn avro_arbitrary_bytes_give_data_errors((schema, value) in schema_and_value(), tail in prop::collection::vec(any::<u8>(), 0..48)) {
        let registry = Arc::new(MemorySchemaRegistry::new());
        let mut c = AvroConverter::with_client(registry);
        let mut out = Vec::new();
        c.from_connect_data("t", &Headers::new(), Some(&schema), &value, &mut out).unwrap();
        // A known schema id followed by garbage, and garbage alone.
        let mut framed = vec![0, 0, 0, 0, 1];
        framed.extend_from_slice(&tail);
        assert_data_error(c.to_connect_data("t", &Headers::new(), Some(&framed)));
        assert_data_error(c.to_connect_data("t", &Headers::new(), Some(&tail)));
    }
}
