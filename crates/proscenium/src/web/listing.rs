//! Directory listings: an HTML page with links, sizes and dates, or JSON for clients
//! that ask for `application/json`.

use std::os::fd::OwnedFd;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use http::StatusCode;
use http::header;
use nix::dir::Dir;
use nix::fcntl::AtFlags;
use nix::sys::stat::{FileStat, SFlag, fstatat};
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
    stat: Stat,
}

/// What a listing shows of a file or directory.
pub(crate) struct Stat {
    /// Device and inode, to tell a withheld file under another name.
    pub(crate) identity: (u64, u64),
    is_dir: bool,
    size: u64,
    modified: SystemTime,
}

impl Stat {
    /// Returns what a listing shows of a regular file or a directory, `None` for
    /// anything else: FIFOs, sockets and devices are never served, so not listed.
    pub(crate) fn of(st: &FileStat) -> Option<Self> {
        let kind = SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT;
        if kind != SFlag::S_IFREG && kind != SFlag::S_IFDIR {
            return None;
        }
        let modified = u64::try_from(st.st_mtime).map_or(UNIX_EPOCH, |secs| {
            let nanos = u32::try_from(st.st_mtime_nsec).unwrap_or(0);
            UNIX_EPOCH + Duration::new(secs, nanos)
        });
        Some(Self {
            #[allow(clippy::useless_conversion)] // the widths differ between targets
            identity: (u64::from(st.st_dev), u64::from(st.st_ino)),
            is_dir: kind == SFlag::S_IFDIR,
            size: u64::try_from(st.st_size).unwrap_or(0),
            modified,
        })
    }
}

/// Renders the listing of the opened directory `dir` (`path` names it in logs), as JSON
/// when the client asks for it. `listed` says whether an entry is shown (not hidden,
/// not withheld); `follow` gives what a symlink named in `dir` leads to, or `None` to
/// leave it out (dangling, or leading outside the root).
pub(crate) fn render(
    req: &Request,
    dir: OwnedFd,
    path: &str,
    listed: &dyn Fn(&str, &Stat) -> bool,
    follow: &dyn Fn(&str) -> Option<Stat>,
) -> Response {
    let entries = match read(dir, listed, follow) {
        Ok(entries) => entries,
        Err(e) => {
            tracing::warn!("cannot list {path}: {e}");
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

/// Reads the entries of `dir`: directories first, then by name. Entries are stat'ed
/// with `fstatat`, never opened: opening a FIFO would block the loop until a writer
/// came, and opening a device may have effects of its own.
fn read(
    dir: OwnedFd,
    listed: &dyn Fn(&str, &Stat) -> bool,
    follow: &dyn Fn(&str) -> Option<Stat>,
) -> nix::Result<Vec<Entry>> {
    let mut dir = Dir::from_fd(dir)?;
    let names: Vec<String> = dir
        .iter()
        .filter_map(Result::ok)
        .map(|item| item.file_name().to_string_lossy().into_owned())
        .filter(|name| name != "." && name != "..")
        .collect();
    let mut entries = Vec::with_capacity(names.len());
    for name in names {
        let Ok(st) = fstatat(&dir, name.as_str(), AtFlags::AT_SYMLINK_NOFOLLOW) else {
            continue;
        };
        let is_link = SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT == SFlag::S_IFLNK;
        let stat = if is_link {
            follow(&name)
        } else {
            Stat::of(&st)
        };
        if let Some(stat) = stat.filter(|stat| listed(&name, stat)) {
            entries.push(Entry { name, stat });
        }
    }
    entries.sort_by(|a, b| {
        b.stat
            .is_dir
            .cmp(&a.stat.is_dir)
            .then_with(|| a.name.cmp(&b.name))
    });
    Ok(entries)
}

fn json_listing(entries: &[Entry]) -> Json<serde_json::Value> {
    let items: Vec<_> = entries
        .iter()
        .map(|e| {
            json!({
                "name": e.name,
                "type": if e.stat.is_dir { "dir" } else { "file" },
                "size": if e.stat.is_dir { None } else { Some(e.stat.size) },
                "modified": httpdate::fmt_http_date(e.stat.modified),
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
        let slash = if e.stat.is_dir { "/" } else { "" };
        let href = utf8_percent_encode(&e.name, SEGMENT);
        let size = if e.stat.is_dir {
            "-".to_owned()
        } else {
            human_size(e.stat.size)
        };
        rows.push_str(&format!(
            "<tr><td><a href=\"{href}{slash}\">{}{slash}</a></td><td>{size}</td><td>{}</td></tr>\n",
            html_escape(&e.name),
            httpdate::fmt_http_date(e.stat.modified),
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
            stat: Stat {
                identity: (0, 0),
                is_dir: false,
                size: 3,
                modified: UNIX_EPOCH,
            },
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
