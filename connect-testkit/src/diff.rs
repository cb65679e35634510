//! Record comparison with readable diffs: which record differs first, and
//! which field path inside it (topic, key, `value.address.zip`, a header),
//! with values in Kafka's `Values` string form and their types.
//!
//! ```should_panic
//! use connect_api::{Record, Schema, Value};
//! use connect_testkit::assert_records_eq;
//!
//! let actual = vec![Record::new("orders", Some(Schema::string()), Value::from("a"))];
//! let expected = vec![Record::new("orders", Some(Schema::string()), Value::from("b"))];
//! // panics with:
//! //   records differ at index 0 (1 actual, 1 expected):
//! //     value: expected "b" (STRING), got "a" (STRING)
//! assert_records_eq!(actual, expected);
//! ```

use std::fmt::Write as _;

use connect_api::{values, Record, Schema, SinkRecord, SourceRecord, Type, Value};

/// A record type the diff understands: the shared [`Record`] data plus the
/// fields specific to its kind.
pub trait DiffableRecord {
    /// The shared record data.
    fn data(&self) -> &Record;
    /// Kind-specific fields as (name, rendered value) pairs.
    fn extra_fields(&self) -> Vec<(&'static str, String)> {
        Vec::new()
    }
}

impl DiffableRecord for Record {
    fn data(&self) -> &Record {
        self
    }
}

impl DiffableRecord for SourceRecord {
    fn data(&self) -> &Record {
        &self.record
    }
    fn extra_fields(&self) -> Vec<(&'static str, String)> {
        vec![
            (
                "source_partition",
                serde_json::Value::Object((*self.source_partition).clone()).to_string(),
            ),
            (
                "source_offset",
                serde_json::Value::Object(self.source_offset.clone()).to_string(),
            ),
        ]
    }
}

impl DiffableRecord for SinkRecord {
    fn data(&self) -> &Record {
        &self.record
    }
    fn extra_fields(&self) -> Vec<(&'static str, String)> {
        vec![
            ("kafka_offset", self.kafka_offset.to_string()),
            ("timestamp_type", format!("{:?}", self.timestamp_type)),
            ("original_topic", self.original_topic.to_string()),
            (
                "original_kafka_partition",
                self.original_kafka_partition.to_string(),
            ),
            (
                "original_kafka_offset",
                self.original_kafka_offset.to_string(),
            ),
        ]
    }
}

impl<T: DiffableRecord> DiffableRecord for &T {
    fn data(&self) -> &Record {
        (*self).data()
    }
    fn extra_fields(&self) -> Vec<(&'static str, String)> {
        (*self).extra_fields()
    }
}

/// One difference: where, what was expected, what was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldDiff {
    /// `topic`, `key`, `value.address.zip`, `value schema`, `headers[1]`...
    pub path: String,
    /// The expected side, rendered.
    pub expected: String,
    /// The actual side, rendered.
    pub actual: String,
}

impl std::fmt::Display for FieldDiff {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: expected {}, got {}",
            self.path, self.expected, self.actual
        )
    }
}

/// A value in `Values` string form with its type: `"a" (STRING)`, `5 (INT32)`, `null`.
pub fn render_value(value: &Value) -> String {
    match value {
        Value::Null => "null".to_string(),
        Value::String(s) => format!("{s:?} (STRING)"),
        v => format!("{} ({})", values::convert_to_string(v), v.type_name()),
    }
}

/// A schema in a compact form: `STRUCT com.example.Order{id:INT64,note:STRING?}`
/// (`?` marks optional).
pub fn render_schema(schema: Option<&Schema>) -> String {
    let Some(s) = schema else {
        return "no schema".to_string();
    };
    let mut out = String::new();
    write_schema(&mut out, s);
    out
}

