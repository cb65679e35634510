//! A sink record as a row operation: the table, the key and value
//! columns (by `pk.mode` and `fields.whitelist`), and the values bound as
//! statement parameters.

use std::borrow::Cow;
use std::sync::Arc;

use chrono::{NaiveDate, NaiveDateTime, NaiveTime};
use connect_api::{ConnectError, LogicalType, Result, Schema, SinkRecord, Type, Value};
use sqlx::{Database, Encode};

use super::config::{InsertMode, PkMode, SinkSettings};
use crate::zone::DbTimeZone;

/// What a row operation does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Op {
    Insert,
    Upsert,
    Update,
    Delete,
}

/// A column of a row: its name, schema and value.
#[derive(Debug)]
pub(crate) struct Col<'a> {
    pub(crate) name: Cow<'a, str>,
    pub(crate) schema: Cow<'a, Schema>,
    pub(crate) value: Cow<'a, Value>,
}

/// What one record does to one table.
#[derive(Debug)]
pub(crate) struct RowOp<'a> {
    pub(crate) table: Arc<str>,
    pub(crate) op: Op,
    pub(crate) keys: Vec<Col<'a>>,
    pub(crate) values: Vec<Col<'a>>,
}

/// The row operation of `record`, `None` for a tombstone the settings
/// ignore; a data error names the record's problem.
/// `table` is the record's table (`table.name.format` applied).
pub(crate) fn row_op<'a>(
    s: &SinkSettings,
    record: &'a SinkRecord,
    table: Arc<str>,
) -> Result<Option<RowOp<'a>>> {
    let tombstone = record.value.is_null();
    if tombstone && !s.delete_enabled {
        return Ok(None);
    }
    let value_struct = match (&record.value, &record.value_schema) {
        (Value::Null, _) => None,
        (Value::Struct(v), Some(_)) => Some(v),
        (_, None) => {
            return Err(ConnectError::data(
                "the record's value has no schema: the JDBC sink needs a struct with a schema \
                 (use a converter with schemas, e.g. JsonConverter with schemas.enable=true)",
            ))
        }
        (v, Some(schema)) => {
            return Err(ConnectError::data(format!(
                "the record's value is {} ({}), not a struct: the JDBC sink writes struct fields as columns",
                v.type_name(),
                schema.ty()
            )))
        }
    };
    let mut keys = Vec::new();
    let pk = &s.pk_fields;
    match s.pk_mode {
        PkMode::None => {}
        PkMode::Kafka => {
            let owned = |name: &str, schema: Schema, value: Value| Col {
                name: Cow::Owned(name.to_string()),
                schema: Cow::Owned(schema),
                value: Cow::Owned(value),
            };
            keys.push(owned(
                &pk[0],
                Schema::string(),
                Value::String(record.original_topic.to_string()),
            ));
            keys.push(owned(
                &pk[1],
                Schema::int32(),
                Value::Int32(record.original_kafka_partition),
            ));
            keys.push(owned(
                &pk[2],
                Schema::int64(),
                Value::Int64(record.original_kafka_offset),
            ));
        }
        PkMode::RecordKey => {
            let Some(schema) = &record.key_schema else {
                return Err(ConnectError::data(
                    "pk.mode=record_key, but the record's key has no schema",
                ));
            };
            match &record.key {
                Value::Struct(k) => {
                    for field in schema.field_list() {
                        if pk.is_empty() || pk.iter().any(|p| p == field.name()) {
                            keys.push(Col {
                                name: Cow::Borrowed(field.name()),
                                schema: Cow::Borrowed(field.schema()),
                                value: Cow::Borrowed(k.value_or_default(field)),
                            });
                        }
                    }
                    if let Some(missing) = pk.iter().find(|p| schema.field(p).is_none()) {
                        return Err(ConnectError::data(format!(
                            "pk.fields names '{missing}', which the record's key lacks"
                        )));
                    }
                }
                Value::Null => {
                    return Err(ConnectError::data(
                        "pk.mode=record_key, but the record has no key",
                    ))
                }
                key => {
                    if pk.len() > 1 {
                        return Err(ConnectError::data(
                            "the record's key is a primitive: pk.fields may name one column",
                        ));
                    }
                    keys.push(Col {
                        name: Cow::Owned(
                            pk.first()
                                .map_or("__connect_key", String::as_str)
                                .to_string(),
                        ),
                        schema: Cow::Borrowed(schema),
                        value: Cow::Borrowed(key),
                    });
                }
            }
        }
        PkMode::RecordValue => {}
    }
    let mut values = Vec::new();
    if let Some(v) = value_struct {
        for field in v.schema().field_list() {
            let name = field.name();
            let col = Col {
                name: Cow::Borrowed(name),
                schema: Cow::Borrowed(field.schema()),
                value: Cow::Borrowed(v.value_or_default(field)),
            };
            if s.pk_mode == PkMode::RecordValue && (pk.is_empty() || pk.iter().any(|p| p == name)) {
                keys.push(col);
            } else if (s.fields_whitelist.is_empty()
                || s.fields_whitelist.iter().any(|f| f == name))
                && keys.iter().all(|k| k.name != name)
            {
                values.push(col);
            }
        }
        if s.pk_mode == PkMode::RecordValue {
            if let Some(missing) = pk.iter().find(|p| v.schema().field(p).is_none()) {
                return Err(ConnectError::data(format!(
                    "pk.fields names '{missing}', which the record's value lacks"
                )));
            }
        }
    }
    let op = if tombstone {
        Op::Delete
    } else {
        match s.insert_mode {
            InsertMode::Insert => Op::Insert,
            InsertMode::Upsert => Op::Upsert,
            InsertMode::Update => Op::Update,
        }
    };
    Ok(Some(RowOp {
        table,
        op,
        keys,
        values,
    }))
}

