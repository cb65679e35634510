//! A small least-recently-used map for the converters' schema caches.
//!
//! Lookups and hits are O(1); eviction scans for the oldest entry, which
//! only happens when a new distinct schema arrives at a full cache.

use std::collections::HashMap;
use std::hash::Hash;

/// Bounded map that evicts the least recently used entry.
#[derive(Debug)]
pub(crate) struct Lru<K, V> {
    map: HashMap<K, (V, u64)>,
    capacity: usize,
    tick: u64,
}

impl<K: Hash + Eq + Clone, V> Lru<K, V> {
    /// An empty cache holding at most `capacity` entries (0 caches nothing).
    pub(crate) fn new(capacity: usize) -> Self {
        Lru {
            map: HashMap::new(),
            capacity,
            tick: 0,
        }
    }

    /// The value for `key`, marking it most recently used.
    pub(crate) fn get<Q>(&mut self, key: &Q) -> Option<&V>
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
    pub(crate) fn get_mut<Q>(&mut self, key: &Q) -> Option<&mut V>
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
    pub(crate) fn insert(&mut self, key: K, value: V) {
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
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.map.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
