//! Kafka's wire format for the APIs group membership uses (and SASL's two): request
//! framing, version negotiation and defensive response decoding. Pure
//! functions over bytes, so that malformed input can be tested without a
//! socket.
//!
//! Decoding never trusts the peer: the frame size is bounded, the
//! correlation id is checked before anything else, array counts are
//! checked against the bytes that follow before `kafka-protocol` allocates
//! for them, and when a body does not decode its error code is still read
//! from its fixed position (librdkafka's mock writes null strings where
//! the schema forbids them in error responses).

use std::collections::BTreeMap;

use bytes::Bytes;
use kafka_protocol::messages::{
    ApiVersionsResponse, FindCoordinatorResponse, HeartbeatResponse, JoinGroupResponse,
    LeaveGroupResponse, RequestHeader, ResponseHeader, SaslAuthenticateResponse,
    SaslHandshakeResponse, SyncGroupResponse,
};
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion, StrBytes};

use super::error::{ErrorCode, WireError};

/// The largest response frame accepted (64 MiB). A JoinGroup response
/// carries every member's metadata, which stays far below this.
pub(crate) const MAX_FRAME_BYTES: usize = 64 * 1024 * 1024;

/// The Kafka APIs group membership uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum GroupApi {
    /// ApiVersions (18): version negotiation, first on every connection.
    ApiVersions,
    /// FindCoordinator (10).
    FindCoordinator,
    /// JoinGroup (11).
    JoinGroup,
    /// SyncGroup (14).
    SyncGroup,
    /// Heartbeat (12).
    Heartbeat,
    /// LeaveGroup (13).
    LeaveGroup,
    /// SaslHandshake (17): the mechanism, with `SASL_PLAINTEXT`.
    SaslHandshake,
    /// SaslAuthenticate (36): the SASL tokens, with `SASL_PLAINTEXT`.
    SaslAuthenticate,
}

impl GroupApi {
    /// Every API, in the order above.
    pub const ALL: [GroupApi; 8] = [
        GroupApi::ApiVersions,
        GroupApi::FindCoordinator,
        GroupApi::JoinGroup,
        GroupApi::SyncGroup,
        GroupApi::Heartbeat,
        GroupApi::LeaveGroup,
        GroupApi::SaslHandshake,
        GroupApi::SaslAuthenticate,
    ];

    /// The API key.
    pub const fn key(self) -> i16 {
        match self {
            GroupApi::ApiVersions => 18,
            GroupApi::FindCoordinator => 10,
            GroupApi::JoinGroup => 11,
            GroupApi::SyncGroup => 14,
            GroupApi::Heartbeat => 12,
            GroupApi::LeaveGroup => 13,
            GroupApi::SaslHandshake => 17,
            GroupApi::SaslAuthenticate => 36,
        }
    }

