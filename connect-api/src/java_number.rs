//! Floats written as Java writes them (`Double.toString`, `Float.toString`).
//!
//! Kafka Connect renders floats through Java in several places that reach
//! users' bytes: JsonConverter's numbers, `Values.convertToString` (used by
//! StringConverter and SimpleHeaderConverter) and the Cast SMT's `string`
//! target. Java writes the shortest digits that read back as the same
//! value, in plain notation for magnitudes in [10⁻³, 10⁷) (`100.0`,
//! `0.001`) and as `d.dddE<n>` outside it (`1.0E10`, `1.5E-7`), with at
//! least two significant digits there: `4.9E-324`, the two digits nearest
//! the exact value, where the shortest form would be `5E-324`. This module
//! is the one place that layout lives.

use std::fmt::{self, Write as _};

/// A float rendered as Java's `Double.toString` / `Float.toString`, held on
/// the stack (no allocation).
///
/// ```
/// use connect_api::java_number::JavaNumber;
///
/// assert_eq!(JavaNumber::from_f64(1e10).as_str(), "1.0E10");
/// assert_eq!(JavaNumber::from_f64(100.0).as_str(), "100.0");
/// assert_eq!(JavaNumber::from_f64(1e-5).as_str(), "1.0E-5");
/// assert_eq!(JavaNumber::from_f64(f64::MIN_POSITIVE * f64::EPSILON).as_str(), "4.9E-324");
/// assert_eq!(JavaNumber::from_f32(0.1).as_str(), "0.1");
/// assert_eq!(JavaNumber::from_f64(-0.0).to_string(), "-0.0");
/// ```
#[derive(Clone, Copy)]
pub struct JavaNumber {
    buf: [u8; 32],
    len: usize,
}

impl JavaNumber {
    /// Java's `Double.toString(v)`.
    pub fn from_f64(v: f64) -> JavaNumber {
        if let Some(n) = JavaNumber::special(v) {
            return n;
        }
        short_decimal(v).unwrap_or_else(|| JavaNumber::general(v, v < 0.0))
    }

    /// Java's `Float.toString(v)`: the shortest digits that read back as
    /// the same `f32`.
    pub fn from_f32(v: f32) -> JavaNumber {
        JavaNumber::special(f64::from(v)).unwrap_or_else(|| JavaNumber::general(v, v < 0.0))
    }

    /// A finite, non-zero float (`f32` or `f64`) from its shortest digits.
    fn general(v: impl ryu::Float + fmt::LowerExp, negative: bool) -> JavaNumber {
        let mut shortest = ryu::Buffer::new();
        JavaNumber::layout(negative, shortest.format_finite(v), || {
            let mut two = JavaNumber::empty();
            let _ = write!(two, "{v:.1e}");
            two
        })
    }

    /// The rendering.
    pub fn as_str(&self) -> &str {
        // Only ASCII is ever written.
        std::str::from_utf8(&self.buf[..self.len]).unwrap_or("")
    }

    fn empty() -> JavaNumber {
        JavaNumber {
            buf: [0; 32],
            len: 0,
        }
    }

    fn push(&mut self, b: u8) {
        if self.len < self.buf.len() {
            self.buf[self.len] = b;
            self.len += 1;
        }
    }

    fn push_all(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.push(b);
        }
    }

    /// NaN, the infinities and the zeros, which have fixed spellings.
    fn special(v: f64) -> Option<JavaNumber> {
        let text = if v.is_nan() {
            "NaN"
        } else if v == f64::INFINITY {
            "Infinity"
        } else if v == f64::NEG_INFINITY {
            "-Infinity"
        } else if v == 0.0 {
            if v.is_sign_negative() {
                "-0.0"
            } else {
                "0.0"
            }
        } else {
            return None;
        };
        let mut n = JavaNumber::empty();
        n.push_all(text.as_bytes());
        Some(n)
    }

    /// Java's layout of a finite, non-zero value given its shortest digits
    /// in any decimal spelling (`123.45`, `1.5e-7`, `1e16`). `two_digits`
    /// gives the value's two nearest significant digits (`{:.1e}`), asked
    /// for only when the shortest form has one digit outside the plain
    /// range.
    fn layout(negative: bool, shortest: &str, two_digits: impl FnOnce() -> JavaNumber) -> Self {
        let (mut digits, mut count, mut exp) = significant_digits(shortest);
        let mut out = JavaNumber::empty();
        if negative {
            out.push(b'-');
        }
        if (-3..7).contains(&exp) {
            if exp >= 0 {
                let whole = exp as usize + 1;
                let given = count.min(whole);
                out.push_all(&digits[..given]);
                for _ in given..whole {
                    out.push(b'0');
                }
                out.push(b'.');
                if count > whole {
                    out.push_all(&digits[whole..count]);
                } else {
                    out.push(b'0');
                }
            } else {
                out.push_all(b"0.");
                for _ in 0..(-exp - 1) {
                    out.push(b'0');
                }
                out.push_all(&digits[..count]);
            }
            return out;
        }
        if count == 1 {
            (digits, count, exp) = significant_digits(two_digits().as_str());
        }
        out.push(digits[0]);
        out.push(b'.');
        if count > 1 {
            out.push_all(&digits[1..count]);
        } else {
            out.push(b'0');
        }
        out.push(b'E');
        let _ = write!(out, "{exp}");
        out
    }
}

