//! Hand-written rebalance scenarios mirroring the behaviour Java's
//! `IncrementalCooperativeAssignor` documents (KIP-415, KAFKA-12495,
//! KAFKA-15693) and tests in `IncrementalCooperativeAssignorTest`.

mod sim;

use std::collections::{BTreeMap, BTreeSet};

use connect_distributed::assignor::{
    assign, AssignError, AssignorConfig, AssignorState, ConfigSnapshot, ConnectorsAndTasks, Member,
    RoundInput, SCHEDULED_REBALANCE_MAX_DELAY_MS_CONFIG, SCHEDULED_REBALANCE_MAX_DELAY_MS_DEFAULT,
};
use connect_distributed::protocol::{
    Assignment, SubProtocol, TaskId, WorkerMetadata, CONFIG_MISMATCH, NO_ERROR,
};
use sim::{Cluster, Item};

const DELAY: i32 = SCHEDULED_REBALANCE_MAX_DELAY_MS_DEFAULT;

/// Three settled workers: w000 (leader), w001, w002, two connectors with
/// four tasks each: nobody is idle.
fn three_workers() -> Cluster {
    let mut c = Cluster::new(DELAY, SubProtocol::Sessioned);
    for _ in 0..3 {
        c.add_worker();
    }
    c.set_connector("a", 4);
    c.set_connector("b", 4);
    assert_eq!(c.converge(10), Some(2));
    c.assert_settled();
    assert_eq!(c.leader.as_deref(), Some("w000"));
    for w in c.workers.keys() {
        assert!(!c.owned_by(w).is_empty());
    }
    c
}

fn counts(c: &Cluster) -> Vec<(usize, usize)> {
    c.workers
        .values()
        .map(|w| (w.owned.connectors.len(), w.owned.tasks.len()))
        .collect()
}

#[test]
fn the_default_delay_is_five_minutes() {
    assert_eq!(
        SCHEDULED_REBALANCE_MAX_DELAY_MS_CONFIG,
        "scheduled.rebalance.max.delay.ms"
    );
    assert_eq!(DELAY, 300_000);
    assert_eq!(AssignorConfig::default().max_delay_ms, 300_000);
}

#[test]
fn worker_that_comes_back_within_the_delay_gets_its_work_back() {
    let mut c = three_workers();
    let lost = c.remove_worker("w001").clone();
    let lost = sim::as_set(&lost);
    let t0 = c.now;

    // The loss is seen: nothing moves, everyone is told to come back in 5 min.
    let round = c.round();
    assert_eq!(round.delay, DELAY);
    assert!(!round.has_revocations());
    assert!(round.members.values().all(|m| m.assigned.is_empty()));

    // The worker restarts (a new member id) after 1 minute: still held.
    c.now = t0 + 60_000;
    let back = c.add_worker();
    let round = c.round();
    assert_eq!(round.delay, DELAY - 60_000);
    assert!(round.members.values().all(|m| m.assigned.is_empty()));
    assert_eq!(
        c.state.candidate_workers().collect::<Vec<_>>(),
        [back.as_str()]
    );

    // When the delay expires, the returning worker gets that work, nobody
    // else changes, and the cluster is settled.
    c.now = t0 + i64::from(DELAY);
    let round = c.round();
    assert_eq!(round.delay, 0);
    assert!(!round.has_revocations());
    assert_eq!(sim::as_set(&round.members[&back].assigned), lost);
    for (id, m) in &round.members {
        if id != &back {
            assert!(m.assigned.is_empty());
        }
    }
    c.assert_settled();
    assert_eq!(c.converge(3), Some(1));
}

#[test]
fn work_of_a_worker_that_stays_away_goes_to_the_others_after_the_delay() {
    let mut c = three_workers();
    let lost = sim::as_set(&c.remove_worker("w002"));
    let t0 = c.now;
    assert_eq!(c.round().delay, DELAY);
    // A rebalance for another reason halfway: still held, delay shortened.
    c.now = t0 + 150_000;
    assert_eq!(c.round().delay, 150_000);
    c.now = t0 + i64::from(DELAY);
    let round = c.round();
    let given: BTreeSet<Item> = round
        .members
        .values()
        .flat_map(|m| sim::as_set(&m.assigned))
        .collect();
    assert_eq!(given, lost);
    c.assert_settled();
}

#[test]
fn with_a_zero_delay_lost_work_is_reassigned_at_once() {
    // KAFKA-15693: scheduled.rebalance.max.delay.ms=0 turns the delay off.
    let mut c = Cluster::new(0, SubProtocol::Compatible);
    for _ in 0..3 {
        c.add_worker();
    }
    c.set_connector("a", 5);
    assert!(c.converge(10).is_some());
    c.remove_worker("w001");
    let round = c.round();
    assert_eq!(round.delay, 0);
    c.assert_settled();
}

