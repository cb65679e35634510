//! The golden files' hex strings (written by the Java programs in
//! `tests/java/`) as bytes; shared by the golden-file tests.

/// `s` (pairs of hex digits) as bytes; panics on a malformed golden file.
pub(crate) fn hex(s: &str) -> Vec<u8> {
    assert!(s.len().is_multiple_of(2), "odd hex length");
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex digit"))
        .collect()
}
