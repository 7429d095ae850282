//! Values as a configuration spells them: counts within a range, addresses as people
//! type them, durations in seconds within a range. Each deserializer's error says what
//! it expected, so a bad value reads as `loops: expected a number from 1 to 1024, got
//! "two"`.
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

/// Reads a number from `MIN` to `MAX` as a `T` into a setting that may be left unset.
pub(crate) fn some_number<'de, D, T, const MIN: u64, const MAX: u64>(
    d: D,
) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: TryFrom<u64>,
{
    number::<D, T, MIN, MAX>(d).map(Some)
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
/// `unix://`), checked now so a typo is refused at start, not at the first event.
pub(crate) fn some_redis_url<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let url = String::deserialize(d)?;
    redis::Client::open(url.as_str()).map_err(|e| {
        serde::de::Error::custom(format!(
            "expected a Redis URL such as redis://127.0.0.1:6379, got {url:?} ({e})"
        ))
    })?;
    Ok(Some(url))
}

/// Reads a byte count from `MIN` to `MAX`.
pub(super) fn bytes<'de, D: Deserializer<'de>, const MIN: u64, const MAX: u64>(
    d: D,
) -> Result<u64, D::Error> {
    number::<D, u64, MIN, MAX>(d)
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

/// Durations as seconds, fractions allowed (`0.5` is 500 ms), within a range:
/// `deserialize_with = "value::seconds::within::<_, MIN_MS, MAX_S>"` (from `MIN_MS`
/// milliseconds to `MAX_S` seconds), `serialize_with = "value::seconds::serialize"`.
pub(crate) mod seconds {
    use super::{Deserializer, Duration, Serializer, Unexpected, Visitor, de, fmt};

    /// A duration from `MIN_MS` milliseconds to `MAX_S` seconds.
    struct Seconds<const MIN_MS: u64, const MAX_S: u64>;

    impl<const MIN_MS: u64, const MAX_S: u64> Seconds<MIN_MS, MAX_S> {
        fn checked<E: de::Error>(&self, secs: f64, given: Unexpected<'_>) -> Result<Duration, E> {
            // NaN fails both comparisons, and infinities the bounds.
            let min = MIN_MS as f64 / 1000.0;
            if secs >= min && secs <= MAX_S as f64 {
                Ok(Duration::from_secs_f64(secs))
            } else {
                Err(E::invalid_value(given, self))
            }
        }
    }

    impl<const MIN_MS: u64, const MAX_S: u64> Visitor<'_> for Seconds<MIN_MS, MAX_S> {
        type Value = Duration;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            let min = MIN_MS as f64 / 1000.0;
            write!(f, "seconds from {min} to {MAX_S}")
        }

        fn visit_f64<E: de::Error>(self, secs: f64) -> Result<Duration, E> {
            self.checked(secs, Unexpected::Float(secs))
        }

        fn visit_i64<E: de::Error>(self, n: i64) -> Result<Duration, E> {
            self.checked(n as f64, Unexpected::Signed(n))
        }

        fn visit_u64<E: de::Error>(self, n: u64) -> Result<Duration, E> {
            self.checked(n as f64, Unexpected::Unsigned(n))
        }
    }

    /// Reads seconds from `MIN_MS` milliseconds to `MAX_S` seconds.
    pub(crate) fn within<'de, D: Deserializer<'de>, const MIN_MS: u64, const MAX_S: u64>(
        d: D,
    ) -> Result<Duration, D::Error> {
        d.deserialize_any(Seconds::<MIN_MS, MAX_S>)
    }

    pub(crate) fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64())
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
            "0", "0.0009", "86400.5", "1e19", "-1", "-0.5", "nan", "inf", "-inf", "\"ten\"", "true",
        ] {
            let error = read(&format!("above_zero = {hostile}")).unwrap_err();
            assert!(
                error.starts_with("expected seconds from 0.001 to 86400, got "),
                "{hostile}: {error}"
            );
        }
        let error = read("from_zero = 11").unwrap_err();
        assert_eq!(error, "expected seconds from 0 to 10, got 11");
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
