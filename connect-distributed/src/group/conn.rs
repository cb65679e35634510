//! One connection to a broker: request/response in order, correlation
//! ids, TLS for `SSL` and `SASL_SSL` (the handshake right after TCP
//! connects), the API versions negotiated when it opens and, for the SASL
//! protocols, authentication right after ApiVersions: SaslHandshake v1,
//! then one SaslAuthenticate for `PLAIN` or two for `SCRAM-SHA-256/512`.

use std::time::Duration;

use bytes::Bytes;
use connect_runtime::kafka::security::{SaslCredentials, SaslMechanism, Security};
use kafka_protocol::messages::ApiVersionsRequest;
use kafka_protocol::messages::ApiVersionsResponse;
use kafka_protocol::messages::{
    SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest, SaslHandshakeResponse,
};
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion, StrBytes};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

use super::error::{ErrorCode, GroupError};
use super::scram::ScramClient;
use super::tls::TlsConnector;
use super::wire::{self, ApiVersionTable, GroupApi, HasErrorCode, Reply};

/// The byte stream under a connection: TCP, or TLS over TCP.
trait Stream: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Stream for T {}

/// A connection to one broker (TCP or TLS, with or without SASL), with
/// negotiated versions.
///
/// Requests go one at a time. If a request's future is dropped half way
/// (cancelled by `select!` or a timeout), the connection is marked
/// poisoned, because a late response would be read as the next one's.
pub(crate) struct Connection {
    stream: Box<dyn Stream>,
    addr: String,
    client_id: String,
    next_correlation: i32,
    versions: ApiVersionTable,
    in_flight: bool,
}

impl Connection {
    /// Connects (with the TLS handshake for `SSL` and `SASL_SSL`),
    /// negotiates versions with ApiVersions and, with SASL, authenticates.
    ///
    /// The TLS stores are read at each connection: connections are opened
    /// rarely (start, coordinator moves, broken connections), and a
    /// certificate renewed on disk is picked up by the next one.
    pub(crate) async fn open(
        addr: &str,
        client_id: &str,
        security: &Security,
        timeout: Duration,
    ) -> Result<Connection, GroupError> {
        let tls = security.tls.as_ref().map(TlsConnector::new).transpose()?;
        let connect = async {
            let tcp = TcpStream::connect(addr)
                .await
                .map_err(|e| GroupError::io(addr, e))?;
            // Latency matters more than throughput for these small requests.
            let _ = tcp.set_nodelay(true);
            Ok::<Box<dyn Stream>, GroupError>(match &tls {
                None => Box::new(tcp),
                Some(tls) => Box::new(tls.connect(addr, tcp).await?),
            })
        };
        let stream =
            tokio::time::timeout(timeout, connect)
                .await
                .map_err(|_| GroupError::Timeout {
                    addr: addr.to_owned(),
                    api: "connect",
                    after: timeout,
                })??;
        let mut conn = Connection {
            stream,
            addr: addr.to_owned(),
            client_id: client_id.to_owned(),
            next_correlation: 0,
            versions: ApiVersionTable::default(),
            in_flight: false,
        };
        conn.versions = conn
            .negotiate(timeout)
            .await
            .map_err(super::tls::alert_after_handshake)?;
        if let Some(credentials) = &security.sasl {
            conn.authenticate(credentials, timeout).await?;
        }
        Ok(conn)
    }

    /// SaslHandshake (v1) naming the mechanism, then the mechanism's
    /// SaslAuthenticate exchange: one round trip with
    /// `\0username\0password` for `PLAIN` (RFC 4616), two for SCRAM.
    async fn authenticate(
        &mut self,
        credentials: &SaslCredentials,
        timeout: Duration,
    ) -> Result<(), GroupError> {
        let mechanism = credentials.mechanism.name();
        let handshake =
            SaslHandshakeRequest::default().with_mechanism(StrBytes::from_static_str(mechanism));
        let reply: Reply<SaslHandshakeResponse> = self
            .send(GroupApi::SaslHandshake, &handshake, timeout)
            .await?;
        match reply {
            Reply::Ok(_) => {}
            Reply::Err(ErrorCode::UNSUPPORTED_SASL_MECHANISM, r) => {
                return Err(GroupError::SaslMechanism {
                    addr: self.addr.clone(),
                    mechanism,
                    enabled: r
                        .map(|r| r.mechanisms.iter().map(|m| m.to_string()).collect())
                        .unwrap_or_default(),
                })
            }
            Reply::Err(code, _) => {
                return Err(GroupError::Broker {
                    api: GroupApi::SaslHandshake.name(),
                    code,
                    message: None,
                })
            }
        }
        match credentials.mechanism {
            SaslMechanism::Plain => {
                let mut token =
                    Vec::with_capacity(2 + credentials.username.len() + credentials.password.len());
                token.push(0);
                token.extend_from_slice(credentials.username.as_bytes());
                token.push(0);
                token.extend_from_slice(credentials.password.as_bytes());
                self.sasl_round(credentials, token, timeout).await?;
                Ok(())
            }
            SaslMechanism::ScramSha256 | SaslMechanism::ScramSha512 => {
                let scram = ScramClient::new(
                    credentials.mechanism,
                    &credentials.username,
                    &credentials.password,
                );
                let server_first = self
                    .sasl_round(credentials, scram.client_first(), timeout)
                    .await?;
                let addr = self.addr.clone();
                let refused = |e: super::scram::ScramError| GroupError::Authentication {
                    addr: addr.clone(),
                    mechanism,
                    username: credentials.username.clone(),
                    message: Some(e.to_string()),
                };
                let (client_final, expected) =
                    scram.client_final(&server_first).map_err(refused)?;
                let server_final = self.sasl_round(credentials, client_final, timeout).await?;
                expected.verify(&server_final).map_err(refused)
            }
        }
    }

