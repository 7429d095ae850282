//! What a thread model's waiting room asks of HTTP/1.1: has a connection sent a
//! request worth a thread? A whole head, and its body when it is small; or a head too
//! large or malformed, which a thread refuses; or a body to stream or one the client
//! sends only after `100 Continue`. Read with the one head parser, so the waiting room
//! and the thread never disagree on where a head ends.

use bytes::BytesMut;

use super::head::{self, RequestFraming};
use crate::config::Limits;
use crate::http::Request;
use crate::rt::Readiness;

/// The largest body the waiting room waits for: larger ones arrive on the thread,
/// under `limits.min_rate` (the most one read takes in, so a thread then gets the
/// whole request in its first read).
const WAITED_BODY: u64 = 64 * 1024;

/// How ready `read` is (see [`Readiness`]); `streams` says whether a request's route
/// takes its body as it arrives (then it is ready with its head).
pub(super) fn readiness(
    read: &[u8],
    limits: &Limits,
    streams: impl FnOnce(&Request) -> bool,
) -> Readiness {
    let mut buf = BytesMut::from(read);
    match head::parse(&mut buf, limits) {
        Ok(None) => Readiness::AtLine,
        Err(_) => Readiness::Now,
        Ok(Some(head)) => match head.framing {
            RequestFraming::Length(n)
                if n <= WAITED_BODY && !head.expect_continue && !streams(&head.req) =>
            {
                let head_len = read.len() - buf.len();
                match head_len + n as usize {
                    whole if whole > read.len() => Readiness::AtLength(whole),
                    _ => Readiness::Now,
                }
            }
            _ => Readiness::Now,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(read: &str) -> Readiness {
        readiness(read.as_bytes(), &Limits::default(), |_| false)
    }

    #[test]
    fn a_partial_head_waits_for_a_line() {
        assert_eq!(of("GET / HTTP/1.1\r\nHost: a\r\n"), Readiness::AtLine);
        assert_eq!(of("GET / HT"), Readiness::AtLine);
    }

    #[test]
    fn a_whole_request_is_ready() {
        assert_eq!(of("GET / HTTP/1.1\r\nHost: a\r\n\r\n"), Readiness::Now);
        let post = "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\nhi";
        assert_eq!(of(post), Readiness::Now);
    }

    #[test]
    fn a_small_body_is_waited_for_a_large_one_is_not() {
        let head = "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\n";
        assert_eq!(
            of(&format!("{head}abc")),
            Readiness::AtLength(head.len() + 10)
        );
        let large = "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1000000\r\n\r\n";
        assert_eq!(of(large), Readiness::Now);
        let chunked = "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n";
        assert_eq!(of(chunked), Readiness::Now);
    }

    #[test]
    fn a_body_its_route_streams_is_not_waited_for() {
        let post = "POST /up HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\nabc";
        let streams = |req: &Request| req.uri() == "/up";
        assert_eq!(
            readiness(post.as_bytes(), &Limits::default(), streams),
            Readiness::Now
        );
    }

    #[test]
    fn a_client_waiting_for_continue_is_not_kept_waiting() {
        let head =
            "POST / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 10\r\n\r\n";
        assert_eq!(of(head), Readiness::Now);
    }

    #[test]
    fn what_a_thread_refuses_goes_to_a_thread_at_once() {
        assert_eq!(of("GET / HTTP/1.1\r\nHost: a b\r\n\r\n"), Readiness::Now);
        assert_eq!(of(&"x".repeat(20_000)), Readiness::Now);
    }
}
