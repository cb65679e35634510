//! HTTP basic authentication compatible with Kafka's
//! `BasicAuthSecurityRestExtension`: the same worker key, the same JAAS file
//! and the same credentials file, so a Java user's files work unchanged.
//!
//! ```properties
//! # worker.properties
//! rest.extension.classes=org.apache.kafka.connect.rest.basic.auth.extension.BasicAuthSecurityRestExtension
//! ```
//!
//! ```text
//! # the JAAS file, named by -Djava.security.auth.login.config=... in KAFKA_OPTS
//! KafkaConnect {
//!   org.apache.kafka.connect.rest.basic.auth.extension.PropertyFileLoginModule required
//!   file="/etc/kafka/connect.password";
//! };
//! ```
//!
//! The credentials file is Java properties, `user: password` (or
//! `user=password`) per line. It is read again when it changes (size or
//! modification time), so users can be added without a restart; Kafka
//! reads it once.
//!
//! As in Kafka, the requests workers send each other with a KIP-507
//! signature (`POST /connectors/{c}/tasks`, `PUT /connectors/{c}/fence`)
//! are not asked for credentials: the signature is their check. Every
//! other request without valid credentials is answered 401 with
//! `WWW-Authenticate: Basic realm="KafkaConnect"`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use base64::Engine;
use connect_api::{ConnectError, Result};
use subtle::ConstantTimeEq;

use super::ApiError;

/// The worker key naming REST extensions.
pub const EXTENSIONS_KEY: &str = "rest.extension.classes";
/// Kafka's basic-auth extension, the one extension this worker has.
pub const BASIC_AUTH_EXTENSION: &str =
    "org.apache.kafka.connect.rest.basic.auth.extension.BasicAuthSecurityRestExtension";
/// The JAAS login module the extension reads credentials with.
const PROPERTY_FILE_MODULE: &str =
    "org.apache.kafka.connect.rest.basic.auth.extension.PropertyFileLoginModule";
/// The JAAS entry the extension uses.
const JAAS_ENTRY: &str = "KafkaConnect";
/// The Java system property naming the JAAS file, as given in `KAFKA_OPTS`.
const JAAS_PROPERTY: &str = "-Djava.security.auth.login.config=";
/// The worker key naming the JAAS file (ours; a Java worker takes it as a
/// system property).
pub const JAAS_KEY: &str = "java.security.auth.login.config";
/// Kafka's message for a refused request.
const REFUSED: &str = "User cannot access the resource.";

/// Basic authentication against a credentials file.
///
/// ```
/// # fn demo() -> connect_api::Result<()> {
/// # let dir = std::env::temp_dir().join(format!("basic-auth-doc-{}", std::process::id()));
/// # std::fs::create_dir_all(&dir).unwrap();
/// let passwords = dir.join("connect.password");
/// std::fs::write(&passwords, "admin: admin-secret\n").unwrap();
/// let auth = connect_runtime::rest::BasicAuth::from_file(&passwords);
/// // "Basic " + base64("admin:admin-secret")
/// assert!(auth.accepts(Some("Basic YWRtaW46YWRtaW4tc2VjcmV0")));
/// assert!(!auth.accepts(Some("Basic YWRtaW46d3Jvbmc=")));
/// assert!(!auth.accepts(None));
/// # Ok(()) }
/// # demo().unwrap();
/// ```
#[derive(Debug)]
pub struct BasicAuth {
    file: PathBuf,
    cache: Mutex<Cached>,
}

#[derive(Debug, Default)]
struct Cached {
    /// Size and modification time of the file when last read.
    stamp: Option<(u64, Option<SystemTime>)>,
    users: HashMap<String, String>,
}

impl BasicAuth {
    /// Authentication against the credentials file `file`.
    pub fn from_file(file: &Path) -> BasicAuth {
        BasicAuth {
            file: file.to_path_buf(),
            cache: Mutex::new(Cached::default()),
        }
    }

