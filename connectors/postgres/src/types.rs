//! PostgreSQL column types as Debezium represents them: the Connect schema
//! of a column, and its value parsed from PostgreSQL's text output (the
//! same text in a snapshot's rows and in pgoutput's change messages, so
//! both paths share this one decoder).

use base64::Engine;
use bytes::Bytes;
use chrono::{NaiveDate, NaiveDateTime, NaiveTime, Timelike};
use connect_api::logical::{DECIMAL_NAME, SCALE_FIELD};
use connect_api::num_bigint::BigInt;
use connect_api::{ConnectError, Decimal, Result, Schema, SchemaBuilder, Struct, Value};

use crate::config::{BinaryHandling, DecimalHandling, TimePrecision};

/// Debezium's semantic type names.
pub(crate) mod names {
    pub(crate) const DATE: &str = "io.debezium.time.Date";
    pub(crate) const TIME: &str = "io.debezium.time.Time";
    pub(crate) const MICRO_TIME: &str = "io.debezium.time.MicroTime";
    pub(crate) const TIMESTAMP: &str = "io.debezium.time.Timestamp";
    pub(crate) const MICRO_TIMESTAMP: &str = "io.debezium.time.MicroTimestamp";
    pub(crate) const ZONED_TIME: &str = "io.debezium.time.ZonedTime";
    pub(crate) const ZONED_TIMESTAMP: &str = "io.debezium.time.ZonedTimestamp";
    pub(crate) const MICRO_DURATION: &str = "io.debezium.time.MicroDuration";
    pub(crate) const UUID: &str = "io.debezium.data.Uuid";
    pub(crate) const JSON: &str = "io.debezium.data.Json";
    pub(crate) const XML: &str = "io.debezium.data.Xml";
    pub(crate) const TSVECTOR: &str = "io.debezium.data.Tsvector";
    pub(crate) const LTREE: &str = "io.debezium.data.Ltree";
    pub(crate) const ENUM: &str = "io.debezium.data.Enum";
    pub(crate) const BITS: &str = "io.debezium.data.Bits";
    pub(crate) const VARIABLE_SCALE_DECIMAL: &str = "io.debezium.data.VariableScaleDecimal";
    pub(crate) const POINT: &str = "io.debezium.data.geometry.Point";
    pub(crate) const CONNECT_DATE: &str = "org.apache.kafka.connect.data.Date";
    pub(crate) const CONNECT_TIME: &str = "org.apache.kafka.connect.data.Time";
    pub(crate) const CONNECT_TIMESTAMP: &str = "org.apache.kafka.connect.data.Timestamp";
}

/// How the representation settings shape types.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Modes {
    pub decimal: DecimalHandling,
    pub time: TimePrecision,
    pub binary: BinaryHandling,
}

/// A column's PostgreSQL type, as the catalog describes it.
#[derive(Debug, Clone)]
pub(crate) struct PgType {
    /// The type's OID (a domain's base type's).
    pub oid: u32,
    /// `atttypmod`: length, precision and scale (-1 when unset).
    pub modifier: i32,
    /// `pg_type.typname` (extensions' types have no fixed OID).
    pub name: String,
    /// The labels of an enum type, in order.
    pub enum_labels: Option<Vec<String>>,
    /// The element type of an array.
    pub element: Option<Box<PgType>>,
}

/// What a column's values become.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Kind {
    Int16,
    Int32,
    Int64,
    Float32,
    Float64,
    Boolean,
    Text,
    Binary,
    /// NUMERIC with a declared scale (and MONEY, scale 2).
    Decimal {
        precision: Option<u32>,
        scale: u32,
        money: bool,
    },
    /// NUMERIC without a declared scale.
    VariableDecimal,
    Date,
    /// TIME: in microseconds when `micros`, else milliseconds.
    Time {
        micros: bool,
    },
    TimeTz,
    Timestamp {
        micros: bool,
    },
    /// TIMESTAMPTZ with its fractional digits (6 unless declared).
    TimestampTz(u32),
    Interval,
    Uuid,
    Json,
    /// An hstore, as a JSON object (`hstore.handling.mode=json`).
    Hstore,
    Xml,
    Enum(String),
    /// A string under a Debezium semantic name (tsvector, ltree).
    Named(&'static str),
    /// BIT(1).
    Bit,
    /// BIT(n) / VARBIT: the bits as bytes, little-endian.
    Bits(u32),
    Point,
    Array(Box<Kind>),
}

const NUMERIC_OID: u32 = 1700;

