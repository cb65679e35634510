//! Cast: change the type of some fields, or of the whole key or value, to
//! another primitive type.
//!
//! Kafka classes `org.apache.kafka.connect.transforms.Cast$Key` and
//! `org.apache.kafka.connect.transforms.Cast$Value`.
//!
//! | key | default | meaning |
//! |---|---|---|
//! | `spec` | required | `field:type` pairs (`id:int64,price:string`), or a single `type` to cast the whole value |
//! | `replace.null.with.default` | `true` | null struct fields are read (and cast) as their defaults |
//!
//! Target types: `int8`, `int16`, `int32`, `int64`, `float32`, `float64`,
//! `boolean`, `string` (any case). Inputs may be any of those or BYTES;
//! ARRAY, MAP and STRUCT values are a data error. Conversions follow Java's:
//! integer narrowing wraps, floats truncate toward zero, strings are parsed
//! (`Integer.parseInt`, `Float.parseFloat`, `Boolean.parseBoolean`), a
//! number is true when its integer part is non-zero. BYTES can only become a
//! base64 string. Date, Time and Timestamp become their INT32/INT64 encoding
//! for numeric targets and an ISO-8601 string for `string` (Kafka picks the
//! format from the instant: before 1970-01-02 a time, at midnight a date,
//! else a timestamp). A string that does not parse, or does not fit the
//! target, is a data error naming the field.
//!
//! With a schema the output schema (cast fields get a plain schema of the
//! target type, keeping optionality and a cast default; other fields keep
//! theirs) is derived once per input schema. Schemaless maps get absent
//! cast fields added as null, as in Kafka. A null value passes through.

use base64::Engine as _;
use num_bigint::{BigInt, Sign};

use connect_api::config::validators::Lambda;
use connect_api::config::{ConfigKey, ConfigType, ConfigValue, Importance};
use connect_api::java_number::JavaNumber;
use connect_api::logical::MILLIS_PER_DAY;
use connect_api::transform::{Configurable, Transformation, Verdict};
use connect_api::{
    values, ConfigDef, ConfigMap, ConnectError, ConnectRecord, Decimal, LogicalType, Result,
    Schema, SchemaBuilder, Struct, Type, Value,
};

use crate::util::{
    copy_schema_basics, fill_defaults, into_map, into_struct, replace_null_with_default_key,
    same_or_new, struct_builder_like, REPLACE_NULL_WITH_DEFAULT,
};
use crate::util::{SchemaCache, Side};

/// Kafka's class name, without the `$Key` / `$Value` suffix.
pub const CLASS: &str = "org.apache.kafka.connect.transforms.Cast";

const PURPOSE: &str = "cast types";
const SPEC: &str = "spec";

const OUTPUT_TYPES: [Type; 8] = [
    Type::Int8,
    Type::Int16,
    Type::Int32,
    Type::Int64,
    Type::Float32,
    Type::Float64,
    Type::Boolean,
    Type::String,
];

/// Casts fields or whole values; see the [module docs](self).
///
/// ```
/// use connect_api::transform::{Configurable, Transformation};
/// use connect_api::{Record, Schema, SchemaBuilder, SinkRecord, Struct, Value};
/// use connect_transforms::cast::Cast;
/// use connect_transforms::util::Side;
///
/// let mut smt = Cast::new(Side::Value);
/// let cfg = connect_api::ConfigMap::from([("spec", "id:string,score:int32")]);
/// smt.configure(&cfg).unwrap();
///
/// let schema = SchemaBuilder::struct_()
///     .field("id", Schema::int64())
///     .field("score", Schema::float64())
///     .build().unwrap();
/// let mut v = Struct::new(schema.clone()).unwrap();
/// v.put("id", 7i64).unwrap().put("score", 9.75).unwrap();
/// let out = smt.apply(SinkRecord::new(Record::new("t", Some(schema), v.into()), 0, 0)).unwrap().unwrap();
/// let got = out.record.value.as_struct().unwrap();
/// assert_eq!(got.get_string("id").unwrap(), Some("7"));
/// assert_eq!(got.get_int32("score").unwrap(), Some(9));
/// ```
#[derive(Debug)]
pub struct Cast {
    side: Side,
    spec: Spec,
    replace_null_with_default: bool,
    cache: SchemaCache<Plan>,
}

/// What Cast does to the values of one input schema, derived once.
#[derive(Debug, Clone)]
struct Plan {
    output: Schema,
    /// For structs: the slots whose schema changes, with their target type.
    casts: Vec<(usize, Type)>,
}

#[derive(Debug, Clone, PartialEq)]
enum Spec {
    Whole(Type),
    /// In spec order, one entry per field (the last mapping of a name wins).
    Fields(Vec<(String, Type)>),
}

impl Spec {
    fn parse(items: &[String]) -> std::result::Result<Spec, String> {
        if items.is_empty() {
            return Err("Must specify at least one field to cast.".to_string());
        }
        let mut fields: Vec<(String, Type)> = Vec::new();
        let mut whole = None;
        for mapping in items {
            let mut parts = mapping.split(':');
            let (first, second) = (parts.next().unwrap_or_default(), parts.next());
            if parts.next().is_some() {
                return Err(format!("Invalid cast mapping: {mapping}"));
            }
            match second {
                None => whole = Some(output_type(first)?),
                Some(ty) => {
                    let (name, ty) = (first.trim(), output_type(ty)?);
                    fields.retain(|(n, _)| n != name);
                    fields.push((name.to_string(), ty));
                }
            }
        }
        match whole {
            Some(_) if items.len() > 1 => Err(
                "Cast transformations that specify a type to cast the entire value to may ony \
                 specify a single cast in their spec"
                    .to_string(),
            ),
            Some(ty) => Ok(Spec::Whole(ty)),
            None => Ok(Spec::Fields(fields)),
        }
    }

