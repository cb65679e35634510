//! `SchemaProjector`: project a value of one schema onto a compatible schema.
//!
//! Kafka Connect uses projection when data written with one version of a
//! schema must be read as another (a sink writing to a table of a newer
//! schema, a converter upgrading old records). The rules are Kafka's:
//!
//! - the types must be equal, or the source type must promote to the target
//!   type along `INT8 -> INT16 -> INT32 -> INT64 -> FLOAT32 -> FLOAT64`;
//! - the schema names and the parameters must be equal (so a logical type
//!   only projects onto the same logical type, and a Decimal keeps its scale);
//! - an optional source projects onto a required target only when the
//!   target has a default, which replaces null;
//! - structs are matched field by field, by name: a target field missing
//!   from the source is left unset if optional, set to its default if it
//!   has one, and is an error otherwise; source fields the target does not
//!   have are dropped;
//! - arrays and maps are projected element by element.

use crate::error::{ConnectError, Result};
use crate::logical::{self, LogicalType};
use crate::schema::{Schema, Type};
use crate::structs::Struct;
use crate::value::Value;

/// Projects values between compatible schemas (Kafka's `SchemaProjector`).
///
/// ```
/// use connect_api::{Schema, SchemaBuilder, SchemaProjector, Struct, Value};
///
/// let v1 = SchemaBuilder::struct_()
///     .field("id", Schema::int32())
///     .field("legacy", Schema::string())
///     .build()
///     .unwrap();
/// let v2 = SchemaBuilder::struct_()
///     .field("id", Schema::int64())
///     .field("score", SchemaBuilder::float64().default_value(0.5).build().unwrap())
///     .build()
///     .unwrap();
/// let mut old = Struct::new(v1.clone()).unwrap();
/// old.put("id", 7).unwrap().put("legacy", "x").unwrap();
///
/// let new = SchemaProjector::project(&v1, &Value::Struct(old), &v2).unwrap();
/// let Value::Struct(new) = new else { unreachable!() };
/// assert_eq!(new.get_int64("id").unwrap(), Some(7));          // INT32 promoted
/// assert_eq!(new.get_float64("score").unwrap(), Some(0.5));   // target default
/// assert!(new.get("legacy").is_err());                       // dropped
///
/// // Narrowing is not a projection.
/// let e = SchemaProjector::project(&Schema::int64(), &Value::Int64(1), &Schema::int32()).unwrap_err();
/// assert_eq!(e.to_string(), "Schema type mismatch. source type: INT64 and target type: INT32");
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct SchemaProjector;

impl SchemaProjector {
    /// Project `value`, of schema `source`, onto `target`.
    ///
    /// `value` is expected to be valid for `source`; when it is not, the
    /// mismatch is reported where it is found, as a data error naming the
    /// field path. Equal schemas return the value unchanged.
    pub fn project(source: &Schema, value: &Value, target: &Schema) -> Result<Value> {
        project(source, value, target)
    }

    /// Whether `from` values can be widened to `to` without a lossy
    /// narrowing (`INT8 -> INT16 -> INT32 -> INT64 -> FLOAT32 -> FLOAT64`).
    /// A type does not promote to itself.
    pub fn is_promotable(from: Type, to: Type) -> bool {
        match (numeric_rank(from), numeric_rank(to)) {
            (Some(f), Some(t)) => f < t,
            _ => false,
        }
    }
}

fn numeric_rank(ty: Type) -> Option<u8> {
    Some(match ty {
        Type::Int8 => 0,
        Type::Int16 => 1,
        Type::Int32 => 2,
        Type::Int64 => 3,
        Type::Float32 => 4,
        Type::Float64 => 5,
        _ => return None,
    })
}

fn check_compatible(source: &Schema, target: &Schema) -> Result<()> {
    if source.ty() != target.ty() && !SchemaProjector::is_promotable(source.ty(), target.ty()) {
        return Err(ConnectError::data(format!(
            "Schema type mismatch. source type: {} and target type: {}",
            source.ty(),
            target.ty()
        )));
    }
    if source.name() != target.name() {
        return Err(ConnectError::data(format!(
            "Schema name mismatch. source name: {} and target name: {}",
            source.name().unwrap_or("null"),
            target.name().unwrap_or("null")
        )));
    }
    if source.parameters() != target.parameters() {
        return Err(ConnectError::data(format!(
            "Schema parameters not equal. source parameters: {:?} and target parameters: {:?}",
            source.parameters(),
            target.parameters()
        )));
    }
    Ok(())
}

