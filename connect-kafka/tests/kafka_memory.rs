//! Behaviour only the in-memory Kafka offers (or only it can show, because
//! librdkafka's mock cluster does not implement it): transactions with
//! read_committed, compaction, LogAppendTime, fault injection, and the
//! rebalance hand-over order.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use connect_kafka::memory::{FaultKind, MemoryKafka};
use connect_kafka::{
    ClientConfig, CommitMode, ConsumedRecord, Consumer, ConsumerEvent, CreateTopicOutcome,
    Delivered, DeliverySink, KafkaCluster, KafkaError, KafkaErrorKind, NewTopic, OutRecord,
    Producer, SendError, Subscription, TimestampType, TopicPartition, TopicPartitionOffsets,
};
use tokio::time::Instant;

fn config(pairs: &[(&str, &str)]) -> ClientConfig {
    ClientConfig::from_pairs(pairs.iter().copied())
}

type Ack = Result<(i32, i64, Option<i64>), KafkaError>;

#[derive(Default)]
struct Acks(Mutex<BTreeMap<u64, Ack>>);

impl DeliverySink for Acks {
    fn delivered(&self, token: u64, result: Result<Delivered<'_>, KafkaError>) {
        let previous = self
            .0
            .lock()
            .unwrap()
            .insert(token, result.map(|d| (d.partition, d.offset, d.timestamp)));
        assert!(previous.is_none(), "token {token} acknowledged twice");
    }
}

impl Acks {
    fn take(&self) -> BTreeMap<u64, Ack> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

fn producer(kafka: &MemoryKafka, pairs: &[(&str, &str)]) -> (Box<dyn Producer>, Arc<Acks>) {
    let acks = Arc::new(Acks::default());
    let p = kafka.producer(&config(pairs), acks.clone()).unwrap();
    (p, acks)
}

fn consumer(kafka: &MemoryKafka, group: &str, extra: &[(&str, &str)]) -> Box<dyn Consumer> {
    let mut pairs = vec![
        ("group.id", group),
        ("auto.offset.reset", "earliest"),
        ("enable.auto.commit", "false"),
    ];
    pairs.extend_from_slice(extra);
    kafka.consumer(&config(&pairs)).unwrap()
}

fn value(s: &str) -> OutRecord<'_> {
    OutRecord::new("t", Some(s.as_bytes()))
}

/// Poll until `n` records arrived (events are skipped), within 10 s of tokio time.
async fn records(c: &mut dyn Consumer, n: usize) -> Vec<ConsumedRecord> {
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut out = Vec::new();
    while out.len() < n {
        assert!(
            Instant::now() < deadline,
            "got {} of {n} records",
            out.len()
        );
        if let Some(ConsumerEvent::Records(r)) = c.poll(Duration::from_millis(200)).await.unwrap() {
            out.extend(r);
        }
    }
    out
}

/// Poll until nothing arrives for a while; return what came.
async fn drain(c: &mut dyn Consumer) -> Vec<ConsumedRecord> {
    let mut out = Vec::new();
    let mut quiet = 0;
    while quiet < 3 {
        match c.poll(Duration::from_millis(50)).await.unwrap() {
            Some(ConsumerEvent::Records(r)) => out.extend(r),
            Some(_) => {}
            None => quiet += 1,
        }
    }
    out
}

fn values(records: &[ConsumedRecord]) -> Vec<String> {
    records
        .iter()
        .map(|r| String::from_utf8_lossy(r.value.as_deref().unwrap_or(b"<null>")).into_owned())
        .collect()
}

fn kafka_with_topic(partitions: i32) -> MemoryKafka {
    let kafka = MemoryKafka::new();
    kafka.create_topic(&NewTopic::new("t", partitions)).unwrap();
    kafka
}

