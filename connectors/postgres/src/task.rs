//! The source task: decides at start whether to snapshot or where to
//! resume, then turns snapshot rows and pgoutput changes into Debezium's
//! change events, and confirms the slot only up to what Kafka has stored.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use connect_api::source::{SourceTask, SourceTaskContext};
use connect_api::{
    ConfigMap, ConnectError, Headers, Record, Result, Schema, SchemaBuilder, SourceMap,
    SourceRecord, Struct, Value,
};
use pg_walstream::{LogicalReplicationMessage, TupleData};
use tokio::time::Instant;

use crate::catalog::{self, CatalogColumn, TableId};
use crate::config::{Settings, SnapshotMode, SNAPSHOT_MODE};
use crate::offsets::{partition, Position, SnapshotMark, Stored};
use crate::resume::{flush_lsn, start_lsn, Resume};
use crate::setup::{self, Slot};
use crate::snapshot::{Snapshot, SnapshotRow};
use crate::source_info::SourceValues;
use crate::stream::{Progress, Replication};
use crate::table::{Cell, Table};
use crate::transactions;
use crate::types::{Modes, PgType};
use crate::wire::{format_lsn, Connection, PG_EPOCH_OFFSET_MICROS};

/// The task of [`crate::PostgresConnector`]: one per connector (a slot
/// has one reader).
///
/// ```
/// let _task = connect_postgres::PostgresConnectorTask::default(); // started by the runtime
/// ```
#[derive(Default)]
pub struct PostgresConnectorTask {
    running: Option<Running>,
}

impl std::fmt::Debug for PostgresConnectorTask {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresConnectorTask")
            .field("position", &self.running.as_ref().map(|r| &r.position))
            .finish()
    }
}

enum Phase {
    Snapshot(Box<Snapshot>),
    Streaming(Replication),
    /// The stream failed: the next poll reconnects and resumes after the
    /// last event handed over.
    Disconnected,
    /// `snapshot.mode=initial_only` after its snapshot.
    Idle,
}

/// The transaction being streamed.
struct Txn {
    xid: u32,
    commit_lsn: u64,
    ts_us: i64,
    /// Events so far (transaction metadata).
    counts: transactions::Counts,
}

struct Running {
    settings: Settings,
    modes: Modes,
    partition: Arc<SourceMap>,
    context: Arc<dyn SourceTaskContext>,
    /// Plain connection for catalog lookups while streaming.
    control: Option<Connection>,
    phase: Phase,
    /// Relations seen in the stream, by OID; `None` for tables not
    /// captured.
    relations: HashMap<u32, Option<Arc<Table>>>,
    /// The last event handed over.
    position: Position,
    /// Skips what the server sends again that was handed over before (a
    /// restart, a reconnect).
    resume: Option<Resume>,
    /// The end LSN of the last commit processed (Debezium's
    /// `lsn_commit`).
    last_commit: Option<u64>,
    txn: Option<Txn>,
    progress: Arc<Progress>,
    failures: u32,
    last_heartbeat: Instant,
    /// A snapshot record held back until the next one shows whether it
    /// is the last.
    held: Option<(SnapshotRow, bool)>,
    /// Debezium's extended headers, on every change event and tombstone.
    headers: Headers,
    first_snapshot_record: bool,
}

fn micros_from_pg(ts: i64) -> i64 {
    ts + PG_EPOCH_OFFSET_MICROS
}

