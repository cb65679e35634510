//! Pins `Value`: equality as Kafka's `equals` (which every plugin test's
//! `assert_eq!` relies on), the accessors, and validation against schemas.

use connect_api::{Decimal, Schema, SchemaBuilder, Struct, Type, Value};

fn every_kind() -> Vec<Value> {
    let schema = SchemaBuilder::struct_()
        .field("a", Schema::int32())
        .build()
        .unwrap();
    let mut st = Struct::new(schema).unwrap();
    st.put("a", 1).unwrap();
    vec![
        Value::Null,
        Value::Int8(1),
        Value::Int16(1),
        Value::Int32(1),
        Value::Int64(1),
        Value::Float32(1.0),
        Value::Float64(1.0),
        Value::Boolean(true),
        Value::from("1"),
        Value::Bytes(vec![1].into()),
        Value::Array(vec![Value::Int32(1)]),
        Value::string_map([("a", Value::Int32(1))]),
        Value::Struct(st),
        Value::Decimal(Decimal::new(1, 0)),
        Value::Date(1),
        Value::Time(1),
        Value::Timestamp(1),
    ]
}

#[test]
fn each_kind_equals_itself_and_no_other_kind() {
    let all = every_kind();
    for (i, a) in all.iter().enumerate() {
        for (j, b) in all.iter().enumerate() {
            assert_eq!(a == b, i == j, "{a:?} vs {b:?}");
        }
        assert_eq!(a, &a.clone(), "a clone is equal: {a:?}");
    }
}

#[test]
fn same_kind_different_payload_is_unequal() {
    let other_struct = {
        let schema = SchemaBuilder::struct_()
            .field("a", Schema::int32())
            .build()
            .unwrap();
        let mut st = Struct::new(schema).unwrap();
        st.put("a", 2).unwrap();
        Value::Struct(st)
    };
    let others = vec![
        Value::Null,
        Value::Int8(2),
        Value::Int16(2),
        Value::Int32(2),
        Value::Int64(2),
        Value::Float32(2.0),
        Value::Float64(2.0),
        Value::Boolean(false),
        Value::from("2"),
        Value::Bytes(vec![2].into()),
        Value::Array(vec![Value::Int32(2)]),
        Value::string_map([("a", Value::Int32(2))]),
        other_struct,
        Value::Decimal(Decimal::new(2, 0)),
        Value::Date(2),
        Value::Time(2),
        Value::Timestamp(2),
    ];
    for (a, b) in every_kind().iter().zip(&others).skip(1) {
        assert_ne!(a, b);
        assert_ne!(b, a);
    }
}

#[test]
fn floats_compare_as_java_float_equals() {
    assert_eq!(Value::Float32(f32::NAN), Value::Float32(f32::NAN));
    assert_eq!(Value::Float64(f64::NAN), Value::Float64(f64::NAN));
    assert_ne!(Value::Float64(f64::NAN), Value::Float64(1.0));
    assert_ne!(Value::Float32(1.5), Value::Float32(f32::NAN));
    assert_eq!(Value::Float64(0.1 + 0.2), Value::Float64(0.1 + 0.2));
    assert_ne!(Value::Float64(0.1 + 0.2), Value::Float64(0.3));
    assert_ne!(Value::Float32(1.0), Value::Float64(1.0));
    // Java's Float.equals compares canonical bits: every NaN is equal,
    // whatever its payload (0/0 gives a negative NaN on x86).
    let other_nan = f64::from_bits(0xfff8_0000_0000_0001);
    assert!(other_nan.is_nan());
    assert_eq!(Value::Float64(other_nan), Value::Float64(f64::NAN));
    let other_nan32 = f32::from_bits(0xffc0_0001);
    assert!(other_nan32.is_nan());
    assert_eq!(Value::Float32(other_nan32), Value::Float32(f32::NAN));
}

#[test]
fn bytes_compare_by_content() {
    assert_eq!(
        Value::Bytes(vec![1, 2, 3].into()),
        Value::from(vec![1u8, 2, 3])
    );
    assert_ne!(
        Value::Bytes(vec![1, 2, 3].into()),
        Value::Bytes(vec![1, 2].into())
    );
    assert_ne!(Value::Bytes(vec![].into()), Value::Null);
}

#[test]
fn decimals_compare_scale_too() {
    assert_eq!(
        Value::Decimal(Decimal::new(150, 2)),
        Value::Decimal("1.50".parse().unwrap())
    );
    assert_ne!(
        Value::Decimal(Decimal::new(15, 1)),
        Value::Decimal(Decimal::new(150, 2))
    );
}

