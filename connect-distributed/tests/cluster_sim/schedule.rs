//! The simulated cluster and the seeded schedule it goes through.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use connect_api::config::ConfigMap;
use connect_distributed::herder::{ConfigTopic, DistributedConfig, DistributedHerder, StatusTopic};
use connect_distributed::stores::{KafkaConfigLog, KafkaStatusStore};
use connect_runtime::herder::Herder;
use connect_runtime::kafka::memory::MemoryKafka;
use connect_runtime::kafka::{ClientConfig, KafkaCluster, NewTopic};
use connect_runtime::offsets::KafkaOffsetStore;
use connect_runtime::rest::{Loggers, RestServer};
use connect_runtime::worker::{Plugins, Worker, WorkerConfig};

use super::coordinator::Coordinator;
use super::lagging::LaggingConfigs;
use super::sim_source::{self, CLASS, TOPIC};
use super::{Timeline, Tracker};

/// The group's session timeout in the simulation.
const SESSION: Duration = Duration::from_secs(10);
/// `scheduled.rebalance.max.delay.ms`: how long lost work waits for its
/// worker to come back.
const DELAY: Duration = Duration::from_secs(15);
/// How long a settled cluster may take, after the schedule, to run
/// everything (the delay, a session, stuck stops and their back-off).
const SETTLE: Duration = Duration::from_secs(300);
/// How long a unit may run nowhere while the group is stable with final
/// assignments and no round happens (starting takes milliseconds here;
/// an eager worker stops everything, up to the 5 s stop timeout, before
/// its JoinGroup starts the next round).
const LIVENESS: Duration = Duration::from_secs(10);
/// How long the cluster must stay settled, without a round, to count
/// as settled.
const STILL: Duration = Duration::from_secs(20);
/// Simulated time any one admin call may take before the schedule moves on.
const CALL: Duration = Duration::from_secs(90);

/// SplitMix64: small, good enough for a schedule, and the same everywhere.
pub(crate) struct Rng(u64);

impl Rng {
    /// A generator for `seed`.
    pub(crate) fn new(seed: u64) -> Rng {
        Rng(seed)
    }
    /// The next 64 random bits.
    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// A number in `0..n` (`n` > 0).
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    /// One of `items` (not empty).
    pub(crate) fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }
}

struct Node {
    herder: DistributedHerder,
    rest: RestServer,
    configs: Arc<LaggingConfigs>,
}

/// The workers, the coordinator and the topics of one simulation.
pub(crate) struct Cluster {
    /// What happened.
    pub(crate) timeline: Arc<Timeline>,
    /// What ran where.
    pub(crate) tracker: Arc<Tracker>,
    /// The group's broker side.
    pub(crate) coordinator: Coordinator,
    kafka: MemoryKafka,
    nodes: BTreeMap<String, Node>,
    next_worker: u32,
    /// The connectors the schedule created and not deleted, paused or not.
    connectors: BTreeMap<String, bool>,
    next_connector: u32,
    /// Whether the schedule makes workers fall behind the config topic.
    lagging_reads: bool,
    /// Every worker's `connect.protocol`.
    protocol: &'static str,
    /// How the admin calls ended: `ok`, or the error's kind.
    outcomes: BTreeMap<String, u64>,
    /// Since when (and after how many rounds) the group is stable but
    /// some unit does not run.
    stuck_since: Option<(tokio::time::Instant, u64)>,
}

impl Cluster {
    /// An empty cluster: the coordinator, the topics, no worker.
    pub(crate) async fn new(lagging_reads: bool, protocol: &'static str) -> Cluster {
        let timeline = Timeline::new();
        let kafka = MemoryKafka::new();
        kafka
            .create_topic(&NewTopic::new(TOPIC, 1))
            .expect("the data topic");
        Cluster {
            tracker: Tracker::new(timeline.clone()),
            coordinator: Coordinator::start(timeline.clone()).await,
            timeline,
            kafka,
            nodes: BTreeMap::new(),
            next_worker: 0,
            connectors: BTreeMap::new(),
            next_connector: 0,
            lagging_reads,
            protocol,
            outcomes: BTreeMap::new(),
            stuck_since: None,
        }
    }

