//! Property tests (proptest, 1,000 cases each) of the config and status
//! topics' records and of the config topic's replay.

use connect_distributed::protocol::TaskId;
use connect_distributed::topics::config::{
    ConfigKey, ConfigRecord, Properties, SessionKey, TargetState,
};
use connect_distributed::topics::config_state::ConfigState;
use connect_distributed::topics::status::{
    can_write_safely, should_apply_read_task_status, State, Status, StatusKey, StatusRecord,
    TopicStatus,
};
use proptest::prelude::*;
use serde_json::{Map, Value};

fn cfg() -> ProptestConfig {
    ProptestConfig::with_cases(1_000)
}

fn name() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        "[a-z0-9._-]{0,12}",
        "[-a\u{e9}\u{1f600}]{0,6}",
    ]
}

fn task_id() -> impl Strategy<Value = TaskId> {
    (name(), 0..=i32::MAX.unsigned_abs()).prop_map(|(c, t)| TaskId::new(c, t))
}

fn properties() -> impl Strategy<Value = Properties> {
    prop::collection::vec((any::<String>(), prop::option::of(any::<String>())), 0..6)
        .prop_map(|kv| kv.into_iter().collect())
}

fn target_state() -> impl Strategy<Value = TargetState> {
    prop_oneof![
        Just(TargetState::Started),
        Just(TargetState::Paused),
        Just(TargetState::Stopped)
    ]
}

fn config_key() -> impl Strategy<Value = ConfigKey> {
    prop_oneof![
        name().prop_map(ConfigKey::Connector),
        task_id().prop_map(ConfigKey::Task),
        name().prop_map(ConfigKey::TasksCommit),
        name().prop_map(ConfigKey::TargetState),
        Just(ConfigKey::SessionKey),
        name().prop_map(ConfigKey::RestartRequest),
        name().prop_map(ConfigKey::TaskCount),
        name().prop_map(ConfigKey::LoggerLevel),
    ]
}

fn config_record() -> impl Strategy<Value = ConfigRecord> {
    prop_oneof![
        (name(), properties()).prop_map(|(connector, properties)| ConfigRecord::Connector {
            connector,
            properties
        }),
        (task_id(), properties())
            .prop_map(|(id, properties)| ConfigRecord::Task { id, properties }),
        (name(), any::<i32>())
            .prop_map(|(connector, tasks)| ConfigRecord::TasksCommit { connector, tasks }),
        (name(), target_state())
            .prop_map(|(connector, state)| ConfigRecord::TargetState { connector, state }),
        (
            prop::collection::vec(any::<u8>(), 0..40),
            any::<String>(),
            any::<i64>()
        )
            .prop_map(
                |(key, algorithm, creation_timestamp)| ConfigRecord::SessionKey(SessionKey {
                    key,
                    algorithm,
                    creation_timestamp
                })
            ),
        (name(), any::<bool>(), any::<bool>()).prop_map(
            |(connector, include_tasks, only_failed)| {
                ConfigRecord::RestartRequest {
                    connector,
                    include_tasks,
                    only_failed,
                }
            }
        ),
        (name(), any::<i32>()).prop_map(|(connector, task_count)| ConfigRecord::TaskCount {
            connector,
            task_count
        }),
        (name(), any::<String>())
            .prop_map(|(namespace, level)| ConfigRecord::LoggerLevel { namespace, level }),
        config_key().prop_map(ConfigRecord::Tombstone),
    ]
}

fn state() -> impl Strategy<Value = State> {
    prop::sample::select(State::ALL.to_vec())
}

fn status() -> impl Strategy<Value = Status> {
    (
        state(),
        prop::option::of(any::<String>()),
        any::<String>(),
        any::<i32>(),
        prop::option::of(any::<String>()),
    )
        .prop_map(|(state, trace, worker_id, generation, version)| Status {
            state,
            trace,
            worker_id,
            generation,
            version,
        })
}

fn non_empty_name() -> impl Strategy<Value = String> {
    name().prop_filter("non-empty", |n| !n.is_empty())
}

fn topic_name() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9._-]{1,20}"
}

fn status_key() -> impl Strategy<Value = StatusKey> {
    prop_oneof![
        non_empty_name().prop_map(StatusKey::Connector),
        task_id().prop_map(StatusKey::Task),
        (topic_name(), non_empty_name())
            .prop_map(|(topic, connector)| StatusKey::Topic { topic, connector }),
    ]
}

