//! `TimestampConverter$Key` / `$Value`: convert a timestamp between a
//! formatted string, a Unix number, and the Date, Time and Timestamp logical
//! types, for the whole key/value or one field of it.
//!
//! With a schema the source type comes from the schema (the logical types,
//! STRING = formatted string, INT64 = Unix time); without one it is inferred
//! from the value. Strings use a Java `SimpleDateFormat` pattern in UTC
//! ([`date_format`]).

pub mod date_format;

use connect_api::config::validators::ValidString;
use connect_api::config::{ConfigDef, ConfigKey, ConfigMap, ConfigType, Importance};
use connect_api::logical::{self, LogicalType};
use connect_api::transform::{Configurable, Transformation, Verdict};
use connect_api::{
    ConnectError, ConnectRecord, Result, Schema, SchemaBuilder, Struct, Type, Value,
};

use crate::util::{SchemaCache, Side};
use date_format::DateFormat;

/// Kafka's class name (add `$Key` or `$Value`).
pub const CLASS: &str = "org.apache.kafka.connect.transforms.TimestampConverter";

const FIELD: &str = "field";
const TARGET_TYPE: &str = "target.type";
const FORMAT: &str = "format";
const UNIX_PRECISION: &str = "unix.precision";
const REPLACE_NULL_WITH_DEFAULT: &str = "replace.null.with.default";
const PURPOSE: &str = "converting timestamp formats";
const MILLIS_PER_DAY: i64 = 86_400_000;

/// The representations a timestamp can have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimestampType {
    /// A string in the configured `format`.
    String,
    /// A number since the epoch in `unix.precision` units (INT64).
    Unix,
    /// The Date logical type.
    Date,
    /// The Time logical type.
    Time,
    /// The Timestamp logical type.
    Timestamp,
}

impl TimestampType {
    fn from_config(s: &str) -> Option<Self> {
        Some(match s {
            "string" => TimestampType::String,
            "unix" => TimestampType::Unix,
            "Date" => TimestampType::Date,
            "Time" => TimestampType::Time,
            "Timestamp" => TimestampType::Timestamp,
            _ => return None,
        })
    }

    /// The type a schema stands for: a logical type, STRING or INT64.
    fn of_schema(schema: &Schema) -> Result<Self> {
        Ok(match (LogicalType::of(schema), schema.ty()) {
            (Some(LogicalType::Date), _) => TimestampType::Date,
            (Some(LogicalType::Time), _) => TimestampType::Time,
            (Some(LogicalType::Timestamp), _) => TimestampType::Timestamp,
            (None, Type::String) => TimestampType::String,
            (None, Type::Int64) => TimestampType::Unix,
            _ => {
                return Err(ConnectError::data(format!(
                    "Schema {schema} does not correspond to a known timestamp type format"
                )))
            }
        })
    }

    /// The type a schemaless value stands for.
    fn of_value(value: &Value) -> Result<Self> {
        Ok(match value {
            Value::String(_) => TimestampType::String,
            Value::Int64(_) => TimestampType::Unix,
            Value::Date(_) => TimestampType::Date,
            Value::Time(_) => TimestampType::Time,
            Value::Timestamp(_) => TimestampType::Timestamp,
            other => {
                return Err(ConnectError::data(format!(
                    "TimestampConverter does not support {} objects as timestamps",
                    other.type_name()
                )))
            }
        })
    }

    fn schema(self, optional: bool) -> Schema {
        let builder = match self {
            TimestampType::String => {
                return Schema::of_type(Type::String, optional)
                    .unwrap_or_else(Schema::optional_string)
            }
            TimestampType::Unix => {
                return Schema::of_type(Type::Int64, optional)
                    .unwrap_or_else(Schema::optional_int64)
            }
            TimestampType::Date => logical::date_builder(),
            TimestampType::Time => logical::time_builder(),
            TimestampType::Timestamp => logical::timestamp_builder(),
        };
        let builder = if optional {
            builder.optional()
        } else {
            builder
        };
        match builder.build() {
            Ok(s) => s,
            // Name, version and optional are each set once and there is no
            // default, so the builder cannot refuse.
            Err(e) => unreachable!("logical timestamp schema rejected: {e}"),
        }
    }
}

