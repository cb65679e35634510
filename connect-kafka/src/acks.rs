//! [`DeliveryWaiter`]: a [`DeliverySink`] for code that sends a few records
//! and then waits for them (the sink's dead letter queue, test harnesses),
//! rather than routing every ack into an offset tracker.

use std::collections::HashMap;
use std::fmt;
use std::sync::Mutex;
use std::time::Duration;

use tokio::sync::{oneshot, Notify};

use crate::{Delivered, DeliverySink, KafkaError};

/// Counts records in flight, remembers failures and wakes waiters.
///
/// The sender calls [`DeliveryWaiter::sending`] before each
/// [`Producer::send`](crate::Producer::send) (and
/// [`DeliveryWaiter::not_sent`] when the send was refused), so an ack that
/// arrives before the sender waits is never missed. [`DeliveryWaiter::idle`]
/// waits until nothing is in flight and reports the failures since the last
/// call; [`DeliveryWaiter::watch`] gives one record's outcome.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// use std::sync::Arc;
/// use std::time::Duration;
/// use connect_kafka::memory::MemoryKafka;
/// use connect_kafka::{ClientConfig, DeliveryWaiter, KafkaCluster, NewTopic, OutRecord};
///
/// let kafka = MemoryKafka::new();
/// kafka.create_topic(&NewTopic::new("orders", 1)).unwrap();
/// let acks = Arc::new(DeliveryWaiter::default());
/// let producer = kafka.producer(&ClientConfig::new(), acks.clone()).unwrap();
/// for token in 0..3 {
///     acks.sending();
///     producer.send(&OutRecord::new("orders", Some(&b"v"[..])), token).unwrap();
/// }
/// acks.idle(Some(Duration::from_secs(5))).await.unwrap();
/// assert_eq!(acks.in_flight(), 0);
/// # });
/// ```
#[derive(Default)]
pub struct DeliveryWaiter {
    state: Mutex<State>,
    idle: Notify,
}

#[derive(Default)]
struct State {
    in_flight: usize,
    failures: Vec<KafkaError>,
    watchers: HashMap<u64, oneshot::Sender<Result<(), KafkaError>>>,
}

/// Why [`DeliveryWaiter::idle`] failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AckFailure {
    /// Records were still in flight when the timeout passed.
    TimedOut {
        /// How long was waited.
        waited: Duration,
        /// Records without an outcome yet.
        in_flight: usize,
    },
    /// Records failed after the producer's own retries.
    Failed {
        /// How many failed since the last call.
        count: usize,
        /// The first failure.
        first: KafkaError,
    },
}

impl fmt::Display for AckFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AckFailure::TimedOut { waited, in_flight } => write!(
                f,
                "{in_flight} record(s) not acknowledged within {waited:?}"
            ),
            AckFailure::Failed { count, first } => {
                write!(f, "{count} record(s) not written; first: {first}")
            }
        }
    }
}

impl std::error::Error for AckFailure {}

impl DeliveryWaiter {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        // Every update leaves the state whole, so a panic elsewhere while
        // holding the lock does not make it unusable.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// One more record is about to be sent.
    pub fn sending(&self) {
        self.state().in_flight += 1;
    }

    /// The record announced with [`DeliveryWaiter::sending`] was not
    /// queued (the queue was full, or the producer refused it): it will
    /// never be acknowledged. Its watcher, if any, is dropped.
    pub fn not_sent(&self, token: u64) {
        let now_idle = {
            let mut s = self.state();
            s.watchers.remove(&token);
            s.in_flight = s.in_flight.saturating_sub(1);
            s.in_flight == 0
        };
        if now_idle {
            self.idle.notify_waiters();
        }
    }

    /// The outcome of the record sent with `token`; call before sending.
    /// The receiver errors (closed) if the record was not sent after all.
    pub fn watch(&self, token: u64) -> oneshot::Receiver<Result<(), KafkaError>> {
        let (tx, rx) = oneshot::channel();
        self.state().watchers.insert(token, tx);
        rx
    }

