//! Schemas: the type of a Kafka Connect value.
//!
//! A [`Schema`] is immutable and cheap to clone (an `Arc` inside), so records,
//! structs and caches share one copy. Build one with [`SchemaBuilder`] or take a
//! predefined primitive schema such as [`Schema::string`].

use std::fmt;
use std::sync::{Arc, LazyLock};

use indexmap::IndexMap;

use crate::error::{ConnectError, Result};
use crate::value::Value;

/// The type of a schema, as Kafka Connect's `Schema.Type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Type {
    /// 8-bit signed integer.
    Int8,
    /// 16-bit signed integer.
    Int16,
    /// 32-bit signed integer.
    Int32,
    /// 64-bit signed integer.
    Int64,
    /// 32-bit IEEE 754 float.
    Float32,
    /// 64-bit IEEE 754 float.
    Float64,
    /// true / false.
    Boolean,
    /// UTF-8 string.
    String,
    /// Byte array.
    Bytes,
    /// Ordered list of values of one value schema.
    Array,
    /// Map from a key schema to a value schema.
    Map,
    /// Ordered, named fields.
    Struct,
}

impl Type {
    /// Kafka's upper-case name (`INT32`, `STRUCT`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Type::Int8 => "INT8",
            Type::Int16 => "INT16",
            Type::Int32 => "INT32",
            Type::Int64 => "INT64",
            Type::Float32 => "FLOAT32",
            Type::Float64 => "FLOAT64",
            Type::Boolean => "BOOLEAN",
            Type::String => "STRING",
            Type::Bytes => "BYTES",
            Type::Array => "ARRAY",
            Type::Map => "MAP",
            Type::Struct => "STRUCT",
        }
    }

    /// Whether this is a primitive (not ARRAY, MAP or STRUCT) type.
    pub fn is_primitive(self) -> bool {
        !matches!(self, Type::Array | Type::Map | Type::Struct)
    }

    /// Parse Kafka's name, case-insensitively (`int32`, `INT32`).
    pub fn from_name(name: &str) -> Option<Type> {
        const ALL: [Type; 12] = [
            Type::Int8,
            Type::Int16,
            Type::Int32,
            Type::Int64,
            Type::Float32,
            Type::Float64,
            Type::Boolean,
            Type::String,
            Type::Bytes,
            Type::Array,
            Type::Map,
            Type::Struct,
        ];
        ALL.into_iter()
            .find(|t| t.name().eq_ignore_ascii_case(name))
    }
}

impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One field of a STRUCT schema.
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    name: String,
    index: usize,
    schema: Schema,
}

impl Field {
    /// The field's name.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// Position of the field in its struct (insertion order).
    pub fn index(&self) -> usize {
        self.index
    }
    /// The field's schema.
    pub fn schema(&self) -> &Schema {
        &self.schema
    }
}

#[derive(Debug, PartialEq)]
struct Inner {
    ty: Type,
    optional: bool,
    default: Option<Value>,
    name: Option<String>,
    version: Option<i32>,
    doc: Option<String>,
    parameters: Option<IndexMap<String, String>>,
    fields: IndexMap<String, Field>,
    /// Whether a field has a default: lets per-record default filling
    /// skip the values of the (common) structs whose fields have none.
    field_defaults: bool,
    key: Option<Schema>,
    value: Option<Schema>,
}

/// An immutable Kafka Connect schema.
///
/// Two schemas are equal when every attribute is equal, as in Kafka.
///
/// ```
/// use connect_api::{Schema, SchemaBuilder, Type};
///
/// let address = SchemaBuilder::struct_()
///     .name("com.example.Address")
///     .field("street", Schema::string())
///     .field("zip", Schema::optional_int32())
///     .build()
///     .unwrap();
/// assert_eq!(address.ty(), Type::Struct);
/// assert_eq!(address.field("zip").unwrap().index(), 1);
/// assert!(address.field("zip").unwrap().schema().is_optional());
/// assert_eq!(address.clone(), address);
/// ```
#[derive(Clone)]
pub struct Schema(Arc<Inner>);

impl PartialEq for Schema {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || self.0 == other.0
    }
}

impl fmt::Debug for Schema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Schema");
        d.field("type", &self.0.ty);
        d.field("optional", &self.0.optional);
        if let Some(n) = &self.0.name {
            d.field("name", n);
        }
        if let Some(v) = &self.0.version {
            d.field("version", v);
        }
        if let Some(v) = &self.0.default {
            d.field("default", v);
        }
        if let Some(p) = &self.0.parameters {
            d.field("parameters", p);
        }
        if !self.0.fields.is_empty() {
            d.field("fields", &self.0.fields.values().collect::<Vec<_>>());
        }
        if let Some(k) = &self.0.key {
            d.field("key", k);
        }
        if let Some(v) = &self.0.value {
            d.field("value", v);
        }
        d.finish()
    }
}

