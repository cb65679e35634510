//! The retry-with-tolerance operator shared by every stage.

use std::fmt;
use std::time::Duration;

use connect_api::{ConnectError, Result};
use tokio::time::Instant;

use super::config::{ErrorConfig, Tolerance};
use crate::kafka::time::{random_below, Backoff};
use crate::panics::catch_sync;

/// First backoff between retries, as Kafka's `RETRIES_DELAY_MIN_MS`.
const RETRY_DELAY_MIN: Duration = Duration::from_millis(300);

/// Where in the record path a failure happened; the names are Kafka's
/// (`__connect.errors.stage` header values).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Stage {
    /// `SourceTask::poll`.
    TaskPoll,
    /// `SinkTask::put`.
    TaskPut,
    /// A transformation of the chain.
    Transformation,
    /// The key converter.
    KeyConverter,
    /// The value converter.
    ValueConverter,
    /// The header converter.
    HeaderConverter,
    /// Producing to Kafka.
    KafkaProduce,
    /// Consuming from Kafka.
    KafkaConsume,
}

impl Stage {
    /// Kafka's name (`VALUE_CONVERTER`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Stage::TaskPoll => "TASK_POLL",
            Stage::TaskPut => "TASK_PUT",
            Stage::Transformation => "TRANSFORMATION",
            Stage::KeyConverter => "KEY_CONVERTER",
            Stage::ValueConverter => "VALUE_CONVERTER",
            Stage::HeaderConverter => "HEADER_CONVERTER",
            Stage::KafkaProduce => "KAFKA_PRODUCE",
            Stage::KafkaConsume => "KAFKA_CONSUME",
        }
    }
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A failure that `errors.tolerance=all` let through: the record is skipped
/// and handed to the reporters (log, DLQ) with this context.
#[derive(Debug)]
pub struct Failure {
    /// The stage that failed.
    pub stage: Stage,
    /// What ran in that stage (transform alias and class, converter class...).
    pub executing: String,
    /// The last error.
    pub error: ConnectError,
    /// How many attempts were made.
    pub attempts: u32,
}

/// Counters as Kafka's `task-error-metrics`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ErrorStats {
    /// Operations that failed at least once (`total-record-errors`).
    pub total_record_errors: u64,
    /// Failed attempts, retries included (`total-record-failures`).
    pub total_record_failures: u64,
    /// Records skipped under `errors.tolerance=all` (`total-records-skipped`).
    pub total_records_skipped: u64,
    /// Retries (`total-retries`).
    pub total_retries: u64,
    /// Errors written to the log (`total-errors-logged`).
    pub total_errors_logged: u64,
    /// Records sent to the DLQ (`deadletterqueue-produce-requests`).
    pub dlq_produce_requests: u64,
    /// DLQ sends that failed (`deadletterqueue-produce-failures`).
    pub dlq_produce_failures: u64,
}

impl ErrorStats {
    /// Both counts added, for a task whose errors two pipelines see (a sink
    /// task's own stages and its errant-record reporter).
    pub fn plus(self, other: ErrorStats) -> ErrorStats {
        ErrorStats {
            total_record_errors: self.total_record_errors + other.total_record_errors,
            total_record_failures: self.total_record_failures + other.total_record_failures,
            total_records_skipped: self.total_records_skipped + other.total_records_skipped,
            total_retries: self.total_retries + other.total_retries,
            total_errors_logged: self.total_errors_logged + other.total_errors_logged,
            dlq_produce_requests: self.dlq_produce_requests + other.dlq_produce_requests,
            dlq_produce_failures: self.dlq_produce_failures + other.dlq_produce_failures,
        }
    }
}

/// Runs stages with Kafka's retry and tolerance policy.
///
/// ```
/// # tokio_test_block_on(async {
/// use connect_runtime::errors::{ErrorConfig, ErrorPipeline, Stage, Tolerance};
/// use connect_api::ConnectError;
///
/// let mut pipeline = ErrorPipeline::new(ErrorConfig { tolerance: Tolerance::All, ..Default::default() });
/// let ok = pipeline.execute(Stage::ValueConverter, "JsonConverter", || Ok(1)).await.unwrap();
/// assert_eq!(ok.unwrap(), 1);
/// let skipped = pipeline
///     .execute(Stage::ValueConverter, "JsonConverter", || Err::<i32, _>(ConnectError::data("bad json")))
///     .await
///     .unwrap();
/// assert!(skipped.is_err()); // tolerated: the caller skips the record and reports it
/// assert_eq!(pipeline.stats().total_records_skipped, 1);
/// # });
/// # fn tokio_test_block_on<F: std::future::Future>(f: F) -> F::Output {
/// #     tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(f)
/// # }
/// ```
#[derive(Debug)]
pub struct ErrorPipeline {
    config: ErrorConfig,
    stats: ErrorStats,
}

