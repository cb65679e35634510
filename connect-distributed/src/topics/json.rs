//! JSON as Java's `JsonConverter` (Jackson) writes and reads it.
//!
//! Writing: compact, fields in schema order, strings escaped as Jackson's
//! `UTF8JsonGenerator` escapes them: `\"`, `\\`, the short escapes `\b`,
//! `\t`, `\n`, `\f`, `\r`, other control characters as `\u00XX` with
//! upper-case hex digits, characters beyond the Basic Multilingual Plane
//! as their UTF-16 surrogate pair (`\uD83D\uDE00`: Jackson 2.18+ does not
//! combine surrogates by default), everything else (including `/`, DEL,
//! U+2028) as raw UTF-8. `serde_json` differs on both counts, so strings go
//! through the JSON converter's writer.
//!
//! Reading: `JsonConverter.toConnectData` without schemas, where integral
//! numbers become `Long` and a JSON `null` becomes a null value. Jackson's
//! `readTree` stops after the first value and ignores what follows, and so
//! does [`parse`].

use connect_runtime::converters::json::write_jackson_string;
use serde_json::{Map, Value};

use super::RecordError;

/// A JSON object being written, field by field.
pub(super) struct Obj {
    out: Vec<u8>,
    first: bool,
}

impl Obj {
    /// `{`.
    pub(super) fn new() -> Obj {
        Obj {
            out: b"{".to_vec(),
            first: true,
        }
    }

    fn name(&mut self, name: &str) {
        if !self.first {
            self.out.push(b',');
        }
        self.first = false;
        write_jackson_string(&mut self.out, name);
        self.out.push(b':');
    }

    /// A string field.
    pub(super) fn str(mut self, name: &str, value: &str) -> Obj {
        self.name(name);
        write_jackson_string(&mut self.out, value);
        self
    }

    /// A nullable string field (`null` when absent, as a `Struct`'s
    /// optional field is written).
    pub(super) fn opt_str(mut self, name: &str, value: Option<&str>) -> Obj {
        self.name(name);
        match value {
            Some(v) => write_jackson_string(&mut self.out, v),
            None => self.out.extend_from_slice(b"null"),
        }
        self
    }

    /// An integer field.
    pub(super) fn int(mut self, name: &str, value: i64) -> Obj {
        self.name(name);
        self.out.extend_from_slice(value.to_string().as_bytes());
        self
    }

    /// A boolean field.
    pub(super) fn bool(mut self, name: &str, value: bool) -> Obj {
        self.name(name);
        self.out
            .extend_from_slice(if value { b"true" } else { b"false" });
        self
    }

    /// A field whose value is already JSON.
    pub(super) fn raw(mut self, name: &str, json: &str) -> Obj {
        self.name(name);
        self.out.extend_from_slice(json.as_bytes());
        self
    }

    /// `}`: the object's text.
    pub(super) fn finish(mut self) -> String {
        self.out.push(b'}');
        // Only whole `&str`s and ASCII went in: always UTF-8.
        String::from_utf8(self.out)
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
    }
}

/// Reads a value as `JsonConverter` does: `Ok(None)` for JSON `null`
/// (which Java treats like a tombstone), the object's fields otherwise.
pub(super) fn parse(key: &str, bytes: &[u8]) -> Result<Option<Map<String, Value>>, RecordError> {
    let mut values = serde_json::Deserializer::from_slice(bytes).into_iter::<Value>();
    match values.next() {
        None => Err(RecordError::InvalidJson {
            key: key.to_owned(),
            problem: "no JSON value".to_owned(),
        }),
        Some(Err(e)) => Err(RecordError::InvalidJson {
            key: key.to_owned(),
            problem: e.to_string(),
        }),
        Some(Ok(Value::Null)) => Ok(None),
        Some(Ok(Value::Object(map))) => Ok(Some(map)),
        Some(Ok(_)) => Err(RecordError::NotAnObject {
            key: key.to_owned(),
        }),
    }
}

fn field_error(key: &str, field: &'static str, problem: impl Into<String>) -> RecordError {
    RecordError::InvalidField {
        key: key.to_owned(),
        field,
        problem: problem.into(),
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A required string field.
pub(super) fn req_str(
    key: &str,
    map: &Map<String, Value>,
    field: &'static str,
) -> Result<String, RecordError> {
    match map.get(field) {
        Some(Value::String(s)) => Ok(s.clone()),
        None => Err(field_error(key, field, "is missing")),
        Some(v) => Err(field_error(
            key,
            field,
            format!("should be a string but is {}", type_name(v)),
        )),
    }
}

/// An optional string field: missing or `null` is `None`.
pub(super) fn opt_str(
    key: &str,
    map: &Map<String, Value>,
    field: &'static str,
) -> Result<Option<String>, RecordError> {
    match map.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(v) => Err(field_error(
            key,
            field,
            format!("should be a string but is {}", type_name(v)),
        )),
    }
}

/// A required integral field as Java's `Long`: integral JSON numbers
/// outside `i64` keep their low 64 bits, as `BigInteger.longValue()` does.
pub(super) fn req_long(
    key: &str,
    map: &Map<String, Value>,
    field: &'static str,
) -> Result<i64, RecordError> {
    match map.get(field) {
        Some(Value::Number(n)) => {
            if let Some(i) = n.as_i64() {
                Ok(i)
            } else if let Some(u) = n.as_u64() {
                Ok(u as i64)
            } else {
                Err(field_error(
                    key,
                    field,
                    format!("should be an integer but is {n}"),
                ))
            }
        }
        None => Err(field_error(key, field, "is missing")),
        Some(v) => Err(field_error(
            key,
            field,
            format!("should be an integer but is {}", type_name(v)),
        )),
    }
}

/// A required integral field as Java's `intValue()` of a `Long`: the low
/// 32 bits.
pub(super) fn req_int(
    key: &str,
    map: &Map<String, Value>,
    field: &'static str,
) -> Result<i32, RecordError> {
    req_long(key, map, field).map(|l| l as i32)
}

/// A boolean field, or `default` when it is missing or not a boolean
/// (Java's restart request rule).
pub(super) fn bool_or(map: &Map<String, Value>, field: &str, default: bool) -> bool {
    match map.get(field) {
        Some(Value::Bool(b)) => *b,
        _ => default,
    }
}

/// A required object field.
pub(super) fn req_obj<'a>(
    key: &str,
    map: &'a Map<String, Value>,
    field: &'static str,
) -> Result<&'a Map<String, Value>, RecordError> {
    match map.get(field) {
        Some(Value::Object(m)) => Ok(m),
        None => Err(field_error(key, field, "is missing")),
        Some(v) => Err(field_error(
            key,
            field,
            format!("should be an object but is {}", type_name(v)),
        )),
    }
}
