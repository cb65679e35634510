//! Dynamic values of every schema type, plus schemaless data.

use std::fmt;

use bytes::Bytes;

use crate::error::{ConnectError, Result};
use crate::logical::{self, Decimal, LogicalType};
use crate::schema::{Schema, Type};
use crate::structs::Struct;

/// A Kafka Connect value.
///
/// One variant per schema type, plus `Null` and the four logical types. A
/// schemaless map may have keys of any type; its entries keep their order and
/// two maps are equal when they hold the same entries in any order.
///
/// ```
/// use connect_api::{Schema, SchemaBuilder, Value};
///
/// let v = Value::from(42i32);
/// assert!(Schema::int32().validate_value(&v).is_ok());
/// assert_eq!(
///     Schema::int64().validate_value(&v).unwrap_err().to_string(),
///     "expected INT64, got INT32"
/// );
/// let list = Value::Array(vec![Value::from("a"), Value::Null]);
/// let schema = SchemaBuilder::array(Schema::optional_string()).build().unwrap();
/// assert!(schema.validate_value(&list).is_ok());
/// ```
#[derive(Debug, Clone, Default)]
pub enum Value {
    /// No value (Java's null).
    #[default]
    Null,
    /// INT8.
    Int8(i8),
    /// INT16.
    Int16(i16),
    /// INT32.
    Int32(i32),
    /// INT64.
    Int64(i64),
    /// FLOAT32.
    Float32(f32),
    /// FLOAT64.
    Float64(f64),
    /// BOOLEAN.
    Boolean(bool),
    /// STRING.
    String(String),
    /// BYTES (cheap to clone).
    Bytes(Bytes),
    /// ARRAY.
    Array(Vec<Value>),
    /// MAP: ordered entries, keys of any type.
    Map(Vec<(Value, Value)>),
    /// STRUCT bound to its schema.
    Struct(Struct),
    /// Decimal logical type (BYTES underneath).
    Decimal(Decimal),
    /// Date logical type: days since the epoch (INT32 underneath).
    Date(i32),
    /// Time logical type: milliseconds since midnight (INT32 underneath).
    Time(i32),
    /// Timestamp logical type: milliseconds since the epoch (INT64 underneath).
    Timestamp(i64),
}

impl Value {
    /// Whether this is `Null`.
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    /// A short name of the value's kind for messages (`INT32`, `STRING`,
    /// `Decimal`, `null`).
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Int8(_) => "INT8",
            Value::Int16(_) => "INT16",
            Value::Int32(_) => "INT32",
            Value::Int64(_) => "INT64",
            Value::Float32(_) => "FLOAT32",
            Value::Float64(_) => "FLOAT64",
            Value::Boolean(_) => "BOOLEAN",
            Value::String(_) => "STRING",
            Value::Bytes(_) => "BYTES",
            Value::Array(_) => "ARRAY",
            Value::Map(_) => "MAP",
            Value::Struct(_) => "STRUCT",
            Value::Decimal(_) => "Decimal",
            Value::Date(_) => "Date",
            Value::Time(_) => "Time",
            Value::Timestamp(_) => "Timestamp",
        }
    }

    /// The schema type this value carries when it has no logical meaning
    /// (`None` for `Null`). Logical values report their underlying type.
    pub fn schema_type(&self) -> Option<Type> {
        Some(match self {
            Value::Null => return None,
            Value::Int8(_) => Type::Int8,
            Value::Int16(_) => Type::Int16,
            Value::Int32(_) | Value::Date(_) | Value::Time(_) => Type::Int32,
            Value::Int64(_) | Value::Timestamp(_) => Type::Int64,
            Value::Float32(_) => Type::Float32,
            Value::Float64(_) => Type::Float64,
            Value::Boolean(_) => Type::Boolean,
            Value::String(_) => Type::String,
            Value::Bytes(_) | Value::Decimal(_) => Type::Bytes,
            Value::Array(_) => Type::Array,
            Value::Map(_) => Type::Map,
            Value::Struct(_) => Type::Struct,
        })
    }

    /// The string, if this is a STRING.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }
    /// The struct, if this is a STRUCT.
    pub fn as_struct(&self) -> Option<&Struct> {
        match self {
            Value::Struct(s) => Some(s),
            _ => None,
        }
    }
    /// The map entries, if this is a MAP.
    pub fn as_map(&self) -> Option<&[(Value, Value)]> {
        match self {
            Value::Map(m) => Some(m),
            _ => None,
        }
    }
    /// The elements, if this is an ARRAY.
    pub fn as_array(&self) -> Option<&[Value]> {
        match self {
            Value::Array(a) => Some(a),
            _ => None,
        }
    }
    /// The bytes, if this is BYTES.
    pub fn as_bytes(&self) -> Option<&[u8]> {
        match self {
            Value::Bytes(b) => Some(b),
            _ => None,
        }
    }
    /// Any integer variant widened to i64.
    pub fn as_i64(&self) -> Option<i64> {
        match *self {
            Value::Int8(v) => Some(v.into()),
            Value::Int16(v) => Some(v.into()),
            Value::Int32(v) => Some(v.into()),
            Value::Int64(v) => Some(v),
            _ => None,
        }
    }

    /// Look up a string key in a schemaless map.
    pub fn map_get(&self, key: &str) -> Option<&Value> {
        self.as_map()?
            .iter()
            .find(|(k, _)| k.as_str() == Some(key))
            .map(|(_, v)| v)
    }

    /// A schemaless map from string keys.
    pub fn string_map<K: Into<String>>(entries: impl IntoIterator<Item = (K, Value)>) -> Value {
        Value::Map(
            entries
                .into_iter()
                .map(|(k, v)| (Value::String(k.into()), v))
                .collect(),
        )
    }
}

