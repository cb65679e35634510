//! Caches for per-schema work, as Kafka's `common.cache` serves its
//! converters and SMTs: [`SchemaCache`] (schema -> derived value) and the
//! bounded [`Lru`] map behind it.

use std::collections::hash_map::DefaultHasher;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};

use crate::error::Result;
use crate::schema::Schema;
use crate::value::Value;

/// Bounded map that evicts the least recently used entry.
#[derive(Debug)]
pub struct Lru<K, V> {
    map: HashMap<K, (V, u64)>,
    capacity: usize,
    tick: u64,
}

impl<K: Hash + Eq + Clone, V> Lru<K, V> {
    /// An empty cache holding at most `capacity` entries (0 caches nothing).
    pub fn new(capacity: usize) -> Self {
        Lru {
            map: HashMap::new(),
            capacity,
            tick: 0,
        }
    }

    /// The value for `key`, marking it most recently used.
    pub fn get<Q>(&mut self, key: &Q) -> Option<&V>
    where
        K: std::borrow::Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.tick += 1;
        let tick = self.tick;
        self.map.get_mut(key).map(|(v, t)| {
            *t = tick;
            &*v
        })
    }

    /// The entry for `key` (mutable), marking it most recently used.
    pub fn get_mut<Q>(&mut self, key: &Q) -> Option<&mut V>
    where
        K: std::borrow::Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.tick += 1;
        let tick = self.tick;
        self.map.get_mut(key).map(|(v, t)| {
            *t = tick;
            v
        })
    }

    /// Insert, evicting the least recently used entry when full.
    pub fn insert(&mut self, key: K, value: V) {
        if self.capacity == 0 {
            return;
        }
        if self.map.len() >= self.capacity && !self.map.contains_key(&key) {
            let oldest = self
                .map
                .iter()
                .min_by_key(|(_, (_, t))| *t)
                .map(|(k, _)| k.clone());
            if let Some(k) = oldest {
                self.map.remove(&k);
            }
        }
        self.tick += 1;
        self.map.insert(key, (value, self.tick));
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether the cache holds nothing.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// The cached values, in no particular order (not marking any used).
    pub fn values(&self) -> impl Iterator<Item = &V> {
        self.map.values().map(|(v, _)| v)
    }
}

const RECENT: usize = 4;

/// Schema -> `V`, computed once per distinct schema: what converters and
/// SMTs derive from a schema (an output schema, a rendered envelope, a
/// plan of which fields to touch), so that work is done once per schema,
/// not per record.
///
/// Connectors usually reuse one `Schema` object, so the last few schemas
/// are checked by pointer first (no hashing); an equal schema built anew
/// per record still hits through a structural hash and `==`. At most
/// `capacity` distinct schemas are kept, least recently used evicted.
///
/// ```
/// use connect_api::cache::SchemaCache;
/// use connect_api::{Schema, SchemaBuilder};
///
/// let mut optional: SchemaCache<Schema> = SchemaCache::new(16);
/// let mut derived = 0;
/// let schema = SchemaBuilder::struct_().field("id", Schema::int64()).build().unwrap();
/// for _ in 0..3 {
///     let out = optional
///         .get_or_try_insert(&schema, |s| {
///             derived += 1;
///             Ok(Schema::optional_string())
///         })
///         .unwrap();
///     assert!(out.is_optional());
/// }
/// assert_eq!(derived, 1);
/// ```
#[derive(Debug)]
pub struct SchemaCache<V> {
    recent: Vec<(Schema, V)>,
    by_hash: Lru<u64, Vec<(Schema, V)>>,
}

impl<V> Default for SchemaCache<V> {
    /// A cache of [`SchemaCache::DEFAULT_CAPACITY`] schemas.
    fn default() -> Self {
        SchemaCache::new(SchemaCache::<V>::DEFAULT_CAPACITY)
    }
}

impl<V> SchemaCache<V> {
    /// The capacity of [`SchemaCache::default`]: more distinct schemas
    /// than a pipeline usually sees at once.
    pub const DEFAULT_CAPACITY: usize = 64;

    /// A cache of at most `capacity` distinct schemas (plus a few recent).
    pub fn new(capacity: usize) -> Self {
        SchemaCache {
            recent: Vec::with_capacity(RECENT),
            by_hash: Lru::new(capacity),
        }
    }

    /// Number of distinct schemas cached.
    pub fn len(&self) -> usize {
        self.by_hash.values().map(Vec::len).sum()
    }

    /// Whether nothing is cached.
    pub fn is_empty(&self) -> bool {
        self.by_hash.is_empty() && self.recent.is_empty()
    }
}

impl<V: Clone> SchemaCache<V> {
    /// The cached value for `schema`, computing it with `make` on a miss
    /// (an error from `make` is returned and nothing is cached).
    pub fn get_or_try_insert(
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
    /// is updated by the caller through `get_or_try_insert`), for a value
    /// revised after it was cached.
    pub fn update(&mut self, schema: &Schema, value: V) {
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
fn schema_hash(schema: &Schema) -> u64 {
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
    use crate::SchemaBuilder;

    #[test]
    fn evicts_least_recently_used() {
        let mut c = Lru::new(2);
        c.insert("a", 1);
        c.insert("b", 2);
        assert_eq!(c.get("a"), Some(&1));
        c.insert("c", 3);
        assert_eq!(c.get("b"), None);
        assert_eq!(c.get("a"), Some(&1));
        assert_eq!(c.get("c"), Some(&3));
        assert_eq!(c.len(), 2);
    }

    #[test]
    fn zero_capacity_caches_nothing() {
        let mut c = Lru::new(0);
        c.insert("a", 1);
        assert_eq!(c.get("a"), None);
    }

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

    #[test]
    fn a_schema_cache_holds_at_most_its_capacity() {
        let mut cache = SchemaCache::new(2);
        assert!(cache.is_empty());
        for (i, s) in [Schema::int32(), Schema::int64(), Schema::string()]
            .iter()
            .enumerate()
        {
            assert_eq!(*cache.get_or_try_insert(s, |_| Ok(i)).unwrap(), i);
        }
        assert_eq!(cache.len(), 2);
        assert!(!cache.is_empty());
        let failed = cache.get_or_try_insert(&Schema::boolean(), |_| {
            Err(crate::ConnectError::data("cannot derive"))
        });
        assert!(failed.is_err());
        assert_eq!(cache.len(), 2, "a failed derivation caches nothing");
    }
}
