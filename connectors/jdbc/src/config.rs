//! Confluent's config keys for both connectors, and the typed settings
//! parsed from them.

use connect_api::config::validators::ValidString;
use connect_api::config::{ConfigKey, Importance, ParsedConfig};
use connect_api::{ConfigDef, ConfigType, ConnectError, Result};

use crate::dialect::Dialect;
use crate::zone::DbTimeZone;

/// `connection.url`: the JDBC URL naming the database.
pub const CONNECTION_URL: &str = "connection.url";
/// `connection.user`.
pub const CONNECTION_USER: &str = "connection.user";
/// `connection.password` (a password: masked in REST answers and logs).
pub const CONNECTION_PASSWORD: &str = "connection.password";
/// `connection.attempts`: tries to connect before a task fails.
pub const CONNECTION_ATTEMPTS: &str = "connection.attempts";
/// `connection.backoff.ms`: the wait between those tries.
pub const CONNECTION_BACKOFF_MS: &str = "connection.backoff.ms";
/// `db.timezone`: the zone `TIMESTAMP` columns without a zone are in.
pub const DB_TIMEZONE: &str = "db.timezone";
/// `quote.sql.identifiers`: `always` or `never`.
pub const QUOTE_SQL_IDENTIFIERS: &str = "quote.sql.identifiers";

/// The keys both connectors share: where the database is and how to
/// reach it.
pub(crate) fn connection_def() -> ConfigDef {
    ConfigDef::new()
        .define(
            ConfigKey::new(CONNECTION_URL, ConfigType::String)
                .importance(Importance::High)
                .doc("JDBC connection URL: jdbc:postgresql://host:port/db, jdbc:mariadb://host:port/db, jdbc:mysql://host:port/db or jdbc:sqlite:path. user= and password= parameters in the URL are honoured."),
        )
        .define(
            ConfigKey::new(CONNECTION_USER, ConfigType::String)
                .optional()
                .importance(Importance::High)
                .doc("JDBC connection user."),
        )
        .define(
            ConfigKey::new(CONNECTION_PASSWORD, ConfigType::Password)
                .optional()
                .importance(Importance::High)
                .doc("JDBC connection password."),
        )
        .define(
            ConfigKey::new(CONNECTION_ATTEMPTS, ConfigType::Int)
                .default(3)
                .importance(Importance::Low)
                .doc("Maximum number of attempts to retrieve a valid JDBC connection."),
        )
        .define(
            ConfigKey::new(CONNECTION_BACKOFF_MS, ConfigType::Long)
                .default(10_000i64)
                .importance(Importance::Low)
                .doc("Backoff time in milliseconds between connection attempts."),
        )
        .define(
            ConfigKey::new(DB_TIMEZONE, ConfigType::String)
                .default("UTC")
                .importance(Importance::Medium)
                .doc("Time zone of TIMESTAMP columns without a zone: UTC, a fixed offset such as +02:00, or an IANA zone id such as Europe/Paris (with its daylight-saving rules)."),
        )
        .define(
            ConfigKey::new(QUOTE_SQL_IDENTIFIERS, ConfigType::String)
                .default("always")
                .validator(ValidString::case_insensitive(["always", "never"]))
                .importance(Importance::Medium)
                .doc("When to quote table names, column names, and other identifiers in SQL statements."),
        )
}

/// Where the database is, parsed and checked.
#[derive(Clone)]
pub(crate) struct Connection {
    /// The JDBC URL as configured.
    pub url: String,
    /// The database family it names.
    pub dialect: Dialect,
    /// `connection.user`, or `user=` in the URL.
    pub user: Option<String>,
    /// `connection.password`, or `password=` in the URL.
    pub password: Option<String>,
    /// `connection.attempts` (at least 1).
    pub attempts: u32,
    /// `connection.backoff.ms`.
    pub backoff_ms: u64,
    /// `db.timezone`.
    pub timezone: DbTimeZone,
    /// `quote.sql.identifiers=always`.
    pub quote: bool,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("url", &redact_url(&self.url))
            .field("user", &self.user)
            .field("password", &self.password.as_ref().map(|_| "[hidden]"))
            .finish_non_exhaustive()
    }
}

