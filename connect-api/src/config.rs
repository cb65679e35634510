//! `ConfigDef`: configuration declared as data, parsed and validated with
//! Kafka's rules.
//!
//! A plugin declares its keys once (type, default, importance, doc,
//! validator); the runtime parses the user's string map with
//! [`ConfigDef::parse`] and the REST API renders [`ConfigDef::validate`]'s
//! per-key report as Kafka's `ConfigInfos` JSON.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::Arc;

use crate::error::{ConnectError, Result};

/// A plugin's raw configuration: key to string value, as Kafka's
/// `Map<String, String>`, in key order.
///
/// It reads and writes as the `BTreeMap` it wraps (`get`, `insert`,
/// iteration, ...). `Debug` masks the values of keys that name a secret
/// (see [`ConfigMap::is_secret_key`]), so logging a connector's config does
/// not print its passwords; a map does not know its plugin's
/// [`ConfigDef`], so the rule goes by the key's name, and
/// [`ParsedConfig`]'s `Debug` masks exactly the keys declared
/// [`ConfigType::Password`].
///
/// ```
/// use connect_api::ConfigMap;
///
/// let mut config = ConfigMap::from_pairs([("topic", "orders"), ("connection.password", "s3cret")]);
/// config.insert("tasks.max".to_string(), "2".to_string());
/// assert_eq!(config.get("topic").map(String::as_str), Some("orders"));
/// assert_eq!(
///     format!("{config:?}"),
///     r#"{"connection.password": "[hidden]", "tasks.max": "2", "topic": "orders"}"#
/// );
/// ```
// Serializable as the plain JSON object Kafka's REST API and config files
// hold, as the `BTreeMap` it replaced was.
#[derive(
    Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(transparent)]
pub struct ConfigMap(BTreeMap<String, String>);

impl ConfigMap {
    /// An empty map.
    pub fn new() -> Self {
        ConfigMap(BTreeMap::new())
    }

    /// A map from `(key, value)` pairs; a later pair wins over an earlier
    /// one with the same key.
    pub fn from_pairs<K: Into<String>, V: Into<String>>(
        pairs: impl IntoIterator<Item = (K, V)>,
    ) -> Self {
        pairs.into_iter().collect()
    }

    /// The wrapped map.
    pub fn into_inner(self) -> BTreeMap<String, String> {
        self.0
    }

    /// Whether `Debug` masks the value of `key`: its name holds
    /// `password`, `secret`, `credential`, `jaas.config` or `user.info`, or
    /// it names private key or certificate material given inline
    /// (`ssl.keystore.key`, `ssl.keystore.certificate.chain`,
    /// `ssl.truststore.certificates`): the keys Kafka and its common
    /// plugins declare as PASSWORD.
    pub fn is_secret_key(key: &str) -> bool {
        let key = key.to_ascii_lowercase();
        [
            "password",
            "secret",
            "credential",
            "jaas.config",
            "user.info",
        ]
        .iter()
        .any(|part| key.contains(part))
            || [
                "ssl.keystore.key",
                "ssl.keystore.certificate.chain",
                "ssl.truststore.certificates",
            ]
            .iter()
            .any(|suffix| key.ends_with(suffix))
    }
}

impl std::ops::Deref for ConfigMap {
    type Target = BTreeMap<String, String>;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl std::ops::DerefMut for ConfigMap {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.0
    }
}

impl fmt::Debug for ConfigMap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        struct Hidden;
        impl fmt::Debug for Hidden {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("\"[hidden]\"")
            }
        }
        let mut map = f.debug_map();
        for (k, v) in &self.0 {
            if ConfigMap::is_secret_key(k) {
                map.entry(k, &Hidden);
            } else {
                map.entry(k, v);
            }
        }
        map.finish()
    }
}

impl From<BTreeMap<String, String>> for ConfigMap {
    fn from(map: BTreeMap<String, String>) -> Self {
        ConfigMap(map)
    }
}

impl<K: Into<String>, V: Into<String>, const N: usize> From<[(K, V); N]> for ConfigMap {
    fn from(pairs: [(K, V); N]) -> Self {
        ConfigMap::from_pairs(pairs)
    }
}

impl From<ConfigMap> for BTreeMap<String, String> {
    fn from(map: ConfigMap) -> Self {
        map.0
    }
}

impl<K: Into<String>, V: Into<String>> FromIterator<(K, V)> for ConfigMap {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        ConfigMap(
            iter.into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        )
    }
}

impl<K: Into<String>, V: Into<String>> Extend<(K, V)> for ConfigMap {
    fn extend<I: IntoIterator<Item = (K, V)>>(&mut self, iter: I) {
        self.0
            .extend(iter.into_iter().map(|(k, v)| (k.into(), v.into())));
    }
}

impl IntoIterator for ConfigMap {
    type Item = (String, String);
    type IntoIter = std::collections::btree_map::IntoIter<String, String>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

impl<'a> IntoIterator for &'a ConfigMap {
    type Item = (&'a String, &'a String);
    type IntoIter = std::collections::btree_map::Iter<'a, String, String>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

impl<'a> IntoIterator for &'a mut ConfigMap {
    type Item = (&'a String, &'a mut String);
    type IntoIter = std::collections::btree_map::IterMut<'a, String, String>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter_mut()
    }
}

/// The type of a config key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ConfigType {
    /// `true`/`false`, case-insensitive.
    Boolean,
    /// Trimmed string.
    String,
    /// 32-bit integer.
    Int,
    /// 16-bit integer.
    Short,
    /// 64-bit integer.
    Long,
    /// 64-bit float.
    Double,
    /// Comma-separated list, entries trimmed; `""` is the empty list.
    List,
    /// A plugin class name (or alias).
    Class,
    /// A secret string, never printed.
    Password,
}

