//! The distributed herder: a worker of a Connect cluster, as Kafka's
//! `DistributedHerder`.
//!
//! - **Membership**: a [`GroupMember`] in the `connect` group; when the
//!   broker makes this worker the leader, it assigns connectors and tasks
//!   from its view of the config topic: with [`crate::assignor::assign`]
//!   under the incremental sub-protocols, with
//!   [`crate::assignor::assign_eager`] under `default` (eager).
//! - **Configs**: every worker replays the config topic
//!   ([`ConfigTopic`]). REST writes that are one record (create, update,
//!   delete, pause, resume, stop, restart requests) are appended by the
//!   worker that got the request and answered once read back: the topic's
//!   order decides between concurrent writers, and every worker ends with
//!   the same view. Task configs are the leader's to write: the owner of a
//!   connector hands them over with a signed internal request (KIP-507).
//! - **Work**: the herder loop (module `engine`) makes the runtime's
//!   [`Worker`] run exactly what the assignment gives this worker; it
//!   stops everything when the member fences itself, and, under the eager
//!   `default` sub-protocol, before every JoinGroup (Java's
//!   `onJoinPrepare` revokes the whole assignment then).
//! - **Statuses**: written by whoever runs the unit, with its worker id
//!   and generation, to the status topic ([`StatusTopic`]); REST reads
//!   them from there, so any worker answers for the whole cluster.
//!
//! The stores on Kafka implement [`ConfigTopic`] and [`StatusTopic`].

pub mod config;
mod engine;
mod fencing;
pub mod internal;
mod leader_writes;

pub use leader_writes::leader_transactional_id;

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use connect_api::config::{ConfigMap, ConfigReport};
use connect_api::{ConnectError, Result};
use connect_runtime::herder::{
    check_connector_config, validate_connector_config, ExactlyOnceSource, Herder, InternalRefusal,
    RequestOwner, WorkerRules, REBALANCE_WAIT,
};
use connect_runtime::rest::{HttpReply, RestClient};
use connect_runtime::status::{State, StatusStore};
use connect_runtime::worker::offset_admin::{ConnectorOffsets, OffsetChange};
use connect_runtime::worker::{
    ConnectorInfo, ConnectorStatus, Plugins, StateInfo, TaskRef, TaskStateInfo, Worker,
    WorkerConfig,
};
use tokio::sync::{broadcast, mpsc, oneshot, watch};

pub use config::{DistributedConfig, ExactlyOnceSourceSupport, TopicSettings};

use crate::assignor::{assign, assign_eager, AssignorState, Member, RoundInput};
use crate::group::{GroupHandler, GroupMember, HandlerError, LeaderRound, WorkerState};
use crate::protocol::{SubProtocol, TaskId};
use crate::stores::{KafkaConfigLog, KafkaStatusStore, RestartRequest};
use crate::topics::config::{ConfigKey, ConfigRecord, Properties, SessionKey, TargetState};
use crate::topics::config_state::ConfigState;
use crate::topics::status::Status;

/// The config topic as the herder uses it: Java's replay
/// ([`ConfigState`]), kept current by a reader that follows the topic.
#[async_trait]
pub trait ConfigTopic: Send + Sync + 'static {
    /// The replay so far.
    fn state(&self) -> ConfigState;
    /// Changes each time records were applied.
    fn changes(&self) -> watch::Receiver<i64>;
    /// Restart requests (`restart-connector-<c>`) read from now on.
    fn restart_requests(&self) -> broadcast::Receiver<RestartRequest>;
    /// Wait until everything written to the topic so far is applied.
    async fn read_to_end(&self) -> Result<()>;
    /// Append `records` in order and wait until they are applied here.
    async fn write(&self, records: Vec<ConfigRecord>) -> Result<()>;
}

#[async_trait]
impl ConfigTopic for KafkaConfigLog {
    fn state(&self) -> ConfigState {
        self.snapshot()
    }
    fn changes(&self) -> watch::Receiver<i64> {
        KafkaConfigLog::changes(self)
    }
    fn restart_requests(&self) -> broadcast::Receiver<RestartRequest> {
        KafkaConfigLog::restart_requests(self)
    }
    async fn read_to_end(&self) -> Result<()> {
        KafkaConfigLog::read_to_end(self).await
    }
    async fn write(&self, records: Vec<ConfigRecord>) -> Result<()> {
        KafkaConfigLog::write(self, &records).await
    }
}

/// The status topic as the herder uses it: the runtime's [`StatusStore`]
/// (tasks report into it) plus what REST shows of every worker's units.
pub trait StatusTopic: StatusStore + 'static {
    /// The group generation this worker's writes carry from now on.
    fn set_generation(&self, generation: i32);
    /// The stored status of connector `name`, from whichever worker.
    fn connector_status(&self, name: &str) -> Option<Status>;
    /// The stored status of a task.
    fn task_status(&self, id: &TaskId) -> Option<Status>;
    /// The plugin version this worker writes into the statuses of
    /// `connector` and its tasks (Java's records carry it; its REST shows
    /// the record's, null when absent).
    fn set_version(&self, _connector: &str, _version: Option<String>) {}
}

impl StatusTopic for KafkaStatusStore {
    fn set_generation(&self, generation: i32) {
        KafkaStatusStore::set_generation(self, generation)
    }
    fn connector_status(&self, name: &str) -> Option<Status> {
        KafkaStatusStore::connector_status(self, name)
    }
    fn task_status(&self, id: &TaskId) -> Option<Status> {
        KafkaStatusStore::task_status(self, id)
    }
    fn set_version(&self, connector: &str, version: Option<String>) {
        KafkaStatusStore::set_version(self, connector, version)
    }
}

/// What the loop shares with REST calls.
#[derive(Clone, Debug)]
struct View {
    generation: i32,
    is_leader: bool,
    /// The leader's REST URL, while one is known.
    leader_url: Option<String>,
    rebalancing: bool,
    protocol: SubProtocol,
}