/// The URL with any `password=` parameter's value hidden, for messages.
pub(crate) fn redact_url(url: &str) -> String {
    match url.split_once('?') {
        None => url.to_string(),
        Some((base, query)) => {
            let params: Vec<String> = query
                .split('&')
                .map(|p| match p.split_once('=') {
                    Some((k, _)) if k.eq_ignore_ascii_case("password") => format!("{k}=[hidden]"),
                    _ => p.to_string(),
                })
                .collect();
            format!("{base}?{}", params.join("&"))
        }
    }
}

impl Connection {
    /// The connection settings of a parsed connector config.
    pub(crate) fn from_parsed(parsed: &ParsedConfig) -> Result<Connection> {
        let url = parsed.string(CONNECTION_URL)?.to_string();
        let dialect = Dialect::from_url(&url)?;
        let param = |name: &str| {
            url.split_once('?').and_then(|(_, q)| {
                q.split('&').find_map(|p| {
                    p.split_once('=')
                        .filter(|(k, _)| k.eq_ignore_ascii_case(name))
                        .map(|(_, v)| v.to_string())
                })
            })
        };
        let user = parsed
            .get_string(CONNECTION_USER)
            .filter(|u| !u.is_empty())
            .map(str::to_string)
            .or_else(|| param("user"));
        let password = parsed
            .get_password(CONNECTION_PASSWORD)
            .map(|p| p.value().to_string())
            .filter(|p| !p.is_empty())
            .or_else(|| param("password"));
        Ok(Connection {
            dialect,
            user,
            password,
            attempts: parsed.int(CONNECTION_ATTEMPTS)?.max(1) as u32,
            backoff_ms: parsed.long(CONNECTION_BACKOFF_MS)?.max(0) as u64,
            timezone: parse_timezone(parsed.string(DB_TIMEZONE)?)?,
            quote: parsed
                .string(QUOTE_SQL_IDENTIFIERS)?
                .eq_ignore_ascii_case("always"),
            url,
        })
    }
}

/// `UTC`, a fixed offset `+HH:MM` / `-HH:MM`, or an IANA zone id.
pub(crate) fn parse_timezone(raw: &str) -> Result<DbTimeZone> {
    DbTimeZone::parse(raw).ok_or_else(|| {
        ConnectError::config(
            DB_TIMEZONE,
            format!(
                "'{}' is not a time zone: use UTC, a fixed offset such as +02:00, or an \
                 IANA zone id such as Europe/Paris",
                raw.trim()
            ),
        )
    })
}

/// A comma-separated list key's entries, trimmed, empty ones dropped.
pub(crate) fn list(parsed: &ParsedConfig, key: &str) -> Vec<String> {
    parsed
        .get_list(key)
        .unwrap_or(&[])
        .iter()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use connect_api::ConfigMap;

    #[test]
    fn passwords_in_urls_are_hidden_from_messages() {
        assert_eq!(
            redact_url("jdbc:postgresql://h/db?user=u&password=s3cret&ssl=false"),
            "jdbc:postgresql://h/db?user=u&password=[hidden]&ssl=false"
        );
    }

    #[test]
    fn the_user_and_password_come_from_keys_before_url_parameters() {
        let map = ConfigMap::from([
            (
                CONNECTION_URL,
                "jdbc:mysql://h/db?user=url-user&password=url-pass",
            ),
            (CONNECTION_USER, "key-user"),
        ]);
        let parsed = connection_def().parse(&map).unwrap();
        let c = Connection::from_parsed(&parsed).unwrap();
        assert_eq!(c.user.as_deref(), Some("key-user"));
        assert_eq!(c.password.as_deref(), Some("url-pass"));
        assert!(!format!("{c:?}").contains("url-pass"));
    }

    #[test]
    fn an_unknown_zone_is_refused_with_the_key_in_the_message() {
        let err = parse_timezone("Europe/Atlantis").unwrap_err();
        assert!(err.to_string().contains(DB_TIMEZONE), "{err}");
        assert!(err.to_string().contains("Europe/Atlantis"), "{err}");
        assert!(parse_timezone("Europe/Paris").is_ok());
        assert!(parse_timezone("+02:00").is_ok());
    }
}
