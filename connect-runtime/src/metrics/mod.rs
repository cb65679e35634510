//! Kafka Connect's metrics, kept by the runtime for its worker, connectors
//! and tasks.
//!
//! Tasks update a [`TaskMetrics`] of plain atomics once per batch (no lock,
//! no allocation on the record path). [`WorkerMetrics`] holds the worker's
//! counters and every task's [`TaskMetrics`]; with the `prometheus` feature
//! it is a `prometheus_client` collector, rendered on `GET /metrics` and
//! registrable in an embedding service's own registry.
//!
//! Names follow the JMX exporter rules commonly used for Kafka Connect
//! (`kafka.connect<type=T, connector=C, task=N><>A` becomes
//! `kafka_connect_T_A{connector="C",task="N"}`, `-` turned into `_`), so a
//! dashboard built on the JMX exporter's output works unchanged:
//! `kafka_connect_source_task_metrics_source_record_poll_total`,
//! `kafka_connect_task_error_metrics_deadletterqueue_produce_requests`, ...

#[cfg(feature = "prometheus")]
mod export;

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

mod rebalance;
mod stall;

pub use rebalance::{RebalanceMetrics, RebalanceSnapshot};
pub use stall::{CallClock, InCall, TaskCall};

use crate::errors::ErrorStats;
use crate::status::{StatusStore, TaskId};

/// A running average and maximum (Kafka's `-avg` and `-max` pairs).
#[derive(Debug, Default)]
pub struct AvgMax {
    sum: AtomicU64,
    count: AtomicU64,
    max: AtomicU64,
}

impl AvgMax {
    /// Record one observation.
    pub fn record(&self, value: u64) {
        self.sum.fetch_add(value, Ordering::Relaxed);
        self.count.fetch_add(1, Ordering::Relaxed);
        self.max.fetch_max(value, Ordering::Relaxed);
    }

    /// The average so far; `None` before the first observation (Kafka
    /// reports NaN then).
    pub fn avg(&self) -> Option<f64> {
        let count = self.count.load(Ordering::Relaxed);
        (count > 0).then(|| self.sum.load(Ordering::Relaxed) as f64 / count as f64)
    }

    /// The largest observation so far; `None` before the first.
    pub fn max(&self) -> Option<u64> {
        (self.count.load(Ordering::Relaxed) > 0).then(|| self.max.load(Ordering::Relaxed))
    }
}

/// Kafka's default `metrics.sample.window.ms`: rates are over about this
/// long.
const RATE_WINDOW: Duration = Duration::from_secs(30);

/// A counter's per-second rate over about the last 30 s, from samples
/// taken when the metrics are read (never on the record path).
#[derive(Debug, Default)]
pub struct RateWindow {
    samples: Mutex<VecDeque<(Instant, u64)>>,
}

impl RateWindow {
    /// The rate of a counter that now stands at `total` and stood at 0 at
    /// `started`.
    pub fn rate(&self, total: u64, started: Instant, now: Instant) -> f64 {
        let mut samples = self.samples.lock().unwrap_or_else(|e| e.into_inner());
        samples.push_back((now, total));
        // Keep one sample at or before the window's start as the baseline.
        while samples.len() > 2 && now.duration_since(samples[1].0) >= RATE_WINDOW {
            samples.pop_front();
        }
        // A task younger than the window: over its whole life, whenever
        // the reads began.
        let (since, base) = match samples.front() {
            _ if now.duration_since(started) <= RATE_WINDOW => (started, 0),
            Some(&(at, v)) if samples.len() > 1 => (at, v),
            _ => (started, 0),
        };
        let secs = now.duration_since(since).as_secs_f64();
        if secs <= 0.0 {
            return 0.0;
        }
        total.saturating_sub(base) as f64 / secs
    }
}

/// Time spent running and paused since the task started (`running-ratio`,
/// `pause-ratio`).
#[derive(Debug)]
struct StateClock {
    started: Instant,
    since: Instant,
    current: Option<bool>,
    running: Duration,
    paused: Duration,
}

