//! PostgreSQL's binary `NUMERIC` straight to and from Connect decimals.
//!
//! sqlx reads and writes `NUMERIC` through `BigDecimal`, converting every
//! value between base 10000 and a big integer by way of base-10 digit
//! vectors. A NUMERIC column's values nearly always fit an `i128` at the
//! column's scale: these codecs do that arithmetic on machine integers and
//! fall back to `BigDecimal` (sqlx's own codec) only for the rest.

use bigdecimal::BigDecimal;
use connect_api::Decimal;
use num_bigint::BigInt;
use sqlx::encode::IsNull;
use sqlx::error::BoxDynError;
use sqlx::postgres::{PgArgumentBuffer, PgTypeInfo, PgValueFormat, PgValueRef, Postgres};
use sqlx::{Decode, Encode, Type};

use crate::db::rescale_rounding;

const NBASE: u128 = 10_000;
const SIGN_NEGATIVE: u16 = 0x4000;
const SIGN_NAN: u16 = 0xC000;

/// A Connect decimal bound as a PostgreSQL `NUMERIC` parameter.
#[derive(Debug)]
pub(crate) struct PgDecimal<'a>(pub(crate) &'a Decimal);

impl Type<Postgres> for PgDecimal<'_> {
    fn type_info() -> PgTypeInfo {
        <BigDecimal as Type<Postgres>>::type_info()
    }
}

impl Encode<'_, Postgres> for PgDecimal<'_> {
    fn encode_by_ref(&self, buf: &mut PgArgumentBuffer) -> Result<IsNull, BoxDynError> {
        let d = self.0;
        match i128::try_from(d.unscaled()) {
            Ok(unscaled) if encode_small(unscaled, d.scale(), buf) => Ok(IsNull::No),
            _ => <BigDecimal as Encode<'_, Postgres>>::encode_by_ref(
                &BigDecimal::new(d.unscaled().clone(), i64::from(d.scale())),
                buf,
            ),
        }
    }
}

/// Writes `unscaled * 10^-scale` in NUMERIC's binary form; `false` (and
/// nothing written) when it does not fit the machine-integer path.
fn encode_small(unscaled: i128, scale: i32, buf: &mut Vec<u8>) -> bool {
    let mut magnitude = unscaled.unsigned_abs();
    // A negative scale is an integer with trailing zeros.
    let dscale = if scale < 0 {
        match 10u128
            .checked_pow(scale.unsigned_abs())
            .and_then(|p| magnitude.checked_mul(p))
        {
            Some(m) => magnitude = m,
            None => return false,
        }
        0
    } else {
        scale
    };
    let Ok(dscale_out) = u16::try_from(dscale) else {
        return false;
    };
    // Align the fractional digits to whole base-10000 digits.
    let pad = (4 - dscale % 4) % 4;
    let Some(aligned) = 10u128
        .checked_pow(pad as u32)
        .and_then(|p| magnitude.checked_mul(p))
    else {
        return false;
    };
    let fraction_digits = (dscale + pad) / 4;
    // Base-10000 digits, least significant first; at most 10 for a u128.
    let mut digits = [0i16; 10];
    let mut n = 0;
    let mut rest = aligned;
    while rest > 0 {
        digits[n] = (rest % NBASE) as i16;
        rest /= NBASE;
        n += 1;
    }
    // Trailing zero digits are left out, as PostgreSQL stores them.
    let lowest = digits[..n].iter().position(|&d| d != 0).unwrap_or(n);
    let weight = n as i32 - 1 - fraction_digits;
    let (Ok(count), Ok(weight)) = (i16::try_from(n - lowest), i16::try_from(weight)) else {
        return false;
    };
    let sign = if unscaled < 0 { SIGN_NEGATIVE } else { 0 };
    buf.reserve(8 + 2 * (n - lowest));
    buf.extend_from_slice(&count.to_be_bytes());
    buf.extend_from_slice(&(if n == 0 { 0 } else { weight }).to_be_bytes());
    buf.extend_from_slice(&sign.to_be_bytes());
    buf.extend_from_slice(&dscale_out.to_be_bytes());
    for d in digits[lowest..n].iter().rev() {
        buf.extend_from_slice(&d.to_be_bytes());
    }
    true
}

