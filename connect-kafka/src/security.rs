//! Security settings with Kafka's client keys, read once here for every
//! client (the group connection and the librdkafka adapter):
//! `security.protocol`, `sasl.mechanism`, `sasl.jaas.config` and the
//! `ssl.*` stores.
//!
//! What this build carries:
//! - the four protocols `PLAINTEXT`, `SSL`, `SASL_PLAINTEXT`, `SASL_SSL`;
//! - the SASL mechanisms `PLAIN`, `SCRAM-SHA-256` and `SCRAM-SHA-512`,
//!   with credentials from a `PlainLoginModule` or `ScramLoginModule` JAAS
//!   line (as in Java, either module's `username`/`password` serve any of
//!   them);
//! - trusted certificates from a PEM file or inline PEM
//!   (`ssl.truststore.type=PEM`), or the system's default roots when no
//!   truststore is given;
//! - a client identity (mutual TLS) from a PEM file holding the key and
//!   the chain, inline PEM, or a PKCS#12 file; `ssl.key.password` for an
//!   encrypted key;
//! - `ssl.endpoint.identification.algorithm` (`https`, the default, checks
//!   the broker's host name against its certificate; empty does not).
//!
//! Refused with an error naming the key: JKS stores and PKCS#12
//! truststores (OpenSSL, which both clients use, cannot read them; the
//! error gives the conversion command), `GSSAPI` and `OAUTHBEARER`.
//!
//! Where `ssl.*.type` is absent Kafka assumes JKS; here a location ending
//! in `.pem`, `.crt` or `.cer` is read as PEM and one ending in `.p12` or
//! `.pfx` as PKCS#12, so a PEM file works without naming its type.

use std::fmt;
use std::path::PathBuf;

use thiserror::Error;

/// `security.protocol`.
pub const SECURITY_PROTOCOL_CONFIG: &str = "security.protocol";
/// `sasl.mechanism` (Java's name; librdkafka's is `sasl.mechanisms`).
pub const SASL_MECHANISM_CONFIG: &str = "sasl.mechanism";
/// `sasl.jaas.config`.
pub const SASL_JAAS_CONFIG: &str = "sasl.jaas.config";
/// `ssl.truststore.type` (`PEM`; Kafka's default `JKS` is refused).
pub const SSL_TRUSTSTORE_TYPE_CONFIG: &str = "ssl.truststore.type";
/// `ssl.truststore.location`: a PEM file of trusted certificates.
pub const SSL_TRUSTSTORE_LOCATION_CONFIG: &str = "ssl.truststore.location";
/// `ssl.truststore.password` (not needed for PEM; ignored).
pub const SSL_TRUSTSTORE_PASSWORD_CONFIG: &str = "ssl.truststore.password";
/// `ssl.truststore.certificates`: trusted certificates as inline PEM.
pub const SSL_TRUSTSTORE_CERTIFICATES_CONFIG: &str = "ssl.truststore.certificates";
/// `ssl.keystore.type` (`PEM` or `PKCS12`).
pub const SSL_KEYSTORE_TYPE_CONFIG: &str = "ssl.keystore.type";
/// `ssl.keystore.location`: the client's key and certificate chain.
pub const SSL_KEYSTORE_LOCATION_CONFIG: &str = "ssl.keystore.location";
/// `ssl.keystore.password` (PKCS#12 only).
pub const SSL_KEYSTORE_PASSWORD_CONFIG: &str = "ssl.keystore.password";
/// `ssl.keystore.key`: the client's private key as inline PEM.
pub const SSL_KEYSTORE_KEY_CONFIG: &str = "ssl.keystore.key";
/// `ssl.keystore.certificate.chain`: the client's chain as inline PEM.
pub const SSL_KEYSTORE_CERTIFICATE_CHAIN_CONFIG: &str = "ssl.keystore.certificate.chain";
/// `ssl.key.password`: the password of an encrypted PEM private key.
pub const SSL_KEY_PASSWORD_CONFIG: &str = "ssl.key.password";
/// `ssl.endpoint.identification.algorithm` (`https` or empty).
pub const SSL_ENDPOINT_IDENTIFICATION_CONFIG: &str = "ssl.endpoint.identification.algorithm";

