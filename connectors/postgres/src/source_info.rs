//! The `source` block of Debezium's envelope (where and when a change
//! happened) and the `transaction` block's schema.

use std::sync::OnceLock;

use connect_api::{Schema, SchemaBuilder, Struct, Value};

/// The schema name of the `source` block.
pub(crate) const SOURCE_SCHEMA_NAME: &str = "io.debezium.connector.postgresql.Source";

/// The values `source.snapshot` takes.
pub(crate) const SNAPSHOT_VALUES: &str =
    "true,first,first_in_data_collection,last_in_data_collection,last,false,incremental";

fn build_source() -> Schema {
    let opt = |b: SchemaBuilder| b.optional().build().expect("a valid optional schema");
    SchemaBuilder::struct_()
        .name(SOURCE_SCHEMA_NAME)
        .version(1)
        .field("version", Schema::string())
        .field("connector", Schema::string())
        .field("name", Schema::string())
        .field("ts_ms", Schema::int64())
        .field(
            "snapshot",
            SchemaBuilder::string()
                .name(crate::types::names::ENUM)
                .version(1)
                .parameter("allowed", SNAPSHOT_VALUES)
                .default_value(Value::String("false".into()))
                .optional()
                .build()
                .expect("the snapshot enum schema"),
        )
        .field("db", Schema::string())
        .field("sequence", opt(SchemaBuilder::string()))
        .field("ts_us", opt(SchemaBuilder::int64()))
        .field("ts_ns", opt(SchemaBuilder::int64()))
        .field("schema", Schema::string())
        .field("table", Schema::string())
        .field("txId", opt(SchemaBuilder::int64()))
        .field("lsn", opt(SchemaBuilder::int64()))
        .field("xmin", opt(SchemaBuilder::int64()))
        .field("origin", opt(SchemaBuilder::string()))
        .field("origin_lsn", opt(SchemaBuilder::int64()))
        .build()
        .expect("the source schema")
}

/// The `source` block's schema (built once).
pub(crate) fn schema() -> &'static Schema {
    static SCHEMA: OnceLock<Schema> = OnceLock::new();
    SCHEMA.get_or_init(build_source)
}

/// The `transaction` block's schema (built once).
pub(crate) fn transaction_schema() -> &'static Schema {
    static SCHEMA: OnceLock<Schema> = OnceLock::new();
    SCHEMA.get_or_init(|| {
        SchemaBuilder::struct_()
            .name("event.block")
            .version(1)
            .field("id", Schema::string())
            .field("total_order", Schema::int64())
            .field("data_collection_order", Schema::int64())
            .optional()
            .build()
            .expect("the transaction block schema")
    })
}

/// What one event's `source` block says.
pub(crate) struct SourceValues<'a> {
    pub name: &'a str,
    pub db: &'a str,
    pub schema: &'a str,
    pub table: &'a str,
    /// Commit (or snapshot) time in microseconds since the epoch.
    pub ts_us: i64,
    pub snapshot: &'static str,
    pub sequence: Option<String>,
    pub tx_id: Option<i64>,
    pub lsn: Option<u64>,
}

impl SourceValues<'_> {
    /// The block as a struct.
    pub(crate) fn to_struct(&self) -> Struct {
        let values = vec![
            Value::String(crate::plugin_version()),
            Value::String("postgresql".into()),
            Value::String(self.name.to_string()),
            Value::Int64(self.ts_us.div_euclid(1000)),
            Value::String(self.snapshot.into()),
            Value::String(self.db.to_string()),
            self.sequence.clone().map_or(Value::Null, Value::String),
            Value::Int64(self.ts_us),
            Value::Int64(self.ts_us.saturating_mul(1000)),
            Value::String(self.schema.to_string()),
            Value::String(self.table.to_string()),
            self.tx_id.map_or(Value::Null, Value::Int64),
            self.lsn.map_or(Value::Null, |l| Value::Int64(l as i64)),
            Value::Null,
            Value::Null,
            Value::Null,
        ];
        let mut s = Struct::new(schema().clone()).expect("a struct schema");
        for (i, v) in values.into_iter().enumerate() {
            s.put_at_unchecked(i, v);
        }
        s
    }
}