fn status_record() -> impl Strategy<Value = StatusRecord> {
    prop_oneof![
        (non_empty_name(), status())
            .prop_map(|(connector, status)| StatusRecord::Connector { connector, status }),
        (task_id(), status()).prop_map(|(id, status)| StatusRecord::Task { id, status }),
        (
            topic_name(),
            non_empty_name(),
            any::<String>(),
            any::<String>(),
            any::<i32>(),
            any::<i64>()
        )
            .prop_map(|(topic, connector, t2, c2, task, ts)| StatusRecord::Topic {
                topic,
                connector,
                status: TopicStatus {
                    topic: t2,
                    connector: c2,
                    task,
                    discover_timestamp: ts
                },
            }),
        status_key().prop_map(StatusRecord::Tombstone),
    ]
}

/// Random JSON, biased to the field names the decoders look for.
fn json() -> impl Strategy<Value = Value> {
    let field = prop_oneof![
        prop::sample::select(vec![
            "properties",
            "tasks",
            "state",
            "state.v2",
            "key",
            "algorithm",
            "creation-timestamp",
            "include-tasks",
            "only-failed",
            "task-count",
            "level",
            "trace",
            "worker_id",
            "generation",
            "version",
            "topic",
            "name",
            "connector",
            "task",
            "discoverTimestamp",
        ])
        .prop_map(str::to_string),
        any::<String>(),
    ];
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        any::<String>().prop_map(Value::String),
        prop::sample::select(vec!["RUNNING", "PAUSED", "STOPPED", "STARTED", "+gE=", "!"])
            .prop_map(|s| Value::String(s.into())),
    ];
    leaf.prop_recursive(3, 24, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec((field.clone(), inner), 0..6)
                .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

fn key_bytes() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        prop::collection::vec(any::<u8>(), 0..30),
        (
            prop::sample::select(vec![
                "connector-",
                "task-",
                "commit-",
                "target-state-",
                "session-key",
                "restart-connector-",
                "tasks-fencing-",
                "logger-cluster-",
                "status-connector-",
                "status-task-",
                "status-topic-",
            ]),
            prop::collection::vec(any::<u8>(), 0..12),
        )
            .prop_map(|(p, rest)| [p.as_bytes(), &rest[..]].concat()),
        (
            prop::sample::select(vec!["task-", "status-task-", "status-topic-"]),
            "[-a-z0-9:+]{0,10}"
        )
            .prop_map(|(p, rest)| format!("{p}{rest}").into_bytes()),
    ]
}

fn value_bytes() -> impl Strategy<Value = Option<Vec<u8>>> {
    prop::option::of(prop_oneof![
        prop::collection::vec(any::<u8>(), 0..60),
        json().prop_map(|v| v.to_string().into_bytes()),
        (json(), any::<usize>(), any::<u8>()).prop_map(|(v, at, b)| {
            let mut bytes = v.to_string().into_bytes();
            if !bytes.is_empty() {
                let i = at % bytes.len();
                bytes[i] = b;
            }
            bytes
        }),
    ])
}

