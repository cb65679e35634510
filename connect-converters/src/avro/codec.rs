//! Connect values <-> Avro binary.
//!
//! Encoding walks the Avro schema and the Connect value together and writes
//! Avro's binary form straight into the output buffer (no intermediate Avro
//! value tree). Decoding lets apache-avro read the datum with the writer's
//! schema, then maps its value onto the Connect schema.

use std::collections::HashMap;

use apache_avro::schema::{Name, Schema as Avro};
use apache_avro::types::Value as AvroValue;
use connect_api::logical::{self, LogicalType};
use connect_api::{ConnectError, Decimal, Result, Schema, Struct, Type, Value};

use crate::json::minimal_twos_complement as minimal;

/// Named Avro types of one schema, for `Ref`s.
pub(crate) type Names = HashMap<Name, Avro>;

/// Avro's zig-zag varint (always `Ok`; a `Result` so encoders can return it).
fn zigzag(out: &mut Vec<u8>, v: i64) -> Result<()> {
    let mut n = ((v << 1) ^ (v >> 63)) as u64;
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
    Ok(())
}

/// Length-prefixed bytes.
fn bytes(out: &mut Vec<u8>, b: &[u8]) -> Result<()> {
    zigzag(out, b.len() as i64)?;
    out.extend_from_slice(b);
    Ok(())
}

fn mismatch(avro: &Avro, value: &Value) -> ConnectError {
    ConnectError::data(format!(
        "cannot write a {} value as Avro {}",
        value.type_name(),
        avro_kind(avro)
    ))
}

fn avro_kind(avro: &Avro) -> String {
    format!("{:?}", apache_avro::schema::SchemaKind::from(avro))
}

