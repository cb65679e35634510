//! The client side of SASL/SCRAM (RFC 5802) as Kafka speaks it:
//! `SCRAM-SHA-256` and `SCRAM-SHA-512`, no channel binding (`n,,`), the
//! password's UTF-8 bytes as is (Kafka applies no SASLprep), user names
//! with `,` and `=` escaped as `=2C` and `=3D`.
//!
//! The exchange is two SaslAuthenticate round trips: client-first, then
//! client-final with the proof; the server's last message carries its
//! signature, which is checked, so a broker that does not know the
//! password cannot pose as one that does.

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use connect_runtime::kafka::security::SaslMechanism;
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256, Sha512};

/// Kafka's bounds on a SCRAM credential's iterations: brokers store none
/// outside them, so a server-first message outside them is refused (a
/// huge count would also make the client spin).
const MIN_ITERATIONS: u32 = 4096;
const MAX_ITERATIONS: u32 = 16384;

/// Why a SCRAM exchange failed on the client's side.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ScramError {
    /// The server's message does not follow RFC 5802.
    #[error("malformed SCRAM {message} from the broker: {reason}")]
    Malformed {
        /// `server-first` or `server-final`.
        message: &'static str,
        /// What is wrong.
        reason: String,
    },
    /// The server answered with `e=<error>`.
    #[error("the broker refused the SCRAM proof: {0}")]
    Refused(String),
    /// The server's signature does not match: it does not hold this
    /// user's credential.
    #[error("the broker's SCRAM signature does not match (it does not know this credential)")]
    BadServerSignature,
}

/// One SCRAM exchange, from the client-first message to the server's
/// signature.
pub(crate) struct ScramClient<'a> {
    mechanism: SaslMechanism,
    password: &'a str,
    client_nonce: String,
    client_first_bare: String,
}

/// What the client keeps between client-final and server-final.
pub(crate) struct ExpectedServerSignature(Vec<u8>);

impl<'a> ScramClient<'a> {
    /// A new exchange with a random nonce.
    pub(crate) fn new(mechanism: SaslMechanism, username: &str, password: &'a str) -> Self {
        let mut raw = [0u8; 24];
        // A failing OS random source leaves a weaker nonce, not a broken
        // login: the nonce need only be unpredictable to an observer and
        // the time still makes it unique.
        if getrandom::fill(&mut raw).is_err() {
            let t = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or_default();
            raw[..16].copy_from_slice(&t.to_le_bytes());
        }
        Self::with_nonce(mechanism, username, password, STANDARD.encode(raw))
    }

    fn with_nonce(
        mechanism: SaslMechanism,
        username: &str,
        password: &'a str,
        client_nonce: String,
    ) -> Self {
        let name = username.replace('=', "=3D").replace(',', "=2C");
        ScramClient {
            mechanism,
            password,
            client_first_bare: format!("n={name},r={client_nonce}"),
            client_nonce,
        }
    }

    /// `n,,n=<user>,r=<nonce>`.
    pub(crate) fn client_first(&self) -> Vec<u8> {
        format!("n,,{}", self.client_first_bare).into_bytes()
    }

    /// Reads server-first (`r=<nonce>,s=<salt>,i=<iterations>`) and returns
    /// client-final with the proof, and the signature the server must send.
    pub(crate) fn client_final(
        &self,
        server_first: &[u8],
    ) -> Result<(Vec<u8>, ExpectedServerSignature), ScramError> {
        let malformed = |reason: String| ScramError::Malformed {
            message: "server-first",
            reason,
        };
        let server_first =
            std::str::from_utf8(server_first).map_err(|_| malformed("not UTF-8".into()))?;
        let (mut nonce, mut salt, mut iterations) = (None, None, None);
        for attr in server_first.split(',') {
            match attr.split_once('=') {
                Some(("r", v)) => nonce = Some(v),
                Some(("s", v)) => salt = Some(v),
                Some(("i", v)) => iterations = Some(v),
                Some(("m", _)) => {
                    return Err(malformed(
                        "a mandatory extension (m=) is not supported".into(),
                    ))
                }
                Some(("e", v)) => return Err(ScramError::Refused(v.to_owned())),
                _ => {}
            }
        }
        let nonce = nonce.ok_or_else(|| malformed("no nonce (r=)".into()))?;
        if !nonce.starts_with(&self.client_nonce) || nonce.len() == self.client_nonce.len() {
            return Err(malformed(
                "the nonce does not extend the client's nonce".into(),
            ));
        }
        let salt = STANDARD
            .decode(salt.ok_or_else(|| malformed("no salt (s=)".into()))?)
            .map_err(|e| malformed(format!("the salt is not base64: {e}")))?;
        let iterations: u32 = iterations
            .ok_or_else(|| malformed("no iteration count (i=)".into()))?
            .parse()
            .map_err(|_| malformed("the iteration count is not a number".into()))?;
        if !(MIN_ITERATIONS..=MAX_ITERATIONS).contains(&iterations) {
            return Err(malformed(format!(
                "iteration count {iterations} is outside Kafka's {MIN_ITERATIONS}..={MAX_ITERATIONS}"
            )));
        }
        let m = self.mechanism;
        let salted = salted_password(m, self.password.as_bytes(), &salt, iterations);
        let client_key = hmac(m, &salted, b"Client Key");
        let stored_key = hash(m, &client_key);
        // `biws` is base64 of the GS2 header `n,,` (no channel binding).
        let without_proof = format!("c=biws,r={nonce}");
        let auth_message = format!("{},{server_first},{without_proof}", self.client_first_bare);
        let client_signature = hmac(m, &stored_key, auth_message.as_bytes());
        let proof: Vec<u8> = client_key
            .iter()
            .zip(&client_signature)
            .map(|(k, s)| k ^ s)
            .collect();
        let server_key = hmac(m, &salted, b"Server Key");
        let server_signature = hmac(m, &server_key, auth_message.as_bytes());
        let client_final = format!("{without_proof},p={}", STANDARD.encode(proof));
        Ok((
            client_final.into_bytes(),
            ExpectedServerSignature(server_signature),
        ))
    }
}

