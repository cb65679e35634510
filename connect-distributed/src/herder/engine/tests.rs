//! The herder loop's decisions one event at a time: an [`Engine`] without
//! a group member, handed [`GroupEvent`]s directly, over the in-memory
//! Kafka on paused time. The simulation reaches these moments only when a
//! seed happens to line them up (an assignment arriving while the worker
//! leaves, a fence while a task is slow to stop); here each is set up
//! exactly, and each test fails if the rule it names is broken.

use super::*;
use crate::herder::tests::{
    eventually, herder_with_connector, herder_with_connector_on, CONNECTOR, GRACEFUL,
};
use crate::protocol::{Assignment, ConnectorAssignment};
use connect_runtime::kafka::memory::{FaultKind, MemoryKafka};

struct Harness {
    engine: Engine,
    shared: Arc<Shared>,
    /// The engine's ends of its channels, kept open.
    _events: mpsc::UnboundedSender<GroupEvent>,
    _reconfigure: mpsc::UnboundedSender<String>,
    _barriers: mpsc::UnboundedSender<Barrier>,
    _restarts: mpsc::UnboundedSender<TaskRestart>,
    _shutdown: watch::Sender<bool>,
}

/// A worker whose config topic holds connector [`CONNECTOR`] with one
/// committed task (hanging in `stop`), and its engine, not in any group.
async fn harness() -> Harness {
    harness_for(herder_with_connector().await)
}

/// The engine of `herder`, not in any group.
fn harness_for(herder: crate::herder::DistributedHerder) -> Harness {
    let shared = herder.shared.clone();
    let (events_tx, events) = mpsc::unbounded_channel();
    let (reconfigure_tx, reconfigure) = mpsc::unbounded_channel();
    let (barriers_tx, barriers) = mpsc::unbounded_channel();
    let (restarts_tx, restarts) = mpsc::unbounded_channel();
    let (shutdown_tx, shutdown) = watch::channel(false);
    let engine = Engine::new(
        shared.clone(),
        None,
        events,
        reconfigure,
        barriers,
        restarts,
        shutdown,
    );
    Harness {
        engine,
        shared,
        _events: events_tx,
        _reconfigure: reconfigure_tx,
        _barriers: barriers_tx,
        _restarts: restarts_tx,
        _shutdown: shutdown_tx,
    }
}

/// Generation `generation`, as a follower, giving this worker task
/// `c-0`, computed from the config topic as it is now.
fn joined(h: &Harness, generation: i32) -> GroupEvent {
    joined_with(h, generation, vec![0])
}

/// Generation `generation`, as a follower, giving this worker `tasks` of
/// [`CONNECTOR`] (-1: its connector instance).
fn joined_with(h: &Harness, generation: i32, tasks: Vec<i32>) -> GroupEvent {
    GroupEvent::Joined(Box::new(assignment(h, generation, tasks)))
}

/// The round [`joined_with`] reports, for a test to change before sending.
fn assignment(h: &Harness, generation: i32, tasks: Vec<i32>) -> Joined {
    let assignment = Assignment {
        version: 1,
        error: 0,
        leader: "leader".into(),
        leader_url: "http://10.0.0.1:8083/".into(),
        config_offset: h.shared.configs.state().offset(),
        assigned: vec![ConnectorAssignment {
            connector: CONNECTOR.into(),
            tasks,
        }],
        revoked: Vec::new(),
        delay: 0,
    };
    Joined {
        generation,
        member_id: "w".into(),
        leader_id: "leader".into(),
        is_leader: false,
        protocol: SubProtocol::Sessioned,
        received: assignment.clone(),
        owned: assignment,
    }
}

async fn running_tasks(h: &Harness) -> Vec<TaskId> {
    h.shared
        .worker
        .running_units()
        .await
        .tasks
        .into_iter()
        .collect()
}

/// This worker joins generation 1 with task `c-0` and runs it.
async fn running(h: &mut Harness) {
    let event = joined(h, 1);
    h.engine.on_group(event).await;
    assert_eq!(
        running_tasks(h).await,
        [TaskId::new(CONNECTOR, 0)],
        "the assigned task runs"
    );
    assert_eq!(
        owned_for_fencing(h),
        BTreeSet::from([TaskId::new(CONNECTOR, 0)]),
        "exactly-once tasks see it owned here"
    );
}

/// Review F10: once the worker asked to leave, an assignment of the
/// membership it gives up is not acted on: nothing starts, the view keeps
/// no generation, until the member says it is out.
#[tokio::test(start_paused = true)]
async fn an_assignment_for_a_membership_being_left_starts_nothing() {
    let mut h = harness().await;
    h.engine.leaving = true;
    let event = joined(&h, 7);
    h.engine.on_group(event).await;
    assert!(running_tasks(&h).await.is_empty(), "nothing started");
    assert_eq!(h.shared.view().generation, -1, "the generation not taken");
    // Out of the group now: the next assignment is acted on.
    h.engine
        .on_group(GroupEvent::Left {
            backoff: Duration::ZERO,
        })
        .await;
    running(&mut h).await;
}