    fn target(&self, field: &str) -> Option<Type> {
        match self {
            Spec::Fields(f) => f.iter().find(|(n, _)| n == field).map(|(_, t)| *t),
            Spec::Whole(_) => None,
        }
    }

    fn plan(&self, input: &Schema) -> Result<Plan> {
        let output = self.derive(input)?;
        let casts = match self {
            Spec::Whole(_) => Vec::new(),
            // Fields whose schema is unchanged keep their value untouched.
            Spec::Fields(_) => input
                .field_list()
                .zip(output.field_list())
                .filter(|(from, to)| from.schema() != to.schema())
                .map(|(from, to)| (from.index(), to.schema().ty()))
                .collect(),
        };
        Ok(Plan { output, casts })
    }

    fn derive(&self, input: &Schema) -> Result<Schema> {
        let mut builder = match self {
            Spec::Whole(ty) => {
                let builder = SchemaBuilder::new(*ty);
                // A logical name on a new type would make it another logical
                // type (Date on INT32) or a misleading name; keep it off.
                let builder = if LogicalType::of(input).is_none() {
                    copy_schema_basics(input, builder)
                } else {
                    builder
                };
                match input.default_value() {
                    Some(d) => builder.default_value(cast_value(Some(input), d.clone(), *ty)?),
                    None => builder,
                }
            }
            Spec::Fields(_) => {
                let mut builder = struct_builder_like(input);
                for field in input.fields()? {
                    let schema = match self.target(field.name()) {
                        Some(ty) => cast_field_schema(field.schema(), ty)
                            .map_err(|e| e.in_field(field.name()))?,
                        None => field.schema().clone(),
                    };
                    builder = builder.field(field.name(), schema);
                }
                builder
            }
        };
        if input.is_optional() {
            builder = builder.optional();
        }
        same_or_new(input, builder.build()?)
    }
}

fn cast_field_schema(schema: &Schema, ty: Type) -> Result<Schema> {
    let mut builder = SchemaBuilder::new(ty);
    if schema.is_optional() {
        builder = builder.optional();
    }
    if let Some(d) = schema.default_value() {
        builder = builder.default_value(cast_value(Some(schema), d.clone(), ty)?);
    }
    builder.build()
}

fn output_type(name: &str) -> std::result::Result<Type, String> {
    let name = name.trim();
    let ty = Type::from_name(name)
        .ok_or_else(|| format!("Invalid type found in casting spec: {name}"))?;
    if OUTPUT_TYPES.contains(&ty) {
        Ok(ty)
    } else {
        Err(format!(
            "Cast transformation does not support casting to {ty}; supported types are \
             [INT8, INT16, INT32, INT64, FLOAT32, FLOAT64, BOOLEAN, STRING]"
        ))
    }
}

/// Cast `value` (of `schema`, if known) to `target`, with Java's conversion
/// rules (see the module docs).
fn cast_value(schema: Option<&Schema>, value: Value, target: Type) -> Result<Value> {
    if value.is_null() {
        return Ok(Value::Null);
    }
    let input = schema.map(Schema::ty).or_else(|| value.schema_type());
    if matches!(input, Some(Type::Array | Type::Map | Type::Struct)) {
        return Err(ConnectError::data(format!(
            "Cast transformation does not support casting from {}; supported types are \
             [INT8, INT16, INT32, INT64, FLOAT32, FLOAT64, BOOLEAN, STRING, BYTES]",
            input.map_or("null", Type::name)
        )));
    }
    // Logical values take their integer encoding for numeric targets.
    let value = match (target, value) {
        (Type::String, v) => v,
        (_, Value::Date(d) | Value::Time(d)) => Value::Int32(d),
        (_, Value::Timestamp(t)) => Value::Int64(t),
        (_, v) => v,
    };
    match target {
        Type::Int8 | Type::Int16 | Type::Int32 | Type::Int64 => cast_to_int(&value, target),
        Type::Float32 | Type::Float64 => cast_to_float(&value, target),
        Type::Boolean => cast_to_boolean(&value),
        Type::String => Ok(Value::String(cast_to_string(value))),
        other => Err(ConnectError::data(format!(
            "{other} is not supported in the Cast transformation."
        ))),
    }
}

fn unexpected(value: &Value) -> ConnectError {
    ConnectError::data(format!(
        "Unexpected type in Cast transformation: {}",
        value.type_name()
    ))
}

fn out_of_range(text: &str) -> ConnectError {
    ConnectError::data(format!(
        "Value ({text}) was out of range for requested data type"
    ))
}

