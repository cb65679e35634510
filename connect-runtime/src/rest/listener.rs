//! The REST listeners: `listeners` (and `admin.listeners`) as Kafka
//! writes them, `http://host:port` and `https://host:port` side by side,
//! and the TLS settings of the https ones.
//!
//! An https listener reads its stores from the keys prefixed
//! `listeners.https.` (`admin.listeners.https.` for the admin listeners)
//! when any such key is set, and from the worker's own `ssl.*` keys
//! otherwise, as Kafka does. The same stores serve the requests this
//! worker sends to the others: its truststore verifies their
//! certificates, its keystore is its client certificate.

use std::net::SocketAddr;
use std::pin::Pin;
use std::time::Duration;

use connect_api::{ConfigMap, ConnectError, Result};
use openssl::ssl::{Ssl, SslAcceptor, SslConnector, SslMethod, SslVerifyMode};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_openssl::SslStream;

use crate::kafka::security::{Security, TlsConfig, SECURITY_PROTOCOL_CONFIG};

/// `listeners.https.`: the prefix of the https listeners' `ssl.*` keys.
pub const HTTPS_PREFIX: &str = "listeners.https.";
/// `admin.listeners.https.`: the same for the admin listeners.
pub const ADMIN_HTTPS_PREFIX: &str = "admin.listeners.https.";
/// `ssl.client.auth` under the https prefix: `required`, `requested` or
/// `none` (the default).
pub(super) const CLIENT_AUTH: &str = "ssl.client.auth";

/// How long a client has to complete its TLS handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Connections whose handshake is done, waiting for the server to take
/// them: the accept loop waits when this many are queued.
const HANDSHAKEN_QUEUE: usize = 64;

/// `http` or `https`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    /// Plain HTTP.
    Http,
    /// HTTP over TLS.
    Https,
}

impl Scheme {
    /// `http` or `https`.
    pub fn as_str(self) -> &'static str {
        match self {
            Scheme::Http => "http",
            Scheme::Https => "https",
        }
    }
}

/// One entry of `listeners`: a scheme and the address to bind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListenerSpec {
    /// `http` or `https`.
    pub scheme: Scheme,
    /// `host:port` to bind (an empty host is all interfaces).
    pub addr: String,
}

impl ListenerSpec {
    /// Parses `http://host:port` or `https://host:port`; `key` names the
    /// setting in errors (`listeners`, `admin.listeners`).
    pub fn parse(key: &'static str, listener: &str) -> Result<ListenerSpec> {
        let bad = |why: &str| {
            ConnectError::config(
                key,
                format!(
                    "invalid listener '{listener}': {why} (expected http://HOST:PORT or \
                     https://HOST:PORT, e.g. http://127.0.0.1:8083)"
                ),
            )
        };
        let trimmed = listener.trim();
        let (scheme, rest) = if let Some(rest) = trimmed.strip_prefix("http://") {
            (Scheme::Http, rest)
        } else if let Some(rest) = trimmed.strip_prefix("https://") {
            (Scheme::Https, rest)
        } else {
            return Err(bad("the protocol must be http or https"));
        };
        let rest = rest.trim_end_matches('/');
        let (host, port) = rest.rsplit_once(':').ok_or_else(|| bad("missing port"))?;
        let port: u16 = port
            .parse()
            .map_err(|_| bad("the port is not a number 0-65535"))?;
        let host = match host {
            "" => "0.0.0.0",
            h => h,
        };
        Ok(ListenerSpec {
            scheme,
            addr: format!("{host}:{port}"),
        })
    }
}

/// `ssl.client.auth` of an https listener.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ClientAuth {
    /// No client certificate asked for (Kafka's default).
    #[default]
    None,
    /// Asked for; a client without one is served, one with a certificate
    /// the truststore does not hold is refused.
    Requested,
    /// A client without a certificate the truststore holds is refused.
    Required,
}

