//! Request ids: every request gets one (`[request_id]`, on by default), answered in
//! `x-request-id`, written at the end of its access log line and handed to handlers
//! ([`RequestId`], an extractor), so one request is found in the client's report, the
//! log and the app's own lines alike.
//!
//! An id is made here — 16 hex digits, a per-thread 64-bit sequence from a random
//! start run through splitmix64's mixer, so ids do not repeat within a thread and do
//! not follow one another — unless the request came from a trusted proxy
//! (`[request_id] trust`) with an `X-Request-Id` of its own, which is kept. Anyone else
//! could put any text in the field, so theirs is replaced. Making one costs no lock, no
//! allocation and no system call.

use std::cell::Cell;
use std::fmt;
use std::hash::BuildHasher;
use std::net::IpAddr;

use http::HeaderValue;
use http::header::HeaderName;
use ipnet::IpNet;

use super::Request;
use crate::config::RequestIdSpec;

/// The field that carries the id, both ways.
pub(crate) const X_REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// The longest id taken from a proxy; a longer one is replaced.
const MAX_GIVEN: usize = 128;

/// A request's id.
///
/// A handler takes it as an extractor. With `[request_id]` off (or for a request not
/// from a connection) the extractor makes one, which neither the answer nor the log
/// carries.
///
/// # Examples
///
/// ```
/// use proscenium::http::RequestId;
///
/// async fn show(id: RequestId) -> String {
///     format!("your request was {id}")
/// }
/// let app = proscenium::App::new().get("/", show);
/// # drop(app);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestId(Repr);

#[derive(Debug, Clone, PartialEq, Eq)]
enum Repr {
    /// Made here: 16 lowercase hex digits.
    Made([u8; 16]),
    /// From a trusted proxy's `X-Request-Id`: visible ASCII, at most [`MAX_GIVEN`] bytes.
    Given(HeaderValue),
}

impl RequestId {
    /// Returns the id as text.
    pub fn as_str(&self) -> &str {
        match &self.0 {
            // Hex digits and visible ASCII, both checked where they are made.
            Repr::Made(digits) => std::str::from_utf8(digits).unwrap_or_default(),
            Repr::Given(value) => value.to_str().unwrap_or_default(),
        }
    }

    /// Returns the id as the field's value.
    pub(crate) fn as_bytes(&self) -> &[u8] {
        match &self.0 {
            Repr::Made(digits) => digits,
            Repr::Given(value) => value.as_bytes(),
        }
    }

    /// Returns the id as a field value (HTTP/2's answers take one).
    #[cfg(feature = "http2")]
    pub(crate) fn to_header_value(&self) -> HeaderValue {
        match &self.0 {
            Repr::Made(digits) => {
                HeaderValue::from_bytes(digits).expect("hex digits are a field value")
            }
            Repr::Given(value) => value.clone(),
        }
    }

    /// Returns a new id.
    pub(crate) fn make() -> Self {
        let n = mix(NEXT.with(|next| {
            let n = next.get();
            next.set(n.wrapping_add(1));
            n
        }));
        Self(Repr::Made(hex(n)))
    }

