//! ExtractField: replace a struct (or map) with the value of one of its
//! fields, possibly nested.
//!
//! Kafka classes `org.apache.kafka.connect.transforms.ExtractField$Key` and
//! `org.apache.kafka.connect.transforms.ExtractField$Value`.
//!
//! | key | default | meaning |
//! |---|---|---|
//! | `field` | required | the field to extract |
//! | `field.syntax.version` | `V1` | `V1`: `field` is one field name; `V2` (KIP-821): a dotted path into nested structs/maps |
//! | `replace.null.with.default` | `true` | a null field is read as its schema default |
//!
//! V2 paths: `a.b.c` walks nested fields; a step holding dots is wrapped in
//! backticks (`` `a.b`.c ``); inside backticks, a backtick followed by a dot
//! is written `` \` `` (Kafka's exact rules, see [`field_path_steps`]).
//!
//! With a schema the output schema is the field's schema (looked up once per
//! input schema); a field the schema does not have is an error. Without a
//! schema a missing field gives null. A null operand stays null (with a
//! schema, the output schema is still the field's).

use connect_api::config::validators::ValidString;
use connect_api::config::{ConfigKey, ConfigType, Importance};
use connect_api::transform::{Configurable, Transformation, Verdict};
use connect_api::{ConfigDef, ConfigMap, ConnectError, ConnectRecord, Result, Schema, Value};

use crate::util::{
    into_map, into_struct, replace_null_with_default_key, take_field, REPLACE_NULL_WITH_DEFAULT,
};
use crate::util::{SchemaCache, Side};

/// Kafka's class name, without the `$Key` / `$Value` suffix.
pub const CLASS: &str = "org.apache.kafka.connect.transforms.ExtractField";

const PURPOSE: &str = "field extraction";
const NESTED: &str = "nested field access";
const FIELD: &str = "field";
/// The KIP-821 key choosing how field names are read.
pub const FIELD_SYNTAX_VERSION: &str = "field.syntax.version";

/// How a configured field name is read (KIP-821's `field.syntax.version`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FieldSyntaxVersion {
    /// The whole text is one field name (Kafka's default).
    #[default]
    V1,
    /// A dotted path into nested structs or maps, with backtick quoting.
    V2,
}

impl FieldSyntaxVersion {
    /// Parse `V1`/`V2`, ignoring case.
    pub fn from_name(name: &str) -> Option<Self> {
        if name.eq_ignore_ascii_case("V1") {
            Some(Self::V1)
        } else if name.eq_ignore_ascii_case("V2") {
            Some(Self::V2)
        } else {
            None
        }
    }

    /// The `field.syntax.version` config key, as Kafka defines it.
    pub fn config_key() -> ConfigKey {
        ConfigKey::new(FIELD_SYNTAX_VERSION, ConfigType::String)
            .default("V1")
            .importance(Importance::High)
            .validator(ValidString::case_insensitive(["V1", "V2"]))
            .doc(
                "Defines the version of the syntax to access fields. If set to `V1`, then the \
                 field paths are limited to access the elements at the root level of the struct \
                 or map. If set to `V2`, the syntax will support accessing nested elements. To \
                 access nested elements, dotted notation is used. If dots are already included \
                 in the field name, then backtick pairs can be used to wrap field names \
                 containing dots. E.g. to access the subfield `baz` from a field named \
                 \"foo.bar\" in a struct/map the following format can be used to access its \
                 elements: \"`foo.bar`.baz\".",
            )
    }
}

