//! Connect schema <-> Avro schema JSON, as Confluent's `AvroData` maps them.
//!
//! - INT8 / INT16 are Avro `int` with `"connect.type":"int8"|"int16"`;
//! - optional schemas are a union with `"null"` (first, unless the schema
//!   has a non-null default, which Avro requires to match the first branch);
//! - STRUCT is a `record` named after the schema (unnamed ones are
//!   `io.confluent.connect.avro.ConnectDefault`, numbered when repeated);
//! - MAP with required STRING keys is an Avro `map`, any other MAP an array
//!   of `io.confluent.connect.avro.MapEntry` records (`key`, `value`);
//! - logical types carry Avro's `logicalType` (`decimal`, `date`,
//!   `time-millis`, `timestamp-millis`);
//! - with `connect.meta.data` on, `connect.name`, `connect.version`,
//!   `connect.doc`, `connect.parameters` and `connect.default` keep what Avro
//!   cannot express, so Connect -> Avro -> Connect gives back an equal schema.
//!
//! Avro schemas from other writers map too: `enum` to STRING (with
//! Confluent's `io.confluent.connect.avro.Enum*` parameters), `fixed` to
//! BYTES (`connect.fixed.size`); unions other than `[null, T]` are refused.

use std::collections::{HashMap, HashSet};

use base64::Engine as _;
use connect_api::logical::{self, LogicalType, DATE_NAME, DECIMAL_NAME, TIMESTAMP_NAME, TIME_NAME};
use connect_api::{ConnectError, Result, Schema, SchemaBuilder, Struct, Type, Value};
use serde_json::{json, Map, Value as Json};

/// Namespace of Confluent's synthetic records.
pub(crate) const NAMESPACE: &str = "io.confluent.connect.avro";
const DEFAULT_NAME: &str = "ConnectDefault";
const MAP_ENTRY: &str = "MapEntry";
const ENUM_PARAM: &str = "io.confluent.connect.avro.Enum";
const FIXED_SIZE_PARAM: &str = "connect.fixed.size";
const PRECISION_PARAM: &str = "connect.decimal.precision";

/// Connect -> Avro options.
#[derive(Debug, Clone, Copy)]
pub(crate) struct MappingOptions {
    /// Write the `connect.*` properties.
    pub(crate) connect_meta_data: bool,
}

/// Convert a Connect schema to Avro schema JSON.
pub(crate) fn to_avro(schema: &Schema, options: MappingOptions) -> Result<Json> {
    let mut ctx = ToAvro {
        options,
        defined: HashSet::new(),
        default_names: 0,
        map_entries: 0,
    };
    ctx.schema(schema)
}

struct ToAvro {
    options: MappingOptions,
    defined: HashSet<String>,
    default_names: usize,
    map_entries: usize,
}

fn split_name(full: &str) -> (Option<&str>, &str) {
    match full.rfind('.') {
        Some(i) => (Some(&full[..i]), &full[i + 1..]),
        None => (None, full),
    }
}

impl ToAvro {
    fn schema(&mut self, schema: &Schema) -> Result<Json> {
        let base = self.base(schema)?;
        if !schema.is_optional() {
            return Ok(base);
        }
        // Avro checks a field default against the union's first branch.
        Ok(match schema.default_value() {
            Some(d) if !d.is_null() => json!([base, "null"]),
            _ => json!(["null", base]),
        })
    }

    fn unique(&mut self, base: &str, counter_is_entries: bool) -> String {
        let n = if counter_is_entries {
            &mut self.map_entries
        } else {
            &mut self.default_names
        };
        *n += 1;
        if *n == 1 {
            base.to_string()
        } else {
            format!("{base}{n}")
        }
    }

