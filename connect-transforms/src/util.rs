//! Helpers shared by the SMTs: which side of the record a field-level SMT
//! works on, the per-schema cache, and Kafka's `Requirements` checks.

use std::collections::HashMap;

use connect_api::{ConnectError, ConnectRecord, Result, Schema, Struct, Value};

/// Which part of the record a field-level SMT acts on: Kafka's `$Key` and
/// `$Value` variants share one implementation parameterised by this.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Side {
    /// The record key (`...$Key`).
    Key,
    /// The record value (`...$Value`).
    Value,
}

impl Side {
    /// `$Key` or `$Value`, as in Kafka's class names.
    pub fn suffix(self) -> &'static str {
        match self {
            Side::Key => "$Key",
            Side::Value => "$Value",
        }
    }

    /// The schema of this side.
    pub fn schema<R: ConnectRecord>(self, record: &R) -> Option<&Schema> {
        let r = record.record();
        match self {
            Side::Key => r.key_schema.as_ref(),
            Side::Value => r.value_schema.as_ref(),
        }
    }

    /// The value of this side.
    pub fn value<R: ConnectRecord>(self, record: &R) -> &Value {
        let r = record.record();
        match self {
            Side::Key => &r.key,
            Side::Value => &r.value,
        }
    }

    /// Take schema and value out of the record (leaving `None`/`Null`), to
    /// rewrite them without cloning; put the result back with [`Side::set`].
    pub fn take<R: ConnectRecord>(self, record: &mut R) -> (Option<Schema>, Value) {
        let r = record.record_mut();
        match self {
            Side::Key => (r.key_schema.take(), std::mem::take(&mut r.key)),
            Side::Value => (r.value_schema.take(), std::mem::take(&mut r.value)),
        }
    }

    /// Replace schema and value of this side.
    pub fn set<R: ConnectRecord>(self, record: &mut R, schema: Option<Schema>, value: Value) {
        let r = record.record_mut();
        match self {
            Side::Key => {
                r.key_schema = schema;
                r.key = value;
            }
            Side::Value => {
                r.value_schema = schema;
                r.value = value;
            }
        }
    }
}

/// Most input schemas an SMT remembers; past this the cache starts over.
/// Real pipelines see a handful of schemas, so a reset is rare and cheap.
pub const SCHEMA_CACHE_SIZE: usize = 64;

/// A bounded map from an input schema to the schema an SMT derives from it,
/// so the derived schema is computed once per input schema, not per record.
///
/// Lookup is by pointer identity first (converters hand out the same `Arc`
/// for every record of a schema), then by equality.
#[derive(Debug, Default)]
pub struct SchemaCache {
    /// The last hit: most streams carry one schema, so this answers
    /// almost every lookup with a pointer comparison and no hashing.
    last: Option<(Schema, Schema)>,
    by_addr: HashMap<usize, (Schema, Schema)>,
}

impl SchemaCache {
    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// The derived schema for `input`, computing it with `derive` on a miss.
    pub fn get_or_try_insert(
        &mut self,
        input: &Schema,
        derive: impl FnOnce(&Schema) -> Result<Schema>,
    ) -> Result<Schema> {
        if let Some((k, v)) = &self.last {
            if k.ptr_eq(input) {
                return Ok(v.clone());
            }
        }
        if let Some((k, v)) = self.by_addr.get(&input.addr()) {
            if k.ptr_eq(input) {
                let hit = (k.clone(), v.clone());
                let derived = v.clone();
                self.last = Some(hit);
                return Ok(derived);
            }
        }
        if let Some(v) = self
            .by_addr
            .values()
            .find(|(k, _)| k == input)
            .map(|(_, v)| v.clone())
        {
            self.insert(input, v.clone());
            return Ok(v);
        }
        let derived = derive(input)?;
        self.insert(input, derived.clone());
        Ok(derived)
    }

    fn insert(&mut self, input: &Schema, derived: Schema) {
        if self.by_addr.len() >= SCHEMA_CACHE_SIZE {
            self.by_addr.clear();
        }
        // Keeping `input` alive keeps its address from being reused.
        self.last = Some((input.clone(), derived.clone()));
        self.by_addr.insert(input.addr(), (input.clone(), derived));
    }

    /// Number of cached schemas.
    pub fn len(&self) -> usize {
        self.by_addr.len()
    }

    /// Whether the cache is empty.
    pub fn is_empty(&self) -> bool {
        self.by_addr.is_empty()
    }
}

/// The struct in `value`, or Kafka's error for `purpose`.
pub fn require_struct<'a>(value: &'a Value, purpose: &str) -> Result<&'a Struct> {
    match value {
        Value::Struct(s) => Ok(s),
        other => Err(ConnectError::data(format!(
            "Only Struct objects supported for [{purpose}], found: {}",
            other.type_name()
        ))),
    }
}

/// The map entries in `value`, or Kafka's error for `purpose`.
pub fn require_map<'a>(value: &'a Value, purpose: &str) -> Result<&'a [(Value, Value)]> {
    match value {
        Value::Map(m) => Ok(m),
        other => Err(ConnectError::data(format!(
            "Only Map objects supported in absence of schema for [{purpose}], found: {}",
            other.type_name()
        ))),
    }
}

/// The schema, or Kafka's error for `purpose`.
pub fn require_schema<'a>(schema: Option<&'a Schema>, purpose: &str) -> Result<&'a Schema> {
    schema.ok_or_else(|| ConnectError::data(format!("Schema required for [{purpose}]")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use connect_api::SchemaBuilder;

    #[test]
    fn cache_computes_once_per_schema() {
        let mut cache = SchemaCache::new();
        let s = SchemaBuilder::struct_()
            .field("a", Schema::int32())
            .build()
            .unwrap();
        let mut calls = 0;
        for _ in 0..3 {
            cache
                .get_or_try_insert(&s, |_| {
                    calls += 1;
                    Ok(Schema::string())
                })
                .unwrap();
        }
        // An equal schema in a different allocation also hits.
        let equal = SchemaBuilder::struct_()
            .field("a", Schema::int32())
            .build()
            .unwrap();
        cache
            .get_or_try_insert(&equal, |_| {
                calls += 1;
                Ok(Schema::string())
            })
            .unwrap();
        assert_eq!(calls, 1);
    }

    #[test]
    fn requirement_errors_match_kafka() {
        let e = require_struct(&Value::Int32(1), "field insertion").unwrap_err();
        assert_eq!(
            e.to_string(),
            "Only Struct objects supported for [field insertion], found: INT32"
        );
        assert!(require_map(&Value::Null, "masking").is_err());
    }
}
