//! Helpers shared by the SMTs: which side of the record a field-level SMT
//! works on, the per-schema cache, and Kafka's `Requirements` checks.

use connect_api::config::{ConfigKey, ConfigType, Importance};
use connect_api::{
    ConnectError, ConnectRecord, Field, Result, Schema, SchemaBuilder, Struct, Type, Value,
};

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

/// What an SMT derives per input schema (by default its output schema;
/// SMTs that rewrite structs also keep a per-schema plan of which slots to
/// touch), so that work is done once per input schema, not per record: the
/// one schema cache of the project, [`connect_api::cache::SchemaCache`].
pub type SchemaCache<T = Schema> = connect_api::cache::SchemaCache<T>;

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

// ---------------------------------------------------------------------------
// Helpers shared by the struct-rewriting SMTs of this crate.
// ---------------------------------------------------------------------------

/// Name of the `replace.null.with.default` option (KIP-1040).
pub(crate) const REPLACE_NULL_WITH_DEFAULT: &str = "replace.null.with.default";

/// The `replace.null.with.default` key, as the SMTs that have it define it.
pub(crate) fn replace_null_with_default_key() -> ConfigKey {
    ConfigKey::new(REPLACE_NULL_WITH_DEFAULT, ConfigType::Boolean)
        .default(true)
        .importance(Importance::Medium)
        .doc(
            "Whether a null struct field is read as the default value of its schema (true) \
             or kept null (false).",
        )
}

/// Kafka's `SchemaUtil.copySchemaBasics`: name, version, doc and parameters
/// of `source` onto `builder` (not optionality, not the default).
pub(crate) fn copy_schema_basics(source: &Schema, mut builder: SchemaBuilder) -> SchemaBuilder {
    if let Some(name) = source.name() {
        builder = builder.name(name);
    }
    if let Some(version) = source.version() {
        builder = builder.version(version);
    }
    if let Some(doc) = source.doc() {
        builder = builder.doc(doc);
    }
    if let Some(params) = source.parameters() {
        builder = builder.parameters(params.iter());
    }
    builder
}

/// `input` itself when `derived` equals it, so callers can tell "nothing
/// to change" per record with a pointer comparison.
pub(crate) fn same_or_new(input: &Schema, derived: Schema) -> Result<Schema> {
    Ok(if derived == *input {
        input.clone()
    } else {
        derived
    })
}

/// A STRUCT builder carrying `source`'s basics.
pub(crate) fn struct_builder_like(source: &Schema) -> SchemaBuilder {
    copy_schema_basics(source, SchemaBuilder::struct_())
}

/// A builder of `source`'s type (ARRAY and MAP keep their inner schemas)
/// carrying its basics.
pub(crate) fn builder_like(source: &Schema) -> SchemaBuilder {
    let builder = match (source.ty(), source.key_schema(), source.value_schema()) {
        (Type::Array, _, Some(v)) => SchemaBuilder::array(v.clone()),
        (Type::Map, Some(k), Some(v)) => SchemaBuilder::map(k.clone(), v.clone()),
        (ty, _, _) => SchemaBuilder::new(ty),
    };
    copy_schema_basics(source, builder)
}

/// `value` of `field`, with a null read as the field's default when
/// `with_default` is set (Kafka's `Struct.get` versus `getWithoutDefault`).
pub(crate) fn or_default(value: Value, field: &Field, with_default: bool) -> Value {
    match value {
        Value::Null if with_default => field.schema().default_value().cloned().unwrap_or_default(),
        v => v,
    }
}

/// Move the value of `field` out of `values` (a struct's raw values), read
/// as [`or_default`] does.
pub(crate) fn take_field(values: &mut [Value], field: &Field, with_default: bool) -> Value {
    let v = values
        .get_mut(field.index())
        .map(std::mem::take)
        .unwrap_or_default();
    or_default(v, field, with_default)
}

/// Replace, in place, each null field of `s` that has a default with that
/// default (what Kafka's `Struct.get` reads), leaving other fields alone.
///
/// Most structs have no defaulted field: that is answered here, inline,
/// from the schema's flag; the rest is out of line.
#[inline]
pub(crate) fn fill_defaults(s: &mut Struct) {
    if s.schema().has_field_defaults() {
        fill_present_defaults(s);
    }
}