/// Write `value` of Connect `schema` in Avro binary for `avro`.
pub(crate) fn encode(
    out: &mut Vec<u8>,
    avro: &Avro,
    names: &Names,
    schema: &Schema,
    value: &Value,
) -> Result<()> {
    if value.is_null() {
        if let Some(d) = schema.default_value().filter(|d| !d.is_null()) {
            return encode(out, avro, names, schema, d);
        }
    }
    match avro {
        Avro::Ref { name } => {
            let resolved = names
                .get(name)
                .ok_or_else(|| ConnectError::data(format!("unknown Avro name {name}")))?;
            encode(out, resolved, names, schema, value)
        }
        Avro::Union(u) => {
            let variants = u.variants();
            let index = if value.is_null() {
                variants.iter().position(|v| matches!(v, Avro::Null))
            } else {
                variants.iter().position(|v| !matches!(v, Avro::Null))
            };
            let Some(index) = index else {
                return Err(if value.is_null() {
                    ConnectError::data("Found null value for non-optional schema")
                } else {
                    mismatch(avro, value)
                });
            };
            zigzag(out, index as i64)?;
            encode(out, &variants[index], names, schema, value)
        }
        Avro::Null if value.is_null() => Ok(()),
        _ if value.is_null() => Err(ConnectError::data(
            "Found null value for non-optional schema",
        )),
        Avro::Boolean => match value {
            Value::Boolean(b) => {
                out.push(u8::from(*b));
                Ok(())
            }
            v => Err(mismatch(avro, v)),
        },
        Avro::Int | Avro::Date | Avro::TimeMillis => match value {
            Value::Int8(v) => zigzag(out, i64::from(*v)),
            Value::Int16(v) => zigzag(out, i64::from(*v)),
            Value::Int32(v) | Value::Date(v) | Value::Time(v) => zigzag(out, i64::from(*v)),
            v => Err(mismatch(avro, v)),
        },
        Avro::Long | Avro::TimestampMillis => match value {
            Value::Int64(v) | Value::Timestamp(v) => zigzag(out, *v),
            v => Err(mismatch(avro, v)),
        },
        Avro::Float => match value {
            Value::Float32(v) => {
                out.extend_from_slice(&v.to_le_bytes());
                Ok(())
            }
            v => Err(mismatch(avro, v)),
        },
        Avro::Double => match value {
            Value::Float64(v) => {
                out.extend_from_slice(&v.to_le_bytes());
                Ok(())
            }
            v => Err(mismatch(avro, v)),
        },
        Avro::String => match value {
            Value::String(s) => bytes(out, s.as_bytes()),
            v => Err(mismatch(avro, v)),
        },
        Avro::Enum(e) => match value {
            Value::String(s) => {
                let i = e.symbols.iter().position(|x| x == s).ok_or_else(|| {
                    ConnectError::data(format!("'{s}' is not a symbol of Avro enum {}", e.name))
                })?;
                zigzag(out, i as i64)?;
                Ok(())
            }
            v => Err(mismatch(avro, v)),
        },
        Avro::Bytes => match value {
            Value::Bytes(b) => bytes(out, b),
            Value::Decimal(d) => encode_decimal(out, schema, d, None),
            v => Err(mismatch(avro, v)),
        },
        Avro::Fixed(f) => match value {
            Value::Bytes(b) if b.len() == f.size => {
                out.extend_from_slice(b);
                Ok(())
            }
            Value::Decimal(d) => encode_decimal(out, schema, d, Some(f.size)),
            v => Err(ConnectError::data(format!(
                "cannot write {} as Avro fixed of {} bytes",
                v.type_name(),
                f.size
            ))),
        },
        Avro::Decimal(d) => {
            let Value::Decimal(v) = value else {
                return Err(mismatch(avro, value));
            };
            let size = match &*d.inner {
                Avro::Fixed(f) => Some(f.size),
                _ => None,
            };
            encode_decimal(out, schema, v, size)
        }
        Avro::Array(a) => match (schema.ty(), value) {
            (Type::Array, Value::Array(items)) => {
                let inner = schema
                    .value_schema()
                    .ok_or_else(|| ConnectError::data("array schema has no value schema"))?;
                if !items.is_empty() {
                    zigzag(out, items.len() as i64)?;
                    for (i, item) in items.iter().enumerate() {
                        encode(out, &a.items, names, inner, item)
                            .map_err(|e| e.in_field(&format!("[{i}]")))?;
                    }
                }
                out.push(0);
                Ok(())
            }
            (Type::Map, Value::Map(entries)) => {
                let (ks, vs) = map_schemas(schema)?;
                let (ka, va) = map_entry_fields(&a.items, names)?;
                if !entries.is_empty() {
                    zigzag(out, entries.len() as i64)?;
                    for (k, v) in entries {
                        encode(out, ka, names, ks, k).map_err(|e| e.in_field("<key>"))?;
                        encode(out, va, names, vs, v).map_err(|e| e.in_field(&format!("[{k}]")))?;
                    }
                }
                out.push(0);
                Ok(())
            }
            (_, v) => Err(mismatch(avro, v)),
        },
        Avro::Map(m) => match value {
            Value::Map(entries) => {
                let (_, vs) = map_schemas(schema)?;
                if !entries.is_empty() {
                    zigzag(out, entries.len() as i64)?;
                    for (k, v) in entries {
                        let key = k.as_str().ok_or_else(|| {
                            ConnectError::data("Avro map keys must be strings").in_field("<key>")
                        })?;
                        bytes(out, key.as_bytes())?;
                        encode(out, &m.types, names, vs, v)
                            .map_err(|e| e.in_field(&format!("[{key}]")))?;
                    }
                }
                out.push(0);
                Ok(())
            }
            v => Err(mismatch(avro, v)),
        },
        Avro::Record(r) => match value {
            Value::Struct(s) => {
                for (i, af) in r.fields.iter().enumerate() {
                    // Fields are in Connect order when we made the schema.
                    let field = match s.schema().field_at(i) {
                        Some(f) if f.name() == af.name => f,
                        _ => s.schema().field(&af.name).ok_or_else(|| {
                            ConnectError::data(format!(
                                "the Connect struct has no field '{}'",
                                af.name
                            ))
                        })?,
                    };
                    let v = s.get_at(field.index()).unwrap_or(&Value::Null);
                    encode(out, &af.schema, names, field.schema(), v)
                        .map_err(|e| e.in_field(field.name()))?;
                }
                Ok(())
            }
            v => Err(mismatch(avro, v)),
        },
        other => Err(ConnectError::data(format!(
            "Avro type {} is not written by this converter",
            avro_kind(other)
        ))),
    }
}

fn map_schemas(schema: &Schema) -> Result<(&Schema, &Schema)> {
    schema
        .key_schema()
        .zip(schema.value_schema())
        .ok_or_else(|| ConnectError::data("map schema has no key or value schema"))
}

fn map_entry_fields<'a>(items: &'a Avro, names: &'a Names) -> Result<(&'a Avro, &'a Avro)> {
    let record = match items {
        Avro::Ref { name } => names.get(name),
        other => Some(other),
    };
    match record {
        Some(Avro::Record(r)) if r.fields.len() == 2 => {
            Ok((&r.fields[0].schema, &r.fields[1].schema))
        }
        _ => Err(ConnectError::data(
            "a Connect MAP needs an Avro array of key/value records",
        )),
    }
}

fn encode_decimal(
    out: &mut Vec<u8>,
    schema: &Schema,
    d: &Decimal,
    fixed: Option<usize>,
) -> Result<()> {
    if LogicalType::of(schema) == Some(LogicalType::Decimal) {
        let scale = logical::decimal_scale(schema)?;
        if d.scale() != scale {
            logical::decimal_from_logical(schema, d)?;
        }
    }
    let heap;
    let stack;
    let unscaled: &[u8] = match i128::try_from(d.unscaled()) {
        Ok(v) => {
            stack = v.to_be_bytes();
            minimal(&stack)
        }
        Err(_) => {
            heap = d.unscaled_bytes();
            &heap
        }
    };
    match fixed {
        None => bytes(out, unscaled)?,
        Some(size) => {
            if unscaled.len() > size {
                return Err(ConnectError::data(format!(
                    "decimal {d} does not fit in {size} bytes"
                )));
            }
            let pad = if unscaled.first().is_some_and(|b| b & 0x80 != 0) {
                0xff
            } else {
                0
            };
            out.resize(out.len() + size - unscaled.len(), pad);
            out.extend_from_slice(unscaled);
        }
    }
    Ok(())
}

