use std::os::unix::fs::PermissionsExt as _;

use http::{StatusCode, header};

use super::output::{opens_with_field, parse_head};
use super::{Cgi, CgiSpec, locate};

#[test]
fn a_head_is_read_with_lf_or_crlf_lines_and_its_special_fields_taken_out() {
    let (head, used) =
        parse_head(b"Status: 404 Not Here\nContent-Type: text/plain\r\nX-A: 1\nX-A: 2\n\nbody")
            .unwrap()
            .unwrap();
    assert_eq!(used, 62);
    assert_eq!(head.status, Some(StatusCode::NOT_FOUND));
    let names: Vec<_> = head
        .fields
        .iter()
        .map(|(n, v)| format!("{n}={v:?}"))
        .collect();
    assert_eq!(
        names,
        ["content-type=\"text/plain\"", "x-a=\"1\"", "x-a=\"2\""]
    );
}

#[test]
fn a_head_still_coming_is_waited_for() {
    assert!(parse_head(b"Content-Type: text/plain\n").unwrap().is_none());
    assert!(parse_head(b"Content-Ty").unwrap().is_none());
}

#[test]
fn what_is_not_a_cgi_head_is_refused_with_the_reason() {
    for (output, reason) in [
        (&b"hello world\n\n"[..], "not a CGI header section"),
        (b"X-Only: 1\n\n", "no Content-Type, Location or Status"),
        (b"Status: 2000 Odd\n\n", "a bad Status"),
        (b"Status: abc\n\n", "a bad Status"),
        (
            b"Content-Length: ten\nContent-Type: a/b\n\n",
            "a bad Content-Length",
        ),
        (
            b"Content-Type: a/b\n folded\n\n",
            "not a CGI header section",
        ),
        // Issue 33: framing the client would read wrongly.
        (b"Status: 100 Continue\n\n", "a 1xx Status"),
        (
            b"Status: 101 Switching\nContent-Type: a/b\n\n",
            "a 1xx Status",
        ),
        (b"Status: 103 Early Hints\n\n", "a 1xx Status"),
        (
            b"Content-Length: +5\nContent-Type: a/b\n\n",
            "a bad Content-Length",
        ),
        (
            b"Content-Length: -1\nContent-Type: a/b\n\n",
            "a bad Content-Length",
        ),
        (
            b"Content-Length: 99999999999999999999\nContent-Type: a/b\n\n",
            "a bad Content-Length",
        ),
        (
            b"Content-Length: 3\nContent-Length: 4\nContent-Type: a/b\n\n",
            "two different Content-Lengths",
        ),
    ] {
        let error = parse_head(output).unwrap_err();
        assert!(error.contains(reason), "{output:?}: {error}");
    }
    let many: String = (0..101).map(|i| format!("X-{i}: 1\n")).collect();
    let error = parse_head(format!("{many}\n").as_bytes()).unwrap_err();
    assert!(error.contains("more than 100"), "{error}");
}

#[test]
fn output_opens_with_a_field_when_its_first_line_is_name_colon() {
    assert_eq!(
        opens_with_field(b"Content-Type: text/html\n", false),
        Some(true)
    );
    assert_eq!(opens_with_field(b"<html><body>\n", false), Some(false));
    assert_eq!(opens_with_field(b"Total 5: items\n", false), Some(false));
    assert_eq!(
        opens_with_field(b"Content-Ty", false),
        None,
        "a line still coming"
    );
    assert_eq!(
        opens_with_field(b"hello", true),
        Some(false),
        "ended without a line end"
    );
}

#[test]
fn a_script_cannot_set_the_connections_fields() {
    let (head, _) = parse_head(
        b"Content-Type: a/b\nConnection: close\nTransfer-Encoding: chunked\nContent-Length: 3\n\n",
    )
    .unwrap()
    .unwrap();
    assert_eq!(head.length, Some(3));
    let names: Vec<_> = head.fields.iter().map(|(n, _)| n.clone()).collect();
    assert_eq!(names, [header::CONTENT_TYPE]);
}

#[test]
fn a_path_names_the_first_script_on_it_and_the_rest_is_path_info() {
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(root.path().join("cgi-bin/sub")).unwrap();
    std::fs::create_dir_all(root.path().join("pages")).unwrap();
    let program = root.path().join("cgi-bin/sub/env");
    std::fs::write(&program, "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(root.path().join("cgi-bin/plain"), "not a program").unwrap();
    std::fs::write(root.path().join("pages/hello.rb"), "puts 1").unwrap();
    std::fs::write(root.path().join("pages/hello.txt"), "hello").unwrap();
    let spec = CgiSpec {
        enabled: true,
        interpreters: [("rb".to_owned(), "ruby -W0".to_owned())].into(),
        ..CgiSpec::default()
    };
    let cgi = Cgi::new(root.path(), &spec);
    let found = |path| locate::script(&cgi.0, path);

    let script = found("/cgi-bin/sub/env/a/b%20c/").unwrap().unwrap();
    assert_eq!(script.name, "/cgi-bin/sub/env");
    assert_eq!(script.path_info, "/a/b c/");
    assert_eq!(script.file, root.path().join("cgi-bin/sub/env"));
    assert!(script.interpreter.is_none());

    let script = found("/pages/hello.rb").unwrap().unwrap();
    assert_eq!(
        (script.name.as_str(), script.path_info.as_str()),
        ("/pages/hello.rb", "")
    );
    assert_eq!(script.interpreter.unwrap(), ["ruby", "-W0"]);

    for static_or_nothing in [
        "/pages/hello.txt",
        "/pages",
        "/cgi-bin",
        "/cgi-bin/",
        "/nothing.rb",
        "/cgi-bin/../pages/hello.rb",
        "/pages/.hidden.rb",
    ] {
        assert!(
            found(static_or_nothing).unwrap().is_none(),
            "{static_or_nothing}"
        );
    }
    assert_eq!(
        found("/cgi-bin/plain").unwrap_err().0,
        StatusCode::FORBIDDEN
    );
    assert_eq!(
        found("/cgi-bin/a%00b").unwrap_err().0,
        StatusCode::BAD_REQUEST
    );
}