fn fill_present_defaults(s: &mut Struct) {
    // Nulls are rare: scan the values before looking up fields.
    if !s.values().iter().any(Value::is_null) {
        return;
    }
    let schema = s.schema().clone();
    for field in schema.field_list() {
        if let Some(default) = field.schema().default_value() {
            if s.get_at(field.index()).is_some_and(Value::is_null) {
                s.put_at_unchecked(field.index(), default.clone());
            }
        }
    }
}

/// The struct in `value`, or Kafka's error for `purpose`.
pub(crate) fn into_struct(value: Value, purpose: &str) -> Result<Struct> {
    match value {
        Value::Struct(s) => Ok(s),
        other => Err(require_struct(&other, purpose)
            .err()
            .unwrap_or_else(|| ConnectError::data(purpose.to_string()))),
    }
}

/// The entries of the map in `value`, or Kafka's error for `purpose`.
pub(crate) fn into_map(value: Value, purpose: &str) -> Result<Vec<(Value, Value)>> {
    match value {
        Value::Map(m) => Ok(m),
        other => Err(require_map(&other, purpose)
            .err()
            .unwrap_or_else(|| ConnectError::data(purpose.to_string()))),
    }
}

/// A schemaless map key as a field name; Kafka's field-level SMTs read
/// schemaless data as `Map<String, Object>`, so other keys are an error.
pub(crate) fn map_key<'a>(key: &'a Value, purpose: &str) -> Result<&'a str> {
    key.as_str().ok_or_else(|| {
        ConnectError::data(format!(
            "Only string keys supported in schemaless maps for [{purpose}], found a key of type {}",
            key.type_name()
        ))
    })
}

/// Set `key` in a schemaless map, replacing an existing entry (Java's
/// `Map.put`).
pub(crate) fn map_put(entries: &mut Vec<(Value, Value)>, key: &str, value: Value) {
    match entries.iter_mut().find(|(k, _)| k.as_str() == Some(key)) {
        Some((_, slot)) => *slot = value,
        None => entries.push((Value::String(key.to_string()), value)),
    }
}

#[cfg(test)]
pub(crate) mod test_support {
    //! Record and config builders for the SMT tests.

    use connect_api::{
        ConfigMap, Record, Schema, SchemaBuilder, SinkRecord, SourceMap, SourceRecord, Struct,
        Value,
    };

    /// A config map from pairs.
    pub(crate) fn props(pairs: &[(&str, &str)]) -> ConfigMap {
        ConfigMap::from_pairs(pairs.iter().copied())
    }

    /// A sink record on topic `test`, partition 3, offset 42, timestamp 1000,
    /// with the given value and a string key `k`.
    pub(crate) fn sink(schema: Option<Schema>, value: Value) -> SinkRecord {
        SinkRecord::new(
            Record::new("test", schema, value)
                .with_key(Some(Schema::string()), Value::from("k"))
                .with_timestamp(1000),
            3,
            42,
        )
    }

    /// A sink record whose key is `key` (and value a string).
    pub(crate) fn sink_key(schema: Option<Schema>, key: Value) -> SinkRecord {
        SinkRecord::new(
            Record::new("test", Some(Schema::string()), Value::from("v")).with_key(schema, key),
            3,
            42,
        )
    }

    /// Flat structs of optional INT64 fields (some null), with a named,
    /// versioned schema.
    pub(crate) fn flat_struct() -> impl proptest::strategy::Strategy<Value = (Schema, Value)> {
        use proptest::prelude::*;
        proptest::collection::btree_map("[a-z]{1,6}", any::<Option<i64>>(), 0..8).prop_map(
            |fields| {
                let mut b = SchemaBuilder::struct_().name("p.Flat").version(3);
                for name in fields.keys() {
                    b = b.field(name.as_str(), Schema::optional_int64());
                }
                let schema = b.build().unwrap();
                let mut s = Struct::new(schema.clone()).unwrap();
                for (name, v) in &fields {
                    s.put(name, Value::from(*v)).unwrap();
                }
                (schema, Value::Struct(s))
            },
        )
    }

    /// A source record with the given value.
    pub(crate) fn source(schema: Option<Schema>, value: Value) -> SourceRecord {
        SourceRecord::new(
            Default::default(),
            SourceMap::new(),
            Record::new("test", schema, value),
        )
    }
}