    /// Returns the id a proxy gave, if it is one to keep.
    fn given(value: &HeaderValue) -> Option<Self> {
        let bytes = value.as_bytes();
        let visible = |&b: &u8| b.is_ascii_graphic();
        (!bytes.is_empty() && bytes.len() <= MAX_GIVEN && bytes.iter().all(visible))
            .then(|| Self(Repr::Given(value.clone())))
    }
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

thread_local! {
    /// This thread's next number, from a random start (std's per-process random keys,
    /// hashed with the thread's id).
    static NEXT: Cell<u64> = Cell::new(
        std::collections::hash_map::RandomState::new().hash_one(std::thread::current().id()),
    );
}

/// Returns `n` as 16 lowercase hex digits, eight at a time in a word: a fraction of
/// what a loop over the digits costs (measured in docs/performance.md).
fn hex(n: u64) -> [u8; 16] {
    let eight = |half: u64| -> [u8; 8] {
        // Each nibble to a byte of its own, the first digit in the highest byte.
        let mut x = half;
        x = (x | x << 16) & 0x0000_ffff_0000_ffff;
        x = (x | x << 8) & 0x00ff_00ff_00ff_00ff;
        x = (x | x << 4) & 0x0f0f_0f0f_0f0f_0f0f;
        // 1 in each byte that holds 10 or more (adding 6 carries into its bit 4).
        let letters = ((x + 0x0606_0606_0606_0606) >> 4) & 0x0101_0101_0101_0101;
        // '0' + the digit, and 'a' - '0' - 10 = 39 more for a letter.
        (x + 0x3030_3030_3030_3030 + letters * 39).to_be_bytes()
    };
    let mut digits = [0u8; 16];
    digits[..8].copy_from_slice(&eight(n >> 32));
    digits[8..].copy_from_slice(&eight(n & 0xffff_ffff));
    digits
}

/// splitmix64's finaliser: a bijection, so distinct numbers give distinct ids.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// How a server gives its requests ids: `[request_id]` as the connections apply it.
#[derive(Debug, Clone, Default)]
pub(crate) struct RequestIds {
    /// The proxies whose `X-Request-Id` is kept.
    trust: Vec<IpNet>,
}

impl RequestIds {
    /// Returns the policy `spec` asks for; `None` when request ids are off.
    pub(crate) fn new(spec: &RequestIdSpec) -> Option<Self> {
        spec.enabled.then(|| Self {
            trust: spec.trust.clone(),
        })
    }

    /// Gives `req`, from `peer`, its id (a trusted proxy's, or a new one), and returns
    /// it for the answer and the log line.
    pub(crate) fn assign(&self, req: &mut Request, peer: IpAddr) -> RequestId {
        let kept = (self.trust.iter().any(|net| net.contains(&peer)))
            .then(|| req.headers().get(X_REQUEST_ID).and_then(RequestId::given))
            .flatten();
        let id = kept.unwrap_or_else(RequestId::make);
        req.set_id(id.clone());
        id
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    fn request_from(id: &str) -> Request {
        Request::from(
            http::Request::builder()
                .header("x-request-id", id)
                .body(bytes::Bytes::new())
                .unwrap(),
        )
    }

    #[test]
    fn made_ids_are_sixteen_hex_digits_and_do_not_repeat() {
        let ids: HashSet<String> = (0..10_000).map(|_| RequestId::make().to_string()).collect();
        assert_eq!(ids.len(), 10_000);
        assert!(ids.iter().all(|id| {
            id.len() == 16
                && id
                    .bytes()
                    .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
        }));
    }

    #[test]
    fn hex_digits_are_formats() {
        for n in [
            0,
            9,
            10,
            15,
            0xdead_beef,
            u64::MAX,
            0x0123_4567_89ab_cdef,
            mix(7),
        ] {
            assert_eq!(std::str::from_utf8(&hex(n)).unwrap(), format!("{n:016x}"));
        }
    }

    #[test]
    fn a_trusted_proxys_id_is_kept_and_anyone_elses_replaced() {
        let spec = RequestIdSpec {
            enabled: true,
            trust: vec!["10.0.0.0/8".parse().unwrap()],
        };
        let ids = RequestIds::new(&spec).unwrap();
        let mut req = request_from("edge-42");
        let id = ids.assign(&mut req, "10.1.2.3".parse().unwrap());
        assert_eq!(id.as_str(), "edge-42");
        assert_eq!(req.id(), Some(&id));
        let mut req = request_from("edge-42");
        let id = ids.assign(&mut req, "192.0.2.1".parse().unwrap());
        assert_eq!(id.as_str().len(), 16);
    }

    #[test]
    fn a_trusted_proxys_id_that_is_not_plain_text_is_replaced() {
        let spec = RequestIdSpec {
            enabled: true,
            trust: vec!["127.0.0.1/32".parse().unwrap()],
        };
        let ids = RequestIds::new(&spec).unwrap();
        for bad in ["two words", &"x".repeat(MAX_GIVEN + 1)] {
            let mut req = request_from(bad);
            let id = ids.assign(&mut req, "127.0.0.1".parse().unwrap());
            assert_ne!(id.as_str(), bad);
            assert_eq!(id.as_str().len(), 16);
        }
    }
}
