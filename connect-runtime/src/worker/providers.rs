//! Config providers: `${provider:path:key}` references in connector configs,
//! resolved when a connector or task starts (Kafka's `config.providers`).
//!
//! Enabled per worker with `config.providers=file,env,directory`:
//! - `file`: `${file:/etc/secrets.properties:db.password}`, a key of a
//!   properties file;
//! - `directory`: `${directory:/run/secrets:db_password}`, the content of
//!   a file in a directory (trailing newline removed);
//! - `env`: `${env:DB_PASSWORD}`, an environment variable.
//!
//! The stored config keeps the reference, so REST responses and logs never
//! show the secret.

use std::collections::BTreeSet;
use std::path::Path;

use connect_api::config::ConfigMap;
use connect_api::{ConnectError, Result};

/// The providers a worker enabled.
#[derive(Debug, Clone, Default)]
pub struct Providers {
    enabled: BTreeSet<String>,
}

impl Providers {
    /// From the worker's `config.providers` list.
    pub fn from_worker(worker: &ConfigMap) -> Self {
        Providers {
            enabled: worker
                .get("config.providers")
                .map(|l| {
                    connect_api::config::parse_list(l)
                        .into_iter()
                        .filter(|n| !n.is_empty())
                        .collect()
                })
                .unwrap_or_default(),
        }
    }

    /// Enable a provider by name (`file`, `directory`, `env`).
    pub fn enable(mut self, name: &str) -> Self {
        self.enabled.insert(name.to_string());
        self
    }
}

/// Resolve every `${provider:path:key}` / `${provider:key}` reference in
/// `config`; a reference to a provider that is not enabled is left as is
/// (as Kafka does). An enabled provider that cannot find the value is an
/// error naming the config key, never the value.
pub fn resolve(config: &ConfigMap, providers: &Providers) -> Result<ConfigMap> {
    let mut out = ConfigMap::new();
    for (k, v) in config {
        out.insert(k.clone(), resolve_value(k, v, providers)?);
    }
    Ok(out)
}

/// Put the connector's `${provider:...}` references back into task
/// configs a connector generated from its resolved config, as Kafka's
/// `AbstractHerder.reverseTransform`: every task-config key whose value in
/// the raw connector config `raw` holds a reference gets that reference
/// back. So task configs are stored (config topic, standalone store) and
/// sent between workers without the secrets; the worker that starts a task
/// resolves them again (review F8).
///
/// ```
/// use connect_api::config::ConfigMap;
/// use connect_runtime::worker::providers::unresolve;
///
/// let raw = ConfigMap::from_pairs([("db.password", "${env:DB_PASSWORD}"), ("db", "orders")]);
/// let mut task = ConfigMap::from_pairs([("db.password", "hunter2"), ("db", "orders")]);
/// unresolve(&mut task, &raw);
/// assert_eq!(task["db.password"], "${env:DB_PASSWORD}");
/// assert_eq!(task["db"], "orders");
/// ```
pub fn unresolve(task: &mut ConfigMap, raw: &ConfigMap) {
    for (key, raw_value) in raw {
        if has_reference(raw_value) {
            if let Some(value) = task.get_mut(key) {
                value.clone_from(raw_value);
            }
        }
    }
}

/// Whether `value` holds a `${provider:...}` reference.
fn has_reference(value: &str) -> bool {
    value.match_indices("${").any(|(start, _)| {
        let after = &value[start + 2..];
        after
            .find('}')
            .is_some_and(|end| after[..end].contains(':'))
    })
}