impl Kind {
    /// The kind of a column of type `ty` under `modes`.
    pub(crate) fn of(ty: &PgType, modes: Modes) -> Kind {
        if let Some(element) = &ty.element {
            return Kind::Array(Box::new(Kind::of(element, modes)));
        }
        if let Some(labels) = &ty.enum_labels {
            return Kind::Enum(labels.join(","));
        }
        let adaptive = modes.time != TimePrecision::Connect;
        let precision = || (ty.modifier >= 0).then_some(ty.modifier as u32);
        match ty.oid {
            21 => Kind::Int16,
            23 => Kind::Int32,
            20 | 26 => Kind::Int64,
            700 => Kind::Float32,
            701 => Kind::Float64,
            16 => Kind::Boolean,
            17 => Kind::Binary,
            NUMERIC_OID if ty.modifier >= 4 => {
                let m = (ty.modifier - 4) as u32;
                Kind::Decimal {
                    precision: Some(m >> 16),
                    scale: m & 0xFFFF,
                    money: false,
                }
            }
            NUMERIC_OID => Kind::VariableDecimal,
            790 => Kind::Decimal {
                precision: None,
                scale: 2,
                money: true,
            },
            1082 => Kind::Date,
            1083 => Kind::Time {
                micros: modes.time == TimePrecision::AdaptiveTimeMicroseconds
                    || (adaptive && precision().is_none_or(|p| p > 3)),
            },
            1266 => Kind::TimeTz,
            1114 => Kind::Timestamp {
                micros: adaptive && precision().is_none_or(|p| p > 3),
            },
            1184 => Kind::TimestampTz(precision().unwrap_or(6).min(6)),
            1186 => Kind::Interval,
            2950 => Kind::Uuid,
            114 | 3802 => Kind::Json,
            142 => Kind::Xml,
            1560 if ty.modifier == 1 => Kind::Bit,
            // Unbounded VARBIT: Debezium's length is Integer.MAX_VALUE.
            1560 | 1562 => Kind::Bits(precision().unwrap_or(i32::MAX as u32)),
            600 => Kind::Point,
            _ if ty.name == "hstore" => Kind::Hstore,
            3614 => Kind::Named(names::TSVECTOR),
            _ if ty.name == "ltree" => Kind::Named(names::LTREE),
            // Text types, network addresses, ltree, tsvector, ranges and
            // anything else: PostgreSQL's text.
            _ => Kind::Text,
        }
    }

    /// The column's Connect schema, Debezium's way.
    pub(crate) fn schema(&self, optional: bool, modes: Modes) -> Result<Schema> {
        self.schema_with_default(optional, None, modes)
    }

    /// The column's schema with `default` as its default value.
    pub(crate) fn schema_with_default(
        &self,
        optional: bool,
        default: Option<Value>,
        modes: Modes,
    ) -> Result<Schema> {
        let b = self.builder(modes)?;
        let b = if optional { b.optional() } else { b };
        match default {
            Some(v) => b.default_value(v).build(),
            None => b.build(),
        }
    }

    /// Debezium's schema default for a column whose default expression is
    /// `expr`: a literal converted like a value; a function call (a serial's
    /// `nextval(...)`, `now()`) or `CURRENT_TIMESTAMP` as the type's zero;
    /// nothing for `NULL`, for struct types and for types Debezium leaves
    /// without defaults.
    pub(crate) fn default_value(&self, expr: &str, modes: Modes) -> Option<Value> {
        let with_defaults = matches!(
            self,
            Kind::Int16
                | Kind::Int32
                | Kind::Int64
                | Kind::Float32
                | Kind::Float64
                | Kind::Boolean
                | Kind::Bit
                | Kind::Bits(_)
                | Kind::Text
                | Kind::Decimal { money: false, .. }
                | Kind::Json
                | Kind::Xml
                | Kind::Uuid
                | Kind::Date
                | Kind::Time { .. }
                | Kind::Timestamp { .. }
                | Kind::TimestampTz(_)
                | Kind::Interval
                | Kind::Enum(_)
        );
        if !with_defaults {
            return None;
        }
        let schema = self.schema(true, modes).ok()?;
        let e = expr.trim();
        let lower = e.to_ascii_lowercase();
        if lower.starts_with("null") {
            return None;
        }
        let function = e.contains('(') && !e.starts_with('(') && !e.starts_with('\'');
        if function || lower.starts_with("current_") || lower.starts_with("localtime") {
            let placeholder = match self {
                Kind::TimestampTz(_) => {
                    return self.parse(b"1970-01-01 00:00:00+00", &schema, modes).ok()
                }
                _ => self.fallback(&schema, modes),
            };
            return Some(placeholder);
        }
        // 'text'::type, (-1), 42, true
        let literal = if let Some(rest) = e.strip_prefix('\'') {
            let end = rest.find("'::").or_else(|| rest.rfind('\''))?;
            rest[..end].replace("''", "'")
        } else {
            let bare = e.trim_start_matches('(').trim_end_matches(')');
            let bare = bare.split("::").next().unwrap_or(bare).trim();
            match bare {
                "true" => "t".to_string(),
                "false" => "f".to_string(),
                other => other.to_string(),
            }
        };
        let literal = match self {
            Kind::Boolean => match literal.as_str() {
                "true" => "t".to_string(),
                "false" => "f".to_string(),
                _ => literal,
            },
            _ => literal,
        };
        self.parse(literal.as_bytes(), &schema, modes).ok()
    }

