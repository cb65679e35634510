//! rdkafka adapter behaviour specific to librdkafka's mock cluster: admin
//! CreateTopics falls back to "unsupported", metadata works, and pattern
//! subscriptions match whole topic names.

use std::collections::BTreeSet;
use std::time::Duration;

use connect_kafka::{
    ClientConfig, ConsumerEvent, CreateTopicOutcome, KafkaCluster, KafkaErrorKind, NewTopic,
    Subscription, TopicPartition,
};
use connect_rdkafka::MockKafka;
use tokio::time::Instant;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_topics_times_out_on_the_mock_and_is_reported_unsupported() {
    let mock = MockKafka::start(1, &[("existing", 3)]).unwrap();
    let admin = mock.cluster().admin(&ClientConfig::new()).unwrap();
    let outcome = admin
        .create_topic(&NewTopic::new("wanted", 2), Duration::from_secs(1))
        .await
        .unwrap();
    assert!(
        matches!(&outcome, CreateTopicOutcome::Unsupported { reason } if reason.contains("wanted")),
        "{outcome:?}"
    );
    let d = admin
        .describe_topic("existing", Duration::from_secs(10))
        .await
        .unwrap()
        .unwrap();
    assert_eq!((d.partitions, d.replication_factor), (3, 1));
    assert_eq!(
        admin
            .describe_topic("absent", Duration::from_secs(10))
            .await
            .unwrap(),
        None
    );
    assert!(admin
        .list_topics(Duration::from_secs(10))
        .await
        .unwrap()
        .contains(&"existing".to_string()));
    // The mock reports a cluster id in its metadata, as a broker does.
    let id = admin.cluster_id(Duration::from_secs(10)).await.unwrap();
    assert!(id.is_some_and(|id| !id.is_empty()));
}

/// librdkafka's destroy waits about 100 ms for the client's threads; an
/// admin client dropped in async code must not hold the caller for it (the
/// first `GET /` of the REST API answered 100 ms late because of this).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_an_admin_client_does_not_wait_for_librdkafka() {
    let mock = MockKafka::start(1, &[]).unwrap();
    for _ in 0..3 {
        let admin = mock.cluster().admin(&ClientConfig::new()).unwrap();
        // Connected and used, as the worker's cluster-id lookup uses it.
        let id = admin.cluster_id(Duration::from_secs(10)).await.unwrap();
        assert!(id.is_some());
        let started = Instant::now();
        drop(admin);
        let took = started.elapsed();
        assert!(
            took < Duration::from_millis(50),
            "dropping the admin client took {took:?}"
        );
    }
}

/// The same for a consumer in a group: closing it leaves the group and
/// waits for librdkafka's threads (5 s were seen with a slow broker). On
/// an async thread that starved the group member's heartbeats of the
/// worker (a fence in the rebalance benchmark); the wait goes to a
/// blocking thread.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_a_group_consumer_does_not_wait_for_librdkafka() {
    let mock = MockKafka::start(1, &[("t", 1)]).unwrap();
    let config = ClientConfig::from([("group.id", "leaving")]);
    let mut consumer = mock.cluster().consumer(&config).unwrap();
    consumer
        .subscribe(&Subscription::Topics(vec!["t".into()]))
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        assert!(Instant::now() < deadline, "never assigned");
        if let Some(ConsumerEvent::Assigned(_)) =
            consumer.poll(Duration::from_millis(200)).await.unwrap()
        {
            break;
        }
    }
    let started = Instant::now();
    drop(consumer);
    let took = started.elapsed();
    assert!(
        took < Duration::from_millis(50),
        "dropping the consumer took {took:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pattern_subscription_matches_whole_names() {
    let mock = MockKafka::start(
        1,
        &[("metrics-cpu", 1), ("metrics-mem", 1), ("old-metrics-x", 1)],
    )
    .unwrap();
    let config: ClientConfig =
        ClientConfig::from([("group.id", "pattern"), ("auto.offset.reset", "earliest")]);
    let mut consumer = mock.cluster().consumer(&config).unwrap();
    consumer
        .subscribe(&Subscription::Pattern("metrics-.*".into()))
        .unwrap();
    let want: BTreeSet<TopicPartition> = ["metrics-cpu", "metrics-mem"]
        .into_iter()
        .map(|t| TopicPartition::new(t, 0))
        .collect();
    let mut assigned = BTreeSet::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    while assigned != want {
        assert!(Instant::now() < deadline, "assigned {assigned:?}");
        if let Some(ConsumerEvent::Assigned(tps)) =
            consumer.poll(Duration::from_millis(200)).await.unwrap()
        {
            assigned.extend(tps);
        }
    }
}

#[test]
fn a_mock_cluster_needs_a_broker() {
    let err = MockKafka::start(0, &[]).unwrap_err();
    assert_eq!(err.kind(), KafkaErrorKind::Config);
    let mock = MockKafka::start(1, &[]).unwrap();
    assert_eq!(
        mock.create_topic("t", 0).unwrap_err().kind(),
        KafkaErrorKind::Config
    );
}