struct Shared {
    worker: Worker,
    configs: Arc<dyn ConfigTopic>,
    status: Arc<dyn StatusTopic>,
    settings: DistributedConfig,
    view: Mutex<View>,
    /// This worker's REST URL (`http://host:port/`), set before joining.
    url: Mutex<String>,
    left: watch::Sender<bool>,
    /// The connectors with tasks in the last round this worker computed
    /// as leader (assigned, held or being revoked): their tasks may run
    /// somewhere until a later round, so their offsets may not change.
    placed: Mutex<BTreeSet<String>>,
    /// The tasks the current assignment gives this worker (empty while
    /// fenced or out of the group), mirrored by the herder loop for the
    /// exactly-once tasks' ownership check.
    owned_tasks: Mutex<BTreeSet<TaskId>>,
    /// Requests to other workers, over https with the worker's trust
    /// settings when it has any; set by `start`.
    client: std::sync::OnceLock<RestClient>,
    /// Held by the zombie fencing under way (one at a time).
    fencing: tokio::sync::Mutex<()>,
    /// The leader's transactional producer of the config topic in an
    /// exactly-once cluster, while this worker holds its id.
    leader_writer: tokio::sync::Mutex<leader_writes::LeaderWriter>,
    /// Task restarts asked through REST, for the herder loop to do: it
    /// alone starts and stops what runs here, so a restart cannot race a
    /// revocation (simulation seed 7405); set by `start`.
    task_restarts: std::sync::OnceLock<mpsc::UnboundedSender<engine::TaskRestart>>,
}

impl Shared {
    fn client(&self) -> RestClient {
        self.client.get().cloned().unwrap_or_default()
    }

    fn view(&self) -> View {
        match self.view.lock() {
            Ok(v) => v.clone(),
            Err(p) => p.into_inner().clone(),
        }
    }

    fn set_view(&self, f: impl FnOnce(&mut View)) {
        match self.view.lock() {
            Ok(mut v) => f(&mut v),
            Err(p) => f(&mut p.into_inner()),
        }
    }

    fn set_placed(&self, connectors: BTreeSet<String>) {
        match self.placed.lock() {
            Ok(mut p) => *p = connectors,
            Err(p) => *p.into_inner() = connectors,
        }
    }

    fn placed(&self, connector: &str) -> bool {
        match self.placed.lock() {
            Ok(p) => p.contains(connector),
            Err(p) => p.into_inner().contains(connector),
        }
    }

    fn url(&self) -> String {
        match self.url.lock() {
            Ok(u) => u.clone(),
            Err(p) => p.into_inner().clone(),
        }
    }

    fn set_left(&self) {
        // Stored even when nobody waits yet (`send` drops the value when
        // there is no receiver): a later `stopped` or `shutdown` must see it.
        self.left.send_replace(true);
    }

    /// Give new task configs of `name` to the leader: written here when
    /// this worker leads, sent (signed) to the leader's REST otherwise.
    async fn hand_to_leader(&self, name: &str, configs: &[ConfigMap]) -> Result<()> {
        let view = self.view();
        if view.is_leader {
            return self.write_task_configs(name, configs).await;
        }
        let Some(leader) = view.leader_url else {
            return Err(ConnectError::retriable("no leader is known (rebalancing)"));
        };
        let body = internal::task_configs_body(configs);
        let path = format!("connectors/{}/tasks?forward=true", url_segment(name));
        self.send_to_leader(&leader, "POST", &path, body, Duration::from_secs(30))
            .await
    }

    /// An internal request to the leader at `leader` (`path` under its
    /// base URL), signed with the session key when there is one, as every
    /// request between workers (KIP-507); an answer outside 2xx is a
    /// retriable error naming the leader.
    async fn send_to_leader(
        &self,
        leader: &str,
        method: &str,
        path: &str,
        body: Vec<u8>,
        timeout: Duration,
    ) -> Result<()> {
        let reply = self
            .signed_request(leader, method, path, body, timeout)
            .await?;
        if (200..300).contains(&reply.status) {
            Ok(())
        } else {
            Err(ConnectError::retriable(format!(
                "the leader at {leader} answered {method} {path} with {}: {}",
                reply.status,
                String::from_utf8_lossy(&reply.body)
            )))
        }
    }

    /// A request to another worker at `base` (`path` under its base URL),
    /// signed with the session key when there is one (KIP-507).
    async fn signed_request(
        &self,
        base: &str,
        method: &str,
        path: &str,
        body: Vec<u8>,
        timeout: Duration,
    ) -> Result<HttpReply> {
        let mut headers = Vec::new();
        if let Some(key) = self.configs.state().session_key() {
            headers.push((internal::SIGNATURE_HEADER, internal::sign(key, &body)));
            headers.push((
                internal::SIGNATURE_ALGORITHM_HEADER,
                internal::HMAC_SHA256.to_string(),
            ));
        }
        let url = format!("{}/{path}", base.trim_end_matches('/'));
        self.client()
            .send(method, &url, body, &headers, timeout)
            .await
    }

    /// The leader's write of task configs: the `task-` records, then the
    /// `commit-` record that makes them visible.
    async fn write_task_configs(&self, name: &str, configs: &[ConfigMap]) -> Result<()> {
        let mut records: Vec<ConfigRecord> = configs
            .iter()
            .enumerate()
            .map(|(i, c)| ConfigRecord::Task {
                id: TaskId::new(name, u32::try_from(i).unwrap_or(u32::MAX)),
                properties: map_to_properties(c),
            })
            .collect();
        records.push(ConfigRecord::TasksCommit {
            connector: name.to_string(),
            tasks: configs.len() as i32,
        });
        self.write_as_leader(records).await
    }

    /// Write a new session key when there is none or it expires.
    async fn rotate_session_key(&self, state: &ConfigState) -> Result<()> {
        let now = now_ms();
        let ttl = self.settings.key_ttl.as_millis() as i64;
        let fresh = state
            .session_key()
            .is_some_and(|k| k.creation_timestamp.saturating_add(ttl) > now);
        if fresh {
            return Ok(());
        }
        let mut key = vec![0u8; 32];
        getrandom::fill(&mut key)
            .map_err(|e| ConnectError::other(format!("no random bytes for a session key: {e}")))?;
        let record = ConfigRecord::SessionKey(SessionKey {
            key,
            algorithm: internal::HMAC_SHA256.to_string(),
            creation_timestamp: now,
        });
        self.write_as_leader(vec![record]).await
    }
}