/// The steps of a field path under `version`; the error is Kafka's message
/// for a path with an unmatched backtick (wrap it in a config error for the
/// key that held the path).
///
/// V2 rules (KIP-821, as Kafka implements them): steps are separated by
/// dots; a step starting with a backtick runs to the next backtick that is
/// followed by a dot or ends the path; such a backtick preceded by a
/// backslash is part of the name (`` \` `` becomes `` ` ``); a trailing dot
/// adds an empty step; an empty V2 path has no steps.
///
/// ```
/// use connect_transforms::extract_field::{field_path_steps, FieldSyntaxVersion::*};
/// assert_eq!(field_path_steps("a.b", V1).unwrap(), ["a.b"]);
/// assert_eq!(field_path_steps("a.b", V2).unwrap(), ["a", "b"]);
/// assert_eq!(field_path_steps("`a.b`.c", V2).unwrap(), ["a.b", "c"]);
/// assert_eq!(field_path_steps("`a\\`.b`.c", V2).unwrap(), ["a`.b", "c"]);
/// assert!(field_path_steps("`a.b", V2).is_err());
/// ```
pub fn field_path_steps(
    path: &str,
    version: FieldSyntaxVersion,
) -> std::result::Result<Vec<String>, String> {
    if version == FieldSyntaxVersion::V1 {
        return Ok(vec![path.to_string()]);
    }
    let bytes = path.as_bytes();
    let incomplete = |at: usize| {
        format!(
            "Incomplete backtick pair in path: [{path}], consider adding a backslash before \
             backtick at position {} to escape it",
            path[..at].chars().count()
        )
    };
    let mut steps = Vec::new();
    let mut idx = 0;
    while idx < bytes.len() {
        if bytes[idx] != b'`' {
            match path[idx..].find('.') {
                Some(rel) => {
                    steps.push(path[idx..idx + rel].to_string());
                    idx += rel + 1;
                }
                None => {
                    steps.push(path[idx..].to_string());
                    idx = bytes.len();
                }
            }
            continue;
        }
        let opening = idx;
        let mut start = idx + 1;
        let mut search = start;
        let mut step = String::new();
        loop {
            let close = match path[search..].find('`') {
                Some(rel) => search + rel,
                None => return Err(incomplete(opening)),
            };
            let escaped = bytes[close - 1] == b'\\' && close - 1 > opening;
            if close == bytes.len() - 1 {
                if escaped {
                    return Err(incomplete(opening));
                }
                step.push_str(&path[start..close]);
                steps.push(std::mem::take(&mut step));
                idx = close + 1;
                break;
            }
            if bytes[close + 1] != b'.' {
                // Part of the name: keep looking for a backtick before a dot.
                search = close + 1;
                continue;
            }
            if escaped {
                step.push_str(&path[start..close - 1]);
                step.push('`');
                start = close + 1;
                search = start;
                continue;
            }
            step.push_str(&path[start..close]);
            steps.push(std::mem::take(&mut step));
            idx = close + 2;
            break;
        }
    }
    if path.ends_with('.') {
        steps.push(String::new());
    }
    Ok(steps)
}

/// Extracts one field; see the [module docs](self).
///
/// ```
/// use connect_api::transform::{Configurable, Transformation};
/// use connect_api::{Record, SinkRecord, Value};
/// use connect_transforms::extract_field::ExtractField;
/// use connect_transforms::util::Side;
///
/// let mut smt = ExtractField::new(Side::Value);
/// let cfg = connect_api::ConfigMap::from([("field", "after.id"), ("field.syntax.version", "V2")]);
/// smt.configure(&cfg).unwrap();
///
/// let value = Value::string_map([("after", Value::string_map([("id", Value::Int64(5))]))]);
/// let out = smt.apply(SinkRecord::new(Record::new("t", None, value), 0, 0)).unwrap().unwrap();
/// assert_eq!(out.record.value, Value::Int64(5));
/// ```
#[derive(Debug)]
pub struct ExtractField {
    side: Side,
    original: String,
    steps: Vec<String>,
    replace_null_with_default: bool,
    cache: SchemaCache,
}

impl ExtractField {
    /// An unconfigured ExtractField acting on `side`.
    pub fn new(side: Side) -> Self {
        ExtractField {
            side,
            original: String::new(),
            steps: vec![String::new()],
            replace_null_with_default: true,
            cache: SchemaCache::default(),
        }
    }

