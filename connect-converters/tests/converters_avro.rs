//! AvroConverter: Confluent's schema mapping and wire format, bytes equal to
//! apache-avro's encoding, per-schema caching, and the HTTP registry client
//! against a local server.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use apache_avro::types::Value as AvroValue;
use connect_api::logical::{date_schema, decimal_schema, timestamp_schema};
use connect_api::{
    ConfigMap, Converter, Headers, Schema, SchemaBuilder, Serialized, Struct, Value,
};
use connect_converters::avro::{
    AvroConverter, HttpSchemaRegistry, MemorySchemaRegistry, SchemaRegistryClient,
};

fn user_schema() -> Schema {
    SchemaBuilder::struct_()
        .name("com.example.User")
        .version(3)
        .field("id", Schema::int64())
        .field("name", Schema::string())
        .field("age", Schema::optional_int8())
        .field("balance", decimal_schema(2))
        .field("born", date_schema())
        .field("seen", timestamp_schema())
        .field(
            "tags",
            SchemaBuilder::map(Schema::string(), Schema::int32())
                .build()
                .unwrap(),
        )
        .build()
        .unwrap()
}

fn user() -> Value {
    let mut s = Struct::new(user_schema()).unwrap();
    s.put("id", 42i64)
        .unwrap()
        .put("name", "Ada")
        .unwrap()
        .put("age", 36i8)
        .unwrap()
        .put("balance", Value::Decimal("12.34".parse().unwrap()))
        .unwrap()
        .put("born", Value::Date(-3000))
        .unwrap()
        .put("seen", Value::Timestamp(1_706_708_700_000))
        .unwrap()
        .put("tags", Value::string_map([("a", Value::Int32(1))]))
        .unwrap();
    Value::Struct(s)
}

fn write(c: &mut AvroConverter, topic: &str, schema: &Schema, value: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    let written = c
        .from_connect_data(topic, &Headers::new(), Some(schema), value, &mut out)
        .unwrap();
    assert_eq!(written, Serialized::Bytes);
    out
}

#[test]
fn registers_confluent_mapping_under_topic_value() {
    let registry = Arc::new(MemorySchemaRegistry::new());
    let mut c = AvroConverter::with_client(registry.clone());
    let bytes = write(&mut c, "users", &user_schema(), &user());
    assert_eq!(&bytes[..5], &[0, 0, 0, 0, 1], "magic byte and schema id 1");
    let text = registry.schema_by_id(1).unwrap();
    let avro: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(avro["type"], "record");
    assert_eq!(avro["name"], "User");
    assert_eq!(avro["namespace"], "com.example");
    assert_eq!(avro["connect.version"], 3);
    assert_eq!(avro["connect.name"], "com.example.User");
    let fields = avro["fields"].as_array().unwrap();
    assert_eq!(
        fields[2],
        serde_json::json!({"name": "age", "type": ["null", {"type": "int", "connect.type": "int8"}], "default": null})
    );
    assert_eq!(fields[3]["type"]["logicalType"], "decimal");
    assert_eq!(fields[3]["type"]["scale"], 2);
    assert_eq!(
        fields[3]["type"]["connect.name"],
        "org.apache.kafka.connect.data.Decimal"
    );
    assert_eq!(fields[4]["type"]["logicalType"], "date");
    assert_eq!(fields[5]["type"]["logicalType"], "timestamp-millis");
    assert_eq!(
        fields[6]["type"],
        serde_json::json!({"type": "map", "values": "int"})
    );
    assert_eq!(registry.lookup("users-value", &text).unwrap(), 1);
}

#[test]
fn datum_equals_apache_avro_encoding() {
    let registry = Arc::new(MemorySchemaRegistry::new());
    let mut c = AvroConverter::with_client(registry.clone());
    let bytes = write(&mut c, "users", &user_schema(), &user());
    let schema = apache_avro::Schema::parse_str(&registry.schema_by_id(1).unwrap()).unwrap();
    let expected = AvroValue::Record(vec![
        ("id".into(), AvroValue::Long(42)),
        ("name".into(), AvroValue::String("Ada".into())),
        (
            "age".into(),
            AvroValue::Union(1, Box::new(AvroValue::Int(36))),
        ),
        (
            "balance".into(),
            AvroValue::Decimal(apache_avro::Decimal::from(vec![0x04, 0xd2])),
        ),
        ("born".into(), AvroValue::Date(-3000)),
        ("seen".into(), AvroValue::TimestampMillis(1_706_708_700_000)),
        (
            "tags".into(),
            AvroValue::Map([("a".to_string(), AvroValue::Int(1))].into_iter().collect()),
        ),
    ]);
    assert_eq!(
        &bytes[5..],
        &apache_avro::to_avro_datum(&schema, expected).unwrap()[..]
    );
}