/// Units of a Unix timestamp (`unix.precision`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Precision {
    Seconds,
    Milliseconds,
    Microseconds,
    Nanoseconds,
}

impl Precision {
    fn from_config(s: &str) -> Option<Self> {
        Some(match s {
            "seconds" => Precision::Seconds,
            "milliseconds" => Precision::Milliseconds,
            "microseconds" => Precision::Microseconds,
            "nanoseconds" => Precision::Nanoseconds,
            _ => return None,
        })
    }

    /// Like Java's `TimeUnit` conversions: truncate toward zero, saturate.
    fn to_millis(self, v: i64) -> i64 {
        match self {
            Precision::Seconds => v.saturating_mul(1000),
            Precision::Milliseconds => v,
            Precision::Microseconds => v / 1000,
            Precision::Nanoseconds => v / 1_000_000,
        }
    }

    fn of_millis(self, ms: i64) -> i64 {
        match self {
            Precision::Seconds => ms / 1000,
            Precision::Milliseconds => ms,
            Precision::Microseconds => ms.saturating_mul(1000),
            Precision::Nanoseconds => ms.saturating_mul(1_000_000),
        }
    }
}

#[derive(Debug)]
struct Config {
    field: String,
    target: TimestampType,
    format: Option<DateFormat>,
    precision: Precision,
    replace_null_with_default: bool,
    required_schema: Schema,
    optional_schema: Schema,
}

/// Kafka's `TimestampConverter`: converts a timestamp (the whole key/value,
/// or the struct/map field `field`) to `target.type`.
///
/// ```
/// use connect_api::config::ConfigMap;
/// use connect_api::transform::{Configurable, Transformation};
/// use connect_api::{Record, SinkRecord, Value};
/// use connect_transforms::timestamp_converter::TimestampConverter;
/// use connect_transforms::util::Side;
///
/// let mut smt = TimestampConverter::new(Side::Value);
/// let cfg = ConfigMap::from([("target.type", "string"), ("format", "yyyy-MM-dd")]);
/// smt.configure(&cfg).unwrap();
/// let rec = SinkRecord::new(Record::new("t", None, Value::Int64(1_706_708_700_000)), 0, 0);
/// let out = smt.apply(rec).unwrap().unwrap();
/// assert_eq!(out.record.value, Value::from("2024-01-31"));
/// ```
#[derive(Debug)]
pub struct TimestampConverter {
    side: Side,
    config: Option<Config>,
    cache: SchemaCache,
}

impl TimestampConverter {
    /// An unconfigured converter for the key or the value.
    pub fn new(side: Side) -> Self {
        TimestampConverter {
            side,
            config: None,
            cache: SchemaCache::default(),
        }
    }
}

/// The keys TimestampConverter accepts, with Kafka's defaults.
pub fn config_def() -> ConfigDef {
    ConfigDef::new()
        .define(
            ConfigKey::new(FIELD, ConfigType::String)
                .default("")
                .importance(Importance::High)
                .doc("The field containing the timestamp, or empty if the entire value is a timestamp"),
        )
        .define(
            ConfigKey::new(TARGET_TYPE, ConfigType::String)
                .importance(Importance::High)
                .validator(ValidString::of(["string", "unix", "Date", "Time", "Timestamp"]))
                .doc("The desired timestamp representation: string, unix, Date, Time, or Timestamp"),
        )
        .define(
            ConfigKey::new(FORMAT, ConfigType::String)
                .default("")
                .importance(Importance::Medium)
                .doc("A SimpleDateFormat-compatible format for the timestamp. Used to generate the output when type=string or used to parse the input if the input is a string."),
        )
        .define(
            ConfigKey::new(UNIX_PRECISION, ConfigType::String)
                .default("milliseconds")
                .importance(Importance::Low)
                .validator(ValidString::of(["nanoseconds", "microseconds", "milliseconds", "seconds"]))
                .doc("The desired Unix precision for the timestamp: seconds, milliseconds, microseconds, or nanoseconds. Used to generate the output when type=unix or used to parse the input if the input is a Long."),
        )
        .define(
            ConfigKey::new(REPLACE_NULL_WITH_DEFAULT, ConfigType::Boolean)
                .default(true)
                .importance(Importance::Medium)
                .doc("Whether to replace fields that have a default value and that are null to the default value. When set to true, the default value is used, otherwise null is used."),
        )
}

