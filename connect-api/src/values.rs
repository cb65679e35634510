//! `Values`: render values as strings, parse strings into typed values, and
//! coerce values between types (Kafka's `Values`).
//!
//! Rendering follows Kafka's `Values.convertToString`: a top-level string is
//! written raw, nested strings are quoted; bytes are base64; Date, Time and
//! Timestamp use ISO-8601 (`2024-01-31`, `13:45:00.000Z`,
//! `2024-01-31T13:45:00.000Z`); structs and maps are written `{"k":v}` and
//! arrays `[a,b]`. [`parse_string`] reads that form back, inferring a schema;
//! the `convert_to_*` functions coerce a value (with its schema, if any) to
//! one type, returning a data error that names both types when they cannot.
//!
//! What survives `convert_to_string` then `parse_string` unchanged: BOOLEAN;
//! integers (as the smallest type that holds them: `INT32 5` reads back as
//! `INT8 5`); finite FLOAT32; Time; Date and Timestamp in years 0000-9999;
//! arrays and maps of those or of strings (quoted inside, so `["5"]` stays
//! a string) when the elements share a type. Not: a top-level STRING
//! (`"5"` reads as a number) and BYTES (their base64 text reads back as a
//! STRING, or as a number when it is all digits: `1234`), FLOAT64
//! within the float range (read as the nearest FLOAT32: lossy, as in Kafka),
//! NaN and infinities (read as STRING), Decimal (read as a float).

use std::borrow::Cow;
use std::fmt::{self, Write};
use std::sync::LazyLock;

use base64::Engine as _;

use crate::converter::SchemaAndValue;
use crate::error::{ConnectError, Result};
use crate::java_number::JavaNumber;
use crate::logical::{self, Decimal, MILLIS_PER_DAY};
use crate::projector;
use crate::schema::{Schema, SchemaBuilder, Type};
use crate::structs::Struct;
use crate::value::Value;

/// Render `value` as Kafka's `Values.convertToString` does.
///
/// ```
/// use connect_api::{values, Value};
/// assert_eq!(values::convert_to_string(&Value::from("hi")), "hi");
/// assert_eq!(values::convert_to_string(&Value::Array(vec![Value::from("a"), Value::Int32(1)])), r#"["a",1]"#);
/// assert_eq!(values::convert_to_string(&Value::Date(19753)), "2024-01-31");
/// ```
pub fn convert_to_string(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Write `value` as Java's `String.valueOf` prints the object Kafka's
/// converters make of it (`toString`): what Kafka's `FileStreamSink` writes
/// for a record value, for example.
///
/// It differs from [`convert_to_string`] for composite and temporal values:
///
/// | value | `String.valueOf` | `convert_to_string` |
/// |---|---|---|
/// | struct | `Struct{a=1,b=x}` (unset fields left out) | `{"a":1,"b":"x"}` |
/// | array | `[1, x]` | `[1,"x"]` |
/// | map | `{k=v, k2=v2}` | `{"k":"v","k2":"v2"}` |
/// | Date, Time, Timestamp | `java.util.Date`'s `Thu Jan 01 00:00:00 UTC 1970` | ISO 8601 |
///
/// Where Java's output is not reproducible, this writes a stable form
/// instead: bytes as base64 (Java prints an identity hash such as `[B@1b6d3586`),
/// map entries in the map's order (a Java `HashMap` prints in hash order), and
/// dates in UTC (Java uses the JVM's time zone). As in Java, days before
/// 1582-10-15 are Julian calendar dates.
///
/// ```
/// use connect_api::{values::java_to_string, Schema, SchemaBuilder, Struct, Value};
///
/// let schema = SchemaBuilder::struct_()
///     .field("id", Schema::int32())
///     .field("note", SchemaBuilder::string().optional().build().unwrap())
///     .build()
///     .unwrap();
/// let mut row = Struct::new(schema).unwrap();
/// row.put("id", 7).unwrap();
/// assert_eq!(java_to_string(&Value::Struct(row)), "Struct{id=7}");
/// assert_eq!(java_to_string(&Value::Array(vec![Value::from("a"), Value::Int32(1)])), "[a, 1]");
/// assert_eq!(java_to_string(&Value::Timestamp(0)), "Thu Jan 01 00:00:00 UTC 1970");
/// ```
pub fn java_to_string(value: &Value) -> String {
    let mut out = String::new();
    // Writing to a String cannot fail.
    let _ = write_java_string(&mut out, value);
    out
}

/// [`java_to_string`] into a writer (no allocation of its own).
pub fn write_java_string(f: &mut impl Write, value: &Value) -> fmt::Result {
    match value {
        Value::Array(items) => {
            f.write_char('[')?;
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                write_java_string(f, item)?;
            }
            f.write_char(']')
        }
        Value::Map(entries) => {
            f.write_char('{')?;
            for (i, (k, v)) in entries.iter().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                write_java_string(f, k)?;
                f.write_char('=')?;
                write_java_string(f, v)?;
            }
            f.write_char('}')
        }
        Value::Struct(s) => {
            // Java's Struct.toString: fields holding a value, no defaults.
            f.write_str("Struct{")?;
            let mut first = true;
            for (field, v) in s.schema().field_list().zip(s.values()) {
                if v.is_null() {
                    continue;
                }
                if !first {
                    f.write_char(',')?;
                }
                first = false;
                f.write_str(field.name())?;
                f.write_char('=')?;
                write_java_string(f, v)?;
            }
            f.write_char('}')
        }
        Value::Date(days) => write_java_date(f, i64::from(*days) * MILLIS_PER_DAY),
        Value::Time(ms) => write_java_date(f, i64::from(*ms)),
        Value::Timestamp(ms) => write_java_date(f, *ms),
        scalar => write_value(f, scalar, false),
    }
}

/// 1582-10-15, the first day of the Gregorian calendar in `java.util.Date`
/// (days since 1970-01-01); days before it are Julian calendar dates.
const GREGORIAN_CUTOVER_DAY: i64 = -141_427;

/// Days since epoch to (year, month, day) in the Julian calendar
/// (astronomical years: 1 BC is 0).
fn julian_from_days(days: i64) -> (i64, u32, u32) {
    // From the Julian day number (epoch = JDN 2440588), shifted to a
    // March-based year like `civil_from_days`.
    let c = days + 2_440_588 + 32_082;
    let d = (4 * c + 3).div_euclid(1461);
    let e = c - (1461 * d).div_euclid(4);
    let m = (5 * e + 2) / 153;
    let day = (e - (153 * m + 2) / 5 + 1) as u32;
    let month = (m + 3 - 12 * (m / 10)) as u32;
    (d - 4800 + m / 10, month, day)
}

