//! `RegexRouter`: rewrites the topic when the whole topic matches `regex`,
//! using `replacement` with Java's `$1` / `${name}` group references.
//!
//! Java's replacement syntax is compiled once at configure time into
//! literal text and group references, so it never goes through the regex
//! crate's own `$name` syntax (where `$1a` would mean a group named `1a`):
//! `$12` means group 12 only when the regex has 12 groups, else group 1
//! followed by `2`, exactly as Java's `Matcher.appendReplacement` reads it.

use std::collections::HashMap;
use std::sync::Arc;

use connect_api::config::{ConfigDef, ConfigKey, ConfigMap, ConfigType, Importance};
use connect_api::transform::{Configurable, Transformation, Verdict};
use connect_api::{ConnectError, ConnectRecord, Result};
use regex::{Captures, Regex};

/// Kafka's class name.
pub const CLASS: &str = "org.apache.kafka.connect.transforms.RegexRouter";

const REGEX: &str = "regex";
const REPLACEMENT: &str = "replacement";

/// Most topics whose routing is remembered; real connectors see few topics.
const TOPIC_CACHE_SIZE: usize = 1024;

/// One piece of a Java replacement string.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Literal(String),
    Group(usize),
    Named(String),
}

/// A Java `Matcher.replaceFirst` replacement string, compiled for `regex`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JavaReplacement {
    parts: Vec<Part>,
}

impl JavaReplacement {
    /// Compile `replacement` for `regex` with Java's rules: `\x` is a literal
    /// `x`, `$n` a group number (taking more digits only while the number
    /// stays a valid group), `${name}` a named group.
    ///
    /// ```
    /// use connect_transforms::regex_router::JavaReplacement;
    /// use regex::Regex;
    ///
    /// let re = Regex::new(r"(\w+)-(\d)").unwrap();
    /// let r = JavaReplacement::new("$2$1x\\$", &re).unwrap();
    /// assert_eq!(r.expand(&re.captures("abc-7").unwrap()), "7abcx$");
    /// // Only two groups: `$10` is group 1 followed by "0".
    /// let r = JavaReplacement::new("$10", &re).unwrap();
    /// assert_eq!(r.expand(&re.captures("abc-7").unwrap()), "abc0");
    /// assert!(JavaReplacement::new("$3", &re).is_err());
    /// ```
    pub fn new(replacement: &str, regex: &Regex) -> std::result::Result<Self, String> {
        let group_count = regex.captures_len() - 1;
        let mut parts = Vec::new();
        let mut literal = String::new();
        let mut chars = replacement.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '\\' => match chars.next() {
                    Some(escaped) => literal.push(escaped),
                    None => return Err("character to be escaped is missing".into()),
                },
                '$' => {
                    let reference = match chars.peek() {
                        Some('{') => {
                            chars.next();
                            let mut name = String::new();
                            loop {
                                match chars.next() {
                                    Some('}') => break,
                                    Some(n) if n.is_ascii_alphanumeric() => name.push(n),
                                    _ => {
                                        return Err(
                                            "named capturing group is missing trailing '}'".into()
                                        )
                                    }
                                }
                            }
                            if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) {
                                return Err(format!("capturing group name {{{name}}} starts with digit character or is empty"));
                            }
                            if !regex.capture_names().flatten().any(|n| n == name) {
                                return Err(format!("No group with name {{{name}}}"));
                            }
                            Part::Named(name)
                        }
                        Some(d) if d.is_ascii_digit() => {
                            let mut group = d.to_digit(10).unwrap_or(0) as usize;
                            chars.next();
                            if group > group_count {
                                return Err(format!("No group {group}"));
                            }
                            while let Some(next) = chars.peek().and_then(|c| c.to_digit(10)) {
                                let longer = group * 10 + next as usize;
                                if longer > group_count {
                                    break;
                                }
                                group = longer;
                                chars.next();
                            }
                            Part::Group(group)
                        }
                        _ => return Err("Illegal group reference".into()),
                    };
                    if !literal.is_empty() {
                        parts.push(Part::Literal(std::mem::take(&mut literal)));
                    }
                    parts.push(reference);
                }
                c => literal.push(c),
            }
        }
        if !literal.is_empty() {
            parts.push(Part::Literal(literal));
        }
        Ok(JavaReplacement { parts })
    }

    /// The replacement text for a match; groups that did not take part in
    /// the match add nothing, as in Java.
    pub fn expand(&self, caps: &Captures<'_>) -> String {
        let mut out = String::new();
        for p in &self.parts {
            match p {
                Part::Literal(s) => out.push_str(s),
                Part::Group(i) => out.push_str(caps.get(*i).map_or("", |m| m.as_str())),
                Part::Named(n) => out.push_str(caps.name(n).map_or("", |m| m.as_str())),
            }
        }
        out
    }
}

