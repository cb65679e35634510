//! The SMT runner, the contract check on a deliberately broken SMT, and
//! the record diff messages.

use connect_api::config::{ConfigDef, ConfigKey, ConfigType};
use connect_api::transform::{Configurable, Transformation, Verdict};
use connect_api::{
    ConfigMap, ConnectError, ConnectRecord, Record, Result, Schema, SchemaBuilder, SinkRecord,
    Struct, Value,
};
use connect_testkit::contract::{check_smt_contract, EmptyConfig, SmtContract, Tombstones};
use connect_testkit::diff::diff_records;
use connect_testkit::{assert_records_eq, assert_smt_contract, config, SmtRunner};
use connect_transforms::insert_header::InsertHeader;

/// Breaks every rule: an undocumented key, a required key it does not
/// report as a config error, headers wiped, tombstones and schemaless
/// input panicking.
#[derive(Default)]
struct Careless {
    tag: String,
}

impl Configurable for Careless {
    fn configure(&mut self, config: &ConfigMap) -> Result<()> {
        self.tag = config
            .get("tag")
            .cloned()
            .ok_or_else(|| ConnectError::other("no tag"))?;
        Ok(())
    }

    fn config_def(&self) -> ConfigDef {
        ConfigDef::new().define(ConfigKey::new("tag", ConfigType::String))
    }
}

impl<R: ConnectRecord> Transformation<R> for Careless {
    fn transform(&mut self, record: &mut R) -> Result<Verdict> {
        let r = record.record_mut();
        r.headers.clear();
        let s = r.value.as_struct().expect("a struct value");
        let _ = s.schema();
        Ok(Verdict::Keep)
    }
}

#[test]
fn the_contract_check_names_every_broken_rule() {
    let contract = SmtContract::new("Careless", config(&[("tag", "x")]))
        .empty_config(EmptyConfig::ConfigError)
        .tombstones(Tombstones::Unchanged);
    let found: Vec<String> = check_smt_contract(Careless::default, &contract)
        .iter()
        .filter(|v| v.record_kind == "sink")
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        found,
        [
            "[sink records] config docs: config key 'tag' has no documentation",
            "[sink records] empty config: configure with no config gave a Other error, not a config error naming the key: no tag",
            "[sink records] apply: tombstone (no value schema): apply panicked: a struct value",
            "[sink records] apply: tombstone (optional value schema): apply panicked: a struct value",
            "[sink records] headers: sample: headers testkit.probe=first, testkit.count=7, testkit.probe=second became []",
            "[sink records] apply: schemaless sample: apply panicked: a struct value",
        ]
    );
}

#[test]
fn a_well_behaved_smt_passes() {
    assert_smt_contract(
        InsertHeader::new,
        &SmtContract::new(
            "InsertHeader",
            config(&[("header", "app"), ("value.literal", "kit")]),
        )
        .empty_config(EmptyConfig::ConfigError)
        .tombstones(Tombstones::Kept),
    );
}

#[test]
fn one_transform_and_a_chain_run_on_records() {
    let mut one = SmtRunner::<SinkRecord>::transform(
        InsertHeader::new(),
        &config(&[("header", "app"), ("value.literal", "kit")]),
    )
    .unwrap();
    let out = one
        .apply_all([
            Record::new("t", None, Value::from("a")),
            Record::new("t", None, Value::from("b")),
        ])
        .unwrap();
    assert_eq!(out.len(), 2);
    assert_eq!(out[1].kafka_offset, 1, "offsets count up");
    assert_eq!(
        out[1].record.headers.last_with_name("app").unwrap().value(),
        &Value::from("kit")
    );

    let mut chain = SmtRunner::<SinkRecord>::chain(&config(&[
        ("transforms", "drop"),
        ("transforms.drop.type", "Filter"),
        ("transforms.drop.predicate", "tomb"),
        ("predicates", "tomb"),
        ("predicates.tomb.type", "RecordIsTombstone"),
    ]))
    .unwrap();
    let kept = chain
        .apply_all([
            Record::new("t", None, Value::Null),
            Record::new("t", None, Value::from("x")),
        ])
        .unwrap();
    assert_eq!(kept.len(), 1);
    assert_eq!(kept[0].record.value, Value::from("x"));

    let err = SmtRunner::<SinkRecord>::chain(&config(&[("transforms", "x")])).unwrap_err();
    assert!(err.to_string().contains("transforms.x.type"), "{err}");
}

fn order(zip: Value) -> Record {
    let address = SchemaBuilder::struct_()
        .field("zip", Schema::optional_string())
        .build()
        .unwrap();
    let schema = SchemaBuilder::struct_()
        .name("Order")
        .field("id", Schema::int64())
        .field("address", address.clone())
        .build()
        .unwrap();
    let mut a = Struct::new(address).unwrap();
    a.put("zip", zip).unwrap();
    let mut s = Struct::new(schema.clone()).unwrap();
    s.put("id", 1i64).unwrap().put("address", a).unwrap();
    Record::new("orders", Some(schema), Value::Struct(s))
}

