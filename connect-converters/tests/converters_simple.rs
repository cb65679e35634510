//! String, ByteArray, number and header converters, and the registry that
//! builds converters from a Kafka worker config.

use connect_api::{ConfigMap, Converter, HeaderConverter, Headers, Schema, SchemaBuilder, Value};
use connect_converters::{
    BooleanConverter, ByteArrayConverter, ConverterRegistry, ConverterRole, DoubleConverter,
    FloatConverter, IntegerConverter, LongConverter, ShortConverter, SimpleHeaderConverter,
    StringConverter,
};

fn cfg(pairs: &[(&str, &str)]) -> ConfigMap {
    ConfigMap::from_pairs(pairs.iter().copied())
}

fn write(c: &mut dyn Converter, schema: Option<&Schema>, value: &Value) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    c.from_connect_data("t", &Headers::new(), schema, value, &mut out)
        .unwrap()
        .bytes_or_null(out)
}

fn read(c: &mut dyn Converter, bytes: Option<&[u8]>) -> (Option<Schema>, Value) {
    let sv = c.to_connect_data("t", &Headers::new(), bytes).unwrap();
    (sv.schema, sv.value)
}

/// One header value through `from_connect_header`: `None` for null bytes.
fn header(
    c: &mut dyn HeaderConverter,
    schema: Option<&Schema>,
    value: &Value,
) -> connect_api::Result<Option<Vec<u8>>> {
    let mut out = Vec::new();
    let written = c.from_connect_header("t", "h", schema, value, &mut out)?;
    Ok(written.bytes_or_null(out))
}

#[test]
fn string_converter() {
    let mut c = StringConverter::default();
    assert_eq!(
        write(&mut c, Some(&Schema::string()), &Value::from("héllo")).unwrap(),
        "héllo".as_bytes()
    );
    assert_eq!(write(&mut c, None, &Value::Float64(1.0)).unwrap(), b"1.0");
    assert_eq!(write(&mut c, None, &Value::Null), None);
    assert_eq!(
        read(&mut c, Some(b"x")),
        (Some(Schema::optional_string()), Value::from("x"))
    );
    assert_eq!(
        read(&mut c, None),
        (Some(Schema::optional_string()), Value::Null)
    );
    // Malformed UTF-8 is replaced, as Java's decoder does.
    assert_eq!(
        read(&mut c, Some(&[b'a', 0xff])).1,
        Value::from("a\u{fffd}")
    );
    let mut latin = StringConverter::default();
    Converter::configure(
        &mut latin,
        &cfg(&[("converter.encoding", "ISO-8859-1")]),
        false,
    )
    .unwrap();
    assert_eq!(write(&mut latin, None, &Value::from("é")).unwrap(), [0xe9]);
    assert_eq!(read(&mut latin, Some(&[0xe9])).1, Value::from("é"));
    let e = Converter::configure(
        &mut StringConverter::default(),
        &cfg(&[("converter.encoding", "EBCDIC")]),
        false,
    )
    .unwrap_err();
    assert!(e.to_string().contains("converter.encoding"), "{e}");
}

#[test]
fn byte_array_converter() {
    let mut c = ByteArrayConverter;
    assert_eq!(
        write(
            &mut c,
            Some(&Schema::bytes()),
            &Value::Bytes(vec![0, 1].into())
        )
        .unwrap(),
        [0, 1]
    );
    assert_eq!(
        read(&mut c, Some(&[9])),
        (Some(Schema::optional_bytes()), Value::Bytes(vec![9].into()))
    );
    let mut out = Vec::new();
    let e = c
        .from_connect_data(
            "t",
            &Headers::new(),
            Some(&Schema::string()),
            &Value::from("x"),
            &mut out,
        )
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "Invalid schema type for ByteArrayConverter: STRING"
    );
}