    fn base(&mut self, schema: &Schema) -> Result<Json> {
        let mut obj = Map::new();
        let logical = LogicalType::of(schema);
        match schema.ty() {
            Type::Int8 | Type::Int16 | Type::Int32 => {
                obj.insert("type".into(), "int".into());
                match schema.ty() {
                    Type::Int8 => obj.insert("connect.type".into(), "int8".into()),
                    Type::Int16 => obj.insert("connect.type".into(), "int16".into()),
                    _ => None,
                };
            }
            Type::Int64 => {
                obj.insert("type".into(), "long".into());
            }
            Type::Float32 => {
                obj.insert("type".into(), "float".into());
            }
            Type::Float64 => {
                obj.insert("type".into(), "double".into());
            }
            Type::Boolean => {
                obj.insert("type".into(), "boolean".into());
            }
            Type::String => match schema.parameter(ENUM_PARAM) {
                Some(enum_name) => {
                    let prefix = format!("{ENUM_PARAM}.");
                    let symbols: Vec<&str> = schema
                        .parameters()
                        .into_iter()
                        .flatten()
                        .filter(|(k, _)| k.starts_with(&prefix))
                        .map(|(_, v)| v.as_str())
                        .collect();
                    let (ns, name) = split_name(enum_name);
                    obj.insert("type".into(), "enum".into());
                    obj.insert("name".into(), name.into());
                    if let Some(ns) = ns {
                        obj.insert("namespace".into(), ns.into());
                    }
                    obj.insert("symbols".into(), json!(symbols));
                }
                None => {
                    obj.insert("type".into(), "string".into());
                }
            },
            Type::Bytes => {
                if let Some(size) = schema.parameter(FIXED_SIZE_PARAM) {
                    let size: u64 = size.parse().map_err(|_| {
                        ConnectError::data(format!("{FIXED_SIZE_PARAM} '{size}' is not a size"))
                    })?;
                    let name = schema.name().unwrap_or("fixed");
                    let (ns, name) = split_name(name);
                    obj.insert("type".into(), "fixed".into());
                    obj.insert("name".into(), name.into());
                    if let Some(ns) = ns {
                        obj.insert("namespace".into(), ns.into());
                    }
                    obj.insert("size".into(), size.into());
                } else {
                    obj.insert("type".into(), "bytes".into());
                }
                if logical == Some(LogicalType::Decimal) {
                    let scale = logical::decimal_scale(schema)?;
                    let precision: u64 = schema
                        .parameter(PRECISION_PARAM)
                        .and_then(|p| p.parse().ok())
                        .unwrap_or(64);
                    obj.insert("scale".into(), scale.into());
                    obj.insert("precision".into(), precision.into());
                }
            }
            Type::Array => {
                let items = schema
                    .value_schema()
                    .ok_or_else(|| ConnectError::data("array schema has no value schema"))?;
                obj.insert("type".into(), "array".into());
                obj.insert("items".into(), self.schema(items)?);
            }
            Type::Map => {
                let (k, v) = schema
                    .key_schema()
                    .zip(schema.value_schema())
                    .ok_or_else(|| ConnectError::data("map schema has no key or value schema"))?;
                if k.ty() == Type::String && !k.is_optional() && k.parameter(ENUM_PARAM).is_none() {
                    obj.insert("type".into(), "map".into());
                    obj.insert("values".into(), self.schema(v)?);
                } else {
                    let name = self.unique(MAP_ENTRY, true);
                    let key = self.schema(k)?;
                    let value = self.schema(v)?;
                    obj.insert("type".into(), "array".into());
                    obj.insert(
                        "items".into(),
                        json!({
                            "type": "record",
                            "name": name,
                            "namespace": NAMESPACE,
                            "fields": [
                                field_json("key", key, k)?,
                                field_json("value", value, v)?,
                            ],
                        }),
                    );
                }
            }
            Type::Struct => {
                let full = match schema.name() {
                    Some(n) => n.to_string(),
                    None => format!("{NAMESPACE}.{}", self.unique(DEFAULT_NAME, false)),
                };
                if self.defined.contains(&full) {
                    // Avro defines a name once; later uses refer to it.
                    return Ok(Json::String(full));
                }
                self.defined.insert(full.clone());
                let (ns, name) = split_name(&full);
                obj.insert("type".into(), "record".into());
                obj.insert("name".into(), name.into());
                if let Some(ns) = ns {
                    obj.insert("namespace".into(), ns.into());
                }
                if let Some(doc) = schema.doc() {
                    obj.insert("doc".into(), doc.into());
                }
                let mut fields = Vec::with_capacity(schema.field_count());
                for f in schema.field_list() {
                    let avro = self.schema(f.schema()).map_err(|e| e.in_field(f.name()))?;
                    fields.push(
                        field_json(f.name(), avro, f.schema()).map_err(|e| e.in_field(f.name()))?,
                    );
                }
                obj.insert("fields".into(), Json::Array(fields));
            }
        }
        match logical {
            Some(LogicalType::Decimal) => obj.insert("logicalType".into(), "decimal".into()),
            Some(LogicalType::Date) => obj.insert("logicalType".into(), "date".into()),
            Some(LogicalType::Time) => obj.insert("logicalType".into(), "time-millis".into()),
            Some(LogicalType::Timestamp) => {
                obj.insert("logicalType".into(), "timestamp-millis".into())
            }
            None => None,
        };
        if self.options.connect_meta_data {
            if let Some(doc) = schema.doc() {
                obj.insert("connect.doc".into(), doc.into());
            }
            if let Some(v) = schema.version() {
                obj.insert("connect.version".into(), v.into());
            }
            if let Some(params) = schema.parameters() {
                let p: Map<String, Json> = params
                    .iter()
                    .map(|(k, v)| (k.clone(), Json::String(v.clone())))
                    .collect();
                obj.insert("connect.parameters".into(), Json::Object(p));
            }
            if let Some(d) = schema.default_value().filter(|d| !d.is_null()) {
                obj.insert("connect.default".into(), default_to_json(schema, d)?);
            }
            if let Some(name) = schema.name() {
                obj.insert("connect.name".into(), name.into());
            }
        }
        if obj.len() == 1 {
            if let Some(Json::String(t)) = obj.get("type") {
                return Ok(Json::String(t.clone()));
            }
        }
        Ok(Json::Object(obj))
    }
}