#[test]
fn arrays_compare_in_order() {
    let a = Value::Array(vec![Value::Int8(1), Value::Int8(2)]);
    assert_eq!(a, Value::Array(vec![Value::Int8(1), Value::Int8(2)]));
    assert_ne!(a, Value::Array(vec![Value::Int8(2), Value::Int8(1)]));
    assert_ne!(a, Value::Array(vec![Value::Int8(1)]));
}

#[test]
fn maps_compare_as_multisets_of_entries() {
    let ab = Value::string_map([("a", Value::Int32(1)), ("b", Value::Int32(2))]);
    let ba = Value::string_map([("b", Value::Int32(2)), ("a", Value::Int32(1))]);
    assert_eq!(ab, ba);
    assert_eq!(ab, ab.clone());
    // Same length, different entries.
    let ac = Value::string_map([("a", Value::Int32(1)), ("c", Value::Int32(2))]);
    assert_ne!(ab, ac);
    assert_ne!(ac, ab);
    let one = Value::string_map([("a", Value::Int32(1))]);
    let other_value = Value::string_map([("a", Value::Int32(9))]);
    assert_ne!(one, other_value);
    assert_ne!(one, ab);
    assert_ne!(ab, one);
    // Duplicates are matched once each.
    let aa = Value::string_map([("a", Value::Int32(1)), ("a", Value::Int32(1))]);
    assert_ne!(aa, ab);
    assert_ne!(ab, aa);
    assert_eq!(aa, aa.clone());
    assert_eq!(Value::Map(vec![]), Value::Map(vec![]));
    assert_ne!(Value::Map(vec![]), one);
    // Non-string keys.
    let ints = Value::Map(vec![
        (Value::Int8(1), Value::Null),
        (Value::Int8(2), Value::from("x")),
    ]);
    let ints_rev = Value::Map(vec![
        (Value::Int8(2), Value::from("x")),
        (Value::Int8(1), Value::Null),
    ]);
    assert_eq!(ints, ints_rev);
}

#[test]
fn structs_compare_schema_and_values() {
    let schema = SchemaBuilder::struct_()
        .field("a", Schema::int32())
        .field("b", Schema::optional_string())
        .build()
        .unwrap();
    let mut x = Struct::new(schema.clone()).unwrap();
    x.put("a", 1).unwrap();
    let mut y = Struct::new(schema.clone()).unwrap();
    y.put("a", 1).unwrap();
    assert_eq!(Value::Struct(x.clone()), Value::Struct(y.clone()));
    y.put("b", "set").unwrap();
    assert_ne!(Value::Struct(x.clone()), Value::Struct(y));
    let renamed = SchemaBuilder::struct_()
        .name("other")
        .field("a", Schema::int32())
        .field("b", Schema::optional_string())
        .build()
        .unwrap();
    let mut z = Struct::new(renamed).unwrap();
    z.put("a", 1).unwrap();
    assert_ne!(Value::Struct(x), Value::Struct(z));
}

#[test]
fn null_and_type_names() {
    assert!(Value::Null.is_null());
    assert!(Value::default().is_null());
    let names: Vec<_> = every_kind().iter().map(Value::type_name).collect();
    assert_eq!(
        names,
        [
            "null",
            "INT8",
            "INT16",
            "INT32",
            "INT64",
            "FLOAT32",
            "FLOAT64",
            "BOOLEAN",
            "STRING",
            "BYTES",
            "ARRAY",
            "MAP",
            "STRUCT",
            "Decimal",
            "Date",
            "Time",
            "Timestamp"
        ]
    );
    for v in every_kind().iter().skip(1) {
        assert!(!v.is_null(), "{v:?}");
    }
}

#[test]
fn schema_types_of_values() {
    let types: Vec<_> = every_kind().iter().map(Value::schema_type).collect();
    assert_eq!(
        types,
        [
            None,
            Some(Type::Int8),
            Some(Type::Int16),
            Some(Type::Int32),
            Some(Type::Int64),
            Some(Type::Float32),
            Some(Type::Float64),
            Some(Type::Boolean),
            Some(Type::String),
            Some(Type::Bytes),
            Some(Type::Array),
            Some(Type::Map),
            Some(Type::Struct),
            Some(Type::Bytes),
            Some(Type::Int32),
            Some(Type::Int32),
            Some(Type::Int64),
        ]
    );
}