#[tokio::test(start_paused = true)]
async fn read_committed_hides_aborted_and_open_transactions() {
    let kafka = kafka_with_topic(1);
    let (p, acks) = producer(&kafka, &[("transactional.id", "tx")]);
    p.init_transactions(Duration::from_secs(5)).await.unwrap();
    p.begin_transaction().unwrap();
    for (token, v) in [(10, "c1"), (11, "c2")] {
        p.send(&value(v), token).unwrap();
    }
    p.commit_transaction(Duration::from_secs(5)).await.unwrap();
    p.begin_transaction().unwrap();
    p.send(&value("aborted"), 1).unwrap();
    p.abort_transaction(Duration::from_secs(5)).await.unwrap();
    p.begin_transaction().unwrap();
    p.send(&value("open"), 2).unwrap();
    p.flush(Duration::from_secs(5)).await.unwrap();
    assert!(acks.take().values().all(Result::is_ok));

    let mut committed = consumer(&kafka, "rc", &[("isolation.level", "read_committed")]);
    committed
        .subscribe(&Subscription::Topics(vec!["t".into()]))
        .unwrap();
    assert_eq!(values(&drain(committed.as_mut()).await), ["c1", "c2"]);
    let mut uncommitted = consumer(&kafka, "ru", &[]);
    uncommitted
        .subscribe(&Subscription::Topics(vec!["t".into()]))
        .unwrap();
    let all = drain(uncommitted.as_mut()).await;
    assert_eq!(values(&all), ["c1", "c2", "aborted", "open"]);
    // Transaction markers take offsets, as in Kafka.
    assert_eq!(
        all.iter().map(|r| r.offset).collect::<Vec<_>>(),
        [0, 1, 3, 5]
    );

    p.commit_transaction(Duration::from_secs(5)).await.unwrap();
    assert_eq!(values(&records(committed.as_mut(), 1).await), ["open"]);
    assert_eq!(values(&kafka.records("t", 0)), ["c1", "c2", "open"]);
}

#[tokio::test(start_paused = true)]
async fn transactional_offsets_are_stored_only_on_commit() {
    let kafka = kafka_with_topic(1);
    let mut c = consumer(&kafka, "g", &[]);
    c.subscribe(&Subscription::Topics(vec!["t".into()]))
        .unwrap();
    c.poll(Duration::from_millis(10)).await.unwrap();
    let meta = c.group_metadata().unwrap();
    assert_eq!(meta.group_id, "g");
    let (p, _acks) = producer(&kafka, &[("transactional.id", "tx")]);
    p.init_transactions(Duration::from_secs(5)).await.unwrap();
    let offsets: TopicPartitionOffsets = [(TopicPartition::new("t", 0), 7)].into_iter().collect();

    p.begin_transaction().unwrap();
    p.send_offsets_to_transaction(&offsets, &meta, Duration::from_secs(5))
        .await
        .unwrap();
    p.abort_transaction(Duration::from_secs(5)).await.unwrap();
    assert!(kafka.committed_offsets("g").is_empty());

    p.begin_transaction().unwrap();
    p.send_offsets_to_transaction(&offsets, &meta, Duration::from_secs(5))
        .await
        .unwrap();
    p.commit_transaction(Duration::from_secs(5)).await.unwrap();
    assert_eq!(kafka.committed_offsets("g"), offsets);
}

#[tokio::test(start_paused = true)]
async fn a_new_instance_fences_the_old_one_and_aborts_its_transaction() {
    let kafka = kafka_with_topic(1);
    let (old, old_acks) = producer(&kafka, &[("transactional.id", "tx")]);
    old.init_transactions(Duration::from_secs(5)).await.unwrap();
    old.begin_transaction().unwrap();
    old.send(&value("zombie"), 0).unwrap();
    old.flush(Duration::from_secs(5)).await.unwrap();

    let (new, _b) = producer(&kafka, &[("transactional.id", "tx")]);
    new.init_transactions(Duration::from_secs(5)).await.unwrap();
    let err = old
        .commit_transaction(Duration::from_secs(5))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), KafkaErrorKind::Fenced, "{err}");
    assert!(!err.is_retriable());
    assert!(
        kafka.records("t", 0).is_empty(),
        "the zombie's records stay invisible"
    );
    // The zombie's later records are refused at delivery.
    old.send(&value("late"), 1).unwrap();
    old.flush(Duration::from_secs(5)).await.unwrap();
    let err = old_acks.take().remove(&1).unwrap().unwrap_err();
    assert_eq!(err.kind(), KafkaErrorKind::Fenced, "{err}");
}

