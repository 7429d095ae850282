//! The admin listener through the binary (issue 36): `--admin-bind`, named in the
//! start line, and under prefork bound by the supervisor alone.

use proscenium::testing::free_port;

use super::{get, signal, start, wait_exit};

#[test]
fn issue36_under_prefork_the_supervisor_alone_binds_the_admin_listener() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("f.txt"), "same file").unwrap();
    let admin = format!("127.0.0.1:{}", free_port());
    // A worker binding the same fixed address would fail to start, and the
    // supervisor would have no worker to serve the files.
    let (mut child, addr, line) = start(dir.path(), &["--workers", "2", "--admin-bind", &admin]);
    assert!(
        line.contains(&format!("; admin on http://{admin};")),
        "{line}"
    );
    assert!(get(&admin, "/healthz").ends_with("\r\n\r\nok\n"));
    assert!(get(&admin, "/readyz").starts_with("HTTP/1.1 200 "));
    for _ in 0..10 {
        assert!(get(&addr, "/f.txt").ends_with("same file"));
    }
    assert!(get(&addr, "/metrics").starts_with("HTTP/1.1 404 "));
    signal(&child, "TERM");
    assert_eq!(wait_exit(&mut child), 0);
}
