//! Values as a configuration spells them: counts within a range, addresses as people
//! type them, durations in seconds. Each deserializer's error says what it expected,
//! so a bad value reads as `loops: expected a number from 1 to 1024, got "two"`.

use std::fmt;
use std::net::{SocketAddr, ToSocketAddrs};
use std::time::Duration;

use serde::de::{self, Deserializer, Unexpected, Visitor};
use serde::{Deserialize, Serializer};

/// A count from `MIN` to `MAX`.
struct Count<const MIN: u64, const MAX: u64>;

impl<const MIN: u64, const MAX: u64> Visitor<'_> for Count<MIN, MAX> {
    type Value = usize;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a number from {MIN} to {MAX}")
    }

    fn visit_u64<E: de::Error>(self, n: u64) -> Result<usize, E> {
        if (MIN..=MAX).contains(&n) {
            usize::try_from(n).map_err(|_| E::invalid_value(Unexpected::Unsigned(n), &self))
        } else {
            Err(E::invalid_value(Unexpected::Unsigned(n), &self))
        }
    }

    fn visit_i64<E: de::Error>(self, n: i64) -> Result<usize, E> {
        match u64::try_from(n) {
            Ok(n) => self.visit_u64(n),
            Err(_) => Err(E::invalid_value(Unexpected::Signed(n), &self)),
        }
    }
}

/// Reads a count from `MIN` to `MAX`.
pub(crate) fn count<'de, D: Deserializer<'de>, const MIN: u64, const MAX: u64>(
    d: D,
) -> Result<usize, D::Error> {
    d.deserialize_any(Count::<MIN, MAX>)
}

/// Reads a count from `MIN` to `MAX` into a setting that may be left unset.
pub(super) fn some_count<'de, D: Deserializer<'de>, const MIN: u64, const MAX: u64>(
    d: D,
) -> Result<Option<usize>, D::Error> {
    count::<D, MIN, MAX>(d).map(Some)
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
    count::<D, MIN, MAX>(d).map(|n| n as u64)
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
pub(super) fn bind<'de, D: Deserializer<'de>>(d: D) -> Result<SocketAddr, D::Error> {
    parse_bind(&String::deserialize(d)?).map_err(de::Error::custom)
}

/// Durations as seconds, fractions allowed (`0.5` is 500 ms).
pub(crate) mod seconds {
    use super::{Deserialize, Deserializer, Duration, Serializer, de};

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let secs = f64::deserialize(d)?;
        Duration::try_from_secs_f64(secs).map_err(|_| {
            de::Error::custom(format!("expected seconds, a number from 0 up, got {secs}"))
        })
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
