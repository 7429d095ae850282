//! Error pages: a short HTML page for clients that accept HTML, plain text otherwise.

use http::StatusCode;
use http::header::HeaderValue;

/// A rendered error page.
pub(crate) struct Page {
    pub(crate) content_type: HeaderValue,
    pub(crate) body: String,
}

/// Returns whether the client prefers HTML (a browser's `Accept` names `text/html`).
pub(crate) fn accepts_html(accept: Option<&HeaderValue>) -> bool {
    accept.is_some_and(|v| {
        v.as_bytes()
            .windows(9)
            .any(|w| w.eq_ignore_ascii_case(b"text/html"))
    })
}

/// Renders the page for `status`, with `detail` (already safe to show) if given.
pub(crate) fn render(status: StatusCode, detail: Option<&str>, html: bool) -> Page {
    let reason = status.canonical_reason().unwrap_or("Error");
    let code = status.as_str();
    let detail = detail.unwrap_or_else(|| default_detail(status));
    if html {
        let detail = html_escape(detail);
        let body = format!(
            "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{code} {reason}</title>\
             <style>body{{font:16px system-ui,sans-serif;margin:4em auto;max-width:40em;color:#222}}\
             h1{{font-weight:500}}p{{color:#555}}</style></head>\n\
             <body><h1>{code} {reason}</h1><p>{detail}</p><hr><small>proscenium</small></body></html>\n"
        );
        Page {
            content_type: HeaderValue::from_static("text/html; charset=utf-8"),
            body,
        }
    } else {
        Page {
            content_type: HeaderValue::from_static("text/plain; charset=utf-8"),
            body: format!("{code} {reason}: {detail}\n"),
        }
    }
}

fn default_detail(status: StatusCode) -> &'static str {
    match status {
        StatusCode::NOT_FOUND => "The requested resource was not found on this server.",
        StatusCode::METHOD_NOT_ALLOWED => "The method is not allowed for this resource.",
        StatusCode::INTERNAL_SERVER_ERROR => "The server failed to answer this request.",
        StatusCode::SERVICE_UNAVAILABLE => "The server is overloaded; try again shortly.",
        s if s.is_client_error() => "The request could not be served.",
        _ => "The server could not answer this request.",
    }
}

/// Escapes text for HTML element content and attribute values.
pub(crate) fn html_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_html_for_browsers_and_text_otherwise() {
        let page = render(StatusCode::NOT_FOUND, Some("no <such> file"), true);
        assert!(page.body.contains("<h1>404 Not Found</h1>"));
        assert!(page.body.contains("no &lt;such&gt; file"));
        let page = render(StatusCode::NOT_FOUND, None, false);
        assert_eq!(
            page.body,
            "404 Not Found: The requested resource was not found on this server.\n"
        );
    }

    #[test]
    fn reads_accept() {
        assert!(!accepts_html(None));
        assert!(!accepts_html(Some(&HeaderValue::from_static("*/*"))));
        let browser = HeaderValue::from_static("text/html,application/xhtml+xml;q=0.9");
        assert!(accepts_html(Some(&browser)));
    }
}