#[test]
fn a_new_worker_gets_a_balanced_share_in_two_rounds() {
    let mut c = Cluster::new(DELAY, SubProtocol::Sessioned);
    c.add_worker();
    c.add_worker();
    c.set_connector("a", 4);
    c.set_connector("b", 4);
    assert!(c.converge(10).is_some());
    assert_eq!(counts(&c), [(1, 4), (1, 4)]);

    let new = c.add_worker();
    // Round 1: revoke the surplus (one task from each), give nothing yet.
    let r1 = c.round();
    assert!(r1.members[&new].assigned.is_empty());
    let revoked: Vec<usize> = r1.members.values().map(|m| m.revoked.tasks.len()).collect();
    assert_eq!(revoked, [1, 1, 0]);
    assert!(r1.members.values().all(|m| m.revoked.connectors.is_empty()));
    // Round 2 (the members rejoin after revoking): the newcomer gets them.
    let r2 = c.round();
    assert!(!r2.has_revocations());
    assert_eq!(r2.members[&new].assigned.tasks.len(), 2);
    assert_eq!(counts(&c), [(1, 3), (1, 3), (0, 2)]);
    c.assert_settled();
    // Round 3: nothing moves.
    assert_eq!(c.converge(3), Some(1));
}

#[test]
fn consecutive_revoking_rebalances_back_off() {
    // KAFKA-12495: a second revoking round in a row waits 1 * 40^1 ms.
    let mut c = Cluster::new(DELAY, SubProtocol::Sessioned);
    c.add_worker();
    c.set_connector("a", 6);
    assert!(c.converge(10).is_some());
    c.add_worker();
    let r1 = c.round();
    assert_eq!(r1.members["w000"].revoked.tasks.len(), 3);
    assert!(c.state.revoked_in_previous());

    // Two more workers join before the next round: balancing would need a
    // revocation again, so it is postponed by the backoff.
    c.add_worker();
    c.add_worker();
    let r2 = c.round();
    assert!(!r2.has_revocations());
    assert_eq!(r2.delay, 40);
    assert_eq!(c.state.scheduled_rebalance(), c.now + 40);
    assert_eq!(counts(&c), [(1, 3), (0, 1), (0, 1), (0, 1)]);

    // After the backoff, the revocation happens, then the assignment.
    c.now += 40;
    let r3 = c.round();
    assert_eq!(r3.delay, 0);
    assert_eq!(r3.members["w000"].revoked.tasks.len(), 1);
    let r4 = c.round();
    assert!(!r4.has_revocations());
    c.assert_settled();
}

#[test]
fn deleted_connectors_and_tasks_are_revoked() {
    let mut c = three_workers();
    c.remove_connector("a");
    c.set_connector("b", 2);
    let round = c.round();
    let revoked: BTreeSet<Item> = round
        .members
        .values()
        .flat_map(|m| sim::as_set(&m.revoked))
        .collect();
    let mut expected: BTreeSet<Item> = (0..4).map(|t| Item::Task(TaskId::new("a", t))).collect();
    expected.insert(Item::Connector("a".into()));
    expected.insert(Item::Task(TaskId::new("b", 2)));
    expected.insert(Item::Task(TaskId::new("b", 3)));
    assert!(expected.is_subset(&revoked), "{revoked:?}");
    assert!(c.converge(10).is_some());
    c.assert_settled();
}

fn member(id: &str, offset: i64, connectors: &[&str], tasks: &[(&str, u32)]) -> Member {
    Member {
        id: id.into(),
        url: format!("http://{id}:8083/"),
        config_offset: offset,
        current: ConnectorsAndTasks {
            connectors: connectors.iter().map(|c| (*c).to_owned()).collect(),
            tasks: tasks.iter().map(|(c, t)| TaskId::new(*c, *t)).collect(),
        },
    }
}

fn snapshot(offset: i64, connectors: &[(&str, u32)]) -> ConfigSnapshot {
    ConfigSnapshot {
        offset,
        connectors: connectors
            .iter()
            .map(|(c, n)| ((*c).to_owned(), *n))
            .collect::<BTreeMap<_, _>>(),
    }
}

fn input<'a>(
    members: &'a [Member],
    snapshot: &'a ConfigSnapshot,
    last: i32,
    generation: i32,
) -> RoundInput<'a> {
    RoundInput {
        leader_id: "w1",
        members,
        snapshot,
        protocol: SubProtocol::Sessioned,
        last_completed_generation: last,
        generation,
        now_ms: 0,
    }
}

#[test]
fn duplicates_are_revoked_from_every_owner_then_assigned_once() {
    let snap = snapshot(3, &[("a", 2)]);
    let members = [
        member("w1", 3, &["a"], &[("a", 0), ("a", 1)]),
        member("w2", 3, &[], &[("a", 1)]),
    ];
    let cfg = AssignorConfig::default();
    let (r1, st) = assign(
        &AssignorState::default(),
        &cfg,
        &input(&members, &snap, -1, 1),
    )
    .unwrap();
    assert_eq!(r1.members["w1"].revoked.tasks, [TaskId::new("a", 1)]);
    assert_eq!(r1.members["w2"].revoked.tasks, [TaskId::new("a", 1)]);
    assert!(r1.members.values().all(|m| m.assigned.is_empty()));

    // Both stopped it; next round it has one owner.
    let members = [
        member("w1", 3, &["a"], &[("a", 0)]),
        member("w2", 3, &[], &[]),
    ];
    let (r2, _) = assign(&st, &cfg, &input(&members, &snap, 1, 2)).unwrap();
    assert!(!r2.has_revocations());
    assert_eq!(r2.members["w2"].assigned.tasks, [TaskId::new("a", 1)]);
    assert!(r2.members["w1"].assigned.is_empty());
}

