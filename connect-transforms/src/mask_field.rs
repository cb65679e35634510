//! MaskField: replace the values of some fields with a "zero" of their type,
//! or with a fixed replacement.
//!
//! Kafka classes `org.apache.kafka.connect.transforms.MaskField$Key` and
//! `org.apache.kafka.connect.transforms.MaskField$Value`.
//!
//! | key | default | meaning |
//! |---|---|---|
//! | `fields` | required | names of the fields to mask |
//! | `replacement` | unset | text to put in place of the value, parsed to the field's type (numbers, decimals, strings) |
//! | `replace.null.with.default` | `true` | null struct fields are read as their defaults |
//!
//! Without `replacement` a value becomes its type's zero: `false`, `0`,
//! `0.0`, `""`, an empty array or map, a Decimal 0 of the same scale, and
//! Date/Time/Timestamp 0 (the epoch). BYTES and STRUCT values cannot be
//! masked, and `replacement` applies only to numbers, decimals and strings:
//! both are data errors naming the field. Null field values stay null.
//!
//! The schema is unchanged. Schemaless maps get listed keys that are absent
//! added with a null value, as in Kafka. A null operand (a tombstone or a
//! null struct) is a data error, as in Kafka.

use connect_api::config::validators::Lambda;
use connect_api::config::{ConfigKey, ConfigType, ConfigValue, Importance};
use connect_api::transform::{Configurable, Transformation, Verdict};
use connect_api::{
    values, ConfigDef, ConfigMap, ConnectError, ConnectRecord, Decimal, Result, Value,
};

use crate::util::{
    fill_defaults, into_map, into_struct, replace_null_with_default_key, REPLACE_NULL_WITH_DEFAULT,
};
use crate::util::{SchemaCache, Side};

/// Kafka's class name, without the `$Key` / `$Value` suffix.
pub const CLASS: &str = "org.apache.kafka.connect.transforms.MaskField";

const PURPOSE: &str = "mask fields";
const FIELDS: &str = "fields";
const REPLACEMENT: &str = "replacement";

/// Scale differences beyond this are refused rather than computed (a
/// replacement rescaled by 10^huge would allocate without bound).
const MAX_RESCALE: u32 = 1000;

/// Masks fields; see the [module docs](self).
///
/// ```
/// use connect_api::transform::{Configurable, Transformation};
/// use connect_api::{Record, SinkRecord, Value};
/// use connect_transforms::mask_field::MaskField;
/// use connect_transforms::util::Side;
///
/// let mut smt = MaskField::new(Side::Value);
/// let cfg = connect_api::ConfigMap::from([("fields", "ssn,age")]);
/// smt.configure(&cfg).unwrap();
///
/// let value = Value::string_map([("ssn", Value::from("123-45-6789")), ("age", Value::Int32(42))]);
/// let out = smt.apply(SinkRecord::new(Record::new("people", None, value), 0, 0)).unwrap().unwrap();
/// assert_eq!(out.record.value.map_get("ssn"), Some(&Value::from("")));
/// assert_eq!(out.record.value.map_get("age"), Some(&Value::Int32(0)));
/// ```
#[derive(Debug)]
pub struct MaskField {
    side: Side,
    fields: Vec<String>,
    replacement: Option<Replacement>,
    replace_null_with_default: bool,
    /// Per input schema, the indices of the masked fields.
    slots: SchemaCache<Vec<usize>>,
}

/// The replacement text, converted once into every type it can stand for.
///
/// Numbers follow Kafka's `Values.convertTo*` (what MaskField uses): numeric
/// text of any form, truncated toward zero for integer fields, and an error
/// when it does not parse or does not fit. Decimals parse as
/// `new BigDecimal(text)`.
#[derive(Debug)]
struct Replacement {
    text: Value,
    int8: Option<i8>,
    int16: Option<i16>,
    int32: Option<i32>,
    int64: Option<i64>,
    float32: Option<f32>,
    float64: Option<f64>,
    decimal: Option<Decimal>,
}

