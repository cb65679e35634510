//! `connect-distributed`: a worker of a distributed Kafka Connect cluster
//! (Kafka's `connect-distributed.sh`) with the FileStream connectors
//! compiled in.
//!
//! ```text
//! connect-distributed config/connect-distributed.properties
//! ```
//!
//! Workers started with the same `group.id` and internal topics form one
//! cluster, Java workers of Kafka Connect 4.4 included; connectors are
//! created through any worker's REST API. See
//! `connect_worker::distributed` for what the command does.

use connect_worker::distributed::run_distributed;
use connect_worker::{bundled_plugins, init_logging, tune_allocator};

/// mimalloc, as the standalone worker (BENCHMARKS.md, source pipeline).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    tune_allocator();
    let loggers = init_logging();
    let args: Vec<String> = std::env::args().skip(1).collect();
    std::process::exit(run_distributed(args, bundled_plugins(), loggers));
}