/// `java.util.Date.toString` in UTC: `EEE MMM dd HH:mm:ss zzz yyyy`.
fn write_java_date(f: &mut impl Write, millis: i64) -> fmt::Result {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let days = millis.div_euclid(MILLIS_PER_DAY);
    let secs = millis.rem_euclid(MILLIS_PER_DAY) / 1000;
    let (y, m, d) = if days < GREGORIAN_CUTOVER_DAY {
        julian_from_days(days)
    } else {
        civil_from_days(days)
    };
    // Java prints the year of its era: 1 BC is "1", not "0".
    let y = if y > 0 { y } else { 1 - y };
    // 1970-01-01 was a Thursday; both indexes are in range by construction.
    let weekday = DAYS[days.rem_euclid(7) as usize];
    let month = MONTHS[(m as usize).saturating_sub(1) % 12];
    write!(
        f,
        "{weekday} {month} {d:02} {:02}:{:02}:{:02} UTC {y}",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
}

/// Days since epoch to (year, month, day) in the proleptic Gregorian calendar.
pub(crate) fn civil_from_days(days: i64) -> (i64, u32, u32) {
    // Howard Hinnant's algorithm (public domain), shifted to a March-based year.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// (year, month, day) to days since epoch (used by the string parser).
pub(crate) fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let m = i64::from(m);
    let mp = if m > 2 { m - 3 } else { m + 9 };
    let doy = (153 * mp + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn write_date(f: &mut impl Write, days: i64) -> fmt::Result {
    let (y, m, d) = civil_from_days(days);
    write!(f, "{y:04}-{m:02}-{d:02}")
}

fn write_time(f: &mut impl Write, ms_of_day: i64) -> fmt::Result {
    let (h, rest) = (ms_of_day / 3_600_000, ms_of_day % 3_600_000);
    let (mi, rest) = (rest / 60_000, rest % 60_000);
    let (s, ms) = (rest / 1000, rest % 1000);
    write!(f, "{h:02}:{mi:02}:{s:02}.{ms:03}Z")
}

fn write_quoted(f: &mut impl Write, s: &str) -> fmt::Result {
    f.write_char('"')?;
    for c in s.chars() {
        match c {
            '"' => f.write_str("\\\"")?,
            '\\' => f.write_str("\\\\")?,
            c => f.write_char(c)?,
        }
    }
    f.write_char('"')
}

/// Write `value` in `convertToString` form; `embedded` quotes strings.
pub(crate) fn write_value(f: &mut impl Write, value: &Value, embedded: bool) -> fmt::Result {
    match value {
        Value::Null => f.write_str("null"),
        Value::Int8(v) => write!(f, "{v}"),
        Value::Int16(v) => write!(f, "{v}"),
        Value::Int32(v) => write!(f, "{v}"),
        Value::Int64(v) => write!(f, "{v}"),
        Value::Float32(v) => f.write_str(JavaNumber::from_f32(*v).as_str()),
        Value::Float64(v) => f.write_str(JavaNumber::from_f64(*v).as_str()),
        Value::Boolean(v) => write!(f, "{v}"),
        Value::String(s) if embedded => write_quoted(f, s),
        Value::String(s) => f.write_str(s),
        Value::Bytes(b) => {
            let encoded = base64::engine::general_purpose::STANDARD.encode(b);
            if embedded {
                write_quoted(f, &encoded)
            } else {
                f.write_str(&encoded)
            }
        }
        Value::Decimal(d) => write!(f, "{d}"),
        Value::Date(d) => write_date(f, i64::from(*d)),
        Value::Time(t) => write_time(f, i64::from(*t)),
        Value::Timestamp(t) => {
            write_date(f, t.div_euclid(MILLIS_PER_DAY))?;
            f.write_char('T')?;
            write_time(f, t.rem_euclid(MILLIS_PER_DAY))
        }
        Value::Array(items) => {
            f.write_char('[')?;
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    f.write_char(',')?;
                }
                write_value(f, item, true)?;
            }
            f.write_char(']')
        }
        Value::Map(entries) => {
            f.write_char('{')?;
            for (i, (k, v)) in entries.iter().enumerate() {
                if i > 0 {
                    f.write_char(',')?;
                }
                write_value(f, k, true)?;
                f.write_char(':')?;
                write_value(f, v, true)?;
            }
            f.write_char('}')
        }
        Value::Struct(s) => {
            f.write_char('{')?;
            for (i, field) in s.schema().field_list().enumerate() {
                if i > 0 {
                    f.write_char(',')?;
                }
                write_quoted(f, field.name())?;
                f.write_char(':')?;
                write_value(f, s.value_or_default(field), true)?;
            }
            f.write_char('}')
        }
    }
}

/// Parse a string into a typed value and its inferred schema, as Kafka's
/// `Values.parseString` (used by header converters and `InsertHeader`).
///
/// | input | result |
/// |---|---|
/// | `true`, `false` (the whole input) | BOOLEAN |
/// | `null` | null, no schema |
/// | an integer | the smallest of INT8, INT16, INT32, INT64 that holds it, else a Decimal of scale 0 |
/// | a number with a fraction or exponent | FLOAT32 when finite as a float (lossy: `0.1` is the float nearest 0.1), else FLOAT64 when finite, else Decimal |
/// | `yyyy-MM-dd` | Date |
/// | `HH:mm:ss.SSSZ` | Time |
/// | `yyyy-MM-ddTHH:mm:ss.SSSZ` | Timestamp |
/// | `[a, b]` | ARRAY; numeric elements widen to a common type; schemaless when the elements share no type |
/// | `{k: v}` | MAP; keys and values as arrays' elements |
/// | anything else, or input with trailing text (`1::2`) | STRING of the whole input |
///
/// Inside arrays and maps, strings are quoted (`["a\"b"]`, backslash
/// escapes the next character), though an unquoted word is read as a string
/// too. Dates must be valid calendar dates (`2024-02-30` is a STRING), and
/// nesting deeper than 64 levels is read as a STRING rather than risking the
/// stack. Never panics.
///
/// ```
/// use connect_api::{values::parse_string, Schema, Type, Value};
///
/// let sv = parse_string("42");
/// assert_eq!((sv.schema, sv.value), (Some(Schema::int8()), Value::Int8(42)));
/// assert_eq!(parse_string("70000").value, Value::Int32(70000));
/// assert_eq!(parse_string("2.5").value, Value::Float32(2.5));
/// assert_eq!(parse_string("2024-01-31").value, Value::Date(19753));
/// let list = parse_string("[1, 300]");
/// assert_eq!(list.value, Value::Array(vec![Value::Int16(1), Value::Int16(300)]));
/// assert_eq!(list.schema.unwrap().value_schema(), Some(&Schema::int16()));
/// assert_eq!(parse_string("1::2").value, Value::from("1::2"));
/// assert_eq!(parse_string("true that").value, Value::from("true that"));
/// assert!(parse_string("null").value.is_null());
/// ```
pub fn parse_string(input: &str) -> SchemaAndValue {
    let mut parser = Parser {
        s: input,
        pos: 0,
        depth: 0,
    };
    let parsed = parser.value(false);
    parser.skip_ws();
    match parsed {
        Some((schema, value)) if parser.pos == input.len() => SchemaAndValue::new(schema, value),
        _ => SchemaAndValue::new(Some(Schema::string()), Value::String(input.to_string())),
    }
}

/// Arrays and maps nested deeper than this parse as a STRING (no stack
/// overflow on hostile headers).
const MAX_DEPTH: usize = 64;

// Built once: header converters parse every header of every record.
static DATE: LazyLock<Schema> = LazyLock::new(logical::date_schema);
static TIME: LazyLock<Schema> = LazyLock::new(logical::time_schema);
static TIMESTAMP: LazyLock<Schema> = LazyLock::new(logical::timestamp_schema);

/// Characters that end an unquoted token inside an array or map.
const DELIMITERS: &[u8] = b",:[]{}\"";

type Parsed = Option<(Option<Schema>, Value)>;

struct Parser<'a> {
    s: &'a str,
    pos: usize,
    depth: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.as_bytes().get(self.pos).copied()
    }

    fn skip_ws(&mut self) {
        while self.peek().is_some_and(|b| b.is_ascii_whitespace()) {
            self.pos += 1;
        }
    }

    fn eat(&mut self, b: u8) -> bool {
        self.skip_ws();
        if self.peek() == Some(b) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn value(&mut self, embedded: bool) -> Parsed {
        self.skip_ws();
        match self.peek()? {
            b'[' | b'{' if self.depth >= MAX_DEPTH => None,
            b'[' => {
                self.depth += 1;
                let parsed = self.array();
                self.depth -= 1;
                parsed
            }
            b'{' => {
                self.depth += 1;
                let parsed = self.map();
                self.depth -= 1;
                parsed
            }
            b'"' if embedded => self.quoted(),
            _ => {
                if let Some(parsed) = self.temporal() {
                    return Some(parsed);
                }
                let start = self.pos;
                if embedded {
                    while self.peek().is_some_and(|b| !DELIMITERS.contains(&b)) {
                        self.pos += 1;
                    }
                } else {
                    self.pos = self.s.len();
                }
                // Delimiters are ASCII, so `pos` is on a char boundary.
                let token = self.s.get(start..self.pos)?.trim();
                scalar(token, embedded)
            }
        }
    }

    fn quoted(&mut self) -> Parsed {
        self.pos += 1; // opening quote
        let mut out = String::new();
        let mut chars = self.s.get(self.pos..)?.char_indices();
        while let Some((i, c)) = chars.next() {
            match c {
                '"' => {
                    self.pos += i + 1;
                    return Some((Some(Schema::string()), Value::String(out)));
                }
                '\\' => out.push(chars.next()?.1),
                c => out.push(c),
            }
        }
        None
    }

    fn array(&mut self) -> Parsed {
        self.pos += 1; // '['
        let mut items = Vec::new();
        let mut common = Common::default();
        if !self.eat(b']') {
            loop {
                let (schema, value) = self.value(true)?;
                common.add(schema.as_ref(), &value);
                items.push(value);
                if self.eat(b']') {
                    break;
                }
                if !self.eat(b',') {
                    return None;
                }
            }
        }
        Some(match common.finish() {
            Some(elem) => {
                let items = items
                    .iter()
                    .map(|v| widen(v, &elem))
                    .collect::<Option<_>>()?;
                (SchemaBuilder::array(elem).build().ok(), Value::Array(items))
            }
            None => (None, Value::Array(items)),
        })
    }

    fn map(&mut self) -> Parsed {
        self.pos += 1; // '{'
        let mut entries = Vec::new();
        let (mut keys, mut values) = (Common::default(), Common::default());
        if !self.eat(b'}') {
            loop {
                let (ks, k) = self.value(true)?;
                if !self.eat(b':') {
                    return None;
                }
                let (vs, v) = self.value(true)?;
                keys.add(ks.as_ref(), &k);
                values.add(vs.as_ref(), &v);
                entries.push((k, v));
                if self.eat(b'}') {
                    break;
                }
                if !self.eat(b',') {
                    return None;
                }
            }
        }
        Some(match (keys.finish(), values.finish()) {
            (Some(ks), Some(vs)) => {
                let entries = entries
                    .iter()
                    .map(|(k, v)| Some((widen(k, &ks)?, widen(v, &vs)?)))
                    .collect::<Option<_>>()?;
                (SchemaBuilder::map(ks, vs).build().ok(), Value::Map(entries))
            }
            _ => (None, Value::Map(entries)),
        })
    }

    /// A Date, Time or Timestamp at the current position, when one ends at
    /// a token boundary (their `:` and `-` would otherwise split tokens).
    fn temporal(&mut self) -> Parsed {
        let rest = self.s.as_bytes().get(self.pos..)?;
        let ends_at = |len: usize| {
            rest.get(len)
                .is_none_or(|b| b.is_ascii_whitespace() || DELIMITERS.contains(b))
        };
        let (len, parsed) = if let Some(ms) = parse_timestamp(rest).filter(|_| ends_at(24)) {
            (24, (TIMESTAMP.clone(), Value::Timestamp(ms)))
        } else if let Some(ms) = parse_time(rest).filter(|_| ends_at(13)) {
            (13, (TIME.clone(), Value::Time(ms)))
        } else if let Some(days) = parse_date(rest).filter(|_| ends_at(10)) {
            (10, (DATE.clone(), Value::Date(days)))
        } else {
            return None;
        };
        self.pos += len;
        Some((Some(parsed.0), parsed.1))
    }
}

