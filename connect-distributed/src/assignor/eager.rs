//! The leader's assignment under the eager `default` sub-protocol, as a pure
//! function: a port of Java's `EagerAssignor`.
//!
//! Under eager rebalancing every member stops all its work before it
//! rejoins (Java's `onJoinPrepare`), so the leader starts from nothing:
//! there is no previous assignment, nothing to revoke and no delay. It
//! deals the work out round-robin:
//!
//! 1. the members are sorted by member id;
//! 2. every connector of the snapshot, in name order, goes to the next
//!    member, starting from the first;
//! 3. then every task, connector by connector in name order and task by
//!    task in id order, goes to the next member, **continuing where the
//!    connectors stopped** (one cycle over the members serves both, as in
//!    Java, so a cluster of one-task connectors does not put every
//!    connector on one half of the workers and every task on the other).
//!
//! Each member receives a version-0 assignment with the leader's id and
//! URL, the config offset and everything it is to run; every member gets
//! one, even with nothing in it.
//!
//! **CONFIG_MISMATCH**, as Java: the assignment needs the newest config any
//! member has read. If the leader's snapshot is behind the highest offset a
//! member reports, every member gets [`CONFIG_MISMATCH`] with that highest
//! offset and nothing else (members then read the config topic and rejoin).
//! Java first takes a fresh snapshot of the config topic and fails only if
//! that one is behind too; here the caller does that before calling (the
//! herder reads the config topic to its end), as for
//! [`assign`](super::assign).
//!
//! # Deviations from Java
//!
//! - The config offset of a successful round is the snapshot's. Java's is
//!   the members' highest offset when its snapshot was not refreshed, and
//!   the fresh snapshot's otherwise; a Java leader's unrefreshed snapshot is
//!   the one whose offset it reported itself, so the two only differ for a
//!   snapshot newer than every member's offset, which a Java leader never
//!   assigns from without refreshing.
//! - Member ids and connector names are sorted by Rust's `str` order (code
//!   points) where Java's compares UTF-16 code units; the two differ only
//!   between supplementary characters and U+E000..U+FFFF.
//! - An empty member list or a leader that is not a member is an
//!   [`AssignError`] (Java would throw a `NullPointerException`), and so is
//!   an elected sub-protocol other than `default` (Java never calls its
//!   eager assignor then).
//! - A member id given twice keeps its last metadata, as Java's map does.
//! - The encoding writes a member's connectors in assignment order where
//!   Java writes them in `HashSet` order (see [`crate::protocol`]); the
//!   decoded assignment is the same.

use super::{
    fill, round_members, AssignError, AssignmentRound, ConnectorsAndTasks, Outcome, RoundInput,
};
use crate::protocol::{SubProtocol, TaskId, CONFIG_MISMATCH, NO_ERROR};