/// A `NUMERIC` value as PostgreSQL sent it, read at a column's scale by
/// [`PgNumericBytes::at_scale`].
pub(crate) struct PgNumericBytes<'r>(Raw<'r>);

enum Raw<'r> {
    Binary(&'r [u8]),
    Text(&'r str),
}

impl Type<Postgres> for PgNumericBytes<'_> {
    fn type_info() -> PgTypeInfo {
        <BigDecimal as Type<Postgres>>::type_info()
    }
}

impl<'r> Decode<'r, Postgres> for PgNumericBytes<'r> {
    fn decode(value: PgValueRef<'r>) -> Result<Self, BoxDynError> {
        Ok(PgNumericBytes(match value.format() {
            PgValueFormat::Binary => Raw::Binary(value.as_bytes()?),
            PgValueFormat::Text => Raw::Text(value.as_str()?),
        }))
    }
}

impl PgNumericBytes<'_> {
    /// The unscaled integer of the value at `scale`, rounding half even
    /// when the value has more decimal places (a NUMERIC column's values
    /// never do); an error for NaN and malformed input.
    pub(crate) fn at_scale(&self, scale: i32) -> Result<BigInt, BoxDynError> {
        let (unscaled, exponent) = match &self.0 {
            Raw::Binary(bytes) => {
                let numeric = Numeric::parse(bytes)?;
                if let Some(v) = numeric.small_at_scale(scale) {
                    return Ok(BigInt::from(v));
                }
                numeric.big()
            }
            Raw::Text(text) => text.parse::<BigDecimal>()?.into_bigint_and_exponent(),
        };
        Ok(rescale_rounding(unscaled, exponent, scale))
    }
}

/// The binary form, checked: `count` base-10000 digits (most significant
/// first) after an 8-byte header, `value = digits * 10000^(weight + 1 -
/// count)`.
struct Numeric<'r> {
    digits: &'r [u8],
    weight: i64,
    negative: bool,
}

impl<'r> Numeric<'r> {
    fn parse(bytes: &'r [u8]) -> Result<Numeric<'r>, BoxDynError> {
        let short = || -> BoxDynError { "a NUMERIC value shorter than its header says".into() };
        let word = |i: usize| {
            bytes
                .get(i..i + 2)
                .map(|b| u16::from_be_bytes([b[0], b[1]]))
        };
        let count = usize::from(word(0).ok_or_else(short)?);
        let weight = i64::from(word(2).ok_or_else(short)? as i16);
        let sign = word(4).ok_or_else(short)?;
        if sign == SIGN_NAN {
            return Err("NaN has no Connect decimal".into());
        }
        let digits = bytes.get(8..8 + 2 * count).ok_or_else(short)?;
        if let Some(bad) = digits
            .chunks_exact(2)
            .map(|b| u16::from_be_bytes([b[0], b[1]]))
            .find(|&d| d >= 10_000)
        {
            return Err(format!("a NUMERIC digit out of range: {bad}").into());
        }
        Ok(Numeric {
            digits,
            weight,
            negative: sign == SIGN_NEGATIVE,
        })
    }

    fn digits(&self) -> impl Iterator<Item = u16> + '_ {
        self.digits
            .chunks_exact(2)
            .map(|b| u16::from_be_bytes([b[0], b[1]]))
    }

    /// The power of ten of the last digit's units.
    fn exponent(&self) -> i64 {
        4 * (self.weight + 1 - (self.digits.len() / 2) as i64)
    }

