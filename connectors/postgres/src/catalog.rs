//! What the catalog says about the captured tables: which exist, their
//! columns with types, nullability and primary key.

use connect_api::Result;

use crate::config::Filters;
use crate::types::PgType;
use crate::wire::{Connection, Row};

/// A table's identity.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct TableId {
    pub schema: String,
    pub table: String,
}

impl TableId {
    /// `"schema"."table"` for SQL.
    pub(crate) fn quoted(&self) -> String {
        format!(
            "{}.{}",
            crate::wire::quote_ident(&self.schema),
            crate::wire::quote_ident(&self.table)
        )
    }
}

impl std::fmt::Display for TableId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.schema, self.table)
    }
}

/// One column as the catalog has it.
#[derive(Debug, Clone)]
pub(crate) struct CatalogColumn {
    pub name: String,
    pub ty: PgType,
    pub not_null: bool,
    /// Position in the primary key (0-based), if part of it.
    pub key_position: Option<usize>,
    /// The column's default expression, as `pg_get_expr` prints it.
    pub default: Option<String>,
}

/// The ordinary and partitioned tables the filters capture, sorted.
pub(crate) async fn captured_tables(
    conn: &mut Connection,
    filters: &Filters,
) -> Result<Vec<(u32, TableId)>> {
    let rows = conn
        .query(
            "SELECT c.oid, n.nspname, c.relname FROM pg_catalog.pg_class c \
             JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace \
             WHERE c.relkind IN ('r', 'p') AND NOT c.relispartition \
             AND n.nspname NOT IN ('pg_catalog', 'information_schema') \
             AND n.nspname NOT LIKE 'pg_toast%' AND n.nspname NOT LIKE 'pg_temp%' \
             ORDER BY n.nspname, c.relname",
        )
        .await?;
    Ok(rows
        .iter()
        .filter_map(|r| {
            let id = TableId {
                schema: r.text(1)?.to_string(),
                table: r.text(2)?.to_string(),
            };
            let oid = r.text(0)?.parse().ok()?;
            filters.table(&id.schema, &id.table).then_some((oid, id))
        })
        .collect())
}

/// The columns of table `oid` in their order.
pub(crate) async fn columns(conn: &mut Connection, oid: u32) -> Result<Vec<CatalogColumn>> {
    // A domain is described by its base type; an array by its element.
    let sql = format!(
        "SELECT a.attname, bt.oid, CASE WHEN t.typtype = 'd' THEN t.typtypmod ELSE a.atttypmod END, \
           a.attnotnull, \
           (SELECT array_position(i.indkey::int2[], a.attnum) FROM pg_catalog.pg_index i \
              WHERE i.indrelid = a.attrelid AND i.indisprimary), \
           bt.typname, \
           (SELECT string_agg(e.enumlabel, ',' ORDER BY e.enumsortorder) FROM pg_catalog.pg_enum e WHERE e.enumtypid = bt.oid), \
           et.oid, et.typname, \
           (SELECT string_agg(e.enumlabel, ',' ORDER BY e.enumsortorder) FROM pg_catalog.pg_enum e WHERE e.enumtypid = et.oid), \
           (SELECT pg_catalog.pg_get_expr(d.adbin, d.adrelid) FROM pg_catalog.pg_attrdef d \
              WHERE d.adrelid = a.attrelid AND d.adnum = a.attnum) \
         FROM pg_catalog.pg_attribute a \
         JOIN pg_catalog.pg_type t ON t.oid = a.atttypid \
         JOIN pg_catalog.pg_type bt ON bt.oid = CASE WHEN t.typtype = 'd' THEN t.typbasetype ELSE t.oid END \
         LEFT JOIN pg_catalog.pg_type et ON et.oid = bt.typelem AND bt.typcategory = 'A' \
         WHERE a.attrelid = {oid} AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum"
    );
    let rows = conn.query(&sql).await?;
    Ok(rows.iter().filter_map(column_of).collect())
}

fn labels(row: &Row, i: usize) -> Option<Vec<String>> {
    row.text(i)
        .map(|s| s.split(',').map(str::to_string).collect())
}

fn column_of(r: &Row) -> Option<CatalogColumn> {
    let modifier: i32 = r.text(2)?.parse().ok()?;
    let element = match r.text(7) {
        // An array column's modifier is its element's (numeric(10,2)[]).
        Some(oid) => Some(Box::new(PgType {
            oid: oid.parse().ok()?,
            modifier,
            name: r.text(8).unwrap_or_default().to_string(),
            enum_labels: labels(r, 9),
            element: None,
        })),
        None => None,
    };
    Some(CatalogColumn {
        name: r.text(0)?.to_string(),
        ty: PgType {
            oid: r.text(1)?.parse().ok()?,
            modifier: if element.is_some() { -1 } else { modifier },
            name: r.text(5).unwrap_or_default().to_string(),
            enum_labels: if element.is_some() {
                None
            } else {
                labels(r, 6)
            },
            element,
        },
        not_null: r.text(3) == Some("t"),
        // int2vector subscripts start at 0: the position is 0-based.
        key_position: r.text(4).and_then(|p| p.parse::<usize>().ok()),
        default: r.text(10).map(str::to_string),
    })
}
