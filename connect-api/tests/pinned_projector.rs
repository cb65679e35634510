//! Pins `SchemaProjector` (Kafka's `SchemaProjector`): which schemas
//! project onto which, and what the projected value is.

use connect_api::logical::{decimal_schema, time_schema};
use connect_api::{Decimal, Schema, SchemaBuilder, SchemaProjector, Struct, Type, Value};

fn p(source: &Schema, value: Value, target: &Schema) -> connect_api::Result<Value> {
    SchemaProjector::project(source, &value, target)
}

#[test]
fn promotion_order() {
    let numeric = [
        Type::Int8,
        Type::Int16,
        Type::Int32,
        Type::Int64,
        Type::Float32,
        Type::Float64,
    ];
    for (i, from) in numeric.iter().enumerate() {
        for (j, to) in numeric.iter().enumerate() {
            assert_eq!(
                SchemaProjector::is_promotable(*from, *to),
                i < j,
                "{from} -> {to}"
            );
        }
        assert!(!SchemaProjector::is_promotable(*from, Type::String));
        assert!(!SchemaProjector::is_promotable(Type::Boolean, *from));
    }
    assert!(!SchemaProjector::is_promotable(Type::String, Type::Bytes));
}

#[test]
fn promoted_values() {
    let cases = [
        (
            Schema::int8(),
            Value::Int8(-7),
            Schema::int16(),
            Value::Int16(-7),
        ),
        (
            Schema::int8(),
            Value::Int8(-7),
            Schema::float64(),
            Value::Float64(-7.0),
        ),
        (
            Schema::int16(),
            Value::Int16(300),
            Schema::int32(),
            Value::Int32(300),
        ),
        (
            Schema::int16(),
            Value::Int16(300),
            Schema::float32(),
            Value::Float32(300.0),
        ),
        (
            Schema::int32(),
            Value::Int32(70_000),
            Schema::int64(),
            Value::Int64(70_000),
        ),
        (
            Schema::int64(),
            Value::Int64(1 << 40),
            Schema::float32(),
            Value::Float32(1_099_511_627_776.0),
        ),
        (
            Schema::float32(),
            Value::Float32(0.1),
            Schema::float64(),
            Value::Float64(f64::from(0.1f32)),
        ),
        (
            Schema::boolean(),
            Value::Boolean(true),
            Schema::optional_boolean(),
            Value::Boolean(true),
        ),
        (
            Schema::bytes(),
            Value::Bytes(vec![1].into()),
            Schema::optional_bytes(),
            Value::Bytes(vec![1].into()),
        ),
    ];
    for (from, v, to, expected) in cases {
        assert_eq!(p(&from, v, &to).unwrap(), expected, "{from} -> {to}");
    }
}

#[test]
fn incompatible_schemas() {
    let e = p(&Schema::string(), Value::from("a"), &Schema::int32()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "Schema type mismatch. source type: STRING and target type: INT32"
    );
    let named = SchemaBuilder::int32().name("a").build().unwrap();
    let e = p(&named, Value::Int32(1), &Schema::int32()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "Schema name mismatch. source name: a and target name: null"
    );
    let with_param = SchemaBuilder::int32().parameter("k", "v").build().unwrap();
    let e = p(&Schema::int32(), Value::Int32(1), &with_param).unwrap_err();
    assert!(
        e.to_string().starts_with("Schema parameters not equal"),
        "{e}"
    );
    let same_param = SchemaBuilder::int32().parameter("k", "v").build().unwrap();
    assert_eq!(
        p(&with_param, Value::Int32(1), &same_param).unwrap(),
        Value::Int32(1)
    );
}

#[test]
fn nulls_and_defaults() {
    let with_default = SchemaBuilder::int32().default_value(5).build().unwrap();
    assert_eq!(
        p(&Schema::optional_int32(), Value::Null, &with_default).unwrap(),
        Value::Int32(5)
    );
    let optional_with_default = SchemaBuilder::int32()
        .optional()
        .default_value(5)
        .build()
        .unwrap();
    assert_eq!(
        p(
            &Schema::optional_int32(),
            Value::Null,
            &optional_with_default
        )
        .unwrap(),
        Value::Null,
        "an optional target keeps null"
    );
    let e = p(&Schema::int32(), Value::Null, &Schema::int64()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "expected INT64, got null (the target schema is required and has no default)"
    );
    let e = p(
        &Schema::optional_string(),
        Value::from("x"),
        &Schema::string(),
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "Writer schema is optional, however, target schema Schema{STRING} does not provide a default value."
    );
    assert_eq!(
        p(&Schema::string(), Value::from("x"), &Schema::string()).unwrap(),
        Value::from("x")
    );
}

#[test]
fn logical_values_keep_their_type() {
    let dec = Value::Decimal(Decimal::new(150, 2));
    assert_eq!(
        p(&decimal_schema(2), dec.clone(), &decimal_schema(2)).unwrap(),
        dec
    );
    let optional_dec = connect_api::logical::decimal_builder(2)
        .optional()
        .build()
        .unwrap();
    assert_eq!(
        p(&decimal_schema(2), dec.clone(), &optional_dec).unwrap(),
        dec
    );
    let optional_time = connect_api::logical::time_builder()
        .optional()
        .build()
        .unwrap();
    assert_eq!(
        p(&time_schema(), Value::Time(1000), &optional_time).unwrap(),
        Value::Time(1000)
    );
    assert!(p(&time_schema(), Value::Time(-1), &optional_time).is_err());
    let e = p(&Schema::int16(), Value::from("x"), &Schema::int32()).unwrap_err();
    assert_eq!(e.to_string(), "expected INT16, got STRING");
}