impl Config {
    fn parse(props: &ConfigMap) -> Result<Config> {
        let cfg = config_def().parse(props)?;
        let target = cfg
            .get_string(TARGET_TYPE)
            .and_then(TimestampType::from_config)
            .ok_or_else(|| {
                ConnectError::config(
                    TARGET_TYPE,
                    "must be one of string, unix, Date, Time, Timestamp",
                )
            })?;
        let pattern = cfg.get_string(FORMAT).unwrap_or_default();
        let format = if pattern.is_empty() {
            if target == TimestampType::String {
                return Err(ConnectError::config(
                    FORMAT,
                    "TimestampConverter requires format option to be specified when using string timestamps",
                ));
            }
            None
        } else {
            Some(DateFormat::new(pattern).map_err(|e| {
                ConnectError::config(
                    FORMAT,
                    format!("TimestampConverter requires a SimpleDateFormat-compatible pattern for string timestamps: {e}"),
                )
            })?)
        };
        Ok(Config {
            field: cfg.get_string(FIELD).unwrap_or_default().to_string(),
            target,
            format,
            precision: cfg
                .get_string(UNIX_PRECISION)
                .and_then(Precision::from_config)
                .unwrap_or(Precision::Milliseconds),
            replace_null_with_default: cfg.get_bool(REPLACE_NULL_WITH_DEFAULT).unwrap_or(true),
            required_schema: target.schema(false),
            optional_schema: target.schema(true),
        })
    }

    fn target_schema(&self, optional: bool) -> &Schema {
        if optional {
            &self.optional_schema
        } else {
            &self.required_schema
        }
    }

    fn format(&self) -> Result<&DateFormat> {
        self.format.as_ref().ok_or_else(|| {
            ConnectError::config(
                FORMAT,
                "TimestampConverter requires a SimpleDateFormat-compatible pattern for string timestamps",
            )
        })
    }

    /// `value` of type `source` as epoch milliseconds.
    fn to_millis(&self, source: TimestampType, value: &Value) -> Result<i64> {
        let mismatch = || {
            ConnectError::data(format!(
                "Expected a {source:?} timestamp, found {}",
                value.type_name()
            ))
        };
        Ok(match (source, value) {
            (TimestampType::String, Value::String(s)) => {
                let f = self.format()?;
                f.parse(s).map_err(|e| {
                    ConnectError::data(format!(
                        "Could not parse timestamp: value ({s}) does not match pattern ({}): {e}",
                        f.pattern()
                    ))
                })?
            }
            (TimestampType::Unix, Value::Int64(v)) => self.precision.to_millis(*v),
            (TimestampType::Date, Value::Date(d) | Value::Int32(d)) => {
                i64::from(*d) * MILLIS_PER_DAY
            }
            (TimestampType::Time, Value::Time(t) | Value::Int32(t)) => i64::from(*t),
            (TimestampType::Timestamp, Value::Timestamp(t) | Value::Int64(t)) => *t,
            _ => return Err(mismatch()),
        })
    }

    fn to_target(&self, millis: i64) -> Result<Value> {
        Ok(match self.target {
            TimestampType::String => {
                Value::String(self.format()?.format(millis).map_err(ConnectError::data)?)
            }
            TimestampType::Unix => Value::Int64(self.precision.of_millis(millis)),
            TimestampType::Date => Value::Date(
                i32::try_from(millis.div_euclid(MILLIS_PER_DAY)).map_err(|_| {
                    ConnectError::data(format!("timestamp {millis} ms is out of range for a Date"))
                })?,
            ),
            TimestampType::Time => Value::Time(millis.rem_euclid(MILLIS_PER_DAY) as i32),
            TimestampType::Timestamp => Value::Timestamp(millis),
        })
    }