#[async_trait]
impl SourceTask for PostgresConnectorTask {
    async fn start(
        &mut self,
        config: &ConfigMap,
        context: Arc<dyn SourceTaskContext>,
    ) -> Result<()> {
        let settings = Settings::parse(config)?;
        let modes = Modes {
            decimal: settings.decimal,
            time: settings.time,
            binary: settings.binary,
        };
        let partition = partition(&settings.topic_prefix);
        let stored = match context.offset_storage_reader().offset(&partition) {
            None => None,
            Some(o) => Some(Position::from_offset(&o).ok_or_else(|| {
                ConnectError::offset_invalid(
                    (*partition).clone(),
                    format!(
                        "the stored offset {o:?} is not a PostgreSQL connector's offset (no lsn)"
                    ),
                )
            })?),
        };
        let mut control = Connection::connect(&settings.endpoint, false).await?;
        setup::check_wal_level(&mut control).await?;
        let tables = catalog::captured_tables(&mut control, &settings.filters).await?;
        let ids: Vec<TableId> = tables.iter().map(|(_, id)| id.clone()).collect();
        setup::ensure_publication(&mut control, &settings, &ids).await?;
        let slot = setup::slot(&mut control, &settings).await?;
        let plan = plan(&settings, stored.as_ref(), slot.as_ref(), &partition)?;
        tracing::info!(?plan, slot = %settings.slot, "the PostgreSQL connector starts");
        let progress = Arc::new(Progress::default());
        let mut position = Position::default();
        let mut resume = None;
        let phase = match plan {
            Plan::Snapshot => {
                let (repl, name, point) = if slot.is_none() {
                    let mut repl = Connection::connect(&settings.endpoint, true).await?;
                    let created = setup::create_slot(&mut repl, &settings.slot, true).await?;
                    (Some(repl), created.snapshot, created.consistent_point)
                } else {
                    // The slot's position is older than any snapshot taken
                    // now: changes in between arrive again (duplicates,
                    // never a gap).
                    (None, None, 0)
                };
                Phase::Snapshot(Box::new(
                    Snapshot::begin(&settings, tables, repl, name.as_deref(), point).await?,
                ))
            }
            Plan::Stream => {
                if let Some(s) = &stored {
                    position = s.position.clone();
                    resume = Resume::after(&s.position);
                    if let Some(lsn) = flush_lsn(&s.position) {
                        progress.acked.store(lsn, Ordering::Release);
                    }
                }
                if slot.is_none() {
                    let mut repl = Connection::connect(&settings.endpoint, true).await?;
                    setup::create_slot(&mut repl, &settings.slot, false).await?;
                }
                Phase::Disconnected
            }
        };
        let settings_prefix = settings.topic_prefix.clone();
        self.running = Some(Running {
            settings,
            modes,
            partition,
            context,
            control: Some(control),
            phase,
            relations: HashMap::new(),
            last_commit: position.lsn_commit,
            position,
            resume,
            txn: None,
            progress,
            failures: 0,
            last_heartbeat: Instant::now(),
            held: None,
            headers: extended_headers(&settings_prefix),
            first_snapshot_record: true,
        });
        Ok(())
    }

    async fn poll(&mut self) -> Result<Vec<SourceRecord>> {
        let running = self.running.as_mut().ok_or_else(|| {
            ConnectError::other("PostgresConnectorTask: poll called before start")
        })?;
        match running.poll().await {
            Ok(records) => {
                running.failures = 0;
                Ok(records)
            }
            Err(e) if e.is_retriable() => {
                running.failures += 1;
                tracing::warn!(error = %e, failures = running.failures,
                    "the PostgreSQL connection failed; reconnecting and resuming after the last event handed over");
                running.phase = match std::mem::replace(&mut running.phase, Phase::Disconnected) {
                    // A snapshot cannot continue on another connection.
                    Phase::Snapshot(_) => return Err(ConnectError::other(format!(
                        "the snapshot failed ({e}); the task restarts it from the beginning when restarted"
                    ))),
                    _ => Phase::Disconnected,
                };
                running.control = None;
                Err(e)
            }
            Err(e) => Err(e),
        }
    }

    async fn commit(&mut self) -> Result<()> {
        let Some(running) = self.running.as_mut() else {
            return Ok(());
        };
        // Only what Kafka has stored moves the slot.
        let stored = running
            .context
            .offset_storage_reader()
            .offset(&running.partition)
            .and_then(|o| Position::from_offset(&o));
        if let Some(Stored {
            position,
            snapshot_incomplete: false,
        }) = stored
        {
            let Some(lsn) = flush_lsn(&position) else {
                return Ok(());
            };
            let before = running.progress.acked.fetch_max(lsn, Ordering::AcqRel);
            if lsn > before {
                if let Phase::Streaming(r) = &running.phase {
                    r.report_now();
                }
            }
        }
        Ok(())
    }