    fn definition() -> ConfigDef {
        ConfigDef::new()
            .define(
                ConfigKey::new(FIELD, ConfigType::String)
                    .importance(Importance::Medium)
                    .doc("Field name to extract."),
            )
            .define(FieldSyntaxVersion::config_key())
            .define(replace_null_with_default_key())
    }

    fn field_schema(steps: &[String], original: &str, schema: &Schema) -> Result<Schema> {
        let unknown = || ConnectError::data(format!("Unknown field: {original}"));
        let mut current = schema;
        for step in steps {
            current = current.field(step).ok_or_else(unknown)?.schema();
        }
        Ok(current.clone())
    }

    fn extract_from_struct(&self, value: Value) -> Result<Value> {
        let mut current = value;
        for (i, step) in self.steps.iter().enumerate() {
            if current.is_null() {
                return Ok(Value::Null);
            }
            let purpose = if i == 0 { PURPOSE } else { NESTED };
            let (schema, mut values) = into_struct(current, purpose)?.into_parts();
            current = match schema.field(step) {
                Some(f) => take_field(&mut values, f, self.replace_null_with_default),
                None => Value::Null,
            };
        }
        Ok(current)
    }

    fn extract_from_map(&self, value: Value) -> Result<Value> {
        let mut current = value;
        for (i, step) in self.steps.iter().enumerate() {
            if current.is_null() {
                return Ok(Value::Null);
            }
            let purpose = if i == 0 { PURPOSE } else { NESTED };
            current = into_map(current, purpose)?
                .into_iter()
                .find(|(k, _)| k.as_str() == Some(step.as_str()))
                .map(|(_, v)| v)
                .unwrap_or_default();
        }
        Ok(current)
    }
}

impl Configurable for ExtractField {
    fn configure(&mut self, config: &ConfigMap) -> Result<()> {
        let parsed = Self::definition().parse(config)?;
        let original = parsed.get_string(FIELD).unwrap_or_default().to_string();
        let version = parsed
            .get_string(FIELD_SYNTAX_VERSION)
            .and_then(FieldSyntaxVersion::from_name)
            .unwrap_or_default();
        let steps =
            field_path_steps(&original, version).map_err(|e| ConnectError::config(FIELD, e))?;
        if steps.is_empty() {
            return Err(ConnectError::config(
                FIELD,
                "an empty path names no field (field.syntax.version=V2)",
            ));
        }
        self.steps = steps;
        self.original = original;
        self.replace_null_with_default = parsed.get_bool(REPLACE_NULL_WITH_DEFAULT).unwrap_or(true);
        self.cache = SchemaCache::default();
        Ok(())
    }

    fn config_def(&self) -> ConfigDef {
        Self::definition()
    }
}

