//! The herder's loop: one task that reacts to the group (joins, fencing),
//! to the config topic (new configs, target states, task configs, restart
//! requests) and to connectors asking for new task configs, and makes the
//! worker run exactly what this worker owns.
//!
//! It reconciles rather than replays: after each event it compares what
//! the assignment and the config topic say should run here with what it
//! started, and starts, restarts, retargets or stops the difference. So a
//! missed or coalesced notification cannot leave a task running with an
//! old config.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use connect_api::config::ConfigMap;
use connect_runtime::status::{State, TaskId};
use connect_runtime::worker::Worker;
use tokio::sync::{broadcast, mpsc, oneshot, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::{now_ms, properties_to_map, Shared};
use crate::group::{GroupEvent, GroupMember, Joined};
use crate::protocol::SubProtocol;
use crate::stores::RestartRequest;
use crate::topics::config::{ConfigRecord, TargetState};
use crate::topics::config_state::ConfigState;

/// Until the leader takes new task configs, try again this often.
const PUBLISH_RETRY: Duration = Duration::from_millis(500);

/// The pause between reads of the config topic that end short of the
/// offset an assignment needs.
const READ_RETRY: Duration = Duration::from_millis(100);

/// Sent before every JoinGroup: the loop answers on the oneshot once it
/// has handled every group event that came before (revoked work stopped,
/// fenced work stopped) and, under eager rebalancing, stopped everything.
pub(super) type Barrier = oneshot::Sender<()>;

/// What this worker started, with the configs it started it with.
#[derive(Default)]
struct Started {
    connectors: BTreeMap<String, StartedConnector>,
    tasks: BTreeMap<TaskId, TaskConfigs>,
    /// The target each connector's units run under.
    targets: BTreeMap<String, TargetState>,
}

/// A connector instance this worker started.
struct StartedConnector {
    config: ConfigMap,
    target: TargetState,
    /// A restart request asked for a new instance; the reconciliation
    /// that follows starts it (or stops this one, if the connector is no
    /// longer this worker's). It stays listed meanwhile: an instance that
    /// is not listed would never be stopped.
    restart: bool,
}

/// The configs a task runs with: its connector's and its own.
#[derive(PartialEq)]
struct TaskConfigs {
    connector: ConfigMap,
    task: ConfigMap,
}

/// What a call into a connector instance answered. The calls run off the
/// loop, so a plugin that hangs holds up only its own connector, never a
/// rebalance, a config change or another connector (review F3).
struct Answer {
    name: String,
    kind: Answered,
}

enum Answered {
    /// `Worker::start_connector` for this config and target: the task
    /// configs, `None` when it failed (its status says why).
    Start {
        config: ConfigMap,
        target: TargetState,
        generated: Option<Vec<ConfigMap>>,
    },
    /// `Worker::connector_task_configs` after a reconfiguration request.
    TaskConfigs(connect_api::Result<Option<Vec<ConfigMap>>>),
    /// The leader's answer to task configs this follower sent it.
    Published(connect_api::Result<()>, Vec<ConfigMap>),
}

/// The units the current assignment gives this worker.
#[derive(Default)]
struct Owned {
    connectors: BTreeSet<String>,
    tasks: BTreeSet<TaskId>,
}

/// What of a connector's tasks the config topic holds: a change means the
/// leader must assign again.
#[derive(PartialEq)]
struct TaskLayout {
    count: i32,
    generation: Option<i32>,
}

pub(super) struct Engine {
    pub(super) shared: Arc<Shared>,
    pub(super) member: Option<GroupMember>,
    pub(super) events: mpsc::UnboundedReceiver<GroupEvent>,
    pub(super) reconfigure: mpsc::UnboundedReceiver<String>,
    /// From `worker_state`, before every JoinGroup.
    barriers: mpsc::UnboundedReceiver<Barrier>,
    pub(super) shutdown: watch::Receiver<bool>,
    started: Started,
    /// What the current assignment gives this worker; empty while fenced.
    owned: Owned,
    /// Task configs the owner could not hand to the leader yet.
    unpublished: BTreeMap<String, Vec<ConfigMap>>,
    /// Connectors whose task configs are on their way to the leader: a
    /// follower sends them off the loop, which goes on serving the group
    /// meanwhile (a Java leader answers only after the rebalance it may
    /// be in, which waits for this worker to join).
    publishing: BTreeSet<String>,
    rejoin_at: Option<Instant>,
    /// Config-mismatch rounds in a row this worker retried while up to
    /// date (the leader behind): each waits longer before the next.
    mismatches: u32,
    /// The config offset the last assignment needs while this worker has
    /// not read that far, and how many rounds in a row it could not.
    behind: Option<(i64, u32)>,
    retry_at: Option<Instant>,
    /// When the leader checks the session key's age again (review F14:
    /// a quiet cluster still rotates it every `inter.worker.key.ttl.ms`).
    key_check_at: Option<Instant>,
    /// The connectors and task generations seen at the last rebalance:
    /// a change means the leader must assign again.
    layout: BTreeMap<String, TaskLayout>,
    /// Connectors whose task configs changed since the last rebalance:
    /// their tasks here are stopped and start again only once the next
    /// assignment says which of them are still this worker's (Java's
    /// `stopReconfiguredTasks`, review F7).
    held: BTreeSet<String>,
    restarts: broadcast::Receiver<RestartRequest>,
    /// Asked the member to leave the group and not yet told it is out:
    /// assignments of the membership given up are ignored (review F10).
    leaving: bool,
    answers: mpsc::UnboundedReceiver<Answer>,
    answer_to: mpsc::UnboundedSender<Answer>,
    /// Calls into connector instances in flight, by connector: cancelled
    /// before this loop stops or restarts the connector, so a late start
    /// never brings back an instance this worker no longer runs.
    calls: BTreeMap<String, Vec<JoinHandle<()>>>,
    task_restarts: mpsc::UnboundedReceiver<TaskRestart>,
    /// Why each rejoin was asked, in order: the unit tests' engine has no
    /// member to ask.
    #[cfg(test)]
    rejoins: Vec<String>,
    /// Stands for a member that has fenced itself: the unit tests' engine
    /// has no member to ask.
    #[cfg(test)]
    fenced_member: bool,
}

/// A task restart asked through REST: `done` says whether the task ran
/// here (and was restarted).
pub(super) struct TaskRestart {
    pub(super) id: TaskId,
    pub(super) done: oneshot::Sender<bool>,
}

impl Engine {
    pub(super) fn new(
        shared: Arc<Shared>,
        member: Option<GroupMember>,
        events: mpsc::UnboundedReceiver<GroupEvent>,
        reconfigure: mpsc::UnboundedReceiver<String>,
        barriers: mpsc::UnboundedReceiver<Barrier>,
        task_restarts: mpsc::UnboundedReceiver<TaskRestart>,
        shutdown: watch::Receiver<bool>,
    ) -> Engine {
        let restarts = shared.configs.restart_requests();
        let (answer_to, answers) = mpsc::unbounded_channel();
        Engine {
            answers,
            answer_to,
            calls: BTreeMap::new(),
            shared,
            member,
            events,
            reconfigure,
            barriers,
            shutdown,
            started: Started::default(),
            owned: Default::default(),
            unpublished: BTreeMap::new(),
            publishing: BTreeSet::new(),
            rejoin_at: None,
            mismatches: 0,
            behind: None,
            retry_at: None,
            key_check_at: None,
            layout: BTreeMap::new(),
            held: BTreeSet::new(),
            restarts,
            leaving: false,
            task_restarts,
            #[cfg(test)]
            rejoins: Vec::new(),
            #[cfg(test)]
            fenced_member: false,
        }
    }

    fn worker(&self) -> &Worker {
        &self.shared.worker
    }

    fn request_rejoin(&mut self, why: &str) {
        if let Some(m) = &self.member {
            m.request_rejoin(why);
        }
        #[cfg(test)]
        self.rejoins.push(why.to_string());
    }

    /// Run until shut down: then stop everything and leave the group.
    pub(super) async fn run(mut self) {
        // Joining counts as the first rebalance.
        self.worker().metrics().rebalance().started();
        let mut changes = self.shared.configs.changes();
        loop {
            let timer = [self.rejoin_at, self.retry_at, self.key_check_at]
                .into_iter()
                .flatten()
                .min();
            tokio::select! {
                _ = self.shutdown.changed() => break,
                event = self.events.recv() => match event {
                    Some(GroupEvent::Stopped { error }) => {
                        group_stopped(error);
                        break;
                    }
                    // Nothing more will come from the group.
                    None => break,
                    Some(event) => self.on_group(event).await,
                },
                changed = changes.changed() => {
                    if changed.is_err() {
                        tracing::error!("the config topic reader stopped; stopping all work");
                        break;
                    }
                    self.on_config().await;
                }
                Some(name) = self.reconfigure.recv() => self.on_reconfigure(&name),
                Some(answer) = self.answers.recv() => self.on_answer(answer).await,
                Some(restart) = self.task_restarts.recv() => {
                    let here = self.restart_task(&restart.id).await;
                    let _ = restart.done.send(here);
                }
                Some(done) = self.barriers.recv() => {
                    // The member emitted its events before it asked: an
                    // unbiased select may pick this first, so they are
                    // handled here, in order (review F1, F9).
                    if !self.drain_group_events().await {
                        break;
                    }
                    if self.shared.view().protocol == SubProtocol::Eager {
                        self.revoke_all().await;
                    }
                    let _ = done.send(());
                }
                _ = sleep_until(timer) => {
                    let now = Instant::now();
                    if self.rejoin_at.is_some_and(|t| t <= now) {
                        self.rejoin_at = None;
                        self.request_rejoin("scheduled rebalance delay passed");
                    }
                    if self.key_check_at.is_some_and(|t| t <= now) {
                        self.key_check_at = None;
                        if self.shared.view().is_leader {
                            self.leader_duties().await;
                        }
                    }
                    if self.retry_at.is_some_and(|t| t <= now) {
                        self.retry_at = None;
                        self.retry_publish().await;
                    }
                }
            }
        }
        self.stop_all().await;
        // Nothing runs any more: answer the barriers still queued and
        // refuse later ones, so the member never waits for this loop
        // while it leaves.
        self.barriers.close();
        while let Ok(done) = self.barriers.try_recv() {
            let _ = done.send(());
        }
        if let Some(member) = self.member.take() {
            member.leave().await;
        }
        self.shared.set_left();
    }

    /// Handle the group events already queued; false once the group has
    /// stopped for good.
    async fn drain_group_events(&mut self) -> bool {
        loop {
            match self.events.try_recv() {
                Ok(GroupEvent::Stopped { error }) => {
                    group_stopped(error);
                    return false;
                }
                Ok(event) => self.on_group(event).await,
                Err(mpsc::error::TryRecvError::Empty) => return true,
                Err(mpsc::error::TryRecvError::Disconnected) => return false,
            }
        }
    }

    /// Mirror the tasks this worker owns where its exactly-once tasks'
    /// ownership check reads them (`fencing::HerderFencing::verify`).
    fn publish_owned(&self) {
        let tasks = self.owned.tasks.clone();
        match self.shared.owned_tasks.lock() {
            Ok(mut t) => *t = tasks,
            Err(p) => *p.into_inner() = tasks,
        }
    }

    /// Eager rebalancing: the whole assignment is revoked before this
    /// worker joins again; the next `Joined` gives it its new one.
    async fn revoke_all(&mut self) {
        tracing::info!("eager rebalance: stopping all connectors and tasks before rejoining");
        self.owned = Default::default();
        self.publish_owned();
        self.shared.set_view(|v| v.rebalancing = true);
        self.stop_all().await;
    }

    async fn on_group(&mut self, event: GroupEvent) {
        match event {
            GroupEvent::Joined(_) if self.leaving => {
                tracing::debug!("ignoring an assignment of the membership this worker is leaving");
            }
            GroupEvent::Joined(joined) => self.on_joined(*joined).await,
            GroupEvent::Left { backoff } => {
                self.leaving = false;
                tracing::info!(?backoff, "out of the group; joining again after worker.unsync.backoff.ms or once caught up");
            }
            GroupEvent::Fenced {
                since_last_heartbeat,
                session_ends,
            } => {
                let now = Instant::now();
                let session_left = session_ends.saturating_duration_since(now);
                tracing::warn!(?since_last_heartbeat, ?session_left,
                    "no heartbeat reached the group coordinator lately: stopping all work before the session can run out and another worker run it");
                self.owned = Default::default();
                self.publish_owned();
                self.shared.set_view(|v| {
                    v.leader_url = None;
                    v.is_leader = false;
                });
                // Stopped before the session can end, not merely within
                // the graceful timeout: the fence comes that timeout
                // early at most (half the session), and a stop that takes
                // all of it would end as the coordinator hands the work
                // out (simulation seed 5851); the event may also have
                // waited for a stop in progress (seed 8780).
                let graceful = self.worker().config().shutdown_timeout();
                let limit = graceful.min(session_left.saturating_sub(FENCE_MARGIN));
                self.stop_all_by(now + limit).await;
            }
            GroupEvent::Rebalancing { reason } => {
                tracing::info!(?reason, "rebalancing");
                self.worker().metrics().rebalance().started();
                self.shared.set_view(|v| v.rebalancing = true);
            }
            GroupEvent::Error(e) => {
                tracing::warn!(error = %e, "group membership problem; retrying")
            }
            // `run` ends the loop on it before it gets here.
            GroupEvent::Stopped { .. } => {}
        }
    }

    async fn on_joined(&mut self, j: Joined) {
        let configs = self.shared.configs.clone();
        if j.received.failed() {
            // Java's case 1a: a member's config snapshot differs from the
            // leader's. Read to the end and try again; a worker that cannot
            // read it in `worker.sync.timeout.ms` blocks every round (as
            // leader, each ends in the same mismatch), so it drops out of
            // the group for a while instead (review F10).
            tracing::info!(
                "the leader's config snapshot differs from the group's; reading the config topic and rejoining"
            );
            let sync = self.shared.settings.worker_sync_timeout;
            let read = match tokio::time::timeout(sync, configs.read_to_end()).await {
                Ok(read) => read,
                Err(_) => Err(connect_api::ConnectError::other(
                    "no read to the end within worker.sync.timeout.ms",
                )),
            };
            if let Err(e) = &read {
                tracing::warn!(error = %e, "reading the config topic failed");
            }
            // The mismatch names the highest offset a member has read: the
            // leader must get there or its next round fails the same way.
            let caught_up = configs.state().offset() >= j.received.config_offset;
            if j.is_leader && (read.is_err() || !caught_up) {
                self.leave_for_a_while(
                    "as leader, could not read the config topic as far as other workers have",
                    j.received.config_offset,
                )
                .await;
            } else if caught_up && !j.is_leader {
                // Up to date: the leader is the one behind, and a rejoin at
                // once would get the same failed assignment back (the
                // coordinator answers an unchanged follower with the
                // current generation) as fast as the network allows, until
                // the leader reads on or drops out. Back off instead.
                let group = &self.shared.settings.group;
                let exponent = self.mismatches.min(10);
                let wait = (group.retry_backoff * 2u32.pow(exponent)).min(group.retry_backoff_max);
                self.mismatches = self.mismatches.saturating_add(1);
                tracing::info!(
                    ?wait,
                    "the leader is behind the config topic; rejoining after a back-off"
                );
                self.rejoin_at = Some(Instant::now() + wait);
            } else {
                self.request_rejoin("config mismatch");
            }
            return;
        }
        self.mismatches = 0;
        // Act on the snapshot the assignment was computed from, or a newer one.
        let deadline = Instant::now() + self.shared.settings.worker_sync_timeout;
        while configs.state().offset() < j.received.config_offset && Instant::now() < deadline {
            if let Err(e) = configs.read_to_end().await {
                tracing::warn!(error = %e, "reading the config topic failed");
            }
            // A read that ended short (the end this worker sees is before
            // the leader's snapshot) is tried again after a pause, not in
            // a tight loop against the broker for the whole timeout.
            if configs.state().offset() < j.received.config_offset {
                tokio::time::sleep(READ_RETRY).await;
            }
        }
        if configs.state().offset() < j.received.config_offset {
            self.on_behind(&j).await;
            return;
        }
        self.behind = None;
        self.shared.status.set_generation(j.generation);
        self.worker().metrics().rebalance().completed(
            j.protocol.name(),
            &j.received.leader_url,
            j.generation,
        );
        self.shared.set_view(|v| {
            v.generation = j.generation;
            v.is_leader = j.is_leader;
            v.leader_url = Some(j.received.leader_url.clone());
            v.rebalancing = false;
            v.protocol = j.protocol;
        });
        self.owned = Owned {
            connectors: j
                .owned
                .connectors()
                .into_iter()
                .map(str::to_string)
                .collect(),
            tasks: j.owned.tasks().into_iter().collect(),
        };
        self.publish_owned();
        tracing::info!(
            generation = j.generation,
            leader = j.is_leader,
            protocol = %j.protocol,
            connectors = ?self.owned.connectors,
            tasks = ?self.owned.tasks.iter().map(ToString::to_string).collect::<Vec<_>>(),
            "joined the Connect group"
        );
        let state = configs.state();
        self.layout = layout(&state);
        // Java's check in `handleRebalanceCompleted`: having read past the
        // assignment's snapshot, this worker may have absorbed a change
        // (a new connector, a new task count) that the leader did not see,
        // and that no one would ask a round for: its own request came while
        // the round was under way (review F6).
        let moved_on = state.offset() != j.received.config_offset;
        self.held.clear();
        self.reconcile().await;
        if moved_on {
            self.request_rejoin("the config topic moved past the assignment's snapshot");
        } else if j.has_revocations() {
            self.request_rejoin("revoked work stopped");
        }
        // Each assignment replaces the schedule, as Java's does: one without
        // a delay cancels an earlier one (the lost worker came back, or its
        // work was handed out), which would otherwise rebalance for nothing.
        self.rejoin_at = (j.received.delay > 0)
            .then(|| Instant::now() + Duration::from_millis(j.received.delay as u64));
        if j.is_leader {
            // Fence the previous leader's config-topic writes before this
            // one's (exactly-once clusters; a no-op otherwise). A failure
            // is retried by the next leader write.
            if let Err(e) = self.shared.claim_write_privileges().await {
                tracing::warn!(error = %e, "could not take over the leader's transactional producer");
            }
            self.leader_duties().await;
        } else {
            self.shared.release_write_privileges().await;
        }
        self.retry_publish().await;
    }

    /// Review F2: the assignment needs configs this worker has not read.
    /// Its revocations still hold (the member already reports the work as
    /// released): stop the revoked units, start nothing new, and join
    /// again: at once the first time, then after
    /// `worker.unsync.backoff.ms` or as soon as the reader catches up, so
    /// a lagging worker does not drag the group through a rebalance every
    /// few seconds.
    async fn on_behind(&mut self, j: &Joined) {
        let have = self.shared.configs.state().offset();
        let want = j.received.config_offset;
        let rounds = self.behind.map_or(0, |(_, rounds)| rounds) + 1;
        self.behind = Some((want, rounds));
        let still: BTreeSet<TaskId> = j.owned.tasks().into_iter().collect();
        let connectors: BTreeSet<&str> = j.owned.connectors().into_iter().collect();
        self.owned
            .connectors
            .retain(|c| connectors.contains(c.as_str()));
        self.owned.tasks.retain(|t| still.contains(t));
        self.publish_owned();
        self.reconcile().await;
        if rounds == 1 {
            tracing::warn!(have, want,
                "could not catch up with the config topic in worker.sync.timeout.ms; revoked work stopped, rejoining");
            self.request_rejoin("behind the config topic");
        } else {
            tracing::warn!(have, want, rounds, "still behind the config topic");
            self.leave_for_a_while("behind the config topic", want)
                .await;
        }
    }

    /// Java's `maybeLeaveGroup` and `backoff(worker.unsync.backoff.ms)`:
    /// stop every unit here, then leave the group, so the others can run
    /// the work and finish their rounds while this worker cannot follow
    /// the config topic. It joins again after the backoff, or sooner once
    /// its reader reaches `want` (`on_config`). Unlike Java, nothing keeps
    /// running while out of the group: out means released (review F10).
    async fn leave_for_a_while(&mut self, why: &str, want: i64) {
        let backoff = self.shared.settings.worker_unsync_backoff;
        tracing::warn!(
            why,
            ?backoff,
            "stopping all work and leaving the group for worker.unsync.backoff.ms"
        );
        self.owned = Default::default();
        self.publish_owned();
        // Joining again as soon as the reader gets there.
        self.behind = Some((want, 1));
        self.rejoin_at = None;
        self.shared.set_view(|v| {
            v.leader_url = None;
            v.is_leader = false;
            v.rebalancing = true;
        });
        self.stop_all().await;
        if let Some(member) = &self.member {
            self.leaving = true;
            member.leave_for(why, backoff);
        }
    }

    async fn on_config(&mut self) {
        let state = self.shared.configs.state();
        tracing::debug!(offset = state.offset(), behind = ?self.behind, "the config topic moved");
        if let Some((want, _)) = self.behind {
            if state.offset() >= want {
                self.behind = None;
                self.rejoin_at = None;
                self.request_rejoin("caught up with the config topic");
            }
        }
        // New or removed connectors and new task configs need an
        // assignment; any worker that sees them asks, as Java's do.
        let now = layout(&state);
        if now != self.layout {
            // A new task generation may split the work differently: no old
            // task here keeps running beside the new ones, and none starts
            // before the round that assigns the new set (review F7).
            for (name, tasks) in &now {
                if self.layout.get(name).is_some_and(|before| before != tasks) {
                    self.held.insert(name.clone());
                }
            }
            self.request_rejoin("connectors or task configs changed");
        }
        self.handle_restarts().await;
        self.reconcile().await;
        if self.shared.view().is_leader {
            self.leader_duties().await;
        }
    }

    /// Make the worker run exactly the owned units that the config topic
    /// has, with its current configs.
    async fn reconcile(&mut self) {
        let state = self.shared.configs.state();
        // The version the statuses of this worker's units carry, as Java's
        // records do (our tasks have no version of their own: they carry
        // their connector's).
        let named: BTreeSet<&str> = self
            .owned
            .connectors
            .iter()
            .map(String::as_str)
            .chain(self.owned.tasks.iter().map(|id| id.connector.as_str()))
            .collect();
        for name in named {
            let version = state.connector_config(name).and_then(|props| {
                let class = props.get("connector.class")?.as_deref()?;
                let plugin = self.worker().plugins().connector(class.trim()).ok()?;
                Some(plugin.create().as_connector_ref().version())
            });
            self.shared.status.set_version(name, version);
        }
        // Connectors.
        let mut stop_connectors = Vec::new();
        for name in self.started.connectors.keys() {
            if !self.owned.connectors.contains(name) || state.connector_config(name).is_none() {
                stop_connectors.push(name.clone());
            }
        }
        for name in &stop_connectors {
            self.cancel_calls(name);
        }
        self.worker().stop_connectors(&stop_connectors).await;
        for name in &stop_connectors {
            self.started.connectors.remove(name);
        }
        // A stop takes time; the member may have fenced itself meanwhile
        // (its event waits for this loop): then nothing starts (seed 8780:
        // a restart started a task after the fence, which then ran on past
        // the session).
        if self.fenced() {
            return;
        }
        let owned: Vec<String> = self.owned.connectors.iter().cloned().collect();
        for name in owned {
            let Some(props) = state.connector_config(&name) else {
                continue;
            };
            let config = properties_to_map(props);
            let target = state.target_state(&name).unwrap_or(TargetState::Started);
            let restart = match self.started.connectors.get(&name) {
                None => true,
                Some(started) => {
                    started.restart
                        || started.config != config
                        || (started.target != target
                            && (started.target == TargetState::Stopped
                                || target == TargetState::Stopped))
                }
            };
            if restart {
                self.start_connector(&name, config, target);
            } else if let Some(started) = self.started.connectors.get_mut(&name) {
                started.target = target;
            }
        }
        // Tasks.
        let wanted: BTreeMap<TaskId, TaskConfigs> = self
            .owned
            .tasks
            .iter()
            .filter_map(|id| {
                let name = id.connector.as_str();
                let connector = state.connector_config(name)?;
                if state.target_state(name) == Some(TargetState::Stopped)
                    || self.held.contains(name)
                {
                    return None;
                }
                // Only tasks of the last consistent commit: a config of a
                // task beyond the current count stays in the state, but
                // that task no longer exists (review F7).
                if state.is_inconsistent(name)
                    || i64::from(id.task) >= i64::from(state.task_count(name).unwrap_or(0))
                {
                    return None;
                }
                let task = state.task_config(id)?;
                // The connector config the task configs were generated
                // from: a connector config change alone restarts the
                // connector, whose new task configs (written even when
                // equal, KAFKA-9228) then restart the tasks.
                let connector = state.applied_connector_config(name).unwrap_or(connector);
                Some((
                    id.clone(),
                    TaskConfigs {
                        connector: properties_to_map(connector),
                        task: properties_to_map(task),
                    },
                ))
            })
            .collect();
        let stale: Vec<TaskId> = self
            .started
            .tasks
            .iter()
            .filter(|(id, configs)| wanted.get(*id) != Some(*configs))
            .map(|(id, _)| id.clone())
            .collect();
        if !stale.is_empty() {
            self.worker().stop_tasks(&stale).await;
            for id in &stale {
                self.started.tasks.remove(id);
            }
        }
        for (id, configs) in wanted {
            if self.started.tasks.contains_key(&id) {
                continue;
            }
            if self.fenced() {
                return;
            }
            let target = state
                .target_state(&id.connector)
                .unwrap_or(TargetState::Started);
            let started = self
                .worker()
                .start_task(
                    &id.connector,
                    id.task,
                    configs.connector.clone(),
                    &configs.task,
                    target,
                )
                .await;
            match started {
                Ok(()) => {
                    self.started.tasks.insert(id, configs);
                }
                Err(e) => {
                    tracing::error!(connector = %id.connector, task = id.task, error = %e, "task failed to start");
                    // Counted as started: its FAILED status says why, and a
                    // restart request or a new config tries again.
                    self.started.tasks.insert(id, configs);
                }
            }
        }
        // Target states (pause/resume) of whatever runs here.
        let names: BTreeSet<String> = self
            .started
            .connectors
            .keys()
            .cloned()
            .chain(self.started.tasks.keys().map(|id| id.connector.clone()))
            .collect();
        for name in names {
            let target = state.target_state(&name).unwrap_or(TargetState::Started);
            if target == TargetState::Stopped {
                continue;
            }
            if self.started.targets.get(&name) != Some(&target) {
                self.worker().set_target_state(&name, target).await;
                self.started.targets.insert(name, target);
            }
        }
        self.started
            .targets
            .retain(|n, _| state.connector_config(n).is_some());
    }

    /// Whether the member fenced itself and has not joined since (its
    /// `Fenced` event may still be queued behind the work in progress).
    fn fenced(&self) -> bool {
        #[cfg(test)]
        if self.fenced_member {
            return true;
        }
        self.member.as_ref().is_some_and(GroupMember::is_fenced)
    }

    /// Start (or restart) the connector instance off the loop; its task
    /// configs come back as an [`Answer`].
    fn start_connector(&mut self, name: &str, config: ConfigMap, target: TargetState) {
        self.cancel_calls(name);
        self.started.connectors.insert(
            name.to_string(),
            StartedConnector {
                config: config.clone(),
                target,
                restart: false,
            },
        );
        self.started.targets.insert(name.to_string(), target);
        let worker = self.worker().clone();
        let to = self.answer_to.clone();
        let owned_name = name.to_string();
        self.call(name, async move {
            let generated = worker
                .start_connector(&owned_name, config.clone(), target)
                .await;
            let kind = Answered::Start {
                config,
                target,
                generated,
            };
            let _ = to.send(Answer {
                name: owned_name,
                kind,
            });
        });
    }

    /// Run a call into connector `name`'s instance off the loop.
    fn call(&mut self, name: &str, call: impl std::future::Future<Output = ()> + Send + 'static) {
        let calls = self.calls.entry(name.to_string()).or_default();
        calls.retain(|c| !c.is_finished());
        calls.push(tokio::spawn(call));
    }

    /// Cancel connector `name`'s calls in flight: a call not yet begun
    /// never runs, one in the plugin is dropped there.
    fn cancel_calls(&mut self, name: &str) {
        for call in self.calls.remove(name).unwrap_or_default() {
            call.abort();
        }
    }

    fn on_reconfigure(&mut self, name: &str) {
        if !self.started.connectors.contains_key(name) {
            return;
        }
        let worker = self.worker().clone();
        let to = self.answer_to.clone();
        let owned_name = name.to_string();
        self.call(name, async move {
            let answered = worker.connector_task_configs(&owned_name).await;
            let _ = to.send(Answer {
                name: owned_name,
                kind: Answered::TaskConfigs(answered),
            });
        });
    }

    /// A connector call answered: hand its task configs to the leader when
    /// this worker still runs the connector as the call started it.
    async fn on_answer(&mut self, answer: Answer) {
        let name = answer.name.as_str();
        match answer.kind {
            Answered::Start {
                config,
                target,
                generated,
            } => {
                let current = self
                    .started
                    .connectors
                    .get(name)
                    .is_some_and(|s| s.config == config && s.target == target);
                // A stopped connector's empty task list is the leader's to write.
                if let (true, Some(configs)) = (current, generated) {
                    if target != TargetState::Stopped {
                        let state = self.shared.configs.state();
                        self.publish(name, configs, &state).await;
                    }
                }
            }
            Answered::TaskConfigs(Ok(Some(configs))) => {
                if self.started.connectors.contains_key(name) {
                    let state = self.shared.configs.state();
                    self.publish(name, configs, &state).await;
                }
            }
            Answered::TaskConfigs(Ok(None)) => {}
            Answered::Published(result, configs) => {
                self.publishing.remove(name);
                match result {
                    // Newer configs that waited for this hand-off go now.
                    Ok(()) if self.unpublished.contains_key(name) => {
                        self.retry_at = Some(Instant::now());
                    }
                    Ok(()) => {}
                    Err(e) => {
                        tracing::warn!(connector = %name, error = %e, "could not hand task configs to the leader; retrying");
                        self.unpublished.entry(name.to_string()).or_insert(configs);
                        self.retry_at = Some(Instant::now() + PUBLISH_RETRY);
                    }
                }
            }
            Answered::TaskConfigs(Err(e)) => {
                tracing::error!(connector = %name, error = %e, "the connector could not generate task configs");
                self.shared
                    .status
                    .put_connector(name, State::Failed, Some(e.to_string()));
            }
        }
    }

    /// Hand new task configs to the leader (or write them, as the leader).
    async fn publish(&mut self, name: &str, configs: Vec<ConfigMap>, state: &ConfigState) {
        // Written again when only the connector config changed, so its
        // tasks restart with it (Java's KAFKA-9228 fix).
        if committed_task_configs(state, name).as_ref() == Some(&configs)
            && state.applied_connector_config(name) == state.connector_config(name)
        {
            self.unpublished.remove(name);
            return;
        }
        if self.publishing.contains(name) {
            // After the hand-off in flight; the newest configs win.
            self.unpublished.insert(name.to_string(), configs);
            return;
        }
        if !self.shared.view().is_leader {
            self.unpublished.remove(name);
            self.publishing.insert(name.to_string());
            let shared = self.shared.clone();
            let to = self.answer_to.clone();
            let name = name.to_string();
            tokio::spawn(async move {
                let result = shared.hand_to_leader(&name, &configs).await;
                let _ = to.send(Answer {
                    name,
                    kind: Answered::Published(result, configs),
                });
            });
            return;
        }
        match self.shared.hand_to_leader(name, &configs).await {
            Ok(()) => {
                self.unpublished.remove(name);
            }
            Err(e) => {
                tracing::warn!(connector = %name, error = %e, "could not hand task configs to the leader; retrying");
                self.unpublished.insert(name.to_string(), configs);
                self.retry_at = Some(Instant::now() + PUBLISH_RETRY);
            }
        }
    }

    async fn retry_publish(&mut self) {
        let pending = std::mem::take(&mut self.unpublished);
        let state = self.shared.configs.state();
        for (name, configs) in pending {
            // Only while this worker still runs the connector.
            if self.started.connectors.contains_key(&name) {
                self.publish(&name, configs, &state).await;
            }
        }
    }

    /// Restart requests (`restart-connector-<c>`) read since the last look,
    /// for whatever of the connector runs here: stopped here, then started
    /// again by the reconciliation that follows.
    async fn handle_restarts(&mut self) {
        let mut requests = Vec::new();
        loop {
            match self.restarts.try_recv() {
                Ok(r) => requests.push(r),
                Err(broadcast::error::TryRecvError::Lagged(n)) => {
                    tracing::warn!(
                        missed = n,
                        "restart requests came faster than they were handled; some were dropped"
                    )
                }
                Err(_) => break,
            }
        }
        for r in requests {
            let status = &self.shared.status;
            if let Some(started) = self.started.connectors.get_mut(&r.connector) {
                let failed = status.connector(&r.connector).0 == State::Failed;
                if !r.only_failed || failed {
                    status.put_connector(&r.connector, State::Restarting, None);
                    // Started again by the reconciliation that follows,
                    // which first cancels what it still does.
                    started.restart = true;
                }
            }
            if r.include_tasks {
                let restart: Vec<TaskId> = self
                    .started
                    .tasks
                    .keys()
                    .filter(|id| id.connector == r.connector)
                    .filter(|id| !r.only_failed || status.task(id).0 == State::Failed)
                    .cloned()
                    .collect();
                self.stop_for_restart(&restart).await;
            }
        }
    }

    /// Stop `tasks` for a restart: RESTARTING, stopped, and forgotten, so
    /// that the reconciliation that follows starts them again.
    async fn stop_for_restart(&mut self, tasks: &[TaskId]) {
        for id in tasks {
            self.shared.status.task_state(id, State::Restarting, None);
        }
        self.worker().stop_tasks(tasks).await;
        for id in tasks {
            self.started.tasks.remove(id);
        }
    }

    /// Restart task `id` if it runs here: stopped, then started again by
    /// a reconciliation, as a restart request read from the config topic.
    /// `false` when it does not run here (or this worker is fenced).
    async fn restart_task(&mut self, id: &TaskId) -> bool {
        if !self.started.tasks.contains_key(id) || self.fenced() {
            return false;
        }
        self.stop_for_restart(std::slice::from_ref(id)).await;
        self.reconcile().await;
        true
    }

    /// The leader's own writes: empty task configs for stopped connectors
    /// (KIP-875) and a session key (KIP-507) when the group signs requests.
    async fn leader_duties(&mut self) {
        let state = self.shared.configs.state();
        let mut records = Vec::new();
        for name in state.connectors() {
            if state.target_state(name) == Some(TargetState::Stopped)
                && state.task_count(name).unwrap_or(0) > 0
            {
                records.push(ConfigRecord::TasksCommit {
                    connector: name.to_string(),
                    tasks: 0,
                });
            }
        }
        if !records.is_empty() {
            if let Err(e) = self.shared.write_as_leader(records).await {
                tracing::warn!(error = %e, "could not clear the task configs of stopped connectors");
            }
        }
        if self.shared.view().protocol == SubProtocol::Sessioned {
            if let Err(e) = self.shared.rotate_session_key(&state).await {
                tracing::warn!(error = %e, "could not write a new session key");
            }
            // Look again when the key expires. A key just written may not
            // be read back yet: never sooner than a second from now.
            let ttl = self.shared.settings.key_ttl;
            let left = state.session_key().map_or(ttl, |k| {
                let expires = k.creation_timestamp.saturating_add(ttl.as_millis() as i64);
                Duration::from_millis(expires.saturating_sub(now_ms()).max(0) as u64)
            });
            self.key_check_at = Some(Instant::now() + left.max(Duration::from_secs(1)));
        }
    }

    async fn stop_all(&mut self) {
        let graceful = self.worker().config().shutdown_timeout();
        self.stop_all_by(Instant::now() + graceful).await
    }

    /// Stop everything by `deadline`: what has not stopped then is
    /// aborted (tasks, uncommitted) or abandoned (connectors).
    async fn stop_all_by(&mut self, deadline: Instant) {
        let tasks: Vec<TaskId> = self.started.tasks.keys().cloned().collect();
        for call in std::mem::take(&mut self.calls).into_values().flatten() {
            call.abort();
        }
        let connectors: Vec<String> = std::mem::take(&mut self.started.connectors)
            .into_keys()
            .collect();
        // Tasks and connectors at once: everything is stopped within one
        // task.shutdown.graceful.timeout.ms, which a fenced leader counts on
        // (`GroupConfig::fence_lead`).
        let worker = self.worker();
        tokio::join!(
            worker.stop_tasks_by(&tasks, deadline),
            worker.stop_connectors_by(&connectors, deadline)
        );
        self.started = Started::default();
    }
}

/// How long before its session can end a fenced worker's work must have
/// stopped: the coordinator's expiry check and the abort of what did not
/// stop both take a moment.
const FENCE_MARGIN: Duration = Duration::from_secs(1);

/// Connectors with their task counts and task config generations.
fn layout(state: &ConfigState) -> BTreeMap<String, TaskLayout> {
    state
        .connectors()
        .map(|c| {
            let layout = TaskLayout {
                count: state.task_count(c).unwrap_or(0),
                generation: state.task_config_generation(c),
            };
            (c.to_string(), layout)
        })
        .collect()
}

/// The committed task configs of `name`, when it has any consistent set.
pub(super) fn committed_task_configs(state: &ConfigState, name: &str) -> Option<Vec<ConfigMap>> {
    if state.is_inconsistent(name) {
        return None;
    }
    state
        .tasks(name)
        .iter()
        .map(|id| state.task_config(id).map(properties_to_map))
        .collect()
}

/// The member left the group for good: the worker ends
/// (`DistributedHerder::stopped`), as Java's does.
fn group_stopped(error: Option<crate::group::GroupError>) {
    if let Some(e) = error {
        tracing::error!(error = %e, "left the Connect group for good; stopping all work");
    }
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests;
