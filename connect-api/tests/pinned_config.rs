//! Pins `ConfigDef` (Kafka's `ConfigDef`): parsing per type, validators,
//! the error messages users see, and `ConfigMap`'s secret masking.

use std::collections::BTreeMap;
use std::sync::Arc;

use connect_api::config::validators::{
    Composite, Lambda, ListSize, NonEmptyString, NonNull, Range, ValidList, ValidString,
};
use connect_api::config::{
    parse_list, parse_value, with_prefix, ConfigDef, ConfigKey, ConfigMap, ConfigReport,
    ConfigType, ConfigValue, Importance, Password, Validator, Width,
};
use connect_api::ErrorKind;

fn props(pairs: &[(&str, &str)]) -> ConfigMap {
    ConfigMap::from_pairs(pairs.iter().copied())
}

fn list(items: &[&str]) -> ConfigValue {
    ConfigValue::List(items.iter().map(|s| s.to_string()).collect())
}

#[test]
fn config_map_reads_and_writes_as_a_map() {
    let mut m = ConfigMap::new();
    assert!(m.is_empty());
    m.insert("b".into(), "2".into());
    m.extend([("a", "1"), ("c", "3")]);
    assert_eq!(m.len(), 3);
    let keys: Vec<&String> = (&m).into_iter().map(|(k, _)| k).collect();
    assert_eq!(keys, ["a", "b", "c"]);
    for (_, v) in &mut m {
        v.push('!');
    }
    assert_eq!(m.get("a").map(String::as_str), Some("1!"));
    let owned: Vec<(String, String)> = m.clone().into_iter().collect();
    assert_eq!(owned[2], ("c".to_string(), "3!".to_string()));
    let inner = m.clone().into_inner();
    assert_eq!(inner.len(), 3);
    assert_eq!(inner["b"], "2!");
    let btree: BTreeMap<String, String> = m.clone().into();
    assert_eq!(ConfigMap::from(btree), m);
    let collected: ConfigMap = [("x", "1")].into_iter().collect();
    assert_eq!(collected, ConfigMap::from([("x", "1")]));
    assert_eq!(collected["x"], "1");
}

#[test]
fn secret_keys_by_name() {
    for key in [
        "password",
        "db.PASSWORD",
        "aws.secret.key",
        "gcp.credentials.json",
        "sasl.jaas.config",
        "basic.auth.user.info",
        "ssl.keystore.key",
        "x.ssl.keystore.certificate.chain",
        "ssl.truststore.certificates",
    ] {
        assert!(ConfigMap::is_secret_key(key), "{key}");
    }
    for key in [
        "topic",
        "ssl.keystore.key.extra",
        "ssl.keystore.location",
        "user",
        "key.converter",
    ] {
        assert!(!ConfigMap::is_secret_key(key), "{key}");
    }
    let m = props(&[("db.password", "s3cret"), ("topic", "t")]);
    assert_eq!(
        format!("{m:?}"),
        r#"{"db.password": "[hidden]", "topic": "t"}"#
    );
}

#[test]
fn names_as_kafka() {
    let types = [
        (ConfigType::Boolean, "BOOLEAN"),
        (ConfigType::String, "STRING"),
        (ConfigType::Int, "INT"),
        (ConfigType::Short, "SHORT"),
        (ConfigType::Long, "LONG"),
        (ConfigType::Double, "DOUBLE"),
        (ConfigType::List, "LIST"),
        (ConfigType::Class, "CLASS"),
        (ConfigType::Password, "PASSWORD"),
    ];
    for (t, name) in types {
        assert_eq!(t.name(), name);
    }
    assert_eq!(Importance::High.name(), "HIGH");
    assert_eq!(Importance::Medium.name(), "MEDIUM");
    assert_eq!(Importance::Low.name(), "LOW");
    assert_eq!(Width::None.name(), "NONE");
    assert_eq!(Width::Short.name(), "SHORT");
    assert_eq!(Width::Medium.name(), "MEDIUM");
    assert_eq!(Width::Long.name(), "LONG");
}

#[test]
fn passwords_are_hidden() {
    let p = Password::new("s3cret");
    assert_eq!(p.value(), "s3cret");
    assert_eq!(p.to_string(), "[hidden]");
    assert_eq!(format!("{p:?}"), "[hidden]");
    assert_eq!(
        ConfigValue::Password(p).to_config_string().as_deref(),
        Some("[hidden]")
    );
}

