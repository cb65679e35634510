//! Converter throughput on a 10-field record (strings, ints, a decimal, a
//! timestamp, an optional field, a nested struct), each beside its floor in
//! the same run:
//!
//! - JSON with schemas on / off: serde_json serializing / parsing the
//!   equivalent `#[derive(Serialize, Deserialize)]` struct (same JSON shape);
//!   for decoding with the envelope, also serde_json parsing the whole
//!   envelope (`schema` skipped as `IgnoredAny`), the least any JSON reader
//!   must do with those bytes;
//! - Avro: apache-avro encoding / decoding the equivalent prebuilt Avro value
//!   with the same schema.
//!
//! The `paired_ratio` group measures each converter and its floor
//! alternately in small blocks within one sample, so both see the same
//! machine load; its reported "time" is the ratio converter/floor x 1000
//! (1500 ns = 1.5x). On a shared, loaded machine those ratios are far more
//! stable than ratios of separately measured figures.
//!
//! Results and ratios: `benches/results/converters.md`.

#![allow(missing_docs)] // criterion_group! generates an undocumented pub fn

use std::sync::Arc;
use std::time::{Duration, Instant};

use apache_avro::types::Value as AvroValue;
use connect_api::logical::{decimal_schema, timestamp_schema};
use connect_api::{ConfigMap, Converter, Headers, Schema, SchemaBuilder, Struct, Value};
use connect_runtime::converters::avro::{
    AvroConverter, MemorySchemaRegistry, SchemaRegistryClient,
};
use connect_runtime::converters::JsonConverter;
use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use serde::de::IgnoredAny;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
struct Address {
    street: String,
    city: String,
    zip: i32,
}

/// The record as a plain Rust struct, field for field; `balance` is the
/// decimal's JSON form (base64 of the unscaled bytes, as Kafka writes it).
#[derive(Serialize, Deserialize)]
struct User {
    id: i64,
    name: String,
    email: String,
    age: i32,
    country: String,
    balance: String,
    created: i64,
    nickname: Option<String>,
    active: bool,
    address: Address,
}

/// The record for apache-avro's serde writer (the decimal as its unscaled
/// bytes, the timestamp as epoch milliseconds).
#[derive(Serialize)]
struct AvroUser {
    id: i64,
    name: String,
    email: String,
    age: i32,
    country: String,
    #[serde(with = "apache_avro::serde_avro_bytes")]
    balance: Vec<u8>,
    created: i64,
    nickname: Option<String>,
    active: bool,
    address: Address,
}

#[derive(Deserialize)]
#[allow(dead_code)] // read to measure the parse; fields are not inspected
struct Envelope {
    schema: IgnoredAny,
    payload: User,
}

fn address_schema() -> Schema {
    SchemaBuilder::struct_()
        .name("com.example.Address")
        .field("street", Schema::string())
        .field("city", Schema::string())
        .field("zip", Schema::int32())
        .build()
        .expect("valid schema")
}

fn user_schema() -> Schema {
    SchemaBuilder::struct_()
        .name("com.example.User")
        .field("id", Schema::int64())
        .field("name", Schema::string())
        .field("email", Schema::string())
        .field("age", Schema::int32())
        .field("country", Schema::string())
        .field("balance", decimal_schema(2))
        .field("created", timestamp_schema())
        .field("nickname", Schema::optional_string())
        .field("active", Schema::boolean())
        .field("address", address_schema())
        .build()
        .expect("valid schema")
}

fn user_value(schema: &Schema) -> Value {
    let mut address = Struct::new(address_schema()).expect("struct");
    address
        .put("street", "12 Analytical Engine Row")
        .expect("street")
        .put("city", "London")
        .expect("city")
        .put("zip", 10_115)
        .expect("zip");
    let mut user = Struct::new(schema.clone()).expect("struct");
    user.put("id", 1_234_567_890i64)
        .expect("id")
        .put("name", "Ada Lovelace")
        .expect("name")
        .put("email", "ada@example.com")
        .expect("email")
        .put("age", 36)
        .expect("age")
        .put("country", "United Kingdom")
        .expect("country")
        .put(
            "balance",
            Value::Decimal("12345.67".parse().expect("decimal")),
        )
        .expect("balance")
        .put("created", Value::Timestamp(1_706_708_700_000))
        .expect("created")
        .put("nickname", "ada")
        .expect("nickname")
        .put("active", true)
        .expect("active")
        .put("address", address)
        .expect("address");
    Value::Struct(user)
}

