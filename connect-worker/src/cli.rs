//! What both worker commands share: their exit codes, how a failure is
//! reported, the tokio runtime they run on and the stop signal they wait
//! for.

/// Exit code: stopped cleanly.
pub const EXIT_OK: i32 = 0;
/// Exit code: a runtime failure (Kafka, REST port, a connector that cannot be created).
pub const EXIT_FAILURE: i32 = 1;
/// Exit code: bad arguments or configuration.
pub const EXIT_USAGE: i32 = 2;

/// Why a worker command could not run: a message and the exit code.
#[derive(Debug)]
pub struct CommandFailure {
    /// [`EXIT_USAGE`] or [`EXIT_FAILURE`].
    pub code: i32,
    /// What went wrong, naming the file and key when it is the config.
    pub message: String,
}

/// Bad arguments or configuration ([`EXIT_USAGE`]).
pub fn usage(message: impl Into<String>) -> CommandFailure {
    CommandFailure {
        code: EXIT_USAGE,
        message: message.into(),
    }
}

/// A runtime failure ([`EXIT_FAILURE`]).
pub fn failure(message: impl Into<String>) -> CommandFailure {
    CommandFailure {
        code: EXIT_FAILURE,
        message: message.into(),
    }
}

/// Run a worker command's `main` on a new multi-threaded tokio runtime and
/// turn its outcome into an exit code, logging the failure.
pub fn run_command(
    main: impl std::future::Future<Output = std::result::Result<(), CommandFailure>>,
) -> i32 {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            tracing::error!("cannot start the tokio runtime: {e}");
            return EXIT_FAILURE;
        }
    };
    match runtime.block_on(main) {
        Ok(()) => EXIT_OK,
        Err(f) => {
            tracing::error!("{}", f.message);
            f.code
        }
    }
}

/// Resolves on SIGINT (Ctrl-C) or SIGTERM: how a worker command waits
/// for its stop signal.
pub async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
