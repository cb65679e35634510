//! `db.timezone`: the zone that `TIMESTAMP` columns without a zone are in.

use chrono::{DateTime, Duration, FixedOffset, NaiveDateTime, Offset, TimeZone, Utc};
use chrono_tz::Tz;

/// The zone `db.timezone` names: a fixed offset, or an IANA zone whose
/// offset follows its daylight-saving rules (the zone ids Java accepts,
/// from `chrono-tz`'s copy of the IANA database).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DbTimeZone {
    Fixed(FixedOffset),
    Named(Tz),
}

impl DbTimeZone {
    /// UTC, the key's default (a fixed offset: no zone lookup per value).
    pub(crate) const UTC: DbTimeZone = match FixedOffset::east_opt(0) {
        Some(zero) => DbTimeZone::Fixed(zero),
        None => panic!("a zero offset is in range"),
    };

    /// `UTC`, `Z`, a fixed offset (`+02:00`, `-0530`) or an IANA zone id
    /// (`Europe/Paris`); `None` for anything else.
    pub(crate) fn parse(raw: &str) -> Option<DbTimeZone> {
        match raw.trim() {
            "" | "Z" | "UTC" | "GMT" | "Etc/UTC" | "Etc/GMT" => Some(Self::UTC),
            s => match s.parse::<FixedOffset>() {
                Ok(fixed) => Some(DbTimeZone::Fixed(fixed)),
                Err(_) => s.parse::<Tz>().ok().map(DbTimeZone::Named),
            },
        }
    }

    /// The wall-clock time of `utc` in this zone; `None` at the ends of
    /// chrono's range, where the offset cannot be added.
    pub(crate) fn local(self, utc: DateTime<Utc>) -> Option<NaiveDateTime> {
        let naive = utc.naive_utc();
        let offset = match self {
            DbTimeZone::Fixed(fixed) => fixed,
            DbTimeZone::Named(tz) => tz.offset_from_utc_datetime(&naive).fix(),
        };
        shift(naive, offset.local_minus_utc())
    }

    /// The instant a wall-clock time of this zone names. A time that
    /// happens twice (the hour repeated when clocks go back) is the
    /// earlier instant, as `java.time` resolves it; a time that never
    /// happens (the hour skipped when clocks go forward) is read with the
    /// offset before the skip, so it lands just after it, as Java does.
    /// At the ends of chrono's range the time is taken as UTC.
    pub(crate) fn utc(self, local: NaiveDateTime) -> DateTime<Utc> {
        let offset = match self {
            DbTimeZone::Fixed(fixed) => fixed,
            DbTimeZone::Named(tz) => match tz.offset_from_local_datetime(&local).earliest() {
                Some(offset) => offset.fix(),
                None => local
                    .checked_sub_signed(Duration::days(1))
                    .map(|before| tz.offset_from_utc_datetime(&before).fix())
                    .unwrap_or(Utc.fix()),
            },
        };
        shift(local, -offset.local_minus_utc())
            .unwrap_or(local)
            .and_utc()
    }
}

/// `t` moved by `seconds`; `None` past chrono's range. No arithmetic for
/// UTC, the default, as it is done for every timestamp value.
fn shift(t: NaiveDateTime, seconds: i32) -> Option<NaiveDateTime> {
    if seconds == 0 {
        return Some(t);
    }
    t.checked_add_signed(Duration::seconds(i64::from(seconds)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::NaiveDate;
    use proptest::prelude::*;

    fn at(y: i32, mo: u32, d: u32, h: u32, mi: u32) -> NaiveDateTime {
        NaiveDate::from_ymd_opt(y, mo, d)
            .unwrap()
            .and_hms_opt(h, mi, 0)
            .unwrap()
    }

    #[test]
    fn names_offsets_and_utc_parse_and_others_do_not() {
        assert_eq!(DbTimeZone::parse("UTC"), Some(DbTimeZone::UTC));
        assert_eq!(DbTimeZone::parse("Z"), Some(DbTimeZone::UTC));
        assert!(matches!(
            DbTimeZone::parse("+02:00"),
            Some(DbTimeZone::Fixed(f)) if f.local_minus_utc() == 7200
        ));
        assert_eq!(
            DbTimeZone::parse("Europe/Paris"),
            Some(DbTimeZone::Named(Tz::Europe__Paris))
        );
        assert_eq!(DbTimeZone::parse("Mars/Olympus"), None);
    }

    #[test]
    fn a_named_zone_follows_daylight_saving_time() {
        let paris = DbTimeZone::parse("Europe/Paris").unwrap();
        // Winter: UTC+1; summer: UTC+2.
        assert_eq!(
            paris.utc(at(2026, 1, 15, 12, 0)).naive_utc(),
            at(2026, 1, 15, 11, 0)
        );
        assert_eq!(
            paris.utc(at(2026, 7, 15, 12, 0)).naive_utc(),
            at(2026, 7, 15, 10, 0)
        );
        assert_eq!(
            paris.local(at(2026, 7, 15, 10, 0).and_utc()),
            Some(at(2026, 7, 15, 12, 0))
        );
    }

    #[test]
    fn repeated_and_skipped_wall_times_resolve_as_java_does() {
        let paris = DbTimeZone::parse("Europe/Paris").unwrap();
        // 2026-10-25 02:30 happens twice (02:00 CEST -> 02:00 CET): the
        // earlier, still at +2.
        assert_eq!(
            paris.utc(at(2026, 10, 25, 2, 30)).naive_utc(),
            at(2026, 10, 25, 0, 30)
        );
        // 2026-03-29 02:30 never happens (02:00 CET -> 03:00 CEST): read at
        // +1, the offset before the skip.
        assert_eq!(
            paris.utc(at(2026, 3, 29, 2, 30)).naive_utc(),
            at(2026, 3, 29, 1, 30)
        );
    }

    proptest! {
        // Every instant a record can carry goes to a local time and back to
        // itself (for instants outside a repeated hour), and no input panics.
        #[test]
        fn local_then_utc_is_the_same_instant(secs in -62_000_000_000i64..250_000_000_000, zone in prop::sample::select(vec!["UTC", "+05:30", "-08:00", "Europe/Paris", "America/New_York", "Australia/Lord_Howe"])) {
            let tz = DbTimeZone::parse(zone).unwrap();
            let utc = DateTime::from_timestamp(secs, 0).unwrap();
            let local = tz.local(utc).unwrap();
            let back = tz.utc(local);
            let repeated = matches!(tz, DbTimeZone::Named(named) if named.offset_from_local_datetime(&local).single().is_none());
            prop_assert!(back == utc || repeated, "{} -> {} -> {}", utc, local, back);
        }

        #[test]
        fn no_wall_time_panics(secs in any::<i64>()) {
            if let Some(t) = DateTime::from_timestamp(secs, 0) {
                for tz in [DbTimeZone::UTC, DbTimeZone::parse("Pacific/Apia").unwrap(), DbTimeZone::parse("+14:00").unwrap()] {
                    let _ = tz.local(t);
                    let _ = tz.utc(t.naive_utc());
                }
            }
        }
    }
}
