//! Response encoding: status line, framing headers and chunk framing (RFC 9112 §4, §7).

use bytes::{BufMut, BytesMut};
use http::header::{self, HeaderMap};
use http::{StatusCode, Version};

use crate::http::date;
use crate::http::request_id::X_REQUEST_ID;

/// The interim response sent before reading a body the client holds back.
pub(crate) const CONTINUE: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\n";

/// How the body of a response is delimited on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ResponseFraming {
    /// No body may follow (1xx, 204, 304).
    None,
    /// `Content-Length: n`.
    Length(u64),
    /// `Transfer-Encoding: chunked`.
    Chunked,
    /// The body ends when the connection closes (HTTP/1.0 clients, unknown length).
    UntilClose,
}

impl ResponseFraming {
    /// Chooses the framing for a response with `status` and a body of `len` bytes.
    pub(crate) fn choose(status: StatusCode, len: Option<u64>, version: Version) -> Self {
        let bodiless = status.is_informational()
            || status == StatusCode::NO_CONTENT
            || status == StatusCode::NOT_MODIFIED;
        match (bodiless, len) {
            (true, _) => Self::None,
            (false, Some(n)) => Self::Length(n),
            (false, None) if version == Version::HTTP_11 => Self::Chunked,
            (false, None) => Self::UntilClose,
        }
    }
}

/// What the server adds to an answer's fields, after the app's.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Added<'a> {
    /// Whole lines every answer carries (HSTS over TLS).
    pub(crate) fields: &'a [u8],
    /// The request's id, as `x-request-id` (unless the app's answer has one).
    pub(crate) id: Option<&'a [u8]>,
}

/// Writes the status line and header section of a response into `dst`; returns
/// whether the connection stays open after it.
///
/// The server owns framing and persistence: the app's `Content-Length`,
/// `Transfer-Encoding` and `Connection` fields are replaced by what `framing` and
/// `keep_alive` say (an app's `Connection: close` is honoured). One pass over the app's
/// fields, no lookups: `Server` and `Date` are added after them unless the app set them,
/// then what the server `added`: its fixed fields and the request's id.
///
/// Every field name goes out in lower case, the server's own as the app's: a
/// `HeaderMap` holds names in lower case, so that is the one style both can share
/// without rewriting each name (field names are case-insensitive, RFC 9110 §5.1).
pub(crate) fn head(
    dst: &mut BytesMut,
    status: StatusCode,
    headers: &HeaderMap,
    framing: ResponseFraming,
    keep_alive: bool,
    request_version: Version,
    added: Added<'_>,
) -> bool {
    dst.reserve(128 + headers.len() * 48);
    if status == StatusCode::OK {
        // Most answers: one copy instead of five.
        dst.put_slice(b"HTTP/1.1 200 OK\r\n");
    } else {
        dst.put_slice(b"HTTP/1.1 ");
        dst.put_slice(status.as_str().as_bytes());
        dst.put_u8(b' ');
        dst.put_slice(status.canonical_reason().unwrap_or("Unknown").as_bytes());
        dst.put_slice(b"\r\n");
    }
    let (mut has_server, mut has_date, mut has_id, mut close) = (false, false, false, false);
    for (name, value) in headers {
        if name == header::CONNECTION {
            close |= has_token(value.as_bytes(), b"close");
            continue;
        }
        if name == header::CONTENT_LENGTH || name == header::TRANSFER_ENCODING {
            continue;
        }
        has_server |= name == header::SERVER;
        has_date |= name == header::DATE;
        has_id |= added.id.is_some() && name == X_REQUEST_ID;
        field(dst, name.as_str().as_bytes(), value.as_bytes());
    }
    match (has_server, has_date) {
        // Most answers: the two as one literal and the date, a copy fewer.
        (false, false) => {
            date::with_date(|d| known_field(dst, b"server: proscenium\r\ndate: ", d));
        }
        (false, true) => dst.put_slice(b"server: proscenium\r\n"),
        (true, false) => date::with_date(|d| known_field(dst, b"date: ", d)),
        (true, true) => {}
    }
    dst.put_slice(added.fields);
    if let Some(id) = added.id.filter(|_| !has_id) {
        known_field(dst, b"x-request-id: ", id);
    }
    if status == StatusCode::SWITCHING_PROTOCOLS {
        // The connection is the next protocol's: no framing, no persistence.
        dst.put_slice(b"connection: upgrade\r\n\r\n");
        return true;
    }
    match framing {
        ResponseFraming::Length(n) => known_field(
            dst,
            b"content-length: ",
            itoa::Buffer::new().format(n).as_bytes(),
        ),
        ResponseFraming::Chunked => dst.put_slice(b"transfer-encoding: chunked\r\n"),
        ResponseFraming::None | ResponseFraming::UntilClose => {}
    }
    let keep_alive = keep_alive && !close && framing != ResponseFraming::UntilClose;
    if !keep_alive {
        dst.put_slice(b"connection: close\r\n");
    } else if request_version == Version::HTTP_10 {
        dst.put_slice(b"connection: keep-alive\r\n");
    }
    dst.put_slice(b"\r\n");
    keep_alive
}