impl<R: ConnectRecord> Transformation<R> for ExtractField {
    fn transform(&mut self, record: &mut R) -> Result<Verdict> {
        let (schema, value) = self.side.take(record);
        let (schema, value) = match schema {
            None => (None, self.extract_from_map(value)?),
            Some(s) => {
                // Kafka checks the operand, then the path, then walks the value.
                if !matches!(value, Value::Null | Value::Struct(_)) {
                    into_struct(value, PURPOSE)?;
                    return Err(ConnectError::data(PURPOSE));
                }
                let (steps, original) = (&self.steps, &self.original);
                let field_schema = self
                    .cache
                    .get_or_try_insert(&s, |s| Self::field_schema(steps, original, s))?
                    .clone();
                (Some(field_schema), self.extract_from_struct(value)?)
            }
        };
        self.side.set(record, schema, value);
        Ok(Verdict::Keep)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::test_support::*;
    use connect_api::{ErrorKind, SchemaBuilder, Struct};
    use FieldSyntaxVersion::*;

    fn smt(side: Side, pairs: &[(&str, &str)]) -> Result<ExtractField> {
        let mut t = ExtractField::new(side);
        t.configure(&props(pairs))?;
        Ok(t)
    }

    fn inner_schema() -> Schema {
        SchemaBuilder::struct_()
            .field("magic", Schema::int32())
            .field(
                "dflt",
                SchemaBuilder::int32()
                    .optional()
                    .default_value(5)
                    .build()
                    .unwrap(),
            )
            .optional()
            .build()
            .unwrap()
    }

    fn schema() -> Schema {
        SchemaBuilder::struct_()
            .field("magic", Schema::int32())
            .field("inner", inner_schema())
            .field("dotted.name", Schema::string())
            .build()
            .unwrap()
    }

    fn value() -> Value {
        let mut inner = Struct::new(inner_schema()).unwrap();
        inner.put("magic", 7).unwrap();
        let mut s = Struct::new(schema()).unwrap();
        s.put("magic", 42)
            .unwrap()
            .put("inner", inner)
            .unwrap()
            .put("dotted.name", "x")
            .unwrap();
        Value::Struct(s)
    }

    #[test]
    fn schemaless_v1() {
        let mut t = smt(Side::Key, &[("field", "magic")]).unwrap();
        let out = t
            .apply(sink_key(
                None,
                Value::string_map([("magic", Value::Int32(42))]),
            ))
            .unwrap()
            .unwrap();
        assert_eq!(out.record.key, Value::Int32(42));
        assert!(out.record.key_schema.is_none());
        let out = t
            .apply(sink_key(
                None,
                Value::string_map([("other", Value::Int32(1))]),
            ))
            .unwrap()
            .unwrap();
        assert_eq!(out.record.key, Value::Null);
    }

    #[test]
    fn with_schema_v1_takes_dotted_name_literally() {
        let mut t = smt(Side::Value, &[("field", "dotted.name")]).unwrap();
        let out = t.apply(sink(Some(schema()), value())).unwrap().unwrap();
        assert_eq!(out.record.value, Value::from("x"));
        assert_eq!(out.record.value_schema, Some(Schema::string()));
    }

    #[test]
    fn with_schema_v2_nested_and_backticks() {
        let mut t = smt(
            Side::Value,
            &[("field", "inner.magic"), ("field.syntax.version", "v2")],
        )
        .unwrap();
        let out = t.apply(sink(Some(schema()), value())).unwrap().unwrap();
        assert_eq!(out.record.value, Value::Int32(7));
        assert_eq!(out.record.value_schema, Some(Schema::int32()));

        let mut t = smt(
            Side::Value,
            &[("field", "`dotted.name`"), ("field.syntax.version", "V2")],
        )
        .unwrap();
        let out = t.apply(sink(Some(schema()), value())).unwrap().unwrap();
        assert_eq!(out.record.value, Value::from("x"));
    }

    #[test]
    fn schemaless_v2_nested_missing_and_non_map() {
        let value = Value::string_map([
            ("a", Value::string_map([("b", Value::Int32(1))])),
            ("s", Value::from("text")),
        ]);
        let mut t = smt(
            Side::Value,
            &[("field", "a.b"), ("field.syntax.version", "V2")],
        )
        .unwrap();
        let out = t.apply(sink(None, value.clone())).unwrap().unwrap();
        assert_eq!(out.record.value, Value::Int32(1));

        let mut t = smt(
            Side::Value,
            &[("field", "a.x.y"), ("field.syntax.version", "V2")],
        )
        .unwrap();
        let out = t.apply(sink(None, value.clone())).unwrap().unwrap();
        assert_eq!(out.record.value, Value::Null);

        let mut t = smt(
            Side::Value,
            &[("field", "s.x"), ("field.syntax.version", "V2")],
        )
        .unwrap();
        let e = t.apply(sink(None, value)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "Only Map objects supported in absence of schema for [nested field access], found: STRING"
        );
    }

    #[test]
    fn null_inner_struct_gives_null_with_field_schema() {
        let mut s = Struct::new(schema()).unwrap();
        s.put("magic", 1).unwrap().put("dotted.name", "x").unwrap();
        let mut t = smt(
            Side::Value,
            &[("field", "inner.magic"), ("field.syntax.version", "V2")],
        )
        .unwrap();
        let out = t
            .apply(sink(Some(schema()), Value::Struct(s)))
            .unwrap()
            .unwrap();
        assert_eq!(out.record.value, Value::Null);
        assert_eq!(out.record.value_schema, Some(Schema::int32()));
    }

    #[test]
    fn unknown_field_with_schema_is_an_error() {
        for (field, version) in [("nope", "V1"), ("inner.nope", "V2"), ("magic.x", "V2")] {
            let mut t = smt(
                Side::Value,
                &[("field", field), ("field.syntax.version", version)],
            )
            .unwrap();
            let e = t.apply(sink(Some(schema()), value())).unwrap_err();
            assert_eq!(e.to_string(), format!("Unknown field: {field}"));
        }
    }

    #[test]
    fn nulls_stay_null() {
        let mut t = smt(Side::Value, &[("field", "magic")]).unwrap();
        let out = t.apply(sink(None, Value::Null)).unwrap().unwrap();
        assert_eq!(out.record.value, Value::Null);
        assert!(out.record.value_schema.is_none());

        let optional = SchemaBuilder::struct_()
            .field("magic", Schema::optional_int32())
            .optional()
            .build()
            .unwrap();
        let out = t.apply(sink(Some(optional), Value::Null)).unwrap().unwrap();
        assert_eq!(out.record.value, Value::Null);
        assert_eq!(out.record.value_schema, Some(Schema::optional_int32()));
    }

    #[test]
    fn defaults_unless_disabled() {
        for (rnwd, want) in [("true", Value::Int32(5)), ("false", Value::Null)] {
            let mut t = smt(
                Side::Value,
                &[
                    ("field", "inner.dflt"),
                    ("field.syntax.version", "V2"),
                    ("replace.null.with.default", rnwd),
                ],
            )
            .unwrap();
            let out = t.apply(sink(Some(schema()), value())).unwrap().unwrap();
            assert_eq!(out.record.value, want, "{rnwd}");
        }
    }

    #[test]
    fn wrong_operands_are_errors() {
        let mut t = smt(Side::Value, &[("field", "magic")]).unwrap();
        let e = t
            .apply(sink(Some(Schema::int32()), Value::Int32(1)))
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "Only Struct objects supported for [field extraction], found: INT32"
        );
        let e = t.apply(sink(None, Value::Int32(1))).unwrap_err();
        assert_eq!(
            e.to_string(),
            "Only Map objects supported in absence of schema for [field extraction], found: INT32"
        );
    }

