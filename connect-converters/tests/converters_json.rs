//! JsonConverter golden vectors: exact bytes Kafka writes, both directions,
//! for every schema type, logical type and null/default case.

use connect_api::logical::{
    date_builder, date_schema, decimal_builder, decimal_schema, time_schema, timestamp_schema,
};
use connect_api::{
    ConfigMap, Converter, Decimal, HeaderConverter, Headers, Schema, SchemaBuilder, Struct, Value,
};
use connect_converters::JsonConverter;

fn converter(pairs: &[(&str, &str)]) -> JsonConverter {
    let mut c = JsonConverter::new();
    let cfg: ConfigMap = ConfigMap::from_pairs(pairs.iter().copied());
    Converter::configure(&mut c, &cfg, false).unwrap();
    c
}

fn write(c: &mut JsonConverter, schema: Option<&Schema>, value: &Value) -> Option<String> {
    let mut out = Vec::new();
    let written = c
        .from_connect_data("topic", &Headers::new(), schema, value, &mut out)
        .unwrap();
    written
        .bytes_or_null(out)
        .map(|b| String::from_utf8(b).unwrap())
}

fn write_err(c: &mut JsonConverter, schema: Option<&Schema>, value: &Value) -> String {
    let mut out = Vec::new();
    let e = c
        .from_connect_data("topic", &Headers::new(), schema, value, &mut out)
        .unwrap_err();
    assert!(out.is_empty(), "a failed write leaves the buffer as it was");
    e.to_string()
}

fn read(c: &mut JsonConverter, json: &str) -> (Option<Schema>, Value) {
    let sv = c
        .to_connect_data("topic", &Headers::new(), Some(json.as_bytes()))
        .unwrap();
    (sv.schema, sv.value)
}

fn read_err(c: &mut JsonConverter, json: &[u8]) -> String {
    c.to_connect_data("topic", &Headers::new(), Some(json))
        .unwrap_err()
        .to_string()
}

/// Write `value` and expect `json`; read `json` and expect schema and value back.
fn golden(schema: Schema, value: Value, json: &str) {
    let mut c = JsonConverter::new();
    assert_eq!(
        write(&mut c, Some(&schema), &value).as_deref(),
        Some(json),
        "writing {value:?}"
    );
    let (s, v) = read(&mut c, json);
    assert_eq!(s.as_ref(), Some(&schema), "schema read from {json}");
    assert_eq!(v, value, "value read from {json}");
}

#[test]
fn firest_line_is_exactly_kafkas_bytes() {
    golden(
        Schema::string(),
        Value::from("firest line"),
        r#"{"schema":{"type":"string","optional":false},"payload":"firest line"}"#,
    );
}

#[test]
fn every_primitive_type() {
    golden(
        Schema::boolean(),
        Value::Boolean(true),
        r#"{"schema":{"type":"boolean","optional":false},"payload":true}"#,
    );
    golden(
        Schema::int8(),
        Value::Int8(-12),
        r#"{"schema":{"type":"int8","optional":false},"payload":-12}"#,
    );
    golden(
        Schema::int16(),
        Value::Int16(12345),
        r#"{"schema":{"type":"int16","optional":false},"payload":12345}"#,
    );
    golden(
        Schema::int32(),
        Value::Int32(i32::MIN),
        r#"{"schema":{"type":"int32","optional":false},"payload":-2147483648}"#,
    );
    golden(
        Schema::int64(),
        Value::Int64(i64::MAX),
        r#"{"schema":{"type":"int64","optional":false},"payload":9223372036854775807}"#,
    );
    golden(
        Schema::float32(),
        Value::Float32(12.34),
        r#"{"schema":{"type":"float","optional":false},"payload":12.34}"#,
    );
    golden(
        Schema::float64(),
        Value::Float64(1.0),
        r#"{"schema":{"type":"double","optional":false},"payload":1.0}"#,
    );
    golden(
        Schema::float64(),
        Value::Float64(1e20),
        r#"{"schema":{"type":"double","optional":false},"payload":1.0E20}"#,
    );
    golden(
        Schema::float64(),
        Value::Float64(f64::NAN),
        r#"{"schema":{"type":"double","optional":false},"payload":"NaN"}"#,
    );
    golden(
        Schema::bytes(),
        Value::Bytes(b"test-string".to_vec().into()),
        r#"{"schema":{"type":"bytes","optional":false},"payload":"dGVzdC1zdHJpbmc="}"#,
    );
    golden(
        Schema::optional_string(),
        Value::from("a\"b\n\u{1}"),
        r#"{"schema":{"type":"string","optional":true},"payload":"a\"b\n\u0001"}"#,
    );
}