    async fn stop(&mut self) -> Result<()> {
        let Some(mut running) = self.running.take() else {
            return Ok(());
        };
        if let Phase::Streaming(r) = &running.phase {
            r.report_now();
            // Let the status task send the last confirmation.
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        running.phase = Phase::Idle;
        if running.settings.slot_drop_on_stop {
            let mut conn = match running.control.take() {
                Some(c) => c,
                None => Connection::connect(&running.settings.endpoint, false).await?,
            };
            setup::drop_slot(&mut conn, &running.settings.slot).await?;
            tracing::info!(slot = %running.settings.slot, "slot dropped (slot.drop.on.stop=true)");
        }
        Ok(())
    }
}

/// What the task does first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Plan {
    Snapshot,
    Stream,
}

fn plan(
    settings: &Settings,
    stored: Option<&Stored>,
    slot: Option<&Slot>,
    partition: &SourceMap,
) -> Result<Plan> {
    let mode = settings.snapshot_mode;
    let streaming_only = matches!(mode, SnapshotMode::NoData | SnapshotMode::Never);
    match stored {
        _ if mode == SnapshotMode::Always => Ok(Plan::Snapshot),
        None if streaming_only => Ok(Plan::Stream),
        None => Ok(Plan::Snapshot),
        Some(s) if s.snapshot_incomplete && !streaming_only => Ok(Plan::Snapshot),
        Some(s) => {
            // Debezium's check: the slot must exist and must not have
            // released WAL the stored position still needs.
            let problem = match slot {
                None => Some(format!(
                    "replication slot '{}' does not exist (dropped, or never created on this server)",
                    settings.slot
                )),
                Some(slot) if s.position.lsn_proc.is_some_and(|p| p < slot.restart_lsn) => Some(format!(
                    "the stored offset is at LSN {} but slot '{}' keeps WAL only from {}: the changes in between are gone",
                    format_lsn(s.position.lsn_proc.unwrap_or_default()),
                    settings.slot,
                    format_lsn(slot.restart_lsn)
                )),
                Some(_) => None,
            };
            match problem {
                None => Ok(Plan::Stream),
                Some(_) if mode == SnapshotMode::WhenNeeded => {
                    tracing::warn!("the stored offset cannot be resumed; snapshot.mode=when_needed takes a new snapshot");
                    Ok(Plan::Snapshot)
                }
                Some(problem) => Err(ConnectError::offset_invalid(
                    partition.clone(),
                    format!(
                        "cannot resume streaming: {problem}. Nothing was skipped. To take a new snapshot, set \
                         {SNAPSHOT_MODE}=when_needed (or always) and restart the connector; or delete its offsets \
                         (DELETE /connectors/<name>/offsets while it is stopped) to start over"
                    ),
                )),
            }
        }
    }
}

impl Running {
    async fn poll(&mut self) -> Result<Vec<SourceRecord>> {
        match &mut self.phase {
            Phase::Snapshot(_) => self.poll_snapshot().await,
            Phase::Streaming(_) => self.poll_stream().await,
            Phase::Disconnected => {
                if self.failures > 0 {
                    let backoff = Duration::from_millis(200 * 2u64.pow(self.failures.min(5)));
                    tokio::time::sleep(backoff.min(Duration::from_secs(5))).await;
                }
                // The slot sends again what Kafka has not stored yet; what
                // was handed over already is skipped.
                self.resume = Resume::after(&self.position);
                let start = start_lsn(&self.position);
                self.connect_stream(None, start).await?;
                Ok(Vec::new())
            }
            Phase::Idle => {
                tokio::time::sleep(self.settings.poll_interval).await;
                Ok(Vec::new())
            }
        }
    }

    async fn connect_stream(&mut self, repl: Option<Connection>, point: u64) -> Result<()> {
        if self.control.is_none() {
            self.control = Some(Connection::connect(&self.settings.endpoint, false).await?);
        }
        // A fresh stream starts with fresh relation messages.
        self.relations.clear();
        self.txn = None;
        let s = &self.settings;
        let conn = match repl {
            Some(conn) => conn,
            None => Connection::connect(&s.endpoint, true).await?,
        };
        let replication = Replication::start_on(
            conn,
            &s.slot,
            &s.publication,
            point,
            s.max_queue_size,
            s.status_interval,
            Arc::clone(&self.progress),
        )
        .await?;
        self.phase = Phase::Streaming(replication);
        Ok(())
    }

