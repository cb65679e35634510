//! The PostgreSQL wire protocol, as much of it as a change-data-capture
//! source needs: start-up and authentication (trust, password, MD5,
//! SCRAM-SHA-256), simple queries whose rows arrive as text, and the
//! replication sub-protocol (`START_REPLICATION`, WAL data, keepalives,
//! standby status updates).
//!
//! Neither tokio-postgres nor sqlx speaks the replication protocol, so the
//! framing is written here; message encoding and the authentication
//! exchanges come from `postgres-protocol`, rust-postgres's protocol crate.

use bytes::{Buf, BufMut, Bytes, BytesMut};
use connect_api::{ConnectError, Result};
use postgres_protocol::authentication::md5_hash;
use postgres_protocol::authentication::sasl::{ChannelBinding, ScramSha256, SCRAM_SHA_256};
use postgres_protocol::message::frontend;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;

/// The largest backend message accepted (PostgreSQL's own limit for a
/// field is 1 GiB); a bigger length means the bytes are not PostgreSQL's.
const MAX_MESSAGE: usize = 1 << 30;

/// Microseconds between the Unix epoch and PostgreSQL's (2000-01-01).
pub(crate) const PG_EPOCH_OFFSET_MICROS: i64 = 946_684_800_000_000;

/// Where the database is and who connects.
#[derive(Clone)]
pub(crate) struct Endpoint {
    pub host: String,
    pub port: u16,
    pub user: String,
    pub password: Option<String>,
    pub dbname: String,
    pub connect_timeout: Duration,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("user", &self.user)
            .field("password", &self.password.as_ref().map(|_| "[hidden]"))
            .field("dbname", &self.dbname)
            .finish()
    }
}

impl Endpoint {
    fn describe(&self) -> String {
        format!(
            "PostgreSQL at {}:{} (database {}, user {})",
            self.host, self.port, self.dbname, self.user
        )
    }
}

/// A server error: SQLSTATE, message, detail and hint.
#[derive(Debug, Clone)]
pub(crate) struct ServerError {
    pub code: String,
    pub message: String,
    pub detail: Option<String>,
    pub hint: Option<String>,
}

impl ServerError {
    fn parse(mut body: Bytes) -> ServerError {
        let mut e = ServerError {
            code: String::new(),
            message: String::new(),
            detail: None,
            hint: None,
        };
        while body.has_remaining() {
            let field = body.get_u8();
            if field == 0 {
                break;
            }
            let value = take_cstr(&mut body).unwrap_or_default();
            match field {
                b'C' => e.code = value,
                b'M' => e.message = value,
                b'D' => e.detail = Some(value),
                b'H' => e.hint = Some(value),
                _ => {}
            }
        }
        e
    }

    /// Whether waiting and trying again may succeed: the server is going
    /// away or starting, out of resources, or the slot is still held by a
    /// connection that is closing.
    pub(crate) fn is_transient(&self) -> bool {
        self.code.starts_with("08")
            || self.code.starts_with("53")
            || self.code.starts_with("57P")
            || self.code == "55006"
            || self.code == "40001"
            || self.code == "40P01"
    }

    pub(crate) fn into_connect(self, context: &str) -> ConnectError {
        let mut text = format!("{context}: {} (SQLSTATE {})", self.message, self.code);
        if let Some(d) = &self.detail {
            text.push_str(&format!("; {d}"));
        }
        if let Some(h) = &self.hint {
            text.push_str(&format!("; hint: {h}"));
        }
        if self.is_transient() {
            ConnectError::retriable(text)
        } else {
            ConnectError::other(text)
        }
    }
}

fn take_cstr(buf: &mut Bytes) -> Option<String> {
    let end = buf.iter().position(|b| *b == 0)?;
    let s = String::from_utf8_lossy(&buf[..end]).into_owned();
    buf.advance(end + 1);
    Some(s)
}

fn io_error(what: &str, e: std::io::Error) -> ConnectError {
    ConnectError::retriable(format!("{what}: {e}")).with_source(e)
}

fn protocol_error(message: impl Into<String>) -> ConnectError {
    ConnectError::other(format!(
        "unexpected bytes from the server (is it PostgreSQL?): {}",
        message.into()
    ))
}

