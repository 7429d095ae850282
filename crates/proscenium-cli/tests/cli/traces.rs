//! Request spans exported over OTLP (`[traces] otlp`, issue 36), received by a small
//! OTLP/HTTP collector in the test itself (`proscenium::testing::otlp`): one span a
//! request, carrying its id, method, path and status, under the configured service
//! name, the child of a caller's `traceparent`, and one a stage event, sent by the
//! time the process has exited.

use proscenium::testing::otlp::{Collector, ExportedSpan};

use super::{signal, start, wait_exit};

/// Sends `GET path` with the header lines `fields` (each ending in CRLF) on a
/// connection of its own; returns the status line and the answer's `x-request-id`.
fn ask(addr: &str, (path, fields): (&str, &str)) -> (String, String) {
    let answer = proscenium::testing::exchange(
        addr,
        &format!("GET {path} HTTP/1.1\r\nHost: t\r\n{fields}Connection: close\r\n\r\n"),
    );
    let status = answer.lines().next().unwrap().to_owned();
    let id = answer
        .lines()
        .find_map(|l| l.strip_prefix("x-request-id: "))
        .expect("an x-request-id")
        .trim()
        .to_owned();
    (status, id)
}

/// Serves `dir` with a collector configured, under `args`, sends each of `asks` (a
/// path and header lines) and stops the server; returns the answers' status lines and ids, and the spans the
/// collector got (the last batch is sent as the process ends).
fn traced(args: &[&str], asks: &[(&str, &str)]) -> (Vec<(String, String)>, Vec<ExportedSpan>) {
    let collector = Collector::start();
    let url = collector.url();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("f.txt"), "a file").unwrap();
    std::fs::write(
        dir.path().join("proscenium.toml"),
        format!("[traces]\notlp = \"{url}\"\nservice = \"shop\"\n"),
    )
    .unwrap();
    let (mut child, addr, _) = start(dir.path(), args);
    let asked = asks.iter().map(|&request| ask(&addr, request)).collect();
    signal(&child, "TERM");
    assert_eq!(wait_exit(&mut child), 0);
    (asked, collector.spans())
}

#[test]
fn issue36_each_request_is_a_span_the_collector_gets_with_its_id() {
    let (asked, spans) = traced(&[], &[("/f.txt", ""), ("/missing", "")]);
    assert!(asked[0].0.starts_with("HTTP/1.1 200"), "{asked:?}");
    assert!(asked[1].0.starts_with("HTTP/1.1 404"), "{asked:?}");
    for ((_, id), (path, status)) in asked.iter().zip([("/f.txt", "200"), ("/missing", "404")]) {
        let span = spans
            .iter()
            .find(|s| s.get("request.id") == Some(id))
            .unwrap_or_else(|| panic!("no span with request.id {id}: {spans:?}"));
        assert_eq!(span.service, "shop", "{span:?}");
        assert_eq!(span.name, "GET <fallback>", "{span:?}");
        assert_eq!(span.get("http.route"), Some("<fallback>"), "{span:?}");
        assert_eq!(span.get("http.request.method"), Some("GET"), "{span:?}");
        assert_eq!(span.get("url.path"), Some(path), "{span:?}");
        assert_eq!(
            span.get("http.response.status_code"),
            Some(status),
            "{span:?}"
        );
    }
}

/// A caller's W3C trace context, as a `traceparent` field carries it.
const CALLER_TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CALLER_SPAN: &str = "00f067aa0ba902b7";

#[test]
fn issue36_a_request_with_a_traceparent_continues_the_callers_trace_and_a_malformed_one_starts_a_new_one()
 {
    let valid = format!("traceparent: 00-{CALLER_TRACE}-{CALLER_SPAN}-01\r\n");
    let malformed = format!("traceparent: 00-{CALLER_TRACE}-not-a-span-01\r\n");
    let (asked, spans) = traced(&[], &[("/f.txt", &valid), ("/f.txt", &malformed)]);
    let span_of = |(status, id): &(String, String)| {
        assert!(status.starts_with("HTTP/1.1 200"), "{asked:?}");
        spans
            .iter()
            .find(|s| s.get("request.id") == Some(id))
            .unwrap_or_else(|| panic!("no span with request.id {id}: {spans:?}"))
    };
    let continued = span_of(&asked[0]);
    assert_eq!(continued.trace_id, CALLER_TRACE, "{continued:?}");
    assert_eq!(continued.parent_span_id, CALLER_SPAN, "{continued:?}");
    let fresh = span_of(&asked[1]);
    assert_ne!(fresh.trace_id, CALLER_TRACE, "{fresh:?}");
    assert_eq!(fresh.parent_span_id, "", "{fresh:?}");
}

#[test]
fn issue36_under_the_staged_model_each_stage_event_is_a_span_too() {
    let (asked, spans) = traced(&["--model", "staged"], &[("/f.txt", "")]);
    assert!(asked[0].0.starts_with("HTTP/1.1 200"), "{asked:?}");
    assert!(
        spans
            .iter()
            .any(|s| s.get("request.id") == Some(&asked[0].1)),
        "no request span: {spans:?}"
    );
    for stage in ["handle-client", "route-handler"] {
        assert!(
            spans
                .iter()
                .any(|s| s.name == stage && s.get("stage") == Some(stage)),
            "no span of {stage}: {spans:?}"
        );
    }
}

#[test]
fn issue36_a_collector_that_is_not_a_url_stops_the_start_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("proscenium.toml"),
        "[traces]\notlp = \"collector:4318\"\n",
    )
    .unwrap();
    let out = super::proscenium()
        .args([
            "serve",
            dir.path().to_str().unwrap(),
            "--bind",
            "127.0.0.1:0",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("traces.otlp"), "{stderr}");
}
