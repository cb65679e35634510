//! The source side: poll, transform, convert, produce, track, commit.

pub mod submitted;
pub mod task;

pub use task::{
    OffsetsInvalidPolicy, SourcePlugins, SourceTaskSettings, TransactionBoundary,
    TransactionSettings, WorkerSourceTask, ZombieFencing,
};