    /// Starts one more worker; it joins the group.
    pub(crate) async fn add_worker(&mut self) {
        self.next_worker += 1;
        let name = format!("w{}", self.next_worker);
        let port = connect_test_support::free_port().expect("a free port for a worker's REST");
        let listener = format!("http://127.0.0.1:{port}");
        let props = ConfigMap::from([
            ("bootstrap.servers", self.coordinator.addr()),
            ("group.id", "sim"),
            ("client.id", &name),
            ("config.storage.topic", "configs"),
            ("offset.storage.topic", "offsets"),
            ("status.storage.topic", "status"),
            ("config.storage.replication.factor", "1"),
            ("offset.storage.replication.factor", "1"),
            ("status.storage.replication.factor", "1"),
            ("offset.storage.partitions", "2"),
            ("status.storage.partitions", "2"),
            (
                "key.converter",
                "org.apache.kafka.connect.storage.StringConverter",
            ),
            (
                "value.converter",
                "org.apache.kafka.connect.storage.StringConverter",
            ),
            ("offset.flush.interval.ms", "1000"),
            ("listeners", &listener),
            ("rest.advertised.host.name", "127.0.0.1"),
            ("session.timeout.ms", &SESSION.as_millis().to_string()),
            ("heartbeat.interval.ms", "1000"),
            ("rebalance.timeout.ms", "60000"),
            ("connect.protocol", self.protocol),
            (
                "scheduled.rebalance.max.delay.ms",
                &DELAY.as_millis().to_string(),
            ),
        ]);
        let worker_config = WorkerConfig::parse(&props).expect("the worker's config");
        let settings = DistributedConfig::parse(props.iter()).expect("the distributed config");
        let cluster: Arc<dyn KafkaCluster> = Arc::new(self.kafka.clone());
        let client = ClientConfig::new();
        let timeout = Duration::from_secs(30);
        let id = format!("127.0.0.1:{port}");
        let offsets = KafkaOffsetStore::open(cluster.as_ref(), &client, "offsets", 2, 1, timeout)
            .await
            .expect("the offsets topic");
        let status: Arc<dyn StatusTopic> = Arc::new(
            KafkaStatusStore::open(cluster.as_ref(), &client, "status", 2, 1, id, timeout)
                .await
                .expect("the status topic"),
        );
        let log: Arc<dyn ConfigTopic> = Arc::new(
            KafkaConfigLog::open(cluster.as_ref(), &client, "configs", 1, timeout)
                .await
                .expect("the config topic"),
        );
        let configs = LaggingConfigs::wrap(log);
        let mut plugins = Plugins::with_builtins();
        sim_source::register(&mut plugins, &self.tracker, &name);
        let worker = Worker::with_status_store(
            worker_config,
            plugins,
            cluster,
            Arc::new(offsets),
            status.clone(),
        );
        let herder = DistributedHerder::new(worker, configs.clone(), status, settings);
        let rest = RestServer::start(
            Arc::new(herder.clone()),
            &listener,
            Loggers::in_memory("WARN"),
        )
        .await
        .expect("the worker's REST listener");
        herder
            .start(&format!("http://{}/", rest.local_addr()))
            .expect("the herder starts");
        self.timeline.log(format!(
            "{name}: starts at {listener} (connect.protocol={})",
            self.protocol
        ));
        self.nodes.insert(
            name,
            Node {
                herder,
                rest,
                configs,
            },
        );
    }

    /// The live workers' names.
    pub(crate) fn workers(&self) -> Vec<String> {
        self.nodes.keys().cloned().collect()
    }

    /// `name` shuts down gracefully (stops its work, leaves the group).
    pub(crate) async fn leave(&mut self, name: &str) {
        let Some(node) = self.nodes.remove(name) else {
            return;
        };
        self.timeline.log(format!("{name}: shuts down"));
        if tokio::time::timeout(SETTLE, node.herder.shutdown())
            .await
            .is_err()
        {
            self.timeline
                .log(format!("{name}: shutdown did not finish in {SETTLE:?}"));
        }
        node.rest.stop().await;
        self.timeline.log(format!("{name}: gone"));
    }

