//! The in-memory Kafka: 1M x 100-byte records produced (acknowledged through
//! the delivery sink) and consumed back through the port, beside a baseline
//! that copies the same records into a Vec and reads them back.
//!
//! Run: `cargo bench -p connect-benches --bench in_memory_kafka`.
//! Figures: benches/results/in_memory_kafka.md.
#![allow(missing_docs)] // criterion_group! generates an undocumented pub fn

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use connect_runtime::kafka::memory::MemoryKafka;
use connect_runtime::kafka::{
    ClientConfig, ConsumerEvent, Delivered, DeliverySink, KafkaCluster, KafkaError, NewTopic,
    OutRecord, SendError, Subscription,
};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};

const RECORDS: u64 = 1_000_000;
const SIZE: usize = 100;
const PARTITIONS: i32 = 8;

/// Counts acknowledgements, as the runtime's offset tracker would mark them.
#[derive(Default)]
struct Count {
    acked: AtomicU64,
    failed: AtomicU64,
}

impl DeliverySink for Count {
    fn delivered(&self, _token: u64, result: Result<Delivered<'_>, KafkaError>) {
        match result {
            Ok(_) => self.acked.fetch_add(1, Ordering::Relaxed),
            Err(_) => self.failed.fetch_add(1, Ordering::Relaxed),
        };
    }
}

fn config(pairs: &[(&str, &str)]) -> ClientConfig {
    ClientConfig::from_pairs(pairs.iter().copied())
}

async fn produce(kafka: &MemoryKafka, payload: &[u8]) {
    let count = Arc::new(Count::default());
    let producer = kafka
        .producer(&ClientConfig::new(), count.clone())
        .expect("producer");
    let record = OutRecord::new("bench", Some(payload));
    for token in 0..RECORDS {
        loop {
            match producer.send(&record, token) {
                Ok(()) => break,
                // Backpressure: give the delivery task a moment to drain
                // the queue, as the runtime's produce loop does.
                Err(SendError::QueueFull) => tokio::time::sleep(Duration::from_millis(1)).await,
                Err(e) => panic!("send failed: {e}"),
            }
        }
    }
    producer
        .flush(Duration::from_secs(60))
        .await
        .expect("flush");
    assert_eq!(count.acked.load(Ordering::Relaxed), RECORDS);
    assert_eq!(count.failed.load(Ordering::Relaxed), 0);
}

async fn consume(kafka: &MemoryKafka, max_poll_records: &str) -> u64 {
    let mut consumer = kafka
        .consumer(&config(&[
            ("group.id", "bench"),
            ("auto.offset.reset", "earliest"),
            ("enable.auto.commit", "false"),
            ("max.poll.records", max_poll_records),
        ]))
        .expect("consumer");
    consumer
        .subscribe(&Subscription::Topics(vec!["bench".into()]))
        .expect("subscribe");
    let mut seen = 0u64;
    let mut bytes = 0usize;
    while seen < RECORDS {
        if let Some(ConsumerEvent::Records(records)) =
            consumer.poll(Duration::from_secs(10)).await.expect("poll")
        {
            seen += records.len() as u64;
            bytes += records
                .iter()
                .map(|r| r.value.as_ref().map_or(0, Bytes::len))
                .sum::<usize>();
        }
    }
    assert_eq!(bytes, RECORDS as usize * SIZE);
    seen
}

fn fresh_cluster() -> MemoryKafka {
    let kafka = MemoryKafka::new();
    kafka
        .create_topic(&NewTopic::new("bench", PARTITIONS))
        .expect("topic");
    kafka
}

fn in_memory_kafka(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let payload = vec![b'x'; SIZE];
    let mut group = c.benchmark_group("in_memory_kafka_1M_x_100B");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(10));
    group.throughput(Throughput::Elements(RECORDS));

    group.bench_function("baseline_vec_copy_and_read", |b| {
        b.iter(|| {
            let mut log: Vec<Bytes> = Vec::new();
            for _ in 0..RECORDS {
                log.push(Bytes::copy_from_slice(&payload));
            }
            let read: usize = log.iter().map(Bytes::len).sum();
            assert_eq!(read, RECORDS as usize * SIZE);
        })
    });

    group.bench_function("produce", |b| {
        b.iter(|| runtime.block_on(produce(&fresh_cluster(), &payload)))
    });

    let filled = fresh_cluster();
    runtime.block_on(produce(&filled, &payload));
    group.bench_function("consume_500_per_poll", |b| {
        b.iter(|| runtime.block_on(consume(&filled, "500")))
    });

    group.bench_function("produce_then_consume", |b| {
        b.iter(|| {
            runtime.block_on(async {
                let kafka = fresh_cluster();
                produce(&kafka, &payload).await;
                consume(&kafka, "500").await
            })
        })
    });
    group.finish();
}

criterion_group!(benches, in_memory_kafka);
criterion_main!(benches);
