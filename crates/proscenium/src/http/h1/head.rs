//! Request-head parsing: request line and header section, then the framing and
//! connection rules that follow from them (RFC 9112 §2–§9).

use std::mem::MaybeUninit;

use bytes::{Bytes, BytesMut};
use http::header::{self, HeaderName, HeaderValue};
use http::{Method, Uri, Version};

use super::error::ParseError;
use crate::config::Limits;
use crate::http::Request;
use crate::http::fields::{Field, Fields};

/// The most header fields a request may ever carry, whatever the configuration says.
const HEADER_CAPACITY: usize = 256;

/// How the body of a request is delimited (RFC 9112 §6.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RequestFraming {
    /// No body.
    Empty,
    /// Exactly this many bytes follow the head.
    Length(u64),
    /// A chunked body follows the head.
    Chunked,
}

/// A parsed request head and what it implies for the connection.
#[derive(Debug)]
pub(crate) struct Head {
    /// The request, its body still empty.
    pub(crate) req: Request,
    pub(crate) framing: RequestFraming,
    /// Whether the client allows the connection to stay open after this exchange.
    pub(crate) keep_alive: bool,
    /// The client waits for `100 Continue` before sending the body.
    pub(crate) expect_continue: bool,
    /// The request's (first) `Accept`: whether an error page is HTML or text.
    pub(crate) accept: Option<HeaderValue>,
    /// The request's (first) `Accept-Encoding`, for compressing the answer; `None`
    /// with a `Range` (see `http::compress`).
    pub(crate) accept_encoding: Option<HeaderValue>,
}