    async fn poll_snapshot(&mut self) -> Result<Vec<SourceRecord>> {
        let mut out = Vec::new();
        let Phase::Snapshot(snapshot) = &mut self.phase else {
            return Ok(out);
        };
        while out.len() < self.settings.max_batch_size {
            match snapshot.next(&self.settings, self.modes).await? {
                Some(row) => {
                    if let Some((held, first)) = self.held.take() {
                        // Debezium's markers: the first row of all, the
                        // last of a table, the first of a table, the rest.
                        let mark = if first {
                            "first"
                        } else if !Arc::ptr_eq(&held.table, &row.table) {
                            "last_in_data_collection"
                        } else if held.first_in_table {
                            "first_in_data_collection"
                        } else {
                            "true"
                        };
                        out.push(snapshot_record(
                            &self.settings,
                            self.modes,
                            &self.partition,
                            &self.headers,
                            snapshot,
                            held,
                            mark,
                            false,
                        )?);
                    }
                    let first = std::mem::replace(&mut self.first_snapshot_record, false);
                    self.held = Some((row, first));
                }
                None => {
                    if let Some((held, _)) = self.held.take() {
                        out.push(snapshot_record(
                            &self.settings,
                            self.modes,
                            &self.partition,
                            &self.headers,
                            snapshot,
                            held,
                            "last",
                            true,
                        )?);
                    }
                    let Phase::Snapshot(done) = std::mem::replace(&mut self.phase, Phase::Idle)
                    else {
                        unreachable!("the phase was a snapshot");
                    };
                    tracing::info!("snapshot completed");
                    self.position = Position {
                        lsn: done.point,
                        ts_usec: done.ts_us,
                        tx_id: done.tx_id,
                        ..Position::default()
                    };
                    if self.settings.snapshot_mode == SnapshotMode::InitialOnly {
                        return Ok(out);
                    }
                    self.resume = None;
                    let Snapshot { repl, point, .. } = *done;
                    self.connect_stream(repl, point).await?;
                    return Ok(out);
                }
            }
        }
        Ok(out)
    }

    async fn poll_stream(&mut self) -> Result<Vec<SourceRecord>> {
        let mut out = Vec::new();
        let deadline = Instant::now() + self.settings.poll_interval;
        loop {
            let Phase::Streaming(replication) = &mut self.phase else {
                return Ok(out);
            };
            let next = if out.is_empty() {
                match tokio::time::timeout_at(deadline, replication.changes.recv()).await {
                    Ok(n) => n,
                    Err(_) => {
                        self.maybe_heartbeat(&mut out);
                        return Ok(out);
                    }
                }
            } else {
                match replication.changes.try_recv() {
                    Ok(n) => Some(n),
                    Err(_) => return Ok(out),
                }
            };
            let Some(next) = next else {
                return Err(ConnectError::retriable("the replication stream ended"));
            };
            let (lsn, message) = next?;
            self.handle(lsn, message, &mut out).await?;
            if out.len() >= self.settings.max_batch_size {
                return Ok(out);
            }
        }
    }

    /// A heartbeat record when one is due and nothing is in flight: its
    /// offset carries the server's WAL position, so a quiet database's
    /// slot moves forward once Kafka stores it.
    fn maybe_heartbeat(&mut self, out: &mut Vec<SourceRecord>) {
        let Some(interval) = self.settings.heartbeat_interval else {
            return;
        };
        if self.txn.is_some() || self.last_heartbeat.elapsed() < interval {
            return;
        }
        let Phase::Streaming(r) = &self.phase else {
            return;
        };
        if !r.changes.is_empty() {
            return;
        }
        self.last_heartbeat = Instant::now();
        let server_end = self.progress.server_end.load(Ordering::Acquire);
        if server_end > self.position.lsn {
            // Every change before the server's WAL end has been received
            // and handed over: the position moves there, as after a
            // commit (Debezium's lsn = lsn_proc = lsn_commit).
            self.position = Position {
                lsn: server_end,
                lsn_proc: Some(server_end),
                lsn_commit: Some(server_end),
                message_type: Some("COMMIT"),
                ts_usec: chrono::Utc::now().timestamp_micros(),
                tx_id: self.position.tx_id,
                snapshot: None,
            };
            self.last_commit = Some(server_end);
        }
        out.push(heartbeat_record(
            &self.settings,
            &self.partition,
            &self.position,
        ));
    }

