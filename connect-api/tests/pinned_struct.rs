//! Pins `Struct` (Kafka's `Struct`): put validates, get falls back to the
//! field default, typed getters, validation, equality.

use connect_api::{Decimal, Schema, SchemaBuilder, Struct, Value};

fn schema() -> Schema {
    SchemaBuilder::struct_()
        .field("i8", Schema::optional_int8())
        .field("i16", Schema::optional_int16())
        .field("i32", Schema::optional_int32())
        .field("i64", Schema::optional_int64())
        .field("f32", Schema::optional_float32())
        .field("f64", Schema::optional_float64())
        .field("bool", Schema::optional_boolean())
        .field("str", Schema::optional_string())
        .field("bytes", Schema::optional_bytes())
        .field(
            "dec",
            connect_api::logical::decimal_builder(2)
                .optional()
                .build()
                .unwrap(),
        )
        .field(
            "arr",
            SchemaBuilder::array(Schema::int32())
                .optional()
                .build()
                .unwrap(),
        )
        .field(
            "map",
            SchemaBuilder::map(Schema::string(), Schema::int32())
                .optional()
                .build()
                .unwrap(),
        )
        .field(
            "inner",
            SchemaBuilder::struct_()
                .field("x", Schema::int32())
                .optional()
                .build()
                .unwrap(),
        )
        .build()
        .unwrap()
}

fn inner() -> Schema {
    SchemaBuilder::struct_()
        .field("x", Schema::int32())
        .build()
        .unwrap()
}

fn full() -> Struct {
    let mut inner_value = Struct::new(schema().field("inner").unwrap().schema().clone()).unwrap();
    inner_value.put("x", 5).unwrap();
    let mut s = Struct::new(schema()).unwrap();
    s.put("i8", 1i8)
        .unwrap()
        .put("i16", 2i16)
        .unwrap()
        .put("i32", 3i32)
        .unwrap()
        .put("i64", 4i64)
        .unwrap()
        .put("f32", 1.5f32)
        .unwrap()
        .put("f64", 2.5f64)
        .unwrap()
        .put("bool", true)
        .unwrap()
        .put("str", "s")
        .unwrap()
        .put("bytes", vec![9u8])
        .unwrap()
        .put("dec", Decimal::new(150, 2))
        .unwrap()
        .put("arr", vec![Value::Int32(7)])
        .unwrap()
        .put("map", Value::string_map([("k", Value::Int32(8))]))
        .unwrap()
        .put("inner", inner_value)
        .unwrap();
    s
}

#[test]
fn typed_getters_read_their_type() {
    let s = full();
    assert_eq!(s.get_int8("i8").unwrap(), Some(1));
    assert_eq!(s.get_int16("i16").unwrap(), Some(2));
    assert_eq!(s.get_int32("i32").unwrap(), Some(3));
    assert_eq!(s.get_int64("i64").unwrap(), Some(4));
    assert_eq!(s.get_float32("f32").unwrap(), Some(1.5));
    assert_eq!(s.get_float64("f64").unwrap(), Some(2.5));
    assert_eq!(s.get_boolean("bool").unwrap(), Some(true));
    assert_eq!(s.get_string("str").unwrap(), Some("s"));
    assert_eq!(s.get_bytes("bytes").unwrap(), Some(&[9u8][..]));
    assert_eq!(s.get_decimal("dec").unwrap(), Some(Decimal::new(150, 2)));
    assert_eq!(s.get_array("arr").unwrap(), Some(&[Value::Int32(7)][..]));
    assert_eq!(
        s.get_map("map").unwrap(),
        Some(&[(Value::from("k"), Value::Int32(8))][..])
    );
    assert_eq!(
        s.get_struct("inner")
            .unwrap()
            .unwrap()
            .get_int32("x")
            .unwrap(),
        Some(5)
    );
    s.validate().unwrap();
}

#[test]
fn typed_getters_give_none_for_null_and_an_error_for_another_type() {
    let empty = Struct::new(schema()).unwrap();
    assert_eq!(empty.get_string("str").unwrap(), None);
    assert_eq!(empty.get_bytes("bytes").unwrap(), None);
    assert_eq!(empty.get_struct("inner").unwrap(), None);
    assert_eq!(empty.get_array("arr").unwrap(), None);
    assert_eq!(empty.get_map("map").unwrap(), None);
    assert_eq!(empty.get_int32("i32").unwrap(), None);
    let s = full();
    let e = s.get_string("i32").unwrap_err();
    assert_eq!(e.to_string(), "i32: expected STRING, got INT32");
    let e = s.get_bytes("str").unwrap_err();
    assert_eq!(e.to_string(), "str: expected BYTES, got STRING");
    let e = s.get_struct("str").unwrap_err();
    assert_eq!(e.to_string(), "str: expected STRUCT, got STRING");
    let e = s.get_array("str").unwrap_err();
    assert_eq!(e.to_string(), "str: expected ARRAY, got STRING");
    let e = s.get_map("str").unwrap_err();
    assert_eq!(e.to_string(), "str: expected MAP, got STRING");
    let e = s.get_int64("i32").unwrap_err();
    assert!(e.to_string().starts_with("i32: expected "), "{e}");
    let e = s.get_string("nope").unwrap_err();
    assert_eq!(e.to_string(), "nope is not a valid field name");
}

