//! A small HTTP/1.1 client for requests between workers: forwarding a
//! REST request to the group leader, and internal requests. One
//! connection per request; these calls are rare (config writes).

use std::time::Duration;

use bytes::Bytes;
use connect_api::{ConnectError, Result};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;

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

/// Send `body` with `method` to `url` (`http://host:port/path?query`) with
/// `headers` (plus JSON content type and accept), within `timeout`. A
/// failure to connect or to read the answer is a retriable error naming
/// the request.
pub async fn send(
    method: &str,
    url: &str,
    body: Vec<u8>,
    headers: &[(&str, String)],
    timeout: Duration,
) -> Result<HttpReply> {
    let failed = |why: String| ConnectError::retriable(format!("{method} {url}: {why}"));
    let uri: hyper::Uri = url.parse().map_err(|e| failed(format!("bad URL: {e}")))?;
    if uri.scheme_str() != Some("http") {
        return Err(failed("only http:// worker URLs are supported".into()));
    }
    let host = uri
        .host()
        .ok_or_else(|| failed("no host".into()))?
        .to_string();
    let port = uri.port_u16().unwrap_or(80);
    let method = hyper::Method::from_bytes(method.as_bytes())
        .map_err(|e| failed(format!("bad method: {e}")))?;
    let work = async {
        let tcp = tokio::net::TcpStream::connect((host.as_str(), port))
            .await
            .map_err(|e| failed(format!("cannot connect: {e}")))?;
        let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
            .await
            .map_err(|e| failed(format!("handshake: {e}")))?;
        tokio::spawn(async move {
            let _ = conn.await;
        });
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
