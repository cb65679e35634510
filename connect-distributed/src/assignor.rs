//! The leader's incremental cooperative assignment, as a pure function.
//!
//! This ports the rules of Java's `IncrementalCooperativeAssignor` (KIP-415,
//! with KAFKA-12495's backoff and KAFKA-15693's zero delay), which the
//! group leader runs in SyncGroup under the `compatible` and `sessioned`
//! sub-protocols. A Rust leader in a mixed group must assign as Java does,
//! or Java followers would see work move for no reason; and a pure
//! function — members, config snapshot, previous state and "now" in; one
//! assignment per member and the next state out — is what lets the rules be
//! checked with property tests instead of clusters.
//!
//! # The rules
//!
//! - **CONFIG_MISMATCH**: the assignment uses the highest config offset any
//!   member reports. If the leader's snapshot is behind it, every member
//!   gets [`CONFIG_MISMATCH`] and nothing else; the caller should first try
//!   to read the config topic to the end and pass the fresh snapshot (Java's
//!   `configFreshSnapshot`).
//! - **Revoke first, assign next round**: work that has to move is revoked
//!   from its owner in one round; it is unowned when the members rejoin and
//!   is assigned in the next round. Nothing is ever assigned to a member
//!   while another still runs it.
//! - **Deleted** connectors and tasks (in the previous assignment but no
//!   longer configured) are revoked; **duplicates** (reported by more than
//!   one member) are revoked from all of their owners.
//! - **Lost** work (in the previous assignment, reported by nobody) is held
//!   for `scheduled.rebalance.max.delay.ms` ([`AssignorConfig::max_delay_ms`])
//!   from the first round that saw it, so a restarting worker can take it
//!   back; when the delay expires it goes round-robin to the workers that
//!   were empty while it was held (the returning ones), or, if there are
//!   none, to the least loaded. With a delay of 0 it is reassigned at once.
//!   Every member is told the remaining delay, after which it rejoins.
//! - **Balance within one**, separately for connectors and for tasks: new
//!   and reassigned work goes to the least loaded members; members above
//!   their fair share (`total / members`, with `total % members` of them
//!   allowed one more) have the excess revoked.
//! - **Sticky**: nothing else moves. A round where nothing changed assigns
//!   and revokes nothing.
//! - **Backoff**: when two rounds in a row need load-balancing revocations,
//!   the revocations are postponed by an exponential backoff (1 ms × 40ⁿ,
//!   capped at the maximum delay).
//!
//! `tests/assignor_trace.rs` checks the port against Java's own assignor:
//! the same decisions, round by round, over about 3,100 rounds of random
//! clusters recorded from Kafka 4.4.0.
//!
//! # Deviations from Java
//!
//! Java walks members in `java.util.HashMap` order of their ids and some
//! derived sets in `HashSet` order; this port uses the member id order and
//! the sorted (Java `TreeSet`) order, so it is deterministic. That can
//! change *which* members keep an extra connector or task, or which empty
//! worker a lost item goes to, never the rules above. Sorting uses Rust's
//! `str` order (by code point) where Java's `TreeSet` compares UTF-16 code
//! units; the two differ only between supplementary characters and
//! U+E000..U+FFFF in names. A leader whose id is not among the members, or
//! an empty member list, is an [`AssignError`] (Java would throw a
//! `NullPointerException`). [`assign`] serves only the incremental
//! sub-protocols; under `default` (eager) the leader uses
//! [`assign_eager`] instead, the port of Java's separate `EagerAssignor`
//! ([`eager`]), which keeps no state between rounds.

pub mod eager;

use std::collections::{BTreeMap, BTreeSet};

use indexmap::IndexSet;
use thiserror::Error;

use crate::protocol::{
    Assignment, ConnectorAssignment, SubProtocol, TaskId, WorkerMetadata, CONFIG_MISMATCH, NO_ERROR,
};

pub use eager::assign_eager;

/// The worker setting that bounds how long lost work is held for its owner
/// to come back.
pub const SCHEDULED_REBALANCE_MAX_DELAY_MS_CONFIG: &str = "scheduled.rebalance.max.delay.ms";
/// Its default: 300000 ms (5 minutes).
pub const SCHEDULED_REBALANCE_MAX_DELAY_MS_DEFAULT: i32 = 300_000;

