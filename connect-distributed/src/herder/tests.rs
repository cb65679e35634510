//! The distributed herder's REST side one call at a time: a
//! [`DistributedHerder`] over the in-memory Kafka, not in any group (its
//! view of the group set by each test), on paused time. The engine's
//! tests (`engine/tests.rs`) build their worker with the same
//! [`herder_with_connector`].

use super::*;
use connect_api::ErrorKind;
use connect_runtime::kafka::memory::MemoryKafka;
use connect_runtime::kafka::{ClientConfig, KafkaCluster};
use connect_runtime::offsets::KafkaOffsetStore;
use connect_runtime::source::ZombieFencing;
use connect_runtime::status::StatusListener as _;

/// The connector every test runs: the testkit's source, whose task never
/// returns from `stop` (`fault.call`), so how long the worker waits for it
/// shows in the paused clock.
pub(super) const CONNECTOR: &str = "c";

/// `task.shutdown.graceful.timeout.ms` in these workers.
pub(super) const GRACEFUL: Duration = Duration::from_secs(5);

/// A worker whose config topic holds connector [`CONNECTOR`] (the
/// testkit's faulty source) with one committed task, not in any group.
pub(super) async fn herder_with_connector() -> DistributedHerder {
    herder_with_connector_on(MemoryKafka::new()).await
}

/// [`herder_with_connector`] on `kafka` (a test keeps a handle to inject
/// faults).
pub(super) async fn herder_with_connector_on(kafka: MemoryKafka) -> DistributedHerder {
    herder_with(kafka, &[]).await
}

/// [`herder_with_connector_on`] with `extra` worker properties.
async fn herder_with(kafka: MemoryKafka, extra: &[(&str, &str)]) -> DistributedHerder {
    let mut props = ConfigMap::from([
        ("bootstrap.servers", "memory:9092"),
        ("group.id", "engine-tests"),
        ("config.storage.topic", "configs"),
        ("offset.storage.topic", "offsets"),
        ("status.storage.topic", "status"),
        (
            "key.converter",
            "org.apache.kafka.connect.storage.StringConverter",
        ),
        (
            "value.converter",
            "org.apache.kafka.connect.storage.StringConverter",
        ),
        ("listeners", "http://127.0.0.1:8083"),
        (
            "task.shutdown.graceful.timeout.ms",
            &GRACEFUL.as_millis().to_string(),
        ),
    ]);
    props.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    let worker_config = WorkerConfig::parse(&props).expect("the worker's config");
    let settings = DistributedConfig::parse(props.iter()).expect("the distributed config");
    let cluster: Arc<dyn KafkaCluster> = Arc::new(kafka);
    let client = ClientConfig::new();
    let timeout = Duration::from_secs(30);
    let offsets = KafkaOffsetStore::open(cluster.as_ref(), &client, "offsets", 1, 1, timeout)
        .await
        .expect("the offsets topic");
    let status: Arc<dyn StatusTopic> = Arc::new(
        KafkaStatusStore::open(cluster.as_ref(), &client, "status", 1, 1, "w", timeout)
            .await
            .expect("the status topic"),
    );
    let configs: Arc<dyn ConfigTopic> = Arc::new(
        KafkaConfigLog::open(cluster.as_ref(), &client, "configs", 1, timeout)
            .await
            .expect("the config topic"),
    );
    let props = |pairs: &[(&str, &str)]| -> crate::topics::config::Properties {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), Some(v.to_string())))
            .collect()
    };
    let connector = props(&[
        ("name", CONNECTOR),
        ("connector.class", "FaultySource"),
        ("tasks.max", "1"),
        ("count", "0"),
        (connect_testkit::faulty::FAULT_CALL, "SourceTask::stop"),
        (connect_testkit::faulty::FAULT_KIND, "hang"),
    ]);
    let mut task = connector.clone();
    task.insert(
        "task.class".into(),
        Some("connect_testkit.faulty.FaultySource".into()),
    );
    configs
        .write(vec![
            ConfigRecord::Connector {
                connector: CONNECTOR.into(),
                properties: connector,
            },
            ConfigRecord::Task {
                id: TaskId::new(CONNECTOR, 0),
                properties: task,
            },
            ConfigRecord::TasksCommit {
                connector: CONNECTOR.into(),
                tasks: 1,
            },
        ])
        .await
        .expect("the connector's configs written");
    configs.read_to_end().await.expect("the config topic read");
    let mut plugins = Plugins::with_builtins();
    connect_testkit::faulty::register(&mut plugins);
    let worker = Worker::with_status_store(
        worker_config,
        plugins,
        cluster,
        Arc::new(offsets),
        status.clone(),
    );
    DistributedHerder::new(worker, configs, status, settings)
}