#[test]
fn arrays_maps_and_structs() {
    let array = SchemaBuilder::array(Schema::int32()).build().unwrap();
    golden(
        array,
        Value::Array(vec![Value::Int32(1), Value::Int32(2)]),
        r#"{"schema":{"type":"array","items":{"type":"int32","optional":false},"optional":false},"payload":[1,2]}"#,
    );

    let string_map = SchemaBuilder::map(Schema::string(), Schema::int32())
        .build()
        .unwrap();
    golden(
        string_map,
        Value::string_map([("a", Value::Int32(1)), ("b", Value::Int32(2))]),
        r#"{"schema":{"type":"map","keys":{"type":"string","optional":false},"values":{"type":"int32","optional":false},"optional":false},"payload":{"a":1,"b":2}}"#,
    );

    let int_map = SchemaBuilder::map(Schema::int32(), Schema::string())
        .build()
        .unwrap();
    golden(
        int_map,
        Value::Map(vec![
            (Value::Int32(1), Value::from("x")),
            (Value::Int32(2), Value::from("y")),
        ]),
        r#"{"schema":{"type":"map","keys":{"type":"int32","optional":false},"values":{"type":"string","optional":false},"optional":false},"payload":[[1,"x"],[2,"y"]]}"#,
    );

    let schema = SchemaBuilder::struct_()
        .name("com.example.Point")
        .version(2)
        .doc("a point")
        .field("x", Schema::int32())
        .field("label", Schema::optional_string())
        .build()
        .unwrap();
    let mut s = Struct::new(schema.clone()).unwrap();
    s.put("x", 7).unwrap();
    golden(
        schema,
        Value::Struct(s),
        r#"{"schema":{"type":"struct","fields":[{"type":"int32","optional":false,"field":"x"},{"type":"string","optional":true,"field":"label"}],"optional":false,"name":"com.example.Point","version":2,"doc":"a point"},"payload":{"x":7,"label":null}}"#,
    );
}

#[test]
fn schema_keys_in_kafkas_order() {
    let schema = SchemaBuilder::int32()
        .optional()
        .name("n")
        .version(3)
        .doc("d")
        .parameter("k1", "v1")
        .parameter("a", "b")
        .default_value(Value::Int32(5))
        .build()
        .unwrap();
    golden(
        schema,
        Value::Int32(9),
        r#"{"schema":{"type":"int32","optional":true,"name":"n","version":3,"doc":"d","parameters":{"k1":"v1","a":"b"},"default":5},"payload":9}"#,
    );
}

#[test]
fn logical_types() {
    golden(
        decimal_schema(2),
        Value::Decimal("1.00".parse().unwrap()),
        r#"{"schema":{"type":"bytes","optional":false,"name":"org.apache.kafka.connect.data.Decimal","version":1,"parameters":{"scale":"2"}},"payload":"ZA=="}"#,
    );
    golden(
        decimal_schema(0),
        Value::Decimal("-129".parse().unwrap()),
        r#"{"schema":{"type":"bytes","optional":false,"name":"org.apache.kafka.connect.data.Decimal","version":1,"parameters":{"scale":"0"}},"payload":"/38="}"#,
    );
    golden(
        date_schema(),
        Value::Date(19753),
        r#"{"schema":{"type":"int32","optional":false,"name":"org.apache.kafka.connect.data.Date","version":1},"payload":19753}"#,
    );
    golden(
        time_schema(),
        Value::Time(49_500_000),
        r#"{"schema":{"type":"int32","optional":false,"name":"org.apache.kafka.connect.data.Time","version":1},"payload":49500000}"#,
    );
    golden(
        timestamp_schema(),
        Value::Timestamp(1_706_708_700_000),
        r#"{"schema":{"type":"int64","optional":false,"name":"org.apache.kafka.connect.data.Timestamp","version":1},"payload":1706708700000}"#,
    );
}