/// Equal as multisets of entries: same entries in any order, each matched
/// once (so duplicate keys cannot make unequal maps compare equal).
fn map_eq(a: &[(Value, Value)], b: &[(Value, Value)]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    if a.iter().zip(b).all(|(x, y)| x == y) {
        return true;
    }
    let mut used = vec![false; b.len()];
    a.iter().all(|entry| {
        let found = b
            .iter()
            .enumerate()
            .position(|(i, other)| !used[i] && entry == other);
        match found {
            Some(i) => {
                used[i] = true;
                true
            }
            None => false,
        }
    })
}

impl PartialEq for Value {
    fn eq(&self, other: &Self) -> bool {
        use Value::*;
        match (self, other) {
            (Null, Null) => true,
            (Int8(a), Int8(b)) => a == b,
            (Int16(a), Int16(b)) => a == b,
            (Int32(a), Int32(b)) => a == b,
            (Int64(a), Int64(b)) => a == b,
            // NaN equals NaN whatever its payload, as Java's Float.equals
            // (which compares canonical bits); unlike Java, 0.0 equals -0.0.
            (Float32(a), Float32(b)) => a == b || (a.is_nan() && b.is_nan()),
            (Float64(a), Float64(b)) => a == b || (a.is_nan() && b.is_nan()),
            (Boolean(a), Boolean(b)) => a == b,
            (String(a), String(b)) => a == b,
            (Bytes(a), Bytes(b)) => a == b,
            (Array(a), Array(b)) => a == b,
            (Map(a), Map(b)) => map_eq(a, b),
            (Struct(a), Struct(b)) => a == b,
            (Decimal(a), Decimal(b)) => a == b,
            (Date(a), Date(b)) => a == b,
            (Time(a), Time(b)) => a == b,
            (Timestamp(a), Timestamp(b)) => a == b,
            _ => false,
        }
    }
}

impl fmt::Display for Value {
    /// Kafka's `Values.convertToString` form (strings raw, bytes base64,
    /// structs and maps as JSON-like text).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        crate::values::write_value(f, self, false)
    }
}

macro_rules! from_prim {
    ($($t:ty => $v:ident),*) => {$(
        impl From<$t> for Value {
            fn from(v: $t) -> Self { Value::$v(v.into()) }
        }
    )*};
}
from_prim!(i8 => Int8, i16 => Int16, i32 => Int32, i64 => Int64, f32 => Float32, f64 => Float64,
    bool => Boolean, String => String, &str => String, Bytes => Bytes, Vec<u8> => Bytes,
    Struct => Struct, Decimal => Decimal, Vec<Value> => Array);

impl<T: Into<Value>> From<Option<T>> for Value {
    fn from(v: Option<T>) -> Self {
        v.map_or(Value::Null, Into::into)
    }
}

fn mismatch(schema: &Schema, value: &Value) -> ConnectError {
    let expected = match LogicalType::of(schema) {
        Some(l) => format!("{l:?}"),
        None => schema.ty().name().to_string(),
    };
    ConnectError::data(format!("expected {expected}, got {}", value.type_name()))
}

/// Validate `value` against `schema` (see [`Schema::validate_value`]),
/// including the fields of nested structs.
pub(crate) fn validate(schema: &Schema, value: &Value) -> Result<()> {
    validate_with(schema, value, true)
}

/// Validate without checking that nested structs are complete (only that
/// their schema is the expected one), as Kafka's `Struct.put`: a struct may
/// be filled in after it was put into its parent.
pub(crate) fn validate_shallow(schema: &Schema, value: &Value) -> Result<()> {
    validate_with(schema, value, false)
}