impl ExpectedServerSignature {
    /// Checks server-final: `v=<signature>`, or `e=<error>`.
    pub(crate) fn verify(&self, server_final: &[u8]) -> Result<(), ScramError> {
        let malformed = |reason: &str| ScramError::Malformed {
            message: "server-final",
            reason: reason.to_owned(),
        };
        let text = std::str::from_utf8(server_final).map_err(|_| malformed("not UTF-8"))?;
        let first = text.split(',').next().unwrap_or_default();
        if let Some(e) = first.strip_prefix("e=") {
            return Err(ScramError::Refused(e.to_owned()));
        }
        let v = first
            .strip_prefix("v=")
            .ok_or_else(|| malformed("no verifier (v=)"))?;
        let v = STANDARD
            .decode(v)
            .map_err(|_| malformed("the verifier is not base64"))?;
        // Not secret-dependent timing that matters: the signature is the
        // server's to prove, and the client learns nothing new either way.
        if v == self.0 {
            Ok(())
        } else {
            Err(ScramError::BadServerSignature)
        }
    }
}

fn hmac(m: SaslMechanism, key: &[u8], data: &[u8]) -> Vec<u8> {
    // HMAC takes keys of any length, so `new_from_slice` cannot fail; the
    // empty fallback would only make the proof wrong, never panic.
    match m {
        SaslMechanism::ScramSha512 => Hmac::<Sha512>::new_from_slice(key)
            .map(|mac| mac.chain_update(data).finalize().into_bytes().to_vec())
            .unwrap_or_default(),
        _ => Hmac::<Sha256>::new_from_slice(key)
            .map(|mac| mac.chain_update(data).finalize().into_bytes().to_vec())
            .unwrap_or_default(),
    }
}

fn hash(m: SaslMechanism, data: &[u8]) -> Vec<u8> {
    match m {
        SaslMechanism::ScramSha512 => Sha512::digest(data).to_vec(),
        _ => Sha256::digest(data).to_vec(),
    }
}

fn salted_password(m: SaslMechanism, password: &[u8], salt: &[u8], iterations: u32) -> Vec<u8> {
    match m {
        SaslMechanism::ScramSha512 => {
            let mut out = vec![0u8; 64];
            pbkdf2::pbkdf2_hmac::<Sha512>(password, salt, iterations, &mut out);
            out
        }
        _ => {
            let mut out = vec![0u8; 32];
            pbkdf2::pbkdf2_hmac::<Sha256>(password, salt, iterations, &mut out);
            out
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 7677, section 3: the SCRAM-SHA-256 example exchange.
    #[test]
    fn rfc7677_example() {
        let c = ScramClient::with_nonce(
            SaslMechanism::ScramSha256,
            "user",
            "pencil",
            "rOprNGfwEbeRWgbNEkqO".into(),
        );
        assert_eq!(c.client_first(), b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO");
        let server_first = b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096";
        let (client_final, expected) = c.client_final(server_first).unwrap();
        assert_eq!(
            String::from_utf8(client_final).unwrap(),
            "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
        );
        expected
            .verify(b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")
            .unwrap();
        assert_eq!(
            expected.verify(b"v=AAAATRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="),
            Err(ScramError::BadServerSignature)
        );
        assert_eq!(
            expected.verify(b"e=invalid-proof"),
            Err(ScramError::Refused("invalid-proof".into()))
        );
    }

    #[test]
    fn names_are_escaped_and_nonces_random() {
        let a = ScramClient::new(SaslMechanism::ScramSha512, "a,b=c", "p");
        let b = ScramClient::new(SaslMechanism::ScramSha512, "a,b=c", "p");
        let first = String::from_utf8(a.client_first()).unwrap();
        assert!(first.starts_with("n,,n=a=2Cb=3Dc,r="), "{first}");
        assert_ne!(a.client_nonce, b.client_nonce);
        assert!(!a.client_nonce.contains(','));
    }

    #[test]
    fn bad_server_messages_are_errors_not_panics() {
        let c = ScramClient::with_nonce(SaslMechanism::ScramSha512, "u", "p", "abc".into());
        for bad in [
            &b"\xff\xfe"[..],
            b"",
            b"s=AAAA,i=4096",
            b"r=xyz123,s=AAAA,i=4096",
            b"r=abc,s=AAAA,i=4096",
            b"r=abcdef,i=4096",
            b"r=abcdef,s=!!!,i=4096",
            b"r=abcdef,s=AAAA",
            b"r=abcdef,s=AAAA,i=x",
            b"r=abcdef,s=AAAA,i=1",
            b"r=abcdef,s=AAAA,i=4000000000",
            b"m=ext,r=abcdef,s=AAAA,i=4096",
        ] {
            assert!(
                c.client_final(bad).is_err(),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
        assert!(matches!(
            c.client_final(b"e=unknown-user"),
            Err(ScramError::Refused(_))
        ));
        let (_, expected) = c.client_final(b"r=abcdef,s=AAAA,i=4096").unwrap();
        for bad in [&b"\xff"[..], b"", b"x=1", b"v=!!!"] {
            assert!(expected.verify(bad).is_err());
        }
    }
}
