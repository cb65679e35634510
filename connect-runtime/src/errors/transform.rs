//! The transformation stage under the error pipeline, one transformation
//! at a time as Kafka's worker runs them: a retriable failure retries that
//! transformation alone, on a copy of its own input, and a failure names
//! the transformation's class (the DLQ's `__connect.errors.class.name`).

use connect_api::{ConnectRecord, Result, Verdict};
use connect_transforms::chain::TransformChain;

use super::{ErrorPipeline, Failure, Stage};
use crate::panics::catch_sync;

/// What the transformation stage made of a record.
#[derive(Debug)]
pub(crate) enum Transformed<R> {
    /// Transformed, to be converted and sent.
    Kept(R),
    /// Dropped by a transformation (a filter): done, nothing to send.
    Dropped,
    /// A failure the error tolerance lets through, with the record as it
    /// was before the chain when the caller asked to keep it.
    Failed(Option<R>, Failure),
}

impl ErrorPipeline {
    /// Run `record` through `chain`. Copies are made only when something
    /// needs them: the record as it entered the chain with `keep_original`
    /// (the source DLQ, an error log that includes records), and each transformation's input when
    /// `errors.retry.timeout` is set; the default path copies nothing.
    pub(crate) async fn transform<R: ConnectRecord + Clone>(
        &mut self,
        chain: &mut TransformChain<R>,
        record: R,
        keep_original: bool,
    ) -> Result<Transformed<R>> {
        let original = keep_original.then(|| record.clone());
        if self.config().retry_timeout_ms == 0 {
            // Nothing to retry: the synchronous path, with the kept original
            // put on a failure.
            return Ok(match self.transform_now(chain, record)? {
                Transformed::Failed(_, failure) => Transformed::Failed(original, failure),
                other => other,
            });
        }
        let mut record = record;
        for index in 0..chain.len() {
            let input = record.clone();
            let error = match apply_contained(chain, index, &mut record) {
                Ok(Verdict::Keep) => continue,
                Ok(Verdict::Drop) => return Ok(Transformed::Dropped),
                Err(e) => e,
            };
            let class = chain.stage_class(index).unwrap_or("transforms").to_string();
            let outcome = if error.is_retriable() {
                self.execute(Stage::Transformation, &class, || {
                    let mut retried = input.clone();
                    chain
                        .apply_stage(index, &mut retried)
                        .map(|verdict| (verdict, retried))
                })
                .await?
            } else {
                Err(self.tolerate(Stage::Transformation, &class, error, 1)?)
            };
            match outcome {
                Ok((Verdict::Keep, r)) => record = r,
                Ok((Verdict::Drop, _)) => return Ok(Transformed::Dropped),
                Err(failure) => return Ok(Transformed::Failed(original, failure)),
            }
        }
        Ok(Transformed::Kept(record))
    }

    /// [`transform`](Self::transform) when nothing needs a copy (no
    /// `errors.retry.timeout`, no kept original): nothing can wait, so the
    /// transformations run synchronously, on the record in place, and a
    /// failure goes straight to the tolerance.
    pub(crate) fn transform_now<R: ConnectRecord>(
        &mut self,
        chain: &mut TransformChain<R>,
        mut record: R,
    ) -> Result<Transformed<R>> {
        Ok(match self.transform_in_place(chain, &mut record)? {
            Transformed::Kept(()) => Transformed::Kept(record),
            Transformed::Dropped => Transformed::Dropped,
            Transformed::Failed(_, failure) => Transformed::Failed(None, failure),
        })
    }

    /// [`transform_now`](Self::transform_now) on a record where it lies (in
    /// the batch being built): the sink loop moved each record through the
    /// chain's callers four times, a tenth of its CPU in `memmove`.
    /// `Kept(())`: `record` holds the result; otherwise it is to be
    /// discarded.
    pub(crate) fn transform_in_place<R: ConnectRecord>(
        &mut self,
        chain: &mut TransformChain<R>,
        record: &mut R,
    ) -> Result<Transformed<()>> {
        for index in 0..chain.len() {
            match apply_contained(chain, index, record) {
                Ok(Verdict::Keep) => {}
                Ok(Verdict::Drop) => return Ok(Transformed::Dropped),
                Err(error) => {
                    let class = chain.stage_class(index).unwrap_or("transforms");
                    let failure = self.failed_once(Stage::Transformation, class, error)?;
                    return Ok(Transformed::Failed(None, failure));
                }
            }
        }
        Ok(Transformed::Kept(()))
    }
}