/// A bare token: boolean, null, number, or (inside arrays and maps) a string.
fn scalar(token: &str, embedded: bool) -> Parsed {
    match token {
        "" => None,
        "true" => Some((Some(Schema::boolean()), Value::Boolean(true))),
        "false" => Some((Some(Schema::boolean()), Value::Boolean(false))),
        "null" => Some((None, Value::Null)),
        _ => match number(token) {
            Some(parsed) => Some(parsed),
            None if embedded => Some((Some(Schema::string()), Value::String(token.to_string()))),
            None => None,
        },
    }
}

/// Whether `token` is `[+-]digits[.digits][(e|E)[+-]digits]` with at least
/// one mantissa digit (Java's `BigDecimal` grammar).
fn is_number(token: &str) -> bool {
    let b = token.as_bytes();
    let mut i = usize::from(matches!(b.first(), Some(b'+' | b'-')));
    let digits = |i: &mut usize| {
        let start = *i;
        while b.get(*i).is_some_and(u8::is_ascii_digit) {
            *i += 1;
        }
        *i - start
    };
    let mut mantissa = digits(&mut i);
    if b.get(i) == Some(&b'.') {
        i += 1;
        mantissa += digits(&mut i);
    }
    if mantissa == 0 {
        return false;
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return false;
        }
    }
    i == b.len()
}

fn number(token: &str) -> Parsed {
    if !is_number(token) {
        return None;
    }
    // Fast paths for the common shapes, without building a BigInt: plain
    // integers (`42`, `1.`) and plain fractions (`2.5`, scale > 0).
    let has_exponent = token.contains(['e', 'E']);
    let fraction_digits = token.find('.').map_or(0, |i| token.len() - i - 1);
    if !has_exponent && fraction_digits == 0 {
        if let Ok(v) = token.trim_end_matches('.').parse::<i64>() {
            return Some(smallest_int(v));
        }
    }
    if !has_exponent && fraction_digits > 0 {
        return float_or_decimal(token, || token.parse::<Decimal>().ok());
    }
    // An exponent, or an integer beyond INT64: BigDecimal's scale decides.
    // A scale of 0 (`1.5E1`) is an integer.
    match token.parse::<Decimal>() {
        Ok(d) if d.scale() == 0 => Some(match i64::try_from(d.unscaled()) {
            Ok(v) => smallest_int(v),
            Err(_) => (Some(logical::decimal_schema(0)), Value::Decimal(d)),
        }),
        Ok(d) => float_or_decimal(token, || Some(d)),
        // The exponent overflows a 32-bit scale: a tiny magnitude is 0.0,
        // a huge one no number we can hold (the input stays a STRING).
        Err(_) => float_or_decimal(token, || None),
    }
}

/// FLOAT32 when finite as a float, else FLOAT64 when finite, else the
/// exact decimal (when one can be built).
fn float_or_decimal(token: &str, decimal: impl FnOnce() -> Option<Decimal>) -> Parsed {
    let f = token.parse::<f32>().ok()?;
    if f.is_finite() {
        return Some((Some(Schema::float32()), Value::Float32(f)));
    }
    let f = token.parse::<f64>().ok()?;
    if f.is_finite() {
        return Some((Some(Schema::float64()), Value::Float64(f)));
    }
    let d = decimal()?;
    Some((Some(logical::decimal_schema(d.scale())), Value::Decimal(d)))
}