/// Parses a request head from the start of `buf` and takes it off.
///
/// Returns the head, `Ok(None)` when more bytes are needed (nothing taken), or the
/// reason the request is refused.
///
/// The request target and the header fields share the head's bytes instead of being
/// copied out of them: the head is parsed into byte ranges first, then taken off the
/// buffer as one `Bytes` that they slice (one allocation fewer per header field and
/// for the target). A value kept past the request keeps the head's buffer alive, as in
/// hyper. The fields stay ranges until the request's header table is asked for
/// (`http::fields`).
pub(crate) fn parse(buf: &mut BytesMut, limits: &Limits) -> Result<Option<Head>, ParseError> {
    let (len, method, version, target, ranges) = {
        let mut slots = [const { MaybeUninit::<httparse::Header<'_>>::uninit() }; HEADER_CAPACITY];
        let slots = &mut slots[..limits.max_headers.min(HEADER_CAPACITY)];
        let mut req = httparse::Request::new(&mut []);
        let parsed = httparse::ParserConfig::default()
            .parse_request_with_uninit_headers(&mut req, buf, slots);
        let len = match parsed {
            Ok(status) => status,
            Err(e) => return refusal(e, buf).map_or_else(|| incomplete(buf, limits), Err),
        };
        let len = match len {
            httparse::Status::Complete(len) => len,
            httparse::Status::Partial => return incomplete(buf, limits),
        };
        if len > limits.max_head {
            return Err(ParseError::HeadTooLarge);
        }
        let target = req.path.unwrap_or_default();
        if target.len() > limits.max_uri {
            return Err(ParseError::UriTooLong);
        }
        let version = match req.version {
            Some(0) => Version::HTTP_10,
            _ => Version::HTTP_11,
        };
        let method = Method::from_bytes(req.method.unwrap_or_default().as_bytes())
            .map_err(|_| ParseError::Malformed("invalid method"))?;
        let at = |part: &[u8]| span(buf, part);
        // Taken only for a whole head: a partial one (the look for a next request after
        // every keep-alive answer) would drop the thread's spare table.
        let mut ranges = Fields::table();
        ranges.extend(req.headers.iter().map(|h| Field {
            name: at(h.name.as_bytes()),
            value: at(h.value),
        }));
        (len, method, version, at(target.as_bytes()), ranges)
    };
    let head = buf.split_to(len).freeze();
    let uri = parse_target(&method, head.slice(target.0 as usize..target.1 as usize))?;
    interpret(method, uri, version, Fields::new(head, ranges)).map(Some)
}

/// The refusal for a head `httparse` rejects, or `None` while the bytes so far could
/// still become a request line with another HTTP version.
///
/// `httparse` calls any bad version token a version error. Only a well-formed
/// `HTTP/x.y` of another version is 505 (RFC 9110 §15.6.6); anything else makes the
/// line no HTTP/1 request line at all ([`ParseError::NotHttp1`], 400). Which one must
/// not depend on how the line was split into reads, so a token that is still a prefix
/// of `HTTP/x.y` waits for its end.
fn refusal(e: httparse::Error, buf: &[u8]) -> Option<ParseError> {
    if e != httparse::Error::Version {
        return Some(e.into());
    }
    let start = buf
        .iter()
        .position(|&b| b != b'\r' && b != b'\n')
        .unwrap_or(buf.len());
    let mut parts = buf[start..].splitn(3, |&b| b == b' ');
    let version = parts.nth(2).unwrap_or_default();
    let end = version
        .iter()
        .position(|&b| matches!(b, b' ' | b'\r' | b'\n'));
    let token = &version[..end.unwrap_or(version.len())];
    let fits = |at: usize, b: u8| match at {
        0..5 => b == b"HTTP/"[at],
        5 | 7 => b.is_ascii_digit(),
        6 => b == b'.',
        _ => false,
    };
    let prefix = token.iter().enumerate().all(|(at, &b)| fits(at, b));
    match (prefix, end.is_some(), token.len()) {
        (true, true, 8) => Some(ParseError::Version),
        (true, false, _) => None,
        _ => Some(ParseError::NotHttp1),
    }
}

/// The byte range of `part`, a slice of `buf`, within it. (The head is at most
/// `max_head` bytes, so `u32` holds it.)
fn span(buf: &[u8], part: &[u8]) -> (u32, u32) {
    let from = part.as_ptr() as usize - buf.as_ptr() as usize;
    let range = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
    (range(from), range(from + part.len()))
}

/// Decides whether a partial head may still grow, or is already too large.
fn incomplete(buf: &[u8], limits: &Limits) -> Result<Option<Head>, ParseError> {
    let line_done = buf.contains(&b'\n');
    if !line_done && buf.len() > limits.max_uri {
        Err(ParseError::UriTooLong)
    } else if buf.len() >= limits.max_head {
        Err(ParseError::HeadTooLarge)
    } else {
        Ok(None)
    }
}

/// Parses the request target in its four forms (RFC 9112 §3.2).
fn parse_target(method: &Method, target: Bytes) -> Result<Uri, ParseError> {
    let asterisk = &target[..] == b"*";
    let uri = Uri::from_maybe_shared(target)
        .map_err(|_| ParseError::Malformed("invalid request target"))?;
    let authority_form = uri.scheme().is_none() && uri.authority().is_some();
    match (asterisk, authority_form) {
        (true, _) if method != Method::OPTIONS => {
            Err(ParseError::Malformed("asterisk-form is only for OPTIONS"))
        }
        (_, true) if method != Method::CONNECT => {
            Err(ParseError::Malformed("authority-form is only for CONNECT"))
        }
        _ => Ok(uri),
    }
}

/// Which framing and persistence fields a request carries, noted in one pass over the
/// names so that requests without them cost no lookups.
#[derive(Debug, Default)]
struct Seen<'a> {
    hosts: usize,
    /// The (last) Host value.
    host: &'a [u8],
    transfer_encoding: bool,
    content_length: bool,
    connection: bool,
    expect: bool,
    accept: bool,
    accept_encoding: bool,
    range: bool,
}

/// The shortest name too long for a `HeaderName`.
const NAME_TOO_LONG: usize = 1 << 16;

impl<'a> Seen<'a> {
    fn of(fields: &'a Fields) -> Result<Self, ParseError> {
        let mut seen = Self::default();
        for (name, value) in fields.iter() {
            let is = |known: &HeaderName| name.eq_ignore_ascii_case(known.as_str().as_bytes());
            // The length first: most names are none of these, and differ in it.
            match name.len() {
                5 if is(&header::RANGE) => seen.range = true,
                4 if is(&header::HOST) => {
                    seen.hosts += 1;
                    seen.host = value;
                }
                6 if is(&header::EXPECT) => seen.expect = true,
                6 if is(&header::ACCEPT) => seen.accept = true,
                10 if is(&header::CONNECTION) => seen.connection = true,
                14 if is(&header::CONTENT_LENGTH) => seen.content_length = true,
                15 if is(&header::ACCEPT_ENCODING) => seen.accept_encoding = true,
                17 if is(&header::TRANSFER_ENCODING) => seen.transfer_encoding = true,
                NAME_TOO_LONG.. => return Err(ParseError::Malformed("invalid header name")),
                _ => {}
            }
        }
        Ok(seen)
    }
}

/// Applies the rules that turn header fields into framing and connection behaviour.
fn interpret(
    method: Method,
    uri: Uri,
    version: Version,
    fields: Fields,
) -> Result<Head, ParseError> {
    let seen = Seen::of(&fields)?;
    // RFC 9112 §3.2: a 1.1 request carries exactly one Host, and a valid one.
    if version == Version::HTTP_11 && seen.hosts != 1 {
        return Err(ParseError::Malformed(
            "HTTP/1.1 request without exactly one Host",
        ));
    }
    if seen.hosts > 1 || !is_host(seen.host) {
        return Err(ParseError::Malformed("invalid Host"));
    }
    // RFC 9110 §4.2.4: userinfo in a received URI is to be treated as an error.
    if uri.authority().is_some_and(|a| a.as_str().contains('@')) {
        return Err(ParseError::Malformed("userinfo in the request target"));
    }
    // The target's authority becomes the Host (below), so it is held to the same rule:
    // `Uri` takes any port (`h:8x`). Found by fuzzing the head parser.
    if uri
        .authority()
        .is_some_and(|a| !is_host(a.as_str().as_bytes()))
    {
        return Err(ParseError::Malformed(
            "invalid authority in the request target",
        ));
    }
    let framing = framing(version, &fields, &seen)?;
    let keep_alive = match seen.connection {
        true => keep_alive(version, &fields),
        false => version == Version::HTTP_11,
    };
    let expect_continue = seen.expect && expect_continue(&fields)?;
    let accept = match seen.accept {
        true => fields.first(&header::ACCEPT),
        false => None,
    };
    let accept_encoding = match seen.accept_encoding && !seen.range {
        true => fields.first(&header::ACCEPT_ENCODING),
        false => None,
    };
    // RFC 9112 §3.2.2: an absolute-form target's authority is the host; a received
    // Host is ignored. (Rare — proxies' form — so the header table is built for it.)
    let authority = match (uri.scheme(), uri.authority()) {
        (Some(_), Some(authority)) => HeaderValue::from_str(authority.as_str()).ok(),
        _ => None,
    };
    let mut req = Request::parsed(method, uri, version, fields);
    if let Some(authority) = authority {
        req.headers_mut().insert(header::HOST, authority);
    }
    Ok(Head {
        req,
        framing,
        keep_alive,
        expect_continue: expect_continue && version == Version::HTTP_11,
        accept,
        accept_encoding,
    })
}

/// Determines the body length (RFC 9112 §6.1–§6.3), refusing every ambiguity.
fn framing(version: Version, fields: &Fields, seen: &Seen) -> Result<RequestFraming, ParseError> {
    let (has_te, has_cl) = (seen.transfer_encoding, seen.content_length);
    if has_te {
        if version == Version::HTTP_10 {
            // RFC 9112 §6.1: Transfer-Encoding in 1.0 means the framing is faulty.
            return Err(ParseError::Malformed("Transfer-Encoding in HTTP/1.0"));
        }
        if has_cl {
            return Err(ParseError::Malformed(
                "both Content-Length and Transfer-Encoding",
            ));
        }
        return transfer_coding(fields);
    }
    if has_cl {
        return content_length(fields).map(|n| match n {
            0 => RequestFraming::Empty,
            n => RequestFraming::Length(n),
        });
    }
    Ok(RequestFraming::Empty)
}

/// Accepts `chunked` as the one and final coding; any other coding is 501.
fn transfer_coding(fields: &Fields) -> Result<RequestFraming, ParseError> {
    let mut chunked = 0;
    let mut last_is_chunked = false;
    for coding in list_items(fields, &header::TRANSFER_ENCODING) {
        last_is_chunked = coding.eq_ignore_ascii_case(b"chunked");
        if last_is_chunked {
            chunked += 1;
        } else if coding.is_empty() {
            return Err(ParseError::Malformed("empty transfer coding"));
        } else {
            return Err(ParseError::UnsupportedTransferCoding);
        }
    }
    match (chunked, last_is_chunked) {
        (1, true) => Ok(RequestFraming::Chunked),
        _ => Err(ParseError::Malformed(
            "chunked must be applied exactly once, last",
        )),
    }
}

/// Reads Content-Length: exactly one value. RFC 9110 §8.6 lets a recipient accept a
/// list of equal values, but nginx and Node.js refuse one, and a front end that reads a
/// repeated length differently from us is how requests get smuggled: refused (400).
fn content_length(fields: &Fields) -> Result<u64, ParseError> {
    let mut items = list_items(fields, &header::CONTENT_LENGTH);
    let digits = items.next().unwrap_or_default();
    if items.next().is_some() {
        return Err(ParseError::Malformed("more than one Content-Length value"));
    }
    parse_decimal(digits).ok_or(ParseError::Malformed("invalid Content-Length"))
}

/// Whether `host` is `uri-host [ ":" port ]` (RFC 9110 §7.2, RFC 3986 §3.2.2): an IP
/// literal in brackets, or a reg-name / IPv4 address (unreserved, sub-delims and
/// percent-encoded bytes), then digits after a colon. Empty is valid (a target without
/// an authority); spaces, slashes and `@` are not, so `x/../../etc` never reaches an
/// app as a host. A table lookup a byte: it runs on every request.
fn is_host(host: &[u8]) -> bool {
    let port = match host.strip_prefix(b"[") {
        Some(literal) => match literal.iter().position(|&b| b == b']') {
            Some(end) => {
                let ip = &literal[..end];
                let ip_byte = |&b: &u8| b.is_ascii_hexdigit() || b == b':' || b == b'.';
                if ip.is_empty() || !ip.iter().all(ip_byte) {
                    return false;
                }
                &literal[end + 1..]
            }
            None => return false,
        },
        None => {
            // The name up to the first colon, then the port: two tight loops, not one
            // that asks at every byte which part it is in.
            let end = host.iter().position(|&b| b == b':').unwrap_or(host.len());
            if !host[..end].iter().all(|&b| REG_NAME[usize::from(b)]) {
                return false;
            }
            &host[end..]
        }
    };
    match port {
        [] => true,
        [b':', digits @ ..] => digits.iter().all(u8::is_ascii_digit),
        _ => false,
    }
}

/// The bytes of a reg-name: unreserved, sub-delims, and `%` of a percent-encoding
/// (RFC 3986 §3.2.2).
static REG_NAME: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        table[b] = c.is_ascii_alphanumeric();
        b += 1;
    }
    let others = b"-._~!$&'()*+,;=%";
    let mut i = 0;
    while i < others.len() {
        table[others[i] as usize] = true;
        i += 1;
    }
    table
};