#[tokio::test(start_paused = true)]
async fn transactional_producer_must_begin_before_sending() {
    let kafka = kafka_with_topic(1);
    let (p, _acks) = producer(&kafka, &[("transactional.id", "tx")]);
    p.init_transactions(Duration::from_secs(5)).await.unwrap();
    let err = p.send(&value("x"), 0).unwrap_err();
    assert!(err.to_string().contains("begin_transaction"), "{err}");
    let (plain, _acks) = producer(&kafka, &[]);
    let err = plain
        .init_transactions(Duration::from_secs(5))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), KafkaErrorKind::Config);
}

#[tokio::test(start_paused = true)]
async fn compaction_keeps_the_latest_value_per_key_at_its_offset() {
    let kafka = MemoryKafka::new();
    kafka
        .create_topic(&NewTopic::new("t", 1).config("cleanup.policy", "compact"))
        .unwrap();
    let (p, acks) = producer(&kafka, &[]);
    let rows: [(&[u8], Option<&[u8]>); 5] = [
        (b"a", Some(b"a1")),
        (b"b", Some(b"b1")),
        (b"a", Some(b"a2")),
        (b"c", Some(b"c1")),
        (b"b", None),
    ];
    for (i, (k, v)) in rows.iter().enumerate() {
        p.send(
            &OutRecord {
                key: Some(k),
                ..OutRecord::new("t", *v)
            },
            i as u64,
        )
        .unwrap();
    }
    p.send(&value("no key"), 99).unwrap();
    p.flush(Duration::from_secs(5)).await.unwrap();
    let err = acks.take().remove(&99).unwrap().unwrap_err();
    assert_eq!(err.kind(), KafkaErrorKind::InvalidRecord, "{err}");

    kafka.compact("t", false).unwrap();
    let kept: Vec<(i64, String)> = kafka
        .records("t", 0)
        .iter()
        .map(|r| {
            (
                r.offset,
                String::from_utf8_lossy(r.key.as_deref().unwrap()).into_owned(),
            )
        })
        .collect();
    assert_eq!(
        kept,
        [(2, "a".to_string()), (3, "c".into()), (4, "b".into())]
    );
    kafka.compact("t", true).unwrap();
    assert_eq!(
        kafka
            .records("t", 0)
            .iter()
            .map(|r| r.offset)
            .collect::<Vec<_>>(),
        [2, 3]
    );

    // A consumer from the start reads only what is left.
    let mut c = consumer(&kafka, "g", &[]);
    c.subscribe(&Subscription::Topics(vec!["t".into()]))
        .unwrap();
    assert_eq!(values(&drain(c.as_mut()).await), ["a2", "c1"]);
    assert_eq!(
        kafka.compact("missing", false).unwrap_err().kind(),
        KafkaErrorKind::UnknownTopicOrPartition
    );
}

#[tokio::test(start_paused = true)]
async fn log_append_time_topics_stamp_on_append() {
    let kafka = MemoryKafka::new();
    kafka
        .create_topic(&NewTopic::new("t", 1).config("message.timestamp.type", "LogAppendTime"))
        .unwrap();
    let (p, acks) = producer(&kafka, &[]);
    p.send(
        &OutRecord {
            timestamp: Some(5),
            ..value("x")
        },
        0,
    )
    .unwrap();
    p.flush(Duration::from_secs(5)).await.unwrap();
    let (_, _, ack_ts) = acks.take().remove(&0).unwrap().unwrap();
    let stored = &kafka.records("t", 0)[0];
    assert_eq!(stored.timestamp_type, TimestampType::LogAppendTime);
    assert!(stored.timestamp.unwrap() > 1_600_000_000_000);
    assert_eq!(ack_ts, stored.timestamp);
    let bad = NewTopic::new("u", 1).config("message.timestamp.type", "Sometime");
    assert_eq!(
        kafka.create_topic(&bad).unwrap_err().kind(),
        KafkaErrorKind::Config
    );
}