    /// The authentication a worker's properties ask for: none without
    /// `rest.extension.classes`; with Kafka's basic-auth extension, the
    /// credentials file of the JAAS file named by the worker key
    /// `java.security.auth.login.config` (ours) or else by `KAFKA_OPTS`
    /// (`-Djava.security.auth.login.config=...`, as a Java worker is
    /// started). Any other extension, or a JAAS file that cannot be used,
    /// is an error naming what to fix: the worker does not start open
    /// when it was asked to authenticate.
    pub fn from_worker(props: &connect_api::config::ConfigMap) -> Result<Option<BasicAuth>> {
        let jaas_file = props
            .get(JAAS_KEY)
            .map(|p| p.trim())
            .filter(|p| !p.is_empty())
            .map(Path::new);
        let Some(classes) = props.get(EXTENSIONS_KEY) else {
            return Ok(None);
        };
        let classes: Vec<&str> = classes
            .split(',')
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .collect();
        if classes.is_empty() {
            return Ok(None);
        }
        if let Some(other) = classes.iter().find(|c| **c != BASIC_AUTH_EXTENSION) {
            return Err(ConnectError::config(
                EXTENSIONS_KEY,
                format!(
                    "REST extension '{other}' is not available: Java classes cannot be loaded; \
                     this worker has {BASIC_AUTH_EXTENSION} only"
                ),
            ));
        }
        let jaas = match jaas_file {
            Some(f) => f.to_path_buf(),
            None => jaas_file_from_kafka_opts(std::env::var("KAFKA_OPTS").ok().as_deref())
                .ok_or_else(|| {
                    ConnectError::config(
                        EXTENSIONS_KEY,
                        format!(
                            "{BASIC_AUTH_EXTENSION} needs a JAAS file: set KAFKA_OPTS=\"{JAAS_PROPERTY}/path/to/connect_jaas.conf\" \
                             with a {JAAS_ENTRY} entry using {PROPERTY_FILE_MODULE}"
                        ),
                    )
                })?,
        };
        let text = std::fs::read_to_string(&jaas).map_err(|e| {
            ConnectError::config(
                EXTENSIONS_KEY,
                format!("cannot read the JAAS file {}: {e}", jaas.display()),
            )
        })?;
        let file = credentials_file(&text).map_err(|why| {
            ConnectError::config(
                EXTENSIONS_KEY,
                format!("JAAS file {}: {why}", jaas.display()),
            )
        })?;
        let auth = BasicAuth::from_file(Path::new(&file));
        // Read once now: a missing credentials file stops the start.
        auth.with_users(|_| ())
            .map_err(|why| ConnectError::config(EXTENSIONS_KEY, why))?;
        Ok(Some(auth))
    }

    /// Whether an `Authorization` header value names a user of the
    /// credentials file with its password.
    pub fn accepts(&self, authorization: Option<&str>) -> bool {
        let Some((user, password)) = authorization.and_then(basic_credentials) else {
            return false;
        };
        // Compared in constant time, and a comparison also for an
        // unknown user, so the answer's timing says nothing.
        self.with_users(|users| {
            let expected = users.get(&user);
            let stored = expected.map_or(&[][..], |p| p.as_bytes());
            let same: bool = stored.ct_eq(password.as_bytes()).into();
            expected.is_some() && same
        })
        .unwrap_or(false)
    }

    /// `f` of the users and passwords, read again when the file changed.
    fn with_users<T>(
        &self,
        f: impl FnOnce(&HashMap<String, String>) -> T,
    ) -> std::result::Result<T, String> {
        let meta = std::fs::metadata(&self.file).map_err(|e| {
            format!(
                "cannot read the credentials file {}: {e}",
                self.file.display()
            )
        })?;
        let stamp = (meta.len(), meta.modified().ok());
        let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        if cache.stamp != Some(stamp) {
            let text = std::fs::read_to_string(&self.file).map_err(|e| {
                format!(
                    "cannot read the credentials file {}: {e}",
                    self.file.display()
                )
            })?;
            cache.users = crate::properties::parse_properties(&text)
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            cache.stamp = Some(stamp);
        }
        Ok(f(&cache.users))
    }
}