/// The TLS settings of a set of https listeners, and of the requests to
/// other workers.
#[derive(Debug, Clone)]
pub struct HttpsSettings {
    prefix: &'static str,
    tls: TlsConfig,
    client_auth: ClientAuth,
}

impl HttpsSettings {
    /// The settings under `prefix` ([`HTTPS_PREFIX`] or
    /// [`ADMIN_HTTPS_PREFIX`]) of a worker's `config`, or its unprefixed
    /// `ssl.*` keys when no key has that prefix. A value Kafka would
    /// refuse is an error naming the prefixed key.
    pub fn from_worker(config: &ConfigMap, prefix: &'static str) -> Result<HttpsSettings> {
        let prefixed = config.keys().any(|k| k.starts_with(prefix));
        let get = |key: &str| -> Option<&str> {
            if key == SECURITY_PROTOCOL_CONFIG {
                return Some("SSL");
            }
            let value = if prefixed {
                config.get(&format!("{prefix}{key}"))
            } else {
                config.get(key)
            };
            value.map(String::as_str)
        };
        let shown = |key: &str| {
            if prefixed {
                format!("{prefix}{key}")
            } else {
                key.to_string()
            }
        };
        let tls = Security::from_lookup(get)
            .map_err(|e| ConnectError::config(prefix, format!("https listeners: {e}")))?
            .tls
            .unwrap_or_default();
        let client_auth = match get(CLIENT_AUTH).map(|v| v.trim().to_ascii_lowercase()) {
            None => ClientAuth::None,
            Some(v) if v.is_empty() || v == "none" => ClientAuth::None,
            Some(v) if v == "requested" => ClientAuth::Requested,
            Some(v) if v == "required" => ClientAuth::Required,
            Some(v) => {
                return Err(ConnectError::config(
                    shown(CLIENT_AUTH),
                    format!(
                        "Invalid value {v} for configuration {}: String must be one of: \
                         required, requested, none",
                        shown(CLIENT_AUTH)
                    ),
                ))
            }
        };
        Ok(HttpsSettings {
            prefix: if prefixed { prefix } else { "" },
            tls,
            client_auth,
        })
    }

    fn setup_error(&self, e: crate::tls::TlsSetupError) -> ConnectError {
        let key = format!("{}{}", self.prefix, e.key);
        ConnectError::config(&key, format!("TLS setting {key}: {}", e.message))
    }

    /// The server side: this worker's certificate (required) and, when
    /// clients must show one, the certificates that sign theirs.
    pub fn acceptor(&self) -> Result<SslAcceptor> {
        if self.tls.identity.is_none() {
            let key = format!("{}ssl.keystore.location", self.prefix);
            return Err(ConnectError::config(
                &key,
                format!(
                    "an https listener needs this worker's certificate and key: set {key} \
                     (PEM or PKCS#12) or {}ssl.keystore.key with \
                     {}ssl.keystore.certificate.chain",
                    self.prefix, self.prefix
                ),
            ));
        }
        let openssl = |e: openssl::error::ErrorStack| {
            ConnectError::config(self.prefix, format!("OpenSSL: {e}"))
        };
        let mut b =
            SslAcceptor::mozilla_intermediate_v5(SslMethod::tls_server()).map_err(openssl)?;
        if self.tls.trust == crate::kafka::security::TrustStore::SystemDefault {
            b.set_default_verify_paths().map_err(openssl)?;
        }
        crate::tls::configure(&mut b, &self.tls).map_err(|e| self.setup_error(e))?;
        match self.client_auth {
            ClientAuth::None => b.set_verify(SslVerifyMode::NONE),
            ClientAuth::Requested => b.set_verify(SslVerifyMode::PEER),
            ClientAuth::Required => {
                b.set_verify(SslVerifyMode::PEER | SslVerifyMode::FAIL_IF_NO_PEER_CERT)
            }
        }
        Ok(b.build())
    }

