//! Connect value -> JSON payload, written straight into the output buffer
//! with the rules of Kafka's `JsonConverter.convertToJson`.

use base64::Engine as _;
use connect_api::logical::{self, LogicalType};
use connect_api::{ConnectError, Decimal, Result, Schema, Type, Value};

use super::javafmt::{write_big_decimal, write_f32, write_f64, write_int, write_str};
use super::{DecimalFormat, Settings};

/// Kafka's message for a null where the schema allows none.
const REQUIRED_NULL: &str =
    "Conversion error: null value for field that is required and has no default value";

/// Write `value` (of `schema`, `None` for schemaless) as JSON.
pub(crate) fn write_value(
    out: &mut Vec<u8>,
    schema: Option<&Schema>,
    value: &Value,
    settings: &Settings,
) -> Result<()> {
    if value.is_null() {
        let Some(schema) = schema else {
            out.extend_from_slice(b"null");
            return Ok(());
        };
        if let (Some(default), true) = (schema.default_value(), settings.replace_null_with_default)
        {
            if !default.is_null() {
                return write_value(out, Some(schema), default, settings);
            }
        }
        if schema.is_optional() {
            out.extend_from_slice(b"null");
            return Ok(());
        }
        return Err(ConnectError::data(REQUIRED_NULL));
    }
    if let Some(schema) = schema {
        if let Some(logical) = LogicalType::of(schema) {
            return write_logical(out, schema, logical, value, settings);
        }
    }
    let ty = match schema {
        Some(s) => s.ty(),
        // Schemaless values carry their own type; logical values are
        // written as their primitive encoding (Kafka cannot write them).
        None => match value {
            Value::Decimal(d) => return write_decimal(out, None, d, settings),
            other => other.schema_type().unwrap_or(Type::String),
        },
    };
    let mismatch = || {
        ConnectError::data(format!(
            "Invalid type for {}: {}",
            schema.map_or("unknown schema", |s| s.ty().name()),
            value.type_name()
        ))
    };
    match (ty, value) {
        (Type::Int8, Value::Int8(v)) => write_int(out, i64::from(*v)),
        (Type::Int16, Value::Int16(v)) => write_int(out, i64::from(*v)),
        (Type::Int32, Value::Int32(v) | Value::Date(v) | Value::Time(v)) => {
            write_int(out, i64::from(*v))
        }
        (Type::Int64, Value::Int64(v) | Value::Timestamp(v)) => write_int(out, *v),
        (Type::Float32, Value::Float32(v)) => write_f32(out, *v),
        (Type::Float64, Value::Float64(v)) => write_f64(out, *v),
        (Type::Boolean, Value::Boolean(v)) => {
            out.extend_from_slice(if *v { b"true" } else { b"false" })
        }
        (Type::String, Value::String(s)) => write_str(out, s),
        (Type::Bytes, Value::Bytes(b)) => write_base64(out, b),
        (Type::Array, Value::Array(items)) => {
            let inner = schema.and_then(Schema::value_schema);
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_value(out, inner, item, settings)
                    .map_err(|e| e.in_field(&format!("[{i}]")))?;
            }
            out.push(b']');
        }
        (Type::Map, Value::Map(entries)) => write_map(out, schema, entries, settings)?,
        (Type::Struct, Value::Struct(s)) => {
            let Some(schema) = schema else {
                return Err(ConnectError::data(
                    "a schemaless Struct cannot be written: a Struct always has a schema",
                ));
            };
            if !same_schema(s.schema(), schema)
                && s.schema() != schema
                && !shaped_like_default(schema, s.schema())
            {
                return Err(ConnectError::data(format!(
                    "Mismatching schema: expected {schema}, got {}",
                    s.schema()
                )));
            }
            out.push(b'{');
            for (i, field) in schema.field_list().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_str(out, field.name());
                out.push(b':');
                let v = s.get_at(field.index()).unwrap_or(&Value::Null);
                write_value(out, Some(field.schema()), v, settings)
                    .map_err(|e| e.in_field(field.name()))?;
            }
            out.push(b'}');
        }
        _ => return Err(mismatch()),
    }
    Ok(())
}

/// Equality by position, without hashing: a struct built from another
/// (equal) schema object than its field's is the common case, and
/// `IndexMap` equality would hash every field name per record. `false` only
/// means "not proven equal" (the caller then falls back to `==`).
fn same_schema(a: &Schema, b: &Schema) -> bool {
    a.ptr_eq(b)
        || (a.ty() == b.ty()
            && a.is_optional() == b.is_optional()
            && a.name() == b.name()
            && a.version() == b.version()
            && a.doc() == b.doc()
            && a.parameters() == b.parameters()
            && a.default_value() == b.default_value()
            && a.field_count() == b.field_count()
            && a.field_list()
                .zip(b.field_list())
                .all(|(x, y)| x.name() == y.name() && same_schema(x.schema(), y.schema()))
            && opt_same(a.key_schema(), b.key_schema())
            && opt_same(a.value_schema(), b.value_schema()))
}

fn opt_same(a: Option<&Schema>, b: Option<&Schema>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => same_schema(a, b),
        (None, None) => true,
        _ => false,
    }
}

/// A struct default is built against its schema before the default is set
/// (connect-api validates it so), so its schema lacks the default itself.
fn shaped_like_default(schema: &Schema, value_schema: &Schema) -> bool {
    matches!(schema.default_value(), Some(Value::Struct(d)) if d.schema() == value_schema)
}

