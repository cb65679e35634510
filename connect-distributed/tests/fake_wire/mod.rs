//! Kafka's wire format by hand, for the fake coordinators of the tests:
//! big-endian integers, length-prefixed strings and bytes, and the
//! flexible versions' varints, compact strings and tagged fields. A frame that does not
//! parse panics: the peer is our own group member, and a test must fail
//! loudly when it sends something the fake does not expect.

#![allow(dead_code)]

/// Reads a request body field by field.
pub(crate) struct Reader<'a>(pub &'a [u8]);

impl Reader<'_> {
    pub(crate) fn take(&mut self, n: usize) -> &[u8] {
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        a
    }
    pub(crate) fn i16(&mut self) -> i16 {
        i16::from_be_bytes(self.take(2).try_into().unwrap())
    }
    pub(crate) fn i32(&mut self) -> i32 {
        i32::from_be_bytes(self.take(4).try_into().unwrap())
    }
    pub(crate) fn string(&mut self) -> Option<String> {
        let n = self.i16();
        (n >= 0).then(|| String::from_utf8(self.take(n as usize).to_vec()).unwrap())
    }
    pub(crate) fn bytes(&mut self) -> Vec<u8> {
        let n = self.i32();
        self.take(n.max(0) as usize).to_vec()
    }
    /// An unsigned varint (flexible versions' lengths and tags).
    pub(crate) fn uvarint(&mut self) -> u64 {
        let mut value = 0u64;
        let mut shift = 0;
        loop {
            let b = self.take(1)[0];
            value |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return value;
            }
            shift += 7;
        }
    }
    /// A compact (nullable) string: its length plus one as a varint.
    pub(crate) fn compact_string(&mut self) -> Option<String> {
        let n = self.uvarint() as usize;
        (n > 0).then(|| String::from_utf8(self.take(n - 1).to_vec()).unwrap())
    }
    /// Compact bytes.
    pub(crate) fn compact_bytes(&mut self) -> Vec<u8> {
        let n = self.uvarint() as usize;
        self.take(n.saturating_sub(1)).to_vec()
    }
    /// A compact array's element count.
    pub(crate) fn compact_len(&mut self) -> usize {
        (self.uvarint() as usize).saturating_sub(1)
    }
    /// Skips a tagged-fields section.
    pub(crate) fn skip_tags(&mut self) {
        for _ in 0..self.uvarint() {
            self.uvarint();
            let size = self.uvarint() as usize;
            self.take(size);
        }
    }
}

/// Writes a response body field by field.
#[derive(Default)]
pub(crate) struct Writer(pub Vec<u8>);

impl Writer {
    pub(crate) fn i16(&mut self, v: i16) -> &mut Self {
        self.0.extend_from_slice(&v.to_be_bytes());
        self
    }
    pub(crate) fn i32(&mut self, v: i32) -> &mut Self {
        self.0.extend_from_slice(&v.to_be_bytes());
        self
    }
    pub(crate) fn string(&mut self, s: &str) -> &mut Self {
        self.i16(s.len() as i16);
        self.0.extend_from_slice(s.as_bytes());
        self
    }
    pub(crate) fn bytes(&mut self, b: &[u8]) -> &mut Self {
        self.i32(b.len() as i32);
        self.0.extend_from_slice(b);
        self
    }
    /// An unsigned varint.
    pub(crate) fn uvarint(&mut self, mut v: u64) -> &mut Self {
        while v >= 0x80 {
            self.0.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.0.push(v as u8);
        self
    }
    /// A compact nullable string.
    pub(crate) fn compact_string(&mut self, s: Option<&str>) -> &mut Self {
        match s {
            None => self.uvarint(0),
            Some(s) => {
                self.uvarint(s.len() as u64 + 1);
                self.0.extend_from_slice(s.as_bytes());
                self
            }
        }
    }
    /// Compact bytes.
    pub(crate) fn compact_bytes(&mut self, b: &[u8]) -> &mut Self {
        self.uvarint(b.len() as u64 + 1);
        self.0.extend_from_slice(b);
        self
    }
    /// An empty tagged-fields section.
    pub(crate) fn tags(&mut self) -> &mut Self {
        self.uvarint(0)
    }
}

/// One size-prefixed frame from `stream`; `None` once the peer closed it.
pub(crate) async fn read_frame(
    stream: &mut (impl tokio::io::AsyncRead + Unpin),
) -> Option<Vec<u8>> {
    use tokio::io::AsyncReadExt;
    let mut size = [0u8; 4];
    stream.read_exact(&mut size).await.ok()?;
    let mut frame = vec![0u8; usize::try_from(i32::from_be_bytes(size)).ok()?];
    stream.read_exact(&mut frame).await.ok()?;
    Some(frame)
}

/// Writes `body` as one size-prefixed frame; false once the peer is gone.
pub(crate) async fn write_frame(
    stream: &mut (impl tokio::io::AsyncWrite + Unpin),
    body: &[u8],
) -> bool {
    use tokio::io::AsyncWriteExt;
    let mut out = (body.len() as i32).to_be_bytes().to_vec();
    out.extend_from_slice(body);
    stream.write_all(&out).await.is_ok()
}

/// An ApiVersions response body (after the correlation id): `apis` as
/// (key, lowest, highest), and the throttle time from version 1.
pub(crate) fn api_versions(w: &mut Writer, version: i16, apis: &[(i16, i16, i16)]) {
    w.i16(0).i32(apis.len() as i32);
    for &(key, low, high) in apis {
        w.i16(key).i16(low).i16(high);
    }
    if version >= 1 {
        w.i32(0);
    }
}