impl ConfigType {
    /// Kafka's name (`STRING`, `LIST`, ...).
    pub fn name(self) -> &'static str {
        match self {
            ConfigType::Boolean => "BOOLEAN",
            ConfigType::String => "STRING",
            ConfigType::Int => "INT",
            ConfigType::Short => "SHORT",
            ConfigType::Long => "LONG",
            ConfigType::Double => "DOUBLE",
            ConfigType::List => "LIST",
            ConfigType::Class => "CLASS",
            ConfigType::Password => "PASSWORD",
        }
    }
}

/// How important a key is (documentation only).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Importance {
    /// HIGH.
    High,
    /// MEDIUM.
    #[default]
    Medium,
    /// LOW.
    Low,
}

impl Importance {
    /// Kafka's name.
    pub fn name(self) -> &'static str {
        match self {
            Importance::High => "HIGH",
            Importance::Medium => "MEDIUM",
            Importance::Low => "LOW",
        }
    }
}

/// Display width hint for UIs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Width {
    /// NONE.
    #[default]
    None,
    /// SHORT.
    Short,
    /// MEDIUM.
    Medium,
    /// LONG.
    Long,
}

impl Width {
    /// Kafka's name.
    pub fn name(self) -> &'static str {
        match self {
            Width::None => "NONE",
            Width::Short => "SHORT",
            Width::Medium => "MEDIUM",
            Width::Long => "LONG",
        }
    }
}

/// A secret value. `Debug` and `Display` print `[hidden]`; only
/// [`Password::value`] reveals it.
///
/// ```
/// use connect_api::config::Password;
/// let p = Password::new("s3cret");
/// assert_eq!(format!("{p} {p:?}"), "[hidden] [hidden]");
/// assert_eq!(p.value(), "s3cret");
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct Password(String);

impl Password {
    /// Wrap a secret.
    pub fn new(secret: impl Into<String>) -> Self {
        Password(secret.into())
    }
    /// The secret itself.
    pub fn value(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Password {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[hidden]")
    }
}

impl fmt::Display for Password {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[hidden]")
    }
}

/// A parsed config value.
#[derive(Debug, Clone, PartialEq)]
pub enum ConfigValue {
    /// No value (an optional key left unset).
    Null,
    /// BOOLEAN.
    Boolean(bool),
    /// STRING or CLASS.
    String(String),
    /// INT.
    Int(i32),
    /// SHORT.
    Short(i16),
    /// LONG.
    Long(i64),
    /// DOUBLE.
    Double(f64),
    /// LIST.
    List(Vec<String>),
    /// PASSWORD.
    Password(Password),
}

impl ConfigValue {
    /// The value as the string a user would write (passwords hidden).
    pub fn to_config_string(&self) -> Option<String> {
        Some(match self {
            ConfigValue::Null => return None,
            ConfigValue::Boolean(b) => b.to_string(),
            ConfigValue::String(s) => s.clone(),
            ConfigValue::Int(v) => v.to_string(),
            ConfigValue::Short(v) => v.to_string(),
            ConfigValue::Long(v) => v.to_string(),
            ConfigValue::Double(v) => v.to_string(),
            ConfigValue::List(l) => l.join(","),
            ConfigValue::Password(_) => "[hidden]".to_string(),
        })
    }

    /// A number as f64 (for range checks).
    fn as_f64(&self) -> Option<f64> {
        match *self {
            ConfigValue::Int(v) => Some(v.into()),
            ConfigValue::Short(v) => Some(v.into()),
            ConfigValue::Long(v) => Some(v as f64),
            ConfigValue::Double(v) => Some(v),
            _ => None,
        }
    }
}

impl From<&str> for ConfigValue {
    fn from(s: &str) -> Self {
        ConfigValue::String(s.to_string())
    }
}
impl From<String> for ConfigValue {
    fn from(s: String) -> Self {
        ConfigValue::String(s)
    }
}
impl From<bool> for ConfigValue {
    fn from(b: bool) -> Self {
        ConfigValue::Boolean(b)
    }
}
impl From<i16> for ConfigValue {
    fn from(v: i16) -> Self {
        ConfigValue::Short(v)
    }
}
impl From<i32> for ConfigValue {
    fn from(v: i32) -> Self {
        ConfigValue::Int(v)
    }
}
impl From<i64> for ConfigValue {
    fn from(v: i64) -> Self {
        ConfigValue::Long(v)
    }
}
impl From<f64> for ConfigValue {
    fn from(v: f64) -> Self {
        ConfigValue::Double(v)
    }
}
impl From<Vec<String>> for ConfigValue {
    fn from(v: Vec<String>) -> Self {
        ConfigValue::List(v)
    }
}

/// Parse `raw` as `ty` with Kafka's rules.
pub fn parse_value(ty: ConfigType, raw: &str) -> std::result::Result<ConfigValue, String> {
    let t = java_trim(raw);
    let num_err = |kind: &str| format!("Expected value to be a {kind}, but it was '{raw}'");
    Ok(match ty {
        ConfigType::Boolean => {
            if t.eq_ignore_ascii_case("true") {
                ConfigValue::Boolean(true)
            } else if t.eq_ignore_ascii_case("false") {
                ConfigValue::Boolean(false)
            } else {
                return Err("Expected value to be either true or false".to_string());
            }
        }
        ConfigType::String | ConfigType::Class => ConfigValue::String(t.to_string()),
        // Passwords are taken verbatim: spaces may be part of a secret.
        ConfigType::Password => ConfigValue::Password(Password::new(raw)),
        ConfigType::Int => ConfigValue::Int(t.parse().map_err(|_| num_err("32-bit integer"))?),
        ConfigType::Short => ConfigValue::Short(t.parse().map_err(|_| num_err("16-bit integer"))?),
        ConfigType::Long => ConfigValue::Long(t.parse().map_err(|_| num_err("64-bit integer"))?),
        ConfigType::Double => ConfigValue::Double(t.parse().map_err(|_| num_err("double"))?),
        ConfigType::List => ConfigValue::List(parse_list(t)),
    })
}

