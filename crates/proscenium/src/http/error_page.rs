//! Error pages: JSON for clients that prefer it, a short HTML page for clients that
//! accept HTML, plain text otherwise.
//!
//! Every bodiless error answer passes here, rejections included, with the request's
//! `Accept` the connection keeps for this purpose anyway: choosing a format costs
//! nothing to an answer that is not an error.

use http::StatusCode;
use http::header::HeaderValue;

/// A rendered error page.
pub(crate) struct Page {
    pub(crate) content_type: HeaderValue,
    pub(crate) body: String,
}

/// The format of an error page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    Text,
    Html,
    Json,
}

/// Returns the format the client's `Accept` prefers: JSON when it ranks
/// `application/json` (or `application/*`, or a `+json` type) above every text type, HTML
/// when it names `text/html` (a browser), text otherwise (`*/*` ranks neither).
pub(crate) fn format(accept: Option<&HeaderValue>) -> Format {
    let Some(accept) = accept.and_then(|v| v.to_str().ok()) else {
        return Format::Text;
    };
    let (mut json, mut text) = (0.0f32, 0.0f32);
    for (range, q) in accept.split(',').filter_map(media_range) {
        if range.eq_ignore_ascii_case("application/json")
            || range.eq_ignore_ascii_case("application/*")
            || (range.len() > 17
                && range[..12].eq_ignore_ascii_case("application/")
                && range[range.len() - 5..].eq_ignore_ascii_case("+json"))
        {
            json = json.max(q);
        } else if range.len() > 5 && range[..5].eq_ignore_ascii_case("text/") {
            text = text.max(q);
        }
    }
    if json > 0.0 && json > text {
        Format::Json
    } else if accepts_html(accept) {
        Format::Html
    } else {
        Format::Text
    }
}

/// Returns one `Accept` item's media range and its weight (`q`, 1 when absent).
fn media_range(item: &str) -> Option<(&str, f32)> {
    let mut params = item.split(';');
    let range = params.next()?.trim();
    let q = params
        .filter_map(|p| {
            let p = p.trim();
            p.strip_prefix("q=").or_else(|| p.strip_prefix("Q="))
        })
        .find_map(|q| q.trim().parse::<f32>().ok())
        .unwrap_or(1.0);
    // ASCII only, so that the byte slices above fall on character boundaries.
    range.is_ascii().then_some((range, q))
}

/// Returns whether the client accepts HTML (a browser's `Accept` names `text/html`).
fn accepts_html(accept: &str) -> bool {
    accept
        .as_bytes()
        .windows(9)
        .any(|w| w.eq_ignore_ascii_case(b"text/html"))
}

/// Renders the page for `status`, with `detail` (already safe to show) if given.
///
/// JSON is `{"error": "<detail>", "status": <code>}`.
pub(crate) fn render(status: StatusCode, detail: Option<&str>, format: Format) -> Page {
    let reason = status.canonical_reason().unwrap_or("Error");
    let code = status.as_str();
    let detail = detail.unwrap_or_else(|| default_detail(status));
    if format == Format::Json {
        let body = serde_json::json!({ "error": detail, "status": status.as_u16() });
        Page {
            content_type: HeaderValue::from_static("application/json"),
            body: body.to_string(),
        }
    } else if format == Format::Html {
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
        let page = render(StatusCode::NOT_FOUND, Some("no <such> file"), Format::Html);
        assert!(page.body.contains("<h1>404 Not Found</h1>"));
        assert!(page.body.contains("no &lt;such&gt; file"));
        let page = render(StatusCode::NOT_FOUND, None, Format::Text);
        assert_eq!(
            page.body,
            "404 Not Found: The requested resource was not found on this server.\n"
        );
    }

    #[test]
    fn renders_json_with_the_status() {
        let page = render(
            StatusCode::UNPROCESSABLE_ENTITY,
            Some("bad \"x\""),
            Format::Json,
        );
        assert_eq!(page.content_type, "application/json");
        assert_eq!(page.body, r#"{"error":"bad \"x\"","status":422}"#);
    }

    #[test]
    fn reads_accept() {
        let cases = [
            (None, Format::Text),
            (Some("*/*"), Format::Text),
            (Some("text/html,application/xhtml+xml;q=0.9"), Format::Html),
            (
                Some("text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"),
                Format::Html,
            ),
            (Some("application/json"), Format::Json),
            (Some("Application/JSON; charset=utf-8"), Format::Json),
            (Some("application/problem+json"), Format::Json),
            (Some("text/plain;q=0.5, application/json"), Format::Json),
            (Some("application/json;q=0.5, text/plain"), Format::Text),
            (Some("application/json;q=0, */*"), Format::Text),
            (Some("application/json, text/html"), Format::Html),
        ];
        for (accept, want) in cases {
            let value = accept.map(HeaderValue::from_static);
            assert_eq!(format(value.as_ref()), want, "{accept:?}");
        }
    }
}