    /// Kafka's name of the API.
    pub const fn name(self) -> &'static str {
        match self {
            GroupApi::ApiVersions => "ApiVersions",
            GroupApi::FindCoordinator => "FindCoordinator",
            GroupApi::JoinGroup => "JoinGroup",
            GroupApi::SyncGroup => "SyncGroup",
            GroupApi::Heartbeat => "Heartbeat",
            GroupApi::LeaveGroup => "LeaveGroup",
            GroupApi::SaslHandshake => "SaslHandshake",
            GroupApi::SaslAuthenticate => "SaslAuthenticate",
        }
    }

    /// The lowest version this client can use (JoinGroup needs v1 for the
    /// rebalance timeout, FindCoordinator v1 for the key type,
    /// SaslHandshake v1 for SaslAuthenticate framing).
    pub const fn min_version(self) -> i16 {
        match self {
            GroupApi::FindCoordinator | GroupApi::JoinGroup | GroupApi::SaslHandshake => 1,
            _ => 0,
        }
    }

    /// The preferred highest version: librdkafka's own (FindCoordinator 2,
    /// JoinGroup 5, SyncGroup 3, Heartbeat 3, LeaveGroup 1), which its mock
    /// cluster handles correctly (it advertises flexible JoinGroup v6 and
    /// SyncGroup v4 but cannot read them). ApiVersions uses v2, the last
    /// version without tagged fields: v3+ responses carry feature arrays
    /// whose counts the decoder would trust.
    pub const fn preferred_max(self) -> i16 {
        match self {
            GroupApi::ApiVersions => 2,
            GroupApi::FindCoordinator => 2,
            GroupApi::JoinGroup => 5,
            GroupApi::SyncGroup => 3,
            GroupApi::Heartbeat => 3,
            GroupApi::LeaveGroup => 1,
            GroupApi::SaslHandshake => 1,
            GroupApi::SaslAuthenticate => 2,
        }
    }

    /// The highest version this client can build and read. Used only when
    /// a broker no longer accepts anything up to [`Self::preferred_max`].
    pub const fn max_version(self) -> i16 {
        match self {
            GroupApi::ApiVersions => 2,
            GroupApi::FindCoordinator => 5,
            GroupApi::JoinGroup => 9,
            GroupApi::SyncGroup => 5,
            GroupApi::Heartbeat => 4,
            GroupApi::LeaveGroup => 5,
            GroupApi::SaslHandshake => 1,
            GroupApi::SaslAuthenticate => 2,
        }
    }

    /// Where the response's top-level `error_code` starts in the body:
    /// after `throttle_time_ms` when the version has it first.
    const fn error_code_offset(self, version: i16) -> usize {
        let throttle_first = match self {
            GroupApi::ApiVersions | GroupApi::SaslHandshake | GroupApi::SaslAuthenticate => false,
            GroupApi::JoinGroup => version >= 2,
            _ => version >= 1,
        };
        if throttle_first {
            4
        } else {
            0
        }
    }
}

/// The versions a broker supports, from its ApiVersions response.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct ApiVersionTable {
    ranges: BTreeMap<i16, (i16, i16)>,
}

impl ApiVersionTable {
    /// A table from (api key, min, max) entries.
    pub(crate) fn from_entries(
        entries: impl IntoIterator<Item = (i16, i16, i16)>,
    ) -> ApiVersionTable {
        ApiVersionTable {
            ranges: entries
                .into_iter()
                .map(|(k, lo, hi)| (k, (lo, hi)))
                .collect(),
        }
    }

    /// The broker's range for an API, if it lists it.
    pub(crate) fn range(&self, api: GroupApi) -> Option<(i16, i16)> {
        self.ranges.get(&api.key()).copied()
    }

    /// The version to use: the highest both sides support up to
    /// [`GroupApi::preferred_max`], or, if the broker's lowest is above
    /// that, the broker's lowest (when this client can speak it).
    pub(crate) fn negotiate(&self, api: GroupApi) -> Result<i16, (i16, i16)> {
        let Some((lo, hi)) = self.range(api) else {
            return Err((-1, -1));
        };
        let common_lo = lo.max(api.min_version());
        let common_hi = hi.min(api.max_version());
        if common_lo > common_hi {
            return Err((lo, hi));
        }
        Ok(common_hi.min(api.preferred_max()).max(common_lo))
    }
}

/// Responses with a top-level error code.
pub(crate) trait HasErrorCode {
    /// The top-level error code.
    fn error_code(&self) -> i16;
}

macro_rules! has_error_code {
    ($($t:ty),*) => {$(
        impl HasErrorCode for $t {
            fn error_code(&self) -> i16 {
                self.error_code
            }
        }
    )*};
}
has_error_code!(
    ApiVersionsResponse,
    FindCoordinatorResponse,
    JoinGroupResponse,
    SyncGroupResponse,
    HeartbeatResponse,
    LeaveGroupResponse,
    SaslHandshakeResponse,
    SaslAuthenticateResponse
);

/// A decoded response: success, or an error code with the body when it
/// could be decoded.
#[derive(Debug)]
pub(crate) enum Reply<R> {
    /// `error_code` is `NONE`.
    Ok(R),
    /// An error code, and the body unless only the code was readable.
    Err(ErrorCode, Option<R>),
}