/// A statement parameter: a Connect value as the SQL type it binds as
/// (typed even when NULL: PostgreSQL checks parameter types).
#[derive(Debug)]
pub(crate) enum Bind<'a> {
    Bool(Option<bool>),
    I16(Option<i16>),
    I32(Option<i32>),
    I64(Option<i64>),
    F32(Option<f32>),
    F64(Option<f64>),
    Text(Option<&'a str>),
    Bytes(Option<&'a [u8]>),
    Decimal(Option<&'a connect_api::Decimal>),
    Date(Option<NaiveDate>),
    Time(Option<NaiveTime>),
    Timestamp(Option<NaiveDateTime>),
}

impl<'a> Bind<'a> {
    /// The parameter of `value` under `schema` (`column` names it in errors).
    pub(crate) fn of(
        column: &str,
        schema: &Schema,
        value: &'a Value,
        tz: DbTimeZone,
    ) -> Result<Bind<'a>> {
        let mismatch = || {
            ConnectError::data_at(
                column,
                format!(
                    "{} does not match the field's schema {}",
                    value.type_name(),
                    schema.ty()
                ),
            )
        };
        let null = value.is_null();
        let out_of_range = |what: String| {
            ConnectError::data_at(
                column,
                format!("{what} is outside the dates a database column holds"),
            )
        };
        macro_rules! pick {
            ($variant:ident, $pat:pat => $out:expr) => {
                Bind::$variant(match value {
                    _ if null => None,
                    $pat => Some($out),
                    _ => return Err(mismatch()),
                })
            };
        }
        Ok(match LogicalType::of(schema) {
            Some(LogicalType::Decimal) => pick!(Decimal, Value::Decimal(d) => d),
            Some(LogicalType::Date) => pick!(Date, Value::Date(days) => {
                NaiveDate::from_ymd_opt(1970, 1, 1)
                    .expect("epoch")
                    .checked_add_signed(chrono::Duration::days(i64::from(*days)))
                    .ok_or_else(|| out_of_range(format!("{days} days from 1970-01-01")))?
            }),
            Some(LogicalType::Time) => pick!(Time, Value::Time(ms) => {
                u32::try_from(*ms)
                    .ok()
                    .and_then(|ms| NaiveTime::from_num_seconds_from_midnight_opt(ms / 1000, (ms % 1000) * 1_000_000))
                    .ok_or_else(|| out_of_range(format!("{ms} ms after midnight")))?
            }),
            Some(LogicalType::Timestamp) => pick!(Timestamp, Value::Timestamp(ms) => {
                chrono::DateTime::from_timestamp_millis(*ms)
                    .and_then(|t| tz.local(t))
                    .ok_or_else(|| out_of_range(format!("{ms} ms from the epoch")))?
            }),
            None => match schema.ty() {
                Type::Int8 => pick!(I16, Value::Int8(v) => i16::from(*v)),
                Type::Int16 => pick!(I16, Value::Int16(v) => *v),
                Type::Int32 => pick!(I32, Value::Int32(v) => *v),
                Type::Int64 => pick!(I64, Value::Int64(v) => *v),
                Type::Float32 => pick!(F32, Value::Float32(v) => *v),
                Type::Float64 => pick!(F64, Value::Float64(v) => *v),
                Type::Boolean => pick!(Bool, Value::Boolean(v) => *v),
                Type::String => pick!(Text, Value::String(v) => v.as_str()),
                Type::Bytes => pick!(Bytes, Value::Bytes(v) => &v[..]),
                other => {
                    return Err(ConnectError::data_at(
                        column,
                        format!("a {other} cannot be written to a column: flatten it first (e.g. the Flatten transform)"),
                    ))
                }
            },
        })
    }
}

/// Binds a parameter the way every dialect takes it; decimals as doubles
/// (SQLite has no exact decimal; the other dialects bind them before).
pub(crate) fn bind_common<'q, DB: Database>(
    q: sqlx::query::Query<'q, DB, <DB as Database>::Arguments<'q>>,
    b: Bind<'q>,
) -> sqlx::query::Query<'q, DB, <DB as Database>::Arguments<'q>>
where
    Option<bool>: Encode<'q, DB> + sqlx::Type<DB>,
    Option<i16>: Encode<'q, DB> + sqlx::Type<DB>,
    Option<i32>: Encode<'q, DB> + sqlx::Type<DB>,
    Option<i64>: Encode<'q, DB> + sqlx::Type<DB>,
    Option<f32>: Encode<'q, DB> + sqlx::Type<DB>,
    Option<f64>: Encode<'q, DB> + sqlx::Type<DB>,
    Option<&'q str>: Encode<'q, DB> + sqlx::Type<DB>,
    Option<&'q [u8]>: Encode<'q, DB> + sqlx::Type<DB>,
    Option<NaiveDate>: Encode<'q, DB> + sqlx::Type<DB>,
    Option<NaiveTime>: Encode<'q, DB> + sqlx::Type<DB>,
    Option<NaiveDateTime>: Encode<'q, DB> + sqlx::Type<DB>,
{
    match b {
        Bind::Bool(v) => q.bind(v),
        Bind::I16(v) => q.bind(v),
        Bind::I32(v) => q.bind(v),
        Bind::I64(v) => q.bind(v),
        Bind::F32(v) => q.bind(v),
        Bind::F64(v) => q.bind(v),
        Bind::Text(v) => q.bind(v),
        Bind::Bytes(v) => q.bind(v),
        Bind::Decimal(v) => q.bind(v.map(connect_api::Decimal::to_f64)),
        Bind::Date(v) => q.bind(v),
        Bind::Time(v) => q.bind(v),
        Bind::Timestamp(v) => q.bind(v),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        // Any value a record can carry gives a parameter or a data error
        // naming the column, never a panic.
        #[test]
        fn logical_values_bind_or_fail_without_panicking(days in any::<i32>(), ms in any::<i32>(), ts in any::<i64>(), offset in -86_399i32..86_400) {
            let tz = DbTimeZone::Fixed(chrono::FixedOffset::east_opt(offset).unwrap());
            let date = Value::Date(days);
            let time = Value::Time(ms);
            let stamp = Value::Timestamp(ts);
            let _ = Bind::of("d", &connect_api::logical::date_schema(), &date, tz);
            let r = Bind::of("t", &connect_api::logical::time_schema(), &time, tz);
            prop_assert_eq!(r.is_ok(), (0..86_400_000).contains(&ms));
            if let Err(e) = Bind::of("ts", &connect_api::logical::timestamp_schema(), &stamp, tz) {
                prop_assert!(e.to_string().contains("ts"), "{}", e);
            }
        }
    }

    #[test]
    fn a_timestamp_binds_as_local_time_of_the_zone() {
        let tz = DbTimeZone::parse("+02:00").unwrap();
        let v = Value::Timestamp(0);
        let Bind::Timestamp(Some(t)) =
            Bind::of("ts", &connect_api::logical::timestamp_schema(), &v, tz).unwrap()
        else {
            panic!("not a timestamp");
        };
        assert_eq!(t.to_string(), "1970-01-01 02:00:00");
    }
}