#[test]
fn accessors_return_only_their_kind() {
    let all = every_kind();
    for v in &all {
        assert_eq!(v.as_str().is_some(), matches!(v, Value::String(_)));
        assert_eq!(v.as_struct().is_some(), matches!(v, Value::Struct(_)));
        assert_eq!(v.as_map().is_some(), matches!(v, Value::Map(_)));
        assert_eq!(v.as_array().is_some(), matches!(v, Value::Array(_)));
        assert_eq!(v.as_bytes().is_some(), matches!(v, Value::Bytes(_)));
    }
    assert_eq!(Value::from("hello").as_str(), Some("hello"));
    assert_eq!(
        Value::Bytes(vec![7, 8].into()).as_bytes(),
        Some(&[7u8, 8][..])
    );
    assert_eq!(
        Value::Array(vec![Value::Int8(3)]).as_array(),
        Some(&[Value::Int8(3)][..])
    );
    let m = Value::string_map([("k", Value::Boolean(true))]);
    assert_eq!(
        m.as_map(),
        Some(&[(Value::from("k"), Value::Boolean(true))][..])
    );
    let s = all[12].as_struct().unwrap();
    assert_eq!(s.get_int32("a").unwrap(), Some(1));
}

#[test]
fn as_i64_widens_integers_only() {
    assert_eq!(Value::Int8(-8).as_i64(), Some(-8));
    assert_eq!(Value::Int16(300).as_i64(), Some(300));
    assert_eq!(Value::Int32(-70_000).as_i64(), Some(-70_000));
    assert_eq!(Value::Int64(i64::MAX).as_i64(), Some(i64::MAX));
    for v in [
        Value::Null,
        Value::Float64(1.0),
        Value::from("5"),
        Value::Date(5),
        Value::Timestamp(5),
        Value::Boolean(true),
    ] {
        assert_eq!(v.as_i64(), None, "{v:?}");
    }
}

#[test]
fn map_get_finds_string_keys() {
    let m = Value::string_map([("a", Value::Int32(1)), ("b", Value::from("two"))]);
    assert_eq!(m.map_get("a"), Some(&Value::Int32(1)));
    assert_eq!(m.map_get("b"), Some(&Value::from("two")));
    assert_eq!(m.map_get("c"), None);
    let int_keys = Value::Map(vec![(Value::Int32(1), Value::Int32(1))]);
    assert_eq!(int_keys.map_get("1"), None);
    assert_eq!(Value::from("a").map_get("a"), None);
    assert_eq!(Value::Null.map_get("a"), None);
}

#[test]
fn conversions_from_rust_values() {
    assert_eq!(Value::from(1i8), Value::Int8(1));
    assert_eq!(Value::from(1i16), Value::Int16(1));
    assert_eq!(Value::from(1i32), Value::Int32(1));
    assert_eq!(Value::from(1i64), Value::Int64(1));
    assert_eq!(Value::from(1.5f32), Value::Float32(1.5));
    assert_eq!(Value::from(1.5f64), Value::Float64(1.5));
    assert_eq!(Value::from(true), Value::Boolean(true));
    assert_eq!(Value::from(String::from("s")), Value::String("s".into()));
    assert_eq!(Value::from(Some(3i32)), Value::Int32(3));
    assert_eq!(Value::from(None::<i32>), Value::Null);
    assert_eq!(
        Value::string_map([("x", Value::Null)]),
        Value::Map(vec![(Value::String("x".into()), Value::Null)])
    );
}

