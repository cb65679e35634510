//! Per-schema work cached by schema identity, then by equality.
//!
//! Connectors usually reuse one `Schema` object, so the last few schemas
//! are checked by pointer first (no hashing). Connectors that build an equal
//! schema per record still hit: a structural hash finds the bucket and `==`
//! the entry. Entries hold a clone of their schema, so a pointer cannot be
//! reused by another schema while its entry lives.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};

use connect_api::{Result, Schema, Value};

use super::lru::Lru;

const RECENT: usize = 4;

/// Schema -> `V`, computed once per distinct schema.
pub(crate) struct SchemaCache<V> {
    recent: Vec<(Schema, V)>,
    by_hash: Lru<u64, Vec<(Schema, V)>>,
}

impl<V: Clone> SchemaCache<V> {
    /// A cache of at most `capacity` distinct schemas (plus a few recent).
    pub(crate) fn new(capacity: usize) -> Self {
        SchemaCache {
            recent: Vec::with_capacity(RECENT),
            by_hash: Lru::new(capacity),
        }
    }

    /// The cached value for `schema`, computing it with `make` on a miss.
    pub(crate) fn get_or_try_insert(
        &mut self,
        schema: &Schema,
        make: impl FnOnce(&Schema) -> Result<V>,
    ) -> Result<&mut V> {
        if let Some(i) = self.recent.iter().position(|(s, _)| s.ptr_eq(schema)) {
            return Ok(&mut self.recent[i].1);
        }
        let hash = schema_hash(schema);
        let cached = self
            .by_hash
            .get(&hash)
            .and_then(|bucket| bucket.iter().find(|(s, _)| s == schema))
            .map(|(_, v)| v.clone());
        let value = match cached {
            Some(v) => v,
            None => {
                let v = make(schema)?;
                match self.by_hash.get_mut(&hash) {
                    Some(bucket) => bucket.push((schema.clone(), v.clone())),
                    None => self.by_hash.insert(hash, vec![(schema.clone(), v.clone())]),
                }
                v
            }
        };
        if self.recent.len() == RECENT {
            self.recent.remove(0);
        }
        self.recent.push((schema.clone(), value));
        let last = self.recent.len() - 1;
        Ok(&mut self.recent[last].1)
    }

    /// Update the equality-keyed copy of `schema`'s value (the recent copy
    /// is updated by the caller through `get_or_try_insert`). Only the Avro
    /// converter revises cached values.
    #[cfg(feature = "avro")]
    pub(crate) fn update(&mut self, schema: &Schema, value: V) {
        let hash = schema_hash(schema);
        if let Some(bucket) = self.by_hash.get_mut(&hash) {
            if let Some(slot) = bucket.iter_mut().find(|(s, _)| s == schema) {
                slot.1 = value;
            }
        }
    }
}

/// A hash of the attributes that decide schema equality (defaults by type
/// only: values are compared by `==` within a bucket).
pub(crate) fn schema_hash(schema: &Schema) -> u64 {
    fn feed(s: &Schema, h: &mut DefaultHasher) {
        s.ty().hash(h);
        s.is_optional().hash(h);
        s.name().hash(h);
        s.version().hash(h);
        s.doc().hash(h);
        s.default_value().map(Value::type_name).hash(h);
        if let Some(p) = s.parameters() {
            for (k, v) in p {
                k.hash(h);
                v.hash(h);
            }
        }
        for f in s.field_list() {
            f.name().hash(h);
            feed(f.schema(), h);
        }
        if let Some(k) = s.key_schema() {
            feed(k, h);
        }
        if let Some(v) = s.value_schema() {
            feed(v, h);
        }
    }
    let mut h = DefaultHasher::new();
    feed(schema, &mut h);
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use connect_api::SchemaBuilder;

    #[test]
    fn equal_schemas_share_one_computation() {
        let mut cache = SchemaCache::new(10);
        let mut calls = 0;
        let a = SchemaBuilder::struct_()
            .field("x", Schema::int32())
            .build()
            .unwrap();
        let b = SchemaBuilder::struct_()
            .field("x", Schema::int32())
            .build()
            .unwrap();
        for s in [&a, &a, &b, &b] {
            let v = *cache
                .get_or_try_insert(s, |_| {
                    calls += 1;
                    Ok(7)
                })
                .unwrap();
            assert_eq!(v, 7);
        }
        assert_eq!(calls, 1);
        let c = SchemaBuilder::struct_()
            .field("x", Schema::int64())
            .build()
            .unwrap();
        cache
            .get_or_try_insert(&c, |_| {
                calls += 1;
                Ok(8)
            })
            .unwrap();
        assert_eq!(calls, 2);
    }
}