fn user_struct() -> User {
    User {
        id: 1_234_567_890,
        name: "Ada Lovelace".into(),
        email: "ada@example.com".into(),
        age: 36,
        country: "United Kingdom".into(),
        balance: "EtaH".into(),
        created: 1_706_708_700_000,
        nickname: Some("ada".into()),
        active: true,
        address: Address {
            street: "12 Analytical Engine Row".into(),
            city: "London".into(),
            zip: 10_115,
        },
    }
}

fn json_converter(schemas: bool) -> JsonConverter {
    let mut c = JsonConverter::new();
    let cfg: ConfigMap = [("schemas.enable".to_string(), schemas.to_string())]
        .into_iter()
        .collect();
    Converter::configure(&mut c, &cfg, false).expect("config");
    c
}

fn bench_json(c: &mut Criterion) {
    let schema = user_schema();
    let value = user_value(&schema);
    let user = user_struct();
    let headers = Headers::new();
    for schemas in [true, false] {
        let label = if schemas {
            "json_schemas_on"
        } else {
            "json_schemas_off"
        };
        let mut conv = json_converter(schemas);
        let mut encoded = Vec::new();
        conv.from_connect_data("t", &headers, Some(&schema), &value, &mut encoded)
            .expect("encode");
        let payload = serde_json::to_vec(&user).expect("floor encode");

        let mut g = c.benchmark_group(format!("{label}/encode"));
        g.throughput(Throughput::Elements(1));
        let mut buf = Vec::with_capacity(4096);
        g.bench_function("converter", |b| {
            b.iter(|| {
                buf.clear();
                conv.from_connect_data("t", &headers, Some(&schema), black_box(&value), &mut buf)
                    .expect("encode");
                black_box(buf.len())
            })
        });
        g.bench_function("serde_json_floor", |b| {
            b.iter(|| {
                buf.clear();
                serde_json::to_writer(&mut buf, black_box(&user)).expect("encode");
                black_box(buf.len())
            })
        });
        g.finish();

        let mut g = c.benchmark_group(format!("{label}/decode"));
        g.throughput(Throughput::Elements(1));
        g.bench_function("converter", |b| {
            b.iter(|| {
                black_box(
                    conv.to_connect_data("t", &headers, Some(black_box(&encoded)))
                        .expect("decode"),
                )
            })
        });
        g.bench_function("serde_json_floor", |b| {
            b.iter(|| {
                black_box(serde_json::from_slice::<User>(black_box(&payload)).expect("decode"))
            })
        });
        if schemas {
            g.bench_function(
                BenchmarkId::new("serde_json_floor", "whole_envelope"),
                |b| {
                    b.iter(|| {
                        black_box(
                            serde_json::from_slice::<Envelope>(black_box(&encoded))
                                .expect("decode"),
                        )
                    })
                },
            );
        }
        g.finish();
    }
}

fn avro_equivalent(schema: &apache_avro::Schema) -> AvroValue {
    let address = AvroValue::Record(vec![
        (
            "street".into(),
            AvroValue::String("12 Analytical Engine Row".into()),
        ),
        ("city".into(), AvroValue::String("London".into())),
        ("zip".into(), AvroValue::Int(10_115)),
    ]);
    let v = AvroValue::Record(vec![
        ("id".into(), AvroValue::Long(1_234_567_890)),
        ("name".into(), AvroValue::String("Ada Lovelace".into())),
        ("email".into(), AvroValue::String("ada@example.com".into())),
        ("age".into(), AvroValue::Int(36)),
        ("country".into(), AvroValue::String("United Kingdom".into())),
        (
            "balance".into(),
            AvroValue::Decimal(apache_avro::Decimal::from(vec![0x12, 0xd6, 0x87])),
        ),
        (
            "created".into(),
            AvroValue::TimestampMillis(1_706_708_700_000),
        ),
        (
            "nickname".into(),
            AvroValue::Union(1, Box::new(AvroValue::String("ada".into()))),
        ),
        ("active".into(), AvroValue::Boolean(true)),
        ("address".into(), address),
    ]);
    assert!(v.validate(schema), "the floor value fits the schema");
    v
}