    /// `name`'s process dies: nothing it does from now on counts, the
    /// coordinator never hears from it again, its REST port closes.
    pub(crate) async fn crash(&mut self, name: &str) {
        let Some(node) = self.nodes.remove(name) else {
            return;
        };
        self.timeline.log(format!("{name}: crashes"));
        self.tracker.crashed(name);
        self.coordinator.kill(name);
        node.rest.stop().await;
        // The in-process stand-in for a dead process: its loop is told to
        // stop in the background, and everything it does is ignored.
        tokio::spawn(async move { node.herder.shutdown().await });
    }

    /// A live worker, chosen by `rng`.
    fn any_worker(&self, rng: &mut Rng) -> Option<(&str, &DistributedHerder)> {
        let names: Vec<&String> = self.nodes.keys().collect();
        if names.is_empty() {
            return None;
        }
        let name = *rng.pick(&names);
        Some((name.as_str(), &self.nodes[name].herder))
    }

    /// Runs one admin call through a random worker (which forwards to
    /// the leader as needed); failures are logged, not fatal: they are
    /// what a user sees during a rebalance.
    async fn admin(&mut self, rng: &mut Rng, action: Admin) {
        let Some((via, _)) = self.any_worker(rng) else {
            return;
        };
        let via = via.to_owned();
        self.admin_via(&via, action).await;
    }

    /// [`Cluster::admin`] through worker `via`.
    async fn admin_via(&mut self, via: &str, action: Admin) {
        let Some(node) = self.nodes.get(via) else {
            return;
        };
        let herder = node.herder.clone();
        let via = via.to_owned();
        let what = format!("{action:?}");
        let call = async {
            match &action {
                Admin::Put {
                    name,
                    tasks,
                    stop_ms,
                } => {
                    let config = ConfigMap::from([
                        ("connector.class", CLASS),
                        ("tasks.max", &tasks.to_string()),
                        ("stop.ms", &stop_ms.to_string()),
                        ("poll.ms", "500"),
                    ]);
                    herder.put_connector_config(name, config).await.map(|_| ())
                }
                Admin::Delete(name) => herder.delete_connector(name).await,
                Admin::Pause(name) => herder.pause(name).await,
                Admin::Resume(name) => herder.resume(name).await,
                Admin::RestartTask(name, task) => herder.restart_task(name, *task).await,
                Admin::Restart(name) => herder
                    .restart_connector(name, true, false)
                    .await
                    .map(|_| ()),
            }
        };
        let (outcome, kind) = match tokio::time::timeout(CALL, call).await {
            Ok(Ok(())) => ("ok".to_owned(), "ok".to_owned()),
            Ok(Err(e)) => (format!("failed: {e}"), format!("{:?}", e.kind())),
            Err(_) => (format!("no answer in {CALL:?}"), "no answer".to_owned()),
        };
        *self.outcomes.entry(kind).or_default() += 1;
        self.timeline
            .log(format!("admin via {via}: {what}: {outcome}"));
        if outcome == "ok" {
            match action {
                Admin::Put { name, .. } => {
                    self.connectors.entry(name).or_insert(false);
                }
                Admin::Delete(name) => {
                    self.connectors.remove(&name);
                }
                Admin::Pause(name) => {
                    if let Some(paused) = self.connectors.get_mut(&name) {
                        *paused = true;
                    }
                }
                Admin::Resume(name) => {
                    if let Some(paused) = self.connectors.get_mut(&name) {
                        *paused = false;
                    }
                }
                Admin::RestartTask(..) | Admin::Restart(_) => {}
            }
        }
    }

