//! [`GroupMember`]: one worker's membership in the `connect` group.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::leave_group_request::MemberIdentity;
use kafka_protocol::messages::sync_group_request::SyncGroupRequestAssignment;
use kafka_protocol::messages::{
    FindCoordinatorRequest, FindCoordinatorResponse, GroupId, HeartbeatRequest, HeartbeatResponse,
    JoinGroupRequest, JoinGroupResponse, LeaveGroupRequest, LeaveGroupResponse, SyncGroupRequest,
    SyncGroupResponse,
};
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion, StrBytes};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tracing::Instrument;
// tokio's clock, not std's: the same wall clock in production, and the
// paused, simulated one under `start_paused` (the cluster simulation).
use tokio::time::Instant;

use super::config::{connect_address, GroupConfig};
use super::conn::Connection;
use super::error::{ErrorCode, GroupError, WireError};
use super::wire::{GroupApi, HasErrorCode, Reply};
use crate::protocol::{
    join_group_protocols, Assignment, ConnectorAssignment, SubProtocol, TaskId, WorkerMetadata,
    PROTOCOL_TYPE,
};

/// An error from a [`GroupHandler`].
pub type HandlerError = Box<dyn std::error::Error + Send + Sync>;

/// What a worker advertises in each JoinGroup besides its assignment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkerState {
    /// The worker's REST URL (what other workers forward requests to).
    pub url: String,
    /// The newest config topic offset the worker has read.
    pub config_offset: i64,
}

/// One member of a round, as the leader sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RoundMember {
    /// Its member id.
    pub id: String,
    /// Its metadata for the elected sub-protocol, decoded.
    pub metadata: WorkerMetadata,
    /// The same metadata as it was on the wire.
    pub raw: Bytes,
}

/// What the leader gets to compute the assignments of a round.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaderRound {
    /// This round's generation.
    pub generation: i32,
    /// The leader's own member id (one of `members`).
    pub leader_id: String,
    /// The sub-protocol the broker elected.
    pub protocol: SubProtocol,
    /// The generation of the last round this worker completed (-1 if
    /// none): Java's `lastCompletedGenerationId`, an input of
    /// [`assign`](crate::assignor::assign).
    pub last_completed_generation: i32,
    /// Every member, in the broker's order.
    pub members: Vec<RoundMember>,
}

/// The worker side of group membership: what to join with, and, when the
/// broker makes this worker the leader, the assignment.
///
/// Both are called from the member's own task; a slow `assign` delays the
/// round (up to `rebalance.timeout.ms`), not the heartbeats.
#[async_trait]
pub trait GroupHandler: Send + Sync + 'static {
    /// The REST URL and config offset for the next JoinGroup. The current
    /// assignment is added by the member (Java's assignment snapshot).
    ///
    /// With the eager sub-protocol (`connect.protocol=eager`) all work must
    /// be stopped before this returns, as Java's `onJoinPrepare` does.
    async fn worker_state(&self) -> Result<WorkerState, HandlerError>;

    /// Leader only: every member's assignment, encoded
    /// ([`Assignment::encode`]), by member id. A member left out gets
    /// empty bytes, which it cannot decode.
    async fn assign(&self, round: &LeaderRound) -> Result<BTreeMap<String, Vec<u8>>, HandlerError>;
}

/// A completed round: this worker's place in the new generation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Joined {
    /// The generation.
    pub generation: i32,
    /// This worker's member id.
    pub member_id: String,
    /// The leader's member id.
    pub leader_id: String,
    /// Whether this worker is the leader.
    pub is_leader: bool,
    /// The elected sub-protocol.
    pub protocol: SubProtocol,
    /// The assignment exactly as the leader sent it. Under the incremental
    /// sub-protocols `assigned` holds only what is new.
    pub received: Assignment,
    /// What the worker should run now (Java's assignment snapshot): under
    /// the incremental sub-protocols, what it owned minus the revoked plus
    /// the newly assigned; under `default`, `received`. It is what the
    /// next JoinGroup reports as the current assignment.
    pub owned: Assignment,
}

impl Joined {
    /// Whether the leader revoked something (the herder stops it, then
    /// asks for a rejoin, as Java's does).
    pub fn has_revocations(&self) -> bool {
        !self.received.revoked.is_empty()
    }
}

/// Why the member is rejoining.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RebalanceReason {
    /// [`GroupMember::request_rejoin`] was called.
    Requested(String),
    /// A heartbeat answered `REBALANCE_IN_PROGRESS`: another member joined
    /// or left.
    CoordinatorRequested,
    /// A heartbeat answered `ILLEGAL_GENERATION`.
    IllegalGeneration,
    /// A heartbeat answered `UNKNOWN_MEMBER_ID`: the coordinator dropped
    /// this member (after its session expired); it joins as a new member.
    UnknownMember,
    /// The member fenced itself ([`GroupEvent::Fenced`]); it rejoins to
    /// report that it runs nothing.
    Fenced,
}

/// What the herder learns from its [`GroupMember`], in order, through the
/// receiver [`GroupMember::start`] returns.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum GroupEvent {
    /// A round completed. Start `owned`, stop what is revoked; with
    /// revocations, rejoin afterwards ([`GroupMember::request_rejoin`]);
    /// with a `delay` in the assignment, rejoin after it.
    Joined(Box<Joined>),
    /// The member is rejoining. Under the incremental sub-protocols the
    /// worker keeps running its work until a `Joined` revokes it.
    Rebalancing {
        /// Why.
        reason: RebalanceReason,
    },
    /// No request has been answered for `session.timeout.ms` (counted from
    /// its sending; a JoinGroup under way does not hold it off, heartbeats
    /// continue during the join): the coordinator may already
    /// have given this worker's work to others. **The worker must stop all
    /// its connectors and tasks now.** The member then rejoins by itself
    /// (`Rebalancing` with [`RebalanceReason::Fenced`]), as a new member
    /// if the coordinator dropped it, reporting no current assignment; a
    /// `Joined` follows when the coordinator answers again.
    Fenced {
        /// Time since the last successful heartbeat (or round).
        since_last_heartbeat: Duration,
        /// When the coordinator may expire the session and hand the work
        /// to others (it may be past already): the worker's work must
        /// have stopped by then, gracefully or not.
        session_ends: Instant,
    },
    /// Something failed and is being retried (coordinator unreachable, a
    /// broker error, an assignment that does not decode...). Informative.
    Error(GroupError),
    /// The member left the group as [`GroupMember::leave_for`] asked and
    /// joins again, as a new member, after `backoff` (or sooner, when
    /// [`GroupMember::request_rejoin`] asks). A `Joined` that arrives
    /// between the request and this event belongs to the membership the
    /// worker gave up: ignore it.
    Left {
        /// How long the member stays out.
        backoff: Duration,
    },
    /// The member has stopped: after [`GroupMember::leave`] (no error), or
    /// because retrying cannot help (the error). The last event.
    Stopped {
        /// The fatal error, if any.
        error: Option<GroupError>,
    },
}

/// Where the member is in the group protocol.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemberPhase {
    /// Not a member (before the first join, or after leaving).
    Unjoined,
    /// Finding the coordinator or sending JoinGroup.
    Joining,
    /// Waiting for SyncGroup.
    Syncing,
    /// A member of the current generation, heartbeating.
    Stable,
}

