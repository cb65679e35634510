//! The member's error handling against a scripted fake group coordinator
//! (a few hundred lines of hand-written wire format, no broker): each test
//! queues the error codes the coordinator answers with, as the fault drill
//! on librdkafka's mock did, and checks the member recovers (or stops) as
//! Java's does.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use connect_distributed::group::{
    ErrorCode, GroupApi, GroupConfig, GroupError, GroupEvent, GroupHandler, GroupMember,
    HandlerError, Joined, LeaderRound, RebalanceReason, WorkerState,
};
use connect_distributed::protocol::{Assignment, ConnectorAssignment, TaskId};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

mod fake_wire;
use fake_wire::{api_versions, Reader, Writer};

const DEADLINE: Duration = Duration::from_secs(30);

/// What the fake coordinator answers and what it saw.
#[derive(Default)]
struct Script {
    join_errors: VecDeque<i16>,
    sync_errors: VecDeque<i16>,
    heartbeat_errors: VecDeque<i16>,
    generation: i32,
    next_member: u32,
    find_coordinator: u32,
    joins: Vec<String>,
    /// When each JoinGroup arrived.
    join_at: Vec<tokio::time::Instant>,
    /// When the last SyncGroup answered with an error arrived.
    sync_error_at: Option<tokio::time::Instant>,
    leaves: Vec<String>,
    /// The last metadata offered for `sessioned`.
    metadata: Vec<u8>,
    /// With `Some((user, password))` the fake is a SASL_PLAINTEXT listener:
    /// a connection must authenticate before any group API (else the fake
    /// closes it, as Kafka does).
    sasl: Option<(String, String)>,
    /// The SASL mechanisms the fake enables (default: PLAIN).
    sasl_mechanisms: Option<Vec<&'static str>>,
    /// Authentications that succeeded, and those refused.
    sasl_ok: u32,
    sasl_refused: u32,
    /// Replaces the SaslAuthenticate response body with these bytes.
    sasl_garbage: Option<Vec<u8>>,
    /// Heartbeats answered.
    heartbeats: u32,
    /// When each heartbeat arrived.
    heartbeat_at: Vec<tokio::time::Instant>,
    /// The connection (its number) each heartbeat came on, and how many
    /// FindCoordinator requests had been answered then.
    heartbeat_conn: Vec<(u32, u32)>,
    /// The generation and member id of each heartbeat.
    heartbeat_from: Vec<(i32, String)>,
    /// How long each JoinGroup waits for its answer.
    join_delay: Duration,
    /// The group ids each FindCoordinator asked for.
    find_keys: Vec<String>,
    /// The group ids of JoinGroup, SyncGroup, Heartbeat and LeaveGroup.
    groups: BTreeSet<String>,
    /// When the last heartbeat answered with an error arrived.
    heartbeat_error_at: Option<tokio::time::Instant>,
    /// Connections accepted and not yet closed by the member.
    open: u32,
    /// Connections accepted.
    accepted: u32,
    /// Advertise only the flexible SyncGroup v5 and LeaveGroup v5, as a
    /// broker that raised their minimum versions would.
    flexible_only: bool,
    /// The protocol type and name of each SyncGroup (v5).
    sync_protocols: Vec<(Option<String>, Option<String>)>,
    /// The reason of each member leaving (v5).
    leave_reasons: Vec<Option<String>>,
    /// How long each LeaveGroup waits for its answer.
    leave_delay: Duration,
    /// Close every connection at its next request, and new ones at once.
    refuse: bool,
}

/// Starts the fake coordinator; returns its address.
async fn fake_coordinator(script: Arc<Mutex<Script>>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            let script = script.clone();
            tokio::spawn(async move {
                let number = {
                    let mut s = script.lock().unwrap();
                    s.open += 1;
                    s.accepted += 1;
                    s.accepted
                };
                serve(stream, script.clone(), port, number).await;
                script.lock().unwrap().open -= 1;
            });
        }
    });
    format!("127.0.0.1:{port}")
}

