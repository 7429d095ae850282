//! `tally` under `[traces] otlp`, through its binary, its spans received by the
//! collector of `proscenium::testing::otlp`: a word a route sends into the graph waits
//! in the `count` stage's queue (a decoupled connector), and its run there is still a
//! span of the request's trace, the request span's child.

use std::time::{Duration, Instant};

use proscenium::testing::otlp::Collector;

#[test]
fn issue36_a_stage_event_that_waited_in_a_queue_runs_in_a_child_of_the_request_span() {
    let collector = Collector::start();
    let dir = tempfile::tempdir().unwrap();
    let config = collector.config_in(dir.path());
    let out = dir.path().join("words.txt");
    let args = [
        "--loops".as_ref(),
        "1".as_ref(),
        "--config".as_ref(),
        config.as_os_str(),
        "--out".as_ref(),
        out.as_os_str(),
    ];
    let (mut child, addr) = proscenium::testing::serve(env!("CARGO_BIN_EXE_tally"), args);
    let answer = proscenium::testing::exchange(
        addr,
        "POST /words/hi HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
    );
    assert!(answer.starts_with("HTTP/1.1 202"), "{answer}");
    let deadline = Instant::now() + Duration::from_secs(60);
    while !std::fs::read_to_string(&out).is_ok_and(|words| words.starts_with("hi ")) {
        assert!(
            Instant::now() < deadline,
            "the word not counted within 60 s"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    proscenium::testing::terminate(&mut child);
    let spans = collector.spans();
    let request = spans
        .iter()
        .find(|s| s.get("http.route") == Some("/words/:word"))
        .unwrap_or_else(|| panic!("no request span: {spans:?}"));
    let count = spans
        .iter()
        .find(|s| s.get("stage") == Some("count"))
        .unwrap_or_else(|| panic!("no span of the count stage: {spans:?}"));
    assert_eq!(count.trace_id, request.trace_id, "{spans:?}");
    assert_eq!(count.parent_span_id, request.span_id, "{spans:?}");
}
