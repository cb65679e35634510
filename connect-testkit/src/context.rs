//! A [`ConnectorContext`] for tests of a connector on its own: it keeps
//! what the connector asked of the worker.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use connect_api::connector::ConnectorContext;
use connect_api::ConnectError;

/// A connector context that records task reconfiguration requests and
/// raised errors, to pass to `Connector::start` in a test.
///
/// ```
/// use std::sync::Arc;
/// use connect_api::connector::ConnectorContext;
/// use connect_api::ConnectError;
/// use connect_testkit::FakeConnectorContext;
///
/// let ctx = Arc::new(FakeConnectorContext::default());
/// let given: Arc<dyn ConnectorContext> = ctx.clone();
/// given.request_task_reconfiguration();
/// given.raise_error(ConnectError::other("the source is gone"));
/// assert_eq!(ctx.reconfigurations(), 1);
/// assert_eq!(ctx.errors(), vec!["the source is gone".to_string()]);
/// ```
#[derive(Debug, Default)]
pub struct FakeConnectorContext {
    reconfigurations: AtomicUsize,
    errors: Mutex<Vec<String>>,
}

impl FakeConnectorContext {
    /// How many times the connector asked for new task configs.
    pub fn reconfigurations(&self) -> usize {
        self.reconfigurations.load(Ordering::SeqCst)
    }

    /// The errors the connector raised, as text, in order.
    pub fn errors(&self) -> Vec<String> {
        self.errors
            .lock()
            .map(|e| e.clone())
            .unwrap_or_else(|p| p.into_inner().clone())
    }
}

impl ConnectorContext for FakeConnectorContext {
    fn request_task_reconfiguration(&self) {
        self.reconfigurations.fetch_add(1, Ordering::SeqCst);
    }
    fn raise_error(&self, error: ConnectError) {
        let mut errors = self.errors.lock().unwrap_or_else(|p| p.into_inner());
        errors.push(error.to_string());
    }
}