/// One request, framed: size, header (with the correlation id and client
/// id) and body.
pub(crate) fn encode_request<Req: Encodable + HeaderVersion>(
    api: GroupApi,
    version: i16,
    correlation_id: i32,
    client_id: &str,
    request: &Req,
) -> Result<Vec<u8>, WireError> {
    fn err<E: std::fmt::Display>(api: GroupApi, version: i16) -> impl Fn(E) -> WireError {
        move |e| WireError::Encode {
            api: api.name(),
            version,
            message: e.to_string(),
        }
    }
    let header = RequestHeader::default()
        .with_request_api_key(api.key())
        .with_request_api_version(version)
        .with_correlation_id(correlation_id)
        .with_client_id(Some(StrBytes::from_string(client_id.to_owned())));
    let mut buf: Vec<u8> = Vec::with_capacity(128);
    buf.extend_from_slice(&[0; 4]);
    header
        .encode(&mut buf, Req::header_version(version))
        .map_err(err(api, version))?;
    request
        .encode(&mut buf, version)
        .map_err(err(api, version))?;
    let size = i32::try_from(buf.len() - 4).map_err(|_| WireError::Encode {
        api: api.name(),
        version,
        message: "request larger than 2 GiB".into(),
    })?;
    buf[..4].copy_from_slice(&size.to_be_bytes());
    Ok(buf)
}

/// Checks a frame's size prefix; returns the body length to read.
pub(crate) fn frame_len(prefix: [u8; 4]) -> Result<usize, WireError> {
    let size = i32::from_be_bytes(prefix);
    match usize::try_from(size) {
        Ok(n) if (4..=MAX_FRAME_BYTES).contains(&n) => Ok(n),
        _ => Err(WireError::InvalidFrameSize {
            size: i64::from(size),
            max: MAX_FRAME_BYTES,
        }),
    }
}

/// Decodes one response frame (without its size prefix) for a request of
/// `api` at `version` sent with `correlation_id`.
pub(crate) fn decode_response<R>(
    api: GroupApi,
    version: i16,
    correlation_id: i32,
    frame: Bytes,
) -> Result<Reply<R>, WireError>
where
    R: Decodable + HeaderVersion + HasErrorCode,
{
    let malformed = |message: String| WireError::Malformed {
        api: api.name(),
        version,
        message,
    };
    if frame.len() < 4 {
        return Err(malformed(format!(
            "{} bytes, too short for a correlation id",
            frame.len()
        )));
    }
    let actual = i32::from_be_bytes([frame[0], frame[1], frame[2], frame[3]]);
    if actual != correlation_id {
        return Err(WireError::CorrelationMismatch {
            api: api.name(),
            expected: correlation_id,
            actual,
        });
    }
    let mut buf = frame;
    ResponseHeader::decode(&mut buf, R::header_version(version))
        .map_err(|e| malformed(format!("header: {e}")))?;
    let body = buf;
    let peeked = peek_error_code(api, version, &body);
    check_counts(api, version, &body)?;
    let mut cursor = body.clone();
    match R::decode(&mut cursor, version) {
        Ok(r) => {
            let code = ErrorCode(r.error_code());
            if code.is_ok() {
                Ok(Reply::Ok(r))
            } else {
                Ok(Reply::Err(code, Some(r)))
            }
        }
        Err(e) => match peeked {
            Some(code) if !code.is_ok() => Ok(Reply::Err(code, None)),
            _ => Err(malformed(e.to_string())),
        },
    }
}

/// The top-level error code read from its fixed position, if the body is
/// long enough.
pub(crate) fn peek_error_code(api: GroupApi, version: i16, body: &[u8]) -> Option<ErrorCode> {
    let at = api.error_code_offset(version);
    let bytes = body.get(at..at + 2)?;
    Some(ErrorCode(i16::from_be_bytes([bytes[0], bytes[1]])))
}

/// A cursor that never panics: every read checks what is left.
struct Scan<'a> {
    buf: &'a [u8],
}