/// The herder's side of membership: what to join with (having stopped
/// everything first under eager rebalancing) and, as the leader, the
/// assignment from the config topic.
struct Coordination {
    shared: Arc<Shared>,
    assignor: Mutex<AssignorState>,
    /// Asks the herder loop to finish what the member told it before the
    /// next JoinGroup ([`engine::Barrier`]).
    barrier: mpsc::UnboundedSender<engine::Barrier>,
}

#[async_trait]
impl GroupHandler for Coordination {
    async fn worker_state(&self) -> std::result::Result<WorkerState, HandlerError> {
        // Before every JoinGroup the loop handles what the member told it
        // (revocations, fencing) and, under eager rebalancing, stops
        // everything (Java's `onJoinPrepare`). Until it answers, this
        // worker does not say what it owns: the member's report leaves out
        // revoked work, and nobody may start that work before it has
        // stopped here (review F1). The loop owns what runs and never
        // waits on the member, so waiting for it cannot deadlock; if the
        // loop has ended, the barrier or its answer is dropped and
        // everything is stopped.
        let (done, stopped) = oneshot::channel();
        if self.barrier.send(done).is_ok() {
            let _ = stopped.await;
        }
        // The offset after stopping, as Java's `metadata()` follows
        // `onJoinPrepare`.
        Ok(WorkerState {
            url: self.shared.url(),
            config_offset: self.shared.configs.state().offset(),
        })
    }

    async fn assign(
        &self,
        round: &LeaderRound,
    ) -> std::result::Result<BTreeMap<String, Vec<u8>>, HandlerError> {
        // The snapshot should cover what the members have read; if the
        // read fails the assignor answers CONFIG_MISMATCH by itself.
        let sync = self.shared.settings.worker_sync_timeout;
        if let Err(e) = tokio::time::timeout(sync, self.shared.configs.read_to_end()).await {
            tracing::warn!(error = %e, "the leader could not read the config topic to its end in time");
        }
        let snapshot = self.shared.configs.state().snapshot();
        let members: Vec<Member> = round
            .members
            .iter()
            .map(|m| Member::from_metadata(m.id.clone(), &m.metadata))
            .collect();
        let input = RoundInput {
            leader_id: &round.leader_id,
            members: &members,
            snapshot: &snapshot,
            protocol: round.protocol,
            last_completed_generation: round.last_completed_generation,
            generation: round.generation,
            now_ms: monotonic_ms(),
        };
        if round.protocol == SubProtocol::Eager {
            // Java's EagerAssignor: no state, everything dealt out afresh;
            // the incremental assignor's state is kept for later rounds.
            let result = assign_eager(&input)?.encode()?;
            self.shared.set_placed(
                snapshot
                    .connectors
                    .iter()
                    .filter(|(_, &tasks)| tasks > 0)
                    .map(|(c, _)| c.clone())
                    .collect(),
            );
            return Ok(result);
        }
        let mut state = match self.assignor.lock() {
            Ok(s) => s,
            Err(p) => p.into_inner(),
        };
        let (result, next) = assign(&state, &self.shared.settings.assignor, &input)?;
        self.shared
            .set_placed(next.placed_tasks().map(|t| t.connector.clone()).collect());
        *state = next;
        Ok(result.encode()?)
    }
}

/// A worker of a distributed Connect cluster: the REST [`Herder`] and the
/// group member behind it.
///
/// ```no_run
/// # async fn demo(
/// #     worker: connect_runtime::worker::Worker,
/// #     configs: std::sync::Arc<dyn connect_distributed::herder::ConfigTopic>,
/// #     status: std::sync::Arc<dyn connect_distributed::herder::StatusTopic>,
/// #     settings: connect_distributed::herder::DistributedConfig,
/// # ) -> connect_api::Result<()> {
/// use connect_distributed::herder::DistributedHerder;
/// use connect_runtime::herder::Herder;
///
/// let herder = DistributedHerder::new(worker, configs, status, settings);
/// herder.start("http://10.0.0.5:8083/")?; // joins the group
/// println!("{:?}", herder.connector_names().await);
/// herder.shutdown().await; // stops the work, leaves the group
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct DistributedHerder {
    shared: Arc<Shared>,
    stop: Arc<watch::Sender<bool>>,
}

impl DistributedHerder {
    /// A herder over `worker` (which runs what this worker is assigned),
    /// the config and status topics and the distributed settings. It joins
    /// the group on [`DistributedHerder::start`].
    pub fn new(
        worker: Worker,
        configs: Arc<dyn ConfigTopic>,
        status: Arc<dyn StatusTopic>,
        settings: DistributedConfig,
    ) -> DistributedHerder {
        let protocol = settings.group.connect_protocol;
        DistributedHerder {
            shared: Arc::new(Shared {
                worker,
                configs,
                status,
                settings,
                view: Mutex::new(View {
                    generation: -1,
                    is_leader: false,
                    leader_url: None,
                    rebalancing: true,
                    protocol,
                }),
                url: Mutex::new(String::new()),
                left: watch::channel(false).0,
                placed: Mutex::new(BTreeSet::new()),
                owned_tasks: Mutex::new(BTreeSet::new()),
                client: std::sync::OnceLock::new(),
                fencing: tokio::sync::Mutex::new(()),
                leader_writer: tokio::sync::Mutex::new(Default::default()),
                task_restarts: std::sync::OnceLock::new(),
            }),
            stop: Arc::new(watch::channel(false).0),
        }
    }