/// A task restart sent on to its owner keeps the owner's refusal: a
/// 409 (the owner is restarting that task already) stays a 409 the
/// user may retry, instead of becoming a 500.
#[test]
fn an_owners_refusal_keeps_its_status() {
    let body = br#"{"error_code":409,"message":"Task s-0 is not running on this worker"}"#;
    let e = owner_refusal("10.0.0.2:8083", 409, body);
    assert!(matches!(e.kind(), ErrorKind::Conflict), "{e:?}");
    assert_eq!(e.message(), "Task s-0 is not running on this worker");
    let e = owner_refusal("10.0.0.2:8083", 404, br#"{"message":"gone"}"#);
    assert!(matches!(e.kind(), ErrorKind::NotFound), "{e:?}");
    let e = owner_refusal("10.0.0.2:8083", 502, b"bad gateway");
    assert!(matches!(e.kind(), ErrorKind::Other), "{e:?}");
    assert!(
        e.to_string()
            .contains("10.0.0.2:8083 answered 502: bad gateway"),
        "{e}"
    );
}

/// Polls (on the paused clock) until `check` holds, for at most a minute.
pub(super) async fn eventually(what: &str, mut check: impl AsyncFnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while !check().await {
        assert!(tokio::time::Instant::now() < deadline, "never: {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// This worker leads generation 1, with no rebalance under way.
fn lead(h: &DistributedHerder) {
    h.shared.set_view(|v| {
        v.is_leader = true;
        v.generation = 1;
        v.rebalancing = false;
        v.leader_url = Some("http://127.0.0.1:8083/".into());
    });
}

fn source(tasks_max: &str) -> ConfigMap {
    ConfigMap::from([
        ("connector.class", "FaultySource"),
        ("tasks.max", tasks_max),
    ])
}

fn assert_not_found<T: std::fmt::Debug>(result: Result<T>, what: &str) {
    let e = result.expect_err(what);
    assert!(matches!(e.kind(), ErrorKind::NotFound), "{what}: {e:?}");
}

/// Connector CRUD goes through the config topic: a created connector has
/// its name in its config and no tasks yet, a second one of the name is a
/// 409, a paused start writes its target state, a bad config writes
/// nothing; PUT says whether it created; a deleted connector is gone for
/// every call.
#[tokio::test(start_paused = true)]
async fn connectors_are_created_updated_and_deleted() {
    let h = herder_with_connector().await;
    let info = h
        .create_connector("d", source("1"), TargetState::Started)
        .await
        .unwrap();
    assert_eq!((info.name.as_str(), info.kind.as_str()), ("d", "source"));
    assert_eq!(info.config.get("name").map(String::as_str), Some("d"));
    assert!(info.tasks.is_empty());
    assert_eq!(h.connector_names().await, ["c", "d"]);
    let e = h
        .create_connector("d", source("1"), TargetState::Started)
        .await
        .unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::Conflict), "{e:?}");

    h.create_connector("p", source("1"), TargetState::Paused)
        .await
        .unwrap();
    assert_eq!(h.state().target_state("p"), Some(TargetState::Paused));
    assert_eq!(h.state().target_state("d"), Some(TargetState::Started));

    let bad = ConfigMap::from([("connector.class", "NoSuchConnector")]);
    assert!(h
        .create_connector("x", bad.clone(), TargetState::Started)
        .await
        .is_err());
    assert!(h.put_connector_config("x", bad).await.is_err());
    assert!(!h.connector_names().await.contains(&"x".to_string()));

    let (info, created) = h.put_connector_config("d", source("2")).await.unwrap();
    assert!(!created);
    assert_eq!(info.config.get("tasks.max").map(String::as_str), Some("2"));
    let (info, created) = h.put_connector_config("e", source("1")).await.unwrap();
    assert!(created);
    assert_eq!(info.name, "e");
    assert_eq!(
        h.connector_info("e")
            .await
            .unwrap()
            .config
            .get("name")
            .map(String::as_str),
        Some("e")
    );

    h.delete_connector("d").await.unwrap();
    assert_eq!(h.connector_names().await, ["c", "e", "p"]);
    assert_not_found(h.delete_connector("d").await, "delete");
    assert_not_found(h.connector_info("d").await, "info");
    assert_not_found(h.task_configs("d").await, "task configs");
    assert_not_found(h.connector_status("d").await, "status");
    assert_not_found(h.pause("d").await, "pause");
    assert_not_found(h.connector_topics("d").await, "topics");
    assert_not_found(h.reset_connector_topics("d").await, "topics reset");
    assert_not_found(h.connector_offsets("d").await, "offsets");
    assert_not_found(h.restart_connector("d", false, false).await, "restart");
}

/// A connector's info and task configs are the committed ones.
#[tokio::test(start_paused = true)]
async fn info_and_task_configs_are_the_committed_ones() {
    let h = herder_with_connector().await;
    let configs = h.task_configs(CONNECTOR).await.unwrap();
    assert_eq!(configs.len(), 1);
    assert_eq!(
        configs[0].get("task.class").map(String::as_str),
        Some("connect_testkit.faulty.FaultySource")
    );
    let info = h.connector_info(CONNECTOR).await.unwrap();
    assert_eq!(
        info.tasks,
        [TaskRef {
            connector: CONNECTOR.into(),
            task: 0
        }]
    );
    assert_eq!(info.kind, "source");
    assert!(h.connector_topics(CONNECTOR).await.unwrap().is_empty());
    h.reset_connector_topics(CONNECTOR).await.unwrap();
}

/// Puts RUNNING for the connector and FAILED for its task, as the status
/// topic reads them back.
async fn running_with_a_failed_task(h: &DistributedHerder) {
    let store = h.shared.worker.status_store();
    store.put_connector(CONNECTOR, State::Running, None);
    store.task_state(
        &TaskId::new(CONNECTOR, 0),
        State::Failed,
        Some("boom".into()),
    );
    eventually("the statuses read back", async || {
        h.shared.status.connector_status(CONNECTOR).is_some()
            && h.shared
                .status
                .task_status(&TaskId::new(CONNECTOR, 0))
                .is_some()
    })
    .await;
}

/// Statuses come from the status topic: none yet is a 404 naming the
/// connector; then the connector's and each task's state, worker, trace
/// and the plugin's version.
#[tokio::test(start_paused = true)]
async fn statuses_come_from_the_status_topic() {
    let h = herder_with_connector().await;
    let e = h.connector_status(CONNECTOR).await.unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::NotFound), "{e:?}");
    assert!(
        e.to_string().contains("No status found for connector c"),
        "{e}"
    );
    running_with_a_failed_task(&h).await;
    let s = h.connector_status(CONNECTOR).await.unwrap();
    assert_eq!((s.name.as_str(), s.kind.as_str()), (CONNECTOR, "source"));
    assert_eq!(s.connector.state, "RUNNING");
    assert!(!s.connector.worker_id.is_empty());
    // The testkit's connectors say they are version 1.0.
    assert_eq!(h.version_of(&source("1")), "1.0");
    assert_eq!(s.connector.version, "1.0");
    assert_eq!(s.tasks.len(), 1);
    assert_eq!(
        (s.tasks[0].id, s.tasks[0].state.state.as_str()),
        (0, "FAILED")
    );
    assert_eq!(s.tasks[0].state.trace.as_deref(), Some("boom"));
    let t = h.task_status(CONNECTOR, 0).await.unwrap();
    assert_eq!(t.state.state, "FAILED");
    let e = h.task_status(CONNECTOR, 1).await.unwrap_err();
    assert!(
        e.to_string().contains("No status found for task c-1"),
        "{e}"
    );
    // Without a status, a unit reads UNASSIGNED with the plugin's version.
    let unassigned = h.state_info(None, "1.2");
    assert_eq!(
        (unassigned.state.as_str(), unassigned.version.as_str()),
        ("UNASSIGNED", "1.2")
    );
}

/// Pause, resume and stop write the target state; stop writes an empty
/// task set first (KIP-875).
#[tokio::test(start_paused = true)]
async fn target_states_are_written() {
    let h = herder_with_connector().await;
    h.pause(CONNECTOR).await.unwrap();
    assert_eq!(h.state().target_state(CONNECTOR), Some(TargetState::Paused));
    assert_eq!(h.state().task_count(CONNECTOR), Some(1));
    h.resume(CONNECTOR).await.unwrap();
    assert_eq!(
        h.state().target_state(CONNECTOR),
        Some(TargetState::Started)
    );
    h.stop(CONNECTOR).await.unwrap();
    assert_eq!(
        h.state().target_state(CONNECTOR),
        Some(TargetState::Stopped)
    );
    assert_eq!(h.state().task_count(CONNECTOR), Some(0));
}