impl Scan<'_> {
    fn skip(&mut self, n: usize) -> Option<()> {
        self.buf = self.buf.get(n..)?;
        Some(())
    }

    fn i16(&mut self) -> Option<i16> {
        let v = self.buf.get(..2)?;
        let v = i16::from_be_bytes([v[0], v[1]]);
        self.skip(2)?;
        Some(v)
    }

    fn i32(&mut self) -> Option<i32> {
        let v = self.buf.get(..4)?;
        let v = i32::from_be_bytes([v[0], v[1], v[2], v[3]]);
        self.skip(4)?;
        Some(v)
    }

    fn uvarint(&mut self) -> Option<u32> {
        let mut v: u32 = 0;
        for i in 0..5 {
            let b = *self.buf.first()?;
            self.skip(1)?;
            v |= u32::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Some(v);
            }
        }
        None
    }

    /// A string (int16 or compact length); null and negative lengths skip
    /// nothing.
    fn string(&mut self, flexible: bool) -> Option<()> {
        let len = if flexible {
            usize::try_from(self.uvarint()?).ok()?.saturating_sub(1)
        } else {
            usize::try_from(self.i16()?).unwrap_or(0)
        };
        self.skip(len)
    }

    /// An array count (int32, or compact: n + 1 with 0 = null).
    fn count(&mut self, flexible: bool) -> Option<i64> {
        if flexible {
            Some(i64::from(self.uvarint()?) - 1)
        } else {
            Some(i64::from(self.i32()?))
        }
    }
}

/// Walks to the one array of the response (at the versions this client
/// uses) and returns its name, count and the least bytes an entry takes.
fn scan_count(api: GroupApi, version: i16, s: &mut Scan<'_>) -> Option<(&'static str, i64, usize)> {
    match api {
        GroupApi::ApiVersions => {
            let flexible = version >= 3;
            s.i16()?;
            let n = s.count(flexible)?;
            // api_key, min, max (+ tagged fields when flexible).
            Some(("api_keys", n, if flexible { 7 } else { 6 }))
        }
        GroupApi::JoinGroup => {
            let flexible = version >= 6;
            if version >= 2 {
                s.i32()?;
            }
            s.i16()?;
            s.i32()?;
            if version >= 7 {
                s.string(flexible)?; // protocol_type
            }
            s.string(flexible)?; // protocol_name
            s.string(flexible)?; // leader
            if version >= 9 {
                s.skip(1)?; // skip_assignment
            }
            s.string(flexible)?; // member_id
            let n = s.count(flexible)?;
            // member_id, [group_instance_id], metadata (+ tagged fields).
            let min = match (flexible, version >= 5) {
                (true, _) => 4,
                (false, true) => 8,
                (false, false) => 6,
            };
            Some(("members", n, min))
        }
        GroupApi::FindCoordinator if version >= 4 => {
            s.i32()?;
            let n = s.count(true)?;
            Some(("coordinators", n, 13))
        }
        GroupApi::SaslHandshake => {
            s.i16()?;
            let n = s.count(false)?;
            // One string each: its int16 length at least.
            Some(("mechanisms", n, 2))
        }
        GroupApi::LeaveGroup if version >= 3 => {
            let flexible = version >= 4;
            s.i32()?;
            s.i16()?;
            let n = s.count(flexible)?;
            Some(("members", n, if flexible { 5 } else { 6 }))
        }
        _ => None,
    }
}

/// Refuses array counts that the remaining bytes cannot hold, before
/// `kafka-protocol` reserves memory for them. Only the arrays these
/// responses have at the versions this client uses are checked; a layout
/// that ends early is left to the decoder to report.
fn check_counts(api: GroupApi, version: i16, body: &[u8]) -> Result<(), WireError> {
    let mut s = Scan { buf: body };
    let found = scan_count(api, version, &mut s);
    if let Some((field, count, min_size)) = found {
        let remaining = s.buf.len();
        let fits = usize::try_from(count)
            .ok()
            .and_then(|c| c.checked_mul(min_size))
            .is_some_and(|need| need <= remaining);
        if count > 0 && !fits {
            return Err(WireError::ImplausibleCount {
                api: api.name(),
                version,
                field,
                count,
                remaining,
            });
        }
    }
    Ok(())
}