/// The worker-level keys that apply to every client of a worker.
pub const SECURITY_KEYS: [&str; 14] = [
    SECURITY_PROTOCOL_CONFIG,
    SASL_MECHANISM_CONFIG,
    SASL_JAAS_CONFIG,
    SSL_TRUSTSTORE_TYPE_CONFIG,
    SSL_TRUSTSTORE_LOCATION_CONFIG,
    SSL_TRUSTSTORE_PASSWORD_CONFIG,
    SSL_TRUSTSTORE_CERTIFICATES_CONFIG,
    SSL_KEYSTORE_TYPE_CONFIG,
    SSL_KEYSTORE_LOCATION_CONFIG,
    SSL_KEYSTORE_PASSWORD_CONFIG,
    SSL_KEYSTORE_KEY_CONFIG,
    SSL_KEYSTORE_CERTIFICATE_CHAIN_CONFIG,
    SSL_KEY_PASSWORD_CONFIG,
    SSL_ENDPOINT_IDENTIFICATION_CONFIG,
];

/// The JAAS login modules whose line carries `username` and `password`.
const PLAIN_LOGIN_MODULE: &str = "org.apache.kafka.common.security.plain.PlainLoginModule";
const SCRAM_LOGIN_MODULE: &str = "org.apache.kafka.common.security.scram.ScramLoginModule";

/// A SASL mechanism this build implements.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SaslMechanism {
    /// `PLAIN` (RFC 4616): the password is sent as is (use it over TLS).
    Plain,
    /// `SCRAM-SHA-256` (RFC 5802, RFC 7677).
    ScramSha256,
    /// `SCRAM-SHA-512`.
    ScramSha512,
}

impl SaslMechanism {
    /// The mechanism's name, as in `sasl.mechanism`.
    pub fn name(self) -> &'static str {
        match self {
            SaslMechanism::Plain => "PLAIN",
            SaslMechanism::ScramSha256 => "SCRAM-SHA-256",
            SaslMechanism::ScramSha512 => "SCRAM-SHA-512",
        }
    }
}

/// The mechanism and the credentials of a SASL login. `Debug` hides the
/// password.
#[derive(Clone, PartialEq, Eq)]
pub struct SaslCredentials {
    /// `sasl.mechanism`.
    pub mechanism: SaslMechanism,
    /// The user name.
    pub username: String,
    /// The password.
    pub password: String,
}

impl fmt::Debug for SaslCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SaslCredentials")
            .field("mechanism", &self.mechanism)
            .field("username", &self.username)
            .field("password", &"[hidden]")
            .finish()
    }
}

/// Where the certificates that sign the brokers' come from.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum TrustStore {
    /// No truststore given: the system's default roots.
    #[default]
    SystemDefault,
    /// `ssl.truststore.location`: a PEM file.
    PemFile(PathBuf),
    /// `ssl.truststore.certificates`: inline PEM.
    PemInline(String),
}

/// The client's own key and certificate chain, for brokers that ask for
/// one (`ssl.client.auth=required`). `Debug` hides keys and passwords.
#[derive(Clone, PartialEq, Eq)]
pub enum KeyStore {
    /// `ssl.keystore.type=PEM` with `ssl.keystore.location`: one file
    /// holding the private key and the certificate chain.
    PemFile(PathBuf),
    /// `ssl.keystore.key` and `ssl.keystore.certificate.chain`.
    PemInline {
        /// The certificate chain, leaf first.
        certificate_chain: String,
        /// The private key.
        key: String,
    },
    /// `ssl.keystore.type=PKCS12` with `ssl.keystore.location` and
    /// `ssl.keystore.password`.
    Pkcs12File {
        /// The file.
        location: PathBuf,
        /// Its password.
        password: Option<String>,
    },
}

impl fmt::Debug for KeyStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeyStore::PemFile(p) => f.debug_tuple("PemFile").field(p).finish(),
            KeyStore::PemInline { .. } => f.write_str("PemInline([hidden])"),
            KeyStore::Pkcs12File { location, .. } => f
                .debug_struct("Pkcs12File")
                .field("location", location)
                .field("password", &"[hidden]")
                .finish(),
        }
    }
}

