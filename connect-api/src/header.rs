//! Record headers: an ordered multimap of (key, schema, value).

use crate::error::Result;
use crate::schema::Schema;
use crate::value::Value;

/// One header: a key, an optional schema and a value.
#[derive(Debug, Clone, PartialEq)]
pub struct Header {
    key: String,
    schema: Option<Schema>,
    value: Value,
}

impl Header {
    /// A header; use [`Headers::add`] to get validation.
    pub fn new(key: impl Into<String>, schema: Option<Schema>, value: Value) -> Self {
        Header {
            key: key.into(),
            schema,
            value,
        }
    }
    /// The header key.
    pub fn key(&self) -> &str {
        &self.key
    }
    /// The header schema (`None` for schemaless headers).
    pub fn schema(&self) -> Option<&Schema> {
        self.schema.as_ref()
    }
    /// The header value.
    pub fn value(&self) -> &Value {
        &self.value
    }
    /// Split into key, schema and value.
    pub fn into_parts(self) -> (String, Option<Schema>, Value) {
        (self.key, self.schema, self.value)
    }
}

/// Ordered headers of a record; keys may repeat.
///
/// ```
/// use connect_api::{Headers, Schema, Value};
///
/// let mut h = Headers::new();
/// h.add_string("source", "db1").add_string("source", "db2");
/// h.add("retries", Some(Schema::int32()), Value::Int32(3)).unwrap();
/// assert_eq!(h.all_with_name("source").count(), 2);
/// assert_eq!(h.last_with_name("source").unwrap().value(), &Value::from("db2"));
/// assert!(h.add("bad", Some(Schema::int32()), Value::from("x")).is_err());
/// h.retain_latest();
/// assert_eq!(h.len(), 2);
/// h.remove("source");
/// assert_eq!(h.len(), 1);
/// ```
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Headers(Vec<Header>);

impl Headers {
    /// No headers.
    pub fn new() -> Self {
        Headers(Vec::new())
    }

    /// Append a header, validating `value` against `schema` when there is one.
    pub fn add(
        &mut self,
        key: impl Into<String>,
        schema: Option<Schema>,
        value: Value,
    ) -> Result<&mut Self> {
        let key = key.into();
        if let Some(s) = &schema {
            s.validate_value(&value)
                .map_err(|e| e.context(format_args!("header '{key}'")))?;
        }
        self.0.push(Header { key, schema, value });
        Ok(self)
    }

    /// Append an already-built header without validation.
    pub fn push(&mut self, header: Header) -> &mut Self {
        self.0.push(header);
        self
    }

    /// Append a STRING header.
    pub fn add_string(&mut self, key: impl Into<String>, value: impl Into<String>) -> &mut Self {
        self.push(Header::new(
            key,
            Some(Schema::string()),
            Value::String(value.into()),
        ))
    }

    /// Every header with `key`, in order.
    pub fn all_with_name<'a>(&'a self, key: &'a str) -> impl Iterator<Item = &'a Header> + 'a {
        self.0.iter().filter(move |h| h.key == key)
    }

    /// The last header with `key`.
    pub fn last_with_name(&self, key: &str) -> Option<&Header> {
        self.0.iter().rev().find(|h| h.key == key)
    }

    /// Remove every header with `key`.
    pub fn remove(&mut self, key: &str) -> &mut Self {
        self.0.retain(|h| h.key != key);
        self
    }

    /// Keep only the last header of each key (order of the kept ones preserved).
    pub fn retain_latest(&mut self) -> &mut Self {
        let mut seen = std::collections::HashSet::new();
        let mut keep = vec![false; self.0.len()];
        for (i, h) in self.0.iter().enumerate().rev() {
            keep[i] = seen.insert(h.key.clone());
        }
        let mut it = keep.into_iter();
        self.0.retain(|_| it.next().unwrap_or(false));
        self
    }

    /// Keep only the last header with `key`.
    pub fn retain_latest_for(&mut self, key: &str) -> &mut Self {
        if let Some(last) = self.0.iter().rposition(|h| h.key == key) {
            let mut i = 0;
            self.0.retain(|h| {
                let keep = h.key != key || i == last;
                i += 1;
                keep
            });
        }
        self
    }

    /// Remove every header.
    pub fn clear(&mut self) {
        self.0.clear();
    }

    /// Number of headers.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Iterate in order.
    pub fn iter(&self) -> std::slice::Iter<'_, Header> {
        self.0.iter()
    }

    /// Keep the headers for which `f` returns true.
    pub fn retain(&mut self, f: impl FnMut(&Header) -> bool) {
        self.0.retain(f);
    }
}

impl<'a> IntoIterator for &'a Headers {
    type Item = &'a Header;
    type IntoIter = std::slice::Iter<'a, Header>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

impl IntoIterator for Headers {
    type Item = Header;
    type IntoIter = std::vec::IntoIter<Header>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

impl FromIterator<Header> for Headers {
    fn from_iter<T: IntoIterator<Item = Header>>(iter: T) -> Self {
        Headers(iter.into_iter().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retain_latest_for_one_key() {
        let mut h = Headers::new();
        h.add_string("a", "1")
            .add_string("b", "1")
            .add_string("a", "2");
        h.retain_latest_for("a");
        let keys: Vec<_> = h.iter().map(|h| (h.key(), h.value().clone())).collect();
        assert_eq!(keys, [("b", Value::from("1")), ("a", Value::from("2"))]);
    }

    #[test]
    fn retain_latest_keeps_order() {
        let mut h = Headers::new();
        h.add_string("a", "1")
            .add_string("b", "1")
            .add_string("a", "2")
            .add_string("c", "1");
        h.retain_latest();
        let keys: Vec<_> = h.iter().map(Header::key).collect();
        assert_eq!(keys, ["b", "a", "c"]);
    }
}