#[test]
fn display_is_convert_to_string() {
    assert_eq!(Value::Int32(5).to_string(), "5");
    assert_eq!(Value::from("raw").to_string(), "raw");
    assert_eq!(Value::Array(vec![Value::from("q")]).to_string(), r#"["q"]"#);
}

#[test]
fn validation_of_every_primitive() {
    let pairs = [
        (Schema::int8(), Value::Int8(1)),
        (Schema::int16(), Value::Int16(1)),
        (Schema::int32(), Value::Int32(1)),
        (Schema::int64(), Value::Int64(1)),
        (Schema::float32(), Value::Float32(1.0)),
        (Schema::float64(), Value::Float64(1.0)),
        (Schema::boolean(), Value::Boolean(true)),
        (Schema::string(), Value::from("s")),
        (Schema::bytes(), Value::Bytes(vec![1].into())),
    ];
    for (i, (schema, _)) in pairs.iter().enumerate() {
        for (j, (_, value)) in pairs.iter().enumerate() {
            let r = schema.validate_value(value);
            assert_eq!(r.is_ok(), i == j, "{schema} {value:?}");
            if i != j {
                assert_eq!(
                    r.unwrap_err().to_string(),
                    format!("expected {}, got {}", schema.ty(), value.type_name())
                );
            }
        }
    }
    let e = Schema::int32().validate_value(&Value::Null).unwrap_err();
    assert_eq!(
        e.to_string(),
        "expected INT32, got null (the field is required)"
    );
    assert!(Schema::optional_int32()
        .validate_value(&Value::Null)
        .is_ok());
}

#[test]
fn validation_of_logical_values() {
    use connect_api::logical::{date_schema, decimal_schema, time_schema, timestamp_schema};
    assert!(time_schema().validate_value(&Value::Time(1000)).is_ok());
    assert!(time_schema()
        .validate_value(&Value::Time(86_400_000))
        .is_err());
    assert!(time_schema().validate_value(&Value::Time(-1)).is_err());
    assert!(timestamp_schema()
        .validate_value(&Value::Timestamp(-5))
        .is_ok());
    let e = timestamp_schema()
        .validate_value(&Value::Int64(5))
        .unwrap_err();
    assert_eq!(e.to_string(), "expected Timestamp, got INT64");
    let e = date_schema().validate_value(&Value::Time(5)).unwrap_err();
    assert_eq!(e.to_string(), "expected Date, got Time");
    let e = decimal_schema(2)
        .validate_value(&Value::Decimal(Decimal::new(1, 1)))
        .unwrap_err();
    assert!(e.to_string().contains("mismatching scale"), "{e}");
    // A plain INT32 schema does not take a Date value.
    let e = Schema::int32().validate_value(&Value::Date(1)).unwrap_err();
    assert_eq!(e.to_string(), "expected INT32, got Date");
}

#[test]
fn validation_of_containers() {
    let map = SchemaBuilder::map(Schema::string(), Schema::int32())
        .build()
        .unwrap();
    assert!(map
        .validate_value(&Value::string_map([("a", Value::Int32(1))]))
        .is_ok());
    let e = map
        .validate_value(&Value::string_map([("a", Value::from("x"))]))
        .unwrap_err();
    assert_eq!(e.to_string(), "[a]: expected INT32, got STRING");
    let e = map
        .validate_value(&Value::Map(vec![(Value::Int32(1), Value::Int32(1))]))
        .unwrap_err();
    assert_eq!(e.to_string(), "<key>: expected STRING, got INT32");
    let e = map.validate_value(&Value::Array(vec![])).unwrap_err();
    assert_eq!(e.to_string(), "expected MAP, got ARRAY");
    let arr = SchemaBuilder::array(Schema::optional_int8())
        .build()
        .unwrap();
    assert!(arr
        .validate_value(&Value::Array(vec![Value::Int8(1), Value::Null]))
        .is_ok());
    // Map and array schemas built without their inner schemas.
    let bare_map = SchemaBuilder::new(Type::Map).build().unwrap();
    let e = bare_map.validate_value(&Value::Map(vec![])).unwrap_err();
    assert_eq!(e.to_string(), "map schema has no key or value schema");
    let bare_array = SchemaBuilder::new(Type::Array).build().unwrap();
    let e = bare_array
        .validate_value(&Value::Array(vec![]))
        .unwrap_err();
    assert_eq!(e.to_string(), "array schema has no value schema");
}

#[test]
fn nested_structs_validate_deeply_but_put_shallowly() {
    let inner = SchemaBuilder::struct_()
        .field("zip", Schema::int32())
        .build()
        .unwrap();
    let outer = SchemaBuilder::struct_()
        .field("address", inner.clone())
        .build()
        .unwrap();
    let incomplete = Struct::new(inner.clone()).unwrap();
    // Kafka's Struct.put accepts a struct that is filled in later.
    let mut o = Struct::new(outer.clone()).unwrap();
    o.put("address", incomplete.clone()).unwrap();
    let e = outer.validate_value(&Value::Struct(o)).unwrap_err();
    assert_eq!(
        e.to_string(),
        "address.zip: expected INT32, got null (the field is required)"
    );
    assert!(inner
        .validate_value(&Value::Struct(incomplete.clone()))
        .is_err());
    let mut complete = incomplete;
    complete.put("zip", 75001).unwrap();
    assert!(inner.validate_value(&Value::Struct(complete)).is_ok());
    let other = SchemaBuilder::struct_()
        .field("zip", Schema::int64())
        .build()
        .unwrap();
    let e = inner
        .validate_value(&Value::Struct(Struct::new(other).unwrap()))
        .unwrap_err();
    assert!(
        e.to_string().starts_with("Struct schemas do not match"),
        "{e}"
    );
}