fn write_map(
    out: &mut Vec<u8>,
    schema: Option<&Schema>,
    entries: &[(Value, Value)],
    settings: &Settings,
) -> Result<()> {
    let (key_schema, value_schema) = match schema {
        Some(s) => (s.key_schema(), s.value_schema()),
        None => (None, None),
    };
    // String keys make a JSON object, any other key type an array of pairs.
    let object_mode = match key_schema {
        Some(k) => k.ty() == Type::String,
        None => entries.iter().all(|(k, _)| matches!(k, Value::String(_))),
    };
    out.push(if object_mode { b'{' } else { b'[' });
    for (i, (k, v)) in entries.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        if object_mode {
            let key = match k {
                Value::String(s) => s.as_str(),
                // A null key of an optional or defaulted key schema is
                // rendered as Jackson's text of the converted key.
                Value::Null => match key_schema.and_then(|s| {
                    s.default_value()
                        .filter(|_| settings.replace_null_with_default)
                }) {
                    Some(Value::String(d)) => d.as_str(),
                    _ if key_schema.is_some_and(Schema::is_optional) => "null",
                    _ => return Err(ConnectError::data(REQUIRED_NULL).in_field("<key>")),
                },
                other => {
                    return Err(ConnectError::data(format!(
                        "Invalid type for STRING: {}",
                        other.type_name()
                    ))
                    .in_field("<key>"))
                }
            };
            write_str(out, key);
            out.push(b':');
            write_value(out, value_schema, v, settings)
                .map_err(|e| e.in_field(&format!("[{key}]")))?;
        } else {
            out.push(b'[');
            write_value(out, key_schema, k, settings).map_err(|e| e.in_field("<key>"))?;
            out.push(b',');
            write_value(out, value_schema, v, settings)
                .map_err(|e| e.in_field(&format!("[{k}]")))?;
            out.push(b']');
        }
    }
    out.push(if object_mode { b'}' } else { b']' });
    Ok(())
}

fn write_logical(
    out: &mut Vec<u8>,
    schema: &Schema,
    logical: LogicalType,
    value: &Value,
    settings: &Settings,
) -> Result<()> {
    match (logical, value) {
        (LogicalType::Decimal, Value::Decimal(d)) => write_decimal(out, Some(schema), d, settings),
        (LogicalType::Date, Value::Date(v)) => {
            write_int(out, i64::from(*v));
            Ok(())
        }
        (LogicalType::Time, Value::Time(v)) => {
            logical::time_from_millis(i64::from(*v))?;
            write_int(out, i64::from(*v));
            Ok(())
        }
        (LogicalType::Timestamp, Value::Timestamp(v)) => {
            write_int(out, *v);
            Ok(())
        }
        (l, v) => Err(ConnectError::data(format!(
            "Invalid type for {l:?}: expected a {l:?} value but was {}",
            v.type_name()
        ))),
    }
}

/// A Decimal as base64 of the unscaled bytes (the schema's scale must
/// match) or as a JSON number.
fn write_decimal(
    out: &mut Vec<u8>,
    schema: Option<&Schema>,
    d: &Decimal,
    settings: &Settings,
) -> Result<()> {
    match settings.decimal_format {
        DecimalFormat::Numeric => {
            write_big_decimal(out, d);
            Ok(())
        }
        DecimalFormat::Base64 => {
            if let Some(schema) = schema {
                let scale = logical::decimal_scale(schema)?;
                if d.scale() != scale {
                    // Reuse connect-api's message for the mismatch.
                    logical::decimal_from_logical(schema, d)?;
                }
            }
            // Values that fit in i128 are encoded without allocating.
            match i128::try_from(d.unscaled()) {
                Ok(v) => write_base64(out, minimal_twos_complement(&v.to_be_bytes())),
                Err(_) => write_base64(out, &d.unscaled_bytes()),
            }
            Ok(())
        }
    }
}

/// Strip redundant sign bytes, as Java's `BigInteger.toByteArray`.
pub(crate) fn minimal_twos_complement(bytes: &[u8]) -> &[u8] {
    let mut start = 0;
    while start + 1 < bytes.len() {
        let (b, next) = (bytes[start], bytes[start + 1]);
        if (b == 0 && next & 0x80 == 0) || (b == 0xff && next & 0x80 != 0) {
            start += 1;
        } else {
            break;
        }
    }
    &bytes[start..]
}

fn write_base64(out: &mut Vec<u8>, bytes: &[u8]) {
    let engine = &base64::engine::general_purpose::STANDARD;
    out.push(b'"');
    let start = out.len();
    let len = base64::encoded_len(bytes.len(), true).unwrap_or(0);
    out.resize(start + len, 0);
    let written = engine.encode_slice(bytes, &mut out[start..]).unwrap_or(0);
    out.truncate(start + written);
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn twos_complement_is_minimal() {
        assert_eq!(minimal_twos_complement(&100i128.to_be_bytes()), [0x64]);
        assert_eq!(minimal_twos_complement(&(-1i128).to_be_bytes()), [0xff]);
        assert_eq!(
            minimal_twos_complement(&128i128.to_be_bytes()),
            [0x00, 0x80]
        );
        assert_eq!(
            minimal_twos_complement(&(-129i128).to_be_bytes()),
            [0xff, 0x7f]
        );
        assert_eq!(minimal_twos_complement(&0i128.to_be_bytes()), [0]);
    }
}
