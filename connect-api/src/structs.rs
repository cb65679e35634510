//! `Struct`: a value of a STRUCT schema.

use crate::error::{ConnectError, Result};
use crate::logical::Decimal;
use crate::schema::{Field, Schema, Type};
use crate::value::Value;

/// A struct value bound to its STRUCT schema.
///
/// [`put`](Struct::put) validates the value at once; [`get`](Struct::get)
/// returns the field's default when the field is unset, while
/// [`get_without_default`](Struct::get_without_default) returns the raw value.
///
/// ```
/// use connect_api::{Schema, SchemaBuilder, Struct, Value};
///
/// let schema = SchemaBuilder::struct_()
///     .field("name", Schema::string())
///     .field("age", SchemaBuilder::int32().optional().default_value(18).build().unwrap())
///     .build()
///     .unwrap();
/// let mut person = Struct::new(schema).unwrap();
/// person.put("name", "Ada").unwrap();
/// assert_eq!(person.get_int32("age").unwrap(), Some(18));
/// assert_eq!(person.get_without_default("age").unwrap(), &Value::Null);
/// assert!(person.put("age", "old").is_err());
/// assert_eq!(
///     person.put("nope", 1).unwrap_err().to_string(),
///     "nope is not a valid field name"
/// );
/// person.validate().unwrap();
/// ```
#[derive(Debug, Clone)]
pub struct Struct {
    schema: Schema,
    values: Vec<Value>,
}

impl PartialEq for Struct {
    fn eq(&self, other: &Self) -> bool {
        self.schema == other.schema && self.values == other.values
    }
}

