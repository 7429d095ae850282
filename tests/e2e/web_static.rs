//! Static files over the wire: types, validators and 304, ranges, sendfile, index
//! files, listings, redirects, and traversal attempts that must never escape the root.

use std::path::Path;

use proscenium::App;
use proscenium::web::StaticFiles;

use crate::support::{self, Client};

/// A site: small and large files, an index, a listing, a dotfile, and a secret
/// outside the root with a symlink pointing at it.
fn site() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir_all(root.join("docs/sub")).unwrap();
    std::fs::create_dir_all(root.join("with-index")).unwrap();
    std::fs::write(root.join("hello.txt"), "Hello, file!").unwrap();
    std::fs::write(root.join("style.css"), "body{}").unwrap();
    std::fs::write(root.join("big.bin"), big_content()).unwrap();
    std::fs::write(root.join("with-index/index.html"), "<h1>index</h1>").unwrap();
    std::fs::write(root.join("docs/a <b>&c.txt"), "x").unwrap();
    std::fs::write(root.join(".env"), "SECRET=1").unwrap();
    std::fs::write(dir.path().join("secret.txt"), "outside").unwrap();
    std::os::unix::fs::symlink(dir.path().join("secret.txt"), root.join("leak.txt")).unwrap();
    (dir, root)
}

fn big_content() -> Vec<u8> {
    (0..300 * 1024).map(|i| (i % 251) as u8).collect()
}

fn serve(root: &Path) -> proscenium::ServerHandle {
    support::start_with(App::new(), |c| c.root = Some(root.to_owned()))
}

#[test]
fn serves_files_with_type_length_and_validators() {
    let (_dir, root) = site();
    let server = serve(&root);
    let res = support::get(server.local_addr(), "/hello.txt");
    assert_eq!((res.status, res.text().as_str()), (200, "Hello, file!"));
    assert_eq!(
        res.header("content-type"),
        Some("text/plain; charset=utf-8")
    );
    assert_eq!(res.header("content-length"), Some("12"));
    assert_eq!(res.header("accept-ranges"), Some("bytes"));
    assert!(res.header("etag").is_some_and(|e| e.starts_with('"')));
    assert!(res.header("last-modified").is_some());
    assert_eq!(
        support::get(server.local_addr(), "/style.css").header("content-type"),
        Some("text/css; charset=utf-8")
    );
}

#[test]
fn head_has_the_headers_and_no_body() {
    let (_dir, root) = site();
    let server = serve(&root);
    let mut client = Client::connect(server.local_addr());
    client.send(
        "HEAD /big.bin HTTP/1.1\r\nHost: t\r\n\r\nGET /hello.txt HTTP/1.1\r\nHost: t\r\n\r\n",
    );
    let head = client.response_to(true);
    assert_eq!(head.header("content-length"), Some("307200"));
    assert_eq!(
        client.response().text(),
        "Hello, file!",
        "no body bytes came between"
    );
}

#[test]
fn validators_give_304() {
    support::in_process(
        "files written to a temporary directory of its own, whose times its validators carry",
    );
    let (_dir, root) = site();
    let server = serve(&root);
    let addr = server.local_addr();
    let first = support::get(addr, "/hello.txt");
    let etag = first.header("etag").unwrap();
    let modified = first.header("last-modified").unwrap();
    for condition in [
        format!("If-None-Match: {etag}"),
        format!("If-None-Match: \"x\", W/{etag}"),
        format!("If-Modified-Since: {modified}"),
    ] {
        let res = support::exchange(
            addr,
            format!("GET /hello.txt HTTP/1.1\r\nHost: t\r\n{condition}\r\n\r\n"),
        );
        assert_eq!(res.status, 304, "{condition}");
        assert!(res.body.is_empty());
        assert_eq!(res.header("etag"), Some(etag));
    }
    let stale = support::exchange(
        addr,
        "GET /hello.txt HTTP/1.1\r\nHost: t\r\nIf-None-Match: \"other\"\r\n\r\n",
    );
    assert_eq!(stale.status, 200);
}

