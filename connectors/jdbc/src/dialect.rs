//! The three SQL dialects: which database a `connection.url` names, how
//! each quotes identifiers, numbers its parameters, upserts, and names
//! column types for `auto.create`.

use std::fmt::Write as _;

use connect_api::{ConnectError, LogicalType, Result, Schema, Type};

use crate::config::CONNECTION_URL;

/// A database family, chosen from the `connection.url` prefix.
///
/// ```
/// use connect_jdbc::Dialect;
/// assert_eq!(Dialect::from_url("jdbc:postgresql://db:5432/shop").unwrap(), Dialect::Postgres);
/// assert_eq!(Dialect::from_url("jdbc:mariadb://db/shop").unwrap(), Dialect::MySql);
/// assert_eq!(Dialect::from_url("jdbc:sqlite:shop.db").unwrap(), Dialect::Sqlite);
/// assert!(Dialect::from_url("jdbc:oracle:thin:@db").is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// PostgreSQL (`jdbc:postgresql://`).
    Postgres,
    /// MariaDB and MySQL (`jdbc:mariadb://`, `jdbc:mysql://`).
    MySql,
    /// SQLite, embedded (`jdbc:sqlite:`).
    Sqlite,
}

impl Dialect {
    /// The dialect of a JDBC URL, or a config error naming
    /// `connection.url` and the prefixes we accept.
    pub fn from_url(url: &str) -> Result<Dialect> {
        if url.starts_with("jdbc:postgresql:") {
            Ok(Dialect::Postgres)
        } else if url.starts_with("jdbc:mariadb:") || url.starts_with("jdbc:mysql:") {
            Ok(Dialect::MySql)
        } else if url.starts_with("jdbc:sqlite:") {
            Ok(Dialect::Sqlite)
        } else {
            Err(ConnectError::config(
                CONNECTION_URL,
                format!(
                    "'{url}' names no supported database: use jdbc:postgresql://, \
                     jdbc:mariadb://, jdbc:mysql:// or jdbc:sqlite:"
                ),
            ))
        }
    }

    /// Appends `ident` to `sql`, quoted when `quote` is set (quotes inside
    /// the name doubled, so any name is safe).
    pub(crate) fn push_ident(self, sql: &mut String, ident: &str, quote: bool) {
        if !quote {
            sql.push_str(ident);
            return;
        }
        let q = match self {
            Dialect::MySql => '`',
            Dialect::Postgres | Dialect::Sqlite => '"',
        };
        sql.push(q);
        for c in ident.chars() {
            if c == q {
                sql.push(q);
            }
            sql.push(c);
        }
        sql.push(q);
    }

    /// Appends a possibly qualified table name (`schema.table`), each
    /// part quoted on its own.
    pub(crate) fn push_table(self, sql: &mut String, table: &str, quote: bool) {
        for (i, part) in table.split('.').enumerate() {
            if i > 0 {
                sql.push('.');
            }
            self.push_ident(sql, part, quote);
        }
    }

    /// Appends the `n`-th (1-based) bind parameter.
    pub(crate) fn push_param(self, sql: &mut String, n: usize) {
        match self {
            Dialect::Postgres => {
                let _ = write!(sql, "${n}");
            }
            Dialect::MySql | Dialect::Sqlite => sql.push('?'),
        }
    }