#[test]
fn numeric_decimals() {
    let mut c = converter(&[("decimal.format", "numeric")]);
    let d = Value::Decimal("1.56".parse().unwrap());
    assert_eq!(
        write(&mut c, Some(&decimal_schema(2)), &d).unwrap(),
        r#"{"schema":{"type":"bytes","optional":false,"name":"org.apache.kafka.connect.data.Decimal","version":1,"parameters":{"scale":"2"}},"payload":1.56}"#
    );
    // Read back exactly, beyond f64 precision, and brought to the schema's scale.
    let big = r#"{"schema":{"type":"bytes","optional":false,"name":"org.apache.kafka.connect.data.Decimal","version":1,"parameters":{"scale":"4"}},"payload":123456789012345678901234567890.12}"#;
    assert_eq!(
        read(&mut c, big).1,
        Value::Decimal("123456789012345678901234567890.1200".parse().unwrap())
    );
    // Either encoding reads with either setting.
    let b64 = r#"{"schema":{"type":"bytes","optional":false,"name":"org.apache.kafka.connect.data.Decimal","version":1,"parameters":{"scale":"2"}},"payload":"ZA=="}"#;
    assert_eq!(read(&mut c, b64).1, Value::Decimal(Decimal::new(100, 2)));
    // Schemaless mode writes the number bare.
    let mut bare = converter(&[("decimal.format", "NUMERIC"), ("schemas.enable", "false")]);
    assert_eq!(
        write(
            &mut bare,
            Some(&decimal_schema(3)),
            &Value::Decimal("-0.005".parse().unwrap())
        )
        .unwrap(),
        "-0.005"
    );
}

#[test]
fn decimal_scale_must_match_schema() {
    let mut c = JsonConverter::new();
    let e = write_err(
        &mut c,
        Some(&decimal_schema(2)),
        &Value::Decimal("1.5".parse().unwrap()),
    );
    assert!(e.contains("mismatching scale"), "{e}");
}

