//! Request spans exported over OTLP (`[traces] otlp`, issue 36), received by a small
//! OTLP/HTTP collector in the test itself: one span a request, carrying its id, method,
//! path and status, under the configured service name, and one a stage event, sent by
//! the time the process has exited.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::common::v1::any_value::Value;
use prost::Message;

use super::{signal, start, wait_exit};

/// A span as the collector got it: its name, its attributes as text, and its
/// resource's `service.name`.
#[derive(Debug, Clone)]
struct Received {
    name: String,
    attributes: Vec<(String, String)>,
    service: String,
}

impl Received {
    fn get(&self, key: &str) -> Option<&str> {
        self.attributes
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

fn text(attributes: &[KeyValue]) -> Vec<(String, String)> {
    attributes
        .iter()
        .map(|kv| {
            let value = match kv.value.as_ref().and_then(|v| v.value.as_ref()) {
                Some(Value::StringValue(s)) => s.clone(),
                Some(Value::IntValue(n)) => n.to_string(),
                other => format!("{other:?}"),
            };
            (kv.key.clone(), value)
        })
        .collect()
}

/// An OTLP/HTTP collector on a port of its own: every export it is sent is decoded
/// and its spans kept.
fn collector() -> (String, Arc<Mutex<Vec<Received>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1/traces", listener.local_addr().unwrap());
    let spans = Arc::new(Mutex::new(Vec::new()));
    let kept = spans.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let kept = kept.clone();
            std::thread::spawn(move || serve(stream, &kept));
        }
    });
    (url, spans)
}

/// Answers each export on one connection with 200 and an empty answer.
fn serve(stream: TcpStream, kept: &Mutex<Vec<Received>>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut writer = stream;
    loop {
        let mut length = 0;
        let mut line = String::new();
        loop {
            line.clear();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            if line == "\r\n" {
                break;
            }
            if let Some((name, value)) = line.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().unwrap();
            }
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body).unwrap();
        let export = ExportTraceServiceRequest::decode(&body[..]).expect("an OTLP export");
        for resource in export.resource_spans {
            let attributes = text(&resource.resource.map(|r| r.attributes).unwrap_or_default());
            let service = attributes
                .iter()
                .find(|(k, _)| k == "service.name")
                .map(|(_, v)| v.clone())
                .unwrap_or_default();
            for span in resource.scope_spans.into_iter().flat_map(|s| s.spans) {
                kept.lock().unwrap().push(Received {
                    name: span.name,
                    attributes: text(&span.attributes),
                    service: service.clone(),
                });
            }
        }
        let answer =
            "HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n";
        if writer.write_all(answer.as_bytes()).is_err() {
            return;
        }
    }
}

/// Sends `GET path`; returns the status line and the answer's `x-request-id`.
fn ask(addr: &str, path: &str) -> (String, String) {
    let answer = super::get(addr, path);
    let status = answer.lines().next().unwrap().to_owned();
    let id = answer
        .lines()
        .find_map(|l| l.strip_prefix("x-request-id: "))
        .expect("an x-request-id")
        .trim()
        .to_owned();
    (status, id)
}

/// Serves `dir` with a collector configured, under `args`, asks for each of `paths`
/// and stops the server; returns the answers' status lines and ids, and the spans the
/// collector got (the last batch is sent as the process ends).
fn traced(args: &[&str], paths: &[&str]) -> (Vec<(String, String)>, Vec<Received>) {
    let (url, spans) = collector();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("f.txt"), "a file").unwrap();
    std::fs::write(
        dir.path().join("proscenium.toml"),
        format!("[traces]\notlp = \"{url}\"\nservice = \"shop\"\n"),
    )
    .unwrap();
    let (mut child, addr, _) = start(dir.path(), args);
    let asked = paths.iter().map(|path| ask(&addr, path)).collect();
    signal(&child, "TERM");
    assert_eq!(wait_exit(&mut child), 0);
    let spans = spans.lock().unwrap().clone();
    (asked, spans)
}

#[test]
fn issue36_each_request_is_a_span_the_collector_gets_with_its_id() {
    let (asked, spans) = traced(&[], &["/f.txt", "/missing"]);
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

#[test]
fn issue36_under_the_staged_model_each_stage_event_is_a_span_too() {
    let (asked, spans) = traced(&["--model", "staged"], &["/f.txt"]);
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
