//! A worker's view of the config topic that can fall behind: while
//! frozen, the worker sees the state it had when the freeze began, and
//! reading to the end (or reading back its own write) waits until the
//! freeze ends, as a consumer whose partition leader is moving does.

use std::sync::{Arc, Mutex};

use connect_distributed::herder::ConfigTopic;
use connect_distributed::stores::RestartRequest;
use connect_distributed::topics::config::ConfigRecord;
use connect_distributed::topics::config_state::ConfigState;
use tokio::sync::{broadcast, watch};

/// A [`ConfigTopic`] that lags on demand.
pub(crate) struct LaggingConfigs {
    inner: Arc<dyn ConfigTopic>,
    frozen: Mutex<Option<ConfigState>>,
    /// `true` while frozen.
    lagging: watch::Sender<bool>,
    /// What the worker is told of changes: the topic's, except while
    /// frozen, and once more when it thaws (a reader that resumes applies
    /// what it missed and says so).
    changes: watch::Sender<i64>,
}

impl LaggingConfigs {
    /// `inner`, not lagging yet.
    pub(crate) fn wrap(inner: Arc<dyn ConfigTopic>) -> Arc<LaggingConfigs> {
        let mut upstream = inner.changes();
        let wrapped = Arc::new(LaggingConfigs {
            changes: watch::channel(*upstream.borrow()).0,
            inner,
            frozen: Mutex::new(None),
            lagging: watch::channel(false).0,
        });
        let weak = Arc::downgrade(&wrapped);
        tokio::spawn(async move {
            while upstream.changed().await.is_ok() {
                let Some(w) = weak.upgrade() else { return };
                if !*w.lagging.borrow() {
                    w.changes.send_replace(*upstream.borrow());
                }
            }
        });
        wrapped
    }

    /// Stops following the topic.
    pub(crate) fn freeze(&self) {
        let mut frozen = self.frozen.lock().unwrap_or_else(|p| p.into_inner());
        if frozen.is_none() {
            *frozen = Some(self.inner.state());
        }
        self.lagging.send_replace(true);
    }

    /// Catches up.
    pub(crate) fn thaw(&self) {
        *self.frozen.lock().unwrap_or_else(|p| p.into_inner()) = None;
        self.lagging.send_replace(false);
        let now = *self.inner.changes().borrow();
        self.changes.send_modify(|v| *v = now);
    }

    /// Whether the worker is cut off from the config topic now.
    pub(crate) fn is_lagging(&self) -> bool {
        *self.lagging.borrow()
    }

    async fn caught_up(&self) {
        let mut lagging = self.lagging.subscribe();
        // The sender lives as long as `self`.
        let _ = lagging.wait_for(|lagging| !*lagging).await;
    }
}

#[async_trait::async_trait]
impl ConfigTopic for LaggingConfigs {
    fn state(&self) -> ConfigState {
        let frozen = self.frozen.lock().unwrap_or_else(|p| p.into_inner());
        frozen.clone().unwrap_or_else(|| self.inner.state())
    }
    fn changes(&self) -> watch::Receiver<i64> {
        self.changes.subscribe()
    }
    fn restart_requests(&self) -> broadcast::Receiver<RestartRequest> {
        self.inner.restart_requests()
    }
    async fn read_to_end(&self) -> connect_api::Result<()> {
        self.caught_up().await;
        self.inner.read_to_end().await
    }
    async fn write(&self, records: Vec<ConfigRecord>) -> connect_api::Result<()> {
        self.inner.write(records).await?;
        self.caught_up().await;
        Ok(())
    }
}
