//! Durations and sizes as people write them, and back: `"250ms"`, `"1m30s"`, `"2h"`,
//! `"8MiB"`, `"64KiB"`, `"1GB"`.
//!
//! A duration is one or more numbers, each followed by its unit — `d` (a day of 24 h),
//! `h`, `m`, `s`, `ms` — largest first, each unit at most once (`"1h30m"`, `"1.5s"`); a
//! bare number counts the unit its key documents. A size is a number of bytes, or a
//! number followed by `B`, `KB`, `MB`, `GB`, `TB` (powers of 1,000) or `KiB`, `MiB`,
//! `GiB`, `TiB` (powers of 1,024), letters in either case, and must come to whole bytes.
//! Numbers are decimal (`1.5`, no sign, no exponent), read exactly with checked
//! arithmetic: no text overflows or rounds. Spaces between a number and its unit are
//! allowed.
//!
//! What is printed reads back as the same value: the largest units that hold it
//! exactly (`"1m30s"`, `"100ms"`, `"8MiB"`, `"500B"`).

use std::fmt;
use std::time::Duration;

const NANOS_PER_SEC: u128 = 1_000_000_000;

/// The units of a duration, largest first, with their length in nanoseconds.
const TIME_UNITS: [(&str, u128); 5] = [
    ("d", 86_400 * NANOS_PER_SEC),
    ("h", 3_600 * NANOS_PER_SEC),
    ("m", 60 * NANOS_PER_SEC),
    ("s", NANOS_PER_SEC),
    ("ms", 1_000_000),
];

/// The units of a size, those printed first: binary, then decimal, largest first.
const SIZE_UNITS: [(&str, u128); 9] = [
    ("TiB", 1 << 40),
    ("GiB", 1 << 30),
    ("MiB", 1 << 20),
    ("KiB", 1 << 10),
    ("TB", 1_000_000_000_000),
    ("GB", 1_000_000_000),
    ("MB", 1_000_000),
    ("KB", 1_000),
    ("B", 1),
];

/// Returns the duration `text` spells, a bare number counting `bare`s; `None` when it
/// spells none or one past what a [`Duration`] holds.
pub(crate) fn parse_duration(text: &str, bare: Duration) -> Option<Duration> {
    let terms = terms(text)?;
    if let [(number, "")] = terms[..] {
        return duration(number.times(bare.as_nanos(), false)?);
    }
    let mut nanos: u128 = 0;
    let mut last = None;
    for (number, unit) in terms {
        let at = TIME_UNITS
            .iter()
            .position(|(name, _)| name.eq_ignore_ascii_case(unit))?;
        // Largest first, each once: `1s1s` and `30s1m` are typos.
        if last.is_some_and(|last| at <= last) {
            return None;
        }
        last = Some(at);
        nanos = nanos.checked_add(number.times(TIME_UNITS[at].1, false)?)?;
    }
    duration(nanos)
}

/// Returns the bytes `text` spells; `None` when it spells no whole number of bytes or
/// one past `u64`.
pub(crate) fn parse_size(text: &str) -> Option<u64> {
    let [(number, unit)] = terms(text)?[..] else {
        return None;
    };
    let length = match unit {
        "" => 1,
        _ => {
            SIZE_UNITS
                .iter()
                .find(|(name, _)| name.eq_ignore_ascii_case(unit))?
                .1
        }
    };
    u64::try_from(number.times(length, true)?).ok()
}

/// A duration as [`parse_duration`] reads it back: `"1m30s"`, `"100ms"`, `"0s"`.
pub(crate) struct DurationText(pub(crate) Duration);

impl fmt::Display for DurationText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let secs = self.0.as_secs();
        let sub = self.0.subsec_nanos();
        let (days, hours, minutes, seconds) =
            (secs / 86_400, secs / 3_600 % 24, secs / 60 % 60, secs % 60);
        for (n, unit) in [(days, "d"), (hours, "h"), (minutes, "m")] {
            if n > 0 {
                write!(f, "{n}{unit}")?;
            }
        }
        if seconds > 0 || (secs > 0 && sub > 0) {
            write!(f, "{seconds}{}s", Fraction(u64::from(sub), 9))
        } else if sub > 0 {
            let (ms, rest) = (sub / 1_000_000, sub % 1_000_000);
            write!(f, "{ms}{}ms", Fraction(u64::from(rest), 6))
        } else if secs == 0 {
            f.write_str("0s")
        } else {
            Ok(())
        }
    }
}

/// A size as [`parse_size`] reads it back: `"8MiB"`, `"1KB"`, `"500B"`.
pub(crate) struct SizeText(pub(crate) u64);

impl fmt::Display for SizeText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = u128::from(self.0);
        let (name, length) = SIZE_UNITS
            .iter()
            .find(|(_, length)| n != 0 && n % length == 0)
            .unwrap_or(&("B", 1));
        write!(f, "{}{name}", n / length)
    }
}

/// The digits after the point of `n` / 10^`width`, trailing zeros dropped: `.5`, or
/// nothing for 0.
struct Fraction(u64, usize);

impl fmt::Display for Fraction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0 == 0 {
            return Ok(());
        }
        let digits = format!("{:0width$}", self.0, width = self.1);
        write!(f, ".{}", digits.trim_end_matches('0'))
    }
}

/// A decimal number as written: its integer part, and its fraction as digits over a
/// power of ten.
#[derive(Debug, Clone, Copy)]
struct Decimal {
    whole: u128,
    fraction: u128,
    scale: u128,
}

