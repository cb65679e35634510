//! Java `SimpleDateFormat` patterns (`yyyy-MM-dd'T'HH:mm:ss.SSSZ`), compiled
//! once and then used to format and parse timestamps in UTC, as Kafka's
//! TimestampConverter and TimestampRouter do.
//!
//! Supported letters: `G y M L d D E u a H k K h m s S z Z X`. The week-based
//! letters `Y w W F` have no equivalent here and are rejected at configure
//! time, like any letter Java does not know. Quoted text (`'T'`, `''`) works
//! as in Java.
//!
//! Parsing differs from Java's lenient default in one way: out-of-range
//! values (month 13, hour 25) are errors instead of rolling over into the
//! next unit. As in Java, text after the last pattern element is ignored.

use std::fmt::Write as _;

use chrono::{DateTime, Datelike, NaiveDate, Timelike};

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const DAYS: [&str; 7] = [
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];
const MILLIS_PER_DAY: i64 = 86_400_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    Era,
    Year,
    Month,
    Day,
    DayOfYear,
    DayName,
    DayNumber,
    AmPm,
    /// `H`: 0-23.
    Hour23,
    /// `k`: 1-24.
    Hour24,
    /// `K`: 0-11.
    Hour11,
    /// `h`: 1-12.
    Hour12,
    Minute,
    Second,
    Milli,
    /// `z`: general time zone (`UTC`, `GMT+01:00`).
    ZoneGeneral,
    /// `Z`: RFC 822 (`+0000`).
    ZoneRfc822,
    /// `X`: ISO 8601 (`Z`, `+01`, `+0100`, `+01:00`).
    ZoneIso,
}

impl Field {
    fn of(letter: char) -> Option<Field> {
        Some(match letter {
            'G' => Field::Era,
            'y' => Field::Year,
            'M' | 'L' => Field::Month,
            'd' => Field::Day,
            'D' => Field::DayOfYear,
            'E' => Field::DayName,
            'u' => Field::DayNumber,
            'a' => Field::AmPm,
            'H' => Field::Hour23,
            'k' => Field::Hour24,
            'K' => Field::Hour11,
            'h' => Field::Hour12,
            'm' => Field::Minute,
            's' => Field::Second,
            'S' => Field::Milli,
            'z' => Field::ZoneGeneral,
            'Z' => Field::ZoneRfc822,
            'X' => Field::ZoneIso,
            _ => return None,
        })
    }

    /// Whether the field is written as digits with this letter count, which
    /// decides how many digits an abutting field may take when parsing.
    fn is_numeric(self, count: usize) -> bool {
        match self {
            Field::Month => count < 3,
            Field::Era | Field::DayName | Field::AmPm => false,
            Field::ZoneGeneral | Field::ZoneRfc822 | Field::ZoneIso => false,
            _ => true,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Literal(String),
    Field(Field, usize),
}

/// A compiled `SimpleDateFormat` pattern, in UTC.
///
/// ```
/// use connect_transforms::timestamp_converter::date_format::DateFormat;
///
/// let f = DateFormat::new("yyyy-MM-dd'T'HH:mm:ss.SSSXXX").unwrap();
/// assert_eq!(f.format(1_706_708_700_123).unwrap(), "2024-01-31T13:45:00.123Z");
/// assert_eq!(f.parse("2024-01-31T14:45:00.123+01:00").unwrap(), 1_706_708_700_123);
/// assert!(DateFormat::new("yyyy-ww").is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DateFormat {
    pattern: String,
    tokens: Vec<Token>,
}

impl DateFormat {
    /// Compile `pattern`; the error says which letter or quote is wrong.
    pub fn new(pattern: &str) -> Result<DateFormat, String> {
        let mut tokens: Vec<Token> = Vec::new();
        let mut literal = String::new();
        let chars: Vec<char> = pattern.chars().collect();
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            if c == '\'' {
                if chars.get(i + 1) == Some(&'\'') {
                    literal.push('\'');
                    i += 2;
                    continue;
                }
                // Quoted text runs to the next lone quote; `''` inside is a quote.
                i += 1;
                loop {
                    match chars.get(i) {
                        None => return Err(format!("Unterminated quote in pattern '{pattern}'")),
                        Some('\'') if chars.get(i + 1) == Some(&'\'') => {
                            literal.push('\'');
                            i += 2;
                        }
                        Some('\'') => {
                            i += 1;
                            break;
                        }
                        Some(&q) => {
                            literal.push(q);
                            i += 1;
                        }
                    }
                }
            } else if c.is_ascii_alphabetic() {
                let field = match Field::of(c) {
                    Some(f) => f,
                    None if "YwWF".contains(c) => {
                        return Err(format!(
                        "Pattern letter '{c}' (week-based fields) is not supported in '{pattern}'"
                    ))
                    }
                    None => return Err(format!("Illegal pattern character '{c}' in '{pattern}'")),
                };
                let mut count = 1;
                while chars.get(i + count) == Some(&c) {
                    count += 1;
                }
                if field == Field::ZoneIso && count > 3 {
                    return Err(format!("invalid ISO 8601 format: length={count}"));
                }
                if !literal.is_empty() {
                    tokens.push(Token::Literal(std::mem::take(&mut literal)));
                }
                tokens.push(Token::Field(field, count));
                i += count;
            } else {
                literal.push(c);
                i += 1;
            }
        }
        if !literal.is_empty() {
            tokens.push(Token::Literal(literal));
        }
        Ok(DateFormat {
            pattern: pattern.to_string(),
            tokens,
        })
    }