/// Growth factor of the backoff between consecutive revoking rounds.
const REVOKING_BACKOFF_MULTIPLIER: f64 = 40.0;

/// The assignor's settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AssignorConfig {
    /// `scheduled.rebalance.max.delay.ms`: how long lost work waits for its
    /// owner, and the cap of the revoking backoff. 0 reassigns at once and
    /// never backs off. Negative values are treated as 0 (Java's config
    /// refuses them).
    pub max_delay_ms: i32,
}

impl Default for AssignorConfig {
    fn default() -> Self {
        AssignorConfig {
            max_delay_ms: SCHEDULED_REBALANCE_MAX_DELAY_MS_DEFAULT,
        }
    }
}

/// A set of connectors and tasks, in a meaningful order (the order a member
/// reported them, or the order they were assigned).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct ConnectorsAndTasks {
    /// Connector names (each means the `Connector` instance).
    pub connectors: Vec<String>,
    /// Task ids.
    pub tasks: Vec<TaskId>,
}

impl ConnectorsAndTasks {
    /// Whether there is neither a connector nor a task.
    pub fn is_empty(&self) -> bool {
        self.connectors.is_empty() && self.tasks.is_empty()
    }

    /// Connectors plus tasks.
    pub fn len(&self) -> usize {
        self.connectors.len() + self.tasks.len()
    }

    /// The wire form of these items ([`ConnectorAssignment::group`]).
    pub fn to_wire(&self) -> Vec<ConnectorAssignment> {
        ConnectorAssignment::group(&self.connectors, &self.tasks)
    }
}

/// One group member as the leader sees it in JoinGroup.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Member {
    /// The member id the broker gave it.
    pub id: String,
    /// Its REST URL.
    pub url: String,
    /// The newest config offset it has read.
    pub config_offset: i64,
    /// What it runs now (its metadata's embedded assignment).
    pub current: ConnectorsAndTasks,
}

impl Member {
    /// The member described by its decoded JoinGroup metadata; a null
    /// embedded assignment means it runs nothing.
    pub fn from_metadata(id: impl Into<String>, metadata: &WorkerMetadata) -> Member {
        let current = match &metadata.assignment {
            None => ConnectorsAndTasks::default(),
            Some(a) => ConnectorsAndTasks {
                connectors: a.connectors().into_iter().map(str::to_owned).collect(),
                tasks: a.tasks(),
            },
        };
        Member {
            id: id.into(),
            url: metadata.url.clone(),
            config_offset: metadata.config_offset,
            current,
        }
    }
}

/// What the leader knows from the config topic: which connectors exist and
/// how many task configs each has committed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ConfigSnapshot {
    /// The config topic offset this snapshot has read up to.
    pub offset: i64,
    /// Every connector with its number of tasks (tasks `0..n`).
    pub connectors: BTreeMap<String, u32>,
}

/// One rebalance round's input.
#[derive(Clone, Copy, Debug)]
pub struct RoundInput<'a> {
    /// The leader's member id (it must be among `members`).
    pub leader_id: &'a str,
    /// Every member of this generation.
    pub members: &'a [Member],
    /// The leader's config snapshot.
    pub snapshot: &'a ConfigSnapshot,
    /// The elected sub-protocol: `compatible` or `sessioned` for
    /// [`assign`], `default` for [`assign_eager`].
    pub protocol: SubProtocol,
    /// The generation of the last rebalance the leader completed (Java's
    /// `lastCompletedGenerationId`, -1 if none). If it is not the
    /// generation the state was computed in, the previous assignment is
    /// forgotten.
    pub last_completed_generation: i32,
    /// This round's generation.
    pub generation: i32,
    /// The current time in milliseconds (any fixed epoch).
    pub now_ms: i64,
}

/// Why no assignment could be computed.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum AssignError {
    /// The member list is empty.
    #[error("no members to assign to")]
    NoMembers,
    /// The leader is not one of the members.
    #[error("leader `{0}` is not a member of the group")]
    LeaderNotAMember(String),
    /// The eager sub-protocol was elected; it uses a different assignor
    /// ([`assign_eager`]).
    #[error("the `default` (eager) sub-protocol is not assigned incrementally")]
    EagerProtocol,
    /// [`assign_eager`] was asked for a round of an incremental
    /// sub-protocol; those use [`assign`].
    #[error("the `{0}` sub-protocol is assigned incrementally, not eagerly")]
    NotEager(SubProtocol),
}

