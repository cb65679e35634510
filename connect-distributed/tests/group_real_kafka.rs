//! Group membership against a real Apache Kafka 4.4 broker named by
//! `KAFKA_BOOTSTRAP_SERVERS` (`tools/real-kafka/broker.sh start` runs one;
//! `.ci/run` exports it). Without it every test prints `SKIPPED ...` on the
//! terminal and passes.
//!
//! Each test uses its own group. Members run the real assignor
//! (`assignor::assign`, delay 0) as the leader's callback, behave as Java's
//! herder does (rejoin after a revocation), and the checks wait for events
//! with generous deadlines, never sleep-then-assert. Sessions are 6 s with
//! 500 ms heartbeats.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use connect_distributed::assignor::{
    assign, AssignorConfig, AssignorState, ConfigSnapshot, Member, RoundInput,
};
use connect_distributed::group::{
    GroupApi, GroupConfig, GroupEvent, GroupHandler, GroupMember, HandlerError, Joined,
    LeaderRound, WorkerState,
};
use connect_distributed::protocol::{Assignment, TaskId};
use tokio::sync::watch;

const SESSION: Duration = Duration::from_millis(6000);
const HEARTBEAT: Duration = Duration::from_millis(500);
const DEADLINE: Duration = Duration::from_secs(60);

use connect_test_support::real_bootstrap;

/// A line on the terminal, outside libtest's capture.
fn report(line: String) {
    let _ = writeln!(std::io::stderr(), "{line}");
}

fn unique_group(test: &str) -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("connect-rs-{test}-{}-{nanos}", std::process::id())
}

/// The connectors every test cluster runs: `c1` with 3 tasks, `c2` with 2.
fn snapshot() -> ConfigSnapshot {
    ConfigSnapshot {
        offset: 5,
        connectors: BTreeMap::from([("c1".to_owned(), 3), ("c2".to_owned(), 2)]),
    }
}

fn all_items() -> (Vec<String>, Vec<TaskId>) {
    let s = snapshot();
    let connectors = s.connectors.keys().cloned().collect();
    let tasks = s
        .connectors
        .iter()
        .flat_map(|(c, n)| (0..*n).map(move |t| TaskId::new(c.clone(), t)))
        .collect();
    (connectors, tasks)
}

type Computed = Arc<Mutex<BTreeMap<i32, BTreeMap<String, Vec<u8>>>>>;

/// A worker: fixed URL and config, the real assignor when it leads.
struct TestWorker {
    url: String,
    state: Mutex<AssignorState>,
    computed: Computed,
}

#[async_trait::async_trait]
impl GroupHandler for TestWorker {
    async fn worker_state(&self) -> Result<WorkerState, HandlerError> {
        Ok(WorkerState {
            url: self.url.clone(),
            config_offset: snapshot().offset,
        })
    }

    async fn assign(&self, round: &LeaderRound) -> Result<BTreeMap<String, Vec<u8>>, HandlerError> {
        let members: Vec<Member> = round
            .members
            .iter()
            .map(|m| Member::from_metadata(m.id.clone(), &m.metadata))
            .collect();
        let snapshot = snapshot();
        let now_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis() as i64)
            .unwrap_or(0);
        let input = RoundInput {
            leader_id: &round.leader_id,
            members: &members,
            snapshot: &snapshot,
            protocol: round.protocol,
            last_completed_generation: round.last_completed_generation,
            generation: round.generation,
            now_ms,
        };
        let mut state = self.state.lock().unwrap();
        let (result, next) = assign(&state, &AssignorConfig { max_delay_ms: 0 }, &input)?;
        *state = next;
        let encoded = result.encode()?;
        self.computed
            .lock()
            .unwrap()
            .insert(round.generation, encoded.clone());
        Ok(encoded)
    }
}

/// What a test sees of one worker.
#[derive(Clone, Debug, Default)]
struct View {
    last: Option<Joined>,
    fenced_at: Option<Instant>,
    fenced_since: Option<Duration>,
    stopped: Option<Option<String>>,
    errors: Vec<String>,
}

struct Node {
    member: Arc<Mutex<Option<GroupMember>>>,
    view: Arc<Mutex<View>>,
}