    /// Join the group, advertising `url` (this worker's REST base URL,
    /// reachable by the other workers), and start the herder loop on the
    /// current tokio runtime.
    pub fn start(&self, url: &str) -> Result<()> {
        let client = RestClient::from_worker(self.shared.worker.config().originals())?;
        let _ = self.shared.client.set(client);
        let url = if url.ends_with('/') {
            url.to_string()
        } else {
            format!("{url}/")
        };
        match self.shared.url.lock() {
            Ok(mut u) => *u = url,
            Err(p) => *p.into_inner() = url,
        }
        if self.shared.settings.exactly_once_source == ExactlyOnceSourceSupport::Enabled {
            let fencing = fencing::HerderFencing(Arc::downgrade(&self.shared));
            self.shared.worker.set_zombie_fencing(Arc::new(fencing));
        }
        let (barrier, barriers) = mpsc::unbounded_channel();
        let handler = Arc::new(Coordination {
            shared: self.shared.clone(),
            assignor: Mutex::new(AssignorState::default()),
            barrier,
        });
        let (member, events) = GroupMember::start(self.shared.settings.group.clone(), handler)
            .map_err(|e| ConnectError::other(format!("cannot join the Connect group: {e}")))?;
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        self.shared.worker.route_reconfiguration(tx);
        let (restart_tx, task_restarts) = mpsc::unbounded_channel();
        let _ = self.shared.task_restarts.set(restart_tx);
        let engine = engine::Engine::new(
            self.shared.clone(),
            Some(member),
            events,
            rx,
            barriers,
            task_restarts,
            self.stop.subscribe(),
        );
        // What the herder and the units it starts log carries the worker's
        // client and group ids, as Java's `[Worker clientId=…]` context.
        let group = &self.shared.settings.group;
        let span = tracing::info_span!(
            "worker",
            client_id = %group.client_id,
            group_id = %group.group_id
        );
        let engine = tokio::spawn(tracing::Instrument::instrument(engine.run(), span));
        tokio::spawn(supervise(engine, self.shared.clone()));
        // Automatic restarts (auto.restart.*) of the units this worker runs.
        let weak = Arc::downgrade(&self.shared);
        let stop = self.stop.clone();
        let worker = &self.shared.worker;
        tokio::spawn(connect_runtime::herder::run_auto_restarts(
            move || {
                if *stop.borrow() {
                    return None;
                }
                let shared = weak.upgrade()?;
                Some(Arc::new(DistributedHerder {
                    shared,
                    stop: stop.clone(),
                }))
            },
            worker.status_store().clone(),
            worker.metrics().clone(),
            worker.config().originals().clone(),
        ));
        Ok(())
    }

    /// Stop all work (flushing and committing), leave the group and wait
    /// for the loop to end.
    pub async fn shutdown(&self) {
        // Stored even if the loop has ended already: the automatic
        // restarts read it too.
        self.stop.send_replace(true);
        let mut left = self.shared.left.subscribe();
        let _ = tokio::time::timeout(Duration::from_secs(60), left.wait_for(|l| *l)).await;
    }

    /// The unit runner this herder drives.
    pub fn worker(&self) -> &Worker {
        &self.shared.worker
    }

    /// The config topic this herder reads and writes.
    pub fn config_topic(&self) -> Arc<dyn ConfigTopic> {
        self.shared.configs.clone()
    }

    /// Resolves when the herder loop has ended: after
    /// [`DistributedHerder::shutdown`], or by itself when the group member
    /// stopped for good (a fatal error) or the herder loop failed, and the
    /// worker cannot go on (its connectors and tasks are stopped then).
    pub async fn stopped(&self) {
        let mut left = self.shared.left.subscribe();
        let _ = left.wait_for(|l| *l).await;
    }

    /// One try of [`Herder::restart_task`]: here, or sent on to the owner.
    async fn restart_task_once(&self, name: &str, task: u32) -> Result<()> {
        if self.restart_if_here(name, task).await? {
            return Ok(());
        }
        // Kafka sends a task restart on to the worker that runs it. The
        // owner comes from the status topic, which names workers by their
        // advertised address, as this worker's own URL does: a stale status
        // naming this worker is a 409, never a request to itself.
        let id = TaskId::new(name, task);
        let owner = self
            .shared
            .status
            .task_status(&id)
            .map(|s| s.worker_id)
            .unwrap_or_default();
        let me = self.shared.url();
        // Workers of a cluster share a scheme: the owner is reached with
        // the one this worker advertises.
        let (scheme, me) = me.split_once("://").unwrap_or(("http", &me));
        let me = me.trim_end_matches('/');
        if owner.is_empty() || owner == me {
            return Err(not_running_here(name, task));
        }
        // forward=false: the owner restarts it or answers 409, never
        // forwards again (Kafka's bound on hops).
        let url = format!(
            "{scheme}://{owner}/connectors/{}/tasks/{task}/restart?forward=false",
            url_segment(name)
        );
        let reply = self
            .shared
            .client()
            .send("POST", &url, Vec::new(), &[], Duration::from_secs(30))
            .await
            .map_err(|e| {
                ConnectError::conflict(format!(
                    "the worker {owner} running {name}-{task} did not answer ({e}); retry after the rebalance"
                ))
            })?;
        if (200..300).contains(&reply.status) {
            Ok(())
        } else {
            Err(owner_refusal(&owner, reply.status, &reply.body))
        }
    }

    /// Restart task `task` of `name` when it runs on this worker (what the
    /// worker runs, not what the status topic last said: Kafka checks its
    /// assignment); `false` when it does not run here. The herder loop
    /// does it, between the rounds it handles (Kafka's tick thread).
    async fn restart_if_here(&self, name: &str, task: u32) -> Result<bool> {
        let state = self.exists(name)?;
        let id = TaskId::new(name, task);
        if state.task_config(&id).is_none() {
            return Err(ConnectError::not_found(format!(
                "Task {name}-{task} not found"
            )));
        }
        let Some(restarts) = self.shared.task_restarts.get() else {
            return Ok(false);
        };
        let (done, answer) = oneshot::channel();
        if restarts.send(engine::TaskRestart { id, done }).is_err() {
            return Ok(false);
        }
        answer
            .await
            .map_err(|_| ConnectError::other("the herder stopped before restarting the task"))
    }