    fn builder(&self, modes: Modes) -> Result<SchemaBuilder> {
        use names::*;
        let connect_time = modes.time == TimePrecision::Connect;
        Ok(match self {
            Kind::Int16 => SchemaBuilder::int16(),
            Kind::Int32 => SchemaBuilder::int32(),
            Kind::Int64 => SchemaBuilder::int64(),
            Kind::Float32 => SchemaBuilder::float32(),
            Kind::Float64 => SchemaBuilder::float64(),
            Kind::Boolean | Kind::Bit => SchemaBuilder::boolean(),
            Kind::Text => SchemaBuilder::string(),
            Kind::Binary => match modes.binary {
                BinaryHandling::Bytes => SchemaBuilder::bytes(),
                _ => SchemaBuilder::string(),
            },
            Kind::Decimal {
                precision, scale, ..
            } => match modes.decimal {
                DecimalHandling::Precise => {
                    let b = SchemaBuilder::bytes()
                        .name(DECIMAL_NAME)
                        .version(1)
                        .parameter(SCALE_FIELD, scale.to_string());
                    match precision {
                        Some(p) => b.parameter("connect.decimal.precision", p.to_string()),
                        None => b,
                    }
                }
                DecimalHandling::Double => SchemaBuilder::float64(),
                DecimalHandling::String => SchemaBuilder::string(),
            },
            Kind::VariableDecimal => match modes.decimal {
                DecimalHandling::Precise => SchemaBuilder::struct_()
                    .name(VARIABLE_SCALE_DECIMAL)
                    .version(1)
                    .doc("Variable scaled decimal")
                    .field("scale", Schema::int32())
                    .field("value", Schema::bytes()),
                DecimalHandling::Double => SchemaBuilder::float64(),
                DecimalHandling::String => SchemaBuilder::string(),
            },
            Kind::Date if connect_time => SchemaBuilder::int32().name(CONNECT_DATE).version(1),
            Kind::Date => SchemaBuilder::int32().name(DATE).version(1),
            Kind::Time { .. } if connect_time => {
                SchemaBuilder::int32().name(CONNECT_TIME).version(1)
            }
            Kind::Time { micros: true } => SchemaBuilder::int64().name(MICRO_TIME).version(1),
            Kind::Time { micros: false } => SchemaBuilder::int32().name(TIME).version(1),
            Kind::TimeTz => SchemaBuilder::string().name(ZONED_TIME).version(1),
            Kind::Timestamp { .. } if connect_time => {
                SchemaBuilder::int64().name(CONNECT_TIMESTAMP).version(1)
            }
            Kind::Timestamp { micros: true } => {
                SchemaBuilder::int64().name(MICRO_TIMESTAMP).version(1)
            }
            Kind::Timestamp { micros: false } => SchemaBuilder::int64().name(TIMESTAMP).version(1),
            Kind::TimestampTz(_) => SchemaBuilder::string().name(ZONED_TIMESTAMP).version(1),
            Kind::Interval => SchemaBuilder::int64().name(MICRO_DURATION).version(1),
            Kind::Uuid => SchemaBuilder::string().name(UUID).version(1),
            Kind::Json | Kind::Hstore => SchemaBuilder::string().name(JSON).version(1),
            Kind::Xml => SchemaBuilder::string().name(XML).version(1),
            Kind::Named(name) => SchemaBuilder::string().name(*name).version(1),
            Kind::Enum(allowed) => SchemaBuilder::string()
                .name(ENUM)
                .version(1)
                .parameter("allowed", allowed.clone()),
            Kind::Bits(n) => SchemaBuilder::bytes()
                .name(BITS)
                .version(1)
                .parameter("length", n.to_string()),
            Kind::Point => SchemaBuilder::struct_()
                .name(POINT)
                .version(1)
                .doc("Geometry (POINT)")
                .field("x", Schema::float64())
                .field("y", Schema::float64())
                .field("wkb", SchemaBuilder::bytes().optional().build()?)
                .field("srid", SchemaBuilder::int32().optional().build()?),
            Kind::Array(element) => SchemaBuilder::array(element.schema(true, modes)?),
        })
    }