    async fn handle(
        &mut self,
        lsn: u64,
        message: LogicalReplicationMessage,
        out: &mut Vec<SourceRecord>,
    ) -> Result<()> {
        match message {
            LogicalReplicationMessage::Begin {
                final_lsn,
                timestamp,
                xid,
            } => {
                let txn = Txn {
                    xid,
                    commit_lsn: final_lsn,
                    ts_us: micros_from_pg(timestamp),
                    counts: transactions::Counts::default(),
                };
                if self.settings.transaction_metadata {
                    let mut offset = Position {
                        lsn,
                        tx_id: Some(i64::from(xid)),
                        ts_usec: txn.ts_us,
                        message_type: Some("BEGIN"),
                        snapshot: None,
                        ..self.position.clone()
                    }
                    .to_offset();
                    transactions::offset_keys(&mut offset, xid, &txn.counts);
                    out.push(transactions::record(
                        &self.settings.transaction_topic,
                        &self.partition,
                        offset,
                        transactions::id(xid, lsn),
                        txn.ts_us.div_euclid(1000),
                        None,
                    ));
                }
                self.txn = Some(txn);
            }
            LogicalReplicationMessage::Commit { end_lsn, .. } => {
                // The commit message's LSN is its end LSN.
                let lsn = end_lsn.max(lsn);
                if let Some(txn) = self.txn.take() {
                    self.position = Position {
                        lsn,
                        lsn_proc: Some(lsn),
                        lsn_commit: Some(lsn),
                        tx_id: Some(i64::from(txn.xid)),
                        ts_usec: txn.ts_us,
                        message_type: Some("COMMIT"),
                        snapshot: None,
                    };
                    if self.settings.transaction_metadata {
                        out.push(transactions::record(
                            &self.settings.transaction_topic,
                            &self.partition,
                            self.position.to_offset(),
                            transactions::id(txn.xid, lsn),
                            txn.ts_us.div_euclid(1000),
                            Some(&txn.counts),
                        ));
                    }
                }
                self.last_commit = Some(lsn);
            }
            LogicalReplicationMessage::Relation {
                relation_id,
                namespace,
                relation_name,
                columns,
                ..
            } => {
                let id = TableId {
                    schema: namespace.to_string(),
                    table: relation_name.to_string(),
                };
                let table = if self.settings.filters.table(&id.schema, &id.table) {
                    Some(Arc::new(
                        self.table_from_relation(relation_id, id, &columns).await?,
                    ))
                } else {
                    None
                };
                self.relations.insert(relation_id, table);
            }
            LogicalReplicationMessage::Insert { relation_id, tuple } => {
                self.change(lsn, relation_id, "c", None, Some(&tuple), out)?;
            }
            LogicalReplicationMessage::Update {
                relation_id,
                old_tuple,
                new_tuple,
                ..
            } => {
                self.change(
                    lsn,
                    relation_id,
                    "u",
                    old_tuple.as_ref(),
                    Some(&new_tuple),
                    out,
                )?;
            }
            LogicalReplicationMessage::Delete {
                relation_id,
                old_tuple,
                ..
            } => {
                self.change(lsn, relation_id, "d", Some(&old_tuple), None, out)?;
            }
            // Debezium's default `skipped.operations=t` leaves truncates
            // out.
            LogicalReplicationMessage::Truncate { relation_ids, .. } => {
                for relation_id in relation_ids {
                    self.change(lsn, relation_id, "t", None, None, out)?;
                }
            }
            // Types, origins and logical messages carry no row change.
            _ => {}
        }
        Ok(())
    }

    /// The table a Relation message describes: its columns (names and
    /// types as the stream has them) with nullability, primary key and
    /// type details from the catalog.
    async fn table_from_relation(
        &mut self,
        oid: u32,
        id: TableId,
        columns: &[pg_walstream::ColumnInfo],
    ) -> Result<Table> {
        if self.control.is_none() {
            self.control = Some(Connection::connect(&self.settings.endpoint, false).await?);
        }
        let control = self.control.as_mut().expect("connected above");
        let catalog = catalog::columns(control, oid).await?;
        let merged: Vec<CatalogColumn> = columns
            .iter()
            .map(|c| {
                catalog
                    .iter()
                    .find(|k| *k.name == *c.name && k.ty.oid == c.type_id)
                    .cloned()
                    .unwrap_or_else(|| CatalogColumn {
                        name: c.name.to_string(),
                        ty: PgType {
                            oid: c.type_id,
                            modifier: c.type_modifier,
                            name: String::new(),
                            enum_labels: None,
                            element: None,
                        },
                        not_null: false,
                        key_position: None,
                        default: None,
                    })
            })
            .collect();
        Table::new(id, &merged, &self.settings, self.modes)
    }

