//! Pins `values`: rendering as Kafka's `Values.convertToString`, parsing as
//! `Values.parseString`, and the `convert_to_*` coercions.

use connect_api::logical::{self, MILLIS_PER_DAY};
use connect_api::values::{self, parse_string};
use connect_api::{Decimal, Schema, SchemaBuilder, Struct, Value};

fn parsed(input: &str) -> (Option<Schema>, Value) {
    let sv = parse_string(input);
    (sv.schema, sv.value)
}

fn value(input: &str) -> Value {
    parse_string(input).value
}

fn is_string(input: &str) {
    assert_eq!(
        parsed(input),
        (Some(Schema::string()), Value::from(input)),
        "{input:?} should stay a STRING"
    );
}

fn text(v: &Value) -> String {
    values::convert_to_string(v)
}

fn days_in_month(y: i64, m: u32) -> u32 {
    match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ if y % 4 == 0 && (y % 100 != 0 || y % 400 == 0) => 29,
        _ => 28,
    }
}

/// Walks the calendar day by day from 0000-01-01 (day -719528) to
/// 9999-12-31, checking a sample of days (and every day of a few
/// awkward stretches) renders and parses back as the calendar says.
#[test]
fn dates_render_and_parse_across_the_calendar() {
    let (mut y, mut m, mut d) = (0i64, 1u32, 1u32);
    let mut days = -719_528i64;
    let mut checked = 0;
    while y <= 9999 {
        let awkward = (y % 100 == 0 && m <= 3) || (y == 1969 || y == 1970) || (m == 2 && d >= 28);
        if days % 89 == 0 || awkward && days % 3 == 0 {
            let expected = format!("{y:04}-{m:02}-{d:02}");
            let date = Value::Date(i32::try_from(days).unwrap());
            assert_eq!(text(&date), expected);
            assert_eq!(value(&expected), date, "{expected}");
            let ts = Value::Timestamp(days * MILLIS_PER_DAY + 45_296_789);
            let ts_text = format!("{expected}T12:34:56.789Z");
            assert_eq!(text(&ts), ts_text);
            assert_eq!(value(&ts_text), ts);
            checked += 1;
        }
        days += 1;
        d += 1;
        if d > days_in_month(y, m) {
            d = 1;
            m += 1;
            if m > 12 {
                m = 1;
                y += 1;
            }
        }
    }
    assert!(checked > 40_000, "{checked}");
    assert_eq!(days, 2_932_897);
}

#[test]
fn specific_dates_and_times() {
    for (days, s) in [
        (0, "1970-01-01"),
        (-1, "1969-12-31"),
        (19_753, "2024-01-31"),
        (19_782, "2024-02-29"),
        (11_016, "2000-02-29"),
        (11_017, "2000-03-01"),
        (-25_508, "1900-03-01"),
        (-25_509, "1900-02-28"),
        (-719_528, "0000-01-01"),
        (-719_468, "0000-03-01"),
        (2_932_896, "9999-12-31"),
        (10_956, "1999-12-31"),
    ] {
        assert_eq!(text(&Value::Date(days)), s);
        assert_eq!(parsed(s), (Some(logical::date_schema()), Value::Date(days)));
    }
    for (ms, s) in [
        (0, "00:00:00.000Z"),
        (49_527_123, "13:45:27.123Z"),
        (86_399_999, "23:59:59.999Z"),
        (3_723_004, "01:02:03.004Z"),
        (600_010, "00:10:00.010Z"),
    ] {
        assert_eq!(text(&Value::Time(ms)), s);
        assert_eq!(parsed(s), (Some(logical::time_schema()), Value::Time(ms)));
    }
    assert_eq!(
        text(&Value::Timestamp(-1)),
        "1969-12-31T23:59:59.999Z",
        "before the epoch"
    );
    assert_eq!(
        parsed("1969-12-31T23:59:59.999Z"),
        (Some(logical::timestamp_schema()), Value::Timestamp(-1))
    );
}