    /// The pattern as written.
    pub fn pattern(&self) -> &str {
        &self.pattern
    }

    /// `millis` since the epoch rendered with the pattern, in UTC.
    pub fn format(&self, millis: i64) -> Result<String, String> {
        let mut out = String::with_capacity(self.pattern.len() + 8);
        self.format_into(millis, &mut out)?;
        Ok(out)
    }

    /// Like [`format`](Self::format), appending to `out`.
    pub fn format_into(&self, millis: i64, out: &mut String) -> Result<(), String> {
        let dt = DateTime::from_timestamp_millis(millis)
            .ok_or_else(|| format!("timestamp {millis} ms is out of range"))?
            .naive_utc();
        for token in &self.tokens {
            let (field, count) = match token {
                Token::Literal(s) => {
                    out.push_str(s);
                    continue;
                }
                Token::Field(f, c) => (*f, *c),
            };
            let (ce, year_of_era) = dt.year_ce();
            let num: i64 = match field {
                Field::Era => {
                    out.push_str(if ce { "AD" } else { "BC" });
                    continue;
                }
                Field::Year if count == 2 => {
                    let _ = write!(out, "{:02}", year_of_era % 100);
                    continue;
                }
                Field::Year => year_of_era.into(),
                Field::Month if count >= 4 => {
                    out.push_str(MONTHS[dt.month0() as usize]);
                    continue;
                }
                Field::Month if count == 3 => {
                    out.push_str(&MONTHS[dt.month0() as usize][..3]);
                    continue;
                }
                Field::Month => dt.month().into(),
                Field::Day => dt.day().into(),
                Field::DayOfYear => dt.ordinal().into(),
                Field::DayName => {
                    let name = DAYS[dt.weekday().num_days_from_monday() as usize];
                    out.push_str(if count >= 4 { name } else { &name[..3] });
                    continue;
                }
                Field::DayNumber => dt.weekday().number_from_monday().into(),
                Field::AmPm => {
                    out.push_str(if dt.hour() < 12 { "AM" } else { "PM" });
                    continue;
                }
                Field::Hour23 => dt.hour().into(),
                Field::Hour24 => match dt.hour() {
                    0 => 24,
                    h => h.into(),
                },
                Field::Hour11 => (dt.hour() % 12).into(),
                Field::Hour12 => match dt.hour() % 12 {
                    0 => 12,
                    h => h.into(),
                },
                Field::Minute => dt.minute().into(),
                Field::Second => dt.second().into(),
                Field::Milli => (dt.nanosecond() / 1_000_000).into(),
                Field::ZoneGeneral => {
                    out.push_str(if count >= 4 {
                        "Coordinated Universal Time"
                    } else {
                        "UTC"
                    });
                    continue;
                }
                Field::ZoneRfc822 => {
                    out.push_str("+0000");
                    continue;
                }
                Field::ZoneIso => {
                    out.push('Z');
                    continue;
                }
            };
            let _ = write!(out, "{num:0count$}");
        }
        Ok(())
    }