/// What one member is told, in typed and in wire form.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemberAssignment {
    /// Newly assigned connectors and tasks (start them).
    pub assigned: ConnectorsAndTasks,
    /// Revoked connectors and tasks (stop them, then rejoin).
    pub revoked: ConnectorsAndTasks,
    /// Everything the member owns after this round: what it kept, minus
    /// the revoked, plus the newly assigned (Java's leader state).
    pub owned: ConnectorsAndTasks,
    /// The assignment to send in SyncGroup.
    pub assignment: Assignment,
}

/// The result of one round.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AssignmentRound {
    /// [`NO_ERROR`] or [`CONFIG_MISMATCH`].
    pub error: i16,
    /// The config offset in every assignment.
    pub config_offset: i64,
    /// The delay in every assignment: after it, members rejoin.
    pub delay: i32,
    /// Every member's assignment, by member id.
    pub members: BTreeMap<String, MemberAssignment>,
}

impl AssignmentRound {
    /// Whether some member has something to revoke.
    pub fn has_revocations(&self) -> bool {
        self.members.values().any(|m| !m.revoked.is_empty())
    }

    /// The SyncGroup payload: every member's encoded assignment.
    pub fn encode(&self) -> Result<BTreeMap<String, Vec<u8>>, crate::protocol::ProtocolError> {
        self.members
            .iter()
            .map(|(id, m)| Ok((id.clone(), m.assignment.encode()?)))
            .collect()
    }
}

/// What the leader keeps between rounds (Java keeps it in the assignor
/// instance). Start with [`AssignorState::default`]; a new leader starts
/// afresh, as in Java.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AssignorState {
    previous_assignment: Items,
    previous_revocation: Items,
    revoked_in_previous: bool,
    candidate_workers_for_reassignment: IndexSet<String>,
    scheduled_rebalance: i64,
    delay: i32,
    previous_generation_id: i32,
    previous_members: BTreeSet<String>,
    num_successive_revoking_rebalances: u32,
}

impl Default for AssignorState {
    fn default() -> Self {
        AssignorState {
            previous_assignment: Items::default(),
            previous_revocation: Items::default(),
            revoked_in_previous: false,
            candidate_workers_for_reassignment: IndexSet::new(),
            scheduled_rebalance: 0,
            delay: 0,
            previous_generation_id: -1,
            previous_members: BTreeSet::new(),
            num_successive_revoking_rebalances: 0,
        }
    }
}

impl AssignorState {
    /// When held lost work is to be reassigned (ms; 0 when nothing is
    /// scheduled).
    pub fn scheduled_rebalance(&self) -> i64 {
        self.scheduled_rebalance
    }

    /// The delay announced in the last round.
    pub fn delay(&self) -> i32 {
        self.delay
    }

    /// Workers that were empty while lost work was held: they get it when
    /// the delay expires.
    pub fn candidate_workers(&self) -> impl Iterator<Item = &str> {
        self.candidate_workers_for_reassignment
            .iter()
            .map(String::as_str)
    }

    /// Whether the last round revoked work to balance the load.
    pub fn revoked_in_previous(&self) -> bool {
        self.revoked_in_previous
    }

    /// The generation of the last round computed.
    pub fn previous_generation(&self) -> i32 {
        self.previous_generation_id
    }

    /// The tasks the last round left on some worker: assigned, held for
    /// their lost owner, or revoked. A revoked task stops before its owner
    /// joins again, so it may run until a later round has gone by.
    pub fn placed_tasks(&self) -> impl Iterator<Item = &TaskId> {
        self.previous_assignment
            .tasks
            .iter()
            .chain(&self.previous_revocation.tasks)
    }

    fn reset_delay(&mut self) {
        self.candidate_workers_for_reassignment.clear();
        self.scheduled_rebalance = 0;
        self.delay = 0;
    }
}

