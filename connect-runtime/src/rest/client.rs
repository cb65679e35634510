//! A small HTTP/1.1 client for requests between workers: forwarding a
//! REST request to the group leader, and internal requests, over http or
//! https. One connection per request; these calls are rare (config
//! writes).

use std::time::Duration;

use bytes::Bytes;
use connect_api::{ConfigMap, ConnectError, Result};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;

use super::listener::{HttpsConnector, HttpsSettings, HTTPS_PREFIX};

tokio::task_local! {
    /// The `Authorization` header of the REST request being handled, if
    /// any: a request this worker sends on while handling it (to the
    /// leader, to a task's owner) carries the user's credentials, as
    /// Kafka's forwarding does, so the other worker authenticates the same
    /// user (docs/SECURITY.md).
    pub(super) static CALLER_AUTHORIZATION: Option<String>;
}

/// What another worker answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpReply {
    /// The HTTP status.
    pub status: u16,
    /// `Content-Type`, if any.
    pub content_type: Option<String>,
    /// `Location`, if any (a created connector).
    pub location: Option<String>,
    /// The body.
    pub body: Vec<u8>,
}

/// Sends requests to other workers: over plain HTTP, and over https
/// with the worker's trust settings ([`RestClient::from_worker`]).
#[derive(Debug, Clone, Default)]
pub struct RestClient {
    https: Option<HttpsConnector>,
}

impl RestClient {
    /// A client for `http://` URLs only.
    pub fn plain() -> RestClient {
        RestClient::default()
    }

    /// A client that also reaches https workers, trusting what the https
    /// listeners' settings trust (`listeners.https.ssl.truststore.*`, or
    /// the worker's `ssl.*` keys) and showing their keystore as its client
    /// certificate, as Kafka's worker does. Settings that cannot be read
    /// are an error naming the key, found at startup rather than on the
    /// first forwarded request.
    ///
    /// A worker with no https listener and no `listeners.https.` key gets
    /// a plain client: its `ssl.*` keys are then only for its Kafka
    /// clients.
    pub fn from_worker(config: &ConfigMap) -> Result<RestClient> {
        let https = config.keys().any(|k| k.starts_with(HTTPS_PREFIX))
            || ["listeners", "rest.advertised.listener"]
                .iter()
                .filter_map(|k| config.get(*k))
                .any(|v| v.contains("https"));
        if !https {
            return Ok(RestClient::plain());
        }
        let settings = HttpsSettings::from_worker(config, HTTPS_PREFIX)?;
        Ok(RestClient {
            https: Some(settings.connector()?),
        })
    }

    /// Send `body` with `method` to `url` (`http(s)://host:port/path?query`)
    /// with `headers` (plus JSON content type and accept), within
    /// `timeout`. A failure to connect or to read the answer is a
    /// retriable error naming the request.
    pub async fn send(
        &self,
        method: &str,
        url: &str,
        body: Vec<u8>,
        headers: &[(&str, String)],
        timeout: Duration,
    ) -> Result<HttpReply> {
        let https = self.https.as_ref();
        let failed = |why: String| ConnectError::retriable(format!("{method} {url}: {why}"));
        let uri: hyper::Uri = url.parse().map_err(|e| failed(format!("bad URL: {e}")))?;
        let tls = match (uri.scheme_str(), https) {
            (Some("http"), _) => None,
            (Some("https"), Some(https)) => Some(https),
            (Some("https"), None) => {
                return Err(failed(
                    "an https worker URL, and this client has no TLS settings".into(),
                ))
            }
            _ => return Err(failed("worker URLs are http:// or https://".into())),
        };
        let host = uri
            .host()
            .ok_or_else(|| failed("no host".into()))?
            .to_string();
        let port = uri
            .port_u16()
            .unwrap_or(if tls.is_some() { 443 } else { 80 });
        let method = hyper::Method::from_bytes(method.as_bytes())
            .map_err(|e| failed(format!("bad method: {e}")))?;
        let work = async {
            let tcp = tokio::net::TcpStream::connect((host.as_str(), port))
                .await
                .map_err(|e| failed(format!("cannot connect: {e}")))?;
            let mut sender = match tls {
                None => http1(tcp).await,
                Some(tls) => {
                    let stream = tls
                        .connect(&host, tcp)
                        .await
                        .map_err(|e| failed(e.to_string()))?;
                    http1(stream).await
                }
            }
            .map_err(|e| failed(format!("handshake: {e}")))?;
            let mut request = hyper::Request::builder()
                .method(method)
                .uri(uri.path_and_query().map_or("/", |p| p.as_str()))
                .header(hyper::header::HOST, format!("{host}:{port}"))
                .header(hyper::header::CONTENT_TYPE, "application/json")
                .header(hyper::header::ACCEPT, "application/json");
            for (name, value) in headers {
                request = request.header(*name, value);
            }
            let caller = CALLER_AUTHORIZATION.try_with(|a| a.clone()).ok().flatten();
            if let Some(credentials) = caller {
                request = request.header(hyper::header::AUTHORIZATION, credentials);
            }
            let request = request
                .body(Full::new(Bytes::from(body)))
                .map_err(|e| failed(format!("request: {e}")))?;
            let response = sender
                .send_request(request)
                .await
                .map_err(|e| failed(format!("no response: {e}")))?;
            let header = |name: hyper::header::HeaderName| {
                response
                    .headers()
                    .get(name)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_string)
            };
            let status = response.status().as_u16();
            let content_type = header(hyper::header::CONTENT_TYPE);
            let location = header(hyper::header::LOCATION);
            let body = response
                .into_body()
                .collect()
                .await
                .map_err(|e| failed(format!("reading the response: {e}")))?
                .to_bytes()
                .to_vec();
            Ok(HttpReply {
                status,
                content_type,
                location,
                body,
            })
        };
        tokio::time::timeout(timeout, work)
            .await
            .map_err(|_| failed(format!("no answer within {timeout:?}")))?
    }
}

/// An HTTP/1.1 connection over `io`, driven on its own task.
async fn http1<T>(io: T) -> hyper::Result<hyper::client::conn::http1::SendRequest<Full<Bytes>>>
where
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(io)).await?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok(sender)
}