/// Map an Avro value read with the writer's schema onto Connect `schema`.
pub(crate) fn to_connect(schema: &Schema, value: AvroValue) -> Result<Value> {
    let bad = |v: &AvroValue| ConnectError::data(format!("Avro value {v:?} does not fit {schema}"));
    let plain = match value {
        AvroValue::Union(_, inner) => return to_connect(schema, *inner),
        AvroValue::Null => {
            return if schema.is_optional() {
                Ok(Value::Null)
            } else {
                Err(ConnectError::data(format!("null for required {schema}")))
            };
        }
        AvroValue::Boolean(b) => Value::Boolean(b),
        AvroValue::Int(v) | AvroValue::Date(v) | AvroValue::TimeMillis(v) => match schema.ty() {
            Type::Int8 => Value::Int8(i8::try_from(v).map_err(|_| bad(&AvroValue::Int(v)))?),
            Type::Int16 => Value::Int16(i16::try_from(v).map_err(|_| bad(&AvroValue::Int(v)))?),
            Type::Int32 => Value::Int32(v),
            Type::Int64 => Value::Int64(i64::from(v)),
            _ => return Err(bad(&AvroValue::Int(v))),
        },
        AvroValue::Long(v) | AvroValue::TimestampMillis(v) => match schema.ty() {
            Type::Int64 => Value::Int64(v),
            _ => return Err(bad(&AvroValue::Long(v))),
        },
        AvroValue::Float(v) => match schema.ty() {
            Type::Float32 => Value::Float32(v),
            Type::Float64 => Value::Float64(f64::from(v)),
            _ => return Err(bad(&AvroValue::Float(v))),
        },
        AvroValue::Double(v) => Value::Float64(v),
        AvroValue::String(s) | AvroValue::Enum(_, s) => Value::String(s),
        AvroValue::Bytes(b) | AvroValue::Fixed(_, b) => Value::Bytes(b.into()),
        AvroValue::Decimal(d) => {
            let b: Vec<u8> = Vec::try_from(&d)
                .map_err(|e| ConnectError::data(format!("bad Avro decimal: {e}")))?;
            Value::Bytes(b.into())
        }
        AvroValue::Array(items) => match schema.ty() {
            Type::Array => {
                let inner = schema
                    .value_schema()
                    .ok_or_else(|| ConnectError::data("array schema has no value schema"))?;
                Value::Array(
                    items
                        .into_iter()
                        .enumerate()
                        .map(|(i, v)| {
                            to_connect(inner, v).map_err(|e| e.in_field(&format!("[{i}]")))
                        })
                        .collect::<Result<_>>()?,
                )
            }
            Type::Map => {
                let (ks, vs) = map_schemas(schema)?;
                let mut entries = Vec::with_capacity(items.len());
                for item in items {
                    let AvroValue::Record(mut kv) = item else {
                        return Err(ConnectError::data("a map entry must be a key/value record"));
                    };
                    if kv.len() != 2 {
                        return Err(ConnectError::data("a map entry must be a key/value record"));
                    }
                    let (_, v) = kv.pop().unwrap_or((String::new(), AvroValue::Null));
                    let (_, k) = kv.pop().unwrap_or((String::new(), AvroValue::Null));
                    entries.push((to_connect(ks, k)?, to_connect(vs, v)?));
                }
                Value::Map(entries)
            }
            _ => {
                return Err(ConnectError::data(format!(
                    "Avro array does not fit {schema}"
                )))
            }
        },
        AvroValue::Map(m) => {
            let (_, vs) = map_schemas(schema)?;
            Value::Map(
                m.into_iter()
                    .map(|(k, v)| {
                        let v = to_connect(vs, v).map_err(|e| e.in_field(&format!("[{k}]")))?;
                        Ok((Value::String(k), v))
                    })
                    .collect::<Result<_>>()?,
            )
        }
        AvroValue::Record(fields) => {
            if schema.ty() != Type::Struct {
                return Err(ConnectError::data(format!(
                    "Avro record does not fit {schema}"
                )));
            }
            let mut s = Struct::new(schema.clone())?;
            for (name, v) in fields {
                if let Some(f) = schema.field(&name) {
                    let v = to_connect(f.schema(), v).map_err(|e| e.in_field(&name))?;
                    s.put_at_unchecked(f.index(), v);
                }
            }
            Value::Struct(s)
        }
        other => {
            return Err(ConnectError::data(format!(
                "Avro value {other:?} has no Connect equivalent"
            )))
        }
    };
    logical::from_primitive(schema, plain)
}