/// A snapshot of the member's state ([`GroupMember::status`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemberStatus {
    /// The phase.
    pub phase: MemberPhase,
    /// The generation of the last round joined (-1 if none).
    pub generation: i32,
    /// The member id ("" before the broker gives one).
    pub member_id: String,
    /// The coordinator's address, when known.
    pub coordinator: Option<String>,
    /// Whether the member is fenced (between `Fenced` and the next
    /// `Joined`).
    pub fenced: bool,
    /// The versions negotiated with the coordinator.
    pub api_versions: BTreeMap<GroupApi, i16>,
}

/// Slack added to the rebalance timeout for JoinGroup (Java's
/// `JOIN_GROUP_TIMEOUT_LAPSE`).
const JOIN_TIMEOUT_LAPSE: Duration = Duration::from_secs(5);
/// The longest a LeaveGroup on shutdown may take.
const LEAVE_TIMEOUT: Duration = Duration::from_secs(5);
/// How often the watchdog checks the last heartbeat.
const WATCHDOG_TICK: Duration = Duration::from_millis(50);

enum Command {
    Rejoin(String),
    Leave,
    /// Leave the group, stay out for the backoff, then join again.
    LeaveFor {
        reason: String,
        backoff: Duration,
    },
}

/// A [`Command::LeaveFor`] not yet acted on.
struct PendingLeave {
    reason: String,
    backoff: Duration,
    /// A rejoin asked for after the leave (the worker caught up while a
    /// round delayed the leave): the member still leaves, since the herder
    /// waits for its `Left`, but joins again at once instead of after the
    /// backoff. Dropping it stranded the worker outside the group for the
    /// whole backoff (simulation seeds 42373 and 75886).
    rejoin: Option<String>,
}

impl PendingLeave {
    fn new(reason: String, backoff: Duration) -> PendingLeave {
        PendingLeave {
            reason,
            backoff,
            rejoin: None,
        }
    }
}

/// A rejoin request that arrives while a leave is pending belongs to the
/// leave (see [`PendingLeave::rejoin`]); `None` when there is none.
fn rejoin_after_leave(pending: &mut Option<PendingLeave>, reason: String) -> Option<String> {
    match pending {
        Some(leave) => {
            leave.rejoin = Some(reason);
            None
        }
        None => Some(reason),
    }
}

enum Signal {
    Rejoin {
        generation: i32,
        reason: RebalanceReason,
    },
    ResetMember {
        generation: i32,
    },
    CoordinatorLost {
        epoch: u64,
        error: Option<GroupError>,
    },
}

struct State {
    phase: MemberPhase,
    generation: i32,
    member_id: String,
    coordinator: Option<(String, u64)>,
    epoch: u64,
    /// When the last request the coordinator is known to have received
    /// was sent: its session timer cannot run out before this plus
    /// `session.timeout.ms`.
    last_alive: Instant,
    /// Whether the member owns work that a fence must stop.
    fence_armed: bool,
    fenced: bool,
    /// Fences so far: a JoinGroup whose metadata was built before the
    /// latest one reported work the worker has since stopped.
    fences: u64,
    snapshot: Option<Assignment>,
    api_versions: BTreeMap<GroupApi, i16>,
}

struct Shared {
    config: GroupConfig,
    events: mpsc::UnboundedSender<GroupEvent>,
    state: Mutex<State>,
    /// Testing aid: no heartbeat, JoinGroup or SyncGroup is sent.
    coordinator_unreachable: AtomicBool,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock cannot leave the state half
        // updated in a way that matters more than stopping would.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn emit(&self, event: GroupEvent) {
        // The herder may have dropped its receiver; nothing to do then.
        let _ = self.events.send(event);
    }

    /// Emits `Fenced` once when the session has run out; returns the
    /// generation fenced, for the rejoin that follows.
    fn check_fence(&self, now: Instant) -> Option<i32> {
        let mut st = self.lock();
        if !st.fence_armed {
            return None;
        }
        // No allowance for a JoinGroup under way: the coordinator may have
        // completed the round at once and restarted this member's session
        // timer then, and the answer may be what got lost. Heartbeats go on
        // during the join (answered REBALANCE_IN_PROGRESS) and keep a
        // member that is only waiting for others alive.
        // Every member, not only the leader: a follower's lost work waits
        // scheduled.rebalance.max.delay.ms only while the leader remembers
        // the assignment and the delay is not 0, and was handed out while
        // the fenced follower still stopped it (simulation seeds 1411 and
        // 2002). At most half the session: a member must survive a slow
        // heartbeat or two without stopping everything.
        let session = self.config.session_timeout;
        let lead = self.config.fence_lead.min(session / 2);
        if now > st.last_alive + (session - lead) {
            st.fence_armed = false;
            st.fenced = true;
            st.fences += 1;
            st.snapshot = None;
            let since = now.saturating_duration_since(st.last_alive);
            self.emit(GroupEvent::Fenced {
                since_last_heartbeat: since,
                session_ends: st.last_alive + session,
            });
            return Some(st.generation);
        }
        None
    }

    fn unreachable(&self) -> bool {
        self.coordinator_unreachable.load(Ordering::SeqCst)
    }
}