impl fmt::Write for JavaNumber {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        if self.len + s.len() > self.buf.len() {
            return Err(fmt::Error);
        }
        self.push_all(s.as_bytes());
        Ok(())
    }
}

impl fmt::Display for JavaNumber {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Debug for JavaNumber {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

/// The significant digits of a decimal spelling (sign ignored) and the
/// decimal exponent of the first one: `(digits, count, exponent)`, no
/// leading or trailing zeros, so `0.00120` is `12` with exponent -3.
fn significant_digits(text: &str) -> ([u8; 24], usize, i32) {
    let text = text.trim_start_matches('-');
    let (mantissa, e) = match text.split_once(['e', 'E']) {
        Some((m, e)) => (m, e.parse::<i32>().unwrap_or(0)),
        None => (text, 0),
    };
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let mut digits = [b'0'; 24];
    let mut count = 0;
    // The exponent of the first digit written, before leading zeros go.
    let mut exp = whole.len() as i32 - 1 + e;
    for b in whole.bytes().chain(fraction.bytes()) {
        if count == 0 && b == b'0' {
            exp -= 1;
            continue;
        }
        if count < digits.len() {
            digits[count] = b;
            count += 1;
        }
    }
    while count > 1 && digits[count - 1] == b'0' {
        count -= 1;
    }
    (digits, count.max(1), exp)
}

/// Java's rendering of a double in its plain range that has at most three
/// decimals (`1.25`, `1278.5`, `100.0`, `0.001`): amounts and measurements
/// mostly look like this, and writing their digits directly takes a few
/// multiplications where the shortest-digits search takes far longer.
/// `None` for any other double.
///
/// Why the result is the shortest round-trip form: for `k` decimals, the
/// only candidate is `n = round(|v| * 10^k)`, since the decimals that read
/// back as `v` lie less than half a unit of the k-th decimal from it (for
/// `|v| < 1e7` and `k <= 3`), so at most one `k`-decimal number qualifies,
/// the nearest. `n / 10^k` is exact division of exact numbers, rounded
/// once, as parsing the decimal would round, so comparing it with `|v|`
/// tests the round trip exactly. Trying `k = 0, 1, 2, 3` in order finds the
/// fewest decimals.
fn short_decimal(v: f64) -> Option<JavaNumber> {
    const SCALES: [f64; 4] = [1.0, 10.0, 100.0, 1000.0];
    let abs = v.abs();
    if !(1e-3..1e7).contains(&abs) {
        return None;
    }
    let (decimals, n) = SCALES.iter().enumerate().find_map(|(k, &scale)| {
        let n = (abs * scale).round();
        (n / scale == abs).then_some((k, n as u64))
    })?;
    // Right to left: the decimals (or Java's `.0`), the point, the whole
    // part, the sign. At most 10 + 1 + 3 + 1 bytes.
    let mut buf = [0u8; 16];
    let mut at = buf.len();
    let mut rest = n;
    let mut put = |b: u8| {
        at -= 1;
        buf[at] = b;
    };
    if decimals == 0 {
        put(b'0');
    }
    for _ in 0..decimals {
        put(b'0' + (rest % 10) as u8);
        rest /= 10;
    }
    put(b'.');
    loop {
        put(b'0' + (rest % 10) as u8);
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    if v < 0.0 {
        put(b'-');
    }
    let mut out = JavaNumber::empty();
    out.push_all(&buf[at..]);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn double(v: f64) -> String {
        JavaNumber::from_f64(v).to_string()
    }

    fn float(v: f32) -> String {
        JavaNumber::from_f32(v).to_string()
    }

    /// Outputs of Java's `Double.toString` / `Float.toString` (Java 19
    /// on, which writes the shortest digits; Java 17's older algorithm
    /// writes one digit more for a few values, such as `Float.MIN_NORMAL`).
    #[test]
    fn doubles_as_java_writes_them() {
        for (v, java) in [
            (1e10, "1.0E10"),
            (1e-5, "1.0E-5"),
            (4.9e-324, "4.9E-324"),
            (f64::MAX, "1.7976931348623157E308"),
            (f64::MIN_POSITIVE, "2.2250738585072014E-308"),
            (f64::NAN, "NaN"),
            (f64::INFINITY, "Infinity"),
            (f64::NEG_INFINITY, "-Infinity"),
            (0.0, "0.0"),
            (-0.0, "-0.0"),
            (1.0, "1.0"),
            (100.0, "100.0"),
            (0.001, "0.001"),
            (0.0001, "1.0E-4"),
            (9_999_999.0, "9999999.0"),
            (1e7, "1.0E7"),
            (12_345_678.9, "1.23456789E7"),
            (0.1 + 0.2, "0.30000000000000004"),
            (1.0 / 3.0, "0.3333333333333333"),
            (-2.5e-7, "-2.5E-7"),
            (1e21, "1.0E21"),
            (123_456.789, "123456.789"),
        ] {
            assert_eq!(double(v), java, "{v:e}");
        }
    }

    #[test]
    fn floats_as_java_writes_them() {
        for (v, java) in [
            (1e10f32, "1.0E10"),
            (1e-5, "1.0E-5"),
            (0.1, "0.1"),
            (f32::MAX, "3.4028235E38"),
            (f32::MIN_POSITIVE, "1.1754944E-38"),
            (1.4e-45, "1.4E-45"),
            (f32::NAN, "NaN"),
            (-0.0, "-0.0"),
            (3.0, "3.0"),
            (16_777_216.0, "1.6777216E7"),
            (0.3, "0.3"),
        ] {
            assert_eq!(float(v), java, "{v:e}");
        }
    }

    #[test]
    fn short_decimals_take_the_fast_path() {
        for (v, java) in [
            (1.25, "1.25"),
            (100.0, "100.0"),
            (0.001, "0.001"),
            (-2.5, "-2.5"),
            (1278.75, "1278.75"),
            (9_999_999.0, "9999999.0"),
        ] {
            assert_eq!(
                short_decimal(v).map(|n| n.to_string()).as_deref(),
                Some(java)
            );
        }
        for v in [0.1 + 0.2, 1.0 / 3.0, 0.0005, 1e7, 0.0, -0.0] {
            assert!(short_decimal(v).is_none(), "{v}");
        }
    }

    proptest! {
        /// Every double reads back as itself, in Java's layout.
        #[test]
        fn doubles_round_trip(v in any::<f64>()) {
            prop_assume!(v.is_finite());
            let s = double(v);
            prop_assert_eq!(s.parse::<f64>().unwrap().to_bits(), v.to_bits(), "{}", s);
            let plain = v == 0.0 || (1e-3..1e7).contains(&v.abs());
            prop_assert_eq!(!s.contains('E'), plain, "{}", s);
            prop_assert!(s.contains('.'), "{}", s);
        }

        #[test]
        fn floats_round_trip(v in any::<f32>()) {
            prop_assume!(v.is_finite());
            let s = float(v);
            prop_assert_eq!(s.parse::<f32>().unwrap().to_bits(), v.to_bits(), "{}", s);
            prop_assert!(s.contains('.'), "{}", s);
        }

        /// The fast path agrees with the general one wherever it answers,
        /// and answers for every decimal of up to three places.
        #[test]
        fn short_decimal_is_the_shortest_form(n in 1u64..10_000_000_000, k in 0u32..4, negative: bool) {
            let text = format!("{}{}e-{k}", if negative { "-" } else { "" }, n);
            let v: f64 = text.parse().unwrap();
            prop_assume!((1e-3..1e7).contains(&v.abs()));
            let general = JavaNumber::general(v, v < 0.0);
            prop_assert_eq!(short_decimal(v).map(|n| n.to_string()), Some(general.to_string()));
        }
    }
}
