//! The `ssl.*` stores read into OpenSSL contexts, shared by every TLS
//! endpoint of the worker that is not a librdkafka client: the group
//! connection (client side), the REST listeners (server side) and the
//! requests between workers (client side). OpenSSL is the library
//! librdkafka uses for the data clients, so all of them read the same PEM
//! and PKCS#12 files (encrypted keys included) and refuse the same ones.
//!
//! A given truststore replaces the system's roots, as in Java: only the
//! certificates it holds are trusted.
//!
//! ```
//! use connect_runtime::kafka::security::TlsConfig;
//! use openssl::ssl::{SslConnector, SslMethod};
//!
//! let mut builder = SslConnector::builder(SslMethod::tls_client()).unwrap();
//! // No stores named: the system's roots, no client identity.
//! connect_runtime::tls::configure(&mut builder, &TlsConfig::default()).unwrap();
//! ```

use std::path::Path;

use openssl::pkcs12::Pkcs12;
use openssl::pkey::{PKey, Private};
use openssl::ssl::SslContextBuilder;
use openssl::x509::store::X509StoreBuilder;
use openssl::x509::X509;
use thiserror::Error;

use crate::kafka::security::{
    KeyStore, TlsConfig, TrustStore, SSL_KEYSTORE_CERTIFICATE_CHAIN_CONFIG,
    SSL_KEYSTORE_KEY_CONFIG, SSL_KEYSTORE_LOCATION_CONFIG, SSL_KEY_PASSWORD_CONFIG,
    SSL_TRUSTSTORE_CERTIFICATES_CONFIG, SSL_TRUSTSTORE_LOCATION_CONFIG,
};

/// A store named by an `ssl.*` key cannot be read or used.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("TLS setting {key}: {message}")]
pub struct TlsSetupError {
    /// The key (`ssl.truststore.location`, `ssl.keystore.location`, ...),
    /// without the prefix the caller read it under.
    pub key: &'static str,
    /// What is wrong.
    pub message: String,
}

fn setup(key: &'static str, message: impl std::fmt::Display) -> TlsSetupError {
    TlsSetupError {
        key,
        message: message.to_string(),
    }
}

fn read(key: &'static str, path: &Path) -> Result<Vec<u8>, TlsSetupError> {
    std::fs::read(path).map_err(|e| setup(key, format!("cannot read {}: {e}", path.display())))
}

fn certificates(key: &'static str, pem: &[u8]) -> Result<Vec<X509>, TlsSetupError> {
    let certs =
        X509::stack_from_pem(pem).map_err(|e| setup(key, format!("not PEM certificates: {e}")))?;
    if certs.is_empty() {
        return Err(setup(key, "holds no PEM certificate"));
    }
    Ok(certs)
}

fn private_key(
    key: &'static str,
    pem: &[u8],
    password: Option<&str>,
) -> Result<PKey<Private>, TlsSetupError> {
    match password {
        Some(p) => PKey::private_key_from_pem_passphrase(pem, p.as_bytes()).map_err(|e| {
            setup(
                key,
                format!("cannot read the private key with {SSL_KEY_PASSWORD_CONFIG}: {e}"),
            )
        }),
        None => PKey::private_key_from_pem(pem).map_err(|e| {
            setup(
                key,
                format!(
                    "no readable PEM private key (if it is encrypted, set \
                     {SSL_KEY_PASSWORD_CONFIG}): {e}"
                ),
            )
        }),
    }
}

/// The certificates `tls` trusts, with the key that named them; `None`
/// for the system's roots.
fn trusted_certificates(
    tls: &TlsConfig,
) -> Result<Option<(&'static str, Vec<X509>)>, TlsSetupError> {
    let (key, pem) = match &tls.trust {
        TrustStore::SystemDefault => return Ok(None),
        TrustStore::PemFile(p) => (
            SSL_TRUSTSTORE_LOCATION_CONFIG,
            read(SSL_TRUSTSTORE_LOCATION_CONFIG, p)?,
        ),
        TrustStore::PemInline(pem) => (SSL_TRUSTSTORE_CERTIFICATES_CONFIG, pem.as_bytes().to_vec()),
    };
    Ok(Some((key, certificates(key, &pem)?)))
}