    fn change(
        &mut self,
        lsn: u64,
        relation_id: u32,
        op: &'static str,
        before: Option<&TupleData>,
        after: Option<&TupleData>,
        out: &mut Vec<SourceRecord>,
    ) -> Result<()> {
        if self
            .settings
            .skipped
            .contains(&op.chars().next().unwrap_or('?'))
        {
            return Ok(());
        }
        let Some(txn) = &self.txn else {
            return Err(ConnectError::other(format!(
                "a change at {} arrived outside a transaction",
                format_lsn(lsn)
            )));
        };
        let (xid, commit_lsn, ts_us) = (txn.xid, txn.commit_lsn, txn.ts_us);
        if let Some(resume) = &mut self.resume {
            match resume.skips(commit_lsn, lsn) {
                Some(true) => return Ok(()),
                Some(false) => {}
                None => self.resume = None,
            }
        }
        let table = match self.relations.get(&relation_id) {
            Some(Some(t)) => Arc::clone(t),
            Some(None) => return Ok(()),
            None => {
                return Err(ConnectError::other(format!(
                    "a change at {} names relation {relation_id}, which the stream never described",
                    format_lsn(lsn)
                )))
            }
        };
        let message_type = match op {
            "c" => "INSERT",
            "u" => "UPDATE",
            "t" => "TRUNCATE",
            _ => "DELETE",
        };
        self.position = Position {
            lsn,
            lsn_proc: Some(lsn),
            lsn_commit: self.last_commit,
            tx_id: Some(i64::from(xid)),
            ts_usec: ts_us,
            message_type: Some(message_type),
            snapshot: None,
        };
        let before_cells = before.map(cells);
        let after_cells = after.map(cells);
        let key_changed = match (&before_cells, &after_cells) {
            (Some(b), Some(a)) if table.key_schema.is_some() => table
                .key_columns
                .iter()
                .any(|&i| matches!((b.get(i), a.get(i)), (Some(Cell::Text(x)), Some(Cell::Text(y))) if x != y)),
            _ => false,
        };
        let mut offset = self.position.to_offset();
        // A key change is two events (a delete and a create).
        let mut blocks = Vec::new();
        if let (true, Some(txn)) = (self.settings.transaction_metadata, self.txn.as_mut()) {
            let name = table.id.to_string();
            for _ in 0..if key_changed { 2 } else { 1 } {
                let (total, per_table) = txn.counts.next(&name);
                blocks.push(transactions::block(
                    transactions::id(xid, lsn),
                    total,
                    per_table,
                ));
            }
            transactions::offset_keys(&mut offset, xid, &txn.counts);
        }
        let mut blocks = blocks.into_iter();
        let source = SourceValues {
            name: &self.settings.topic_prefix,
            db: &self.settings.endpoint.dbname,
            schema: &table.id.schema,
            table: &table.id.table,
            ts_us,
            snapshot: "false",
            sequence: Some(sequence(self.last_commit, lsn)),
            tx_id: Some(i64::from(xid)),
            lsn: Some(lsn),
        };
        let modes = self.modes;
        if key_changed {
            // Debezium: a delete of the old key (and its tombstone), then
            // a create under the new one.
            let (b, a) = (
                before_cells.as_deref().unwrap_or(&[]),
                after_cells.as_deref().unwrap_or(&[]),
            );
            let old_key = table.key(b, modes)?;
            let new_key = table.key(a, modes)?;
            let new_key_header = self.key_header("__debezium.newkey", &table, new_key.clone());
            out.push(envelope_record(
                &table,
                self.modes,
                &self.partition,
                Event {
                    op: "d",
                    before: Some(b),
                    after: None,
                    key: old_key.clone(),
                    source: &source,
                    offset: offset.clone(),
                    headers: new_key_header.clone(),
                    transaction: blocks.next().unwrap_or(Value::Null),
                },
            )?);
            if self.settings.tombstones_on_delete {
                out.push(self.tombstone(&table, old_key.clone(), offset.clone(), new_key_header));
            }
            let old_key_header = self.key_header("__debezium.oldkey", &table, old_key);
            out.push(envelope_record(
                &table,
                self.modes,
                &self.partition,
                Event {
                    op: "c",
                    before: None,
                    after: Some(a),
                    key: new_key,
                    source: &source,
                    offset,
                    headers: old_key_header,
                    transaction: blocks.next().unwrap_or(Value::Null),
                },
            )?);
            return Ok(());
        }
        if op == "t" {
            // A truncate: no key, no row, no tombstone.
            let mut record = envelope_record(
                &table,
                self.modes,
                &self.partition,
                Event {
                    op,
                    before: None,
                    after: None,
                    key: Value::Null,
                    source: &source,
                    offset,
                    headers: self.headers.clone(),
                    transaction: blocks.next().unwrap_or(Value::Null),
                },
            )?;
            record.record.key_schema = None;
            out.push(record);
            return Ok(());
        }
        let key_cells = after_cells
            .as_deref()
            .or(before_cells.as_deref())
            .unwrap_or(&[]);
        let key = table.key(key_cells, modes)?;
        let tombstone = op == "d" && self.settings.tombstones_on_delete;
        out.push(envelope_record(
            &table,
            self.modes,
            &self.partition,
            Event {
                op,
                before: before_cells.as_deref(),
                after: after_cells.as_deref(),
                key: key.clone(),
                source: &source,
                offset: offset.clone(),
                headers: self.headers.clone(),
                transaction: blocks.next().unwrap_or(Value::Null),
            },
        )?);
        if tombstone {
            out.push(self.tombstone(&table, key, offset, self.headers.clone()));
        }
        Ok(())
    }