impl ErrorPipeline {
    /// A pipeline with the connector's `errors.*` settings.
    pub fn new(config: ErrorConfig) -> Self {
        ErrorPipeline {
            config,
            stats: ErrorStats::default(),
        }
    }

    /// The settings.
    pub fn config(&self) -> &ErrorConfig {
        &self.config
    }

    /// The counters so far.
    pub fn stats(&self) -> ErrorStats {
        self.stats
    }

    /// Count one DLQ send (and whether it failed).
    pub fn record_dlq_send(&mut self, failed: bool) {
        self.stats.dlq_produce_requests += 1;
        if failed {
            self.stats.dlq_produce_failures += 1;
        }
    }

    /// Count one error written to the log.
    pub fn record_logged(&mut self) {
        self.stats.total_errors_logged += 1;
    }

    /// Run `op` for `stage`.
    ///
    /// - `Ok(Ok(v))`: it succeeded (maybe after retries).
    /// - `Ok(Err(failure))`: it failed and `errors.tolerance=all` skips the
    ///   record; the caller reports `failure` and moves on.
    /// - `Err(e)`: the task must fail (`errors.tolerance=none`, or a
    ///   non-retriable error in a stage that cannot skip a record).
    ///
    /// Retriable errors are retried with backoff until `errors.retry.timeout`
    /// runs out; they are never tolerated on the first attempt. A panic in
    /// `op` is a non-retriable error naming `executing`, its message and
    /// place: `op` is plugin code, and Kafka's operator handles anything it
    /// throws.
    pub async fn execute<T>(
        &mut self,
        stage: Stage,
        executing: &str,
        mut op: impl FnMut() -> Result<T>,
    ) -> Result<std::result::Result<T, Failure>> {
        // Fast path: one attempt, no clock read, no allocation.
        let first = match run_contained(executing, &mut op) {
            Ok(v) => return Ok(Ok(v)),
            Err(e) => e,
        };
        self.stats.total_record_errors += 1;
        self.stats.total_record_failures += 1;
        let mut error = first;
        let mut attempts = 1u32;
        if error.is_retriable() && self.config.retry_timeout_ms != 0 {
            let deadline = (self.config.retry_timeout_ms > 0).then(|| {
                Instant::now() + Duration::from_millis(self.config.retry_timeout_ms as u64)
            });
            loop {
                let now = Instant::now();
                if deadline.is_some_and(|d| now >= d) {
                    break;
                }
                let mut delay = self.backoff(attempts);
                if let Some(d) = deadline {
                    delay = delay.min(d - now);
                }
                tokio::time::sleep(delay).await;
                attempts += 1;
                self.stats.total_retries += 1;
                match run_contained(executing, &mut op) {
                    Ok(v) => return Ok(Ok(v)),
                    Err(e) => {
                        self.stats.total_record_failures += 1;
                        error = e;
                        if !error.is_retriable() {
                            break;
                        }
                    }
                }
            }
        }
        self.tolerate(stage, executing, error, attempts).map(Err)
    }

    /// A stage failed once where no retry is possible (the synchronous fast
    /// path): count it as `execute` would, then apply the tolerance.
    pub(crate) fn failed_once(
        &mut self,
        stage: Stage,
        executing: &str,
        error: ConnectError,
    ) -> Result<Failure> {
        self.stats.total_record_errors += 1;
        self.stats.total_record_failures += 1;
        self.tolerate(stage, executing, error, 1)
    }

    /// Apply the tolerance policy to a failure, also one that happened
    /// outside [`execute`](Self::execute) (an asynchronous produce failure, a
    /// `put` error reported through the errant-record reporter): `Ok` means
    /// skip the record and report the failure, `Err` means fail the task.
    pub fn tolerate(
        &mut self,
        stage: Stage,
        executing: &str,
        error: ConnectError,
        attempts: u32,
    ) -> Result<Failure> {
        match self.config.tolerance {
            Tolerance::All => {
                self.stats.total_records_skipped += 1;
                Ok(Failure {
                    stage,
                    executing: executing.to_string(),
                    error,
                    attempts,
                })
            }
            Tolerance::None => Err(ConnectError::other(format!(
                "Tolerance exceeded in error handler: {stage} failed in {executing} after {attempts} attempt(s): {error}"
            ))
            .with_source(error)),
        }
    }