struct Cluster {
    bootstrap: String,
    group: String,
    computed: Computed,
    changed: Arc<watch::Sender<u64>>,
    nodes: Vec<Node>,
}

impl Cluster {
    fn new(bootstrap: String, test: &str) -> Cluster {
        Cluster {
            bootstrap,
            group: unique_group(test),
            computed: Computed::default(),
            changed: Arc::new(watch::channel(0).0),
            nodes: Vec::new(),
        }
    }

    /// Starts a worker; its events feed its view, and it rejoins after
    /// revocations and delays as Java's herder does.
    fn add(&mut self) -> usize {
        let n = self.nodes.len();
        let mut config = GroupConfig::new(self.group.clone(), &self.bootstrap);
        config.session_timeout = SESSION;
        config.heartbeat_interval = HEARTBEAT;
        config.rebalance_timeout = Duration::from_secs(20);
        config.client_id = format!("worker-{n}");
        let worker = Arc::new(TestWorker {
            url: format!("http://w{n}:8083/"),
            state: Mutex::new(AssignorState::default()),
            computed: self.computed.clone(),
        });
        let (member, mut events) = GroupMember::start(config, worker).expect("start member");
        let member = Arc::new(Mutex::new(Some(member)));
        let view = Arc::new(Mutex::new(View::default()));
        let (m, v, changed) = (member.clone(), view.clone(), self.changed.clone());
        tokio::spawn(async move {
            while let Some(event) = events.recv().await {
                match event {
                    GroupEvent::Joined(j) => {
                        let delay = j.received.delay;
                        if j.has_revocations() || j.received.failed() {
                            if let Some(m) = m.lock().unwrap().as_ref() {
                                m.request_rejoin("revoked work stopped");
                            }
                        } else if delay > 0 {
                            let m = m.clone();
                            tokio::spawn(async move {
                                tokio::time::sleep(Duration::from_millis(delay as u64)).await;
                                if let Some(m) = m.lock().unwrap().as_ref() {
                                    m.request_rejoin("scheduled rebalance");
                                }
                            });
                        }
                        let mut v = v.lock().unwrap();
                        v.last = Some(*j);
                        v.fenced_at = None;
                    }
                    GroupEvent::Fenced {
                        since_last_heartbeat,
                        ..
                    } => {
                        let mut v = v.lock().unwrap();
                        v.fenced_at = Some(Instant::now());
                        v.fenced_since = Some(since_last_heartbeat);
                        v.last = None;
                    }
                    GroupEvent::Stopped { error } => {
                        v.lock().unwrap().stopped = Some(error.map(|e| e.to_string()));
                    }
                    GroupEvent::Error(e) => v.lock().unwrap().errors.push(e.to_string()),
                    _ => {}
                }
                changed.send_modify(|c| *c += 1);
            }
        });
        self.nodes.push(Node { member, view });
        n
    }

    fn views(&self) -> Vec<View> {
        self.nodes
            .iter()
            .map(|n| n.view.lock().unwrap().clone())
            .collect()
    }

    /// Waits until `pred` holds for the views (re-checked on every event).
    async fn wait_for(&self, what: &str, pred: impl Fn(&Cluster, &[View]) -> bool) -> Vec<View> {
        let mut rx = self.changed.subscribe();
        let waited = tokio::time::timeout(DEADLINE, async {
            loop {
                let views = self.views();
                if pred(self, &views) {
                    return views;
                }
                let _ = rx.changed().await;
            }
        })
        .await;
        match waited {
            Ok(views) => views,
            Err(_) => panic!(
                "timed out after {DEADLINE:?} waiting for {what}: {:#?}",
                self.views()
            ),
        }
    }

    /// Whether the workers in `live` share one generation whose
    /// assignments are the leader's, with nothing revoked, and together own
    /// every connector and task exactly once.
    fn settled(&self, views: &[View], live: &[usize]) -> bool {
        let joined: Vec<&Joined> = live
            .iter()
            .filter_map(|&i| views[i].last.as_ref())
            .collect();
        if joined.len() != live.len() {
            return false;
        }
        let generation = joined[0].generation;
        if joined
            .iter()
            .any(|j| j.generation != generation || j.has_revocations())
        {
            return false;
        }
        let computed = self.computed.lock().unwrap();
        let Some(round) = computed.get(&generation) else {
            return false;
        };
        if round.len() != live.len() {
            return false;
        }
        for j in &joined {
            let Some(bytes) = round.get(&j.member_id) else {
                return false;
            };
            if Assignment::decode(bytes).ok().as_ref() != Some(&j.received) {
                return false;
            }
        }
        let mut connectors: Vec<String> = joined
            .iter()
            .flat_map(|j| j.owned.connectors().into_iter().map(str::to_owned))
            .collect();
        let mut tasks: Vec<TaskId> = joined.iter().flat_map(|j| j.owned.tasks()).collect();
        connectors.sort();
        tasks.sort();
        (connectors, tasks) == all_items()
    }