#[test]
fn number_converters_are_big_endian() {
    assert_eq!(
        write(&mut LongConverter::default(), None, &Value::Int64(-2)).unwrap(),
        (-2i64).to_be_bytes()
    );
    assert_eq!(
        write(&mut IntegerConverter::default(), None, &Value::Int32(258)).unwrap(),
        [0, 0, 1, 2]
    );
    assert_eq!(
        write(&mut ShortConverter::default(), None, &Value::Int16(-1)).unwrap(),
        [0xff, 0xff]
    );
    assert_eq!(
        write(&mut FloatConverter::default(), None, &Value::Float32(1.5)).unwrap(),
        1.5f32.to_be_bytes()
    );
    assert_eq!(
        write(&mut DoubleConverter::default(), None, &Value::Float64(-0.5)).unwrap(),
        (-0.5f64).to_be_bytes()
    );
    assert_eq!(
        write(
            &mut BooleanConverter::default(),
            None,
            &Value::Boolean(true)
        )
        .unwrap(),
        [1]
    );
    assert_eq!(
        read(&mut ShortConverter::default(), Some(&[1, 0])),
        (Some(Schema::optional_int16()), Value::Int16(256))
    );
    assert_eq!(
        read(&mut BooleanConverter::default(), Some(&[0])),
        (Some(Schema::optional_boolean()), Value::Boolean(false))
    );
    assert_eq!(
        read(&mut DoubleConverter::default(), None),
        (Some(Schema::optional_float64()), Value::Null)
    );
    assert!(BooleanConverter::default()
        .to_connect_data("t", &Headers::new(), Some(&[2]))
        .is_err());
    let e = IntegerConverter::default()
        .to_connect_data("t", &Headers::new(), Some(&[1, 2, 3]))
        .unwrap_err();
    assert!(e.to_string().contains("expected 4"), "{e}");
    let mut out = Vec::new();
    assert!(LongConverter::default()
        .from_connect_data("t", &Headers::new(), None, &Value::Int32(1), &mut out)
        .is_err());
    assert!(LongConverter::default()
        .from_connect_data(
            "t",
            &Headers::new(),
            Some(&Schema::int32()),
            &Value::Int64(1),
            &mut out
        )
        .is_err());
}

#[test]
fn simple_header_converter_infers_types() {
    let mut c = SimpleHeaderConverter;
    let list = SchemaBuilder::array(Schema::int32()).build().unwrap();
    let bytes = header(
        &mut c,
        Some(&list),
        &Value::Array(vec![Value::Int32(1), Value::Int32(2)]),
    )
    .unwrap()
    .unwrap();
    assert_eq!(bytes, b"[1,2]");
    assert_eq!(
        c.to_connect_header("t", "h", Some(b"42")).unwrap().value,
        Value::Int8(42)
    );
    assert_eq!(
        c.to_connect_header("t", "h", Some(b"hello")).unwrap().value,
        Value::from("hello")
    );
    assert_eq!(
        c.to_connect_header("t", "h", Some(b"")).unwrap().schema,
        Some(Schema::string())
    );
    assert_eq!(
        c.to_connect_header("t", "h", None).unwrap().value,
        Value::Null
    );
    assert_eq!(header(&mut c, None, &Value::Null).unwrap(), None);
    // Not UTF-8: decoded as Java decodes, with U+FFFD, into a STRING.
    let raw = c.to_connect_header("t", "h", Some(&[0xff, 0xfe])).unwrap();
    assert_eq!(raw.value, Value::from("\u{fffd}\u{fffd}"));
    assert_eq!(raw.schema.map(|s| s.ty()), Some(connect_api::Type::String));
}

/// StringConverter and SimpleHeaderConverter write floats as Java's
/// `Double.toString` / `Float.toString` (through `Values`), as Kafka's do.
#[test]
fn floats_are_written_as_java_writes_them() {
    let cases = [
        (Value::Float64(1e10), "1.0E10"),
        (Value::Float64(1e-5), "1.0E-5"),
        (Value::Float64(4.9e-324), "4.9E-324"),
        (Value::Float64(f64::NAN), "NaN"),
        (Value::Float64(-0.0), "-0.0"),
        (Value::Float32(1e10), "1.0E10"),
        (Value::Float32(1e-5), "1.0E-5"),
    ];
    for (v, java) in cases {
        let mut s = StringConverter::default();
        assert_eq!(write(&mut s, None, &v).unwrap(), java.as_bytes());
        let written = header(&mut SimpleHeaderConverter, None, &v)
            .unwrap()
            .unwrap();
        assert_eq!(written, java.as_bytes());
    }
}

