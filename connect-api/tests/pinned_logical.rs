//! Pins the logical types (Decimal, Date, Time, Timestamp) as Kafka defines
//! them, and floats written as Java writes them.

use connect_api::java_number::JavaNumber;
use connect_api::logical::{
    self, date_from_millis, date_to_millis, decimal_from_logical, decimal_scale,
    decimal_to_logical, from_primitive, time_from_millis, to_primitive, DATE_NAME, DECIMAL_NAME,
    MILLIS_PER_DAY, TIMESTAMP_NAME, TIME_NAME,
};
use connect_api::{Decimal, LogicalType, Schema, SchemaBuilder, Type, Value};

#[test]
fn logical_schemas_as_kafka() {
    let cases = [
        (
            logical::decimal_schema(3),
            DECIMAL_NAME,
            Type::Bytes,
            LogicalType::Decimal,
        ),
        (
            logical::date_schema(),
            DATE_NAME,
            Type::Int32,
            LogicalType::Date,
        ),
        (
            logical::time_schema(),
            TIME_NAME,
            Type::Int32,
            LogicalType::Time,
        ),
        (
            logical::timestamp_schema(),
            TIMESTAMP_NAME,
            Type::Int64,
            LogicalType::Timestamp,
        ),
    ];
    for (schema, name, ty, logical_type) in cases {
        assert_eq!(schema.name(), Some(name));
        assert_eq!(schema.ty(), ty);
        assert_eq!(schema.version(), Some(1));
        assert!(!schema.is_optional());
        assert_eq!(LogicalType::of(&schema), Some(logical_type));
        let other_type = SchemaBuilder::string().name(name).build().unwrap();
        assert_eq!(LogicalType::of(&other_type), None, "{name}");
    }
    assert_eq!(logical::decimal_schema(3).parameter("scale"), Some("3"));
    assert_eq!(
        logical::decimal_builder(-2).build().unwrap(),
        logical::decimal_schema(-2)
    );
    assert_eq!(
        logical::date_builder().build().unwrap(),
        logical::date_schema()
    );
    assert_eq!(
        logical::time_builder().build().unwrap(),
        logical::time_schema()
    );
    assert_eq!(
        logical::timestamp_builder().build().unwrap(),
        logical::timestamp_schema()
    );
    assert_eq!(LogicalType::of(&Schema::int32()), None);
    let unknown = SchemaBuilder::int32().name("x.Y").build().unwrap();
    assert_eq!(LogicalType::of(&unknown), None);
}

#[test]
fn decimal_accessors_and_bytes() {
    let d = Decimal::new(-12_345, 2);
    assert_eq!(d.scale(), 2);
    assert_eq!(d.unscaled(), &num_bigint_value(-12_345));
    assert_eq!(d.unscaled_bytes(), vec![0xcf, 0xc7]);
    assert_eq!(Decimal::from_unscaled_bytes(&[0xcf, 0xc7], 2), d);
    assert_eq!(Decimal::new(128, 0).unscaled_bytes(), vec![0x00, 0x80]);
    assert_eq!(
        Decimal::from_unscaled_bytes(&[0x80], 0),
        Decimal::new(-128, 0)
    );
    assert_eq!(d.to_f64(), -123.45);
    assert_eq!(Decimal::new(5, -3).to_f64(), 5000.0);
}

fn num_bigint_value(v: i64) -> connect_api::num_bigint::BigInt {
    connect_api::num_bigint::BigInt::from(v)
}