/// Reads whole backend messages from a byte stream.
pub(crate) struct MessageReader<R> {
    io: R,
    buf: BytesMut,
}

impl<R: AsyncRead + Unpin> MessageReader<R> {
    fn new(io: R) -> Self {
        MessageReader {
            io,
            buf: BytesMut::with_capacity(64 * 1024),
        }
    }

    /// The next message: its tag and its body (without tag and length).
    pub(crate) async fn next(&mut self) -> Result<(u8, Bytes)> {
        loop {
            if self.buf.len() >= 5 {
                let len = i32::from_be_bytes([self.buf[1], self.buf[2], self.buf[3], self.buf[4]]);
                let len = usize::try_from(len)
                    .ok()
                    .filter(|l| (4..=MAX_MESSAGE).contains(l))
                    .ok_or_else(|| protocol_error(format!("a message length of {len}")))?;
                if self.buf.len() > len {
                    let mut message = self.buf.split_to(len + 1);
                    let tag = message[0];
                    message.advance(5);
                    return Ok((tag, message.freeze()));
                }
                self.buf.reserve(len + 1 - self.buf.len());
            }
            let n = self
                .io
                .read_buf(&mut self.buf)
                .await
                .map_err(|e| io_error("reading from PostgreSQL failed", e))?;
            if n == 0 {
                return Err(ConnectError::retriable(
                    "PostgreSQL closed the connection (server restarted or connection terminated)",
                ));
            }
        }
    }
}

/// A row of a simple query: each column as text, `None` for NULL.
#[derive(Debug, Clone)]
pub(crate) struct Row(Vec<Option<Bytes>>);

impl Row {
    fn parse(mut body: Bytes) -> Result<Row> {
        if body.remaining() < 2 {
            return Err(protocol_error("a short DataRow"));
        }
        let count = body.get_i16().max(0) as usize;
        let mut values = Vec::with_capacity(count);
        for _ in 0..count {
            if body.remaining() < 4 {
                return Err(protocol_error("a short DataRow"));
            }
            let len = body.get_i32();
            if len < 0 {
                values.push(None);
            } else {
                let len = len as usize;
                if body.remaining() < len {
                    return Err(protocol_error("a short DataRow value"));
                }
                values.push(Some(body.split_to(len)));
            }
        }
        Ok(Row(values))
    }

    /// The columns, as text bytes.
    pub(crate) fn values(&self) -> &[Option<Bytes>] {
        &self.0
    }

    /// Column `i` as a string (`None` for NULL or a missing column).
    pub(crate) fn text(&self, i: usize) -> Option<&str> {
        self.0
            .get(i)?
            .as_ref()
            .and_then(|b| std::str::from_utf8(b).ok())
    }
}

/// A connection to PostgreSQL, either plain or in replication mode
/// (`replication=database`: replication commands and simple queries).
pub(crate) struct Connection {
    reader: MessageReader<OwnedReadHalf>,
    writer: OwnedWriteHalf,
    out: BytesMut,
    endpoint: Endpoint,
    /// Set while a query's rows are being read with [`Connection::next_row`].
    in_query: bool,
}

impl Connection {
    /// Connects and authenticates. `replication` opens a logical
    /// replication connection.
    pub(crate) async fn connect(endpoint: &Endpoint, replication: bool) -> Result<Connection> {
        let what = endpoint.describe();
        let stream = tokio::time::timeout(
            endpoint.connect_timeout,
            TcpStream::connect((endpoint.host.as_str(), endpoint.port)),
        )
        .await
        .map_err(|_| {
            ConnectError::retriable(format!(
                "connecting to {what} timed out after {:?}",
                endpoint.connect_timeout
            ))
        })?
        .map_err(|e| io_error(&format!("connecting to {what} failed"), e))?;
        let _ = stream.set_nodelay(true);
        let (read, writer) = stream.into_split();
        let mut conn = Connection {
            reader: MessageReader::new(read),
            writer,
            out: BytesMut::with_capacity(1024),
            endpoint: endpoint.clone(),
            in_query: false,
        };
        let mut params: Vec<(&str, &str)> = vec![
            ("user", endpoint.user.as_str()),
            ("database", endpoint.dbname.as_str()),
            ("application_name", "connect-postgres"),
            ("client_encoding", "UTF8"),
            ("DateStyle", "ISO, YMD"),
            ("TimeZone", "UTC"),
            ("IntervalStyle", "iso_8601"),
            ("extra_float_digits", "3"),
        ];
        if replication {
            params.push(("replication", "database"));
        }
        frontend::startup_message(params, &mut conn.out)
            .map_err(|e| ConnectError::other(format!("cannot encode the start-up message: {e}")))?;
        conn.flush().await?;
        conn.authenticate().await?;
        Ok(conn)
    }