fn field_json(name: &str, avro: Json, schema: &Schema) -> Result<Json> {
    let mut f = Map::new();
    f.insert("name".into(), name.into());
    f.insert("type".into(), avro);
    match schema.default_value().filter(|d| !d.is_null()) {
        Some(d) => {
            f.insert("default".into(), default_to_json(schema, d)?);
        }
        None if schema.is_optional() => {
            f.insert("default".into(), Json::Null);
        }
        None => {}
    }
    Ok(Json::Object(f))
}

/// Avro's JSON for a default value (bytes as ISO-8859-1 text).
pub(crate) fn default_to_json(schema: &Schema, value: &Value) -> Result<Json> {
    let latin1 = |b: &[u8]| Json::String(b.iter().map(|&c| char::from(c)).collect());
    Ok(match value {
        Value::Null => Json::Null,
        Value::Int8(v) => (*v).into(),
        Value::Int16(v) => (*v).into(),
        Value::Int32(v) | Value::Date(v) | Value::Time(v) => (*v).into(),
        Value::Int64(v) | Value::Timestamp(v) => (*v).into(),
        Value::Float32(v) => serde_json::Number::from_f64(f64::from(*v))
            .map(Json::Number)
            .ok_or_else(non_finite)?,
        Value::Float64(v) => serde_json::Number::from_f64(*v)
            .map(Json::Number)
            .ok_or_else(non_finite)?,
        Value::Boolean(v) => (*v).into(),
        Value::String(s) => s.as_str().into(),
        Value::Bytes(b) => latin1(b),
        Value::Decimal(d) => latin1(&logical::decimal_from_logical(schema, d)?),
        Value::Array(items) => {
            let inner = schema
                .value_schema()
                .ok_or_else(|| ConnectError::data("array schema has no value schema"))?;
            Json::Array(
                items
                    .iter()
                    .map(|v| default_to_json(inner, v))
                    .collect::<Result<_>>()?,
            )
        }
        Value::Map(entries) => {
            let (k, v) = schema
                .key_schema()
                .zip(schema.value_schema())
                .ok_or_else(|| ConnectError::data("map schema has no key or value schema"))?;
            if k.ty() == Type::String && !k.is_optional() {
                let mut m = Map::new();
                for (key, val) in entries {
                    let key = key
                        .as_str()
                        .ok_or_else(|| ConnectError::data("map key is not a string"))?;
                    m.insert(key.to_string(), default_to_json(v, val)?);
                }
                Json::Object(m)
            } else {
                Json::Array(
                    entries
                        .iter()
                        .map(|(key, val)| Ok(json!({"key": default_to_json(k, key)?, "value": default_to_json(v, val)?})))
                        .collect::<Result<_>>()?,
                )
            }
        }
        Value::Struct(s) => {
            let mut m = Map::new();
            for f in s.schema().field_list() {
                m.insert(
                    f.name().to_string(),
                    default_to_json(f.schema(), s.value_or_default(f))?,
                );
            }
            Json::Object(m)
        }
    })
}