/// Serves one connection, the `number`th accepted.
async fn serve(mut stream: TcpStream, script: Arc<Mutex<Script>>, port: u16, number: u32) {
    let mut authenticated = false;
    let mut handshaken = false;
    loop {
        let mut size = [0u8; 4];
        if stream.read_exact(&mut size).await.is_err() || script.lock().unwrap().refuse {
            return;
        }
        let mut frame = vec![0u8; i32::from_be_bytes(size) as usize];
        if stream.read_exact(&mut frame).await.is_err() {
            return;
        }
        let mut r = Reader(&frame);
        let (api, version, corr) = (r.i16(), r.i16(), r.i32());
        let _client_id = r.string();
        // SyncGroup and LeaveGroup from v4 are flexible: tagged fields end
        // the request header and start the response's.
        let flexible = matches!((api, version), (13 | 14, 4..));
        if flexible {
            r.skip_tags();
        }
        let mut w = Writer::default();
        w.i32(corr);
        if flexible {
            w.tags();
        }
        let mut delay = Duration::ZERO;
        {
            let mut s = script.lock().unwrap();
            if s.sasl.is_some() && !authenticated && !matches!(api, 18 | 17 | 36) {
                // Kafka closes a connection that skips authentication.
                return;
            }
            match api {
                17 => {
                    let mechanism = r.string().unwrap_or_default();
                    let enabled = s.sasl_mechanisms.clone().unwrap_or_else(|| vec!["PLAIN"]);
                    let code = if enabled.contains(&mechanism.as_str()) {
                        handshaken = true;
                        0
                    } else {
                        33
                    };
                    w.i16(code).i32(enabled.len() as i32);
                    for m in enabled {
                        w.string(m);
                    }
                }
                36 => {
                    assert!(handshaken, "SaslAuthenticate before SaslHandshake");
                    let token = r.bytes();
                    let mut parts = token.split(|b| *b == 0);
                    let (_authzid, user, password) = (parts.next(), parts.next(), parts.next());
                    let (want_user, want_password) = s.sasl.clone().unwrap();
                    let ok = user == Some(want_user.as_bytes())
                        && password == Some(want_password.as_bytes());
                    if let Some(garbage) = s.sasl_garbage.clone() {
                        w.0.extend_from_slice(&garbage);
                    } else if ok {
                        s.sasl_ok += 1;
                        authenticated = true;
                        w.i16(0).i16(-1).bytes(&[]);
                        if version >= 1 {
                            w.0.extend_from_slice(&0i64.to_be_bytes());
                        }
                    } else {
                        s.sasl_refused += 1;
                        w.i16(58)
                            .string("Authentication failed: Invalid username or password")
                            .bytes(&[]);
                        if version >= 1 {
                            w.0.extend_from_slice(&0i64.to_be_bytes());
                        }
                    }
                }
                18 => {
                    let (sync, leave) = if s.flexible_only {
                        ((14, 5, 5), (13, 5, 5))
                    } else {
                        ((14, 0, 3), (13, 0, 1))
                    };
                    let apis = [
                        (18, 0, 2),
                        (10, 0, 2),
                        (11, 0, 5),
                        sync,
                        (12, 0, 3),
                        leave,
                        (17, 0, 1),
                        (36, 0, 1),
                    ];
                    api_versions(&mut w, version, &apis);
                }
                10 => {
                    s.find_coordinator += 1;
                    let key = r.string().unwrap_or_default();
                    s.find_keys.push(key);
                    w.i32(0)
                        .i16(0)
                        .i16(-1)
                        .i32(1)
                        .string("127.0.0.1")
                        .i32(i32::from(port));
                }
                11 => {
                    let group = r.string().unwrap_or_default();
                    s.groups.insert(group);
                    let (_session, _rebalance) = (r.i32(), r.i32());
                    let member = r.string().unwrap_or_default();
                    let _instance = r.string();
                    let _type = r.string();
                    for _ in 0..r.i32() {
                        let name = r.string().unwrap();
                        let metadata = r.bytes();
                        if name == "sessioned" {
                            s.metadata = metadata;
                        }
                    }
                    s.joins.push(member.clone());
                    s.join_at.push(tokio::time::Instant::now());
                    delay = s.join_delay;
                    w.i32(0);
                    if let Some(code) = s.join_errors.pop_front() {
                        w.i16(code)
                            .i32(-1)
                            .string("")
                            .string("")
                            .string(&member)
                            .i32(0);
                    } else if member.is_empty() {
                        s.next_member += 1;
                        let id = format!("m-{}", s.next_member);
                        w.i16(79).i32(-1).string("").string("").string(&id).i32(0);
                    } else {
                        s.generation += 1;
                        let metadata = s.metadata.clone();
                        w.i16(0)
                            .i32(s.generation)
                            .string("sessioned")
                            .string(&member);
                        w.string(&member)
                            .i32(1)
                            .string(&member)
                            .i16(-1)
                            .bytes(&metadata);
                    }
                }
                14 if flexible => {
                    let group = r.compact_string().unwrap_or_default();
                    s.groups.insert(group);
                    let _generation = r.i32();
                    let member = r.compact_string().unwrap_or_default();
                    let _instance = r.compact_string();
                    let protocol = (r.compact_string(), r.compact_string());
                    let mut mine = Vec::new();
                    for _ in 0..r.compact_len() {
                        let id = r.compact_string().unwrap();
                        let bytes = r.compact_bytes();
                        r.skip_tags();
                        if id == member {
                            mine = bytes;
                        }
                    }
                    r.skip_tags();
                    s.sync_protocols.push(protocol.clone());
                    let code = s.sync_errors.pop_front().unwrap_or(0);
                    if code != 0 {
                        mine.clear();
                    }
                    w.i32(0)
                        .i16(code)
                        .compact_string(protocol.0.as_deref())
                        .compact_string(protocol.1.as_deref())
                        .compact_bytes(&mine)
                        .tags();
                }
                14 => {
                    let group = r.string().unwrap_or_default();
                    s.groups.insert(group);
                    let _generation = r.i32();
                    let member = r.string().unwrap_or_default();
                    let _instance = r.string();
                    let mut mine = Vec::new();
                    for _ in 0..r.i32() {
                        let id = r.string().unwrap();
                        let bytes = r.bytes();
                        if id == member {
                            mine = bytes;
                        }
                    }
                    w.i32(0);
                    match s.sync_errors.pop_front() {
                        Some(code) => {
                            s.sync_error_at = Some(tokio::time::Instant::now());
                            w.i16(code).bytes(&[])
                        }
                        None => w.i16(0).bytes(&mine),
                    };
                }
                12 => {
                    let group = r.string().unwrap_or_default();
                    s.groups.insert(group);
                    let generation = r.i32();
                    let member = r.string().unwrap_or_default();
                    s.heartbeat_from.push((generation, member));
                    let finds = s.find_coordinator;
                    s.heartbeat_conn.push((number, finds));
                    let code = s.heartbeat_errors.pop_front().unwrap_or(0);
                    s.heartbeats += 1;
                    let now = tokio::time::Instant::now();
                    s.heartbeat_at.push(now);
                    if code != 0 {
                        s.heartbeat_error_at = Some(now);
                    }
                    w.i32(0).i16(code);
                }
                13 if flexible => {
                    let group = r.compact_string().unwrap_or_default();
                    s.groups.insert(group);
                    let mut members = Vec::new();
                    for _ in 0..r.compact_len() {
                        members.push(r.compact_string().unwrap_or_default());
                        let _instance = r.compact_string();
                        let reason = if version >= 5 {
                            r.compact_string()
                        } else {
                            None
                        };
                        r.skip_tags();
                        s.leave_reasons.push(reason);
                    }
                    r.skip_tags();
                    w.i32(0).i16(0).uvarint(members.len() as u64 + 1);
                    for member in &members {
                        w.compact_string(Some(member))
                            .compact_string(None)
                            .i16(0)
                            .tags();
                    }
                    w.tags();
                    s.leaves.extend(members);
                    delay = s.leave_delay;
                }
                13 => {
                    let group = r.string().unwrap_or_default();
                    s.groups.insert(group);
                    {
                        let member = r.string().unwrap_or_default();
                        s.leaves.push(member);
                        w.i32(0).i16(0);
                        delay = s.leave_delay;
                    }
                }
                _ => return,
            }
        }
        // A coordinator waiting for other members holds the answer back.
        tokio::time::sleep(delay).await;
        let mut out = (w.0.len() as i32).to_be_bytes().to_vec();
        out.extend_from_slice(&w.0);
        if stream.write_all(&out).await.is_err() {
            return;
        }
    }
}