/// Reads the version table from an ApiVersions response.
pub(crate) fn version_table(response: &ApiVersionsResponse) -> ApiVersionTable {
    ApiVersionTable::from_entries(
        response
            .api_keys
            .iter()
            .map(|k| (k.api_key, k.min_version, k.max_version)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Buf;
    use kafka_protocol::messages::{GroupId, HeartbeatRequest, JoinGroupRequest};

    fn read_i16(mut b: &[u8]) -> Option<i16> {
        (b.remaining() >= 2).then(|| b.get_i16())
    }

    fn be16(v: i16) -> [u8; 2] {
        v.to_be_bytes()
    }
    fn be32(v: i32) -> [u8; 4] {
        v.to_be_bytes()
    }
    fn str16(out: &mut Vec<u8>, s: &str) {
        out.extend_from_slice(&be16(s.len() as i16));
        out.extend_from_slice(s.as_bytes());
    }

    /// A Heartbeat v1..v3 response frame (header v0: correlation id only).
    fn heartbeat_frame(corr: i32, code: i16) -> Bytes {
        let mut f = Vec::new();
        f.extend_from_slice(&be32(corr));
        f.extend_from_slice(&be32(0)); // throttle
        f.extend_from_slice(&be16(code));
        Bytes::from(f)
    }

    /// A JoinGroup v5 response frame.
    fn join_frame(corr: i32, code: i16, members: &[(&str, &[u8])], count: Option<i32>) -> Vec<u8> {
        let mut f = Vec::new();
        f.extend_from_slice(&be32(corr));
        f.extend_from_slice(&be32(0)); // throttle
        f.extend_from_slice(&be16(code));
        f.extend_from_slice(&be32(7)); // generation
        str16(&mut f, "sessioned");
        str16(&mut f, "m-1");
        str16(&mut f, "m-1");
        f.extend_from_slice(&be32(count.unwrap_or(members.len() as i32)));
        for (id, meta) in members {
            str16(&mut f, id);
            f.extend_from_slice(&be16(-1)); // group_instance_id null
            f.extend_from_slice(&be32(meta.len() as i32));
            f.extend_from_slice(meta);
        }
        f
    }

    #[test]
    fn requests_are_size_prefixed_with_header() {
        let req = HeartbeatRequest::default()
            .with_group_id(GroupId(StrBytes::from_static_str("g")))
            .with_generation_id(3)
            .with_member_id(StrBytes::from_static_str("m"));
        let bytes = encode_request(GroupApi::Heartbeat, 3, 42, "cid", &req).unwrap();
        let size = i32::from_be_bytes(bytes[..4].try_into().unwrap()) as usize;
        assert_eq!(size, bytes.len() - 4);
        assert_eq!(read_i16(&bytes[4..]), Some(12)); // api key
        assert_eq!(read_i16(&bytes[6..]), Some(3)); // version
        assert_eq!(i32::from_be_bytes(bytes[8..12].try_into().unwrap()), 42);
        assert_eq!(read_i16(&bytes[12..]), Some(3)); // client id length
        assert_eq!(&bytes[14..17], b"cid");
    }

    #[test]
    fn join_group_request_v5_encodes() {
        let req = JoinGroupRequest::default()
            .with_group_id(GroupId(StrBytes::from_static_str("g")))
            .with_session_timeout_ms(6000)
            .with_rebalance_timeout_ms(60000)
            .with_protocol_type(StrBytes::from_static_str("connect"));
        encode_request(GroupApi::JoinGroup, 5, 1, "c", &req).unwrap();
    }

    #[test]
    fn frame_sizes_are_bounded() {
        assert_eq!(frame_len(be32(8)), Ok(8));
        for bad in [-1, 0, 3, i32::MAX] {
            assert!(matches!(
                frame_len(be32(bad)),
                Err(WireError::InvalidFrameSize { .. })
            ));
        }
    }

    #[test]
    fn heartbeat_ok_and_error_codes() {
        let r: Reply<HeartbeatResponse> =
            decode_response(GroupApi::Heartbeat, 3, 9, heartbeat_frame(9, 0)).unwrap();
        assert!(matches!(r, Reply::Ok(_)));
        let r: Reply<HeartbeatResponse> =
            decode_response(GroupApi::Heartbeat, 3, 9, heartbeat_frame(9, 27)).unwrap();
        assert!(matches!(
            r,
            Reply::Err(ErrorCode::REBALANCE_IN_PROGRESS, Some(_))
        ));
        // A code nobody knows is kept as it is.
        let r: Reply<HeartbeatResponse> =
            decode_response(GroupApi::Heartbeat, 3, 9, heartbeat_frame(9, 31999)).unwrap();
        match r {
            Reply::Err(code, _) => {
                assert_eq!(code, ErrorCode(31999));
                assert_eq!(code.name(), None);
                assert_eq!(code.to_string(), "unknown error code 31999");
                assert!(!code.is_fatal() && !code.needs_rediscovery());
            }
            Reply::Ok(_) => panic!("expected an error"),
        }
    }

    #[test]
    fn wrong_correlation_id_is_refused() {
        let r =
            decode_response::<HeartbeatResponse>(GroupApi::Heartbeat, 3, 9, heartbeat_frame(10, 0));
        assert_eq!(
            r.unwrap_err(),
            WireError::CorrelationMismatch {
                api: "Heartbeat",
                expected: 9,
                actual: 10
            }
        );
    }

    #[test]
    fn every_truncation_is_an_error_not_a_panic() {
        let full = join_frame(5, 0, &[("m-1", b"abc"), ("m-2", b"")], None);
        let ok: Reply<JoinGroupResponse> =
            decode_response(GroupApi::JoinGroup, 5, 5, Bytes::from(full.clone())).unwrap();
        match ok {
            Reply::Ok(r) => {
                assert_eq!(r.generation_id, 7);
                assert_eq!(r.members.len(), 2);
                assert_eq!(&r.members[0].metadata[..], b"abc");
            }
            Reply::Err(..) => panic!("expected success"),
        }
        for cut in 0..full.len() {
            let r = decode_response::<JoinGroupResponse>(
                GroupApi::JoinGroup,
                5,
                5,
                Bytes::copy_from_slice(&full[..cut]),
            );
            assert!(r.is_err(), "cut at {cut} decoded");
        }
        // Same for every API this client reads.
        for api in GroupApi::ALL {
            for v in api.min_version()..=api.max_version() {
                for cut in 0..12 {
                    let frame = Bytes::copy_from_slice(&full[..cut]);
                    let _ = match api {
                        GroupApi::ApiVersions => {
                            decode_response::<ApiVersionsResponse>(api, v, 5, frame).map(|_| ())
                        }
                        GroupApi::FindCoordinator => {
                            decode_response::<FindCoordinatorResponse>(api, v, 5, frame).map(|_| ())
                        }
                        GroupApi::JoinGroup => {
                            decode_response::<JoinGroupResponse>(api, v, 5, frame).map(|_| ())
                        }
                        GroupApi::SyncGroup => {
                            decode_response::<SyncGroupResponse>(api, v, 5, frame).map(|_| ())
                        }
                        GroupApi::Heartbeat => {
                            decode_response::<HeartbeatResponse>(api, v, 5, frame).map(|_| ())
                        }
                        GroupApi::LeaveGroup => {
                            decode_response::<LeaveGroupResponse>(api, v, 5, frame).map(|_| ())
                        }
                        GroupApi::SaslHandshake => {
                            decode_response::<SaslHandshakeResponse>(api, v, 5, frame).map(|_| ())
                        }
                        GroupApi::SaslAuthenticate => {
                            decode_response::<SaslAuthenticateResponse>(api, v, 5, frame)
                                .map(|_| ())
                        }
                    };
                }
            }
        }
    }

    #[test]
    fn huge_counts_are_refused_before_allocation() {
        let f = join_frame(5, 0, &[], Some(i32::MAX));
        let r = decode_response::<JoinGroupResponse>(GroupApi::JoinGroup, 5, 5, Bytes::from(f));
        assert!(matches!(
            r,
            Err(WireError::ImplausibleCount {
                field: "members",
                count: 2147483647,
                ..
            })
        ));
        // ApiVersions v0: error, then the count.
        let mut f = be32(1).to_vec();
        f.extend_from_slice(&be16(0));
        f.extend_from_slice(&be32(1 << 30));
        let r = decode_response::<ApiVersionsResponse>(GroupApi::ApiVersions, 0, 1, Bytes::from(f));
        assert!(matches!(
            r,
            Err(WireError::ImplausibleCount {
                field: "api_keys",
                ..
            })
        ));
    }

    #[test]
    fn error_code_survives_an_undecodable_body() {
        // The mock's quirk: an error response with a null where the schema
        // has a non-nullable string.
        let mut f = be32(3).to_vec();
        f.extend_from_slice(&be32(0));
        f.extend_from_slice(&be16(16)); // NOT_COORDINATOR
        f.extend_from_slice(&be16(-1)); // error_message null: fine
        f.extend_from_slice(&be32(-1)); // node id
        f.extend_from_slice(&be16(-1)); // host null: not allowed
        f.extend_from_slice(&be32(-1));
        let r = decode_response::<FindCoordinatorResponse>(
            GroupApi::FindCoordinator,
            2,
            3,
            Bytes::from(f),
        )
        .unwrap();
        assert!(matches!(r, Reply::Err(ErrorCode::NOT_COORDINATOR, _)));
        // Without an error code, the same damage is a typed error.
        let mut f = be32(3).to_vec();
        f.extend_from_slice(&be32(0));
        f.extend_from_slice(&be16(0));
        f.extend_from_slice(&be16(-1));
        f.extend_from_slice(&be32(-1));
        f.extend_from_slice(&be16(-5));
        let r = decode_response::<FindCoordinatorResponse>(
            GroupApi::FindCoordinator,
            2,
            3,
            Bytes::from(f),
        );
        assert!(
            matches!(
                r,
                Err(WireError::Malformed {
                    api: "FindCoordinator",
                    ..
                })
            ),
            "{r:?}"
        );
    }

    #[test]
    fn negotiation_prefers_the_caps() {
        let t = ApiVersionTable::from_entries([
            (10, 0, 6),
            (11, 0, 9),
            (14, 0, 5),
            (12, 0, 4),
            (13, 0, 5),
            (18, 0, 4),
        ]);
        assert_eq!(t.negotiate(GroupApi::FindCoordinator), Ok(2));
        assert_eq!(t.negotiate(GroupApi::JoinGroup), Ok(5));
        assert_eq!(t.negotiate(GroupApi::SyncGroup), Ok(3));
        assert_eq!(t.negotiate(GroupApi::Heartbeat), Ok(3));
        assert_eq!(t.negotiate(GroupApi::LeaveGroup), Ok(1));
        assert_eq!(t.negotiate(GroupApi::ApiVersions), Ok(2));
        // An old broker: lower versions.
        let t = ApiVersionTable::from_entries([(11, 0, 2), (13, 0, 0)]);
        assert_eq!(t.negotiate(GroupApi::JoinGroup), Ok(2));
        assert_eq!(t.negotiate(GroupApi::LeaveGroup), Ok(0));
        assert_eq!(t.negotiate(GroupApi::Heartbeat), Err((-1, -1)));
        // A broker that dropped the old versions: its lowest.
        let t = ApiVersionTable::from_entries([(13, 3, 5), (11, 6, 9)]);
        assert_eq!(t.negotiate(GroupApi::LeaveGroup), Ok(3));
        assert_eq!(t.negotiate(GroupApi::JoinGroup), Ok(6));
        // Nothing in common.
        let t = ApiVersionTable::from_entries([(11, 10, 12)]);
        assert_eq!(t.negotiate(GroupApi::JoinGroup), Err((10, 12)));
    }
}