    async fn flush(&mut self) -> Result<()> {
        let what = self.endpoint.describe();
        self.writer
            .write_all(&self.out)
            .await
            .map_err(|e| io_error(&format!("writing to {what} failed"), e))?;
        self.out.clear();
        Ok(())
    }

    async fn authenticate(&mut self) -> Result<()> {
        let what = self.endpoint.describe();
        let configured = self.endpoint.password.clone();
        let password = || {
            configured.clone().ok_or_else(|| {
                ConnectError::config(
                    "database.password",
                    format!("{what} asks for a password and none is configured"),
                )
            })
        };
        let mut scram: Option<ScramSha256> = None;
        loop {
            let (tag, mut body) = self.reader.next().await?;
            match tag {
                b'R' => {
                    if body.remaining() < 4 {
                        return Err(protocol_error("a short authentication request"));
                    }
                    match body.get_i32() {
                        0 => {}
                        3 => {
                            let p = password()?;
                            frontend::password_message(p.as_bytes(), &mut self.out)
                                .map_err(|e| ConnectError::other(e.to_string()))?;
                            self.flush().await?;
                        }
                        5 => {
                            let p = password()?;
                            if body.remaining() < 4 {
                                return Err(protocol_error("a short MD5 salt"));
                            }
                            let salt = [body[0], body[1], body[2], body[3]];
                            let hash = md5_hash(self.endpoint.user.as_bytes(), p.as_bytes(), salt);
                            frontend::password_message(hash.as_bytes(), &mut self.out)
                                .map_err(|e| ConnectError::other(e.to_string()))?;
                            self.flush().await?;
                        }
                        10 => {
                            let mechanisms: Vec<String> =
                                std::iter::from_fn(|| take_cstr(&mut body).filter(|s| !s.is_empty()))
                                    .collect();
                            if !mechanisms.iter().any(|m| m == SCRAM_SHA_256) {
                                return Err(ConnectError::other(format!(
                                    "{what} offers SASL mechanisms {mechanisms:?}; only {SCRAM_SHA_256} is supported"
                                )));
                            }
                            let s = ScramSha256::new(password()?.as_bytes(), ChannelBinding::unsupported());
                            frontend::sasl_initial_response(SCRAM_SHA_256, s.message(), &mut self.out)
                                .map_err(|e| ConnectError::other(e.to_string()))?;
                            self.flush().await?;
                            scram = Some(s);
                        }
                        11 => {
                            let s = scram
                                .as_mut()
                                .ok_or_else(|| protocol_error("SASL continue before SASL start"))?;
                            s.update(&body).map_err(|e| {
                                ConnectError::other(format!("SCRAM authentication with {what} failed: {e}"))
                            })?;
                            frontend::sasl_response(s.message(), &mut self.out)
                                .map_err(|e| ConnectError::other(e.to_string()))?;
                            self.flush().await?;
                        }
                        12 => {
                            let s = scram
                                .as_mut()
                                .ok_or_else(|| protocol_error("SASL final before SASL start"))?;
                            s.finish(&body).map_err(|e| {
                                ConnectError::other(format!(
                                    "SCRAM authentication with {what} failed (the server's proof is wrong): {e}"
                                ))
                            })?;
                        }
                        other => {
                            return Err(ConnectError::other(format!(
                                "{what} asks for authentication method {other}, which is not supported \
                                 (trust, password, md5 and scram-sha-256 are)"
                            )))
                        }
                    }
                }
                b'E' => {
                    return Err(
                        ServerError::parse(body).into_connect(&format!("connecting to {what}"))
                    )
                }
                b'Z' => return Ok(()),
                // ParameterStatus, BackendKeyData, notices.
                _ => {}
            }
        }
    }

