//! The `Date` header value, formatted once a second per thread (RFC 9110 §6.6.1).
//!
//! A loop runs [`keep_fresh`], which reformats the date at each second boundary, so
//! responses read the cached text without a clock call. Threads without it (plain
//! threads, tests) check the clock on each use.

use std::cell::{Cell, RefCell};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

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
    static TICKING: Cell<bool> = const { Cell::new(false) };
}

fn refresh(cache: &mut Cached, now: SystemTime) {
    let second = now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    if cache.second != second {
        cache.second = second;
        cache
            .text
            .copy_from_slice(httpdate::fmt_http_date(now).as_bytes());
    }
}

/// Calls `f` with the current date as an IMF-fixdate.
pub(crate) fn with_date<R>(f: impl FnOnce(&[u8]) -> R) -> R {
    let ticking = TICKING.get();
    CACHE.with_borrow_mut(|cache| {
        if !ticking {
            refresh(cache, SystemTime::now());
        }
        f(&cache.text)
    })
}

/// Keeps this thread's date fresh, waking at each second boundary; runs on a loop
/// for as long as the loop does.
pub(crate) async fn keep_fresh() {
    loop {
        let now = SystemTime::now();
        CACHE.with_borrow_mut(|cache| refresh(cache, now));
        TICKING.set(true);
        let into_second = now
            .duration_since(UNIX_EPOCH)
            .map_or(Duration::ZERO, |d| d - Duration::from_secs(d.as_secs()));
        tokio::time::sleep(Duration::from_secs(1) - into_second).await;
    }
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