#[test]
fn config_strings() {
    let cases = [
        (ConfigValue::Boolean(true), "true"),
        (ConfigValue::String("s".into()), "s"),
        (ConfigValue::Int(-3), "-3"),
        (ConfigValue::Short(7), "7"),
        (ConfigValue::Long(1 << 40), "1099511627776"),
        (ConfigValue::Double(1.5), "1.5"),
        (list(&["a", "b"]), "a,b"),
    ];
    for (v, s) in cases {
        assert_eq!(v.to_config_string().as_deref(), Some(s), "{v:?}");
    }
    assert_eq!(ConfigValue::Null.to_config_string(), None);
    assert_eq!(ConfigValue::from("x"), ConfigValue::String("x".into()));
    assert_eq!(
        ConfigValue::from(String::from("y")),
        ConfigValue::String("y".into())
    );
    assert_eq!(ConfigValue::from(true), ConfigValue::Boolean(true));
    assert_eq!(ConfigValue::from(3i16), ConfigValue::Short(3));
    assert_eq!(ConfigValue::from(3i32), ConfigValue::Int(3));
    assert_eq!(ConfigValue::from(3i64), ConfigValue::Long(3));
    assert_eq!(ConfigValue::from(0.5f64), ConfigValue::Double(0.5));
    assert_eq!(ConfigValue::from(vec!["a".to_string()]), list(&["a"]));
}

#[test]
fn parse_value_per_type() {
    let ok = |ty, raw: &str| parse_value(ty, raw).unwrap();
    assert_eq!(
        ok(ConfigType::Boolean, "False"),
        ConfigValue::Boolean(false)
    );
    assert_eq!(ok(ConfigType::Boolean, " true"), ConfigValue::Boolean(true));
    assert_eq!(
        parse_value(ConfigType::Boolean, "1").unwrap_err(),
        "Expected value to be either true or false"
    );
    assert_eq!(
        ok(ConfigType::Class, " a.B "),
        ConfigValue::String("a.B".into())
    );
    assert_eq!(
        ok(ConfigType::Password, " p w "),
        ConfigValue::Password(Password::new(" p w "))
    );
    assert_eq!(ok(ConfigType::Int, " -12 "), ConfigValue::Int(-12));
    assert_eq!(ok(ConfigType::Short, "300"), ConfigValue::Short(300));
    assert_eq!(ok(ConfigType::Long, "-5"), ConfigValue::Long(-5));
    assert_eq!(ok(ConfigType::Double, "2"), ConfigValue::Double(2.0));
    assert_eq!(ok(ConfigType::List, " a ,b"), list(&["a", "b"]));
    assert_eq!(
        parse_value(ConfigType::Int, "x").unwrap_err(),
        "Expected value to be a 32-bit integer, but it was 'x'"
    );
    assert_eq!(
        parse_value(ConfigType::Short, "1.5").unwrap_err(),
        "Expected value to be a 16-bit integer, but it was '1.5'"
    );
    assert_eq!(
        parse_value(ConfigType::Long, "").unwrap_err(),
        "Expected value to be a 64-bit integer, but it was ''"
    );
    assert_eq!(
        parse_value(ConfigType::Double, "one").unwrap_err(),
        "Expected value to be a double, but it was 'one'"
    );
}

#[test]
fn lists() {
    assert_eq!(parse_list("a"), ["a"]);
    assert_eq!(parse_list(" a , b "), ["a", "b"]);
    assert_eq!(parse_list("a,,b"), ["a", "", "b"]);
    assert!(parse_list("").is_empty());
    assert!(parse_list("   ").is_empty());
}

