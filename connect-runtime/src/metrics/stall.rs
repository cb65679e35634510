//! Calls into a task that do not return. A `poll`, `put` or `flush` that
//! runs longer than `task.stall.warn.ms` is a stall: the task still says
//! RUNNING (the call has not failed), so the worker logs a WARN naming the
//! call and how long it has run, `/metrics` shows it
//! (`kafka_connect_connector_task_metrics_stalled_seconds`, ours) and `/ui`
//! marks the task, until the call returns.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// A call into a task that the worker times.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskCall {
    /// `SourceTask::poll`.
    Poll,
    /// `SinkTask::put`.
    Put,
    /// `SinkTask::pre_commit` (which flushes, by default through `flush`).
    Flush,
}

impl TaskCall {
    /// The call's name, as logs and metrics show it.
    pub fn name(self) -> &'static str {
        match self {
            TaskCall::Poll => "poll",
            TaskCall::Put => "put",
            TaskCall::Flush => "flush",
        }
    }

    fn from_code(code: u8) -> Option<TaskCall> {
        match code {
            1 => Some(TaskCall::Poll),
            2 => Some(TaskCall::Put),
            3 => Some(TaskCall::Flush),
            _ => None,
        }
    }

    fn code(self) -> u8 {
        match self {
            TaskCall::Poll => 1,
            TaskCall::Put => 2,
            TaskCall::Flush => 3,
        }
    }
}

/// Milliseconds since a process-wide start, plus one (0 means idle).
fn now_mark() -> u64 {
    static BASE: OnceLock<Instant> = OnceLock::new();
    let base = *BASE.get_or_init(Instant::now);
    base.elapsed().as_millis() as u64 + 1
}

/// Which call a task is in and since when: two atomic stores per call,
/// read by the stall watch and at scrape time.
///
/// ```
/// use connect_runtime::metrics::{CallClock, TaskCall};
///
/// let clock = CallClock::default();
/// assert!(clock.current().is_none());
/// {
///     let _in_call = clock.enter(TaskCall::Poll);
///     assert_eq!(clock.current().map(|(call, _)| call), Some(TaskCall::Poll));
/// }
/// assert!(clock.current().is_none());
/// ```
#[derive(Debug, Default)]
pub struct CallClock {
    since: AtomicU64,
    call: AtomicU8,
    /// Set once the stall watch warned about the call in progress.
    warned: AtomicBool,
}

impl CallClock {
    /// Note that `call` starts; it ends when the guard drops.
    pub fn enter(&self, call: TaskCall) -> InCall<'_> {
        self.call.store(call.code(), Ordering::Relaxed);
        self.since.store(now_mark(), Ordering::Release);
        InCall(self)
    }

    /// The call in progress and how long it has run.
    pub fn current(&self) -> Option<(TaskCall, Duration)> {
        let since = self.since.load(Ordering::Acquire);
        if since == 0 {
            return None;
        }
        let call = TaskCall::from_code(self.call.load(Ordering::Relaxed))?;
        let ran = now_mark().saturating_sub(since);
        Some((call, Duration::from_millis(ran)))
    }

    /// The call in progress when it has run for `threshold` or longer.
    pub fn stalled(&self, threshold: Duration) -> Option<(TaskCall, Duration)> {
        if threshold.is_zero() {
            return None;
        }
        self.current().filter(|(_, ran)| *ran >= threshold)
    }

    /// Mark the call in progress as warned about; `true` the first time.
    pub(crate) fn warn_once(&self) -> bool {
        !self.warned.swap(true, Ordering::AcqRel)
    }

    fn leave(&self) {
        let since = self.since.swap(0, Ordering::AcqRel);
        if self.warned.swap(false, Ordering::AcqRel) {
            let call = TaskCall::from_code(self.call.load(Ordering::Relaxed));
            let ran = Duration::from_millis(now_mark().saturating_sub(since));
            tracing::info!(
                call = call.map_or("?", TaskCall::name),
                "the stalled call returned after {ran:?}"
            );
        }
    }
}

/// A call in progress ([`CallClock::enter`]); dropping it ends the call.
#[derive(Debug)]
#[must_use = "the call ends when this guard drops"]
pub struct InCall<'a>(&'a CallClock);

impl Drop for InCall<'_> {
    fn drop(&mut self) {
        self.0.leave();
    }
}