proptest! {
    #![proptest_config(cfg())]

    #[test]
    fn config_records_round_trip(record in config_record()) {
        let (key, value) = record.encode();
        prop_assert_eq!(ConfigKey::parse(key.as_bytes()).unwrap(), record.key());
        let decoded = ConfigRecord::decode(key.as_bytes(), value.as_deref()).unwrap();
        prop_assert_eq!(&decoded, &record);
        // And the bytes too.
        prop_assert_eq!(decoded.encode(), (key, value));
    }

    #[test]
    fn status_records_round_trip(record in status_record()) {
        let (key, value) = record.encode();
        prop_assert_eq!(StatusKey::parse(key.as_bytes()).unwrap(), record.key());
        let decoded = StatusRecord::decode(key.as_bytes(), value.as_deref()).unwrap();
        prop_assert_eq!(&decoded, &record);
        prop_assert_eq!(decoded.encode(), (key, value));
    }

    #[test]
    fn encoded_values_are_json_serde_reads_the_same(record in config_record()) {
        // Our Jackson-style writer produces JSON any parser reads.
        if let Some(v) = record.encode_value() {
            prop_assert!(serde_json::from_slice::<Value>(&v).is_ok());
        }
    }

    #[test]
    fn decoding_arbitrary_bytes_never_panics(key in key_bytes(), value in value_bytes()) {
        let config = ConfigRecord::decode(&key, value.as_deref());
        let status = StatusRecord::decode(&key, value.as_deref());
        // Whatever decodes re-encodes and decodes to itself.
        if let Ok(r) = config {
            let (k, v) = r.encode();
            prop_assert_eq!(ConfigRecord::decode(k.as_bytes(), v.as_deref()).unwrap(), r);
        }
        if let Ok(r) = status {
            let (k, v) = r.encode();
            prop_assert_eq!(StatusRecord::decode(k.as_bytes(), v.as_deref()).unwrap(), r);
        }
        let mut state = ConfigState::new();
        let _ = state.apply(0, &key, value.as_deref());
    }

    #[test]
    fn the_safe_write_rule_is_javas(
        cached in prop::option::of(status()),
        incoming in status(),
        same_worker in any::<bool>(),
    ) {
        let mut cached = cached;
        if let (Some(c), true) = (cached.as_mut(), same_worker) {
            c.worker_id = incoming.worker_id.clone();
        }
        // CacheEntry.canWriteSafely: value == null
        //   || value.workerId().equals(status.workerId())
        //   || value.generation() <= status.generation()
        let java = match &cached {
            None => true,
            Some(v) => v.worker_id == incoming.worker_id || v.generation <= incoming.generation,
        };
        prop_assert_eq!(can_write_safely(cached.as_ref(), &incoming), java);
    }
}

/// Records over a few connectors and task numbers, so that commits meet
/// their tasks.
fn replay_record() -> impl Strategy<Value = ConfigRecord> {
    let c = prop::sample::select(vec!["a", "b", "c-d"]).prop_map(str::to_string);
    let props = prop::sample::select(vec!["x", "y", "z"])
        .prop_map(|v| Properties::from([("k".to_string(), Some(v.to_string()))]));
    prop_oneof![
        3 => (c.clone(), props.clone())
            .prop_map(|(connector, properties)| ConfigRecord::Connector { connector, properties }),
        6 => (c.clone(), 0..4u32, props)
            .prop_map(|(c, t, properties)| ConfigRecord::Task { id: TaskId::new(c, t), properties }),
        3 => (c.clone(), -1..5i32).prop_map(|(connector, tasks)| ConfigRecord::TasksCommit { connector, tasks }),
        1 => (c.clone(), target_state()).prop_map(|(connector, state)| ConfigRecord::TargetState { connector, state }),
        1 => c.clone().prop_map(|c| ConfigRecord::Tombstone(ConfigKey::Connector(c))),
        1 => c.clone().prop_map(|c| ConfigRecord::Tombstone(ConfigKey::TargetState(c))),
        1 => c.clone().prop_map(|c| ConfigRecord::Tombstone(ConfigKey::TasksCommit(c))),
        1 => (c, 0..4i32).prop_map(|(connector, task_count)| ConfigRecord::TaskCount { connector, task_count }),
    ]
}

fn visible(state: &ConfigState) -> Vec<(TaskId, Option<Properties>)> {
    ["a", "b", "c-d"]
        .iter()
        .flat_map(|c| state.tasks(c))
        .map(|id| {
            let p = state.task_config(&id).cloned();
            (id, p)
        })
        .collect()
}