fn project(source: &Schema, value: &Value, target: &Schema) -> Result<Value> {
    check_compatible(source, target)?;
    if source.is_optional() && !target.is_optional() && target.default_value().is_none() {
        return Err(ConnectError::data(format!(
            "Writer schema is optional, however, target schema {target} does not provide a default value."
        )));
    }
    if value.is_null() {
        return match target.default_value() {
            _ if target.is_optional() => Ok(Value::Null),
            Some(default) => Ok(default.clone()),
            None => Err(ConnectError::data(format!(
                "expected {}, got null (the target schema is required and has no default)",
                target.ty()
            ))),
        };
    }
    if source == target {
        return Ok(value.clone());
    }
    match target.ty() {
        Type::Struct => project_struct(source, value, target),
        Type::Array => project_array(source, value, target),
        Type::Map => project_map(source, value, target),
        _ => project_primitive(source, value, target),
    }
}

fn inner<'a>(schema: &'a Schema, which: &str) -> Result<&'a Schema> {
    let inner = if which == "key" {
        schema.key_schema()
    } else {
        schema.value_schema()
    };
    inner.ok_or_else(|| ConnectError::data(format!("{schema} has no {which} schema")))
}

fn project_struct(source: &Schema, value: &Value, target: &Schema) -> Result<Value> {
    let Value::Struct(from) = value else {
        return Err(ConnectError::data(format!(
            "expected STRUCT, got {}",
            value.type_name()
        )));
    };
    let mut out = Struct::new(target.clone())?;
    for field in target.field_list() {
        let projected = match source.field(field.name()) {
            Some(source_field) => {
                let v = from
                    .get(field.name())
                    .map_err(|e| e.in_field(field.name()))?;
                project(source_field.schema(), v, field.schema())
                    .map_err(|e| e.in_field(field.name()))?
            }
            None if field.schema().is_optional() => continue,
            None => match field.schema().default_value() {
                Some(default) => default.clone(),
                None => {
                    return Err(ConnectError::data_at(
                        field.name(),
                        format!(
                            "Required field `{}` is missing from source schema: {source}",
                            field.name()
                        ),
                    ))
                }
            },
        };
        // Built by projecting onto the field's own schema (or its validated
        // default), so it matches without a second validation pass.
        out.put_at_unchecked(field.index(), projected);
    }
    Ok(Value::Struct(out))
}

fn project_array(source: &Schema, value: &Value, target: &Schema) -> Result<Value> {
    let Value::Array(items) = value else {
        return Err(ConnectError::data(format!(
            "expected ARRAY, got {}",
            value.type_name()
        )));
    };
    let (from, to) = (inner(source, "value")?, inner(target, "value")?);
    items
        .iter()
        .enumerate()
        .map(|(i, item)| project(from, item, to).map_err(|e| e.in_field(&format!("[{i}]"))))
        .collect::<Result<Vec<_>>>()
        .map(Value::Array)
}

fn project_map(source: &Schema, value: &Value, target: &Schema) -> Result<Value> {
    let Value::Map(entries) = value else {
        return Err(ConnectError::data(format!(
            "expected MAP, got {}",
            value.type_name()
        )));
    };
    let (from_k, to_k) = (inner(source, "key")?, inner(target, "key")?);
    let (from_v, to_v) = (inner(source, "value")?, inner(target, "value")?);
    entries
        .iter()
        .map(|(k, v)| {
            let key = project(from_k, k, to_k).map_err(|e| e.in_field("<key>"))?;
            let value = project(from_v, v, to_v).map_err(|e| e.in_field(&format!("[{k}]")))?;
            Ok((key, value))
        })
        .collect::<Result<Vec<_>>>()
        .map(Value::Map)
}

fn project_primitive(source: &Schema, value: &Value, target: &Schema) -> Result<Value> {
    // Names and parameters are equal here, so a logical value keeps its
    // logical type unless the underlying type is widened (a Date name on an
    // INT64 is no longer the Date logical type).
    let source_logical = LogicalType::of(source);
    let target_logical = LogicalType::of(target);
    if source_logical.is_some() && source_logical == target_logical {
        target.validate_value(value)?;
        return Ok(value.clone());
    }
    let raw = logical::to_primitive(source, value)?;
    let promoted = promote(&raw, target.ty()).ok_or_else(|| {
        ConnectError::data(format!(
            "expected {}, got {}",
            source.ty(),
            value.type_name()
        ))
    })?;
    logical::from_primitive(target, promoted)
}

