//! Dropping a librdkafka client where its wait cannot stall the runtime.

use std::ops::Deref;
use std::sync::Arc;

/// A shared librdkafka client whose last drop runs on tokio's blocking
/// pool. `rd_kafka_destroy` waits for the client's threads to end, and a
/// consumer in a group first leaves it (LeaveGroup, up to the client's
/// timeouts: 5 s were seen when the broker was slow). On an async worker
/// thread that wait starved everything else scheduled there, the group
/// member's heartbeats included (the member was fenced in the rebalance
/// benchmark while a sink task's consumer closed).
pub(crate) struct DropOffThread<T: Send + Sync + 'static>(Option<Arc<T>>);

impl<T: Send + Sync + 'static> DropOffThread<T> {
    pub(crate) fn new(client: T) -> Self {
        DropOffThread(Some(Arc::new(client)))
    }
}

impl<T: Send + Sync + 'static> Deref for DropOffThread<T> {
    type Target = Arc<T>;

    fn deref(&self) -> &Arc<T> {
        // `Some` from `new` until `drop` takes it.
        self.0.as_ref().expect("a client is present until dropped")
    }
}

impl<T: Send + Sync + 'static> Drop for DropOffThread<T> {
    fn drop(&mut self) {
        let Some(client) = self.0.take() else {
            return;
        };
        // Outside a runtime (a plain thread, a test) the caller may block.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn_blocking(move || drop(client));
        }
    }
}