fn smallest_int(v: i64) -> (Option<Schema>, Value) {
    if let Ok(v) = i8::try_from(v) {
        (Some(Schema::int8()), Value::Int8(v))
    } else if let Ok(v) = i16::try_from(v) {
        (Some(Schema::int16()), Value::Int16(v))
    } else if let Ok(v) = i32::try_from(v) {
        (Some(Schema::int32()), Value::Int32(v))
    } else {
        (Some(Schema::int64()), Value::Int64(v))
    }
}

fn two_digits(b: &[u8], at: usize) -> Option<u32> {
    let (hi, lo) = (*b.get(at)?, *b.get(at + 1)?);
    (hi.is_ascii_digit() && lo.is_ascii_digit())
        .then(|| u32::from(hi - b'0') * 10 + u32::from(lo - b'0'))
}

/// `yyyy-MM-dd` at the start of `b`, as days since the epoch.
fn parse_date(b: &[u8]) -> Option<i32> {
    if b.get(4) != Some(&b'-') || b.get(7) != Some(&b'-') {
        return None;
    }
    let year = i64::from(two_digits(b, 0)? * 100 + two_digits(b, 2)?);
    let (month, day) = (two_digits(b, 5)?, two_digits(b, 8)?);
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days_in_month = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return None,
    };
    if day == 0 || day > days_in_month {
        return None;
    }
    i32::try_from(days_from_civil(year, month, day)).ok()
}

/// `HH:mm:ss.SSSZ` at the start of `b`, as milliseconds of the day.
fn parse_time(b: &[u8]) -> Option<i32> {
    if b.get(2) != Some(&b':')
        || b.get(5) != Some(&b':')
        || b.get(8) != Some(&b'.')
        || b.get(12) != Some(&b'Z')
    {
        return None;
    }
    let (h, m, s) = (two_digits(b, 0)?, two_digits(b, 3)?, two_digits(b, 6)?);
    let ms = two_digits(b, 9)? * 10 + u32::from(b.get(11).filter(|c| c.is_ascii_digit())? - b'0');
    if h > 23 || m > 59 || s > 59 {
        return None;
    }
    i32::try_from(((h * 60 + m) * 60 + s) * 1000 + ms).ok()
}

/// `yyyy-MM-ddTHH:mm:ss.SSSZ` at the start of `b`, as epoch milliseconds.
fn parse_timestamp(b: &[u8]) -> Option<i64> {
    if b.get(10) != Some(&b'T') {
        return None;
    }
    let days = parse_date(b)?;
    let ms = parse_time(b.get(11..)?)?;
    Some(i64::from(days) * MILLIS_PER_DAY + i64::from(ms))
}

/// The schema shared by the elements seen so far (`None` schemas are nulls).
#[derive(Default)]
struct Common {
    schema: Option<Schema>,
    nulls: bool,
    mixed: bool,
}

impl Common {
    fn add(&mut self, schema: Option<&Schema>, value: &Value) {
        let Some(schema) = schema else {
            // A nested schemaless array or map has no schema either.
            self.nulls |= value.is_null();
            self.mixed |= !value.is_null();
            return;
        };
        self.schema = match self.schema.take() {
            None => Some(schema.clone()),
            Some(prev) if prev == *schema => Some(prev),
            Some(prev) => {
                let wider = match (prev.name(), schema.name()) {
                    (None, None)
                        if projector::SchemaProjector::is_promotable(prev.ty(), schema.ty()) =>
                    {
                        Some(schema.clone())
                    }
                    (None, None)
                        if projector::SchemaProjector::is_promotable(schema.ty(), prev.ty()) =>
                    {
                        Some(prev)
                    }
                    _ => None,
                };
                self.mixed |= wider.is_none();
                wider
            }
        };
    }

    /// The element schema (optional when a null was seen), or `None` when
    /// the elements share no type or are all null.
    fn finish(self) -> Option<Schema> {
        if self.mixed {
            return None;
        }
        let schema = self.schema?;
        if self.nulls {
            optional_copy(&schema)
        } else {
            Some(schema)
        }
    }
}

/// The same schema, optional (parsed schemas have no default or doc).
fn optional_copy(schema: &Schema) -> Option<Schema> {
    if let (Some(s), None) = (Schema::of_type(schema.ty(), true), schema.name()) {
        return Some(s);
    }
    let builder = match logical::LogicalType::of(schema) {
        Some(logical::LogicalType::Decimal) => {
            logical::decimal_builder(logical::decimal_scale(schema).ok()?)
        }
        Some(logical::LogicalType::Date) => logical::date_builder(),
        Some(logical::LogicalType::Time) => logical::time_builder(),
        Some(logical::LogicalType::Timestamp) => logical::timestamp_builder(),
        None => match schema.ty() {
            Type::Array => SchemaBuilder::array(schema.value_schema()?.clone()),
            Type::Map => {
                SchemaBuilder::map(schema.key_schema()?.clone(), schema.value_schema()?.clone())
            }
            _ => return None,
        },
    };
    builder.optional().build().ok()
}

/// `value` as an element of `schema` (numeric widening); nulls stay null.
fn widen(value: &Value, schema: &Schema) -> Option<Value> {
    if value.is_null() || schema.name().is_some() || !schema.ty().is_primitive() {
        return Some(value.clone());
    }
    projector::promote(value, schema.ty())
}

/// A number extracted for coercion.
enum Num {
    Int(i64),
    Float(f64),
    Dec(Decimal),
}

fn unable(value: &Value, to: &str) -> ConnectError {
    ConnectError::data(format!(
        "Unable to convert a value of type {} to {to}",
        value.type_name()
    ))
}

fn out_of_range(shown: impl fmt::Display, to: &str) -> ConnectError {
    ConnectError::data(format!(
        "Unable to convert {shown} to {to}: the value is out of range"
    ))
}

/// The value with a logical schema applied: an INT32 under a Date schema
/// becomes a [`Value::Date`], Decimal bytes a [`Value::Decimal`].
fn logical_view<'a>(schema: Option<&Schema>, value: &'a Value) -> Result<Cow<'a, Value>> {
    match schema {
        Some(s) if s.name().is_some() && logical::LogicalType::of(s).is_some() => {
            Ok(Cow::Owned(logical::from_primitive(s, value.clone())?))
        }
        _ => Ok(Cow::Borrowed(value)),
    }
}

/// A string parsed with [`parse_string`], for coercions that accept text;
/// an error when it parses to nothing but a string.
fn parse_text(text: &str, to: &str) -> Result<Value> {
    match parse_string(text).value {
        Value::String(_) => Err(ConnectError::data(format!(
            "Unable to convert a STRING to {to}: the text does not parse as {to}"
        ))),
        v => Ok(v),
    }
}

