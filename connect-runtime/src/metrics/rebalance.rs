//! Distributed mode's `connect-worker-rebalance-metrics`: the group
//! protocol in use, the leader, the generation, whether a rebalance is
//! under way, and how many completed and how long they took.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::AvgMax;

/// What a distributed herder reports about its rebalances; a standalone
/// worker never has one.
///
/// ```
/// use connect_runtime::metrics::RebalanceMetrics;
///
/// let m = RebalanceMetrics::default();
/// m.started();
/// m.completed("sessioned", "http://10.0.0.1:8083/", 3);
/// let now = m.snapshot().expect("a rebalance completed");
/// assert_eq!((now.epoch, now.completed, now.rebalancing), (3, 1, false));
/// ```
#[derive(Debug, Default)]
pub struct RebalanceMetrics {
    state: Mutex<State>,
    times: AvgMax,
}

#[derive(Debug, Default)]
struct State {
    protocol: String,
    leader: String,
    epoch: i32,
    started: Option<Instant>,
    completed: u64,
    last_completed: Option<Instant>,
}

/// The rebalance metrics at one moment.
#[derive(Debug, Clone, PartialEq)]
pub struct RebalanceSnapshot {
    /// `connect-protocol`: the elected sub-protocol.
    pub protocol: String,
    /// `leader-name`: the leader's REST URL.
    pub leader: String,
    /// `epoch`: the group generation.
    pub epoch: i32,
    /// `rebalancing`: whether a rebalance is under way.
    pub rebalancing: bool,
    /// `completed-rebalances-total`.
    pub completed: u64,
    /// `rebalance-avg-time-ms`.
    pub avg_ms: Option<f64>,
    /// `rebalance-max-time-ms`.
    pub max_ms: Option<u64>,
    /// `time-since-last-rebalance-ms`.
    pub since_last: Option<Duration>,
}

impl RebalanceMetrics {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A rebalance began (the first call of a round counts).
    pub fn started(&self) {
        let mut s = self.lock();
        s.started.get_or_insert_with(Instant::now);
    }

    /// A rebalance completed: this worker is in generation `epoch` of the
    /// `protocol` group led by `leader`.
    pub fn completed(&self, protocol: &str, leader: &str, epoch: i32) {
        let now = Instant::now();
        let mut s = self.lock();
        if let Some(started) = s.started.take() {
            self.times
                .record(now.duration_since(started).as_millis() as u64);
        }
        s.protocol = protocol.to_string();
        s.leader = leader.to_string();
        s.epoch = epoch;
        s.completed += 1;
        s.last_completed = Some(now);
    }

    /// The metrics now; `None` before the first completed rebalance.
    pub fn snapshot(&self) -> Option<RebalanceSnapshot> {
        let s = self.lock();
        let last = s.last_completed?;
        Some(RebalanceSnapshot {
            protocol: s.protocol.clone(),
            leader: s.leader.clone(),
            epoch: s.epoch,
            rebalancing: s.started.is_some(),
            completed: s.completed,
            avg_ms: self.times.avg(),
            max_ms: self.times.max(),
            since_last: Some(last.elapsed()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_before_the_first_rebalance_then_counts_and_times() {
        let m = RebalanceMetrics::default();
        assert_eq!(m.snapshot(), None);
        m.started();
        std::thread::sleep(Duration::from_millis(5));
        m.started(); // the same round
        m.completed("compatible", "http://a/", 1);
        let s = m.snapshot().unwrap();
        assert_eq!((s.completed, s.epoch, s.rebalancing), (1, 1, false));
        assert!(s.max_ms.unwrap() >= 5, "{s:?}");
        m.started();
        assert!(m.snapshot().unwrap().rebalancing);
        m.completed("compatible", "http://b/", 2);
        let s = m.snapshot().unwrap();
        assert_eq!((s.completed, s.leader.as_str()), (2, "http://b/"));
    }
}