macro_rules! typed_getter {
    ($(#[$doc:meta])* $fn:ident, $ty:ty, $variant:ident) => {
        $(#[$doc])*
        pub fn $fn(&self, name: &str) -> Result<Option<$ty>> {
            match self.get(name)? {
                Value::Null => Ok(None),
                Value::$variant(v) => Ok(Some(v.clone())),
                other => Err(ConnectError::data_at(
                    name,
                    format!("expected {}, got {}", stringify!($variant), other.type_name()),
                )),
            }
        }
    };
}

impl Struct {
    /// An empty struct of `schema` (which must be a STRUCT schema).
    pub fn new(schema: Schema) -> Result<Struct> {
        if schema.ty() != Type::Struct {
            return Err(ConnectError::data(format!("Not a struct schema: {schema}")));
        }
        let values = vec![Value::Null; schema.field_count()];
        Ok(Struct { schema, values })
    }

    /// A struct from its schema and its raw values in field order, without
    /// validating the values (transforms that build a struct from values
    /// already checked against the same field schemas use this to avoid a
    /// second pass). [`validate`](Struct::validate) still catches a mismatch.
    pub fn from_parts(schema: Schema, values: Vec<Value>) -> Result<Struct> {
        if schema.ty() != Type::Struct {
            return Err(ConnectError::data(format!("Not a struct schema: {schema}")));
        }
        if values.len() != schema.field_count() {
            return Err(ConnectError::data(format!(
                "{schema} has {} fields, got {} values",
                schema.field_count(),
                values.len()
            )));
        }
        Ok(Struct { schema, values })
    }

    /// The struct's schema.
    pub fn schema(&self) -> &Schema {
        &self.schema
    }

    fn lookup(&self, name: &str) -> Result<&Field> {
        self.schema
            .field(name)
            .ok_or_else(|| ConnectError::data(format!("{name} is not a valid field name")))
    }

    /// Set field `name`, validating the value against the field's schema.
    pub fn put(&mut self, name: &str, value: impl Into<Value>) -> Result<&mut Self> {
        let value = value.into();
        let field = self.lookup(name)?;
        crate::value::validate_shallow(field.schema(), &value).map_err(|e| e.in_field(name))?;
        let index = field.index();
        self.values[index] = value;
        Ok(self)
    }

    /// Set the field at `index` (from a [`Field`]), validating it.
    pub fn put_at(&mut self, index: usize, value: impl Into<Value>) -> Result<&mut Self> {
        let value = value.into();
        let field = self
            .schema
            .field_at(index)
            .ok_or_else(|| ConnectError::data(format!("no field at index {index}")))?;
        crate::value::validate_shallow(field.schema(), &value)
            .map_err(|e| e.in_field(field.name()))?;
        self.values[index] = value;
        Ok(self)
    }

    /// Set the field at `index` without validation. The caller guarantees
    /// the value matches the field's schema (transforms that copy values
    /// between structs of the same field schemas use this on the hot path);
    /// [`validate`](Struct::validate) still catches a mismatch.
    pub fn put_at_unchecked(&mut self, index: usize, value: Value) {
        if let Some(slot) = self.values.get_mut(index) {
            *slot = value;
        }
    }

    /// The value of `name`, or its default when unset.
    pub fn get(&self, name: &str) -> Result<&Value> {
        let field = self.lookup(name)?;
        Ok(self.value_or_default(field))
    }

    /// The value at `field`'s position, or its default when unset.
    pub fn value_or_default<'a>(&'a self, field: &'a Field) -> &'a Value {
        // `get` rather than indexing: `field` may come from another schema.
        match self.values.get(field.index()) {
            Some(Value::Null) | None => field.schema().default_value().unwrap_or(&Value::Null),
            Some(v) => v,
        }
    }

    /// The raw value of `name` (no default).
    pub fn get_without_default(&self, name: &str) -> Result<&Value> {
        let field = self.lookup(name)?;
        Ok(&self.values[field.index()])
    }

    /// The raw value at position `index`.
    pub fn get_at(&self, index: usize) -> Option<&Value> {
        self.values.get(index)
    }

    /// Raw values in field order.
    pub fn values(&self) -> &[Value] {
        &self.values
    }

    /// Take the raw values out (in field order), keeping the schema.
    pub fn into_parts(self) -> (Schema, Vec<Value>) {
        (self.schema, self.values)
    }

    typed_getter!(/// INT8 field.
        get_int8, i8, Int8);
    typed_getter!(/// INT16 field.
        get_int16, i16, Int16);
    typed_getter!(/// INT32 field.
        get_int32, i32, Int32);
    typed_getter!(/// INT64 field.
        get_int64, i64, Int64);
    typed_getter!(/// FLOAT32 field.
        get_float32, f32, Float32);
    typed_getter!(/// FLOAT64 field.
        get_float64, f64, Float64);
    typed_getter!(/// BOOLEAN field.
        get_boolean, bool, Boolean);
    typed_getter!(/// Decimal field.
        get_decimal, Decimal, Decimal);

    /// STRING field.
    pub fn get_string(&self, name: &str) -> Result<Option<&str>> {
        match self.get(name)? {
            Value::Null => Ok(None),
            Value::String(s) => Ok(Some(s)),
            other => Err(ConnectError::data_at(
                name,
                format!("expected STRING, got {}", other.type_name()),
            )),
        }
    }
    /// BYTES field.
    pub fn get_bytes(&self, name: &str) -> Result<Option<&[u8]>> {
        match self.get(name)? {
            Value::Null => Ok(None),
            Value::Bytes(b) => Ok(Some(b)),
            other => Err(ConnectError::data_at(
                name,
                format!("expected BYTES, got {}", other.type_name()),
            )),
        }
    }
    /// STRUCT field.
    pub fn get_struct(&self, name: &str) -> Result<Option<&Struct>> {
        match self.get(name)? {
            Value::Null => Ok(None),
            Value::Struct(s) => Ok(Some(s)),
            other => Err(ConnectError::data_at(
                name,
                format!("expected STRUCT, got {}", other.type_name()),
            )),
        }
    }
    /// ARRAY field.
    pub fn get_array(&self, name: &str) -> Result<Option<&[Value]>> {
        match self.get(name)? {
            Value::Null => Ok(None),
            Value::Array(a) => Ok(Some(a)),
            other => Err(ConnectError::data_at(
                name,
                format!("expected ARRAY, got {}", other.type_name()),
            )),
        }
    }
    /// MAP field.
    pub fn get_map(&self, name: &str) -> Result<Option<&[(Value, Value)]>> {
        match self.get(name)? {
            Value::Null => Ok(None),
            Value::Map(m) => Ok(Some(m)),
            other => Err(ConnectError::data_at(
                name,
                format!("expected MAP, got {}", other.type_name()),
            )),
        }
    }

    /// Check every field: required fields set (or defaulted), values valid.
    /// The error names the field path (`address.zip: ...`).
    pub fn validate(&self) -> Result<()> {
        for field in self.schema.field_list() {
            let value = &self.values[field.index()];
            let fs = field.schema();
            if value.is_null() {
                if fs.is_optional() || fs.default_value().is_some() {
                    continue;
                }
                return Err(ConnectError::data_at(
                    field.name(),
                    format!("expected {}, got null (the field is required)", fs.ty()),
                ));
            }
            fs.validate_value(value)
                .map_err(|e| e.in_field(field.name()))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::SchemaBuilder;

    fn address() -> Schema {
        SchemaBuilder::struct_()
            .field("zip", Schema::int32())
            .build()
            .unwrap()
    }

    #[test]
    fn error_names_full_path() {
        let person = SchemaBuilder::struct_()
            .field("address", address())
            .build()
            .unwrap();
        let mut a = Struct::new(address()).unwrap();
        let e = a.put("zip", "12345").unwrap_err();
        assert_eq!(e.to_string(), "zip: expected INT32, got STRING");
        let mut p = Struct::new(person).unwrap();
        p.put("address", Struct::new(address()).unwrap()).unwrap();
        assert_eq!(
            p.validate().unwrap_err().to_string(),
            "address.zip: expected INT32, got null (the field is required)"
        );
    }

    #[test]
    fn struct_schema_must_equal() {
        let other = SchemaBuilder::struct_()
            .field("zip", Schema::int64())
            .build()
            .unwrap();
        let person = SchemaBuilder::struct_()
            .field("address", address())
            .build()
            .unwrap();
        let mut p = Struct::new(person).unwrap();
        assert!(p.put("address", Struct::new(other).unwrap()).is_err());
    }

    #[test]
    fn a_field_of_another_schema_does_not_panic() {
        let wide = SchemaBuilder::struct_()
            .field("a", Schema::int32())
            .field("b", Schema::optional_int32())
            .build()
            .unwrap();
        let narrow = Struct::new(address()).unwrap();
        let b = wide.field("b").unwrap();
        assert_eq!(narrow.value_or_default(b), &Value::Null);
    }

    #[test]
    fn typed_getter_mismatch_is_error() {
        let mut a = Struct::new(address()).unwrap();
        a.put("zip", 5).unwrap();
        assert_eq!(a.get_int32("zip").unwrap(), Some(5));
        assert!(a.get_string("zip").is_err());
        assert!(Struct::new(Schema::int32()).is_err());
    }
}