/// A restart writes Kafka's restart request and answers the plan: what
/// will restart shows RESTARTING (all, or only the failed with
/// onlyFailed; tasks only with includeTasks).
#[tokio::test(start_paused = true)]
async fn a_restart_answers_its_plan_and_writes_the_request() {
    let h = herder_with_connector().await;
    running_with_a_failed_task(&h).await;
    let mut requests = h.shared.configs.restart_requests();
    for (include_tasks, only_failed, connector, task) in [
        (true, true, "RUNNING", "RESTARTING"),
        (false, false, "RESTARTING", "FAILED"),
        (true, false, "RESTARTING", "RESTARTING"),
        (false, true, "RUNNING", "FAILED"),
    ] {
        let plan = h
            .restart_connector(CONNECTOR, include_tasks, only_failed)
            .await
            .unwrap();
        let case = format!("includeTasks={include_tasks} onlyFailed={only_failed}");
        assert_eq!(plan.connector.state, connector, "{case}");
        assert_eq!(plan.tasks[0].state.state, task, "{case}");
        let request = requests.recv().await.expect("the request read back");
        assert_eq!(
            (
                request.connector.as_str(),
                request.include_tasks,
                request.only_failed
            ),
            (CONNECTOR, include_tasks, only_failed),
            "{case}"
        );
    }
    // A running task restarts with includeTasks, unless only the failed
    // ones are asked for.
    let id = TaskId::new(CONNECTOR, 0);
    h.shared
        .worker
        .status_store()
        .task_state(&id, State::Running, None);
    eventually("the task reported running", async || {
        h.shared
            .status
            .task_status(&id)
            .is_some_and(|s| s.state == State::Running)
    })
    .await;
    for (only_failed, task) in [(false, "RESTARTING"), (true, "RUNNING")] {
        let plan = h
            .restart_connector(CONNECTOR, true, only_failed)
            .await
            .unwrap();
        assert_eq!(plan.tasks[0].state.state, task, "onlyFailed={only_failed}");
    }
}

/// Offsets change only for a STOPPED connector (Kafka's message
/// otherwise), and only once no rebalance is under way and the last round
/// placed none of its tasks (409 after waiting `REBALANCE_WAIT`).
#[tokio::test(start_paused = true)]
async fn offsets_change_only_when_stopped_and_settled() {
    let h = herder_with_connector().await;
    let e = h.reset_connector_offsets(CONNECTOR).await.unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::Config { .. }), "{e:?}");
    assert!(
        e.to_string().contains("must be in the STOPPED state"),
        "{e}"
    );
    h.stop(CONNECTOR).await.unwrap();
    // A rebalance under way (a herder that has not joined yet).
    let at = tokio::time::Instant::now();
    let e = h.reset_connector_offsets(CONNECTOR).await.unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::Conflict), "{e:?}");
    assert!(at.elapsed() >= REBALANCE_WAIT, "waited {:?}", at.elapsed());
    lead(&h);
    h.shared.set_placed(BTreeSet::from([CONNECTOR.to_string()]));
    let e = h
        .alter_connector_offsets(CONNECTOR, Vec::new())
        .await
        .unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::Conflict), "{e:?}");
    h.shared.set_placed(BTreeSet::from(["other".to_string()]));
    let done = h.reset_connector_offsets(CONNECTOR).await.unwrap();
    assert!(done.contains("reset"), "{done}");
    assert!(h
        .connector_offsets(CONNECTOR)
        .await
        .unwrap()
        .offsets
        .is_empty());
}

/// Who takes a write (the REST layer forwards by it), and the view's
/// getters.
#[tokio::test(start_paused = true)]
async fn writes_go_to_the_leader_the_view_knows() {
    let h = herder_with_connector().await;
    assert!(matches!(h.leader_writes(), RequestOwner::Unknown));
    assert!(!h.is_leader());
    assert_eq!((h.leader_url(), h.generation()), (None, -1));
    h.shared
        .set_view(|v| v.leader_url = Some("http://10.0.0.9:8083/".into()));
    assert!(matches!(h.leader_writes(), RequestOwner::Leader(u) if u == "http://10.0.0.9:8083/"));
    lead(&h);
    assert!(matches!(h.leader_writes(), RequestOwner::Here));
    assert!(h.is_leader());
    assert_eq!(h.generation(), 1);
    assert_eq!(h.leader_url().as_deref(), Some("http://127.0.0.1:8083/"));
    assert_eq!(h.worker_id(), h.shared.worker.worker_id());
    assert!(!h.worker_id().is_empty());
    assert!(std::ptr::eq(h.config(), h.shared.worker.config()));
    assert!(std::ptr::eq(h.plugins(), h.shared.worker.plugins()));
    assert!(h.metrics().is_some());
    let (class, reports) = h.validate(&source("1")).unwrap();
    assert_eq!(class, "connect_testkit.faulty.FaultySource");
    assert!(!reports.is_empty());
}

/// Task configs sent to the leader (the internal request): refused 409
/// by a worker that neither leads nor knows the leader, and by a leader
/// without a session key; 400 unsigned, 403 badly signed; written when
/// signed; 404 for an unknown connector; a follower asked not to forward
/// refuses with the leader's URL.
#[tokio::test(start_paused = true)]
async fn task_configs_from_another_worker_are_checked_then_written() {
    let h = herder_with_connector().await;
    let configs = [ConfigMap::from([("k", "v")])];
    let body = internal::task_configs_body(&configs);
    let e = h
        .take_task_configs(CONNECTOR, &body, None, None)
        .await
        .unwrap_err();
    assert!(matches!(e, InternalRequestError::NotLeader(None)), "{e:?}");
    assert_eq!(e.status(), 409);
    lead(&h);
    let e = h
        .take_task_configs(CONNECTOR, &body, None, None)
        .await
        .unwrap_err();
    assert!(matches!(e, InternalRequestError::NoSessionKey), "{e:?}");
    assert_eq!(e.status(), 409);

    h.shared.rotate_session_key(&h.state()).await.unwrap();
    let key = h.state().session_key().cloned().expect("a session key");
    let at = h.state().offset();
    h.shared.rotate_session_key(&h.state()).await.unwrap();
    assert_eq!(h.state().offset(), at, "a fresh key is kept");

    let e = h
        .take_task_configs(CONNECTOR, &body, None, None)
        .await
        .unwrap_err();
    assert_eq!(e.status(), 400, "{e}");
    let forged = Some((internal::HMAC_SHA256, "c2lnbmF0dXJl"));
    let e = h
        .take_task_configs(CONNECTOR, &body, forged, None)
        .await
        .unwrap_err();
    assert_eq!(e.status(), 403, "{e}");
    let signature = internal::sign(&key, &body);
    let signed = Some((internal::HMAC_SHA256, signature.as_str()));
    h.take_task_configs(CONNECTOR, &body, signed, None)
        .await
        .unwrap();
    assert_eq!(h.task_configs(CONNECTOR).await.unwrap(), configs);
    let refusal = h
        .accept_task_configs("nope", &body, signed, None)
        .await
        .unwrap_err();
    assert_eq!(refusal.status, 404, "{refusal:?}");
    assert!(
        refusal.message.contains("Connector nope not found"),
        "{refusal:?}"
    );

    h.shared.set_view(|v| v.is_leader = false);
    let e = h
        .take_task_configs(CONNECTOR, &body, signed, Some(false))
        .await
        .unwrap_err();
    assert!(
        matches!(&e, InternalRequestError::NotLeader(Some(u)) if u == "http://127.0.0.1:8083/"),
        "{e:?}"
    );
}