/// TLS settings of `SSL` and `SASL_SSL`. `Debug` hides passwords.
#[derive(Clone, PartialEq, Eq)]
pub struct TlsConfig {
    /// The certificates trusted to sign the brokers'.
    pub trust: TrustStore,
    /// The client's identity, if the brokers ask for one.
    pub identity: Option<KeyStore>,
    /// `ssl.key.password`: the password of an encrypted PEM key.
    pub key_password: Option<String>,
    /// Whether the broker's host name must match its certificate
    /// (`ssl.endpoint.identification.algorithm=https`, the default).
    pub verify_hostname: bool,
}

impl Default for TlsConfig {
    fn default() -> Self {
        TlsConfig {
            trust: TrustStore::SystemDefault,
            identity: None,
            key_password: None,
            verify_hostname: true,
        }
    }
}

impl fmt::Debug for TlsConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsConfig")
            .field("trust", &self.trust)
            .field("identity", &self.identity)
            .field(
                "key_password",
                &self.key_password.as_ref().map(|_| "[hidden]"),
            )
            .field("verify_hostname", &self.verify_hostname)
            .finish()
    }
}

/// How a client reaches the brokers: TLS or not, SASL or not.
///
/// The default is `PLAINTEXT`: neither.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Security {
    /// Set for `SSL` and `SASL_SSL`.
    pub tls: Option<TlsConfig>,
    /// Set for `SASL_PLAINTEXT` and `SASL_SSL`.
    pub sasl: Option<SaslCredentials>,
}

/// Why the security settings were refused.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum SecurityError {
    /// A value is not one Kafka knows, or settings contradict each other.
    #[error("Invalid value {value} for configuration {key}: {reason}")]
    Invalid {
        /// The key.
        key: &'static str,
        /// The value given (never a password or a key: those are shown as
        /// `(hidden)`).
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
        /// What is missing and what to do instead.
        reason: &'static str,
    },
    /// A SASL protocol without `sasl.jaas.config`.
    #[error(
        "Missing required configuration \"sasl.jaas.config\" for security.protocol={protocol} \
         (e.g. {PLAIN_LOGIN_MODULE} required username=\"alice\" password=\"alice-secret\";)"
    )]
    MissingJaas {
        /// `SASL_PLAINTEXT` or `SASL_SSL`.
        protocol: &'static str,
    },
}

const OTHER_MECHANISMS: &str = "GSSAPI and OAUTHBEARER are not implemented; use PLAIN, \
                                SCRAM-SHA-256 or SCRAM-SHA-512";
const JKS: &str = "JKS stores cannot be read by OpenSSL, which the clients use: export the \
                   trusted certificates as PEM (keytool -exportcert -rfc) and set \
                   ssl.truststore.type=PEM, or convert a keystore to PKCS12 (keytool \
                   -importkeystore -deststoretype PKCS12) or PEM";
const PKCS12_TRUST: &str = "librdkafka reads trusted certificates from PEM only: export them \
                            (openssl pkcs12 -in FILE -nokeys -out ca.pem) and set \
                            ssl.truststore.type=PEM";