fn bench_avro(c: &mut Criterion) {
    let schema = user_schema();
    let value = user_value(&schema);
    let headers = Headers::new();
    let registry = Arc::new(MemorySchemaRegistry::new());
    let mut conv = AvroConverter::with_client(registry.clone());
    let mut encoded = Vec::new();
    conv.from_connect_data("t", &headers, Some(&schema), &value, &mut encoded)
        .expect("encode");
    let avro_schema =
        apache_avro::Schema::parse_str(&registry.schema_by_id(1).expect("registered"))
            .expect("schema");
    let floor_value = avro_equivalent(&avro_schema);
    let floor_bytes =
        apache_avro::to_avro_datum(&avro_schema, floor_value.clone()).expect("floor encode");
    assert_eq!(
        &encoded[5..],
        &floor_bytes[..],
        "the converter writes apache-avro's bytes"
    );

    let mut g = c.benchmark_group("avro/encode");
    g.throughput(Throughput::Elements(1));
    let mut buf = Vec::with_capacity(4096);
    g.bench_function("converter", |b| {
        b.iter(|| {
            buf.clear();
            conv.from_connect_data("t", &headers, Some(&schema), black_box(&value), &mut buf)
                .expect("encode");
            black_box(buf.len())
        })
    });
    let u = user_struct();
    let avro_user = AvroUser {
        id: u.id,
        name: u.name,
        email: u.email,
        age: u.age,
        country: u.country,
        balance: vec![0x12, 0xd6, 0x87],
        created: u.created,
        nickname: u.nickname,
        active: u.active,
        address: u.address,
    };
    buf.clear();
    apache_avro::write_avro_datum_ref(&avro_schema, &avro_user, &mut buf).expect("serde floor");
    assert_eq!(buf, floor_bytes, "the serde floor writes the same bytes");
    g.bench_function(BenchmarkId::new("apache_avro_floor", "serde_struct"), |b| {
        b.iter(|| {
            buf.clear();
            apache_avro::write_avro_datum_ref(&avro_schema, black_box(&avro_user), &mut buf)
                .expect("encode");
            black_box(buf.len())
        })
    });
    g.bench_function(BenchmarkId::new("apache_avro_floor", "value"), |b| {
        b.iter(|| {
            black_box(
                apache_avro::to_avro_datum(&avro_schema, black_box(&floor_value).clone())
                    .expect("encode"),
            )
        })
    });
    g.finish();

    let mut g = c.benchmark_group("avro/decode");
    g.throughput(Throughput::Elements(1));
    g.bench_function("converter", |b| {
        b.iter(|| {
            black_box(
                conv.to_connect_data("t", &headers, Some(black_box(&encoded)))
                    .expect("decode"),
            )
        })
    });
    g.bench_function("apache_avro_floor", |b| {
        b.iter(|| {
            let mut datum = black_box(&floor_bytes[..]);
            black_box(apache_avro::from_avro_datum(&avro_schema, &mut datum, None).expect("decode"))
        })
    });
    g.finish();
}

/// Time `a` and `b` alternately in blocks of 32 iterations and report
/// 1000 x (time of a / time of b) ns per iteration.
fn paired(c: &mut Criterion, name: &str, mut a: impl FnMut(), mut b: impl FnMut()) {
    let mut g = c.benchmark_group("paired_ratio");
    g.bench_function(name, |bench| {
        bench.iter_custom(|iters| {
            let (mut ta, mut tb) = (Duration::ZERO, Duration::ZERO);
            let mut done = 0;
            while done < iters {
                let n = (iters - done).min(32);
                let t = Instant::now();
                for _ in 0..n {
                    a();
                }
                ta += t.elapsed();
                let t = Instant::now();
                for _ in 0..n {
                    b();
                }
                tb += t.elapsed();
                done += n;
            }
            let ratio_per_mille = ta.as_nanos() * 1000 / tb.as_nanos().max(1);
            Duration::from_nanos(
                u64::try_from(ratio_per_mille)
                    .unwrap_or(u64::MAX)
                    .saturating_mul(iters),
            )
        })
    });
    g.finish();
}