    /// Parse `text` with the pattern; the result is milliseconds since the epoch.
    pub fn parse(&self, text: &str) -> Result<i64, String> {
        let mut p = Parsed::default();
        let mut rest = text;
        for (i, token) in self.tokens.iter().enumerate() {
            match token {
                Token::Literal(lit) => {
                    rest = rest.strip_prefix(lit.as_str()).ok_or_else(|| {
                        format!("expected '{lit}' at position {}", text.len() - rest.len())
                    })?;
                }
                Token::Field(field, count) => {
                    let abutting = matches!(self.tokens.get(i + 1), Some(Token::Field(f, c)) if f.is_numeric(*c));
                    let pos = text.len() - rest.len();
                    rest = p
                        .field(*field, *count, abutting, rest)
                        .map_err(|e| format!("{e} at position {pos}"))?;
                }
            }
        }
        p.to_millis()
    }
}

#[derive(Debug, Default)]
struct Parsed {
    bc: bool,
    year: Option<i64>,
    two_digit_year: bool,
    month: Option<u32>,
    day: Option<u32>,
    day_of_year: Option<u32>,
    pm: Option<bool>,
    hour: Option<u32>,
    hour_is_12h: bool,
    minute: u32,
    second: u32,
    milli: u32,
    offset_ms: i64,
}

/// Up to `max` leading ASCII digits of `s`, as a number, and the rest.
fn digits(s: &str, max: usize) -> Result<(i64, &str), String> {
    let n = s.bytes().take(max).take_while(u8::is_ascii_digit).count();
    if n == 0 {
        return Err("expected a number".to_string());
    }
    let v = s[..n]
        .parse::<i64>()
        .map_err(|_| format!("number '{}' is too large", &s[..n]))?;
    Ok((v, &s[n..]))
}

/// Which of `names` (or their 3-letter forms) `s` starts with, ignoring case.
fn name_prefix<'a>(s: &'a str, names: &[&str]) -> Option<(usize, &'a str)> {
    let starts = |n: &str| {
        s.get(..n.len())
            .is_some_and(|head| head.eq_ignore_ascii_case(n))
    };
    names
        .iter()
        .position(|n| starts(n))
        .map(|i| (i, &s[names[i].len()..]))
        .or_else(|| {
            names
                .iter()
                .position(|n| n.len() > 3 && starts(&n[..3]))
                .map(|i| (i, &s[3..]))
        })
}

fn in_range(v: i64, lo: i64, hi: i64, what: &str) -> Result<u32, String> {
    if (lo..=hi).contains(&v) {
        Ok(v as u32)
    } else {
        Err(format!("{what} {v} is out of range {lo}..{hi}"))
    }
}

/// `+hh`, `+hhmm` or `+hh:mm` (sign required) as milliseconds east of UTC.
fn numeric_offset(s: &str) -> Result<(i64, &str), String> {
    let sign = match s.as_bytes().first() {
        Some(b'+') => 1,
        Some(b'-') => -1,
        _ => return Err("expected a time zone offset".to_string()),
    };
    let s = &s[1..];
    if s.len() < 2 || !s.as_bytes()[..2].iter().all(u8::is_ascii_digit) {
        return Err("expected two hour digits in time zone offset".to_string());
    }
    let hours: i64 = s[..2].parse().map_err(|_| "bad offset hours".to_string())?;
    let mut rest = &s[2..];
    let mut minutes = 0;
    let after_colon = rest.strip_prefix(':').unwrap_or(rest);
    if after_colon.len() >= 2 && after_colon.as_bytes()[..2].iter().all(u8::is_ascii_digit) {
        minutes = after_colon[..2]
            .parse()
            .map_err(|_| "bad offset minutes".to_string())?;
        rest = &after_colon[2..];
    }
    if hours > 23 || minutes > 59 {
        return Err(format!(
            "time zone offset {hours:02}:{minutes:02} is out of range"
        ));
    }
    Ok((sign * (hours * 3_600_000 + minutes * 60_000), rest))
}