fn field(dst: &mut BytesMut, name: &[u8], value: &[u8]) {
    dst.put_slice(name);
    known_field(dst, b": ", value);
}

/// Writes a field whose `prefix` (its name and the colon, written as one literal: a
/// copy fewer per field the server adds) is known.
fn known_field(dst: &mut BytesMut, prefix: &[u8], value: &[u8]) {
    dst.put_slice(prefix);
    dst.put_slice(value);
    dst.put_slice(b"\r\n");
}

/// Returns whether a comma-separated field value holds `token` (case-insensitive).
fn has_token(value: &[u8], token: &[u8]) -> bool {
    value
        .split(|&b| b == b',')
        .any(|t| t.trim_ascii().eq_ignore_ascii_case(token))
}

/// Writes one chunk of a chunked body.
pub(crate) fn chunk(dst: &mut BytesMut, data: &[u8]) {
    if data.is_empty() {
        return; // an empty chunk would end the body early
    }
    dst.reserve(data.len() + 12);
    dst.put_slice(format!("{:x}\r\n", data.len()).as_bytes());
    dst.put_slice(data);
    dst.put_slice(b"\r\n");
}

/// Writes the last chunk and an empty trailer section.
pub(crate) fn last_chunk(dst: &mut BytesMut) {
    dst.put_slice(b"0\r\n\r\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encode(
        status: u16,
        headers: &[(&str, &str)],
        framing: ResponseFraming,
        keep_alive: bool,
        id: Option<&[u8]>,
    ) -> String {
        let mut map = HeaderMap::new();
        for (k, v) in headers {
            map.append(
                header::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        let mut dst = BytesMut::new();
        head(
            &mut dst,
            StatusCode::from_u16(status).unwrap(),
            &map,
            framing,
            keep_alive,
            Version::HTTP_11,
            Added { fields: b"", id },
        );
        String::from_utf8(dst.to_vec()).unwrap()
    }

    #[test]
    fn writes_status_line_framing_and_fields() {
        let text = encode(
            200,
            &[("content-type", "text/plain")],
            ResponseFraming::Length(5),
            true,
            None,
        );
        assert!(text.starts_with(
            "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\nserver: proscenium\r\ndate: "
        ));
        assert!(text.ends_with(" GMT\r\ncontent-length: 5\r\n\r\n"));
    }

    #[test]
    fn adds_the_request_id_unless_the_app_answered_with_one() {
        let framing = ResponseFraming::Length(0);
        let text = encode(200, &[], framing, true, Some(b"0123abcd"));
        assert_eq!(text.matches("x-request-id: 0123abcd\r\n").count(), 1);
        let text = encode(
            200,
            &[("x-request-id", "app")],
            framing,
            true,
            Some(b"0123abcd"),
        );
        assert_eq!(text.matches("x-request-id").count(), 1);
        assert!(text.contains("x-request-id: app\r\n"));
    }

    #[test]
    fn replaces_the_apps_framing_fields() {
        let text = encode(
            200,
            &[("content-length", "99"), ("connection", "close")],
            ResponseFraming::Chunked,
            false,
            None,
        );
        assert!(!text.contains("99"));
        assert_eq!(text.matches("connection: close").count(), 1);
        assert!(text.contains("transfer-encoding: chunked\r\n"));
    }

    #[test]
    fn honours_the_apps_close_and_closes_after_a_close_delimited_body() {
        let mut map = HeaderMap::new();
        map.insert(header::CONNECTION, "Close".parse().unwrap());
        let mut dst = BytesMut::new();
        assert!(!head(
            &mut dst,
            StatusCode::OK,
            &map,
            ResponseFraming::Length(0),
            true,
            Version::HTTP_11,
            Added::default()
        ));
        let empty = HeaderMap::new();
        assert!(!head(
            &mut dst,
            StatusCode::OK,
            &empty,
            ResponseFraming::UntilClose,
            true,
            Version::HTTP_10,
            Added::default()
        ));
        assert!(head(
            &mut dst,
            StatusCode::OK,
            &empty,
            ResponseFraming::Length(0),
            true,
            Version::HTTP_11,
            Added::default()
        ));
    }

    #[test]
    fn chooses_framing_by_status_length_and_version() {
        assert_eq!(
            ResponseFraming::choose(StatusCode::NO_CONTENT, Some(0), Version::HTTP_11),
            ResponseFraming::None
        );
        assert_eq!(
            ResponseFraming::choose(StatusCode::OK, None, Version::HTTP_11),
            ResponseFraming::Chunked
        );
        assert_eq!(
            ResponseFraming::choose(StatusCode::OK, None, Version::HTTP_10),
            ResponseFraming::UntilClose
        );
    }

    #[test]
    fn frames_chunks() {
        let mut dst = BytesMut::new();
        chunk(&mut dst, b"hello world, more than 15");
        chunk(&mut dst, b"");
        last_chunk(&mut dst);
        assert_eq!(&dst[..], b"19\r\nhello world, more than 15\r\n0\r\n\r\n");
    }
}