fn numeric(value: &Value, to: &str) -> Result<Num> {
    Ok(match value {
        Value::Int8(v) => Num::Int(i64::from(*v)),
        Value::Int16(v) => Num::Int(i64::from(*v)),
        Value::Int32(v) | Value::Date(v) | Value::Time(v) => Num::Int(i64::from(*v)),
        Value::Int64(v) | Value::Timestamp(v) => Num::Int(*v),
        Value::Float32(v) => Num::Float(f64::from(*v)),
        Value::Float64(v) => Num::Float(*v),
        Value::Boolean(b) => Num::Int(i64::from(*b)),
        Value::Decimal(d) => Num::Dec(d.clone()),
        Value::String(s) => match parse_text(s, to)? {
            v @ (Value::Array(_) | Value::Map(_) | Value::Null) => return Err(unable(&v, to)),
            v => numeric(&v, to)?,
        },
        other => return Err(unable(other, to)),
    })
}

/// Truncate toward zero, as Java's `longValue()`; an error when out of range.
fn to_i64(num: Num, to: &str) -> Result<i64> {
    match num {
        Num::Int(v) => Ok(v),
        // `as` saturates, so compare against the exact bounds first.
        Num::Float(f) if (-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&f) => {
            Ok(f.trunc() as i64)
        }
        Num::Float(f) => Err(out_of_range(f, to)),
        Num::Dec(d) => decimal_to_i64(&d).ok_or_else(|| out_of_range(&d, to)),
    }
}

fn decimal_to_i64(d: &Decimal) -> Option<i64> {
    use num_bigint::BigInt;
    let scale = d.scale();
    let ten = BigInt::from(10u8);
    let whole = if scale >= 0 {
        // 10^scale > 2^scale > |unscaled| once scale reaches its bit length.
        if u64::try_from(scale).ok()? >= d.unscaled().bits() {
            return Some(0);
        }
        d.unscaled() / ten.pow(scale.unsigned_abs())
    } else {
        if d.unscaled().bits() == 0 {
            return Some(0);
        }
        if scale < -19 {
            return None;
        }
        d.unscaled() * ten.pow(scale.unsigned_abs())
    };
    i64::try_from(&whole).ok()
}

fn to_f64(num: Num) -> f64 {
    match num {
        Num::Int(v) => v as f64,
        Num::Float(f) => f,
        Num::Dec(d) => d.to_f64(),
    }
}