impl StateClock {
    fn new(now: Instant) -> Self {
        StateClock {
            started: now,
            since: now,
            current: None,
            running: Duration::ZERO,
            paused: Duration::ZERO,
        }
    }

    fn close(&mut self, now: Instant) {
        let spent = now.duration_since(self.since);
        match self.current {
            Some(true) => self.running += spent,
            Some(false) => self.paused += spent,
            None => {}
        }
        self.since = now;
    }

    fn ratios(&mut self, now: Instant) -> (f64, f64) {
        self.close(now);
        let total = now.duration_since(self.started).as_secs_f64();
        if total <= 0.0 {
            return (0.0, 0.0);
        }
        (
            self.running.as_secs_f64() / total,
            self.paused.as_secs_f64() / total,
        )
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// One task's metrics (`connector-task-metrics`, `source-task-metrics` or
/// `sink-task-metrics`, and `task-error-metrics`), updated by its loop.
///
/// ```
/// use std::time::Duration;
/// use connect_runtime::metrics::TaskMetrics;
///
/// let m = TaskMetrics::default();
/// m.record_poll(100, Duration::from_millis(4));
/// m.record_write(100);
/// assert_eq!((m.source_record_poll_total(), m.source_record_write_total()), (100, 100));
/// assert_eq!(m.batch_size.avg(), Some(100.0));
/// ```
#[derive(Debug)]
pub struct TaskMetrics {
    started: Instant,
    states: Mutex<StateClock>,
    /// Rate windows, read at scrape time: poll, write, read, send, commit
    /// completion, commit skip.
    rates: [RateWindow; 6],
    source_record_poll: AtomicU64,
    source_record_write: AtomicU64,
    sink_record_read: AtomicU64,
    sink_record_send: AtomicU64,
    /// Records polled or read but not yet written or committed.
    active: AtomicU64,
    active_max: AtomicU64,
    partition_count: AtomicU64,
    lag_max: AtomicU64,
    commit_completion: AtomicU64,
    commit_skip: AtomicU64,
    commit_success: AtomicU64,
    commit_failure: AtomicU64,
    errors: [AtomicU64; 7],
    last_error_timestamp: AtomicU64,
    /// Records per poll (source) or per put (sink): `batch-size-avg/max`.
    pub batch_size: AvgMax,
    /// Milliseconds a source `poll` took: `poll-batch-avg/max-time-ms`.
    pub poll_batch_time: AvgMax,
    /// Milliseconds a sink `put` took: `put-batch-avg/max-time-ms`.
    pub put_batch_time: AvgMax,
    /// Milliseconds an offset commit took: `offset-commit-avg/max-time-ms`.
    pub commit_time: AvgMax,
    /// The call into the task in progress, for stall detection.
    pub calls: CallClock,
}

impl Default for TaskMetrics {
    fn default() -> Self {
        let now = Instant::now();
        TaskMetrics {
            started: now,
            states: Mutex::new(StateClock::new(now)),
            rates: Default::default(),
            source_record_poll: Default::default(),
            source_record_write: Default::default(),
            sink_record_read: Default::default(),
            sink_record_send: Default::default(),
            active: Default::default(),
            active_max: Default::default(),
            partition_count: Default::default(),
            lag_max: Default::default(),
            commit_completion: Default::default(),
            commit_skip: Default::default(),
            commit_success: Default::default(),
            commit_failure: Default::default(),
            errors: Default::default(),
            last_error_timestamp: Default::default(),
            batch_size: Default::default(),
            poll_batch_time: Default::default(),
            put_batch_time: Default::default(),
            commit_time: Default::default(),
            calls: Default::default(),
        }
    }
}

/// Which counter a rate is of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rated {
    /// `source-record-poll-rate`.
    SourcePoll,
    /// `source-record-write-rate`.
    SourceWrite,
    /// `sink-record-read-rate`.
    SinkRead,
    /// `sink-record-send-rate`.
    SinkSend,
    /// `offset-commit-completion-rate`.
    CommitCompletion,
    /// `offset-commit-skip-rate`.
    CommitSkip,
}

impl TaskMetrics {
    /// The task is now running (`true`) or paused (`false`): called on each
    /// change only.
    pub fn set_running(&self, running: bool) {
        let mut clock = self.states.lock().unwrap_or_else(|e| e.into_inner());
        clock.close(Instant::now());
        clock.current = Some(running);
    }