/// A LIST value as Kafka parses it: comma-separated, each entry trimmed,
/// `""` the empty list; empty entries (`a,,b`) are kept.
///
/// ```
/// use connect_api::config::parse_list;
///
/// assert_eq!(parse_list(" a, b ,c"), ["a", "b", "c"]);
/// assert!(parse_list("  ").is_empty());
/// assert_eq!(parse_list("a,,b"), ["a", "", "b"]);
/// ```
pub fn parse_list(value: &str) -> Vec<String> {
    let value = java_trim(value);
    if value.is_empty() {
        return Vec::new();
    }
    value.split(',').map(|s| java_trim(s).to_string()).collect()
}

/// `s` without what Java's `String.trim()` removes: every character up to
/// U+0020 at either end (control characters included, Unicode spaces
/// such as U+00A0 kept), so a value trims as in Kafka.
fn java_trim(s: &str) -> &str {
    s.trim_matches(|c: char| c <= ' ')
}

/// A check on one parsed config value.
///
/// ```
/// use connect_api::config::{ConfigValue, Validator};
///
/// /// A topic name Kafka accepts.
/// struct TopicName;
/// impl Validator for TopicName {
///     fn ensure_valid(&self, _: &str, v: &ConfigValue) -> Result<(), String> {
///         match v {
///             ConfigValue::String(s) if !s.is_empty() && s.len() <= 249
///                 && s.chars().all(|c| c.is_ascii_alphanumeric() || "._-".contains(c)) => Ok(()),
///             _ => Err("must be 1-249 characters of [a-zA-Z0-9._-]".into()),
///         }
///     }
///     fn describe(&self) -> String { "a Kafka topic name".into() }
/// }
/// assert!(TopicName.ensure_valid("topic", &"orders".into()).is_ok());
/// assert!(TopicName.ensure_valid("topic", &"a,b".into()).is_err());
/// ```
pub trait Validator: Send + Sync {
    /// `Err(message)` when `value` is not acceptable for key `name`.
    fn ensure_valid(&self, name: &str, value: &ConfigValue) -> std::result::Result<(), String>;
    /// A short description shown in docs (`[1,...]`, `[none, all]`).
    fn describe(&self) -> String {
        String::new()
    }
    /// Values a UI may offer (REST `recommended_values`).
    fn recommended(&self) -> Vec<String> {
        Vec::new()
    }
}

/// Built-in validators, as Kafka's `ConfigDef.*` validators.
pub mod validators {
    use super::*;

    /// A number within `[min, max]` (either bound optional).
    #[derive(Debug, Clone, Copy)]
    pub struct Range {
        min: Option<f64>,
        max: Option<f64>,
    }

    impl Range {
        /// At least `min`.
        pub fn at_least(min: impl Into<f64>) -> Self {
            Range {
                min: Some(min.into()),
                max: None,
            }
        }
        /// Between `min` and `max` inclusive.
        pub fn between(min: impl Into<f64>, max: impl Into<f64>) -> Self {
            Range {
                min: Some(min.into()),
                max: Some(max.into()),
            }
        }
    }

    fn num(v: f64) -> String {
        if v.fract() == 0.0 && v.abs() < 1e15 {
            format!("{}", v as i64)
        } else {
            v.to_string()
        }
    }

    impl Validator for Range {
        fn ensure_valid(&self, _: &str, value: &ConfigValue) -> std::result::Result<(), String> {
            let Some(v) = value.as_f64() else {
                return if matches!(value, ConfigValue::Null) {
                    Err("Value must be non-null".into())
                } else {
                    Ok(())
                };
            };
            if let Some(min) = self.min {
                if v < min {
                    return Err(format!("Value must be at least {}", num(min)));
                }
            }
            if let Some(max) = self.max {
                if v > max {
                    return Err(format!("Value must be no more than {}", num(max)));
                }
            }
            Ok(())
        }
        fn describe(&self) -> String {
            match (self.min, self.max) {
                (Some(a), Some(b)) => format!("[{},...,{}]", num(a), num(b)),
                (Some(a), None) => format!("[{},...]", num(a)),
                (None, Some(b)) => format!("[...,{}]", num(b)),
                (None, None) => "[...]".into(),
            }
        }
    }

    /// One of a fixed set of strings (exact case, or any case).
    #[derive(Debug, Clone)]
    pub struct ValidString {
        allowed: Vec<String>,
        case_insensitive: bool,
    }

    impl ValidString {
        /// Exactly one of `allowed`.
        pub fn of<S: Into<String>>(allowed: impl IntoIterator<Item = S>) -> Self {
            ValidString {
                allowed: allowed.into_iter().map(Into::into).collect(),
                case_insensitive: false,
            }
        }
        /// One of `allowed`, ignoring case.
        pub fn case_insensitive<S: Into<String>>(allowed: impl IntoIterator<Item = S>) -> Self {
            ValidString {
                allowed: allowed.into_iter().map(Into::into).collect(),
                case_insensitive: true,
            }
        }
        fn accepts(&self, s: &str) -> bool {
            self.allowed.iter().any(|a| {
                if self.case_insensitive {
                    a.eq_ignore_ascii_case(s)
                } else {
                    a == s
                }
            })
        }
    }

    impl Validator for ValidString {
        fn ensure_valid(&self, _: &str, value: &ConfigValue) -> std::result::Result<(), String> {
            match value {
                ConfigValue::String(s) if self.accepts(s) => Ok(()),
                ConfigValue::Null => Ok(()),
                other => Err(format!(
                    "String must be one of{}: {}",
                    if self.case_insensitive {
                        " (case insensitive)"
                    } else {
                        ""
                    },
                    self.allowed.join(", ")
                ))
                .map_err(|m| match other {
                    ConfigValue::String(_) => m,
                    _ => format!("{m} (got a non-string value)"),
                }),
            }
        }
        fn describe(&self) -> String {
            format!("[{}]", self.allowed.join(", "))
        }
        fn recommended(&self) -> Vec<String> {
            self.allowed.clone()
        }
    }

