//! Numbers and strings written exactly as Kafka's Jackson-based JsonConverter
//! writes them: Java's `Double.toString` / `Float.toString`, `BigDecimal.toString`,
//! and Jackson's string escapes (upper-case `\u00XX`).

use std::fmt::Write as _;

use connect_api::java_number::JavaNumber;
use connect_api::Decimal;
use num_bigint::Sign;

/// A fixed stack buffer for formatting one number without allocating.
struct StackBuf {
    buf: [u8; 64],
    len: usize,
}

impl StackBuf {
    fn new() -> Self {
        StackBuf {
            buf: [0; 64],
            len: 0,
        }
    }
    fn as_str(&self) -> &str {
        // Only ASCII from the float formatter is ever written.
        std::str::from_utf8(&self.buf[..self.len]).unwrap_or("")
    }
}

impl std::fmt::Write for StackBuf {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let end = self.len + s.len();
        if end > self.buf.len() {
            return Err(std::fmt::Error);
        }
        self.buf[self.len..end].copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

/// Jackson writes NaN and infinities as quoted strings.
fn write_non_finite(out: &mut Vec<u8>, v: f64) -> bool {
    let s: &[u8] = if v.is_nan() {
        b"\"NaN\""
    } else if v == f64::INFINITY {
        b"\"Infinity\""
    } else if v == f64::NEG_INFINITY {
        b"\"-Infinity\""
    } else {
        return false;
    };
    out.extend_from_slice(s);
    true
}

/// Java's `Double.toString(v)` (NaN and infinities quoted, as Jackson).
pub(crate) fn write_f64(out: &mut Vec<u8>, v: f64) {
    if write_non_finite(out, v) {
        return;
    }
    out.extend_from_slice(JavaNumber::from_f64(v).as_str().as_bytes());
}

/// Java's `Float.toString(v)` (NaN and infinities quoted, as Jackson).
pub(crate) fn write_f32(out: &mut Vec<u8>, v: f32) {
    if write_non_finite(out, f64::from(v)) {
        return;
    }
    out.extend_from_slice(JavaNumber::from_f32(v).as_str().as_bytes());
}

/// An integer in decimal (digits written backwards into a stack buffer,
/// no formatting machinery).
pub(crate) fn write_int(out: &mut Vec<u8>, v: i64) {
    let mut buf = [0u8; 20];
    let mut pos = buf.len();
    let mut n = v.unsigned_abs();
    loop {
        pos -= 1;
        buf[pos] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    if v < 0 {
        out.push(b'-');
    }
    out.extend_from_slice(&buf[pos..]);
}

/// Java's `BigDecimal.toString()`: plain unless the scale is negative or
/// the adjusted exponent is below -6, then `d.dddE±n`.
pub(crate) fn write_big_decimal(out: &mut Vec<u8>, d: &Decimal) {
    // Small values format on the stack; only huge ones allocate.
    let mut stack = StackBuf::new();
    let heap;
    let digits: &str = if write!(stack, "{}", d.unscaled().magnitude()).is_ok() {
        stack.as_str()
    } else {
        heap = d.unscaled().magnitude().to_string();
        &heap
    };
    let digits = digits.as_bytes();
    if d.unscaled().sign() == Sign::Minus {
        out.push(b'-');
    }
    let scale = i64::from(d.scale());
    let adjusted = -scale + (digits.len() as i64 - 1);
    if scale >= 0 && adjusted >= -6 {
        let scale = scale as usize;
        if scale == 0 {
            out.extend_from_slice(digits);
        } else if digits.len() > scale {
            let (int, frac) = digits.split_at(digits.len() - scale);
            out.extend_from_slice(int);
            out.push(b'.');
            out.extend_from_slice(frac);
        } else {
            out.extend_from_slice(b"0.");
            out.resize(out.len() + (scale - digits.len()), b'0');
            out.extend_from_slice(digits);
        }
        return;
    }
    out.push(digits[0]);
    if digits.len() > 1 {
        out.push(b'.');
        out.extend_from_slice(&digits[1..]);
    }
    out.push(b'E');
    if adjusted >= 0 {
        out.push(b'+');
    }
    write_int(out, adjusted);
}

const HEX: &[u8; 16] = b"0123456789ABCDEF";

/// Bytes that need an escape: 0 = none, `u` = `\u00XX`, `S` = the first
/// byte of a 4-byte UTF-8 sequence (a character beyond the Basic
/// Multilingual Plane), else the short escape letter.
static ESCAPE: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut i = 0;
    while i < 0x20 {
        t[i] = b'u';
        i += 1;
    }
    t[0x08] = b'b';
    t[b'\t' as usize] = b't';
    t[b'\n' as usize] = b'n';
    t[0x0c] = b'f';
    t[b'\r' as usize] = b'r';
    t[b'"' as usize] = b'"';
    t[b'\\' as usize] = b'\\';
    let mut lead = 0xf0;
    while lead < 0x100 {
        t[lead] = b'S';
        lead += 1;
    }
    t
};

/// A JSON string with Jackson's escapes: `\"`, `\\`, `\b \t \n \f \r`, other
/// control characters as upper-case `\u00XX`, characters beyond the Basic
/// Multilingual Plane as their UTF-16 surrogate pair (`\uD83D\uDE00`, as
/// Kafka's Jackson writes them); everything else raw UTF-8.
pub fn write_str(out: &mut Vec<u8>, s: &str) {
    out.push(b'"');
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let esc = ESCAPE[usize::from(b)];
        if esc == 0 {
            continue;
        }
        out.extend_from_slice(&bytes[start..i]);
        if esc == b'S' {
            start = i;
            // `s` is valid UTF-8, so a 4-byte sequence starts here.
            if let Some(c) = s.get(i..).and_then(|rest| rest.chars().next()) {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    out.extend_from_slice(b"\\u");
                    for shift in [12, 8, 4, 0] {
                        out.push(HEX[usize::from((*unit >> shift) & 0xf)]);
                    }
                }
                start = i + c.len_utf8();
            }
            continue;
        }
        if esc == b'u' {
            out.extend_from_slice(b"\\u00");
            out.push(HEX[usize::from(b >> 4)]);
            out.push(HEX[usize::from(b & 0xf)]);
        } else {
            out.push(b'\\');
            out.push(esc);
        }
        start = i + 1;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

/// A schemaless JSON value as Kafka's `JsonConverter` (Jackson) writes it:
/// strings with [`write_str`]'s escapes, floating-point numbers as Java's
/// `Double.toString`, objects in their map's order.
pub fn write_value(out: &mut Vec<u8>, v: &serde_json::Value) {
    use serde_json::Value as J;
    match v {
        J::Null => out.extend_from_slice(b"null"),
        J::Bool(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        J::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => write_int(out, i),
            (None, Some(u), _) => out.extend_from_slice(u.to_string().as_bytes()),
            (None, None, Some(f)) => write_f64(out, f),
            _ => out.extend_from_slice(n.to_string().as_bytes()),
        },
        J::String(s) => write_str(out, s),
        J::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_value(out, item);
            }
            out.push(b']');
        }
        J::Object(fields) => {
            out.push(b'{');
            for (i, (k, item)) in fields.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_str(out, k);
                out.push(b':');
                write_value(out, item);
            }
            out.push(b'}');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f64s(v: f64) -> String {
        let mut o = Vec::new();
        write_f64(&mut o, v);
        String::from_utf8(o).unwrap()
    }