    /// Three members joined and settled; the generation they settled in.
    async fn three_settled(&mut self) -> i32 {
        for _ in 0..3 {
            self.add();
        }
        let views = self
            .wait_for("3 members settled", |c, v| c.settled(v, &[0, 1, 2]))
            .await;
        views[0].last.as_ref().unwrap().generation
    }

    /// Members 0 and 1 settled in a generation after `before`; that generation.
    async fn survivors_took_over(&self, before: i32) -> i32 {
        let views = self
            .wait_for("the survivors took over", |c, v| {
                v[0].last.as_ref().is_some_and(|j| j.generation > before) && c.settled(v, &[0, 1])
            })
            .await;
        views[0].last.as_ref().unwrap().generation
    }

    fn member(&self, i: usize) -> Option<GroupMember> {
        self.nodes[i].member.lock().unwrap().take()
    }

    fn with_member<T>(&self, i: usize, f: impl FnOnce(&GroupMember) -> T) -> T {
        f(self.nodes[i]
            .member
            .lock()
            .unwrap()
            .as_ref()
            .expect("member"))
    }

    async fn shutdown(&self) {
        for i in 0..self.nodes.len() {
            if let Some(m) = self.member(i) {
                m.leave().await;
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_members_elect_one_leader_and_share_its_assignment_then_a_fourth_joins() {
    let Some(bootstrap) = real_bootstrap(
        "three_members_elect_one_leader_and_share_its_assignment_then_a_fourth_joins",
    ) else {
        return;
    };
    let mut cluster = Cluster::new(bootstrap, "three");
    let start = Instant::now();
    for _ in 0..3 {
        cluster.add();
    }
    let views = cluster
        .wait_for("3 members settled", |c, v| c.settled(v, &[0, 1, 2]))
        .await;
    let took = start.elapsed();
    let joined: Vec<&Joined> = views.iter().map(|v| v.last.as_ref().unwrap()).collect();
    let leaders: Vec<_> = joined.iter().filter(|j| j.is_leader).collect();
    assert_eq!(leaders.len(), 1, "exactly one leader: {joined:#?}");
    let leader = &leaders[0].member_id;
    for j in &joined {
        assert_eq!(&j.leader_id, leader);
        assert_eq!(j.generation, joined[0].generation);
        assert_eq!(
            &j.received.leader, leader,
            "the assignment names the leader"
        );
        assert_eq!(j.received.version, 2, "sessioned elected");
    }
    let versions = cluster.with_member(0, |m| m.status().api_versions);
    let retried: usize = views.iter().map(|v| v.errors.len()).sum();
    report(format!(
        "group_real_kafka: 3 members settled in {took:?} at generation {} (leader {leader}, \
         {retried} retried errors); versions {versions:?}",
        joined[0].generation
    ));
    // Kafka 4.4 still takes librdkafka's versions.
    let expected = BTreeMap::from([
        (GroupApi::ApiVersions, 2),
        (GroupApi::FindCoordinator, 2),
        (GroupApi::JoinGroup, 5),
        (GroupApi::SyncGroup, 3),
        (GroupApi::Heartbeat, 3),
        (GroupApi::LeaveGroup, 1),
    ]);
    assert_eq!(versions, expected);

    // A fourth worker joins: the leader revokes to balance, the workers
    // that lost work rejoin, and the next round hands it to the newcomer.
    let generation = joined[0].generation;
    let added = Instant::now();
    cluster.add();
    let views = cluster
        .wait_for("4 members settled", |c, v| c.settled(v, &[0, 1, 2, 3]))
        .await;
    let last = views[3].last.as_ref().unwrap();
    assert!(
        !last.owned.assigned.is_empty(),
        "the newcomer got work: {last:#?}"
    );
    let revoking_rounds = cluster
        .computed
        .lock()
        .unwrap()
        .range(generation + 1..)
        .filter(|(_, round)| {
            round
                .values()
                .any(|b| Assignment::decode(b).is_ok_and(|a| !a.revoked.is_empty()))
        })
        .count();
    assert!(revoking_rounds >= 1, "balancing revoked first");
    report(format!(
        "group_real_kafka: a 4th member settled in {:?} (generation {generation} -> {}, {revoking_rounds} revoking round(s))",
        added.elapsed(),
        last.generation
    ));
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_member_is_replaced_after_the_session_timeout() {
    let Some(bootstrap) = real_bootstrap("a_killed_member_is_replaced_after_the_session_timeout")
    else {
        return;
    };
    let mut cluster = Cluster::new(bootstrap, "killed");
    let before = cluster.three_settled().await;
    // Kill worker 2: no LeaveGroup, sockets closed.
    let killed = Instant::now();
    cluster.member(2).expect("member").abort();
    let after = cluster.survivors_took_over(before).await;
    let took = killed.elapsed();
    report(format!(
        "group_real_kafka: after a kill, 2 survivors own everything after {took:?} (generation {before} -> {after})"
    ));
    assert!(
        took >= SESSION - HEARTBEAT,
        "the coordinator waits for the session timeout: {took:?}"
    );
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leaving_member_is_replaced_at_once() {
    let Some(bootstrap) = real_bootstrap("a_leaving_member_is_replaced_at_once") else {
        return;
    };
    let mut cluster = Cluster::new(bootstrap, "leave");
    let before = cluster.three_settled().await;
    let left = Instant::now();
    cluster.member(2).expect("member").leave().await;
    let leave_took = left.elapsed();
    let after = cluster.survivors_took_over(before).await;
    let took = left.elapsed();
    report(format!(
        "group_real_kafka: after LeaveGroup ({leave_took:?}), 2 survivors own everything after {took:?} (generation {before} -> {after})"
    ));
    assert!(
        took < SESSION / 2,
        "a graceful leave rebalances well under the session timeout: {took:?}"
    );
    let stopped = cluster
        .wait_for("the leaver's Stopped event", |_, v| v[2].stopped.is_some())
        .await;
    assert_eq!(stopped[2].stopped, Some(None), "left without error");
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_cut_off_from_the_coordinator_fences_itself() {
    let Some(bootstrap) = real_bootstrap("a_member_cut_off_from_the_coordinator_fences_itself")
    else {
        return;
    };
    let mut cluster = Cluster::new(bootstrap, "fenced");
    for _ in 0..2 {
        cluster.add();
    }
    cluster
        .wait_for("2 members settled", |c, v| c.settled(v, &[0, 1]))
        .await;
    let paused = Instant::now();
    cluster.with_member(1, |m| m.simulate_unreachable_coordinator(true));
    let views = cluster
        .wait_for("worker 1 fenced", |_, v| v[1].fenced_at.is_some())
        .await;
    let took = views[1].fenced_at.unwrap() - paused;
    let since = views[1].fenced_since.unwrap();
    report(format!(
        "group_real_kafka: coordinator unreachable, Fenced after {took:?} ({since:?} since the last heartbeat)"
    ));
    assert!(since >= SESSION, "fenced only after the session: {since:?}");
    assert!(
        took >= SESSION - HEARTBEAT - Duration::from_millis(100)
            && took < SESSION + Duration::from_secs(2),
        "fenced about one session after the last heartbeat: {took:?}"
    );
    // The coordinator expired it too: worker 0 takes everything.
    cluster
        .wait_for("worker 0 owns everything", |c, v| c.settled(v, &[0]))
        .await;
    // Reachable again: the fenced worker rejoins as a new member.
    let resumed = Instant::now();
    cluster.with_member(1, |m| m.simulate_unreachable_coordinator(false));
    cluster
        .wait_for("both settled again", |c, v| c.settled(v, &[0, 1]))
        .await;
    report(format!(
        "group_real_kafka: after resuming, both settled again in {:?}",
        resumed.elapsed()
    ));
    cluster.shutdown().await;
}
