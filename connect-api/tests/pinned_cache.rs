//! Pins `cache`: the LRU map's eviction order and the schema cache's
//! once-per-schema computation that converters and SMTs rely on.

use connect_api::cache::{Lru, SchemaCache};
use connect_api::{ConnectError, Schema, SchemaBuilder};

/// Each map hashes with its own random seed, so ties in recency would be
/// broken differently across caches: checking many makes the order exact.
fn many<F: Fn(&mut Lru<&'static str, i32>)>(setup: F) -> Vec<Lru<&'static str, i32>> {
    (0..32)
        .map(|_| {
            let mut c = Lru::new(2);
            setup(&mut c);
            c
        })
        .collect()
}

#[test]
fn lru_evicts_the_oldest_insert() {
    for mut c in many(|c| {
        c.insert("a", 1);
        c.insert("b", 2);
        c.insert("c", 3);
    }) {
        assert_eq!(c.len(), 2);
        assert_eq!(c.get("a"), None);
        assert_eq!(c.get("b"), Some(&2));
        assert_eq!(c.get("c"), Some(&3));
    }
}

#[test]
fn lru_get_and_get_mut_mark_entries_used() {
    for mut c in many(|c| {
        c.insert("a", 1);
        c.insert("b", 2);
        assert_eq!(c.get("a"), Some(&1));
        c.insert("c", 3);
    }) {
        assert_eq!(c.get("b"), None);
        assert_eq!(c.get("a"), Some(&1));
    }
    for mut c in many(|c| {
        c.insert("a", 1);
        c.insert("b", 2);
        *c.get_mut("a").unwrap() += 10;
        c.insert("c", 3);
    }) {
        assert_eq!(c.get("b"), None);
        assert_eq!(c.get("a"), Some(&11));
        assert_eq!(c.get_mut("zz"), None);
    }
}

#[test]
fn lru_replacing_a_key_evicts_nothing() {
    let mut c = Lru::new(2);
    assert!(c.is_empty());
    c.insert("a", 1);
    c.insert("b", 2);
    c.insert("b", 20);
    assert_eq!(c.len(), 2);
    assert!(!c.is_empty());
    assert_eq!(c.get("a"), Some(&1));
    assert_eq!(c.get("b"), Some(&20));
    let mut values: Vec<i32> = c.values().copied().collect();
    values.sort_unstable();
    assert_eq!(values, [1, 20]);
    let mut none = Lru::new(0);
    none.insert("a", 1);
    assert!(none.is_empty());
    assert_eq!(none.len(), 0);
    assert_eq!(none.get("a"), None);
}

fn struct_schema(field: &str) -> Schema {
    SchemaBuilder::struct_()
        .field(field, Schema::int32())
        .build()
        .unwrap()
}

#[test]
fn schema_cache_computes_once_per_distinct_schema() {
    let mut cache: SchemaCache<String> = SchemaCache::default();
    assert!(cache.is_empty());
    assert_eq!(cache.len(), 0);
    let mut calls = 0;
    let mut get = |cache: &mut SchemaCache<String>, s: &Schema| {
        cache
            .get_or_try_insert(s, |s| {
                calls += 1;
                Ok(s.field_list().next().unwrap().name().to_string())
            })
            .unwrap()
            .clone()
    };
    // More distinct schemas than the recent list holds, each rebuilt anew.
    for round in 0..3 {
        for name in ["a", "b", "c", "d", "e", "f"] {
            assert_eq!(get(&mut cache, &struct_schema(name)), name, "{round}");
        }
    }
    assert_eq!(calls, 6);
    assert_eq!(cache.len(), 6);
    assert!(!cache.is_empty());
}

#[test]
fn schema_cache_failed_make_caches_nothing() {
    let mut cache: SchemaCache<i32> = SchemaCache::new(4);
    let e = cache
        .get_or_try_insert(&Schema::string(), |_| Err(ConnectError::data("no")))
        .unwrap_err();
    assert_eq!(e.to_string(), "no");
    assert!(cache.is_empty());
    assert_eq!(
        *cache
            .get_or_try_insert(&Schema::string(), |_| Ok(3))
            .unwrap(),
        3
    );
    assert_eq!(cache.len(), 1);
}

#[test]
fn schema_cache_value_can_be_revised() {
    let mut cache: SchemaCache<i32> = SchemaCache::new(4);
    let s = struct_schema("a");
    *cache.get_or_try_insert(&s, |_| Ok(1)).unwrap() = 2;
    cache.update(&s, 2);
    // An equal schema built anew misses the pointer check and reads the
    // equality-keyed copy.
    let again = struct_schema("a");
    assert_eq!(*cache.get_or_try_insert(&again, |_| Ok(99)).unwrap(), 2);
    // Updating a schema that is not cached does nothing.
    cache.update(&struct_schema("zz"), 5);
    assert_eq!(cache.len(), 1);
}

#[test]
fn schema_cache_of_zero_capacity_still_keeps_recent_schemas() {
    // "At most `capacity` distinct schemas (plus a few recent)".
    let mut cache: SchemaCache<i32> = SchemaCache::new(0);
    let s = struct_schema("a");
    let mut calls = 0;
    for _ in 0..2 {
        let v = *cache
            .get_or_try_insert(&s, |_| {
                calls += 1;
                Ok(1)
            })
            .unwrap();
        assert_eq!(v, 1);
    }
    assert_eq!(calls, 1);
    assert_eq!(cache.len(), 0, "no equality-keyed copy");
    assert!(!cache.is_empty(), "the recent copy is held");
}