macro_rules! convert_int {
    ($(#[$doc:meta])* $fn:ident, $ty:ty, $name:literal) => {
        $(#[$doc])*
        ///
        /// Integers, floats (truncated toward zero), decimals, booleans
        /// (1/0), logical values (their encoding) and numeric text are
        /// accepted; a value out of the type's range is an error, not a
        /// wrap-around. Null gives `None`.
        pub fn $fn(schema: Option<&Schema>, value: &Value) -> Result<Option<$ty>> {
            if value.is_null() {
                return Ok(None);
            }
            let value = logical_view(schema, value)?;
            let wide = to_i64(numeric(&value, $name)?, $name)?;
            <$ty>::try_from(wide).map(Some).map_err(|_| out_of_range(wide, $name))
        }
    };
}

convert_int!(/// Coerce to INT8 (Kafka's `Values.convertToByte`).
    convert_to_int8, i8, "INT8");
convert_int!(/// Coerce to INT16 (Kafka's `Values.convertToShort`).
    convert_to_int16, i16, "INT16");
convert_int!(/// Coerce to INT32 (Kafka's `Values.convertToInteger`).
    convert_to_int32, i32, "INT32");
convert_int!(/// Coerce to INT64 (Kafka's `Values.convertToLong`).
    ///
    /// ```
    /// use connect_api::{values::convert_to_int64, Value};
    /// assert_eq!(convert_to_int64(None, &Value::from("42")).unwrap(), Some(42));
    /// assert_eq!(convert_to_int64(None, &Value::Float64(-2.9)).unwrap(), Some(-2));
    /// assert_eq!(
    ///     convert_to_int64(None, &Value::from("abc")).unwrap_err().to_string(),
    ///     "Unable to convert a STRING to INT64: the text does not parse as INT64"
    /// );
    /// ```
    convert_to_int64, i64, "INT64");

/// Coerce to FLOAT64 (Kafka's `Values.convertToDouble`): any number, a
/// boolean (1.0/0.0), a logical value's encoding, or numeric text.
pub fn convert_to_float64(schema: Option<&Schema>, value: &Value) -> Result<Option<f64>> {
    if value.is_null() {
        return Ok(None);
    }
    let value = logical_view(schema, value)?;
    Ok(Some(to_f64(numeric(&value, "FLOAT64")?)))
}

/// Coerce to FLOAT32 (Kafka's `Values.convertToFloat`); as Java's
/// narrowing, a double beyond the float range becomes infinite.
pub fn convert_to_float32(schema: Option<&Schema>, value: &Value) -> Result<Option<f32>> {
    if value.is_null() {
        return Ok(None);
    }
    let value = logical_view(schema, value)?;
    Ok(Some(to_f64(numeric(&value, "FLOAT32")?) as f32))
}

/// Coerce to BOOLEAN (Kafka's `Values.convertToBoolean`): a boolean, the
/// text `true`/`false`, or a number (zero is false).
///
/// ```
/// use connect_api::{values::convert_to_boolean, Value};
/// assert_eq!(convert_to_boolean(None, &Value::from("true")).unwrap(), Some(true));
/// assert_eq!(convert_to_boolean(None, &Value::Int32(0)).unwrap(), Some(false));
/// assert!(convert_to_boolean(None, &Value::from("yes")).is_err());
/// ```
pub fn convert_to_boolean(schema: Option<&Schema>, value: &Value) -> Result<Option<bool>> {
    match value {
        Value::Null => Ok(None),
        Value::Boolean(b) => Ok(Some(*b)),
        Value::String(s) => convert_to_boolean(None, &parse_text(s, "BOOLEAN")?),
        v => {
            let v = logical_view(schema, v)?;
            Ok(Some(match numeric(&v, "BOOLEAN")? {
                Num::Int(i) => i != 0,
                Num::Float(f) => f != 0.0,
                Num::Dec(d) => d.unscaled().bits() != 0,
            }))
        }
    }
}

/// Coerce to an ARRAY's elements (Kafka's `Values.convertToList`): an
/// array, or text that parses to one (`[1, 2]`).
pub fn convert_to_list(_schema: Option<&Schema>, value: &Value) -> Result<Option<Vec<Value>>> {
    match value {
        Value::Null => Ok(None),
        Value::Array(items) => Ok(Some(items.clone())),
        Value::String(s) => match parse_text(s, "ARRAY")? {
            Value::Array(items) => Ok(Some(items)),
            other => Err(unable(&other, "ARRAY")),
        },
        other => Err(unable(other, "ARRAY")),
    }
}

/// Coerce to a MAP's entries (Kafka's `Values.convertToMap`): a map, or
/// text that parses to one (`{"a": 1}`).
pub fn convert_to_map(
    _schema: Option<&Schema>,
    value: &Value,
) -> Result<Option<Vec<(Value, Value)>>> {
    match value {
        Value::Null => Ok(None),
        Value::Map(entries) => Ok(Some(entries.clone())),
        Value::String(s) => match parse_text(s, "MAP")? {
            Value::Map(entries) => Ok(Some(entries)),
            other => Err(unable(&other, "MAP")),
        },
        other => Err(unable(other, "MAP")),
    }
}

/// Coerce to a STRUCT (Kafka's `Values.convertToStruct`): only a struct is
/// one; text is not parsed into structs.
pub fn convert_to_struct(_schema: Option<&Schema>, value: &Value) -> Result<Option<Struct>> {
    match value {
        Value::Null => Ok(None),
        Value::Struct(s) => Ok(Some(s.clone())),
        other => Err(unable(other, "STRUCT")),
    }
}

/// Rescale without rounding: adding zeros, or dropping zeros only.
fn rescale(d: Decimal, scale: i32) -> Result<Decimal> {
    use num_bigint::BigInt;
    use num_traits::Zero;
    let cannot = |d: &Decimal| {
        ConnectError::data(format!(
            "Unable to convert {d} to a Decimal of scale {scale} without rounding"
        ))
    };
    let diff = i64::from(scale) - i64::from(d.scale());
    if diff == 0 || d.unscaled().is_zero() {
        return Ok(Decimal::new(d.unscaled().clone(), scale));
    }
    // Bounded so a hostile scale parameter cannot ask for a huge power of ten.
    if diff.abs() > 4096 {
        return Err(cannot(&d));
    }
    let factor = BigInt::from(10u8).pow(diff.unsigned_abs() as u32);
    if diff > 0 {
        return Ok(Decimal::new(d.unscaled() * factor, scale));
    }
    if !(d.unscaled() % &factor).is_zero() {
        return Err(cannot(&d));
    }
    Ok(Decimal::new(d.unscaled() / factor, scale))
}

/// Coerce to a Decimal of `scale` (Kafka's `Values.convertToDecimal`): a
/// decimal, an integer, a float (through its shortest decimal text) or
/// decimal text (`"12.50"`). The value is rescaled only when no digit is
/// lost (`1.5` to scale 2 is `1.50`; `1.25` to scale 1 is an error).
///
/// ```
/// use connect_api::{values::convert_to_decimal, Decimal, Value};
/// let d = convert_to_decimal(None, &Value::from("1.5"), 2).unwrap().unwrap();
/// assert_eq!(d, Decimal::new(150, 2));
/// assert!(convert_to_decimal(None, &Value::Float64(1.25), 1).is_err());
/// ```
pub fn convert_to_decimal(
    schema: Option<&Schema>,
    value: &Value,
    scale: i32,
) -> Result<Option<Decimal>> {
    if value.is_null() {
        return Ok(None);
    }
    let value = logical_view(schema, value)?;
    let decimal = match &*value {
        Value::String(s) => s.trim().parse::<Decimal>()?,
        v => match numeric(v, "Decimal")? {
            Num::Int(i) => Decimal::new(i, 0),
            Num::Float(f) if f.is_finite() => f.to_string().parse::<Decimal>()?,
            Num::Float(f) => return Err(out_of_range(f, "Decimal")),
            Num::Dec(d) => d,
        },
    };
    rescale(decimal, scale).map(Some)
}

/// Coerce to a Date as days since the epoch (Kafka's
/// `Values.convertToDate`): a Date, a Timestamp (its day), an integer
/// (days), or text (`2024-01-31`, or a timestamp).
pub fn convert_to_date(schema: Option<&Schema>, value: &Value) -> Result<Option<i32>> {
    if value.is_null() {
        return Ok(None);
    }
    let value = logical_view(schema, value)?;
    match &*value {
        Value::Date(d) => Ok(Some(*d)),
        Value::Timestamp(t) => {
            let days = t.div_euclid(MILLIS_PER_DAY);
            i32::try_from(days)
                .map(Some)
                .map_err(|_| out_of_range(days, "Date"))
        }
        Value::String(s) => convert_to_date(None, &parse_text(s, "Date")?),
        v @ (Value::Int8(_) | Value::Int16(_) | Value::Int32(_) | Value::Int64(_)) => {
            let days = to_i64(numeric(v, "Date")?, "Date")?;
            i32::try_from(days)
                .map(Some)
                .map_err(|_| out_of_range(days, "Date"))
        }
        other => Err(unable(other, "Date")),
    }
}

/// Coerce to a Time as milliseconds of the day (Kafka's
/// `Values.convertToTime`): a Time, a Timestamp (its time of day), an
/// integer in `0..86_400_000`, or text (`13:45:00.000Z`, or a timestamp).
pub fn convert_to_time(schema: Option<&Schema>, value: &Value) -> Result<Option<i32>> {
    if value.is_null() {
        return Ok(None);
    }
    let value = logical_view(schema, value)?;
    match &*value {
        Value::Time(t) => Ok(Some(*t)),
        Value::Timestamp(t) => Ok(Some(t.rem_euclid(MILLIS_PER_DAY) as i32)),
        Value::String(s) => convert_to_time(None, &parse_text(s, "Time")?),
        v @ (Value::Int8(_) | Value::Int16(_) | Value::Int32(_) | Value::Int64(_)) => {
            let ms = to_i64(numeric(v, "Time")?, "Time")?;
            logical::time_from_millis(ms).map(Some)
        }
        other => Err(unable(other, "Time")),
    }
}

/// Coerce to a Timestamp as epoch milliseconds (Kafka's
/// `Values.convertToTimestamp`): a Timestamp, a Date (its midnight), a Time
/// (on the epoch day), an integer (milliseconds), or text.
pub fn convert_to_timestamp(schema: Option<&Schema>, value: &Value) -> Result<Option<i64>> {
    if value.is_null() {
        return Ok(None);
    }
    let value = logical_view(schema, value)?;
    match &*value {
        Value::Timestamp(t) => Ok(Some(*t)),
        Value::Date(d) => Ok(Some(logical::date_to_millis(*d))),
        Value::Time(t) => Ok(Some(i64::from(*t))),
        Value::String(s) => convert_to_timestamp(None, &parse_text(s, "Timestamp")?),
        v @ (Value::Int8(_) | Value::Int16(_) | Value::Int32(_) | Value::Int64(_)) => {
            to_i64(numeric(v, "Timestamp")?, "Timestamp").map(Some)
        }
        other => Err(unable(other, "Timestamp")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::{Schema, SchemaBuilder};
    use crate::structs::Struct;

    fn parsed(input: &str) -> (Option<Schema>, Value) {
        let sv = parse_string(input);
        (sv.schema, sv.value)
    }

    fn is_string(input: &str) {
        assert_eq!(
            parsed(input),
            (Some(Schema::string()), Value::from(input)),
            "{input:?} should stay a STRING"
        );
    }

    #[test]
    fn booleans_and_null_only_as_whole_input() {
        assert_eq!(
            parsed("true"),
            (Some(Schema::boolean()), Value::Boolean(true))
        );
        assert_eq!(
            parsed("false"),
            (Some(Schema::boolean()), Value::Boolean(false))
        );
        assert_eq!(parsed("null"), (None, Value::Null));
        for s in [
            "true1",
            "true false",
            "TRUE",
            "nullx",
            "",
            " ",
            "hello world",
        ] {
            is_string(s);
        }
    }

    #[test]
    fn integers_take_the_smallest_type() {
        assert_eq!(parsed("-128"), (Some(Schema::int8()), Value::Int8(-128)));
        assert_eq!(parsed("128"), (Some(Schema::int16()), Value::Int16(128)));
        assert_eq!(
            parsed("-32769"),
            (Some(Schema::int32()), Value::Int32(-32769))
        );
        assert_eq!(
            parsed("9223372036854775807"),
            (Some(Schema::int64()), Value::Int64(i64::MAX))
        );
        assert_eq!(
            parsed("9223372036854775808"),
            (
                Some(logical::decimal_schema(0)),
                Value::Decimal("9223372036854775808".parse().unwrap())
            )
        );
        assert_eq!(parsed("+7").value(), Value::Int8(7));
        assert_eq!(
            parsed("1.5E1").value(),
            Value::Int8(15),
            "scale 0 is an integer"
        );
    }

    trait ValueOf {
        fn value(self) -> Value;
    }
    impl ValueOf for (Option<Schema>, Value) {
        fn value(self) -> Value {
            self.1
        }
    }

    #[test]
    fn fractions_are_float32_then_float64_then_decimal() {
        assert_eq!(
            parsed("0.1"),
            (Some(Schema::float32()), Value::Float32(0.1))
        );
        assert_eq!(parsed("1E+3").value(), Value::Float32(1000.0));
        assert_eq!(parsed(".5").value(), Value::Float32(0.5));
        assert_eq!(
            parsed("1e300"),
            (Some(Schema::float64()), Value::Float64(1e300))
        );
        let (schema, value) = parsed("1.5e400");
        assert_eq!(schema, Some(logical::decimal_schema(-399)));
        assert_eq!(value, Value::Decimal(Decimal::new(15, -399)));
        assert_eq!(parsed("1e-99999999999").value(), Value::Float32(0.0));
        // As BigDecimal, "1." has scale 0: an integer.
        assert_eq!(parsed("1.").value(), Value::Int8(1));
        for s in [
            "1e", "1e+", "--1", "1.2.3", "0x10", "NaN", "Infinity", "1_000",
        ] {
            is_string(s);
        }
    }

    #[test]
    fn temporal_values() {
        assert_eq!(
            parsed("2024-01-31"),
            (Some(logical::date_schema()), Value::Date(19753))
        );
        assert_eq!(
            parsed("13:45:00.001Z"),
            (Some(logical::time_schema()), Value::Time(49_500_001))
        );
        assert_eq!(
            parsed("2024-01-31T13:45:00.000Z"),
            (
                Some(logical::timestamp_schema()),
                Value::Timestamp(1_706_708_700_000)
            )
        );
        assert_eq!(parsed("2024-02-29").value(), Value::Date(19782));
        for s in [
            "2023-02-29",
            "2024-13-01",
            "2024-1-01",
            "24:00:00.000Z",
            "13:45:00.000",
            "2024-01-31T13:45:00Z",
            "2024-01-31x",
        ] {
            is_string(s);
        }
    }

    #[test]
    fn arrays_widen_to_a_common_type() {
        let (schema, value) = parsed("[1, 2.5, 300]");
        assert_eq!(schema.unwrap().value_schema(), Some(&Schema::float32()));
        assert_eq!(
            value,
            Value::Array(vec![
                Value::Float32(1.0),
                Value::Float32(2.5),
                Value::Float32(300.0)
            ])
        );
        let (schema, value) = parsed(r#"["a", null, "b\"c"]"#);
        assert_eq!(
            schema.unwrap().value_schema(),
            Some(&Schema::optional_string())
        );
        assert_eq!(
            value,
            Value::Array(vec![Value::from("a"), Value::Null, Value::from("b\"c")])
        );
        let (schema, value) = parsed(r#"[1, "a", true]"#);
        assert_eq!(schema, None, "no common type: schemaless");
        assert_eq!(
            value,
            Value::Array(vec![Value::Int8(1), Value::from("a"), Value::Boolean(true)])
        );
        assert_eq!(parsed("[]"), (None, Value::Array(vec![])));
        let (schema, _) = parsed("[[1], [2, 3]]");
        let inner = SchemaBuilder::array(Schema::int8()).build().unwrap();
        assert_eq!(schema.unwrap().value_schema(), Some(&inner));
        let (schema, _) = parsed("[2024-01-31, null]");
        assert_eq!(
            schema.unwrap().value_schema(),
            Some(&logical::date_builder().optional().build().unwrap())
        );
    }

    #[test]
    fn maps_and_embedded_temporals() {
        let (schema, value) = parsed(r#"{"a": 1, "b": 70000}"#);
        let schema = schema.unwrap();
        assert_eq!(schema.key_schema(), Some(&Schema::string()));
        assert_eq!(schema.value_schema(), Some(&Schema::int32()));
        assert_eq!(
            value,
            Value::string_map([("a", Value::Int32(1)), ("b", Value::Int32(70000))])
        );
        let (_, value) = parsed("{12:00:00.000Z:2024-01-31T13:45:00.000Z}");
        assert_eq!(
            value,
            Value::Map(vec![(
                Value::Time(43_200_000),
                Value::Timestamp(1_706_708_700_000)
            )])
        );
        assert_eq!(parsed("{}"), (None, Value::Map(vec![])));
        for s in [
            "{",
            "{a}",
            "{a:1,}",
            "[1,",
            "[1,]",
            "[1 2",
            "{\"a\":1}}",
            "[\"a]",
            "]",
        ] {
            is_string(s);
        }
    }

    #[test]
    fn deep_nesting_is_a_string_not_a_stack_overflow() {
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        is_string(&deep);
        let ok = format!("{}1{}", "[".repeat(10), "]".repeat(10));
        assert!(parse_string(&ok).schema.is_some());
    }

    #[test]
    fn render_then_parse_round_trips() {
        for v in [
            Value::Boolean(true),
            Value::Int8(-3),
            Value::Int64(i64::MIN),
            Value::Float32(1.0e-7),
            Value::Float32(3.4028235e38),
            Value::Date(-719_528),
            Value::Time(86_399_999),
            Value::Timestamp(253_402_300_799_999),
            Value::Array(vec![Value::from("x,y"), Value::from("q\"\\")]),
            Value::Array(vec![Value::from("5"), Value::from("true")]),
            Value::string_map([("k", Value::Date(1)), ("2", Value::Null)]),
        ] {
            assert_eq!(parse_string(&convert_to_string(&v)).value, v, "{v:?}");
        }
    }

    proptest::proptest! {
        #[test]
        fn never_panics_and_falls_back_to_the_input(s in "\\PC*") {
            let sv = parse_string(&s);
            if sv.schema.as_ref().map(Schema::ty) == Some(Type::String) {
                if let Value::String(out) = &sv.value {
                    proptest::prop_assert_eq!(out, &s);
                }
            }
        }

        #[test]
        fn structured_noise_never_panics(s in "[\\[\\]{}\",:0-9a-z.eE+\\- \\\\]{0,40}") {
            let sv = parse_string(&s);
            if let Some(schema) = &sv.schema {
                proptest::prop_assert!(schema.validate_value(&sv.value).is_ok(), "{:?}", sv);
            }
        }
    }

    #[test]
    fn integer_coercions_check_range() {
        assert_eq!(
            convert_to_int8(None, &Value::Int64(-128)).unwrap(),
            Some(-128)
        );
        let e = convert_to_int8(None, &Value::Int32(300)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "Unable to convert 300 to INT8: the value is out of range"
        );
        assert_eq!(
            convert_to_int16(None, &Value::Boolean(true)).unwrap(),
            Some(1)
        );
        assert_eq!(
            convert_to_int32(None, &Value::from(" 7 ")).unwrap(),
            Some(7)
        );
        assert_eq!(
            convert_to_int32(None, &Value::Float32(2.99)).unwrap(),
            Some(2)
        );
        assert_eq!(
            convert_to_int64(None, &Value::Decimal(Decimal::new(-1999, 3))).unwrap(),
            Some(-1)
        );
        assert_eq!(
            convert_to_int64(None, &Value::Decimal(Decimal::new(5, i32::MAX))).unwrap(),
            Some(0)
        );
        assert!(convert_to_int64(None, &Value::Decimal(Decimal::new(5, i32::MIN))).is_err());
        assert!(convert_to_int64(None, &Value::Float64(f64::NAN)).is_err());
        assert!(convert_to_int64(None, &Value::Float64(1e19)).is_err());
        assert_eq!(convert_to_int32(None, &Value::Null).unwrap(), None);
        assert_eq!(convert_to_int32(None, &Value::Date(3)).unwrap(), Some(3));
        let e = convert_to_int32(None, &Value::Bytes(vec![1].into())).unwrap_err();
        assert_eq!(
            e.to_string(),
            "Unable to convert a value of type BYTES to INT32"
        );
        assert!(convert_to_int32(None, &Value::from("[1]")).is_err());
    }

    #[test]
    fn float_and_boolean_coercions() {
        assert_eq!(
            convert_to_float64(None, &Value::Int64(3)).unwrap(),
            Some(3.0)
        );
        assert_eq!(
            convert_to_float32(None, &Value::from("0.5")).unwrap(),
            Some(0.5)
        );
        assert_eq!(
            convert_to_float64(None, &Value::Decimal(Decimal::new(15, 10))).unwrap(),
            Some(1.5e-9)
        );
        assert_eq!(
            convert_to_boolean(None, &Value::Float64(0.0)).unwrap(),
            Some(false)
        );
        assert_eq!(
            convert_to_boolean(None, &Value::from("7")).unwrap(),
            Some(true)
        );
        assert!(convert_to_boolean(None, &Value::from("TRUE")).is_err());
    }

    #[test]
    fn decimal_coercion_never_rounds() {
        let d = |u: i64, s: i32| Some(Decimal::new(u, s));
        assert_eq!(
            convert_to_decimal(None, &Value::Int32(3), 2).unwrap(),
            d(300, 2)
        );
        assert_eq!(
            convert_to_decimal(None, &Value::Float64(0.1), 3).unwrap(),
            d(100, 3)
        );
        assert_eq!(
            convert_to_decimal(None, &Value::Decimal(Decimal::new(1200, 3)), 1).unwrap(),
            d(12, 1)
        );
        assert!(convert_to_decimal(None, &Value::from("1.25"), 1).is_err());
        assert!(convert_to_decimal(None, &Value::Int8(1), i32::MAX).is_err());
        let bytes_schema = logical::decimal_schema(2);
        assert_eq!(
            convert_to_decimal(Some(&bytes_schema), &Value::Bytes(vec![0x64].into()), 2).unwrap(),
            d(100, 2)
        );
    }

    #[test]
    fn temporal_coercions() {
        let ts = 1_706_708_700_000; // 2024-01-31T13:45:00Z
        assert_eq!(
            convert_to_date(None, &Value::Timestamp(ts)).unwrap(),
            Some(19753)
        );
        assert_eq!(
            convert_to_time(None, &Value::Timestamp(ts)).unwrap(),
            Some(49_500_000)
        );
        assert_eq!(
            convert_to_timestamp(None, &Value::from("2024-01-31")).unwrap(),
            Some(19753 * MILLIS_PER_DAY)
        );
        assert_eq!(
            convert_to_timestamp(None, &Value::Int64(5)).unwrap(),
            Some(5)
        );
        assert_eq!(
            convert_to_date(Some(&logical::date_schema()), &Value::Int32(4)).unwrap(),
            Some(4)
        );
        assert!(convert_to_time(None, &Value::Int64(MILLIS_PER_DAY)).is_err());
        assert!(convert_to_time(None, &Value::Date(1)).is_err());
        assert!(convert_to_date(None, &Value::from("yesterday")).is_err());
    }

    #[test]
    fn container_coercions() {
        assert_eq!(
            convert_to_list(None, &Value::from("[1,2]")).unwrap(),
            Some(vec![Value::Int8(1), Value::Int8(2)])
        );
        assert!(convert_to_list(None, &Value::from("{}")).is_err());
        assert_eq!(
            convert_to_map(None, &Value::from(r#"{"a":true}"#)).unwrap(),
            Some(vec![(Value::from("a"), Value::Boolean(true))])
        );
        assert!(convert_to_map(None, &Value::Int8(1)).is_err());
        let e = convert_to_struct(None, &Value::from("{}")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "Unable to convert a value of type STRING to STRUCT"
        );
    }

    #[test]
    fn java_dates_switch_to_the_julian_calendar_before_1582_10_15() {
        let date = |days: i32| java_to_string(&Value::Date(days));
        assert_eq!(date(-141_427), "Fri Oct 15 00:00:00 UTC 1582");
        assert_eq!(date(-141_428), "Thu Oct 04 00:00:00 UTC 1582");
        // Answers of Kafka's judge (conformance/tests/java_differential.rs).
        assert_eq!(date(-152_327), "Thu Dec 01 00:00:00 UTC 1552");
        assert_eq!(date(-719_528), "Sat Jan 03 00:00:00 UTC 1");
        assert_eq!(
            java_to_string(&Value::Timestamp(-62_135_596_800_001)),
            "Sun Jan 02 23:59:59 UTC 1"
        );
        assert_eq!(date(0), "Thu Jan 01 00:00:00 UTC 1970");
        assert_eq!(date(-1), "Wed Dec 31 00:00:00 UTC 1969");
        // No panic at the ends of the range.
        let _ = date(i32::MIN);
        let _ = java_to_string(&Value::Timestamp(i64::MIN));
        let _ = java_to_string(&Value::Timestamp(i64::MAX));
    }

    #[test]
    fn civil_round_trip() {
        for days in [-719_468, -1, 0, 1, 19_753, 2_932_896] {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days);
        }
        assert_eq!(civil_from_days(0), (1970, 1, 1));
    }

    #[test]
    fn renders_like_kafka() {
        let s = SchemaBuilder::struct_()
            .field("a", Schema::int32())
            .field("b", Schema::optional_string())
            .build()
            .unwrap();
        let mut st = Struct::new(s).unwrap();
        st.put("a", 1).unwrap().put("b", "x\"y").unwrap();
        assert_eq!(
            convert_to_string(&Value::Struct(st)),
            r#"{"a":1,"b":"x\"y"}"#
        );
        assert_eq!(convert_to_string(&Value::Float64(1.0)), "1.0");
        assert_eq!(convert_to_string(&Value::Float32(0.5)), "0.5");
        // Java's Double.toString / Float.toString, not Rust's Display.
        for (v, java) in [
            (Value::Float64(1e10), "1.0E10"),
            (Value::Float64(1e-5), "1.0E-5"),
            (Value::Float64(4.9e-324), "4.9E-324"),
            (Value::Float64(f64::NAN), "NaN"),
            (Value::Float64(-0.0), "-0.0"),
            (Value::Float32(1e10), "1.0E10"),
            (Value::Float32(1e-5), "1.0E-5"),
        ] {
            assert_eq!(convert_to_string(&v), java);
        }
        assert_eq!(
            convert_to_string(&Value::Array(vec![Value::Float64(1e10)])),
            "[1.0E10]"
        );
        assert_eq!(convert_to_string(&Value::Bytes(vec![1, 2].into())), "AQI=");
        assert_eq!(
            convert_to_string(&Value::Timestamp(1_706_708_700_000)),
            "2024-01-31T13:45:00.000Z"
        );
        assert_eq!(convert_to_string(&Value::Time(1)), "00:00:00.001Z");
        assert_eq!(convert_to_string(&Value::Null), "null");
    }
}