#[derive(Debug)]
struct Config {
    regex: Regex,
    replacement: JavaReplacement,
}

/// Kafka's `RegexRouter`.
///
/// ```
/// use connect_api::config::ConfigMap;
/// use connect_api::transform::{Configurable, Transformation};
/// use connect_api::{Record, SinkRecord, Value};
/// use connect_transforms::regex_router::RegexRouter;
///
/// let mut smt = RegexRouter::new();
/// let cfg = ConfigMap::from([("regex", "(.*)-prod"), ("replacement", "$1")]);
/// smt.configure(&cfg).unwrap();
/// let out = smt.apply(SinkRecord::new(Record::new("orders-prod", None, Value::Null), 0, 0)).unwrap().unwrap();
/// assert_eq!(&*out.record.topic, "orders");
/// ```
#[derive(Debug, Default)]
pub struct RegexRouter {
    config: Option<Config>,
    routed: HashMap<Arc<str>, Arc<str>>,
    /// The last routing: runs of records of one topic are answered by a
    /// pointer or string comparison, without hashing the topic.
    last: Option<(Arc<str>, Arc<str>)>,
}

impl RegexRouter {
    /// An unconfigured RegexRouter.
    pub fn new() -> Self {
        Self::default()
    }

    fn route(&mut self, topic: &Arc<str>) -> Result<Arc<str>> {
        if let Some((from, to)) = &self.last {
            // Same allocation, or the same short name from another one
            // (sources often build the topic per record): no hashing.
            if Arc::ptr_eq(from, topic) || **from == **topic {
                return Ok(to.clone());
            }
        }
        if let Some(t) = self.routed.get(topic) {
            let t = t.clone();
            self.last = Some((topic.clone(), t.clone()));
            return Ok(t);
        }
        let cfg = self
            .config
            .as_ref()
            .ok_or_else(|| ConnectError::other("RegexRouter is not configured"))?;
        let routed: Arc<str> = match cfg.regex.captures(topic) {
            Some(caps) => cfg.replacement.expand(&caps).into(),
            None => topic.clone(),
        };
        if self.routed.len() >= TOPIC_CACHE_SIZE {
            self.routed.clear();
        }
        self.routed.insert(topic.clone(), routed.clone());
        self.last = Some((topic.clone(), routed.clone()));
        Ok(routed)
    }
}

/// The keys RegexRouter accepts.
pub fn config_def() -> ConfigDef {
    ConfigDef::new()
        .define(
            ConfigKey::new(REGEX, ConfigType::String)
                .importance(Importance::High)
                .doc("Regular expression to use for matching."),
        )
        .define(
            ConfigKey::new(REPLACEMENT, ConfigType::String)
                .importance(Importance::High)
                .doc("Replacement string."),
        )
}

impl Configurable for RegexRouter {
    fn configure(&mut self, config: &ConfigMap) -> Result<()> {
        let cfg = config_def().parse(config)?;
        let pattern = cfg.get_string(REGEX).unwrap_or_default();
        // Java's `matches()` needs the whole topic to match.
        let regex = Regex::new(&format!(r"\A(?:{pattern})\z")).map_err(|e| {
            ConnectError::config(
                REGEX,
                format!("invalid regular expression '{pattern}': {e}"),
            )
        })?;
        let replacement =
            JavaReplacement::new(cfg.get_string(REPLACEMENT).unwrap_or_default(), &regex)
                .map_err(|e| ConnectError::config(REPLACEMENT, e))?;
        self.config = Some(Config { regex, replacement });
        self.routed.clear();
        self.last = None;
        Ok(())
    }

