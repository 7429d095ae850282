//! Configuration values through the binary (issue 37): `--set KEY=VALUE` on `serve`
//! and `config`, durations and sizes as text, and the platform's `PORT`.

use std::process::{Output, Stdio};

use proscenium::testing::free_port;

use super::{get, proscenium, signal, start, wait_exit};

/// Asserts that `out` is a refused start: exit 2 and one line holding each of `parts`.
fn assert_refused(out: &Output, parts: &[&str]) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    for part in parts {
        assert!(stderr.contains(part), "{part} missing: {stderr}");
    }
}

#[test]
fn issue37_set_and_text_values_reach_config_and_serve_and_a_bad_one_stops_the_start() {
    let out = proscenium()
        .args([
            "config",
            "--set",
            "timeouts.idle=1m30s",
            "--set",
            "limits.max_uri=1KiB",
        ])
        .env("PROSCENIUM_LIMITS_MAX_BODY", "16MiB")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    for line in [
        "timeouts.idle = \"1m30s\"",
        "limits.max_uri = \"1KiB\"",
        "limits.max_body = \"16MiB\"",
        "timeouts.stall = \"100ms\"",
    ] {
        assert!(text.contains(line), "{line} missing: {text}");
    }
    assert!(text.contains("# --set timeouts.idle"), "{text}");

    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("f.txt"), "a file").unwrap();
    let (mut child, addr, _) = start(dir.path(), &["--loops", "1", "--set", "limits.max_uri=64B"]);
    let long = format!("/f.txt?{}", "a".repeat(100));
    let refused = get(&addr, &long);
    let served = get(&addr, "/f.txt");
    signal(&child, "TERM");
    assert_eq!(wait_exit(&mut child), 0);
    assert!(refused.starts_with("HTTP/1.1 414 "), "{refused}");
    assert!(served.ends_with("a file"), "{served}");

    for (args, parts) in [
        (
            vec!["serve", "--set", "limits.max_bdy=1"],
            vec!["--set limits.max_bdy", "did you mean `max_body`"],
        ),
        (
            vec!["serve", "--set", "timeouts.idle=soon"],
            vec!["--set timeouts.idle", "expected seconds from", "\"soon\""],
        ),
        (
            vec!["config", "--set", "limits.max_body=8M"],
            vec!["--set limits.max_body", "expected bytes from", "\"8M\""],
        ),
    ] {
        let out = proscenium()
            .args(&args)
            .args(["--bind", "127.0.0.1:0"])
            .output()
            .unwrap();
        assert_refused(&out, &parts);
    }
    // Refused by the command line's parser, with its usage.
    let out = proscenium()
        .args(["routes", "--set", "idle"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("expected KEY=VALUE, such as timeouts.idle=90s, got \"idle\""),
        "{stderr}"
    );
}

#[test]
fn issue37_port_is_where_the_server_listens_when_no_address_is_given() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("f.txt"), "a file").unwrap();
    let port = free_port();
    let mut child = proscenium()
        .args(["serve", dir.path().to_str().unwrap(), "--loops", "1"])
        .env("PORT", port.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let (line, addr) = proscenium::launch::read_start_line(&mut child).unwrap();
    let served = get(&format!("127.0.0.1:{port}"), "/f.txt");
    signal(&child, "TERM");
    assert_eq!(wait_exit(&mut child), 0);
    assert_eq!(addr.to_string(), format!("0.0.0.0:{port}"), "{line}");
    assert!(served.ends_with("a file"), "{served}");

    let out = proscenium()
        .args(["serve", dir.path().to_str().unwrap()])
        .env("PORT", "http")
        .output()
        .unwrap();
    assert_refused(
        &out,
        &["PORT: expected a port from 0 to 65535, got \"http\""],
    );
}
