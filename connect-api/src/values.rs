//! `Values`: render values as strings, and parse strings into typed values.
//!
//! Rendering follows Kafka's `Values.convertToString`: a top-level string is
//! written raw, nested strings are quoted; bytes are base64; Date, Time and
//! Timestamp use ISO-8601 (`2024-01-31`, `13:45:00.000Z`,
//! `2024-01-31T13:45:00.000Z`); structs and maps are written `{"k":v}` and
//! arrays `[a,b]`.

use std::fmt::{self, Write};

use base64::Engine as _;

use crate::logical::MILLIS_PER_DAY;
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
#[allow(dead_code)]
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
        Value::Float32(v) => write_float(f, f64::from(*v), v.to_string()),
        Value::Float64(v) => write_float(f, *v, v.to_string()),
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

/// Java prints whole floats with a trailing `.0` (`1.0`); Rust prints `1`.
fn write_float(f: &mut impl Write, v: f64, rendered: String) -> fmt::Result {
    if v.is_finite() && v.fract() == 0.0 && !rendered.contains(['e', 'E', '.']) {
        write!(f, "{rendered}.0")
    } else if v.is_nan() {
        f.write_str("NaN")
    } else if v.is_infinite() {
        f.write_str(if v > 0.0 { "Infinity" } else { "-Infinity" })
    } else {
        f.write_str(&rendered)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::{Schema, SchemaBuilder};
    use crate::structs::Struct;

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
        assert_eq!(convert_to_string(&Value::Bytes(vec![1, 2].into())), "AQI=");
        assert_eq!(
            convert_to_string(&Value::Timestamp(1_706_708_700_000)),
            "2024-01-31T13:45:00.000Z"
        );
        assert_eq!(convert_to_string(&Value::Time(1)), "00:00:00.001Z");
        assert_eq!(convert_to_string(&Value::Null), "null");
    }
}
