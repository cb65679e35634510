//! `HeaderFrom$Key` / `$Value`: copies or moves fields of the key or value
//! into headers (`fields[i]` becomes header `headers[i]`).

use connect_api::config::validators::{ListSize, ValidString};
use connect_api::config::{ConfigDef, ConfigKey, ConfigMap, ConfigType, Importance};
use connect_api::transform::{Configurable, Transformation, Verdict};
use connect_api::{
    ConnectError, ConnectRecord, Header, Result, Schema, SchemaBuilder, Struct, Value,
};

use crate::util::{SchemaCache, Side};

/// Kafka's class name (add `$Key` or `$Value`).
pub const CLASS: &str = "org.apache.kafka.connect.transforms.HeaderFrom";

const FIELDS: &str = "fields";
const HEADERS: &str = "headers";
const OPERATION: &str = "operation";
const REPLACE_NULL_WITH_DEFAULT: &str = "replace.null.with.default";

#[derive(Debug, Clone)]
struct Config {
    fields: Vec<String>,
    headers: Vec<String>,
    is_move: bool,
    replace_null_with_default: bool,
}

/// Kafka's `HeaderFrom`.
///
/// ```
/// use connect_api::config::ConfigMap;
/// use connect_api::transform::{Configurable, Transformation};
/// use connect_api::{Record, SinkRecord, Value};
/// use connect_transforms::header_from::HeaderFrom;
/// use connect_transforms::util::Side;
///
/// let mut smt = HeaderFrom::new(Side::Value);
/// let cfg = ConfigMap::from([("fields", "id"), ("headers", "x-id"), ("operation", "move")]);
/// smt.configure(&cfg).unwrap();
/// let value = Value::string_map([("id", Value::Int64(7)), ("n", Value::from("a"))]);
/// let out = smt.apply(SinkRecord::new(Record::new("t", None, value), 0, 0)).unwrap().unwrap();
/// assert_eq!(out.record.headers.last_with_name("x-id").unwrap().value(), &Value::Int64(7));
/// assert_eq!(out.record.value.map_get("id"), None);
/// ```
#[derive(Debug)]
pub struct HeaderFrom {
    side: Side,
    config: Option<Config>,
    cache: SchemaCache,
}

impl HeaderFrom {
    /// An unconfigured HeaderFrom for the key or the value.
    pub fn new(side: Side) -> Self {
        HeaderFrom {
            side,
            config: None,
            cache: SchemaCache::default(),
        }
    }
}

/// The keys HeaderFrom accepts.
pub fn config_def() -> ConfigDef {
    let non_empty = || ListSize {
        min: 1,
        max: usize::MAX,
    };
    ConfigDef::new()
        .define(
            ConfigKey::new(FIELDS, ConfigType::List)
                .importance(Importance::High)
                .validator(non_empty())
                .doc("Field names in the record whose values are to be copied or moved to headers."),
        )
        .define(
            ConfigKey::new(HEADERS, ConfigType::List)
                .importance(Importance::High)
                .validator(non_empty())
                .doc("Header names, in the same order as the field names listed in the fields configuration property."),
        )
        .define(
            ConfigKey::new(OPERATION, ConfigType::String)
                .importance(Importance::High)
                .validator(ValidString::of(["move", "copy"]))
                .doc("Either <code>move</code> if the fields are to be moved to the headers (removed from the key/value), or <code>copy</code> if the fields are to be copied to the headers (retained in the key/value)."),
        )
        .define(
            ConfigKey::new(REPLACE_NULL_WITH_DEFAULT, ConfigType::Boolean)
                .default(true)
                .importance(Importance::Medium)
                .doc("Whether to replace fields that have a default value and that are null to the default value. When set to true, the default value is used, otherwise null is used."),
        )
}

const PURPOSE_MOVE: &str = "header move";
const PURPOSE_COPY: &str = "header copy";