#[test]
fn structs_arrays_and_maps() {
    let source = SchemaBuilder::struct_()
        .field("id", Schema::int16())
        .field("note", Schema::optional_string())
        .field(
            "tags",
            SchemaBuilder::array(Schema::int8()).build().unwrap(),
        )
        .field(
            "counts",
            SchemaBuilder::map(Schema::string(), Schema::int32())
                .build()
                .unwrap(),
        )
        .build()
        .unwrap();
    let target = SchemaBuilder::struct_()
        .field("id", Schema::int64())
        .field("note", Schema::optional_string())
        .field(
            "tags",
            SchemaBuilder::array(Schema::float64()).build().unwrap(),
        )
        .field(
            "counts",
            SchemaBuilder::map(Schema::string(), Schema::int64())
                .build()
                .unwrap(),
        )
        .field("extra", Schema::optional_int8())
        .build()
        .unwrap();
    let mut s = Struct::new(source.clone()).unwrap();
    s.put("id", 7i16)
        .unwrap()
        .put("note", "hi")
        .unwrap()
        .put("tags", vec![Value::Int8(1), Value::Int8(2)])
        .unwrap()
        .put("counts", Value::string_map([("a", Value::Int32(3))]))
        .unwrap();
    let Value::Struct(out) = p(&source, Value::Struct(s), &target).unwrap() else {
        panic!("not a struct");
    };
    assert_eq!(out.schema(), &target);
    assert_eq!(out.get_int64("id").unwrap(), Some(7));
    assert_eq!(out.get_string("note").unwrap(), Some("hi"));
    assert_eq!(
        out.get_array("tags").unwrap(),
        Some(&[Value::Float64(1.0), Value::Float64(2.0)][..])
    );
    assert_eq!(
        out.get("counts").unwrap(),
        &Value::string_map([("a", Value::Int64(3))])
    );
    assert_eq!(out.get("extra").unwrap(), &Value::Null);
    out.validate().unwrap();

    // A required target field missing from the source is set to its
    // default (Kafka puts the default into the projected struct).
    let with_default = SchemaBuilder::struct_()
        .field("id", Schema::int64())
        .field(
            "country",
            SchemaBuilder::string().default_value("FR").build().unwrap(),
        )
        .build()
        .unwrap();
    let mut s = Struct::new(source.clone()).unwrap();
    s.put("id", 1i16)
        .unwrap()
        .put("tags", Vec::<Value>::new())
        .unwrap()
        .put("counts", Value::Map(vec![]))
        .unwrap();
    let Value::Struct(out) = p(&source, Value::Struct(s), &with_default).unwrap() else {
        panic!("not a struct");
    };
    assert_eq!(
        out.get_without_default("country").unwrap(),
        &Value::from("FR")
    );
    assert_eq!(out.values(), &[Value::Int64(1), Value::from("FR")]);

    let e = p(&source, Value::Int32(1), &target).unwrap_err();
    assert_eq!(e.to_string(), "expected STRUCT, got INT32");
    let arr = SchemaBuilder::array(Schema::int8()).build().unwrap();
    let wide = SchemaBuilder::array(Schema::int16()).build().unwrap();
    let e = p(&arr, Value::Int8(1), &wide).unwrap_err();
    assert_eq!(e.to_string(), "expected ARRAY, got INT8");
    let map = SchemaBuilder::map(Schema::int8(), Schema::int8())
        .build()
        .unwrap();
    let wide_map = SchemaBuilder::map(Schema::int16(), Schema::int8())
        .build()
        .unwrap();
    let e = p(&map, Value::Array(vec![]), &wide_map).unwrap_err();
    assert_eq!(e.to_string(), "expected MAP, got ARRAY");
    assert_eq!(
        p(
            &map,
            Value::Map(vec![(Value::Int8(1), Value::Int8(2))]),
            &wide_map
        )
        .unwrap(),
        Value::Map(vec![(Value::Int16(1), Value::Int8(2))])
    );
    let e = p(
        &map,
        Value::Map(vec![(Value::from("k"), Value::Int8(2))]),
        &wide_map,
    )
    .unwrap_err();
    assert_eq!(e.to_string(), "<key>: expected INT8, got STRING");
    let bare = SchemaBuilder::new(Type::Array).build().unwrap();
    let e = p(&bare, Value::Array(vec![]), &wide).unwrap_err();
    assert_eq!(e.to_string(), "Schema{ARRAY} has no value schema");
    let bare_map = SchemaBuilder::new(Type::Map).build().unwrap();
    let e = p(&bare_map, Value::Map(vec![]), &wide_map).unwrap_err();
    assert_eq!(e.to_string(), "Schema{MAP} has no key schema");
}