fn bench_paired(c: &mut Criterion) {
    let schema = user_schema();
    let value = user_value(&schema);
    let user = user_struct();
    let headers = Headers::new();
    for schemas in [true, false] {
        let label = if schemas {
            "json_schemas_on"
        } else {
            "json_schemas_off"
        };
        let mut conv = json_converter(schemas);
        let mut encoded = Vec::new();
        conv.from_connect_data("t", &headers, Some(&schema), &value, &mut encoded)
            .expect("encode");
        let payload = serde_json::to_vec(&user).expect("floor encode");
        let (mut b1, mut b2) = (Vec::with_capacity(4096), Vec::with_capacity(4096));
        let conv_cell = std::cell::RefCell::new(conv);
        paired(
            c,
            &format!("{label}_encode_vs_serde_json"),
            || {
                b1.clear();
                conv_cell
                    .borrow_mut()
                    .from_connect_data("t", &headers, Some(&schema), black_box(&value), &mut b1)
                    .expect("encode");
            },
            || {
                b2.clear();
                serde_json::to_writer(&mut b2, black_box(&user)).expect("encode");
            },
        );
        paired(
            c,
            &format!("{label}_decode_vs_serde_json"),
            || {
                black_box(
                    conv_cell
                        .borrow_mut()
                        .to_connect_data("t", &headers, Some(black_box(&encoded)))
                        .expect("decode"),
                );
            },
            || {
                black_box(serde_json::from_slice::<User>(black_box(&payload)).expect("decode"));
            },
        );
        if schemas {
            paired(
                c,
                "json_schemas_on_decode_vs_serde_json_whole_envelope",
                || {
                    black_box(
                        conv_cell
                            .borrow_mut()
                            .to_connect_data("t", &headers, Some(black_box(&encoded)))
                            .expect("decode"),
                    );
                },
                || {
                    black_box(
                        serde_json::from_slice::<Envelope>(black_box(&encoded)).expect("decode"),
                    );
                },
            );
        }
    }
    let registry = Arc::new(MemorySchemaRegistry::new());
    let conv = std::cell::RefCell::new(AvroConverter::with_client(registry.clone()));
    let mut encoded = Vec::new();
    conv.borrow_mut()
        .from_connect_data("t", &headers, Some(&schema), &value, &mut encoded)
        .expect("encode");
    let avro_schema =
        apache_avro::Schema::parse_str(&registry.schema_by_id(1).expect("registered"))
            .expect("schema");
    let floor_bytes = encoded[5..].to_vec();
    let u = user_struct();
    let avro_user = AvroUser {
        id: u.id,
        name: u.name,
        email: u.email,
        age: u.age,
        country: u.country,
        balance: vec![0x12, 0xd6, 0x87],
        created: u.created,
        nickname: u.nickname,
        active: u.active,
        address: u.address,
    };
    let (mut b1, mut b2) = (Vec::with_capacity(4096), Vec::with_capacity(4096));
    paired(
        c,
        "avro_encode_vs_apache_avro_serde",
        || {
            b1.clear();
            conv.borrow_mut()
                .from_connect_data("t", &headers, Some(&schema), black_box(&value), &mut b1)
                .expect("encode");
        },
        || {
            b2.clear();
            apache_avro::write_avro_datum_ref(&avro_schema, black_box(&avro_user), &mut b2)
                .expect("encode");
        },
    );
    paired(
        c,
        "avro_decode_vs_apache_avro",
        || {
            black_box(
                conv.borrow_mut()
                    .to_connect_data("t", &headers, Some(black_box(&encoded)))
                    .expect("decode"),
            );
        },
        || {
            let mut datum = black_box(&floor_bytes[..]);
            black_box(
                apache_avro::from_avro_datum(&avro_schema, &mut datum, None).expect("decode"),
            );
        },
    );
}

criterion_group!(benches, bench_json, bench_avro, bench_paired);
criterion_main!(benches);