fn validate_with(schema: &Schema, value: &Value, deep: bool) -> Result<()> {
    if value.is_null() {
        return if schema.is_optional() {
            Ok(())
        } else {
            Err(ConnectError::data(format!(
                "expected {}, got null (the field is required)",
                schema.ty()
            )))
        };
    }
    match (LogicalType::of(schema), value) {
        (Some(LogicalType::Decimal), Value::Decimal(d)) => {
            logical::decimal_from_logical(schema, d).map(|_| ())
        }
        (Some(LogicalType::Date), Value::Date(_)) => Ok(()),
        (Some(LogicalType::Time), Value::Time(t)) => {
            logical::time_from_millis(i64::from(*t)).map(|_| ())
        }
        (Some(LogicalType::Timestamp), Value::Timestamp(_)) => Ok(()),
        (Some(_), v) => Err(mismatch(schema, v)),
        (None, v) => validate_plain(schema, v, deep),
    }
}

fn validate_plain(schema: &Schema, value: &Value, deep: bool) -> Result<()> {
    match (schema.ty(), value) {
        (Type::Int8, Value::Int8(_))
        | (Type::Int16, Value::Int16(_))
        | (Type::Int32, Value::Int32(_))
        | (Type::Int64, Value::Int64(_))
        | (Type::Float32, Value::Float32(_))
        | (Type::Float64, Value::Float64(_))
        | (Type::Boolean, Value::Boolean(_))
        | (Type::String, Value::String(_))
        | (Type::Bytes, Value::Bytes(_)) => Ok(()),
        (Type::Array, Value::Array(items)) => {
            let inner = schema
                .value_schema()
                .ok_or_else(|| ConnectError::data("array schema has no value schema"))?;
            for (i, item) in items.iter().enumerate() {
                validate_with(inner, item, deep).map_err(|e| e.in_field(&format!("[{i}]")))?;
            }
            Ok(())
        }
        (Type::Map, Value::Map(entries)) => {
            let (ks, vs) = match (schema.key_schema(), schema.value_schema()) {
                (Some(k), Some(v)) => (k, v),
                _ => return Err(ConnectError::data("map schema has no key or value schema")),
            };
            for (k, v) in entries {
                validate_with(ks, k, deep).map_err(|e| e.in_field("<key>"))?;
                validate_with(vs, v, deep).map_err(|e| e.in_field(&format!("[{k}]")))?;
            }
            Ok(())
        }
        (Type::Struct, Value::Struct(s)) => {
            if s.schema() != schema {
                return Err(ConnectError::data(format!(
                    "Struct schemas do not match: expected {schema}, got {}",
                    s.schema()
                )));
            }
            if deep {
                s.validate()
            } else {
                Ok(())
            }
        }
        (_, v) => Err(mismatch(schema, v)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::logical::{date_schema, decimal_schema};
    use crate::schema::SchemaBuilder;

    #[test]
    fn required_null_rejected_even_with_default() {
        let s = SchemaBuilder::int32()
            .default_value(Value::Int32(1))
            .build()
            .unwrap();
        assert!(s.validate_value(&Value::Null).is_err());
    }

    #[test]
    fn no_widening() {
        assert!(Schema::int64().validate_value(&Value::Int32(1)).is_err());
        assert!(Schema::float64()
            .validate_value(&Value::Float32(1.0))
            .is_err());
    }

    #[test]
    fn logical_values_need_logical_variants() {
        assert!(date_schema().validate_value(&Value::Date(1)).is_ok());
        assert!(date_schema().validate_value(&Value::Int32(1)).is_err());
        let dec = decimal_schema(2);
        assert!(dec
            .validate_value(&Value::Decimal(Decimal::new(150, 2)))
            .is_ok());
        assert!(dec
            .validate_value(&Value::Decimal(Decimal::new(15, 1)))
            .is_err());
    }

    #[test]
    fn nested_paths_in_errors() {
        let list = SchemaBuilder::array(Schema::int32()).build().unwrap();
        let e = list
            .validate_value(&Value::Array(vec![Value::Int32(1), Value::from("x")]))
            .unwrap_err();
        assert_eq!(e.to_string(), "[1]: expected INT32, got STRING");
    }

    #[test]
    fn maps_compare_without_order() {
        let a = Value::string_map([("a", Value::Int32(1)), ("b", Value::Int32(2))]);
        let b = Value::string_map([("b", Value::Int32(2)), ("a", Value::Int32(1))]);
        assert_eq!(a, b);
        assert_ne!(a, Value::string_map([("a", Value::Int32(1))]));
        let dup = Value::string_map([("a", Value::Int32(1)), ("a", Value::Int32(1))]);
        let other = Value::string_map([("a", Value::Int32(1)), ("b", Value::Int32(2))]);
        assert_ne!(dup, other);
        assert_ne!(other, dup);
    }
}
