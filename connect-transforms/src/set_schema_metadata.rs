//! `SetSchemaMetadata$Key` / `$Value`: sets the name and/or version of the
//! key or value schema, rebinding a Struct value to the renamed schema.

use connect_api::config::validators::Lambda;
use connect_api::config::{ConfigDef, ConfigKey, ConfigMap, ConfigType, ConfigValue, Importance};
use connect_api::logical::{self, LogicalType};
use connect_api::transform::{Configurable, Transformation, Verdict};
use connect_api::{
    ConnectError, ConnectRecord, Result, Schema, SchemaBuilder, Struct, Type, Value,
};

use crate::util::{require_schema, SchemaCache, Side};

/// Kafka's class name (add `$Key` or `$Value`).
pub const CLASS: &str = "org.apache.kafka.connect.transforms.SetSchemaMetadata";

const SCHEMA_NAME: &str = "schema.name";
const SCHEMA_VERSION: &str = "schema.version";
const REPLACE_NULL_WITH_DEFAULT: &str = "replace.null.with.default";

#[derive(Debug, Clone)]
struct Config {
    name: Option<String>,
    version: Option<i32>,
    replace_null_with_default: bool,
}

/// Kafka's `SetSchemaMetadata`.
///
/// ```
/// use connect_api::config::ConfigMap;
/// use connect_api::transform::{Configurable, Transformation};
/// use connect_api::{Record, Schema, SinkRecord, Value};
/// use connect_transforms::set_schema_metadata::SetSchemaMetadata;
/// use connect_transforms::util::Side;
///
/// let mut smt = SetSchemaMetadata::new(Side::Value);
/// let cfg: ConfigMap = [("schema.name".to_string(), "com.example.Name".to_string())].into();
/// smt.configure(&cfg).unwrap();
/// let rec = SinkRecord::new(Record::new("t", Some(Schema::string()), Value::from("x")), 0, 0);
/// let out = smt.apply(rec).unwrap().unwrap();
/// assert_eq!(out.record.value_schema.unwrap().name(), Some("com.example.Name"));
/// ```
#[derive(Debug)]
pub struct SetSchemaMetadata {
    side: Side,
    config: Option<Config>,
    cache: SchemaCache,
}

impl SetSchemaMetadata {
    /// An unconfigured SetSchemaMetadata for the key or the value.
    pub fn new(side: Side) -> Self {
        SetSchemaMetadata {
            side,
            config: None,
            cache: SchemaCache::default(),
        }
    }
}

/// The keys SetSchemaMetadata accepts.
pub fn config_def() -> ConfigDef {
    ConfigDef::new()
        .define(
            ConfigKey::new(SCHEMA_NAME, ConfigType::String)
                .optional()
                .importance(Importance::High)
                .doc("Schema name to set."),
        )
        .define(
            ConfigKey::new(SCHEMA_VERSION, ConfigType::Int)
                .optional()
                .importance(Importance::High)
                .validator(Lambda::new("[1,...]", |_: &str, v: &ConfigValue| match v {
                    ConfigValue::Int(i) if *i < 1 => Err("Value must be at least 1".to_string()),
                    _ => Ok(()),
                }))
                .doc("Schema version to set."),
        )
        .define(
            ConfigKey::new(REPLACE_NULL_WITH_DEFAULT, ConfigType::Boolean)
                .default(true)
                .importance(Importance::Medium)
                .doc("Whether to replace fields that have a default value and that are null to the default value. When set to true, the default value is used, otherwise null is used."),
        )
}