fn write_schema(out: &mut String, s: &Schema) {
    out.push_str(s.ty().name());
    if let Some(n) = s.name() {
        let _ = write!(out, " {n}");
    }
    match s.ty() {
        Type::Struct => {
            out.push('{');
            for (i, f) in s.field_list().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                let _ = write!(out, "{}:", f.name());
                write_schema(out, f.schema());
            }
            out.push('}');
        }
        Type::Array => {
            out.push('<');
            if let Some(v) = s.value_schema() {
                write_schema(out, v);
            }
            out.push('>');
        }
        Type::Map => {
            out.push('<');
            if let Some(k) = s.key_schema() {
                write_schema(out, k);
            }
            out.push(',');
            if let Some(v) = s.value_schema() {
                write_schema(out, v);
            }
            out.push('>');
        }
        _ => {}
    }
    if s.is_optional() {
        out.push('?');
    }
}

/// Every difference between two values, below `path`.
pub fn diff_values(path: &str, expected: &Value, actual: &Value, out: &mut Vec<FieldDiff>) {
    if expected == actual {
        return;
    }
    let leaf = |out: &mut Vec<FieldDiff>| {
        out.push(FieldDiff {
            path: path.to_string(),
            expected: render_value(expected),
            actual: render_value(actual),
        })
    };
    match (expected, actual) {
        (Value::Struct(e), Value::Struct(a)) => {
            let before = out.len();
            for f in e.schema().field_list() {
                let sub = format!("{path}.{}", f.name());
                match a.schema().field(f.name()) {
                    Some(af) => {
                        diff_values(&sub, e.value_or_default(f), a.value_or_default(af), out)
                    }
                    None => out.push(FieldDiff {
                        path: sub,
                        expected: render_value(e.value_or_default(f)),
                        actual: "no such field".into(),
                    }),
                }
            }
            for f in a.schema().field_list() {
                if e.schema().field(f.name()).is_none() {
                    out.push(FieldDiff {
                        path: format!("{path}.{}", f.name()),
                        expected: "no such field".into(),
                        actual: render_value(a.value_or_default(f)),
                    });
                }
            }
            if out.len() == before {
                // Same field values: the struct schemas differ.
                out.push(FieldDiff {
                    path: format!("{path} (struct schema)"),
                    expected: render_schema(Some(e.schema())),
                    actual: render_schema(Some(a.schema())),
                });
            }
        }
        (Value::Map(e), Value::Map(a)) => {
            let before = out.len();
            for (k, ev) in e {
                let sub = format!("{path}[{}]", values::convert_to_string(k));
                match a.iter().find(|(ak, _)| ak == k) {
                    Some((_, av)) => diff_values(&sub, ev, av, out),
                    None => out.push(FieldDiff {
                        path: sub,
                        expected: render_value(ev),
                        actual: "no such key".into(),
                    }),
                }
            }
            for (k, av) in a {
                if !e.iter().any(|(ek, _)| ek == k) {
                    out.push(FieldDiff {
                        path: format!("{path}[{}]", values::convert_to_string(k)),
                        expected: "no such key".into(),
                        actual: render_value(av),
                    });
                }
            }
            if out.len() == before {
                // Repeated keys: the first match per key hid the difference.
                leaf(out);
            }
        }
        (Value::Array(e), Value::Array(a)) => {
            for (i, (ev, av)) in e.iter().zip(a).enumerate() {
                diff_values(&format!("{path}[{i}]"), ev, av, out);
            }
            if e.len() != a.len() {
                out.push(FieldDiff {
                    path: format!("{path} (length)"),
                    expected: e.len().to_string(),
                    actual: a.len().to_string(),
                });
            }
        }
        _ => leaf(out),
    }
}

fn push_if<T: PartialEq>(
    out: &mut Vec<FieldDiff>,
    path: &str,
    e: &T,
    a: &T,
    render: impl Fn(&T) -> String,
) {
    if e != a {
        out.push(FieldDiff {
            path: path.to_string(),
            expected: render(e),
            actual: render(a),
        });
    }
}