/// The JAAS file `-Djava.security.auth.login.config=` names in `KAFKA_OPTS`.
fn jaas_file_from_kafka_opts(opts: Option<&str>) -> Option<PathBuf> {
    opts?
        .split_whitespace()
        .find_map(|arg| arg.strip_prefix(JAAS_PROPERTY))
        .map(|p| PathBuf::from(p.trim_matches('"')))
}

/// The `file` option of the `KafkaConnect` entry of a JAAS file, which
/// must use Kafka's `PropertyFileLoginModule`.
fn credentials_file(jaas: &str) -> std::result::Result<String, String> {
    let text = strip_comments(jaas);
    let start = text
        .find(JAAS_ENTRY)
        .ok_or_else(|| format!("no {JAAS_ENTRY} entry"))?;
    let body_start = text[start..]
        .find('{')
        .ok_or_else(|| format!("the {JAAS_ENTRY} entry has no '{{'"))?
        + start
        + 1;
    let body_end = text[body_start..]
        .find('}')
        .ok_or_else(|| format!("the {JAAS_ENTRY} entry has no '}}'"))?
        + body_start;
    let body = &text[body_start..body_end];
    // One module line: `<class> <flag> key="value" ... ;`
    let module = body.split(';').map(str::trim).find(|m| !m.is_empty());
    let module = module.ok_or_else(|| format!("the {JAAS_ENTRY} entry names no login module"))?;
    let mut words = module.split_whitespace();
    let class = words.next().unwrap_or("");
    if class != PROPERTY_FILE_MODULE {
        return Err(format!(
            "login module '{class}' is not available; use {PROPERTY_FILE_MODULE}"
        ));
    }
    let options = module[class.len()..].trim_start();
    let options = options
        .split_once(char::is_whitespace)
        .map_or("", |(_flag, rest)| rest);
    jaas_option(options, "file")
        .ok_or_else(|| format!("{PROPERTY_FILE_MODULE} has no file=\"...\" option"))
}

/// Option `key` of a JAAS module's `key="value"` list.
fn jaas_option(options: &str, key: &str) -> Option<String> {
    let mut rest = options;
    while let Some(eq) = rest.find('=') {
        let name = rest[..eq].trim();
        let after = rest[eq + 1..].trim_start();
        let (value, tail) = match after.strip_prefix('"') {
            Some(quoted) => {
                let end = quoted.find('"')?;
                (&quoted[..end], &quoted[end + 1..])
            }
            None => {
                let end = after.find(char::is_whitespace).unwrap_or(after.len());
                (&after[..end], &after[end..])
            }
        };
        if name == key {
            return Some(value.to_string());
        }
        rest = tail;
    }
    None
}

/// JAAS files may have `//` and `/* */` comments (not inside a quoted
/// value: `url="ldap://host"` keeps its slashes).
fn strip_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    let mut quoted = false;
    while let Some(c) = chars.next() {
        if quoted {
            quoted = c != '"';
            out.push(c);
            continue;
        }
        match (c, chars.peek()) {
            ('"', _) => {
                quoted = true;
                out.push(c);
            }
            ('/', Some('/')) => while chars.next_if(|n| *n != '\n').is_some() {},
            ('/', Some('*')) => {
                chars.next();
                let mut previous = ' ';
                for n in chars.by_ref() {
                    if previous == '*' && n == '/' {
                        break;
                    }
                    previous = n;
                }
            }
            _ => out.push(c),
        }
    }
    out
}

/// (user, password) of a `Basic` authorization header, as Kafka's filter
/// reads it: the scheme without regard to case, base64, the first colon.
fn basic_credentials(header: &str) -> Option<(String, String)> {
    let (scheme, encoded) = header.trim().split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .ok()?;
    let text = String::from_utf8(decoded).ok()?;
    let (user, password) = text.split_once(':')?;
    if user.is_empty() {
        return None;
    }
    Some((user.to_string(), password.to_string()))
}

