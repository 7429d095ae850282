//! Values as a configuration spells them: counts within a range, addresses as people
//! type them, durations and sizes within a range as numbers or text (`"10s"`,
//! `"8MiB"`: one parser for each, in `units.rs`, serves every key). Each deserializer's
//! error says what it expected, so a bad value reads as `loops: expected a number from
//! 1 to 1024, got "two"`.
//!
//! Every number of the configuration is read through one of these, with its range
//! (issue 33: a header timeout of 1e19 s passed and killed every loop later): a
//! duration is at most a day ([`DAY`]) and above zero unless its key documents what
//! zero means; a size is at most what the machine's memory could hold (a TiB); a
//! count at most what the thing counted could bear.

use std::fmt;
use std::net::{SocketAddr, ToSocketAddrs};
use std::time::Duration;

use serde::de::{self, Deserializer, Unexpected, Visitor};
use serde::{Deserialize, Serializer};

/// A count from `MIN` to `MAX`.
struct Count<const MIN: u64, const MAX: u64>;

impl<const MIN: u64, const MAX: u64> Visitor<'_> for Count<MIN, MAX> {
    type Value = u64;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a number from {MIN} to {MAX}")
    }

    fn visit_u64<E: de::Error>(self, n: u64) -> Result<u64, E> {
        if (MIN..=MAX).contains(&n) {
            Ok(n)
        } else {
            Err(E::invalid_value(Unexpected::Unsigned(n), &self))
        }
    }

    fn visit_i64<E: de::Error>(self, n: i64) -> Result<u64, E> {
        match u64::try_from(n) {
            Ok(n) => self.visit_u64(n),
            Err(_) => Err(E::invalid_value(Unexpected::Signed(n), &self)),
        }
    }
}

/// Reads a number from `MIN` to `MAX` as a `T` (`u32`, `usize`): one `T` cannot
/// hold is refused as out of range.
pub(crate) fn number<'de, D, T, const MIN: u64, const MAX: u64>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: TryFrom<u64>,
{
    let n = d.deserialize_any(Count::<MIN, MAX>)?;
    T::try_from(n)
        .map_err(|_| de::Error::invalid_value(Unexpected::Unsigned(n), &Count::<MIN, MAX>))
}

/// Reads a count from `MIN` to `MAX`.
pub(crate) fn count<'de, D: Deserializer<'de>, const MIN: u64, const MAX: u64>(
    d: D,
) -> Result<usize, D::Error> {
    number::<D, usize, MIN, MAX>(d)
}

/// Reads a count from `MIN` to `MAX` into a setting that may be left unset.
pub(crate) fn some_count<'de, D: Deserializer<'de>, const MIN: u64, const MAX: u64>(
    d: D,
) -> Result<Option<usize>, D::Error> {
    count::<D, MIN, MAX>(d).map(Some)
}

/// A count from `MIN` to `MAX`, as a value of a table (`instances = { parse = 4 }`).
struct Ranged<const MIN: u64, const MAX: u64>(usize);

impl<'de, const MIN: u64, const MAX: u64> Deserialize<'de> for Ranged<MIN, MAX> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        count::<D, MIN, MAX>(d).map(Self)
    }
}

/// Reads a table of counts, each from `MIN` to `MAX`.
pub(crate) fn counts<'de, D: Deserializer<'de>, const MIN: u64, const MAX: u64>(
    d: D,
) -> Result<std::collections::BTreeMap<String, usize>, D::Error> {
    let table = std::collections::BTreeMap::<String, Ranged<MIN, MAX>>::deserialize(d)?;
    Ok(table.into_iter().map(|(key, n)| (key, n.0)).collect())
}

/// Reads a Redis URL: one the `redis` crate can connect to (`redis://`, `rediss://`,
/// `unix://`), checked now so a typo is refused at start, not at the first event; in
/// a build without the `redis` feature, any is refused, naming the feature.
pub(crate) fn some_redis_url<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let url = String::deserialize(d)?;
    #[cfg(feature = "redis")]
    let refused = redis::Client::open(url.as_str())
        .err()
        .map(|e| format!("expected a Redis URL such as redis://127.0.0.1:6379, got {url:?} ({e})"));
    #[cfg(not(feature = "redis"))]
    let refused = Some(format!(
        "{url:?} names a Redis, which this build leaves out: build proscenium with its \
         `redis` feature"
    ));
    match refused {
        Some(why) => Err(serde::de::Error::custom(why)),
        None => Ok(Some(url)),
    }
}

