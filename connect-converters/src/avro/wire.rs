//! Confluent's wire format: magic byte 0, a 4-byte big-endian schema id,
//! then the Avro binary datum.

use connect_api::{ConnectError, Result};

/// The magic byte that starts every framed record.
pub const MAGIC_BYTE: u8 = 0;

/// Write the 5-byte header for `schema_id`.
pub fn write_header(out: &mut Vec<u8>, schema_id: u32) {
    out.push(MAGIC_BYTE);
    out.extend_from_slice(&schema_id.to_be_bytes());
}

/// Split a framed record into its schema id and datum.
///
/// ```
/// use connect_converters::avro::wire;
/// let mut out = Vec::new();
/// wire::write_header(&mut out, 7);
/// out.push(42);
/// assert_eq!(wire::read_header(&out).unwrap(), (7, &[42u8][..]));
/// assert!(wire::read_header(&[1, 0, 0, 0, 7]).is_err());
/// ```
pub fn read_header(bytes: &[u8]) -> Result<(u32, &[u8])> {
    match bytes {
        [MAGIC_BYTE, a, b, c, d, rest @ ..] => Ok((u32::from_be_bytes([*a, *b, *c, *d]), rest)),
        [MAGIC_BYTE, ..] => Err(ConnectError::data(format!(
            "Avro record too short: {} bytes, the Confluent header alone is 5",
            bytes.len()
        ))),
        [other, ..] => Err(ConnectError::data(format!(
            "Unknown magic byte {other:#04x}: not Confluent Avro wire format (expected 0x00)"
        ))),
        [] => Err(ConnectError::data(
            "Avro record is empty: expected the Confluent header",
        )),
    }
}