    /// Runs `sql` (one or more statements) and collects every row.
    pub(crate) async fn query(&mut self, sql: &str) -> Result<Vec<Row>> {
        self.start_query(sql).await?;
        let mut rows = Vec::new();
        while let Some(row) = self.next_row().await? {
            rows.push(row);
        }
        Ok(rows)
    }

    /// Runs `sql` for its effect.
    pub(crate) async fn execute(&mut self, sql: &str) -> Result<()> {
        self.query(sql).await.map(drop)
    }

    /// Sends `sql`; its rows are then read one by one with
    /// [`Connection::next_row`] (rows stream from the socket: a large table
    /// is never held in memory).
    pub(crate) async fn start_query(&mut self, sql: &str) -> Result<()> {
        if self.in_query {
            return Err(ConnectError::other(
                "internal error: a query was started before the previous one's rows were read",
            ));
        }
        frontend::query(sql, &mut self.out)
            .map_err(|e| ConnectError::other(format!("cannot encode a query: {e}")))?;
        self.flush().await?;
        self.in_query = true;
        Ok(())
    }

    /// The running query's next row; `None` when it is done.
    pub(crate) async fn next_row(&mut self) -> Result<Option<Row>> {
        if !self.in_query {
            return Ok(None);
        }
        let mut error: Option<ServerError> = None;
        loop {
            let (tag, body) = self.reader.next().await?;
            match tag {
                b'D' if error.is_none() => return Row::parse(body).map(Some),
                b'E' => error = Some(ServerError::parse(body)),
                b'Z' => {
                    self.in_query = false;
                    return match error {
                        Some(e) => Err(e.into_connect(&format!(
                            "a statement on {} failed",
                            self.endpoint.describe()
                        ))),
                        None => Ok(None),
                    };
                }
                // RowDescription, CommandComplete, EmptyQueryResponse,
                // notices, rows after an error.
                _ => {}
            }
        }
    }

    /// `START_REPLICATION SLOT ... LOGICAL ...` and hands the connection
    /// over as a stream of WAL messages.
    pub(crate) async fn start_replication(
        mut self,
        slot: &str,
        start_lsn: u64,
        publication: &str,
    ) -> Result<(MessageReader<OwnedReadHalf>, StatusWriter)> {
        let sql = format!(
            "START_REPLICATION SLOT {} LOGICAL {} (\"proto_version\" '1', \"publication_names\" {}, \"messages\" 'true')",
            quote_ident(slot),
            format_lsn(start_lsn),
            quote_literal(&quote_ident(publication)),
        );
        frontend::query(&sql, &mut self.out)
            .map_err(|e| ConnectError::other(format!("cannot encode a query: {e}")))?;
        self.flush().await?;
        loop {
            let (tag, body) = self.reader.next().await?;
            match tag {
                b'W' => break,
                b'E' => {
                    return Err(ServerError::parse(body).into_connect(&format!(
                        "starting replication from slot '{slot}' at {} on {}",
                        format_lsn(start_lsn),
                        self.endpoint.describe()
                    )))
                }
                _ => {}
            }
        }
        Ok((
            self.reader,
            StatusWriter {
                writer: self.writer,
                out: self.out,
            },
        ))
    }
}

/// A message of the replication stream.
#[derive(Debug)]
pub(crate) enum WalMessage {
    /// WAL data: the LSN it starts at, and the pgoutput message.
    Data { lsn: u64, data: Bytes },
    /// The server's position and whether it wants an answer now.
    Keepalive { wal_end: u64, reply: bool },
    /// The server ended the copy.
    End,
}