#[test]
fn the_diff_names_the_first_differing_record_and_field_path() {
    let expected = vec![order(Value::from("1")), order(Value::from("69001"))];
    let mut actual = vec![order(Value::from("1")), order(Value::from("69002"))];
    actual[1].headers.add_string("trace", "abc");
    assert_eq!(
        diff_records(&actual, &expected).unwrap(),
        "records differ at index 1 (2 actual, 2 expected):\n  \
         value.address.zip: expected \"69001\" (STRING), got \"69002\" (STRING)\n  \
         headers: expected [], got [\"trace\"]"
    );
    let short = &expected[..1];
    assert_eq!(
        diff_records(&actual[..1], short),
        None,
        "equal records give no diff"
    );
    assert_eq!(
        diff_records(&expected[..], &expected[..1]).unwrap(),
        "record counts differ (2 actual, 1 expected); first unexpected record at index 1: \
         topic \"orders\", key null, value {\"id\":1,\"address\":{\"zip\":\"69001\"}} (STRUCT)"
    );
}

#[test]
fn the_diff_shows_schema_and_type_differences() {
    let a = [Record::new("t", Some(Schema::int32()), Value::Int32(5))];
    let e = [Record::new(
        "t",
        Some(Schema::optional_string()),
        Value::from("5"),
    )];
    assert_eq!(
        diff_records(&a, &e).unwrap(),
        "records differ at index 0 (1 actual, 1 expected):\n  \
         value schema: expected STRING?, got INT32\n  \
         value: expected \"5\" (STRING), got 5 (INT32)"
    );
}

#[test]
#[should_panic(expected = "value: expected \"b\" (STRING), got \"a\" (STRING)")]
fn assert_records_eq_panics_with_the_diff() {
    let a = [Record::new("t", None, Value::from("a"))];
    assert_records_eq!(a, [Record::new("t", None, Value::from("b"))]);
}

#[test]
fn the_diff_names_map_keys_and_array_indexes() {
    let a = [Record::new(
        "t",
        None,
        Value::string_map([(
            "tags",
            Value::Array(vec![Value::from("x"), Value::Int32(1)]),
        )]),
    )];
    let e = [Record::new(
        "t",
        None,
        Value::string_map([(
            "tags",
            Value::Array(vec![Value::from("x"), Value::Int32(2)]),
        )]),
    )];
    assert_eq!(
        diff_records(&a, &e).unwrap(),
        "records differ at index 0 (1 actual, 1 expected):\n  \
         value[tags][1]: expected 2 (INT32), got 1 (INT32)"
    );
}

mod properties {
    use connect_testkit::diff::{diff_record, diff_records};
    use connect_testkit::strategies::{sink_record, source_record};
    use proptest::prelude::*;

    proptest! {
        /// No diff exactly when the records are equal, whatever their shape.
        #[test]
        fn sink_records_differ_exactly_when_unequal(a in sink_record(), b in sink_record()) {
            prop_assert!(diff_records(std::slice::from_ref(&a), std::slice::from_ref(&a)).is_none());
            prop_assert_eq!(diff_record(&a, &b).is_empty(), a == b);
        }

        #[test]
        fn source_records_differ_exactly_when_unequal(a in source_record(), b in source_record()) {
            prop_assert!(diff_records(std::slice::from_ref(&a), std::slice::from_ref(&a)).is_none());
            prop_assert_eq!(diff_record(&a, &b).is_empty(), a == b);
        }
    }
}

/// Replaces every value with INT8 1 but keeps the value schema.
struct Liar;

impl Configurable for Liar {}

impl<R: ConnectRecord> Transformation<R> for Liar {
    fn transform(&mut self, record: &mut R) -> Result<Verdict> {
        record.record_mut().value = Value::Int8(1);
        Ok(Verdict::Keep)
    }
}

#[test]
fn generated_records_catch_panics_and_schema_mismatches() {
    use connect_testkit::contract::check_smt_on_generated_for;

    let panics = check_smt_on_generated_for::<SinkRecord>(
        &|| Box::new(Careless::default()),
        &config(&[("tag", "x")]),
        64,
    );
    assert_eq!(panics.len(), 5, "capped at five");
    assert!(
        panics
            .iter()
            .all(|v| v.message.contains("apply panicked: a struct value")),
        "{panics:?}"
    );

    let lies = check_smt_on_generated_for::<SinkRecord>(&|| Box::new(Liar), &ConfigMap::new(), 64);
    assert!(!lies.is_empty());
    assert!(
        lies.iter().all(|v| v
            .message
            .contains("the output value does not match its schema")),
        "{lies:?}"
    );
}