    /// Whether this worker leads the group now.
    pub fn is_leader(&self) -> bool {
        self.shared.view().is_leader
    }

    /// The leader's REST URL, while one is known.
    pub fn leader_url(&self) -> Option<String> {
        self.shared.view().leader_url
    }

    /// The generation of the last completed round (-1 before the first).
    pub fn generation(&self) -> i32 {
        self.shared.view().generation
    }

    /// The internal request `POST /connectors/{c}/tasks`: new task configs
    /// from the connector's owner. Only the leader takes them; with a
    /// session key the request must be signed with it (`signature`: the
    /// algorithm and signature headers). A worker that does not lead sends
    /// it on to the leader unless `forward` is `Some(false)`.
    pub async fn take_task_configs(
        &self,
        name: &str,
        body: &[u8],
        signature: Option<(&str, &str)>,
        forward: Option<bool>,
    ) -> std::result::Result<(), InternalRequestError> {
        let path = format!("connectors/{}/tasks", url_segment(name));
        let Some(state) = self
            .leader_signed_or_forward("POST", &path, body, signature, forward)
            .await?
        else {
            return Ok(());
        };
        if state.connector_config(name).is_none() {
            return Err(InternalRequestError::Failed(not_found(name)));
        }
        let configs = internal::parse_task_configs(body).map_err(InternalRequestError::Failed)?;
        self.shared
            .write_task_configs(name, &configs)
            .await
            .map_err(InternalRequestError::Failed)
    }

    /// An internal request is the leader's to take, and must be signed
    /// with the session key once the group signs them (the `sessioned`
    /// sub-protocol, KIP-507): the config state it was checked against
    /// when this worker leads. A worker that does not lead sends it on to
    /// the leader (`None` then, with the leader's answer taken), as Kafka's
    /// `completeOrForwardRequest` does: unless it was sent on already
    /// (`forward=false`), and only once its signature checks out here, so
    /// a request is never sent on signed by this worker that its sender
    /// could not sign. The copy sent on carries `forward=true` when the
    /// request had no `forward` (one more hop, for a leader that changed
    /// meanwhile) and `forward=false` otherwise: two hops at most.
    async fn leader_signed_or_forward(
        &self,
        method: &str,
        path: &str,
        body: &[u8],
        signature: Option<(&str, &str)>,
        forward: Option<bool>,
    ) -> std::result::Result<Option<ConfigState>, InternalRequestError> {
        let view = self.shared.view();
        let state = self.shared.configs.state();
        if view.protocol == SubProtocol::Sessioned {
            match state.session_key() {
                Some(key) => internal::verify(key, body, signature)?,
                None if view.is_leader => return Err(InternalRequestError::NoSessionKey),
                // Not the leader: the leader may have the key already.
                None => return Err(InternalRequestError::NotLeader(view.leader_url)),
            }
        }
        if view.is_leader {
            return Ok(Some(state));
        }
        let leader = match (view.leader_url, forward) {
            (Some(leader), None | Some(true)) => leader,
            (leader, _) => return Err(InternalRequestError::NotLeader(leader)),
        };
        let path = format!("{path}?forward={}", forward.is_none());
        let reply = self
            .shared
            .signed_request(
                &leader,
                method,
                &path,
                body.to_vec(),
                INTERNAL_FORWARD_TIMEOUT,
            )
            .await
            .map_err(|e| {
                InternalRequestError::Failed(e.context(format!(
                    "cannot send the request on to the leader at {leader}"
                )))
            })?;
        if (200..300).contains(&reply.status) {
            return Ok(None);
        }
        Err(InternalRequestError::Leader {
            leader,
            status: reply.status,
            message: String::from_utf8_lossy(&reply.body).into_owned(),
        })
    }

    /// The internal request `PUT /connectors/{c}/fence`: the leader fences
    /// the zombies of an exactly-once source connector (module `fencing`).
    pub async fn take_fencing_request(
        &self,
        name: &str,
        body: &[u8],
        signature: Option<(&str, &str)>,
        forward: Option<bool>,
    ) -> std::result::Result<(), InternalRequestError> {
        let path = format!("connectors/{}/fence", url_segment(name));
        match self
            .leader_signed_or_forward("PUT", &path, body, signature, forward)
            .await?
        {
            Some(_) => self.shared.fence_zombies(name).await,
            None => Ok(()),
        }
    }

    fn state(&self) -> ConfigState {
        self.shared.configs.state()
    }

    fn exists(&self, name: &str) -> Result<ConfigState> {
        let state = self.state();
        if state.connector_config(name).is_some() {
            Ok(state)
        } else {
            Err(not_found(name))
        }
    }

    fn kind_of(&self, config: &ConfigMap) -> String {
        config
            .get("connector.class")
            .and_then(|c| self.shared.worker.plugins().connector(c.trim()).ok())
            .map_or_else(|| "unknown".to_string(), |p| p.kind.as_str().to_string())
    }

    fn info(&self, name: &str, state: &ConfigState) -> Result<ConnectorInfo> {
        let config = state
            .connector_config(name)
            .map(properties_to_map)
            .ok_or_else(|| not_found(name))?;
        let tasks = state
            .tasks(name)
            .into_iter()
            .map(|id| TaskRef {
                connector: name.to_string(),
                task: id.task,
            })
            .collect();
        Ok(ConnectorInfo {
            name: name.to_string(),
            kind: self.kind_of(&config),
            config,
            tasks,
        })
    }

    /// Checked with its `${provider:...}` references resolved, as the
    /// connector will see it (and as the standalone herder checks).
    fn check_valid(&self, config: &ConfigMap) -> Result<()> {
        let worker = &self.shared.worker;
        check_connector_config(worker.plugins(), &worker.resolved(config)?, &self.rules())
    }