    #[test]
    fn strings_escape_as_jackson() {
        let written = |s: &str| {
            let mut o = Vec::new();
            write_str(&mut o, s);
            String::from_utf8(o).unwrap()
        };
        // What Kafka 4.4's JsonConverter writes (conformance/java judge).
        assert_eq!(written("a\u{1F600}b"), r#""a\uD83D\uDE00b""#);
        assert_eq!(written("\u{10FFFF}"), r#""\uDBFF\uDFFF""#);
        assert_eq!(written("é€\u{1f}\"\\"), r#""é€\u001F\"\\""#);
    }

    #[test]
    fn doubles_as_java() {
        assert_eq!(f64s(1.0), "1.0");
        assert_eq!(f64s(-0.0), "-0.0");
        assert_eq!(f64s(0.0), "0.0");
        assert_eq!(f64s(123.456), "123.456");
        assert_eq!(f64s(1e7), "1.0E7");
        assert_eq!(f64s(9_999_999.0), "9999999.0");
        assert_eq!(f64s(0.001), "0.001");
        assert_eq!(f64s(0.0001), "1.0E-4");
        assert_eq!(f64s(1.5e-7), "1.5E-7");
        assert_eq!(f64s(1e100), "1.0E100");
        assert_eq!(f64s(1e10), "1.0E10");
        assert_eq!(f64s(1e-5), "1.0E-5");
        assert_eq!(f64s(4.9e-324), "4.9E-324");
        let mut o = Vec::new();
        for v in [0, -1, i64::MIN, i64::MAX, 1234567] {
            o.clear();
            write_int(&mut o, v);
            assert_eq!(String::from_utf8(o.clone()).unwrap(), v.to_string());
        }
        assert_eq!(f64s(f64::NAN), "\"NaN\"");
        assert_eq!(f64s(f64::NEG_INFINITY), "\"-Infinity\"");
        let mut o = Vec::new();
        write_f32(&mut o, 0.1);
        assert_eq!(o, b"0.1");
        o.clear();
        write_f32(&mut o, 1e10);
        assert_eq!(o, b"1.0E10");
    }

    fn dec(s: &str) -> String {
        let mut o = Vec::new();
        write_big_decimal(&mut o, &s.parse().unwrap());
        String::from_utf8(o).unwrap()
    }

    #[test]
    fn big_decimals_as_java() {
        assert_eq!(dec("1.00"), "1.00");
        assert_eq!(dec("-12.5"), "-12.5");
        assert_eq!(dec("0.000001"), "0.000001");
        assert_eq!(dec("0.0000001"), "1E-7");
        assert_eq!(dec("1E+3"), "1E+3");
        assert_eq!(dec("1.23E+5"), "1.23E+5");
        assert_eq!(dec("42"), "42");
    }

    #[test]
    fn strings_as_jackson() {
        let mut o = Vec::new();
        write_str(&mut o, "a\"b\\c\n\u{1}é/");
        assert_eq!(String::from_utf8(o).unwrap(), "\"a\\\"b\\\\c\\n\\u0001é/\"");
    }
}