/// A fenced worker gives its work `task.shutdown.graceful.timeout.ms` to
/// stop, but never past a second before its session can end (the
/// coordinator may hand the work out then): a task stuck in `stop` is
/// aborted at that moment, not sooner and not later.
#[tokio::test(start_paused = true)]
async fn a_fenced_worker_stops_its_work_before_the_session_ends() {
    for (session_left, waited) in [
        // A session longer than the graceful timeout: the timeout bounds.
        (Duration::from_secs(30), GRACEFUL),
        // A session about to end: one second before it does.
        (Duration::from_secs(3), Duration::from_secs(2)),
        // Past already: at once.
        (Duration::ZERO, Duration::ZERO),
    ] {
        let mut h = harness().await;
        running(&mut h).await;
        let fenced = Instant::now();
        h.engine
            .on_group(GroupEvent::Fenced {
                since_last_heartbeat: Duration::from_secs(10),
                session_ends: fenced + session_left,
            })
            .await;
        // The stop ends at its deadline (the abort may take a tick).
        let took = fenced.elapsed();
        assert!(
            took >= waited && took <= waited + Duration::from_millis(100),
            "the stop had {took:?}, not {waited:?}, with the session ending in {session_left:?}"
        );
        assert!(running_tasks(&h).await.is_empty(), "the task is stopped");
        assert!(
            h.engine.owned.tasks.is_empty(),
            "nothing owned while fenced"
        );
        assert!(
            owned_for_fencing(&h).is_empty(),
            "nor for exactly-once tasks"
        );
        assert!(h.shared.view().leader_url.is_none(), "no leader known");
    }
}

/// A failed assignment (Java's config mismatch, `CONFIG_MISMATCH`) naming
/// the config offset `config_offset`.
fn mismatch(h: &Harness, is_leader: bool, config_offset: i64) -> GroupEvent {
    let mut j = assignment(h, 3, vec![0]);
    j.is_leader = is_leader;
    j.received.error = crate::protocol::CONFIG_MISMATCH;
    j.received.config_offset = config_offset;
    j.received.assigned.clear();
    j.owned = j.received.clone();
    GroupEvent::Joined(Box::new(j))
}

/// Java's case 1a (review F10), by who is behind: a leader that cannot
/// read as far as another member has stops its work and drops out of the
/// group until it catches up; a follower that is up to date waits before
/// rejoining (the leader is the one behind), longer each round; a follower
/// behind rereads and rejoins at once. None of them takes the failed
/// assignment's generation.
#[tokio::test(start_paused = true)]
async fn a_config_mismatch_is_answered_by_whoever_is_behind() {
    // The leader behind: everything stops, the worker leaves and waits
    // for its reader to get where the others are.
    let mut h = harness().await;
    running(&mut h).await;
    let ahead = h.shared.configs.state().offset() + 5;
    let event = mismatch(&h, true, ahead);
    h.engine.on_group(event).await;
    assert!(
        running_tasks(&h).await.is_empty(),
        "the leader's work stopped"
    );
    assert_eq!(h.engine.behind, Some((ahead, 1)), "waiting to read {ahead}");
    assert!(h.shared.view().rebalancing && !h.shared.view().is_leader);
    assert_eq!(h.engine.rejoin_at, None);

    // An up-to-date follower: a back-off, doubling per round in a row.
    let mut h = harness().await;
    running(&mut h).await;
    let have = h.shared.configs.state().offset();
    let base = h.shared.settings.group.retry_backoff;
    for round in 0..3u32 {
        let event = mismatch(&h, false, have);
        let at = Instant::now();
        h.engine.on_group(event).await;
        assert_eq!(
            h.engine.rejoin_at,
            Some(at + base * 2u32.pow(round)),
            "round {round}"
        );
        assert_eq!(h.engine.behind, None);
    }
    assert_eq!(
        running_tasks(&h).await,
        [TaskId::new(CONNECTOR, 0)],
        "a mismatch revokes nothing"
    );
    assert_eq!(h.shared.view().generation, 1, "the failed round not taken");
    // A good assignment ends the streak.
    let event = joined(&h, 4);
    h.engine.on_group(event).await;
    assert_eq!(h.engine.mismatches, 0);

    // A follower behind: no back-off and no leaving, a rejoin at once
    // (asked of the member, which this engine has not).
    let mut h = harness().await;
    running(&mut h).await;
    let ahead = h.shared.configs.state().offset() + 5;
    let event = mismatch(&h, false, ahead);
    h.engine.on_group(event).await;
    assert_eq!((h.engine.rejoin_at, h.engine.behind), (None, None));
    assert_eq!(h.engine.rejoins, ["config mismatch"]);
    assert!(!h.engine.leaving);
    assert_eq!(running_tasks(&h).await, [TaskId::new(CONNECTOR, 0)]);

    // A leader up to date (another member read less): a rejoin at once too.
    let mut h = harness().await;
    running(&mut h).await;
    let have = h.shared.configs.state().offset();
    let event = mismatch(&h, true, have);
    h.engine.on_group(event).await;
    assert_eq!((h.engine.rejoin_at, h.engine.behind), (None, None));
    assert_eq!(h.engine.rejoins, ["config mismatch"]);
    assert_eq!(running_tasks(&h).await, [TaskId::new(CONNECTOR, 0)]);
}