#[tokio::test(start_paused = true)]
async fn injected_produce_faults_fail_deliveries_without_writing() {
    let kafka = kafka_with_topic(1);
    kafka.fail_next_produce(2, FaultKind::Retriable);
    let (p, acks) = producer(&kafka, &[]);
    for i in 0..3 {
        p.send(&value("v"), i).unwrap();
    }
    p.flush(Duration::from_secs(5)).await.unwrap();
    let first = acks.take();
    assert!(first[&0].as_ref().unwrap_err().is_retriable());
    assert!(first[&1].as_ref().unwrap_err().is_retriable());
    assert_eq!(
        first[&2].as_ref().unwrap().1,
        0,
        "failed records take no offset"
    );

    kafka.fail_next_produce(1, FaultKind::Fatal);
    p.send(&value("v"), 3).unwrap();
    p.flush(Duration::from_secs(5)).await.unwrap();
    let err = acks.take().remove(&3).unwrap().unwrap_err();
    assert!(!err.is_retriable(), "{err}");
    assert!(
        err.to_string().contains("t-0"),
        "the error names the partition: {err}"
    );
}

#[tokio::test(start_paused = true)]
async fn injected_commit_and_fetch_faults() {
    let kafka = kafka_with_topic(1);
    let mut c = consumer(&kafka, "g", &[]);
    c.subscribe(&Subscription::Topics(vec!["t".into()]))
        .unwrap();
    let offsets: TopicPartitionOffsets = [(TopicPartition::new("t", 0), 3)].into_iter().collect();

    kafka.fail_next_commit(1, FaultKind::Fatal);
    let err = c.commit(&offsets, CommitMode::Sync).await.unwrap_err();
    assert!(!err.is_retriable());
    assert!(err.to_string().contains("group 'g'"), "{err}");
    kafka.fail_next_commit(1, FaultKind::Retriable);
    c.commit(&offsets, CommitMode::Async).await.unwrap();
    assert!(
        kafka.committed_offsets("g").is_empty(),
        "a failed async commit stores nothing"
    );
    c.commit(&offsets, CommitMode::Sync).await.unwrap();
    assert_eq!(kafka.committed_offsets("g"), offsets);

    kafka.fail_next_fetch(1, FaultKind::Retriable);
    assert!(c
        .poll(Duration::from_millis(10))
        .await
        .unwrap_err()
        .is_retriable());
    assert!(c.poll(Duration::from_millis(10)).await.is_ok());
}

#[tokio::test(start_paused = true)]
async fn ack_delay_holds_acknowledgements() {
    let kafka = kafka_with_topic(1);
    kafka.set_ack_delay(Duration::from_secs(10));
    let (p, acks) = producer(&kafka, &[]);
    p.send(&value("slow"), 0).unwrap();
    let err = p.flush(Duration::from_secs(1)).await.unwrap_err();
    assert_eq!(err.kind(), KafkaErrorKind::Timeout);
    assert!(acks.take().is_empty());
    p.flush(Duration::from_secs(20)).await.unwrap();
    assert!(acks.take()[&0].is_ok());
}