    /// The column type `auto.create` and `auto.evolve` give a field of
    /// `schema`, as Confluent's dialects choose them; `None` for schemas
    /// a column cannot hold (arrays, maps, structs).
    pub(crate) fn column_type(self, schema: &Schema, is_key: bool) -> Option<String> {
        let logical = LogicalType::of(schema);
        let ty = match (self, logical) {
            (Dialect::Postgres, Some(LogicalType::Decimal)) => "DECIMAL".to_string(),
            (_, Some(LogicalType::Decimal)) => {
                let scale = schema.parameter("scale").unwrap_or("0");
                format!("DECIMAL(65,{scale})")
            }
            (_, Some(LogicalType::Date)) => "DATE".to_string(),
            (Dialect::Postgres, Some(LogicalType::Time)) => "TIME".to_string(),
            (Dialect::MySql, Some(LogicalType::Time)) => "TIME(3)".to_string(),
            (Dialect::Sqlite, Some(LogicalType::Time)) => "TIME".to_string(),
            (Dialect::Postgres, Some(LogicalType::Timestamp)) => "TIMESTAMP".to_string(),
            (Dialect::MySql, Some(LogicalType::Timestamp)) => "DATETIME(3)".to_string(),
            (Dialect::Sqlite, Some(LogicalType::Timestamp)) => "DATETIME".to_string(),
            _ => match (self, schema.ty()) {
                (Dialect::Postgres, Type::Int8 | Type::Int16) => "SMALLINT".into(),
                (Dialect::MySql, Type::Int8) => "TINYINT".into(),
                (Dialect::MySql, Type::Int16) => "SMALLINT".into(),
                (Dialect::Postgres | Dialect::MySql, Type::Int32) => "INT".into(),
                (Dialect::Postgres | Dialect::MySql, Type::Int64) => "BIGINT".into(),
                (Dialect::Sqlite, Type::Int8 | Type::Int16 | Type::Int32 | Type::Int64) => {
                    "INTEGER".into()
                }
                (Dialect::Postgres, Type::Float32) => "REAL".into(),
                (Dialect::MySql, Type::Float32) => "FLOAT".into(),
                (Dialect::Postgres, Type::Float64) => "DOUBLE PRECISION".into(),
                (Dialect::MySql, Type::Float64) => "DOUBLE".into(),
                (Dialect::Sqlite, Type::Float32 | Type::Float64) => "REAL".into(),
                (Dialect::Postgres, Type::Boolean) => "BOOLEAN".into(),
                (Dialect::MySql, Type::Boolean) => "TINYINT".into(),
                (Dialect::Sqlite, Type::Boolean) => "INTEGER".into(),
                (Dialect::Postgres | Dialect::Sqlite, Type::String) => "TEXT".into(),
                // MariaDB cannot index TEXT without a prefix length.
                (Dialect::MySql, Type::String) if is_key => "VARCHAR(256)".into(),
                (Dialect::MySql, Type::String) => "TEXT".into(),
                (Dialect::Postgres, Type::Bytes) => "BYTEA".into(),
                (Dialect::MySql, Type::Bytes) if is_key => "VARBINARY(256)".into(),
                (Dialect::MySql, Type::Bytes) => "BLOB".into(),
                (Dialect::Sqlite, Type::Bytes) => "BLOB".into(),
                _ => return None,
            },
        };
        Some(ty)
    }

    /// Appends the tail of an upsert after `INSERT INTO t (cols) VALUES (..)`:
    /// update the non-key columns when a row with the same key exists.
    pub(crate) fn push_upsert_tail(
        self,
        sql: &mut String,
        keys: &[&str],
        columns: &[&str],
        quote: bool,
    ) {
        match self {
            Dialect::Postgres | Dialect::Sqlite => {
                sql.push_str(" ON CONFLICT (");
                for (i, k) in keys.iter().enumerate() {
                    if i > 0 {
                        sql.push_str(", ");
                    }
                    self.push_ident(sql, k, quote);
                }
                if columns.is_empty() {
                    sql.push_str(") DO NOTHING");
                    return;
                }
                sql.push_str(") DO UPDATE SET ");
                for (i, c) in columns.iter().enumerate() {
                    if i > 0 {
                        sql.push_str(", ");
                    }
                    self.push_ident(sql, c, quote);
                    sql.push_str(" = EXCLUDED.");
                    self.push_ident(sql, c, quote);
                }
            }
            Dialect::MySql => {
                sql.push_str(" ON DUPLICATE KEY UPDATE ");
                // With only key columns there is nothing to update: assign a
                // key to itself so the statement stays valid.
                let targets: &[&str] = if columns.is_empty() {
                    &keys[..1]
                } else {
                    columns
                };
                for (i, c) in targets.iter().enumerate() {
                    if i > 0 {
                        sql.push_str(", ");
                    }
                    self.push_ident(sql, c, quote);
                    sql.push_str(" = VALUES(");
                    self.push_ident(sql, c, quote);
                    sql.push(')');
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_are_quoted_with_the_dialects_quote_and_embedded_quotes_doubled() {
        let mut s = String::new();
        Dialect::Postgres.push_ident(&mut s, "we\"ird", true);
        assert_eq!(s, "\"we\"\"ird\"");
        let mut s = String::new();
        Dialect::MySql.push_table(&mut s, "shop.or`ders", true);
        assert_eq!(s, "`shop`.`or``ders`");
        let mut s = String::new();
        Dialect::Sqlite.push_ident(&mut s, "plain", false);
        assert_eq!(s, "plain");
    }

    #[test]
    fn upserts_use_each_databases_syntax() {
        let mut s = String::new();
        Dialect::Postgres.push_upsert_tail(&mut s, &["id"], &["name"], true);
        assert_eq!(
            s,
            " ON CONFLICT (\"id\") DO UPDATE SET \"name\" = EXCLUDED.\"name\""
        );
        let mut s = String::new();
        Dialect::MySql.push_upsert_tail(&mut s, &["id"], &["name"], true);
        assert_eq!(s, " ON DUPLICATE KEY UPDATE `name` = VALUES(`name`)");
        let mut s = String::new();
        Dialect::MySql.push_upsert_tail(&mut s, &["id"], &[], true);
        assert_eq!(s, " ON DUPLICATE KEY UPDATE `id` = VALUES(`id`)");
    }
}