/// Returns the address `text` names: `127.0.0.1:3000`, `[::1]:3000`,
/// `localhost:3000` (its first IPv4 address, else its first), or `:3000` (every
/// interface).
///
/// # Errors
///
/// A message saying what was expected, when `text` names no address.
pub fn parse_bind(text: &str) -> Result<SocketAddr, String> {
    let expected = || {
        format!(
            "expected an address such as 127.0.0.1:3000, localhost:3000, :3000 or [::1]:3000, got {text:?}"
        )
    };
    if let Some(port) = text.strip_prefix(':') {
        let port = port.parse::<u16>().map_err(|_| expected())?;
        return Ok(SocketAddr::from(([0, 0, 0, 0], port)));
    }
    if let Ok(addr) = text.parse() {
        return Ok(addr);
    }
    // A host name: only `host:port` with a numeric port is worth a lookup.
    let (_, port) = text.rsplit_once(':').ok_or_else(expected)?;
    port.parse::<u16>().map_err(|_| expected())?;
    let addrs: Vec<SocketAddr> = text.to_socket_addrs().map_err(|_| expected())?.collect();
    addrs
        .iter()
        .find(|a| a.is_ipv4())
        .or_else(|| addrs.first())
        .copied()
        .ok_or_else(expected)
}

/// Reads a listening address as [`parse_bind`] takes it.
pub(crate) fn bind<'de, D: Deserializer<'de>>(d: D) -> Result<SocketAddr, D::Error> {
    parse_bind(&String::deserialize(d)?).map_err(de::Error::custom)
}

/// Reads an address, as [`parse_bind`] takes it, into a setting that may be left unset.
pub(crate) fn some_bind<'de, D: Deserializer<'de>>(d: D) -> Result<Option<SocketAddr>, D::Error> {
    bind(d).map(Some)
}

/// The longest duration any setting takes, in seconds: a day.
pub(crate) const DAY: u64 = 86_400;

/// Durations within a range, as a number of the key's unit (seconds, fractions allowed,
/// or whole milliseconds) or as text (`units.rs`: `"250ms"`, `"1m30s"`); written back as
/// text. `deserialize_with = "value::seconds::within::<_, MIN_MS, MAX_S>"` (from
/// `MIN_MS` milliseconds to `MAX_S` seconds), `serialize_with =
/// "value::seconds::serialize"`; [`seconds::whole`] and [`millis::some_within`] for keys
/// held as a count of their unit.
pub(crate) mod seconds {
    use super::{Deserializer, Duration, Serializer, Span, Unit};

    /// Reads seconds from `MIN_MS` milliseconds to `MAX_S` seconds.
    pub(crate) fn within<'de, D: Deserializer<'de>, const MIN_MS: u64, const MAX_S: u64>(
        d: D,
    ) -> Result<Duration, D::Error> {
        let span = Span {
            unit: Unit::Seconds,
            min: Duration::from_millis(MIN_MS),
            max: Duration::from_secs(MAX_S),
        };
        d.deserialize_any(span)
    }

    /// Reads whole seconds from `MIN_S` to `MAX_S`.
    pub(crate) fn whole<'de, D: Deserializer<'de>, const MIN_S: u64, const MAX_S: u64>(
        d: D,
    ) -> Result<u64, D::Error> {
        let span = Span {
            unit: Unit::WholeSeconds,
            min: Duration::from_secs(MIN_S),
            max: Duration::from_secs(MAX_S),
        };
        d.deserialize_any(span).map(|d| d.as_secs())
    }

    pub(crate) fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&crate::config::units::DurationText(*d))
    }

    pub(crate) fn serialize_whole<S: Serializer>(secs: &u64, s: S) -> Result<S::Ok, S::Error> {
        serialize(&Duration::from_secs(*secs), s)
    }
}

/// Durations held as whole milliseconds: as [`seconds`], a bare number counting
/// milliseconds.
pub(crate) mod millis {
    use super::{Deserializer, Duration, Serializer, Span, Unit};

    /// Reads milliseconds from `MIN` to `MAX` into a setting that may be left unset.
    pub(crate) fn some_within<'de, D: Deserializer<'de>, const MIN: u64, const MAX: u64>(
        d: D,
    ) -> Result<Option<u64>, D::Error> {
        let span = Span {
            unit: Unit::Millis,
            min: Duration::from_millis(MIN),
            max: Duration::from_millis(MAX),
        };
        let d = d.deserialize_any(span)?;
        // Within `MAX`, a u64 of milliseconds.
        Ok(Some(u64::try_from(d.as_millis()).unwrap_or(u64::MAX)))
    }