    /// The value at `scale` on machine integers; `None` when it does not
    /// fit or needs rounding.
    fn small_at_scale(&self, scale: i32) -> Option<i128> {
        let mut n: i128 = 0;
        for d in self.digits() {
            n = n.checked_mul(10_000)?.checked_add(i128::from(d))?;
        }
        let shift = self.exponent() + i64::from(scale);
        let pow = |k: i64| u32::try_from(k).ok().and_then(|k| 10i128.checked_pow(k));
        let magnitude = if shift >= 0 {
            n.checked_mul(pow(shift)?)?
        } else {
            let p = pow(-shift)?;
            if n % p != 0 {
                return None;
            }
            n / p
        };
        Some(if self.negative { -magnitude } else { magnitude })
    }

    /// The unscaled value and its exponent as a big integer.
    fn big(&self) -> (BigInt, i64) {
        let mut n = BigInt::ZERO;
        for d in self.digits() {
            n = n * 10_000u32 + d;
        }
        (if self.negative { -n } else { n }, -self.exponent())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn sqlx_bytes(d: &BigDecimal) -> Vec<u8> {
        let mut buf = PgArgumentBuffer::default();
        let _ = <BigDecimal as Encode<'_, Postgres>>::encode_by_ref(d, &mut buf).unwrap();
        buf.to_vec()
    }

    fn ours(unscaled: &BigInt, scale: i32) -> Vec<u8> {
        let d = Decimal::new(unscaled.clone(), scale);
        let mut buf = PgArgumentBuffer::default();
        let _ = PgDecimal(&d).encode_by_ref(&mut buf).unwrap();
        buf.to_vec()
    }

    fn decimal(base: i64, zeros: u32) -> BigInt {
        BigInt::from(base) * BigInt::from(10).pow(zeros)
    }

    #[test]
    fn known_values_encode_as_postgresql_stores_them() {
        // 12.34: one digit before the point (12), one after (3400).
        assert_eq!(
            ours(&BigInt::from(1234), 2),
            [0, 2, 0, 0, 0, 0, 0, 2, 0, 12, 0x0d, 0x48]
        );
        // Zero keeps its scale and has no digits.
        assert_eq!(ours(&BigInt::from(0), 3), [0, 0, 0, 0, 0, 0, 0, 3]);
    }

    proptest! {
        // Our bytes are sqlx's bytes for every decimal: the same value,
        // the same normalisation.
        #[test]
        fn encoding_equals_sqlxs(base in any::<i64>(), zeros in 0u32..30, scale in -6i32..45) {
            // Zero has no digits, so its weight means nothing: sqlx writes
            // one that depends on the scale, we write 0 (tested above).
            prop_assume!(base != 0);
            let unscaled = decimal(base, zeros);
            let want = sqlx_bytes(&BigDecimal::new(unscaled.clone(), i64::from(scale)));
            prop_assert_eq!(ours(&unscaled, scale), want);
        }

        // Reading sqlx's bytes at a scale gives what sqlx's BigDecimal
        // rescaled half even gives.
        #[test]
        fn decoding_at_a_scale_equals_sqlx_and_rounding(base in any::<i64>(), zeros in 0u32..30, exponent in -6i64..45, scale in 0i32..45) {
            let value = BigDecimal::new(decimal(base, zeros), exponent);
            let bytes = sqlx_bytes(&value);
            let got = PgNumericBytes(Raw::Binary(&bytes)).at_scale(scale).unwrap();
            let want = value
                .with_scale_round(i64::from(scale), bigdecimal::RoundingMode::HalfEven)
                .into_bigint_and_exponent()
                .0;
            prop_assert_eq!(got, want);
        }

        // Malformed bytes from the wire are an error, never a panic.
        #[test]
        fn any_bytes_decode_or_fail(bytes in proptest::collection::vec(any::<u8>(), 0..40), scale in 0i32..20) {
            let _ = PgNumericBytes(Raw::Binary(&bytes)).at_scale(scale);
        }
    }
}
