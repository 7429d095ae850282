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