fn cast_to_int(value: &Value, target: Type) -> Result<Value> {
    // Java narrows a float to byte/short through int, and saturates to
    // int/long; integers narrow by dropping high bits.
    let via_int = !matches!(target, Type::Int64);
    let wide: i64 = match value {
        Value::Float32(f) if via_int => i64::from(*f as i32),
        Value::Float32(f) => *f as i64,
        Value::Float64(f) if via_int => i64::from(*f as i32),
        Value::Float64(f) => *f as i64,
        Value::Decimal(d) => decimal_low_bits(d),
        Value::Boolean(b) => i64::from(*b),
        Value::String(s) => return parse_int(s, target),
        v => v.as_i64().ok_or_else(|| unexpected(v))?,
    };
    Ok(match target {
        Type::Int8 => Value::Int8(wide as i8),
        Type::Int16 => Value::Int16(wide as i16),
        Type::Int32 => Value::Int32(wide as i32),
        _ => Value::Int64(wide),
    })
}

fn parse_int(s: &str, target: Type) -> Result<Value> {
    let bad = || out_of_range(s);
    Ok(match target {
        Type::Int8 => Value::Int8(s.parse().map_err(|_| bad())?),
        Type::Int16 => Value::Int16(s.parse().map_err(|_| bad())?),
        Type::Int32 => Value::Int32(s.parse().map_err(|_| bad())?),
        _ => Value::Int64(s.parse().map_err(|_| bad())?),
    })
}

fn cast_to_float(value: &Value, target: Type) -> Result<Value> {
    let single = target == Type::Float32;
    Ok(match value {
        Value::Float32(f) if single => Value::Float32(*f),
        Value::Float32(f) => Value::Float64(f64::from(*f)),
        Value::Float64(f) if single => Value::Float32(*f as f32),
        Value::Float64(f) => Value::Float64(*f),
        Value::Boolean(b) if single => Value::Float32(if *b { 1.0 } else { 0.0 }),
        Value::Boolean(b) => Value::Float64(if *b { 1.0 } else { 0.0 }),
        // Parse the exact text so f32 is rounded once, not via f64.
        Value::Decimal(d) => parse_float(&d.to_string(), single)?,
        Value::String(s) => parse_float(s, single)?,
        v => match v.as_i64() {
            Some(i) if single => Value::Float32(i as f32),
            Some(i) => Value::Float64(i as f64),
            None => return Err(unexpected(v)),
        },
    })
}

fn parse_float(s: &str, single: bool) -> Result<Value> {
    let t = s.trim();
    let t = match t.strip_suffix(['f', 'F', 'd', 'D']) {
        Some(rest)
            if !rest.is_empty() && rest.ends_with(|c: char| c.is_ascii_digit() || c == '.') =>
        {
            rest
        }
        _ => t,
    };
    if single {
        t.parse().map(Value::Float32).map_err(|_| out_of_range(s))
    } else {
        t.parse().map(Value::Float64).map_err(|_| out_of_range(s))
    }
}

fn cast_to_boolean(value: &Value) -> Result<Value> {
    Ok(Value::Boolean(match value {
        Value::Boolean(b) => *b,
        Value::String(s) => s.eq_ignore_ascii_case("true"),
        Value::Float32(f) => (*f as i64) != 0,
        Value::Float64(f) => (*f as i64) != 0,
        Value::Decimal(d) => decimal_low_bits(d) != 0,
        v => v.as_i64().ok_or_else(|| unexpected(v))? != 0,
    }))
}

fn cast_to_string(value: Value) -> String {
    match value {
        Value::String(s) => s,
        Value::Bytes(b) => base64::engine::general_purpose::STANDARD.encode(&b),
        Value::Float32(f) => JavaNumber::from_f32(f).to_string(),
        Value::Float64(f) => JavaNumber::from_f64(f).to_string(),
        Value::Date(d) => date_format_for(i64::from(d) * MILLIS_PER_DAY),
        Value::Time(t) => date_format_for(i64::from(t)),
        Value::Timestamp(t) => date_format_for(t),
        other => values::convert_to_string(&other),
    }
}

/// Kafka's `Values.dateFormatFor(date).format(date)`: the format follows
/// the instant, not the schema.
fn date_format_for(millis: i64) -> String {
    let v = if millis < MILLIS_PER_DAY {
        Value::Time(millis.rem_euclid(MILLIS_PER_DAY) as i32)
    } else if millis % MILLIS_PER_DAY == 0 {
        i32::try_from(millis / MILLIS_PER_DAY).map_or(Value::Timestamp(millis), Value::Date)
    } else {
        Value::Timestamp(millis)
    };
    values::convert_to_string(&v)
}

/// The low 64 bits of a decimal's integer part (Java's
/// `BigDecimal.longValue`, whose narrower siblings drop more high bits).
fn decimal_low_bits(d: &Decimal) -> i64 {
    let scale = d.scale();
    let integer = if scale >= 0 {
        // More fraction digits than digits at all: the integer part is 0.
        let digits = d.unscaled().bits() as f64 * std::f64::consts::LOG10_2 + 1.0;
        if f64::from(scale) > digits {
            return 0;
        }
        d.unscaled() / BigInt::from(10).pow(scale.unsigned_abs())
    } else {
        // 10^k is a multiple of 2^k, so from k = 64 on the low bits are 0.
        let k = scale.unsigned_abs();
        if k >= 64 {
            return 0;
        }
        d.unscaled() * BigInt::from(10).pow(k)
    };
    let fill = if integer.sign() == Sign::Minus {
        0xff
    } else {
        0
    };
    let mut low = [fill; 8];
    for (slot, byte) in low.iter_mut().zip(integer.to_signed_bytes_le()) {
        *slot = byte;
    }
    i64::from_le_bytes(low)
}

