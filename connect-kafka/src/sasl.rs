//! SASL settings with Kafka's worker keys: `security.protocol`,
//! `sasl.mechanism` and `sasl.jaas.config`, read once here for every
//! client (the group connection and the librdkafka adapter).
//!
//! Only what this build can carry is accepted: `PLAINTEXT`, and
//! `SASL_PLAINTEXT` with mechanism `PLAIN` (credentials from a
//! `PlainLoginModule` JAAS line). TLS (`SSL`, `SASL_SSL`) and the other
//! mechanisms (`SCRAM-SHA-256`, `SCRAM-SHA-512`, `GSSAPI`, `OAUTHBEARER`)
//! are refused with an error that says so: this build has no TLS stack and
//! no OpenSSL, which SCRAM needs in librdkafka.

use std::fmt;

use thiserror::Error;

/// `security.protocol`.
pub const SECURITY_PROTOCOL_CONFIG: &str = "security.protocol";
/// `sasl.mechanism` (Java's name; librdkafka's is `sasl.mechanisms`).
pub const SASL_MECHANISM_CONFIG: &str = "sasl.mechanism";
/// `sasl.jaas.config`.
pub const SASL_JAAS_CONFIG: &str = "sasl.jaas.config";
/// The worker-level keys that apply to every client of a worker.
pub const SECURITY_KEYS: [&str; 3] = [
    SECURITY_PROTOCOL_CONFIG,
    SASL_MECHANISM_CONFIG,
    SASL_JAAS_CONFIG,
];

/// The login module whose line carries `username` and `password`.
const PLAIN_LOGIN_MODULE: &str = "org.apache.kafka.common.security.plain.PlainLoginModule";

/// A username and password for SASL/PLAIN. `Debug` hides the password.
#[derive(Clone, PartialEq, Eq)]
pub struct PlainCredentials {
    /// The user name.
    pub username: String,
    /// The password.
    pub password: String,
}

impl fmt::Debug for PlainCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PlainCredentials")
            .field("username", &self.username)
            .field("password", &"[hidden]")
            .finish()
    }
}

/// How a client reaches the brokers.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Security {
    /// `PLAINTEXT` (the default).
    #[default]
    Plaintext,
    /// `SASL_PLAINTEXT` with mechanism `PLAIN`.
    SaslPlain(PlainCredentials),
}

/// Why the security settings were refused.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum SecurityError {
    /// A value is not one Kafka knows.
    #[error("Invalid value {value} for configuration {key}: {reason}")]
    Invalid {
        /// The key.
        key: &'static str,
        /// The value given (never a password: `sasl.jaas.config` is shown
        /// without its values).
        value: String,
        /// Why it is refused.
        reason: String,
    },
    /// A valid Kafka setting this build cannot carry.
    #[error("{key}={value} is not supported by this build: {reason}")]
    Unsupported {
        /// The key.
        key: &'static str,
        /// The value given.
        value: String,
        /// What is missing.
        reason: &'static str,
    },
    /// `security.protocol=SASL_PLAINTEXT` without `sasl.jaas.config`.
    #[error(
        "Missing required configuration \"sasl.jaas.config\" for security.protocol=SASL_PLAINTEXT \
         (e.g. {PLAIN_LOGIN_MODULE} required username=\"alice\" password=\"alice-secret\";)"
    )]
    MissingJaas,
}

const NO_TLS: &str = "TLS is not implemented (this build has no TLS stack / OpenSSL); \
                      use PLAINTEXT or SASL_PLAINTEXT";
const ONLY_PLAIN: &str = "only the PLAIN mechanism is implemented (SCRAM needs OpenSSL, which \
                          this build of librdkafka does not have; GSSAPI and OAUTHBEARER are not \
                          implemented)";

impl Security {
    /// Reads `security.protocol`, `sasl.mechanism` and `sasl.jaas.config`
    /// through `get` (absent keys take Kafka's defaults: `PLAINTEXT`,
    /// `GSSAPI`).
    ///
    /// ```
    /// use connect_kafka::sasl::{PlainCredentials, Security};
    ///
    /// let props = [
    ///     ("security.protocol", "SASL_PLAINTEXT"),
    ///     ("sasl.mechanism", "PLAIN"),
    ///     ("sasl.jaas.config", r#"org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" password="alice-secret";"#),
    /// ];
    /// let get = |k: &str| props.iter().find(|(key, _)| *key == k).map(|(_, v)| *v);
    /// assert_eq!(
    ///     Security::from_lookup(get)?,
    ///     Security::SaslPlain(PlainCredentials { username: "alice".into(), password: "alice-secret".into() })
    /// );
    /// # Ok::<(), connect_kafka::sasl::SecurityError>(())
    /// ```
    pub fn from_lookup<'a>(
        get: impl Fn(&str) -> Option<&'a str>,
    ) -> Result<Security, SecurityError> {
        let protocol = get(SECURITY_PROTOCOL_CONFIG)
            .map(str::trim)
            .unwrap_or("PLAINTEXT");
        match protocol.to_ascii_uppercase().as_str() {
            "PLAINTEXT" => Ok(Security::Plaintext),
            "SSL" | "SASL_SSL" => Err(SecurityError::Unsupported {
                key: SECURITY_PROTOCOL_CONFIG,
                value: protocol.to_owned(),
                reason: NO_TLS,
            }),
            "SASL_PLAINTEXT" => {
                // Kafka's default mechanism is GSSAPI.
                let mechanism = get(SASL_MECHANISM_CONFIG).map(str::trim).unwrap_or("GSSAPI");
                check_mechanism(mechanism)?;
                let jaas = get(SASL_JAAS_CONFIG)
                    .map(str::trim)
                    .filter(|j| !j.is_empty())
                    .ok_or(SecurityError::MissingJaas)?;
                Ok(Security::SaslPlain(parse_plain_jaas(jaas)?))
            }
            _ => Err(SecurityError::Invalid {
                key: SECURITY_PROTOCOL_CONFIG,
                value: protocol.to_owned(),
                reason:
                    "String must be one of (case insensitive): PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL"
                        .into(),
            }),
        }
    }
}

