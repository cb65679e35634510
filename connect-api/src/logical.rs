//! Logical types: Decimal, Date, Time and Timestamp, under Kafka's schema names.
//!
//! A logical type is a primitive schema with a well-known name. Their values
//! have their own [`Value`] variants ([`Value::Decimal`], [`Value::Date`],
//! [`Value::Time`], [`Value::Timestamp`]); the functions here convert between
//! those values and their primitive encodings.

use std::fmt;
use std::str::FromStr;

use num_bigint::BigInt;

use crate::error::{ConnectError, Result};
use crate::schema::{Schema, SchemaBuilder, Type};
use crate::value::Value;

/// Name of the Decimal logical type.
pub const DECIMAL_NAME: &str = "org.apache.kafka.connect.data.Decimal";
/// Name of the Date logical type.
pub const DATE_NAME: &str = "org.apache.kafka.connect.data.Date";
/// Name of the Time logical type.
pub const TIME_NAME: &str = "org.apache.kafka.connect.data.Time";
/// Name of the Timestamp logical type.
pub const TIMESTAMP_NAME: &str = "org.apache.kafka.connect.data.Timestamp";
/// Schema parameter holding a Decimal's scale.
pub const SCALE_FIELD: &str = "scale";
/// Milliseconds in a day.
pub const MILLIS_PER_DAY: i64 = 86_400_000;

/// Which logical type a schema is, if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LogicalType {
    /// `org.apache.kafka.connect.data.Decimal` on BYTES.
    Decimal,
    /// `org.apache.kafka.connect.data.Date` on INT32.
    Date,
    /// `org.apache.kafka.connect.data.Time` on INT32.
    Time,
    /// `org.apache.kafka.connect.data.Timestamp` on INT64.
    Timestamp,
}

impl LogicalType {
    /// The logical type of `schema` (name and underlying type must both match).
    pub fn of(schema: &Schema) -> Option<LogicalType> {
        match (schema.name()?, schema.ty()) {
            (DECIMAL_NAME, Type::Bytes) => Some(LogicalType::Decimal),
            (DATE_NAME, Type::Int32) => Some(LogicalType::Date),
            (TIME_NAME, Type::Int32) => Some(LogicalType::Time),
            (TIMESTAMP_NAME, Type::Int64) => Some(LogicalType::Timestamp),
            _ => None,
        }
    }
}

/// An arbitrary-precision decimal: an unscaled integer and a scale
/// (`value = unscaled * 10^-scale`), as Java's `BigDecimal`.
///
/// Equality compares unscaled value and scale, so `1.0 != 1.00`, as in Kafka.
///
/// ```
/// use connect_api::Decimal;
/// let d: Decimal = "12.345".parse().unwrap();
/// assert_eq!(d.scale(), 3);
/// assert_eq!(d.to_string(), "12.345");
/// assert_eq!(Decimal::from_unscaled_bytes(&d.unscaled_bytes(), 3), d);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Decimal {
    unscaled: BigInt,
    scale: i32,
}

impl Decimal {
    /// A decimal from its unscaled value and scale.
    pub fn new(unscaled: impl Into<BigInt>, scale: i32) -> Self {
        Decimal {
            unscaled: unscaled.into(),
            scale,
        }
    }
    /// The unscaled integer.
    pub fn unscaled(&self) -> &BigInt {
        &self.unscaled
    }
    /// The scale.
    pub fn scale(&self) -> i32 {
        self.scale
    }
    /// Big-endian two's-complement bytes of the unscaled value (Kafka's encoding).
    pub fn unscaled_bytes(&self) -> Vec<u8> {
        self.unscaled.to_signed_bytes_be()
    }
    /// From big-endian two's-complement bytes and a scale.
    pub fn from_unscaled_bytes(bytes: &[u8], scale: i32) -> Self {
        Decimal {
            unscaled: BigInt::from_signed_bytes_be(bytes),
            scale,
        }
    }
    /// Nearest `f64` (may lose precision).
    pub fn to_f64(&self) -> f64 {
        self.to_string().parse().unwrap_or(f64::NAN)
    }
}

impl fmt::Display for Decimal {
    /// Java's `BigDecimal.toString`: plain notation (`-1.50`, `0.001`) when
    /// the scale is positive and the exponent not below -6, scientific
    /// notation otherwise (`1E+3` for unscaled 1 at scale -3, `1.5E-9`).
    /// Output length stays proportional to the digits, whatever the scale.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let digits = self.unscaled.magnitude().to_string();
        let sign = if self.unscaled.sign() == num_bigint::Sign::Minus {
            "-"
        } else {
            ""
        };
        if self.scale == 0 {
            return write!(f, "{sign}{digits}");
        }
        let adjusted = -i64::from(self.scale) + (digits.len() as i64 - 1);
        if self.scale > 0 && adjusted >= -6 {
            let scale = self.scale as usize;
            return if digits.len() > scale {
                let (int, frac) = digits.split_at(digits.len() - scale);
                write!(f, "{sign}{int}.{frac}")
            } else {
                write!(f, "{sign}0.{}{digits}", "0".repeat(scale - digits.len()))
            };
        }
        let (first, rest) = digits.split_at(1);
        let dot = if rest.is_empty() { "" } else { "." };
        let exp_sign = if adjusted >= 0 { "+" } else { "" };
        write!(f, "{sign}{first}{dot}{rest}E{exp_sign}{adjusted}")
    }
}