/// The tasks this worker owns, as its exactly-once tasks' ownership check
/// reads them (`fencing::HerderFencing::verify`).
fn owned_for_fencing(h: &Harness) -> BTreeSet<TaskId> {
    h.shared
        .owned_tasks
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone()
}

/// While the member rejoins, the worker says so: REST requests that need
/// a settled group wait for the round (issue 27, part 4), and the work of
/// the incremental protocols keeps running until an assignment revokes it.
#[tokio::test(start_paused = true)]
async fn a_rebalance_in_progress_shows_in_the_view_and_keeps_the_work() {
    let mut h = harness().await;
    running(&mut h).await;
    assert!(!h.shared.view().rebalancing, "settled after the round");
    h.engine
        .on_group(GroupEvent::Rebalancing {
            reason: crate::group::RebalanceReason::CoordinatorRequested,
        })
        .await;
    assert!(
        h.shared.view().rebalancing,
        "rebalancing while the member rejoins"
    );
    assert_eq!(running_tasks(&h).await, [TaskId::new(CONNECTOR, 0)]);
    assert_eq!(
        owned_for_fencing(&h),
        BTreeSet::from([TaskId::new(CONNECTOR, 0)])
    );
}

/// Writes `records` to the config topic and reads them back.
async fn write(h: &Harness, records: Vec<ConfigRecord>) {
    h.shared
        .configs
        .write(records)
        .await
        .expect("config records written");
    h.shared
        .configs
        .read_to_end()
        .await
        .expect("the config topic read");
}

/// Writes [`CONNECTOR`]'s target state and reads it back (the config
/// topic moves on; with `Started` again, nothing else changes).
async fn set_target(h: &Harness, state: TargetState) {
    let record = ConfigRecord::TargetState {
        connector: CONNECTOR.into(),
        state,
    };
    write(h, vec![record]).await;
}

/// Writes [`CONNECTOR`]'s config again with `count` set to `count` and
/// reads it back; returns the properties written.
async fn reconfigure(h: &Harness, count: &str) -> crate::topics::config::Properties {
    let mut changed = h
        .shared
        .configs
        .state()
        .connector_config(CONNECTOR)
        .cloned()
        .expect("the connector's config");
    changed.insert("count".into(), Some(count.into()));
    let record = ConfigRecord::Connector {
        connector: CONNECTOR.into(),
        properties: changed.clone(),
    };
    write(h, vec![record]).await;
    changed
}

/// New task configs for [`CONNECTOR`] (a new generation of its one task).
fn new_task_configs(h: &Harness) -> Vec<ConfigRecord> {
    let id = TaskId::new(CONNECTOR, 0);
    let mut properties = h
        .shared
        .configs
        .state()
        .task_config(&id)
        .cloned()
        .expect("the task's config");
    properties.insert("count".into(), Some("1".into()));
    vec![
        ConfigRecord::Task { id, properties },
        ConfigRecord::TasksCommit {
            connector: CONNECTOR.into(),
            tasks: 1,
        },
    ]
}

/// An assignment's `delay` (a lost worker's work held back) schedules the
/// next round; an assignment without one cancels it, as Java's does.
#[tokio::test(start_paused = true)]
async fn an_assignment_delay_schedules_the_next_round_and_a_later_one_cancels_it() {
    let mut h = harness().await;
    let mut j = assignment(&h, 1, vec![0]);
    j.received.delay = 5_000;
    let at = Instant::now();
    h.engine.on_group(GroupEvent::Joined(Box::new(j))).await;
    assert_eq!(h.engine.rejoin_at, Some(at + Duration::from_secs(5)));
    let event = joined(&h, 2);
    h.engine.on_group(event).await;
    assert_eq!(h.engine.rejoin_at, None, "no delay: the schedule is gone");
    assert!(h.engine.rejoins.is_empty(), "{:?}", h.engine.rejoins);
}

/// Review F6: a worker that read past the snapshot an assignment was
/// computed from asks for another round (the leader did not see what it
/// read); one on the same snapshot does not.
#[tokio::test(start_paused = true)]
async fn a_worker_that_read_past_the_assignment_asks_for_another_round() {
    let mut h = harness().await;
    let stale = joined(&h, 1);
    set_target(&h, TargetState::Started).await;
    h.engine.on_group(stale).await;
    assert_eq!(
        h.engine.rejoins,
        ["the config topic moved past the assignment's snapshot"]
    );
    h.engine.rejoins.clear();
    let current = joined(&h, 2);
    h.engine.on_group(current).await;
    assert!(h.engine.rejoins.is_empty(), "{:?}", h.engine.rejoins);
}