    fn state_info(&self, status: Option<Status>, version: &str) -> StateInfo {
        match status {
            Some(s) => StateInfo {
                state: s.state.name().to_string(),
                worker_id: s.worker_id,
                version: s.version.unwrap_or_else(|| version.to_string()),
                trace: s.trace,
            },
            None => StateInfo {
                state: State::Unassigned.name().to_string(),
                worker_id: String::new(),
                version: version.to_string(),
                trace: None,
            },
        }
    }

    fn version_of(&self, config: &ConfigMap) -> String {
        config
            .get("connector.class")
            .and_then(|c| self.shared.worker.plugins().connector(c.trim()).ok())
            .map(|p| p.create().as_connector_ref().version())
            .unwrap_or_default()
    }
}

/// How long a worker that does not lead waits for the leader's answer to
/// an internal request it sent on (Kafka bounds it with the REST client's
/// request timeout).
const INTERNAL_FORWARD_TIMEOUT: Duration = Duration::from_secs(60);

/// Why an internal request was refused.
#[derive(Debug, thiserror::Error)]
pub enum InternalRequestError {
    /// This worker does not lead the group (409; the leader's URL when
    /// known, for the sender to retry there).
    #[error("this worker is not the leader{}", .0.as_ref().map(|u| format!("; the leader is {u}")).unwrap_or_default())]
    NotLeader(Option<String>),
    /// The group signs requests but the leader has no session key yet
    /// (409 in Kafka: retry after the rebalance).
    #[error("no session key has been distributed yet; retry after the rebalance")]
    NoSessionKey,
    /// A missing, unsupported or wrong signature.
    #[error(transparent)]
    Signature(#[from] internal::SignatureError),
    /// The request itself failed.
    #[error(transparent)]
    Failed(ConnectError),
    /// Sent on to the leader, which refused it (its status and message).
    #[error("the leader at {leader} answered {status}: {message}")]
    Leader {
        /// The leader's URL.
        leader: String,
        /// The leader's HTTP status.
        status: u16,
        /// The leader's answer.
        message: String,
    },
}

#[async_trait]
impl Herder for DistributedHerder {
    fn worker_id(&self) -> &str {
        self.shared.worker.worker_id()
    }

    fn config(&self) -> &WorkerConfig {
        self.shared.worker.config()
    }

    fn plugins(&self) -> &Plugins {
        self.shared.worker.plugins()
    }

    fn set_listener_address(&self, addr: SocketAddr) {
        self.shared.worker.set_listener_address(addr);
    }

    fn leader_writes(&self) -> RequestOwner {
        let view = self.shared.view();
        match view.leader_url {
            _ if view.is_leader => RequestOwner::Here,
            Some(url) => RequestOwner::Leader(url),
            None => RequestOwner::Unknown,
        }
    }

    async fn kafka_cluster_id(&self) -> Option<String> {
        self.shared.worker.kafka_cluster_id().await
    }

    fn metrics(&self) -> Option<&connect_runtime::metrics::WorkerMetrics> {
        Some(self.shared.worker.metrics())
    }

    fn validate(&self, config: &ConfigMap) -> Result<(String, Vec<ConfigReport>)> {
        validate_connector_config(self.shared.worker.plugins(), config, &self.rules())
    }

    async fn connector_names(&self) -> Vec<String> {
        self.state().connectors().map(str::to_string).collect()
    }

    async fn create_connector(
        &self,
        name: &str,
        mut config: ConfigMap,
        initial: TargetState,
    ) -> Result<ConnectorInfo> {
        config.insert("name".into(), name.to_string());
        self.check_valid(&config)?;
        self.shared.configs.read_to_end().await?;
        if self.state().connector_config(name).is_some() {
            return Err(ConnectError::conflict(format!(
                "Connector {name} already exists"
            )));
        }
        let mut records = Vec::new();
        // As Kafka: the target state first, so no worker starts it
        // running when it should not.
        if initial != TargetState::Started {
            records.push(ConfigRecord::TargetState {
                connector: name.to_string(),
                state: initial,
            });
        }
        records.push(ConfigRecord::Connector {
            connector: name.to_string(),
            properties: map_to_properties(&config),
        });
        self.shared.configs.write(records).await?;
        self.info(name, &self.state())
    }

    async fn put_connector_config(
        &self,
        name: &str,
        mut config: ConfigMap,
    ) -> Result<(ConnectorInfo, bool)> {
        config.insert("name".into(), name.to_string());
        self.check_valid(&config)?;
        self.shared.configs.read_to_end().await?;
        let created = self.state().connector_config(name).is_none();
        self.shared
            .configs
            .write(vec![ConfigRecord::Connector {
                connector: name.to_string(),
                properties: map_to_properties(&config),
            }])
            .await?;
        Ok((self.info(name, &self.state())?, created))
    }

    async fn delete_connector(&self, name: &str) -> Result<()> {
        self.shared.configs.read_to_end().await?;
        self.exists(name)?;
        self.shared
            .configs
            .write(vec![
                ConfigRecord::Tombstone(ConfigKey::Connector(name.to_string())),
                ConfigRecord::Tombstone(ConfigKey::TargetState(name.to_string())),
            ])
            .await
    }

    async fn connector_info(&self, name: &str) -> Result<ConnectorInfo> {
        self.info(name, &self.state())
    }

    async fn task_configs(&self, name: &str) -> Result<Vec<ConfigMap>> {
        let state = self.exists(name)?;
        Ok(engine::committed_task_configs(&state, name).unwrap_or_default())
    }

    async fn connector_status(&self, name: &str) -> Result<ConnectorStatus> {
        let state = self.exists(name)?;
        let config = state
            .connector_config(name)
            .map(properties_to_map)
            .unwrap_or_default();
        let version = self.version_of(&config);
        let connector = self.shared.status.connector_status(name).ok_or_else(|| {
            ConnectError::not_found(format!("No status found for connector {name}"))
        })?;
        let tasks = state
            .tasks(name)
            .into_iter()
            .filter_map(|id| {
                let status = self.shared.status.task_status(&id)?;
                Some(TaskStateInfo {
                    id: id.task,
                    state: self.state_info(Some(status), &version),
                })
            })
            .collect();
        Ok(ConnectorStatus {
            name: name.to_string(),
            connector: self.state_info(Some(connector), &version),
            tasks,
            kind: self.kind_of(&config),
        })
    }