    /// Every element of a LIST in a fixed set.
    #[derive(Debug, Clone)]
    pub struct ValidList(pub ValidString);

    impl ValidList {
        /// Elements from `allowed`.
        pub fn of<S: Into<String>>(allowed: impl IntoIterator<Item = S>) -> Self {
            ValidList(ValidString::of(allowed))
        }
    }

    impl Validator for ValidList {
        fn ensure_valid(&self, name: &str, value: &ConfigValue) -> std::result::Result<(), String> {
            if let ConfigValue::List(items) = value {
                for item in items {
                    self.0
                        .ensure_valid(name, &ConfigValue::String(item.clone()))
                        .map_err(|_| {
                            format!(
                                "Invalid value {item}; list elements must be one of: {}",
                                self.0.allowed.join(", ")
                            )
                        })?;
                }
            }
            Ok(())
        }
        fn describe(&self) -> String {
            self.0.describe()
        }
        fn recommended(&self) -> Vec<String> {
            self.0.recommended()
        }
    }

    /// A string that is present and not empty (optionally without control characters).
    #[derive(Debug, Clone, Copy, Default)]
    pub struct NonEmptyString {
        /// Also reject ISO control characters.
        pub without_control_chars: bool,
    }

    impl Validator for NonEmptyString {
        fn ensure_valid(&self, _: &str, value: &ConfigValue) -> std::result::Result<(), String> {
            match value {
                ConfigValue::String(s) if s.is_empty() => Err("String must be non-empty".into()),
                ConfigValue::Password(p) if p.value().is_empty() => {
                    Err("String must be non-empty".into())
                }
                ConfigValue::String(s)
                    if self.without_control_chars && s.chars().any(char::is_control) =>
                {
                    Err("String must not contain control characters".into())
                }
                ConfigValue::Null => Err("String must be non-empty".into()),
                _ => Ok(()),
            }
        }
        fn describe(&self) -> String {
            "non-empty string".into()
        }
    }

    /// Not null.
    #[derive(Debug, Clone, Copy, Default)]
    pub struct NonNull;

    impl Validator for NonNull {
        fn ensure_valid(&self, _: &str, value: &ConfigValue) -> std::result::Result<(), String> {
            match value {
                ConfigValue::Null => Err("Entry must be non null".into()),
                _ => Ok(()),
            }
        }
        fn describe(&self) -> String {
            "non-null value".into()
        }
    }

    /// `inner`'s rule for a value that is set; an unset (null) value
    /// passes. For keys without a default whose validator would refuse
    /// null (Kafka wraps [`Range`] in a lambda for such keys).
    ///
    /// ```
    /// use connect_api::config::validators::{OrNull, Range};
    /// use connect_api::config::{ConfigValue, Validator};
    ///
    /// let v = OrNull(Range::at_least(0));
    /// assert!(v.ensure_valid("k", &ConfigValue::Null).is_ok());
    /// assert!(v.ensure_valid("k", &ConfigValue::Long(-1)).is_err());
    /// ```
    #[derive(Debug, Clone, Copy, Default)]
    pub struct OrNull<V>(pub V);

    impl<V: Validator> Validator for OrNull<V> {
        fn ensure_valid(&self, name: &str, value: &ConfigValue) -> std::result::Result<(), String> {
            match value {
                ConfigValue::Null => Ok(()),
                v => self.0.ensure_valid(name, v),
            }
        }
        fn describe(&self) -> String {
            self.0.describe()
        }
        fn recommended(&self) -> Vec<String> {
            self.0.recommended()
        }
    }

    /// A LIST with a bounded number of elements.
    #[derive(Debug, Clone, Copy)]
    pub struct ListSize {
        /// Minimum number of elements.
        pub min: usize,
        /// Maximum number of elements.
        pub max: usize,
    }

    impl Validator for ListSize {
        fn ensure_valid(&self, _: &str, value: &ConfigValue) -> std::result::Result<(), String> {
            if let ConfigValue::List(items) = value {
                if items.len() < self.min {
                    return Err(format!("List must have at least {} element(s)", self.min));
                }
                if items.len() > self.max {
                    return Err(format!(
                        "List must have no more than {} element(s)",
                        self.max
                    ));
                }
            }
            Ok(())
        }
        fn describe(&self) -> String {
            format!("List of size {}..{}", self.min, self.max)
        }
    }

    /// All of several validators.
    #[derive(Clone)]
    pub struct Composite(pub Vec<Arc<dyn Validator>>);

    impl Validator for Composite {
        fn ensure_valid(&self, name: &str, value: &ConfigValue) -> std::result::Result<(), String> {
            self.0.iter().try_for_each(|v| v.ensure_valid(name, value))
        }
        fn describe(&self) -> String {
            self.0
                .iter()
                .map(|v| v.describe())
                .filter(|d| !d.is_empty())
                .collect::<Vec<_>>()
                .join(", ")
        }
        fn recommended(&self) -> Vec<String> {
            self.0.iter().flat_map(|v| v.recommended()).collect()
        }
    }

    /// A custom check from a closure, with a description.
    pub struct Lambda<F> {
        check: F,
        description: String,
    }

    impl<F> Lambda<F>
    where
        F: Fn(&str, &ConfigValue) -> std::result::Result<(), String> + Send + Sync,
    {
        /// A validator running `check`, described as `description`.
        pub fn new(description: impl Into<String>, check: F) -> Self {
            Lambda {
                check,
                description: description.into(),
            }
        }
    }

    impl<F> Validator for Lambda<F>
    where
        F: Fn(&str, &ConfigValue) -> std::result::Result<(), String> + Send + Sync,
    {
        fn ensure_valid(&self, name: &str, value: &ConfigValue) -> std::result::Result<(), String> {
            (self.check)(name, value)
        }
        fn describe(&self) -> String {
            self.description.clone()
        }
    }
}

