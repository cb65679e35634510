//! A deterministic-schedule simulation of a distributed Connect cluster.
//!
//! Several workers, each the real thing (`DistributedHerder` with its
//! `GroupMember`, assignor, `KafkaConfigLog`, `KafkaStatusStore`,
//! `KafkaOffsetStore` and REST server), share one in-memory Kafka (the
//! topics) and one in-process group coordinator ([`coordinator`], the
//! broker's group side and the network's faults), all on one
//! current-thread tokio runtime with paused time: a minute of the
//! cluster's life costs milliseconds. A seed drives the schedule
//! ([`schedule`]): connectors created, reconfigured, deleted, paused,
//! resumed and restarted, workers added, leaving, crashing, cut off from
//! the coordinator or falling behind the config topic, and the coordinator
//! moving, with tasks that take from
//! nothing to longer than the worker's stop timeout to stop. One seed in
//! five runs the eager protocol, one in five `compatible`, the rest
//! `sessioned`.
//!
//! Every connector and task instance reports its start and its end (the
//! end is when the instance is dropped or its `stop` returns: a task stuck
//! in `stop` still runs) to the [`Tracker`], which checks the invariants
//! as they happen: no connector or task runs on two workers at once, and a
//! task never resumes from an older committed offset than an earlier
//! instance did; and, every half second, that no unit runs nowhere for
//! more than 10 s while the group is stable with final assignments. After the schedule the network heals and the cluster must
//! settle: the group stable with every live worker, every task of every
//! connector running exactly once, every worker on the same config
//! offset; then no further rebalance in a quiet minute; and each task's
//! records in the data topic have no gap.
//!
//! What "deterministic" means here: the schedule, the plugins' timings and
//! every timeout come from the seed and tokio's paused clock, so a seed
//! replays the same faults at the same simulated instants. The workers'
//! own interleavings are tokio's (`select!` picks ready branches at
//! random, loopback sockets and hash maps are the OS's and std's), so a
//! replay follows the same schedule, not always the same instruction
//! order; a failure found once is rerun with its seed until it shows.

pub(crate) mod coordinator;
pub(crate) mod lagging;
pub(crate) mod schedule;
pub(crate) mod sim_source;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::time::Instant;

/// What happened when, in simulated time: printed when a seed fails.
pub(crate) struct Timeline {
    start: Instant,
    lines: Mutex<Vec<String>>,
}

impl Timeline {
    /// A timeline starting now.
    pub(crate) fn new() -> Arc<Timeline> {
        Arc::new(Timeline {
            start: Instant::now(),
            lines: Mutex::new(Vec::new()),
        })
    }

    /// Records `line` at the current simulated instant.
    pub(crate) fn log(&self, line: String) {
        let at = self.start.elapsed().as_secs_f64();
        let mut lines = self.lines.lock().unwrap_or_else(|p| p.into_inner());
        lines.push(format!("{at:>9.3}s  {line}"));
    }

    /// Every line so far.
    pub(crate) fn render(&self) -> String {
        let lines = self.lines.lock().unwrap_or_else(|p| p.into_inner());
        let mut out = String::new();
        for line in lines.iter() {
            let _ = writeln!(out, "{line}");
        }
        out
    }
}

/// Writes the workers' log lines (`SIM_LOG`, an `EnvFilter` directive
/// such as `connect_distributed=info`) into a timeline, at their simulated
/// instant, so a replayed seed shows why as well as what.
#[derive(Clone)]
pub(crate) struct LogToTimeline(pub(crate) Arc<Timeline>);

/// One log line on its way into the timeline.
pub(crate) struct LogLine(Arc<Timeline>, Vec<u8>);