    /// One step of the schedule, chosen by `rng`.
    pub(crate) async fn step(&mut self, rng: &mut Rng) {
        let existing: Vec<String> = self.connectors.keys().cloned().collect();
        let roll = rng.below(100);
        match roll {
            0..=17 => {
                self.next_connector += 1;
                let name = format!("c{}", self.next_connector);
                let action = self.put(rng, name);
                self.admin(rng, action).await;
            }
            18..=29 if !existing.is_empty() => {
                let name = rng.pick(&existing).clone();
                let action = self.put(rng, name);
                self.admin(rng, action).await;
            }
            30..=35 if !existing.is_empty() => {
                let name = rng.pick(&existing).clone();
                self.admin(rng, Admin::Delete(name)).await;
            }
            36..=41 if !existing.is_empty() => {
                let name = rng.pick(&existing).clone();
                let action = if self.connectors[&name] {
                    Admin::Resume(name)
                } else {
                    Admin::Pause(name)
                };
                self.admin(rng, action).await;
            }
            42..=47 if !existing.is_empty() => {
                let name = rng.pick(&existing).clone();
                let action = if rng.below(2) == 0 {
                    Admin::Restart(name)
                } else {
                    Admin::RestartTask(name, rng.below(2) as u32)
                };
                self.admin(rng, action).await;
            }
            48..=59 if self.nodes.len() < 4 => self.add_worker().await,
            60..=67 if self.nodes.len() > 1 => {
                let name = rng.pick(&self.workers()).clone();
                self.leave(&name).await;
            }
            68..=75 if self.nodes.len() > 1 => {
                let name = rng.pick(&self.workers()).clone();
                self.crash(&name).await;
            }
            76..=87 if !self.nodes.is_empty() => {
                let name = rng.pick(&self.workers()).clone();
                let cut = Duration::from_millis(*rng.pick(&[2_000, 8_000, 14_000, 40_000]));
                self.coordinator.cut_off(&name);
                let coordinator = self.coordinator.clone();
                tokio::spawn(async move {
                    tokio::time::sleep(cut).await;
                    coordinator.heal_one(&name);
                });
            }
            88..=91 => self.coordinator.relocate(),
            92..=97 if self.lagging_reads && !self.nodes.is_empty() => {
                let name = rng.pick(&self.workers()).clone();
                let lag = Duration::from_millis(*rng.pick(&[1_000, 5_000, 20_000]));
                self.timeline.log(format!(
                    "{name}: stops reading the config topic for {lag:?}"
                ));
                let configs = self.nodes[&name].configs.clone();
                configs.freeze();
                let timeline = self.timeline.clone();
                tokio::spawn(async move {
                    tokio::time::sleep(lag).await;
                    configs.thaw();
                    timeline.log(format!("{name}: reads the config topic again"));
                });
            }
            _ => {}
        }
        let pause = Duration::from_millis(rng.below(15_000));
        self.pass(pause).await;
    }

    fn put(&self, rng: &mut Rng, name: String) -> Admin {
        Admin::Put {
            name,
            tasks: 1 + rng.below(3) as u32,
            // From instant to longer than the worker's 5 s stop timeout.
            stop_ms: *rng.pick(&[0, 0, 0, 300, 2_000, 7_000]),
        }
    }

    /// Heals the network and waits until the cluster runs exactly what
    /// its configs say, everywhere; the reason if it does not in time.
    pub(crate) async fn settle(&mut self) -> Result<(), String> {
        self.coordinator.heal();
        for node in self.nodes.values() {
            node.configs.thaw();
        }
        let deadline = tokio::time::Instant::now() + SETTLE;
        // Settled means settled for a while without a round: a connector
        // just started may still write new task configs (a round follows,
        // as in Java).
        let mut since: Option<(tokio::time::Instant, u64)> = None;
        loop {
            let why = self.unsettled();
            let now = tokio::time::Instant::now();
            let rounds = self.coordinator.rounds();
            match why {
                None => match since {
                    Some((at, r)) if r == rounds && now >= at + STILL => return Ok(()),
                    Some((_, r)) if r == rounds => {}
                    _ => since = Some((now, rounds)),
                },
                Some(why) if tokio::time::Instant::now() >= deadline => {
                    return Err(format!("not settled after {SETTLE:?}: {why}"))
                }
                Some(_) => since = None,
            }
            self.pass(Duration::from_millis(500)).await;
        }
    }

    /// Why the cluster is not settled, or `None` when it is.
    pub(crate) fn unsettled(&self) -> Option<String> {
        self.group_unsettled().or_else(|| self.units_unsettled())
    }

