//! Waiting for a condition under tokio time.

use std::time::Duration;

use connect_api::{ConnectError, Result};

/// Check `condition` every 5 ms of tokio time until it holds (`Ok`) or
/// `timeout` passes (a retriable error naming `what`). With paused tokio
/// time the wait costs no wall time while the runtime is idle.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap().block_on(async {
/// use std::time::Duration;
/// let start = tokio::time::Instant::now();
/// let err = connect_testkit::eventually("never", Duration::from_secs(30), || false).await.unwrap_err();
/// assert!(err.to_string().contains("never"));
/// assert!(start.elapsed() >= Duration::from_secs(30));
/// # });
/// ```
pub async fn eventually(
    what: &str,
    timeout: Duration,
    mut condition: impl FnMut() -> bool,
) -> Result<()> {
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if condition() {
            return Ok(());
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(ConnectError::retriable(format!(
                "timed out after {timeout:?} waiting for {what}"
            )));
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}
