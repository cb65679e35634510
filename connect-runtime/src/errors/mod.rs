//! One error pipeline for every stage of both record paths.
//!
//! Every stage (poll, transformation, key/value/header conversion, produce,
//! consume, put) runs through [`ErrorPipeline::execute`]: retriable errors are
//! retried with backoff (300 ms doubling, jittered, capped by
//! `errors.retry.delay.max.ms`) until `errors.retry.timeout`; then
//! `errors.tolerance` decides between failing the task and skipping the
//! record. Because all stages share this one operator, "covered by
//! `errors.tolerance`" holds by construction.

mod config;
pub mod dlq;
mod pipeline;
mod transform;

pub use config::{error_config_def, ErrorConfig, Tolerance};
pub use pipeline::{ErrorPipeline, ErrorStats, Failure, Stage};
pub(crate) use transform::Transformed;
