//! TLS for the group connection, with the stores read by
//! [`connect_runtime::tls`] (OpenSSL, as librdkafka's data clients), so
//! every client reads the same files and verifies brokers the same way.

use std::pin::Pin;

use connect_runtime::kafka::security::TlsConfig;
use openssl::ssl::{ErrorCode, SslConnector, SslMethod};
use openssl::x509::X509VerifyResult;
use tokio::net::TcpStream;
use tokio_openssl::SslStream;

use super::error::GroupError;

/// A TLS client context built once from the `ssl.*` settings.
#[derive(Clone)]
pub(crate) struct TlsConnector {
    connector: SslConnector,
    verify_hostname: bool,
}

impl std::fmt::Debug for TlsConnector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsConnector")
            .field("verify_hostname", &self.verify_hostname)
            .finish_non_exhaustive()
    }
}

impl TlsConnector {
    /// Reads the stores named by `tls`; a file that cannot be read or
    /// parsed is an error naming its key.
    pub(crate) fn new(tls: &TlsConfig) -> Result<TlsConnector, GroupError> {
        let mut b =
            SslConnector::builder(SslMethod::tls_client()).map_err(|e| GroupError::TlsSetup {
                key: "security.protocol",
                message: format!("OpenSSL: {e}"),
            })?;
        connect_runtime::tls::configure(&mut b, tls).map_err(|e| GroupError::TlsSetup {
            key: e.key,
            message: e.message,
        })?;
        Ok(TlsConnector {
            connector: b.build(),
            verify_hostname: tls.verify_hostname,
        })
    }

    /// The TLS handshake over `tcp` with the broker at `addr`
    /// (`host:port`); the host is checked against the broker's certificate
    /// unless `ssl.endpoint.identification.algorithm` is empty.
    pub(crate) async fn connect(
        &self,
        addr: &str,
        tcp: TcpStream,
    ) -> Result<SslStream<TcpStream>, GroupError> {
        let host = host_of(addr);
        let handshake = |message: String| GroupError::TlsHandshake {
            addr: addr.to_owned(),
            message,
        };
        let mut config = self
            .connector
            .configure()
            .map_err(|e| handshake(e.to_string()))?;
        config.set_verify_hostname(self.verify_hostname);
        let ssl = config
            .into_ssl(host)
            .map_err(|e| handshake(e.to_string()))?;
        let mut stream = SslStream::new(ssl, tcp).map_err(|e| handshake(e.to_string()))?;
        match Pin::new(&mut stream).connect().await {
            Ok(()) => Ok(stream),
            Err(e) => {
                let verify = stream.ssl().verify_result();
                if verify != X509VerifyResult::OK {
                    return Err(handshake(format!(
                        "the broker's certificate was refused: {} (check \
                         ssl.truststore.location / ssl.truststore.certificates{})",
                        verify.error_string(),
                        if self.verify_hostname {
                            ", and ssl.endpoint.identification.algorithm if the host name \
                             is the problem"
                        } else {
                            ""
                        }
                    )));
                }
                match (e.code(), e.into_io_error()) {
                    // The connection broke: like any I/O error, retried.
                    (ErrorCode::SYSCALL, Ok(io)) => Err(GroupError::io(addr, io)),
                    (_, Ok(io)) => Err(handshake(io.to_string())),
                    (_, Err(e)) => Err(handshake(format!(
                        "{e} (a broker that requires a client certificate refuses \
                         connections without ssl.keystore.*)"
                    ))),
                }
            }
        }
    }
}

/// A TLS alert the broker sent after the handshake: with TLS 1.3 a broker
/// that requires a client certificate completes the handshake and refuses
/// the certificate (or its absence) on the first read. Such an error while
/// a connection opens is a [`GroupError::TlsHandshake`] (fatal), not an
/// I/O error to retry. Other errors (and every error of a plaintext
/// connection, which carries no OpenSSL error) pass unchanged.
pub(crate) fn alert_after_handshake(error: GroupError) -> GroupError {
    let GroupError::Io { addr, source } = &error else {
        return error;
    };
    let alert = source
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<openssl::ssl::Error>())
        .filter(|e| e.code() == ErrorCode::SSL)
        .map(|e| e.to_string());
    match alert {
        Some(alert) => GroupError::TlsHandshake {
            addr: addr.clone(),
            message: format!(
                "the broker refused the connection: {alert} (a broker that requires client \
                 certificates refuses connections without ssl.keystore.* or with a \
                 certificate its truststore does not hold)"
            ),
        },
        None => error,
    }
}

/// The host of `host:port` or `[v6]:port`.
fn host_of(addr: &str) -> &str {
    let host = match addr.rsplit_once(':') {
        Some((h, port)) if port.bytes().all(|b| b.is_ascii_digit()) => h,
        _ => addr,
    };
    host.trim_start_matches('[').trim_end_matches(']')
}

