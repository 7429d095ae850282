//! The lab app under `[traces] otlp`, through its binary, its spans received by the
//! collector of `proscenium::testing::otlp`: an actor's handling of the message a
//! route asks it is a span of the request's trace, the request span's child.

use proscenium::testing::otlp::{Collector, ExportedSpan};

/// Serves the lab app exporting to a collector, asks for `path` and stops the app
/// with SIGTERM; returns the answer and the spans the collector got (the last batch
/// is sent as the process ends).
fn traced(path: &str) -> (String, Vec<ExportedSpan>) {
    let collector = Collector::start();
    let dir = tempfile::tempdir().unwrap();
    let config = collector.config_in(dir.path());
    let args = [
        "--loops".as_ref(),
        "1".as_ref(),
        "--config".as_ref(),
        config.as_os_str(),
    ];
    let (mut child, addr) = proscenium::testing::serve(env!("CARGO_BIN_EXE_lab-app"), args);
    let answer = proscenium::testing::exchange(
        addr,
        &format!("GET {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"),
    );
    proscenium::testing::terminate(&mut child);
    (answer, collector.spans())
}

#[test]
fn issue36_an_actor_asked_by_a_route_handles_it_in_a_child_of_the_request_span() {
    let (answer, spans) = traced("/actor?n=10");
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    let request = spans
        .iter()
        .find(|s| s.get("http.route") == Some("/actor"))
        .unwrap_or_else(|| panic!("no request span: {spans:?}"));
    let kind = "lab_app::actors::Fibber";
    let message = spans
        .iter()
        .find(|s| s.get("actor.kind") == Some(kind))
        .unwrap_or_else(|| panic!("no span of {kind}: {spans:?}"));
    assert_eq!(message.name, kind, "{message:?}");
    assert_eq!(message.get("actor.send"), Some("ask"), "{message:?}");
    assert_eq!(
        message.get("actor.message"),
        Some("lab_app::actors::FibOf"),
        "{message:?}"
    );
    assert_eq!(message.trace_id, request.trace_id, "{spans:?}");
    assert_eq!(message.parent_span_id, request.span_id, "{spans:?}");
}
