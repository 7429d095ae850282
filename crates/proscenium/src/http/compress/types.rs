//! Which answers are compressed by their type: `[compression] types`, patterns such as
//! `text/*` or `application/*+json`.

use crate::config::CompressionSpec;

impl CompressionSpec {
    /// Returns whether a `Content-Type` value names a type of the list.
    pub(crate) fn compresses(&self, content_type: &[u8]) -> bool {
        let Ok(value) = std::str::from_utf8(content_type) else {
            return false;
        };
        let essence = value.split(';').next().unwrap_or_default().trim();
        self.types.iter().any(|pattern| matches(pattern, essence))
    }
}

/// Whether a media type (`type/subtype`) matches a pattern of the list, ignoring case.
fn matches(pattern: &str, essence: &str) -> bool {
    let (Some((p_type, p_sub)), Some((e_type, e_sub))) =
        (pattern.split_once('/'), essence.split_once('/'))
    else {
        return false;
    };
    if !p_type.eq_ignore_ascii_case(e_type) {
        return false;
    }
    match p_sub.strip_prefix('*') {
        Some(suffix) => ends_with_ignoring_case(e_sub, suffix),
        None => p_sub.eq_ignore_ascii_case(e_sub),
    }
}

fn ends_with_ignoring_case(s: &str, suffix: &str) -> bool {
    s.len() >= suffix.len()
        && s.as_bytes()[s.len() - suffix.len()..].eq_ignore_ascii_case(suffix.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_list_takes_text_and_refuses_images_and_archives() {
        let spec = CompressionSpec::default();
        for yes in [
            "text/html; charset=utf-8",
            "TEXT/CSS",
            "application/json",
            "application/ld+json",
            "application/atom+xml",
            "image/svg+xml",
            "application/wasm",
        ] {
            assert!(spec.compresses(yes.as_bytes()), "{yes}");
        }
        for no in [
            "image/png",
            "video/mp4",
            "application/zip",
            "application/gzip",
            "application/octet-stream",
            "font/woff2",
            "text",
            "",
        ] {
            assert!(!spec.compresses(no.as_bytes()), "{no}");
        }
    }
}