impl Replacement {
    fn new(text: &str) -> Replacement {
        let v = Value::String(text.to_string());
        Replacement {
            int8: values::convert_to_int8(None, &v).ok().flatten(),
            int16: values::convert_to_int16(None, &v).ok().flatten(),
            int32: values::convert_to_int32(None, &v).ok().flatten(),
            int64: values::convert_to_int64(None, &v).ok().flatten(),
            float32: values::convert_to_float32(None, &v).ok().flatten(),
            float64: values::convert_to_float64(None, &v).ok().flatten(),
            decimal: text.parse().ok(),
            text: v,
        }
    }

    /// The converted value, or the converter's own error (computed again:
    /// failures are rare and errors are not cloneable).
    fn converted<T>(
        &self,
        parsed: Option<T>,
        wrap: fn(T) -> Value,
        convert: fn(Option<&connect_api::Schema>, &Value) -> Result<Option<T>>,
    ) -> Result<Value> {
        match parsed {
            Some(v) => Ok(wrap(v)),
            None => Err(match convert(None, &self.text) {
                Err(e) => e,
                Ok(_) => ConnectError::data(format!(
                    "Unable to convert {} (String) to number",
                    self.text
                )),
            }),
        }
    }

    fn for_value(&self, value: &Value) -> Result<Value> {
        match value {
            Value::Int8(_) => self.converted(self.int8, Value::Int8, values::convert_to_int8),
            Value::Int16(_) => self.converted(self.int16, Value::Int16, values::convert_to_int16),
            Value::Int32(_) => self.converted(self.int32, Value::Int32, values::convert_to_int32),
            Value::Int64(_) => self.converted(self.int64, Value::Int64, values::convert_to_int64),
            Value::Float32(_) => {
                self.converted(self.float32, Value::Float32, values::convert_to_float32)
            }
            Value::Float64(_) => {
                self.converted(self.float64, Value::Float64, values::convert_to_float64)
            }
            Value::String(_) => Ok(self.text.clone()),
            Value::Decimal(d) => {
                let parsed = self.decimal.as_ref().ok_or_else(|| {
                    ConnectError::data(format!(
                        "Unable to convert {} (String) to number",
                        self.text
                    ))
                })?;
                Ok(Value::Decimal(rescale(parsed, d.scale())?))
            }
            other => Err(ConnectError::data(format!(
                "Cannot mask value of type {} with custom replacement.",
                other.type_name()
            ))),
        }
    }
}

/// `d` at `scale`, if that loses no digits (a Decimal field's values must
/// have the schema's scale).
fn rescale(d: &Decimal, scale: i32) -> Result<Decimal> {
    let diff = i64::from(scale) - i64::from(d.scale());
    let too_far = || {
        ConnectError::data(format!(
            "Replacement {d} cannot be represented at the field's decimal scale {scale}"
        ))
    };
    let steps = u32::try_from(diff.unsigned_abs())
        .ok()
        .filter(|s| *s <= MAX_RESCALE)
        .ok_or_else(too_far)?;
    let factor = num_bigint::BigInt::from(10).pow(steps);
    if diff >= 0 {
        Ok(Decimal::new(d.unscaled() * factor, scale))
    } else if (d.unscaled() % &factor) == num_bigint::BigInt::from(0) {
        Ok(Decimal::new(d.unscaled() / factor, scale))
    } else {
        Err(too_far())
    }
}

/// The "zero" of a value's type (Kafka's `PRIMITIVE_VALUE_MAPPING`).
fn type_zero(value: &Value) -> Result<Value> {
    Ok(match value {
        Value::Null => Value::Null,
        Value::Boolean(_) => Value::Boolean(false),
        Value::Int8(_) => Value::Int8(0),
        Value::Int16(_) => Value::Int16(0),
        Value::Int32(_) => Value::Int32(0),
        Value::Int64(_) => Value::Int64(0),
        Value::Float32(_) => Value::Float32(0.0),
        Value::Float64(_) => Value::Float64(0.0),
        Value::String(_) => Value::String(String::new()),
        Value::Decimal(d) => Value::Decimal(Decimal::new(0, d.scale())),
        Value::Date(_) => Value::Date(0),
        Value::Time(_) => Value::Time(0),
        Value::Timestamp(_) => Value::Timestamp(0),
        Value::Array(_) => Value::Array(Vec::new()),
        Value::Map(_) => Value::Map(Vec::new()),
        other @ (Value::Bytes(_) | Value::Struct(_)) => {
            return Err(ConnectError::data(format!(
                "Cannot mask value of type: {}",
                other.type_name()
            )))
        }
    })
}