impl Security {
    /// Reads the security keys through `get` (absent keys take Kafka's
    /// defaults: `PLAINTEXT`, `GSSAPI`, `https`).
    ///
    /// ```
    /// use connect_kafka::security::{SaslMechanism, Security, TrustStore};
    ///
    /// let props = [
    ///     ("security.protocol", "SASL_SSL"),
    ///     ("sasl.mechanism", "SCRAM-SHA-512"),
    ///     ("sasl.jaas.config", r#"org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" password="alice-secret";"#),
    ///     ("ssl.truststore.type", "PEM"),
    ///     ("ssl.truststore.location", "/etc/kafka/ca.pem"),
    /// ];
    /// let get = |k: &str| props.iter().find(|(key, _)| *key == k).map(|(_, v)| *v);
    /// let security = Security::from_lookup(get)?;
    /// let sasl = security.sasl.as_ref().unwrap();
    /// assert_eq!((sasl.mechanism, sasl.username.as_str()), (SaslMechanism::ScramSha512, "alice"));
    /// let tls = security.tls.as_ref().unwrap();
    /// assert_eq!(tls.trust, TrustStore::PemFile("/etc/kafka/ca.pem".into()));
    /// assert!(tls.verify_hostname);
    /// assert_eq!(security.protocol_name(), "SASL_SSL");
    /// # Ok::<(), connect_kafka::security::SecurityError>(())
    /// ```
    pub fn from_lookup<'a>(
        get: impl Fn(&str) -> Option<&'a str>,
    ) -> Result<Security, SecurityError> {
        let protocol = get(SECURITY_PROTOCOL_CONFIG)
            .map(str::trim)
            .unwrap_or("PLAINTEXT");
        let (tls, sasl) = match protocol.to_ascii_uppercase().as_str() {
            "PLAINTEXT" => (false, None),
            "SSL" => (true, None),
            "SASL_PLAINTEXT" => (false, Some("SASL_PLAINTEXT")),
            "SASL_SSL" => (true, Some("SASL_SSL")),
            _ => {
                return Err(SecurityError::Invalid {
                    key: SECURITY_PROTOCOL_CONFIG,
                    value: protocol.to_owned(),
                    reason: "String must be one of (case insensitive): PLAINTEXT, SSL, \
                             SASL_PLAINTEXT, SASL_SSL"
                        .into(),
                })
            }
        };
        let sasl = match sasl {
            None => None,
            Some(protocol) => {
                // Kafka's default mechanism is GSSAPI.
                let mechanism = check_mechanism(
                    get(SASL_MECHANISM_CONFIG)
                        .map(str::trim)
                        .unwrap_or("GSSAPI"),
                )?;
                let jaas = get(SASL_JAAS_CONFIG)
                    .map(str::trim)
                    .filter(|j| !j.is_empty())
                    .ok_or(SecurityError::MissingJaas { protocol })?;
                let (username, password) = parse_jaas(jaas)?;
                Some(SaslCredentials {
                    mechanism,
                    username,
                    password,
                })
            }
        };
        let tls = if tls { Some(tls_config(&get)?) } else { None };
        Ok(Security { tls, sasl })
    }

    /// The `security.protocol` these settings stand for.
    pub fn protocol_name(&self) -> &'static str {
        match (self.tls.is_some(), self.sasl.is_some()) {
            (false, false) => "PLAINTEXT",
            (true, false) => "SSL",
            (false, true) => "SASL_PLAINTEXT",
            (true, true) => "SASL_SSL",
        }
    }
}

/// A store's type: the `ssl.*.type` key, else guessed from the file's
/// extension, else Kafka's default JKS.
fn store_type<'a>(
    get: &impl Fn(&str) -> Option<&'a str>,
    type_key: &'static str,
    location: Option<&str>,
) -> Result<&'static str, SecurityError> {
    if let Some(t) = get(type_key).map(str::trim).filter(|t| !t.is_empty()) {
        return match t.to_ascii_uppercase().as_str() {
            "PEM" => Ok("PEM"),
            "PKCS12" => Ok("PKCS12"),
            "JKS" => Err(SecurityError::Unsupported {
                key: type_key,
                value: t.to_owned(),
                reason: JKS,
            }),
            _ => Err(SecurityError::Invalid {
                key: type_key,
                value: t.to_owned(),
                reason: "expected PEM or PKCS12 (JKS is Kafka's default but not supported)".into(),
            }),
        };
    }
    let lower = location.unwrap_or_default().to_ascii_lowercase();
    if [".pem", ".crt", ".cer"].iter().any(|e| lower.ends_with(e)) {
        Ok("PEM")
    } else if [".p12", ".pfx"].iter().any(|e| lower.ends_with(e)) {
        Ok("PKCS12")
    } else {
        Err(SecurityError::Unsupported {
            key: type_key,
            value: "JKS (Kafka's default; set it to PEM or PKCS12)".into(),
            reason: JKS,
        })
    }
}

/// A key's value, trimmed, `None` when absent or empty.
fn non_empty<'a>(get: &impl Fn(&str) -> Option<&'a str>, key: &str) -> Option<&'a str> {
    get(key).map(str::trim).filter(|v| !v.is_empty())
}

