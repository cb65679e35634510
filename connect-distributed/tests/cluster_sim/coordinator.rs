//! A Kafka group coordinator in the process: the simulated broker under
//! the simulation's workers. It keeps the rules of Kafka's
//! `GroupCoordinator` that a Connect worker can observe (KIP-394's
//! member id handshake, the join phase that waits for every member up to
//! the rebalance timeout, the leader's SyncGroup, session expiry,
//! heartbeats that answer `REBALANCE_IN_PROGRESS`, `ILLEGAL_GENERATION`
//! and `UNKNOWN_MEMBER_ID`, a follower that rejoins unchanged getting the
//! current generation back) and adds the network's faults: a worker cut
//! off (its requests get no answer), and a coordinator move (every
//! connection closed, the group kept, as when another broker takes over).
//!
//! The wire format is written by hand at the versions it advertises
//! (the same ones `group_fake_coordinator.rs` speaks).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{oneshot, watch};
use tokio::time::Instant;

use super::Timeline;
use crate::fake_wire::{api_versions, read_frame, write_frame, Reader, Writer};

const NONE: i16 = 0;
const ILLEGAL_GENERATION: i16 = 22;
const INCONSISTENT_GROUP_PROTOCOL: i16 = 23;
const UNKNOWN_MEMBER_ID: i16 = 25;
const REBALANCE_IN_PROGRESS: i16 = 27;
const MEMBER_ID_REQUIRED: i16 = 79;

/// Where the group is in Kafka's state machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Empty,
    /// Waiting for every member's JoinGroup, until `deadline`.
    Preparing {
        deadline: Instant,
    },
    /// Waiting for the leader's SyncGroup.
    Completing,
    Stable,
}

/// A JoinGroup answer (v5).
struct JoinReply {
    error: i16,
    generation: i32,
    protocol: String,
    leader: String,
    member_id: String,
    /// Every member's metadata, for the leader only.
    members: Vec<(String, Vec<u8>)>,
}

impl JoinReply {
    fn error(error: i16, member_id: &str) -> JoinReply {
        JoinReply {
            error,
            generation: -1,
            protocol: String::new(),
            leader: String::new(),
            member_id: member_id.to_owned(),
            members: Vec::new(),
        }
    }
}

struct Member {
    client: String,
    /// The protocols offered, in the member's order of preference.
    protocols: Vec<(String, Vec<u8>)>,
    session: Duration,
    rebalance: Duration,
    last_seen: Instant,
    /// Its order of joining (the leader is the earliest, when the old one
    /// is gone).
    joined_at: u64,
    join: Option<oneshot::Sender<JoinReply>>,
    sync: Option<oneshot::Sender<(i16, Vec<u8>)>>,
    assignment: Vec<u8>,
}

struct Group {
    phase: Phase,
    generation: i32,
    protocol: String,
    leader: Option<String>,
    members: BTreeMap<String, Member>,
    /// Ids handed out with MEMBER_ID_REQUIRED, not yet joined.
    pending: BTreeSet<String>,
    next_id: u64,
    /// Completed join phases.
    rounds: u64,
    /// Whether the last assignments were final: nothing revoked, no delay,
    /// no error (otherwise another round is due).
    settled: bool,
    /// Clients whose requests get no answer (a network partition).
    cut_off: BTreeSet<String>,
    /// Clients whose process died: never heard from again.
    dead: BTreeSet<String>,
    /// Clients whose requests reach the coordinator this late.
    slow_requests: BTreeMap<String, Duration>,
    /// Clients whose heartbeat answers reach them this late (as when the
    /// worker's heartbeat task is starved).
    slow_heartbeats: BTreeMap<String, Duration>,
}

/// The coordinator's handle: its address, its faults and its counters.
#[derive(Clone)]
pub(crate) struct Coordinator {
    addr: String,
    group: Arc<Mutex<Group>>,
    timeline: Arc<Timeline>,
    /// Bumped on a coordinator move: every connection closes.
    moves: Arc<watch::Sender<u64>>,
    /// Bumped when a partition heals: silent connections recheck.
    heals: Arc<watch::Sender<u64>>,
}

