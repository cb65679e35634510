//! The worker commands, `connect-standalone` and `connect-distributed`, as
//! Kafka's `connect-standalone.sh` and `connect-distributed.sh`, and what
//! they share: [`standalone::run_standalone`] and
//! [`distributed::run_distributed`] (the commands as library functions),
//! the exit codes and stop signal ([`cli`]), logging set up from
//! `RUST_LOG` with a live filter the REST API's logger levels drive, the
//! allocator tuning, and the FileStream connectors registered.
//!
//! The binaries are `src/main.rs` and `src/bin/connect-distributed.rs`; to
//! build a worker with your own connectors, copy one and add your
//! `register_source` / `register_sink` / `register_transform` calls.
//!
//! The runner and the herders these commands drive live in
//! `connect-runtime` (standalone) and `connect-distributed`; this crate
//! holds only what turns them into a process.

pub mod cli;
pub mod distributed;
pub mod standalone;

use std::io::IsTerminal;
use std::sync::Arc;

use connect_file::{FileStreamSinkConnector, FileStreamSourceConnector, SINK_NAMES, SOURCE_NAMES};
use connect_runtime::rest::Loggers;
use connect_runtime::worker::Plugins;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{reload, EnvFilter};

/// mimalloc commits its arenas eagerly on Linux by default; with
/// `MIMALLOC_ARENA_EAGER_COMMIT=0` the worker's peak memory under load is
/// about 25 MB lower at the same CPU (BENCHMARKS.md, head-to-head). mimalloc
/// reads its options from the environment as the process starts, before
/// `main`, so the worker sets the variable and executes itself again, once
/// (same pid, same arguments). Setting the variable yourself skips this.
pub fn tune_allocator() {
    use std::os::unix::process::CommandExt;
    const KEY: &str = "MIMALLOC_ARENA_EAGER_COMMIT";
    if std::env::var_os(KEY).is_some() {
        return;
    }
    let Ok(exe) = std::env::current_exe() else {
        return;
    };
    let mut args = std::env::args_os();
    let mut command = std::process::Command::new(exe);
    if let Some(arg0) = args.next() {
        command.arg0(arg0);
    }
    let error = command.args(args).env(KEY, "0").exec();
    // Only reached when exec failed: run on with the allocator's defaults.
    eprintln!("connect worker: cannot restart with {KEY}=0 ({error}); running on with mimalloc's defaults");
}

/// Logs to stderr: `RUST_LOG` sets the initial filter (default `info`),
/// `CONNECT_LOG_FORMAT=json` writes one JSON object per line, and the
/// returned [`Loggers`] let `PUT /admin/loggers/{target}` change the filter
/// while the worker runs.
pub fn init_logging() -> Loggers {
    let initial = std::env::var("RUST_LOG").unwrap_or_else(|_| "info".to_string());
    let filter = EnvFilter::try_new(&initial).unwrap_or_else(|_| EnvFilter::new("info"));
    let (filter, handle) = reload::Layer::new(filter);
    let lines = tracing_subscriber::fmt::layer().with_writer(std::io::stderr);
    // CONNECT_LOG_FORMAT=json: one JSON object per line, for log shippers;
    // a task's lines carry its span (connector and task) as fields.
    let json = std::env::var("CONNECT_LOG_FORMAT").is_ok_and(|f| f.eq_ignore_ascii_case("json"));
    if json {
        tracing_subscriber::registry()
            .with(filter)
            .with(lines.json().with_current_span(true).with_span_list(false))
            .init();
    } else {
        tracing_subscriber::registry()
            .with(filter)
            .with(lines.with_ansi(std::io::stderr().is_terminal()))
            .init();
    }
    // The REST API's logger levels drive the live filter.
    Loggers::with_setter(
        "INFO",
        Arc::new(move |directive: &str| {
            let filter = EnvFilter::try_new(directive).map_err(|e| e.to_string())?;
            handle.reload(filter).map_err(|e| e.to_string())
        }),
    )
}

/// The built-in plugins plus the connectors this workspace ships: the
/// FileStream pair (`connect-file`, under Kafka's class names and aliases)
/// the JDBC pair (`connect-jdbc`, under Confluent's) and the PostgreSQL
/// CDC source (`connect-postgres`, under Debezium's).
pub fn bundled_plugins() -> Plugins {
    let mut plugins = Plugins::with_builtins();
    let (source_class, source_aliases) = SOURCE_NAMES.split_first().expect("three names");
    plugins.register_source(source_class, source_aliases, || {
        Box::new(FileStreamSourceConnector::default())
    });
    let (sink_class, sink_aliases) = SINK_NAMES.split_first().expect("three names");
    plugins.register_sink(sink_class, sink_aliases, || {
        Box::new(FileStreamSinkConnector::default())
    });
    let (class, aliases) = connect_jdbc::SOURCE_NAMES
        .split_first()
        .expect("three names");
    plugins.register_source(class, aliases, || {
        Box::new(connect_jdbc::JdbcSourceConnector::default())
    });
    let (class, aliases) = connect_jdbc::SINK_NAMES.split_first().expect("three names");
    plugins.register_sink(class, aliases, || {
        Box::new(connect_jdbc::JdbcSinkConnector::default())
    });
    let (class, aliases) = connect_postgres::NAMES.split_first().expect("three names");
    plugins.register_source(class, aliases, || {
        Box::new(connect_postgres::PostgresConnector::default())
    });
    plugins
}