    /// The client side, for requests to other workers over https.
    pub fn connector(&self) -> Result<HttpsConnector> {
        let mut b = SslConnector::builder(SslMethod::tls_client())
            .map_err(|e| ConnectError::config(self.prefix, format!("OpenSSL: {e}")))?;
        crate::tls::configure(&mut b, &self.tls).map_err(|e| self.setup_error(e))?;
        Ok(HttpsConnector {
            connector: b.build(),
            verify_hostname: self.tls.verify_hostname,
        })
    }
}

/// A TLS client context for requests to other workers.
#[derive(Clone)]
pub struct HttpsConnector {
    connector: SslConnector,
    verify_hostname: bool,
}

impl std::fmt::Debug for HttpsConnector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpsConnector")
            .field("verify_hostname", &self.verify_hostname)
            .finish_non_exhaustive()
    }
}

impl HttpsConnector {
    /// The TLS handshake over `tcp` with the worker at `host`, checking
    /// its certificate names `host` unless
    /// `ssl.endpoint.identification.algorithm` is empty.
    pub(super) async fn connect(
        &self,
        host: &str,
        tcp: TcpStream,
    ) -> std::result::Result<SslStream<TcpStream>, String> {
        let mut config = self.connector.configure().map_err(|e| e.to_string())?;
        config.set_verify_hostname(self.verify_hostname);
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let ssl = config.into_ssl(host).map_err(|e| e.to_string())?;
        let mut stream = SslStream::new(ssl, tcp).map_err(|e| e.to_string())?;
        match Pin::new(&mut stream).connect().await {
            Ok(()) => Ok(stream),
            Err(e) => {
                let verify = stream.ssl().verify_result();
                if verify != openssl::x509::X509VerifyResult::OK {
                    Err(format!(
                        "the worker's certificate was refused: {} (check \
                         listeners.https.ssl.truststore.location)",
                        verify.error_string()
                    ))
                } else {
                    Err(format!("TLS handshake: {e}"))
                }
            }
        }
    }
}

/// An https listener for axum: TCP connections are accepted here and
/// their handshakes run on tasks of their own (a slow or silent client
/// holds up no one), then handed to the server.
pub(super) struct TlsListener {
    handshaken: mpsc::Receiver<(SslStream<TcpStream>, SocketAddr)>,
    local: SocketAddr,
    accepting: tokio::task::JoinHandle<()>,
}

impl TlsListener {
    pub(super) fn new(tcp: TcpListener, acceptor: SslAcceptor) -> std::io::Result<TlsListener> {
        let local = tcp.local_addr()?;
        let (tx, rx) = mpsc::channel(HANDSHAKEN_QUEUE);
        let accepting = tokio::spawn(async move {
            loop {
                let (stream, peer) = match tcp.accept().await {
                    Ok(accepted) => accepted,
                    Err(e) => {
                        // Out of file descriptors and the like: as axum
                        // does, wait a little and accept again.
                        tracing::warn!(error = %e, "REST https listener: accept failed");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        continue;
                    }
                };
                let Ok(permit) = tx.clone().reserve_owned().await else {
                    return; // the server is gone
                };
                let ssl = match Ssl::new(acceptor.context()) {
                    Ok(ssl) => ssl,
                    Err(e) => {
                        tracing::warn!(error = %e, "REST https listener: no TLS session");
                        continue;
                    }
                };
                tokio::spawn(async move {
                    let Ok(mut tls) = SslStream::new(ssl, stream) else {
                        return;
                    };
                    let handshake = Pin::new(&mut tls).accept();
                    match tokio::time::timeout(HANDSHAKE_TIMEOUT, handshake).await {
                        Ok(Ok(())) => {
                            permit.send((tls, peer));
                        }
                        Ok(Err(e)) => {
                            tracing::debug!(%peer, error = %e, "REST https: TLS handshake failed")
                        }
                        Err(_) => {
                            tracing::debug!(%peer, "REST https: no TLS handshake within 10 s")
                        }
                    }
                });
            }
        });
        Ok(TlsListener {
            handshaken: rx,
            local,
            accepting,
        })
    }
}