/// A leader that gives itself connector `c` and task `c-0`.
struct Solo;

/// [`Solo`], noting each round's `last_completed_generation`.
#[derive(Default)]
struct Noting(Mutex<Vec<i32>>);

#[async_trait::async_trait]
impl GroupHandler for Noting {
    async fn worker_state(&self) -> Result<WorkerState, HandlerError> {
        Solo.worker_state().await
    }

    async fn assign(&self, round: &LeaderRound) -> Result<BTreeMap<String, Vec<u8>>, HandlerError> {
        self.0.lock().unwrap().push(round.last_completed_generation);
        Solo.assign(round).await
    }
}

#[async_trait::async_trait]
impl GroupHandler for Solo {
    async fn worker_state(&self) -> Result<WorkerState, HandlerError> {
        Ok(WorkerState {
            url: "http://solo:8083/".into(),
            config_offset: 1,
        })
    }

    async fn assign(&self, round: &LeaderRound) -> Result<BTreeMap<String, Vec<u8>>, HandlerError> {
        let leader_url = round.members[0].metadata.url.clone();
        let a = Assignment {
            version: 2,
            error: 0,
            leader: round.leader_id.clone(),
            leader_url,
            config_offset: 1,
            assigned: ConnectorAssignment::group(["c"], [TaskId::new("c", 0)]),
            revoked: Vec::new(),
            delay: 0,
        };
        Ok(BTreeMap::from([(round.leader_id.clone(), a.encode()?)]))
    }
}

fn config(addr: &str) -> GroupConfig {
    let mut c = GroupConfig::new("fake-group", addr);
    c.session_timeout = Duration::from_millis(3000);
    c.heartbeat_interval = Duration::from_millis(50);
    c.retry_backoff = Duration::from_millis(10);
    c.retry_backoff_max = Duration::from_millis(50);
    c
}

/// `config` with a fixed `retry.backoff.ms` (no growth towards a maximum).
fn with_fixed_backoff(mut c: GroupConfig, backoff: Duration) -> GroupConfig {
    (c.retry_backoff, c.retry_backoff_max) = (backoff, backoff);
    c
}