/// Review F2: an assignment computed from configs this worker cannot read
/// within `worker.sync.timeout.ms` starts nothing new and stops what it
/// revokes; the first time the worker rejoins at once, the second it
/// stops everything and drops out until its reader gets there; reaching
/// that offset asks for a round at once.
#[tokio::test(start_paused = true)]
async fn a_worker_behind_an_assignment_starts_nothing_and_then_drops_out() {
    let mut h = harness().await;
    running(&mut h).await;
    let want = h.shared.configs.state().offset() + 1;
    // Round 2 revokes c-0 and needs an offset not written yet.
    let mut j = Box::new(assignment(&h, 2, vec![0]));
    j.received.config_offset = want;
    j.received.revoked = std::mem::take(&mut j.received.assigned);
    j.owned.assigned.clear();
    let started = Instant::now();
    h.engine.on_group(GroupEvent::Joined(j.clone())).await;
    // worker.sync.timeout.ms for the reader, then the graceful timeout
    // for the revoked task (stuck in `stop`).
    let sync = h.shared.settings.worker_sync_timeout;
    let took = started.elapsed();
    assert!(
        took >= sync + GRACEFUL,
        "{took:?}: the wait for the reader ({sync:?}) and the stop ({GRACEFUL:?})"
    );
    assert!(
        running_tasks(&h).await.is_empty(),
        "the revoked task stopped"
    );
    assert!(owned_for_fencing(&h).is_empty());
    assert_eq!(h.engine.rejoins, ["behind the config topic"]);
    assert_eq!(h.engine.behind, Some((want, 1)));
    assert_eq!(h.shared.view().generation, 1, "round 2 not taken");
    // Still behind on the next round: out of the group.
    h.engine.rejoins.clear();
    h.engine.on_group(GroupEvent::Joined(j)).await;
    assert!(h.engine.rejoins.is_empty(), "{:?}", h.engine.rejoins);
    assert_eq!(h.engine.behind, Some((want, 1)), "waiting for {want}");
    assert!(h.shared.view().rebalancing);
    // The reader gets there: a round at once.
    set_target(&h, TargetState::Started).await;
    h.engine.on_config().await;
    assert_eq!(h.engine.behind, None);
    assert_eq!(h.engine.rejoins, ["caught up with the config topic"]);
}

/// Review F7: new task configs for a connector stop its tasks here at
/// once, and none starts again before the round that assigns the new
/// set; any worker that reads them asks for that round.
#[tokio::test(start_paused = true)]
async fn new_task_configs_stop_the_old_tasks_until_the_next_round() {
    let mut h = harness().await;
    running(&mut h).await;
    let records = new_task_configs(&h);
    write(&h, records).await;
    h.engine.on_config().await;
    assert!(
        running_tasks(&h).await.is_empty(),
        "the old generation stopped"
    );
    assert_eq!(h.engine.rejoins, ["connectors or task configs changed"]);
    // The next round assigns the new generation: it runs.
    let event = joined(&h, 2);
    h.engine.on_group(event).await;
    assert_eq!(running_tasks(&h).await, [TaskId::new(CONNECTOR, 0)]);
    // A config change that moves no task (a target state written again)
    // asks for nothing.
    h.engine.rejoins.clear();
    set_target(&h, TargetState::Started).await;
    h.engine.on_config().await;
    assert!(h.engine.rejoins.is_empty(), "{:?}", h.engine.rejoins);
    assert_eq!(running_tasks(&h).await, [TaskId::new(CONNECTOR, 0)]);
}

/// The connector's and its task's states as this worker reports them.
fn states(h: &Harness) -> (State, State) {
    let store = h.shared.worker.status_store();
    (
        store.connector(CONNECTOR).0,
        store.task(&TaskId::new(CONNECTOR, 0)).0,
    )
}

/// The work here follows the connector's target state: paused in place,
/// stopped (the tasks gone, the connector instance kept as STOPPED),
/// started again; a deleted connector stops.
#[tokio::test(start_paused = true)]
async fn the_work_here_follows_the_connectors_target_state() {
    let mut h = harness().await;
    let event = joined_with(&h, 1, vec![-1, 0]);
    h.engine.on_group(event).await;
    eventually("connector and task running", async || {
        states(&h) == (State::Running, State::Running)
    })
    .await;
    set_target(&h, TargetState::Paused).await;
    h.engine.on_config().await;
    eventually("paused", async || {
        states(&h) == (State::Paused, State::Paused)
    })
    .await;
    assert_eq!(
        running_tasks(&h).await,
        [TaskId::new(CONNECTOR, 0)],
        "paused in place"
    );

    set_target(&h, TargetState::Stopped).await;
    h.engine.on_config().await;
    eventually("stopped", async || states(&h).0 == State::Stopped).await;
    assert!(
        running_tasks(&h).await.is_empty(),
        "a stopped connector has no tasks"
    );

    set_target(&h, TargetState::Started).await;
    h.engine.on_config().await;
    eventually("running again", async || {
        states(&h) == (State::Running, State::Running)
    })
    .await;
    assert_eq!(running_tasks(&h).await, [TaskId::new(CONNECTOR, 0)]);

    write(
        &h,
        vec![ConfigRecord::Tombstone(
            crate::topics::config::ConfigKey::Connector(CONNECTOR.into()),
        )],
    )
    .await;
    h.engine.on_config().await;
    eventually("nothing runs", async || {
        let units = h.shared.worker.running_units().await;
        units.connectors.is_empty() && units.tasks.is_empty()
    })
    .await;
}