fn non_finite() -> ConnectError {
    ConnectError::data("a NaN or infinite default cannot be written in an Avro schema")
}

/// Avro -> Connect: named types seen so far, for references.
pub(crate) struct ToConnect {
    named: HashMap<String, Schema>,
}

/// Convert Avro schema JSON (as stored in the registry) to a Connect schema.
pub(crate) fn to_connect(avro: &Json) -> Result<Schema> {
    ToConnect {
        named: HashMap::new(),
    }
    .schema(avro, None, false, None)
}

fn full_name(obj: &Map<String, Json>, enclosing: Option<&str>) -> Option<String> {
    let name = obj.get("name")?.as_str()?;
    if name.contains('.') {
        return Some(name.to_string());
    }
    match obj.get("namespace").and_then(Json::as_str).or(enclosing) {
        Some(ns) if !ns.is_empty() => Some(format!("{ns}.{name}")),
        _ => Some(name.to_string()),
    }
}

impl ToConnect {
    fn schema(
        &mut self,
        avro: &Json,
        ns: Option<&str>,
        optional: bool,
        field_default: Option<&Json>,
    ) -> Result<Schema> {
        match avro {
            Json::Array(branches) => {
                let non_null: Vec<&Json> = branches
                    .iter()
                    .filter(|b| b.as_str() != Some("null"))
                    .collect();
                match (branches.len(), non_null.as_slice()) {
                    (2, [only]) => {
                        // A null field default means "no Connect default".
                        let d = field_default.filter(|d| !d.is_null());
                        self.schema(only, ns, true, d)
                    }
                    _ => Err(ConnectError::data(format!(
                        "Avro union {avro} is not supported: only [\"null\", T] unions map to Connect"
                    ))),
                }
            }
            Json::String(name) => match primitive(name) {
                Some(_) => self.object(
                    &json!({ "type": name })
                        .as_object()
                        .cloned()
                        .unwrap_or_default(),
                    ns,
                    optional,
                    field_default,
                ),
                None => {
                    let full = if name.contains('.') {
                        name.clone()
                    } else {
                        ns.map_or(name.clone(), |n| format!("{n}.{name}"))
                    };
                    let found = self
                        .named
                        .get(&full)
                        .or_else(|| self.named.get(name))
                        .cloned()
                        .ok_or_else(|| {
                            ConnectError::data(format!("Unknown Avro type name '{name}'"))
                        })?;
                    // A reference to a named type reuses its Connect schema,
                    // made optional when the reference sits in a union.
                    if optional && !found.is_optional() {
                        let b = found.to_builder();
                        return rebuild_optional(b);
                    }
                    Ok(found)
                }
            },
            Json::Object(obj) => self.object(obj, ns, optional, field_default),
            other => Err(ConnectError::data(format!("{other} is not an Avro schema"))),
        }
    }