    /// `running-ratio` and `pause-ratio`: the shares of the time since the
    /// task started that it spent running and paused.
    pub fn state_ratios(&self) -> (f64, f64) {
        let mut clock = self.states.lock().unwrap_or_else(|e| e.into_inner());
        clock.ratios(Instant::now())
    }

    /// The per-second rate of `counter` over about the last 30 s (sampled
    /// when read, so a reader every 15 s sees Kafka's window).
    pub fn rate(&self, counter: Rated) -> f64 {
        let (window, total) = match counter {
            Rated::SourcePoll => (0, self.source_record_poll_total()),
            Rated::SourceWrite => (1, self.source_record_write_total()),
            Rated::SinkRead => (2, self.sink_record_read_total()),
            Rated::SinkSend => (3, self.sink_record_send_total()),
            Rated::CommitCompletion => (4, self.offset_commits().0),
            Rated::CommitSkip => (5, self.offset_commits().1),
        };
        self.rates[window].rate(total, self.started, Instant::now())
    }

    /// A source task's `poll` returned `records` after `took`.
    pub fn record_poll(&self, records: usize, took: Duration) {
        self.source_record_poll
            .fetch_add(records as u64, Ordering::Relaxed);
        self.batch_size.record(records as u64);
        self.poll_batch_time.record(millis(took));
    }

    /// `records` source records were acknowledged by Kafka.
    pub fn record_write(&self, records: usize) {
        self.source_record_write
            .fetch_add(records as u64, Ordering::Relaxed);
    }

    /// A sink task's consumer returned `records`.
    pub fn record_read(&self, records: usize) {
        self.sink_record_read
            .fetch_add(records as u64, Ordering::Relaxed);
    }

    /// A sink task's `put` took `records` (after transforms) in `took`.
    pub fn record_put(&self, records: usize, took: Duration) {
        self.sink_record_send
            .fetch_add(records as u64, Ordering::Relaxed);
        self.batch_size.record(records as u64);
        self.put_batch_time.record(millis(took));
    }

    /// An offset commit ended: `Some(ok)` after `took`, `None` when there
    /// was nothing to commit (Kafka's skipped commit).
    pub fn record_commit(&self, outcome: Option<bool>, took: Duration) {
        match outcome {
            None => {
                self.commit_skip.fetch_add(1, Ordering::Relaxed);
            }
            Some(ok) => {
                self.commit_completion.fetch_add(1, Ordering::Relaxed);
                let counter = if ok {
                    &self.commit_success
                } else {
                    &self.commit_failure
                };
                counter.fetch_add(1, Ordering::Relaxed);
                self.commit_time.record(millis(took));
            }
        }
    }

    /// Records in flight (source: polled, not yet acknowledged; sink: read,
    /// not yet committed).
    pub fn set_active(&self, records: usize) {
        self.active.store(records as u64, Ordering::Relaxed);
        self.active_max.fetch_max(records as u64, Ordering::Relaxed);
    }

    /// How far behind the end of its partitions a sink task is, at most
    /// (`sink-record-lag-max`).
    pub fn set_lag_max(&self, records: u64) {
        self.lag_max.store(records, Ordering::Relaxed);
    }

    /// Partitions assigned to a sink task.
    pub fn set_partition_count(&self, partitions: usize) {
        self.partition_count
            .store(partitions as u64, Ordering::Relaxed);
    }

