//! Debezium's transaction metadata (`provide.transaction.metadata=true`):
//! a BEGIN and an END record per transaction on `<prefix>.transaction`,
//! and a `transaction` block in each change event with its place in the
//! transaction.

use std::sync::{Arc, OnceLock};

use connect_api::{Record, Schema, SchemaBuilder, SourceMap, SourceRecord, Struct, Value};

use crate::source_info;

/// Counts of the transaction being streamed.
#[derive(Debug, Default, Clone)]
pub(crate) struct Counts {
    /// Change events so far.
    pub total: i64,
    /// Change events so far per `schema.table`, in first-seen order.
    pub per_table: Vec<(String, i64)>,
}

impl Counts {
    /// Counts one more event of `table`: its (total, per-table) orders,
    /// 1-based.
    pub(crate) fn next(&mut self, table: &str) -> (i64, i64) {
        self.total += 1;
        let n = match self.per_table.iter_mut().find(|(t, _)| t == table) {
            Some((_, n)) => {
                *n += 1;
                *n
            }
            None => {
                self.per_table.push((table.to_string(), 1));
                1
            }
        };
        (self.total, n)
    }
}

fn schemas() -> &'static (Schema, Schema, Schema) {
    static SCHEMAS: OnceLock<(Schema, Schema, Schema)> = OnceLock::new();
    SCHEMAS.get_or_init(|| {
        let key = SchemaBuilder::struct_()
            .name("io.debezium.connector.common.TransactionMetadataKey")
            .version(1)
            .field("id", Schema::string())
            .build()
            .expect("the transaction key schema");
        let collection = SchemaBuilder::struct_()
            .name("event.collection")
            .version(1)
            .field("data_collection", Schema::string())
            .field("event_count", Schema::int64())
            .optional()
            .build()
            .expect("the collection schema");
        let value = SchemaBuilder::struct_()
            .name("io.debezium.connector.common.TransactionMetadataValue")
            .version(1)
            .field("status", Schema::string())
            .field("id", Schema::string())
            .field(
                "event_count",
                SchemaBuilder::int64()
                    .optional()
                    .build()
                    .expect("an optional int64"),
            )
            .field(
                "data_collections",
                SchemaBuilder::array(collection.clone())
                    .optional()
                    .build()
                    .expect("an optional array"),
            )
            .field("ts_ms", Schema::int64())
            .build()
            .expect("the transaction value schema");
        (key, value, collection)
    })
}

/// Debezium's transaction id on PostgreSQL: `<xid>:<lsn>`.
pub(crate) fn id(xid: u32, lsn: u64) -> String {
    format!("{xid}:{lsn}")
}

/// The BEGIN (`counts` = `None`) or END record of a transaction.
pub(crate) fn record(
    topic: &Arc<str>,
    partition: &Arc<SourceMap>,
    offset: SourceMap,
    id: String,
    ts_ms: i64,
    counts: Option<&Counts>,
) -> SourceRecord {
    let (key_schema, value_schema, collection) = schemas();
    let mut key = Struct::new(key_schema.clone()).expect("a struct schema");
    key.put_at_unchecked(0, Value::String(id.clone()));
    let (status, event_count, collections) = match counts {
        None => ("BEGIN", Value::Null, Value::Null),
        Some(c) => (
            "END",
            Value::Int64(c.total),
            Value::Array(
                c.per_table
                    .iter()
                    .map(|(t, n)| {
                        let mut s = Struct::new(collection.clone()).expect("a struct schema");
                        s.put_at_unchecked(0, Value::String(t.clone()));
                        s.put_at_unchecked(1, Value::Int64(*n));
                        Value::Struct(s)
                    })
                    .collect(),
            ),
        ),
    };
    let mut value = Struct::new(value_schema.clone()).expect("a struct schema");
    value.put_at_unchecked(0, Value::String(status.into()));
    value.put_at_unchecked(1, Value::String(id));
    value.put_at_unchecked(2, event_count);
    value.put_at_unchecked(3, collections);
    value.put_at_unchecked(4, Value::Int64(ts_ms));
    let record = Record::new(
        Arc::clone(topic),
        Some(value_schema.clone()),
        Value::Struct(value),
    )
    .with_key(Some(key_schema.clone()), Value::Struct(key));
    SourceRecord::new(Arc::clone(partition), offset, record)
}

/// The `transaction` block of a change event.
pub(crate) fn block(id: String, total_order: i64, data_collection_order: i64) -> Value {
    let mut s = Struct::new(source_info::transaction_schema().clone()).expect("a struct schema");
    s.put_at_unchecked(0, Value::String(id));
    s.put_at_unchecked(1, Value::Int64(total_order));
    s.put_at_unchecked(2, Value::Int64(data_collection_order));
    Value::Struct(s)
}

/// The offset keys of an open transaction: `transaction_id` and the
/// per-table orders.
pub(crate) fn offset_keys(offset: &mut SourceMap, xid: u32, counts: &Counts) {
    offset.insert("transaction_id".into(), xid.to_string().into());
    for (t, n) in &counts.per_table {
        offset.insert(
            format!("transaction_data_collection_order_{t}"),
            (*n).into(),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orders_are_one_based_per_transaction_and_per_table() {
        let mut c = Counts::default();
        assert_eq!(c.next("public.a"), (1, 1));
        assert_eq!(c.next("public.b"), (2, 1));
        assert_eq!(c.next("public.a"), (3, 2));
        let end = record(
            &Arc::from("p.transaction"),
            &Arc::new(SourceMap::new()),
            SourceMap::new(),
            id(7, 100),
            5,
            Some(&c),
        );
        let v = end.record.value.as_struct().unwrap();
        assert_eq!(v.get("status").unwrap().as_str(), Some("END"));
        assert_eq!(v.get("event_count").unwrap().as_i64(), Some(3));
        assert_eq!(v.get("id").unwrap().as_str(), Some("7:100"));
    }
}