    fn object(
        &mut self,
        obj: &Map<String, Json>,
        ns: Option<&str>,
        optional: bool,
        field_default: Option<&Json>,
    ) -> Result<Schema> {
        let ty = match obj.get("type") {
            Some(Json::String(t)) => t.as_str(),
            // {"type": {...}} nests a full schema.
            Some(nested @ (Json::Object(_) | Json::Array(_))) => {
                return self.schema(nested, ns, optional, field_default)
            }
            _ => return Err(ConnectError::data("Avro schema object has no \"type\"")),
        };
        let logical_type = obj.get("logicalType").and_then(Json::as_str);
        let connect_type = obj.get("connect.type").and_then(Json::as_str);
        let mut params: Vec<(String, String)> = Vec::new();
        let mut logical_name = None;
        let mut builder = match ty {
            "int" => match (logical_type, connect_type) {
                (Some("date"), _) => {
                    logical_name = Some(DATE_NAME);
                    SchemaBuilder::int32()
                }
                (Some("time-millis"), _) => {
                    logical_name = Some(TIME_NAME);
                    SchemaBuilder::int32()
                }
                (_, Some("int8")) => SchemaBuilder::int8(),
                (_, Some("int16")) => SchemaBuilder::int16(),
                _ => SchemaBuilder::int32(),
            },
            "long" => match logical_type {
                Some("timestamp-millis") => {
                    logical_name = Some(TIMESTAMP_NAME);
                    SchemaBuilder::int64()
                }
                _ => SchemaBuilder::int64(),
            },
            "float" => SchemaBuilder::float32(),
            "double" => SchemaBuilder::float64(),
            "boolean" => SchemaBuilder::boolean(),
            "string" => SchemaBuilder::string(),
            "bytes" | "fixed" => {
                if ty == "fixed" {
                    let size = obj
                        .get("size")
                        .and_then(Json::as_u64)
                        .ok_or_else(|| ConnectError::data("Avro fixed has no size"))?;
                    params.push((FIXED_SIZE_PARAM.into(), size.to_string()));
                }
                if logical_type == Some("decimal") {
                    logical_name = Some(DECIMAL_NAME);
                    let scale = obj.get("scale").and_then(Json::as_i64).unwrap_or(0);
                    params.push((logical::SCALE_FIELD.into(), scale.to_string()));
                    if let Some(p) = obj.get("precision").and_then(Json::as_u64) {
                        params.push((PRECISION_PARAM.into(), p.to_string()));
                    }
                }
                SchemaBuilder::bytes()
            }
            "enum" => {
                let full = full_name(obj, ns)
                    .ok_or_else(|| ConnectError::data("Avro enum has no name"))?;
                params.push((ENUM_PARAM.into(), full));
                for s in obj
                    .get("symbols")
                    .and_then(Json::as_array)
                    .into_iter()
                    .flatten()
                {
                    let s = s
                        .as_str()
                        .ok_or_else(|| ConnectError::data("Avro enum symbol is not a string"))?;
                    params.push((format!("{ENUM_PARAM}.{s}"), s.to_string()));
                }
                SchemaBuilder::string()
            }
            "array" => {
                let items = obj
                    .get("items")
                    .ok_or_else(|| ConnectError::data("Avro array has no \"items\""))?;
                match self.map_entry(items, ns)? {
                    Some((k, v)) => SchemaBuilder::map(k, v),
                    None => SchemaBuilder::array(self.schema(items, ns, false, None)?),
                }
            }
            "map" => {
                let values = obj
                    .get("values")
                    .ok_or_else(|| ConnectError::data("Avro map has no \"values\""))?;
                SchemaBuilder::map(Schema::string(), self.schema(values, ns, false, None)?)
            }
            "record" => {
                let full = full_name(obj, ns)
                    .ok_or_else(|| ConnectError::data("Avro record has no name"))?;
                let inner_ns = split_name(&full).0.map(str::to_string);
                let mut b = SchemaBuilder::struct_();
                let is_default_name = full.starts_with(&format!("{NAMESPACE}.{DEFAULT_NAME}"));
                if !is_default_name && obj.get("connect.name").is_none() {
                    b = b.name(full.clone());
                }
                if let (Some(Json::String(doc)), None) = (obj.get("doc"), obj.get("connect.doc")) {
                    b = b.doc(doc.as_str());
                }
                for f in obj
                    .get("fields")
                    .and_then(Json::as_array)
                    .ok_or_else(|| ConnectError::data("Avro record has no \"fields\""))?
                {
                    let name = f
                        .get("name")
                        .and_then(Json::as_str)
                        .ok_or_else(|| ConnectError::data("Avro record field has no name"))?;
                    let ft = f.get("type").ok_or_else(|| {
                        ConnectError::data("Avro record field has no type").in_field(name)
                    })?;
                    let fs = self
                        .schema(ft, inner_ns.as_deref(), false, f.get("default"))
                        .map_err(|e| e.in_field(name))?;
                    b = b.field(name, fs);
                }
                b
            }
            other => {
                return Err(ConnectError::data(format!(
                    "Avro type '{other}' has no Connect equivalent"
                )));
            }
        };
        if optional {
            builder = builder.optional();
        }
        let name = obj
            .get("connect.name")
            .and_then(Json::as_str)
            .or(logical_name);
        if let Some(n) = name {
            builder = builder.name(n);
        }
        match obj.get("connect.version").and_then(Json::as_i64) {
            Some(v) => {
                builder =
                    builder.version(i32::try_from(v).map_err(|_| {
                        ConnectError::data("connect.version is not a 32-bit integer")
                    })?)
            }
            None if logical_name.is_some() => builder = builder.version(1),
            None => {}
        }
        if let Some(Json::String(doc)) = obj.get("connect.doc") {
            builder = builder.doc(doc.as_str());
        }
        // connect.parameters holds the Connect schema's own parameters;
        // without it (another writer), derive them from the Avro schema.
        if let Some(Json::Object(p)) = obj.get("connect.parameters") {
            for (k, v) in p {
                let v = v.as_str().ok_or_else(|| {
                    ConnectError::data("connect.parameters values must be strings")
                })?;
                builder = builder.parameter(k.as_str(), v);
            }
        } else if !params.is_empty() {
            builder = builder.parameters(params);
        }
        let default = obj
            .get("connect.default")
            .or(field_default)
            .filter(|d| !d.is_null());
        if let Some(d) = default {
            let bare = builder.clone().build().map_err(to_data)?;
            let v = default_from_json(&bare, d).map_err(|e| e.context("invalid Avro default"))?;
            builder = builder.default_value(v);
        }
        let schema = builder.build().map_err(to_data)?;
        if ty == "record" {
            if let Some(full) = full_name(obj, ns) {
                self.named.insert(full, schema.clone());
            }
        }
        Ok(schema)
    }