/// A connector config change restarts the connector instance with it;
/// after the task count shrinks, the config of a task beyond the new
/// count stays in the topic, but that task no longer exists and never
/// starts, even where an assignment names it (review F7).
#[tokio::test(start_paused = true)]
async fn a_connector_runs_its_current_config_and_only_its_current_tasks() {
    let mut h = harness().await;
    let event = joined_with(&h, 1, vec![-1, 0]);
    h.engine.on_group(event).await;
    let changed = reconfigure(&h, "2").await;
    h.engine.on_config().await;
    assert_eq!(
        h.engine.started.connectors[CONNECTOR].config,
        properties_to_map(&changed),
        "the connector restarted with its new config"
    );

    // Two tasks committed, then one: c-1's config is left behind.
    let c0 = TaskId::new(CONNECTOR, 0);
    let task = h.shared.configs.state().task_config(&c0).cloned();
    let task = task.expect("c-0's config");
    let commit = |tasks| ConfigRecord::TasksCommit {
        connector: CONNECTOR.into(),
        tasks,
    };
    write(
        &h,
        vec![
            ConfigRecord::Task {
                id: c0.clone(),
                properties: task.clone(),
            },
            ConfigRecord::Task {
                id: TaskId::new(CONNECTOR, 1),
                properties: task.clone(),
            },
            commit(2),
            ConfigRecord::Task {
                id: c0.clone(),
                properties: task,
            },
            commit(1),
        ],
    )
    .await;
    let event = joined_with(&h, 2, vec![-1, 0, 1]);
    h.engine.on_group(event).await;
    assert_eq!(running_tasks(&h).await, [c0], "only the task that exists");
}

/// Simulation seed 8780: the member may fence itself while this loop is
/// busy (a slow stop), its `Fenced` event still queued behind the work in
/// hand. From that moment nothing starts here: not the connector and
/// tasks of an assignment being acted on, not a task asked to restart.
#[tokio::test(start_paused = true)]
async fn a_worker_whose_member_has_fenced_itself_starts_nothing() {
    let mut h = harness().await;
    h.engine.fenced_member = true;
    let event = joined_with(&h, 1, vec![-1, 0]);
    h.engine.on_group(event).await;
    assert!(
        h.engine.started.connectors.is_empty(),
        "no connector started"
    );
    assert!(running_tasks(&h).await.is_empty(), "no task started");

    let mut h = harness().await;
    running(&mut h).await;
    h.engine.fenced_member = true;
    let c0 = TaskId::new(CONNECTOR, 0);
    assert!(
        !h.engine.restart_task(&c0).await,
        "a fenced worker does not restart a task"
    );
    // Joined again: the restart goes through.
    h.engine.fenced_member = false;
    assert!(h.engine.restart_task(&c0).await, "restarted once joined");
    assert_eq!(running_tasks(&h).await, [c0], "and runs again");
}

/// A connector's calls in flight (its start, a reconfiguration) are all
/// cancelled when the loop stops or restarts it, however many were made:
/// recording a later call never loses hold of an earlier one still under
/// way, which could otherwise bring back an instance stopped since.
#[tokio::test(start_paused = true)]
async fn cancelling_a_connectors_calls_drops_every_call_in_flight() {
    let mut h = harness().await;
    let mut dropped = Vec::new();
    for _ in 0..2 {
        // The call holds `alive` until it is dropped.
        let (alive, gone) = tokio::sync::oneshot::channel::<()>();
        h.engine.call(CONNECTOR, async move {
            let _alive = alive;
            std::future::pending::<()>().await
        });
        dropped.push(gone);
    }
    h.engine.cancel_calls(CONNECTOR);
    for (i, gone) in dropped.into_iter().enumerate() {
        let ended = tokio::time::timeout(Duration::from_secs(10), gone).await;
        assert!(
            matches!(ended, Ok(Err(_))),
            "call {i} was not cancelled: {ended:?}"
        );
    }
}

/// A restart request (KIP-745) read from the config topic stops and
/// starts again the tasks of the connector that run here: all of them, or
/// with `onlyFailed` only the failed ones (a running task keeps running),
/// and none without `includeTasks`.
#[tokio::test(start_paused = true)]
async fn a_restart_request_restarts_the_tasks_that_run_here() {
    let c0 = TaskId::new(CONNECTOR, 0);
    for (include_tasks, only_failed, restarted) in [
        (true, true, false),
        (false, false, false),
        (true, false, true),
    ] {
        let mut h = harness().await;
        running(&mut h).await;
        let request = ConfigRecord::RestartRequest {
            connector: CONNECTOR.into(),
            include_tasks,
            only_failed,
        };
        write(&h, vec![request]).await;
        let at = Instant::now();
        h.engine.on_config().await;
        // The task hangs in `stop`: a restart shows as the graceful wait.
        let stopped = at.elapsed() >= GRACEFUL;
        assert_eq!(
            stopped, restarted,
            "includeTasks={include_tasks} onlyFailed={only_failed}"
        );
        assert_eq!(
            running_tasks(&h).await,
            std::slice::from_ref(&c0),
            "and it runs"
        );
    }
}