    /// The value of PostgreSQL's text `text` for this kind; `schema` is
    /// the column's (for structs).
    pub(crate) fn parse(&self, text: &[u8], schema: &Schema, modes: Modes) -> Result<Value> {
        let s = || {
            std::str::from_utf8(text)
                .map_err(|_| ConnectError::data("PostgreSQL sent text that is not UTF-8"))
        };
        let bad = |what: &str| {
            ConnectError::data(format!(
                "'{}' is not a valid {what}",
                String::from_utf8_lossy(text)
            ))
        };
        Ok(match self {
            Kind::Int16 => Value::Int16(s()?.parse().map_err(|_| bad("int2"))?),
            Kind::Int32 => Value::Int32(s()?.parse().map_err(|_| bad("int4"))?),
            Kind::Int64 => Value::Int64(s()?.parse().map_err(|_| bad("int8"))?),
            Kind::Float32 => Value::Float32(s()?.parse().map_err(|_| bad("float4"))?),
            Kind::Float64 => Value::Float64(s()?.parse().map_err(|_| bad("float8"))?),
            Kind::Boolean => Value::Boolean(text == b"t"),
            Kind::Bit => Value::Boolean(text == b"1"),
            Kind::Text | Kind::Enum(_) | Kind::Uuid | Kind::Json | Kind::Xml | Kind::Named(_) => {
                Value::String(s()?.to_string())
            }
            Kind::Hstore => Value::String(hstore_to_json(s()?).ok_or_else(|| bad("hstore"))?),
            Kind::Binary => {
                let hex = text.strip_prefix(b"\\x").ok_or_else(|| bad("bytea"))?;
                let bytes = decode_hex(hex).ok_or_else(|| bad("bytea"))?;
                match modes.binary {
                    BinaryHandling::Bytes => Value::Bytes(Bytes::from(bytes)),
                    BinaryHandling::Base64 => {
                        Value::String(base64::engine::general_purpose::STANDARD.encode(bytes))
                    }
                    BinaryHandling::Base64UrlSafe => {
                        Value::String(base64::engine::general_purpose::URL_SAFE.encode(bytes))
                    }
                    BinaryHandling::Hex => Value::String(
                        std::str::from_utf8(hex)
                            .map_err(|_| bad("bytea"))?
                            .to_string(),
                    ),
                }
            }
            Kind::Decimal { money, scale, .. } => {
                let raw = s()?;
                let cleaned: String;
                let number = if *money {
                    // lc_monetary decorations: currency symbols, grouping,
                    // parentheses for negatives.
                    let negative = raw.contains('-') || raw.starts_with('(');
                    cleaned = format!(
                        "{}{}",
                        if negative { "-" } else { "" },
                        raw.chars()
                            .filter(|c| c.is_ascii_digit() || *c == '.')
                            .collect::<String>()
                    );
                    cleaned.as_str()
                } else {
                    raw
                };
                if number == "NaN" || number.ends_with("Infinity") {
                    return Ok(Value::Null);
                }
                match modes.decimal {
                    DecimalHandling::Precise => {
                        let (unscaled, text_scale) =
                            parse_decimal(number).ok_or_else(|| bad("numeric"))?;
                        Value::Decimal(rescale(unscaled, text_scale, *scale as i32))
                    }
                    DecimalHandling::Double => {
                        Value::Float64(number.parse().map_err(|_| bad("numeric"))?)
                    }
                    DecimalHandling::String => Value::String(number.to_string()),
                }
            }
            Kind::VariableDecimal => {
                let raw = s()?;
                match modes.decimal {
                    DecimalHandling::Precise => {
                        if raw == "NaN" || raw.ends_with("Infinity") {
                            return Ok(Value::Null);
                        }
                        let (unscaled, scale) = parse_decimal(raw).ok_or_else(|| bad("numeric"))?;
                        let (unscaled, scale) = strip_trailing_zeros(unscaled, scale);
                        let mut st = Struct::new(schema.clone())?;
                        st.put_at_unchecked(0, Value::Int32(scale));
                        st.put_at_unchecked(
                            1,
                            Value::Bytes(Bytes::from(unscaled.to_signed_bytes_be())),
                        );
                        Value::Struct(st)
                    }
                    DecimalHandling::Double => {
                        Value::Float64(raw.parse().map_err(|_| bad("numeric"))?)
                    }
                    DecimalHandling::String => Value::String(raw.to_string()),
                }
            }
            // Connect's own logical types (time.precision.mode=connect)
            // are their Value variants; Debezium's are plain integers.
            Kind::Date => {
                let days = parse_date(s()?).ok_or_else(|| bad("date"))?;
                if modes.time == TimePrecision::Connect {
                    Value::Date(days)
                } else {
                    Value::Int32(days)
                }
            }
            Kind::Time { micros } => {
                let us = parse_time_micros(s()?).ok_or_else(|| bad("time"))?;
                if modes.time == TimePrecision::Connect {
                    Value::Time((us / 1000) as i32)
                } else if !micros {
                    Value::Int32((us / 1000) as i32)
                } else {
                    Value::Int64(us)
                }
            }
            Kind::TimeTz => Value::String(zoned_time(s()?).ok_or_else(|| bad("timetz"))?),
            Kind::Timestamp { micros } => {
                let us = parse_timestamp_micros(s()?).ok_or_else(|| bad("timestamp"))?;
                if modes.time == TimePrecision::Connect {
                    Value::Timestamp(us.div_euclid(1000))
                } else if !micros {
                    Value::Int64(us.div_euclid(1000))
                } else {
                    Value::Int64(us)
                }
            }
            Kind::TimestampTz(digits) => {
                Value::String(zoned_timestamp(s()?, *digits).ok_or_else(|| bad("timestamptz"))?)
            }
            // Debezium computes in doubles and truncates.
            Kind::Interval => {
                Value::Int64(interval_micros(s()?).ok_or_else(|| bad("interval"))? as i64)
            }
            Kind::Bits(_) => Value::Bytes(Bytes::from(
                bits_to_bytes(text).ok_or_else(|| bad("bit string"))?,
            )),
            Kind::Point => {
                let raw = s()?;
                let inner = raw
                    .trim()
                    .strip_prefix('(')
                    .and_then(|r| r.strip_suffix(')'))
                    .ok_or_else(|| bad("point"))?;
                let (x, y) = inner.split_once(',').ok_or_else(|| bad("point"))?;
                let x: f64 = x.trim().parse().map_err(|_| bad("point"))?;
                let y: f64 = y.trim().parse().map_err(|_| bad("point"))?;
                let mut wkb = Vec::with_capacity(21);
                wkb.push(1u8);
                wkb.extend_from_slice(&1u32.to_le_bytes());
                wkb.extend_from_slice(&x.to_le_bytes());
                wkb.extend_from_slice(&y.to_le_bytes());
                let mut st = Struct::new(schema.clone())?;
                st.put_at_unchecked(0, Value::Float64(x));
                st.put_at_unchecked(1, Value::Float64(y));
                st.put_at_unchecked(2, Value::Bytes(Bytes::from(wkb)));
                Value::Struct(st)
            }
            Kind::Array(element) => {
                let element_schema = schema
                    .value_schema()
                    .ok_or_else(|| ConnectError::data("an array schema without elements"))?;
                let items = parse_array(s()?).ok_or_else(|| bad("array"))?;
                let mut values = Vec::with_capacity(items.len());
                for item in items {
                    values.push(match item {
                        None => Value::Null,
                        Some(t) => element.parse(t.as_bytes(), element_schema, modes)?,
                    });
                }
                Value::Array(values)
            }
        })
    }
}