proptest! {
    #![proptest_config(cfg())]

    #[test]
    fn task_configs_are_invisible_until_their_commit(
        records in prop::collection::vec(replay_record(), 0..40),
    ) {
        let mut state = ConfigState::new();
        for (offset, record) in records.iter().enumerate() {
            let before_tasks = visible(&state);
            let before_snapshot = state.snapshot().connectors;
            let before_config = state.task_config(&TaskId::new("a", 0)).cloned();
            state.apply_record(offset as i64, record);
            if let ConfigRecord::Task { id, properties } = record {
                prop_assert_eq!(visible(&state), before_tasks);
                prop_assert_eq!(state.snapshot().connectors, before_snapshot);
                prop_assert_eq!(state.task_config(&TaskId::new("a", 0)).cloned(), before_config);
                prop_assert_eq!(state.pending_task_configs(&id.connector).and_then(|p| p.get(&id.task)), Some(properties));
            }
            if let ConfigRecord::TasksCommit { connector, tasks } = record {
                prop_assert!(state.pending_task_configs(connector).is_none_or(|p| p.is_empty()));
                if state.connector_config(connector).is_some() && !state.is_inconsistent(connector) {
                    prop_assert_eq!(state.tasks(connector).len(), (*tasks).max(0) as usize);
                    for id in state.tasks(connector) {
                        prop_assert!(state.task_config(&id).is_some());
                    }
                }
            }
        }
    }

    #[test]
    fn a_connector_tombstone_removes_everything_of_the_connector(
        records in prop::collection::vec(replay_record(), 0..40),
        victim in prop::sample::select(vec!["a", "b", "c-d"]),
    ) {
        let mut state = ConfigState::new();
        for (offset, record) in records.iter().enumerate() {
            state.apply_record(offset as i64, record);
        }
        let others: Vec<_> = ["a", "b", "c-d"].iter().filter(|c| **c != victim)
            .map(|c| (state.connector_config(c).cloned(), state.tasks(c))).collect();
        state.apply_record(records.len() as i64, &ConfigRecord::Tombstone(ConfigKey::Connector(victim.into())));
        prop_assert_eq!(state.connector_config(victim), None);
        prop_assert_eq!(state.task_count(victim), None);
        prop_assert!(state.tasks(victim).is_empty());
        prop_assert!(state.pending_task_configs(victim).is_none());
        prop_assert!(state.applied_connector_config(victim).is_none());
        for t in 0..4 {
            prop_assert_eq!(state.task_config(&TaskId::new(victim, t)), None);
        }
        prop_assert!(!state.snapshot().connectors.contains_key(victim));
        prop_assert_eq!(state.offset(), records.len() as i64 + 1);
        // The other connectors are untouched.
        let after: Vec<_> = ["a", "b", "c-d"].iter().filter(|c| **c != victim)
            .map(|c| (state.connector_config(c).cloned(), state.tasks(c))).collect();
        prop_assert_eq!(after, others);
    }

    #[test]
    fn replaying_the_same_records_gives_the_same_state(
        records in prop::collection::vec(replay_record(), 0..40),
    ) {
        let mut typed = ConfigState::new();
        let mut from_bytes = ConfigState::new();
        let mut again = ConfigState::new();
        for (offset, record) in records.iter().enumerate() {
            typed.apply_record(offset as i64, record);
            let (k, v) = record.encode();
            from_bytes.apply(offset as i64, k.as_bytes(), v.as_deref()).unwrap();
        }
        for (offset, record) in records.iter().enumerate() {
            again.apply_record(offset as i64, record);
        }
        prop_assert_eq!(&typed, &from_bytes);
        prop_assert_eq!(&typed, &again);
        // The snapshot lists exactly the connectors with a config.
        let snap = typed.snapshot();
        prop_assert_eq!(snap.offset, if records.is_empty() { -1 } else { records.len() as i64 });
        prop_assert_eq!(snap.connectors.keys().map(String::as_str).collect::<Vec<_>>(), typed.connectors().collect::<Vec<_>>());
    }
}

#[test]
fn the_safe_write_rule_table() {
    let s = |worker: &str, generation| Status {
        state: State::Unassigned,
        trace: None,
        worker_id: worker.into(),
        generation,
        version: None,
    };
    // (cached, incoming, written?)
    let table: &[(Option<Status>, Status, bool)] = &[
        (None, s("w1", 0), true),
        (None, s("w1", -5), true),
        (Some(s("w1", 9)), s("w1", 1), true), // same worker, older generation
        (Some(s("w1", 1)), s("w1", 9), true),
        (Some(s("w2", 4)), s("w1", 5), true), // higher generation
        (Some(s("w2", 5)), s("w1", 5), true), // equal generation, other worker
        (Some(s("w2", 6)), s("w1", 5), false), // lower generation, other worker
        (Some(s("w2", i32::MAX)), s("w1", i32::MIN), false),
    ];
    for (cached, incoming, expected) in table {
        assert_eq!(
            can_write_safely(cached.as_ref(), incoming),
            *expected,
            "cached {cached:?}, incoming {incoming:?}"
        );
    }
}

#[test]
fn the_read_rule_for_task_statuses_table() {
    let s = |state, generation| Status {
        state,
        trace: None,
        worker_id: "w".into(),
        generation,
        version: None,
    };
    use State::*;
    let table = [
        (None, s(Unassigned, 1), true),
        (Some(s(Running, 3)), s(Unassigned, 3), false), // late UNASSIGNED, same generation
        (Some(s(Running, 4)), s(Unassigned, 3), false),
        (Some(s(Running, 2)), s(Unassigned, 3), true), // newer generation
        (Some(s(Failed, 4)), s(Unassigned, 3), true),  // only RUNNING is protected
        (Some(s(Running, 4)), s(Failed, 3), true),     // only UNASSIGNED is held back
    ];
    for (cached, incoming, expected) in table {
        assert_eq!(
            should_apply_read_task_status(cached.as_ref(), &incoming),
            expected
        );
    }
}