    /// The error pipeline's counters, as they stand; the time of the last
    /// error is noted when the error count grew.
    pub fn set_errors(&self, stats: &ErrorStats) {
        let values = [
            stats.total_record_errors,
            stats.total_record_failures,
            stats.total_records_skipped,
            stats.total_retries,
            stats.total_errors_logged,
            stats.dlq_produce_requests,
            stats.dlq_produce_failures,
        ];
        let before = self.errors[1].load(Ordering::Relaxed);
        for (slot, v) in self.errors.iter().zip(values) {
            slot.store(v, Ordering::Relaxed);
        }
        if stats.total_record_failures > before {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(millis)
                .unwrap_or(0);
            self.last_error_timestamp.store(now, Ordering::Relaxed);
        }
    }

    /// `source-record-poll-total`.
    pub fn source_record_poll_total(&self) -> u64 {
        self.source_record_poll.load(Ordering::Relaxed)
    }
    /// `source-record-write-total`.
    pub fn source_record_write_total(&self) -> u64 {
        self.source_record_write.load(Ordering::Relaxed)
    }
    /// `sink-record-read-total`.
    pub fn sink_record_read_total(&self) -> u64 {
        self.sink_record_read.load(Ordering::Relaxed)
    }
    /// `sink-record-send-total`.
    pub fn sink_record_send_total(&self) -> u64 {
        self.sink_record_send.load(Ordering::Relaxed)
    }
    /// `offset-commit-completion-total` and `offset-commit-skip-total`.
    pub fn offset_commits(&self) -> (u64, u64) {
        (
            self.commit_completion.load(Ordering::Relaxed),
            self.commit_skip.load(Ordering::Relaxed),
        )
    }
    /// The error counters in `task-error-metrics` order: total-record-errors,
    /// total-record-failures, total-records-skipped, total-retries,
    /// total-errors-logged, deadletterqueue-produce-requests,
    /// deadletterqueue-produce-failures.
    pub fn error_counts(&self) -> [u64; 7] {
        std::array::from_fn(|i| self.errors[i].load(Ordering::Relaxed))
    }
}

/// What kind of task a [`TaskMetrics`] belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskKind {
    /// A source task.
    Source,
    /// A sink task.
    Sink,
}

/// A connector as `connector-metrics` describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectorMeta {
    /// `connector-class`.
    pub class: String,
    /// `connector-type`.
    pub kind: TaskKind,
}

/// The worker's metrics (`connect-worker-metrics`) and every connector's and
/// task's; cheap to clone (a handle).
#[derive(Clone)]
pub struct WorkerMetrics {
    inner: Arc<Inner>,
}

struct Inner {
    /// Read at scrape time for the status metrics (the `prometheus` export).
    #[cfg_attr(not(feature = "prometheus"), allow(dead_code))]
    status: Arc<dyn StatusStore>,
    connectors: Mutex<BTreeMap<String, ConnectorMeta>>,
    tasks: Mutex<BTreeMap<TaskId, (TaskKind, Arc<TaskMetrics>)>>,
    /// connector-startup-{attempts,success,failure}-total, then task-...
    startups: [AtomicU64; 6],
    /// Distributed mode's rebalances (exported once one completed).
    rebalance: RebalanceMetrics,
    /// Automatic restarts tried, and units they gave up on.
    auto_restarts: [AtomicU64; 2],
    /// `task.stall.warn.ms` (0: off).
    stall_threshold_ms: AtomicU64,
}

impl std::fmt::Debug for WorkerMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkerMetrics").finish_non_exhaustive()
    }
}

/// Which startup counter to bump.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Startup {
    /// A connector start succeeded (or failed, with `false`).
    Connector(bool),
    /// A task start succeeded (or failed, with `false`).
    Task(bool),
}