impl Kind {
    /// What Debezium puts in a NOT NULL column the database sent no value
    /// for (a delete's old row under `REPLICA IDENTITY DEFAULT` carries the
    /// key only): the type's zero.
    pub(crate) fn fallback(&self, schema: &Schema, modes: Modes) -> Value {
        let zero_text = |text: &str| {
            self.parse(text.as_bytes(), schema, modes)
                .unwrap_or(Value::Null)
        };
        match self {
            Kind::Int16 => Value::Int16(0),
            Kind::Int32 => Value::Int32(0),
            Kind::Int64 | Kind::Interval => Value::Int64(0),
            Kind::Float32 => Value::Float32(0.0),
            Kind::Float64 => Value::Float64(0.0),
            Kind::Boolean | Kind::Bit => Value::Boolean(false),
            Kind::Binary | Kind::Bits(_) => match schema.ty() {
                connect_api::Type::String => Value::String(String::new()),
                _ => Value::Bytes(Bytes::new()),
            },
            Kind::Decimal { .. } | Kind::VariableDecimal => zero_text("0"),
            Kind::Date | Kind::Time { .. } | Kind::Timestamp { .. }
                if modes.time == TimePrecision::Connect =>
            {
                match self {
                    Kind::Date => Value::Date(0),
                    Kind::Time { .. } => Value::Time(0),
                    _ => Value::Timestamp(0),
                }
            }
            Kind::Date => Value::Int32(0),
            Kind::Time { .. } | Kind::Timestamp { .. } => match schema.ty() {
                connect_api::Type::Int32 => Value::Int32(0),
                _ => Value::Int64(0),
            },
            Kind::TimeTz => zero_text("00:00:00+00"),
            Kind::TimestampTz(_) => zero_text("1970-01-01 00:00:00+00"),
            Kind::Json | Kind::Hstore => Value::String("{}".into()),
            Kind::Uuid => Value::String("00000000-0000-0000-0000-000000000000".into()),
            Kind::Text | Kind::Xml | Kind::Enum(_) | Kind::Named(_) => Value::String(String::new()),
            Kind::Point => zero_text("(0,0)"),
            Kind::Array(_) => Value::Array(Vec::new()),
        }
    }
}

fn decode_hex(hex: &[u8]) -> Option<Vec<u8>> {
    if !hex.len().is_multiple_of(2) {
        return None;
    }
    let digit = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    hex.chunks(2)
        .map(|p| Some((digit(p[0])? << 4) | digit(p[1])?))
        .collect()
}

/// `-12.3400` → (-123400, 4).
fn parse_decimal(text: &str) -> Option<(BigInt, i32)> {
    let t = text.trim();
    let (int, frac) = t.split_once('.').unwrap_or((t, ""));
    let digits = format!("{int}{frac}");
    if digits.is_empty() || digits == "-" || digits == "+" {
        return None;
    }
    let unscaled: BigInt = digits.parse().ok()?;
    Some((unscaled, frac.len() as i32))
}

/// `1.50` (150, 2) → (15, 1); never below scale 0 (Debezium's
/// `stripTrailingZeros` with a negative scale raised to 0).
fn strip_trailing_zeros(mut unscaled: BigInt, mut scale: i32) -> (BigInt, i32) {
    let zero = BigInt::from(0u32);
    let ten = BigInt::from(10u32);
    while scale > 0 && unscaled != zero && (&unscaled % &ten) == zero {
        unscaled /= &ten;
        scale -= 1;
    }
    if unscaled == zero {
        scale = 0;
    }
    (unscaled, scale)
}

fn rescale(unscaled: BigInt, from: i32, to: i32) -> Decimal {
    if from >= to {
        // PostgreSQL prints exactly the column's scale; anything else is
        // kept as printed.
        return Decimal::new(unscaled, from);
    }
    let factor = BigInt::from(10u32).pow((to - from) as u32);
    Decimal::new(unscaled * factor, to)
}

/// Splits PostgreSQL's ` BC` suffix off a date or timestamp.
fn era(text: &str) -> (&str, bool) {
    match text.strip_suffix(" BC") {
        Some(t) => (t, true),
        None => (text, false),
    }
}