impl Coordinator {
    /// Listens on a free loopback port and serves until the runtime ends.
    pub(crate) async fn start(timeline: Arc<Timeline>) -> Coordinator {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a loopback port for the coordinator");
        let port = listener.local_addr().expect("a bound address").port();
        let coordinator = Coordinator {
            addr: format!("127.0.0.1:{port}"),
            group: Arc::new(Mutex::new(Group {
                phase: Phase::Empty,
                generation: 0,
                protocol: String::new(),
                leader: None,
                members: BTreeMap::new(),
                pending: BTreeSet::new(),
                next_id: 0,
                rounds: 0,
                settled: false,
                cut_off: BTreeSet::new(),
                dead: BTreeSet::new(),
                slow_requests: BTreeMap::new(),
                slow_heartbeats: BTreeMap::new(),
            })),
            timeline,
            moves: Arc::new(watch::channel(0).0),
            heals: Arc::new(watch::channel(0).0),
        };
        let serving = coordinator.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(serving.clone().serve(stream, port));
            }
        });
        let ticking = coordinator.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_millis(100)).await;
                ticking.tick();
            }
        });
        coordinator
    }

    /// `host:port`, the workers' `bootstrap.servers`.
    pub(crate) fn addr(&self) -> &str {
        &self.addr
    }

    /// Completed rebalances so far.
    pub(crate) fn rounds(&self) -> u64 {
        self.lock().rounds
    }

    /// The current generation and the members' client ids, if stable
    /// with final assignments (no other round due).
    pub(crate) fn stable_members(&self) -> Option<(i32, BTreeSet<String>)> {
        let g = self.lock();
        (g.phase == Phase::Stable && g.settled).then(|| {
            (
                g.generation,
                g.members.values().map(|m| m.client.clone()).collect(),
            )
        })
    }

    /// Cuts `client` off: its requests get no answer until [`heal`](Self::heal).
    pub(crate) fn cut_off(&self, client: &str) {
        self.lock().cut_off.insert(client.to_owned());
        self.timeline.log(format!("network: {client} cut off"));
    }

    /// Whether a live worker's link to the coordinator is cut or slow now
    /// (the group's view of it may be out of date).
    pub(crate) fn network_faulty(&self) -> bool {
        let g = self.lock();
        g.cut_off.iter().any(|c| !g.dead.contains(c))
            || !g.slow_requests.is_empty()
            || !g.slow_heartbeats.is_empty()
    }

    /// `client`'s process died: its requests are never answered again.
    pub(crate) fn kill(&self, client: &str) {
        self.lock().dead.insert(client.to_owned());
    }

    /// `client`'s requests reach the coordinator `late` after they were
    /// sent (`Duration::ZERO`: on time again; those under way arrive now).
    pub(crate) fn slow_requests(&self, client: &str, late: Duration) {
        self.timeline
            .log(format!("network: {client}'s requests arrive {late:?} late"));
        self.set_slow(client, late, |g| &mut g.slow_requests);
    }

    /// `client`'s heartbeat answers reach it `late` after the question.
    pub(crate) fn slow_heartbeats(&self, client: &str, late: Duration) {
        self.timeline.log(format!(
            "network: {client}'s heartbeat answers arrive {late:?} late"
        ));
        self.set_slow(client, late, |g| &mut g.slow_heartbeats);
    }

    fn set_slow(
        &self,
        client: &str,
        late: Duration,
        which: impl Fn(&mut Group) -> &mut BTreeMap<String, Duration>,
    ) {
        {
            let mut g = self.lock();
            let map = which(&mut g);
            if late.is_zero() {
                map.remove(client);
            } else {
                map.insert(client.to_owned(), late);
            }
        }
        self.heals.send_modify(|n| *n += 1);
    }

    /// Waits while `client` is slow in `which` way, up to its lateness;
    /// false when the coordinator moved meanwhile.
    async fn delay(
        &self,
        client: &str,
        moves: &mut watch::Receiver<u64>,
        which: impl Fn(&mut Group) -> &mut BTreeMap<String, Duration>,
    ) -> bool {
        let Some(late) = which(&mut self.lock()).get(client).copied() else {
            return true;
        };
        let until = Instant::now() + late;
        let mut heals = self.heals.subscribe();
        while which(&mut self.lock()).contains_key(client) {
            tokio::select! {
                _ = tokio::time::sleep_until(until) => break,
                _ = heals.changed() => {}
                _ = moves.changed() => return false,
            }
        }
        true
    }

    /// Ends every partition.
    pub(crate) fn heal(&self) {
        let healed = std::mem::take(&mut self.lock().cut_off);
        if !healed.is_empty() {
            self.timeline.log(format!("network: {healed:?} healed"));
        }
        self.heals.send_modify(|n| *n += 1);
    }

    /// Ends `client`'s partition.
    pub(crate) fn heal_one(&self, client: &str) {
        if self.lock().cut_off.remove(client) {
            self.timeline.log(format!("network: {client} healed"));
        }
        self.heals.send_modify(|n| *n += 1);
    }

    /// The coordinator moves to another broker: every connection closes,
    /// the group's state stays.
    pub(crate) fn relocate(&self) {
        self.timeline.log("coordinator moves".to_owned());
        self.moves.send_modify(|n| *n += 1);
    }

    fn lock(&self) -> MutexGuard<'_, Group> {
        self.group.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn is_cut_off(&self, client: &str) -> bool {
        let g = self.lock();
        g.cut_off.contains(client) || g.dead.contains(client)
    }

    async fn serve(self, mut stream: TcpStream, port: u16) {
        let mut moves = self.moves.subscribe();
        moves.mark_unchanged();
        loop {
            let frame = tokio::select! {
                frame = read_frame(&mut stream) => frame,
                _ = moves.changed() => return,
            };
            let Some(frame) = frame else { return };
            let mut r = Reader(&frame);
            let (api, version, correlation) = (r.i16(), r.i16(), r.i32());
            let client = r.string().unwrap_or_default();
            if self.is_cut_off(&client) {
                self.silent(&client, &mut moves).await;
                return;
            }
            if !self
                .delay(&client, &mut moves, |g| &mut g.slow_requests)
                .await
            {
                return;
            }
            let mut w = Writer::default();
            w.i32(correlation);
            match api {
                18 => {
                    let apis = [
                        (18, 0, 2),
                        (10, 0, 2),
                        (11, 0, 5),
                        (14, 0, 3),
                        (12, 0, 3),
                        (13, 0, 1),
                    ];
                    api_versions(&mut w, version, &apis);
                }
                10 => {
                    w.i32(0)
                        .i16(NONE)
                        .i16(-1)
                        .i32(1)
                        .string("127.0.0.1")
                        .i32(i32::from(port));
                }
                11 => {
                    assert_eq!(version, 5, "the member speaks JoinGroup v5 here");
                    let _group = r.string();
                    let session = Duration::from_millis(r.i32() as u64);
                    let rebalance = Duration::from_millis(r.i32() as u64);
                    let member = r.string().unwrap_or_default();
                    let _instance = r.string();
                    let _type = r.string();
                    let protocols = (0..r.i32())
                        .map(|_| (r.string().unwrap_or_default(), r.bytes()))
                        .collect();
                    let reply = match self.join(&client, member, session, rebalance, protocols) {
                        Ok(reply) => reply,
                        Err(parked) => tokio::select! {
                            reply = parked => match reply {
                                Ok(reply) => reply,
                                // Removed from the group while waiting.
                                Err(_) => return,
                            },
                            _ = moves.changed() => return,
                        },
                    };
                    w.i32(0)
                        .i16(reply.error)
                        .i32(reply.generation)
                        .string(&reply.protocol)
                        .string(&reply.leader)
                        .string(&reply.member_id)
                        .i32(reply.members.len() as i32);
                    for (id, metadata) in &reply.members {
                        w.string(id).i16(-1).bytes(metadata);
                    }
                }
                14 => {
                    assert_eq!(version, 3, "the member speaks SyncGroup v3 here");
                    let _group = r.string();
                    let generation = r.i32();
                    let member = r.string().unwrap_or_default();
                    let _instance = r.string();
                    let assignments = (0..r.i32())
                        .map(|_| (r.string().unwrap_or_default(), r.bytes()))
                        .collect();
                    let (code, assignment) = match self.sync(&member, generation, assignments) {
                        Ok(reply) => reply,
                        Err(parked) => tokio::select! {
                            reply = parked => match reply {
                                Ok(reply) => reply,
                                Err(_) => return,
                            },
                            _ = moves.changed() => return,
                        },
                    };
                    w.i32(0).i16(code).bytes(&assignment);
                }
                12 => {
                    let _group = r.string();
                    let generation = r.i32();
                    let member = r.string().unwrap_or_default();
                    w.i32(0).i16(self.heartbeat(&member, generation));
                }
                13 => {
                    let _group = r.string();
                    let member = r.string().unwrap_or_default();
                    self.leave(&member);
                    w.i32(0).i16(NONE);
                }
                _ => return,
            }
            if api == 12
                && !self
                    .delay(&client, &mut moves, |g| &mut g.slow_heartbeats)
                    .await
            {
                return;
            }
            // A partition that began while the request waited eats the answer.
            if self.is_cut_off(&client) {
                self.silent(&client, &mut moves).await;
                return;
            }
            if !write_frame(&mut stream, &w.0).await {
                return;
            }
        }
    }

    /// Answers nothing until `client`'s partition heals or the
    /// coordinator moves; then the connection closes (the member's
    /// request timed out long ago, or will).
    async fn silent(&self, client: &str, moves: &mut watch::Receiver<u64>) {
        let mut heals = self.heals.subscribe();
        while self.is_cut_off(client) {
            tokio::select! {
                _ = heals.changed() => {}
                _ = moves.changed() => return,
            }
        }
    }

    #[allow(clippy::result_large_err)]
    fn join(
        &self,
        client: &str,
        member: String,
        session: Duration,
        rebalance: Duration,
        protocols: Vec<(String, Vec<u8>)>,
    ) -> Result<JoinReply, oneshot::Receiver<JoinReply>> {
        let now = Instant::now();
        let mut g = self.lock();
        if member.is_empty() {
            g.next_id += 1;
            let id = format!("{client}-{:04}", g.next_id);
            g.pending.insert(id.clone());
            return Ok(JoinReply::error(MEMBER_ID_REQUIRED, &id));
        }
        let known = g.members.contains_key(&member);
        if !known && !g.pending.remove(&member) {
            return Ok(JoinReply::error(UNKNOWN_MEMBER_ID, &member));
        }
        let unchanged = known && g.members[&member].protocols == protocols;
        let is_leader = g.leader.as_deref() == Some(member.as_str());
        if unchanged && !is_leader && matches!(g.phase, Phase::Stable | Phase::Completing) {
            // Kafka answers a follower that rejoins unchanged with the
            // current generation, without a rebalance.
            let m = g.members.get_mut(&member).expect("known");
            m.last_seen = now;
            return Ok(JoinReply {
                error: NONE,
                generation: g.generation,
                protocol: g.protocol.clone(),
                leader: g.leader.clone().unwrap_or_default(),
                member_id: member,
                members: Vec::new(),
            });
        }
        let (tx, rx) = oneshot::channel();
        let joined_at = g.next_id;
        g.next_id += 1;
        let m = g.members.entry(member.clone()).or_insert_with(|| Member {
            client: client.to_owned(),
            protocols: Vec::new(),
            session,
            rebalance,
            last_seen: now,
            joined_at,
            join: None,
            sync: None,
            assignment: Vec::new(),
        });
        m.protocols = protocols;
        m.session = session;
        m.rebalance = rebalance;
        m.last_seen = now;
        m.join = Some(tx);
        if !matches!(g.phase, Phase::Preparing { .. }) {
            self.prepare(&mut g, now, &format!("{member} joins"));
        }
        self.try_complete(&mut g, now);
        Err(rx)
    }

    #[allow(clippy::result_large_err, clippy::type_complexity)]
    fn sync(
        &self,
        member: &str,
        generation: i32,
        assignments: Vec<(String, Vec<u8>)>,
    ) -> Result<(i16, Vec<u8>), oneshot::Receiver<(i16, Vec<u8>)>> {
        let now = Instant::now();
        let mut g = self.lock();
        let g = &mut *g;
        let Some(m) = g.members.get_mut(member) else {
            return Ok((UNKNOWN_MEMBER_ID, Vec::new()));
        };
        m.last_seen = now;
        if generation != g.generation {
            return Ok((ILLEGAL_GENERATION, Vec::new()));
        }
        match g.phase {
            Phase::Empty | Phase::Preparing { .. } => Ok((REBALANCE_IN_PROGRESS, Vec::new())),
            Phase::Stable => Ok((NONE, m.assignment.clone())),
            Phase::Completing if g.leader.as_deref() == Some(member) => {
                let mut given: BTreeMap<String, Vec<u8>> = assignments.into_iter().collect();
                for (id, m) in g.members.iter_mut() {
                    m.assignment = given.remove(id).unwrap_or_default();
                    if let Some(parked) = m.sync.take() {
                        let _ = parked.send((NONE, m.assignment.clone()));
                    }
                }
                g.phase = Phase::Stable;
                g.settled = g.members.values().all(|m| is_final(&m.assignment));
                let given: Vec<String> = g
                    .members
                    .iter()
                    .map(|(id, m)| format!("{id}: {}", describe(&m.assignment)))
                    .collect();
                self.timeline.log(format!(
                    "coordinator: generation {} stable; {}",
                    g.generation,
                    given.join("; ")
                ));
                Ok((NONE, g.members[member].assignment.clone()))
            }
            Phase::Completing => {
                let (tx, rx) = oneshot::channel();
                m.sync = Some(tx);
                Err(rx)
            }
        }
    }

    fn heartbeat(&self, member: &str, generation: i32) -> i16 {
        let now = Instant::now();
        let mut g = self.lock();
        let phase = g.phase;
        let current = g.generation;
        let Some(m) = g.members.get_mut(member) else {
            return UNKNOWN_MEMBER_ID;
        };
        m.last_seen = now;
        if generation != current {
            ILLEGAL_GENERATION
        } else if matches!(phase, Phase::Preparing { .. }) {
            REBALANCE_IN_PROGRESS
        } else {
            NONE
        }
    }

    fn leave(&self, member: &str) {
        let now = Instant::now();
        let mut g = self.lock();
        if g.members.remove(member).is_some() {
            self.after_removal(&mut g, now, &format!("{member} left"));
        }
    }

    /// Expires sessions and ends join phases whose deadline passed.
    fn tick(&self) {
        let now = Instant::now();
        let mut g = self.lock();
        let expired: Vec<String> = g
            .members
            .iter()
            .filter(|(_, m)| m.join.is_none() && now.duration_since(m.last_seen) > m.session)
            .map(|(id, _)| id.clone())
            .collect();
        for id in expired {
            g.members.remove(&id);
            self.after_removal(&mut g, now, &format!("{id}'s session expired"));
        }
        self.try_complete(&mut g, now);
    }

    fn after_removal(&self, g: &mut Group, now: Instant, why: &str) {
        if g.members.is_empty() {
            g.phase = Phase::Empty;
            g.leader = None;
            self.timeline
                .log(format!("coordinator: {why}; group empty"));
        } else if matches!(g.phase, Phase::Preparing { .. }) {
            self.timeline.log(format!("coordinator: {why}"));
            self.try_complete(g, now);
        } else {
            self.prepare(g, now, why);
        }
    }

    /// Starts a join phase: parked SyncGroups learn the round is void.
    fn prepare(&self, g: &mut Group, now: Instant, why: &str) {
        let timeout = g
            .members
            .values()
            .map(|m| m.rebalance)
            .max()
            .unwrap_or_default();
        g.phase = Phase::Preparing {
            deadline: now + timeout,
        };
        for m in g.members.values_mut() {
            if let Some(parked) = m.sync.take() {
                let _ = parked.send((REBALANCE_IN_PROGRESS, Vec::new()));
            }
        }
        self.timeline.log(format!("coordinator: rebalance ({why})"));
    }

    /// Ends the join phase once every member joined, or at its deadline
    /// without the members that did not.
    fn try_complete(&self, g: &mut Group, now: Instant) {
        let Phase::Preparing { deadline } = g.phase else {
            return;
        };
        let all_joined = g.members.values().all(|m| m.join.is_some());
        if !all_joined && now < deadline {
            return;
        }
        let late: Vec<String> = g
            .members
            .iter()
            .filter(|(_, m)| m.join.is_none())
            .map(|(id, _)| id.clone())
            .collect();
        for id in late {
            g.members.remove(&id);
            self.timeline
                .log(format!("coordinator: {id} did not rejoin in time"));
        }
        if g.members.is_empty() {
            g.phase = Phase::Empty;
            g.leader = None;
            return;
        }
        let Some(protocol) = elect_protocol(&g.members) else {
            for m in g.members.values_mut() {
                if let Some(parked) = m.join.take() {
                    let _ = parked.send(JoinReply::error(INCONSISTENT_GROUP_PROTOCOL, ""));
                }
            }
            return;
        };
        g.generation += 1;
        g.rounds += 1;
        g.protocol = protocol;
        let leader = match &g.leader {
            Some(l) if g.members.contains_key(l) => l.clone(),
            _ => g
                .members
                .iter()
                .min_by_key(|(_, m)| m.joined_at)
                .map(|(id, _)| id.clone())
                .expect("members"),
        };
        g.leader = Some(leader.clone());
        let all: Vec<(String, Vec<u8>)> = g
            .members
            .iter()
            .map(|(id, m)| {
                let metadata = m
                    .protocols
                    .iter()
                    .find(|(name, _)| *name == g.protocol)
                    .map(|(_, metadata)| metadata.clone())
                    .unwrap_or_default();
                (id.clone(), metadata)
            })
            .collect();
        self.timeline.log(format!(
            "coordinator: generation {} ({}), leader {leader}, members {:?}",
            g.generation,
            g.protocol,
            g.members.keys().collect::<Vec<_>>()
        ));
        let (generation, protocol) = (g.generation, g.protocol.clone());
        for (id, m) in g.members.iter_mut() {
            m.last_seen = now;
            m.assignment.clear();
            if let Some(parked) = m.join.take() {
                let _ = parked.send(JoinReply {
                    error: NONE,
                    generation,
                    protocol: protocol.clone(),
                    leader: leader.clone(),
                    member_id: id.clone(),
                    members: if *id == leader {
                        all.clone()
                    } else {
                        Vec::new()
                    },
                });
            }
        }
        g.phase = Phase::Completing;
    }
}