impl FromStr for Decimal {
    type Err = ConnectError;
    /// Parse plain or exponent notation (`-12.50`, `1E+3`); the scale is the
    /// number of fraction digits, as `new BigDecimal(String)`.
    fn from_str(s: &str) -> Result<Self> {
        let bad = || ConnectError::data(format!("'{s}' is not a valid decimal number"));
        let t = s.trim();
        let (mantissa, exp) = match t.find(['e', 'E']) {
            Some(i) => (&t[..i], t[i + 1..].parse::<i32>().map_err(|_| bad())?),
            None => (t, 0),
        };
        let (int, frac) = match mantissa.find('.') {
            Some(i) => (&mantissa[..i], &mantissa[i + 1..]),
            None => (mantissa, ""),
        };
        let digits_only = |p: &str| p.chars().all(|c| c.is_ascii_digit());
        let unsigned_int = int.strip_prefix(['-', '+']).unwrap_or(int);
        if (unsigned_int.is_empty() && frac.is_empty())
            || !digits_only(unsigned_int)
            || !digits_only(frac)
        {
            return Err(bad());
        }
        let unscaled: BigInt = format!("{int}{frac}").parse().map_err(|_| bad())?;
        let scale = i32::try_from(frac.len())
            .ok()
            .and_then(|f| f.checked_sub(exp))
            .ok_or_else(bad)?;
        Ok(Decimal { unscaled, scale })
    }
}

/// A Decimal schema builder with `scale`.
pub fn decimal_builder(scale: i32) -> SchemaBuilder {
    SchemaBuilder::bytes()
        .name(DECIMAL_NAME)
        .version(1)
        .parameter(SCALE_FIELD, scale.to_string())
}

/// A required Decimal schema with `scale`.
pub fn decimal_schema(scale: i32) -> Schema {
    Schema::from_builder_infallible(decimal_builder(scale))
}

/// A Date schema builder.
pub fn date_builder() -> SchemaBuilder {
    SchemaBuilder::int32().name(DATE_NAME).version(1)
}
/// A required Date schema.
pub fn date_schema() -> Schema {
    Schema::from_builder_infallible(date_builder())
}
/// A Time schema builder.
pub fn time_builder() -> SchemaBuilder {
    SchemaBuilder::int32().name(TIME_NAME).version(1)
}
/// A required Time schema.
pub fn time_schema() -> Schema {
    Schema::from_builder_infallible(time_builder())
}
/// A Timestamp schema builder.
pub fn timestamp_builder() -> SchemaBuilder {
    SchemaBuilder::int64().name(TIMESTAMP_NAME).version(1)
}
/// A required Timestamp schema.
pub fn timestamp_schema() -> Schema {
    Schema::from_builder_infallible(timestamp_builder())
}

impl Schema {
    /// Build a schema whose rules cannot fail (the logical-type builders above).
    fn from_builder_infallible(b: SchemaBuilder) -> Schema {
        match b.build() {
            Ok(s) => s,
            // The builders above set each attribute once and no default, so
            // build() has nothing to reject.
            Err(e) => unreachable!("logical schema builder rejected: {e}"),
        }
    }
}

/// The scale parameter of a Decimal schema.
pub fn decimal_scale(schema: &Schema) -> Result<i32> {
    let raw = schema
        .parameter(SCALE_FIELD)
        .ok_or_else(|| ConnectError::data("Invalid Decimal schema: scale parameter not found."))?;
    raw.parse().map_err(|_| {
        ConnectError::data(format!(
            "Invalid Decimal schema: scale '{raw}' is not an integer"
        ))
    })
}

/// Encode a decimal for `schema`: its scale must equal the schema's (no rescale).
pub fn decimal_from_logical(schema: &Schema, value: &Decimal) -> Result<Vec<u8>> {
    let scale = decimal_scale(schema)?;
    if value.scale() != scale {
        return Err(ConnectError::data(format!(
            "Decimal value has mismatching scale for given Decimal schema: value scale {} != schema scale {scale}",
            value.scale()
        )));
    }
    Ok(value.unscaled_bytes())
}

/// Decode the bytes of a Decimal schema.
pub fn decimal_to_logical(schema: &Schema, bytes: &[u8]) -> Result<Decimal> {
    Ok(Decimal::from_unscaled_bytes(bytes, decimal_scale(schema)?))
}

/// Days since epoch of a Date given as epoch milliseconds; an error unless
/// the time is midnight UTC.
pub fn date_from_millis(millis: i64) -> Result<i32> {
    if millis.rem_euclid(MILLIS_PER_DAY) != 0 {
        return Err(ConnectError::data(
            "Kafka Connect Date type should not have any time fields set to non-zero values.",
        ));
    }
    i32::try_from(millis.div_euclid(MILLIS_PER_DAY))
        .map_err(|_| ConnectError::data(format!("Date {millis} ms is out of range")))
}