impl Cast {
    /// An unconfigured Cast acting on `side`.
    pub fn new(side: Side) -> Self {
        Cast {
            side,
            spec: Spec::Fields(Vec::new()),
            replace_null_with_default: true,
            cache: SchemaCache::default(),
        }
    }

    fn definition() -> ConfigDef {
        ConfigDef::new()
            .define(
                ConfigKey::new(SPEC, ConfigType::List)
                    .importance(Importance::High)
                    .doc(
                        "List of fields and the type to cast them to of the form \
                         field1:type,field2:type to cast fields of Maps or Structs. A single \
                         type to cast the entire value. Valid types are int8, int16, int32, \
                         int64, float32, float64, boolean, and string. Note that binary fields \
                         can only be cast to string.",
                    )
                    .validator(Lambda::new(
                        "list of colon-delimited pairs, e.g. foo:bar,abc:xyz",
                        |_: &str, v: &ConfigValue| match v {
                            ConfigValue::List(items) => Spec::parse(items).map(|_| ()),
                            _ => Ok(()),
                        },
                    )),
            )
            .define(replace_null_with_default_key())
    }

    fn cast_struct(&mut self, value: Value) -> Result<(Schema, Value)> {
        let mut s = into_struct(value, PURPOSE)?;
        if self.replace_null_with_default {
            fill_defaults(&mut s);
        }
        // The input's values vector becomes the output's: only the cast
        // slots are rewritten.
        let (input, mut values) = s.into_parts();
        let spec = &self.spec;
        let plan = self.cache.get_or_try_insert(&input, |s| spec.plan(s))?;
        for &(index, target) in &plan.casts {
            let (Some(field), Some(slot)) = (input.field_at(index), values.get_mut(index)) else {
                continue;
            };
            *slot = cast_value(Some(field.schema()), std::mem::take(slot), target)
                .map_err(|e| e.in_field(field.name()))?;
        }
        let output = plan.output.clone();
        Ok((
            output.clone(),
            Value::Struct(Struct::from_parts(output, values)?),
        ))
    }

    fn cast_map(&self, value: Value, fields: &[(String, Type)]) -> Result<Value> {
        let mut entries = into_map(value, PURPOSE)?;
        for (name, ty) in fields {
            match entries
                .iter_mut()
                .find(|(k, _)| k.as_str() == Some(name.as_str()))
            {
                Some((_, v)) => {
                    *v = cast_value(None, std::mem::take(v), *ty).map_err(|e| e.in_field(name))?
                }
                None => entries.push((Value::String(name.clone()), Value::Null)),
            }
        }
        Ok(Value::Map(entries))
    }
}

impl Configurable for Cast {
    fn configure(&mut self, config: &ConfigMap) -> Result<()> {
        let parsed = Self::definition().parse(config)?;
        self.spec = Spec::parse(parsed.get_list(SPEC).unwrap_or_default())
            .map_err(|e| ConnectError::config(SPEC, e))?;
        self.replace_null_with_default = parsed.get_bool(REPLACE_NULL_WITH_DEFAULT).unwrap_or(true);
        self.cache = SchemaCache::default();
        Ok(())
    }

    fn config_def(&self) -> ConfigDef {
        Self::definition()
    }
}