/// Computes an eager round: every connector and task of `input.snapshot`
/// dealt round-robin over the members sorted by id, in version-0
/// assignments (see the [module docs](self)). `input.protocol` must be
/// [`SubProtocol::Eager`]; the generations and the clock are not used.
/// Pure: same input, same output.
///
/// In the result, `assigned` and `owned` of every member are the same (all
/// it runs) and `revoked` is empty.
///
/// ```
/// use std::collections::BTreeMap;
/// use connect_distributed::assignor::*;
/// use connect_distributed::protocol::SubProtocol;
///
/// let snapshot = ConfigSnapshot {
///     offset: 7,
///     connectors: BTreeMap::from([("a".to_string(), 1), ("b".to_string(), 2)]),
/// };
/// let member = |id: &str| Member {
///     id: id.into(),
///     url: format!("http://{id}:8083/"),
///     config_offset: 7,
///     current: ConnectorsAndTasks::default(),
/// };
/// let members = [member("w2"), member("w1"), member("w3")];
/// let input = RoundInput {
///     leader_id: "w1",
///     members: &members,
///     snapshot: &snapshot,
///     protocol: SubProtocol::Eager,
///     last_completed_generation: -1,
///     generation: 1,
///     now_ms: 0,
/// };
/// let round = assign_eager(&input)?;
/// // Connectors a, b to w1, w2; then tasks a-0, b-0, b-1 to w3, w1, w2.
/// assert_eq!(round.members["w1"].assigned.connectors, ["a"]);
/// assert_eq!(round.members["w3"].assigned.tasks[0].to_string(), "a-0");
/// assert_eq!(round.members["w2"].assigned.tasks[0].to_string(), "b-1");
/// assert_eq!(round.members["w1"].assignment.version, 0);
/// # Ok::<(), AssignError>(())
/// ```
pub fn assign_eager(input: &RoundInput<'_>) -> Result<AssignmentRound, AssignError> {
    if input.protocol != SubProtocol::Eager {
        return Err(AssignError::NotEager(input.protocol));
    }
    let (members, max_offset, header) = round_members(input)?;
    if input.snapshot.offset < max_offset {
        return Ok(fill(
            &header,
            CONFIG_MISMATCH,
            max_offset,
            0,
            members.keys().map(|id| (*id, Outcome::default())),
        ));
    }

    let ids: Vec<&str> = members.keys().copied().collect();
    let mut work: Vec<ConnectorsAndTasks> = vec![ConnectorsAndTasks::default(); ids.len()];
    // One cycle over the members for connectors, then tasks.
    let mut next = (0..ids.len()).cycle();
    for connector in input.snapshot.connectors.keys() {
        if let Some(w) = next.next().and_then(|i| work.get_mut(i)) {
            w.connectors.push(connector.clone());
        }
    }
    for (connector, &count) in &input.snapshot.connectors {
        for task in 0..count {
            if let Some(w) = next.next().and_then(|i| work.get_mut(i)) {
                w.tasks.push(TaskId::new(connector.clone(), task));
            }
        }
    }
    let outcomes = ids.into_iter().zip(work).map(|(id, w)| {
        (
            id,
            Outcome {
                owned: w.clone(),
                assigned: w,
                revoked: ConnectorsAndTasks::default(),
            },
        )
    });
    Ok(fill(&header, NO_ERROR, input.snapshot.offset, 0, outcomes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::assignor::{ConfigSnapshot, Member};
    use std::collections::BTreeMap;

    fn member(id: &str, offset: i64) -> Member {
        Member {
            id: id.into(),
            url: format!("http://{id}/"),
            config_offset: offset,
            current: ConnectorsAndTasks::default(),
        }
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
            last_completed_generation: 3,
            generation: 4,
            now_ms: 0,
        }
    }

    #[test]
    fn behind_leader_gets_config_mismatch_with_the_highest_offset() {
        let snapshot = ConfigSnapshot {
            offset: 4,
            connectors: BTreeMap::from([("c".into(), 3)]),
        };
        let members = [member("a", 4), member("b", 9)];
        let round = assign_eager(&input("a", &members, &snapshot)).expect("round");
        assert_eq!(round.error, CONFIG_MISMATCH);
        assert_eq!(round.config_offset, 9);
        for m in round.members.values() {
            assert!(m.assigned.is_empty());
            assert_eq!(m.assignment.config_offset, 9);
            assert_eq!(m.assignment.leader_url, "http://a/");
            assert_eq!(m.assignment.version, 0);
        }
    }

    #[test]
    fn errors() {
        let snapshot = ConfigSnapshot::default();
        assert_eq!(
            assign_eager(&input("a", &[], &snapshot)),
            Err(AssignError::NoMembers)
        );
        let members = [member("a", 0)];
        assert_eq!(
            assign_eager(&input("z", &members, &snapshot)),
            Err(AssignError::LeaderNotAMember("z".into()))
        );
        let mut i = input("a", &members, &snapshot);
        i.protocol = SubProtocol::Sessioned;
        assert_eq!(
            assign_eager(&i),
            Err(AssignError::NotEager(SubProtocol::Sessioned))
        );
    }

    #[test]
    fn tasks_continue_the_connectors_cycle() {
        let snapshot = ConfigSnapshot {
            offset: 2,
            connectors: BTreeMap::from([("x".into(), 1), ("y".into(), 1)]),
        };
        let members = [member("b", 2), member("a", 1)];
        let round = assign_eager(&input("b", &members, &snapshot)).expect("round");
        assert_eq!(round.error, NO_ERROR);
        assert_eq!(round.config_offset, 2);
        let a = &round.members["a"];
        let b = &round.members["b"];
        assert_eq!(a.assigned.connectors, ["x"]);
        assert_eq!(b.assigned.connectors, ["y"]);
        assert_eq!(a.assigned.tasks, [TaskId::new("x", 0)]);
        assert_eq!(b.assigned.tasks, [TaskId::new("y", 0)]);
        assert_eq!(a.owned, a.assigned);
        assert!(!round.has_revocations());
        assert_eq!(a.assignment.leader, "b");
        assert!(a.assignment.encode().is_ok());
    }
}