    /// A key header (`__debezium.newkey`, `__debezium.oldkey`) before the
    /// extended headers, as Debezium orders them.
    fn key_header(&self, name: &str, table: &Table, key: Value) -> Headers {
        let mut h = Headers::new();
        // The key was built with this schema: it cannot be refused.
        let _ = h.add(name, table.key_schema.clone(), key);
        for header in self.headers.iter() {
            h.push(header.clone());
        }
        h
    }

    fn tombstone(
        &self,
        table: &Table,
        key: Value,
        offset: SourceMap,
        headers: Headers,
    ) -> SourceRecord {
        let record = Record::new(Arc::clone(&table.topic), None, Value::Null)
            .with_key(table.key_schema.clone(), key)
            .with_headers(headers);
        SourceRecord::new(Arc::clone(&self.partition), offset, record)
    }
}

/// What one change event carries besides its table.
struct Event<'a> {
    op: &'static str,
    before: Option<&'a [Cell]>,
    after: Option<&'a [Cell]>,
    key: Value,
    source: &'a SourceValues<'a>,
    offset: SourceMap,
    headers: Headers,
    transaction: Value,
}

/// A change event of `table` in Debezium's envelope.
fn envelope_record(
    table: &Table,
    modes: Modes,
    partition: &Arc<SourceMap>,
    e: Event<'_>,
) -> Result<SourceRecord> {
    let now = chrono::Utc::now();
    let now_us = now.timestamp_micros();
    let values = vec![
        match e.before {
            Some(c) => table.value(c, modes)?,
            None => Value::Null,
        },
        match e.after {
            Some(c) => table.value(c, modes)?,
            None => Value::Null,
        },
        Value::Struct(e.source.to_struct()),
        e.transaction,
        Value::String(e.op.into()),
        Value::Int64(now_us.div_euclid(1000)),
        Value::Int64(now_us),
        Value::Int64(
            now.timestamp_nanos_opt()
                .unwrap_or(now_us.saturating_mul(1000)),
        ),
    ];
    let envelope = Struct::from_parts(table.envelope_schema.clone(), values)?;
    let record = Record::new(
        Arc::clone(&table.topic),
        Some(table.envelope_schema.clone()),
        Value::Struct(envelope),
    )
    .with_key(table.key_schema.clone(), e.key)
    .with_headers(e.headers);
    Ok(SourceRecord::new(Arc::clone(partition), e.offset, record))
}