impl<R: ConnectRecord> Transformation<R> for Cast {
    fn transform(&mut self, record: &mut R) -> Result<Verdict> {
        if self.side.value(&*record).is_null() {
            return Ok(Verdict::Keep);
        }
        let (schema, value) = self.side.take(record);
        let (schema, value) = match (schema, &self.spec) {
            (Some(s), Spec::Whole(ty)) => {
                let ty = *ty;
                let spec = &self.spec;
                let output = self
                    .cache
                    .get_or_try_insert(&s, |s| spec.plan(s))?
                    .output
                    .clone();
                (Some(output), cast_value(Some(&s), value, ty)?)
            }
            (Some(_), Spec::Fields(_)) => {
                let (s, v) = self.cast_struct(value)?;
                (Some(s), v)
            }
            (None, Spec::Whole(ty)) => (None, cast_value(None, value, *ty)?),
            (None, Spec::Fields(fields)) => (None, self.cast_map(value, fields)?),
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
    use connect_api::ErrorKind;
    use proptest::prelude::*;

    fn smt(side: Side, spec: &str) -> Result<Cast> {
        let mut t = Cast::new(side);
        t.configure(&props(&[("spec", spec)]))?;
        Ok(t)
    }

    fn whole(spec: &str, schema: Option<Schema>, v: Value) -> Result<(Option<Schema>, Value)> {
        let mut t = smt(Side::Value, spec)?;
        let out = t
            .apply(sink(schema, v))?
            .unwrap_or_else(|| sink(None, Value::Null));
        Ok((out.record.value_schema, out.record.value))
    }

    fn cast(v: Value, target: &str) -> Result<Value> {
        whole(target, None, v).map(|(_, v)| v)
    }

    #[test]
    fn config_errors() {
        let key_is_spec =
            |e: &ConnectError| matches!(e.kind(), ErrorKind::Config { key } if key == "spec");
        let e = Cast::new(Side::Value);
        let mut e2 = e;
        let missing = e2.configure(&props(&[])).unwrap_err();
        assert!(key_is_spec(&missing));
        for (spec, message) in [
            ("", "Must specify at least one field to cast."),
            ("foo:int8:extra", "Invalid cast mapping: foo:int8:extra"),
            (
                "foo:faketype",
                "Invalid type found in casting spec: faketype",
            ),
            ("faketype", "Invalid type found in casting spec: faketype"),
            ("foo:bytes", "does not support casting to BYTES"),
            ("array", "does not support casting to ARRAY"),
            ("int8,foo:int16", "may ony specify a single cast"),
        ] {
            let e = smt(Side::Value, spec).unwrap_err();
            assert!(key_is_spec(&e), "{spec}: {e}");
            assert!(e.to_string().contains(message), "{spec}: {e}");
        }
        let mut t = Cast::new(Side::Value);
        let e = t
            .configure(&props(&[
                ("spec", "int8"),
                ("replace.null.with.default", "x"),
            ]))
            .unwrap_err();
        assert!(
            matches!(e.kind(), ErrorKind::Config { key } if key == "replace.null.with.default")
        );
    }

    #[test]
    fn whole_value_with_schema() {
        let (s, v) = whole("int16", Some(Schema::int8()), Value::Int8(8)).unwrap();
        assert_eq!(s, Some(Schema::int16()));
        assert_eq!(v, Value::Int16(8));
        let (s, v) = whole("string", Some(Schema::optional_int64()), Value::Int64(5)).unwrap();
        assert_eq!(s, Some(Schema::optional_string()));
        assert_eq!(v, Value::from("5"));
        // Logical names are not carried to the new type.
        let (s, v) = whole("int32", Some(date_schema()), Value::Date(3)).unwrap();
        assert_eq!(s, Some(Schema::int32()));
        assert_eq!(v, Value::Int32(3));
        // Defaults are cast.
        let with_default = SchemaBuilder::int32().default_value(12).build().unwrap();
        let (s, _) = whole("string", Some(with_default), Value::Int32(1)).unwrap();
        assert_eq!(s.unwrap().default_value(), Some(&Value::from("12")));
    }

    #[test]
    fn numeric_casts_follow_java() {
        assert_eq!(cast(Value::Int32(300), "int8").unwrap(), Value::Int8(44));
        assert_eq!(cast(Value::Int64(-1), "int16").unwrap(), Value::Int16(-1));
        assert_eq!(
            cast(Value::Float64(300.7), "int8").unwrap(),
            Value::Int8(44)
        );
        assert_eq!(
            cast(Value::Float32(-2.9), "int32").unwrap(),
            Value::Int32(-2)
        );
        assert_eq!(
            cast(Value::Float64(1e30), "int32").unwrap(),
            Value::Int32(i32::MAX)
        );
        assert_eq!(
            cast(Value::Float64(f64::NAN), "int64").unwrap(),
            Value::Int64(0)
        );
        assert_eq!(
            cast(Value::Int32(42), "float32").unwrap(),
            Value::Float32(42.0)
        );
        assert_eq!(
            cast(Value::Float32(1.5), "float64").unwrap(),
            Value::Float64(1.5)
        );
        assert_eq!(
            cast(Value::Boolean(true), "int64").unwrap(),
            Value::Int64(1)
        );
        assert_eq!(
            cast(Value::Boolean(false), "float64").unwrap(),
            Value::Float64(0.0)
        );
        assert_eq!(
            cast(Value::Int8(0), "boolean").unwrap(),
            Value::Boolean(false)
        );
        assert_eq!(
            cast(Value::Int64(2), "boolean").unwrap(),
            Value::Boolean(true)
        );
        assert_eq!(
            cast(Value::Float32(0.5), "boolean").unwrap(),
            Value::Boolean(false)
        );
    }

    #[test]
    fn strings_parse_like_java() {
        assert_eq!(cast(Value::from("42"), "int8").unwrap(), Value::Int8(42));
        assert_eq!(cast(Value::from("+7"), "int32").unwrap(), Value::Int32(7));
        assert_eq!(
            cast(Value::from(" 1.5f "), "float32").unwrap(),
            Value::Float32(1.5)
        );
        assert_eq!(
            cast(Value::from("-Infinity"), "float64").unwrap(),
            Value::Float64(f64::NEG_INFINITY)
        );
        assert_eq!(
            cast(Value::from("TRUE"), "boolean").unwrap(),
            Value::Boolean(true)
        );
        assert_eq!(
            cast(Value::from("yes"), "boolean").unwrap(),
            Value::Boolean(false)
        );
        for (text, target) in [
            ("300", "int8"),
            ("4.5", "int32"),
            ("x", "float64"),
            (" 1", "int64"),
        ] {
            let e = cast(Value::from(text), target).unwrap_err();
            assert_eq!(
                e.to_string(),
                format!("Value ({text}) was out of range for requested data type")
            );
        }
    }

    #[test]
    fn to_string_renders_like_java() {
        let cases = [
            (Value::Int32(42), "42"),
            (Value::Boolean(true), "true"),
            (Value::Float64(1.0), "1.0"),
            (Value::Float64(0.001), "0.001"),
            (Value::Float64(1e7), "1.0E7"),
            (Value::Float64(1.5e-7), "1.5E-7"),
            (Value::Float64(-123.25), "-123.25"),
            (Value::Float32(0.1), "0.1"),
            (Value::Float32(3e10), "3.0E10"),
            (Value::Float64(-0.0), "-0.0"),
            (Value::Float64(f64::from_bits(1)), "4.9E-324"),
            (Value::Float32(f32::from_bits(1)), "1.4E-45"),
            (Value::Float32(f32::from_bits(2)), "2.8E-45"),
            (Value::Float64(1e23), "1.0E23"),
            (Value::Float64(-2e-5), "-2.0E-5"),
            (Value::Bytes(vec![1, 2, 3].into()), "AQID"),
        ];
        for (v, want) in cases {
            assert_eq!(
                cast(v.clone(), "string").unwrap(),
                Value::from(want),
                "{v:?}"
            );
        }
    }

    #[test]
    fn bytes_only_cast_to_string() {
        let e = cast(Value::Bytes(vec![1].into()), "int32").unwrap_err();
        assert_eq!(
            e.to_string(),
            "Unexpected type in Cast transformation: BYTES"
        );
    }

    #[test]
    fn unsupported_inputs_are_errors() {
        let e = cast(Value::Array(vec![]), "string").unwrap_err();
        assert!(
            e.to_string()
                .contains("does not support casting from ARRAY"),
            "{e}"
        );
        let e = whole(
            "int32",
            Some(SchemaBuilder::struct_().build().unwrap()),
            Value::Struct(Struct::new(SchemaBuilder::struct_().build().unwrap()).unwrap()),
        )
        .unwrap_err();
        assert!(
            e.to_string()
                .contains("does not support casting from STRUCT"),
            "{e}"
        );
    }

    #[test]
    fn logical_types_to_numbers_and_strings() {
        assert_eq!(
            whole("int64", Some(timestamp_schema()), Value::Timestamp(1234))
                .unwrap()
                .1,
            Value::Int64(1234)
        );
        assert_eq!(
            whole("int32", Some(time_schema()), Value::Time(1000))
                .unwrap()
                .1,
            Value::Int32(1000)
        );
        assert_eq!(
            whole("string", Some(date_schema()), Value::Date(19753))
                .unwrap()
                .1,
            Value::from("2024-01-31")
        );
        assert_eq!(
            whole("string", Some(time_schema()), Value::Time(3_600_000))
                .unwrap()
                .1,
            Value::from("01:00:00.000Z")
        );
        assert_eq!(
            whole(
                "string",
                Some(timestamp_schema()),
                Value::Timestamp(1_706_708_700_000)
            )
            .unwrap()
            .1,
            Value::from("2024-01-31T13:45:00.000Z")
        );
        // Kafka picks the format from the instant: a midnight timestamp reads as a date.
        assert_eq!(
            whole(
                "string",
                Some(timestamp_schema()),
                Value::Timestamp(MILLIS_PER_DAY)
            )
            .unwrap()
            .1,
            Value::from("1970-01-02")
        );
    }

    #[test]
    fn logical_fields_to_primitives_as_kafka_tests_them() {
        let schema = SchemaBuilder::struct_()
            .field("date_to_int32", date_schema())
            .field("timestamp_to_int64", timestamp_schema())
            .field("time_to_int64", time_schema())
            .field("decimal_to_int32", decimal_schema(0))
            .field("timestamp_to_float64", timestamp_schema())
            .field(
                "null_timestamp_to_int32",
                connect_api::logical::timestamp_builder()
                    .optional()
                    .build()
                    .unwrap(),
            )
            .build()
            .unwrap();
        let mut v = Struct::new(schema.clone()).unwrap();
        v.put("date_to_int32", Value::Date(1))
            .unwrap()
            .put("timestamp_to_int64", Value::Timestamp(0))
            .unwrap()
            .put("time_to_int64", Value::Time(1))
            .unwrap()
            .put("decimal_to_int32", Decimal::new(i64::from(i32::MAX) + 1, 0))
            .unwrap()
            .put("timestamp_to_float64", Value::Timestamp(i64::MAX))
            .unwrap();
        let mut t = smt(
            Side::Value,
            "date_to_int32:int32,timestamp_to_int64:int64,time_to_int64:int64,\
             decimal_to_int32:int32,timestamp_to_float64:float64,null_timestamp_to_int32:int32",
        )
        .unwrap();
        let out = t
            .apply(sink(Some(schema), Value::Struct(v)))
            .unwrap()
            .unwrap();
        let got = out.record.value.as_struct().unwrap();
        got.validate().unwrap();
        assert_eq!(got.get("date_to_int32").unwrap(), &Value::Int32(1));
        assert_eq!(got.get("timestamp_to_int64").unwrap(), &Value::Int64(0));
        assert_eq!(got.get("time_to_int64").unwrap(), &Value::Int64(1));
        assert_eq!(
            got.get("decimal_to_int32").unwrap(),
            &Value::Int32(i32::MIN)
        );
        assert_eq!(
            got.get("timestamp_to_float64").unwrap(),
            &Value::Float64(9.223372036854776E18)
        );
        assert_eq!(got.get("null_timestamp_to_int32").unwrap(), &Value::Null);
        let s = out.record.value_schema.unwrap();
        assert_eq!(
            s.field("null_timestamp_to_int32").unwrap().schema(),
            &Schema::optional_int32()
        );
    }

    #[test]
    fn whole_value_default_is_truncated_like_java() {
        let schema = SchemaBuilder::float32()
            .default_value(-42.125f32)
            .build()
            .unwrap();
        let (s, v) = whole("int32", Some(schema), Value::Float32(42.125)).unwrap();
        assert_eq!(v, Value::Int32(42));
        assert_eq!(s.unwrap().default_value(), Some(&Value::Int32(-42)));
    }

    #[test]
    fn decimals_cast_like_big_decimal() {
        let d = |u: i64, s: i32| Value::Decimal(Decimal::new(u, s));
        let schema = Some(decimal_schema(2));
        assert_eq!(
            whole("int32", schema.clone(), d(-1299, 2)).unwrap().1,
            Value::Int32(-12)
        );
        assert_eq!(
            whole("float64", schema.clone(), d(1250, 2)).unwrap().1,
            Value::Float64(12.5)
        );
        assert_eq!(
            whole("boolean", schema.clone(), d(50, 2)).unwrap().1,
            Value::Boolean(false)
        );
        assert_eq!(
            whole("string", schema, d(1250, 2)).unwrap().1,
            Value::from("12.50")
        );
        // Huge scales neither allocate nor panic.
        assert_eq!(cast(d(5, i32::MAX), "int64").unwrap(), Value::Int64(0));
        assert_eq!(cast(d(5, i32::MIN), "int64").unwrap(), Value::Int64(0));
        // Low 64 bits, as BigDecimal.longValue.
        let big = Value::Decimal(Decimal::new(BigInt::from(1u128 << 64) + 3, 0));
        assert_eq!(cast(big, "int64").unwrap(), Value::Int64(3));
    }

    fn struct_schema() -> Schema {
        SchemaBuilder::struct_()
            .name("com.example.S")
            .field("int8", Schema::int8())
            .field("int32", Schema::optional_int32())
            .field(
                "dflt",
                SchemaBuilder::int64()
                    .optional()
                    .default_value(9i64)
                    .build()
                    .unwrap(),
            )
            .field("string", Schema::string())
            .field("other", Schema::string())
            .field("ts", timestamp_schema())
            .build()
            .unwrap()
    }

    fn struct_value() -> Value {
        let mut s = Struct::new(struct_schema()).unwrap();
        s.put("int8", 8i8)
            .unwrap()
            .put("string", "42")
            .unwrap()
            .put("other", "x")
            .unwrap()
            .put("ts", Value::Timestamp(1000))
            .unwrap();
        Value::Struct(s)
    }

    #[test]
    fn fields_with_schema() {
        let mut t = smt(
            Side::Value,
            "int8:int16,int32:string,dflt:string,string:int32,ts:int64,absent:int8",
        )
        .unwrap();
        let out = t
            .apply(sink(Some(struct_schema()), struct_value()))
            .unwrap()
            .unwrap();
        let s = out.record.value_schema.as_ref().unwrap();
        assert_eq!(s.name(), Some("com.example.S"));
        assert_eq!(s.field("int8").unwrap().schema(), &Schema::int16());
        assert_eq!(
            s.field("int32").unwrap().schema(),
            &Schema::optional_string()
        );
        let dflt = s.field("dflt").unwrap().schema();
        assert_eq!(dflt.ty(), Type::String);
        assert_eq!(dflt.default_value(), Some(&Value::from("9")));
        assert_eq!(s.field("other").unwrap().schema(), &Schema::string());
        assert_eq!(s.field("ts").unwrap().schema(), &Schema::int64());

        let v = out.record.value.as_struct().unwrap();
        v.validate().unwrap();
        assert_eq!(v.get("int8").unwrap(), &Value::Int16(8));
        assert_eq!(v.get_without_default("int32").unwrap(), &Value::Null);
        assert_eq!(v.get_without_default("dflt").unwrap(), &Value::from("9"));
        assert_eq!(v.get("string").unwrap(), &Value::Int32(42));
        assert_eq!(v.get("other").unwrap(), &Value::from("x"));
        assert_eq!(v.get("ts").unwrap(), &Value::Int64(1000));
    }

    #[test]
    fn replace_null_with_default_false_keeps_null() {
        let mut t = Cast::new(Side::Value);
        t.configure(&props(&[
            ("spec", "dflt:string"),
            ("replace.null.with.default", "false"),
        ]))
        .unwrap();
        let out = t
            .apply(sink(Some(struct_schema()), struct_value()))
            .unwrap()
            .unwrap();
        let v = out.record.value.as_struct().unwrap();
        assert_eq!(v.get_without_default("dflt").unwrap(), &Value::Null);
    }

    #[test]
    fn schema_without_listed_fields_is_kept_with_defaults_read() {
        let mut t = smt(Side::Value, "absent:int8").unwrap();
        let v = struct_value();
        let input = v.as_struct().unwrap().schema().clone();
        let out = t.apply(sink(Some(input.clone()), v)).unwrap().unwrap();
        assert!(out.record.value_schema.as_ref().unwrap().ptr_eq(&input));
        let v = out.record.value.as_struct().unwrap();
        assert_eq!(v.get_without_default("dflt").unwrap(), &Value::Int64(9));
        assert_eq!(v.get("string").unwrap(), &Value::from("42"));
    }

    #[test]
    fn field_errors_name_the_field() {
        let mut t = smt(Side::Value, "other:int32").unwrap();
        let e = t
            .apply(sink(Some(struct_schema()), struct_value()))
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "other: Value (x) was out of range for requested data type"
        );
    }

    #[test]
    fn schemaless_fields_and_absent_keys() {
        let mut t = smt(Side::Value, "a:int64,b:string,c:boolean").unwrap();
        let value = Value::string_map([
            ("a", Value::from("12")),
            ("b", Value::Float64(2.5)),
            ("z", Value::from("kept")),
        ]);
        let out = t.apply(sink(None, value)).unwrap().unwrap();
        assert_eq!(
            out.record.value,
            Value::string_map([
                ("a", Value::Int64(12)),
                ("b", Value::from("2.5")),
                ("z", Value::from("kept")),
                ("c", Value::Null),
            ])
        );
    }

    #[test]
    fn key_side_and_tombstones() {
        let mut t = smt(Side::Key, "int64").unwrap();
        let out = t
            .apply(sink_key(Some(Schema::int32()), Value::Int32(5)))
            .unwrap()
            .unwrap();
        assert_eq!(out.record.key, Value::Int64(5));
        assert_eq!(out.record.key_schema, Some(Schema::int64()));
        assert_eq!(out.record.value, Value::from("v"));

        let mut t = smt(Side::Value, "int64").unwrap();
        let out = t.apply(sink(None, Value::Null)).unwrap().unwrap();
        assert!(out.record.value.is_null() && out.record.value_schema.is_none());
        let out = t
            .apply(sink(Some(Schema::optional_int32()), Value::Null))
            .unwrap()
            .unwrap();
        assert_eq!(out.record.value_schema, Some(Schema::optional_int32()));
    }

    #[test]
    fn non_struct_operand_is_an_error() {
        let mut t = smt(Side::Value, "a:int8").unwrap();
        let e = t
            .apply(sink(Some(Schema::int32()), Value::Int32(1)))
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "Only Struct objects supported for [cast types], found: INT32"
        );
        let e = t.apply(sink(None, Value::Int32(1))).unwrap_err();
        assert!(e.to_string().contains("Only Map objects"), "{e}");
    }