    pub(crate) fn serialize_some<S: Serializer>(ms: &Option<u64>, s: S) -> Result<S::Ok, S::Error> {
        match ms {
            Some(ms) => super::seconds::serialize(&Duration::from_millis(*ms), s),
            None => s.serialize_none(),
        }
    }
}

/// What a bare number of a duration key counts.
#[derive(Debug, Clone, Copy)]
enum Unit {
    /// Seconds, fractions allowed.
    Seconds,
    /// Whole seconds.
    WholeSeconds,
    /// Whole milliseconds.
    Millis,
}

impl Unit {
    fn length(self) -> Duration {
        match self {
            Self::Seconds | Self::WholeSeconds => Duration::from_secs(1),
            Self::Millis => Duration::from_millis(1),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::Seconds | Self::WholeSeconds => "seconds",
            Self::Millis => "milliseconds",
        }
    }

    /// Returns `d` as a number of this unit, as the range is written.
    fn count(self, d: Duration) -> f64 {
        d.as_secs_f64() / self.length().as_secs_f64()
    }

    /// Whether `d` is a whole number of this unit, where the key holds no fraction.
    fn holds(self, d: Duration) -> bool {
        match self {
            Self::Seconds => true,
            Self::WholeSeconds | Self::Millis => d.as_nanos() % self.length().as_nanos() == 0,
        }
    }
}

/// A duration from `min` to `max`: a number of `unit`s, or text.
#[derive(Debug, Clone, Copy)]
struct Span {
    unit: Unit,
    min: Duration,
    max: Duration,
}

impl Span {
    fn checked<E: de::Error>(
        &self,
        d: Option<Duration>,
        given: Unexpected<'_>,
    ) -> Result<Duration, E> {
        match d {
            Some(d) if d >= self.min && d <= self.max && self.unit.holds(d) => Ok(d),
            _ => Err(E::invalid_value(given, self)),
        }
    }

    /// The duration of `n` units; `None` for a negative, infinite or NaN one.
    fn of(&self, n: f64) -> Option<Duration> {
        Duration::try_from_secs_f64(n * self.unit.length().as_secs_f64()).ok()
    }
}

impl Visitor<'_> for Span {
    type Value = Duration;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use crate::config::units::DurationText;
        write!(
            f,
            "{} from {} to {} ({} to {}) as a number, or a duration such as \"250ms\", \"10s\", \"1m30s\", \"2h\"",
            self.unit.name(),
            self.unit.count(self.min),
            self.unit.count(self.max),
            DurationText(self.min),
            DurationText(self.max),
        )
    }

    fn visit_f64<E: de::Error>(self, n: f64) -> Result<Duration, E> {
        self.checked(self.of(n), Unexpected::Float(n))
    }

    fn visit_i64<E: de::Error>(self, n: i64) -> Result<Duration, E> {
        self.checked(self.of(n as f64), Unexpected::Signed(n))
    }

    fn visit_u64<E: de::Error>(self, n: u64) -> Result<Duration, E> {
        self.checked(self.of(n as f64), Unexpected::Unsigned(n))
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<Duration, E> {
        let d = crate::config::units::parse_duration(text, self.unit.length());
        self.checked(d, Unexpected::Str(text))
    }
}

/// Sizes within a range, as a number of bytes or as text (`units.rs`: `"8MiB"`,
/// `"64KiB"`, `"1GB"`); written back as text. `deserialize_with =
/// "value::bytes::within::<_, T, MIN, MAX>"` (`T` the field's type: `u64`, `usize`,
/// `u32`), `serialize_with = "value::bytes::serialize"`.
pub(crate) mod bytes {
    use super::{Deserializer, Serializer, Unexpected, Visitor, de, fmt};
    use crate::config::units::{SizeText, parse_size};

    /// A size from `MIN` to `MAX` bytes.
    struct Size<const MIN: u64, const MAX: u64>;

    impl<const MIN: u64, const MAX: u64> Size<MIN, MAX> {
        fn checked<E: de::Error>(&self, n: Option<u64>, given: Unexpected<'_>) -> Result<u64, E> {
            match n {
                Some(n) if (MIN..=MAX).contains(&n) => Ok(n),
                _ => Err(E::invalid_value(given, self)),
            }
        }
    }

