//! Properties of the connect-api data model that hold for every schema and
//! value the strategies generate: validation accepts matching values and
//! rejects mistyped ones, projection onto the same schema is the identity,
//! and `Values` rendering reads back for the primitives that round-trip.

use connect_api::logical;
use connect_api::values::{convert_to_float64, convert_to_string, parse_string};
use connect_api::{Schema, SchemaProjector, Value};
use connect_testkit::strategies::{
    mutated, schema_and_value, sink_record, source_record, value_for,
};
use proptest::prelude::*;

proptest! {
    #[test]
    fn generated_values_validate((schema, value) in schema_and_value()) {
        prop_assert!(
            schema.validate_value(&value).is_ok(),
            "{:?} rejected {:?}: {}",
            schema,
            value,
            schema.validate_value(&value).unwrap_err()
        );
    }

    #[test]
    fn mutated_values_do_not_validate(
        (schema, _, bad) in schema_and_value().prop_flat_map(|(s, v)| {
            let bad = mutated(&s, &v);
            (Just(s), Just(v), bad)
        })
    ) {
        prop_assert!(schema.validate_value(&bad).is_err(), "{:?} accepted {:?}", schema, bad);
    }

    #[test]
    fn projecting_onto_the_same_schema_is_identity((schema, value) in schema_and_value()) {
        let projected = SchemaProjector::project(&schema, &value, &schema).unwrap();
        prop_assert_eq!(projected, value);
    }

    #[test]
    fn projecting_onto_an_equal_copy_is_identity((schema, value) in schema_and_value()) {
        // A structurally equal schema that is not the same allocation.
        let copy = schema.to_builder().build().unwrap();
        prop_assert!(!copy.ptr_eq(&schema));
        let projected = SchemaProjector::project(&schema, &value, &copy).unwrap();
        prop_assert_eq!(projected, value);
    }

    /// A target that differs only in its doc takes the field-by-field path
    /// rather than the equal-schema shortcut; the data must not change
    /// (unset defaulted fields come back set to their default, which
    /// renders the same).
    #[test]
    fn projecting_onto_a_redocumented_copy_keeps_the_data((schema, value) in schema_and_value()) {
        prop_assume!(schema.doc().is_none());
        let target = schema.to_builder().doc("another doc").build().unwrap();
        let projected = SchemaProjector::project(&schema, &value, &target).unwrap();
        prop_assert!(target.validate_value(&projected).is_ok());
        prop_assert_eq!(convert_to_string(&projected), convert_to_string(&value));
    }

    #[test]
    fn booleans_round_trip(b in any::<bool>()) {
        let sv = parse_string(&convert_to_string(&Value::Boolean(b)));
        prop_assert_eq!(sv.schema, Some(Schema::boolean()));
        prop_assert_eq!(sv.value, Value::Boolean(b));
    }

    /// Integers keep their value and come back as the smallest type that
    /// holds it (Kafka's rule): `INT64 5` reads back as `INT8 5`.
    #[test]
    fn integers_round_trip_to_the_smallest_type(
        v in prop_oneof![
            any::<i8>().prop_map(Value::Int8),
            any::<i16>().prop_map(Value::Int16),
            any::<i32>().prop_map(Value::Int32),
            any::<i64>().prop_map(Value::Int64),
        ]
    ) {
        let n = v.as_i64().unwrap();
        let back = parse_string(&convert_to_string(&v)).value;
        prop_assert_eq!(back.as_i64(), Some(n));
        let smallest = if i8::try_from(n).is_ok() {
            "INT8"
        } else if i16::try_from(n).is_ok() {
            "INT16"
        } else if i32::try_from(n).is_ok() {
            "INT32"
        } else {
            "INT64"
        };
        prop_assert_eq!(back.type_name(), smallest);
    }

    /// Finite FLOAT32 values read back as the same number. Java's
    /// rendering decides the type, as in Kafka: `3.0` has a fraction and
    /// reads back as FLOAT32, while `3.4608256E7` is a BigDecimal of scale
    /// 0, an integer. NaN and infinities do not: they read back as STRING.
    #[test]
    fn finite_float32_round_trips(f in any::<f32>().prop_filter("finite", |f| f.is_finite())) {
        let text = convert_to_string(&Value::Float32(f));
        let sv = parse_string(&text);
        if let Value::Float32(back) = sv.value {
            prop_assert_eq!(back.to_bits(), f.to_bits(), "{}", text);
        } else {
            let back = convert_to_float64(None, &sv.value).unwrap();
            prop_assert_eq!(back, Some(f64::from(f)), "{}", text);
        }
    }

    /// FLOAT64 is lossy, as in Kafka: a value within the float range reads
    /// back as the nearest FLOAT32; only values beyond it stay FLOAT64
    /// (and renderings of scale 0 are integers, as above).
    #[test]
    fn float64_reads_back_as_float32_when_in_float_range(d in any::<f64>().prop_filter("finite", |d| d.is_finite())) {
        let text = convert_to_string(&Value::Float64(d));
        match parse_string(&text).value {
            Value::Float32(back) => prop_assert_eq!(back, d as f32, "{}", text),
            Value::Float64(back) => {
                prop_assert!(!(d as f32).is_finite(), "{}", text);
                prop_assert_eq!(back, d);
            }
            other => prop_assert_eq!(convert_to_float64(None, &other).unwrap(), Some(d), "{}", text),
        }
    }

    #[test]
    fn non_finite_floats_read_back_as_strings(f in prop_oneof![Just(f64::NAN), Just(f64::INFINITY), Just(f64::NEG_INFINITY)]) {
        let text = convert_to_string(&Value::Float64(f));
        prop_assert_eq!(parse_string(&text).value, Value::String(text));
    }

    /// Time always round-trips; Date and Timestamp do for years 0000-9999
    /// (the ISO patterns have four-digit years).
    #[test]
    fn temporal_values_round_trip(
        (schema, value) in prop_oneof![
            (-719_528i32..=2_932_896).prop_map(|d| (logical::date_schema(), Value::Date(d))),
            (0..86_400_000i32).prop_map(|t| (logical::time_schema(), Value::Time(t))),
            (-62_167_219_200_000i64..=253_402_300_799_999)
                .prop_map(|t| (logical::timestamp_schema(), Value::Timestamp(t))),
        ]
    ) {
        let sv = parse_string(&convert_to_string(&value));
        prop_assert_eq!(sv.schema, Some(schema));
        prop_assert_eq!(sv.value, value);
    }

    /// Strings are not typed on the way back ("5" is a number), but a
    /// string that does not parse as anything else comes back unchanged.
    #[test]
    fn strings_read_back_as_themselves_or_as_a_typed_value(s in "\\PC{0,24}") {
        let sv = parse_string(&convert_to_string(&Value::String(s.clone())));
        if sv.schema == Some(Schema::string()) {
            prop_assert_eq!(sv.value, Value::String(s));
        } else if let Some(schema) = &sv.schema {
            prop_assert!(schema.validate_value(&sv.value).is_ok());
        }
    }

    #[test]
    fn arrays_of_one_integer_type_round_trip(items in proptest::collection::vec(any::<i8>(), 1..6)) {
        let v = Value::Array(items.iter().copied().map(Value::Int8).collect());
        let sv = parse_string(&convert_to_string(&v));
        prop_assert_eq!(sv.value, v);
        let schema = sv.schema.unwrap();
        prop_assert_eq!(schema.value_schema(), Some(&Schema::int8()));
    }

    #[test]
    fn generated_records_carry_valid_data(r in source_record(), s in sink_record()) {
        for rec in [&r.record, &s.record] {
            if let Some(schema) = &rec.value_schema {
                prop_assert!(schema.validate_value(&rec.value).is_ok());
            }
            if let Some(schema) = &rec.key_schema {
                prop_assert!(schema.validate_value(&rec.key).is_ok());
            }
        }
        prop_assert_eq!(s.record.kafka_partition, Some(s.original_kafka_partition));
        prop_assert!(r.source_partition.contains_key("filename"));
    }
}

#[test]
fn optional_schemas_sometimes_generate_null() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let strategy = value_for(&Schema::optional_int32());
    let nulls = (0..200)
        .filter(|_| strategy.new_tree(&mut runner).unwrap().current().is_null())
        .count();
    assert!(nulls > 0 && nulls < 200, "{nulls} nulls in 200");
}
