//! What a task checks and prepares on the database before it reads:
//! `wal_level`, the publication, the replication slot.

use connect_api::{ConnectError, Result};

use crate::catalog::TableId;
use crate::config::{AutocreateMode, Settings, PUBLICATION_AUTOCREATE_MODE, SLOT_NAME};
use crate::wire::{parse_lsn, quote_ident, quote_literal, Connection};

/// Fails unless the server decodes logically.
pub(crate) async fn check_wal_level(conn: &mut Connection) -> Result<()> {
    let rows = conn.query("SHOW wal_level").await?;
    let level = rows.first().and_then(|r| r.text(0)).unwrap_or("unknown");
    if level != "logical" {
        return Err(ConnectError::other(format!(
            "PostgreSQL runs with wal_level={level}; change data capture needs wal_level=logical: \
             set it in postgresql.conf (or ALTER SYSTEM SET wal_level = logical) and restart the server"
        )));
    }
    Ok(())
}

/// Creates or updates the publication as `publication.autocreate.mode`
/// says.
pub(crate) async fn ensure_publication(
    conn: &mut Connection,
    settings: &Settings,
    tables: &[TableId],
) -> Result<()> {
    let name = &settings.publication;
    let exists = !conn
        .query(&format!(
            "SELECT 1 FROM pg_catalog.pg_publication WHERE pubname = {}",
            quote_literal(name)
        ))
        .await?
        .is_empty();
    let table_list = || {
        tables
            .iter()
            .map(TableId::quoted)
            .collect::<Vec<_>>()
            .join(", ")
    };
    let sql = match (settings.autocreate, exists) {
        (AutocreateMode::Disabled, false) => {
            return Err(ConnectError::config(
                PUBLICATION_AUTOCREATE_MODE,
                format!(
                    "publication '{name}' does not exist and publication.autocreate.mode=disabled: \
                     create it (CREATE PUBLICATION {} FOR TABLE ...) or choose another mode",
                    quote_ident(name)
                ),
            ))
        }
        (AutocreateMode::AllTables, false) => {
            format!("CREATE PUBLICATION {} FOR ALL TABLES", quote_ident(name))
        }
        (AutocreateMode::NoTables, false) => format!("CREATE PUBLICATION {}", quote_ident(name)),
        (AutocreateMode::Filtered, false) if tables.is_empty() => {
            format!("CREATE PUBLICATION {}", quote_ident(name))
        }
        (AutocreateMode::Filtered, false) => format!(
            "CREATE PUBLICATION {} FOR TABLE {}",
            quote_ident(name),
            table_list()
        ),
        (AutocreateMode::Filtered, true) if !tables.is_empty() => format!(
            "ALTER PUBLICATION {} SET TABLE {}",
            quote_ident(name),
            table_list()
        ),
        _ => return Ok(()),
    };
    tracing::info!(publication = %name, sql = %sql, "preparing the publication");
    conn.execute(&sql).await
}

/// A replication slot as `pg_replication_slots` shows it.
#[derive(Debug, Clone)]
pub(crate) struct Slot {
    /// The oldest WAL the slot keeps.
    pub restart_lsn: u64,
}

/// The slot `name`, if it exists; refused if it is not a pgoutput slot of
/// this database.
pub(crate) async fn slot(conn: &mut Connection, settings: &Settings) -> Result<Option<Slot>> {
    let rows = conn
        .query(&format!(
            "SELECT restart_lsn::text, plugin::text, database::text FROM pg_catalog.pg_replication_slots \
             WHERE slot_name = {}",
            quote_literal(&settings.slot)
        ))
        .await?;
    let Some(row) = rows.first() else {
        return Ok(None);
    };
    let plugin = row.text(1).unwrap_or_default();
    let database = row.text(2).unwrap_or_default();
    if plugin != "pgoutput" || database != settings.endpoint.dbname {
        return Err(ConnectError::config(
            SLOT_NAME,
            format!(
                "slot '{}' exists for plugin '{plugin}' on database '{database}', not pgoutput on '{}': \
                 choose another slot.name or drop the slot",
                settings.slot, settings.endpoint.dbname
            ),
        ));
    }
    Ok(Some(Slot {
        restart_lsn: row.text(0).and_then(parse_lsn).unwrap_or(0),
    }))
}

/// A slot created with an exported snapshot: the LSN streaming starts at
/// and the snapshot's name (valid while `repl` stays idle).
pub(crate) struct CreatedSlot {
    pub consistent_point: u64,
    pub snapshot: Option<String>,
}

/// `CREATE_REPLICATION_SLOT` on a replication connection, exporting its
/// snapshot when `export`.
pub(crate) async fn create_slot(
    repl: &mut Connection,
    slot: &str,
    export: bool,
) -> Result<CreatedSlot> {
    let sql = format!(
        "CREATE_REPLICATION_SLOT {} LOGICAL pgoutput {}",
        quote_ident(slot),
        if export {
            "EXPORT_SNAPSHOT"
        } else {
            "NOEXPORT_SNAPSHOT"
        }
    );
    let rows = repl.query(&sql).await?;
    let row = rows
        .first()
        .ok_or_else(|| ConnectError::other("CREATE_REPLICATION_SLOT answered no row"))?;
    let consistent_point = row.text(1).and_then(parse_lsn).ok_or_else(|| {
        ConnectError::other("CREATE_REPLICATION_SLOT answered no consistent point")
    })?;
    tracing::info!(slot, consistent_point = %crate::wire::format_lsn(consistent_point), "replication slot created");
    Ok(CreatedSlot {
        consistent_point,
        snapshot: row.text(2).map(str::to_string),
    })
}

/// Drops the slot (`slot.drop.on.stop`), waiting for its last reader to
/// let go of it.
pub(crate) async fn drop_slot(conn: &mut Connection, slot: &str) -> Result<()> {
    let mut last = None;
    for _ in 0..50 {
        match conn
            .execute(&format!(
                "SELECT pg_catalog.pg_drop_replication_slot(slot_name) FROM pg_catalog.pg_replication_slots \
                 WHERE slot_name = {}",
                quote_literal(slot)
            ))
            .await
        {
            Ok(()) => return Ok(()),
            Err(e) => last = Some(e),
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    Err(last.unwrap_or_else(|| ConnectError::other("the slot could not be dropped")))
}
