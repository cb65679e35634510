//! The sink side: consume, convert, transform, put, pre-commit, commit.

pub mod commit;
mod reporter;
pub mod task;

pub use task::{SinkPlugins, SinkTaskSettings, WorkerSinkTask};