/// Parses one message of a replication connection.
pub(crate) fn parse_wal(tag: u8, mut body: Bytes) -> Result<WalMessage> {
    match tag {
        b'd' => {
            if body.is_empty() {
                return Err(protocol_error("an empty CopyData"));
            }
            match body.get_u8() {
                b'w' if body.remaining() >= 24 => {
                    let lsn = body.get_u64();
                    let _wal_end = body.get_u64();
                    let _sent = body.get_i64();
                    Ok(WalMessage::Data { lsn, data: body })
                }
                b'k' if body.remaining() >= 17 => {
                    let wal_end = body.get_u64();
                    let _sent = body.get_i64();
                    Ok(WalMessage::Keepalive {
                        wal_end,
                        reply: body.get_u8() == 1,
                    })
                }
                other => Err(protocol_error(format!(
                    "a replication message of kind {other:#x} ({} bytes)",
                    body.len()
                ))),
            }
        }
        b'c' => Ok(WalMessage::End),
        b'E' => Err(ServerError::parse(body).into_connect("the replication stream failed")),
        b'N' | b'S' => Ok(WalMessage::Keepalive {
            wal_end: 0,
            reply: false,
        }),
        other => Err(protocol_error(format!(
            "a message of kind {:?} during replication",
            other as char
        ))),
    }
}

/// The writing half of a replication connection: standby status updates.
pub(crate) struct StatusWriter {
    writer: OwnedWriteHalf,
    out: BytesMut,
}

impl StatusWriter {
    /// Tells the server what is written and flushed: the slot's
    /// `confirmed_flush_lsn` moves to `flushed`.
    pub(crate) async fn send_status(&mut self, flushed: u64, reply: bool) -> Result<()> {
        let now = chrono::Utc::now().timestamp_micros() - PG_EPOCH_OFFSET_MICROS;
        let mut body = BytesMut::with_capacity(34);
        body.put_u8(b'r');
        body.put_u64(flushed);
        body.put_u64(flushed);
        body.put_u64(flushed);
        body.put_i64(now);
        body.put_u8(u8::from(reply));
        frontend::CopyData::new(body.freeze())
            .map_err(|e| ConnectError::other(e.to_string()))?
            .write(&mut self.out);
        write_all(&mut self.writer, &mut self.out).await
    }
}

async fn write_all<W: AsyncWrite + Unpin>(w: &mut W, out: &mut BytesMut) -> Result<()> {
    w.write_all(out)
        .await
        .map_err(|e| io_error("writing to PostgreSQL failed", e))?;
    out.clear();
    Ok(())
}

/// An identifier in double quotes (PostgreSQL's rule: `"` doubled).
pub(crate) fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// A string literal in single quotes (`'` doubled; the server runs with
/// `standard_conforming_strings`, so backslashes are plain).
pub(crate) fn quote_literal(value: &str) -> String {
    format!("'{}'", value.replace('\'', "''"))
}

/// An LSN as PostgreSQL writes it: `16/B374D848`.
pub(crate) fn format_lsn(lsn: u64) -> String {
    format!("{:X}/{:X}", lsn >> 32, lsn & 0xFFFF_FFFF)
}

/// An LSN written as PostgreSQL writes it.
pub(crate) fn parse_lsn(text: &str) -> Option<u64> {
    let (hi, lo) = text.trim().split_once('/')?;
    Some((u64::from_str_radix(hi, 16).ok()? << 32) | u64::from_str_radix(lo, 16).ok()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lsns_round_trip_in_postgres_notation() {
        for lsn in [0u64, 1, 0x0199_DBB0, 0x16_B374_D848, u64::MAX] {
            assert_eq!(parse_lsn(&format_lsn(lsn)), Some(lsn));
        }
        assert_eq!(format_lsn(0x16_B374_D848), "16/B374D848");
        assert_eq!(parse_lsn("nonsense"), None);
    }

    #[test]
    fn identifiers_and_literals_are_quoted_against_injection() {
        assert_eq!(quote_ident("a\"b"), "\"a\"\"b\"");
        assert_eq!(quote_literal("it's"), "'it''s'");
    }

    #[tokio::test]
    async fn garbage_from_a_peer_is_an_error_not_a_panic() {
        for bytes in [
            &b"X\xff\xff\xff\xff"[..],
            &b"D\x00\x00\x00\x02"[..],
            &b"D\x00\x00\x00\x06\x00"[..],
        ] {
            let mut r = MessageReader::new(bytes);
            match r.next().await {
                Err(_) => {}
                Ok((b'D', body)) => assert!(Row::parse(body).is_err()),
                Ok(other) => panic!("{other:?}"),
            }
        }
        assert!(parse_wal(b'd', Bytes::from_static(b"w\x00")).is_err());
        assert!(parse_wal(b'?', Bytes::new()).is_err());
    }
}