#[test]
fn range_validator() {
    let r = Range::between(1, 10);
    assert!(r.ensure_valid("k", &ConfigValue::Int(1)).is_ok());
    assert!(r.ensure_valid("k", &ConfigValue::Short(10)).is_ok());
    assert!(r.ensure_valid("k", &ConfigValue::Long(5)).is_ok());
    assert!(r.ensure_valid("k", &ConfigValue::Double(9.5)).is_ok());
    assert_eq!(
        r.ensure_valid("k", &ConfigValue::Short(0)).unwrap_err(),
        "Value must be at least 1"
    );
    assert_eq!(
        r.ensure_valid("k", &ConfigValue::Double(10.5)).unwrap_err(),
        "Value must be no more than 10"
    );
    assert_eq!(
        r.ensure_valid("k", &ConfigValue::Long(11)).unwrap_err(),
        "Value must be no more than 10"
    );
    assert_eq!(
        r.ensure_valid("k", &ConfigValue::Int(0)).unwrap_err(),
        "Value must be at least 1"
    );
    assert_eq!(
        r.ensure_valid("k", &ConfigValue::Null).unwrap_err(),
        "Value must be non-null"
    );
    assert!(r.ensure_valid("k", &"text".into()).is_ok());
    assert_eq!(r.describe(), "[1,...,10]");
    assert_eq!(Range::at_least(0).describe(), "[0,...]");
    assert!(Range::at_least(0)
        .ensure_valid("k", &ConfigValue::Long(i64::MAX))
        .is_ok());
    assert_eq!(Range::between(0.5, 2.25).describe(), "[0.5,...,2.25]");
    assert_eq!(
        Range::at_least(1.5)
            .ensure_valid("k", &ConfigValue::Double(1.0))
            .unwrap_err(),
        "Value must be at least 1.5"
    );
    let huge = Range::at_least(1e300).describe();
    assert!(huge.starts_with("[1000000000"), "{huge}");
    assert_eq!(huge.len(), "[,...]".len() + 301, "{huge}");
}

#[test]
fn valid_string_validators() {
    let v = ValidString::of(["none", "all"]);
    assert!(v.ensure_valid("k", &"none".into()).is_ok());
    assert!(v.ensure_valid("k", &ConfigValue::Null).is_ok());
    assert_eq!(
        v.ensure_valid("k", &"All".into()).unwrap_err(),
        "String must be one of: none, all"
    );
    assert_eq!(
        v.ensure_valid("k", &ConfigValue::Int(1)).unwrap_err(),
        "String must be one of: none, all (got a non-string value)"
    );
    assert_eq!(v.describe(), "[none, all]");
    assert_eq!(v.recommended(), ["none", "all"]);
    let ci = ValidString::case_insensitive(["none", "all"]);
    assert!(ci.ensure_valid("k", &"ALL".into()).is_ok());
    assert!(ci.ensure_valid("k", &"NoNe".into()).is_ok());
    assert_eq!(
        ci.ensure_valid("k", &"some".into()).unwrap_err(),
        "String must be one of (case insensitive): none, all"
    );
    let l = ValidList::of(["a", "b"]);
    assert!(l.ensure_valid("k", &list(&["a", "b", "a"])).is_ok());
    assert!(l.ensure_valid("k", &list(&[])).is_ok());
    assert!(l.ensure_valid("k", &ConfigValue::Null).is_ok());
    assert_eq!(
        l.ensure_valid("k", &list(&["a", "c"])).unwrap_err(),
        "Invalid value c; list elements must be one of: a, b"
    );
    assert_eq!(l.describe(), "[a, b]");
    assert_eq!(l.recommended(), ["a", "b"]);
}

#[test]
fn other_validators() {
    let ne = NonEmptyString::default();
    assert!(ne.ensure_valid("k", &"x".into()).is_ok());
    assert!(ne.ensure_valid("k", &"a\u{1}".into()).is_ok());
    assert_eq!(
        ne.ensure_valid("k", &"".into()).unwrap_err(),
        "String must be non-empty"
    );
    assert_eq!(
        ne.ensure_valid("k", &ConfigValue::Null).unwrap_err(),
        "String must be non-empty"
    );
    assert!(ne
        .ensure_valid("k", &ConfigValue::Password(Password::new("")))
        .is_err());
    assert!(ne
        .ensure_valid("k", &ConfigValue::Password(Password::new("p")))
        .is_ok());
    assert_eq!(ne.describe(), "non-empty string");
    let nc = NonEmptyString {
        without_control_chars: true,
    };
    assert_eq!(
        nc.ensure_valid("k", &"a\nb".into()).unwrap_err(),
        "String must not contain control characters"
    );
    assert!(nc.ensure_valid("k", &"ab".into()).is_ok());
    assert_eq!(
        NonNull.ensure_valid("k", &ConfigValue::Null).unwrap_err(),
        "Entry must be non null"
    );
    assert!(NonNull.ensure_valid("k", &ConfigValue::Int(0)).is_ok());
    assert_eq!(NonNull.describe(), "non-null value");
    let size = ListSize { min: 1, max: 2 };
    assert!(size.ensure_valid("k", &list(&["a"])).is_ok());
    assert!(size.ensure_valid("k", &list(&["a", "b"])).is_ok());
    assert_eq!(
        size.ensure_valid("k", &list(&[])).unwrap_err(),
        "List must have at least 1 element(s)"
    );
    assert_eq!(
        size.ensure_valid("k", &list(&["a", "b", "c"])).unwrap_err(),
        "List must have no more than 2 element(s)"
    );
    assert!(size.ensure_valid("k", &ConfigValue::Int(9)).is_ok());
    assert_eq!(size.describe(), "List of size 1..2");
}

