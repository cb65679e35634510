//! Pins `Headers` (Kafka's `ConnectHeaders`): an ordered multimap whose
//! operations plugins and SMTs (InsertHeader, DropHeaders) rely on.

use connect_api::{Header, Headers, Schema, Value};

fn keys(h: &Headers) -> Vec<(String, Value)> {
    h.iter()
        .map(|h| (h.key().to_string(), h.value().clone()))
        .collect()
}

fn kv(k: &str, v: &str) -> (String, Value) {
    (k.to_string(), Value::from(v))
}

#[test]
fn header_parts() {
    let h = Header::new("k", Some(Schema::int32()), Value::Int32(3));
    assert_eq!(h.key(), "k");
    assert_eq!(h.schema(), Some(&Schema::int32()));
    assert_eq!(h.value(), &Value::Int32(3));
    assert_eq!(
        h.clone().into_parts(),
        ("k".to_string(), Some(Schema::int32()), Value::Int32(3))
    );
    let schemaless = Header::new("s", None, Value::from("x"));
    assert_eq!(schemaless.schema(), None);
    assert_eq!(
        schemaless.into_parts(),
        ("s".to_string(), None, Value::from("x"))
    );
}

#[test]
fn add_validates_and_appends_in_order() {
    let mut h = Headers::new();
    assert!(h.is_empty());
    assert_eq!(h.len(), 0);
    h.add("a", Some(Schema::int32()), Value::Int32(1))
        .unwrap()
        .add("b", None, Value::from("free"))
        .unwrap();
    assert_eq!(h.len(), 2);
    assert!(!h.is_empty());
    assert_eq!(
        keys(&h),
        [
            ("a".to_string(), Value::Int32(1)),
            ("b".to_string(), Value::from("free"))
        ]
    );
    assert_eq!(h.iter().next().unwrap().schema(), Some(&Schema::int32()));
    let e = h
        .add("bad", Some(Schema::int32()), Value::from("x"))
        .unwrap_err();
    assert_eq!(e.to_string(), "header 'bad': expected INT32, got STRING");
    assert_eq!(h.len(), 2, "a rejected header is not added");
}

#[test]
fn push_and_add_string_append() {
    let mut h = Headers::new();
    h.push(Header::new("p", None, Value::Int8(1)))
        .add_string("s", "v")
        .push(Header::new("q", None, Value::Null));
    assert_eq!(h.len(), 3);
    let s = h.last_with_name("s").unwrap();
    assert_eq!(s.schema(), Some(&Schema::string()));
    assert_eq!(s.value(), &Value::from("v"));
    assert_eq!(
        h.iter().map(Header::key).collect::<Vec<_>>(),
        ["p", "s", "q"]
    );
}

#[test]
fn lookups_by_name() {
    let mut h = Headers::new();
    h.add_string("a", "1")
        .add_string("b", "1")
        .add_string("a", "2")
        .add_string("c", "1");
    let all: Vec<_> = h.all_with_name("a").map(|h| h.value().clone()).collect();
    assert_eq!(all, [Value::from("1"), Value::from("2")]);
    assert_eq!(h.all_with_name("c").count(), 1);
    assert_eq!(h.all_with_name("zz").count(), 0);
    assert_eq!(h.last_with_name("a").unwrap().value(), &Value::from("2"));
    assert_eq!(h.last_with_name("b").unwrap().key(), "b");
    assert!(h.last_with_name("zz").is_none());
}

#[test]
fn remove_drops_every_header_of_the_key() {
    let mut h = Headers::new();
    h.add_string("a", "1")
        .add_string("b", "1")
        .add_string("a", "2");
    h.remove("a").add_string("d", "4");
    assert_eq!(keys(&h), [kv("b", "1"), kv("d", "4")]);
    h.remove("missing");
    assert_eq!(h.len(), 2);
}

#[test]
fn retain_latest_keeps_the_last_of_each_key() {
    let mut h = Headers::new();
    h.add_string("a", "1")
        .add_string("b", "1")
        .add_string("a", "2")
        .add_string("b", "2")
        .add_string("c", "1");
    h.retain_latest().add_string("e", "5");
    assert_eq!(
        keys(&h),
        [kv("a", "2"), kv("b", "2"), kv("c", "1"), kv("e", "5")]
    );
}

#[test]
fn retain_latest_for_touches_one_key() {
    let mut h = Headers::new();
    h.add_string("a", "1")
        .add_string("b", "1")
        .add_string("a", "2")
        .add_string("b", "2")
        .add_string("a", "3");
    h.retain_latest_for("a").add_string("z", "0");
    assert_eq!(
        keys(&h),
        [kv("b", "1"), kv("b", "2"), kv("a", "3"), kv("z", "0")]
    );
    h.retain_latest_for("missing");
    assert_eq!(h.len(), 4);
    let mut single = Headers::new();
    single.add_string("only", "1");
    single.retain_latest_for("only");
    assert_eq!(keys(&single), [kv("only", "1")]);
}

#[test]
fn clear_retain_and_iteration() {
    let mut h = Headers::new();
    h.add_string("a", "1")
        .add_string("b", "2")
        .add_string("c", "3");
    h.retain(|x| x.key() != "b");
    assert_eq!(keys(&h), [kv("a", "1"), kv("c", "3")]);
    let borrowed: Vec<&str> = (&h).into_iter().map(Header::key).collect();
    assert_eq!(borrowed, ["a", "c"]);
    let collected: Headers = h.clone().into_iter().collect();
    assert_eq!(collected, h);
    let owned: Vec<String> = h.clone().into_iter().map(|x| x.key().to_string()).collect();
    assert_eq!(owned, ["a", "c"]);
    h.clear();
    assert!(h.is_empty());
    assert_eq!(h, Headers::default());
}