/// The HTTP status of each refusal, as Kafka answers.
#[test]
fn internal_refusals_have_kafkas_statuses() {
    use internal::SignatureError;
    let cases = [
        (InternalRequestError::NotLeader(None), 409),
        (InternalRequestError::NoSessionKey, 409),
        (
            InternalRequestError::Leader {
                leader: "l".into(),
                status: 502,
                message: String::new(),
            },
            502,
        ),
        (
            InternalRequestError::Signature(SignatureError::Invalid),
            403,
        ),
        (
            InternalRequestError::Signature(SignatureError::Missing),
            400,
        ),
        (InternalRequestError::Failed(not_found("c")), 404),
        (
            InternalRequestError::Failed(ConnectError::config("k", "bad")),
            400,
        ),
        (
            InternalRequestError::Failed(ConnectError::conflict("busy")),
            409,
        ),
        (
            InternalRequestError::Failed(ConnectError::other("broken")),
            500,
        ),
    ];
    for (e, status) in cases {
        let message = e.to_string();
        let refusal = e.refusal();
        assert_eq!(refusal.status, status, "{message}");
        assert_eq!(refusal.message, message);
    }
}

/// A task restart: a task the connector does not have is a 404; one that
/// runs nowhere known (or, by a stale status, on this worker) is Kafka's
/// 409 after waiting for the rebalance.
#[tokio::test(start_paused = true)]
async fn a_task_restart_that_cannot_happen_says_why() {
    let h = herder_with_connector().await;
    *h.shared.url.lock().unwrap() = "http://127.0.0.1:8083/".into();
    let at = tokio::time::Instant::now();
    assert_not_found(h.restart_task(CONNECTOR, 5).await, "no such task");
    assert_eq!(at.elapsed(), Duration::ZERO, "a 404 does not wait");
    let e = h.restart_task_here(CONNECTOR, 0).await.unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::Conflict), "{e:?}");
    let at = tokio::time::Instant::now();
    let e = h.restart_task(CONNECTOR, 0).await.unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::Conflict), "{e:?}");
    assert!(at.elapsed() >= REBALANCE_WAIT, "waited {:?}", at.elapsed());
    assert!(
        e.to_string()
            .contains("Task c-0 is not running on this worker"),
        "{e}"
    );
}

#[test]
fn names_are_one_url_segment_and_null_values_are_unset() {
    assert_eq!(url_segment("a b/c%d-e_f.g~h"), "a%20b%2Fc%25d-e_f.g~h");
    let props: Properties = [
        ("a".to_string(), Some("1".to_string())),
        ("b".to_string(), None),
    ]
    .into_iter()
    .collect();
    let map = properties_to_map(&props);
    assert_eq!(map, ConfigMap::from([("a", "1")]));
    assert_eq!(
        map_to_properties(&map),
        [("a".to_string(), Some("1".to_string()))]
            .into_iter()
            .collect::<Properties>()
    );
}

/// Writes `records` to the config topic and reads them back.
async fn write(h: &DistributedHerder, records: Vec<ConfigRecord>) {
    h.shared
        .configs
        .write(records)
        .await
        .expect("records written");
    h.shared.configs.read_to_end().await.expect("read back");
}

/// Zombie fencing (KIP-618) is the leader's: refused elsewhere with the
/// leader's URL, 404 for an unknown connector, 400 for a sink; a first
/// exactly-once start records the task count, after which nothing is
/// pending; a connector that had two tasks has both producers fenced
/// before the new count is written.
#[tokio::test(start_paused = true)]
async fn the_leader_fences_zombies_and_records_the_task_count() {
    let h = herder_with_connector().await;
    let e = h.shared.fence_zombies(CONNECTOR).await.unwrap_err();
    assert!(matches!(e, InternalRequestError::NotLeader(None)), "{e:?}");
    lead(&h);
    let e = h.shared.fence_zombies("nope").await.unwrap_err();
    assert_eq!(e.status(), 404, "{e}");
    let sink = ConfigMap::from([("connector.class", "FaultySink"), ("topics", "t")]);
    h.create_connector("s", sink, TargetState::Started)
        .await
        .unwrap();
    let e = h.shared.fence_zombies("s").await.unwrap_err();
    assert_eq!(e.status(), 400, "{e}");
    assert!(
        e.to_string()
            .contains("Connector s is not a source connector"),
        "{e}"
    );

    assert!(h.state().is_pending_fencing(CONNECTOR));
    assert_eq!(h.state().task_count_record(CONNECTOR), None);
    h.shared.fence_zombies(CONNECTOR).await.unwrap();
    h.shared.configs.read_to_end().await.unwrap();
    assert_eq!(h.state().task_count_record(CONNECTOR), Some(1));
    assert!(!h.state().is_pending_fencing(CONNECTOR));
    let at = h.state().offset();
    h.shared.fence_zombies(CONNECTOR).await.unwrap();
    assert_eq!(h.state().offset(), at, "nothing pending: nothing written");

    // Two tasks recorded, then a new commit of one.
    let task = h
        .state()
        .task_config(&TaskId::new(CONNECTOR, 0))
        .cloned()
        .unwrap();
    write(
        &h,
        vec![
            ConfigRecord::TaskCount {
                connector: CONNECTOR.into(),
                task_count: 2,
            },
            ConfigRecord::Task {
                id: TaskId::new(CONNECTOR, 0),
                properties: task,
            },
            ConfigRecord::TasksCommit {
                connector: CONNECTOR.into(),
                tasks: 1,
            },
        ],
    )
    .await;
    assert!(h.state().is_pending_fencing(CONNECTOR));
    h.shared.fence_zombies(CONNECTOR).await.unwrap();
    h.shared.configs.read_to_end().await.unwrap();
    assert_eq!(h.state().task_count_record(CONNECTOR), Some(1));
}