    impl<const MIN: u64, const MAX: u64> Visitor<'_> for Size<MIN, MAX> {
        type Value = u64;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(
                f,
                "bytes from {MIN} to {MAX} ({} to {}) as a number, or a size such as \"64KiB\", \"8MiB\", \"1GB\"",
                SizeText(MIN),
                SizeText(MAX)
            )
        }

        fn visit_u64<E: de::Error>(self, n: u64) -> Result<u64, E> {
            self.checked(Some(n), Unexpected::Unsigned(n))
        }

        fn visit_i64<E: de::Error>(self, n: i64) -> Result<u64, E> {
            self.checked(u64::try_from(n).ok(), Unexpected::Signed(n))
        }

        fn visit_str<E: de::Error>(self, text: &str) -> Result<u64, E> {
            self.checked(parse_size(text), Unexpected::Str(text))
        }
    }

    /// Reads a size from `MIN` to `MAX` bytes as a `T`.
    pub(crate) fn within<'de, D, T, const MIN: u64, const MAX: u64>(d: D) -> Result<T, D::Error>
    where
        D: Deserializer<'de>,
        T: TryFrom<u64>,
    {
        let n = d.deserialize_any(Size::<MIN, MAX>)?;
        T::try_from(n)
            .map_err(|_| de::Error::invalid_value(Unexpected::Unsigned(n), &Size::<MIN, MAX>))
    }

    pub(crate) fn serialize<S, T>(n: &T, s: S) -> Result<S::Ok, S::Error>
    where
        S: Serializer,
        T: Copy,
        u64: TryFrom<T>,
    {
        let n = u64::try_from(*n).map_err(|_| serde::ser::Error::custom("a size past u64"))?;
        s.collect_str(&SizeText(n))
    }
}