#[test]
fn a_leader_behind_the_members_answers_config_mismatch() {
    let snap = snapshot(5, &[("a", 1)]);
    let members = [
        member("w1", 5, &["a"], &[]),
        member("w2", 6, &[], &[("a", 0)]),
    ];
    let state = AssignorState::default();
    let (round, next) = assign(
        &state,
        &AssignorConfig::default(),
        &input(&members, &snap, -1, 1),
    )
    .unwrap();
    assert_eq!(round.error, CONFIG_MISMATCH);
    assert_eq!(round.config_offset, 6);
    assert_eq!(
        next, state,
        "a failed round leaves the leader's state alone"
    );
    for m in round.members.values() {
        assert!(m.assignment.failed());
        assert_eq!(m.assignment.config_offset, 6);
        assert_eq!(m.assignment.leader, "w1");
        assert_eq!(m.assignment.leader_url, "http://w1:8083/");
        assert!(m.assignment.assigned.is_empty() && m.assignment.revoked.is_empty());
    }
    // With a fresh snapshot that caught up, the assignment goes ahead.
    let fresh = snapshot(6, &[("a", 1)]);
    let (round, _) = assign(
        &state,
        &AssignorConfig::default(),
        &input(&members, &fresh, -1, 1),
    )
    .unwrap();
    assert_eq!(round.error, NO_ERROR);
    assert_eq!(round.config_offset, 6);
}

#[test]
fn a_generation_gap_forgets_the_previous_assignment() {
    // Java clears its view when the leader's last completed generation is
    // not the one it assigned in: lost work is then treated as new.
    let snap = snapshot(1, &[("a", 2)]);
    let cfg = AssignorConfig::default();
    let both = [
        member("w1", 1, &["a"], &[("a", 0)]),
        member("w2", 1, &[], &[("a", 1)]),
    ];
    let (_, st) = assign(&AssignorState::default(), &cfg, &input(&both, &snap, -1, 1)).unwrap();
    let alone = [member("w1", 1, &["a"], &[("a", 0)])];
    // Same generation chain: a-1 is held for the delay.
    let (held, _) = assign(&st, &cfg, &input(&alone, &snap, 1, 2)).unwrap();
    assert_eq!(held.delay, DELAY);
    assert!(held.members["w1"].assigned.is_empty());
    // The leader missed a generation: a-1 is assigned at once.
    let (now, _) = assign(&st, &cfg, &input(&alone, &snap, 5, 6)).unwrap();
    assert_eq!(now.delay, 0);
    assert_eq!(now.members["w1"].assigned.tasks, [TaskId::new("a", 1)]);
}

#[test]
fn bad_inputs_are_errors() {
    let snap = snapshot(1, &[]);
    let cfg = AssignorConfig::default();
    let st = AssignorState::default();
    assert_eq!(
        assign(&st, &cfg, &input(&[], &snap, -1, 1)).unwrap_err(),
        AssignError::NoMembers
    );
    let other = [member("w9", 1, &[], &[])];
    assert_eq!(
        assign(&st, &cfg, &input(&other, &snap, -1, 1)).unwrap_err(),
        AssignError::LeaderNotAMember("w1".into())
    );
    let members = [member("w1", 1, &[], &[])];
    let eager = RoundInput {
        protocol: SubProtocol::Eager,
        ..input(&members, &snap, -1, 1)
    };
    assert_eq!(
        assign(&st, &cfg, &eager).unwrap_err(),
        AssignError::EagerProtocol
    );
}

#[test]
fn members_from_java_metadata() {
    // Bytes from Kafka 4.4.0 (tests/golden/golden.hex, v2-with-assignment).
    let line = include_str!("golden/golden.hex")
        .lines()
        .find(|l| l.starts_with("metadata v2-with-assignment "))
        .expect("golden line");
    let hex = line.rsplit(' ').next().unwrap();
    let bytes: Vec<u8> = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect();
    let metadata = WorkerMetadata::decode(&bytes).unwrap();
    let m = Member::from_metadata("member-1", &metadata);
    assert_eq!(m.url, "http://worker-1:8083/");
    assert_eq!(m.config_offset, 7);
    assert_eq!(m.current.connectors, ["jdbc"]);
    assert_eq!(
        m.current.tasks,
        [
            TaskId::new("jdbc", 0),
            TaskId::new("jdbc", 1),
            TaskId::new("s3", 2)
        ]
    );
    // A null allocation is an idle worker.
    let idle = WorkerMetadata::new(SubProtocol::Compatible, "u", 1, None::<Assignment>);
    assert!(Member::from_metadata("m", &idle).current.is_empty());
}