fn epoch() -> NaiveDate {
    NaiveDate::from_ymd_opt(1970, 1, 1).expect("the epoch")
}

fn bc_year(date: NaiveDate, bc: bool) -> Option<NaiveDate> {
    if !bc {
        return Some(date);
    }
    // 1 BC is year 0 in ISO's proleptic calendar.
    NaiveDate::from_ymd_opt(
        1 - date.year_ce().1 as i32,
        date.month0() + 1,
        date.day0() + 1,
    )
}

use chrono::Datelike;

/// Days since the epoch of `2021-01-31` (or `0044-03-15 BC`).
fn parse_date(text: &str) -> Option<i32> {
    let (t, bc) = era(text.trim());
    let d = bc_year(NaiveDate::parse_from_str(t, "%Y-%m-%d").ok()?, bc)?;
    i32::try_from((d - epoch()).num_days()).ok()
}

/// Microseconds since midnight of `10:15:30.123456` (`24:00:00` allowed).
fn parse_time_micros(text: &str) -> Option<i64> {
    let t = text.trim();
    if t.starts_with("24:00:00") {
        return Some(86_400_000_000);
    }
    let time = NaiveTime::parse_from_str(t, "%H:%M:%S%.f").ok()?;
    Some(time.num_seconds_from_midnight() as i64 * 1_000_000 + (time.nanosecond() / 1000) as i64)
}

/// Microseconds since the epoch of a `timestamp` printed as
/// `2021-01-31 10:15:30.123456`.
fn parse_timestamp_micros(text: &str) -> Option<i64> {
    let (t, bc) = era(text.trim());
    let dt = NaiveDateTime::parse_from_str(t, "%Y-%m-%d %H:%M:%S%.f").ok()?;
    let date = bc_year(dt.date(), bc)?;
    let dt = date.and_time(dt.time());
    Some(dt.and_utc().timestamp_micros())
}

/// Splits a trailing `+HH`, `+HH:MM` or `+HH:MM:SS` zone off, as seconds
/// east of UTC; the sign is looked for from byte `from` on (past a date's
/// own dashes).
fn split_zone(text: &str, from: usize) -> Option<(&str, i64)> {
    let at = text.rfind(['+', '-']).filter(|i| *i >= from)?;
    let (body, zone) = text.split_at(at);
    let sign = if zone.starts_with('-') { -1 } else { 1 };
    let mut parts = zone[1..].split(':');
    let h: i64 = parts.next()?.parse().ok()?;
    let m: i64 = parts.next().map_or(Some(0), |p| p.parse().ok())?;
    let s: i64 = parts.next().map_or(Some(0), |p| p.parse().ok())?;
    Some((body, sign * (h * 3600 + m * 60 + s)))
}

/// Fractional seconds as Java's ISO_OFFSET_TIME prints them: none when
/// zero, otherwise as many digits as needed.
fn fraction_trimmed(nanos: u32) -> String {
    if nanos == 0 {
        return String::new();
    }
    let digits = format!("{nanos:09}");
    format!(".{}", digits.trim_end_matches('0'))
}

/// Exactly `digits` fractional digits (none for 0), as Debezium prints a
/// `timestamptz(digits)`.
fn fraction_fixed(nanos: u32, digits: u32) -> String {
    if digits == 0 {
        return String::new();
    }
    let all = format!("{nanos:09}");
    format!(".{}", &all[..digits.min(9) as usize])
}

/// `10:15:30.5+02` → `08:15:30.5Z` (Debezium's ZonedTime, in UTC).
fn zoned_time(text: &str) -> Option<String> {
    let (body, east) = split_zone(text.trim(), 0)?;
    let us = parse_time_micros(body)?;
    let utc = (us - east * 1_000_000).rem_euclid(86_400_000_000);
    let secs = utc / 1_000_000;
    let nanos = ((utc % 1_000_000) * 1000) as u32;
    Some(format!(
        "{:02}:{:02}:{:02}{}Z",
        secs / 3600,
        secs / 60 % 60,
        secs % 60,
        fraction_trimmed(nanos)
    ))
}

/// `2021-01-31 10:15:30.5+00` → `2021-01-31T10:15:30.5Z` (Debezium's
/// ZonedTimestamp, in UTC).
fn zoned_timestamp(text: &str, digits: u32) -> Option<String> {
    let t = text.trim();
    if t == "infinity" || t == "-infinity" {
        return Some(t.to_string());
    }
    let (t, bc) = era(t);
    let (body, east) = split_zone(t, 8)?;
    let local = parse_timestamp_micros(if bc { return None } else { body })?;
    let utc = local - east * 1_000_000;
    let dt = chrono::DateTime::from_timestamp_micros(utc)?;
    Some(format!(
        "{}{}Z",
        dt.format("%Y-%m-%dT%H:%M:%S"),
        fraction_fixed(dt.nanosecond(), digits)
    ))
}