#[test]
fn composite_and_lambda_validators() {
    let even = Lambda::new("an even number", |name: &str, v: &ConfigValue| match v {
        ConfigValue::Int(i) if i % 2 == 0 => Ok(()),
        _ => Err(format!("{name} must be even")),
    });
    assert!(even.ensure_valid("n", &ConfigValue::Int(4)).is_ok());
    assert_eq!(
        even.ensure_valid("n", &ConfigValue::Int(3)).unwrap_err(),
        "n must be even"
    );
    assert_eq!(even.describe(), "an even number");
    let c = Composite(vec![
        Arc::new(Range::at_least(0)),
        Arc::new(NonNull),
        Arc::new(ValidList::of(["x"])),
        Arc::new(even),
    ]);
    assert!(c.ensure_valid("n", &ConfigValue::Int(2)).is_ok());
    assert_eq!(
        c.ensure_valid("n", &ConfigValue::Int(-2)).unwrap_err(),
        "Value must be at least 0"
    );
    assert_eq!(
        c.ensure_valid("n", &ConfigValue::Int(3)).unwrap_err(),
        "n must be even"
    );
    assert_eq!(c.describe(), "[0,...], non-null value, [x], an even number");
    assert_eq!(c.recommended(), ["x"]);
    struct Plain;
    impl Validator for Plain {
        fn ensure_valid(&self, _: &str, _: &ConfigValue) -> Result<(), String> {
            Err("never".into())
        }
    }
    assert_eq!(Plain.describe(), "");
    assert!(Plain.recommended().is_empty());
    let with_plain = Composite(vec![Arc::new(Plain), Arc::new(NonNull)]);
    assert_eq!(with_plain.describe(), "non-null value");
    assert_eq!(
        with_plain
            .ensure_valid("n", &ConfigValue::Int(1))
            .unwrap_err(),
        "never"
    );
}