/// The next answer of a call into the connector, handed to the loop.
async fn answer(h: &mut Harness) {
    // Bounded (on the paused clock) so that a missing call fails, not hangs.
    let answer = tokio::time::timeout(Duration::from_secs(60), h.engine.answers.recv())
        .await
        .expect("a connector call answered in time")
        .expect("a connector answer");
    h.engine.on_answer(answer).await;
}

/// The leader writes the task configs its connector generates when they
/// differ from the committed ones (here after a connector config change),
/// and nothing for an answer of a config the connector no longer runs.
#[tokio::test(start_paused = true)]
async fn the_leader_writes_the_task_configs_its_connector_generates() {
    let mut h = harness().await;
    let mut j = assignment(&h, 1, vec![-1]);
    j.is_leader = true;
    h.engine.on_group(GroupEvent::Joined(Box::new(j))).await;
    answer(&mut h).await;
    let state = h.shared.configs.state();
    let c0 = TaskId::new(CONNECTOR, 0);
    let first = state.task_config(&c0).cloned();
    let at = state.offset();

    reconfigure(&h, "2").await;
    h.engine.on_config().await;
    let old_config = h.engine.started.connectors[CONNECTOR].config.clone();
    answer(&mut h).await;
    let state = h.shared.configs.state();
    let written = state.task_config(&c0).expect("c-0's config");
    assert_eq!(
        written.get("count"),
        Some(&Some("2".to_string())),
        "the new task config written"
    );
    assert_ne!(state.task_config(&c0).cloned(), first);
    assert_eq!(state.task_count(CONNECTOR), Some(1));
    assert!(state.offset() > at);

    // An answer for a config the connector no longer runs writes nothing.
    let stale = Answer {
        name: CONNECTOR.into(),
        kind: Answered::Start {
            config: ConfigMap::from([("count", "7")]),
            target: TargetState::Started,
            generated: Some(vec![ConfigMap::from([("count", "7")])]),
        },
    };
    assert_ne!(old_config, ConfigMap::from([("count", "7")]));
    let at = h.shared.configs.state().offset();
    h.engine.on_answer(stale).await;
    h.shared.configs.read_to_end().await.unwrap();
    assert_eq!(h.shared.configs.state().offset(), at, "nothing written");
}

/// A follower hands its connector's task configs to the leader; when the
/// leader cannot be reached they are kept and handed again after
/// `PUBLISH_RETRY`.
#[tokio::test(start_paused = true)]
async fn task_configs_the_leader_did_not_take_are_handed_again() {
    let mut h = harness().await;
    reconfigure(&h, "2").await;
    let mut j = assignment(&h, 1, vec![-1]);
    // Nobody listens on port 1.
    j.received.leader_url = "http://127.0.0.1:1/".into();
    j.owned.leader_url = j.received.leader_url.clone();
    h.engine.on_group(GroupEvent::Joined(Box::new(j))).await;
    answer(&mut h).await; // the start: handed off in the background
    assert!(h.engine.publishing.contains(CONNECTOR));
    answer(&mut h).await; // the hand-off: refused
    assert!(!h.engine.publishing.contains(CONNECTOR));
    assert!(
        h.engine.unpublished.contains_key(CONNECTOR),
        "kept for the next try"
    );
    let retry_at = h.engine.retry_at.expect("a retry scheduled");
    assert_eq!(retry_at, Instant::now() + PUBLISH_RETRY);
    // The retry hands them again (in the background): it still runs the
    // connector.
    h.engine.retry_publish().await;
    assert!(h.engine.unpublished.is_empty());
    assert!(h.engine.publishing.contains(CONNECTOR), "handed again");
}

/// The leader clears the task configs of a stopped connector (KIP-875: a
/// task count of 0) and leaves a running connector's alone.
#[tokio::test(start_paused = true)]
async fn the_leader_clears_the_task_configs_of_a_stopped_connector() {
    let mut h = harness().await;
    let mut j = assignment(&h, 1, vec![-1, 0]);
    j.is_leader = true;
    h.engine.on_group(GroupEvent::Joined(Box::new(j))).await;
    assert_eq!(h.shared.configs.state().task_count(CONNECTOR), Some(1));
    assert!(
        h.shared.configs.state().session_key().is_some(),
        "a sessioned leader writes a session key"
    );
    let check = h.engine.key_check_at.expect("a key check scheduled");
    assert!(check >= Instant::now() + Duration::from_secs(1));
    set_target(&h, TargetState::Stopped).await;
    h.engine.on_config().await;
    h.shared.configs.read_to_end().await.unwrap();
    assert_eq!(h.shared.configs.state().task_count(CONNECTOR), Some(0));
}