/// Epoch milliseconds of a Date.
pub fn date_to_millis(days: i32) -> i64 {
    i64::from(days) * MILLIS_PER_DAY
}

/// Milliseconds of day of a Time given as epoch milliseconds; an error unless
/// the date part is the epoch day.
pub fn time_from_millis(millis: i64) -> Result<i32> {
    if !(0..MILLIS_PER_DAY).contains(&millis) {
        return Err(ConnectError::data(
            "Kafka Connect Time type should not have any date fields set to non-zero values.",
        ));
    }
    Ok(millis as i32)
}

/// The primitive encoding of a logical value (`Decimal` to bytes, `Date`
/// and `Time` to INT32, `Timestamp` to INT64); other values unchanged.
pub fn to_primitive(schema: &Schema, value: &Value) -> Result<Value> {
    Ok(match value {
        Value::Decimal(d) => Value::Bytes(decimal_from_logical(schema, d)?.into()),
        Value::Date(d) => Value::Int32(*d),
        Value::Time(t) => Value::Int32(*t),
        Value::Timestamp(t) => Value::Int64(*t),
        other => other.clone(),
    })
}

/// The logical value for a primitive encoding under `schema`; values of
/// non-logical schemas unchanged.
pub fn from_primitive(schema: &Schema, value: Value) -> Result<Value> {
    Ok(match (LogicalType::of(schema), value) {
        (Some(LogicalType::Decimal), Value::Bytes(b)) => {
            Value::Decimal(decimal_to_logical(schema, &b)?)
        }
        (Some(LogicalType::Date), Value::Int32(d)) => Value::Date(d),
        (Some(LogicalType::Time), Value::Int32(t)) => {
            time_from_millis(i64::from(t))?;
            Value::Time(t)
        }
        (Some(LogicalType::Timestamp), Value::Int64(t)) => Value::Timestamp(t),
        (_, v) => v,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimal_bytes_match_kafka() {
        // 1.00 at scale 2 is unscaled 100 = 0x64 ("ZA==" in base64).
        let d: Decimal = "1.00".parse().unwrap();
        assert_eq!(d.unscaled_bytes(), vec![0x64]);
        let neg: Decimal = "-1".parse().unwrap();
        assert_eq!(neg.unscaled_bytes(), vec![0xff]);
    }

    #[test]
    fn decimal_display_and_parse() {
        for s in [
            "0",
            "1.5",
            "-0.05",
            "123456789012345678901234567890.12",
            "-7",
        ] {
            assert_eq!(s.parse::<Decimal>().unwrap().to_string(), s);
        }
        assert_eq!("1E+3".parse::<Decimal>().unwrap(), Decimal::new(1, -3));
        assert_eq!(Decimal::new(1, -3).to_string(), "1E+3");
        assert_eq!(Decimal::new(-123, -3).to_string(), "-1.23E+5");
        assert_eq!(Decimal::new(15, 10).to_string(), "1.5E-9");
        assert_eq!(Decimal::new(1, 6).to_string(), "0.000001");
        assert_eq!(Decimal::new(0, -2).to_string(), "0E+2");
        // No scale makes the text (or memory) blow up.
        assert_eq!(Decimal::new(1, i32::MIN).to_string(), "1E+2147483648");
        assert_eq!(Decimal::new(1, i32::MAX).to_string(), "1E-2147483647");
        for d in [
            Decimal::new(-123, -3),
            Decimal::new(15, 10),
            Decimal::new(7, i32::MAX),
        ] {
            assert_eq!(d.to_string().parse::<Decimal>().unwrap(), d);
        }
        for bad in ["", "-", "1.2.3", "abc", "1e", "--1"] {
            assert!(bad.parse::<Decimal>().is_err(), "{bad}");
        }
    }

    #[test]
    fn no_silent_rescale() {
        let schema = decimal_schema(2);
        let e = decimal_from_logical(&schema, &"1.5".parse().unwrap()).unwrap_err();
        assert!(e.to_string().contains("mismatching scale"));
        assert!(decimal_from_logical(&schema, &"1.50".parse().unwrap()).is_ok());
    }

    #[test]
    fn date_must_be_midnight() {
        assert_eq!(date_from_millis(MILLIS_PER_DAY * 3).unwrap(), 3);
        assert_eq!(date_from_millis(-MILLIS_PER_DAY).unwrap(), -1);
        assert!(date_from_millis(MILLIS_PER_DAY + 1).is_err());
        assert!(time_from_millis(MILLIS_PER_DAY).is_err());
        assert_eq!(time_from_millis(1000).unwrap(), 1000);
    }

    #[test]
    fn logical_detection_needs_name_and_type() {
        assert_eq!(LogicalType::of(&date_schema()), Some(LogicalType::Date));
        let wrong = SchemaBuilder::int64().name(DATE_NAME).build().unwrap();
        assert_eq!(LogicalType::of(&wrong), None);
    }
}
