//! A hosted app as a user names it on the command line (issue 39): a path relative to
//! the working directory, as typed in a shell.

use std::process::Stdio;

use super::{get, proscenium, wait_exit};

#[test]
fn issue39_a_rack_app_named_by_a_relative_path_is_served() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("site")).unwrap();
    std::fs::write(
        dir.path().join("site/config.ru"),
        "run lambda { |env| [200, { \"content-type\" => \"text/plain\" }, [\"rack in #{Dir.pwd}\"]] }\n",
    )
    .unwrap();
    let mut child = proscenium()
        .current_dir(dir.path())
        .args(["serve", "--bind", "127.0.0.1:0", "--rack", "site/config.ru"])
        .args(["--set", "hosted.processes=1"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let (_, addr) = proscenium::launch::read_start_line(&mut child).unwrap();
    let answer = get(&addr.to_string(), "/");
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    // The app runs in its file's directory, as Rack's own servers run it.
    let site = dir.path().join("site").canonicalize().unwrap();
    assert!(
        answer.ends_with(&format!("\r\n\r\nrack in {}", site.display())),
        "{answer}"
    );
    super::signal(&child, "TERM");
    assert_eq!(wait_exit(&mut child), 0);
}