    #[test]
    fn v2_path_rules() {
        let ok = |p: &str| field_path_steps(p, V2).unwrap();
        assert_eq!(ok("a"), ["a"]);
        assert_eq!(ok("a.b.c"), ["a", "b", "c"]);
        assert_eq!(ok("a."), ["a", ""]);
        assert_eq!(ok(".a"), ["", "a"]);
        assert_eq!(ok("`a.b`"), ["a.b"]);
        assert_eq!(ok("`a.b`.`c.d`"), ["a.b", "c.d"]);
        assert_eq!(ok("x.`a.b`.c"), ["x", "a.b", "c"]);
        // A backtick not followed by a dot is part of the name.
        assert_eq!(ok("`a`b`.c"), ["a`b", "c"]);
        assert_eq!(ok("a`b.c"), ["a`b", "c"]);
        // Escaped backtick before a dot.
        assert_eq!(ok("`a\\`.b`"), ["a`.b"]);
        assert_eq!(ok("``"), [""]);
        assert!(ok("").is_empty());
        // Kafka's own notation cases (FieldPathNotationTest).
        let cases: &[(&str, &[&str])] = &[
            ("..", &["", "", ""]),
            ("foo..", &["foo", "", ""]),
            (".bar.", &["", "bar", ""]),
            ("..baz", &["", "", "baz"]),
            ("foobarbaz", &["foobarbaz"]),
            ("foo`bar`baz", &["foo`bar`baz"]),
            ("`foo.bar.baz`", &["foo.bar.baz"]),
            ("foo.`bar.baz`", &["foo", "bar.baz"]),
            ("`foo.bar`.baz", &["foo.bar", "baz"]),
            ("foo.`bar`.baz", &["foo", "bar", "baz"]),
            ("foo.``bar.baz`", &["foo", "`bar.baz"]),
            ("foo.`bar.baz``", &["foo", "bar.baz`"]),
            ("foo.`ba`r.baz`", &["foo", "ba`r.baz"]),
            ("foo.ba`r.baz", &["foo", "ba`r", "baz"]),
            ("foo.``bar``.baz", &["foo", "`bar`", "baz"]),
            ("``foo.bar.baz``", &["`foo.bar.baz`"]),
            (r"foo.`bar\`.baz`", &["foo", "bar`.baz"]),
            ("foo.`bar.`baz`", &["foo", "bar.`baz"]),
            (r"foo.`bar\`.`baz`", &["foo", "bar`.`baz"]),
            (r"foo.`bar\\`.\`baz`", &["foo", r"bar\`.\`baz"]),
        ];
        for (path, steps) in cases {
            assert_eq!(&ok(path), steps, "{path}");
        }
        for (path, at) in [
            ("`foo.bar.baz", 0),
            ("foo.`bar.baz", 4),
            ("foo.bar.`baz", 8),
            (r"foo.bar.`baz\`", 8),
        ] {
            assert_eq!(
                field_path_steps(path, V2).unwrap_err(),
                format!(
                    "Incomplete backtick pair in path: [{path}], consider adding a backslash \
                     before backtick at position {at} to escape it"
                )
            );
        }
        for bad in ["`a", "`a.b", "`a\\`", "x.`y"] {
            let e = field_path_steps(bad, V2).unwrap_err();
            assert!(
                e.starts_with("Incomplete backtick pair in path: ["),
                "{bad}: {e}"
            );
        }
        assert_eq!(field_path_steps("`a.b`", V1).unwrap(), ["`a.b`"]);
    }