    /// Convert `value` of `source`; null stays null.
    fn convert(&self, source: TimestampType, value: &Value) -> Result<Value> {
        if value.is_null() {
            return Ok(Value::Null);
        }
        self.to_target(self.to_millis(source, value)?)
    }

    /// The struct schema with `field` retyped to the target.
    fn derive_schema(&self, schema: &Schema) -> Result<Schema> {
        let mut builder = SchemaBuilder::struct_();
        if let Some(n) = schema.name() {
            builder = builder.name(n);
        }
        if let Some(v) = schema.version() {
            builder = builder.version(v);
        }
        if let Some(d) = schema.doc() {
            builder = builder.doc(d);
        }
        if let Some(p) = schema.parameters() {
            builder = builder.parameters(p.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
        for f in schema.fields()? {
            let fs = if f.name() == self.field {
                self.target_schema(f.schema().is_optional()).clone()
            } else {
                f.schema().clone()
            };
            builder = builder.field(f.name(), fs);
        }
        if schema.is_optional() {
            builder = builder.optional();
        }
        let without_default = builder.clone().build()?;
        match schema.default_value() {
            Some(Value::Struct(d)) => {
                let converted = self.convert_struct(schema, d.clone(), &without_default)?;
                builder.default_value(converted).build()
            }
            _ => Ok(without_default),
        }
    }

    fn convert_struct(&self, schema: &Schema, value: Struct, updated: &Schema) -> Result<Value> {
        let target = schema
            .field(&self.field)
            .map(|f| (f.index(), f.schema().clone()));
        let mut out = Struct::new(updated.clone())?;
        let (_, values) = value.into_parts();
        for (i, (raw, field)) in values.into_iter().zip(schema.field_list()).enumerate() {
            let v = if raw.is_null() && self.replace_null_with_default {
                field
                    .schema()
                    .default_value()
                    .cloned()
                    .unwrap_or(Value::Null)
            } else {
                raw
            };
            let v = match &target {
                Some((idx, fs)) if *idx == i => self
                    .convert(TimestampType::of_schema(fs)?, &v)
                    .map_err(|e| e.in_field(&self.field))?,
                _ => v,
            };
            out.put_at_unchecked(i, v);
        }
        Ok(Value::Struct(out))
    }
}

impl TimestampConverter {
    fn config(&self) -> Result<&Config> {
        self.config
            .as_ref()
            .ok_or_else(|| ConnectError::other("TimestampConverter is not configured"))
    }

    fn with_schema(&mut self, schema: Schema, value: Value) -> Result<(Schema, Value)> {
        let Some(cfg) = self.config.as_ref() else {
            return Err(ConnectError::other("TimestampConverter is not configured"));
        };
        if cfg.field.is_empty() {
            let source = TimestampType::of_schema(&schema)?;
            let converted = cfg.convert(source, &value)?;
            return Ok((cfg.target_schema(schema.is_optional()).clone(), converted));
        }
        let updated = self
            .cache
            .get_or_try_insert(&schema, |s| cfg.derive_schema(s))?
            .clone();
        match value {
            Value::Null => Ok((updated, Value::Null)),
            Value::Struct(st) => {
                let v = cfg.convert_struct(&schema, st, &updated)?;
                Ok((updated, v))
            }
            other => Err(ConnectError::data(format!(
                "Only Struct objects supported for [{PURPOSE}], found: {}",
                other.type_name()
            ))),
        }
    }

    fn schemaless(&self, value: Value) -> Result<Value> {
        let cfg = self.config()?;
        if value.is_null() || cfg.field.is_empty() {
            if value.is_null() {
                return Ok(Value::Null);
            }
            return cfg.convert(TimestampType::of_value(&value)?, &value);
        }
        let mut entries = match value {
            Value::Map(m) => m,
            other => {
                return Err(ConnectError::data(format!(
                    "Only Map objects supported in absence of schema for [{PURPOSE}], found: {}",
                    other.type_name()
                )))
            }
        };
        let slot = entries
            .iter_mut()
            .find(|(k, _)| k.as_str() == Some(cfg.field.as_str()));
        match slot {
            Some((_, v)) if !v.is_null() => {
                let source = TimestampType::of_value(v).map_err(|e| e.in_field(&cfg.field))?;
                *v = cfg.convert(source, v).map_err(|e| e.in_field(&cfg.field))?;
            }
            Some(_) => {}
            // Kafka puts the (null) result under the field even when absent.
            None => entries.push((Value::String(cfg.field.clone()), Value::Null)),
        }
        Ok(Value::Map(entries))
    }
}

impl Configurable for TimestampConverter {
    fn configure(&mut self, config: &ConfigMap) -> Result<()> {
        self.config = Some(Config::parse(config)?);
        self.cache = SchemaCache::default();
        Ok(())
    }

    fn config_def(&self) -> ConfigDef {
        config_def()
    }
}

impl<R: ConnectRecord> Transformation<R> for TimestampConverter {
    fn transform(&mut self, record: &mut R) -> Result<Verdict> {
        let (schema, value) = self.side.take(record);
        let (schema, value) = match schema {
            Some(s) => {
                let (s, v) = self.with_schema(s, value)?;
                (Some(s), v)
            }
            None => (None, self.schemaless(value)?),
        };
        self.side.set(record, schema, value);
        Ok(Verdict::Keep)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use connect_api::{Record, SinkRecord, SourceMap, SourceRecord};

    const T: i64 = 1_706_708_700_123; // 2024-01-31T13:45:00.123Z
    const DAYS: i32 = 19_753; // 2024-01-31

    fn smt(side: Side, pairs: &[(&str, &str)]) -> Result<TimestampConverter> {
        let mut t = TimestampConverter::new(side);
        let cfg: ConfigMap = ConfigMap::from_pairs(pairs.iter().copied());
        t.configure(&cfg)?;
        Ok(t)
    }

    fn value_rec(schema: Option<Schema>, value: Value) -> SinkRecord {
        SinkRecord::new(Record::new("t", schema, value), 0, 0)
    }

    fn run(
        t: &mut TimestampConverter,
        schema: Option<Schema>,
        value: Value,
    ) -> Result<(Option<Schema>, Value)> {
        let out = t.apply(value_rec(schema, value))?.expect("not dropped");
        Ok((out.record.value_schema, out.record.value))
    }

    #[test]
    fn config_errors() {
        let e = smt(Side::Value, &[]).unwrap_err().to_string();
        assert!(e.contains("target.type"), "{e}");
        let e = smt(Side::Value, &[("target.type", "invalid")])
            .unwrap_err()
            .to_string();
        assert!(e.contains("target.type"), "{e}");
        let e = smt(Side::Value, &[("target.type", "string")])
            .unwrap_err()
            .to_string();
        assert!(e.contains("requires format option"), "{e}");
        let e = smt(
            Side::Value,
            &[("target.type", "unix"), ("format", "bad-pattern")],
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("SimpleDateFormat-compatible"), "{e}");
        let e = smt(
            Side::Value,
            &[("target.type", "unix"), ("unix.precision", "days")],
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("unix.precision"), "{e}");
    }

    #[test]
    fn schemaless_whole_value_conversions() {
        let fmt = ("format", "yyyy-MM-dd HH:mm:ss.SSS");
        let cases: Vec<(&str, Value, Value)> = vec![
            (
                "string",
                Value::Timestamp(T),
                Value::from("2024-01-31 13:45:00.123"),
            ),
            (
                "unix",
                Value::from("2024-01-31 13:45:00.123"),
                Value::Int64(T),
            ),
            ("Timestamp", Value::Int64(T), Value::Timestamp(T)),
            ("Date", Value::Timestamp(T), Value::Date(DAYS)),
            ("Time", Value::Timestamp(T), Value::Time(49_500_123)),
            (
                "Timestamp",
                Value::Date(DAYS),
                Value::Timestamp(i64::from(DAYS) * MILLIS_PER_DAY),
            ),
            ("Timestamp", Value::Time(1000), Value::Timestamp(1000)),
        ];
        for (target, input, expected) in cases {
            let mut t = smt(Side::Value, &[("target.type", target), fmt]).unwrap();
            let (schema, out) = run(&mut t, None, input.clone()).unwrap();
            assert_eq!(schema, None);
            assert_eq!(out, expected, "{target} from {input:?}");
        }
    }

    #[test]
    fn unix_precision_applies_both_ways() {
        for (precision, unix) in [
            ("seconds", T / 1000),
            ("milliseconds", T),
            ("microseconds", T * 1000),
            ("nanoseconds", T * 1_000_000),
        ] {
            let mut to = smt(
                Side::Value,
                &[("target.type", "unix"), ("unix.precision", precision)],
            )
            .unwrap();
            let expected = if precision == "seconds" {
                T / 1000
            } else {
                unix
            };
            assert_eq!(
                run(&mut to, None, Value::Timestamp(T)).unwrap().1,
                Value::Int64(expected)
            );
            let mut from = smt(
                Side::Value,
                &[("target.type", "Timestamp"), ("unix.precision", precision)],
            )
            .unwrap();
            let back = if precision == "seconds" {
                T / 1000 * 1000
            } else {
                T
            };
            assert_eq!(
                run(&mut from, None, Value::Int64(unix)).unwrap().1,
                Value::Timestamp(back)
            );
        }
    }

    #[test]
    fn with_schema_source_type_comes_from_schema() {
        let mut t = smt(Side::Value, &[("target.type", "Date")]).unwrap();
        let (s, v) = run(
            &mut t,
            Some(logical::timestamp_schema()),
            Value::Timestamp(T),
        )
        .unwrap();
        assert_eq!(s, Some(logical::date_schema()));
        assert_eq!(v, Value::Date(DAYS));
        // INT64 is a Unix timestamp.
        let mut t = smt(Side::Value, &[("target.type", "Timestamp")]).unwrap();
        let (s, v) = run(&mut t, Some(Schema::optional_int64()), Value::Int64(T)).unwrap();
        assert_eq!(s, Some(TimestampType::Timestamp.schema(true)));
        assert_eq!(v, Value::Timestamp(T));
        // A null optional value stays null with the new schema.
        let (s, v) = run(&mut t, Some(Schema::optional_int64()), Value::Null).unwrap();
        assert!(s.unwrap().is_optional());
        assert_eq!(v, Value::Null);
        // Other schemas are rejected.
        let e = run(&mut t, Some(Schema::int32()), Value::Int32(1))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("does not correspond to a known timestamp type"),
            "{e}"
        );
    }

    #[test]
    fn with_schema_field_is_converted_and_schema_cached() {
        let schema = SchemaBuilder::struct_()
            .name("com.example.Event")
            .field("id", Schema::int32())
            .field("ts", Schema::optional_string())
            .field(
                "note",
                SchemaBuilder::string()
                    .optional()
                    .default_value("n/a")
                    .build()
                    .unwrap(),
            )
            .build()
            .unwrap();
        let mut t = smt(
            Side::Value,
            &[
                ("target.type", "Timestamp"),
                ("field", "ts"),
                ("format", "yyyy-MM-dd HH:mm:ss.SSS"),
            ],
        )
        .unwrap();
        let mut st = Struct::new(schema.clone()).unwrap();
        st.put("id", 7)
            .unwrap()
            .put("ts", "2024-01-31 13:45:00.123")
            .unwrap();
        let (s, v) = run(&mut t, Some(schema.clone()), Value::Struct(st.clone())).unwrap();
        let s = s.unwrap();
        assert_eq!(s.name(), Some("com.example.Event"));
        assert_eq!(
            s.field("ts").unwrap().schema(),
            &TimestampType::Timestamp.schema(true)
        );
        let out = v.as_struct().unwrap();
        assert_eq!(out.get("ts").unwrap(), &Value::Timestamp(T));
        assert_eq!(out.get("id").unwrap(), &Value::Int32(7));
        // replace.null.with.default=true (default) writes the default in.
        assert_eq!(
            out.get_without_default("note").unwrap(),
            &Value::from("n/a")
        );
        out.validate().unwrap();
        // Second record reuses the derived schema.
        let (s2, _) = run(&mut t, Some(schema.clone()), Value::Struct(st.clone())).unwrap();
        assert!(s2.unwrap().ptr_eq(&s));
        // Null struct stays null; a bad string names the field.
        assert_eq!(
            run(&mut t, Some(schema.clone()), Value::Null).unwrap().1,
            Value::Null
        );
        st.put("ts", "yesterday").unwrap();
        let e = run(&mut t, Some(schema.clone()), Value::Struct(st))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("ts: Could not parse timestamp: value (yesterday)"),
            "{e}"
        );
        let e = run(&mut t, Some(schema), Value::Int32(1))
            .unwrap_err()
            .to_string();
        assert!(e.contains("Only Struct objects supported"), "{e}");
    }

    #[test]
    fn replace_null_with_default_false_keeps_nulls() {
        let schema = SchemaBuilder::struct_()
            .field("ts", Schema::optional_int64())
            .field(
                "note",
                SchemaBuilder::string()
                    .optional()
                    .default_value("n/a")
                    .build()
                    .unwrap(),
            )
            .build()
            .unwrap();
        let mut t = smt(
            Side::Value,
            &[
                ("target.type", "Timestamp"),
                ("field", "ts"),
                ("replace.null.with.default", "false"),
            ],
        )
        .unwrap();
        let st = Struct::new(schema.clone()).unwrap();
        let (_, v) = run(&mut t, Some(schema), Value::Struct(st)).unwrap();
        assert_eq!(
            v.as_struct().unwrap().get_without_default("note").unwrap(),
            &Value::Null
        );
    }

    #[test]
    fn schemaless_field_in_map() {
        let mut t = smt(Side::Value, &[("target.type", "unix"), ("field", "ts")]).unwrap();
        let map = Value::string_map([("ts", Value::Timestamp(T)), ("x", Value::Int32(1))]);
        let (_, v) = run(&mut t, None, map).unwrap();
        assert_eq!(v.map_get("ts"), Some(&Value::Int64(T)));
        assert_eq!(v.map_get("x"), Some(&Value::Int32(1)));
        // Absent field: Kafka writes a null entry.
        let (_, v) = run(&mut t, None, Value::string_map([("x", Value::Int32(1))])).unwrap();
        assert_eq!(v.map_get("ts"), Some(&Value::Null));
        // Tombstones pass; non-maps are rejected; unsupported types named.
        assert_eq!(run(&mut t, None, Value::Null).unwrap().1, Value::Null);
        assert!(run(&mut t, None, Value::Int64(1)).is_err());
        let e = run(
            &mut t,
            None,
            Value::string_map([("ts", Value::Float64(1.0))]),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("does not support FLOAT64"), "{e}");
    }

    #[test]
    fn key_side_and_source_records() {
        let mut t = TimestampConverter::new(Side::Key);
        let cfg: ConfigMap = [("target.type".to_string(), "Date".to_string())].into();
        t.configure(&cfg).unwrap();
        let rec = SourceRecord::new(
            Default::default(),
            SourceMap::new(),
            Record::new("t", None, Value::Int32(5))
                .with_key(Some(logical::timestamp_schema()), Value::Timestamp(T)),
        );
        let out = t.apply(rec).unwrap().unwrap();
        assert_eq!(out.record.key, Value::Date(DAYS));
        assert_eq!(out.record.value, Value::Int32(5));
    }
}