/// Widen a numeric (or pass through an equal-typed) primitive value to `to`;
/// `None` when `value` is not of a type that reaches `to`.
pub(crate) fn promote(value: &Value, to: Type) -> Option<Value> {
    let from = value.schema_type()?;
    if from == to {
        return Some(value.clone());
    }
    if !SchemaProjector::is_promotable(from, to) {
        return None;
    }
    // Integers as i64 are exact; FLOAT32/FLOAT64 targets round as Java's
    // widening conversions do.
    let as_i64 = match value {
        Value::Int8(v) => Some(i64::from(*v)),
        Value::Int16(v) => Some(i64::from(*v)),
        Value::Int32(v) => Some(i64::from(*v)),
        Value::Int64(v) => Some(*v),
        _ => None,
    };
    Some(match (to, as_i64, value) {
        (Type::Int16, Some(v), _) => Value::Int16(i16::try_from(v).ok()?),
        (Type::Int32, Some(v), _) => Value::Int32(i32::try_from(v).ok()?),
        (Type::Int64, Some(v), _) => Value::Int64(v),
        (Type::Float32, Some(v), _) => Value::Float32(v as f32),
        (Type::Float64, Some(v), _) => Value::Float64(v as f64),
        (Type::Float64, None, Value::Float32(f)) => Value::Float64(f64::from(*f)),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::logical::{date_schema, decimal_schema, timestamp_schema};
    use crate::schema::SchemaBuilder;
    use crate::Decimal;

    fn p(source: &Schema, value: Value, target: &Schema) -> Result<Value> {
        SchemaProjector::project(source, &value, target)
    }

    #[test]
    fn numeric_promotion_chain() {
        let chain = [
            (Schema::int8(), Value::Int8(-5)),
            (Schema::int16(), Value::Int16(-5)),
            (Schema::int32(), Value::Int32(-5)),
            (Schema::int64(), Value::Int64(-5)),
            (Schema::float32(), Value::Float32(-5.0)),
            (Schema::float64(), Value::Float64(-5.0)),
        ];
        for (i, (from, v)) in chain.iter().enumerate() {
            for (j, (to, expected)) in chain.iter().enumerate() {
                let got = p(from, v.clone(), to);
                if i <= j {
                    assert_eq!(got.unwrap(), *expected, "{from} -> {to}");
                } else {
                    let e = got.unwrap_err().to_string();
                    assert!(e.starts_with("Schema type mismatch"), "{e}");
                }
            }
        }
    }

    #[test]
    fn large_int64_to_float_rounds_like_java() {
        let v = p(&Schema::int64(), Value::Int64(i64::MAX), &Schema::float64()).unwrap();
        assert_eq!(v, Value::Float64(9.223372036854776e18));
    }

    #[test]
    fn non_numeric_types_must_be_equal() {
        assert!(p(&Schema::string(), Value::from("a"), &Schema::bytes()).is_err());
        assert!(p(&Schema::boolean(), Value::Boolean(true), &Schema::int8()).is_err());
        assert!(p(&Schema::int32(), Value::Int32(1), &Schema::string()).is_err());
        assert_eq!(
            p(
                &Schema::string(),
                Value::from("a"),
                &Schema::optional_string()
            )
            .unwrap(),
            Value::from("a")
        );
    }

    #[test]
    fn names_and_parameters_must_match() {
        let named = SchemaBuilder::int32().name("a").build().unwrap();
        let other = SchemaBuilder::int32().name("b").build().unwrap();
        let e = p(&named, Value::Int32(1), &other).unwrap_err();
        assert_eq!(
            e.to_string(),
            "Schema name mismatch. source name: a and target name: b"
        );
        assert!(p(&Schema::int32(), Value::Int32(1), &named).is_err());
        let dec = Value::Decimal(Decimal::new(150, 2));
        assert!(p(&decimal_schema(2), dec.clone(), &decimal_schema(3))
            .unwrap_err()
            .to_string()
            .starts_with("Schema parameters not equal"));
        assert_eq!(
            p(&decimal_schema(2), dec.clone(), &decimal_schema(2)).unwrap(),
            dec
        );
    }

    #[test]
    fn logical_types_project_onto_themselves() {
        let optional_date = crate::logical::date_builder().optional().build().unwrap();
        assert_eq!(
            p(&date_schema(), Value::Date(3), &optional_date).unwrap(),
            Value::Date(3)
        );
        assert_eq!(
            p(
                &timestamp_schema(),
                Value::Timestamp(9),
                &timestamp_schema()
            )
            .unwrap(),
            Value::Timestamp(9)
        );
        assert!(p(&date_schema(), Value::Date(3), &Schema::int32()).is_err());
    }

    #[test]
    fn optional_to_required_uses_default() {
        let with_default = SchemaBuilder::int64().default_value(42i64).build().unwrap();
        assert_eq!(
            p(&Schema::optional_int32(), Value::Null, &with_default).unwrap(),
            Value::Int64(42)
        );
        assert_eq!(
            p(&Schema::optional_int32(), Value::Int32(1), &with_default).unwrap(),
            Value::Int64(1)
        );
        let e = p(&Schema::optional_int32(), Value::Int32(1), &Schema::int32()).unwrap_err();
        assert!(
            e.to_string().contains("does not provide a default value"),
            "{e}"
        );
        assert_eq!(
            p(
                &Schema::optional_int32(),
                Value::Null,
                &Schema::optional_int64()
            )
            .unwrap(),
            Value::Null
        );
        assert!(p(&Schema::int32(), Value::Null, &Schema::int32()).is_err());
    }

    fn person_v1() -> Schema {
        SchemaBuilder::struct_()
            .field("name", Schema::string())
            .field("age", Schema::int8())
            .field("dropped", Schema::boolean())
            .build()
            .unwrap()
    }

    fn person_v1_value() -> Value {
        let mut s = Struct::new(person_v1()).unwrap();
        s.put("name", "Ada")
            .unwrap()
            .put("age", 36i8)
            .unwrap()
            .put("dropped", true)
            .unwrap();
        Value::Struct(s)
    }

    #[test]
    fn struct_by_field_name() {
        let v2 = SchemaBuilder::struct_()
            .field("age", Schema::int32())
            .field("nick", Schema::optional_string())
            .field(
                "country",
                SchemaBuilder::string().default_value("FR").build().unwrap(),
            )
            .field("name", Schema::string())
            .build()
            .unwrap();
        let Value::Struct(out) = p(&person_v1(), person_v1_value(), &v2).unwrap() else {
            panic!("not a struct")
        };
        assert_eq!(out.schema(), &v2);
        assert_eq!(out.get_int32("age").unwrap(), Some(36));
        assert_eq!(out.get_string("name").unwrap(), Some("Ada"));
        assert_eq!(out.get_without_default("nick").unwrap(), &Value::Null);
        assert_eq!(out.get_string("country").unwrap(), Some("FR"));
        assert!(out.get("dropped").is_err());
        out.validate().unwrap();
    }

    #[test]
    fn missing_required_field_is_named() {
        let v2 = SchemaBuilder::struct_()
            .field("name", Schema::string())
            .field("email", Schema::string())
            .build()
            .unwrap();
        let e = p(&person_v1(), person_v1_value(), &v2).unwrap_err();
        assert!(
            e.to_string().starts_with("email: Required field `email`"),
            "{e}"
        );
    }

    #[test]
    fn nested_errors_name_the_path() {
        let outer = |inner: Schema| {
            SchemaBuilder::struct_()
                .field("person", inner)
                .build()
                .unwrap()
        };
        let narrow = SchemaBuilder::struct_()
            .field("name", Schema::string())
            .field("age", Schema::string())
            .build()
            .unwrap();
        let mut s = Struct::new(outer(person_v1())).unwrap();
        s.put("person", person_v1_value()).unwrap();
        let e = p(&outer(person_v1()), Value::Struct(s), &outer(narrow)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "person.age: Schema type mismatch. source type: INT8 and target type: STRING"
        );
    }

    #[test]
    fn arrays_and_maps_element_wise() {
        let from = SchemaBuilder::array(Schema::int16()).build().unwrap();
        let to = SchemaBuilder::array(Schema::float64()).build().unwrap();
        assert_eq!(
            p(
                &from,
                Value::Array(vec![Value::Int16(1), Value::Int16(2)]),
                &to
            )
            .unwrap(),
            Value::Array(vec![Value::Float64(1.0), Value::Float64(2.0)])
        );
        let from = SchemaBuilder::map(Schema::int8(), Schema::optional_int32())
            .build()
            .unwrap();
        let to = SchemaBuilder::map(Schema::int64(), Schema::optional_int64())
            .build()
            .unwrap();
        assert_eq!(
            p(&from, Value::Map(vec![(Value::Int8(1), Value::Null)]), &to).unwrap(),
            Value::Map(vec![(Value::Int64(1), Value::Null)])
        );
        let bad = SchemaBuilder::array(Schema::int32()).build().unwrap();
        let e = p(
            &from,
            Value::Map(vec![(Value::Int8(1), Value::Null)]),
            &SchemaBuilder::map(Schema::int8(), Schema::int32())
                .build()
                .unwrap(),
        )
        .unwrap_err();
        assert!(e.to_string().contains("does not provide a default"), "{e}");
        let to_bad = SchemaBuilder::array(Schema::int64()).build().unwrap();
        let e = p(&bad, Value::Array(vec![Value::from("x")]), &to_bad).unwrap_err();
        assert_eq!(e.to_string(), "[0]: expected INT32, got STRING");
    }

    #[test]
    fn wrong_value_kind_is_an_error() {
        let v2 = SchemaBuilder::struct_()
            .field("name", Schema::string())
            .build()
            .unwrap();
        assert!(p(&person_v1(), Value::Int32(1), &v2).is_err());
        assert!(p(&Schema::int8(), Value::from("x"), &Schema::int16()).is_err());
    }
}
