//! A request's header fields as the parser left them: byte ranges into the request's
//! head, turned into a [`HeaderMap`] only when something asks for one.
//!
//! Building the map — a checked, lower-cased name and a hashed insert per field, and a
//! table to drop — is work spent for handlers that never look at a header, and it was
//! the largest part of a pipelined plaintext request (docs/performance.md, instructions
//! per request). The parser reads what the connection needs (framing, persistence,
//! `Expect`, `Accept`) from the ranges directly.

use std::cell::RefCell;

use bytes::Bytes;
use http::header::{HeaderMap, HeaderName, HeaderValue};

/// Where one field's name and value lie in the head: byte ranges from its start. (A
/// head is at most `max_head` bytes, so `u32` holds them.)
#[derive(Clone, Copy, Debug)]
pub(crate) struct Field {
    pub(crate) name: (u32, u32),
    pub(crate) value: (u32, u32),
}

/// The header fields of one request head, in the order received.
#[derive(Debug)]
pub(crate) struct Fields {
    head: Bytes,
    ranges: Vec<Field>,
}

thread_local! {
    /// A range table a finished request gave back, for the next head parsed on this
    /// thread: a request answered before the next is parsed (the common case, and every
    /// pipelined one answered at once) allocates none.
    static SPARE: RefCell<Vec<Field>> = const { RefCell::new(Vec::new()) };
}

impl Fields {
    /// An empty range table: the thread's spare one if it has one.
    pub(crate) fn table() -> Vec<Field> {
        SPARE
            .try_with(|spare| std::mem::take(&mut *spare.borrow_mut()))
            .unwrap_or_default()
    }

    /// The fields at `ranges` of `head`, whose names and values the parser has checked
    /// (`httparse` accepts exactly the names and values `http` does: see the tests).
    pub(crate) fn new(head: Bytes, ranges: Vec<Field>) -> Self {
        Self { head, ranges }
    }

    fn bytes(&self, (from, to): (u32, u32)) -> &[u8] {
        &self.head[from as usize..to as usize]
    }

    /// Each field's name (as sent) and value.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        self.ranges
            .iter()
            .map(|f| (self.bytes(f.name), self.bytes(f.value)))
    }

    /// The fields named `name` (lower case, as `HeaderName`s are), whatever the case
    /// they were sent in.
    fn named<'a>(&'a self, name: &'a HeaderName) -> impl Iterator<Item = &'a Field> {
        let name = name.as_str().as_bytes();
        self.ranges
            .iter()
            .filter(move |f| self.bytes(f.name).eq_ignore_ascii_case(name))
    }

    /// The values of the fields named `name`.
    pub(crate) fn values<'a>(&'a self, name: &'a HeaderName) -> impl Iterator<Item = &'a [u8]> {
        self.named(name).map(|f| self.bytes(f.value))
    }

    /// The first value of the field named `name`, sharing the head's bytes.
    pub(crate) fn first(&self, name: &HeaderName) -> Option<HeaderValue> {
        self.value(self.named(name).next()?)
    }

    /// The value of `field`, sharing the head's bytes. Never `None`: `httparse` lets
    /// through only bytes `HeaderValue` takes (`httparse_and_http_agree_on_values`).
    fn value(&self, field: &Field) -> Option<HeaderValue> {
        let (from, to) = field.value;
        HeaderValue::from_maybe_shared(self.head.slice(from as usize..to as usize)).ok()
    }

    /// The fields as a header table, values sharing the head's bytes.
    pub(crate) fn to_map(&self) -> HeaderMap {
        let mut map = super::spare::headers(self.ranges.len());
        for field in &self.ranges {
            // Never skips: `httparse` lets through only names `HeaderName` takes
            // (`httparse_and_http_agree_on_names`).
            let name = HeaderName::from_bytes(self.bytes(field.name)).ok();
            if let Some((name, value)) = name.zip(self.value(field)) {
                map.append(name, value);
            }
        }
        map
    }
}

impl Drop for Fields {
    fn drop(&mut self) {
        let mut ranges = std::mem::take(&mut self.ranges);
        ranges.clear();
        // During the thread's teardown the table is simply dropped.
        let _ = SPARE.try_with(|spare| {
            let mut spare = spare.borrow_mut();
            if spare.capacity() < ranges.capacity() {
                *spare = ranges;
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The name and value `httparse` reads from a request whose one field is `line`.
    fn httparse_reads(line: &[u8]) -> Option<(Vec<u8>, Vec<u8>)> {
        let mut raw = b"GET / HTTP/1.1\r\n".to_vec();
        raw.extend_from_slice(line);
        raw.extend_from_slice(b"\r\n\r\n");
        let mut headers = [httparse::EMPTY_HEADER; 4];
        let mut req = httparse::Request::new(&mut headers);
        match req.parse(&raw) {
            Ok(httparse::Status::Complete(_)) => {
                let field = &req.headers[0];
                Some((field.name.as_bytes().to_vec(), field.value.to_vec()))
            }
            _ => None,
        }
    }

    #[test]
    fn httparse_and_http_agree_on_names() {
        let mut taken = 0;
        for b in 0..=255u8 {
            if let Some((name, _)) = httparse_reads(&[b'x', b, b'y', b':', b' ', b'v']) {
                assert!(HeaderName::from_bytes(&name).is_ok(), "byte {b:#x}");
                taken += 1;
            }
        }
        assert!(taken > 70, "{taken} bytes taken in names");
    }

    #[test]
    fn httparse_and_http_agree_on_values() {
        let mut taken = 0;
        for b in 0..=255u8 {
            if let Some((_, value)) = httparse_reads(&[b'x', b':', b' ', b'v', b, b'v']) {
                assert!(HeaderValue::from_bytes(&value).is_ok(), "byte {b:#x}");
                taken += 1;
            }
        }
        assert!(taken > 200, "{taken} bytes taken in values");
    }

    #[test]
    fn fields_are_found_by_name_whatever_the_case_and_mapped_in_order() {
        let head = Bytes::from_static(b"Host: a\r\nX-Y: 1\r\nx-y: 2\r\n");
        let field = |n: (u32, u32), v: (u32, u32)| Field { name: n, value: v };
        let fields = Fields::new(
            head,
            vec![
                field((0, 4), (6, 7)),
                field((9, 12), (14, 15)),
                field((17, 20), (22, 23)),
            ],
        );
        let name = HeaderName::from_static("x-y");
        assert_eq!(fields.values(&name).collect::<Vec<_>>(), [b"1", b"2"]);
        assert_eq!(fields.first(&http::header::HOST).unwrap(), "a");
        let map = fields.to_map();
        let all: Vec<_> = map.get_all("x-y").iter().collect();
        assert_eq!(all, ["1", "2"]);
        assert_eq!(map.len(), 3);
    }
}