#[test]
fn single_ranges_give_206_or_416() {
    let (_dir, root) = site();
    let server = serve(&root);
    let addr = server.local_addr();
    let range = |spec: &str| {
        support::exchange(
            addr,
            format!("GET /hello.txt HTTP/1.1\r\nHost: t\r\nRange: {spec}\r\n\r\n"),
        )
    };
    let res = range("bytes=0-4");
    assert_eq!((res.status, res.text().as_str()), (206, "Hello"));
    assert_eq!(res.header("content-range"), Some("bytes 0-4/12"));
    assert_eq!(range("bytes=-5").text(), "file!");
    let res = range("bytes=50-");
    assert_eq!(
        (res.status, res.header("content-range")),
        (416, Some("bytes */12"))
    );
    assert_eq!(
        range("bytes=0-1,3-4").status,
        200,
        "multiple ranges are served whole"
    );
    let res = support::exchange(
        addr,
        "GET /big.bin HTTP/1.1\r\nHost: t\r\nRange: bytes=100000-299999\r\n\r\n",
    );
    assert_eq!(res.status, 206);
    assert_eq!(
        res.body,
        big_content()[100_000..300_000],
        "a large range goes out by sendfile intact"
    );
}

#[test]
fn if_range_that_does_not_match_serves_the_whole_file() {
    let (_dir, root) = site();
    let server = serve(&root);
    let res = support::exchange(
        server.local_addr(),
        "GET /hello.txt HTTP/1.1\r\nHost: t\r\nRange: bytes=0-1\r\nIf-Range: \"old\"\r\n\r\n",
    );
    assert_eq!((res.status, res.text().as_str()), (200, "Hello, file!"));
}

#[test]
fn a_large_file_arrives_intact_and_the_connection_goes_on() {
    let (_dir, root) = site();
    let server = serve(&root);
    let mut client = Client::connect(server.local_addr());
    for _ in 0..3 {
        let res = client.get("/big.bin").response();
        assert_eq!(res.body, big_content());
    }
}

#[test]
fn directories_redirect_index_and_list() {
    let (_dir, root) = site();
    let server = serve(&root);
    let addr = server.local_addr();
    let res = support::get(addr, "/docs?x=1");
    assert_eq!(
        (res.status, res.header("location")),
        (301, Some("/docs/?x=1"))
    );
    assert_eq!(support::get(addr, "/with-index/").text(), "<h1>index</h1>");
    let listing = support::get(addr, "/docs/");
    assert_eq!(
        listing.header("content-type"),
        Some("text/html; charset=utf-8")
    );
    let html = listing.text();
    assert!(html.contains("Index of /docs/"), "{html}");
    assert!(html.contains("<a href=\"sub/\">sub/</a>"), "{html}");
    assert!(
        html.contains("<a href=\"a%20%3Cb%3E%26c.txt\">a &lt;b&gt;&amp;c.txt</a>"),
        "{html}"
    );
    let json = support::exchange(
        addr,
        "GET /docs/ HTTP/1.1\r\nHost: t\r\nAccept: application/json\r\n\r\n",
    );
    let entries: serde_json::Value = serde_json::from_slice(&json.body).unwrap();
    assert_eq!(entries[0]["name"], "sub");
    assert_eq!(entries[0]["type"], "dir");
    assert_eq!(entries[1]["size"], 1);
}

#[test]
fn nothing_outside_the_root_is_ever_served() {
    let (_dir, root) = site();
    let server = serve(&root);
    let addr = server.local_addr();
    for path in [
        "/../secret.txt",
        "/%2e%2e/secret.txt",
        "/docs/..%2f..%2fsecret.txt",
        "/leak.txt",
        "/.env",
        "/docs/%2e%2e/%2e%2e/secret.txt",
    ] {
        let res = support::get(addr, path);
        assert!(matches!(res.status, 400 | 404), "{path}: {}", res.status);
        assert!(
            !res.text().contains("outside") && !res.text().contains("SECRET"),
            "{path}"
        );
    }
    assert!(
        !support::get(addr, "/").text().contains(".env"),
        "dotfiles are not listed"
    );
}

#[test]
fn dotfiles_are_served_when_enabled() {
    let (_dir, root) = site();
    let server = support::start_with(App::new(), |c| {
        c.root = Some(root.clone());
        c.show_dotfiles = true;
    });
    assert_eq!(
        support::get(server.local_addr(), "/.env").text(),
        "SECRET=1"
    );
}

#[test]
fn other_methods_get_405_with_allow() {
    let (_dir, root) = site();
    let server = serve(&root);
    let res = support::exchange(
        server.local_addr(),
        "POST /hello.txt HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n",
    );
    assert_eq!((res.status, res.header("allow")), (405, Some("GET, HEAD")));
}

#[test]
fn a_catch_all_route_serves_its_parameter() {
    let (_dir, root) = site();
    let server = support::start(App::new().get("/static/*path", StaticFiles::new(&root)));
    assert_eq!(
        support::get(server.local_addr(), "/static/hello.txt").text(),
        "Hello, file!"
    );
    assert_eq!(support::get(server.local_addr(), "/hello.txt").status, 404);
}