#[test]
fn invalid_dates_and_times_stay_strings() {
    for s in [
        "2023-02-29",
        "1900-02-29",
        "2100-02-29",
        "2024-02-30",
        "2024-04-31",
        "2024-06-31",
        "2024-09-31",
        "2024-11-31",
        "2024-01-32",
        "2024-01-00",
        "2024-00-10",
        "2024-13-01",
        "2024/01/01",
        "2024-01/01",
        "2024-1 -05",
        "20a4-01-01",
        "24:00:00.000Z",
        "12:60:00.000Z",
        "12:00:60.000Z",
        "12x00:00.000Z",
        "12:00x00.000Z",
        "12:00:00x000Z",
        "12:00:00.000x",
        "12:00:00.00xZ",
        "12:0 :00.000Z",
        "2024-01-31x13:45:00.000Z",
        "2024-01-31T24:00:00.000Z",
    ] {
        is_string(s);
    }
    for (s, days) in [
        ("2400-02-29", 157_113),
        ("2023-02-28", 19_416),
        ("2024-04-30", 19_843),
        ("2024-12-31", 20_088),
        ("2024-10-31", 20_027),
    ] {
        assert_eq!(value(s), Value::Date(days), "{s}");
    }
    assert_eq!(value("23:59:59.000Z"), Value::Time(86_399_000));
    assert_eq!(value("00:59:00.000Z"), Value::Time(3_540_000));
    assert_eq!(value("00:00:59.000Z"), Value::Time(59_000));
}

#[test]
fn rendering_as_kafka() {
    let schema = SchemaBuilder::struct_()
        .field("a", Schema::int32())
        .field("b", Schema::optional_string())
        .field("c", Schema::optional_bytes())
        .field(
            "d",
            SchemaBuilder::int8().default_value(5i8).build().unwrap(),
        )
        .build()
        .unwrap();
    let mut st = Struct::new(schema).unwrap();
    st.put("a", 1).unwrap().put("b", "q\"\\").unwrap();
    assert_eq!(
        text(&Value::Struct(st)),
        r#"{"a":1,"b":"q\"\\","c":null,"d":5}"#
    );
    assert_eq!(
        text(&Value::Array(vec![
            Value::Int8(1),
            Value::Int16(2),
            Value::Int64(3),
            Value::Boolean(false),
            Value::Null,
            Value::from("s"),
            Value::Bytes(vec![255].into()),
            Value::Decimal(Decimal::new(-150, 2)),
            Value::Float32(2.5),
        ])),
        r#"[1,2,3,false,null,"s","/w==",-1.50,2.5]"#
    );
    assert_eq!(
        text(&Value::Map(vec![
            (Value::from("k\""), Value::Int32(1)),
            (Value::Int32(2), Value::Array(vec![])),
            (Value::from("m"), Value::Map(vec![])),
        ])),
        r#"{"k\"":1,2:[],"m":{}}"#
    );
    assert_eq!(text(&Value::from("top \"raw\"")), "top \"raw\"");
    assert_eq!(text(&Value::Bytes(vec![1, 2, 3].into())), "AQID");
    assert_eq!(text(&Value::Boolean(true)), "true");
    assert_eq!(text(&Value::Int16(-300)), "-300");
    assert_eq!(text(&Value::Decimal(Decimal::new(1, -3))), "1E+3");
    assert_eq!(text(&Value::Array(vec![])), "[]");
    assert_eq!(
        text(&Value::Array(vec![Value::Date(0), Value::Time(1)])),
        "[1970-01-01,00:00:00.001Z]"
    );
}

#[test]
fn scalars_take_the_smallest_type() {
    for (s, schema, v) in [
        ("127", Schema::int8(), Value::Int8(127)),
        ("-128", Schema::int8(), Value::Int8(-128)),
        ("128", Schema::int16(), Value::Int16(128)),
        ("-129", Schema::int16(), Value::Int16(-129)),
        ("32767", Schema::int16(), Value::Int16(32767)),
        ("32768", Schema::int32(), Value::Int32(32768)),
        ("-2147483648", Schema::int32(), Value::Int32(i32::MIN)),
        ("2147483648", Schema::int64(), Value::Int64(2_147_483_648)),
        (
            "-9223372036854775808",
            Schema::int64(),
            Value::Int64(i64::MIN),
        ),
        ("+5", Schema::int8(), Value::Int8(5)),
        ("1.5e5", Schema::float32(), Value::Float32(150_000.0)),
        ("1.5E1", Schema::int8(), Value::Int8(15)),
        ("1e2", Schema::float32(), Value::Float32(100.0)),
        ("12e-1", Schema::float32(), Value::Float32(1.2)),
        ("-.5e-3", Schema::float32(), Value::Float32(-0.0005)),
        ("2.5", Schema::float32(), Value::Float32(2.5)),
        ("1.", Schema::int8(), Value::Int8(1)),
        ("1e39", Schema::float64(), Value::Float64(1e39)),
        ("true", Schema::boolean(), Value::Boolean(true)),
        (" false ", Schema::boolean(), Value::Boolean(false)),
    ] {
        assert_eq!(parsed(s), (Some(schema), v), "{s}");
    }
    assert_eq!(parsed(" null "), (None, Value::Null));
    let (schema, v) = parsed("-99999999999999999999");
    assert_eq!(schema, Some(logical::decimal_schema(0)));
    assert_eq!(v, Value::Decimal("-99999999999999999999".parse().unwrap()));
    for s in [
        "-", "+", ".", "e5", "1e", "1e+", "1.2.3", "1x", "x1", "1 2", "1e5x", ".e5", "1..",
        "5e1.5", "- 1", "nan", "inf", "\"5\"",
    ] {
        is_string(s);
    }
}