/// An identity read from a keystore: the certificate chain (leaf first)
/// and its private key.
struct Identity {
    key_name: &'static str,
    chain: Vec<X509>,
    key: PKey<Private>,
}

impl std::fmt::Debug for Identity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Identity")
            .field("from", &self.key_name)
            .field("certificates", &self.chain.len())
            .finish_non_exhaustive()
    }
}

/// The identity `tls` names, if any.
fn identity(tls: &TlsConfig) -> Result<Option<Identity>, TlsSetupError> {
    let password = tls.key_password.as_deref();
    let identity = match &tls.identity {
        None => return Ok(None),
        Some(KeyStore::PemFile(p)) => {
            const K: &str = SSL_KEYSTORE_LOCATION_CONFIG;
            let pem = read(K, p)?;
            Identity {
                key_name: K,
                chain: certificates(K, &pem)?,
                key: private_key(K, &pem, password)?,
            }
        }
        Some(KeyStore::PemInline {
            certificate_chain,
            key,
        }) => Identity {
            key_name: SSL_KEYSTORE_KEY_CONFIG,
            chain: certificates(
                SSL_KEYSTORE_CERTIFICATE_CHAIN_CONFIG,
                certificate_chain.as_bytes(),
            )?,
            key: private_key(SSL_KEYSTORE_KEY_CONFIG, key.as_bytes(), password)?,
        },
        Some(KeyStore::Pkcs12File { location, password }) => {
            const K: &str = SSL_KEYSTORE_LOCATION_CONFIG;
            let der = read(K, location)?;
            let parsed = Pkcs12::from_der(&der)
                .and_then(|p| p.parse2(password.as_deref().unwrap_or_default()))
                .map_err(|e| {
                    setup(
                        K,
                        format!(
                            "cannot open the PKCS#12 file {} (check \
                             ssl.keystore.password): {e}",
                            location.display()
                        ),
                    )
                })?;
            let (Some(cert), Some(key)) = (parsed.cert, parsed.pkey) else {
                return Err(setup(
                    K,
                    "the PKCS#12 file holds no certificate with its private key",
                ));
            };
            let mut chain = vec![cert];
            chain.extend(parsed.ca.into_iter().flatten());
            Identity {
                key_name: K,
                chain,
                key,
            }
        }
    };
    Ok(Some(identity))
}

/// Sets up `builder` (a client's or a server's) with the stores `tls`
/// names: its trusted certificates replace the system's roots (they
/// verify the peer: a broker or a worker for a client, a client
/// certificate for a server), and its identity is what this side shows.
/// A store that cannot be read or used is an error naming its key.
pub fn configure(builder: &mut SslContextBuilder, tls: &TlsConfig) -> Result<(), TlsSetupError> {
    if let Some((key, certs)) = trusted_certificates(tls)? {
        let mut store = X509StoreBuilder::new().map_err(|e| setup(key, e))?;
        for cert in certs {
            store.add_cert(cert).map_err(|e| setup(key, e))?;
        }
        builder.set_cert_store(store.build());
    }
    if let Some(Identity {
        key_name,
        chain,
        key,
    }) = identity(tls)?
    {
        let mut chain = chain.into_iter();
        if let Some(leaf) = chain.next() {
            builder
                .set_certificate(&leaf)
                .map_err(|e| setup(key_name, e))?;
        }
        for extra in chain {
            builder
                .add_extra_chain_cert(extra)
                .map_err(|e| setup(key_name, e))?;
        }
        builder.set_private_key(&key).map_err(|e| {
            setup(
                key_name,
                format!("cannot use the private key (does it match the certificate?): {e}"),
            )
        })?;
        builder.check_private_key().map_err(|e| {
            setup(
                key_name,
                format!("the private key does not match the certificate: {e}"),
            )
        })?;
    }
    Ok(())
}