/// The declaration of one config key.
#[derive(Clone)]
#[non_exhaustive]
pub struct ConfigKey {
    /// Key name.
    pub name: String,
    /// Value type.
    pub ty: ConfigType,
    /// Default; `None` means the key is required (Kafka's `NO_DEFAULT_VALUE`),
    /// `Some(ConfigValue::Null)` means optional with no value.
    pub default: Option<ConfigValue>,
    /// Importance.
    pub importance: Importance,
    /// Documentation.
    pub documentation: String,
    /// Validator run on every parsed value (also on defaults).
    pub validator: Option<Arc<dyn Validator>>,
    /// Group name for UIs.
    pub group: Option<String>,
    /// Order within the group.
    pub order_in_group: i32,
    /// Width hint.
    pub width: Width,
    /// Display name (defaults to the key).
    pub display_name: String,
    /// Keys whose visibility depends on this one.
    pub dependents: Vec<String>,
}

impl fmt::Debug for ConfigKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConfigKey")
            .field("name", &self.name)
            .field("ty", &self.ty)
            .field("default", &self.default)
            .field("importance", &self.importance)
            .finish_non_exhaustive()
    }
}

impl ConfigKey {
    /// A required key of type `ty` (add a default with [`default`](Self::default)).
    pub fn new(name: impl Into<String>, ty: ConfigType) -> Self {
        let name = name.into();
        ConfigKey {
            display_name: name.clone(),
            name,
            ty,
            default: None,
            importance: Importance::Medium,
            documentation: String::new(),
            validator: None,
            group: None,
            order_in_group: -1,
            width: Width::None,
            dependents: Vec::new(),
        }
    }
    /// Set the default (`ConfigValue::Null` makes the key optional without a value).
    pub fn default(mut self, value: impl Into<ConfigValue>) -> Self {
        self.default = Some(value.into());
        self
    }
    /// Optional with no default value.
    pub fn optional(mut self) -> Self {
        self.default = Some(ConfigValue::Null);
        self
    }
    /// Set the importance.
    pub fn importance(mut self, importance: Importance) -> Self {
        self.importance = importance;
        self
    }
    /// Set the documentation.
    pub fn doc(mut self, doc: impl Into<String>) -> Self {
        self.documentation = doc.into();
        self
    }
    /// Set the validator.
    pub fn validator(mut self, v: impl Validator + 'static) -> Self {
        self.validator = Some(Arc::new(v));
        self
    }
    /// Set group and order.
    pub fn group(mut self, group: impl Into<String>, order: i32) -> Self {
        self.group = Some(group.into());
        self.order_in_group = order;
        self
    }
    /// Set the width.
    pub fn width(mut self, width: Width) -> Self {
        self.width = width;
        self
    }
    /// Set the display name.
    pub fn display_name(mut self, name: impl Into<String>) -> Self {
        self.display_name = name.into();
        self
    }
    /// Set the dependents.
    pub fn dependents<S: Into<String>>(mut self, deps: impl IntoIterator<Item = S>) -> Self {
        self.dependents = deps.into_iter().map(Into::into).collect();
        self
    }
    /// Whether the key has no default.
    pub fn is_required(&self) -> bool {
        self.default.is_none()
    }

    /// Parse and validate one raw value (or the default when `raw` is `None`).
    pub fn parse(&self, raw: Option<&str>) -> std::result::Result<ConfigValue, String> {
        let value = match (raw, &self.default) {
            (Some(r), _) => parse_value(self.ty, r).map_err(|e| {
                format!(
                    "Invalid value {} for configuration {}: {e}",
                    if self.ty == ConfigType::Password {
                        "[hidden]"
                    } else {
                        r
                    },
                    self.name
                )
            })?,
            (None, Some(d)) => d.clone(),
            (None, None) => {
                return Err(format!(
                    "Missing required configuration \"{}\" which has no default value.",
                    self.name
                ))
            }
        };
        if let Some(v) = &self.validator {
            v.ensure_valid(&self.name, &value).map_err(|e| {
                let shown = value
                    .to_config_string()
                    .unwrap_or_else(|| "null".to_string());
                format!("Invalid value {shown} for configuration {}: {e}", self.name)
            })?;
        }
        Ok(value)
    }
}

/// Per-key validation result, as Kafka's `ConfigValue` (REST `value` object).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ConfigReport {
    /// Key name.
    pub name: String,
    /// The value as given (passwords hidden), or the default.
    pub value: Option<String>,
    /// Values a UI may offer.
    pub recommended_values: Vec<String>,
    /// Problems found; empty when valid.
    pub errors: Vec<String>,
    /// Whether the key is visible.
    pub visible: bool,
}

impl ConfigReport {
    /// A report for key `name` with no value and no errors yet, visible.
    pub fn new(name: impl Into<String>) -> Self {
        ConfigReport {
            name: name.into(),
            value: None,
            recommended_values: Vec::new(),
            errors: Vec::new(),
            visible: true,
        }
    }
}

/// The set of keys a plugin accepts.
///
/// ```
/// use connect_api::config::{ConfigDef, ConfigKey, ConfigType, Importance, validators::Range};
///
/// let def = ConfigDef::new()
///     .define(ConfigKey::new("topic", ConfigType::String).importance(Importance::High).doc("Target topic."))
///     .define(ConfigKey::new("batch.size", ConfigType::Int).default(2000).doc("Lines per poll.").validator(Range::at_least(1)));
///
/// let props = [("topic".to_string(), " t ".to_string())].into_iter().collect();
/// let cfg = def.parse(&props).unwrap();
/// assert_eq!(cfg.get_string("topic"), Some("t"));
/// assert_eq!(cfg.get_int("batch.size"), Some(2000));
///
/// let bad = [("batch.size".to_string(), "0".to_string())].into_iter().collect();
/// let err = def.parse(&bad).unwrap_err().to_string();
/// assert!(err.contains("Missing required configuration \"topic\""));
/// assert!(err.contains("Value must be at least 1"));
/// ```
#[derive(Debug, Clone, Default)]
pub struct ConfigDef {
    keys: Vec<ConfigKey>,
}