/// A task about to start with exactly-once support checks that its task
/// configs are still the newest and that it is still assigned here.
#[tokio::test(start_paused = true)]
async fn an_exactly_once_task_starts_only_if_current_and_still_here() {
    let h = herder_with_connector().await;
    let fencing = fencing::HerderFencing(Arc::downgrade(&h.shared));
    let id = TaskId::new(CONNECTOR, 0);
    let generation = h
        .state()
        .task_config_generation(CONNECTOR)
        .map_or(-1, i64::from);
    let e = fencing.verify(&id, generation).await.unwrap_err();
    assert!(
        e.to_string()
            .contains("already been revoked from this worker"),
        "{e}"
    );
    h.shared.owned_tasks.lock().unwrap().insert(id.clone());
    fencing.verify(&id, generation).await.unwrap();
    let e = fencing.verify(&id, generation - 1).await.unwrap_err();
    assert!(
        e.to_string()
            .contains("already generated a new set of task configs"),
        "{e}"
    );
    // Asking for fencing with no leader known is retriable; as the
    // leader, it is done here and answers the generation.
    let e = fencing.fence(&id).await.unwrap_err();
    assert!(e.is_retriable(), "{e:?}");
    lead(&h);
    assert_eq!(fencing.fence(&id).await.unwrap(), generation);
    assert_eq!(h.state().task_count_record(CONNECTOR), Some(1));
}

/// The herder's side of the group: before a JoinGroup it waits for the
/// loop to finish what it was told (the barrier), then offers its URL and
/// config offset; as the leader it deals the config topic's work out
/// (incremental and eager) and notes the connectors whose tasks it placed.
#[tokio::test(start_paused = true)]
async fn the_leader_deals_out_the_config_topics_work() {
    use crate::group::RoundMember;
    use crate::protocol::{Assignment, WorkerMetadata};
    let h = herder_with_connector().await;
    // A connector without committed tasks: nothing of it is placed.
    h.create_connector("d", source("1"), TargetState::Started)
        .await
        .unwrap();
    let url = "http://127.0.0.1:8083/";
    *h.shared.url.lock().unwrap() = url.into();
    let (barrier, mut barriers) = mpsc::unbounded_channel();
    let coordination = Coordination {
        shared: h.shared.clone(),
        assignor: Mutex::new(AssignorState::default()),
        barrier,
    };
    let answered = tokio::spawn(async move {
        let done: engine::Barrier = barriers.recv().await.expect("a barrier");
        done.send(()).expect("the member waits");
    });
    let offered = coordination.worker_state().await.unwrap();
    answered.await.unwrap();
    let offset = h.state().offset();
    assert_eq!((offered.url.as_str(), offered.config_offset), (url, offset));

    for protocol in [SubProtocol::Sessioned, SubProtocol::Eager] {
        h.shared.set_placed(BTreeSet::new());
        let round = LeaderRound {
            generation: 1,
            leader_id: "m".into(),
            protocol,
            last_completed_generation: -1,
            members: vec![RoundMember {
                id: "m".into(),
                metadata: WorkerMetadata::new(protocol, url, offset, None),
                raw: Default::default(),
            }],
        };
        let out = coordination.assign(&round).await.unwrap();
        let a = Assignment::decode(&out["m"]).unwrap();
        assert_eq!(a.version, protocol.version(), "{protocol:?}");
        assert_eq!(a.config_offset, offset, "{protocol:?}");
        let c: Vec<i32> = a
            .assigned
            .iter()
            .filter(|c| c.connector == CONNECTOR)
            .flat_map(|c| c.tasks.iter().copied())
            .collect();
        assert!(c.contains(&-1) && c.contains(&0), "{protocol:?}: {a:?}");
        assert!(h.shared.placed(CONNECTOR), "{protocol:?}");
        assert!(!h.shared.placed("d"), "{protocol:?}");
    }
}

/// What a [`fake_worker`] was asked: each request's head (request line
/// and headers, lower-cased).
type Requests = Arc<Mutex<Vec<String>>>;

/// Another worker's REST API as far as a request sent on to it needs:
/// every request answered `status` with `body`. Real sockets: the tests
/// that use it run on the real clock (a paused one would advance past the
/// client's timeout while the socket is idle).
async fn fake_worker(status: u16, body: &'static str) -> (String, Requests) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let requests = Requests::default();
    let noted = requests.clone();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let noted = noted.clone();
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                let head = loop {
                    match stream.read(&mut chunk).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                    if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                        break String::from_utf8_lossy(&buf[..end]).to_lowercase();
                    }
                };
                let length: usize = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:"))
                    .and_then(|v| v.trim().parse().ok())
                    .unwrap_or(0);
                let body_start = head.len() + 4;
                while buf.len() < body_start + length {
                    match stream.read(&mut chunk).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
                noted.lock().unwrap().push(head);
                let reply = format!(
                    "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = stream.write_all(reply.as_bytes()).await;
            });
        }
    });
    (format!("http://{addr}/"), requests)
}

/// The request lines a fake worker saw.
fn request_lines(requests: &Requests) -> Vec<String> {
    let seen = requests.lock().unwrap();
    seen.iter()
        .map(|h| h.lines().next().unwrap_or_default().to_string())
        .collect()
}