impl WorkerMetrics {
    /// Metrics for a worker whose states are in `status`.
    pub fn new(status: Arc<dyn StatusStore>) -> Self {
        WorkerMetrics {
            inner: Arc::new(Inner {
                status,
                connectors: Mutex::default(),
                tasks: Mutex::default(),
                startups: Default::default(),
                rebalance: RebalanceMetrics::default(),
                auto_restarts: Default::default(),
                stall_threshold_ms: AtomicU64::new(0),
            }),
        }
    }

    fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
        // Each update replaces whole entries: a poisoned map is still whole.
        m.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Note a connector (re)configured with `meta`.
    pub fn connector(&self, name: &str, meta: ConnectorMeta) {
        Self::lock(&self.inner.connectors).insert(name.to_string(), meta);
    }

    /// The metrics of task `id` (a fresh set when it was not running).
    pub fn task(&self, id: &TaskId, kind: TaskKind) -> Arc<TaskMetrics> {
        let mut tasks = Self::lock(&self.inner.tasks);
        let entry = tasks
            .entry(id.clone())
            .or_insert_with(|| (kind, Arc::new(TaskMetrics::default())));
        entry.0 = kind;
        entry.1.clone()
    }

    /// Forget task `task` of `connector`, or every task of it (`None`), and
    /// with `None` the connector too.
    pub fn forget(&self, connector: &str, task: Option<u32>) {
        Self::lock(&self.inner.tasks)
            .retain(|id, _| id.connector != connector || task.is_some_and(|t| t != id.task));
        if task.is_none() {
            Self::lock(&self.inner.connectors).remove(connector);
        }
    }

    /// Count a start attempt and its outcome.
    pub fn startup(&self, what: Startup) {
        let (base, ok) = match what {
            Startup::Connector(ok) => (0, ok),
            Startup::Task(ok) => (3, ok),
        };
        self.inner.startups[base].fetch_add(1, Ordering::Relaxed);
        let slot = if ok { base + 1 } else { base + 2 };
        self.inner.startups[slot].fetch_add(1, Ordering::Relaxed);
    }

    /// Count an automatic restart (`true`), or a unit the automatic
    /// restarts gave up on (`false`).
    pub fn auto_restart(&self, attempted: bool) {
        let slot = if attempted { 0 } else { 1 };
        self.inner.auto_restarts[slot].fetch_add(1, Ordering::Relaxed);
    }

    /// Automatic restarts tried, and units they gave up on.
    pub fn auto_restarts(&self) -> (u64, u64) {
        (
            self.inner.auto_restarts[0].load(Ordering::Relaxed),
            self.inner.auto_restarts[1].load(Ordering::Relaxed),
        )
    }

    /// The stall threshold (`task.stall.warn.ms`; zero: off).
    pub fn stall_threshold(&self) -> Duration {
        Duration::from_millis(self.inner.stall_threshold_ms.load(Ordering::Relaxed))
    }

    /// Watch every task for calls that run past `threshold`
    /// (`task.stall.warn.ms`): warn once per stalled call, naming the
    /// connector, the task, the call and how long it has run. Runs until
    /// these metrics are dropped; a zero threshold returns at once.
    pub fn watch_stalls(&self, threshold: Duration) -> impl std::future::Future<Output = ()> {
        self.inner
            .stall_threshold_ms
            .store(threshold.as_millis() as u64, Ordering::Relaxed);
        let weak = Arc::downgrade(&self.inner);
        let every = (threshold / 4).clamp(Duration::from_millis(50), Duration::from_secs(1));
        async move {
            if threshold.is_zero() {
                return;
            }
            loop {
                tokio::time::sleep(every).await;
                let Some(inner) = weak.upgrade() else { return };
                let tasks = WorkerMetrics { inner }.tasks();
                for (id, _, m) in tasks {
                    if let Some((call, ran)) = m.calls.stalled(threshold) {
                        if m.calls.warn_once() {
                            tracing::warn!(connector = %id.connector, task = id.task, call = call.name(),
                                "task {id}: {} has not returned for {ran:?} (task.stall.warn.ms is {threshold:?}); the task still shows RUNNING", call.name());
                        }
                    }
                }
            }
        }
    }