/// Whether a request is one workers send each other signed (KIP-507),
/// which Kafka's filter lets through without credentials.
fn internal(method: &Method, path: &str) -> bool {
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    matches!(
        (method, segments.as_slice()),
        (&Method::POST, ["connectors", _, "tasks"]) | (&Method::PUT, ["connectors", _, "fence"])
    )
}

/// The middleware: credentials checked before anything else.
pub(super) async fn require(
    State(auth): State<std::sync::Arc<BasicAuth>>,
    request: Request,
    next: Next,
) -> Response {
    if internal(request.method(), request.uri().path()) {
        return next.run(request).await;
    }
    let given = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    if auth.accepts(given) {
        return next.run(request).await;
    }
    tracing::debug!(path = %request.uri().path(), "a REST request failed authentication");
    let mut response = ApiError::new(StatusCode::UNAUTHORIZED, REFUSED).into_response();
    response.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static("Basic realm=\"KafkaConnect\""),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kafkas_jaas_file_names_the_credentials_file() {
        let jaas = r#"
            // the Connect REST users
            KafkaConnect {
              org.apache.kafka.connect.rest.basic.auth.extension.PropertyFileLoginModule required
              file="/etc/kafka/connect.password";
            };
            /* another entry */
            KafkaServer { x required; };
        "#;
        assert_eq!(
            credentials_file(jaas).unwrap(),
            "/etc/kafka/connect.password"
        );
        let slashes = format!(
            "KafkaConnect {{ /* c */ {PROPERTY_FILE_MODULE} required file=\"/srv//connect.password\"; }};"
        );
        assert_eq!(
            credentials_file(&slashes).unwrap(),
            "/srv//connect.password"
        );
        let other = "KafkaConnect { com.example.Ldap required url=\"ldap://x\"; };";
        assert!(credentials_file(other)
            .unwrap_err()
            .contains("com.example.Ldap"));
        assert!(credentials_file("Other { }")
            .unwrap_err()
            .contains("KafkaConnect"));
        let no_file = format!("KafkaConnect {{ {PROPERTY_FILE_MODULE} required; }};");
        assert!(credentials_file(&no_file).unwrap_err().contains("file="));
    }

    #[test]
    fn kafka_opts_name_the_jaas_file() {
        let opts = "-Xmx1g -Djava.security.auth.login.config=/etc/kafka/connect_jaas.conf -Dx=y";
        assert_eq!(
            jaas_file_from_kafka_opts(Some(opts)),
            Some(PathBuf::from("/etc/kafka/connect_jaas.conf"))
        );
        assert_eq!(jaas_file_from_kafka_opts(Some("-Xmx1g")), None);
        assert_eq!(jaas_file_from_kafka_opts(None), None);
    }

    #[test]
    fn basic_headers_are_read_as_kafka_reads_them() {
        let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
        assert_eq!(
            basic_credentials(&format!("BASIC {}", b64("u:p:with:colons"))),
            Some(("u".into(), "p:with:colons".into()))
        );
        assert_eq!(basic_credentials(&format!("Bearer {}", b64("u:p"))), None);
        assert_eq!(basic_credentials(&format!("Basic {}", b64(":p"))), None);
        assert_eq!(basic_credentials("Basic !!!"), None);
        assert_eq!(basic_credentials("Basic"), None);
    }

    #[test]
    fn only_the_signed_worker_requests_skip_the_check() {
        assert!(internal(&Method::POST, "/connectors/a/tasks"));
        assert!(internal(&Method::PUT, "/connectors/a/fence"));
        assert!(!internal(&Method::GET, "/connectors/a/tasks"));
        assert!(!internal(&Method::POST, "/connectors/a/tasks/0/restart"));
        assert!(!internal(&Method::POST, "/connectors"));
    }
}