/// The masked form of `value` (of `field`): null stays null; otherwise the
/// replacement converted to the value's type, or the type's empty value.
fn masked(replacement: Option<&Replacement>, field: &str, value: &Value) -> Result<Value> {
    let out = match (replacement, value) {
        (_, Value::Null) => Ok(Value::Null),
        (None, v) => type_zero(v),
        (Some(r), v) => r.for_value(v),
    };
    out.map_err(|e| e.in_field(field))
}

impl MaskField {
    /// An unconfigured MaskField acting on `side`.
    pub fn new(side: Side) -> Self {
        MaskField {
            side,
            fields: Vec::new(),
            replacement: None,
            replace_null_with_default: true,
            slots: SchemaCache::default(),
        }
    }

    fn definition() -> ConfigDef {
        ConfigDef::new()
            .define(
                ConfigKey::new(FIELDS, ConfigType::List)
                    .importance(Importance::High)
                    .doc("Names of fields to mask.")
                    .validator(Lambda::new(
                        "non-empty list",
                        |_: &str, v: &ConfigValue| match v {
                            ConfigValue::List(l) if l.is_empty() => Err("Empty list".to_string()),
                            _ => Ok(()),
                        },
                    )),
            )
            .define(
                ConfigKey::new(REPLACEMENT, ConfigType::String)
                    .optional()
                    .importance(Importance::Low)
                    .doc(
                        "Custom value replacement, that will be applied to all 'fields' values \
                         (numeric or non-empty string values only).",
                    )
                    .validator(Lambda::new(
                        "non-empty string",
                        |_: &str, v: &ConfigValue| match v {
                            ConfigValue::String(s) if s.is_empty() => {
                                Err("String must be non-empty".to_string())
                            }
                            _ => Ok(()),
                        },
                    )),
            )
            .define(replace_null_with_default_key())
    }

    /// Masks in place: the schema does not change, so the struct is kept
    /// and only the masked (and defaulted) slots are rewritten.
    fn mask_struct(&mut self, value: Value) -> Result<Value> {
        let mut s = into_struct(value, PURPOSE)?;
        if self.replace_null_with_default {
            fill_defaults(&mut s);
        }
        let fields = &self.fields;
        let slots = self.slots.get_or_try_insert(s.schema(), |schema| {
            Ok(fields
                .iter()
                .filter_map(|name| schema.field(name).map(|f| f.index()))
                .collect())
        })?;
        for &index in slots.iter() {
            let (Some(field), Some(current)) = (s.schema().field_at(index), s.get_at(index)) else {
                continue;
            };
            let masked = masked(self.replacement.as_ref(), field.name(), current)?;
            s.put_at_unchecked(index, masked);
        }
        Ok(Value::Struct(s))
    }

    fn mask_map(&self, value: Value) -> Result<Value> {
        let mut entries = into_map(value, PURPOSE)?;
        for name in &self.fields {
            match entries
                .iter_mut()
                .find(|(k, _)| k.as_str() == Some(name.as_str()))
            {
                Some((_, v)) => *v = masked(self.replacement.as_ref(), name, v)?,
                None => entries.push((Value::String(name.clone()), Value::Null)),
            }
        }
        Ok(Value::Map(entries))
    }
}

impl Configurable for MaskField {
    fn configure(&mut self, config: &ConfigMap) -> Result<()> {
        let parsed = Self::definition().parse(config)?;
        let mut fields: Vec<String> = parsed.get_list(FIELDS).unwrap_or_default().to_vec();
        fields.dedup();
        self.fields = fields;
        self.replacement = parsed.get_string(REPLACEMENT).map(Replacement::new);
        self.replace_null_with_default = parsed.get_bool(REPLACE_NULL_WITH_DEFAULT).unwrap_or(true);
        self.slots = SchemaCache::default();
        Ok(())
    }

