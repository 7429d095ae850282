//! Conditional and ranged requests for static files: a file's validators (ETag,
//! Last-Modified) against `If-None-Match`, `If-Modified-Since` and `If-Range`, and a
//! single byte range (RFC 9110 §13, §14).

use std::fs::Metadata;
use std::time::{SystemTime, UNIX_EPOCH};

use http::header::{self, HeaderMap, HeaderValue};

/// The validators of a file: its ETag and modification time.
pub(super) struct Validators {
    etag: String,
    modified: SystemTime,
}

impl Validators {
    pub(super) fn of(meta: &Metadata) -> Self {
        Self::new(meta.len(), meta.modified().unwrap_or(UNIX_EPOCH))
    }

    pub(super) fn new(len: u64, modified: SystemTime) -> Self {
        let nanos = modified
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        Self {
            etag: format!("\"{len:x}-{nanos:x}\""),
            modified,
        }
    }

    /// Returns whether the client's copy is current (RFC 9110 §13.1.2, §13.1.3):
    /// If-None-Match decides when present, else If-Modified-Since.
    pub(super) fn is_fresh(&self, headers: &HeaderMap) -> bool {
        if let Some(tags) = headers
            .get(header::IF_NONE_MATCH)
            .and_then(|v| v.to_str().ok())
        {
            return tags
                .split(',')
                .map(str::trim)
                .any(|tag| tag == "*" || weak_eq(tag, &self.etag));
        }
        headers
            .get(header::IF_MODIFIED_SINCE)
            .and_then(|v| httpdate::parse_http_date(v.to_str().ok()?).ok())
            .is_some_and(|since| seconds(self.modified) <= seconds(since))
    }

    /// Returns whether an `If-Range` precondition holds (RFC 9110 §13.1.5).
    pub(super) fn if_range_holds(&self, headers: &HeaderMap) -> bool {
        let Some(value) = headers.get(header::IF_RANGE).and_then(|v| v.to_str().ok()) else {
            return true;
        };
        if value.starts_with('"') {
            return value == self.etag; // strong comparison
        }
        httpdate::parse_http_date(value).is_ok_and(|date| seconds(date) == seconds(self.modified))
    }

    pub(super) fn insert(&self, headers: &mut HeaderMap) {
        if let Ok(etag) = HeaderValue::from_str(&self.etag) {
            headers.insert(header::ETAG, etag);
        }
        if let Ok(date) = HeaderValue::from_str(&httpdate::fmt_http_date(self.modified)) {
            headers.insert(header::LAST_MODIFIED, date);
        }
    }
}

/// Weak comparison: equal once any `W/` prefix is dropped.
fn weak_eq(a: &str, b: &str) -> bool {
    a.trim_start_matches("W/") == b.trim_start_matches("W/")
}

fn seconds(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// A byte range asked for, resolved against the file's length.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Range {
    /// No usable Range header: the whole file.
    Whole,
    /// First and last byte, inclusive.
    Part(u64, u64),
    /// Nothing of the file matches.
    Unsatisfiable,
}

/// Parses a single-range `Range` header (RFC 9110 §14.1.2). Multiple or malformed
/// ranges are ignored, which the RFC allows, and the whole file is sent.
pub(super) fn parse_range(value: &str, len: u64) -> Range {
    // Range units are case-insensitive (RFC 9110 §14.1).
    let spec = match value.trim().split_once('=') {
        Some((unit, spec)) if unit.eq_ignore_ascii_case("bytes") => spec,
        _ => return Range::Whole,
    };
    if len == 0 {
        return Range::Whole; // nothing to slice; the empty file itself is the answer
    }
    if spec.contains(',') {
        return Range::Whole;
    }
    let Some((first, last)) = spec.trim().split_once('-') else {
        return Range::Whole;
    };
    let number = |s: &str| {
        (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
            .then(|| s.parse::<u64>().ok())
            .flatten()
    };
    match (number(first), number(last), first.is_empty()) {
        (None, Some(0), true) => Range::Unsatisfiable,
        (None, Some(suffix), true) => Range::Part(len.saturating_sub(suffix), len - 1),
        (Some(first), _, _) if first >= len => Range::Unsatisfiable,
        (Some(first), None, _) if last.is_empty() => Range::Part(first, len - 1),
        (Some(first), Some(last), _) if last >= first => Range::Part(first, last.min(len - 1)),
        _ => Range::Whole,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_single_ranges() {
        let cases = [
            ("bytes=0-9", Range::Part(0, 9)),
            ("BYTES=0-9", Range::Part(0, 9)),
            ("Bytes=-10", Range::Part(90, 99)),
            ("bytes=90-", Range::Part(90, 99)),
            ("bytes=-10", Range::Part(90, 99)),
            ("bytes=-500", Range::Part(0, 99)),
            ("bytes=50-500", Range::Part(50, 99)),
            ("bytes=100-", Range::Unsatisfiable),
            ("bytes=-0", Range::Unsatisfiable),
            ("bytes=0-1,5-6", Range::Whole),
            ("bytes=9-3", Range::Whole),
            ("items=0-1", Range::Whole),
            ("bytes=x-1", Range::Whole),
        ];
        for (value, range) in cases {
            assert_eq!(parse_range(value, 100), range, "{value}");
        }
    }

    #[test]
    fn compares_validators() {
        let v = Validators {
            etag: "\"a-1\"".into(),
            modified: UNIX_EPOCH + std::time::Duration::from_secs(1000),
        };
        let mut headers = HeaderMap::new();
        headers.insert(
            header::IF_NONE_MATCH,
            HeaderValue::from_static("\"x\", W/\"a-1\""),
        );
        assert!(v.is_fresh(&headers));
        headers.insert(header::IF_NONE_MATCH, HeaderValue::from_static("\"x\""));
        headers.insert(
            header::IF_MODIFIED_SINCE,
            HeaderValue::from_str(&httpdate::fmt_http_date(
                UNIX_EPOCH + std::time::Duration::from_secs(5000),
            ))
            .unwrap(),
        );
        assert!(!v.is_fresh(&headers), "If-None-Match decides when present");
        headers.remove(header::IF_NONE_MATCH);
        assert!(v.is_fresh(&headers));
    }
}