/// A sorted set of connectors and tasks (Java's `TreeSet`-backed views).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Items {
    connectors: BTreeSet<String>,
    tasks: BTreeSet<TaskId>,
}

impl Items {
    fn is_empty(&self) -> bool {
        self.connectors.is_empty() && self.tasks.is_empty()
    }

    /// `self` minus every set in `minus`.
    fn diff(&self, minus: &[&Items]) -> Items {
        let mut out = self.clone();
        for m in minus {
            out.connectors.retain(|c| !m.connectors.contains(c));
            out.tasks.retain(|t| !m.tasks.contains(t));
        }
        out
    }
}

/// One worker's ordered load (Java's `WorkerLoad` over `LinkedHashSet`s).
#[derive(Clone, Debug, Default)]
struct Load {
    worker: String,
    connectors: IndexSet<String>,
    tasks: IndexSet<TaskId>,
}

impl Load {
    fn is_empty(&self) -> bool {
        self.connectors.is_empty() && self.tasks.is_empty()
    }

    fn remove_all(&mut self, other: &Load) {
        for c in &other.connectors {
            self.connectors.shift_remove(c);
        }
        for t in &other.tasks {
            self.tasks.shift_remove(t);
        }
    }

    fn to_public(&self) -> ConnectorsAndTasks {
        ConnectorsAndTasks {
            connectors: self.connectors.iter().cloned().collect(),
            tasks: self.tasks.iter().cloned().collect(),
        }
    }
}

