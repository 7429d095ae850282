//! Issue 15, "hostile clients cost bounded memory and no uptime", for static files and
//! the diagnostic routes: what is in the served directory or in a request never stalls
//! a loop, leaks a credential, or redirects off the host.

use std::path::{Path, PathBuf};

use nix::sys::stat::Mode;
use proscenium::App;

use crate::support;

/// A root holding a file, a directory, a FIFO in a listed directory and symlinks to a
/// file inside, one relative and one absolute.
fn site() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir_all(root.join("docs")).unwrap();
    std::fs::create_dir_all(root.join("pipes")).unwrap();
    std::fs::write(root.join("file.txt"), "Hello, file!").unwrap();
    std::fs::write(root.join("pipes/beside.txt"), "x").unwrap();
    nix::unistd::mkfifo(&root.join("pipe"), Mode::S_IRWXU).unwrap();
    nix::unistd::mkfifo(&root.join("pipes/pipe"), Mode::S_IRWXU).unwrap();
    std::os::unix::fs::symlink("file.txt", root.join("relative-link.txt")).unwrap();
    std::os::unix::fs::symlink(root.join("file.txt"), root.join("absolute-link.txt")).unwrap();
    (dir, root)
}

/// Opens every FIFO below the test's root for reading and writing when dropped, which
/// releases an open blocked on one: a server that regresses then fails its test
/// instead of hanging it in shutdown.
struct Unblock(Vec<PathBuf>);

impl Drop for Unblock {
    fn drop(&mut self) {
        for fifo in &self.0 {
            let _ = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open(fifo);
        }
    }
}

fn serve(root: &Path) -> (proscenium::ServerHandle, Unblock) {
    let server = support::start_with(App::new(), |c| c.root = Some(root.to_owned()));
    (
        server,
        Unblock(vec![root.join("pipe"), root.join("pipes/pipe")]),
    )
}

#[test]
fn a_fifo_is_not_found_at_once_and_the_server_keeps_serving() {
    let (_dir, root) = site();
    let (server, _unblock) = serve(&root);
    let addr = server.local_addr();
    // Twice, so that with two loops both have met the FIFO.
    for _ in 0..2 {
        assert_eq!(support::get(addr, "/pipe").status, 404);
    }
    assert_eq!(support::get(addr, "/file.txt").text(), "Hello, file!");
}

#[test]
fn a_directory_holding_a_fifo_is_listed_without_it() {
    let (_dir, root) = site();
    let (server, _unblock) = serve(&root);
    let listing = support::get(server.local_addr(), "/pipes/");
    assert_eq!(listing.status, 200);
    let html = listing.text();
    assert!(html.contains("beside.txt"), "{html}");
    assert!(
        !html.contains(">pipe<"),
        "what is never served is not listed: {html}"
    );
}

#[test]
fn a_directory_redirect_never_names_another_host() {
    let (_dir, root) = site();
    let (server, _unblock) = serve(&root);
    let addr = server.local_addr();
    // `//docs/` would be read by a browser as the host `docs`.
    for (path, location) in [("//docs", "/docs/"), ("///docs?x=1", "/docs/?x=1")] {
        let res = support::get(addr, path);
        let res = (res.status, res.header("location").map(str::to_owned));
        assert_eq!(res, (301, Some(location.to_owned())), "{path}");
    }
}

#[test]
fn a_file_asked_for_as_a_directory_is_not_found() {
    let (_dir, root) = site();
    let (server, _unblock) = serve(&root);
    let addr = server.local_addr();
    for path in ["/file.txt/", "/file.txt/.", "/file.txt%2F"] {
        assert_eq!(support::get(addr, path).status, 404, "{path}");
    }
}

#[test]
fn the_range_unit_is_case_insensitive() {
    let (_dir, root) = site();
    let (server, _unblock) = serve(&root);
    // RFC 9110 §14.1: range units are compared case-insensitively.
    let res = support::exchange(
        server.local_addr(),
        "GET /file.txt HTTP/1.1\r\nHost: t\r\nRange: BYTES=0-1\r\n\r\n",
    );
    assert_eq!((res.status, res.text().as_str()), (206, "He"));
    assert_eq!(res.header("content-range"), Some("bytes 0-1/12"));
}

#[test]
fn a_relative_symlink_inside_is_served_and_an_absolute_one_refused() {
    let (_dir, root) = site();
    let (server, _unblock) = serve(&root);
    let addr = server.local_addr();
    assert_eq!(
        support::get(addr, "/relative-link.txt").text(),
        "Hello, file!"
    );
    // RESOLVE_BENEATH refuses every absolute symlink, wherever it points: see
    // docs/security.md.
    assert_eq!(support::get(addr, "/absolute-link.txt").status, 404);
    let html = support::get(addr, "/").text();
    assert!(html.contains("relative-link.txt"), "{html}");
    assert!(!html.contains("absolute-link.txt"), "{html}");
}

fn serve_tools() -> proscenium::ServerHandle {
    support::start_with(App::new(), |c| c.tools = true)
}

#[test]
fn echo_redacts_credentials() {
    let server = serve_tools();
    let res = support::exchange(
        server.local_addr(),
        "GET /_echo HTTP/1.1\r\nHost: t\r\nAuthorization: Basic c2VjcmV0\r\n\
         Proxy-Authorization: Bearer secret\r\nCookie: session=secret\r\n\
         Set-Cookie: id=secret\r\nX-Kept: visible\r\n\r\n",
    );
    let echoed: serde_json::Value = serde_json::from_slice(&res.body).unwrap();
    let headers = echoed["headers"].as_array().unwrap();
    for name in [
        "authorization",
        "proxy-authorization",
        "cookie",
        "set-cookie",
    ] {
        let field = headers.iter().find(|h| h[0] == name).unwrap();
        assert_eq!(field[1], "[redacted]", "{name}");
    }
    assert!(
        headers
            .iter()
            .any(|h| h[0] == "x-kept" && h[1] == "visible")
    );
    assert!(!res.text().contains("secret") && !res.text().contains("c2VjcmV0"));
}

#[test]
fn tools_mount_no_cpu_burning_route() {
    let server = serve_tools();
    let addr = server.local_addr();
    assert_eq!(support::get(addr, "/_status").status, 200);
    for path in ["/_cpu?ms=1", "/_cpu-blocking?ms=1"] {
        assert_eq!(support::get(addr, path).status, 404, "{path}");
    }
}