#[test]
fn decimal_text_as_java_big_decimal() {
    for (d, s) in [
        (Decimal::new(0, 0), "0"),
        (Decimal::new(-7, 0), "-7"),
        (Decimal::new(123, 0), "123"),
        (Decimal::new(15, 2), "0.15"),
        (Decimal::new(-15, 2), "-0.15"),
        (Decimal::new(5, 1), "0.5"),
        (Decimal::new(12_345, 2), "123.45"),
        (Decimal::new(1, 6), "0.000001"),
        (Decimal::new(12, 7), "0.0000012"),
        (Decimal::new(1, 7), "1E-7"),
        (Decimal::new(-15, 10), "-1.5E-9"),
        (Decimal::new(1, -3), "1E+3"),
        (Decimal::new(12, -1), "1.2E+2"),
        (Decimal::new(0, 2), "0.00"),
        (Decimal::new(0, -2), "0E+2"),
    ] {
        assert_eq!(d.to_string(), s, "{d:?}");
        assert_eq!(s.parse::<Decimal>().unwrap(), d, "{s}");
    }
    for (s, unscaled, scale) in [
        ("+1.50", 150, 2),
        ("1e3", 1, -3),
        ("1.5E-3", 15, 4),
        ("-.5", -5, 1),
        ("5.", 5, 0),
        (" 42 ", 42, 0),
    ] {
        assert_eq!(
            s.parse::<Decimal>().unwrap(),
            Decimal::new(unscaled, scale),
            "{s}"
        );
    }
    for bad in [
        "", ".", "-", "1a", "a1", "1.a", "a.1", "1.5.5", "1e", "1e1.5", "e1", "1 2", "+-1",
    ] {
        let e = bad.parse::<Decimal>().unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("'{bad}' is not a valid decimal number")
        );
    }
}

#[test]
fn decimal_encoding_follows_the_schema_scale() {
    let schema = logical::decimal_schema(2);
    assert_eq!(decimal_scale(&schema).unwrap(), 2);
    assert_eq!(decimal_scale(&logical::decimal_schema(-4)).unwrap(), -4);
    assert_eq!(
        decimal_from_logical(&schema, &Decimal::new(-200, 2)).unwrap(),
        vec![0xff, 0x38]
    );
    let e = decimal_from_logical(&schema, &Decimal::new(2, 0)).unwrap_err();
    assert_eq!(
        e.to_string(),
        "Decimal value has mismatching scale for given Decimal schema: value scale 0 != schema scale 2"
    );
    assert_eq!(
        decimal_to_logical(&schema, &[0x01, 0x00]).unwrap(),
        Decimal::new(256, 2)
    );
    let no_scale = SchemaBuilder::bytes().name(DECIMAL_NAME).build().unwrap();
    assert_eq!(
        decimal_scale(&no_scale).unwrap_err().to_string(),
        "Invalid Decimal schema: scale parameter not found."
    );
    let bad_scale = SchemaBuilder::bytes()
        .name(DECIMAL_NAME)
        .parameter("scale", "two")
        .build()
        .unwrap();
    assert_eq!(
        decimal_scale(&bad_scale).unwrap_err().to_string(),
        "Invalid Decimal schema: scale 'two' is not an integer"
    );
    assert!(decimal_to_logical(&no_scale, &[1]).is_err());
}

#[test]
fn dates_and_times_in_millis() {
    assert_eq!(date_to_millis(0), 0);
    assert_eq!(date_to_millis(3), 3 * MILLIS_PER_DAY);
    assert_eq!(date_to_millis(-2), -2 * MILLIS_PER_DAY);
    assert_eq!(date_from_millis(0).unwrap(), 0);
    assert_eq!(date_from_millis(5 * MILLIS_PER_DAY).unwrap(), 5);
    let e = date_from_millis(-1).unwrap_err();
    assert_eq!(
        e.to_string(),
        "Kafka Connect Date type should not have any time fields set to non-zero values."
    );
    assert!(date_from_millis(i64::MAX - i64::MAX % MILLIS_PER_DAY).is_err());
    assert_eq!(time_from_millis(0).unwrap(), 0);
    assert_eq!(time_from_millis(MILLIS_PER_DAY - 1).unwrap(), 86_399_999);
    let e = time_from_millis(-1).unwrap_err();
    assert_eq!(
        e.to_string(),
        "Kafka Connect Time type should not have any date fields set to non-zero values."
    );
}