/// Rewrites serde's `invalid type: string "two", expected X` as
/// `expected X, got "two"`: what to write first, what was written after.
pub(super) fn reword(message: &str) -> String {
    let Some(rest) = message
        .strip_prefix("invalid type: ")
        .or_else(|| message.strip_prefix("invalid value: "))
    else {
        return message.to_owned();
    };
    let Some((got, expected)) = rest.split_once(", expected ") else {
        return message.to_owned();
    };
    let got = got
        .strip_prefix("string ")
        .or_else(|| got.strip_prefix("integer "))
        .or_else(|| got.strip_prefix("floating point "))
        .unwrap_or(got)
        .trim_matches('`');
    format!("expected {expected}, got {got}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bind_takes_what_people_type() {
        assert_eq!(
            parse_bind("127.0.0.1:3000").unwrap().to_string(),
            "127.0.0.1:3000"
        );
        assert_eq!(parse_bind(":3000").unwrap().to_string(), "0.0.0.0:3000");
        assert_eq!(parse_bind("[::1]:3000").unwrap().to_string(), "[::1]:3000");
        assert_eq!(parse_bind("0.0.0.0:80").unwrap().to_string(), "0.0.0.0:80");
        let local = parse_bind("localhost:3000").unwrap();
        assert!(local.ip().is_loopback() && local.port() == 3000, "{local}");
        for bad in [
            "3000",
            ":http",
            "localhost",
            "127.0.0.1:99999",
            "no such host:1",
        ] {
            let err = parse_bind(bad).unwrap_err();
            assert!(err.contains("expected an address"), "{bad}: {err}");
        }
    }

    #[derive(Debug, serde::Deserialize)]
    struct Ranges {
        #[serde(default, deserialize_with = "seconds::within::<_, 1, { DAY }>")]
        above_zero: Duration,
        #[serde(default, deserialize_with = "seconds::within::<_, 0, 10>")]
        from_zero: Duration,
        #[serde(default, deserialize_with = "number::<_, u32, 0, 100>")]
        small: u32,
        #[serde(default, deserialize_with = "counts::<_, 1, 4>")]
        table: std::collections::BTreeMap<String, usize>,
        #[serde(
            default,
            deserialize_with = "bytes::within::<_, usize, 1, { 1 << 30 }>"
        )]
        size: usize,
        #[serde(default, deserialize_with = "seconds::whole::<_, 0, { DAY }>")]
        whole: u64,
        #[serde(default, deserialize_with = "millis::some_within::<_, 1, 60_000>")]
        millis: Option<u64>,
    }

    fn read(text: &str) -> Result<Ranges, String> {
        toml::from_str(text).map_err(|e| reword(e.message()))
    }

    #[test]
    fn seconds_are_taken_within_their_range_and_nothing_else() {
        for (text, expected) in [
            ("above_zero = 0.001", Duration::from_millis(1)),
            ("above_zero = 86400", Duration::from_secs(DAY)),
            ("above_zero = 0.5", Duration::from_millis(500)),
        ] {
            assert_eq!(read(text).unwrap().above_zero, expected, "{text}");
        }
        assert_eq!(read("from_zero = 0").unwrap().from_zero, Duration::ZERO);
        for hostile in [
            "0",
            "0.0009",
            "86400.5",
            "1e19",
            "-1",
            "-0.5",
            "nan",
            "inf",
            "-inf",
            "\"ten\"",
            "true",
            "\"0.5ms\"",
            "\"1d1ms\"",
            "\"-1s\"",
            "\"10 sec\"",
            "\"1e19\"",
        ] {
            let error = read(&format!("above_zero = {hostile}")).unwrap_err();
            assert!(
                error.starts_with("expected seconds from 0.001 to 86400 (1ms to 1d) as a number, or a duration such as \"250ms\", \"10s\", \"1m30s\", \"2h\", got "),
                "{hostile}: {error}"
            );
        }
        let error = read("from_zero = 11").unwrap_err();
        assert!(
            error.starts_with("expected seconds from 0 to 10 (0s to 10s)"),
            "{error}"
        );
        assert!(error.ends_with(", got 11"), "{error}");
    }

    #[test]
    fn issue37_durations_are_taken_as_text_in_every_unit_a_key_holds() {
        for (text, expected) in [
            ("above_zero = \"10s\"", Duration::from_secs(10)),
            ("above_zero = \"250ms\"", Duration::from_millis(250)),
            ("above_zero = \"1m30s\"", Duration::from_secs(90)),
            ("above_zero = \"2h\"", Duration::from_secs(7_200)),
            ("above_zero = \"0.5\"", Duration::from_millis(500)),
        ] {
            assert_eq!(read(text).unwrap().above_zero, expected, "{text}");
        }
        assert_eq!(read("whole = \"1h\"").unwrap().whole, 3_600);
        assert_eq!(read("whole = 60").unwrap().whole, 60);
        assert_eq!(read("millis = \"1.5s\"").unwrap().millis, Some(1_500));
        assert_eq!(read("millis = 250").unwrap().millis, Some(250));
        assert_eq!(read("millis = \"250\"").unwrap().millis, Some(250));
        for hostile in ["whole = \"1500ms\"", "whole = 1.5", "whole = \"2d\""] {
            let error = read(hostile).unwrap_err();
            assert!(
                error.starts_with("expected seconds from 0 to 86400 (0s to 1d)"),
                "{hostile}: {error}"
            );
        }
        for hostile in ["millis = 1.5", "millis = \"0.5ms\"", "millis = \"2m\""] {
            let error = read(hostile).unwrap_err();
            assert!(
                error.starts_with("expected milliseconds from 1 to 60000 (1ms to 1m)"),
                "{hostile}: {error}"
            );
        }
    }

    #[test]
    fn issue37_sizes_are_taken_as_bytes_or_text_within_their_range() {
        for (text, expected) in [
            ("size = 512", 512),
            ("size = \"512\"", 512),
            ("size = \"8MiB\"", 8 << 20),
            ("size = \"64KiB\"", 64 << 10),
            ("size = \"1GB\"", 1_000_000_000),
            ("size = \"1GiB\"", 1 << 30),
        ] {
            assert_eq!(read(text).unwrap().size, expected, "{text}");
        }
        for hostile in [
            "0", "1.5", "-1", "1e19", "nan", "\"2GiB\"", "\"8M\"", "\"1.5\"", "\"lots\"", "true",
        ] {
            let error = read(&format!("size = {hostile}")).unwrap_err();
            let expected = "expected bytes from 1 to 1073741824 (1B to 1GiB) as a number, or a size such as \"64KiB\", \"8MiB\", \"1GB\", got ";
            assert!(error.starts_with(expected), "{hostile}: {error}");
        }
    }

    #[test]
    fn numbers_and_tables_of_counts_are_taken_within_their_range() {
        assert_eq!(read("small = 100").unwrap().small, 100);
        assert_eq!(read("table = { a = 4 }").unwrap().table["a"], 4);
        for hostile in [
            "small = 101",
            "small = -1",
            "small = 1e19",
            "small = nan",
            "small = 9223372036854775807",
            "table = { a = 0 }",
            "table = { a = 5 }",
        ] {
            let error = read(hostile).unwrap_err();
            assert!(
                error.starts_with("expected a number from "),
                "{hostile}: {error}"
            );
        }
    }

    #[test]
    fn messages_say_what_was_expected_then_what_was_given() {
        assert_eq!(
            reword("invalid type: string \"two\", expected a number from 1 to 1024"),
            "expected a number from 1 to 1024, got \"two\""
        );
        assert_eq!(
            reword("invalid value: integer `0`, expected a number from 1 to 1024"),
            "expected a number from 1 to 1024, got 0"
        );
        assert_eq!(reword("unknown variant"), "unknown variant");
    }
}