/// Computes one round: the assignment of every member and the state for
/// the next round. Pure: same inputs, same outputs.
///
/// ```
/// use std::collections::BTreeMap;
/// use connect_distributed::assignor::*;
/// use connect_distributed::protocol::SubProtocol;
///
/// let snapshot = ConfigSnapshot { offset: 5, connectors: BTreeMap::from([("c".to_string(), 2)]) };
/// let member = |id: &str| Member {
///     id: id.into(),
///     url: format!("http://{id}:8083/"),
///     config_offset: 5,
///     current: ConnectorsAndTasks::default(),
/// };
/// let members = [member("w1"), member("w2")];
/// let input = RoundInput {
///     leader_id: "w1",
///     members: &members,
///     snapshot: &snapshot,
///     protocol: SubProtocol::Sessioned,
///     last_completed_generation: -1,
///     generation: 1,
///     now_ms: 0,
/// };
/// let (round, _next_state) =
///     assign(&AssignorState::default(), &AssignorConfig::default(), &input)?;
/// // One connector and two tasks spread over two empty workers.
/// assert_eq!(round.members["w1"].assigned.len() + round.members["w2"].assigned.len(), 3);
/// assert_eq!(round.members["w1"].assigned.tasks.len(), 1);
/// assert!(!round.has_revocations());
/// # Ok::<(), AssignError>(())
/// ```
pub fn assign(
    state: &AssignorState,
    config: &AssignorConfig,
    input: &RoundInput<'_>,
) -> Result<(AssignmentRound, AssignorState), AssignError> {
    if input.protocol == SubProtocol::Eager {
        return Err(AssignError::EagerProtocol);
    }
    let (members, max_offset, header) = round_members(input)?;

    if input.snapshot.offset < max_offset {
        let round = fill(
            &header,
            CONFIG_MISMATCH,
            max_offset,
            0,
            members.keys().map(|id| (*id, Outcome::default())),
        );
        return Ok((round, state.clone()));
    }
    // The snapshot is at least as new as every member: assign with it.
    let config_offset = input.snapshot.offset;
    let max_delay = config.max_delay_ms.max(0);
    let mut st = state.clone();
    let now = input.now_ms;

    if st.previous_generation_id != input.last_completed_generation {
        st.previous_assignment = Items::default();
    }

    let mut configured = Items::default();
    for (connector, &count) in &input.snapshot.connectors {
        configured.connectors.insert(connector.clone());
        for task in 0..count {
            configured
                .tasks
                .insert(TaskId::new(connector.clone(), task));
        }
    }

    let member_loads: Vec<Load> = members
        .values()
        .map(|m| Load {
            worker: m.id.clone(),
            connectors: m.current.connectors.iter().cloned().collect(),
            tasks: m.current.tasks.iter().cloned().collect(),
        })
        .collect();

    let mut active = Items::default();
    for l in &member_loads {
        active.connectors.extend(l.connectors.iter().cloned());
        active.tasks.extend(l.tasks.iter().cloned());
    }

    // A revocation that did not take effect: start again from what runs.
    if !st.previous_revocation.is_empty() {
        let still_running = st
            .previous_revocation
            .connectors
            .iter()
            .any(|c| active.connectors.contains(c))
            || st
                .previous_revocation
                .tasks
                .iter()
                .any(|t| active.tasks.contains(t));
        if still_running {
            st.previous_assignment = active.clone();
        }
        st.previous_revocation = Items::default();
    }

    let deleted = st.previous_assignment.diff(&[&configured]);
    let duplicated = duplicated(&member_loads);
    let lost = st.previous_assignment.diff(&[&active, &deleted]);
    let created = configured.diff(&[&st.previous_assignment, &active]);

    // What each member runs now, minus the deleted: the base of "newly assigned".
    let current: BTreeMap<String, Load> = member_loads
        .iter()
        .map(|l| {
            let mut l = l.clone();
            l.connectors.retain(|c| !deleted.connectors.contains(c));
            l.tasks.retain(|t| !deleted.tasks.contains(t));
            (l.worker.clone(), l)
        })
        .collect();

    let mut to_revoke: BTreeMap<String, Load> = BTreeMap::new();
    let deleted_to_revoke = intersection(&deleted, &member_loads);
    add_all(&mut to_revoke, &deleted_to_revoke);
    let duplicated_to_revoke = intersection(&duplicated, &member_loads);
    add_all(&mut to_revoke, &duplicated_to_revoke);

    let mut next: Vec<Load> = member_loads.clone();
    remove_all(&mut next, &deleted_to_revoke);
    remove_all(&mut next, &duplicated_to_revoke);

    let mut lost_to_reassign = Load::default();
    handle_lost_assignments(
        &mut st,
        max_delay,
        now,
        &lost,
        &mut lost_to_reassign,
        &mut next,
    );

    if st.delay == 0 {
        let balancing = load_balancing_revocations(&configured, &next);
        if st.revoked_in_previous && !balancing.is_empty() {
            st.num_successive_revoking_rebalances =
                st.num_successive_revoking_rebalances.saturating_add(1);
            st.delay = revoking_backoff_ms(max_delay, st.num_successive_revoking_rebalances);
            if st.delay != 0 {
                st.scheduled_rebalance = now.saturating_add(i64::from(st.delay));
            } else {
                add_all(&mut to_revoke, &balancing);
                remove_all(&mut next, &balancing);
            }
        } else if !balancing.is_empty() {
            add_all(&mut to_revoke, &balancing);
            remove_all(&mut next, &balancing);
            st.revoked_in_previous = true;
        } else if st.revoked_in_previous {
            st.revoked_in_previous = false;
            st.num_successive_revoking_rebalances = 0;
        }
    } else {
        st.revoked_in_previous = false;
    }

    let mut to_assign_connectors: IndexSet<String> = created.connectors.iter().cloned().collect();
    to_assign_connectors.extend(lost_to_reassign.connectors.iter().cloned());
    let mut to_assign_tasks: IndexSet<TaskId> = created.tasks.iter().cloned().collect();
    to_assign_tasks.extend(lost_to_reassign.tasks.iter().cloned());

    assign_round_robin(&mut next, to_assign_connectors, |l| &mut l.connectors);
    assign_round_robin(&mut next, to_assign_tasks, |l| &mut l.tasks);

    // The next "previous assignment": what will be owned, plus the lost
    // work still held.
    let mut previous = Items::default();
    for l in &next {
        previous.connectors.extend(l.connectors.iter().cloned());
        previous.tasks.extend(l.tasks.iter().cloned());
    }
    for r in to_revoke.values() {
        for c in &r.connectors {
            previous.connectors.remove(c);
            st.previous_revocation.connectors.insert(c.clone());
        }
        for t in &r.tasks {
            previous.tasks.remove(t);
            st.previous_revocation.tasks.insert(t.clone());
        }
    }
    previous.connectors.extend(lost.connectors.iter().cloned());
    previous.tasks.extend(lost.tasks.iter().cloned());
    st.previous_assignment = previous;
    st.previous_generation_id = input.generation;
    st.previous_members = members.keys().map(|id| (*id).to_owned()).collect();

    let empty = Load::default();
    let outcomes = next.iter().map(|l| {
        let base = current.get(&l.worker).unwrap_or(&empty);
        let revoked = to_revoke.get(&l.worker).unwrap_or(&empty);
        let assigned = ConnectorsAndTasks {
            connectors: l
                .connectors
                .iter()
                .filter(|c| !base.connectors.contains(*c))
                .cloned()
                .collect(),
            tasks: l
                .tasks
                .iter()
                .filter(|t| !base.tasks.contains(*t))
                .cloned()
                .collect(),
        };
        let mut owned = l.clone();
        owned.remove_all(revoked);
        (
            l.worker.as_str(),
            Outcome {
                assigned,
                revoked: revoked.to_public(),
                owned: owned.to_public(),
            },
        )
    });
    let round = fill(&header, NO_ERROR, config_offset, st.delay, outcomes);
    Ok((round, st))
}