/// A follower hands task configs to the leader's REST API, signed once
/// there is a session key; a refusal is a retriable error naming the
/// leader and its answer; no known leader is retriable too.
#[tokio::test]
async fn a_follower_hands_task_configs_to_the_leader_signed() {
    let h = herder_with_connector().await;
    let configs = [ConfigMap::from([("k", "v")])];
    let e = h
        .shared
        .hand_to_leader(CONNECTOR, &configs)
        .await
        .unwrap_err();
    assert!(
        e.is_retriable() && e.to_string().contains("no leader is known"),
        "{e}"
    );

    let (leader, requests) = fake_worker(204, "").await;
    h.shared.set_view(|v| v.leader_url = Some(leader.clone()));
    h.shared.hand_to_leader(CONNECTOR, &configs).await.unwrap();
    assert_eq!(
        request_lines(&requests),
        ["post /connectors/c/tasks?forward=true http/1.1"]
    );
    assert!(!requests.lock().unwrap()[0].contains("x-connect-authorization"));

    lead(&h);
    h.shared.rotate_session_key(&h.state()).await.unwrap();
    h.shared.set_view(|v| {
        v.is_leader = false;
        v.leader_url = Some(leader.clone());
    });
    h.shared.hand_to_leader(CONNECTOR, &configs).await.unwrap();
    let head = requests.lock().unwrap()[1].clone();
    let key = h.state().session_key().cloned().unwrap();
    let signature = internal::sign(&key, &internal::task_configs_body(&configs));
    assert!(
        head.contains(&format!(
            "x-connect-authorization: {}",
            signature.to_lowercase()
        )),
        "{head}"
    );
    assert!(
        head.contains("x-connect-request-signature-algorithm: hmacsha256"),
        "{head}"
    );

    let (refusing, _) = fake_worker(500, r#"{"message":"no"}"#).await;
    h.shared.set_view(|v| v.leader_url = Some(refusing.clone()));
    let e = h
        .shared
        .hand_to_leader(CONNECTOR, &configs)
        .await
        .unwrap_err();
    assert!(e.is_retriable(), "{e:?}");
    assert!(
        e.to_string()
            .contains(&format!("the leader at {refusing} answered POST")),
        "{e}"
    );
    assert!(e.to_string().contains("with 500"), "{e}");
}

/// An internal request reaching a follower is checked there and sent on
/// to the leader: once more (`forward=true`) when it came without
/// `forward`, as the last hop (`forward=false`) when it came with
/// `forward=true`; the leader's refusal comes back with its status.
#[tokio::test]
async fn a_follower_sends_internal_requests_on_to_the_leader() {
    let h = herder_with_connector().await;
    lead(&h);
    h.shared.rotate_session_key(&h.state()).await.unwrap();
    let key = h.state().session_key().cloned().unwrap();
    let body = internal::task_configs_body(&[ConfigMap::from([("k", "v")])]);
    let signature = internal::sign(&key, &body);
    let signed = Some((internal::HMAC_SHA256, signature.as_str()));
    let (leader, requests) = fake_worker(204, "").await;
    h.shared.set_view(|v| {
        v.is_leader = false;
        v.leader_url = Some(leader.clone());
    });
    h.take_task_configs(CONNECTOR, &body, signed, None)
        .await
        .unwrap();
    h.take_task_configs(CONNECTOR, &body, signed, Some(true))
        .await
        .unwrap();
    h.fence_zombies(
        CONNECTOR,
        &[],
        Some((internal::HMAC_SHA256, &internal::sign(&key, &[]))),
        None,
    )
    .await
    .unwrap();
    assert_eq!(
        request_lines(&requests),
        [
            "post /connectors/c/tasks?forward=true http/1.1",
            "post /connectors/c/tasks?forward=false http/1.1",
            "put /connectors/c/fence?forward=true http/1.1",
        ]
    );
    let (refusing, _) = fake_worker(409, r#"{"message":"busy"}"#).await;
    h.shared.set_view(|v| v.leader_url = Some(refusing.clone()));
    let e = h
        .take_task_configs(CONNECTOR, &body, signed, None)
        .await
        .unwrap_err();
    assert!(
        matches!(&e, InternalRequestError::Leader { status: 409, leader, .. } if *leader == refusing),
        "{e:?}"
    );
    assert_eq!(e.status(), 409);
}

/// Another worker, at `url`, reports task `id` RUNNING in the status
/// topic, and `h` reads it.
async fn runs_on(kafka: &MemoryKafka, h: &DistributedHerder, id: &TaskId, url: &str) {
    let worker_id = url.trim_start_matches("http://").trim_end_matches('/');
    let theirs = KafkaStatusStore::open(
        kafka,
        &ClientConfig::new(),
        "status",
        1,
        1,
        worker_id,
        Duration::from_secs(30),
    )
    .await
    .unwrap();
    theirs.task_state(id, State::Running, None);
    eventually("their status read here", async || {
        h.shared
            .status
            .task_status(id)
            .is_some_and(|s| s.worker_id == worker_id)
    })
    .await;
}

/// A task restart for a task another worker runs (by the status topic)
/// is sent on to that worker, as the last hop; its 409 stays a 409.
#[tokio::test]
async fn a_task_restart_goes_to_the_worker_running_it() {
    let kafka = MemoryKafka::new();
    let h = herder_with_connector_on(kafka.clone()).await;
    *h.shared.url.lock().unwrap() = "http://127.0.0.1:8083/".into();
    let id = TaskId::new(CONNECTOR, 0);
    let (owner, requests) = fake_worker(204, "").await;
    runs_on(&kafka, &h, &id, &owner).await;
    h.restart_task(CONNECTOR, 0).await.unwrap();
    assert_eq!(
        request_lines(&requests),
        ["post /connectors/c/tasks/0/restart?forward=false http/1.1"]
    );
    let (busy, _) = fake_worker(409, r#"{"message":"restarting already"}"#).await;
    runs_on(&kafka, &h, &id, &busy).await;
    let e = h.restart_task_once(CONNECTOR, 0).await.unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::Conflict), "{e:?}");
    assert_eq!(e.message(), "restarting already");
}

/// With `exactly.once.source.support=enabled` the leader writes through
/// the cluster's transactional id: a worker that took the id over fences
/// the old leader, whose writes then fail (retriable, saying why) until
/// a join makes it leader again; released, the id is taken again at the
/// next write. Without it, the leader writes plainly.
#[tokio::test(start_paused = true)]
async fn an_exactly_once_leaders_writes_are_fenced_by_a_newer_leader() {
    assert_eq!(leader_transactional_id("g"), "connect-cluster-g");
    let count = |n| {
        vec![ConfigRecord::TaskCount {
            connector: CONNECTOR.into(),
            task_count: n,
        }]
    };
    let plain = herder_with_connector().await;
    plain.shared.claim_write_privileges().await.unwrap();
    assert!(!plain.shared.leader_writer.lock().await.holds_producer());
    plain.shared.write_as_leader(count(3)).await.unwrap();
    assert_eq!(plain.state().task_count_record(CONNECTOR), Some(3));

    let h = herder_with(
        MemoryKafka::new(),
        &[("exactly.once.source.support", "enabled")],
    )
    .await;
    h.shared.claim_write_privileges().await.unwrap();
    assert!(h.shared.leader_writer.lock().await.holds_producer());
    h.shared.write_as_leader(count(1)).await.unwrap();
    assert_eq!(h.state().task_count_record(CONNECTOR), Some(1));

    let id = leader_transactional_id(h.shared.worker.config().group_id());
    let newer = h
        .shared
        .take_over_transactional_id(&id, Duration::from_secs(30))
        .await
        .unwrap();
    let e = h.shared.write_as_leader(count(2)).await.unwrap_err();
    assert!(e.is_retriable(), "{e:?}");
    assert!(e.to_string().contains("a newer leader took over"), "{e}");
    let e = h.shared.write_as_leader(count(2)).await.unwrap_err();
    assert!(e.to_string().contains("a newer leader took over"), "{e}");
    h.shared.configs.read_to_end().await.unwrap();
    assert_eq!(h.state().task_count_record(CONNECTOR), Some(1));
    drop(newer);

    h.shared.claim_write_privileges().await.unwrap();
    h.shared.write_as_leader(count(2)).await.unwrap();
    assert_eq!(h.state().task_count_record(CONNECTOR), Some(2));
    h.shared.release_write_privileges().await;
    assert!(!h.shared.leader_writer.lock().await.holds_producer());
    h.shared.write_as_leader(count(4)).await.unwrap();
    assert_eq!(h.state().task_count_record(CONNECTOR), Some(4));
}

/// Through the herder's view of the status topic: the generation and the
/// plugin version set for a connector go into the statuses written next.
#[tokio::test(start_paused = true)]
async fn statuses_carry_the_generation_and_version_set() {
    let h = herder_with_connector().await;
    h.shared.status.set_generation(7);
    h.shared.status.set_version(CONNECTOR, Some("9.9".into()));
    h.shared
        .worker
        .status_store()
        .put_connector(CONNECTOR, State::Running, None);
    eventually("the status read back", async || {
        h.shared.status.connector_status(CONNECTOR).is_some()
    })
    .await;
    let status = h.shared.status.connector_status(CONNECTOR).unwrap();
    assert_eq!(
        (status.generation, status.version.as_deref()),
        (7, Some("9.9"))
    );
}

/// Writes by another worker are seen once the herder reads the config
/// topic to its end: a create of a name another worker just took is 409,
/// a delete of a connector another worker just created succeeds.
#[tokio::test(start_paused = true)]
async fn writes_of_other_workers_are_read_before_deciding() {
    let kafka = MemoryKafka::new();
    let h = herder_with_connector_on(kafka.clone()).await;
    let other = KafkaConfigLog::open(
        &kafka,
        &ClientConfig::new(),
        "configs",
        1,
        Duration::from_secs(30),
    )
    .await
    .unwrap();
    let properties = map_to_properties(&ConfigMap::from([
        ("name", "d"),
        ("connector.class", "FaultySource"),
    ]));
    let record = ConfigRecord::Connector {
        connector: "d".into(),
        properties,
    };
    ConfigTopic::write(&other, vec![record]).await.unwrap();
    let e = h
        .create_connector("d", source("1"), TargetState::Started)
        .await
        .unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::Conflict), "{e:?}");
    h.delete_connector("d").await.unwrap();
}