#[test]
fn key_builder_and_parse() {
    let key = ConfigKey::new("batch.size", ConfigType::Int)
        .default(100)
        .importance(Importance::High)
        .doc("Rows per batch.")
        .validator(Range::at_least(1))
        .group("Tuning", 2)
        .width(Width::Short)
        .display_name("Batch size")
        .dependents(["a", "b"]);
    assert_eq!(key.name, "batch.size");
    assert_eq!(key.ty, ConfigType::Int);
    assert_eq!(key.default, Some(ConfigValue::Int(100)));
    assert_eq!(key.importance, Importance::High);
    assert_eq!(key.documentation, "Rows per batch.");
    assert_eq!(key.group.as_deref(), Some("Tuning"));
    assert_eq!(key.order_in_group, 2);
    assert_eq!(key.width, Width::Short);
    assert_eq!(key.display_name, "Batch size");
    assert_eq!(key.dependents, ["a", "b"]);
    assert!(!key.is_required());
    assert!(key.validator.is_some());
    let debug = format!("{key:?}");
    assert!(
        debug.contains("batch.size") && debug.contains("High"),
        "{debug}"
    );

    assert_eq!(key.parse(None).unwrap(), ConfigValue::Int(100));
    assert_eq!(key.parse(Some("7")).unwrap(), ConfigValue::Int(7));
    assert_eq!(
        key.parse(Some("0")).unwrap_err(),
        "Invalid value 0 for configuration batch.size: Value must be at least 1"
    );
    assert_eq!(
        key.parse(Some("many")).unwrap_err(),
        "Invalid value many for configuration batch.size: Expected value to be a 32-bit integer, but it was 'many'"
    );

    let fresh = ConfigKey::new("topic", ConfigType::String);
    assert!(fresh.is_required());
    assert_eq!(fresh.display_name, "topic");
    assert_eq!(fresh.importance, Importance::Medium);
    assert_eq!(fresh.order_in_group, -1);
    assert_eq!(fresh.width, Width::None);
    assert!(fresh.validator.is_none());
    assert_eq!(
        fresh.parse(None).unwrap_err(),
        "Missing required configuration \"topic\" which has no default value."
    );
    let optional = ConfigKey::new("o", ConfigType::String).optional();
    assert!(!optional.is_required());
    assert_eq!(optional.parse(None).unwrap(), ConfigValue::Null);
    let checked_null = ConfigKey::new("o", ConfigType::Int)
        .optional()
        .validator(NonNull);
    assert_eq!(
        checked_null.parse(None).unwrap_err(),
        "Invalid value null for configuration o: Entry must be non null"
    );
    let secret = ConfigKey::new("pw", ConfigType::Password).validator(NonEmptyString::default());
    assert_eq!(
        secret.parse(Some("")).unwrap_err(),
        "Invalid value [hidden] for configuration pw: String must be non-empty"
    );
    let bool_key = ConfigKey::new("flag", ConfigType::Boolean);
    assert_eq!(
        bool_key.parse(Some("maybe")).unwrap_err(),
        "Invalid value maybe for configuration flag: Expected value to be either true or false"
    );
}

fn def() -> ConfigDef {
    ConfigDef::new()
        .define(ConfigKey::new("topic", ConfigType::String))
        .define(
            ConfigKey::new("batch.size", ConfigType::Int)
                .default(100)
                .validator(Range::at_least(1)),
        )
        .define(
            ConfigKey::new("mode", ConfigType::String)
                .default("none")
                .validator(ValidString::of(["none", "all"])),
        )
        .define(ConfigKey::new("pw", ConfigType::Password).optional())
        .define(ConfigKey::new("flag", ConfigType::Boolean).default(false))
        .define(ConfigKey::new("short", ConfigType::Short).default(3i16))
        .define(ConfigKey::new("long", ConfigType::Long).default(4i64))
        .define(ConfigKey::new("ratio", ConfigType::Double).default(0.5))
        .define(ConfigKey::new("list", ConfigType::List).default(vec!["a".to_string()]))
}

#[test]
fn definitions() {
    let d = def();
    assert_eq!(d.keys().len(), 9);
    assert_eq!(d.keys()[0].name, "topic");
    assert_eq!(d.key("mode").unwrap().ty, ConfigType::String);
    assert!(d.key("nope").is_none());
    assert_eq!(d.names().len(), 9);
    assert!(d.names().contains("ratio"));
    // Redefining replaces (and moves to the end).
    let d = d.define(ConfigKey::new("topic", ConfigType::Int));
    assert_eq!(d.keys().len(), 9);
    assert_eq!(d.keys()[8].name, "topic");
    assert_eq!(d.key("topic").unwrap().ty, ConfigType::Int);
    assert_eq!(d.keys()[0].name, "batch.size");
    let merged = ConfigDef::new()
        .define(ConfigKey::new("own", ConfigType::String))
        .define(ConfigKey::new("mode", ConfigType::Int))
        .merge(&def());
    assert_eq!(merged.keys().len(), 10);
    assert_eq!(merged.key("mode").unwrap().ty, ConfigType::String);
    assert!(merged.key("own").is_some());
}

