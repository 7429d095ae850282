//! The `Date` header value, formatted once a second per thread (RFC 9110 §6.6.1).

use std::cell::RefCell;
use std::time::{SystemTime, UNIX_EPOCH};

/// Length of an IMF-fixdate: `Sun, 06 Nov 1994 08:49:37 GMT`.
const LEN: usize = 29;

struct Cached {
    second: u64,
    text: [u8; LEN],
}

thread_local! {
    // Per thread, not shared: each loop formats the date at most once a second and
    // never contends with another loop for it.
    static CACHE: RefCell<Cached> = const { RefCell::new(Cached { second: u64::MAX, text: [0; LEN] }) };
}

/// Calls `f` with the current date as an IMF-fixdate.
pub(crate) fn with_date<R>(f: impl FnOnce(&[u8]) -> R) -> R {
    let now = SystemTime::now();
    let second = now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    CACHE.with_borrow_mut(|cache| {
        if cache.second != second {
            cache.second = second;
            cache
                .text
                .copy_from_slice(httpdate::fmt_http_date(now).as_bytes());
        }
        f(&cache.text)
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn formats_an_imf_fixdate() {
        let text = super::with_date(|d| String::from_utf8(d.to_vec()).unwrap());
        assert!(httpdate::parse_http_date(&text).is_ok(), "{text}");
        assert!(text.ends_with(" GMT"));
    }
}
