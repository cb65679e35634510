//! Requests between workers: the connector owner hands new task configs
//! to the leader (`POST /connectors/{c}/tasks`), signed with the session
//! key as KIP-507 specifies, so a Java leader accepts ours and ours checks
//! a Java follower's.

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use connect_api::config::ConfigMap;
use connect_api::ConnectError;
use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::topics::config::SessionKey;

/// The header carrying the base64 HMAC of the body.
pub const SIGNATURE_HEADER: &str = "X-Connect-Authorization";
/// The header naming the signature algorithm.
pub const SIGNATURE_ALGORITHM_HEADER: &str = "X-Connect-Request-Signature-Algorithm";
/// The only algorithm Kafka's default `inter.worker.signature.algorithm`
/// uses, and the only one supported here.
pub const HMAC_SHA256: &str = "HmacSHA256";

/// Why an internal request was refused, with the status Kafka answers.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SignatureError {
    /// No signature headers (400 in Kafka).
    #[error("Internal request missing required signature")]
    Missing,
    /// An algorithm other than `HmacSHA256` (400).
    #[error("Internal request signature algorithm {0} is not supported; only HmacSHA256 is")]
    Algorithm(String),
    /// The signature does not match the body under the current session
    /// key (403).
    #[error("Internal request contained invalid signature")]
    Invalid,
}

/// The base64 HMAC-SHA256 of `body` under `key`.
pub fn sign(key: &SessionKey, body: &[u8]) -> String {
    let mut mac = match Hmac::<Sha256>::new_from_slice(&key.key) {
        Ok(mac) => mac,
        // HMAC takes keys of any length; this arm cannot be reached.
        Err(_) => return String::new(),
    };
    mac.update(body);
    STANDARD.encode(mac.finalize().into_bytes())
}

/// Check a request's `(algorithm, signature)` headers against `body`.
pub fn verify(
    key: &SessionKey,
    body: &[u8],
    headers: Option<(&str, &str)>,
) -> Result<(), SignatureError> {
    let Some((algorithm, signature)) = headers else {
        return Err(SignatureError::Missing);
    };
    if algorithm != HMAC_SHA256 {
        return Err(SignatureError::Algorithm(algorithm.to_string()));
    }
    let Ok(given) = STANDARD.decode(signature.trim()) else {
        return Err(SignatureError::Invalid);
    };
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(&key.key) else {
        return Err(SignatureError::Invalid);
    };
    mac.update(body);
    // Constant time, as Java's MessageDigest.isEqual.
    mac.verify_slice(&given)
        .map_err(|_| SignatureError::Invalid)
}

/// The body of `POST /connectors/{c}/tasks`: the task configs as a JSON
/// array of string maps, as Kafka sends it.
pub fn task_configs_body(configs: &[ConfigMap]) -> Vec<u8> {
    let list: Vec<serde_json::Map<String, serde_json::Value>> = configs
        .iter()
        .map(|c| {
            c.iter()
                .map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone())))
                .collect()
        })
        .collect();
    serde_json::to_vec(&list).unwrap_or_else(|_| b"[]".to_vec())
}

/// Parse a `POST /connectors/{c}/tasks` body; a clear error for anything
/// but an array of string maps.
pub fn parse_task_configs(body: &[u8]) -> Result<Vec<ConfigMap>, ConnectError> {
    let bad = |why: String| ConnectError::config("request", format!("task configs body: {why}"));
    let value: serde_json::Value =
        serde_json::from_slice(body).map_err(|e| bad(format!("not JSON: {e}")))?;
    let serde_json::Value::Array(items) = value else {
        return Err(bad("expected a JSON array of config maps".into()));
    };
    items
        .into_iter()
        .enumerate()
        .map(|(i, item)| {
            let serde_json::Value::Object(map) = item else {
                return Err(bad(format!("element {i} is not an object")));
            };
            map.into_iter()
                .map(|(k, v)| match v {
                    serde_json::Value::String(s) => Ok((k, s)),
                    serde_json::Value::Null => Ok((k, String::new())),
                    other => Err(bad(format!("element {i}: `{k}` is {other}, not a string"))),
                })
                .collect::<Result<ConfigMap, _>>()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> SessionKey {
        SessionKey {
            key: b"0123456789abcdef0123456789abcdef".to_vec(),
            algorithm: HMAC_SHA256.into(),
            creation_timestamp: 0,
        }
    }

    #[test]
    fn a_signature_verifies_and_a_changed_body_does_not() {
        let body = task_configs_body(&[ConfigMap::from([("k", "v")])]);
        let sig = sign(&key(), &body);
        assert_eq!(verify(&key(), &body, Some((HMAC_SHA256, &sig))), Ok(()));
        assert_eq!(
            verify(&key(), b"[{}]", Some((HMAC_SHA256, &sig))),
            Err(SignatureError::Invalid)
        );
        assert_eq!(verify(&key(), &body, None), Err(SignatureError::Missing));
        assert!(matches!(
            verify(&key(), &body, Some(("HmacMD5", &sig))),
            Err(SignatureError::Algorithm(_))
        ));
        assert_eq!(
            verify(&key(), &body, Some((HMAC_SHA256, "not base64!"))),
            Err(SignatureError::Invalid)
        );
    }

    #[test]
    fn rfc_4231_test_case_2() {
        // HMAC-SHA256 with key "Jefe" over "what do ya want for nothing?".
        let k = SessionKey {
            key: b"Jefe".to_vec(),
            algorithm: HMAC_SHA256.into(),
            creation_timestamp: 0,
        };
        let want = "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843";
        let got = STANDARD
            .decode(sign(&k, b"what do ya want for nothing?"))
            .unwrap();
        let hex: String = got.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex, want);
    }

    #[test]
    fn task_configs_round_trip_and_bad_bodies_are_named() {
        let configs = vec![ConfigMap::from([("a", "1")]), ConfigMap::from([("b", "2")])];
        let body = task_configs_body(&configs);
        assert_eq!(parse_task_configs(&body).unwrap(), configs);
        for bad in [&b"{"[..], b"{}", b"[1]", b"[{\"k\":1}]"] {
            let err = parse_task_configs(bad).unwrap_err();
            assert!(err.to_string().contains("task configs body"), "{err}");
        }
    }
}