/// An ISO 8601 interval (`IntervalStyle=iso_8601`, e.g.
/// `P1Y2M3DT4H5M6.5S`) in microseconds, with Debezium's average month
/// (30.4375 days).
fn interval_micros(text: &str) -> Option<f64> {
    let t = text.trim().strip_prefix('P')?;
    let (date, time) = t.split_once('T').unwrap_or((t, ""));
    let mut micros = 0f64;
    const DAY: f64 = 86_400_000_000.0;
    let mut parse = |part: &str, units: &[(char, f64)]| -> Option<()> {
        let mut number = String::new();
        for c in part.chars() {
            if c.is_ascii_digit() || c == '.' || c == '-' || c == '+' {
                number.push(c);
            } else {
                let unit = units.iter().find(|(u, _)| *u == c)?.1;
                micros += number.parse::<f64>().ok()? * unit;
                number.clear();
            }
        }
        number.is_empty().then_some(())
    };
    parse(
        date,
        &[
            ('Y', 12.0 * 30.4375 * DAY),
            ('M', 30.4375 * DAY),
            ('W', 7.0 * DAY),
            ('D', DAY),
        ],
    )?;
    parse(
        time,
        &[
            ('H', 3_600_000_000.0),
            ('M', 60_000_000.0),
            ('S', 1_000_000.0),
        ],
    )?;
    Some(micros)
}

/// `B'1011'` printed as `1011`: the bits as bytes, least significant
/// byte first (Java's `BitSet.toByteArray` of the reversed string).
fn bits_to_bytes(text: &[u8]) -> Option<Vec<u8>> {
    let n = text.len();
    let mut bytes = vec![0u8; n.div_ceil(8)];
    for (i, c) in text.iter().rev().enumerate() {
        match c {
            b'1' => bytes[i / 8] |= 1 << (i % 8),
            b'0' => {}
            _ => return None,
        }
    }
    // BitSet.toByteArray drops trailing zero bytes.
    while bytes.last() == Some(&0) {
        bytes.pop();
    }
    Some(bytes)
}

/// An hstore's text (`"k"=>"v", "n"=>NULL`) as a JSON object.
fn hstore_to_json(text: &str) -> Option<String> {
    let mut map = serde_json::Map::new();
    let mut chars = text.chars().peekable();
    let quoted = |chars: &mut std::iter::Peekable<std::str::Chars<'_>>| -> Option<String> {
        if chars.next()? != '"' {
            return None;
        }
        let mut out = String::new();
        loop {
            match chars.next()? {
                '\\' => out.push(chars.next()?),
                '"' => return Some(out),
                c => out.push(c),
            }
        }
    };
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace() || *c == ',') {
            chars.next();
        }
        if chars.peek().is_none() {
            return serde_json::to_string(&map).ok();
        }
        let key = quoted(&mut chars)?;
        if chars.next()? != '=' || chars.next()? != '>' {
            return None;
        }
        let value = if chars.peek() == Some(&'"') {
            serde_json::Value::String(quoted(&mut chars)?)
        } else {
            let word: String =
                std::iter::from_fn(|| chars.next_if(|c| c.is_alphabetic())).collect();
            if word != "NULL" {
                return None;
            }
            serde_json::Value::Null
        };
        map.insert(key, value);
    }
}