    /// One SaslAuthenticate round trip: sends `token`, returns the
    /// broker's bytes.
    async fn sasl_round(
        &mut self,
        credentials: &SaslCredentials,
        token: Vec<u8>,
        timeout: Duration,
    ) -> Result<Bytes, GroupError> {
        let authenticate = SaslAuthenticateRequest::default().with_auth_bytes(Bytes::from(token));
        let reply: Reply<SaslAuthenticateResponse> = self
            .send(GroupApi::SaslAuthenticate, &authenticate, timeout)
            .await?;
        match reply {
            Reply::Ok(r) => Ok(r.auth_bytes),
            Reply::Err(ErrorCode::SASL_AUTHENTICATION_FAILED, r) => {
                Err(GroupError::Authentication {
                    addr: self.addr.clone(),
                    mechanism: credentials.mechanism.name(),
                    username: credentials.username.clone(),
                    message: r.and_then(|r| r.error_message).map(|m| m.to_string()),
                })
            }
            Reply::Err(code, r) => Err(GroupError::Broker {
                api: GroupApi::SaslAuthenticate.name(),
                code,
                message: r.and_then(|r| r.error_message).map(|m| m.to_string()),
            }),
        }
    }

    /// Whether the connection can take another request (no earlier one
    /// was interrupted).
    pub(crate) fn is_usable(&self) -> bool {
        !self.in_flight
    }

    /// The version this connection uses for `api`.
    pub(crate) fn version(&self, api: GroupApi) -> Result<i16, GroupError> {
        self.versions
            .negotiate(api)
            .map_err(|(broker_min, broker_max)| GroupError::UnsupportedVersion {
                addr: self.addr.clone(),
                api: api.name(),
                broker_min,
                broker_max,
                client_min: api.min_version(),
                client_max: api.max_version(),
            })
    }

    /// ApiVersions at v2. A broker that does not take it answers in v0
    /// with `UNSUPPORTED_VERSION`; it is then asked again at v0, which
    /// every broker reads.
    async fn negotiate(&mut self, timeout: Duration) -> Result<ApiVersionTable, GroupError> {
        let request = ApiVersionsRequest::default();
        let mut version = GroupApi::ApiVersions.preferred_max();
        loop {
            let reply: Reply<ApiVersionsResponse> = self
                .request(GroupApi::ApiVersions, version, &request, timeout)
                .await?;
            match reply {
                Reply::Ok(r) => return Ok(wire::version_table(&r)),
                Reply::Err(ErrorCode::UNSUPPORTED_VERSION, _) if version > 0 => version = 0,
                Reply::Err(code, _) => {
                    return Err(GroupError::Broker {
                        api: GroupApi::ApiVersions.name(),
                        code,
                        message: None,
                    })
                }
            }
        }
    }

    /// Sends `request` with the negotiated version and reads the response.
    pub(crate) async fn send<Req, Resp>(
        &mut self,
        api: GroupApi,
        request: &Req,
        timeout: Duration,
    ) -> Result<Reply<Resp>, GroupError>
    where
        Req: Encodable + HeaderVersion,
        Resp: Decodable + HeaderVersion + HasErrorCode,
    {
        let version = self.version(api)?;
        self.request(api, version, request, timeout).await
    }

    async fn request<Req, Resp>(
        &mut self,
        api: GroupApi,
        version: i16,
        request: &Req,
        timeout: Duration,
    ) -> Result<Reply<Resp>, GroupError>
    where
        Req: Encodable + HeaderVersion,
        Resp: Decodable + HeaderVersion + HasErrorCode,
    {
        if self.in_flight {
            return Err(GroupError::Poisoned {
                addr: self.addr.clone(),
            });
        }
        let correlation_id = self.next_correlation;
        self.next_correlation = self.next_correlation.wrapping_add(1);
        let frame = wire::encode_request(api, version, correlation_id, &self.client_id, request)
            .map_err(|source| GroupError::Wire {
                addr: self.addr.clone(),
                source,
            })?;
        self.in_flight = true;
        let body = match tokio::time::timeout(timeout, self.roundtrip(&frame)).await {
            Ok(r) => r?,
            Err(_) => {
                return Err(GroupError::Timeout {
                    addr: self.addr.clone(),
                    api: api.name(),
                    after: timeout,
                })
            }
        };
        self.in_flight = false;
        wire::decode_response(api, version, correlation_id, body).map_err(|source| {
            // After a bad response the stream position cannot be trusted.
            self.in_flight = true;
            GroupError::Wire {
                addr: self.addr.clone(),
                source,
            }
        })
    }