impl Parsed {
    fn field<'a>(
        &mut self,
        field: Field,
        count: usize,
        abutting: bool,
        s: &'a str,
    ) -> Result<&'a str, String> {
        // An abutting numeric field takes exactly its letter count, as in Java
        // (`yyyyMMdd`); otherwise digits run as far as they go.
        let width = if abutting { count } else { 18 };
        Ok(match field {
            Field::Era => {
                let (i, rest) = name_prefix(s, &["AD", "BC"]).ok_or("expected AD or BC")?;
                self.bc = i == 1;
                rest
            }
            Field::Year => {
                let (v, rest) = digits(s, width)?;
                self.two_digit_year = count <= 2 && s.len() - rest.len() == 2;
                self.year = Some(v);
                rest
            }
            Field::Month if count >= 3 => {
                let (i, rest) = name_prefix(s, &MONTHS).ok_or("expected a month name")?;
                self.month = Some(i as u32 + 1);
                rest
            }
            Field::Month => {
                let (v, rest) = digits(s, width)?;
                self.month = Some(in_range(v, 1, 12, "month")?);
                rest
            }
            Field::Day => {
                let (v, rest) = digits(s, width)?;
                self.day = Some(in_range(v, 1, 31, "day of month")?);
                rest
            }
            Field::DayOfYear => {
                let (v, rest) = digits(s, width)?;
                self.day_of_year = Some(in_range(v, 1, 366, "day of year")?);
                rest
            }
            // The day of the week follows from the date; Java ignores it too
            // once year, month and day are known.
            Field::DayName => name_prefix(s, &DAYS).ok_or("expected a day name")?.1,
            Field::DayNumber => {
                let (v, rest) = digits(s, width)?;
                in_range(v, 1, 7, "day number of week")?;
                rest
            }
            Field::AmPm => {
                let (i, rest) = name_prefix(s, &["AM", "PM"]).ok_or("expected AM or PM")?;
                self.pm = Some(i == 1);
                rest
            }
            Field::Hour23 | Field::Hour24 | Field::Hour11 | Field::Hour12 => {
                let (v, rest) = digits(s, width)?;
                let (lo, hi) = match field {
                    Field::Hour23 => (0, 23),
                    Field::Hour24 => (1, 24),
                    Field::Hour11 => (0, 11),
                    _ => (1, 12),
                };
                let h = in_range(v, lo, hi, "hour")?;
                self.hour_is_12h = matches!(field, Field::Hour11 | Field::Hour12);
                self.hour = Some(if i64::from(h) == hi && hi != 23 && hi != 11 {
                    0
                } else {
                    h
                });
                rest
            }
            Field::Minute => {
                let (v, rest) = digits(s, width)?;
                self.minute = in_range(v, 0, 59, "minute")?;
                rest
            }
            Field::Second => {
                let (v, rest) = digits(s, width)?;
                self.second = in_range(v, 0, 59, "second")?;
                rest
            }
            Field::Milli => {
                let (v, rest) = digits(s, width)?;
                self.milli = in_range(v, 0, 999, "millisecond")?;
                rest
            }
            Field::ZoneGeneral | Field::ZoneRfc822 | Field::ZoneIso => {
                if let Some(rest) = s.strip_prefix('Z') {
                    self.offset_ms = 0;
                    rest
                } else if let Some(after) = ["UTC", "GMT"].iter().find_map(|n| s.strip_prefix(n)) {
                    if after.starts_with(['+', '-']) {
                        let (off, rest) = numeric_offset(after)?;
                        self.offset_ms = off;
                        rest
                    } else {
                        self.offset_ms = 0;
                        after
                    }
                } else {
                    let (off, rest) = numeric_offset(s)?;
                    self.offset_ms = off;
                    rest
                }
            }
        })
    }

    fn to_millis(&self) -> Result<i64, String> {
        let mut year = self.year.unwrap_or(1970);
        if self.two_digit_year {
            // Java puts a two-digit year within 80 years before and 20 after now.
            let now = chrono::Utc::now().year() as i64;
            let start = now - 80;
            year += start - start.rem_euclid(100);
            if year < start {
                year += 100;
            }
        }
        if self.bc {
            year = 1 - year;
        }
        let year = i32::try_from(year).map_err(|_| format!("year {year} is out of range"))?;
        let date = match (self.month, self.day, self.day_of_year) {
            (None, None, Some(doy)) => NaiveDate::from_yo_opt(year, doy),
            (m, d, _) => NaiveDate::from_ymd_opt(year, m.unwrap_or(1), d.unwrap_or(1)),
        }
        .ok_or_else(|| format!("no such date in year {year}"))?;
        let mut hour = self.hour.unwrap_or(0);
        // A 24-hour field wins over the AM/PM marker, as in Java's calendar.
        if (self.hour_is_12h || self.hour.is_none()) && self.pm == Some(true) {
            hour += 12;
        }
        let days = i64::from(date.num_days_from_ce()) - 719_163;
        let time = i64::from(hour) * 3_600_000
            + i64::from(self.minute) * 60_000
            + i64::from(self.second) * 1000
            + i64::from(self.milli);
        days.checked_mul(MILLIS_PER_DAY)
            .and_then(|d| d.checked_add(time))
            .and_then(|t| t.checked_sub(self.offset_ms))
            .ok_or_else(|| "timestamp is out of range".to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const T: i64 = 1_706_708_700_123; // 2024-01-31T13:45:00.123Z, a Wednesday

    #[test]
    fn formats_common_patterns() {
        let cases = [
            ("yyyyMMdd", "20240131"),
            ("yyyy-MM-dd HH:mm:ss.SSS", "2024-01-31 13:45:00.123"),
            ("yy/M/d h:mm a", "24/1/31 1:45 PM"),
            (
                "EEE, d MMM yyyy HH:mm:ss Z",
                "Wed, 31 Jan 2024 13:45:00 +0000",
            ),
            ("EEEE MMMM dd G", "Wednesday January 31 AD"),
            ("D u k K S", "31 3 13 1 123"),
            ("'at' HH 'o''clock' z X", "at 13 o'clock UTC Z"),
        ];
        for (pattern, expected) in cases {
            let f = DateFormat::new(pattern).unwrap();
            assert_eq!(f.format(T).unwrap(), expected, "{pattern}");
        }
        assert_eq!(DateFormat::new("yyyy").unwrap().format(-1).unwrap(), "1969");
    }

    #[test]
    fn parses_common_patterns() {
        let f = DateFormat::new("yyyy-MM-dd HH:mm:ss.SSS").unwrap();
        assert_eq!(f.parse("2024-01-31 13:45:00.123").unwrap(), T);
        let f = DateFormat::new("yyyyMMddHHmmssSSS").unwrap();
        assert_eq!(f.parse("20240131134500123").unwrap(), T);
        let f = DateFormat::new("EEE, d MMM yyyy hh:mm:ss.SSS a Z").unwrap();
        assert_eq!(
            f.parse("Wed, 31 jan 2024 03:45:00.123 PM +0200").unwrap(),
            T
        );
        let f = DateFormat::new("yyyy-MM-dd'T'HH:mm:ss.SSSX").unwrap();
        assert_eq!(f.parse("2024-01-31T08:45:00.123-05").unwrap(), T);
        // Fields not in the pattern default to the epoch, as in Java.
        let f = DateFormat::new("HH:mm").unwrap();
        assert_eq!(f.parse("01:02").unwrap(), 3_720_000);
    }

    #[test]
    fn rejects_bad_patterns_and_input() {
        assert!(DateFormat::new("yyyy-mm-dd'T")
            .unwrap_err()
            .contains("Unterminated quote"));
        assert!(DateFormat::new("yyyy-bb")
            .unwrap_err()
            .contains("Illegal pattern character 'b'"));
        assert!(DateFormat::new("YYYY")
            .unwrap_err()
            .contains("not supported"));
        let f = DateFormat::new("yyyy-MM-dd").unwrap();
        for bad in ["", "2024", "2024-13-01", "2024-02-30", "x", "2024/01/01"] {
            assert!(f.parse(bad).is_err(), "{bad}");
        }
    }

    proptest! {
        #[test]
        fn format_then_parse_round_trips(ms in -62_135_596_800_000i64..253_402_300_799_999) {
            let f = DateFormat::new("yyyy-MM-dd'T'HH:mm:ss.SSSZ").unwrap();
            let text = f.format(ms).unwrap();
            prop_assert_eq!(f.parse(&text).unwrap(), ms);
        }

        #[test]
        fn parse_never_panics(s in "\\PC{0,24}") {
            let f = DateFormat::new("EEE MMM d yyyy hh:mm:ss.SSS a XXX G").unwrap();
            let _ = f.parse(&s);
        }
    }
}