    async fn task_status(&self, name: &str, task: u32) -> Result<TaskStateInfo> {
        let status = self.connector_status(name).await?;
        status
            .tasks
            .into_iter()
            .find(|t| t.id == task)
            .ok_or_else(|| {
                ConnectError::not_found(format!("No status found for task {name}-{task}"))
            })
    }

    async fn pause(&self, name: &str) -> Result<()> {
        self.retarget(name, TargetState::Paused).await
    }

    async fn resume(&self, name: &str) -> Result<()> {
        self.retarget(name, TargetState::Started).await
    }

    async fn stop(&self, name: &str) -> Result<()> {
        self.retarget(name, TargetState::Stopped).await
    }

    async fn restart_connector(
        &self,
        name: &str,
        include_tasks: bool,
        only_failed: bool,
    ) -> Result<ConnectorStatus> {
        self.shared.configs.read_to_end().await?;
        self.exists(name)?;
        // The plan, as Kafka answers it: what will restart shows RESTARTING.
        let mut plan = self.connector_status(name).await?;
        let failed = |s: &StateInfo| s.state == State::Failed.name();
        if !only_failed || failed(&plan.connector) {
            plan.connector.state = State::Restarting.name().to_string();
        }
        if include_tasks {
            for t in &mut plan.tasks {
                if !only_failed || failed(&t.state) {
                    t.state.state = State::Restarting.name().to_string();
                }
            }
        }
        self.shared
            .configs
            .write(vec![ConfigRecord::RestartRequest {
                connector: name.to_string(),
                include_tasks,
                only_failed,
            }])
            .await?;
        Ok(plan)
    }

    async fn restart_task(&self, name: &str, task: u32) -> Result<()> {
        // While the task moves (its owner is not known yet, is itself
        // restarting it, or has died and its session not yet run out) the
        // restart waits for the rebalance, as other requests do, instead of
        // failing at once; after REBALANCE_WAIT, Kafka's 409.
        let deadline = tokio::time::Instant::now() + REBALANCE_WAIT;
        loop {
            match self.restart_task_once(name, task).await {
                Err(e)
                    if matches!(e.kind(), connect_api::ErrorKind::Conflict)
                        && tokio::time::Instant::now() < deadline =>
                {
                    tokio::time::sleep(Duration::from_millis(250)).await;
                }
                done => return done,
            }
        }
    }

    async fn restart_task_here(&self, name: &str, task: u32) -> Result<()> {
        if self.restart_if_here(name, task).await? {
            Ok(())
        } else {
            Err(not_running_here(name, task))
        }
    }

    async fn connector_topics(&self, name: &str) -> Result<Vec<String>> {
        self.exists(name)?;
        self.shared.worker.tracked_topics(name)
    }

    async fn reset_connector_topics(&self, name: &str) -> Result<()> {
        self.exists(name)?;
        self.shared.worker.reset_tracked_topics(name)
    }

    async fn connector_offsets(&self, name: &str) -> Result<ConnectorOffsets> {
        let state = self.exists(name)?;
        let config = state
            .connector_config(name)
            .map(properties_to_map)
            .unwrap_or_default();
        self.shared.worker.offsets_of(name, &config).await
    }

    async fn alter_connector_offsets(
        &self,
        name: &str,
        changes: Vec<OffsetChange>,
    ) -> Result<String> {
        let config = self.stopped_config(name).await?;
        self.shared
            .worker
            .modify_offsets_of(name, &config, Some(changes))
            .await
    }

    async fn reset_connector_offsets(&self, name: &str) -> Result<String> {
        let config = self.stopped_config(name).await?;
        self.shared
            .worker
            .modify_offsets_of(name, &config, None)
            .await
    }

    async fn accept_task_configs(
        &self,
        name: &str,
        body: &[u8],
        signature: Option<(&str, &str)>,
        forward: Option<bool>,
    ) -> std::result::Result<(), InternalRefusal> {
        self.take_task_configs(name, body, signature, forward)
            .await
            .map_err(InternalRequestError::refusal)
    }

    async fn fence_zombies(
        &self,
        name: &str,
        body: &[u8],
        signature: Option<(&str, &str)>,
        forward: Option<bool>,
    ) -> std::result::Result<(), InternalRefusal> {
        self.take_fencing_request(name, body, signature, forward)
            .await
            .map_err(InternalRequestError::refusal)
    }
}

impl InternalRequestError {
    /// The HTTP status Kafka answers with.
    pub fn status(&self) -> u16 {
        match self {
            InternalRequestError::NotLeader(_) | InternalRequestError::NoSessionKey => 409,
            InternalRequestError::Leader { status, .. } => *status,
            InternalRequestError::Signature(internal::SignatureError::Invalid) => 403,
            InternalRequestError::Signature(_) => 400,
            InternalRequestError::Failed(e) => match e.kind() {
                connect_api::ErrorKind::NotFound => 404,
                connect_api::ErrorKind::Config { .. } => 400,
                connect_api::ErrorKind::Conflict => 409,
                _ => 500,
            },
        }
    }

    fn refusal(self) -> InternalRefusal {
        InternalRefusal {
            status: self.status(),
            message: self.to_string(),
        }
    }
}

impl DistributedHerder {
    async fn retarget(&self, name: &str, target: TargetState) -> Result<()> {
        self.shared.configs.read_to_end().await?;
        self.exists(name)?;
        let mut records = Vec::with_capacity(2);
        if target == TargetState::Stopped {
            // As Java's stopConnector: no task configs first, then the
            // target, so a STOPPED connector has no tasks the moment it
            // reads as STOPPED (offsets may then change, review F11).
            records.push(ConfigRecord::TasksCommit {
                connector: name.to_string(),
                tasks: 0,
            });
        }
        records.push(ConfigRecord::TargetState {
            connector: name.to_string(),
            state: target,
        });
        self.shared.configs.write(records).await
    }