impl fmt::Display for Schema {
    /// Kafka's short form: `Schema{STRING}` or `Schema{com.example.Foo:STRUCT}`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0.name {
            Some(n) => write!(f, "Schema{{{n}:{}}}", self.0.ty),
            None => write!(f, "Schema{{{}}}", self.0.ty),
        }
    }
}

macro_rules! predefined {
    ($($(#[$doc:meta])* $fn:ident, $static:ident, $ty:expr, $opt:expr;)*) => {
        $(
            static $static: LazyLock<Schema> = LazyLock::new(|| Schema::primitive($ty, $opt));
        )*
        impl Schema {
            $(
                $(#[$doc])*
                pub fn $fn() -> Schema {
                    $static.clone()
                }
            )*
        }
    };
}

predefined! {
    /// Required INT8.
    int8, INT8, Type::Int8, false;
    /// Required INT16.
    int16, INT16, Type::Int16, false;
    /// Required INT32.
    int32, INT32, Type::Int32, false;
    /// Required INT64.
    int64, INT64, Type::Int64, false;
    /// Required FLOAT32.
    float32, FLOAT32, Type::Float32, false;
    /// Required FLOAT64.
    float64, FLOAT64, Type::Float64, false;
    /// Required BOOLEAN.
    boolean, BOOLEAN, Type::Boolean, false;
    /// Required STRING.
    string, STRING, Type::String, false;
    /// Required BYTES.
    bytes, BYTES, Type::Bytes, false;
    /// Optional INT8.
    optional_int8, OPT_INT8, Type::Int8, true;
    /// Optional INT16.
    optional_int16, OPT_INT16, Type::Int16, true;
    /// Optional INT32.
    optional_int32, OPT_INT32, Type::Int32, true;
    /// Optional INT64.
    optional_int64, OPT_INT64, Type::Int64, true;
    /// Optional FLOAT32.
    optional_float32, OPT_FLOAT32, Type::Float32, true;
    /// Optional FLOAT64.
    optional_float64, OPT_FLOAT64, Type::Float64, true;
    /// Optional BOOLEAN.
    optional_boolean, OPT_BOOLEAN, Type::Boolean, true;
    /// Optional STRING.
    optional_string, OPT_STRING, Type::String, true;
    /// Optional BYTES.
    optional_bytes, OPT_BYTES, Type::Bytes, true;
}

impl Schema {
    fn primitive(ty: Type, optional: bool) -> Schema {
        Schema(Arc::new(Inner {
            ty,
            optional,
            default: None,
            name: None,
            version: None,
            doc: None,
            parameters: None,
            fields: IndexMap::new(),
            field_defaults: false,
            key: None,
            value: None,
        }))
    }

    /// The predefined schema of a primitive type (`None` for ARRAY, MAP, STRUCT).
    pub fn of_type(ty: Type, optional: bool) -> Option<Schema> {
        Some(match (ty, optional) {
            (Type::Int8, false) => Self::int8(),
            (Type::Int16, false) => Self::int16(),
            (Type::Int32, false) => Self::int32(),
            (Type::Int64, false) => Self::int64(),
            (Type::Float32, false) => Self::float32(),
            (Type::Float64, false) => Self::float64(),
            (Type::Boolean, false) => Self::boolean(),
            (Type::String, false) => Self::string(),
            (Type::Bytes, false) => Self::bytes(),
            (Type::Int8, true) => Self::optional_int8(),
            (Type::Int16, true) => Self::optional_int16(),
            (Type::Int32, true) => Self::optional_int32(),
            (Type::Int64, true) => Self::optional_int64(),
            (Type::Float32, true) => Self::optional_float32(),
            (Type::Float64, true) => Self::optional_float64(),
            (Type::Boolean, true) => Self::optional_boolean(),
            (Type::String, true) => Self::optional_string(),
            (Type::Bytes, true) => Self::optional_bytes(),
            _ => return None,
        })
    }

    /// The schema's type.
    pub fn ty(&self) -> Type {
        self.0.ty
    }
    /// Whether null is a valid value.
    pub fn is_optional(&self) -> bool {
        self.0.optional
    }
    /// The default value, if one was set.
    pub fn default_value(&self) -> Option<&Value> {
        self.0.default.as_ref()
    }
    /// Whether any field of this (struct) schema has a default value: what a
    /// null field can be read as (Kafka's `Struct.get`,
    /// `replace.null.with.default`). Known at build time, so checking it
    /// costs nothing per record.
    ///
    /// ```
    /// use connect_api::{Schema, SchemaBuilder};
    ///
    /// let plain = SchemaBuilder::struct_().field("a", Schema::int32()).build().unwrap();
    /// assert!(!plain.has_field_defaults());
    /// let age = SchemaBuilder::int32().optional().default_value(18).build().unwrap();
    /// let defaulted = SchemaBuilder::struct_().field("age", age).build().unwrap();
    /// assert!(defaulted.has_field_defaults());
    /// ```
    pub fn has_field_defaults(&self) -> bool {
        self.0.field_defaults
    }
    /// The schema's name (logical types use `org.apache.kafka.connect.data.*`).
    pub fn name(&self) -> Option<&str> {
        self.0.name.as_deref()
    }
    /// The schema's version.
    pub fn version(&self) -> Option<i32> {
        self.0.version
    }
    /// The schema's documentation.
    pub fn doc(&self) -> Option<&str> {
        self.0.doc.as_deref()
    }
    /// Schema parameters (`None` when none were set, as Kafka's null).
    pub fn parameters(&self) -> Option<&IndexMap<String, String>> {
        self.0.parameters.as_ref()
    }
    /// One parameter.
    pub fn parameter(&self, key: &str) -> Option<&str> {
        self.0
            .parameters
            .as_ref()
            .and_then(|p| p.get(key))
            .map(String::as_str)
    }
    /// The fields of a STRUCT schema in order; an error for other types.
    pub fn fields(&self) -> Result<impl ExactSizeIterator<Item = &Field> + '_> {
        if self.0.ty != Type::Struct {
            return Err(ConnectError::data(format!(
                "Cannot list fields on non-struct type {}",
                self.0.ty
            )));
        }
        Ok(self.0.fields.values())
    }
    /// The fields of the schema (empty unless STRUCT).
    pub fn field_list(&self) -> impl ExactSizeIterator<Item = &Field> + '_ {
        self.0.fields.values()
    }
    /// Number of fields (0 unless STRUCT).
    pub fn field_count(&self) -> usize {
        self.0.fields.len()
    }
    /// A field by name (STRUCT only; `None` otherwise or when absent).
    pub fn field(&self, name: &str) -> Option<&Field> {
        self.0.fields.get(name)
    }
    /// A field by position.
    pub fn field_at(&self, index: usize) -> Option<&Field> {
        self.0.fields.get_index(index).map(|(_, f)| f)
    }
    /// Key schema of a MAP.
    pub fn key_schema(&self) -> Option<&Schema> {
        self.0.key.as_ref()
    }
    /// Value schema of a MAP or element schema of an ARRAY.
    pub fn value_schema(&self) -> Option<&Schema> {
        self.0.value.as_ref()
    }

    /// Whether two handles point at the very same schema object (a cheap
    /// identity test used by caches before falling back to `==`).
    pub fn ptr_eq(&self, other: &Schema) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    /// A stable address usable as a cache key together with `ptr_eq`.
    pub fn addr(&self) -> usize {
        Arc::as_ptr(&self.0) as usize
    }

    /// Check `value` against this schema; the error names the field path.
    pub fn validate_value(&self, value: &Value) -> Result<()> {
        crate::value::validate(self, value)
    }

    /// A builder pre-filled with every attribute of this schema, to derive a
    /// changed copy (SetSchemaMetadata, Flatten...).
    pub fn to_builder(&self) -> SchemaBuilder {
        SchemaBuilder {
            ty: self.0.ty,
            optional: Some(self.0.optional),
            default: self.0.default.clone(),
            name: self.0.name.clone(),
            version: self.0.version,
            doc: self.0.doc.clone(),
            parameters: self.0.parameters.clone(),
            fields: self.0.fields.clone(),
            key: self.0.key.clone(),
            value: self.0.value.clone(),
            error: None,
            default_set: self.0.default.is_some(),
        }
    }
}

/// Builds a [`Schema`] under Kafka's rules.
///
/// Kafka throws as soon as a rule is broken; a builder here records the first
/// broken rule and returns it from [`build`](SchemaBuilder::build), so chains
/// stay readable and nothing panics.
///
/// ```
/// use connect_api::{SchemaBuilder, Schema, Value};
///
/// let s = SchemaBuilder::int32().optional().default_value(Value::Int32(7)).build().unwrap();
/// assert_eq!(s.default_value(), Some(&Value::Int32(7)));
///
/// // An attribute may be set only once.
/// assert!(SchemaBuilder::int32().name("a").name("b").build().is_err());
/// // Fields only on structs, unique and non-empty.
/// assert!(SchemaBuilder::int32().field("x", Schema::int32()).build().is_err());
/// assert!(SchemaBuilder::struct_().field("x", Schema::int32()).field("x", Schema::int8()).build().is_err());
/// // A default must match the schema.
/// assert!(SchemaBuilder::int32().default_value(Value::from("x")).build().is_err());
/// ```
#[derive(Debug, Clone)]
pub struct SchemaBuilder {
    ty: Type,
    optional: Option<bool>,
    default: Option<Value>,
    default_set: bool,
    name: Option<String>,
    version: Option<i32>,
    doc: Option<String>,
    parameters: Option<IndexMap<String, String>>,
    fields: IndexMap<String, Field>,
    key: Option<Schema>,
    value: Option<Schema>,
    error: Option<String>,
}

impl SchemaBuilder {
    /// A builder for `ty` (ARRAY and MAP need [`array`](Self::array) / [`map`](Self::map)).
    pub fn new(ty: Type) -> Self {
        SchemaBuilder {
            ty,
            optional: None,
            default: None,
            default_set: false,
            name: None,
            version: None,
            doc: None,
            parameters: None,
            fields: IndexMap::new(),
            key: None,
            value: None,
            error: None,
        }
    }
    /// INT8 builder.
    pub fn int8() -> Self {
        Self::new(Type::Int8)
    }
    /// INT16 builder.
    pub fn int16() -> Self {
        Self::new(Type::Int16)
    }
    /// INT32 builder.
    pub fn int32() -> Self {
        Self::new(Type::Int32)
    }
    /// INT64 builder.
    pub fn int64() -> Self {
        Self::new(Type::Int64)
    }
    /// FLOAT32 builder.
    pub fn float32() -> Self {
        Self::new(Type::Float32)
    }
    /// FLOAT64 builder.
    pub fn float64() -> Self {
        Self::new(Type::Float64)
    }
    /// BOOLEAN builder.
    pub fn boolean() -> Self {
        Self::new(Type::Boolean)
    }
    /// STRING builder.
    pub fn string() -> Self {
        Self::new(Type::String)
    }
    /// BYTES builder.
    pub fn bytes() -> Self {
        Self::new(Type::Bytes)
    }
    /// STRUCT builder; add fields with [`field`](Self::field).
    pub fn struct_() -> Self {
        Self::new(Type::Struct)
    }
    /// ARRAY of `value_schema`.
    pub fn array(value_schema: Schema) -> Self {
        let mut b = Self::new(Type::Array);
        b.value = Some(value_schema);
        b
    }
    /// MAP from `key_schema` to `value_schema`.
    pub fn map(key_schema: Schema, value_schema: Schema) -> Self {
        let mut b = Self::new(Type::Map);
        b.key = Some(key_schema);
        b.value = Some(value_schema);
        b
    }

    fn fail(&mut self, message: String) {
        if self.error.is_none() {
            self.error = Some(message);
        }
    }

    fn set_once(&mut self, slot_is_set: bool, attr: &str) -> bool {
        if slot_is_set {
            self.fail(format!(
                "Invalid SchemaBuilder call: {attr} has already been set."
            ));
            false
        } else {
            true
        }
    }

    /// Make null a valid value.
    pub fn optional(mut self) -> Self {
        if self.set_once(self.optional.is_some(), "optional") {
            self.optional = Some(true);
        }
        self
    }
    /// Make the schema required (the default).
    pub fn required(mut self) -> Self {
        if self.set_once(self.optional.is_some(), "optional") {
            self.optional = Some(false);
        }
        self
    }
    /// Set the default value; it is validated against the schema at `build`.
    pub fn default_value(mut self, value: impl Into<Value>) -> Self {
        if self.set_once(self.default_set, "default") {
            self.default_set = true;
            self.default = Some(value.into());
        }
        self
    }
    /// Set the name.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        if self.set_once(self.name.is_some(), "name") {
            self.name = Some(name.into());
        }
        self
    }
    /// Set the version.
    pub fn version(mut self, version: i32) -> Self {
        if self.set_once(self.version.is_some(), "version") {
            self.version = Some(version);
        }
        self
    }
    /// Set the documentation.
    pub fn doc(mut self, doc: impl Into<String>) -> Self {
        if self.set_once(self.doc.is_some(), "doc") {
            self.doc = Some(doc.into());
        }
        self
    }
    /// Add (or replace) one parameter.
    pub fn parameter(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.parameters
            .get_or_insert_with(IndexMap::new)
            .insert(key.into(), value.into());
        self
    }
    /// Add several parameters.
    pub fn parameters<K: Into<String>, V: Into<String>>(
        mut self,
        params: impl IntoIterator<Item = (K, V)>,
    ) -> Self {
        let map = self.parameters.get_or_insert_with(IndexMap::new);
        for (k, v) in params {
            map.insert(k.into(), v.into());
        }
        self
    }
    /// Add a field to a STRUCT; the index is the insertion order.
    pub fn field(mut self, name: impl Into<String>, schema: Schema) -> Self {
        let name = name.into();
        if self.ty != Type::Struct {
            self.fail(format!(
                "Cannot create fields on type {}; fields exist only on STRUCT",
                self.ty
            ));
        } else if name.is_empty() {
            self.fail("fieldName cannot be null or empty.".to_string());
        } else if self.fields.contains_key(&name) {
            self.fail(format!(
                "Cannot create field because of field name duplication {name}"
            ));
        } else {
            let index = self.fields.len();
            self.fields.insert(
                name.clone(),
                Field {
                    name,
                    index,
                    schema,
                },
            );
        }
        self
    }

    /// The type being built.
    pub fn ty(&self) -> Type {
        self.ty
    }

    /// Finish: check the default and return the immutable schema.
    pub fn build(self) -> Result<Schema> {
        if let Some(e) = self.error {
            return Err(ConnectError::schema_builder(e));
        }
        let schema = Schema(Arc::new(Inner {
            ty: self.ty,
            optional: self.optional.unwrap_or(false),
            default: None,
            name: self.name,
            version: self.version,
            doc: self.doc,
            parameters: self.parameters,
            field_defaults: self
                .fields
                .values()
                .any(|f| f.schema().default_value().is_some()),
            fields: self.fields,
            key: self.key,
            value: self.value,
        }));
        let Some(default) = self.default else {
            return Ok(schema);
        };
        if let Err(e) = schema.validate_value(&default) {
            return Err(ConnectError::schema_builder(format!(
                "Invalid default value: {e}"
            )));
        }
        // Rebuild with the validated default; the Arc has no other owner yet.
        let mut inner = Arc::try_unwrap(schema.0).map_err(|_| {
            ConnectError::schema_builder("internal: schema shared before build finished")
        })?;
        inner.default = Some(default);
        Ok(Schema(Arc::new(inner)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn predefined_are_shared_and_equal() {
        assert!(Schema::string().ptr_eq(&Schema::string()));
        assert_eq!(Schema::string(), SchemaBuilder::string().build().unwrap());
        assert_ne!(Schema::string(), Schema::optional_string());
    }

    #[test]
    fn every_attribute_once() {
        for b in [
            SchemaBuilder::int8().optional().optional(),
            SchemaBuilder::int8().optional().required(),
            SchemaBuilder::int8().version(1).version(2),
            SchemaBuilder::int8().doc("a").doc("b"),
            SchemaBuilder::int8()
                .default_value(Value::Int8(1))
                .default_value(Value::Int8(2)),
        ] {
            let e = b.build().unwrap_err();
            assert!(e.to_string().contains("has already been set"), "{e}");
        }
    }

    #[test]
    fn field_rules() {
        assert!(SchemaBuilder::struct_()
            .field("", Schema::int8())
            .build()
            .is_err());
        let s = SchemaBuilder::struct_()
            .field("a", Schema::int8())
            .field("b", Schema::string())
            .build()
            .unwrap();
        let names: Vec<_> = s.fields().unwrap().map(|f| f.name()).collect();
        assert_eq!(names, ["a", "b"]);
        assert!(Schema::int8().fields().is_err());
    }

    #[test]
    fn equality_covers_every_attribute() {
        let base = || SchemaBuilder::int32().name("n").version(1).doc("d");
        assert_eq!(base().build().unwrap(), base().build().unwrap());
        assert_ne!(
            base().build().unwrap(),
            base().parameter("k", "v").build().unwrap()
        );
        assert_ne!(
            base().build().unwrap(),
            base().default_value(Value::Int32(1)).build().unwrap()
        );
    }

    #[test]
    fn default_is_validated() {
        let e = SchemaBuilder::int32()
            .default_value(Value::Int64(1))
            .build()
            .unwrap_err();
        assert!(e.to_string().contains("Invalid default value"), "{e}");
        assert!(SchemaBuilder::string()
            .optional()
            .default_value(Value::Null)
            .build()
            .is_ok());
    }

    #[test]
    fn type_names_parse() {
        assert_eq!(Type::from_name("float64"), Some(Type::Float64));
        assert_eq!(Type::from_name("STRUCT"), Some(Type::Struct));
        assert_eq!(Type::from_name("nope"), None);
    }
}