/// The `ssl.*` keys of `SSL` and `SASL_SSL`.
fn tls_config<'a>(get: &impl Fn(&str) -> Option<&'a str>) -> Result<TlsConfig, SecurityError> {
    let both = |a: &'static str, b: &str| SecurityError::Invalid {
        key: a,
        value: "(hidden)".into(),
        reason: format!("{a} and {b} cannot both be set: give the file or the inline PEM"),
    };
    // A type naming no store Kafka knows is wrong even without a location
    // (a JKS type without one is Kafka's harmless default).
    for key in [SSL_TRUSTSTORE_TYPE_CONFIG, SSL_KEYSTORE_TYPE_CONFIG] {
        if let Some(t) = non_empty(get, key) {
            if !t.eq_ignore_ascii_case("JKS") {
                store_type(get, key, None)?;
            }
        }
    }
    let trust_location = non_empty(get, SSL_TRUSTSTORE_LOCATION_CONFIG);
    let trust_inline = non_empty(get, SSL_TRUSTSTORE_CERTIFICATES_CONFIG);
    let trust = match (trust_location, trust_inline) {
        (Some(_), Some(_)) => {
            return Err(both(
                SSL_TRUSTSTORE_CERTIFICATES_CONFIG,
                SSL_TRUSTSTORE_LOCATION_CONFIG,
            ))
        }
        (None, Some(pem)) => TrustStore::PemInline(pem.to_owned()),
        (Some(location), None) => {
            match store_type(get, SSL_TRUSTSTORE_TYPE_CONFIG, Some(location))? {
                "PEM" => TrustStore::PemFile(location.into()),
                _ => {
                    return Err(SecurityError::Unsupported {
                        key: SSL_TRUSTSTORE_TYPE_CONFIG,
                        value: "PKCS12".into(),
                        reason: PKCS12_TRUST,
                    })
                }
            }
        }
        (None, None) => TrustStore::SystemDefault,
    };
    let key_location = non_empty(get, SSL_KEYSTORE_LOCATION_CONFIG);
    let inline_key = non_empty(get, SSL_KEYSTORE_KEY_CONFIG);
    let inline_chain = non_empty(get, SSL_KEYSTORE_CERTIFICATE_CHAIN_CONFIG);
    let identity = match (key_location, inline_key, inline_chain) {
        (None, None, None) => None,
        (Some(_), Some(_), _) => {
            return Err(both(SSL_KEYSTORE_KEY_CONFIG, SSL_KEYSTORE_LOCATION_CONFIG))
        }
        (Some(_), None, Some(_)) => {
            return Err(both(
                SSL_KEYSTORE_CERTIFICATE_CHAIN_CONFIG,
                SSL_KEYSTORE_LOCATION_CONFIG,
            ))
        }
        (None, Some(key), Some(chain)) => Some(KeyStore::PemInline {
            certificate_chain: chain.to_owned(),
            key: key.to_owned(),
        }),
        (None, key, _) => {
            let (given, missing) = if key.is_some() {
                (
                    SSL_KEYSTORE_KEY_CONFIG,
                    SSL_KEYSTORE_CERTIFICATE_CHAIN_CONFIG,
                )
            } else {
                (
                    SSL_KEYSTORE_CERTIFICATE_CHAIN_CONFIG,
                    SSL_KEYSTORE_KEY_CONFIG,
                )
            };
            return Err(SecurityError::Invalid {
                key: missing,
                value: "(absent)".into(),
                reason: format!("{given} is set, so {missing} must be too"),
            });
        }
        (Some(location), None, None) => {
            match store_type(get, SSL_KEYSTORE_TYPE_CONFIG, Some(location))? {
                "PEM" => Some(KeyStore::PemFile(location.into())),
                _ => Some(KeyStore::Pkcs12File {
                    location: location.into(),
                    password: get(SSL_KEYSTORE_PASSWORD_CONFIG).map(str::to_owned),
                }),
            }
        }
    };
    let verify_hostname = match get(SSL_ENDPOINT_IDENTIFICATION_CONFIG).map(str::trim) {
        None => true,
        Some(a) if a.eq_ignore_ascii_case("https") => true,
        Some("") => false,
        Some(other) => {
            return Err(SecurityError::Invalid {
                key: SSL_ENDPOINT_IDENTIFICATION_CONFIG,
                value: other.to_owned(),
                reason: "expected https (check the broker's host name) or an empty value \
                         (do not)"
                    .into(),
            })
        }
    };
    Ok(TlsConfig {
        trust,
        identity,
        key_password: get(SSL_KEY_PASSWORD_CONFIG)
            .filter(|p| !p.is_empty())
            .map(str::to_owned),
        verify_hostname,
    })
}