    /// The config of `name` when it is STOPPED (KIP-875's precondition for
    /// offset changes), with Kafka's message otherwise.
    async fn stopped_config(&self, name: &str) -> Result<ConfigMap> {
        self.shared.configs.read_to_end().await?;
        let state = self.exists(name)?;
        // Kafka's check: STOPPED, and no task configs left (the tasks were
        // at least told to stop).
        let stopped = state.target_state(name) == Some(TargetState::Stopped)
            && state.task_count(name).unwrap_or(0) == 0;
        if !stopped {
            return Err(ConnectError::config("request", format!(
                "Connectors must be in the STOPPED state before their offsets can be modified. This can be done for the specified connector by issuing a 'PUT' request to the '/connectors/{name}/stop' endpoint"
            )));
        }
        // Not while the assignment moves, nor while the last round left a
        // task of this connector somewhere (the round that revokes it has
        // not come, or its owner has not yet joined again, which it does
        // once the task has stopped): a task still stopping would commit
        // its offsets over the change. Waited out for a while first.
        if !self.settled(Some(name)).await {
            return Err(ConnectError::conflict(
                "Cannot complete request because of a conflicting operation (e.g. worker rebalance)",
            ));
        }
        Ok(state
            .connector_config(name)
            .map(properties_to_map)
            .unwrap_or_default())
    }
}

impl DistributedHerder {
    /// Wait up to [`REBALANCE_WAIT`] for no rebalance to be under way on
    /// this worker and, with `stopped`, for the last round to have placed
    /// no task of that connector; whether that came.
    async fn settled(&self, stopped: Option<&str>) -> bool {
        let deadline = tokio::time::Instant::now() + REBALANCE_WAIT;
        while self.shared.view().rebalancing || stopped.is_some_and(|c| self.shared.placed(c)) {
            if tokio::time::Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        true
    }
}

impl DistributedHerder {
    /// What this worker adds to a connector config's checks: its
    /// exactly-once source support (`exactly.once.source.support=enabled`
    /// only; `preparing` runs tasks at least once) and its client override
    /// policy.
    fn rules(&self) -> WorkerRules {
        let exactly_once = match self.shared.settings.exactly_once_source {
            ExactlyOnceSourceSupport::Enabled => ExactlyOnceSource::Enabled,
            _ => ExactlyOnceSource::Disabled,
        };
        WorkerRules {
            exactly_once,
            client_overrides: self.shared.worker.config().client_override_policy().clone(),
        }
    }
}

fn not_found(name: &str) -> ConnectError {
    ConnectError::not_found(format!("Connector {name} not found"))
}

pub(super) use connect_runtime::kafka::time::now_ms;

/// The assignor's clock: milliseconds since this process first asked, on
/// tokio's monotonic clock. Only differences matter to it (when a delayed
/// rebalance is due), so a wall-clock step cannot stretch or cut
/// `scheduled.rebalance.max.delay.ms` (Java reads the wall clock there),
/// and under a paused runtime (the cluster simulation) the delay runs on
/// simulated time.
fn monotonic_ms() -> i64 {
    static EPOCH: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    let epoch = *EPOCH.get_or_init(std::time::Instant::now);
    let since = tokio::time::Instant::now()
        .into_std()
        .saturating_duration_since(epoch);
    i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
}

/// A task restart for a task this worker does not run (and may not pass
/// on): Kafka's 409 while the assignment settles.
fn not_running_here(name: &str, task: u32) -> ConnectError {
    ConnectError::conflict(format!(
        "Task {name}-{task} is not running on this worker and its owner is not known here yet; retry after the rebalance"
    ))
}

/// The refusal of the worker a request was sent on to, with its status
/// kept as Java's forwarding keeps it: a 409 from the owner (its restart
/// of that task is still under way, or it no longer runs it) stays a 409
/// the user can retry, a 404 stays a 404, the rest are 500s naming the
/// owner. The owner's JSON body gives the message.
fn owner_refusal(owner: &str, status: u16, body: &[u8]) -> ConnectError {
    let message = serde_json::from_slice::<serde_json::Value>(body)
        .ok()
        .and_then(|v| v["message"].as_str().map(str::to_string))
        .unwrap_or_else(|| String::from_utf8_lossy(body).into_owned());
    match status {
        409 => ConnectError::conflict(message),
        404 => ConnectError::not_found(message),
        _ => ConnectError::other(format!("the worker {owner} answered {status}: {message}")),
    }
}

/// A connector name as one URL path segment.
fn url_segment(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for b in name.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Java's properties (string or null values) as a runtime config: a null
/// value is left out, as Java's `ConfigDef` treats it as unset.
pub(crate) fn properties_to_map(props: &Properties) -> ConfigMap {
    props
        .iter()
        .filter_map(|(k, v)| v.as_ref().map(|v| (k.clone(), v.clone())))
        .collect()
}

fn map_to_properties(config: &ConfigMap) -> Properties {
    config
        .iter()
        .map(|(k, v)| (k.clone(), Some(v.clone())))
        .collect()
}

/// Watch the herder loop: if it ends without having left (a panic, a bug
/// of ours: plugin panics are contained where they happen), stop every
/// unit this worker runs, so nothing runs unmanaged while the group gives
/// its work to others, and report the herder stopped
/// ([`DistributedHerder::stopped`]): the process exits non-zero, as Java's
/// worker exits when its herder thread dies.
async fn supervise(engine: tokio::task::JoinHandle<()>, shared: Arc<Shared>) {
    let Err(ended) = engine.await else {
        return; // it left the group and said so itself
    };
    let why = if ended.is_panic() {
        let payload = ended.into_panic();
        payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic without a message".to_string())
    } else {
        "it was cancelled".to_string()
    };
    tracing::error!(reason = %why,
        "the herder loop ended unexpectedly; stopping every connector and task of this worker");
    shared.worker.shutdown().await;
    shared.set_left();
}

#[cfg(test)]
mod tests;