/// `chain.apply_stage`, with a panic in the transformation or its
/// predicate turned into an error naming the stage, so the tolerance
/// decides as for any other failure (Kafka handles any `Throwable` there).
/// Nothing is allocated unless it panics.
fn apply_contained<R: ConnectRecord>(
    chain: &mut TransformChain<R>,
    index: usize,
    record: &mut R,
) -> Result<Verdict> {
    match catch_sync(|| chain.apply_stage(index, record)) {
        Ok(applied) => applied,
        Err(panic) => Err(panic.into_error(format_args!(
            "transform '{}' ({}) or its predicate",
            chain.aliases().nth(index).unwrap_or("?"),
            chain.stage_class(index).unwrap_or("?")
        ))),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::sync::Arc;

    use connect_api::config::ConfigMap;
    use connect_api::transform::{Configurable, Transformation, Verdict};
    use connect_api::{ConfigDef, ConnectError, Record, SinkRecord, Value};

    use super::*;
    use crate::errors::{ErrorConfig, Tolerance};

    /// Counts its calls; fails with `error` while `failures` is above 0.
    struct Step {
        calls: Arc<AtomicU32>,
        failures: u32,
        error: fn() -> ConnectError,
    }

    impl Configurable for Step {
        fn configure(&mut self, _: &ConfigMap) -> Result<()> {
            Ok(())
        }

        fn config_def(&self) -> ConfigDef {
            ConfigDef::new()
        }
    }

    impl Transformation<SinkRecord> for Step {
        fn transform(&mut self, record: &mut SinkRecord) -> Result<Verdict> {
            self.calls.fetch_add(1, Ordering::SeqCst);
            if self.failures > 0 {
                self.failures -= 1;
                return Err((self.error)());
            }
            if let Value::Int32(n) = &mut record.record.value {
                *n += 1;
            }
            Ok(Verdict::Keep)
        }
    }

    fn chain(
        second_failures: u32,
        error: fn() -> ConnectError,
    ) -> (TransformChain<SinkRecord>, [Arc<AtomicU32>; 2]) {
        let calls = [Arc::new(AtomicU32::new(0)), Arc::new(AtomicU32::new(0))];
        let mut chain = TransformChain::empty();
        chain.push(
            "first",
            "com.example.First",
            Box::new(Step {
                calls: calls[0].clone(),
                failures: 0,
                error,
            }),
        );
        chain.push(
            "second",
            "com.example.Second",
            Box::new(Step {
                calls: calls[1].clone(),
                failures: second_failures,
                error,
            }),
        );
        (chain, calls)
    }

    fn record() -> SinkRecord {
        SinkRecord::new(Record::new("t", None, Value::Int32(0)), 0, 7)
    }

    #[tokio::test(start_paused = true)]
    async fn a_retriable_failure_retries_only_the_failing_transformation() {
        let (mut chain, calls) = chain(2, || ConnectError::retriable("busy"));
        let mut pipeline = ErrorPipeline::new(ErrorConfig {
            retry_timeout_ms: 60_000,
            ..ErrorConfig::default()
        });
        let out = pipeline
            .transform(&mut chain, record(), false)
            .await
            .unwrap();
        let Transformed::Kept(r) = out else {
            panic!("expected the record to pass, got {out:?}");
        };
        // Both transformations applied exactly once to the value.
        assert_eq!(r.record.value, Value::Int32(2));
        assert_eq!(calls[0].load(Ordering::SeqCst), 1, "the first ran once");
        assert!(
            calls[1].load(Ordering::SeqCst) >= 3,
            "the second was retried"
        );
        assert!(pipeline.stats().total_retries >= 1);
    }

    #[tokio::test(start_paused = true)]
    async fn a_tolerated_failure_names_the_transformation_class() {
        let (mut chain, _) = chain(1, || ConnectError::data("bad field"));
        let mut pipeline = ErrorPipeline::new(ErrorConfig {
            tolerance: Tolerance::All,
            ..ErrorConfig::default()
        });
        let out = pipeline
            .transform(&mut chain, record(), true)
            .await
            .unwrap();
        let Transformed::Failed(Some(original), failure) = out else {
            panic!("expected a tolerated failure, got {out:?}");
        };
        assert_eq!(failure.executing, "com.example.Second");
        assert_eq!(failure.stage, Stage::Transformation);
        // The kept original is the record as it entered the chain.
        assert_eq!(original.record.value, Value::Int32(0));
    }

    #[tokio::test(start_paused = true)]
    async fn without_tolerance_a_failure_stops_the_task_naming_the_alias() {
        let (mut chain, _) = chain(1, || ConnectError::data("bad field"));
        let mut pipeline = ErrorPipeline::new(ErrorConfig::default());
        let err = pipeline
            .transform(&mut chain, record(), false)
            .await
            .unwrap_err();
        let text = format!("{err}");
        assert!(text.contains("'second'"), "{text}");
        assert!(text.contains("com.example.Second"), "{text}");
        assert!(text.contains("bad field"), "{text}");
    }
}