/// A one-dimensional array literal: `{1,NULL,"a b","q\"x"}`.
fn parse_array(text: &str) -> Option<Vec<Option<String>>> {
    let inner = text.trim().strip_prefix('{')?.strip_suffix('}')?;
    let mut items = Vec::new();
    if inner.is_empty() {
        return Some(items);
    }
    let mut chars = inner.chars().peekable();
    loop {
        let mut item = String::new();
        let quoted = chars.peek() == Some(&'"');
        if quoted {
            chars.next();
            loop {
                match chars.next()? {
                    '\\' => item.push(chars.next()?),
                    '"' => break,
                    c => item.push(c),
                }
            }
            items.push(Some(item));
        } else {
            while let Some(&c) = chars.peek() {
                if c == ',' {
                    break;
                }
                if c == '{' {
                    // Multi-dimensional arrays are not supported.
                    return None;
                }
                item.push(c);
                chars.next();
            }
            items.push((item != "NULL").then_some(item));
        }
        match chars.next() {
            None => return Some(items),
            Some(',') => {}
            Some(_) => return None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MODES: Modes = Modes {
        decimal: DecimalHandling::Precise,
        time: TimePrecision::Adaptive,
        binary: BinaryHandling::Bytes,
    };

    fn ty(oid: u32, modifier: i32) -> PgType {
        PgType {
            oid,
            modifier,
            name: String::new(),
            enum_labels: None,
            element: None,
        }
    }

    fn value(oid: u32, modifier: i32, text: &str) -> Value {
        let kind = Kind::of(&ty(oid, modifier), MODES);
        let schema = kind.schema(true, MODES).unwrap();
        kind.parse(text.as_bytes(), &schema, MODES).unwrap()
    }

    #[test]
    fn numbers_keep_their_scale() {
        // numeric(10,2): typmod = (10 << 16 | 2) + 4.
        let v = value(1700, (10 << 16 | 2) + 4, "-12.30");
        let Value::Decimal(d) = v else {
            panic!("{v:?}")
        };
        assert_eq!((d.unscaled().clone(), d.scale()), (BigInt::from(-1230), 2));
        let Value::Struct(s) = value(1700, -1, "3.14159") else {
            panic!()
        };
        assert_eq!(s.get("scale").unwrap().as_i64(), Some(5));
        let Value::Struct(s) = value(1700, -1, "1.50") else {
            panic!()
        };
        assert_eq!(
            s.get("scale").unwrap().as_i64(),
            Some(1),
            "trailing zeros stripped"
        );
        assert_eq!(s.get("value").unwrap().as_bytes(), Some(&[15u8][..]));
        let Value::Decimal(m) = value(790, -1, "-$1,234.50") else {
            panic!()
        };
        assert_eq!(m.unscaled(), &BigInt::from(-123450));
    }

    #[test]
    fn times_are_debeziums() {
        assert!(matches!(value(1082, -1, "1970-01-02"), Value::Int32(1)));
        assert!(matches!(value(1082, -1, "1969-12-31"), Value::Int32(-1)));
        assert!(matches!(
            value(1083, -1, "00:00:01.5"),
            Value::Int64(1_500_000)
        ));
        assert!(matches!(value(1083, 3, "00:00:01.5"), Value::Int32(1500)));
        assert!(matches!(
            value(1114, -1, "1970-01-01 00:00:01.000002"),
            Value::Int64(1_000_002)
        ));
        let Value::String(z) = value(1184, -1, "2021-01-31 10:15:30.5+02") else {
            panic!()
        };
        assert_eq!(z, "2021-01-31T08:15:30.500000Z");
        let Value::String(z) = value(1184, -1, "2021-01-31 10:15:30+00") else {
            panic!()
        };
        assert_eq!(z, "2021-01-31T10:15:30.000000Z");
        let Value::String(z) = value(1184, 0, "2021-01-31 10:15:30+00") else {
            panic!()
        };
        assert_eq!(z, "2021-01-31T10:15:30Z");
        let Value::String(t) = value(1266, -1, "10:15:30.123456+02") else {
            panic!()
        };
        assert_eq!(t, "08:15:30.123456Z");
        let Value::Int64(i) = value(1186, -1, "P1DT2H") else {
            panic!()
        };
        assert_eq!(i, 93_600_000_000);
        let Value::Int64(m) = value(1186, -1, "P1M") else {
            panic!()
        };
        assert_eq!(m, 2_629_800_000_000, "a month is 30.4375 days");
    }

    #[test]
    fn column_defaults_become_debeziums_schema_defaults() {
        let default =
            |oid: u32, expr: &str| Kind::of(&ty(oid, -1), MODES).default_value(expr, MODES);
        assert!(matches!(
            default(23, "nextval('t_id_seq'::regclass)"),
            Some(Value::Int32(0))
        ));
        assert!(matches!(default(23, "42"), Some(Value::Int32(42))));
        assert!(matches!(
            default(23, "'-1'::integer"),
            Some(Value::Int32(-1))
        ));
        assert!(matches!(default(20, "(-7)"), Some(Value::Int64(-7))));
        assert!(matches!(default(16, "true"), Some(Value::Boolean(true))));
        assert!(default(25, "NULL::text").is_none());
        assert_eq!(default(25, "'it''s'::text").unwrap().as_str(), Some("it's"));
        assert_eq!(
            default(1184, "now()").unwrap().as_str(),
            Some("1970-01-01T00:00:00.000000Z")
        );
        assert!(matches!(
            default(1114, "CURRENT_TIMESTAMP"),
            Some(Value::Int64(0))
        ));
        assert!(
            default(17, "'\\x00'::bytea").is_none(),
            "no defaults for bytea"
        );
    }

    #[test]
    fn arrays_bits_points_and_bytes_parse() {
        let mut int_array = ty(1007, -1);
        int_array.element = Some(Box::new(ty(23, -1)));
        let kind = Kind::of(&int_array, MODES);
        let schema = kind.schema(true, MODES).unwrap();
        let Value::Array(a) = kind.parse(b"{1,NULL,3}", &schema, MODES).unwrap() else {
            panic!()
        };
        assert!(matches!(
            a[..],
            [Value::Int32(1), Value::Null, Value::Int32(3)]
        ));
        assert_eq!(
            parse_array(r#"{"a b",NULL,"q\"x",plain}"#).unwrap(),
            vec![
                Some("a b".into()),
                None,
                Some("q\"x".into()),
                Some("plain".into())
            ]
        );
        assert_eq!(bits_to_bytes(b"1000000001").unwrap(), vec![0x01, 0x02]);
        assert_eq!(
            hstore_to_json(r#""a"=>"1", "q\"x"=>NULL"#).unwrap(),
            r#"{"a":"1","q\"x":null}"#
        );
        assert_eq!(hstore_to_json("").unwrap(), "{}");
        assert!(hstore_to_json(r#""a"=>"#).is_none());
        let Value::Bytes(b) = value(17, -1, "\\x00ff") else {
            panic!()
        };
        assert_eq!(&b[..], &[0, 255]);
        let Value::Struct(p) = value(600, -1, "(1.5,-2)") else {
            panic!()
        };
        assert!(matches!(p.get("y").unwrap(), Value::Float64(y) if *y == -2.0));
    }
}