/// Both assignors' start: the members in id order (a repeated id keeps
/// its last entry, as Java's map), their highest config offset, and the
/// header naming the leader, who must be one of them.
fn round_members<'a>(
    input: &RoundInput<'a>,
) -> Result<(BTreeMap<&'a str, &'a Member>, i64, Header<'a>), AssignError> {
    let mut members: BTreeMap<&str, &Member> = BTreeMap::new();
    for m in input.members {
        members.insert(m.id.as_str(), m);
    }
    let Some(max_offset) = members.values().map(|m| m.config_offset).max() else {
        return Err(AssignError::NoMembers);
    };
    let Some(leader) = members.get(input.leader_id) else {
        return Err(AssignError::LeaderNotAMember(input.leader_id.to_owned()));
    };
    let header = Header {
        version: input.protocol.version(),
        leader: input.leader_id,
        leader_url: &leader.url,
    };
    Ok((members, max_offset, header))
}

struct Header<'a> {
    version: i16,
    leader: &'a str,
    leader_url: &'a str,
}

#[derive(Default)]
struct Outcome {
    assigned: ConnectorsAndTasks,
    revoked: ConnectorsAndTasks,
    owned: ConnectorsAndTasks,
}

fn fill<'a>(
    header: &Header<'_>,
    error: i16,
    config_offset: i64,
    delay: i32,
    outcomes: impl Iterator<Item = (&'a str, Outcome)>,
) -> AssignmentRound {
    let members = outcomes
        .map(|(id, o)| {
            let assignment = Assignment {
                version: header.version,
                error,
                leader: header.leader.to_owned(),
                leader_url: header.leader_url.to_owned(),
                config_offset,
                assigned: o.assigned.to_wire(),
                revoked: o.revoked.to_wire(),
                delay,
            };
            (
                id.to_owned(),
                MemberAssignment {
                    assigned: o.assigned,
                    revoked: o.revoked,
                    owned: o.owned,
                    assignment,
                },
            )
        })
        .collect();
    AssignmentRound {
        error,
        config_offset,
        delay,
        members,
    }
}

/// Items reported by more than one member.
fn duplicated(loads: &[Load]) -> Items {
    let mut seen = Items::default();
    let mut dup = Items::default();
    for l in loads {
        for c in &l.connectors {
            if !seen.connectors.insert(c.clone()) {
                dup.connectors.insert(c.clone());
            }
        }
        for t in &l.tasks {
            if !seen.tasks.insert(t.clone()) {
                dup.tasks.insert(t.clone());
            }
        }
    }
    dup
}

/// For every member, which of `items` it holds (in its order).
fn intersection(items: &Items, loads: &[Load]) -> Vec<Load> {
    loads
        .iter()
        .map(|l| Load {
            worker: l.worker.clone(),
            connectors: l
                .connectors
                .iter()
                .filter(|c| items.connectors.contains(*c))
                .cloned()
                .collect(),
            tasks: l
                .tasks
                .iter()
                .filter(|t| items.tasks.contains(*t))
                .cloned()
                .collect(),
        })
        .collect()
}