    async fn roundtrip(&mut self, frame: &[u8]) -> Result<Bytes, GroupError> {
        let addr = self.addr.clone();
        let io = |e| GroupError::io(&addr, e);
        self.stream.write_all(frame).await.map_err(io)?;
        let mut prefix = [0u8; 4];
        self.stream.read_exact(&mut prefix).await.map_err(io)?;
        let len = wire::frame_len(prefix).map_err(|source| GroupError::Wire {
            addr: addr.clone(),
            source,
        })?;
        let mut body = vec![0u8; len];
        self.stream.read_exact(&mut body).await.map_err(io)?;
        Ok(Bytes::from(body))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::group::error::WireError;
    use tokio::net::TcpListener;

    /// A fake broker: answers each connection's first request with `reply`
    /// (built from the request's correlation id), then closes.
    async fn fake_broker(replies: Vec<fn(i32) -> Vec<u8>>) -> String {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        tokio::spawn(async move {
            for reply in replies {
                let (mut s, _) = listener.accept().await.unwrap();
                let mut size = [0u8; 4];
                s.read_exact(&mut size).await.unwrap();
                let mut req = vec![0u8; i32::from_be_bytes(size) as usize];
                s.read_exact(&mut req).await.unwrap();
                let corr = i32::from_be_bytes(req[4..8].try_into().unwrap());
                let _ = s.write_all(&reply(corr)).await;
                let _ = s.shutdown().await;
            }
        });
        addr
    }

    fn framed(body: Vec<u8>) -> Vec<u8> {
        let mut f = (body.len() as i32).to_be_bytes().to_vec();
        f.extend(body);
        f
    }

    #[tokio::test]
    async fn bad_responses_are_typed_errors() {
        let addr = fake_broker(vec![
            // Another request's correlation id.
            (|corr: i32| framed([(corr + 1).to_be_bytes().to_vec(), vec![0; 8]].concat()))
                as fn(i32) -> Vec<u8>,
            // A frame size beyond the limit.
            |_| i32::MAX.to_be_bytes().to_vec(),
            // A negative frame size.
            |_| (-7i32).to_be_bytes().to_vec(),
            // A frame cut short by the connection closing.
            |corr| [100i32.to_be_bytes().to_vec(), corr.to_be_bytes().to_vec()].concat(),
            // ApiVersions v2 body that ends after the error code.
            |corr| framed([corr.to_be_bytes().to_vec(), vec![0, 0]].concat()),
            // An error code with nothing else.
            |corr| framed([corr.to_be_bytes().to_vec(), vec![0, 31]].concat()),
        ])
        .await;
        let t = Duration::from_secs(5);
        // The next connection fails with this wire error.
        macro_rules! expect_wire {
            ($source:pat) => {
                let e = Connection::open(&addr, "t", &Security::default(), t)
                    .await
                    .err()
                    .unwrap();
                assert!(
                    matches!(
                        &e,
                        GroupError::Wire {
                            source: $source,
                            ..
                        }
                    ),
                    "{e}"
                );
            };
        }
        expect_wire!(WireError::CorrelationMismatch { .. });
        expect_wire!(WireError::InvalidFrameSize { .. });
        expect_wire!(WireError::InvalidFrameSize { size: -7, .. });
        let e = Connection::open(&addr, "t", &Security::default(), t)
            .await
            .err()
            .unwrap();
        assert!(matches!(&e, GroupError::Io { .. }), "{e}");
        expect_wire!(WireError::Malformed {
            api: "ApiVersions",
            ..
        });
        let e = Connection::open(&addr, "t", &Security::default(), t)
            .await
            .err()
            .unwrap();
        assert!(
            matches!(
                &e,
                GroupError::Broker {
                    code: ErrorCode(31),
                    ..
                }
            ),
            "{e}"
        );
    }

    #[tokio::test]
    async fn silence_is_a_timeout() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let keep = tokio::spawn(async move {
            let (s, _) = listener.accept().await.unwrap();
            tokio::time::sleep(Duration::from_secs(30)).await;
            drop(s);
        });
        let e = Connection::open(&addr, "t", &Security::default(), Duration::from_millis(200))
            .await
            .err()
            .unwrap();
        assert!(
            matches!(
                &e,
                GroupError::Timeout {
                    api: "ApiVersions",
                    ..
                }
            ),
            "{e}"
        );
        keep.abort();
    }
}