impl ConfigDef {
    /// No keys.
    pub fn new() -> Self {
        ConfigDef::default()
    }
    /// Add a key (a later definition of the same name replaces the earlier one).
    pub fn define(mut self, key: ConfigKey) -> Self {
        self.keys.retain(|k| k.name != key.name);
        self.keys.push(key);
        self
    }
    /// Add every key of `other`.
    pub fn merge(mut self, other: &ConfigDef) -> Self {
        for k in &other.keys {
            self = self.define(k.clone());
        }
        self
    }
    /// The keys in definition order.
    pub fn keys(&self) -> &[ConfigKey] {
        &self.keys
    }
    /// One key.
    pub fn key(&self, name: &str) -> Option<&ConfigKey> {
        self.keys.iter().find(|k| k.name == name)
    }
    /// Names of the keys.
    pub fn names(&self) -> BTreeSet<&str> {
        self.keys.iter().map(|k| k.name.as_str()).collect()
    }

    /// Parse `props`: every declared key typed and validated. All problems
    /// are reported in one config error (the key of the first one is its key).
    /// Keys not declared are kept in [`ParsedConfig::unknown`].
    pub fn parse(&self, props: &ConfigMap) -> Result<ParsedConfig> {
        let mut values = BTreeMap::new();
        let mut errors: Vec<(String, String)> = Vec::new();
        for key in &self.keys {
            match key.parse(props.get(&key.name).map(String::as_str)) {
                Ok(v) => {
                    values.insert(key.name.clone(), v);
                }
                Err(e) => errors.push((key.name.clone(), e)),
            }
        }
        if let Some((first, _)) = errors.first() {
            let message = errors
                .iter()
                .map(|(_, e)| e.as_str())
                .collect::<Vec<_>>()
                .join("; ");
            return Err(ConnectError::config(first.clone(), message));
        }
        let unknown = props
            .keys()
            .filter(|k| self.key(k).is_none())
            .cloned()
            .collect();
        Ok(ParsedConfig {
            values,
            unknown,
            originals: props.clone(),
        })
    }

    /// Validate `props` without failing: one report per declared key, plus a
    /// report (with a warning in `errors`) for each undeclared key when
    /// `report_unknown` is set.
    pub fn validate(&self, props: &ConfigMap) -> Vec<ConfigReport> {
        self.keys
            .iter()
            .map(|key| {
                let raw = props.get(&key.name);
                let errors = match key.parse(raw.map(String::as_str)) {
                    Ok(_) => Vec::new(),
                    Err(e) => vec![e],
                };
                let value = match (raw, key.ty) {
                    (Some(_), ConfigType::Password) => Some("[hidden]".to_string()),
                    (Some(r), _) => Some(r.clone()),
                    (None, _) => key.default.as_ref().and_then(ConfigValue::to_config_string),
                };
                ConfigReport {
                    name: key.name.clone(),
                    value,
                    recommended_values: key
                        .validator
                        .as_ref()
                        .map(|v| v.recommended())
                        .unwrap_or_default(),
                    errors,
                    visible: true,
                }
            })
            .collect()
    }

    /// Keys in `props` that this definition does not declare.
    pub fn unknown_keys<'a>(&self, props: &'a ConfigMap) -> Vec<&'a str> {
        props
            .keys()
            .filter(|k| self.key(k).is_none())
            .map(String::as_str)
            .collect()
    }
}

/// The typed result of [`ConfigDef::parse`].
///
/// `Debug` shows the typed values only (passwords as `[hidden]`), never the
/// raw originals, which may hold secrets.
#[derive(Clone)]
pub struct ParsedConfig {
    values: BTreeMap<String, ConfigValue>,
    unknown: Vec<String>,
    originals: ConfigMap,
}

impl fmt::Debug for ParsedConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ParsedConfig")
            .field("values", &self.values)
            .field("unknown", &self.unknown)
            .finish_non_exhaustive()
    }
}

impl ParsedConfig {
    /// The typed value of a declared key.
    pub fn get(&self, name: &str) -> Option<&ConfigValue> {
        self.values.get(name)
    }
    /// STRING or CLASS value.
    pub fn get_string(&self, name: &str) -> Option<&str> {
        match self.values.get(name)? {
            ConfigValue::String(s) => Some(s),
            _ => None,
        }
    }
    /// BOOLEAN value.
    pub fn get_bool(&self, name: &str) -> Option<bool> {
        match self.values.get(name)? {
            ConfigValue::Boolean(b) => Some(*b),
            _ => None,
        }
    }
    /// INT value.
    pub fn get_int(&self, name: &str) -> Option<i32> {
        match self.values.get(name)? {
            ConfigValue::Int(v) => Some(*v),
            _ => None,
        }
    }
    /// SHORT value.
    pub fn get_short(&self, name: &str) -> Option<i16> {
        match self.values.get(name)? {
            ConfigValue::Short(v) => Some(*v),
            _ => None,
        }
    }
    /// LONG value (INT values widen).
    pub fn get_long(&self, name: &str) -> Option<i64> {
        match self.values.get(name)? {
            ConfigValue::Long(v) => Some(*v),
            ConfigValue::Int(v) => Some((*v).into()),
            _ => None,
        }
    }
    /// DOUBLE value.
    pub fn get_double(&self, name: &str) -> Option<f64> {
        match self.values.get(name)? {
            ConfigValue::Double(v) => Some(*v),
            _ => None,
        }
    }
    /// LIST value.
    pub fn get_list(&self, name: &str) -> Option<&[String]> {
        match self.values.get(name)? {
            ConfigValue::List(l) => Some(l),
            _ => None,
        }
    }
    /// PASSWORD value.
    pub fn get_password(&self, name: &str) -> Option<&Password> {
        match self.values.get(name)? {
            ConfigValue::Password(p) => Some(p),
            _ => None,
        }
    }