#[test]
fn reads_back_and_caches_per_schema() {
    let registry = Arc::new(MemorySchemaRegistry::new());
    let mut writer = AvroConverter::with_client(registry.clone());
    let mut reader = AvroConverter::with_client(registry.clone());
    let first = write(&mut writer, "users", &user_schema(), &user());
    let calls = registry.calls();
    // An equal schema built anew, and the same topic: no registry call.
    for _ in 0..10 {
        let bytes = write(&mut writer, "users", &user_schema(), &user());
        assert_eq!(bytes, first);
    }
    assert_eq!(registry.calls(), calls);
    for _ in 0..10 {
        let back = reader
            .to_connect_data("users", &Headers::new(), Some(&first))
            .unwrap();
        assert_eq!(back.schema, Some(user_schema()));
        assert_eq!(back.value, user());
    }
    assert_eq!(registry.calls(), calls + 1, "one fetch by id, then cached");
    // A new topic registers under its own subject (same global id).
    let other = write(&mut writer, "people", &user_schema(), &user());
    assert_eq!(other, first);
    assert_eq!(
        registry
            .lookup("people-value", &registry.schema_by_id(1).unwrap())
            .unwrap(),
        1
    );
}

#[test]
fn keys_use_the_key_subject_and_nulls_are_tombstones() {
    let registry = MemorySchemaRegistry::for_scope("avro-keys-test");
    let mut c = AvroConverter::default();
    let cfg: ConfigMap = [(
        "schema.registry.url".to_string(),
        "mock://avro-keys-test".to_string(),
    )]
    .into_iter()
    .collect();
    c.configure(&cfg, true).unwrap();
    let bytes = write(&mut c, "t", &Schema::string(), &Value::from("k"));
    assert_eq!(bytes, [0, 0, 0, 0, 1, 2, b'k']);
    assert_eq!(registry.lookup("t-key", r#""string""#).unwrap(), 1);
    let mut out = Vec::new();
    let written = c
        .from_connect_data(
            "t",
            &Headers::new(),
            Some(&Schema::optional_string()),
            &Value::Null,
            &mut out,
        )
        .unwrap();
    assert_eq!(written, Serialized::Null);
    assert!(c
        .from_connect_data(
            "t",
            &Headers::new(),
            Some(&Schema::string()),
            &Value::Null,
            &mut out
        )
        .is_err());
    assert!(c
        .from_connect_data("t", &Headers::new(), None, &Value::from("x"), &mut out)
        .is_err());
    let null = c.to_connect_data("t", &Headers::new(), None).unwrap();
    assert_eq!((null.schema, null.value), (None, Value::Null));
}

#[test]
fn reads_schemas_from_other_writers() {
    let registry = Arc::new(MemorySchemaRegistry::new());
    let text = r#"{"type":"record","name":"Order","namespace":"shop","fields":[
        {"name":"id","type":"long"},
        {"name":"state","type":{"type":"enum","name":"State","symbols":["NEW","PAID"]}},
        {"name":"note","type":["null","string"],"default":null},
        {"name":"qty","type":"int","default":1}]}"#;
    let id = registry.register("orders-value", text).unwrap();
    let avro = apache_avro::Schema::parse_str(text).unwrap();
    let datum = apache_avro::to_avro_datum(
        &avro,
        AvroValue::Record(vec![
            ("id".into(), AvroValue::Long(7)),
            ("state".into(), AvroValue::Enum(1, "PAID".into())),
            (
                "note".into(),
                AvroValue::Union(0, Box::new(AvroValue::Null)),
            ),
            ("qty".into(), AvroValue::Int(3)),
        ]),
    )
    .unwrap();
    let mut framed = vec![0];
    framed.extend_from_slice(&id.to_be_bytes());
    framed.extend_from_slice(&datum);
    let mut c = AvroConverter::with_client(registry);
    let sv = c
        .to_connect_data("orders", &Headers::new(), Some(&framed))
        .unwrap();
    let schema = sv.schema.unwrap();
    assert_eq!(schema.name(), Some("shop.Order"));
    assert_eq!(
        schema
            .field("state")
            .unwrap()
            .schema()
            .parameter("io.confluent.connect.avro.Enum"),
        Some("shop.State")
    );
    assert_eq!(
        schema.field("qty").unwrap().schema().default_value(),
        Some(&Value::Int32(1))
    );
    let s = sv.value.as_struct().unwrap().clone();
    assert_eq!(s.get("state").unwrap(), &Value::from("PAID"));
    assert_eq!(s.get("note").unwrap(), &Value::Null);
    // The enum writes back as the same enum.
    let again = write(&mut c, "orders", &schema, &sv.value);
    assert_eq!(&again[5..], &datum[..]);
}