/// `stopped` resolves once the herder has left for good, not before.
#[tokio::test(start_paused = true)]
async fn stopped_resolves_once_the_herder_has_left() {
    let h = herder_with_connector().await;
    let waiting = tokio::time::timeout(Duration::from_secs(5), h.stopped()).await;
    assert!(waiting.is_err(), "stopped before leaving");
    h.shared.set_left();
    tokio::time::timeout(Duration::from_secs(5), h.stopped())
        .await
        .expect("stopped after leaving");
}

/// `shutdown` of a herder whose loop has already left (its member
/// stopped for good) returns at once instead of waiting out its bound.
#[tokio::test(start_paused = true)]
async fn shutdown_after_the_loop_left_returns_at_once() {
    let h = herder_with_connector().await;
    h.shared.set_left();
    let at = tokio::time::Instant::now();
    h.shutdown().await;
    assert_eq!(at.elapsed(), Duration::ZERO);
    assert!(*h.stop.borrow(), "the automatic restarts see the stop");
}

/// `start` advertises the URL with a trailing slash, routes task restarts
/// to the herder loop and starts it; `shutdown` ends the loop, which
/// reports it left, even when the group was never reached.
#[tokio::test]
async fn start_runs_the_loop_and_shutdown_ends_it() {
    let h = herder_with_connector().await;
    assert!(h.shared.task_restarts.get().is_none());
    h.start("http://127.0.0.1:8083").unwrap();
    assert_eq!(h.shared.url(), "http://127.0.0.1:8083/");
    assert!(h.shared.task_restarts.get().is_some());
    assert!(
        h.shared.worker.zombie_fencing().is_none(),
        "no zombie fencing without exactly-once source support"
    );
    tokio::time::timeout(Duration::from_secs(30), h.shutdown())
        .await
        .expect("shut down in time");
    tokio::time::timeout(Duration::from_secs(5), h.stopped())
        .await
        .expect("the loop reported it left");

    let eos = herder_with(
        MemoryKafka::new(),
        &[("exactly.once.source.support", "enabled")],
    )
    .await;
    eos.start("http://127.0.0.1:8083/").unwrap();
    assert_eq!(eos.shared.url(), "http://127.0.0.1:8083/");
    assert!(eos.shared.worker.zombie_fencing().is_some());
    tokio::time::timeout(Duration::from_secs(30), eos.shutdown())
        .await
        .expect("shut down in time");
}

/// The errors `exactly.once.support=required` gets in a validation.
fn exactly_once_errors(h: &DistributedHerder) -> Vec<String> {
    let mut config = source("1");
    config.insert("exactly.once.support".into(), "required".into());
    let (_, reports) = h.validate(&config).unwrap();
    reports
        .into_iter()
        .find(|r| r.name == "exactly.once.support")
        .map(|r| r.errors)
        .unwrap_or_default()
}

/// A worker's own rules go into validation: `exactly.once.support=required`
/// is refused by a worker without exactly-once source support, and only
/// for that reason by one with it.
#[tokio::test(start_paused = true)]
async fn validation_knows_the_workers_exactly_once_support() {
    let without = herder_with_connector().await;
    let refused = "This worker does not have exactly-once source support enabled.";
    assert!(
        exactly_once_errors(&without).iter().any(|e| e == refused),
        "{:?}",
        exactly_once_errors(&without)
    );
    let with = herder_with(
        MemoryKafka::new(),
        &[("exactly.once.source.support", "enabled")],
    )
    .await;
    assert!(
        !exactly_once_errors(&with).iter().any(|e| e == refused),
        "{:?}",
        exactly_once_errors(&with)
    );
}

/// The Kafka cluster id the worker reports (`GET /`).
#[tokio::test(start_paused = true)]
async fn the_cluster_id_is_the_kafka_clusters() {
    let kafka = MemoryKafka::new();
    let h = herder_with_connector_on(kafka.clone()).await;
    assert_eq!(
        h.kafka_cluster_id().await.as_deref(),
        Some(kafka.cluster_id())
    );
}

/// A connector without tasks that is not STOPPED may not have its offsets
/// changed either: both conditions hold, not one.
#[tokio::test(start_paused = true)]
async fn offsets_need_the_stopped_target_not_only_no_tasks() {
    let h = herder_with_connector().await;
    lead(&h);
    h.create_connector("d", source("1"), TargetState::Started)
        .await
        .unwrap();
    assert_eq!(h.state().task_count("d").unwrap_or(0), 0);
    let e = h.reset_connector_offsets("d").await.unwrap_err();
    assert!(
        e.to_string().contains("must be in the STOPPED state"),
        "{e}"
    );
}