#[cfg(test)]
mod tests {
    use super::*;
    use connect_runtime::kafka::security::{KeyStore, TrustStore};
    use openssl::asn1::Asn1Time;
    use openssl::bn::{BigNum, MsbOption};
    use openssl::ec::{EcGroup, EcKey};
    use openssl::hash::MessageDigest;
    use openssl::nid::Nid;
    use openssl::pkey::{PKey, Private};
    use openssl::ssl::{Ssl, SslAcceptor, SslVerifyMode};
    use openssl::x509::extension::{BasicConstraints, SubjectAlternativeName};
    use openssl::x509::store::X509StoreBuilder;
    use openssl::x509::X509;
    use openssl::x509::{X509Builder, X509NameBuilder};
    use tokio::net::TcpListener;

    #[test]
    fn hosts_of_addresses() {
        assert_eq!(host_of("127.0.0.1:9093"), "127.0.0.1");
        assert_eq!(host_of("kafka-1.example:9093"), "kafka-1.example");
        assert_eq!(host_of("[::1]:9093"), "::1");
        assert_eq!(host_of("broker"), "broker");
    }

    #[test]
    fn unreadable_stores_name_their_key() {
        let e = TlsConnector::new(&TlsConfig {
            trust: TrustStore::PemFile("/nonexistent/ca.pem".into()),
            ..TlsConfig::default()
        })
        .unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains("ssl.truststore.location") && msg.contains("/nonexistent/ca.pem"),
            "{msg}"
        );
        assert!(e.is_fatal());
        let e = TlsConnector::new(&TlsConfig {
            trust: TrustStore::PemInline("not a certificate".into()),
            ..TlsConfig::default()
        })
        .unwrap_err();
        assert!(e.to_string().contains("ssl.truststore.certificates"), "{e}");
        let e = TlsConnector::new(&TlsConfig {
            identity: Some(KeyStore::PemInline {
                certificate_chain: "nope".into(),
                key: "nope".into(),
            }),
            ..TlsConfig::default()
        })
        .unwrap_err();
        assert!(
            e.to_string().contains("ssl.keystore.certificate.chain"),
            "{e}"
        );
        // The system's roots when no truststore is given.
        TlsConnector::new(&TlsConfig::default()).unwrap();
    }

    /// A key and a certificate signed by `issuer` (self-signed without),
    /// naming `sans` (DNS names or IPs).
    struct Pair {
        cert: X509,
        key: PKey<Private>,
    }

    fn pair(cn: &str, issuer: Option<&Pair>, sans: &[&str]) -> Pair {
        let group = EcGroup::from_curve_name(Nid::X9_62_PRIME256V1).unwrap();
        let key = PKey::from_ec_key(EcKey::generate(&group).unwrap()).unwrap();
        let mut name = X509NameBuilder::new().unwrap();
        name.append_entry_by_text("CN", cn).unwrap();
        let name = name.build();
        let mut b = X509Builder::new().unwrap();
        b.set_version(2).unwrap();
        let mut serial = BigNum::new().unwrap();
        serial.rand(64, MsbOption::MAYBE_ZERO, false).unwrap();
        b.set_serial_number(&serial.to_asn1_integer().unwrap())
            .unwrap();
        b.set_subject_name(&name).unwrap();
        b.set_issuer_name(issuer.map_or(&name, |i| i.cert.subject_name()))
            .unwrap();
        b.set_pubkey(&key).unwrap();
        b.set_not_before(&Asn1Time::days_from_now(0).unwrap())
            .unwrap();
        b.set_not_after(&Asn1Time::days_from_now(2).unwrap())
            .unwrap();
        if issuer.is_none() {
            b.append_extension(BasicConstraints::new().critical().ca().build().unwrap())
                .unwrap();
        }
        if !sans.is_empty() {
            let mut san = SubjectAlternativeName::new();
            for s in sans {
                if s.parse::<std::net::IpAddr>().is_ok() {
                    san.ip(s);
                } else {
                    san.dns(s);
                }
            }
            let ext = san.build(&b.x509v3_context(None, None)).unwrap();
            b.append_extension(ext).unwrap();
        }
        b.sign(issuer.map_or(&key, |i| &i.key), MessageDigest::sha256())
            .unwrap();
        Pair {
            cert: b.build(),
            key,
        }
    }

    fn pem(p: &Pair) -> String {
        String::from_utf8(p.cert.to_pem().unwrap()).unwrap()
    }

    /// A TLS server on 127.0.0.1 with `server`'s identity; with
    /// `client_ca`, it requires client certificates signed by it. It
    /// accepts connections until dropped and reports each handshake's
    /// outcome.
    async fn tls_server(
        server: &Pair,
        client_ca: Option<&Pair>,
    ) -> (String, tokio::sync::mpsc::UnboundedReceiver<bool>) {
        let mut acceptor = SslAcceptor::mozilla_intermediate_v5(SslMethod::tls_server()).unwrap();
        acceptor.set_certificate(&server.cert).unwrap();
        acceptor.set_private_key(&server.key).unwrap();
        if let Some(ca) = client_ca {
            let mut store = X509StoreBuilder::new().unwrap();
            store.add_cert(ca.cert.clone()).unwrap();
            acceptor.set_verify_cert_store(store.build()).unwrap();
            acceptor.add_client_ca(&ca.cert).unwrap();
            acceptor.set_verify(SslVerifyMode::PEER | SslVerifyMode::FAIL_IF_NO_PEER_CERT);
        }
        let acceptor = acceptor.build();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let ssl = Ssl::new(acceptor.context()).unwrap();
                let mut stream = SslStream::new(ssl, tcp).unwrap();
                let ok = Pin::new(&mut stream).accept().await.is_ok();
                let _ = tx.send(ok);
                // Hold the connection a moment so the client's first read
                // sees the server's alert, not a reset.
                tokio::time::sleep(std::time::Duration::from_millis(200)).await;
            }
        });
        (addr, rx)
    }

    async fn connect(tls: &TlsConfig, addr: &str) -> Result<(), GroupError> {
        let tcp = TcpStream::connect(addr).await.unwrap();
        TlsConnector::new(tls)?.connect(addr, tcp).await.map(|_| ())
    }

    fn trusting(ca: &Pair) -> TlsConfig {
        TlsConfig {
            trust: TrustStore::PemInline(pem(ca)),
            ..TlsConfig::default()
        }
    }

    #[tokio::test]
    async fn handshakes_check_the_chain_and_the_host_name() {
        let ca = pair("test CA", None, &[]);
        let broker = pair("broker", Some(&ca), &["localhost", "127.0.0.1"]);
        let (addr, _) = tls_server(&broker, None).await;
        connect(&trusting(&ca), &addr).await.unwrap();
        // The host name as a DNS name too.
        let by_name = addr.replace("127.0.0.1", "localhost");
        connect(&trusting(&ca), &by_name).await.unwrap();

        // Another CA: refused, fatal, and the error names the truststore.
        let other = pair("other CA", None, &[]);
        let e = connect(&trusting(&other), &addr).await.unwrap_err();
        assert!(matches!(e, GroupError::TlsHandshake { .. }), "{e}");
        assert!(e.is_fatal());
        assert!(e.to_string().contains("ssl.truststore"), "{e}");

        // A certificate for another host: refused unless host names are
        // not checked (ssl.endpoint.identification.algorithm empty).
        let elsewhere = pair("broker", Some(&ca), &["kafka.example"]);
        let (addr, _) = tls_server(&elsewhere, None).await;
        let e = connect(&trusting(&ca), &addr).await.unwrap_err();
        assert!(
            e.to_string()
                .contains("ssl.endpoint.identification.algorithm"),
            "{e}"
        );
        let unchecked = TlsConfig {
            verify_hostname: false,
            ..trusting(&ca)
        };
        connect(&unchecked, &addr).await.unwrap();
    }

    #[tokio::test]
    async fn client_certificates_from_inline_pem_and_their_absence() {
        let ca = pair("test CA", None, &[]);
        let broker = pair("broker", Some(&ca), &["127.0.0.1"]);
        let client = pair("worker", Some(&ca), &[]);
        let (addr, mut accepted) = tls_server(&broker, Some(&ca)).await;
        let with_identity = TlsConfig {
            identity: Some(KeyStore::PemInline {
                certificate_chain: pem(&client),
                key: String::from_utf8(client.key.private_key_to_pem_pkcs8().unwrap()).unwrap(),
            }),
            ..trusting(&ca)
        };
        connect(&with_identity, &addr).await.unwrap();
        assert_eq!(accepted.recv().await, Some(true));

        // Without one, TLS 1.3 completes the client's side of the
        // handshake; the broker's refusal arrives on the first read, which
        // opening a connection maps to a fatal handshake error.
        let e = super::super::conn::Connection::open(
            &addr,
            "t",
            &connect_runtime::kafka::security::Security {
                tls: Some(trusting(&ca)),
                sasl: None,
            },
            std::time::Duration::from_secs(10),
        )
        .await
        .err()
        .expect("the broker refuses a client without a certificate");
        assert_eq!(accepted.recv().await, Some(false));
        assert!(matches!(e, GroupError::TlsHandshake { .. }), "{e}");
        assert!(e.is_fatal());
        assert!(e.to_string().contains("ssl.keystore"), "{e}");

        // A key that does not match the certificate is a setup error.
        let stranger = pair("stranger", Some(&ca), &[]);
        let e = TlsConnector::new(&TlsConfig {
            identity: Some(KeyStore::PemInline {
                certificate_chain: pem(&client),
                key: String::from_utf8(stranger.key.private_key_to_pem_pkcs8().unwrap()).unwrap(),
            }),
            ..trusting(&ca)
        })
        .unwrap_err();
        assert!(e.to_string().contains("match the certificate"), "{e}");
    }
}