fn resolve_value(key: &str, value: &str, providers: &Providers) -> Result<String> {
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[start..]);
            return Ok(out);
        };
        let reference = &after[..end];
        match lookup(key, reference, providers)? {
            Some(v) => out.push_str(&v),
            None => {
                out.push_str("${");
                out.push_str(reference);
                out.push('}');
            }
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

fn lookup(key: &str, reference: &str, providers: &Providers) -> Result<Option<String>> {
    let Some((provider, target)) = reference.split_once(':') else {
        return Ok(None);
    };
    if !providers.enabled.contains(provider) {
        return Ok(None);
    }
    let missing = |what: String| {
        ConnectError::config(
            key,
            format!("cannot resolve ${{{provider}:...}} reference: {what}"),
        )
    };
    let value = match provider {
        "env" => std::env::var(target)
            .map_err(|_| missing(format!("environment variable {target} is not set")))?,
        "file" => {
            // The path may contain ':' (Windows drive letters do not matter
            // here); the key is after the last one.
            let (path, k) = target
                .rsplit_once(':')
                .ok_or_else(|| missing("expected ${file:<path>:<key>}".into()))?;
            let text = std::fs::read_to_string(path)
                .map_err(|e| missing(format!("cannot read {path}: {e}")))?;
            properties_lookup(&text, k).ok_or_else(|| missing(format!("no key '{k}' in {path}")))?
        }
        "directory" => {
            let (dir, file) = target
                .rsplit_once(':')
                .ok_or_else(|| missing("expected ${directory:<dir>:<file>}".into()))?;
            if file.contains('/') || file.contains("..") {
                return Err(missing(format!(
                    "'{file}' must be a file name inside {dir}"
                )));
            }
            let path = Path::new(dir).join(file);
            let text = std::fs::read_to_string(&path)
                .map_err(|e| missing(format!("cannot read {}: {e}", path.display())))?;
            text.trim_end_matches(['\n', '\r']).to_string()
        }
        _ => return Ok(None),
    };
    Ok(Some(value))
}

/// The value of `key` in Java properties text (`k=v` or `k: v`, `#`/`!` comments).
fn properties_lookup(text: &str, key: &str) -> Option<String> {
    text.lines()
        .map(str::trim_start)
        .filter(|l| !l.is_empty() && !l.starts_with('#') && !l.starts_with('!'))
        .find_map(|l| {
            let i = l.find(['=', ':'])?;
            (l[..i].trim() == key).then(|| l[i + 1..].trim().to_string())
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(pairs: &[(&str, &str)]) -> ConfigMap {
        ConfigMap::from_pairs(pairs.iter().copied())
    }

    #[test]
    fn unresolve_puts_back_only_references() {
        let raw = cfg(&[
            ("password", "${file:/s.properties:pw}"),
            ("url", "jdbc:${env:HOST}/db"),
            ("plain", "${not a reference}"),
            ("second", "${plain} then ${env:PORT}"),
            ("name", "c"),
        ]);
        let mut task = cfg(&[
            ("password", "secret"),
            ("url", "jdbc:db1/db"),
            ("plain", "${not a reference}"),
            ("second", "${plain} then 9092"),
            ("name", "c"),
            ("task.only", "x"),
        ]);
        unresolve(&mut task, &raw);
        assert_eq!(task["password"], "${file:/s.properties:pw}");
        assert_eq!(task["url"], "jdbc:${env:HOST}/db");
        assert_eq!(task["plain"], "${not a reference}");
        assert_eq!(task["second"], "${plain} then ${env:PORT}");
        assert_eq!(task["task.only"], "x");
        assert!(!task.contains_key("other"));
    }

    #[test]
    fn resolves_file_env_and_directory() {
        let dir = std::env::temp_dir().join(format!("connect-providers-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let props = dir.join("secrets.properties");
        std::fs::write(&props, "# comment\ndb.password = hunter2\n").unwrap();
        std::fs::write(dir.join("token"), "abc\n").unwrap();
        std::env::set_var("CONNECT_PROVIDER_TEST", "from-env");
        let providers = Providers::default()
            .enable("file")
            .enable("env")
            .enable("directory");
        let out = resolve(
            &cfg(&[
                ("a", &format!("${{file:{}:db.password}}", props.display())),
                ("b", "x-${env:CONNECT_PROVIDER_TEST}-y"),
                ("c", &format!("${{directory:{}:token}}", dir.display())),
                ("d", "${vault:secret}"),
            ]),
            &providers,
        )
        .unwrap();
        assert_eq!(out["a"], "hunter2");
        assert_eq!(out["b"], "x-from-env-y");
        assert_eq!(out["c"], "abc");
        assert_eq!(out["d"], "${vault:secret}");
    }

    #[test]
    fn disabled_providers_leave_references_and_missing_values_fail() {
        let none = Providers::default();
        let out = resolve(&cfg(&[("a", "${env:HOME}")]), &none).unwrap();
        assert_eq!(out["a"], "${env:HOME}");
        let env = Providers::default().enable("env");
        let e = resolve(&cfg(&[("pw", "${env:NO_SUCH_VAR_FOR_CONNECT}")]), &env).unwrap_err();
        assert!(e.to_string().contains("pw"), "{e}");
        let dir = Providers::default().enable("directory");
        assert!(resolve(&cfg(&[("k", "${directory:/etc:../passwd}")]), &dir).is_err());
    }
}