    /// The value of `name`, which parsing guarantees for a key with a
    /// default or a required one: no `Option` to unwrap. An error names the
    /// key when it has no value (declared optional and not given) or
    /// another type.
    ///
    /// ```
    /// use connect_api::config::{ConfigDef, ConfigKey, ConfigMap, ConfigType};
    ///
    /// let def = ConfigDef::new()
    ///     .define(ConfigKey::new("batch.size", ConfigType::Int).default(100))
    ///     .define(ConfigKey::new("topic", ConfigType::String));
    /// let parsed = def.parse(&ConfigMap::from([("topic", "orders")])).unwrap();
    /// assert_eq!(parsed.int("batch.size").unwrap(), 100);
    /// assert_eq!(parsed.string("topic").unwrap(), "orders");
    /// assert!(parsed.long("topic").unwrap_err().to_string().contains("topic"));
    /// ```
    pub fn int(&self, name: &str) -> Result<i32> {
        self.required(name, "INT", self.get_int(name))
    }
    /// [`ParsedConfig::int`] for a SHORT key.
    pub fn short(&self, name: &str) -> Result<i16> {
        self.required(name, "SHORT", self.get_short(name))
    }
    /// [`ParsedConfig::int`] for a LONG (or INT) key.
    pub fn long(&self, name: &str) -> Result<i64> {
        self.required(name, "LONG", self.get_long(name))
    }
    /// [`ParsedConfig::int`] for a DOUBLE key.
    pub fn double(&self, name: &str) -> Result<f64> {
        self.required(name, "DOUBLE", self.get_double(name))
    }
    /// [`ParsedConfig::int`] for a BOOLEAN key.
    pub fn boolean(&self, name: &str) -> Result<bool> {
        self.required(name, "BOOLEAN", self.get_bool(name))
    }
    /// [`ParsedConfig::int`] for a STRING or CLASS key.
    pub fn string(&self, name: &str) -> Result<&str> {
        self.required(name, "STRING", self.get_string(name))
    }
    /// [`ParsedConfig::int`] for a LIST key.
    pub fn list(&self, name: &str) -> Result<&[String]> {
        self.required(name, "LIST", self.get_list(name))
    }
    /// [`ParsedConfig::int`] for a PASSWORD key.
    pub fn password(&self, name: &str) -> Result<&Password> {
        self.required(name, "PASSWORD", self.get_password(name))
    }

    fn required<T>(&self, name: &str, ty: &str, value: Option<T>) -> Result<T> {
        value.ok_or_else(|| {
            let why = match self.values.get(name) {
                Some(_) => format!("is not of type {ty}: read it with its declared type's getter"),
                None => "has no value: it is optional and was not given (declare a default, or read it with the get_ getter)".to_string(),
            };
            ConnectError::config(name, format!("Configuration {name} {why}"))
        })
    }
    /// Keys given but not declared (the runtime logs them as warnings).
    pub fn unknown(&self) -> &[String] {
        &self.unknown
    }
    /// The raw map that was parsed.
    pub fn originals(&self) -> &ConfigMap {
        &self.originals
    }
    /// Raw entries whose key starts with `prefix`, with the prefix removed
    /// (Kafka's `originalsWithPrefix`).
    pub fn originals_with_prefix(&self, prefix: &str) -> ConfigMap {
        with_prefix(&self.originals, prefix)
    }
}