#[test]
fn wire_format_errors_are_data_errors() {
    let mut c = AvroConverter::with_client(Arc::new(MemorySchemaRegistry::new()));
    for (bytes, needle) in [
        (&[1u8, 0, 0, 0, 1, 2][..], "magic byte"),
        (&[0u8, 0, 0][..], "too short"),
        (&[0u8, 0, 0, 0, 9, 2][..], "Schema 9 not found"),
    ] {
        let e = c
            .to_connect_data("t", &Headers::new(), Some(bytes))
            .unwrap_err();
        assert!(e.to_string().contains(needle), "{e}");
        assert!(
            matches!(e.kind(), connect_api::ErrorKind::Data { .. }),
            "{e:?}"
        );
    }
}

#[test]
fn missing_registry_url_names_the_key() {
    let mut c = AvroConverter::default();
    let e = c.configure(&ConfigMap::new(), false).unwrap_err();
    assert!(e.to_string().contains("schema.registry.url"), "{e}");
}

/// A one-thread HTTP server answering like a schema registry; it records
/// each request line and body.
fn fake_registry() -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut request_line = String::new();
            if reader.read_line(&mut request_line).is_err() {
                continue;
            }
            let mut length = 0;
            let mut auth = String::new();
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                let lower = line.to_ascii_lowercase();
                if let Some(v) = lower.strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap_or(0);
                }
                if lower.starts_with("authorization:") {
                    auth = format!("authorization:{}", &line.trim()["authorization:".len()..]);
                }
            }
            let mut body = vec![0; length];
            reader.read_exact(&mut body).unwrap();
            let body = String::from_utf8(body).unwrap();
            log.lock()
                .unwrap()
                .push(format!("{} {} {}", request_line.trim(), auth, body));
            let (status, answer) =
                if request_line.starts_with("POST /subjects/orders-value/versions") {
                    ("200 OK", r#"{"id":17}"#.to_string())
                } else if request_line.starts_with("GET /schemas/ids/17") {
                    (
                        "200 OK",
                        serde_json::json!({"schema": "\"string\""}).to_string(),
                    )
                } else {
                    (
                        "404 Not Found",
                        r#"{"error_code":40403,"message":"Schema not found"}"#.to_string(),
                    )
                };
            let _ = write!(stream, "HTTP/1.1 {status}\r\nContent-Type: application/vnd.schemaregistry.v1+json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{answer}", answer.len());
        }
    });
    (url, seen)
}

#[test]
fn http_registry_speaks_confluents_rest_api() {
    let (url, seen) = fake_registry();
    let client = HttpSchemaRegistry::new(&url, Some("user:secret")).unwrap();
    assert_eq!(client.register("orders-value", r#""string""#).unwrap(), 17);
    assert_eq!(client.schema_by_id(17).unwrap(), r#""string""#);
    let e = client.schema_by_id(5).unwrap_err();
    assert!(
        e.to_string().contains("404") && e.to_string().contains("Schema not found"),
        "{e}"
    );
    let log = seen.lock().unwrap().clone();
    assert!(
        log[0].starts_with(
            "POST /subjects/orders-value/versions HTTP/1.1 authorization: Basic dXNlcjpzZWNyZXQ="
        ),
        "{log:?}"
    );
    assert!(log[0].ends_with(r#"{"schema":"\"string\""}"#), "{log:?}");
    assert!(log[1].starts_with("GET /schemas/ids/17"), "{log:?}");
    assert!(!format!("{client:?}").contains("secret"));
}

#[test]
fn converter_over_http_registers_once() {
    let (url, seen) = fake_registry();
    let mut c = AvroConverter::default();
    let cfg: ConfigMap = [("schema.registry.url".to_string(), url)]
        .into_iter()
        .collect();
    c.configure(&cfg, false).unwrap();
    for _ in 0..5 {
        let bytes = write(&mut c, "orders", &Schema::string(), &Value::from("x"));
        assert_eq!(bytes, [0, 0, 0, 0, 17, 2, b'x']);
    }
    let back = c
        .to_connect_data("orders", &Headers::new(), Some(&[0, 0, 0, 0, 17, 2, b'y']))
        .unwrap();
    assert_eq!(back.value, Value::from("y"));
    assert_eq!(seen.lock().unwrap().len(), 2, "one register, one fetch");
}

#[test]
fn unreachable_registry_is_retriable() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    let client = HttpSchemaRegistry::new(&url, None).unwrap();
    assert!(client.schema_by_id(1).unwrap_err().is_retriable());
}