#[test]
fn other_converters_are_header_converters_too() {
    let mut c = LongConverter::default();
    let bytes = header(&mut c, None, &Value::Int64(1)).unwrap().unwrap();
    assert_eq!(bytes, 1i64.to_be_bytes());
    let mut s = StringConverter::default();
    assert_eq!(
        HeaderConverter::to_connect_header(&mut s, "t", "h", Some(b"v"))
            .unwrap()
            .value,
        Value::from("v")
    );
}

#[test]
fn registry_resolves_kafka_names_and_aliases() {
    let r = ConverterRegistry::with_builtins();
    for name in [
        "org.apache.kafka.connect.json.JsonConverter",
        "JsonConverter",
        "Json",
        "org.apache.kafka.connect.storage.StringConverter",
        "org.apache.kafka.connect.converters.ByteArrayConverter",
        "org.apache.kafka.connect.converters.LongConverter",
        "IntegerConverter",
        "org.apache.kafka.connect.converters.BooleanConverter",
    ] {
        assert!(r.create_converter(name).is_ok(), "{name}");
    }
    #[cfg(feature = "avro")]
    for name in ["io.confluent.connect.avro.AvroConverter", "AvroConverter"] {
        assert!(r.create_converter(name).is_ok(), "{name}");
    }
    for name in [
        "org.apache.kafka.connect.storage.SimpleHeaderConverter",
        "SimpleHeaderConverter",
        "JsonConverter",
    ] {
        assert!(r.create_header_converter(name).is_ok(), "{name}");
    }
    assert!(
        r.create_header_converter("AvroConverter").is_err(),
        "Avro is not a header converter"
    );
    let e = r.create_converter("com.example.Nope").err().unwrap();
    assert!(
        e.to_string().contains("com.example.Nope") && e.to_string().contains("JsonConverter"),
        "{e}"
    );
}

#[test]
fn worker_config_builds_configured_converters() {
    let r = ConverterRegistry::with_builtins();
    let worker = cfg(&[
        (
            "key.converter",
            "org.apache.kafka.connect.storage.StringConverter",
        ),
        (
            "value.converter",
            "org.apache.kafka.connect.json.JsonConverter",
        ),
        ("value.converter.schemas.enable", "false"),
        ("header.converter.converter.type", "ignored-by-runtime"),
    ]);
    let mut value = r
        .configured_converter(&worker, ConverterRole::Value)
        .unwrap();
    assert_eq!(
        write(value.as_mut(), Some(&Schema::string()), &Value::from("x")).unwrap(),
        br#""x""#,
        "schemas.enable=false applied"
    );
    let mut key = r.configured_converter(&worker, ConverterRole::Key).unwrap();
    assert_eq!(write(key.as_mut(), None, &Value::from("k")).unwrap(), b"k");
    let mut headers = r.configured_header_converter(&worker).unwrap();
    assert_eq!(
        header(headers.as_mut(), None, &Value::Int32(5))
            .unwrap()
            .unwrap(),
        b"5"
    );
    // A connector's own converter wins over the worker's.
    let connector = cfg(&[("value.converter", "JsonConverter")]);
    let mut v = r
        .connector_converter(&connector, &worker, ConverterRole::Value)
        .unwrap();
    assert_eq!(
        write(v.as_mut(), Some(&Schema::string()), &Value::from("x")).unwrap(),
        br#"{"schema":{"type":"string","optional":false},"payload":"x"}"#
    );
    let e = r
        .configured_converter(&ConfigMap::new(), ConverterRole::Key)
        .err()
        .unwrap();
    assert!(e.to_string().contains("key.converter"), "{e}");
    let bad = cfg(&[
        ("value.converter", "JsonConverter"),
        ("value.converter.decimal.format", "HEX"),
    ]);
    let e = r
        .configured_converter(&bad, ConverterRole::Value)
        .err()
        .unwrap();
    assert!(e.to_string().contains("decimal.format"), "{e}");
}
