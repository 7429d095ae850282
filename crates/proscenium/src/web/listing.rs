//! Directory listings: an HTML page with links, sizes and dates, or JSON for clients
//! that ask for `application/json`.

use std::fs::Metadata;
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use http::StatusCode;
use http::header;
use percent_encoding::{AsciiSet, CONTROLS, utf8_percent_encode};
use serde_json::json;

use crate::app::{Html, IntoResponse, Json, Response, error};
use crate::http::Request;
use crate::http::error_page::html_escape;

/// Bytes of a name percent-encoded in a link: controls, space and what would end or
/// change the meaning of a path segment.
const SEGMENT: &AsciiSet = &CONTROLS
    .add(b' ')
    .add(b'"')
    .add(b'#')
    .add(b'%')
    .add(b'<')
    .add(b'>')
    .add(b'?')
    .add(b'`')
    .add(b'{')
    .add(b'}')
    .add(b'/')
    .add(b'\\')
    .add(b'&')
    .add(b'\'');

/// One entry of a directory.
struct Entry {
    name: String,
    is_dir: bool,
    size: u64,
    modified: SystemTime,
}

/// Renders the listing of `dir`, as JSON when the client asks for it. `stat` gives an
/// entry's metadata, or `None` to leave it out (a dangling symlink, or one that leads
/// outside the root).
pub(crate) fn render(
    req: &Request,
    dir: &Path,
    show_dotfiles: bool,
    stat: &dyn Fn(&str) -> Option<Metadata>,
) -> Response {
    let entries = match read(dir, show_dotfiles, stat) {
        Ok(entries) => entries,
        Err(e) => {
            tracing::warn!("cannot list {}: {e}", dir.display());
            return error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "cannot list the directory",
            );
        }
    };
    let wants_json = req
        .headers()
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|accept| accept.contains("application/json"));
    if wants_json {
        json_listing(&entries).into_response()
    } else {
        Html(html_listing(req.uri().path(), &entries)).into_response()
    }
}

/// Reads the entries of `dir`: directories first, then by name.
fn read(
    dir: &Path,
    show_dotfiles: bool,
    stat: &dyn Fn(&str) -> Option<Metadata>,
) -> std::io::Result<Vec<Entry>> {
    let mut entries = Vec::new();
    for item in std::fs::read_dir(dir)? {
        let item = item?;
        let name = item.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') && !show_dotfiles {
            continue;
        }
        let Some(meta) = stat(&name) else {
            continue;
        };
        entries.push(Entry {
            name,
            is_dir: meta.is_dir(),
            size: meta.len(),
            modified: meta.modified().unwrap_or(UNIX_EPOCH),
        });
    }
    entries.sort_by(|a, b| b.is_dir.cmp(&a.is_dir).then_with(|| a.name.cmp(&b.name)));
    Ok(entries)
}

fn json_listing(entries: &[Entry]) -> Json<serde_json::Value> {
    let items: Vec<_> = entries
        .iter()
        .map(|e| {
            json!({
                "name": e.name,
                "type": if e.is_dir { "dir" } else { "file" },
                "size": if e.is_dir { None } else { Some(e.size) },
                "modified": httpdate::fmt_http_date(e.modified),
            })
        })
        .collect();
    Json(serde_json::Value::Array(items))
}

fn html_listing(path: &str, entries: &[Entry]) -> String {
    let title = html_escape(&percent_encoding::percent_decode_str(path).decode_utf8_lossy());
    let mut rows = String::new();
    if path != "/" {
        rows.push_str("<tr><td><a href=\"../\">../</a></td><td></td><td></td></tr>\n");
    }
    for e in entries {
        let slash = if e.is_dir { "/" } else { "" };
        let href = utf8_percent_encode(&e.name, SEGMENT);
        let size = if e.is_dir {
            "-".to_owned()
        } else {
            human_size(e.size)
        };
        rows.push_str(&format!(
            "<tr><td><a href=\"{href}{slash}\">{}{slash}</a></td><td>{size}</td><td>{}</td></tr>\n",
            html_escape(&e.name),
            httpdate::fmt_http_date(e.modified),
        ));
    }
    format!(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>Index of {title}</title>\
         <style>body{{font:15px system-ui,sans-serif;margin:2em}}td{{padding:.15em 1.5em .15em 0}}\
         td:nth-child(2){{text-align:right}}</style></head>\n<body><h1>Index of {title}</h1>\n\
         <table>\n<tr><th>Name</th><th>Size</th><th>Modified</th></tr>\n{rows}</table></body></html>\n"
    )
}

/// Formats a byte count as people read it: `512 B`, `1.5 KiB`, `300.0 KiB`, `5.0 MiB`.
fn human_size(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_people_read_them() {
        assert_eq!(human_size(512), "512 B");
        assert_eq!(human_size(1536), "1.5 KiB");
        assert_eq!(human_size(5 * 1024 * 1024), "5.0 MiB");
    }

    #[test]
    fn names_are_escaped_and_links_encoded() {
        let entries = [Entry {
            name: "a <b>&c.txt".into(),
            is_dir: false,
            size: 3,
            modified: UNIX_EPOCH,
        }];
        let page = html_listing("/docs/", &entries);
        assert!(
            page.contains("<a href=\"a%20%3Cb%3E%26c.txt\">a &lt;b&gt;&amp;c.txt</a>"),
            "{page}"
        );
        assert!(page.contains("<a href=\"../\">"));
        assert!(!html_listing("/", &[]).contains("../"));
    }
}