#[tokio::test(start_paused = true)]
async fn records_wait_for_a_missing_leader_and_then_land() {
    let kafka = kafka_with_topic(2);
    kafka.take_leader_away("t", 0).unwrap();
    let (p, acks) = producer(&kafka, &[]);
    p.send(
        &OutRecord {
            partition: Some(0),
            ..value("waits")
        },
        0,
    )
    .unwrap();
    p.send(
        &OutRecord {
            partition: Some(1),
            ..value("other partition")
        },
        1,
    )
    .unwrap();
    assert!(p.flush(Duration::from_secs(1)).await.is_err());
    let early = acks.take();
    assert!(
        early.contains_key(&1) && !early.contains_key(&0),
        "only partition 1 was acknowledged"
    );
    kafka.restore_leader("t", 0).unwrap();
    p.flush(Duration::from_secs(5)).await.unwrap();
    assert_eq!(acks.take()[&0].as_ref().unwrap().1, 0);

    // Past delivery.timeout.ms the record fails, as a retriable timeout.
    let (p, acks) = producer(&kafka, &[("delivery.timeout.ms", "2000")]);
    kafka.take_leader_away("t", 1).unwrap();
    p.send(
        &OutRecord {
            partition: Some(1),
            ..value("gives up")
        },
        0,
    )
    .unwrap();
    p.flush(Duration::from_secs(10)).await.unwrap();
    let err = acks.take().remove(&0).unwrap().unwrap_err();
    assert_eq!(err.kind(), KafkaErrorKind::Timeout, "{err}");
    assert!(err.is_retriable());
}

