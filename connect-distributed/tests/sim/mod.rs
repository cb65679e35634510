//! A cluster simulator for the assignor tests: workers report what they
//! run through encoded JoinGroup metadata, the leader assigns, every
//! assignment goes through the wire encoding, and each worker applies it as
//! Java's `WorkerCoordinator` does (stop the revoked, then run the newly
//! assigned plus what it kept).

#![allow(dead_code, unreachable_pub)]

use std::collections::{BTreeMap, BTreeSet};

use connect_distributed::assignor::{
    assign, AssignmentRound, AssignorConfig, AssignorState, ConfigSnapshot, ConnectorsAndTasks,
    Member, RoundInput,
};
use connect_distributed::protocol::{Assignment, SubProtocol, TaskId, WorkerMetadata};

/// One connector or task.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Item {
    Connector(String),
    Task(TaskId),
}

#[derive(Clone, Debug)]
pub struct Worker {
    /// What it runs, in its own order (the order it reports).
    pub owned: ConnectorsAndTasks,
    /// Its last assignment (what Java keeps as the assignment snapshot).
    pub last: Option<Assignment>,
}

#[derive(Clone, Debug)]
pub struct Cluster {
    pub config: AssignorConfig,
    pub protocol: SubProtocol,
    pub snapshot: ConfigSnapshot,
    pub workers: BTreeMap<String, Worker>,
    pub leader: Option<String>,
    pub state: AssignorState,
    pub generation: i32,
    pub now: i64,
    next_worker: u32,
    /// Whether the leader of the last round also led the one before.
    pub leader_was_stable: bool,
}

impl Cluster {
    pub fn new(max_delay_ms: i32, protocol: SubProtocol) -> Cluster {
        Cluster {
            config: AssignorConfig { max_delay_ms },
            protocol,
            snapshot: ConfigSnapshot::default(),
            workers: BTreeMap::new(),
            leader: None,
            state: AssignorState::default(),
            generation: 0,
            now: 1_000_000,
            next_worker: 0,
            leader_was_stable: false,
        }
    }

    /// A new worker (a new member id, running nothing); returns its id.
    pub fn add_worker(&mut self) -> String {
        let id = format!("w{:03}", self.next_worker);
        self.next_worker += 1;
        self.workers.insert(
            id.clone(),
            Worker {
                owned: ConnectorsAndTasks::default(),
                last: None,
            },
        );
        id
    }

    /// A worker disappears (crash or shutdown): its work is lost.
    pub fn remove_worker(&mut self, id: &str) -> ConnectorsAndTasks {
        self.workers.remove(id).map(|w| w.owned).unwrap_or_default()
    }

    pub fn set_connector(&mut self, name: &str, tasks: u32) {
        self.snapshot.connectors.insert(name.to_owned(), tasks);
        self.snapshot.offset += 1;
    }

    pub fn remove_connector(&mut self, name: &str) {
        self.snapshot.connectors.remove(name);
        self.snapshot.offset += 1;
    }

    pub fn configured(&self) -> BTreeSet<Item> {
        let mut out = BTreeSet::new();
        for (c, &n) in &self.snapshot.connectors {
            out.insert(Item::Connector(c.clone()));
            for t in 0..n {
                out.insert(Item::Task(TaskId::new(c.clone(), t)));
            }
        }
        out
    }

    /// Owner(s) of every item.
    pub fn owners(&self) -> BTreeMap<Item, Vec<String>> {
        let mut out: BTreeMap<Item, Vec<String>> = BTreeMap::new();
        for (id, w) in &self.workers {
            for c in &w.owned.connectors {
                out.entry(Item::Connector(c.clone()))
                    .or_default()
                    .push(id.clone());
            }
            for t in &w.owned.tasks {
                out.entry(Item::Task(t.clone()))
                    .or_default()
                    .push(id.clone());
            }
        }
        out
    }

    pub fn owned_by(&self, id: &str) -> BTreeSet<Item> {
        let mut out = BTreeSet::new();
        if let Some(w) = self.workers.get(id) {
            out.extend(w.owned.connectors.iter().cloned().map(Item::Connector));
            out.extend(w.owned.tasks.iter().cloned().map(Item::Task));
        }
        out
    }