    #[test]
    fn schema_is_derived_once() {
        let mut t = smt(Side::Value, "int8:int16").unwrap();
        let a = t
            .apply(sink(Some(struct_schema()), struct_value()))
            .unwrap()
            .unwrap();
        let b = t
            .apply(sink(Some(struct_schema()), struct_value()))
            .unwrap()
            .unwrap();
        assert!(a
            .record
            .value_schema
            .unwrap()
            .ptr_eq(b.record.value_schema.as_ref().unwrap()));
    }

    #[test]
    fn every_key_is_documented() {
        let def = Configurable::config_def(&Cast::new(Side::Value));
        assert_eq!(def.keys().len(), 2);
        assert!(def.keys().iter().all(|k| !k.documentation.is_empty()));
    }

    #[test]
    fn floats_are_written_as_java_does() {
        for (v, java) in [
            (Value::Float64(1.25), "1.25"),
            (Value::Float64(1e10), "1.0E10"),
            (Value::Float64(1e-5), "1.0E-5"),
            (Value::Float64(4.9e-324), "4.9E-324"),
            (Value::Float64(f64::NAN), "NaN"),
            (Value::Float64(-0.0), "-0.0"),
            (Value::Float32(1e10), "1.0E10"),
            (Value::Float32(1e-5), "1.0E-5"),
            (Value::Float32(0.1), "0.1"),
        ] {
            assert_eq!(cast_to_string(v), java);
        }
    }