#[test]
fn arrays_and_maps() {
    let (schema, v) = parsed("[300, 1]");
    assert_eq!(schema.unwrap().value_schema(), Some(&Schema::int16()));
    assert_eq!(v, Value::Array(vec![Value::Int16(300), Value::Int16(1)]));
    let (schema, v) = parsed("[1, 300, 70000]");
    assert_eq!(schema.unwrap().value_schema(), Some(&Schema::int32()));
    assert_eq!(
        v,
        Value::Array(vec![
            Value::Int32(1),
            Value::Int32(300),
            Value::Int32(70000)
        ])
    );
    let (schema, v) = parsed(r#"[300, "a"]"#);
    assert_eq!(schema, None);
    assert_eq!(v, Value::Array(vec![Value::Int16(300), Value::from("a")]));
    let (schema, _) = parsed(r#"[[1, "a"], [2]]"#);
    assert_eq!(
        schema, None,
        "a schemaless element makes the array schemaless"
    );
    let (schema, v) = parsed("[1, null]");
    assert_eq!(
        schema.unwrap().value_schema(),
        Some(&Schema::optional_int8())
    );
    assert_eq!(v, Value::Array(vec![Value::Int8(1), Value::Null]));
    assert_eq!(
        parsed("[null, null]"),
        (None, Value::Array(vec![Value::Null, Value::Null]))
    );
    let (schema, _) = parsed("[[1], null]");
    let expected = SchemaBuilder::array(Schema::int8())
        .optional()
        .build()
        .unwrap();
    assert_eq!(schema.unwrap().value_schema(), Some(&expected));
    let (schema, _) = parsed(r#"[{"a": 1}, null]"#);
    let expected = SchemaBuilder::map(Schema::string(), Schema::int8())
        .optional()
        .build()
        .unwrap();
    assert_eq!(schema.unwrap().value_schema(), Some(&expected));
    for (input, builder) in [
        ("[12:00:00.000Z, null]", logical::time_builder()),
        (
            "[2024-01-31T13:45:00.000Z, null]",
            logical::timestamp_builder(),
        ),
        ("[1.5e400, null]", logical::decimal_builder(-399)),
    ] {
        let (schema, _) = parsed(input);
        assert_eq!(
            schema.unwrap().value_schema(),
            Some(&builder.optional().build().unwrap()),
            "{input}"
        );
    }
    let (schema, v) = parsed("[2024-01-31,2024-02-01]");
    assert_eq!(
        schema.unwrap().value_schema(),
        Some(&logical::date_schema())
    );
    assert_eq!(
        v,
        Value::Array(vec![Value::Date(19_753), Value::Date(19_754)])
    );
    let (schema, v) = parsed(r#"{ "a" : 1 , "b" : 300 }"#);
    let schema = schema.unwrap();
    assert_eq!(schema.key_schema(), Some(&Schema::string()));
    assert_eq!(schema.value_schema(), Some(&Schema::int16()));
    assert_eq!(
        v,
        Value::string_map([("a", Value::Int16(1)), ("b", Value::Int16(300))])
    );
    let (schema, v) = parsed(r#"{"a": 1, "b": "x"}"#);
    assert_eq!(schema, None);
    assert_eq!(
        v,
        Value::string_map([("a", Value::Int8(1)), ("b", Value::from("x"))])
    );
    assert_eq!(
        value("[a b, c]"),
        Value::Array(vec![Value::from("a b"), Value::from("c")])
    );
    assert_eq!(
        value(r#"["a\\b"]"#),
        Value::Array(vec![Value::from("a\\b")])
    );
    assert_eq!(
        value(r#"["", "x"]"#),
        Value::Array(vec![Value::from(""), Value::from("x")])
    );
    assert_eq!(
        value("[true, false]"),
        Value::Array(vec![Value::Boolean(true), Value::Boolean(false)])
    );
    for s in [
        "[1,,2]",
        "[,]",
        "{:1}",
        "{\"a\":}",
        "{\"a\" 1}",
        "[1]x",
        "{\"a\":1,\"b\"}",
        "[\"a\\",
    ] {
        is_string(s);
    }
}

#[test]
fn many_siblings_at_one_level_are_not_too_deep() {
    let arrays = format!("[{}]", vec!["[1]"; 100].join(","));
    let v = value(&arrays);
    assert_eq!(v.as_array().map(<[Value]>::len), Some(100));
    let maps = format!("[{}]", vec!["{}"; 100].join(","));
    let v = value(&maps);
    assert_eq!(v.as_array().map(<[Value]>::len), Some(100));
    let just_deep_enough = format!("{}{}", "[".repeat(64), "]".repeat(64));
    assert!(value(&just_deep_enough).as_array().is_some());
    let too_deep = format!("{}{}", "[".repeat(65), "]".repeat(65));
    is_string(&too_deep);
    let maps_too_deep = format!("{}1{}", "{\"a\":".repeat(65), "}".repeat(65));
    is_string(&maps_too_deep);
}

#[test]
fn integer_coercions() {
    use values::{convert_to_int16, convert_to_int32, convert_to_int64, convert_to_int8};
    assert_eq!(convert_to_int8(None, &Value::Int8(-5)).unwrap(), Some(-5));
    assert_eq!(
        convert_to_int8(None, &Value::Int16(100)).unwrap(),
        Some(100)
    );
    assert_eq!(
        convert_to_int16(None, &Value::Int32(-300)).unwrap(),
        Some(-300)
    );
    assert_eq!(
        convert_to_int32(None, &Value::Int64(70_000)).unwrap(),
        Some(70_000)
    );
    assert_eq!(convert_to_int64(None, &Value::Time(5)).unwrap(), Some(5));
    assert_eq!(
        convert_to_int64(None, &Value::Timestamp(-5)).unwrap(),
        Some(-5)
    );
    assert_eq!(
        convert_to_int64(None, &Value::Float64(-2.9)).unwrap(),
        Some(-2)
    );
    assert_eq!(
        convert_to_int64(None, &Value::Float64(2.9)).unwrap(),
        Some(2)
    );
    assert_eq!(
        convert_to_int64(None, &Value::Float64(-9.2e18)).unwrap(),
        Some(-9_200_000_000_000_000_000)
    );
    assert!(convert_to_int64(None, &Value::Float64(-1e19)).is_err());
    assert_eq!(
        convert_to_int32(None, &Value::Boolean(false)).unwrap(),
        Some(0)
    );
    assert_eq!(
        convert_to_int64(None, &Value::from("1.5E1")).unwrap(),
        Some(15)
    );
    assert_eq!(
        convert_to_int64(None, &Value::from("2.7")).unwrap(),
        Some(2)
    );
    for (d, expected) in [
        (Decimal::new(5, -2), 500),
        (Decimal::new(-7, -18), -7_000_000_000_000_000_000),
        (Decimal::new(0, -30), 0),
        (Decimal::new(123_456, 2), 1234),
        (Decimal::new(-1999, 3), -1),
        (Decimal::new(1999, 4), 0),
        (Decimal::new(99, 2), 0),
    ] {
        assert_eq!(
            convert_to_int64(None, &Value::Decimal(d.clone())).unwrap(),
            Some(expected),
            "{d}"
        );
    }
    assert!(convert_to_int64(None, &Value::Decimal(Decimal::new(1, -19))).is_err());
    assert!(convert_to_int64(None, &Value::Decimal(Decimal::new(1, -25))).is_err());
    let e = convert_to_int64(None, &Value::Decimal(Decimal::new(1, -20))).unwrap_err();
    assert_eq!(
        e.to_string(),
        "Unable to convert 1E+20 to INT64: the value is out of range"
    );
    let e = convert_to_int32(None, &Value::Float64(1e10)).unwrap_err();
    assert_eq!(
        e.to_string(),
        "Unable to convert 10000000000 to INT32: the value is out of range"
    );
    let e = convert_to_int16(None, &Value::from("[1]")).unwrap_err();
    assert_eq!(
        e.to_string(),
        "Unable to convert a value of type ARRAY to INT16"
    );
    let e = convert_to_int16(None, &Value::from("null")).unwrap_err();
    assert_eq!(
        e.to_string(),
        "Unable to convert a value of type null to INT16"
    );
    let e = convert_to_int8(None, &Value::from("x")).unwrap_err();
    assert_eq!(
        e.to_string(),
        "Unable to convert a STRING to INT8: the text does not parse as INT8"
    );
    assert_eq!(convert_to_int8(None, &Value::Null).unwrap(), None);
    // A Date schema reads its INT32 as a Date: still its number of days.
    assert_eq!(
        convert_to_int32(Some(&logical::date_schema()), &Value::Int32(9)).unwrap(),
        Some(9)
    );
    assert_eq!(
        convert_to_int64(
            Some(&logical::decimal_schema(1)),
            &Value::Bytes(vec![0x19].into())
        )
        .unwrap(),
        Some(2)
    );
}

#[test]
fn float_coercions() {
    use values::{convert_to_float32, convert_to_float64};
    assert_eq!(
        convert_to_float64(None, &Value::Int8(-3)).unwrap(),
        Some(-3.0)
    );
    assert_eq!(
        convert_to_float64(None, &Value::Float32(0.5)).unwrap(),
        Some(0.5)
    );
    assert_eq!(
        convert_to_float64(None, &Value::Float64(-7.25)).unwrap(),
        Some(-7.25)
    );
    assert_eq!(
        convert_to_float64(None, &Value::Decimal(Decimal::new(-125, 2))).unwrap(),
        Some(-1.25)
    );
    assert_eq!(
        convert_to_float64(None, &Value::Boolean(true)).unwrap(),
        Some(1.0)
    );
    assert_eq!(
        convert_to_float64(None, &Value::from("2.5")).unwrap(),
        Some(2.5)
    );
    assert_eq!(convert_to_float64(None, &Value::Null).unwrap(), None);
    assert!(convert_to_float64(None, &Value::from("abc")).is_err());
    assert_eq!(
        convert_to_float32(None, &Value::Int64(7)).unwrap(),
        Some(7.0)
    );
    assert_eq!(
        convert_to_float32(None, &Value::Float64(1e300)).unwrap(),
        Some(f32::INFINITY)
    );
    assert_eq!(convert_to_float32(None, &Value::Null).unwrap(), None);
    assert!(convert_to_float32(None, &Value::Array(vec![])).is_err());
    assert_eq!(
        convert_to_float64(
            Some(&logical::decimal_schema(2)),
            &Value::Bytes(vec![0x01, 0x00].into())
        )
        .unwrap(),
        Some(2.56)
    );
}

#[test]
fn boolean_coercions() {
    use values::convert_to_boolean;
    assert_eq!(convert_to_boolean(None, &Value::Null).unwrap(), None);
    assert_eq!(
        convert_to_boolean(None, &Value::Boolean(false)).unwrap(),
        Some(false)
    );
    assert_eq!(
        convert_to_boolean(None, &Value::from("false")).unwrap(),
        Some(false)
    );
    assert_eq!(
        convert_to_boolean(None, &Value::from("true")).unwrap(),
        Some(true)
    );
    assert_eq!(
        convert_to_boolean(None, &Value::from("0")).unwrap(),
        Some(false)
    );
    assert_eq!(
        convert_to_boolean(None, &Value::Int64(-2)).unwrap(),
        Some(true)
    );
    assert_eq!(
        convert_to_boolean(None, &Value::Int8(0)).unwrap(),
        Some(false)
    );
    assert_eq!(
        convert_to_boolean(None, &Value::Float32(0.25)).unwrap(),
        Some(true)
    );
    assert_eq!(
        convert_to_boolean(None, &Value::Float64(0.0)).unwrap(),
        Some(false)
    );
    assert_eq!(
        convert_to_boolean(None, &Value::Decimal(Decimal::new(1, 5))).unwrap(),
        Some(true)
    );
    assert_eq!(
        convert_to_boolean(None, &Value::Decimal(Decimal::new(0, 5))).unwrap(),
        Some(false)
    );
    let e = convert_to_boolean(None, &Value::Bytes(vec![].into())).unwrap_err();
    assert_eq!(
        e.to_string(),
        "Unable to convert a value of type BYTES to BOOLEAN"
    );
    let e = convert_to_boolean(None, &Value::from("yes")).unwrap_err();
    assert_eq!(
        e.to_string(),
        "Unable to convert a STRING to BOOLEAN: the text does not parse as BOOLEAN"
    );
}

#[test]
fn container_coercions() {
    use values::{convert_to_list, convert_to_map, convert_to_struct};
    let list = vec![Value::Int8(1), Value::from("a")];
    assert_eq!(
        convert_to_list(None, &Value::Array(list.clone())).unwrap(),
        Some(list)
    );
    assert_eq!(convert_to_list(None, &Value::Null).unwrap(), None);
    assert_eq!(
        convert_to_list(None, &Value::from("[true]")).unwrap(),
        Some(vec![Value::Boolean(true)])
    );
    let e = convert_to_list(None, &Value::from("{}")).unwrap_err();
    assert_eq!(
        e.to_string(),
        "Unable to convert a value of type MAP to ARRAY"
    );
    let e = convert_to_list(None, &Value::Int8(1)).unwrap_err();
    assert_eq!(
        e.to_string(),
        "Unable to convert a value of type INT8 to ARRAY"
    );
    let entries = vec![(Value::from("k"), Value::Int8(1))];
    assert_eq!(
        convert_to_map(None, &Value::Map(entries.clone())).unwrap(),
        Some(entries)
    );
    assert_eq!(convert_to_map(None, &Value::Null).unwrap(), None);
    assert_eq!(
        convert_to_map(None, &Value::from("{1:2}")).unwrap(),
        Some(vec![(Value::Int8(1), Value::Int8(2))])
    );
    let e = convert_to_map(None, &Value::from("[1]")).unwrap_err();
    assert_eq!(
        e.to_string(),
        "Unable to convert a value of type ARRAY to MAP"
    );
    let schema = SchemaBuilder::struct_()
        .field("a", Schema::optional_int8())
        .build()
        .unwrap();
    let mut st = Struct::new(schema).unwrap();
    st.put("a", 3i8).unwrap();
    assert_eq!(
        convert_to_struct(None, &Value::Struct(st.clone())).unwrap(),
        Some(st)
    );
    assert_eq!(convert_to_struct(None, &Value::Null).unwrap(), None);
    assert!(convert_to_struct(None, &Value::Int8(1)).is_err());
}

#[test]
fn decimal_coercions() {
    use values::convert_to_decimal;
    let d = |u: i64, s: i32| Some(Decimal::new(u, s));
    assert_eq!(convert_to_decimal(None, &Value::Null, 2).unwrap(), None);
    assert_eq!(
        convert_to_decimal(None, &Value::Int64(-3), 0).unwrap(),
        d(-3, 0)
    );
    assert_eq!(
        convert_to_decimal(None, &Value::Int8(3), 2).unwrap(),
        d(300, 2)
    );
    assert_eq!(
        convert_to_decimal(None, &Value::Float32(2.5), 1).unwrap(),
        d(25, 1)
    );
    assert_eq!(
        convert_to_decimal(None, &Value::from(" 12.50 "), 2).unwrap(),
        d(1250, 2)
    );
    assert_eq!(
        convert_to_decimal(None, &Value::from("12.50"), 1).unwrap(),
        d(125, 1)
    );
    assert_eq!(
        convert_to_decimal(None, &Value::Decimal(Decimal::new(1200, 3)), 1).unwrap(),
        d(12, 1)
    );
    assert_eq!(
        convert_to_decimal(None, &Value::Decimal(Decimal::new(12, 1)), 4).unwrap(),
        d(12_000, 4)
    );
    assert_eq!(
        convert_to_decimal(None, &Value::Decimal(Decimal::new(12, 1)), 1).unwrap(),
        d(12, 1)
    );
    // Zero takes any scale, however far.
    assert_eq!(
        convert_to_decimal(None, &Value::Int8(0), 5000).unwrap(),
        d(0, 5000)
    );
    assert_eq!(
        convert_to_decimal(None, &Value::Decimal(Decimal::new(0, 7000)), -5).unwrap(),
        d(0, -5)
    );
    let far = convert_to_decimal(None, &Value::Int8(1), 4096)
        .unwrap()
        .unwrap();
    assert_eq!(far.scale(), 4096);
    let e = convert_to_decimal(None, &Value::Int8(1), 4097).unwrap_err();
    assert_eq!(
        e.to_string(),
        "Unable to convert 1 to a Decimal of scale 4097 without rounding"
    );
    let e = convert_to_decimal(None, &Value::Decimal(Decimal::new(125, 2)), 1).unwrap_err();
    assert_eq!(
        e.to_string(),
        "Unable to convert 1.25 to a Decimal of scale 1 without rounding"
    );
    let e = convert_to_decimal(None, &Value::Float64(f64::NAN), 1).unwrap_err();
    assert_eq!(
        e.to_string(),
        "Unable to convert NaN to Decimal: the value is out of range"
    );
    assert!(convert_to_decimal(None, &Value::from("abc"), 1).is_err());
    assert!(convert_to_decimal(None, &Value::Array(vec![]), 1).is_err());
}

#[test]
fn date_time_timestamp_coercions() {
    use values::{convert_to_date, convert_to_time, convert_to_timestamp};
    let ts = 1_706_708_700_000i64; // 2024-01-31T13:45:00Z
    assert_eq!(convert_to_date(None, &Value::Null).unwrap(), None);
    assert_eq!(convert_to_date(None, &Value::Date(7)).unwrap(), Some(7));
    assert_eq!(
        convert_to_date(None, &Value::Timestamp(-1)).unwrap(),
        Some(-1)
    );
    assert_eq!(
        convert_to_date(None, &Value::from("2024-01-31")).unwrap(),
        Some(19_753)
    );
    assert_eq!(
        convert_to_date(None, &Value::from("2024-01-31T13:45:00.000Z")).unwrap(),
        Some(19_753)
    );
    assert_eq!(convert_to_date(None, &Value::Int64(12)).unwrap(), Some(12));
    assert!(convert_to_date(None, &Value::Int64(1 << 40)).is_err());
    assert!(convert_to_date(None, &Value::Timestamp(i64::MAX)).is_err());
    let e = convert_to_date(None, &Value::Float64(1.0)).unwrap_err();
    assert_eq!(
        e.to_string(),
        "Unable to convert a value of type FLOAT64 to Date"
    );

    assert_eq!(convert_to_time(None, &Value::Null).unwrap(), None);
    assert_eq!(convert_to_time(None, &Value::Time(9)).unwrap(), Some(9));
    assert_eq!(
        convert_to_time(None, &Value::Timestamp(ts)).unwrap(),
        Some(49_500_000)
    );
    assert_eq!(
        convert_to_time(None, &Value::Timestamp(-1)).unwrap(),
        Some(86_399_999)
    );
    assert_eq!(
        convert_to_time(None, &Value::from("13:45:00.000Z")).unwrap(),
        Some(49_500_000)
    );
    assert_eq!(
        convert_to_time(None, &Value::Int32(1000)).unwrap(),
        Some(1000)
    );
    assert!(convert_to_time(None, &Value::Int32(-1)).is_err());
    assert!(convert_to_time(None, &Value::from("x")).is_err());
    assert_eq!(
        convert_to_time(Some(&logical::time_schema()), &Value::Int32(5)).unwrap(),
        Some(5)
    );

    assert_eq!(convert_to_timestamp(None, &Value::Null).unwrap(), None);
    assert_eq!(
        convert_to_timestamp(None, &Value::Timestamp(ts)).unwrap(),
        Some(ts)
    );
    assert_eq!(
        convert_to_timestamp(None, &Value::Date(2)).unwrap(),
        Some(2 * MILLIS_PER_DAY)
    );
    assert_eq!(
        convert_to_timestamp(None, &Value::Time(77)).unwrap(),
        Some(77)
    );
    assert_eq!(
        convert_to_timestamp(None, &Value::from("2024-01-31T13:45:00.000Z")).unwrap(),
        Some(ts)
    );
    assert_eq!(
        convert_to_timestamp(None, &Value::Int32(-4)).unwrap(),
        Some(-4)
    );
    let e = convert_to_timestamp(None, &Value::Boolean(true)).unwrap_err();
    assert_eq!(
        e.to_string(),
        "Unable to convert a value of type BOOLEAN to Timestamp"
    );
    assert_eq!(
        convert_to_timestamp(Some(&logical::timestamp_schema()), &Value::Int64(3)).unwrap(),
        Some(3)
    );
    assert_eq!(
        convert_to_timestamp(Some(&logical::date_schema()), &Value::Int32(1)).unwrap(),
        Some(MILLIS_PER_DAY)
    );
}