    /// One rebalance: every live worker joins, the leader assigns, every
    /// worker applies its assignment. Panics if any item ends up with two
    /// owners.
    pub fn round(&mut self) -> AssignmentRound {
        assert!(!self.workers.is_empty(), "a round needs a worker");
        let previous_leader = self.leader.clone();
        let leader = match &self.leader {
            Some(l) if self.workers.contains_key(l) => l.clone(),
            _ => {
                // A new leader starts from scratch, as a new Java leader does.
                self.state = AssignorState::default();
                self.workers.keys().next().cloned().unwrap_or_default()
            }
        };
        self.leader_was_stable = previous_leader.as_deref() == Some(leader.as_str());
        self.leader = Some(leader.clone());
        let last_completed = self.generation;
        self.generation += 1;

        // JoinGroup: metadata through the wire.
        let members: Vec<Member> = self
            .workers
            .iter()
            .map(|(id, w)| {
                let current = (!w.owned.is_empty()).then(|| Assignment {
                    version: self.protocol.version(),
                    error: 0,
                    leader: leader.clone(),
                    leader_url: String::new(),
                    config_offset: self.snapshot.offset,
                    assigned: w.owned.to_wire(),
                    revoked: Vec::new(),
                    delay: 0,
                });
                let metadata = WorkerMetadata::new(
                    self.protocol,
                    format!("http://{id}:8083/"),
                    self.snapshot.offset,
                    current,
                );
                let bytes = metadata.encode().expect("encode metadata");
                let decoded = WorkerMetadata::decode(&bytes).expect("decode metadata");
                Member::from_metadata(id.clone(), &decoded)
            })
            .collect();

        let input = RoundInput {
            leader_id: &leader,
            members: &members,
            snapshot: &self.snapshot,
            protocol: self.protocol,
            last_completed_generation: last_completed,
            generation: self.generation,
            now_ms: self.now,
        };
        let (round, state) = assign(&self.state, &self.config, &input).expect("assign");
        self.state = state;

        // SyncGroup: assignments through the wire, applied like Java.
        let payload = round.encode().expect("encode assignments");
        assert_eq!(
            payload.len(),
            self.workers.len(),
            "one assignment per member"
        );
        for (id, w) in self.workers.iter_mut() {
            let bytes = payload.get(id).expect("assignment for every member");
            let a = Assignment::decode(bytes).expect("decode assignment");
            let revoked_c: BTreeSet<String> = a
                .revoked_connectors()
                .into_iter()
                .map(str::to_owned)
                .collect();
            let revoked_t: BTreeSet<TaskId> = a.revoked_tasks().into_iter().collect();
            let mut connectors: Vec<String> =
                a.connectors().into_iter().map(str::to_owned).collect();
            let mut tasks = a.tasks();
            connectors.extend(
                w.owned
                    .connectors
                    .iter()
                    .filter(|c| !revoked_c.contains(*c))
                    .cloned(),
            );
            tasks.extend(
                w.owned
                    .tasks
                    .iter()
                    .filter(|t| !revoked_t.contains(*t))
                    .cloned(),
            );
            w.owned = ConnectorsAndTasks { connectors, tasks };
            // The typed view agrees with the leader's "owned" bookkeeping.
            let typed = &round.members[id];
            assert_eq!(
                as_set(&typed.owned),
                as_set(&w.owned),
                "leader's view of {id} differs from what it runs"
            );
            w.last = Some(a);
        }
        self.assert_no_double_ownership();
        round
    }

    pub fn assert_no_double_ownership(&self) {
        for (item, owners) in self.owners() {
            assert!(
                owners.len() == 1,
                "{item:?} owned by {owners:?} at generation {}",
                self.generation
            );
        }
    }

    /// Rebalances as the workers would: again at once after a revocation,
    /// after the announced delay otherwise, until a round changes nothing
    /// under a leader that also led the round before. Returns the number of
    /// rounds, or None if it did not settle within `max_rounds`.
    pub fn converge(&mut self, max_rounds: usize) -> Option<usize> {
        for n in 1..=max_rounds {
            let round = self.round();
            let quiet = !round.has_revocations()
                && round.delay == 0
                && round.members.values().all(|m| m.assigned.is_empty());
            if quiet && self.leader_was_stable {
                return Some(n);
            }
            if !round.has_revocations() && round.delay > 0 {
                self.now += i64::from(round.delay);
            }
        }
        None
    }

    /// Every configured item owned exactly once, nothing else owned,
    /// connectors and tasks each balanced within one.
    pub fn assert_settled(&self) {
        let owners = self.owners();
        let configured = self.configured();
        let owned: BTreeSet<Item> = owners.keys().cloned().collect();
        assert_eq!(owned, configured, "owned items differ from configured ones");
        for (item, o) in &owners {
            assert_eq!(o.len(), 1, "{item:?} owned by {o:?}");
        }
        let counts = |f: &dyn Fn(&Worker) -> usize| {
            let v: Vec<usize> = self.workers.values().map(f).collect();
            (
                v.iter().copied().min().unwrap_or(0),
                v.iter().copied().max().unwrap_or(0),
            )
        };
        let (cmin, cmax) = counts(&|w| w.owned.connectors.len());
        let (tmin, tmax) = counts(&|w| w.owned.tasks.len());
        assert!(
            cmax - cmin <= 1,
            "connectors unbalanced: {cmin}..{cmax}: {:#?}",
            self.workers
        );
        assert!(
            tmax - tmin <= 1,
            "tasks unbalanced: {tmin}..{tmax}: {:#?}",
            self.workers
        );
    }
}

pub fn as_set(c: &ConnectorsAndTasks) -> BTreeSet<Item> {
    c.connectors
        .iter()
        .cloned()
        .map(Item::Connector)
        .chain(c.tasks.iter().cloned().map(Item::Task))
        .collect()
}