/// Kafka's vote: each member votes for its most preferred protocol among
/// those every member supports; the most votes win.
fn elect_protocol(members: &BTreeMap<String, Member>) -> Option<String> {
    let mut common: Option<BTreeSet<&str>> = None;
    for m in members.values() {
        let names: BTreeSet<&str> = m.protocols.iter().map(|(n, _)| n.as_str()).collect();
        common = Some(match common {
            None => names,
            Some(c) => c.intersection(&names).copied().collect(),
        });
    }
    let common = common?;
    let mut votes: BTreeMap<&str, usize> = BTreeMap::new();
    for m in members.values() {
        if let Some((name, _)) = m
            .protocols
            .iter()
            .find(|(n, _)| common.contains(n.as_str()))
        {
            *votes.entry(name.as_str()).or_default() += 1;
        }
    }
    votes
        .into_iter()
        .max_by_key(|(_, n)| *n)
        .map(|(name, _)| name.to_owned())
}

/// An assignment as the timeline shows it.
fn describe(bytes: &[u8]) -> String {
    let Ok(a) = connect_distributed::protocol::Assignment::decode(bytes) else {
        return format!("{} undecodable bytes", bytes.len());
    };
    let join = |units: Vec<String>| units.join(" ");
    let mut out = format!(
        "+[{} {}]",
        join(a.connectors().iter().map(|c| c.to_string()).collect()),
        join(a.tasks().iter().map(|t| t.to_string()).collect())
    );
    if !a.revoked.is_empty() {
        out += &format!(
            " -[{} {}]",
            join(
                a.revoked_connectors()
                    .iter()
                    .map(|c| c.to_string())
                    .collect()
            ),
            join(a.revoked_tasks().iter().map(|t| t.to_string()).collect())
        );
    }
    if a.delay > 0 {
        out += &format!(" delay {} ms", a.delay);
    }
    if a.failed() {
        out += &format!(" error {} at offset {}", a.error, a.config_offset);
    }
    out
}

/// Whether an assignment needs no further round: nothing revoked, no
/// delay, no error.
fn is_final(bytes: &[u8]) -> bool {
    connect_distributed::protocol::Assignment::decode(bytes)
        .is_ok_and(|a| a.revoked.is_empty() && a.delay == 0 && !a.failed())
}