    proptest! {
        #[test]
        fn int32_through_int64_round_trips(i in any::<i32>()) {
            let wide = cast(Value::Int32(i), "int64").unwrap();
            prop_assert_eq!(cast(wide, "int32").unwrap(), Value::Int32(i));
        }

        #[test]
        fn int64_through_string_round_trips(i in any::<i64>()) {
            let s = cast(Value::Int64(i), "string").unwrap();
            prop_assert_eq!(cast(s, "int64").unwrap(), Value::Int64(i));
        }

        #[test]
        fn float64_through_string_round_trips(f in any::<f64>()) {
            let s = cast(Value::Float64(f), "string").unwrap();
            match cast(s, "float64").unwrap() {
                // Java's "NaN" keeps no payload either.
                Value::Float64(g) if f.is_nan() => prop_assert!(g.is_nan()),
                other => prop_assert_eq!(other, Value::Float64(f)),
            }
        }

        #[test]
        fn float32_through_string_round_trips(f in any::<f32>()) {
            let s = cast(Value::Float32(f), "string").unwrap();
            match cast(s, "float32").unwrap() {
                // Java's "NaN" keeps no payload either.
                Value::Float32(g) if f.is_nan() => prop_assert!(g.is_nan()),
                other => prop_assert_eq!(other, Value::Float32(f)),
            }
        }

        #[test]
        fn int8_through_float64_round_trips(i in any::<i8>()) {
            let f = cast(Value::Int8(i), "float64").unwrap();
            prop_assert_eq!(cast(f, "int8").unwrap(), Value::Int8(i));
        }

        #[test]
        fn boolean_through_string_round_trips(b in any::<bool>()) {
            let s = cast(Value::Boolean(b), "string").unwrap();
            prop_assert_eq!(cast(s, "boolean").unwrap(), Value::Boolean(b));
        }
    }
}
