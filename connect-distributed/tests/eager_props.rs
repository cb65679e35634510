//! Property tests of the eager assignor ([`assign_eager`]) over random
//! members and config snapshots: every connector and task assigned exactly
//! once, the load balanced within one, the result deterministic and
//! independent of the order the broker lists the members in, and the wire
//! form saying the same as the typed one.

use std::collections::{BTreeMap, BTreeSet};

use connect_distributed::assignor::{
    assign_eager, ConfigSnapshot, ConnectorsAndTasks, Member, RoundInput,
};
use connect_distributed::protocol::{Assignment, SubProtocol, TaskId, CONFIG_MISMATCH, NO_ERROR};
use proptest::prelude::*;

const CASES: u32 = 2000;

fn members() -> impl Strategy<Value = Vec<Member>> {
    prop::collection::btree_map("[a-zA-Z0-9é-]{1,12}", 0..20i64, 1..10).prop_map(|m| {
        m.into_iter()
            .map(|(id, config_offset)| Member {
                url: format!("http://{id}:8083/"),
                id,
                config_offset,
                // Eager members report nothing; a stale report is ignored.
                current: ConnectorsAndTasks::default(),
            })
            .collect()
    })
}

fn snapshot() -> impl Strategy<Value = ConfigSnapshot> {
    (
        0..25i64,
        prop::collection::btree_map("[a-z0-9.日-]{1,8}", 0..9u32, 0..12),
    )
        .prop_map(|(offset, connectors)| ConfigSnapshot { offset, connectors })
}

fn input<'a>(
    leader: &'a str,
    members: &'a [Member],
    snapshot: &'a ConfigSnapshot,
) -> RoundInput<'a> {
    RoundInput {
        leader_id: leader,
        members,
        snapshot,
        protocol: SubProtocol::Eager,
        last_completed_generation: 1,
        generation: 2,
        now_ms: 0,
    }
}

fn within_one(counts: impl Iterator<Item = usize> + Clone) -> bool {
    let max = counts.clone().max().unwrap_or(0);
    let min = counts.min().unwrap_or(0);
    max - min <= 1
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(CASES))]

    #[test]
    fn everything_assigned_once_balanced_and_deterministic(
        members in members(),
        snapshot in snapshot(),
        leader in any::<prop::sample::Index>(),
        rotation in any::<prop::sample::Index>(),
    ) {
        let leader = members[leader.index(members.len())].id.clone();
        let round = assign_eager(&input(&leader, &members, &snapshot)).expect("round");

        // Deterministic, whatever order the members come in.
        let mut rotated = members.clone();
        rotated.rotate_left(rotation.index(members.len()));
        rotated.reverse();
        prop_assert_eq!(&assign_eager(&input(&leader, &rotated, &snapshot)).expect("round"), &round);
        prop_assert_eq!(&assign_eager(&input(&leader, &members, &snapshot)).expect("round"), &round);

        // Every member is told, in version 0, by this leader.
        let ids: BTreeSet<&str> = members.iter().map(|m| m.id.as_str()).collect();
        prop_assert_eq!(round.members.keys().map(String::as_str).collect::<BTreeSet<_>>(), ids);
        let leader_url = format!("http://{leader}:8083/");
        for m in round.members.values() {
            prop_assert_eq!(m.assignment.version, 0);
            prop_assert_eq!(&m.assignment.leader, &leader);
            prop_assert_eq!(&m.assignment.leader_url, &leader_url);
            prop_assert_eq!(m.assignment.delay, 0);
            prop_assert!(m.revoked.is_empty());
            prop_assert_eq!(&m.owned, &m.assigned);
            // The wire form carries the same work.
            let decoded = Assignment::decode(&m.assignment.encode().expect("encode")).expect("decode");
            prop_assert_eq!(&decoded, &m.assignment);
            prop_assert_eq!(decoded.connectors(), m.assigned.connectors.iter().map(String::as_str).collect::<Vec<_>>());
            // (Grouped by connector on the wire: compare sorted.)
            let mut wire_tasks = decoded.tasks();
            wire_tasks.sort();
            let mut typed_tasks = m.assigned.tasks.clone();
            typed_tasks.sort();
            prop_assert_eq!(wire_tasks, typed_tasks);
        }
        prop_assert!(round.encode().is_ok());

        let max_offset = members.iter().map(|m| m.config_offset).max().expect("members");
        if snapshot.offset < max_offset {
            prop_assert_eq!(round.error, CONFIG_MISMATCH);
            prop_assert_eq!(round.config_offset, max_offset);
            for m in round.members.values() {
                prop_assert!(m.assigned.is_empty());
                prop_assert_eq!(m.assignment.error, CONFIG_MISMATCH);
                prop_assert_eq!(m.assignment.config_offset, max_offset);
            }
            return Ok(());
        }
        prop_assert_eq!(round.error, NO_ERROR);
        prop_assert_eq!(round.config_offset, snapshot.offset);

        // Exactly once: every configured connector and task, nothing else.
        let mut connectors: BTreeMap<&str, usize> = BTreeMap::new();
        let mut tasks: BTreeMap<&TaskId, usize> = BTreeMap::new();
        for m in round.members.values() {
            for c in &m.assigned.connectors {
                *connectors.entry(c.as_str()).or_default() += 1;
            }
            for t in &m.assigned.tasks {
                *tasks.entry(t).or_default() += 1;
            }
        }
        prop_assert!(connectors.values().all(|&n| n == 1));
        prop_assert!(tasks.values().all(|&n| n == 1));
        prop_assert_eq!(
            connectors.keys().copied().collect::<Vec<_>>(),
            snapshot.connectors.keys().map(String::as_str).collect::<Vec<_>>()
        );
        let configured: Vec<TaskId> = snapshot
            .connectors
            .iter()
            .flat_map(|(c, &n)| (0..n).map(move |t| TaskId::new(c.clone(), t)))
            .collect();
        prop_assert_eq!(tasks.keys().map(|t| (*t).clone()).collect::<Vec<_>>(), configured);

        // Balanced within one: connectors, tasks, and both together.
        let loads = round.members.values().map(|m| &m.assigned);
        prop_assert!(within_one(loads.clone().map(|a| a.connectors.len())));
        prop_assert!(within_one(loads.clone().map(|a| a.tasks.len())));
        prop_assert!(within_one(loads.clone().map(ConnectorsAndTasks::len)));
    }
}