#[test]
fn primitive_encodings() {
    let dec = logical::decimal_schema(1);
    assert_eq!(
        to_primitive(&dec, &Value::Decimal(Decimal::new(5, 1))).unwrap(),
        Value::Bytes(vec![5].into())
    );
    assert!(to_primitive(&dec, &Value::Decimal(Decimal::new(5, 2))).is_err());
    assert_eq!(
        to_primitive(&logical::date_schema(), &Value::Date(4)).unwrap(),
        Value::Int32(4)
    );
    assert_eq!(
        to_primitive(&logical::time_schema(), &Value::Time(4)).unwrap(),
        Value::Int32(4)
    );
    assert_eq!(
        to_primitive(&logical::timestamp_schema(), &Value::Timestamp(4)).unwrap(),
        Value::Int64(4)
    );
    assert_eq!(
        to_primitive(&Schema::string(), &Value::from("s")).unwrap(),
        Value::from("s")
    );
    assert_eq!(
        from_primitive(&dec, Value::Bytes(vec![5].into())).unwrap(),
        Value::Decimal(Decimal::new(5, 1))
    );
    assert_eq!(
        from_primitive(&logical::date_schema(), Value::Int32(4)).unwrap(),
        Value::Date(4)
    );
    assert_eq!(
        from_primitive(&logical::time_schema(), Value::Int32(4)).unwrap(),
        Value::Time(4)
    );
    assert!(from_primitive(&logical::time_schema(), Value::Int32(-4)).is_err());
    assert_eq!(
        from_primitive(&logical::timestamp_schema(), Value::Int64(4)).unwrap(),
        Value::Timestamp(4)
    );
    assert_eq!(
        from_primitive(&Schema::int32(), Value::Int32(4)).unwrap(),
        Value::Int32(4)
    );
    assert_eq!(
        from_primitive(&logical::date_schema(), Value::Null).unwrap(),
        Value::Null
    );
}

#[test]
fn doubles_as_java() {
    for (v, java) in [
        (1.0, "1.0"),
        (-1.0, "-1.0"),
        (123.456, "123.456"),
        (-0.001, "-0.001"),
        (0.0015, "0.0015"),
        (1234567.125, "1234567.125"),
        (9_999_999.5, "9999999.5"),
        (1e7, "1.0E7"),
        (-1.5e7, "-1.5E7"),
        (1.25e-4, "1.25E-4"),
        (-1e-4, "-1.0E-4"),
        (2e22, "2.0E22"),
        (1.0 / 3.0, "0.3333333333333333"),
        (-2.0 / 3.0, "-0.6666666666666666"),
        (100.5, "100.5"),
        (0.1, "0.1"),
        (0.123_456_789, "0.123456789"),
        (5e-324, "4.9E-324"),
        (f64::NAN, "NaN"),
        (f64::INFINITY, "Infinity"),
        (f64::NEG_INFINITY, "-Infinity"),
        (0.0, "0.0"),
        (-0.0, "-0.0"),
    ] {
        let n = JavaNumber::from_f64(v);
        assert_eq!(n.as_str(), java, "{v:e}");
        assert_eq!(n.to_string(), java);
        assert_eq!(format!("{n:?}"), format!("{java:?}"));
    }
}

#[test]
fn floats_as_java() {
    for (v, java) in [
        (1.0f32, "1.0"),
        (-1.5, "-1.5"),
        (0.1, "0.1"),
        (-0.001, "-0.001"),
        (123.456, "123.456"),
        (1e7, "1.0E7"),
        (-1.5e-5, "-1.5E-5"),
        (3.4028235e38, "3.4028235E38"),
        (-3.4028235e38, "-3.4028235E38"),
        (1.4e-45, "1.4E-45"),
        (f32::INFINITY, "Infinity"),
        (f32::NEG_INFINITY, "-Infinity"),
        (0.0, "0.0"),
    ] {
        assert_eq!(JavaNumber::from_f32(v).as_str(), java, "{v:e}");
    }
}
