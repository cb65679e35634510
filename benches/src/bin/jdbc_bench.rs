//! The JDBC connectors beside plain sqlx programs on the same PostgreSQL
//! table, in one run: worker CPU per row (this process's CPU time, the
//! database's excluded) and rows per second.
//!
//! - sink: `JdbcSinkTask::put` of 500-record batches (upsert by key)
//!   against a plain program running the same batched
//!   `INSERT ... ON CONFLICT DO UPDATE` with native Rust values;
//! - source: `JdbcSourceTask::poll` in incrementing mode (1000 rows per
//!   poll) against a plain program running the same keyset `SELECT` and
//!   decoding each row into Rust values.
//!
//! ```text
//! tools/databases/databases.sh start        # prints JDBC_TEST_POSTGRES_URL=...
//! JDBC_TEST_POSTGRES_URL=jdbc:postgresql://127.0.0.1:PORT/connect_test \
//!     cargo run --release -p connect-benches --bin jdbc_bench [--features mimalloc] -- [rows] [rounds] [sink|source]
//! ```
#![allow(clippy::print_stdout)]

/// With `--features mimalloc`, the figures for the allocator the worker
/// binaries use (both sides of the comparison share it).
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::sync::Arc;
use std::time::Instant;

use bigdecimal::BigDecimal;
use chrono::NaiveDateTime;
use connect_api::sink::{SinkTask, SinkTaskContext, TopicPartition, TopicPartitionOffsets};
use connect_api::source::{OffsetStorageReader, SourceTask, SourceTaskContext};
use connect_api::{
    ConfigMap, Decimal, Record, Schema, SchemaBuilder, SinkRecord, SourceMap, Struct, Value,
};
use connect_jdbc::{JdbcSinkTask, JdbcSourceTask};
use sqlx::Row;

/// This thread's CPU time in nanoseconds (the benchmark runs on one
/// thread: a current-thread runtime).
fn cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|n| n.parse().ok()))
        .unwrap_or(0)
}

struct Measure {
    cpu_ns: u64,
    wall_s: f64,
}

async fn measure<F: std::future::Future<Output = ()>>(f: F) -> Measure {
    let (cpu, wall) = (cpu_ns(), Instant::now());
    f.await;
    Measure {
        cpu_ns: cpu_ns() - cpu,
        wall_s: wall.elapsed().as_secs_f64(),
    }
}

struct SinkCtx(ConfigMap);

impl SinkTaskContext for SinkCtx {
    fn configs(&self) -> &ConfigMap {
        &self.0
    }
    fn offset(&self, _: TopicPartitionOffsets) {}
    fn assignment(&self) -> Vec<TopicPartition> {
        Vec::new()
    }
    fn pause(&self, _: &[TopicPartition]) {}
    fn resume(&self, _: &[TopicPartition]) {}
}

struct NoOffsets;

impl OffsetStorageReader for NoOffsets {
    fn offset(&self, _: &SourceMap) -> Option<SourceMap> {
        None
    }
}

struct SourceCtx(ConfigMap, NoOffsets);

impl SourceTaskContext for SourceCtx {
    fn configs(&self) -> &ConfigMap {
        &self.0
    }
    fn offset_storage_reader(&self) -> &dyn OffsetStorageReader {
        &self.1
    }
}

const BATCH: usize = 500;

fn ts(i: i64) -> NaiveDateTime {
    chrono::DateTime::from_timestamp(1_700_000_000 + i, 0)
        .unwrap()
        .naive_utc()
}

async fn reset(pool: &sqlx::PgPool, table: &str) {
    sqlx::raw_sql(&format!(
        "DROP TABLE IF EXISTS {table}; CREATE TABLE {table} (id BIGINT PRIMARY KEY, name TEXT, amount NUMERIC(10,2), ts TIMESTAMP(3))"
    ))
    .execute(pool)
    .await
    .unwrap();
}

async fn baseline_sink(pool: &sqlx::PgPool, rows: i64) {
    for start in (0..rows).step_by(BATCH) {
        let end = (start + BATCH as i64).min(rows);
        let mut sql = String::from("INSERT INTO bench_sink_base (id, name, amount, ts) VALUES ");
        for (n, _) in (start..end).enumerate() {
            let p = n * 4;
            if n > 0 {
                sql.push_str(", ");
            }
            sql.push_str(&format!("(${}, ${}, ${}, ${})", p + 1, p + 2, p + 3, p + 4));
        }
        sql.push_str(" ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name, amount = EXCLUDED.amount, ts = EXCLUDED.ts");
        let mut q = sqlx::query(&sql);
        for i in start..end {
            q = q
                .bind(i)
                .bind(format!("customer-{i}"))
                .bind(BigDecimal::new((i * 7).into(), 2))
                .bind(ts(i));
        }
        let mut tx = pool.begin().await.unwrap();
        q.execute(&mut *tx).await.unwrap();
        tx.commit().await.unwrap();
    }
}

