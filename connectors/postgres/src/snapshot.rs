//! The initial snapshot: every captured table read in one repeatable-read
//! transaction that sees exactly what the slot's consistent point saw (the
//! exported snapshot), so streaming from that point continues without a
//! gap or a duplicate.

use std::collections::VecDeque;
use std::sync::Arc;

use connect_api::Result;

use crate::catalog::{self, TableId};
use crate::config::Settings;
use crate::table::{Cell, Table};
use crate::types::Modes;
use crate::wire::{quote_literal, Connection, Row};

/// A snapshot in progress.
pub(crate) struct Snapshot {
    /// In the snapshot's transaction.
    conn: Connection,
    /// The replication connection that holds the exported snapshot and
    /// then streams (`None` when the slot existed already).
    pub repl: Option<Connection>,
    /// Where streaming starts afterwards (`0`: the slot's position).
    pub point: u64,
    tables: VecDeque<(u32, TableId)>,
    current: Option<Arc<Table>>,
    /// The snapshot transaction's id (`source.txId`).
    pub tx_id: Option<i64>,
    /// When the snapshot started, in microseconds since the epoch.
    pub ts_us: i64,
}

/// One row of the snapshot.
pub(crate) struct SnapshotRow {
    pub table: Arc<Table>,
    pub cells: Vec<Cell>,
    /// The first row of its table.
    pub first_in_table: bool,
}

impl Snapshot {
    /// Opens the snapshot transaction (on `snapshot_name` when exported).
    pub(crate) async fn begin(
        settings: &Settings,
        tables: Vec<(u32, TableId)>,
        repl: Option<Connection>,
        snapshot_name: Option<&str>,
        point: u64,
    ) -> Result<Snapshot> {
        let mut conn = Connection::connect(&settings.endpoint, false).await?;
        conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            .await?;
        if let Some(name) = snapshot_name {
            conn.execute(&format!("SET TRANSACTION SNAPSHOT {}", quote_literal(name)))
                .await?;
        }
        let rows = conn
            .query("SELECT txid_current()::text, (extract(epoch from now()) * 1000000)::int8::text")
            .await?;
        let tx_id = rows.first().and_then(|r| r.text(0)?.parse().ok());
        let ts_us = rows
            .first()
            .and_then(|r| r.text(1)?.parse().ok())
            .unwrap_or_else(|| chrono::Utc::now().timestamp_micros());
        tracing::info!(
            tables = tables.len(),
            exported = snapshot_name.is_some(),
            "snapshot started"
        );
        Ok(Snapshot {
            conn,
            repl,
            point,
            tables: tables.into(),
            current: None,
            tx_id,
            ts_us,
        })
    }

    /// The next row, `None` when every table has been read (the
    /// transaction is then committed).
    pub(crate) async fn next(
        &mut self,
        settings: &Settings,
        modes: Modes,
    ) -> Result<Option<SnapshotRow>> {
        loop {
            if let Some(table) = &self.current {
                match self.conn.next_row().await? {
                    Some(row) => {
                        return Ok(Some(SnapshotRow {
                            table: Arc::clone(table),
                            cells: cells(&row),
                            first_in_table: false,
                        }))
                    }
                    None => self.current = None,
                }
                continue;
            }
            let Some((oid, id)) = self.tables.pop_front() else {
                self.conn.execute("COMMIT").await?;
                return Ok(None);
            };
            let columns = catalog::columns(&mut self.conn, oid).await?;
            let table = Arc::new(Table::new(id.clone(), &columns, settings, modes)?);
            tracing::info!(table = %id, "snapshot of table");
            self.conn
                .start_query(&format!("SELECT * FROM {}", id.quoted()))
                .await?;
            self.current = Some(Arc::clone(&table));
            if let Some(row) = self.conn.next_row().await? {
                return Ok(Some(SnapshotRow {
                    table,
                    cells: cells(&row),
                    first_in_table: true,
                }));
            }
            self.current = None;
        }
    }
}

fn cells(row: &Row) -> Vec<Cell> {
    row.values()
        .iter()
        .map(|v| match v {
            Some(b) => Cell::Text(b.clone()),
            None => Cell::Null,
        })
        .collect()
}