    /// The rebalance metrics a distributed herder keeps.
    pub fn rebalance(&self) -> &RebalanceMetrics {
        &self.inner.rebalance
    }

    /// `connector-count` and `task-count`.
    pub fn counts(&self) -> (usize, usize) {
        (
            Self::lock(&self.inner.connectors).len(),
            Self::lock(&self.inner.tasks).len(),
        )
    }

    /// A copy of every task's metrics handle, in task order.
    pub fn tasks(&self) -> Vec<(TaskId, TaskKind, Arc<TaskMetrics>)> {
        Self::lock(&self.inner.tasks)
            .iter()
            .map(|(id, (kind, m))| (id.clone(), *kind, m.clone()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::status::MemoryStatusStore;

    #[test]
    fn averages_and_maxima_start_empty_and_follow_observations() {
        let a = AvgMax::default();
        assert_eq!((a.avg(), a.max()), (None, None));
        a.record(10);
        a.record(30);
        assert_eq!((a.avg(), a.max()), (Some(20.0), Some(30)));
    }

    #[test]
    fn a_rate_is_over_the_last_window_from_the_reads() {
        let w = RateWindow::default();
        let t0 = Instant::now();
        let s = Duration::from_secs;
        // First read: since the start.
        assert_eq!(w.rate(100, t0, t0 + s(10)), 10.0);
        assert_eq!(w.rate(400, t0, t0 + s(20)), 20.0, "younger than the window");
        assert_eq!(
            w.rate(700, t0, t0 + s(40)),
            20.0,
            "600 in the 30 s since the first read"
        );
        // Past the window, the oldest read is dropped as the baseline.
        assert_eq!(w.rate(700, t0, t0 + s(75)), 0.0, "nothing in 35 s");
        assert_eq!(w.rate(700, t0, t0 + s(75)), 0.0, "a second read at once");
    }

    #[test]
    fn running_and_pause_ratios_share_the_time() {
        let mut clock = StateClock::new(Instant::now());
        let t = clock.started;
        clock.current = Some(true);
        clock.close(t + Duration::from_secs(3));
        clock.current = Some(false);
        let (running, paused) = clock.ratios(t + Duration::from_secs(4));
        assert_eq!((running, paused), (0.75, 0.25));
    }

    #[test]
    fn commits_count_completions_skips_and_failures() {
        let m = TaskMetrics::default();
        m.record_commit(Some(true), Duration::from_millis(4));
        m.record_commit(Some(false), Duration::from_millis(8));
        m.record_commit(None, Duration::ZERO);
        assert_eq!(m.offset_commits(), (2, 1));
        assert_eq!(m.commit_time.max(), Some(8));
    }

    #[test]
    fn the_worker_forgets_one_task_or_a_whole_connector() {
        let w = WorkerMetrics::new(Arc::new(MemoryStatusStore::default()));
        let id = |c: &str, t| TaskId {
            connector: c.into(),
            task: t,
        };
        let meta = ConnectorMeta {
            class: "X".into(),
            kind: TaskKind::Sink,
        };
        w.connector("a", meta.clone());
        w.connector("b", meta);
        for t in 0..2 {
            w.task(&id("a", t), TaskKind::Sink);
        }
        w.task(&id("b", 0), TaskKind::Sink).record_read(3);
        assert_eq!(w.counts(), (2, 3));
        w.forget("a", Some(1));
        assert_eq!(w.counts(), (2, 2));
        w.forget("a", None);
        assert_eq!(w.counts(), (1, 1));
        let same = w.task(&id("b", 0), TaskKind::Sink);
        assert_eq!(
            same.sink_record_read_total(),
            3,
            "a running task keeps its metrics"
        );
    }
}