    #[test]
    fn config_errors() {
        let e = smt(Side::Value, &[]).unwrap_err();
        assert!(
            matches!(e.kind(), ErrorKind::Config { key } if key == "field"),
            "{e}"
        );
        let e = smt(
            Side::Value,
            &[("field", "`a"), ("field.syntax.version", "V2")],
        )
        .unwrap_err();
        assert!(
            matches!(e.kind(), ErrorKind::Config { key } if key == "field"),
            "{e}"
        );
        assert!(e.to_string().contains("Incomplete backtick pair"), "{e}");
        let e = smt(
            Side::Value,
            &[("field", ""), ("field.syntax.version", "V2")],
        )
        .unwrap_err();
        assert!(
            matches!(e.kind(), ErrorKind::Config { key } if key == "field"),
            "{e}"
        );
        let e = smt(
            Side::Value,
            &[("field", "a"), ("field.syntax.version", "V3")],
        )
        .unwrap_err();
        assert!(
            matches!(e.kind(), ErrorKind::Config { key } if key == "field.syntax.version"),
            "{e}"
        );
        let e = smt(
            Side::Value,
            &[("field", "a"), ("replace.null.with.default", "x")],
        )
        .unwrap_err();
        assert!(
            matches!(e.kind(), ErrorKind::Config { key } if key == "replace.null.with.default")
        );
    }

    #[test]
    fn every_key_is_documented() {
        let def = Configurable::config_def(&ExtractField::new(Side::Value));
        assert_eq!(def.keys().len(), 3);
        assert!(def.keys().iter().all(|k| !k.documentation.is_empty()));
    }

    proptest::proptest! {
        #[test]
        fn v2_round_trips_quoted_names(names in proptest::collection::vec("[a-z.]{0,6}", 1..4)) {
            let path = names
                .iter()
                .map(|n| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(".");
            proptest::prop_assert_eq!(field_path_steps(&path, V2).unwrap(), names);
        }

        #[test]
        fn v2_never_panics(path in "[`.\\\\ab]{0,12}") {
            let _ = field_path_steps(&path, V2);
        }
    }
}