    /// Kafka's backoff: 300 ms doubling per attempt; once past the cap, a
    /// random delay below the cap so retrying tasks do not move in lockstep.
    fn backoff(&self, attempt: u32) -> Duration {
        let max = self.config.retry_delay_max_ms.max(1);
        let exp = Backoff::new(RETRY_DELAY_MIN, Duration::MAX).delay(attempt.saturating_sub(1));
        if exp > Duration::from_millis(max) {
            Duration::from_millis(random_below(max))
        } else {
            exp
        }
    }
}

/// Run `op` (plugin code: a converter, a transformation), a panic becoming
/// an error that names `executing`: not retriable, so the tolerance decides
/// at once, as Kafka's operator does for any `Throwable` of those stages.
fn run_contained<T>(executing: &str, op: &mut impl FnMut() -> Result<T>) -> Result<T> {
    catch_sync(op).unwrap_or_else(|panic| Err(panic.into_error(executing)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    fn pipeline(tolerance: Tolerance, retry_timeout_ms: i64) -> ErrorPipeline {
        ErrorPipeline::new(ErrorConfig {
            tolerance,
            retry_timeout_ms,
            retry_delay_max_ms: 1000,
            ..Default::default()
        })
    }

    #[tokio::test(start_paused = true)]
    async fn retriable_errors_are_retried_until_success() {
        let mut p = pipeline(Tolerance::None, 10_000);
        let calls = Cell::new(0);
        let start = Instant::now();
        let out = p
            .execute(Stage::KafkaProduce, "producer", || {
                calls.set(calls.get() + 1);
                if calls.get() < 4 {
                    Err(ConnectError::retriable("not enough replicas"))
                } else {
                    Ok(7)
                }
            })
            .await
            .unwrap()
            .unwrap();
        assert_eq!(out, 7);
        assert_eq!(calls.get(), 4);
        // 300 + 600 + 1000 max (jittered below the 1000 cap on the third).
        let waited = start.elapsed();
        assert!(waited >= Duration::from_millis(900), "{waited:?}");
        assert!(waited < Duration::from_millis(1900), "{waited:?}");
        assert_eq!(p.stats().total_retries, 3);
    }

    #[tokio::test(start_paused = true)]
    async fn retries_stop_at_the_timeout_then_tolerance_decides() {
        let mut p = pipeline(Tolerance::All, 2_000);
        let start = Instant::now();
        let failure = p
            .execute(Stage::Transformation, "mask", || {
                Err::<(), _>(ConnectError::retriable("later"))
            })
            .await
            .unwrap()
            .unwrap_err();
        assert!(start.elapsed() >= Duration::from_millis(2000));
        assert!(start.elapsed() < Duration::from_millis(2100));
        assert!(failure.attempts > 1, "never tolerated on the first attempt");
        assert_eq!(failure.stage, Stage::Transformation);
    }

    #[tokio::test(start_paused = true)]
    async fn non_retriable_fails_fast_under_none() {
        let mut p = pipeline(Tolerance::None, -1);
        let calls = Cell::new(0);
        let err = p
            .execute(Stage::ValueConverter, "JsonConverter", || {
                calls.set(calls.get() + 1);
                Err::<(), _>(ConnectError::data("not json"))
            })
            .await
            .unwrap_err();
        assert_eq!(calls.get(), 1);
        let msg = err.to_string();
        assert!(msg.contains("Tolerance exceeded in error handler"), "{msg}");
        assert!(
            msg.contains("VALUE_CONVERTER") && msg.contains("not json"),
            "{msg}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn zero_timeout_means_no_retry() {
        let mut p = pipeline(Tolerance::All, 0);
        let calls = Cell::new(0);
        let f = p
            .execute(Stage::KafkaProduce, "producer", || {
                calls.set(calls.get() + 1);
                Err::<(), _>(ConnectError::retriable("x"))
            })
            .await
            .unwrap()
            .unwrap_err();
        assert_eq!((calls.get(), f.attempts), (1, 1));
    }

    #[test]
    fn backoff_doubles_then_jitters_below_cap() {
        let p = pipeline(Tolerance::None, -1);
        assert_eq!(p.backoff(1), Duration::from_millis(300));
        assert_eq!(p.backoff(2), Duration::from_millis(600));
        for _ in 0..100 {
            assert!(p.backoff(3) < Duration::from_millis(1000));
        }
        // No overflow for huge attempt counts.
        assert!(p.backoff(u32::MAX) < Duration::from_millis(1000));
    }
}
