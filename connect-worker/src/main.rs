//! `connect-standalone`: Kafka Connect's standalone worker with the
//! FileStream (`connect-file`), JDBC (`connect-jdbc`) and PostgreSQL CDC (`connect-postgres`) connectors compiled in.
//!
//! ```text
//! connect-standalone config/connect-standalone.properties \
//!     config/connect-file-source.properties config/connect-file-sink.properties
//! ```
//!
//! Rust has no plugin class loading, so a worker is a small program that
//! registers its plugins and hands over to
//! [`run_standalone`]. To build
//! a worker with your own connectors, copy this file and add your
//! `register_source` / `register_sink` / `register_transform` calls.
//!
//! Logs go to stderr; `RUST_LOG` sets the initial filter (default `info`),
//! and `PUT /admin/loggers/{target}` changes it while running.

use connect_worker::standalone::run_standalone;
use connect_worker::{bundled_plugins, init_logging, tune_allocator};

/// mimalloc rather than the system allocator: with glibc's, the producer's
/// delivery thread freeing librdkafka's buffers contends with the task
/// thread's allocations on one arena lock (BENCHMARKS.md, source pipeline).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    tune_allocator();
    let loggers = init_logging();
    let args: Vec<String> = std::env::args().skip(1).collect();
    std::process::exit(run_standalone(args, bundled_plugins(), loggers));
}