impl std::io::Write for LogLine {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.1.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for LogLine {
    fn drop(&mut self) {
        let line = String::from_utf8_lossy(&self.1);
        let line = line.trim_end();
        if !line.is_empty() {
            self.0.log(format!("  log: {line}"));
        }
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for LogToTimeline {
    type Writer = LogLine;
    fn make_writer(&'a self) -> LogLine {
        LogLine(self.0.clone(), Vec::new())
    }
}

impl LogToTimeline {
    /// With `SIM_LOG` set, this thread's log events (every task of a
    /// current-thread runtime) go into `timeline` while the guard lives.
    pub(crate) fn install(timeline: &Arc<Timeline>) -> Option<tracing::subscriber::DefaultGuard> {
        let filter = std::env::var("SIM_LOG").ok()?;
        let subscriber = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
            .without_time()
            .with_ansi(false)
            .with_target(false)
            .with_writer(LogToTimeline(timeline.clone()))
            .finish();
        Some(tracing::subscriber::set_default(subscriber))
    }
}

#[derive(Default)]
struct Tracked {
    /// Unit (`c` or `c-0`) → the workers running an instance of it now.
    running: BTreeMap<String, BTreeSet<String>>,
    /// Crashed workers: whatever their instances do next is not observed
    /// (a real process would be gone).
    dead: BTreeSet<String>,
    /// Task → the highest next offset an instance resumed from.
    resumed: BTreeMap<String, i64>,
    violations: Vec<String>,
}

/// The instances running on each worker, and the invariants over them.
pub(crate) struct Tracker {
    timeline: Arc<Timeline>,
    tracked: Mutex<Tracked>,
}

/// One running instance; dropping it ends it.
pub(crate) struct Running {
    tracker: Arc<Tracker>,
    unit: String,
    worker: String,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.tracker.ended(&self.unit, &self.worker);
    }
}

impl Tracker {
    /// A tracker logging to `timeline`.
    pub(crate) fn new(timeline: Arc<Timeline>) -> Arc<Tracker> {
        Arc::new(Tracker {
            timeline,
            tracked: Mutex::new(Tracked::default()),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Tracked> {
        self.tracked.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// `unit` starts on `worker`; a violation if it runs elsewhere.
    pub(crate) fn started(self: &Arc<Tracker>, unit: &str, worker: &str) -> Running {
        let mut guard = self.lock();
        let t = &mut *guard;
        if !t.dead.contains(worker) {
            let on = t.running.entry(unit.to_owned()).or_default();
            if !on.is_empty() {
                let line = format!("VIOLATION: {unit} started on {worker} while running on {on:?}");
                self.timeline.log(line.clone());
                t.violations.push(line);
            }
            on.insert(worker.to_owned());
            self.timeline.log(format!("{worker}: {unit} started"));
        }
        Running {
            tracker: self.clone(),
            unit: unit.to_owned(),
            worker: worker.to_owned(),
        }
    }

    fn ended(&self, unit: &str, worker: &str) {
        let mut t = self.lock();
        if t.dead.contains(worker) {
            return;
        }
        if let Some(on) = t.running.get_mut(unit) {
            on.remove(worker);
            if on.is_empty() {
                t.running.remove(unit);
            }
        }
        self.timeline.log(format!("{worker}: {unit} ended"));
    }

    /// Task `unit` resumes from `next`; a violation if an earlier
    /// instance resumed from further on (a committed offset went back).
    pub(crate) fn resumed(&self, unit: &str, worker: &str, next: i64) {
        let mut t = self.lock();
        if t.dead.contains(worker) {
            return;
        }
        let before = t.resumed.get(unit).copied().unwrap_or(0);
        if next < before {
            let line = format!(
                "VIOLATION: {unit} on {worker} resumed from offset {next}, an earlier instance from {before}"
            );
            self.timeline.log(line.clone());
            t.violations.push(line);
        }
        t.resumed.insert(unit.to_owned(), next.max(before));
    }

    /// `worker`'s process is gone: its instances end now.
    pub(crate) fn crashed(&self, worker: &str) {
        let mut t = self.lock();
        t.dead.insert(worker.to_owned());
        t.running.retain(|_, on| {
            on.remove(worker);
            !on.is_empty()
        });
    }

    /// Records a violation found outside the instances' own events.
    pub(crate) fn violation(&self, line: String) {
        self.timeline.log(line.clone());
        self.lock().violations.push(line);
    }

    /// Whether `worker` crashed (its plugins then do nothing more).
    pub(crate) fn is_dead(&self, worker: &str) -> bool {
        self.lock().dead.contains(worker)
    }

    /// The violations so far.
    pub(crate) fn violations(&self) -> Vec<String> {
        self.lock().violations.clone()
    }

    /// Unit → workers, now.
    pub(crate) fn running(&self) -> BTreeMap<String, BTreeSet<String>> {
        self.lock().running.clone()
    }
}