fn add_all(base: &mut BTreeMap<String, Load>, add: &[Load]) {
    for a in add {
        let entry = base.entry(a.worker.clone()).or_insert_with(|| Load {
            worker: a.worker.clone(),
            ..Load::default()
        });
        entry.connectors.extend(a.connectors.iter().cloned());
        entry.tasks.extend(a.tasks.iter().cloned());
    }
}

fn remove_all(loads: &mut [Load], remove: &[Load]) {
    for l in loads.iter_mut() {
        if let Some(r) = remove.iter().find(|r| r.worker == l.worker) {
            l.remove_all(r);
        }
    }
}

fn handle_lost_assignments(
    st: &mut AssignorState,
    max_delay: i32,
    now: i64,
    lost: &Items,
    to_reassign: &mut Load,
    next: &mut [Load],
) {
    if lost.is_empty() && !st.revoked_in_previous {
        st.reset_delay();
        return;
    }
    let all_back = st
        .previous_members
        .iter()
        .all(|m| next.iter().any(|l| &l.worker == m));
    if (st.scheduled_rebalance <= 0 && all_back) || max_delay == 0 {
        // Nobody left (the work went missing some other way), or delays are
        // off: reassign as if new.
        to_reassign
            .connectors
            .extend(lost.connectors.iter().cloned());
        to_reassign.tasks.extend(lost.tasks.iter().cloned());
        return;
    }

    if st.scheduled_rebalance > 0 && now >= st.scheduled_rebalance {
        // The delay expired: hand the lost work to the workers that were
        // empty while it was held, round-robin, else treat it as new.
        let candidates: Vec<usize> = st
            .candidate_workers_for_reassignment
            .iter()
            .filter_map(|w| next.iter().position(|l| &l.worker == w))
            .collect();
        if candidates.is_empty() {
            to_reassign
                .connectors
                .extend(lost.connectors.iter().cloned());
            to_reassign.tasks.extend(lost.tasks.iter().cloned());
        } else {
            for (i, c) in lost.connectors.iter().enumerate() {
                if let Some(l) = candidates
                    .get(i % candidates.len())
                    .and_then(|&w| next.get_mut(w))
                {
                    l.connectors.insert(c.clone());
                }
            }
            for (i, t) in lost.tasks.iter().enumerate() {
                if let Some(l) = candidates
                    .get(i % candidates.len())
                    .and_then(|&w| next.get_mut(w))
                {
                    l.tasks.insert(t.clone());
                }
            }
        }
        st.reset_delay();
        st.revoked_in_previous = false;
    } else {
        for l in next.iter().filter(|l| l.is_empty()) {
            st.candidate_workers_for_reassignment
                .insert(l.worker.clone());
        }
        st.delay = if now < st.scheduled_rebalance {
            let left = st.scheduled_rebalance.saturating_sub(now);
            i32::try_from(left.min(i64::from(max_delay))).unwrap_or(max_delay)
        } else {
            max_delay
        };
        st.scheduled_rebalance = now.saturating_add(i64::from(st.delay));
    }
}

/// The delay (ms) before the `attempts`-th consecutive revoking round
/// may revoke again: Kafka's `ExponentialBackoff(1, 40, max_delay, 0)` as
/// the assignor builds it (always 0 when `max_delay_ms` is 0), including its
/// floating-point truncation (`revoking_backoff_ms(1000, 2)` is 999).
///
/// ```
/// use connect_distributed::assignor::revoking_backoff_ms;
///
/// assert_eq!(revoking_backoff_ms(300_000, 1), 40);
/// assert_eq!(revoking_backoff_ms(300_000, 2), 1600);
/// assert_eq!(revoking_backoff_ms(300_000, 9), 300_000);
/// ```
pub fn revoking_backoff_ms(max_delay_ms: i32, attempts: u32) -> i32 {
    let max_delay = max_delay_ms;
    let max = f64::from(max_delay.max(0));
    let initial = if max_delay <= 0 { 0.0 } else { 1.0 };
    let exp_max = if max > initial {
        (max / initial.max(1.0)).ln() / REVOKING_BACKOFF_MULTIPLIER.ln()
    } else {
        0.0
    };
    if exp_max == 0.0 {
        return initial as i32;
    }
    let exp = f64::from(attempts).min(exp_max);
    let term = initial * REVOKING_BACKOFF_MULTIPLIER.powf(exp);
    // Truncation as Java's `(long)` cast; saturating.
    let value = term as i64;
    i32::try_from(value.min(i64::from(max_delay))).unwrap_or(max_delay)
}