    fn config_def(&self) -> ConfigDef {
        config_def()
    }
}

impl<R: ConnectRecord> Transformation<R> for RegexRouter {
    fn transform(&mut self, record: &mut R) -> Result<Verdict> {
        let routed = self.route(&record.record().topic)?;
        record.record_mut().topic = routed;
        Ok(Verdict::Keep)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use connect_api::{Record, SinkRecord, Value};
    use proptest::prelude::*;

    fn router(regex: &str, replacement: &str) -> Result<RegexRouter> {
        let mut r = RegexRouter::new();
        let cfg = ConfigMap::from([(REGEX, regex), (REPLACEMENT, replacement)]);
        r.configure(&cfg)?;
        Ok(r)
    }

    fn route(r: &mut RegexRouter, topic: &str) -> String {
        let out = r
            .apply(SinkRecord::new(Record::new(topic, None, Value::Null), 0, 0))
            .unwrap()
            .unwrap();
        out.record.topic.to_string()
    }

    #[test]
    fn kafka_examples() {
        let mut r = router("(.*)", "prefix-$1").unwrap();
        assert_eq!(route(&mut r, "orders"), "prefix-orders");
        let mut r = router("(.*)SomeTopic(.*)", "$1OtherTopic$2").unwrap();
        assert_eq!(route(&mut r, "aSomeTopicb"), "aOtherTopicb");
        // Only a full match rewrites: "my-topic" contains but is not "topic".
        let mut r = router("topic", "x").unwrap();
        assert_eq!(route(&mut r, "my-topic"), "my-topic");
        assert_eq!(route(&mut r, "topic"), "x");
        // Alternation still needs the whole topic, as Java's matches().
        let mut r = router("a|ab", "X").unwrap();
        assert_eq!(route(&mut r, "ab"), "X");
    }

    #[test]
    fn java_group_references() {
        // `$1a` is group 1 then "a" (the regex crate would read a group named "1a").
        let mut r = router(r"(\w+)\.(\w+)", "$2_$1a").unwrap();
        assert_eq!(route(&mut r, "db.users"), "users_dba");
        let mut r = router(r"(?P<env>\w+)-(\w+)", r"${env}:$2 \$1").unwrap();
        assert_eq!(route(&mut r, "prod-orders"), "prod:orders $1");
        let mut r = router("(a)?(b)", "[$1$2]").unwrap();
        assert_eq!(route(&mut r, "b"), "[b]");
        // With 11 groups `$11` is group 11.
        let mut r = router("(a)(b)(c)(d)(e)(f)(g)(h)(i)(j)(k)", "$11$10").unwrap();
        assert_eq!(route(&mut r, "abcdefghijk"), "kj");
    }

    #[test]
    fn config_errors_name_the_key() {
        for (regex, replacement, key, fragment) in [
            ("(", "x", REGEX, "invalid regular expression"),
            ("(a)", "$2", REPLACEMENT, "No group 2"),
            ("(a)", "$x", REPLACEMENT, "Illegal group reference"),
            ("(a)", "x\\", REPLACEMENT, "escaped is missing"),
            ("(a)", "${nope}", REPLACEMENT, "No group with name"),
        ] {
            let e = router(regex, replacement).unwrap_err().to_string();
            assert!(e.contains(key) && e.contains(fragment), "{e}");
        }
        let e = RegexRouter::new();
        let err = Configurable::configure(&mut { e }, &ConfigMap::new()).unwrap_err();
        assert!(err.to_string().contains("regex"));
    }

    proptest! {
        #[test]
        fn replacement_compiler_never_panics(s in "\\PC{0,16}") {
            let re = Regex::new("(a)(?P<n>b)").unwrap();
            if let Ok(r) = JavaReplacement::new(&s, &re) {
                let _ = r.expand(&re.captures("ab").unwrap());
            }
        }
    }
}