#[allow(clippy::too_many_arguments)]
fn snapshot_record(
    settings: &Settings,
    modes: Modes,
    partition: &Arc<SourceMap>,
    headers: &Headers,
    snapshot: &Snapshot,
    row: SnapshotRow,
    mark: &'static str,
    last: bool,
) -> Result<SourceRecord> {
    let table = &row.table;
    let position = Position {
        lsn: snapshot.point,
        tx_id: snapshot.tx_id,
        ts_usec: snapshot.ts_us,
        snapshot: Some(SnapshotMark { last_record: last }),
        ..Position::default()
    };
    let source = SourceValues {
        name: &settings.topic_prefix,
        db: &settings.endpoint.dbname,
        schema: &table.id.schema,
        table: &table.id.table,
        ts_us: snapshot.ts_us,
        snapshot: mark,
        sequence: Some(sequence(None, snapshot.point)),
        tx_id: snapshot.tx_id,
        lsn: (snapshot.point > 0).then_some(snapshot.point),
    };
    let key = table.key(&row.cells, modes)?;
    envelope_record(
        table,
        modes,
        partition,
        Event {
            op: "r",
            before: None,
            after: Some(&row.cells),
            key,
            source: &source,
            offset: position.to_offset(),
            headers: headers.clone(),
            transaction: Value::Null,
        },
    )
}

fn heartbeat_record(
    settings: &Settings,
    partition: &Arc<SourceMap>,
    position: &Position,
) -> SourceRecord {
    use std::sync::OnceLock;
    static SCHEMAS: OnceLock<(Schema, Schema)> = OnceLock::new();
    let (key_schema, value_schema) = SCHEMAS.get_or_init(|| {
        (
            SchemaBuilder::struct_()
                .name("io.debezium.connector.common.ServerNameKey")
                .version(1)
                .field("serverName", Schema::string())
                .build()
                .expect("the heartbeat key schema"),
            SchemaBuilder::struct_()
                .name("io.debezium.connector.common.Heartbeat")
                .version(1)
                .field("ts_ms", Schema::int64())
                .build()
                .expect("the heartbeat value schema"),
        )
    });
    let mut key = Struct::new(key_schema.clone()).expect("a struct schema");
    key.put_at_unchecked(0, Value::String(settings.topic_prefix.clone()));
    let mut value = Struct::new(value_schema.clone()).expect("a struct schema");
    value.put_at_unchecked(0, Value::Int64(chrono::Utc::now().timestamp_millis()));
    let record = Record::new(
        settings.heartbeat_topic.as_str(),
        Some(value_schema.clone()),
        Value::Struct(value),
    )
    .with_key(Some(key_schema.clone()), Value::Struct(key))
    .with_partition(0);
    SourceRecord::new(Arc::clone(partition), position.to_offset(), record)
}

fn cells(tuple: &TupleData) -> Vec<Cell> {
    tuple
        .columns
        .iter()
        .map(|c| {
            if c.is_null() {
                Cell::Null
            } else if c.is_unchanged() {
                Cell::Unchanged
            } else {
                Cell::Text(c.raw_bytes())
            }
        })
        .collect()
}

/// Debezium's `source.sequence`: `["<lsn_commit>","<lsn>"]`, `null` for a
/// missing one.
fn sequence(lsn_commit: Option<u64>, lsn: u64) -> String {
    match lsn_commit {
        Some(c) => format!("[\"{c}\",\"{lsn}\"]"),
        None => format!("[null,\"{lsn}\"]"),
    }
}

/// Debezium's `extended.headers.enabled` headers: the connector's logical
/// name, task, kind and a run id fresh at every start.
fn extended_headers(prefix: &str) -> Headers {
    let mut h = Headers::new();
    h.add_string("__debezium.context.connectorLogicalName", prefix)
        .add_string("__debezium.context.taskId", "0")
        .add_string("__debezium.context.connectorName", "postgresql")
        .add_string("__debezium.context.runId", random_uuid());
    h
}

/// A random (version 4) UUID in its text form.
fn random_uuid() -> String {
    let mut b: [u8; 16] = fastrand::u128(..).to_be_bytes();
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}
