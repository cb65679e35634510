//! The replication stream: a reader task decodes pgoutput into a bounded
//! queue (the poll drains it; a full queue stops the reading, so memory is
//! bounded), and a status task tells the server how far the slot may move,
//! often enough that the server never times the connection out, however
//! slowly the queue drains.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use connect_api::{ConnectError, Result};
use pg_walstream::{LogicalReplicationMessage, LogicalReplicationParser};
use tokio::sync::{mpsc, Notify};
use tokio::task::JoinHandle;

use crate::wire::{format_lsn, parse_wal, Connection, WalMessage};

/// A decoded message and the LSN its WAL data started at.
pub(crate) type Change = (u64, LogicalReplicationMessage);

/// What the reader and the status task share with the poll.
#[derive(Default)]
pub(crate) struct Progress {
    /// The LSN the slot is confirmed up to: set from the offsets Kafka has
    /// stored (never from what was merely polled).
    pub acked: AtomicU64,
    /// The newest server WAL end a keepalive reported: every change before
    /// it has been queued by then.
    pub server_end: AtomicU64,
    /// Wakes the status task to answer at once.
    pub wake: Notify,
}

/// A running replication stream.
pub(crate) struct Replication {
    pub changes: mpsc::Receiver<Result<Change>>,
    pub progress: Arc<Progress>,
    reader: JoinHandle<()>,
    status: JoinHandle<()>,
}

impl Replication {
    /// Streams `slot` from `start` (`0` for the slot's confirmed
    /// position) on a replication connection (after a snapshot, the one
    /// that created the slot and exported it).
    pub(crate) async fn start_on(
        conn: Connection,
        slot: &str,
        publication: &str,
        start: u64,
        queue: usize,
        status_interval: Duration,
        progress: Arc<Progress>,
    ) -> Result<Replication> {
        tracing::info!(slot, publication, start = %format_lsn(start), "starting logical replication");
        let (mut reader, mut writer) = conn.start_replication(slot, start, publication).await?;
        let (tx, rx) = mpsc::channel(queue.max(1));
        let reading = Arc::clone(&progress);
        let reader = tokio::spawn(async move {
            let mut parser = LogicalReplicationParser::with_protocol_version(1);
            loop {
                let next = match reader.next().await {
                    Ok((tag, body)) => parse_wal(tag, body),
                    Err(e) => Err(e),
                };
                let change = match next {
                    Ok(WalMessage::Data { lsn, data }) => {
                        match parser.parse_wal_message_bytes(data) {
                            Ok(m) => Ok((lsn, m.message)),
                            Err(e) => Err(ConnectError::other(format!(
                                "cannot decode the pgoutput message at {}: {e}",
                                format_lsn(lsn)
                            ))),
                        }
                    }
                    Ok(WalMessage::Keepalive { wal_end, reply }) => {
                        reading.server_end.fetch_max(wal_end, Ordering::AcqRel);
                        if reply {
                            reading.wake.notify_one();
                        }
                        continue;
                    }
                    Ok(WalMessage::End) => Err(ConnectError::retriable(
                        "the server ended the replication stream",
                    )),
                    Err(e) => Err(e),
                };
                let failed = change.is_err();
                if tx.send(change).await.is_err() || failed {
                    return;
                }
            }
        });
        let statusing = Arc::clone(&progress);
        let status = tokio::spawn(async move {
            let mut last = 0;
            loop {
                tokio::select! {
                    _ = tokio::time::sleep(status_interval) => {}
                    _ = statusing.wake.notified() => {}
                }
                let flushed = statusing.acked.load(Ordering::Acquire);
                if let Err(e) = writer.send_status(flushed, false).await {
                    tracing::debug!(error = %e, "the status update could not be sent; the stream will report the failure");
                    return;
                }
                if flushed != last {
                    tracing::debug!(flushed = %format_lsn(flushed), "slot confirmed");
                    last = flushed;
                }
            }
        });
        Ok(Replication {
            changes: rx,
            progress,
            reader,
            status,
        })
    }

    /// Asks the status task to report the confirmable LSN now.
    pub(crate) fn report_now(&self) {
        self.progress.wake.notify_one();
    }
}

impl Drop for Replication {
    fn drop(&mut self) {
        self.reader.abort();
        self.status.abort();
    }
}
