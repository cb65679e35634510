//! Connect schema <-> Kafka's JSON schema form (`{"type":...,"optional":...}`).
//!
//! Rendering writes keys in Kafka's order: `type`, then `items` | `keys`,
//! `values` | `fields`, then `optional`, `name`, `version`, `doc`,
//! `parameters`, `default`; a struct field entry is the field's schema with
//! `"field":"<name>"` last. Parsing follows Kafka's `asConnectSchema`.

use connect_api::{ConnectError, Result, Schema, SchemaBuilder, Type};
use serde_json::Value as Json;

use super::javafmt::{write_int, write_str};
use super::payload::write_value;
use super::read::read_payload;
use super::Settings;

fn type_name(ty: Type) -> &'static str {
    match ty {
        Type::Boolean => "boolean",
        Type::Int8 => "int8",
        Type::Int16 => "int16",
        Type::Int32 => "int32",
        Type::Int64 => "int64",
        Type::Float32 => "float",
        Type::Float64 => "double",
        Type::Bytes => "bytes",
        Type::String => "string",
        Type::Array => "array",
        Type::Map => "map",
        Type::Struct => "struct",
    }
}

/// Write `schema` as Kafka's JSON schema; `field` names a struct field entry.
pub(crate) fn render_schema(
    out: &mut Vec<u8>,
    schema: &Schema,
    field: Option<&str>,
    settings: &Settings,
) -> Result<()> {
    out.extend_from_slice(b"{\"type\":\"");
    out.extend_from_slice(type_name(schema.ty()).as_bytes());
    out.push(b'"');
    match schema.ty() {
        Type::Array => {
            let items = schema
                .value_schema()
                .ok_or_else(|| ConnectError::data("array schema has no value schema"))?;
            out.extend_from_slice(b",\"items\":");
            render_schema(out, items, None, settings)?;
        }
        Type::Map => {
            let (k, v) = schema
                .key_schema()
                .zip(schema.value_schema())
                .ok_or_else(|| ConnectError::data("map schema has no key or value schema"))?;
            out.extend_from_slice(b",\"keys\":");
            render_schema(out, k, None, settings)?;
            out.extend_from_slice(b",\"values\":");
            render_schema(out, v, None, settings)?;
        }
        Type::Struct => {
            out.extend_from_slice(b",\"fields\":[");
            for (i, f) in schema.field_list().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                render_schema(out, f.schema(), Some(f.name()), settings)
                    .map_err(|e| e.in_field(f.name()))?;
            }
            out.push(b']');
        }
        _ => {}
    }
    out.extend_from_slice(if schema.is_optional() {
        b",\"optional\":true"
    } else {
        b",\"optional\":false"
    });
    if let Some(name) = schema.name() {
        out.extend_from_slice(b",\"name\":");
        write_str(out, name);
    }
    if let Some(version) = schema.version() {
        out.extend_from_slice(b",\"version\":");
        write_int(out, i64::from(version));
    }
    if let Some(doc) = schema.doc() {
        out.extend_from_slice(b",\"doc\":");
        write_str(out, doc);
    }
    if let Some(params) = schema.parameters() {
        out.extend_from_slice(b",\"parameters\":{");
        for (i, (k, v)) in params.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            write_str(out, k);
            out.push(b':');
            write_str(out, v);
        }
        out.push(b'}');
    }
    if let Some(default) = schema.default_value().filter(|d| !d.is_null()) {
        out.extend_from_slice(b",\"default\":");
        write_value(out, Some(schema), default, settings)
            .map_err(|e| e.context("cannot write the schema's default value"))?;
    }
    if let Some(name) = field {
        out.extend_from_slice(b",\"field\":");
        write_str(out, name);
    }
    out.push(b'}');
    Ok(())
}

/// Build a Connect schema from Kafka's JSON schema form (`null` -> `None`).
pub(crate) fn parse_schema(json: &Json, settings: &Settings) -> Result<Option<Schema>> {
    if json.is_null() {
        return Ok(None);
    }
    let ty = match json.get("type") {
        Some(Json::String(t)) => t.as_str(),
        _ => return Err(ConnectError::data("Schema must contain 'type' field")),
    };
    let required = |node: Option<&Json>, what: &str| -> Result<Schema> {
        match node {
            Some(n) => parse_schema(n, settings)?,
            None => None,
        }
        .ok_or_else(|| ConnectError::data(what.to_string()))
    };
    let mut builder = match ty {
        "boolean" => SchemaBuilder::boolean(),
        "int8" => SchemaBuilder::int8(),
        "int16" => SchemaBuilder::int16(),
        "int32" => SchemaBuilder::int32(),
        "int64" => SchemaBuilder::int64(),
        "float" => SchemaBuilder::float32(),
        "double" => SchemaBuilder::float64(),
        "bytes" => SchemaBuilder::bytes(),
        "string" => SchemaBuilder::string(),
        "array" => SchemaBuilder::array(required(
            json.get("items"),
            "Array schema did not specify the element type",
        )?),
        "map" => SchemaBuilder::map(
            required(json.get("keys"), "Map schema did not specify the key type")?,
            required(
                json.get("values"),
                "Map schema did not specify the value type",
            )?,
        ),
        "struct" => {
            let Some(Json::Array(fields)) = json.get("fields") else {
                return Err(ConnectError::data(
                    "Struct schema's \"fields\" argument is not an array.",
                ));
            };
            let mut b = SchemaBuilder::struct_();
            for f in fields {
                let Some(Json::String(name)) = f.get("field") else {
                    return Err(ConnectError::data(
                        "Struct schema's field name not specified properly",
                    ));
                };
                let fs = required(Some(f), "Struct field schema must not be null")
                    .map_err(|e| e.in_field(name))?;
                b = b.field(name.as_str(), fs);
            }
            b
        }
        other => return Err(ConnectError::data(format!("Unknown schema type: {other}"))),
    };
    builder = if json.get("optional") == Some(&Json::Bool(true)) {
        builder.optional()
    } else {
        builder.required()
    };
    if let Some(Json::String(name)) = json.get("name") {
        builder = builder.name(name.as_str());
    }
    if let Some(v) = json.get("version").filter(|v| v.is_i64() || v.is_u64()) {
        let version = v
            .as_i64()
            .and_then(|v| i32::try_from(v).ok())
            .ok_or_else(|| {
                ConnectError::data(format!("Schema version {v} is not a 32-bit integer"))
            })?;
        builder = builder.version(version);
    }
    if let Some(Json::String(doc)) = json.get("doc") {
        builder = builder.doc(doc.as_str());
    }
    if let Some(Json::Object(params)) = json.get("parameters") {
        for (k, v) in params {
            let Json::String(v) = v else {
                return Err(ConnectError::data(
                    "Schema parameters must have string values.",
                ));
            };
            builder = builder.parameter(k.as_str(), v.as_str());
        }
    }
    if let Some(default) = json.get("default") {
        // The default is read against the schema built so far, as Kafka
        // reads it against its builder.
        let bare = builder.clone().build().map_err(to_data)?;
        let text = serde_json::to_vec(default).map_err(|e| ConnectError::data(e.to_string()))?;
        let value = read_payload(&text, Some(&bare), settings)
            .map_err(|e| e.context("invalid default value in schema"))?;
        if !value.is_null() {
            builder = builder.default_value(value);
        }
    }
    builder.build().map(Some).map_err(to_data)
}

fn to_data(e: ConnectError) -> ConnectError {
    ConnectError::data(e.message().to_string()).with_source(e)
}