/// Parses `1*DIGIT` into a u64, refusing signs, spaces and overflow.
fn parse_decimal(digits: &[u8]) -> Option<u64> {
    if digits.is_empty() || digits.len() > 19 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    digits.iter().try_fold(0u64, |n, d| {
        n.checked_mul(10)?.checked_add(u64::from(d - b'0'))
    })
}

/// Iterates the comma-separated items of every field named `name`, trimmed of OWS.
fn list_items<'a>(fields: &'a Fields, name: &'a HeaderName) -> impl Iterator<Item = &'a [u8]> + 'a {
    fields
        .values(name)
        .flat_map(|value| value.split(|&b| b == b',').map(<[u8]>::trim_ascii))
}

/// Applies the persistence rules of RFC 9112 §9.3.
fn keep_alive(version: Version, fields: &Fields) -> bool {
    let mut close = false;
    let mut keep = false;
    for token in list_items(fields, &header::CONNECTION) {
        close |= token.eq_ignore_ascii_case(b"close");
        keep |= token.eq_ignore_ascii_case(b"keep-alive");
    }
    !close && (version == Version::HTTP_11 || keep)
}

/// Reads `Expect`: `100-continue` is the only expectation defined (RFC 9110 §10.1.1).
fn expect_continue(fields: &Fields) -> Result<bool, ParseError> {
    match fields.values(&header::EXPECT).next() {
        None => Ok(false),
        Some(v) if v.eq_ignore_ascii_case(b"100-continue") => Ok(true),
        Some(_) => Err(ParseError::Expectation),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The head parsed from `raw`, and how many bytes it took.
    fn parse_str(raw: &str) -> Result<Option<(Head, usize)>, ParseError> {
        let mut buf = BytesMut::from(raw);
        let head = parse(&mut buf, &Limits::default())?;
        Ok(head.map(|head| (head, raw.len() - buf.len())))
    }

    fn refused(raw: &str) -> u16 {
        parse_str(raw).expect_err(raw).status().as_u16()
    }

    #[test]
    fn parses_a_simple_get() {
        let (head, len) = parse_str("GET /a?b=c HTTP/1.1\r\nHost: x\r\n\r\nrest")
            .unwrap()
            .unwrap();
        assert_eq!(len, 32);
        assert_eq!(*head.req.method(), Method::GET);
        assert_eq!(head.req.uri().path(), "/a");
        assert_eq!(head.framing, RequestFraming::Empty);
        assert!(head.keep_alive);
    }

    #[test]
    fn the_header_table_is_built_on_first_look_and_keeps_changes() {
        let (mut head, _) = parse_str("GET / HTTP/1.1\r\nHost: x\r\nX-A: 1\r\nx-a: 2\r\n\r\n")
            .unwrap()
            .unwrap();
        let all: Vec<_> = head.req.headers().get_all("x-a").iter().collect();
        assert_eq!(all, ["1", "2"]);
        head.req
            .headers_mut()
            .insert("x-b", HeaderValue::from_static("3"));
        assert_eq!(head.req.headers()["x-b"], "3");
        let (parts, _) = head.req.into_parts();
        assert_eq!(parts.headers.len(), 4);
        assert_eq!(parts.headers[header::HOST], "x");
    }

    #[test]
    fn waits_for_the_rest_of_a_head() {
        assert!(
            parse_str("GET / HTTP/1.1\r\nHost: x\r\n")
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn keep_alive_follows_version_and_connection() {
        let cases = [
            ("GET / HTTP/1.1\r\nHost: x\r\n\r\n", true),
            (
                "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
                false,
            ),
            ("GET / HTTP/1.0\r\n\r\n", false),
            ("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", true),
        ];
        for (raw, keep) in cases {
            assert_eq!(parse_str(raw).unwrap().unwrap().0.keep_alive, keep, "{raw}");
        }
    }

    #[test]
    fn framing_is_read_from_the_headers() {
        let cases = [
            (
                "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\n",
                RequestFraming::Length(5),
            ),
            (
                "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n",
                RequestFraming::Chunked,
            ),
            (
                "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n",
                RequestFraming::Empty,
            ),
            (
                "POST / HTTP/1.1\r\nhOST: x\r\ncontent-LENGTH: 7\r\n\r\n",
                RequestFraming::Length(7),
            ),
            (
                "POST / HTTP/1.1\r\nHOST: x\r\nTRANSFER-encoding: chunked\r\n\r\n",
                RequestFraming::Chunked,
            ),
        ];
        for (raw, framing) in cases {
            assert_eq!(parse_str(raw).unwrap().unwrap().0.framing, framing, "{raw}");
        }
    }

    #[test]
    fn every_refusal_has_its_status() {
        let long_uri = format!("GET /{} HTTP/1.1\r\nHost: x\r\n\r\n", "a".repeat(9000));
        let many = format!(
            "GET / HTTP/1.1\r\nHost: x\r\n{}\r\n",
            "A: b\r\n".repeat(101)
        );
        let table: &[(&str, u16)] = &[
            ("GET / HTTP/1.1\r\n\r\n", 400),
            ("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400),
            ("GET / HTTP/2.0\r\nHost: x\r\n\r\n", 505),
            ("GET / HTTP/1.1\r\nHost : x\r\n\r\n", 400),
            ("GET / HTTP/1.1\r\nHost: x\r\n folded\r\n\r\n", 400),
            ("GET / HTTP/1.1\r\nHost: x\0y\r\n\r\n", 400),
            ("GET / HTTP/1.1\r\nHost: x\ry\r\n\r\n", 400),
            (
                "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
                400,
            ),
            (
                "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
                400,
            ),
            (
                "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: +1\r\n\r\n",
                400,
            ),
            (
                "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1x\r\n\r\n",
                400,
            ),
            (
                "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999\r\n\r\n",
                400,
            ),
            (
                "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n",
                501,
            ),
            (
                "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, gzip\r\n\r\n",
                501,
            ),
            (
                "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, chunked\r\n\r\n",
                400,
            ),
            ("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", 400),
            ("GET / HTTP/1.1\r\nHost: x\r\nExpect: teapot\r\n\r\n", 417),
            ("GET * HTTP/1.1\r\nHost: x\r\n\r\n", 400),
            ("GET example.com:80 HTTP/1.1\r\nHost: x\r\n\r\n", 400),
            (&long_uri, 414),
            (&many, 431),
            // Issue 15: leniencies a strict front end does not share.
            (
                "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5, 5\r\n\r\n",
                400,
            ),
            (
                "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n",
                400,
            ),
            ("GET / HTTP/1.1\r\nHost: a b\r\n\r\n", 400),
            ("GET / HTTP/1.1\r\nHost: a, b\r\n\r\n", 400),
            ("GET / HTTP/1.1\r\nHost: x/../../etc\r\n\r\n", 400),
            ("GET / HTTP/1.1\r\nHost: user@x\r\n\r\n", 400),
            ("GET / HTTP/1.1\r\nHost: [::1\r\n\r\n", 400),
            ("GET / HTTP/1.1\r\nHost: x:8o\r\n\r\n", 400),
            ("GET / HTTP/1.0\r\nHost: a\r\nHost: b\r\n\r\n", 400),
            ("GET http://u:p@h/ HTTP/1.1\r\nHost: h\r\n\r\n", 400),
            // Found by `scripts/fuzz` (head): the target's authority became the Host.
            ("GET http://h:8x/ HTTP/1.1\r\nHost: h\r\n\r\n", 400),
            ("CONNECT h:x HTTP/1.1\r\nHost: h\r\n\r\n", 400),
            ("GET / FOO\r\nHost: x\r\n\r\n", 400),
            ("GET / HTTP/1.1x\r\nHost: x\r\n\r\n", 400),
            ("GET / HTTP/3.0\r\nHost: x\r\n\r\n", 505),
        ];
        for (raw, status) in table {
            assert_eq!(refused(raw), *status, "{raw:?}");
        }
    }

    #[test]
    fn an_oversized_partial_head_is_refused() {
        let raw = format!("GET / HTTP/1.1\r\nHost: x\r\nA: {}", "b".repeat(17 * 1024));
        assert_eq!(refused(&raw), 431);
        let raw = format!("GET /{}", "a".repeat(9000));
        assert_eq!(refused(&raw), 414);
    }

    #[test]
    fn hosts_people_send_are_taken() {
        for host in [
            "x",
            "",
            "example.com:8080",
            "127.0.0.1:80",
            "[::1]:3000",
            "a-b.c_d~e",
            "x%41:",
        ] {
            let raw = format!("GET / HTTP/1.1\r\nHost: {host}\r\n\r\n");
            assert!(parse_str(&raw).is_ok(), "{host:?}");
        }
    }

    #[test]
    fn absolute_form_and_asterisk_form_are_accepted() {
        let (head, _) = parse_str("GET http://h:81/p?q HTTP/1.1\r\nHost: other\r\n\r\n")
            .unwrap()
            .unwrap();
        assert_eq!(head.req.uri().path(), "/p");
        // RFC 9112 §3.2.2: the target's authority, not the Host field, names the host.
        assert_eq!(head.req.headers()["host"], "h:81");
        let (head, _) = parse_str("OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n")
            .unwrap()
            .unwrap();
        assert_eq!(*head.req.uri(), "*");
    }
}