    /// `[{"type":"record","name":"MapEntry",...}]` items: a Connect MAP.
    fn map_entry(&mut self, items: &Json, ns: Option<&str>) -> Result<Option<(Schema, Schema)>> {
        let Some(obj) = items.as_object() else {
            return Ok(None);
        };
        let is_entry = obj.get("type").and_then(Json::as_str) == Some("record")
            && (obj.get("connect.internal.type").and_then(Json::as_str) == Some(MAP_ENTRY)
                || full_name(obj, ns)
                    .is_some_and(|n| n.starts_with(&format!("{NAMESPACE}.{MAP_ENTRY}"))));
        if !is_entry {
            return Ok(None);
        }
        let fields = obj
            .get("fields")
            .and_then(Json::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        let find = |n: &str| {
            fields
                .iter()
                .find(|f| f.get("name").and_then(Json::as_str) == Some(n))
        };
        let (Some(k), Some(v)) = (find("key"), find("value")) else {
            return Ok(None);
        };
        let ks = self.schema(
            k.get("type").unwrap_or(&Json::Null),
            Some(NAMESPACE),
            false,
            k.get("default"),
        )?;
        let vs = self.schema(
            v.get("type").unwrap_or(&Json::Null),
            Some(NAMESPACE),
            false,
            v.get("default"),
        )?;
        Ok(Some((ks, vs)))
    }
}

fn rebuild_optional(b: SchemaBuilder) -> Result<Schema> {
    // to_builder() has "optional" set; rebuild by hand from its schema.
    let s = b.build().map_err(to_data)?;
    let mut nb = match s.ty() {
        Type::Array => SchemaBuilder::array(
            s.value_schema()
                .cloned()
                .unwrap_or_else(Schema::optional_string),
        ),
        Type::Map => SchemaBuilder::map(
            s.key_schema().cloned().unwrap_or_else(Schema::string),
            s.value_schema()
                .cloned()
                .unwrap_or_else(Schema::optional_string),
        ),
        t => SchemaBuilder::new(t),
    }
    .optional();
    if let Some(n) = s.name() {
        nb = nb.name(n);
    }
    if let Some(v) = s.version() {
        nb = nb.version(v);
    }
    if let Some(d) = s.doc() {
        nb = nb.doc(d);
    }
    if let Some(p) = s.parameters() {
        nb = nb.parameters(p.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
    for f in s.field_list() {
        nb = nb.field(f.name(), f.schema().clone());
    }
    nb.build().map_err(to_data)
}

fn primitive(name: &str) -> Option<()> {
    matches!(
        name,
        "null" | "boolean" | "int" | "long" | "float" | "double" | "bytes" | "string"
    )
    .then_some(())
}

fn to_data(e: ConnectError) -> ConnectError {
    ConnectError::data(e.message().to_string()).with_source(e)
}

/// A Connect value from Avro default JSON for `schema`.
pub(crate) fn default_from_json(schema: &Schema, json: &Json) -> Result<Value> {
    let bad = || ConnectError::data(format!("default {json} does not fit {schema}"));
    if json.is_null() {
        return Ok(Value::Null);
    }
    let latin1 = |s: &str| -> Result<Vec<u8>> {
        s.chars()
            .map(|c| u8::try_from(u32::from(c)).map_err(|_| bad()))
            .collect()
    };
    let v = match schema.ty() {
        Type::Int8 => Value::Int8(
            json.as_i64()
                .and_then(|v| i8::try_from(v).ok())
                .ok_or_else(bad)?,
        ),
        Type::Int16 => Value::Int16(
            json.as_i64()
                .and_then(|v| i16::try_from(v).ok())
                .ok_or_else(bad)?,
        ),
        Type::Int32 => Value::Int32(
            json.as_i64()
                .and_then(|v| i32::try_from(v).ok())
                .ok_or_else(bad)?,
        ),
        Type::Int64 => Value::Int64(json.as_i64().ok_or_else(bad)?),
        Type::Float32 => Value::Float32(json.as_f64().ok_or_else(bad)? as f32),
        Type::Float64 => Value::Float64(json.as_f64().ok_or_else(bad)?),
        Type::Boolean => Value::Boolean(json.as_bool().ok_or_else(bad)?),
        Type::String => Value::String(json.as_str().ok_or_else(bad)?.to_string()),
        Type::Bytes => {
            let s = json.as_str().ok_or_else(bad)?;
            // Confluent writes latin-1 text; some tools write base64.
            let bytes = latin1(s).or_else(|_| {
                base64::engine::general_purpose::STANDARD
                    .decode(s)
                    .map_err(|_| bad())
            })?;
            Value::Bytes(bytes.into())
        }
        Type::Array => {
            let inner = schema.value_schema().ok_or_else(bad)?;
            Value::Array(
                json.as_array()
                    .ok_or_else(bad)?
                    .iter()
                    .map(|v| default_from_json(inner, v))
                    .collect::<Result<_>>()?,
            )
        }
        Type::Map => {
            let (k, v) = schema
                .key_schema()
                .zip(schema.value_schema())
                .ok_or_else(bad)?;
            match json {
                Json::Object(m) => Value::Map(
                    m.iter()
                        .map(|(key, val)| {
                            Ok((Value::String(key.clone()), default_from_json(v, val)?))
                        })
                        .collect::<Result<_>>()?,
                ),
                Json::Array(items) => Value::Map(
                    items
                        .iter()
                        .map(|e| {
                            Ok((
                                default_from_json(k, e.get("key").ok_or_else(bad)?)?,
                                default_from_json(v, e.get("value").ok_or_else(bad)?)?,
                            ))
                        })
                        .collect::<Result<_>>()?,
                ),
                _ => return Err(bad()),
            }
        }
        Type::Struct => {
            let obj = json.as_object().ok_or_else(bad)?;
            let mut s = Struct::new(schema.clone())?;
            for f in schema.field_list() {
                let v = match obj.get(f.name()) {
                    Some(j) => default_from_json(f.schema(), j)?,
                    None => Value::Null,
                };
                s.put_at(f.index(), v)?;
            }
            Value::Struct(s)
        }
    };
    logical::from_primitive(schema, v)
}