fn kv(v: &str) -> Properties {
    Properties::from([("k".to_string(), Some(v.to_string()))])
}

fn replay(records: &[ConfigRecord]) -> ConfigState {
    let mut state = ConfigState::new();
    for (offset, record) in records.iter().enumerate() {
        state.apply_record(offset as i64, record);
    }
    state
}

fn connector(c: &str) -> ConfigRecord {
    ConfigRecord::Connector {
        connector: c.into(),
        properties: kv("conn"),
    }
}

fn task(c: &str, t: u32, v: &str) -> ConfigRecord {
    ConfigRecord::Task {
        id: TaskId::new(c, t),
        properties: kv(v),
    }
}

fn commit(c: &str, tasks: i32) -> ConfigRecord {
    ConfigRecord::TasksCommit {
        connector: c.into(),
        tasks,
    }
}

#[test]
fn a_commit_missing_task_configs_makes_the_connector_inconsistent_until_a_complete_one() {
    let mut state = replay(&[connector("c"), task("c", 0, "a"), commit("c", 2)]);
    assert!(state.is_inconsistent("c"));
    assert!(state.tasks("c").is_empty());
    assert_eq!(state.task_count("c"), Some(2));
    assert_eq!(state.snapshot().connectors["c"], 0);
    // The held-back task 0 was dropped with the failed commit.
    assert!(state.pending_task_configs("c").unwrap().is_empty());
    for (i, r) in [task("c", 0, "b"), task("c", 1, "b"), commit("c", 2)]
        .iter()
        .enumerate()
    {
        state.apply_record(3 + i as i64, r);
    }
    assert!(!state.is_inconsistent("c"));
    assert_eq!(state.snapshot().connectors["c"], 2);
    assert_eq!(state.task_config(&TaskId::new("c", 1)), Some(&kv("b")));
    assert_eq!(state.task_config_generation("c"), Some(0));
}

#[test]
fn a_deleted_connectors_pending_tasks_are_dropped() {
    let state = replay(&[
        connector("c"),
        task("c", 0, "a"),
        ConfigRecord::Tombstone(ConfigKey::Connector("c".into())),
        connector("c"),
        commit("c", 1),
    ]);
    // Task 0 was written before the deletion: the commit finds it missing.
    assert!(state.is_inconsistent("c"));
    assert_eq!(state.task_config(&TaskId::new("c", 0)), None);
}

#[test]
fn a_commit_for_a_connector_without_config_deletes_its_remains() {
    let state = replay(&[task("c", 0, "a"), commit("c", 1)]);
    assert!(state.pending_task_configs("c").is_none());
    assert_eq!(state.task_count("c"), None);
    assert!(state.snapshot().connectors.is_empty());
    assert_eq!(state.offset(), 2);
}

#[test]
fn target_states_default_to_started_and_their_tombstone_resets_them() {
    let ts = |state| ConfigRecord::TargetState {
        connector: "c".into(),
        state,
    };
    let mut state = replay(&[ts(TargetState::Stopped), connector("c")]);
    assert_eq!(state.target_state("c"), Some(TargetState::Stopped));
    state.apply_record(
        2,
        &ConfigRecord::Tombstone(ConfigKey::TargetState("c".into())),
    );
    assert_eq!(state.target_state("c"), Some(TargetState::Started));
    let state = replay(&[connector("d")]);
    assert_eq!(state.target_state("d"), Some(TargetState::Started));
}

#[test]
fn a_value_that_is_not_json_does_not_advance_the_offset_but_other_errors_do() {
    let mut state = ConfigState::new();
    assert!(state.apply(0, b"connector-c", Some(b"{")).is_err());
    assert_eq!(state.offset(), -1);
    assert!(state.apply(1, b"connector-c", Some(b"[]")).is_err());
    assert_eq!(state.offset(), 2);
    assert!(state.apply(2, b"no-such-key", Some(b"{}")).is_err());
    assert_eq!(state.offset(), 3);
}