fn sink_records(rows: i64) -> Vec<Vec<SinkRecord>> {
    let key = SchemaBuilder::struct_()
        .field("id", Schema::int64())
        .build()
        .unwrap();
    let value = SchemaBuilder::struct_()
        .field("id", Schema::int64())
        .field("name", Schema::optional_string())
        .field(
            "amount",
            connect_api::logical::decimal_builder(2)
                .optional()
                .build()
                .unwrap(),
        )
        .field(
            "ts",
            connect_api::logical::timestamp_builder()
                .optional()
                .build()
                .unwrap(),
        )
        .build()
        .unwrap();
    // One topic name for all records, as the worker's consumer shares it
    // (connect-rdkafka interns topic names).
    let topic: Arc<str> = Arc::from("bench_sink_ours");
    let all: Vec<SinkRecord> = (0..rows)
        .map(|i| {
            let mut k = Struct::new(key.clone()).unwrap();
            k.put("id", i).unwrap();
            let mut v = Struct::new(value.clone()).unwrap();
            v.put("id", i).unwrap();
            v.put("name", format!("customer-{i}")).unwrap();
            v.put("amount", Value::Decimal(Decimal::new(i * 7, 2)))
                .unwrap();
            v.put("ts", Value::Timestamp((1_700_000_000 + i) * 1000))
                .unwrap();
            let r = Record::new(topic.clone(), Some(value.clone()), Value::Struct(v))
                .with_key(Some(key.clone()), Value::Struct(k));
            SinkRecord::new(r, 0, i)
        })
        .collect();
    all.chunks(BATCH).map(<[SinkRecord]>::to_vec).collect()
}

async fn baseline_source(pool: &sqlx::PgPool, rows: i64) {
    let (mut last, mut seen) = (-1i64, 0i64);
    while seen < rows {
        let batch =
            sqlx::query("SELECT * FROM bench_source WHERE id > $1 ORDER BY id ASC LIMIT 1000")
                .bind(last)
                .fetch_all(pool)
                .await
                .unwrap();
        for row in &batch {
            let id: i64 = row.get(0);
            let name: Option<String> = row.get(1);
            let amount: Option<BigDecimal> = row.get(2);
            let ts: Option<NaiveDateTime> = row.get(3);
            std::hint::black_box((&name, &amount, &ts));
            last = id;
        }
        seen += batch.len() as i64;
    }
}

fn report(what: &str, rows: i64, ours: &[Measure], base: &[Measure]) {
    let median = |m: &[Measure], f: &dyn Fn(&Measure) -> f64| {
        let mut v: Vec<f64> = m.iter().map(f).collect();
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let cpu = |m: &Measure| m.cpu_ns as f64 / rows as f64;
    let rate = |m: &Measure| rows as f64 / m.wall_s;
    let (oc, bc) = (median(ours, &cpu), median(base, &cpu));
    let (or, br) = (median(ours, &rate), median(base, &rate));
    println!(
        "{what}: ours {oc:.0} ns CPU/row, {or:.0} rows/s; baseline {bc:.0} ns CPU/row, {br:.0} rows/s; CPU ratio {:.2}x",
        oc / bc
    );
}

fn main() {
    let mut args = std::env::args().skip(1);
    let rows: i64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(20_000);
    let rounds: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(3);
    let only = args.next().unwrap_or_default();
    let (run_sink, run_source) = (only != "source", only != "sink");
    let Ok(jdbc) = std::env::var("JDBC_TEST_POSTGRES_URL") else {
        eprintln!("set JDBC_TEST_POSTGRES_URL (tools/databases/databases.sh start prints it)");
        std::process::exit(2);
    };
    let url = jdbc.replace("jdbc:postgresql://", "postgres://postgres@");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let pool = sqlx::PgPool::connect(&url).await.unwrap();
        let config = |pairs: &[(&str, &str)]| {
            let mut c = ConfigMap::from([("connection.url", jdbc.as_str()), ("connection.user", "postgres")]);
            for (k, v) in pairs {
                c.insert(k.to_string(), v.to_string());
            }
            c
        };
        // Sink.
        let sink_config = config(&[("topics", "bench_sink_ours"), ("insert.mode", "upsert"), ("pk.mode", "record_key")]);
        let batches = sink_records(rows);
        let (mut ours, mut base) = (Vec::new(), Vec::new());
        for _ in 0..if run_sink { rounds } else { 0 } {
            reset(&pool, "bench_sink_base").await;
            base.push(measure(baseline_sink(&pool, rows)).await);
            reset(&pool, "bench_sink_ours").await;
            let mut task = JdbcSinkTask::default();
            task.start(&sink_config, Arc::new(SinkCtx(sink_config.clone()))).await.unwrap();
            ours.push(
                measure(async {
                    for b in &batches {
                        task.put(b).await.unwrap();
                    }
                })
                .await,
            );
            task.stop().await.unwrap();
        }
        if run_sink {
            report("sink (upsert, 500-record puts)", rows, &ours, &base);
        }
        if !run_source {
            return;
        }
        // Source.
        reset(&pool, "bench_source").await;
        sqlx::raw_sql(&format!(
            "INSERT INTO bench_source SELECT i, 'customer-' || i, i * 0.07, timestamp '2023-11-14 22:13:20' + i * interval '1 second' \
             FROM generate_series(0, {}) i",
            rows - 1
        ))
        .execute(&pool)
        .await
        .unwrap();
        let source_config = config(&[
            ("mode", "incrementing"),
            ("incrementing.column.name", "id"),
            ("topic.prefix", "bench-"),
            ("tables", "public.bench_source"),
            ("batch.max.rows", "1000"),
            ("poll.interval.ms", "1"),
        ]);
        let (mut ours, mut base) = (Vec::new(), Vec::new());
        for _ in 0..rounds {
            base.push(measure(baseline_source(&pool, rows)).await);
            let mut task = JdbcSourceTask::default();
            task.start(&source_config, Arc::new(SourceCtx(source_config.clone(), NoOffsets))).await.unwrap();
            ours.push(
                measure(async {
                    let mut seen = 0;
                    while seen < rows as usize {
                        seen += std::hint::black_box(task.poll().await.unwrap()).len();
                    }
                })
                .await,
            );
            task.stop().await.unwrap();
        }
        report("source (incrementing, 1000 rows per poll)", rows, &ours, &base);
    });
}