    /// Liveness, checked all along: once the group is stable with final
    /// assignments, every live worker in it and on one config offset, every
    /// unit runs within [`LIVENESS`].
    fn check_liveness(&mut self) {
        let stuck = match self.group_unsettled() {
            Some(_) => None,
            None => self.units_unsettled(),
        };
        let now = tokio::time::Instant::now();
        // A round since (however short) starts the clock again.
        let rounds = self.coordinator.rounds();
        match (stuck, self.stuck_since) {
            (None, _) => self.stuck_since = None,
            (Some(_), Some((_, r))) if r != rounds => self.stuck_since = Some((now, rounds)),
            (Some(_), None) => self.stuck_since = Some((now, rounds)),
            (Some(why), Some((since, _))) if now >= since + LIVENESS => {
                self.tracker.violation(format!(
                    "VIOLATION: {why} for {LIVENESS:?} while the group is stable"
                ));
                self.stuck_since = None;
            }
            (Some(_), Some(_)) => {}
        }
    }

    /// Waits `d`, checking liveness every half second.
    async fn pass(&mut self, d: Duration) {
        let until = tokio::time::Instant::now() + d;
        while tokio::time::Instant::now() < until {
            let tick = Duration::from_millis(500).min(until - tokio::time::Instant::now());
            tokio::time::sleep(tick).await;
            self.check_liveness();
        }
    }

    /// Why the group is not settled (rebalancing, a round due, members
    /// other than the live workers, config offsets apart), or `None`.
    fn group_unsettled(&self) -> Option<String> {
        if self.coordinator.network_faulty() {
            return Some("a worker's link to the coordinator is cut or slow".into());
        }
        // A worker that cannot read the config topic is a fault in
        // progress, as a cut link is: a leader's config write waits to
        // read itself back (Java's too, up to its timeout), and meanwhile
        // its loop neither answers the member's JoinGroup barrier nor
        // starts the new task generation it held back (seed 24398: the
        // only worker froze just as it wrote new task configs; its tasks
        // waited the 20 s of the fault).
        if let Some((name, _)) = self.nodes.iter().find(|(_, n)| n.configs.is_lagging()) {
            return Some(format!("{name} cannot read the config topic"));
        }
        let live: BTreeSet<String> = self.nodes.keys().cloned().collect();
        match self.coordinator.stable_members() {
            Some((_, members)) if members == live => {}
            Some((generation, members)) => {
                return Some(format!(
                    "generation {generation} has {members:?}, the live workers are {live:?}"
                ))
            }
            None => return Some("the group is rebalancing, or another round is due".into()),
        }
        let states: Vec<_> = self
            .nodes
            .values()
            .map(|n| n.herder.config_topic().state())
            .collect();
        let offsets: BTreeSet<i64> = states.iter().map(|s| s.offset()).collect();
        if offsets.len() > 1 {
            return Some(format!("the workers read the config topic to {offsets:?}"));
        }
        None
    }

    /// Which unit does not run exactly once on a live worker (or runs
    /// without being configured), or `None`.
    fn units_unsettled(&self) -> Option<String> {
        let live: BTreeSet<String> = self.nodes.keys().cloned().collect();
        let state = self.nodes.values().next()?.herder.config_topic().state();
        let mut expected = BTreeSet::new();
        for c in state.connectors() {
            let target = state.target_state(c);
            if target == Some(connect_distributed::topics::config::TargetState::Started) {
                expected.insert(c.to_owned());
            }
            for t in state.tasks(c) {
                expected.insert(format!("{}-{}", t.connector, t.task));
            }
        }
        let running = self.tracker.running();
        for unit in &expected {
            match running.get(unit) {
                Some(on) if on.len() == 1 && on.is_subset(&live) => {}
                Some(on) => return Some(format!("{unit} runs on {on:?}")),
                None => return Some(format!("{unit} does not run")),
            }
        }
        let connectors: BTreeSet<&str> = state.connectors().collect();
        for (unit, on) in &running {
            let is_connector = connectors.contains(unit.as_str());
            let a_paused_connector = is_connector && on.len() == 1;
            if !(expected.contains(unit) || a_paused_connector) {
                return Some(format!("{unit} still runs on {on:?}"));
            }
        }
        None
    }