impl Config {
    fn purpose(&self) -> &'static str {
        if self.is_move {
            PURPOSE_MOVE
        } else {
            PURPOSE_COPY
        }
    }

    /// The struct schema without the moved fields.
    fn moved_schema(&self, schema: &Schema) -> Result<Schema> {
        let mut b = SchemaBuilder::struct_();
        if let Some(n) = schema.name() {
            b = b.name(n);
        }
        if let Some(v) = schema.version() {
            b = b.version(v);
        }
        if let Some(d) = schema.doc() {
            b = b.doc(d);
        }
        if let Some(p) = schema.parameters() {
            b = b.parameters(p.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
        for f in schema.fields()? {
            if !self.fields.iter().any(|n| n == f.name()) {
                b = b.field(f.name(), f.schema().clone());
            }
        }
        if schema.is_optional() {
            b = b.optional();
        }
        b.build()
    }

    fn with_schema(
        &self,
        cache: &mut SchemaCache,
        schema: Schema,
        value: Value,
        out: &mut Vec<Header>,
    ) -> Result<(Schema, Value)> {
        let st = match value {
            Value::Struct(s) => s,
            other => {
                return Err(ConnectError::data(format!(
                    "Only Struct objects supported for [{}], found: {}",
                    self.purpose(),
                    other.type_name()
                )))
            }
        };
        for (field, header) in self.fields.iter().zip(&self.headers) {
            let f = schema.field(field).ok_or_else(|| {
                ConnectError::data_at(
                    field.as_str(),
                    format!("field not found in schema {schema}"),
                )
            })?;
            let v = if self.replace_null_with_default {
                st.value_or_default(f).clone()
            } else {
                st.get_at(f.index()).cloned().unwrap_or(Value::Null)
            };
            out.push(Header::new(header.as_str(), Some(f.schema().clone()), v));
        }
        if !self.is_move {
            return Ok((schema, Value::Struct(st)));
        }
        let updated = cache
            .get_or_try_insert(&schema, |s| self.moved_schema(s))?
            .clone();
        let mut moved = Struct::new(updated.clone())?;
        let (_, values) = st.into_parts();
        let mut j = 0;
        for (v, f) in values.into_iter().zip(schema.field_list()) {
            if self.fields.iter().any(|n| n == f.name()) {
                continue;
            }
            let v = if v.is_null() && self.replace_null_with_default {
                f.schema().default_value().cloned().unwrap_or(Value::Null)
            } else {
                v
            };
            moved.put_at_unchecked(j, v);
            j += 1;
        }
        Ok((updated, Value::Struct(moved)))
    }

    fn schemaless(&self, value: Value, out: &mut Vec<Header>) -> Result<Value> {
        let mut entries = match value {
            Value::Map(m) => m,
            other => {
                return Err(ConnectError::data(format!(
                    "Only Map objects supported in absence of schema for [{}], found: {}",
                    self.purpose(),
                    other.type_name()
                )))
            }
        };
        for (field, header) in self.fields.iter().zip(&self.headers) {
            let v = entries
                .iter()
                .find(|(k, _)| k.as_str() == Some(field.as_str()))
                .map(|(_, v)| v.clone())
                .unwrap_or(Value::Null);
            out.push(Header::new(header.as_str(), None, v));
        }
        if self.is_move {
            entries.retain(|(k, _)| {
                !k.as_str()
                    .is_some_and(|k| self.fields.iter().any(|f| f == k))
            });
        }
        Ok(Value::Map(entries))
    }
}

impl Configurable for HeaderFrom {
    fn configure(&mut self, config: &ConfigMap) -> Result<()> {
        let cfg = config_def().parse(config)?;
        let fields = cfg.get_list(FIELDS).unwrap_or_default().to_vec();
        let headers = cfg.get_list(HEADERS).unwrap_or_default().to_vec();
        if fields.len() != headers.len() {
            return Err(ConnectError::config(
                HEADERS,
                format!("'{FIELDS}' config must have the same number of elements as '{HEADERS}' config."),
            ));
        }
        self.config = Some(Config {
            fields,
            headers,
            is_move: cfg.get_string(OPERATION) == Some("move"),
            replace_null_with_default: cfg.get_bool(REPLACE_NULL_WITH_DEFAULT).unwrap_or(true),
        });
        self.cache = SchemaCache::default();
        Ok(())
    }

    fn config_def(&self) -> ConfigDef {
        config_def()
    }
}

impl<R: ConnectRecord> Transformation<R> for HeaderFrom {
    fn transform(&mut self, record: &mut R) -> Result<Verdict> {
        let cfg = self
            .config
            .as_ref()
            .ok_or_else(|| ConnectError::other("HeaderFrom is not configured"))?;
        let (schema, value) = self.side.take(record);
        let mut added = Vec::with_capacity(cfg.fields.len());
        let (schema, value) = match schema {
            Some(s) => {
                let (s, v) = cfg.with_schema(&mut self.cache, s, value, &mut added)?;
                (Some(s), v)
            }
            None => (None, cfg.schemaless(value, &mut added)?),
        };
        self.side.set(record, schema, value);
        let headers = &mut record.record_mut().headers;
        for h in added {
            headers.push(h);
        }
        Ok(Verdict::Keep)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use connect_api::{Record, SinkRecord};

    fn smt(side: Side, pairs: &[(&str, &str)]) -> Result<HeaderFrom> {
        let mut t = HeaderFrom::new(side);
        let cfg: ConfigMap = ConfigMap::from_pairs(pairs.iter().copied());
        t.configure(&cfg)?;
        Ok(t)
    }

    fn schema() -> Schema {
        SchemaBuilder::struct_()
            .name("S")
            .field("id", Schema::int32())
            .field("name", Schema::optional_string())
            .field(
                "tag",
                SchemaBuilder::string()
                    .optional()
                    .default_value("none")
                    .build()
                    .unwrap(),
            )
            .build()
            .unwrap()
    }

    fn value() -> Struct {
        let mut s = Struct::new(schema()).unwrap();
        s.put("id", 1).unwrap().put("name", "ada").unwrap();
        s
    }

    #[test]
    fn copy_with_schema_keeps_value_and_uses_field_schema() {
        let mut t = smt(
            Side::Value,
            &[
                ("fields", "id,tag"),
                ("headers", "h-id,h-tag"),
                ("operation", "copy"),
            ],
        )
        .unwrap();
        let mut headers = connect_api::Headers::new();
        headers.add_string("existing", "x");
        let rec = SinkRecord::new(
            Record::new("t", Some(schema()), Value::Struct(value())).with_headers(headers),
            0,
            0,
        );
        let out = t.apply(rec).unwrap().unwrap();
        let keys: Vec<_> = out.record.headers.iter().map(|h| h.key()).collect();
        assert_eq!(keys, ["existing", "h-id", "h-tag"]);
        let h = out.record.headers.last_with_name("h-id").unwrap();
        assert_eq!(
            (h.schema(), h.value()),
            (Some(&Schema::int32()), &Value::Int32(1))
        );
        // replace.null.with.default: the unset tag reads as its default.
        assert_eq!(
            out.record.headers.last_with_name("h-tag").unwrap().value(),
            &Value::from("none")
        );
        assert_eq!(out.record.value, Value::Struct(value()));
    }

    #[test]
    fn move_with_schema_drops_fields_from_struct() {
        let mut t = smt(
            Side::Key,
            &[("fields", "name"), ("headers", "n"), ("operation", "move")],
        )
        .unwrap();
        let rec = SinkRecord::new(
            Record::new("t", None, Value::Null).with_key(Some(schema()), Value::Struct(value())),
            0,
            0,
        );
        let out = t.apply(rec).unwrap().unwrap();
        let ks = out.record.key_schema.unwrap();
        assert_eq!(
            ks.field_list().map(|f| f.name()).collect::<Vec<_>>(),
            ["id", "tag"]
        );
        assert_eq!(ks.name(), Some("S"));
        let k = out.record.key.as_struct().unwrap();
        assert_eq!(k.get("id").unwrap(), &Value::Int32(1));
        k.validate().unwrap();
        assert_eq!(
            out.record.headers.last_with_name("n").unwrap().value(),
            &Value::from("ada")
        );
    }

    #[test]
    fn schemaless_copy_and_move() {
        let map = || Value::string_map([("a", Value::Int64(1)), ("b", Value::from("x"))]);
        let mut t = smt(
            Side::Value,
            &[
                ("fields", "a,missing"),
                ("headers", "ha,hm"),
                ("operation", "copy"),
            ],
        )
        .unwrap();
        let out = t
            .apply(SinkRecord::new(Record::new("t", None, map()), 0, 0))
            .unwrap()
            .unwrap();
        assert_eq!(out.record.value, map());
        let ha = out.record.headers.last_with_name("ha").unwrap();
        assert_eq!((ha.schema(), ha.value()), (None, &Value::Int64(1)));
        assert_eq!(
            out.record.headers.last_with_name("hm").unwrap().value(),
            &Value::Null
        );
        let mut t = smt(
            Side::Value,
            &[("fields", "a"), ("headers", "ha"), ("operation", "move")],
        )
        .unwrap();
        let out = t
            .apply(SinkRecord::new(Record::new("t", None, map()), 0, 0))
            .unwrap()
            .unwrap();
        assert_eq!(
            out.record.value,
            Value::string_map([("b", Value::from("x"))])
        );
    }

    #[test]
    fn null_operand_and_missing_field_are_data_errors() {
        let mut t = smt(
            Side::Value,
            &[("fields", "a"), ("headers", "h"), ("operation", "copy")],
        )
        .unwrap();
        let e = t
            .apply(SinkRecord::new(Record::new("t", None, Value::Null), 0, 0))
            .unwrap_err();
        assert!(e.to_string().contains("Only Map objects supported"), "{e}");
        let e = t
            .apply(SinkRecord::new(
                Record::new("t", Some(schema()), Value::Null),
                0,
                0,
            ))
            .unwrap_err();
        assert!(
            e.to_string()
                .contains("Only Struct objects supported for [header copy]"),
            "{e}"
        );
        let e = t
            .apply(SinkRecord::new(
                Record::new("t", Some(schema()), Value::Struct(value())),
                0,
                0,
            ))
            .unwrap_err();
        assert!(e.to_string().starts_with("a: field not found"), "{e}");
    }

    #[test]
    fn config_errors() {
        let e = smt(
            Side::Value,
            &[("fields", "a,b"), ("headers", "h"), ("operation", "copy")],
        )
        .unwrap_err();
        assert!(e.to_string().contains("same number of elements"), "{e}");
        let e = smt(
            Side::Value,
            &[("fields", "a"), ("headers", "h"), ("operation", "swap")],
        )
        .unwrap_err();
        assert!(e.to_string().contains("operation"), "{e}");
        let e = smt(
            Side::Value,
            &[("fields", ""), ("headers", ""), ("operation", "copy")],
        )
        .unwrap_err();
        assert!(e.to_string().contains("fields"), "{e}");
        assert!(smt(Side::Value, &[("headers", "h"), ("operation", "copy")]).is_err());
    }
}