/// A herder loop that dies (a panic: a bug of ours) is reported as the
/// herder stopped; one that left by itself is left alone. (That it also
/// stops the worker's units is not shown here: none run.)
#[tokio::test(start_paused = true)]
async fn a_dead_herder_loop_is_reported_stopped() {
    let h = herder_with_connector().await;
    let ended = tokio::spawn(async {});
    supervise(ended, h.shared.clone()).await;
    let left = tokio::time::timeout(Duration::from_secs(1), h.stopped()).await;
    assert!(
        left.is_err(),
        "a loop that ended by itself reports its own leave"
    );
    let died = tokio::spawn(async { panic!("a bug") });
    supervise(died, h.shared.clone()).await;
    tokio::time::timeout(Duration::from_secs(1), h.stopped())
        .await
        .expect("reported stopped");
}

/// A listener on a free port (`:0`) names the worker by the address it
/// was given once bound.
#[tokio::test(start_paused = true)]
async fn the_worker_id_is_the_bound_listener_address() {
    let h = herder_with(MemoryKafka::new(), &[("listeners", "http://127.0.0.1:0")]).await;
    assert_eq!(h.worker_id(), "127.0.0.1:0");
    h.set_listener_address("127.0.0.1:40123".parse().unwrap());
    assert_eq!(h.worker_id(), "127.0.0.1:40123");
}

/// The leader's assignor runs on the herder's monotonic clock: the work of
/// a worker that left is held back for `scheduled.rebalance.max.delay.ms`
/// and handed to the others once that much time has passed.
#[tokio::test(start_paused = true)]
async fn a_lost_workers_work_is_held_back_then_handed_on() {
    use crate::group::RoundMember;
    use crate::protocol::{Assignment, WorkerMetadata};
    let h = herder_with_connector().await;
    // The clock counts from the first reading in this process, maybe by a
    // test that started later than this one's paused clock: an hour on,
    // every reading here is past it.
    tokio::time::advance(Duration::from_secs(3600)).await;
    let (barrier, _barriers) = mpsc::unbounded_channel();
    let coordination = Coordination {
        shared: h.shared.clone(),
        assignor: Mutex::new(AssignorState::default()),
        barrier,
    };
    let offset = h.state().offset();
    let protocol = SubProtocol::Sessioned;
    let member = |id: &str, owned: Option<Assignment>| RoundMember {
        id: id.into(),
        metadata: WorkerMetadata::new(protocol, format!("http://{id}:8083/"), offset, owned),
        raw: Default::default(),
    };
    // The first member leads.
    let round = |generation, members: Vec<RoundMember>| LeaderRound {
        generation,
        leader_id: members[0].id.clone(),
        protocol,
        last_completed_generation: generation - 1,
        members,
    };
    let units = |a: &Assignment| -> usize { a.assigned.iter().map(|c| c.tasks.len()).sum() };

    let out = coordination
        .assign(&round(1, vec![member("m1", None), member("m2", None)]))
        .await
        .unwrap();
    let first = Assignment::decode(&out["m1"]).unwrap();
    let second = Assignment::decode(&out["m2"]).unwrap();
    assert_eq!(units(&first), 2, "{first:?} {second:?}");

    // m1 is gone: its work is held back.
    let out = coordination
        .assign(&round(2, vec![member("m2", Some(second.clone()))]))
        .await
        .unwrap();
    let held = Assignment::decode(&out["m2"]).unwrap();
    assert_eq!(units(&held), 0, "nothing new yet: {held:?}");
    // scheduled.rebalance.max.delay.ms, Kafka's default.
    assert_eq!(held.delay, 300_000, "{held:?}");

    tokio::time::advance(Duration::from_millis(held.delay as u64 + 1)).await;
    let out = coordination
        .assign(&round(3, vec![member("m2", Some(second))]))
        .await
        .unwrap();
    let handed = Assignment::decode(&out["m2"]).unwrap();
    assert_eq!(units(&handed), 2, "the lost work handed on: {handed:?}");
}

/// Whether a transaction of `producer` commits (it has not been fenced).
async fn commits(producer: &dyn connect_runtime::kafka::Producer) -> bool {
    producer.begin_transaction().is_ok()
        && producer
            .commit_transaction(Duration::from_secs(30))
            .await
            .is_ok()
}

/// The leader fences the transactional producers of the previous task
/// generation when the task count changes (a zombie of task 0 cannot
/// commit afterwards), and leaves them when one task follows one (the new
/// task's own producer fences the old).
#[tokio::test(start_paused = true)]
async fn the_previous_generations_producers_are_fenced_when_the_count_changes() {
    use connect_runtime::source::TransactionSettings;
    let h = herder_with_connector().await;
    lead(&h);
    h.shared.fence_zombies(CONNECTOR).await.unwrap();
    assert_eq!(h.state().task_count_record(CONNECTOR), Some(1));
    let group = h.shared.worker.config().group_id().to_string();
    let id = TransactionSettings::transactional_id(&group, &TaskId::new(CONNECTOR, 0));
    let zombie = h
        .shared
        .take_over_transactional_id(&id, Duration::from_secs(30))
        .await
        .unwrap();
    let task = h
        .state()
        .task_config(&TaskId::new(CONNECTOR, 0))
        .cloned()
        .unwrap();
    let commit = |tasks: u32| {
        let mut records: Vec<ConfigRecord> = (0..tasks)
            .map(|t| ConfigRecord::Task {
                id: TaskId::new(CONNECTOR, t),
                properties: task.clone(),
            })
            .collect();
        records.push(ConfigRecord::TasksCommit {
            connector: CONNECTOR.into(),
            tasks: tasks as i32,
        });
        records
    };
    write(&h, commit(1)).await;
    h.shared.fence_zombies(CONNECTOR).await.unwrap();
    assert!(
        commits(zombie.as_ref()).await,
        "one task after one: not fenced here"
    );
    write(&h, commit(2)).await;
    h.shared.fence_zombies(CONNECTOR).await.unwrap();
    h.shared.configs.read_to_end().await.unwrap();
    assert_eq!(h.state().task_count_record(CONNECTOR), Some(2));
    assert!(
        !commits(zombie.as_ref()).await,
        "the zombie of task 0 is fenced"
    );
}

/// A connector without task configs has generation -1 for fencing and
/// for the check before its task starts.
#[tokio::test(start_paused = true)]
async fn a_connector_without_task_configs_is_at_generation_minus_one() {
    let h = herder_with_connector().await;
    lead(&h);
    h.create_connector("d", source("1"), TargetState::Started)
        .await
        .unwrap();
    let fencing = fencing::HerderFencing(Arc::downgrade(&h.shared));
    let id = TaskId::new("d", 0);
    assert_eq!(fencing.fence(&id).await.unwrap(), -1);
    h.shared.owned_tasks.lock().unwrap().insert(id.clone());
    fencing.verify(&id, -1).await.unwrap();
}
