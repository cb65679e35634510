//! Transform chain throughput: five common SMTs, built from a Kafka-style
//! config through the registry, on a 10-field struct record.
//!
//! Goal: at least 2M records/s on one core (met: see BENCHMARKS.md). Run with
//! `cargo bench -p connect-benches --bench transforms`.

#![allow(missing_docs)] // criterion_group! generates an undocumented pub fn

/// With `--features mimalloc`, the figures for the allocator the worker
/// binaries use (see BENCHMARKS.md).
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::hint::black_box;

use connect_api::config::ConfigMap;
use connect_api::{Record, Schema, SchemaBuilder, SinkRecord, Struct, Value};
use connect_transforms::chain::TransformChain;
use connect_transforms::registry::TransformRegistry;
use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};

const BATCH: usize = 1024;

const ALIASES: [&str; 5] = ["replace", "insert", "cast", "mask", "route"];

/// The five-SMT chain, or only `only` of it.
fn chain_config(only: Option<&str>) -> ConfigMap {
    let mut config = ConfigMap::from([
        ("transforms", "replace,insert,cast,mask,route"),
        (
            "transforms.replace.type",
            "org.apache.kafka.connect.transforms.ReplaceField$Value",
        ),
        ("transforms.replace.exclude", "note"),
        ("transforms.replace.renames", "qty:quantity"),
        ("transforms.insert.type", "InsertField$Value"),
        ("transforms.insert.static.field", "source"),
        ("transforms.insert.static.value", "bench"),
        ("transforms.insert.timestamp.field", "ingested_at"),
        ("transforms.cast.type", "Cast$Value"),
        ("transforms.cast.spec", "amount:string,quantity:int64"),
        ("transforms.mask.type", "MaskField$Value"),
        ("transforms.mask.fields", "email"),
        ("transforms.route.type", "RegexRouter"),
        ("transforms.route.regex", "(.*)-raw"),
        ("transforms.route.replacement", "$1"),
    ]);
    if let Some(alias) = only {
        config.insert("transforms".to_string(), alias.to_string());
    }
    config
}

fn records() -> Vec<SinkRecord> {
    let schema = SchemaBuilder::struct_()
        .name("com.example.Order")
        .field("id", Schema::int64())
        .field("name", Schema::string())
        .field("email", Schema::string())
        .field("amount", Schema::float64())
        .field("qty", Schema::int32())
        .field("active", Schema::boolean())
        .field("country", Schema::string())
        .field("created", Schema::int64())
        .field("note", Schema::optional_string())
        .field("score", Schema::float32())
        .build()
        .expect("schema");
    (0..BATCH as i64)
        .map(|i| {
            let mut s = Struct::new(schema.clone()).expect("struct");
            s.put("id", i)
                .and_then(|s| s.put("name", format!("customer-{i}")))
                .and_then(|s| s.put("email", format!("c{i}@example.com")))
                .and_then(|s| s.put("amount", i as f64 * 1.25))
                .and_then(|s| s.put("qty", (i % 10) as i32))
                .and_then(|s| s.put("active", i % 2 == 0))
                .and_then(|s| s.put("country", "NL"))
                .and_then(|s| s.put("created", 1_700_000_000_000 + i))
                .and_then(|s| s.put("note", Value::Null))
                .and_then(|s| s.put("score", 0.5f32))
                .expect("fields");
            let rec = Record::new("orders-raw", Some(schema.clone()), Value::Struct(s))
                .with_timestamp(1_700_000_000_000 + i);
            SinkRecord::new(rec, 0, i)
        })
        .collect()
}

fn five_smt_chain(c: &mut Criterion) {
    let registry = TransformRegistry::with_builtins();
    let mut chain = TransformChain::<SinkRecord>::from_config(&chain_config(None), &registry)
        .expect("chain config");
    let input = records();
    // Sanity: the chain does what the benchmark claims.
    let out = chain.apply(input[1].clone()).expect("apply").expect("kept");
    assert_eq!(&*out.record.topic, "orders");
    let v = out.record.value.as_struct().expect("struct");
    assert_eq!(v.get("amount").expect("amount"), &Value::from("1.25"));
    assert_eq!(v.get("email").expect("email"), &Value::from(""));
    assert_eq!(v.get("source").expect("source"), &Value::from("bench"));
    assert_eq!(v.schema().field_count(), 11);

    let mut group = c.benchmark_group("transforms");
    group.throughput(Throughput::Elements(BATCH as u64));
    // The chain's own work: criterion drops the returned records after the
    // clock stops, as it builds the inputs before it starts.
    group.bench_function("chain_5_smts_apply_only", |b| {
        b.iter_batched(
            || input.clone(),
            |batch| {
                batch
                    .into_iter()
                    .map(|r| chain.apply(r).expect("apply"))
                    .collect::<Vec<_>>()
            },
            BatchSize::LargeInput,
        )
    });
    // With each record dropped inside the timed loop, as a pipeline's next
    // stage would.
    timed_with_drop(
        &mut group,
        "chain_5_smts_10_field_struct",
        &mut chain,
        &input,
    );
    // Each stage alone, to see where the chain's time goes.
    for alias in ALIASES {
        let mut single =
            TransformChain::<SinkRecord>::from_config(&chain_config(Some(alias)), &registry)
                .expect("chain config");
        timed_with_drop(&mut group, &format!("single_{alias}"), &mut single, &input);
    }
    // The floor: moving the records through an empty chain and dropping them.
    timed_with_drop(
        &mut group,
        "empty_chain",
        &mut TransformChain::<SinkRecord>::empty(),
        &input,
    );
    group.finish();
}

/// Time `chain` over batches of `input`, each output dropped in the loop.
fn timed_with_drop(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    name: &str,
    chain: &mut TransformChain<SinkRecord>,
    input: &[SinkRecord],
) {
    group.bench_function(name, |b| {
        b.iter_batched(
            || input.to_vec(),
            |batch| {
                for r in batch {
                    black_box(chain.apply(r).expect("apply"));
                }
            },
            BatchSize::LargeInput,
        )
    });
}

criterion_group!(benches, five_smt_chain);
criterion_main!(benches);