/// Reads `sasl.mechanism`: `PLAIN` and the SCRAM ones are accepted; the
/// mechanisms Kafka knows but this build does not implement are
/// unsupported, anything else invalid.
pub fn check_mechanism(mechanism: &str) -> Result<SaslMechanism, SecurityError> {
    match mechanism {
        "PLAIN" => Ok(SaslMechanism::Plain),
        "SCRAM-SHA-256" => Ok(SaslMechanism::ScramSha256),
        "SCRAM-SHA-512" => Ok(SaslMechanism::ScramSha512),
        "GSSAPI" | "OAUTHBEARER" => Err(SecurityError::Unsupported {
            key: SASL_MECHANISM_CONFIG,
            value: mechanism.to_owned(),
            reason: OTHER_MECHANISMS,
        }),
        _ => Err(SecurityError::Invalid {
            key: SASL_MECHANISM_CONFIG,
            value: mechanism.to_owned(),
            reason: "unknown SASL mechanism (this build implements PLAIN, SCRAM-SHA-256 and \
                     SCRAM-SHA-512)"
                .into(),
        }),
    }
}

/// Reads a JAAS line of `PlainLoginModule` or `ScramLoginModule`:
/// `<module> required username="u" password="p";` (values quoted or bare,
/// `\"` and `\\` escapes inside quotes, other options ignored) and
/// returns the user name and the password.
///
/// The error names `sasl.jaas.config` and never shows the values.
///
/// ```
/// use connect_kafka::security::parse_jaas;
///
/// let (user, password) = parse_jaas(
///     r#"org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" password="a\"b";"#,
/// )?;
/// assert_eq!((user.as_str(), password.as_str()), ("alice", "a\"b"));
/// assert!(parse_jaas("nonsense").unwrap_err().to_string().contains("sasl.jaas.config"));
/// # Ok::<(), connect_kafka::security::SecurityError>(())
/// ```
pub fn parse_jaas(jaas: &str) -> Result<(String, String), SecurityError> {
    let invalid = |reason: String| SecurityError::Invalid {
        key: SASL_JAAS_CONFIG,
        value: "(hidden)".into(),
        reason,
    };
    let s = jaas.trim();
    let (module, rest) = s.split_once(char::is_whitespace).ok_or_else(|| {
        invalid("expected '<LoginModule> required username=\"...\" password=\"...\";'".into())
    })?;
    if module != PLAIN_LOGIN_MODULE && module != SCRAM_LOGIN_MODULE {
        return Err(invalid(format!(
            "login module `{module}` is not supported: use {PLAIN_LOGIN_MODULE} or \
             {SCRAM_LOGIN_MODULE}"
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
        (Some(username), Some(password)) => Ok((username, password)),
        (None, _) => Err(invalid("no username option".into())),
        (_, None) => Err(invalid("no password option".into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALICE: &str = r#"org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" password="alice-secret";"#;
    const ALICE_SCRAM: &str = r#"org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" password="alice-secret";"#;

    fn lookup<'a>(props: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<&'a str> {
        move |k| props.iter().find(|(key, _)| *key == k).map(|(_, v)| *v)
    }

    fn security(props: &[(&str, &str)]) -> Result<Security, SecurityError> {
        Security::from_lookup(lookup(props))
    }

    #[test]
    fn parses_jaas_lines() {
        let (u, p) = parse_jaas(ALICE).unwrap();
        assert_eq!((u.as_str(), p.as_str()), ("alice", "alice-secret"));
        let (u, _) = parse_jaas(ALICE_SCRAM).unwrap();
        assert_eq!(u, "alice");
        // Bare values, other options, extra spaces, escapes.
        let (u, p) = parse_jaas(
            "  org.apache.kafka.common.security.plain.PlainLoginModule   required\n serviceName=kafka username=bob  password = \"p w\\\\x\\\"y;z\" ;  ",
        )
        .unwrap();
        assert_eq!(u, "bob");
        assert_eq!(p, "p w\\x\"y;z");
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
            let e = parse_jaas(bad).unwrap_err();
            let msg = e.to_string();
            assert!(msg.contains("sasl.jaas.config"), "{bad}: {msg}");
            assert!(!msg.contains("s3cr3t"), "{bad}: {msg}");
        }
    }

    #[test]
    fn protocols_and_mechanisms_from_worker_keys() {
        assert_eq!(security(&[]).unwrap(), Security::default());
        assert_eq!(security(&[]).unwrap().protocol_name(), "PLAINTEXT");
        let s = security(&[
            ("security.protocol", "sasl_plaintext"),
            ("sasl.mechanism", "PLAIN"),
            ("sasl.jaas.config", ALICE),
        ])
        .unwrap();
        assert!(s.tls.is_none());
        let c = s.sasl.as_ref().unwrap();
        assert_eq!(
            (c.mechanism, c.username.as_str()),
            (SaslMechanism::Plain, "alice")
        );
        assert!(!format!("{s:?}").contains("alice-secret"));
        for (name, mechanism) in [
            ("SCRAM-SHA-256", SaslMechanism::ScramSha256),
            ("SCRAM-SHA-512", SaslMechanism::ScramSha512),
        ] {
            // Either login module's credentials serve SCRAM, as in Java.
            for jaas in [ALICE, ALICE_SCRAM] {
                let s = security(&[
                    ("security.protocol", "SASL_SSL"),
                    ("sasl.mechanism", name),
                    ("sasl.jaas.config", jaas),
                ])
                .unwrap();
                assert_eq!(s.sasl.as_ref().unwrap().mechanism, mechanism);
                assert_eq!(s.sasl.as_ref().unwrap().mechanism.name(), name);
                assert_eq!(s.tls, Some(TlsConfig::default()));
                assert_eq!(s.protocol_name(), "SASL_SSL");
            }
        }
        let s = security(&[("security.protocol", "ssl")]).unwrap();
        assert_eq!((s.tls.is_some(), s.sasl.is_none()), (true, true));
        let e = security(&[("security.protocol", "TLS")]).unwrap_err();
        assert!(matches!(
            e,
            SecurityError::Invalid {
                key: "security.protocol",
                ..
            }
        ));
        // Kafka's default mechanism is GSSAPI: refused, and said so.
        let e = security(&[
            ("security.protocol", "SASL_PLAINTEXT"),
            ("sasl.jaas.config", ALICE),
        ])
        .unwrap_err();
        assert!(e.to_string().contains("sasl.mechanism=GSSAPI"), "{e}");
        let e = security(&[
            ("security.protocol", "SASL_SSL"),
            ("sasl.mechanism", "SCRAM-SHA-1"),
            ("sasl.jaas.config", ALICE),
        ])
        .unwrap_err();
        assert!(
            matches!(
                e,
                SecurityError::Invalid {
                    key: "sasl.mechanism",
                    ..
                }
            ),
            "{e}"
        );
        let e = security(&[
            ("security.protocol", "SASL_SSL"),
            ("sasl.mechanism", "PLAIN"),
        ])
        .unwrap_err();
        assert_eq!(
            e,
            SecurityError::MissingJaas {
                protocol: "SASL_SSL"
            }
        );
        assert!(e.to_string().contains("sasl.jaas.config"));
    }

    #[test]
    fn tls_stores_from_ssl_keys() {
        let tls = |props: &[(&str, &str)]| {
            let mut all = vec![("security.protocol", "SSL")];
            all.extend_from_slice(props);
            security(&all).map(|s| s.tls.unwrap())
        };
        // PEM by type, or by extension.
        let t = tls(&[
            ("ssl.truststore.type", "PEM"),
            ("ssl.truststore.location", "/x/trust"),
        ])
        .unwrap();
        assert_eq!(t.trust, TrustStore::PemFile("/x/trust".into()));
        let t = tls(&[("ssl.truststore.location", "/x/ca.pem")]).unwrap();
        assert_eq!(t.trust, TrustStore::PemFile("/x/ca.pem".into()));
        let t = tls(&[("ssl.truststore.certificates", "-----BEGIN CERTIFICATE-----")]).unwrap();
        assert!(matches!(t.trust, TrustStore::PemInline(_)));
        // Identities: a PEM file, inline PEM, PKCS#12.
        let t = tls(&[
            ("ssl.keystore.location", "/x/client.pem"),
            ("ssl.key.password", "kp"),
        ])
        .unwrap();
        assert_eq!(t.identity, Some(KeyStore::PemFile("/x/client.pem".into())));
        assert_eq!(t.key_password.as_deref(), Some("kp"));
        assert!(!format!("{t:?}").contains("kp\""));
        let t = tls(&[
            ("ssl.keystore.key", "KEY-BYTES"),
            ("ssl.keystore.certificate.chain", "CHAIN"),
        ])
        .unwrap();
        assert!(matches!(t.identity, Some(KeyStore::PemInline { .. })));
        assert!(!format!("{t:?}").contains("KEY-BYTES"));
        let t = tls(&[
            ("ssl.keystore.type", "PKCS12"),
            ("ssl.keystore.location", "/x/client"),
            ("ssl.keystore.password", "p12pass"),
        ])
        .unwrap();
        assert_eq!(
            t.identity,
            Some(KeyStore::Pkcs12File {
                location: "/x/client".into(),
                password: Some("p12pass".into())
            })
        );
        assert!(!format!("{t:?}").contains("p12pass"));
        // Host name checks.
        assert!(tls(&[]).unwrap().verify_hostname);
        assert!(
            !tls(&[("ssl.endpoint.identification.algorithm", "")])
                .unwrap()
                .verify_hostname
        );
        let e = tls(&[("ssl.endpoint.identification.algorithm", "dns")]).unwrap_err();
        assert!(
            e.to_string()
                .contains("ssl.endpoint.identification.algorithm"),
            "{e}"
        );
    }

    #[test]
    fn stores_openssl_cannot_read_are_refused_with_the_way_out() {
        let tls = |props: &[(&str, &str)]| {
            let mut all = vec![("security.protocol", "SASL_SSL")];
            all.extend_from_slice(props);
            all.push(("sasl.mechanism", "PLAIN"));
            all.push(("sasl.jaas.config", ALICE));
            security(&all).unwrap_err()
        };
        // JKS: by type, or by default (no type, no telling extension).
        for props in [
            vec![
                ("ssl.truststore.type", "JKS"),
                ("ssl.truststore.location", "/x/t"),
            ],
            vec![("ssl.truststore.location", "/x/truststore.jks")],
            vec![("ssl.keystore.location", "/x/keystore.jks")],
        ] {
            let e = tls(&props);
            assert!(matches!(e, SecurityError::Unsupported { .. }), "{e}");
            assert!(e.to_string().contains("keytool"), "{e}");
        }
        let e = tls(&[
            ("ssl.truststore.type", "PKCS12"),
            ("ssl.truststore.location", "/x/t.p12"),
        ]);
        assert!(e.to_string().contains("openssl pkcs12"), "{e}");
        let e = tls(&[("ssl.truststore.type", "BKS")]);
        assert!(
            matches!(
                e,
                SecurityError::Invalid {
                    key: "ssl.truststore.type",
                    ..
                }
            ),
            "{e}"
        );
        // Contradictions and halves.
        let e = tls(&[
            ("ssl.truststore.location", "/x/ca.pem"),
            ("ssl.truststore.certificates", "PEM"),
        ]);
        assert!(e.to_string().contains("cannot both be set"), "{e}");
        let e = tls(&[("ssl.keystore.key", "KEY-BYTES")]);
        assert!(
            matches!(
                e,
                SecurityError::Invalid {
                    key: "ssl.keystore.certificate.chain",
                    ..
                }
            ),
            "{e}"
        );
        assert!(!e.to_string().contains("KEY-BYTES"), "{e}");
        let e = tls(&[
            ("ssl.keystore.location", "/x/k.pem"),
            ("ssl.keystore.key", "KEY-BYTES"),
        ]);
        assert!(!e.to_string().contains("KEY-BYTES"), "{e}");
        // GSSAPI and OAUTHBEARER say what is implemented.
        let e = security(&[
            ("security.protocol", "SASL_SSL"),
            ("sasl.mechanism", "OAUTHBEARER"),
            ("sasl.jaas.config", ALICE),
        ])
        .unwrap_err();
        assert!(e.to_string().contains("SCRAM-SHA-512"), "{e}");
    }
}
