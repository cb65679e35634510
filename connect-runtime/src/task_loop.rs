//! What the source and sink task loops share: the offset flush timer and
//! the target state, reported once per change.

use std::time::Duration;

use tokio::sync::watch;
use tokio::time::{Instant, Interval, MissedTickBehavior};

use crate::metrics::TaskMetrics;
use crate::status::{State, StatusListener, TargetState, TaskId};

/// The offset flush timer: first tick one interval from now; a late tick
/// delays the next ones instead of bunching them.
pub(crate) fn flush_timer(every: Duration) -> Interval {
    let mut flush = tokio::time::interval_at(Instant::now() + every, every);
    flush.set_missed_tick_behavior(MissedTickBehavior::Delay);
    flush
}

/// The target state a loop last reported.
#[derive(Debug, Default)]
pub(crate) struct TargetWatch {
    reported: Option<TargetState>,
}

impl TargetWatch {
    /// Whether `target` differs from the last one seen (the first call
    /// always does); the caller applies it, then [`report`](Self::report)s.
    pub(crate) fn changed(&mut self, target: TargetState) -> bool {
        let changed = self.reported != Some(target);
        self.reported = Some(target);
        changed
    }

    /// RUNNING or PAUSED to the status store and the metrics (STOPPED is
    /// reported by the loop's end).
    pub(crate) fn report(
        target: TargetState,
        id: &TaskId,
        status: &dyn StatusListener,
        metrics: &TaskMetrics,
    ) {
        let state = match target {
            TargetState::Started => State::Running,
            TargetState::Paused => State::Paused,
            TargetState::Stopped => return,
        };
        metrics.set_running(state == State::Running);
        status.task_state(id, state, None);
    }
}

/// A task's failure, reported FAILED unless the task had already been told
/// to stop: then, as Kafka's `WorkerTask` ("after being scheduled for
/// shutdown, task threw an uncaught exception"), it is only logged, and
/// the worker's stop reports UNASSIGNED. A stop that runs out of time
/// abandons the task, which may still be failing on another thread (an
/// exactly-once task whose producer was fenced by the task's new instance
/// elsewhere): its FAILED must not overwrite the new instance's RUNNING.
pub(crate) fn report_failure(
    id: &TaskId,
    error: &connect_api::ConnectError,
    control: &watch::Receiver<TargetState>,
    status: &dyn StatusListener,
    kind: &str,
) {
    if *control.borrow() == TargetState::Stopped {
        tracing::warn!(task = %id, error = %error,
            "{kind} task failed after it was told to stop; not reported as FAILED");
        return;
    }
    tracing::error!(task = %id, error = %error, "{kind} task failed");
    status.task_state(
        id,
        State::Failed,
        Some(crate::errors::dlq::error_chain(error)),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::status::{MemoryStatusStore, StatusStore};

    #[test]
    fn a_failure_is_reported_failed_unless_the_task_was_told_to_stop() {
        let id = TaskId {
            connector: "c".into(),
            task: 0,
        };
        let error = connect_api::ConnectError::other("fenced");
        let statuses = MemoryStatusStore::default();
        let (control, watch) = watch::channel(TargetState::Stopped);
        statuses.task_state(&id, State::Running, None);
        report_failure(&id, &error, &watch, &statuses, "source");
        assert_eq!(
            statuses.task(&id).0,
            State::Running,
            "a stopping task's failure"
        );
        control.send_replace(TargetState::Started);
        report_failure(&id, &error, &watch, &statuses, "source");
        let (state, trace) = statuses.task(&id);
        assert_eq!(state, State::Failed);
        assert!(trace.is_some_and(|t| t.contains("fenced")));
    }
}