    /// Records sent and not acknowledged yet.
    pub fn in_flight(&self) -> usize {
        self.state().in_flight
    }

    /// Wait until nothing is in flight (at most `timeout`, when given),
    /// then report the failures since the last call; they are reported
    /// once.
    pub async fn idle(&self, timeout: Option<Duration>) -> Result<(), AckFailure> {
        let wait = async {
            loop {
                let notified = self.idle.notified();
                if self.state().in_flight == 0 {
                    return;
                }
                notified.await;
            }
        };
        match timeout {
            None => wait.await,
            Some(t) => {
                if tokio::time::timeout(t, wait).await.is_err() {
                    return Err(AckFailure::TimedOut {
                        waited: t,
                        in_flight: self.in_flight(),
                    });
                }
            }
        }
        let failures = std::mem::take(&mut self.state().failures);
        let count = failures.len();
        match failures.into_iter().next() {
            None => Ok(()),
            Some(first) => Err(AckFailure::Failed { count, first }),
        }
    }
}

impl DeliverySink for DeliveryWaiter {
    fn delivered(&self, token: u64, result: Result<Delivered<'_>, KafkaError>) {
        let result = result.map(|_| ());
        let (watcher, now_idle) = {
            let mut s = self.state();
            if let Err(e) = &result {
                s.failures.push(e.clone());
            }
            s.in_flight = s.in_flight.saturating_sub(1);
            (s.watchers.remove(&token), s.in_flight == 0)
        };
        if let Some(tx) = watcher {
            let _ = tx.send(result);
        }
        if now_idle {
            self.idle.notify_waiters();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::KafkaErrorKind;

    fn ok() -> Result<Delivered<'static>, KafkaError> {
        Ok(Delivered {
            topic: "t",
            partition: 0,
            offset: 0,
            timestamp: None,
        })
    }

    #[tokio::test]
    async fn idle_waits_for_every_record_and_reports_failures_once() {
        let acks = std::sync::Arc::new(DeliveryWaiter::default());
        for _ in 0..3 {
            acks.sending();
        }
        let waiter = {
            let acks = acks.clone();
            tokio::spawn(async move { acks.idle(None).await })
        };
        acks.delivered(0, ok());
        acks.delivered(1, Err(KafkaError::new(KafkaErrorKind::Fatal, "boom")));
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished(), "one record is still in flight");
        acks.delivered(2, ok());
        let failure = waiter.await.unwrap().unwrap_err();
        assert!(
            matches!(&failure, AckFailure::Failed { count: 1, first } if first.to_string().contains("boom")),
            "{failure}"
        );
        assert_eq!(acks.idle(None).await, Ok(()), "a failure is reported once");
    }

    #[tokio::test(start_paused = true)]
    async fn idle_times_out_with_what_is_still_in_flight() {
        let acks = DeliveryWaiter::default();
        acks.sending();
        acks.sending();
        acks.delivered(0, ok());
        let err = acks.idle(Some(Duration::from_secs(1))).await.unwrap_err();
        assert_eq!(
            err,
            AckFailure::TimedOut {
                waited: Duration::from_secs(1),
                in_flight: 1
            }
        );
        acks.not_sent(1);
        assert_eq!(acks.idle(Some(Duration::from_secs(1))).await, Ok(()));
    }

    #[tokio::test]
    async fn a_watcher_gets_its_own_record_outcome() {
        let acks = DeliveryWaiter::default();
        acks.sending();
        let first = acks.watch(7);
        acks.sending();
        let second = acks.watch(8);
        acks.delivered(8, Err(KafkaError::new(KafkaErrorKind::Fatal, "too large")));
        acks.delivered(7, ok());
        assert_eq!(first.await.unwrap(), Ok(()));
        assert!(second.await.unwrap().is_err());
        acks.sending();
        let dropped = acks.watch(9);
        acks.not_sent(9);
        assert!(dropped.await.is_err(), "a record never sent has no outcome");
    }
}
