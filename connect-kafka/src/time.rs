//! Time helpers every layer above the port shares: the wall clock in
//! Kafka's timestamp unit and exponential backoff for retries.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Wall-clock milliseconds since the epoch, the unit of Kafka record
/// timestamps and of the status and config topics' times. A clock before
/// 1970 reads 0.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// Exponential backoff: `base`, doubling per attempt, capped at `max`.
/// Stateless (the caller counts attempts), so one value serves many
/// retrying operations.
///
/// ```
/// use std::time::Duration;
/// use connect_kafka::time::Backoff;
///
/// let b = Backoff::new(Duration::from_millis(300), Duration::from_secs(1));
/// assert_eq!(b.delay(0), Duration::from_millis(300));
/// assert_eq!(b.delay(1), Duration::from_millis(600));
/// assert_eq!(b.delay(2), Duration::from_secs(1));
/// let j = b.jittered(1);
/// assert!(j >= Duration::from_millis(480) && j < Duration::from_millis(720));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Backoff {
    base: Duration,
    max: Duration,
}

impl Backoff {
    /// Delays from `base` up to `max` (a `max` below `base` is `base`).
    pub fn new(base: Duration, max: Duration) -> Backoff {
        Backoff {
            base,
            max: max.max(base),
        }
    }

    /// The delay before retry `attempt` (0 for the first retry):
    /// `base * 2^attempt`, at most `max`.
    pub fn delay(&self, attempt: u32) -> Duration {
        self.base
            .saturating_mul(2u32.saturating_pow(attempt.min(31)))
            .min(self.max)
    }

    /// [`delay`](Self::delay) times a random factor in `[0.8, 1.2)`, Kafka's
    /// `ExponentialBackoff` jitter of 0.2, so retrying clients spread out.
    pub fn jittered(&self, attempt: u32) -> Duration {
        self.delay(attempt).mul_f64(0.8 + fastrand::f64() * 0.4)
    }
}

/// A random number in `0..n` (0 when `n` is 0): jitter and spreading, not
/// security.
pub fn random_below(n: u64) -> u64 {
    if n == 0 {
        0
    } else {
        fastrand::u64(..n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_double_and_stop_at_the_cap() {
        let b = Backoff::new(Duration::from_millis(100), Duration::from_millis(1000));
        let ms: Vec<u128> = (0..6).map(|a| b.delay(a).as_millis()).collect();
        assert_eq!(ms, [100, 200, 400, 800, 1000, 1000]);
        assert_eq!(b.delay(u32::MAX), Duration::from_millis(1000));
        for a in 0..10 {
            let j = b.jittered(a);
            assert!(
                j >= b.delay(a).mul_f64(0.8) && j < b.delay(a).mul_f64(1.2),
                "{j:?}"
            );
        }
        assert!(random_below(3) < 3);
        assert_eq!(random_below(0), 0);
    }
}