    /// Each task's counters in the data topic: from 0, with no gap
    /// (repeats are at-least-once's; a gap is a lost record).
    pub(crate) fn gaps(&self) -> Vec<String> {
        let mut seen: BTreeMap<String, BTreeSet<i64>> = BTreeMap::new();
        for r in self.kafka.records(TOPIC, 0) {
            let key = r.key.as_deref().map(String::from_utf8_lossy);
            let value = r.value.as_deref().map(String::from_utf8_lossy);
            if let (Some(key), Some(n)) = (key, value.and_then(|v| v.parse::<i64>().ok())) {
                seen.entry(key.into_owned()).or_default().insert(n);
            }
        }
        seen.into_iter()
            .filter(|(_, ns)| ns.len() as i64 != ns.last().map_or(0, |n| n + 1))
            .map(|(task, ns)| {
                format!(
                    "{task} wrote {} distinct counters up to {:?}",
                    ns.len(),
                    ns.last()
                )
            })
            .collect()
    }
}

#[derive(Debug)]
enum Admin {
    Put {
        name: String,
        tasks: u32,
        stop_ms: u64,
    },
    Delete(String),
    Pause(String),
    Resume(String),
    RestartTask(String, u32),
    Restart(String),
}

/// How long a schedule is.
#[derive(Clone, Copy)]
pub(crate) struct Size {
    /// Steps per seed.
    pub(crate) steps: u32,
    /// The quiet time after settling, in which no rebalance may happen.
    pub(crate) quiet: Duration,
    /// Whether workers fall behind the config topic too (schedules from
    /// before that fault existed replay with `false`).
    pub(crate) lagging_reads: bool,
    /// Whether one seed in five runs the eager protocol and one in five
    /// `compatible` (otherwise, and with `false`, `sessioned`).
    pub(crate) every_protocol: bool,
}

/// What a seed that kept every invariant leaves.
pub(crate) struct Report {
    /// What happened.
    pub(crate) timeline: String,
    /// How the admin calls ended: `ok`, or the error's kind.
    pub(crate) outcomes: BTreeMap<String, u64>,
}

/// Runs seed `seed`: the schedule, then settling, then a quiet spell;
/// the report, or the timeline with what broke first.
pub(crate) async fn run(
    seed: u64,
    size: &Size,
    watch: impl FnOnce(Arc<Timeline>),
) -> Result<Report, String> {
    let mut rng = Rng::new(seed);
    let protocol = match seed % 5 {
        0 if size.every_protocol => "eager",
        1 if size.every_protocol => "compatible",
        _ => "sessioned",
    };
    let mut cluster = Cluster::new(size.lagging_reads, protocol).await;
    watch(cluster.timeline.clone());
    let _logs = super::LogToTimeline::install(&cluster.timeline);
    let initial = 2 + rng.below(2);
    for _ in 0..initial {
        cluster.add_worker().await;
    }
    let steps = size.steps / 2 + rng.below(u64::from(size.steps / 2 + 1)) as u32;
    let fail = |cluster: &Cluster, what: String| {
        Err(format!(
            "seed {seed}: {what}\n--- timeline ---\n{}",
            cluster.timeline.render()
        ))
    };
    for _ in 0..steps {
        cluster.step(&mut rng).await;
        if let Some(v) = cluster.tracker.violations().first() {
            return fail(&cluster, v.clone());
        }
    }
    cluster
        .timeline
        .log("schedule over; healing and settling".into());
    if let Err(why) = cluster.settle().await {
        return fail(&cluster, why);
    }
    let rounds = cluster.coordinator.rounds();
    cluster
        .timeline
        .log(format!("settled after {rounds} rounds; quiet spell"));
    cluster.pass(size.quiet).await;
    if let Some(v) = cluster.tracker.violations().first() {
        return fail(&cluster, v.clone());
    }
    let after = cluster.coordinator.rounds();
    if after != rounds {
        return fail(
            &cluster,
            format!(
                "{} rebalances in a quiet spell of {:?}",
                after - rounds,
                size.quiet
            ),
        );
    }
    if let Some(why) = cluster.unsettled() {
        return fail(&cluster, format!("unsettled after the quiet spell: {why}"));
    }
    let gaps = cluster.gaps();
    if !gaps.is_empty() {
        return fail(&cluster, format!("records lost: {gaps:?}"));
    }
    Ok(Report {
        timeline: cluster.timeline.render(),
        outcomes: cluster.outcomes,
    })
}