impl Config {
    /// A copy of `schema` with the configured name/version; everything else kept.
    fn rename(&self, schema: &Schema) -> Result<Schema> {
        let mut b = match schema.ty() {
            Type::Array => SchemaBuilder::array(
                schema
                    .value_schema()
                    .cloned()
                    .unwrap_or_else(Schema::optional_string),
            ),
            Type::Map => SchemaBuilder::map(
                schema
                    .key_schema()
                    .cloned()
                    .unwrap_or_else(Schema::optional_string),
                schema
                    .value_schema()
                    .cloned()
                    .unwrap_or_else(Schema::optional_string),
            ),
            ty => SchemaBuilder::new(ty),
        };
        if let Some(n) = self.name.as_deref().or(schema.name()) {
            b = b.name(n);
        }
        if let Some(v) = self.version.or(schema.version()) {
            b = b.version(v);
        }
        if let Some(d) = schema.doc() {
            b = b.doc(d);
        }
        if let Some(p) = schema.parameters() {
            b = b.parameters(p.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
        for f in schema.field_list() {
            b = b.field(f.name(), f.schema().clone());
        }
        if schema.is_optional() {
            b = b.optional();
        }
        let bare = b.clone().build()?;
        match schema.default_value() {
            None => Ok(bare),
            // A struct default is bound to the old schema: rebind it too.
            Some(Value::Struct(d)) => b.default_value(self.rebind(d.clone(), &bare)).build(),
            Some(d) => b
                .default_value(self.retype(schema, &bare, d.clone())?)
                .build(),
        }
    }

    /// A renamed logical schema (Timestamp, Date, Time, Decimal) is no longer
    /// logical: its values become their primitive encoding, so they still
    /// match the schema (Kafka leaves a mismatch for the converter to trip on).
    fn retype(&self, old: &Schema, new: &Schema, value: Value) -> Result<Value> {
        if LogicalType::of(old).is_some() && LogicalType::of(new).is_none() {
            logical::to_primitive(old, &value)
        } else {
            Ok(value)
        }
    }

    /// `value`'s fields on `schema` (same fields, new name/version).
    fn rebind(&self, value: Struct, schema: &Schema) -> Value {
        let (old, values) = value.into_parts();
        let mut out = match Struct::new(schema.clone()) {
            Ok(s) => s,
            Err(_) => return Value::Null,
        };
        for (i, (v, f)) in values.into_iter().zip(old.field_list()).enumerate() {
            let v = if v.is_null() && self.replace_null_with_default {
                f.schema().default_value().cloned().unwrap_or(Value::Null)
            } else {
                v
            };
            out.put_at_unchecked(i, v);
        }
        Value::Struct(out)
    }
}

impl Configurable for SetSchemaMetadata {
    fn configure(&mut self, config: &ConfigMap) -> Result<()> {
        let cfg = config_def().parse(config)?;
        let name = cfg.get_string(SCHEMA_NAME).map(str::to_string);
        let version = cfg.get_int(SCHEMA_VERSION);
        if name.is_none() && version.is_none() {
            return Err(ConnectError::config(
                SCHEMA_NAME,
                "Neither schema name nor version configured",
            ));
        }
        self.config = Some(Config {
            name,
            version,
            replace_null_with_default: cfg.get_bool(REPLACE_NULL_WITH_DEFAULT).unwrap_or(true),
        });
        self.cache = SchemaCache::default();
        Ok(())
    }

    fn config_def(&self) -> ConfigDef {
        config_def()
    }
}

impl<R: ConnectRecord> Transformation<R> for SetSchemaMetadata {
    fn transform(&mut self, record: &mut R) -> Result<Verdict> {
        let cfg = self
            .config
            .as_ref()
            .ok_or_else(|| ConnectError::other("SetSchemaMetadata is not configured"))?;
        if self.side.schema(&*record).is_none() && self.side.value(&*record).is_null() {
            return Ok(Verdict::Keep);
        }
        require_schema(self.side.schema(&*record), "updating schema metadata")?;
        let (schema, value) = self.side.take(record);
        let schema = schema.unwrap_or_else(Schema::optional_string);
        let updated = self
            .cache
            .get_or_try_insert(&schema, |s| cfg.rename(s))?
            .clone();
        let value = match value {
            Value::Struct(s) => cfg.rebind(s, &updated),
            other => cfg.retype(&schema, &updated, other)?,
        };
        self.side.set(record, Some(updated), value);
        Ok(Verdict::Keep)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use connect_api::{Record, SinkRecord};

    fn smt(side: Side, pairs: &[(&str, &str)]) -> Result<SetSchemaMetadata> {
        let mut t = SetSchemaMetadata::new(side);
        let cfg: ConfigMap = ConfigMap::from_pairs(pairs.iter().copied());
        t.configure(&cfg)?;
        Ok(t)
    }

    fn struct_schema() -> Schema {
        SchemaBuilder::struct_()
            .name("old.Name")
            .version(3)
            .doc("kept")
            .field("a", Schema::int32())
            .field(
                "b",
                SchemaBuilder::string()
                    .optional()
                    .default_value("dflt")
                    .build()
                    .unwrap(),
            )
            .build()
            .unwrap()
    }

    #[test]
    fn sets_name_and_version_and_rebinds_struct() {
        let mut t = smt(
            Side::Value,
            &[("schema.name", "new.Name"), ("schema.version", "7")],
        )
        .unwrap();
        let schema = struct_schema();
        let mut st = Struct::new(schema.clone()).unwrap();
        st.put("a", 1).unwrap();
        let rec = SinkRecord::new(
            Record::new("t", Some(schema.clone()), Value::Struct(st)),
            0,
            0,
        );
        let out = t.apply(rec).unwrap().unwrap();
        let s = out.record.value_schema.clone().unwrap();
        assert_eq!(
            (s.name(), s.version(), s.doc()),
            (Some("new.Name"), Some(7), Some("kept"))
        );
        let v = out.record.value.as_struct().unwrap();
        assert!(v.schema().ptr_eq(&s));
        assert_eq!(v.get("a").unwrap(), &Value::Int32(1));
        // replace.null.with.default=true writes the default in.
        assert_eq!(v.get_without_default("b").unwrap(), &Value::from("dflt"));
        v.validate().unwrap();
        // Same input schema: cached result.
        let rec = SinkRecord::new(Record::new("t", Some(schema), Value::Null), 0, 0);
        assert!(t
            .apply(rec)
            .unwrap()
            .unwrap()
            .record
            .value_schema
            .unwrap()
            .ptr_eq(&s));
    }

    #[test]
    fn only_version_keeps_name_and_key_side_works() {
        let mut t = smt(Side::Key, &[("schema.version", "2")]).unwrap();
        let rec = SinkRecord::new(
            Record::new("t", None, Value::Null).with_key(Some(struct_schema()), Value::Null),
            0,
            0,
        );
        let out = t.apply(rec).unwrap().unwrap();
        let ks = out.record.key_schema.unwrap();
        assert_eq!((ks.name(), ks.version()), (Some("old.Name"), Some(2)));
        let arr = SchemaBuilder::array(Schema::int8()).build().unwrap();
        let rec = SinkRecord::new(
            Record::new("t", None, Value::Null).with_key(Some(arr), Value::Array(vec![])),
            0,
            0,
        );
        let ks = t.apply(rec).unwrap().unwrap().record.key_schema.unwrap();
        assert_eq!(
            (ks.ty(), ks.version(), ks.value_schema()),
            (Type::Array, Some(2), Some(&Schema::int8()))
        );
    }

    #[test]
    fn schemaless_is_an_error_but_tombstone_passes() {
        let mut t = smt(Side::Value, &[("schema.name", "x")]).unwrap();
        let rec = SinkRecord::new(Record::new("t", None, Value::from("v")), 0, 0);
        let e = t.apply(rec).unwrap_err().to_string();
        assert!(
            e.contains("Schema required for [updating schema metadata]"),
            "{e}"
        );
        let rec = SinkRecord::new(Record::new("t", None, Value::Null), 0, 0);
        assert_eq!(t.apply(rec).unwrap().unwrap().record.value, Value::Null);
    }

    #[test]
    fn renaming_a_logical_schema_keeps_the_value_valid() {
        let mut t = smt(Side::Value, &[("schema.name", "my.Instant")]).unwrap();
        let ts = logical::timestamp_builder()
            .optional()
            .default_value(Value::Timestamp(5))
            .build()
            .unwrap();
        let rec = SinkRecord::new(Record::new("t", Some(ts), Value::Timestamp(42)), 0, 0);
        let out = Transformation::<SinkRecord>::apply(&mut t, rec)
            .unwrap()
            .unwrap();
        let schema = out.record.value_schema.clone().unwrap();
        assert_eq!(schema.name(), Some("my.Instant"));
        assert_eq!(out.record.value, Value::Int64(42));
        assert_eq!(schema.default_value(), Some(&Value::Int64(5)));
        schema.validate_value(&out.record.value).unwrap();
    }

    #[test]
    fn config_errors() {
        let e = smt(Side::Value, &[]).unwrap_err().to_string();
        assert!(
            e.contains("Neither schema name nor version configured"),
            "{e}"
        );
        let e = smt(Side::Value, &[("schema.version", "0")])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("schema.version") && e.contains("at least 1"),
            "{e}"
        );
        assert!(smt(Side::Value, &[("schema.version", "x")]).is_err());
    }
}