/// Every difference between two records.
pub fn diff_record<T: DiffableRecord>(expected: &T, actual: &T) -> Vec<FieldDiff> {
    let (e, a) = (expected.data(), actual.data());
    let mut out = Vec::new();
    push_if(&mut out, "topic", &e.topic, &a.topic, |t| format!("{t:?}"));
    push_if(
        &mut out,
        "kafka_partition",
        &e.kafka_partition,
        &a.kafka_partition,
        |p| format!("{p:?}"),
    );
    push_if(&mut out, "key schema", &e.key_schema, &a.key_schema, |s| {
        render_schema(s.as_ref())
    });
    diff_values("key", &e.key, &a.key, &mut out);
    push_if(
        &mut out,
        "value schema",
        &e.value_schema,
        &a.value_schema,
        |s| render_schema(s.as_ref()),
    );
    diff_values("value", &e.value, &a.value, &mut out);
    push_if(&mut out, "timestamp", &e.timestamp, &a.timestamp, |t| {
        format!("{t:?}")
    });
    let (eh, ah): (Vec<_>, Vec<_>) = (e.headers.iter().collect(), a.headers.iter().collect());
    for (i, (h1, h2)) in eh.iter().zip(&ah).enumerate() {
        let path = format!("headers[{i}] ({:?})", h1.key());
        push_if(
            &mut out,
            &format!("{path} key"),
            &h1.key(),
            &h2.key(),
            |k| format!("{k:?}"),
        );
        push_if(
            &mut out,
            &format!("{path} schema"),
            &h1.schema(),
            &h2.schema(),
            |s| render_schema(*s),
        );
        diff_values(&path, h1.value(), h2.value(), &mut out);
    }
    if eh.len() != ah.len() {
        let keys = |hs: &[&connect_api::Header]| {
            format!("{:?}", hs.iter().map(|h| h.key()).collect::<Vec<_>>())
        };
        out.push(FieldDiff {
            path: "headers".into(),
            expected: keys(&eh),
            actual: keys(&ah),
        });
    }
    for ((name, ev), (_, av)) in expected.extra_fields().iter().zip(actual.extra_fields()) {
        push_if(&mut out, name, ev, &av, |s| s.clone());
    }
    out
}

/// `None` when the slices hold equal records; otherwise a message naming
/// the first differing record and each of its differing fields.
pub fn diff_records<T: DiffableRecord>(actual: &[T], expected: &[T]) -> Option<String> {
    let header = format!("({} actual, {} expected)", actual.len(), expected.len());
    for (i, (a, e)) in actual.iter().zip(expected).enumerate() {
        let diffs = diff_record(e, a);
        if !diffs.is_empty() {
            let mut msg = format!("records differ at index {i} {header}:");
            for d in diffs.iter().take(20) {
                let _ = write!(msg, "\n  {d}");
            }
            if diffs.len() > 20 {
                let _ = write!(msg, "\n  ... and {} more", diffs.len() - 20);
            }
            return Some(msg);
        }
    }
    if actual.len() != expected.len() {
        let n = actual.len().min(expected.len());
        let (which, extra) = if actual.len() > expected.len() {
            ("unexpected", &actual[n])
        } else {
            ("missing", &expected[n])
        };
        let r = extra.data();
        return Some(format!(
            "record counts differ {header}; first {which} record at index {n}: topic {:?}, key {}, value {}",
            r.topic,
            render_value(&r.key),
            render_value(&r.value)
        ));
    }
    None
}

/// Assert that two lists of records (`Record`, `SourceRecord` or
/// `SinkRecord`; anything that derefs to a slice) are equal, panicking with
/// the first differing record and field path.
#[macro_export]
macro_rules! assert_records_eq {
    ($actual:expr, $expected:expr $(,)?) => {
        if let Some(diff) = $crate::diff::diff_records(&$actual[..], &$expected[..]) {
            panic!("{}", diff);
        }
    };
    ($actual:expr, $expected:expr, $($arg:tt)+) => {
        if let Some(diff) = $crate::diff::diff_records(&$actual[..], &$expected[..]) {
            panic!("{}: {}", format_args!($($arg)+), diff);
        }
    };
}

/// Assert that two records are equal, panicking with every differing field.
#[macro_export]
macro_rules! assert_record_eq {
    ($actual:expr, $expected:expr $(,)?) => {
        if let Some(diff) = $crate::diff::diff_records(
            ::std::slice::from_ref(&$actual),
            ::std::slice::from_ref(&$expected),
        ) {
            panic!("{}", diff);
        }
    };
}