/// Accepts `PLAIN`; refuses the mechanisms Kafka knows as unsupported,
/// anything else as invalid.
pub fn check_mechanism(mechanism: &str) -> Result<(), SecurityError> {
    match mechanism {
        "PLAIN" => Ok(()),
        "SCRAM-SHA-256" | "SCRAM-SHA-512" | "GSSAPI" | "OAUTHBEARER" => {
            Err(SecurityError::Unsupported {
                key: SASL_MECHANISM_CONFIG,
                value: mechanism.to_owned(),
                reason: ONLY_PLAIN,
            })
        }
        _ => Err(SecurityError::Invalid {
            key: SASL_MECHANISM_CONFIG,
            value: mechanism.to_owned(),
            reason: "unknown SASL mechanism (this build implements PLAIN)".into(),
        }),
    }
}

/// Reads a JAAS line of `PlainLoginModule`:
/// `<module> required username="u" password="p";` (values quoted or bare,
/// `\"` and `\\` escapes inside quotes, other options ignored).
///
/// The error names `sasl.jaas.config` and never shows the values.
///
/// ```
/// use connect_kafka::sasl::parse_plain_jaas;
///
/// let c = parse_plain_jaas(
///     r#"org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" password="a\"b";"#,
/// )?;
/// assert_eq!((c.username.as_str(), c.password.as_str()), ("alice", "a\"b"));
/// assert!(parse_plain_jaas("nonsense").unwrap_err().to_string().contains("sasl.jaas.config"));
/// # Ok::<(), connect_kafka::sasl::SecurityError>(())
/// ```
pub fn parse_plain_jaas(jaas: &str) -> Result<PlainCredentials, SecurityError> {
    let invalid = |reason: String| SecurityError::Invalid {
        key: SASL_JAAS_CONFIG,
        value: "(hidden)".into(),
        reason,
    };
    let s = jaas.trim();
    let (module, rest) = s.split_once(char::is_whitespace).ok_or_else(|| {
        invalid("expected '<LoginModule> required username=\"...\" password=\"...\";'".into())
    })?;
    if module != PLAIN_LOGIN_MODULE {
        if module.ends_with("ScramLoginModule") {
            return Err(SecurityError::Unsupported {
                key: SASL_JAAS_CONFIG,
                value: module.to_owned(),
                reason: ONLY_PLAIN,
            });
        }
        return Err(invalid(format!(
            "login module `{module}` is not supported: only {PLAIN_LOGIN_MODULE} is"
        )));
    }
    let rest = rest.trim_start();
    let (flag, mut rest) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    let flag = flag.trim_end_matches(';');
    if !matches!(flag, "required" | "requisite" | "sufficient" | "optional") {
        return Err(invalid(format!(
            "expected a control flag (required) after the login module, found `{flag}`"
        )));
    }
    let (mut username, mut password) = (None, None);
    let mut ended = false;
    loop {
        rest = rest.trim_start();
        if rest.is_empty() {
            break;
        }
        if let Some(r) = rest.strip_prefix(';') {
            if !r.trim().is_empty() {
                return Err(invalid(
                    "only one login module is supported; text follows the ';'".into(),
                ));
            }
            ended = true;
            break;
        }
        let (name, r) = rest
            .split_once('=')
            .ok_or_else(|| invalid("expected name=value options".into()))?;
        let name = name.trim();
        if name.is_empty() || name.contains(char::is_whitespace) {
            return Err(invalid(format!("bad option name `{name}`")));
        }
        let r = r.trim_start();
        let (value, r) = if let Some(q) = r.strip_prefix('"') {
            let mut value = String::new();
            let mut chars = q.char_indices();
            let mut end = None;
            while let Some((i, c)) = chars.next() {
                match c {
                    '"' => {
                        end = Some(i + 1);
                        break;
                    }
                    '\\' => match chars.next() {
                        Some((_, e)) => value.push(e),
                        None => break,
                    },
                    c => value.push(c),
                }
            }
            let end =
                end.ok_or_else(|| invalid(format!("unterminated quote in option `{name}`")))?;
            (value, &q[end..])
        } else {
            let end = r
                .find(|c: char| c.is_whitespace() || c == ';')
                .unwrap_or(r.len());
            (r[..end].to_owned(), &r[end..])
        };
        match name {
            "username" => username = Some(value),
            "password" => password = Some(value),
            _ => {}
        }
        rest = r;
    }
    if !ended {
        return Err(invalid("the JAAS line must end with ';'".into()));
    }
    match (username, password) {
        (Some(username), Some(password)) => Ok(PlainCredentials { username, password }),
        (None, _) => Err(invalid("no username option".into())),
        (_, None) => Err(invalid("no password option".into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALICE: &str = r#"org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" password="alice-secret";"#;

    fn lookup<'a>(props: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<&'a str> {
        move |k| props.iter().find(|(key, _)| *key == k).map(|(_, v)| *v)
    }

    #[test]
    fn parses_plain_jaas_lines() {
        let c = parse_plain_jaas(ALICE).unwrap();
        assert_eq!(c.username, "alice");
        assert_eq!(c.password, "alice-secret");
        // Bare values, other options, extra spaces, escapes.
        let c = parse_plain_jaas(
            "  org.apache.kafka.common.security.plain.PlainLoginModule   required\n serviceName=kafka username=bob  password = \"p w\\\\x\\\"y;z\" ;  ",
        )
        .unwrap();
        assert_eq!(c.username, "bob");
        assert_eq!(c.password, "p w\\x\"y;z");
        assert!(!format!("{c:?}").contains("p w"));
    }

    #[test]
    fn bad_jaas_lines_name_the_key_and_hide_values() {
        for bad in [
            "",
            "org.apache.kafka.common.security.plain.PlainLoginModule",
            "org.apache.kafka.common.security.plain.PlainLoginModule required username=\"a\";",
            "org.apache.kafka.common.security.plain.PlainLoginModule required password=\"s3cr3t\";",
            "org.apache.kafka.common.security.plain.PlainLoginModule required username=\"a\" password=\"s3cr3t\"",
            "org.apache.kafka.common.security.plain.PlainLoginModule required username=\"a\" password=\"s3cr3t;",
            "org.apache.kafka.common.security.plain.PlainLoginModule maybe username=\"a\" password=\"s3cr3t\";",
            "com.example.Other required username=\"a\" password=\"s3cr3t\";",
            "org.apache.kafka.common.security.plain.PlainLoginModule required username password;",
        ] {
            let e = parse_plain_jaas(bad).unwrap_err();
            let msg = e.to_string();
            assert!(msg.contains("sasl.jaas.config"), "{bad}: {msg}");
            assert!(!msg.contains("s3cr3t"), "{bad}: {msg}");
        }
        let e = parse_plain_jaas(
            "org.apache.kafka.common.security.scram.ScramLoginModule required username=\"a\" password=\"b\";",
        )
        .unwrap_err();
        assert!(matches!(e, SecurityError::Unsupported { .. }), "{e}");
        assert!(e.to_string().contains("OpenSSL"), "{e}");
    }

    #[test]
    fn security_from_worker_keys() {
        assert_eq!(
            Security::from_lookup(lookup(&[])).unwrap(),
            Security::Plaintext
        );
        let s = Security::from_lookup(lookup(&[
            ("security.protocol", "sasl_plaintext"),
            ("sasl.mechanism", "PLAIN"),
            ("sasl.jaas.config", ALICE),
        ]))
        .unwrap();
        assert!(matches!(s, Security::SaslPlain(c) if c.username == "alice"));
        for p in ["SSL", "SASL_SSL"] {
            let e = Security::from_lookup(lookup(&[("security.protocol", p)])).unwrap_err();
            assert!(e.to_string().contains("TLS is not implemented"), "{e}");
        }
        let e = Security::from_lookup(lookup(&[("security.protocol", "TLS")])).unwrap_err();
        assert!(matches!(
            e,
            SecurityError::Invalid {
                key: "security.protocol",
                ..
            }
        ));
        // Kafka's default mechanism is GSSAPI: refused.
        let e = Security::from_lookup(lookup(&[
            ("security.protocol", "SASL_PLAINTEXT"),
            ("sasl.jaas.config", ALICE),
        ]))
        .unwrap_err();
        assert!(e.to_string().contains("sasl.mechanism=GSSAPI"), "{e}");
        let e = Security::from_lookup(lookup(&[
            ("security.protocol", "SASL_PLAINTEXT"),
            ("sasl.mechanism", "SCRAM-SHA-256"),
            ("sasl.jaas.config", ALICE),
        ]))
        .unwrap_err();
        assert!(e.to_string().contains("OpenSSL"), "{e}");
        let e = Security::from_lookup(lookup(&[
            ("security.protocol", "SASL_PLAINTEXT"),
            ("sasl.mechanism", "PLAIN"),
        ]))
        .unwrap_err();
        assert_eq!(e, SecurityError::MissingJaas);
        assert!(e.to_string().contains("sasl.jaas.config"));
    }
}