#[tokio::test(start_paused = true)]
async fn a_dropped_member_loses_its_partitions_and_rejoins() {
    let kafka = kafka_with_topic(2);
    let mut c = consumer(&kafka, "g", &[]);
    c.subscribe(&Subscription::Topics(vec!["t".into()]))
        .unwrap();
    let Some(ConsumerEvent::Assigned(tps)) = c.poll(Duration::from_secs(1)).await.unwrap() else {
        panic!("expected an assignment");
    };
    assert_eq!(tps.len(), 2);
    let member = c.group_metadata().unwrap().member_id;
    assert!(kafka.drop_group_member("g", &member));
    let offsets: TopicPartitionOffsets = [(TopicPartition::new("t", 0), 1)].into_iter().collect();
    let err = c.commit(&offsets, CommitMode::Sync).await.unwrap_err();
    assert_eq!(err.kind(), KafkaErrorKind::RebalanceInProgress, "{err}");
    assert_eq!(
        c.poll(Duration::from_secs(1)).await.unwrap(),
        Some(ConsumerEvent::Revoked(tps.clone()))
    );
    assert_eq!(
        c.poll(Duration::from_secs(1)).await.unwrap(),
        Some(ConsumerEvent::Assigned(tps))
    );
    let rejoined = c.group_metadata().unwrap().member_id;
    assert_ne!(rejoined, member);
    assert_eq!(kafka.group_members("g"), [rejoined]);
    c.commit(&offsets, CommitMode::Sync).await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_partition_moves_only_after_its_old_owner_let_go() {
    let kafka = kafka_with_topic(2);
    let mut a = consumer(&kafka, "g", &[("client.id", "a")]);
    a.subscribe(&Subscription::Topics(vec!["t".into()]))
        .unwrap();
    assert!(matches!(
        a.poll(Duration::from_secs(1)).await.unwrap(),
        Some(ConsumerEvent::Assigned(_))
    ));
    let mut b = consumer(&kafka, "g", &[("client.id", "b")]);
    b.subscribe(&Subscription::Topics(vec!["t".into()]))
        .unwrap();
    assert_eq!(
        b.poll(Duration::from_millis(500)).await.unwrap(),
        None,
        "a still holds both partitions"
    );
    assert_eq!(
        a.poll(Duration::from_secs(1)).await.unwrap(),
        Some(ConsumerEvent::Revoked(vec![TopicPartition::new("t", 1)]))
    );
    assert_eq!(
        b.poll(Duration::from_millis(500)).await.unwrap(),
        None,
        "a keeps a revoked partition until its next poll, to commit it"
    );
    assert_eq!(a.poll(Duration::from_millis(10)).await.unwrap(), None);
    assert_eq!(
        b.poll(Duration::from_secs(1)).await.unwrap(),
        Some(ConsumerEvent::Assigned(vec![TopicPartition::new("t", 1)]))
    );
    assert_eq!(a.assignment().unwrap(), [TopicPartition::new("t", 0)]);
}

#[tokio::test(start_paused = true)]
async fn null_keys_stick_to_one_partition_per_batch() {
    let kafka = kafka_with_topic(4);
    let (p, acks) = producer(&kafka, &[("batch.size", "1000")]);
    let payload = [7u8; 100];
    for i in 0..11 {
        p.send(&OutRecord::new("t", Some(&payload)), i).unwrap();
    }
    p.flush(Duration::from_secs(5)).await.unwrap();
    let partitions: Vec<i32> = acks
        .take()
        .values()
        .map(|a| a.as_ref().unwrap().0)
        .collect();
    assert!(
        partitions[..10].iter().all(|p| *p == partitions[0]),
        "{partitions:?}"
    );
    assert_ne!(
        partitions[10], partitions[0],
        "a full batch moves to another partition"
    );
}

#[tokio::test(start_paused = true)]
async fn latest_reset_skips_existing_records_and_poll_wakes_on_new_ones() {
    let kafka = kafka_with_topic(1);
    let (p, _acks) = producer(&kafka, &[]);
    p.send(&value("old"), 0).unwrap();
    p.flush(Duration::from_secs(5)).await.unwrap();
    let mut c = consumer(&kafka, "g", &[("auto.offset.reset", "latest")]);
    c.subscribe(&Subscription::Topics(vec!["t".into()]))
        .unwrap();
    assert!(matches!(
        c.poll(Duration::from_secs(1)).await.unwrap(),
        Some(ConsumerEvent::Assigned(_))
    ));
    assert_eq!(c.poll(Duration::from_millis(100)).await.unwrap(), None);
    let start = Instant::now();
    let poll = tokio::spawn(async move {
        let event = c.poll(Duration::from_secs(3600)).await.unwrap();
        (event, c)
    });
    tokio::task::yield_now().await;
    p.send(&value("new"), 1).unwrap();
    let (event, _c) = poll.await.unwrap();
    let Some(ConsumerEvent::Records(r)) = event else {
        panic!("expected records")
    };
    assert_eq!(values(&r), ["new"]);
    assert!(
        start.elapsed() < Duration::from_secs(1),
        "poll woke on the new record, not on its timeout"
    );
    let mut none = consumer(&kafka, "h", &[("auto.offset.reset", "none")]);
    none.subscribe(&Subscription::Topics(vec!["t".into()]))
        .unwrap();
    none.poll(Duration::from_millis(10)).await.unwrap();
    assert!(
        none.poll(Duration::from_millis(10)).await.is_err(),
        "no committed offset and reset=none"
    );
}

#[tokio::test(start_paused = true)]
async fn pause_resume_and_seek() {
    let kafka = kafka_with_topic(1);
    let (p, _acks) = producer(&kafka, &[]);
    for (i, v) in ["a", "b", "c"].into_iter().enumerate() {
        p.send(&value(v), i as u64).unwrap();
    }
    p.flush(Duration::from_secs(5)).await.unwrap();
    let tp = TopicPartition::new("t", 0);
    let mut c = consumer(&kafka, "g", &[]);
    c.subscribe(&Subscription::Topics(vec!["t".into()]))
        .unwrap();
    assert!(matches!(
        c.poll(Duration::from_secs(1)).await.unwrap(),
        Some(ConsumerEvent::Assigned(_))
    ));
    c.pause(std::slice::from_ref(&tp)).unwrap();
    assert_eq!(c.poll(Duration::from_millis(100)).await.unwrap(), None);
    c.resume(std::slice::from_ref(&tp)).unwrap();
    assert_eq!(values(&records(c.as_mut(), 3).await), ["a", "b", "c"]);
    c.seek(&tp, 1).unwrap();
    assert_eq!(values(&records(c.as_mut(), 2).await), ["b", "c"]);
    let other = TopicPartition::new("t", 5);
    assert!(c.seek(&other, 0).unwrap_err().to_string().contains("t-5"));
    assert!(c.pause(&[other]).is_err());
}

#[tokio::test(start_paused = true)]
async fn pattern_subscriptions_pick_up_new_topics() {
    let kafka = MemoryKafka::new();
    let mut c = consumer(&kafka, "g", &[]);
    c.subscribe(&Subscription::Pattern("metrics-.*".into()))
        .unwrap();
    assert_eq!(c.poll(Duration::from_millis(50)).await.unwrap(), None);
    kafka
        .create_topic(&NewTopic::new("metrics-cpu", 1))
        .unwrap();
    kafka.create_topic(&NewTopic::new("logs", 1)).unwrap();
    assert_eq!(
        c.poll(Duration::from_secs(1)).await.unwrap(),
        Some(ConsumerEvent::Assigned(vec![TopicPartition::new(
            "metrics-cpu",
            0
        )]))
    );
    assert!(c.subscribe(&Subscription::Pattern("(".into())).is_err());
}

#[tokio::test]
async fn a_full_queue_is_backpressure() {
    let kafka = kafka_with_topic(1);
    let (p, acks) = producer(&kafka, &[("queue.buffering.max.messages", "2")]);
    // On this current-thread runtime the delivery task cannot run until we yield.
    p.send(&value("1"), 1).unwrap();
    p.send(&value("2"), 2).unwrap();
    assert_eq!(p.send(&value("3"), 3).unwrap_err(), SendError::QueueFull);
    p.flush(Duration::from_secs(5)).await.unwrap();
    p.send(&value("3"), 3).unwrap();
    p.flush(Duration::from_secs(5)).await.unwrap();
    assert_eq!(acks.take().len(), 3);
}

#[tokio::test]
async fn unknown_topics_are_created_or_refused() {
    let kafka = MemoryKafka::new().with_default_partitions(3);
    let (p, _acks) = producer(&kafka, &[]);
    p.send(&OutRecord::new("auto", Some(b"x")), 0).unwrap();
    assert_eq!(kafka.partitions("auto"), Some(3));
    let err = p
        .send(
            &OutRecord {
                partition: Some(3),
                ..OutRecord::new("auto", Some(b"x"))
            },
            1,
        )
        .unwrap_err();
    assert!(err.to_string().contains("no partition 3"), "{err}");
    let err = p
        .send(&OutRecord::new("bad name!", Some(b"x")), 2)
        .unwrap_err();
    assert!(err.to_string().contains("invalid topic name"), "{err}");

    let strict = MemoryKafka::new().with_auto_create_topics(false);
    let (p, _acks) = producer(&strict, &[]);
    let SendError::Kafka(err) = p.send(&OutRecord::new("nope", Some(b"x")), 0).unwrap_err() else {
        panic!("expected an error");
    };
    assert_eq!(err.kind(), KafkaErrorKind::UnknownTopicOrPartition);
}

#[tokio::test]
async fn admin_creates_describes_and_lists() {
    let kafka = MemoryKafka::new();
    let admin = kafka.admin(&ClientConfig::new()).unwrap();
    let t = Duration::from_secs(1);
    let spec = NewTopic::new("configs", 1).config("cleanup.policy", "compact");
    assert_eq!(
        admin.create_topic(&spec, t).await.unwrap(),
        CreateTopicOutcome::Created
    );
    assert_eq!(
        admin.create_topic(&spec, t).await.unwrap(),
        CreateTopicOutcome::AlreadyExists
    );
    assert_eq!(
        admin
            .create_topic(&NewTopic::new("zero", 0), t)
            .await
            .unwrap_err()
            .kind(),
        KafkaErrorKind::Config
    );
    admin
        .create_topic(&NewTopic::new("a-first", 2), t)
        .await
        .unwrap();
    let d = admin.describe_topic("configs", t).await.unwrap().unwrap();
    assert_eq!(d.partitions, 1);
    assert_eq!(
        d.configs.get("cleanup.policy").map(String::as_str),
        Some("compact")
    );
    assert_eq!(admin.describe_topic("missing", t).await.unwrap(), None);
    assert_eq!(admin.list_topics(t).await.unwrap(), ["a-first", "configs"]);
}

#[tokio::test]
async fn consumer_config_errors_name_the_property() {
    let kafka = MemoryKafka::new();
    for (key, bad) in [
        ("auto.offset.reset", "sometimes"),
        ("isolation.level", "strict"),
        ("max.poll.records", "many"),
    ] {
        let err = match kafka.consumer(&config(&[("group.id", "g"), (key, bad)])) {
            Err(e) => e,
            Ok(_) => panic!("{key}={bad} was accepted"),
        };
        assert!(err.to_string().contains(key), "{err}");
    }
    let mut no_group = kafka.consumer(&ClientConfig::new()).unwrap();
    let err = no_group
        .subscribe(&Subscription::Topics(vec!["t".into()]))
        .unwrap_err();
    assert!(err.to_string().contains("group.id"), "{err}");
}

mod properties {
    use super::*;
    use connect_kafka::partitioner::partition_for_key;
    use proptest::prelude::*;

    /// (key, value, explicit partition) of a generated record.
    type Spec = (Option<Vec<u8>>, Option<Vec<u8>>, Option<i32>);

    /// Key and value bytes of a record.
    type KeyValue = (Option<Vec<u8>>, Option<Vec<u8>>);

    fn spec() -> impl Strategy<Value = Spec> {
        (
            proptest::option::of(proptest::collection::vec(any::<u8>(), 0..8)),
            proptest::option::of(proptest::collection::vec(any::<u8>(), 0..16)),
            proptest::option::of(0..3i32),
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        /// Whatever is produced is acknowledged with dense per-partition
        /// offsets in send order, lands where Kafka's partitioner says, and is
        /// read back unchanged and in order.
        #[test]
        fn produced_records_are_read_back_in_partition_order(specs in proptest::collection::vec(spec(), 1..60)) {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            runtime.block_on(async {
                let kafka = kafka_with_topic(3);
                let (p, acks) = producer(&kafka, &[]);
                for (token, (key, value, partition)) in specs.iter().enumerate() {
                    let record = OutRecord {
                        key: key.as_deref(),
                        partition: *partition,
                        ..OutRecord::new("t", value.as_deref())
                    };
                    p.send(&record, token as u64).unwrap();
                }
                p.flush(Duration::from_secs(5)).await.unwrap();
                let acks = acks.take();
                let mut next = [0i64; 3];
                let mut expected: Vec<Vec<KeyValue>> = vec![Vec::new(); 3];
                for (token, (key, value, partition)) in specs.iter().enumerate() {
                    let (got_partition, offset, _) = acks[&(token as u64)].clone().unwrap();
                    match (partition, key) {
                        (Some(p), _) => assert_eq!(got_partition, *p),
                        (None, Some(k)) => assert_eq!(got_partition, partition_for_key(k, 3)),
                        (None, None) => {}
                    }
                    let slot = got_partition as usize;
                    assert_eq!(offset, next[slot]);
                    next[slot] += 1;
                    expected[slot].push((key.clone(), value.clone()));
                }
                for (partition, want) in expected.iter().enumerate() {
                    let got: Vec<KeyValue> = kafka
                        .records("t", partition as i32)
                        .iter()
                        .map(|r| (r.key.as_ref().map(|k| k.to_vec()), r.value.as_ref().map(|v| v.to_vec())))
                        .collect();
                    assert_eq!(&got, want, "partition {partition}");
                }
            });
        }
    }
}