#[test]
fn put_validates_and_get_reads_back() {
    let mut s = Struct::new(schema()).unwrap();
    let e = s.put("i32", "x").unwrap_err();
    assert_eq!(e.to_string(), "i32: expected INT32, got STRING");
    assert_eq!(s.get("i32").unwrap(), &Value::Null);
    s.put("i32", 9).unwrap();
    assert_eq!(s.get("i32").unwrap(), &Value::Int32(9));
    assert_eq!(s.get_without_default("i32").unwrap(), &Value::Int32(9));
    assert_eq!(s.get_at(2), Some(&Value::Int32(9)));
    assert_eq!(s.get_at(99), None);
    assert!(s.get("nope").is_err());
    assert!(s.get_without_default("nope").is_err());
    let e = s.put("nope", 1).unwrap_err();
    assert_eq!(e.to_string(), "nope is not a valid field name");
}

#[test]
fn put_at_validates_by_position() {
    let mut s = Struct::new(schema()).unwrap();
    s.put_at(2, 11).unwrap();
    assert_eq!(s.get_int32("i32").unwrap(), Some(11));
    let e = s.put_at(2, "x").unwrap_err();
    assert_eq!(e.to_string(), "i32: expected INT32, got STRING");
    assert_eq!(s.get_int32("i32").unwrap(), Some(11));
    let e = s.put_at(99, 1).unwrap_err();
    assert_eq!(e.to_string(), "no field at index 99");
    s.put_at_unchecked(0, Value::Int8(4));
    assert_eq!(s.get_int8("i8").unwrap(), Some(4));
    s.put_at_unchecked(99, Value::Int8(4));
    assert_eq!(s.values().len(), schema().field_count());
}

#[test]
fn unset_fields_read_as_their_default() {
    let schema = SchemaBuilder::struct_()
        .field("name", Schema::string())
        .field(
            "age",
            SchemaBuilder::int32().default_value(18).build().unwrap(),
        )
        .build()
        .unwrap();
    let mut s = Struct::new(schema.clone()).unwrap();
    assert_eq!(s.get("age").unwrap(), &Value::Int32(18));
    assert_eq!(s.get_without_default("age").unwrap(), &Value::Null);
    assert_eq!(s.get("name").unwrap(), &Value::Null);
    let age = schema.field("age").unwrap();
    assert_eq!(s.value_or_default(age), &Value::Int32(18));
    s.put("age", 40).unwrap();
    assert_eq!(s.value_or_default(age), &Value::Int32(40));
    // A required field with a default is valid when unset.
    s.put("name", "Ada").unwrap();
    let fresh = {
        let mut f = Struct::new(schema).unwrap();
        f.put("name", "Ada").unwrap();
        f
    };
    fresh.validate().unwrap();
}

#[test]
fn validate_reports_missing_required_and_bad_values() {
    let schema = SchemaBuilder::struct_()
        .field("a", Schema::optional_int32())
        .field("b", Schema::string())
        .build()
        .unwrap();
    let s = Struct::new(schema.clone()).unwrap();
    let e = s.validate().unwrap_err();
    assert_eq!(
        e.to_string(),
        "b: expected STRING, got null (the field is required)"
    );
    let bad = Struct::from_parts(schema.clone(), vec![Value::from("x"), Value::from("y")]).unwrap();
    let e = bad.validate().unwrap_err();
    assert_eq!(e.to_string(), "a: expected INT32, got STRING");
    let good = Struct::from_parts(schema, vec![Value::Null, Value::from("y")]).unwrap();
    good.validate().unwrap();
}

#[test]
fn from_parts_checks_shape() {
    let schema = SchemaBuilder::struct_()
        .field("a", Schema::int32())
        .build()
        .unwrap();
    let s = Struct::from_parts(schema.clone(), vec![Value::Int32(1)]).unwrap();
    assert_eq!(s.get_int32("a").unwrap(), Some(1));
    assert_eq!(s.schema(), &schema);
    let e = Struct::from_parts(schema.clone(), vec![]).unwrap_err();
    assert_eq!(e.to_string(), "Schema{STRUCT} has 1 fields, got 0 values");
    let e = Struct::from_parts(Schema::int32(), vec![]).unwrap_err();
    assert_eq!(e.to_string(), "Not a struct schema: Schema{INT32}");
    let e = Struct::new(Schema::string()).unwrap_err();
    assert_eq!(e.to_string(), "Not a struct schema: Schema{STRING}");
    let (back_schema, values) = s.clone().into_parts();
    assert_eq!(back_schema, schema);
    assert_eq!(values, [Value::Int32(1)]);
    assert_eq!(s.values(), &[Value::Int32(1)]);
}

#[test]
fn equality_needs_equal_schema_and_values() {
    assert_eq!(full(), full());
    let mut other = full();
    other.put("i8", 2i8).unwrap();
    assert_ne!(full(), other);
    let same_fields_other_name = schema().to_builder().build().unwrap();
    assert_eq!(
        Struct::new(same_fields_other_name).unwrap(),
        Struct::new(schema()).unwrap()
    );
    let renamed = SchemaBuilder::struct_()
        .name("renamed")
        .field("x", Schema::int32())
        .build()
        .unwrap();
    let plain = inner();
    let mut a = Struct::new(renamed).unwrap();
    a.put("x", 1).unwrap();
    let mut b = Struct::new(plain).unwrap();
    b.put("x", 1).unwrap();
    assert_ne!(a, b);
    assert_ne!(b, a);
}