/// Aborts a task when dropped, so that aborting the member's main task
/// also ends its heartbeat and watchdog tasks (and closes their sockets).
struct AbortOnDrop(JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Exponential backoff with ±20 % jitter (Java's `ExponentialBackoff` for
/// `retry.backoff.ms` .. `retry.backoff.max.ms`).
/// The member's retry backoff (`retry.backoff.ms` doubling up to
/// `retry.backoff.max.ms`, jittered), counting its own attempts.
struct Retries {
    delays: connect_runtime::kafka::time::Backoff,
    attempts: u32,
}

impl Retries {
    fn new(base: Duration, max: Duration) -> Retries {
        Retries {
            delays: connect_runtime::kafka::time::Backoff::new(base, max),
            attempts: 0,
        }
    }

    fn reset(&mut self) {
        self.attempts = 0;
    }

    fn delay(&mut self) -> Duration {
        let d = self.delays.jittered(self.attempts);
        self.attempts = self.attempts.saturating_add(1);
        d
    }
}

/// One worker's membership in the Connect group (protocol type `connect`)
/// through Kafka's group coordinator: Java's `WorkerGroupMember` and the
/// membership half of `WorkerCoordinator`.
///
/// [`GroupMember::start`] spawns it on the current tokio runtime: a main
/// task that finds the coordinator, joins (JoinGroup, then SyncGroup, with
/// the assignment from [`GroupHandler::assign`] when this worker leads)
/// and rejoins when needed; a heartbeat task with its own connection to
/// the coordinator, independent of the herder and of JoinGroup; and a
/// watchdog that reports [`GroupEvent::Fenced`] when no heartbeat has
/// succeeded for `session.timeout.ms`. What happens is reported as
/// [`GroupEvent`]s, in order, on an unbounded channel.
///
/// # Contract with the herder
///
/// - Run what the last [`GroupEvent::Joined`]'s `owned` says. Stop what
///   its `received.revoked` lists, then call [`GroupMember::request_rejoin`]
///   (Java rejoins after revoking).
/// - On [`GroupEvent::Fenced`], stop **all** work at once: the group may
///   already have handed it to another worker. The member rejoins by
///   itself and reports no current assignment.
/// - [`GroupEvent::Rebalancing`] is informative under the incremental
///   sub-protocols (keep running); under `eager`, stop everything in
///   [`GroupHandler::worker_state`].
/// - [`GroupMember::leave`] sends LeaveGroup so the others rebalance at
///   once; dropping the member does the same in the background;
///   [`GroupMember::abort`] stops without it, as a crash would.
///
/// # Errors and retries
///
/// `REBALANCE_IN_PROGRESS`, `ILLEGAL_GENERATION`, `UNKNOWN_MEMBER_ID`
/// (dropping the member id), `INVALID_REQUEST` and `MEMBER_ID_REQUIRED`
/// (with the id the broker gives) rejoin; `COORDINATOR_LOAD_IN_PROGRESS`,
/// `COORDINATOR_NOT_AVAILABLE`, `NOT_COORDINATOR` and lost connections find
/// the coordinator again, with exponential backoff. Group settings the
/// broker refuses (session timeout, authorization, inconsistent protocol)
/// end the member with [`GroupEvent::Stopped`].
///
/// # Example
///
/// ```no_run
/// use std::collections::BTreeMap;
/// use std::sync::Arc;
/// use connect_distributed::group::{
///     GroupConfig, GroupEvent, GroupHandler, GroupMember, HandlerError, LeaderRound, WorkerState,
/// };
///
/// struct Worker;
///
/// #[async_trait::async_trait]
/// impl GroupHandler for Worker {
///     async fn worker_state(&self) -> Result<WorkerState, HandlerError> {
///         Ok(WorkerState { url: "http://w1:8083/".into(), config_offset: -1 })
///     }
///     async fn assign(&self, round: &LeaderRound) -> Result<BTreeMap<String, Vec<u8>>, HandlerError> {
///         // Run `connect_distributed::assignor::assign` here.
///         unimplemented!("{} members", round.members.len())
///     }
/// }
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let config = GroupConfig::from_properties([
///     ("group.id", "connect-cluster"),
///     ("bootstrap.servers", "localhost:9092"),
/// ])?;
/// let (member, mut events) = GroupMember::start(config, Arc::new(Worker))?;
/// while let Some(event) = events.recv().await {
///     match event {
///         GroupEvent::Joined(j) => println!("generation {}: run {:?}", j.generation, j.owned),
///         GroupEvent::Fenced { .. } => println!("stop everything"),
///         GroupEvent::Stopped { .. } => break,
///         _ => {}
///     }
/// }
/// member.leave().await;
/// # Ok(())
/// # }
/// ```
pub struct GroupMember {
    commands: mpsc::UnboundedSender<Command>,
    shared: Arc<Shared>,
    task: Option<JoinHandle<()>>,
}

impl GroupMember {
    /// Validates `config` and starts the member on the current tokio
    /// runtime (it panics outside one, as `tokio::spawn` does). Events
    /// arrive on the returned receiver.
    pub fn start(
        config: GroupConfig,
        handler: Arc<dyn GroupHandler>,
    ) -> Result<(GroupMember, mpsc::UnboundedReceiver<GroupEvent>), GroupError> {
        config.validate()?;
        let (events_tx, events_rx) = mpsc::unbounded_channel();
        let (commands_tx, commands_rx) = mpsc::unbounded_channel();
        let (signals_tx, signals_rx) = mpsc::unbounded_channel();
        let backoff = Retries::new(config.retry_backoff, config.retry_backoff_max);
        let shared = Arc::new(Shared {
            config,
            events: events_tx,
            state: Mutex::new(State {
                phase: MemberPhase::Unjoined,
                generation: -1,
                member_id: String::new(),
                coordinator: None,
                epoch: 0,
                last_alive: Instant::now(),
                fence_armed: false,
                fenced: false,
                fences: 0,
                snapshot: None,
                api_versions: BTreeMap::new(),
            }),
            coordinator_unreachable: AtomicBool::new(false),
        });
        // Java's log context (`[Worker clientId=…, groupId=…]`): which
        // member said it, when several run in one process (tests, the
        // simulation) or their logs are merged.
        let span = tracing::info_span!(
            "group",
            client_id = %shared.config.client_id,
            group_id = %shared.config.group_id
        );
        let heartbeat = AbortOnDrop(tokio::spawn(
            heartbeat_loop(shared.clone(), signals_tx.clone()).instrument(span.clone()),
        ));
        let watchdog = AbortOnDrop(tokio::spawn(
            watchdog_loop(shared.clone(), signals_tx.clone()).instrument(span.clone()),
        ));
        let runner = Runner {
            shared: shared.clone(),
            handler,
            commands: commands_rx,
            signals: signals_rx,
            conn: None,
            need_join: true,
            backoff,
            last_completed_generation: -1,
            leave_for: None,
            rejoin_after: None,
            _tasks: [heartbeat, watchdog],
        };
        let task = tokio::spawn(runner.run().instrument(span));
        Ok((
            GroupMember {
                commands: commands_tx,
                shared,
                task: Some(task),
            },
            events_rx,
        ))
    }

    /// Asks for a new round (after stopping revoked work, or when the
    /// config changed). A round already under way counts.
    pub fn request_rejoin(&self, reason: impl Into<String>) {
        let _ = self.commands.send(Command::Rejoin(reason.into()));
    }

    /// Leaves the group (LeaveGroup with `reason`) without stopping: the
    /// member stays out for `backoff`, or until
    /// [`request_rejoin`](Self::request_rejoin) asks sooner (a request
    /// made after this call, even before the member is out, counts: it
    /// still leaves, then joins at once), then joins again as a new
    /// member; [`GroupEvent::Left`] marks the moment it is out. This is
    /// Java's `maybeLeaveGroup` followed by a backoff: a worker that
    /// cannot follow the config topic drops out rather than block every
    /// round with a config mismatch. **Stop all work first**:
    /// once out, the group gives it to others.
    pub fn leave_for(&self, reason: impl Into<String>, backoff: Duration) {
        let _ = self.commands.send(Command::LeaveFor {
            reason: reason.into(),
            backoff,
        });
    }

    /// The member's current state.
    pub fn status(&self) -> MemberStatus {
        let st = self.shared.lock();
        MemberStatus {
            phase: st.phase,
            generation: st.generation,
            member_id: st.member_id.clone(),
            coordinator: st.coordinator.as_ref().map(|(a, _)| a.clone()),
            fenced: st.fenced,
            api_versions: st.api_versions.clone(),
        }
    }

    /// Whether the member has fenced itself ([`GroupEvent::Fenced`]) and
    /// not joined again since: nothing may start on this worker then.
    pub fn is_fenced(&self) -> bool {
        self.shared.lock().fenced
    }

    /// Leaves the group (LeaveGroup, at most a few seconds) and stops;
    /// `Stopped` is the last event.
    pub async fn leave(mut self) {
        let _ = self.commands.send(Command::Leave);
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }

    /// Stops at once without LeaveGroup, closing the connections, as a
    /// crash would: the coordinator notices after `session.timeout.ms`. No
    /// further events are sent.
    pub fn abort(mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }

    /// Testing aid: stops (or resumes) sending heartbeats, JoinGroup and
    /// SyncGroup, as if the coordinator could not be reached, to exercise
    /// fencing. LeaveGroup still goes out.
    #[doc(hidden)]
    pub fn simulate_unreachable_coordinator(&self, unreachable: bool) {
        self.shared
            .coordinator_unreachable
            .store(unreachable, Ordering::SeqCst);
    }
}

impl std::fmt::Debug for GroupMember {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GroupMember")
            .field("group_id", &self.shared.config.group_id)
            .field("status", &self.status())
            .finish()
    }
}

/// Reports `Fenced` on time even while the other tasks wait on the
/// network, then has the member rejoin: the group must learn that this
/// worker runs nothing any more, even if the coordinator still counts it
/// as a member.
async fn watchdog_loop(shared: Arc<Shared>, signals: mpsc::UnboundedSender<Signal>) {
    let tick = WATCHDOG_TICK.min(shared.config.heartbeat_interval);
    loop {
        tokio::time::sleep(tick).await;
        if let Some(generation) = shared.check_fence(Instant::now()) {
            let _ = signals.send(Signal::Rejoin {
                generation,
                reason: RebalanceReason::Fenced,
            });
        }
    }
}

/// Sends a heartbeat every `heartbeat.interval.ms` while the member is in
/// a generation, on its own connection to the coordinator.
async fn heartbeat_loop(shared: Arc<Shared>, signals: mpsc::UnboundedSender<Signal>) {
    let config = &shared.config;
    let tick = Duration::from_millis(20).min(config.heartbeat_interval);
    let mut backoff = Retries::new(config.retry_backoff, config.retry_backoff_max);
    let mut conn: Option<(u64, Connection)> = None;
    let mut next = Instant::now() + config.heartbeat_interval;
    loop {
        tokio::time::sleep(tick).await;
        let now = Instant::now();
        if now < next || shared.unreachable() {
            continue;
        }
        let target = {
            let st = shared.lock();
            match (&st.coordinator, st.phase) {
                // Also while joining: REBALANCE_IN_PROGRESS proves the
                // coordinator still counts this member (it does not expire
                // one waiting in JoinGroup), which holds the fence off.
                (
                    Some((addr, epoch)),
                    MemberPhase::Joining | MemberPhase::Syncing | MemberPhase::Stable,
                ) if st.generation >= 0 && !st.member_id.is_empty() => {
                    Some((addr.clone(), *epoch, st.generation, st.member_id.clone()))
                }
                _ => None,
            }
        };
        let Some((addr, epoch, generation, member_id)) = target else {
            continue;
        };
        if conn.as_ref().is_some_and(|(e, _)| *e != epoch) {
            conn = None;
        }
        if conn.is_none() {
            let timeout = config.request_timeout.min(config.session_timeout);
            match Connection::open(&addr, &config.client_id, &config.security, timeout).await {
                Ok(c) => conn = Some((epoch, c)),
                Err(e) => {
                    let _ = signals.send(Signal::CoordinatorLost {
                        epoch,
                        error: Some(e),
                    });
                    next = Instant::now() + backoff.delay();
                    continue;
                }
            }
        }
        let Some((_, c)) = conn.as_mut() else {
            continue;
        };
        let request = HeartbeatRequest::default()
            .with_group_id(group_id(config))
            .with_generation_id(generation)
            .with_member_id(StrBytes::from_string(member_id));
        let sent = Instant::now();
        let reply = c
            .send::<_, HeartbeatResponse>(GroupApi::Heartbeat, &request, config.session_timeout)
            .await;
        next = sent + config.heartbeat_interval;
        match reply {
            Ok(Reply::Ok(_)) => {
                backoff.reset();
                heartbeat_succeeded(&shared, generation, sent);
            }
            Ok(Reply::Err(code, _)) => match code {
                ErrorCode::REBALANCE_IN_PROGRESS => {
                    // Still a member: the session is alive.
                    heartbeat_succeeded(&shared, generation, sent);
                    if shared.lock().phase == MemberPhase::Stable {
                        let _ = signals.send(Signal::Rejoin {
                            generation,
                            reason: RebalanceReason::CoordinatorRequested,
                        });
                    }
                }
                ErrorCode::ILLEGAL_GENERATION => {
                    let _ = signals.send(Signal::Rejoin {
                        generation,
                        reason: RebalanceReason::IllegalGeneration,
                    });
                }
                ErrorCode::UNKNOWN_MEMBER_ID => {
                    let _ = signals.send(Signal::ResetMember { generation });
                }
                code if code.needs_rediscovery() => {
                    conn = None;
                    let _ = signals.send(Signal::CoordinatorLost { epoch, error: None });
                }
                code => {
                    shared.emit(GroupEvent::Error(GroupError::Broker {
                        api: GroupApi::Heartbeat.name(),
                        code,
                        message: None,
                    }));
                    next = Instant::now() + backoff.delay();
                }
            },
            Err(e) => {
                conn = None;
                let _ = signals.send(Signal::CoordinatorLost {
                    epoch,
                    error: Some(e),
                });
                next = Instant::now() + backoff.delay();
            }
        }
    }
}

fn heartbeat_succeeded(shared: &Shared, generation: i32, sent: Instant) {
    let mut st = shared.lock();
    if st.generation == generation && sent > st.last_alive {
        st.last_alive = sent;
    }
}

/// Opens one connection to the first bootstrap server that answers, with
/// the configured security (ApiVersions and, with `SASL_PLAINTEXT`, the
/// SASL/PLAIN exchange), and closes it: a start-up check that reports
/// settings that can never work (wrong credentials, a mechanism the broker
/// does not enable, no common API version) before anything else runs.
///
/// Returns the first [fatal](GroupError::is_fatal) error; when no server
/// answers at all it returns `Ok`, because the member retries unreachable
/// brokers itself.
pub async fn check_brokers(config: &GroupConfig) -> Result<(), GroupError> {
    for server in &config.bootstrap_servers {
        let addr = connect_address(server);
        match Connection::open(
            addr,
            &config.client_id,
            &config.security,
            config.request_timeout,
        )
        .await
        {
            Ok(_) => return Ok(()),
            Err(e) if e.is_fatal() => return Err(e),
            Err(e) => tracing::debug!(server = %addr, error = %e, "bootstrap server check failed"),
        }
    }
    Ok(())
}

/// Asks `server` which broker coordinates the group; its `host:port`.
async fn find_coordinator(config: &GroupConfig, server: &str) -> Result<String, GroupError> {
    let api = GroupApi::FindCoordinator;
    let mut conn = Connection::open(
        server,
        &config.client_id,
        &config.security,
        config.request_timeout,
    )
    .await?;
    let version = conn.version(api)?;
    let group = StrBytes::from_string(config.group_id.clone());
    // Versions 0-2 (`GroupApi::max_version`): one key per request. Kafka
    // 4 still takes v1 and v2; v4's list of keys is not needed for one group.
    let request = FindCoordinatorRequest::default()
        .with_key_type(0)
        .with_key(group);
    let reply = conn
        .send::<_, FindCoordinatorResponse>(api, &request, config.request_timeout)
        .await?;
    let malformed = |message: &str| GroupError::Wire {
        addr: server.to_owned(),
        source: WireError::Malformed {
            api: api.name(),
            version,
            message: message.to_owned(),
        },
    };
    let (code, message, host, port) = match reply {
        Reply::Ok(r) => (ErrorCode::NONE, None, r.host, r.port),
        Reply::Err(code, r) => (code, r.and_then(|r| r.error_message), StrBytes::new(), -1),
    };
    if !code.is_ok() {
        return Err(GroupError::Broker {
            api: api.name(),
            code,
            message: message.map(|m| m.to_string()),
        });
    }
    let port = u16::try_from(port).map_err(|_| malformed("coordinator port out of range"))?;
    if host.is_empty() {
        return Err(malformed("empty coordinator host"));
    }
    Ok(if host.contains(':') {
        format!("[{}]:{port}", &*host)
    } else {
        format!("{}:{port}", &*host)
    })
}

fn group_id(config: &GroupConfig) -> GroupId {
    GroupId(StrBytes::from_string(config.group_id.clone()))
}

/// How a failed step continues.
enum Step {
    /// Done.
    Done,
    /// Try again at once (a new member id, a rebalance under way).
    RetryNow,
    /// Try again after the backoff.
    RetryLater,
    /// Leave was requested while waiting.
    Stop,
}

struct Runner {
    shared: Arc<Shared>,
    handler: Arc<dyn GroupHandler>,
    commands: mpsc::UnboundedReceiver<Command>,
    signals: mpsc::UnboundedReceiver<Signal>,
    conn: Option<Connection>,
    need_join: bool,
    backoff: Retries,
    last_completed_generation: i32,
    /// A [`Command::LeaveFor`] that came while a round or a pause was under
    /// way: acted on as soon as the loop is free.
    leave_for: Option<PendingLeave>,
    /// A rejoin due as soon as the current round completes.
    rejoin_after: Option<RebalanceReason>,
    _tasks: [AbortOnDrop; 2],
}

impl Runner {
    async fn run(mut self) {
        let error = self.run_loop().await.err();
        {
            let mut st = self.shared.lock();
            st.phase = MemberPhase::Unjoined;
            st.fence_armed = false;
        }
        self.shared.emit(GroupEvent::Stopped { error });
    }

    async fn run_loop(&mut self) -> Result<(), GroupError> {
        loop {
            if let Some(leave) = self.leave_for.take() {
                if self.stay_out(leave).await {
                    return self.leave().await;
                }
                continue;
            }
            if self.shared.unreachable() {
                if self.pause(WATCHDOG_TICK).await {
                    return self.leave().await;
                }
                continue;
            }
            if self.conn.is_none() {
                match self.connect_coordinator().await {
                    Ok(()) => {}
                    Err(e) if e.is_fatal() => return Err(e),
                    Err(e) => {
                        self.shared.emit(GroupEvent::Error(e));
                        let wait = self.backoff.delay();
                        if self.pause(wait).await {
                            return self.leave().await;
                        }
                        continue;
                    }
                }
            }
            if self.need_join {
                let step = match self.join().await {
                    Ok(step) => step,
                    Err(e) if e.is_fatal() => return Err(e),
                    Err(e) => {
                        if matches!(
                            e,
                            GroupError::Io { .. }
                                | GroupError::Timeout { .. }
                                | GroupError::Wire { .. }
                                | GroupError::Poisoned { .. }
                        ) {
                            self.lose_coordinator();
                        }
                        self.shared.emit(GroupEvent::Error(e));
                        Step::RetryLater
                    }
                };
                match step {
                    Step::Done => {
                        self.need_join = false;
                        self.backoff.reset();
                        if let Some(reason) = self.rejoin_after.take() {
                            self.start_rejoin(reason);
                        }
                    }
                    Step::RetryNow => {}
                    Step::RetryLater => {
                        let wait = self.backoff.delay();
                        if self.pause(wait).await {
                            return self.leave().await;
                        }
                    }
                    Step::Stop => return self.leave().await,
                }
                continue;
            }
            tokio::select! {
                command = self.commands.recv() => match command {
                    Some(Command::Rejoin(reason)) => self.on_rejoin_command(reason),
                    Some(Command::LeaveFor { reason, backoff }) => self.leave_for = Some(PendingLeave::new(reason, backoff)),
                    None | Some(Command::Leave) => return self.leave().await,
                },
                Some(signal) = self.signals.recv() => self.on_signal(signal),
            }
        }
    }

    /// LeaveGroup, then out of the group for `backoff` or until a rejoin
    /// is asked for; true when the member is to stop for good.
    async fn stay_out(&mut self, leave: PendingLeave) -> bool {
        let PendingLeave {
            reason,
            backoff,
            rejoin,
        } = leave;
        self.leave_group(&reason).await;
        self.shared.emit(GroupEvent::Left { backoff });
        if let Some(rejoin) = rejoin {
            tracing::info!(group = %self.shared.config.group_id, reason, rejoin, "left the group; joining again at once, as asked after the leave");
            self.need_join = false;
            self.start_rejoin(RebalanceReason::Requested(rejoin));
            return false;
        }
        tracing::warn!(group = %self.shared.config.group_id, reason, ?backoff, "left the group; joining again after the backoff");
        let sleep = tokio::time::sleep(backoff);
        tokio::pin!(sleep);
        let reason = loop {
            tokio::select! {
                _ = &mut sleep => break "the backoff after leaving the group passed".to_string(),
                command = self.commands.recv() => match command {
                    Some(Command::Rejoin(reason)) => break reason,
                    // Already out: a later request restarts nothing.
                    Some(Command::LeaveFor { .. }) => {}
                    None | Some(Command::Leave) => return true,
                },
                // Signals name an old generation or coordinator: nothing
                // to act on while out.
                Some(_) = self.signals.recv() => {}
            }
        };
        self.need_join = false;
        self.start_rejoin(RebalanceReason::Requested(reason));
        false
    }

    /// Waits `d` while serving commands and signals; true when leaving.
    async fn pause(&mut self, d: Duration) -> bool {
        let sleep = tokio::time::sleep(d);
        tokio::pin!(sleep);
        loop {
            tokio::select! {
                _ = &mut sleep => return false,
                command = self.commands.recv() => match command {
                    Some(Command::Rejoin(reason)) => self.on_rejoin_command(reason),
                    Some(Command::LeaveFor { reason, backoff }) => self.leave_for = Some(PendingLeave::new(reason, backoff)),
                    None | Some(Command::Leave) => return true,
                },
                Some(signal) = self.signals.recv() => self.on_signal(signal),
            }
        }
    }

    /// A rejoin the herder asked for: now, or right after a pending leave.
    fn on_rejoin_command(&mut self, reason: String) {
        tracing::debug!(
            reason,
            need_join = self.need_join,
            leave_pending = self.leave_for.is_some(),
            "rejoin asked"
        );
        if let Some(reason) = rejoin_after_leave(&mut self.leave_for, reason) {
            self.start_rejoin(RebalanceReason::Requested(reason));
        }
    }

    fn start_rejoin(&mut self, reason: RebalanceReason) {
        if !self.need_join {
            self.need_join = true;
            self.shared.lock().phase = MemberPhase::Joining;
            self.shared.emit(GroupEvent::Rebalancing { reason });
        }
    }

    fn on_signal(&mut self, signal: Signal) {
        match signal {
            Signal::Rejoin { generation, reason } => {
                if self.shared.lock().generation == generation {
                    self.start_rejoin(reason);
                }
            }
            Signal::ResetMember { generation } => {
                let current = {
                    let mut st = self.shared.lock();
                    let current = st.generation == generation;
                    if current {
                        st.member_id.clear();
                        st.generation = -1;
                    }
                    current
                };
                if current {
                    self.start_rejoin(RebalanceReason::UnknownMember);
                }
            }
            Signal::CoordinatorLost { epoch, error } => {
                if self.shared.lock().epoch == epoch {
                    self.lose_coordinator();
                    if let Some(e) = error {
                        self.shared.emit(GroupEvent::Error(e));
                    }
                }
            }
        }
    }

    fn lose_coordinator(&mut self) {
        self.conn = None;
        self.shared.lock().coordinator = None;
    }

    /// FindCoordinator through the bootstrap servers, then a connection to
    /// the coordinator.
    async fn connect_coordinator(&mut self) -> Result<(), GroupError> {
        let config = &self.shared.config;
        let mut last: Option<GroupError> = None;
        let mut found = None;
        for server in &config.bootstrap_servers {
            match find_coordinator(config, connect_address(server)).await {
                Ok(addr) => {
                    found = Some(addr);
                    break;
                }
                Err(e) if e.is_fatal() => return Err(e),
                Err(e) => last = Some(e),
            }
        }
        let Some(addr) = found else {
            return Err(GroupError::NoCoordinator {
                group: config.group_id.clone(),
                servers: config.bootstrap_servers.clone(),
                last: Box::new(last.unwrap_or(GroupError::Stopped)),
            });
        };
        let conn = Connection::open(
            &addr,
            &config.client_id,
            &config.security,
            config.request_timeout,
        )
        .await?;
        // The versions of the APIs this member uses: the SASL ones only
        // on a SASL connection.
        let sasl = config.security.sasl.is_some();
        let versions: BTreeMap<GroupApi, i16> = GroupApi::ALL
            .into_iter()
            .filter(|api| {
                sasl || !matches!(api, GroupApi::SaslHandshake | GroupApi::SaslAuthenticate)
            })
            .filter_map(|api| conn.version(api).ok().map(|v| (api, v)))
            .collect();
        tracing::debug!(group = %config.group_id, coordinator = %addr, ?versions, "coordinator found");
        {
            let mut st = self.shared.lock();
            st.epoch += 1;
            st.coordinator = Some((addr, st.epoch));
            st.api_versions = versions;
        }
        self.conn = Some(conn);
        Ok(())
    }

    /// Sends a request on the coordinator connection, serving commands
    /// meanwhile: `Ok(None)` when leaving was requested.
    async fn send<Req, Resp>(
        &mut self,
        api: GroupApi,
        request: &Req,
        timeout: Duration,
    ) -> Result<Option<Reply<Resp>>, GroupError>
    where
        Req: Encodable + HeaderVersion,
        Resp: Decodable + HeaderVersion + HasErrorCode,
    {
        let outcome = {
            let Some(conn) = self.conn.as_mut() else {
                return Err(GroupError::Poisoned {
                    addr: "(no coordinator)".into(),
                });
            };
            let commands = &mut self.commands;
            let leave_for = &mut self.leave_for;
            let fut = conn.send::<Req, Resp>(api, request, timeout);
            tokio::pin!(fut);
            loop {
                tokio::select! {
                    r = &mut fut => break Some(r),
                    command = commands.recv() => match command {
                        // A round is under way: it serves the request,
                        // unless a leave comes first.
                        Some(Command::Rejoin(reason)) => {
                            tracing::debug!(reason, "rejoin asked while a request of a round is under way");
                            let _ = rejoin_after_leave(leave_for, reason);
                        }
                        // Once the round is over.
                        Some(Command::LeaveFor { reason, backoff }) => *leave_for = Some(PendingLeave::new(reason, backoff)),
                        None | Some(Command::Leave) => break None,
                    },
                }
            }
        };
        match outcome {
            Some(result) => result.map(Some),
            None => {
                // The request is abandoned; the connection cannot be reused.
                self.conn = None;
                Ok(None)
            }
        }
    }

    fn join_timeout(&self) -> Duration {
        let c = &self.shared.config;
        c.request_timeout
            .max(c.rebalance_timeout + JOIN_TIMEOUT_LAPSE)
    }

    async fn join(&mut self) -> Result<Step, GroupError> {
        let config = self.shared.config.clone();
        self.shared.lock().phase = MemberPhase::Joining;
        let worker = self
            .handler
            .worker_state()
            .await
            .map_err(|e| GroupError::Handler {
                stage: "worker_state",
                message: e.to_string(),
            })?;
        let (snapshot, fences) = {
            let st = self.shared.lock();
            (st.snapshot.clone(), st.fences)
        };
        let protocols = join_group_protocols(
            config.connect_protocol,
            &worker.url,
            worker.config_offset,
            snapshot.as_ref(),
        )
        .map_err(|source| GroupError::Protocol {
            what: "metadata".into(),
            source,
        })?;
        let protocols: Vec<JoinGroupRequestProtocol> = protocols
            .into_iter()
            .map(|(name, metadata)| {
                JoinGroupRequestProtocol::default()
                    .with_name(StrBytes::from_static_str(name))
                    .with_metadata(Bytes::from(metadata))
            })
            .collect();
        let timeout = self.join_timeout();

        // JoinGroup, again at once with the id MEMBER_ID_REQUIRED gives.
        let mut joined = None;
        // The coordinator restarts a member's session when the round
        // completes, which is after it received the request: the send
        // time is the safe measure of when it last heard from us.
        let mut join_sent = Instant::now();
        for _ in 0..3 {
            let member_id = self.shared.lock().member_id.clone();
            let request = JoinGroupRequest::default()
                .with_group_id(group_id(&config))
                .with_session_timeout_ms(millis_i32(config.session_timeout))
                .with_rebalance_timeout_ms(millis_i32(config.rebalance_timeout))
                .with_member_id(StrBytes::from_string(member_id))
                .with_protocol_type(StrBytes::from_static_str(PROTOCOL_TYPE))
                .with_protocols(protocols.clone());
            join_sent = Instant::now();
            let reply = self
                .send::<_, JoinGroupResponse>(GroupApi::JoinGroup, &request, timeout)
                .await;
            let Some(reply) = reply? else {
                return Ok(Step::Stop);
            };
            match reply {
                Reply::Ok(r) => {
                    joined = Some(r);
                    break;
                }
                Reply::Err(ErrorCode::MEMBER_ID_REQUIRED, Some(r)) => {
                    self.shared.lock().member_id = r.member_id.to_string();
                }
                Reply::Err(code, _) => {
                    return self.after_round_error(GroupApi::JoinGroup, code);
                }
            }
        }
        let Some(r) = joined else {
            return Ok(Step::RetryLater);
        };
        let protocol_name = r.protocol_name.as_deref().unwrap_or("").to_owned();
        let protocol = SubProtocol::from_name(&protocol_name)
            .filter(|p| config.connect_protocol.offered().contains(p))
            .ok_or(GroupError::UnknownSubProtocol(protocol_name.clone()))?;
        let generation = r.generation_id;
        let member_id = r.member_id.to_string();
        let leader_id = r.leader.to_string();
        {
            let mut st = self.shared.lock();
            st.generation = generation;
            st.member_id = member_id.clone();
            st.phase = MemberPhase::Syncing;
            st.last_alive = st.last_alive.max(join_sent);
        }
        let is_leader = leader_id == member_id;
        let assignments = if is_leader {
            let mut members = Vec::with_capacity(r.members.len());
            for m in &r.members {
                let metadata =
                    WorkerMetadata::decode(&m.metadata).map_err(|source| GroupError::Protocol {
                        what: format!("metadata of member {}", &*m.member_id),
                        source,
                    })?;
                members.push(RoundMember {
                    id: m.member_id.to_string(),
                    metadata,
                    raw: m.metadata.clone(),
                });
            }
            let round = LeaderRound {
                generation,
                leader_id: leader_id.clone(),
                protocol,
                last_completed_generation: self.last_completed_generation,
                members,
            };
            let computed = self
                .handler
                .assign(&round)
                .await
                .map_err(|e| GroupError::Handler {
                    stage: "assign",
                    message: e.to_string(),
                })?;
            computed
                .into_iter()
                .map(|(id, bytes)| {
                    SyncGroupRequestAssignment::default()
                        .with_member_id(StrBytes::from_string(id))
                        .with_assignment(Bytes::from(bytes))
                })
                .collect()
        } else {
            Vec::new()
        };

        let sync_version = match self.conn.as_ref() {
            Some(c) => c.version(GroupApi::SyncGroup)?,
            None => return Ok(Step::RetryLater),
        };
        let mut request = SyncGroupRequest::default()
            .with_group_id(group_id(&config))
            .with_generation_id(generation)
            .with_member_id(StrBytes::from_string(member_id.clone()))
            .with_assignments(assignments);
        if sync_version >= 5 {
            request = request
                .with_protocol_type(Some(StrBytes::from_static_str(PROTOCOL_TYPE)))
                .with_protocol_name(Some(StrBytes::from_string(protocol_name)));
        }
        // Heartbeats go on while waiting: the coordinator expires members
        // that stop heartbeating before SyncGroup completes.
        let sync_sent = Instant::now();
        let reply = self
            .send::<_, SyncGroupResponse>(GroupApi::SyncGroup, &request, timeout)
            .await;
        let Some(reply) = reply? else {
            return Ok(Step::Stop);
        };
        let bytes = match reply {
            Reply::Ok(r) => r.assignment,
            Reply::Err(code, _) => return self.after_round_error(GroupApi::SyncGroup, code),
        };
        let received = Assignment::decode(&bytes).map_err(|source| GroupError::Protocol {
            what: "assignment".into(),
            source,
        })?;
        let mut st = self.shared.lock();
        let owned = if protocol.is_incremental() {
            merge(st.snapshot.as_ref(), &received)
        } else {
            received.clone()
        };
        st.snapshot = Some(owned.clone());
        st.phase = MemberPhase::Stable;
        st.last_alive = st.last_alive.max(sync_sent);
        st.fence_armed = true;
        st.fenced = false;
        // Fenced after the JoinGroup's metadata was built: the leader
        // counted work as ours that the worker has stopped since. Another
        // round must report the truth, or that work runs nowhere (the
        // fence's own rejoin signal names the old generation and is
        // dropped).
        if st.fences != fences {
            self.rejoin_after = Some(RebalanceReason::Fenced);
        }
        self.last_completed_generation = generation;
        self.shared.emit(GroupEvent::Joined(Box::new(Joined {
            generation,
            member_id,
            leader_id,
            is_leader,
            protocol,
            received,
            owned,
        })));
        Ok(Step::Done)
    }

    /// What to do after JoinGroup or SyncGroup answered an error code.
    fn after_round_error(&mut self, api: GroupApi, code: ErrorCode) -> Result<Step, GroupError> {
        match code {
            ErrorCode::UNKNOWN_MEMBER_ID => {
                let mut st = self.shared.lock();
                st.member_id.clear();
                st.generation = -1;
                Ok(Step::RetryNow)
            }
            ErrorCode::REBALANCE_IN_PROGRESS if api == GroupApi::SyncGroup => Ok(Step::RetryNow),
            ErrorCode::REBALANCE_IN_PROGRESS
            | ErrorCode::ILLEGAL_GENERATION
            | ErrorCode::INVALID_REQUEST
            | ErrorCode::MEMBER_ID_REQUIRED => Ok(Step::RetryLater),
            code if code.needs_rediscovery() => {
                self.lose_coordinator();
                Ok(Step::RetryLater)
            }
            code => Err(GroupError::Broker {
                api: api.name(),
                code,
                message: None,
            }),
        }
    }

    /// LeaveGroup (best effort, bounded), then the member is out and stops.
    async fn leave(&mut self) -> Result<(), GroupError> {
        self.leave_group("the worker is stopping").await;
        Ok(())
    }

    /// LeaveGroup (best effort, bounded, with `reason` where the broker
    /// takes one): the member is out; it joins again as a new member.
    async fn leave_group(&mut self, reason: &str) {
        let (member_id, coordinator) = {
            let mut st = self.shared.lock();
            st.phase = MemberPhase::Unjoined;
            st.fence_armed = false;
            (std::mem::take(&mut st.member_id), st.coordinator.clone())
        };
        if member_id.is_empty() {
            return;
        }
        let config = self.shared.config.clone();
        let deadline = Instant::now() + LEAVE_TIMEOUT;
        let result = tokio::time::timeout(LEAVE_TIMEOUT, async {
            let mut conn = match self.conn.take().filter(Connection::is_usable) {
                Some(c) => c,
                None => {
                    let Some((addr, _)) = coordinator else {
                        return;
                    };
                    match Connection::open(&addr, &config.client_id, &config.security, LEAVE_TIMEOUT).await {
                        Ok(c) => c,
                        Err(_) => return,
                    }
                }
            };
            let Ok(version) = conn.version(GroupApi::LeaveGroup) else {
                return;
            };
            let mut request = LeaveGroupRequest::default().with_group_id(group_id(&config));
            if version >= 3 {
                let mut member =
                    MemberIdentity::default().with_member_id(StrBytes::from_string(member_id.clone()));
                if version >= 5 {
                    member = member.with_reason(Some(StrBytes::from_string(reason.to_string())));
                }
                request = request.with_members(vec![member]);
            } else {
                request = request.with_member_id(StrBytes::from_string(member_id.clone()));
            }
            let left = deadline.saturating_duration_since(Instant::now());
            let reply = conn
                .send::<_, LeaveGroupResponse>(GroupApi::LeaveGroup, &request, left)
                .await;
            tracing::debug!(group = %config.group_id, member = %member_id, ok = reply.is_ok(), "left the group");
        })
        .await;
        if result.is_err() {
            tracing::debug!(group = %config.group_id, "LeaveGroup timed out");
        }
        self.shared.lock().generation = -1;
    }
}

fn millis_i32(d: Duration) -> i32 {
    i32::try_from(d.as_millis()).unwrap_or(i32::MAX)
}

/// Java's `WorkerCoordinator.onJoinComplete` for the incremental
/// sub-protocols: what was owned, minus the revoked, plus the newly
/// assigned, with the received header, revocations and delay.
fn merge(previous: Option<&Assignment>, received: &Assignment) -> Assignment {
    let revoked_connectors: BTreeSet<&str> = received.revoked_connectors().into_iter().collect();
    let revoked_tasks: BTreeSet<TaskId> = received.revoked_tasks().into_iter().collect();
    let mut connectors: Vec<String> = Vec::new();
    let mut tasks: Vec<TaskId> = Vec::new();
    let mut seen_connectors = BTreeSet::new();
    let mut seen_tasks = BTreeSet::new();
    let mut add = |a: &Assignment, filter: bool| {
        for c in a.connectors() {
            if (!filter || !revoked_connectors.contains(c)) && seen_connectors.insert(c.to_owned())
            {
                connectors.push(c.to_owned());
            }
        }
        for t in a.tasks() {
            if (!filter || !revoked_tasks.contains(&t)) && seen_tasks.insert(t.clone()) {
                tasks.push(t);
            }
        }
    };
    add(received, false);
    if let Some(p) = previous {
        add(p, true);
    }
    Assignment {
        assigned: ConnectorAssignment::group(&connectors, &tasks),
        ..received.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assignment(assigned: &[(&str, &[i32])], revoked: &[(&str, &[i32])]) -> Assignment {
        let entries = |e: &[(&str, &[i32])]| {
            e.iter()
                .map(|(c, t)| ConnectorAssignment {
                    connector: (*c).to_owned(),
                    tasks: t.to_vec(),
                })
                .collect()
        };
        Assignment {
            version: 2,
            error: 0,
            leader: "l".into(),
            leader_url: "http://l/".into(),
            config_offset: 3,
            assigned: entries(assigned),
            revoked: entries(revoked),
            delay: 0,
        }
    }

    #[test]
    fn merge_keeps_owned_minus_revoked_plus_new() {
        let before = assignment(&[("a", &[-1, 0, 1]), ("b", &[0])], &[]);
        let received = assignment(&[("c", &[-1])], &[("a", &[1]), ("b", &[0])]);
        let owned = merge(Some(&before), &received);
        assert_eq!(owned.connectors(), ["c", "a"]);
        assert_eq!(owned.tasks(), [TaskId::new("a", 0)]);
        assert_eq!(owned.revoked, received.revoked);
        assert_eq!(merge(None, &received).connectors(), ["c"]);
    }

    #[test]
    fn a_round_has_revocations_when_the_leader_revoked_something() {
        let round = |revoked: &[(&str, &[i32])]| {
            let received = assignment(&[("c", &[0])], revoked);
            Joined {
                generation: 1,
                member_id: "m".into(),
                leader_id: "m".into(),
                is_leader: true,
                protocol: SubProtocol::Sessioned,
                owned: received.clone(),
                received,
            }
        };
        assert!(!round(&[]).has_revocations());
        assert!(round(&[("a", &[1])]).has_revocations());
    }

    #[test]
    fn backoff_grows_to_the_cap_with_jitter() {
        let mut b = Retries::new(Duration::from_millis(100), Duration::from_millis(1000));
        let first = b.delay();
        assert!(first >= Duration::from_millis(80) && first <= Duration::from_millis(120));
        for _ in 0..10 {
            b.delay();
        }
        let capped = b.delay();
        assert!(capped >= Duration::from_millis(800) && capped <= Duration::from_millis(1200));
        b.reset();
        assert!(b.delay() <= Duration::from_millis(120));
    }

    /// A stable member of `generation`, alive at `since`.
    fn stable(generation: i32, since: Instant) -> State {
        State {
            phase: MemberPhase::Stable,
            generation,
            member_id: "m".into(),
            coordinator: None,
            epoch: 0,
            last_alive: since,
            fence_armed: true,
            fenced: false,
            fences: 0,
            snapshot: None,
            api_versions: BTreeMap::new(),
        }
    }

    fn shared_in(
        config: GroupConfig,
        events: mpsc::UnboundedSender<GroupEvent>,
        state: State,
    ) -> Shared {
        Shared {
            config,
            events,
            state: Mutex::new(state),
            coordinator_unreachable: AtomicBool::new(false),
        }
    }

    #[test]
    fn a_member_fences_itself_its_lead_early_at_most_half_a_session() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let mut config = GroupConfig::new("g", "localhost:9092");
        config.session_timeout = Duration::from_millis(10_000);
        config.heartbeat_interval = Duration::from_millis(1000);
        config.fence_lead = Duration::from_millis(3000);
        let start = Instant::now();
        let state = || stable(1, start);
        let shared = shared_in(config.clone(), tx.clone(), state());
        // A follower too: its lead early (its lost work may be handed out
        // at once, simulation seeds 1411 and 2002); not at the boundary.
        assert_eq!(
            shared.check_fence(start + Duration::from_millis(7_000)),
            None
        );
        assert_eq!(
            shared.check_fence(start + Duration::from_millis(7_001)),
            Some(1)
        );
        assert!(rx.try_recv().is_ok());
        // A leader: its lead early.
        *shared.lock() = state();
        assert_eq!(
            shared.check_fence(start + Duration::from_millis(6_900)),
            None
        );
        assert_eq!(
            shared.check_fence(start + Duration::from_millis(7_001)),
            Some(1)
        );
        assert!(rx.try_recv().is_ok());
        // A lead beyond half the session counts as half.
        config.fence_lead = Duration::from_millis(9_000);
        let shared = shared_in(config, tx, state());
        assert_eq!(
            shared.check_fence(start + Duration::from_millis(4_900)),
            None
        );
        assert_eq!(
            shared.check_fence(start + Duration::from_millis(5_001)),
            Some(1)
        );
    }

    /// A heartbeat's answer proves the session alive from when it was
    /// sent: only forward (answers may come out of order) and only for the
    /// generation it was sent in.
    #[test]
    fn an_answered_heartbeat_moves_the_session_forward_for_its_generation() {
        let (tx, _rx) = mpsc::unbounded_channel();
        let start = Instant::now();
        let shared = shared_in(
            GroupConfig::new("g", "localhost:9092"),
            tx,
            stable(2, start),
        );
        let later = start + Duration::from_secs(2);
        heartbeat_succeeded(&shared, 2, later);
        assert_eq!(shared.lock().last_alive, later);
        // An earlier heartbeat answered late.
        heartbeat_succeeded(&shared, 2, start + Duration::from_secs(1));
        assert_eq!(shared.lock().last_alive, later);
        // A heartbeat of the generation before.
        heartbeat_succeeded(&shared, 1, start + Duration::from_secs(3));
        assert_eq!(shared.lock().last_alive, later);
    }

    #[test]
    fn fence_fires_once_after_the_session() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let mut config = GroupConfig::new("g", "localhost:9092");
        config.session_timeout = Duration::from_millis(1000);
        config.heartbeat_interval = Duration::from_millis(100);
        let start = Instant::now();
        let shared = shared_in(
            config,
            tx,
            State {
                snapshot: Some(assignment(&[("a", &[-1])], &[])),
                ..stable(1, start)
            },
        );
        assert_eq!(shared.check_fence(start + Duration::from_millis(900)), None);
        assert!(rx.try_recv().is_err());
        // Even with a JoinGroup under way (its answer may be what is lost).
        shared.lock().phase = MemberPhase::Joining;
        assert_eq!(
            shared.check_fence(start + Duration::from_millis(2000)),
            Some(1)
        );
        assert!(
            matches!(rx.try_recv(), Ok(GroupEvent::Fenced { since_last_heartbeat, session_ends })
                if since_last_heartbeat == Duration::from_millis(2000) && session_ends == start + Duration::from_millis(1000))
        );
        assert!(shared.lock().snapshot.is_none());
        // Counted, so a round whose JoinGroup went out before the fence
        // is followed by another (see `join`).
        assert_eq!(shared.lock().fences, 1);
        assert_eq!(
            shared.check_fence(start + Duration::from_millis(3000)),
            None
        );
        assert!(rx.try_recv().is_err());
    }
}