/// Revocations that bring every worker down to its fair share, connectors
/// and tasks separately; empty when already balanced.
fn load_balancing_revocations(configured: &Items, workers: &[Load]) -> Vec<Load> {
    if workers.iter().all(Load::is_empty) || configured.is_empty() {
        return Vec::new();
    }
    let connectors = revocations(configured.connectors.len(), workers, |l| &l.connectors);
    let tasks = revocations(configured.tasks.len(), workers, |l| &l.tasks);
    let mut out: Vec<Load> = Vec::new();
    for w in workers {
        let c = connectors.iter().find(|(id, _)| id == &w.worker);
        let t = tasks.iter().find(|(id, _)| id == &w.worker);
        if c.is_none() && t.is_none() {
            continue;
        }
        out.push(Load {
            worker: w.worker.clone(),
            connectors: c
                .map(|(_, v)| v.iter().cloned().collect())
                .unwrap_or_default(),
            tasks: t
                .map(|(_, v)| v.iter().cloned().collect())
                .unwrap_or_default(),
        });
    }
    out
}

fn revocations<E: Clone + std::hash::Hash + Eq>(
    total: usize,
    workers: &[Load],
    items: impl Fn(&Load) -> &IndexSet<E>,
) -> Vec<(String, Vec<E>)> {
    let n = workers.len();
    if n == 0 {
        return Vec::new();
    }
    let min = total / n;
    let extra = total % n;
    let at_min = workers.iter().filter(|w| items(w).len() == min).count();
    let at_extra = workers.iter().filter(|w| items(w).len() == min + 1).count();
    if at_extra == extra && at_min + at_extra == n {
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut allocated_extras = 0;
    for w in workers {
        let size = items(w).len();
        if size <= min {
            continue;
        }
        let max_for_worker = if allocated_extras < extra {
            allocated_extras += 1;
            if size == min + 1 {
                continue;
            }
            min + 1
        } else {
            min
        };
        let revoked: Vec<E> = items(w)
            .iter()
            .take(size - max_for_worker)
            .cloned()
            .collect();
        out.push((w.worker.clone(), revoked));
    }
    out
}

/// Java's `assignConnectors`/`assignTasks`: sort by load (then id), then
/// deal the items out to the least loaded workers in passes.
fn assign_round_robin<E: Clone + std::hash::Hash + Eq>(
    workers: &mut [Load],
    items: IndexSet<E>,
    set: impl Fn(&mut Load) -> &mut IndexSet<E>,
) {
    let mut size = |l: &mut Load| set(l).len();
    // Sort by (current size, worker id); stable like Java's List.sort.
    let mut keyed: Vec<(usize, Load)> = workers
        .iter_mut()
        .map(|l| (size(l), std::mem::take(l)))
        .collect();
    keyed.sort_by(|(a, la), (b, lb)| a.cmp(b).then_with(|| la.worker.cmp(&lb.worker)));
    for (slot, (_, l)) in workers.iter_mut().zip(keyed) {
        *slot = l;
    }
    if workers.is_empty() {
        return;
    }
    let mut items = items.into_iter().peekable();
    while items.peek().is_some() {
        let first_load = workers.first_mut().map(&mut size).unwrap_or(0);
        let up_to = workers
            .iter_mut()
            .position(|l| size(l) > first_load)
            .unwrap_or(workers.len());
        for l in workers.iter_mut().take(up_to) {
            let Some(item) = items.next() else { break };
            set(l).insert(item);
            if items.peek().is_none() {
                break;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_edges() {
        assert_eq!(revoking_backoff_ms(300_000, u32::MAX), 300_000);
        assert_eq!(revoking_backoff_ms(-5, 3), 0);
        assert_eq!(revoking_backoff_ms(i32::MAX, 100), i32::MAX);
    }
}