impl Decimal {
    /// Returns this many `length`s, the fraction of the last one dropped, or `None`
    /// when there is one and `exact` is asked; `None` on overflow.
    fn times(self, length: u128, exact: bool) -> Option<u128> {
        let parts = self.fraction.checked_mul(length)?;
        if exact && parts % self.scale != 0 {
            return None;
        }
        self.whole
            .checked_mul(length)?
            .checked_add(parts / self.scale)
    }
}

/// Returns the duration of `nanos` nanoseconds, if a [`Duration`] holds it.
fn duration(nanos: u128) -> Option<Duration> {
    let secs = u64::try_from(nanos / NANOS_PER_SEC).ok()?;
    let nanos = u32::try_from(nanos % NANOS_PER_SEC).ok()?;
    Some(Duration::new(secs, nanos))
}

/// Splits `text` into numbers and the unit after each (`""` for none).
fn terms(text: &str) -> Option<Vec<(Decimal, &str)>> {
    let mut rest = text.trim();
    let mut terms = Vec::new();
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let number = decimal(&rest[..digits])?;
        rest = rest[digits..].trim_start();
        let letters = rest
            .find(|c: char| !c.is_ascii_alphabetic())
            .unwrap_or(rest.len());
        terms.push((number, &rest[..letters]));
        rest = rest[letters..].trim_start();
    }
    (!terms.is_empty()).then_some(terms)
}

/// Reads `123` or `1.5`: digits, then a point and digits if any.
fn decimal(text: &str) -> Option<Decimal> {
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    let all_digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if whole.is_empty() || !all_digits(whole) || !all_digits(fraction) {
        return None;
    }
    if text.ends_with('.') {
        return None;
    }
    let scale = 10u128.checked_pow(u32::try_from(fraction.len()).ok()?)?;
    Some(Decimal {
        whole: whole.parse().ok()?,
        fraction: if fraction.is_empty() {
            0
        } else {
            fraction.parse().ok()?
        },
        scale,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: Duration = Duration::from_secs(1);

    #[test]
    fn durations_are_read_in_their_units_and_bare_numbers_in_the_keys() {
        for (text, expected) in [
            ("10s", Duration::from_secs(10)),
            ("250ms", Duration::from_millis(250)),
            ("1m30s", Duration::from_secs(90)),
            ("2h", Duration::from_secs(7_200)),
            ("1d", Duration::from_secs(86_400)),
            ("1.5s", Duration::from_millis(1_500)),
            ("0.5ms", Duration::from_micros(500)),
            ("1h 30m", Duration::from_secs(5_400)),
            (" 10 S ", Duration::from_secs(10)),
            ("1d2h3m4s5ms", Duration::from_millis(93_784_005)),
            ("10", Duration::from_secs(10)),
            ("0.25", Duration::from_millis(250)),
            ("0", Duration::ZERO),
        ] {
            assert_eq!(parse_duration(text, SECOND), Some(expected), "{text}");
        }
        let millisecond = Duration::from_millis(1);
        assert_eq!(
            parse_duration("250", millisecond),
            Some(Duration::from_millis(250))
        );
    }

    #[test]
    fn anything_else_is_no_duration() {
        for text in [
            "",
            " ",
            "s",
            "10x",
            "10 sec",
            "10 5s",
            "-1s",
            "+1s",
            "1e3s",
            "nan",
            "inf",
            ".5s",
            "5.s",
            "1s1s",
            "30s1m",
            "1ms1s",
            "10s5",
            "1..5s",
            "1mo",
            "99999999999999999999999d",
            "340282366920938463463374607431768211456s",
            "18446744073709551616s",
        ] {
            assert_eq!(parse_duration(text, SECOND), None, "{text:?}");
        }
    }

    #[test]
    fn sizes_are_read_in_binary_and_decimal_units() {
        for (text, expected) in [
            ("8MiB", 8 << 20),
            ("64KiB", 64 << 10),
            ("1GB", 1_000_000_000),
            ("1GiB", 1 << 30),
            ("1TiB", 1 << 40),
            ("1.5KiB", 1_536),
            ("1.5kb", 1_500),
            ("512", 512),
            ("512B", 512),
            ("16 mib", 16 << 20),
            ("0", 0),
        ] {
            assert_eq!(parse_size(text), Some(expected), "{text}");
        }
        for text in [
            "",
            "MiB",
            "1.5",
            "0.1KiB",
            "8M",
            "8m",
            "1e6",
            "-1",
            "8MiB2",
            "1KiB1B",
            "nan",
            "18446744073709551616",
            "99999999999TiB",
        ] {
            assert_eq!(parse_size(text), None, "{text:?}");
        }
    }

    #[test]
    fn what_is_printed_reads_back_the_same() {
        for (duration, text) in [
            (Duration::ZERO, "0s"),
            (Duration::from_millis(100), "100ms"),
            (Duration::from_secs(90), "1m30s"),
            (Duration::from_secs(86_400), "1d"),
            (Duration::from_millis(1_500), "1.5s"),
            (Duration::from_micros(1_500), "1.5ms"),
            (Duration::from_millis(61_001), "1m1.001s"),
            (Duration::from_secs(3_600 + 1), "1h1s"),
            (Duration::from_nanos(1), "0.000001ms"),
        ] {
            assert_eq!(DurationText(duration).to_string(), text);
            assert_eq!(parse_duration(text, SECOND), Some(duration), "{text}");
        }
        for (bytes, text) in [
            (0, "0B"),
            (500, "500B"),
            (1_000, "1KB"),
            (8 << 20, "8MiB"),
            (1 << 40, "1TiB"),
            (1_536, "1536B"),
            (u64::MAX, "18446744073709551615B"),
        ] {
            assert_eq!(SizeText(bytes).to_string(), text);
            assert_eq!(parse_size(text), Some(bytes), "{text}");
        }
    }
}