/// Entries of `map` whose key starts with `prefix`, prefix removed.
pub fn with_prefix(map: &ConfigMap, prefix: &str) -> ConfigMap {
    map.range(prefix.to_string()..)
        .take_while(|(k, _)| k.starts_with(prefix))
        .map(|(k, v)| (k[prefix.len()..].to_string(), v.clone()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::validators::*;
    use super::*;

    fn props(pairs: &[(&str, &str)]) -> ConfigMap {
        ConfigMap::from_pairs(pairs.iter().copied())
    }

    #[test]
    fn values_trim_as_java_trims() {
        // Control characters go, a no-break space stays (String.trim()).
        let v = parse_value(ConfigType::String, "\u{1} abc\u{a0}\t").unwrap();
        assert!(
            matches!(&v, ConfigValue::String(s) if s == "abc\u{a0}"),
            "{v:?}"
        );
        assert_eq!(parse_list("\u{1}a ,\u{1f}b"), ["a", "b"]);
        assert!(parse_value(ConfigType::Int, "\u{a0}7").is_err());
    }

    #[test]
    fn config_map_debug_hides_secrets_and_keeps_the_rest() {
        let config = props(&[
            ("connection.password", "p1"),
            ("ssl.key.password", "p2"),
            ("sasl.jaas.config", "p3"),
            ("basic.auth.user.info", "p4"),
            ("aws.secret.access.key", "p5"),
            ("ssl.keystore.key", "p6"),
            ("Client.Credentials", "p7"),
            ("topic", "orders"),
            ("key.converter", "JsonConverter"),
        ]);
        let printed = format!("{config:?}");
        for secret in ["p1", "p2", "p3", "p4", "p5", "p6", "p7"] {
            assert!(!printed.contains(secret), "{secret} printed in {printed}");
        }
        assert!(printed.contains(r#""topic": "orders""#), "{printed}");
        assert!(
            printed.contains(r#""key.converter": "JsonConverter""#),
            "{printed}"
        );
        assert!(
            printed.contains(r#""ssl.key.password": "[hidden]""#),
            "{printed}"
        );
        // Masking is for printing only: the values are all there.
        assert_eq!(config["connection.password"], "p1");
        assert!(!ConfigMap::is_secret_key("key.converter"));
        assert!(!ConfigMap::is_secret_key("ssl.keystore.location"));
    }

    #[test]
    fn config_map_from_pairs_keeps_the_last_value_and_reads_as_a_map() {
        let config = ConfigMap::from_pairs([("a", "1"), ("b", "2"), ("a", "3")]);
        assert_eq!(config.len(), 2);
        assert_eq!(config.get("a").map(String::as_str), Some("3"));
        assert_eq!(config, ConfigMap::from([("b", "2"), ("a", "3")]));
        let keys: Vec<&String> = config.keys().collect();
        assert_eq!(keys, ["a", "b"]);
        let back: BTreeMap<String, String> = config.clone().into();
        assert_eq!(ConfigMap::from(back), config);
    }

    #[test]
    fn config_map_is_a_plain_json_object() {
        let config = props(&[("topic", "orders"), ("connection.password", "p")]);
        let json = serde_json::to_string(&config).unwrap();
        assert_eq!(json, r#"{"connection.password":"p","topic":"orders"}"#);
        let back: ConfigMap = serde_json::from_str(&json).unwrap();
        assert_eq!(back, config);
        assert!(serde_json::from_str::<ConfigMap>(r#"{"a":1}"#).is_err());
    }

    #[test]
    fn parsing_rules() {
        assert_eq!(
            parse_value(ConfigType::Boolean, " TRUE ").unwrap(),
            ConfigValue::Boolean(true)
        );
        assert!(parse_value(ConfigType::Boolean, "yes").is_err());
        assert_eq!(
            parse_value(ConfigType::List, "a, b ,c").unwrap(),
            ConfigValue::List(vec!["a".into(), "b".into(), "c".into()])
        );
        assert_eq!(
            parse_value(ConfigType::List, "").unwrap(),
            ConfigValue::List(vec![])
        );
        assert_eq!(
            parse_value(ConfigType::String, "  x ").unwrap(),
            ConfigValue::String("x".into())
        );
        assert!(parse_value(ConfigType::Int, "2147483648").is_err());
        assert_eq!(
            parse_value(ConfigType::Long, "2147483648").unwrap(),
            ConfigValue::Long(2_147_483_648)
        );
        assert!(parse_value(ConfigType::Short, "40000").is_err());
        assert!(parse_value(ConfigType::Double, "abc").is_err());
        assert_eq!(
            parse_value(ConfigType::Double, "1.5").unwrap(),
            ConfigValue::Double(1.5)
        );
    }

    #[test]
    fn validators_reject_bad_input() {
        let r = Range::between(1, 10);
        assert!(r.ensure_valid("k", &ConfigValue::Int(0)).is_err());
        assert!(r.ensure_valid("k", &ConfigValue::Int(11)).is_err());
        assert!(r.ensure_valid("k", &ConfigValue::Long(5)).is_ok());
        let s = ValidString::of(["none", "all"]);
        assert!(s.ensure_valid("k", &"all".into()).is_ok());
        assert!(s.ensure_valid("k", &"ALL".into()).is_err());
        let ci = ValidString::case_insensitive(["none", "all"]);
        assert!(ci.ensure_valid("k", &"ALL".into()).is_ok());
        let l = ValidList::of(["a", "b"]);
        assert!(l
            .ensure_valid("k", &ConfigValue::List(vec!["a".into(), "c".into()]))
            .is_err());
        let ne = NonEmptyString::default();
        assert!(ne.ensure_valid("k", &"".into()).is_err());
        let nc = NonEmptyString {
            without_control_chars: true,
        };
        assert!(nc.ensure_valid("k", &"a\u{1}".into()).is_err());
        assert!(NonNull.ensure_valid("k", &ConfigValue::Null).is_err());
        let size = ListSize { min: 1, max: 2 };
        assert!(size.ensure_valid("k", &ConfigValue::List(vec![])).is_err());
        let c = Composite(vec![
            Arc::new(Range::at_least(0)),
            Arc::new(Range::between(-5, 5)),
        ]);
        assert!(c.ensure_valid("k", &ConfigValue::Int(6)).is_err());
        assert!(c.ensure_valid("k", &ConfigValue::Int(-1)).is_err());
        let even = Lambda::new("even", |_: &str, v: &ConfigValue| match v {
            ConfigValue::Int(i) if i % 2 == 0 => Ok(()),
            _ => Err("must be even".to_string()),
        });
        assert!(even.ensure_valid("k", &ConfigValue::Int(3)).is_err());
    }

    #[test]
    fn validate_reports_every_key() {
        let def = ConfigDef::new()
            .define(ConfigKey::new("a", ConfigType::Int))
            .define(
                ConfigKey::new("b", ConfigType::Int)
                    .default(1)
                    .validator(Range::at_least(1)),
            )
            .define(ConfigKey::new("secret", ConfigType::Password).optional());
        let report = def.validate(&props(&[("b", "0"), ("secret", "hunter2"), ("zzz", "1")]));
        assert_eq!(report.len(), 3);
        assert_eq!(report[0].errors.len(), 1);
        assert_eq!(report[1].errors.len(), 1);
        assert_eq!(report[2].value.as_deref(), Some("[hidden]"));
        assert_eq!(def.unknown_keys(&props(&[("zzz", "1")])), ["zzz"]);
        let err = def.parse(&props(&[("b", "0")])).unwrap_err().to_string();
        assert!(err.contains("\"a\"") && err.contains("at least 1"), "{err}");
    }

    #[test]
    fn password_never_printed() {
        let def = ConfigDef::new().define(ConfigKey::new("p", ConfigType::Password));
        let cfg = def.parse(&props(&[("p", "hunter2")])).unwrap();
        let shown = format!("{cfg:?}");
        assert!(!shown.contains("hunter2"), "{shown}");
        assert!(shown.contains("[hidden]"), "{shown}");
        assert_eq!(cfg.get_password("p").unwrap().value(), "hunter2");
        let def = ConfigDef::new()
            .define(ConfigKey::new("p", ConfigType::Password).validator(NonEmptyString::default()));
        let err = def.parse(&props(&[("p", "")])).unwrap_err().to_string();
        assert!(err.contains("[hidden]"), "{err}");
    }

    #[test]
    fn prefix_extraction() {
        let m = props(&[("a.x", "1"), ("a.y", "2"), ("b.x", "3")]);
        assert_eq!(with_prefix(&m, "a."), props(&[("x", "1"), ("y", "2")]));
    }
}