#[test]
fn parse_types_everything_and_keeps_the_rest() {
    let original = props(&[
        ("topic", " orders "),
        ("pw", "hunter2"),
        ("flag", "TRUE"),
        ("short", "9"),
        ("long", "10000000000"),
        ("ratio", "0.25"),
        ("list", "x, y"),
        ("extra.thing", "1"),
        ("extra.other", "2"),
    ]);
    let cfg = def().parse(&original).unwrap();
    assert_eq!(cfg.get_string("topic"), Some("orders"));
    assert_eq!(
        cfg.get("topic"),
        Some(&ConfigValue::String("orders".into()))
    );
    assert_eq!(cfg.get_int("batch.size"), Some(100));
    assert_eq!(cfg.get_long("batch.size"), Some(100));
    assert_eq!(cfg.get_string("mode"), Some("none"));
    assert_eq!(cfg.get_password("pw").map(Password::value), Some("hunter2"));
    assert_eq!(cfg.get_bool("flag"), Some(true));
    assert_eq!(cfg.get_short("short"), Some(9));
    assert_eq!(cfg.get_long("long"), Some(10_000_000_000));
    assert_eq!(cfg.get_double("ratio"), Some(0.25));
    assert_eq!(
        cfg.get_list("list").map(<[String]>::to_vec),
        Some(vec!["x".to_string(), "y".to_string()])
    );
    // Wrong-type getters and unknown keys give None.
    assert_eq!(cfg.get_string("flag"), None);
    assert_eq!(cfg.get_bool("topic"), None);
    assert_eq!(cfg.get_int("short"), None);
    assert_eq!(cfg.get_short("batch.size"), None);
    assert_eq!(cfg.get_long("ratio"), None);
    assert_eq!(cfg.get_double("long"), None);
    assert_eq!(cfg.get_list("topic"), None);
    assert!(cfg.get_password("topic").is_none());
    assert!(cfg.get("nope").is_none());
    assert_eq!(cfg.get_int("nope"), None);
    assert_eq!(cfg.unknown(), ["extra.other", "extra.thing"]);
    assert_eq!(cfg.originals(), &original);
    assert_eq!(
        cfg.originals_with_prefix("extra."),
        props(&[("other", "2"), ("thing", "1")])
    );
    let debug = format!("{cfg:?}");
    assert!(!debug.contains("hunter2"), "{debug}");
    assert!(debug.contains("orders"), "{debug}");
    assert!(debug.contains("extra.thing"), "{debug}");
}

#[test]
fn parse_reports_every_problem_under_the_first_key() {
    let e = def()
        .parse(&props(&[("batch.size", "0"), ("mode", "some")]))
        .unwrap_err();
    assert_eq!(
        e.kind(),
        &ErrorKind::Config {
            key: "topic".into()
        }
    );
    assert_eq!(
        e.to_string(),
        "Missing required configuration \"topic\" which has no default value.; \
         Invalid value 0 for configuration batch.size: Value must be at least 1; \
         Invalid value some for configuration mode: String must be one of: none, all"
    );
}

#[test]
fn validate_reports_each_key() {
    let report = def().validate(&props(&[
        ("batch.size", "0"),
        ("pw", "hunter2"),
        ("zzz", "1"),
    ]));
    assert_eq!(report.len(), 9);
    let topic = &report[0];
    assert_eq!(topic.name, "topic");
    assert_eq!(topic.value, None);
    assert_eq!(
        topic.errors,
        ["Missing required configuration \"topic\" which has no default value."]
    );
    assert!(topic.visible);
    let batch = &report[1];
    assert_eq!(batch.value.as_deref(), Some("0"));
    assert_eq!(batch.errors.len(), 1);
    let mode = &report[2];
    assert_eq!(mode.value.as_deref(), Some("none"));
    assert!(mode.errors.is_empty());
    assert_eq!(mode.recommended_values, ["none", "all"]);
    let pw = &report[3];
    assert_eq!(pw.value.as_deref(), Some("[hidden]"));
    assert!(pw.recommended_values.is_empty());
    assert_eq!(report[8].value.as_deref(), Some("a"));
    let fresh = ConfigReport::new("k");
    assert_eq!(fresh.name, "k");
    assert!(fresh.visible && fresh.errors.is_empty() && fresh.value.is_none());
    assert_eq!(
        def().unknown_keys(&props(&[("zzz", "1"), ("topic", "t"), ("aaa", "2")])),
        ["aaa", "zzz"]
    );
}

#[test]
fn prefixes() {
    let m = props(&[
        ("a", "0"),
        ("a.x", "1"),
        ("a.y", "2"),
        ("ab", "3"),
        ("b.x", "4"),
    ]);
    assert_eq!(with_prefix(&m, "a."), props(&[("x", "1"), ("y", "2")]));
    assert_eq!(with_prefix(&m, "c."), ConfigMap::new());
    assert_eq!(with_prefix(&m, ""), m);
}