/// A connector restart request (without includeTasks) restarts the
/// connector instance that runs here: RESTARTING, and a new instance at
/// the reconciliation that follows; with onlyFailed, only a failed one.
#[tokio::test(start_paused = true)]
async fn a_restart_request_restarts_the_connector_instance_here() {
    for (only_failed, failed, restarted) in [
        (false, false, true),
        (true, false, false),
        (true, true, true),
    ] {
        let mut h = harness().await;
        h.engine.on_group(joined_with(&h, 1, vec![-1])).await;
        answer(&mut h).await;
        let store = h.shared.worker.status_store();
        if failed {
            store.put_connector(CONNECTOR, State::Failed, Some("broken".into()));
            eventually("the connector reported failed", async || {
                store.connector(CONNECTOR).0 == State::Failed
            })
            .await;
        }
        let request = ConfigRecord::RestartRequest {
            connector: CONNECTOR.into(),
            include_tasks: false,
            only_failed,
        };
        write(&h, vec![request]).await;
        h.engine.handle_restarts().await;
        let case = format!("onlyFailed={only_failed} failed={failed}");
        assert_eq!(
            h.engine.started.connectors[CONNECTOR].restart, restarted,
            "{case}"
        );
        if restarted {
            eventually("RESTARTING reported", async || {
                store.connector(CONNECTOR).0 == State::Restarting
            })
            .await;
        }
    }
}

/// Publishing task configs the connector generated: nothing is written
/// when they and the connector config they came from are what the topic
/// holds; new configs are written, and so are the same configs after a
/// connector config change alone (its tasks restart with it, KAFKA-9228).
#[tokio::test(start_paused = true)]
async fn the_leader_writes_task_configs_unless_nothing_changed() {
    let mut h = harness().await;
    let mut j = assignment(&h, 1, vec![-1]);
    j.is_leader = true;
    h.engine.on_group(GroupEvent::Joined(Box::new(j))).await;
    answer(&mut h).await;
    let offset = |h: &Harness| h.shared.configs.state().offset();
    let committed = |h: &Harness| {
        committed_task_configs(&h.shared.configs.state(), CONNECTOR).expect("c's task configs")
    };
    let same = committed(&h);
    assert_eq!(same.len(), 1);
    assert_eq!(
        same[0].get("task.class").map(String::as_str),
        Some("connect_testkit.faulty.FaultySourceTask")
    );

    let at = offset(&h);
    let state = h.shared.configs.state();
    h.engine.publish(CONNECTOR, same.clone(), &state).await;
    h.shared.configs.read_to_end().await.unwrap();
    assert_eq!(offset(&h), at, "the same configs are not written again");

    let mut new = same.clone();
    new[0].insert("extra".into(), "1".into());
    h.engine.publish(CONNECTOR, new.clone(), &state).await;
    h.shared.configs.read_to_end().await.unwrap();
    assert!(offset(&h) > at, "new task configs written");
    assert_eq!(committed(&h), new);

    // The connector config changes; its task configs would not.
    reconfigure(&h, "5").await;
    let at = offset(&h);
    let state = h.shared.configs.state();
    h.engine.publish(CONNECTOR, new.clone(), &state).await;
    h.shared.configs.read_to_end().await.unwrap();
    assert!(
        offset(&h) > at,
        "written again for the new connector config"
    );
}

/// A hand-off the leader took: newer configs that waited for it go at
/// once; one it refused is kept and tried again after `PUBLISH_RETRY`,
/// only for a connector that still runs here.
#[tokio::test(start_paused = true)]
async fn hand_off_answers_schedule_what_waits() {
    let mut h = harness().await;
    let configs = vec![ConfigMap::from([("k", "v")])];
    let published = |result| Answer {
        name: CONNECTOR.into(),
        kind: Answered::Published(result, vec![ConfigMap::from([("k", "old")])]),
    };
    h.engine.publishing.insert(CONNECTOR.into());
    h.engine.on_answer(published(Ok(()))).await;
    assert!(!h.engine.publishing.contains(CONNECTOR));
    assert_eq!(h.engine.retry_at, None, "nothing waits");

    h.engine.publishing.insert(CONNECTOR.into());
    h.engine
        .unpublished
        .insert(CONNECTOR.into(), configs.clone());
    h.engine.on_answer(published(Ok(()))).await;
    assert_eq!(
        h.engine.retry_at,
        Some(Instant::now()),
        "the newer configs go now"
    );
    assert_eq!(
        h.engine.unpublished[CONNECTOR], configs,
        "the newer ones kept"
    );

    h.engine.unpublished.clear();
    h.engine.retry_at = None;
    h.engine
        .on_answer(published(Err(connect_api::ConnectError::other(
            "leader gone",
        ))))
        .await;
    assert_eq!(
        h.engine.unpublished[CONNECTOR],
        vec![ConfigMap::from([("k", "old")])]
    );
    assert_eq!(h.engine.retry_at, Some(Instant::now() + PUBLISH_RETRY));

    // Not running here (this worker has no assignment): dropped.
    h.engine.retry_publish().await;
    assert!(h.engine.unpublished.is_empty());
    assert!(h.engine.publishing.is_empty());
}