    fn config_def(&self) -> ConfigDef {
        Self::definition()
    }
}

impl<R: ConnectRecord> Transformation<R> for MaskField {
    fn transform(&mut self, record: &mut R) -> Result<Verdict> {
        let (schema, value) = self.side.take(record);
        let value = match schema {
            Some(_) => self.mask_struct(value)?,
            None => self.mask_map(value)?,
        };
        self.side.set(record, schema, value);
        Ok(Verdict::Keep)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::test_support::*;
    use connect_api::logical::{date_schema, decimal_schema, time_schema, timestamp_schema};
    use connect_api::{ErrorKind, Schema, SchemaBuilder, Struct};

    fn smt(side: Side, pairs: &[(&str, &str)]) -> Result<MaskField> {
        let mut t = MaskField::new(side);
        t.configure(&props(pairs))?;
        Ok(t)
    }

    fn schema() -> Schema {
        SchemaBuilder::struct_()
            .field("magic", Schema::int32())
            .field("bool", Schema::boolean())
            .field("byte", Schema::int8())
            .field("short", Schema::int16())
            .field("int", Schema::int32())
            .field("long", Schema::int64())
            .field("float", Schema::float32())
            .field("double", Schema::float64())
            .field("string", Schema::string())
            .field("date", date_schema())
            .field("time", time_schema())
            .field("timestamp", timestamp_schema())
            .field("decimal", decimal_schema(2))
            .field(
                "array",
                SchemaBuilder::array(Schema::int32()).build().unwrap(),
            )
            .field(
                "map",
                SchemaBuilder::map(Schema::string(), Schema::string())
                    .build()
                    .unwrap(),
            )
            .field(
                "withDefault",
                SchemaBuilder::string()
                    .optional()
                    .default_value("default")
                    .build()
                    .unwrap(),
            )
            .field("bytes", Schema::optional_bytes())
            .build()
            .unwrap()
    }

    fn value() -> Struct {
        let mut s = Struct::new(schema()).unwrap();
        s.put("magic", 42)
            .unwrap()
            .put("bool", true)
            .unwrap()
            .put("byte", 42i8)
            .unwrap()
            .put("short", 42i16)
            .unwrap()
            .put("int", 42)
            .unwrap()
            .put("long", 42i64)
            .unwrap()
            .put("float", 42f32)
            .unwrap()
            .put("double", 42f64)
            .unwrap()
            .put("string", "55.121.20.20")
            .unwrap()
            .put("date", Value::Date(100))
            .unwrap()
            .put("time", Value::Time(100))
            .unwrap()
            .put("timestamp", Value::Timestamp(100))
            .unwrap()
            .put("decimal", Decimal::new(4244, 2))
            .unwrap()
            .put("array", vec![Value::Int32(1), Value::Int32(2)])
            .unwrap()
            .put("map", Value::string_map([("what", Value::from("what"))]))
            .unwrap()
            .put("bytes", vec![1u8])
            .unwrap();
        s
    }

    const MASKABLE: &str =
        "bool,byte,short,int,long,float,double,string,date,time,timestamp,decimal,array,map,withDefault";

    #[test]
    fn with_schema_masks_to_type_zero() {
        let mut t = smt(Side::Value, &[("fields", MASKABLE)]).unwrap();
        let out = t
            .apply(sink(Some(schema()), Value::Struct(value())))
            .unwrap()
            .unwrap();
        assert_eq!(out.record.value_schema, Some(schema()));
        let v = out.record.value.as_struct().unwrap();
        v.validate().unwrap();
        let expect = [
            ("magic", Value::Int32(42)),
            ("bool", Value::Boolean(false)),
            ("byte", Value::Int8(0)),
            ("short", Value::Int16(0)),
            ("int", Value::Int32(0)),
            ("long", Value::Int64(0)),
            ("float", Value::Float32(0.0)),
            ("double", Value::Float64(0.0)),
            ("string", Value::from("")),
            ("date", Value::Date(0)),
            ("time", Value::Time(0)),
            ("timestamp", Value::Timestamp(0)),
            ("decimal", Value::Decimal(Decimal::new(0, 2))),
            ("array", Value::Array(vec![])),
            ("map", Value::Map(vec![])),
            // The default is read, then masked.
            ("withDefault", Value::from("")),
        ];
        for (name, want) in expect {
            assert_eq!(v.get(name).unwrap(), &want, "{name}");
        }
    }

    #[test]
    fn schemaless_masks_and_adds_absent_keys_as_null() {
        let mut t = smt(Side::Value, &[("fields", "int,string,missing")]).unwrap();
        let value = Value::string_map([
            ("int", Value::Int32(42)),
            ("string", Value::from("secret")),
            ("other", Value::from("kept")),
        ]);
        let out = t.apply(sink(None, value)).unwrap().unwrap();
        assert_eq!(
            out.record.value,
            Value::string_map([
                ("int", Value::Int32(0)),
                ("string", Value::from("")),
                ("other", Value::from("kept")),
                ("missing", Value::Null),
            ])
        );
    }

    #[test]
    fn replacement_is_parsed_to_the_field_type() {
        let mut t = smt(
            Side::Value,
            &[
                ("fields", "byte,short,int,long,float,double,decimal"),
                ("replacement", "12"),
            ],
        )
        .unwrap();
        let out = t
            .apply(sink(Some(schema()), Value::Struct(value())))
            .unwrap()
            .unwrap();
        let v = out.record.value.as_struct().unwrap();
        v.validate().unwrap();
        assert_eq!(v.get("byte").unwrap(), &Value::Int8(12));
        assert_eq!(v.get("short").unwrap(), &Value::Int16(12));
        assert_eq!(v.get("int").unwrap(), &Value::Int32(12));
        assert_eq!(v.get("long").unwrap(), &Value::Int64(12));
        assert_eq!(v.get("float").unwrap(), &Value::Float32(12.0));
        assert_eq!(v.get("double").unwrap(), &Value::Float64(12.0));
        // Rescaled to the schema's scale 2.
        assert_eq!(
            v.get("decimal").unwrap(),
            &Value::Decimal(Decimal::new(1200, 2))
        );

        let mut t = smt(
            Side::Value,
            &[("fields", "string"), ("replacement", "******")],
        )
        .unwrap();
        let out = t
            .apply(sink(Some(schema()), Value::Struct(value())))
            .unwrap()
            .unwrap();
        assert_eq!(
            out.record
                .value
                .as_struct()
                .unwrap()
                .get_string("string")
                .unwrap(),
            Some("******")
        );
    }

    #[test]
    fn numeric_replacements_convert_like_kafka_values() {
        let mut t = smt(
            Side::Value,
            &[("fields", "int,long,float"), ("replacement", "12.9")],
        )
        .unwrap();
        let out = t
            .apply(sink(Some(schema()), Value::Struct(value())))
            .unwrap()
            .unwrap();
        let v = out.record.value.as_struct().unwrap();
        assert_eq!(v.get("int").unwrap(), &Value::Int32(12));
        assert_eq!(v.get("long").unwrap(), &Value::Int64(12));
        assert_eq!(v.get("float").unwrap(), &Value::Float32(12.9));
    }

    #[test]
    fn replacement_errors_name_the_field() {
        let cases = [
            ("int", "abc", "does not parse as INT32"),
            ("byte", "300", "out of range"),
            ("decimal", "abc", "Unable to convert abc (String) to number"),
            (
                "bool",
                "x",
                "Cannot mask value of type BOOLEAN with custom replacement.",
            ),
            (
                "date",
                "1",
                "Cannot mask value of type Date with custom replacement.",
            ),
            (
                "decimal",
                "1.234",
                "cannot be represented at the field's decimal scale 2",
            ),
        ];
        for (field, replacement, message) in cases {
            let mut t = smt(
                Side::Value,
                &[("fields", field), ("replacement", replacement)],
            )
            .unwrap();
            let e = t
                .apply(sink(Some(schema()), Value::Struct(value())))
                .unwrap_err();
            assert!(
                matches!(e.kind(), ErrorKind::Data { path } if path == field),
                "{e}"
            );
            assert!(e.to_string().contains(message), "{field}: {e}");
        }
    }

    #[test]
    fn unmaskable_types_are_errors() {
        let mut t = smt(Side::Value, &[("fields", "bytes")]).unwrap();
        let e = t
            .apply(sink(Some(schema()), Value::Struct(value())))
            .unwrap_err();
        assert_eq!(e.to_string(), "bytes: Cannot mask value of type: BYTES");
    }

    #[test]
    fn null_fields_stay_null_and_rnwd_false_keeps_null() {
        let mut t = smt(
            Side::Value,
            &[
                ("fields", "withDefault,bytes"),
                ("replace.null.with.default", "false"),
            ],
        )
        .unwrap();
        let mut v = value();
        v.put("bytes", Value::Null).unwrap();
        let out = t
            .apply(sink(Some(schema()), Value::Struct(v)))
            .unwrap()
            .unwrap();
        let s = out.record.value.as_struct().unwrap();
        assert_eq!(s.get_without_default("withDefault").unwrap(), &Value::Null);
        assert_eq!(s.get_without_default("bytes").unwrap(), &Value::Null);
    }

    #[test]
    fn null_operands_are_data_errors() {
        let mut t = smt(Side::Value, &[("fields", "a")]).unwrap();
        let e = t.apply(sink(None, Value::Null)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "Only Map objects supported in absence of schema for [mask fields], found: null"
        );
        let optional = SchemaBuilder::struct_().optional().build().unwrap();
        let e = t.apply(sink(Some(optional), Value::Null)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "Only Struct objects supported for [mask fields], found: null"
        );
    }

    #[test]
    fn key_side() {
        let mut t = smt(Side::Key, &[("fields", "id")]).unwrap();
        let out = t
            .apply(sink_key(None, Value::string_map([("id", Value::Int64(9))])))
            .unwrap()
            .unwrap();
        assert_eq!(out.record.key, Value::string_map([("id", Value::Int64(0))]));
        assert_eq!(out.record.value, Value::from("v"));
    }

    #[test]
    fn config_errors() {
        let e = smt(Side::Value, &[]).unwrap_err();
        assert!(
            matches!(e.kind(), ErrorKind::Config { key } if key == "fields"),
            "{e}"
        );
        let e = smt(Side::Value, &[("fields", "")]).unwrap_err();
        assert!(e.to_string().contains("Empty list"), "{e}");
        let e = smt(Side::Value, &[("fields", "a"), ("replacement", "")]).unwrap_err();
        assert!(
            matches!(e.kind(), ErrorKind::Config { key } if key == "replacement"),
            "{e}"
        );
        let e = smt(
            Side::Value,
            &[("fields", "a"), ("replace.null.with.default", "1")],
        )
        .unwrap_err();
        assert!(
            matches!(e.kind(), ErrorKind::Config { key } if key == "replace.null.with.default")
        );
    }

    #[test]
    fn every_key_is_documented() {
        let def = Configurable::config_def(&MaskField::new(Side::Value));
        assert_eq!(def.keys().len(), 3);
        assert!(def.keys().iter().all(|k| !k.documentation.is_empty()));
    }

    proptest::proptest! {
        #[test]
        fn masking_every_field_zeroes_values_and_keeps_nulls(
            (schema, value) in flat_struct()
        ) {
            let names: Vec<&str> = schema.field_list().map(|f| f.name()).collect();
            if names.is_empty() {
                return Ok(());
            }
            let mut t = smt(Side::Value, &[("fields", &names.join(","))]).unwrap();
            let out = t.apply(sink(Some(schema.clone()), value.clone())).unwrap().unwrap();
            proptest::prop_assert_eq!(out.record.value_schema.as_ref(), Some(&schema));
            let (before, after) = (value.as_struct().unwrap(), out.record.value.as_struct().unwrap());
            for (old, new) in before.values().iter().zip(after.values()) {
                let want = if old.is_null() { Value::Null } else { Value::Int64(0) };
                proptest::prop_assert_eq!(new, &want);
            }
        }
    }
}