#[test]
fn null_handling() {
    let mut c = JsonConverter::new();
    // No schema and no value: a tombstone.
    assert_eq!(write(&mut c, None, &Value::Null), None);
    // Optional schema, null value: not a tombstone.
    assert_eq!(
        write(&mut c, Some(&Schema::optional_int32()), &Value::Null).unwrap(),
        r#"{"schema":{"type":"int32","optional":true},"payload":null}"#
    );
    // Required without default: Kafka's error.
    let e = write_err(&mut c, Some(&Schema::int32()), &Value::Null);
    assert!(
        e.contains(
            "Conversion error: null value for field that is required and has no default value"
        ),
        "{e}"
    );
    // A default replaces the null.
    let with_default = SchemaBuilder::int32()
        .optional()
        .default_value(Value::Int32(42))
        .build()
        .unwrap();
    assert_eq!(
        write(&mut c, Some(&with_default), &Value::Null).unwrap(),
        r#"{"schema":{"type":"int32","optional":true,"default":42},"payload":42}"#
    );
    let (_, v) = read(
        &mut c,
        r#"{"schema":{"type":"int32","optional":true,"default":42},"payload":null}"#,
    );
    assert_eq!(v, Value::Int32(42));
    // ...unless replace.null.with.default=false.
    let mut keep = converter(&[("replace.null.with.default", "false")]);
    assert_eq!(
        write(&mut keep, Some(&with_default), &Value::Null).unwrap(),
        r#"{"schema":{"type":"int32","optional":true,"default":42},"payload":null}"#
    );
    let (_, v) = read(
        &mut keep,
        r#"{"schema":{"type":"int32","optional":true,"default":42},"payload":null}"#,
    );
    assert_eq!(v, Value::Null);
    // Null bytes read as null schema and value.
    let sv = c.to_connect_data("topic", &Headers::new(), None).unwrap();
    assert_eq!((sv.schema, sv.value), (None, Value::Null));
    // Null schema with a value.
    assert_eq!(
        write(&mut c, None, &Value::from("x")).unwrap(),
        r#"{"schema":null,"payload":"x"}"#
    );
    assert_eq!(
        read(&mut c, r#"{"schema":null,"payload":"x"}"#),
        (None, Value::from("x"))
    );
}

#[test]
fn struct_fields_null_and_default() {
    let schema = SchemaBuilder::struct_()
        .field(
            "a",
            SchemaBuilder::string()
                .optional()
                .default_value("dflt")
                .build()
                .unwrap(),
        )
        .field("b", Schema::optional_int64())
        .build()
        .unwrap();
    let s = Struct::new(schema.clone()).unwrap();
    let mut c = JsonConverter::new();
    let json = write(&mut c, Some(&schema), &Value::Struct(s)).unwrap();
    assert!(
        json.ends_with(r#""payload":{"a":"dflt","b":null}}"#),
        "{json}"
    );
    // Missing fields read as null, hence the default.
    let text = json.replace(r#"{"a":"dflt","b":null}"#, "{}");
    let (_, v) = read(&mut c, &text);
    let v = v.as_struct().unwrap().clone();
    assert_eq!(v.get_without_default("a").unwrap(), &Value::from("dflt"));
    assert_eq!(v.get_without_default("b").unwrap(), &Value::Null);
    // A required field missing on read names the field.
    let req = SchemaBuilder::struct_()
        .field("id", Schema::int32())
        .build()
        .unwrap();
    let e = read_err(&mut c, br#"{"schema":{"type":"struct","fields":[{"type":"int32","optional":false,"field":"id"}],"optional":false},"payload":{}}"#);
    assert!(
        e.contains("id") && e.contains("Invalid null value for required INT32 field"),
        "{e}"
    );
    let e = write_err(
        &mut c,
        Some(&req),
        &Value::Struct(Struct::new(req.clone()).unwrap()),
    );
    assert!(e.starts_with("id: "), "{e}");
}

#[test]
fn struct_with_default_struct_round_trips() {
    let builder = || {
        SchemaBuilder::struct_()
            .optional()
            .field("n", Schema::int32())
    };
    let mut d = Struct::new(builder().build().unwrap()).unwrap();
    d.put("n", 3).unwrap();
    let with_default = builder().default_value(Value::Struct(d)).build().unwrap();
    let mut c = JsonConverter::new();
    let json = write(&mut c, Some(&with_default), &Value::Null).unwrap();
    assert_eq!(
        json,
        r#"{"schema":{"type":"struct","fields":[{"type":"int32","optional":false,"field":"n"}],"optional":true,"default":{"n":3}},"payload":{"n":3}}"#
    );
    let (s, _) = read(&mut c, &json);
    assert_eq!(s.unwrap().default_value(), with_default.default_value());
}

#[test]
fn schemas_disabled() {
    let mut c = converter(&[("schemas.enable", "false")]);
    assert_eq!(
        write(&mut c, Some(&Schema::string()), &Value::from("x")).unwrap(),
        r#""x""#
    );
    assert_eq!(
        read(&mut c, r#"{"a":1,"b":[1.5,true,null],"c":{"d":"e"}}"#),
        (
            None,
            Value::string_map([
                ("a", Value::Int64(1)),
                (
                    "b",
                    Value::Array(vec![Value::Float64(1.5), Value::Boolean(true), Value::Null])
                ),
                ("c", Value::string_map([("d", Value::from("e"))])),
            ])
        )
    );
    // Empty input is null.
    assert_eq!(read(&mut c, ""), (None, Value::Null));
    // Schemaless maps with non-string keys become arrays of pairs.
    let m = Value::Map(vec![(Value::Int32(1), Value::Int32(2))]);
    assert_eq!(write(&mut c, None, &m).unwrap(), "[[1,2]]");
    let logical = converter(&[("schemas.enable", "false")]);
    drop(logical);
    let mut d = converter(&[("schemas.enable", "false")]);
    assert_eq!(
        write(
            &mut d,
            Some(&date_builder().build().unwrap()),
            &Value::Date(3)
        )
        .unwrap(),
        "3"
    );
}

#[test]
fn envelope_errors_say_what_to_do() {
    let mut c = JsonConverter::new();
    for bad in [
        &br#"{"a":1}"#[..],
        br#"{"schema":null}"#,
        br#"{"schema":null,"payload":1,"x":2}"#,
        b"[1]",
        b"42",
        b"",
    ] {
        let e = read_err(&mut c, bad);
        assert!(e.contains(r#"JsonConverter with schemas.enable requires "schema" and "payload" fields and may not contain additional fields. If you are trying to deserialize plain JSON data, set schemas.enable=false in your converter configuration."#)
            || (bad.is_empty() && e.contains("serialization error")), "{e}");
    }
    let e = read_err(&mut c, b"{not json");
    assert!(
        e.contains("Converting byte[] to Kafka Connect data failed due to serialization error"),
        "{e}"
    );
}

#[test]
fn reading_is_strict_about_types() {
    let mut c = JsonConverter::new();
    for (json, needle) in [
        (
            r#"{"schema":{"type":"int32","optional":false},"payload":"1"}"#,
            "expected INT32",
        ),
        (
            r#"{"schema":{"type":"int8","optional":false},"payload":300}"#,
            "out of range for INT8",
        ),
        (
            r#"{"schema":{"type":"int32","optional":false},"payload":1.5}"#,
            "expected INT32",
        ),
        (
            r#"{"schema":{"type":"boolean","optional":false},"payload":0}"#,
            "expected BOOLEAN",
        ),
        (
            r#"{"schema":{"type":"bytes","optional":false},"payload":"!!"}"#,
            "Invalid bytes field",
        ),
        (
            r#"{"schema":{"type":"map","keys":{"type":"int32","optional":false},"values":{"type":"int32","optional":false},"optional":false},"payload":[[1,2,3]]}"#,
            "expected length 2",
        ),
        (
            r#"{"schema":{"type":"map","keys":{"type":"string","optional":false},"values":{"type":"int32","optional":false},"optional":false},"payload":[]}"#,
            "Maps with string fields should be encoded as JSON objects",
        ),
        (
            r#"{"schema":{"type":"nope","optional":false},"payload":1}"#,
            "Unknown schema type: nope",
        ),
        (
            r#"{"schema":{"optional":false},"payload":1}"#,
            "Schema must contain 'type' field",
        ),
        (
            r#"{"schema":{"type":"array","optional":false},"payload":[]}"#,
            "Array schema did not specify the element type",
        ),
        (
            r#"{"schema":{"type":"struct","fields":[{"type":"int32"}]},"payload":{}}"#,
            "field name not specified properly",
        ),
        (
            r#"{"schema":{"type":"struct","fields":[{"type":"struct","fields":[{"type":"int32","field":"z"}],"field":"y"}]},"payload":{"y":{"z":"q"}}}"#,
            "y.z: ",
        ),
    ] {
        let e = read_err(&mut c, json.as_bytes());
        assert!(e.contains(needle), "{json}: {e}");
    }
}

#[test]
fn missing_optional_attribute_reads_as_required() {
    let mut c = JsonConverter::new();
    let (s, v) = read(&mut c, r#"{"schema":{"type":"int64"},"payload":5}"#);
    assert_eq!(s, Some(Schema::int64()));
    assert_eq!(v, Value::Int64(5));
}

#[test]
fn reading_accepts_whitespace_and_key_order() {
    let mut c = JsonConverter::new();
    let (s, v) = read(&mut c, " { \"payload\" : [ 1 , 2 ] , \"schema\" : { \"optional\" : true , \"items\" : { \"type\" : \"int16\" } , \"type\" : \"array\" } } ");
    assert_eq!(
        s,
        Some(
            SchemaBuilder::array(Schema::int16())
                .optional()
                .build()
                .unwrap()
        )
    );
    assert_eq!(v, Value::Array(vec![Value::Int16(1), Value::Int16(2)]));
}

#[test]
fn cached_schema_is_reused_across_records() {
    let schema = SchemaBuilder::struct_()
        .field("a", Schema::int32())
        .build()
        .unwrap();
    let equal_but_new = SchemaBuilder::struct_()
        .field("a", Schema::int32())
        .build()
        .unwrap();
    let mut c = converter(&[("schemas.cache.size", "1")]);
    for (i, s) in [&schema, &equal_but_new, &Schema::string(), &schema]
        .into_iter()
        .enumerate()
    {
        let v = if s.ty() == connect_api::Type::Struct {
            let mut st = Struct::new(s.clone()).unwrap();
            st.put("a", i as i32).unwrap();
            Value::Struct(st)
        } else {
            Value::from("s")
        };
        let json = write(&mut c, Some(s), &v).unwrap();
        assert_eq!(read(&mut c, &json), (Some(s.clone()), v));
    }
}

#[test]
fn header_converter_uses_the_same_format() {
    let mut c = JsonConverter::new();
    let mut bytes = Vec::new();
    let written = HeaderConverter::from_connect_header(
        &mut c,
        "t",
        "h",
        Some(&Schema::int32()),
        &Value::Int32(1),
        &mut bytes,
    )
    .unwrap();
    assert_eq!(written, connect_api::Serialized::Bytes);
    assert_eq!(
        bytes,
        br#"{"schema":{"type":"int32","optional":false},"payload":1}"#
    );
    let back = HeaderConverter::to_connect_header(&mut c, "t", "h", Some(&bytes)).unwrap();
    assert_eq!(back.value, Value::Int32(1));
}

#[test]
fn bad_config_names_the_key() {
    let mut c = JsonConverter::new();
    let cfg: ConfigMap = [("decimal.format".to_string(), "HEX".to_string())]
        .into_iter()
        .collect();
    let e = Converter::configure(&mut c, &cfg, false)
        .unwrap_err()
        .to_string();
    assert!(e.contains("decimal.format"), "{e}");
}

#[test]
fn decimal_builder_parameters_survive() {
    let schema = decimal_builder(3).optional().build().unwrap();
    golden(
        schema,
        Value::Null,
        r#"{"schema":{"type":"bytes","optional":true,"name":"org.apache.kafka.connect.data.Decimal","version":1,"parameters":{"scale":"3"}},"payload":null}"#,
    );
}
