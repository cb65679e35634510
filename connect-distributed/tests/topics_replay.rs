//! `ConfigState` against Java's own replay of the config topic.
//!
//! `tests/java/ConfigReplayTrace.java` fed 200 random record sequences
//! (connector and task configs, commits with and without all their task
//! configs, commits for deleted connectors, target states, task count
//! records, tombstones and malformed values) to Kafka 4.4.0's
//! `KafkaConfigBackingStore` consumer callback and printed the store's
//! state after each. Replaying the same bytes through `ConfigState` must
//! print the same.

mod hex;
use connect_distributed::protocol::TaskId;
use connect_distributed::topics::config::Properties;
use connect_distributed::topics::config_state::ConfigState;
use hex::hex;

const TRACE: &str = include_str!("golden/config_replay.txt");
const CONNECTORS: [&str; 3] = ["a", "b", "c-d"];

fn k(p: Option<&Properties>) -> String {
    match p {
        None => "-".into(),
        Some(p) => match p.get("k") {
            Some(Some(v)) => v.clone(),
            _ => "null".into(),
        },
    }
}

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map_or_else(|| "-".into(), |v| v.to_string())
}

fn dump(state: &ConfigState) -> Vec<String> {
    let mut out = vec![format!("offset {}", state.offset())];
    for c in CONNECTORS {
        let deferred = state.pending_task_configs(c).map_or_else(
            || "-".to_string(),
            |d| {
                let parts: Vec<String> = d
                    .iter()
                    .map(|(t, p)| format!("{t}:{}", k(Some(p))))
                    .collect();
                format!("[{}]", parts.join(","))
            },
        );
        out.push(format!(
            "connector {c} config={} count={} inconsistent={} target={} generation={} \
             task-count-record={} pending-fencing={} applied={} deferred={deferred}",
            k(state.connector_config(c)),
            opt(state.task_count(c)),
            state.is_inconsistent(c),
            opt(state.target_state(c).map(|s| s.name())),
            opt(state.task_config_generation(c)),
            opt(state.task_count_record(c)),
            state.is_pending_fencing(c),
            k(state.applied_connector_config(c)),
        ));
        for t in 0..4 {
            if let Some(p) = state.task_config(&TaskId::new(c, t)) {
                out.push(format!("task {c} {t} {}", k(Some(p))));
            }
        }
    }
    out
}

#[test]
fn config_state_replays_like_javas_kafka_config_backing_store() {
    let mut cases = 0;
    let mut records = 0;
    let mut state = ConfigState::new();
    let mut expected: Vec<String> = Vec::new();
    let mut case = String::new();
    let check = |case: &str, state: &ConfigState, expected: &mut Vec<String>| {
        if !case.is_empty() {
            assert_eq!(dump(state), *expected, "{case}");
        }
        expected.clear();
    };
    for line in TRACE.lines() {
        let f: Vec<&str> = line.split(' ').collect();
        match f[0] {
            "case" => {
                check(&case, &state, &mut expected);
                case = line.to_string();
                state = ConfigState::new();
                cases += 1;
            }
            "record" => {
                let offset: i64 = f[1].parse().unwrap();
                let value = (f[3] != "-").then(|| hex(f[3]));
                let _ = state.apply(offset, &hex(f[2]), value.as_deref());
                records += 1;
            }
            _ => expected.push(line.to_string()),
        }
    }
    check(&case, &state, &mut expected);
    assert_eq!(cases, 200);
    assert!(records > 2_000, "{records} records");
}