impl Drop for TlsListener {
    fn drop(&mut self) {
        self.accepting.abort();
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = SslStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.handshaken.recv().await {
            Some(accepted) => accepted,
            // The accept loop ended: nothing more will come.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<SocketAddr> {
        Ok(self.local)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listeners_parse() {
        let l = ListenerSpec::parse("listeners", "http://127.0.0.1:8083").unwrap();
        assert_eq!(
            (l.scheme, l.addr.as_str()),
            (Scheme::Http, "127.0.0.1:8083")
        );
        let l = ListenerSpec::parse("listeners", "https://:8443").unwrap();
        assert_eq!((l.scheme, l.addr.as_str()), (Scheme::Https, "0.0.0.0:8443"));
        let l = ListenerSpec::parse("listeners", "http://[::1]:0/").unwrap();
        assert_eq!(l.addr, "[::1]:0");
        for bad in ["ftp://x:1", "http://x", "http://x:99999", "x:1"] {
            let e = ListenerSpec::parse("admin.listeners", bad).unwrap_err();
            assert!(e.to_string().contains("admin.listeners"), "{e}");
        }
    }

    #[test]
    fn https_settings_prefer_the_prefixed_keys() {
        let config = ConfigMap::from_pairs([
            ("ssl.keystore.location", "/worker.p12"),
            ("listeners.https.ssl.keystore.location", "/rest.pem"),
            ("listeners.https.ssl.client.auth", "required"),
        ]);
        let s = HttpsSettings::from_worker(&config, HTTPS_PREFIX).unwrap();
        assert_eq!(
            s.tls.identity,
            Some(crate::kafka::security::KeyStore::PemFile(
                "/rest.pem".into()
            ))
        );
        assert_eq!(s.client_auth, ClientAuth::Required);
        // No prefixed key: the worker's ssl.* keys.
        let config = ConfigMap::from_pairs([("ssl.keystore.location", "/worker.pem")]);
        let s = HttpsSettings::from_worker(&config, HTTPS_PREFIX).unwrap();
        assert_eq!(
            s.tls.identity,
            Some(crate::kafka::security::KeyStore::PemFile(
                "/worker.pem".into()
            ))
        );
        assert_eq!(s.client_auth, ClientAuth::None);
        let config = ConfigMap::from_pairs([("listeners.https.ssl.client.auth", "always")]);
        let e = HttpsSettings::from_worker(&config, HTTPS_PREFIX).unwrap_err();
        assert!(
            e.to_string().contains("listeners.https.ssl.client.auth"),
            "{e}"
        );
        // JKS is refused as for the Kafka clients, naming the prefix.
        let config = ConfigMap::from_pairs([("listeners.https.ssl.keystore.location", "/k.jks")]);
        let e = HttpsSettings::from_worker(&config, HTTPS_PREFIX).unwrap_err();
        assert!(e.to_string().contains("listeners.https."), "{e}");
    }

    #[test]
    fn an_https_listener_without_a_keystore_is_refused_naming_the_key() {
        let s = HttpsSettings::from_worker(&ConfigMap::default(), HTTPS_PREFIX).unwrap();
        let e = s.acceptor().err().unwrap();
        assert!(e.to_string().contains("ssl.keystore.location"), "{e}");
        let config = ConfigMap::from_pairs([(
            "listeners.https.ssl.keystore.location",
            "/nonexistent/rest.pem",
        )]);
        let e = HttpsSettings::from_worker(&config, HTTPS_PREFIX)
            .unwrap()
            .acceptor()
            .err()
            .unwrap();
        let m = e.to_string();
        assert!(
            m.contains("listeners.https.ssl.keystore.location") && m.contains("/nonexistent"),
            "{m}"
        );
    }
}
