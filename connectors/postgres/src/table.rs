//! A captured table's schemas (key, value, envelope) built once per shape,
//! and its rows turned into values with them.

use std::sync::Arc;

use bytes::Bytes;
use connect_api::{ConnectError, Result, Schema, SchemaBuilder, Struct, Value};

use crate::catalog::{CatalogColumn, TableId};
use crate::config::Settings;
use crate::source_info;
use crate::types::{Kind, Modes};

/// Debezium's marker for a value PostgreSQL did not send (an unchanged
/// TOASTed column under `REPLICA IDENTITY DEFAULT`).
pub(crate) const UNAVAILABLE: &str = "__debezium_unavailable_value";

/// A column of the table as it arrives from the database.
#[derive(Debug, Clone)]
pub(crate) struct Column {
    pub name: String,
    pub kind: Kind,
    pub schema: Schema,
    /// Index in the value struct; `None` for a column the filters leave
    /// out.
    pub value_index: Option<usize>,
}

/// Everything needed to turn the table's rows into records.
#[derive(Debug)]
pub(crate) struct Table {
    pub id: TableId,
    pub topic: Arc<str>,
    /// In the order the database sends them.
    pub columns: Vec<Column>,
    /// Indices into `columns` of the primary key, in key order.
    pub key_columns: Vec<usize>,
    pub key_schema: Option<Schema>,
    pub value_schema: Schema,
    pub envelope_schema: Schema,
}

/// A row as the database sends it: one text value per column, `None` for
/// NULL; unchanged TOASTed values are [`Cell::Unchanged`].
#[derive(Debug, Clone)]
pub(crate) enum Cell {
    Null,
    Text(Bytes),
    Unchanged,
}

impl Table {
    /// Builds the schemas of `id` with `columns` (in the order rows will
    /// carry them).
    pub(crate) fn new(
        id: TableId,
        columns: &[CatalogColumn],
        settings: &Settings,
        modes: Modes,
    ) -> Result<Table> {
        let base = format!("{}.{}.{}", settings.topic_prefix, id.schema, id.table);
        let mut value = SchemaBuilder::struct_().name(format!("{base}.Value"));
        let mut out = Vec::with_capacity(columns.len());
        let mut keyed: Vec<(usize, usize)> = Vec::new();
        let mut next = 0;
        for (i, c) in columns.iter().enumerate() {
            let kind = Kind::of(&c.ty, modes);
            let default = c
                .default
                .as_deref()
                .and_then(|expr| kind.default_value(expr, modes));
            let schema = kind
                .schema_with_default(!c.not_null, default.clone(), modes)
                .map_err(|e| ConnectError::other(format!("column {id}.{}: {e}", c.name)))?;
            let included = settings.filters.column(&id.schema, &id.table, &c.name);
            if included {
                value = value.field(c.name.clone(), schema.clone());
            }
            if let Some(p) = c.key_position {
                keyed.push((p, i));
            }
            out.push(Column {
                name: c.name.clone(),
                kind,
                schema,
                value_index: included.then(|| {
                    next += 1;
                    next - 1
                }),
            });
        }
        keyed.sort();
        let key_columns: Vec<usize> = keyed.into_iter().map(|(_, i)| i).collect();
        let key_schema = if key_columns.is_empty() {
            None
        } else {
            let mut key = SchemaBuilder::struct_().name(format!("{base}.Key"));
            for &i in &key_columns {
                // Key columns are required, as the primary key makes them.
                let c = &columns[i];
                // Debezium puts the column's default on the key field too.
                let default = c
                    .default
                    .as_deref()
                    .and_then(|expr| out[i].kind.default_value(expr, modes));
                key = key.field(
                    c.name.clone(),
                    out[i].kind.schema_with_default(false, default, modes)?,
                );
            }
            Some(key.build()?)
        };
        let value_schema = value.optional().build()?;
        let envelope_schema = SchemaBuilder::struct_()
            .name(format!("{base}.Envelope"))
            .version(2)
            .field("before", value_schema.clone())
            .field("after", value_schema.clone())
            .field("source", source_info::schema().clone())
            .field("transaction", source_info::transaction_schema().clone())
            .field("op", Schema::string())
            .field("ts_ms", SchemaBuilder::int64().optional().build()?)
            .field("ts_us", SchemaBuilder::int64().optional().build()?)
            .field("ts_ns", SchemaBuilder::int64().optional().build()?)
            .build()?;
        Ok(Table {
            topic: Arc::from(base.as_str()),
            id,
            columns: out,
            key_columns,
            key_schema,
            value_schema,
            envelope_schema,
        })
    }

    /// The value struct of a row.
    pub(crate) fn value(&self, cells: &[Cell], modes: Modes) -> Result<Value> {
        let mut values = vec![Value::Null; self.value_schema.field_count()];
        for (column, cell) in self.columns.iter().zip(cells) {
            let Some(index) = column.value_index else {
                continue;
            };
            values[index] = self.cell(column, cell, modes)?;
        }
        Ok(Value::Struct(Struct::from_parts(
            self.value_schema.clone(),
            values,
        )?))
    }

    /// The key struct of a row (`Null` for a table without primary key).
    pub(crate) fn key(&self, cells: &[Cell], modes: Modes) -> Result<Value> {
        let Some(schema) = &self.key_schema else {
            return Ok(Value::Null);
        };
        let mut values = Vec::with_capacity(self.key_columns.len());
        for &i in &self.key_columns {
            let cell = cells.get(i).unwrap_or(&Cell::Null);
            values.push(self.cell(&self.columns[i], cell, modes)?);
        }
        Ok(Value::Struct(Struct::from_parts(schema.clone(), values)?))
    }

    fn cell(&self, column: &Column, cell: &Cell, modes: Modes) -> Result<Value> {
        match cell {
            Cell::Null if column.schema.is_optional() => Ok(Value::Null),
            // A NOT NULL column without a value: its default, else its
            // type's zero (Debezium's fallback).
            Cell::Null => Ok(match column.schema.default_value() {
                Some(v) => v.clone(),
                None => column.kind.fallback(&column.schema, modes),
            }),
            Cell::Text(text) => column
                .kind
                .parse(text, &column.schema, modes)
                .map_err(|e| e.context(format!("column {}.{}", self.id, column.name))),
            Cell::Unchanged => Ok(unavailable(&column.kind)),
        }
    }
}

/// Debezium's placeholder for an unchanged TOASTed value of `kind`.
fn unavailable(kind: &Kind) -> Value {
    match kind {
        Kind::Binary | Kind::Bits(_) => Value::Bytes(Bytes::from_static(UNAVAILABLE.as_bytes())),
        Kind::Array(element) => Value::Array(vec![unavailable(element)]),
        Kind::Text | Kind::Json | Kind::Xml | Kind::Enum(_) | Kind::Uuid => {
            Value::String(UNAVAILABLE.to_string())
        }
        _ => Value::Null,
    }
}