/// Polls the fake's script until `check` returns a value, failing the test
/// with `what` after `DEADLINE` (never sleep-then-assert).
async fn until<T>(
    script: &Mutex<Script>,
    what: &str,
    mut check: impl FnMut(&Script) -> Option<T>,
) -> T {
    let deadline = tokio::time::Instant::now() + DEADLINE;
    loop {
        let found = check(&script.lock().unwrap());
        if let Some(found) = found {
            return found;
        }
        assert!(tokio::time::Instant::now() < deadline, "{what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn next_event(events: &mut mpsc::UnboundedReceiver<GroupEvent>) -> GroupEvent {
    tokio::time::timeout(DEADLINE, events.recv())
        .await
        .expect("an event in time")
        .expect("the member is running")
}

/// The next `Joined`, skipping other events (collected in `seen`).
async fn next_joined(
    events: &mut mpsc::UnboundedReceiver<GroupEvent>,
    seen: &mut Vec<GroupEvent>,
) -> Joined {
    loop {
        match next_event(events).await {
            GroupEvent::Joined(j) => return *j,
            GroupEvent::Stopped { error } => panic!("stopped: {error:?}; before: {seen:#?}"),
            other => seen.push(other),
        }
    }
}

#[tokio::test]
async fn joins_with_the_member_id_the_coordinator_requires_and_leaves() {
    let script = Arc::new(Mutex::new(Script::default()));
    let addr = fake_coordinator(script.clone()).await;
    let handler = Arc::new(Noting::default());
    let (member, mut events) = GroupMember::start(config(&addr), handler.clone()).unwrap();
    // No generation before the first round (Java's NO_GENERATION).
    assert_eq!(member.status().generation, -1);
    let mut seen = Vec::new();
    let j = next_joined(&mut events, &mut seen).await;
    assert_eq!(j.member_id, "m-1");
    // A plaintext member negotiates no SASL API.
    let versions = member.status().api_versions;
    assert!(versions.contains_key(&GroupApi::JoinGroup), "{versions:?}");
    assert!(
        !versions.contains_key(&GroupApi::SaslHandshake),
        "{versions:?}"
    );
    let shown = format!("{member:?}");
    assert!(
        shown.contains("fake-group") && shown.contains("m-1"),
        "{shown}"
    );
    assert_eq!(j.generation, 1);
    assert!(j.is_leader);
    assert_eq!(j.owned.connectors(), ["c"]);
    assert_eq!(j.owned.tasks(), [TaskId::new("c", 0)]);
    assert_eq!(script.lock().unwrap().joins, ["", "m-1"]);
    assert_eq!(script.lock().unwrap().find_keys, ["fake-group"]);
    // The first JoinGroup carries no current assignment; a rejoin reports
    // what the member owns.
    member.request_rejoin("test");
    let j2 = next_joined(&mut events, &mut seen).await;
    assert_eq!(j2.generation, 2);
    let offered = script.lock().unwrap().metadata.clone();
    let metadata = connect_distributed::protocol::WorkerMetadata::decode(&offered).unwrap();
    assert_eq!(metadata.assignment.unwrap().connectors(), ["c"]);
    // The assignor learns the last round this leader completed: none,
    // then the first.
    assert_eq!(*handler.0.lock().unwrap(), [-1, 1]);
    assert!(matches!(
        seen.as_slice(),
        [GroupEvent::Rebalancing { reason: RebalanceReason::Requested(r) }] if r == "test"
    ));
    member.leave().await;
    assert!(matches!(
        events.recv().await,
        Some(GroupEvent::Stopped { error: None })
    ));
    assert_eq!(script.lock().unwrap().leaves, ["m-1"]);
    let groups = script.lock().unwrap().groups.clone();
    assert_eq!(groups, BTreeSet::from(["fake-group".to_owned()]));
}

#[tokio::test]
async fn recovers_from_coordinator_and_rebalance_errors() {
    let script = Arc::new(Mutex::new(Script {
        // COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS.
        join_errors: [15, 16, 14].into(),
        // The mock's INVALID_REQUEST for a late follower, then
        // REBALANCE_IN_PROGRESS.
        sync_errors: [42, 27].into(),
        ..Script::default()
    }));
    let addr = fake_coordinator(script.clone()).await;
    let (member, mut events) = GroupMember::start(config(&addr), Arc::new(Solo)).unwrap();
    let mut seen = Vec::new();
    let j = next_joined(&mut events, &mut seen).await;
    {
        let s = script.lock().unwrap();
        assert!(
            s.find_coordinator >= 4,
            "rediscovered: {}",
            s.find_coordinator
        );
        assert!(s.join_errors.is_empty() && s.sync_errors.is_empty());
    }
    assert!(
        seen.iter().all(|e| !matches!(e, GroupEvent::Error(_))),
        "routine codes are not reported as errors: {seen:#?}"
    );

    // A heartbeat asks for a rebalance.
    script.lock().unwrap().heartbeat_errors.push_back(27);
    let j2 = next_joined(&mut events, &mut seen).await;
    assert_eq!(j2.generation, j.generation + 1);
    assert!(seen.iter().any(|e| matches!(
        e,
        GroupEvent::Rebalancing {
            reason: RebalanceReason::CoordinatorRequested
        }
    )));

    // The coordinator moved: found again, no rebalance.
    let before = script.lock().unwrap().find_coordinator;
    script.lock().unwrap().heartbeat_errors.push_back(16);
    tokio::time::timeout(DEADLINE, async {
        while script.lock().unwrap().find_coordinator == before {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("FindCoordinator again");

    // The coordinator forgot the member: a new member id.
    script.lock().unwrap().heartbeat_errors.push_back(25);
    seen.clear();
    let j3 = next_joined(&mut events, &mut seen).await;
    assert_eq!(
        j3.generation,
        j2.generation + 1,
        "no rebalance for NOT_COORDINATOR"
    );
    assert_ne!(j3.member_id, j2.member_id);
    assert!(seen.iter().any(|e| matches!(
        e,
        GroupEvent::Rebalancing {
            reason: RebalanceReason::UnknownMember
        }
    )));
    member.leave().await;
}

#[tokio::test]
async fn unknown_heartbeat_errors_are_reported_and_retried() {
    let script = Arc::new(Mutex::new(Script::default()));
    let addr = fake_coordinator(script.clone()).await;
    let backoff = Duration::from_millis(300);
    let config = with_fixed_backoff(config(&addr), backoff);
    let (member, mut events) = GroupMember::start(config, Arc::new(Solo)).unwrap();
    let mut seen = Vec::new();
    next_joined(&mut events, &mut seen).await;
    script.lock().unwrap().heartbeat_errors.push_back(12345);
    loop {
        match next_event(&mut events).await {
            GroupEvent::Error(GroupError::Broker { api, code, .. }) => {
                assert_eq!((api, code), ("Heartbeat", ErrorCode(12345)));
                assert_eq!(code.to_string(), "unknown error code 12345");
                break;
            }
            GroupEvent::Stopped { error } => panic!("stopped: {error:?}"),
            _ => {}
        }
    }
    assert!(member.status().generation >= 1);
    // The next heartbeat waits `retry.backoff.ms` (jittered by 20 %), not
    // the heartbeat interval.
    let gap = until(&script, "no heartbeat again", |s| {
        let error_at = s.heartbeat_error_at.expect("the error was answered");
        let next = s.heartbeat_at.iter().find(|at| **at > error_at)?;
        Some(*next - error_at)
    })
    .await;
    assert!(gap >= backoff * 3 / 4, "retried after {gap:?}");
    member.leave().await;
}

#[tokio::test]
async fn a_fenced_member_stops_reporting_its_work_and_rejoins() {
    let script = Arc::new(Mutex::new(Script::default()));
    let addr = fake_coordinator(script.clone()).await;
    let mut config = config(&addr);
    config.session_timeout = Duration::from_millis(1000);
    let (member, mut events) = GroupMember::start(config, Arc::new(Solo)).unwrap();
    let mut seen = Vec::new();
    let j = next_joined(&mut events, &mut seen).await;
    assert_eq!(j.owned.connectors(), ["c"]);
    let cut = std::time::Instant::now();
    member.simulate_unreachable_coordinator(true);
    match next_event(&mut events).await {
        GroupEvent::Fenced {
            since_last_heartbeat,
            ..
        } => {
            assert!(since_last_heartbeat >= Duration::from_millis(1000));
            assert!(
                cut.elapsed() >= Duration::from_millis(900),
                "{:?}",
                cut.elapsed()
            );
        }
        other => panic!("expected Fenced, got {other:?}"),
    }
    assert!(member.status().fenced);
    assert!(member.is_fenced(), "nothing may start on this worker now");
    assert!(matches!(
        next_event(&mut events).await,
        GroupEvent::Rebalancing {
            reason: RebalanceReason::Fenced
        }
    ));
    member.simulate_unreachable_coordinator(false);
    let again = next_joined(&mut events, &mut seen).await;
    // This coordinator never expires members: same id, next generation.
    assert_eq!(again.member_id, j.member_id);
    assert_eq!(again.generation, j.generation + 1);
    assert!(!member.status().fenced);
    assert!(!member.is_fenced(), "joined again: work may start");
    // The rejoin reported no current assignment.
    let offered = script.lock().unwrap().metadata.clone();
    let metadata = connect_distributed::protocol::WorkerMetadata::decode(&offered).unwrap();
    assert_eq!(metadata.assignment, None);
    member.leave().await;
}

/// An aborted member (a crash, as far as the group can tell) closes every
/// connection it had, its heartbeat's too, without a LeaveGroup: the
/// coordinator's session timer, not a background task left running,
/// decides when it is gone.
#[tokio::test]
async fn an_aborted_member_closes_all_its_connections() {
    let script = Arc::new(Mutex::new(Script::default()));
    let addr = fake_coordinator(script.clone()).await;
    let (member, mut events) = GroupMember::start(config(&addr), Arc::new(Solo)).unwrap();
    next_joined(&mut events, &mut Vec::new()).await;
    until(&script, "no heartbeat", |s| {
        (s.heartbeats > 0).then_some(())
    })
    .await;
    member.abort();
    until(&script, "connections still open after the abort", |s| {
        (s.open == 0).then_some(())
    })
    .await;
    let leaves = script.lock().unwrap().leaves.clone();
    assert!(leaves.is_empty(), "a crash sends no LeaveGroup: {leaves:?}");
}

/// No heartbeat goes out before the member has a generation: while its
/// first JoinGroup waits it has no session to keep alive.
#[tokio::test]
async fn no_heartbeat_goes_out_before_the_first_generation() {
    let script = Arc::new(Mutex::new(Script {
        // Each JoinGroup answered after eight heartbeat intervals.
        join_delay: Duration::from_millis(400),
        ..Script::default()
    }));
    let addr = fake_coordinator(script.clone()).await;
    let (member, mut events) = GroupMember::start(config(&addr), Arc::new(Solo)).unwrap();
    let j = next_joined(&mut events, &mut Vec::new()).await;
    until(&script, "no heartbeat", |s| {
        (s.heartbeats > 0).then_some(())
    })
    .await;
    let from = script.lock().unwrap().heartbeat_from.clone();
    assert!(
        from.iter()
            .all(|(g, m)| *g == j.generation && *m == j.member_id),
        "heartbeats from {from:?}, joined as ({}, {})",
        j.generation,
        j.member_id
    );
    member.leave().await;
}

/// A heartbeat answered UNKNOWN_MEMBER_ID (the coordinator expired the
/// member): it forgets its id and generation and joins again as a new
/// member, sending no heartbeat meanwhile under a generation it lost.
#[tokio::test]
async fn an_expired_member_joins_again_as_a_new_member() {
    let script = Arc::new(Mutex::new(Script::default()));
    let addr = fake_coordinator(script.clone()).await;
    let (member, mut events) = GroupMember::start(config(&addr), Arc::new(Solo)).unwrap();
    let j = next_joined(&mut events, &mut Vec::new()).await;
    {
        let mut s = script.lock().unwrap();
        s.heartbeat_errors.push_back(25);
        s.join_delay = Duration::from_millis(400);
    }
    let again = next_joined(&mut events, &mut Vec::new()).await;
    assert_eq!((j.member_id.as_str(), j.generation), ("m-1", 1));
    assert_eq!((again.member_id.as_str(), again.generation), ("m-2", 2));
    let (joins, from) = {
        let s = script.lock().unwrap();
        (s.joins.clone(), s.heartbeat_from.clone())
    };
    assert_eq!(joins, ["", "m-1", "", "m-2"]);
    assert!(
        from.iter()
            .all(|h| *h == (1, "m-1".to_owned()) || *h == (2, "m-2".to_owned())),
        "heartbeats from {from:?}"
    );
    member.leave().await;
}

/// REBALANCE_IN_PROGRESS to a SyncGroup: the member joins again at once
/// (the round it was in was replaced); to a JoinGroup: after
/// `retry.backoff.ms`, as Java's member does.
#[tokio::test]
async fn a_rebalance_in_progress_is_rejoined_at_once_after_sync_and_later_after_join() {
    let backoff = Duration::from_millis(2000);
    let script = Arc::new(Mutex::new(Script {
        sync_errors: [27].into(),
        ..Script::default()
    }));
    let addr = fake_coordinator(script.clone()).await;
    let settings = with_fixed_backoff(config(&addr), backoff);
    let (member, mut events) = GroupMember::start(settings, Arc::new(Solo)).unwrap();
    next_joined(&mut events, &mut Vec::new()).await;
    let (joins, join_at, error_at) = {
        let s = script.lock().unwrap();
        (s.joins.clone(), s.join_at.clone(), s.sync_error_at)
    };
    assert_eq!(joins, ["", "m-1", "m-1"]);
    let gap = join_at[2] - error_at.expect("SyncGroup answered an error");
    assert!(
        gap < backoff / 2,
        "joined again {gap:?} after the SyncGroup error"
    );
    member.leave().await;

    let script = Arc::new(Mutex::new(Script {
        join_errors: [27].into(),
        ..Script::default()
    }));
    let addr = fake_coordinator(script.clone()).await;
    let settings = with_fixed_backoff(config(&addr), backoff);
    let (member, mut events) = GroupMember::start(settings, Arc::new(Solo)).unwrap();
    next_joined(&mut events, &mut Vec::new()).await;
    let join_at = script.lock().unwrap().join_at.clone();
    let gap = join_at[1] - join_at[0];
    assert!(
        gap >= backoff * 3 / 4,
        "joined again {gap:?} after the JoinGroup error"
    );
    member.leave().await;
}

/// A coordinator found again (here after NOT_COORDINATOR to a JoinGroup)
/// gets new connections: the heartbeats leave the one opened to the
/// coordinator as it was found before.
#[tokio::test]
async fn heartbeats_move_to_a_coordinator_found_again() {
    let script = Arc::new(Mutex::new(Script::default()));
    let addr = fake_coordinator(script.clone()).await;
    let (member, mut events) = GroupMember::start(config(&addr), Arc::new(Solo)).unwrap();
    let first = next_joined(&mut events, &mut Vec::new()).await;
    until(&script, "no heartbeat", |s| {
        (s.heartbeats > 0).then_some(())
    })
    .await;
    {
        let mut s = script.lock().unwrap();
        s.heartbeat_errors.push_back(27);
        s.join_errors.push_back(16);
    }
    let again = next_joined(&mut events, &mut Vec::new()).await;
    assert!(again.generation > first.generation);
    let finds = script.lock().unwrap().find_coordinator;
    assert!(finds >= 2, "found again: {finds}");
    let conns = until(&script, "no heartbeat after finding it again", |s| {
        s.heartbeat_conn
            .iter()
            .any(|(_, f)| *f == finds)
            .then(|| s.heartbeat_conn.clone())
    })
    .await;
    let (before, after): (Vec<_>, Vec<_>) = conns.iter().partition(|(_, f)| *f < finds);
    for (conn, _) in &after {
        assert!(
            before.iter().all(|(c, _)| c != conn),
            "a heartbeat on connection {conn}, opened before: {conns:?}"
        );
    }
    member.leave().await;
}

/// A member that leaves for a while (a worker behind the config topic)
/// sends LeaveGroup with its id, has no generation while out, and joins
/// again as a new member after the back-off.
#[tokio::test]
async fn a_member_that_leaves_for_a_while_joins_again_as_a_new_member() {
    let script = Arc::new(Mutex::new(Script::default()));
    let addr = fake_coordinator(script.clone()).await;
    let (member, mut events) = GroupMember::start(config(&addr), Arc::new(Solo)).unwrap();
    let j = next_joined(&mut events, &mut Vec::new()).await;
    member.leave_for("behind the config topic", Duration::from_millis(1500));
    let leaves = until(&script, "no LeaveGroup", |s| {
        (!s.leaves.is_empty()).then(|| s.leaves.clone())
    })
    .await;
    assert_eq!(leaves, std::slice::from_ref(&j.member_id));
    let deadline = tokio::time::Instant::now() + DEADLINE;
    while member.status().generation != -1 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "still generation {} after leaving",
            member.status().generation
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let again = next_joined(&mut events, &mut Vec::new()).await;
    assert_ne!(again.member_id, j.member_id, "a new member");
    member.leave().await;
}

/// A broker that takes only the flexible SyncGroup v5 and LeaveGroup v5
/// (newer brokers raise minimum versions): the member sends its
/// protocol type and name with SyncGroup and its reason with LeaveGroup,
/// and waits for the LeaveGroup's answer before it is out.
#[tokio::test]
async fn a_broker_taking_only_flexible_versions_is_joined_and_left() {
    let script = Arc::new(Mutex::new(Script {
        flexible_only: true,
        leave_delay: Duration::from_millis(300),
        ..Script::default()
    }));
    let addr = fake_coordinator(script.clone()).await;
    let (member, mut events) = GroupMember::start(config(&addr), Arc::new(Solo)).unwrap();
    let j = next_joined(&mut events, &mut Vec::new()).await;
    assert_eq!(j.owned.connectors(), ["c"]);
    let started = tokio::time::Instant::now();
    member.leave().await;
    let waited = started.elapsed();
    let s = script.lock().unwrap();
    assert_eq!(
        s.sync_protocols,
        [(Some("connect".to_owned()), Some("sessioned".to_owned()))]
    );
    assert_eq!(s.leaves, ["m-1"]);
    assert_eq!(s.leave_reasons, [Some("the worker is stopping".to_owned())]);
    assert!(
        waited >= Duration::from_millis(300),
        "left after {waited:?}"
    );
}

/// A JoinGroup may take as long as the rebalance (the coordinator waits
/// for every member), longer than `request.timeout.ms`: the member waits
/// `rebalance.timeout.ms` plus a lapse for its answer, as Java's does.
#[tokio::test]
async fn a_join_group_may_take_longer_than_a_request() {
    let script = Arc::new(Mutex::new(Script {
        join_delay: Duration::from_millis(1500),
        ..Script::default()
    }));
    let addr = fake_coordinator(script.clone()).await;
    let mut config = config(&addr);
    config.request_timeout = Duration::from_millis(500);
    config.rebalance_timeout = Duration::from_secs(6);
    let (member, mut events) = GroupMember::start(config, Arc::new(Solo)).unwrap();
    let mut seen = Vec::new();
    let j = next_joined(&mut events, &mut seen).await;
    assert_eq!(j.generation, 1, "joined at the first try: {seen:?}");
    assert_eq!(script.lock().unwrap().joins, ["", "m-1"]);
    member.leave().await;
}

/// A coordinator that closes every connection: the member's
/// reconnections wait `retry.backoff.ms` between attempts instead of
/// hammering it (5 connections in 1.5 s here).
#[tokio::test]
async fn reconnections_to_a_coordinator_that_closes_them_back_off() {
    let script = Arc::new(Mutex::new(Script::default()));
    let addr = fake_coordinator(script.clone()).await;
    let backoff = Duration::from_millis(300);
    let config = with_fixed_backoff(config(&addr), backoff);
    let (member, mut events) = GroupMember::start(config, Arc::new(Solo)).unwrap();
    next_joined(&mut events, &mut Vec::new()).await;
    until(&script, "no heartbeat", |s| {
        (s.heartbeats > 0).then_some(())
    })
    .await;
    let before = {
        let mut s = script.lock().unwrap();
        s.refuse = true;
        s.accepted
    };
    // Over 1.5 s, five back-offs: a few attempts, not one per 20 ms tick
    // of the member's loops (75).
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let attempts = script.lock().unwrap().accepted - before;
    assert!(attempts <= 25, "{attempts} connections in 1.5 s");
    member.abort();
}

/// Heartbeats go every `heartbeat.interval.ms`, the first one too (not at
/// every turn of the member's loop), over one connection kept open.
#[tokio::test]
async fn heartbeats_are_spaced_by_the_heartbeat_interval() {
    let script = Arc::new(Mutex::new(Script::default()));
    let addr = fake_coordinator(script.clone()).await;
    let mut config = config(&addr);
    let interval = Duration::from_millis(300);
    config.heartbeat_interval = interval;
    let started = tokio::time::Instant::now();
    let (member, mut events) = GroupMember::start(config, Arc::new(Solo)).unwrap();
    next_joined(&mut events, &mut Vec::new()).await;
    until(&script, "no heartbeats", |s| {
        (s.heartbeats >= 4).then_some(())
    })
    .await;
    let (at, accepted) = {
        let s = script.lock().unwrap();
        (s.heartbeat_at.clone(), s.accepted)
    };
    // Discovery, the member's own and one kept for the heartbeats.
    assert!(accepted <= 3, "{accepted} connections for 4 heartbeats");
    assert!(
        at[0] >= started + interval,
        "the first heartbeat came {:?} after the start",
        at[0] - started
    );
    for pair in at.windows(2) {
        // Half the interval: arrival times carry the network's jitter.
        assert!(
            pair[1] - pair[0] >= interval / 2,
            "heartbeats {:?} apart",
            pair[1] - pair[0]
        );
    }
    member.leave().await;
}

#[tokio::test]
async fn a_refused_session_timeout_stops_the_member() {
    let script = Arc::new(Mutex::new(Script {
        join_errors: [26].into(),
        ..Script::default()
    }));
    let addr = fake_coordinator(script.clone()).await;
    let (_member, mut events) = GroupMember::start(config(&addr), Arc::new(Solo)).unwrap();
    loop {
        if let GroupEvent::Stopped { error } = next_event(&mut events).await {
            let error = error.expect("an error");
            assert!(
                matches!(
                    error,
                    GroupError::Broker {
                        code: ErrorCode::INVALID_SESSION_TIMEOUT,
                        ..
                    }
                ),
                "{error}"
            );
            assert!(error.is_fatal());
            break;
        }
    }
}

#[tokio::test]
async fn an_unreachable_coordinator_is_retried_and_reported() {
    // A port nobody listens on.
    let addr = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().to_string()
    };
    let (member, mut events) = GroupMember::start(config(&addr), Arc::new(Solo)).unwrap();
    for _ in 0..2 {
        match next_event(&mut events).await {
            GroupEvent::Error(GroupError::NoCoordinator { .. }) => {}
            other => panic!("expected NoCoordinator, got {other:?}"),
        }
    }
    member.leave().await;
    assert!(matches!(
        events.recv().await,
        Some(GroupEvent::Stopped { error: None })
    ));
}

#[tokio::test]
async fn a_jks_truststore_is_refused_with_the_way_out() {
    let err = GroupConfig::from_properties([
        ("group.id", "g"),
        ("bootstrap.servers", "localhost:9093"),
        ("security.protocol", "SSL"),
        ("ssl.truststore.location", "/etc/kafka/truststore.jks"),
        ("ssl.truststore.password", "changeit"),
    ])
    .unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("ssl.truststore.type") && msg.contains("keytool -exportcert"),
        "{msg}"
    );
    assert!(!msg.contains("changeit"), "{msg}");
}

fn sasl_config(addr: &str, user: &str, password: &str) -> GroupConfig {
    let jaas = format!(
        "org.apache.kafka.common.security.plain.PlainLoginModule required username=\"{user}\" password=\"{password}\";"
    );
    let parsed = GroupConfig::from_properties([
        ("group.id", "fake-group"),
        ("bootstrap.servers", addr),
        ("security.protocol", "SASL_PLAINTEXT"),
        ("sasl.mechanism", "PLAIN"),
        ("sasl.jaas.config", jaas.as_str()),
    ])
    .unwrap();
    let mut c = config(addr);
    c.security = parsed.security;
    c
}

fn sasl_script(user: &str, password: &str) -> Script {
    Script {
        sasl: Some((user.into(), password.into())),
        ..Script::default()
    }
}

#[tokio::test]
async fn sasl_plain_authenticates_every_connection_and_joins() {
    let script = Arc::new(Mutex::new(sasl_script("alice", "alice-secret")));
    let addr = fake_coordinator(script.clone()).await;
    let config = sasl_config(&addr, "alice", "alice-secret");
    connect_distributed::group::check_brokers(&config)
        .await
        .unwrap();
    let (member, mut events) = GroupMember::start(config, Arc::new(Solo)).unwrap();
    let mut seen = Vec::new();
    let j = next_joined(&mut events, &mut seen).await;
    assert_eq!(j.member_id, "m-1");
    assert!(j.is_leader);
    let versions = member.status().api_versions;
    assert!(
        versions.contains_key(&GroupApi::SaslHandshake),
        "{versions:?}"
    );
    member.leave().await;
    let s = script.lock().unwrap();
    // The check, the FindCoordinator connection and the coordinator's.
    assert!(s.sasl_ok >= 3, "{}", s.sasl_ok);
    assert_eq!(s.sasl_refused, 0);
    assert_eq!(s.leaves, ["m-1"]);
}

#[tokio::test]
async fn a_plaintext_member_is_not_let_in_by_a_sasl_listener() {
    let script = Arc::new(Mutex::new(sasl_script("alice", "alice-secret")));
    let addr = fake_coordinator(script.clone()).await;
    let (member, mut events) = GroupMember::start(config(&addr), Arc::new(Solo)).unwrap();
    match next_event(&mut events).await {
        GroupEvent::Error(GroupError::NoCoordinator { .. }) => {}
        other => panic!("expected NoCoordinator, got {other:?}"),
    }
    member.leave().await;
}

#[tokio::test]
async fn wrong_sasl_credentials_are_a_typed_fatal_error_naming_the_jaas_key() {
    let script = Arc::new(Mutex::new(sasl_script("alice", "alice-secret")));
    let addr = fake_coordinator(script.clone()).await;
    let config = sasl_config(&addr, "alice", "wrong");
    let e = connect_distributed::group::check_brokers(&config)
        .await
        .unwrap_err();
    assert!(
        matches!(&e, GroupError::Authentication { username, message: Some(_), .. } if username == "alice"),
        "{e:?}"
    );
    assert!(e.is_fatal());
    let msg = e.to_string();
    assert!(
        msg.contains("sasl.jaas.config") && msg.contains("Invalid username or password"),
        "{msg}"
    );
    assert!(!msg.contains("wrong"), "the password leaked: {msg}");
    // The member stops with the same error rather than retrying.
    let (_member, mut events) = GroupMember::start(config, Arc::new(Solo)).unwrap();
    loop {
        match next_event(&mut events).await {
            GroupEvent::Stopped { error } => {
                let error = error.expect("an error");
                assert!(
                    matches!(error, GroupError::Authentication { .. }),
                    "{error}"
                );
                break;
            }
            GroupEvent::Joined(_) => panic!("joined with a wrong password"),
            _ => {}
        }
    }
    assert_eq!(script.lock().unwrap().sasl_ok, 0);
}

#[tokio::test]
async fn a_broker_without_plain_is_a_typed_error_naming_the_mechanism_key() {
    let script = Arc::new(Mutex::new(Script {
        sasl_mechanisms: Some(vec!["SCRAM-SHA-512"]),
        ..sasl_script("alice", "alice-secret")
    }));
    let addr = fake_coordinator(script.clone()).await;
    let e = connect_distributed::group::check_brokers(&sasl_config(&addr, "alice", "alice-secret"))
        .await
        .unwrap_err();
    assert!(
        matches!(&e, GroupError::SaslMechanism { enabled, .. } if enabled == &["SCRAM-SHA-512"]),
        "{e:?}"
    );
    assert!(e.is_fatal());
    assert!(e.to_string().contains("sasl.mechanism"), "{e}");
}

#[tokio::test]
async fn malformed_sasl_responses_are_wire_errors_not_panics() {
    for garbage in [
        vec![],
        vec![0],
        vec![0, 0, 0xff, 0xff, 0x7f, 0xff, 0xff, 0xff],
        // An error message longer than the frame.
        vec![0, 58, 0x7f, 0xff, b'x'],
    ] {
        let script = Arc::new(Mutex::new(Script {
            sasl_garbage: Some(garbage.clone()),
            ..sasl_script("alice", "alice-secret")
        }));
        let addr = fake_coordinator(script.clone()).await;
        let r =
            connect_distributed::group::check_brokers(&sasl_config(&addr, "alice", "alice-secret"))
                .await;
        // Malformed bytes are a (retriable) wire error, which check_brokers
        // only logs; a readable error code is a typed error. Never a panic,
        // never an authenticated connection.
        match r {
            Ok(()) => {}
            Err(e) => assert!(
                matches!(
                    e,
                    GroupError::Authentication { .. } | GroupError::Broker { .. }
                ),
                "{garbage:?}: {e:?}"
            ),
        }
        assert_eq!(script.lock().unwrap().sasl_ok, 0);
    }
}