/// A reconfiguration request asks the connector for task configs only
/// when its instance runs here; the answer is handed on like a start's.
#[tokio::test(start_paused = true)]
async fn a_reconfiguration_request_asks_a_connector_running_here() {
    let mut h = harness().await;
    h.engine.on_reconfigure(CONNECTOR);
    assert!(h.engine.calls.is_empty(), "not running here: no call");
    let mut j = assignment(&h, 1, vec![-1]);
    j.is_leader = true;
    h.engine.on_group(GroupEvent::Joined(Box::new(j))).await;
    answer(&mut h).await;
    h.engine.on_reconfigure(CONNECTOR);
    let answer = tokio::time::timeout(Duration::from_secs(60), h.engine.answers.recv())
        .await
        .expect("the connector was asked")
        .expect("an answer");
    assert!(matches!(answer.kind, Answered::TaskConfigs(Ok(Some(_)))));
}

/// The leader clears task configs only of stopped connectors that still
/// have tasks: once cleared, it writes nothing more.
#[tokio::test(start_paused = true)]
async fn a_stopped_connector_without_tasks_needs_no_clearing() {
    let mut h = harness().await;
    let mut j = assignment(&h, 1, vec![-1]);
    j.is_leader = true;
    h.engine.on_group(GroupEvent::Joined(Box::new(j))).await;
    set_target(&h, TargetState::Stopped).await;
    h.engine.on_config().await;
    h.shared.configs.read_to_end().await.unwrap();
    assert_eq!(h.shared.configs.state().task_count(CONNECTOR), Some(0));
    let at = h.shared.configs.state().offset();
    h.engine.leader_duties().await;
    h.shared.configs.read_to_end().await.unwrap();
    assert_eq!(h.shared.configs.state().offset(), at, "nothing written");
}

/// Stopping everything stops every unit, aborting a task that hangs in
/// `stop` after the graceful timeout, and forgets them.
#[tokio::test(start_paused = true)]
async fn stop_all_stops_every_unit() {
    let mut h = harness().await;
    running(&mut h).await;
    let at = Instant::now();
    h.engine.stop_all().await;
    // The task hangs in `stop`: it is given the graceful timeout first.
    assert!(at.elapsed() >= GRACEFUL, "aborted after {:?}", at.elapsed());
    assert!(running_tasks(&h).await.is_empty());
    assert!(h.engine.started.tasks.is_empty());
    assert!(h.engine.started.connectors.is_empty());
}

/// The leader whose own write of task configs fails keeps them and tries
/// again `PUBLISH_RETRY` later.
#[tokio::test(start_paused = true)]
async fn a_leader_whose_write_fails_tries_again_later() {
    let kafka = MemoryKafka::new();
    let herder = herder_with_connector_on(kafka.clone()).await;
    let mut h = harness_for(herder);
    let mut j = assignment(&h, 1, vec![-1]);
    j.is_leader = true;
    h.engine.on_group(GroupEvent::Joined(Box::new(j))).await;
    answer(&mut h).await;
    let configs = vec![ConfigMap::from([("k", "v")])];
    kafka.fail_next_produce(100, FaultKind::Fatal);
    let state = h.shared.configs.state();
    h.engine.publish(CONNECTOR, configs.clone(), &state).await;
    assert_eq!(h.engine.unpublished.get(CONNECTOR), Some(&configs));
    assert_eq!(h.engine.retry_at, Some(Instant::now() + PUBLISH_RETRY));
}

/// What a running source produced shows through the herder: the topics
/// it wrote to (KIP-558), cleared on request, and its committed offsets.
#[tokio::test(start_paused = true)]
async fn a_running_sources_topics_and_offsets_show_through_the_herder() {
    use connect_runtime::herder::Herder as _;
    let mut h = harness().await;
    let mut records = new_task_configs(&h);
    if let ConfigRecord::Task { properties, .. } = &mut records[0] {
        properties.insert("count".into(), Some("3".into()));
    }
    write(&h, records).await;
    let event = joined(&h, 1);
    h.engine.on_group(event).await;
    let herder = crate::herder::DistributedHerder {
        shared: h.shared.clone(),
        stop: Arc::new(watch::channel(false).0),
    };
    eventually("the topic tracked", async || {
        herder.connector_topics(CONNECTOR).await.unwrap() == ["faulty"]
    })
    .await;
    eventually("offsets committed", async || {
        !herder
            .connector_offsets(CONNECTOR)
            .await
            .unwrap()
            .offsets
            .is_empty()
    })
    .await;
    herder.reset_connector_topics(CONNECTOR).await.unwrap();
    eventually("the topics cleared", async || {
        herder.connector_topics(CONNECTOR).await.unwrap().is_empty()
    })
    .await;
}

/// A round that revokes work: this worker stops it, then asks for another
/// round, in which the leader can hand it to someone else (Java's
/// incremental protocol).
#[tokio::test(start_paused = true)]
async fn revoked_work_is_stopped_then_another_round_asked() {
    let mut h = harness().await;
    running(&mut h).await;
    h.engine.rejoins.clear();
    let mut j = assignment(&h, 2, Vec::new());
    j.received.assigned.clear();
    j.received.revoked = vec![ConnectorAssignment {
        connector: CONNECTOR.into(),
        tasks: vec![0],
    }];
    j.owned.assigned.clear();
    h.engine.on_group(GroupEvent::Joined(Box::new(j))).await;
    assert!(running_tasks(&h).await.is_empty());
    assert_eq!(h.engine.rejoins, ["revoked work stopped"]);
}
